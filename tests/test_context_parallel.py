"""Context parallelism (`workload.context`, `Strategy.cp`): K/V exchange sizes, groups and counts,
FLOPs per rank, the rank order, exposed time under both exchange modes, memory, task estimates,
folding, and the hostile values, each against a closed form written here.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.engine import CommPricer, simulate
from fabricsim.errors import ConfigError
from fabricsim.system import NPU, Scheduling, System
from fabricsim.topology import parse_topology
from fabricsim.vocab import CATEGORIES, COLLECTIVES, TaskKind
from fabricsim.workload.memory_block import activation_bytes_per_block
from fabricsim.workload.memory_model import stage_memory
from fabricsim.workload.parallelism import Strategy, build_training
from fabricsim.workload.shapes import transformer

L, H, HEADS, KV, S, V, F = 4, 256, 8, 4, 128, 1000, 512
D = H // HEADS  # head size
LLAMA = dict(ffn=F, kv_heads=KV, ffn_act="swiglu", norm="rmsnorm", bias=False, tied_embeddings=False, position="rope")
MODEL = transformer("llama-tiny", L, H, HEADS, S, V, **LLAMA)
CP = CATEGORIES.index("CP")


def _cp_colls(g):
    return np.flatnonzero((g.kind == TaskKind.COLLECTIVE) & (g.category == CP))


@pytest.mark.parametrize("mp,cp,dp", [(1, 2, 1), (2, 4, 1), (2, 2, 2), (1, 8, 1)])
def test_kv_exchange_bytes_groups_and_counts(mp, cp, dp):
    """Per attention, microbatch and cp group: forward one all-gather of the whole K/V, 2 b s (k / t)
    d e bytes; backward an all-gather and a reduce-scatter of the same size. A ring sends (cp - 1)
    chunks of 2 b (s / cp) (k / t) d e per rank. Groups: cp consecutive replicas (Megatron's order:
    cp right after mp, so stride mp in NPU ids)."""
    st = Strategy(mp=mp, cp=cp, dp=dp, batch=2 * dp, microbatches=2)
    g = build_training(MODEL, st)
    idx = _cp_colls(g)
    b = st.microbatch
    size = 2 * b * S * (KV // mp) * D * 2
    assert np.all(g.size[idx] == size)
    chunk = 2 * b * (S // cp) * (KV // mp) * D * 2
    assert (cp - 1) / cp * size == (cp - 1) * chunk  # what each rank sends around the ring
    coll = [COLLECTIVES[c] for c in g.coll[idx]]
    groups = mp * dp  # cp groups per stage
    assert coll.count("all-gather") == 2 * L * st.microbatches * groups
    assert coll.count("reduce-scatter") == L * st.microbatches * groups
    want = {tuple(a + mp * (c + cp * d) for c in range(cp)) for a in range(mp) for d in range(dp)}
    assert {g.groups[g.group[t]] for t in idx.tolist()} == want


@pytest.mark.parametrize("cp", [2, 4])
def test_flops_per_rank_are_one_cp_th(cp):
    """The cp ranks share each sequence: every rank computes the same FLOPs, and together exactly
    what one rank computes without context parallelism (the causal core split evenly)."""
    def per_npu(st):
        g = build_training(MODEL, st)
        comp = g.kind == TaskKind.COMPUTE
        return np.bincount(g.npu[comp], weights=g.flops[comp], minlength=g.n_npus)

    one = per_npu(Strategy(batch=2, microbatches=2))
    many = per_npu(Strategy(cp=cp, batch=2, microbatches=2))
    assert np.allclose(many, many[0], rtol=1e-12)
    assert many.sum() == pytest.approx(one.sum(), rel=1e-12)


def test_rank_order_megatron_and_given():
    st = Strategy(mp=2, cp=2, dp=2, pp=2, batch=4, microbatches=2)  # tp-cp-ep-dp-pp
    R = st.ranks()
    for a in range(2):
        for p in range(2):
            for d in range(2):
                for c in range(2):
                    assert R[a, p, c + 2 * d] == a + 2 * c + 4 * d + 8 * p == st.rank(a, p, d, c)
    old = Strategy(mp=2, cp=2, dp=2, pp=2, batch=4, microbatches=2, placement=("mp", "pp", "dp"))
    assert old.placement == ("mp", "cp", "pp", "dp")  # cp follows mp
    assert old.rank(1, 1, 1, 1) == 1 + 2 + 4 + 8 and old.rank(0, 1, 0, 0) == 4 and old.rank(0, 0, 1, 0) == 8
    assert st.npus == 16 and st.replicas == 4 and st.name == "MP(2)-DP(2)-PP(2)-CP(2)"


B_LINK, LAT = 10e9, 1e-6


def _run(cp_comm: str, peak: float):
    """L blocks on cp = 2 ranks through one switch; one comm stream per category (the data-parallel
    all-reduce of the weights keeps to its own)."""
    st = Strategy(cp=2, batch=1, microbatches=1, cp_comm=cp_comm)
    g = build_training(MODEL, st)
    system = System(NPU(peak, 1e15, 1.0), scheduling=Scheduling(comm_streams="per-category"))
    return g, simulate(g, system, CommPricer(parse_topology("switch:2", B_LINK, LAT), "analytical"))


def test_all_gather_mode_exposes_every_exchange():
    """all_gather: the core waits for the K/V gather, the rest for the gradients' reduce-scatter:
    each of the 3 L exchanges fully exposed. A 2-rank ring through a switch: one step of half the
    buffer over 2 hops, 2 a + X / (2 B)."""
    size = 2 * 1 * S * KV * D * 2
    t_c = 2 * LAT + size / 2 / B_LINK
    _, res = _run("all_gather", 1e12)
    assert res.breakdown["CP"] == pytest.approx(np.full(2, 3 * L * t_c), rel=1e-9)


def test_ring_mode_hides_the_exchange_behind_a_slow_core():
    """p2p: the exchange runs beside the core; with a core far longer than it nothing is exposed,
    while all_gather still exposes all of it."""
    _, ring = _run("p2p", 1e9)
    _, gather = _run("all_gather", 1e9)
    assert np.all(ring.breakdown["CP"] == 0.0) and np.all(gather.breakdown["CP"] > 0)
    assert ring.makespan < gather.makespan


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_memory_activations_divide_by_cp_and_zero_shards_over_dp_cp(recompute):
    """Each rank stores the activations of s / cp tokens (the scores of s / cp queries): 1 / cp of
    them; ZeRO-1 shards optimizer states (12 bytes per parameter) over the dp x cp replicas."""
    kw = dict(layers=L, hidden=H, heads=HEADS, seq=S, vocab=V, ffn=F, kv_heads=KV, ffn_act="swiglu", norm="rmsnorm",
              bias=False, tied_embeddings=False, position="rope", recompute=recompute, dp=2, zero=1)
    one, four = stage_memory(**kw)[0], stage_memory(cp=4, **kw)[0]
    assert four.activations == pytest.approx(one.activations / 4, rel=1e-12)
    assert four.weights == one.weights and four.optimizer == pytest.approx(12 * four.params / (2 * 4), rel=1e-12)


def test_fused_attention_stores_statistics_not_scores():
    """FlashAttention keeps one fp32 logsumexp per query and head (4 a s b / t bytes) instead of
    the (2e + 1) a s^2 b / t of the scores, softmax output and dropout mask."""
    s, b, h, a, t, e = 2048, 2, 1024, 16, 2, 2
    plain = activation_bytes_per_block(s, b, h, a, t, False, "none")
    fused = activation_bytes_per_block(s, b, h, a, t, False, "none", fused=True)
    assert plain - fused == pytest.approx((2 * e + 1) * a * s * s * b / t - 4 * a * s * b / t, rel=1e-12)


@pytest.mark.parametrize("kw", [dict(cp=2), dict(mp=2, cp=2, dp=2, pp=2, recompute="full"),
                                dict(cp=4, cp_comm="all_gather", pp=2), dict(mp=2, cp=2, sequence_parallel=True,
                                                                             zero=1, dp=2)])
@pytest.mark.parametrize("fold", [False, True])
def test_task_estimate_counts_context_parallel_tasks(kw, fold):
    from fabricsim.workload.estimate import training_tasks

    st = Strategy(batch=4 * kw.get("dp", 1), microbatches=4, stage_split="layers", **kw)
    assert training_tasks(MODEL, st, fold) == len(build_training(MODEL, st, fold=fold))


@pytest.mark.parametrize("cp_comm", ["p2p", "all_gather"])
def test_folded_equals_unfolded(cp_comm):
    from fabricsim.engine.fold import check_fold

    st = Strategy(mp=2, cp=2, dp=2, pp=2, batch=4, microbatches=2, cp_comm=cp_comm, stage_split="layers")
    pricer = CommPricer(parse_topology("dgx-h100:nodes=2"), "analytical")
    system = System(NPU(1e14, 2e12, 0.5), scheduling=Scheduling())
    folded = build_training(MODEL, st, fold=True)
    assert check_fold(folded, pricer).why == ""
    a, b = simulate(folded, system, pricer), simulate(build_training(MODEL, st), system, pricer)
    assert a.makespan == b.makespan


@pytest.mark.parametrize("kw,field,accepted", [
    (dict(cp=3), "parallelism.cp", "a divisor of seq / 2 = 64"),
    (dict(cp=2, recompute="selective"), "parallelism.recompute", "accepted with cp > 1: none or full"),
    (dict(cp=2, dp=2, ep=3), "parallelism.ep", "a divisor of dp x cp = 4"),
    (dict(cp=2, cp_comm="a2a"), "parallelism.cp_comm", "p2p, all_gather"),
    (dict(cp=0), "parallelism.cp", "an integer >= 1"),
    (dict(cp=2, placement=("mp", "cp", "dp")), "parallelism.placement", "an order of mp, cp, pp, dp"),
])
def test_hostile_values_one_line(kw, field, accepted):
    with pytest.raises(ConfigError) as e:
        build_training(MODEL, Strategy(batch=4 * kw.get("dp", 1), **kw))
    msg = str(e.value)
    assert "\n" not in msg and field in msg and accepted in msg


def test_cp_not_dividing_the_sequence_exits_2_in_one_line(tmp_path, capsys):
    from fabricsim.cli import main

    cfg = tmp_path / "t.yaml"
    cfg.write_text("network: {topology: 'switch:8', bandwidth: 100GB/s, latency: 1us}\n"
                   "workload:\n  model: {layers: 2, hidden: 256, heads: 8, seq: 100, vocab: 1000}\n"
                   "  batch: 1\n  parallelism: {cp: 8}\n")
    assert main(["train", str(cfg), "--no-trace", "--no-plot", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "parallelism.cp" in err and "seq / 2 = 50" in err
