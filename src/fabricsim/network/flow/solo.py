"""Units that never meet on a link: the flow model's answer without its event loop.

When no two units of a flow simulation send on one link at the same time, max-min fairness has
nothing to share: every unit sends at its solo rate, min(cap, bandwidth / weight on each of its
links), from when its last predecessor arrives, and the simulation is a longest-path pass over the
dependency graph. `solo_run` makes that pass (topological order), then proves its premise by a
sweep in start order that keeps, per link, when its last unit stops sending: a unit that starts
before then (beyond the event loop's own merge tolerance, `flow.loop.SAME_TIME`) means two units
meet, and the caller runs the event loop instead. So the answer is the event loop's, exactly as
far as the loop itself is exact (it merges events within SAME_TIME), at O(units + route entries)
plus one sort: a rank-order ring on a 2-D torus, whose every transfer finishes at its own time
(16,384 ranks: 2 M orbit flows, 2 M events), costs a pass instead of an event each.

Holds (endpoint interference) change caps while flows run, and a timeline needs the loop's
intervals: `simulate_flows` asks this only without either.
"""

from __future__ import annotations

import numpy as np

from ...kernels import kernel, load
from .loop import SAME_TIME


@kernel
def _down(heap, size, i, key):
    """Sift heap[i] down in a binary heap of ids ordered by (key, id)."""
    while True:
        lft, rgt, m = 2 * i + 1, 2 * i + 2, i
        if lft < size and (key[heap[lft]] < key[heap[m]] or (key[heap[lft]] == key[heap[m]] and heap[lft] < heap[m])):
            m = lft
        if rgt < size and (key[heap[rgt]] < key[heap[m]] or (key[heap[rgt]] == key[heap[m]] and heap[rgt] < heap[m])):
            m = rgt
        if m == i:
            return
        heap[i], heap[m] = heap[m], heap[i]
        i = m


