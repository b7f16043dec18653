"""Double binary tree all-reduce (the NCCL tree algorithm).

A single binary tree all-reduce wastes half of the bandwidth: leaves only send up and
receive down once, while interior nodes carry the traffic of two children. Two trees fix
that when every rank is interior in at most one of them: each tree carries half of the
buffer, and a rank that is a leaf in one tree does the forwarding work in the other.

Tree 1 is a balanced in-order binary tree over ranks 0..p-1 whose leaves are exactly the
even ranks (ceil(p/2) leaves, the most a binary tree can have) and whose interior nodes are
the odd ranks:
- odd p: the full tree over 0..p-1; the root is the middle rank, rounded to an odd rank,
  and each half is built the same way (the heavier half on the left);
- even p: the full tree over 0..p-2, then rank p-1 takes the place of the rightmost leaf p-2,
  which becomes its only (left) child.
Its height is floor(log2 p). Tree 2 is tree 1 relabelled:
- even p: the mirror r -> p-1-r (even ranks become odd ones);
- odd p: the shift r -> (r+1) mod p (p-1 is even, so a mirror would keep the parity).
Either way the interior nodes of one tree are leaves of the other, so every rank forwards
data (receives from children, sends to its parent) in one tree only.

Each tree carries half of the buffer in `chunks` pipelined chunks: blocks 0..chunks-1 are
tree 1's, chunks..2*chunks-1 tree 2's. In lock-step step t, a non-root node of height h
(leaves h = 0) sends chunk t-h, the sum over its subtree, to its parent (reduce); the root,
of height H, holds chunk c fully reduced after step H-1+c, and a node at depth d copies chunk
t-H-d to its children. Reduce and broadcast transfers of different chunks share steps, and
both trees run in the same steps: 2H + chunks - 1 steps in all. Steps in the steady part of
the pipeline have the same shape with every chunk id one higher, so they are compressed into
one repeated `Step` (shift +1).
"""

from __future__ import annotations

import numpy as np

from ._common import log2_rounds, require_collective, require_group
from .algorithm import Algorithm, Option
from ..ir import Schedule, Step, make_step

COLLECTIVES = ("all-reduce",)
DEFAULT_CHUNKS = 8


