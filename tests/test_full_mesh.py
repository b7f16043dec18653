"""Full-mesh steps (`ir.mesh`, one line over every node): the direct algorithms' p(p-1) transfers stated, not listed.

Every native reader (analytical routing, sampled verification, the flow quotient, per-node byte
sums) gives exactly what the listed form gives; the listed form is the direct builders' old one;
at 65,536 ranks the analytical model and the sampled check never list the mesh, and the time is
the closed form of an all-to-all on a torus."""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np
import pytest

from fabricsim.ir import mesh as mesh_form
from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.memory import engine_memory_traffic, npu_memory_traffic
from fabricsim.ir import Schedule, make_step
from fabricsim.collectives.verify import verify
from fabricsim.errors import ConfigError, ScheduleError
from fabricsim.limits import raised_limits
from fabricsim.network.analytical import AnalyticalCollective
from fabricsim.network.lowering import quotient as flow_quotient
from fabricsim.network.lowering.dataflow import block_deps
from fabricsim.network.flow import simulate_flows
from fabricsim.network.flow_model import FlowModel
from fabricsim.network.lowering.quotient import quotient_flows
from fabricsim.topology import parse_topology
from stated_steps import listed

COLLS = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")
SPECS = ("ring:7", "ring:8", "ring:2", "torus:4x6", "torus:3x5", "torus:2x4x3", "mesh:4x3", "mesh:5")


@pytest.fixture
def never_listed(monkeypatch):
    """Fail if anything lists a full mesh."""
    def refuse(self):
        raise AssertionError(f"a full mesh of {self.n} was listed")
    monkeypatch.setattr(mesh_form.MeshStep, "explicit", refuse)


def test_listed_form_is_the_direct_builders_old_one():
    p = 6
    i = np.repeat(np.arange(p), p - 1)
    k = np.tile(np.arange(p - 1), p)
    j = k + (k >= i)
    old = {"reduce-scatter": [make_step(i, j, j, True)], "all-gather": [make_step(j, i, j, False)],
           "all-to-all": [make_step(i, j, i * p + j, False)]}
    old["all-reduce"] = old["reduce-scatter"] + old["all-gather"]
    for coll, steps in old.items():
        s = build_schedule(parse_topology(f"ring:{p}"), coll, "direct")
        assert all(st.form == "mesh" and st.full and st.stored_entries == 1 for st in s.steps)
        for mesh, b in zip(s.steps, steps):
            a = mesh.explicit()
            for name in ("src", "dst", "reduce", "ptr", "blocks"):
                assert np.array_equal(getattr(a, name), getattr(b, name)), (coll, name)
            assert np.array_equal(mesh.index_of(a.src, a.dst), np.arange(a.n_transfers))
            assert np.array_equal(mesh.blocks_of(a.src, a.dst), a.blocks)


@pytest.mark.parametrize("spec", SPECS)
def test_analytical_native_equals_listed(spec):
    """Bit for bit: times, link loads, phases; both models, with and without an injection limit."""
    topo = parse_topology(spec, "100GB/s", "500ns")
    sizes = np.array([1.0, 1e3, 1e6, 3.3e7])
    for coll in COLLS:
        s = build_schedule(topo, coll, "direct")
        for model in ("congestion-aware", "congestion-unaware"):
            for inj in (None, 3e10):
                a = AnalyticalCollective(topo, s, model, injection=inj)
                b = AnalyticalCollective(topo, listed(s), model, injection=inj)
                assert a.routed[0]._sent is not None  # the native route served it
                assert np.array_equal(a.times(sizes), b.times(sizes)), (coll, model, inj)
                assert np.array_equal(a.link_frac, b.link_frac)
                assert np.array_equal(a.phase_times(1e6), b.phase_times(1e6))


def test_analytical_elsewhere_lists_the_mesh_within_the_limit():
    """A group that is not every NPU, or a network without straight paths: the listed transfers,
    same answer; beyond the blocks limit one line naming it."""
    fat = parse_topology("fat-tree:16,leaf=4,spines=2", "100GB/s", "500ns")
    s = build_schedule(fat, "all-to-all", "direct")
    a = AnalyticalCollective(fat, s).times([1e6])
    assert a[0] == AnalyticalCollective(fat, listed(s)).times([1e6])[0]
    t = parse_topology("torus:8x8", "100GB/s", "500ns")
    part = build_schedule(t, "all-to-all", "direct", group=list(range(40)))
    assert AnalyticalCollective(t, part).times([1e6])[0] == AnalyticalCollective(t, listed(part)).times([1e6])[0]
    with raised_limits(blocks=1000):
        part = build_schedule(t, "all-to-all", "direct", group=list(range(40)))
        with pytest.raises(ConfigError, match=r"group size: invalid value 40; it needs 1,560 schedule entries "
                                              r"\(a full mesh of 40 ranks.*--limit blocks=N"):
            AnalyticalCollective(t, part)


