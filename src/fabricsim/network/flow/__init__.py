"""Flow-level network model: concurrent flows share links max-min fairly, event by event.

Every transfer is a *flow* along its route. Between events the rates are constant; at every
event (a flow starts, or finishes sending) the rates are recomputed by water-filling:

- Max-min fairness with optional per-flow rate caps (a cap is a private link of that capacity)
  and strict priority classes (class 0 first, on the full capacity; then class 1 on what is
  left; ...).
- Water-filling is vectorized: every link whose fair share is no larger than the shares its
  flows could get anywhere else (a local bottleneck) is saturated in the same pass, so a pass
  costs a few sparse reductions and the passes are few. Flows with the same route, cap and
  priority get the same rate, so they are water-filled as one class with a multiplicity.
- Flows whose sending ends at the same instant are handled in one event.
- Units that never meet on a link while sending (a ring's transfers, each on its own links)
  need no event loop: `network.flow.solo` times them by one pass over their dependencies and
  proves by a sweep that none meets another; otherwise the loop runs (`exact=True` always).

Timing of one flow (mode="pipelined", cut-through-like): it sends from its start at its current
max-min rate on every link of its path at once; its last byte arrives `path latency + (hops-1) *
chunk / slowest link` after it has been sent (`chunk` = packet size for the pipeline fill; 0 =
fluid). mode="store-and-forward": the flow crosses its links one after another, each hop a flow
on one link that starts when the previous hop's data has arrived (+ that link's latency) --
ASTRA-sim's congestion-aware model, with fair sharing instead of FIFO.

Dependencies: a flow starts at `start` and only when all its predecessors have arrived. A
collective's schedule runs as dataflow (`network.lowering.dataflow`): a transfer starts when every earlier
transfer that wrote the blocks it sends into its source has arrived, not in lock-step.

Weights: a flow with explicit link sets may use a link at `weight` x its rate (a private
resource consumed per byte: an endpoint's memory or engine capacity); max-min then fills
sum(weight x rate) <= capacity on every link.

Holds (endpoint interference in the training engine, `Holds`): a hold is a share of a group's
(an NPU's) compute units and memory bandwidth; flows raise (+1) or lower (-1) holds when they
arrive (a collective's entry and exit on each member). A gated flow (a compute kernel on that NPU)
is capped at its rate over its roofline stretch with the larger share of each resource held:
max(compute / (1 - units), memory / (1 - memory)) for its compute and memory fractions of time;
0 while a resource it needs is wholly held.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import ConfigError
from ...topology.graph import Topology
from .loop import FlowRun, successors  # noqa: F401 (successors: part of this module's surface)
from .rows import link_bytes, path_sums, route_keys  # noqa: F401 (route_keys: part of this module's surface)

MODES = ("pipelined", "store-and-forward")


@dataclass(frozen=True, eq=False)
class Holds:
    """Shares of NPUs that flows raise and lower, and the flows they slow (module doc).

    Parameters
    ----------
    group : int array [holds]
        The group (an NPU) each hold applies to.
    units, memory : float arrays [holds]
        Shares of the group's compute units and memory bandwidth, in [0, 1].
    mark_ptr, mark_idx, mark_delta : arrays
        At flow i's arrival, holds `mark_idx[mark_ptr[i]:mark_ptr[i+1]]` are raised (+1) or
        lowered (-1) by the matching `mark_delta`; `mark_ptr` has one entry per flow plus one.
    gate : int array [flows]
        The group whose holds slow each flow (-1: none).
    compute, memory_time : float arrays [flows]
        Each gated flow's compute time and memory time over its roofline time.
    rate : float array [flows]
        Each gated flow's rate with nothing held, bytes/s.
    """

    group: np.ndarray
    units: np.ndarray
    memory: np.ndarray
    mark_ptr: np.ndarray
    mark_idx: np.ndarray
    mark_delta: np.ndarray
    gate: np.ndarray
    compute: np.ndarray
    memory_time: np.ndarray
    rate: np.ndarray


@dataclass(frozen=True, eq=False)
class Flows:
    """Point-to-point flows between topology nodes (numpy arrays, one entry per flow).

    Only `src`, `dst` and `size` are required; scalars are broadcast for `start`, `cap` and
    `priority`. See the module doc for routes, weights, gates and marks.

    Parameters
    ----------
    src, dst : int array
        Topology node ids.
    size : float array
        Bytes, finite and >= 0.
    start : float array, optional
        Earliest start, s (default 0).
    cap : float array, optional
        Rate cap per flow, bytes/s, > 0 (default: none).
    priority : int array, optional
        Strict priority class, 0 = highest (default 0).
    dep_ptr, dep_idx : int arrays, optional
        Predecessors in CSR form: flow i starts only after flows `dep_idx[dep_ptr[i]:dep_ptr[i+1]]`
        have arrived.
    route_ptr, route_links : int arrays, optional
        Explicit link sets in CSR form over link ids (e.g. a whole reduction tree); None: the
        topology routes every flow.
    latency : float array, optional
        Seconds per flow, overriding the sum of its links' latencies (NaN: that sum).
    route_weight : float array, optional
        Per `route_links` entry: bytes of link capacity used per byte of the flow (default 1).
    holds : Holds, optional
        Endpoint holds the flows raise and lower, and the flows they slow.
    """

    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray  # bytes
    start: np.ndarray | None = None  # s (default 0)
    cap: np.ndarray | None = None  # bytes/s per flow (default: none)
    priority: np.ndarray | None = None  # 0 = highest (default 0)
    dep_ptr: np.ndarray | None = None  # predecessors of flow i: dep_idx[dep_ptr[i]:dep_ptr[i+1]]
    dep_idx: np.ndarray | None = None
    # explicit link sets (CSR over link ids), e.g. a whole reduction tree; None: the topology routes
    route_ptr: np.ndarray | None = None
    route_links: np.ndarray | None = None
    latency: np.ndarray | None = None  # s per flow, overriding the sum of its links' latencies (NaN: that sum)
    route_weight: np.ndarray | None = None  # per route_links entry: link use per byte of the flow (default 1)
    holds: Holds | None = None  # endpoint holds raised and lowered by flows, and the flows they slow

    def __post_init__(self):
        n = len(np.atleast_1d(self.src))
        conv = {"src": np.int64, "dst": np.int64, "size": float}
        for name, dt in conv.items():
            object.__setattr__(self, name, np.atleast_1d(np.asarray(getattr(self, name), dtype=dt)))
        defaults = {"start": 0.0, "cap": np.inf, "priority": 0}
        for name, dv in defaults.items():
            v = getattr(self, name)
            arr = np.full(n, dv, dtype=np.int64 if name == "priority" else float) if v is None else \
                np.broadcast_to(np.asarray(v, dtype=np.int64 if name == "priority" else float), (n,)).copy()
            object.__setattr__(self, name, arr)
        if self.dep_ptr is None:
            object.__setattr__(self, "dep_ptr", np.zeros(n + 1, dtype=np.int64))
            object.__setattr__(self, "dep_idx", np.zeros(0, dtype=np.int64))
        if not (len(self.dst) == len(self.size) == n and len(self.dep_ptr) == n + 1):
            raise ValueError("Flows: arrays differ in length")
        if n and (self.size.min() < 0 or not np.all(np.isfinite(self.size))):
            raise ValueError("Flows: sizes must be finite and >= 0")
        if n and (self.cap.min() <= 0):
            raise ValueError("Flows: rate caps must be > 0")
        if self.route_weight is not None and (self.route_links is None or len(self.route_weight) != len(self.route_links)):
            raise ValueError("Flows: route_weight needs explicit routes, one weight per route entry")
        h = self.holds
        if h is not None and not (len(h.gate) == len(h.compute) == len(h.memory_time) == len(h.rate) == n
                                  and len(h.mark_ptr) == n + 1 and len(h.units) == len(h.memory) == len(h.group)):
            raise ValueError("Flows: holds need one gate, compute, memory_time and rate per flow, mark_ptr of n+1")

    def __len__(self) -> int:
        return len(self.src)


@dataclass(frozen=True, eq=False)
class FlowResult:
    """What `simulate_flows` (or a network model's `flows`) reports.

    Parameters
    ----------
    start : float array
        When each flow began sending, s.
    sent : float array
        When each flow's last byte left its source, s.
    finish : float array
        When each flow's last byte arrived, s.
    link_bytes : float array
        Bytes each link carried.
    link_busy : float array
        Seconds each link carried traffic.
    events : int
        Events the simulation processed (lock-step levels for the analytical models).
    timeline : tuple
        ((t0, t1, per-link rates in bytes/s), ...) per interval, when recorded.
    """

    start: np.ndarray  # s, when each flow began sending
    sent: np.ndarray  # s, when each flow's last byte left
    finish: np.ndarray  # s, when each flow's last byte arrived
    link_bytes: np.ndarray  # bytes carried by each link
    link_busy: np.ndarray  # s each link carried traffic
    events: int
    timeline: tuple = field(default=())  # ((t0, t1, link rates bytes/s), ...) when recorded

    @property
    def makespan(self) -> float:
        """When the last flow arrived, s (0 without flows)."""
        return float(self.finish.max()) if len(self.finish) else 0.0

    def utilization(self, topo: Topology) -> np.ndarray:
        """Mean utilization of each link over the makespan.

        Parameters
        ----------
        topo : Topology
            The network the flows ran on (its link bandwidths).

        Returns
        -------
        float array [links]
            Link bytes / (bandwidth x makespan), 0..1; zeros for a zero makespan.
        """
        span = self.makespan
        return self.link_bytes / (topo.link_bw * span) if span > 0 else np.zeros(topo.n_links)


# ---- the event loop -----------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Units:
    """What the event loop runs: units with a route, a size, a post-send latency, predecessors."""

    ptr: np.ndarray
    links: np.ndarray
    size: np.ndarray
    start: np.ndarray
    cap: np.ndarray
    prio: np.ndarray
    lat: np.ndarray  # s added after the last byte is sent
    key: np.ndarray  # route identity (units with equal key, cap, prio share a class)
    dep_ptr: np.ndarray
    dep_idx: np.ndarray
    owner: np.ndarray  # flow each unit belongs to
    last: np.ndarray  # True for the unit whose arrival is its flow's arrival
    weight: np.ndarray | None = None  # per links entry (None: all 1)


def _units(topo: Topology, flows: Flows, mode: str, chunk: float) -> _Units:
    if flows.route_ptr is not None:
        ptr, links = np.asarray(flows.route_ptr, dtype=np.int64), np.asarray(flows.route_links, dtype=np.int64)
    else:
        ptr, links = topo.route(flows.src, flows.dst)
    hops = np.diff(ptr)
    n = len(flows)
    weight = None if flows.route_weight is None else np.asarray(flows.route_weight, dtype=float)
    # a weighted entry carries the flow at bandwidth / weight; bw: the slowest entry of each route
    lat, bw = path_sums(ptr, links, topo.link_lat, topo.link_bw, weight)
    if flows.latency is not None:  # a link set that is not a path (a tree) says its own latency
        given = np.asarray(flows.latency, dtype=float)
        lat = np.where(np.isnan(given), lat, given)
    if mode == "pipelined":
        if chunk == 0:  # fluid: the fill below is +0.0 for every flow (sizes are finite and >= 0), in one pass
            fill = 0.0
        else:
            fill = np.where(hops > 1, (hops - 1) * np.minimum(chunk, flows.size) / np.where(np.isfinite(bw), bw, 1.0),
                            0.0)
        if flows.route_ptr is not None:  # explicit routes: the class key is the set of links (and weights) itself
            key = route_keys(ptr, links, weight)
        else:
            key = flows.src * topo.n_nodes + flows.dst
        return _Units(ptr, links, flows.size, flows.start, flows.cap, flows.priority, lat + fill, key,
                      flows.dep_ptr, flows.dep_idx, np.arange(n), np.ones(n, dtype=bool), weight)
    return _store_and_forward_units(topo, flows, ptr, links, lat, weight)


def _store_and_forward_units(topo: Topology, flows: Flows, ptr, links, lat, weight) -> _Units:
    """Store-and-forward: one unit per hop, hop k+1 waits for hop k, a flow's first hop waits for
    its predecessors. A flow whose link set says its own latency (a tree: a stream through
    switches, an I/O multicast) has no hop order and stays one unit."""
    n = len(flows)
    hops = np.diff(ptr)
    whole = np.zeros(n, dtype=bool) if flows.latency is None else np.isfinite(np.asarray(flows.latency, float))
    split = (hops > 0) & ~whole
    k = np.where(split, hops, 1)  # units per flow
    n_units = int(k.sum())
    owner = np.repeat(np.arange(n), k)
    last_of = np.cumsum(k) - 1
    first_of = last_of - k + 1
    is_first = np.zeros(n_units, dtype=bool)
    is_first[first_of] = True
    last = np.zeros(n_units, dtype=bool)
    last[last_of] = True
    # a split unit has one link, a whole unit all of its flow's: the flow's links in order either way
    u_ptr = np.concatenate([[0], np.cumsum(np.where(split[owner], 1, hops[owner]))]).astype(np.int64)
    dcount = np.where(is_first, np.diff(flows.dep_ptr)[owner], 1)
    d_ptr = np.concatenate([[0], np.cumsum(dcount)])
    d_idx = np.empty(int(d_ptr[-1]), dtype=np.int64)
    not_first = np.flatnonzero(~is_first)
    d_idx[d_ptr[not_first]] = not_first - 1
    firsts = np.flatnonzero(is_first)
    for u in firsts[np.diff(flows.dep_ptr)[owner[firsts]] > 0]:
        f = owner[u]
        d_idx[d_ptr[u]: d_ptr[u + 1]] = last_of[flows.dep_idx[flows.dep_ptr[f]: flows.dep_ptr[f + 1]]]
    one = split[owner]
    first_link = links[np.minimum(u_ptr[:-1], max(len(links) - 1, 0))] if len(links) else np.zeros(n_units, np.int64)
    u_lat = np.where(one, topo.link_lat[first_link], np.where(whole[owner], lat[owner], 0.0))
    w_first = np.ones(n_units) if weight is None else weight[np.minimum(u_ptr[:-1], max(len(links) - 1, 0))]
    # class key: a one-link unit is its (link, weight); a whole flow is a class of its own
    pair_ids = np.unique(np.stack([first_link.astype(float), w_first], axis=1), axis=0, return_inverse=True)[1].ravel()
    key = np.where(one, pair_ids, -1 - owner)
    return _Units(u_ptr, links, flows.size[owner], np.where(is_first, flows.start[owner], 0.0), flows.cap[owner],
                  flows.priority[owner], u_lat, key, d_ptr, d_idx, owner, last, weight)


def simulate_flows(topo: Topology, flows: Flows, *, mode: str = "pipelined", chunk: float = 0.0,
                   record_timeline: bool = False, exact: bool = False) -> FlowResult:
    """Run `flows` on `topo` to completion (see module doc).

    Parameters
    ----------
    topo : Topology
        The network (its links' bandwidths are the capacities).
    flows : Flows
        What to run.
    mode : {"pipelined", "store-and-forward"}
        How a flow crosses its path (module doc).
    chunk : float
        Packet size for the pipeline fill of multi-hop flows, bytes (0: fluid).
    record_timeline : bool
        Keep every interval's per-link rates (`FlowResult.timeline`).
    exact : bool
        Re-solve max-min fairness whole at every event (the reference) instead of repairing it
        where a change reaches (`network.flow.maxmin`: equal to about 1e-9 relative, much faster).

    Returns
    -------
    FlowResult
        Start, send end and arrival of every flow, bytes and busy time per link, events.

    Examples
    --------
    Two 1 GB flows on one 100 GB/s link share it, or run one after the other by priority:

    >>> from fabricsim.topology import parse_topology
    >>> topo = parse_topology("ring:4", "100GB/s", "0ns")
    >>> simulate_flows(topo, Flows(src=[0, 0], dst=[1, 1], size=[1e9, 1e9])).finish.tolist()
    [0.02, 0.02]
    >>> simulate_flows(topo, Flows([0, 0], [1, 1], [1e9, 1e9], priority=[0, 1])).finish.tolist()
    [0.01, 0.02]
    """
    if mode not in MODES:
        raise ConfigError("mode", mode, f"accepted: {', '.join(MODES)}")
    if chunk < 0:
        raise ConfigError("chunk", chunk, "accepted: a packet size >= 0 bytes")
    U = _units(topo, flows, mode, float(chunk))
    run = succ = None
    if not exact and not record_timeline and flows.holds is None:  # units that never meet need no loop
        from .solo import solo_run

        succ = successors(U.dep_ptr, U.dep_idx)
        run = solo_run(topo, U, *succ)
    if run is None:
        run = FlowRun(topo, flows, U, record_timeline, not exact, succ).run()
    t_start, t_sent, t_done, link_busy, events, timeline = run
    n = len(flows)
    if len(U.size) == n:  # one unit per flow (U.owner the identity, every unit its flow's last): its times
        finish, sent, first_start = t_done, t_sent, t_start.copy()  # (the minimum of inf and x is x, NaN too)
    else:
        finish, sent = np.full(n, np.nan), np.full(n, np.nan)
        first_start = np.full(n, np.inf)
        finish[U.owner[U.last]] = t_done[U.last]
        sent[U.owner[U.last]] = t_sent[U.last]
        np.minimum.at(first_start, U.owner, t_start)
    if np.isnan(finish).any():
        bad = int(np.flatnonzero(np.isnan(finish))[0])
        raise ConfigError("flows", f"flow {bad}", "never started: its predecessors form a cycle or never finish")
    # bytes per link: every unit's size over its links (at its weight), all units having finished
    return FlowResult(first_start, sent, finish, link_bytes(U.ptr, U.links, U.size, U.weight, topo.n_links), link_busy,
                      events, timeline)
