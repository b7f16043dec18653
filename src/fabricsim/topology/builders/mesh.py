"""mesh: an N-D mesh (no wrap-around), dimension-order routing."""

from __future__ import annotations

from collections.abc import Sequence

from ..family import GridParams, LinkValues, TopologyFamily, grid_links, parse_grid
from ..graph import Topology
from .stack import stack


def mesh(dims: Sequence[int], bandwidth, latency) -> Topology:
    """An N-D mesh: neighbours along each dimension linked both ways, no wrap-around.

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
        Named `mesh:AxB...`, dimension-order routing (dimension 0 first).

    Examples
    --------
    >>> mesh((4, 4), 50e9, 1e-7).n_links   # 2 x (3 x 4) links per dimension, 2 dimensions
    48
    """
    return stack(("line",) * len(dims), dims, bandwidth, latency, name="mesh:" + "x".join(map(str, dims)))


def _build(p: GridParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    return mesh(p.dims, bandwidth.per_dim(len(p.dims)), latency.per_dim(len(p.dims)))


FAMILY = TopologyFamily("mesh", "mesh:4x4", "N-D mesh, dimension-order routing", GridParams, parse_grid, _build,
                        size=lambda p: grid_links(("line",) * len(p.dims), p.dims))
