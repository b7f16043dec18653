"""The kernels of modern transformer shapes (`workload.kernels` with the `TransformerShape` keys, and
`workload.plan` from `Model.shape`): grouped-query attention, SwiGLU, RMSNorm, no biases, rotary
positions; and the GPT defaults exactly as before.

Expected values are closed forms written here, never the code under test."""

from __future__ import annotations

import pytest

from fabricsim.errors import ConfigError
from fabricsim.system.compute import Attention, Gemm, Memory
from fabricsim.workload.kernels import (GroupedAttention, attention_forward, backward, embedding_forward, flops,
                                        head_forward, memory_bytes, mlp_forward, selective_recompute)
from fabricsim.workload.plan import by_shape, plan_layers
from fabricsim.workload.shapes import transformer
from fabricsim.workload.strategy import Strategy

# the small grouped-query shape of the brief: h, a, k, f, s, b, t
H, A, KV, F, S, B, T = 512, 8, 2, 1376, 256, 2, 2
D = H // A  # 64


def modern_block(b=B, s=S, h=H, a=A, k=KV, f=F, t=T, sp=False, d=2, *, bias=False, act="swiglu", norm="rmsnorm",
                 rope=True, fused=False):
    return (attention_forward(b, s, h, a, t, sp, d, fused, kv_heads=k, bias=bias, norm=norm, rope=rope)
            + mlp_forward(b, s, h, f, t, sp, d, act=act, bias=bias, norm=norm))


def gemms(kernels):
    return [k for k in kernels if isinstance(k, Gemm)]


def mems(kernels):
    return {k.name: (k.nbytes, k.bwd_nbytes) for k in kernels if isinstance(k, Memory)}


