"""A mesh step routed on a torus, ring or mesh without listing its transfers (the analytical model).

A full mesh (`ir.mesh.MeshStep` of one line, `FullMeshStep`) over every NPU sends one equal message
between every ordered pair of NPUs. On a network whose paths are straight per dimension
(`analytical.straight.straight_dims`: the topology states straight routes, one latency and
bandwidth per dimension) the load of a link follows from one dimension at a time. A message travels dimension d after
dimensions 0..d-1 (its coordinates below d are its destination's, those above its source's), so
the link leaving position x along dimension d carries, for every pair (a, b) of positions on that
ring or line whose one-dimensional path crosses it, one message per choice of the source's
coordinates below d and of the destination's above d: c_d(x) x p / n_d messages, c_d(x) counted
once per dimension and direction (`line_counts`). The paths' latencies and bandwidths depend
only on the hop count per dimension, and every combination of per-dimension hop counts but all
zeros occurs, so those combinations are the rows the models need: the largest latency (the
congestion-aware model) and the distinct (latency, bytes / bandwidth) pairs (the unaware model).

Exactly the numbers of listing the n(n-1) transfers (`analytical.straight.route_straight`): link
loads are the same sequential sums of one message size (tabulated once), latencies the same
sequential sums of link latencies (`analytical.straight.path_lat_bw`). tests/test_full_mesh.py
compares the two on small networks. The lines of a grid (`LineMeshStep`, a hierarchical all-to-all
phase) are the same count along their one dimension, every line on its own (`route_line_mesh`;
tests/test_line_mesh.py).

`route_mesh` registers as the analytical model's step router of the mesh form (`mesh`:
`analytical.route.register_step_router`) when this module is imported, and routes each case by
its own function; where it returns None, `route_step` routes the listed transfers.
"""

from __future__ import annotations

import numpy as np

from ...ir import Schedule
from ...topology.graph import Topology
from .route import RoutedStep, register_step_router
from .straight import equal_sums, path_lat_bw, straight_dims


