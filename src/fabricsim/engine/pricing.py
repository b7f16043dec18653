"""What one collective, p2p or io transfer costs on the network, alone.

The analytical engine asks for the time of (collective, group, size) when a collective starts.
The answer comes from the configured network model (`network.model`) run on the placed schedule
of the chosen algorithm for that group (prepared once per (collective, group), priced per size),
with the endpoint's injection limit for it (`system.endpoint`). Answers are cached.

The pricer is also where the endpoint policy meets the schedule: `demand(coll, group)` is what the
collective asks of each member's endpoint (network and memory bytes per byte, from its schedule;
its latency alone, from the network model), `injection_for` the rate the policy allows it, and
`held(demand, size, duration)` what it holds of the NPU while it runs. Both engines ask here, so
they price the same collective the same way.

Phases: the analytical models split a collective into phases, runs of steps on the same network
dimensions (a hierarchical all-reduce on a 2-D network: reduce-scatter on dimension 0, on
dimension 1, then all-gather back), so the engine can pipeline the chunks of a collective through
its phases; a flow model or a stream prices the whole collective as one phase.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..collectives.algorithm import AlgorithmChoice
from ..collectives.api import build_schedule
from ..collectives.registry import AUTO, algorithms_for, choose_algorithm, get_algorithm
from ..ir import Schedule
from ..errors import ConfigError
from ..network.flow import Flows
from ..network.flow_model import limit_injection
from ..network.model import NetworkModel, get_network_model
from ..network.tuner import PricedCollective, price_collective
from ..system.policies import Ideal
from ..system.npu import NPU
from ..system.resources import CommDemand, EndpointModel, Held, collective_demand, transfer_demand
from ..topology.graph import Topology
from ..vocab import COLLECTIVES, IODirection, normalize_collective

DEFAULT_ALGORITHMS = {c: AUTO for c in COLLECTIVES}
"""auto everywhere: NCCL's choice per size on a GPU cluster, ring (direct for all-to-all) elsewhere
(`network.tuner`), as `fabricsim collective` defaults to."""
REFERENCE_SIZE = 2.0**30
"""The size whose chosen schedule stands for an `auto` collective where no size is asked (its
endpoint demand): 1 GiB, where NCCL runs at its bandwidth."""


def normalize_algorithms(algorithms: Mapping[str, object] | None, where: str = "network.algorithms"
                         ) -> dict[str, AlgorithmChoice]:
    """Per-collective algorithm choice, validated and typed.

    Parameters
    ----------
    algorithms : mapping, optional
        collective -> `name[,key=value...]` (or an AlgorithmChoice); default: auto (NCCL's
        choice per size on a GPU cluster, ring and direct elsewhere).
    where : str
        The config field named in errors.

    Returns
    -------
    dict
        Every collective -> AlgorithmChoice.
    """
    out = {c: choose_algorithm(a) for c, a in DEFAULT_ALGORITHMS.items()}
    for coll, alg in (algorithms or {}).items():
        c = normalize_collective(coll)
        choice = choose_algorithm(alg, where=f"{where}.{coll}")
        if choice.name != AUTO and c not in get_algorithm(choice.name).collectives:
            raise ConfigError(f"{where}.{coll}", str(alg),
                              f"accepted: an algorithm serving {c} ({', '.join(algorithms_for(c))})")
        out[c] = choice
    return out


def io_flows(topo: Topology, direction: int, members: tuple[int, ...], shards: int, size: float,
             priority: int = 0) -> Flows:
    """An io task as flows, one per (controller, shard).

    The data are striped over every controller: each controller serves an equal slice of every
    shard, multicast down the union of its routes to the shard's members (a load) or reduced up
    the reverse routes (a store), streaming at one rate. All controllers finish together, so the
    task runs at the controllers' full rate unless a link on the way is the hotspot.

    Parameters
    ----------
    topo : Topology
        The network; its I/O controllers are `topo.io_nodes`.
    direction : int
        `IODirection.LOAD` or `IODirection.STORE`.
    members : tuple of int
        NPU ids, listed shard by shard (equal shards).
    shards : int
        Shards the data is split into, >= 1.
    size : float
        Bytes of the whole task.
    priority : int
        Strict priority class of the flows (0 = highest).

    Returns
    -------
    Flows
        Explicit link sets and latencies (s), controller-major; ConfigError when the topology has
        no I/O controllers.
    """
    ctrl = topo.io_nodes
    if len(ctrl) == 0:
        raise ConfigError("topology", topo.name, "has no I/O controllers; accepted for I/O (weight streaming, input "
                                                 "loading): wafer:5x4, fred:5x4,... (io= and ios= options)")
    per = len(members) // shards
    pairs = [(int(c), j) for c in ctrl for j in range(shards)]
    link_sets, lat, ends = [], [], []
    for c, j in pairs:
        mem = np.asarray(members[j * per:(j + 1) * per], dtype=np.int64)
        src, dst = (np.full(len(mem), c), mem) if direction == IODirection.LOAD else (mem, np.full(len(mem), c))
        ptr, links = topo.route(src, dst)
        link_sets.append(np.unique(links))
        lat.append(float(np.max(np.add.reduceat(topo.link_lat[links], ptr[:-1])) if len(links) else 0.0))
        ends.append(c)
    ptr = np.concatenate([[0], np.cumsum([len(x) for x in link_sets])]).astype(np.int64)
    k = len(pairs)
    return Flows(ends, ends, np.full(k, size / k), None, None, np.full(k, int(priority)), None, None, ptr,
                 np.concatenate(link_sets).astype(np.int64), np.array(lat))


class CommPricer:
    """Cached times of collectives, p2p and io transfers alone on `topo` (seconds).

    Parameters
    ----------
    topo : Topology
        The network.
    model : str or NetworkModel
        A registered network model (`network.model.get_network_model`).
    algorithms : mapping, optional
        collective -> algorithm choice (`normalize_algorithms`).
    endpoint : EndpointModel, optional
        What the NPU's endpoint allows communication (its injection limit) and what communication
        holds of it; default `ideal` (nothing).
    npu : NPU, optional
        The NPU the endpoint serves.

    Examples
    --------
    A ring all-reduce of 8 GB on 8 NPUs with 100 GB/s links takes 2 x 7/8 x 8e9 / 100e9 s:

    >>> from fabricsim.topology import parse_topology
    >>> pricer = CommPricer(parse_topology("ring:8", "100GB/s", "0ns"), "congestion-aware")
    >>> pricer.collective("all-reduce", tuple(range(8)), 8e9), pricer.p2p(0, 4, 1e9)
    (0.14, 0.01)
    """

    def __init__(self, topo: Topology, model: str | NetworkModel = "congestion-aware",
                 algorithms: Mapping[str, object] | None = None, endpoint: EndpointModel | None = None,
                 npu: NPU | None = None):
        self.topo = topo
        self.model = get_network_model(model)
        self.algorithms = normalize_algorithms(algorithms)
        self.endpoint = endpoint if endpoint is not None else Ideal()
        self.npu = npu if npu is not None else NPU()
        self._schedules: dict = {}
        self._costs: dict = {}
        self._times: dict = {}
        self._demands: dict = {}

    def for_system(self, endpoint: EndpointModel, npu: NPU) -> "CommPricer":
        """This pricer with the endpoint of a system; shares the placed schedules already built.

        The engines call this, so the system is the one place the endpoint is chosen.

        Parameters
        ----------
        endpoint : EndpointModel
            The system's endpoint policy.
        npu : NPU
            The NPU it serves.

        Returns
        -------
        CommPricer
            `self` when nothing changes, else a new pricer.
        """
        if endpoint == self.endpoint and npu == self.npu:
            return self
        other = CommPricer(self.topo, self.model, self.algorithms, endpoint, npu)
        other._schedules = self._schedules
        return other

    def scratch(self) -> "CommPricer":
        """A pricer like this one (topology, model, algorithms, endpoint) with empty caches of its
        own, dropped with it: for one-off pricings, such as the fold check's shifted copies
        (`engine.fold.asymmetry`), so that nothing is kept per replica.

        Returns
        -------
        CommPricer
        """
        return CommPricer(self.topo, self.model, self.algorithms, self.endpoint, self.npu)

    def _build(self, coll: str, group: tuple[int, ...], choice: AlgorithmChoice) -> Schedule:
        """The placed schedule of one algorithm choice (cached; shared with `for_system` copies)."""
        key = (coll, group, choice)
        s = self._schedules.get(key)
        if s is None:
            s = self._schedules[key] = build_schedule(self.topo, coll, choice, group=list(group))
        return s

    def schedule(self, coll: str, group: tuple[int, ...], size: float | None = None) -> Schedule:
        """The placed schedule that runs `coll` for `group` (cached): the configured algorithm's,
        or under `auto` the one chosen at `size` bytes (default `REFERENCE_SIZE`).

        Parameters
        ----------
        coll : str
            Canonical collective name.
        group : tuple of int
            NPU ids.
        size : float, optional
            Bytes, for an `auto` choice.

        Returns
        -------
        Schedule
        """
        priced = self.priced(coll, group)
        if len(priced.candidates) == 1:
            return priced.candidates[0].schedule
        return priced.schedule_at(REFERENCE_SIZE if size is None or size <= 0 else float(size))

    def schedule_demand(self, sched: Schedule) -> CommDemand:
        """What one placed schedule asks of its members' endpoints per byte (cached by identity).

        Parameters
        ----------
        sched : Schedule
            One of this pricer's placed schedules (a candidate of `priced`).

        Returns
        -------
        CommDemand
        """
        key = ("demand", id(sched))
        d = self._demands.get(key)
        if d is None:
            lat = float(self.model.collective(self.topo, sched).times([0.0])[0]) if self.endpoint.interferes else 0.0
            d = self._demands[key] = collective_demand(sched, lat)
        return d

    def demand(self, coll: str, group: tuple[int, ...]) -> CommDemand:
        """What the collective asks of each member's endpoint per byte (cached): network and memory
        bytes from its schedule, its latency alone from the network model.

        Parameters
        ----------
        coll : str
            Canonical collective name.
        group : tuple of int
            NPU ids.

        Returns
        -------
        CommDemand
        """
        return self.schedule_demand(self.schedule(coll, group))

    def p2p_demand(self, src: int, dst: int) -> CommDemand:
        """What a point-to-point transfer asks of its endpoints per byte (one read, one write; cached).

        Parameters
        ----------
        src, dst : int
            Topology node ids.

        Returns
        -------
        CommDemand
        """
        key = ("p2p", src, dst)
        d = self._demands.get(key)
        if d is None:
            d = self._demands[key] = transfer_demand(self._route_latency(src, dst))
        return d

    def io_demand(self, shards: int) -> CommDemand:
        """What an io task asks of each member per byte of the task: its shard, landed once.

        Parameters
        ----------
        shards : int
            Shards the data is split into.

        Returns
        -------
        CommDemand
        """
        return transfer_demand(0.0, 1.0 / max(int(shards), 1))

    def _route_latency(self, src: int, dst: int) -> float:
        if src == dst:
            return 0.0
        _, links = self.topo.route([src], [dst])
        return float(self.topo.link_lat[links].sum())

    def injection_for(self, demand: CommDemand) -> float:
        """Bytes/s each member's endpoint can inject for a communication of this demand.

        Parameters
        ----------
        demand : CommDemand

        Returns
        -------
        float
            Bytes/s (inf: the links decide).
        """
        return float(self.endpoint.injection_rate(self.npu, demand))

    def held(self, demand: CommDemand, size: float, duration: float) -> Held:
        """What a communication of this demand holds of each member's NPU while `size` bytes take
        `duration` seconds.

        Parameters
        ----------
        demand : CommDemand
        size : float
            Bytes it moves (of the collective's size).
        duration : float
            Seconds it runs.

        Returns
        -------
        Held
        """
        pace = size / duration if duration > 0 else 0.0
        return self.endpoint.held(self.npu, demand, pace)

    def endpoint_floor(self, coll: str, group: tuple[int, ...], size: float) -> float:
        """The least time a collective's bytes need through its members' endpoints: what the
        busiest member sends over its injection rate (0 without a limit). Chunks pipelined through
        phases on different links still share the endpoint (the engine's floor for a wave).

        Parameters
        ----------
        coll : str
            Canonical collective name.
        group : tuple of int
            NPU ids.
        size : float
            Bytes.

        Returns
        -------
        float
            Seconds.
        """
        d = self.demand(coll, group)
        rate = self.injection_for(d)
        return d.sent * size / rate if np.isfinite(rate) and rate > 0 else 0.0

    def priced(self, coll: str, group: tuple[int, ...]) -> PricedCollective:
        """The collective priced by the one pricing path (`network.tuner.price_collective`), each
        candidate with its endpoint's injection limit (cached): its candidates, the one chosen
        at each size, their times.

        Parameters
        ----------
        coll : str
            Canonical collective name.
        group : tuple of int
            NPU ids.

        Returns
        -------
        PricedCollective
        """
        key = (coll, group)
        got = self._costs.get(key)
        if got is None:
            def injection(sched: Schedule) -> float | None:
                rate = self.injection_for(self.schedule_demand(sched))
                return None if np.isinf(rate) else rate

            got = self._costs[key] = price_collective(
                self.topo, coll, self.algorithms[coll], self.model, group=list(group), injection=injection,
                build=lambda choice: self._build(coll, group, choice))
        return got

    def phase_times(self, coll: int | str, group: tuple[int, ...], size: float) -> np.ndarray:
        """Time of each phase of the collective alone (one phase on a flow model or for a stream).

        Parameters
        ----------
        coll : int or str
            Canonical collective name, or its index in `COLLECTIVES`.
        group : tuple of int
            NPU ids.
        size : float
            Collective size, bytes.

        Returns
        -------
        float array
            Seconds per phase; [0] for fewer than two members or no bytes.
        """
        coll = COLLECTIVES[coll] if isinstance(coll, (int, np.integer)) else coll
        if len(group) < 2 or size <= 0:
            return np.zeros(1)
        key = ("phases", coll, group, float(size))
        t = self._times.get(key)
        if t is None:
            t = self._times[key] = self.priced(coll, group).phase_times(float(size))
        return t

    def collective(self, coll: int | str, group: tuple[int, ...], size: float) -> float:
        """Time of the whole collective alone.

        Parameters
        ----------
        coll : int or str
            Canonical collective name, or its index in `COLLECTIVES`.
        group : tuple of int
            NPU ids.
        size : float
            Collective size, bytes.

        Returns
        -------
        float
            Seconds; 0 for fewer than two members or no bytes.
        """
        coll = COLLECTIVES[coll] if isinstance(coll, (int, np.integer)) else coll
        if len(group) < 2 or size <= 0:
            return 0.0
        key = (coll, group, float(size))
        t = self._times.get(key)
        if t is None:
            t = self._times[key] = float(self.priced(coll, group).times([float(size)])[0])
        return t

    def io(self, direction: int, members: tuple[int, ...], shards: int, size: float) -> float:
        """Time of an io task alone: every controller's flow at once.

        A hotspot (many controllers' trees on one link, the wafer mesh's) sets the rate.

        Parameters
        ----------
        direction : int
            `IODirection.LOAD` or `IODirection.STORE`.
        members : tuple of int
            NPU ids, listed shard by shard.
        shards : int
            Shards the data is split into.
        size : float
            Bytes of the whole task.

        Returns
        -------
        float
            Seconds; 0 for no bytes.
        """
        if size <= 0:
            return 0.0
        key = ("io", direction, members, shards, float(size))
        t = self._times.get(key)
        if t is None:
            fl = io_flows(self.topo, direction, members, shards, size)
            rate = self.injection_for(self.io_demand(shards))
            topo, fl = limit_injection(self.topo, fl, rate, stream=True)  # what leaves an NPU crosses its endpoint (stores)
            t = self._times[key] = self.model.flows(topo, fl).makespan
        return t

    def p2p(self, src: int, dst: int, size: float) -> float:
        """A point-to-point transfer alone.

        Parameters
        ----------
        src, dst : int
            Topology node ids.
        size : float
            Bytes.

        Returns
        -------
        float
            Seconds; 0 for src == dst or no bytes. With an endpoint limit r: at least the path
            latency plus size / r.
        """
        if src == dst or size <= 0:
            return 0.0
        key = ("p2p", src, dst, float(size))
        t = self._times.get(key)
        if t is None:
            t = self.model.p2p(self.topo, src, dst, size)
            d = self.p2p_demand(src, dst)
            rate = self.injection_for(d)
            if np.isfinite(rate):
                t = max(t, d.latency + size / rate)
            self._times[key] = t
        return t
