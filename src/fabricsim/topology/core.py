"""The Topology dataclass: NPUs, switches and directed links as numpy arrays, the Router protocol,
and the `Structure` a topology states about its grid and routes.

NPUs are nodes `0..n_npus-1`; switches follow. Links are directed, each with a bandwidth
(bytes/s) and a latency (s). A router (`Router`; the routers themselves are in `routers`) turns
arrays of (src, dst) pairs into paths (CSR: `ptr`, `links`), vectorized over all pairs. Kept apart
from the routers so that they can name `Topology` without an import cycle; both are re-exported by
`topology.graph`.

A router built by a builder states its routing rule and the kind of each dimension (`routing`,
`kinds`); `Topology.structure` gathers them with the grid, and the network models ask it (straight
routes, translations) instead of testing router classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol

import numpy as np

from ..units import format_bandwidth


DIMENSION_ORDER = "dimension-order"
"""`Structure.routing` of `DimensionOrderRouter`: dimensions corrected in order 0, 1, ..., each by its
kind, through the per-dimension link tables `step_link`, `fc_link`, `up_link`, `down_link`."""
WAFER_XY = "wafer-xy"
"""`Structure.routing` of the wafer's `IORouter`: X then Y on a 2-D mesh, an I/O controller's traffic
entering and leaving the mesh perpendicular to its edge."""
STRAIGHT_KINDS = ("ring", "uniring", "line")
"""Dimension kinds whose routes are one straight segment (an interval of the ring or line)."""
TRANSLATION_KINDS = ("ring", "uniring", "fc")
"""Dimension kinds whose route between two coordinates depends only on their offset (mod the size)."""


@dataclass(frozen=True)
class Structure:
    """What a topology states about its grid and routes (`Topology.structure`), as its builder set
    its router: read instead of testing the router's class.

    Parameters
    ----------
    routing : str
        The router's stated rule (`Router.routing`): `DIMENSION_ORDER`, `WAFER_XY`, or "" (none
        stated: routes are known only by routing them).
    kinds : tuple of str
        The building block of each dimension the rule routes over (ring, uniring, line, fc,
        switch), dimension 0 first; empty when no rule is stated.
    grid : tuple of int
        The NPU grid (`Topology.dims`), NPUs per dimension, dimension 0 fastest.
    block : int
        NPUs per block of the router's stated local symmetry (`Router.block_size`,
        `topology.blocks`): routes inside a block stay in it and are alike in every block; 0: none stated.

    Examples
    --------
    >>> from fabricsim.topology import mesh, switch, torus
    >>> torus((4, 4), 50e9, 1e-7).structure.straight_routes, mesh((4, 4), 50e9, 1e-7).structure.translations
    (True, False)
    >>> switch(8, 50e9, 1e-7).structure.straight_routes
    False
    """

    routing: str = ""
    kinds: tuple[str, ...] = ()
    grid: tuple[int, ...] = ()
    block: int = 0

    @property
    def straight_routes(self) -> bool:
        """Every NPU-to-NPU route is a straight segment per dimension: dimension order over ring,
        one-way ring and line dimensions only (each dimension's step links in the router's `step_link`)."""
        return self.routing == DIMENSION_ORDER and all(k in STRAIGHT_KINDS for k in self.kinds)

    @property
    def translations(self) -> bool:
        """Translating both ends of a route by a coordinate offset translates the route (the route
        depends only on the offset): dimension order over ring, one-way ring and fc dimensions only."""
        return self.routing == DIMENSION_ORDER and all(k in TRANSLATION_KINDS for k in self.kinds)


class Router(Protocol):
    """What a topology's router does: route arrays of (src, dst) pairs at once.

    A router may also state its rule (`Structure`): a `routing` name (`DIMENSION_ORDER`,
    `WAFER_XY`) and the `kinds` of the dimensions it routes over; one that states nothing has
    `Structure.routing` "". It may state `block_size(topo) -> int`, the NPUs per block of its local
    symmetry (`topology.blocks`).
    """

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

    @cached_property
    def structure(self) -> Structure:
        """What the topology states about its grid and routes: its router's rule and dimension
        kinds (`Router.routing`, `kinds`; "" and () when the router states none) on `dims`."""
        routing = getattr(self.router, "routing", "")
        kinds = tuple(getattr(self.router, "kinds", ())) if routing else ()
        block = int(self.router.block_size(self)) if hasattr(self.router, "block_size") else 0
        return Structure(routing, kinds, tuple(self.dims), block)

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

