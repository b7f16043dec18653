"""The serial streams of an in-network reduce-scatter or all-gather, kept by path, not by link set.

A streaming reduce-scatter is p serial streams of size/p each: stream j reduces every rank's piece j
on the way up to the top switch and sends it down to rank j (every up path, rank j's down path, and
the reduction units its up paths enter); an all-gather's stream j goes up from rank j and down to
every other rank (`lowering.dataflow.streaming_flows`). Listed as link sets that is p x p link entries (536 M
at 16,384 ranks). But each stream's set is a union of paths of three shapes -- every rank's, rank
j's, every rank's but j's -- so what the models need comes from the p up and p down paths:

- per byte: a stream crosses all its links at one rate, its slowest link's; the maximum of a
  per-link cost over a union of paths is the maximum of the paths' maxima (every rank's but j's: the
  best path's, or the second best's for j itself);
- latency: the deepest input to the deepest output, as `streaming_flows` states it;
- link loads: how many streams cross each link, from how many up and down paths hold it;
- alone (a collective priced by itself, no injection limit) the streams run one after another and
  never send at the same time, so each runs at its slowest link's rate whatever else it crosses:
  `alone_flows` keeps only that link per stream, the same simulation as the full link sets. Only
  fluid (chunk 0): a fill chunk adds (links in the set - 1) x chunk / rate to each flow, which
  depends on the whole set, so the flow model then lists the sets.

Up and down paths must use different directed links (they do on switch trees: towards the top and
away from it); `serial_streams` returns None otherwise, and the link sets are listed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir import Schedule
from ...topology.graph import Topology
from ..flow import Flows

SERIAL = ("reduce-scatter", "all-gather")


def path_latency(topo: Topology, ptr: np.ndarray, links: np.ndarray) -> np.ndarray:
    """Each path's latency: its links' latencies summed path by path, as one numpy sum each, so
    that a stream's latency is the same float listed (`lowering.dataflow.streaming_flows`) or by path.

    Parameters
    ----------
    topo : Topology
        The network.
    ptr, links : int64 arrays
        Paths in CSR form over link ids.

    Returns
    -------
    float array [paths]
        Seconds.
    """
    lat = topo.link_lat[links]
    return np.array([lat[a:b].sum() for a, b in zip(ptr[:-1].tolist(), ptr[1:].tolist())], dtype=float)


def _path_max(ptr: np.ndarray, links: np.ndarray, cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(largest cost, a link with it) on each path (paths are non-empty)."""
    pid = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    order = np.lexsort((-cost[links], pid))  # per path, its costliest link first
    first = order[ptr[:-1]]
    return cost[links[first]], links[first]


