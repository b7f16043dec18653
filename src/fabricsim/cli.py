"""The `fabricsim` command line.

Bad input ends in one line on stderr naming the field, the value and what is accepted, and
exit code 2; never a traceback.
"""

from __future__ import annotations

import shutil
import sys
from typing import Optional

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from .collectives.api import build_schedule, normalize_collective, parse_group
from .collectives.registry import ALGORITHMS, choose_algorithm
from .collectives.verify import ScheduleError, verify
from .errors import ConfigError
from .network.model import NETWORK_MODELS, get_network_model
from .report.tables import avg_busbw, collective_rows, rows_to_csv, rows_to_json
from .topology.spec import FAMILIES, parse_topology
from .units import format_size, format_time, parse_size_range

# typer runs on click (vendored in recent releases): take its exception classes from there
_click_exc = sys.modules[typer.BadParameter.__module__]
_ClickExit = getattr(_click_exc, "Exit", typer.Exit)
_ClickAbort = getattr(_click_exc, "Abort", typer.Abort)

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="fabricsim: simulate the networks that train large neural networks.",
)

VERIFY_FULL_LIMIT = 5_000_000  # (steps x transfers) above which verify samples blocks


def _out() -> Console:
    # tables stay readable when piped or in a narrow terminal
    return Console(soft_wrap=True, width=max(shutil.get_terminal_size((160, 24)).columns, 150))


def parse_options(items: list[str]) -> dict[str, str]:
    """`--option KEY=VALUE` items as a mapping of strings; the algorithm types them
    (`collectives.registry.choose_algorithm`)."""
    opts = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--option", item, "accepted: KEY=VALUE, e.g. bidirectional=true or chunks=8")
        opts[key.strip()] = value.strip()
    return opts


def _jsonable_option(v):
    return list(v) if isinstance(v, tuple) else v


def run_collective(topology: str, bandwidth: str, latency: str, collective: str, algorithm: str,
                   sizes: str, model: str, group: str | None = None, root: int = 0,
                   options: list[str] | None = None, check: bool = True):
    """Everything `fabricsim collective` does, minus printing: (header, rows)."""
    net = get_network_model(model)
    size_list = parse_size_range(sizes, "sizes")
    topo = parse_topology(topology, bandwidth, latency)
    coll = normalize_collective(collective)
    ranks = parse_group(group)
    if ranks is not None and len(ranks) > topo.n_npus:
        raise ConfigError("group", group, f"names {len(ranks)} ranks; accepted: at most {topo.n_npus} on {topo.name}")
    choice = choose_algorithm(algorithm, parse_options(options or []), where="--option")
    sched = build_schedule(topo, coll, choice, group=ranks, root=root)
    verified = None
    if check:
        work = sched.n_transfers
        sample = None if work <= VERIFY_FULL_LIMIT else 256
        rep = verify(sched, sample=sample)
        verified = {"blocks_checked": rep.blocks_checked, "nblocks": rep.nblocks, "sampled": sample is not None}
    times = net.collective(topo, sched).times(size_list)
    rows = collective_rows(coll, sched.p, size_list, times)
    header = {
        "topology": topo.name, "npus": topo.n_npus, "bandwidth": bandwidth, "latency": latency,
        "collective": coll, "algorithm": sched.algorithm, "ranks": sched.p, "model": net.name,
        "steps": sched.n_steps, "streaming": sched.streaming,
        "options": {k: _jsonable_option(v) for k, v in choice.options}, "verified": verified,
    }
    return header, rows


