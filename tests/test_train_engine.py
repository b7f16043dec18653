"""Training engine: hand-computed answers for compute, data/tensor/pipeline parallelism and scheduling.

Every expected time is a closed form written here (roofline FLOPs / rate, ring all-reduce
2(p-1)(a + S/(pB)), the GPipe bubble), never read back from the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.vocab import CATEGORIES, COLLECTIVES
from fabricsim.engine.pricing import CommPricer
from fabricsim.engine.simulator import simulate
from fabricsim.errors import ConfigError
from fabricsim.system import NPU, Ideal, NpuDriven, Scheduling, System
from fabricsim.topology import parse_topology
from fabricsim.workload.astra_text import parse_astra_text
from fabricsim.workload.graph import COLLECTIVE, COMPUTE, P2P, GraphBuilder
from fabricsim.workload.legacy import text_to_graph
from fabricsim.workload.models import Layer, Model, get_model, megatron_mp_allreduce_bytes, transformer
from fabricsim.workload.parallelism import Strategy, build_training

PEAK, EFF = 1e15, 0.5  # FLOP/s; 0.5e15 FLOP/s achieved
SYS = System(NPU(PEAK, 1e18, EFF))  # memory so fast that every task is compute-bound


def ring_ar(p, size, bw, lat):
    return 2 * (p - 1) * (lat + size / (p * bw))


def run(graph, topo="switch:64", bw="100GB/s", lat="1us", system=SYS, model="congestion-aware"):
    t = parse_topology(topo, bw, lat)
    return simulate(graph, system, CommPricer(t, model))


def fc(name, fwd_flops, params=0, act=0, first=False):
    """A layer whose backward is input-grad = weight-grad = forward (0 input-grad if `first`)."""
    return Layer(name, "fc", params, fwd_flops, 0.0 if first else fwd_flops, fwd_flops, act, params)


# ---------------------------------------------------------------- pure compute


def test_two_layer_model_pure_compute():
    m = Model("two", (fc("l0", 2e12, first=True), fc("l1", 4e12)))
    res = run(build_training(m, Strategy(batch=1)), topo="ring:2")
    g = res.graph
    assert g.n_npus == 1 and np.all(g.kind == COMPUTE)
    rate = PEAK * EFF
    # fwd l0 + fwd l1 + wg l1 + ig l1 + wg l0 (layer 0 has no input gradient)
    expected = (2e12 + 4e12 + 4e12 + 4e12 + 2e12) / rate
    assert res.makespan == pytest.approx(expected, rel=1e-12)
    assert res.breakdown["compute"][0] == pytest.approx(expected, rel=1e-12)
    assert res.breakdown["idle"][0] == pytest.approx(0.0, abs=1e-15)
    # the order is forward 0..L-1, then per layer from the top: weight gradient, input gradient
    order = [g.name(t) for t in np.argsort(res.start, kind="stable")]
    assert order == ["F0 l0", "F0 l1", "B0 l1 wg", "B0 l1 ig", "B0 l0 wg"]


def test_roofline_memory_bound_task():
    # 1 GFLOP touching 30 GB on an NPU with 3 TB/s: memory-bound, 10 ms
    b = GraphBuilder(1)
    b.compute(0, "stream", flops=1e9, mem_bytes=30e9)
    b.compute(0, "matmul", flops=1e12, mem_bytes=1e6)
    res = run(b.build(), topo="ring:2", system=System(NPU(1e15, 3e12, 1.0)))
    assert res.end[0] == pytest.approx(30e9 / 3e12)
    assert res.end[1] - res.start[1] == pytest.approx(1e12 / 1e15)


def test_batch_scales_compute_linearly():
    m = Model("two", (fc("l0", 1e12, first=True), fc("l1", 1e12)))
    t1 = run(build_training(m, Strategy(batch=1)), topo="ring:2").makespan
    t8 = run(build_training(m, Strategy(batch=8)), topo="ring:2").makespan
    assert t8 == pytest.approx(8 * t1, rel=1e-12)


# ---------------------------------------------------------------- data parallel


def _dp_text(ig1_ns, wg0_ns, size):
    return parse_astra_text(f"DATA\n2\nl0 -1 1000 NONE 0 500 NONE 0 {wg0_ns} NONE 0 1\n"
                            f"l1 -1 1000 NONE 0 {ig1_ns} NONE 0 2000 ALLREDUCE {size} 1\n")


@pytest.mark.parametrize("ig1_ns,wg0_ns", [(100_000, 50_000), (1_000, 500)])
def test_dp_one_allreduce_hidden_or_exposed(ig1_ns, wg0_ns):
    """Backward: wg(l1) -> all-reduce(l1) issued -> ig(l1) -> wg(l0). The all-reduce hides behind
    ig(l1) + wg(l0) when it is shorter, else the rest is exposed."""
    p, size, bw, lat = 4, 4 * 2**20, 50e9, 500e-9  # all-reduce 128.8 us
    g = text_to_graph(_dp_text(ig1_ns, wg0_ns, size), p)
    res = run(g, topo=f"ring:{p}", bw=bw, lat=lat)
    compute = (1000 + 1000 + 2000 + ig1_ns + wg0_ns) * 1e-9
    t_ar = ring_ar(p, size, bw, lat)
    issue = (1000 + 1000 + 2000) * 1e-9
    expected = max(compute, issue + t_ar)
    assert res.makespan == pytest.approx(expected, rel=1e-12)
    exposed = expected - compute
    assert res.breakdown["DP"] == pytest.approx(np.full(p, exposed), abs=1e-15)
    assert res.breakdown["compute"] == pytest.approx(np.full(p, compute), rel=1e-12)
    if ig1_ns == 100_000:
        assert t_ar < (ig1_ns + wg0_ns) * 1e-9 and exposed == 0  # fully hidden
    else:
        assert exposed == pytest.approx(t_ar - (ig1_ns + wg0_ns) * 1e-9)  # exposed


@pytest.mark.parametrize("params", [10_000_000, 1_000_000_000])  # all-reduce hidden / exposed
def test_dp_zoo_model_one_allreduce(params):
    """DP(4) of a 2-layer model, layer 0 without parameters: one all-reduce of layer 1's fp16
    gradients after its weight gradient, hidden or not by the rest of the backward pass."""
    m = Model("two", (fc("l0", 4e12, params=0), fc("l1", 1e12, params=params)))
    g = build_training(m, Strategy(dp=4, batch=4))
    colls = np.flatnonzero(g.kind == COLLECTIVE)
    assert len(colls) == 1 and g.size[colls[0]] == params * 2
    assert g.groups[g.group[colls[0]]] == (0, 1, 2, 3)
    res = run(g, topo="ring:4", bw=25e9, lat=1e-6)
    rate = PEAK * EFF
    issue = (4e12 + 1e12 + 1e12) / rate  # fwd l0, fwd l1, wg l1 (batch 1 per replica)
    compute = (4e12 + 1e12 + 1e12 + 1e12 + 4e12) / rate  # ... + ig l1 + wg l0 (no ig for layer 0)
    t_ar = ring_ar(4, 2 * params, 25e9, 1e-6)
    assert res.makespan == pytest.approx(max(compute, issue + t_ar), rel=1e-12)
    assert res.breakdown["DP"][0] == pytest.approx(max(0.0, issue + t_ar - compute), abs=1e-15)
    # ZeRO-2: a reduce-scatter then an all-gather of the same bytes, one after the other
    gz = build_training(m, Strategy(dp=4, batch=4, zero=2))
    kinds = [COLLECTIVES[gz.coll[t]] for t in np.flatnonzero(gz.kind == COLLECTIVE)]
    assert kinds == ["reduce-scatter", "all-gather"]
    rz = run(gz, topo="ring:4", bw=25e9, lat=1e-6)
    half = 3 * (1e-6 + 2 * params / (4 * 25e9))  # ring RS = ring AG = (p-1)(a + S/(pB))
    assert rz.makespan == pytest.approx(max(compute, issue + 2 * half), rel=1e-12)


def test_dp_buckets_group_layers():
    layers = tuple(fc(f"l{i}", 1e12, params=1_000_000, first=i == 0) for i in range(6))
    m = Model("six", layers)
    per_layer = build_training(m, Strategy(dp=2, batch=2))
    assert np.count_nonzero(per_layer.kind == COLLECTIVE) == 6
    bucketed = build_training(m, Strategy(dp=2, batch=2, dp_bucket=4e6))  # 2 MB per layer -> 2 layers each
    sizes = bucketed.size[bucketed.kind == COLLECTIVE]
    assert sizes.tolist() == [4e6, 4e6, 4e6]


def test_second_iteration_forward_waits_for_its_allreduce():
    """ASTRA-sim's DP loop: layer 0's forward of iteration 2 waits for layer 0's all-reduce."""
    p, size, bw, lat = 4, 256 * 2**20, 50e9, 500e-9
    text = parse_astra_text(f"DATA\n1\nl0 -1 1000 NONE 0 0 NONE 0 1000 ALLREDUCE {size} 1\n")
    res = run(text_to_graph(text, p, iterations=2), topo=f"ring:{p}", bw=bw, lat=lat)
    t_ar = ring_ar(p, size, bw, lat)
    assert res.iteration_ends.tolist() == pytest.approx([2000e-9 + t_ar, 2 * (2000e-9 + t_ar)], rel=1e-12)


