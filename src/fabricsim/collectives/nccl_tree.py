"""NCCL's tree all-reduce as NCCL runs it on a cluster of scale-up nodes (DGX/HGX).

The group is `nodes` nodes of G GPUs (rank n*G + g is GPU g of node n) with N NICs per node
(GPU g on rail g*N // G, q = G/N GPUs per rail). NCCL runs `channels` = c trees at once (default
2N, at least 2), channel k carrying 1/c of the buffer. Channel k's tree over all p ranks:

- its *head* GPU h_k = r_k*q + (k // N) mod q on rail r_k = k mod N (`head_gpu`), the same
  local GPU in every node;
- inside every node a chain h_k, h_k+1, ..., h_k+G-1 (mod G): every GPU's parent is the one
  before it, so data is reduced up the chain into the head and broadcast back down it;
- between nodes a binary tree over the nodes' heads: tree 1 of the double binary tree
  (`double_binary_tree.in_order_tree` over the nodes) or its complement (tree 2,
  `second_tree_map`); channel k uses tree (k + (k // N if N is even else 0)) mod 2, so channels
  2m and 2m+1 always use different trees (each such pair is a whole double binary tree) and
  every rail carries both trees over 2N channels. A head's parent is the head of its node's parent node, so every cross-node transfer
  is head to head on rail r_k (no proxy hop).

On one node (G = p) each tree is a chain (NCCL's tree inside a node); with G = 1 (one GPU per
node, e.g. a data-parallel group) it is the double binary tree over the nodes.

Schedule: each channel's buffer share is split into `chunks` pipelined pieces: channel k owns
blocks [k*chunks, (k+1)*chunks). As in `double_binary_tree`, in lock-step step t a non-root
rank of height h (leaves 0) sends piece t-h up to its parent (reduce), and a rank at depth d
copies piece t-H-d to its children, H = G - 1 + the node tree's height being the height of every
channel's tree. All channels run in the same steps: 2H + chunks - 1 steps. The edges of one child height (going
up) or one parent depth (going down) form one repeated `Step` (piece k at repetition k), and each
lock-step step is a `ComposedStep` of the ones it runs (`ir/composed.py`): every (edge,
piece) is stored once per direction, not once per step (2 x 16 x 65,535 entries on 65,536 GPUs
instead of 134 M); the steady middle of the pipeline, where every edge is busy, is one composed
step repeated.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ._common import channel_count, cluster_group_reason, cluster_layout, log2_rounds, require_collective, require_group
from .algorithm import Algorithm, Option, proto_option
from ..ir import compose_pipeline
from ..ir import Facts
from .double_binary_tree import _compress, _depth_height, in_order_tree, second_tree_map
from .nccl_ring import CLUSTER_OPTIONS
from ..ir import Schedule, make_step

TREE_CHUNKS = 64
"""Default pipeline pieces per channel: NCCL streams a large buffer through the tree in many small
chunks; in lock-step the pipeline's fill and drain cost (2H - 1) of the 2H + chunks - 1 steps, about
a quarter at H = 12 (8 GPUs, 32 nodes), against 3/4 with 8 pieces."""

COLLECTIVES = ("all-reduce",)

COMPOSE_ABOVE = 128
"""Edges per class (child height up, parent depth down), on average over the 2H classes at most,
from which the steps are stored as the classes they run (`ComposedStep`) instead of listed
(`stored_form`): a class costs a few microseconds of Python per step that names it, a listed entry
about 40 ns and 40 bytes. A DGX cluster's tree has about 40 classes of 50,000 edges (composed);
one node's chain of 16,384 GPUs 32,766 classes of one edge per channel (listed)."""


