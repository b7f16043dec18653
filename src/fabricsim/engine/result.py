"""The result of a simulated training run: task times, communication pieces, and the breakdown
of every NPU's time into compute, exposed communication per category and idle time.

The breakdown counts, per NPU, time with compute running as compute; time with no compute but
communication of some category active as that category's exposed communication (the highest-
priority category when several are active); the rest (pipeline bubbles, waiting for a peer) as
idle. The parts sum to the makespan.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..system.model import System
from ..vocab import CATEGORIES, TaskKind
from ..workload.graph import WorkloadGraph

BREAKDOWN = ("compute",) + CATEGORIES + ("idle",)


@dataclass(frozen=True, eq=False)
class TrainResult:
    """A simulated training run (module doc).

    Parameters
    ----------
    graph : WorkloadGraph
        The tasks that ran.
    system : System
        The NPU, endpoint policy and scheduling they ran on.
    start, end : float arrays
        Start and end of every task, s (indexed by task id).
    piece_task, piece_start, piece_end : arrays
        Communication pieces (a wave of a collective's chunks, or a whole communication task):
        the task id, its start and its end, s.
    breakdown : dict
        Component name (`BREAKDOWN`) -> per-NPU seconds; per NPU the components sum to the
        makespan.
    events : int
        Events the engine processed.
    """

    graph: WorkloadGraph
    system: System
    start: np.ndarray  # per task, s
    end: np.ndarray  # per task, s
    piece_task: np.ndarray  # communication pieces: task, start, end
    piece_start: np.ndarray
    piece_end: np.ndarray
    breakdown: dict = field(default_factory=dict)  # name -> per-NPU seconds (sums to makespan)
    events: int = 0

    @property
    def makespan(self) -> float:
        """When the last task ended, s."""
        return float(np.nanmax(self.end)) if len(self.end) else 0.0

    @property
    def iteration_ends(self) -> np.ndarray:
        """When each iteration's last task ended (non-decreasing), s."""
        it = self.graph.iteration
        out = np.zeros(self.graph.n_iterations)
        np.maximum.at(out, it, self.end)
        return np.maximum.accumulate(out)

    @property
    def iteration_times(self) -> np.ndarray:
        """Length of each iteration: the gap between consecutive `iteration_ends`, s."""
        ends = self.iteration_ends
        return np.diff(np.concatenate([[0.0], ends]))

    @property
    def iteration_time(self) -> float:
        """Mean time per iteration (= makespan / iterations), s."""
        n = self.graph.n_iterations
        return self.makespan / n if n else 0.0

    def mean_breakdown(self) -> dict[str, float]:
        """Average over NPUs of each component; the components sum to the makespan.

        Returns
        -------
        dict
            Component name (`BREAKDOWN`) -> seconds.
        """
        return {k: float(v.mean()) for k, v in self.breakdown.items()}

    def stage_breakdown(self) -> dict[int, dict[str, float]]:
        """Pipeline stage -> the mean over its NPUs of each component.

        Returns
        -------
        dict
            Stage -> {component name -> seconds}.
        """
        st = self.graph.stage
        return {int(s): {k: float(v[st == s].mean()) for k, v in self.breakdown.items()} for s in np.unique(st)}

    def compute_total(self, npu: int) -> float:
        """Sum of the durations of the compute tasks of one NPU.

        Parameters
        ----------
        npu : int
            NPU id.

        Returns
        -------
        float
            Seconds.
        """
        g = self.graph
        m = (g.kind == TaskKind.COMPUTE) & (g.npu == npu)
        return float((self.end[m] - self.start[m]).sum())

    def summary(self) -> dict:
        """A JSON-ready dict: NPUs, tasks, iterations, iteration times, makespan (s), the mean and
        max breakdown over NPUs (s), the mean exposed communication (s) and the event count."""
        mb = self.mean_breakdown()
        return {
            "npus": self.graph.n_npus,
            "tasks": len(self.graph),
            "iterations": self.graph.n_iterations,
            "iteration_time_s": self.iteration_time,
            "iteration_times_s": [float(x) for x in self.iteration_times],
            "makespan_s": self.makespan,
            "breakdown_mean_s": mb,
            "breakdown_max_s": {k: float(v.max()) for k, v in self.breakdown.items()},
            "exposed_comm_mean_s": float(sum(mb[c] for c in CATEGORIES)),
            "events": self.events,
        }


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
    comp = np.flatnonzero(g.kind == TaskKind.COMPUTE)
    # interval lists: (npu, t0, t1, class) with class 0 = compute, 1 + priority rank = comm category
    cls_of_cat = np.array([1 + list(priorities).index(c) for c in CATEGORIES])
    npus = [g.npu[comp]]
    t0s, t1s, cls = [start[comp]], [end[comp]], [np.zeros(len(comp), dtype=np.int64)]
    if len(piece_task):
        # expand each piece to its members
        mem_lists = []
        for t in piece_task.tolist():
            mem_lists.append(g.members(t))
        cnt = np.fromiter((len(m) for m in mem_lists), dtype=np.int64, count=len(mem_lists))
        npus.append(np.fromiter((x for m in mem_lists for x in m), dtype=np.int64, count=int(cnt.sum())))
        t0s.append(np.repeat(piece_start, cnt))
        t1s.append(np.repeat(piece_end, cnt))
        cls.append(np.repeat(cls_of_cat[g.category[piece_task]], cnt))
    N, T0, T1, C = (np.concatenate(x) for x in (npus, t0s, t1s, cls))
    n_cls = 1 + len(CATEGORIES)
    acc = np.zeros((g.n_npus, n_cls))
    order = np.argsort(N, kind="stable")
    N, T0, T1, C = N[order], T0[order], T1[order], C[order]
    bounds = np.searchsorted(N, np.arange(g.n_npus + 1))
    for p in range(g.n_npus):
        lo, hi = bounds[p], bounds[p + 1]
        if lo == hi:
            continue
        a, b, c = T0[lo:hi], T1[lo:hi], C[lo:hi]
        pts = np.unique(np.concatenate([a, b]))
        ia, ib = np.searchsorted(pts, a), np.searchsorted(pts, b)
        cover = np.zeros((n_cls, len(pts) + 1))
        np.add.at(cover, (c, ia), 1)
        np.add.at(cover, (c, ib), -1)
        active = np.cumsum(cover, axis=1)[:, :-1] > 0.5  # [class, segment starting at pts[i]]
        seg = np.diff(pts)
        active = active[:, :-1]
        first = np.where(active.any(axis=0), np.argmax(active, axis=0), -1)
        for k in range(n_cls):
            acc[p, k] = seg[first == k].sum()
    out = {"compute": acc[:, 0]}
    for c in CATEGORIES:
        out[c] = acc[:, 1 + list(priorities).index(c)]
    idle = makespan - acc.sum(axis=1)
    out["idle"] = np.where(idle > 1e-12 * makespan, idle, 0.0)  # float dust from subtracting is not idle time
    return {k: out[k] for k in BREAKDOWN}
