"""direct: any graph from a list of links, routed by fewest hops (direct-connect designs such as
the topologies an optical topology optimizer generates)."""

from __future__ import annotations

import numpy as np
from pydantic import Field, StrictInt, field_validator, model_validator

from ...errors import ConfigError
from ...units import parse_bandwidth, parse_time
from ..defaults import DEFAULT_BANDWIDTH, DEFAULT_LATENCY
from ..family import Bool, Int, LinkValues, Params, TopologyFamily, check_link_value, check_size
from ..graph import ShortestPathRouter, Topology


def _per_edge(value, parse, field: str, n_edges: int) -> np.ndarray:
    """Bandwidths or latencies for `from_edges`: one value or one per edge, numbers (SI) or
    strings with units, within `check_link_value`'s range; a one-line ConfigError naming `field`
    otherwise."""
    one_per = f"accepted: one value or one per edge ({n_edges})"
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
        arr = np.asarray(value, dtype=float).reshape(-1) if value.ndim <= 1 else None
        if arr is None:
            raise ConfigError(field, f"an array of shape {value.shape}", one_per)
        # vectorized: only a non-finite value or the smallest can be refused; parse names it
        for v in arr[~np.isfinite(arr)][:1].tolist() or arr.min(initial=np.inf, keepdims=True)[:len(arr)].tolist():
            parse(v, field)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool) or isinstance(value, np.number):
        arr = np.array([parse(value.item() if isinstance(value, np.number) else value, field)])
    else:
        try:
            items = list(value)
        except TypeError:
            raise ConfigError(field, value, one_per) from None
        arr = np.array([parse(v.item() if isinstance(v, np.generic) else v, field) for v in items], dtype=float)
    if len(arr):  # the extremes stand for all: one out of range is named
        for v in (float(arr.min()), float(arr.max())):
            check_link_value(v, field, v)
    if len(arr) == 1:
        arr = np.repeat(arr, n_edges)
    if len(arr) != n_edges:
        raise ConfigError(field, f"{len(arr)} values", one_per)
    return arr


def from_edges(src, dst, *, n_npus: int, n_switches: int = 0, name: str | None = None,
               bandwidth=DEFAULT_BANDWIDTH, latency=DEFAULT_LATENCY, bidirectional: bool = True,
               can_reduce=None) -> Topology:
    """A topology from an edge list, with fewest-hop routing (`ShortestPathRouter`).

    Parameters
    ----------
    src, dst : sequences of int
        Edge i joins node src[i] to node dst[i] (nodes 0..n_npus+n_switches-1).
    n_npus : int
        NPUs: nodes 0..n_npus-1 (keyword only, as everything after the edges).
    n_switches : int
        Further nodes after the NPUs (switches).
    name : str, optional
        The topology's name (default `direct:<n_npus>`).
    bandwidth : str, float or sequence
        Per link and direction, bytes/s or with units (`50GB/s`, `400Gbps`); one value or one per
        edge (default `DEFAULT_BANDWIDTH`, 400Gbps).
    latency : str, float or sequence
        Per link, s or with units (`100ns`); one value or one per edge (default `DEFAULT_LATENCY`,
        100ns).
    bidirectional : bool
        Each edge is a link both ways (links 0..E-1 forward, E..2E-1 back); False: src -> dst only.
    can_reduce : bool sequence [n_npus + n_switches], optional
        Nodes that reduce and multicast in the network.

    Returns
    -------
    Topology
        Routed along fewest hops; among parallel links the lowest id, so a parallel link adds no
        capacity to routed traffic. ConfigError (one line naming the parameter) for a bad value,
        or beyond the `npus`, `links` or `route_table` limit (checked before the routing table,
        nodes x nodes, is allocated).

    Examples
    --------
    >>> t = from_edges([0, 1, 2, 3], [1, 2, 3, 0], n_npus=4, bandwidth="50GB/s", latency="100ns")
    >>> t.n_links, [int(h) for h in np.diff(t.route([0, 0], [1, 2])[0])], float(t.link_bw[0])
    (8, [1, 2], 50000000000.0)
    """
    if isinstance(n_npus, bool) or not isinstance(n_npus, (int, np.integer)) or n_npus < 1:
        raise ConfigError("n_npus", n_npus, "accepted: an integer >= 1")
    if isinstance(n_switches, bool) or not isinstance(n_switches, (int, np.integer)) or n_switches < 0:
        raise ConfigError("n_switches", n_switches, "accepted: an integer >= 0")
    n = int(n_npus) + int(n_switches)
    n_links = (2 if bidirectional else 1) * (len(src) if hasattr(src, "__len__") else 0)
    check_size(int(n_npus), n_links, "topology", f"direct:{n_npus}" if name is None else name, n * n)
    ends = []
    for field, value in (("src", src), ("dst", dst)):
        try:
            a = np.asarray(value)
            ok = a.ndim == 1 and (a.dtype.kind in "iu" or (len(a) == 0 and a.dtype.kind == "f"))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ConfigError(field, value, "accepted: a sequence of node ids (integers)")
        a = a.astype(np.int64)
        if len(a) and (a.min() < 0 or a.max() >= n):
            raise ConfigError(field, int(a[(a < 0) | (a >= n)][0]), f"accepted: node ids 0..{n - 1}")
        ends.append(a)
    src, dst = ends
    if len(src) != len(dst):
        raise ConfigError("dst", f"{len(dst)} nodes", f"accepted: one per entry of src ({len(src)})")
    bw = _per_edge(bandwidth, parse_bandwidth, "bandwidth", len(src))
    lat = _per_edge(latency, parse_time, "latency", len(src))
    if bidirectional:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        bw, lat = np.concatenate([bw, bw]), np.concatenate([lat, lat])
    router = ShortestPathRouter.build(n, src, dst)
    cr = np.zeros(n, bool) if can_reduce is None else np.asarray(can_reduce, bool)
    return Topology(f"direct:{n_npus}" if name is None else name, int(n_npus), src, dst, bw, lat, router,
                    n_switches=int(n_switches), can_reduce=cr, can_multicast=cr.copy())


