"""The flow engine's graph-to-flows conversion (`engine.flow_engine._FlowGraph`), built by blocks,
against a reference that builds the same flows task by task (the straightforward construction the
engine used before it was vectorized, kept here as the test oracle): every array of the Flows
(endpoints, sizes, priorities, dependencies, routes, latencies, injection weights, holds and
marks) and every task's entry and exit flow must be equal, element for element.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.engine.flow_engine import _FlowGraph
from fabricsim.engine.pricing import CommPricer, io_flows
from fabricsim.network.lowering.dataflow import schedule_flows
from fabricsim.network.flow import Flows, Holds
from fabricsim.network.flow_model import endpoint_topology, with_injection
from fabricsim.system import ACE, NPU, Ideal, NpuDriven, OffloadEngine, Scheduling, System
from fabricsim.system.resources import task_times_of
from fabricsim.topology import parse_topology
from fabricsim.vocab import CATEGORIES, COLLECTIVES, TaskKind
from fabricsim.workload.graph import GraphBuilder
from fabricsim.workload.models import Layer, Model, transformer
from fabricsim.workload.parallelism import Strategy, build_training

PRIVATE, NET, SET = 0, 1, 2


def reference_flows(g, system, pc):
    """(topology, Flows, entry, exit): each task's flows appended one task at a time."""
    topo, n_npus, L = pc.topo, g.n_npus, pc.topo.n_links
    rank = [system.scheduling.rank(c) for c in CATEGORIES]
    dur, share_c, share_m = task_times_of(system.npu, g)
    want, empty = pc.endpoint.interferes, g.moves_nothing()
    # row: src, dst, size, prio, kind, deps, links, lat, rate, gate, ga, gc, marks, link weights, stream
    rows, hold_ids, units = [], {}, {}
    entry, exit_ = np.zeros(len(g), np.int64), np.zeros(len(g), np.int64)
    last = [-1] * n_npus

    def add(s, d, sz, pr, kf, deps, links=None, lat=np.nan, rate=np.inf, gate=-1, ga=0.0, gc=0.0, marks=(),
            weights=None, stream=False):
        rows.append((s, d, sz, pr, kf, list(deps), links, lat, rate, gate, ga, gc, list(marks), weights, stream))
        return len(rows) - 1

    for t in range(len(g)):
        preds = [int(exit_[d]) for d in g.deps(t)]
        k, size = g.kind[t], float(g.size[t])
        if k == TaskKind.COMPUTE:
            p = int(g.npu[t])
            f = add(p, p, dur[t], 0, PRIVATE, preds + ([last[p]] if last[p] >= 0 else []), gate=p if want else -1,
                    ga=share_c[t], gc=share_m[t])
            entry[t] = exit_[t] = last[p] = f
            continue
        pr, members = rank[g.category[t]], g.members(t)
        if empty[t]:
            entry[t] = exit_[t] = add(members[0], members[0], 0.0, pr, PRIVATE, preds)
            continue
        if k == TaskKind.P2P:
            src, dst = int(g.npu[t]), int(g.peer[t])
            demand, alone = pc.p2p_demand(src, dst), (pc.p2p(src, dst, size) if want else 0.0)
        elif k == TaskKind.IO:
            demand = pc.io_demand(int(g.coll[t]))
            alone = pc.io(int(g.peer[t]), members, int(g.coll[t]), size) if want else 0.0
        else:
            c = COLLECTIVES[g.coll[t]]
            demand, alone = pc.demand(c, members), (pc.collective(c, members, size) if want else 0.0)
        up = down = ()
        if want:
            held = pc.held(demand, size, alone)
            hid = [hold_ids.setdefault((m, held), len(hold_ids)) for m in members]
            up, down = [(h, 1) for h in hid], [(h, -1) for h in hid]
        rate = pc.injection_for(demand)
        if k == TaskKind.P2P:
            if want:
                entry[t] = add(src, src, 0.0, pr, PRIVATE, preds, marks=up)
                exit_[t] = add(src, dst, size, pr, NET, [entry[t]], rate=rate, marks=down)
            else:
                entry[t] = exit_[t] = add(src, dst, size, pr, NET, preds, rate=rate)
            continue
        e = entry[t] = add(members[0], members[0], 0.0, pr, PRIVATE, preds, marks=up)
        if k == TaskKind.IO:  # streams from the controllers, fed by every member
            unit, scale, stream = io_flows(topo, int(g.peer[t]), members, int(g.coll[t]), size), 1.0, True
        else:
            key = (c, members)
            if key not in units:
                units[key] = schedule_flows(topo, pc.schedule(c, members), 1.0, stream=pc.model.streams)
            unit, scale = units[key], size
            stream = bool(pc.schedule(c, members).streaming and pc.model.streams)
        base = len(rows)
        for i in range(len(unit)):
            local = unit.dep_idx[unit.dep_ptr[i]: unit.dep_ptr[i + 1]] + base
            explicit = unit.route_ptr is not None
            links = unit.route_links[unit.route_ptr[i]: unit.route_ptr[i + 1]] if explicit else None
            weights = None  # a reduction unit's share (Topology.route_reducing)
            if explicit and unit.route_weight is not None:
                weights = unit.route_weight[unit.route_ptr[i]: unit.route_ptr[i + 1]]
            lat = unit.latency[i] if explicit and unit.latency is not None else np.nan
            add(unit.src[i], unit.dst[i], unit.size[i] * scale, pr, SET if explicit else NET,
                local if len(local) else [e], links, lat, rate, weights=weights, stream=stream)
        sinks = np.setdiff1d(np.arange(len(unit)), unit.dep_idx) + base
        exit_[t] = add(members[0], members[0], 0.0, pr, PRIVATE, sinks, marks=down)

    cols = list(zip(*rows))
    S, D = np.array(cols[0], np.int64), np.array(cols[1], np.int64)
    paths = []
    for s, d, kf, links in zip(S, D, cols[4], cols[6]):
        paths.append([L + s] if kf == PRIVATE else list(links) if kf == SET else list(topo.route([s], [d])[1]))
    ptr = np.concatenate([[0], np.cumsum([len(p) for p in paths])]).astype(np.int64)
    dep_ptr = np.concatenate([[0], np.cumsum([len(d) for d in cols[5]])]).astype(np.int64)
    holds = None
    if want:
        marks = cols[12]
        keys = list(hold_ids)
        holds = Holds(np.array([p for p, _ in keys], np.int64), np.array([h.units for _, h in keys], float),
                      np.array([h.memory for _, h in keys], float),
                      np.concatenate([[0], np.cumsum([len(m) for m in marks])]).astype(np.int64),
                      np.array([h for m in marks for h, _ in m], np.int64),
                      np.array([d for m in marks for _, d in m], np.int64),
                      np.array(cols[9], np.int64), np.array(cols[10], float), np.array(cols[11], float),
                      np.ones(len(rows)))
    weight = None
    if any(w is not None for w in cols[13]):
        weight = np.concatenate([np.ones(len(p)) if w is None else w for p, w in zip(paths, cols[13])])
    flows = Flows(S, D, np.array(cols[2], float), None, None, np.array(cols[3], np.int64), dep_ptr,
                  np.array([x for d in cols[5] for x in d], np.int64), ptr,
                  np.array([x for p in paths for x in p], np.int64), np.array(cols[7], float), weight, holds=holds)
    rate = np.array(cols[8], float)
    if np.isfinite(rate).any():
        aug = endpoint_topology(topo, 2 * n_npus, 1.0)
        stream = np.array(cols[14], bool)
        return aug, with_injection(aug, flows, rate, link_base=L + n_npus, stream=stream), entry, exit_
    return endpoint_topology(topo, n_npus, 1.0), flows, entry, exit_


