"""The flow model's whole event loop, compiled: `FlowRun.run_stepwise` (`network.flow.loop`) in one call.

The stepwise loop makes a few Python and numpy calls per event around the compiled kernels: about
50 us an event, 80% of a training run on the flow engine (Llama 3 70B on 64 GPUs: 3 M events).
Here the same loop runs in one compiled call: the same kernels (`network.flow.kernel`,
`network.flow.maxmin_kernel.update`) called in the same order on the same arrays, the event queues
as indexed heaps of the same entries (one per distinct time a batch of units was queued at, keyed
by (time, sequence number), each holding its units in the order the stepwise loop listed them),
the holds' marks and the gated classes' caps as `FlowRun._mark` computes them. So every float is
computed by the same operations in the same order: the results are bit-identical
(tests/test_flow_engine_speedups.py runs both loops).

Nothing here allocates: every buffer comes from `FlowRun` (W, B, O, T below), and every function
is a `leaf` (`network.flow.leaf`): numba counts no references, which were half of the loop's time.

State arrives as tuples of arrays (`FlowRun.run`):
- U: per unit: size (bytes), lat (s), start (s), hops, class, owner, last, successors (CSR),
  waiting counts, ready and done buffers, the times t_start, t_sent, t_done (s) it fills, and
  the scratch buffers W (times, s), B, O, T (unit ids);
- C: the classes' clocks and heap (`kernel.new_state`); F: `FairShare`'s arrays, as `update` takes
  them, and a flag per class; L: per link the sending classes, busy since, busy time (s); X: the
  change set (stamps, changed classes, their count, [epoch, units sending]);
- H: the holds (marks, counts, shares, groups, gated classes and their rates), a stamp buffer and
  a sort buffer;
- SQ, AQ: the start and arrival queues (`new_queue`), `seq` their shared sequence counter.

numba's disk cache keys this module on its own source: a change in `kernel.py` or
`maxmin_kernel.py`, whose functions are compiled into these, needs this file touched (or its
cache removed) to reach them.
"""

from __future__ import annotations

import numpy as np

from ...kernels import sibling
from .leaf import leaf

_K = sibling(__name__, "fabricsim.network.flow.kernel")
_M = sibling(__name__, "fabricsim.network.flow.maxmin_kernel")
_next_finish, _finish_due, _start_units, _retime, _release = (_K.next_finish, _K.finish_due, _K.start_units,
                                                              _K.retime, _K.release)
_stable_order, _sort_values = _K.stable_order, _K.sort_values
_update = _M.update

SAME_TIME = 1e-12  # as `network.flow.loop.SAME_TIME`: events closer than this (relative) are one event
STALLED = 1  # status: no event left while units still send at rate 0


def new_queue(n: int) -> tuple:
    """An empty queue for `n` units, each queued at most once: per entry its time (s), sequence
    number, first pool position and unit count; the heap of entry ids; the pool of units; and
    [heap size, entries used, pool used]."""
    return (np.zeros(n), np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64),
            np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(3, np.int64))


@leaf
def _q_before(qt, qs, a, b):
    """Whether entry a comes before entry b: earlier time, then earlier sequence number."""
    return qt[a] < qt[b] or (qt[a] == qt[b] and qs[a] < qs[b])


@leaf
def _q_sift_down(qt, qs, heap, size, i):
    while True:
        lft, rgt, m = 2 * i + 1, 2 * i + 2, i
        if lft < size and _q_before(qt, qs, heap[lft], heap[m]):
            m = lft
        if rgt < size and _q_before(qt, qs, heap[rgt], heap[m]):
            m = rgt
        if m == i:
            return
        heap[i], heap[m] = heap[m], heap[i]
        i = m


@leaf
def _q_add(Q, seq, t, units, idx, lo, hi):
    """Queue one entry at time t: units[idx[lo:hi]] in that order."""
    qt, qs, qa, qn, heap, pool, meta = Q
    e, f = meta[1], meta[2]
    qt[e], qs[e], qa[e], qn[e] = t, seq[0], f, hi - lo
    seq[0] += 1
    for j in range(lo, hi):
        pool[f] = units[idx[j]]
        f += 1
    meta[1], meta[2] = e + 1, f
    i = meta[0]
    heap[i] = e
    meta[0] = i + 1
    while i > 0:
        p = (i - 1) // 2
        if _q_before(qt, qs, heap[i], heap[p]):
            heap[i], heap[p] = heap[p], heap[i]
            i = p
        else:
            break


