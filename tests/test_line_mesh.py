"""Line-mesh steps (`ir.mesh`, the lines of a grid): the hierarchical all-to-all's phases, blocks stated by rule.

The listed form is the definition written out here node by node; every native reader (transfer
arrays, entry positions, where a block moves, sampled verification, the flow quotient and its
symmetry check, per-node sums) gives what the listed form gives; at 1,024 ranks (16,384 under
-m slow) nothing lists the blocks and the time is the closed form of two line meshes one after the
other."""

from __future__ import annotations

import math
from dataclasses import fields, replace

import numpy as np
import pytest

from fabricsim.ir import mesh as mesh_form
from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.hierarchical_all_to_all import hierarchical_all_to_all
from fabricsim.collectives.verify import verify
from fabricsim.errors import ConfigError, ScheduleError
from fabricsim.network.analytical import AnalyticalCollective
from fabricsim.network.flow_model import FlowModel
from fabricsim.network.lowering.quotient import quotient_flows
from fabricsim.topology import parse_topology
from stated_steps import listed

DIMS = ((2, 3), (3, 2), (4, 4), (2, 3, 4), (3, 1, 5), (5, 3, 2), (2, 2, 2, 2), (7, 2))


@pytest.fixture
def never_listed(monkeypatch):
    """Fail if anything lists a line mesh's blocks."""
    def refuse(self):
        raise AssertionError(f"phase {self.dim} of {self.dims} was listed")
    monkeypatch.setattr(mesh_form.MeshStep, "explicit", refuse)


