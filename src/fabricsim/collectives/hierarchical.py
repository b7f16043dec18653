"""Hierarchical (multi-dimensional) collectives, as in ASTRA-sim's multi-dim schedulers.

The group is a `dims[0] x dims[1] x ...` grid (prod(dims) == p) with dimension 0 fastest:
rank r has coordinates coord_d = (r // prod(dims[:d])) % dims[d], like the topology's
`dims`. A *line* along dimension d is the dims[d] ranks that differ only in coord_d; on a
torus or a stack of switches a line is one physical ring or switch, so each phase below runs
on links of one dimension only.

All-reduce, order "rs-ag" (default; ASTRA-sim's `localBWAware`, accepted as an alias):
reduce-scatter along dimension 0, then 1, ..., then all-gather back down ..., 1, 0. Each
phase runs a 1-D algorithm (`inner`: ring, direct or halving_doubling, one per dimension or
one for all) independently and concurrently on every line of that dimension, on the part of
the buffer the ranks still own, so the data shrinks by dims[d] at each reduce-scatter phase:
the fast, wide first dimension carries the most bytes. localBWAware's all-reduce on the last
dimension is its reduce-scatter followed by its all-gather, which is exactly what the lock-
step schedule does. Order "baseline": a full all-reduce of the whole buffer on each
dimension in turn (dims ascending). Reduce-scatter and all-gather use the reduce-scatter or
the all-gather half of "rs-ag" (for both orders).

Block layout: p blocks; block id b is the mixed-radix number whose digits are coordinates,
dimension 0 MOST significant (digit_d = (b // prod(dims[d+1:])) % dims[d]). After the
reduce-scatter along dimensions 0..d-1 a rank owns the aligned, contiguous range of blocks
whose first d digits are its coordinates, and the inner algorithm's block j on its line is
the sub-range with digit_d = j. So a rotation of inner block ids by s mod q (a compressed ring
step) is a rotation of the lifted ids by s*W mod q*W inside aligned ranges (W = the sub-range
width): lifted steps keep the inner `repeat`/`shift`/`mod` compression, and a 64x64 ring
all-reduce is 4 `Step` objects. At the end of the reduce-scatter rank r owns the single block
whose digits are r's coordinates (`owner`). In "baseline" the inner block j of dimension d is
the set of blocks with digit_d = j (one aligned range per value of the leading digits),
which keeps the compression too.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..errors import ConfigError
from ._common import dims_option, log2_rounds, require_collective, require_group
from .algorithm import Algorithm, Option
from .hierarchical_all_to_all import hierarchical_all_to_all
from .ring import ring_phase
from ..ir import Schedule, Step, make_range_step

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather")
INNER = ("ring", "direct", "halving_doubling")
ORDERS = {"rs-ag": "rs-ag", "rsag": "rs-ag", "localbwaware": "rs-ag", "local_bw_aware": "rs-ag",
          "baseline": "baseline"}
_INNER_ALIASES = {"hd": "halving_doubling", "rabenseifner": "halving_doubling",
                  "halvingdoubling": "halving_doubling"}
_NO_WRAP_MOD = 1 << 62  # a range so large that ids never wrap in it


# ---- options -------------------------------------------------------------------------------


def _parse_dims(dims, p: int) -> tuple[int, ...]:
    if dims is None:
        return (p,)
    raw = dims
    if isinstance(dims, str):
        dims = [x for x in dims.replace(",", "x").split("x") if x.strip()]
    try:
        out = tuple(int(d) for d in dims)
    except (TypeError, ValueError):
        raise ConfigError("dims", raw, "accepted: a tuple of positive integers, e.g. (8, 8)") from None
    if not out or any(d < 1 for d in out) or math.prod(out) != p:
        raise ConfigError("dims", raw, f"accepted: positive sizes whose product is the group size {p}")
    return out


def _parse_inner(inner, ndims: int) -> tuple[str, ...]:
    items = [inner] * ndims if isinstance(inner, str) else list(inner)
    if len(items) != ndims:
        raise ConfigError("inner", inner, f"accepted: one of {', '.join(INNER)} or a tuple of {ndims} of them (one per dimension)")
    out = []
    for it in items:
        key = str(it).strip().lower().replace("-", "_")
        key = _INNER_ALIASES.get(key, key)
        if key not in INNER:
            raise ConfigError("inner", it, f"accepted: {', '.join(INNER)}")
        out.append(key)
    return tuple(out)


def _parse_order(order) -> str:
    key = str(order).strip().lower()
    if key not in ORDERS:
        raise ConfigError("order", order, "accepted: rs-ag (= localBWAware), baseline")
    return ORDERS[key]


# ---- the inner 1-D algorithms ---------------------------------------------------------------


def _inner_steps(name: str, q: int, part: str, dim: int, collective: str) -> list[Step]:
    """Steps of the 1-D algorithm on ranks 0..q-1 over blocks 0..q-1: part 'rs' (rank i ends
    owning block i), 'ag' (rank i starts owning block i) or 'ar' (all-reduce)."""
    if name == "halving_doubling":
        require_group(f"hierarchical (inner halving_doubling on dimension {dim}, size {q})", collective, q, pow2=True)
    if name == "ring":
        phases = {"rs": ("rs",), "ag": ("ag",), "ar": ("rs", "ag")}[part]
        return [ring_phase(q, ph) for ph in phases]
    if name == "direct":
        from .direct import direct as build
    else:
        from .halving_doubling import halving_doubling as build
    coll = {"rs": "reduce-scatter", "ag": "all-gather", "ar": "all-reduce"}[part]
    s = build(coll, q)
    if s.nblocks != q or s.n_extra or (part != "ar" and not np.array_equal(s.owner, np.arange(q))):
        raise RuntimeError(f"hierarchical: inner {name} {coll} on {q} ranks does not use blocks 0..{q - 1} owned by rank i")
    return [st if st.listed else st.explicit() for st in s.steps]  # a stated step (a full mesh) is lifted listed


# ---- lifting a 1-D step onto every line of a dimension ----------------------------------------


def lift(step: Step, nodes: np.ndarray, base: np.ndarray, offsets: np.ndarray, width: int) -> list[Step]:
    """Run `step` (on local ranks 0..q-1) on every line at once.

    Inner block j on line l becomes the lifted ids `base[l] + j*width + offsets`. A rotating
    inner entry keeps rotating after the lift (shift*width inside aligned ranges of mod*width
    ids) when its lifted ids sit in such aligned ranges; otherwise the step is expanded into
    its repetitions.

    Parameters
    ----------
    step : Step
        A 1-D step on local ranks 0..q-1.
    nodes : int64 array [L, q]
        `nodes[l, i]`: the rank of local rank i on line l.
    base : int64 array [L]
        First lifted block id of each line.
    offsets : int64 array
        The ids of one inner block relative to its first, e.g. 0..width-1, or those plus
        multiples of q*width.
    width : int
        Id stride between consecutive inner blocks.

    Returns
    -------
    list of Step
        One step (compression kept: a range-form step stays in range form when `offsets` is
        0..width-1, its runs then `width` times longer) or its repetitions, one step each.
    """
    L = nodes.shape[0]
    starts = step.run_starts()  # range form: the first id of each transfer's run
    if starts is not None:
        if np.array_equal(offsets, np.arange(width)):
            start = (base[:, None] + starts[None, :] * width).reshape(-1)
            return [make_range_step(nodes[:, step.src].reshape(-1), nodes[:, step.dst].reshape(-1), start,
                                    np.tile(step.blocks_per_transfer * width, L), np.tile(step.reduce, L))]
        step = step.explicit()
    elif width > 1 and np.array_equal(offsets, np.arange(width)) and np.all(step.blocks_per_transfer == 1):
        ranged = _lift_as_runs(step, nodes, base, width)  # one run of `width` ids per transfer
        if ranged is not None:
            return [ranged]
    K = len(step.blocks)
    n_off = len(offsets)
    j = step.blocks
    ids = base[:, None, None] + (j * width)[None, :, None] + offsets[None, None, :]  # (L, K, n_off)
    counts = np.tile(step.blocks_per_transfer * n_off, L)
    ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    src = nodes[:, step.src].reshape(-1)
    dst = nodes[:, step.dst].reshape(-1)
    red = np.tile(step.reduce, L)

    shift = mod = None
    if step.repeat > 1 and step.shift is not None and np.any(step.shift != 0):
        s, m = step.shift, step.mod
        rot = s != 0
        lshift = np.where(rot, s * width, 0)
        lmod = np.ones(K, dtype=np.int64)
        # rotating entries whose lifted ids lie in aligned ranges of m*width ids keep rotating
        # there: (id - (j mod m)*width) mod (m*width) < width on every line and offset
        pos = j % m
        small = rot & (m <= (1 << 40) // max(width, 1))
        aligned = np.zeros(K, dtype=bool)
        if small.any():
            mw = m[small] * width
            rel = ids[:, small, :] - (pos[small] * width)[None, :, None]
            aligned[small] = np.all(rel % mw[None, :, None] < width, axis=(0, 2))
            lmod[aligned] = m[aligned] * width
        # the others are fine when they never wrap in their inner range
        rest = rot & ~aligned
        end = pos + (step.repeat - 1) * s
        nowrap = rest & (end >= 0) & (end < m)
        lmod[nowrap] = _NO_WRAP_MOD
        if np.any(rest & ~nowrap):
            return [s_ for k in range(step.repeat) for s_ in lift(step.single(k), nodes, base, offsets, width)]
        shift = np.broadcast_to(lshift[None, :, None], ids.shape).reshape(-1)
        mod = np.broadcast_to(lmod[None, :, None], ids.shape).reshape(-1)
    return [Step(src, dst, red, ptr, ids.reshape(-1), repeat=step.repeat, shift=shift, mod=mod)]


def _lift_as_runs(step: Step, nodes: np.ndarray, base: np.ndarray, width: int) -> Step | None:
    """`lift` of a step moving one inner block j per transfer, in range form: the run
    base[l] + j*width .. + width - 1. A rotating entry (j moving by s inside its aligned range of m
    inner ids) rotates as a tile of width ids by s*width inside m*width ids, which is the same
    rotation of every lifted id when each line's base is a multiple of m*width; None otherwise."""
    L = nodes.shape[0]
    j = step.blocks
    shift = mod = None
    if step.repeat > 1 and step.shift is not None:
        rot = step.shift % step.mod != 0
        m = np.where(rot, step.mod, 1)
        if np.any(m > (1 << 40) // width) or np.any(base[:, None] % (m * width)[None, :] != 0):
            return None
        shift = np.tile(np.where(rot, step.shift * width, 0), L)
        mod = np.tile(m * width, L)
    ptr = np.arange(0, L * step.n_transfers * width + 1, width, dtype=np.int64)
    return Step(nodes[:, step.src].reshape(-1), nodes[:, step.dst].reshape(-1), np.tile(step.reduce, L), ptr,
                (base[:, None] + (j * width)[None, :]).reshape(-1), repeat=step.repeat, shift=shift, mod=mod,
                ranges=True)


def _lift_all(steps: list[Step], nodes, base, offsets, width) -> list[Step]:
    return [ls for st in steps for ls in lift(st, nodes, base, offsets, width)]


# ---- the algorithm --------------------------------------------------------------------------


def hierarchical(
    collective: str,
    p: int,
    *,
    dims=None,
    order: str = "rs-ag",
    inner="ring",
    root: int = 0,
) -> Schedule:
    """Multi-dimensional all-reduce / reduce-scatter / all-gather (see module doc).

    Parameters
    ----------
    collective : str
        all-reduce, reduce-scatter or all-gather (canonical name).
    p : int
        Ranks in the group, >= 2.
    dims : sequence of int, optional
        Group shape, dimension 0 fastest, product `p` (default (p,)).
    order : str
        rs-ag (= ASTRA-sim's localBWAware) or baseline (a full all-reduce per dimension).
    inner : str or sequence of str
        The 1-D algorithm of every dimension, or one per dimension: ring, direct or
        halving_doubling (power-of-two dimensions).
    root : int
        Accepted for a uniform signature and ignored.

    Returns
    -------
    Schedule
        Unplaced, p blocks; `meta` has the dims, the order and the inner algorithms.
    """
    require_collective("hierarchical", collective, COLLECTIVES)
    require_group("hierarchical", collective, p)
    p = int(p)
    dims = _parse_dims(dims, p)
    inners = _parse_inner(inner, len(dims))
    order = _parse_order(order)
    grid = _make_grid(p, dims)
    active = [d for d in range(len(dims)) if dims[d] > 1]
    # validate every inner/dimension pair before building anything
    for d in active:
        if inners[d] == "halving_doubling":
            require_group(f"hierarchical (inner halving_doubling on dimension {d}, size {dims[d]})", collective, dims[d], pow2=True)

    steps: list[Step] = []
    if collective == "all-reduce" and order == "baseline":
        for d in active:
            steps += _whole_buffer_phase(grid, d, inners[d], collective)
    else:
        if collective in ("all-reduce", "reduce-scatter"):
            for d in active:
                steps += _shrinking_phase(grid, d, "rs", inners[d], collective)
        if collective in ("all-reduce", "all-gather"):
            for d in reversed(active):
                steps += _shrinking_phase(grid, d, "ag", inners[d], collective)

    # block b is owned by the rank whose coordinates are b's digits
    blocks = np.arange(p, dtype=np.int64)
    owner = sum(((blocks // grid.bstride[d]) % dims[d]) * grid.rstride[d] for d in range(len(dims)))
    meta = {"dims": dims, "order": order, "inner": inners}
    return Schedule(collective, "hierarchical", p, p, tuple(steps), owner=owner, meta=meta)


class _Grid(NamedTuple):
    """The group as a grid (module doc): its shape, strides and every rank's coordinates."""

    p: int
    dims: tuple[int, ...]
    rstride: list[int]  # rank stride of dimension d
    bstride: list[int]  # block stride of digit d
    ranks: np.ndarray
    coords: list[np.ndarray]


def _make_grid(p: int, dims: tuple[int, ...]) -> _Grid:
    """The grid of a group of `p` ranks shaped `dims`."""
    D = len(dims)
    rstride = [math.prod(dims[:d]) for d in range(D)]  # rank stride of dimension d
    bstride = [math.prod(dims[d + 1 :]) for d in range(D)]  # block stride of digit d
    ranks = np.arange(p, dtype=np.int64)
    coords = [(ranks // rstride[d]) % dims[d] for d in range(D)]
    return _Grid(p, dims, rstride, bstride, ranks, coords)


def _lines(grid: _Grid, d: int) -> np.ndarray:
    """The lines of dimension d, [L, dims[d]]: the rank of each local rank on each line."""
    first = grid.ranks[grid.coords[d] == 0]
    return first[:, None] + np.arange(grid.dims[d], dtype=np.int64)[None, :] * grid.rstride[d]


def _owned_base(grid: _Grid, d: int, nodes: np.ndarray) -> np.ndarray:
    """First block of the range the line's ranks own before phase d (digits < d fixed)."""
    first = nodes[:, 0]
    b = np.zeros(len(first), dtype=np.int64)
    for e in range(d):
        b += ((first // grid.rstride[e]) % grid.dims[e]) * grid.bstride[e]
    return b


def _shrinking_phase(grid: _Grid, d: int, part: str, inner: str, collective: str) -> list[Step]:
    """The steps of a reduce-scatter ('rs') or all-gather ('ag') phase on dimension d, on the owned range."""
    nodes = _lines(grid, d)
    return _lift_all(_inner_steps(inner, grid.dims[d], part, d, collective), nodes,
                     _owned_base(grid, d, nodes), np.arange(grid.bstride[d], dtype=np.int64), grid.bstride[d])


def _whole_buffer_phase(grid: _Grid, d: int, inner: str, collective: str) -> list[Step]:
    """The steps of an all-reduce of the whole buffer on dimension d (order baseline)."""
    nodes = _lines(grid, d)
    W, M = grid.bstride[d], grid.bstride[d] * grid.dims[d]
    offsets = (np.arange(grid.p // M, dtype=np.int64)[:, None] * M + np.arange(W, dtype=np.int64)[None, :]).reshape(-1)
    return _lift_all(_inner_steps(inner, grid.dims[d], "ar", d, collective), nodes,
                     np.zeros(len(nodes), dtype=np.int64), offsets, W)


def _per_dimension(collective: str, p: int, **options) -> Schedule:
    """The registered builder: all-to-all has its own phase structure (one phase per dimension)."""
    if collective == "all-to-all":
        extra = set(options) - {"dims"}
        if extra:
            raise ConfigError("option", sorted(extra)[0], "the hierarchical all-to-all accepts: dims")
        return hierarchical_all_to_all(p, options.get("dims"))
    return hierarchical(collective, p, **options)


def _estimate(c: str, p: int, o: dict) -> float:
    """Phase d (a line of q = dims[d] ranks, every line at once) moves, per transfer, one inner
    block: a run of prod(dims[d+1:]) contiguous ids (range form, one entry per transfer, a ring's
    rotation kept), or in baseline order past the first active dimension the p/q ids with digit
    d = j, listed. Per rank and phase: a ring one transfer, halving-doubling log2 q, direct q - 1."""
    if c == "all-to-all":  # one entry per transfer (LineMeshStep); a dimension of all p is a stated full mesh
        return float(sum(p * (q - 1) if q < p else 1 for q in dims_option(p, o) if q > 1)) + 1.0
    dims = dims_option(p, o)
    inner = o.get("inner") or "ring"
    inner = (inner,) * len(dims) if isinstance(inner, str) else tuple(inner)
    baseline = c == "all-reduce" and o.get("order") == "baseline"
    parts = 2 if c == "all-reduce" else 1  # reduce-scatter and all-gather (baseline: each dimension's all-reduce)
    total, first = 0.0, True
    for d, q in enumerate(dims):
        if q <= 1:
            continue
        listed = baseline and not first  # ids strided over the whole buffer
        first = False
        name = inner[d] if d < len(inner) else "ring"
        if name == "ring":
            transfers = p
        elif name == "halving_doubling" and not listed:
            transfers = p * (log2_rounds(q) + 1)
        else:  # direct; halving-doubling listed: q - 1 inner blocks per rank in all
            transfers = p * (q - 1)
        total += parts * transfers * (p // q if listed else 1)
    return total + 2.0 * p


ALGORITHM = Algorithm(
    "hierarchical", _per_dimension, COLLECTIVES + ("all-to-all",),
    "any p >= 2 (prod(dims) == p; inner halving_doubling: power-of-two dimensions)",
    "multi-dim: reduce-scatter up the dimensions, all-gather back down; all-to-all one dimension per phase",
    options=(Option("dims", "shape", None, "group shape, dimension 0 fastest (default: the topology's dims when the group is "
                                   "the whole network in rank order, else (p,))"),
             Option("order", "choice", "rs-ag", "rs-ag (= ASTRA-sim's localBWAware) or baseline (a full all-reduce per "
                                                "dimension)", choices=("rs-ag", "baseline"),
                    aliases={"localBWAware": "rs-ag", "local_bw_aware": "rs-ag", "rsag": "rs-ag"},
                    collectives=("all-reduce",)),
             Option("inner", "choice-per-dim", "ring", "the 1-D algorithm of each dimension", choices=INNER,
                    aliases=_INNER_ALIASES, collectives=COLLECTIVES)),
    dims=True,
    estimate=_estimate,
)