class DirectParams(Params):
    """direct's parameters.

    Parameters
    ----------
    n : int
        NPUs, >= 2 (nodes 0..n-1).
    links : sequence of (int, int)
        Links (src, dst) between distinct nodes 0..n+switches-1; with `bidirectional`, they
        connect every NPU to every other (directly or through other nodes; checked when built).
        A pair given twice is two parallel links (routing uses the first). A list of pairs or an
        int array of shape (E, 2).
    switches : int
        Nodes after the NPUs (switches), >= 0.
    bidirectional : bool
        Each link both ways (default); False: only src -> dst, and a pair of NPUs without a
        path is an error only when routed.
    """

    n: Int = Field(ge=2)
    links: tuple[tuple[StrictInt, StrictInt], ...] = Field(min_length=1)  # strict in pydantic's core: fast
    switches: Int = Field(default=0, ge=0)
    bidirectional: Bool = True

    @field_validator("links", mode="before")
    @classmethod
    def _array(cls, v):
        # an (E, 2) array as plain ints: 128 pairs validate in 0.04 ms instead of 0.27 ms; an integer
        # array only (a float array would be coerced)
        if isinstance(v, np.ndarray):
            if v.dtype.kind not in "iu":
                raise ConfigError("links", f"an array of {v.dtype}", "accepted: integer node ids")
            return v.tolist()
        return v

    @model_validator(mode="after")
    def _nodes(self):
        top = self.n + self.switches
        for a, b in self.links:
            if not (0 <= a < top and 0 <= b < top) or a == b:
                raise ConfigError("links", [a, b], f"accepted: links between distinct nodes 0..{top - 1}")
        return self


def _build(p: DirectParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    links = np.array(p.links, dtype=np.int64)
    t = from_edges(links[:, 0], links[:, 1], n_npus=p.n, n_switches=p.switches, name=f"direct:{p.n}",
                   bandwidth=bandwidth.one(), latency=latency.one(), bidirectional=p.bidirectional)
    # links both ways: the NPUs must be connected (a collective over all NPUs routes between any
    # two); one-way links may leave pairs without a path on purpose (routing them is an error)
    cut = t.router.next_link[: p.n, : p.n] < 0
    np.fill_diagonal(cut, False)
    if p.bidirectional and cut.any():
        a, b = (int(x[0]) for x in np.nonzero(cut))
        raise ConfigError("topology direct: links", f"{len(p.links)} links", f"no path from NPU {a} to NPU {b}; "
                          "accepted: links that connect every NPU to every other (directly or through other nodes)")
    return t


FAMILY = TopologyFamily("direct", "{family: direct, n: 4, links: [[0, 1], [1, 2], [2, 3], [3, 0]]}",
                        "NPUs wired by a list of links (direct-connect), fewest-hop routing; from a mapping or "
                        "build_topology", DirectParams, None, _build,
                        size=lambda p: (p.n, (2 if p.bidirectional else 1) * len(p.links)),
                        table=lambda p: (p.n + p.switches) ** 2)