def test_torus_closed_form_at_65536_ranks_without_listing(never_listed):
    """All-to-all on a 256x256 torus (400 Gb/s, 100 ns): the busiest link carries, per ring of 256,
    sum(f for f in 1..128) messages from each of the 256 rings crossing it, size/p bytes each; the
    longest path is 128 + 128 hops."""
    topo = parse_topology("torus:256x256", "400Gbps", "100ns")
    s = build_schedule(topo, "all-to-all", "direct")
    size = 2.0 ** 30
    per_link = sum(range(1, 129)) * 256 * size / 65536
    want = 256 * 100e-9 + per_link / 50e9
    got = AnalyticalCollective(topo, s, "congestion-aware").times([size])[0]
    assert got == pytest.approx(want, rel=1e-12)
    # unaware: the longest path at the slowest link, one message
    got = AnalyticalCollective(topo, s, "congestion-unaware").times([size])[0]
    assert got == pytest.approx(256 * 100e-9 + size / 65536 / 50e9, rel=1e-12)
    rep = verify(s, sample=16)
    assert rep.blocks_checked == 16 and rep.nblocks == 65536 ** 2
    assert s.bytes_sent(size)[0] == pytest.approx(65535 * size / 65536, rel=1e-12)


def test_mesh_closed_form():
    """On a line of 8 the middle link carries 4 x 4 messages each way; on a 4x3 mesh the busiest
    dimension-0 link carries 2 x 2 x 3 messages (3 rows), dimension 1's 2 x 1 x 4."""
    line = parse_topology("mesh:8", "100GB/s", "0ns")
    s = build_schedule(line, "all-to-all", "direct")
    assert AnalyticalCollective(line, s).times([8e6])[0] == pytest.approx(16 * 1e6 / 100e9, rel=1e-12)
    m = parse_topology("mesh:4x3", "100GB/s", "0ns")
    s = build_schedule(m, "reduce-scatter", "direct")
    assert AnalyticalCollective(m, s).times([12e6])[0] == pytest.approx(max(12, 8) * 1e6 / 100e9, rel=1e-12)


def test_sampled_verify_reads_the_mesh_and_catches_a_wrong_rule(never_listed):
    topo = parse_topology("torus:64x64")
    for coll in COLLS:
        rep = verify(build_schedule(topo, coll, "direct"), sample=32)
        assert rep.blocks_checked == 32
    p = 4096
    bad = Schedule("all-gather", "wrong", p, p, (mesh_form.FullMeshStep(p, "dst", False),), owner=np.arange(p))
    with pytest.raises(ScheduleError, match="before it holds it"):
        verify(bad, sample=8)
    bad = Schedule("reduce-scatter", "wrong", p, p, (mesh_form.FullMeshStep(p, "src", True),), owner=np.arange(p))
    with pytest.raises(ScheduleError, match="at the end node"):
        verify(bad, sample=8)


def test_sampled_verify_agrees_with_the_listed_form():
    topo = parse_topology("torus:4x6")
    for coll in COLLS:
        s = build_schedule(topo, coll, "direct")
        blocks = np.arange(0, s.nblocks, 3)
        assert verify(s, blocks=blocks).blocks_checked == verify(listed(s), blocks=blocks).blocks_checked
        assert verify(s).blocks_checked == s.nblocks  # full check: the listed form, step by step


@pytest.mark.parametrize("spec", ("ring:7", "torus:4x6", "torus:3x5", "torus:2x4x3", "ring:2"))
def test_flow_quotient_native_equals_listed(spec):
    topo = parse_topology(spec, "100GB/s", "500ns")
    for coll in COLLS:
        s = build_schedule(topo, coll, "direct")
        for kw in ({}, {"injection": 3e10}, {"mode": "store-and-forward"}):
            a, b = quotient_flows(topo, s, **kw), quotient_flows(topo, listed(s), **kw)
            assert a.period == b.period == (1,) * len(topo.dims) and a.orbit == b.orbit == topo.n_npus
            for f in fields(a.flows):
                x, y = getattr(a.flows, f.name), getattr(b.flows, f.name)
                assert (x is None and y is None) or np.array_equal(x, y), (coll, f.name)
        assert np.array_equal(FlowModel().collective(topo, s).times([1e3, 1e7]),
                              FlowModel().collective(topo, listed(s)).times([1e3, 1e7]))


def test_flow_all_to_all_on_64x64_is_p_minus_1_orbit_flows(never_listed):
    """4096 ranks: 16.8 M transfers, 4095 orbit flows; 64 MiB takes the busiest link's bytes over
    its bandwidth plus the longest path (the flow model's rates are the analytical bottleneck here)."""
    topo = parse_topology("torus:64x64", "400Gbps", "100ns")
    s = build_schedule(topo, "all-to-all", "direct")
    c = FlowModel().collective(topo, s)
    assert len(c.unit) == 4095
    size = 64 * 2.0 ** 20
    want = sum(range(1, 33)) * 64 * size / 4096 / 50e9
    assert c.times([size])[0] == pytest.approx(want + 64 * 100e-9, rel=1e-6)


