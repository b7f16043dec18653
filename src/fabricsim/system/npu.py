"""The NPU: a roofline. A task of F FLOPs touching M bytes of memory takes
max(F / (peak * efficiency), M / memory_bandwidth); fixed-duration tasks (traces) keep theirs.
With a compute model (`compute`, a `system.compute.GpuCompute`: A100, H100), a task whose kernels
are known by shape (`WorkloadGraph.works`) takes the sum of its kernels' times instead: matmuls
with tile and wave quantization, memory-bound kernels from their bytes (`system.resources.task_times_of`).

`unit_bandwidth` is what its compute units can move through memory when they run communication
kernels (loads plus stores, all units together): an NPU-driven collective given a share u of the
units moves at most u x unit_bandwidth memory bytes/s (`system.policies`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError


@dataclass(frozen=True)
class NPU:
    """An NPU as a roofline (module doc).

    Parameters
    ----------
    peak_flops : float
        Peak compute rate, FLOP/s, > 0.
    memory_bandwidth : float
        Memory bandwidth, bytes/s, > 0.
    efficiency : float
        Fraction of peak that compute-bound kernels reach, in (0, 1].
    unit_bandwidth : float
        Memory bytes/s all its compute units together can move running communication kernels
        (loads + stores), > 0 (inf: the units never limit communication).
    compute : GpuCompute, optional
        Prices tasks by their kernels (module doc); None: the roofline for every task.
    memory_capacity : float
        Bytes of device memory (inf: not checked), for the memory model (`workload.memory`).

    Examples
    --------
    >>> npu = NPU(peak_flops=1e15, memory_bandwidth=2e12, efficiency=0.5)
    >>> float(npu.compute_time(1e12, 1e9))   # compute-bound: 1e12 / (1e15 * 0.5)
    0.002
    """

    peak_flops: float = 1e15  # FLOP/s
    memory_bandwidth: float = 3e12  # bytes/s
    efficiency: float = 1.0  # fraction of peak reached by compute-bound kernels
    unit_bandwidth: float = float("inf")  # memory bytes/s the units move running communication
    compute: object = None  # system.compute.GpuCompute: kernels by shape; None: the roofline
    memory_capacity: float = float("inf")  # bytes of device memory; inf: not checked

    def __post_init__(self):
        if not self.peak_flops > 0:
            raise ConfigError("npu.peak", self.peak_flops, "accepted: a FLOP rate > 0, e.g. 989TFLOP/s")
        if not self.memory_bandwidth > 0:
            raise ConfigError("npu.memory_bandwidth", self.memory_bandwidth, "accepted: a bandwidth > 0, e.g. 3TB/s")
        if not 0 < self.efficiency <= 1:
            raise ConfigError("npu.efficiency", self.efficiency, "accepted: a fraction in (0, 1]")
        if not self.unit_bandwidth > 0:
            raise ConfigError("npu.unit_bandwidth", self.unit_bandwidth, "accepted: a bandwidth > 0, e.g. 4TB/s")
        if not self.memory_capacity > 0:
            raise ConfigError("npu.memory", self.memory_capacity, "accepted: a size > 0, e.g. 80GB")

    def compute_time(self, flops, mem_bytes):
        """Roofline time: max(F / (peak x efficiency), M / memory bandwidth).

        Parameters
        ----------
        flops : float or array
            FLOPs.
        mem_bytes : float or array
            Memory traffic, bytes.

        Returns
        -------
        float or array
            Seconds, elementwise.
        """
        return np.maximum(np.asarray(flops, float) / (self.peak_flops * self.efficiency),
                          np.asarray(mem_bytes, float) / self.memory_bandwidth)

    def task_times(self, duration, flops, mem_bytes):
        """Per task: its fixed `duration` where given (not NaN), else the roofline time.

        Parameters
        ----------
        duration : float array
            Fixed time of each task, s (NaN: use the roofline).
        flops : float array
            FLOPs of each task.
        mem_bytes : float array
            Memory traffic of each task, bytes.

        Returns
        -------
        float array
            Seconds per task.
        """
        duration = np.asarray(duration, float)
        return np.where(np.isnan(duration), self.compute_time(flops, mem_bytes), duration)
