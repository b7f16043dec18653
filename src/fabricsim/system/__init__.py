"""System: what an NPU computes how fast, what collectives cost the NPU, and how collectives
are scheduled on it.

    from fabricsim.system import NPU, Endpoint, Scheduling, System
    sys = System(NPU(peak_flops=1e15, memory_bandwidth=3e12, efficiency=0.5))
"""

from .model import NPU, Endpoint, Scheduling, System

__all__ = ["NPU", "Endpoint", "Scheduling", "System"]
