"""Network models: how long a schedule (or a set of flows) takes on a topology.

    from fabricsim.network import get_network_model, time_collective
    model = get_network_model("flow")              # or congestion-aware (= analytical), congestion-unaware
    cost = model.collective(topology, schedule)    # prepared once
    cost.times([2**20, 2**30])                     # s per size
"""

from .analytical import (
    MODELS,
    AnalyticalCollective,
    AnalyticalModel,
    CollectiveTiming,
    Deficiency,
    RoutedStep,
    deficiencies,
    normalize_model,
    route_schedule,
    route_step,
    time_schedule,
)
from .lowering.dataflow import collective_flows, merge_flows, schedule_flows, streaming_flows
from .flow import FlowResult, Flows, simulate_flows
from .flow_model import FlowModel, time_collective_flow
from .model import NETWORK_MODELS, NetworkModel, canonical_model_name, get_network_model, register, time_collective

__all__ = ["MODELS", "NETWORK_MODELS", "AnalyticalCollective", "AnalyticalModel", "CollectiveTiming", "Deficiency",
           "FlowModel", "FlowResult", "Flows", "NetworkModel", "RoutedStep", "canonical_model_name", "collective_flows",
           "deficiencies", "get_network_model", "merge_flows", "normalize_model", "register", "route_schedule",
           "route_step", "schedule_flows", "simulate_flows", "streaming_flows", "time_collective",
           "time_collective_flow", "time_schedule"]
