"""ASTRA-sim emulation, compiled, part 2: the system layer's queues (`emu_system.Sys`), the
workload layer (`workload.NpuWorkload`) and the event loop, over the state layout and message path
of `emu_kernel` (see its doc); `emulate` lays the state out and runs it."""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.typed import Dict, List

from . import emu_kernel
from .emu_kernel import (  # the layout and the message path
    C_AR, D_DUR, D_KIND, D_NPU, D_RES, D_TMPL, EV_ARRIVED, EV_CALL, EV_HOP,
    EV_NODE_DONE, EV_RECV_CB, HEADER, K_COMP, K_META, K_REPLAY, ND, NH, NQ, NR, NS, NT, O_CHLIST,
    O_CHSTART, O_DS, O_END, O_HEAP, O_ISSUED, O_LINK, O_NODE, O_NPU, O_PHASE, O_POOL, O_RUNNING, O_SLOT, O_ST,
    O_TPSTART, O_WAIT, O_WAITING, O_WFREE, P_ACTIVE, P_DIMS, P_FREE, P_LIFO, P_NPUS, P_READY, P_SPLITS, R_COMM,
    R_COMM_OPEN, R_COMM_SINCE, R_COMPUTE, R_FINISH, R_INFLIGHT, R_NSTART, R_NSTREAMS, R_PRI, R_RUNNING, R_SBASE,
    SE_GENERAL, SE_MEM, SE_NODE_DONE, SE_REPLAY_DONE, ST_OK, S_EVENTS, S_HN, S_NOW, S_PLFREE, S_SLFREE, S_STATUS,
    S_WFREE, T_COLL, T_DIRECT, T_FREE, T_INIT, T_N, T_NODE, T_NPU, T_PAR, T_PH, T_PHEND, T_PRI, T_QUEUE, T_RECV,
    T_RECV_PEER, T_SC, T_SEND_PEER, T_SID, _K4, arrived, drop_slot, hop, link_start, load_phase, pop_root, push,
    register, ring_insert, ring_ready, give,
)


# ---- the system layer's queues (emu_system.Sys) ----

@njit(cache=True)
def insert_stream(M, lst, g):
    """Sys.insert_stream: after every started stream and every stream of at least its priority."""
    ost = M[O_ST]
    pri = M[ost + g * NT + T_PRI]
    i = 0
    while i < len(lst):
        s = lst[i]
        if M[ost + s * NT + T_INIT] == 1 or M[ost + s * NT + T_PRI] >= pri:
            i += 1
            continue
        break
    lst.insert(i, g)


@njit(cache=True)
def notify_added(M, F, L, npu, q):
    """Sys.notify_added: start waiting streams of the queue while fewer than active-chunks run."""
    lst = L[npu * M[P_DIMS] + q]
    rq = M[O_RUNNING] + npu * M[P_DIMS] + q
    i = M[rq]
    while i < len(lst) and M[rq] < M[P_ACTIVE]:
        g = lst[i]
        o = M[O_ST] + g * NT
        M[o + T_INIT] = 1
        for _ in range(M[o + T_PAR]):  # the algorithm hears "init"
            ring_insert(M, F, g)
        M[rq] += 1
        i += 1


@njit(cache=True)
def schedule(M, F, L, npu):
    """Sys.schedule: every new stream of the ready list enters its first phase's queue."""
    rl = L[M[P_READY] + npu]
    while len(rl) > 0:
        g = rl[0]
        load_phase(M, g)
        o = M[O_ST] + g * NT
        M[o + T_INIT] = 0
        insert_stream(M, L[npu * M[P_DIMS] + M[o + T_QUEUE]], g)
        notify_added(M, F, L, npu, M[o + T_QUEUE])
        rl.pop(0)


# ---- the workload layer (workload.NpuWorkload) ----

@njit(cache=True)
def generate(M, F, L, npu, node):
    """Sys.generate: the collective's `splits` streams join the ready list and are scheduled."""
    orow = M[O_NPU] + npu * NR
    tm = M[M[O_NODE] + node * ND + D_TMPL]
    pri = M[orow + R_PRI]
    M[orow + R_PRI] += 1 if M[P_LIFO] == 1 else -1
    for _ in range(M[P_SPLITS]):
        sid = M[orow + R_NSTREAMS]
        M[orow + R_NSTREAMS] = sid + 1
        g = M[orow + R_SBASE] + sid
        o = M[O_ST] + g * NT
        M[o + T_NPU], M[o + T_SID], M[o + T_NODE], M[o + T_PRI] = npu, sid, node, pri
        M[o + T_QUEUE], M[o + T_INIT] = -1, 0
        M[o + T_SEND_PEER] = M[o + T_RECV_PEER] = -1
        M[o + T_PH], M[o + T_PHEND] = M[M[O_TPSTART] + tm], M[M[O_TPSTART] + tm + 1]
        insert_stream(M, L[M[P_READY] + npu], g)
        schedule(M, F, L, npu)


