"""The flow model's event loop: units start, send at their class's max-min rate, arrive.

Units with the same route (and weights), cap, priority and gate form a *class*; every sending
unit of a class has the class's rate (`network.flow.maxmin.FairShare`). Work per event is kept
proportional to what changed, not to what is in flight:

- rates: only the classes that started or stopped a unit (or whose cap moved with the holds) are
  handed to `FairShare.update`, which repairs max-min fairness where the change reaches;
- progress: a class keeps a *virtual clock* V (bytes one of its units has sent since the class
  began, advanced only when its rate changes); a unit of size s starting at V0 finishes when V
  reaches V0 + s, so a class's next finish is its first unit's, and only classes whose rate or
  first unit changed are re-timed in an indexed heap (`network.flow.kernel`, compiled);
- link bytes are the units' sizes over their links, summed once at the end; busy time changes
  only on links whose set of sending classes changed.

Events within a relative 1e-12 of each other are one event (as sends ending then are): the same
rule the reference loop used for ends of sending, now also for starts and arrivals.

Two loops, one answer: `FlowRun.run_stepwise` drives the compiled kernels from Python one event at
a time (the reference, the only one that keeps a timeline, and the one a small run on a cold cache
takes: it interprets faster with numpy's help); `FlowRun.run` runs the same loop wholly compiled
(`network.flow.event_kernel`: 50 us an event -> about 3 us; a 64-GPU training run's 3 M events
took 150 s in Python), the same operations in the same order, so the same bits
(tests/test_flow_engine_speedups.py).
"""

from __future__ import annotations

import heapq

import numpy as np

from ...kernels import load
from ...roofline import stretch
from .maxmin import FairShare, _gather
from .rows import successors, unique_rows  # noqa: F401 (successors: re-exported)

_LOOP_ENTRIES = ("next_finish", "finish_due", "start_units", "retime", "release")
_LABEL = "the flow model's kernels"
_EVENT_KERNEL = "fabricsim.network.flow.event_kernel"

SAME_TIME = 1e-12  # events closer than this (relative) are one event


