"""How big a schedule will be, from its parameters alone: the `blocks` limit's estimate.

`estimate_blocks` bounds the block entries a builder stores (one per transfer and block id it
lists, a run of ids in range form counting once; a step repeated by rotation counting once: the
schedule's memory, about 40 B each) from the collective, the
group size and the typed options, before anything is built, so that `chunks=1000000000` or a
ring broadcast of 65,536 pieces on 65,536 ranks is refused with the estimate in the message instead of
running out of memory. The estimates are upper bounds within a small factor of what the builders
make (tests/test_robust_cli.py compares them); an algorithm without an entry here gets the
quadratic `p * p * pieces` bound. (An in-network reduce-scatter or all-gather that streams is priced
from its p up and p down paths, `network.streams`; its p x p stream link entries are listed, and
sized, only for flows that share the network, in `dataflow.streaming_flows`.)
"""

from __future__ import annotations

import math
from typing import Any, Callable

__all__ = ["estimate_blocks"]

_ROOTED = ("broadcast", "reduce")
_SPLIT = ("reduce-scatter", "all-gather")


def _log2(p: int) -> int:
    return max(1, math.ceil(math.log2(max(p, 2))))


def _dims(p: int, o: dict) -> tuple[int, ...]:
    d = o.get("dims") or (p,)
    return tuple(int(x) for x in d) if isinstance(d, (tuple, list)) else (p,)


def _ring(c: str, p: int, o: dict) -> float:
    if c in _ROOTED:  # a chain of `chunks` pieces over p - 1 hops: listed, or composed of runs of hops
        from .chain import chain_entries  # lazy: numpy, only when sizing this algorithm

        return float(chain_entries(p - 1, int(o.get("chunks") or p))) + p
    return 4.0 * p  # one compressed step per phase and direction


def _direct(c: str, p: int, o: dict) -> float:
    return 2.0 * p  # rooted: p - 1 transfers; the full-mesh steps are stated, not listed (FullMeshStep)


def _recursive_doubling(c: str, p: int, o: dict) -> float:
    if c in _ROOTED:
        return 2.0 * p
    return 2.0 * p * _log2(p)  # all-gather: held groups in range form, one entry per transfer


def _halving_doubling(c: str, p: int, o: dict) -> float:
    return 2.0 * p * (_log2(p) + 1)  # range form: one entry per transfer, fold and unfold included


def _double_binary_tree(c: str, p: int, o: dict) -> float:
    return 2.0 * p * (2 * _log2(p) + int(o.get("chunks") or 8))  # 2H + chunks - 1 steps of <= 2p edges


