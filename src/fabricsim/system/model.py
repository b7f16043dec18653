"""NPU roofline, endpoint interference and collective scheduling, as frozen dataclasses.

- `NPU`: a roofline. A task of F FLOPs touching M bytes of memory takes
  max(F / (peak * efficiency), M / memory_bandwidth); fixed-duration tasks (traces) keep theirs.
- `Endpoint`: what running a collective costs the NPU (the hook for an offload engine such as
  ACE). While a collective or p2p transfer is active on an NPU, its compute tasks stretch by
  1 / (1 - comm_compute_fraction) if compute-bound and 1 / (1 - comm_memory_fraction) if
  memory-bound (the spec's S/(S-s) and B/(B-B_c)). Both 0 (the default) = an offload engine /
  no interference.
- `Scheduling`: each NPU serves collectives on `comm_streams` streams ("one": one collective in
  flight per NPU, ASTRA-sim's rule; "per-category": one stream each for MP, PP, DP, IO, other).
  A stream picks, among ready collectives, the highest-priority category first, then the newest
  (LIFO) or oldest (FIFO) by ready time, then the lowest task id. A collective is split into
  `chunks` chunks that run in waves of `chunks_in_flight` (per phase: chunks in one phase share its
  links, so a wave costs one collective of its size) and pipeline through the collective's
  dimension phases; another collective can take the stream between waves (engine.simulator).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError
from ..workload.graph import CATEGORIES

POLICIES = ("LIFO", "FIFO")
STREAMS = ("one", "per-category")


@dataclass(frozen=True)
class NPU:
    peak_flops: float = 1e15  # FLOP/s
    memory_bandwidth: float = 3e12  # bytes/s
    efficiency: float = 1.0  # fraction of peak reached by compute-bound kernels

    def __post_init__(self):
        if not self.peak_flops > 0:
            raise ConfigError("npu.peak", self.peak_flops, "accepted: a FLOP rate > 0, e.g. 989TFLOP/s")
        if not self.memory_bandwidth > 0:
            raise ConfigError("npu.memory_bandwidth", self.memory_bandwidth, "accepted: a bandwidth > 0, e.g. 3TB/s")
        if not 0 < self.efficiency <= 1:
            raise ConfigError("npu.efficiency", self.efficiency, "accepted: a fraction in (0, 1]")

    def compute_time(self, flops, mem_bytes):
        """Roofline time (s); works elementwise on numpy arrays."""
        import numpy as np

        return np.maximum(np.asarray(flops, float) / (self.peak_flops * self.efficiency),
                          np.asarray(mem_bytes, float) / self.memory_bandwidth)

    def task_times(self, duration, flops, mem_bytes):
        """Per task: its fixed `duration` where given (not NaN), else the roofline time."""
        import numpy as np

        duration = np.asarray(duration, float)
        return np.where(np.isnan(duration), self.compute_time(flops, mem_bytes), duration)

    def memory_bound(self, flops, mem_bytes):
        import numpy as np

        return np.asarray(mem_bytes, float) / self.memory_bandwidth > np.asarray(flops, float) / (
            self.peak_flops * self.efficiency)


@dataclass(frozen=True)
class Endpoint:
    comm_compute_fraction: float = 0.0
    comm_memory_fraction: float = 0.0

    def __post_init__(self):
        for name in ("comm_compute_fraction", "comm_memory_fraction"):
            v = getattr(self, name)
            if not 0 <= v < 1:
                raise ConfigError(f"endpoint.{name}", v, "accepted: a fraction in [0, 1)")

    @property
    def interferes(self) -> bool:
        return self.comm_compute_fraction > 0 or self.comm_memory_fraction > 0

    def stretch(self, memory_bound: bool) -> float:
        f = self.comm_memory_fraction if memory_bound else self.comm_compute_fraction
        return 1.0 / (1.0 - f)


@dataclass(frozen=True)
class Scheduling:
    policy: str = "LIFO"
    priorities: tuple[str, ...] = CATEGORIES
    chunks: int = 1
    chunks_in_flight: int = 1
    comm_streams: str = "one"

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise ConfigError("scheduling.policy", self.policy, f"accepted: {', '.join(POLICIES)}")
        if self.comm_streams not in STREAMS:
            raise ConfigError("scheduling.comm_streams", self.comm_streams, f"accepted: {', '.join(STREAMS)}")
        pr = tuple(self.priorities)
        bad = [p for p in pr if p not in CATEGORIES]
        if bad or len(set(pr)) != len(pr):
            raise ConfigError("scheduling.priorities", list(pr),
                              f"accepted: distinct categories from {', '.join(CATEGORIES)}, highest first")
        object.__setattr__(self, "priorities", pr + tuple(c for c in CATEGORIES if c not in pr))
        for name in ("chunks", "chunks_in_flight"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"scheduling.{name}", v, "accepted: an integer >= 1")

    def rank(self, category: str) -> int:
        """0 = served first."""
        return self.priorities.index(category)


@dataclass(frozen=True)
class System:
    npu: NPU = field(default_factory=NPU)
    endpoint: Endpoint = field(default_factory=Endpoint)
    scheduling: Scheduling = field(default_factory=Scheduling)
