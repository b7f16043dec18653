"""FRED's switch fabric (ISCA'25): NPUs on L1 switches under one L2 switch, I/O controllers on the
L1 switches; switches that reduce and multicast for Fred-B/D.

`fred_fabric(groups, per_group, ...)`: NPUs on L1 switches (`per_group` NPUs each; NPU i on L1
switch i // per_group), L1 switches on one L2 switch (`up_bandwidth` per L1, each direction), I/O
controllers spread over the L1 switches (round robin). Switches reduce and multicast when
`reduce` is set (Fred-B, Fred-D). Nodes: NPUs, L1 switches, the L2 switch, I/O controllers.
Paths are the unique tree paths (`topology.tree_paths.ParentTreeRouter`: parent pointers, no
nodes x nodes table, so a 256 x 256 fabric routes at once).
"""

from __future__ import annotations

import numpy as np
from pydantic import Field, field_validator, model_validator

from ...errors import ConfigError
from ...units import parse_bandwidth
from ..family import (
    Bool,
    Int,
    LinkValues,
    Params,
    TopologyFamily,
    bandwidth_field,
    check_size,
    parse_flags,
    parse_int,
    parse_shape,
)
from ..graph import Topology
from ..tree_paths import ParentTreeRouter


def fred_size(groups: int, per_group: int, io_controllers: int = 18) -> tuple[int, int, int]:
    """NPUs, directed links and routing-table entries of FRED's fabric, counted without building it.

    Parameters
    ----------
    groups, per_group : int
        L1 switches and NPUs per L1 switch.
    io_controllers : int
        I/O controllers.

    Returns
    -------
    (int, int, int)
        n = groups x per_group NPUs; 2 (n + groups + io_controllers) links (each edge both ways);
        0 routing-table entries (tree paths from parent pointers).

    Examples
    --------
    >>> fred_size(5, 4)
    (20, 86, 0)
    """
    n = groups * per_group
    return n, 2 * (n + groups + io_controllers), 0


