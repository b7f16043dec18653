"""Flow-level network model: concurrent flows share links max-min fairly, event by event.

Every transfer is a *flow* along its route. Between events the rates are constant; at every
event (a flow starts, or finishes sending) the rates are recomputed by water-filling:

- Max-min fairness with optional per-flow rate caps (a cap is a private link of that capacity)
  and strict priority classes (class 0 first, on the full capacity; then class 1 on what is
  left; ...).
- Water-filling is vectorized: every link whose fair share is no larger than the shares its
  flows could get anywhere else (a local bottleneck) is saturated in the same pass, so a pass
  costs a few sparse reductions and the passes are few. Flows with the same route, cap and
  priority get the same rate, so they are water-filled as one class with a multiplicity.
- Flows whose sending ends at the same instant are handled in one event.

Timing of one flow (mode="pipelined", cut-through-like): it sends from its start at its current
max-min rate on every link of its path at once; its last byte arrives `path latency + (hops-1) *
chunk / slowest link` after it has been sent (`chunk` = packet size for the pipeline fill; 0 =
fluid). mode="store-and-forward": the flow crosses its links one after another, each hop a flow
on one link that starts when the previous hop's data has arrived (+ that link's latency) --
ASTRA-sim's congestion-aware model, with fair sharing instead of FIFO.

Dependencies: a flow starts at `start` and only when all its predecessors have arrived. A
collective's schedule runs as dataflow (`collective_flows`): a transfer starts when every earlier
transfer that wrote the blocks it sends into its source has arrived, not in lock-step.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field, replace

import numpy as np

from ..collectives.schedule import Schedule
from ..errors import ConfigError
from ..topology.graph import Topology

MODES = ("pipelined", "store-and-forward")
# names of the flow model wherever a network model is chosen (CLI, configs) -> its mode
FLOW_MODELS = {"flow": "pipelined", "flow-pipelined": "pipelined", "flow-store-and-forward": "store-and-forward"}


@dataclass(frozen=True, eq=False)
class Flows:
    """Point-to-point flows between topology nodes (numpy arrays, one entry per flow)."""

    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray  # bytes
    start: np.ndarray | None = None  # s (default 0)
    cap: np.ndarray | None = None  # bytes/s per flow (default: none)
    priority: np.ndarray | None = None  # 0 = highest (default 0)
    dep_ptr: np.ndarray | None = None  # predecessors of flow i: dep_idx[dep_ptr[i]:dep_ptr[i+1]]
    dep_idx: np.ndarray | None = None
    # explicit link sets (CSR over link ids), e.g. a whole reduction tree; None: the topology routes
    route_ptr: np.ndarray | None = None
    route_links: np.ndarray | None = None
    latency: np.ndarray | None = None  # s per flow, overriding the sum of its links' latencies (NaN: that sum)

    def __post_init__(self):
        n = len(np.atleast_1d(self.src))
        conv = {"src": np.int64, "dst": np.int64, "size": float}
        for name, dt in conv.items():
            object.__setattr__(self, name, np.atleast_1d(np.asarray(getattr(self, name), dtype=dt)))
        defaults = {"start": 0.0, "cap": np.inf, "priority": 0}
        for name, dv in defaults.items():
            v = getattr(self, name)
            arr = np.full(n, dv, dtype=np.int64 if name == "priority" else float) if v is None else \
                np.broadcast_to(np.asarray(v, dtype=np.int64 if name == "priority" else float), (n,)).copy()
            object.__setattr__(self, name, arr)
        if self.dep_ptr is None:
            object.__setattr__(self, "dep_ptr", np.zeros(n + 1, dtype=np.int64))
            object.__setattr__(self, "dep_idx", np.zeros(0, dtype=np.int64))
        if not (len(self.dst) == len(self.size) == n and len(self.dep_ptr) == n + 1):
            raise ValueError("Flows: arrays differ in length")
        if n and (self.size.min() < 0 or not np.all(np.isfinite(self.size))):
            raise ValueError("Flows: sizes must be finite and >= 0")
        if n and (self.cap.min() <= 0):
            raise ValueError("Flows: rate caps must be > 0")

    def __len__(self) -> int:
        return len(self.src)


@dataclass(frozen=True, eq=False)
class FlowResult:
    start: np.ndarray  # s, when each flow began sending
    sent: np.ndarray  # s, when each flow's last byte left
    finish: np.ndarray  # s, when each flow's last byte arrived
    link_bytes: np.ndarray  # bytes carried by each link
    link_busy: np.ndarray  # s each link carried traffic
    events: int
    timeline: tuple = field(default=())  # ((t0, t1, link rates bytes/s), ...) when recorded

    @property
    def makespan(self) -> float:
        return float(self.finish.max()) if len(self.finish) else 0.0

    def utilization(self, topo: Topology) -> np.ndarray:
        """Mean utilization of each link over the makespan."""
        span = self.makespan
        return self.link_bytes / (topo.link_bw * span) if span > 0 else np.zeros(topo.n_links)


def successors(dep_ptr: np.ndarray, dep_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reverse a predecessor CSR (item i waits for dep_idx[dep_ptr[i]:dep_ptr[i+1]]) into a
    successor CSR: (succ_ptr, succ), item j's dependents are succ[succ_ptr[j]:succ_ptr[j+1]]."""
    n = len(dep_ptr) - 1
    order = np.argsort(dep_idx, kind="stable")
    succ = np.repeat(np.arange(n), np.diff(dep_ptr))[order]
    succ_ptr = np.concatenate([[0], np.cumsum(np.bincount(dep_idx, minlength=n))])
    return succ_ptr, succ


