"""What one collective or point-to-point transfer costs on the network, alone.

The engine asks for the time of (collective, group, size) when a collective starts. The answer
comes from a network model run on the placed schedule of the chosen algorithm for that group:
the analytical model (congestion-aware or -unaware: routed once per (collective, group), then
priced per size) or the flow model (dataflow, max-min). Answers are cached.

Phases: consecutive steps that use links of the same network dimensions form a phase (a block
of lanes is one phase), e.g. a hierarchical all-reduce on a 2-D network has reduce-scatter on
dimension 0, on dimension 1, then all-gather back. `phase_times` gives each phase's time, so
the engine can pipeline the chunks of a collective through its phases (chunk i+1 in dimension 0
while chunk i is in dimension 1).

A p2p transfer of S bytes from a to b costs the path latency plus S over the slowest link of
its route (alone on the network).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..collectives.api import build_schedule, normalize_collective
from ..collectives.registry import ALGORITHMS, get_algorithm
from ..collectives.schedule import COLLECTIVES, lane_total
from ..errors import ConfigError
from ..network.analytical import MODELS, route_schedule, step_times
from ..network.analytical import normalize_model as _normalize_analytical
from ..network.flow import FLOW_MODELS, STREAMING, Flows, streaming_flows
from ..topology.graph import Topology
from ..workload.graph import IO_LOAD

DEFAULT_ALGORITHMS = {"all-reduce": "ring", "reduce-scatter": "ring", "all-gather": "ring",
                      "all-to-all": "direct", "broadcast": "ring", "reduce": "ring"}


def normalize_network_model(name: str) -> str:
    """An analytical model's canonical name, or `flow` / `flow-store-and-forward`."""
    key = str(name).strip().lower()
    if key in FLOW_MODELS:
        return key if key != "flow-pipelined" else "flow"
    try:
        return _normalize_analytical(name)
    except ConfigError:
        raise ConfigError("model", name, f"accepted: {', '.join(MODELS)} (analytical = congestion-aware), "
                                         f"{', '.join(FLOW_MODELS)}") from None


def parse_algorithm(text: str, where: str = "algorithm") -> tuple[str, dict]:
    """`ring` or `ring,bidirectional=true` or `hierarchical,inner=direct`: (name, options)."""
    name, *opts = [x.strip() for x in str(text).split(",")]
    a = get_algorithm(name)
    options: dict = {}
    for o in opts:
        k, eq, v = o.partition("=")
        k = k.strip().replace("-", "_")
        if not eq or k not in a.options:
            raise ConfigError(where, text, f"accepted options of {a.name}: {', '.join(sorted(a.options)) or 'none'} "
                                           "(as NAME,KEY=VALUE)")
        v = v.strip()
        options[k] = True if v.lower() == "true" else False if v.lower() == "false" else int(v) if v.isdigit() else v
    return a.name, options


def normalize_algorithms(algorithms: Mapping[str, str] | None) -> dict[str, str]:
    """Per-collective algorithm choice, validated: collective -> `name[,key=value...]` (defaults:
    ring; direct for all-to-all)."""
    out = dict(DEFAULT_ALGORITHMS)
    for coll, alg in (algorithms or {}).items():
        c = normalize_collective(coll)
        name, opts = parse_algorithm(alg, f"network.algorithms.{coll}")
        if c not in ALGORITHMS[name].collectives:
            raise ConfigError(f"network.algorithms.{coll}", alg,
                              f"accepted: an algorithm serving {c} "
                              f"({', '.join(sorted(n for n, x in ALGORITHMS.items() if c in x.collectives))})")
        out[c] = ",".join([name] + [f"{k}={v}" for k, v in opts.items()])
    return out