@kernel
def _heap(key):
    """A binary heap of ids 0..len(key)-1 ordered by (key, id): popped, the ids come in the order
    of a stable sort by key (the sweep needs no more than its first conflict: a training run's
    flows meet within its first few)."""
    heap = np.arange(len(key))
    for i in range(len(key) // 2 - 1, -1, -1):
        _down(heap, len(key), i, key)
    return heap


@kernel
def _solo(ptr, links, weight, bw, size, cap, start0, lat, dep_ptr, dep_idx, succ_ptr, succ, tol):
    """(ok, t_start, t_sent, t_done, link_busy, events); ok False when two units meet on a link
    or the dependencies have a cycle (the event loop then reports it)."""
    n = len(size)
    n_links = len(bw)
    rate = np.empty(n)
    seen = np.full(n_links, -1, np.int64)  # the unit that last touched each link (stamps: O(route))
    load = np.zeros(n_links)
    for u in range(n):  # solo rate: a link listed twice on a route carries both weights
        for e in range(ptr[u], ptr[u + 1]):
            ln = links[e]
            if seen[ln] != u:
                seen[ln] = u
                load[ln] = 0.0
            load[ln] += weight[e]
        r = cap[u]
        for e in range(ptr[u], ptr[u + 1]):
            if load[links[e]] > 0.0:
                r = min(r, bw[links[e]] / load[links[e]])
        rate[u] = r
    t_start, t_sent, t_done = np.empty(n), np.empty(n), np.empty(n)
    ready_at = start0.copy()
    waiting = np.empty(n, np.int64)
    queue = np.empty(n, np.int64)
    tail = 0
    for u in range(n):
        waiting[u] = dep_ptr[u + 1] - dep_ptr[u]
        if waiting[u] == 0:
            queue[tail] = u
            tail += 1
    head = 0
    while head < tail:  # Kahn: every unit after all its predecessors
        u = queue[head]
        head += 1
        s = ready_at[u]
        t_start[u] = s
        moves = size[u] > 0.0 and ptr[u + 1] > ptr[u]
        if moves and not rate[u] > 0.0:
            return False, t_start, t_sent, t_done, np.zeros(n_links), 0
        t_sent[u] = s + size[u] / rate[u] if moves else s
        t_done[u] = t_sent[u] + lat[u]
        for k in range(succ_ptr[u], succ_ptr[u + 1]):
            v = succ[k]
            if t_done[u] > ready_at[v]:
                ready_at[v] = t_done[u]
            waiting[v] -= 1
            if waiting[v] == 0:
                queue[tail] = v
                tail += 1
    if tail < n:
        return False, t_start, t_sent, t_done, np.zeros(n_links), 0
    busy_until = np.full(n_links, -np.inf)
    link_busy = np.zeros(n_links)
    heap = _heap(t_start)  # units in start order (a stable sort's), popped one by one: a conflict stops early
    for left in range(n, 0, -1):  # the sweep: no unit starts on a link still in use
        u = heap[0]
        heap[0] = heap[left - 1]
        _down(heap, left - 1, 0, t_start)
        if not (size[u] > 0.0 and ptr[u + 1] > ptr[u]):
            continue
        horizon = t_start[u] * (1.0 + tol) + 1e-18
        for e in range(ptr[u], ptr[u + 1]):
            if busy_until[links[e]] > horizon:
                return False, t_start, t_sent, t_done, link_busy, 0
        for e in range(ptr[u], ptr[u + 1]):
            ln = links[e]
            if seen[ln] != n + u:  # once per distinct link of the unit
                seen[ln] = n + u
                busy_until[ln] = t_sent[u]
                link_busy[ln] += t_sent[u] - t_start[u]
    # events as the loop counts them: times within its merge tolerance of an event are that event
    times = np.concatenate((t_start, t_sent, t_done))
    times.sort()
    events = 0
    edge = -np.inf
    for t in times:
        if t > edge:
            events += 1
            edge = t * (1.0 + tol) + 1e-18
    return True, t_start, t_sent, t_done, link_busy, events


def solo_run(topo, U, succ_ptr: np.ndarray, succ: np.ndarray):
    """The event loop's result for units that never share a link while sending, or None.

    Parameters
    ----------
    topo : Topology
        The network (link bandwidths, bytes/s).
    U : flow._Units
        The units of the simulation (routes, sizes in bytes, caps in bytes/s, latencies in s,
        dependencies).
    succ_ptr, succ : int64 arrays
        The units' successors (CSR), `flow.successors` of their dependencies.

    Returns
    -------
    tuple or None
        (t_start, t_sent, t_done per unit in s, link_busy per link in s, events, ()) as
        `FlowRun.run` returns them; None when two units meet on a link (or the dependencies have
        a cycle): run the event loop.
    """
    n = len(U.size)
    if n == 0:
        return None
    weight = np.ones(len(U.links)) if U.weight is None else np.ascontiguousarray(U.weight, dtype=float)
    solo = load("fabricsim.network.flow.solo", ("_solo",), n + len(U.links), "the flow model's kernels")._solo
    ok, t_start, t_sent, t_done, busy, events = solo(
        np.ascontiguousarray(U.ptr, dtype=np.int64), np.ascontiguousarray(U.links, dtype=np.int64), weight,
        np.ascontiguousarray(topo.link_bw, dtype=float), np.ascontiguousarray(U.size, dtype=float),
        np.ascontiguousarray(U.cap, dtype=float), np.ascontiguousarray(U.start, dtype=float),
        np.ascontiguousarray(U.lat, dtype=float), np.ascontiguousarray(U.dep_ptr, dtype=np.int64),
        np.ascontiguousarray(U.dep_idx, dtype=np.int64), np.ascontiguousarray(succ_ptr, dtype=np.int64),
        np.ascontiguousarray(succ, dtype=np.int64), SAME_TIME)
    if not ok:
        return None
    return t_start, t_sent, t_done, busy, int(events), ()
