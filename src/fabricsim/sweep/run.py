"""Running a sweep: evaluate points on a process pool or a Dask cluster, append rows to Parquet.

- `evaluate_point(pt)` is pure and picklable (a module-level function of plain data), so every
  executor gives the same row for the same point (all but `wall_s`).
- Results are a Parquet dataset: a directory of part files, each written whole (to a temporary
  name, then renamed), so an interrupted sweep leaves only complete parts; the folder is locked,
  named by a manifest and checked part by part (`sweep.store`). On start the hashes already in the
  directory are skipped: finished points are never recomputed or written twice.
- Executors: `local` (a process pool of `workers`), `dask` (`distributed.Client(address)`, or a
  `LocalCluster` of N single-threaded worker processes for `local:N`; an address is checked before
  anything connects, and a scheduler that does not answer within `DASK_CONNECT_S` is one line naming
  `--dask`). For Slurm or PBS start a dask-jobqueue cluster and pass its scheduler address (docs/sweep.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..errors import ConfigError
from ..vocab import CATEGORIES
from . import store
from .spec import SweepPoint, collective_args

METRICS_TRAIN = ("compute", *CATEGORIES, "idle")
DASK_CONNECT_S = 10.0  # how long a scheduler address may take to answer
_DASK_ADDRESS = re.compile(r"(?:(?:tcp|tls|ws|wss|ucx)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})/?")
DASK_ACCEPTED = ("accepted: local:N (N from 1 to {n} workers: 4 per CPU of this machine) or a scheduler address "
                 "SCHEME://HOST:PORT with PORT 1-65535, e.g. tcp://host:8786")
WORKERS_PER_CPU = 4  # local worker processes beyond this only queue for the CPUs and hold memory


def max_local_workers() -> int:
    """The most local worker processes (`--workers`, `local:N`) this machine is given: 4 per CPU.

    >>> max_local_workers() == 4 * (os.cpu_count() or 1)
    True
    """
    return WORKERS_PER_CPU * (os.cpu_count() or 1)


def check_workers(workers: int, field: str = "--workers") -> int:
    """Check a local worker count: 0 (one per CPU) up to `max_local_workers()`.

    Returns
    -------
    int
        `workers`; a one-line ConfigError naming `field` otherwise.
    """
    top = max_local_workers()
    if not 0 <= workers <= top:
        raise ConfigError(field, workers, f"accepted: an integer from 0 (one per CPU) to {top} "
                                          f"({WORKERS_PER_CPU} per CPU of this machine)")
    return workers


def _metrics_collective(c: dict) -> dict:
    from ..collective_job import run_collective

    a = collective_args(c)  # the same arguments validation checked
    _, rows = run_collective(a["topology"], a["bandwidth"], a["latency"], a["collective"], a["algorithm"],
                             a["size"], a["model"], a["group"], a["root"], a["options"], check=False)
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
    row["version"] = store.fabricsim_version()
    return row


# ---------------------------------------------------------------- the results directory


def done_hashes(out: str | Path) -> set[str]:
    """Hashes of the points already in a results directory (in parts that pass their check).

    Parameters
    ----------
    out : str or Path
        The Parquet dataset directory (may not exist).

    Returns
    -------
    set of str
    """
    return set(store.scan(out, columns=["hash"]).rows)


def read_results(out: str | Path, notes: list | None = None):
    """The results as one table, sorted by point.

    Parameters
    ----------
    out : str or Path
        A results directory (or one Parquet file).
    notes : list, optional
        Receives one-line notes on what a directory held but the table leaves out: damaged parts
        (failing their checksum, footer or row count), files that are not parts, rows of a point
        an earlier part already holds.

    Returns
    -------
    pyarrow.Table
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    if out.is_dir():  # part by part: parts of a sweep may lack a column another has, or type it null
        parts: list = []
        s = store.scan(out, columns=None, tables=parts)
        if notes is not None:
            notes += s.notes()
        table = pa.concat_tables(parts, promote_options="permissive") if parts else pa.table({})
    else:
        table = pq.read_table(str(out))
    return table.sort_by("point") if "point" in table.column_names else table


