"""Endpoint policies where the NPU drives communication, or nothing interferes.

- `npu` (`NpuDriven`): collectives run on the NPU's own cores out of its memory (NCCL-like) with a
  fixed split: a share `units` of the compute units and `memory` of the memory bandwidth are
  given to communication while it runs; compute gets the rest. What a collective moves through
  memory is derived from its schedule (`CommDemand.npu_per_sent`: 3.5 bytes per network byte for a
  ring all-reduce), so its injection rate is the least of the links, what its units can process
  (units x `NPU.unit_bandwidth` memory bytes/s) and what its memory share can feed
  (memory x `NPU.memory_bandwidth`), each divided by the memory bytes per network byte.
  Presets `comp-opt` and `comm-opt` (the paper's compute- and communication-favouring baselines)
  are registered in `system.endpoint`.
- `no-overlap`: communication takes the whole NPU while it runs (compute waits) and is driven at
  what all the units and all the memory bandwidth can feed.
- `nccl` (`NcclKernels`): NCCL's kernels as they run on a GPU: one thread block per channel,
  each on an SM of its own, so `ctas` of the GPU's `sms` are held while a collective runs, and
  the memory bandwidth its schedule moves at its pace (the same memory bytes as `npu`); NCCL sizes
  its channels to the links, so no rate limit of its own.
- `ideal`: nothing held, no limit: the links decide (an upper bound).
- `offload`: an engine beside the NPU at a fixed `rate` bytes/s, holding nothing (a generic
  offload; `ace` models ACE's engine).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, StrictInt, field_validator

from ..errors import ConfigError
from ..units import parse_bandwidth
from .npu import NPU
from .resources import CommDemand, Held

ALL = Held(1.0, 1.0)


def fed_rate(bandwidth: float, per_sent: float) -> float:
    """Network bytes/s that `bandwidth` memory bytes/s feed at `per_sent` memory bytes per network
    byte (inf when the communication moves no memory per network byte).

    Parameters
    ----------
    bandwidth : float
        Memory bytes/s available.
    per_sent : float
        Memory bytes per network byte.

    Returns
    -------
    float
        Network bytes/s.
    """
    return bandwidth / per_sent if per_sent > 0 else np.inf


class OnTheNpu:
    """What the policies where the NPU's cores drive communication share."""

    def memory_per_byte(self, demand: CommDemand) -> float:
        """Memory bytes per byte of size with the NPU driving the schedule (every step's blocks).

        Parameters
        ----------
        demand : CommDemand

        Returns
        -------
        float
        """
        return demand.npu_memory


class BesideTheNpu:
    """What the policies where nothing of the NPU is used share: nothing held, no memory traffic."""

    interferes = False

    def held(self, npu: NPU, demand: CommDemand, pace: float) -> Held:
        """Nothing held.

        Parameters
        ----------
        npu : NPU
        demand : CommDemand
        pace : float

        Returns
        -------
        Held
        """
        return Held()

    def memory_per_byte(self, demand: CommDemand) -> float:
        """Nothing moves through the NPU's memory (not modelled).

        Parameters
        ----------
        demand : CommDemand

        Returns
        -------
        float
            0.
        """
        return 0.0


MIN_SHARE = 1e-3
"""The least share of an NPU's units or memory bandwidth a policy may give communication: one SM of
an A100's 108 (H100: 132) is about 1%, NCCL's least channel; a thousandth leaves margin, and keeps
`units=1e-300` from pricing an iteration at 1e294 s."""