def _phases(topo: Topology, steps, routed) -> list[np.ndarray]:
    """Indices of the step shapes of each phase: a run of steps on the same set of dimensions
    (a block of lanes counts as one step)."""
    keys = []
    for st, r in zip(steps, routed):
        if st.lane is not None:
            keys.append(("lanes", st.lane[0]))
        else:
            used = np.flatnonzero(np.diff(r.incidence.indptr))  # links (rows) carrying a transfer
            keys.append(tuple(np.unique(topo.link_dim[used]).tolist()))
    out: list[list[int]] = []
    prev = object()
    for i, k in enumerate(keys):
        if k != prev or not out:
            out.append([])
        out[-1].append(i)
        prev = k
    return [np.array(x, dtype=np.int64) for x in out]


def io_flows(topo: Topology, direction: int, members: tuple[int, ...], shards: int, size: float,
             priority: int = 0) -> Flows:
    """An io task as flows, one per (controller, shard) it serves: controller c serves shard
    c mod `shards` (with more shards than controllers, shard j comes from controller j mod the
    count) with an equal part of that shard's bytes, multicast down the union of its routes to the
    shard's members (a load) or reduced up the reverse routes (a store), streaming at one rate."""
    ctrl = np.asarray(topo.meta.get("io_nodes", ()), dtype=np.int64)
    if len(ctrl) == 0:
        raise ConfigError("topology", topo.name, "has no I/O controllers; accepted for I/O (weight streaming, input "
                                                 "loading): wafer:5x4, fred:5x4,... (io= and ios= options)")
    per = len(members) // shards
    if shards <= len(ctrl):  # controller c serves shard c mod shards
        pairs = [(int(c), i % shards) for i, c in enumerate(ctrl)]
    else:  # more shards than controllers: shard j from controller j mod (controllers)
        pairs = [(int(ctrl[j % len(ctrl)]), j) for j in range(shards)]
    n_srv = np.bincount([j for _, j in pairs], minlength=shards)
    link_sets, lat, sizes, ends = [], [], [], []
    for c, j in pairs:
        mem = np.asarray(members[j * per:(j + 1) * per], dtype=np.int64)
        src, dst = (np.full(len(mem), c), mem) if direction == IO_LOAD else (mem, np.full(len(mem), c))
        ptr, links = topo.route(src, dst)
        link_sets.append(np.unique(links))
        lat.append(float(np.max(np.add.reduceat(topo.link_lat[links], ptr[:-1])) if len(links) else 0.0))
        sizes.append(size / shards / n_srv[j])
        ends.append(c)
    ptr = np.concatenate([[0], np.cumsum([len(x) for x in link_sets])]).astype(np.int64)
    k = len(pairs)
    return Flows(ends, ends, np.array(sizes), None, None, np.full(k, int(priority)), None, None, ptr,
                 np.concatenate(link_sets).astype(np.int64), np.array(lat))


