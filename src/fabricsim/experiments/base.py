"""Experiments as points: a study is `points(config, quick) -> evaluate(point) -> rows ->
summarize -> render/write`.

`evaluate` is a pure module-level function of one point (a frozen dataclass of plain data), so the
points of a study can run through any map: the builtin `map`, a process pool's, or a cluster's.
`run_experiment` is the one driver; `fabricsim reproduce NAME` is generated from the registry in
`experiments/__init__.py`, so adding a reproduction is one module and one registration line.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Experiment:
    """One registered study (a paper reproduction).

    Parameters
    ----------
    name : str
        The subcommand: `fabricsim reproduce NAME`.
    summary : str
        One line (the command's help).
    quick_help : str
        What `--quick` runs.
    load_config : callable
        `load_config(path or None) -> config` (None: the shipped config).
    points : callable
        `points(config, quick) -> list of points`.
    evaluate : callable
        `evaluate(point) -> rows`, pure and picklable (module level).
    summarize : callable
        `summarize(config, points, rows, quick, elapsed_s) -> report`.
    write : callable
        `write(report, out_dir) -> list of files`.
    render : callable
        `render(report, console, files)`: the tables beside the paper's numbers.
    to_json : callable
        `to_json(report) -> dict`.
    default_out : Path
        Where files go without `--out`.
    label : callable
        `label(point) -> str` for progress bars.
    """

    name: str
    summary: str
    quick_help: str
    load_config: Callable[[Any], Any]
    points: Callable[[Any, bool], list]
    evaluate: Callable[[Any], Any]
    summarize: Callable[..., Any]
    write: Callable[[Any, Path], list]
    render: Callable[[Any, Any, Sequence[Path]], None]
    to_json: Callable[[Any], dict]
    default_out: Path
    label: Callable[[Any], str] = str


def evaluate_points(evaluate: Callable[[Any], Any], pts: Sequence[Any], map_fn: Callable = map,
                    progress: Callable[[int, int, str], None] | None = None,
                    label: Callable[[Any], str] = str) -> list:
    """`evaluate` over `pts` through `map_fn`, in order, reporting `progress(done, total, label)`."""
    out = []
    results: Iterable = map_fn(evaluate, pts)
    for i, r in enumerate(results):
        out.append(r)
        if progress is not None:
            progress(i + 1, len(pts), label(pts[i + 1]) if i + 1 < len(pts) else "done")
    return out


def run_experiment(exp: Experiment, cfg: Any, quick: bool = False, map_fn: Callable = map,
                   progress: Callable[[int, int, str], None] | None = None) -> Any:
    """Run a study: its points, evaluated through `map_fn`, summarized.

    Parameters
    ----------
    exp : Experiment
    cfg : the study's config (`exp.load_config(...)`).
    quick : bool
        The CI subset.
    map_fn : callable
        Any map: builtin `map`, `ProcessPoolExecutor(n).map`, a cluster client's map.
    progress : callable, optional
        `progress(done, total, label of the next point)`.

    Returns
    -------
    The study's report (`exp.summarize`).
    """
    t0 = time.perf_counter()
    pts = exp.points(cfg, quick)
    if progress is not None and pts:
        progress(0, len(pts), exp.label(pts[0]))
    rows = evaluate_points(exp.evaluate, pts, map_fn, progress, exp.label)
    return exp.summarize(cfg, pts, rows, quick, time.perf_counter() - t0)