def test_gqa_qkv_and_swiglu_gemm_dims():
    # QKV outputs h + 2 k h / a = 512 + 2 * 2 * 64 = 768, split over t = 2 query-group ranks: 384
    assert gemms(attention_forward(B, S, H, A, T, kv_heads=KV, bias=False, norm="rmsnorm", rope=True)) == [
        Gemm(B * S, 384, H),
        Gemm(S, S, D, count=B * A // T), Gemm(S, D, S, count=B * A // T),   # every query head attends
        Gemm(B * S, H, H // T),
    ]
    # fused fc1: gate and up, 2 f / t = 1376 outputs; fc2 from f / t = 688
    assert gemms(mlp_forward(B, S, H, F, T, act="swiglu", bias=False, norm="rmsnorm")) == [
        Gemm(B * S, 1376, H), Gemm(B * S, H, 688)]


@pytest.mark.parametrize("b, s, h, a, k, f, t", [(B, S, H, A, KV, F, T), (1, 128, 256, 4, 1, 688, 1),
                                                 (3, 64, 1024, 16, 4, 2816, 4), (1, 2048, 4096, 32, 8, 14336, 8)])
@pytest.mark.parametrize("act", ["swiglu", "gelu"])
@pytest.mark.parametrize("bias", [False, True])
def test_block_gemm_flops_are_weights_plus_core(b, s, h, a, k, f, t, act, bias):
    mats = 3 if act == "swiglu" else 2
    weights = h * (h + 2 * k * h // a) + h * h + mats * h * f  # one block's linear weights
    core = 4 * b * s * s * h // t  # scores and context of every query head
    kernels = modern_block(b, s, h, a, k, f, t, bias=bias, act=act)
    assert flops(kernels) == 2 * b * s * weights // t + core
    assert flops(backward(kernels)) == 2 * flops(kernels)


def test_memory_kernels_of_a_llama_block():
    d = 2
    att = attention_forward(B, S, H, A, T, False, d, kv_heads=KV, bias=False, norm="rmsnorm", rope=True)
    rot = 2 * B * S * (H + KV * D) // T * d  # read and write the query and key heads of this rank
    rep = 2 * B * S * (KV + A) * D // T * d  # read k / t key and value heads, write them as a / t heads
    sc = B * (A // T) * S * S  # score elements
    assert mems(att) == {
        "input RMSNorm": (2 * B * S * H * d, 5 * B * S * H * d),  # a layer norm's passes
        "rotary embedding": (rot, rot),
        "K/V repeat": (rep, rep),
        "softmax": (2 * sc * d, 3 * sc * d),
        "attention dropout": (sc * (2 * d + 1), sc * (2 * d + 1)),
        "attention dropout-add": (B * S * H * (3 * d + 1), 2 * B * S * H * (3 * d + 1)),
    }
    mlp = mlp_forward(B, S, H, F, T, False, d, act="swiglu", bias=False, norm="rmsnorm")
    assert mems(mlp) == {
        "post-attention RMSNorm": (2 * B * S * H * d, 5 * B * S * H * d),
        # reads gate and up (2 f / t), writes f / t; backward reads dy (f / t) and the input, writes 2 f / t
        "SwiGLU": (3 * B * S * (F // T) * d, 5 * B * S * (F // T) * d),
        "MLP dropout-add": (B * S * H * (3 * d + 1), 2 * B * S * H * (3 * d + 1)),
    }


def test_no_bias_kernels_without_biases():
    no_bias = {k.name for k in modern_block(bias=False) + modern_block(bias=False, act="gelu") if isinstance(k, Memory)}
    assert not any("bias" in name for name in no_bias)
    assert {"SwiGLU", "GeLU"} <= no_bias
    with_bias = modern_block(bias=True)
    qkv_bias = [k for k in with_bias if isinstance(k, Memory) and k.name == "QKV bias add"]
    assert qkv_bias == [Memory(2 * B * S * 384 * 2, "QKV bias add", backward_bytes=B * S * 384 * 2)]
    assert "bias-SwiGLU" in {k.name for k in with_bias if isinstance(k, Memory)}
    assert gemms(with_bias) == gemms(modern_block(bias=False))  # biases add no GEMM


def test_gpt_defaults_are_the_kernels_of_before():
    """Today's list for b=1, s=128, h=256, a=4, ffn=1024, t=2, fp16, written out by hand."""
    b, s, h, a, f, t, d = 1, 128, 256, 4, 1024, 2, 2
    sc = b * a // t * s * s
    before = (
        Memory(2 * b * s * h * d, "input layer norm", backward_bytes=5 * b * s * h * d),
        Gemm(128, 384, 256),
        Memory(2 * b * s * 384 * d, "QKV bias add", backward_bytes=b * s * 384 * d),
        Gemm(128, 128, 64, count=2),
        Memory(2 * sc * d, "softmax", backward_bytes=3 * sc * d),
        Memory(sc * (2 * d + 1), "attention dropout", backward_bytes=sc * (2 * d + 1)),
        Gemm(128, 64, 128, count=2),
        Gemm(128, 256, 128),
        Memory(b * s * h * (3 * d + 1), "attention dropout-add"),
        Memory(2 * b * s * h * d, "post-attention layer norm", backward_bytes=5 * b * s * h * d),
        Gemm(128, 512, 256),
        Memory(2 * b * s * 512 * d, "bias-GeLU"),
        Gemm(128, 256, 512),
        Memory(b * s * h * (3 * d + 1), "MLP dropout-add"),
    )
    plain = attention_forward(b, s, h, a, t) + mlp_forward(b, s, h, f, t)
    explicit = (attention_forward(b, s, h, a, t, kv_heads=a, bias=True, norm="layernorm", rope=False)
                + mlp_forward(b, s, h, f, t, act="gelu", bias=True, norm="layernorm"))
    assert plain == explicit == before
    assert selective_recompute(b, s, h, a, t) == before[3:7]
    assert attention_forward(b, s, h, a, t, fused=True)[3] == Attention(s, h // a, b * a // t)
    assert [k.name for k in embedding_forward(b, s, h, t)] == ["embedding gather", "position embedding add",
                                                               "embedding dropout"]
    assert head_forward(b, s, h, 512, t)[0].name == "final layer norm"


def test_rotary_positions_add_nothing_to_the_embedding():
    b, s, h, t, d = 2, 64, 32, 4, 2
    rope = embedding_forward(b, s, h, t, False, d, rope=True)
    assert [(k.name, k.nbytes) for k in rope] == [("embedding gather", 2 * b * s * h * d),
                                                  ("embedding dropout", b * s * h * (2 * d + 1))]
    rms = head_forward(b, s, h, 1024, t, d, norm="rmsnorm")
    assert rms[0] == Memory(2 * b * s * h * d, "final RMSNorm", backward_bytes=5 * b * s * h * d)
    assert rms[1:] == head_forward(b, s, h, 1024, t, d)[1:]


def test_fused_grouped_attention_reads_fewer_keys_and_values():
    b, s, h, a, k, t, d = 2, 1024, 4096, 32, 8, 4, 2
    hd = h // a
    (att,) = selective_recompute(b, s, h, a, t, d, fused=True, kv_heads=k)
    assert isinstance(att, GroupedAttention) and (att.count, att.kv_count) == (b * a // t, b * k // t)
    assert att.flops == 4 * s * s * hd * (b * a // t) / 2  # causal: every query head, half the scores
    # Q and the output of b a / t heads, K and V of b k / t heads
    assert memory_bytes([att], d) == 2 * (b * a // t + b * k // t) * s * hd * d
    (bwd,) = backward([att])
    assert isinstance(bwd, GroupedAttention) and bwd.backward and bwd.kv_count == b * k // t
    assert bwd.flops == 2.5 * att.flops
    # the unfused core with a repeat first
    core = selective_recompute(b, s, h, a, t, d, kv_heads=k)
    assert core[0].name == "K/V repeat" and flops(core) == 4 * b * s * s * h // t


def test_sequence_parallel_divides_the_rmsnorm():
    plain, sp = modern_block(), modern_block(sp=True)
    split = {"input RMSNorm", "attention dropout-add", "post-attention RMSNorm", "MLP dropout-add"}
    for k0, k1 in zip(plain, sp, strict=True):
        if isinstance(k0, Memory) and k0.name in split:
            assert k1.nbytes * T == k0.nbytes
        else:
            assert k1 == k0


def llama(kv_heads=KV, tied_embeddings=False):
    return transformer("tiny-llama", 2, H, A, S, 1000, ffn=F, kv_heads=kv_heads, ffn_act="swiglu", norm="rmsnorm",
                       bias=False, tied_embeddings=tied_embeddings, position="rope", dtype="bf16")


def test_plan_takes_the_shape_and_splits_the_block_flops():
    model, mb = llama(), 2
    plans = plan_layers(model, Strategy(mp=T, batch=mb))  # one data-parallel rank, one microbatch of 2
    attn, mlp = plans[1].parts
    block = 2 * S * (H * 768 + H * H + 3 * H * F + 2 * H) + 4 * S * S * H  # rmsnorm weights, no biases
    assert attn.fwd_flops == (2 * S * (H * 768 + H * H) + 4 * S * S * H) * mb / T
    assert attn.fwd_flops + mlp.fwd_flops == block * mb / T
    assert attn.fwd_work[1] == Gemm(mb * S, 384, H) and attn.fwd_work[2].name == "rotary embedding"
    assert mlp.fwd_work[1] == Gemm(mb * S, 1376, H) and mlp.fwd_work[2].name == "SwiGLU"
    assert [k.name for k in plans[0].parts[0].fwd_work] == ["embedding gather", "embedding dropout"]
    # untied: the head owns v h parameters, and runs the same logits GEMM
    tied = plan_layers(llama(tied_embeddings=True), Strategy(mp=T, batch=mb))
    assert plans[-1].parts[0].fwd_work == tied[-1].parts[0].fwd_work
    assert plans[-1].params == tied[-1].params + 1000 * H / T


def test_plan_of_gpt_keeps_its_flop_split():
    h, a, s = 256, 4, 128
    model = transformer("tiny-gpt", 2, h, a, s, 1000)
    attn, mlp = plan_layers(model, Strategy(mp=2))[1].parts
    assert attn.fwd_flops == (8 * s * h * h + 4 * s * s * h) / 2
    assert attn.fwd_flops + mlp.fwd_flops == (2 * s * (12 * h * h + 13 * h) + 4 * s * s * h) / 2
    assert attn.fwd_work[1] == Gemm(s, 3 * h // 2, h) and attn.fwd_work[2].name == "QKV bias add"


def test_kv_heads_must_split_over_tensor_ranks():
    model = llama(kv_heads=2)
    assert by_shape(model, 2) and not by_shape(model, 4)
    with pytest.raises(ConfigError) as err:
        plan_layers(model, Strategy(mp=4))
    assert (err.value.field, err.value.value) == ("parallelism.mp", 4)
    assert str(err.value).startswith("parallelism.mp: invalid value 4; accepted: a divisor of kv_heads=2")
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError) as err:
        attention_forward(1, 64, H, A, 4, kv_heads=2)
    assert err.value.field == "kernels.t"


@pytest.mark.parametrize("call, field", [
    (lambda: attention_forward(1, 64, H, A, 1, kv_heads=3), "kernels.kv_heads"),   # 3 does not divide 8 heads
    (lambda: attention_forward(1, 64, H, A, 1, norm="batchnorm"), "kernels.norm"),
    (lambda: attention_forward(1, 64, H, A, 1, bias=1), "kernels.bias"),
    (lambda: attention_forward(1, 64, H, A, 1, rope="yes"), "kernels.rope"),
    (lambda: mlp_forward(1, 64, H, F, 1, act="relu"), "kernels.act"),
    (lambda: embedding_forward(1, 64, H, 1, rope=None), "kernels.rope"),
    (lambda: head_forward(1, 64, H, 512, 1, norm="rms"), "kernels.norm"),
])
def test_bad_keys_name_the_field(call, field):
    with pytest.raises(ConfigError) as err:
        call()
    assert err.value.field == field
