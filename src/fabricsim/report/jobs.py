"""Reports of several jobs on one fabric (`fabricsim.multi_job`): summary.json with a `jobs` list,
the folder it is written to, and the tables `fabricsim train` prints. Times in s per iteration."""

from __future__ import annotations

import json
from dataclasses import dataclass


def gpus_text(gpus) -> str:
    """NPU ids as a group string (`parse_group` reads it back): runs of one stride as `a-b` or `a-b:s`."""
    g = [int(x) for x in gpus]
    parts, i = [], 0
    while i < len(g):
        j = i + 1
        step = g[j] - g[i] if j < len(g) else 1
        while j < len(g) and step > 0 and g[j] - g[j - 1] == step:
            j += 1
        if j - i >= 3 or (j - i == 2 and step == 1):
            parts.append(f"{g[i]}-{g[j - 1]}" + (f":{step}" if step != 1 else ""))
        else:
            j = i + 1
            parts.append(str(g[i]))
        i = j
    return ",".join(parts)


def jobs_summary(run, extra: dict | None = None) -> dict:
    """summary.json of a several-job run: per job its figures together and alone, s per iteration.

    Parameters
    ----------
    run : multi_job.JobsRun
        The run.
    extra : dict, optional
        More keys (the config, the files written).

    Returns
    -------
    dict
        `title`, `npus` (the network's), `tasks`, `events`, `total_s` (the run together), `notes` and
        `jobs`: per job `name`, `gpus` (a group string), `npus`, `model`, `strategy`,
        `iteration_time_together_s`, `iteration_time_alone_s`, `slowdown`, `memory` and `together`
        / `alone`: its single-job summary (`report.train.summary_json`: breakdown, throughput, ...).
    """
    from .train import memory_summary, summary_json

    res = run.result
    jobs = []
    for j in run.jobs:
        mem = memory_summary(_MemoryView(j.memory, j.together))
        jobs.append({"name": j.name, "gpus": gpus_text(j.gpus), "npus": len(j.gpus),
                     "model": str(j.together.graph.meta.get("model", "")), "strategy": j.strategy,
                     "iteration_time_together_s": j.time_together, "iteration_time_alone_s": j.time_alone,
                     "slowdown": j.slowdown, "memory": mem,
                     "together": summary_json(j.together, j.name), "alone": summary_json(j.alone, j.name)})
    out = {"title": run.title, "npus": run.topology.n_npus, "tasks": len(res.graph), "events": res.events,
           "total_s": res.makespan, "network_model": run.config.network.model, "notes": list(run.notes), "jobs": jobs}
    return {**out, **(extra or {})}


@dataclass(frozen=True)
class _MemoryView:
    """What `report.train.memory_summary` reads of a run: `memory` and `result.system`."""

    memory: tuple | None
    result: object


def write_jobs_outputs(run, out_dir, *, trace: bool, trace_npus=None, trace_format: str = "json",
                       extra: dict | None = None, force: bool = False, field: str = "out_dir") -> dict:
    """Write summary.json (`jobs_summary`) and, with `trace`, the Perfetto trace of the run together,
    as a whole folder (`outputs.fresh_dir`: atomic, an earlier run's folder replaced only with `force`).

    Parameters
    ----------
    run : multi_job.JobsRun
        The run.
    out_dir : str or Path
        The result folder.
    trace : bool
        Write trace.json (or trace.json.gz) of the jobs together (`report.trace.write_trace`).
    trace_npus : sequence of int, optional
        NPUs in the trace (default: the first 64).
    trace_format : str
        json or json.gz.
    extra : dict, optional
        More keys for summary.json.
    force : bool
        Replace an earlier run's folder.
    field : str
        The option or config field named in errors.

    Returns
    -------
    dict
        File kind (summary, trace) -> path under `out_dir`.
    """
    from pathlib import Path

    from ..outputs import fresh_dir
    from .trace import trace_file_name, write_trace

    files = {}
    with fresh_dir(out_dir, field, force) as out:
        (out / "summary.json").write_text(json.dumps(jobs_summary(run, extra), indent=2))
        files["summary"] = "summary.json"
        if trace:
            name = trace_file_name(trace_format)
            write_trace(run.result, out / name, trace_npus)
            files["trace"] = name
    return {k: Path(out_dir) / v for k, v in files.items()}


def jobs_tables(run):
    """Two rich tables: per job its GPUs, strategy, iteration time together and alone and the
    slowdown; and its breakdown together and alone (mean over its NPUs, s per iteration).

    Parameters
    ----------
    run : multi_job.JobsRun
        The run.

    Returns
    -------
    (rich.table.Table, rich.table.Table)
    """
    from rich.table import Table

    from ..engine.timesplit import BREAKDOWN
    from ..units import format_time

    t = Table(box=None, header_style="bold", title=f"{run.title}: iteration time together and alone (headline "
                                                   "iterations)")
    for col, right in (("job", False), ("GPUs", False), ("strategy", False), ("together", True), ("alone", True),
                       ("slowdown", True)):
        t.add_column(col, justify="right" if right else "left")
    for j in run.jobs:
        t.add_row(j.name, gpus_text(j.gpus), j.strategy, format_time(j.time_together), format_time(j.time_alone),
                  f"{j.slowdown:.3f}x")
    rows = [(f"{j.name} {how}", res.headline().mean()) for j in run.jobs
            for how, res in (("together", j.together), ("alone", j.alone))]
    shown = [k for k in BREAKDOWN if k in ("compute", "idle") or any(m[k] > 0 for _, m in rows)]
    b = Table(box=None, header_style="bold", title="time per iteration: compute, exposed communication, idle (mean "
                                                   "over the job's NPUs; categories with none left out)")
    b.add_column("job")
    for k in shown:
        b.add_column(k if k in ("compute", "idle") else f"exposed {k}", justify="right")
    b.add_column("total", justify="right")
    for name, m in rows:
        b.add_row(name, *(format_time(m[k]) for k in shown), format_time(sum(m.values())))
    return t, b


def memory_lines(run) -> list[str]:
    """The peak stage memory of each job of `run` (a `multi_job.JobsRun`) that has a memory model
    (transformers by shape), one line each as `report.train.memory_line` writes it (list of str)."""
    from .train import memory_line

    return [f"{j.name}: {memory_line(_MemoryView(j.memory, j.together))}" for j in run.jobs if j.memory is not None]


__all__ = ["gpus_text", "jobs_summary", "jobs_tables", "memory_lines", "write_jobs_outputs"]
