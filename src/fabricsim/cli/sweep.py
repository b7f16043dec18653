"""`fabricsim sweep SWEEP.yaml`: a design-space sweep on a process pool or a Dask cluster."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from .app import app, out_console as _out
from .progress import QUIET_HELP, progress_bar


@app.command()
def sweep(
    file: str = typer.Argument(..., help="sweep YAML: name, kind (collective | train), base, axes (see docs/sweep.md)"),
    out: Optional[str] = typer.Option(None, "--out", help="results directory of Parquet parts (default out/sweeps/NAME.parquet)"),
    workers: int = typer.Option(0, "--workers", "-j", help="local worker processes (0: one per CPU)"),
    dask: Optional[str] = typer.Option(None, "--dask", help="run on Dask: a scheduler address (tcp://host:8786) or local:N"),
    dry_run: bool = typer.Option(False, "--dry-run", help="validate and count the points, run nothing"),
    flush_s: float = typer.Option(1.0, "--flush-s", help="write finished rows at least this often, s"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
):
    """Run every point of a sweep (validated first), appending rows to Parquet; resumes where it stopped."""
    from ..errors import ConfigError
    from ..sweep.run import done_hashes, run_sweep
    from ..sweep.spec import load_sweep

    if workers < 0:
        raise ConfigError("--workers", workers, "accepted: an integer >= 0 (0: one per CPU)")
    if not flush_s >= 0:
        raise ConfigError("--flush-s", flush_s, "accepted: seconds >= 0")
    spec, points = load_sweep(file)
    dest = Path(out) if out else Path("out") / "sweeps" / f"{spec.name}.parquet"
    con = _out()
    if dry_run:
        left = len(points) - len(done_hashes(dest) & {p.hash for p in points})
        con.print(f"{spec.name}: {len(points)} points ({left} to run) -> {dest}", highlight=False)
        return
    t0 = time.perf_counter()
    with progress_bar(f"sweep {spec.name}", quiet) as progress:
        got = run_sweep(points, dest, workers=workers, dask=dask, progress=progress, flush_s=flush_s)
    dt = time.perf_counter() - t0
    rate = got["ran"] / dt if dt > 0 else 0.0
    con.print(f"{spec.name}: {got['total']} points, {got['skipped']} already done, {got['ran']} ran "
              f"({got['failed']} failed) in {dt:.1f} s, {rate:.1f} points/s -> {dest}", highlight=False)
