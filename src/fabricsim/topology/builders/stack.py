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
    kinds, dims = tuple(kinds), tuple(int(d) for d in dims)
    if len(kinds) != len(dims) or not dims:
        raise ValueError("stack: kinds and dims differ in length")
    for k in kinds:
        if k not in KINDS:
            raise ValueError(f"stack: unknown dimension kind {k!r}")
    D = len(dims)
    bw, lat = _per_dim(bandwidth, D, "bandwidth"), _per_dim(latency, D, "latency")
    n = int(np.prod(dims))
    ranks = np.arange(n)
    strides = np.cumprod((1,) + dims[:-1])
    coords = np.stack([(ranks // strides[d]) % dims[d] for d in range(D)], axis=1)

    src, dst, lbw, llat, ldim = [], [], [], [], []
    n_links = 0

    def add(s, t, d):
        nonlocal n_links
        s = np.asarray(s, dtype=np.int64)
        ids = np.arange(n_links, n_links + len(s))
        src.append(s)
        dst.append(np.asarray(t, dtype=np.int64))
        lbw.append(np.full(len(s), bw[d]))
        llat.append(np.full(len(s), lat[d]))
        ldim.append(np.full(len(s), d))
        n_links += len(s)
        return ids

    step_link = np.full((n, D, 2), -1, dtype=np.int64)
    fc_link: list = [None] * D
    up_link = np.full((n, D), -1, dtype=np.int64)
    down_link = np.full((n, D), -1, dtype=np.int64)
    n_switches = 0
    sw_dim: list[int] = []
    for d, (kind, size) in enumerate(zip(kinds, dims)):
        if size == 1:
            continue
        c = coords[:, d]
        if kind in ("ring", "uniring", "line"):
            plus = ranks + (((c + 1) % size) - c) * strides[d]
            minus = ranks + (((c - 1) % size) - c) * strides[d]
            has_plus = np.ones(n, bool) if kind != "line" else c < size - 1
            has_minus = (np.ones(n, bool) if size > 2 else np.zeros(n, bool)) if kind == "ring" else (c > 0 if kind == "line" else np.zeros(n, bool))
            step_link[has_plus, d, 0] = add(ranks[has_plus], plus[has_plus], d)
            step_link[has_minus, d, 1] = add(ranks[has_minus], minus[has_minus], d)
            if kind == "ring" and size == 2:
                step_link[:, d, 1] = step_link[:, d, 0]
        elif kind == "fc":
            table = np.full((n, size), -1, dtype=np.int64)
            for k in range(size):
                m = c != k
                peer = ranks[m] + (k - c[m]) * strides[d]
                table[m, k] = add(ranks[m], peer, d)
            fc_link[d] = table
        else:  # switch: one per line along d
            line = (ranks // (strides[d] * size)) * strides[d] + ranks % strides[d]
            sw = n + n_switches + line
            up_link[:, d] = add(ranks, sw, d)
            down_link[:, d] = add(sw, ranks, d)
            n_lines = n // size
            n_switches += n_lines
            sw_dim += [d] * n_lines
    cat = lambda parts, dt: np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt)  # noqa: E731
    n_nodes = n + n_switches
    can_reduce = np.zeros(n_nodes, bool)
    can_mc = np.zeros(n_nodes, bool)
    can_reduce[n:] = switch_reduce
    can_mc[n:] = switch_reduce if switch_multicast is None else switch_multicast
    router = DimensionOrderRouter(kinds, step_link, tuple(fc_link), up_link, down_link)
    link_dst = cat(dst, np.int64)
    # one switch dimension: the switch each NPU hangs off (a tree of height one)
    leaf_of = link_dst[up_link[:, 0]] if D == 1 and kinds[0] == "switch" and dims[0] > 1 else None
    return Topology(
        name or "stack:" + "x".join(f"{k}{s}" for k, s in zip(kinds, dims)),
        n,
        cat(src, np.int64),
        link_dst,
        cat(lbw, float),
        cat(llat, float),
        router,
        n_switches=n_switches,
        dims=dims,
        link_dim=cat(ldim, np.int64),
        can_reduce=can_reduce,
        can_multicast=can_mc,
        switch_dim=np.array(sw_dim, dtype=np.int64), dim_kinds=kinds,
        leaf_of=leaf_of,
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