# ---------------------------------------------------------------- pipeline parallel


@pytest.mark.parametrize("pp,m,schedule", [(2, 1, "gpipe"), (2, 4, "gpipe"), (2, 8, "1f1b"), (4, 8, "gpipe"),
                                           (4, 8, "1f1b"), (4, 3, "1f1b")])
def test_pipeline_bubble_is_the_gpipe_formula(pp, m, schedule):
    """Identical stages, t_f and t_b per microbatch, free activations: the iteration takes
    (m + p - 1)(t_f + t_b), each stage idles (p - 1)(t_f + t_b)."""
    layers = tuple(Layer(f"l{i}", "fc", 0, 3e12, 0.0, 6e12, 0, 0) for i in range(pp))
    res = run(build_training(Model("pipe", layers), Strategy(pp=pp, batch=m, microbatches=m, schedule=schedule)),
              topo=f"ring:{pp}")
    t_f, t_b = 3e12 / (PEAK * EFF), 6e12 / (PEAK * EFF)
    assert res.makespan == pytest.approx((m + pp - 1) * (t_f + t_b), rel=1e-12)
    assert res.breakdown["idle"] == pytest.approx(np.full(pp, (pp - 1) * (t_f + t_b)), rel=1e-9)
    assert res.breakdown["compute"] == pytest.approx(np.full(pp, m * (t_f + t_b)), rel=1e-12)
    bubble = res.breakdown["idle"][0] / res.makespan
    assert bubble == pytest.approx((pp - 1) / (m + pp - 1), rel=1e-9)


