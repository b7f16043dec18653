"""Recursive doubling and binomial trees: the latency-optimal algorithms (log2 p steps).

- all-reduce: at step s rank r exchanges its whole buffer with r XOR 2^s and adds what it
  receives, so after s steps every rank holds the sum over its aligned group of 2^s ranks;
  log2 p steps of the full size each. Fewest steps of any all-reduce, but every step moves
  the whole buffer, so it suits small messages. A group that is not a power of two is first
  folded onto p' = the largest power of two <= p (rank r >= p' sends its buffer to r - p',
  which adds it in; r then idles), and unfolded at the end (r - p' sends the result back
  to r): log2 p' + 2 steps.
- all-gather (power of two only): p blocks, rank r starts with block r; at step s rank r
  sends everything it holds (its aligned group of 2^s blocks) to r XOR 2^s, so the held set
  doubles at every step.
- broadcast / reduce: binomial tree over relative ranks v = (r - root) mod p, any p. In a
  broadcast, at step s every v < 2^s that holds the buffer sends it to v + 2^s (when that is
  a rank), so the informed set doubles; ceil(log2 p) steps. A reduce runs the same tree
  backwards with reduce: children send their partial sums to their parent, toward the root.

The buffer is a single block for all-reduce, broadcast and reduce (nothing is split).
`fold_step` / `unfold_step` are shared with `halving_doubling`.
"""

from __future__ import annotations

import numpy as np

from ._common import ROOTED, log2_rounds, require_collective, require_group, require_root
from .algorithm import Algorithm
from ..ir import Schedule, Step, make_range_step, make_step

COLLECTIVES = ("all-reduce", "all-gather", "broadcast", "reduce")


def pow2_floor(p: int) -> int:
    """The largest power of two <= p.

    Parameters
    ----------
    p : int
        A positive integer.

    Returns
    -------
    int
    """
    return 1 << (int(p).bit_length() - 1)


def fold_step(p: int, nblocks: int) -> Step | None:
    """Ranks r >= p' send blocks 0..nblocks-1 to r - p' (reduce), p' = `pow2_floor(p)`.

    Parameters
    ----------
    p : int
        Ranks.
    nblocks : int
        Blocks of the buffer.

    Returns
    -------
    Step or None
        In range form; None when p is a power of two.
    """
    p2 = pow2_floor(p)
    if p2 == p:
        return None
    extra = np.arange(p2, p, dtype=np.int64)
    return make_range_step(extra, extra - p2, 0, nblocks, True)


def unfold_step(p: int, nblocks: int) -> Step | None:
    """Rank r - p' sends the finished blocks 0..nblocks-1 back to r >= p' (copy).

    Parameters
    ----------
    p : int
        Ranks.
    nblocks : int
        Blocks of the buffer.

    Returns
    -------
    Step or None
        None when p is a power of two.
    """
    p2 = pow2_floor(p)
    if p2 == p:
        return None
    extra = np.arange(p2, p, dtype=np.int64)
    return make_range_step(extra - p2, extra, 0, nblocks, False)


def doubling_all_gather(p: int) -> list[Step]:
    """Recursive-doubling all-gather on a power of two p, rank r owning block r.

    At step s (distance d = 2^s) rank r sends its d held blocks (r's aligned group of d) to r XOR d.

    Parameters
    ----------
    p : int
        Ranks, a power of two.

    Returns
    -------
    list of Step
        log2 p steps, in range form (a held group is contiguous): p entries each.
    """
    r = np.arange(p, dtype=np.int64)
    return [make_range_step(r, r ^ (1 << s), r & ~((1 << s) - 1), 1 << s, False) for s in range(p.bit_length() - 1)]


def doubling_all_reduce(p: int) -> list[Step]:
    """Whole-buffer (block 0) exchange with r XOR 2^s, reduce, on a power of two p.

    Parameters
    ----------
    p : int
        Ranks, a power of two.

    Returns
    -------
    list of Step
        log2 p steps.
    """
    r = np.arange(p, dtype=np.int64)
    zero = np.zeros(p, dtype=np.int64)
    return [make_step(r, r ^ (1 << s), zero, True) for s in range(p.bit_length() - 1)]


def binomial_tree(p: int, root: int, reduce: bool) -> list[Step]:
    """Binomial broadcast from `root`, or its mirror, a reduce to `root`.

    Parameters
    ----------
    p : int
        Ranks.
    root : int
        Root rank.
    reduce : bool
        False: broadcast (copies away from the root); True: reduce (sums toward it).

    Returns
    -------
    list of Step
        ceil(log2 p) steps on block 0.
    """
    steps = []
    for s in range((p - 1).bit_length()):
        d = 1 << s
        v = np.arange(min(d, p - d), dtype=np.int64)  # relative senders with v + d < p
        parent, child = (v + root) % p, (v + d + root) % p
        zero = np.zeros(len(v), dtype=np.int64)
        if reduce:
            steps.append(make_step(child, parent, zero, True))
        else:
            steps.append(make_step(parent, child, zero, False))
    return steps[::-1] if reduce else steps


def recursive_doubling(collective: str, p: int, *, root: int = 0) -> Schedule:
    """The recursive-doubling (or binomial-tree) schedule of `collective` on `p` ranks (module doc).

    Parameters
    ----------
    collective : str
        all-reduce, all-gather (p a power of two), broadcast or reduce (canonical name).
    p : int
        Ranks in the group, >= 2.
    root : int
        Root rank of a broadcast or reduce (ignored otherwise).

    Returns
    -------
    Schedule
        Unplaced (nodes are ranks 0..p-1); `meta["folded_to"]` is p' for an all-reduce.
    """
    require_collective("recursive_doubling", collective, COLLECTIVES)
    require_group("recursive_doubling", collective, p, pow2=collective == "all-gather")
    p = int(p)
    if collective == "all-reduce":
        p2 = pow2_floor(p)
        steps = [fold_step(p, 1), *doubling_all_reduce(p2), unfold_step(p, 1)]
        return Schedule(collective, "recursive_doubling", p, 1, tuple(s for s in steps if s is not None),
                        meta={"folded_to": p2})
    if collective == "all-gather":
        return Schedule(collective, "recursive_doubling", p, p, tuple(doubling_all_gather(p)), owner=np.arange(p))
    root = require_root(root, p)
    steps = binomial_tree(p, root, reduce=collective == "reduce")
    return Schedule(collective, "recursive_doubling", p, 1, tuple(steps), root=root)


def _estimate(c: str, p: int, o: dict) -> float:
    if c in ROOTED:
        return 2.0 * p
    return 2.0 * p * log2_rounds(p)  # all-gather: held groups in range form, one entry per transfer


ALGORITHM = Algorithm(
    "recursive_doubling", recursive_doubling, COLLECTIVES, "any p >= 2 (all-gather: powers of two)",
    "recursive doubling: log2 p whole-buffer exchanges (fold/unfold off powers of two); binomial tree for broadcast/reduce",
    pow2_only=("all-gather",), aliases={"rd": {}, "recursivedoubling": {}},
    estimate=_estimate,
)
