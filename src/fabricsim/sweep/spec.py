"""A sweep file: a base config and axes -> the points to run, each validated before anything runs.

```yaml
name: allreduce-grid
kind: collective            # collective (a `fabricsim collective` run at one size), train (a training config)
                            # or reproduction (one point of a paper reproduction; `sweep.study`)
base: {topology: torus:8x8, bandwidth: 400Gbps, latency: 100ns, collective: all-reduce,
       algorithm: ring, size: 1MiB, model: analytical}
axes:                       # blocks, combined by product
  - grid: {topology: [torus:4x4, torus:8x8], algorithm: [ring, swing]}   # every combination
  - zip: {bandwidth: [100Gbps, 400Gbps], latency: [1us, 100ns]}          # side by side
  - random: {n: 8, seed: 1, fields: {size: {choice: [1KiB, 1MiB]},
                                     network.bandwidth: {loguniform: [1e9, 1e11]}}}
```
Field names are dotted paths into the base config (`network.bandwidth`, `workload.parallelism.mp`
for training configs). A point is the base with one value per field; equal points are run once.
Its `hash` (SHA-256 of the kind and the canonical JSON of its config) names it in the results.

The points are counted before they are expanded (`count_points`: per block, equal values of a field
merged and fields a later block sets again dropped; a random block counts its `n`), and a sweep
beyond the `points` limit (`fabricsim.limits`) is refused before anything is drawn or built.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

from ..config import read_yaml_mapping, validate
from ..errors import ConfigError
from ..limits import check_limit
from ..topology.defaults import DEFAULT_BANDWIDTH, DEFAULT_LATENCY

KINDS = ("collective", "train", "reproduction")
COLLECTIVE_KEYS = ("topology", "bandwidth", "latency", "collective", "algorithm", "size", "model", "group", "root",
                   "options")
# `fabricsim collective`'s defaults, so a point left at them answers as the command does
COLLECTIVE_DEFAULTS = {"bandwidth": DEFAULT_BANDWIDTH, "latency": DEFAULT_LATENCY, "collective": "all-reduce",
                       "algorithm": "auto", "model": "congestion-aware", "group": None, "root": 0, "options": {}}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RandomBlock(_Strict):
    """`random:` n points drawn with a seed; each field `{choice: [...]}`, `{uniform: [lo, hi]}`,
    `{loguniform: [lo, hi]}` or `{randint: [lo, hi]}` (inclusive)."""

    n: StrictInt = Field(ge=1)
    seed: StrictInt = Field(default=0, ge=0, lt=2**63)  # numpy's generators take non-negative seeds
    fields: dict[str, dict[str, list]]

    @model_validator(mode="after")
    def _dists(self):
        for name, d in self.fields.items():
            if len(d) != 1 or next(iter(d)) not in ("choice", "uniform", "loguniform", "randint"):
                raise ValueError(f"field {name}: accepted one of choice, uniform, loguniform, randint")
            kind, args = next(iter(d.items()))
            if kind == "choice" and not args:
                raise ValueError(f"field {name}: choice needs at least one value")
            if kind != "choice" and (len(args) != 2 or not all(isinstance(a, (int, float)) for a in args)):
                raise ValueError(f"field {name}: {kind} needs [low, high] numbers")
            if kind == "loguniform" and min(args) <= 0:
                raise ValueError(f"field {name}: loguniform needs low, high > 0")
        return self


class Block(_Strict):
    """One axes block: exactly one of grid, zip, random."""

    grid: dict[str, list] | None = None
    zip: dict[str, list] | None = None
    random: RandomBlock | None = None

    @model_validator(mode="after")
    def _one(self):
        given = [k for k in ("grid", "zip", "random") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("accepted: exactly one of grid, zip, random per block")
        if given[0] in ("grid", "zip") and not getattr(self, given[0]):
            raise ValueError(f"{given[0]}: an empty block; accepted: at least one field with a list of values")
        for k in ("grid", "zip"):
            for name, values in (getattr(self, k) or {}).items():
                if not values:
                    raise ValueError(f"{k}.{name}: accepted a non-empty list of values")
        if self.zip and len({len(v) for v in self.zip.values()}) > 1:
            raise ValueError("zip: accepted lists of equal length, got " +
                             ", ".join(f"{k}: {len(v)}" for k, v in self.zip.items()))
        return self


class SweepSpec(_Strict):
    """A sweep file (module doc)."""

    name: str = "sweep"
    kind: Literal["collective", "train", "reproduction"]
    base: dict[str, Any]
    axes: list[Block] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not v.strip() or v in (".", "..") or any(c in v for c in "/\\\0") or len(v) > 200:
            raise ValueError("accepted: a name of up to 200 characters without / or \\ (it names the results "
                             "folder out/sweeps/NAME.parquet)")
        return v


@dataclass(frozen=True)
class SweepPoint:
    """One point: its index, the kind, the full config (plain data), the axis values and the hash."""

    index: int
    kind: str
    config: dict
    axes: dict
    hash: str

    @property
    def label(self) -> str:
        """What progress bars show."""
        return " ".join(f"{k}={v}" for k, v in self.axes.items()) or self.hash[:8]


def point_hash(kind: str, config: dict) -> str:
    """SHA-256 of the kind and the canonical JSON of a config.

    Parameters
    ----------
    kind : str
    config : dict
        Plain data (JSON-able).

    Returns
    -------
    str
        64 hex digits.

    Examples
    --------
    >>> point_hash("collective", {"a": 1, "b": 2}) == point_hash("collective", {"b": 2, "a": 1})
    True
    """
    text = json.dumps({"kind": kind, "config": config}, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _set(config: dict, path: str, value) -> None:
    node = config
    parts = path.split(".")
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ConfigError(f"axes.{path}", value, f"accepted: a path into the base config ({p} is not a section)")
    node[parts[-1]] = copy.deepcopy(value)  # a later path into it must not change the axis value itself


def _draw(rng: np.random.Generator, d: dict):
    kind, args = next(iter(d.items()))
    if kind == "choice":
        return args[int(rng.integers(len(args)))]
    lo, hi = args
    if kind == "uniform":
        return float(rng.uniform(lo, hi))
    if kind == "loguniform":
        return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
    return int(rng.integers(int(lo), int(hi) + 1))


def block_values(block: Block) -> list[dict]:
    """The partial assignments one block contributes.

    Parameters
    ----------
    block : Block

    Returns
    -------
    list of dict
        grid: the product of its fields; zip: its lists side by side; random: `n` draws from a
        generator seeded with `seed` (reproducible).
    """
    if block.grid is not None:
        names = list(block.grid)
        return [dict(zip(names, combo)) for combo in itertools.product(*block.grid.values())]
    if block.zip is not None:
        names = list(block.zip)
        return [dict(zip(names, combo)) for combo in zip(*block.zip.values())]
    r = block.random
    rng = np.random.default_rng(r.seed)
    return [{name: _draw(rng, d) for name, d in r.fields.items()} for _ in range(r.n)]


def _fields(block: Block) -> list[str]:
    """The fields (dotted paths) a block sets, in order."""
    return list(block.grid or block.zip or block.random.fields)


def _live(spec: SweepSpec) -> list[set]:
    """Per block, the fields no later block sets again (a later block setting the same path, or a
    section above it, replaces the value)."""
    later: set = set()
    out = []
    for block in reversed(spec.axes):
        names = _fields(block)
        out.append({n for n in names if not any(n == q or n.startswith(q + ".") for q in later)})
        later.update(names)
    return out[::-1]


def _vkey(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _distinct(values: list) -> list:
    """The values without repeats (equal as JSON), first occurrences in order."""
    seen: dict = {}
    for v in values:
        seen.setdefault(_vkey(v), v)
    return list(seen.values())


def _block_size(block: Block, live: set) -> int:
    """How many assignments `_choices` gives a block (a random block: at most)."""
    if not live:
        return 1
    if block.grid is not None:
        return math.prod(len(_distinct(v)) if k in live else 1 for k, v in block.grid.items())
    return len(next(iter(block.zip.values()))) if block.zip is not None else block.random.n


def _choices(block: Block, live: set) -> list[dict]:
    """A block's assignments, each first occurrence of its values of the live fields, in order.

    The product of these over the blocks meets every distinct point in the order of the full
    product (`block_values`), at its first occurrence: a point's first occurrence takes, in each
    block, the first assignment with its live values."""
    if block.grid is not None:
        names = list(block.grid)
        lists = [_distinct(v) if k in live else v[:1] for k, v in block.grid.items()]
        return [dict(zip(names, combo)) for combo in itertools.product(*lists)]
    if block.random is not None and not live:
        block = Block(random=block.random.model_copy(update={"n": 1}))  # the first draw, as the full stream's
    seen: dict = {}
    for a in block_values(block):
        seen.setdefault(_vkey({k: v for k, v in a.items() if k in live}), a)
    return list(seen.values())


def count_points(spec: SweepSpec) -> int:
    """An upper bound on a sweep's distinct points, counted without expanding it.

    Parameters
    ----------
    spec : SweepSpec

    Returns
    -------
    int
        The product over the blocks of: a grid's product of its fields' distinct values (fields
        that a later block sets again count 1), a zip's length, a random block's `n` (1 for a block
        every field of which a later block sets again).

    Examples
    --------
    >>> spec = SweepSpec.model_validate({"kind": "collective", "base": {}, "axes": [
    ...     {"grid": {"size": ["1KiB", "2KiB"], "algorithm": ["ring", "ring", "direct"]}},
    ...     {"grid": {"size": ["4KiB", "8KiB", "16KiB"]}}]})
    >>> count_points(spec)   # 2 algorithms x 3 sizes: the first block's sizes are set again
    6
    """
    return math.prod(_block_size(b, live) for b, live in zip(spec.axes, _live(spec)))


def check_count(spec: SweepSpec) -> int:
    """`count_points`, refused beyond the `points` limit in one line naming `axes`.

    Parameters
    ----------
    spec : SweepSpec

    Returns
    -------
    int
        The count.
    """
    n = count_points(spec)
    sizes = " x ".join(f"{next(k for k in ('grid', 'zip', 'random') if getattr(b, k) is not None)} "
                       f"{_block_size(b, live):,}" for b, live in zip(spec.axes, _live(spec)))
    check_limit("points", n, "sweep points (the blocks' distinct values multiplied)", "axes", sizes)
    return n


def expand(spec: SweepSpec) -> list[SweepPoint]:
    """Every distinct point of a sweep, in order (the product of the blocks, the last fastest).

    Parameters
    ----------
    spec : SweepSpec

    Returns
    -------
    list of SweepPoint
        Not yet validated (`validate_point`). The order and points are those of the full product
        of `block_values` with repeats dropped; only first occurrences are built (`_choices`), and
        beyond the `points` limit nothing is (`check_count`).
    """
    check_count(spec)
    out, seen = [], set()
    for parts in itertools.product(*[_choices(b, live) for b, live in zip(spec.axes, _live(spec))]):
        config = copy.deepcopy(spec.base)
        axes: dict = {}
        for part in parts:
            for path, value in part.items():
                _set(config, path, value)
                axes[path] = value
        if spec.kind == "collective":
            config = {**COLLECTIVE_DEFAULTS, **config}
        h = point_hash(spec.kind, config)
        if h in seen:
            continue
        seen.add(h)
        out.append(SweepPoint(len(out), spec.kind, config, axes, h))
    return out


def validate_point(pt: SweepPoint, base_dir: str = ".", cache: set | None = None) -> None:
    """Check one point's config without running it.

    Parameters
    ----------
    pt : SweepPoint
    base_dir : str
        Where relative paths of a training config resolve.
    cache : set, optional
        Collective setups already found good (shared across the points of one sweep, so that
        points differing only in size check their topology and algorithm once).

    Returns
    -------
    None
        A one-line ConfigError naming the axis (`axes.FIELD`) when the bad value came from an
        axis, else the base field.
    """
    try:
        if pt.kind == "collective":
            _check_collective(pt.config, set() if cache is None else cache)
        elif pt.kind == "reproduction":
            from .study import study_point

            study_point(pt.config)
        else:
            from ..train import TrainConfig

            validate(TrainConfig, pt.config, "train config", context={"base_dir": base_dir})
    except ConfigError as e:
        field = str(getattr(e, "field", "") or "")
        for path, value in pt.axes.items():
            leaf = path.split(".")[-1]
            named = field in (path, leaf) or field.endswith("." + leaf) or field.startswith(path + ".")
            if named or (str(e.value) == str(value) and str(value) not in ("", "None")):
                raise ConfigError(f"axes.{path}", value, e.accepted) from None
        raise


def _text(v) -> str:
    """A collective argument as `fabricsim collective` takes it: text (a list: comma-separated)."""
    return ",".join(str(x) for x in v) if isinstance(v, (list, tuple)) else str(v)


def collective_args(c: dict) -> dict:
    """The arguments of `collective_job.run_collective` for a collective point, as its command
    line gives them (text: a bandwidth drawn as a bare number is refused as `-B 1.5e10` is).

    Parameters
    ----------
    c : dict
        A collective point's config (`COLLECTIVE_KEYS`).

    Returns
    -------
    dict
        topology, bandwidth, latency, collective, algorithm, size, model, group (text or None),
        root (int), options (`KEY=VALUE` items); ConfigError naming `root` or `options` when
        they are not a whole rank or a mapping.
    """
    root, opts = c.get("root") or 0, c.get("options") or {}
    if isinstance(root, bool) or not isinstance(root, int) or root < 0:
        raise ConfigError("root", root, "accepted: a whole rank >= 0 (the root's index in the group)")
    if not isinstance(opts, dict):
        raise ConfigError("options", opts, "accepted: a mapping of the algorithm's options, e.g. {chunks: 4}")
    return {"topology": _text(c.get("topology")), "bandwidth": _text(c["bandwidth"]),
            "latency": _text(c["latency"]), "collective": str(c["collective"]), "algorithm": str(c["algorithm"]),
            "size": _text(c.get("size")), "model": str(c["model"]),
            "group": None if c.get("group") is None else _text(c["group"]), "root": root,
            "options": [f"{k}={v}" for k, v in opts.items()]}


def _check_collective(c: dict, cache: set) -> None:
    """What the point's `run_collective` would refuse, before it runs: its arguments as the run
    passes them, one size, and the algorithm's schedule built on the topology (priced on the
    analytical model: every candidate `auto` has), once per setup (`cache`)."""
    from ..collective_job import parse_options
    from ..collectives.api import normalize_collective, parse_group
    from ..collectives.registry import choose_algorithm
    from ..network.model import get_network_model
    from ..network.tuner import price_collective
    from ..topology.spec import parse_topology
    from ..units import parse_size_range

    unknown = sorted(set(c) - set(COLLECTIVE_KEYS))
    if unknown:
        raise ConfigError("base", unknown[0], "accepted keys: " + ", ".join(COLLECTIVE_KEYS))
    if "topology" not in c:
        raise ConfigError("base.topology", None, "accepted: a topology spec, e.g. torus:8x8")
    if "size" not in c:
        raise ConfigError("base.size", None, "accepted: a size, e.g. 1MiB")
    a = collective_args(c)
    if len(parse_size_range(a["size"], "size")) != 1:
        raise ConfigError("size", c["size"], "accepted: one size per point, e.g. 1MiB (sweep sizes with an axis)")
    key = json.dumps({k: v for k, v in a.items() if k != "size"}, sort_keys=True)
    if key in cache:
        return
    get_network_model(a["model"])
    coll = normalize_collective(a["collective"])
    ranks = parse_group(a["group"])
    choice = choose_algorithm(a["algorithm"], parse_options(a["options"]), where="options")
    topo = parse_topology(a["topology"], a["bandwidth"], a["latency"])
    if ranks is not None and len(ranks) > topo.n_npus:
        raise ConfigError("group", a["group"], f"names {len(ranks)} ranks; accepted: at most {topo.n_npus} on {topo.name}")
    price_collective(topo, coll, choice, get_network_model("analytical"), group=ranks, root=a["root"],
                     where="options")
    cache.add(key)


def load_sweep(path: str | Path) -> tuple[SweepSpec, list[SweepPoint]]:
    """Read a sweep file, expand it and validate every point before anything runs.

    Parameters
    ----------
    path : str or Path
        The YAML file.

    Returns
    -------
    (SweepSpec, list of SweepPoint)
        A one-line ConfigError (the file's field, or `axes.FIELD` with the value) otherwise.
    """
    data = read_yaml_mapping(path, "a sweep file")
    spec = validate(SweepSpec, data, str(path))
    if not spec.axes:
        raise ConfigError("axes", None, "accepted: a list of blocks, each grid:, zip: or random:")
    pts = expand(spec)
    base_dir = str(Path(path).resolve().parent)
    cache: set = set()
    for pt in pts:
        validate_point(pt, base_dir, cache)
    return spec, pts