# ---- ready nodes of an NPU: one min-heap of ids per resource (none, gpu, cpu, comm), so that an
# event looks at each lane's head, not at every waiting node (a wide graph: linear, not quadratic) ----

NLANES = 4  # lane = resource + 1: -1 none (metadata, receives), 0 gpu, 1 cpu, 2 comm


@njit(cache=True)
def lane_push(h, x):
    """Push node id x on the min-heap h (a typed list)."""
    h.append(x)
    i = len(h) - 1
    while i > 0:
        up = (i - 1) >> 1
        if h[up] <= x:
            break
        h[i] = h[up]
        i = up
    h[i] = x


@njit(cache=True)
def lane_pop(h):
    """Pop the least node id of the min-heap h (non-empty)."""
    top = h[0]
    last = h.pop()
    n = len(h)
    if n:
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and h[c + 1] < h[c]:
                c += 1
            if h[c] >= last:
                break
            h[i] = h[c]
            i = c
        h[i] = last
    return top


@njit(cache=True)
def lanes_empty(M, L, npu):
    """Whether the NPU has no ready node waiting."""
    base = M[P_FREE] + npu * NLANES
    for k in range(NLANES):
        if len(L[base + k]) > 0:
            return False
    return True


@njit(cache=True)
def issue_free(M, F, L, npu):
    """NpuWorkload.issue_free: issue every ready node whose resource is free, in ascending id: every
    node holding no resource and the least of each resource's lane whose resource is idle."""
    base = M[P_FREE] + npu * NLANES
    orow = M[O_NPU] + npu * NR
    now = M[S_NOW]
    todo = List.empty_list(types.int64)
    none = L[base]
    while len(none) > 0:
        todo.append(lane_pop(none))
    for res in range(NLANES - 1):
        lane = L[base + res + 1]
        if len(lane) > 0 and M[orow + R_INFLIGHT + res] == 0:
            c = lane_pop(lane)
            todo.append(c)
            i = len(todo) - 1
            while i > 0 and todo[i - 1] > c:  # ascending: at most three heads placed
                todo[i] = todo[i - 1]
                i -= 1
            todo[i] = c
    for j in range(len(todo)):
        nd = todo[j]
        on = M[O_NODE] + nd * ND
        res = M[on + D_RES]
        M[M[O_ISSUED] + nd] = 1
        if res >= 0:
            M[orow + R_INFLIGHT + res] += 1
        M[orow + R_RUNNING] += 1
        kind = M[on + D_KIND]
        if kind == K_META:
            push(M, now, EV_NODE_DONE, nd, 0, 0)
        elif kind == K_COMP:
            if res == 0:
                M[orow + R_COMPUTE] += M[on + D_DUR]
            register(M, npu, SE_NODE_DONE, nd, 0, M[on + D_DUR])
        else:
            if M[orow + R_COMM_OPEN] == 0:
                M[orow + R_COMM_SINCE] = now
            M[orow + R_COMM_OPEN] += 1
            if kind == K_REPLAY:
                register(M, npu, SE_REPLAY_DONE, nd, 0, M[on + D_DUR])
            else:
                generate(M, F, L, npu, nd)


@njit(cache=True)
def comm_end(M, npu):
    """A communication node of the NPU ended: its time with communication in flight grows."""
    orow = M[O_NPU] + npu * NR
    M[orow + R_COMM_OPEN] -= 1
    if M[orow + R_COMM_OPEN] == 0:
        M[orow + R_COMM] += M[S_NOW] - M[orow + R_COMM_SINCE]


@njit(cache=True)
def finished(M, F, L, nd):
    """NpuWorkload.finished: free the node's resource, issue what became ready, note the finish."""
    on = M[O_NODE] + nd * ND
    npu = M[on + D_NPU]
    res = M[on + D_RES]
    orow = M[O_NPU] + npu * NR
    if res >= 0:
        M[orow + R_INFLIGHT + res] -= 1
    M[orow + R_RUNNING] -= 1
    base = M[P_FREE] + npu * NLANES
    ow, oc = M[O_WAITING], M[O_CHSTART]
    for j in range(M[oc + nd], M[oc + nd + 1]):
        c = M[M[O_CHLIST] + j]
        M[ow + c] -= 1
        if M[ow + c] == 0:  # into its resource's lane
            lane_push(L[base + M[M[O_NODE] + c * ND + D_RES] + 1], c)
    issue_free(M, F, L, npu)
    if lanes_empty(M, L, npu) and M[orow + R_RUNNING] == 0 and M[orow + R_FINISH] < 0:
        M[orow + R_FINISH] = M[S_NOW]


