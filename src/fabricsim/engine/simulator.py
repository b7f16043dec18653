"""Discrete-event execution of a workload graph on a system and a network.

Resources: each NPU has one compute stream and `comm_streams` communication streams.
- A compute task starts when its dependencies are done and its NPU's compute stream is free;
  among ready tasks the lowest id goes first. Its time is the NPU roofline (or its fixed
  duration), stretched by the endpoint model while communication is active on that NPU.
- A collective starts when its dependencies are done and, on every member, the stream serving
  its category is free and picks it (priority category, then LIFO/FIFO by ready time, then id).
  It is split into `chunks` chunks and runs in waves of `chunks_in_flight` chunks; a wave is
  priced by the network model for its group and size, alone, phase by phase (a phase: the steps
  on one set of network dimensions). Waves pipeline through the phases: a wave that follows the
  previous wave of the same collective without a gap costs only its slowest phase, so c chunks
  cost sum(phases) + (c/k - 1) * max(phases) of a wave (k = chunks in flight per phase). Between
  waves the streams may pick another collective (a higher-priority one preempts; the pipeline
  then fills again). All members are released together when a wave ends.
- A p2p transfer occupies the sender's stream and is priced over its route.
- An io task (weight streaming, input loading) occupies its members' IO streams and is priced
  as all I/O controllers' multicast (or reduction) flows at once on the flow model.

Because every stream ranks candidates by one global total order, the highest-ranked ready
collective always starts once its members' streams are free: no deadlock.

Output: start/end of every task, every communication piece, the iteration times and the
breakdown of each NPU's time into compute, exposed communication per category (time with no
compute running but communication of that category active on the NPU; when several are active,
the highest-priority one counts) and idle time (waiting with nothing running: pipeline bubbles,
waiting for a peer).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..system.model import System
from ..workload.graph import CATEGORIES, COLLECTIVE, COMPUTE, IO, P2P, WorkloadGraph
from ..network.flow import successors
from .pricing import CommPricer

BREAKDOWN = ("compute",) + CATEGORIES + ("idle",)


@dataclass(frozen=True, eq=False)
class TrainResult:
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
        return float(np.nanmax(self.end)) if len(self.end) else 0.0

    @property
    def iteration_ends(self) -> np.ndarray:
        it = self.graph.iteration
        out = np.zeros(self.graph.n_iterations)
        np.maximum.at(out, it, self.end)
        return np.maximum.accumulate(out)

    @property
    def iteration_times(self) -> np.ndarray:
        ends = self.iteration_ends
        return np.diff(np.concatenate([[0.0], ends]))

    @property
    def iteration_time(self) -> float:
        """Mean time per iteration (= makespan / iterations)."""
        n = self.graph.n_iterations
        return self.makespan / n if n else 0.0

    def mean_breakdown(self) -> dict[str, float]:
        """Average over NPUs of each component; the components sum to the makespan."""
        return {k: float(v.mean()) for k, v in self.breakdown.items()}

    def stage_breakdown(self) -> dict[int, dict[str, float]]:
        st = self.graph.stage
        return {int(s): {k: float(v[st == s].mean()) for k, v in self.breakdown.items()} for s in np.unique(st)}

    def compute_total(self, npu: int) -> float:
        g = self.graph
        m = (g.kind == COMPUTE) & (g.npu == npu)
        return float((self.end[m] - self.start[m]).sum())

    def summary(self) -> dict:
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


def simulate(graph: WorkloadGraph, system: System, pricer: CommPricer,
             progress: Callable[[int, int], None] | None = None) -> TrainResult:
    """Run `graph` to completion (see module doc). With a flow model the whole graph runs as one
    flow simulation (`flow_engine`): communication shares links with priorities."""
    from .pricing import FLOW_MODELS

    if pricer.model in FLOW_MODELS:
        from .flow_engine import simulate_on_flows

        return simulate_on_flows(graph, system, pricer, progress)
    g = graph
    n = len(g)
    sched = system.scheduling
    npu_model = system.npu
    endpoint = system.endpoint
    interferes = endpoint.interferes
    # per-task static data as Python lists (fast scalar access in the loop)
    kind = g.kind.tolist()
    npu = g.npu.tolist()
    peer = g.peer.tolist()
    cat = g.category.tolist()
    size = g.size.tolist()
    coll = g.coll.tolist()
    grp = g.group.tolist()
    base = npu_model.task_times(g.duration, g.flops, g.mem_bytes).tolist()
    membound = (np.isnan(g.duration) & npu_model.memory_bound(g.flops, g.mem_bytes)).tolist()
    empty = g.moves_nothing().tolist()
    succ_ptr, succ_idx = (a.tolist() for a in successors(g.dep_ptr, g.dep_idx))
    waiting = np.diff(g.dep_ptr).tolist()
    # streams
    per_cat = sched.comm_streams == "per-category"
    n_cat = len(CATEGORIES)
    rank_of_cat = [sched.rank(c) for c in CATEGORIES]
    lifo = sched.policy == "LIFO"
    groups = g.groups
    if per_cat:
        def streams(t):
            c = cat[t]
            if kind[t] == P2P:
                return (npu[t] * n_cat + c,)
            return tuple(m * n_cat + c for m in groups[grp[t]])
    else:
        def streams(t):
            if kind[t] == P2P:
                return (npu[t],)
            return groups[grp[t]]
    n_streams = g.n_npus * (n_cat if per_cat else 1)
    queue: list[list] = [[] for _ in range(n_streams)]
    busy = [False] * n_streams
    chunks, in_flight = sched.chunks, sched.chunks_in_flight
    pieces_left = [0] * n
    wave_end = [-1.0] * n  # when the collective's previous wave ended
    done = [False] * n
    start = [np.nan] * n
    end = [np.nan] * n
    pieces: list[tuple[int, float, float]] = []
    # compute state
    cready: list[list[int]] = [[] for _ in range(g.n_npus)]
    crun = [-1] * g.n_npus  # running compute task
    cver = [0] * g.n_npus
    crem = [0.0] * g.n_npus  # nominal seconds left of the running task at clast
    clast = [0.0] * g.n_npus
    cstretch = [1.0] * g.n_npus
    comm_active = [0] * g.n_npus
    events: list = []  # (time, seq, type, a, b)
    seq = 0
    n_done = 0
    n_events = 0

    def members_of(t):
        if kind[t] == P2P:
            return (npu[t], peer[t])
        return groups[grp[t]]

    def stretch_of(p, t):
        return endpoint.stretch(membound[t]) if (interferes and comm_active[p] > 0) else 1.0

    def try_compute(p, now):
        nonlocal seq
        if crun[p] >= 0 or not cready[p]:
            return
        t = heapq.heappop(cready[p])
        crun[p] = t
        start[t] = now
        s = stretch_of(p, t)
        crem[p], clast[p], cstretch[p] = base[t], now, s
        cver[p] += 1
        heapq.heappush(events, (now + base[t] * s, seq, 0, p, cver[p]))
        seq += 1

    def restretch(p, now):
        """Communication activity on p changed: re-time its running compute task."""
        nonlocal seq
        t = crun[p]
        if t < 0:
            return
        s = stretch_of(p, t)
        if s == cstretch[p]:
            return
        crem[p] -= (now - clast[p]) / cstretch[p]
        clast[p], cstretch[p] = now, s
        cver[p] += 1
        heapq.heappush(events, (now + max(crem[p], 0.0) * s, seq, 0, p, cver[p]))
        seq += 1

    def top(s):
        q = queue[s]
        while q and done[q[0][1]]:
            heapq.heappop(q)
        return q[0][1] if q else -1

    def try_comm(s, now):
        nonlocal seq
        if busy[s]:
            return
        t = top(s)
        if t < 0:
            return
        sts = streams(t)
        for m in sts:
            if busy[m] or (m != s and top(m) != t):
                return
        for m in sts:
            busy[m] = True
        if kind[t] == P2P:
            k, dur = 1, pricer.p2p(npu[t], peer[t], size[t])
        elif kind[t] == IO:
            k, dur = 1, pricer.io(peer[t], groups[grp[t]], coll[t], size[t])
        else:
            k = min(in_flight, pieces_left[t])
            ph = pricer.phase_times(coll[t], groups[grp[t]], size[t] * k / chunks)
            dur = float(ph.max() if wave_end[t] == now else ph.sum())  # pipelined behind its previous wave
        pieces_left[t] -= k
        if np.isnan(start[t]):
            start[t] = now
        for p in members_of(t):
            comm_active[p] += 1
            if interferes and comm_active[p] == 1:
                restretch(p, now)
        heapq.heappush(events, (now + dur, seq, 1, t, now))
        seq += 1

    def release(t, now):
        nonlocal n_done
        done[t] = True
        end[t] = now
        n_done += 1
        for i in range(succ_ptr[t], succ_ptr[t + 1]):
            u = succ_idx[i]
            waiting[u] -= 1
            if waiting[u] == 0:
                ready(u, now)

    def ready(t, now):
        k = kind[t]
        if k == COMPUTE:
            heapq.heappush(cready[npu[t]], t)
            try_compute(npu[t], now)
            return
        if empty[t]:
            start[t] = now
            release(t, now)  # nothing to move
            return
        pieces_left[t] = chunks if k == COLLECTIVE else 1
        key = (rank_of_cat[cat[t]], -now if lifo else now, t)
        sts = streams(t)
        for s in sts:
            heapq.heappush(queue[s], (key, t))
        for s in sts:
            try_comm(s, now)

    for t in range(n):
        if waiting[t] == 0:
            ready(t, 0.0)
    report_every = max(1, n // 200)
    while events:
        now, _, typ, a, b = heapq.heappop(events)
        n_events += 1
        if typ == 0:  # compute end (if not superseded)
            p = a
            if b != cver[p]:
                continue
            t = crun[p]
            crun[p] = -1
            release(t, now)
            try_compute(p, now)
        else:  # communication piece end
            t = a
            pieces.append((t, b, now))
            wave_end[t] = now
            sts = streams(t)
            for m in sts:
                busy[m] = False
            for p in members_of(t):
                comm_active[p] -= 1
                if interferes and comm_active[p] == 0:
                    restretch(p, now)
            if pieces_left[t] == 0:
                release(t, now)
            for m in sts:
                try_comm(m, now)
        if progress is not None and n_events % report_every == 0:
            progress(n_done, n)
    if n_done != n:
        stuck = next(t for t in range(n) if not done[t])
        raise RuntimeError(f"workload graph stalled at task {stuck} ({g.name(stuck)}): a dependency never finished")
    if progress is not None:
        progress(n, n)
    pt = np.array([p[0] for p in pieces], dtype=np.int64)
    ps = np.array([p[1] for p in pieces], dtype=float)
    pe = np.array([p[2] for p in pieces], dtype=float)
    start_a, end_a = np.array(start, dtype=float), np.array(end, dtype=float)
    bd = breakdown(g, start_a, end_a, pt, ps, pe, sched.priorities)
    return TrainResult(g, system, start_a, end_a, pt, ps, pe, bd, n_events)


def breakdown(g: WorkloadGraph, start, end, piece_task, piece_start, piece_end, priorities) -> dict[str, np.ndarray]:
    """Per NPU: compute time, exposed communication per category, idle; they sum to the makespan."""
    makespan = float(np.nanmax(end)) if len(end) else 0.0
    comp = np.flatnonzero(g.kind == COMPUTE)
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