@leaf
def _queue(Q, seq, units, when, k, O, T):
    """Queue units[:k] at times when[:k], one entry per distinct time, in time order, each entry's
    units in their order (`FlowRun._queue`: numpy's stable argsort); O, T: k scratch entries."""
    same = True
    for j in range(1, k):
        if when[j] != when[0]:
            same = False
            break
    for j in range(k):
        O[j] = j
    if same:
        _q_add(Q, seq, when[0], units, O, 0, k)
        return
    _stable_order(O, k, when, T)
    lo = 0
    for j in range(1, k + 1):
        if j == k or when[O[j]] != when[O[j - 1]]:
            _q_add(Q, seq, when[O[lo]], units, O, lo, j)
            lo = j


@leaf
def _q_pop(Q):
    """Remove the first entry; returns (its first pool position, its unit count)."""
    qt, qs, qa, qn, heap, pool, meta = Q
    e = heap[0]
    meta[0] -= 1
    heap[0] = heap[meta[0]]
    _q_sift_down(qt, qs, heap, meta[0], 0)
    return qa[e], qn[e]


@leaf
def _stretch(a, c, units, memory):
    """`roofline.stretch` of one gated class: max(a / (1 - units), c / (1 - memory)), 1 without
    time, inf where a resource it needs is wholly taken (numpy's division by zero, without numba's
    ZeroDivisionError)."""
    if not (a > 0 or c > 0):
        return 1.0
    fa, fc = 0.0, 0.0
    if a > 0:
        d = 1.0 - units
        fa = a / d if d != 0.0 else np.inf
    if c > 0:
        d = 1.0 - memory
        fc = c / d if d != 0.0 else np.inf
    return fa if fa >= fc else fc


@leaf
def _regate(grp, H, cap, X):
    """Group grp's largest shares held moved: re-cap its gated classes (`FlowRun._cap_gated`) and
    mark those whose cap moved changed, in class order."""
    gc_order, gc_ptr, c_gate, c_ga, c_gc, c_gr, c_cap, g_units, g_memory = H[11], H[12], H[13], H[14], H[15], \
        H[16], H[17], H[9], H[10]
    stamp, changed, n_changed, ep = X
    for j in range(gc_ptr[grp], gc_ptr[grp + 1]):
        c = gc_order[j]
        before = cap[c]
        st = _stretch(c_ga[c], c_gc[c], g_units[c_gate[c]], g_memory[c_gate[c]])
        r = c_gr[c] / st if np.isfinite(st) else 0.0
        cap[c] = c_cap[c] if c_cap[c] <= r else r
        if cap[c] != before and stamp[c] != ep[0]:
            stamp[c] = ep[0]
            changed[n_changed[0]] = c
            n_changed[0] += 1


@leaf
def _mark(units, H, cap, X):
    """Units arrived: raise and lower their flows' holds; re-cap the gated classes of every group
    whose largest share held moved, groups in ascending order (`FlowRun._mark`)."""
    mark_ptr, mark_idx, mark_delta, hold_count, h_group = H[0], H[1], H[2], H[3], H[4]
    h_units, h_memory, h_order, h_ptr = H[5], H[6], H[7], H[8]
    g_units, g_memory, gstamp, gbuf, owner, last = H[9], H[10], H[18], H[19], H[20], H[21]
    ng = 0
    gstamp[-1] += 1
    for u in units:
        if not last[u]:
            continue
        f = owner[u]
        for e in range(mark_ptr[f], mark_ptr[f + 1]):
            h = mark_idx[e]
            hold_count[h] += mark_delta[e]
            g = h_group[h]
            if gstamp[g] != gstamp[-1]:
                gstamp[g] = gstamp[-1]
                gbuf[ng] = g
                ng += 1
    _sort_values(gbuf, ng, H[22])
    for i in range(ng):
        grp = gbuf[i]
        u, m = 0.0, 0.0
        for j in range(h_ptr[grp], h_ptr[grp + 1]):
            h = h_order[j]
            if hold_count[h] > 0:
                u = max(u, h_units[h])
                m = max(m, h_memory[h])
        if u != g_units[grp] or m != g_memory[grp]:
            g_units[grp], g_memory[grp] = u, m
            _regate(grp, H, cap, X)


@leaf
def _reshare(now, C, F, L, X, n_levels, incremental):
    """New rates where classes changed; re-time the classes whose rate or first unit moved."""
    V, tV, head, nxt, target, hkey, hpos, heap, hsize = C
    (level_size, c_ptr, c_links, c_w, l_ptr, l_cls, l_w, lvl, link_cap, cap, mult, rate, acc, load, lmax,
     before, sc, sl, fc, fl, bc, fep, was_pos) = F
    stamp, changed_buf, n_changed, xs = X
    changed = changed_buf[:n_changed[0]]  # nothing is marked changed until the re-timing is done
    n_changed[0] = 0
    for i in range(len(changed)):
        was_pos[i] = acc[changed[i]] > 0
    nm = _update(changed, n_levels, incremental, level_size, c_ptr, c_links, c_w, l_ptr, l_cls, l_w, lvl,
                 link_cap, cap, mult, rate, acc, load, lmax, before, sc, sl, fc, fl, bc, fep)
    n_pos, busy_since, link_busy = L
    _retime(changed, was_pos, sc[8][:nm], fc[2][:nm], now, rate, acc, c_ptr, c_links, c_w, n_pos, busy_since,
            link_busy, V, tV, head, target, hkey, hpos, heap, hsize, stamp, xs[0])
    xs[0] += 1


