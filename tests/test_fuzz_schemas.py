"""The fuzz net generated from the schemas and the command tree (issue 46, item 4; tests/fuzz_schema.py).

Every leaf of every config schema (train configs, the sweep spec, traffic files, the `topology
optimize` job, the plan config, each study's reproduction config) and every option of every
command is read from the pydantic models and the click tree when the tests run, so a new field or
option is fuzzed without a new test. Each input must end in exit 0 with a sane result, or exit 2
with one stderr line `fabricsim: error: ...` naming the field or the option; never a traceback,
a hang or an absurd result.

The default run (about 20 s) tries one hostile value per leaf and per option (rotated, so every
value is tried somewhere), both forms of each option given twice, each file argument's hostile
files, and generated values (hypothesis); `-m slow` tries every value everywhere
(benchmarks/fuzz_inputs.py tabulates the same). The defects found are `KNOWN_DEFECTS`, strict
xfails: fixing one flips its test (then delete its entry: the inputs it covers are skipped by the
default run meanwhile).
"""

from __future__ import annotations

import fnmatch
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
import fuzz_schema as fz  # noqa: E402

# Found by this net and fixed meanwhile (their strict xfails flipped; the default run covers them
# again): YAML 1.1 `12:30:00` read as 45000 and `010` as 8 without a word (src/fabricsim/inputs.py);
# `input_loading` / `weight_streaming` on a topology without I/O named `network.algorithms.topology`
# (src/fabricsim/train.py); `--workers 99999999999999999999999` reaching multiprocessing.Pool
# (src/fabricsim/cli/sweep.py, cli/plan.py: check_workers); `collective -a 'a,b,,'` named `--option`
# (src/fabricsim/cli/collective.py); an empty `grid: {}` / `zip: {}` block in a sweep: a traceback
# (src/fabricsim/sweep/spec.py); `microbatches: 9223372036854775807` blamed on `workload.model.layers`
# by the tasks limit.
#
# Each defect: the inputs it covers (fnmatch patterns on the case's target, where and value), one
# `example` input that the strict xfail runs, what happened, and the source file that likely owns it.
KNOWN_DEFECTS: list[dict] = [
    {"id": "sweep-base-error-blamed-on-axis",
     "target": "sweep", "where": "base.*", "value": ("0", "1"), "verdicts": ("wrong-field",),
     "example": ("sweep", "base.latency", "0"),
     "got": "`base: {latency: 0, ...}` beside an axis `root: [0, 1]` -> exit 2 naming `axes.root: invalid value 0; "
            "accepted: a time ...`: a point's error is put on any axis whose value equals the bad value (also "
            "base.collective: 0, base.model: 0)",
     "owner": "src/fabricsim/sweep/spec.py (check_point: `str(e.value) == str(value)`)"},
    {"id": "moe-layers-out-of-memory",
     "target": "train (moe)", "where": "workload.model.layers", "value": "9223372036854775807",
     "verdicts": ("wrong-field",),
     "example": ("train (moe)", "workload.model.layers", "9223372036854775807"),
     "got": "`layers: 9223372036854775807` with `moe_layers: all` -> exit 2 `fabricsim: error: out of memory; ...`: "
            "no field named (moe_layer_list builds tuple(range(layers)) before the tasks limit is checked)",
     "owner": "src/fabricsim/workload/transformer_shape.py (moe_layer_list / _checked_moe)"},
    {"id": "traffic-options-named-under-algorithm",
     "target": "traffic", "where": "collectives[0].options", "value": "{fuzz: 1}", "verdicts": ("wrong-field",),
     "example": ("traffic", "collectives[0].options", "{fuzz: 1}"),
     "got": "`options: {fuzz: 1}` -> exit 2 naming `collectives[0].algorithm.fuzz` (the key is under options)",
     "owner": "src/fabricsim/network/traffic.py (errors_in section of a collective's options)"},
    {"id": "empty-path-names-nothing",
     "target": ("cli train", "cli topology optimize", "cli astra"),
     "where": ("train config", "topology optimize config", "astra --*-configuration"), "value": ("", " "),
     "verdicts": ("wrong-field",),
     "example": ("cli train", "train config", ""),
     "got": "`fabricsim train ''` -> `fabricsim: error: : invalid value 'missing'; no such file` (the field slot "
            "is the empty path); the same for `topology optimize ''` and astra's --system/--network/--comm-group/"
            "--remote-memory-configuration '' (and ' '); astra --workload-configuration '' names `.0.et`",
     "owner": "src/fabricsim/inputs.py (_name: the path is the field, empty here) via train_config.py and "
              "optimize/job.py; src/fabricsim/astra/config_common.py; src/fabricsim/workload/chakra.py (`.0.et`)"},
]


def _match(text: str, patterns) -> bool:
    patterns = (patterns,) if isinstance(patterns, str) else patterns
    return any(text == p or fnmatch.fnmatchcase(text, p) for p in patterns)


