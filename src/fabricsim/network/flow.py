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
collective's schedule runs as dataflow (`network.dataflow`): a transfer starts when every earlier
transfer that wrote the blocks it sends into its source has arrived, not in lock-step.

Weights: a flow with explicit link sets may use a link at `weight` x its rate (a private
resource consumed per byte: an endpoint's memory or engine capacity); max-min then fills
sum(weight x rate) <= capacity on every link.

Holds (endpoint interference in the training engine, `Holds`): a hold is a share of a group's
(an NPU's) compute units and memory bandwidth; flows raise (+1) or lower (-1) holds when they
arrive (a collective's entry and exit on each member). A gated flow (a compute kernel on that NPU)
is capped at its rate over its roofline stretch with the larger share of each resource held:
max(compute / (1 - units), memory / (1 - memory)) for its compute and memory fractions of time;
0 while a resource it needs is wholly held.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from ..roofline import stretch
from ..topology.graph import Topology

MODES = ("pipelined", "store-and-forward")


@dataclass(frozen=True, eq=False)
class Holds:
    """Shares of NPUs that flows raise and lower, and the flows they slow (module doc).

    Parameters
    ----------
    group : int array [holds]
        The group (an NPU) each hold applies to.
    units, memory : float arrays [holds]
        Shares of the group's compute units and memory bandwidth, in [0, 1].
    mark_ptr, mark_idx, mark_delta : arrays
        At flow i's arrival, holds `mark_idx[mark_ptr[i]:mark_ptr[i+1]]` are raised (+1) or
        lowered (-1) by the matching `mark_delta`; `mark_ptr` has one entry per flow plus one.
    gate : int array [flows]
        The group whose holds slow each flow (-1: none).
    compute, memory_time : float arrays [flows]
        Each gated flow's compute time and memory time over its roofline time.
    rate : float array [flows]
        Each gated flow's rate with nothing held, bytes/s.
    """

    group: np.ndarray
    units: np.ndarray
    memory: np.ndarray
    mark_ptr: np.ndarray
    mark_idx: np.ndarray
    mark_delta: np.ndarray
    gate: np.ndarray
    compute: np.ndarray
    memory_time: np.ndarray
    rate: np.ndarray


@dataclass(frozen=True, eq=False)
class Flows:
    """Point-to-point flows between topology nodes (numpy arrays, one entry per flow).

    Only `src`, `dst` and `size` are required; scalars are broadcast for `start`, `cap` and
    `priority`. See the module doc for routes, weights, gates and marks.

    Parameters
    ----------
    src, dst : int array
        Topology node ids.
    size : float array
        Bytes, finite and >= 0.
    start : float array, optional
        Earliest start, s (default 0).
    cap : float array, optional
        Rate cap per flow, bytes/s, > 0 (default: none).
    priority : int array, optional
        Strict priority class, 0 = highest (default 0).
    dep_ptr, dep_idx : int arrays, optional
        Predecessors in CSR form: flow i starts only after flows `dep_idx[dep_ptr[i]:dep_ptr[i+1]]`
        have arrived.
    route_ptr, route_links : int arrays, optional
        Explicit link sets in CSR form over link ids (e.g. a whole reduction tree); None: the
        topology routes every flow.
    latency : float array, optional
        Seconds per flow, overriding the sum of its links' latencies (NaN: that sum).
    route_weight : float array, optional
        Per `route_links` entry: bytes of link capacity used per byte of the flow (default 1).
    holds : Holds, optional
        Endpoint holds the flows raise and lower, and the flows they slow.
    """

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
    route_weight: np.ndarray | None = None  # per route_links entry: link use per byte of the flow (default 1)
    holds: Holds | None = None  # endpoint holds raised and lowered by flows, and the flows they slow

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
        if self.route_weight is not None and (self.route_links is None or len(self.route_weight) != len(self.route_links)):
            raise ValueError("Flows: route_weight needs explicit routes, one weight per route entry")
        h = self.holds
        if h is not None and not (len(h.gate) == len(h.compute) == len(h.memory_time) == len(h.rate) == n
                                  and len(h.mark_ptr) == n + 1 and len(h.units) == len(h.memory) == len(h.group)):
            raise ValueError("Flows: holds need one gate, compute, memory_time and rate per flow, mark_ptr of n+1")

    def __len__(self) -> int:
        return len(self.src)


@dataclass(frozen=True, eq=False)
class FlowResult:
    """What `simulate_flows` (or a network model's `flows`) reports.

    Parameters
    ----------
    start : float array
        When each flow began sending, s.
    sent : float array
        When each flow's last byte left its source, s.
    finish : float array
        When each flow's last byte arrived, s.
    link_bytes : float array
        Bytes each link carried.
    link_busy : float array
        Seconds each link carried traffic.
    events : int
        Events the simulation processed (lock-step levels for the analytical models).
    timeline : tuple
        ((t0, t1, per-link rates in bytes/s), ...) per interval, when recorded.
    """

    start: np.ndarray  # s, when each flow began sending
    sent: np.ndarray  # s, when each flow's last byte left
    finish: np.ndarray  # s, when each flow's last byte arrived
    link_bytes: np.ndarray  # bytes carried by each link
    link_busy: np.ndarray  # s each link carried traffic
    events: int
    timeline: tuple = field(default=())  # ((t0, t1, link rates bytes/s), ...) when recorded

    @property
    def makespan(self) -> float:
        """When the last flow arrived, s (0 without flows)."""
        return float(self.finish.max()) if len(self.finish) else 0.0

    def utilization(self, topo: Topology) -> np.ndarray:
        """Mean utilization of each link over the makespan.

        Parameters
        ----------
        topo : Topology
            The network the flows ran on (its link bandwidths).

        Returns
        -------
        float array [links]
            Link bytes / (bandwidth x makespan), 0..1; zeros for a zero makespan.
        """
        span = self.makespan
        return self.link_bytes / (topo.link_bw * span) if span > 0 else np.zeros(topo.n_links)


def successors(dep_ptr: np.ndarray, dep_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reverse a predecessor CSR into a successor CSR.

    Parameters
    ----------
    dep_ptr, dep_idx : int64 arrays
        Item i waits for `dep_idx[dep_ptr[i]:dep_ptr[i+1]]`.

    Returns
    -------
    (int64 array, int64 array)
        (succ_ptr, succ): item j's dependents are `succ[succ_ptr[j]:succ_ptr[j+1]]`.
    """
    n = len(dep_ptr) - 1
    order = np.argsort(dep_idx, kind="stable")
    succ = np.repeat(np.arange(n), np.diff(dep_ptr))[order]
    succ_ptr = np.concatenate([[0], np.cumsum(np.bincount(dep_idx, minlength=n))])
    return succ_ptr, succ


# ---- max-min water-filling ----------------------------------------------------------------------


def water_fill(link_cap: np.ndarray, cls_ptr: np.ndarray, cls_links: np.ndarray, mult: np.ndarray,
               cap: np.ndarray, prio: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rate of every class of flows, by strict priority.

    Parameters
    ----------
    link_cap : float array [links]
        Capacity of each link, bytes/s.
    cls_ptr, cls_links : int arrays
        CSR: `cls_links[cls_ptr[c]:cls_ptr[c+1]]` are the links of class c (each at least one).
    mult : float array [classes]
        Flows in each class; they all get the class's rate.
    cap : float array [classes]
        Rate cap per flow of each class, bytes/s (inf: none).
    prio : int array [classes]
        Strict priority class (0 first, on the full capacity; then 1 on what is left; ...).
    weight : float array, optional
        Per `cls_links` entry: link capacity one byte/s of the class uses (default 1).

    Returns
    -------
    float array [classes]
        Rate of each flow of each class, bytes/s.
    """
    n_c = len(mult)
    rate = np.zeros(n_c)
    if n_c == 0:
        return rate
    counts = np.diff(cls_ptr)
    ent_cls = np.repeat(np.arange(n_c), counts)
    ent_w = np.ones(len(cls_links)) if weight is None else weight
    used = np.zeros(len(link_cap))
    levels = prio[:1] if np.all(prio == prio[0]) else np.unique(prio)
    for level in levels:
        free = prio == level
        rem = link_cap - used
        while free.any():
            e_on = free[ent_cls]
            n_l = np.bincount(cls_links[e_on], weights=(mult[ent_cls] * ent_w)[e_on], minlength=len(link_cap))
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
            rem = rem - np.bincount(cls_links[e_new], weights=((mult * rate)[ent_cls] * ent_w)[e_new],
                                    minlength=len(link_cap))
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
    weight: np.ndarray | None = None  # per links entry (None: all 1)


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
    weight = None if flows.route_weight is None else np.asarray(flows.route_weight, dtype=float)
    if mode == "pipelined":
        bw = np.full(n, np.inf)
        if len(links):  # a weighted entry carries the flow at bandwidth / weight
            np.minimum.at(bw, tid, topo.link_bw[links] / (1.0 if weight is None else np.maximum(weight, 1e-300)))
        fill = np.where(hops > 1, (hops - 1) * np.minimum(chunk, flows.size) / np.where(np.isfinite(bw), bw, 1.0), 0.0)
        if flows.route_ptr is not None:  # explicit routes: the class key is the set of links (and weights) itself
            ids: dict = {}
            if weight is None:
                keys = (tuple(links[ptr[i]: ptr[i + 1]].tolist()) for i in range(n))
            else:
                keys = ((tuple(links[ptr[i]: ptr[i + 1]].tolist()), tuple(weight[ptr[i]: ptr[i + 1]].tolist()))
                        for i in range(n))
            key = np.fromiter((ids.setdefault(k, len(ids)) for k in keys), dtype=np.int64, count=n)
        else:
            key = flows.src * topo.n_nodes + flows.dst
        return _Units(ptr, links, flows.size, flows.start, flows.cap, flows.priority, lat + fill, key,
                      flows.dep_ptr, flows.dep_idx, np.arange(n), np.ones(n, dtype=bool), weight)
    return _store_and_forward_units(topo, flows, ptr, links, lat, weight)


def _store_and_forward_units(topo: Topology, flows: Flows, ptr, links, lat, weight) -> _Units:
    """Store-and-forward: one unit per hop, hop k+1 waits for hop k, a flow's first hop waits for
    its predecessors. A flow whose link set says its own latency (a tree: a stream through
    switches, an I/O multicast) has no hop order and stays one unit."""
    n = len(flows)
    hops = np.diff(ptr)
    whole = np.zeros(n, dtype=bool) if flows.latency is None else np.isfinite(np.asarray(flows.latency, float))
    split = (hops > 0) & ~whole
    k = np.where(split, hops, 1)  # units per flow
    n_units = int(k.sum())
    owner = np.repeat(np.arange(n), k)
    last_of = np.cumsum(k) - 1
    first_of = last_of - k + 1
    is_first = np.zeros(n_units, dtype=bool)
    is_first[first_of] = True
    last = np.zeros(n_units, dtype=bool)
    last[last_of] = True
    # a split unit has one link, a whole unit all of its flow's: the flow's links in order either way
    u_ptr = np.concatenate([[0], np.cumsum(np.where(split[owner], 1, hops[owner]))]).astype(np.int64)
    dcount = np.where(is_first, np.diff(flows.dep_ptr)[owner], 1)
    d_ptr = np.concatenate([[0], np.cumsum(dcount)])
    d_idx = np.empty(int(d_ptr[-1]), dtype=np.int64)
    not_first = np.flatnonzero(~is_first)
    d_idx[d_ptr[not_first]] = not_first - 1
    firsts = np.flatnonzero(is_first)
    for u in firsts[np.diff(flows.dep_ptr)[owner[firsts]] > 0]:
        f = owner[u]
        d_idx[d_ptr[u]: d_ptr[u + 1]] = last_of[flows.dep_idx[flows.dep_ptr[f]: flows.dep_ptr[f + 1]]]
    one = split[owner]
    first_link = links[np.minimum(u_ptr[:-1], max(len(links) - 1, 0))] if len(links) else np.zeros(n_units, np.int64)
    u_lat = np.where(one, topo.link_lat[first_link], np.where(whole[owner], lat[owner], 0.0))
    w_first = np.ones(n_units) if weight is None else weight[np.minimum(u_ptr[:-1], max(len(links) - 1, 0))]
    # class key: a one-link unit is its (link, weight); a whole flow is a class of its own
    pair_ids = np.unique(np.stack([first_link.astype(float), w_first], axis=1), axis=0, return_inverse=True)[1].ravel()
    key = np.where(one, pair_ids, -1 - owner)
    return _Units(u_ptr, links, flows.size[owner], np.where(is_first, flows.start[owner], 0.0), flows.cap[owner],
                  flows.priority[owner], u_lat, key, d_ptr, d_idx, owner, last, weight)


def simulate_flows(topo: Topology, flows: Flows, *, mode: str = "pipelined", chunk: float = 0.0,
                   record_timeline: bool = False) -> FlowResult:
    """Run `flows` on `topo` to completion (see module doc).

    Parameters
    ----------
    topo : Topology
        The network (its links' bandwidths are the capacities).
    flows : Flows
        What to run.
    mode : {"pipelined", "store-and-forward"}
        How a flow crosses its path (module doc).
    chunk : float
        Packet size for the pipeline fill of multi-hop flows, bytes (0: fluid).
    record_timeline : bool
        Keep every interval's per-link rates (`FlowResult.timeline`).

    Returns
    -------
    FlowResult
        Start, send end and arrival of every flow, bytes and busy time per link, events.

    Examples
    --------
    Two 1 GB flows on one 100 GB/s link share it, or run one after the other by priority:

    >>> from fabricsim.topology import parse_topology
    >>> topo = parse_topology("ring:4", "100GB/s", "0ns")
    >>> simulate_flows(topo, Flows(src=[0, 0], dst=[1, 1], size=[1e9, 1e9])).finish.tolist()
    [0.02, 0.02]
    >>> simulate_flows(topo, Flows([0, 0], [1, 1], [1e9, 1e9], priority=[0, 1])).finish.tolist()
    [0.01, 0.02]
    """
    if mode not in MODES:
        raise ConfigError("mode", mode, f"accepted: {', '.join(MODES)}")
    if chunk < 0:
        raise ConfigError("chunk", chunk, "accepted: a packet size >= 0 bytes")
    return _FlowRun(topo, flows, _units(topo, flows, mode, float(chunk)), record_timeline).run()


class _FlowRun:
    """The event loop's state: classes of units, event queues, per-unit times, gates."""

    def __init__(self, topo: Topology, flows: Flows, U: _Units, record_timeline: bool):
        self.topo, self.flows, self.U, self.record = topo, flows, U, record_timeline
        n = len(U.size)
        self.hops = np.diff(U.ptr)
        h = flows.holds
        gate = np.full(n, -1, dtype=np.int64) if h is None else np.asarray(h.gate, np.int64)[U.owner]
        ga, gc, gr = ((np.zeros(n),) * 3) if h is None else (np.asarray(x, float)[U.owner] for x in (h.compute, h.memory_time, h.rate))
        # classes: same route (and weights), cap, priority and gate
        key = np.stack([U.key.astype(float), U.cap, U.prio.astype(float), gate.astype(float), ga, gc, gr], axis=1)
        _, cls_rep, cls_of = np.unique(key, axis=0, return_index=True, return_inverse=True)
        self.cls_of = cls_of.ravel()
        n_cls = len(cls_rep)
        self.c_counts = self.hops[cls_rep]
        self.c_ptr = np.concatenate([[0], np.cumsum(self.c_counts)])
        ent = [np.arange(U.ptr[r], U.ptr[r + 1]) for r in cls_rep]
        ent = np.concatenate(ent) if n_cls else np.zeros(0, np.int64)
        self.c_links = U.links[ent]
        self.c_weight = None if U.weight is None else U.weight[ent]
        self.c_cap, self.c_prio = U.cap[cls_rep], U.prio[cls_rep]
        self.c_gate, self.c_ga, self.c_gc, self.c_gr = gate[cls_rep], ga[cls_rep], gc[cls_rep], gr[cls_rep]
        self.gated = np.flatnonzero(self.c_gate >= 0)
        n_groups = 1 if h is None else int(max(np.max(h.group, initial=-1), np.max(h.gate, initial=-1))) + 1
        self.hold_count = np.zeros(0 if h is None else len(h.group), dtype=np.int64)
        self.g_units, self.g_memory = np.zeros(n_groups), np.zeros(n_groups)  # largest share held per group
        if h is not None:  # holds of each group, CSR
            self.h_order = np.argsort(h.group, kind="stable")
            self.h_ptr = np.concatenate([[0], np.cumsum(np.bincount(h.group, minlength=n_groups))])
        self.succ_ptr, self.succ = successors(U.dep_ptr, U.dep_idx)
        self.waiting = np.diff(U.dep_ptr).copy()
        self.remaining = U.size.copy()
        self.t_start, self.t_sent, self.t_done = (np.full(n, np.nan) for _ in range(3))
        self.link_bytes = np.zeros(topo.n_links)
        self.link_busy = np.zeros(topo.n_links)
        self.timeline: list = []
        self.startq: list = []  # (time, seq, units)
        self.arriveq: list = []
        self.seq = 0
        self.now = 0.0
        self.dirty = True
        self.events = 0
        self.active = np.zeros(0, dtype=np.int64)  # units sending now
        self.cls_count = np.zeros(n_cls, dtype=np.int64)  # units sending now, per class (kept incrementally)
        self.slot = np.zeros(n_cls, dtype=np.int64)  # position of a class among the sending classes
        self.rate = np.zeros(0)
        self.load = np.zeros(topo.n_links)

    def run(self) -> FlowResult:
        ready0 = np.flatnonzero(self.waiting == 0)
        self._push_starts(ready0, self.U.start[ready0])
        while self.startq or self.arriveq or len(self.active):
            if self.dirty:
                self._rates()
            t_tx = self._advance()
            self._sends_end(t_tx)
            self._arrivals()
            self._starts()
        return self._result()

    def _rates(self) -> None:
        """Water-fill the classes that are sending; per-unit rates and per-link loads."""
        cidx = np.flatnonzero(self.cls_count)
        mult = self.cls_count[cidx]
        self.slot[cidx] = np.arange(len(cidx))
        if len(cidx):
            counts = self.c_counts[cidx]
            sub_ptr = np.concatenate([[0], np.cumsum(counts)])
            ent = np.repeat(self.c_ptr[cidx] - sub_ptr[:-1], counts) + np.arange(sub_ptr[-1])
            links = self.c_links[ent]
            w = None if self.c_weight is None else self.c_weight[ent]
            cap = self.c_cap
            if len(self.gated):  # gated classes run at their rate over their stretch under the holds
                cap = cap.copy()
                g = self.gated
                grp = self.c_gate[g]
                u, m = self.g_units[grp], self.g_memory[grp]
                st = stretch(self.c_ga[g], self.c_gc[g], u, m)
                cap[g] = np.minimum(cap[g], np.where(np.isfinite(st), self.c_gr[g] / st, 0.0))
            r = water_fill(self.topo.link_bw, sub_ptr, links, mult.astype(float), cap[cidx], self.c_prio[cidx], w)
            self.rate = r[self.slot[self.cls_of[self.active]]]
            per_entry = np.repeat(r * mult, counts) * (1.0 if w is None else w)
            self.load = np.bincount(links, weights=per_entry, minlength=self.topo.n_links)
        else:
            self.rate = np.zeros(0)
            self.load = np.zeros(self.topo.n_links)
        self.dirty = False

    def _advance(self):
        """Move time to the next event; account bytes and busy time on the links."""
        t_next, t_tx = np.inf, None
        if len(self.active):
            with np.errstate(divide="ignore"):
                t_tx = self.now + self.remaining[self.active] / self.rate
            t_next = float(t_tx.min())
        if self.startq:
            t_next = min(t_next, self.startq[0][0])
        if self.arriveq:
            t_next = min(t_next, self.arriveq[0][0])
        if not np.isfinite(t_next):
            raise RuntimeError("flow model stalled: flows with zero rate")
        dt = t_next - self.now
        if dt > 0 and len(self.active):
            self.remaining[self.active] -= self.rate * dt
            self.link_bytes += self.load * dt
            self.link_busy += np.where(self.load > 0, dt, 0.0)
            if self.record:
                self.timeline.append((self.now, t_next, self.load.copy()))
        self.now = t_next
        self.events += 1
        return t_tx

    def _sends_end(self, t_tx) -> None:
        """Units whose last byte left now: they arrive after their latency."""
        if not len(self.active):
            return
        U, now = self.U, self.now
        fin = (self.remaining[self.active] <= 1e-9 * np.maximum(U.size[self.active], 1.0)) | (t_tx <= now * (1 + 1e-12) + 1e-18)
        if fin.any():
            done = self.active[fin]
            np.subtract.at(self.cls_count, self.cls_of[done], 1)
            self.active = self.active[~fin]
            self.rate = self.rate[~fin]
            self.remaining[done] = 0.0
            self.t_sent[done] = now
            self._arrive_later(done, now + U.lat[done])
            self.dirty = True

    def _arrivals(self) -> None:
        """Units arriving now: apply their flows' marks, release successors."""
        U, now = self.U, self.now
        while self.arriveq and self.arriveq[0][0] <= now:
            _, _, units = heapq.heappop(self.arriveq)
            self.t_done[units] = now
            if self.flows.holds is not None:
                self._mark(U.owner[units[U.last[units]]])
            a, c = self.succ_ptr[units], self.succ_ptr[units + 1] - self.succ_ptr[units]
            nxt = self.succ[np.repeat(a - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))]
            if len(nxt):
                np.subtract.at(self.waiting, nxt, 1)
                ok = np.unique(nxt[self.waiting[nxt] == 0])
                self._push_starts(ok, np.maximum(now, U.start[ok]))

    def _mark(self, owners: np.ndarray) -> None:
        """Raise and lower the holds of flows arriving now; the largest shares per group follow."""
        h = self.flows.holds
        a, c = h.mark_ptr[owners], h.mark_ptr[owners + 1] - h.mark_ptr[owners]
        if not c.sum():
            return
        ent = np.repeat(a - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))
        idx = np.asarray(h.mark_idx)[ent]
        np.add.at(self.hold_count, idx, np.asarray(h.mark_delta)[ent])
        for grp in np.unique(h.group[idx]):
            ids = self.h_order[self.h_ptr[grp]: self.h_ptr[grp + 1]]
            on = ids[self.hold_count[ids] > 0]
            u = float(np.max(h.units[on], initial=0.0))
            m = float(np.max(h.memory[on], initial=0.0))
            if u != self.g_units[grp] or m != self.g_memory[grp]:
                self.g_units[grp], self.g_memory[grp] = u, m
                self.dirty = True

    def _starts(self) -> None:
        """Units starting now: empty ones arrive after their latency, the others send."""
        U, now = self.U, self.now
        while self.startq and self.startq[0][0] <= now:
            _, _, units = heapq.heappop(self.startq)
            self.t_start[units] = now
            empty = (self.hops[units] == 0) | (U.size[units] == 0)
            if empty.any():
                e = units[empty]
                self.t_sent[e] = now
                self._arrive_later(e, now + U.lat[e])
            go = units[~empty]
            if len(go):
                np.add.at(self.cls_count, self.cls_of[go], 1)
                self.active = np.concatenate([self.active, go])
                self.rate = np.concatenate([self.rate, np.zeros(len(go))])
                self.dirty = True

    def _push_starts(self, units: np.ndarray, when: np.ndarray) -> None:
        for tw in np.unique(when):
            heapq.heappush(self.startq, (float(tw), self.seq, units[when == tw]))
            self.seq += 1

    def _arrive_later(self, units: np.ndarray, when: np.ndarray) -> None:
        for i, tw in enumerate(np.unique(when)):
            heapq.heappush(self.arriveq, (float(tw), self.seq + i, units[when == tw]))
        self.seq += len(units)

    def _result(self) -> FlowResult:
        U, n = self.U, len(self.flows)
        finish, sent = np.full(n, np.nan), np.full(n, np.nan)
        first_start = np.full(n, np.inf)
        finish[U.owner[U.last]] = self.t_done[U.last]
        sent[U.owner[U.last]] = self.t_sent[U.last]
        np.minimum.at(first_start, U.owner, self.t_start)
        if np.isnan(finish).any():
            bad = int(np.flatnonzero(np.isnan(finish))[0])
            raise ConfigError("flows", f"flow {bad}", "never started: its predecessors form a cycle or never finish")
        return FlowResult(first_start, sent, finish, self.link_bytes, self.link_busy, self.events, tuple(self.timeline))
