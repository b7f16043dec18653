"""Memory per pipeline stage (`fabricsim.workload.memory`): expectations written out by hand from
the parameter count and from Korthikanti et al. 2022 (arXiv 2205.05198), Section 4 and Table 2."""

from __future__ import annotations

import doctest

import pytest

import fabricsim.workload.memory as memory
from fabricsim.errors import ConfigError
from fabricsim.workload.memory import StageMemory, activation_bytes_per_block, check_memory, stage_memory

# the small transformer: L=4, h=64, a=4, s=32, V=100, b=2, ffn=4h, on t=2, p=2, d=2
L, H, A, S, V, B, T, P, D = 4, 64, 4, 32, 100, 2, 2, 2, 2
FFN = 4 * H
SMALL = dict(layers=L, hidden=H, heads=A, seq=S, vocab=V, microbatch=B, tp=T, pp=P, dp=D)

# one block on one tensor rank: column-parallel QKV and MLP-in (weights and biases split), row-parallel
# projection and MLP-out (weights split, biases replicated), two LayerNorms replicated
BLOCK = (3 * H * H + 3 * H) // T + H * H // T + H + 4 * H + (H * FFN + FFN) // T + FFN * H // T + H
STAGE0_PARAMS = 2 * BLOCK + (V // T) * H + S * H  # two blocks, vocab-parallel word embedding, position embedding
STAGE1_PARAMS = 2 * BLOCK + 2 * H + (V // T) * H  # two blocks, final LayerNorm, tied head's embedding copy


def test_block_params_are_12h2_plus_13h_on_one_rank():
    assert memory.block_params(H, FFN, 1) == 12 * H * H + 13 * H
    assert memory.block_params(H, FFN, T) == BLOCK == 25184


def test_params_per_stage():
    st = stage_memory(**SMALL)
    assert [x.params for x in st] == [STAGE0_PARAMS, STAGE1_PARAMS] == [55616, 53696]
    assert all(isinstance(x, StageMemory) for x in st)


def test_single_stage_holds_embedding_and_final_norm_but_no_tied_copy():
    (st,) = stage_memory(**dict(SMALL, pp=1))
    assert st.params == 4 * BLOCK + (V // T) * H + S * H + 2 * H


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_weights_gradients_optimizer_per_zero_stage(zero):
    st = stage_memory(**SMALL, zero=zero)
    for x, n in zip(st, [STAGE0_PARAMS, STAGE1_PARAMS]):
        assert x.weights == n * 2 / (D if zero == 3 else 1)
        assert x.gradients == n * 4 / (D if zero >= 2 else 1)
        assert x.optimizer == n * 12 / (D if zero >= 1 else 1)
        assert x.total == x.weights + x.gradients + x.optimizer + x.activations


def test_other_bytes_per_parameter():
    (st,) = stage_memory(**dict(SMALL, pp=1), dtype_bytes=4, grad_bytes=2, optimizer_bytes=0)
    assert (st.weights, st.gradients, st.optimizer) == (st.params * 4, st.params * 2, 0)


def _table2(s, b, h, a, t, sp, recompute):
    """Korthikanti Table 2, one row per (sequence parallel, recompute)."""
    return {
        (False, "none"): s * b * h * (10 + 24 / t + 5 * a * s / (h * t)),
        (True, "none"): s * b * h / t * (34 + 5 * a * s / h),
        (False, "selective"): s * b * h * (10 + 24 / t),
        (True, "selective"): 34 * s * b * h / t,
        (False, "full"): 2 * s * b * h,
        (True, "full"): 2 * s * b * h / t,
    }[sp, recompute]


@pytest.mark.parametrize("sp", [False, True])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("s,b,h,a,t", [(S, B, H, A, T), (2048, 1, 12288, 96, 8), (2048, 4, 6144, 64, 8)])
def test_activations_per_block_are_table2(sp, recompute, s, b, h, a, t):
    got = activation_bytes_per_block(s, b, h, a, t, sp, recompute)
    assert got == pytest.approx(_table2(s, b, h, a, t, sp, recompute), rel=1e-12)


def test_activations_without_parallelism_are_eq1():
    for sp in (False, True):
        assert activation_bytes_per_block(S, B, H, A, 1, sp, "none") == pytest.approx(S * B * H * (34 + 5 * A * S / H))


def test_activations_scale_the_mlp_terms_with_ffn_and_dtype():
    # Section 4.1's breakdown: of the 34, 16 are the two ffn-wide MLP inputs (2 bytes x 4h each)
    ffn = 3 * H
    expected = S * B * H * (34 - 16) + 2 * 2 * S * B * ffn + 5 * A * S * S * B
    assert activation_bytes_per_block(S, B, H, A, 1, False, "none", ffn=ffn) == pytest.approx(expected)
    # 4-byte elements, 1-byte masks: 11 -> 5*4 + 1, 19 -> 4 + 2*4*4 + 1, 4 -> 2*4; scores 5 -> 2*4 + 1
    expected = S * B * H * (21 + 37 + 8 + 9 * A * S / H)
    assert activation_bytes_per_block(S, B, H, A, 1, False, "none", dtype_bytes=4) == pytest.approx(expected)


@pytest.mark.parametrize("schedule,m,expected", [("gpipe", 4, [4, 4]), ("1f1b", 4, [2, 1]), ("1f1b", 1, [1, 1]),
                                                 ("gpipe", 1, [1, 1])])
def test_in_flight_gpipe_and_1f1b(schedule, m, expected):
    assert [x.in_flight for x in stage_memory(**SMALL, schedule=schedule, microbatches=m)] == expected


def test_in_flight_interleaved():
    # min(2(p - i - 1) + (v - 1)p + 1, m v); all m v when m = p, as Megatron-LM runs every forward first
    assert [x.in_flight for x in stage_memory(**SMALL, microbatches=4, virtual_stages=2)] == [5, 3]
    assert [x.in_flight for x in stage_memory(**SMALL, microbatches=2, virtual_stages=2)] == [4, 4]
    st = stage_memory(**dict(SMALL, layers=8, pp=4), microbatches=8, virtual_stages=2)
    assert [x.in_flight for x in st] == [11, 9, 7, 5] and 11 == 4 * 2 + 4 - 1


def test_interleaved_first_stage_is_korthikanti_factor():
    # p=4, v=2, L=8: stage 0 holds L (1 + (p-1)/(p v)) blocks of activations (Section 4.2.3), plus the
    # embedding mask for its chunk-0 microbatches: p of the first round and p - 1 of the second
    p, v, layers = 4, 2, 8
    st = stage_memory(**dict(SMALL, layers=layers, pp=p), microbatches=8, virtual_stages=2,
                      sequence_parallel=True, recompute="selective")
    block = 34 * S * B * H / T
    assert st[0].activations == pytest.approx(layers * (1 + (p - 1) / (p * v)) * block + (p + p - 1) * S * B * H / T)
    # the last stage: 5 chunk-microbatches of one block; one of them has reached the head
    assert st[-1].activations == pytest.approx(5 * block + 4 * S * B * H / T * (1 + V / H))


def test_activations_per_stage_1f1b():
    st = stage_memory(**SMALL, microbatches=4, sequence_parallel=True, recompute="selective")
    block = 34 * S * B * H / T
    # stage 0: 2 microbatches of 2 blocks, each with its embedding dropout mask sbh/t (Section 4.3)
    assert st[0].activations == pytest.approx(2 * 2 * block + 2 * S * B * H / T)
    # stage 1: 1 microbatch of 2 blocks, its final LayerNorm and output layer inputs and fp32 logits
    assert st[1].activations == pytest.approx(2 * block + 4 * S * B * H / T * (1 + V / H))
    st = stage_memory(**SMALL, microbatches=4, recompute="full")  # no sequence parallelism
    assert st[0].activations == pytest.approx(2 * 2 * 2 * S * B * H + 2 * S * B * H)
    assert st[1].activations == pytest.approx(2 * 2 * S * B * H + 2 * 2 * S * B * H + 4 * S * B * V / T)


def test_stage_blocks_uneven():
    st = stage_memory(**SMALL, stage_blocks=[1, 3], microbatches=4, recompute="full", sequence_parallel=True)
    assert [x.params for x in st] == [BLOCK + (V // T) * H + S * H, 3 * BLOCK + 2 * H + (V // T) * H]
    assert st[0].activations == pytest.approx(2 * 1 * 2 * S * B * H / T + 2 * S * B * H / T)


def test_gpt3_175b_first_stage_is_korthikanti_section_4():
    # t=8, p=8, 1F1B with p microbatches in flight on stage 0: sbhL/t (34 + p/L) with sequence
    # parallelism and selective recompute (Section 5; Section 4.3's embedding term sbhp/t)
    s, b, h, a, layers, t, p, vocab = 2048, 1, 12288, 96, 96, 8, 8, 51200
    st = stage_memory(layers=layers, hidden=h, heads=a, seq=s, vocab=vocab, tp=t, pp=p, microbatches=64,
                      recompute="selective", sequence_parallel=True)
    assert st[0].in_flight == p
    assert st[0].activations == pytest.approx(s * b * h * layers / t * (34 + p / layers), rel=1e-12)
    # the transformer blocks alone are 34 sbhL/t, whatever p
    assert st[0].activations - s * b * h * p / t == pytest.approx(34 * s * b * h * layers / t, rel=1e-12)
    # without recompute, Eq. 5: sbhL/t (34 + 5as/h) (+ sbhp/t)
    st = stage_memory(layers=layers, hidden=h, heads=a, seq=s, vocab=vocab, tp=t, pp=p, microbatches=64,
                      sequence_parallel=True)
    assert st[0].activations == pytest.approx(s * b * h * layers / t * (34 + 5 * a * s / h + p / layers), rel=1e-12)


def test_22b_single_stage_is_section_4_3_total():
    # p = 1: sbhL/t (34 + p/L + 4/L (1 + v/h)), Section 4.3 with delta_{p=1} = 1
    s, b, h, a, layers, t, vocab = 2048, 4, 6144, 64, 48, 8, 51200
    (st,) = stage_memory(layers=layers, hidden=h, heads=a, seq=s, vocab=vocab, tp=t, microbatch=b,
                         recompute="selective", sequence_parallel=True)
    expected = s * b * h * layers / t * (34 + 1 / layers + 4 / layers * (1 + vocab / h))
    assert st.activations == pytest.approx(expected, rel=1e-12)


def test_check_memory_error_warn_ignore():
    st = stage_memory(**SMALL, microbatches=4)
    cap = (st[0].total + st[1].total) / 2
    over = max(st, key=lambda x: x.total)
    assert min(x.total for x in st) < cap < over.total
    lines = check_memory(st, cap, "warn")
    assert len(lines) == 1 and lines[0].startswith(f"stage {over.stage} needs ") and "of the NPU" in lines[0]
    assert check_memory(st, cap, "ignore") == []
    assert check_memory(st, 10 * over.total) == []
    with pytest.raises(ConfigError) as err:
        check_memory(st, cap)
    text = str(err.value)
    assert err.value.field == "system.npu.memory" and text.startswith("system.npu.memory: ") and "\n" not in text
    assert f"pipeline stage {over.stage}" in text
    for hint in ("recompute", "pipeline stages", "fewer microbatches", "ZeRO"):
        assert hint in text
    with pytest.raises(ConfigError) as err:
        check_memory(st, 1.0, field="npu.hbm")
    assert err.value.field == "npu.hbm" and "pipeline stage 0" in str(err.value)
    lines = check_memory(st, 1.0, "warn")
    assert [line.split()[1] for line in lines] == ["0", "1"]


@pytest.mark.parametrize("on_exceed,capacity,field", [("raise", 1e9, "on_exceed"), ("warn", 0, "system.npu.memory"),
                                                      ("warn", float("inf"), "system.npu.memory")])
def test_check_memory_bad_arguments(on_exceed, capacity, field):
    with pytest.raises(ConfigError) as err:
        check_memory(stage_memory(**SMALL), capacity, on_exceed)
    assert err.value.field == field


@pytest.mark.parametrize("change,field", [
    (dict(tp=3), "tp"), (dict(layers=0), "layers"), (dict(microbatch=True), "microbatch"),
    (dict(schedule="zb"), "schedule"), (dict(recompute="partial"), "recompute"), (dict(zero=4), "zero"),
    (dict(zero=True), "zero"), (dict(sequence_parallel="yes"), "sequence_parallel"),
    (dict(virtual_stages=2, schedule="gpipe", microbatches=4), "virtual_stages"),
    (dict(virtual_stages=2, microbatches=1), "virtual_stages"), (dict(virtual_stages=2, pp=1), "virtual_stages"),
    (dict(stage_blocks=[1, 2]), "stage_blocks"), (dict(stage_blocks=[4]), "stage_blocks"),
    (dict(stage_blocks=[5, -1]), "stage_blocks"), (dict(stage_blocks=["a", "b"]), "stage_blocks"),
    (dict(stage_blocks=4), "stage_blocks"),
    (dict(stage_blocks=[1, 3], virtual_stages=2, microbatches=4), "stage_blocks"),
    (dict(pp=3), "pp"), (dict(hidden=66), "hidden"), (dict(ffn=255), "ffn"), (dict(dp=0), "dp"),
    (dict(grad_bytes=-1), "grad_bytes"), (dict(vocab=1.5), "vocab"),
])
def test_bad_inputs_name_the_field(change, field):
    with pytest.raises(ConfigError) as err:
        stage_memory(**dict(SMALL, **change))
    assert err.value.field == field and "\n" not in str(err.value) and "accepted" in str(err.value)


def test_docstring_examples():
    result = doctest.testmod(memory, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
