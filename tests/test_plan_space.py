"""`fabricsim plan`'s search space (`plan.schema`, `plan.space`): the `search:` section is checked in
one line per error, and the enumeration keeps exactly the strategies that build, meet the
constraints and fit in memory (brute force against `build_training` and the memory model), with
each pruned combination counted once."""

from __future__ import annotations

from itertools import product

import pytest
import yaml

from fabricsim.errors import ConfigError
from fabricsim.plan.schema import FIXED_KEYS, load_plan_config, plan_config, train_config_for
from fabricsim.plan.space import enumerate_space
from fabricsim.train import memory_of, strategy_of, system_of
from fabricsim.train_config import TrainConfig
from fabricsim.workload.memory import memory_arguments, stage_memory
from fabricsim.workload.parallelism import build_training
from fabricsim.workload.plan import by_shape
from fabricsim.workload.strategy import Strategy

TINY = {"layers": 4, "hidden": 128, "heads": 8, "seq": 64, "vocab": 256}
MEMORY = 4e6  # bytes: about half the tiny space's candidates need more (peaks 2.2 to 16.9 MB)


def _mapping(search: dict, memory=MEMORY, topology="dgx-a100:nodes=2,gpus=4,nics=4", model=None) -> dict:
    """A plan config on 2 nodes of 4 GPUs (8 GPUs): the tiny transformer (or `model`), batch 8."""
    npu = {"peak": "100TFLOP/s", "memory_bandwidth": "2TB/s"}
    if memory is not None:
        npu["memory"] = memory
    return {"network": {"topology": topology, "bandwidth": "100GB/s", "latency": "1us"},
            "system": {"npu": npu},
            "workload": {"model": dict(model or TINY), "batch": 8},
            "search": search}


SMALL = {"tp": [1, 2, 4, 8], "pp": [1, 2, 4], "cp": [1, 2], "virtual_stages": [1, 2], "microbatch": [1, 2],
         "recompute": ["none", "selective", "full"], "sequence_parallel": [False, True], "zero": [0, 1, 3]}