@leaf
def _arrivals(now, U, F, X, H, SQ, AQ, seq, holds):
    """Units arriving by now (within SAME_TIME): apply their flows' marks, queue the successors
    that became ready."""
    start, succ_ptr, succ, waiting, ready, t_done = U[2], U[7], U[8], U[9], U[10], U[14]
    W, O, T = U[15], U[17], U[18]
    pool = AQ[5]
    horizon = now * (1 + SAME_TIME)
    while AQ[6][0] > 0 and AQ[0][AQ[4][0]] <= horizon:
        a, n = _q_pop(AQ)
        units = pool[a:a + n]
        for u in units:
            t_done[u] = now
        if holds:
            _mark(units, H, F[9], X)
        k = _release(units, succ_ptr, succ, waiting, ready)
        if k:
            for j in range(k):
                s = start[ready[j]]
                W[j] = now if now >= s else s  # np.maximum(now, s)
            _queue(SQ, seq, ready, W, k, O, T)


@leaf
def _starts(now, U, C, F, X, SQ, AQ, seq):
    """Units starting by now (within SAME_TIME): empty ones arrive after their latency, the
    others join their classes."""
    size, lat, hops, cls_of, t_start, t_sent = U[0], U[1], U[3], U[4], U[12], U[13]
    W, B, O, T = U[15], U[16], U[17], U[18]
    V, tV, head, nxt, target = C[0], C[1], C[2], C[3], C[4]
    rate, mult = F[11], F[10]
    stamp, changed, n_changed, xs = X
    pool = SQ[5]
    horizon = now * (1 + SAME_TIME)
    while SQ[6][0] > 0 and SQ[0][SQ[4][0]] <= horizon:
        a, n = _q_pop(SQ)
        units = pool[a:a + n]
        ne = 0
        for u in units:
            t_start[u] = now
            if hops[u] == 0 or size[u] == 0:
                t_sent[u] = now
                B[ne] = u
                W[ne] = now + lat[u]
                ne += 1
        if ne:
            _queue(AQ, seq, B, W, ne, O, T)
        if ne < n:
            j = 0
            for u in units:
                if not (hops[u] == 0 or size[u] == 0):
                    B[j] = u
                    j += 1
            xs[1] += j
            _start_units(B[:j], cls_of, size, now, rate, mult, V, tV, head, nxt, target, stamp, xs[0], changed,
                         n_changed)


@leaf
def run_events(U, C, F, L, X, H, SQ, AQ, seq, n_levels, incremental, holds):
    """Run the queued units to completion (`FlowRun.run_stepwise`). Returns (status, events):
    status 0 when done, STALLED when units still send but none ever finishes (rate 0)."""
    size, lat, t_sent, done, W, O, T = U[0], U[1], U[13], U[11], U[15], U[17], U[18]
    V, tV, head, nxt, target, hkey, hpos, heap, hsize = C
    rate, mult = F[11], F[10]
    stamp, changed, n_changed, xs = X
    events = 0
    now = 0.0
    while SQ[6][0] > 0 or AQ[6][0] > 0 or xs[1] > 0:
        if n_changed[0]:
            _reshare(now, C, F, L, X, n_levels, incremental)
        t = _next_finish(hkey, heap, hsize)
        if SQ[6][0] > 0 and SQ[0][SQ[4][0]] < t:  # min(t, ...): the first of equal values
            t = SQ[0][SQ[4][0]]
        if AQ[6][0] > 0 and AQ[0][AQ[4][0]] < t:
            t = AQ[0][AQ[4][0]]
        if not np.isfinite(t):
            return STALLED, events
        now = t
        events += 1
        nd = _finish_due(now, now * (1 + SAME_TIME) + 1e-18, size, rate, mult, V, tV, head, nxt, target, hkey,
                         hpos, heap, hsize, stamp, xs[0], changed, n_changed, done)
        if nd:
            xs[1] -= nd
            for j in range(nd):
                t_sent[done[j]] = now
                W[j] = now + lat[done[j]]
            _queue(AQ, seq, done, W, nd, O, T)
        _arrivals(now, U, F, X, H, SQ, AQ, seq, holds)
        _starts(now, U, C, F, X, SQ, AQ, seq)
    return 0, events
