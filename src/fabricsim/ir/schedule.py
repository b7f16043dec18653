"""The Schedule: the one intermediate representation of a collective.

A schedule is the steps of one collective on `p` ranks (and helper nodes), independent of the
message size; `ir.step` says what a step is and how steps run, `ir.form` the forms a step comes in.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Iterator, Sequence

import numpy as np

from ..vocab import COLLECTIVES
from .compose import lane_total
from .facts import Facts
from .step import Step, _frozen


@dataclass(frozen=True, eq=False)
class Schedule:
    """A collective as lock-step steps of block transfers between schedule nodes (module doc).

    Independent of the message size: a transfer's bytes are its block count x `block_frac` x
    the collective's size (bytes).

    Parameters
    ----------
    collective : str
        One of `COLLECTIVES` (canonical name).
    algorithm : str
        Name of the algorithm that built it.
    p : int
        Ranks in the group (schedule nodes 0..p-1).
    nblocks : int
        Blocks the buffer is split into (p*p for all-to-all).
    steps : tuple of Step
        The steps, in time order (a `Step` may stand for several repetitions).
    block_frac : float
        Bytes of one block per byte of collective size; default 1/nblocks (1/p for all-to-all).
    owner : int array, optional
        Reduce-scatter / all-gather: the rank that owns each block.
    root : int, optional
        Root rank of a broadcast or reduce.
    n_extra : int
        Helper nodes p..p+n_extra-1 that hold no data at the start (e.g. a reducing switch).
    nodes : int array, optional
        Topology node of each schedule node, once placed (`placed`).
    meta : dict
        Algorithm options, for reports only: no network model reads meaning from it.
    streaming : bool
        The transfers stream through switches; network models price them as streams.
    facts : Facts
        What the algorithm states about its schedule, which network models rely on (a pipelined
        chain's nodes, NCCL channels, NICs per node; `facts.Facts`); `meta` is for reports only.
        Kept by `placed` and `dataclasses.replace`.

    Examples
    --------
    A two-rank all-reduce by hand: each rank sends its peer the half the peer owns (added in),
    then sends its own finished half back; `verify` runs it on data.

    >>> from fabricsim.collectives.verify import verify
    >>> from fabricsim.ir import make_step
    >>> rs = make_step([0, 1], [1, 0], [1, 0], True)
    >>> ag = make_step([0, 1], [1, 0], [0, 1], False)
    >>> s = Schedule("all-reduce", "by-hand", 2, 2, (rs, ag))
    >>> verify(s).steps, s.bytes_sent(1e6).tolist()   # bytes per rank for a 1 MB all-reduce
    (2, [1000000.0, 1000000.0])
    """

    collective: str
    algorithm: str
    p: int
    nblocks: int
    steps: tuple[Step, ...]
    block_frac: float | None = None  # bytes per block / size; default 1/nblocks (1/p for all-to-all)
    owner: np.ndarray | None = None  # reduce-scatter / all-gather: rank that owns each block
    root: int | None = None  # broadcast / reduce
    n_extra: int = 0  # helper nodes p..p+n_extra-1 (e.g. a reducing switch)
    nodes: np.ndarray | None = None  # topology node of each schedule node, once placed
    meta: dict = field(default_factory=dict)  # algorithm options, for reports only
    # True: the transfers stream through switches (reduced on the way up, multicast on the way
    # down, pipelined), so every network model prices the schedule as one stream per flow
    # (`network.lowering.dataflow.schedule_flows`), not step by step; the steps still say what moves (verify)
    streaming: bool = False
    facts: Facts = field(default_factory=Facts)  # what the algorithm states, for network models

    def __post_init__(self):
        if self.collective not in COLLECTIVES:
            raise ValueError(f"unknown collective {self.collective!r}")
        if not isinstance(self.facts, Facts):
            raise ValueError(f"Schedule.facts: got {type(self.facts).__name__}, accepted: a Facts")
        if self.block_frac is None:
            frac = 1.0 / self.p if self.collective == "all-to-all" else 1.0 / self.nblocks
            object.__setattr__(self, "block_frac", frac)
        object.__setattr__(self, "steps", tuple(self.steps))
        if self.owner is not None:
            object.__setattr__(self, "owner", _frozen(np.asarray(self.owner, dtype=np.int64)))
        if self.nodes is not None:
            object.__setattr__(self, "nodes", _frozen(np.asarray(self.nodes, dtype=np.int64)))

    @property
    def n_nodes(self) -> int:
        """Schedule nodes: the p ranks and the helpers."""
        return self.p + self.n_extra

    @property
    def n_steps(self) -> int:
        """Steps along the time line, repetitions included (a block of lanes counts its longest lane)."""
        return int(lane_total(self.steps, np.array([s.repeat for s in self.steps], dtype=float)))

    @property
    def n_transfers(self) -> int:
        """Transfers over all steps, repetitions included."""
        return sum(s.n_transfers * s.repeat for s in self.steps)

    @property
    def stored_entries(self) -> int:
        """Block entries the steps hold in memory (`Step.stored_entries`), a part shared by several
        composed steps counted once: what the `blocks` limit bounds."""
        seen: dict[int, int] = {}
        total = 0
        for st in self.steps:
            for key, entries in st.storage():
                if key is None:
                    total += entries
                else:
                    seen[key] = entries
        return total + sum(seen.values())

    def transfer_fraction(self, step: Step) -> np.ndarray:
        """Bytes of each transfer of `step`, as a fraction of the collective's size.

        Parameters
        ----------
        step : Step
            One of this schedule's steps.

        Returns
        -------
        float array [T]
            Blocks per transfer x `block_frac`.
        """
        return step.blocks_per_transfer * self.block_frac

    def expanded(self) -> Iterator[tuple[int, Step]]:
        """(index of the lock-step step, that single step) for every repetition."""
        i = 0
        for st in self.steps:
            for k in range(st.repeat):
                yield i, st.single(k)
                i += 1

    def placed(self, nodes: Sequence[int]) -> "Schedule":
        """The same schedule with schedule nodes mapped to topology nodes.

        Parameters
        ----------
        nodes : sequence of int
            Topology node of each schedule node (`n_nodes` of them: the ranks, then the helpers).

        Returns
        -------
        Schedule
            A copy with `nodes` set (`facts`, `meta` and the rest kept); ValueError for the wrong count.
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        if len(nodes) != self.n_nodes:
            raise ValueError(f"placed: need {self.n_nodes} topology nodes, got {len(nodes)}")
        return replace(self, nodes=nodes)

    def topology_nodes(self) -> np.ndarray:
        """Topology node of each schedule node (identity when not placed)."""
        return self.nodes if self.nodes is not None else np.arange(self.n_nodes, dtype=np.int64)

    def node_sum(self, step: Step, side: str, *factors: float, out: np.ndarray, reduce_only: bool = False) -> np.ndarray:
        """Add to `out`, per schedule node, `transfer_fraction(step)` x `factors` of each transfer it sends or receives.

        Parameters
        ----------
        step : Step
            One of this schedule's steps (any form; a stated one sums from its rule where it can).
        side : {"src", "dst"}
            Add at each transfer's source or destination.
        *factors : float
            Multiplied into each transfer's fraction, in order (e.g. size in bytes, then `repeat`).
        out : float array [n_nodes]
            The running sums, updated in place.
        reduce_only : bool
            Count only the transfers that reduce.

        Returns
        -------
        float array
            `out`, with the transfers added one by one in transfer order (the same floats whichever
            form the step is in).
        """
        return step.add_node_sums(self.block_frac, side, factors, out, reduce_only)

    def bytes_sent(self, size: float) -> np.ndarray:
        """Bytes each schedule node sends in total.

        Parameters
        ----------
        size : float
            Collective size, bytes.

        Returns
        -------
        float array [n_nodes]
            Bytes, repetitions included.
        """
        out = np.zeros(self.n_nodes)
        for st in self.steps:
            self.node_sum(st, "src", size, st.repeat, out=out)
        return out

    def bytes_received(self, size: float) -> np.ndarray:
        """Bytes each schedule node receives in total.

        Parameters
        ----------
        size : float
            Collective size, bytes.

        Returns
        -------
        float array [n_nodes]
            Bytes, repetitions included.
        """
        out = np.zeros(self.n_nodes)
        for st in self.steps:
            self.node_sum(st, "dst", size, st.repeat, out=out)
        return out
