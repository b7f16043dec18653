"""Two-level fat-tree (leaf/spine) with an oversubscription ratio.

`leaf` NPUs hang off each leaf switch with links of the NPU bandwidth; every leaf has one link
to every spine. The uplink capacity of a leaf is (NPUs per leaf x NPU bandwidth) / oversub,
split evenly over the spines, so `oversub=1` is full bisection bandwidth.
Node ids: NPUs, then leaves, then spines. Routing: up/down, spine = destination mod spines.
"""

from __future__ import annotations

import numpy as np

from ..graph import Topology, TreeRouter


def fat_tree(n: int, bandwidth: float, latency: float, *, leaf: int, spines: int | None = None,
             oversub: float = 1.0, reduce: bool = False) -> Topology:
    if leaf < 1 or n % leaf:
        raise ValueError(f"fat-tree: {n} NPUs do not split into leaves of {leaf}")
    n_leaves = n // leaf
    spines = (leaf if spines is None else int(spines)) if n_leaves > 1 else 0
    if n_leaves > 1 and spines < 1:
        raise ValueError("fat-tree: needs at least one spine")
    if not (np.isfinite(oversub) and oversub > 0):  # nan/inf would give nan/zero uplink bandwidth
        raise ValueError("fat-tree: oversubscription must be a finite number > 0")
    npu = np.arange(n)
    leaf_of = n + npu // leaf
    up_bw = leaf * bandwidth / (oversub * spines) if spines else 0.0
    src = [npu, leaf_of]
    dst = [leaf_of, npu]
    bws = [np.full(n, bandwidth), np.full(n, bandwidth)]
    up, down = np.arange(n), np.arange(n, 2 * n)
    leaf_up = spine_down = None
    if spines:
        lv = np.repeat(np.arange(n_leaves), spines)
        sp = np.tile(np.arange(spines), n_leaves)
        sp_node = n + n_leaves + sp
        base = 2 * n
        leaf_up = (base + np.arange(n_leaves * spines)).reshape(n_leaves, spines)
        spine_down = (base + n_leaves * spines + np.arange(n_leaves * spines)).reshape(n_leaves, spines).T.copy()
        src += [n + lv, sp_node]
        dst += [sp_node, n + lv]
        bws += [np.full(len(lv), up_bw)] * 2
    src_a, dst_a, bw_a = np.concatenate(src), np.concatenate(dst), np.concatenate(bws)
    n_sw = n_leaves + spines
    can_reduce = np.zeros(n + n_sw, bool)
    can_reduce[n:] = reduce
    return Topology(
        f"fat-tree:{n},leaf={leaf},spines={spines},oversub={oversub:g}",
        n, src_a, dst_a, bw_a, np.full(len(src_a), float(latency)),
        TreeRouter(leaf_of, up, down, leaf_up, spine_down),
        n_switches=n_sw, can_reduce=can_reduce, can_multicast=can_reduce.copy(),
        leaf_of=leaf_of,
    )
