"""TopoOpt model zoo: parameter counts and FLOPs as closed forms written here from the shapes."""

from __future__ import annotations

import pytest

from fabricsim.errors import ConfigError
from fabricsim.workload import models as M
from fabricsim.workload import zoo_topoopt as Z
from fabricsim.workload.parallelism import Strategy, build_training

NAMES = ("vgg16", "dlrm-topoopt", "candle-uno", "ncf", "bert-topoopt")


def fc(a, b, bias=True):
    return a * b + (b if bias else 0)


def by_kind(m, kind):
    return [la for la in m.layers if la.kind == kind]


# ---------------------------------------------------------------- VGG-16


def test_vgg16_params_exact_torchvision():
    conv = lambda ci, co: 9 * ci * co + co
    convs = [(3, 64), (64, 64), (64, 128), (128, 128), (128, 256), (256, 256), (256, 256),
             (256, 512), (512, 512), (512, 512), (512, 512), (512, 512), (512, 512)]
    expect = sum(conv(a, b) for a, b in convs) + fc(512 * 7 * 7, 4096) + fc(4096, 4096) + fc(4096, 1000)
    m = Z.vgg16()
    assert m.params == expect == 138_357_544  # torchvision vgg16 sum(p.numel())
    assert len(by_kind(m, "conv")) == 13 and len(by_kind(m, "fc")) == 3


def test_vgg16_macs():
    # conv MACs = 9 * cin * cout * hw^2 at 224, 112, 56, 28, 14; FC MACs = a * b
    hw_convs = [(224, 3, 64), (224, 64, 64), (112, 64, 128), (112, 128, 128),
                (56, 128, 256), (56, 256, 256), (56, 256, 256),
                (28, 256, 512), (28, 512, 512), (28, 512, 512),
                (14, 512, 512), (14, 512, 512), (14, 512, 512)]
    conv_macs = sum(9 * ci * co * hw * hw for hw, ci, co in hw_convs)
    fc_macs = 25088 * 4096 + 4096 * 4096 + 4096 * 1000
    assert conv_macs == 15_346_630_656 and fc_macs == 123_633_664
    m = Z.vgg16()
    assert m.fwd_flops == 2 * (conv_macs + fc_macs) == 30_940_528_640  # 15.47 GMACs
    first = m.layers[0]
    assert first.name == "conv1_1" and first.bwd_input_flops == 0 and first.activation_elems == 64 * 224 * 224
    assert m.bwd_flops == 2 * m.fwd_flops - first.fwd_flops
    assert m.layers[-1].activation_elems == 1000
    assert m.input_bytes == 3 * 224 * 224 * 2


# ---------------------------------------------------------------- DLRM (TopoOpt size)


def test_dlrm_topoopt_params():
    emb = 64 * 10_000_000 * 128
    bottom = 7 * fc(2048, 2048)  # dense input 2048, then 7 layers (FlexFlow --arch-mlp-bot 2048 x 8)
    cat = 2048 + 64 * 128
    top = fc(cat, 4096) + 14 * fc(4096, 4096) + fc(4096, 1)  # 16 layers
    m = M.get_model("dlrm-topoopt")
    embs = by_kind(m, "embedding")
    assert len(embs) == 64 and all(la.params == 10_000_000 * 128 and la.activation_elems == 128 for la in embs)
    assert sum(la.params for la in embs) == emb == 81_920_000_000
    assert m.params == emb + bottom + top == 82_226_264_065
    assert len(by_kind(m, "fc")) == 7 + 16
    (inter,) = by_kind(m, "interaction")
    assert inter.activation_elems == cat == 10240 and inter.fwd_flops == 0
    assert m.fwd_flops == 2 * (7 * 2048 * 2048 + cat * 4096 + 14 * 4096 * 4096 + 4096)
    assert "alltoall" in m.notes and "bag=100" in m.notes and "ASSUMPTION" in m.notes
    assert m.layers[0].bwd_input_flops == 0  # dense input: no input gradient
    assert m.input_bytes == 2048 * 2 + 64 * 100 * 8


def test_dlrm_topoopt_parameters():
    m = Z.dlrm_topoopt(tables=4, rows=1000, dim=16, bag=7, bottom=(32, 64), top=(8, 1))
    assert m.params == 4 * 1000 * 16 + fc(32, 64) + fc(64 + 4 * 16, 8) + fc(8, 1)
    assert "bag=7" in m.notes
    with pytest.raises(ConfigError):
        Z.dlrm_topoopt(bottom=(2048,))
    with pytest.raises(ConfigError):
        Z.dlrm_topoopt(bag=0)


