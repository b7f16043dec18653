"""ASTRA-sim emulation: what the emulator needs to know and how a run picks its engine.

`NetSpec` (the network, per dimension) and `SysSpec` (the system layer's settings), the
collective names and the `CUSTOM` implementation marker, the engines of a full emulation
(`ENGINES`, `check_engine`, `on_core`) and the emulation's two exceptions (`NotServed`,
`Deadlock`). Plain data and small checks, apart from the networks of `emu_network` (which
re-exports every name here, so importers keep one place to get them from): every part of the
emulation reads these, and none of them needs the event queue.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import ConfigError
from .config import Impl


# ---- configuration the emulator needs --------------------------------------------------------


@dataclass(frozen=True)
class NetSpec:
    """The network as the emulator sees it: one entry per dimension, dimension 0 fastest.

    Attributes
    ----------
    kinds : tuple of str
        "Ring", "FullyConnected" or "Switch" per dimension.
    dims : tuple of int
        NPUs per dimension.
    bw : tuple of float
        Link bandwidth per dimension, bytes per ns (ASTRA-sim: GB/s x 2^30 / 1e9).
    lat : tuple of float
        Latency of one link traversal per dimension, ns.
    """

    kinds: tuple[str, ...]  # "Ring" | "FullyConnected" | "Switch" per dimension
    dims: tuple[int, ...]
    bw: tuple[float, ...]  # bytes per ns (ASTRA-sim: GB/s * 2^30 / 1e9)
    lat: tuple[float, ...]  # ns

    @property
    def npus(self) -> int:
        """NPUs in the network (the product of `dims`)."""
        return math.prod(self.dims)


@dataclass(frozen=True)
class SysSpec:
    """The system layer's settings, in ASTRA-sim's units (the system JSON's keys).

    Attributes
    ----------
    splits : int
        Chunks ("streams") per collective (`preferred-dataset-splits`).
    active_chunks : int
        Streams a dimension's queue runs at once (`active-chunks-per-dimension`).
    endpoint_delay : int
        Ticks (ns) a packet bundle takes over the NPU<->memory bus, each way.
    local_mem_bw : float
        `local-mem-bw`, GB/s (1e9 bytes/s); 0 makes reductions free.
    optimization : str
        "localBWAware" (all-reduce as reduce-scatter up, all-reduce, all-gather down) or "baseline".
    policy : str
        "LIFO" or "FIFO": the order streams of different collectives are scheduled in.
    impls : dict
        Collective -> tuple of `Impl`, one per dimension (or one flat one).
    custom : dict
        Collective -> per-rank node lists of a collective given as Chakra graphs.
    """

    splits: int
    active_chunks: int = 1
    endpoint_delay: int = 10
    local_mem_bw: float = 0.0  # GB/s; 0 = reductions cost nothing
    optimization: str = "localBWAware"  # or "baseline"
    policy: str = "LIFO"
    impls: dict = field(default_factory=dict)  # collective -> tuple[Impl, ...] per dimension
    custom: dict = field(default_factory=dict)  # collective -> per-position node lists (custom ETs)


ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, ALL_TO_ALL = "all-reduce", "reduce-scatter", "all-gather", "all-to-all"
CUSTOM = Impl("custom", None, True)  # marks a collective given as per-rank Chakra graphs


# engines of a full emulation: the Python one (the reference) or the compiled core; light on purpose,
# as every path imports this module and only a run on the core loads numpy and numba
ENGINES = ("auto", "python", "compiled")


class NotServed(Exception):
    """The compiled core (`emu_compiled`) does not serve this input (the message says why): the
    Python emulation runs it."""


def check_engine(engine: str) -> None:
    """A ConfigError unless `engine` is one of ENGINES."""
    if engine not in ENGINES:
        raise ConfigError("engine", engine, "accepted: " + ", ".join(ENGINES))


def on_core(engine: str, run):
    """`run()` on the compiled core (`emu_compiled`) as `engine` asks: its result, or None where the
    Python emulation runs it ("python", or "auto" where `run` raises NotServed); "compiled" turns
    NotServed into a one-line ConfigError saying why.

    Parameters
    ----------
    engine : str
        One of ENGINES (`check_engine`).
    run : callable
        Runs the core with no arguments; raises NotServed where it cannot.

    Returns
    -------
    object or None
        What `run` returned, or None.
    """
    if engine == "python":
        return None
    try:
        return run()
    except NotServed as e:
        if engine == "compiled":
            raise ConfigError("engine", "compiled", f"the compiled core does not serve this run ({e}); "
                              "accepted: auto, python") from None
        return None


class Deadlock(RuntimeError):
    """The emulation ran out of events with NPUs unfinished (ASTRA-sim would end its run without
    reporting them)."""
