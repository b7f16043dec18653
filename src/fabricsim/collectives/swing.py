"""Swing (De Sensi et al., NSDI'24) and the torus-optimized recursive doubling it is compared with.

Spec: docs/specs/swing.md. On a torus of `dims` (dimension 0 fastest, as everywhere in
fabricsim), every algorithm here is a sequence of pairwise exchanges whose peers are given per
step by a peer function:

- Swing: at relative step k of dimension t the coordinate moves by sg * rho(k), rho(k) =
  sum_{i<=k} (-2)^i = 1, -1, 3, -5, 11, ...; sg = +1 for an even coordinate, -1 for an odd one,
  negated for a mirrored collective.
- Recursive doubling: the coordinate is XORed with 2^k (mirrored: the distance is negated).

Steps visit the dimensions round-robin (skipping exhausted ones), starting at dimension c mod D
for port collective c. `ports="all"` runs 2D collectives at once (D plain, D mirrored), each on
its 1/(2D) of the vector; `ports="single"` one plain collective on the whole vector.

mode="bandwidth" (Swing-B, Rabenseifner-B): reduce-scatter, then all-gather in reverse; at step s
a node sends the blocks its peer will still be responsible for, R(peer, s+1), where
R(r, s) = R(r, s+1) U R(pi(r, s), s+1) and R(r, S) = {r}. These sets are nested (a laminar
family), so after one global relabelling of the blocks every message is ONE contiguous range:
schedules use the IR's range form and stay O(p) per step even on 128x128.
Sizes that are not powers of two: even sizes keep each block only at the latest step where it
is reachable (the spec's rule); an odd 1-D ring runs on p-1 nodes and the extra node trades one
block with every other node, spread over the steps; odd sizes in several dimensions are not
covered by the paper (clear error).
mode="latency" (Swing-L, recursive doubling-L): log2 p whole-vector exchanges; sizes that are
not powers of two shrink first (nodes past the largest power of two hand their vector over) and
enlarge at the end, one dimension after another.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError, UnsupportedGroupSize
from ._common import dims_option, is_pow2, log2_rounds, require_collective, require_group
from .algorithm import Algorithm, Option
from ..ir import Schedule, Step, make_range_step, make_step, parallel

MODES = {"bandwidth": "bandwidth", "b": "bandwidth", "latency": "latency", "l": "latency"}


def rho(k: int) -> int:
    """Swing's peer distance at relative step k: sum_{i<=k} (-2)^i = 1, -1, 3, -5, 11, ...

    Parameters
    ----------
    k : int
        Relative step in a dimension, >= 0.

    Returns
    -------
    int
    """
    return (1 - (-2) ** (k + 1)) // 3


def _ceil_log2(d: int) -> int:
    return (d - 1).bit_length()


# ---- peers --------------------------------------------------------------------------------------


def port_schedule(dims: tuple[int, ...], c: int) -> list[tuple[int, int]]:
    """(dimension, relative step) of every step for port collective c (spec §1.8).

    Parameters
    ----------
    dims : tuple of int
        Torus shape, dimension 0 fastest.
    c : int
        Port collective; its first step is in dimension c mod D.

    Returns
    -------
    list of (int, int)
        ceil(log2 d) steps per dimension of size d, dimensions visited round-robin.
    """
    D = len(dims)
    steps = [_ceil_log2(d) for d in dims]
    count = [0] * D
    out: list[tuple[int, int]] = []
    last = (c % D) - 1
    while len(out) < sum(steps):
        for i in range(1, D + 1):
            t = (last + i) % D
            if count[t] < steps[t]:
                break
        out.append((t, count[t]))
        count[t] += 1
        last = t
    return out


def _coords(dims, ranks):
    strides = np.cumprod((1,) + tuple(dims[:-1]))
    return [(ranks // strides[d]) % dims[d] for d in range(len(dims))], strides


def peers(dims: tuple[int, ...], kind: str, c: int, mirrored: bool) -> list[np.ndarray]:
    """peer[s][r] for every step of port collective c.

    Parameters
    ----------
    dims : tuple of int
        Torus shape, dimension 0 fastest.
    kind : {"swing", "rd"}
        Swing's peers or recursive doubling's (coordinate XOR 2^k).
    c : int
        Port collective (`port_schedule`).
    mirrored : bool
        Negate the distances (the mirrored collectives of the multiport variant).

    Returns
    -------
    list of int array [p]
        One array per step: the peer of every rank.
    """
    p = math.prod(dims)
    r = np.arange(p)
    coords, strides = _coords(dims, r)
    out = []
    for t, k in port_schedule(dims, c):
        a = coords[t]
        d = dims[t]
        if kind == "swing":
            sg = np.where(a % 2 == 0, 1, -1) * (-1 if mirrored else 1)
            b = (a + sg * rho(k)) % d
        else:
            if not mirrored:
                b = a ^ (1 << k)
            else:
                b = (a + np.where((a >> k) & 1 == 0, -(1 << k), 1 << k)) % d
        out.append(r + (b - a) * strides[t])
    return out


def _ports(D: int, ports: str) -> list[tuple[int, bool]]:
    if ports == "single":
        return [(0, False)]
    return [(c, False) for c in range(D)] + [(c, True) for c in range(D)]


# ---- bandwidth-optimal: reduce-scatter + all-gather ---------------------------------------------


def _range_phases(pe: list[np.ndarray], base: int) -> tuple[list[Step], list[Step], np.ndarray]:
    """RS and AG steps of one collective on power-of-two sizes, in range form, and the owner of
    each (relabelled) block: R(r, s) is contiguous after relabelling."""
    S = len(pe)
    p = len(pe[0])
    lab = [None] * (S + 1)
    lab[S] = np.arange(p)
    for s in range(S - 1, -1, -1):
        lab[s] = np.minimum(lab[s + 1], lab[s + 1][pe[s]])
    keys = tuple(lab[S:0:-1]) if S else (np.arange(p),)
    order = np.lexsort(keys)  # blocks sorted by (lab[1], ..., lab[S])
    pos = np.empty(p, dtype=np.int64)
    pos[order] = np.arange(p)
    start = []
    for lvl in range(S + 1):
        st = np.full(p, p, dtype=np.int64)
        np.minimum.at(st, lab[lvl], pos)
        start.append(st)
    r = np.arange(p)
    rs, ag = [], []
    for s in range(S):
        q = pe[s]
        size = p >> (s + 1)
        rs.append(make_range_step(r, q, base + start[s + 1][lab[s + 1][q]], size, True))
    for t in range(S - 1, -1, -1):
        q = pe[t]
        ag.append(make_range_step(r, q, base + start[t + 1][lab[t + 1][r]], p >> (t + 1), False))
    owner = np.empty(p, dtype=np.int64)
    owner[pos] = np.arange(p)
    return rs, ag, owner


def _dedup_phases(pe: list[np.ndarray], base: int, nodes: np.ndarray | None = None) -> tuple[list[Step], list[Step]]:
    """RS and AG steps with explicit blocks for sizes that are not powers of two: each block is
    sent at the latest step where it is reachable (spec §1.5). `nodes` renames local ranks."""
    S = len(pe)
    p = len(pe[0])
    reach = [None] * (S + 1)
    reach[S] = np.eye(p, dtype=bool)
    for s in range(S - 1, -1, -1):
        reach[s] = reach[s + 1] | reach[s + 1][pe[s]]
    latest = np.full((p, p), -1, dtype=np.int64)  # latest[r, b]: step at which r sends block b
    r = np.arange(p)
    for s in range(S):
        m = reach[s + 1][pe[s]]  # m[r, b]: b in R(peer(r, s), s+1)
        latest[m] = s
    latest[r, r] = -1
    name = (lambda x: x) if nodes is None else (lambda x: nodes[x])
    rs, ag = [], []
    for s in range(S):
        rr, bb = np.nonzero(latest == s)
        rs.append(_grouped_step(name(rr), name(pe[s][rr]), bb + base, True))
    for t in range(S - 1, -1, -1):
        # r sends back to q what q sent it at step t: blocks b with latest[q, b] == t
        qq, bb = np.nonzero(latest == t)
        rr = pe[t][qq]
        ag.append(_grouped_step(name(rr), name(qq), bb + base, False))
    return rs, ag


def _grouped_step(src: np.ndarray, dst: np.ndarray, blocks: np.ndarray, reduce: bool) -> Step:
    """One transfer per (src, dst) pair carrying all its blocks."""
    if len(src) == 0:
        return make_step([], [], [], reduce)
    order = np.lexsort((blocks, dst, src))
    src, dst, blocks = src[order], dst[order], blocks[order]
    new = np.ones(len(src), dtype=bool)
    new[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
    first = np.flatnonzero(new)
    counts = np.diff(np.append(first, len(src)))
    ptr = np.zeros(len(first) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return Step(src[first], dst[first], np.full(len(first), reduce), ptr, blocks)


def _bandwidth_collective(dims, kind, c, mirrored, base, collective):
    """(rs steps, ag steps, owner of blocks base..base+p-1) of one port collective."""
    pe = peers(dims, kind, c, mirrored)
    p = math.prod(dims)
    if all(is_pow2(d) for d in dims):
        rs, ag, owner = _range_phases(pe, base)
        return rs, ag, owner
    rs, ag = _dedup_phases(pe, base)
    return rs, ag, np.arange(p)


def _odd_ring_collective(p: int, kind, c, mirrored, base):
    """1-D odd p: the collective on 0..p-2 plus node e = p-1 trading one block with each."""
    e = p - 1
    rs, ag, inner_owner = _bandwidth_collective((p - 1,), kind, c, mirrored, base, "all-reduce")
    rs = [st.explicit() for st in rs]
    ag = [st.explicit() for st in ag]
    if not np.array_equal(inner_owner, np.arange(p - 1)):  # relabelled blocks: map back to ids
        lookup = np.empty(p - 1, dtype=np.int64)
        lookup[np.arange(p - 1)] = inner_owner
        rs = [_relabel(st, inner_owner, base) for st in rs]
        ag = [_relabel(st, inner_owner, base) for st in ag]
    S = max(1, len(rs))
    j = np.arange(p - 1)
    when = (j * S) // (p - 1)  # node j trades with e at step when[j]
    extra_rs, extra_ag = [], []
    for s in range(S):
        js = j[when == s]
        # RS: j adds its copy of block e into e; e adds its copy of block j into j
        extra_rs.append(make_step(np.concatenate([js, np.full(len(js), e)]), np.concatenate([np.full(len(js), e), js]),
                                  np.concatenate([np.full(len(js), base + e), base + js]), True))
        # AG: j hands its finished block to e; e hands finished block e to j
        extra_ag.append(make_step(np.concatenate([js, np.full(len(js), e)]), np.concatenate([np.full(len(js), e), js]),
                                  np.concatenate([base + js, np.full(len(js), base + e)]), False))
    if not rs:  # p == 3 with a 2-node inner ring has one step; p - 1 == 1 cannot happen (p >= 3)
        rs, ag = [make_step([], [], [], True)], [make_step([], [], [], False)]
    rs = [_merge(a, b) for a, b in zip(rs, extra_rs)]
    ag = [_merge(a, b) for a, b in zip(ag, extra_ag)]
    return rs, ag, np.arange(p)


def _relabel(st: Step, owner: np.ndarray, base: int) -> Step:
    ids = owner[st.blocks - base] + base
    return Step(st.src, st.dst, st.reduce, st.ptr, ids)


def _merge(a: Step, b: Step) -> Step:
    return parallel([a], [b])[0]


def _bandwidth(collective, dims, kind, ports, p):
    D = len(dims)
    plist = _ports(D, ports)
    odd = any(d % 2 for d in dims if d > 1)
    if odd and D > 1:
        raise UnsupportedGroupSize(kind, collective, p, f"the paper covers odd sizes on 1-D rings only; dims {'x'.join(map(str, dims))} have an odd dimension")
    rs_all, ag_all, owners = [], [], []
    for i, (c, mir) in enumerate(plist):
        base = i * p
        if odd:
            rs, ag, own = _odd_ring_collective(p, kind, c, mir, base)
        else:
            rs, ag, own = _bandwidth_collective(dims, kind, c, mir, base, collective)
        rs_all.append(rs)
        ag_all.append(ag)
        owners.append(own)
    steps = []
    if collective in ("all-reduce", "reduce-scatter"):
        steps += list(parallel(*rs_all))
    if collective in ("all-reduce", "all-gather"):
        steps += list(parallel(*ag_all))
    return steps, np.concatenate(owners), len(plist)


# ---- latency-optimal ----------------------------------------------------------------------------


def _shrink_plan(dims):
    """Per dimension (in order), the (sender, receiver) pairs of the shrink step and the dims of
    the shrunk torus (largest power of two below each size that is not one)."""
    p = math.prod(dims)
    r = np.arange(p)
    coords, strides = _coords(dims, r)
    active = np.ones(p, dtype=bool)
    pairs = []
    small = []
    for t, d in enumerate(dims):
        if is_pow2(d):
            small.append(d)
            continue
        dp = 1 << (_ceil_log2(d) - 1)
        extra = d - dp
        m = active & (coords[t] >= dp)
        src = r[m]
        dst = src - extra * strides[t]
        pairs.append((src, dst))
        active &= ~m
        small.append(dp)
    return pairs, tuple(small), r[active]


def _latency(collective, dims, kind, ports, p):
    if collective != "all-reduce":
        raise ConfigError("collective", collective, "the latency-optimal variant serves all-reduce only; use mode=bandwidth")
    D = len(dims)
    plist = _ports(D, ports)
    P = len(plist)
    pairs, small, active = _shrink_plan(dims)
    everything = np.arange(P)
    steps = []
    for src, dst in pairs:  # hand whole vectors over, one dimension after another
        steps.append(make_step(src, dst, np.tile(everything, (len(src), 1)), True))
    if math.prod(small) > 1:
        # active nodes in shrunk coordinates: node i of the small torus is active[i]
        per_port = []
        for i, (c, mir) in enumerate(plist):
            pe = peers(small, kind, c, mir)
            per_port.append([make_step(active, active[q], np.full(len(q), i), True) for q in pe])
        steps += list(parallel(*per_port))
    for src, dst in reversed(pairs):  # and back
        steps.append(make_step(dst, src, np.tile(everything, (len(src), 1)), False))
    return steps, P


# ---- the algorithms -----------------------------------------------------------------------------


def _build(kind: str, collective: str, p: int, dims, mode: str, ports: str, name: str) -> Schedule:
    require_group(name, collective, p)
    dims = tuple(int(d) for d in (dims or (p,)))
    if math.prod(dims) != p or any(d < 1 for d in dims):
        raise ConfigError("dims", "x".join(map(str, dims)), f"accepted: positive sizes whose product is the group size {p}")
    dims = tuple(d for d in dims if d > 1) or (p,)
    m = MODES.get(str(mode).lower())
    if m is None:
        raise ConfigError("mode", mode, "accepted: bandwidth (B), latency (L)")
    if ports not in ("all", "single"):
        raise ConfigError("ports", ports, "accepted: all (2D port collectives), single")
    meta = {"mode": m, "ports": ports, "dims": "x".join(map(str, dims))}
    if m == "latency":
        steps, P = _latency(collective, dims, kind, ports, p)
        return Schedule(collective, name, p, P, tuple(steps), meta=meta)
    steps, owner, P = _bandwidth(collective, dims, kind, ports, p)
    return Schedule(collective, name, p, P * p, tuple(steps), owner=owner, meta=meta)


def swing(collective: str, p: int, *, dims=None, mode: str = "bandwidth", ports: str = "all") -> Schedule:
    """Swing all-reduce (and reduce-scatter / all-gather in bandwidth mode) on a torus (module doc).

    Parameters
    ----------
    collective : str
        all-reduce; reduce-scatter or all-gather with mode=bandwidth (canonical name).
    p : int
        Ranks in the group, >= 2.
    dims : sequence of int, optional
        Torus shape, dimension 0 fastest, product `p` (default (p,)).
    mode : str
        bandwidth (Swing-B: reduce-scatter + all-gather) or latency (Swing-L: whole-vector
        exchanges); B and L are accepted.
    ports : {"all", "single"}
        all: 2D port collectives at once on 1/(2D) of the vector each; single: one collective.

    Returns
    -------
    Schedule
        Unplaced; `meta` has the mode, the ports and the dims. UnsupportedGroupSize for an odd
        dimension in several dimensions.
    """
    require_collective("swing", collective, ("all-reduce", "reduce-scatter", "all-gather"))
    return _build("swing", collective, p, dims, mode, ports, "swing")


def torus_recursive_doubling(collective: str, p: int, *, dims=None, mode: str = "bandwidth",
                             mirrored: bool = False) -> Schedule:
    """Recursive doubling on a torus, dimensions alternating (the Swing paper's baseline).

    mode=latency is recursive doubling-L, mode=bandwidth Rabenseifner's halving-doubling (B).

    Parameters
    ----------
    collective : str
        all-reduce; reduce-scatter or all-gather with mode=bandwidth (canonical name).
    p : int
        Ranks in the group, >= 2.
    dims : sequence of int, optional
        Torus shape, dimension 0 fastest, product `p` (default (p,)); bandwidth mode needs
        power-of-two dimensions.
    mode : str
        bandwidth or latency (B and L are accepted).
    mirrored : bool
        The paper's multiport variant (D plain and D mirrored collectives) instead of one port.

    Returns
    -------
    Schedule
        Unplaced; `meta` has the mode, the ports and the dims.
    """
    require_collective("torus_recursive_doubling", collective, ("all-reduce", "reduce-scatter", "all-gather"))
    dims_t = tuple(int(d) for d in (dims or (p,)))
    if MODES.get(str(mode).lower()) == "bandwidth" and not all(is_pow2(d) for d in dims_t if d > 1):
        raise UnsupportedGroupSize("torus_recursive_doubling", collective, p,
                                   "accepted: power-of-two dimensions in bandwidth mode (mode=latency folds any size)")
    return _build("rd", collective, p, dims, mode, "all" if mirrored else "single", "torus_recursive_doubling")


# ---- registry descriptors -----------------------------------------------------------------------


def _swing_check(collective: str, p: int, options: dict) -> str | None:
    if MODES.get(str(options.get("mode", "bandwidth")).lower()) == "latency" and collective != "all-reduce":
        return "the latency-optimal mode serves all-reduce only (accepted: mode=bandwidth)"
    return None


def _trd_check(collective: str, p: int, options: dict) -> str | None:
    if MODES.get(str(options.get("mode", "bandwidth")).lower()) == "latency":
        return None if collective == "all-reduce" else "the latency-optimal mode serves all-reduce only"
    dims = options.get("dims") or (p,)
    if not all(is_pow2(int(d)) for d in dims):
        return "accepted: power-of-two dimensions in bandwidth mode (mode=latency folds any size)"
    return None


_MODE = Option("mode", "choice", "bandwidth", "bandwidth (the B variant, reduce-scatter + all-gather) or latency "
                                              "(the L variant, whole-vector exchanges)",
               choices=("bandwidth", "latency"), aliases={"B": "bandwidth", "L": "latency"})
_DIMS = Option("dims", "shape", None, "torus shape, dimension 0 fastest (default: the topology's dims when the group is "
                                      "the whole network in rank order, else (p,))")


def _estimate(c: str, p: int, o: dict) -> float:
    return 8.0 * len(dims_option(p, o)) * p * log2_rounds(p)  # 2D ports x log2 p steps x 2 phases, ranges


ALGORITHM = Algorithm(
    "swing", swing, ("all-reduce", "reduce-scatter", "all-gather"),
    "any p >= 2 (1-D); even or power-of-two torus dimensions",
    "Swing (NSDI'24): short-cutting pairwise exchanges, all 2D ports (bandwidth or latency mode)",
    options=(_MODE, Option("ports", "choice", "all", "all: 2D port collectives at once; single: one",
                           choices=("all", "single")), _DIMS),
    dims=True, check=_swing_check,
    estimate=_estimate,
)
TORUS_RECURSIVE_DOUBLING = Algorithm(
    "torus_recursive_doubling", torus_recursive_doubling, ("all-reduce", "reduce-scatter", "all-gather"),
    "bandwidth: power-of-two dims; latency: any p >= 2 (fold)",
    "recursive doubling on a torus, dimensions alternating: Rabenseifner (bandwidth) or whole-vector (latency); "
    "mirrored = multiport",
    pow2_only=("all-reduce", "reduce-scatter", "all-gather"),
    options=(_MODE, Option("mirrored", "bool", False, "the paper's multiport variant (D plain + D mirrored)"), _DIMS),
    dims=True, check=_trd_check,
    estimate=_estimate,
)