@njit(cache=True)
def proceed(M, F, L, g):
    """Sys.proceed for a stream whose phase ended: the next phase, or its collective hears it finished."""
    o = M[O_ST] + g * NT
    npu = M[o + T_NPU]
    dims = M[P_DIMS]
    prev = M[o + T_QUEUE]
    last = M[o + T_PH] == M[o + T_PHEND]
    if last:
        node = M[o + T_NODE]
        od = M[O_DS] + 2 * node
        M[od] += 1
        if M[od + 1] == 0 and M[od] >= M[P_SPLITS]:
            M[od + 1] = 1
            comm_end(M, npu)
            finished(M, F, L, node)
    if prev >= 0:
        lst = L[npu * dims + prev]
        for i in range(len(lst)):
            if lst[i] == g:
                lst.pop(i)
                break
    if not last:
        load_phase(M, g)
        M[o + T_INIT] = 0
        insert_stream(M, L[npu * dims + M[o + T_QUEUE]], g)
    if prev >= 0:
        M[M[O_RUNNING] + npu * dims + prev] -= 1
        schedule(M, F, L, npu)
        notify_added(M, F, L, npu, prev)
    if not last:
        notify_added(M, F, L, npu, M[o + T_QUEUE])


@njit(cache=True)
def ring_general(M, F, keys, L, g):
    """Ring.run("general"): a bundle is back from the memory bus."""
    o = M[O_ST] + g * NT
    M[o + T_FREE] += 1
    n = M[o + T_N]
    if M[o + T_DIRECT] == 1 and M[o + T_COLL] == C_AR and M[o + T_SC] <= n - 1:
        if M[o + T_RECV] < n - 1:
            return
        for _ in range(M[o + T_PAR]):
            ring_ready(M, F, keys, g)
    else:
        ring_ready(M, F, keys, g)
    if M[o + T_SC] == 0 and M[o + T_FREE] == M[o + T_PAR]:
        proceed(M, F, L, g)


@njit(cache=True)
def run_events(M, F, keys, L):
    """Fire every NPU, then run events in (tick, insertion) order until none is left."""
    for npu in range(M[P_NPUS]):
        issue_free(M, F, L, npu)
        orow = M[O_NPU] + npu * NR
        if lanes_empty(M, L, npu) and M[orow + R_RUNNING] == 0 and M[orow + R_FINISH] < 0:
            M[orow + R_FINISH] = 0
    oh = M[O_HEAP]
    while M[S_HN] > 0 and M[S_STATUS] == ST_OK:
        tick, kind, a, b, c = M[oh], M[oh + 2], M[oh + 3], M[oh + 4], M[oh + 5]
        pop_root(M)
        M[S_NOW] = tick
        M[S_EVENTS] += 1
        if kind == EV_CALL:  # NPU a's list for tick b (slot c), with what it appends meanwhile
            op = M[O_POOL]
            e = M[M[O_SLOT] + NS * c]
            while e >= 0:
                sk, x = M[op + 4 * e + 1], M[op + 4 * e + 2]
                if sk == SE_GENERAL:
                    ring_general(M, F, keys, L, x)
                elif sk == SE_MEM:
                    register(M, a, SE_GENERAL, x, 0, M[op + 4 * e + 3])
                elif sk == SE_NODE_DONE:
                    finished(M, F, L, x)
                else:
                    comm_end(M, a)
                    finished(M, F, L, x)
                e = M[op + 4 * e]
            drop_slot(M, a, c)
        elif kind == EV_ARRIVED:
            arrived(M, F, a, b)
        elif kind == EV_RECV_CB:
            M[M[O_ST] + a * NT + T_RECV] += 1
            ring_insert(M, F, a)
        elif kind == EV_NODE_DONE:
            finished(M, F, L, a)
        elif kind == EV_HOP:
            hop(M, F, a, b, c)
        else:  # EV_LINK_FREE: the link's busy period ends here; the next in line starts
            ol = M[O_LINK] + 3 * a
            M[ol] = 0
            x = M[ol + 1]
            if x >= 0:
                ow = M[O_WAIT] + 4 * x
                M[ol + 1] = M[ow]
                give(M, O_WFREE, S_WFREE, x)
                link_start(M, F, a, M[ow + 1], M[ow + 2], M[ow + 3])


