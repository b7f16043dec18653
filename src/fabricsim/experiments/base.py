"""Experiments as points: a study is `points(config, quick) -> evaluate(point) -> rows ->
summarize -> write/render`.

`evaluate` is a pure module-level function of one point (a frozen dataclass of plain data), so the
points of a study can run through any map: the builtin `map`, a process pool's, or a cluster's.
`run_experiment` is the one driver and `reproduce` what `fabricsim reproduce NAME` does with it;
the command is generated from the registry in `experiments/__init__.py`, so adding a
reproduction is one module and one registration line.

    >>> from fabricsim.experiments import EXPERIMENTS, run_experiment
    >>> exp = EXPERIMENTS["swing"]
    >>> cfg = exp.load_config(None)
    >>> [p.label for p in exp.points(cfg, True)][:2]
    ['torus 8x8', 'torus 8x8 at 100 Gb/s']
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..progress import Progress
from .headlines import headlines_json, no_headlines, print_headlines, write_headlines


def shipped_config(file_name: str, what: str) -> Path:
    """A study's shipped config: configs/FILE of the checkout fabricsim runs from, else of the
    current directory.

    Parameters
    ----------
    file_name : str
        e.g. `ace.yaml`.
    what : str
        What the file is, for the error (`an ACE reproduction config`).

    Returns
    -------
    Path
        The file; ConfigError naming `--config` if neither exists.
    """
    here = Path(__file__).resolve()
    for cand in (here.parents[3] / "configs" / file_name, Path.cwd() / "configs" / file_name):
        if cand.is_file():
            return cand
    raise ConfigError("--config", str(Path("configs") / file_name), f"not found; accepted: the path of {what}")


def or_dash(x, fmt: str = "{:.3f}") -> str:
    """A value as a study's tables print it: `fmt`, or `-` when there is none.

    Parameters
    ----------
    x : float or None
    fmt : str

    Returns
    -------
    str
    """
    return "-" if x is None else fmt.format(x)


def study_table(title: str, columns):
    """A rich table as the studies print them: no box, bold header, columns right-justified.

    Parameters
    ----------
    title : str
    columns : sequence of str

    Returns
    -------
    rich.table.Table
    """
    from rich.table import Table

    t = Table(box=None, header_style="bold", title=title)
    for c in columns:
        t.add_column(c, justify="right")
    return t


@dataclass(frozen=True)
class Experiment:
    """One registered study (a paper reproduction): how to load, split, evaluate and report it.

    Parameters
    ----------
    name : str
        The subcommand: `fabricsim reproduce NAME`.
    summary : str
        One line, the command's help.
    quick_help : str
        What `--quick` runs (the option's help).
    load_config : callable
        `load_config(path or None) -> config`; None loads the shipped `configs/NAME.yaml`.
    points : callable
        `points(config, quick) -> list of points`, each a frozen dataclass of plain data.
    evaluate : callable
        `evaluate(point) -> rows`: pure, a module-level function (picklable by reference).
    summarize : callable
        `summarize(config, points, rows, quick, elapsed_s) -> report`; `rows[i]` is
        `evaluate(points[i])`, `elapsed_s` the wall time of the run in seconds.
    write : callable
        `write(report, out_dir) -> list of Path`: the files written.
    render : callable
        `render(report, console, files)`: the tables beside the paper's numbers.
    to_json : callable
        `to_json(report) -> dict` of JSON-able data.
    default_out : Path
        Where files go without `--out`.
    label : callable
        `label(point) -> str`, shown by progress bars (default `str`).
    headlines : callable
        `headlines(report) -> sequence of HeadlineFigure`: the paper's headline figures beside
        ours (`experiments.headlines`); `reproduce` prints them last, with the verdict.
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
    headlines: Callable[[Any], Sequence[Any]] = no_headlines


def evaluate_points(evaluate: Callable[[Any], Any], pts: Sequence[Any], map_fn: Callable = map,
                    progress: Progress | None = None, label: Callable[[Any], str] = str) -> list:
    """Evaluate points through any map, in order, reporting progress as they finish.

    Parameters
    ----------
    evaluate : callable
        `evaluate(point) -> rows`, module level so that process pools can pickle it.
    pts : sequence
        The points.
    map_fn : callable
        `map_fn(evaluate, pts)` returns the rows in the order of `pts`: the builtin `map`,
        `ProcessPoolExecutor(n).map`, a cluster client's map.
    progress : callable, optional
        Called as `progress(done, total, label)` after each point, with the label of the next
        point (`"done"` after the last).
    label : callable
        `label(point) -> str` for `progress`.

    Returns
    -------
    list
        `[evaluate(p) for p in pts]`, computed by `map_fn`.
    """
    out = []
    results: Iterable = map_fn(evaluate, pts)
    for i, r in enumerate(results):
        out.append(r)
        if progress is not None:
            progress(i + 1, len(pts), label(pts[i + 1]) if i + 1 < len(pts) else "done")
    return out


def run_experiment(exp: Experiment, cfg: Any, quick: bool = False, map_fn: Callable = map,
                   progress: Progress | None = None) -> Any:
    """Run a study: build its points, evaluate them through `map_fn`, summarize the rows.

    Parameters
    ----------
    exp : Experiment
        The study.
    cfg : object
        Its config (`exp.load_config(...)`).
    quick : bool
        The CI subset of points.
    map_fn : callable
        Any map: builtin `map`, `ProcessPoolExecutor(n).map`, a cluster client's map; the rows
        (and so the report) are the same whichever runs them.
    progress : callable, optional
        `progress(done, total, label)`: called with 0 before the first point, then as points
        finish (see `evaluate_points`).

    Returns
    -------
    object
        The study's report (`exp.summarize`).
    """
    t0 = time.perf_counter()
    pts = exp.points(cfg, quick)
    if progress is not None and pts:
        progress(0, len(pts), exp.label(pts[0]))
    rows = evaluate_points(exp.evaluate, pts, map_fn, progress, exp.label)
    return exp.summarize(cfg, pts, rows, quick, time.perf_counter() - t0)


def reproduce(exp: Experiment, config: str | Path | None = None, out: str | Path | None = None, quick: bool = False,
              json_out: bool = False, con=None, progress: Progress | None = None, map_fn: Callable = map,
              force: bool = False) -> Any:
    """What `fabricsim reproduce NAME` does: load the config, run the study (reporting progress),
    write its files, print its tables or its JSON.

    Parameters
    ----------
    exp : Experiment
        The study.
    config : str or Path, optional
        Its config file (default: the shipped one).
    out : str or Path, optional
        Output folder, new or empty (default `exp.default_out`, relative to the current folder);
        checked before the study runs, written as a whole (`outputs.fresh_dir`).
    quick : bool
        The CI subset.
    json_out : bool
        Print the report as JSON on stdout (with the files written) instead of tables.
    con : rich Console, optional
        Where the tables go (default: a new Console on stdout).
    progress : callable, optional
        `progress(done, total, label)` as points finish, then while files are written (the CLI
        draws it as a bar on stderr).
    map_fn : callable
        The map that evaluates the points (see `run_experiment`).
    force : bool
        Replace an earlier run's results in the output folder.

    Returns
    -------
    object
        The study's report.
    """
    from ..outputs import check_output_dir, fresh_dir

    cfg = exp.load_config(config)
    target = out if out is not None else exp.default_out
    inputs = [config] if config is not None else []
    check_output_dir(target, "--out", force, inputs)  # before the run: a bad folder costs no simulation time
    out_dir = Path(target)
    rep = run_experiment(exp, cfg, quick, map_fn, progress)
    if progress is not None:
        progress(0, 0, f"writing {out_dir}")
    figs = tuple(exp.headlines(rep))
    with fresh_dir(out_dir, "--out", force, inputs) as tmp:
        written = list(exp.write(rep, tmp)) + write_headlines(figs, tmp)
    # the files as they are named once the folder is in place
    files = [out_dir / Path(f).relative_to(tmp) for f in written]
    if json_out:
        d = exp.to_json(rep)
        if figs:  # a study that reproduces no paper states none
            d.update(headlines_json(figs))
        d["files"] = [str(f) for f in files]
        print(json.dumps(d, indent=1))
    else:
        if con is None:
            from rich.console import Console

            con = Console()
        exp.render(rep, con, files)
        print_headlines(figs, con)
    return rep