def _small_training(endpoint, topo="torus:2x4", model="flow"):
    g = build_training(transformer("t", 2, 128, 4, 32, 100),
                       Strategy(mp=2, pp=2, dp=2, batch=4, microbatches=2, iterations=2))
    return g, System(NPU(1e15, 1e12, 0.5), endpoint, Scheduling()), CommPricer(parse_topology(topo, "10GB/s", "1us"),
                                                                              model)


def _weight_streaming(endpoint):
    """Loads and stores through the wafer's I/O controllers (io tasks) and pipeline sends."""
    layers = tuple(Layer(f"l{i}", "fc", 1e8, 1e9, 1e9, 1e9, 1e6, 1e8) for i in range(3))
    g = build_training(Model("stream", layers), Strategy(dp=10, pp=2, batch=20, microbatches=2, weight_streaming=True))
    return g, System(NPU(1e15, 1e12, 1.0), endpoint, Scheduling()), CommPricer(
        parse_topology("wafer:5x4", "750GB/s", "20ns"), "flow")


def _in_network(endpoint):
    """FRED's in-network all-reduce: streams with explicit link sets and latencies."""
    g = build_training(transformer("t", 2, 128, 4, 32, 100), Strategy(mp=2, pp=2, dp=5, batch=10, microbatches=2))
    return g, System(NPU(1e15, 1e12, 0.5), endpoint, Scheduling()), CommPricer(
        parse_topology("fred:5x4,up=1.5TB/s,reduce", "3TB/s", "1us"), "flow", {"all-reduce": "in_network_tree"})


