"""The listed step form: `Step`, its transfers held in arrays, and the builders `make_step` and
`make_range_step`. What a schedule is, and how its steps run, follows.

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

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from .form import register_form, transfer_node_sums


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


@register_form
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
    form: ClassVar[str] = "listed"  # `form.StepForm`: this form's name in `form.FORMS`
    listed: ClassVar[bool] = True  # its transfers are held in arrays (not stated by a rule)
    full_mesh: ClassVar[bool] = False  # TRANSITION: form flags, until every reader dispatches on the form
    composed: ClassVar[bool] = False
    line_mesh: ClassVar[bool] = False

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

    def storage(self) -> list[tuple[int | None, int]]:
        """What the step holds in memory: [(None, `stored_entries`)] (`form.StepForm`)."""
        return [(None, self.stored_entries)]

    def add_node_sums(self, block_frac: float, side: str, factors: tuple, out: np.ndarray,
                      reduce_only: bool = False) -> np.ndarray:
        """Per-node byte sums of the transfers, in place (`form.transfer_node_sums`)."""
        return transfer_node_sums(self, block_frac, side, factors, out, reduce_only)

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