@dataclass(frozen=True, eq=False)
class SerialStreams:
    """A streaming reduce-scatter or all-gather as paths (module doc).

    Parameters
    ----------
    collective : str
        reduce-scatter or all-gather.
    n_links : int
        Links of the topology.
    up, down : (int64 array [p+1], int64 array)
        Each rank's path to the top switch and back (CSR), by rank.
    units : int64 array
        Reduction units every reduce-scatter stream crosses (`reduction_links`).
    latency : float array [p]
        Each stream's latency, s.
    src, top : int
        The first stream's first input and the top switch (the flows' nominal ends).
    """

    collective: str
    n_links: int
    up: tuple[np.ndarray, np.ndarray]
    down: tuple[np.ndarray, np.ndarray]
    units: np.ndarray
    latency: np.ndarray
    src: int
    top: int

    @property
    def p(self) -> int:
        """Streams (one per rank)."""
        return len(self.latency)

    def slowest(self, cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each stream's largest per-link cost over its link set, and a link that has it.

        Parameters
        ----------
        cost : float array [n_links]
            Any per-link cost, e.g. s per byte (1 / bandwidth).

        Returns
        -------
        (float array [p], int64 array [p])
        """
        (uptr, ul), (dptr, dl) = self.up, self.down
        dmax, darg = _path_max(dptr, dl, cost)
        if self.collective == "reduce-scatter":  # every up path and the units, then rank j's down path
            common = np.concatenate([ul, self.units])
            k = common[np.argmax(cost[common])]
            take = dmax > cost[k]
            return np.where(take, dmax, cost[k]), np.where(take, darg, k)
        umax, uarg = _path_max(uptr, ul, cost)
        best = np.argsort(-dmax, kind="stable")[:2]  # every down path but j's: the best, or the second for j
        other = np.where(np.arange(self.p) == best[0], best[-1], best[0])
        take = umax >= dmax[other]
        return np.where(take, umax, dmax[other]), np.where(take, uarg, darg[other])

    def link_streams(self) -> np.ndarray:
        """How many streams cross each link (float array [n_links])."""
        p, L = self.p, self.n_links
        (uptr, ul), (dptr, dl) = self.up, self.down
        pairs = lambda ptr, ln: np.unique(np.repeat(np.arange(p), np.diff(ptr)) * L + ln)  # noqa: E731
        up, dn = pairs(uptr, ul), pairs(dptr, dl)
        c_up = np.bincount(up % L, minlength=L).astype(float)
        c_dn = np.bincount(dn % L, minlength=L)
        if self.collective == "reduce-scatter":  # every stream: the up links and units; stream j: its down path
            out = c_dn.astype(float)
            out[np.unique(np.concatenate([ul, self.units]))] = p
            return out
        # all-gather: stream j has j's up path and every down path but j's; a link on one down path
        # (rank i's) is missed by stream i only (up and down paths share no link: `serial_streams`)
        return np.where(c_dn >= 2, float(p), np.where(c_dn == 1, p - 1.0, c_up))

    def alone_flows(self, bandwidth: np.ndarray) -> Flows:
        """The streams of a collective alone: each on its slowest link only, serial (module doc).

        Parameters
        ----------
        bandwidth : float array [n_links]
            The topology's link bandwidths, bytes/s.

        Returns
        -------
        Flows
            p flows of 1/p bytes per byte of collective size, each waiting for the one before.
        """
        p = self.p
        _, link = self.slowest(1.0 / bandwidth)
        return Flows(np.full(p, self.src), np.full(p, self.top), np.full(p, 1.0 / p),
                     dep_ptr=np.concatenate([[0], np.arange(p)]).astype(np.int64),
                     dep_idx=np.arange(p - 1, dtype=np.int64), route_ptr=np.arange(p + 1, dtype=np.int64),
                     route_links=link.astype(np.int64), latency=self.latency)


def serial_streams(topo: Topology, schedule: Schedule) -> SerialStreams | None:
    """A streaming reduce-scatter or all-gather as paths (module doc), or None for any other schedule.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed; its last node is the top switch.

    Returns
    -------
    SerialStreams or None
        None unless the schedule streams a reduce-scatter or an all-gather whose up and down paths
        use different links.
    """
    if not schedule.streaming or schedule.collective not in SERIAL or schedule.p < 2:
        return None
    nodes = schedule.topology_nodes()
    p = schedule.p
    ranks, top = nodes[:p], int(nodes[-1])
    up = topo.route(ranks, np.full(p, top))
    down = topo.route(np.full(p, top), ranks)
    if np.any(np.diff(up[0]) == 0) or np.any(np.diff(down[0]) == 0) or np.isin(up[1], down[1]).any():
        return None
    up_lat, dn_lat = path_latency(topo, *up), path_latency(topo, *down)
    if schedule.collective == "reduce-scatter":
        units = reduction_links(topo, up[1])
        latency = up_lat.max() + dn_lat
    else:
        units = np.zeros(0, np.int64)
        best = np.argsort(-dn_lat, kind="stable")[:2]
        latency = up_lat + dn_lat[np.where(np.arange(p) == best[0], best[-1], best[0])]
    return SerialStreams(schedule.collective, topo.n_links, up, down, units.astype(np.int64), latency,
                         int(ranks[0]), top)


def reduction_links(topo: Topology, up_links: np.ndarray) -> np.ndarray:
    """The reduction units a stream crosses: one per switch its up paths enter, where the switch
    reduces at a limited rate (`Topology.reduce_link`).

    Parameters
    ----------
    topo : Topology
        The network.
    up_links : int array
        Link ids of the stream's up paths (towards its top switch).

    Returns
    -------
    int64 array
        Link ids of those switches' reduction units (self-loops whose bandwidth is the reduction
        throughput, bytes of reduced output per second: a stream of S bytes puts S on each);
        empty without units.
    """
    if topo.reduce_link is None or not len(up_links):
        return np.zeros(0, dtype=np.int64)
    unit = topo.reduce_link[np.unique(topo.link_dst[up_links])]
    return unit[unit >= 0].astype(np.int64)
