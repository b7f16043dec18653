"""Policy `ace`: ACE, the Accelerator Collectives Engine at the fabric endpoint (Rashidi et al.,
ISCA'21; docs/specs/fred_ace.md part 2, docs/ace.md).

The engine sits beside the NPU's compute and network interface:
- a DMA reads each byte of a collective's input once from the NPU's memory into the engine's
  SRAM; every phase and dimension of the schedule then runs SRAM to SRAM, reductions on the
  engine's ALUs; the result is written back once (`CommDemand.engine_memory`: 2D per all-reduce
  of D, whatever the ranks and dimensions);
- no compute unit is used; the memory bandwidth its DMA takes while a collective runs is held
  (memory bytes per byte x the pace the collective runs at, over the NPU's memory bandwidth);
- SRAM bounds the chunks in flight: a chunk stays in SRAM from its DMA read to its write-back,
  i.e. for the collective's latency, so the engine moves at most `sram / (footprint x latency)`
  bytes of size per second (Little's law: the SRAM must hold the bandwidth-delay product). When
  the SRAM cannot hold even the smallest chunk (every block of the schedule at `min_block`
  bytes), the data goes through memory at every step as if the NPU drove it (NPU-driven memory
  traffic, still no units).

Its injection rate is the least of the links, the DMA (`dma_bandwidth`, and the NPU's memory
bandwidth) over memory bytes per network byte, the ALUs (`alu_throughput` bytes reduced per
second) over bytes reduced per network byte, and the SRAM bound above.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import field_validator

from ..errors import ConfigError
from ..units import parse_bandwidth, parse_size
from .npu import NPU
from .policies import Fields, fed_rate
from .resources import CommDemand, Held

UNLIMITED = ("unlimited", "inf")


@dataclass(frozen=True)
class ACE:
    """Policy `ace` (module doc).

    Parameters
    ----------
    sram : float
        Bytes of engine SRAM per NPU, > 0 (inf: unlimited).
    alu_throughput : float
        Bytes/s the engine's ALUs reduce (sums written), > 0 (inf: unlimited).
    dma_bandwidth : float
        Bytes/s between the NPU's memory and the SRAM, > 0 (inf: the memory's).
    min_block : float
        Smallest block the engine sends, bytes (one packet), > 0.

    Examples
    --------
    A ring all-reduce on 4 NPUs: 2 memory bytes per byte of size, 2/1.5 per network byte; a
    100 GB/s DMA feeds 75 GB/s of network traffic:

    >>> from fabricsim.system.resources import CommDemand
    >>> ring = CommDemand(1.5, 5.25, 3.5, 2.0, 4 / 3, 0.5, 1.0, 4, 0.0)
    >>> ACE(sram=float("inf"), alu_throughput=float("inf"), dma_bandwidth=100e9).injection_rate(NPU(), ring) / 1e9
    75.0
    """

    sram: float
    alu_throughput: float
    dma_bandwidth: float
    min_block: float = 4096.0
    name = "ace"
    interferes = True

    def __post_init__(self):
        for f, what in (("sram", "a size > 0, e.g. 4MiB, or unlimited"),
                        ("alu_throughput", "a bandwidth > 0, e.g. 1TB/s, or unlimited"),
                        ("dma_bandwidth", "a bandwidth > 0, e.g. 500GB/s, or unlimited"),
                        ("min_block", "a size > 0, e.g. 4KiB")):
            v = getattr(self, f)
            if not (isinstance(v, (int, float)) and v > 0) or (f == "min_block" and not np.isfinite(v)):
                raise ConfigError(f"endpoint.{f}", v, f"accepted: {what}")

    def fits(self, demand: CommDemand) -> bool:
        """Whether the SRAM holds the smallest chunk of this communication (every block at
        `min_block` bytes).

        Parameters
        ----------
        demand : CommDemand

        Returns
        -------
        bool
        """
        return self.sram >= demand.blocks * self.min_block * max(demand.footprint, 0.0)

    def memory_per_byte(self, demand: CommDemand) -> float:
        """Memory bytes per byte of size: one read and one write while the SRAM holds a chunk,
        else the NPU-driven traffic of every step.

        Parameters
        ----------
        demand : CommDemand

        Returns
        -------
        float
        """
        return demand.engine_memory if self.fits(demand) else demand.npu_memory

    def injection_rate(self, npu: NPU, demand: CommDemand) -> float:
        """The least of the DMA, ALU and SRAM bounds (module doc), network bytes/s per NPU.

        Parameters
        ----------
        npu : NPU
        demand : CommDemand

        Returns
        -------
        float
        """
        per_sent = demand.engine_per_sent if self.fits(demand) else demand.npu_per_sent
        rate = fed_rate(min(self.dma_bandwidth, npu.memory_bandwidth), per_sent)
        if demand.reduced_per_sent > 0:
            rate = min(rate, self.alu_throughput / demand.reduced_per_sent)
        if demand.latency > 0 and demand.footprint > 0 and np.isfinite(self.sram):
            rate = min(rate, self.sram * demand.sent / (demand.footprint * demand.latency))
        return float(rate)

    def held(self, npu: NPU, demand: CommDemand, pace: float) -> Held:
        """No units; the memory bandwidth its DMA uses at this pace.

        Parameters
        ----------
        npu : NPU
        demand : CommDemand
        pace : float
            Bytes of size per second the collective moves.

        Returns
        -------
        Held
            (0, min(1, memory bytes per byte x pace / memory bandwidth)).
        """
        return Held(0.0, float(min(1.0, self.memory_per_byte(demand) * pace / npu.memory_bandwidth)))


def _unlimited_or(parse):
    def check(v, info):
        if isinstance(v, str) and v.strip().lower() in UNLIMITED:
            return np.inf
        if isinstance(v, float) and np.isinf(v):
            return v
        return parse(v, info.field_name)
    return check


class AceFields(Fields):
    """Config fields of policy `ace` (units accepted; `unlimited` where noted).

    Parameters
    ----------
    sram : float
        Engine SRAM per NPU, bytes (`4MiB`, or `unlimited`).
    alu_throughput : float
        Bytes/s the ALUs reduce (`1TB/s`, or `unlimited`).
    dma_bandwidth : float
        Bytes/s between memory and SRAM (`500GB/s`, or `unlimited`).
    min_block : float
        Smallest block sent, bytes (default 4KiB).
    """

    sram: float
    alu_throughput: float
    dma_bandwidth: float
    min_block: float = 4096.0

    _sizes = field_validator("sram", "min_block", mode="before")(_unlimited_or(parse_size))
    _rates = field_validator("alu_throughput", "dma_bandwidth", mode="before")(_unlimited_or(parse_bandwidth))
