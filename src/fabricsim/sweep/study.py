"""Sweep points that are one point of a paper reproduction (`kind: reproduction`).

The base names the study, the point (its progress label, as `fabricsim reproduce NAME` shows it,
e.g. `e2e calibrated GPT-3 Fred-D`), optionally the study's config file and `quick`; `set:` holds
overrides of the study's config, so axes sweep them by dotted paths (`set.wafer.io_bandwidth`).
The study's own loader validates the overridden config, so a bad value is caught before any
point runs; the point's row (a dataclass) becomes flat columns.
"""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import yaml

from ..errors import ConfigError

KEYS = ("study", "point", "config", "quick", "set")


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def study_point(c: dict):
    """The study and the point a `reproduction` config names, with its overrides applied.

    Parameters
    ----------
    c : dict
        `study`, `point` (label), optional `config` (path), `quick` (bool) and `set` (overrides).

    Returns
    -------
    (Experiment, point)
        ConfigError naming the field for an unknown study or label, or what the study's loader
        rejects in the overridden config.
    """
    from ..experiments import EXPERIMENTS

    unknown = sorted(set(c) - set(KEYS))
    if unknown:
        raise ConfigError("base", unknown[0], "accepted keys for a reproduction point: " + ", ".join(KEYS))
    exp = EXPERIMENTS.get(c.get("study"))
    if exp is None:
        raise ConfigError("base.study", c.get("study"), "accepted: " + ", ".join(EXPERIMENTS))
    src = Path(c["config"]) if c.get("config") else None
    if c.get("set"):
        from ..config import read_yaml_mapping
        from ..experiments.base import shipped_config

        path = src if src is not None else shipped_config(f"{exp.name}.yaml", f"the {exp.name} reproduction config")
        data = _merge(read_yaml_mapping(path, "a study config"), c["set"])
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / Path(path).name
            f.write_text(yaml.safe_dump(data, sort_keys=False))
            cfg = exp.load_config(f)
    else:
        cfg = exp.load_config(src)
    pts = exp.points(cfg, bool(c.get("quick", False)))
    for pt in pts:
        if exp.label(pt) == c.get("point"):
            return exp, pt
    raise ConfigError("base.point", c.get("point"),
                      f"accepted: a point label of {exp.name} (as its progress shows), e.g. {exp.label(pts[-1])!r}")


def _flat(prefix: str, v, out: dict) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            _flat(f"{prefix}.{k}" if prefix else str(k), x, out)
    elif isinstance(v, bool) or v is None:
        return
    elif isinstance(v, (int, float)):
        out[prefix] = float(v)


def metrics(c: dict) -> dict:
    """Evaluate the point and return its row's numbers as flat columns.

    Parameters
    ----------
    c : dict
        As `study_point`.

    Returns
    -------
    dict
        Every number of the point's row (a dataclass), nested fields joined with dots, e.g.
        `iteration_s`, `breakdown_s.compute`.
    """
    exp, pt = study_point(c)
    row = exp.evaluate(pt)
    out: dict = {}
    _flat("", dataclasses.asdict(row) if dataclasses.is_dataclass(row) else dict(row), out)
    return out
