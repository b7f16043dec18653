"""A composed step: repetitions of other steps, side by side in one lock-step step.

A pipelined tree moves every (edge, piece) once up and once down: in lock-step step t the edges of
height h carry piece t - h. The edges of one height are one repeated `Step` (piece k at repetition
k), but a step of the pipeline is a different mix of them at each t while the pipeline fills and
drains, so listing every step lists every (edge, piece): 134 M entries for NCCL's tree on 65,536
GPUs (16 channels x 65,535 edges x 64 pieces, up and down). `ComposedStep` names the mix instead:
its transfers are those of `parts[i]` at repetition `first[i]`, in part order, and repeated, every
part advances by one repetition. The parts are stored once and shared by every step that uses them
(2 x 16 x 65,535 entries for that tree).

The readers that matter at scale read the parts: the analytical model routes every part once
and keeps it sparse (`network.analytical.composed_route`: a step's busiest link is its busiest part's where
its parts share no link), the flow model prices a pipelined chain from its hops
(`network.lowering.chain`), the sampled
verification finds a chosen block's moves in each part once, and per-node sums (`Schedule.node_sum`)
add the parts in order. Every other reader sees the usual `Step` attributes (`src`, `dst`,
`blocks`, `shift`, ...): the listed form (`explicit`, the parts' repetitions concatenated), built
on first use within the `blocks` limit. Both forms give the same answers: the listed form is the
definition, and the tests compare every native reader with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .form import StatedForm, register_form
from .step import Step, rotate


@register_form
@dataclass(frozen=True, eq=False)
class ComposedStep(StatedForm):
    """The transfers of `parts[i]` at repetition `first[i] + k`, concatenated in part order, as
    repetition k of one step (module doc).

    Parameters
    ----------
    parts : tuple of Step
        Plain steps (not composed, no full mesh, no lane), shared between composed steps.
    first : tuple of int
        Repetition of each part at this step's repetition 0; `first[i] + repeat <= parts[i].repeat`.
    repeat : int
        Lock-step steps this step stands for, >= 1: every part advances one repetition per step.
    """

    parts: tuple
    first: tuple
    repeat: int = 1
    _listed: list = field(default_factory=list, init=False, repr=False)  # the listed Step, once built

    form: ClassVar[str] = "composed"
    ranges: ClassVar[bool] = False
    lane: ClassVar[None] = None

    def __post_init__(self):
        object.__setattr__(self, "parts", tuple(self.parts))
        object.__setattr__(self, "first", tuple(int(f) for f in self.first))
        object.__setattr__(self, "repeat", int(self.repeat))
        if len(self.parts) != len(self.first):
            raise ValueError("ComposedStep: one first repetition per part")
        if self.repeat < 1:
            raise ValueError("ComposedStep: repeat must be >= 1")
        for part, f in zip(self.parts, self.first):
            if not part.listed or part.lane is not None:
                raise ValueError("ComposedStep: parts are plain steps without lanes")
            if not 0 <= f or f + self.repeat > part.repeat:
                raise ValueError(f"ComposedStep: repetitions {f}..{f + self.repeat - 1} of a part repeated "
                                 f"{part.repeat} times")

    # ---- what a native reader uses ----------------------------------------------------------

    @property
    def n_transfers(self) -> int:
        """Transfers in one repetition: those of the parts."""
        return sum(p.n_transfers for p in self.parts)

    @property
    def n_moves(self) -> int:
        """Block moves in one repetition: those of the parts."""
        return sum(p.n_moves for p in self.parts)

    @property
    def stored_entries(self) -> int:
        """Block entries of the parts (shared: `Schedule.stored_entries` counts each part once)."""
        return sum(p.stored_entries for p in self.parts)

    def storage(self) -> list[tuple[int | None, int]]:
        """Each part's entries under its key: a part shared by several composed steps is held once."""
        return [(id(p), p.stored_entries) for p in self.parts]

    def add_node_sums(self, block_frac: float, side: str, factors: tuple, out: np.ndarray,
                      reduce_only: bool = False) -> np.ndarray:
        """Per-node sums of the parts in listing order: the same additions as the listed form."""
        for part in self.parts:
            part.add_node_sums(block_frac, side, factors, out, reduce_only)
        return out

    def listed_parts(self) -> tuple[tuple[Step, int], ...]:
        """Each part with its repetition at this step's repetition 0 (`form.StepForm.listed_parts`)."""
        return tuple(zip(self.parts, self.first))

    def entry_offsets(self) -> np.ndarray:
        """Position of each part's first entry in the listed form.

        Returns
        -------
        int64 array [parts + 1]
            Cumulative block moves of the parts, from 0.
        """
        return np.cumsum([0] + [p.n_moves for p in self.parts]).astype(np.int64)

    # ---- verification, by the parts ------------------------------------------------------------

    rotates = property(lambda self: any(p.rotates for p in self.parts), doc="Whether a part's ids rotate.")

    def structure_problem(self, n_nodes: int) -> str | None:
        """The listed form's problem (`form.StepForm.structure_problem`) from the parts': a node outside
        in any part first, else the first part's transfer that sends to itself."""
        found = [p.structure_problem(n_nodes) for p in self.parts]
        outside = f"transfer names a node outside 0..{n_nodes - 1}"
        return outside if outside in found else next((f for f in found if f is not None), None)

    def sampled_events(self, t0: int, n_nodes: int, nblocks: int, sample: np.ndarray, memo: dict):
        """A sampled check's events and first error (`form.StepForm.sampled_events`): each part's moves
        over all its repetitions are found once (`memo`, shared by the composed steps) and cut to the
        repetitions this step runs; entry positions count from the part's place in the listed form,
        so errors rank as in it; the first error is the least (step, message) of the parts'."""
        events, err = [], None
        e_off, r = self.entry_offsets(), self.repeat
        for i, (part, f) in enumerate(zip(self.parts, self.first)):
            hit = memo.get(id(part))
            if hit is None or hit[0] is not part:
                problem = part.structure_problem(n_nodes)
                bad = None if problem else part.first_bad_rep(nblocks)
                moves = part.sampled_moves(sample, part.repeat if bad is None else bad) if not problem \
                    else (np.zeros(0, np.int64),) * 6
                order = np.argsort(moves[0], kind="stable")
                hit = memo[id(part)] = (part, problem, bad) + tuple(a[order] for a in moves)
            _, problem, bad, k, src, dst, red, col, pos = hit
            if problem is not None:
                e = (t0, f"step {t0}: {problem}")
                err = min(err or e, e)
                continue
            if bad is not None and bad < f + r:  # a block id leaves the range in the run: this window, exactly
                w = part.window(f, f + r)
                kb = w.first_bad_rep(nblocks)
                if kb is not None:
                    e = (t0 + kb, f"step {t0 + kb}: block id outside 0..{nblocks - 1}")
                    err = min(err or e, e)
                if kb != 0:
                    wk, wsrc, wdst, wred, wcol, wpos = w.sampled_moves(sample, r if kb is None else kb)
                    events.append((t0 + wk, wsrc, wdst, wred, wcol, wpos + e_off[i]))
                continue
            lo, hi = np.searchsorted(k, f), np.searchsorted(k, f + r)
            events.append((t0 + k[lo:hi] - f, src[lo:hi], dst[lo:hi], red[lo:hi], col[lo:hi], pos[lo:hi] + e_off[i]))
        if err is not None:  # the step-by-step run stops at the error: nothing from its step on
            events = [tuple(a[ev[0] < err[0]] for a in ev) for ev in events]
        return events, err

    # ---- the listed form: what every other reader sees ---------------------------------------

    def explicit(self) -> Step:
        """The same step with every transfer and block listed (a `Step`), built once, within the
        `blocks` limit: each part's repetitions `first .. first + repeat - 1` (its ids as at
        `first`, its own rotation), concatenated."""
        if not self._listed:
            from ..limits import check_limit

            check_limit("blocks", self.n_moves,
                        "schedule entries (a composed step listed entry by entry, for a reader that cannot take its "
                        "parts one by one)", "schedule step", f"{len(self.parts)} parts")
            listed = [p.explicit() for p in self.parts]  # range form: every id (rotations per id)
            src = _cat([e.src for e in listed], np.int64)
            dst = _cat([e.dst for e in listed], np.int64)
            red = _cat([e.reduce for e in listed], bool)
            ptr = np.concatenate([[0], np.cumsum(_cat([e.blocks_per_transfer for e in listed], np.int64))])
            blocks = _cat([e.blocks if f == 0 or e.shift is None else rotate(e.blocks, e.shift, e.mod, f)
                          for e, f in zip(listed, self.first)], np.int64)  # the ids at each part's first repetition
            shift = mod = None
            if self.repeat > 1 and any(e.shift is not None for e in listed):
                # a part that does not rotate: shift 0 in a range of 1 id leaves every id as it is
                shift = _cat([e.shift if e.shift is not None else np.zeros(len(e.blocks), np.int64) for e in listed],
                            np.int64)
                mod = _cat([e.mod if e.mod is not None else np.ones(len(e.blocks), np.int64) for e in listed], np.int64)
            self._listed.append(Step(src, dst, red, ptr, blocks, repeat=self.repeat, shift=shift, mod=mod))
        return self._listed[0]

    shift = property(lambda self: self.explicit().shift, doc="Id change per repetition (listed form).")
    mod = property(lambda self: self.explicit().mod, doc="Aligned id range of each entry (listed form).")

    def blocks_at(self, k: int) -> np.ndarray:
        """Block ids of all entries at repetition k (listed form, rotated)."""
        return self.explicit().blocks_at(k)

    def window(self, k0: int, k1: int) -> "ComposedStep":
        """Repetitions k0..k1-1 as a composed step of their own (every part from `first + k0`).

        Parameters
        ----------
        k0, k1 : int
            First repetition and one past the last, 0 <= k0 < k1 <= `repeat`.

        Returns
        -------
        ComposedStep
            The same parts, `repeat` = k1 - k0; ValueError out of range.
        """
        if not 0 <= k0 < k1 <= self.repeat:
            raise ValueError("Step.window out of range")
        if (k0, k1) == (0, self.repeat):
            return self
        return ComposedStep(self.parts, tuple(f + k0 for f in self.first), k1 - k0)

    def single(self, k: int) -> Step:
        """Repetition k alone, listed (as `Step.single`: what a step-by-step reader runs).

        Parameters
        ----------
        k : int
            Repetition, 0-based.

        Returns
        -------
        Step
            `repeat` = 1, the ids of repetition k listed.
        """
        if not 0 <= k < self.repeat:
            raise ValueError("Step.single out of range")
        return self.explicit().single(k)