# ---- max-min water-filling ----------------------------------------------------------------------


def water_fill(link_cap: np.ndarray, cls_ptr: np.ndarray, cls_links: np.ndarray, mult: np.ndarray,
               cap: np.ndarray, prio: np.ndarray) -> np.ndarray:
    """Max-min fair rate of every class (all its `mult` flows get this rate each).

    cls_links[cls_ptr[c]:cls_ptr[c+1]] are the links of class c (each at least one).
    """
    n_c = len(mult)
    rate = np.zeros(n_c)
    if n_c == 0:
        return rate
    counts = np.diff(cls_ptr)
    ent_cls = np.repeat(np.arange(n_c), counts)
    used = np.zeros(len(link_cap))
    levels = prio[:1] if np.all(prio == prio[0]) else np.unique(prio)
    for level in levels:
        free = prio == level
        rem = link_cap - used
        while free.any():
            e_on = free[ent_cls]
            n_l = np.bincount(cls_links[e_on], weights=mult[ent_cls[e_on]], minlength=len(link_cap))
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(n_l > 0, np.maximum(rem, 0.0) / n_l, np.inf)
            best = np.minimum.reduceat(share[cls_links], cls_ptr[:-1])  # best link share of each class
            m = np.minimum(best, cap)
            m_e = np.where(e_on, m[ent_cls], np.inf)
            link_min = np.full(len(link_cap), np.inf)
            np.minimum.at(link_min, cls_links, m_e)
            tol = 1e-12
            bottleneck = (n_l > 0) & (share <= link_min * (1 + tol))
            hit = np.zeros(n_c, dtype=bool)
            hit[ent_cls[bottleneck[cls_links] & (share[cls_links] <= m[ent_cls] * (1 + tol))]] = True
            freeze = free & (hit | (cap <= best * (1 + tol)))
            if not freeze.any():  # numerical safety: freeze the global minimum
                freeze = free & (m <= m[free].min() * (1 + 1e-9))
            rate[freeze] = m[freeze]
            e_new = freeze[ent_cls]
            rem = rem - np.bincount(cls_links[e_new], weights=(mult * rate)[ent_cls[e_new]], minlength=len(link_cap))
            free &= ~freeze
        used = link_cap - np.maximum(rem, 0.0)
    return rate


