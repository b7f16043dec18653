"""Hamiltonian-rings all-reduce on a torus (the "ring" baseline of the Swing paper, §2.3.1).

A ring all-reduce (reduce-scatter then all-gather, p-1 steps each, one block of its part per
step to the next node of the ring) per port, on a part of the buffer each:

- 1-D torus (dims=(p,), the default): one ring per direction on size/2 each, which is the
  bidirectional ring.
- 2-D torus: 4 rings on size/4 each, laid on two edge-disjoint Hamiltonian cycles of the
  torus, each cycle used in both directions. The two cycles together use every torus edge
  once, so every directed link carries exactly one ring message per step.

The cycles are the "snake" construction of the authors' SST motif. The torus has k1 rows and
k0 columns with k1 = m*k0. For X = 0..p-1 let x1 = X // k0 and x0 = X % k0:
- cycle 0 visits (row x1, column (x0 + (k0-1)*x1) mod k0): k0-1 moves along the row, then
  one move to the next row;
- cycle 1 visits (row (x0 + (k0-1)*x1) mod k1, column x1 mod k0): k0-1 moves along the
  column, then one move to the next column.
Cycle 0 is Hamiltonian for any k0 | k1; cycle 1 visits every node exactly once iff
gcd(m, k0-1) = 1, which is the paper's gcd(r, c-1) = 1 for r = k1, c = k0. In row R, cycle 0
leaves out exactly the row edge that cycle 1 takes there, and in each column cycle 1 leaves
out exactly the column edges cycle 0 takes, so they are edge-disjoint (as undirected edges,
for k0 >= 3; a torus dimension of size 2 has a single link pair, which both cycles then share).

Rows and columns are torus dimensions: if dims[1] is a multiple of dims[0] (and the gcd
condition holds), rows run along dimension 1 (row = coord_1) and columns along dimension 0
(column = coord_0); otherwise the orientation is swapped (row = coord_0, column = coord_1).
Dimensions of size 1 are skipped; more than two others are not supported (the paper does not
use this baseline on 3-D/4-D tori).

Block layout: nblocks = (number of rings) * p; ring k owns blocks [k*p, (k+1)*p) and the node
at position X of its cycle ends the reduce-scatter owning block k*p + X. Each ring is the
compressed `ring_phase` on positions 0..p-1, renamed to ranks through the cycle order, and the
rings run side by side: an all-reduce is 2 `Step` objects for any torus.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError
from ._common import require_collective, require_group
from .algorithm import Algorithm, Option
from .hierarchical import _parse_dims
from .ring import ring_phase
from ..ir import Schedule, Step, offset_nodes, parallel

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather")

CONDITION = ("accepted: a 1-D torus, or a 2-D torus r x c with r = k*c (k >= 1) and gcd(r, c-1) = 1 "
             "(either orientation; size-1 dimensions ignored), e.g. 8x8, 16x4, 9x3")


def snake_cycles(k0: int, k1: int) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """(row, column) of the X-th node of cycle 0 and of cycle 1 on a k1-row, k0-column torus.

    Parameters
    ----------
    k0 : int
        Columns.
    k1 : int
        Rows, a multiple of `k0`.

    Returns
    -------
    ((row array, column array), (row array, column array))
        Cycle 0's and cycle 1's positions, X = 0..k0*k1-1.
    """
    X = np.arange(k0 * k1, dtype=np.int64)
    x1, x0 = X // k0, X % k0
    snake = x0 + (k0 - 1) * x1
    return (x1 % k1, snake % k0), (snake % k1, x1 % k0)


def _orientation(dims: tuple[int, ...]) -> tuple[int, int] | None:
    """(row dimension, column dimension) of a 2-D shape the construction serves, else None."""
    for rdim, cdim in ((1, 0), (0, 1)):
        r, c = dims[rdim], dims[cdim]
        if r % c == 0 and math.gcd(r, c - 1) == 1:
            return rdim, cdim
    return None


def torus_cycles(dims) -> list[np.ndarray]:
    """Rank order of each Hamiltonian cycle of the torus `dims`.

    Parameters
    ----------
    dims : sequence of int
        Torus shape, dimension 0 fastest.

    Returns
    -------
    list of int64 array
        One (0..p-1) for a 1-D torus, two edge-disjoint ones for a supported 2-D torus;
        ConfigError otherwise.
    """
    dims = tuple(int(d) for d in dims)
    active = [d for d in range(len(dims)) if dims[d] > 1]
    p = math.prod(dims)
    if len(active) <= 1:
        return [np.arange(p, dtype=np.int64)]
    shape = tuple(dims[d] for d in active)
    orient = _orientation(shape) if len(active) == 2 else None
    if orient is None:
        raise ConfigError("dims", dims, CONDITION)
    rdim, cdim = active[orient[0]], active[orient[1]]
    rstride, cstride = math.prod(dims[:rdim]), math.prod(dims[:cdim])
    return [row * rstride + col * cstride for row, col in snake_cycles(dims[cdim], dims[rdim])]


def hamiltonian_rings(collective: str, p: int, *, dims=None) -> Schedule:
    """Ring all-reduce / reduce-scatter / all-gather on both directions of each Hamiltonian cycle.

    Parameters
    ----------
    collective : str
        all-reduce, reduce-scatter or all-gather (canonical name).
    p : int
        Ranks in the group, >= 2.
    dims : sequence of int, optional
        Torus shape, dimension 0 fastest, product `p` (default (p,): a bidirectional ring); a
        2-D shape must satisfy the module doc's condition.

    Returns
    -------
    Schedule
        Unplaced, (rings x p) blocks; `meta` has the dims and the number of rings.
    """
    require_collective("hamiltonian_rings", collective, COLLECTIVES)
    require_group("hamiltonian_rings", collective, p)
    p = int(p)
    dims = _parse_dims(dims, p)
    rings = [(order, s) for order in torus_cycles(dims) for s in (+1, -1)]
    phases = {"all-reduce": ("rs", "ag"), "reduce-scatter": ("rs",), "all-gather": ("ag",)}[collective]
    per_ring: list[tuple[Step, ...]] = [
        offset_nodes([ring_phase(p, ph, s, k * p) for ph in phases], order)
        for k, (order, s) in enumerate(rings)
    ]
    owner = np.concatenate([order for order, _ in rings])
    return Schedule(collective, "hamiltonian_rings", p, len(rings) * p, parallel(*per_ring), owner=owner,
                    meta={"dims": dims, "rings": len(rings)})


def _estimate(c: str, p: int, o: dict) -> float:
    return 16.0 * p


ALGORITHM = Algorithm(
    "hamiltonian_rings", hamiltonian_rings, COLLECTIVES,
    "any p >= 2 as a 1-D torus; 2-D: r x c with r = k*c and gcd(r, c-1) = 1",
    "rings on two edge-disjoint Hamiltonian cycles of a 2-D torus, both directions, size/4 each (1-D: bidirectional ring)",
    options=(Option("dims", "shape", None, "torus shape, dimension 0 fastest (default: the topology's dims when the group is "
                                   "the whole network in rank order, else (p,) = a bidirectional ring)"),), dims=True,
    estimate=_estimate,
)
