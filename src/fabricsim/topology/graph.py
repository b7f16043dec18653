"""The Topology: who is wired to whom, and how messages are routed.

NPUs are nodes `0..n_npus-1`; switches follow. Links are directed, each with a bandwidth
(bytes/s) and a latency (s), stored as numpy arrays. A router turns arrays of (src, dst) pairs
into paths (CSR: `ptr`, `links`), vectorized over all pairs: the network models route a whole
step at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..units import format_bandwidth


class Router(Protocol):
    """What a topology's router does: route arrays of (src, dst) pairs at once."""

    def route(self, topo: Topology, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Paths of every (src, dst), all at once.

        Parameters
        ----------
        topo : Topology
            The topology routed on (its link arrays and dims).
        src, dst : int64 arrays [T]
            Nodes of each transfer.

        Returns
        -------
        ptr : int64 array [T + 1]
        links : int64 array
            Transfer t uses links `links[ptr[t]:ptr[t+1]]`, in order. ValueError for a pair the
            router cannot route.
        """
        ...


@dataclass(frozen=True, eq=False)
class Topology:
    """A network: NPUs `0..n_npus-1`, then switches (and I/O controllers); directed links as
    numpy arrays; a router.

    Parameters
    ----------
    name : str
        The spec string it was built from (`torus:8x8`), for reports.
    n_npus : int
        Number of NPUs (nodes 0..n_npus-1).
    link_src, link_dst : int arrays [L]
        Nodes each directed link leaves and enters.
    link_bw : float array [L]
        Bandwidth per link and direction, bytes/s.
    link_lat : float array [L]
        Latency per link, s.
    router : Router
        `route(topo, src, dst) -> (ptr, links)`, vectorized (CSR paths).
    n_switches : int
        Nodes after the NPUs (switches, I/O controllers).
    dims : tuple of int
        Logical NPU shape, dimension 0 fastest (default: flat, (n_npus,)).
    link_dim : int array [L]
        Dimension each link belongs to (-1: none); phases of a collective are runs of steps on
        the same dimensions.
    can_reduce, can_multicast : bool arrays [n_nodes]
        Switches that reduce / multicast in the network (in-network collectives).
    io_nodes : int array
        I/O controller nodes (weight streaming, input loading); empty when there are none.
    io_attach : int array
        The node each I/O controller is linked to (same length as `io_nodes`).
    ring_order : int array or None
        The NPUs in the order a logical ring should visit them (a wafer's Hamiltonian cycle);
        None: rank order.
    switch_dim : int array or None
        For stacks: the dimension each switch (node n_npus + i) serves.
    dim_kinds : tuple of str
        For stacks: the building block of each dimension (ring, uniring, line, fc, switch).
    leaf_of : int array or None
        For trees of switches (switch, fat-tree, FRED's fabric): the switch each NPU hangs off.
    jumps : tuple of int
        For circulant direct-connect topologies (TopoOpt): the ring jumps p wired as links
        i -> i + p (mod n_npus), in (0, n_npus); the `circulant_rings` all-reduce builds its rings
        from them. Empty otherwise.
    node_gpus, node_nics : int
        For clusters of scale-up nodes (`dgx`): accelerators per node (NPU k * node_gpus + g is GPU g
        of node k) and NICs per node (GPU g uses NIC g * node_nics // node_gpus); 0: not a cluster.
    link_class : int array [L] or None
        Class of each link (an index into `link_classes`, -1: none), e.g. nvlink, pcie, nic, fabric.
    gpu_sm : int
        GPU generation of a cluster's GPUs as compute capability x 10 (80: A100, 90: H100; 0: not
        stated), which NCCL's tuner reads (`network.nccl`).
    link_classes : tuple of str
        Names of the link classes.
    reduce_link : int array [n_nodes] or None
        For switches that reduce at a limited rate: the link id of the switch's reduction unit (a
        self-loop whose bandwidth is the reduction throughput, bytes/s of reduced output); a stream
        reduced at that switch crosses it. -1 (or None): unlimited.
    """

    name: str
    n_npus: int
    link_src: np.ndarray  # int64[L]
    link_dst: np.ndarray  # int64[L]
    link_bw: np.ndarray  # float64[L], bytes/s
    link_lat: np.ndarray  # float64[L], s
    router: Router
    n_switches: int = 0
    dims: tuple[int, ...] = ()  # logical NPU shape, dimension 0 fastest; () = flat (n_npus,)
    link_dim: np.ndarray | None = None  # int64[L]: dimension a link belongs to (-1: none)
    can_reduce: np.ndarray | None = None  # bool[n_nodes]: switch can reduce in the network
    can_multicast: np.ndarray | None = None  # bool[n_nodes]: switch can multicast
    io_nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    io_attach: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ring_order: np.ndarray | None = None
    switch_dim: np.ndarray | None = None
    dim_kinds: tuple[str, ...] = ()
    leaf_of: np.ndarray | None = None
    jumps: tuple[int, ...] = ()
    node_gpus: int = 0
    node_nics: int = 0
    link_class: np.ndarray | None = None
    link_classes: tuple[str, ...] = ()
    reduce_link: np.ndarray | None = None
    gpu_sm: int = 0

    def __post_init__(self):
        n = self.n_nodes
        for name, dtype in (("link_src", np.int64), ("link_dst", np.int64), ("link_bw", float), ("link_lat", float)):
            a = np.ascontiguousarray(getattr(self, name), dtype=dtype)
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        L = len(self.link_src)
        if not (len(self.link_dst) == len(self.link_bw) == len(self.link_lat) == L):
            raise ValueError("Topology: link arrays differ in length")
        if L and (min(self.link_src.min(), self.link_dst.min()) < 0 or max(self.link_src.max(), self.link_dst.max()) >= n):
            raise ValueError("Topology: a link names a node that does not exist")
        if not self.dims:
            object.__setattr__(self, "dims", (self.n_npus,))
        if int(np.prod(self.dims)) != self.n_npus:
            raise ValueError("Topology: dims do not multiply to n_npus")
        if self.link_dim is None:
            object.__setattr__(self, "link_dim", np.full(L, -1, dtype=np.int64))
        for name in ("can_reduce", "can_multicast"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, np.zeros(n, dtype=bool))
        if self.link_class is not None and len(self.link_class) != L:
            raise ValueError("Topology: link_class and the link arrays differ in length")
        for name in ("io_nodes", "io_attach", "ring_order", "switch_dim", "leaf_of", "link_class", "reduce_link"):
            a = getattr(self, name)
            if a is not None:
                a = np.array(a, dtype=np.int64)
                a.setflags(write=False)
                object.__setattr__(self, name, a)
        if len(self.io_nodes) != len(self.io_attach):
            raise ValueError("Topology: io_nodes and io_attach differ in length")
        object.__setattr__(self, "jumps", tuple(sorted({int(j) % self.n_npus for j in self.jumps} - {0})))
        if self.ring_order is not None and sorted(self.ring_order.tolist()) != list(range(self.n_npus)):
            raise ValueError("Topology: ring_order is not a permutation of the NPUs")

    @property
    def n_nodes(self) -> int:
        """NPUs plus switches (and I/O controllers)."""
        return self.n_npus + self.n_switches

    @property
    def n_links(self) -> int:
        """Directed links."""
        return len(self.link_src)

    @property
    def has_reduction_units(self) -> bool:
        """Whether some switch reduces through a unit of limited throughput (`reduce_link`), which
        the reducing transfers of one `route_reducing` call share."""
        return self.reduce_link is not None and bool((self.reduce_link >= 0).any())

    def route(self, src, dst) -> tuple[np.ndarray, np.ndarray]:
        """Paths of transfers from `src[t]` to `dst[t]`, all routed at once.

        Parameters
        ----------
        src, dst : int sequences [T]
            Nodes (NPUs; switches or I/O controllers where the router allows it).

        Returns
        -------
        ptr : int64 array [T + 1]
            Transfer t uses links `links[ptr[t]:ptr[t + 1]]` (empty when src == dst).
        links : int64 array
            Link ids, in path order.

        Examples
        --------
        >>> from fabricsim.topology import torus
        >>> ptr, links = torus((4, 4), 50e9, 1e-7).route([0], [10])   # (0, 0) -> (2, 2)
        >>> int(ptr[1])
        4
        """
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        return self.router.route(self, src, dst)

    def route_reducing(self, src, dst, reduce, output=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Paths as `route` gives them, where a transfer reduced into a switch with a limited
        reduction throughput (`reduce_link`) also crosses that switch's reduction unit (last).

        The unit's bandwidth is bytes of reduced output per second: the k transfers of one call
        reduced into the same output of a switch share it, so each uses the unit at weight 1/k.

        Parameters
        ----------
        src, dst : int sequences [T]
            Nodes of each transfer (one step: transfers that are reduced together).
        reduce : bool sequence [T]
            Whether each transfer is reduced at its destination.
        output : int sequence [T], optional
            What each transfer reduces into (its first block id): transfers into one switch with the
            same output share it (default: all of a switch's inputs share one).

        Returns
        -------
        ptr : int64 array [T + 1]
        links : int64 array
            As `route`, with the unit's link appended to the paths of reducing transfers into a
            switch that has one (no change on a topology without reduction units).
        weight : float array
            Per `links` entry: link use per byte of the transfer (1, and 1/k on a unit).
        """
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        ptr, links = self.route(src, dst)
        unit = np.full(len(dst), -1, dtype=np.int64)
        if self.reduce_link is not None and len(dst):
            unit = np.where(np.asarray(reduce, dtype=bool), self.reduce_link[dst], -1)
        add = unit >= 0
        if not add.any():
            return ptr, links, np.ones(len(links))
        key = dst[add] if output is None else dst[add] * (int(np.max(output)) + 2) + np.asarray(output)[add] + 1
        _, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
        inputs = counts[inv]
        hops = np.diff(ptr)
        tid = np.concatenate([np.repeat(np.arange(len(dst)), hops), np.flatnonzero(add)])
        order = np.argsort(tid, kind="stable")  # the unit after the path's own links
        new_ptr = np.zeros(len(dst) + 1, dtype=np.int64)
        np.cumsum(hops + add, out=new_ptr[1:])
        weight = np.concatenate([np.ones(len(links)), 1.0 / inputs])
        return new_ptr, np.concatenate([links, unit[add]])[order], weight[order]

    def coords(self, ranks) -> np.ndarray:
        """Coordinates (..., D) of NPU ranks in `dims`, dimension 0 fastest.

        Parameters
        ----------
        ranks : int array-like
            NPU ranks.

        Returns
        -------
        int64 array, shape ranks.shape + (len(dims),)
        """
        ranks = np.asarray(ranks, dtype=np.int64)
        out = np.empty(ranks.shape + (len(self.dims),), dtype=np.int64)
        stride = 1
        for d, size in enumerate(self.dims):
            out[..., d] = (ranks // stride) % size
            stride *= size
        return out

    def rank_of(self, coords) -> np.ndarray:
        """NPU ranks of coordinates (..., D) in `dims` (the inverse of `coords`).

        Parameters
        ----------
        coords : int array-like, shape (..., len(dims))

        Returns
        -------
        int64 array, shape coords.shape[:-1]
        """
        coords = np.asarray(coords, dtype=np.int64)
        stride, out = 1, np.zeros(coords.shape[:-1], dtype=np.int64)
        for d, size in enumerate(self.dims):
            out += coords[..., d] * stride
            stride *= size
        return out

    def describe(self) -> str:
        """One line for reports: name, NPUs, switches, links and their bandwidth, dims.

        Returns
        -------
        str
        """
        bw = np.unique(self.link_bw)
        bw_text = format_bandwidth(bw[0]) if len(bw) == 1 else f"{format_bandwidth(bw[0])}..{format_bandwidth(bw[-1])}"
        return (f"{self.name}: {self.n_npus} NPUs, {self.n_switches} switches, {self.n_links} directed links"
                + (f" of {bw_text}" if len(bw) else "")
                + (f", dims {'x'.join(map(str, self.dims))}" if len(self.dims) > 1 else ""))


# ---- routers -------------------------------------------------------------------------------


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