# ---- the event loop -----------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Units:
    """What the event loop runs: units with a route, a size, a post-send latency, predecessors."""

    ptr: np.ndarray
    links: np.ndarray
    size: np.ndarray
    start: np.ndarray
    cap: np.ndarray
    prio: np.ndarray
    lat: np.ndarray  # s added after the last byte is sent
    key: np.ndarray  # route identity (units with equal key, cap, prio share a class)
    dep_ptr: np.ndarray
    dep_idx: np.ndarray
    owner: np.ndarray  # flow each unit belongs to
    last: np.ndarray  # True for the unit whose arrival is its flow's arrival


def _units(topo: Topology, flows: Flows, mode: str, chunk: float) -> _Units:
    if flows.route_ptr is not None:
        ptr, links = np.asarray(flows.route_ptr, dtype=np.int64), np.asarray(flows.route_links, dtype=np.int64)
    else:
        ptr, links = topo.route(flows.src, flows.dst)
    hops = np.diff(ptr)
    n = len(flows)
    tid = np.repeat(np.arange(n), hops)
    lat = np.bincount(tid, weights=topo.link_lat[links], minlength=n)
    if flows.latency is not None:  # a link set that is not a path (a tree) says its own latency
        given = np.asarray(flows.latency, dtype=float)
        lat = np.where(np.isnan(given), lat, given)
    if mode == "pipelined":
        bw = np.full(n, np.inf)
        if len(links):
            np.minimum.at(bw, tid, topo.link_bw[links])
        fill = np.where(hops > 1, (hops - 1) * np.minimum(chunk, flows.size) / np.where(np.isfinite(bw), bw, 1.0), 0.0)
        if flows.route_ptr is not None:  # explicit routes: the class key is the set of links itself
            ids: dict = {}
            key = np.fromiter((ids.setdefault(tuple(links[ptr[i]: ptr[i + 1]].tolist()), len(ids)) for i in range(n)),
                              dtype=np.int64, count=n)
        else:
            key = flows.src * topo.n_nodes + flows.dst
        return _Units(ptr, links, flows.size, flows.start, flows.cap, flows.priority, lat + fill, key,
                      flows.dep_ptr, flows.dep_idx, np.arange(n), np.ones(n, dtype=bool))
    # store-and-forward: one unit per hop; hop k+1 waits for hop k; a flow's first hop waits for its predecessors
    if flows.route_ptr is not None:
        raise ConfigError("mode", mode, "flows with explicit link sets (in-network streaming) need mode pipelined")
    m = int(hops.sum())
    zero = hops == 0
    n_units = m + int(zero.sum())  # zero-hop flows keep one (empty) unit
    owner = np.concatenate([tid, np.flatnonzero(zero)])
    order = np.argsort(owner, kind="stable")
    owner = owner[order]
    u_links = np.concatenate([links, np.full(int(zero.sum()), -1)])[order]
    first_of = np.searchsorted(owner, np.arange(n))
    is_first = np.zeros(n_units, dtype=bool)
    is_first[first_of] = True
    last = np.zeros(n_units, dtype=bool)
    last[np.append(first_of[1:], n_units) - 1] = True
    u_ptr = np.concatenate([[0], np.cumsum(u_links >= 0)])
    # predecessors: first unit of a flow -> last units of the predecessor flows; others -> previous hop
    last_of = np.append(first_of[1:], n_units) - 1
    dcount = np.where(is_first, np.diff(flows.dep_ptr)[owner], 1)
    d_ptr = np.concatenate([[0], np.cumsum(dcount)])
    d_idx = np.empty(int(d_ptr[-1]), dtype=np.int64)
    not_first = np.flatnonzero(~is_first)
    d_idx[d_ptr[not_first]] = not_first - 1
    firsts = np.flatnonzero(is_first)
    for u in firsts[np.diff(flows.dep_ptr)[owner[firsts]] > 0]:
        f = owner[u]
        d_idx[d_ptr[u]: d_ptr[u + 1]] = last_of[flows.dep_idx[flows.dep_ptr[f]: flows.dep_ptr[f + 1]]]
    lk = u_links[u_links >= 0]
    u_lat = np.where(u_links >= 0, topo.link_lat[np.maximum(u_links, 0)], 0.0)
    key = np.where(u_links >= 0, u_links, -1 - owner)
    return _Units(u_ptr, lk, flows.size[owner], np.where(is_first, flows.start[owner], 0.0), flows.cap[owner],
                  flows.priority[owner], u_lat, key, d_ptr, d_idx, owner, last)