@app.command()
def collective(
    topology: str = typer.Option(..., "--topology", "-t", help="e.g. torus:8x8, ring:16, switch:8,reduce, fat-tree:64,leaf=8"),
    bandwidth: str = typer.Option("400Gbps", "--bandwidth", "-B", help="per link and direction; one value or one per dimension (comma list)"),
    latency: str = typer.Option("100ns", "--latency", "-L", help="per link; one value or one per dimension"),
    collective_name: str = typer.Option("all-reduce", "--collective", "-c", help="all-reduce, reduce-scatter, all-gather, all-to-all, broadcast, reduce"),
    algorithm: str = typer.Option("ring", "--algorithm", "-a", help="see `fabricsim algorithms`"),
    sizes: str = typer.Option("1KiB:1GiB", "--sizes", "-s", help="MIN:MAX (doubling), MIN:MAX:FACTOR, or a comma list"),
    model: str = typer.Option("congestion-aware", "--model", "-m", help="congestion-aware (= analytical), congestion-unaware, flow (max-min fair, dataflow), flow-store-and-forward; see `fabricsim models`"),
    group: Optional[str] = typer.Option(None, "--group", "-g", help="ranks, e.g. 0-7 or 0,2,4,6 (default: all NPUs)"),
    root: int = typer.Option(0, "--root", help="root rank (index in the group) for broadcast and reduce"),
    option: list[str] = typer.Option([], "--option", "-o", help="algorithm option KEY=VALUE, e.g. bidirectional=true (see `fabricsim algorithms`)"),
    check: bool = typer.Option(True, "--verify/--no-verify", help="execute the schedule on data before timing it"),
    json_out: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
    csv_out: bool = typer.Option(False, "--csv", help="print CSV instead of a table"),
):
    """Time one collective over a range of sizes; print an nccl-tests-style table."""
    header, rows = run_collective(topology, bandwidth, latency, collective_name, algorithm, sizes, model,
                                  group, root, option, check)
    if json_out:
        print(rows_to_json(header, rows))
        return
    if csv_out:
        print(rows_to_csv(rows), end="")
        return
    con = _out()
    v = header["verified"]
    vtxt = "not verified" if v is None else (f"verified on data ({v['blocks_checked']} of {v['nblocks']} blocks)" if v["sampled"] else "verified on data")
    how = "one stream through the switches" if header["streaming"] else f"{header['steps']} steps"
    con.print(f"# fabricsim collective: {header['collective']}, {header['algorithm']} on {header['topology']} "
              f"({header['ranks']} ranks), {how}, {header['model']}, {bandwidth}/link, {latency}; {vtxt}")
    table = Table(box=None, header_style="bold")
    for col in ("size (B)", "size", "count (elements)", "type", "time (us)", "algbw (GB/s)", "busbw (GB/s)"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r["size_bytes"]), format_size(r["size_bytes"]), str(r["count"]), "float",
                      f"{r['time_us']:.2f}", f"{r['algbw_GBps']:.2f}", f"{r['busbw_GBps']:.2f}")
    con.print(table)
    con.print(f"# Avg bus bandwidth    : {avg_busbw(rows):.3f} GB/s")


@app.command()
def topologies():
    """List topology families, one line each."""
    con = _out()
    for fam in FAMILIES.values():
        con.print(f"{fam.name:<16} {fam.example:<40} {fam.summary}", highlight=False)


@app.command()
def algorithms():
    """List collective algorithms: the collectives and group sizes they serve, their options (type, default)."""
    con = _out()
    for alg in ALGORITHMS.values():
        colls = ", ".join(c + ("*" if c in alg.pow2_only else "") for c in alg.collectives)
        con.print(f"{alg.name:<26} {colls}", highlight=False, markup=False)
        con.print(f"{'':<26} {alg.summary}", highlight=False, markup=False)
        con.print(f"{'':<26} group sizes: {alg.group_sizes}", highlight=False, markup=False)
        for opt in alg.options:
            con.print(f"{'':<26} -o {opt.describe()}: {opt.help}", highlight=False, markup=False)
        if alg.streams:
            con.print(f"{'':<26} streams through the switches (about size/bandwidth); -o lockstep=true for "
                      "lock-step steps", highlight=False, markup=False)
        if alg.aliases:
            con.print(f"{'':<26} aliases: " + ", ".join(
                a + ("" if not p else " (" + ",".join(f"{k}={v}" for k, v in p.items()) + ")")
                for a, p in alg.aliases.items()), highlight=False, markup=False)
    con.print("(* power-of-two groups only)", highlight=False, markup=False)


