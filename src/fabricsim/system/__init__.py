"""System: what an NPU computes how fast, what communication costs the NPU (the endpoint
protocol), and how collectives are scheduled on it.

    from fabricsim.system import NPU, Endpoint, Scheduling, System
    sys = System(NPU(peak_flops=1e15, memory_bandwidth=3e12, efficiency=0.5))
"""

from .endpoint import (
    ENDPOINT_POLICIES,
    Endpoint,
    EndpointModel,
    Held,
    Ideal,
    OffloadEngine,
    make_endpoint,
    register_policy,
    slowed_task_times,
)
from .model import System
from .npu import NPU
from .scheduling import Scheduling

__all__ = ["ENDPOINT_POLICIES", "NPU", "Endpoint", "EndpointModel", "Held", "Ideal", "OffloadEngine", "Scheduling",
           "System", "make_endpoint", "register_policy", "slowed_task_times"]