def test_pipeline_activations_cost_their_transfer():
    """2 stages, 1 microbatch: the activation and its gradient cross the link once each."""
    act = 10_000_000  # elements, fp16
    layers = (Layer("l0", "fc", 0, 3e12, 0.0, 6e12, act, 0), Layer("l1", "fc", 0, 3e12, 0.0, 6e12, act, 0))
    g = build_training(Model("pipe", layers), Strategy(pp=2, batch=1))
    p2p = np.flatnonzero(g.kind == P2P)
    assert len(p2p) == 2 and np.all(g.size[p2p] == 2 * act)
    res = run(g, topo="ring:2", bw=100e9, lat=2e-6)
    t_f, t_b, t_x = 3e12 / (PEAK * EFF), 6e12 / (PEAK * EFF), 2e-6 + 2 * act / 100e9
    assert res.makespan == pytest.approx(2 * (t_f + t_b) + 2 * t_x, rel=1e-12)
    assert res.breakdown["PP"] == pytest.approx(np.full(2, 2 * t_x), rel=1e-9)


def test_1f1b_order_on_each_stage():
    layers = tuple(Layer(f"l{i}", "fc", 0, 1e12, 0.0, 2e12, 0, 0) for i in range(4))
    res = run(build_training(Model("pipe", layers), Strategy(pp=4, batch=6, microbatches=6, schedule="1f1b")),
              topo="ring:4")
    g = res.graph
    for s in range(4):
        tasks = np.flatnonzero((g.kind == COMPUTE) & (g.npu == s))
        names = [g.name(t).split()[0] for t in tasks[np.argsort(res.start[tasks])]]
        warm = 4 - s - 1
        expected = [f"F{i}" for i in range(warm)]
        for i in range(6 - warm):
            expected += [f"F{warm + i}", f"B{i}"]
        expected += [f"B{i}" for i in range(6 - warm, 6)]
        assert names == expected


# ---------------------------------------------------------------- tensor (model) parallel