@app.command()
def models():
    """List network models (--model, network.model) and endpoint policies (system.endpoint.policy)."""
    from .system.endpoint import ENDPOINT_POLICIES

    con = _out()
    con.print("network models:", highlight=False, markup=False)
    for e in NETWORK_MODELS.values():
        alias = f" (also: {', '.join(e.aliases)})" if e.aliases else ""
        con.print(f"  {e.name:<24} {e.summary}{alias}", highlight=False, markup=False)
    con.print("endpoint policies:", highlight=False, markup=False)
    for p in ENDPOINT_POLICIES.values():
        fields = ", ".join(p.fields.model_fields) or "no fields"
        con.print(f"  {p.name:<24} {p.summary} ({fields})", highlight=False, markup=False)


@app.command()
def astra(
    workload_configuration: str = typer.Option(..., "--workload-configuration", help="Chakra trace prefix: rank r reads PREFIX.r.et"),
    system_configuration: str = typer.Option(..., "--system-configuration", help="ASTRA-sim system JSON"),
    network_configuration: str = typer.Option(..., "--network-configuration", help="ASTRA-sim analytical network YAML"),
    comm_group_configuration: Optional[str] = typer.Option(None, "--comm-group-configuration", help="communicator groups JSON"),
    remote_memory_configuration: Optional[str] = typer.Option(None, "--remote-memory-configuration", help="accepted for compatibility; only NO_MEMORY_EXPANSION is emulated"),
    backend: str = typer.Option("congestion-unaware", "--backend", help="congestion-unaware or congestion-aware (ASTRA-sim's two analytical binaries)"),
    model: Optional[str] = typer.Option(None, "--model", help="also run a fabricsim network model (analytical, flow, ...: `fabricsim models`) on every collective and print both answers"),
    injection_scale: float = typer.Option(1.0, "--injection-scale", help="multiplies endpoint-delay (ASTRA-sim option)"),
    num_queues_per_dim: int = typer.Option(1, "--num-queues-per-dim", help="ASTRA-sim option; only 1 is emulated"),
    json_out: bool = typer.Option(False, "--json", help="print JSON instead of ASTRA-sim's lines and a table"),
):
    """Run ASTRA-sim inputs as they are, in ASTRA-sim compatibility mode (ASTRA-sim's answers, to the ns)."""
    from .astra.run import compare_collectives, run_astra

    if num_queues_per_dim != 1:
        raise ConfigError("--num-queues-per-dim", num_queues_per_dim, "accepted: 1 (more queues per dimension are not emulated)")
    if remote_memory_configuration:
        from .astra.config import read_remote_memory

        mem = read_remote_memory(remote_memory_configuration)
        if mem.memory_type != "NO_MEMORY_EXPANSION":
            raise ConfigError(f"{remote_memory_configuration}: memory-type", mem.memory_type, "accepted: NO_MEMORY_EXPANSION (remote memory is not emulated)")
    run = run_astra(workload_configuration, system_configuration, network_configuration, comm_group_configuration,
                    backend, injection_scale)
    comparisons = compare_collectives(run, model) if model else []
    if json_out:
        import json

        print(json.dumps({
            "backend": run.backend, "npus": run.network.npus, "path": run.path, "wall_s": run.wall_s,
            "finish_ns_max": run.finish_ns_max, "finish_ns_min": run.finish_ns_min,
            "npu": [{"npu": r.npu, "finish_ns": r.finish_ns, "exposed_communication_ns": r.exposed_comm_ns,
                     "compute_ns": r.compute_ns} for r in run.results],
            "comparison": [c.__dict__ for c in comparisons], "warnings": list(run.warnings),
        }, indent=2))
        return
    con = _out()
    for w in run.warnings:
        con.print(f"[system] [warning] {w}", highlight=False, markup=False)
    for r in run.results:
        con.print(f"[workload] [info] sys[{r.npu}] finished, {r.finish_ns} cycles, exposed communication {r.exposed_comm_ns} cycles.", highlight=False, markup=False)
    table = Table(box=None, header_style="bold", title="fabricsim astra (ASTRA-sim compatibility mode)")
    for col in ("NPUs", "backend", "finish max (ns)", "finish min (ns)", "exposed comm max (ns)", "simulated", "wall"):
        table.add_column(col, justify="right")
    table.add_row(str(run.network.npus), run.backend, str(run.finish_ns_max), str(run.finish_ns_min),
                  str(max(r.exposed_comm_ns for r in run.results)), run.path, f"{run.wall_s:.3f} s")
    con.print(table)
    if comparisons:
        t2 = Table(box=None, header_style="bold", title=f"each collective alone: ASTRA-sim vs fabricsim ({model}, physical limits)")
        for col in ("collective", "size", "ASTRA-sim (ns)", f"fabricsim {model} (ns)", "fabricsim algorithm", "bandwidth bound (ns)", "ratio ASTRA/fabricsim"):
            t2.add_column(col, justify="right")
        for c in comparisons:
            t2.add_row(c.collective, format_size(c.size), str(c.astra_ns), f"{c.fabricsim_ns:.0f}", c.fabricsim_algorithm,
                       f"{c.bound_ns:.0f}", f"{c.astra_ns / c.fabricsim_ns:.3f}")
        con.print(t2)
        for c in comparisons:
            if c.impossible:
                con.print(f"[warning] ASTRA-sim's {c.collective} of {format_size(c.size)} ({c.astra_ns} ns) is faster than the "
                          f"links allow ({c.bound_ns:.0f} ns): the congestion-unaware backend lets concurrent chunks each take full bandwidth.",
                          highlight=False, markup=False)
    con.print("[system] [warning] Exiting", highlight=False, markup=False)