def simulate_flows(topo: Topology, flows: Flows, *, mode: str = "pipelined", chunk: float = 0.0,
                   record_timeline: bool = False) -> FlowResult:
    """Run `flows` on `topo` to completion (see module doc)."""
    if mode not in MODES:
        raise ConfigError("mode", mode, f"accepted: {', '.join(MODES)}")
    if chunk < 0:
        raise ConfigError("chunk", chunk, "accepted: a packet size >= 0 bytes")
    U = _units(topo, flows, mode, float(chunk))
    n = len(U.size)
    hops = np.diff(U.ptr)
    # classes: same route, cap and priority
    key3 = np.stack([U.key.astype(float), U.cap, U.prio.astype(float)], axis=1)
    _, cls_rep, cls_of = np.unique(key3, axis=0, return_index=True, return_inverse=True)
    cls_of = cls_of.ravel()
    n_cls = len(cls_rep)
    c_counts = hops[cls_rep]
    c_ptr = np.concatenate([[0], np.cumsum(c_counts)])
    c_links = np.concatenate([U.links[U.ptr[r]: U.ptr[r + 1]] for r in cls_rep]) if n_cls else np.zeros(0, np.int64)
    c_cap, c_prio = U.cap[cls_rep], U.prio[cls_rep]
    succ_ptr, succ = successors(U.dep_ptr, U.dep_idx)
    waiting = np.diff(U.dep_ptr).copy()
    remaining = U.size.copy()
    t_start = np.full(n, np.nan)
    t_sent = np.full(n, np.nan)
    t_done = np.full(n, np.nan)
    link_bytes = np.zeros(topo.n_links)
    link_busy = np.zeros(topo.n_links)
    timeline = []
    # event queues: (time, seq, units)
    startq: list = []
    arriveq: list = []
    seq = 0
    ready0 = np.flatnonzero(waiting == 0)
    for t0 in np.unique(U.start[ready0]):
        heapq.heappush(startq, (float(t0), seq, ready0[U.start[ready0] == t0]))
        seq += 1
    now = 0.0
    dirty = True
    events = 0
    active_idx = np.zeros(0, dtype=np.int64)  # units sending now
    cls_count = np.zeros(n_cls, dtype=np.int64)  # units sending now, per class
    slot = np.zeros(n_cls, dtype=np.int64)  # position of a class among the sending classes
    act_rate = np.zeros(0)
    load = np.zeros(topo.n_links)
    while startq or arriveq or len(active_idx):
        if dirty:
            cidx = np.flatnonzero(cls_count)  # classes with a flow sending (counts kept incrementally)
            mult = cls_count[cidx]
            slot[cidx] = np.arange(len(cidx))
            inv = slot[cls_of[active_idx]]
            if len(cidx):
                sub_counts = c_counts[cidx]
                sub_ptr = np.concatenate([[0], np.cumsum(sub_counts)])
                sub_links = c_links[np.repeat(c_ptr[cidx] - sub_ptr[:-1], sub_counts) + np.arange(sub_ptr[-1])]
                r = water_fill(topo.link_bw, sub_ptr, sub_links, mult.astype(float), c_cap[cidx], c_prio[cidx])
                act_rate = r[inv]
                load = np.bincount(sub_links, weights=np.repeat(r * mult, sub_counts), minlength=topo.n_links)
            else:
                act_rate = np.zeros(0)
                load = np.zeros(topo.n_links)
            dirty = False
        # next event
        t_next = np.inf
        if len(active_idx):
            with np.errstate(divide="ignore"):
                t_tx = now + remaining[active_idx] / act_rate
            t_next = float(t_tx.min())
        if startq:
            t_next = min(t_next, startq[0][0])
        if arriveq:
            t_next = min(t_next, arriveq[0][0])
        if not np.isfinite(t_next):
            raise RuntimeError("flow model stalled: flows with zero rate")
        dt = t_next - now
        if dt > 0 and len(active_idx):
            remaining[active_idx] -= act_rate * dt
            link_bytes += load * dt
            link_busy += np.where(load > 0, dt, 0.0)
            if record_timeline:
                timeline.append((now, t_next, load.copy()))
        now = t_next
        events += 1
        # sends that end now
        if len(active_idx):
            fin = (remaining[active_idx] <= 1e-9 * np.maximum(U.size[active_idx], 1.0)) | (t_tx <= now * (1 + 1e-12) + 1e-18)
            if fin.any():
                done = active_idx[fin]
                np.subtract.at(cls_count, cls_of[done], 1)
                active_idx = active_idx[~fin]
                act_rate = act_rate[~fin]
                remaining[done] = 0.0
                t_sent[done] = now
                _arrive_later(arriveq, done, now + U.lat[done], seq)
                seq += len(done)
                dirty = True
        # arrivals now: release successors
        while arriveq and arriveq[0][0] <= now:
            _, _, units = heapq.heappop(arriveq)
            t_done[units] = now
            a, c = succ_ptr[units], succ_ptr[units + 1] - succ_ptr[units]
            nxt = succ[np.repeat(a - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))]
            if len(nxt):
                np.subtract.at(waiting, nxt, 1)
                ok = np.unique(nxt[waiting[nxt] == 0])
                when = np.maximum(now, U.start[ok])
                for tw in np.unique(when):
                    heapq.heappush(startq, (float(tw), seq, ok[when == tw]))
                    seq += 1
        # starts now
        while startq and startq[0][0] <= now:
            _, _, units = heapq.heappop(startq)
            t_start[units] = now
            empty = (hops[units] == 0) | (U.size[units] == 0)
            if empty.any():
                e = units[empty]
                t_sent[e] = now
                _arrive_later(arriveq, e, now + U.lat[e], seq)
                seq += len(e)
            go = units[~empty]
            if len(go):
                np.add.at(cls_count, cls_of[go], 1)
                active_idx = np.concatenate([active_idx, go])
                act_rate = np.concatenate([act_rate, np.zeros(len(go))])
                dirty = True
    finish = np.full(len(flows), np.nan)
    sent = np.full(len(flows), np.nan)
    first_start = np.full(len(flows), np.inf)
    finish[U.owner[U.last]] = t_done[U.last]
    sent[U.owner[U.last]] = t_sent[U.last]
    np.minimum.at(first_start, U.owner, t_start)
    if np.isnan(finish).any():
        bad = int(np.flatnonzero(np.isnan(finish))[0])
        raise ConfigError("flows", f"flow {bad}", "never started: its predecessors form a cycle or never finish")
    return FlowResult(first_start, sent, finish, link_bytes, link_busy, events, tuple(timeline))


