"""Chrome / Perfetto trace-event JSON of a training simulation.

Layout (the format of ../shared/specs/formats.md (c)): one process (`pid`) per NPU, named
"NPU r (stage s)"; thread (`tid`) 0 is the compute stream, threads 1.. are the communication
categories (one row each: MP, PP, DP, IO, other), so overlap of compute and communication is
visible at a glance. Every compute task and every communication piece is a complete event
(`ph: "X"`) with `ts`/`dur` in microseconds and `args` holding FLOPs, bytes, group and task id.
A p2p transfer shows on the sender's and the receiver's rows, joined by a flow arrow (`s`/`f`
events with the task id).
Rows are labelled with `M` metadata events (process_name, thread_name and their sort indices).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..collectives.schedule import COLLECTIVES
from ..engine.result import TrainResult
from ..workload.graph import CATEGORIES, COLLECTIVE, COMPUTE, IO, IO_LOAD, PHASES

DEFAULT_TRACE_NPUS = 64


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
    if npus is None:
        npus = range(min(g.n_npus, DEFAULT_TRACE_NPUS))
    keep = np.zeros(g.n_npus, dtype=bool)
    keep[np.asarray(list(npus), dtype=np.int64)] = True
    us = 1e6
    ev: list[dict] = []
    for p in np.flatnonzero(keep).tolist():
        stage = int(g.stage[p]) if g.stage is not None else 0
        ev.append({"name": "process_name", "ph": "M", "pid": p, "tid": 0, "args": {"name": f"NPU {p} (stage {stage})"}})
        ev.append({"name": "process_sort_index", "ph": "M", "pid": p, "tid": 0, "args": {"sort_index": p}})
        for tid, label in enumerate(("compute",) + tuple(f"comm {c}" for c in CATEGORIES)):
            ev.append({"name": "thread_name", "ph": "M", "pid": p, "tid": tid, "args": {"name": label}})
            ev.append({"name": "thread_sort_index", "ph": "M", "pid": p, "tid": tid, "args": {"sort_index": tid}})
    comp = np.flatnonzero((g.kind == COMPUTE) & keep[np.maximum(g.npu, 0)])
    for t in comp.tolist():
        ev.append({"name": g.name(t), "cat": "compute," + PHASES[g.phase[t]], "ph": "X", "pid": int(g.npu[t]), "tid": 0,
                   "ts": float(res.start[t]) * us, "dur": float(res.end[t] - res.start[t]) * us,
                   "args": {"task": t, "flops": float(g.flops[t]), "memory_bytes": float(g.mem_bytes[t]),
                            "iteration": int(g.iteration[t])}})
    for t, t0, t1 in zip(res.piece_task.tolist(), res.piece_start.tolist(), res.piece_end.tolist()):
        cat = CATEGORIES[g.category[t]]
        if g.kind[t] == COLLECTIVE:
            what = COLLECTIVES[g.coll[t]]
            args = {"task": t, "collective": what, "bytes": float(g.size[t]), "group_size": len(g.groups[g.group[t]])}
        elif g.kind[t] == IO:
            what = "io load" if g.peer[t] == IO_LOAD else "io store"
            args = {"task": t, "io": what, "bytes": float(g.size[t]), "shards": int(g.coll[t]),
                    "npus": len(g.groups[g.group[t]])}
        else:
            what = "p2p"
            args = {"task": t, "bytes": float(g.size[t]), "src": int(g.npu[t]), "dst": int(g.peer[t])}
        tid = 1 + CATEGORIES.index(cat)
        for p in g.members(t):
            if keep[p]:
                ev.append({"name": g.name(t), "cat": f"comm,{cat},{what}", "ph": "X", "pid": int(p),
                           "tid": tid, "ts": t0 * us, "dur": (t1 - t0) * us, "args": args})
        if what == "p2p" and keep[g.npu[t]] and keep[g.peer[t]]:  # an arrow from sender to receiver
            ev.append({"name": g.name(t), "cat": "p2p", "ph": "s", "id": t, "pid": int(g.npu[t]), "tid": tid,
                       "ts": t0 * us})
            ev.append({"name": g.name(t), "cat": "p2p", "ph": "f", "bp": "e", "id": t, "pid": int(g.peer[t]),
                       "tid": tid, "ts": t0 * us})
    summary = res.summary()
    return {"traceEvents": ev, "displayTimeUnit": "ns",
            "otherData": {"generator": "fabricsim", "model": str(g.meta.get("model", "")),
                          "strategy": str(g.meta.get("strategy", "")), "iteration_time_s": summary["iteration_time_s"],
                          "npus_in_trace": int(keep.sum()), "npus": g.n_npus}}


def write_trace(res: TrainResult, path: str | Path, npus: Sequence[int] | None = None) -> Path:
    """Write the Perfetto trace of `res` (`trace_events`) to `path`, creating its folder.

    Parameters
    ----------
    res : TrainResult
        The run.
    path : str or Path
        The JSON file to write.
    npus : sequence of int, optional
        NPUs to include (default: the first `DEFAULT_TRACE_NPUS`).

    Returns
    -------
    Path
        `path`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        json.dump(trace_events(res, npus), fh, separators=(",", ":"))
    return path

