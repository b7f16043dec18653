"""Dataflow dependencies on block ranges (`collective_flows`) and the symmetry quotient of a
collective alone (`lowering.quotient`): the same flows as the per-(transfer, block) construction they
replace, and the same times as simulating every transfer."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.registry import ALGORITHMS
from fabricsim.network.lowering.dataflow import collective_flows, schedule_flows
from fabricsim.network.flow import Flows, simulate_flows
from fabricsim.network.flow_model import FlowModel, endpoint_topology, time_collective_flow, with_injection
from fabricsim.network.lowering.quotient import orbit_index, quotient_flows
from fabricsim.network.lowering.symmetry import symmetry_period
from fabricsim.topology import parse_topology

TOL = 1e-9  # relative: the quotient equals the full simulation up to floating-point rounding


def old_collective_flows(schedule, size):
    """collective_flows before issue 20 (per-(transfer, block) entries): the oracle."""
    nodes, nb = schedule.topology_nodes(), schedule.nblocks
    srcs, dsts, sizes, e_t, e_src, e_dst, e_blk, e_step = [], [], [], [], [], [], [], []
    tid = 0
    for i, st in schedule.expanded():
        st = st.explicit()
        cnt = st.blocks_per_transfer
        srcs.append(nodes[st.src])
        dsts.append(nodes[st.dst])
        sizes.append(schedule.transfer_fraction(st) * size)
        e_t.append(tid + np.repeat(np.arange(st.n_transfers), cnt))
        e_src.append(np.repeat(st.src, cnt))
        e_dst.append(np.repeat(st.dst, cnt))
        e_blk.append(st.blocks)
        e_step.append(np.full(len(st.blocks), i, dtype=np.int64))
        tid += st.n_transfers
    n = tid
    cat = (lambda xs, dt=np.int64: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))  # noqa: E731
    t_e, src_e, dst_e, blk_e, step_e = cat(e_t), cat(e_src), cat(e_dst), cat(e_blk), cat(e_step)
    n_steps = int(step_e.max()) + 2 if len(step_e) else 1
    w_comp = (dst_e * nb + blk_e) * n_steps + step_e
    order = np.argsort(w_comp, kind="stable")
    w_sorted, w_tid = w_comp[order], t_e[order]
    r_key = (src_e * nb + blk_e) * n_steps
    lo = np.searchsorted(w_sorted, r_key, side="left")
    cnt = np.searchsorted(w_sorted, r_key + step_e, side="left") - lo
    idx = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(int(cnt.sum()))
    dep = np.repeat(t_e, cnt) * max(n, 1) + w_tid[idx]
    all_src, all_dst = cat(srcs), cat(dsts)
    chan = np.lexsort((np.arange(n), all_dst, all_src))
    same = (all_src[chan[1:]] == all_src[chan[:-1]]) & (all_dst[chan[1:]] == all_dst[chan[:-1]])
    pairs = np.unique(np.concatenate([dep, chan[1:][same] * max(n, 1) + chan[:-1][same]]))
    dep_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(pairs // max(n, 1), minlength=n), out=dep_ptr[1:])
    return Flows(cat(srcs), cat(dsts), cat(sizes, float), dep_ptr=dep_ptr, dep_idx=pairs % max(n, 1))


def _schedules(specs, options=()):
    """(label, topology, schedule) for every registry algorithm and collective that builds."""
    for spec in specs:
        topo = parse_topology(spec, "50GB/s", "100ns")
        for name, alg in ALGORITHMS.items():
            for coll in alg.collectives:
                for opts in [{}] + [o for a, o in options if a == name]:
                    try:
                        s = build_schedule(topo, coll, name, **opts)
                    except Exception:  # not on this topology or group size
                        continue
                    yield f"{spec} {name} {coll} {opts}", topo, s


OPTIONS = (("ring", {"bidirectional": True}), ("ring", {"chunks": 3}), ("swing", {"ports": "single"}),
           ("swing", {"mode": "latency"}), ("torus_recursive_doubling", {"mirrored": True}),
           ("double_binary_tree", {"chunks": 2}), ("hierarchical", {"inner": "direct"}), ("nccl_ring", {"channels": 2}))


@pytest.mark.parametrize("spec", ["ring:7", "ring:8", "ring:12", "torus:4x4", "torus:3x5", "torus:2x4", "torus:2x2x3",
                                  "switch:8,reduce", "fat-tree:16,leaf=4"])
def test_collective_flows_equal_the_per_block_construction(spec):
    """Same flows, same dependency CSR (order included), for every algorithm on odd, even and
    non-power-of-two rank counts, 1-D, 2-D and 3-D tori and switched networks."""
    n = 0
    for label, _, s in _schedules([spec], OPTIONS):
        a, b = old_collective_flows(s, 1e6), collective_flows(s, 1e6)
        for f in ("src", "dst", "size", "start", "cap", "priority", "dep_ptr", "dep_idx"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), (label, f)
        n += 1
    assert n >= 20


def test_range_form_deps_stay_small():
    """Swing on 16x16 is in range form: its runs, not its (transfer, block) pairs, are joined."""
    topo = parse_topology("torus:16x16")
    s = build_schedule(topo, "all-reduce", "swing")
    pairs = sum(int(st.blocks_per_transfer.sum()) for st in s.steps)
    f = collective_flows(s, 1.0)
    assert pairs > 10 * len(f)  # many blocks per transfer, yet
    assert np.array_equal(f.dep_idx, old_collective_flows(s, 1.0).dep_idx)


def _full_and_quotient(topo, s):
    q = quotient_flows(topo, s)
    if q is None:
        return None
    full = simulate_flows(topo, collective_flows(s, 1e6))
    part = simulate_flows(q.topo, replace(q.flows, size=q.flows.size * 1e6))
    idx = orbit_index(topo, s, q.period)
    return full, part, idx, q


SYMMETRIC = ["ring:8", "ring:9", "ring:12", "ring:16", "torus:4x4", "torus:3x5", "torus:4x6", "torus:2x2x4", "torus:8x8"]


@pytest.mark.parametrize("spec", SYMMETRIC)
def test_quotient_equals_every_transfer(spec):
    """Every accepted algorithm: the collective's time and every transfer's start and finish
    (that of its orbit's flow) within 1e-9 relative of simulating all transfers."""
    accepted = []
    for label, topo, s in _schedules([spec]):
        got = _full_and_quotient(topo, s)
        if got is None:
            continue
        full, part, idx, q = got
        span = full.makespan
        assert abs(part.makespan - span) <= TOL * span, label
        assert np.max(np.abs(part.finish[idx] - full.finish)) <= TOL * span, label
        assert np.max(np.abs(part.start[idx] - full.start)) <= TOL * span, label
        assert len(q.flows) * q.orbit == len(idx)
        accepted.append(label.split()[1])
    # the symmetric algorithms are quotiented, on odd sizes too (bucket's two directions share the
    # one link pair of a size-2 dimension: a channel used twice in a step is not quotiented)
    want = {"ring", "direct", "hierarchical", "circulant_rings", "nccl_ring"} | ({"bucket"} if "x2" not in spec else set())
    assert want <= set(accepted), accepted


def test_quotient_groups():
    """The group found: every translation for rings and direct; even ones for Swing (its peers
    depend on the coordinate's parity); a row shift for a rank-order ring on a torus (the wrap
    from a row's end to the next row is not a torus translation); none for rooted and XOR-paired
    schedules on sizes that break them, trees and switches."""
    t8, r9 = parse_topology("torus:8x8"), parse_topology("ring:9")
    assert symmetry_period(t8, build_schedule(t8, "all-reduce", "direct")) == (1, 1)
    assert symmetry_period(t8, build_schedule(t8, "all-reduce", "swing")) == (2, 2)
    assert symmetry_period(t8, build_schedule(t8, "all-reduce", "ring")) == (8, 1)
    assert symmetry_period(t8, build_schedule(t8, "all-reduce", "hierarchical")) == (1, 1)
    assert symmetry_period(r9, build_schedule(r9, "all-reduce", "ring")) == (1,)
    for topo, coll, alg in [(t8, "broadcast", "ring"), (t8, "all-reduce", "double_binary_tree"),
                            (r9, "all-reduce", "swing"), (t8, "all-reduce", "nccl_tree")]:
        assert symmetry_period(topo, build_schedule(topo, coll, alg)) is None, (coll, alg)
    sw = parse_topology("switch:8")
    assert quotient_flows(sw, build_schedule(sw, "all-reduce", "ring")) is None
    part = build_schedule(t8, "all-reduce", "ring", group=list(range(32)))
    assert quotient_flows(t8, part) is None
    # flows merged with other traffic (traffic files, the training engine) are every transfer
    s = build_schedule(t8, "all-reduce", "ring")
    assert len(schedule_flows(t8, s, 1.0)) == s.n_transfers


def _full_model_times(model, topo, s, sizes, injection=None):
    """What FlowCollective did before the quotient: every transfer."""
    unit = schedule_flows(topo, s, 1.0, stream=model.streams)
    if injection is not None:
        unit = with_injection(topo, unit, np.full(len(unit), float(injection)))
        topo = endpoint_topology(topo, topo.n_npus, 1.0)
    return np.array([model.flows(topo, replace(unit, size=unit.size * x)).makespan for x in sizes])


@pytest.mark.parametrize("model", [FlowModel(), FlowModel(chunk=4096.0), FlowModel("store-and-forward")])
@pytest.mark.parametrize("injection", [None, 20e9])
def test_every_entry_point_keeps_its_answer(model, injection):
    """FlowModel.collective (what every entry point prices a collective alone with) uses the
    quotient where it holds, pipelined (with and without a fill chunk) and store-and-forward, with
    and without an endpoint injection limit: the times of simulating every transfer."""
    sizes = [1e3, 1e6, 1e8]
    for spec, alg in [("torus:4x4", "swing"), ("ring:9", "ring"), ("torus:3x4", "direct"), ("torus:4x4", "bucket")]:
        topo = parse_topology(spec, "50GB/s", "100ns")
        s = build_schedule(topo, "all-reduce", alg)
        got = model.collective(topo, s, injection)
        assert got.topo.name.startswith(f"{spec}/translations"), (spec, alg)
        np.testing.assert_allclose(got.times(sizes), _full_model_times(model, topo, s, sizes, injection), rtol=TOL)


@pytest.mark.parametrize("p", [1024, pytest.param(16384, marks=pytest.mark.slow)])
def test_large_ring_is_small(p):
    """A ring all-reduce on ring:p (2 M transfers at 1,024; 537 M at 16,384, under -m slow) is
    2(p - 1) orbit flows."""
    topo = parse_topology(f"ring:{p}", "50GB/s", "100ns")
    s = build_schedule(topo, "all-reduce", "ring")
    q = quotient_flows(topo, s)
    assert q.period == (1,) and q.orbit == p and len(q.flows) == 2 * (p - 1)
    assert q.topo.n_links == 2  # the + and the - link orbits
    small = parse_topology("ring:64", "50GB/s", "100ns")
    t = time_collective_flow(small, build_schedule(small, "all-reduce", "ring"), [1e8])[0]
    assert t > 2 * 63 / 64 * 1e8 / 50e9  # bandwidth term at least (one direction used)
