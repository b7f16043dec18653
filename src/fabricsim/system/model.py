"""A system: the NPU, its endpoint policy and its collective scheduling, as one frozen dataclass."""

from __future__ import annotations

from dataclasses import dataclass, field

from .endpoint import Endpoint, EndpointModel
from .npu import NPU
from .scheduling import Scheduling


@dataclass(frozen=True)
class System:
    """What the training engine needs to know about the machines: `npu` (roofline), `endpoint`
    (what communication costs the NPU, `system.endpoint`), `scheduling` (streams, priorities,
    chunks)."""

    npu: NPU = field(default_factory=NPU)
    endpoint: EndpointModel = field(default_factory=Endpoint)
    scheduling: Scheduling = field(default_factory=Scheduling)
