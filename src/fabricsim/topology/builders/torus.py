"""torus: an N-D torus (a ring per dimension), dimension-order routing, shortest direction."""

from __future__ import annotations

from collections.abc import Sequence

from ..family import GridParams, LinkValues, TopologyFamily, grid_links, parse_grid
from ..graph import Topology
from .stack import stack


def torus(dims: Sequence[int], bandwidth, latency) -> Topology:
    """An N-D torus: a bidirectional ring along every dimension (a size-2 dimension has one link
    each way, a size-1 dimension none).

    Parameters
    ----------
    dims : sequence of int
        NPUs per dimension, dimension 0 fastest.
    bandwidth : float or sequence of float
        Per link and direction, bytes/s; one value or one per dimension.
    latency : float or sequence of float
        Per link, s; one value or one per dimension.

    Returns
    -------
    Topology
        Named `torus:AxB...`, dimension-order routing, shortest direction per ring (a half-way
        tie goes +).

    Examples
    --------
    >>> torus((4, 4), 50e9, 1e-7).n_links   # 16 NPUs x 2 dimensions x 2 directions
    64
    """
    return stack(("ring",) * len(dims), dims, bandwidth, latency, name="torus:" + "x".join(map(str, dims)))


def _build(p: GridParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    return torus(p.dims, bandwidth.per_dim(len(p.dims)), latency.per_dim(len(p.dims)))


FAMILY = TopologyFamily("torus", "torus:8x8", "N-D torus (any sizes), dimension-order routing, shortest direction",
                        GridParams, parse_grid, _build,
                        size=lambda p: grid_links(("ring",) * len(p.dims), p.dims))
