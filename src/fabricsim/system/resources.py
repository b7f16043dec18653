"""What communication asks of an NPU's endpoint, and what it leaves compute.

Three pieces every endpoint policy and both training engines share:

- `CommDemand`: what one collective (or p2p / io transfer) asks of each member per byte of its
  size, DERIVED FROM ITS SCHEDULE (`collectives.memory`): network bytes sent, memory bytes moved
  when the NPU drives it (every send reads, every receive lands, every reduction reads two
  operands and writes one, each phase of a multi-dimensional algorithm paid) or when an engine
  drives it (one DMA read, one write), bytes reduced, how much an engine must hold, its blocks,
  and its latency alone (its pipeline depth). The busiest member sets each figure.
- `Held`: the shares of an NPU's compute units and memory bandwidth that running communication
  holds (1.0: all of it, compute waits).
- `roofline_shares` / `slowed_task_times`: compute with what is left. A task whose roofline is
  max(F / (peak eff), M / mem_bw) runs, while `Held(u, m)` is held, in
  max(F / (peak eff (1-u)), M / (mem_bw (1-m))): compute-bound and memory-bound kernels slow
  differently (`fabricsim.roofline.stretch`). A fixed-duration task (a trace) counts as
  compute-bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..collectives.memory import engine_memory_traffic, npu_memory_traffic
from ..ir import Schedule
from ..roofline import stretch
from .npu import NPU


@dataclass(frozen=True)
class Held:
    """Shares of an NPU's compute units and memory bandwidth that running communication holds.

    Parameters
    ----------
    units : float
        Share of the compute units, in [0, 1] (1: compute waits for communication).
    memory : float
        Share of the memory bandwidth, in [0, 1].
    """

    units: float = 0.0
    memory: float = 0.0

    def __post_init__(self):
        for name in ("units", "memory"):
            v = getattr(self, name)
            if not 0 <= v <= 1:
                raise ValueError(f"Held.{name} = {v}: a share in [0, 1]")

    @property
    def any(self) -> bool:
        """Whether anything is held (communication then slows compute)."""
        return self.units > 0 or self.memory > 0

    def combined(self, other: Held) -> Held:
        """What two communications running at once hold: the larger share of each resource
        (a fixed split is shared by everything it runs; an engine's memory traffic is set by the
        links its collectives share).

        Parameters
        ----------
        other : Held

        Returns
        -------
        Held
        """
        return Held(max(self.units, other.units), max(self.memory, other.memory))


@dataclass(frozen=True)
class CommDemand:
    """What one collective or transfer asks of each member's endpoint, per byte of its size.

    Every figure is the busiest member's (the one that bounds a per-NPU rate).

    Parameters
    ----------
    sent : float
        Network bytes a member sends, per byte of size.
    npu_memory : float
        Memory bytes (read + written) at a member when its NPU drives the schedule, per byte of size.
    npu_per_sent : float
        The same per network byte sent (3.5 for a ring all-reduce).
    engine_memory : float
        Memory bytes at a member when an engine at the endpoint drives it (one DMA read, one write).
    engine_per_sent : float
        The same per network byte sent.
    reduced_per_sent : float
        Bytes reduced (by cores or ALUs) per network byte sent.
    footprint : float
        Bytes an engine keeps per byte of size while the data is in flight (its input or output,
        the larger).
    blocks : int
        Blocks the schedule splits the buffer into (an engine's smallest chunk holds all of them).
    latency : float
        Seconds the collective takes alone at zero bytes (the depth of its pipeline).
    """

    sent: float
    npu_memory: float
    npu_per_sent: float
    engine_memory: float
    engine_per_sent: float
    reduced_per_sent: float
    footprint: float
    blocks: int
    latency: float


def _per_sent(x: np.ndarray, sent: np.ndarray) -> float:
    """The largest x / sent over the members that send (0 when none does)."""
    ok = sent > 0
    return float(np.max(x[ok] / sent[ok])) if ok.any() else 0.0


def collective_demand(schedule: Schedule, latency: float) -> CommDemand:
    """A collective's demand on its members' endpoints, from its schedule (module doc).

    Parameters
    ----------
    schedule : Schedule
        The placed schedule.
    latency : float
        Its time alone at zero bytes, s (from the network model).

    Returns
    -------
    CommDemand

    Examples
    --------
    >>> from fabricsim.collectives.api import build_schedule
    >>> from fabricsim.topology import parse_topology
    >>> d = collective_demand(build_schedule(parse_topology("ring:4"), "all-reduce", "ring"), 0.0)
    >>> d.sent, d.npu_per_sent, d.engine_memory, d.reduced_per_sent   # 2(p-1)/p, 3.5, 2, 0.5
    (1.5, 3.5, 2.0, 0.5)
    """
    npu, eng = npu_memory_traffic(schedule), engine_memory_traffic(schedule)
    return CommDemand(
        sent=float(np.max(npu.sent, initial=0.0)),
        npu_memory=float(np.max(npu.total, initial=0.0)),
        npu_per_sent=_per_sent(npu.total, npu.sent),
        engine_memory=float(np.max(eng.total, initial=0.0)),
        engine_per_sent=_per_sent(eng.total, eng.sent),
        reduced_per_sent=_per_sent(npu.reduced, npu.sent),
        footprint=float(np.max(np.maximum(eng.read, eng.write), initial=0.0)),
        blocks=int(schedule.nblocks),
        latency=float(latency),
    )


def transfer_demand(latency: float, share: float = 1.0) -> CommDemand:
    """The demand of a point-to-point or io transfer: each byte read once where it leaves an NPU
    and written once where it lands, whoever drives it.

    Parameters
    ----------
    latency : float
        Its time alone at zero bytes, s.
    share : float
        Bytes a member sends or receives per byte of the task (1 for p2p; 1/shards for io).

    Returns
    -------
    CommDemand
    """
    return CommDemand(sent=share, npu_memory=share, npu_per_sent=1.0, engine_memory=share, engine_per_sent=1.0,
                      reduced_per_sent=0.0, footprint=share, blocks=1, latency=float(latency))


class EndpointModel(Protocol):
    """What every endpoint policy provides.

    Attributes
    ----------
    name : str
        The policy's registered name (`npu`, `ace`, ...).
    interferes : bool
        Whether running communication can hold anything of the NPU (False: the engines skip
        the bookkeeping).
    """

    name: str
    interferes: bool

    def injection_rate(self, npu: NPU, demand: CommDemand) -> float:
        """Bytes/s each member's endpoint can put on its links for this communication.

        Parameters
        ----------
        npu : NPU
            The NPU (its memory bandwidth and units).
        demand : CommDemand
            What the communication asks per byte.

        Returns
        -------
        float
            Network bytes/s per NPU (inf: the links decide).
        """
        ...

    def held(self, npu: NPU, demand: CommDemand, pace: float) -> Held:
        """The shares of `npu` this communication holds while it runs.

        Parameters
        ----------
        npu : NPU
            The NPU.
        demand : CommDemand
            What the communication asks per byte.
        pace : float
            Bytes of its size it moves per second (size / its duration).

        Returns
        -------
        Held
        """
        ...

    def memory_per_byte(self, demand: CommDemand) -> float:
        """Memory bytes the busiest member moves per byte of size under this policy (0 for an
        engine outside the NPU's memory, e.g. ideal).

        Parameters
        ----------
        demand : CommDemand

        Returns
        -------
        float
        """
        ...


def roofline_shares(npu: NPU, duration, flops, mem_bytes) -> tuple[np.ndarray, np.ndarray]:
    """Per task: its compute time and its memory time as fractions of its roofline time.

    Parameters
    ----------
    npu : NPU
        The roofline.
    duration : float array
        Fixed time of each task, s (NaN: use the roofline).
    flops : float array
        FLOPs of each task.
    mem_bytes : float array
        Memory traffic of each task, bytes.

    Returns
    -------
    (float array, float array)
        (F / (peak eff), M / mem_bw) over the roofline time, each in [0, 1], their larger 1; a
        fixed-duration task is (1, 0); a task of no time (0, 0).
    """
    duration = np.asarray(duration, float)
    tf = np.asarray(flops, float) / (npu.peak_flops * npu.efficiency)
    tm = np.asarray(mem_bytes, float) / npu.memory_bandwidth
    base = np.maximum(tf, tm)
    safe = np.where(base > 0, base, 1.0)
    fixed = ~np.isnan(duration)
    a = np.where(fixed, np.where(duration > 0, 1.0, 0.0), tf / safe)
    c = np.where(fixed, 0.0, tm / safe)
    return a, c


def task_times_of(npu: NPU, g, idx=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per compute task of a workload graph: its time on `npu` and its compute and memory shares.

    Without a compute model, or for a task with no kernels (`g.work` -1) or a fixed duration: the
    roofline (`NPU.task_times`, `roofline_shares`). With one (`NPU.compute`), a task with kernels
    takes the sum of their times (`GpuCompute.kernels_time`); its shares are the fractions of that
    time spent in matmuls and in memory-bound kernels (under a hold it is slowed as one roofline
    kernel with those shares: an approximation, the kernels run one after another).

    Parameters
    ----------
    npu : NPU
        The NPU.
    g : WorkloadGraph
        The graph.
    idx : int array, optional
        The tasks (default: all).

    Returns
    -------
    (float array, float array, float array)
        Seconds, compute share, memory share per task.
    """
    sel = slice(None) if idx is None else idx
    duration, flops, mem = g.duration[sel], g.flops[sel], g.mem_bytes[sel]
    t = npu.task_times(duration, flops, mem)
    a, c = roofline_shares(npu, duration, flops, mem)
    if npu.compute is None or not len(g.works):
        return t, a, c
    work = g.work[sel]
    priced = np.array([npu.compute.kernels_time(w) for w in g.works], dtype=float).reshape(-1, 3)
    use = (work >= 0) & np.isnan(duration)
    if use.any():
        tot, gemm, memory = (priced[work[use], i] for i in range(3))
        safe = np.where(tot > 0, tot, 1.0)
        t, a, c = t.copy(), a.copy(), c.copy()
        t[use], a[use], c[use] = tot, gemm / safe, memory / safe
    return t, a, c


def slowed_task_times(npu: NPU, duration, flops, mem_bytes, held: Held) -> np.ndarray:
    """Per task: its time while communication holds `held` of the NPU (the roofline with the
    resources left; a fixed `duration` stretches by 1 / (1 - units)).

    Parameters
    ----------
    npu : NPU
        The roofline.
    duration : float array
        Fixed time of each task, s (NaN: use the roofline).
    flops : float array
        FLOPs of each task.
    mem_bytes : float array
        Memory traffic of each task, bytes.
    held : Held
        What communication holds.

    Returns
    -------
    float array
        Seconds per task (inf where a resource the task needs is wholly held).

    Examples
    --------
    >>> npu = NPU(peak_flops=1e15, memory_bandwidth=1e12)
    >>> slowed_task_times(npu, [float("nan")], [2e12], [8e9], Held(0.1, 0.5))   # memory-bound: 8e9 / 0.5e12
    array([0.016])
    """
    a, c = roofline_shares(npu, duration, flops, mem_bytes)
    return npu.task_times(duration, flops, mem_bytes) * stretch(a, c, held.units, held.memory)
