"""FSDP / ZeRO-3 (`parallelism.zero: 3`, `workload.emitter` module doc).

Per iteration, on each stage and MP rank's DP group: an all-gather of every layer with parameters
before each microbatch's forward and (resharding, FSDP's default) again before its backward, of the
layer's parameters x dtype bytes; one reduce-scatter of its gradients after the last microbatch's
backward; no all-reduce and no all-gather after the optimizer. Expected values are closed forms.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from fabricsim.engine import CommPricer, simulate
from fabricsim.errors import ConfigError
from fabricsim.system import NPU, Scheduling, System
from fabricsim.topology import parse_topology
from fabricsim.vocab import CATEGORIES, COLLECTIVES, TaskKind
from fabricsim.workload.estimate import training_tasks
from fabricsim.workload.parallelism import Strategy, build_training
from fabricsim.workload.shapes import transformer

ROOT = Path(__file__).resolve().parents[1]
H, S, V, L = 256, 128, 1000, 4
MODEL = transformer("t", L, H, 8, S, V)  # 4 blocks, hidden 256, 8 heads, seq 128, vocab 1000 (fp16)
BLOCK = 12 * H * H + 13 * H  # a GPT block's parameters
EMB = V * H + S * H  # token and position embeddings
HEAD = 2 * H  # the final layer norm (the logits use the tied embedding)


def _dp(g) -> dict:
    """{collective: (count, bytes)} of the graph's DP collectives."""
    out: dict = {}
    for t in np.flatnonzero(g.kind == TaskKind.COLLECTIVE):
        if CATEGORIES[g.category[t]] == "DP":
            n, b = out.get(COLLECTIVES[int(g.coll[t])], (0, 0.0))
            out[COLLECTIVES[int(g.coll[t])]] = (n + 1, b + float(g.size[t]))
    return out


def test_the_model_has_the_closed_form_parameters():
    assert [x.params for x in MODEL.layers] == [EMB, BLOCK, BLOCK, BLOCK, BLOCK, HEAD]


@pytest.mark.parametrize("kw", [dict(mp=1, pp=1, dp=4), dict(mp=2, pp=1, dp=2), dict(mp=1, pp=2, dp=2),
                                dict(mp=2, pp=2, dp=2, recompute="full")])
@pytest.mark.parametrize("reshard", [True, False])
@pytest.mark.parametrize("m", [1, 2])
def test_gathers_per_microbatch_and_one_reduce_scatter_per_layer(kw, reshard, m):
    """All-gathers: layers with parameters x microbatches x (1 + reshard) per MP rank, each of the
    MP rank's shard x 2 bytes; reduce-scatters: one per layer and MP rank of its gradients (2 bytes
    each); nothing else over DP."""
    st = Strategy(batch=4 * m, microbatches=m, zero=3, reshard_after_forward=reshard, **kw)
    mp = kw["mp"]
    per_npu = (EMB + 4 * BLOCK + HEAD) / mp  # each layer's parameters split over the MP ranks (`plan`)
    layers = 6  # all six have parameters
    g = build_training(MODEL, st)
    got = _dp(g)
    assert set(got) == {"all-gather", "reduce-scatter"}
    assert got["all-gather"][0] == layers * m * (1 + reshard) * mp
    assert got["all-gather"][1] == pytest.approx(2 * per_npu * mp * m * (1 + reshard), rel=1e-12)
    assert got["reduce-scatter"][0] == layers * mp
    assert got["reduce-scatter"][1] == pytest.approx(2 * per_npu * mp, rel=1e-12)


def test_zero_0_1_2_are_unchanged():
    st = dict(dp=4, batch=8, microbatches=2)
    grads = 2.0 * MODEL.params
    assert _dp(build_training(MODEL, Strategy(zero=0, **st))) == {"all-reduce": (6, pytest.approx(grads))}
    for z in (1, 2):
        assert _dp(build_training(MODEL, Strategy(zero=z, **st))) == {"reduce-scatter": (6, pytest.approx(grads)),
                                                                      "all-gather": (6, pytest.approx(grads))}


def test_dp_1_gathers_nothing():
    g = build_training(MODEL, Strategy(mp=2, pp=2, dp=1, batch=2, microbatches=2, zero=3))
    assert _dp(g) == {}
    assert len(g) == len(build_training(MODEL, Strategy(mp=2, pp=2, dp=1, batch=2, microbatches=2, zero=0)))