class PartWriter:
    """Buffers rows and writes them as whole part files (`store.write_part`: temporary name, fsync,
    rename, the name carrying the rows and a checksum).

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

        self.since = time.monotonic()
        if not self.rows:
            return
        # out of the buffer first: an interrupt after the rename must not write these rows again
        # (at the `finally` flush); one before it loses them, and the next run computes them
        rows, self.rows = self.rows, []
        names = list(dict.fromkeys(k for r in rows for k in r))
        table = pa.Table.from_pylist([{k: r.get(k) for k in names} for r in rows])
        for i, f in enumerate(table.schema):  # a column of no values: its type, not null
            if pa.types.is_null(f.type):
                table = table.set_column(i, f.name, table.column(i).cast(pa.string() if f.name == "error" else pa.float64()))
        self.n_parts += 1
        store.write_part(self.out, table, self.n_parts - 1)


# ---------------------------------------------------------------- executors


def _ignore_interrupts() -> None:
    """A pool worker's initializer: Ctrl-C (SIGINT to the process group) is the parent's to handle.

    A worker interrupted inside `Queue.put` can leave the result queue's lock taken for good (the
    interrupt lands after the semaphore is acquired, before the `with` owns it); every later
    result then blocks and the sweep never exits. The parent stops the workers instead."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    store.release_inherited_lock()  # the results folder's lock is the parent's alone


def _local(points: list[SweepPoint], workers: int) -> Iterable[dict]:
    import multiprocessing

    if workers <= 1 or len(points) <= 1:
        yield from map(evaluate_point, points)
        return
    # Pool, not ProcessPoolExecutor: an interrupted sweep must stop its workers mid-point, and
    # only Pool can (`terminate`, which leaving the `with` calls)
    with multiprocessing.Pool(workers, initializer=_ignore_interrupts) as pool:
        yield from pool.imap_unordered(evaluate_point, points)


def check_dask_address(address: str, field: str = "--dask") -> int | None:
    """Check a `--dask` value before anything connects or starts.

    Parameters
    ----------
    address : str
        `local:N`, or a scheduler's `SCHEME://HOST:PORT` (scheme tcp, tls, ws, wss or ucx; `HOST:PORT`
        means tcp).
    field : str
        The option named in errors.

    Returns
    -------
    int or None
        N for `local:N`, None for a scheduler address; a one-line ConfigError naming `field` otherwise.

    Examples
    --------
    >>> check_dask_address("local:2"), check_dask_address("tcp://10.0.0.1:8786")
    (2, None)
    """
    text = str(address).strip()
    if text.startswith("local:"):
        n = text.split(":", 1)[1]
        if not (n.isascii() and n.isdigit()) or not 1 <= int(n) <= max_local_workers():
            raise ConfigError(field, address, DASK_ACCEPTED.format(n=max_local_workers()))
        return int(n)
    m = _DASK_ADDRESS.fullmatch(text)
    if m is None or not 1 <= int(m.group(2)) <= 65535:
        raise ConfigError(field, address, DASK_ACCEPTED.format(n=max_local_workers()))
    return None


