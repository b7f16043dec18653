"""The memory model (`workload.memory_model`) for modern transformer shapes: grouped-query attention,
SwiGLU, RMSNorm, no biases, untied embeddings, rotary positions (`workload.shapes.TransformerShape`).

Every expectation is written out here from closed forms, not taken from the code under test:

- parameters of one block on one of t tensor ranks, with w = k h / a the key (and value) width:
  QKV h (h + 2w) and the MLP's input matrices ((m - 1) h f: gelu's fc1, swiglu's gate and up) split
  by columns with their biases (h + 2w, (m - 1) f), the output projection h^2 and fc2 f h split by
  rows, their biases (2h) and the two norms (2 x 2h layernorm, 2 x h rmsnorm) replicated;
- Llama 3 8B (L 32, h 4096, a 32, k 8, f 14336, V 128256, swiglu, rmsnorm, no biases, untied,
  rope): 32 (4096 x 6144 + 4096^2 + 3 x 4096 x 14336 + 2 x 4096) + 2 x 128256 x 4096 + 4096 =
  8,030,261,248 parameters, the published 8.03B;
- activations per block (Korthikanti et al. 2022, arXiv 2205.05198, Section 4.1), term by term in
  `stored_bytes`: GQA's K and V are e sbw each instead of e sbh; SwiGLU stores fc1's 2f-wide output
  and fc2's f-wide input; without dropout no masks and no dropout output.
"""

from __future__ import annotations

import math

import pytest

from fabricsim.errors import ConfigError
from fabricsim.workload.memory import fitting_changes
from fabricsim.workload.memory_model import (
    activation_bytes_per_block,
    block_params,
    shape_arguments,
    stage_memory,
)
from fabricsim.workload.shapes import Model, transformer

# a small Llama-like shape: h 128, a 16 query heads, k 8 key/value heads (w = 64), swiglu with f 352
H, A, K, F = 128, 16, 8, 352
W = K * H // A
MODERN = dict(heads=A, kv_heads=K, ffn_act="swiglu", norm="rmsnorm", bias=False)

LLAMA3_8B = dict(layers=32, hidden=4096, heads=32, seq=8192, vocab=128256, ffn=14336, kv_heads=8, ffn_act="swiglu",
                 norm="rmsnorm", bias=False, tied_embeddings=False, position="rope")


def modern_block(t: int) -> float:
    """GQA + SwiGLU + RMSNorm, no biases: (h (h + 2w) + h^2 + 3 h f) / t + 2h."""
    return (H * (H + 2 * W) + H * H + 3 * H * F) / t + 2 * H


@pytest.mark.parametrize("t,expected", [(1, 184576), (2, 92416), (8, 23296)])
def test_block_params_gqa_swiglu_rmsnorm_no_bias(t, expected):
    # 128 x 256 + 128^2 + 3 x 128 x 352 = 32768 + 16384 + 135168 = 184320 split; 2 x 128 replicated
    assert modern_block(t) == expected
    assert block_params(H, F, t, **MODERN) == expected


def test_block_params_gqa_swiglu_with_biases_and_layernorm():
    t = 2
    split = H * (H + 2 * W) + H * H + 3 * H * F + (H + 2 * W) + 2 * F  # column-parallel biases split too
    expected = split / t + 2 * H + 2 * 2 * H  # row-parallel biases and two LayerNorms replicated
    assert block_params(H, F, t, heads=A, kv_heads=K, ffn_act="swiglu") == expected