def _brute(cfg) -> tuple[dict, dict]:
    """Every combination of the knobs judged without `plan.space`: (point -> verdict, point -> peak)
    with verdicts "invalid", "constraints", "memory", "ok" (the first step a point fails)."""
    model = cfg.train.workload.build_model()
    n, batch, blocks = cfg.n_gpus, cfg.batch, len(model.blocks())
    limit = (1 - cfg.search.constraints.memory_headroom) * cfg.train.system.npu.build().memory_capacity
    ch = cfg.search.choices()
    verdicts, peaks = {}, {}
    for point in product(*ch.values()):
        tp, pp, cp, ep, vs, mb, rc, sp, zero = point
        verdicts[point] = "invalid"
        if n % (tp * pp * cp) or batch % (n // (tp * pp * cp) * mb):
            continue
        dp = n // (tp * pp * cp)
        split = "layers" if blocks % (pp * vs) == 0 else "flops"
        try:
            st = Strategy(mp=tp, pp=pp, dp=dp, cp=cp, ep=ep, batch=batch, microbatches=batch // (dp * mb),
                          virtual_stages=vs, stage_split=split, recompute=rc, sequence_parallel=sp, zero=zero)
            if tp > 1 and not by_shape(model, tp):
                continue
            build_training(model, st, n)
            kw = memory_arguments(model, st)
            peak = None if kw is None else max(s.total for s in stage_memory(**kw))
        except ConfigError:
            continue
        peaks[point] = peak
        if tp > cfg.gpus_per_node:
            verdicts[point] = "constraints"
        elif peak is not None and peak > limit:
            verdicts[point] = "memory"
        else:
            verdicts[point] = "ok"
    return verdicts, peaks


def _point(c) -> tuple:
    st = c.strategy
    return (st.mp, st.pp, st.cp, st.ep, st.virtual_stages, st.microbatch, st.recompute, st.sequence_parallel, st.zero)


def test_pruning_keeps_exactly_the_feasible_points():
    cfg = plan_config(_mapping(SMALL))
    space = enumerate_space(cfg)
    verdicts, peaks = _brute(cfg)
    feasible = [p for p, v in verdicts.items() if v == "ok"]
    assert [_point(c) for c in space.candidates] == feasible  # the same points, in the same order
    assert space.combos == len(verdicts) == 4 * 3 * 2 * 2 * 2 * 3 * 2 * 3
    assert (space.pruned_invalid, space.pruned_constraints, space.pruned_memory) == tuple(
        sum(v == k for v in verdicts.values()) for k in ("invalid", "constraints", "memory"))
    assert space.pruned_invalid + space.pruned_constraints + space.pruned_memory == space.combos - len(feasible)
    assert min(space.pruned_constraints, space.pruned_memory, len(feasible)) > 0  # every step is exercised
    assert all(c.peak_memory == peaks[_point(c)] for c in space.candidates)
    assert (space.n_gpus, space.gpus_per_node, space.memory_limit) == (8, 4, MEMORY)


def test_pruning_of_a_mixture_of_experts():
    """Expert parallelism: ep divides the experts (`moe.check`) and dp x cp; zero 3 refuses ep > 1."""
    search = {"tp": [1, 2], "pp": [1, 2], "ep": [1, 2, 4, 8], "microbatch": [1, 2], "recompute": ["none", "full"],
              "sequence_parallel": [False, True], "zero": [0, 1, 3]}
    cfg = plan_config(_mapping(search, memory=20e6, model={**TINY, "experts": 4, "top_k": 2}))
    space = enumerate_space(cfg)
    verdicts, _ = _brute(cfg)
    assert [_point(c) for c in space.candidates] == [p for p, v in verdicts.items() if v == "ok"]
    assert space.pruned_invalid == sum(v == "invalid" for v in verdicts.values())
    assert {c.strategy.ep for c in space.candidates} == {1, 2, 4}  # 8 does not divide the 4 experts
    assert not any(c.strategy.ep > 1 and c.strategy.zero == 3 for c in space.candidates)


def test_counts_of_a_hand_counted_space():
    # 8 GPUs, 4 per node, batch 8, no memory bound. (tp, pp) with tp x pp dividing 8 (tp 3 never):
    # (1,1) (1,2) (2,1) (2,2) (4,1) (4,2) (8,1): 7 pairs; (3,1) (3,2) (8,2): 3 pairs x 3 x 2 = 18 invalid.
    # dp x microbatch divides 8 <=> microbatch divides tp x pp: 1 + 2 + 2 + 3 + 3 + 3 + 3 = 17 of the
    # 7 x 3 per sequence_parallel choice (4 invalid each: 8); sequence parallelism with tp = 1: the
    # microbatches of (1,1) and (1,2), 1 + 2 = 3 invalid. Valid: 17 + 14 = 31, of which tp = 8 > 4 GPUs
    # per node: 3 microbatches x 2 = 6 pruned by the constraint; 25 candidates.
    search = {"tp": [1, 2, 3, 4, 8], "pp": "1-2", "microbatch": "1-4", "sequence_parallel": [False, True]}
    space = enumerate_space(plan_config(_mapping(search, memory=None)))
    assert (space.combos, len(space.candidates)) == (5 * 2 * 3 * 2, 25)
    assert (space.pruned_invalid, space.pruned_constraints, space.pruned_memory) == (18 + 8 + 3, 6, 0)
    assert all(c.peak_memory is not None for c in space.candidates)
    # without the constraint tp = 8 stays; on a switch (no nodes) it is vacuous
    off = {**search, "constraints": {"tp_within_node": False}}
    assert len(enumerate_space(plan_config(_mapping(off, memory=None))).candidates) == 31
    switch = enumerate_space(plan_config(_mapping(search, memory=None, topology="switch:8")))
    assert (len(switch.candidates), switch.gpus_per_node) == (31, None)


def test_enumeration_is_deterministic():
    cfg = plan_config(_mapping(SMALL))
    a, b = enumerate_space(cfg), enumerate_space(plan_config(_mapping(SMALL)))
    assert a == b and a.candidates and [c.fields for c in a.candidates] == [c.fields for c in b.candidates]


def test_memory_pruning_matches_memory_of():
    """A few points: the candidate's peak is `train.memory_of`'s largest stage, and a point is pruned
    for memory exactly when `fabricsim train` refuses it for memory."""
    search = {"tp": [1, 2], "pp": [1, 2], "recompute": ["none", "full"], "zero": [0, 1],
              "constraints": {"memory_headroom": 0.0}}
    cfg = plan_config(_mapping(search))
    space = enumerate_space(cfg)
    kept = {_point(c): c for c in space.candidates}
    assert space.pruned_memory and kept
    seen = 0
    for tp, pp, rc, zero in product([1, 2], [1, 2], ["none", "full"], [0, 1]):
        dp = 8 // (tp * pp)
        fields = {"mp": tp, "dp": dp, "pp": pp, "microbatches": 8 // dp, "stage_split": "layers", "recompute": rc,
                  "zero": zero}
        tc = TrainConfig.model_validate(train_config_for(cfg, fields))
        try:
            stages, _ = memory_of(tc, system_of(tc))
        except ConfigError as e:
            assert str(e).startswith("memory: ") and "accepted: at least" in str(e)  # refused for memory
            stages = None
        point = (tp, pp, 1, 1, 1, 1, rc, False, zero)
        assert (point in kept) == (stages is not None)
        if stages is not None:
            assert kept[point].peak_memory == max(s.total for s in stages)
            seen += 1
    assert seen == len(kept)


def test_headroom_bounds_the_peak():
    loose = enumerate_space(plan_config(_mapping({**SMALL, "constraints": {"memory_headroom": 0.0}})))
    tight = enumerate_space(plan_config(_mapping({**SMALL, "constraints": {"memory_headroom": 0.5}})))
    assert tight.memory_limit == MEMORY / 2
    assert [c for c in loose.candidates if c.peak_memory <= MEMORY / 2] == list(tight.candidates)
    assert tight.pruned_memory == loose.pruned_memory + len(loose.candidates) - len(tight.candidates)


def test_candidate_fields_write_a_train_config_of_the_same_strategy():
    search = {**SMALL, "fixed": {"optimizer": "adam", "schedule": "1f1b", "placement": ["mp", "pp", "dp"]}}
    cfg = plan_config(_mapping(search))
    space = enumerate_space(cfg)
    for c in space.candidates[::17]:
        mapping = train_config_for(cfg, c.fields)
        tc = TrainConfig.model_validate(mapping)
        assert strategy_of(tc) == c.strategy and c.strategy.optimizer == "adam"
        assert {k: mapping[k] for k in ("network", "system")} == {k: cfg.mapping[k] for k in ("network", "system")}
        assert "search" not in mapping and tc.workload.batch == 8


def test_choices_and_defaults():
    cfg = plan_config(_mapping({"tp": "1-8", "pp": 2, "recompute": ["full", "none"], "zero": [2, 0], "batch": 16}))
    ch = cfg.search.choices()
    assert ch == {"tp": (1, 2, 4, 8), "pp": (2,), "cp": (1,), "ep": (1,), "virtual_stages": (1,), "microbatch": (1,),
                  "recompute": ("none", "full"), "sequence_parallel": (False,), "zero": (0, 2)}
    assert (cfg.batch, cfg.n_gpus, cfg.search.top, cfg.search.simulate, cfg.search.seed) == (16, 8, 10, 100, 0)
    assert cfg.search.constraints.tp_within_node and cfg.search.constraints.memory_headroom == 0.0
    assert "attention" in FIXED_KEYS and "mp" not in FIXED_KEYS and "zero" not in FIXED_KEYS


BAD = [
    ({"tpp": [1]}, "search.tpp"),
    ({"tp": [0]}, "search.tp"),
    ({"tp": [0, 3]}, "search.tp"),
    ({"tp": [2, 2]}, "search.tp"),
    ({"pp": "8-1"}, "search.pp"),
    ({"pp": "a-b"}, "search.pp"),
    ({"microbatch": [1.5]}, "search.microbatch"),
    ({"recompute": ["some"]}, "search.recompute"),
    ({"sequence_parallel": [1]}, "search.sequence_parallel"),
    ({"zero": [4]}, "search.zero"),
    ({"zero": [False]}, "search.zero"),
    ({"top": 0}, "search.top"),
    ({"simulate": 0}, "search.simulate"),
    ({"seed": -1}, "search.seed"),
    ({"constraints": {"memory_headroom": 1.5}}, "search.constraints.memory_headroom"),
    ({"constraints": {"memory_headroom": "0.1"}}, "search.constraints.memory_headroom"),
    ({"constraints": {"nodes": 2}}, "search.constraints.nodes"),
    ({"gpus": 16}, "search.gpus"),
    ({"batch": 0}, "search.batch"),
    ({"fixed": {"mp": 2}}, "search.fixed.mp"),
    ({"fixed": {"zero": 1}}, "search.fixed.zero"),
    ({"fixed": {"schedule": "zigzag"}}, "search.fixed.schedule"),
    ({"fixed": {"attention": "fused"}}, "search.fixed.attention"),  # a roofline NPU: no fused-attention rates
    ({"fixed": {"wat": 1}}, "search.fixed.wat"),
    ({k: "1-1024" for k in ("tp", "pp", "cp", "ep", "virtual_stages", "microbatch")}, "search"),  # 11^6 combos
]


@pytest.mark.parametrize("search, field", BAD, ids=[f for _, f in BAD])
def test_bad_search_is_one_line_naming_the_field(tmp_path, search, field):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(_mapping(search)))
    with pytest.raises(ConfigError) as e:
        load_plan_config(path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"{path}: {field}: ")


