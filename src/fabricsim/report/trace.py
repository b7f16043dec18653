"""Chrome / Perfetto trace-event JSON of a training simulation.

Layout (the format of docs/specs/formats.md (c)): one process (`pid`) per NPU, named
"NPU r (stage s)"; threads (`tid`) are tracks: "compute", then one per communication kind, in
the order of `CATEGORIES`: collectives and io tasks of a category ("MP", "DP", ...), point-to-point
transfers it sends ("PP send") and receives ("PP recv"). Perfetto draws the complete events of
one track as a stack, so on one (pid, tid) any two events are disjoint or nested; where events
of one kind overlap in time (a pipeline stage sending one microbatch's activations while the
previous ones are still in flight, two collectives on per-category streams), the later ones go
to extra lanes "MP 2", "PP send 2", ... (first free lane, in order of start). Track ids are the
same on every NPU; `thread_name` metadata names the tracks an NPU uses.

Every compute task and every communication piece is a complete event (`ph: "X"`); `ts` and
`dur` are microseconds on a whole-nanosecond grid (start and end rounded to the ns, so an
event that ends when the next starts touches it exactly, as the trace processor's ns
timestamps see it); `args` hold FLOPs, bytes, group, task id and (compute) the iteration,
from 1. A p2p transfer shows on the sender's and the receiver's tracks, joined by a flow arrow
(`s`/`f` events with the task id).

`write_trace` writes a path ending in `.gz` gzip-compressed (no file name, mtime 0: the same run
gives the same bytes).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..vocab import COLLECTIVES
from ..engine.result import TrainResult
from ..errors import ConfigError
from ..workload.graph import CATEGORIES, COLLECTIVE, COMPUTE, IO, IO_LOAD, PHASES

DEFAULT_TRACE_NPUS = 64
TRACE_FORMATS = ("json", "json.gz")
# track kinds in display order: compute, then per category its collectives, sends and receives
TRACK_KINDS = ("compute",) + tuple(k for c in CATEGORIES for k in (c, f"{c} send", f"{c} recv"))


def trace_file_name(fmt: str, field: str = "output.trace_format") -> str:
    """The trace's file name for a format: `trace.json` or `trace.json.gz`.

    Parameters
    ----------
    fmt : str
        One of `TRACE_FORMATS`.
    field : str
        The field named by the error.

    Returns
    -------
    str
        The file name; ConfigError naming `field` for any other format.
    """
    if fmt not in TRACE_FORMATS:
        raise ConfigError(field, fmt, "accepted: " + ", ".join(TRACE_FORMATS))
    return f"trace.{fmt}"


def _lanes(t0: np.ndarray, t1: np.ndarray) -> np.ndarray:
    """First-fit lanes for intervals [t0, t1) (integers): each in the first lane free at its start,
    taken in order of start; intervals of one lane are disjoint."""
    lane = np.zeros(len(t0), dtype=np.int64)
    ends: list[int] = []
    for i in np.lexsort((-t1, t0)).tolist():
        a = t0[i]
        for k, e in enumerate(ends):
            if e <= a:
                break
        else:
            k = len(ends)
            ends.append(0)
        ends[k] = t1[i]
        lane[i] = k
    return lane


def trace_events(res: TrainResult, npus: Sequence[int] | None = None) -> dict:
    """The Perfetto trace of a training run as a JSON-ready dict (module doc for the layout).

    Parameters
    ----------
    res : TrainResult
        The run.
    npus : sequence of int, optional
        NPUs to include (default: the first `DEFAULT_TRACE_NPUS`).

    Returns
    -------
    dict
        {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}; event times in us.
    """
    g = res.graph
    real, keep = _trace_npus(g, npus)
    # every X event: (pid, kind, start ns, end ns) and its dict, in a fixed order
    rows, ev_x = _compute_events(res, keep)
    comm_rows, comm_ev, flows = _comm_events(res, keep, len(ev_x))
    rows += comm_rows
    ev_x += comm_ev
    tid, names = _assign_tracks(np.array(rows, dtype=np.int64).reshape(-1, 4))
    ev = _metadata_events(g, keep, names)
    for i, e in enumerate(ev_x):
        a, b = int(rows[i][2]), int(rows[i][3])
        e["tid"] = int(tid[i])
        e["ts"], e["dur"] = a / 1000, (b - a) / 1000  # ns -> us
        ev.append(e)
    ev += _flow_events(g, flows, ev_x)
    if real is not None:
        ev = _unfold(ev, g, real)
    head = res.headline()
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"generator": "fabricsim", "model": str(g.meta.get("model", "")),
                          "strategy": str(g.meta.get("strategy", "")), "iteration_time_s": head.time_s,
                          "iteration_time_basis": head.label, "total_s": res.makespan,
                          "npus_in_trace": int(keep.sum()), "npus": g.real_npus}}


def _ns(t: float) -> int:
    """A time in s as whole ns (rounded)."""
    return int(round(t * 1e9))


def _trace_npus(g, npus: Sequence[int] | None) -> tuple[list[int] | None, np.ndarray]:
    """The real NPUs to show (None: the run is not folded) and the mask of the graph's NPUs traced."""
    real = None
    if g.fold is not None:  # real NPUs -> the folded NPU that stands for each (engine.fold)
        real = list(range(min(g.real_npus, DEFAULT_TRACE_NPUS))) if npus is None else sorted(set(int(r) for r in npus))
        local = g.fold_index()[0]
        npus = sorted(set(local[np.asarray(real, dtype=np.int64)].tolist()))
    elif npus is None:
        npus = range(min(g.n_npus, DEFAULT_TRACE_NPUS))
    keep = np.zeros(g.n_npus, dtype=bool)
    keep[np.asarray(list(npus), dtype=np.int64)] = True
    return real, keep


