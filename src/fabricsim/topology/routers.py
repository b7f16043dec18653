"""The routers of a Topology: dimension order (stacks), up/down on trees of switches, fewest hops
(any graph), and `csr_from_hops`, which assembles their paths.

Each router routes arrays of (src, dst) pairs at once into CSR paths (`ptr`, `links`), the
`Router` protocol of `topology.core`. Re-exported by `topology.graph`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .core import DIMENSION_ORDER, Topology


def csr_from_hops(n_transfers: int, hop_t: list[np.ndarray], hop_l: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Assemble CSR paths from hops generated round by round in path order.

    Parameters
    ----------
    n_transfers : int
        Number of transfers T.
    hop_t, hop_l : lists of int arrays
        Per round of hops, the transfers that take a hop and the link each takes.

    Returns
    -------
    ptr : int64 array [T + 1]
    links : int64 array
        Transfer t's links are `links[ptr[t]:ptr[t + 1]]`, in the order the rounds came.
    """
    if hop_t:
        t = np.concatenate(hop_t)
        links = np.concatenate(hop_l)
        order = np.argsort(t, kind="stable")  # stable keeps hop order within a transfer
        t, links = t[order], links[order]
    else:
        t = links = np.zeros(0, dtype=np.int64)
    ptr = np.zeros(n_transfers + 1, dtype=np.int64)
    np.cumsum(np.bincount(t, minlength=n_transfers), out=ptr[1:])
    return ptr, links


