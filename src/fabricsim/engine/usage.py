"""What communication moved through each NPU's endpoint and what it cost compute, over a period of
a training run (ACE's figures: achieved network bandwidth, its utilization, memory bandwidth used
by communication, compute slowdown).

Per NPU and iteration of the period:
- `sent`: network bytes its communication sent (each task's demand x its size,
  `CommPricer.demand`: the busiest member's figure, the same for every member);
- `memory`: memory bytes its communication moved under the run's endpoint policy
  (`EndpointModel.memory_per_byte`: NPU-driven, every step's blocks; ACE, one read and one write);
- `comm_time`: seconds with communication in flight on it (the union of its communication
  pieces, clipped to the period);
- `compute_time` / `compute_base`: seconds its compute tasks ran, and what they take alone.

Derived: achieved network bandwidth = sent / comm_time; utilization = that over what the NPU's
links can take (the sum of its outgoing links' bandwidth); memory bandwidth of communication =
memory / comm_time; memory bytes per network byte; compute slowdown = compute_time / compute_base.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..system.resources import task_times_of, transfer_demand
from ..vocab import COLLECTIVES, TaskKind
from .pricing import CommPricer
from .result import Period, TrainResult


@dataclass(frozen=True, eq=False)
class EndpointUsage:
    """Per NPU, per iteration of `period` (module doc); arrays of length n_npus.

    Parameters
    ----------
    period : str
        The iterations measured (the headline period's label).
    sent, memory : float arrays
        Network bytes sent and memory bytes moved by communication.
    comm_time : float array
        Seconds with communication in flight.
    compute_time, compute_base : float arrays
        Seconds compute ran, and would run alone.
    link_bandwidth : float array
        Bytes/s each NPU's outgoing links take together.
    """

    period: str
    sent: np.ndarray
    memory: np.ndarray
    comm_time: np.ndarray
    compute_time: np.ndarray
    compute_base: np.ndarray
    link_bandwidth: np.ndarray

    @staticmethod
    def _ratio(a: np.ndarray, b: np.ndarray) -> float:
        return float(a.sum() / b.sum()) if b.sum() > 0 else 0.0

    @property
    def network_bandwidth(self) -> float:
        """Bytes/s communication sent while in flight, over all NPUs (total sent / total time)."""
        return self._ratio(self.sent, self.comm_time)

    @property
    def utilization(self) -> float:
        """Achieved network bandwidth over what the NPUs' links can take (0..1)."""
        return self._ratio(self.sent, self.comm_time * self.link_bandwidth)

    @property
    def memory_bandwidth(self) -> float:
        """Bytes/s of memory traffic communication caused while in flight."""
        return self._ratio(self.memory, self.comm_time)

    @property
    def memory_per_network_byte(self) -> float:
        """Memory bytes moved per network byte sent."""
        return self._ratio(self.memory, self.sent)

    @property
    def compute_slowdown(self) -> float:
        """How much longer compute ran than alone (1: no interference)."""
        return self._ratio(self.compute_time, self.compute_base) or 1.0

    def summary(self) -> dict:
        """A JSON-ready dict (bytes, seconds and bytes/s per iteration, means over NPUs).

        Returns
        -------
        dict
        """
        n = len(self.sent)
        return {"period": self.period, "sent_bytes": float(self.sent.sum() / n),
                "memory_bytes": float(self.memory.sum() / n), "comm_time_s": float(self.comm_time.sum() / n),
                "network_bandwidth_bytes_per_s": self.network_bandwidth, "utilization": self.utilization,
                "memory_bandwidth_bytes_per_s": self.memory_bandwidth,
                "memory_per_network_byte": self.memory_per_network_byte, "compute_slowdown": self.compute_slowdown}


def _union_per_npu(npu: np.ndarray, a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """Per NPU, the length of the union of its intervals [a, b) (vectorized: sorted per NPU, each
    interval counts what it adds beyond the furthest end before it)."""
    if not len(npu):
        return np.zeros(n)
    order = np.lexsort((a, npu))
    npu, a, b = npu[order], a[order], b[order]
    shift = float(b.max() - min(a.min(), 0.0)) + 1.0  # makes the running max restart at each NPU
    end = np.maximum.accumulate(b + npu * shift) - npu * shift
    prev = np.concatenate([[-np.inf], end[:-1]])
    prev[np.flatnonzero(np.diff(npu)) + 1] = -np.inf
    return np.bincount(npu, weights=np.maximum(b - np.maximum(a, prev), 0.0), minlength=n)


def endpoint_usage(result: TrainResult, pricer: CommPricer, period: Period | None = None) -> EndpointUsage:
    """What communication moved and what compute lost on each NPU over a period (module doc).

    Parameters
    ----------
    result : TrainResult
        The run.
    pricer : CommPricer
        The pricer it ran with (its endpoint policy: `CommPricer.for_system`).
    period : Period, optional
        The iterations (default `result.headline()`).

    Returns
    -------
    EndpointUsage
        Per NPU, per iteration of the period.
    """
    g = result.graph
    pricer = pricer.for_system(result.system.endpoint, result.system.npu)
    period = period or result.headline()
    edges = result.iteration_split.edges
    lo, hi = float(edges[period.first]), float(edges[period.last + 1])
    n_it = period.last - period.first + 1
    n = g.n_npus
    ep = pricer.endpoint
    kind = g.kind
    live = (g.iteration >= period.first) & (g.iteration <= period.last) & ~g.moves_nothing()
    sent, memory = np.zeros(n), np.zeros(n)
    # p2p: the sender sends, both ends move it through memory
    p2p = np.flatnonzero(live & (kind == TaskKind.P2P))
    per = ep.memory_per_byte(transfer_demand(0.0))
    np.add.at(sent, g.npu[p2p], g.size[p2p])
    np.add.at(memory, g.npu[p2p], per * g.size[p2p])
    np.add.at(memory, g.peer[p2p], per * g.size[p2p])
    # collectives and io: per (kind, collective or shards, group), bytes per byte of size x total size
    grouped = np.flatnonzero(live & ((kind == TaskKind.COLLECTIVE) | (kind == TaskKind.IO)))
    keys = np.stack([kind[grouped].astype(np.int64), g.coll[grouped].astype(np.int64), g.group[grouped]], axis=1)
    uniq, inv = np.unique(keys, axis=0, return_inverse=True) if len(grouped) else (np.zeros((0, 3), np.int64), None)
    total = np.bincount(inv.ravel(), weights=g.size[grouped], minlength=len(uniq)) if len(grouped) else []
    for (k, c, grp), size in zip(uniq.tolist(), total):
        members = list(g.groups[grp])
        if k == TaskKind.IO:
            d = pricer.io_demand(c)
        else:
            d = pricer.demand(COLLECTIVES[c], g.price_group(grp))  # a folded group is priced as its real one
            sent[members] += d.sent * size
        memory[members] += ep.memory_per_byte(d) * size
    # time with communication in flight: the union of each NPU's pieces inside the period
    pt, a, b = result.piece_task, np.maximum(result.piece_start, lo), np.minimum(result.piece_end, hi)
    keep = b > a
    pt, a, b = pt[keep], a[keep], b[keep]
    sizes = np.array([len(m) for m in g.groups] + [0], dtype=np.int64)  # group -1 (p2p): the 0 at the end
    pk = kind[pt]
    count = np.where(pk == TaskKind.P2P, 2, sizes[g.group[pt]]).astype(np.int64)
    owner = np.repeat(np.arange(len(pt)), count)
    npus = np.empty(int(count.sum()), dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    is_p2p = pk == TaskKind.P2P
    npus[starts[is_p2p]] = g.npu[pt[is_p2p]]
    npus[starts[is_p2p] + 1] = g.peer[pt[is_p2p]]
    for i in np.flatnonzero(~is_p2p):
        npus[starts[i]: starts[i] + count[i]] = g.groups[g.group[pt[i]]]
    comm_time = _union_per_npu(npus, a[owner], b[owner], n)
    comp = np.flatnonzero((g.iteration >= period.first) & (g.iteration <= period.last) & (kind == TaskKind.COMPUTE))
    base = task_times_of(result.system.npu, g, comp)[0]
    compute_time = np.bincount(g.npu[comp], weights=result.end[comp] - result.start[comp], minlength=n)
    compute_base = np.bincount(g.npu[comp], weights=base, minlength=n)
    topo = pricer.topo
    out = topo.link_src < topo.n_npus
    link_bw = np.bincount(topo.link_src[out], weights=topo.link_bw[out], minlength=topo.n_npus)[:n]
    return EndpointUsage(period.label, sent / n_it, memory / n_it, comm_time / n_it, compute_time / n_it,
                         compute_base / n_it, link_bw)
