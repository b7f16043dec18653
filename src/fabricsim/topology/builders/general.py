"""Any topology from an edge list, routed by fewest hops (e.g. direct-connect designs)."""

from __future__ import annotations

import numpy as np

from ..graph import ShortestPathRouter, Topology


def from_edges(name: str, n_npus: int, n_switches: int, src, dst, bandwidth, latency,
               *, bidirectional: bool = True, can_reduce=None) -> Topology:
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
