"""Halving-doubling (Rabenseifner): reduce-scatter by recursive halving, all-gather by
recursive doubling, all-reduce = the two.

- reduce-scatter (power of two only): p blocks, rank r ends owning block r. Rank r starts
  responsible for all p blocks; at step s (distance d = p/2, p/4, ..., 1, as in MPICH) it
  exchanges with r XOR d: it sends the half of its current range that its peer keeps (the d
  blocks of the peer's aligned group of d) with reduce, and keeps the half containing r. Each
  step halves the range, so step s moves size/2^(s+1) per rank: log2 p steps, size*(p-1)/p
  in all, the bandwidth lower bound with the fewest steps.
- all-gather (power of two only): the mirror image, distances 1, 2, ..., p/2, so the
  messages double (the same pattern as recursive-doubling all-gather).
- all-reduce: reduce-scatter then all-gather, 2*log2 p steps. A group that is not a power of
  two is folded onto p' = the largest power of two <= p first (rank r >= p' sends its whole
  buffer to r - p', which adds it in), the p' ranks run reduce-scatter + all-gather over the
  buffer split into p' blocks, and r - p' sends the result back to r:
  1 + 2*log2 p' + 1 steps.
"""

from __future__ import annotations

import numpy as np

from ._common import log2_rounds, require_collective, require_group
from .algorithm import Algorithm
from .recursive_doubling import doubling_all_gather, fold_step, pow2_floor, unfold_step
from ..ir import Schedule, Step, make_range_step

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather")


def halving_reduce_scatter(p: int) -> list[Step]:
    """Recursive-halving reduce-scatter on a power of two p over blocks 0..p-1; rank r ends with block r.

    Parameters
    ----------
    p : int
        Ranks, a power of two.

    Returns
    -------
    list of Step
        log2 p steps, distances p/2, p/4, ..., 1, in range form (the half a peer keeps is
        contiguous): p entries each.
    """
    r = np.arange(p, dtype=np.int64)
    steps = []
    d = p >> 1
    while d >= 1:
        peer = r ^ d
        steps.append(make_range_step(r, peer, peer & ~(d - 1), d, True))  # the half peer keeps
        d >>= 1
    return steps


def halving_doubling(collective: str, p: int, *, root: int = 0) -> Schedule:
    """Rabenseifner's halving-doubling schedule of `collective` on `p` ranks (module doc).

    Parameters
    ----------
    collective : str
        all-reduce (any p), reduce-scatter or all-gather (p a power of two); canonical name.
    p : int
        Ranks in the group, >= 2.
    root : int
        Accepted for a uniform signature; no collective here has a root.

    Returns
    -------
    Schedule
        Unplaced; for an all-reduce `meta["folded_to"]` is p', the power of two it runs on.
    """
    require_collective("halving_doubling", collective, COLLECTIVES)
    require_group("halving_doubling", collective, p, pow2=collective != "all-reduce")
    p = int(p)
    if collective == "reduce-scatter":
        return Schedule(collective, "halving_doubling", p, p, tuple(halving_reduce_scatter(p)), owner=np.arange(p))
    if collective == "all-gather":
        return Schedule(collective, "halving_doubling", p, p, tuple(doubling_all_gather(p)), owner=np.arange(p))
    p2 = pow2_floor(p)
    steps = [fold_step(p, p2), *halving_reduce_scatter(p2), *doubling_all_gather(p2), unfold_step(p, p2)]
    return Schedule(
        collective, "halving_doubling", p, p2, tuple(s for s in steps if s is not None),
        owner=np.arange(p) if p2 == p else None, meta={"folded_to": p2},
    )


def _estimate(c: str, p: int, o: dict) -> float:
    return 2.0 * p * (log2_rounds(p) + 1)  # range form: one entry per transfer, fold and unfold included


ALGORITHM = Algorithm(
    "halving_doubling", halving_doubling, COLLECTIVES,
    "all-reduce: any p >= 2 (fold/unfold off powers of two); reduce-scatter, all-gather: powers of two",
    "Rabenseifner: recursive-halving reduce-scatter + recursive-doubling all-gather, 2 log2 p steps",
    pow2_only=("reduce-scatter", "all-gather"),
    aliases={"rabenseifner": {}, "halvingdoubling": {}, "recursive_halving_doubling": {}, "hd": {}},
    estimate=_estimate,
)
