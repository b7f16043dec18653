"""Model zoo: parameter counts against published sizes, closed forms computed here."""

from __future__ import annotations

import pytest

from fabricsim.errors import ConfigError
from fabricsim.workload import models as M


def rel(a, b):
    return abs(a - b) / b


# ---------------------------------------------------------------- published sizes


def test_resnet50_params_exact_torchvision():
    m = M.resnet50()
    assert m.params == 25_557_032  # torchvision resnet50 sum(p.numel())
    assert rel(m.params, 25.6e6) < 0.01


def test_resnet152_params():
    m = M.resnet152()
    assert m.params == 60_192_808  # torchvision resnet152
    assert rel(m.params, 60.2e6) < 0.01


def test_gpt3_params_published():
    assert rel(M.gpt3_175b().params, 175e9) < 0.01


def test_t17b_and_t1t_params():
    assert rel(M.transformer_17b().params, 17e9) < 0.03
    assert rel(M.transformer_1t().params, 1e12) < 0.03
    assert "ASSUMPTION" in M.transformer_17b().notes
    assert "ASSUMPTION" in M.transformer_1t().notes


# ---------------------------------------------------------------- transformer closed forms


def test_gpt3_closed_form_params():
    L, h, s, v = 96, 12288, 2048, 50257
    per_block = 12 * h * h + 13 * h
    m = M.gpt3_175b()
    blocks = m.blocks()
    assert len(blocks) == L
    assert all(b.params == per_block for b in blocks)
    assert m.params == L * per_block + v * h + s * h + 2 * h
    assert m.params == 174_604_259_328
    assert m.seq == s and m.hidden == h


def test_gpt3_block_flops_closed_form():
    h, s, v = 12288, 2048, 50257
    m = M.gpt3_175b()
    f_block = 2 * s * (12 * h * h + 13 * h) + 4 * s * s * h
    b = m.blocks()[0]
    assert b.fwd_flops == f_block
    assert b.bwd_input_flops == f_block and b.bwd_weight_flops == f_block
    assert m.fwd_flops == 96 * f_block + 2 * s * h * v
    assert m.bwd_flops == 2 * m.fwd_flops
    # sanity: ~ 2 * params * tokens (the "6ND" rule: fwd+bwd = 6 * N * tokens, within 15%)
    assert rel(m.fwd_flops + m.bwd_flops, 6 * m.params * s) < 0.15


def test_transformer_validation():
    with pytest.raises(ConfigError) as e:
        M.transformer("x", 2, 100, 7, 16, 100)
    assert "heads" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ConfigError):
        M.transformer("x", 0, 128, 2, 16, 100)


def test_custom_ffn():
    h, f = 64, 300
    m = M.transformer("t", 1, h, 4, 8, 10, ffn=f)
    assert m.blocks()[0].params == 4 * h * h + 4 * h + 4 * h + 2 * h * f + f + h


# ---------------------------------------------------------------- ResNet FLOPs


def test_resnet50_flops():
    # The commonly cited 4.09 GMACs (fvcore/ptflops, torchvision v1.5 with the stride on the
    # 3x3 conv) counts convs + FC; our shapes give 4,089,184,256 MACs for these layers.
    # Batch norms add 2 FLOPs/element forward (~0.5% more), so the total is within 5% too.
    m = M.resnet50()
    macs = sum(layer.fwd_flops for layer in m.layers if layer.kind in ("conv", "fc")) / 2
    assert macs == 4_089_184_256
    assert rel(m.fwd_flops, 2 * 4.09e9) < 0.05
    # first conv needs no input gradient; everything else backward = 2x forward
    first = m.layers[0]
    assert first.name == "conv1" and first.bwd_input_flops == 0
    assert first.params == 7 * 7 * 3 * 64
    assert first.activation_elems == 64 * 112 * 112
    fc = m.layers[-1]
    assert fc.params == 2048 * 1000 + 1000 and fc.activation_elems == 1000


# ---------------------------------------------------------------- GNMT and DLRM (shape sums)


