"""The rule that splits every NPU's time into compute, exposed communication per category and idle,
per window (an iteration, or the whole run), and attributes each counted second to one task.

Per NPU, time with compute running counts as compute; time with no compute but communication of
some category active as that category's exposed communication (the highest-priority category when
several are active); the rest (pipeline bubbles, waiting for a peer) as idle. The parts sum to each
window's length. `engine.result` applies it to a run (its module doc: iterations, windows, the
headline); the engines apply it once at the end. It lives apart from the result so that the
interval arithmetic is read and tested on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..vocab import CATEGORIES, TaskKind
from ..workload.graph import WorkloadGraph

BREAKDOWN = ("compute",) + CATEGORIES + ("idle",)


@dataclass(frozen=True, eq=False)
class TaskSeconds:
    """Seconds attributed to tasks per window, as (window, task, seconds) triples (sparse: a task
    counts in one or two windows), sorted by window then task.

    Parameters
    ----------
    window, task : int arrays
        Window (iteration, 0-based) and task id.
    seconds : float array
        A compute task's running time, or a communication task's exposed time summed over its
        members, inside that window.
    """

    window: np.ndarray
    task: np.ndarray
    seconds: np.ndarray


def breakdown(g: WorkloadGraph, start, end, piece_task, piece_start, piece_end, priorities) -> dict[str, np.ndarray]:
    """Per NPU: compute time, exposed communication per category, idle; they sum to the makespan.

    Parameters
    ----------
    g : WorkloadGraph
        The tasks.
    start, end : float arrays
        Start and end of every task, s.
    piece_task, piece_start, piece_end : arrays
        Communication pieces: task id, start and end (s).
    priorities : sequence of str
        Every communication category, highest priority first (`Scheduling.priorities`); time
        with several categories active counts for the highest.

    Returns
    -------
    dict
        Component name (`BREAKDOWN`) -> float array of seconds per NPU.
    """
    makespan = float(np.nanmax(end)) if len(end) else 0.0
    per_npu, _ = split_time(g, start, end, piece_task, piece_start, piece_end, priorities,
                            np.array([0.0, makespan]), with_tasks=False)
    return {k: per_npu[0, :, i] for i, k in enumerate(BREAKDOWN)}


def split_time(g: WorkloadGraph, start, end, piece_task, piece_start, piece_end, priorities, edges,
               with_tasks: bool = False) -> tuple[np.ndarray, TaskSeconds | None]:
    """Each NPU's time in each window, split into compute, exposed communication per category
    and idle (the module doc's rule), and optionally each task's share.

    Parameters
    ----------
    g : WorkloadGraph
        The tasks.
    start, end : float arrays
        Start and end of every task, s.
    piece_task, piece_start, piece_end : arrays
        Communication pieces: task id, start and end (s).
    priorities : sequence of str
        Every communication category, highest priority first.
    edges : float array
        Window edges, s, non-decreasing, from 0 to the makespan.
    with_tasks : bool
        Also attribute every counted second to one task: the compute task running, or of the
        exposed category's active tasks the one that started first among those still running
        longest (deterministic).

    Returns
    -------
    per_npu : float array
        [window, NPU, component] seconds (`BREAKDOWN` order); per window and NPU they sum to
        the window's length.
    tasks : TaskSeconds or None
        Seconds attributed to each task per window (with_tasks), else None.
    """
    edges = np.asarray(edges, dtype=float)
    n_win = len(edges) - 1
    rank = [list(priorities).index(c) for c in CATEGORIES]  # category -> priority rank
    N, T0, T1, C, K = _intervals(g, start, end, piece_task, piece_start, piece_end, np.array([1 + r for r in rank]))
    n_cls = 1 + len(CATEGORIES)
    acc = np.zeros((n_win, g.n_npus, n_cls))  # classes: 0 compute, 1 + priority rank
    keys: list[np.ndarray] = []  # window x tasks + task, per counted segment (with_tasks)
    secs: list[np.ndarray] = []
    bounds = np.searchsorted(N, np.arange(g.n_npus + 1))
    for p in range(g.n_npus):
        lo, hi = bounds[p], bounds[p + 1]
        if lo == hi:
            continue
        a, b, c = T0[lo:hi], T1[lo:hi], C[lo:hi]
        pts, seg, first, win = _segments(a, b, c, edges, n_cls)
        m = first >= 0
        acc[:, p, :] = np.bincount(win[m] * n_cls + first[m], weights=seg[m], minlength=n_win * n_cls).reshape(n_win, n_cls)
        if with_tasks:
            owner = _owners(pts[:-1], first, a, b, c, K[lo:hi])
            keys.append(win[m] * len(g) + owner[m])
            secs.append(seg[m])
    out = _components(acc, rank, edges)
    if not with_tasks:
        return out, None
    uniq, inv = np.unique(np.concatenate(keys + [np.zeros(0, np.int64)]), return_inverse=True)
    seconds = np.bincount(inv, weights=np.concatenate(secs + [np.zeros(0)]), minlength=len(uniq))
    return out, TaskSeconds(uniq // max(len(g), 1), uniq % max(len(g), 1), seconds)


def _intervals(g: WorkloadGraph, start, end, piece_task, piece_start, piece_end, cls_of_cat):
    """Every busy interval of every NPU, sorted by NPU: (npu, start, end, class, task) arrays; class 0
    for a compute task, `cls_of_cat[category]` for a member of a communication piece."""
    comp = np.flatnonzero(g.kind == TaskKind.COMPUTE)
    npus, t0s, t1s, cls, tasks = [g.npu[comp]], [start[comp]], [end[comp]], [np.zeros(len(comp), np.int64)], [comp]
    if len(piece_task):
        cnt, members = _piece_members(g, np.asarray(piece_task, dtype=np.int64))
        npus.append(members)
        t0s.append(np.repeat(piece_start, cnt))
        t1s.append(np.repeat(piece_end, cnt))
        cls.append(np.repeat(cls_of_cat[g.category[piece_task]], cnt))
        tasks.append(np.repeat(np.asarray(piece_task, dtype=np.int64), cnt))
    N, T0, T1, C, K = (np.concatenate(x) for x in (npus, t0s, t1s, cls, tasks))
    order = np.argsort(N, kind="stable")
    return N[order], T0[order], T1[order], C[order], K[order]


def _piece_members(g: WorkloadGraph, pt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The NPUs of each communication piece's task, all at once (`WorkloadGraph.members`, vectorized):
    (members per piece, the members piece by piece)."""
    sizes = np.fromiter((len(m) for m in g.groups), dtype=np.int64, count=len(g.groups))
    gptr = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=gptr[1:])
    gidx = np.fromiter((x for m in g.groups for x in m), dtype=np.int64, count=int(gptr[-1]))
    kind = g.kind[pt]
    grouped = (kind == TaskKind.COLLECTIVE) | (kind == TaskKind.IO)
    grp = np.where(grouped, g.group[pt], 0)
    cnt = np.where(grouped, sizes[grp] if len(sizes) else 0, np.where(kind == TaskKind.COMPUTE, 1, 2))
    piece = np.repeat(np.arange(len(pt)), cnt)
    pos = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt)  # index within the piece
    t = pt[piece]
    out = np.where(pos == 0, g.npu[t], g.peer[t])  # compute: its NPU; p2p: (npu, peer)
    gi = np.flatnonzero(grouped[piece])
    out[gi] = gidx[gptr[grp[piece[gi]]] + pos[gi]]
    return cnt, out


