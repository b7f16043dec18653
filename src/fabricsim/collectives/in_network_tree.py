"""In-network collectives up and down a tree of reducing, multicasting switches (FRED).

Ranks hang off leaf switches ("L1"); when the group spans several leaves, the leaves hang off
one root switch ("L2"). `leaf_of[r]` is the leaf (0..m-1) of rank r. Helper nodes: p..p+m-1
are the leaves, p+m the root (only when m > 1). Data is reduced on the way up and multicast on
the way down, so every rank sends and receives `size` bytes for an all-reduce whatever p: the
traffic of one flow of the FRED paper (IPs = OPs = the group).

- all-reduce: ranks -> leaf (reduce), leaves -> root (reduce), root -> leaves, leaves -> ranks.
- reduce: the same up; down only towards the root rank.
- broadcast: root rank -> its leaf (-> root switch -> every leaf) -> every rank.
- reduce-scatter (p blocks): the whole buffer goes up reduced; block r comes down to rank r
  (the paper's p serial reduce flows, here in lock-step).
- all-gather (p blocks): rank r's block goes up; every block comes down to every rank that lacks it.

The schedule streams (`Schedule.streaming`): every network model prices it as FRED's flows,
one stream reduced up and multicast down the whole tree at one rate (reduce-scatter and
all-gather: p serial flows of size/p); `lockstep=True` times its steps as steps instead (one
tree level per step).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import ConfigError
from ._common import all_but_own_runs, require_collective, require_group, require_root, set_runs
from .algorithm import Algorithm, lockstep_option
from ..ir import Schedule, Step, make_range_step, make_step

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce")


def in_network_tree(collective: str, p: int, *, leaf_of=None, lockstep: bool = False, root: int = 0) -> Schedule:
    """In-network collective up and down a tree of reducing, multicasting switches (module doc).

    Parameters
    ----------
    collective : str
        all-reduce, reduce-scatter, all-gather, broadcast or reduce (canonical name).
    p : int
        Ranks in the group, >= 2.
    leaf_of : int array-like [p], optional
        Leaf switch of each rank, any ids >= 0 (ranks with equal ids share a leaf; default: one
        leaf for all).
    lockstep : bool
        Time the steps as lock-step steps (one tree level per step) instead of one stream.
    root : int
        Root rank of a broadcast or reduce (ignored otherwise).

    Returns
    -------
    Schedule
        Unplaced; helper nodes p..p+m-1 are the m leaves in order of their id, p+m the root
        switch when m > 1; `streaming` unless `lockstep`.
    """
    require_collective("in_network_tree", collective, COLLECTIVES)
    require_group("in_network_tree", collective, p)
    p = int(p)
    leaf = np.zeros(p, dtype=np.int64) if leaf_of is None else np.asarray(leaf_of, dtype=np.int64)
    if leaf.shape != (p,) or leaf.min() < 0:
        raise ConfigError("leaf_of", list(leaf_of), f"accepted: one leaf index >= 0 per rank ({p})")
    used, leaf = np.unique(leaf, return_inverse=True)  # leaves 0..m-1, in order of their index
    m = len(used)
    rooted = collective in ("broadcast", "reduce")
    root = require_root(root, p) if rooted else 0
    q = p if collective in ("reduce-scatter", "all-gather") else 1
    t = _Tree(p, m, q, leaf, root, np.arange(p, dtype=np.int64), p + np.arange(m, dtype=np.int64), p + m,
              leaf[None, :] == np.arange(m)[:, None] if q == p and m > 1 else None)
    steps = _up_steps(collective, t) + _down_steps(collective, t)
    owner = t.r if q == p else None
    return Schedule(collective, "in_network_tree", p, q, tuple(steps), owner=owner,
                    root=root if rooted else None, n_extra=m + (1 if m > 1 else 0),
                    meta={"leaves": m, "leaf_of": leaf.tolist(), "lockstep": bool(lockstep)}, streaming=not lockstep)


class _Tree(NamedTuple):
    """The group on its tree of switches: sizes, each rank's leaf and the nodes of ranks and switches."""

    p: int
    m: int  # leaves
    q: int  # blocks
    leaf: np.ndarray  # leaf 0..m-1 of each rank
    root: int  # root rank of a broadcast or reduce (0 otherwise)
    r: np.ndarray  # rank nodes
    L: np.ndarray  # leaf switch nodes
    top: int  # root switch node (m > 1)
    of_leaf: np.ndarray | None  # [m, p]: blocks of each leaf's ranks (reduce-scatter, all-gather over m > 1 leaves)


