"""`fabricsim train` (training iterations) and `fabricsim traffic` (flows and collectives together)."""

from __future__ import annotations

from typing import Optional

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from ..collectives.api import parse_group
from ..errors import ConfigError
from ..units import format_size, format_time
from .app import app, out_console as _out


@app.command()
def traffic(
    file: str = typer.Argument(..., help="YAML: topology, bandwidth, latency, mode, flows, collectives (see docs/flow.md)"),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
    timeline: Optional[str] = typer.Option(None, "--timeline", help="write the link-utilization timeline to this CSV"),
):
    """Run flows and collectives with start times together on the flow-level model."""
    from ..network.traffic import load_traffic, run_traffic

    spec = load_traffic(file)
    res = run_traffic(spec, record_timeline=timeline is not None)
    if timeline:
        import csv

        with open(timeline, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["t_start_s", "t_end_s", "link", "rate_Bps"])
            for t0, t1, load in res.timeline:
                for link in np.flatnonzero(load):
                    w.writerow([f"{t0:.12g}", f"{t1:.12g}", int(link), f"{load[link]:.6g}"])
    if json_out:
        import json

        print(json.dumps({"topology": res.topology, "makespan_s": res.makespan_s, "events": res.events,
                          "items": [{**i.__dict__, "duration_s": i.duration_s} for i in res.items],
                          "link_utilization_max": float(res.link_utilization.max(initial=0)),
                          "link_utilization_mean": float(res.link_utilization.mean()) if len(res.link_utilization) else 0.0},
                         indent=2))
        return
    con = _out()
    table = Table(box=None, header_style="bold", title=f"fabricsim traffic: {file} on {res.topology} ({spec.model})")
    for col in ("name", "kind", "bytes moved", "start", "finish", "duration"):
        table.add_column(col, justify="right")
    for i in res.items:
        table.add_row(i.name, i.kind, format_size(i.bytes), format_time(i.start_s), format_time(i.finish_s), format_time(i.duration_s))
    con.print(table)
    u = res.link_utilization
    con.print(f"# makespan {format_time(res.makespan_s)}, {res.events} events; link utilization mean {u.mean():.1%}, "
              f"max {u.max(initial=0):.1%} (link {int(np.argmax(u)) if len(u) else -1})", highlight=False, markup=False)




@app.command()
def train(
    config: str = typer.Argument(..., help="training config YAML: network, system, workload, output (see docs/train.md)"),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="output folder (default: the config's output.dir, else out/<config name>)"),
    iterations: Optional[int] = typer.Option(None, "--iterations", "-n", help="override workload.iterations"),
    trace_npus: Optional[str] = typer.Option(None, "--trace-npus", help="NPUs in the Perfetto trace, e.g. 0-63 or 0,8,16 (default: the first 64)"),
    no_trace: bool = typer.Option(False, "--no-trace", help="do not write trace.json"),
    no_plot: bool = typer.Option(False, "--no-plot", help="do not write breakdown.png"),
    json_out: bool = typer.Option(False, "--json", help="print the summary as JSON"),
):
    """Simulate training iterations: iteration time, where it goes, a Perfetto trace and a plot."""
    from pathlib import Path

    from ..report.train import breakdown_table, summary_json, write_outputs
    from ..train import load_train_config, run_train

    cfg = load_train_config(config)
    if iterations is not None:
        if iterations < 1:
            raise ConfigError("--iterations", iterations, "accepted: an integer >= 1")
        cfg.workload.iterations = iterations
    npus_text = trace_npus or cfg.output.trace_npus
    ranks = parse_group(npus_text) if npus_text else None
    out_dir = Path(out or (cfg.output.dir and str((Path(cfg.base_dir) / cfg.output.dir).resolve()))
                   or Path("out") / Path(config).stem)
    err = Console(stderr=True)
    bar = {}

    def progress(done: int, total: int) -> None:
        if total < 20000 and not bar:
            return
        if not bar:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            bar["p"] = Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.completed}/{task.total} tasks"),
                                TimeElapsedColumn(), console=err, transient=True)
            bar["p"].start()
            bar["t"] = bar["p"].add_task("sim", total=total)
        bar["p"].update(bar["t"], completed=done)
        if done >= total:
            bar["p"].stop()

    try:
        run = run_train(cfg, progress=progress)
    finally:
        if bar:
            bar["p"].stop()
    res = run.result
    if ranks is not None and (max(ranks) >= res.graph.n_npus):
        raise ConfigError("trace_npus", npus_text, f"accepted: NPUs 0..{res.graph.n_npus - 1}")
    config_echo = {"config": cfg.model_dump(mode="json", exclude={"base_dir"})}
    files = write_outputs(res, out_dir, run.title, trace=cfg.output.trace and not no_trace, trace_npus=ranks,
                          plot=cfg.output.plot and not no_plot, extra=config_echo)
    if json_out:
        import json

        s = summary_json(res, run.title, {"files": {k: str(v) for k, v in files.items()}, **config_echo})
        print(json.dumps(s, indent=2))
        return
    con = _out()
    s = res.summary()
    con.print(f"# fabricsim train: {run.title}", highlight=False, markup=False)
    con.print(f"# {run.topology.describe()}; network model {cfg.network.model}; {len(res.graph)} tasks, "
              f"{res.graph.n_iterations} iteration(s)", highlight=False, markup=False)
    its = ", ".join(format_time(x) for x in res.iteration_times)
    con.print(f"iteration time: {format_time(s['iteration_time_s'])}  (per iteration: {its})", highlight=False, markup=False)
    con.print(breakdown_table(res, "time per iteration: compute, exposed communication, idle (mean over NPUs)"))
    import os

    for k, v in files.items():
        con.print(f"wrote {k}: {os.path.relpath(v)}", highlight=False, markup=False)


# ---- paper reproductions: `fabricsim reproduce PAPER` (add a command per paper here) ---------
