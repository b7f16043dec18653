"""How big a schedule will be, from its parameters alone: the `blocks` limit's estimate.

`estimate_blocks` bounds the block entries a builder stores (one per transfer and block id it
lists, a run of ids in range form counting once; a step repeated by rotation counting once: the
schedule's memory, about 40 B each) from the collective, the
group size and the typed options, before anything is built, so that `chunks=1000000000` or a
ring broadcast of 65,536 pieces on 65,536 ranks is refused with the estimate in the message instead of
running out of memory. Each algorithm states its own estimate next to its descriptor
(`Algorithm.estimate`), an upper bound within a small factor of what its builder makes
(tests/test_robust_cli.py compares them); an algorithm that states none gets the quadratic
`p * p * pieces` bound. (An in-network reduce-scatter or all-gather that streams is priced
from its p up and p down paths, `network.lowering.streams`; its p x p stream link entries are listed, and
sized, only for flows that share the network, in `lowering.dataflow.streaming_flows`.)
"""

from __future__ import annotations

from typing import Any

from .registry import ALGORITHMS

__all__ = ["estimate_blocks"]


def estimate_blocks(algorithm: str, collective: str, p: int, options: dict[str, Any]) -> float:
    """An upper bound on the block entries the schedule of `algorithm` will hold.

    Parameters
    ----------
    algorithm : str
        Registry name of the algorithm.
    collective : str
        Canonical collective name.
    p : int
        Ranks in the group.
    options : dict
        The typed options the builder will get (`chunks`, `dims`, `steps`, ...).

    Returns
    -------
    float
        Block entries (transfers x blocks moved, summed over steps, one repetition each); the
        quantity the `blocks` limit bounds.

    Examples
    --------
    >>> estimate_blocks("ring", "broadcast", 8, {"chunks": 10**9}) > 5e7
    True
    """
    alg = ALGORITHMS.get(algorithm)  # the registry name; callers resolve aliases first (`choose_algorithm`)
    if alg is None or alg.estimate is None:
        return float(p) * p * max(1, int(options.get("chunks") or 1))
    return alg.estimate(collective, int(p), options)