def _segments(a, b, c, edges, n_cls: int):
    """One NPU's time cut at its intervals' ends `a`, `b` and the window `edges`: (points, segment
    lengths, the class each segment counts for (-1: none, idle), the window of each segment)."""
    n_win = len(edges) - 1
    pts = np.unique(np.concatenate([a, b, edges]))  # window edges split the segments
    ia, ib = np.searchsorted(pts, a), np.searchsorted(pts, b)
    cover = np.zeros((n_cls, len(pts) + 1))
    np.add.at(cover, (c, ia), 1)
    np.add.at(cover, (c, ib), -1)
    active = (np.cumsum(cover, axis=1) > 0.5)[:, :len(pts) - 1]  # [class, segment starting at pts[i]]
    seg = np.diff(pts)
    first = np.where(active.any(axis=0), np.argmax(active, axis=0), -1)
    win = np.clip(np.searchsorted(edges, pts[:-1], side="right") - 1, 0, n_win - 1)
    return pts, seg, first, win


def _components(acc, rank, edges) -> np.ndarray:
    """[window, NPU, component] seconds in `BREAKDOWN` order from the per-class sums `acc`; idle is
    the rest of each window."""
    out = np.empty((acc.shape[0], acc.shape[1], len(BREAKDOWN)))
    out[..., 0] = acc[..., 0]
    for i, r in enumerate(rank):
        out[..., 1 + i] = acc[..., 1 + r]
    length = np.diff(edges)[:, None]
    idle = length - acc.sum(axis=2)
    out[..., -1] = np.where(idle > 1e-12 * max(edges[-1], 0.0), idle, 0.0)  # float dust from subtracting is not idle
    return out


def _owners(seg_start, first, a, b, c, task) -> np.ndarray:
    """For each segment, a task of its counted class covering its start (-1 where none counts):
    among the class's intervals that started by then, the one reaching furthest."""
    owner = np.full(len(seg_start), -1, dtype=np.int64)
    for k in np.unique(first[first >= 0]).tolist():
        sel = c == k
        ak, bk, tk = a[sel], b[sel], task[sel]
        o = np.argsort(ak, kind="stable")
        ak, bk, tk = ak[o], bk[o], tk[o]
        reach = np.maximum.accumulate(bk)
        best = np.maximum.accumulate(np.where(bk == reach, np.arange(len(bk)), 0))  # index reaching `reach`
        segs = np.flatnonzero(first == k)
        j = np.searchsorted(ak, seg_start[segs], side="right") - 1
        owner[segs] = tk[best[j]]
    return owner
