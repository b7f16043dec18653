"""Step forms: the ways a step is held, and the one protocol every reader of a step uses.

A step is held in one of a few forms. The listed form (`ir.step.Step`) keeps its transfers in
arrays (optionally with runs of ids in range form); a stated form keeps a rule instead: a full mesh
(`ir.full_mesh`), a mesh along the lines of a grid (`ir.line_mesh`), or repetitions of other steps
side by side (`ir.composed`). Every form answers the `StepForm` protocol; a stated form inherits
`StatedForm`'s defaults, which read its listed form (`explicit()`, built once), and overrides what it
can answer from its rule alone. A reader never tests which form it holds: it asks the protocol, or
a network model looks the form's class up in a registry of its own lowerings (`network` modules
register theirs). Adding a form is one module here and its `@register_form` line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Iterable, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from .step import Step

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



class StatedForm:
    """The defaults of a stated step form (module doc): the `Step` attributes read from its listed
    form; a subclass defines `form` and `explicit()`, which builds that `Step` once, and overrides
    what it answers from its rule."""

    form: ClassVar[str] = ""
    listed: ClassVar[bool] = False
    full_mesh: ClassVar[bool] = False  # TRANSITION: form flags, until every reader dispatches on the form
    composed: ClassVar[bool] = False
    line_mesh: ClassVar[bool] = False

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
        raise ValueError(f"{type(self).__name__}.starts_at: the step is not in range form (use blocks_at)")

    def storage(self) -> list[tuple[int | None, int]]:
        """What the step holds in memory: (key of a part shared with other steps or None, entries)."""
        return [(None, self.stored_entries)]

    def add_node_sums(self, block_frac: float, side: str, factors: tuple, out: np.ndarray,
                      reduce_only: bool = False) -> np.ndarray:
        """Per-node sums as `Step.add_node_sums` computes them, from this form's `blocks_per_transfer`,
        `src`, `dst` and `reduce` (its listed form's, unless the form states them)."""
        return transfer_node_sums(self, block_frac, side, factors, out, reduce_only)


class StatedOnce(StatedForm):
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
