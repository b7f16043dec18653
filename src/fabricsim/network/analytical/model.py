"""The analytical models behind the network-model interface (`network.model`): `AnalyticalModel`.

A collective is priced by `analytical.timing.AnalyticalCollective`; a single transfer by its path;
a set of flows in lock-step levels of their dependencies (`AnalyticalModel.flows`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError
from ...ir import Schedule
from ...topology.graph import Topology
from .timing import AnalyticalCollective
from ..flow import FlowResult, Flows, successors


@dataclass(frozen=True)
class AnalyticalModel:
    """The analytical models behind the network-model interface (`network.model`).

    Parameters
    ----------
    congestion_aware : bool
        True: a step lasts as long as its most loaded link needs; False: transfers do not share
        links (ASTRA-sim's congestion-unaware backend).
    step_overhead : float
        Fixed cost per lock-step step, s.
    """

    congestion_aware: bool = True
    step_overhead: float = 0.0
    shares_links = False  # collectives are priced alone; the engine does not share links between them
    streams = True  # a streaming schedule is priced as streams through its switches

    @property
    def name(self) -> str:
        """The registered model name: congestion-aware or congestion-unaware."""
        return "congestion-aware" if self.congestion_aware else "congestion-unaware"

    def collective(self, topo: Topology, schedule: Schedule, injection: float | None = None) -> AnalyticalCollective:
        """`schedule` prepared for pricing at any size (see `AnalyticalCollective`).

        Parameters
        ----------
        topo : Topology
            The network.
        schedule : Schedule
            Placed on `topo`.
        injection : float, optional
            Bytes/s each NPU's endpoint can inject (None: no limit).

        Returns
        -------
        AnalyticalCollective
        """
        return AnalyticalCollective(topo, schedule, self.name, self.step_overhead, injection)

    def p2p(self, topo: Topology, src: int, dst: int, size: float) -> float:
        """A transfer alone: its path latency plus `size` over the slowest link of its route.

        Parameters
        ----------
        topo : Topology
            The network.
        src, dst : int
            Topology node ids.
        size : float
            Bytes.

        Returns
        -------
        float
            Seconds (plus `step_overhead`); 0 for src == dst or no bytes.
        """
        if src == dst or size <= 0:
            return 0.0
        _, links = topo.route([src], [dst])
        bw = float(topo.link_bw[links].min()) if len(links) else np.inf
        return float(topo.link_lat[links].sum()) + size / bw + self.step_overhead

    def flows(self, topo: Topology, flows: Flows, record_timeline: bool = False) -> FlowResult:
        """A set of flows in lock-step levels.

        A flow's level is one more than its deepest predecessor's; a level starts when the previous
        one has ended (and not before its flows' start times) and lasts like one step of this model
        (congestion-aware: the most loaded link's bytes over its bandwidth plus the longest latency;
        unaware: its slowest flow alone). Caps and priorities are not used.

        Parameters
        ----------
        topo : Topology
            The network.
        flows : Flows
            The flows (routes, weights and latencies used when given).
        record_timeline : bool
            Accepted for the interface; no timeline is recorded.

        Returns
        -------
        FlowResult
            `events` is the number of levels; ConfigError when dependencies form a cycle.
        """
        return _flow_levels(topo, flows, self.congestion_aware, self.step_overhead)


def _flow_levels(topo: Topology, flows: Flows, aware: bool, overhead: float) -> FlowResult:
    n = len(flows)
    if flows.route_ptr is not None:
        ptr, links = np.asarray(flows.route_ptr, np.int64), np.asarray(flows.route_links, np.int64)
    else:
        ptr, links = topo.route(flows.src, flows.dst)
    w = np.ones(len(links)) if flows.route_weight is None else np.asarray(flows.route_weight, float)
    tid = np.repeat(np.arange(n), np.diff(ptr))
    lat = np.bincount(tid, weights=topo.link_lat[links], minlength=n)
    if flows.latency is not None:
        lat = np.where(np.isnan(flows.latency), lat, flows.latency)
    level = _levels(flows)
    entry_level = level[tid]
    entry_bytes = flows.size[tid] * w
    flow_bw = np.full(n, np.inf)  # each flow alone: its slowest (weighted) link
    np.minimum.at(flow_bw, tid, topo.link_bw[links] / w)
    start = np.zeros(n)
    finish = np.zeros(n)
    link_bytes = np.zeros(topo.n_links)
    link_busy = np.zeros(topo.n_links)
    t = 0.0
    for lv in range(int(level.max(initial=-1)) + 1):
        idx = np.flatnonzero(level == lv)
        t = max(t, float(flows.start[idx].max()))
        ent = entry_level == lv
        load = np.bincount(links[ent], weights=entry_bytes[ent], minlength=topo.n_links)
        if aware:
            dur = float(np.max(load / topo.link_bw, initial=0.0)) + float(lat[idx].max(initial=0.0))
            end = np.full(len(idx), t + dur + overhead)
        else:
            alone = lat[idx] + np.where(np.isfinite(flow_bw[idx]), flows.size[idx] / flow_bw[idx], 0.0)
            end = t + alone + overhead
        start[idx], finish[idx] = t, end
        link_bytes += load
        link_busy += np.where(load > 0, float(end.max()) - t, 0.0)
        t = float(end.max())
    return FlowResult(start, finish, finish, link_bytes, link_busy, int(level.max(initial=-1)) + 1)


def _levels(flows: Flows) -> np.ndarray:
    """Dependency depth of every flow (0: no predecessors); ConfigError on a cycle."""
    n = len(flows)

    succ_ptr, succ = successors(flows.dep_ptr, flows.dep_idx)
    waiting = np.diff(flows.dep_ptr).copy()
    level = np.zeros(n, dtype=np.int64)
    frontier = np.flatnonzero(waiting == 0)
    seen = 0
    while len(frontier):
        seen += len(frontier)
        a, c = succ_ptr[frontier], succ_ptr[frontier + 1] - succ_ptr[frontier]
        src = np.repeat(frontier, c)
        nxt = succ[np.repeat(a - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))]
        np.maximum.at(level, nxt, level[src] + 1)
        np.subtract.at(waiting, nxt, 1)
        frontier = np.unique(nxt[waiting[nxt] == 0])
    if seen < n:
        raise ConfigError("flows", f"{n - seen} flows", "never start: their predecessors form a cycle")
    return level