@contextlib.contextmanager
def dask_client(address: str, field: str = "--dask"):
    """A Dask client for `address`: a scheduler's (tcp://host:8786) or `local:N` (a LocalCluster of N
    single-threaded worker processes, closed on exit).

    Parameters
    ----------
    address : str
        As `check_dask_address`.
    field : str
        The option named in errors.

    Yields
    ------
    distributed.Client
        ConfigError naming `field` for a malformed address, or for a scheduler that does not
        answer within `DASK_CONNECT_S` seconds.
    """
    import logging

    n = check_dask_address(address, field)
    from distributed import Client, LocalCluster

    cluster = None
    if n is not None:
        # our own cluster: its workers' shutdown chatter (heartbeats to a closing scheduler) is not the
        # user's business; task failures still reach the client as exceptions
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=logging.CRITICAL)
        client = Client(cluster)
    else:
        client = _connect(Client, str(address).strip(), field)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _connect(client_type, address: str, field: str):
    """A client of the scheduler at `address`, or one line naming `field` when none answers in time."""
    import logging

    quiet = logging.getLogger("distributed")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # its retry warnings: the one line below says it all
    try:
        return client_type(address, timeout=f"{DASK_CONNECT_S}s")
    except (OSError, TimeoutError) as e:
        why = " ".join(str(e).split())[:160] or type(e).__name__
        raise ConfigError(field, address, f"no Dask scheduler answered within {DASK_CONNECT_S:g} s ({why}); accepted: "
                                          "the address of a running scheduler (tcp://host:8786) or local:N") from None
    finally:
        quiet.setLevel(level)


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


def _dask(points: list[SweepPoint], client) -> Iterable[dict]:
    from distributed import as_completed

    futures = client.map(evaluate_point, points, pure=False)
    for f in as_completed(futures):
        yield f.result()


def run_sweep(points: list[SweepPoint], out: str | Path, *, workers: int = 0, dask: str | None = None,
              progress: Callable[[int, int, str], None] | None = None, flush_s: float = 1.0,
              sweep: dict | None = None, force: bool = False, field: str = "--out") -> dict:
    """Run the points not yet in `out`, appending their rows as they finish.

    Parameters
    ----------
    points : list of SweepPoint
        Validated points (`spec.load_sweep`).
    out : str or Path
        The results directory: created, locked for this run (a second writer is refused), its parts
        checked (damaged ones moved to `_damaged/`, their points run again; `sweep.store`).
    workers : int
        Local worker processes (0: the CPU count; 1: in this process).
    dask : str, optional
        Run on Dask instead: a scheduler address or `local:N` (connected before the folder is touched).
    progress : callable, optional
        `progress(done, total, label)` as points finish (label counts the failures).
    flush_s : float
        How often rows are written, s.
    sweep : dict, optional
        `name` and `kind` of the sweep: the folder's manifest names it, and a folder of another
        sweep is refused unless `force`. None: no manifest (a caller sharing the folder).
    force : bool
        Replace the results of another sweep in `out`.
    field : str
        The option named in errors about `out`.

    Returns
    -------
    dict
        `total`, `skipped` (already done), `ran`, `failed` (of those run), `failed_before` (of those
        already done), `first_error` (a failure's message, or None), `notes` (one-line notes on
        the folder: parts moved aside, files ignored).
    """
    hashes = {p.hash for p in points}
    ident = None if sweep is None else {"name": sweep["name"], "kind": sweep["kind"], "points": len(hashes),
                                        "fingerprint": store.fingerprint(sweep["kind"], hashes)}
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(dask_client(dask)) if dask else None
        s = stack.enter_context(store.open_results(out, ident, hashes, force, field))
        todo = [p for p in points if p.hash not in s.rows]
        before = [s.rows[p.hash] for p in points if p.hash in s.rows and s.rows[p.hash]]
        writer = PartWriter(Path(out), flush_s)
        rows = _dask(todo, client) if client is not None else _local(todo, workers or os.cpu_count() or 1)
        failed = ran = 0
        first = before[0] if before else None
        try:
            for row in rows:
                ran += 1
                failed += row["error"] is not None
                first = first or row["error"]
                writer.add(row)
                if progress is not None:
                    progress(ran, len(todo), f"{failed} failed" if failed else "")
        finally:
            writer.flush()
    return {"total": len(points), "skipped": len(points) - len(todo), "ran": ran, "failed": failed,
            "failed_before": len(before), "first_error": first, "notes": s.notes("moved")}
