"""Step forms: the ways a step is held, and the one protocol every reader of a step uses.

A step is held in one of a few forms. The listed form (`ir.step.Step`) keeps its transfers in
arrays (optionally with runs of ids in range form); a stated form keeps a rule instead: a mesh
along the lines of a grid, the full mesh its one-line case (`ir.mesh`), or repetitions of other
steps side by side (`ir.composed`). Every form answers the `StepForm` protocol; a stated form inherits
`StatedForm`'s defaults, which read its listed form (`explicit()`, built once), and overrides what it
can answer from its rule alone (its counts, where a block moves, its symmetry). A reader never
tests which form it holds: it asks the protocol, or a network model looks the form's name
(`step.form`) up in a registry of its own lowerings, in which a lowering module registers itself
(`network.analytical.route.register_step_router`, `network.lowering.quotient.lowers`); a form without a
lowering is read through the protocol, which at worst lists it (`explicit()`). Adding a form is one
module here with its `@register_form` line; a faster lowering is one module and one registration
per model that wants one.
"""

from __future__ import annotations

from typing import ClassVar, Iterable, Protocol, runtime_checkable

import numpy as np

# `Step` (ir.step) in annotations below: the listed form, which imports this module

FORMS: dict[str, type] = {}
"""Every registered step form by name (`StepForm.form`)."""


def register_form(cls: type) -> type:
    """Class decorator: register a step form under its `form` name (module doc).

    Parameters
    ----------
    cls : type
        A class answering `StepForm`, with a unique `form` name.

    Returns
    -------
    type
        `cls`, unchanged; ValueError when another class holds its name.
    """
    name = cls.__dict__.get("form")
    if not isinstance(name, str) or not name:
        raise ValueError(f"register_form: {cls.__name__} states no form name")
    if FORMS.get(name, cls) is not cls:
        raise ValueError(f"register_form: form {name!r} is taken by {FORMS[name].__name__}")
    FORMS[name] = cls
    return cls


def transfer_node_sums(step, block_frac: float, side: str, factors: tuple, out: np.ndarray,
                       reduce_only: bool = False) -> np.ndarray:
    """Add to `out`, per schedule node, blocks x `block_frac` x `factors` of each transfer of `step`
    it sends (`side` "src") or receives ("dst"), transfer by transfer: `StepForm.add_node_sums` read
    from a step's `blocks_per_transfer`, `src`, `dst` and `reduce`.

    Parameters
    ----------
    step : StepForm
        Any form (a stated one answers these four attributes from its listed form or its rule).
    block_frac : float
        Bytes of one block per byte of collective size.
    side : {"src", "dst"}
    factors : tuple of float
        Multiplied in, in order (e.g. size in bytes, then `repeat`).
    out : float array [n_nodes]
        Updated in place.
    reduce_only : bool
        Count only the transfers that reduce.

    Returns
    -------
    float array
        `out`.
    """
    w = step.blocks_per_transfer * block_frac
    for f in factors:
        w = w * f
    at = step.src if side == "src" else step.dst
    if reduce_only:
        r = step.reduce.astype(bool)
        at, w = at[r], w[r]
    np.add.at(out, at, w)
    return out