def line_counts(kind: str, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Ordered pairs of distinct positions of one ring or line whose path leaves position x, per x.

    Parameters
    ----------
    kind : {"ring", "uniring", "line"}
        The dimension: a ring routed the short way (a half-way tie going +), a one-way ring (+),
        or a line.
    size : int
        Positions.

    Returns
    -------
    (int64 array [size], int64 array [size])
        Pairs whose path leaves x in the + direction, and in the - direction.
    """
    x = np.arange(size, dtype=np.int64)
    if kind == "line":
        return (x + 1) * (size - 1 - x), x * (size - x)
    f = np.arange(1, size, dtype=np.int64)  # forward distance; on a ring every x sees each once per hop
    plus = f <= size - f if kind == "ring" else np.ones(len(f), bool)
    return (np.full(size, int(f[plus].sum()), np.int64),
            np.full(size, int((size - f[~plus]).sum()), np.int64))


def _hop_rows(kinds, dims, only: int | None = None) -> np.ndarray:
    """Every combination of per-dimension hop counts but all zeros: one row per path shape (with
    `only`, hops along that dimension alone)."""
    tops = [0 if only is not None and d != only else size // 2 if kind == "ring" else size - 1
            for d, (kind, size) in enumerate(zip(kinds, dims))]
    grids = np.meshgrid(*[np.arange(t + 1, dtype=np.int64) for t in tops], indexing="ij")
    rows = np.stack([g.reshape(-1) for g in grids], axis=1)
    return rows[rows.any(axis=1)]


@register_step_router("mesh")
def route_mesh(topo: Topology, schedule: Schedule, step, cache: dict | None = None) -> RoutedStep | None:
    """Route a mesh step (`ir.mesh.MeshStep`) from per-dimension counts, or None: the full mesh by
    `route_full_mesh`, the lines of a grid by `route_line_mesh` (the `StepRouter` signature)."""
    return (route_full_mesh if step.full else route_line_mesh)(topo, schedule, step, cache)


def route_line_mesh(topo: Topology, schedule: Schedule, step, cache: dict | None = None) -> RoutedStep | None:
    """Route the lines of a grid (a hierarchical all-to-all phase, `LineMeshStep`) from per-dimension
    counts, or None.

    Where the step's grid is the network's (every NPU, in rank order, the same dims) and paths are
    straight per dimension, a message of phase k stays on its line along dimension k: the link
    leaving position x of that line carries c_k(x) messages (`line_counts`), each p / d_k blocks;
    paths are 1..d_k/2 (ring) or 1..d_k - 1 hops along k. The same numbers as listing the
    transfers (tests/test_line_mesh.py compares them).

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        The schedule the step belongs to, placed.
    step : MeshStep
        The phase (not `full`).
    cache : dict, optional
        Not used (the `StepRouter` signature).

    Returns
    -------
    RoutedStep or None
        As `route_full_mesh`; None where the grid is not the network's (the caller routes the transfers).
    """
    n = topo.n_npus
    dims = tuple(int(d) for d in topo.dims)
    if schedule.p != n or tuple(step.dims) != dims:
        return None
    if not np.array_equal(schedule.topology_nodes()[:n], np.arange(n)):
        return None
    per_dim = straight_dims(topo)
    if per_dim is None:
        return None
    lat_d, bw_d = per_dim
    kinds, step_link, k = topo.structure.kinds, topo.router.step_link, step.dim
    one = float(step.per_transfer * schedule.block_frac)  # every message p / d_k blocks
    coords = topo.coords(np.arange(n))
    count = np.zeros(topo.n_links)
    _add_line_counts(count, kinds[k], step_link[:, k], coords[:, k], dims[k], 1)
    return _counted(topo, count.astype(np.int64), one, dims[k] - 1, _hop_rows(kinds, dims, only=k),
                    lat_d, bw_d, n, step.repeat, step.shown_as)


def route_full_mesh(topo: Topology, schedule: Schedule, step, cache: dict | None = None) -> RoutedStep | None:
    """Route a full-mesh step of every NPU from per-dimension counts (module doc), or None.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        The schedule the step belongs to, placed.
    step : MeshStep
        Its full mesh (`full`).
    cache : dict, optional
        Not used (the `StepRouter` signature).

    Returns
    -------
    RoutedStep or None
        Rows = distinct path shapes (frac, latency s, bandwidth bytes/s each), link loads and the
        bytes each NPU sends; None where the mesh is not over every NPU of a network with straight
        paths (the caller routes the listed transfers).
    """
    n = topo.n_npus
    if step.n != n or schedule.p != n:
        return None
    nodes = schedule.topology_nodes()[:n]
    if not np.array_equal(np.sort(nodes), np.arange(n)):
        return None
    if step.reduce_all and topo.reduce_link is not None and (topo.reduce_link[:n] >= 0).any():
        return None
    per_dim = straight_dims(topo)
    if per_dim is None:
        return None
    lat_d, bw_d = per_dim
    kinds, step_link, dims = topo.structure.kinds, topo.router.step_link, tuple(int(d) for d in topo.dims)
    one = float(schedule.block_frac)  # one block per transfer: every message the same size
    coords = topo.coords(np.arange(n))
    count = np.zeros(topo.n_links)  # messages crossing each link (exact integers in float64)
    for d in range(len(dims)):
        if dims[d] >= 2:
            _add_line_counts(count, kinds[d], step_link[:, d], coords[:, d], dims[d], n // dims[d])
    return _counted(topo, count.astype(np.int64), one, n - 1, _hop_rows(kinds, dims), lat_d, bw_d, n,
                    step.repeat, step.shown_as)


def _add_line_counts(count: np.ndarray, kind: str, step_link: np.ndarray, coord: np.ndarray, size: int,
                     factor: int) -> None:
    """Add to `count` (per link) the messages of every line along one dimension (of `kind`, `size`
    positions; `step_link` [n_npus, 2] its + and - link of each NPU, `coord` each NPU's coordinate)
    whose pairs cross it: c(x) x `factor` at each node's + and - link (`line_counts`)."""
    for direction, c in enumerate(line_counts(kind, size)):
        per_node = c[coord] * factor
        links = step_link[:, direction]
        hit = per_node > 0
        if (links[hit] < 0).any():
            raise ValueError("routing used a link that does not exist")
        np.add.at(count, links[hit], per_node[hit])


def _counted(topo: Topology, k: np.ndarray, one: float, per_npu: int, rows: np.ndarray, lat_d, bw_d, n: int,
             repeat: int, kind: str) -> RoutedStep:
    """The RoutedStep of equal messages from their count per link: k[link] messages of `one` each,
    `per_npu` sent by every NPU, one row per path shape (hop counts per dimension)."""
    table = equal_sums(one, max(int(k.max(initial=0)), per_npu))  # k messages added one by one, as listed
    link_frac = table[k]
    lat, bw = path_lat_bw(rows, lat_d, bw_d)
    sent = np.full(n, table[per_npu])

    def listed_incidence():
        raise ValueError(f"a mesh routed by its counts has no per-transfer incidence; list the step "
                         f"({kind}.explicit) and route that")

    return RoutedStep(repeat, listed_incidence, np.full(len(lat), one), lat, bw, np.zeros(len(lat), np.int64),
                      link_frac=link_frac, used_links=lambda: np.flatnonzero(link_frac > 0), sent=sent)
