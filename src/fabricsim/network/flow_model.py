"""The flow-level model behind the network-model interface (`network.model`).

A collective alone is its flows (`network.lowering.dataflow.schedule_flows`: dataflow, or streams
through a switch tree) simulated max-min fair (`network.flow.simulate_flows`); the flows and
their dependencies do not depend on the size, so they are built once and scaled per size. Which
flows time a collective alone is the first of the flow plans that answers (`network.lowering.plans`:
a pipelined chain, one flow per orbit of translations, independent rings, serial streams, every
transfer; all exact). A collective has one phase here (the model overlaps its steps by itself). An
endpoint injection limit is a private link per NPU that the NPU's outgoing traffic crosses
(`network.lowering.injection.with_injection`, re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..ir import Schedule
from ..topology.graph import Topology
from .flow import MODES, FlowResult, Flows, simulate_flows
from .lowering.injection import endpoint_topology, limit_injection, with_injection  # noqa: F401 (their old home)
from .lowering.plans import lower


class FlowCollective:
    """A placed schedule prepared for the flow model: its flows built once, simulated per size.

    How a collective alone becomes flows is decided in one place, `lowering.plans.lower`: the first of
    the plans (`lowering.plans.FLOW_PLANS`: a pipelined chain, one flow per orbit of translations,
    independent rings, serial streams, every transfer) that answers; each gives the times of
    simulating every transfer. `plan` names the winner. Never for flows merged with other traffic.

    Parameters
    ----------
    model, topo, schedule, injection
        What `lowering.plans.lower` takes (`lowering.plans.PlanInput`): this model, the network, the
        schedule placed on it, each NPU's endpoint injection limit (bytes/s; None: no limit).

    Attributes
    ----------
    plan : str
        The flow plan that lowered it (chain, orbits, rings, serial-streams, every-transfer).
    topo : Topology
        The network its flows run on (the plan's).
    unit : Flows
        Its flows for 1 byte.
    """

    def __init__(self, model: "FlowModel", topo: Topology, schedule: Schedule, injection: float | None = None):
        self.model, self.schedule = model, schedule
        self.plan, got = lower(model, topo, schedule, injection)
        self.topo, self.unit = got.topo, got.flows

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
