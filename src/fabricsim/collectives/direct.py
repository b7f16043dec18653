"""Direct algorithms: every message goes straight from its source to its destination.

Each phase is a single step in which every rank talks to every other rank at once (a full
mesh of p*(p-1) transfers), so the latency term is one hop per phase and every byte crosses
the network exactly once; the price is p-1 concurrent messages per rank, which only a fabric
with full bisection (or a switch that handles incast well) runs at full speed.

- reduce-scatter: p blocks; every rank sends block j to rank j, which adds them up (reduce).
- all-gather: p blocks; rank j sends its block j to every other rank (copy).
- all-reduce: the reduce-scatter, then the all-gather (2 steps, size*(p-1)/p per rank each).
- all-to-all: p*p blocks; rank i sends block i*p+j to rank j for every j != i (1 step).
- broadcast: the root sends the whole buffer (one block) to every other rank (1 step).
- reduce: every other rank sends its whole buffer to the root, which adds them (1 step).

The full-mesh steps are `FullMeshStep`s: the pattern stated, not its p(p-1) transfers listed, so
a direct all-to-all on 65,536 ranks is a few bytes; readers that cannot take it whole list it
(within the `blocks` limit).
"""

from __future__ import annotations

import numpy as np

from ._common import require_collective, require_group, require_root
from .algorithm import Algorithm, proto_option
from ..ir import FullMeshStep
from ..ir import Schedule, make_step

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast", "reduce")


def direct_reduce_scatter(p: int) -> FullMeshStep:
    """Rank i sends block j to rank j (reduce), for all j != i; rank j ends owning block j.

    Parameters
    ----------
    p : int
        Ranks.

    Returns
    -------
    FullMeshStep
        p*(p-1) transfers of one block, source-major.
    """
    return FullMeshStep(p, "dst", True)


def direct_all_gather(p: int) -> FullMeshStep:
    """Rank j sends its block j to every other rank i (copy).

    Parameters
    ----------
    p : int
        Ranks.

    Returns
    -------
    FullMeshStep
        p*(p-1) transfers of one block, destination-major.
    """
    return FullMeshStep(p, "src", False, by_dst=True)


def direct_all_to_all(p: int) -> FullMeshStep:
    """Rank i sends block i*p+j to rank j (copy), for all j != i.

    Parameters
    ----------
    p : int
        Ranks.

    Returns
    -------
    FullMeshStep
        p*(p-1) transfers of one block, source-major.
    """
    return FullMeshStep(p, "pair", False)


def direct(collective: str, p: int, *, root: int = 0) -> Schedule:
    """The direct schedule of `collective` on `p` ranks (module doc).

    Parameters
    ----------
    collective : str
        all-reduce, reduce-scatter, all-gather, all-to-all, broadcast or reduce (canonical name).
    p : int
        Ranks in the group, >= 2.
    root : int
        Root rank of a broadcast or reduce (ignored otherwise).

    Returns
    -------
    Schedule
        Unplaced (nodes are ranks 0..p-1): one step per phase.
    """
    require_collective("direct", collective, COLLECTIVES)
    require_group("direct", collective, p)
    p = int(p)
    owner = np.arange(p)
    if collective == "all-reduce":
        steps = (direct_reduce_scatter(p), direct_all_gather(p))
        return Schedule(collective, "direct", p, p, steps, owner=owner)
    if collective == "reduce-scatter":
        return Schedule(collective, "direct", p, p, (direct_reduce_scatter(p),), owner=owner)
    if collective == "all-gather":
        return Schedule(collective, "direct", p, p, (direct_all_gather(p),), owner=owner)
    if collective == "all-to-all":
        return Schedule(collective, "direct", p, p * p, (direct_all_to_all(p),))
    root = require_root(root, p)
    others = np.delete(np.arange(p, dtype=np.int64), root)
    if collective == "broadcast":
        step = make_step(np.full(p - 1, root), others, np.zeros(p - 1, np.int64), False)
    else:  # reduce
        step = make_step(others, np.full(p - 1, root), np.zeros(p - 1, np.int64), True)
    return Schedule(collective, "direct", p, 1, (step,), root=root)


def _estimate(c: str, p: int, o: dict) -> float:
    return 2.0 * p  # rooted: p - 1 transfers; the full-mesh steps are stated, not listed (FullMeshStep)


ALGORITHM = Algorithm(
    "direct", direct, COLLECTIVES, "any p >= 2",
    "direct: one full-mesh step per phase, every rank to every other rank at once",
    options=(proto_option("none"),), nccl="p2p",
    estimate=_estimate,
)