def test_megatron_traffic_per_block_is_the_closed_form():
    L, h, heads, seq, vocab, mp, mb = 4, 1024, 16, 512, 1000, 4, 2
    m = transformer("tiny", L, h, heads, seq, vocab)
    g = build_training(m, Strategy(mp=mp, batch=mb))
    coll = np.flatnonzero((g.kind == COLLECTIVE) & (g.category == 0))  # MP
    names = [g.name(t) for t in coll]
    for i in range(L):
        per_block = [t for t, nm in zip(coll, names) if f"block{i}." in nm]
        assert len(per_block) == 4  # 2 forward + 2 backward all-reduces
        assert all(g.size[t] == mb * seq * h * 2 for t in per_block)  # batch * seq * hidden fp16 elements
        assert all(g.groups[g.group[t]] == tuple(range(mp)) for t in per_block)
    fwd, bwd, total = megatron_mp_allreduce_bytes(m, mb, mp)
    block_bytes = sum(g.size[t] for t, nm in zip(coll, names) if "block" in nm)
    assert block_bytes == total == L * 4 * mb * seq * h * 2
    # the vocabulary-parallel embedding (forward) and head (backward) add one all-reduce each
    assert len(coll) == 4 * L + 2


def test_megatron_mp_exposed_time():
    """MP(4) on a switch, one microbatch, no asynchronous TP communication: every MP all-reduce
    is on the critical path."""
    L, h, seq, mp = 2, 2048, 1024, 4
    m = transformer("tiny", L, h, 16, seq, 1000)
    g = build_training(m, Strategy(mp=mp, batch=1, tp_overlap=False))
    res = run(g, topo=f"switch:{mp}", bw=100e9, lat=1e-6)
    size = seq * h * 2
    t_ar = 2 * (mp - 1) * (2e-6 + size / (mp * 100e9))  # ring on a switch: 2 hops per step
    n_ar = 4 * L + 2
    compute = float(res.breakdown["compute"][0])
    assert res.makespan == pytest.approx(compute + n_ar * t_ar, rel=1e-9)
    assert res.breakdown["MP"] == pytest.approx(np.full(mp, n_ar * t_ar), rel=1e-9)
    # FLOPs are split by mp: the MP group together computes the unsplit model's FLOPs (the
    # embedding lookups add their memory time, under 1 ns with this NPU's memory)
    assert res.breakdown["compute"].sum() == pytest.approx(
        (m.fwd_flops + m.bwd_flops - m.layers[0].bwd_flops) / (PEAK * EFF), rel=1e-6)


def test_placement_megatron_order_by_default_and_any_order_given():
    st = Strategy(mp=2, pp=2, dp=3, batch=6)  # Megatron-Core's tp-cp-ep-dp-pp
    R = st.ranks()
    assert R[:, 0, 0].tolist() == [0, 1]  # MP group: consecutive
    assert R[0, 0, :].tolist() == [0, 2, 4]  # DP: stride mp
    assert R[0, :, 0].tolist() == [0, 6]  # PP: stride mp*dp
    old = Strategy(mp=2, pp=2, dp=3, batch=6, placement=("mp", "pp", "dp"))  # FRED's: PP before DP
    assert old.ranks()[0, :, 0].tolist() == [0, 2] and old.ranks()[0, 0, :].tolist() == [0, 4, 8]
    st2 = Strategy(mp=2, pp=2, dp=3, batch=6, placement=("dp", "mp", "pp"))
    assert st2.ranks()[0, 0, :].tolist() == [0, 1, 2]


def test_3d_parallel_graph_groups_and_counts():
    m = transformer("t", 8, 512, 8, 128, 1000)
    st = Strategy(mp=2, pp=2, dp=2, batch=8, microbatches=2)
    g = build_training(m, st)
    assert g.n_npus == 8
    dp = np.flatnonzero((g.kind == COLLECTIVE) & (g.category == CATEGORIES.index("DP")))
    assert {g.groups[g.group[t]] for t in dp} == {(0, 2), (1, 3), (4, 6), (5, 7)}  # Megatron's order: dp after mp
    # every layer's gradients all-reduced once per iteration: per DP group, the layers of its stage
    assert len(dp) == sum(1 for layer in m.layers if layer.params) * st.mp
    pp = np.flatnonzero(g.kind == P2P)
    assert len(pp) == 2 * st.microbatches * st.mp * st.dp  # activation + gradient per microbatch per pair


# ---------------------------------------------------------------- scheduling


def _two_collectives(policy, chunks=1, priorities=None):
    """A compute task issues a big DP all-reduce at t=0... then an MP all-reduce at t=1 ms."""
    b = GraphBuilder(4)
    grp = (0, 1, 2, 3)
    b.collective("all-reduce", 400e6, grp, "DP", "dp")
    c = [b.compute(p, "c", duration=1e-3) for p in grp]
    b.collective("all-reduce", 40e6, grp, "MP", "mp", deps=c)
    sch = Scheduling(policy=policy, chunks=chunks, priorities=priorities or ("MP", "PP", "DP", "IO", "other"))
    return run(b.build(), topo="ring:4", bw=50e9, lat=0.0, system=System(NPU(), Ideal(), sch))


