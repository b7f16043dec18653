"""A system: the NPU, its endpoint policy and its collective scheduling, as one frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass, field

from .policies import Ideal
from .resources import EndpointModel
from .npu import NPU
from .scheduling import Scheduling


@dataclass(frozen=True)
class System:
    """What the training engine needs to know about the machines.

    Parameters
    ----------
    npu : NPU
        The roofline (peak FLOP/s, memory bytes/s, efficiency).
    endpoint : EndpointModel
        What communication costs the NPU and how fast its endpoint injects (`system.endpoint`;
        default: policy `ideal`, no interference).
    scheduling : Scheduling
        Communication streams, category priorities and chunks.
    """

    npu: NPU = field(default_factory=NPU)
    endpoint: EndpointModel = field(default_factory=Ideal)
    scheduling: Scheduling = field(default_factory=Scheduling)
