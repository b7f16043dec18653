"""`fabricsim collective` and the listings: `topologies`, `algorithms`, `models`."""

from __future__ import annotations

from typing import Optional

import typer
from rich.table import Table

from ..collectives.api import build_schedule, normalize_collective, parse_group
from ..collectives.algorithm import AlgorithmChoice
from ..collectives.registry import ALGORITHMS, choose_algorithm
from ..collectives.verify import verify
from ..errors import ConfigError
from ..network.model import NETWORK_MODELS, get_network_model
from ..report.tables import avg_busbw, collective_rows, rows_to_csv, rows_to_json
from ..topology.spec import FAMILIES, parse_topology
from ..units import format_size, parse_size_range
from .app import app, out_console as _out

VERIFY_FULL_LIMIT = 5_000_000  # (steps x transfers) above which verify samples blocks


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
                a + ("" if not p else f" (= {AlgorithmChoice(alg.name, tuple(sorted(p.items())))})")
                for a, p in alg.aliases.items()), highlight=False, markup=False)
    con.print("(* power-of-two groups only)", highlight=False, markup=False)


@app.command()
def models():
    """List network models (--model, network.model) and endpoint policies (system.endpoint.policy)."""
    from ..system.endpoint import ENDPOINT_POLICIES

    con = _out()
    con.print("network models:", highlight=False, markup=False)
    for e in NETWORK_MODELS.values():
        alias = f" (also: {', '.join(e.aliases)})" if e.aliases else ""
        con.print(f"  {e.name:<24} {e.summary}{alias}", highlight=False, markup=False)
    con.print("endpoint policies:", highlight=False, markup=False)
    for p in ENDPOINT_POLICIES.values():
        fields = ", ".join(p.fields.model_fields) or "no fields"
        con.print(f"  {p.name:<24} {p.summary} ({fields})", highlight=False, markup=False)
