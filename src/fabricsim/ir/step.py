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

from . import step_events
from .form import checked_events, register_form, rotate, transfer_node_sums


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def span_indices(first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """first[i], first[i] + 1, ..., first[i] + count[i] - 1 for every i, concatenated."""
    total = int(count.sum())
    return np.repeat(first - (np.cumsum(count) - count), count) + np.arange(total)


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

    # ---- what a verification reads (`form.StepForm`; the work in `step_events`) ---------------

    rotates = property(lambda self: self.shift is not None, doc="Whether its ids change per repetition (`shift`).")

    @property
    def checked_entries(self) -> int:
        """Entries a step-by-step check reads per repetition (`StepForm.checked_entries`): the stored
        ones, but a repeated range-form step is read listed (`batch_moves`), every id of every run."""
        return self.n_moves if self.ranges and self.repeat > 1 else self.stored_entries

    def run_starts(self) -> np.ndarray | None:
        """Each transfer's first id in range form, else None (`form.StepForm.run_starts`)."""
        return self.blocks if self.ranges else None

    def structure_problem(self, n_nodes: int) -> str | None:
        """A transfer outside 0..n_nodes-1, else the first that sends to itself (`form.StepForm.structure_problem`)."""
        src, dst = self.src, self.dst
        if len(src) and (src.min() < 0 or dst.min() < 0 or max(src.max(), dst.max()) >= n_nodes):
            return f"transfer names a node outside 0..{n_nodes - 1}"
        if np.any(src == dst):
            return f"node {src[int(np.flatnonzero(src == dst)[0])]} sends to itself"
        return None

    def first_bad_rep(self, nblocks: int) -> int | None:
        """The first repetition with an id outside 0..nblocks-1 (`form.StepForm.first_bad_rep`): closed
        form per rotating entry; a run's first and last ids rotate as one."""
        if self.ranges:
            return step_events.range_bad_rep(self, nblocks)
        return step_events.first_bad_rep(self.blocks, self.shift, self.mod, self.repeat, nblocks)

    def sampled_moves(self, sample: np.ndarray, reps: int) -> tuple[np.ndarray, ...]:
        """The moves of the chosen blocks (`form.StepForm.sampled_moves`): a rotating entry looked up per
        repetition, never the repetitions expanded."""
        k, tr, pos, col = (step_events.range_events if self.ranges else step_events.listed_events)(self, reps, sample)
        return k, self.src[tr], self.dst[tr], self.reduce[tr], col, pos

    def sampled_events(self, t0: int, n_nodes: int, nblocks: int, sample: np.ndarray, memo: dict):
        """A sampled check's events and first error (`form.StepForm.sampled_events`, `form.checked_events`)."""
        return checked_events(self, t0, n_nodes, nblocks, sample)

    def batch_moves(self, k: int, blocks: np.ndarray, col_of: np.ndarray, memo: dict):
        """The moves of a batch of blocks at repetition k (`form.StepForm.batch_moves`): range form cut
        to the batch, or, repeated, read listed (built once per check, in `memo`)."""
        if not self.ranges:
            return step_events.listed_batch_moves(self, k, col_of, memo)
        if self.repeat == 1:
            return step_events.range_batch_moves(self, blocks, len(col_of))
        if "listed" not in memo:
            memo["listed"] = (self.explicit(), {})
        listed, sub = memo["listed"]
        return listed.batch_moves(k, blocks, col_of, sub)

    # ---- its entries as it holds them (listed ids, or range-form runs) -----------------------

    def _entries(self, sel: np.ndarray | None = None):
        """Entries of transfers `sel` (None: all): their positions in `blocks`, `shift` and `mod`
        (None: all, in order), the index into `sel` of each one's transfer, and the ids each covers
        (None: one each; range form: its run's length, transfers without blocks left out)."""
        cnt = self.blocks_per_transfer if sel is None else self.blocks_per_transfer[sel]
        if self.ranges:
            j = np.flatnonzero(cnt > 0)
            return (j if sel is None else sel[j]), j, cnt[j]
        return (None if sel is None else span_indices(self.ptr[sel], cnt)), np.repeat(np.arange(len(cnt)), cnt), None

    def block_runs(self, sel: np.ndarray | None = None, reps=(0,)):
        """Block runs of transfers `sel` at repetitions `reps` (`form.StepForm.block_runs`): each
        listed id, or each range-form run whole, rotated to each repetition."""
        e, j, w = self._entries(sel)
        b = self.blocks if e is None else self.blocks[e]
        ks, n = np.asarray(reps, dtype=np.int64).reshape(-1, 1), len(j)
        if self.shift is not None and np.any(ks != 0):
            b = rotate(b, self.shift if e is None else self.shift[e], self.mod if e is None else self.mod[e], ks)
        lo, n = np.broadcast_to(b, (len(ks), n)).ravel(), len(ks)
        rep = np.repeat(np.arange(n, dtype=np.int64), len(j))
        return rep, (j if n == 1 else np.tile(j, n)), lo, lo + (1 if w is None else np.tile(w, n))

    def id_spans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(transfer, lo, hi) of every entry: the ids it moves at any repetition, as [lo, hi) (a
        rotating entry: its whole aligned range)."""
        e, t, w = self._entries()
        b = self.blocks if e is None else self.blocks[e]
        lo, hi = b.copy(), b + (1 if w is None else w)
        if self.shift is not None and self.repeat > 1:
            shift, mod = (self.shift, self.mod) if e is None else (self.shift[e], self.mod[e])
            rot, base = shift % mod != 0, b - b % mod
            lo, hi = np.where(rot, base, lo), np.where(rot, base + mod, hi)
        return t, lo, hi

    def select(self, tr: np.ndarray) -> "Step":
        """The transfers `tr` (indices) alone: a step of the same layout, repetitions, rotation and lane."""
        cnt = self.blocks_per_transfer[tr]
        e = tr if self.ranges else span_indices(self.ptr[tr], cnt)
        sm = (self.shift[e], self.mod[e]) if self.shift is not None else (None, None)
        return replace(self, src=self.src[tr], dst=self.dst[tr], reduce=self.reduce[tr],
                       ptr=np.concatenate([[0], np.cumsum(cnt)]), blocks=self.blocks[e], shift=sm[0], mod=sm[1])

    def listed_parts(self) -> tuple[tuple["Step", int], ...]:
        """Itself at repetition 0 (`form.StepForm.listed_parts`)."""
        return ((self, 0),)

    def maps_channels(self, sig: np.ndarray) -> None:
        """Nothing stated: its transfers are listed (`form.StepForm.maps_channels`)."""
        return None

    def maps_blocks(self, sig: np.ndarray, pi, nblocks: int) -> None:
        """Nothing stated: its blocks are listed (`form.StepForm.maps_blocks`)."""
        return None

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
