"""Reports of a training simulation: summary table, JSON, per-NPU CSV, and the files of a run."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from rich.table import Table

from ..engine.result import BREAKDOWN, TrainResult
from ..units import format_time


def summary_json(res: TrainResult, title: str, extra: dict | None = None) -> dict:
    """`TrainResult.summary()` with the title, the model and strategy names and the per-stage breakdown.

    Parameters
    ----------
    res : TrainResult
        The run.
    title : str
        Title of the run.
    extra : dict, optional
        More keys to add (e.g. the config).

    Returns
    -------
    dict
        JSON-ready; times in s.
    """
    s = res.summary()
    s.update(title=title, model=str(res.graph.meta.get("model", "")), strategy=str(res.graph.meta.get("strategy", "")))
    s["stages"] = {str(k): v for k, v in res.stage_breakdown().items()}
    if extra:
        s.update(extra)
    return s


def write_breakdown_csv(res: TrainResult, path: str | Path) -> Path:
    """One row per NPU: its stage and each component of its time; components sum to the makespan.

    Parameters
    ----------
    res : TrainResult
        The run.
    path : str or Path
        The CSV file (its folder is created).

    Returns
    -------
    Path
        `path`; columns `npu`, `stage` and `<component>_s` (seconds).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["npu", "stage"] + [f"{k}_s" for k in BREAKDOWN])
        for p in range(res.graph.n_npus):
            w.writerow([p, int(res.graph.stage[p])] + [repr(float(res.breakdown[k][p])) for k in BREAKDOWN])
    return path


def breakdown_table(res: TrainResult, title: str) -> Table:
    """A rich table of the time per iteration.

    Columns compute, exposed communication per category, idle and total; rows the mean NPU and
    (with several pipeline stages) each stage; times formatted with units.

    Parameters
    ----------
    res : TrainResult
        The run.
    title : str
        Table title.

    Returns
    -------
    rich.table.Table
    """
    n_it = max(res.graph.n_iterations, 1)
    t = Table(box=None, header_style="bold", title=title)
    t.add_column("NPUs")
    for k in BREAKDOWN:
        t.add_column(k if k in ("compute", "idle") else f"exposed {k}", justify="right")
    t.add_column("total", justify="right")
    rows = [("all (mean)", res.mean_breakdown())]
    stages = res.stage_breakdown()
    if len(stages) > 1:
        rows += [(f"stage {s}", b) for s, b in stages.items()]
    for name, b in rows:
        cells = [format_time(b[k] / n_it) for k in BREAKDOWN]
        t.add_row(name, *cells, format_time(sum(b.values()) / n_it))
    return t


def write_outputs(res: TrainResult, out_dir: str | Path, title: str, *, trace: bool = True, trace_npus=None,
                  plot: bool = True, extra: dict | None = None) -> dict[str, Path]:
    """Write the files of a training run: summary.json, breakdown.csv, trace.json, breakdown.png.

    Parameters
    ----------
    res : TrainResult
        The run.
    out_dir : str or Path
        Folder to write into (created).
    title : str
        Title of the run.
    trace : bool
        Write trace.json (`write_trace`).
    trace_npus : sequence of int, optional
        NPUs in the trace (default: the first `DEFAULT_TRACE_NPUS`).
    plot : bool
        Write breakdown.png (`plot_breakdown`).
    extra : dict, optional
        More keys for summary.json (e.g. the config).

    Returns
    -------
    dict
        File kind (summary, breakdown_csv, trace, plot) -> path written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    (out / "summary.json").write_text(json.dumps(summary_json(res, title, extra), indent=2))
    files["summary"] = out / "summary.json"
    files["breakdown_csv"] = write_breakdown_csv(res, out / "breakdown.csv")
    if trace:
        from .trace import write_trace

        files["trace"] = write_trace(res, out / "trace.json", trace_npus)
    if plot:
        from .plots import plot_breakdown

        files["plot"] = plot_breakdown(res, out / "breakdown.png", title)
    return files
