"""The training engine on a flow-level network model: the whole graph as one flow simulation.

With a model whose traffic shares links (`NetworkModel.shares_links`), communication is not
priced alone: every collective's flows (`network.lowering.dataflow.schedule_flows`: its schedule as
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
  of a collective crosses at weight 1 / rate: a transfer at its source, a stream at every member
  it leaves (`network.flow_model.with_injection`), as when the collective is priced alone.

Building the flows is vectorized (GPT-3 on 1024 NPUs: 463 k tasks, 6.4 M flows): a task's flows
are consecutive (compute: one; p2p: the transfer, after an entry marker where holds apply;
collective and io: entry, transfers, exit) and their number is known up front, so every task's
first flow id is a cumulative sum and every array (dependencies, routes, marks in CSR form) is
filled by scatter. The flows after a collective's entry are built, routed and linked once per
(collective, group) and candidate NCCL's choice runs at the task's size (`network.tuner`, asked
once per distinct size: a flow model prices a size by simulating it) as a template relative to
the entry, and tiled over its tasks (`network.flow.tiles`), sizes scaled; an NCCL protocol's share
of the bandwidth scales them too, and its latency (and NVLS's pipeline fill) is the exit marker's.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np

from ..network.lowering.dataflow import runs_as_streams, schedule_flows
from ..network.flow import Flows, Holds
from ..network.flow.tiles import put_each, put_outer, put_rows, put_shifted
from ..network.flow_model import endpoint_topology, with_injection
from ..system.model import System
from ..system.resources import task_times_of
from ..vocab import CATEGORIES, COLLECTIVES, TaskKind
from ..workload.graph import WorkloadGraph
from .pricing import CommPricer, io_flows
from .result import TrainResult
from .timesplit import breakdown


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
    with _small_pages():
        fg = _FlowGraph(graph, system, pricer)
        topo, flows = fg.assemble()
        res = pricer.model.flows(topo, flows)
    g = graph
    start, end = res.start[fg.entry], res.finish[fg.exit]
    comm = np.flatnonzero(g.kind != TaskKind.COMPUTE)
    bd = breakdown(g, start, end, comm, start[comm], end[comm], system.scheduling.priorities)
    if progress is not None:
        progress(len(g), len(g))
    return TrainResult(g, system, start, end, comm, start[comm], end[comm], bd, res.events)


@contextmanager
def _small_pages():
    """numpy's big arrays without its request for transparent huge pages, for the flow simulation.

    numpy asks the kernel for huge pages on every array of 4 MiB or more (madvise); where the
    kernel then compacts memory to find them (transparent_hugepage/defrag: madvise, the default),
    a flow simulation's hundreds of fresh 100-200 MB arrays stall in the kernel: 64 GPUs, 23 M
    flows, 34 s -> 24 s (16 s of system time -> 6 s) on this project's machine; the same user
    time. Only how memory is mapped changes, never a value. numpy's own switch
    (`NUMPY_MADVISE_HUGEPAGE`), set for the simulation and restored after it."""
    core = getattr(np, "_core", None) or getattr(np, "core", None)
    switch = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    was = switch(False) if switch is not None else None
    try:
        yield
    finally:
        if switch is not None:
            switch(was)


@dataclass(frozen=True, eq=False)
class _Template:
    """The flows of a communication task after its entry marker: its transfers, then its exit
    marker (last, on the first member's private link). Built once per (collective, group).

    Flow ids in `dep_rel` are relative to the entry (0: the entry; 1: the first transfer).
    """

    key: tuple  # ("coll", name, members) or ("io", direction, members, shards)
    src: np.ndarray  # int64 [n]
    dst: np.ndarray  # int64 [n]
    size: np.ndarray  # bytes per byte of the task (exit: 0)
    div: int  # > 0: each transfer moves task size / div instead (io: one flow per controller and shard)
    lat: np.ndarray  # s per flow (NaN: its links')
    rate: float  # injection limit of the transfers' NPUs, bytes/s (inf: none)
    dep_ptr: np.ndarray  # int64 [n + 1], CSR over dep_rel
    dep_rel: np.ndarray  # int64
    route_ptr: np.ndarray  # int64 [n + 1], CSR over route_links
    route_links: np.ndarray  # int64 link ids
    stream: bool  # streams fed by every member (else transfers, each fed by its source)
    route_weight: np.ndarray | None = None  # per route_links entry (None: 1): reduction units, injection
    protocol: object = None  # the NCCL protocol's cost (network.nccl.ProtocolCost) the task pays, or None

    @property
    def n(self) -> int:
        """Flows in the template (transfers and the exit)."""
        return len(self.src)


def _template(topo, fl: Flows, first_member: int, rate: float, key: tuple, stream: bool, div: int = 0) -> _Template:
    """A unit flow set `fl` as a template: its sources wait for the entry, its exit for its sinks
    (the flows nothing in it waits for); routed here once (explicit link sets and weights kept)."""
    n, private = len(fl), topo.n_links + int(first_member)
    cnt = np.diff(fl.dep_ptr)
    d_ptr = np.zeros(n + 2, dtype=np.int64)
    np.cumsum(np.maximum(cnt, 1), out=d_ptr[1:n + 1])  # a source waits for the entry (relative id 0)
    has_succ = np.zeros(n, dtype=bool)
    has_succ[fl.dep_idx] = True
    sinks = np.flatnonzero(~has_succ)
    d_ptr[n + 1] = d_ptr[n] + len(sinks)
    rel = np.zeros(int(d_ptr[-1]), dtype=np.int64)
    rel[np.repeat(d_ptr[:n] - fl.dep_ptr[:-1], cnt) + np.arange(len(fl.dep_idx))] = fl.dep_idx + 1
    rel[d_ptr[n]:] = sinks + 1
    explicit = fl.route_ptr is not None
    r_ptr, r_links = (fl.route_ptr, fl.route_links) if explicit else topo.route(fl.src, fl.dst)
    lat = fl.latency if explicit and fl.latency is not None else np.full(n, np.nan)
    m0 = np.array([first_member], dtype=np.int64)
    weight = None
    if explicit and fl.route_weight is not None:
        weight = np.concatenate([np.asarray(fl.route_weight, float), [1.0]])
    return _Template(key, np.concatenate([fl.src, m0]), np.concatenate([fl.dst, m0]),
                     np.concatenate([fl.size, [0.0]]), div, np.concatenate([np.asarray(lat, float), [np.nan]]),
                     float(rate), d_ptr, rel, np.concatenate([r_ptr, [r_ptr[-1] + 1]]).astype(np.int64),
                     np.concatenate([r_links, [private]]).astype(np.int64), bool(stream), weight)


def _inject(aug, src: np.ndarray, ptr: np.ndarray, links: np.ndarray, weight, rate: np.ndarray, base: int,
            stream: bool):
    """Routes (CSR, weights or None) with each flow of finite `rate` charged to the endpoint link of
    its source NPU, or of every NPU whose links it leaves for streams (`network.flow_model.with_injection`
    on explicit routes): (ptr, links, weight)."""
    fl = Flows(src, src, np.zeros(len(src)), route_ptr=ptr, route_links=links, route_weight=weight)
    fl = with_injection(aug, fl, rate, link_base=base, stream=stream)
    return fl.route_ptr, fl.route_links, fl.route_weight


def _injected(aug, tp: _Template, base: int) -> _Template:
    """`tp` with its transfers charged to their NPUs' endpoint links (weights 1 / its rate)."""
    rate = np.full(tp.n, tp.rate)
    rate[-1] = np.inf  # the exit marker moves nothing
    ptr, links, weight = _inject(aug, tp.src, tp.route_ptr, tp.route_links, tp.route_weight, rate, base, tp.stream)
    return replace(tp, route_ptr=ptr, route_links=links, route_weight=weight)


def _compute_chain(npu: np.ndarray, comp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(each compute task after the first of its NPU, the compute task before it on that NPU): compute
    tasks run in task-id order on their NPU."""
    ct = np.flatnonzero(comp)
    ct = ct[np.argsort(npu[ct], kind="stable")]
    same = npu[ct[1:]] == npu[ct[:-1]]
    return ct[1:][same], ct[:-1][same]


def _expand(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenated ranges starts[i] .. starts[i] + counts[i] - 1 (int64)."""
    total = int(counts.sum())
    return np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(total, dtype=np.int64)


class _FlowGraph:
    """The flows of a workload graph (module doc): `assemble()` builds them; `entry` and `exit`
    then hold each task's first and last flow."""

    def __init__(self, g: WorkloadGraph, system: System, pricer: CommPricer):
        self.g, self.system, self.pricer, self.topo = g, system, pricer, pricer.topo
        self.prio_of_cat = np.array([system.scheduling.rank(c) for c in CATEGORIES], dtype=np.int64)
        self.dur, self.share_c, self.share_m = task_times_of(system.npu, g)
        self.interferes = pricer.endpoint.interferes
        self.empty = g.moves_nothing()
        self.entry = self.exit = np.zeros(0, dtype=np.int64)

    def _templates(self, kind: int) -> tuple[np.ndarray, list]:
        """The non-empty tasks of `kind` (collective or io), the template of each (index into the
        list), and the templates, one per (collective or direction and shards, group) and, for a
        collective, per candidate NCCL's choice runs at the task's size (`network.tuner`)."""
        g = self.g
        tasks = np.flatnonzero((g.kind == kind) & ~self.empty)
        key = (g.peer[tasks].astype(np.int64) * (int(g.coll.max(initial=0)) + 1) + g.coll[tasks]) * len(g.groups) \
            + g.group[tasks]
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
        pc, topo, out = self.pricer, self.topo, []
        if kind == TaskKind.COLLECTIVE:  # split each (collective, group) by the candidate chosen at each size
            chosen = np.zeros(len(tasks), dtype=np.int64)
            for u, t in enumerate(tasks[first].tolist()):
                on = np.flatnonzero(inv == u)
                # each distinct size once: a flow model prices a size by simulating it (per candidate),
                # and a layer's collectives repeat a few sizes over every microbatch
                sizes, back = np.unique(g.size[tasks[on]], return_inverse=True)
                chosen[on] = pc.priced(COLLECTIVES[g.coll[t]], g.members(t)).winners(sizes)[back.reshape(-1)]
            _, first, inv = np.unique(inv * (int(chosen.max(initial=0)) + 1) + chosen, return_index=True,
                                      return_inverse=True)
        for i, t in zip(first.tolist(), tasks[first].tolist()):
            members = g.members(t)
            if kind == TaskKind.IO:
                d, shards = int(g.peer[t]), int(g.coll[t])
                fl = io_flows(topo, d, members, shards, 1.0)
                out.append(_template(topo, fl, members[0], pc.injection_for(pc.io_demand(shards)),
                                     ("io", d, members, shards), True, div=len(fl)))
            else:
                c = COLLECTIVES[g.coll[t]]
                cand = pc.priced(c, members).candidates[chosen[i]]
                sched = cand.schedule
                rate = pc.injection_for(pc.schedule_demand(sched))
                fl = schedule_flows(topo, sched, 1.0, stream=pc.model.streams)
                tp = _template(topo, fl, members[0], rate, ("coll", c, members), runs_as_streams(sched, pc.model.streams))
                out.append(replace(tp, protocol=cand.protocol_cost))
        return tasks, inv.reshape(-1), out

    def _held(self, t: int, tp: _Template | None):
        """What non-empty communication task `t` holds of each member (at its pace alone)."""
        g, pc = self.g, self.pricer
        size = float(g.size[t])
        if tp is None:  # p2p
            src, dst = int(g.npu[t]), int(g.peer[t])
            return pc.held(pc.p2p_demand(src, dst), size, pc.p2p(src, dst, size))
        if tp.key[0] == "io":
            _, d, members, shards = tp.key
            return pc.held(pc.io_demand(shards), size, pc.io(d, members, shards, size))
        _, c, members = tp.key
        return pc.held(pc.demand(c, members), size, pc.collective(c, members, size))

    def assemble(self):
        """(augmented topology, Flows): routes for transfers, the NPU's private link for compute
        and markers, explicit link sets for streams; endpoint links where injection is limited.
        Sets `entry` and `exit` (flow ids, one per task)."""
        g, topo, hold = self.g, self.topo, int(self.interferes)
        L, n_npus = topo.n_links, g.n_npus
        npu, peer = g.npu.astype(np.int64), g.peer.astype(np.int64)
        comp = g.kind == TaskKind.COMPUTE
        pt = np.flatnonzero(~comp & ~self.empty & (g.kind == TaskKind.P2P))
        g_ptr, g_flat = self._group_members()
        tmpl, templates = self._all_templates()
        p_ptr, p_links = topo.route(npu[pt], peer[pt])
        p_rate, p_weight = self._p2p_rates(pt), None
        inject = not (np.isinf(p_rate).all() and all(np.isinf(tp.rate) for tp in templates))
        aug = endpoint_topology(topo, (1 + inject) * n_npus, 1.0)  # endpoint links after the private compute links
        if inject:  # each NPU's outgoing traffic crosses its endpoint link (once per template)
            templates = [_injected(aug, tp, L + n_npus) for tp in templates]
            p_ptr, p_links, p_weight = _inject(aug, npu[pt], p_ptr, p_links, None, p_rate, L + n_npus, False)
        first, N, blocks = self._number_flows(pt, hold, tmpl, templates)
        q = first[pt] + hold  # p2p transfers
        after, before = _compute_chain(npu, comp)
        m0 = self._marker_npus(npu, g_ptr, g_flat)
        S, D, size, prio, lat, dep_ptr, ptr = self._flow_fields(N, first, m0, comp, after, q, pt, hold, p_ptr, blocks)
        dep_idx = self._flow_deps(dep_ptr, first, after, before, q, pt, hold, blocks)
        links, weight = self._flow_links(ptr, S, first, q, pt, hold, p_ptr, p_links, p_weight, inject, templates,
                                         blocks)
        holds = self._holds(N, comp, npu, tmpl, templates, g_ptr, g_flat) if hold else None
        return aug, Flows(S, D, size, None, None, prio, dep_ptr, dep_idx, ptr, links, lat, weight, holds=holds)

    def _group_members(self) -> tuple[np.ndarray, np.ndarray]:
        """The graph's groups as CSR: (ptr, the members of every group, concatenated), int64."""
        g = self.g
        g_len = np.array([len(m) for m in g.groups], dtype=np.int64)
        g_ptr = np.concatenate([[0], np.cumsum(g_len)]).astype(np.int64)
        g_flat = np.fromiter((p for m in g.groups for p in m), dtype=np.int64, count=int(g_ptr[-1]))
        return g_ptr, g_flat

    def _marker_npus(self, npu: np.ndarray, g_ptr: np.ndarray, g_flat: np.ndarray) -> np.ndarray:
        """Each task's first member, where its markers run: its NPU, or its group's first NPU."""
        g = self.g
        grouped = (g.kind == TaskKind.COLLECTIVE) | (g.kind == TaskKind.IO)
        m0 = npu.copy()
        m0[grouped] = g_flat[g_ptr[g.group[grouped]]]
        return m0

    def _all_templates(self) -> tuple[np.ndarray, list]:
        """(template of each task, -1 for none; the templates): one per (collective, group) and
        (io direction, shards, group)."""
        tmpl = np.full(len(self.g), -1, dtype=np.int64)
        templates: list[_Template] = []
        for k in (TaskKind.COLLECTIVE, TaskKind.IO):
            tasks, which, got = self._templates(k)
            tmpl[tasks] = which + len(templates)
            templates += got
        return tmpl, templates

    def _number_flows(self, pt: np.ndarray, hold: int, tmpl: np.ndarray, templates: list):
        """(first flow of each task, flows in all, [(template, its tasks in task order)]): a task's
        entry (compute flow, marker, or an unheld p2p transfer), then its tail. Sets `entry`, `exit`."""
        n = len(self.g)
        tn = np.array([tp.n for tp in templates], dtype=np.int64)
        cnt = np.ones(n, dtype=np.int64)
        cnt[pt] += hold
        tt = np.flatnonzero(tmpl >= 0)
        cnt[tt] += tn[tmpl[tt]]
        first = np.zeros(n, dtype=np.int64)
        np.cumsum(cnt[:-1], out=first[1:])
        N = int(first[-1] + cnt[-1]) if n else 0
        self.entry, self.exit = first, first + cnt - 1
        by = tt[np.argsort(tmpl[tt], kind="stable")]  # tasks grouped by template, in task order
        bounds = np.searchsorted(tmpl[by], np.arange(len(templates) + 1))
        return first, N, [(tp, by[bounds[u]: bounds[u + 1]]) for u, tp in enumerate(templates)]

    def _flow_fields(self, N: int, first, m0, comp, after, q, pt, hold: int, p_ptr, blocks):
        """(source, destination, size, priority, latency, dependency CSR ptr, route CSR ptr) of
        every flow."""
        g = self.g
        pr = np.where(comp, 0, self.prio_of_cat[g.category]).astype(np.int64)
        S, D, size = np.empty(N, dtype=np.int64), np.empty(N, dtype=np.int64), np.zeros(N)
        prio, lat = np.empty(N, dtype=np.int64), np.full(N, np.nan)
        dcnt, hops = np.zeros(N, dtype=np.int64), np.ones(N, dtype=np.int64)
        S[first] = D[first] = m0
        prio[first] = pr
        size[first[comp]] = self.dur[comp]
        dcnt[first] = np.diff(g.dep_ptr)
        dcnt[first[after]] += 1
        S[q], D[q], size[q], prio[q] = g.npu[pt], g.peer[pt], g.size[pt], pr[pt]
        if hold:
            dcnt[q] = 1  # a held transfer waits for its entry
        hops[q] = np.diff(p_ptr)
        for tp, T in blocks:  # each task's flows after its entry: the template's rows (`network.flow.tiles`)
            at = first[T] + 1
            for out, row in ((S, tp.src), (D, tp.dst), (lat, tp.lat), (dcnt, np.diff(tp.dep_ptr)),
                             (hops, np.diff(tp.route_ptr))):
                put_rows(out, at, row)
            put_each(prio, at, tp.n, pr[T])
            if tp.div:
                put_each(size, at, tp.n - 1, g.size[T] / tp.div)
            elif tp.protocol is not None:
                # NCCL's protocol: its share of the bandwidth scales the bytes; its latency (and NVLS's
                # fill) and what its ceiling (LL's llMaxBw, a tree's NICs) adds to the collective alone
                # are the exit marker's
                sz = g.size[T]
                put_outer(size, at, sz * tp.protocol.terms.data_scale(sz), tp.size)
                lat[at + tp.n - 1] = tp.protocol.tail(sz)
            else:
                put_outer(size, at, g.size[T], tp.size)
        dep_ptr = np.zeros(N + 1, dtype=np.int64)
        np.cumsum(dcnt, out=dep_ptr[1:])
        del dcnt
        ptr = np.zeros(N + 1, dtype=np.int64)
        np.cumsum(hops, out=ptr[1:])
        return S, D, size, prio, lat, dep_ptr, ptr

    def _flow_deps(self, dep_ptr, first, after, before, q, pt, hold: int, blocks) -> np.ndarray:
        """Every flow's dependencies (CSR over `dep_ptr`): a task's graph dependencies and its NPU's
        previous compute, a held transfer's entry, a template's flows relative to its entry."""
        g = self.g
        ng = np.diff(g.dep_ptr)
        dep_idx = np.empty(int(dep_ptr[-1]), dtype=np.int64)
        dep_idx[_expand(dep_ptr[first], ng)] = self.exit[g.dep_idx]  # graph deps, then the NPU's previous compute
        dep_idx[dep_ptr[first[after]] + ng[after]] = first[before]
        if hold:
            dep_idx[dep_ptr[q]] = first[pt]
        for tp, T in blocks:
            put_shifted(dep_idx, dep_ptr[first[T] + 1], first[T], tp.dep_rel)
        return dep_idx

    def _flow_links(self, ptr, S, first, q, pt, hold: int, p_ptr, p_links, p_weight, inject: bool, templates, blocks):
        """(links, weights or None) of every flow's route (CSR over `ptr`): the NPU's private link
        for entries, routed p2p transfers, the templates' link sets."""
        L = self.topo.n_links
        links = np.empty(int(ptr[-1]), dtype=np.int64)
        private = np.ones(len(self.g), dtype=bool)  # entries on the NPU's own link: all but unheld p2p transfers
        private[pt] = bool(hold)
        priv = first[private]
        links[ptr[priv]] = L + S[priv]
        p_at = _expand(ptr[q], np.diff(p_ptr))
        links[p_at] = p_links
        weight = None
        if inject or any(tp.route_weight is not None for tp in templates):
            weight = np.ones(len(links))
        if inject:
            weight[p_at] = p_weight
        del p_at
        for tp, T in blocks:
            at = ptr[first[T] + 1]
            put_rows(links, at, tp.route_links)
            if tp.route_weight is not None:
                put_rows(weight, at, tp.route_weight)
        return links, weight

    def _p2p_rates(self, pt: np.ndarray) -> np.ndarray:
        """Injection limit of each p2p task's NPUs, bytes/s (inf: none); one question per (src, dst)."""
        pc, g = self.pricer, self.g
        if not len(pt):
            return np.zeros(0)
        width = int(g.peer.max(initial=0)) + 1
        uniq, inv = np.unique(g.npu[pt].astype(np.int64) * width + g.peer[pt], return_inverse=True)
        return np.array([pc.injection_for(pc.p2p_demand(k // width, k % width)) for k in uniq.tolist()],
                        dtype=float)[inv.reshape(-1)]

    def _holds(self, N: int, comp, npu, tmpl, templates, g_ptr, g_flat) -> Holds:
        """The holds: one per distinct (NPU, shares held), numbered in order of first use; each
        communication task's entry raises its members' holds, its exit (or held transfer) lowers them."""
        g = self.g
        tasks = np.flatnonzero(~comp & ~self.empty)
        held_id: dict = {}  # Held -> index, in order of first use
        memo: dict = {}  # (template or p2p pair, size) -> index into held_id
        hv = np.empty(len(tasks), dtype=np.int64)
        tm, sizes, src, dst = (a[tasks].tolist() for a in (tmpl, g.size, g.npu, g.peer))
        for i, t in enumerate(tasks.tolist()):
            key = (tm[i], sizes[i]) if tm[i] >= 0 else (-1, src[i], dst[i], sizes[i])
            h = memo.get(key)
            if h is None:
                h = memo[key] = held_id.setdefault(self._held(t, templates[tm[i]] if tm[i] >= 0 else None), len(held_id))
            hv[i] = h
        # members of each task: its group, or (source, destination) of a p2p transfer (a group of its own)
        is_p2p = g.kind[tasks] == TaskKind.P2P
        p_tasks = tasks[is_p2p]
        ext_ptr = np.concatenate([g_ptr, g_ptr[-1] + 2 * np.arange(1, len(p_tasks) + 1)])
        ext_flat = np.concatenate([g_flat, np.stack([npu[p_tasks], g.peer[p_tasks]], axis=1).ravel().astype(np.int64)])
        gid = g.group[tasks].astype(np.int64)
        gid[is_p2p] = len(g.groups) + np.arange(len(p_tasks))
        m_len = np.diff(ext_ptr)[gid]
        members = ext_flat[_expand(ext_ptr[gid], m_len)]
        # hold id of each (member, held), numbered by first appearance
        n_held = max(len(held_id), 1)
        key = members * n_held + np.repeat(hv, m_len)
        uniq, first_at, inv = np.unique(key, return_index=True, return_inverse=True)
        rank = np.empty(len(uniq), dtype=np.int64)
        order = np.argsort(first_at, kind="stable")
        rank[order] = np.arange(len(uniq))
        hid = rank[inv.reshape(-1)]
        helds = list(held_id)
        kept = uniq[order]
        # marks: +1 at the entry, -1 at the exit, one per member in member order
        m_cnt = np.zeros(N, dtype=np.int64)
        m_cnt[self.entry[tasks]] = m_len
        m_cnt[self.exit[tasks]] = m_len
        mark_ptr = np.zeros(N + 1, dtype=np.int64)
        np.cumsum(m_cnt, out=mark_ptr[1:])
        del m_cnt
        mark_idx, mark_delta = np.empty(int(mark_ptr[-1]), dtype=np.int64), np.empty(int(mark_ptr[-1]), dtype=np.int64)
        up, down = _expand(mark_ptr[self.entry[tasks]], m_len), _expand(mark_ptr[self.exit[tasks]], m_len)
        mark_idx[up], mark_delta[up] = hid, 1
        mark_idx[down], mark_delta[down] = hid, -1
        gate, ga, gc = np.full(N, -1, dtype=np.int64), np.zeros(N), np.zeros(N)
        fc = self.entry[comp]
        gate[fc], ga[fc], gc[fc] = npu[comp], self.share_c[comp], self.share_m[comp]
        return Holds(group=(kept // n_held).astype(np.int64),
                     units=np.array([helds[h].units for h in (kept % n_held).tolist()], dtype=float),
                     memory=np.array([helds[h].memory for h in (kept % n_held).tolist()], dtype=float),
                     mark_ptr=mark_ptr, mark_idx=mark_idx, mark_delta=mark_delta,
                     gate=gate, compute=ga, memory_time=gc, rate=np.ones(N))
