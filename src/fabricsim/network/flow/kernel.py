"""Compiled bookkeeping of the flow model's event loop (`network.flow.loop`): which unit of which
class finishes sending next.

Every class has a virtual clock V (bytes one of its units has sent since the class began; it
advances at the class's rate) and its sending units in a list sorted by *target*, the value of V
at which each finishes (V at its start + its size). The classes' next finishes sit in one indexed
binary heap keyed by time, updated in place when a class's rate or first unit changes, so an
event costs O(changed classes x log classes) and no stale entries pile up (they did with Python's
heapq: 1.3 M pops, 15% of a 400-rank run). numba compiles it; the arrays live in `FlowRun`.
"""

from __future__ import annotations

import numpy as np

from .leaf import leaf

# the state arrays, in the order every function takes them (see `new_state`)
#   V, tV            float [classes]: virtual clock and when it was last brought up to date
#   head             int [classes]: first unit of the class's sorted list (-1: none)
#   nxt              int [units]: next unit in its class's list (-1: last)
#   target           float [units]: V at which the unit has sent its last byte
#   hkey, hpos, heap, hsize: indexed heap of classes by predicted finish (hpos -1: not in it)


def new_state(n_classes: int, n_units: int):
    """Empty bookkeeping arrays for `n_classes` classes and `n_units` units (module doc)."""
    return (np.zeros(n_classes), np.zeros(n_classes), np.full(n_classes, -1, np.int64),
            np.full(n_units, -1, np.int64), np.zeros(n_units),
            np.full(n_classes, np.inf), np.full(n_classes, -1, np.int64), np.zeros(n_classes, np.int64),
            np.zeros(1, np.int64))


@leaf
def _swap(heap, hpos, i, j):
    a, b = heap[i], heap[j]
    heap[i], heap[j] = b, a
    hpos[b], hpos[a] = i, j


@leaf
def _sift(hkey, hpos, heap, hsize, i):
    """Restore the heap property around position i (up, then down)."""
    while i > 0:
        p = (i - 1) // 2
        if hkey[heap[i]] < hkey[heap[p]]:
            _swap(heap, hpos, i, p)
            i = p
        else:
            break
    n = hsize[0]
    while True:
        lft, rgt, m = 2 * i + 1, 2 * i + 2, i
        if lft < n and hkey[heap[lft]] < hkey[heap[m]]:
            m = lft
        if rgt < n and hkey[heap[rgt]] < hkey[heap[m]]:
            m = rgt
        if m == i:
            break
        _swap(heap, hpos, i, m)
        i = m


@leaf
def _set_key(c, t, hkey, hpos, heap, hsize):
    """Class c's next finish is at t (inf: none): insert, move or remove it in the heap."""
    if t == np.inf:
        i = hpos[c]
        if i < 0:
            return
        last = hsize[0] - 1
        _swap(heap, hpos, i, last)
        hsize[0] = last
        hpos[c] = -1
        hkey[c] = np.inf
        if i < last:
            _sift(hkey, hpos, heap, hsize, i)
        return
    hkey[c] = t
    if hpos[c] < 0:
        i = hsize[0]
        heap[i] = c
        hpos[c] = i
        hsize[0] = i + 1
    _sift(hkey, hpos, heap, hsize, hpos[c])


@leaf
def next_finish(hkey, heap, hsize):
    """Time of the next finish of any class, s (inf: none sending)."""
    return hkey[heap[0]] if hsize[0] > 0 else np.inf


@leaf
def start_units(units, cls_of, size, now, rate, mult, V, tV, head, nxt, target, stamp, ep, changed, n_changed):
    """Units start sending now: each joins its class's sorted list; their classes are changed."""
    for u in units:
        c = cls_of[u]
        # an idle class restarts its clock at 0: V stays small (precision) and a class's units
        # are timed alike whatever ran in it before
        V[c] = V[c] + rate[c] * (now - tV[c]) if head[c] >= 0 else 0.0
        tV[c] = now
        t = V[c] + size[u]
        target[u] = t
        h = head[c]
        if h < 0 or t < target[h]:
            nxt[u] = h
            head[c] = u
        else:
            p = h
            while nxt[p] >= 0 and target[nxt[p]] <= t:
                p = nxt[p]
            nxt[u] = nxt[p]
            nxt[p] = u
        mult[c] += 1
        if stamp[c] != ep:
            stamp[c] = ep
            changed[n_changed[0]] = c
            n_changed[0] += 1