def _compute_events(res: TrainResult, keep: np.ndarray) -> tuple[list[tuple[int, int, int, int]], list[dict]]:
    """The kept NPUs' compute tasks: rows (pid, kind, start ns, end ns) and their X events."""
    g = res.graph
    rows: list[tuple[int, int, int, int]] = []
    ev_x: list[dict] = []
    comp = np.flatnonzero((g.kind == COMPUTE) & keep[np.maximum(g.npu, 0)])
    for t in comp.tolist():
        a, b = _ns(res.start[t]), _ns(res.end[t])
        rows.append((int(g.npu[t]), 0, a, b))
        ev_x.append({"name": g.name(t), "cat": "compute," + PHASES[g.phase[t]], "ph": "X", "pid": int(g.npu[t]),
                     "args": {"task": t, "flops": float(g.flops[t]), "memory_bytes": float(g.mem_bytes[t]),
                              "iteration": int(g.iteration[t]) + 1}})
    return rows, ev_x


def _comm_events(res: TrainResult, keep: np.ndarray, first: int) -> tuple[list, list[dict], list[tuple[int, int, int]]]:
    """The kept NPUs' communication pieces: rows, X events, p2p arrows (task, sender's, receiver's event)."""
    g = res.graph
    rows: list[tuple[int, int, int, int]] = []
    ev_x: list[dict] = []
    flows: list[tuple[int, int, int]] = []
    for t, t0, t1 in zip(res.piece_task.tolist(), res.piece_start.tolist(), res.piece_end.tolist()):
        cat = CATEGORIES[g.category[t]]
        a, b = _ns(t0), _ns(t1)
        what, args = _comm_args(g, t)
        if what == "p2p":
            sides = [(int(g.npu[t]), TRACK_KINDS.index(f"{cat} send")), (int(g.peer[t]), TRACK_KINDS.index(f"{cat} recv"))]
        else:
            sides = [(int(p), TRACK_KINDS.index(cat)) for p in g.members(t)]
        idx = []
        for p, kind in sides:
            idx.append(first + len(ev_x) if keep[p] else -1)
            if keep[p]:
                rows.append((p, kind, a, b))
                ev_x.append({"name": g.name(t), "cat": f"comm,{cat},{what}", "ph": "X", "pid": p, "args": args})
        if what == "p2p" and min(idx) >= 0:  # an arrow from sender to receiver
            flows.append((t, idx[0], idx[1]))
    return rows, ev_x, flows


def _comm_args(g, t: int) -> tuple[str, dict]:
    """What communication task `t` is (a collective, `io load`/`io store` or `p2p`) and its events' args."""
    if g.kind[t] == COLLECTIVE:
        what = COLLECTIVES[g.coll[t]]
        args = {"task": t, "collective": what, "bytes": float(g.size[t]), "group_size": len(g.price_group(g.group[t]))}
    elif g.kind[t] == IO:
        what = "io load" if g.peer[t] == IO_LOAD else "io store"
        args = {"task": t, "io": what, "bytes": float(g.size[t]), "shards": int(g.coll[t]),
                "npus": len(g.groups[g.group[t]])}
    else:
        what = "p2p"
        args = {"task": t, "bytes": float(g.size[t]), "src": int(g.npu[t]), "dst": int(g.peer[t])}
    return what, args


def _metadata_events(g, keep: np.ndarray, names: dict[int, list[tuple[int, str]]]) -> list[dict]:
    """The `M` events naming and ordering each kept NPU's process and the tracks it uses."""
    ev: list[dict] = []
    for p in np.flatnonzero(keep).tolist():
        stage = int(g.stage[p]) if g.stage is not None else 0
        ev.append({"name": "process_name", "ph": "M", "pid": p, "tid": 0, "args": {"name": f"NPU {p} (stage {stage})"}})
        ev.append({"name": "process_sort_index", "ph": "M", "pid": p, "tid": 0, "args": {"sort_index": p}})
        for k, label in names.get(p, [(0, "compute")]):
            ev.append({"name": "thread_name", "ph": "M", "pid": p, "tid": k, "args": {"name": label}})
            ev.append({"name": "thread_sort_index", "ph": "M", "pid": p, "tid": k, "args": {"sort_index": k}})
    return ev


