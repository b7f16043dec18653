"""A composed step (`ir.composed`) routed from its parts, for the analytical model.

A composed schedule names, at every lock-step step, the parts (repeated plain steps) it runs side
by side. A pipelined tree has a few parts per step; a pipelined chain (a ring broadcast of p pieces
on 16,384 ranks, `collectives.chain`) has 32,766 steps over about 32,000 parts, so a dense per-link
array per part or per step would be 16 GB where the chain's listed (hop, piece) entries are 268 M.
Here:

- each part is routed once and kept sparse (`PartRoute`): the links it uses with their loads, its
  distinct (size, latency, bandwidth, sent by an NPU) rows, the bytes its NPUs send, the network
  dimensions it crosses and its busiest link's time per byte. `route_parts` routes all the parts of
  a schedule in one call (one route of their transfers together, split by part with one sort; one
  call per part where switches reduce through a unit the transfers of one call share); the sums
  are the ones `route_step` forms for each part alone (sequential, in transfer order);
- a step keeps its parts and the rows, nothing per link: its link loads, used links and bytes per
  NPU are built from the parts when asked (`RoutedStep` does not keep them for a composed step);
- where the parts a step runs share no link, its busiest link is its busiest part's (each link's
  load is one part's: exact), so the congestion-aware time reads no per-link array. Which links
  two of a step's parts share is counted incrementally from the previous step (a pipeline's
  neighbouring steps share most parts): O(the parts that change) per step;
- the collective's link loads add each part once, weighted by the repetitions of the steps that
  run it (`total_link_frac`).

Link loads are added as the listed form adds them (one by one in transfer order) where every part
moves transfers of one size (`equal_sums`: the same floats); otherwise part by part (the same up
to rounding).

`route_composed` registers as the analytical model's step router of the `composed` form, with
`route_all_parts` as its preparation (`analytical.route.register_step_router`), when this module
is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir import Schedule
from ...topology.graph import Topology
from .route import RoutedStep, hop_paths, register_step_router
from .straight import equal_sums


@dataclass(frozen=True, eq=False)
class PartRoute:
    """One part of composed steps, routed once and kept sparse.

    Parameters
    ----------
    links : int64 array
        Links the part's transfers cross (zero-byte transfers count), ascending.
    load : float array
        Bytes on each of `links` per byte of collective size.
    rows : float array [4, k]
        The part's distinct (size per byte, path latency s, path bandwidth bytes/s, sent by an NPU)
        rows: all the congestion-unaware model reads.
    npus, sent : int64 array, float array
        NPUs that send, and the bytes each sends per byte of collective size.
    one : float or None
        The one transfer size (per byte of collective size) of every transfer, if there is one.
    counts, sent_counts : int64 arrays or None
        With `one`: `load == equal_sums(one)[counts]` (each load a sequential sum of `one`), and
        the same for `sent`.
    dims : tuple of int
        Network dimensions (`Topology.link_dim`) of `links`, ascending.
    link_time : float
        The busiest link's seconds per byte of collective size (max of load / bandwidth; 0: none).
    """

    links: np.ndarray
    load: np.ndarray
    rows: np.ndarray
    npus: np.ndarray
    sent: np.ndarray
    one: float | None
    counts: np.ndarray | None
    sent_counts: np.ndarray | None
    dims: tuple
    link_time: float


def _grouped_sums(group: np.ndarray, key: np.ndarray, weight: np.ndarray, n_keys: int):
    """Sums of `weight` per (group, key), each formed in input order from 0 (bincount adds
    sequentially); returns (group, key, sum) of the pairs present, sorted by group then key."""
    code = group * n_keys + key
    order = np.argsort(code, kind="stable")
    code = code[order]
    first = np.ones(len(code), dtype=bool)
    first[1:] = code[1:] != code[:-1]
    pair = np.cumsum(first) - 1
    sums = np.bincount(pair, weights=weight[order], minlength=int(pair[-1]) + 1 if len(pair) else 0)
    uniq = code[first]
    return uniq // n_keys, uniq % n_keys, sums


def _splits(group: np.ndarray, n: int) -> np.ndarray:
    """Offsets of each group's run in an array sorted by group (n groups)."""
    return np.searchsorted(group, np.arange(n + 1))