def known(case: fz.Case, verdict: str | None = None) -> dict | None:
    """The known defect covering `case` (and, given, its verdict), or None."""
    for d in KNOWN_DEFECTS:
        if _match(case.target, d["target"]) and _match(case.where, d["where"]) and _match(case.value, d["value"]) \
                and (verdict is None or verdict in d["verdicts"]):
            return d
    return None


TARGETS = {t.name: t for t in fz.targets()}
# hostile values per leaf in the default run (every value in `-m slow`); the rotation moves with
# FABRICSIM_FUZZ=random (tests/conftest.py), so a random run tries other pairs
PER_LEAF: dict[str, int] = {}
# every other leaf of the costliest schema per default run (its file is parsed at 40 ms a case);
# `-m slow` and the benchmark take every leaf
STRIDE = {"reproduce swing": 2}
OFFSET = int.from_bytes(os.urandom(2), "little") if os.environ.get("FABRICSIM_FUZZ") == "random" else 0


@pytest.fixture(scope="module")
def runner(tmp_path_factory):
    with fz.Runner(tmp_path_factory.mktemp("fuzz"), timeout_s=30.0) as r:
        yield r


def _defects(runner, cases, skip_known: bool = True) -> list[str]:
    """The cases that end in a defect not in KNOWN_DEFECTS (inputs a known defect covers are not
    run at all by default: `test_known_defect` runs one of each; `-m slow` runs them all)."""
    bad = []
    for c in cases:
        if skip_known and known(c):
            continue
        o = runner.run(c)
        if o.verdict not in ("ok", "error") and not known(c, o.verdict):
            bad.append(f"{o.verdict}: {c.key} -> rc {o.rc}: {o.err.strip()[-300:]} {o.note}")
    return bad


# ---- the walker itself ---------------------------------------------------------------------------


def _models(model) -> list:
    """Every pydantic model reachable from `model` through its fields' annotations."""
    import typing

    seen, todo = [], [model]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.append(m)
        for f in m.model_fields.values():
            stack = [f.annotation]
            while stack:
                a = stack.pop()
                if fz._is_model(a):
                    todo.append(a)
                stack += list(typing.get_args(a))
    return seen


def test_every_field_of_every_model_is_a_leaf():
    """No field is left out: each field of each model reachable from a schema's roots is the last
    key of some leaf (models only reachable through a base that does not set them excepted: a
    JobSection's fields are reached through jobs[0], a ShapeSection's through the moe base)."""
    missing, checked = [], set()
    for group in (["train", "train (moe)", "train (jobs)"], ["plan"], ["sweep"], ["traffic"], ["topology optimize"],
                  *[[n] for n in TARGETS if n.startswith("reproduce")]):
        found = {(lf.path[-1]) for n in group for lf in TARGETS[n].leaves()}
        for model, _ in TARGETS[group[0]].roots():
            if model in checked:  # the plan's train part: checked with the train configs
                continue
            checked.add(model)
            for m in _models(model):
                for name, f in m.model_fields.items():
                    if (f.alias or name) not in found:
                        missing.append(f"{group[0]}: {m.__name__}.{name}")
    assert not missing, missing


def test_the_walker_finds_the_schemas():
    counts = {n: len(t.leaves()) for n, t in TARGETS.items()}
    assert all(c >= 10 for c in counts.values()), counts
    assert {"train", "sweep", "traffic", "topology optimize", "plan"} <= set(counts)
    assert any(n.startswith("reproduce ") for n in counts)


@pytest.mark.parametrize("name", list(TARGETS))
def test_each_base_config_is_valid(runner, name):
    """The mutations start from a config that runs (an error then is the mutation's)."""
    o = runner.run(fz.base_case(TARGETS[name]))
    assert (o.verdict, o.rc) == ("ok", 0), o.err


# ---- every leaf of every schema ------------------------------------------------------------------


@pytest.mark.parametrize("name", list(TARGETS))
def test_every_leaf(runner, name):
    """Each leaf with one hostile value (every value under `-m slow`)."""
    cases = fz.schema_cases(TARGETS[name], PER_LEAF.get(name, 1), OFFSET, STRIDE.get(name, 1))
    assert not _defects(runner, cases)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(TARGETS))
def test_every_leaf_every_value(runner, name):
    assert not _defects(runner, fz.schema_cases(TARGETS[name]), skip_known=False)


def _yaml_values():
    scalar = st.one_of(st.integers(-2**70, 2**70), st.floats(), st.booleans(), st.none(),
                       st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12))
    return st.one_of(scalar, st.lists(scalar, max_size=3),
                     st.dictionaries(st.text("abcxyz_", min_size=1, max_size=5), scalar, max_size=2)).map(fz._yaml)


