"""`fabricsim topology optimize CONFIG`: TopoOpt for a user's own job (`optimize.job`)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..errors import ConfigError
from ..units import format_bandwidth, format_time
from .app import app, out_console as _out
from .progress import QUIET_HELP, progress_bar

topology_app = typer.Typer(help="Design topologies: co-optimize a direct-connect topology with the parallelization "
                                "(TopoOpt).", no_args_is_help=True)
app.add_typer(topology_app, name="topology")


@topology_app.command()
def optimize(
    config: str = typer.Argument(..., help="YAML: servers, degree, link_bandwidth, server, workload, search "
                                           "(see docs/topoopt.md)"),
    out: str = typer.Option("out/topology", "--out", help="folder for topology.json, edges.csv, routing.json, strategy.json"),
    seed: Optional[int] = typer.Option(None, "--seed", help="override search.seed"),
    force: bool = typer.Option(False, "--force", help="replace an earlier result folder at --out"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
):
    """Co-optimize a direct-connect topology, its routing and the parallelization for one job; write them."""
    from ..optimize.job import load_job, optimize_job, write_job
    from ..outputs import check_output_dir, fresh_dir

    cfg = load_job(config)
    check_output_dir(out, "--out", force, inputs=[config])  # before the search, not after
    if seed is not None:
        if not 0 <= seed < 2**63:
            raise ConfigError("--seed", seed, "accepted: an integer from 0 to 2**63 - 1")
        cfg = cfg.model_copy(update={"search": cfg.search.model_copy(update={"seed": int(seed)})})
    with progress_bar("topology optimize", quiet) as progress:
        res = optimize_job(cfg, progress)
    with fresh_dir(out, "--out", force, inputs=[config]) as tmp:
        written = write_job(res, tmp)
    files = [Path(out) / f.name for f in written]
    con = _out()
    s = res.search.found.summary()
    con.print(f"# {cfg.name}: {cfg.servers} servers, d={cfg.degree} x {format_bandwidth(cfg.link_bandwidth)}, "
              f"{cfg.workload.model}", highlight=False, markup=False)
    con.print(f"iteration time {format_time(res.iteration)} (training engine, {cfg.network_model}); search estimate "
              f"{format_time(res.search.estimate)}", highlight=False)
    con.print(f"rings: jumps {s['jumps']} ({s['d_ar']} interfaces), MP matchings: {s['d_mp']}; diameter "
              f"{s['diameter']:g}, mean hops {s['mean_hops']:.2f}", highlight=False)
    degrees = {}
    for k in res.search.strategy.degrees:
        degrees[k] = degrees.get(k, 0) + 1
    con.print("strategy: op groups per degree " + ", ".join(f"{k}: {v}" for k, v in sorted(degrees.items(), reverse=True)),
              highlight=False)
    for f in files:
        con.print(f"wrote {f}", highlight=False)