def test_gnmt_shape_sum():
    h, v, L = 1024, 32000, 8
    lstm = lambda i: 4 * ((i + h) * h + h)
    expect = (
        2 * v * h  # src + tgt embeddings
        + 2 * lstm(h)  # bidirectional first encoder layer
        + lstm(2 * h)
        + (L - 2) * lstm(h)
        + (2 * h * h + h)  # attention
        + L * lstm(2 * h)  # decoder (input + context)
        + h * v + v  # softmax
    )
    m = M.gnmt()
    assert m.params == expect == 280_858_880
    assert m.bwd_flops == 2 * m.fwd_flops  # no input-grad-free layers except embeddings (0 FLOPs)


def test_dlrm_shape_sum():
    m = M.dlrm()
    emb = sum(M.CRITEO_KAGGLE_ROWS) * 16
    assert sum(M.CRITEO_KAGGLE_ROWS) == 33_762_577
    mlp = (13 * 512 + 512) + (512 * 256 + 256) + (256 * 64 + 64) + (64 * 16 + 16)
    mlp += (367 * 512 + 512) + (512 * 256 + 256) + (256 * 1 + 1)  # 367 = 27*26/2 + 16
    assert m.params == emb + mlp
    embs = [la for la in m.layers if la.kind == "embedding"]
    assert len(embs) == 26 and all(la.fwd_flops == 0 for la in embs)
    assert "alltoall" in m.notes


# ---------------------------------------------------------------- traffic helpers


def test_megatron_mp_traffic():
    b, s, h, nbytes = 4, 2048, 12288, 2
    m = M.gpt3_175b()
    fwd, bwd, total = M.megatron_mp_allreduce_bytes(m, b, 2, nbytes)
    assert fwd == 2 * b * s * h * nbytes
    assert bwd == 2 * b * s * h * nbytes
    assert total == 96 * 4 * b * s * h * nbytes
    # default dtype bytes from the model; fp32 doubles
    assert M.megatron_mp_allreduce_bytes(m, b, 2) == (fwd, bwd, total)
    assert M.megatron_mp_allreduce_bytes(m.with_dtype("fp32"), b, 2)[0] == 2 * fwd
    assert M.megatron_mp_allreduce_bytes(m, b, 1) == (0, 0, 0)
    with pytest.raises(ConfigError):
        M.megatron_mp_allreduce_bytes(M.resnet50(), b, 2)


def test_zero2_bytes():
    m = M.resnet152()
    rs, ag, wire = M.zero2_bytes(m, 20)
    assert rs == ag == 60_192_808 * 2
    assert wire == pytest.approx(2 * 19 / 20 * 60_192_808 * 2)


# ---------------------------------------------------------------- dtype, batch, registry


def test_dtype_param_bytes():
    m = M.resnet50()
    assert m.param_bytes == 2 * m.params
    assert M.resnet50("bf16").param_bytes == m.param_bytes
    assert M.get_model("resnet50", dtype="fp32").param_bytes == 2 * m.param_bytes
    with pytest.raises(ConfigError) as e:
        M.resnet50("int8")
    msg = str(e.value)
    assert "\n" not in msg and "dtype" in msg and "fp16" in msg and "int8" in msg


def test_batch_scales_linearly():
    m = M.resnet50()
    layers = m.batch(32)
    assert sum(la.fwd_flops for la in layers) == pytest.approx(32 * m.fwd_flops)
    assert sum(la.bwd_flops for la in layers) == pytest.approx(32 * m.bwd_flops)
    assert sum(la.params for la in layers) == m.params
    assert layers[0].activation_elems == 32 * m.layers[0].activation_elems
    with pytest.raises(ConfigError):
        m.batch(0)


def test_registry():
    assert set(M.MODELS) == {
        "resnet50", "resnet152", "gnmt", "dlrm", "gpt3-175b", "transformer-17b", "transformer-1t",
        "vgg16", "dlrm-topoopt", "candle-uno", "ncf", "bert-topoopt", "llama3-8b", "llama3-70b", "llama3-405b",
        "mixtral-8x7b", "mixtral-8x22b", "deepseek-v3",
    }
    for name in M.MODELS:
        m = M.get_model(name)
        assert m.name == name and m.params > 0 and m.fwd_flops > 0
    with pytest.raises(ConfigError) as e:
        M.get_model("bert")
    msg = str(e.value)
    assert "\n" not in msg and "model" in msg and "bert" in msg and "gpt3-175b" in msg