def _flow_events(g, flows: list[tuple[int, int, int]], ev_x: list[dict]) -> list[dict]:
    """The `s`/`f` events of the p2p arrows: one per transfer, from its first piece."""
    ev: list[dict] = []
    seen = set()
    for t, i, j in flows:
        if t in seen:  # one arrow per transfer, from its first piece
            continue
        seen.add(t)
        ev.append({"name": g.name(t), "cat": "p2p", "ph": "s", "id": t, "pid": ev_x[i]["pid"], "tid": ev_x[i]["tid"],
                   "ts": ev_x[i]["ts"]})
        ev.append({"name": g.name(t), "cat": "p2p", "ph": "f", "bp": "e", "id": t, "pid": ev_x[j]["pid"],
                   "tid": ev_x[j]["tid"], "ts": ev_x[j]["ts"]})
    return ev


def _unfold(ev: list[dict], g, real: list[int]) -> list[dict]:
    """The events of a folded run (on one NPU per class) as the real NPUs `real` saw them: each
    ran its class's events at the same times (`engine.fold`); transfers go to the peer in the same
    column of `g.fold`, and arrows get one id per copy."""
    local, col = g.fold_index()
    by_pid: dict[int, list[int]] = {}
    for r in real:
        by_pid.setdefault(int(local[r]), []).append(r)
    meta, rest = [], []
    for e in ev:
        for r in by_pid.get(e["pid"], ()):
            j = int(col[r])
            e2 = dict(e, pid=r)
            if e["ph"] == "M" and e["name"] == "process_name":
                e2["args"] = {"name": f"NPU {r} (stage {int(g.stage[e['pid']])})"}
            elif e["ph"] == "M" and e["name"] == "process_sort_index":
                e2["args"] = {"sort_index": r}
            elif e["ph"] in "sf":
                e2["id"] = e["id"] * g.copies + j
            elif "src" in e.get("args", {}):
                e2["args"] = dict(e["args"], src=int(g.fold[e["args"]["src"], j]), dst=int(g.fold[e["args"]["dst"], j]))
            (meta if e["ph"] == "M" else rest).append(e2)
    meta.sort(key=lambda e: e["pid"])
    return meta + rest


def _assign_tracks(rows: np.ndarray) -> tuple[np.ndarray, dict[int, list[tuple[int, str]]]]:
    """Track ids of X events given as rows (pid, kind, start ns, end ns): lanes per (pid, kind)
    (`_lanes`), a kind's lanes on consecutive ids, the same ids on every pid.

    Returns
    -------
    tid : int array
        Track of each row.
    names : dict
        pid -> [(tid, track name)] of the tracks it uses, compute always first.
    """
    lane = np.zeros(len(rows), dtype=np.int64)
    if len(rows):
        order = np.lexsort((rows[:, 1], rows[:, 0]))
        key = rows[order, 0] * len(TRACK_KINDS) + rows[order, 1]
        cuts = np.flatnonzero(np.diff(key)) + 1
        for grp in np.split(order, cuts):
            lane[grp] = _lanes(rows[grp, 2], rows[grp, 3])
    n_lanes = np.ones(len(TRACK_KINDS), dtype=np.int64)
    if len(rows):
        np.maximum.at(n_lanes, rows[:, 1], lane + 1)
    base = np.concatenate([[0], np.cumsum(n_lanes)[:-1]])
    tid = base[rows[:, 1]] + lane if len(rows) else lane
    named: dict[int, dict[int, str]] = {}
    for p, k, ln in sorted(set(zip(rows[:, 0].tolist(), rows[:, 1].tolist(), lane.tolist()))):
        named.setdefault(p, {0: TRACK_KINDS[0]})[int(base[k] + ln)] = TRACK_KINDS[k] + (f" {ln + 1}" if ln else "")
    names = {p: sorted(d.items()) for p, d in named.items()}
    return tid, names


def write_trace(res: TrainResult, path: str | Path, npus: Sequence[int] | None = None) -> Path:
    """Write the Perfetto trace of `res` (`trace_events`) to `path`, creating its folder.

    Parameters
    ----------
    res : TrainResult
        The run.
    path : str or Path
        The file to write: JSON, gzip-compressed when it ends in `.gz` (mtime 0, no name:
        deterministic bytes).
    npus : sequence of int, optional
        NPUs to include (default: the first `DEFAULT_TRACE_NPUS`).

    Returns
    -------
    Path
        `path`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(trace_events(res, npus), separators=(",", ":")).encode()
    with open(path, "wb") as fh:
        if path.suffix == ".gz":
            with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0, compresslevel=6) as gz:
                gz.write(data)
        else:
            fh.write(data)
    return path
