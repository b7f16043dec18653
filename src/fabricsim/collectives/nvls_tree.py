"""NCCL's NVLS-tree all-reduce: NVLink SHARP inside every node, a double binary tree between nodes.

NCCL's default all-reduce on several NVSwitch nodes without SHARP in the fabric (`NVLS_TREE`,
NVIDIA/nccl src/device/all_reduce.h, pattern `ncclPatternNvlsTree`). The group is `nodes` nodes of
G GPUs (rank n*G + g is GPU g of node n); the buffer is cut into G slices, and slice g into two
halves, one per tree of NCCL's double binary tree over the nodes (`nccl_dtree`):
1. every GPU streams its buffer up to its node's NVSwitch (reduce);
2. the switch sends slice g of the node's sum to local GPU g;
3. up each tree, level by level from the leaves: GPU g of a node adds its half-slice into GPU g of
   its parent node (rail to rail, the NICs of GPU g's rail);
4. down each tree from the root: GPU g of a node copies the global half-slice to GPU g of its
   children;
5. GPU g sends its global slice up to its NVSwitch (copy), and
6. the switch multicasts it to the node's other GPUs.
Schedule nodes: ranks 0..p-1, then the nodes' switches p..p+nodes-1. The schedule streams (every
stage at once on successive pieces, as NCCL pipelines it in chunks): a network model prices one
stream whose rate the busiest link sets. Per node and direction its NICs carry, per tree where the
node is inner with two children, 3/2 of the half-slice; every node is inner in at most one tree and
a leaf in the other (the double binary tree), so at most 2 S / G per GPU's rail, as NCCL's tree.
"""

from __future__ import annotations

import numpy as np

from ._common import cluster_layout, require_collective, require_group
from .algorithm import Algorithm, Option, proto_option
from .in_network import _others
from .double_binary_tree import _depth_height
from ..ir import Facts
from ..ir import Schedule, make_step

COLLECTIVES = ("all-reduce",)


def nvls_tree(collective: str, p: int, *, gpus_per_node: int | None = None, nics_per_node: int | None = None,
              root: int = 0) -> Schedule:
    """NVLS inside the nodes, a double binary tree of GPU g's between them (module doc).

    Parameters
    ----------
    collective : str
        all-reduce.
    p : int
        Ranks, a multiple of `gpus_per_node`, at least two nodes.
    gpus_per_node : int, optional
        GPUs per node G (default 1: p nodes of one GPU; on a cluster topology `build_schedule` gives
        the group's).
    nics_per_node : int, optional
        NICs per node, dividing G (default 1).
    root : int
        Unused (all-reduce has none).

    Returns
    -------
    Schedule
        Unplaced, streaming, 2G blocks (block 2g + h: half h of slice g); helpers: the nodes'
        switches; `facts` states the NICs per node. UnsupportedGroupSize when p is not at least
        two whole nodes.

    Examples
    --------
    >>> s = nvls_tree("all-reduce", 32, gpus_per_node=8, nics_per_node=8)
    >>> s.n_extra, s.nblocks, s.streaming   # 4 node switches; 8 slices in halves
    (4, 16, True)
    """
    require_collective("nvls_tree", collective, COLLECTIVES)
    require_group("nvls_tree", collective, p)
    G, N, nodes = cluster_layout("nvls_tree", collective, p, 1 if gpus_per_node is None else gpus_per_node,
                                 nics_per_node)
    if nodes < 2:
        from ..errors import UnsupportedGroupSize

        raise UnsupportedGroupSize("nvls_tree", collective, p, "accepted: at least two whole nodes (one node: nvls)")
    rank = np.arange(p, dtype=np.int64)
    node, local = rank // G, rank % G
    switch = p + node
    halves = np.stack([2 * local, 2 * local + 1], axis=1)  # each rank's slice as its two half-blocks
    every = np.broadcast_to(np.arange(2 * G, dtype=np.int64), (p, 2 * G))
    steps = [make_step(rank, switch, every, True),  # 1. up to the node's switch, reduced there
             make_step(switch, rank, halves, False)]  # 2. slice g of the node's sum to GPU g
    trees = nccl_dtree(nodes)
    H = max(int(t[2].max()) for t in trees)
    for level in range(H):  # 3. up, from the leaves: nodes of height `level` add into their parents
        steps.append(_tree_step(trees, G, node, local, lambda parent, depth, height: height == level, up=True))
    for level in range(H):  # 4. down, from the root: nodes of depth `level` copy to their children
        steps.append(_tree_step(trees, G, node, local, lambda parent, depth, height: depth == level + 1, up=False))
    steps.append(make_step(rank, switch, halves, False))  # 5. GPU g hands its global slice to the switch
    others = _others(G)[local]  # 6. every slice but the rank's own, as half-blocks
    steps.append(make_step(p + node, rank, np.concatenate([2 * others, 2 * others + 1], axis=1), False))
    meta = {"gpus_per_node": G, "nodes": nodes, "tree_height": H}
    return Schedule("all-reduce", "nvls_tree", p, 2 * G, tuple(s for s in steps if s.n_transfers),
                    n_extra=nodes, meta=meta, streaming=True, facts=Facts(nics_per_node=N))


