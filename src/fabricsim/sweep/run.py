"""Running a sweep: evaluate points on a process pool or a Dask cluster, append rows to Parquet.

- `evaluate_point(pt)` is pure and picklable (a module-level function of plain data), so every
  executor gives the same row for the same point (all but `wall_s`).
- Results are a Parquet dataset: a directory of part files, each written whole (to a temporary
  name, then renamed), so an interrupted sweep leaves only complete parts. On start the hashes
  already in the directory are skipped: finished points are never recomputed or written twice.
- Executors: `local` (a process pool of `workers`), `dask` (`distributed.Client(address)`, or a
  `LocalCluster` of N single-threaded worker processes for `local:N`). For Slurm or PBS start a
  dask-jobqueue cluster and pass its scheduler address (docs/sweep.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import ConfigError
from ..vocab import CATEGORIES
from .spec import SweepPoint

METRICS_TRAIN = ("compute", *CATEGORIES, "idle")


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("fabricsim")
    except Exception:  # pragma: no cover - not installed as a distribution
        return "unknown"


def _metrics_collective(c: dict) -> dict:
    from ..collective_job import run_collective

    opts = [f"{k}={v}" for k, v in (c.get("options") or {}).items()]
    group = None if c.get("group") is None else str(c["group"])
    _, rows = run_collective(c["topology"], c["bandwidth"], c["latency"], c["collective"], c["algorithm"],
                             str(c["size"]), c["model"], group, int(c.get("root") or 0), opts, check=False)
    r = rows[0]
    return {"size_bytes": float(r["size_bytes"]), "time_s": r["time_s"], "algbw_Bps": r["algbw_GBps"] * 1e9,
            "busbw_Bps": r["busbw_GBps"] * 1e9}


def _metrics_train(c: dict) -> dict:
    from ..config import validate
    from ..train import TrainConfig, run_train

    cfg = validate(TrainConfig, c, "train config")
    run = run_train(cfg)
    res = run.result
    its = max(cfg.workload.iterations, 1)
    b = res.mean_breakdown()
    out = {"iteration_s": float(res.iteration_time)}
    for k in METRICS_TRAIN:
        key = k if k in ("compute", "idle") else f"exposed_{k}"
        out[f"{key}_s"] = float(b.get(k, 0.0)) / its
    s = res.summary()
    out.update(mfu=s.get("mfu"), tokens_per_s=s.get("tokens_per_s"),
               peak_memory_GiB=max(m.total for m in run.memory) / 2**30 if run.memory else None)
    return out


def evaluate_point(pt: SweepPoint) -> dict:
    """Run one point (pure: the same point gives the same row but for `wall_s`).

    Parameters
    ----------
    pt : SweepPoint

    Returns
    -------
    dict
        `point`, `hash`, `kind`, `config` (JSON), the axis values (as text), the metrics
        (collective: `size_bytes`, `time_s`, `algbw_Bps`, `busbw_Bps`; train: `iteration_s`, per
        iteration `compute_s`, `exposed_MP_s` ... `idle_s`, `mfu`, `tokens_per_s` and
        `peak_memory_GiB` (the memory model's peak per GPU; None without one); reproduction: the numbers of the
        point's row, `sweep.study.metrics`), `wall_s`, `version` and `error`
        (None, or the one-line message of what it raised).
    """
    t0 = time.perf_counter()
    row = {"point": pt.index, "hash": pt.hash, "kind": pt.kind,
           "config": json.dumps(pt.config, sort_keys=True, default=str)}
    row.update({k: str(v) for k, v in pt.axes.items()})
    try:
        if pt.kind == "collective":
            row.update(_metrics_collective(pt.config))
        elif pt.kind == "reproduction":
            from .study import metrics

            row.update(metrics(pt.config))
        else:
            row.update(_metrics_train(pt.config))
        row["error"] = None
    except Exception as e:  # recorded, the sweep goes on
        row["error"] = f"{type(e).__name__}: {e}".splitlines()[0]
    row["wall_s"] = time.perf_counter() - t0
    row["version"] = _version()
    return row


# ---------------------------------------------------------------- the results directory


def done_hashes(out: str | Path) -> set[str]:
    """Hashes of the points already in a results directory.

    Parameters
    ----------
    out : str or Path
        The Parquet dataset directory (may not exist).

    Returns
    -------
    set of str
    """
    import pyarrow.parquet as pq

    got: set[str] = set()
    for part in _parts(Path(out)):
        got.update(pq.read_table(part, columns=["hash"]).column("hash").to_pylist())
    return got


def _parts(out: Path) -> list[Path]:
    """The Parquet part files of a results directory, in name order (none if it does not exist;
    the writer's temporaries end in .tmp and are never read)."""
    return sorted(out.glob("*.parquet")) if out.is_dir() else []


def read_results(out: str | Path):
    """The results as one table, sorted by point.

    Parameters
    ----------
    out : str or Path
        A results directory (or one Parquet file).

    Returns
    -------
    pyarrow.Table
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    if out.is_dir():  # part by part: parts of a sweep may lack a column another has, or type it null
        parts = [pq.read_table(p) for p in _parts(out)]
        table = pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({})
    else:
        table = pq.read_table(str(out))
    return table.sort_by("point") if "point" in table.column_names else table


class PartWriter:
    """Buffers rows and writes them as whole part files (temporary name, then rename).

    Parameters
    ----------
    out : Path
        The results directory (created).
    every_s : float
        Write the buffer when it is this old, s (and on `flush`).
    """

    def __init__(self, out: Path, every_s: float = 1.0):
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.every_s = every_s
        self.rows: list[dict] = []
        self.since = time.monotonic()
        self.n_parts = len(list(self.out.glob("part-*.parquet")))

    def add(self, row: dict) -> None:
        """Buffer one row; write the buffer when it is `every_s` old."""
        self.rows.append(row)
        if time.monotonic() - self.since >= self.every_s:
            self.flush()

    def flush(self) -> None:
        """Write the buffered rows as one part file (nothing when empty)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.since = time.monotonic()
        if not self.rows:
            return
        names = list(dict.fromkeys(k for r in self.rows for k in r))
        table = pa.Table.from_pylist([{k: r.get(k) for k in names} for r in self.rows])
        for i, f in enumerate(table.schema):  # a column of no values: its type, not null
            if pa.types.is_null(f.type):
                table = table.set_column(i, f.name, table.column(i).cast(pa.string() if f.name == "error" else pa.float64()))
        name = f"part-{time.time_ns()}-{os.getpid()}-{self.n_parts:05d}.parquet"
        tmp = self.out / f".{name}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, self.out / name)  # whole or absent
        self.n_parts += 1
        self.rows = []


# ---------------------------------------------------------------- executors


def _ignore_interrupts() -> None:
    """A pool worker's initializer: Ctrl-C (SIGINT to the process group) is the parent's to handle.

    A worker interrupted inside `Queue.put` can leave the result queue's lock taken for good (the
    interrupt lands after the semaphore is acquired, before the `with` owns it); every later
    result then blocks and the sweep never exits. The parent stops the workers instead."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _local(points: list[SweepPoint], workers: int) -> Iterable[dict]:
    import multiprocessing

    if workers <= 1:
        yield from map(evaluate_point, points)
        return
    # Pool, not ProcessPoolExecutor: an interrupted sweep must stop its workers mid-point, and
    # only Pool can (`terminate`, which leaving the `with` calls)
    with multiprocessing.Pool(workers, initializer=_ignore_interrupts) as pool:
        yield from pool.imap_unordered(evaluate_point, points)


@contextlib.contextmanager
def dask_client(address: str):
    """A Dask client for `address`: a scheduler's (tcp://host:8786) or `local:N` (a LocalCluster of N
    single-threaded worker processes, closed on exit).

    Parameters
    ----------
    address : str

    Yields
    ------
    distributed.Client
        ConfigError naming `--dask` for a malformed `local:N`.
    """
    import logging

    from distributed import Client, LocalCluster

    cluster = None
    if address.startswith("local:"):
        n = address.split(":", 1)[1]
        if not n.isdigit() or int(n) < 1:
            raise ConfigError("--dask", address, "accepted: a scheduler address (tcp://host:8786) or local:N, N >= 1")
        # our own cluster: its workers' shutdown chatter (heartbeats to a closing scheduler) is not the
        # user's business; task failures still reach the client as exceptions
        cluster = LocalCluster(n_workers=int(n), threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.CRITICAL)
        client = Client(cluster)
    else:
        client = Client(address)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


@contextlib.contextmanager
def dask_map(address: str):
    """A `map(fn, items)` that evaluates on Dask, in order (what the reproductions' points take).

    Parameters
    ----------
    address : str
        As `dask_client`.

    Yields
    ------
    callable
        `map_fn(fn, items)`: an iterator of fn(item) in the items' order.
    """
    with dask_client(address) as client:
        def map_fn(fn, items):
            for f in client.map(fn, list(items), pure=False):
                yield f.result()

        yield map_fn


def _dask(points: list[SweepPoint], address: str) -> Iterable[dict]:
    from distributed import as_completed

    with dask_client(address) as client:
        futures = client.map(evaluate_point, points, pure=False)
        for f in as_completed(futures):
            yield f.result()


def run_sweep(points: list[SweepPoint], out: str | Path, *, workers: int = 0, dask: str | None = None,
              progress: Callable[[int, int, str], None] | None = None, flush_s: float = 1.0) -> dict:
    """Run the points not yet in `out`, appending their rows as they finish.

    Parameters
    ----------
    points : list of SweepPoint
        Validated points (`spec.load_sweep`).
    out : str or Path
        The results directory.
    workers : int
        Local worker processes (0: the CPU count; 1: in this process).
    dask : str, optional
        Run on Dask instead: a scheduler address or `local:N`.
    progress : callable, optional
        `progress(done, total, label)` as points finish (label counts the failures).
    flush_s : float
        How often rows are written, s.

    Returns
    -------
    dict
        `total`, `skipped` (already done), `ran`, `failed`.
    """
    done = done_hashes(out)
    todo = [p for p in points if p.hash not in done]
    writer = PartWriter(Path(out), flush_s)
    rows = _dask(todo, dask) if dask else _local(todo, workers or os.cpu_count() or 1)
    failed = ran = 0
    try:
        for row in rows:
            ran += 1
            failed += row["error"] is not None
            writer.add(row)
            if progress is not None:
                progress(ran, len(todo), f"{failed} failed" if failed else "")
    finally:
        writer.flush()
    return {"total": len(points), "skipped": len(points) - len(todo), "ran": ran, "failed": failed}