@pytest.mark.parametrize("change, field", [
    ({"workload": {"model": dict(TINY), "batch": 8, "parallelism": {"mp": 2}}}, "workload.parallelism"),
    ({"workload": {"astra_text": "x.txt"}}, "workload.model"),
    ({"search": None, "extra": 1}, "extra"),
    ({"workload": {"model": dict(TINY), "batch": "8"}}, "workload.batch"),
])
def test_bad_config_is_one_line_naming_the_field(tmp_path, change, field):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({**_mapping({}), **change}))
    with pytest.raises(ConfigError) as e:
        load_plan_config(path)
    assert "\n" not in str(e.value) and str(e.value).startswith(f"{path}: {field}: ")
    if field == "workload.parallelism":
        assert "search chooses it" in str(e.value)


def test_missing_search_and_empty_search(tmp_path):
    data = _mapping({})
    del data["search"]
    with pytest.raises(ConfigError, match="search: "):
        plan_config(data)
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump({**data, "search": None}))
    cfg = load_plan_config(path)
    assert cfg.source == str(path) and cfg.search.combos() == 1
    space = enumerate_space(cfg)  # tp = pp = 1, dp = 8 without ZeRO: 16.1 MiB, over the 4 MB
    assert (space.combos, space.pruned_memory, space.candidates) == (1, 1, ())
