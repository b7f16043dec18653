"""The kernels of a transformer layer as Megatron-LM runs them (`workload.kernels`): GEMM FLOPs in
closed form, the backward rules, selective recompute, what sequence parallelism divides, bad input.

Expected values are closed forms written here, never the code under test."""

from __future__ import annotations

import pytest

from fabricsim.errors import ConfigError
from fabricsim.system.compute import Gemm, Memory
from fabricsim.workload.kernels import (attention_forward, backward, embedding_forward, flops, head_forward,
                                        memory_bytes, mlp_forward, selective_recompute)

# (b, s, h, a, ffn, t): GPT-3 175B and 22B as Korthikanti et al. run them, and a small odd one
CONFIGS = [(1, 2048, 12288, 96, 4 * 12288, 8), (4, 2048, 6144, 64, 4 * 6144, 8), (2, 512, 1024, 16, 3072, 4),
           (3, 128, 256, 4, 1024, 1)]
SP_NAMES = {"input layer norm", "attention dropout-add", "post-attention layer norm", "MLP dropout-add"}


def layer(b, s, h, a, ffn, t, sp=False, dtype_bytes=2):
    return attention_forward(b, s, h, a, t, sp, dtype_bytes) + mlp_forward(b, s, h, ffn, t, sp, dtype_bytes)


@pytest.mark.parametrize("b, s, h, a, ffn, t", CONFIGS)
def test_forward_gemm_flops_closed_form(b, s, h, a, ffn, t):
    expected = 2 * b * s * (4 * h * h + 2 * h * ffn) // t + 4 * b * s * s * h // t
    assert flops(layer(b, s, h, a, ffn, t)) == expected
    assert flops(layer(b, s, h, a, ffn, t, sp=True)) == expected


@pytest.mark.parametrize("b, s, h, a, ffn, t", CONFIGS)
def test_backward_flops_are_twice_the_forward(b, s, h, a, ffn, t):
    fwd = layer(b, s, h, a, ffn, t)
    assert flops(backward(fwd)) == 2 * flops(fwd)
    ends = embedding_forward(b, s, h, t) + head_forward(b, s, h, 512 * t, t)
    assert flops(backward(ends)) == 2 * flops(ends) == 2 * 2 * b * s * 512 * h


@pytest.mark.parametrize("b, s, h, a, ffn, t", CONFIGS)
def test_selective_recompute_flops(b, s, h, a, ffn, t):
    kernels = selective_recompute(b, s, h, a, t)
    assert flops(kernels) == 4 * b * s * s * h // t
    assert [type(k) for k in kernels] == [Gemm, Memory, Memory, Gemm]
    assert {k.name for k in kernels if isinstance(k, Memory)} == {"softmax", "attention dropout"}


def test_backward_rules():
    fwd = (Gemm(2, 3, 5, 7), Memory(100.0, "ln"), Gemm(11, 13, 17))
    assert backward(fwd) == (Gemm(11, 17, 13), Gemm(17, 13, 11),       # dX = dY W^T, dW = X^T dY
                             Memory(200.0, "ln backward"),
                             Gemm(2, 5, 3, 7), Gemm(5, 3, 2, 7))
    with pytest.raises(ConfigError):
        backward([Gemm(1, 1, 1), "softmax"])


