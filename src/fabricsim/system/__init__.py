"""System: what an NPU computes how fast, what communication costs the NPU (the endpoint
protocol and its policies, ACE among them), and how collectives are scheduled on it.

    from fabricsim.system import NPU, System, make_endpoint
    sys = System(NPU(peak_flops=1e15, memory_bandwidth=3e12, efficiency=0.5), make_endpoint("comp-opt"))
"""

from .ace import ACE
from .endpoint import DEFAULT_POLICY, ENDPOINT_POLICIES, PolicyEntry, make_endpoint, register_policy
from .model import System
from .npu import NPU
from .policies import Ideal, NcclKernels, NoOverlap, NpuDriven, OffloadEngine
from .resources import CommDemand, EndpointModel, Held, collective_demand, slowed_task_times, transfer_demand
from .scheduling import Scheduling

__all__ = ["ACE", "DEFAULT_POLICY", "ENDPOINT_POLICIES", "NPU", "CommDemand", "EndpointModel", "Held", "Ideal", "NcclKernels",
           "NoOverlap", "NpuDriven", "OffloadEngine", "PolicyEntry", "Scheduling", "System", "collective_demand",
           "make_endpoint", "register_policy", "slowed_task_times", "transfer_demand"]
