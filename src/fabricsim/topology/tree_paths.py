"""Routing on a topology whose links form a tree: the unique path, up to the lowest common
ancestor and down, from parent pointers (O(nodes) memory instead of a nodes x nodes table).

FRED's fabric (NPUs and I/O controllers on L1 switches under one L2 switch) is such a tree: a
65,536-NPU fabric routes with 0.5 MB of parent arrays where the fewest-hop table needs 4.3 G
entries (34 GB). On a tree the fewest-hop path is the only simple path, so the routes are the ones
`ShortestPathRouter` gives (between parallel links the lowest id, as its tie rule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .graph import csr_from_hops


@dataclass(frozen=True, eq=False)
class ParentTreeRouter:
    """Unique tree paths from parent pointers (module doc). Build with `ParentTreeRouter.build`.

    Parameters
    ----------
    parent : int64 array [n_nodes]
        Each node's parent towards the root (-1 at the root).
    up, down : int64 arrays [n_nodes]
        The link from each node to its parent, and from its parent to it (-1 at the root).
    depth : int64 array [n_nodes]
        Hops from the root.
    """

    parent: np.ndarray
    up: np.ndarray
    down: np.ndarray
    depth: np.ndarray

    @classmethod
    def build(cls, n_nodes: int, link_src: np.ndarray, link_dst: np.ndarray, root: int) -> "ParentTreeRouter":
        """Parent pointers by breadth-first search from `root` over links given both ways.

        Parameters
        ----------
        n_nodes : int
            Nodes 0..n_nodes-1.
        link_src, link_dst : int64 arrays [L]
            Directed links; every edge of the tree both ways (parallel links allowed).
        root : int
            The node the tree hangs from.

        Returns
        -------
        ParentTreeRouter
            ValueError when the links do not form a tree over all nodes (a cycle, a node not reached,
            or an edge one way only).
        """
        src, dst = np.asarray(link_src, dtype=np.int64), np.asarray(link_dst, dtype=np.int64)
        order = np.lexsort((np.arange(len(src)), src))  # links by source, then id
        first = np.searchsorted(src[order], np.arange(n_nodes + 1))
        parent = np.full(n_nodes, -1, dtype=np.int64)
        depth = np.full(n_nodes, -1, dtype=np.int64)
        depth[root] = 0
        frontier = np.array([root], dtype=np.int64)
        d = 0
        while len(frontier):
            cnt = first[frontier + 1] - first[frontier]
            at = np.repeat(first[frontier] - (np.cumsum(cnt) - cnt), cnt) + np.arange(int(cnt.sum()))
            ln = order[at]
            u, v = src[ln], dst[ln]
            new = depth[v] < 0
            pair = np.unique(u[new] * n_nodes + v[new])  # parallel links are one edge
            back = ~new & (v != parent[u])  # a node already reached that is not u's parent
            if back.any() or len(np.unique(pair % n_nodes)) != len(pair):
                raise ValueError("ParentTreeRouter: the links do not form a tree (a cycle)")
            u, v = pair // n_nodes, pair % n_nodes
            parent[v], depth[v] = u, d + 1
            frontier, d = v, d + 1
        if (depth < 0).any():
            raise ValueError(f"ParentTreeRouter: node {int(np.flatnonzero(depth < 0)[0])} is not reached from {root}")
        up = np.full(n_nodes, -1, dtype=np.int64)
        down = np.full(n_nodes, -1, dtype=np.int64)
        rev = np.arange(len(src))[::-1]  # the lowest id among parallel links: assigned last
        to_parent = parent[src[rev]] == dst[rev]
        up[src[rev][to_parent]] = rev[to_parent]
        from_parent = parent[dst[rev]] == src[rev]
        down[dst[rev][from_parent]] = rev[from_parent]
        child = np.flatnonzero(parent >= 0)
        if (up[child] < 0).any() or (down[child] < 0).any():
            raise ValueError("ParentTreeRouter: a tree edge has a link one way only")
        return cls(parent, up, down, depth)

    def route(self, topo, src: np.ndarray, dst: np.ndarray):
        """Paths of every (src, dst) as `graph.Router.route` gives them (CSR, in path order, none
        when src == dst; any nodes): up from src to the lowest common ancestor, then down to dst,
        the deeper end climbing first, both ends together at equal depth."""
        src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        n_t = len(src)
        a, b = src.copy(), dst.copy()
        tid = np.arange(n_t)
        up_t, up_l, down_t, down_l = [], [], [], []
        active = tid[a != b]
        while len(active):
            da, db = self.depth[a[active]], self.depth[b[active]]
            climb_a, climb_b = active[da >= db], active[db >= da]  # the deeper end climbs; both at equal depth
            up_t.append(climb_a)
            up_l.append(self.up[a[climb_a]])
            down_t.append(climb_b)
            down_l.append(self.down[b[climb_b]])
            a[climb_a] = self.parent[a[climb_a]]
            b[climb_b] = self.parent[b[climb_b]]
            active = active[a[active] != b[active]]
        return csr_from_hops(n_t, up_t + down_t[::-1], up_l + down_l[::-1])