@dataclass(frozen=True)
class NpuDriven(OnTheNpu):
    """Policy `npu`: the NPU's cores run collectives with a fixed split (module doc).

    Parameters
    ----------
    units : float
        Share of the compute units given to communication, in [`MIN_SHARE`, 1).
    memory : float
        Share of the memory bandwidth given to communication, in [`MIN_SHARE`, 1).

    Examples
    --------
    A ring all-reduce moves 3.5 memory bytes per network byte; 20% of 1 TB/s feeds 200/3.5 GB/s:

    >>> from fabricsim.system.resources import CommDemand
    >>> ring = CommDemand(1.5, 5.25, 3.5, 2.0, 4 / 3, 0.5, 1.0, 4, 0.0)
    >>> round(NpuDriven(0.5, 0.2).injection_rate(NPU(memory_bandwidth=1e12), ring) / 1e9, 2)
    57.14
    """

    units: float
    memory: float
    name = "npu"
    interferes = True

    def __post_init__(self):
        for f in ("units", "memory"):
            v = getattr(self, f)
            if not (isinstance(v, (int, float)) and MIN_SHARE <= v < 1):
                raise ConfigError(f"endpoint.{f}", v, f"accepted: a share in (0, 1) of the NPU given to communication, "
                                                      f"at least {MIN_SHARE:g} (below a thousandth no NPU splits its "
                                                      "units or memory: one of a GPU's ~100 SMs is 1%)")

    def injection_rate(self, npu: NPU, demand: CommDemand) -> float:
        """The least of what the unit share can process and the memory share can feed.

        Parameters
        ----------
        npu : NPU
        demand : CommDemand

        Returns
        -------
        float
            min(units x unit_bandwidth, memory x memory_bandwidth) / memory bytes per network byte.
        """
        feed = min(self.units * npu.unit_bandwidth, self.memory * npu.memory_bandwidth)
        return fed_rate(feed, demand.npu_per_sent)

    def held(self, npu: NPU, demand: CommDemand, pace: float) -> Held:
        """The fixed split, whatever the collective.

        Parameters
        ----------
        npu : NPU
        demand : CommDemand
        pace : float
            Bytes of size per second (unused: the split is fixed).

        Returns
        -------
        Held
            (units, memory).
        """
        return Held(self.units, self.memory)


@dataclass(frozen=True)
class NoOverlap(OnTheNpu):
    """Policy `no-overlap`: communication gets the whole NPU; compute waits while it runs."""

    name = "no-overlap"
    interferes = True

    def injection_rate(self, npu: NPU, demand: CommDemand) -> float:
        """What all the units and all the memory bandwidth can feed.

        Parameters
        ----------
        npu : NPU
        demand : CommDemand

        Returns
        -------
        float
            min(unit_bandwidth, memory_bandwidth) / memory bytes per network byte.
        """
        return fed_rate(min(npu.unit_bandwidth, npu.memory_bandwidth), demand.npu_per_sent)

    def held(self, npu: NPU, demand: CommDemand, pace: float) -> Held:
        """Everything.

        Parameters
        ----------
        npu : NPU
        demand : CommDemand
        pace : float

        Returns
        -------
        Held
            (1, 1): compute waits.
        """
        return ALL


class Unlimited:
    """What the policies without a rate limit of their own share: the links decide."""

    def injection_rate(self, npu: NPU, demand: CommDemand) -> float:
        """No limit of its own.

        Parameters
        ----------
        npu : NPU
        demand : CommDemand

        Returns
        -------
        float
            inf.
        """
        return np.inf