def rotate(ids, shift, mod, k):
    """Block ids after k repetitions of their step: each moves by k x shift inside its aligned
    range of `mod` ids (`ir.step` module doc). The one rotation rule every reader of repeated steps uses.

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


def checked_events(step, t0: int, n_nodes: int, nblocks: int, sample: np.ndarray) -> tuple[list, tuple | None]:
    """`StepForm.sampled_events` from the step's `structure_problem`, `first_bad_rep` and
    `sampled_moves`: a structural problem stops the check at the step's first repetition, a block
    id leaving the buffer at its first bad repetition (the moves before it are kept)."""
    problem = step.structure_problem(n_nodes)
    err = None if problem is None else (t0, f"step {t0}: {problem}")
    reps = step.repeat
    if err is None:
        k_bad = step.first_bad_rep(nblocks)
        if k_bad is not None:
            err = (t0 + k_bad, f"step {t0 + k_bad}: block id outside 0..{nblocks - 1}")
            reps = k_bad
    events = []
    if reps > 0 and (err is None or err[0] > t0):
        k, src, dst, red, col, pos = step.sampled_moves(sample, reps)  # in any order: errors are ranked later
        events.append((t0 + k, src, dst, red, col, pos))
    return events, err


@runtime_checkable
class StepForm(Protocol):
    """What every step form answers (module doc). Units: node ids, block ids and counts; the byte
    sums are in the units of the factors passed (bytes for a size in bytes)."""

    form: ClassVar[str]  # the form's name in FORMS
    listed: ClassVar[bool]  # True: `src`, `dst`, `blocks` are held; False: stated by a rule
    repeat: int  # lock-step steps it stands for
    lane: tuple[int, int] | None  # (block, lane) of an independent sub-collective

    @property
    def n_transfers(self) -> int: ...  # transfers in one repetition

    @property
    def n_moves(self) -> int: ...  # block moves in one repetition

    @property
    def stored_entries(self) -> int: ...  # block entries held in memory

    def explicit(self) -> "Step": ...  # the same step, every transfer listed (the definition)

    def blocks_at(self, k: int) -> np.ndarray: ...  # block ids of every entry at repetition k

    def window(self, k0: int, k1: int) -> "StepForm": ...  # repetitions k0..k1-1 as a step

    def single(self, k: int) -> "StepForm": ...  # repetition k alone

    def storage(self) -> Iterable[tuple[int | None, int]]: ...  # (shared key or None, entries)

    def add_node_sums(self, block_frac: float, side: str, factors: tuple, out: np.ndarray,
                      reduce_only: bool = False) -> np.ndarray: ...  # per-node sums, in place

    @property
    def rotates(self) -> bool:
        """Whether the step states a change of block ids per repetition (`shift`/`mod`, even a zero
        one): a cost hint (a sampled check looks a rotating step up per repetition)."""
        ...

    @property
    def checked_entries(self) -> int:
        """Entries a step-by-step check (`batch_moves`) reads per repetition: a cost hint for the
        sample planner (`collectives.verify.sample_plan`). Count of (transfer, block) entries."""
        ...

    def run_starts(self) -> np.ndarray | None:
        """The first block id of each transfer's run of contiguous ids at repetition 0 (int64 [T];
        the runs' lengths are `blocks_per_transfer`) when the step holds its ids as runs (range
        form), else None (its ids are listed, or stated by a rule)."""
        ...

    def structure_problem(self, n_nodes: int) -> str | None:
        """What is wrong with the step's transfers on a schedule of `n_nodes` nodes, the same at every
        repetition: a transfer naming a node outside 0..n_nodes-1 (before anything else), or the
        first transfer that sends to itself; None when nothing is. A message without its step."""
        ...

    def first_bad_rep(self, nblocks: int) -> int | None:
        """The first repetition (0-based) at which a block id the step moves leaves 0..nblocks-1
        (None: never)."""
        ...

    def sampled_moves(self, sample: np.ndarray, reps: int) -> tuple[np.ndarray, ...]:
        """Every move of the sorted block ids `sample` in repetitions 0..reps-1 (reps <= `repeat`,
        before `first_bad_rep`), in any order: (repetition, src node, dst node, reduce flag, column in
        `sample`, entry position in the listed form's `blocks`), int64 arrays (reduce: bool)."""
        ...

    def sampled_events(self, t0: int, n_nodes: int, nblocks: int, sample: np.ndarray,
                       memo: dict) -> tuple[list, tuple[int, str] | None]:
        """What a sampled check (`collectives.verify_sampled`) reads of the step run from lock-step
        step `t0`: a list of (step, src, dst, reduce, column, entry position) arrays of the moves of
        `sample` (as `sampled_moves`, repetition k at step t0 + k), and the first error met in
        running it, (step, message) or None, the moves cut before it. `memo`: a dict shared by the
        steps of one check, where a form keeps what several steps share (a composed step its parts')."""
        ...

    def batch_moves(self, k: int, blocks: np.ndarray, col_of: np.ndarray,
                    memo: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """What a step-by-step check (`collectives.verify`) reads at repetition k for a batch of the
        sorted block ids `blocks`: (src node, dst node, reduce flag, column in `blocks`) of every
        entry that moves one of them, in listing order; None when an id of repetition k lies
        outside 0..len(col_of)-1. `col_of` (int64 [nblocks]): each id's column, -1 outside the
        batch; `memo`: a dict the caller keeps for this step across batches and repetitions."""
        ...

    def block_runs(self, sel: np.ndarray | None = None, reps=(0,)) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The blocks transfers `sel` (indices; None: all) move at repetitions `reps`, as runs of
        contiguous ids in the order the step holds them: (index into `reps`, index into `sel`, first
        id, one past the last id) per run, by repetition, then transfer. A listed entry is a run of one
        id, a range-form transfer one run (`step` doc); transfers without blocks have none; runs are
        not merged (`network.lowering.dataflow_deps.merge_runs` does). Units: indices and block ids (int64)."""
        ...

    def listed_parts(self) -> tuple[tuple["Step", int], ...] | None:
        """The listed steps this step runs side by side, each with its repetition at this step's
        repetition 0: a listed step itself at 0, a composed step its parts; None for a step stated
        by a rule over no listed parts (a mesh)."""
        ...

    def maps_channels(self, sig: np.ndarray) -> bool | None:
        """Whether the node map `sig` (int64, schedule node -> schedule node) maps every transfer
        onto a transfer of the step with the same reduce flag and block count, transfer (i, j) onto
        (sig i, sig j), as the form's rule states; None where it states nothing (the reader matches
        the listed transfers)."""
        ...

    def maps_blocks(self, sig: np.ndarray, pi, nblocks: int) -> bool | None:
        """Given `maps_channels(sig)`, whether the block map `pi` (a callable on int64 id arrays;
        `pi.kind == "all-to-all"` when it is the all-to-all's i*p + j -> sig(i)*p + sig(j) over
        `nblocks` = p*p ids) maps each transfer's blocks onto its image's at every repetition, as
        the form's rule states; None where it states nothing (the reader checks the listed blocks)."""
        ...



class StatedForm:
    """The defaults of a stated step form (module doc): the `Step` attributes read from its listed
    form; a subclass defines `form` and `explicit()`, which builds that `Step` once, and overrides
    what it answers from its rule."""

    form: ClassVar[str] = ""
    listed: ClassVar[bool] = False

    shown_as = property(lambda self: type(self).__name__, doc="What a message calls the step (its class).")

    def explicit(self) -> "Step":  # pragma: no cover - defined by each stated step
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
        raise ValueError(f"{self.shown_as}.starts_at: the step is not in range form (use blocks_at)")

    def storage(self) -> list[tuple[int | None, int]]:
        """What the step holds in memory: (key of a part shared with other steps or None, entries)."""
        return [(None, self.stored_entries)]

    def add_node_sums(self, block_frac: float, side: str, factors: tuple, out: np.ndarray,
                      reduce_only: bool = False) -> np.ndarray:
        """Per-node sums as `Step.add_node_sums` computes them, from this form's `blocks_per_transfer`,
        `src`, `dst` and `reduce` (its listed form's, unless the form states them)."""
        return transfer_node_sums(self, block_frac, side, factors, out, reduce_only)

    @property
    def rotates(self) -> bool:
        """Whether its ids change per repetition (`StepForm.rotates`): its listed form's."""
        return self.explicit().rotates

    @property
    def checked_entries(self) -> int:
        """Entries a step-by-step check reads per repetition (`StepForm.checked_entries`): one per
        transfer (a stated step is visited transfer by transfer)."""
        return self.n_transfers

    def run_starts(self) -> None:
        """None (`StepForm.run_starts`): a stated step's listed form lists every id."""
        return None

    def structure_problem(self, n_nodes: int) -> str | None:
        """A transfer outside the nodes or sending to itself (`StepForm.structure_problem`): its listed form's."""
        return self.explicit().structure_problem(n_nodes)

    def first_bad_rep(self, nblocks: int) -> int | None:
        """The first repetition with an id outside the buffer (`StepForm.first_bad_rep`): its listed form's."""
        return self.explicit().first_bad_rep(nblocks)

    def sampled_moves(self, sample: np.ndarray, reps: int) -> tuple[np.ndarray, ...]:
        """The moves of the chosen blocks (`StepForm.sampled_moves`): its listed form's."""
        return self.explicit().sampled_moves(sample, reps)

    def sampled_events(self, t0: int, n_nodes: int, nblocks: int, sample: np.ndarray, memo: dict):
        """A sampled check's events and first error (`StepForm.sampled_events`, `checked_events`)."""
        return checked_events(self, t0, n_nodes, nblocks, sample)

    def batch_moves(self, k: int, blocks: np.ndarray, col_of: np.ndarray, memo: dict):
        """The moves of a batch of blocks at repetition k (`StepForm.batch_moves`): its listed form's."""
        return self.explicit().batch_moves(k, blocks, col_of, memo)

    def block_runs(self, sel: np.ndarray | None = None, reps=(0,)):
        """Block runs of transfers `sel` at repetitions `reps` (`StepForm.block_runs`): its listed form's."""
        return self.explicit().block_runs(sel, reps)

    def listed_parts(self) -> tuple | None:
        """No listed parts (`StepForm.listed_parts`): a form over parts states them."""
        return None

    def maps_channels(self, sig: np.ndarray) -> bool | None:
        """Nothing stated (`StepForm.maps_channels`): a form with a symmetric rule states it."""
        return None

    def maps_blocks(self, sig: np.ndarray, pi, nblocks: int) -> bool | None:
        """Nothing stated (`StepForm.maps_blocks`)."""
        return None


class StatedOnce(StatedForm):
    """A stated step that does not repeat (`MeshStep`): repetition 0 is the step."""

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
            raise ValueError(f"{self.shown_as}.single: the step does not repeat")
        return self

    def window(self, k0: int, k1: int):
        """Repetitions k0..k1-1: the step itself (0, 1)."""
        if (k0, k1) != (0, 1):
            raise ValueError("Step.window out of range")
        return self

    rotates: ClassVar[bool] = False  # the step does not repeat (`StepForm.rotates`)