def test_priority_preempts_at_chunk_boundaries():
    t_dp, t_mp = ring_ar(4, 400e6, 50e9, 0), ring_ar(4, 40e6, 50e9, 0)
    # one chunk: the MP all-reduce waits for the whole DP one
    r1 = _two_collectives("LIFO", chunks=1)
    assert r1.end[5] == pytest.approx(t_dp + t_mp)
    # 8 chunks of t_dp/8: MP goes at the first chunk boundary after 1 ms
    r8 = _two_collectives("LIFO", chunks=8)
    k = np.ceil(1e-3 / (t_dp / 8))
    assert r8.end[5] == pytest.approx(k * t_dp / 8 + t_mp)
    assert r8.end[0] == pytest.approx(t_dp + t_mp)
    # DP first if priorities say so
    r_dp = _two_collectives("LIFO", chunks=8, priorities=("DP", "MP"))
    assert r_dp.end[5] == pytest.approx(t_dp + t_mp)


@pytest.mark.parametrize("chunks,in_flight", [(1, 1), (4, 1), (8, 2)])
def test_chunks_pipeline_through_the_dimensions(chunks, in_flight):
    """A hierarchical all-reduce on a 4x4 two-level switch network has three phases: ring
    reduce-scatter in dimension 0, reduce-scatter + all-gather in dimension 1, all-gather in
    dimension 0. c chunks, k in flight per phase: sum of a wave's phases + (c/k - 1) x the slowest."""
    S, a0, a1, B0, B1 = 64e6, 100e-9, 1e-6, 100e9, 25e9
    b = GraphBuilder(16)
    b.collective("all-reduce", S, tuple(range(16)), "DP", "ar")
    t = parse_topology("stack:Switch4xSwitch4", [B0, B1], [a0, a1])
    sysm = System(NPU(), Ideal(), Scheduling(chunks=chunks, chunks_in_flight=in_flight))
    res = simulate(b.build(), sysm, CommPricer(t, algorithms={"all-reduce": "hierarchical"}))
    w = S * in_flight / chunks  # bytes per wave
    # a ring step through a switch: 2 hops; dimension 0 moves w/4 per step, dimension 1 w/16
    p0 = 3 * (2 * a0 + w / 4 / B0)
    p1 = 2 * 3 * (2 * a1 + w / 16 / B1)
    waves = chunks // in_flight
    assert res.makespan == pytest.approx(2 * p0 + p1 + (waves - 1) * max(p0, p1), rel=1e-12)


def test_lifo_and_fifo_order():
    """Three equal all-reduces become ready at 0, 1 and 2 us while the first runs."""
    b = GraphBuilder(2)
    grp = (0, 1)
    ids = [b.collective("all-reduce", 1e9, grp, "DP", "a")]
    for k in (1, 2):
        c = [b.compute(p, f"c{k}", duration=1e-6) for p in grp]
        ids.append(b.collective("all-reduce", 1e9, grp, "DP", f"x{k}", deps=c))
    g = b.build()
    t = ring_ar(2, 1e9, 50e9, 0)
    for policy, order in (("FIFO", [0, 1, 2]), ("LIFO", [0, 2, 1])):
        res = run(g, topo="ring:2", bw=50e9, lat=0.0,
                  system=System(NPU(), Ideal(), Scheduling(policy=policy)))
        ends = [res.end[ids[i]] for i in order]
        assert ends == pytest.approx([t, 2 * t, 3 * t])


def test_per_category_streams_overlap():
    b = GraphBuilder(2)
    b.collective("all-reduce", 1e9, (0, 1), "DP", "dp")
    b.collective("all-reduce", 1e9, (0, 1), "MP", "mp")
    t = ring_ar(2, 1e9, 50e9, 0)
    one = run(b.build(), topo="ring:2", bw=50e9, lat=0.0)
    per = run(b.build(), topo="ring:2", bw=50e9, lat=0.0,
              system=System(NPU(), Ideal(), Scheduling(comm_streams="per-category")))
    assert one.makespan == pytest.approx(2 * t)
    assert per.makespan == pytest.approx(t)


