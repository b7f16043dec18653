"""`fabricsim plan CONFIG`: the fastest parallelization that fits, searched (`fabricsim.plan`)."""

from __future__ import annotations

from typing import Optional

import typer

from .app import app, out_console as _out
from .progress import QUIET_HELP, progress_bar


@app.command()
def plan(
    file: str = typer.Argument(..., help="plan YAML: a train config without workload.parallelism, plus search: (docs/plan.md)"),
    out: Optional[str] = typer.Option(None, "--out", help="results directory (default out/plans/<config name>); a second run into it resumes"),
    top: Optional[int] = typer.Option(None, "--top", help="strategies shown (default search.top)"),
    workers: int = typer.Option(0, "--workers", "-j", help="local worker processes for the simulations (0: one per CPU)"),
    dask: Optional[str] = typer.Option(None, "--dask", help="simulate on Dask: a scheduler address (tcp://host:8786) or local:N"),
    json_out: bool = typer.Option(False, "--json", help="print JSON"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
):
    """Estimate every strategy the search allows, simulate the best, rank them; write the best as a train config."""
    import json
    from pathlib import Path

    from ..errors import ConfigError
    from ..plan.schema import load_plan_config
    from ..plan.search import run_plan
    from ..sweep.run import check_workers

    check_workers(workers)
    if top is not None and top < 1:
        raise ConfigError("--top", top, "accepted: an integer >= 1")
    pc = load_plan_config(file)
    dest = Path(out) if out else Path("out") / "plans" / _slug(pc.train.name or Path(file).stem)
    _check_dest(dest, file)
    with progress_bar("plan: simulating the best by estimate", quiet or json_out) as progress:
        res = run_plan(pc, dest, workers=workers, dask=dask, progress=progress)
    shown = top or pc.search.top
    if json_out:
        print(json.dumps({**res, "ranking": res["ranking"][:shown], "out": str(dest)}, indent=2, default=str))
        return
    _print(res, shown, dest, pc.train.name or file)


def _check_dest(dest, file: str) -> None:
    """The results directory: new, empty, or an earlier plan's (its Parquet parts and best.yaml only:
    the run resumes it); anything else is refused (`outputs.check_output_dir`)."""
    import os

    from ..outputs import check_output_dir

    if os.path.isdir(dest) and not os.path.islink(dest):
        names = os.listdir(dest)
        if names and all(n.endswith(".parquet") or n in ("best.yaml",) or n.endswith(".tmp") for n in names):
            return
    check_output_dir(dest, "--out", inputs=[file])


def _slug(name: str) -> str:
    """A folder name from a config name."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "plan"


def _print(res: dict, shown: int, dest, title: str) -> None:
    """The ranking table and the search's counts."""
    from rich.table import Table

    from ..units import format_time

    con = _out()
    p = res["pruned"]
    con.print(f"# {res['combos']} strategies; pruned: {p['invalid']} invalid, {p['constraints']} by constraints, "
              f"{p['memory']} by memory, {p['refused_by_the_workload']} refused by the workload, {p['same_program']} "
              f"the same program as another (ZeRO without replicas); {res['evaluated']} "
              f"estimated in {res['estimate_s']:.1f} s; {res['simulated']} simulated; {res['elapsed_s']:.1f} s in all",
              highlight=False)
    t = Table(box=None, header_style="bold", title=f"fabricsim plan: {title} (best {min(shown, len(res['ranking']))} of "
                                                  f"{res['simulated']} simulated, by the engine's iteration time)")
    for col in ("rank", "strategy", "iteration", "estimate", "MFU", "tokens/s", "peak GiB", "exp. MP", "exp. CP",
                "exp. EP", "exp. PP", "exp. DP"):
        t.add_column(col, justify="left" if col == "strategy" else "right")
    for i, r in enumerate(res["ranking"][:shown], 1):
        e = r["exposed_s"]
        t.add_row(str(i), r["strategy"], format_time(r["iteration_s"]),
                  f"{format_time(r['estimate_s'])} ({r['estimate_error']:+.1%})",
                  "-" if r["mfu"] is None else f"{r['mfu']:.1%}",
                  "-" if r["tokens_per_s"] is None else f"{r['tokens_per_s']:,.0f}",
                  "-" if r["peak_memory_GiB"] is None else f"{r['peak_memory_GiB']:.1f}",
                  *(format_time(e.get(k) or 0.0) for k in ("MP", "CP", "EP", "PP", "DP")))
    con.print(t)
    if res["spearman"] is not None:
        err = res["estimate_error"]
        con.print(f"# estimate against the engine over the simulated: Spearman {res['spearman']:.3f}, |error| median "
                  f"{err['median']:.1%}, max {err['max']:.1%}", highlight=False)
    if res["best"] is not None:
        con.print(f"wrote best: {dest / 'best.yaml'} ({res['best']['strategy']}); all points: {dest} (Parquet)",
                  highlight=False)
