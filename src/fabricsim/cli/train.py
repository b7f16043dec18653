"""`fabricsim train` (training iterations) and `fabricsim traffic` (flows and collectives together)."""

from __future__ import annotations

from typing import Optional

import typer

# lazy: numpy, rich.table and the collectives are imported inside the commands (start-up time)
from ..errors import ConfigError
from ..units import format_size, format_time
from .app import app, out_console as _out
from .progress import QUIET_HELP, progress_bar


@app.command()
def traffic(
    file: str = typer.Argument(..., help="YAML: topology, bandwidth, latency, mode, flows, collectives (see docs/flow.md)"),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
    timeline: Optional[str] = typer.Option(None, "--timeline", help="write the link-utilization timeline to this CSV (an existing file is replaced)"),
    plot: Optional[str] = typer.Option(None, "--plot", help="write per-link utilization, busiest first, to this image (.png, .pdf, .svg; an existing file is replaced)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
):
    """Run flows and collectives with start times together on the flow-level model."""
    import numpy as np
    from rich.table import Table

    from ..network.traffic import load_traffic, run_traffic

    spec = load_traffic(file)
    if plot is not None:  # a bad path fails before the run
        from ..report.plotting import check_path

        check_path(plot, "--plot", inputs=[file])
    if timeline is not None:
        import os

        from ..outputs import check_output_file

        check_output_file(timeline, "--timeline", inputs=[file])
        if plot is not None and os.path.realpath(timeline) == os.path.realpath(plot):
            raise ConfigError("--timeline", timeline, "is also the --plot file; accepted: another file")
    with progress_bar("traffic", quiet) as progress:
        res = run_traffic(spec, record_timeline=timeline is not None, progress=progress)
    if plot:
        from ..report import plotting
        from ..report.figures import utilization_figure

        plotting.save(utilization_figure(
            res.link_utilization, res.link_names(),
            f"link utilization: {file} on {res.topology} ({spec.model}), makespan {format_time(res.makespan_s)}"), plot)
    if timeline is not None:
        import csv

        from ..outputs import atomic_file

        with atomic_file(timeline, "--timeline", newline="") as fh:
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
    if plot:
        con.print(f"wrote plot: {plot}", highlight=False, markup=False)




@app.command()
def train(
    config: str = typer.Argument(..., help="training config YAML: network, system, workload, output (see docs/train.md)"),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="output folder, new or empty (default: the config's output.dir, "
                                      "relative to the config file, else out/<config name> in the current folder)"),
    force: bool = typer.Option(False, "--force", help="replace the results of an earlier run in the output folder"),
    iterations: Optional[int] = typer.Option(None, "--iterations", "-n", help="override workload.iterations"),
    endpoint: Optional[str] = typer.Option(None, "--endpoint", "-e", help="override system.endpoint: POLICY[,FIELD=VALUE...], "
                                           "e.g. comm-opt, npu,units=0.1,memory=0.3, ace,sram=4MiB,alu_throughput=300GB/s,"
                                           "dma_bandwidth=450GB/s (fabricsim models lists the policies)"),
    trace_npus: Optional[str] = typer.Option(None, "--trace-npus", help="NPUs in the Perfetto trace, e.g. 0-63 or 0,8,16 (default: the first 64)"),
    no_trace: bool = typer.Option(False, "--no-trace", help="do not write the Perfetto trace"),
    trace_format: Optional[str] = typer.Option(None, "--trace-format", help="json (trace.json) or json.gz (trace.json.gz, gzip); default: the config's output.trace_format, else json"),
    no_plot: bool = typer.Option(False, "--no-plot", help="do not write breakdown.png"),
    json_out: bool = typer.Option(False, "--json", help="print the summary as JSON"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
):
    """Simulate training iterations: iteration time, where it goes, MFU, a Perfetto trace and a plot."""
    from ..train import load_train_config

    cfg = load_train_config(config)
    _apply_overrides(cfg, endpoint, iterations, trace_format)
    ranks, npus_text, npus_field = _trace_ranks(config, cfg, trace_npus)
    out_dir, out_field = _output_dir(config, cfg, out, force)
    if cfg.jobs is not None:  # several jobs on one fabric (`fabricsim.multi_job`)
        return _train_jobs(cfg, quiet, ranks, out_dir, out_field, force, no_trace, json_out)
    with progress_bar("train", quiet) as progress:
        run, usage, files, config_echo = _run_and_write(cfg, progress, ranks, npus_text, npus_field, out_dir,
                                                        out_field, force, no_trace, no_plot)
    if json_out:
        import json

        from ..report.train import summary_json

        s = summary_json(run.result, run.title, {"files": {k: str(v) for k, v in files.items()}, **config_echo})
        print(json.dumps(s, indent=2))
        return
    _print_report(cfg, run, usage, files)


def _apply_overrides(cfg, endpoint: Optional[str], iterations: Optional[int], trace_format: Optional[str]) -> None:
    """None: `--endpoint`, `--iterations` and `--trace-format` set on `cfg`, each checked as its config field is."""
    from ..config import validate
    from ..report.trace import trace_file_name
    from ..sections import EndpointSection, parse_endpoint

    if endpoint is not None:
        cfg.system.endpoint = validate(EndpointSection, parse_endpoint(endpoint, "--endpoint"), "--endpoint")
    if iterations is not None:
        if iterations < 1:
            raise ConfigError("--iterations", iterations, "accepted: an integer >= 1")
        from ..limits import check_limit

        check_limit("iterations", iterations, "iterations", "--iterations", iterations)
        for _, w in cfg.workloads():
            w.iterations = iterations
    if trace_format is not None:
        trace_file_name(trace_format, "--trace-format")  # ConfigError for anything else
        cfg.output.trace_format = trace_format


def _trace_ranks(config: str, cfg, trace_npus: Optional[str]):
    """(the NPUs of the trace or None, the text they came from, the field that names them), checked
    against the network before the run (the graph's NPUs are checked again after it)."""
    from ..collectives.api import parse_group

    npus_text = trace_npus or cfg.output.trace_npus
    npus_field = "--trace-npus" if trace_npus else f"{config}: output.trace_npus"
    ranks = parse_group(npus_text, npus_field) if npus_text else None
    if ranks:
        from ..train import topology_of

        n_npus = topology_of(cfg).n_npus
        if max(ranks) >= n_npus:
            raise ConfigError(npus_field, npus_text, f"accepted: NPUs 0..{n_npus - 1}")
    return ranks, npus_text, npus_field


def _output_dir(config: str, cfg, out: Optional[str], force: bool) -> tuple[str, str]:
    """(the output folder, the field that names it), checked before the run: a bad path or earlier
    results cost no simulation time."""
    import os
    from pathlib import Path

    from ..outputs import check_output_dir

    if out is not None:
        out_dir, out_field = out, "--out"
    elif cfg.output.dir is not None:
        out_dir, out_field = os.path.join(cfg.base_dir, cfg.output.dir), f"{config}: output.dir"
    else:
        out_dir, out_field = str(Path("out") / Path(config).stem), "--out"
    check_output_dir(out_dir, out_field, force, _train_inputs(config, cfg))
    return out_dir, out_field


def _run_and_write(cfg, progress, ranks, npus_text: str, npus_field: str, out_dir: str, out_field: str, force: bool,
                   no_trace: bool, no_plot: bool):
    """(the `TrainRun`, its endpoint usage, the files written, the config echo of summary.json): the
    run, then its outputs in `out_dir`."""
    from ..engine.usage import endpoint_usage
    from ..report.train import memory_summary, write_outputs
    from ..train import run_train

    run = run_train(cfg, progress=progress)
    res = run.result
    if ranks is not None and (max(ranks) >= res.graph.real_npus):
        raise ConfigError(npus_field, npus_text, f"accepted: NPUs 0..{res.graph.real_npus - 1}")
    progress(0, 0, "endpoint usage")
    usage = endpoint_usage(res, run.pricer)
    config_echo = {"config": cfg.model_dump(mode="json", exclude={"base_dir"}), "endpoint": usage.summary(),
                   "memory": memory_summary(run), "notes": list(run.notes)}
    progress(0, 0, f"writing {out_dir}")
    files = write_outputs(res, out_dir, run.title, trace=cfg.output.trace and not no_trace, trace_npus=ranks,
                          trace_format=cfg.output.trace_format, plot=cfg.output.plot and not no_plot,
                          extra=config_echo, force=force, field=out_field)
    return run, usage, files, config_echo


def _print_report(cfg, run, usage, files: dict) -> None:
    """None: the run's report on stdout (title, iteration time, throughput, endpoint, memory, notes,
    the breakdown table, the files written)."""
    import os

    from ..report.train import breakdown_table, endpoint_line, iteration_line, memory_line, throughput_line

    res = run.result
    con = _out()
    con.print(f"# fabricsim train: {run.title}", highlight=False, markup=False)
    con.print(f"# {run.topology.describe()}; network model {cfg.network.model}; {len(res.graph)} tasks, "
              f"{res.graph.n_iterations} iteration(s)", highlight=False, markup=False)
    con.print(iteration_line(res), highlight=False, markup=False)
    if res.graph.n_iterations > 1:
        its = ", ".join(format_time(x) for x in res.iteration_times)
        con.print(f"each iteration: {its}", highlight=False, markup=False)
    con.print(throughput_line(res), highlight=False, markup=False)
    con.print(endpoint_line(usage, cfg.system.endpoint.policy), highlight=False, markup=False)
    if run.memory is not None:
        con.print(memory_line(run), highlight=False, markup=False)
    for note in run.notes:
        con.print(note, highlight=False, markup=False)
    con.print(breakdown_table(res, "time per iteration: compute, exposed communication, idle (mean over NPUs)"))
    for k, v in files.items():
        con.print(f"wrote {k}: {os.path.relpath(v)}", highlight=False, markup=False)


def _train_inputs(config: str, cfg) -> list[str]:
    """The files a training config reads (itself, a text workload, communicator groups, a Chakra
    trace prefix), resolved as the config resolves them: the output folder may hold none of them."""
    import os

    return [config] + [os.path.join(cfg.base_dir, f) for _, w in cfg.workloads()
                       for f in (w.astra_text, w.comm_groups, w.chakra) if f]


def _train_jobs(cfg, quiet: bool, ranks, out_dir: str, out_field: str, force: bool, no_trace: bool,
                json_out: bool) -> None:
    """None: a config with `jobs:` run together and each job alone (`multi_job.run_jobs`), its
    summary.json (and trace) written to `out_dir`, its tables (or the summary as JSON) on stdout."""
    import json
    import os

    from ..multi_job import run_jobs
    from ..report.jobs import jobs_summary, jobs_tables, memory_lines, write_jobs_outputs

    with progress_bar("train", quiet) as progress:
        run = run_jobs(cfg, progress=progress)
        progress(0, 0, f"writing {out_dir}")
        echo = {"config": cfg.model_dump(mode="json", exclude={"base_dir"})}
        files = write_jobs_outputs(run, out_dir, trace=cfg.output.trace and not no_trace, trace_npus=ranks,
                                   trace_format=cfg.output.trace_format, extra=echo, force=force, field=out_field)
    if json_out:
        print(json.dumps(jobs_summary(run, {**echo, "files": {k: str(v) for k, v in files.items()}}), indent=2))
        return
    con = _out()
    con.print(f"# fabricsim train: {run.title}", highlight=False, markup=False)
    con.print(f"# {run.topology.describe()}; network model {cfg.network.model}; {len(run.jobs)} jobs, "
              f"{len(run.result.graph)} tasks", highlight=False, markup=False)
    for line in [*memory_lines(run), *run.notes]:
        con.print(line, highlight=False, markup=False)
    for table in jobs_tables(run):
        con.print(table)
    for k, v in files.items():
        con.print(f"wrote {k}: {os.path.relpath(v)}", highlight=False, markup=False)


# ---- paper reproductions: `fabricsim reproduce PAPER` (add a command per paper here) ---------
