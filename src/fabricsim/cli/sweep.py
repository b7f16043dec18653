"""`fabricsim sweep SWEEP.yaml`: a design-space sweep on a process pool or a Dask cluster."""

from __future__ import annotations

import sys
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
    force: bool = typer.Option(False, "--force", help="replace the results of another sweep in --out"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help=QUIET_HELP),
):
    """Run every point of a sweep (validated first), appending rows to Parquet; resumes where it stopped.

    Exit 0 when every point has a row without an error, 1 when some points failed (their rows hold
    the error; one line on stderr says how many), 2 for bad input (nothing runs)."""
    from ..errors import ConfigError
    from ..sweep.run import check_dask_address, check_workers, run_sweep
    from ..sweep.spec import load_sweep

    check_workers(workers)
    if not flush_s >= 0:
        raise ConfigError("--flush-s", flush_s, "accepted: seconds >= 0")
    if dask is not None:
        check_dask_address(dask)
    if out is not None:
        _check_out(Path(out))
    spec, points = load_sweep(file)
    dest = Path(out) if out else Path("out") / "sweeps" / f"{spec.name}.parquet"
    _check_out(dest)
    con = _out()
    if dry_run:
        con.print(_dry_run(spec, points, dest, force), highlight=False)
        return
    t0 = time.perf_counter()
    with progress_bar(f"sweep {spec.name}", quiet) as progress:
        got = run_sweep(points, dest, workers=workers, dask=dask, progress=progress, flush_s=flush_s,
                        sweep={"name": spec.name, "kind": spec.kind}, force=force)
    dt = time.perf_counter() - t0
    rate = got["ran"] / dt if dt > 0 else 0.0
    for line in got["notes"]:
        print(line, file=sys.stderr)
    failed = got["failed"] + got["failed_before"]
    con.print(f"{spec.name}: {got['total']} points, {got['skipped']} already done, {got['ran']} ran "
              f"({failed} failed) in {dt:.1f} s, {rate:.1f} points/s -> {dest}", highlight=False)
    if failed:
        print(f"fabricsim: error: sweep {spec.name}: {failed} of {got['total']} points failed (their rows hold the "
              f"error; first: {got['first_error']})", file=sys.stderr)
        raise typer.Exit(1)


def _check_out(dest: Path) -> None:
    """Refuse a results path that is a file, or whose nearest existing parent is not a folder this
    user can write, in one line naming --out (before any point is validated or run)."""
    import os

    from ..errors import ConfigError
    from ..sweep.store import ACCEPTED

    if dest.is_symlink() and not dest.is_dir():
        raise ConfigError("--out", str(dest), f"is a symbolic link, not a folder; {ACCEPTED}")
    if dest.exists() and not dest.is_dir():
        raise ConfigError("--out", str(dest), f"is a file, not a folder; {ACCEPTED}")
    up = dest.absolute()
    while not up.exists():
        up = up.parent
    if not up.is_dir() or not os.access(up, os.W_OK | os.X_OK):
        what = "is a file" if not up.is_dir() else "is not writable"
        raise ConfigError("--out", str(dest), f"cannot be created ({up} {what}); accepted: a folder in a place "
                                              "this user can write")


def _dry_run(spec, points, dest: Path, force: bool) -> str:
    """What a run would do, read from the folder without changing it (the folder's checks included)."""
    from ..sweep import store

    s = store.scan(dest)
    hashes = {p.hash for p in points}
    ident = {"name": spec.name, "kind": spec.kind, "points": len(hashes),
             "fingerprint": store.fingerprint(spec.kind, hashes)}
    replace = store.check_identity(dest, s, ident, hashes, force)
    for line in s.notes("dry"):
        print(line, file=sys.stderr)
    left = len(points) if replace else sum(p.hash not in s.rows for p in points)
    return f"{spec.name}: {len(points)} points ({left} to run) -> {dest}"
