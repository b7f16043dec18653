"""ASTRA-sim emulation, compiled: the event core of `emu_events`, `emu_system`, `emu_ring` (ring and
direct), both networks of `emu_network` and the workload layer of `workload`, written out over arrays
for numba, for the runs mirror mode cannot serve (graphs that differ per NPU: N^2 messages for a
ring over N NPUs, 4.9 us each in Python). The Python emulation stays the reference: `emu_compiled`
decides what this core serves and tests compare the two on every field of every NPU.

How the Python objects map here (same order of everything, so the same ticks):
- `EventQueue`'s per-tick lists are one binary heap keyed by (tick, insertion number);
- `Sys.register_event`'s per-NPU tick lists are linked lists in a pool; each NPU keeps its few lists
  for ticks to come in a chain, scanned for the tick;
- a `Stream` and its current phase's `Ring`/`Direct` are one row of the stream arrays (an algorithm's
  state is built when its phase starts, which is where the Python object is first used);
- `Tracker` matching: messages of one (tag, src, dst, size) arrive in the order they were sent (same
  delay, or the same FIFO links), so per key three counters (sent, arrived, receives posted) stand
  for its entries, and the receiving stream is the destination's stream with that tag;
- a congestion-aware link's reserved end of busy is an event that frees the link when it runs.
All integer state is one int64 array (see O_*): numba counts references of every array a function
is passed, and a tuple of 30 arrays cost hundreds of atomic operations per event (10x the time). The
core never calls back into Python; a capacity that runs out stops it with a status, and the caller
runs it again with more room.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

from . import emu_compiled

# global events
EV_CALL, EV_ARRIVED, EV_RECV_CB, EV_NODE_DONE, EV_HOP, EV_LINK_FREE = 0, 1, 2, 3, 4, 5
# per-NPU tick-list entries
SE_GENERAL, SE_MEM, SE_NODE_DONE, SE_REPLAY_DONE = 0, 1, 2, 3
# workload node kinds, a phase's collective, a dimension's network: emu_compiled's codes
K_META, K_COMP, K_REPLAY = emu_compiled.K_META, emu_compiled.K_COMP, emu_compiled.K_REPLAY
C_AR, C_RS, C_AG, C_A2A = emu_compiled.C_AR, emu_compiled.C_RS, emu_compiled.C_AG, emu_compiled.C_A2A
N_RING, N_FC = emu_compiled.N_RING, emu_compiled.N_FC
# statuses: 0 done; 1-5 a capacity ran out (heap, tick-list entries, tick lists, keys, link waiters); 9 broken
ST_OK, ST_BROKEN = 0, 9
CAP_NAMES = ("heap", "pool", "slots", "keys", "waiters")

_K4 = types.UniTuple(types.int64, 4)

# All integer state lives in one int64 array M (one reference to count per call, where a tuple of
# arrays cost hundreds of reference-count operations per event): M[O_x] is where section x starts.
(O_HEAP, O_SLOT, O_SLFREE, O_POOL, O_PLFREE, O_ST, O_KEY, O_LINK, O_WAIT, O_WFREE, O_RUNNING, O_NPU, O_NODE,
 O_WAITING, O_ISSUED, O_PHASE, O_TPSTART, O_CHSTART, O_CHLIST, O_DS, O_NET, O_END) = range(22)
SECTIONS = O_END + 1
# scalars, after the offsets
(P_NPUS, P_DIMS, P_SPLITS, P_ACTIVE, P_EDELAY, P_LIFO, P_AWARE, P_AWN, P_AWKIND, P_READY, P_FREE,
 S_STATUS, S_NOW, S_HN, S_SEQ, S_NKEYS, S_EVENTS, S_SLFREE, S_PLFREE, S_WFREE) = range(SECTIONS, SECTIONS + 20)
HEADER = SECTIONS + 20
NS = 4  # a tick list of one NPU (Sys.events[t]): first entry, last entry, tick, the NPU's next list
# row widths and columns of the sections
NH = 6  # heap: tick, insertion number, kind, a, b, c
NT = 30  # a stream and its current phase's ring / direct state (emu_ring.Ring's attributes)
(T_NPU, T_NODE, T_SID, T_PRI, T_QUEUE, T_INIT, T_PH, T_PHEND, T_COLL, T_DIRECT, T_N, T_MSG, T_SC, T_PAR,
 T_FREE, T_RECV, T_ZERO, T_NONZERO, T_TOGGLE, T_INS, T_POP, T_INDEX, T_BASE, T_STRIDE,
 T_SEND_PEER, T_SEND_SIZE, T_SEND_KEY, T_RECV_PEER, T_RECV_SIZE, T_RECV_KEY) = range(NT)  # the last keys used
NQ = 7  # one (tag, src, dst, size) of messages
Q_SRC, Q_DST, Q_SIZE, Q_G, Q_SENT, Q_ARR, Q_RCV = range(NQ)
NR = 14  # per NPU
(R_FINISH, R_COMPUTE, R_COMM_OPEN, R_COMM_SINCE, R_COMM, R_RUNNING, R_INFLIGHT, _R_IF1, _R_IF2, R_NSTREAMS,
 R_PRI, R_SBASE, R_NSTART, R_SLOTS) = range(NR)
ND = 5  # per workload node
D_NPU, D_KIND, D_RES, D_DUR, D_TMPL = range(ND)
NP = 7  # per phase of a collective template
H_QUEUE, H_COLL, H_N, H_STRIDE, H_DIRECT, H_WINDOW, H_DATA = range(NP)
# F (a tuple of floats, nothing to count references of): local-mem-bw GB/s, aware latency ns, aware
# bytes/ns, then per dimension bytes/ns and ns/hop, for up to MAX_DIMS dimensions
F_MEMBW, F_AWLAT, F_AWBW, F_DIM = 0, 1, 2, 3
MAX_DIMS = 8
# L (one typed list of lists): dimension queues [0, NPUs x dims), ready lists from M[P_READY], free
# nodes from M[P_FREE]: per NPU `emu_kernel_sys.NLANES` min-heaps of node ids, one per resource


# ---- event heap, ordered by (tick, insertion number) ----

@njit(cache=True)
def push(M, t, kind, a, b, c):
    """Schedule an event (kind, a, b, c) at tick t, after those already due then."""
    n = M[S_HN]
    o = M[O_HEAP]
    if n >= (M[O_SLOT] - o) // NH:
        M[S_STATUS] = 1
        return
    s = M[S_SEQ]
    M[S_SEQ] = s + 1
    M[S_HN] = n + 1
    i = n
    while i > 0:
        p = (i - 1) >> 1
        q = o + p * NH
        if M[q] < t or (M[q] == t and M[q + 1] < s):
            break
        r = o + i * NH
        for col in range(NH):
            M[r + col] = M[q + col]
        i = p
    r = o + i * NH
    M[r], M[r + 1], M[r + 2], M[r + 3], M[r + 4], M[r + 5] = t, s, kind, a, b, c


@njit(cache=True)
def pop_root(M):
    """Remove the earliest event (the caller has read it)."""
    n = M[S_HN] - 1
    M[S_HN] = n
    if n == 0:
        return
    o = M[O_HEAP]
    last = o + n * NH
    t, s = M[last], M[last + 1]
    i = 0
    while True:
        j = 2 * i + 1
        if j >= n:
            break
        qj = o + j * NH
        if j + 1 < n:
            qr = qj + NH
            if M[qr] < M[qj] or (M[qr] == M[qj] and M[qr + 1] < M[qj + 1]):
                j += 1
                qj = qr
        if t < M[qj] or (t == M[qj] and s < M[qj + 1]):
            break
        r = o + i * NH
        for col in range(NH):
            M[r + col] = M[qj + col]
        i = j
    r = o + i * NH
    for col in range(NH):
        M[r + col] = M[last + col]


# ---- free rows: a stack of free row numbers per section, its count a scalar ----

@njit(cache=True)
def take(M, o_stack, s_count, status):
    """A free row of a section (its free stack at M[o_stack], their count at M[s_count]); -1, with
    `status` set, when none is left."""
    if M[s_count] == 0:
        M[S_STATUS] = status
        return -1
    M[s_count] -= 1
    return M[M[o_stack] + M[s_count]]


@njit(cache=True)
def give(M, o_stack, s_count, x):
    """Row x of a section is free again."""
    M[M[o_stack] + M[s_count]] = x
    M[s_count] += 1


# ---- per-NPU tick lists (Sys.register_event) ----

@njit(cache=True)
def register(M, npu, kind, a, b, delta):
    """Sys.register_event: run entry (kind, a, b) on `npu` `delta` ticks from now, after what the NPU
    registered for that tick already (its lists for ticks to come are few: a scan finds the tick's)."""
    e = take(M, O_PLFREE, S_PLFREE, 2)
    if e < 0:
        return
    pe = M[O_POOL] + 4 * e
    M[pe], M[pe + 1], M[pe + 2], M[pe + 3] = -1, kind, a, b
    t = M[S_NOW] + delta
    os_ = M[O_SLOT]
    orow = M[O_NPU] + npu * NR
    s = M[orow + R_SLOTS]
    while s >= 0:
        if M[os_ + NS * s + 2] == t:
            M[M[O_POOL] + 4 * M[os_ + NS * s + 1]] = e
            M[os_ + NS * s + 1] = e
            return
        s = M[os_ + NS * s + 3]
    s = take(M, O_SLFREE, S_SLFREE, 3)
    if s < 0:
        return
    q = os_ + NS * s
    M[q], M[q + 1], M[q + 2], M[q + 3] = e, e, t, M[orow + R_SLOTS]
    M[orow + R_SLOTS] = s
    push(M, t, EV_CALL, npu, t, s)


@njit(cache=True)
def drop_slot(M, npu, s):
    """The NPU's list for a tick has run: unlink it and free its entries."""
    os_ = M[O_SLOT]
    orow = M[O_NPU] + npu * NR
    nxt = M[os_ + NS * s + 3]
    if M[orow + R_SLOTS] == s:
        M[orow + R_SLOTS] = nxt
    else:
        p = M[orow + R_SLOTS]
        while M[os_ + NS * p + 3] != s:
            p = M[os_ + NS * p + 3]
        M[os_ + NS * p + 3] = nxt
    e = M[os_ + NS * s]
    op = M[O_POOL]
    while e >= 0:
        give(M, O_PLFREE, S_PLFREE, e)
        e = M[op + 4 * e]
    give(M, O_SLFREE, S_SLFREE, s)


# ---- streams: a phase's ring / direct state ----

@njit(cache=True)
def load_phase(M, g):
    """Start the stream's next phase: the state `Ring.__init__` gives its algorithm."""
    o = M[O_ST] + g * NT
    ph = M[o + T_PH]
    M[o + T_PH] = ph + 1
    q = M[O_PHASE] + ph * NP
    coll, n, ds, stride, direct, window = M[q + H_COLL], M[q + H_N], M[q + H_DATA], M[q + H_STRIDE], M[q + H_DIRECT], M[q + H_WINDOW]
    npu = M[o + T_NPU]
    idx = (npu // stride) % n
    M[o + T_COLL], M[o + T_N], M[o + T_STRIDE], M[o + T_INDEX], M[o + T_BASE] = coll, n, stride, idx, npu - idx * stride
    M[o + T_DIRECT] = direct
    par = 1
    if coll == C_AR:
        sc = 2 * (n - 1)
    elif coll == C_A2A:
        sc = (n - 1) * n // 2
    else:
        sc = n - 1
    msg = ds if coll == C_AG else ds // n
    if direct == 1:
        par = n - 1 if window < 0 else min(window, n - 1)
        if coll == C_A2A:
            sc = n - 1
    M[o + T_MSG], M[o + T_SC], M[o + T_PAR] = msg, sc, par
    for col in range(T_FREE, T_POP + 1):
        M[o + col] = 0
    M[o + T_QUEUE] = M[q + H_QUEUE]


# ---- network ----

@njit(cache=True)
def key_of(M, keys, tag, src, dst, size):
    """The row of messages (tag, src, dst, size), made on first use."""
    if (tag, src, dst, size) in keys:
        return keys[(tag, src, dst, size)]
    k = M[S_NKEYS]
    if k >= (M[O_LINK] - M[O_KEY]) // NQ:
        M[S_STATUS] = 4
        return 0
    M[S_NKEYS] = k + 1
    keys[(tag, src, dst, size)] = k
    q = M[O_KEY] + k * NQ
    M[q + Q_SRC], M[q + Q_DST], M[q + Q_SIZE] = src, dst, size
    M[q + Q_G] = M[M[O_NPU] + dst * NR + R_SBASE] + tag
    M[q + Q_SENT] = M[q + Q_ARR] = M[q + Q_RCV] = 0
    return k


@njit(cache=True)
def stream_key(M, keys, o, col, peer, tag, src, dst, size):
    """The key of a stream's send (col T_SEND_PEER) or receive (T_RECV_PEER) with `peer`: the one it
    used last when peer and size are the same (a ring's, every time), else `key_of`, remembered."""
    if M[o + col] == peer and M[o + col + 1] == size:
        return M[o + col + 2]
    k = key_of(M, keys, tag, src, dst, size)
    M[o + col], M[o + col + 1], M[o + col + 2] = peer, size, k
    return k


@njit(cache=True)
def unaware_delay(M, F, src, dst, size):
    """UnawareNetwork.delay: floor(hops x latency + bytes / bandwidth) of the first differing dimension."""
    o = M[O_NET]
    for d in range(M[P_DIMS]):
        kind, n, stride = M[o + 3 * d], M[o + 3 * d + 1], M[o + 3 * d + 2]
        a = (src // stride) % n
        b = (dst // stride) % n
        if a != b:
            if kind == N_RING:
                cw = (b - a) % n
                hops = min(cw, n - cw)
            elif kind == N_FC:
                hops = 1
            else:
                hops = 2
            return np.int64(hops * F[F_DIM + 2 * d + 1] + size / F[F_DIM + 2 * d])
    M[S_STATUS] = ST_BROKEN  # a message to itself
    return 0


@njit(cache=True)
def route(M, src, dst, i):
    """(hops of the route src -> dst, link of hop i) on the congestion-aware 1-D network
    (AwareNetwork.route: the shorter way round a ring, clockwise on a tie)."""
    n = M[P_AWN]
    kind = M[P_AWKIND]
    if kind == N_RING:
        cw = (dst - src) % n
        if n - cw < cw:
            return n - cw, n + (src - i) % n
        return cw, (src + i) % n
    if kind == N_FC:
        return 1, src * n + dst
    return 2, (src if i == 0 else n + dst)


@njit(cache=True)
def link_start(M, F, link, k, seq, i):
    """_Link._start: the message crosses the link (arrival after floor(latency + bytes/bw)); the
    link is busy for floor(bytes/bw), its end an event."""
    size = M[M[O_KEY] + k * NQ + Q_SIZE]
    now = M[S_NOW]
    push(M, now + np.int64(F[F_AWLAT] + size / F[F_AWBW]), EV_HOP, k, seq, i)
    push(M, now + np.int64(size / F[F_AWBW]), EV_LINK_FREE, link, 0, 0)
    M[M[O_LINK] + 3 * link] = 1


# ---- the ring / direct state machine (emu_ring.Ring) ----

@njit(cache=True)
def ring_insert(M, F, g):
    """Ring.insert: queue the next packet and push its bundle over the memory bus (Sys.bundle)."""
    o = M[O_ST] + g * NT
    if M[o + T_ZERO] == 0 and M[o + T_NONZERO] == 0:
        M[o + T_ZERO] = M[o + T_PAR]
        M[o + T_NONZERO] = M[o + T_PAR] if M[o + T_DIRECT] == 1 else (M[o + T_N] - 1) * M[o + T_PAR]
        M[o + T_TOGGLE] = 1 - M[o + T_TOGGLE]
    if M[o + T_ZERO] > 0:
        processing = False
        M[o + T_ZERO] -= 1
    elif M[o + T_NONZERO] > 0:
        c = M[o + T_COLL]
        processing = c == C_RS or (c == C_AR and M[o + T_TOGGLE] == 1)
        M[o + T_NONZERO] -= 1
    else:
        M[S_STATUS] = ST_BROKEN
        return
    M[o + T_INS] += 1
    npu = M[o + T_NPU]
    if processing:  # a reduction: the memory bus after the endpoint delay
        cost = 0
        if F[F_MEMBW] > 0:
            cost = 3 * np.int64(M[o + T_MSG] / F[F_MEMBW])
        register(M, npu, SE_MEM, g, cost, M[P_EDELAY])
    else:
        register(M, npu, SE_GENERAL, g, 0, M[P_EDELAY])


@njit(cache=True)
def arrived(M, F, k, seq):
    """Network.arrived: the message is there; the receiver hears "recv" if its receive is posted."""
    q = M[O_KEY] + k * NQ
    a = M[q + Q_ARR] + 1
    if seq != a:  # arrivals of one key out of order: not what this core assumes
        M[S_STATUS] = ST_BROKEN
        return
    M[q + Q_ARR] = a
    if M[q + Q_RCV] >= a:
        g = M[q + Q_G]
        M[M[O_ST] + g * NT + T_RECV] += 1
        ring_insert(M, F, g)


@njit(cache=True)
def hop(M, F, k, seq, i):
    """AwareNetwork's hop: the message has crossed link i of its route (-1: injected)."""
    i += 1
    q = M[O_KEY] + k * NQ
    length, link = route(M, M[q + Q_SRC], M[q + Q_DST], i)
    if i == length:
        arrived(M, F, k, seq)
        return
    ol = M[O_LINK] + 3 * link
    if M[ol + 1] >= 0 or M[ol] == 1:  # busy: wait in line
        x = take(M, O_WFREE, S_WFREE, 5)
        if x < 0:
            return
        ow = M[O_WAIT] + 4 * x
        M[ow], M[ow + 1], M[ow + 2], M[ow + 3] = -1, k, seq, i
        if M[ol + 1] < 0:
            M[ol + 1] = x
        else:
            M[M[O_WAIT] + 4 * M[ol + 2]] = x
        M[ol + 2] = x
        return
    link_start(M, F, link, k, seq, i)


@njit(cache=True)
def ring_ready(M, F, keys, g):
    """Ring.ready: send the oldest queued packet and post its receive, if a bundle is back."""
    o = M[O_ST] + g * NT
    if M[o + T_INS] == M[o + T_POP] or M[o + T_SC] == 0 or M[o + T_FREE] == 0:
        return
    j = M[o + T_POP]
    M[o + T_POP] = j + 1
    n = M[o + T_N]
    off = 1 + j % (n - 1) if M[o + T_DIRECT] == 1 else 1  # direct turns to the next peer per packet
    idx = M[o + T_INDEX]
    dest = M[o + T_BASE] + ((((idx + off) % n) + n) % n) * M[o + T_STRIDE]
    src = M[o + T_BASE] + ((((idx - off) % n) + n) % n) * M[o + T_STRIDE]
    npu, tag, msg = M[o + T_NPU], M[o + T_SID], M[o + T_MSG]
    k = stream_key(M, keys, o, T_SEND_PEER, dest, tag, npu, dest, msg)  # the send
    q = M[O_KEY] + k * NQ
    seq = M[q + Q_SENT] + 1
    M[q + Q_SENT] = seq
    if M[P_AWARE] == 1:
        hop(M, F, k, seq, -1)
    else:
        push(M, M[S_NOW] + unaware_delay(M, F, npu, dest, msg), EV_ARRIVED, k, seq, 0)
    k = stream_key(M, keys, o, T_RECV_PEER, src, tag, src, npu, msg)  # the receive
    q = M[O_KEY] + k * NQ
    r = M[q + Q_RCV] + 1
    M[q + Q_RCV] = r
    if M[q + Q_ARR] >= r:  # already there: the stream hears it as an event now
        push(M, M[S_NOW], EV_RECV_CB, g, 0, 0)
    M[o + T_SC] -= 1
    M[o + T_FREE] -= 1