class CommPricer:
    """Cached times of collectives and p2p transfers on `topo` (seconds)."""

    def __init__(self, topo: Topology, model: str = "congestion-aware", algorithms: Mapping[str, str] | None = None):
        self.topo = topo
        self.model = normalize_network_model(model)
        self.algorithms = normalize_algorithms(algorithms)
        # collectives whose algorithm streams through switches (in-network: FRED's flows)
        self.streaming = {c for c, a in self.algorithms.items() if parse_algorithm(a)[0] in STREAMING}
        self._routed: dict = {}
        self._times: dict = {}
        self._p2p: dict = {}

    def schedule(self, coll: str, group: tuple[int, ...]):
        """The placed schedule of `coll` for `group` with the configured algorithm. Ring algorithms
        visit the members in the topology's preferred ring order when it has one (the wafer's
        Hamiltonian cycle), so a logical ring takes one-hop steps where it can."""
        name, opts = parse_algorithm(self.algorithms[coll])
        members = list(group)
        order = self.topo.meta.get("ring_order")
        if order is not None and name == "ring":
            pos = np.empty(self.topo.n_npus, dtype=np.int64)
            pos[np.asarray(order)] = np.arange(len(order))
            members = sorted(members, key=lambda r: pos[r])
        return build_schedule(self.topo, coll, name, group=members, **opts)

    def _schedule_cost(self, coll: str, group: tuple[int, ...]):
        key = (coll, group)
        got = self._routed.get(key)
        if got is None:
            sched = self.schedule(coll, group)
            if coll in self.streaming:  # one phase: the flows through the whole tree
                got = (sched, "streaming", None)
            else:
                routed = None if self.model in FLOW_MODELS else route_schedule(self.topo, sched)
                got = (sched, routed, None if routed is None else _phases(self.topo, sched.steps, routed))
            self._routed[key] = got
        return got

    def _streaming_time(self, sched, size: float) -> float:
        """In-network flows alone: each flow streams at its tree's slowest link, after the tree's
        depth in latency; serial flows (reduce-scatter, all-gather) add up."""
        f = streaming_flows(self.topo, sched, size)
        bw = np.minimum.reduceat(self.topo.link_bw[f.route_links], f.route_ptr[:-1])
        return float(np.sum(f.latency + f.size / bw))

    def _step_costs(self, routed, size: float) -> np.ndarray:
        """Analytical time of every step shape, all its repetitions, for one size: [shapes, 1]."""
        sizes = np.array([float(size)])
        per = np.stack([step_times(self.topo, r, sizes, self.model) for r in routed])
        return per * np.array([r.repeat for r in routed])[:, None]

    def phase_times(self, coll: int | str, group: tuple[int, ...], size: float) -> np.ndarray:
        """Time of each phase of the collective (s); they add up to `collective(...)`. The flow
        model prices the whole collective as one phase."""
        coll = COLLECTIVES[coll] if isinstance(coll, (int, np.integer)) else coll
        if len(group) < 2 or size <= 0:
            return np.zeros(1)
        key = ("phases", coll, group, float(size))
        t = self._times.get(key)
        if t is None:
            sched, routed, phase = self._schedule_cost(coll, group)
            if routed is None or isinstance(routed, str):
                t = np.array([self.collective(coll, group, size)])
            else:
                cost = self._step_costs(routed, size)
                t = np.array([float(lane_total([sched.steps[i] for i in idx], cost[idx])[0]) for idx in phase])
            self._times[key] = t
        return t

    def collective(self, coll: int | str, group: tuple[int, ...], size: float) -> float:
        coll = COLLECTIVES[coll] if isinstance(coll, (int, np.integer)) else coll
        if len(group) < 2 or size <= 0:
            return 0.0
        key = (coll, group, float(size))
        t = self._times.get(key)
        if t is None:
            sched, routed, _ = self._schedule_cost(coll, group)
            if isinstance(routed, str):
                t = self._streaming_time(sched, size)
            elif routed is None:
                from ..network.flow import time_collective_flow

                t = float(time_collective_flow(self.topo, sched, [size], mode=FLOW_MODELS[self.model])[0])
            else:
                t = float(lane_total(sched.steps, self._step_costs(routed, size))[0]) if routed else 0.0
            self._times[key] = t
        return t

    def io(self, direction: int, members: tuple[int, ...], shards: int, size: float) -> float:
        """Time of an io task alone: all controllers' flows at once on the flow model, so the
        mesh's I/O hotspot (many controllers' trees on one link) sets the rate."""
        if size <= 0:
            return 0.0
        key = ("io", direction, members, shards, float(size))
        t = self._times.get(key)
        if t is None:
            from ..network.flow import simulate_flows

            t = simulate_flows(self.topo, io_flows(self.topo, direction, members, shards, size)).makespan
            self._times[key] = t
        return t

    def p2p(self, src: int, dst: int, size: float) -> float:
        if src == dst or size <= 0:
            return 0.0
        key = (src, dst)
        got = self._p2p.get(key)
        if got is None:
            ptr, links = self.topo.route([src], [dst])
            got = (float(self.topo.link_lat[links].sum()), float(self.topo.link_bw[links].min()) if len(links) else np.inf)
            self._p2p[key] = got
        lat, bw = got
        return lat + size / bw