def _route_calls(topo: Topology, src, dst, reduce, first, at: np.ndarray):
    """`route_reducing` over every part's transfers: one call, or, where switches reduce through
    a unit that the transfers of one call share, one call per part (`at`: the parts' offsets),
    as each part alone is routed; (ptr, links, use) over all transfers."""
    if not topo.has_reduction_units:
        return topo.route_reducing(src, dst, reduce, first)
    calls = [topo.route_reducing(src[a:b], dst[a:b], reduce[a:b], first[a:b]) for a, b in zip(at[:-1], at[1:])]
    ends = np.cumsum([c[0][-1] for c in calls])
    ptr = np.concatenate([[0]] + [c[0][1:] + e - c[0][-1] for c, e in zip(calls, ends)]).astype(np.int64)
    return ptr, np.concatenate([c[1] for c in calls]), np.concatenate([c[2] for c in calls])


def route_parts(topo: Topology, schedule: Schedule, parts: list) -> list[PartRoute] | None:
    """Route many parts at once: one route of all their transfers, split by part.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`; `parts` are plain steps of its composed steps.
    parts : list of Step
        Distinct parts.

    Returns
    -------
    list of PartRoute
        One per part: the sums `route_step` forms for the part alone (sequential, in transfer order).
    """
    if not parts:
        return []
    nodes = schedule.topology_nodes()
    n_t = np.array([p.n_transfers for p in parts], dtype=np.int64)
    cat = lambda xs, dt: np.concatenate(xs).astype(dt, copy=False)  # noqa: E731
    src = nodes[cat([p.src for p in parts], np.int64)]
    dst = nodes[cat([p.dst for p in parts], np.int64)]
    frac = cat([schedule.transfer_fraction(p) for p in parts], float)
    reduce = cat([p.reduce for p in parts], bool)
    at_t = np.concatenate([[0], np.cumsum(n_t)])
    ptr, links, use = _route_calls(topo, src, dst, reduce, cat([p.first_block for p in parts], np.int64), at_t)
    n_all, n_parts = len(src), len(parts)
    owner = np.repeat(np.arange(n_parts), n_t)  # part of each transfer
    tid, lat, bw = hop_paths(topo, ptr, links, use)
    lp, ll, load = _grouped_sums(owner[tid], links, use * frac[tid], topo.n_links)  # sorted by part, link
    npu = src < topo.n_npus
    sp, sn, sent = _grouped_sums(owner[npu], src[npu], frac[npu], topo.n_npus)
    dp, dd, _ = _grouped_sums(lp, topo.link_dim[ll].astype(np.int64) + 1, np.zeros(len(lp)),
                              int(topo.link_dim.max(initial=0)) + 2)
    rows = np.stack([frac, lat, bw, npu.astype(float)])
    order = np.lexsort(tuple(rows[::-1]) + (owner,))
    rows, row_part = rows[:, order], owner[order]
    keep = np.ones(n_all, dtype=bool)
    keep[1:] = (row_part[1:] != row_part[:-1]) | np.any(rows[:, 1:] != rows[:, :-1], axis=0)
    rows, row_part = rows[:, keep], row_part[keep]
    at_l, at_s, at_d, at_r = _splits(lp, n_parts), _splits(sp, n_parts), _splits(dp, n_parts), _splits(row_part, n_parts)
    time = load / topo.link_bw[ll]
    out = []
    for i in range(n_parts):
        f = frac[at_t[i]:at_t[i + 1]]
        one = float(f[0]) if len(f) and f[0] > 0 and np.all(f == f[0]) else None
        li, lo = ll[at_l[i]:at_l[i + 1]], load[at_l[i]:at_l[i + 1]]
        ni, se = sn[at_s[i]:at_s[i + 1]], sent[at_s[i]:at_s[i + 1]]
        out.append(PartRoute(li, lo, rows[:, at_r[i]:at_r[i + 1]], ni, se, one,
                             None if one is None else _sum_counts(lo, one),
                             None if one is None else _sum_counts(se, one),
                             tuple((dd[at_d[i]:at_d[i + 1]] - 1).tolist()),
                             float(np.max(time[at_l[i]:at_l[i + 1]], initial=0.0))))
    return out


def _sum_counts(sums: np.ndarray, one: float) -> np.ndarray | None:
    """The k with sums == equal_sums(one)[k] entry by entry (each a sequential sum of k equal
    sizes), or None where some entry is not such a sum."""
    k = np.rint(sums / one).astype(np.int64)
    return k if np.array_equal(equal_sums(one, int(k.max(initial=0)))[k], sums) else None