def test_llama3_8b_parameters_per_rank_at_tp1():
    h, a, k, f, v, layers = 4096, 32, 8, 14336, 128256, 32
    block = h * (h + 2 * k * h // a) + h * h + 3 * h * f + 2 * h
    total = layers * block + v * h + v * h + h  # embedding, untied head, final RMSNorm; rope: no positions
    assert total == 8_030_261_248
    (st,) = stage_memory(**LLAMA3_8B, dtype_bytes=2)
    assert st.params == 8_030_261_248
    model = transformer("llama3-8b", 32, 4096, 32, 8192, 128256, ffn=14336, kv_heads=8, ffn_act="swiglu",
                        norm="rmsnorm", bias=False, tied_embeddings=False, position="rope", dtype="bf16")
    kw = shape_arguments(model)
    assert kw == {**LLAMA3_8B, "dtype_bytes": 2}
    assert stage_memory(**kw)[0].params == model.params == 8_030_261_248


def test_llama3_8b_parameters_per_rank_at_tp8_pp4():
    h, a, k, f, v, layers, t, p = 4096, 32, 8, 14336, 128256, 32, 8, 4
    block = (h * (h + 2 * k * h // a) + h * h + 3 * h * f) // t + 2 * h
    rows = math.ceil(v / t)
    st = stage_memory(**LLAMA3_8B, tp=t, pp=p, microbatches=4)
    assert [x.params for x in st] == [8 * block + rows * h, 8 * block, 8 * block, 8 * block + h + rows * h]


def test_untied_head_and_rope_on_the_stages():
    s, v, layers = 32, 100, 4
    kw = dict(layers=layers, hidden=H, seq=s, vocab=v, ffn=F, tp=2, tied_embeddings=False, position="rope", **MODERN)
    rows = v // 2
    st = stage_memory(**kw, pp=2, microbatches=2)
    assert [x.params for x in st] == [2 * modern_block(2) + rows * H, 2 * modern_block(2) + H + rows * H]
    (one,) = stage_memory(**kw)  # one stage: the untied head has its own rows
    assert one.params == layers * modern_block(2) + rows * H + H + rows * H
    (tied,) = stage_memory(**dict(kw, tied_embeddings=True, position="learned"))
    assert tied.params == layers * modern_block(2) + rows * H + s * H + H  # positions s h on every rank


def stored_bytes(s, b, h, a, k, f, t, e, sp, recompute, dropout, act):
    """Korthikanti Section 4.1 term by term for one block, one microbatch, one tensor rank (bytes)."""
    w = k * h // a
    mask = 1 if dropout else 0
    r = t if sp else 1  # sequence parallelism splits the replicated regions
    if recompute == "full":
        return e * s * b * h / r  # the block's input
    attention = (e * s * b * h / r  # QKV input
                 + e * s * b * h / t + e * s * b * w / t  # Q, K
                 + e * s * b * w / t  # V
                 + e * s * b * h / t  # projection input
                 + mask * s * b * h / r)  # dropout mask
    scores = (e * a * s * s * b / t  # softmax output
              + mask * a * s * s * b / t  # its dropout mask
              + mask * e * a * s * s * b / t)  # dropout output
    if act == "gelu":
        inner = e * s * b * f / t + e * s * b * f / t  # GeLU input, fc2 input
    else:
        inner = 2 * e * s * b * f / t + e * s * b * f / t  # fc1 output (gate, up), SwiGLU output (fc2 input)
    mlp = e * s * b * h / r + inner + mask * s * b * h / r  # fc1 input, ..., dropout mask
    norms = 2 * e * s * b * h / r
    return attention + mlp + norms + (0 if recompute == "selective" else scores)


SMALL_GQA = dict(s=32, b=2, h=64, a=8, k=2, f=160)


@pytest.mark.parametrize("t", [1, 2])
@pytest.mark.parametrize("sp", [False, True])
@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("e", [2, 4])
@pytest.mark.parametrize("dropout", [True, False])
@pytest.mark.parametrize("act", ["gelu", "swiglu"])
def test_activations_per_block_gqa_swiglu_term_by_term(t, sp, recompute, e, dropout, act):
    z = SMALL_GQA
    expected = stored_bytes(z["s"], z["b"], z["h"], z["a"], z["k"], z["f"], t, e, sp, recompute, dropout, act)
    got = activation_bytes_per_block(z["s"], z["b"], z["h"], z["a"], t, sp, recompute, z["f"], e,
                                     kv_heads=z["k"], ffn_act=act, dropout=dropout)
    assert got == pytest.approx(expected, rel=1e-12)


def test_activations_gqa_swiglu_closed_form():
    # w = h/4, f = 5h/2, e = 2 at t = 1: 2sb(2h + 2h/4 + 3 x 5h/2) = 20sbh split, 10sbh replicated, 5as^2b
    s, b, h, a, k, f = 32, 2, 64, 8, 2, 160
    got = activation_bytes_per_block(s, b, h, a, 1, False, "none", f, kv_heads=k, ffn_act="swiglu")
    assert got == pytest.approx(s * b * h * (30 + 5 * a * s / h))
    # without dropout: 20sbh + 8sbh and the softmax output alone, 2as^2b
    got = activation_bytes_per_block(s, b, h, a, 1, False, "none", f, kv_heads=k, ffn_act="swiglu", dropout=False)
    assert got == pytest.approx(s * b * h * (28 + 2 * a * s / h))


@pytest.mark.parametrize("s,b,h,a", [(32, 2, 64, 4), (2048, 1, 12288, 96)])
def test_gpt_defaults_are_korthikanti(s, b, h, a):
    explicit = dict(kv_heads=a, ffn_act="gelu", dropout=True)
    assert activation_bytes_per_block(s, b, h, a, 1, False, "none", **explicit) == pytest.approx(
        34 * s * b * h + 5 * a * s * s * b, rel=1e-12)
    assert activation_bytes_per_block(s, b, h, a, 8 if a % 8 == 0 else 4, True, "selective", **explicit) == \
        pytest.approx(34 * s * b * h / (8 if a % 8 == 0 else 4), rel=1e-12)
    assert block_params(h, 4 * h, 1, heads=a, kv_heads=a, norm="layernorm", bias=True) == 12 * h * h + 13 * h


def test_gpt_model_by_shape_gives_todays_stages():
    model = transformer("gpt-small", 4, 64, 4, 32, 100)
    strategy = dict(tp=2, pp=2, dp=2, microbatch=2, microbatches=4)
    plain = stage_memory(layers=4, hidden=64, heads=4, seq=32, vocab=100, **strategy)
    assert stage_memory(**shape_arguments(model), **strategy) == plain
    assert [x.params for x in plain] == [55616, 53696]  # test_memory_model's hand counts


def test_no_dropout_drops_the_embedding_mask():
    kw = dict(layers=2, hidden=64, heads=8, seq=32, vocab=100, ffn=160, kv_heads=2, ffn_act="swiglu", microbatch=2,
              tp=2, pp=2, microbatches=2, recompute="full")
    with_mask, without = stage_memory(**kw), stage_memory(**kw, dropout=False)
    s, b, h = 32, 2, 64
    assert with_mask[0].activations - without[0].activations == pytest.approx(2 * s * b * h)  # 2 in flight, sbh
    assert with_mask[1].activations == without[1].activations  # the head stores no mask


def test_fitting_changes_keep_the_architecture():
    kw = dict(layers=4, hidden=64, heads=8, seq=32, vocab=100, ffn=160, kv_heads=2, ffn_act="swiglu",
              norm="rmsnorm", bias=False, tied_embeddings=False, position="rope", pp=2, dp=2, microbatches=4)
    fits, how = fitting_changes(1e12, kw)
    assert how == "single" and fits
    for fit in fits:
        assert all(fit.strategy[k] == kw[k] for k in ("kv_heads", "ffn_act", "norm", "bias", "tied_embeddings"))
        assert fit.peak == max(x.total for x in stage_memory(**fit.strategy))


@pytest.mark.parametrize("change,field", [
    (dict(tp=4), "tp"), (dict(kv_heads=3), "kv_heads"), (dict(kv_heads=0), "kv_heads"),
    (dict(ffn_act="relu"), "ffn_act"), (dict(norm="batchnorm"), "norm"), (dict(position="alibi"), "position"),
    (dict(bias="no"), "bias"), (dict(tied_embeddings=1), "tied_embeddings"), (dict(dropout=None), "dropout"),
])
def test_bad_architecture_names_the_field(change, field):
    kw = dict(layers=2, hidden=64, heads=8, seq=32, vocab=100, ffn=160, kv_heads=2, tp=2)
    with pytest.raises(ConfigError) as err:
        stage_memory(**{**kw, **change})
    assert err.value.field == field and "accepted" in str(err.value) and "\n" not in str(err.value)
    if field == "tp":
        assert "kv_heads (2)" in str(err.value)


def test_bad_calls_of_the_helpers():
    with pytest.raises(ConfigError) as err:
        block_params(64, 256, kv_heads=2)  # the key width k h / a needs a
    assert err.value.field == "heads"
    with pytest.raises(ConfigError) as err:
        activation_bytes_per_block(32, 1, 64, 4, 1, False, "none", ffn_act="geglu")
    assert err.value.field == "ffn_act"
    with pytest.raises(ConfigError) as err:
        shape_arguments(Model("cnn", ()))
    assert err.value.field == "model"