def definition(dims, k):
    """Phase k written out: for each destination coordinate t, each node m (ascending) not at t sends
    to its neighbour at t every block i*p + j it holds that belongs there: i = m from coordinate k on,
    j = m below k, j_k = t; i-major, then j, ascending."""
    p = math.prod(dims)
    coords = lambda x: [(x // math.prod(dims[:d])) % dims[d] for d in range(len(dims))]  # noqa: E731
    src, dst, blocks = [], [], []
    for t in range(dims[k]):
        for m in range(p):
            cm = coords(m)
            if cm[k] == t:
                continue
            src.append(m)
            dst.append(m + (t - cm[k]) * math.prod(dims[:k]))
            mine = []
            for i in range(p):
                ci = coords(i)
                if ci[k:] != cm[k:]:
                    continue
                for j in range(p):
                    cj = coords(j)
                    if cj[:k] == cm[:k] and cj[k] == t:
                        mine.append(i * p + j)
            blocks.append(mine)
    return np.array(src), np.array(dst), blocks


@pytest.mark.parametrize("dims", DIMS)
def test_listed_form_and_native_readers_are_the_definition(dims):
    p = math.prod(dims)
    s = hierarchical_all_to_all(p, dims)
    active = [k for k, d in enumerate(dims) if d > 1]
    assert len(s.steps) == len(active)
    for st, k in zip(s.steps, active):
        assert st.form == "mesh" and not st.full and st.stored_entries == st.n_transfers == p * (dims[k] - 1)
        src, dst, blocks = definition(dims, k)
        a = st.explicit()
        assert np.array_equal(a.src, src) and np.array_equal(a.dst, dst)
        assert np.array_equal(st.src, src) and np.array_equal(st.dst, dst)
        assert np.array_equal(a.blocks, np.concatenate(blocks))
        assert np.array_equal(a.ptr, np.concatenate([[0], np.cumsum([len(b) for b in blocks])]))
        assert np.array_equal(st.ptr, a.ptr) and np.array_equal(st.first_block, [b[0] for b in blocks])
        assert np.array_equal(st.blocks_per_transfer, a.blocks_per_transfer) and not st.reduce.any()
        assert np.array_equal(st.index_of(src, dst), np.arange(len(src)))
        # where each block moves: exactly the listed entries that carry it
        ids = np.arange(-3, p * p + 3)
        col, s_, d_, pos = st.moves_of(ids)
        ent = np.repeat(np.arange(len(src)), a.blocks_per_transfer)
        want = sorted(zip(a.blocks.tolist(), src[ent].tolist(), dst[ent].tolist(), range(len(a.blocks))))
        assert sorted(zip(ids[col].tolist(), s_.tolist(), d_.tolist(), pos.tolist())) == want


def test_a_dimension_of_the_whole_group_is_a_full_mesh():
    for dims in ((6,), (1, 6), (6, 1)):
        s = hierarchical_all_to_all(6, dims)
        assert len(s.steps) == 1 and s.steps[0].form == "mesh" and s.steps[0].full and s.steps[0].by_dst


@pytest.mark.parametrize("dims", DIMS)
def test_verify_on_data_full_and_sampled(dims):
    s = hierarchical_all_to_all(math.prod(dims), dims)
    assert verify(s).blocks_checked == s.nblocks
    blocks = np.arange(1, s.nblocks, 3)
    assert verify(s, blocks=blocks).blocks_checked == verify(listed(s), blocks=blocks).blocks_checked == len(blocks)


def test_sampled_verify_reads_the_rule_and_catches_wrong_phases(never_listed):
    s = build_schedule(parse_topology("torus:128x128"), "all-to-all", "hierarchical")
    assert verify(s, sample=64).blocks_checked == 64
    dims = (4, 8)
    good = hierarchical_all_to_all(32, dims)
    # the phases in the wrong order: phase 1 sends blocks its nodes do not hold yet
    with pytest.raises(ScheduleError, match="before it holds it"):
        verify(replace(good, steps=good.steps[::-1]), sample=40)
    # one phase only: blocks end on the wrong node
    with pytest.raises(ScheduleError, match="at the end node .* does not hold block"):
        verify(replace(good, steps=good.steps[:1]), sample=40)


def test_a_full_check_at_scale_is_refused_with_one_line():
    s = build_schedule(parse_topology("torus:128x128"), "all-to-all", "hierarchical")
    with pytest.raises(ConfigError, match=r"266,338,304 schedule entries \(phase 0 of a hierarchical all-to-all on 128x128"):
        verify(s)


@pytest.mark.parametrize("spec", ("torus:4x6", "torus:3x5", "torus:2x4x3", "torus:4x4"))
def test_flow_quotient_native_equals_listed(spec):
    topo = parse_topology(spec, "100GB/s", "500ns")
    s = build_schedule(topo, "all-to-all", "hierarchical")
    assert any(st.form == "mesh" and not st.full for st in s.steps)
    for kw in ({}, {"injection": 3e10}, {"mode": "store-and-forward"}):
        a, b = quotient_flows(topo, s, **kw), quotient_flows(topo, listed(s), **kw)
        assert a.period == b.period == (1,) * len(topo.dims) and a.orbit == b.orbit == topo.n_npus
        for f in fields(a.flows):
            x, y = getattr(a.flows, f.name), getattr(b.flows, f.name)
            assert (x is None and y is None) or np.array_equal(x, y), f.name
    assert np.array_equal(FlowModel().collective(topo, s).times([1e3, 1e7]),
                          FlowModel().collective(topo, listed(s)).times([1e3, 1e7]))


def test_only_a_translation_of_its_grid_is_a_symmetry():
    st = hierarchical_all_to_all(12, (3, 4)).steps[0]
    m = np.arange(12)
    shift = (m % 3 + 1) % 3 + 3 * ((m // 3 + 2) % 4)  # (+1, +2) on the 3x4 grid
    assert st.is_translation(shift)
    swap = m.copy()
    swap[[0, 1]] = [1, 0]  # maps lines onto lines, but not a translation
    assert not st.is_translation(swap) and not st.is_translation(m[:6])


def test_per_node_sums_equal_listed():
    s = hierarchical_all_to_all(24, (2, 3, 4))
    for f in ("bytes_sent", "bytes_received"):
        assert np.array_equal(getattr(s, f)(1e6), getattr(listed(s), f)(1e6))


@pytest.mark.parametrize("side", [32, pytest.param(128, marks=pytest.mark.slow)])  # 1,024 ranks; 16,384 under -m slow
def test_all_to_all_on_a_square_torus_is_2_side_minus_1_orbit_flows_at_the_closed_form(never_listed, side):
    """side x side ranks (32: 1,024; 128: 16,384), 64 MiB, 50 GB/s, 100 ns: each phase is a full
    mesh on every ring of side, the busiest link carrying sum(f for f in 1..side/2) messages
    (2080 on 128) of size / side bytes, the longest path side/2 hops; phase 2 starts when phase 1
    has delivered (every node alike): twice one phase. The analytical model gives the same; every
    node sends 2 x (side - 1) messages."""
    p, h = side * side, side // 2
    topo = parse_topology(f"torus:{side}x{side}", "50GB/s", "100ns")
    s = build_schedule(topo, "all-to-all", "hierarchical")
    size = 64 * 2.0 ** 20
    want = 2 * (h * (h + 1) // 2 * size / side / 50e9 + h * 100e-9)
    c = FlowModel().collective(topo, s)
    assert len(c.unit) == 2 * (side - 1)
    assert c.times([size])[0] == pytest.approx(want, rel=1e-6)
    assert AnalyticalCollective(topo, s, "congestion-aware").times([size])[0] == pytest.approx(want, rel=1e-12)
    assert s.bytes_sent(size)[0] == pytest.approx(2 * (side - 1) * size / side, rel=1e-12)
    assert s.stored_entries == 2 * p * (side - 1)


@pytest.mark.parametrize("spec", ("torus:4x6", "torus:3x5", "torus:2x4x3", "mesh:4x3", "torus:4x4", "mesh:3x2x4"))
def test_analytical_native_equals_listed(spec):
    """Bit for bit: times, link loads, phases; both models, with and without an injection limit."""
    topo = parse_topology(spec, "100GB/s", "500ns")
    sizes = np.array([1.0, 1e3, 1e6, 3.3e7])
    s = build_schedule(topo, "all-to-all", "hierarchical")
    assert any(st.form == "mesh" and not st.full for st in s.steps)
    for model in ("congestion-aware", "congestion-unaware"):
        for inj in (None, 3e10):
            a = AnalyticalCollective(topo, s, model, injection=inj)
            b = AnalyticalCollective(topo, listed(s), model, injection=inj)
            assert all(r._sent is not None for r in a.routed)  # the native route served every phase
            assert np.array_equal(a.times(sizes), b.times(sizes)), (model, inj)
            assert np.array_equal(a.link_frac, b.link_frac)
            assert np.array_equal(a.phase_times(1e6), b.phase_times(1e6))


def test_analytical_on_another_grid_routes_the_transfers():
    """Phases on a grid that is not the network's (dims given): the transfers routed one by one."""
    topo = parse_topology("torus:4x6", "100GB/s", "500ns")
    s = build_schedule(topo, "all-to-all", "hierarchical", dims=(6, 4))
    a = AnalyticalCollective(topo, s)
    assert all(r._sent is None for r in a.routed)
    assert np.array_equal(a.times([1e6]), AnalyticalCollective(topo, listed(s)).times([1e6]))


def test_analytical_at_65536_ranks_is_the_closed_form(never_listed):
    """256x256, 400 Gb/s, 100 ns: each phase the busiest link's sum(f for f in 1..128) = 8256
    messages of size / 256 bytes plus 128 hops; phases in lock-step: twice that."""
    topo = parse_topology("torus:256x256", "400Gbps", "100ns")
    s = build_schedule(topo, "all-to-all", "hierarchical")
    size = 2.0 ** 30
    want = 2 * (8256 * size / 256 / 50e9 + 128 * 100e-9)
    assert AnalyticalCollective(topo, s, "congestion-aware").times([size])[0] == pytest.approx(want, rel=1e-12)
    assert verify(s, sample=16).blocks_checked == 16


def test_node_and_id_bounds_are_what_the_listed_form_names():
    """The sampled check's range checks read these bounds; they are the listed form's own."""
    from fabricsim.ir import FullMeshStep

    steps = [st for dims in DIMS for st in hierarchical_all_to_all(math.prod(dims), dims).steps]
    steps += [FullMeshStep(n, rule, False) for n in (2, 5) for rule in ("dst", "src", "pair")]
    for st in steps:
        a = st.explicit()
        assert st.id_bound == a.blocks.max() + 1
        assert st.node_bound == max(a.src.max(), a.dst.max()) + 1
