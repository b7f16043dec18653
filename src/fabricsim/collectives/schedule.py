"""The Schedule: the one intermediate representation of a collective.

A schedule moves *blocks* of a buffer between *schedule nodes*. Nodes `0..p-1` are the ranks
of the group (in group order); nodes `p..p+n_extra-1` are helpers that hold no data at the
start, e.g. a switch that reduces in the network. `nodes` maps schedule nodes to topology
nodes when the schedule has been placed on a topology.

The buffer of `size` bytes is split into `nblocks` equal blocks of `block_frac * size` bytes
each, so one schedule serves every message size. What the blocks mean depends on the
collective (see `verify`): all-reduce, reduce-scatter, all-gather, broadcast and reduce split
one buffer (nccl-tests' size: for all-gather the gathered output, for reduce-scatter the
input); all-to-all has `p*p` blocks, block `i*p + j` going from rank `i` to rank `j`, each
`size/p` bytes (size = one rank's send buffer).

Steps run one after another (lock-step); the transfers of one step run concurrently and read
their source data as it was at the start of the step. A transfer either copies its blocks
into the destination or reduces (adds) them into it.

Lanes: consecutive steps tagged `lane=(block, k)` form a block of independent sub-collectives
that synchronise only at the block's end (the bucket algorithm's phases: one ring per dimension,
each at its own pace). Steps of one lane run in order; different lanes of a block run side by
side on disjoint links, so a block lasts as long as its slowest lane. `verify` runs them in the
listed order (their data are disjoint); the analytical model times each lane on its own.

A `Step` may stand for a run of `repeat` steps of the same shape: the same sources,
destinations and block counts, with every block id moving by `shift` inside its aligned range
of `mod` ids at each repetition (a ring step is one pattern, rotated). Network models time the
shape once; `verify` expands it.

Range form (`ranges=True`): transfer t moves the contiguous ids `blocks[t] .. blocks[t] + n_t - 1`.
Repeated, its run moves as one tile: the start by `shift[t]` inside its aligned range of
`mod[t]` ids, the run never straddling the range's end (n_t divides mod and shift, and the start's
offset in the range), so every id of the run rotates exactly as in the listed form (`explicit`).
A lifted ring phase on a 256x256 torus is p entries in this form instead of p x 256 listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar, Iterator, Sequence

import numpy as np

from ..vocab import COLLECTIVES
from .facts import Facts


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def rotate(ids, shift, mod, k):
    """Block ids after k repetitions of their step: each moves by k x shift inside its aligned
    range of `mod` ids (module doc). The one rotation rule every reader of repeated steps uses.

    Parameters
    ----------
    ids, shift, mod : int arrays (or ints)
        Ids at repetition 0 (range form: the runs' starts), and per id its shift and range size.
    k : int or int array
        Repetition(s); broadcast against `ids` (e.g. a column of repetitions for a row of ids).

    Returns
    -------
    int64 array
        The rotated ids. The shift is taken at its smallest magnitude modulo `mod`, so k x shift
        stays within int64 for the ranges of 2^62 ids that never wrap.
    """
    o = ids % mod
    s = (shift + mod // 2) % mod - mod // 2
    return ids - o + (o + k * s) % mod


@dataclass(frozen=True, eq=False)
class Step:
    """Concurrent transfers of blocks between schedule nodes, repeated `repeat` times.

    Transfer `t` moves blocks `blocks[ptr[t]:ptr[t+1]]` from `src[t]` to `dst[t]`, adding them in
    if `reduce[t]`, else copying. At each repetition the block ids rotate (see module doc).
    Build one with `make_step` or `make_range_step`.

    Parameters
    ----------
    src, dst : int64 array [T]
        Source and destination schedule node of each transfer.
    reduce : bool array [T]
        Whether each transfer adds its blocks into the destination (else copies them).
    ptr : int64 array [T+1]
        CSR offsets of each transfer's entries in `blocks`.
    blocks : int64 array [K]
        Block ids at repetition 0; in range form, the first id of each transfer's run.
    repeat : int
        Lock-step steps this step stands for, >= 1.
    shift, mod : int64 arrays [K], optional
        Per entry: id change per repetition, and the size of the aligned id range it rotates in
        (both None: the ids do not change).
    ranges : bool
        Range form: transfer t moves the contiguous ids `blocks[t] .. blocks[t] + ptr[t+1] - ptr[t] - 1`;
        `shift` and `mod` are then per transfer and move the run as one tile (module doc).
    lane : (int, int), optional
        (block, lane) tag: the step belongs to an independent sub-collective (module doc, "lanes").
    """

    src: np.ndarray  # int64[T]
    dst: np.ndarray  # int64[T]
    reduce: np.ndarray  # bool[T]
    ptr: np.ndarray  # int64[T+1]
    blocks: np.ndarray  # int64[K], ids at repetition 0
    repeat: int = 1
    shift: np.ndarray | None = None  # int64[K]: id change per repetition
    mod: np.ndarray | None = None  # int64[K]: size of the aligned id range it rotates in
    ranges: bool = False  # range form: blocks[t] is the first id of transfer t's contiguous run
    lane: tuple[int, int] | None = None  # (block, lane): see module doc, "lanes"
    full_mesh: ClassVar[bool] = False  # a `full_mesh.FullMeshStep` states its transfers instead of listing them
    composed: ClassVar[bool] = False  # a `composed.ComposedStep` runs repetitions of other steps side by side
    line_mesh: ClassVar[bool] = False  # a `line_mesh.LineMeshStep` states its transfers' blocks by a rule

    def __post_init__(self):
        for name in ("src", "dst", "ptr", "blocks", "shift", "mod"):
            a = getattr(self, name)
            if a is not None:
                object.__setattr__(self, name, _frozen(np.ascontiguousarray(a, dtype=np.int64)))
        object.__setattr__(self, "reduce", _frozen(np.ascontiguousarray(self.reduce, dtype=bool)))
        t = len(self.src)
        if len(self.dst) != t or len(self.reduce) != t or len(self.ptr) != t + 1:
            raise ValueError("Step: src, dst, reduce and ptr lengths disagree")
        if self.ranges:
            if len(self.blocks) != t:
                raise ValueError("Step: range form needs one start per transfer")
            if self.shift is not None:
                if len(self.shift) != t or len(self.mod) != t:
                    raise ValueError("Step: range form needs one shift and mod per transfer")
                c, m = np.diff(self.ptr), self.mod
                turn = (c > 0) & (self.shift % m != 0)  # runs that rotate: whole tiles of their range
                c, m = c[turn], m[turn]
                if np.any(m % c) or np.any(self.shift[turn] % c) or np.any((self.blocks[turn] % m) % c):
                    raise ValueError("Step: a rotating run must be a tile of its aligned range "
                                     "(its length dividing mod, shift and its offset)")
        elif self.ptr[-1] != len(self.blocks) or (t and self.ptr[0] != 0):
            raise ValueError("Step: ptr does not cover blocks")
        if self.repeat < 1:
            raise ValueError("Step: repeat must be >= 1")
        if (self.shift is None) != (self.mod is None):
            raise ValueError("Step: shift and mod go together")

    @property
    def n_transfers(self) -> int:
        """Transfers in one repetition of this step."""
        return len(self.src)

    @property
    def blocks_per_transfer(self) -> np.ndarray:
        """Number of blocks each transfer moves (int64[T])."""
        return np.diff(self.ptr)

    @property
    def n_moves(self) -> int:
        """Block moves in one repetition: blocks summed over transfers (a run counts its ids)."""
        return int(self.ptr[-1])

    @property
    def stored_entries(self) -> int:
        """Block entries the step holds in memory (a run in range form is one): what the `blocks` limit bounds."""
        return len(self.blocks)  # range form: one start per transfer

    @property
    def first_block(self) -> np.ndarray:
        """The first block id of each transfer at repetition 0 (-1 for a transfer without blocks)."""
        if self.ranges:
            return np.where(np.diff(self.ptr) > 0, self.blocks, -1)
        if not len(self.blocks):
            return np.full(self.n_transfers, -1, dtype=np.int64)
        return np.where(np.diff(self.ptr) > 0, self.blocks[np.minimum(self.ptr[:-1], len(self.blocks) - 1)], -1)

    def explicit(self) -> "Step":
        """The same step with every block id listed (range form expanded; a run's rotation given
        to each of its ids)."""
        if not self.ranges:
            return self
        counts = self.blocks_per_transfer
        ids = np.repeat(self.blocks - self.ptr[:-1], counts) + np.arange(self.ptr[-1])
        shift = mod = None
        if self.shift is not None:
            shift, mod = np.repeat(self.shift, counts), np.repeat(self.mod, counts)
        return Step(self.src, self.dst, self.reduce, self.ptr, ids, repeat=self.repeat, shift=shift, mod=mod,
                    lane=self.lane)

    def starts_at(self, k: int) -> np.ndarray:
        """Range form: the first id of each transfer's run at repetition k.

        Parameters
        ----------
        k : int
            Repetition, 0-based.

        Returns
        -------
        int64 array [T]
            The rotated starts (ValueError for a step in listed form).
        """
        if not self.ranges:
            raise ValueError("Step.starts_at: the step lists its ids (use blocks_at)")
        if k == 0 or self.shift is None:
            return self.blocks
        return rotate(self.blocks, self.shift, self.mod, k)

    def blocks_at(self, k: int) -> np.ndarray:
        """Block ids of all entries at one repetition.

        Parameters
        ----------
        k : int
            Repetition, 0-based.

        Returns
        -------
        int64 array [K]
            The rotated ids, aligned with `blocks` (range form: every id listed).
        """
        if self.ranges:
            return self.single(k).explicit().blocks
        if k == 0 or self.shift is None:
            return self.blocks
        return rotate(self.blocks, self.shift, self.mod, k)

    def entry_src(self) -> np.ndarray:
        """Source node of every (transfer, block) entry, aligned with `blocks` (int64[K])."""
        return np.repeat(self.src, self.blocks_per_transfer)

    def entry_dst(self) -> np.ndarray:
        """Destination node of every (transfer, block) entry, aligned with `blocks` (int64[K])."""
        return np.repeat(self.dst, self.blocks_per_transfer)

    def entry_reduce(self) -> np.ndarray:
        """Whether every (transfer, block) entry reduces, aligned with `blocks` (bool[K])."""
        return np.repeat(self.reduce, self.blocks_per_transfer)

    def window(self, k0: int, k1: int) -> "Step":
        """Repetitions k0..k1-1 of this step as a step of its own.

        Parameters
        ----------
        k0, k1 : int
            First repetition and one past the last, 0 <= k0 < k1 <= `repeat`.

        Returns
        -------
        Step
            `repeat` = k1 - k0, ids as at repetition k0; ValueError out of range.
        """
        if not 0 <= k0 < k1 <= self.repeat:
            raise ValueError("Step.window out of range")
        return replace(self, blocks=self.starts_at(k0) if self.ranges else self.blocks_at(k0), repeat=k1 - k0)

    def single(self, k: int) -> "Step":
        """Repetition k alone, without rotation.

        Parameters
        ----------
        k : int
            Repetition, 0-based.

        Returns
        -------
        Step
            `repeat` = 1, the ids of repetition k listed (range form: its runs at k).
        """
        if self.ranges:
            return Step(self.src, self.dst, self.reduce, self.ptr, self.starts_at(k), ranges=True)
        return Step(self.src, self.dst, self.reduce, self.ptr, self.blocks_at(k))


class ListedView:
    """The `Step` attributes of a stated step (`FullMeshStep`, `LineMeshStep`, `ComposedStep`), read from its listed
    form: a subclass defines `explicit()`, which builds that `Step` once; every reader that does
    not take the stated form whole sees these. Each kind sets its own flag."""

    full_mesh: ClassVar[bool] = False
    composed: ClassVar[bool] = False
    line_mesh: ClassVar[bool] = False

    def explicit(self) -> Step:  # pragma: no cover - defined by each stated step
        """The same step with every transfer listed."""
        raise NotImplementedError

    src = property(lambda self: self.explicit().src, doc="Source node of each transfer (listed form).")
    dst = property(lambda self: self.explicit().dst, doc="Destination node of each transfer (listed form).")
    reduce = property(lambda self: self.explicit().reduce, doc="Reduce flag of each transfer (listed form).")
    ptr = property(lambda self: self.explicit().ptr, doc="CSR offsets of the blocks (listed form).")
    blocks = property(lambda self: self.explicit().blocks, doc="Block ids at repetition 0 (listed form).")
    blocks_per_transfer = property(lambda self: self.explicit().blocks_per_transfer,
                                   doc="Blocks each transfer moves (listed form).")
    first_block = property(lambda self: self.explicit().first_block, doc="First block of each transfer (listed form).")

    def entry_src(self) -> np.ndarray:
        """Source node of every entry (listed form)."""
        return self.explicit().entry_src()

    def entry_dst(self) -> np.ndarray:
        """Destination node of every entry (listed form)."""
        return self.explicit().entry_dst()

    def entry_reduce(self) -> np.ndarray:
        """Reduce flag of every entry (listed form)."""
        return self.explicit().entry_reduce()

    def starts_at(self, k: int) -> np.ndarray:
        """Not in range form (as `Step.starts_at`)."""
        raise ValueError(f"{type(self).__name__}.starts_at: the step is not in range form (use blocks_at)")


class OnceView(ListedView):
    """A stated step that does not repeat (`FullMeshStep`, `LineMeshStep`): repetition 0 is the step."""

    repeat: ClassVar[int] = 1
    shift: ClassVar[None] = None
    mod: ClassVar[None] = None
    ranges: ClassVar[bool] = False
    lane: ClassVar[None] = None

    def blocks_at(self, k: int) -> np.ndarray:
        """Block ids at repetition k (= 0: the step does not repeat; listed form)."""
        return self.single(k).blocks

    def single(self, k: int):
        """Repetition k alone: the step itself (k = 0)."""
        if k != 0:
            raise ValueError(f"{type(self).__name__}.single: the step does not repeat")
        return self

    def window(self, k0: int, k1: int):
        """Repetitions k0..k1-1: the step itself (0, 1)."""
        if (k0, k1) != (0, 1):
            raise ValueError("Step.window out of range")
        return self


def make_range_step(src, dst, start, count, reduce) -> Step:
    """A step in range form: transfer t moves the contiguous blocks start[t] .. start[t]+count[t]-1.

    Parameters
    ----------
    src, dst : int array-like
        Source and destination schedule node of each transfer.
    start : int or int array-like
        First block id of each transfer's run.
    count : int or int array-like
        Blocks in each run (broadcast to every transfer).
    reduce : bool or bool array-like
        Whether each transfer adds its blocks in (broadcast to every transfer).

    Returns
    -------
    Step
        `ranges=True`, `repeat` = 1.
    """
    src = np.asarray(src, dtype=np.int64).ravel()
    count = np.broadcast_to(np.asarray(count, dtype=np.int64), src.shape)
    ptr = np.zeros(len(src) + 1, dtype=np.int64)
    np.cumsum(count, out=ptr[1:])
    red = np.broadcast_to(np.asarray(reduce, dtype=bool), src.shape).copy()
    return Step(src, np.asarray(dst, dtype=np.int64).ravel(), red, ptr,
                np.broadcast_to(np.asarray(start, dtype=np.int64), src.shape).copy(), ranges=True)


def make_step(
    src,
    dst,
    blocks,
    reduce,
    *,
    repeat: int = 1,
    shift=None,
    mod=None,
) -> Step:
    """Build a step from per-transfer arrays.

    Parameters
    ----------
    src, dst : int array-like
        Source and destination schedule node of each transfer.
    blocks : array-like
        A 1-D array (one block per transfer), a 2-D array (the same number of blocks per
        transfer, one row each) or a list of 1-D arrays (any number per transfer).
    reduce : bool or bool array-like
        Whether each transfer adds its blocks into the destination (else copies them).
    repeat : int
        Lock-step steps the step stands for.
    shift, mod : int or int array-like, optional
        Scalars or per-entry arrays (shape like `blocks`): each id's change per repetition and the
        size of the aligned id range it rotates in.

    Returns
    -------
    Step

    Examples
    --------
    One ring step on 4 ranks (rank r sends block r to r+1), repeated 3 times with the block ids
    moving back by one each time:

    >>> st = make_step([0, 1, 2, 3], [1, 2, 3, 0], [0, 1, 2, 3], False, repeat=3, shift=-1, mod=4)
    >>> st.n_transfers, st.blocks_at(1).tolist()
    (4, [3, 0, 1, 2])
    """
    src = np.asarray(src, dtype=np.int64).ravel()
    dst = np.asarray(dst, dtype=np.int64).ravel()
    t = len(src)
    if isinstance(blocks, (list, tuple)) and (len(blocks) == 0 or np.ndim(blocks[0]) == 1):
        counts = np.array([len(b) for b in blocks], dtype=np.int64)
        flat = np.concatenate([np.asarray(b, dtype=np.int64) for b in blocks]) if t else np.zeros(0, np.int64)
    else:
        arr = np.asarray(blocks, dtype=np.int64)
        if arr.ndim == 1:
            arr = arr[:, None]
        counts = np.full(t, arr.shape[1], dtype=np.int64)
        flat = arr.reshape(-1)
    ptr = np.zeros(t + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    red = np.broadcast_to(np.asarray(reduce, dtype=bool), (t,)).copy()
    sh = md = None
    if shift is not None:
        sh = np.broadcast_to(np.asarray(shift, dtype=np.int64).reshape(-1) if np.ndim(shift) else shift, flat.shape).copy()
        md = np.broadcast_to(np.asarray(mod, dtype=np.int64).reshape(-1) if np.ndim(mod) else mod, flat.shape).copy()
    return Step(src, dst, red, ptr, flat, repeat=repeat, shift=sh, mod=md)


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
    # (`network.dataflow.schedule_flows`), not step by step; the steps still say what moves (verify)
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
            if st.composed:
                for part in st.parts:
                    seen[id(part)] = part.stored_entries
            else:
                total += st.stored_entries
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
            One of this schedule's steps (a `FullMeshStep` or a `ComposedStep` is summed without listing it).
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
        if step.composed:  # the parts in listing order: the same additions as the listed form
            for part in step.parts:
                self.node_sum(part, side, *factors, out=out, reduce_only=reduce_only)
            return out
        if step.full_mesh:  # n - 1 equal transfers at each of nodes 0..n-1, added in order
            if step.n > 1 and (step.reduce_all or not reduce_only):
                x = 1 * self.block_frac  # one block per transfer
                for f in factors:
                    x = x * f
                start = out[: step.n]
                for v in np.unique(start):  # few distinct running sums: one sequential sum each
                    start[start == v] = np.cumsum(np.concatenate([[v], np.full(step.n - 1, x)]))[-1]
            return out
        w = self.transfer_fraction(step)
        for f in factors:
            w = w * f
        at = step.src if side == "src" else step.dst
        if reduce_only:
            r = step.reduce.astype(bool)
            at, w = at[r], w[r]
        np.add.at(out, at, w)
        return out

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


# ---- composition ---------------------------------------------------------------------------


def lane_total(steps: Sequence[Step], cost: np.ndarray, floor: dict | None = None) -> np.ndarray:
    """Sum of per-step costs along the time line: a block of lanes costs its slowest lane.

    Parameters
    ----------
    steps : sequence of Step
        The steps, in order (their `lane` tags group them).
    cost : array
        Cost of each step on the first axis (any unit, e.g. seconds; further axes, e.g. sizes,
        are kept).
    floor : dict, optional
        Block id -> the least a block costs (same trailing shape as `cost`): what its lanes
        share (an NPU's injection limit across its concurrent lanes).

    Returns
    -------
    array
        `cost` summed over its first axis, lanes of a block counted by their maximum.
    """
    cost = np.asarray(cost, dtype=float)
    total = np.zeros(cost.shape[1:])
    block = None
    lanes: dict = {}

    def close(key):
        worst = np.max(np.stack(list(lanes.values())), axis=0)
        return np.maximum(worst, floor[key]) if floor and key in floor else worst

    for st, c in zip(steps, cost):
        key = st.lane[0] if st.lane is not None else None
        if key != block and lanes:
            total = total + close(block)
            lanes = {}
        block = key
        if key is None:
            total = total + c
        else:
            lanes[st.lane[1]] = lanes.get(st.lane[1], 0.0) + c
    if lanes:
        total = total + close(block)
    return total


def in_lanes(block: int, lanes: Sequence[Sequence[Step]]) -> tuple[Step, ...]:
    """Independent step lists that synchronise only at the end (one block of lanes).

    Parameters
    ----------
    block : int
        Tag of the block (distinct from neighbouring blocks; e.g. the index of its first step).
    lanes : sequence of step lists
        One list per lane.

    Returns
    -------
    tuple of Step
        The steps of every lane, in lane order, tagged `lane=(block, k)`.
    """
    return tuple(replace(st, lane=(block, k)) for k, lane in enumerate(lanes) for st in lane)


def sequence(*parts: Sequence[Step]) -> tuple[Step, ...]:
    """Steps of several phases, one phase after another.

    Parameters
    ----------
    *parts : sequences of Step
        The phases, in time order.

    Returns
    -------
    tuple of Step
    """
    return tuple(s for part in parts for s in part)


def align(a: Sequence[Step], b: Sequence[Step]) -> tuple[list[Step], list[Step]]:
    """Split repeated steps so that both lists have the same repetition structure.

    Parameters
    ----------
    a, b : sequence of Step
        Two step lists.

    Returns
    -------
    (list of Step, list of Step)
        The same steps, split with `Step.window` so that the i-th steps of both lists have the
        same `repeat` (over their common length; the longer list's tail is kept).
    """
    a, b = list(a), list(b)
    out_a: list[Step] = []
    out_b: list[Step] = []
    i = j = 0
    ka = kb = 0  # repetitions already consumed of a[i], b[j]
    while i < len(a) and j < len(b):
        ra, rb = a[i].repeat - ka, b[j].repeat - kb
        n = min(ra, rb)
        out_a.append(a[i].window(ka, ka + n) if (ka, n) != (0, a[i].repeat) else a[i])
        out_b.append(b[j].window(kb, kb + n) if (kb, n) != (0, b[j].repeat) else b[j])
        ka += n
        kb += n
        if ka == a[i].repeat:
            i, ka = i + 1, 0
        if kb == b[j].repeat:
            j, kb = j + 1, 0
    out_a.extend(a[i:] if ka == 0 else [a[i].window(ka, a[i].repeat)] + a[i + 1 :])
    out_b.extend(b[j:] if kb == 0 else [b[j].window(kb, b[j].repeat)] + b[j + 1 :])
    return out_a, out_b


def merge_steps(x: Step, y: Step) -> Step:
    """Two steps with the same repeat, run concurrently as one.

    Parameters
    ----------
    x, y : Step
        Steps with equal `repeat`.

    Returns
    -------
    Step
        The transfers of `x` then those of `y` (range form when both are in range form).
    """
    assert x.repeat == y.repeat
    rotating = x.shift is not None or y.shift is not None

    def rot(s: Step):
        if s.shift is not None:
            return s.shift, s.mod
        z = np.zeros(len(s.blocks), dtype=np.int64)
        return z, np.full(len(s.blocks), np.iinfo(np.int64).max // 4, dtype=np.int64)

    if x.ranges and y.ranges:
        shift = mod = None
        if rotating and x.repeat > 1:
            (sx, mx), (sy, my) = rot(x), rot(y)
            shift, mod = np.concatenate([sx, sy]), np.concatenate([mx, my])
        return Step(np.concatenate([x.src, y.src]), np.concatenate([x.dst, y.dst]),
                    np.concatenate([x.reduce, y.reduce]), np.concatenate([x.ptr, y.ptr[1:] + x.ptr[-1]]),
                    np.concatenate([x.blocks, y.blocks]), repeat=x.repeat, shift=shift, mod=mod, ranges=True)
    x, y = x.explicit(), y.explicit()

    ptr = np.concatenate([x.ptr, y.ptr[1:] + x.ptr[-1]])
    shift = mod = None
    if rotating and x.repeat > 1:
        (sx, mx), (sy, my) = rot(x), rot(y)
        shift, mod = np.concatenate([sx, sy]), np.concatenate([mx, my])
    return Step(
        np.concatenate([x.src, y.src]),
        np.concatenate([x.dst, y.dst]),
        np.concatenate([x.reduce, y.reduce]),
        ptr,
        np.concatenate([x.blocks, y.blocks]),
        repeat=x.repeat,
        shift=shift,
        mod=mod,
    )


def parallel(*step_lists: Sequence[Step]) -> tuple[Step, ...]:
    """Several step lists run side by side: step i of each runs in lock-step step i.

    Lists may differ in length; the shorter ones simply finish earlier.

    Parameters
    ----------
    *step_lists : sequences of Step
        The lists (e.g. the two directions of a bidirectional ring).

    Returns
    -------
    tuple of Step
        Merged steps, compression kept (`align`, `merge_steps`).
    """
    out: list[Step] = list(step_lists[0])
    for other in step_lists[1:]:
        a, b = align(out, other)
        n = min(len(a), len(b))
        out = [merge_steps(a[i], b[i]) for i in range(n)] + a[n:] + b[n:]
    return tuple(out)


def offset_nodes(steps: Sequence[Step], node_map: np.ndarray) -> tuple[Step, ...]:
    """Rename schedule nodes through `node_map`.

    Parameters
    ----------
    steps : sequence of Step
        Steps on local node ids.
    node_map : int array
        New id of each local id (`node_map[i]`).

    Returns
    -------
    tuple of Step
        The same steps with `src` and `dst` renamed.
    """
    node_map = np.asarray(node_map, dtype=np.int64)
    return tuple(replace(s, src=node_map[s.src], dst=node_map[s.dst]) for s in steps)