def test_endpoint_interference_stretches_compute():
    """A 10 ms compute task with a 4 ms collective on the same NPU that takes 25% of its cores:
    it progresses at 0.75 for 4 ms, then at full speed: ends at 4 + (10 - 3) = 11 ms."""
    b = GraphBuilder(2)
    b.compute(0, "c", duration=10e-3)
    b.collective("all-reduce", 4e-3 * 50e9, (0, 1), "DP", "ar")  # ring:2 AR: 2*(S/2)/B = S/B
    sysm = System(NPU(), NpuDriven(units=0.25, memory=0.1), Scheduling())
    res = run(b.build(), topo="ring:2", bw=50e9, lat=0.0, system=sysm)
    assert res.end[1] == pytest.approx(4e-3)
    assert res.end[0] == pytest.approx(11e-3)
    plain = run(b.build(), topo="ring:2", bw=50e9, lat=0.0)
    assert plain.end[0] == pytest.approx(10e-3)


def test_deterministic():
    m = transformer("t", 4, 256, 4, 64, 100)
    st = Strategy(mp=2, pp=2, dp=2, batch=8, microbatches=4)
    a = run(build_training(m, st), topo="torus:2x4")
    b = run(build_training(m, st), topo="torus:2x4")
    assert np.array_equal(a.start, b.start) and np.array_equal(a.end, b.end)
    assert all(np.array_equal(a.breakdown[k], b.breakdown[k]) for k in a.breakdown)


def test_breakdown_sums_to_makespan():
    m = transformer("t", 4, 256, 4, 64, 100)
    res = run(build_training(m, Strategy(mp=2, pp=2, dp=2, batch=8, microbatches=4)), topo="torus:2x4",
              bw="10GB/s")
    total = sum(res.breakdown.values())
    assert total == pytest.approx(np.full(8, res.makespan), rel=1e-9)


# ---------------------------------------------------------------- the flow-model engine


@pytest.mark.parametrize("params", [10_000_000, 1_000_000_000])
def test_flow_engine_dp_matches_the_closed_form(params):
    """Compute runs on private links, the lone ring all-reduce on the network: same closed form."""
    m = Model("two", (fc("l0", 4e12, params=0), fc("l1", 1e12, params=params)))
    res = run(build_training(m, Strategy(dp=4, batch=4)), topo="ring:4", bw=25e9, lat=1e-6, model="flow")
    rate = PEAK * EFF
    issue, compute = 6e12 / rate, 11e12 / rate
    assert res.makespan == pytest.approx(max(compute, issue + ring_ar(4, 2 * params, 25e9, 1e-6)), rel=1e-9)
    assert res.breakdown["compute"] == pytest.approx(np.full(4, compute), rel=1e-9)


@pytest.mark.parametrize("pp,m,schedule", [(2, 4, "gpipe"), (4, 8, "1f1b")])
def test_flow_engine_pipeline_bubble(pp, m, schedule):
    layers = tuple(Layer(f"l{i}", "fc", 0, 3e12, 0.0, 6e12, 0, 0) for i in range(pp))
    res = run(build_training(Model("pipe", layers), Strategy(pp=pp, batch=m, microbatches=m, schedule=schedule)),
              topo=f"ring:{pp}", model="flow")
    t_f, t_b = 3e12 / (PEAK * EFF), 6e12 / (PEAK * EFF)
    assert res.makespan == pytest.approx((m + pp - 1) * (t_f + t_b), rel=1e-9)


def _mp_over_dp(priorities):
    """A DP all-reduce starts at 0, an MP all-reduce on the same ring at 1 ms."""
    b = GraphBuilder(4)
    grp = (0, 1, 2, 3)
    b.collective("all-reduce", 400e6, grp, "DP", "dp")
    c = [b.compute(p, "c", duration=1e-3) for p in grp]
    b.collective("all-reduce", 40e6, grp, "MP", "mp", deps=c)
    sysm = System(NPU(), Ideal(), Scheduling(priorities=priorities))
    return run(b.build(), topo="ring:4,uni", bw=50e9, lat=0.0, system=sysm, model="flow")


def test_flow_engine_priority_preempts_on_shared_links():
    t_dp, t_mp = ring_ar(4, 400e6, 50e9, 0), ring_ar(4, 40e6, 50e9, 0)
    hi = _mp_over_dp(("MP", "DP"))  # MP preempts DP on every link of the ring
    assert hi.end[5] == pytest.approx(1e-3 + t_mp, rel=1e-9)
    assert hi.end[0] == pytest.approx(t_dp + t_mp, rel=1e-9)
    same = _mp_over_dp(("MP",))  # DP keeps rank 2 by default: check the opposite order too
    assert same.end[5] == pytest.approx(1e-3 + t_mp, rel=1e-9)
    lo = _mp_over_dp(("DP", "MP"))  # MP waits until DP leaves the links
    assert lo.end[0] == pytest.approx(t_dp, rel=1e-9)
    assert lo.end[5] == pytest.approx(t_dp + t_mp, rel=1e-9)


