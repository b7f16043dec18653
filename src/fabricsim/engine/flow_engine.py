"""The training engine on the flow-level network model: the whole graph as one flow simulation.

With a flow model, communication is not priced alone: every collective's transfers (its
schedule as dataflow) and every p2p transfer become flows that share the links max-min fairly
with everything else in flight, and categories are strict priorities (`scheduling.priorities`:
MP before PP before DP ... by default), so a high-priority collective preempts lower ones on the
links they share -- as a fabric with per-class virtual channels does. Collectives start as soon as
their dependencies are done (no stream limit, no chunking: the flow model shares bandwidth per
flow instead).

Compute tasks are flows too, on a private link per NPU of capacity 1 (a task of d seconds is a
flow of d "bytes"), chained in task-id order on each NPU, so one flow simulation carries both and
finishes when the graph does. A collective task is bracketed by two empty flows: an entry that
waits for its dependencies and an exit that waits for all its transfers. In-network collectives
(in_network, in_network_tree) are FRED's flows: each streams through its whole switch tree at one
rate (`network.flow.streaming_flows`).

Not modelled here: endpoint interference (compute stretched while communication runs): use the
analytical models for that.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..collectives.schedule import COLLECTIVES
from ..errors import ConfigError
from ..network.flow import Flows, collective_flows, simulate_flows, streaming_flows
from ..system.model import System
from ..workload.graph import CATEGORIES, COLLECTIVE, COMPUTE, IO, WorkloadGraph
from .pricing import FLOW_MODELS, CommPricer, io_flows


def simulate_on_flows(graph: WorkloadGraph, system: System, pricer: CommPricer, progress=None):
    from .simulator import TrainResult, breakdown

    if system.endpoint.interferes:
        raise ConfigError("system.endpoint", "interference",
                          "accepted with the analytical network models only (the flow model runs compute as flows)")
    g, topo = graph, pricer.topo
    n = len(g)
    L = topo.n_links
    prio_of_cat = [system.scheduling.rank(c) for c in CATEGORIES]
    npu_model = system.npu
    dur = npu_model.task_times(g.duration, g.flops, g.mem_bytes)
    empty = g.moves_nothing()
    src, dst, size, prio, kind_f, dep_lists, link_sets, lat_given = [], [], [], [], [], [], [], []
    nflows = 0
    entry = np.full(n, -1, dtype=np.int64)
    exit_ = np.full(n, -1, dtype=np.int64)
    last_comp = [-1] * g.n_npus
    unit_cache: dict = {}
    PRIVATE, NET, SET = 0, 1, 2  # compute/marker on the NPU's private link, routed transfer, explicit link set

    def add(s, d, sz, pr, kf, deps, sets=None, lat=None):
        nonlocal nflows
        src.append(np.atleast_1d(s))
        dst.append(np.atleast_1d(d))
        size.append(np.atleast_1d(np.asarray(sz, dtype=float)))
        k = len(src[-1])
        prio.append(np.full(k, pr, dtype=np.int64) if np.ndim(pr) == 0 else pr)
        kind_f.append(np.full(k, kf, dtype=np.int8))
        lat_given.append(np.full(k, np.nan) if lat is None else np.asarray(lat, dtype=float))
        link_sets.extend(sets if sets is not None else [None] * k)
        dep_lists.extend(deps)
        first = nflows
        nflows += k
        return first

    kind, npu_of, peer, cat, coll, sz_t = (g.kind.tolist(), g.npu.tolist(), g.peer.tolist(), g.category.tolist(),
                                           g.coll.tolist(), g.size.tolist())
    streaming = pricer.streaming
    for t in range(n):
        preds = [int(exit_[d]) for d in g.deps(t)]
        k = kind[t]
        if k == COMPUTE:
            p = npu_of[t]
            if last_comp[p] >= 0:
                preds.append(last_comp[p])
            f = add(p, p, dur[t], 0, PRIVATE, [preds])
            entry[t] = exit_[t] = last_comp[p] = f
            continue
        pr = prio_of_cat[cat[t]]
        members = g.members(t)
        if empty[t]:
            f = add(members[0], members[0], 0.0, pr, PRIVATE, [preds])
            entry[t] = exit_[t] = f
            continue
        if k == IO:  # every controller's flow between an entry and an exit marker
            e = add(members[0], members[0], 0.0, pr, PRIVATE, [preds])
            fl = io_flows(topo, peer[t], members, coll[t], sz_t[t], pr)
            sets = [fl.route_links[fl.route_ptr[i]: fl.route_ptr[i + 1]] for i in range(len(fl))]
            first = add(fl.src, fl.dst, fl.size, pr, SET, [[e]] * len(fl), sets, fl.latency)
            x = add(members[0], members[0], 0.0, pr, PRIVATE, [list(range(first, first + len(fl)))])
            entry[t], exit_[t] = e, x
            continue
        if k != COLLECTIVE:  # p2p
            f = add(npu_of[t], peer[t], sz_t[t], pr, NET, [preds])
            entry[t] = exit_[t] = f
            continue
        e = add(members[0], members[0], 0.0, pr, PRIVATE, [preds])
        c = COLLECTIVES[coll[t]]
        key = (c, members)
        unit = unit_cache.get(key)
        if unit is None:
            sched = pricer.schedule(c, members)
            unit = streaming_flows(topo, sched, 1.0) if c in streaming else collective_flows(sched, 1.0)
            unit_cache[key] = unit
        base = nflows
        local = [unit.dep_idx[unit.dep_ptr[i]: unit.dep_ptr[i + 1]] + base for i in range(len(unit))]
        local = [ld if len(ld) else np.array([e], dtype=np.int64) for ld in local]
        if unit.route_ptr is not None:
            sets = [unit.route_links[unit.route_ptr[i]: unit.route_ptr[i + 1]] for i in range(len(unit))]
            add(unit.src, unit.dst, unit.size * sz_t[t], pr, SET, local, sets, unit.latency)
        else:
            add(unit.src, unit.dst, unit.size * sz_t[t], pr, NET, local)
        has_succ = np.zeros(len(unit), dtype=bool)
        has_succ[unit.dep_idx] = True
        sinks = np.flatnonzero(~has_succ) + base
        x = add(members[0], members[0], 0.0, pr, PRIVATE, [sinks])
        entry[t], exit_[t] = e, x
    S, D = np.concatenate(src).astype(np.int64), np.concatenate(dst).astype(np.int64)
    SZ, PR, KF = np.concatenate(size), np.concatenate(prio), np.concatenate(kind_f)
    # link sets: the topology's route for transfers, the NPU's private link for compute and
    # markers, the whole tree for streaming in-network flows
    hops = np.ones(nflows, dtype=np.int64)
    net = np.flatnonzero(KF == NET)
    r_ptr, r_links = topo.route(S[net], D[net])
    hops[net] = np.diff(r_ptr)
    exp = np.flatnonzero(KF == SET)
    hops[exp] = [len(link_sets[i]) for i in exp]
    ptr = np.concatenate([[0], np.cumsum(hops)])
    links = np.empty(int(ptr[-1]), dtype=np.int64)
    priv = np.flatnonzero(KF == PRIVATE)
    links[ptr[priv]] = L + S[priv]
    if len(net):
        idx = np.repeat(ptr[net] - r_ptr[:-1], np.diff(r_ptr)) + np.arange(int(r_ptr[-1]))
        links[idx] = r_links
    for i in exp:
        links[ptr[i]: ptr[i + 1]] = link_sets[i]
    counts = np.fromiter((len(d) for d in dep_lists), dtype=np.int64, count=nflows)
    dep_ptr = np.concatenate([[0], np.cumsum(counts)])
    dep_idx = np.concatenate([np.asarray(d, dtype=np.int64) for d in dep_lists]) if nflows else np.zeros(0, np.int64)
    aug = replace(topo, link_src=np.concatenate([topo.link_src, np.arange(g.n_npus)]),
                  link_dst=np.concatenate([topo.link_dst, np.arange(g.n_npus)]),
                  link_bw=np.concatenate([topo.link_bw, np.ones(g.n_npus)]),
                  link_lat=np.concatenate([topo.link_lat, np.zeros(g.n_npus)]),
                  link_dim=np.concatenate([topo.link_dim, np.full(g.n_npus, -1)]))
    flows = Flows(S, D, SZ, None, None, PR, dep_ptr, dep_idx, ptr, links, np.concatenate(lat_given))
    mode = FLOW_MODELS[pricer.model]
    res = simulate_flows(aug, flows, mode=mode)
    start = res.start[entry]
    end = res.finish[exit_]
    comm = np.flatnonzero(g.kind != COMPUTE)
    bd = breakdown(g, start, end, comm, start[comm], end[comm], system.scheduling.priorities)
    if progress is not None:
        progress(n, n)
    return TrainResult(g, system, start, end, comm, start[comm], end[comm], bd, res.events)