# ---------------------------------------------------------------- CANDLE Uno


def test_candle_uno_params_and_flops():
    w = 16384
    inputs = [942, 5270, 2048, 5270, 2048]  # cell.rnaseq, drug1/2 descriptors, drug1/2 fingerprints
    towers = sum(fc(i, w) + 15 * fc(w, w) for i in inputs)
    cat = 5 * w + 2  # + dose1, dose2
    dense = fc(cat, w) + 7 * fc(w, w) + fc(w, 1)
    m = M.get_model("candle-uno")
    assert m.params == towers + dense == 23_610_605_569
    macs = sum(i * w + 15 * w * w for i in inputs) + cat * w + 7 * w * w + w
    assert m.fwd_flops == 2 * macs
    assert len(by_kind(m, "fc")) == 5 * 16 + 8 + 1
    firsts = [la for la in m.layers if la.name.endswith(".fc0")]
    assert len(firsts) == 5 and all(la.bwd_input_flops == 0 for la in firsts)
    assert m.bwd_flops == 2 * m.fwd_flops - sum(la.fwd_flops for la in firsts)
    assert m.input_bytes == (sum(inputs) + 2) * 2
    assert "ASSUMPTION" in m.notes and "alltoall" not in m.notes


def test_candle_uno_shared_drug_towers():
    w = 16384
    base, shared = Z.candle_uno(), Z.candle_uno(share_drug_towers=True)
    assert base.params - shared.params == fc(5270, w) + fc(2048, w) + 2 * 15 * fc(w, w)
    assert shared.fwd_flops == base.fwd_flops


# ---------------------------------------------------------------- NCF


def test_ncf_params_and_flops():
    tables, n, factor, dim = 32, 1_000_000, 64, 128
    emb = tables * (n * factor + n * factor + n * dim + n * dim)  # user/item GMF + user/item MLP
    cat = 2 * tables * dim  # 8192
    mlp = fc(cat, 4096) + 6 * fc(4096, 4096)  # 7 layers (FlexFlow --arch-mlp-top 4096 x 8)
    gmf = fc(tables * factor, 1, bias=False)
    predict = fc(1 + 4096, 1)
    m = M.get_model("ncf")
    embs = by_kind(m, "embedding")
    assert len(embs) == 2 * tables and sum(la.params for la in embs) == emb == 12_288_000_000
    assert m.params == emb + mlp + gmf + predict == 12_422_252_546
    macs = cat * 4096 + 6 * 4096 * 4096 + 2048 + 4097
    assert m.fwd_flops == 2 * macs + tables * factor  # + GMF elementwise product
    assert "alltoall" in m.notes and "bag=100" in m.notes and "ASSUMPTION" in m.notes


# ---------------------------------------------------------------- BERT (TopoOpt size)


def test_bert_topoopt_closed_form():
    L, h, s, v = 12, 1024, 64, 30522
    per_block = 12 * h * h + 13 * h
    m = M.get_model("bert-topoopt")
    assert len(m.blocks()) == L and m.seq == s and m.hidden == h
    assert m.params == L * per_block + v * h + s * h + 2 * h == 182_476_800
    assert m.fwd_flops == L * (2 * s * per_block + 4 * s * s * h) + 2 * s * h * v
    assert "alltoall" not in m.notes


# ---------------------------------------------------------------- FC layers, dtype, registry


@pytest.mark.parametrize("name", NAMES)
def test_fc_layers_2ab_flops_per_sample(name):
    m = M.get_model(name)
    for la in by_kind(m, "fc"):
        b = la.activation_elems
        a = la.fwd_flops / (2 * b)
        assert a == int(a) and la.params in (a * b, a * b + b)
        assert la.bwd_weight_flops == la.fwd_flops


@pytest.mark.parametrize("name", NAMES)
def test_registry_and_dtype(name):
    m = M.get_model(name)
    assert m.name == name and M.MODELS[name] is Z.TOPOOPT_MODELS[name]
    assert m.params > 0 and m.fwd_flops > 0 and m.dtype == "fp16"
    m32 = M.get_model(name, dtype="fp32")
    assert m32.dtype == "fp32" and m32.params == m.params
    assert m32.param_bytes == 2 * m.param_bytes
    assert M.get_model(name, dtype="bf16").param_bytes == m.param_bytes
    with pytest.raises(ConfigError):
        M.get_model(name, dtype="int8")


@pytest.mark.parametrize("name", NAMES)
def test_builds_a_training_graph(name):
    g = build_training(M.get_model(name), Strategy(dp=4, batch=16))
    assert g.n_npus == 4 and g.meta["model"] == name
