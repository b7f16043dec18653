"""Identical blocks of a topology: the local symmetry that proves a training job's copies alike
without pricing each one (`engine.fold`, issue 42).

A router may state `block_size(topo)`: the NPUs fall in consecutive blocks of that many (block b is
NPUs b*s .. b*s + s - 1, NPU b*s + i its local NPU i) such that the route between two NPUs of one
block, and between an NPU and a switch of its block, uses only links with both ends in the block and
is the same route in local terms in every block. The dgx router states its nodes (NVLink inside a
node), dimension order its dimension-0 lines, a tree of switches its leaves.

What the router cannot know is whether the blocks were built alike: a link of one block may have
been changed afterwards (`dataclasses.replace(topo, link_bw=...)`, a degraded link). `block_classes`
checks that from the link arrays. A block's switches are the switches whose NPU neighbours all lie
in it (a node's NVSwitch and NICs, a leaf switch, a line's switch), numbered after its NPUs in id
order; its links are those with both ends in it (reduction self-loops included). Two blocks are of
one class when their tables of links (local ends, bandwidth, latency, class, dimension) are equal
and their switches reduce and multicast alike.

So a group inside one block and its image in a block of the same class, with the same local indices
in the same order, route alike link for link: a network model that prices a placed schedule from
its routes' links prices them alike (`engine.fold` checks that each schedule stays in its block).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .core import Topology


@dataclass(frozen=True, eq=False)
class Blocks:
    """A topology's identical blocks (module doc).

    Parameters
    ----------
    size : int
        NPUs per block (block b holds NPUs b*size .. b*size + size - 1).
    klass : int64 array [n_blocks]
        Class of each block: equal when the blocks were built alike (module doc).
    owner : int64 array [n_nodes]
        The block each node belongs to (NPUs, and switches whose NPU neighbours are all in one
        block); -1 for the rest (leaves above NICs, spines, switches spanning blocks).
    """

    size: int
    klass: np.ndarray
    owner: np.ndarray

    def placement(self, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each group (a row of NPUs) sits: the class of its block, -1 when its members are not
        all in one block, and its members' local indices.

        Parameters
        ----------
        groups : int64 array [K, m]
            NPU ids, one group per row.

        Returns
        -------
        klass : int64 array [K]
            Block class of each group, -1 where it spans blocks.
        local : int64 array [K, m]
            Each member's index in its block.
        """
        groups = np.asarray(groups, dtype=np.int64)
        blk = groups // self.size
        one = np.all(blk == blk[:, :1], axis=1)
        return np.where(one, self.klass[blk[:, 0]], -1), groups % self.size


def block_classes(topo: Topology) -> Blocks | None:
    """The topology's blocks and their classes (module doc); None when its router states no blocks.

    Parameters
    ----------
    topo : Topology

    Returns
    -------
    Blocks or None
    """
    s = int(topo.structure.block)
    n, nodes = topo.n_npus, topo.n_nodes
    if s < 1 or n % s:
        return None
    B = n // s
    src, dst = np.asarray(topo.link_src, dtype=np.int64), np.asarray(topo.link_dst, dtype=np.int64)
    owner = np.full(nodes, -1, dtype=np.int64)
    owner[:n] = np.arange(n) // s
    # a switch belongs to a block when every NPU it is linked with (either way) lies in that block
    a, b = np.concatenate([src, dst]), np.concatenate([dst, src])
    m = (a >= n) & (b < n)
    lo, hi = np.full(nodes, B, dtype=np.int64), np.full(nodes, -1, dtype=np.int64)
    np.minimum.at(lo, a[m], b[m] // s)
    np.maximum.at(hi, a[m], b[m] // s)
    mine = (np.arange(nodes) >= n) & (hi >= 0) & (lo == hi)
    owner[mine] = lo[mine]
    # local ids: NPU i of a block is i, its switches s, s + 1, ... in id order
    local = np.full(nodes, -1, dtype=np.int64)
    local[:n] = np.arange(n) % s
    sw = np.flatnonzero(mine)
    sw = sw[np.argsort(owner[sw], kind="stable")]
    first = np.searchsorted(owner[sw], owner[sw])
    local[sw] = s + np.arange(len(sw)) - first
    inside = (owner[src] >= 0) & (owner[src] == owner[dst])
    lk = np.flatnonzero(inside)
    zero = np.zeros(len(src), dtype=np.int64)
    cls = zero if topo.link_class is None else np.asarray(topo.link_class, dtype=np.int64)
    dim = zero if topo.link_dim is None else np.asarray(topo.link_dim, dtype=np.int64)
    cols = [local[src[lk]], local[dst[lk]], cls[lk], dim[lk], topo.link_bw[lk], topo.link_lat[lk]]
    rows = _per_block(owner[src[lk]], cols, B)
    flags = [np.asarray(f, dtype=np.float64)[sw] for f in (topo.can_reduce, topo.can_multicast) if f is not None]
    io = np.zeros(nodes, dtype=np.float64)
    io[np.asarray(topo.io_nodes, dtype=np.int64)] = 1.0
    table = np.concatenate([rows, _per_block(owner[sw], [local[sw], *flags, io[sw]], B)], axis=1)
    if np.array_equal(table, np.broadcast_to(table[:1], table.shape)):  # the usual case: all built alike
        return Blocks(s, np.zeros(B, dtype=np.int64), owner)
    _, klass = np.unique(table, axis=0, return_inverse=True)
    return Blocks(s, klass.reshape(-1).astype(np.int64), owner)


def _per_block(block: np.ndarray, cols: list[np.ndarray], n_blocks: int) -> np.ndarray:
    """One row per block of its entries' columns, entries sorted within the block by the columns in
    order and padded with -1 (a missing entry: no real one has a negative bandwidth or flag)."""
    cols = [np.asarray(c, dtype=np.float64) for c in cols]
    order = np.lexsort([*cols[::-1], block])
    block = block[order]
    counts = np.bincount(block, minlength=n_blocks)
    width = int(counts.max()) if len(block) else 0
    out = np.full((n_blocks, width, len(cols)), -1.0)
    pos = np.arange(len(block)) - np.searchsorted(block, block)
    out[block, pos] = np.stack([c[order] for c in cols], axis=1) if len(cols) else 0.0
    return out.reshape(n_blocks, -1)


__all__ = ["Blocks", "block_classes"]
