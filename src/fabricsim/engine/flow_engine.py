"""The training engine on a flow-level network model: the whole graph as one flow simulation.

With a model whose traffic shares links (`NetworkModel.shares_links`), communication is not
priced alone: every collective's flows (`network.dataflow.schedule_flows`: its schedule as
dataflow, or a stream through its switch tree) and every p2p transfer become flows that share
the links max-min fairly with everything else in flight, and categories are strict priorities
(`scheduling.priorities`: MP before PP before DP ... by default), so a high-priority collective
preempts lower ones on the links they share, as a fabric with per-class virtual channels does.
Collectives start as soon as their dependencies are done (no stream limit, no chunking: the flow
model shares bandwidth per flow instead).

Compute tasks are flows too, on a private link per NPU of capacity 1 (a task of d seconds is a
flow of d "bytes"), chained in task-id order on each NPU, so one flow simulation carries both and
finishes when the graph does. A communication task is bracketed by two empty flows: an entry that
waits for its dependencies and an exit that waits for all its transfers.

The endpoint policy (`system.endpoint`) is modelled here as in the analytical engine, from the
same answers (`CommPricer.demand`, `injection_for`, `held`):
- interference: the entry of a communication task raises, on each of its NPUs, the hold the
  policy gives it (for its demand, at the pace it has alone), and its exit lowers it; a compute
  flow runs at 1 / its roofline stretch under the larger share of each resource held
  (`network.flow.Holds`);
- injection limit: a private endpoint link per NPU (capacity 1) that the NPU's outgoing traffic
  of a collective crosses at weight 1 / rate.
"""

from __future__ import annotations

import numpy as np

from ..network.dataflow import schedule_flows
from ..network.flow import Flows, Holds
from ..network.flow_model import endpoint_topology, with_injection
from ..system.model import System
from ..system.resources import task_times_of
from ..vocab import CATEGORIES, COLLECTIVES, TaskKind
from ..workload.graph import WorkloadGraph
from .pricing import CommPricer, io_flows
from .result import TrainResult, breakdown

PRIVATE, NET, SET = 0, 1, 2  # compute/marker on the NPU's private link, routed transfer, explicit link set


def simulate_on_flows(graph: WorkloadGraph, system: System, pricer: CommPricer, progress=None) -> TrainResult:
    """Run `graph` as one flow simulation on `pricer`'s topology and flow model (module doc).

    Parameters
    ----------
    graph : WorkloadGraph
        The tasks and their dependencies.
    system : System
        NPU roofline, endpoint policy, collective scheduling (its priorities become flow priorities).
    pricer : CommPricer
        The topology, a network model whose traffic shares links, and the algorithms.
    progress : callable, optional
        `progress(done_tasks, total_tasks)`, called once at the end.

    Returns
    -------
    TrainResult
        Start and end of every task (s), each communication task as one piece, the breakdown.
    """
    fg = _FlowGraph(graph, system, pricer)
    for t in range(len(graph)):
        fg.add_task(t)
    topo, flows = fg.assemble()
    res = pricer.model.flows(topo, flows)
    g = graph
    start, end = res.start[fg.entry], res.finish[fg.exit]
    comm = np.flatnonzero(g.kind != TaskKind.COMPUTE)
    bd = breakdown(g, start, end, comm, start[comm], end[comm], system.scheduling.priorities)
    if progress is not None:
        progress(len(g), len(g))
    return TrainResult(g, system, start, end, comm, start[comm], end[comm], bd, res.events)


