"""`fabricsim collective` and the listings: `topologies`, `algorithms`, `models`."""

from __future__ import annotations

from typing import Optional

import typer

# lazy: the collectives, network models and topology builders (numpy, scipy, pydantic) are imported
# inside the commands, so `fabricsim --help` and the other commands do not pay for them
from ..collective_job import parse_options, run_collective, verify_mode  # noqa: F401 (the CLI re-exports them)
from ..errors import ConfigError
from ..topology.defaults import DEFAULT_BANDWIDTH, DEFAULT_LATENCY
from .app import app, out_console as _out
from .progress import QUIET_HELP, progress_bar

VERIFY_HELP = ("auto: every block up to 5M block moves, above that a sample of 16-256 blocks (a few seconds at "
               "65,536 ranks); full: every block (minutes at 65,536 ranks); sample: a sample at any size; off")


@app.command()
def collective(
    topology: str = typer.Option(..., "--topology", "-t", help="e.g. torus:8x8, ring:16, switch:8,reduce, fat-tree:64,leaf=8"),
    bandwidth: str = typer.Option(DEFAULT_BANDWIDTH, "--bandwidth", "-B", help="per link and direction; one value or one per dimension (comma list)"),
    latency: str = typer.Option(DEFAULT_LATENCY, "--latency", "-L", help="per link; one value or one per dimension"),
    collective_name: str = typer.Option("all-reduce", "--collective", "-c", help="all-reduce, reduce-scatter, all-gather, all-to-all, broadcast, reduce"),
    algorithm: str = typer.Option("auto", "--algorithm", "-a", help="auto (NCCL's choice per size on a GPU cluster; ring elsewhere) or see `fabricsim algorithms`"),
    sizes: str = typer.Option("1KiB:1GiB", "--sizes", "-s", help="MIN:MAX (doubling), MIN:MAX:FACTOR, or a comma list; a bare K/M/G is binary as in nccl-tests (8:128M)"),
    model: str = typer.Option("congestion-aware", "--model", "-m", help="congestion-aware (= analytical), congestion-unaware, flow (max-min fair, dataflow), flow-store-and-forward; see `fabricsim models`"),
    group: Optional[str] = typer.Option(None, "--group", "-g", help="ranks, e.g. 0-7 or 0,2,4,6 (default: all NPUs)"),
    root: Optional[int] = typer.Option(None, "--root", help="root rank (index in the group) for broadcast and reduce (default 0)"),
    option: list[str] = typer.Option([], "--option", "-o", help="algorithm option KEY=VALUE, e.g. bidirectional=true (see `fabricsim algorithms`)"),
    check: bool = typer.Option(True, "--verify/--no-verify", help="execute the schedule on data before timing it (--no-verify = --verification off)"),
    verification: str = typer.Option("auto", "--verification", help=VERIFY_HELP),
    json_out: bool = typer.Option(False, "--json", help="print JSON instead of a table"),
    csv_out: bool = typer.Option(False, "--csv", help="print CSV instead of a table"),
    plot: Optional[str] = typer.Option(None, "--plot", help="also write busbw vs size to this image (.png, .pdf, .svg)"),
    nccl_out: bool = typer.Option(False, "--nccl", help="print exactly nccl-tests' all_reduce_perf layout"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
):
    """Time one collective over a range of sizes; print an nccl-tests-style table."""
    from ..report.tables import avg_busbw, rows_to_csv, rows_to_json, rows_to_nccl, rows_to_text

    mode = verify_mode(verification, no_verify=not check)
    _check_applies(collective_name, algorithm, option, root, json_out, csv_out, nccl_out)
    if plot:  # a bad path fails before the run
        from ..report.plotting import check_path

        check_path(plot, "--plot")
    with progress_bar("collective", quiet) as progress:
        header, rows = run_collective(topology, bandwidth, latency, collective_name, algorithm, sizes, model,
                                      group, root, option, mode, progress)
    if plot:
        from ..report import plotting

        plotting.save(collective_figure(header, rows), plot)
    if json_out:
        print(rows_to_json(header, rows))
        return
    if csv_out:
        print(rows_to_csv(rows), end="")
        return
    con = _out()
    v = header["verified"]
    vtxt = "not verified" if v is None else (f"verified on data: {v['blocks_checked']} sampled blocks of {v['nblocks']}"
                                            if v["sampled"] else f"verified on data: all {v['nblocks']} blocks")
    how = "one stream through the switches" if header["streaming"] else f"{header['steps']} steps"
    title = (f"fabricsim collective: {header['collective']}, {header['algorithm']} on {header['topology']} "
             f"({header['ranks']} ranks), {how}, {header['model']}, {bandwidth}/link, {latency}; {vtxt}")
    if nccl_out:  # plain print: exact text, no console styling or wrapping
        print(rows_to_nccl(header["collective"], rows, root or 0, None if v is None else 0, (title,)), end="")
        return
    con.print("# " + title)
    print(rows_to_text(rows), end="", flush=True)
    con.print(f"# Avg bus bandwidth    : {avg_busbw(rows):.3f} GB/s")
    if plot:
        con.print(f"# wrote plot: {plot}", highlight=False, markup=False)


def _check_applies(collective_name: str, algorithm: str, option: list[str], root: int | None,
                   json_out: bool, csv_out: bool, nccl_out: bool) -> None:
    """Refuse what `fabricsim collective` was given but would ignore: `--root` for a collective
    without a root, an algorithm option that does not change this collective, two output formats."""
    from ..collectives.api import normalize_collective
    from ..collectives.registry import ALGORITHMS, check_option_keys, choose_algorithm

    formats = [name for name, on in (("--json", json_out), ("--csv", csv_out), ("--nccl", nccl_out)) if on]
    if len(formats) > 1:
        raise ConfigError("output format", " ".join(formats), "accepted: one of --json, --csv, --nccl (or none: a table)")
    coll = normalize_collective(collective_name)
    if root is not None and coll not in ("broadcast", "reduce"):
        raise ConfigError("--root", root, f"a root applies to broadcast and reduce only; accepted: leave it out for {coll}")
    check_option_keys(algorithm, parse_options(option or []), "--algorithm")  # given twice: the -a string's field
    choice = choose_algorithm(algorithm, parse_options(option or []), where="--option")
    if choice.name in ALGORITHMS:  # auto: NCCL's choice, no options
        ALGORITHMS[choice.name].check_applies(coll, choice.kwargs, where="--option")


def collective_figure(header: dict, rows: list[dict]):
    """busbw against size for `fabricsim collective --plot`: one line (this algorithm on this
    model), a marker at each size timed.

    Parameters
    ----------
    header, rows
        What `run_collective` returns (busbw in GB/s, sizes in bytes).

    Returns
    -------
    Figure
        `report.figures.busbw_figure`.
    """
    from ..report.figures import busbw_figure

    series = {f"{header['algorithm']} ({header['model']})":
              ([r["size_bytes"] for r in rows], [r["busbw_GBps"] * 1e9 for r in rows])}
    return busbw_figure(series, f"{header['collective']} on {header['topology']} ({header['ranks']} ranks), "
                                f"{header['bandwidth']}/link, {header['latency']}")


@app.command()
def topologies():
    """List topology families, one line each."""
    from ..topology.spec import FAMILIES

    con = _out()
    for fam in FAMILIES.values():
        con.print(f"{fam.name:<16} {fam.example:<40} {fam.summary}", highlight=False)


@app.command()
def algorithms():
    """List collective algorithms: the collectives and group sizes they serve, their options (type, default)."""
    from ..collectives.algorithm import AlgorithmChoice
    from ..collectives.registry import ALGORITHMS

    con = _out()
    con.print(f"{'auto':<26} every collective (the default)", highlight=False, markup=False)
    con.print(f"{'':<26} NCCL's choice per size on a GPU cluster: its algorithms the topology can run, each in "
              "every protocol NCCL enables, the cheapest; ring (direct for all-to-all) elsewhere; takes the "
              "options of the algorithms it may run", highlight=False, markup=False)
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
                a + ("" if not p else f" (= {AlgorithmChoice(alg.name, tuple(sorted(p.items())))})")
                for a, p in alg.aliases.items()), highlight=False, markup=False)
    con.print("(* power-of-two groups only)", highlight=False, markup=False)


@app.command()
def models():
    """List network models (--model, network.model) and endpoint policies (system.endpoint.policy)."""
    from ..network.model import NETWORK_MODELS
    from ..system.endpoint import DEFAULT_POLICY, ENDPOINT_POLICIES, policy_fields

    con = _out()
    con.print("network models:", highlight=False, markup=False)
    for e in NETWORK_MODELS.values():
        alias = f" (also: {', '.join(e.aliases)})" if e.aliases else ""
        con.print(f"  {e.name:<24} {e.summary}{alias}", highlight=False, markup=False)
    con.print("endpoint policies:", highlight=False, markup=False)
    for p in ENDPOINT_POLICIES.values():
        default = ", the default" if p.name == DEFAULT_POLICY else ""
        con.print(f"  {p.name:<24} {p.summary} ({policy_fields(p)}{default})", highlight=False, markup=False)