def test_flow_engine_equal_priority_shares_links():
    """Two all-reduces of the same category overlapping share every ring link half and half."""
    b = GraphBuilder(4)
    grp = (0, 1, 2, 3)
    b.collective("all-reduce", 400e6, grp, "DP", "a")
    c = [b.compute(p, "c", duration=1e-3) for p in grp]
    b.collective("all-reduce", 40e6, grp, "DP", "b", deps=c)
    res = run(b.build(), topo="ring:4,uni", bw=50e9, lat=0.0, model="flow")
    t_a, t_b = ring_ar(4, 400e6, 50e9, 0), ring_ar(4, 40e6, 50e9, 0)
    assert res.end[5] == pytest.approx(1e-3 + 2 * t_b, rel=1e-9)  # half rate while both run
    assert res.end[0] == pytest.approx(t_a + t_b, rel=1e-9)  # the links never idle


@pytest.mark.parametrize("model", ["congestion-aware", "flow"])
def test_endpoint_interference_in_both_engines(model):
    """The same hand-computed case on both engines: a 10 ms fixed-duration kernel and a 4 ms
    collective holding 25% of the units: 4 ms at 0.75, then 7 ms at full speed = 11 ms."""
    b = GraphBuilder(2)
    b.compute(0, "c", duration=10e-3)
    b.collective("all-reduce", 4e-3 * 50e9, (0, 1), "DP", "ar")
    res = run(b.build(), topo="ring:2", bw=50e9, lat=0.0, model=model,
              system=System(NPU(), NpuDriven(units=0.25, memory=0.1), Scheduling()))
    assert res.end[1] == pytest.approx(4e-3, rel=1e-9)
    assert res.end[0] == pytest.approx(11e-3, rel=1e-9)


@pytest.mark.parametrize("model", ["congestion-aware", "flow"])
def test_memory_bound_kernel_slows_by_the_memory_share(model):
    """Roofline with the resources left: a kernel of F FLOPs and M bytes that is memory-bound
    (M/BW = 8 ms > F/peak = 2 ms) while a 4 ms collective holds 50% of the memory bandwidth and
    10% of the units: max(F/(0.9 peak), M/(0.5 BW)) = 16 ms per 8 ms of work, so 4 ms do 2 ms of
    work, the remaining 6 ms run at full speed: 10 ms."""
    npu = NPU(peak_flops=1e15, memory_bandwidth=1e12, efficiency=1.0)
    b = GraphBuilder(2)
    b.compute(0, "c", flops=2e12, mem_bytes=8e9)
    b.collective("all-reduce", 4e-3 * 50e9, (0, 1), "DP", "ar")
    res = run(b.build(), topo="ring:2", bw=50e9, lat=0.0, model=model,
              system=System(npu, NpuDriven(units=0.1, memory=0.5), Scheduling()))
    assert res.end[0] == pytest.approx(4e-3 + (8e-3 - 4e-3 * 8 / 16), rel=1e-9)


@pytest.mark.parametrize("model", ["congestion-aware", "flow"])
def test_offload_engine_rate_bounds_a_collective_in_both_engines(model):
    """An offload engine of R bytes/s per NPU on a ring:2 all-reduce of S (each NPU sends S/2
    twice, 2 x S/(2B) on the links): with R < B it lasts 2 x (S/2)/R."""
    from fabricsim.system import OffloadEngine

    S, B, R = 1e9, 50e9, 10e9
    b = GraphBuilder(2)
    b.collective("all-reduce", S, (0, 1), "DP", "ar")
    res = run(b.build(), topo="ring:2", bw=B, lat=0.0, model=model,
              system=System(NPU(), OffloadEngine(R), Scheduling()))
    assert res.makespan == pytest.approx(2 * (S / 2) / R, rel=1e-9)
    plain = run(b.build(), topo="ring:2", bw=B, lat=0.0, model=model)
    assert plain.makespan == pytest.approx(2 * (S / 2) / B, rel=1e-9)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("kwargs,field", [
    (dict(mp=0), "parallelism.mp"), (dict(batch=3, dp=2), "workload.batch"), (dict(schedule="zb"), "parallelism.schedule"),
    (dict(zero=4), "parallelism.zero"), (dict(placement=("mp", "dp")), "parallelism.placement"),
])
def test_strategy_errors_name_the_field(kwargs, field):
    with pytest.raises(ConfigError) as e:
        Strategy(**kwargs)
    assert str(e.value).startswith(field)


