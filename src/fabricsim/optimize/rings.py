"""Ring permutations of Z_n for TopoOpt's TopologyFinder (NSDI'23): the candidate jumps of each
group size (TotientPerms), their selection (SelectPermutations), the hop counts of the circulant
graph they wire, and coin-change routing over them. Also the input checks shared with
`matchings` (`_int`, `_demand`). Re-exported by `optimize.perms`.

Servers are the cyclic group Z_n. A ring jump p wires every server i to i + p (mod n); in the
bidirectional mode a ring is the pair +p, -p and costs 2 interfaces per server (p and n - p are
the same ring, so jumps are kept as p <= n/2).
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from ..collectives.circulant_rings import circulant_hops
from ..errors import ConfigError

MODES = ("geometric", "search")


def _int(field: str, value, lo: int, accepted: str | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ConfigError(field, value, accepted or f"accepted: an integer >= {lo}")
    return int(value)


def _demand(mp, n: int, field: str = "mp") -> np.ndarray:
    """An n x n matrix of non-negative finite bytes, as floats."""
    try:
        a = np.asarray(mp, dtype=float)
    except (TypeError, ValueError):
        a = np.zeros(0)
    if a.shape != (n, n):
        raise ConfigError(field, f"an array of shape {a.shape}", f"accepted: an {n} x {n} array of bytes")
    if not np.isfinite(a).all() or (a < 0).any():
        raise ConfigError(field, "a negative or non-finite entry", "accepted: bytes >= 0")
    return a


def _canon(p: int, n: int, bidirectional: bool) -> int:
    """A jump as wired: p mod n, and min(p, n - p) for bidirectional rings."""
    p %= n
    return min(p, n - p) if bidirectional else p


def totient_perms(n: int, k: int | None = None) -> list[int]:
    """Ring jumps that make one ring of every size-k strided coset {s, s + n/k, ...} of Z_n.

    Parameters
    ----------
    n : int
        Servers, >= 2.
    k : int, optional
        Group size, a divisor of n with k >= 2 (default n: rings through all servers).

    Returns
    -------
    list of int
        `(n/k) q` for 1 <= q < k with gcd(q, k) = 1, ascending: phi(k) jumps.

    Examples
    --------
    >>> totient_perms(12), totient_perms(12, 3)
    ([1, 5, 7, 11], [4, 8])
    """
    n = _int("n", n, 2)
    k = n if k is None else _int("k", k, 2, f"accepted: a divisor of n={n} that is >= 2")
    if n % k:
        raise ConfigError("k", k, f"accepted: a divisor of n={n} that is >= 2")
    return [(n // k) * q for q in range(1, k) if math.gcd(q, k) == 1]


def candidate_jumps(n: int) -> dict[int, list[int]]:
    """Candidate jumps for every group size that divides n (TopoOpt precomputes this table).

    Parameters
    ----------
    n : int
        Servers, >= 2.

    Returns
    -------
    dict
        {k: totient_perms(n, k)} for every divisor k >= 2 of n, ascending k.

    Examples
    --------
    >>> candidate_jumps(6)
    {2: [3], 3: [2, 4], 6: [1, 5]}
    """
    n = _int("n", n, 2)
    return {k: totient_perms(n, k) for k in range(2, n + 1) if n % k == 0}


def circulant_distances(n: int, jumps, *, bidirectional: bool = True) -> np.ndarray:
    """Hops from server 0 to every offset of Z_n over links +p (and -p) for each jump p.

    Parameters
    ----------
    n : int
        Servers, >= 1.
    jumps : sequence of int
        Ring jumps (taken mod n).
    bidirectional : bool
        Links -p too (default).

    Returns
    -------
    int64 array [n]
        Hops to offset r (from any server: vertex-transitive); -1 where not reached.
    """
    n = _int("n", n, 1)
    steps = [int(p) for p in jumps] + ([-int(p) for p in jumps] if bidirectional else [])
    return circulant_hops(n, steps)


def diameter_and_mean_hops(n: int, jumps, *, bidirectional: bool = True) -> tuple[float, float]:
    """Diameter and mean hop count of the circulant graph of `jumps` on n servers.

    Parameters
    ----------
    n : int
        Servers.
    jumps : sequence of int
        Ring jumps.
    bidirectional : bool
        Links -p too (default).

    Returns
    -------
    (diameter, mean) : tuple of float
        Most hops between two servers, and the mean over the n - 1 others; inf when not connected.

    Examples
    --------
    >>> d, m = diameter_and_mean_hops(12, [1, 5]); int(d), round(m, 2)
    (3, 1.82)
    """
    dist = circulant_distances(n, jumps, bidirectional=bidirectional)[1:]
    if (dist < 0).any() or not len(dist):
        return (math.inf, math.inf) if len(dist) else (0.0, 0.0)
    return float(dist.max()), float(dist.mean())


def coin_change(n: int, coins) -> np.ndarray:
    """Fewest coins summing to every residue of Z_n, each coin usable as +p and -p (mod n).

    Parameters
    ----------
    n : int
        Modulus (servers).
    coins : sequence of int
        The jumps.

    Returns
    -------
    int64 array [n]
        Coins needed for residue r (-1 where unreachable): `circulant_distances` of the coins.

    Examples
    --------
    >>> coin_change(12, [1, 5, 7, 11]).tolist()
    [0, 1, 2, 3, 2, 1, 2, 1, 2, 3, 2, 1]
    """
    return circulant_distances(n, coins, bidirectional=True)


def coin_change_paths(n: int, coins, step: int, limit: int = 64) -> list[tuple[int, ...]]:
    """All fewest-coin sequences reaching `step` (mod n): TopoOpt's virtual ring hops.

    Parameters
    ----------
    n : int
        Modulus (servers).
    coins : sequence of int
        The jumps, each used as +p and -p, written as residues 1..n-1 (-1 is n - 1).
    step : int
        The offset to reach (a ring step of a group size with no ring of its own).
    limit : int
        Most sequences returned, >= 1.

    Returns
    -------
    list of tuple of int
        Sequences (c1, c2, ...) of coin residues with c1 + c2 + ... = step (mod n), all of the
        fewest length, in lexicographic order, at most `limit`; [()] for step = 0 (mod n).
        ConfigError when the coins cannot reach `step`.

    Examples
    --------
    >>> coin_change_paths(12, [1, 5], 4)
    [(5, 11), (11, 5)]
    """
    n = _int("n", n, 1)
    limit = _int("limit", limit, 1)
    step = int(step) % n
    dist = coin_change(n, coins)
    if dist[step] < 0:
        raise ConfigError("step", step, f"accepted: offsets the coins {sorted(int(c) for c in coins)} reach mod {n}")
    signed = sorted(({int(c) % n for c in coins} | {(-int(c)) % n for c in coins}) - {0})
    out: list[tuple[int, ...]] = []
    stack: list[tuple[int, tuple[int, ...]]] = [(step, ())]  # depth first, smallest coin first
    while stack and len(out) < limit:
        rest, path = stack.pop()
        if rest == 0:
            out.append(path)
            continue
        stack.extend(((rest - c) % n, path + (c,)) for c in reversed(signed) if dist[(rest - c) % n] == dist[rest] - 1)
    return out


def _offset_demand(mp: np.ndarray, n: int) -> np.ndarray:
    """Bytes per offset (j - i) mod n of a demand matrix: hops of a circulant depend on it only."""
    off = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n
    return np.bincount(off.ravel(), weights=mp.ravel(), minlength=n)


def _geometric(cands: list[int], pool: list[int], m: int) -> tuple[int, ...]:
    lo, hi = min(cands), max(cands)
    r = (hi / lo) ** (1.0 / m)
    free, picked = list(pool), []
    for i in range(m):
        target = lo * r**i
        above = [c for c in free if c >= target - 1e-9]
        c = above[0] if above else min(free, key=lambda x: (abs(x - target), x))
        free.remove(c)
        picked.append(c)
    return tuple(sorted(picked))


def select_permutations(cands, m: int, *, n: int, mode: str = "geometric", mp=None, seed: int = 0,
                        bidirectional: bool = True, base=(), samples: int = 200) -> tuple[int, ...]:
    """Choose m ring jumps out of `cands` so that the circulant graph has few hops (spec §2.5).

    Parameters
    ----------
    cands : sequence of int
        Candidate jumps (`totient_perms(n, k)`).
    m : int
        Rings to choose, >= 0 (d_k / 2 bidirectional, d_k one-way).
    n : int
        Servers.
    mode : str
        `geometric`: the released heuristic: ratio r = (c_max / c_min)^(1/m) over the candidates
        and their negatives, targets c_min r^i, for each the first unused candidate >= target
        (else the nearest unused). `search`: the geometric set and `samples` seeded random sets,
        scored by byte-weighted hops of `mp` (mean hops without it), diameter breaking ties.
    mp : n x n array, optional
        MP bytes from server i to server j (search mode).
    seed : int
        Seed of the sampled sets (search mode).
    bidirectional : bool
        Rings +p and -p (default): candidates restricted to p <= n/2, never both p and n - p.
    base : sequence of int
        Jumps already wired (other group sizes), counted when scoring in search mode.
    samples : int
        Random candidate sets scored in search mode.

    Returns
    -------
    tuple of int
        m distinct jumps, ascending (p <= n/2 when bidirectional). ConfigError when fewer than m
        distinct rings exist or for a bad mode.

    Examples
    --------
    >>> select_permutations(totient_perms(128), 4, n=128)
    (1, 5, 13, 39)
    """
    n = _int("n", n, 2)
    m = _int("m", m, 0)
    if mode not in MODES:
        raise ConfigError("select", mode, f"accepted: {', '.join(MODES)}")
    raw = sorted({int(c) % n for c in cands} - {0})
    if not raw:
        raise ConfigError("cands", list(cands), f"accepted: jumps that are not 0 mod {n}")
    if m == 0:
        return ()
    pool = sorted({_canon(c, n, bidirectional) for c in raw})
    if m > len(pool):
        kind = "distinct rings (p and n-p are one ring)" if bidirectional else "distinct jumps"
        raise ConfigError("m", m, f"accepted: at most {len(pool)} {kind} among {pool}")
    closure = sorted(set(raw) | {n - c for c in raw})  # the ratio spans the candidates and their negatives
    best = _geometric(closure, pool, m)
    if mode == "geometric" or len(pool) == m:
        return best
    rng = np.random.default_rng(seed)
    if math.comb(len(pool), m) <= samples + 1:
        sets = [tuple(s) for s in combinations(pool, m)]
    else:
        sets = [best] + [tuple(sorted(rng.choice(pool, m, replace=False).tolist())) for _ in range(samples)]
    demand = None if mp is None else _offset_demand(_demand(mp, n), n)
    base = [int(b) for b in base]

    def score(s):
        dist = circulant_distances(n, base + list(s), bidirectional=bidirectional).astype(float)
        dist[dist < 0] = n  # an offset not reached weighs like n hops
        cost = float(dist[1:].mean()) if demand is None or demand.sum() == 0 else float(dist @ demand)
        return cost, float(dist.max()), s

    return min(dict.fromkeys(sets), key=score)