def test_attention_and_mlp_shapes_and_bytes():
    b, s, h, a, ffn, t, d = 2, 256, 512, 8, 2048, 4, 2
    att = attention_forward(b, s, h, a, t, False, d)
    assert [k for k in att if isinstance(k, Gemm)] == [
        Gemm(b * s, 3 * h // t, h), Gemm(s, s, h // a, b * a // t), Gemm(s, h // a, s, b * a // t), Gemm(b * s, h, h // t)]
    by_name = {k.name: k.nbytes for k in att if isinstance(k, Memory)}
    assert by_name == {"input layer norm": 2 * b * s * h * d, "QKV bias add": 2 * b * s * (3 * h // t) * d,
                       "softmax": 2 * b * (a // t) * s * s * d,
                       "attention dropout": b * (a // t) * s * s * (2 * d + 1),
                       "attention dropout-add": b * s * h * (3 * d + 1)}
    # backward bytes as each kernel's implementation moves them (module doc): layer norm 5 passes,
    # the bias gradient one read, softmax 3 passes, dropout its forward's bytes, dropout-add twice
    bwd = {k.name: k.nbytes for k in backward(att) if isinstance(k, Memory)}
    assert bwd == {"input layer norm backward": 5 * b * s * h * d, "QKV bias add backward": b * s * (3 * h // t) * d,
                   "softmax backward": 3 * b * (a // t) * s * s * d,
                   "attention dropout backward": b * (a // t) * s * s * (2 * d + 1),
                   "attention dropout-add backward": 2 * b * s * h * (3 * d + 1)}
    mlp = mlp_forward(b, s, h, ffn, t, False, d)
    assert [k for k in mlp if isinstance(k, Gemm)] == [Gemm(b * s, ffn // t, h), Gemm(b * s, h, ffn // t)]
    assert {k.name: k.nbytes for k in mlp if isinstance(k, Memory)} == {
        "post-attention layer norm": 2 * b * s * h * d, "bias-GeLU": 2 * b * s * (ffn // t) * d,
        "MLP dropout-add": b * s * h * (3 * d + 1)}


@pytest.mark.parametrize("b, s, h, a, ffn, t", [c for c in CONFIGS if c[5] > 1])
def test_sequence_parallel_divides_only_norm_dropout_and_residual(b, s, h, a, ffn, t):
    plain, sp = layer(b, s, h, a, ffn, t), layer(b, s, h, a, ffn, t, sp=True)
    assert len(plain) == len(sp)
    for k0, k1 in zip(plain, sp):
        if isinstance(k0, Memory) and k0.name in SP_NAMES:
            assert k1.name == k0.name and k1.nbytes * t == k0.nbytes
        else:
            assert k1 == k0
    assert sum(isinstance(k, Memory) and k.name in SP_NAMES for k in plain) == 4


def test_sequence_parallel_in_embedding_and_head():
    b, s, h, v, t, d = 2, 64, 32, 1024, 4, 2
    e0, e1 = embedding_forward(b, s, h, t, False, d), embedding_forward(b, s, h, t, True, d)
    assert [k.nbytes for k in e0] == [2 * b * s * h * d, 3 * b * s * h * d, b * s * h * (2 * d + 1)]
    assert [k.nbytes for k in e1] == [2 * b * s * h * d, 3 * b * s * h * d, b * s * h * (2 * d + 1) / t]
    h0, h1 = head_forward(b, s, h, v, t, d), head_forward(b, s, h, v, t, d, sp=True)
    assert h0[0].nbytes == 2 * b * s * h * d and h1[0].nbytes * t == h0[0].nbytes and h0[1:] == h1[1:]
    assert h0[1] == Gemm(b * s, v // t, h)
    # fp32 cross-entropy: cast (d + 4), max (4), subtract (8), exp (8), sum (4), normalize (8) per logit
    assert sum(k.nbytes for k in h0[2:]) == b * s * v // t * (d + 36)


def test_memory_bytes_and_flops_of_a_list():
    kernels = (Gemm(2, 3, 5), Memory(7.0), Gemm(1, 1, 1, count=4))
    assert flops(kernels) == 2 * 2 * 3 * 5 + 2 * 4
    assert memory_bytes(kernels, 2) == (2 * 5 + 5 * 3 + 2 * 3) * 2 + 7 + 3 * 4 * 2


@pytest.mark.parametrize("call", [
    lambda: attention_forward(1, 2048, 12288, 96, 5),           # 5 does not divide 96 heads
    lambda: mlp_forward(1, 2048, 1024, 1000, 16),                # 16 does not divide ffn=1000
    lambda: selective_recompute(1, 2048, 1024, 16, 3),
    lambda: head_forward(1, 2048, 1024, 50257, 8),               # unpadded vocabulary
    lambda: attention_forward(1, 2050, 1024, 16, 4, True),       # sp needs t | s
    lambda: mlp_forward(1, 2048, 1024, 4096, 0),
])
def test_bad_tensor_parallel_degree(call):
    with pytest.raises(ConfigError) as err:
        call()
    assert err.value.field == "kernels.t"


@pytest.mark.parametrize("call, field", [
    (lambda: attention_forward(1, 2048, 1000, 16, 1), "kernels.a"),   # heads must divide hidden
    (lambda: attention_forward(0, 2048, 1024, 16, 1), "kernels.b"),
    (lambda: mlp_forward(1, 2048, 1024, 4096.0, 1), "kernels.ffn"),
    (lambda: embedding_forward(1, 2048, 1024, 8, 2), "kernels.sp"),  # dtype passed where sp goes
    (lambda: head_forward(1, 2048, 1024, 512, 8, 2, sp=1), "kernels.sp"),
])
def test_bad_sizes_name_the_field(call, field):
    with pytest.raises(ConfigError) as err:
        call()
    assert err.value.field == field
