"""Multi-dimensional stacks: ring, mesh, torus, fully connected, switch, and ASTRA-sim's
`[Ring, FullyConnected, Switch]` stacks are all one builder with a building block per dimension.

Rank r has coordinates with dimension 0 fastest. Per dimension kind:
- "ring": bidirectional ring (a torus dimension). Size 2 has one link each way, not two.
- "uniring": one-direction ring.
- "line": mesh dimension, no wrap-around.
- "fc": fully connected: a link per ordered pair in each line, each with the dimension's bandwidth.
- "switch": one switch per line, an up and a down link per NPU.
Each dimension has its own link bandwidth and latency (per direction).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..graph import DimensionOrderRouter, Topology

KINDS = ("ring", "uniring", "line", "fc", "switch")


def _per_dim(value, ndim: int, what: str) -> list[float]:
    vals = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
    if len(vals) == 1:
        vals = vals * ndim
    if len(vals) != ndim:
        raise ValueError(f"{what}: need 1 or {ndim} values, got {len(vals)}")
    return [float(v) for v in vals]


class _Links:
    """Links appended dimension by dimension, with the routing tables that name them."""

    def __init__(self, kinds, dims, bw, lat):
        self.kinds, self.dims, self.bw, self.lat = kinds, dims, bw, lat
        D = len(dims)
        self.n = n = int(np.prod(dims))
        self.ranks = np.arange(n)
        self.strides = np.cumprod((1,) + dims[:-1])
        self.coords = np.stack([(self.ranks // self.strides[d]) % dims[d] for d in range(D)], axis=1)
        self.cols: dict[str, list] = {"src": [], "dst": [], "bw": [], "lat": [], "dim": []}
        self.n_links = 0
        self.step_link = np.full((n, D, 2), -1, dtype=np.int64)
        self.fc_link: list = [None] * D
        self.up_link = np.full((n, D), -1, dtype=np.int64)
        self.down_link = np.full((n, D), -1, dtype=np.int64)
        self.n_switches = 0
        self.sw_dim: list[int] = []

    def add(self, s, t, d) -> np.ndarray:
        s = np.asarray(s, dtype=np.int64)
        ids = np.arange(self.n_links, self.n_links + len(s))
        c = self.cols
        c["src"].append(s)
        c["dst"].append(np.asarray(t, dtype=np.int64))
        c["bw"].append(np.full(len(s), self.bw[d]))
        c["lat"].append(np.full(len(s), self.lat[d]))
        c["dim"].append(np.full(len(s), d))
        self.n_links += len(s)
        return ids

    def ring_like(self, d: int, kind: str, size: int) -> None:
        n, c, r = self.n, self.coords[:, d], self.ranks
        plus = r + (((c + 1) % size) - c) * self.strides[d]
        minus = r + (((c - 1) % size) - c) * self.strides[d]
        has_plus = np.ones(n, bool) if kind != "line" else c < size - 1
        if kind == "ring":
            has_minus = np.ones(n, bool) if size > 2 else np.zeros(n, bool)
        else:
            has_minus = c > 0 if kind == "line" else np.zeros(n, bool)
        self.step_link[has_plus, d, 0] = self.add(r[has_plus], plus[has_plus], d)
        self.step_link[has_minus, d, 1] = self.add(r[has_minus], minus[has_minus], d)
        if kind == "ring" and size == 2:
            self.step_link[:, d, 1] = self.step_link[:, d, 0]

    def fully_connected(self, d: int, size: int) -> None:
        c, r = self.coords[:, d], self.ranks
        table = np.full((self.n, size), -1, dtype=np.int64)
        for k in range(size):
            m = c != k
            table[m, k] = self.add(r[m], r[m] + (k - c[m]) * self.strides[d], d)
        self.fc_link[d] = table

    def switches(self, d: int, size: int) -> None:
        """One switch per line along d."""
        r, st = self.ranks, self.strides[d]
        sw = self.n + self.n_switches + (r // (st * size)) * st + r % st
        self.up_link[:, d] = self.add(r, sw, d)
        self.down_link[:, d] = self.add(sw, r, d)
        self.n_switches += self.n // size
        self.sw_dim += [d] * (self.n // size)

    def array(self, name: str, dtype) -> np.ndarray:
        parts = self.cols[name]
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)


def stack(
    kinds: Sequence[str],
    dims: Sequence[int],
    bandwidth,
    latency,
    *,
    name: str | None = None,
    switch_reduce: bool = False,
    switch_multicast: bool | None = None,
) -> Topology:
    """A multi-dimensional stack: one building block per dimension (module doc).

    Parameters
    ----------
    kinds : sequence of str
        ring, uniring, line, fc or switch, per dimension.
    dims : sequence of int
        NPUs per dimension, dimension 0 fastest.
    bandwidth, latency : float or sequence
        Per link and direction, bytes/s and s; one value or one per dimension.
    name : str, optional
        The topology's name (default: stack:KIND+SIZE x ...).
    switch_reduce, switch_multicast : bool
        Whether the switches reduce (and multicast) in the network.

    Returns
    -------
    Topology
        With dimension-order routing (`DimensionOrderRouter`).
    """
    kinds, dims = tuple(kinds), tuple(int(d) for d in dims)
    if len(kinds) != len(dims) or not dims:
        raise ValueError("stack: kinds and dims differ in length")
    for k in kinds:
        if k not in KINDS:
            raise ValueError(f"stack: unknown dimension kind {k!r}")
    D = len(dims)
    L = _Links(kinds, dims, _per_dim(bandwidth, D, "bandwidth"), _per_dim(latency, D, "latency"))
    for d, (kind, size) in enumerate(zip(kinds, dims)):
        if size == 1:
            continue
        if kind in ("ring", "uniring", "line"):
            L.ring_like(d, kind, size)
        elif kind == "fc":
            L.fully_connected(d, size)
        else:
            L.switches(d, size)
    n, n_nodes = L.n, L.n + L.n_switches
    can_reduce = np.zeros(n_nodes, bool)
    can_mc = np.zeros(n_nodes, bool)
    can_reduce[n:] = switch_reduce
    can_mc[n:] = switch_reduce if switch_multicast is None else switch_multicast
    router = DimensionOrderRouter(kinds, L.step_link, tuple(L.fc_link), L.up_link, L.down_link)
    link_dst = L.array("dst", np.int64)
    # one switch dimension: the switch each NPU hangs off (a tree of height one)
    leaf_of = link_dst[L.up_link[:, 0]] if D == 1 and kinds[0] == "switch" and dims[0] > 1 else None
    return Topology(
        name or "stack:" + "x".join(f"{k}{s}" for k, s in zip(kinds, dims)),
        n, L.array("src", np.int64), link_dst, L.array("bw", float), L.array("lat", float), router,
        n_switches=L.n_switches, dims=dims, link_dim=L.array("dim", np.int64), can_reduce=can_reduce,
        can_multicast=can_mc, switch_dim=np.array(L.sw_dim, dtype=np.int64), dim_kinds=kinds, leaf_of=leaf_of,
    )


def ring(n: int, bandwidth, latency, *, bidirectional: bool = True) -> Topology:
    return stack(("ring" if bidirectional else "uniring",), (n,), bandwidth, latency,
                 name=f"ring:{n}" + ("" if bidirectional else ",uni"))


def torus(dims: Sequence[int], bandwidth, latency) -> Topology:
    return stack(("ring",) * len(dims), dims, bandwidth, latency, name="torus:" + "x".join(map(str, dims)))


def mesh(dims: Sequence[int], bandwidth, latency) -> Topology:
    return stack(("line",) * len(dims), dims, bandwidth, latency, name="mesh:" + "x".join(map(str, dims)))


def fully_connected(n: int, bandwidth, latency) -> Topology:
    return stack(("fc",), (n,), bandwidth, latency, name=f"fully-connected:{n}")


def switch(n: int, bandwidth, latency, *, reduce: bool = False, multicast: bool | None = None) -> Topology:
    return stack(("switch",), (n,), bandwidth, latency, name=f"switch:{n}" + (",reduce" if reduce else ""),
                 switch_reduce=reduce, switch_multicast=multicast)