def _runs(src, dst, member, reduce) -> Step:
    """A step sending every set of blocks `member[i]` as its runs (range form)."""
    s, start, count = set_runs(member)
    return make_range_step(src[s], dst[s], start, count, reduce)


def _up_steps(collective: str, t: _Tree) -> list[Step]:
    """The steps up the tree: into the leaves, then into the root switch."""
    p, m, q, leaf, root, r, L, top, of_leaf = t
    steps = []
    if collective in ("all-reduce", "reduce", "reduce-scatter"):
        steps.append(make_range_step(r, L[leaf], 0, q, True))
        if m > 1:
            steps.append(make_range_step(L, np.full(m, top), 0, q, True))
    elif collective == "all-gather":
        steps.append(make_step(r, L[leaf], r[:, None], False))
        if m > 1:  # each leaf forwards the blocks of its ranks
            steps.append(_runs(L, np.full(m, top), of_leaf, False))
    else:  # broadcast
        steps.append(make_step(np.array([root]), np.array([L[leaf[root]]]), np.zeros((1, 1), np.int64), False))
        if m > 1:
            steps.append(make_step(np.array([L[leaf[root]]]), np.array([top]), np.zeros((1, 1), np.int64), False))
    return steps


def _down_steps(collective: str, t: _Tree) -> list[Step]:
    """The steps down the tree: from the root switch to the leaves, then to the ranks."""
    p, m, q, leaf, root, r, L, top, of_leaf = t
    steps = []
    if collective == "all-reduce":
        if m > 1:
            steps.append(make_step(np.full(m, top), L, np.zeros((m, 1), np.int64), False))
        steps.append(make_step(L[leaf], r, np.zeros((p, 1), np.int64), False))
    elif collective == "reduce":
        if m > 1:
            steps.append(make_step(np.array([top]), np.array([L[leaf[root]]]), np.zeros((1, 1), np.int64), False))
        steps.append(make_step(np.array([L[leaf[root]]]), np.array([root]), np.zeros((1, 1), np.int64), False))
    elif collective == "broadcast":
        others = np.delete(r, root)
        if m > 1:
            rest = np.delete(np.arange(m), leaf[root])
            steps.append(make_step(np.full(len(rest), top), L[rest], np.zeros((len(rest), 1), np.int64), False))
        steps.append(make_step(L[leaf[others]], others, np.zeros((p - 1, 1), np.int64), False))
    elif collective == "reduce-scatter":
        if m > 1:  # each leaf gets the blocks of its ranks
            steps.append(_runs(np.full(m, top), L, of_leaf, False))
        steps.append(make_step(L[leaf], r, r[:, None], False))
    else:  # all-gather
        if m > 1:  # each leaf gets the blocks of the other leaves' ranks
            steps.append(_runs(np.full(m, top), L, ~of_leaf, False))
        who, start, count = all_but_own_runs(p)  # every block but the rank's own: two runs
        steps.append(make_range_step(L[leaf[who]], who, start, count, False))
    return steps


def _estimate(c: str, p: int, o: dict) -> float:
    return 16.0 * p  # blocks as runs (range form): a rank's, its leaf's, all but those


ALGORITHM = Algorithm(
    "in_network_tree", in_network_tree, COLLECTIVES,
    "any p >= 2 (each rank on a reducing leaf switch; leaves under one reducing root switch)",
    "in-network up and down a switch tree (FRED): one stream reduced into the leaves and the root, multicast down; "
    "size bytes each way per rank",
    options=(lockstep_option("the collective"),), helper="switch-tree", streams=True,
    estimate=_estimate,
)