def schema_strategy(target: fz.Target):
    """Cases of `target` drawn by hypothesis: a leaf from the schema, a value from its hostile values
    or any YAML scalar, list or mapping."""
    lvs = target.leaves()
    return st.sampled_from(lvs).flatmap(
        lambda lf: st.one_of(st.sampled_from(fz.hostile_values(lf)), _yaml_values()).map(
            lambda raw: fz.mutation_case(target, lf, raw)))


@pytest.mark.parametrize("name", list(TARGETS))
def test_generated_values(runner, name):
    t = TARGETS[name]

    @settings(max_examples=4, deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(schema_strategy(t))
    def check(case):
        if case is None:
            return
        o = runner.run(case)
        assert o.verdict in ("ok", "error") or known(case, o.verdict), f"{o.verdict}: {case.key}: {o.err} {o.note}"

    check()


# ---- every option of every command ---------------------------------------------------------------

CLI = fz.cli_commands()


def test_every_command_is_fuzzed_or_skipped_with_a_reason():
    invs = fz.base_invocations()
    left = [" ".join(c) for c in CLI if c not in invs and not fz._skipped(c)]
    assert not left, f"commands with no base invocation in tests/fuzz_schema.py and no reason to skip: {left}"
    assert sum(len(o) for o in CLI.values()) >= 80


@pytest.mark.parametrize("cmd", [c for c in fz.base_invocations() if c in CLI],
                         ids=lambda c: " ".join(c) or "fabricsim")
def test_each_base_invocation_runs(runner, cmd):
    inv = fz.base_invocations()[cmd]
    o = runner.run(fz.Case("base", inv.argv, (), inv.files, inv.setup))
    assert (o.verdict, o.rc) == ("ok", 0), o.err


def _cli_cases(per_option: int | None):
    """The option cases, `per_option` hostile values of each (rotated), the twice-given forms and
    every argument's files always."""
    cases = fz.cli_cases()
    if per_option is None:
        return cases
    by: dict[str, list] = {}
    for c in cases:
        by.setdefault(c.where, []).append(c)
    out = []
    for i, (where, cs) in enumerate(by.items()):
        fixed = [c for c in cs if c.value.startswith("twice") or c.value in ("=yes",) or "{d}" in c.value]
        rest = [c for c in cs if c not in fixed]
        out += fixed + [rest[(i * per_option + OFFSET + k) % len(rest)] for k in range(min(per_option, len(rest)))]
    return out


def test_every_option(runner):
    """Each option of each command with a few hostile values, twice, and each argument with files
    that must be refused (`-m slow`: every value)."""
    assert not _defects(runner, _cli_cases(1))


@pytest.mark.slow
def test_every_option_every_value(runner):
    assert not _defects(runner, _cli_cases(None), skip_known=False)


def _option_strategy():
    invs = fz.base_invocations()
    # --dask: a drawn value may be a reachable-looking address, and the run would wait for its scheduler
    pairs = [(c, o) for c, opts in CLI.items() if c in invs for o in opts
             if o.kind == "option" and o.opts[0] not in fz.SKIPPED_OPTIONS]
    text = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
    return st.tuples(st.sampled_from(pairs), st.one_of(st.sampled_from(fz.HOSTILE_ARGS), text,
                                                      st.integers().map(str), st.floats().map(repr)))


@settings(max_examples=15, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(_option_strategy())
def test_generated_option_values(runner, pair):
    (cmd, opt), value = pair
    inv = fz.base_invocations()[cmd]
    case = fz.Case("cli " + (" ".join(cmd) or "fabricsim"), fz._replace(inv.argv, opt, value), fz.option_names(opt),
                   inv.files, inv.setup, where=opt.id, value=value, path=fz.is_path(opt, inv.argv))
    o = runner.run(case)
    assert o.verdict in ("ok", "error") or known(case, o.verdict), f"{o.verdict}: {case.key}: {o.err} {o.note}"


# ---- the defects found, as strict xfails ---------------------------------------------------------


def example_case(d: dict) -> fz.Case:
    """The input a known defect's test runs."""
    target, where, value = d["example"]
    if target.startswith("cli "):
        return next(c for c in fz.cli_cases() if c.target == target and c.where == where and c.value == value)
    t = TARGETS[target]
    lf = next(lf for lf in t.leaves() if lf.dotted == where)
    return fz.mutation_case(t, lf, value)


@pytest.mark.parametrize("defect", [pytest.param(d, id=d["id"], marks=[pytest.mark.xfail(strict=True, reason=d["got"])]
                                                 + [pytest.mark.slow] * bool(d.get("slow")))
                                    for d in KNOWN_DEFECTS])
def test_known_defect(runner, defect):
    case = example_case(defect)
    assert known(case) is defect
    o = runner.run(case, timeout_s=defect.get("timeout_s"))
    assert o.verdict in ("ok", "error"), f"{o.verdict}: {o.err.strip()} {o.note}"