def fred_fabric(groups: int, per_group: int, bandwidth: float, up_bandwidth: float, latency: float, *,
                io_controllers: int = 18, io_bandwidth: float = 128e9, reduce: bool = False,
                up_latency: float | None = None) -> Topology:
    """FRED's switch fabric: `groups` L1 switches of `per_group` NPUs each under one L2 switch,
    I/O controllers on the L1 switches (module doc).

    Parameters
    ----------
    groups : int
        L1 switches.
    per_group : int
        NPUs per L1 switch (NPU i on L1 switch i // per_group).
    bandwidth : float
        NPU-L1 links, per direction, bytes/s.
    up_bandwidth : float
        Each L1-L2 link, per direction, bytes/s.
    latency : float
        NPU-L1 and I/O links, s.
    io_controllers : int
        I/O controllers, spread over the L1 switches round robin.
    io_bandwidth : float
        Each controller's link to its L1 switch, per direction, bytes/s.
    reduce : bool
        The L1 and L2 switches reduce and multicast (Fred-B, Fred-D).
    up_latency : float, optional
        L1-L2 links, s; default `latency`.

    Returns
    -------
    Topology
        Named `fred:GxP`, dims (per_group, groups); nodes: NPUs, L1 switches, the L2 switch, I/O
        controllers; `leaf_of` each NPU's L1, `io_nodes`/`io_attach` the controllers and their
        L1s; the unique tree paths.

    Examples
    --------
    >>> t = fred_fabric(5, 4, 750e9, 12e12, 1e-8)
    >>> t.n_switches, t.n_links   # 5 L1 + 1 L2 + 18 I/O; 2 x (20 + 5 + 18) links
    (24, 86)
    """
    n, n_links, table = fred_size(groups, per_group, io_controllers)
    check_size(n, n_links, "topology", f"fred:{groups}x{per_group}", table)  # before allocating
    l1 = n + np.arange(groups)
    l2 = n + groups
    io = n + groups + 1 + np.arange(io_controllers)
    io_l1 = l1[np.arange(io_controllers) % groups]
    npu = np.arange(n)
    up_lat = latency if up_latency is None else up_latency
    # each edge both ways: NPU-L1, L1-L2, IO-L1
    a = np.concatenate([npu, l1, io])
    b = np.concatenate([l1[npu // per_group], np.full(groups, l2), io_l1])
    bw = np.concatenate([np.full(n, bandwidth), np.full(groups, up_bandwidth), np.full(io_controllers, io_bandwidth)])
    lat = np.concatenate([np.full(n, latency), np.full(groups, up_lat), np.full(io_controllers, latency)])
    src, dst = np.concatenate([a, b]), np.concatenate([b, a])
    bw, lat = np.concatenate([bw, bw]), np.concatenate([lat, lat])
    n_nodes = n + groups + 1 + io_controllers
    half = np.concatenate([np.zeros(n), np.ones(groups), np.full(io_controllers, -1)]).astype(np.int64)
    link_dim = np.concatenate([half, half])  # 0: NPU-L1, 1: L1-L2, -1: I/O
    router = ParentTreeRouter.build(n_nodes, src, dst, root=l2)
    sw = np.zeros(n_nodes, bool)
    sw[n: n + groups + 1] = reduce
    return Topology(f"fred:{groups}x{per_group}", n, src, dst, bw, lat, router, n_switches=groups + 1 + io_controllers,
                    dims=(per_group, groups), link_dim=link_dim,
                    can_reduce=sw, can_multicast=sw.copy(),
                    io_nodes=io, io_attach=io_l1, leaf_of=l1[npu // per_group])


class FredParams(Params):
    """fred's parameters.

    Parameters
    ----------
    groups : int
        L1 switches, >= 1.
    per_group : int
        NPUs per L1 switch, >= 1 (at least 2 NPUs in all).
    up_bandwidth : float or str, optional
        Each L1-L2 link per direction, bytes/s or with units (`12TB/s`); default per_group x
        the NPU bandwidth (no oversubscription).
    io_bandwidth : float or str
        Each I/O controller's link per direction, bytes/s or with units.
    io_controllers : int
        I/O controllers on the L1 switches, >= 0 (0: then no `io_bandwidth`).
    reduce : bool
        The switches reduce and multicast (Fred-B, Fred-D).
    """

    groups: Int = Field(ge=1)
    per_group: Int = Field(ge=1)
    up_bandwidth: float | None = None
    io_bandwidth: float = 128e9
    io_controllers: Int = Field(default=18, ge=0)
    reduce: Bool = False

    _bws = field_validator("up_bandwidth", "io_bandwidth", mode="before")(bandwidth_field)

    @model_validator(mode="after")
    def _two(self):
        if self.groups * self.per_group < 2:
            raise ConfigError("per_group", self.per_group, f"accepted: at least 2 NPUs in all ({self.groups} groups)")
        if self.io_controllers == 0 and "io_bandwidth" in self.model_fields_set:  # it would be ignored
            raise ConfigError("io_bandwidth", self.io_bandwidth, "sets the I/O controllers, and io_controllers is 0; "
                                                                "accepted: io_controllers >= 1, or leave it out")
        return self


def _parse(spec: str, shape: str, opts: list[str]) -> dict:
    f = parse_flags(opts, {"up", "io", "ios", "reduce"}, spec, valued=frozenset({"up", "io", "ios"}))
    dims = parse_shape(shape, spec)
    if len(dims) != 2 or min(dims) < 1 or dims[0] * dims[1] < 2:
        raise ConfigError("topology", spec, "accepted: fred:GROUPSxNPUS_PER_L1, e.g. fred:5x4,up=12TB/s,reduce")
    ios = parse_int(f.get("ios", "18"), spec) if f.get("ios", "18") != "0" else 0
    if ios == 0 and "io" in f:
        raise ConfigError("topology", spec, f"ios=0 (no I/O controllers) contradicts io={f['io']} (their bandwidth); "
                                            "accepted: one of them")
    out = {"groups": dims[0], "per_group": dims[1], "io_controllers": ios, "reduce": "reduce" in f}
    for key, name in (("up", "up_bandwidth"), ("io", "io_bandwidth")):
        if key in f:
            out[name] = parse_bandwidth(f[key], f"topology {key}")
    return out


def _build(p: FredParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    b = bandwidth.one()
    up = p.up_bandwidth if p.up_bandwidth is not None else b * p.per_group
    return fred_fabric(p.groups, p.per_group, b, up, latency.one(), io_controllers=p.io_controllers,
                       io_bandwidth=p.io_bandwidth, reduce=p.reduce)


FAMILY = TopologyFamily("fred", "fred:5x4,up=12TB/s[,reduce]",
                        "FRED: L1 switches of NPUs under one L2 (up = L1-L2 per L1), I/O on L1; reduce = in-network",
                        FredParams, _parse, _build,
                        size=lambda p: fred_size(p.groups, p.per_group, p.io_controllers)[:2])  # no table