class FlowRun:
    """The event loop's state: classes of units, event queues, per-unit times, gates.

    Parameters
    ----------
    topo : Topology
        Link bandwidths (bytes/s) and latencies.
    flows : Flows
        The flows (for their holds).
    U : _Units
        What runs (`network.flow._units`).
    record_timeline : bool
        Keep each interval's per-link rates.
    incremental : bool
        Repair max-min fairness where a change reaches (False: re-solve a changed priority level
        whole at every event, the reference).
    """

    def __init__(self, topo, flows, U, record_timeline: bool, incremental: bool = True, succ=None):
        self.topo, self.flows, self.U, self.record = topo, flows, U, record_timeline
        n = len(U.size)
        self.hops = np.diff(U.ptr)
        h = flows.holds
        if h is not None:
            gate = np.asarray(h.gate, np.int64)[U.owner]
            ga, gc, gr = (np.asarray(x, float)[U.owner] for x in (h.compute, h.memory_time, h.rate))
        # classes: same route (and weights), cap, priority and gate
        if h is None and (n == 0 or (np.all(U.cap == U.cap[0]) and np.all(U.prio == U.prio[0]))):
            _, cls_rep, cls_of = np.unique(U.key, return_index=True, return_inverse=True)
        else:
            cols = [U.key.astype(float), U.cap, U.prio.astype(float)]
            if h is not None:
                cols += [gate.astype(float), ga, gc, gr]
            cls_rep, cls_of = unique_rows(cols)
        self.cls_of = cls_of.ravel()
        n_cls = len(cls_rep)
        if h is None:  # no gates: per class only (the arrays per unit cost a pass over millions of units)
            gate, ga, gc, gr, cls_g = np.full(n_cls, -1, dtype=np.int64), *(np.zeros(n_cls) for _ in range(3)), \
                np.arange(n_cls)
        else:
            cls_g = cls_rep
        counts = self.hops[cls_rep]
        c_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        ent = _gather(U.ptr, cls_rep) if n_cls else np.zeros(0, np.int64)
        c_weight = None if U.weight is None else U.weight[ent]
        self.c_cap = U.cap[cls_rep]
        self.c_gate, self.c_ga, self.c_gc, self.c_gr = gate[cls_g], ga[cls_g], gc[cls_g], gr[cls_g]
        # interpreted, an event re-shares about every class: the loop's work grows as units x classes
        # (it picks the kernels' build on a cold cache, `fabricsim.kernels`)
        self.work = float(n) * max(n_cls, 1)
        self.fs = FairShare(topo.link_bw, c_ptr, U.links[ent], c_weight, U.prio[cls_rep], self.c_cap, incremental,
                            self.work)
        self.c_ptr, self.c_links = c_ptr, U.links[ent]
        self.c_wgt = self.fs.c_w
        n_groups = 1 if h is None else int(max(np.max(h.group, initial=-1), np.max(h.gate, initial=-1))) + 1
        self.hold_count = np.zeros(0 if h is None else len(h.group), dtype=np.int64)
        self.g_units, self.g_memory = np.zeros(n_groups), np.zeros(n_groups)  # largest share held per group
        gated = np.flatnonzero(self.c_gate >= 0)
        if h is not None:  # holds of each group, CSR; gated classes of each group, CSR
            self.h_order = np.argsort(h.group, kind="stable")
            self.h_ptr = np.concatenate([[0], np.cumsum(np.bincount(h.group, minlength=n_groups))])
            self.gc_order = gated[np.argsort(self.c_gate[gated], kind="stable")]
            self.gc_ptr = np.concatenate([[0], np.cumsum(np.bincount(self.c_gate[gated], minlength=n_groups))])
            self._cap_gated(gated)
        # numba's compiled kernels (loaded in about 0.5 s), or their Python build for a small run
        # on a cold cache (`fabricsim.kernels`)
        self.K = flow_kernel = load("fabricsim.network.flow.kernel", _LOOP_ENTRIES, self.work, _LABEL)
        self.succ_ptr, self.succ = successors(U.dep_ptr, U.dep_idx) if succ is None else succ  # (ptr, ids)
        self.waiting = np.diff(U.dep_ptr).copy()
        self.t_start, self.t_sent, self.t_done = (np.full(n, np.nan) for _ in range(3))
        self.n_pos = np.zeros(topo.n_links, dtype=np.int64)  # sending classes with a positive rate per link
        self.busy_since = np.zeros(topo.n_links)
        self.link_busy = np.zeros(topo.n_links)
        self.timeline: list = []
        self.startq: list = []  # (time, seq, units)
        self.arriveq: list = []
        self.seq = 0
        self.now = 0.0
        self.events = 0
        self.sending = 0
        self.size = np.ascontiguousarray(U.size, dtype=float)
        self.cls_of64 = np.ascontiguousarray(self.cls_of, dtype=np.int64)
        self.st = flow_kernel.new_state(n_cls, n)  # V, tV, head, nxt, target, hkey, hpos, heap, hsize
        self.stamp = np.zeros(n_cls, dtype=np.int64)  # classes changed since the last re-share: stamp == ep
        self.ep = 1
        self.changed = np.zeros(n_cls, dtype=np.int64)
        self.n_changed = np.zeros(1, dtype=np.int64)
        self.done = np.zeros(n, dtype=np.int64)
        self.ready = np.zeros(n, dtype=np.int64)

    # ---- the loop -------------------------------------------------------------------------------

    def run(self):
        """Run to completion; returns (t_start, t_sent, t_done per unit, link_busy, events, timeline).

        The whole loop compiled (`network.flow.event_kernel`) where its compiled build is loaded and
        no timeline is kept, else `run_stepwise`: the same operations in the same order, the same
        results to the bit."""
        ek = None if self.record else load(_EVENT_KERNEL, ("run_events",), self.work, _LABEL)
        ready0 = np.flatnonzero(self.waiting == 0)
        if ek is None or ek.__name__.endswith("[python]") or not len(ready0):
            return self.run_stepwise()  # the Python build interprets a loop faster with numpy's help
        n = len(self.size)
        U, H = self._unit_state(), self._hold_state()
        SQ, AQ, seq = ek.new_queue(n), ek.new_queue(n), np.zeros(1, np.int64)
        ek._queue(SQ, seq, ready0, np.ascontiguousarray(self.U.start[ready0], dtype=float), len(ready0), U[17], U[18])
        fs = self.fs
        F = (fs.level_size, fs.c_ptr, fs.c_links, fs.c_w, fs.l_ptr, fs.l_cls, fs.l_w, fs.lvl, fs.link_cap, fs.cap,
             fs.mult, fs.rate, fs.acc, fs.load, fs.lmax, fs.before, fs._sc, fs._sl, fs._fc, fs._fl, fs._bc, fs._ep,
             np.zeros(len(fs.lvl), dtype=bool))
        X = (self.stamp, self.changed, self.n_changed, np.array([self.ep, 0], dtype=np.int64))  # [epoch, sending]
        status, events = ek.run_events(U, self.st, F, (self.n_pos, self.busy_since, self.link_busy), X, H, SQ, AQ, seq,
                                       len(fs.level_size), fs.incremental, self.flows.holds is not None)
        if status:
            raise RuntimeError("flow model stalled: flows with zero rate")
        return self.t_start, self.t_sent, self.t_done, self.link_busy, int(events), ()

    def _unit_state(self) -> tuple:
        """The per-unit arrays of the compiled loop (`network.flow.event_kernel`, U), with its scratch
        buffers: times W (s), unit ids B, O, T."""
        U = self.U
        return (self.size, np.ascontiguousarray(U.lat, dtype=float), np.ascontiguousarray(U.start, dtype=float),
                np.ascontiguousarray(self.hops, dtype=np.int64), self.cls_of64, np.ascontiguousarray(U.owner, np.int64),
                np.ascontiguousarray(U.last, dtype=bool), np.ascontiguousarray(self.succ_ptr, dtype=np.int64),
                np.ascontiguousarray(self.succ, dtype=np.int64), self.waiting, self.ready, self.done, self.t_start,
                self.t_sent, self.t_done, np.empty(len(self.size)), *(np.empty(len(self.size), np.int64) for _ in range(3)))

    def _hold_state(self) -> tuple:
        """The holds as the compiled loop reads them (`network.flow.event_kernel`, H); empty arrays of
        the same types without holds (one compiled signature)."""
        h, U = self.flows.holds, self.U
        i64, f64 = (lambda a: np.ascontiguousarray(a, dtype=np.int64)), (lambda a: np.ascontiguousarray(a, dtype=float))
        owner, last = i64(U.owner), np.ascontiguousarray(U.last, dtype=bool)
        if h is None:
            z, zf = np.zeros(1, np.int64), np.zeros(1)
            return (z, z, z, z, z, zf, zf, z, z, zf, zf, z, z, z, zf, zf, zf, zf, np.zeros(2, np.int64), z, owner, last,
                    z)
        n_groups = len(self.g_units)
        return (i64(h.mark_ptr), i64(h.mark_idx), i64(h.mark_delta), self.hold_count, i64(h.group), f64(h.units),
                f64(h.memory), i64(self.h_order), i64(self.h_ptr), self.g_units, self.g_memory, i64(self.gc_order),
                i64(self.gc_ptr), i64(self.c_gate), f64(self.c_ga), f64(self.c_gc), f64(self.c_gr), f64(self.c_cap),
                np.zeros(n_groups + 1, np.int64), np.zeros(n_groups, np.int64), owner, last, np.zeros(n_groups, np.int64))

    def run_stepwise(self):
        """`run`, one event at a time in Python around the compiled kernels (the reference; the
        only loop that keeps a timeline)."""
        ready0 = np.flatnonzero(self.waiting == 0)
        self._push_starts(ready0, self.U.start[ready0])
        V, tV, head, nxt, target, hkey, hpos, heap, hsize = self.st
        fs, K = self.fs, self.K
        while self.startq or self.arriveq or self.sending:
            if self.n_changed[0]:
                self._reshare()
            t = K.next_finish(hkey, heap, hsize)
            if self.startq:
                t = min(t, self.startq[0][0])
            if self.arriveq:
                t = min(t, self.arriveq[0][0])
            if not np.isfinite(t):
                raise RuntimeError("flow model stalled: flows with zero rate")
            if self.record and t > self.now and self.sending:
                self.timeline.append((self.now, t, fs.link_load()))
            self.now = now = float(t)
            self.events += 1
            nd = K.finish_due(now, now * (1 + SAME_TIME) + 1e-18, self.size, fs.rate, fs.mult, V, tV, head, nxt, target,
                            hkey, hpos, heap, hsize, self.stamp, self.ep, self.changed, self.n_changed, self.done)
            if nd:
                d = self.done[:nd].copy()
                self.sending -= nd
                self.t_sent[d] = now
                self._arrive_later(d, now + self.U.lat[d])
            self._arrivals()
            self._starts()
        return self.t_start, self.t_sent, self.t_done, self.link_busy, self.events, tuple(self.timeline)

    def _reshare(self) -> None:
        """New rates where classes changed; re-time the classes whose rate or first unit moved."""
        changed = self.changed[: self.n_changed[0]].copy()
        self.n_changed[0] = 0
        fs = self.fs
        was_pos = fs.acc[changed] > 0
        moved, old = fs.update(changed)
        V, tV, head, nxt, target, hkey, hpos, heap, hsize = self.st
        self.K.retime(changed, was_pos, moved, old, self.now, fs.rate, fs.acc, self.c_ptr, self.c_links, self.c_wgt,
               self.n_pos, self.busy_since, self.link_busy, V, tV, head, target, hkey, hpos, heap, hsize,
               self.stamp, self.ep)
        self.ep += 1

    def _change(self, classes) -> None:
        """Mark classes changed (their cap moved) for the next re-share."""
        for c in classes:
            if self.stamp[c] != self.ep:
                self.stamp[c] = self.ep
                self.changed[self.n_changed[0]] = c
                self.n_changed[0] += 1

    def _arrivals(self) -> None:
        """Units arriving now: apply their flows' marks, release successors."""
        U, now = self.U, self.now
        horizon = now * (1 + SAME_TIME)
        while self.arriveq and self.arriveq[0][0] <= horizon:
            _, _, units = heapq.heappop(self.arriveq)
            self.t_done[units] = now
            if self.flows.holds is not None:
                self._mark(U.owner[units[U.last[units]]])
            k = self.K.release(units, self.succ_ptr, self.succ, self.waiting, self.ready)
            if k:
                ok = self.ready[:k].copy()
                self._push_starts(ok, np.maximum(now, U.start[ok]))

    def _mark(self, owners: np.ndarray) -> None:
        """Raise and lower the holds of flows arriving now; caps of gated classes follow."""
        h = self.flows.holds
        ent = _gather(h.mark_ptr, owners)
        if not len(ent):
            return
        idx = np.asarray(h.mark_idx)[ent]
        np.add.at(self.hold_count, idx, np.asarray(h.mark_delta)[ent])
        for grp in np.unique(h.group[idx]).tolist():
            ids = self.h_order[self.h_ptr[grp]: self.h_ptr[grp + 1]]
            on = ids[self.hold_count[ids] > 0]
            u = float(np.max(h.units[on], initial=0.0))
            m = float(np.max(h.memory[on], initial=0.0))
            if u != self.g_units[grp] or m != self.g_memory[grp]:
                self.g_units[grp], self.g_memory[grp] = u, m
                g = self.gc_order[self.gc_ptr[grp]: self.gc_ptr[grp + 1]]
                if len(g):
                    before = self.fs.cap[g].copy()
                    self._cap_gated(g)
                    self._change(g[self.fs.cap[g] != before].tolist())  # only caps that moved

    def _cap_gated(self, g: np.ndarray) -> None:
        """Caps of gated classes `g`: their rate over their stretch under their group's holds."""
        grp = self.c_gate[g]
        st = stretch(self.c_ga[g], self.c_gc[g], self.g_units[grp], self.g_memory[grp])
        self.fs.cap[g] = np.minimum(self.c_cap[g], np.where(np.isfinite(st), self.c_gr[g] / st, 0.0))

    def _starts(self) -> None:
        """Units starting now: empty ones arrive after their latency, the others send."""
        U, now = self.U, self.now
        horizon = now * (1 + SAME_TIME)
        while self.startq and self.startq[0][0] <= horizon:
            _, _, units = heapq.heappop(self.startq)
            self.t_start[units] = now
            empty = (self.hops[units] == 0) | (U.size[units] == 0)
            if empty.any():
                e = units[empty]
                self.t_sent[e] = now
                self._arrive_later(e, now + U.lat[e])
            go = units[~empty]
            if len(go):
                self.sending += len(go)
                V, tV, head, nxt, target = self.st[:5]
                self.K.start_units(go, self.cls_of64, self.size, now, self.fs.rate, self.fs.mult, V, tV, head, nxt, target,
                            self.stamp, self.ep, self.changed, self.n_changed)

    def _push_starts(self, units: np.ndarray, when: np.ndarray) -> None:
        self._queue(self.startq, units, when)

    def _arrive_later(self, units: np.ndarray, when: np.ndarray) -> None:
        self._queue(self.arriveq, units, when)

    def _queue(self, q: list, units: np.ndarray, when: np.ndarray) -> None:
        """Queue `units` at their times, one entry per distinct time."""
        if len(units) == 1 or when.min() == when.max():
            heapq.heappush(q, (float(when[0]), self.seq, units))
            self.seq += 1
            return
        order = np.argsort(when, kind="stable")
        w = when[order]
        cut = np.flatnonzero(w[1:] != w[:-1]) + 1
        for part in np.split(order, cut):
            heapq.heappush(q, (float(when[part[0]]), self.seq, units[part]))
            self.seq += 1