@app.command()
def traffic(
    file: str = typer.Argument(..., help="YAML: topology, bandwidth, latency, mode, flows, collectives (see docs/flow.md)"),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
    timeline: Optional[str] = typer.Option(None, "--timeline", help="write the link-utilization timeline to this CSV"),
):
    """Run flows and collectives with start times together on the flow-level model."""
    from .network.traffic import load_traffic, run_traffic

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


export_app = typer.Typer(help="Write fabricsim workloads in other tools' formats.", no_args_is_help=True)
app.add_typer(export_app, name="export")


@export_app.command("chakra")
def export_chakra(
    output: str = typer.Option(..., "--output", "-o", help="trace prefix: writes PREFIX.0.et .. PREFIX.{N-1}.et"),
    npus: Optional[int] = typer.Option(None, "--npus", "-n", help="number of NPUs (one trace each; with --text or --collective)"),
    text: Optional[str] = typer.Option(None, "--text", help="an ASTRA-sim 1.0 text workload (DATA, MODEL, HYBRID_*, MICRO)"),
    train_config: Optional[str] = typer.Option(None, "--train", help="or the workload of a `fabricsim train` config (a zoo model under its strategy); also writes PREFIX.groups.json"),
    collective_name: Optional[str] = typer.Option(None, "--collective", "-c", help="or one collective: all-reduce, all-gather, reduce-scatter, all-to-all"),
    size: str = typer.Option("1MiB", "--size", "-s", help="collective size (ASTRA-sim comm_size)"),
    passes: int = typer.Option(1, "--passes", help="training passes (text workloads)"),
    units: str = typer.Option("ns", "--units", help="text compute times: ns (their meaning in ASTRA-sim 1.0) or converter (as chakra_converter stores them, 1000x too long in ASTRA-sim 2.x)"),
    gzip_out: bool = typer.Option(False, "--gzip", help="gzip the .et files (ASTRA-sim reads both)"),
):
    """Write Chakra execution traces (.et) that ASTRA-sim reads."""
    from .units import parse_size
    from .workload.astra_text import read_astra_text, text_to_traces
    from .workload.chakra import collective_traces, write_traces

    if sum(x is not None for x in (text, collective_name, train_config)) != 1:
        raise ConfigError("export chakra", "source", "accepted: exactly one of --text FILE, --collective NAME, --train CONFIG")
    if train_config is not None:
        import json
        from pathlib import Path

        from .train import graph_of, load_train_config, topology_of
        from .workload.chakra_graph import graph_to_traces

        cfg = load_train_config(train_config)
        traces, groups = graph_to_traces(graph_of(cfg, topology_of(cfg).n_npus))
        paths = write_traces(output, traces, compress=gzip_out)
        gpath = Path(f"{output}.groups.json")
        gpath.write_text(json.dumps(groups, indent=1))
        _out().print(f"wrote {len(paths)} traces: {paths[0]} .. {paths[-1]} ({len(traces[0].nodes)} nodes on NPU 0) "
                     f"and {len(groups)} communicator groups: {gpath}", highlight=False, markup=False)
        return
    if npus is None or npus < 1:
        raise ConfigError("--npus", npus, "accepted: an integer >= 1")
    if text is not None:
        if units not in ("ns", "converter"):
            raise ConfigError("--units", units, "accepted: ns, converter")
        if passes < 1:
            raise ConfigError("--passes", passes, "accepted: an integer >= 1")
        traces = text_to_traces(read_astra_text(text), npus, passes, duration_unit="converter" if units == "converter" else "ns")
        if units == "ns" and any(float(n.duration_micros) != int(n.duration_micros) for t in traces for n in t.nodes):
            raise ConfigError("--units", "ns", "Chakra stores whole microseconds and this workload has sub-microsecond compute; accepted: converter")
    else:
        from .collectives.api import normalize_collective

        traces = collective_traces(normalize_collective(collective_name), int(parse_size(size, "--size")), npus)
    paths = write_traces(output, traces, compress=gzip_out)
    _out().print(f"wrote {len(paths)} traces: {paths[0]} .. {paths[-1]} ({sum(len(t.nodes) for t in traces[:1])} nodes per NPU)", highlight=False, markup=False)


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

    from .report.train import breakdown_table, summary_json, write_outputs
    from .train import load_train_config, run_train

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
reproduce_app = typer.Typer(help="Reproduce papers' results with fabricsim's models.", no_args_is_help=True)
app.add_typer(reproduce_app, name="reproduce")


