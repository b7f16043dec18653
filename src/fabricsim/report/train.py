"""Reports of a training simulation: the summary table, summary.json, breakdown.csv (per NPU and
iteration), layers.csv, and the files of a run. Every time is per iteration unless its name says
otherwise; the headline is the steady state (iterations after the first) when the run has 2+
iterations, else the first iteration (`TrainResult.headline`)."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

from rich.table import Table

from ..engine.result import BREAKDOWN, Period, TrainResult
from ..units import format_bandwidth, format_flops, format_size, format_time

TRACE_DEFAULT_FORMAT = "json"


def summary_json(res: TrainResult, title: str, extra: dict | None = None) -> dict:
    """`TrainResult.summary()` (per iteration, units in the key names) with the title, the model
    and the strategy.

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
        JSON-ready; times in s per iteration (`total_s`: the whole run), FLOPs, FLOP/s.
    """
    s = {"title": title, "model": str(res.graph.meta.get("model", "")),
         "strategy": str(res.graph.meta.get("strategy", "")), **res.summary()}
    if extra:
        s.update(extra)
    return s


def write_breakdown_csv(res: TrainResult, path: str | Path) -> Path:
    """One row per iteration and NPU: its stage, each component of its time in that iteration
    (`TrainResult.iteration_split`) and the iteration's length; the components sum to it.

    Parameters
    ----------
    res : TrainResult
        The run.
    path : str or Path
        The CSV file (its folder is created).

    Returns
    -------
    Path
        `path`; columns `iteration` (from 1), `npu`, `stage`, `<component>_s` and `iteration_s`
        (seconds).
    """
    sp = res.iteration_split
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["iteration", "npu", "stage"] + [f"{k}_s" for k in BREAKDOWN] + ["iteration_s"])
        g = res.graph
        local = g.fold_index()[0]  # a folded NPU stands for real ones that ran alike (engine.fold): one row each
        for it in range(sp.per_npu.shape[0]):
            length = repr(float(sp.edges[it + 1] - sp.edges[it]))
            for r, p in enumerate(local.tolist()):
                w.writerow([it + 1, r, int(g.stage[p])] + [repr(float(x)) for x in sp.per_npu[it, p]] + [length])
    return path


def iteration_line(res: TrainResult) -> str:
    """The headline iteration time, saying what it is, and the other iterations.

    Parameters
    ----------
    res : TrainResult
        The run.

    Returns
    -------
    str
        e.g. "iteration time: 591.1 us, steady state (iterations 2-3); iteration 1 (first: warm-up
        included): 666.5 us; ...".
    """
    head = res.headline()
    text = f"iteration time: {format_time(head.time_s)}, {head.label}"
    others = [p for p in (res.first_iteration(), res.last_iteration()) if (p.first, p.last) != (head.first, head.last)]
    text += "".join(f"; {p.label}: {format_time(p.time_s)}" for p in others)
    if res.graph.n_iterations < 3:
        text += "; run 3+ iterations for the steady state"
    return text


def throughput_line(res: TrainResult, period: Period | None = None) -> str:
    """Model and hardware FLOPs per iteration, TFLOP/s per NPU by each, MFU and HFU, and tokens/s
    of a period (default the headline): `TrainResult.throughput`.

    Parameters
    ----------
    res : TrainResult
        The run.
    period : Period, optional
        The iterations (default `res.headline()`).

    Returns
    -------
    str
        e.g. "model FLOPs: 1.52 PFLOP per iteration, 119 TFLOP/s per NPU (MFU 38.2%); hardware
        FLOPs (model + recomputed forwards): 1.98 PFLOP per iteration, 156 TFLOP/s per NPU (HFU
        50.0%); 5,770 tokens/s (90.2 per NPU); peak 312 TFLOP/s per NPU; steady state (iterations
        2-4)"; "n/a" figures where the workload does not know its FLOPs, no tokens where it does
        not know them (`TrainResult.tokens_per_iteration`).
    """
    period = period or res.headline()
    tp = res.throughput(period)
    peak = format_flops(res.system.npu.peak_flops)
    tokens = ""
    if tp["tokens_per_s"] is not None:
        tokens = f"; {_count(tp['tokens_per_s'])} tokens/s ({_count(tp['tokens_per_s_per_npu'])} per NPU)"
    if tp["mfu"] is None:
        return (f"model FLOPs: n/a (compute given as durations); TFLOP/s per NPU: n/a; MFU: n/a; HFU: n/a"
                f"{tokens}; peak {peak} per NPU")

    def flops(kind: str, util: str) -> str:
        per_it = format_flops(tp[f"{kind}_flop_per_iteration"]).removesuffix("/s")
        rate = tp[f"{kind}_tflop_per_s_per_npu"]
        return f"{per_it} per iteration, {rate:.4g} TFLOP/s per NPU ({util} {tp[util.lower()]:.1%})"

    return (f"model FLOPs: {flops('model', 'MFU')}; hardware FLOPs (model + recomputed forwards): "
            f"{flops('hardware', 'HFU')}{tokens}; peak {peak} per NPU; {period.label}")


def _count(x: float) -> str:
    """A count or rate as text: thousands separated from 1,000, else 4 significant digits."""
    return f"{x:,.0f}" if x >= 1000 else f"{x:.4g}"


def memory_summary(run) -> dict | None:
    """Peak memory per pipeline stage of a run, JSON-ready (None where not modelled).

    Parameters
    ----------
    run : TrainRun
        The run (`run.memory`: `workload.memory.StageMemory` per stage).

    Returns
    -------
    dict or None
        `capacity_bytes` (None: not checked), `peak_bytes` (the largest stage) and `stages`: per
        stage its `weights`, `gradients`, `optimizer`, `activations`, `total` (bytes) and
        `in_flight` (microbatches, or chunks with virtual stages).
    """
    if run.memory is None:
        return None
    cap = run.result.system.npu.memory_capacity
    return {"capacity_bytes": None if cap == float("inf") else cap, "peak_bytes": max(m.total for m in run.memory),
            "stages": [{"stage": m.stage, "weights": m.weights, "gradients": m.gradients, "optimizer": m.optimizer,
                        "activations": m.activations, "in_flight": m.in_flight, "total": m.total} for m in run.memory]}


def memory_line(run) -> str:
    """One line: the peak memory per stage, its largest and the NPU's memory.

    Parameters
    ----------
    run : TrainRun
        The run.

    Returns
    -------
    str
    """
    s = memory_summary(run)
    worst = max(run.memory, key=lambda m: m.total)
    cap = s["capacity_bytes"]
    of = f" of {format_size(cap)}" if cap else " (no memory capacity given: not checked)"
    return (f"memory: peak {format_size(worst.total)}{of} on stage {worst.stage} (weights {format_size(worst.weights)}, "
            f"gradients {format_size(worst.gradients)}, optimizer {format_size(worst.optimizer)}, activations "
            f"{format_size(worst.activations)} for {worst.in_flight} in flight); per stage in summary.json")


def endpoint_line(usage, policy: str) -> str:
    """What communication moved through the endpoints and what compute lost (`engine.usage`).

    Parameters
    ----------
    usage : EndpointUsage
        Of the headline period.
    policy : str
        The endpoint policy's name.

    Returns
    -------
    str
        e.g. "endpoint npu: communication sent 204 MB per NPU at 106.5 GB/s (utilization 35.5%),
        memory 714 MB at 372.7 GB/s (3.50 B per network byte); compute 1.073x its time alone".
    """
    return (f"endpoint {policy}: communication sent {format_size(usage.sent.mean())} per NPU at "
            f"{format_bandwidth(usage.network_bandwidth)} (utilization {usage.utilization:.1%} of its links), memory "
            f"{format_size(usage.memory.mean())} at {format_bandwidth(usage.memory_bandwidth)} "
            f"({usage.memory_per_network_byte:.2f} B per network byte); compute {usage.compute_slowdown:.3f}x its time "
            f"alone; {usage.period}")


def breakdown_table(res: TrainResult, title: str) -> Table:
    """A rich table of the time per iteration of the headline period (`TrainResult.headline`).

    Columns compute, exposed communication per category, idle and total; rows the mean NPU,
    (with several pipeline stages) each stage, and the mean NPU in the first and the last
    iteration where they are not the headline; times formatted with units.

    Parameters
    ----------
    res : TrainResult
        The run.
    title : str
        Table title (the period is appended).

    Returns
    -------
    rich.table.Table
    """
    head = res.headline()
    t = Table(box=None, header_style="bold", title=f"{title}; {head.label}")
    t.add_column("NPUs")
    for k in BREAKDOWN:
        t.add_column(k if k in ("compute", "idle") else f"exposed {k}", justify="right")
    t.add_column("total", justify="right")
    rows = [("all (mean)", head.mean())]
    stages = head.stages(res.graph.stage)
    if len(stages) > 1:
        rows += [(f"stage {s}", b) for s, b in stages.items()]
    for p in (res.first_iteration(), res.last_iteration()):
        if (p.first, p.last) != (head.first, head.last):
            rows.append((f"{p.label.split(' (')[0]}, all (mean)", p.mean()))
    for name, b in rows:
        t.add_row(name, *(format_time(b[k]) for k in BREAKDOWN), format_time(sum(b.values())))
    return t


def _per_iteration_view(res: TrainResult) -> TrainResult:
    """`res` with its breakdown replaced by the headline period's x iterations, so that a reader
    dividing the whole-run breakdown by the iterations (the plot) shows the headline period."""
    n = max(res.graph.n_iterations, 1)
    return dataclasses.replace(res, breakdown={k: v * n for k, v in res.headline().per_npu.items()})


def write_outputs(res: TrainResult, out_dir: str | Path, title: str, *, trace: bool = True, trace_npus=None,
                  trace_format: str = TRACE_DEFAULT_FORMAT, plot: bool = True, extra: dict | None = None,
                  force: bool = False, field: str = "out_dir") -> dict[str, Path]:
    """Write the files of a training run: summary.json, breakdown.csv, layers.csv, trace.json (or
    trace.json.gz), breakdown.png.

    The folder is written as a whole (`outputs.fresh_dir`): into a temporary sibling folder that
    is renamed to `out_dir` at the end, so an interrupted run leaves earlier results intact and a
    rerun never leaves an earlier run's files beside the new ones.

    Parameters
    ----------
    res : TrainResult
        The run.
    out_dir : str or Path
        The result folder: new or empty, or (with `force`) an earlier run's, which is replaced.
    title : str
        Title of the run.
    trace : bool
        Write the Perfetto trace (`write_trace`).
    trace_npus : sequence of int, optional
        NPUs in the trace (default: the first `DEFAULT_TRACE_NPUS`).
    trace_format : str
        "json" or "json.gz" (gzip-compressed, deterministic).
    plot : bool
        Write breakdown.png (`plot_breakdown`) of the headline period.
    extra : dict, optional
        More keys for summary.json (e.g. the config).
    force : bool
        Replace an earlier run's folder (`outputs.check_output_dir`).
    field : str
        The option or config field named in errors (`--out`).

    Returns
    -------
    dict
        File kind (summary, breakdown_csv, layers_csv, trace, plot) -> path written (under `out_dir`).
    """
    from ..outputs import fresh_dir
    from .layers import write_layers_csv
    from .trace import trace_file_name

    name = trace_file_name(trace_format)
    files = {}
    with fresh_dir(out_dir, field, force) as out:
        (out / "summary.json").write_text(json.dumps(summary_json(res, title, extra), indent=2))
        files["summary"] = out / "summary.json"
        files["breakdown_csv"] = write_breakdown_csv(res, out / "breakdown.csv")
        files["layers_csv"] = write_layers_csv(res, out / "layers.csv")
        if trace:
            from .trace import write_trace

            files["trace"] = write_trace(res, out / name, trace_npus)
        if plot:
            from .plots import plot_breakdown

            files["plot"] = plot_breakdown(_per_iteration_view(res), out / "breakdown.png", f"{title}; {res.headline().label}")
    return {k: Path(out_dir) / Path(v).relative_to(out) for k, v in files.items()}