def _cat(arrays: list, dtype) -> np.ndarray:
    """np.concatenate, or an empty array of `dtype` for no arrays."""
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype)


def _grouped(times: np.ndarray) -> dict[int, list[int]]:
    """Time -> the indices that have it, ascending (one sort, not a scan per time)."""
    order = np.argsort(times, kind="stable")
    t = times[order]
    cut = np.flatnonzero(np.diff(t)) + 1
    return {int(g[0]): idx.tolist() for g, idx in zip(np.split(t, cut), np.split(order, cut)) if len(g)}


def compose_pipeline(parts: tuple, offsets) -> list[ComposedStep]:
    """The lock-step steps of parts that each run all their repetitions, one per step, from a
    step of their own: part i runs repetition k at step offsets[i] + k.

    Parameters
    ----------
    parts : sequence of Step
        The parts, in the order a step lists them.
    offsets : sequence of int
        The step at which each part runs its repetition 0, >= 0.

    Returns
    -------
    list of ComposedStep
        Steps 0 .. max(offset + repeat) - 1, consecutive steps that run the same parts merged
        into one repeated composed step (the parts then advance together). Work is linear in the
        parts each step names, not steps x parts (a chain of 16,384 GPUs has 32,766 parts).
    """
    parts = tuple(parts)
    off = np.asarray(offsets, dtype=np.int64)
    reps = np.array([p.repeat for p in parts], dtype=np.int64)
    if not len(parts):
        return []
    if off.min() < 0:
        raise ValueError("compose_pipeline: offsets must be >= 0")
    ends = off + reps
    bounds = np.unique(np.concatenate([[0], off, ends]))
    starts_at, ends_at = _grouped(off), _grouped(ends)
    active: dict[int, None] = {}
    out: list[ComposedStep] = []
    for t0, t1 in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        for i in ends_at.get(t0, ()):
            del active[i]
        for i in starts_at.get(t0, ()):
            active[i] = None
        idx = sorted(active)  # listing order: the parts' order
        out.append(ComposedStep(tuple(parts[i] for i in idx), tuple(t0 - int(off[i]) for i in idx), t1 - t0))
    return out
