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

import re
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from ...errors import ConfigError
from ..family import (
    MAX_DIMS,
    Bool,
    Int,
    LinkValues,
    Params,
    TopologyFamily,
    check_size,
    grid_links,
    parse_flags,
    parse_int,
)
from ..graph import DimensionOrderRouter, Topology

KINDS = ("ring", "uniring", "line", "fc", "switch")


def _per_dim(value, ndim: int, what: str) -> list[float]:
    """One value per dimension from one value or a sequence of `ndim`."""
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
        """Links s[i] -> t[i] in dimension d, with its bandwidth and latency; returns their ids."""
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
        """The + and - neighbour links of a ring, one-way ring or line along d."""
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
        """A link between every ordered pair of NPUs of each line along d."""
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
        """One column of the links appended so far, as an array."""
        parts = self.cols[name]
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    def topology(self, name: str, switch_reduce: bool, switch_multicast: bool | None) -> Topology:
        """The Topology of the links added, routed dimension by dimension."""
        n, n_nodes = self.n, self.n + self.n_switches
        can_reduce = np.zeros(n_nodes, bool)
        can_mc = np.zeros(n_nodes, bool)
        can_reduce[n:] = switch_reduce
        can_mc[n:] = switch_reduce if switch_multicast is None else switch_multicast
        router = DimensionOrderRouter(self.kinds, self.step_link, tuple(self.fc_link), self.up_link, self.down_link)
        link_dst = self.array("dst", np.int64)
        # one switch dimension: the switch each NPU hangs off (a tree of height one)
        one_switch = len(self.dims) == 1 and self.kinds[0] == "switch" and self.dims[0] > 1
        leaf_of = link_dst[self.up_link[:, 0]] if one_switch else None
        return Topology(
            name, n, self.array("src", np.int64), link_dst, self.array("bw", float), self.array("lat", float), router,
            n_switches=self.n_switches, dims=self.dims, link_dim=self.array("dim", np.int64), can_reduce=can_reduce,
            can_multicast=can_mc, switch_dim=np.array(self.sw_dim, dtype=np.int64), dim_kinds=self.kinds,
            leaf_of=leaf_of,
        )


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
        NPUs per dimension, dimension 0 fastest (a size-1 dimension adds no links).
    bandwidth : float or sequence of float
        Per link and direction, bytes/s; one value or one per dimension.
    latency : float or sequence of float
        Per link, s; one value or one per dimension.
    name : str, optional
        The topology's name (default: stack:KIND+SIZE x ...).
    switch_reduce : bool
        The switches reduce in the network.
    switch_multicast : bool, optional
        The switches multicast; default: as `switch_reduce`.

    Returns
    -------
    Topology
        With dimension-order routing (`DimensionOrderRouter`); `switch_dim` names the dimension
        of each switch, `dim_kinds` the kinds. ConfigError naming `topology` beyond the `npus`
        or `links` limit (`grid_links` counts them before anything is allocated).

    Examples
    --------
    >>> t = stack(("ring", "switch"), (4, 8), [200e9, 50e9], [5e-8, 5e-7])
    >>> t.n_npus, t.n_switches, t.n_links   # 32 x 2 ring links, 4 switches of 8 with 2 x 32 links
    (32, 4, 128)
    """
    kinds, dims = tuple(kinds), tuple(int(d) for d in dims)
    if len(kinds) != len(dims) or not dims:
        raise ValueError("stack: kinds and dims differ in length")
    for k in kinds:
        if k not in KINDS:
            raise ValueError(f"stack: unknown dimension kind {k!r}")
    if min(dims) < 1 or len(dims) > MAX_DIMS:
        raise ValueError(f"stack: dims must be >= 1, at most {MAX_DIMS} of them")
    name = name or "stack:" + "x".join(f"{k}{s}" for k, s in zip(kinds, dims))
    check_size(*grid_links(kinds, dims), "topology", name)  # before any array is allocated
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
    return L.topology(name, switch_reduce, switch_multicast)


# ---- the stack family: ASTRA-sim style stacks from a spec string or typed parameters -----------------


class StackParams(Params):
    """stack's parameters.

    Parameters
    ----------
    kinds : tuple of str
        The building block of each dimension: ring, uniring, line, fc or switch (ASTRA-sim's Ring,
        FullyConnected, Switch are ring, fc, switch).
    dims : tuple of int
        NPUs per dimension (>= 2 each), dimension 0 fastest; as many as `kinds`, at most 64.
    reduce : bool
        The switches reduce and multicast (in-network collectives); needs a switch dimension.
    """

    kinds: tuple[Literal["ring", "uniring", "line", "fc", "switch"], ...] = Field(min_length=1)
    dims: tuple[Int, ...] = Field(min_length=1)
    reduce: Bool = False

    @model_validator(mode="after")
    def _same_length(self):
        if len(self.dims) > MAX_DIMS:
            raise ConfigError("dims", f"{len(self.dims)} dimensions", f"accepted: at most {MAX_DIMS} dimensions")
        if len(self.kinds) != len(self.dims):
            raise ConfigError("dims", list(self.dims), f"accepted: one size per kind ({len(self.kinds)} kinds)")
        if any(d < 2 for d in self.dims):
            raise ConfigError("dims", list(self.dims), "accepted: every dimension >= 2 NPUs")
        if self.reduce and "switch" not in self.kinds:  # no switch would reduce: the flag would do nothing
            raise ConfigError("reduce", True, "accepted: reduce with a Switch dimension (the switches reduce)")
        return self


_SPEC_KINDS = {"ring": "ring", "r": "ring", "fullyconnected": "fc", "fc": "fc", "switch": "switch", "sw": "switch"}
_NAMES = {"ring": "Ring", "uniring": "UniRing", "line": "Line", "fc": "FullyConnected", "switch": "Switch"}


def _parse(spec: str, shape: str, opts: list[str]) -> dict:
    f = parse_flags(opts, {"reduce"}, spec)
    kinds, dims = [], []
    parts = re.split(r"[xX]", shape)
    if len(parts) > MAX_DIMS:
        raise ConfigError("topology", spec, f"{len(parts)} dimensions; accepted: at most {MAX_DIMS}")
    for part in parts:
        m = re.fullmatch(r"([A-Za-z]+)\(?(\d+)\)?", part.strip())
        if not m or m.group(1).lower() not in _SPEC_KINDS:
            raise ConfigError("topology", spec, "accepted: stack:Ring4xFullyConnected8xSwitch4 (Ring, FullyConnected, Switch per dimension)")
        kinds.append(_SPEC_KINDS[m.group(1).lower()])
        dims.append(parse_int(m.group(2), spec))
    if any(d < 2 for d in dims):
        raise ConfigError("topology", spec, "accepted: every stacked dimension has at least 2 NPUs")
    if "reduce" in f and "switch" not in kinds:
        raise ConfigError("topology", spec, "reduce without a Switch dimension: no switch would reduce; accepted: "
                                            "reduce with a Switch dimension, e.g. stack:Ring4xSwitch8,reduce")
    return {"kinds": tuple(kinds), "dims": tuple(dims), "reduce": "reduce" in f}


def _build(p: StackParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    name = "stack:" + "x".join(f"{_NAMES[k]}{d}" for k, d in zip(p.kinds, p.dims))
    return stack(p.kinds, p.dims, bandwidth.per_dim(len(p.dims)), latency.per_dim(len(p.dims)), name=name,
                 switch_reduce=p.reduce)


FAMILY = TopologyFamily("stack", "stack:Ring4xSwitch8", "ASTRA-sim multi-dimensional stack of Ring/FullyConnected/Switch",
                        StackParams, _parse, _build, ("astra",), size=lambda p: grid_links(p.kinds, p.dims))
