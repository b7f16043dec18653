"""Today's dense language models by shape (issue 43, items 1 and 3): grouped-query attention,
SwiGLU, RMSNorm, no biases, untied embeddings and rotary positions; the Llama 3 presets against
their published parameter counts; the config keys and their one-line errors.

Expected values are closed forms written here (the parameter count of a block as the model card's
matrices add up), or the published figures.
"""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fabricsim.errors import ConfigError
from fabricsim.train import load_train_config
from fabricsim.workload.models import get_model
from fabricsim.workload.shapes import transformer

ROOT = Path(__file__).resolve().parents[1]


def _llama_params(L, h, a, k, f, v):
    """Llama's parameters by hand: embedding v h; per block Q h^2, K and V h (k h / a) each, O h^2,
    gate, up and down 3 h f, two RMSNorms h each; final RMSNorm h; untied logits v h."""
    block = h * h + 2 * h * (k * h // a) + h * h + 3 * h * f + 2 * h
    return v * h + L * block + h + v * h


@pytest.mark.parametrize("name,shape,published", [
    ("llama3-8b", (32, 4096, 32, 8, 14336, 128256), 8.03e9),
    ("llama3-70b", (80, 8192, 64, 8, 28672, 128256), 70.6e9),
    ("llama3-405b", (126, 16384, 128, 8, 53248, 128256), 405e9),
])
def test_llama_presets_have_their_published_sizes(name, shape, published):
    m = get_model(name)
    assert m.params == _llama_params(*shape)
    assert m.params / published == pytest.approx(1.0, abs=0.01)
    assert m.shape.kv_heads == 8 and m.shape.ffn_act == "swiglu" and not m.shape.tied_embeddings


def test_llama3_8b_is_8030261248_parameters():
    """The sum the model card rounds to 8.03B, written out: 2 x 128,256 x 4,096 embeddings and logits,
    32 blocks of 218,112,000, and the final norm."""
    assert get_model("llama3-8b").params == 2 * 128256 * 4096 + 32 * 218112000 + 4096 == 8030261248


def test_gpt_defaults_keep_12h2_plus_13h_per_block():
    m = transformer("gpt", 4, 512, 8, 128, 1000)
    h = 512
    assert m.blocks()[0].params == 12 * h * h + 13 * h
    assert m.params == 1000 * h + 128 * h + 4 * (12 * h * h + 13 * h) + 2 * h


def test_grouped_query_attention_and_swiglu_flops_follow_the_parameters():
    """Forward FLOPs of a block: 2 s x its parameters + 4 s^2 h (scores and context: every query
    head attends, so grouped keys change bytes, not these FLOPs)."""
    L, h, a, k, f, s, v = 2, 512, 8, 2, 1376, 256, 1000
    m = transformer("t", L, h, a, s, v, ffn=f, kv_heads=k, ffn_act="swiglu", norm="rmsnorm", bias=False,
                    tied_embeddings=False, position="rope")
    block = h * h + 2 * h * (k * h // a) + h * h + 3 * h * f + 2 * h
    assert m.blocks()[0].params == block
    assert m.blocks()[0].fwd_flops == 2.0 * block * s + 4.0 * s * s * h
    assert m.layers[0].params == v * h  # rotary positions: no position embedding
    assert m.layers[-1].params == h + v * h  # final norm and untied logits
    assert m.layers[-1].fwd_flops == 2.0 * s * h * v


def _config(tmp_path, model) -> Path:
    data = yaml.safe_load((ROOT / "configs/gpt3-175b.yaml").read_text())
    data = copy.deepcopy(data)
    data["workload"]["model"] = model
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_preset_fills_the_keys_not_given(tmp_path):
    m = load_train_config(str(_config(tmp_path, {"preset": "llama3-70b", "seq": 4096}))).workload.build_model()
    assert (m.name, m.seq, m.params) == ("llama3-70b", 4096, _llama_params(80, 8192, 64, 8, 28672, 128256))


@pytest.mark.parametrize("model,field,accepted", [
    ({"layers": 4, "hidden": 256, "heads": 8, "kv_heads": 3, "seq": 128, "vocab": 1000}, "kv_heads",
     "accepted: a divisor of heads = 8"),
    ({"layers": 4, "hidden": 250, "heads": 8, "seq": 128, "vocab": 1000}, "heads", "accepted: a divisor of hidden = 250"),
    ({"layers": 4, "hidden": 256, "heads": 8, "seq": 128, "vocab": 1000, "act": "swiglu"}, "act", "unknown field"),
    ({"layers": 4, "hidden": 256, "heads": 8, "seq": 128, "vocab": 1000, "ffn_act": "relu"}, "ffn_act",
     "accepted: 'gelu' or 'swiglu'"),
    ({"layers": 4, "hidden": 256, "heads": 8, "seq": 128, "vocab": 1000, "norm": "batchnorm"}, "norm",
     "accepted: 'layernorm' or 'rmsnorm'"),
    ({"preset": "llama4"}, "preset", "accepted: llama3-8b, llama3-70b, llama3-405b"),
    ({"hidden": 256}, "layers", "required without a preset"),
])
def test_a_bad_shape_key_is_named(tmp_path, model, field, accepted):
    with pytest.raises(ConfigError) as e:
        load_train_config(str(_config(tmp_path, model)))
    assert str(e.value.field).endswith(f"workload.model.{field}")
    assert accepted in str(e.value)
    assert "Value error" not in str(e.value) and "\n" not in str(e.value)


def test_the_cli_refuses_a_bad_key_in_one_line_with_exit_2(tmp_path):
    path = _config(tmp_path, {"layers": 4, "hidden": 256, "heads": 8, "kv_heads": 3, "seq": 128, "vocab": 1000})
    r = subprocess.run([sys.executable, "-m", "fabricsim", "train", str(path)], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "workload.model.kv_heads" in lines[0] and "a divisor of heads = 8" in lines[0]


def test_the_distributed_optimizer_shards_only_the_optimizer_states():
    """zero: 1 (Megatron-LM's distributed optimizer): optimizer states / dp, gradients and weights
    whole; zero: 2 shards the gradients too. One stage of 2 GPT blocks (h 256, ffn 1024), tp 1,
    dp 4: 2 (12 h^2 + 13 h) + v h + s h + 2h parameters."""
    from fabricsim.workload.memory import stage_memory

    h, v, s, dp = 256, 1000, 128, 4
    params = 2 * (12 * h * h + 13 * h) + v * h + s * h + 2 * h
    kw = dict(layers=2, hidden=h, heads=8, seq=s, vocab=v, dp=dp)
    z0, z1, z2 = (stage_memory(**kw, zero=z)[0] for z in (0, 1, 2))
    assert z0.params == params
    assert (z1.weights, z1.gradients, z1.optimizer) == (2 * params, 4 * params, 12 * params / dp)
    assert (z2.gradients, z2.optimizer) == (4 * params / dp, 12 * params / dp)


def test_the_distributed_optimizer_reduce_scatters_and_all_gathers_each_layers_gradients():
    """Per stage and layer, zero 1 and 2 each run one reduce-scatter and one all-gather of the layer's
    gradient bytes over the replicas, where zero 0 runs one all-reduce of the same bytes."""
    from fabricsim.vocab import CATEGORIES, COLLECTIVES, TaskKind
    from fabricsim.workload.parallelism import Strategy, build_training

    model = transformer("t", 4, 256, 8, 128, 1000)

    def dp_collectives(zero):
        g = build_training(model, Strategy(mp=1, pp=1, dp=4, batch=8, microbatches=2, zero=zero))
        out = {}
        for t in range(len(g)):
            if g.kind[t] == TaskKind.COLLECTIVE and CATEGORIES[g.category[t]] == "DP":
                name = COLLECTIVES[int(g.coll[t])]
                out[name] = out.get(name, 0.0) + float(g.size[t])
        return out

    grads = 2 * model.params  # gradients in the model's dtype (fp16: grad_dtype unset), every layer once
    assert dp_collectives(0) == {"all-reduce": grads}
    assert dp_collectives(1) == dp_collectives(2) == {"reduce-scatter": grads, "all-gather": grads}


def test_zero_4_is_refused_in_one_line(tmp_path):
    data = yaml.safe_load((ROOT / "configs/gpt3-175b.yaml").read_text())
    data["workload"]["parallelism"]["zero"] = 4
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as e:
        load_train_config(str(path))
    assert str(e.value.field).endswith("workload.parallelism.zero")
    assert "accepted: 0, 1, 2 or 3" in str(e.value) and "\n" not in str(e.value)


def _moe_params(L, h, a, k, f, v, E, shared=0, fe=None, dense=(), fd=None):
    """A SwiGLU / RMSNorm / no-bias / untied model's parameters by hand: per MoE block attention
    h^2 + 2h (kh/a) + h^2, router h E, (E + shared) experts of 3 h fe, two norms h; dense blocks
    (`dense`) an MLP of 3 h fd instead."""
    attn = 2 * h * h + 2 * h * (k * h // a)
    moe = attn + h * E + (E + shared) * 3 * h * (fe or f) + 2 * h
    dense_block = attn + 3 * h * (fd or f) + 2 * h
    return 2 * v * h + (L - len(dense)) * moe + len(dense) * dense_block + h


@pytest.mark.parametrize("name,want,published", [
    ("mixtral-8x7b", _moe_params(32, 4096, 32, 8, 14336, 32000, 8), 46.7e9),
    ("mixtral-8x22b", _moe_params(56, 6144, 48, 8, 16384, 32000, 8), 141e9),
    ("deepseek-v3", _moe_params(61, 7168, 128, 128, 18432, 129280, 256, 1, 2048, dense=(0, 1, 2)), 671e9),
])
def test_mixture_of_experts_presets_have_their_published_sizes(name, want, published):
    m = get_model(name)
    assert m.params == want
    assert m.params / published == pytest.approx(1.0, abs=0.01)


def test_a_token_computes_with_its_top_k_experts():
    """Mixtral 8x7B: 12.9B active parameters published (Jiang et al. 2024, Section 2.1); by hand the
    embedding, logits, attention, router and 2 of 8 experts per block. DeepSeek-V3's 37B is matched
    within 5%: its latent attention is approximated by multi-head attention (zoo_llm's doc)."""
    h, f, v, L = 4096, 14336, 32000, 32
    active = 2 * v * h + L * (2 * h * h + 2 * h * 1024 + h * 8 + 2 * 3 * h * f + 2 * h) + h
    m = get_model("mixtral-8x7b")
    assert m.shape.active == active
    assert active / 12.9e9 == pytest.approx(1.0, abs=0.01)
    assert get_model("deepseek-v3").shape.active / 37e9 == pytest.approx(1.0, abs=0.05)
    # a block's forward FLOPs: 2 s x its active parameters + 4 s^2 h
    s = m.seq
    assert m.blocks()[0].fwd_flops == 2.0 * (2 * h * h + 2 * h * 1024 + h * 8 + 2 * 3 * h * f + 2 * h) * s + 4.0 * s * s * h


def test_moe_layers_every_n_and_a_list(tmp_path):
    base = {"layers": 6, "hidden": 256, "heads": 8, "seq": 128, "vocab": 1000, "experts": 4}
    every = load_train_config(str(_config(tmp_path, {**base, "moe_layers": 2}))).workload.model.shape()
    assert every.moe_layers == (1, 3, 5)
    listed = load_train_config(str(_config(tmp_path, {**base, "moe_layers": [0, 5]}))).workload.model.shape()
    assert listed.moe_layers == (0, 5) and listed.top_k == 2


@pytest.mark.parametrize("extra,field,accepted", [
    ({"experts": 4, "top_k": 5}, "top_k", "accepted: at most experts = 4"),
    ({"experts": 4, "moe_layers": [6]}, "moe_layers", "a list of blocks 0..5"),
    ({"experts": 4, "moe_imbalance": 0.5}, "moe_imbalance", "accepted: a number >= 1"),
    ({"experts": 4, "capacity_factor": 0.5}, "capacity_factor", "accepted: 0 (dropless) or a number >= 1"),
])
def test_a_bad_expert_key_is_named(tmp_path, extra, field, accepted):
    model = {"layers": 6, "hidden": 256, "heads": 8, "seq": 128, "vocab": 1000, **extra}
    with pytest.raises(ConfigError) as e:
        load_train_config(str(_config(tmp_path, model)))
    assert str(e.value.field).endswith(f"workload.model.{field}")
    assert accepted in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("kw", [dict(mp=4, pp=2, dp=4, ep=2), dict(mp=1, pp=2, dp=4, ep=4),
                                dict(mp=1, pp=1, dp=4, ep=2, zero=1), dict(mp=2, pp=2, dp=4, ep=4, zero=2, recompute="full"),
                                dict(mp=2, pp=1, dp=2, zero=1)])
@pytest.mark.parametrize("fold", [False, True])
def test_the_task_estimate_counts_expert_and_distributed_optimizer_tasks(kw, fold):
    """`training_tasks` (the `tasks` limit's count before building) equals the built graph's size with
    experts (all-to-alls per EP group, expert-data-parallel syncs) and zero: 1."""
    from fabricsim.workload.estimate import training_tasks
    from fabricsim.workload.parallelism import Strategy, build_training

    m = transformer("moe", 4, 256, 8, 128, 1000, ffn=512, kv_heads=4, ffn_act="swiglu", norm="rmsnorm", bias=False,
                    tied_embeddings=False, position="rope", experts=8, top_k=2)
    st = Strategy(batch=16, microbatches=2, **kw)
    assert training_tasks(m, st, fold) == len(build_training(m, st, fold=fold))