@leaf
def finish_due(now, horizon, size, rate, mult, V, tV, head, nxt, target, hkey, hpos, heap, hsize, stamp, ep,
               changed, n_changed, done):
    """Units of classes due by `horizon` that have sent their last byte; returns how many (in done)."""
    nd = 0
    while hsize[0] > 0 and hkey[heap[0]] <= horizon:
        c = heap[0]
        V[c] += rate[c] * (now - tV[c])
        tV[c] = now
        slack = rate[c] * (horizon - now)
        u = head[c]
        while u >= 0 and target[u] - V[c] <= max(slack, 1e-9 * max(size[u], 1.0)):
            done[nd] = u
            nd += 1
            mult[c] -= 1
            u = nxt[u]
        head[c] = u
        _set_key(c, np.inf, hkey, hpos, heap, hsize)  # re-timed after the re-share
        if stamp[c] != ep:
            stamp[c] = ep
            changed[n_changed[0]] = c
            n_changed[0] += 1
    return nd


@leaf
def retime(changed, was_pos, moved, old, now, rate, acc, c_ptr, c_links, c_w, n_pos, busy_since, link_busy,
           V, tV, head, target, hkey, hpos, heap, hsize, stamp, ep):
    """After a re-share at `now`: bring the clocks of classes whose rate moved to now at their old
    rate, account busy time on links whose sending classes changed, re-time those classes.
    `changed` are the classes stamped `ep` in `stamp`."""
    for i in range(len(moved)):
        c = moved[i]
        V[c] += old[i] * (now - tV[c])
        tV[c] = now
    for c in changed:  # changed, rate kept (a cap moved without effect): its clock too
        V[c] += rate[c] * (now - tV[c])
        tV[c] = now
    for k in range(2):
        lst = changed if k == 0 else moved
        for i in range(len(lst)):
            c = lst[i]
            if k == 1:  # a class both changed and moved counts once, as changed
                if stamp[c] == ep:
                    continue
                before = old[i] > 0
            else:
                before = was_pos[i]
            after = acc[c] > 0
            if after != before:
                d = 1 if after else -1
                for e in range(c_ptr[c], c_ptr[c + 1]):
                    if c_w[e] > 0:
                        lk = c_links[e]
                        was = n_pos[lk] > 0
                        n_pos[lk] += d
                        if was and n_pos[lk] == 0:
                            link_busy[lk] += now - busy_since[lk]
                        elif not was and n_pos[lk] > 0:
                            busy_since[lk] = now
            h = head[c]
            t = now + (target[h] - V[c]) / rate[c] if h >= 0 and rate[c] > 0 else np.inf
            _set_key(c, t, hkey, hpos, heap, hsize)


@leaf
def release(units, succ_ptr, succ, waiting, ready):
    """Units arrived: their successors wait for one fewer; returns how many became ready (listed
    in `ready`, each once: a count reaches 0 once)."""
    n = 0
    for u in units:
        for e in range(succ_ptr[u], succ_ptr[u + 1]):
            s = succ[e]
            waiting[s] -= 1
            if waiting[s] == 0:
                ready[n] = s
                n += 1
    return n


@leaf
def stable_order(idx, n, keys, tmp):
    """Sort idx[:n] in place by keys[idx] ascending, equal keys kept in their order: a bottom-up
    merge sort through tmp (n entries), allocating nothing. Stable, so it gives numpy's stable
    argsort order exactly (keys without NaN)."""
    width, in_tmp = 1, False
    while width < n:
        src, dst = (tmp, idx) if in_tmp else (idx, tmp)
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j < hi and (i >= mid or keys[src[j]] < keys[src[i]]):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        for k in range(n):
            idx[k] = tmp[k]


@leaf
def sort_values(a, n, tmp):
    """Sort a[:n] ascending in place (a merge sort through tmp, n entries; allocating nothing).
    `stable_order`'s merge on the values themselves: one helper for both would need an index array
    (an allocation) or a branch in the innermost comparison."""
    width, in_tmp = 1, False
    while width < n:
        src, dst = (tmp, a) if in_tmp else (a, tmp)
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):
                if j < hi and (i >= mid or src[j] < src[i]):
                    dst[k] = src[j]
                    j += 1
                else:
                    dst[k] = src[i]
                    i += 1
        in_tmp = not in_tmp
        width *= 2
    if in_tmp:
        for k in range(n):
            a[k] = tmp[k]