def _reproduce_command(paper: str, doc: str, quick_help: str):
    """One `fabricsim reproduce PAPER` command: experiments.PAPER.reproduce with configs/PAPER.yaml."""

    def command(
        quick: bool = typer.Option(False, "--quick", help=quick_help),
        out: Optional[str] = typer.Option(None, "--out", help=f"output folder for CSV/JSON/PNG (default out/{paper})"),
        config: Optional[str] = typer.Option(None, "--config", help=f"reproduction config (default configs/{paper}.yaml)"),
        json_out: bool = typer.Option(False, "--json", help="print JSON instead of tables"),
    ):
        import importlib

        importlib.import_module(f"fabricsim.experiments.{paper}").reproduce(config, out, quick, json_out, _out(),
                                                                            Console(stderr=True))

    command.__doc__ = doc
    reproduce_app.command(paper)(command)


_reproduce_command("swing", "Swing (NSDI'24): gains over the best other all-reduce on tori, ours beside the paper's.",
                   "the CI subset of tori (config: quick)")
_reproduce_command("fred", "FRED (ISCA'25): the wafer mesh vs FRED's fabric (Fred-A..D), ours beside the paper's.",
                   "the CI subset (config: quick)")


DEMO_CASES = (
    ("torus:8x8", "swing"), ("torus:8x8", "bucket"),
    ("torus:8x8", "ring"), ("torus:8x8", "hierarchical"), ("torus:8x8", "halving_doubling"),
    ("torus:8x8", "recursive_doubling"), ("torus:8x8", "double_binary_tree"), ("torus:8x8", "direct"),
    ("switch:64,reduce", "ring"), ("switch:64,reduce", "halving_doubling"), ("switch:64,reduce", "in_network"),
)