def nccl_dtree(n: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """NCCL's double binary tree over n nodes (NVIDIA/nccl src/graph/trees.cc, `ncclGetDtree`).

    Tree 1 is NCCL's btree rooted at 0: a node r > 0 with lowest set bit b hangs below
    (r xor b) | 2b, or below r xor b where that is past the last node. Tree 2 mirrors it (node r
    plays n-1-r) for even n and shifts it by one (node r plays r-1) for odd n.

    Parameters
    ----------
    n : int
        Nodes, >= 1.

    Returns
    -------
    list of two (parent, depth, height) int64 arrays [n]
        Parent (-1 at the root), depth (root 0) and height (leaves 0) in each tree.

    Examples
    --------
    >>> [t[0].tolist() for t in nccl_dtree(4)]   # 0 - 2 - {1, 3}; mirrored: 3 - 1 - {0, 2}
    [[-1, 2, 0, 2], [1, 3, 1, -1]]
    """
    r = np.arange(n, dtype=np.int64)
    low = r & -r  # lowest set bit (0 for the root)
    parent1 = np.where(((r ^ low) | (low << 1)) < n, (r ^ low) | (low << 1), r ^ low)
    parent1[0] = -1
    if n % 2 == 0:
        play = n - 1 - r  # node r plays node n-1-r of tree 1
        parent2 = np.where(parent1[play] >= 0, n - 1 - parent1[play], -1)
    else:
        play = (r - 1) % n  # node r plays node r-1 of tree 1
        parent2 = np.where(parent1[play] >= 0, (parent1[play] + 1) % n, -1)
    return [(par, *_depth_height(par)) for par in (parent1, parent2.astype(np.int64))]


def _tree_step(trees, G: int, node: np.ndarray, local: np.ndarray, pick, up: bool):
    """One level of both trees: GPU g of each picked node with its parent node's GPU g, half h of
    slice g on tree h; `up` adds child into parent, else the parent copies to the child."""
    src, dst, blk = [], [], []
    for h, (parent, depth, height) in enumerate(trees):
        on = (parent[node] >= 0) & pick(parent[node], depth[node], height[node])
        child = np.flatnonzero(on)
        par = parent[node[child]] * G + local[child]
        src.append(child if up else par)
        dst.append(par if up else child)
        blk.append(2 * local[child] + h)
    src, dst, blk = (np.concatenate(x).astype(np.int64) for x in (src, dst, blk))
    return make_step(src, dst, blk, up)


ALGORITHM = Algorithm(
    "nvls_tree", nvls_tree, COLLECTIVES, "two or more whole nodes of a cluster whose node switches reduce "
    "(NVLink SHARP)",
    "NCCL's NVLS-tree: NVLink SHARP in every node, a double binary tree of GPU g's between the nodes on each "
    "rail, multicast back in the node",
    options=(Option("gpus_per_node", "int", None, "GPUs per node (default: the topology's, for a group of whole nodes; "
                                                  "1 unplaced)"),
             Option("nics_per_node", "int", None, "NICs (rails) per node (default: the topology's)"),
             proto_option()),
    helper="node-switches", streams=True, cluster=True, nccl="nvls_tree",
    aliases={"nvlstree": {}},
)