def _arrive_later(queue: list, units: np.ndarray, when: np.ndarray, seq: int) -> None:
    for i, tw in enumerate(np.unique(when)):
        heapq.heappush(queue, (float(tw), seq + i, units[when == tw]))


# ---- collectives as dataflow ---------------------------------------------------------------------


def collective_flows(schedule: Schedule, size: float, *, start: float = 0.0, priority: int = 0,
                     cap: float = np.inf) -> Flows:
    """The transfers of a placed schedule as flows with dataflow dependencies: a transfer waits
    for every earlier transfer that wrote, into its source, one of the blocks it sends (lock-step
    order defines "earlier"; writes in the same step are not visible to its reads)."""
    nodes = schedule.topology_nodes()
    nb = schedule.nblocks
    srcs, dsts, sizes, e_t, e_src, e_dst, e_blk, e_step = [], [], [], [], [], [], [], []
    tid = 0
    for i, st in schedule.expanded():
        st = st.explicit()
        k = st.n_transfers
        srcs.append(nodes[st.src])
        dsts.append(nodes[st.dst])
        sizes.append(schedule.transfer_fraction(st) * size)
        cnt = st.blocks_per_transfer
        e_t.append(tid + np.repeat(np.arange(k), cnt))
        e_src.append(np.repeat(st.src, cnt))
        e_dst.append(np.repeat(st.dst, cnt))
        e_blk.append(st.blocks)
        e_step.append(np.full(len(st.blocks), i, dtype=np.int64))
        tid += k
    n = tid
    cat = (lambda xs, dt=np.int64: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))  # noqa: E731
    t_e, src_e, dst_e, blk_e, step_e = cat(e_t), cat(e_src), cat(e_dst), cat(e_blk), cat(e_step)
    n_steps = int(step_e.max()) + 2 if len(step_e) else 1
    # writes: (dst, block) at step; reads: (src, block) at step; a read depends on all earlier writes
    w_comp = (dst_e * nb + blk_e) * n_steps + step_e
    order = np.argsort(w_comp, kind="stable")
    w_sorted, w_tid = w_comp[order], t_e[order]
    r_key = (src_e * nb + blk_e) * n_steps
    lo = np.searchsorted(w_sorted, r_key, side="left")
    hi = np.searchsorted(w_sorted, r_key + step_e, side="left")
    cnt = hi - lo
    idx = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt) + np.arange(int(cnt.sum()))
    pairs = np.unique(np.repeat(t_e, cnt) * max(n, 1) + w_tid[idx])
    reader, writer = pairs // max(n, 1), pairs % max(n, 1)
    dep_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(reader, minlength=n), out=dep_ptr[1:])
    return Flows(cat(srcs), cat(dsts), cat(sizes, float), np.full(n, float(start)),
                 np.full(n, float(cap)), np.full(n, int(priority)), dep_ptr, writer.astype(np.int64))


