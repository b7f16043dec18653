"""What a collective costs the endpoint's memory, derived from its schedule (ACE, docs/specs/fred_ace.md §2.4).

Two ways to run a schedule at an NPU:

- **NPU-driven** (NCCL-like; `npu_memory_traffic`): the NPU's cores move every block through its
  memory. Every send reads its blocks; every receive lands them (one write); a reducing receive
  then reads two operands (the landed block and the local one) and writes the sum. An all-to-all,
  which has no in-place form, also copies each rank's own block into its output (one read, one
  write of size/p). So a ring
  all-reduce of D bytes on p ranks moves 5(p-1)/p D in its reduce-scatter and 2(p-1)/p D in its
  all-gather: 7(p-1)/p D of memory traffic for 2(p-1)/p D sent, 3.5 bytes per network byte. A
  multi-dimensional or hierarchical schedule pays each of its phases, because each is in its steps.
- **Engine-driven** (ACE; `engine_memory_traffic`): a DMA reads the rank's input into the engine's
  SRAM once; every phase and dimension runs SRAM to SRAM on the engine's ALUs; the result is written
  back once. An all-reduce of D bytes costs 2D whatever p and the number of dimensions (while SRAM
  holds the chunks in flight; that bound is the endpoint policy's, not the schedule's).

Helpers (switches, schedule nodes p and above) have no NPU memory: only ranks are counted. Values
are bytes per byte of the collective's size (nccl-tests' size, as everywhere), so one result
serves every size: multiply by the size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Schedule


@dataclass(frozen=True)
class MemoryTraffic:
    """Per-rank memory traffic of one collective, as fractions of its size.

    Attributes
    ----------
    read, write : float array [p]
        Bytes read from and written to the rank's memory, per byte of the collective's size.
    sent : float array [p]
        Bytes the rank sends into the network, per byte of size.
    reduced : float array [p]
        Bytes the rank reduces (received blocks added into its own), per byte of size: the
        reduction work of whoever drives the schedule (the NPU's cores or an engine's ALUs).
    """

    read: np.ndarray
    write: np.ndarray
    sent: np.ndarray
    reduced: np.ndarray

    @property
    def total(self) -> np.ndarray:
        """Read plus written, per rank, per byte of size."""
        return self.read + self.write

    def per_network_byte(self) -> np.ndarray:
        """Memory bytes per byte sent, per rank (0 for a rank that sends nothing)."""
        return np.divide(self.total, self.sent, out=np.zeros_like(self.total), where=self.sent > 0)


def npu_memory_traffic(schedule: Schedule) -> MemoryTraffic:
    """Memory traffic when the NPU runs the schedule itself (module doc: sends read, receives land,
    reductions read two operands and write one).

    Parameters
    ----------
    schedule : Schedule
        Any collective schedule (repetitions and lanes included as they run).

    Returns
    -------
    MemoryTraffic
        Per rank, per byte of the collective's size.

    Examples
    --------
    >>> from fabricsim.collectives.api import build_schedule
    >>> from fabricsim.topology import parse_topology
    >>> m = npu_memory_traffic(build_schedule(parse_topology("ring:4"), "all-reduce", "ring"))
    >>> float(m.total[0]), float(m.sent[0]), float(m.per_network_byte()[0])   # 7(p-1)/p, 2(p-1)/p
    (5.25, 1.5, 3.5)
    """
    n = schedule.n_nodes
    read, write = np.zeros(n), np.zeros(n)
    for st in schedule.steps:
        schedule.node_sum(st, "src", st.repeat, out=read)  # a send reads its blocks
        schedule.node_sum(st, "dst", st.repeat, out=write)  # a receive lands them
    p = schedule.p
    reduced = reduced_bytes(schedule)
    read[:p] += 2.0 * reduced  # a reduction reads both operands ...
    write[:p] += reduced  # ... and writes the sum
    if schedule.collective == "all-to-all":  # the own block, copied from input to output
        read[:p] += 1.0 / p
        write[:p] += 1.0 / p
    return MemoryTraffic(read[:p], write[:p], schedule.bytes_sent(1.0)[:p], reduced)


def reduced_bytes(schedule: Schedule) -> np.ndarray:
    """Bytes each rank reduces (adds received blocks into its own), per byte of the collective's size.

    Parameters
    ----------
    schedule : Schedule
        Any collective schedule.

    Returns
    -------
    float array [p]
        (p-1)/p for every rank of a ring all-reduce (its reduce-scatter); 0 where switches reduce.
    """
    red = np.zeros(schedule.n_nodes)
    for st in schedule.steps:
        schedule.node_sum(st, "dst", st.repeat, out=red, reduce_only=True)
    return red[: schedule.p]


def engine_memory_traffic(schedule: Schedule) -> MemoryTraffic:
    """Memory traffic when an engine at the endpoint (ACE) runs the schedule out of its SRAM: one
    DMA read of the rank's input, one write of its output.

    Inputs and outputs follow nccl-tests' sizes: all-reduce and all-to-all read and write the size;
    reduce-scatter reads it and writes 1/p; all-gather reads 1/p and writes it; broadcast: the root
    reads it, the others write it; reduce: every rank reads it, the root writes it.

    Parameters
    ----------
    schedule : Schedule
        Any collective schedule (only its collective, group size, root and what it sends matter).

    Returns
    -------
    MemoryTraffic
        Per rank, per byte of the collective's size; `sent` as the schedule sends.

    Examples
    --------
    >>> from fabricsim.collectives.api import build_schedule
    >>> from fabricsim.topology import parse_topology
    >>> m = engine_memory_traffic(build_schedule(parse_topology("torus:4x4"), "all-reduce", "hierarchical"))
    >>> float(m.total[0])   # 2D whatever the ranks and dimensions
    2.0
    """
    p, coll = schedule.p, schedule.collective
    ones = np.ones(p)
    if coll in ("all-reduce", "all-to-all"):
        read, write = ones, ones.copy()
    elif coll == "reduce-scatter":
        read, write = ones, ones / p
    elif coll == "all-gather":
        read, write = ones / p, ones.copy()
    else:  # broadcast, reduce: the root's buffer is the one read (broadcast) or written (reduce)
        at_root = np.zeros(p)
        at_root[schedule.root or 0] = 1.0
        read, write = (at_root, 1.0 - at_root) if coll == "broadcast" else (ones, at_root)
    return MemoryTraffic(read, write, schedule.bytes_sent(1.0)[:p], reduced_bytes(schedule))
