"""The flow-level model behind the network-model interface (`network.model`).

A collective alone is its flows (`network.dataflow.schedule_flows`: dataflow, or streams
through a switch tree) simulated max-min fair (`network.flow.simulate_flows`); the flows and
their dependencies do not depend on the size, so they are built once and scaled per size. On a
torus or ring where translations map the schedule onto itself, the collective alone runs as one
flow per orbit of transfers instead (`network.flow_quotient`: exact, decided in `FlowCollective`).
A collective has one phase here (the model overlaps its steps by itself). An endpoint injection
limit is a private link per NPU that the NPU's outgoing traffic crosses (`with_injection`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..collectives.schedule import Schedule
from ..limits import check_limit
from ..topology.graph import Topology
from .dataflow import runs_as_streams, schedule_flows
from .flow import MODES, FlowResult, Flows, simulate_flows


def endpoint_topology(topo: Topology, extra_links: int, capacity) -> Topology:
    """`topo` with private links appended: resources that only some flows use (compute, endpoints).

    Parameters
    ----------
    topo : Topology
        The network.
    extra_links : int
        Links to append; link `n_links + i` goes from node i mod n_npus to itself, no latency.
    capacity : float or float array
        Capacity of each new link (bytes/s, or any unit the flows' weights are in).

    Returns
    -------
    Topology
        A copy with the extra links (dimension -1, no link class).
    """
    k = int(extra_links)
    own = np.arange(k) % max(topo.n_npus, 1)
    return replace(topo, link_src=np.concatenate([topo.link_src, own]),
                   link_dst=np.concatenate([topo.link_dst, own]),
                   link_bw=np.concatenate([topo.link_bw, np.broadcast_to(np.asarray(capacity, float), (k,))]),
                   link_lat=np.concatenate([topo.link_lat, np.zeros(k)]),
                   link_dim=np.concatenate([topo.link_dim, np.full(k, -1)]),
                   link_class=None if topo.link_class is None else np.concatenate([topo.link_class, np.full(k, -1)]))


def with_injection(topo: Topology, flows: Flows, rate: np.ndarray, link_base: int | None = None, *,
                   stream=False) -> Flows:
    """`flows` charged to an endpoint link per NPU, so each NPU's outgoing traffic is rate-limited.

    Every flow with a finite `rate[flow]` also crosses the endpoint link (`link_base + npu`,
    capacity 1) of the NPU it leaves, at weight 1/rate: an NPU's outgoing traffic of a collective
    together moves at most `rate` bytes/s. A transfer is charged at its source only (NPUs it
    crosses on a direct network forward it in their routers, not through their endpoints), also
    when it carries an explicit route (through a reduction unit, `Topology.route_reducing`); a
    stream through switches (`dataflow.runs_as_streams`) at every NPU whose links it leaves (every
    member feeds it).

    Parameters
    ----------
    topo : Topology
        The network the flows run on (without the endpoint links).
    flows : Flows
        The flows (routed by `topo` unless they carry explicit link sets).
    rate : float array
        Injection limit of each flow's NPUs, bytes/s (inf: none).
    link_base : int, optional
        Id of NPU 0's endpoint link (default `topo.n_links`; see `endpoint_topology`).
    stream : bool or bool array
        Whether the flows (or each flow) are streams fed by every member; a stream needs an
        explicit link set.

    Returns
    -------
    Flows
        The same flows with explicit routes and weights (kept where given).
    """
    base = topo.n_links if link_base is None else int(link_base)
    n = len(flows)
    stream = np.broadcast_to(np.asarray(stream, dtype=bool), (n,))
    if flows.route_ptr is not None:
        ptr, links = np.asarray(flows.route_ptr, np.int64), np.asarray(flows.route_links, np.int64)
        w = np.ones(len(links)) if flows.route_weight is None else np.asarray(flows.route_weight, float)
    else:
        if stream.any():
            raise ValueError("with_injection: streams need explicit link sets")
        ptr, links = topo.route(flows.src, flows.dst)
        w = np.ones(len(links))
    tid = np.repeat(np.arange(n), np.diff(ptr))
    src = topo.link_src[links]
    hit = (src < topo.n_npus) & np.isfinite(rate[tid])
    hit &= stream[tid] | (src == flows.src[tid])  # a transfer: its source's endpoint only
    # one endpoint entry per (flow, NPU it leaves)
    pairs = np.unique(np.stack([tid[hit], src[hit]], axis=1), axis=0) if hit.any() else np.zeros((0, 2), np.int64)
    all_t = np.concatenate([tid, pairs[:, 0]])
    all_l = np.concatenate([links, base + pairs[:, 1]])
    all_w = np.concatenate([w, 1.0 / rate[pairs[:, 0]]])
    injected_first = np.concatenate([np.ones(len(tid), dtype=np.int8), np.zeros(len(pairs), dtype=np.int8)])
    order = np.lexsort((injected_first, all_t))  # per flow: its endpoint link, then its path
    new_ptr = np.concatenate([[0], np.cumsum(np.bincount(all_t, minlength=n))]).astype(np.int64)
    return replace(flows, route_ptr=new_ptr, route_links=all_l[order], route_weight=all_w[order])


def limit_injection(topo: Topology, flows: Flows, injection: float | None,
                    stream=False) -> tuple[Topology, Flows]:
    """Flows with every NPU's endpoint limited to one rate: `with_injection` and the endpoint links
    it uses (`endpoint_topology`, one per NPU, capacity 1).

    Parameters
    ----------
    topo : Topology
        The network the flows run on.
    flows : Flows
        The flows.
    injection : float, optional
        Bytes/s each NPU can inject (None or inf: no limit, and nothing changes).
    stream : bool or bool array
        As `with_injection`: whether the flows are streams fed by every member.

    Returns
    -------
    (Topology, Flows)
        The topology with the endpoint links and the charged flows, or both as given.
    """
    if injection is None or not np.isfinite(injection):
        return topo, flows
    charged = with_injection(topo, flows, np.full(len(flows), float(injection)), stream=stream)
    return endpoint_topology(topo, topo.n_npus, 1.0), charged


class FlowCollective:
    """A placed schedule prepared for the flow model: its flows built once, simulated per size.

    The one place that decides how a collective alone is simulated: a pipelined chain (ring
    broadcast, reduce) whose hops share no link as one piece through every hop and P - 1 pieces on
    one hop per route class (`flow_chain.chain_flows`: the same makespan); on a translation-invariant
    network (torus, ring) where translations map the schedule onto itself, one flow per orbit of
    transfers (`flow_quotient.quotient_flows`: exact, the same times as every transfer up to
    rounding, and a 16,384-rank ring all-reduce in O(p) flows instead of O(p^2)); else, where the
    schedule is independent rings each on its own links and blocks (Hamiltonian rings on a 2-D
    torus), each ring's orbits on a ring of its own (`flow_rings.ring_parts`, exact too); a streaming
    reduce-scatter or all-gather (fluid, no injection limit) as its p serial streams, each on its
    slowest link (`streams.SerialStreams.alone_flows`: they never send at once); otherwise every
    transfer (`dataflow.schedule_flows`). Never for flows merged with other traffic.

    Parameters
    ----------
    model : FlowModel
        The model that simulates it.
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`.
    injection : float, optional
        Bytes/s each NPU's endpoint can inject (None or inf: no limit).
    """

    def __init__(self, model: "FlowModel", topo: Topology, schedule: Schedule, injection: float | None = None):
        from .flow_chain import chain_flows
        from .flow_quotient import quotient_flows
        from .flow_rings import ring_parts
        from .streams import serial_streams

        self.model, self.schedule = model, schedule
        chain = chain_flows(topo, schedule)
        if chain is not None:  # a pipelined chain on hops that share no link: its makespan from few flows
            self.topo, self.unit = limit_injection(topo, chain.flows, injection)
            return
        kw = {"mode": model.mode, "chunk": model.chunk, "injection": injection}
        q = quotient_flows(topo, schedule, **kw)
        if q is None or q.orbit < schedule.p:  # independent rings may have larger orbits: the fewer flows
            r = ring_parts(topo, schedule, **kw)
            q = r if r is not None and (q is None or len(r.flows) < len(q.flows)) else q
        if q is not None:  # alone on a symmetric network, or independent rings: one flow per orbit
            self.topo, self.unit = q.topo, q.flows
            return
        streams = runs_as_streams(schedule, model.streams)
        serial = serial_streams(topo, schedule) if streams else None
        if serial is not None and model.chunk == 0 and (injection is None or not np.isfinite(injection)):
            self.topo, self.unit = topo, serial.alone_flows(topo.link_bw)  # each stream on its slowest link
            return
        if not streams:  # every transfer a flow: sized before it is built
            check_limit("flows", schedule.n_transfers,
                        f"flows ({schedule.algorithm} {schedule.collective} on {topo.name} alone: every transfer a "
                        "flow: no translation maps the schedule onto itself, and it is no set of independent "
                        "rings)", "algorithm", schedule.algorithm)
        unit = schedule_flows(topo, schedule, 1.0, stream=model.streams)
        self.topo, self.unit = limit_injection(topo, unit, injection, stream=streams)

    def times(self, sizes) -> np.ndarray:
        """Completion time for each size: one flow simulation per size.

        Parameters
        ----------
        sizes : float or array
            Collective sizes, bytes.

        Returns
        -------
        float array
            Seconds, one per size.
        """
        return np.array([self.model.flows(self.topo, replace(self.unit, size=self.unit.size * s)).makespan
                         for s in np.atleast_1d(np.asarray(sizes, dtype=float))])

    def phase_times(self, size: float) -> np.ndarray:
        """One phase: the whole collective.

        Parameters
        ----------
        size : float
            Collective size, bytes.

        Returns
        -------
        float array [1]
            Seconds.
        """
        return self.times([size])


@dataclass(frozen=True)
class FlowModel:
    """Max-min fair flows (`network.flow`) behind the network-model interface.

    Parameters
    ----------
    mode : {"pipelined", "store-and-forward"}
        How a flow crosses its path.
    chunk : float
        Packet size for the pipeline fill of multi-hop flows, bytes (0: fluid).
    """

    mode: str = "pipelined"
    chunk: float = 0.0
    shares_links = True  # the training engine runs the whole graph as one flow simulation

    @property
    def streams(self) -> bool:
        """Whether data may stream through switches (pipelined), or each hop waits for the whole
        message (store-and-forward: an in-network collective then goes up, then down)."""
        return self.mode == "pipelined"

    def __post_init__(self):
        if self.mode not in MODES:
            from ..errors import ConfigError

            raise ConfigError("mode", self.mode, f"accepted: {', '.join(MODES)}")

    @property
    def name(self) -> str:
        """The registered model name: flow or flow-store-and-forward."""
        return "flow" if self.mode == "pipelined" else "flow-store-and-forward"

    def collective(self, topo: Topology, schedule: Schedule, injection: float | None = None) -> FlowCollective:
        """`schedule` prepared for pricing at any size (see `FlowCollective`).

        Parameters
        ----------
        topo : Topology
            The network.
        schedule : Schedule
            Placed on `topo`.
        injection : float, optional
            Bytes/s each NPU's endpoint can inject (None: no limit).

        Returns
        -------
        FlowCollective
        """
        return FlowCollective(self, topo, schedule, injection)

    def p2p(self, topo: Topology, src: int, dst: int, size: float) -> float:
        """A transfer alone, simulated as one flow.

        Parameters
        ----------
        topo : Topology
            The network.
        src, dst : int
            Topology node ids.
        size : float
            Bytes.

        Returns
        -------
        float
            Seconds; 0 for src == dst or no bytes.
        """
        if src == dst or size <= 0:
            return 0.0
        return self.flows(topo, Flows([src], [dst], [size])).makespan

    def flows(self, topo: Topology, flows: Flows, record_timeline: bool = False) -> FlowResult:
        """Simulate `flows` together (max-min fair, dependencies, priorities).

        Parameters
        ----------
        topo : Topology
            The network.
        flows : Flows
            What to run.
        record_timeline : bool
            Keep every interval's per-link rates.

        Returns
        -------
        FlowResult
        """
        return simulate_flows(topo, flows, mode=self.mode, chunk=self.chunk, record_timeline=record_timeline)


def time_collective_flow(topo: Topology, schedule: Schedule, sizes, *, mode: str = "pipelined",
                         chunk: float = 0.0) -> np.ndarray:
    """Completion time of one collective alone on the flow model, for each size.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`.
    sizes : float or array
        Collective sizes, bytes.
    mode : {"pipelined", "store-and-forward"}
        How a flow crosses its path.
    chunk : float
        Packet size for the pipeline fill of multi-hop flows, bytes (0: fluid).

    Returns
    -------
    float array
        Seconds, one per size.
    """
    return FlowModel(mode, chunk).collective(topo, schedule).times(sizes)
