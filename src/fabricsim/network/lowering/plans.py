"""How the flow model lowers a collective alone to flows: its plans, tried in order.

A plan is a named function from what is to be priced (`PlanInput`: the model, the network, the
placed schedule, the endpoint injection limit) to the flows that time it (`PlanResult`: a topology
and size-1 flows, scaled per size), or None where the plan does not apply. `lower` tries the plans
of `FLOW_PLANS` in order and the first that answers wins; `FlowCollective` keeps its name
(`FlowCollective.plan`), and `fabricsim collective -m flow --json` prints it per row
(`flow_plan`). Every plan gives the times of simulating every transfer (tests/test_flow_plans.py):

- **chain**: a pipelined chain (ring broadcast, reduce) whose hops share no link, as one piece
  through every hop and P - 1 pieces on one hop per route class (`lowering.chain.chain_flows`);
- **orbits**: one flow per orbit of the translations that map the schedule onto itself
  (`lowering.quotient.quotient_flows`); where an orbit is smaller than the group and independent rings
  give fewer flows, those (then the plan is named **rings**);
- **rings**: independent rings, each on a one-way ring of its own (`lowering.rings.ring_parts`);
- **serial-streams**: a streaming reduce-scatter or all-gather (fluid, no injection limit) as its
  p serial streams, each on its slowest link (`lowering.streams.SerialStreams.alone_flows`);
- **every-transfer**: every transfer a flow (`lowering.dataflow.schedule_flows`), sized against the `flows`
  limit first; always answers.

Adding a plan is one function `PlanInput -> PlanResult | None` and one `FlowPlan` entry in
`FLOW_PLANS` at its place (or, outside this module, `register_plan(FlowPlan(...), before=...)`,
which returns a new tuple to pass as `lower(..., plans=)`).

    >>> from fabricsim.topology import parse_topology
    >>> from fabricsim.collectives.api import build_schedule
    >>> from fabricsim.network.flow_model import FlowModel
    >>> [p.name for p in FLOW_PLANS]
    ['chain', 'orbits', 'rings', 'serial-streams', 'every-transfer']
    >>> topo = parse_topology("ring:8", "50GB/s", "100ns")
    >>> name, got = lower(FlowModel(), topo, build_schedule(topo, "all-reduce", "ring"))
    >>> name, len(got.flows)             # 2(p - 1) orbit flows instead of 2 p (p - 1) transfers
    ('orbits', 14)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...ir import Schedule
from ...limits import check_limit
from ...topology.graph import Topology
from .dataflow import runs_as_streams, schedule_flows
from ..flow import Flows
from .injection import limit_injection


@dataclass(frozen=True)
class PlanInput:
    """What a plan lowers: a collective alone.

    Attributes
    ----------
    model : FlowModel
        The model that simulates it (`mode`, `chunk`, `streams`).
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`.
    injection : float, optional
        Bytes/s each NPU's endpoint can inject (None or inf: no limit).
    """

    model: Any
    topo: Topology
    schedule: Schedule
    injection: float | None = None

    @property
    def unlimited(self) -> bool:
        """Whether no endpoint injection limit applies."""
        return self.injection is None or not np.isfinite(self.injection)


@dataclass(frozen=True)
class PlanResult:
    """The flows a plan times the collective with.

    Attributes
    ----------
    topo : Topology
        The network the flows run on (the plan's own: a quotient, rings side by side, the network
        with its endpoint links).
    flows : Flows
        The flows for a collective size of 1 byte (scaled per size).
    plan : str
        The name to report when it is not the plan's own (orbits that chose rings); "" otherwise.
    """

    topo: Topology
    flows: Flows
    plan: str = ""


@dataclass(frozen=True)
class FlowPlan:
    """One way to lower a collective alone to flows.

    Attributes
    ----------
    name : str
        Registry name (printed as `flow_plan`).
    build : callable
        `build(PlanInput) -> PlanResult | None`: None where the plan does not apply.
    summary : str
        One line: what it does and where.
    """

    name: str
    build: Callable[[PlanInput], PlanResult | None]
    summary: str


def _chain(given: PlanInput) -> PlanResult | None:
    from .chain import chain_flows

    chain = chain_flows(given.topo, given.schedule)
    if chain is None:
        return None
    return PlanResult(*limit_injection(given.topo, chain.flows, given.injection))


def _kw(given: PlanInput) -> dict:
    return {"mode": given.model.mode, "chunk": given.model.chunk, "injection": given.injection}


def _orbits(given: PlanInput) -> PlanResult | None:
    from .quotient import quotient_flows
    from .rings import ring_parts

    q = quotient_flows(given.topo, given.schedule, **_kw(given))
    if q is None:  # no translation: the rings plan asks for independent rings
        return None
    if q.orbit < given.schedule.p:  # independent rings may have larger orbits: the fewer flows
        r = ring_parts(given.topo, given.schedule, **_kw(given))
        if r is not None and len(r.flows) < len(q.flows):
            return PlanResult(r.topo, r.flows, "rings")
    return PlanResult(q.topo, q.flows)


def _rings(given: PlanInput) -> PlanResult | None:
    from .rings import ring_parts

    r = ring_parts(given.topo, given.schedule, **_kw(given))
    return None if r is None else PlanResult(r.topo, r.flows)


def _serial_streams(given: PlanInput) -> PlanResult | None:
    from .streams import serial_streams

    if given.model.chunk != 0 or not given.unlimited or not runs_as_streams(given.schedule, given.model.streams):
        return None  # a fill chunk or an injection limit depends on every link of a stream: listed
    serial = serial_streams(given.topo, given.schedule)
    if serial is None:
        return None
    return PlanResult(given.topo, serial.alone_flows(given.topo.link_bw))  # each stream on its slowest link


def _every_transfer(given: PlanInput) -> PlanResult:
    topo, schedule, model = given.topo, given.schedule, given.model
    streams = runs_as_streams(schedule, model.streams)
    if not streams:  # every transfer a flow: sized before it is built
        check_limit("flows", schedule.n_transfers,
                    f"flows ({schedule.algorithm} {schedule.collective} on {topo.name} alone: every transfer a "
                    "flow: no translation maps the schedule onto itself, and it is no set of independent "
                    "rings)", "algorithm", schedule.algorithm)
    unit = schedule_flows(topo, schedule, 1.0, stream=model.streams)
    return PlanResult(*limit_injection(topo, unit, given.injection, stream=streams))


FLOW_PLANS: tuple[FlowPlan, ...] = (
    FlowPlan("chain", _chain, "a pipelined chain whose hops share no link: one piece through every hop, P - 1 "
                              "pieces on one hop per route class (flow_chain)"),
    FlowPlan("orbits", _orbits, "one flow per orbit of the translations that map the schedule onto itself "
                                "(flow_quotient); independent rings where they give fewer flows"),
    FlowPlan("rings", _rings, "independent rings, each on a one-way ring of its own (flow_rings)"),
    FlowPlan("serial-streams", _serial_streams, "a streaming reduce-scatter or all-gather, fluid, no injection "
                                                "limit: p serial streams, each on its slowest link (streams)"),
    FlowPlan("every-transfer", _every_transfer, "every transfer a flow (dataflow.schedule_flows); always answers"),
)
"""The flow model's plans, in the order `lower` tries them."""


def register_plan(plan: FlowPlan, before: str | None = "every-transfer",
                  plans: tuple[FlowPlan, ...] | None = None) -> tuple[FlowPlan, ...]:
    """`plans` with `plan` added, as a new tuple (nothing registered is changed).

    Parameters
    ----------
    plan : FlowPlan
        The plan; one of the same name is taken out first.
    before : str, optional
        The plan it goes before (default every-transfer, which always answers); None: last.
    plans : tuple of FlowPlan, optional
        Default `FLOW_PLANS`.

    Returns
    -------
    tuple of FlowPlan
        To pass as `lower(..., plans=)`. ValueError when no plan is named `before`.

    Examples
    --------
    >>> mine = FlowPlan("mine", lambda given: None, "never answers")
    >>> [p.name for p in register_plan(mine, before="chain")]
    ['mine', 'chain', 'orbits', 'rings', 'serial-streams', 'every-transfer']
    """
    rest = [p for p in (FLOW_PLANS if plans is None else plans) if p.name != plan.name]
    if before is None:
        return (*rest, plan)
    names = [p.name for p in rest]
    if before not in names:
        raise ValueError(f"register_plan: no plan named {before!r}; accepted: {', '.join(names)} or None (last)")
    i = names.index(before)
    return (*rest[:i], plan, *rest[i:])


def lower(model, topo: Topology, schedule: Schedule, injection: float | None = None,
          plans: tuple[FlowPlan, ...] | None = None) -> tuple[str, PlanResult]:
    """A collective alone as flows: the first plan that answers.

    Parameters
    ----------
    model, topo, schedule, injection
        The collective alone, as a `PlanInput` holds it (the flow model, the network, the schedule
        placed on it, each NPU's endpoint injection limit in bytes/s or None).
    plans : tuple of FlowPlan, optional
        The plans to try, in order (default `FLOW_PLANS`).

    Returns
    -------
    (str, PlanResult)
        The winning plan's name (`PlanResult.plan` where it names another) and its flows;
        ValueError when none answers (every-transfer always does).
    """
    given = PlanInput(model, topo, schedule, injection)
    tried = FLOW_PLANS if plans is None else plans
    for plan in tried:
        got = plan.build(given)
        if got is not None:
            return got.plan or plan.name, got
    raise ValueError(f"lower: no flow plan answered for {schedule.algorithm} {schedule.collective} on {topo.name} "
                     f"(tried: {', '.join(p.name for p in tried) or 'none'}; every-transfer always answers)")