def test_per_node_sums_equal_listed():
    for spec in ("ring:7", "torus:3x5"):
        topo = parse_topology(spec)
        for coll in (*COLLS, "broadcast"):
            s = build_schedule(topo, coll, "direct")
            for f in (npu_memory_traffic, engine_memory_traffic):
                a, b = f(s), f(listed(s))
                for x, y in zip((a.read, a.write, a.sent, a.reduced), (b.read, b.write, b.sent, b.reduced)):
                    assert np.array_equal(x, y), (spec, coll)
            assert np.array_equal(s.bytes_sent(7e6), listed(s).bytes_sent(7e6))
            assert np.array_equal(s.bytes_received(3.3e5), listed(s).bytes_received(3.3e5))


@pytest.mark.parametrize("spec", ("ring:7", "torus:4x6", "torus:3x5", "torus:2x4x3"))
def test_joined_dependencies_keep_every_time(spec, monkeypatch):
    """A join flow between a direct all-reduce's reduce-scatter and its all-gather (forced here on
    small sizes): every orbit flow starts and finishes at the same float; every model and an
    injection limit give the same times as the pairs listed one by one."""
    topo = parse_topology(spec, "100GB/s", "500ns")
    s = build_schedule(topo, "all-reduce", "direct")
    plain = quotient_flows(topo, s)
    assert plain.joins == 0
    monkeypatch.setattr(flow_quotient, "JOIN_ABOVE", 0)
    joined = quotient_flows(topo, s)
    n, p = len(plain.flows), topo.n_npus
    assert joined.joins == 1 and len(joined.flows) == n + 1
    assert len(plain.flows.dep_idx) >= (p - 1) ** 2 > len(joined.flows.dep_idx)
    a = simulate_flows(plain.topo, replace(plain.flows, size=plain.flows.size * 1e6))
    b = simulate_flows(joined.topo, replace(joined.flows, size=joined.flows.size * 1e6))
    assert np.array_equal(a.start, b.start[:n]) and np.array_equal(a.finish, b.finish[:n])
    for model in (FlowModel(), FlowModel(chunk=4096.0), FlowModel("store-and-forward")):
        for inj in (None, 2e10):
            monkeypatch.setattr(flow_quotient, "JOIN_ABOVE", 0)
            x = model.collective(topo, s, inj).times([1e3, 1e8])
            monkeypatch.setattr(flow_quotient, "JOIN_ABOVE", 10**12)
            assert np.array_equal(x, model.collective(topo, s, inj).times([1e3, 1e8])), (model, inj)


def test_block_deps_joins_stand_for_the_same_pairs():
    """Expanding every join gives back exactly the (reader, writer) pairs."""
    rng = np.random.default_rng(3)
    n = 200
    reads = (np.arange(n), rng.integers(0, 3, n), rng.integers(1, 4, n), rng.integers(0, 5, n), None)
    reads = reads[:4] + (reads[3] + rng.integers(1, 4, n),)
    writes = (np.arange(n), rng.integers(0, 3, n), rng.integers(0, 3, n), rng.integers(0, 5, n), None)
    writes = writes[:4] + (writes[3] + rng.integers(1, 4, n),)
    r0, w0 = block_deps(reads, writes, 10)
    r1, w1, (jp, ji) = block_deps(reads, writes, 10, share_above=8)
    assert len(jp) > 2 and len(r1) + len(ji) < len(r0)
    j = w1 < 0
    k = -1 - w1[j]
    cnt = np.diff(jp)[k]
    er = np.concatenate([r1[~j], np.repeat(r1[j], cnt)])
    ew = np.concatenate([w1[~j], ji[np.concatenate([np.arange(jp[x], jp[x + 1]) for x in k])]])
    key = lambda r, w: np.unique(r * n + w)  # noqa: E731
    assert np.array_equal(key(er, ew), key(r0, w0))
    empty = tuple(x[:0] for x in reads)
    r, w, (jp, ji) = block_deps(empty, writes, 10, share_above=8)
    assert len(r) == len(w) == len(ji) == 0 and jp.tolist() == [0]


def test_flow_direct_all_reduce_on_64x64_joins_its_phases(never_listed):
    """4096 ranks: 2 x 4095 orbit flows and one join (16.8 M dependency pairs otherwise); the
    all-gather starts when the reduce-scatter ends, so the time is twice the all-to-all's."""
    topo = parse_topology("torus:64x64", "400Gbps", "100ns")
    c = FlowModel().collective(topo, build_schedule(topo, "all-reduce", "direct"))
    assert len(c.unit) == 2 * 4095 + 1
    size = 64 * 2.0 ** 20
    one = sum(range(1, 33)) * 64 * size / 4096 / 50e9 + 64 * 100e-9
    assert c.times([size])[0] == pytest.approx(2 * one, rel=1e-6)