def _edge_cases(endpoint):
    """Tasks that move nothing (no bytes, one member, to itself) and collectives sharing groups."""
    b = GraphBuilder(4)
    everyone = (0, 1, 2, 3)
    a = b.collective("all-reduce", 4e6, everyone, "DP", "ar")
    c = [b.compute(p, "c", duration=1e-4, deps=[a]) for p in everyone]
    z = b.collective("all-gather", 0.0, everyone, "MP", "nothing", deps=c)
    one = b.collective("all-reduce", 1e6, (2,), "MP", "alone", deps=[z])
    me = b.p2p(1, 1, 1e6, "PP", "self", deps=[one])
    s = b.p2p(0, 3, 2e6, "PP", "send", deps=[me, c[0]])
    r = b.collective("reduce-scatter", 8e6, (0, 2), "MP", "rs", deps=[s])
    b.collective("all-reduce", 2e6, everyone, "DP", "ar2", deps=[r, c[3]])
    b.compute(1, "tail", flops=1e9, mem_bytes=1e8, deps=[r])
    return b.build(), System(NPU(1e15, 1e12, 0.5), endpoint, Scheduling(priorities=("MP", "PP", "DP"))), CommPricer(
        parse_topology("torus:2x2", "10GB/s", "1us"), "flow")


def _reduction_units(endpoint, model="flow"):
    """NVLS in and across DGX nodes with limited reduction units: explicit routes with weights."""
    b = GraphBuilder(8)
    a = b.collective("all-reduce", 8e6, tuple(range(8)), "DP", "all")
    c = [b.compute(p, "c", duration=1e-4, deps=[a]) for p in range(8)]
    b.collective("all-reduce", 4e6, (0, 1, 2, 3), "MP", "node", deps=c[:4])
    b.p2p(1, 6, 2e6, "PP", "send", deps=[c[1]])
    topo = parse_topology("dgx:nodes=2,gpus=4,nics=1,nvlink=100GB/s,nic=400Gbps,nvls,nvls_rate=20GB/s,"
                          "sharp,sharp_rate=10GB/s")
    # proto=none: the reference builds the network's flows; NCCL's protocol terms on them are
    # tests/test_nccl_protocols.py's (the flow engine against `fabricsim collective`)
    return b.build(), System(NPU(1e15, 1e12, 0.5), endpoint, Scheduling()), CommPricer(
        topo, model, {"all-reduce": "nvls,proto=none"})


