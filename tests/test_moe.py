"""Mixture-of-experts training graphs (`workload.moe`, expert parallelism in `workload.emitter`):
all-to-all sizes and counts, expert FLOPs per GPU, imbalance, ep = 1, expert gradients over the
expert-data-parallel group, folding, and the hostile values, each against a closed form written here.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.engine import CommPricer, simulate
from fabricsim.engine.fold import asymmetry
from fabricsim.errors import ConfigError
from fabricsim.system import NPU, Scheduling, System
from fabricsim.system.compute import Gemm
from fabricsim.topology import parse_topology
from fabricsim.vocab import CATEGORIES, COLLECTIVES, TaskKind
from fabricsim.workload.parallelism import Strategy, build_training, foldable
from fabricsim.workload.plan import plan_layers
from fabricsim.workload.shapes import transformer

L, H, HEADS, S, V, F = 4, 256, 8, 128, 1000, 512
E, K = 8, 2
M_SWIGLU = 3  # matrices of h x f per expert
LLAMA = dict(ffn=F, kv_heads=4, ffn_act="swiglu", norm="rmsnorm", bias=False, tied_embeddings=False, position="rope")


def moe(**kw):
    """The tiny MoE model of the brief (8 experts, top-2, every block MoE unless `moe_layers`)."""
    return transformer("moe", L, H, HEADS, S, V, **LLAMA, **{"experts": E, "top_k": K, **kw})


MOE = moe()
A2A = COLLECTIVES.index("all-to-all")
SYSTEM = System(NPU(1e14, 2e12, 0.5), scheduling=Scheduling())


def _a2a(g):
    return np.flatnonzero((g.kind == TaskKind.COLLECTIVE) & (g.coll == A2A))


def _expert_part(plan):
    """The routed experts' part of a MoE block's plan: the second MLP part."""
    return [p for p in plan.parts if p.name.endswith(".mlp")][1]


def test_all_to_all_bytes_per_layer_and_direction():
    st = Strategy(mp=2, dp=4, ep=4, batch=8, microbatches=2)
    g = build_training(MOE, st)
    mb = st.microbatch
    want = mb * S * K * H * 2  # tokens x top_k x hidden x fp16 bytes, each rank's (nccl-tests' size)
    sizes = g.size[_a2a(g)]
    assert len(sizes) and np.all(sizes == want)
    assert {len(g.members(t)) for t in _a2a(g).tolist()} == {st.ep}
    assert {CATEGORIES[c] for c in g.category[_a2a(g)]} == {"EP"}


@pytest.mark.parametrize("kw,moe_layers", [(dict(mp=1, pp=2, dp=4, ep=2, batch=16, microbatches=4), "all"),
                                           (dict(mp=2, pp=1, dp=2, ep=2, batch=8, microbatches=2), 2),
                                           (dict(mp=1, pp=2, dp=2, ep=2, batch=4, microbatches=2, recompute="full"), "all")])
def test_all_to_alls_per_iteration(kw, moe_layers):
    """4 per MoE block and microbatch (dispatch and combine, forward and backward), on every NPU;
    full recompute runs the forward's two again."""
    model = moe(moe_layers=moe_layers)
    st = Strategy(**kw)
    g = build_training(model, st)
    n_moe = len(model.shape.moe_layers)
    per = 6 if st.recompute == "full" else 4
    # every NPU takes part in per x MoE blocks of its stage x microbatches
    counts = np.zeros(g.n_npus, dtype=np.int64)
    for t in _a2a(g).tolist():
        counts[list(g.members(t))] += 1
    stages = g.meta["stage_layers"]
    for p in range(g.n_npus):
        lo, hi = stages[int(g.stage[p])]
        blocks = [i for i in range(L) if lo <= i + 1 < hi and model.shape.is_moe(i)]  # layer i + 1 is block i
        assert counts[p] == per * len(blocks) * st.microbatches
    assert counts.sum() == per * n_moe * st.microbatches * st.mp * st.dp  # each NPU, all its stages' blocks
    # per iteration: (mp x dp / ep) groups of ep per block, microbatch and direction
    assert len(_a2a(g)) == per * n_moe * st.microbatches * st.mp * st.dp // st.ep


