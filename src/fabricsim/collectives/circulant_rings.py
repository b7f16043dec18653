"""Circulant rings: an all-reduce split evenly over several rings of the group, each ring a
regular permutation i -> i + q (mod p) of the group's positions, run in both directions
(TopoOpt's all-reduce over the ring permutations of a direct-connect topology, NSDI'23 §2.7).

A ring of step q visits positions 0, q, 2q, ... (mod p): a single cycle through all p members
iff gcd(q, p) = 1 (q is a generator of Z_p). With steps (q1, ..., qm) the buffer is split into
2m parts, and part (i, direction) runs a ring reduce-scatter + all-gather along step qi in that
direction: each member sends 2(p-1)/p x size / (2m) on each of its 2m rings.

On a circulant topology (`Topology.jumps`, built by TopoOpt's TopologyFinder) the steps default
to what the topology offers the group (`ring_steps`): for a group that is a strided coset
{s, s + n/p, s + 2n/p, ...} of the n NPUs, every wired jump J = (n/p) q with gcd(q, p) = 1 is
a one-hop ring of the group; a group size with no such jump uses the steps whose offset (n/p) q
takes the fewest hops over the jumps (coin change: the ring's hops are relayed by intermediate
servers, paying the bandwidth tax of multi-hop forwarding). A group that is not a strided coset
(or a topology without jumps) gets one bidirectional ring in rank order.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError
from ._common import require_collective, require_group
from .algorithm import Algorithm, Option
from .ring import ring_phase
from ..ir import Schedule, offset_nodes, parallel

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather")


def circulant_hops(n: int, steps) -> np.ndarray:
    """Fewest steps from 0 to every residue of Z_n: a breadth-first search over the circulant graph.

    Parameters
    ----------
    n : int
        Modulus (NPUs), >= 1.
    steps : sequence of int
        The offsets one hop moves by, as given (pass +J and -J for links both ways).

    Returns
    -------
    int64 array [n]
        Hops to offset r (from any node: the graph is vertex-transitive); -1 where not reached.
    """
    dist = np.full(n, -1, dtype=np.int64)
    dist[0] = 0
    coins = np.unique(np.array([int(s) % n for s in steps], dtype=np.int64))
    coins = coins[coins != 0]
    frontier, h = np.zeros(1, dtype=np.int64), 0
    while len(frontier) and len(coins):
        h += 1
        nxt = np.unique((frontier[:, None] + coins[None, :]) % n)
        nxt = nxt[dist[nxt] < 0]
        dist[nxt] = h
        frontier = nxt
    return dist


def ring_steps(n: int, jumps, group) -> tuple[int, ...]:
    """The ring steps a circulant topology offers a group (module doc).

    Parameters
    ----------
    n : int
        NPUs of the topology.
    jumps : sequence of int
        Its ring jumps (links i <-> i + J for each J).
    group : sequence of int
        The group's NPU ids, in rank order.

    Returns
    -------
    tuple of int
        Position steps q, each coprime with the group size, smallest first; (1,) for a group
        that is not a strided coset or a topology without jumps.
    """
    g = np.asarray(group, dtype=np.int64)
    p = len(g)
    if not len(jumps) or p < 2 or n % p:
        return (1,)
    stride = n // p
    if not np.array_equal(g, g[0] + stride * np.arange(p)):  # in rank order; then g[0] < stride
        return (1,)
    cands = [q for q in range(1, p // 2 + 1) if math.gcd(q, p) == 1]
    wired = {j % n for j in jumps} | {(-j) % n for j in jumps}
    direct = tuple(q for q in cands if (q * stride) % n in wired)
    if direct:
        return direct
    hops = circulant_hops(n, [j for j in jumps] + [-j for j in jumps])
    reach = [(int(hops[q * stride % n]), q) for q in cands if hops[q * stride % n] > 0]
    if not reach:
        return (1,)
    best = min(h for h, _ in reach)
    return tuple(q for h, q in reach if h == best)


def circulant_rings(collective: str, p: int, *, steps=(1,)) -> Schedule:
    """All-reduce / reduce-scatter / all-gather split over rings of steps `steps`, both directions.

    Parameters
    ----------
    collective : str
        all-reduce, reduce-scatter or all-gather (canonical name).
    p : int
        Ranks in the group, >= 2.
    steps : sequence of int
        Ring steps q, each in 1..p-1 with gcd(q, p) = 1; q and p - q are the same ring, listed once.

    Returns
    -------
    Schedule
        Unplaced; 2 x len(steps) x p blocks (p for p = 2: both directions are one ring); `meta`
        has the steps.
    """
    require_collective("circulant_rings", collective, COLLECTIVES)
    require_group("circulant_rings", collective, p)
    p = int(p)
    qs: list[int] = []
    for q in steps:
        q = int(q)
        if not 1 <= q < p or math.gcd(q, p) != 1:
            raise ConfigError("steps", q, f"accepted: ring steps 1..{p - 1} coprime with the group size {p}")
        q = min(q, p - q)
        if q not in qs:
            qs.append(q)
    phases = {"all-reduce": ("rs", "ag"), "reduce-scatter": ("rs",), "all-gather": ("ag",)}[collective]
    dirs = (+1,) if p == 2 else (+1, -1)
    rings = [(np.arange(p, dtype=np.int64) * q % p, s) for q in qs for s in dirs]
    per_ring = [offset_nodes([ring_phase(p, ph, s, k * p) for ph in phases], order)
                for k, (order, s) in enumerate(rings)]
    owner = np.concatenate([order for order, _ in rings])
    return Schedule(collective, "circulant_rings", p, len(rings) * p, parallel(*per_ring), owner=owner,
                    meta={"steps": tuple(qs), "rings": len(rings)})


def _check(collective: str, p: int, options: dict) -> str | None:
    bad = [q for q in options.get("steps") or () if not (1 <= q < p and math.gcd(q, p) == 1)]
    return f"accepted: ring steps 1..{p - 1} coprime with {p} (got {bad[0]})" if bad else None


def _estimate(c: str, p: int, o: dict) -> float:
    return 8.0 * len(set(o.get("steps") or (1,))) * p


ALGORITHM = Algorithm(
    "circulant_rings", circulant_rings, COLLECTIVES, "any p >= 2",
    "rings i -> i+q of the group for each step q, both directions, size/(2 x steps) each (TopoOpt)",
    options=(Option("steps", "ints", None, "ring steps q coprime with the group size, as 1/5 or a list (default: "
                                           "the one-hop rings a circulant topology's jumps give the group, else "
                                           "its fewest-hop steps; 1 on other topologies)"),),
    jumps=True, check=_check,
    estimate=_estimate,
)