def route_all_parts(topo: Topology, schedule: Schedule, steps: list, cache: dict) -> None:
    """Route every part of the schedule's composed steps at once into `cache` (`route_parts`).

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`.
    steps : list of ComposedStep
        Its composed steps, in step order (`route_schedule` passes them: `StepRouter.prepare`).
    cache : dict
        `route_composed`'s cache, filled with each part's route.
    """
    parts = list({id(q): q for st in steps for q in st.parts}.values())
    for q, r in zip(parts, route_parts(topo, schedule, parts)):
        cache[id(q)] = (q, r)


def _dense(parts: list[PartRoute], n: int, idx: str, val: str, counts: str) -> np.ndarray:
    """The parts' sparse values added into one dense array of n entries: as sequential sums of
    one size where every part has its counts (`equal_sums`, exact), else part by part."""
    ones = {p.one for p in parts}
    if len(ones) == 1 and None not in ones:
        ks = [getattr(p, counts) for p in parts]
        if all(k is not None for k in ks):
            total = np.zeros(n, np.int64)
            for p, k in zip(parts, ks):
                total[getattr(p, idx)] += k
            return equal_sums(ones.pop(), int(total.max(initial=0)))[total]
    out = np.zeros(n)
    for p in parts:
        out[getattr(p, idx)] += getattr(p, val)
    return out


def _shared_links(parts: list[PartRoute], cache: dict, n_links: int) -> int:
    """How many links two or more of `parts` cross, counted from the previous call's parts
    (kept in `cache`) by the parts that changed."""
    last = cache.get("composed cover")
    if last is None or len(last[1]) != n_links:
        had, cover, shared = {}, np.zeros(n_links, np.int32), 0
    else:
        had, cover, shared = last
    now = {id(p): p for p in parts}
    for key, p in had.items():
        if key not in now:
            cover[p.links] -= 1
            shared -= int(np.count_nonzero(cover[p.links] == 1))
    for key, p in now.items():
        if key not in had:
            cover[p.links] += 1
            shared += int(np.count_nonzero(cover[p.links] == 2))
    cache["composed cover"] = (now, cover, shared)
    return shared


@register_step_router("composed", prepare=route_all_parts)
def route_composed(topo: Topology, schedule: Schedule, step, cache: dict) -> RoutedStep:
    """A `ComposedStep` routed from its parts, each routed once (kept in `cache`; module doc).

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`.
    step : ComposedStep
        One of its steps.
    cache : dict
        Kept between the steps of one schedule (`route_schedule` passes one).

    Returns
    -------
    RoutedStep
        Its rows; link loads, used links and bytes per NPU built from the parts when asked; the
        busiest link's time per byte given where the parts share no link.
    """
    routes = []
    for part in step.parts:
        hit = cache.get(id(part))
        if hit is None or hit[0] is not part:  # the part itself is kept with its route: ids stay unique
            hit = cache[id(part)] = (part, route_parts(topo, schedule, [part])[0])
        routes.append(hit[1])
    rows = np.concatenate([r.rows for r in routes], axis=1) if routes else np.zeros((4, 0))
    link_time = None
    if _shared_links(routes, cache, topo.n_links) == 0:  # each link's load is one part's
        link_time = max((r.link_time for r in routes), default=0.0)

    def used_links():
        return np.unique(np.concatenate([r.links for r in routes])) if routes else np.zeros(0, np.int64)

    def listed_incidence():
        raise ValueError("a composed step routed from its parts has no per-transfer incidence; list the step "
                         "(ComposedStep.explicit) and route that")

    return RoutedStep(step.repeat, listed_incidence, rows[0], rows[1], rows[2],
                      np.where(rows[3] > 0, 0, -1).astype(np.int64),
                      link_frac=lambda: _dense(routes, topo.n_links, "links", "load", "counts"),
                      used_links=used_links,
                      sent=lambda: _dense(routes, topo.n_npus, "npus", "sent", "sent_counts"),
                      parts=tuple(routes), link_time=link_time)


def total_link_frac(routed: list[RoutedStep], n_links: int) -> np.ndarray:
    """Bytes each link carries over all steps, per byte of collective size.

    Plain steps add their loads times their repetitions in step order; a part of composed steps
    adds its loads once, times the repetitions of every step that runs it.

    Parameters
    ----------
    routed : list of RoutedStep
        `route_schedule`'s steps.
    n_links : int
        Links of the topology.

    Returns
    -------
    float array [n_links]
    """
    total = np.zeros(n_links)
    weight: dict = {}
    for r in routed:
        if r.parts is None:
            total += r.link_frac * r.repeat
            continue
        for p in r.parts:
            hit = weight.get(id(p))
            weight[id(p)] = (p, r.repeat + (hit[1] if hit else 0))
    for p, w in weight.values():
        total[p.links] += p.load * w
    return total
