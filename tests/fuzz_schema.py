"""The fuzz net generated from the schemas and the command tree (issue 46, item 4).

Nothing here lists a config field or a command-line option by hand: the fields are read from the
pydantic models at run time (`leaves`: `model_fields`, nested models, lists and mappings of
models, the keys a base config sets beside them) and the options from the click tree typer builds
(`cli_commands`: `typer.main.get_command(app)`, groups expanded through `list_commands`, so the
studies of `fabricsim reproduce` are there too). A new field or option is fuzzed the day it lands.

For every leaf of a schema, `hostile_values` gives YAML fragments a user could write there (wrong
type, empty, negative, zero, NaN and infinity as text and as YAML, huge numbers, a unit that is not
one, YAML-1.1 oddities such as `1e-300` read as text, lists and mappings where scalars belong, the
key removed) and each level gets an unknown key beside its fields. For every option, `hostile_args`
gives command-line values (empty, `-1`, `nan`, `1e309`, unknown names, the option twice). Each input
is run in-process through `fabricsim.cli.main` (`run_case`) under an alarm, a soft address-space cap
and a guard on process pools, and judged by `verdict`:

- `ok`: exit 0 and the result is sane (no NaN, no negative or infinite time in `--json` output);
- `error`: exit 2, exactly one non-empty stderr line, starting `fabricsim: error:`, naming the field
  (its dotted path or its last component) or the option;
- defects: `traceback` (anything escaping, or an exit code other than 0 and 2), `multi-line`,
  `wrong-field`, `hang` (past the alarm), `absurd` (exit 0 with NaN, a negative or infinite time,
  or a NaN/overflow warning), `runaway` (asked for more worker processes than a machine has).

Used by tests/test_fuzz_schemas.py (assertions, with the known defects as strict xfails) and
benchmarks/fuzz_inputs.py (the table).
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import math
import os
import re
import resource
import signal
import sys
import time
import types
import typing
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

ROOT = Path(__file__).resolve().parents[1]
ASTRA = ROOT / "reference" / "astra-sim"
UNKNOWN_KEY = "fuzz_unknown_key"
DELETE = "<delete>"
_HOLE = "@@FUZZ@@"

DEFECTS = ("traceback", "multi-line", "wrong-field", "hang", "absurd", "runaway")
CLASSES = ("ok", "error") + DEFECTS

# ---- hostile values ------------------------------------------------------------------------------

# YAML fragments written in place of a value (raw text: `1e-300` is text to YAML 1.1, `.nan` a float)
HOSTILE_YAML = (
    "''", "' '", "null", "[]", "{}", "[1, 2]", "{fuzz: 1}", "-1", "0", "1.5", "1e-300", "1.0e-300", ".nan", ".inf",
    "-.inf", "'nan'", "'inf'", "1e309", "1.0e309", "99999999999999999999999", "-9223372036854775809", "'5 parsecs'",
    "'-5GB/s'", "'1e400B/s'", "'nanGB/s'", "'0ns'", "yes", "true", "2020-01-01", "12:30:00", "0x10", "!!binary aGk=",
    "'é中'", "'fuzz-unknown-name'", "'" + "x" * 3000 + "'", "9223372036854775807", "010", DELETE,
)
# YAML-1.1 forms the loader turns into another number without a word: a run that ends in exit 0
# with one of them took a value the user did not write (`12:30:00` is 45000, `010` is 8)
SILENT_COERCIONS = {"12:30:00": 45000, "010": 8}
# values that reset a key to its default: an error may then name a sibling that needed it
RESETS = (DELETE, "null", "{}")


def hostile_values(leaf: Leaf) -> list[str]:
    """The YAML fragments tried at `leaf`: `HOSTILE_YAML`, plus values derived from its type and its
    base value (a literal's value in the wrong case or in a list; the base value negated, as text,
    doubled, with a trailing comma, in a list). Large values within the limits (`docs/limits.md`:
    minutes by design) are not tried: beyond 64 bits and 2**63 - 1 are."""
    out = list(HOSTILE_YAML)
    for lit in _literals(leaf.annotation):
        if isinstance(lit, str):
            out += [_q(lit.upper() if lit != lit.upper() else lit.lower()), f"[{_q(lit)}]"]
        break
    b = leaf.base
    if isinstance(b, bool):
        out += ["'true'", "2"]
    elif isinstance(b, int):
        out += [str(-b), _q(str(b)), f"{b}.0", f"[{b}]"]
    elif isinstance(b, float) and math.isfinite(b):
        out += [repr(-b), _q(repr(b)), f"[{b!r}]"]
    elif isinstance(b, str) and b:
        out += [_q("-" + b), _q(b + b), f"[{_q(b)}]", _q(b + ",")]
    elif isinstance(b, list) and b:
        out += [f"[{', '.join([_yaml(b[0])] * 2)}]", _yaml(b[0]), f"[{_yaml(b[0])}, null]"]
    seen: dict[str, None] = {}
    for v in out:
        seen.setdefault(v, None)
    return list(seen)


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _yaml(v: Any) -> str:
    return yaml.safe_dump(v, default_flow_style=True, width=10**9).strip().removesuffix("...").strip()


# ---- the schema walker ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Leaf:
    """One place a value goes: a field of a model, a key of a mapping, an item of a list, a whole
    section, or an unknown key beside a level's fields.

    Parameters
    ----------
    path : tuple of str or int
        Keys and list indices from the file's top.
    kind : str
        `field`, `section` (a nested model), `entry` (a key of a mapping the schema leaves open),
        `item` (list item 0), `extra` (a key the base sets that the model takes as extra), `unknown`.
    annotation : object
        The field's type (Any for entries and extras).
    base : object
        The value in the base config (None when absent).
    """

    path: tuple
    kind: str
    annotation: Any = Any
    base: Any = None

    @property
    def dotted(self) -> str:
        """`a.b[0].c`."""
        out = ""
        for p in self.path:
            out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
        return out

    @property
    def names(self) -> tuple[str, ...]:
        """What the one error line may name: the last key (for an entry or an item, also the
        mapping or list it is in)."""
        keys = [p for p in self.path if isinstance(p, str)]
        if self.kind in ("entry", "item", "extra") and len(keys) >= 2:
            return (keys[-1], keys[-2])
        return (keys[-1],)


def _members(ann: Any) -> list:
    """The types a value of `ann` may have (Optional, Union, Annotated unwrapped; NoneType dropped)."""
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        return _members(typing.get_args(ann)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(ann) for m in _members(a) if m is not type(None)]
    return [ann]


def _literals(ann: Any) -> list:
    return [v for m in _members(ann) if typing.get_origin(m) is typing.Literal for v in typing.get_args(m)]


def _is_model(t: Any) -> bool:
    from pydantic import BaseModel

    return isinstance(t, type) and issubclass(t, BaseModel)


def _all_optional(model) -> bool:
    return all(not f.is_required() for f in model.model_fields.values())


def leaves(model, data: Any, path: tuple = ()) -> list[Leaf]:
    """Every leaf of `model` reachable from the base `data` (see `Leaf`), read from the schema.

    Nested models are entered when the base sets them as mappings, or when absent and every field
    of theirs has a default (so a mutation there meets no other missing field); a list of models
    through its first item, a mapping of models through its first value; an open mapping's keys
    (`dict[str, Any]`, an `extra="allow"` model) are leaves of their own.
    """
    out: list[Leaf] = []
    data = data if isinstance(data, dict) else {}
    fields = model.model_fields
    for name, f in fields.items():
        key = f.alias or name
        present = key in data
        val = data.get(key)
        members = _members(f.annotation)
        models = [m for m in members if _is_model(m)]
        p = path + (key,)
        if models and (isinstance(val, dict) or (not present and len(members) == 1 and _all_optional(models[0]))):
            out.append(Leaf(p, "section", f.annotation, val))
            out += leaves(models[0], val if isinstance(val, dict) else {}, p)
            continue
        out.append(Leaf(p, "field", f.annotation, val))
        for m in members:
            origin, args = typing.get_origin(m), typing.get_args(m)
            if origin is list and args and isinstance(val, list) and val:
                inner = _members(args[0])
                if _is_model(inner[0]) and isinstance(val[0], dict):
                    out += _items(inner[0], list(enumerate(val)), p)
                else:
                    out.append(Leaf(p + (0,), "item", args[0], val[0]))
                break
            if origin is dict and args and isinstance(val, dict) and val:
                inner = _members(args[1])
                k0 = next(iter(val))
                if _is_model(inner[0]) and isinstance(val[k0], dict):
                    out += _items(inner[0], list(val.items()), p)
                else:
                    out += [Leaf(p + (k,), "entry", args[1], v) for k, v in val.items()]
                break
            if (m is Any or m is dict) and isinstance(val, dict) and val:
                out += [Leaf(p + (k,), "entry", Any, v) for k, v in val.items()]
                break
    out += [Leaf(path + (k,), "extra", Any, v) for k, v in data.items() if k not in
            {f.alias or n for n, f in fields.items()}]
    out.append(Leaf(path + (UNKNOWN_KEY,), "unknown"))
    return out


def _items(model, items: list, path: tuple) -> list[Leaf]:
    """The leaves of the items of a list (or mapping) of models: the first item, and each later one
    that sets a key the earlier ones do not (a sweep's grid, zip and random blocks; not the second
    of two jobs alike)."""
    out, keys = [], set()
    for k, item in items:
        if isinstance(item, dict) and (not keys or not set(item) <= keys):
            out += leaves(model, item, path + (k,))
            keys |= set(item)
    return out


def mutate(data: dict, path: tuple, raw: str) -> str | None:
    """The YAML text of `data` with the value at `path` replaced by the fragment `raw` (removed for
    `DELETE`); None when the path cannot be reached (a parent is not a mapping or list)."""
    import copy

    doc = copy.deepcopy(data)
    node = doc
    for p in path[:-1]:
        if isinstance(p, int):
            if not isinstance(node, list) or len(node) <= p:
                return None
            node = node[p]
        else:
            if not isinstance(node, dict):
                return None
            if not isinstance(node.get(p), (dict, list)):
                node[p] = {}
            node = node[p]
    last = path[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or len(node) <= last:
            return None
    elif not isinstance(node, dict):
        return None
    if raw == DELETE:
        if isinstance(last, int):
            node.pop(last)
        else:
            node.pop(last, None)
        return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=10**9, allow_unicode=True)
    node[last] = _HOLE
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=10**9, allow_unicode=True)
    return re.sub(r"'?" + _HOLE + r"'?", lambda m: raw, text)


# ---- the targets: each schema, its base config, and how it runs ----------------------------------

TINY_TRAIN = {
    "network": {"topology": "ring:4", "bandwidth": "100GB/s", "latency": "1us", "model": "congestion-aware",
                "algorithms": {"all-reduce": "ring"}},
    "system": {"npu": {"peak": "100TFLOP/s", "memory_bandwidth": "1TB/s", "efficiency": 0.5},
               "endpoint": {"policy": "npu", "units": 0.2, "memory": 0.3},
               "scheduling": {"policy": "LIFO", "priorities": ["DP", "MP"], "chunks": 2, "chunks_in_flight": 1}},
    "workload": {"model": "resnet50", "batch": 8, "iterations": 1, "parallelism": {"dp": 4}},
    "output": {"dir": "o", "trace": False, "trace_npus": "0-1", "trace_format": "json", "plot": False},
}
TINY_MODERN = {
    "name": "moe",
    "network": {"topology": "switch:8", "bandwidth": "100GB/s", "latency": "1us"},
    "system": {"npu": {"peak": "100TFLOP/s", "memory_bandwidth": "1TB/s", "efficiency": 0.5, "memory": "80GB"}},
    "workload": {"model": {"layers": 2, "hidden": 256, "heads": 8, "kv_heads": 4, "seq": 128, "vocab": 1000,
                           "ffn_act": "swiglu", "norm": "rmsnorm", "experts": 4, "top_k": 2, "position": "rope",
                           "bias": False, "capacity_factor": 1.0, "moe_layers": "all"},
                 "batch": 4, "dtype": "bf16",
                 "parallelism": {"mp": 2, "cp": 2, "dp": 2, "ep": 2, "zero": 1, "microbatches": 2,
                                 "placement": ["mp", "cp", "dp", "pp"], "recompute": "full"}},
    "output": {"dir": "o", "trace": False, "plot": False},
}
TINY_JOBS = {
    "network": {"topology": "switch:8", "bandwidth": "100GB/s", "latency": "1us"},
    "system": {"npu": {"peak": "100TFLOP/s", "memory_bandwidth": "1TB/s", "efficiency": 0.5}},
    "jobs": [{"name": "a", "gpus": "0-3", "model": "resnet50", "batch": 8, "parallelism": {"dp": 4}},
             {"name": "b", "gpus": {"first": 4, "count": 4}, "model": "resnet50", "batch": 8,
              "parallelism": {"dp": 4}}],
    "output": {"dir": "o", "trace": False, "plot": False},
}
TINY_TRAFFIC = {
    "topology": "ring:4", "bandwidth": "100GB/s", "latency": "1us", "model": "flow", "chunk": "0B",
    "flows": [{"name": "f", "src": 0, "dst": 2, "size": "1MiB", "start": "0us", "count": 1, "priority": 0}],
    "collectives": [{"name": "c", "collective": "all-reduce", "algorithm": "ring", "size": "1MiB", "start": "0us",
                     "group": "0-3", "options": {"chunks": 2}}],
}
# the axes set no field the base sets (a field an axis sets in every point leaves the base's value unused)
TINY_SWEEP = {
    "name": "s", "kind": "collective",
    "base": {"collective": "all-reduce", "latency": "500ns", "model": "analytical", "bandwidth": "100Gbps"},
    "axes": [{"grid": {"topology": ["ring:8", "torus:2x2"], "algorithm": ["ring", "swing"]}},
             {"zip": {"size": ["1KiB", "1MiB"]}},
             {"random": {"n": 2, "seed": 1, "fields": {"root": {"choice": [0, 1]}}}}],
}
TINY_JOB = {
    "name": "j", "servers": 8, "degree": 4, "link_bandwidth": "100Gbps", "latency": "1us",
    "network_model": "congestion-aware",
    "server": {"gpus": 4, "intra_bandwidth": "200Gbps", "npu": {"peak": "624TFLOP/s", "memory_bandwidth": "6TB/s"}},
    "workload": {"model": "resnet50", "batch_per_gpu": 2, "dtype": "fp32"},
    "search": {"steps": 2, "rounds": 1, "alpha": 1.0, "split": "paper", "select": "geometric", "seed": 0,
               "max_groups": 2},
}
TINY_PLAN = {
    "name": "p",
    "network": {"topology": "switch:2", "bandwidth": "100GB/s", "latency": "1us"},
    "system": {"npu": {"peak": "100TFLOP/s", "memory_bandwidth": "1TB/s", "efficiency": 0.5}},
    "workload": {"model": {"layers": 2, "hidden": 256, "heads": 8, "seq": 128, "vocab": 1000}, "batch": 4},
    "output": {"trace": False, "plot": False},
    "search": {"tp": [1], "pp": [1, 2], "microbatch": [1], "recompute": ["none"], "zero": [0],
               "fixed": {"schedule": "1f1b"}, "constraints": {"tp_within_node": True, "memory_headroom": 0.0},
               "top": 2, "simulate": 2, "seed": 0},
}


@dataclass
class Target:
    """A schema to fuzz: its models (each at a path of the file), a base config every mutation
    starts from, and the command that reads it (`{f}` the file, `{d}` the case's folder), or
    `study`: a registered study whose `load_config` is called directly.

    `exclude` lists paths not fuzzed, each with its reason (a prefix of a leaf's path)."""

    name: str
    roots: Callable[[], list[tuple[Any, tuple]]]
    base: Callable[[], dict]
    filename: str = "c.yaml"
    argv: tuple[str, ...] = ()
    study: str = ""
    exclude: dict[tuple, str] = field(default_factory=dict)
    related: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def leaves(self) -> list[Leaf]:
        """The leaves of every root, minus the excluded ones, in schema order."""
        data, out = self.base(), []
        for model, prefix in self.roots():
            sub = data
            for p in prefix:
                sub = sub.get(p, {}) if isinstance(sub, dict) else {}
            out += leaves(model, sub, prefix)
        out = [lf for lf in out if not any(lf.path[:len(x)] == x for x in self.exclude)]
        seen: dict[tuple, Leaf] = {}
        for lf in out:
            seen.setdefault(lf.path, lf)
        return list(seen.values())


def _train_model():
    from fabricsim.train_config import TrainConfig

    return [(TrainConfig, ())]


def _study_roots(name: str):
    def roots():
        from pydantic import BaseModel

        from fabricsim.experiments import EXPERIMENTS

        cfg = EXPERIMENTS[name].load_config(None)
        if isinstance(cfg, BaseModel):
            return [(type(cfg), ())]
        model = study_input_schema(name)
        return [(model, ())] if model is not None else []
    return roots


def study_input_schema(name: str):
    """The pydantic model a study validates its file against when `load_config` returns something
    else (swing: `SwingConfigIn`, resolved into a dataclass): the module's `*ConfigIn` class."""
    import importlib
    import inspect

    for mod in (f"fabricsim.experiments.{name}.schema", f"fabricsim.experiments.{name}.config"):
        try:
            m = importlib.import_module(mod)
        except ImportError:
            continue
        found = [c for n, c in inspect.getmembers(m, _is_model) if n.endswith("ConfigIn") or n.endswith("Config")]
        if found:
            return found[0]
    return None


def _study_base(name: str):
    def base():
        return yaml.safe_load((ROOT / "configs" / f"{name}.yaml").read_text())
    return base


def _const(d: dict):
    import copy

    return lambda: copy.deepcopy(d)


# values other fields of a study are checked against (the error names the field that no longer
# agrees): swing's paper figures are at sizes of the run's grid, FRED's strategies fill the wafer
STUDY_RELATED = {"swing": {"sizes.*": ("gain_sizes", "points", "size")},
                 "fred": {"wafer.*": ("strategies",)}}


def targets() -> list[Target]:
    """Every schema fuzzed: training configs (three bases: a zoo model with every system section,
    a mixture of experts under tp, cp and ep, two jobs), the sweep spec, a traffic file, the
    `topology optimize` job, the plan config, and each registered study's reproduction config."""
    from fabricsim.experiments import EXPERIMENTS

    train = ("train", "{f}", "-q", "--json", "--force")

    def plan_roots():
        from fabricsim.plan.schema import SearchSection
        from fabricsim.train_config import TrainConfig

        return [(TrainConfig, ()), (SearchSection, ("search",))]

    def sweep_roots():
        from fabricsim.sweep.spec import SweepSpec

        return [(SweepSpec, ())]

    def traffic_roots():
        from fabricsim.network.traffic import TrafficFile

        return [(TrafficFile, ())]

    def job_roots():
        from fabricsim.optimize.job import JobConfig

        return [(JobConfig, ())]

    out = [
        Target("train", _train_model, _const(TINY_TRAIN), argv=train),
        Target("train (moe)", _train_model, _const(TINY_MODERN), argv=train),
        Target("train (jobs)", _train_model, _const(TINY_JOBS), argv=train,
               exclude={("workload",): "exactly one of workload and jobs: with jobs, each job is a workload section "
                                       "(jobs[0] is fuzzed)"}),
        # `axes` replaced: a field only the axes gave (size, topology) is then missing from the base
        Target("sweep", sweep_roots, _const(TINY_SWEEP), "s.yaml", ("sweep", "{f}", "--out", "{d}/o", "-j", "1", "-q"),
               related={"axes": ("base", "size", "topology", "algorithm", "root")}),
        Target("traffic", traffic_roots, _const(TINY_TRAFFIC), "t.yaml", ("traffic", "{f}", "-q", "--json")),
        Target("topology optimize", job_roots, _const(TINY_JOB), "j.yaml",
               ("topology", "optimize", "{f}", "--out", "{d}/o", "-q")),
        Target("plan", plan_roots, _const(TINY_PLAN), "p.yaml",
               ("plan", "{f}", "--out", "{d}/o", "-j", "1", "-q", "--json"),
               exclude={("workload", "parallelism"): "a plan config has no workload.parallelism: the search sets it "
                                                      "(search.fixed and the knobs are fuzzed instead)"}),
    ]
    out += [Target(f"reproduce {n}", _study_roots(n), _study_base(n), f"{n}.yaml", study=n,
                   related=STUDY_RELATED.get(n, {})) for n in EXPERIMENTS]
    return out


# ---- the command tree walker ---------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One parameter of one command: its path (`topology optimize`), its names (`--out`), whether it
    is a flag, an argument, repeatable."""

    command: tuple[str, ...]
    name: str
    opts: tuple[str, ...]
    kind: str  # option, flag, argument
    multiple: bool = False

    @property
    def id(self) -> str:
        return " ".join(self.command) + " " + (self.opts[0] if self.opts else self.name)


def cli_commands() -> dict[tuple[str, ...], list[Option]]:
    """Every command of `fabricsim` (groups expanded, the lazily listed `reproduce` studies too) ->
    its parameters, read from the click tree typer builds. The top-level group's own options
    (`--limit`) are under the key ()."""
    import typer

    from fabricsim.cli import app

    root = typer.main.get_command(app)
    ctx_cls = type(root).context_class
    out: dict[tuple[str, ...], list[Option]] = {}

    def params(cmd, path):
        res = []
        for p in cmd.params:
            opts = tuple(getattr(p, "opts", ())) + tuple(getattr(p, "secondary_opts", ()))
            if p.param_type_name == "argument":
                res.append(Option(path, p.name, (), "argument"))
            else:
                res.append(Option(path, p.name, opts, "flag" if p.is_flag else "option", bool(p.multiple)))
        return res

    def walk(cmd, path, ctx):
        if hasattr(cmd, "list_commands"):
            if path == ():
                out[()] = params(cmd, ())
            for name in cmd.list_commands(ctx):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not getattr(sub, "hidden", False):
                    walk(sub, path + (name,), ctx_cls(sub, parent=ctx, info_name=name))
        else:
            out[path] = params(cmd, path)

    walk(root, (), ctx_cls(root, info_name="fabricsim"))
    return out


# command-line values for an option (each in place of the base invocation's value)
HOSTILE_ARGS = ("", " ", "-1", "0", "nan", "inf", "-inf", "1e309", "-1e309", "99999999999999999999999", "1.5",
                "0x10", "fuzz-unknown-name", "5 parsecs", "-5GB/s", "a,b,,", ":", "=", "é中", "x" * 3000,
                "--quiet")
# files for an argument that names one: missing, a folder, empty, binary, not a mapping, bad YAML
HOSTILE_FILES = (("{d}/missing.yaml", None), ("{d}", None), ("{d}/empty.yaml", ""),
                 ("{d}/bin.yaml", b"\x00\xff\xfe\x80binary"), ("{d}/list.yaml", "- 1\n- 2\n"),
                 ("{d}/bad.yaml", "a: [1,\n  b: {\n"), ("{d}/scalar.yaml", "5 parsecs\n"),
                 ("{d}/deep.yaml", "a: " + "[" * 200 + "]" * 200 + "\n"), ("", None))


@dataclass(frozen=True)
class Invocation:
    """A small valid invocation of a command: argv (`{d}` the case's folder) and files it needs."""

    argv: tuple[str, ...]
    files: tuple[tuple[str, str], ...] = ()
    setup: tuple[tuple[str, ...], ...] = ()  # commands run first in the folder (a sweep for `plot`)


def _dump(d: dict) -> str:
    return yaml.safe_dump(d, sort_keys=False)


def base_invocations() -> dict[tuple[str, ...], Invocation]:
    """A small valid invocation of every command the walker fuzzes (a command missing here and from
    `SKIPPED_COMMANDS` fails the test: a new command needs one line here)."""
    astra = ("astra", "--workload-configuration", f"{ASTRA}/workloads/all_reduce_8_1048576/x",
             "--system-configuration", f"{ASTRA}/systems/sys_ring_1d_s4_a1.json",
             "--network-configuration", f"{ASTRA}/networks/Ring_8.yml", "-q")
    train = {**TINY_TRAIN, "output": {"trace": False, "plot": False}}
    sweep = {"name": "s", "kind": "collective", "base": {"collective": "all-reduce", "topology": "ring:4",
                                                         "model": "analytical"},
             "axes": [{"grid": {"size": ["1KiB", "1MiB"]}}]}
    return {
        (): Invocation(("collective", "-t", "ring:4", "-s", "1MiB", "-q")),
        ("collective",): Invocation(("collective", "-t", "ring:4", "-s", "1MiB", "-a", "ring", "-q", "--json")),
        ("topologies",): Invocation(("topologies",)),
        ("algorithms",): Invocation(("algorithms",)),
        ("models",): Invocation(("models",)),
        ("traffic",): Invocation(("traffic", "{d}/t.yaml", "-q", "--json"), (("t.yaml", _dump(TINY_TRAFFIC)),)),
        ("train",): Invocation(("train", "{d}/c.yaml", "--out", "{d}/o", "-q", "--json"), (("c.yaml", _dump(train)),)),
        ("astra",): Invocation(astra + ("--json",)),
        ("demo",): Invocation(("demo",)),
        ("sweep",): Invocation(("sweep", "{d}/s.yaml", "--out", "{d}/o", "-j", "1", "-q"), (("s.yaml", _dump(sweep)),)),
        ("plot",): Invocation(("plot", "{d}/r", "--x", "size_bytes", "--y", "time_s", "-o", "{d}/p.png"),
                              (("s.yaml", _dump(sweep)),),
                              (("sweep", "{d}/s.yaml", "--out", "{d}/r", "-j", "1", "-q"),)),
        ("plan",): Invocation(("plan", "{d}/p.yaml", "--out", "{d}/o", "-j", "1", "-q", "--json"),
                              (("p.yaml", _dump(TINY_PLAN)),)),
        ("export", "chakra"): Invocation(("export", "chakra", "-o", "{d}/ar", "--collective", "all-reduce", "-n", "4",
                                          "-s", "1MiB")),
        ("topology", "optimize"): Invocation(("topology", "optimize", "{d}/j.yaml", "--out", "{d}/o", "-q"),
                                             (("j.yaml", _dump(TINY_JOB)),)),
    }


SKIPPED_COMMANDS = {
    ("reproduce", "*"): "a valid value of any option runs the study (--quick takes tens of seconds to minutes); "
                        "each study's config is fuzzed through its load_config instead (targets()), and --config "
                        "gets only files that must be refused (HOSTILE_FILES)",
}
# options whose hostile values are not run, with the reason
SKIPPED_OPTIONS = {
    "--dask": "a scheduler address that parses (tcp://host:port) makes the run wait for the scheduler "
              "(distributed's connect timeout); only values that must be refused before connecting are tried",
}
DASK_VALUES = ("", "nope", "local:0", "local:-1", "local:99999999999", "local:x", "tcp://", "tcp://:", "udp://h:1",
               "tcp://h:99999999")


def _skipped(cmd: tuple[str, ...]) -> str:
    for k, why in SKIPPED_COMMANDS.items():
        if k == cmd or (k[-1] == "*" and cmd[:len(k) - 1] == k[:-1] and len(cmd) == len(k)):
            return why
    return ""


@dataclass(frozen=True)
class Case:
    """One input: argv (`{d}` the case's folder), files written first, what the one error line may
    name; `study` set: call that study's load_config on `{d}/<file>` instead of the CLI."""

    target: str
    argv: tuple[str, ...]
    names: tuple[str, ...]
    files: tuple[tuple[str, str | bytes | None], ...] = ()
    setup: tuple[tuple[str, ...], ...] = ()
    study: str = ""
    where: str = ""  # the leaf or option
    value: str = ""  # the hostile value
    path: bool = False  # the value is a path: an error may name it in the field's place

    @property
    def key(self) -> str:
        """A stable id: target | where | value."""
        return f"{self.target} | {self.where} | {self.value[:60]}"


def schema_cases(target: Target, per_leaf: int | None = None, offset: int = 0, stride: int = 1) -> list[Case]:
    """Cases for every leaf of `target` (every `stride`-th, from `offset`): all its hostile values
    (`per_leaf` None) or `per_leaf` of them, rotated by the leaf's position (and `offset`) so that
    every value is tried somewhere."""
    data = target.base()
    out = []
    for i, lf in enumerate(target.leaves()):
        if (i + offset) % stride:
            continue
        values = ["1"] if lf.kind == "unknown" else hostile_values(lf)
        if per_leaf is not None:
            values = [values[(i * per_leaf + offset + k) % len(values)] for k in range(min(per_leaf, len(values)))]
        for v in values:
            case = mutation_case(target, lf, v, data)
            if case is not None:
                out.append(case)
    return out


def mutation_case(target: Target, lf: Leaf, raw: str, data: dict | None = None) -> Case | None:
    """The case of one leaf set to the YAML fragment `raw` (None if the path cannot be reached)."""
    data = target.base() if data is None else data
    text = mutate(data, lf.path, raw)
    if text is None:
        return None
    names = lf.names + RELATED.get(lf.path[-1], ()) + CONSEQUENCES + _referrers(data, lf)
    names += tuple(n for pat, ns in target.related.items() if fnmatch.fnmatchcase(lf.dotted, pat) for n in ns)
    if raw in RESETS:  # a key reset may leave a sibling that needed it (`units` without `policy: npu`)
        names += tuple(k for k in _at(data, lf.path[:-1]) if isinstance(k, str))
    if target.study:
        return Case(target.name, (), names, ((target.filename, text),), study=target.study, where=lf.dotted, value=raw)
    argv = tuple(a.replace("{f}", "{d}/" + target.filename) for a in target.argv)
    return Case(target.name, argv, names, ((target.filename, text),), where=lf.dotted, value=raw)


def _referrers(data: Any, lf: Leaf) -> tuple[str, ...]:
    """Keys elsewhere in the base whose value is the leaf's base text (a name or a size other fields
    refer to: renaming `shapes[0].name` leaves `bandwidth_sweep.shape` naming no shape, and the error
    rightly names the reference)."""
    b = lf.base
    if not (isinstance(b, str) and len(b) >= 2):
        return ()
    out: list[str] = []

    def walk(x, path):
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, path + (k,))
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, path + (i,))
        elif x == b and path != lf.path:
            keys = [p for p in path if isinstance(p, str)]
            if keys:
                out.append(keys[-1])
    walk(data, ())
    return tuple(dict.fromkeys(out))


def base_case(target: Target) -> Case:
    """The target's base config, unchanged (it must run: exit 0)."""
    return mutation_case(target, Leaf((UNKNOWN_KEY,), "unknown"), DELETE)


def _at(data: Any, path: tuple) -> dict:
    """The mapping at `path` in `data` ({} when there is none)."""
    for p in path:
        if isinstance(p, int):
            data = data[p] if isinstance(data, list) and len(data) > p else {}
        else:
            data = data.get(p, {}) if isinstance(data, dict) else {}
    return data if isinstance(data, dict) else {}


# checks any value may fail as a consequence: a larger model, batch or sequence may not fit the
# device memory (the memory check names `system.npu.memory`, the capacity it compares against)
CONSEQUENCES = ("system.npu.memory",)
# a value valid alone may conflict with another field: the error may name that one instead (a
# topology without I/O controllers refuses input_loading and weight_streaming)
RELATED = {"input_loading": ("network.topology",), "weight_streaming": ("network.topology",),
           "input_prefetch": ("network.topology",)}


def _replace(argv: tuple[str, ...], opt: Option, value: str) -> tuple[str, ...]:
    """argv with the option's value replaced (appended when the invocation does not give it)."""
    a = list(argv)
    for i, x in enumerate(a):
        if x in opt.opts and i + 1 < len(a):
            a[i + 1] = value
            return tuple(a)
    return tuple(a) + (opt.opts[0], value)


def option_cases(cmd: tuple[str, ...], opts: list[Option], inv: Invocation) -> list[Case]:
    """Hostile values of every parameter of `cmd` on its base invocation: each value of
    `HOSTILE_ARGS` (`DASK_VALUES` for --dask), the option twice (with a hostile value first and last),
    a flag given twice or with a value, an argument naming each of `HOSTILE_FILES`."""
    target = "cli " + (" ".join(cmd) or "fabricsim")
    out: list[Case] = []
    argv0 = inv.argv
    for o in opts:
        names = option_names(o)
        pathy = is_path(o, argv0)
        mk = lambda argv, val, files=(): out.append(  # noqa: E731
            Case(target, tuple(argv), names, tuple(inv.files) + tuple(files), inv.setup, where=o.id, value=val,
                 path=pathy))
        if o.kind == "argument":
            pos = _argument_index(cmd, argv0)
            for path, content in HOSTILE_FILES:
                argv = list(argv0)
                argv[pos] = path
                files = () if content is None else ((path.removeprefix("{d}/"), content),)
                out.append(Case(target, tuple(argv), names, tuple(inv.files) + files, inv.setup, where=o.id,
                                value=path, path=True))
            continue
        if cmd == ():  # the group's own options go before the command
            for v in HOSTILE_ARGS + ("npus=0", "npus=-1", "npus=nan", "npus=1e309", "nope=1", "npus", "=5",
                                     "npus=99999999999999999999999"):
                mk((o.opts[0], v) + argv0, v)
            mk((o.opts[0], "npus=10", o.opts[0], "npus=nope") + argv0, "twice")
            continue
        if o.kind == "flag":
            mk(argv0 + (o.opts[0], o.opts[0]), "twice")
            mk(argv0 + (o.opts[0] + "=yes",), "=yes")
            continue
        values = DASK_VALUES if o.opts[0] in SKIPPED_OPTIONS else HOSTILE_ARGS
        for v in values:
            mk(_replace(argv0, o, v), v)
        given = next((argv0[i + 1] for i, x in enumerate(argv0) if x in o.opts and i + 1 < len(argv0)), None)
        good = given if given is not None else "1"
        first = argv0 + (o.opts[0], "nan") if given is None else _replace(argv0, o, "nan")
        mk(first + (o.opts[0], good), "twice (nan, then valid)")
        mk(_replace(argv0, o, good) + (o.opts[0], "-1"), "twice (valid, then -1)")
    return out


def option_names(o: Option) -> tuple[str, ...]:
    """What an error about option `o` may name: `--topology`, `-t`, `topology`, its parameter name."""
    longs = tuple(x[2:] for x in o.opts if x.startswith("--"))
    return tuple(dict.fromkeys(tuple(o.opts) + longs + (o.name, o.name.replace("_", "-"))))


_PATHY = re.compile(r"(^|_)(out|output|config|configuration|file|text|train|plot|timeline|results)$")


def is_path(o: Option, argv: tuple[str, ...]) -> bool:
    """Whether option `o` takes a path (an argument, a value with a folder in the base invocation, or
    a name such as `--out`, `--config`, `--workload-configuration`): its errors may name the path."""
    if o.kind == "argument":
        return True
    given = next((argv[i + 1] for i, x in enumerate(argv) if x in o.opts and i + 1 < len(argv)), "")
    return "/" in given or bool(_PATHY.search(o.name))


def _argument_index(cmd: tuple[str, ...], argv: tuple[str, ...]) -> int:
    """Where the positional argument sits in a base invocation: right after the command path (every
    base invocation writes it there)."""
    return len(cmd)


def study_config_cases() -> list[Case]:
    """`fabricsim reproduce NAME --config FILE` with files that must be refused before anything runs."""
    from fabricsim.experiments import EXPERIMENTS

    out = []
    for n in EXPERIMENTS:
        for path, content in HOSTILE_FILES:
            if not path:
                continue  # `--config ''`: see SKIPPED_COMMANDS (might mean the shipped config)
            files = () if content is None else ((path.removeprefix("{d}/"), content),)
            out.append(Case(f"cli reproduce {n}", ("reproduce", n, "--config", path, "--quick", "--out", "{d}/o", "-q"),
                            ("--config", "config"), files, where=f"reproduce {n} --config", value=path, path=True))
    return out


def cli_cases() -> list[Case]:
    """Every command's every parameter (`option_cases`), the studies' `--config` files; raises
    AssertionError naming a command that has neither a base invocation nor a reason to skip it."""
    invs = base_invocations()
    out, missing = [], []
    for cmd, opts in cli_commands().items():
        if _skipped(cmd):
            continue
        if cmd not in invs:
            missing.append(" ".join(cmd))
            continue
        out += option_cases(cmd, opts, invs[cmd])
    assert not missing, f"commands without a base invocation in tests/fuzz_schema.py: {missing}"
    return out + study_config_cases()


# ---- running one case ----------------------------------------------------------------------------


class _Hang(BaseException):
    pass


class _Runaway(BaseException):
    pass


MAX_WORKERS = 64


@contextlib.contextmanager
def _pool_guard():
    """Process pools asked for more than `MAX_WORKERS` workers are refused before anything forks
    (`--workers 99999999999999999999999` would fork until the machine stops)."""
    import multiprocessing
    import multiprocessing.pool

    real = multiprocessing.Pool

    def guarded(processes=None, *a, **k):
        if processes is not None and processes > MAX_WORKERS:
            raise _Runaway(f"multiprocessing.Pool({processes}) asked for")
        return real(processes, *a, **k)

    multiprocessing.Pool = guarded
    try:
        yield
    finally:
        multiprocessing.Pool = real


@contextlib.contextmanager
def _memory_cap(extra_bytes: int):
    """Lower the soft address-space limit to what the process holds now plus `extra_bytes`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    try:
        with open("/proc/self/statm") as f:
            vsz = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        vsz = 0
    cap = vsz + extra_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ValueError, OSError):
        pass
    try:
        yield
    finally:
        try:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        except (ValueError, OSError):
            pass


@dataclass
class Outcome:
    """How one case ended: its class, exit code, stderr, the end of stdout, seconds, a note."""

    verdict: str
    rc: int | None
    err: str
    out: str
    seconds: float
    note: str = ""


def _write_files(folder: Path, files) -> None:
    for name, content in files:
        if content is None or not name:
            continue
        p = folder / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content) if isinstance(content, bytes) else p.write_text(content)


def run_case(case: Case, folder: Path, timeout_s: float = 30.0, memory_bytes: int | None = 3 * 2**30) -> Outcome:
    """Run one case in this process (its own folder as the working directory) and judge it; the
    address space may grow by `memory_bytes` meanwhile (None: no cap here; `Runner` caps its child)."""
    from fabricsim.cli import main

    folder.mkdir(parents=True, exist_ok=True)
    _write_files(folder, case.files)
    sub = lambda a: a.replace("{d}", str(folder))  # noqa: E731
    home = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    rc, how, note = None, "", ""
    caught: list = []
    old = signal.signal(signal.SIGALRM, _alarm)
    t0 = time.perf_counter()
    try:
        os.chdir(folder)
        for s in case.setup:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                assert main([sub(a) for a in s]) == 0, f"setup failed: {s}"
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        cap = _memory_cap(memory_bytes) if memory_bytes else contextlib.nullcontext()
        with warnings.catch_warnings(record=True) as caught, _pool_guard(), cap, \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            warnings.simplefilter("always")
            if case.study:
                rc = _load_study(case.study, folder / case.files[0][0])
            else:
                rc = main([sub(a) for a in case.argv])
    except _Hang:
        how = "hang"
    except _Runaway as e:
        how, note = "runaway", str(e)
    except BaseException as e:  # noqa: BLE001 - anything escaping main() is a defect
        import traceback

        err.write("Traceback (escaped main)\n" + "".join(traceback.format_exception_only(type(e), e)))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        os.chdir(home)
    secs = time.perf_counter() - t0
    text = err.getvalue().replace(str(folder), "{d}")
    stdout = out.getvalue().replace(str(folder), "{d}")
    noisy = [f"{w.category.__name__}: {w.message}" for w in caught
             if issubclass(w.category, RuntimeWarning) and re.search(r"overflow|invalid value|divide by zero",
                                                                      str(w.message))]
    v, why = verdict(case, rc, stdout, text, how, noisy)
    return Outcome(v, rc, text[-600:], stdout[-300:], round(secs, 3), note or why)


def _alarm(*_):
    raise _Hang()


def _load_study(name: str, path: Path) -> int:
    """The in-process stand-in for a run: the study's `load_config(path)`; a ConfigError printed as
    the CLI prints it (exit 2), anything else escapes as a traceback."""
    from fabricsim.errors import ConfigError
    from fabricsim.experiments import EXPERIMENTS

    try:
        EXPERIMENTS[name].load_config(str(path))
    except ConfigError as e:
        print(f"fabricsim: error: {e}", file=sys.stderr)
        return 2
    return 0


_WORD = r"(?<![A-Za-z0-9_]){}(?![A-Za-z0-9_])"


def names_field(line: str, names: tuple[str, ...], files: tuple = ()) -> bool:
    """Whether the error line names one of `names` (as a word, outside the file paths it cites)."""
    text = line
    for name, _ in files:
        if name:
            text = text.replace("{d}/" + name, "")
    return any(n and re.search(_WORD.format(re.escape(n)), text, re.IGNORECASE) for n in names)


def names_path(line: str, value: str) -> bool:
    """Whether the error's field slot (`fabricsim: error: SLOT: ...`) is the path given (non-blank)."""
    slot = line.removeprefix("fabricsim: error:").strip()
    return bool(value.strip()) and slot.startswith(value)


def verdict(case: Case, rc: int | None, out: str, err: str, how: str = "",
            noisy: list | None = None) -> tuple[str, str]:
    """The class of one run (module doc) and why."""
    if how:
        return how, ""
    if "Traceback" in err or rc not in (0, 2):
        return "traceback", err.strip().splitlines()[-1][:200] if err.strip() else f"exit {rc}"
    lines = [ln for ln in err.splitlines() if ln.strip()]
    if rc == 0:
        if case.value in SILENT_COERCIONS:
            return "absurd", f"YAML read {case.value} as {SILENT_COERCIONS[case.value]} without a word"
        bad = absurd(out, text_nan="nan" not in case.value.lower())
        if bad:
            return "absurd", bad
        if noisy:
            return "absurd", noisy[0]
        return "ok", ""
    if len(lines) != 1 or not lines[0].startswith("fabricsim: error:"):
        return "multi-line", f"{len(lines)} lines"
    line = lines[0] if case.path or not case.argv or len(case.value) < 1 else lines[0].replace(case.value, "")
    if not names_field(line, case.names, case.files) and not (case.path and names_path(lines[0], case.value)):
        return "wrong-field", f"expected one of {case.names}" + (f" or the path {case.value!r}" if case.path else "")
    return "error", ""


def absurd(out: str, text_nan: bool = True) -> str:
    """What is absurd in a run's output: NaN anywhere, a negative or infinite time (`--json` keys
    ending `_s`, `time`), or `nan` in a table; '' when nothing is."""
    text = out.strip()
    if text.startswith("{") or text.startswith("["):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if data is not None:
            for key, v in _numbers(data):
                if isinstance(v, float) and math.isnan(v):
                    return f"{key} is NaN"
                if re.search(r"(_s|time)$", key) and isinstance(v, (int, float)) and not isinstance(v, bool) \
                        and (v < 0 or math.isinf(v)):
                    return f"{key} = {v}"
            return ""
    if text_nan and re.search(r"(?<![A-Za-z])nan(?![A-Za-z])", text, re.IGNORECASE):
        return "nan in the output"
    return ""


def _numbers(x, key=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _numbers(v, str(k))
    elif isinstance(x, list):
        for v in x:
            yield from _numbers(v, key)
    elif isinstance(x, (int, float)):
        yield key, x


# ---- a child process that runs cases, killed and restarted when one is stuck ---------------------


def case_to_json(case: Case) -> dict:
    """A case as JSON (bytes as hex)."""
    d = {k: getattr(case, k) for k in Case.__dataclass_fields__}
    d["files"] = [[n, {"hex": c.hex()} if isinstance(c, bytes) else c] for n, c in case.files]
    return d


def case_from_json(d: dict) -> Case:
    """The inverse of `case_to_json`."""
    files = tuple((n, bytes.fromhex(c["hex"]) if isinstance(c, dict) else c) for n, c in d["files"])
    return Case(**{**d, "argv": tuple(d["argv"]), "names": tuple(d["names"]), "files": files,
                   "setup": tuple(tuple(s) for s in d["setup"])})


class Runner:
    """Runs cases in one child process (address space capped at `memory_bytes`), each under an
    alarm of `timeout_s`; a case still running `grace_s` after its alarm (stuck in compiled code,
    where a signal handler never runs) is a `hang`: the child is killed and the next case starts a
    new one. A child that dies inside a case (killed for memory) records a `traceback`."""

    def __init__(self, workdir: Path, timeout_s: float = 30.0, memory_bytes: int = 3 * 2**30, grace_s: float = 15.0):
        self.workdir, self.timeout_s, self.memory_bytes, self.grace_s = Path(workdir), timeout_s, memory_bytes, grace_s
        self.proc = None
        self.rfd = None
        self.n = 0

    def _start(self) -> None:
        import subprocess

        r, w = os.pipe()
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", str(w), str(self.memory_bytes)],
                                     stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     pass_fds=(w,), text=True)
        os.close(w)
        self.rfd = os.fdopen(r, "r")

    def run(self, case: Case, timeout_s: float | None = None) -> Outcome:
        """Run one case; its outcome."""
        import select

        timeout_s = timeout_s or self.timeout_s
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.n += 1
        folder = self.workdir / f"case{self.n}"
        self.proc.stdin.write(json.dumps({"case": case_to_json(case), "folder": str(folder),
                                          "timeout_s": timeout_s}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.rfd], [], [], timeout_s + self.grace_s + 30.0)  # + the child's start-up
        line = self.rfd.readline() if ready else ""
        if line:
            d = json.loads(line)
            return Outcome(**d)
        if ready:  # EOF: the child died inside the case
            rc = self.proc.wait()
            self._reset()
            return Outcome("traceback", None, f"the process died (signal {-rc})" if rc < 0 else f"exit {rc}", "", 0.0,
                           "killed" if rc in (-9, 137) else "crash")
        self.close()
        return Outcome("hang", None, "", "", timeout_s + self.grace_s, "stuck past its alarm (compiled code): killed")

    def _reset(self) -> None:
        with contextlib.suppress(Exception):
            self.rfd.close()
        self.proc, self.rfd = None, None

    def close(self) -> None:
        """Stop the child."""
        if self.proc is not None:
            with contextlib.suppress(Exception):
                self.proc.kill()
                self.proc.wait()
        self._reset()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _serve(result_fd: int, memory_bytes: int) -> None:
    """The child of `Runner`: one JSON request per stdin line, one outcome per line on `result_fd`."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    import dataclasses

    import fabricsim.cli  # noqa: F401  (imported before the first alarm)

    sink = os.fdopen(result_fd, "w")
    for line in sys.stdin:
        req = json.loads(line)
        o = run_case(case_from_json(req["case"]), Path(req["folder"]), req["timeout_s"], memory_bytes=None)
        sink.write(json.dumps(dataclasses.asdict(o)) + "\n")
        sink.flush()


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "--serve":
    sys.path.insert(0, str(Path(__file__).parent))
    _serve(int(sys.argv[2]), int(sys.argv[3]))