def stored_form(channels: int, p: int, gpus_per_node: int) -> str:
    """How `nccl_tree` stores its steps by default (the `blocks` estimate asks the same).

    Parameters
    ----------
    channels, p, gpus_per_node : int
        Trees, ranks and GPUs per node G (a divisor of p).

    Returns
    -------
    str
        "composed" when the channels x (p - 1) edges average at least `COMPOSE_ABOVE` per class
        of the 2H at most (H = G - 1 + floor(log2(p / G)), the trees' height), else "listed".
    """
    height = gpus_per_node - 1 + (p // gpus_per_node).bit_length() - 1
    return "composed" if channels * (p - 1) >= COMPOSE_ABOVE * max(height, 1) else "listed"


def head_gpu(k: int, gpus_per_node: int, nics_per_node: int) -> int:
    """Local GPU that heads channel k's chain in every node (module doc).

    Parameters
    ----------
    k : int
        Channel, >= 0.
    gpus_per_node : int
        G, GPUs per node.
    nics_per_node : int
        N, a divisor of G.

    Returns
    -------
    int
        A GPU on rail k mod N, the channels sharing a rail spread over its G/N GPUs.

    Examples
    --------
    >>> [head_gpu(k, 8, 4) for k in range(8)]
    [0, 2, 4, 6, 1, 3, 5, 7]
    """
    q = gpus_per_node // nics_per_node
    return (k % nics_per_node) * q + (k // nics_per_node) % q


def tree_of_channel(k: int, nics_per_node: int) -> int:
    """Which tree of the double binary tree over the nodes channel k uses: 0 or 1 (module doc).

    Parameters
    ----------
    k : int
        Channel, >= 0.
    nics_per_node : int
        N.

    Returns
    -------
    int
        (k + k // N) mod 2 for even N, k mod 2 for odd N.

    Examples
    --------
    >>> [tree_of_channel(k, 4) for k in range(8)], [tree_of_channel(k, 1) for k in range(4)]
    ([0, 1, 0, 1, 1, 0, 1, 0], [0, 1, 0, 1])
    """
    return (k + (k // nics_per_node if nics_per_node % 2 == 0 else 0)) % 2


def node_trees(nodes: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Both trees of the double binary tree over the nodes.

    Parameters
    ----------
    nodes : int
        Nodes, >= 1.

    Returns
    -------
    list of two (parent, depth, height) int64 arrays [nodes]
        Parent node (-1 at the root), depth (root 0) and height (leaves 0) in tree 1 and tree 2.
    """
    parent1 = in_order_tree(nodes)
    depth1, height1 = _depth_height(parent1)
    perm, _ = second_tree_map(nodes)
    parent2 = np.full(nodes, -1, dtype=np.int64)
    depth2 = np.empty(nodes, dtype=np.int64)
    height2 = np.empty(nodes, dtype=np.int64)
    has = parent1 >= 0
    parent2[perm[has]] = perm[parent1[has]]
    depth2[perm], height2[perm] = depth1, height1
    return [(parent1, depth1, height1), (parent2, depth2, height2)]


def channel_tree(k: int, p: int, gpus_per_node: int, nics_per_node: int, trees) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parent, depth and height of every rank in channel k's tree.

    Parameters
    ----------
    k : int
        Channel.
    p : int
        Ranks, a multiple of G.
    gpus_per_node, nics_per_node : int
        G and N.
    trees : list
        `node_trees(p // G)`.

    Returns
    -------
    (int64 array [p], int64 array [p], int64 array [p])
        Parent rank (-1 at the root), depth and height of every rank.
    """
    G = gpus_per_node
    h = head_gpu(k, G, nics_per_node)
    npar, ndepth, nheight = trees[tree_of_channel(k, nics_per_node)]
    rank = np.arange(p, dtype=np.int64)
    node, pos = rank // G, (rank % G - h) % G  # pos: place in the node's chain, head 0
    parent = np.where(pos > 0, node * G + (h + pos - 1) % G, np.where(npar[node] >= 0, npar[node] * G + h, -1))
    depth = ndepth[node] + pos
    height = np.where(pos > 0, G - 1 - pos, G - 1 + nheight[node])
    return parent, depth, height


def _composed_steps(e_child, e_parent, e_base, e_h, e_pd, H, chunks, nblocks) -> list:
    """One part per class (edges of one child height up, of one parent depth down), piece k at its
    repetition k; step t runs up class h at t - h, down class d at t - H - d (module doc)."""
    rot = {"repeat": chunks, "shift": 1, "mod": nblocks} if chunks > 1 else {}  # ids never wrap: base + k < nblocks
    parts, offsets = [], []
    for key, is_up in ((e_h, True), (e_pd, False)):
        order = np.argsort(key, kind="stable")
        k = key[order]
        cut = np.flatnonzero(np.diff(k)) + 1
        for idx in np.split(order, cut):
            ends = (e_child[idx], e_parent[idx]) if is_up else (e_parent[idx], e_child[idx])
            offsets.append(int(key[idx[0]]) + (0 if is_up else H))
            parts.append(make_step(*ends, e_base[idx], is_up, **rot))
    return compose_pipeline(parts, offsets)


def _listed_steps(e_child, e_parent, e_base, e_h, e_pd, H, chunks, nblocks) -> list:
    """Every (edge, piece) listed, in the composed form's order (per step: up before down, by
    class, by edge); runs of steps whose ids grow by one merged into repeated steps."""
    E = len(e_child)
    piece = np.arange(chunks, dtype=np.int64)
    edge = np.tile(np.repeat(np.arange(E, dtype=np.int64), chunks), 2)
    pc = np.tile(piece, 2 * E)
    down = np.repeat(np.array([False, True]), E * chunks)
    cls = np.where(down, e_pd[edge], e_h[edge])
    t = np.where(down, H + cls, cls) + pc
    order = np.lexsort((edge, cls, down, t))
    t, edge, pc, down = t[order], edge[order], pc[order], down[order]
    src = np.where(down, e_parent[edge], e_child[edge])
    dst = np.where(down, e_child[edge], e_parent[edge])
    blk = e_base[edge] + pc
    cut = np.flatnonzero(np.diff(t)) + 1
    raw = [(s, d, b, ~dn) for s, d, b, dn in zip(np.split(src, cut), np.split(dst, cut), np.split(blk, cut),
                                                 np.split(down, cut))]
    return _compress(raw, nblocks)


def nccl_tree(
    collective: str,
    p: int,
    *,
    channels: int | None = None,
    chunks: int | None = None,
    gpus_per_node: int | None = None,
    nics_per_node: int | None = None,
    root: int = 0,
    form: str = "auto",
) -> Schedule:
    """Multi-channel tree all-reduce: chains inside the nodes, a double binary tree between them.

    Parameters
    ----------
    collective : str
        all-reduce.
    p : int
        Ranks in the group, >= 2, a multiple of `gpus_per_node`.
    channels : int, optional
        Trees run at once, each on 1/channels of the buffer (default 2 x nics_per_node, at
        least 2: both trees of the double binary tree).
    chunks : int, optional
        Pipeline pieces per channel, >= 1 (default 8).
    gpus_per_node : int, optional
        GPUs per node G (default p: one node, every tree a chain).
    nics_per_node : int, optional
        NICs per node N, a divisor of G (default 1).
    root : int
        Accepted for a uniform signature and ignored.
    form : {"auto", "composed", "listed"}
        How the steps are stored (the same transfers in the same order either way): composed
        steps over the edge classes, or every (edge, piece) listed; auto: `stored_form`.

    Returns
    -------
    Schedule
        Unplaced, channels*chunks blocks, 2H + chunks - 1 steps with H = G - 1 + the node tree's
        height; `facts` states the channels and NICs per node, `meta` has the chunks, node
        shape, heads, trees and H.
    """
    require_collective("nccl_tree", collective, COLLECTIVES)
    require_group("nccl_tree", collective, p)
    p = int(p)
    G, N, nodes = cluster_layout("nccl_tree", collective, p, gpus_per_node, nics_per_node)
    c = channel_count(channels, max(2, 2 * N))
    chunks = TREE_CHUNKS if chunks is None else chunks
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
        raise ConfigError("chunks", chunks, "accepted: an integer >= 1")
    chunks = int(chunks)

    trees = node_trees(nodes)
    child, par, h_up, d_par, base = [], [], [], [], []
    for k in range(c):
        parent, depth, height = channel_tree(k, p, G, N, trees)
        v = np.flatnonzero(parent >= 0)
        child.append(v)
        par.append(parent[v])
        h_up.append(height[v])
        d_par.append(depth[v] - 1)
        base.append(np.full(len(v), k * chunks, dtype=np.int64))
    e_child, e_parent, e_h, e_pd, e_base = (np.concatenate(a) for a in (child, par, h_up, d_par, base))
    H = G - 1 + int(trees[0][2].max())

    nblocks = c * chunks
    if form == "auto":
        form = stored_form(c, p, G)
    if form == "composed":
        steps = _composed_steps(e_child, e_parent, e_base, e_h, e_pd, H, chunks, nblocks)
    elif form == "listed":
        steps = _listed_steps(e_child, e_parent, e_base, e_h, e_pd, H, chunks, nblocks)
    else:
        raise ConfigError("form", form, "accepted: auto, composed, listed")
    meta = {"chunks": chunks, "gpus_per_node": G, "nodes": nodes,
            "heads": tuple(head_gpu(k, G, N) for k in range(c)),
            "trees": tuple(tree_of_channel(k, N) for k in range(c)), "tree_height": H}
    return Schedule(collective, "nccl_tree", p, nblocks, tuple(steps), meta=meta,
                    facts=Facts(channels=c, nics_per_node=N))


def _estimate(c: str, p: int, o: dict) -> float:
    """Composed (`stored_form`): every tree edge once up and once down, 2 x channels x
    (p - 1) entries. Listed: every (edge, piece) once up and once down, except in the steady middle
    of the pipeline, which is one step: at most min(chunks, 4H + 2) listings of the channels x (p-1)
    edges each way, H = G - 1 + the node tree's height."""
    channels = int(o.get("channels") or max(2, 2 * int(o.get("nics_per_node") or 1)))
    gpus = int(o.get("gpus_per_node") or p)
    if p % gpus == 0 and stored_form(channels, p, gpus) == "composed":
        return 2.0 * channels * p
    chunks = int(o.get("chunks") or 64)
    height = gpus - 1 + (log2_rounds(p // gpus) if p >= 2 * gpus else 0)
    return 2.0 * channels * p * min(chunks, 4 * height + 2)


ALGORITHM = Algorithm(
    "nccl_tree", nccl_tree, COLLECTIVES, "any p >= 2 that is a multiple of gpus_per_node",
    "NCCL tree on nodes of G GPUs: per channel a chain in every node into a head on NIC k mod N, a double "
    "binary tree over the heads; reduce up, broadcast down, pipelined",
    options=(Option("channels", "int", None, "trees run at once, 1/channels of the buffer each, alternating between "
                                            "the two trees (default: 2 x nics_per_node, at least 2)"),
             Option("chunks", "int", TREE_CHUNKS, "pipeline pieces per channel (lock-step fill costs (2H-1)/(2H+chunks-1) "
                                                  "of the bandwidth, H = chain + tree depth)"))
    + CLUSTER_OPTIONS + (proto_option(),),
    cluster=True, nccl="tree",
    check=lambda collective, p, options: cluster_group_reason(p, options),
    aliases={"nccl-tree": {}},
    estimate=_estimate,
)
