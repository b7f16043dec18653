"""Discrete-event execution of a workload graph on a system and a network.

Resources: each NPU has one compute stream and `comm_streams` communication streams.
- A compute task starts when its dependencies are done and its NPU's compute stream is free;
  among ready tasks the lowest id goes first. Its time is the NPU roofline (or its fixed
  duration); while communication runs on its NPU it progresses at the rate the endpoint policy
  leaves it (`system.endpoint`: the roofline with the resources communication holds; each wave
  holds what the policy says for its demand and pace, `CommPricer.held`; several at once hold
  the larger share of each resource). A task whose resource is wholly held waits.
- A collective starts when its dependencies are done and, on every member, the stream serving
  its category is free and picks it (priority category, then LIFO/FIFO by ready time, then id).
  It is split into `chunks` chunks and runs in waves of `chunks_in_flight` chunks; a wave is
  priced by the network model for its group and size, alone, phase by phase (a phase: the steps
  on one set of network dimensions). Waves pipeline through the phases: a wave that follows the
  previous wave of the same collective without a gap costs only its slowest phase, so c chunks
  cost sum(phases) + (c/k - 1) * max(phases) of a wave (k = chunks in flight per phase), but no
  less than its bytes through the endpoint (what an NPU sends over its injection limit, which
  every phase shares). Between
  waves the streams may pick another collective (a higher-priority one preempts; the pipeline
  then fills again). All members are released together when a wave ends.
- A p2p transfer occupies the sender's stream and is priced over its route.
- An io task (weight streaming, input loading) occupies its members' IO streams and is priced
  as all I/O controllers' multicast (or reduction) flows at once. With per-category streams,
  stores have their own stream: links are full duplex, so loads and stores overlap (as on the
  flow model) and each direction keeps its order.

Because every stream ranks candidates by one global total order, the highest-ranked ready
collective always starts once its members' streams are free: no deadlock. Tasks that become ready
at the same instant are all queued before any of them starts (the events of one instant are
handled, then the NPUs and streams they touched pick, in index order): which of two simultaneous
candidates goes first is the ranking's, never the order in which their events were handled, so a
folded graph (`engine.fold`) decides as the full one does.

Two kinds of events: a compute task ends (`COMPUTE_END`, ignored if the task was re-timed since)
and a communication wave ends (`COMM_END`). With a network model whose traffic shares links
(`NetworkModel.shares_links`), the whole graph runs as one flow simulation instead
(`engine.flow_engine`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from enum import IntEnum

import numpy as np

from ..network.flow import successors
from ..roofline import stretch_one
from ..system.model import System
from ..system.resources import Held, task_times_of
from .._gc import gc_paused
from ..vocab import CATEGORIES, COLLECTIVES, IODirection, TaskKind
from ..workload.graph import WorkloadGraph
from .pricing import CommPricer
from .result import TrainResult, breakdown

COMPUTE, COLLECTIVE, P2P, IO = TaskKind.COMPUTE, TaskKind.COLLECTIVE, TaskKind.P2P, TaskKind.IO
NOTHING = Held()


class Event(IntEnum):
    """Kinds of heap events (module doc); the tuple pushed for each is in its comment."""

    COMPUTE_END = 0  # (time, seq, COMPUTE_END, npu, version)
    COMM_END = 1  # (time, seq, COMM_END, task, wave start)


def simulate(graph: WorkloadGraph, system: System, pricer: CommPricer,
             progress: Callable[[int, int], None] | None = None) -> TrainResult:
    """Run `graph` to completion on `system`, pricing communication with `pricer`.

    Parameters
    ----------
    graph : WorkloadGraph
        The tasks and their dependencies.
    system : System
        NPU roofline, endpoint policy, collective scheduling.
    pricer : CommPricer
        The topology, network model and algorithms. A model whose traffic shares links (the flow
        model) runs the whole graph as one flow simulation (`engine.flow_engine`).
    progress : callable, optional
        `progress(done_tasks, total_tasks)`, called now and then.

    Returns
    -------
    TrainResult
        Start and end of every task, communication pieces, the per-NPU breakdown.

    Examples
    --------
    Two NPUs compute 1e12 FLOPs each, then all-reduce 1 GB of gradients over a 100 GB/s ring:

    >>> from fabricsim.topology import parse_topology
    >>> from fabricsim.workload.graph import GraphBuilder
    >>> from fabricsim.system import NPU
    >>> b = GraphBuilder(2)
    >>> f0, f1 = b.compute(0, "fwd", flops=1e12), b.compute(1, "fwd", flops=1e12)
    >>> grads = b.collective("all-reduce", 1e9, [0, 1], "DP", "grads", deps=(f0, f1))
    >>> topo = parse_topology("ring:2", "100GB/s", "0ns")
    >>> res = simulate(b.build(), System(NPU(peak_flops=1e15)), CommPricer(topo, "congestion-aware"))
    >>> res.makespan   # 1e12 / 1e15 + 2 ring steps of 0.5e9 / 100e9
    0.011
    """
    pricer = pricer.for_system(system.endpoint, system.npu)
    if pricer.model.shares_links:
        from .flow_engine import simulate_on_flows

        if graph.fold is not None:
            raise ValueError("a folded workload graph runs on the analytical models only (links are shared on flows)")
        return simulate_on_flows(graph, system, pricer, progress)
    return _Run(graph, system, pricer, progress).run()


class _Run:
    """State of one discrete-event run (module doc): per-task lists for fast scalar access in
    the loop, per-stream queues, per-NPU compute state."""

    def __init__(self, g: WorkloadGraph, system: System, pricer: CommPricer, progress):
        self.g, self.system, self.pricer, self.progress = g, system, pricer, progress
        n = len(g)
        sched = system.scheduling
        self.kind, self.npu, self.peer = g.kind.tolist(), g.npu.tolist(), g.peer.tolist()
        self.cat, self.size, self.coll, self.grp = g.category.tolist(), g.size.tolist(), g.coll.tolist(), g.group.tolist()
        self.groups = g.groups  # members: their streams and compute
        # what the network model prices: the real groups and NPUs (a folded graph's stand for more, `engine.fold`)
        self.pgroups = g.groups if g.price_groups is None else g.price_groups
        self.real = list(range(g.n_npus)) if g.fold is None else g.fold[:, 0].tolist()
        # time of each task, and its compute and memory time over it: its stretch under a hold
        base, a, c = task_times_of(system.npu, g)
        self.base = base.tolist()
        self.interferes = pricer.endpoint.interferes
        self.share_c, self.share_m = a.tolist(), c.tolist()
        self.empty = g.moves_nothing().tolist()
        self.succ_ptr, self.succ_idx = (a.tolist() for a in successors(g.dep_ptr, g.dep_idx))
        self.waiting = np.diff(g.dep_ptr).tolist()
        self.per_cat = sched.comm_streams == "per-category"
        # per category, plus one for io stores: a link is full duplex, so loads (in) and stores
        # (out) of weight streaming each keep their own order, as on the flow model
        self.n_cat = len(CATEGORIES) + 1
        self.rank_of_cat = [sched.rank(c) for c in CATEGORIES]
        self.lifo = sched.policy == "LIFO"
        n_streams = g.n_npus * (self.n_cat if self.per_cat else 1)
        self.queue: list[list] = [[] for _ in range(n_streams)]
        self.busy = [False] * n_streams
        self.chunks, self.in_flight = sched.chunks, sched.chunks_in_flight
        self.pieces_left = [0] * n
        self.wave_end = [-1.0] * n  # when the collective's previous wave ended
        self.sts: list[tuple | None] = [None] * n  # the streams each communication task occupies
        self.done = [False] * n
        self.start = [np.nan] * n
        self.end = [np.nan] * n
        self.pieces: list[tuple[int, float, float]] = []
        # compute state per NPU
        self.cready: list[list[int]] = [[] for _ in range(g.n_npus)]
        self.crun = [-1] * g.n_npus  # running compute task
        self.cver = [0] * g.n_npus
        self.crem = [0.0] * g.n_npus  # nominal seconds left of the running task at clast
        self.clast = [0.0] * g.n_npus
        self.cstretch = [1.0] * g.n_npus
        self.holds: list[dict] = [{} for _ in range(g.n_npus)]  # per NPU: Held -> waves holding it
        self.cur_held = [NOTHING] * g.n_npus  # what communication holds of each NPU now
        self.wave_held: dict[int, Held] = {}
        self.wave_times: dict[tuple, tuple] = {}  # (collective, group, bytes) -> (alone, pipelined, demand)
        self.events: list = []
        self.seq = 0
        self.n_done = 0
        self.pend_c: set[int] = set()  # NPUs and streams to pick once this instant's events are handled
        self.pend_s: set[int] = set()
        self.n_events = 0

    # ---- the loop ----------------------------------------------------------------------------

    def run(self) -> TrainResult:
        with gc_paused():  # the loop keeps what it allocates (heap entries, per-task lists)
            return self._run()

    def _run(self) -> TrainResult:
        g, n = self.g, len(self.g)
        for t in range(n):
            if self.waiting[t] == 0:
                self.ready(t, 0.0)
        self.pick(0.0)
        report_every = max(1, n // 200)
        events, pop, progress = self.events, heapq.heappop, self.progress
        compute_end, comm_end, pick, COMPUTE_END = self.compute_end, self.comm_end, self.pick, Event.COMPUTE_END
        n_events = 0
        while events:
            now = events[0][0]
            while events and events[0][0] == now:  # every event of this instant, then the picks
                _, _, typ, a, b = pop(events)
                n_events += 1
                if typ == COMPUTE_END:
                    compute_end(a, b, now)
                else:
                    comm_end(a, b, now)
                if progress is not None and n_events % report_every == 0:
                    progress(self.n_done, n)
            pick(now)
        self.n_events = n_events
        if self.n_done != n:
            stuck = next(t for t in range(n) if not self.done[t])
            raise RuntimeError(f"workload graph stalled at task {stuck} ({g.name(stuck)}): a dependency never finished")
        if self.progress is not None:
            self.progress(n, n)
        return self.result()

    def pick(self, now: float) -> None:
        """Start what the NPUs and streams touched at this instant pick, in index order."""
        pend_c, pend_s = self.pend_c, self.pend_s
        try_compute, try_comm = self.try_compute, self.try_comm
        while pend_c or pend_s:
            npus, streams = sorted(pend_c), sorted(pend_s)
            pend_c.clear()
            pend_s.clear()
            for p in npus:
                try_compute(p, now)
            for s in streams:
                try_comm(s, now)

    def push(self, when: float, typ: Event, a, b) -> None:
        heapq.heappush(self.events, (when, self.seq, typ, a, b))
        self.seq += 1

    def result(self) -> TrainResult:
        pt = np.array([p[0] for p in self.pieces], dtype=np.int64)
        ps = np.array([p[1] for p in self.pieces], dtype=float)
        pe = np.array([p[2] for p in self.pieces], dtype=float)
        start, end = np.array(self.start, dtype=float), np.array(self.end, dtype=float)
        bd = breakdown(self.g, start, end, pt, ps, pe, self.system.scheduling.priorities)
        return TrainResult(self.g, self.system, start, end, pt, ps, pe, bd, self.n_events)

    # ---- tasks becoming ready and finishing --------------------------------------------------

    def ready(self, t: int, now: float) -> None:
        k = self.kind[t]
        if k == COMPUTE:
            p = self.npu[t]
            heapq.heappush(self.cready[p], t)
            self.pend_c.add(p)
            return
        if self.empty[t]:
            self.start[t] = now
            self.release(t, now)  # nothing to move
            return
        self.pieces_left[t] = self.chunks if k == COLLECTIVE else 1
        key = (self.rank_of_cat[self.cat[t]], -now if self.lifo else now, t)
        sts = self.streams(t)
        for s in sts:
            heapq.heappush(self.queue[s], (key, t))
        self.pend_s.update(sts)

    def release(self, t: int, now: float) -> None:
        self.done[t] = True
        self.end[t] = now
        self.n_done += 1
        waiting, succ_idx = self.waiting, self.succ_idx
        for i in range(self.succ_ptr[t], self.succ_ptr[t + 1]):
            u = succ_idx[i]
            waiting[u] -= 1
            if waiting[u] == 0:
                self.ready(u, now)

    # ---- compute -----------------------------------------------------------------------------

    def stretch_of(self, p: int, t: int) -> float:
        h = self.cur_held[p]
        if h is NOTHING:
            return 1.0
        return stretch_one(self.share_c[t], self.share_m[t], h.units, h.memory)

    def try_compute(self, p: int, now: float) -> None:
        ready = self.cready[p]
        if self.crun[p] >= 0 or not ready:
            return
        t = heapq.heappop(ready)
        self.crun[p] = t
        self.start[t] = now
        s = 1.0 if self.cur_held[p] is NOTHING else self.stretch_of(p, t)
        base = self.base[t]
        self.crem[p], self.clast[p], self.cstretch[p] = base, now, s
        v = self.cver[p] = self.cver[p] + 1
        heapq.heappush(self.events, (now + base * s, self.seq, Event.COMPUTE_END, p, v))
        self.seq += 1

    def restretch(self, p: int, now: float) -> None:
        """Communication activity on p changed: re-time its running compute task."""
        t = self.crun[p]
        if t < 0:
            return
        s = self.stretch_of(p, t)
        if s == self.cstretch[p]:
            return
        self.crem[p] -= (now - self.clast[p]) / self.cstretch[p]
        self.clast[p], self.cstretch[p] = now, s
        self.cver[p] += 1
        left = max(self.crem[p], 0.0)
        self.push(now + (left * s if left > 0 else 0.0), Event.COMPUTE_END, p, self.cver[p])  # inf: waits

    def hold(self, t: int, h: Held, delta: int, now: float) -> None:
        """Wave of task t starts (+1) or ends (-1) holding `h` on its members: re-time their compute
        when the larger share of each resource held changes."""
        for p in self.members_of(t):
            held = self.holds[p]
            k = held.get(h, 0) + delta
            cur = self.cur_held[p]
            if k:
                held[h] = k
                if delta > 0 and h.any:  # one more: the largest shares can only grow
                    cur = h if cur is NOTHING else cur.combined(h)
            else:  # the last of its kind left: the largest of the others
                del held[h]
                cur = NOTHING
                for x in held:
                    if x.any:
                        cur = x if cur is NOTHING else cur.combined(x)
            if cur != self.cur_held[p]:
                self.cur_held[p] = cur
                self.restretch(p, now)

    def compute_end(self, p: int, version: int, now: float) -> None:
        if version != self.cver[p]:
            return  # superseded by a re-timing
        t = self.crun[p]
        self.crun[p] = -1
        self.release(t, now)
        self.pend_c.add(p)

    # ---- communication -----------------------------------------------------------------------

    def streams(self, t: int) -> tuple[int, ...]:
        """The communication streams task t occupies (worked out once, when it becomes ready)."""
        sts = self.sts[t]
        if sts is None:
            sts = self.sts[t] = self._streams(t)
        return sts

    def _streams(self, t: int) -> tuple[int, ...]:
        if self.per_cat:
            c = self.n_cat - 1 if (self.kind[t] == IO and self.peer[t] == IODirection.STORE) else self.cat[t]
            if self.kind[t] == P2P:
                return (self.npu[t] * self.n_cat + c,)
            return tuple(m * self.n_cat + c for m in self.groups[self.grp[t]])
        if self.kind[t] == P2P:
            return (self.npu[t],)
        return self.groups[self.grp[t]]

    def members_of(self, t: int) -> tuple[int, ...]:
        if self.kind[t] == P2P:
            return (self.npu[t], self.peer[t])
        return self.groups[self.grp[t]]

    def top(self, s: int) -> int:
        q = self.queue[s]
        while q and self.done[q[0][1]]:
            heapq.heappop(q)
        return q[0][1] if q else -1

    def try_comm(self, s: int, now: float) -> None:
        """Start the top candidate of stream s if every stream it needs is free and picks it."""
        if self.busy[s]:
            return
        t = self.top(s)
        if t < 0:
            return
        sts = self.streams(t)
        for m in sts:
            if self.busy[m] or (m != s and self.top(m) != t):
                return
        for m in sts:
            self.busy[m] = True
        k, dur, demand, moved = self.wave(t, now)
        self.pieces_left[t] -= k
        if np.isnan(self.start[t]):
            self.start[t] = now
        if self.interferes:
            h = self.wave_held[t] = self.pricer.held(demand, moved, dur)
            self.hold(t, h, 1, now)
        self.push(now + dur, Event.COMM_END, t, now)

    def wave(self, t: int, now: float) -> tuple[int, float, object, float]:
        """(pieces, duration, demand, bytes moved) of the next wave of task t starting now (the
        demand only where the endpoint interferes)."""
        pr, want = self.pricer, self.interferes
        if self.kind[t] == P2P:
            src, dst, size = self.real[self.npu[t]], self.real[self.peer[t]], self.size[t]
            return 1, pr.p2p(src, dst, size), pr.p2p_demand(src, dst) if want else None, size
        if self.kind[t] == IO:
            shards = self.coll[t]
            return 1, pr.io(self.peer[t], self.groups[self.grp[t]], shards, self.size[t]), \
                pr.io_demand(shards) if want else None, self.size[t]
        k = min(self.in_flight, self.pieces_left[t])
        size = self.size[t] * k / self.chunks
        key = (self.coll[t], self.grp[t], size)
        got = self.wave_times.get(key)
        if got is None:  # a wave of this collective, group and size: alone, and pipelined behind another
            coll, group = COLLECTIVES[self.coll[t]], self.pgroups[self.grp[t]]
            ph = pr.phase_times(coll, group, size)
            # pipelined: its slowest phase, and its endpoint carries all phases
            got = self.wave_times[key] = (float(ph.sum()), max(float(ph.max()), pr.endpoint_floor(coll, group, size)),
                                          pr.demand(coll, group) if want else None)
        return k, got[1] if self.wave_end[t] == now else got[0], got[2], size

    def comm_end(self, t: int, wave_start: float, now: float) -> None:
        self.pieces.append((t, wave_start, now))
        self.wave_end[t] = now
        sts = self.streams(t)
        for m in sts:
            self.busy[m] = False
        if self.interferes:
            self.hold(t, self.wave_held.pop(t), -1, now)
        if self.pieces_left[t] == 0:
            self.release(t, now)
        self.pend_s.update(sts)