def test_the_gathers_run_ahead_and_each_forward_waits_for_its_gather():
    """The gather of layer i+1 depends on the gather of layer i and, from the third on, on the end of
    layer i-1's forward (FSDP's rate limiter: at most two gathers in flight, the parameters of the
    one before last freed first); layer i's first forward task depends on its gather."""
    g = build_training(MODEL, Strategy(dp=2, batch=2, microbatches=1, zero=3))
    names = [g.name(t) for t in range(len(g))]
    gathers = [t for t in range(len(g)) if names[t].startswith("F0 ") and names[t].endswith("DP all-gather")]
    assert len(gathers) == 6
    layers = [names[t][len("F0 "):-len(" DP all-gather")] for t in gathers]
    comp = g.kind == TaskKind.COMPUTE
    for k, (a, b) in enumerate(zip(gathers, gathers[1:]), start=1):
        want = [a]
        if k >= 2:  # the last forward task of layer k - 2 on each of the 2 replicas
            ends = [max(t for t in range(len(g)) if comp[t] and g.npu[t] == p and names[t].split(".")[0] == f"F0 {layers[k - 2]}")
                    for p in (0, 1)]
            want += ends
        assert sorted(g.dep_idx[g.dep_ptr[b]:g.dep_ptr[b + 1]].tolist()) == sorted(want), layers[k]
    for li, t in enumerate(gathers):
        first = next(u for u in range(t + 1, len(g)) if g.kind[u] == TaskKind.COMPUTE and names[u].startswith("F0 "))
        assert t in set(g.dep_idx[g.dep_ptr[first]:g.dep_ptr[first + 1]]), names[first]


@pytest.mark.parametrize("kw", [dict(mp=1, pp=1, dp=4), dict(mp=2, pp=2, dp=2, recompute="full"),
                                dict(mp=2, pp=2, dp=2, sequence_parallel=True, dp_bucket=0),
                                dict(mp=1, pp=2, dp=4, reshard_after_forward=False, optimizer="adam"),
                                dict(mp=2, pp=2, dp=2, virtual_stages=2, stage_split="layers", microbatches=2),
                                dict(mp=2, pp=2, dp=1)])
@pytest.mark.parametrize("fold", [False, True])
def test_the_task_estimate_is_the_graph_size(kw, fold):
    kw = {"microbatches": 2, **kw}
    st = Strategy(batch=8 * kw["dp"], zero=3, iterations=2, **kw)
    assert training_tasks(MODEL, st, fold) == len(build_training(MODEL, st, fold=fold))


@pytest.mark.parametrize("kw", [dict(mp=2, pp=2, dp=4), dict(mp=1, pp=1, dp=16, reshard_after_forward=False),
                                dict(mp=4, pp=2, dp=2, optimizer="adam")])
def test_folded_equals_unfolded(kw):
    st = Strategy(batch=4 * kw["dp"], microbatches=2, zero=3, iterations=2, **kw)
    system = System(NPU(1e14, 2e12, 0.5), scheduling=Scheduling())
    pr = CommPricer(parse_topology("dgx-h100:nodes=2"), "analytical")
    rf, ru = simulate(build_training(MODEL, st, fold=True), system, pr), simulate(build_training(MODEL, st), system, pr)
    assert rf.iteration_time == ru.iteration_time
    assert np.array_equal(rf.iteration_times, ru.iteration_times)


def _config(tmp_path, zero) -> str:
    data = copy.deepcopy(yaml.safe_load((ROOT / "configs/gpt3-175b.yaml").read_text()))
    data["workload"]["parallelism"]["zero"] = zero
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_a_config_with_zero_3_loads(tmp_path):
    from fabricsim.train import load_train_config

    assert load_train_config(_config(tmp_path, 3)).workload.parallelism.zero == 3


@pytest.mark.parametrize("bad", [4, True, 2.0])
def test_a_bad_zero_is_one_line_naming_the_field(tmp_path, bad):
    from fabricsim.train import load_train_config

    with pytest.raises(ConfigError) as e:
        load_train_config(_config(tmp_path, bad))
    assert str(e.value.field).endswith("workload.parallelism.zero")
    assert "3" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("kw,field", [(dict(zero=4), "parallelism.zero"), (dict(zero=True), "parallelism.zero"),
                                      (dict(zero=3, dp=2, batch=2, ep=2), "parallelism.zero"),
                                      (dict(zero=3, weight_streaming=True), "parallelism.zero"),
                                      (dict(zero=3, reshard_after_forward="yes"), "parallelism.reshard_after_forward")])
def test_strategy_refusals_name_the_field(kw, field):
    with pytest.raises(ConfigError) as e:
        Strategy(**kw)
    assert str(e.value).startswith(field) and "\n" not in str(e.value)


def test_reshard_after_forward_is_a_config_key(tmp_path):
    """`workload.parallelism.reshard_after_forward: false` reaches the strategy (gathers only before
    the forward); a non-boolean is one line naming the key."""
    from fabricsim.train import load_train_config, strategy_of

    root = Path(__file__).resolve().parents[1]
    data = yaml.safe_load((root / "configs/gpt3-175b.yaml").read_text())
    data["workload"]["parallelism"].update(zero=3, reshard_after_forward=False)
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(data))
    assert strategy_of(load_train_config(str(path))).reshard_after_forward is False
    data["workload"]["parallelism"]["reshard_after_forward"] = "no"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as e:
        load_train_config(str(path))
    assert str(e.value.field).endswith("workload.parallelism.reshard_after_forward") and "\n" not in str(e.value)