@njit(cache=True)
def _containers(M):
    """L (dimension queues, ready lists, then per NPU its `NLANES` lanes of free nodes) and the map of message keys."""
    n_npus, dims = M[P_NPUS], M[P_DIMS]
    L = List()
    for _ in range(n_npus * dims + n_npus):
        L.append(List.empty_list(types.int64))
    for r in range(n_npus):
        lanes = List()
        for _ in range(NLANES):
            lanes.append(List.empty_list(types.int64))
        first = M[M[O_NPU] + r * NR + R_NSTART]
        end = M[M[O_NPU] + (r + 1) * NR + R_NSTART] if r + 1 < n_npus else (M[O_ISSUED] - M[O_WAITING])
        for i in range(first, end):
            if M[M[O_WAITING] + i] == 0:  # ascending: each lane a sorted list, a valid heap
                lanes[M[M[O_NODE] + i * ND + D_RES] + 1].append(i)
        for lane in lanes:
            L.append(lane)
    keys = Dict.empty(key_type=_K4, value_type=types.int64)
    return keys, L


@njit(cache=True)
def run(M, F):
    """Build the containers and run every event (`emulate`)."""
    keys, L = _containers(M)
    run_events(M, F, keys, L)


def emulate(sections: dict, scalars: dict, floats: np.ndarray) -> tuple:
    """Lay the state out in M and run every NPU's workload to the end (module doc).

    Parameters
    ----------
    sections : dict
        Name -> int64 array (flattened row by row) for every O_* section but the ones made here
        from capacities: "npu" (rows of NR), "node" (rows of ND), "waiting", "phase" (rows of NP),
        "tpstart", "chstart", "chlist", "net" (rows of kind, NPUs, stride), and "streams", "links"
        (row counts) and "caps" (heap, pool, slots, keys, waiters).
    scalars : dict
        P_* name (without the prefix, lower case) -> int: npus, dims, splits, active, edelay,
        lifo, aware, awn, awkind.
    floats : tuple of float
        F: local-mem-bw, aware latency, aware bytes/ns, then per dimension bytes/ns, ns per hop
        (MAX_DIMS dimensions, zeros past the network's).

    Returns
    -------
    tuple
        (status: 0 done, 1-5 the capacity `CAP_NAMES[status - 1]` ran out, 9 broken; events run;
        per-NPU rows [NPUs, NR] (R_FINISH -1: never finished); the issued flag of every node).
    """
    hcap, pcap, scap, kcap, wcap = (int(c) for c in sections["caps"])
    n_nodes = sections["waiting"].size
    links = np.zeros((sections["links"], 3), np.int64)
    links[:, 1:] = -1
    parts = [
        np.zeros(hcap * NH, np.int64), np.zeros(scap * NS, np.int64), np.arange(scap - 1, -1, -1, dtype=np.int64),
        np.zeros(pcap * 4, np.int64), np.arange(pcap - 1, -1, -1, dtype=np.int64),
        np.zeros(sections["streams"] * NT, np.int64), np.zeros(kcap * NQ, np.int64), links.ravel(),
        np.zeros(wcap * 4, np.int64), np.arange(wcap - 1, -1, -1, dtype=np.int64),
        np.zeros(scalars["npus"] * scalars["dims"], np.int64), sections["npu"].ravel(), sections["node"].ravel(),
        sections["waiting"], np.zeros(n_nodes, np.int64), sections["phase"].ravel(), sections["tpstart"],
        sections["chstart"], sections["chlist"], np.zeros(n_nodes * 2, np.int64), sections["net"].ravel(),
    ]
    M = np.zeros(HEADER + sum(p.size for p in parts), np.int64)
    at = HEADER
    for i, p in enumerate(parts):
        M[i] = at
        M[at:at + p.size] = p
        at += p.size
    M[O_END] = at
    for name in ("npus", "dims", "splits", "active", "edelay", "lifo", "aware", "awn", "awkind"):
        M[getattr(emu_kernel, "P_" + name.upper())] = scalars[name]
    M[S_SLFREE], M[S_PLFREE], M[S_WFREE] = scap, pcap, wcap
    M[P_READY] = scalars["npus"] * scalars["dims"]
    M[P_FREE] = M[P_READY] + scalars["npus"]
    run(M, floats)
    rows = M[M[O_NPU]:M[O_NODE]].reshape(-1, NR)
    return int(M[S_STATUS]), int(M[S_EVENTS]), rows, M[M[O_ISSUED]:M[O_PHASE]]