def _hierarchical(c: str, p: int, o: dict) -> float:
    """Phase d (a line of q = dims[d] ranks, every line at once) moves, per transfer, one inner
    block: a run of prod(dims[d+1:]) contiguous ids (range form, one entry per transfer, a ring's
    rotation kept), or in baseline order past the first active dimension the p/q ids with digit
    d = j, listed. Per rank and phase: a ring one transfer, halving-doubling log2 q, direct q - 1."""
    if c == "all-to-all":  # one entry per transfer (LineMeshStep); a dimension of all p is a stated full mesh
        return float(sum(p * (q - 1) if q < p else 1 for q in _dims(p, o) if q > 1)) + 1.0
    dims = _dims(p, o)
    inner = o.get("inner") or "ring"
    inner = (inner,) * len(dims) if isinstance(inner, str) else tuple(inner)
    baseline = c == "all-reduce" and o.get("order") == "baseline"
    parts = 2 if c == "all-reduce" else 1  # reduce-scatter and all-gather (baseline: each dimension's all-reduce)
    total, first = 0.0, True
    for d, q in enumerate(dims):
        if q <= 1:
            continue
        listed = baseline and not first  # ids strided over the whole buffer
        first = False
        name = inner[d] if d < len(inner) else "ring"
        if name == "ring":
            transfers = p
        elif name == "halving_doubling" and not listed:
            transfers = p * (_log2(q) + 1)
        else:  # direct; halving-doubling listed: q - 1 inner blocks per rank in all
            transfers = p * (q - 1)
        total += parts * transfers * (p // q if listed else 1)
    return total + 2.0 * p


def _bucket(c: str, p: int, o: dict) -> float:
    """2D parts (start dimension x direction), each a ring phase per dimension and direction of
    the collective (reduce-scatter, all-gather: one; all-reduce: two), each one compressed step of
    p transfers, one run of ids each (range form)."""
    D = max(1, sum(1 for d in _dims(p, o) if d > 1))
    return 2.0 * D * D * (2 if c == "all-reduce" else 1) * p + 2.0 * p


def _in_network(c: str, p: int, o: dict) -> float:
    # pieces repeat one step: no factor `chunks`; one piece's blocks are runs (range form), several
    # pieces' all-gather lists every block but the rank's own
    listed = c in _SPLIT and int(o.get("chunks") or 1) > 1
    return 2.0 * (p * p if listed else p) + 4.0 * p


def _in_network_tree(c: str, p: int, o: dict) -> float:
    return 16.0 * p  # blocks as runs (range form): a rank's, its leaf's, all but those


def _swing(c: str, p: int, o: dict) -> float:
    return 8.0 * len(_dims(p, o)) * p * _log2(p)  # 2D ports x log2 p steps x 2 phases, ranges


def _hamiltonian_rings(c: str, p: int, o: dict) -> float:
    return 16.0 * p


def _circulant_rings(c: str, p: int, o: dict) -> float:
    return 8.0 * len(set(o.get("steps") or (1,))) * p


def _nccl_ring(c: str, p: int, o: dict) -> float:
    channels = int(o.get("channels") or max(1, int(o.get("nics_per_node") or 1)))
    return 4.0 * channels * p  # one compressed step of channels x p transfers per phase


def _nccl_tree(c: str, p: int, o: dict) -> float:
    """Composed (`nccl_tree.stored_form`): every tree edge once up and once down, 2 x channels x
    (p - 1) entries. Listed: every (edge, piece) once up and once down, except in the steady middle
    of the pipeline, which is one step: at most min(chunks, 4H + 2) listings of the channels x (p-1)
    edges each way, H = G - 1 + the node tree's height."""
    from .nccl_tree import stored_form  # lazy: numpy, only when sizing this algorithm

    channels = int(o.get("channels") or max(2, 2 * int(o.get("nics_per_node") or 1)))
    gpus = int(o.get("gpus_per_node") or p)
    if p % gpus == 0 and stored_form(channels, p, gpus) == "composed":
        return 2.0 * channels * p
    chunks = int(o.get("chunks") or 64)
    height = gpus - 1 + (_log2(p // gpus) if p >= 2 * gpus else 0)
    return 2.0 * channels * p * min(chunks, 4 * height + 2)


def _nvls(c: str, p: int, o: dict) -> float:
    gpus = int(o.get("gpus_per_node") or p)
    return 2.0 * p * gpus + 6.0 * p  # steps 1 and 6 move G slices per rank, the others one


_ESTIMATES: dict[str, Callable[[str, int, dict], float]] = {
    "ring": _ring, "direct": _direct, "recursive_doubling": _recursive_doubling,
    "halving_doubling": _halving_doubling, "double_binary_tree": _double_binary_tree,
    "hierarchical": _hierarchical, "in_network": _in_network, "in_network_tree": _in_network_tree,
    "swing": _swing, "torus_recursive_doubling": _swing, "bucket": _bucket,
    "hamiltonian_rings": _hamiltonian_rings, "circulant_rings": _circulant_rings,
    "nccl_ring": _nccl_ring, "nccl_tree": _nccl_tree, "nvls": _nvls,
}


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
    est = _ESTIMATES.get(algorithm)
    if est is None:
        return float(p) * p * max(1, int(options.get("chunks") or 1))
    return est(collective, int(p), options)
