"""The strategy search's objective: a fast list-schedule estimate of one training iteration of a
planned strategy on a topology (the role FlexNet's simulator plays inside TopoOpt's search).

Reported iteration times come from the training engine (`workload.opstrategy.build_graph` run by
`engine.simulate`); this estimate only ranks strategies, thousands of times per search:
- forward: embedding lookups run first on their servers; a dense group starts when its replicas
  are free and its inputs have arrived; all the MP transfers into a group move together, timed
  by their most loaded link (bytes / bandwidth, routed on the topology) plus the longest path
  latency;
- backward: in reverse; a group's gradients go back to its producers the same way;
- all-reduces run one after another on the network, each when its gradients are ready (after
  the intra-server step, which occupies the server as in the workload graph), priced alone by
  the network model (`CommPricer`);
- the iteration ends when the last server and the last all-reduce are done.
"""

from __future__ import annotations

import numpy as np

from ..engine.pricing import CommPricer
from ..system.npu import NPU
from ..topology.graph import Topology
from ..workload.opstrategy import Plan


class Estimator:
    """Estimate iteration times of plans on one topology (module doc); caches routes and
    all-reduce times.

    Parameters
    ----------
    topo : Topology
        The network (servers are its NPUs).
    npu : NPU
        One server's roofline.
    model : str
        Network model pricing the all-reduces (default congestion-aware).
    algorithms : mapping, optional
        collective -> algorithm (`engine.pricing.normalize_algorithms`).
    """

    def __init__(self, topo: Topology, npu: NPU, model: str = "congestion-aware", algorithms=None):
        self.topo = topo
        self.npu = npu
        self.pricer = CommPricer(topo, model, algorithms)
        n = topo.n_npus
        src, dst = np.divmod(np.arange(n * n, dtype=np.int64), n)
        off = src != dst
        ptr, links = topo.route(src[off], dst[off])
        full = np.zeros(n * n + 1, dtype=np.int64)
        full[1:][off] = np.diff(ptr)
        self._ptr = np.cumsum(full)
        self._links = links
        lat = np.add.reduceat(topo.link_lat[links], ptr[:-1]) if len(links) else np.zeros(0)
        self._lat = np.zeros(n * n)
        self._lat[off] = np.where(np.diff(ptr) > 0, lat, 0.0)
        self._bw = topo.link_bw
        self._ar: dict = {}

    def transfers_time(self, src: np.ndarray, dst: np.ndarray, size: np.ndarray) -> float:
        """Time of transfers moving together: the most loaded link's bytes / bandwidth plus the
        longest path latency, s.

        Parameters
        ----------
        src, dst : int arrays
            Servers.
        size : float array
            Bytes of each transfer.

        Returns
        -------
        float
        """
        if not len(src):
            return 0.0
        pair = src * self.topo.n_npus + dst
        lo, hi = self._ptr[pair], self._ptr[pair + 1]
        counts = hi - lo
        idx = np.repeat(lo - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) + np.arange(counts.sum())
        load = np.bincount(self._links[idx], weights=np.repeat(size, counts), minlength=len(self._bw))
        return float((load / self._bw).max() + self._lat[pair].max())

    def allreduce_time(self, members: tuple[int, ...], size: float) -> float:
        """All-reduce of `size` bytes over `members` alone on the network, s (cached)."""
        key = (members, size)
        t = self._ar.get(key)
        if t is None:
            t = self._ar[key] = float(self.pricer.collective("all-reduce", members, size))
        return t

    def __call__(self, pl: Plan) -> float:
        """Estimated iteration time of `pl`, s (module doc).

        Parameters
        ----------
        pl : Plan
            A planned strategy on this topology's servers.

        Returns
        -------
        float
        """
        work = pl.work
        G = len(work.groups)
        clock = np.zeros(work.n)
        comp = lambda fm: float(self.npu.compute_time(*fm))  # noqa: E731
        into: dict[int, list] = {}
        for t in pl.transfers:
            into.setdefault(t.consumer, []).append(t)
        order = work.order
        end_f = np.zeros(G)
        for g in order:
            reps = pl.replicas[g]
            start = float(clock[reps].max())
            ts = into.get(g)
            if ts:
                arrive = max(end_f[t.producer] for t in ts) + self.transfers_time(
                    np.concatenate([t.src for t in ts]), np.concatenate([t.dst for t in ts]),
                    np.concatenate([t.size for t in ts]))
                start = max(start, arrive)
            if work.groups[g].embedding:  # lookups on one server run back to back
                clock[reps] += comp(pl.fwd[g])
            else:
                clock[reps] = start + comp(pl.fwd[g])
            end_f[g] = clock[reps].max()
        grad_ready = np.zeros(G)
        net = 0.0
        for g in order[::-1]:
            reps = pl.replicas[g]
            start = max(float(clock[reps].max()), grad_ready[g])
            clock[reps] = start + comp(pl.bwd_wg[g]) + comp(pl.bwd_ig[g])
            for t in into.get(g, []):
                back = self.transfers_time(t.dst, t.src, t.size)
                grad_ready[t.producer] = max(grad_ready[t.producer], clock[reps].max() + back)
            if pl.allreduce[g] > 0:
                clock[reps] += pl.intra[g]  # the intra-server step runs on the server, as in the graph
                net = max(net, float(clock[reps].max())) + self.allreduce_time(tuple(reps.tolist()), pl.allreduce[g])
        return float(max(clock.max(), net))