@dataclass(frozen=True, eq=False)
class DimensionOrderRouter:
    """Dimension-order routing over a stack of per-dimension building blocks.

    Dimensions are corrected in order 0, 1, ... . Per dimension kind:
    - "ring": bidirectional ring, shortest direction, ties (half-way) go in the + direction;
    - "uniring": one-direction ring, always +;
    - "line": mesh dimension (no wrap-around);
    - "fc": fully connected, one direct link;
    - "switch": up to the dimension's switch and down.
    Built by `stack` (`builders/stack.py`); link ids index the topology's link arrays.

    Parameters
    ----------
    kinds : tuple of str
        The building block of each dimension (ring, uniring, line, fc, switch).
    step_link : int64 array [n_npus, D, 2]
        For ring, uniring and line dimensions: the link of a step from an NPU in dimension d,
        `[node, d, 0]` in the + direction, `[node, d, 1]` in the - direction; -1 where absent.
    fc_link : tuple of int64 arrays [n_npus, dims[d]] or None
        For fc dimensions: `fc_link[d][node, c]`, the link from `node` to the NPU of its line at
        coordinate c (-1 for itself); None for other kinds.
    up_link, down_link : int64 arrays [n_npus, D]
        For switch dimensions: each NPU's link up to its switch of dimension d and the link down
        from that switch to it; -1 elsewhere.
    """

    kinds: tuple[str, ...]
    step_link: np.ndarray  # int64[n_npus, D, 2], -1 where absent
    fc_link: tuple  # per dim: int64[n_npus, dims[d]] or None
    up_link: np.ndarray  # int64[n_npus, D]
    down_link: np.ndarray  # int64[n_npus, D]  (down link *to* this npu from its switch)
    routing: ClassVar[str] = DIMENSION_ORDER  # the rule it states (`core.Structure`), with `kinds`

    def block_size(self, topo: Topology) -> int:
        """NPUs per block of the local symmetry this router keeps (`topology.blocks`): a line of
        dimension 0 (dimension 0 is fastest, so a line is consecutive NPUs). Between two NPUs of a
        line only dimension 0 is corrected, over that line's own links (or its switch)."""
        return int(topo.dims[0]) if len(topo.dims) else 0

    def route(self, topo: Topology, src: np.ndarray, dst: np.ndarray):
        """Paths of NPU -> NPU transfers (dimension order, class doc), NPU -> its own switch and
        switch -> an NPU below it.

        Parameters
        ----------
        topo : Topology
            The topology this router belongs to.
        src, dst : int64 arrays [T]
            Nodes of each transfer: NPUs, or a switch and an NPU attached to it.

        Returns
        -------
        ptr : int64 array [T + 1]
        links : int64 array
            Transfer t uses links `links[ptr[t]:ptr[t + 1]]`, in path order (none when src == dst).
            ValueError for a node outside the topology or a switch the NPU is not attached to.
        """
        n_t = len(src)
        n = topo.n_npus
        if n_t and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= topo.n_nodes):
            raise ValueError("routing: node outside the topology")
        to_sw, from_sw = dst >= n, src >= n
        if (to_sw | from_sw).any():
            return self._route_switch_endpoints(topo, src, dst, to_sw, from_sw)
        cs, cd = topo.coords(src), topo.coords(dst)
        cur = src.copy()
        hop_t: list[np.ndarray] = []
        hop_l: list[np.ndarray] = []
        tid = np.arange(n_t)
        strides = np.cumprod((1,) + topo.dims[:-1])
        for d, kind in enumerate(self.kinds):
            size = topo.dims[d]
            diff = cd[:, d] - cs[:, d]
            m = diff != 0
            if not m.any():
                continue
            if kind in ("ring", "uniring", "line"):
                fwd = diff % size
                if kind == "ring":
                    back = size - fwd
                    go_plus = fwd <= back  # tie -> + (deterministic)
                    hops = np.where(go_plus, fwd, back)
                elif kind == "uniring":
                    go_plus = np.ones(n_t, dtype=bool)
                    hops = fwd
                else:
                    go_plus = diff > 0
                    hops = np.abs(diff)
                hops = np.where(m, hops, 0)
                direction = np.where(go_plus, 0, 1)
                delta = np.where(go_plus, 1, -1)
                coord = cs[:, d].copy()
                for h in range(int(hops.max())):
                    act = hops > h
                    t = tid[act]
                    ln = self.step_link[cur[act], d, direction[act]]
                    hop_t.append(t)
                    hop_l.append(ln)
                    newc = (coord[act] + delta[act]) % size
                    cur[act] = cur[act] + (newc - coord[act]) * strides[d]
                    coord[act] = newc
            elif kind == "fc":
                t = tid[m]
                hop_t.append(t)
                hop_l.append(self.fc_link[d][cur[m], cd[m, d]])
                cur[m] = cur[m] + (cd[m, d] - cs[m, d]) * strides[d]
            elif kind == "switch":
                t = tid[m]
                nxt = cur[m] + (cd[m, d] - cs[m, d]) * strides[d]
                hop_t += [t, t]
                hop_l += [self.up_link[cur[m], d], self.down_link[nxt, d]]
                cur[m] = nxt
            else:  # pragma: no cover - builders only use the kinds above
                raise ValueError(kind)
        ptr, links = csr_from_hops(n_t, hop_t, hop_l)
        if (links < 0).any():
            raise ValueError("routing used a link that does not exist")
        return ptr, links

    def _route_switch_endpoints(self, topo, src, dst, to_sw, from_sw):
        """NPU -> one of its own switches (up link) and switch -> NPU below it (down link);
        NPU -> NPU pairs in the same call are routed normally."""
        n = topo.n_npus
        n_t = len(src)
        tid = np.arange(n_t)
        if (to_sw & from_sw).any():
            raise ValueError("routing: switch-to-switch transfers are not routed")
        hop_t, hop_l = [], []
        npu = np.where(to_sw, src, dst)
        sw = np.where(to_sw, dst, src)
        m = to_sw | from_sw
        sw_dim = topo.switch_dim[sw[m] - n]
        up, down = self.up_link[npu[m], sw_dim], self.down_link[npu[m], sw_dim]
        if (topo.link_dst[up] != sw[m]).any():
            raise ValueError("routing: an NPU can only address a switch it is attached to")
        hop_t.append(tid[m])
        hop_l.append(np.where(to_sw[m], up, down))
        rest = ~m
        if rest.any():
            p2, l2 = self.route(topo, src[rest], dst[rest])
            hop_t.append(np.repeat(tid[rest], np.diff(p2)))
            hop_l.append(l2)
        return csr_from_hops(n_t, hop_t, hop_l)