STREAMING = ("in_network", "in_network_tree")  # algorithms whose collectives stream through switches


def streaming_flows(topo: Topology, schedule: Schedule, size: float, *, start: float = 0.0, priority: int = 0) -> Flows:
    """An in-network collective as FRED's flows: one flow reduces everything entering from its
    inputs on the way up and multicasts the result down, streaming through the switches, so it
    occupies every link of its tree at once at one rate and moves `size` bytes on each (explicit
    link sets; the flow's src/dst are its first input and the top switch).

    all-reduce: one flow over the up paths of every rank and the down paths to every rank;
    reduce: up paths of every rank, down to the root; broadcast: up from the root, down to the
    others; reduce-scatter: p serial flows of size/p (flow j: every up path, down to rank j);
    all-gather: p serial flows of size/p (flow j: up from rank j, down to the others)."""
    nodes = schedule.topology_nodes()
    p = schedule.p
    ranks, top = nodes[:p], int(nodes[-1])
    up_ptr, up_l = topo.route(ranks, np.full(p, top))
    dn_ptr, dn_l = topo.route(np.full(p, top), ranks)
    up = [up_l[up_ptr[i]: up_ptr[i + 1]] for i in range(p)]
    down = [dn_l[dn_ptr[i]: dn_ptr[i + 1]] for i in range(p)]
    every = list(range(p))
    c, root = schedule.collective, schedule.root or 0
    if c == "all-reduce":
        sets, each = [(every, every)], float(size)
    elif c == "reduce":
        sets, each = [(every, [root])], float(size)
    elif c == "broadcast":
        sets, each = [([root], [r for r in every if r != root])], float(size)
    elif c == "reduce-scatter":
        sets, each = [(every, [j]) for j in every], float(size) / p
    elif c == "all-gather":
        sets, each = [([j], [r for r in every if r != j]) for j in every], float(size) / p
    else:
        raise ValueError(f"streaming_flows: {c} is not an in-network collective")
    links = [np.unique(np.concatenate([up[i] for i in u] + [down[i] for i in d])) for u, d in sets]
    up_lat = np.array([topo.link_lat[x].sum() for x in up])
    dn_lat = np.array([topo.link_lat[x].sum() for x in down])
    lat = np.array([up_lat[u].max() + dn_lat[d].max() for u, d in sets])  # the deepest input to the deepest output
    k = len(sets)
    ptr = np.concatenate([[0], np.cumsum([len(x) for x in links])])
    dep_ptr = np.concatenate([[0], np.arange(k)])  # flow j waits for flow j-1 (serial flows)
    return Flows(np.full(k, ranks[sets[0][0][0]]), np.full(k, top), np.full(k, each), np.full(k, float(start)),
                 None, np.full(k, int(priority)), dep_ptr.astype(np.int64), np.arange(k - 1, dtype=np.int64),
                 ptr.astype(np.int64), np.concatenate(links).astype(np.int64), lat)