def _forwarders(endpoint):
    """Transfers routed through other NPUs of the group (2 hops on a 3x3 torus) and p2p sends."""
    b = GraphBuilder(9)
    a = b.collective("all-gather", 9e6, tuple(range(9)), "DP", "ag")
    b.p2p(0, 4, 2e6, "PP", "send", deps=[a])
    b.collective("all-reduce", 3e6, (0, 2, 4, 6, 8), "MP", "odd", deps=[a])
    return b.build(), System(NPU(1e15, 1e12, 0.5), endpoint, Scheduling()), CommPricer(
        parse_topology("torus:3x3", "10GB/s", "1us"), "flow", {"all-gather": "direct"})


ACE_EP = ACE(4 * 2**20, 1e12, 5e11)
CASES = {
    "3d ideal": lambda: _small_training(Ideal()),
    "3d npu-driven (holds)": lambda: _small_training(NpuDriven(0.25, 0.1)),
    "3d offload (injection)": lambda: _small_training(OffloadEngine(5e9)),
    "3d ace (holds and injection)": lambda: _small_training(ACE_EP),
    "3d store-and-forward": lambda: _small_training(Ideal(), model="flow-store-and-forward"),
    "weight streaming io": lambda: _weight_streaming(Ideal()),
    "weight streaming io, npu-driven": lambda: _weight_streaming(NpuDriven(0.25, 0.1)),
    "weight streaming io, offload": lambda: _weight_streaming(OffloadEngine(1e10)),
    "in-network streams": lambda: _in_network(Ideal()),
    "in-network streams, ace": lambda: _in_network(ACE_EP),
    "empty tasks": lambda: _edge_cases(Ideal()),
    "empty tasks, npu-driven": lambda: _edge_cases(NpuDriven(0.3, 0.5)),
    "empty tasks, offload": lambda: _edge_cases(OffloadEngine(2e9)),
    "reduction units": lambda: _reduction_units(Ideal()),
    "reduction units, store-and-forward": lambda: _reduction_units(Ideal(), "flow-store-and-forward"),
    "reduction units, offload, store-and-forward": lambda: _reduction_units(OffloadEngine(5e9),
                                                                            "flow-store-and-forward"),
    "forwarding NPUs, offload": lambda: _forwarders(OffloadEngine(2e9)),
    "forwarding NPUs, ace": lambda: _forwarders(ACE_EP),
}


@pytest.mark.parametrize("name", list(CASES))
def test_flows_built_by_blocks_equal_the_task_by_task_reference(name):
    g, system, pricer = CASES[name]()
    pricer = pricer.for_system(system.endpoint, system.npu)
    fg = _FlowGraph(g, system, pricer)
    topo, flows = fg.assemble()
    ref_topo, ref, entry, exit_ = reference_flows(g, system, pricer)
    assert np.array_equal(fg.entry, entry) and np.array_equal(fg.exit, exit_)
    assert np.array_equal(topo.link_src, ref_topo.link_src) and np.array_equal(topo.link_bw, ref_topo.link_bw)
    fields = ["src", "dst", "size", "start", "cap", "priority", "dep_ptr", "dep_idx", "route_ptr", "route_links",
              "latency", "route_weight"]
    parts = [(f, getattr(flows, f), getattr(ref, f)) for f in fields]
    assert (flows.holds is None) == (ref.holds is None)
    if ref.holds is not None:
        parts += [("holds." + f, getattr(flows.holds, f), getattr(ref.holds, f))
                  for f in ("group", "units", "memory", "mark_ptr", "mark_idx", "mark_delta", "gate", "compute",
                            "memory_time", "rate")]
    for f, got, want in parts:
        assert (got is None) == (want is None), f
        if want is not None:
            assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), f