@dataclass(frozen=True, eq=False)
class TreeRouter:
    """Up/down routing on a one- or two-level tree of switches (single switch, fat-tree).

    `leaf[npu]` is the NPU's leaf switch; `up[npu]`/`down[npu]` its links to/from it. Between
    leaves, traffic goes up to one spine and down (`leaf_up[leaf, spine]`, `spine_down[spine,
    leaf]`), the spine a deterministic function of both ends (`spine_of`): with k spines and m
    NPUs per leaf, NPU i of leaf A to NPU j of leaf B takes spine (m i + j + m^2 (A + B)) mod k.
    The m^2 pairs of NPUs of two leaves then spread over min(k, m^2) spines, so every spine's
    links carry an even share of uniform traffic (exact when k divides m^2) and adding spines
    never takes capacity away; when k divides m it is destination mod k.

    Parameters
    ----------
    leaf : int64 array [n_npus]
        Each NPU's leaf switch (a node id).
    up, down : int64 arrays [n_npus]
        Each NPU's link up to its leaf and the link down from its leaf to it.
    leaf_up : int64 array [n_leaves, n_spines], optional
        The link from leaf l (node n_npus + l) to spine s; None without spines.
    spine_down : int64 array [n_spines, n_leaves], optional
        The link from spine s down to leaf l; None without spines.
    per_leaf : int
        NPUs per leaf (m): NPU p is NPU p mod m of leaf p // m.
    """

    leaf: np.ndarray
    up: np.ndarray
    down: np.ndarray
    leaf_up: np.ndarray | None = None
    spine_down: np.ndarray | None = None
    per_leaf: int = 1

    def spine_of(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The spine of each leaf-to-leaf transfer (class doc).

        Parameters
        ----------
        src, dst : int64 arrays [T]
            NPUs on different leaves.

        Returns
        -------
        int64 array [T]
            Spine indices 0..k-1 (`leaf_up` columns); every term reduced mod k, so no int64 overflow.
        """
        k, m = self.leaf_up.shape[1], self.per_leaf
        pair = (m % k * (src % m) + dst % m) % k
        return (pair + (m * m) % k * ((src // m + dst // m) % k)) % k

    def block_size(self, topo: Topology) -> int:
        """NPUs per block of the local symmetry this router keeps (`topology.blocks`): a leaf. Between
        two NPUs of a leaf the route is up to the leaf and down, by the NPUs' links alone."""
        return int(self.per_leaf)

    def route(self, topo: Topology, src: np.ndarray, dst: np.ndarray):
        """Paths of NPU -> NPU transfers (up/down, class doc), NPU -> its own leaf and leaf -> an
        NPU below it.

        Parameters
        ----------
        topo : Topology
            The topology this router belongs to.
        src, dst : int64 arrays [T]
            Nodes of each transfer: NPUs, or a leaf switch and an NPU below it.

        Returns
        -------
        ptr : int64 array [T + 1]
        links : int64 array
            Transfer t uses links `links[ptr[t]:ptr[t + 1]]`, in path order (none when src == dst).
            ValueError for a switch-to-switch pair or a switch the NPU does not hang off.
        """
        n_t = len(src)
        tid = np.arange(n_t)
        n = topo.n_npus
        sw_src = src >= n
        sw_dst = dst >= n
        hop_t, hop_l = [], []
        # NPU -> NPU
        m = ~sw_src & ~sw_dst & (src != dst)
        same = m & (self.leaf[np.minimum(src, n - 1)] == self.leaf[np.minimum(dst, n - 1)])
        cross = m & ~same
        for mask in (same, cross):
            if not mask.any():
                continue
            t, s, d = tid[mask], src[mask], dst[mask]
            hop_t.append(t)
            hop_l.append(self.up[s])
            if mask is cross:
                spine = self.spine_of(s, d)
                hop_t += [t, t]
                hop_l += [self.leaf_up[self.leaf[s] - n, spine], self.spine_down[spine, self.leaf[d] - n]]
            hop_t.append(t)
            hop_l.append(self.down[d])
        # NPU -> its leaf switch, leaf switch -> NPU (in-network collectives)
        m = ~sw_src & sw_dst
        if m.any():
            if not np.all(self.leaf[src[m]] == dst[m]):
                raise ValueError("tree routing: an NPU can only address its own leaf switch")
            hop_t.append(tid[m])
            hop_l.append(self.up[src[m]])
        m = sw_src & ~sw_dst
        if m.any():
            if not np.all(self.leaf[dst[m]] == src[m]):
                raise ValueError("tree routing: a switch can only address the NPUs below it")
            hop_t.append(tid[m])
            hop_l.append(self.down[dst[m]])
        if (sw_src & sw_dst).any():
            raise ValueError("tree routing: switch-to-switch transfers are not routed")
        return csr_from_hops(n_t, hop_t, hop_l)


@dataclass(frozen=True, eq=False)
class ShortestPathRouter:
    """Fewest-hop paths on any topology, through a next-hop table computed once:
    `next_link[node, dst]`. The tie rule is explicit: among the links from a node to a neighbour
    one hop closer to the destination, the lowest link id (so between parallel links too).

    Parameters
    ----------
    next_link : int64 array [n_nodes, n_nodes]
        `next_link[u, dst]`: the first link of a fewest-hop path u -> dst; -1 where dst cannot be
        reached from u or u == dst. Built by `ShortestPathRouter.build`.
    """

    next_link: np.ndarray  # int64[n_nodes, n_nodes], -1 where unreachable or node == dst

    @classmethod
    def build(cls, n_nodes: int, link_src: np.ndarray, link_dst: np.ndarray) -> ShortestPathRouter:
        """The next-hop table of a graph: all-pairs hop counts (rustworkx), then per (node,
        destination) the lowest-id link to a neighbour one hop closer.

        Parameters
        ----------
        n_nodes : int
            Nodes 0..n_nodes-1.
        link_src, link_dst : int64 arrays [L]
            Directed links.

        Returns
        -------
        ShortestPathRouter
            O(n_nodes^2) memory; about 0.1 ms for 64 nodes of degree 4 and 0.4 s for a 64x64
            torus (4096 nodes), 2.5 to 3.5 times faster than scipy's predecessor search it replaces.
        """
        import rustworkx as rx

        link_src = np.asarray(link_src, dtype=np.int64)
        link_dst = np.asarray(link_dst, dtype=np.int64)
        g = rx.PyDiGraph(multigraph=False)  # hop counts: one edge per ordered pair is enough
        g.add_nodes_from(range(n_nodes))
        g.extend_from_edge_list(list(zip(link_src.tolist(), link_dst.tolist())))
        # -2 where unreachable: "one hop closer" (dist - 1) never matches it, nor the diagonal's -1
        dist = rx.digraph_distance_matrix(g, null_value=-2.0).astype(np.int32)
        L = len(link_src)
        order = np.lexsort((np.arange(L), link_src))  # links by source, then id
        deg = np.bincount(link_src, minlength=n_nodes)
        first = np.concatenate([[0], np.cumsum(deg)[:-1]])
        table = np.full((n_nodes, n_nodes), -1, dtype=np.int64)
        # k-th link of every node, highest k first: the lowest id that leads closer is written last
        for k in range(int(deg.max(initial=0)) - 1, -1, -1):
            ids = order[first[deg > k] + k]
            u, v = link_src[ids], link_dst[ids]
            closer = dist[v]
            closer += 1
            if len(u) == n_nodes:  # every node has a k-th link: rows in node order
                np.copyto(table, ids[:, None], where=closer == dist)
            else:
                rows = table[u]
                np.copyto(rows, ids[:, None], where=closer == dist[u])
                table[u] = rows
        return cls(table)

    def route(self, topo: Topology, src: np.ndarray, dst: np.ndarray):
        """Paths along the next-hop table (fewest hops).

        Parameters
        ----------
        topo : Topology
            The topology this router belongs to.
        src, dst : int64 arrays [T]
            Nodes of each transfer: any nodes.

        Returns
        -------
        ptr : int64 array [T + 1]
        links : int64 array
            Transfer t uses links `links[ptr[t]:ptr[t + 1]]`, in path order (none when src == dst).
            ValueError for a pair with no path.
        """
        n_t = len(src)
        tid = np.arange(n_t)
        cur = src.copy()
        hop_t, hop_l = [], []
        active = cur != dst
        for _ in range(topo.n_nodes):
            if not active.any():
                break
            t = tid[active]
            ln = self.next_link[cur[active], dst[active]]
            if (ln < 0).any():
                bad = int(t[np.flatnonzero(ln < 0)[0]])
                raise ValueError(f"no path from node {src[bad]} to node {dst[bad]}")
            hop_t.append(t)
            hop_l.append(ln)
            cur[active] = topo.link_dst[ln]
            active = cur != dst
        return csr_from_hops(n_t, hop_t, hop_l)