def test_strategy_must_fit_the_network_and_model():
    with pytest.raises(ConfigError, match="parallelism"):
        build_training(get_model("resnet50"), Strategy(dp=4, batch=4), n_npus=8)
    with pytest.raises(ConfigError, match="parallelism.mp"):
        build_training(get_model("resnet50"), Strategy(mp=2, batch=2))
    with pytest.raises(ConfigError, match="parallelism.pp"):
        build_training(Model("two", (fc("a", 1.0), fc("b", 1.0))), Strategy(pp=4, batch=1))


@pytest.mark.parametrize("model", ["congestion-aware", "flow", "flow-store-and-forward"])
def test_injection_is_charged_at_the_source_not_at_forwarding_npus(model):
    """Two sends at once on a one-way ring 0 -> 1 -> 2 -> 0 under an offload engine of R bytes/s:
    0 -> 2 crosses NPU 1's router, 1 -> 2 leaves NPU 1's endpoint. Each endpoint injects one send
    (link 1 -> 2 carries 2R < B), so both take S/R: NPU 1 forwards 0 -> 2 without its endpoint.
    Store and forward runs the endpoint as a stage of its own, then each hop: S/R + hops x S/B."""
    from fabricsim.system import OffloadEngine

    S, B, R = 1e9, 50e9, 10e9
    b = GraphBuilder(3)
    b.p2p(0, 2, S, "PP", "far")
    b.p2p(1, 2, S, "PP", "near")
    res = run(b.build(), topo="ring:3,uni", bw=B, lat=0.0, model=model,
              system=System(NPU(), OffloadEngine(R), Scheduling()))
    sf = model == "flow-store-and-forward"
    assert res.end[0] == pytest.approx(S / R + sf * 2 * S / B, rel=1e-9)
    assert res.end[1] == pytest.approx(S / R + sf * S / B, rel=1e-9)


@pytest.mark.parametrize("model", ["congestion-aware", "flow", "flow-store-and-forward"])
def test_collective_under_injection_limit_takes_what_it_takes_alone(model):
    """Direct all-gather on a 3x3 torus under an offload engine of R: each rank injects its block
    S/9 to 8 peers, some two hops away through other ranks' routers: 8 S/9 / R when the links
    (B = 10 R) are not the limit, as priced alone; on every engine and model."""
    from fabricsim.system import OffloadEngine

    S, B, R = 9e8, 100e9, 10e9
    b = GraphBuilder(9)
    b.collective("all-gather", S, tuple(range(9)), "DP", "ag")
    t = parse_topology("torus:3x3", B, 0.0)
    pc = CommPricer(t, model, {"all-gather": "direct"})
    sysm = System(NPU(), OffloadEngine(R), Scheduling())
    res = simulate(b.build(), sysm, pc)
    alone = pc.for_system(sysm.endpoint, sysm.npu).collective("all-gather", tuple(range(9)), S)
    assert res.makespan == pytest.approx(alone, rel=1e-9)
    if model != "flow-store-and-forward":  # store-and-forward adds a serialization per hop
        assert res.makespan == pytest.approx(8 * S / 9 / R, rel=1e-9)


@pytest.mark.parametrize("model", ["congestion-aware", "flow", "flow-store-and-forward"])
def test_switch_reduction_unit_caps_nvls_in_every_engine(model):
    """NVLS on one node of 4 GPUs (NVLink B, reduction unit U < B, no latency): the 4 inputs of
    one output share the unit, so the reduce runs at U. Streaming: S/U; store and forward (up the
    NVLink, through the unit, then the multicast down, one after another): S/B + S/U + S/B."""
    S, B, U = 1e9, 100e9, 20e9
    b = GraphBuilder(4)
    b.collective("all-reduce", S, (0, 1, 2, 3), "DP", "ar")
    t = parse_topology("dgx:nodes=1,gpus=4,nvlink=100GB/s,nvlink_eff=1,nvlink_lat=0ns,nvls,nvls_rate=20GB/s")
    res = simulate(b.build(), SYS, CommPricer(t, model, {"all-reduce": "nvls,proto=none"}))  # the network alone
    want = S / U + 2 * S / B if model == "flow-store-and-forward" else S / U
    assert res.makespan == pytest.approx(want, rel=1e-9)
