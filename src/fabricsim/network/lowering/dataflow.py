"""A collective as flows: what the flow-level model (and the training engine on it) runs.

`schedule_flows` is the one place that decides how a schedule becomes flows:
- a streaming schedule (`Schedule.streaming`: in-network reduction) becomes FRED's flows, one
  stream reduced up and multicast down its whole switch tree at one rate (`streaming_flows`);
- any other schedule runs as dataflow (`collective_flows`): a transfer starts when the transfers
  that wrote the blocks it sends into its source have arrived, not in lock-step. The blocks are
  joined as runs of contiguous ids, as the Schedule IR keeps them in range form, never as
  (transfer, block) pairs (`lowering.dataflow_deps`: each form states its runs, `block_deps` joins them).
`merge_flows` puts several independent flow sets into one simulation.

Streams and routed transfers differ for an endpoint injection limit (`flow_model.with_injection`):
a stream is fed by every member whose links it leaves, a routed transfer (explicit route or not)
only by its source. `runs_as_streams` says which a schedule's flows are.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...ir import Schedule
from ...limits import check_limit
from ...topology.graph import Topology
from .dataflow_deps import block_deps, dep_csr, step_runs
from ..flow import Flows
from .streams import path_latency, reduction_links


def runs_as_streams(schedule: Schedule, stream: bool = True) -> bool:
    """Whether `schedule_flows` makes the schedule's flows streams through its switch tree.

    Parameters
    ----------
    schedule : Schedule
        A placed schedule.
    stream : bool
        Whether the model lets data stream through switches (a store-and-forward model does not).

    Returns
    -------
    bool
        True: explicit link sets fed by every member; False: transfers, each fed by its source.
    """
    return bool(schedule.streaming and stream)


def schedule_flows(topo: Topology, schedule: Schedule, size: float, *, start: float = 0.0,
                   priority: int = 0, stream: bool = True) -> Flows:
    """The flows of a placed `schedule` moving `size` bytes: streams through the switch tree
    when the schedule streams, else its transfers as dataflow.

    Parameters
    ----------
    topo : Topology
        The network the schedule is placed on.
    schedule : Schedule
        A placed schedule (`build_schedule`).
    size : float
        Collective size, bytes (nccl-tests' convention).
    start : float
        When the flows may start, s.
    priority : int
        Strict priority class (0 = highest).
    stream : bool
        Whether the model lets data stream through switches; a store-and-forward model does not,
        so a streaming schedule then runs its steps as dataflow (up, then down).

    Returns
    -------
    Flows
        With dependencies (dataflow) or explicit link sets (streams).
    """
    if runs_as_streams(schedule, stream):
        return streaming_flows(topo, schedule, size, start=start, priority=priority)
    flows = collective_flows(schedule, size, start=start, priority=priority)
    if topo.has_reduction_units:
        # transfers reduced into a switch with a limited reduction unit cross it (explicit routes),
        # each step's inputs into one switch sharing one output
        nodes = schedule.topology_nodes()
        parts = [topo.route_reducing(nodes[st.src], nodes[st.dst], st.reduce, st.first_block)
                 for _, st in schedule.expanded()]
        if parts:
            lens = np.concatenate([np.diff(p[0]) for p in parts])
            flows = replace(flows, route_ptr=np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
                            route_links=np.concatenate([p[1] for p in parts]),
                            route_weight=np.concatenate([p[2] for p in parts]))
    return flows


def collective_flows(schedule: Schedule, size: float, *, start: float = 0.0, priority: int = 0,
                     cap: float = np.inf) -> Flows:
    """The transfers of a placed schedule as flows with dataflow dependencies.

    A transfer waits for every earlier transfer that wrote, into its source, one of the blocks it
    sends (lock-step order defines "earlier"; writes in the same step are not visible to its reads),
    and for the previous transfer from the same source to the same destination (a FIFO channel:
    the pieces of a pipelined broadcast go in order). The blocks are joined as runs of contiguous
    ids (`block_deps`), so memory grows with the runs, not with (transfer, block) pairs: a range-form
    step (Swing) costs one run per transfer however many blocks it moves.

    Parameters
    ----------
    schedule : Schedule
        Placed (or on NPUs 0..p-1); repeated steps are expanded.
    size : float
        Collective size, bytes.
    start : float
        When the flows may start, s.
    priority : int
        Strict priority class of every flow (0 = highest).
    cap : float
        Rate cap of every flow, bytes/s (inf: none).

    Returns
    -------
    Flows
        One flow per transfer, in step order, routed by the topology when simulated.
    """
    nodes = schedule.topology_nodes()
    srcs, dsts, sizes, r_t, r_lo, r_hi, r_step = [], [], [], [], [], [], []
    tid = i = 0
    for st in schedule.steps:
        frac = schedule.transfer_fraction(st) * size
        for k in range(st.repeat):
            t, lo, hi = step_runs(st, k)
            r_t.append(t + tid)
            r_lo.append(lo)
            r_hi.append(hi)
            r_step.append(np.full(len(t), i, dtype=np.int64))
            srcs.append(st.src)
            dsts.append(st.dst)
            sizes.append(frac)
            tid += st.n_transfers
            i += 1
    n = tid
    cat = (lambda xs, dt=np.int64: np.concatenate(xs).astype(dt, copy=False) if xs else np.zeros(0, dt))  # noqa: E731
    all_src, all_dst = cat(srcs), cat(dsts)
    run_t, run_lo, run_hi, run_step = cat(r_t), cat(r_lo), cat(r_hi), cat(r_step)
    del r_t, r_lo, r_hi, r_step
    # a run is read at its transfer's source and written at its destination
    reader, writer = block_deps((run_t, all_src[run_t], run_step, run_lo, run_hi),
                                (run_t, all_dst[run_t], run_step, run_lo, run_hi), schedule.nblocks)
    dep_ptr, dep_idx = dep_csr(n, reader, writer, all_src, all_dst)
    return Flows(nodes[all_src], nodes[all_dst], cat(sizes, float), np.full(n, float(start)),
                 np.full(n, float(cap)), np.full(n, int(priority)), dep_ptr, dep_idx)


def streaming_flows(topo: Topology, schedule: Schedule, size: float, *, start: float = 0.0, priority: int = 0) -> Flows:
    """An in-network collective as FRED's flows: each reduced on the way up, multicast down.

    A flow streams through the switches, so it occupies every link of its tree at once at one
    rate and moves its bytes on each (explicit link sets; the flow's src/dst are its first input
    and the top switch).

    all-reduce: one flow over the up paths of every rank and the down paths to every rank;
    reduce: up paths of every rank, down to the root; broadcast: up from the root, down to the
    others; reduce-scatter: p serial flows of size/p (flow j: every up path, down to rank j);
    all-gather: p serial flows of size/p (flow j: up from rank j, down to the others).

    Parameters
    ----------
    topo : Topology
        The network the schedule is placed on.
    schedule : Schedule
        A placed streaming schedule; its last node is the top switch.
    size : float
        Collective size, bytes.
    start : float
        When the flows may start, s.
    priority : int
        Strict priority class (0 = highest).

    Returns
    -------
    Flows
        With explicit link sets and latencies (the deepest input to the deepest output, s);
        serial flows depend each on the one before. A flow that is reduced at a switch with a
        limited reduction throughput (`Topology.reduce_link`) also crosses that switch's reduction
        unit, so it streams no faster than the switch reduces (NVLink SHARP's NVSwitch).
    """
    if schedule.collective == "all-reduce":
        return _one_stream(topo, schedule, size, start, priority)
    nodes = schedule.topology_nodes()
    p = schedule.p
    if schedule.collective in ("reduce-scatter", "all-gather"):  # every stream over (nearly) every rank's path
        check_limit("blocks", 2.0 * p * p, f"stream link entries ({schedule.algorithm} {schedule.collective} on {p} "
                    "ranks: p serial streams over every rank's path, listed for flows that share the network with "
                    "other traffic or an injection limit; alone they are priced from their paths; the algorithm's "
                    "lockstep option times its steps instead)", "group size", p)

    ranks, top = nodes[:p], int(nodes[-1])
    up_ptr, up_l = topo.route(ranks, np.full(p, top))
    dn_ptr, dn_l = topo.route(np.full(p, top), ranks)
    up = [up_l[up_ptr[i]: up_ptr[i + 1]] for i in range(p)]
    down = [dn_l[dn_ptr[i]: dn_ptr[i + 1]] for i in range(p)]
    every = list(range(p))
    c, root = schedule.collective, schedule.root or 0
    if c == "all-reduce":
        sets, each = [(every, every)], float(size)
    elif c == "reduce":
        sets, each = [(every, [root])], float(size)
    elif c == "broadcast":
        sets, each = [([root], [r for r in every if r != root])], float(size)
    elif c == "reduce-scatter":
        sets, each = [(every, [j]) for j in every], float(size) / p
    elif c == "all-gather":
        sets, each = [([j], [r for r in every if r != j]) for j in every], float(size) / p
    else:
        raise ValueError(f"streaming_flows: {c} is not an in-network collective")
    reduces = c in ("all-reduce", "reduce", "reduce-scatter")
    links = [np.unique(np.concatenate([up[i] for i in u] + [down[i] for i in d]
                                      + ([reduction_links(topo, np.concatenate([up[i] for i in u]))] if reduces else [])))
             for u, d in sets]
    up_lat, dn_lat = path_latency(topo, up_ptr, up_l), path_latency(topo, dn_ptr, dn_l)
    lat = np.array([up_lat[u].max() + dn_lat[d].max() for u, d in sets])  # the deepest input to the deepest output
    k = len(sets)
    ptr = np.concatenate([[0], np.cumsum([len(x) for x in links])])
    dep_ptr = np.concatenate([[0], np.arange(k)])  # flow j waits for flow j-1 (serial flows)
    return Flows(np.full(k, ranks[sets[0][0][0]]), np.full(k, top), np.full(k, each), np.full(k, float(start)),
                 None, np.full(k, int(priority)), dep_ptr.astype(np.int64), np.arange(k - 1, dtype=np.int64),
                 ptr.astype(np.int64), np.concatenate(links).astype(np.int64), lat)


def _one_stream(topo: Topology, schedule: Schedule, size: float, start: float, priority: int) -> Flows:
    """An all-reduce that streams as one flow: every stage of its schedule at once on successive
    pieces. Each link carries what the schedule's transfers put on it (its weight: bytes per byte
    of the collective; a reduction unit its switch's reduced output), so the busiest link sets the
    rate; the latency is the sum over stages of each stage's longest path."""
    nodes = schedule.topology_nodes()
    n_l = topo.n_links
    load = np.zeros(n_l)
    lat = 0.0
    for _, st in schedule.expanded():  # the first block and the counts: range form as it stands
        ptr, links, use = topo.route_reducing(nodes[st.src], nodes[st.dst], st.reduce, st.first_block)
        frac = schedule.transfer_fraction(st)
        tid = np.repeat(np.arange(st.n_transfers), np.diff(ptr))
        load += np.bincount(links, weights=use * frac[tid], minlength=n_l)
        lat += float(np.max(np.bincount(tid, weights=topo.link_lat[links], minlength=st.n_transfers), initial=0.0))
    used = np.flatnonzero(load > 0)
    weight = load[used]
    one = np.allclose(weight, 1.0, rtol=0, atol=1e-12)
    return Flows(nodes[:1], nodes[-1:], np.array([float(size)]), np.array([float(start)]), None,
                 np.array([int(priority)]), np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64),
                 np.array([0, len(used)], dtype=np.int64), used.astype(np.int64), np.array([lat]),
                 None if one else weight)


def merge_flows(*parts: Flows, topo: Topology | None = None) -> Flows:
    """Several independent flow sets in one simulation (dependencies stay inside each set).

    Parameters
    ----------
    *parts : Flows
        The flow sets, in order; flow ids are offset by the flows before.
    topo : Topology, optional
        Needed when some parts carry explicit link sets (`streaming_flows`): the others are
        routed on it.

    Returns
    -------
    Flows
        The concatenation (gates and marks are not carried over; route weights are).
    """
    offs = np.cumsum([0] + [len(p) for p in parts])
    routes = weight = None
    if any(p.route_ptr is not None for p in parts):
        if topo is None:
            raise ValueError("merge_flows: parts with explicit link sets need topo= to route the others")
        got = [(p.route_ptr, p.route_links) if p.route_ptr is not None else topo.route(p.src, p.dst) for p in parts]
        lens = np.concatenate([np.diff(r[0]) for r in got])
        routes = (np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
                  np.concatenate([r[1] for r in got]).astype(np.int64))
        if any(p.route_weight is not None for p in parts):  # reduction units carry their inputs
            weight = np.concatenate([p.route_weight if p.route_weight is not None and p.route_ptr is not None
                                     else np.ones(len(r[1])) for p, r in zip(parts, got)])
    dep_ptrs, dep_idxs = [np.zeros(1, dtype=np.int64)], []
    base = 0
    for o, p in zip(offs[:-1], parts):
        dep_ptrs.append(p.dep_ptr[1:] + base)
        dep_idxs.append(p.dep_idx + o)
        base += len(p.dep_idx)
    cat = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
    lat = None
    if any(p.latency is not None for p in parts):
        lat = np.concatenate([p.latency if p.latency is not None else np.full(len(p), np.nan) for p in parts])
    return Flows(cat("src"), cat("dst"), cat("size"), cat("start"), cat("cap"), cat("priority"),
                 np.concatenate(dep_ptrs), np.concatenate(dep_idxs) if dep_idxs else np.zeros(0, np.int64),
                 *(routes or (None, None)), lat, weight)