@pytest.mark.parametrize("mp,ep", [(1, 1), (1, 4), (2, 2)])
def test_expert_flops_per_rank(mp, ep):
    st = Strategy(mp=mp, dp=4, ep=ep, batch=8, microbatches=1)
    tokens = st.microbatch * S
    f_e = F
    want = 2 * tokens * K * M_SWIGLU * H * f_e / mp  # 2 x tokens x top_k x m h f_e / etp
    plans = plan_layers(MOE, st)
    for plan in plans[1:-1]:
        part = _expert_part(plan)
        assert part.fwd_flops == want
        assert part.bwd_flops == 2 * want
        assert sum(k.flops for k in part.fwd_work if isinstance(k, Gemm)) == want
        gemm = part.fwd_work[0]
        assert (gemm.count, gemm.m) == (E // ep, tokens * K * ep // E)  # E / ep experts on their tokens
        # the block's parts add up to its active-parameter FLOPs share
        block = MOE.layers[plans.index(plan)]
        assert sum(p.fwd_flops for p in plan.parts) == pytest.approx(block.fwd_flops * st.microbatch / mp, rel=1e-12)


@pytest.mark.parametrize("imbalance,cf,q", [(1.5, 0.0, 1.5), (2.0, 1.25, 1.25), (1.25, 2.0, 1.25)])
def test_imbalance_scales_routed_experts(imbalance, cf, q):
    st = Strategy(dp=2, ep=2, batch=4, microbatches=1)
    base = plan_layers(MOE, st)[1]
    hot = plan_layers(moe(moe_imbalance=imbalance, capacity_factor=cf), st)[1]
    assert _expert_part(hot).fwd_flops == pytest.approx(q * _expert_part(base).fwd_flops, rel=1e-12)
    kernel_flops = sum(k.flops for k in _expert_part(hot).fwd_work if isinstance(k, Gemm))
    assert kernel_flops == pytest.approx(q * 2 * st.microbatch * S * K * M_SWIGLU * H * F, rel=1e-12)
    # the other parts (attention, router, shared) do not change
    for a, b in zip(base.parts, hot.parts):
        if a is not _expert_part(base):
            assert a.fwd_flops == b.fwd_flops


def test_ep1_is_dense_compute_without_all_to_all():
    st = Strategy(mp=2, dp=2, batch=4, microbatches=2)
    g = build_training(MOE, st)
    assert len(_a2a(g)) == 0
    comp = g.kind == TaskKind.COMPUTE
    # model FLOPs of the iteration: 3 x forward (backward twice) of every sequence, over all GPUs
    assert g.flops[comp].sum() == pytest.approx(3 * MOE.fwd_flops * st.batch,
                                                rel=1e-9)
    # one data-parallel sync per block: the router whole on each tensor rank, the rest split over mp
    plan = plan_layers(MOE, st)[1]
    assert (plan.grad_bytes, plan.expert_grad_bytes) == ((MOE.layers[1].params - H * E) / st.mp * 2 + H * E * 2, 0.0)
    dp = np.flatnonzero(g.category == CATEGORIES.index("DP")).tolist()
    assert {len(g.members(t)) for t in dp} == {st.dp} and len(dp) == len(MOE.layers) * st.mp
    # the same as a dense model whose MLP is top_k experts wide (FLOPs), as it computes per token
    dense = transformer("dense", L, H, HEADS, S, V, **{**LLAMA, "ffn": K * F})
    gd = build_training(dense, st)
    assert g.flops[comp].sum() == pytest.approx(gd.flops[gd.kind == TaskKind.COMPUTE].sum() + 3 * st.batch * L * 2 * S * H * E,
                                                rel=1e-9)  # + the router's h E per token


def test_expert_gradients_over_the_expert_data_parallel_group():
    st = Strategy(mp=1, dp=8, ep=2, batch=8, microbatches=1)
    g = build_training(MOE, st)
    plan = plan_layers(MOE, st)[1]
    pe = M_SWIGLU * H * F
    assert plan.expert_grad_bytes == E // st.ep * pe * 2
    assert plan.grad_bytes == (MOE.layers[1].params - E * pe) * 2  # router and attention, over dp
    dp = g.category == CATEGORIES.index("DP")
    sizes = {len(g.members(t)) for t in np.flatnonzero(dp).tolist()}
    assert sizes == {st.dp, st.dp // st.ep}
    experts = [t for t in np.flatnonzero(dp).tolist() if len(g.members(t)) == st.dp // st.ep]
    assert sorted(g.members(experts[0])) == [0, 2, 4, 6] or sorted(g.members(experts[0])) == [1, 3, 5, 7]
    assert {float(g.size[t]) for t in experts} == {plan.expert_grad_bytes}


def test_folded_equals_unfolded_on_dgx():
    st = Strategy(mp=4, pp=2, dp=4, ep=2, batch=16, microbatches=2)
    pr = CommPricer(parse_topology("dgx-h100:nodes=4"), "analytical")
    assert foldable(MOE, st) == ""
    gf, gu = build_training(MOE, st, fold=True), build_training(MOE, st)
    assert (gf.n_npus, gu.n_npus) == (st.pp, st.npus)
    assert len(_a2a(gf)) * st.mp * st.dp // st.ep == len(_a2a(gu))
    assert asymmetry(gf, pr.for_system(SYSTEM.endpoint, SYSTEM.npu), 1, 1) == ""
    rf, ru = simulate(gf, SYSTEM, pr), simulate(gu, SYSTEM, pr)
    assert rf.iteration_time == ru.iteration_time  # bit for bit
    assert np.array_equal(rf.iteration_times, ru.iteration_times)


def test_all_to_alls_cost_time():
    pr = CommPricer(parse_topology("dgx-h100:nodes=4"), "analytical")
    times = [simulate(build_training(MOE, Strategy(mp=4, pp=2, dp=4, ep=ep, batch=16, microbatches=2), fold=True),
                      SYSTEM, pr).iteration_time for ep in (1, 4)]
    assert times[1] != times[0]


@pytest.mark.parametrize("model,kw,field,accepted", [
    (MOE, dict(dp=4, ep=3, batch=4), "parallelism.ep", "a divisor of dp x cp = 4"),
    (moe(experts=6), dict(dp=4, ep=4, batch=4), "parallelism.ep", "a divisor of experts = 6"),
    (transformer("dense", L, H, HEADS, S, V, **LLAMA), dict(dp=2, ep=2, batch=2), "parallelism.ep", "dense"),
    (MOE, dict(mp=2, dp=2, etp=4, batch=2), "parallelism.etp", "mp = 2"),
    (MOE, dict(mp=2, dp=2, etp=1, batch=2), "parallelism.etp", "mp = 2"),
])
def test_hostile_values_one_line(model, kw, field, accepted):
    with pytest.raises(ConfigError) as e:
        build_training(model, Strategy(**kw))
    msg = str(e.value)
    assert "\n" not in msg and field in msg and accepted in msg


def test_top_k_above_experts_is_refused_by_the_shape():
    with pytest.raises(ConfigError) as e:
        moe(top_k=E + 1)
    assert "\n" not in str(e.value) and "top_k" in str(e.value)


def test_etp_1_with_mp_1_is_accepted():
    st = Strategy(dp=2, ep=2, etp=1, batch=2)
    assert st.expert_tp == 1 and len(_a2a(build_training(MOE, st))) > 0


def test_config_fields_reach_the_strategy():
    from fabricsim.train_config import ParallelismSection

    p = ParallelismSection(dp=4, ep=2)
    assert (p.ep, p.etp) == (2, None)
    with pytest.raises(Exception) as e:
        ParallelismSection(dp=4, ep=3)
    assert "ep" in str(e.value) and "divisor of dp x cp = 4" in str(e.value)
    with pytest.raises(Exception) as e:
        ParallelismSection(mp=2, etp=1)
    assert "etp" in str(e.value)
