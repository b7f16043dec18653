"""The schema of a `fabricsim plan` config: a `fabricsim train` config (`fabricsim.train_config`)
whose workload names no strategy, plus a `search:` section naming the strategies to try.

```yaml
search:
  gpus: 1024            # optional; default: the network's NPUs (must equal them if given)
  batch: 1536           # optional; default workload.batch (global batch, sequences)
  tp: [1, 2, 4, 8]      # each knob: a list, one value, or a range "1-8" (the powers of two in it)
  pp: 1-64
  cp: [1]
  ep: [1]
  virtual_stages: [1, 2, 4]
  microbatch: [1, 2, 4] # microbatch SIZE, sequences (microbatches per pipeline = batch / (dp x microbatch))
  recompute: [none, selective, full]
  sequence_parallel: [false, true]
  zero: [0, 1, 2]
  fixed: {attention: fused, optimizer: adam, schedule: 1f1b}   # any other workload.parallelism key
  constraints: {tp_within_node: true, memory_headroom: 0.1}
  top: 10               # results shown
  simulate: 100         # how many of the best by estimate the engine simulates
  seed: 0
```
dp is derived: gpus / (tp x pp x cp). Every field is checked when the file is loaded, each error
one line naming the field (`p.yaml: search.tp: invalid value [0, 3]; accepted: ...`), as
`fabricsim.config.validate` writes them; `workload.parallelism` is refused (the search chooses it).
`load_plan_config` reads a file, `plan_config` validates a mapping, `train_config_for` writes the
`fabricsim train` config of one point.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, StrictBool, StrictInt, field_validator, model_validator

from ..config import errors_in, read_yaml_mapping, validate
from ..errors import ConfigError
from ..inputs import _short
from ..limits import check_limit
from ..train_config import ParallelismSection, TrainConfig
from ..workload.strategy import RECOMPUTES
from ..workload_config import _Strict

KNOBS = ("tp", "pp", "cp", "ep", "virtual_stages", "microbatch", "recompute", "sequence_parallel", "zero")
"""The knobs of the search, in the order `plan.space` nests them (the first varies slowest)."""

DERIVED = {"mp": "a knob: give its choices as search.tp", "dp": "derived: gpus / (tp x pp x cp)",
           "microbatches": "derived: batch / (dp x microbatch); give microbatch sizes as search.microbatch",
           "etp": "derived: the experts split over tp (the only layout modelled)"}
"""workload.parallelism keys `search.fixed` refuses (besides the knobs), and why."""

FIXED_KEYS = tuple(k for k in ParallelismSection.model_fields if k not in KNOBS and k not in DERIVED)
"""The workload.parallelism keys `search.fixed` accepts: the same for every candidate."""

"""Most combinations of the knobs a search may name (each is judged in about 0.1 ms: 1e6 is minutes)."""

_POW2 = ("integers >= 1, distinct: a list ([1, 2, 4]), one value (8) or a range string '1-8' "
         "(the powers of two in it)")


def _int_choices(field: str, v: Any) -> tuple[int, ...]:
    """A knob of integers: a list, one value or a range string of powers of two, sorted."""
    if isinstance(v, str):
        parts = v.split("-")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise ConfigError(field, v, f"accepted: {_POW2}")
        lo, hi = int(parts[0]), int(parts[1])
        out = [1 << k for k in range(hi.bit_length()) if lo <= 1 << k <= hi]
        if lo < 1 or not out:
            raise ConfigError(field, v, f"no power of two >= 1 in the range; accepted: {_POW2}")
        return tuple(out)
    items = v if isinstance(v, list) else [v]
    ok = bool(items) and all(isinstance(x, int) and not isinstance(x, bool) and x >= 1 for x in items)
    if not ok or len(set(items)) != len(items):
        raise ConfigError(field, v, f"accepted: {_POW2}")
    return tuple(sorted(items))


def _named_choices(field: str, v: Any, names: tuple, what: str) -> tuple:
    """A knob of names (or booleans, or ZeRO stages): a list or one value, in the order of `names`."""
    items = v if isinstance(v, list) else [v]
    # `x in names` alone would take 1 for True and False for 0: the types must match too
    same = [any(type(x) is type(n) and x == n for n in names) for x in items]
    if not items or not all(same) or len(set(items)) != len(items):
        raise ConfigError(field, v, f"accepted: {what}, distinct, as a list or one value")
    return tuple(n for n in names if n in items)


class ConstraintsSection(_Strict):
    """`search.constraints:` what every candidate must satisfy besides running.

    Parameters
    ----------
    tp_within_node : bool
        Tensor-parallel groups inside a node: tp <= GPUs per node, where the topology has nodes
        (`Topology.node_gpus`: the dgx presets); vacuous elsewhere.
    memory_headroom : float
        Share of the NPU's memory kept free, in [0, 1): the memory model's peak per GPU must be
        at most (1 - memory_headroom) x its memory.
    """

    tp_within_node: StrictBool = True
    memory_headroom: float = Field(default=0.0, ge=0.0, lt=1.0)

    @field_validator("memory_headroom", mode="before")
    @classmethod
    def _number(cls, v):
        if isinstance(v, bool) or not isinstance(v, (int, float)):  # no '0.1' text, no true
            raise ConfigError("memory_headroom", v, "accepted: a number in [0, 1)")
        return v


class SearchSection(_Strict):
    """`search:` the strategies `fabricsim plan` tries (module doc).

    Parameters
    ----------
    gpus : int, optional
        GPUs of the job; default (and the only value accepted) the network's NPUs.
    batch : int, optional
        Global batch, sequences; default `workload.batch`.
    tp, pp, cp, ep, virtual_stages, microbatch : tuple of int
        Choices of tensor, pipeline, context, expert parallelism, model chunks per stage and
        microbatch size (sequences), sorted; written as a list, one value or a range string.
    recompute : tuple of str
        Choices of none, selective, full.
    sequence_parallel : tuple of bool
        Choices of false, true.
    zero : tuple of int
        Choices of ZeRO stages 0 to 3.
    fixed : dict
        Other workload.parallelism keys (`FIXED_KEYS`), the same for every candidate, as written.
    constraints : ConstraintsSection
    top : int
        Results shown, >= 1.
    simulate : int
        How many of the best by estimate the engine simulates, >= 1.
    seed : int
        Seed of anything random in the search, >= 0.
    """

    gpus: StrictInt | None = Field(default=None, ge=1)
    batch: StrictInt | None = Field(default=None, ge=1)
    tp: Any = (1,)
    pp: Any = (1,)
    cp: Any = (1,)
    ep: Any = (1,)
    virtual_stages: Any = (1,)
    microbatch: Any = (1,)
    recompute: Any = ("none",)
    sequence_parallel: Any = (False,)
    zero: Any = (0,)
    fixed: dict[str, Any] = Field(default_factory=dict)
    constraints: ConstraintsSection = Field(default_factory=ConstraintsSection)
    top: StrictInt = Field(default=10, ge=1)
    simulate: StrictInt = Field(default=100, ge=1)
    seed: StrictInt = Field(default=0, ge=0)

    _ints = field_validator("tp", "pp", "cp", "ep", "virtual_stages", "microbatch", mode="before")(
        lambda v, info: _int_choices(info.field_name, v))
    _recompute = field_validator("recompute", mode="before")(
        lambda v: _named_choices("recompute", v, RECOMPUTES, ", ".join(RECOMPUTES)))
    _sp = field_validator("sequence_parallel", mode="before")(
        lambda v: _named_choices("sequence_parallel", v, (False, True), "false, true"))
    _zero = field_validator("zero", mode="before")(lambda v: _named_choices("zero", v, (0, 1, 2, 3), "0, 1, 2, 3"))

    @field_validator("fixed", mode="before")
    @classmethod
    def _fixed(cls, v):
        if not isinstance(v, dict):
            raise ConfigError("fixed", v, "accepted: a mapping of workload.parallelism keys: " + ", ".join(FIXED_KEYS))
        for k in v:
            if k in KNOBS or k in DERIVED:
                raise ConfigError(k, v[k], DERIVED.get(k, f"a knob: give its choices as search.{k}"))
            if k not in FIXED_KEYS:
                raise ConfigError(k, v[k], "unknown field; accepted: " + ", ".join(FIXED_KEYS))
        validate(ParallelismSection, v, "fixed")  # each value as workload.parallelism takes it
        return dict(v)

    @model_validator(mode="after")
    def _bounded(self):
        # refused before minutes of enumeration (`fabricsim.limits`: --limit combos=N raises it)
        check_limit("combos", self.combos(), "combinations of the knobs (tp x pp x cp x ep x virtual_stages x "
                    "microbatch x recompute x sequence_parallel x zero)", "search", self.combos())
        return self

    def choices(self) -> dict[str, tuple]:
        """Each knob's values, ranges expanded, in `KNOBS` order.

        Returns
        -------
        dict
            Knob -> tuple of values (integers sorted; names and booleans in their canonical order).
        """
        return {k: tuple(getattr(self, k)) for k in KNOBS}

    def combos(self) -> int:
        """Combinations of the knobs: the product of the numbers of choices."""
        n = 1
        for values in self.choices().values():
            n *= len(values)
        return n


class _PlanSearch(_Strict):
    search: SearchSection  # validated under its own key, so that errors name `search.<field>`


@dataclass(frozen=True, eq=False)
class PlanConfig:
    """A validated plan config (module doc).

    Parameters
    ----------
    train : TrainConfig
        The config without `search`, its workload at the searched batch and without parallelism.
    search : SearchSection
    source : str or None
        The file it was read from (named first in errors), or None.
    mapping : dict
        The config's mapping without `search`, `workload.batch` the searched batch: what
        `train_config_for` completes (paths in it are relative to `train.base_dir`).
    fixed : ParallelismSection
        `search.fixed` validated (every other key at its default).
    n_gpus : int
        GPUs the strategies use: the network's NPUs.
    gpus_per_node : int or None
        GPUs per node of the topology (`Topology.node_gpus`), None where it has no nodes.
    """

    train: TrainConfig
    search: SearchSection
    source: str | None
    mapping: dict
    fixed: ParallelismSection
    n_gpus: int
    gpus_per_node: int | None

    @property
    def batch(self) -> int:
        """Global batch searched, sequences."""
        return self.train.workload.batch

    def base_strategy(self):
        """The `Strategy` of the fixed keys with every knob at 1 (`plan.space` replaces the knobs).

        Returns
        -------
        workload.strategy.Strategy
        """
        w = self.train.workload.model_copy(update={"parallelism": self.fixed})
        try:
            return w.strategy()
        except ConfigError as e:  # `parallelism.schedule` -> `search.fixed.schedule`
            key = str(e.field).split(".")[-1]
            raise ConfigError(f"{self.source or 'plan'}: search.fixed.{key}", e.value, e.accepted) from None


def load_plan_config(path: str | Path) -> PlanConfig:
    """The plan config in the YAML file `path` (module doc), every section checked when read: a
    one-line ConfigError names the file and the field otherwise. Relative paths inside the file
    are taken from its folder. Returns a `PlanConfig`."""
    data = read_yaml_mapping(path, "network, system, workload, output, search")
    return plan_config(data, str(path), base_dir=str(Path(path).resolve().parent), from_file=True)


def plan_config(data: dict, source: str | None = None, *, base_dir: str = ".", from_file: bool = False) -> PlanConfig:
    """Validate a plan config's mapping (module doc).

    Parameters
    ----------
    data : dict
        The parsed config.
    source : str, optional
        The file it came from, named first in errors (default: "plan").
    base_dir : str
        Folder relative paths are resolved against.
    from_file : bool
        Read from a file: bandwidths, times and rates need their units (`config.validate`).

    Returns
    -------
    PlanConfig
        ConfigError, one line naming the field, for anything refused.
    """
    where = source or "plan"
    allowed = (*TrainConfig.model_fields, "search")
    for k in data:
        if k not in allowed:
            raise ConfigError(f"{where}: {k}", data[k], "unknown field; accepted: " + ", ".join(allowed))
    if "search" not in data:
        raise ConfigError(f"{where}: search", None, "required field is missing (the strategies to try; "
                                                   "search: {} tries the defaults)")
    given = {} if data["search"] is None else data["search"]  # `search:` alone: every default
    search = validate(_PlanSearch, {"search": given}, where, from_file=from_file).search
    rest = copy.deepcopy({k: v for k, v in data.items() if k != "search"})
    _check_workload(rest, where)
    if search.batch is not None:
        rest["workload"]["batch"] = search.batch
    ctx = {"base_dir": base_dir, "source": source}
    train = validate(TrainConfig, rest, where, from_file=from_file, context=ctx)
    fixed = _check_fixed(rest, search, where, from_file, ctx)
    with errors_in(source, "network"):
        topo = train.network.build_topology()
    if search.gpus is not None and search.gpus != topo.n_npus:
        raise ConfigError(f"{where}: search.gpus", search.gpus, f"accepted: the {topo.n_npus} NPUs of the network "
                                                                f"({topo.name}), or no search.gpus")
    cfg = PlanConfig(train, search, source, rest, fixed, topo.n_npus, int(topo.node_gpus) or None)
    cfg.base_strategy()  # the fixed keys together (ConfigError naming search.fixed)
    return cfg


def _check_workload(rest: dict, where: str) -> None:
    """ConfigError unless the config has one `workload:` with a model and no `parallelism`."""
    if "jobs" in rest:
        raise ConfigError(f"{where}: jobs", f"<{len(rest['jobs'] or ())} jobs>" if isinstance(rest["jobs"], list)
                          else rest["jobs"], "accepted: one workload: (fabricsim plan searches one job)")
    w = rest.get("workload")
    if not isinstance(w, dict):
        raise ConfigError(f"{where}: workload", w, "accepted: a mapping with a model (zoo or by shape)")
    if "parallelism" in w:
        raise ConfigError(f"{where}: workload.parallelism", _short(w["parallelism"]), "the search chooses it: give the choices in "
                          "search (tp, pp, ...) and the keys every candidate shares in search.fixed; accepted: no "
                          "workload.parallelism")
    if "model" not in w:
        raise ConfigError(f"{where}: workload.model", None, "required: fabricsim plan searches a zoo model or a "
                          "transformer by shape (not astra_text or chakra)")


def _check_fixed(rest: dict, search: SearchSection, where: str, from_file: bool, ctx: dict) -> ParallelismSection:
    """`search.fixed` as a ParallelismSection, checked with the rest of the config (fused attention
    needs a GPU preset); errors name `search.fixed.<key>`."""
    with_fixed = {**rest, "workload": {**rest["workload"], "parallelism": search.fixed}}
    try:
        cfg = validate(TrainConfig, with_fixed, where, from_file=from_file, context=ctx)
    except ConfigError as e:
        if "workload.parallelism" not in str(e.field):
            raise
        raise ConfigError(str(e.field).replace("workload.parallelism", "search.fixed"), e.value, e.accepted) from None
    return cfg.workload.parallelism


def train_config_for(plan_cfg: PlanConfig, strategy_fields: dict) -> dict:
    """The mapping of a ready `fabricsim train` config: the plan config without `search`, with
    `workload.parallelism` set to `strategy_fields` (the network, system, workload and output as
    the plan config has them; `workload.batch` the searched batch).

    Parameters
    ----------
    plan_cfg : PlanConfig
    strategy_fields : dict
        A workload.parallelism mapping (`plan.space.Candidate.fields`).

    Returns
    -------
    dict
        Plain data (a deep copy): it validates as a `TrainConfig`; relative paths in it are
        relative to the plan config's folder (`plan_cfg.train.base_dir`).
    """
    out = copy.deepcopy(plan_cfg.mapping)
    out["workload"]["parallelism"] = copy.deepcopy(dict(strategy_fields))
    return out


__all__ = ["ConstraintsSection", "DERIVED", "FIXED_KEYS", "KNOBS", "PlanConfig", "SearchSection",
           "load_plan_config", "plan_config", "train_config_for"]