@dataclass(frozen=True)
class NcclKernels(Unlimited, OnTheNpu):
    """Policy `nccl`: NCCL's kernels hold `ctas` of the GPU's `sms` and the memory bandwidth their
    schedule moves at its pace (module doc); no rate limit of their own: NCCL sizes its channels to
    reach the links.

    Parameters
    ----------
    ctas : int
        Thread blocks NCCL launches, one per channel, each on its own SM (default 16:
        NCCL_NVLS_NCHANNELS' default, NVIDIA/nccl v2.23.4-1 src/transport/nvls.cc, and the 16 coll
        channels NCCL reports on 8 H800s, NVIDIA/nccl#892).
    sms : int
        The GPU's streaming multiprocessors (default 132: H100 SXM5, NVIDIA H100 Tensor Core GPU
        Architecture whitepaper; A100 SXM4 has 108).

    Examples
    --------
    16 of 132 SMs; a ring all-reduce paced at 100 GB/s of size moves 7/8 x 7 = 6.125 memory bytes a byte
    on 8 ranks: 612.5 GB/s of a 3.35 TB/s HBM3:

    >>> from fabricsim.system.resources import CommDemand
    >>> ring8 = CommDemand(1.75, 6.125, 3.5, 2.0, 8 / 7, 0.5, 1.0, 8, 0.0)
    >>> h = NcclKernels().held(NPU(memory_bandwidth=3.35e12), ring8, 100e9)
    >>> round(h.units, 4), round(h.memory, 4)
    (0.1212, 0.1828)
    """

    ctas: int = 16
    sms: int = 132
    name = "nccl"
    interferes = True

    def __post_init__(self):
        if not (isinstance(self.sms, int) and self.sms >= 1):
            raise ConfigError("endpoint.sms", self.sms, "accepted: the GPU's SM count, an integer >= 1 (H100: 132)")
        if not (isinstance(self.ctas, int) and 1 <= self.ctas <= self.sms):
            raise ConfigError("endpoint.ctas", self.ctas, f"accepted: an integer from 1 to sms ({self.sms})")

    def held(self, npu: NPU, demand: CommDemand, pace: float) -> Held:
        """ctas / sms of the units; the memory bandwidth the schedule moves at `pace`.

        Parameters
        ----------
        npu : NPU
        demand : CommDemand
        pace : float
            Bytes of size per second.

        Returns
        -------
        Held
            (ctas / sms, min(1, memory bytes per byte x pace / memory bandwidth)).
        """
        memory = demand.npu_memory * pace / npu.memory_bandwidth if npu.memory_bandwidth > 0 else 0.0
        return Held(self.ctas / self.sms, float(min(1.0, memory)))


@dataclass(frozen=True)
class Ideal(Unlimited, BesideTheNpu):
    """Policy `ideal`: communication costs the NPU nothing and the links decide its speed."""

    name = "ideal"


@dataclass(frozen=True)
class OffloadEngine(BesideTheNpu):
    """Policy `offload`: an engine at the endpoint runs collectives without the NPU's units or
    memory, at most `rate` bytes/s per NPU.

    Parameters
    ----------
    rate : float
        Bytes/s the engine can inject per NPU, > 0.
    """

    rate: float
    name = "offload"

    def __post_init__(self):
        if not (self.rate > 0):
            raise ConfigError("endpoint.rate", self.rate, "accepted: a bandwidth > 0, e.g. 200GB/s")

    def injection_rate(self, npu: NPU, demand: CommDemand) -> float:
        """The engine's `rate`.

        Parameters
        ----------
        npu : NPU
        demand : CommDemand

        Returns
        -------
        float
            `rate`, bytes/s.
        """
        return float(self.rate)


class Fields(BaseModel):
    """Base of a policy's config fields: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


class NpuFields(Fields):
    """Config fields of policy `npu` (and its presets).

    Parameters
    ----------
    units : float
        Share of the NPU's compute units given to communication, in (0, 1).
    memory : float
        Share of its memory bandwidth given to communication, in (0, 1).
    """

    units: float
    memory: float


class NcclFields(Fields):
    """Config fields of policy `nccl` (`NcclKernels`).

    Parameters
    ----------
    ctas : int
        Thread blocks (channels) NCCL launches, each on its own SM (default 16).
    sms : int
        The GPU's SMs (default 132, H100 SXM5).
    """

    ctas: StrictInt = 16
    sms: StrictInt = 132

    @field_validator("ctas", "sms", mode="before")
    @classmethod
    def _digits(cls, v):
        # `--endpoint nccl,ctas=24` gives text; a config file gives an integer
        return int(v) if isinstance(v, str) and v.strip().isdigit() else v


class NoFields(Fields):
    """A policy without fields (`ideal`, `no-overlap`)."""


class OffloadFields(Fields):
    """Config fields of policy `offload`.

    Parameters
    ----------
    rate : float
        Bytes/s the engine can inject per NPU; units accepted (`200GB/s`).
    """

    rate: float

    _rate = field_validator("rate", mode="before")(lambda v: parse_bandwidth(v, "rate"))
