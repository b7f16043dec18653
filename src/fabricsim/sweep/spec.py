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
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from ..config import read_yaml_mapping, validate
from ..errors import ConfigError
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
    node[parts[-1]] = value


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


def expand(spec: SweepSpec) -> list[SweepPoint]:
    """Every distinct point of a sweep, in order (the product of the blocks, the last fastest).

    Parameters
    ----------
    spec : SweepSpec

    Returns
    -------
    list of SweepPoint
        Not yet validated (`validate_point`).
    """
    out, seen = [], set()
    for parts in itertools.product(*[block_values(b) for b in spec.axes]):
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


def validate_point(pt: SweepPoint, base_dir: str = ".") -> None:
    """Check one point's config without running it.

    Parameters
    ----------
    pt : SweepPoint
    base_dir : str
        Where relative paths of a training config resolve.

    Returns
    -------
    None
        A one-line ConfigError naming the axis (`axes.FIELD`) when the bad value came from an
        axis, else the base field.
    """
    try:
        if pt.kind == "collective":
            _check_collective(pt.config)
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


def _check_collective(c: dict) -> None:
    from ..collectives.api import normalize_collective, parse_group
    from ..collectives.registry import choose_algorithm
    from ..network.model import get_network_model
    from ..topology.spec import parse_topology
    from ..units import parse_size

    unknown = sorted(set(c) - set(COLLECTIVE_KEYS))
    if unknown:
        raise ConfigError("base", unknown[0], "accepted keys: " + ", ".join(COLLECTIVE_KEYS))
    if "topology" not in c:
        raise ConfigError("base.topology", None, "accepted: a topology spec, e.g. torus:8x8")
    if "size" not in c:
        raise ConfigError("base.size", None, "accepted: a size, e.g. 1MiB")
    parse_size(c["size"], "size")
    get_network_model(c["model"])
    normalize_collective(c["collective"])
    choose_algorithm(c["algorithm"], {k: str(v) for k, v in (c.get("options") or {}).items()}, where="options")
    parse_topology(c["topology"], c["bandwidth"], c["latency"])
    parse_group(None if c.get("group") is None else str(c["group"]))


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
    for pt in pts:
        validate_point(pt, base_dir)
    return spec, pts