@app.command()
def demo(
    bandwidth: str = typer.Option("400Gbps", "--bandwidth", "-B"),
    latency: str = typer.Option("100ns", "--latency", "-L"),
):
    """All-reduce algorithms on an 8x8 torus and a 64-port switch, and one GPT-3 training iteration (embedded defaults)."""
    con = _out()
    sizes = "4KiB,1MiB,64MiB,1GiB"
    con.print(f"# fabricsim demo: 64-rank all-reduce, {bandwidth} links, {latency}, congestion-aware; every schedule verified on data")
    table = Table(box=None, header_style="bold")
    table.add_column("topology")
    table.add_column("algorithm")
    table.add_column("steps", justify="right")
    for s in sizes.split(","):
        table.add_column(f"busbw {s} (GB/s)", justify="right")
    for topo, alg in DEMO_CASES:
        if alg not in ALGORITHMS:
            continue
        header, rows = run_collective(topo, bandwidth, latency, "all-reduce", alg, sizes, "congestion-aware")
        table.add_row(topo, alg, str(header["steps"]), *(f"{r['busbw_GBps']:.2f}" for r in rows))
    con.print(table)
    con.print("# busbw = algbw x 2(n-1)/n (nccl-tests); each link carries "
              f"{parse_topology('ring:2', bandwidth, latency).link_bw[0] / 1e9:g} GB/s per direction; a torus node has 4 "
              "links and multiport algorithms (swing, bucket) use them all", highlight=False)
    # the main question: one training iteration and where its time goes (embedded defaults)
    from .report.train import breakdown_table
    from .train import TrainConfig, run_train

    cfg = TrainConfig.model_validate(DEMO_TRAIN)
    res = run_train(cfg).result
    con.print()
    con.print(f"# {cfg.name}: one iteration takes {format_time(res.iteration_time)}", highlight=False, markup=False)
    con.print(breakdown_table(res, "where the time goes (mean over NPUs, per pipeline stage)"))
    con.print("# the same from a file, with a Perfetto trace and a plot: fabricsim train configs/gpt3-175b-64.yaml",
              highlight=False, markup=False)


DEMO_TRAIN = {
    "name": "GPT-3 175B, MP(8)-DP(2)-PP(4), 1F1B, 8 microbatches, on 64 H100-class NPUs (8 per 450 GB/s switch, 400 Gb/s between)",
    "network": {"topology": "stack:Switch8xSwitch8", "bandwidth": ["450GB/s", "400Gbps"], "latency": ["100ns", "1us"]},
    "system": {"npu": {"peak": "989TFLOP/s", "memory_bandwidth": "3.35TB/s", "efficiency": 0.5},
               "scheduling": {"comm_streams": "per-category"}},
    "workload": {"model": "gpt3-175b", "batch": 32,
                 "parallelism": {"mp": 8, "dp": 2, "pp": 4, "microbatches": 8, "schedule": "1f1b"}},
}


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app and turns every input error into one line and exit code 2."""
    cmd = typer.main.get_command(app)
    try:
        rv = cmd.main(args=argv, prog_name="fabricsim", standalone_mode=False)
        return int(rv) if isinstance(rv, int) else 0
    except ConfigError as e:
        print(f"fabricsim: error: {e}", file=sys.stderr)
        return 2
    except _click_exc.ClickException as e:
        if type(e).__name__ == "NoArgsIsHelpError":  # bare `fabricsim`: help, not an error
            print(e.format_message(), file=sys.stderr)
            return 0
        msg = " ".join(e.format_message().split())
        print(f"fabricsim: error: {msg}", file=sys.stderr)
        return 2
    except _ClickExit as e:
        return e.exit_code
    except _ClickAbort:
        print("fabricsim: aborted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head`: not an error
        return 0
    except ScheduleError as e:  # a bug in an algorithm, not in the input: say so plainly
        print(f"fabricsim: internal error: schedule failed verification: {e}", file=sys.stderr)
        return 1


def _console_main() -> None:
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    _console_main()
