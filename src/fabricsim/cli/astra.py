"""`fabricsim astra` (ASTRA-sim inputs as they are) and `fabricsim export chakra`."""

from __future__ import annotations

import math
from typing import Optional

import typer

from ..errors import ConfigError
from ..limits import check_limit
from ..units import format_size
from .app import app, out_console as _out
from .progress import QUIET_HELP, progress_bar


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
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
):
    """Run ASTRA-sim inputs as they are, in ASTRA-sim compatibility mode (ASTRA-sim's answers, to the ns)."""
    from rich.table import Table  # lazy, as the emulator: `fabricsim --help` needs neither

    from ..astra.run import compare_collectives, run_astra

    if num_queues_per_dim != 1:
        raise ConfigError("--num-queues-per-dim", num_queues_per_dim, "accepted: 1 (more queues per dimension are not emulated)")
    if not (math.isfinite(injection_scale) and 0 <= injection_scale <= 1e6):
        # beyond 1e6 the scaled delays leave the 64-bit nanosecond clock ASTRA-sim's answers are given on
        raise ConfigError("--injection-scale", injection_scale, "accepted: a number from 0 to 1e6 (the endpoint-delay multiplier)")
    with progress_bar("astra", quiet) as progress:
        run = run_astra(workload_configuration, system_configuration, network_configuration, comm_group_configuration,
                        backend, injection_scale, progress=progress, remote_memory=remote_memory_configuration)
        comparisons = compare_collectives(run, model, progress) if model else []
    if json_out:
        import json

        print(json.dumps({
            "backend": run.backend, "npus": run.network.npus, "path": run.path, "wall_s": run.wall_s,
            "finish_ns_max": run.finish_ns_max, "finish_ns_min": run.finish_ns_min,
            "npu": [{"npu": r.npu, "finish_ns": r.finish_ns, "exposed_communication_ns": r.exposed_comm_ns,
                     "compute_ns": r.compute_ns} for r in run.results],
            "comparison": [c.__dict__ for c in comparisons], "warnings": list(run.warnings),
        }, indent=2, default=_json_scalar))
        return
    con = _out()
    for w in run.warnings:
        con.print(f"[system] [warning] {w}", highlight=False, markup=False)
    if run.results:  # one print for all NPUs: the same text, 1024 separate prints cost 0.07 s
        con.print("\n".join(f"[workload] [info] sys[{r.npu}] finished, {r.finish_ns} cycles, exposed communication "
                            f"{r.exposed_comm_ns} cycles." for r in run.results), highlight=False, markup=False)
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




def _check_applies(text, collective_name, train_config, npus, size, passes, units) -> None:
    """Refuse `export chakra` options the chosen source would ignore, and bad or oversize
    values, before anything is read or generated."""
    source = "--text" if text is not None else "--collective" if collective_name is not None else "--train"
    for name, value, sources in (("--npus", npus, ("--text", "--collective")), ("--size", size, ("--collective",)),
                                 ("--passes", passes, ("--text",)), ("--units", units, ("--text",))):
        if value is not None and source not in sources:
            raise ConfigError(name, value, f"{name} applies to {' and '.join(sources)} only; accepted: leave it out "
                                           f"with {source}")
    if source == "--train":
        return
    if npus is None or npus < 1:
        raise ConfigError("--npus", npus, "accepted: an integer >= 1")
    check_limit("npus", npus, "NPUs", "--npus", npus)
    check_limit("trace_nodes", npus, "trace nodes (one per NPU)", "--npus", npus)
    if passes is not None and passes < 1:
        raise ConfigError("--passes", passes, "accepted: an integer >= 1")
    if units is not None and units not in ("ns", "converter"):
        raise ConfigError("--units", units, "accepted: ns, converter")


def _json_scalar(x):
    """numpy scalars (a bool_ or int64 from a comparison) as the Python values json writes."""
    if hasattr(x, "item"):
        return x.item()
    raise TypeError(f"Object of type {type(x).__name__} is not JSON serializable")


export_app = typer.Typer(help="Write fabricsim workloads in other tools' formats.", no_args_is_help=True)
app.add_typer(export_app, name="export")