def in_order_tree(p: int) -> np.ndarray:
    """Parent of each rank in tree 1 (see module doc).

    Parameters
    ----------
    p : int
        Ranks.

    Returns
    -------
    int64 array [p]
        Parent rank of each rank, -1 for the root.
    """
    parent = np.full(p, -1, dtype=np.int64)

    # full(lo, n, par): the full in-order tree on ranks lo..lo+2n-2 whose n leaves are the
    # even offsets, hung below `par`. Iterative (an explicit stack) to stay flat for large p.
    def full(lo: int, n: int, par: int) -> None:
        stack = [(lo, n, par)]
        while stack:
            lo, n, par = stack.pop()
            if n == 1:
                parent[lo] = par
                continue
            left = (n + 1) // 2
            root = lo + 2 * left - 1
            parent[root] = par
            stack.append((lo, left, root))
            stack.append((root + 1, n - left, root))

    if p % 2 == 1:
        full(0, (p + 1) // 2, -1)
    else:
        full(0, p // 2, -1)  # ranks 0..p-2
        last = p - 1
        parent[last] = parent[p - 2]  # p-1 takes the place of the rightmost leaf p-2
        parent[p - 2] = last
        if p == 2:
            parent[last] = -1
    return parent


def second_tree_map(p: int) -> tuple[np.ndarray, str]:
    """Rank relabelling that turns tree 1 into tree 2, and its name.

    Parameters
    ----------
    p : int
        Ranks.

    Returns
    -------
    (int64 array [p], str)
        New rank of each rank, and "mirror" (even p) or "shift" (odd p).
    """
    r = np.arange(p, dtype=np.int64)
    if p % 2 == 0:
        return p - 1 - r, "mirror"
    return (r + 1) % p, "shift"


def _depth_height(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depth (root 0) and height (leaves 0) of every node, one vectorized pass per level."""
    p = len(parent)
    depth = np.zeros(p, dtype=np.int64)
    up = parent.copy()
    while (up >= 0).any():  # walk every node's ancestor chain in lock-step
        alive = up >= 0
        depth[alive] += 1
        up[alive] = parent[up[alive]]
    height = np.zeros(p, dtype=np.int64)
    for d in range(int(depth.max()), 0, -1):
        level = np.flatnonzero(depth == d)
        np.maximum.at(height, parent[level], height[level] + 1)
    return depth, height


def double_binary_tree(collective: str, p: int, *, chunks: int | None = None, root: int = 0) -> Schedule:
    """All-reduce over two complementary binary trees, pipelined in `chunks` chunks per tree.

    Parameters
    ----------
    collective : str
        all-reduce.
    p : int
        Ranks in the group, >= 2.
    chunks : int, optional
        Pipeline chunks per tree, >= 1 (default 8).
    root : int
        Accepted for a uniform signature and ignored.

    Returns
    -------
    Schedule
        Unplaced, 2*chunks blocks (tree 1's, then tree 2's), 2H + chunks - 1 steps for trees of
        height H; `meta` has the chunks, the tree height and the relabelling.
    """
    require_collective("double_binary_tree", collective, COLLECTIVES)
    require_group("double_binary_tree", collective, p)
    p = int(p)
    chunks = DEFAULT_CHUNKS if chunks is None else chunks
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
        from ..errors import ConfigError

        raise ConfigError("chunks", chunks, "accepted: an integer >= 1")
    chunks = int(chunks)

    parent1 = in_order_tree(p)
    depth, height = _depth_height(parent1)
    H = int(height.max())
    perm, kind = second_tree_map(p)
    # tree 2: node perm[v] has parent perm[parent1[v]], same depth and height as v
    nonroot = np.flatnonzero(parent1 >= 0)
    # per edge (tree, child, parent): everything needed for both directions
    e_child = np.concatenate([nonroot, perm[nonroot]])
    e_parent = np.concatenate([parent1[nonroot], perm[parent1[nonroot]]])
    e_h = np.concatenate([height[nonroot], height[nonroot]])  # child's height
    e_pd = np.concatenate([depth[parent1[nonroot]]] * 2)  # parent's depth
    e_base = np.concatenate([np.zeros(len(nonroot), np.int64), np.full(len(nonroot), chunks, np.int64)])

    n_steps = 2 * H + chunks - 1
    raw: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    for t in range(n_steps):
        cu = t - e_h  # chunk going up on each edge
        up = (cu >= 0) & (cu < chunks)
        cd = t - H - e_pd  # chunk going down on each edge
        down = (cd >= 0) & (cd < chunks)
        src = np.concatenate([e_child[up], e_parent[down]])
        dst = np.concatenate([e_parent[up], e_child[down]])
        blk = np.concatenate([e_base[up] + cu[up], e_base[down] + cd[down]])
        red = np.concatenate([np.ones(int(up.sum()), bool), np.zeros(int(down.sum()), bool)])
        raw.append((src, dst, blk, red))

    steps = _compress(raw, 2 * chunks)
    meta = {"chunks": chunks, "tree_height": H, "second_tree": kind}
    return Schedule(collective, "double_binary_tree", p, 2 * chunks, tuple(steps), meta=meta)


def _compress(raw, nblocks: int) -> list[Step]:
    """Merge runs of steps with equal transfers whose block ids grow by one per step."""
    steps: list[Step] = []
    i = 0
    while i < len(raw):
        src, dst, blk, red = raw[i]
        j = i + 1
        while (
            j < len(raw)
            and np.array_equal(raw[j][0], src)
            and np.array_equal(raw[j][1], dst)
            and np.array_equal(raw[j][3], red)
            and np.array_equal(raw[j][2], blk + (j - i))
        ):
            j += 1
        n = j - i
        if n == 1:
            steps.append(make_step(src, dst, blk, red))
        else:  # ids never wrap inside the run, so mod = nblocks keeps the aligned base at 0
            steps.append(make_step(src, dst, blk, red, repeat=n, shift=1, mod=nblocks))
        i = j
    return steps


def _estimate(c: str, p: int, o: dict) -> float:
    return 2.0 * p * (2 * log2_rounds(p) + int(o.get("chunks") or 8))  # 2H + chunks - 1 steps of <= 2p edges


ALGORITHM = Algorithm(
    "double_binary_tree", double_binary_tree, COLLECTIVES, "any p >= 2",
    "NCCL double binary tree: two complementary trees, half the buffer each, pipelined reduce up + broadcast down",
    options=(Option("chunks", "int", DEFAULT_CHUNKS, "pipeline chunks per tree"),),
    aliases={"doublebinarytree": {}, "dbt": {}, "tree": {}},
    estimate=_estimate,
)
