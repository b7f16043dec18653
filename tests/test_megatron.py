"""Megatron-LM features of the training workload, against closed forms written here.

- Activation recomputation (Korthikanti et al. 2022): "full" re-runs each block's forward (FLOPs
  2 P seq + 4 seq^2 h per block and sequence, P = 12h^2 + 13h) with its tensor-parallel
  collectives; "selective" re-runs the attention core (4 seq^2 h) and no collective. Recomputed
  FLOPs are hardware FLOPs, not model FLOPs.
- Sequence parallelism: a ring all-reduce of S over t ranks sends 2(t-1)/t S per rank, a ring
  all-gather or reduce-scatter (t-1)/t S: the all-gather + reduce-scatter pair moves the bytes of
  the all-reduce it replaces, and on a switch without latency it takes the same time.
- Interleaved 1F1B (Narayanan et al. 2021): with equal chunk times t_f, t_b and no communication
  cost an iteration takes M v (t_f + t_b) + (pp - 1)(t_f + t_b): the bubble is (pp - 1)/(v M) of the
  ideal time, v times smaller than plain 1F1B's.
- Replica folding (`engine.fold`): the folded graph gives exactly the full graph's answer where the
  network prices every copy alike, and says why not elsewhere.
- The same questions through a training config, and the config's errors.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fabricsim.config import validate
from fabricsim.engine import CommPricer, simulate
from fabricsim.engine.fold import asymmetry
from fabricsim.errors import ConfigError
from fabricsim.system import NPU, Scheduling, System
from fabricsim.system.gpus import get_gpu
from fabricsim.topology import parse_topology
from fabricsim.train import TrainConfig, memory_of, run_train, system_of
from fabricsim.vocab import CATEGORIES, COLLECTIVES, PHASES, TaskKind
from fabricsim.workload.megatron import interleaved_program
from fabricsim.workload.models import transformer
from fabricsim.workload.parallelism import Strategy, build_training, foldable

L, H, HEADS, SEQ, VOCAB = 8, 256, 8, 128, 1024
DTYPE_BYTES = 2  # fp16
MODEL = transformer("small", L, H, HEADS, SEQ, VOCAB)
P_BLOCK = 12 * H * H + 13 * H  # parameters of one block, ffn = 4h
F_BLOCK = 2.0 * P_BLOCK * SEQ + 4.0 * SEQ * SEQ * H  # forward FLOPs of one block, one sequence
F_HEAD = 2.0 * SEQ * H * VOCAB  # forward FLOPs of the head (logits), one sequence
F_CORE = 4.0 * SEQ * SEQ * H  # attention scores and context, one sequence

SYS = System(NPU(1e14, 2e12, 0.5))
MP_CAT = CATEGORIES.index("MP")


def labels(g) -> np.ndarray:
    return np.array(g.labels, dtype=object)[g.label]


def has(lab: np.ndarray, text: str) -> np.ndarray:
    return np.array([text in x for x in lab], dtype=bool)


def starts(lab: np.ndarray, prefix: str) -> np.ndarray:
    return np.array([x.startswith(prefix) for x in lab], dtype=bool)


def mp_colls(g) -> np.ndarray:
    return (g.kind == TaskKind.COLLECTIVE) & (g.category == MP_CAT)


def phase(g, name: str) -> np.ndarray:
    return (g.kind == TaskKind.COMPUTE) & (g.phase == PHASES.index(name))


def sent_per_rank(g, mask: np.ndarray) -> float:
    """Bytes each rank sends over the collectives in `mask`, ring algorithms (closed forms)."""
    total = 0.0
    for i in np.flatnonzero(mask):
        t = len(g.groups[g.group[i]])
        c, s = COLLECTIVES[g.coll[i]], float(g.size[i])
        total += {"all-reduce": 2.0, "all-gather": 1.0, "reduce-scatter": 1.0}[c] * (t - 1) / t * s
    return total


def pricer(topo: str, bw="300GB/s", lat="0ns") -> CommPricer:
    return CommPricer(parse_topology(topo, bw, lat), "analytical")


# ---------------------------------------------------------------- recomputation


@pytest.mark.parametrize("mp,pp,dp,micro,sp", [(2, 2, 2, 2, False), (4, 1, 2, 3, False), (2, 4, 1, 4, False),
                                              (4, 2, 1, 2, True)])
def test_full_recompute_adds_one_forward_of_every_block(mp, pp, dp, micro, sp):
    batch = dp * micro * 2  # microbatch of 2 sequences
    kw = dict(mp=mp, pp=pp, dp=dp, batch=batch, microbatches=micro, sequence_parallel=sp)
    g0 = build_training(MODEL, Strategy(**kw))
    g1 = build_training(MODEL, Strategy(**kw, recompute="full"))
    lab0, lab1 = labels(g0), labels(g1)

    # FLOPs: the recompute tasks hold exactly the blocks' forward, which is L x batch x F_BLOCK
    fwd_blocks = g1.flops[phase(g1, "fwd") & has(lab1, "block")].sum()
    rc = g1.flops[phase(g1, "recompute")].sum()
    assert rc == pytest.approx(fwd_blocks, rel=1e-12)
    assert rc == pytest.approx(L * batch * F_BLOCK, rel=1e-12)
    assert not has(lab1[phase(g1, "recompute")], "embedding").any()
    assert not has(lab1[phase(g1, "recompute")], "head").any()
    # everything else is unchanged
    assert g1.flops[(g1.kind == TaskKind.COMPUTE) & ~phase(g1, "recompute")].sum() == pytest.approx(
        g0.flops[g0.kind == TaskKind.COMPUTE].sum(), rel=1e-12)

    # MP collectives: one more set per block forward (2 per block, microbatch and DP replica;
    # sequence parallel: an all-gather and a reduce-scatter in place of each)
    m0, m1 = mp_colls(g0), mp_colls(g1)
    f_block = m0 & starts(lab0, "F") & has(lab0, "block")
    r_block = m1 & starts(lab1, "R")
    assert int(f_block.sum()) == L * 2 * micro * dp * (2 if sp else 1)
    assert int(m1.sum()) - int(m0.sum()) == int(f_block.sum())
    assert int(r_block.sum()) == int(f_block.sum())
    assert (r_block & ~has(lab1, "block")).sum() == 0
    # the same collectives of the same sizes
    key = lambda g, m: sorted(zip(g.coll[m].tolist(), g.size[m].tolist()))  # noqa: E731
    assert key(g1, r_block) == key(g0, f_block)
    S = 2 * SEQ * H * DTYPE_BYTES  # microbatch of 2 sequences
    assert set(g1.size[r_block].tolist()) == {float(S)}

    # simulated: model FLOPs unchanged, hardware FLOPs = model FLOPs + the blocks' forward
    topo = f"switch:{mp * pp * dp}"
    r0, r1 = simulate(g0, SYS, pricer(topo)), simulate(g1, SYS, pricer(topo))
    model_flops = 3 * L * batch * F_BLOCK + 3 * batch * F_HEAD  # embedding lookup: 0 FLOPs
    assert r0.model_flop_per_iteration == pytest.approx(model_flops, rel=1e-12)
    assert r1.model_flop_per_iteration == pytest.approx(model_flops, rel=1e-12)
    assert r0.hardware_flop_per_iteration == pytest.approx(model_flops, rel=1e-12)
    assert r1.hardware_flop_per_iteration == pytest.approx(model_flops + L * batch * F_BLOCK, rel=1e-12)
    # recomputing costs time: at least the recomputed FLOPs per NPU at the achieved rate
    rate = SYS.npu.peak_flops * SYS.npu.efficiency
    assert r1.iteration_time > r0.iteration_time
    assert r1.mean_breakdown()["compute"] - r0.mean_breakdown()["compute"] >= \
        L * batch * F_BLOCK / (mp * pp * dp) / rate * (1 - 1e-9)


def test_full_recompute_runs_between_the_forward_and_the_backward():
    st = Strategy(mp=2, pp=2, dp=1, batch=4, microbatches=2, recompute="full")
    g = build_training(MODEL, st)
    r = simulate(g, SYS, pricer("switch:4"))
    lab = labels(g)
    comp = g.kind == TaskKind.COMPUTE
    seen = 0
    for npu in range(g.n_npus):
        on = comp & (g.npu == npu)
        by_name = {lab[i]: i for i in np.flatnonzero(on)}
        for name, i in by_name.items():
            if not name.startswith("R"):
                continue
            f, b = by_name["F" + name[1:]], by_name["B" + name[1:]]
            assert r.end[f] <= r.start[i] and r.end[i] <= r.start[b]
            assert g.flops[i] == g.flops[f]
            seen += 1
    assert seen == L * 2 * st.microbatches * st.mp  # two parts per block, each microbatch, each MP rank


@pytest.mark.parametrize("mp,dp,micro", [(2, 2, 2), (4, 1, 4)])
def test_selective_recompute_is_the_attention_core(mp, dp, micro):
    batch = dp * micro
    kw = dict(mp=mp, pp=2, dp=dp, batch=batch, microbatches=micro)
    g0 = build_training(MODEL, Strategy(**kw))
    g1 = build_training(MODEL, Strategy(**kw, recompute="selective"))
    lab1 = labels(g1)
    rc = phase(g1, "recompute")
    assert g1.flops[rc].sum() == pytest.approx(L * batch * F_CORE, rel=1e-12)
    # one task per block, microbatch and MP rank, on the attention part only
    assert int(rc.sum()) == L * micro * mp * dp
    assert all(".attn core" in x for x in lab1[rc])
    # each is 4 seq^2 h x microbatch / mp
    assert np.allclose(g1.flops[rc], F_CORE * (batch // (dp * micro)) / mp, rtol=1e-12)
    # no extra collective of any kind
    coll = lambda g: sorted(zip(g.coll[g.kind == TaskKind.COLLECTIVE].tolist(),  # noqa: E731
                                g.size[g.kind == TaskKind.COLLECTIVE].tolist()))
    assert coll(g1) == coll(g0)
    r0 = simulate(g0, SYS, pricer(f"switch:{mp * 2 * dp}"))
    r1 = simulate(g1, SYS, pricer(f"switch:{mp * 2 * dp}"))
    assert r1.model_flop_per_iteration == pytest.approx(r0.model_flop_per_iteration, rel=1e-12)
    assert r1.hardware_flop_per_iteration - r1.model_flop_per_iteration == pytest.approx(L * batch * F_CORE,
                                                                                          rel=1e-12)


# ---------------------------------------------------------------- sequence parallelism


@pytest.mark.parametrize("mp,pp,dp,micro", [(2, 2, 2, 2), (4, 1, 2, 2), (4, 2, 1, 4)])
def test_sequence_parallel_moves_the_bytes_of_the_all_reduce(mp, pp, dp, micro):
    mb = 2
    # without Megatron's asynchronous TP communication, which gathers the input again in backward
    # (tests/test_tp_overlap.py)
    kw = dict(mp=mp, pp=pp, dp=dp, batch=dp * micro * mb, microbatches=micro, tp_overlap=False)
    g0 = build_training(MODEL, Strategy(**kw))
    g1 = build_training(MODEL, Strategy(**kw, sequence_parallel=True))
    lab0, lab1 = labels(g0), labels(g1)
    b0, b1 = mp_colls(g0) & has(lab0, "block"), mp_colls(g1) & has(lab1, "block")
    S = float(mb * SEQ * H * DTYPE_BYTES)

    # without SP: 2 all-reduces forward + 2 backward per block; with SP an all-gather and a
    # reduce-scatter in place of each, all of S bytes
    n = L * 4 * micro * dp
    assert int(b0.sum()) == n and int(b1.sum()) == 2 * n
    assert {COLLECTIVES[c] for c in g0.coll[b0]} == {"all-reduce"}
    names1 = [COLLECTIVES[c] for c in g1.coll[b1]]
    assert names1.count("all-gather") == n and names1.count("reduce-scatter") == n
    assert set(g0.size[b0].tolist()) == {S} and set(g1.size[b1].tolist()) == {S}
    assert all(len(g1.groups[i]) == mp for i in g1.group[b1])

    # bytes each rank sends: equal, block by block and over all MP collectives
    # (embedding: all-reduce -> reduce-scatter forward + all-gather backward; head: all-reduce
    # backward -> all-gather forward + reduce-scatter backward)
    expected = n / dp * 2.0 * (mp - 1) / mp * S  # per rank: the collectives of its own group
    assert sent_per_rank(g0, b0) / dp == pytest.approx(expected, rel=1e-12)
    assert sent_per_rank(g1, b1) == pytest.approx(sent_per_rank(g0, b0), rel=1e-12)
    assert sent_per_rank(g1, mp_colls(g1)) == pytest.approx(sent_per_rank(g0, mp_colls(g0)), rel=1e-12)


@pytest.mark.parametrize("kw,p2p_size,gathers", [
    (dict(), 1, 0),                                                   # the whole activation to the peer
    (dict(sequence_parallel=True), 1 / 4, 0),                         # each rank holds 1/mp of it
    (dict(pp_send="scatter-gather"), 1 / 4, 1),                       # 1/mp each, then an all-gather
    (dict(pp_send="scatter-gather", sequence_parallel=True), 1 / 4, 0),
])
def test_stage_boundary_bytes(kw, p2p_size, gathers):
    mp, micro, mb = 4, 2, 2
    g = build_training(MODEL, Strategy(mp=mp, pp=2, batch=micro * mb, microbatches=micro, **kw))
    S = float(mb * SEQ * H * DTYPE_BYTES)
    pp_cat = g.category == CATEGORIES.index("PP")
    p2p = pp_cat & (g.kind == TaskKind.P2P)
    coll = pp_cat & (g.kind == TaskKind.COLLECTIVE)
    assert int(p2p.sum()) == 2 * micro * mp  # forward activation + backward gradient, each MP rank
    assert set(g.size[p2p].tolist()) == {S * p2p_size}
    assert int(coll.sum()) == 2 * micro * gathers
    assert all(COLLECTIVES[c] == "all-gather" for c in g.coll[coll]) and set(g.size[coll].tolist()) <= {S}


def test_sequence_parallel_takes_the_all_reduce_time_on_a_switch():
    """Ring on a switch, no latency: RS + AG of S = AR of S = 2(t-1)/t S / B."""
    mp, dp, micro, mb, bw = 4, 2, 2, 4, 300e9
    pr = pricer(f"switch:{mp * dp}", "300GB/s", "0ns")
    S = float(mb * SEQ * H * DTYPE_BYTES)
    grp = tuple(range(mp))
    ar = float(np.sum(pr.phase_times("all-reduce", grp, S)))
    rs = float(np.sum(pr.phase_times("reduce-scatter", grp, S)))
    ag = float(np.sum(pr.phase_times("all-gather", grp, S)))
    assert ar == pytest.approx(2 * (mp - 1) / mp * S / bw, rel=1e-12)
    assert rs == pytest.approx((mp - 1) / mp * S / bw, rel=1e-12)
    assert ag == pytest.approx(rs, rel=1e-12)

    kw = dict(mp=mp, pp=1, dp=dp, batch=dp * micro * mb, microbatches=micro, tp_overlap=False)
    r0 = simulate(build_training(MODEL, Strategy(**kw)), SYS, pr)
    r1 = simulate(build_training(MODEL, Strategy(**kw, sequence_parallel=True)), SYS, pr)
    # each MP group runs, per microbatch, 4 block all-reduces x L + the embedding's + the head's,
    # none of them hidden behind compute (every next task waits for it)
    mp_time = micro * (4 * L + 2) * 2 * (mp - 1) / mp * S / bw
    assert r0.mean_breakdown()["MP"] == pytest.approx(mp_time, rel=1e-9)
    assert r1.mean_breakdown()["MP"] == pytest.approx(r0.mean_breakdown()["MP"], rel=1e-9)
    assert r1.iteration_time == pytest.approx(r0.iteration_time, rel=1e-9)


# ---------------------------------------------------------------- interleaved 1F1B


def test_interleaved_1f1b_bubble_shrinks_by_the_virtual_stages():
    blocks, pp, peak = 16, 4, 1e12
    shape = transformer("blocks-only", blocks, H, HEADS, SEQ, VOCAB)
    model = dataclasses.replace(shape, layers=shape.layers[1:-1])  # blocks only: every chunk equal
    assert {x.kind for x in model.layers} == {"transformer_block"}
    system = System(NPU(peak, 1e30, 1.0))  # memory never binds
    pr = pricer(f"switch:{pp}", "1000000TB/s", "0ns")  # transfers cost ~1e-13 s of ~1e-3 s chunks
    for M in (4, 8):
        bubble = {}
        for v in (1, 2, 4):
            st = Strategy(pp=pp, batch=M, microbatches=M, virtual_stages=v, stage_split="layers")
            r = simulate(build_training(model, st), system, pr)
            t_f = blocks // (pp * v) * F_BLOCK / peak  # one chunk, one sequence
            t_b = 2 * t_f  # input + weight gradient
            ideal = M * v * (t_f + t_b)
            assert r.iteration_time == pytest.approx(ideal + (pp - 1) * (t_f + t_b), rel=1e-6)
            bubble[v] = r.iteration_time / ideal - 1
            assert bubble[v] == pytest.approx((pp - 1) / (v * M), rel=1e-6)
        assert bubble[1] / bubble[2] == pytest.approx(2, rel=1e-6)
        assert bubble[1] / bubble[4] == pytest.approx(4, rel=1e-6)


@pytest.mark.parametrize("pp,v,m", [(2, 2, 2), (2, 2, 6), (4, 2, 8), (4, 3, 12), (4, 4, 4), (3, 2, 9)])
def test_interleaved_program(pp, v, m):
    total = m * v
    for s in range(pp):
        prog = interleaved_program(s, pp, v, m)
        fwd = [(c, mb) for op, c, mb in prog if op == "F"]
        bwd = [(c, mb) for op, c, mb in prog if op == "B"]
        every = {(c, mb) for c in range(v) for mb in range(m)}
        assert len(fwd) == len(bwd) == total and set(fwd) == set(bwd) == every
        for key in every:
            assert prog.index(("F", *key)) < prog.index(("B", *key))
        # warm-up: (pp - s - 1) x 2 + (v - 1) x pp forwards (all when m = pp), then 1F1B
        warm = total if m == pp else min((pp - s - 1) * 2 + (v - 1) * pp, total)
        lead = next((i for i, x in enumerate(prog) if x[0] == "B"), len(prog))
        assert lead == (total if warm == total else warm + 1)  # the steady state starts with a forward
        steady = prog[warm:2 * total - warm] if warm < total else []
        assert [x[0] for x in steady] == ["F", "B"] * (total - warm)
        # Megatron's order: forward pass k is chunk (k mod pp v) div pp of microbatch
        # (k div pp v) pp + k mod pp; backward the same with the chunks reversed
        assert fwd == [((k % (pp * v)) // pp, (k // (pp * v)) * pp + k % pp) for k in range(total)]
        assert bwd == [(v - 1 - (k % (pp * v)) // pp, (k // (pp * v)) * pp + k % pp) for k in range(total)]


def test_interleaved_program_warmup_counts():
    # Narayanan et al.: stage s of pp=4, v=2, m=8 warms up with (4-s-1) x 2 + 4 forwards
    for s, warm in enumerate((10, 8, 6, 4)):
        prog = interleaved_program(s, 4, 2, 8)
        assert [x[0] for x in prog[:warm + 1]] == ["F"] * (warm + 1) and prog[warm + 1][0] == "B"


# ---------------------------------------------------------------- folding


FOLD_CASES = [
    (dict(mp=2, pp=2, dp=2, batch=8, microbatches=4), "switch:8", "300GB/s", "100ns", Scheduling()),
    (dict(mp=4, pp=2, dp=2, batch=8, microbatches=4, schedule="gpipe", recompute="full"),
     "stack:Switch4xSwitch4", ["300GB/s", "25GB/s"], ["1us", "5us"], Scheduling(comm_streams="per-category")),
    (dict(mp=2, pp=4, dp=3, batch=24, microbatches=4, recompute="selective", sequence_parallel=True,
          optimizer="adam", stage_split="layers"), "switch:24", "300GB/s", "100ns",
     Scheduling(comm_streams="per-category")),
    (dict(mp=2, pp=2, dp=3, batch=12, microbatches=4, pp_send="scatter-gather", zero=2, dp_bucket=1e6),
     "fat-tree:12,leaf=2,spines=2", "100GB/s", "100ns", Scheduling()),
    (dict(mp=2, pp=2, dp=2, batch=8, microbatches=4, virtual_stages=2, stage_split="layers",
          sequence_parallel=True, recompute="full", optimizer="adam"),
     "stack:Switch4xSwitch2", ["300GB/s", "25GB/s"], ["1us", "5us"], Scheduling(chunks=2)),
    (dict(mp=4, pp=2, dp=2, batch=8, microbatches=2, iterations=2, schedule="gpipe"),
     "fat-tree:16,leaf=4,spines=2,oversub=2", "100GB/s", "100ns", Scheduling(comm_streams="per-category")),
    (dict(mp=3, pp=2, dp=2, batch=8, microbatches=2, pp_send="scatter-gather", recompute="full"),
     "switch:12", "300GB/s", "100ns", Scheduling(policy="FIFO")),
    (dict(mp=2, pp=3, dp=2, batch=12, microbatches=3, placement=("dp", "mp", "pp"), optimizer="adam"),
     "stack:Switch4xSwitch3", ["300GB/s", "50GB/s"], ["1us", "2us"], Scheduling(comm_streams="per-category")),
    (dict(mp=2, pp=4, dp=2, batch=16, microbatches=8, virtual_stages=2, stage_split="layers", zero=2),
     "stack:Switch4xSwitch4", ["300GB/s", "25GB/s"], ["1us", "5us"], Scheduling(chunks=4, chunks_in_flight=2)),
]


@pytest.mark.parametrize("kw,topo,bw,lat,sched", FOLD_CASES, ids=[c[1] + f"-{i}" for i, c in enumerate(FOLD_CASES)])
def test_fold_is_exact(kw, topo, bw, lat, sched):
    st = Strategy(**kw)
    system = System(NPU(1e14, 2e12, 0.5), scheduling=sched)
    pr = CommPricer(parse_topology(topo, bw, lat), "analytical")
    assert foldable(MODEL, st) == ""
    gf, gu = build_training(MODEL, st, fold=True), build_training(MODEL, st)
    assert gf.n_npus == st.pp and gf.copies == st.mp * st.dp and gu.n_npus == st.npus
    assert asymmetry(gf, pr.for_system(system.endpoint, system.npu), sched.chunks, sched.chunks_in_flight) == ""
    rf, ru = simulate(gf, system, pr), simulate(gu, system, pr)
    assert rf.iteration_time == ru.iteration_time
    assert np.array_equal(rf.iteration_times, ru.iteration_times)
    bf, bu = rf.mean_breakdown(), ru.mean_breakdown()
    assert bf.keys() == bu.keys()
    for k in bu:
        assert bf[k] == pytest.approx(bu[k], rel=1e-12, abs=1e-18), k
    assert rf.model_flop_per_iteration == pytest.approx(ru.model_flop_per_iteration, rel=1e-12)
    assert rf.hardware_flop_per_iteration == pytest.approx(ru.hardware_flop_per_iteration, rel=1e-12)
    # per stage, the folded NPU is every real NPU of its stage
    sf, su = rf.stage_breakdown(), ru.stage_breakdown()
    for s in range(st.pp):
        for k in bu:
            assert sf[s][k] == pytest.approx(su[s][k], rel=1e-12, abs=1e-18)


@pytest.mark.parametrize("kw,topo", [
    (dict(mp=2, dp=3, batch=6), "torus:3x2"),       # MP pair (2, 3) wraps onto the next row
    (dict(mp=2, pp=2, dp=3, batch=6, microbatches=2), "torus:3x4"),
    (dict(mp=2, dp=3, batch=6), "mesh:3x2"),
    (dict(mp=2, dp=3, batch=6), "wafer:3x2"),
])
def test_fold_refused_where_copies_are_priced_differently(kw, topo):
    st = Strategy(**kw)
    pr = pricer(topo, "100GB/s", "100ns")
    gf, gu = build_training(MODEL, st, fold=True), build_training(MODEL, st)
    why = asymmetry(gf, pr)
    assert why and "priced differently" in why
    # and it matters: the folded graph would not give the full graph's answer
    assert simulate(gf, SYS, pr).iteration_time != simulate(gu, SYS, pr).iteration_time


def test_foldable_reasons():
    assert "multicast" in foldable(MODEL, Strategy(mp=2, pp=2, dp=2, batch=4, microbatches=2, pp_send="multicast"))
    assert foldable(MODEL, Strategy(mp=1, pp=2, dp=2, batch=4, microbatches=2, pp_send="multicast")) == ""
    assert foldable(MODEL, Strategy(pp=2, batch=2, microbatches=2)) != ""  # nothing to fold
    with pytest.raises(ConfigError) as e:
        build_training(MODEL, Strategy(mp=2, pp=2, dp=2, batch=4, microbatches=2, pp_send="multicast"), fold=True)
    assert e.value.field == "fold" and "multicast" in str(e.value)


# ---------------------------------------------------------------- through the config


def config(par, model=None, npu=None, topo="switch:8", bw="300GB/s", lat="0ns", batch=8, fold="auto", sched=None):
    d = {"network": {"topology": topo, "bandwidth": bw, "latency": lat, "model": "analytical"},
         "system": {"npu": npu or {"peak": 1e14, "memory_bandwidth": 2e12, "efficiency": 0.5}},
         "workload": {"model": model or {"layers": L, "hidden": H, "heads": HEADS, "seq": SEQ, "vocab": VOCAB},
                      "batch": batch, "parallelism": par, "fold": fold},
         "output": {"trace": False, "plot": False}}
    if sched:
        d["system"]["scheduling"] = sched
    return validate(TrainConfig, d, "t.yaml", context={"source": "t.yaml"})


PAR = dict(mp=2, pp=2, dp=2, microbatches=2, stage_split="layers", recompute="full", sequence_parallel=True,
           optimizer="adam")


def test_config_by_shape_is_the_library_answer():
    run = run_train(config(PAR, topo="stack:Switch4xSwitch2", bw=["300GB/s", "25GB/s"], lat=["1us", "5us"],
                           sched={"comm_streams": "per-category"}))
    st = Strategy(mp=2, pp=2, dp=2, batch=8, microbatches=2, stage_split="layers", recompute="full",
                  sequence_parallel=True, optimizer="adam")
    system = System(NPU(1e14, 2e12, 0.5), scheduling=Scheduling(comm_streams="per-category"))
    pr = CommPricer(parse_topology("stack:Switch4xSwitch2", ["300GB/s", "25GB/s"], ["1us", "5us"]), "analytical")
    res = simulate(build_training(transformer("transformer", L, H, HEADS, SEQ, VOCAB), st), system, pr)
    assert run.result.iteration_time == res.iteration_time
    assert run.notes and run.notes[-1].startswith("folded")
    for k, v in res.mean_breakdown().items():
        assert run.result.mean_breakdown()[k] == pytest.approx(v, rel=1e-12, abs=1e-18)
    assert run.result.model_flop_per_iteration == pytest.approx(3 * L * 8 * F_BLOCK + 3 * 8 * F_HEAD, rel=1e-12)

    off = run_train(config(PAR, topo="stack:Switch4xSwitch2", bw=["300GB/s", "25GB/s"], lat=["1us", "5us"],
                           sched={"comm_streams": "per-category"}, fold="off"))
    assert off.result.iteration_time == run.result.iteration_time
    assert not any(n.startswith("folded") or n.startswith("not folded") for n in off.notes)
    assert off.result.graph.n_npus == 8 and run.result.graph.n_npus == 2


def test_config_on_a_gpu_preset_is_the_library_answer():
    par = dict(mp=2, pp=1, dp=4, microbatches=1, recompute="selective", sequence_parallel=True)
    run = run_train(config(par, npu={"gpu": "a100"}))
    gpu = get_gpu("a100")
    system = System(NPU(gpu.peak_flops, gpu.memory_bandwidth, 1.0, compute=gpu, memory_capacity=gpu.memory_capacity))
    st = Strategy(mp=2, dp=4, batch=8, recompute="selective", sequence_parallel=True)
    res = simulate(build_training(transformer("transformer", L, H, HEADS, SEQ, VOCAB), st), system,
                   pricer("switch:8"))
    assert run.result.iteration_time == res.iteration_time
    assert run.notes[-1].startswith("folded")


def test_config_not_folded_on_an_asymmetric_torus():
    par = dict(mp=2, dp=3)
    run = run_train(config(par, topo="torus:3x2", bw="100GB/s", lat="100ns", batch=6))
    assert any(n.startswith("not folded") for n in run.notes)
    assert run.result.graph.fold is None and run.result.graph.n_npus == 6
    off = run_train(config(par, topo="torus:3x2", bw="100GB/s", lat="100ns", batch=6, fold="off"))
    assert run.result.iteration_time == off.result.iteration_time


@pytest.mark.parametrize("par,model,npu,field", [
    (dict(dp=8, sequence_parallel=True), None, None, "workload.parallelism.sequence_parallel"),
    (dict(mp=2, pp=4, microbatches=6, virtual_stages=2, stage_split="layers"), None, None,
     "workload.parallelism.microbatches"),
    (dict(mp=2, pp=4, microbatches=8, virtual_stages=2), None, None, "workload.parallelism.stage_split"),
    (dict(dp=8, recompute="full"), "resnet50", None, "workload.parallelism.recompute"),
    (dict(mp=8), None, {"gpu": "a100", "peak": 1e14}, "system.npu.peak"),
])
def test_config_errors_name_the_field(par, model, npu, field):
    with pytest.raises(ConfigError) as e:
        run_train(config(par, model, npu, batch=8))
    assert e.value.field == f"t.yaml: {field}"


def test_config_heads_not_dividing_hidden():
    with pytest.raises(ConfigError) as e:
        config(dict(mp=8), {"layers": L, "hidden": 250, "heads": 8, "seq": SEQ, "vocab": VOCAB})
    assert e.value.field.startswith("t.yaml: workload.model")
    assert "heads" in str(e.value) and "divisor of hidden = 250" in str(e.value)


def test_config_heads_error_names_the_shape_field():
    with pytest.raises(ConfigError) as e:
        config(dict(mp=8), {"layers": L, "hidden": 250, "heads": 8, "seq": SEQ, "vocab": VOCAB})
    assert e.value.field == "t.yaml: workload.model.heads"
    assert "Value error" not in str(e.value)


GPT3 = {"layers": 96, "hidden": 12288, "heads": 96, "seq": 2048, "vocab": 51200}
GPT3_PAR = dict(mp=8, pp=8, dp=1, microbatches=64, schedule="gpipe", stage_split="layers")


def test_memory_check_refuses_gpipe_gpt3_on_a100():
    cfg = config(GPT3_PAR, GPT3, {"gpu": "a100"}, topo="stack:Switch8xSwitch8", bw=["300GB/s", "25GB/s"],
                 lat=["1us", "5us"], batch=64)
    with pytest.raises(ConfigError) as e:
        memory_of(cfg, system_of(cfg))
    assert e.value.field == "t.yaml: system.npu.memory"
    # GPipe keeps all 64 microbatches' activations: at least Korthikanti's s b h (10 + 24/t + 5 a s/(h t))
    # bytes per block and microbatch, 12 blocks on stage 0, far over 80 GB
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    act = 12 * 64 * s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    assert act > 80e9
    with pytest.raises(ConfigError) as e2:
        run_train(cfg)
    assert e2.value.field == "t.yaml: system.npu.memory"


def test_memory_check_warn_runs_with_a_note():
    cfg = config(GPT3_PAR, GPT3, {"gpu": "a100", "memory_check": "warn"}, topo="stack:Switch8xSwitch8",
                 bw=["300GB/s", "25GB/s"], lat=["1us", "5us"], batch=64)
    stages, warnings = memory_of(cfg, system_of(cfg))
    assert len(stages) == 8 and len(warnings) == 8
    assert all("more than" in w for w in warnings)
    run = run_train(cfg)
    assert run.notes[:8] == tuple(warnings) and run.notes[-1].startswith("folded")
    assert run.result.iteration_time > 0
    # model FLOPs: 3 x (96 blocks x F_block + head) x 64 sequences
    h, s = 12288, 2048
    f_block = 2.0 * (12 * h * h + 13 * h) * s + 4.0 * s * s * h
    model_flops = 64 * 3 * (96 * f_block + 2.0 * s * h * 51200)
    assert run.result.model_flop_per_iteration == pytest.approx(model_flops, rel=1e-12)


def test_the_fold_check_keeps_nothing_per_replica():
    """The fold check prices every shifted copy on a scratch pricer of its own (`CommPricer.scratch`):
    afterwards the pricer holds only the groups the folded graph prices, as many for 8 replicas as
    for 2 (issue 42: 2.4 GB -> 90 MB at 4,096 GPUs)."""
    cached = {}
    for dp in (2, 8):
        st = Strategy(mp=2, pp=2, dp=dp, batch=4 * dp, microbatches=2)
        pr = CommPricer(parse_topology(f"switch:{4 * dp}", "100GB/s", "100ns"), "analytical")
        gf = build_training(MODEL, st, fold=True)
        assert asymmetry(gf, pr, 1, 1) == ""
        coll = gf.kind == TaskKind.COLLECTIVE
        wanted = {tuple(np.asarray(gf.price_group(int(x))).tolist()) for x in np.unique(gf.group[coll])}
        cached[dp] = {k[1] for k in pr._costs}
        assert cached[dp] and cached[dp] <= wanted, dp
    assert len(cached[2]) == len(cached[8])