@export_app.command("chakra")
def export_chakra(
    output: str = typer.Option(..., "--output", "-o", help="trace prefix: writes PREFIX.0.et .. PREFIX.{N-1}.et (a new prefix, or --force)"),
    force: bool = typer.Option(False, "--force", help="replace an earlier set under the prefix (PREFIX.<r>.et, .et.gz, .groups.json)"),
    npus: Optional[int] = typer.Option(None, "--npus", "-n", help="number of NPUs (one trace each; with --text or --collective)"),
    text: Optional[str] = typer.Option(None, "--text", help="an ASTRA-sim 1.0 text workload (DATA, MODEL, HYBRID_*, MICRO)"),
    train_config: Optional[str] = typer.Option(None, "--train", help="or the workload of a `fabricsim train` config (a zoo model under its strategy); also writes PREFIX.groups.json"),
    collective_name: Optional[str] = typer.Option(None, "--collective", "-c", help="or one collective: all-reduce, all-gather, reduce-scatter, all-to-all"),
    size: Optional[str] = typer.Option(None, "--size", "-s", help="collective size (ASTRA-sim comm_size; with --collective, default 1MiB)"),
    passes: Optional[int] = typer.Option(None, "--passes", help="training passes (with --text, default 1)"),
    units: Optional[str] = typer.Option(None, "--units", help="text compute times (with --text): ns (their meaning in ASTRA-sim 1.0, the default) or converter (as chakra_converter stores them, 1000x too long in ASTRA-sim 2.x)"),
    gzip_out: bool = typer.Option(False, "--gzip", help="gzip the .et files (ASTRA-sim reads both)"),
):
    """Write Chakra execution traces (.et) that ASTRA-sim reads."""
    from ..units import parse_whole_size
    from ..workload.astra_text import read_astra_text, text_to_traces
    from ..workload.chakra import collective_traces, write_traces

    if sum(x is not None for x in (text, collective_name, train_config)) != 1:
        raise ConfigError("export chakra", "source", "accepted: exactly one of --text FILE, --collective NAME, --train CONFIG")
    _check_applies(text, collective_name, train_config, npus, size, passes, units)
    from ..outputs import check_prefix

    check_prefix(output, "--output", force, inputs=[text, train_config])  # before any work: no earlier set is lost
    if train_config is not None:
        from ..train import graph_of, load_train_config, topology_of
        from ..workload.chakra_graph import graph_to_traces

        cfg = load_train_config(train_config)
        traces, groups = graph_to_traces(graph_of(cfg, topology_of(cfg).n_npus))
        paths = write_traces(output, traces, compress=gzip_out, groups=groups, field="--output")
        gpath = f"{output}.groups.json"
        _out().print(f"wrote {len(paths)} traces: {paths[0]} .. {paths[-1]} ({len(traces[0].nodes)} nodes on NPU 0) "
                     f"and {len(groups)} communicator groups: {gpath}", highlight=False, markup=False)
        return
    if text is not None:
        units, passes = units or "ns", 1 if passes is None else passes
        workload = read_astra_text(text)
        unit = "converter" if units == "converter" else "ns"
        # sized from one NPU's single pass before all of them are made
        per_pass = len(text_to_traces(workload, 1, 1, duration_unit=unit)[0].nodes)
        check_limit("trace_nodes", per_pass * passes * npus, f"trace nodes ({per_pass} per pass and NPU)",
                    "--passes", passes)
        traces = text_to_traces(workload, npus, passes, duration_unit=unit)
        if units == "ns" and any(float(n.duration_micros) != int(n.duration_micros) for t in traces for n in t.nodes):
            raise ConfigError("--units", "ns", "Chakra stores whole microseconds and this workload has sub-microsecond compute; accepted: converter")
    else:
        from ..collectives.api import normalize_collective

        traces = collective_traces(normalize_collective(collective_name), parse_whole_size(size or "1MiB", "--size"), npus)
    paths = write_traces(output, traces, compress=gzip_out, field="--output")
    _out().print(f"wrote {len(paths)} traces: {paths[0]} .. {paths[-1]} ({sum(len(t.nodes) for t in traces[:1])} nodes per NPU)", highlight=False, markup=False)