class _FlowGraph:
    """The flows of a workload graph, appended task by task (module doc)."""

    def __init__(self, g: WorkloadGraph, system: System, pricer: CommPricer):
        self.g, self.system, self.pricer, self.topo = g, system, pricer, pricer.topo
        n = len(g)
        self.prio_of_cat = [system.scheduling.rank(c) for c in CATEGORIES]
        self.dur, self.share_c, self.share_m = task_times_of(system.npu, g)
        self.interferes = pricer.endpoint.interferes
        self.hold_ids: dict = {}  # (npu, Held) -> hold id
        self.empty = g.moves_nothing()
        self.cols: dict[str, list] = {k: [] for k in ("src", "dst", "size", "prio", "kind", "lat", "rate", "gate", "ga", "gc")}
        self.deps: list = []
        self.sets: list = []
        self.marks: list = []  # per flow: [(counter, delta), ...] at its arrival
        self.n = 0
        self.entry = np.full(n, -1, dtype=np.int64)
        self.exit = np.full(n, -1, dtype=np.int64)
        self.last_comp = [-1] * g.n_npus
        self.units: dict = {}
        self.kind, self.npu, self.peer = g.kind.tolist(), g.npu.tolist(), g.peer.tolist()
        self.cat, self.coll, self.size = g.category.tolist(), g.coll.tolist(), g.size.tolist()

    def add(self, s, d, sz, pr, kf, deps, sets=None, lat=None, rate=np.inf, gate=-1, ga=0.0, gc=0.0, marks=None) -> int:
        """Append flows (arrays or scalars); returns the first one's index."""
        s = np.atleast_1d(s)
        k = len(s)
        c = self.cols
        c["src"].append(s)
        c["dst"].append(np.atleast_1d(d))
        c["size"].append(np.broadcast_to(np.asarray(sz, dtype=float), (k,)))
        c["prio"].append(np.broadcast_to(np.asarray(pr, dtype=np.int64), (k,)))
        c["kind"].append(np.full(k, kf, dtype=np.int8))
        c["lat"].append(np.full(k, np.nan) if lat is None else np.asarray(lat, dtype=float))
        c["rate"].append(np.full(k, float(rate)))
        c["gate"].append(np.full(k, gate, dtype=np.int64))
        c["ga"].append(np.full(k, float(ga)))
        c["gc"].append(np.full(k, float(gc)))
        self.sets.extend(sets if sets is not None else [None] * k)
        self.deps.extend(deps)
        self.marks.extend([marks or ()] + [()] * (k - 1))
        first = self.n
        self.n += k
        return first

    def _marker(self, npu: int, pr: int, deps, marks=None) -> int:
        return self.add(npu, npu, 0.0, pr, PRIVATE, [deps], marks=marks)

    def add_task(self, t: int) -> None:
        preds = [int(self.exit[d]) for d in self.g.deps(t)]
        k = self.kind[t]
        if k == TaskKind.COMPUTE:
            p = self.npu[t]
            if self.last_comp[p] >= 0:
                preds.append(self.last_comp[p])
            gate = p if self.interferes else -1
            f = self.add(p, p, self.dur[t], 0, PRIVATE, [preds], gate=gate, ga=self.share_c[t], gc=self.share_m[t])
            self.entry[t] = self.exit[t] = self.last_comp[p] = f
            return
        pr = self.prio_of_cat[self.cat[t]]
        members = self.g.members(t)
        if self.empty[t]:
            self.entry[t] = self.exit[t] = self._marker(members[0], pr, preds)
            return
        pc, size, want = self.pricer, self.size[t], self.interferes
        # what it asks of the endpoints, and (where the endpoint interferes) its time alone
        if k == TaskKind.P2P:
            src, dst = self.npu[t], self.peer[t]
            demand, alone = pc.p2p_demand(src, dst), pc.p2p(src, dst, size) if want else 0.0
        elif k == TaskKind.IO:
            demand, alone = pc.io_demand(self.coll[t]), pc.io(self.peer[t], members, self.coll[t], size) if want else 0.0
        else:
            c = COLLECTIVES[self.coll[t]]
            demand, alone = pc.demand(c, members), pc.collective(c, members, size) if want else 0.0
        up = down = None
        if want:  # the hold the policy gives it at the pace it has alone
            hid = self._hold(members, pc.held(demand, size, alone))
            up, down = [(h, 1) for h in hid], [(h, -1) for h in hid]
        if k == TaskKind.P2P:
            rate = pc.injection_for(demand)
            if self.interferes:  # the transfer holds both NPUs from its start to its arrival
                e = self._marker(src, pr, preds, up)
                self.entry[t] = e
                self.exit[t] = self.add(src, dst, self.size[t], pr, NET, [[e]], rate=rate, marks=down)
            else:
                self.entry[t] = self.exit[t] = self.add(src, dst, self.size[t], pr, NET, [preds], rate=rate)
            return
        e = self._marker(members[0], pr, preds, up)
        if k == TaskKind.IO:
            fl = io_flows(self.topo, self.peer[t], members, self.coll[t], self.size[t], pr)
            sinks = self._add_flows(fl, 1.0, pr, e, pc.injection_for(demand))
        else:
            c = COLLECTIVES[self.coll[t]]
            unit = self.units.get((c, members))
            if unit is None:
                sched = pc.schedule(c, members)
                flows = schedule_flows(self.topo, sched, 1.0, stream=pc.model.streams)
                unit = self.units[(c, members)] = (flows, pc.injection_for(demand))
            sinks = self._add_flows(unit[0], self.size[t], pr, e, unit[1])
        self.entry[t] = e
        self.exit[t] = self._marker(members[0], pr, sinks, down)

    def _hold(self, members, held) -> list[int]:
        """Hold ids of `held` on each member (one per distinct (NPU, shares))."""
        return [self.hold_ids.setdefault((m, held), len(self.hold_ids)) for m in members]

    def _add_flows(self, unit: Flows, scale: float, pr: int, entry: int, rate: float) -> np.ndarray:
        """Append a unit flow set with sizes times `scale`, its sources waiting for `entry`;
        returns its sinks (the flows nothing in it waits for), which the exit marker waits for."""
        base = self.n
        local = [unit.dep_idx[unit.dep_ptr[i]: unit.dep_ptr[i + 1]] + base for i in range(len(unit))]
        local = [ld if len(ld) else np.array([entry], dtype=np.int64) for ld in local]
        if unit.route_ptr is not None:
            sets = [unit.route_links[unit.route_ptr[i]: unit.route_ptr[i + 1]] for i in range(len(unit))]
            self.add(unit.src, unit.dst, unit.size * scale, pr, SET, local, sets, unit.latency, rate=rate)
        else:
            self.add(unit.src, unit.dst, unit.size * scale, pr, NET, local, rate=rate)
        has_succ = np.zeros(len(unit), dtype=bool)
        has_succ[unit.dep_idx] = True
        return np.flatnonzero(~has_succ) + base

    def assemble(self):
        """(augmented topology, Flows): routes for transfers, the NPU's private link for compute
        and markers, explicit link sets for streams; endpoint links where injection is limited."""
        topo, n_npus = self.topo, self.g.n_npus
        cat = {k: np.concatenate(v) for k, v in self.cols.items()}
        S, D, KF = cat["src"].astype(np.int64), cat["dst"].astype(np.int64), cat["kind"]
        L = topo.n_links
        hops = np.ones(self.n, dtype=np.int64)
        net = np.flatnonzero(KF == NET)
        r_ptr, r_links = topo.route(S[net], D[net])
        hops[net] = np.diff(r_ptr)
        exp = np.flatnonzero(KF == SET)
        hops[exp] = [len(self.sets[i]) for i in exp]
        ptr = np.concatenate([[0], np.cumsum(hops)])
        links = np.empty(int(ptr[-1]), dtype=np.int64)
        priv = np.flatnonzero(KF == PRIVATE)
        links[ptr[priv]] = L + S[priv]
        if len(net):
            links[np.repeat(ptr[net] - r_ptr[:-1], np.diff(r_ptr)) + np.arange(int(r_ptr[-1]))] = r_links
        for i in exp:
            links[ptr[i]: ptr[i + 1]] = self.sets[i]
        counts = np.fromiter((len(d) for d in self.deps), dtype=np.int64, count=self.n)
        dep_ptr = np.concatenate([[0], np.cumsum(counts)])
        dep_idx = np.concatenate([np.asarray(d, dtype=np.int64) for d in self.deps]) if self.n else np.zeros(0, np.int64)
        holds = None
        if self.interferes:
            m_counts = np.fromiter((len(m) for m in self.marks), dtype=np.int64, count=self.n)
            marks = [x for m in self.marks for x in m]
            keys = list(self.hold_ids)  # in id order
            holds = Holds(group=np.array([p for p, _ in keys], dtype=np.int64),
                          units=np.array([h.units for _, h in keys], dtype=float),
                          memory=np.array([h.memory for _, h in keys], dtype=float),
                          mark_ptr=np.concatenate([[0], np.cumsum(m_counts)]).astype(np.int64),
                          mark_idx=np.array([c for c, _ in marks], dtype=np.int64),
                          mark_delta=np.array([d for _, d in marks], dtype=np.int64),
                          gate=cat["gate"], compute=cat["ga"], memory_time=cat["gc"], rate=np.ones(self.n))
        flows = Flows(S, D, cat["size"], None, None, cat["prio"], dep_ptr, dep_idx, ptr, links, cat["lat"],
                      holds=holds)
        rate = cat["rate"]
        if np.isfinite(rate).any():  # endpoint links after the private compute links
            aug = endpoint_topology(topo, 2 * n_npus, 1.0)
            return aug, with_injection(aug, flows, rate, link_base=L + n_npus)
        return endpoint_topology(topo, n_npus, 1.0), flows