def merge_flows(*parts: Flows, topo: Topology | None = None) -> Flows:
    """Several independent flow sets in one simulation (dependencies stay inside each set). When
    some parts carry explicit link sets (`streaming_flows`), the others are routed on `topo`."""
    offs = np.cumsum([0] + [len(p) for p in parts])
    routes = None
    if any(p.route_ptr is not None for p in parts):
        if topo is None:
            raise ValueError("merge_flows: parts with explicit link sets need topo= to route the others")
        got = [(p.route_ptr, p.route_links) if p.route_ptr is not None else topo.route(p.src, p.dst) for p in parts]
        lens = np.concatenate([np.diff(r[0]) for r in got])
        routes = (np.concatenate([[0], np.cumsum(lens)]).astype(np.int64),
                  np.concatenate([r[1] for r in got]).astype(np.int64))
    dep_ptrs, dep_idxs = [np.zeros(1, dtype=np.int64)], []
    base = 0
    for o, p in zip(offs[:-1], parts):
        dep_ptrs.append(p.dep_ptr[1:] + base)
        dep_idxs.append(p.dep_idx + o)
        base += len(p.dep_idx)
    cat = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
    lat = None
    if any(p.latency is not None for p in parts):
        lat = np.concatenate([p.latency if p.latency is not None else np.full(len(p), np.nan) for p in parts])
    return Flows(cat("src"), cat("dst"), cat("size"), cat("start"), cat("cap"), cat("priority"),
                 np.concatenate(dep_ptrs), np.concatenate(dep_idxs) if dep_idxs else np.zeros(0, np.int64),
                 *(routes or (None, None)), lat)


def time_collective_flow(topo: Topology, schedule: Schedule, sizes, *, mode: str = "pipelined",
                         chunk: float = 0.0) -> np.ndarray:
    """Completion time of one collective alone, for each size (dataflow on the flow model).
    The flows and their dependencies do not depend on the size: built once, scaled per size."""
    unit = collective_flows(schedule, 1.0)
    out = []
    for s in np.atleast_1d(np.asarray(sizes, dtype=float)):
        res = simulate_flows(topo, replace(unit, size=unit.size * s), mode=mode, chunk=chunk)
        out.append(res.makespan)
    return np.array(out)
