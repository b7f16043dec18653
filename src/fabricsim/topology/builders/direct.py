"""direct: any graph from a list of links, routed by fewest hops (direct-connect designs such as
the topologies an optical topology optimizer generates)."""

from __future__ import annotations

import numpy as np
from pydantic import Field, field_validator, model_validator

from ...errors import ConfigError
from ..family import LinkValues, Params, TopologyFamily
from ..graph import ShortestPathRouter, Topology


def from_edges(name: str, n_npus: int, n_switches: int, src, dst, bandwidth, latency,
               *, bidirectional: bool = True, can_reduce=None) -> Topology:
    """A topology from an edge list, with fewest-hop routing (`ShortestPathRouter`).

    Parameters
    ----------
    name : str
        The topology's name.
    n_npus : int
        NPUs: nodes 0..n_npus-1.
    n_switches : int
        Further nodes after the NPUs (switches).
    src, dst : sequences of int
        Edge i joins node src[i] to node dst[i].
    bandwidth : float or sequence of float
        Per link and direction, bytes/s; one value or one per edge.
    latency : float or sequence of float
        Per link, s; one value or one per edge.
    bidirectional : bool
        Each edge is a link both ways (links 0..E-1 forward, E..2E-1 back); False: src -> dst only.
    can_reduce : bool sequence [n_npus + n_switches], optional
        Nodes that reduce and multicast in the network.

    Returns
    -------
    Topology
        Routed along fewest hops; among parallel links the lowest id, so a parallel link adds no
        capacity to routed traffic (the next-hop table is built once: about 0.6 ms for 64 NPUs of
        degree 4, half of it in scipy's search).

    Examples
    --------
    >>> t = from_edges("square", 4, 0, [0, 1, 2, 3], [1, 2, 3, 0], 50e9, 1e-7)
    >>> t.n_links, [int(h) for h in np.diff(t.route([0, 0], [1, 2])[0])]
    (8, [1, 2])
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    bw = np.broadcast_to(np.asarray(bandwidth, dtype=float), src.shape)
    lat = np.broadcast_to(np.asarray(latency, dtype=float), src.shape)
    if bidirectional:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        bw, lat = np.concatenate([bw, bw]), np.concatenate([lat, lat])
    n = n_npus + n_switches
    router = ShortestPathRouter.build(n, src, dst)
    cr = np.zeros(n, bool) if can_reduce is None else np.asarray(can_reduce, bool)
    return Topology(name, n_npus, src, dst, bw, lat, router, n_switches=n_switches,
                    can_reduce=cr, can_multicast=cr.copy())


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

    n: int = Field(ge=2)
    links: tuple[tuple[int, int], ...] = Field(min_length=1)
    switches: int = Field(default=0, ge=0)
    bidirectional: bool = True

    @field_validator("links", mode="before")
    @classmethod
    def _array(cls, v):
        # an (E, 2) array as plain ints: 128 pairs validate in 0.04 ms instead of 0.27 ms
        return v.tolist() if isinstance(v, np.ndarray) else v

    @model_validator(mode="after")
    def _nodes(self):
        top = self.n + self.switches
        for a, b in self.links:
            if not (0 <= a < top and 0 <= b < top) or a == b:
                raise ConfigError("links", [a, b], f"accepted: links between distinct nodes 0..{top - 1}")
        return self


def _build(p: DirectParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    links = np.array(p.links, dtype=np.int64)
    t = from_edges(f"direct:{p.n}", p.n, p.switches, links[:, 0], links[:, 1], bandwidth.one(), latency.one(),
                   bidirectional=p.bidirectional)
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
                        "build_topology", DirectParams, None, _build)
