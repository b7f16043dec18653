"""Bucket all-reduce on a torus (the "bucket" baseline of the Swing paper, §2.3.4).

The group is a torus `dims[0] x dims[1] x ...` (prod(dims) == p), dimension 0 fastest: rank r
has coordinates coord_d = (r // prod(dims[:d])) % dims[d]. Dimensions of size 1 are skipped;
call the remaining D ones the active dimensions a_0 < ... < a_{D-1}.

The buffer is split into 2D equal parts, one per (start dimension i, direction +-), so every
port of a node is busy. Part (i, +-) runs ring phases on the lines of one dimension each:
reduce-scatter phase j on dimension a_{(i+j) mod D} in its direction, and after D reduce-scatter
phases the D all-gather phases in reverse order. After each reduce-scatter phase the data a
rank still works on shrinks by the size of the dimension just covered. All 2D parts run in
lock-step and the phases are synchronized: phase j+1 starts when every part has finished
phase j, so a phase lasts as long as its largest ring (max dim - 1 steps; the parts on shorter
dimensions idle in the remaining steps). Part (i, +) and part (i, -) use the two directions of
the same links, and parts with different i use different dimensions, so on a square torus
every directed link carries exactly one message per step. A dimension of size 2 has one link
each way, which both directions then share. With the default dims=(p,) this is a
bidirectional ring.

Block layout: nblocks = 2D*p; part k = 2*i + (0 for +, 1 for -) owns blocks [k*p, (k+1)*p), each
size/(2D*p) bytes. Inside a part, block u is the mixed-radix number whose digits are
coordinates in the part's dimension order (the dimension of its phase 0 MOST significant), as
in `hierarchical`: after reduce-scatter phases 0..j-1 a rank holds the aligned range whose
first j digits are its coordinates, so each phase is one compressed ring step per part, lifted
onto every line with `hierarchical.lift` (a 64x64 all-reduce is 4 `Step` objects). At the end
of the reduce-scatter rank r owns, in every part, the block whose digits are its coordinates
(`owner`).
"""

from __future__ import annotations

import math

import numpy as np

from ._common import dims_option, require_collective, require_group
from .algorithm import Algorithm, Option
from .hierarchical import _parse_dims, lift
from .ring import ring_phase
from ..ir import Schedule, Step, in_lanes, parallel

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather")


def bucket_parts(dims: tuple[int, ...]) -> list[tuple[tuple[int, ...], int]]:
    """(dimension order, direction) of each part, in part order k = 2*i + (direction == -1).

    Parameters
    ----------
    dims : tuple of int
        Torus shape, dimension 0 fastest; dimensions of size 1 are skipped.

    Returns
    -------
    list of (tuple of int, int)
        For each of the 2D parts: the active dimensions in the order its phases visit them,
        and its direction (+1 or -1).
    """
    active = [d for d in range(len(dims)) if dims[d] > 1]
    D = len(active)
    return [(tuple(active[(i + j) % D] for j in range(D)), s) for i in range(D) for s in (+1, -1)]


def _lines(dims: tuple[int, ...], d: int) -> np.ndarray:
    """lines[l, i]: the rank with coordinate i along dimension d on line l."""
    p = math.prod(dims)
    stride = math.prod(dims[:d])
    ranks = np.arange(p, dtype=np.int64)
    first = ranks[(ranks // stride) % dims[d] == 0]
    return first[:, None] + np.arange(dims[d], dtype=np.int64)[None, :] * stride


def _digit_strides(dims: tuple[int, ...], order: tuple[int, ...]) -> list[int]:
    """Block stride of digit j of a part whose dimension order is `order`."""
    return [math.prod(dims[e] for e in order[j + 1 :]) for j in range(len(order))]


def _part_phase(dims, k: int, order: tuple[int, ...], direction: int, j: int, phase: str) -> list[Step]:
    """Ring phase j ('rs' or 'ag') of part k on every line of dimension order[j]."""
    p = math.prod(dims)
    d = order[j]
    nodes = _lines(dims, d)
    width = _digit_strides(dims, order)
    first = nodes[:, 0]
    base = np.full(len(first), k * p, dtype=np.int64)
    for jj in range(j):  # the digits fixed by the earlier phases: the line's own coordinates
        e = order[jj]
        base += ((first // math.prod(dims[:e])) % dims[e]) * width[jj]
    return lift(ring_phase(dims[d], phase, direction), nodes, base,
                np.arange(width[j], dtype=np.int64), width[j])


def _owner(dims: tuple[int, ...], parts) -> np.ndarray:
    """Rank owning each block after the reduce-scatter: the rank whose coordinates are its digits."""
    p = math.prod(dims)
    u = np.arange(p, dtype=np.int64)
    out = []
    for order, _ in parts:
        width = _digit_strides(dims, order)
        out.append(sum(((u // width[j]) % dims[e]) * math.prod(dims[:e]) for j, e in enumerate(order)))
    return np.concatenate(out)


def bucket(collective: str, p: int, *, dims=None) -> Schedule:
    """Bucket all-reduce / reduce-scatter / all-gather on a torus of shape `dims` (module doc).

    Parameters
    ----------
    collective : str
        all-reduce, reduce-scatter or all-gather (canonical name).
    p : int
        Ranks in the group, >= 2.
    dims : sequence of int, optional
        Torus shape, dimension 0 fastest; its product must be `p` (default (p,): a
        bidirectional ring).

    Returns
    -------
    Schedule
        Unplaced, 2D*p blocks (D active dimensions), one block of lanes per phase.
    """
    require_collective("bucket", collective, COLLECTIVES)
    require_group("bucket", collective, p)
    p = int(p)
    dims = _parse_dims(dims, p)
    parts = bucket_parts(dims)
    D = len(parts) // 2

    def phase(block: int, j: int, kind: str) -> tuple[Step, ...]:
        # one lane per dimension (its + and - parts in lock-step on opposite links); lanes run at
        # their own pace and the phase ends when the slowest is done (phases are synchronized)
        by_dim: dict[int, list] = {}
        for k, (order, s) in enumerate(parts):
            by_dim.setdefault(order[j], []).append(_part_phase(dims, k, order, s, j, kind))
        return in_lanes(block, [parallel(*lists) for _, lists in sorted(by_dim.items())])

    steps: list[Step] = []
    if collective in ("all-reduce", "reduce-scatter"):
        for j in range(D):
            steps += phase(len(steps), j, "rs")
    if collective in ("all-reduce", "all-gather"):
        for j in reversed(range(D)):
            steps += phase(len(steps), j, "ag")
    return Schedule(collective, "bucket", p, len(parts) * p, tuple(steps), owner=_owner(dims, parts),
                    meta={"dims": dims})


def _estimate(c: str, p: int, o: dict) -> float:
    """2D parts (start dimension x direction), each a ring phase per dimension and direction of
    the collective (reduce-scatter, all-gather: one; all-reduce: two), each one compressed step of
    p transfers, one run of ids each (range form)."""
    D = max(1, sum(1 for d in dims_option(p, o) if d > 1))
    return 2.0 * D * D * (2 if c == "all-reduce" else 1) * p + 2.0 * p


ALGORITHM = Algorithm(
    "bucket", bucket, COLLECTIVES, "any p >= 2 (prod(dims) == p)",
    "bucket: 2D parts (start dimension x direction), synchronized ring reduce-scatter phases over the torus dimensions, "
    "all-gather back",
    options=(Option("dims", "shape", None, "torus shape, dimension 0 fastest (default: the topology's dims when the group is "
                                   "the whole network in rank order, else (p,) = a bidirectional ring)"),), dims=True,
    estimate=_estimate,
)
