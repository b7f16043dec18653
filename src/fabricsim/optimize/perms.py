"""Building blocks of TopoOpt's TopologyFinder (NSDI'23): ring permutations of Z_n, their
selection, coin-change routing over them, Blossom matchings, the expander baseline and the
connection matrix (the AR/MP degree split is TopologyFinder's first step, in `finder`).

Servers are the cyclic group Z_n. A ring jump p wires every server i to i + p (mod n); in the
bidirectional mode a ring is the pair +p, -p and costs 2 interfaces per server (p and n - p are
the same ring, so jumps are kept as p <= n/2). A matching pair {i, j} costs 1 interface at each
end. A topology is the integer multiplicity matrix `conn[i, j]` (parallel links i -> j).
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


def _match(n: int, a: np.ndarray, b: np.ndarray, w: np.ndarray) -> list[tuple[int, int]]:
    """Maximum-weight matching (Blossom, rustworkx) on the edges (a, b) of integer weights w."""
    import rustworkx as rx

    g = rx.PyGraph(multigraph=False)
    g.add_nodes_from(range(n))
    g.extend_from_weighted_edge_list(list(zip(a.tolist(), b.tolist(), w.tolist())))
    return sorted((min(u, v), max(u, v)) for u, v in rx.max_weight_matching(g, weight_fn=int))


def _round(weight: np.ndarray, partners: int | None, rng) -> np.ndarray:
    """One maximum-weight perfect matching (see blossom_mp) as a (pairs, 2) array."""
    n = len(weight)
    scale = float(2**40) / weight.max() if weight.max() > 0 else 1.0
    free = np.ones(n, bool)
    pairs: list[tuple[int, int]] = []
    while free.sum() > 1:
        idx = np.flatnonzero(free)
        sub = weight[np.ix_(idx, idx)]
        iu, ju = np.nonzero(np.triu(sub, 1) > 0)
        if not len(iu):
            break
        if partners is not None and len(iu) > partners * len(idx):  # each server's heaviest partners
            kk = min(partners, len(idx) - 1)
            top = np.argpartition(-sub, kk, axis=1)[:, :kk + 1]
            rows = np.repeat(np.arange(len(idx)), top.shape[1])
            lo, hi = np.minimum(rows, top.ravel()), np.maximum(rows, top.ravel())
            key = np.unique(lo * len(idx) + hi)
            iu, ju = key // len(idx), key % len(idx)
            keep = (iu != ju) & (sub[iu, ju] > 0)
            iu, ju = iu[keep], ju[keep]
        w = np.maximum(1, np.floor(sub[iu, ju] * scale + 0.5)).astype(np.int64)
        got = _match(len(idx), iu, ju, w)
        if not got:
            break
        for u, v in got:
            pairs.append((int(idx[u]), int(idx[v])))
            free[idx[u]] = free[idx[v]] = False
        if partners is None:
            break  # exact: the free servers have no demand among them
    rest = rng.permutation(np.flatnonzero(free))  # no demand left among them: any pairing, seeded
    pairs += [(int(min(u, v)), int(max(u, v))) for u, v in zip(rest[0::2], rest[1::2])]
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)


def blossom_mp(mp, rounds: int, *, decay: bool = True, partners: int | None = 32, seed: int = 0) -> list[np.ndarray]:
    """MP matchings: repeated maximum-weight perfect matchings on the MP demand (spec §2.6).

    Parameters
    ----------
    mp : n x n array
        MP bytes from server i to server j; a pair weighs mp[i, j] + mp[j, i].
    rounds : int
        Matchings (d_mp), >= 0; each uses one interface per server.
    decay : bool
        After a pair gets its c-th link its weight is scaled by c / (c + 1) (so w / (c + 1)).
    partners : int or None
        When the demand has more than `partners` x n positive pairs, Blossom runs on each server's
        `partners` heaviest pairs (then again on the servers left free); None: always exact.
    seed : int
        Seed of the pairing of servers with no demand left among them.

    Returns
    -------
    list of int64 arrays (pairs, 2)
        One per round, rows (i, j) with i < j sorted; n/2 pairs for even n (perfect), one server
        left out for odd n. Weights are scaled to integers (max 2^40) for rustworkx's exact Blossom.

    Examples
    --------
    >>> mp = np.zeros((4, 4)); mp[0, 2] = mp[1, 3] = 5.0
    >>> [m.tolist() for m in blossom_mp(mp, 1)]
    [[[0, 2], [1, 3]]]
    """
    mp = np.asarray(mp, dtype=float)
    n = mp.shape[0] if mp.ndim == 2 else -1
    if n < 2:
        raise ConfigError("mp", f"an array of shape {mp.shape}", "accepted: an n x n array of bytes, n >= 2")
    mp = _demand(mp, n)
    rounds = _int("rounds", rounds, 0)
    if partners is not None:
        partners = _int("partners", partners, 1)
    w0 = mp + mp.T
    np.fill_diagonal(w0, 0.0)
    count = np.zeros((n, n))
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(rounds):
        m = _round(w0 / (count + 1.0) if decay else w0, partners, rng)
        count[m[:, 0], m[:, 1]] += 1
        count[m[:, 1], m[:, 0]] += 1
        out.append(m)
    return out


def random_regular(n: int, d: int, seed: int = 0) -> np.ndarray:
    """A random connected d-regular multigraph (the expander baseline): random pairing of ports.

    Parameters
    ----------
    n : int
        Servers, >= 2.
    d : int
        Interfaces per server, >= 1; n d even.
    seed : int
        Seed.

    Returns
    -------
    int64 array [n, n]
        Symmetric link multiplicities, zero diagonal, every row and column summing to d, connected.
        Self-loops of the pairing are repaired by swapping ends with random other pairs; pairings
        that stay disconnected are redrawn (ConfigError after 200 tries).
    """
    from scipy.sparse.csgraph import connected_components

    n = _int("n", n, 2)
    d = _int("d", d, 1)
    if (n * d) % 2:
        raise ConfigError("d", d, f"accepted: n x d even (n={n})")
    rng = np.random.default_rng(seed)
    for _ in range(200):
        ports = rng.permutation(np.repeat(np.arange(n), d)).reshape(-1, 2)
        for _ in range(100 * n * d):
            loops = np.flatnonzero(ports[:, 0] == ports[:, 1])
            if not len(loops):
                break
            i, j = loops[0], int(rng.integers(len(ports)))
            a, (b, c) = ports[i, 0], ports[j]
            if a not in (b, c):
                ports[i], ports[j] = (a, b), (a, c)
        if (ports[:, 0] == ports[:, 1]).any():
            continue
        conn = np.zeros((n, n), dtype=np.int64)
        np.add.at(conn, (ports[:, 0], ports[:, 1]), 1)
        conn += conn.T
        if connected_components(conn > 0, directed=False)[0] == 1:
            return conn
    raise ConfigError("random_regular", (n, d), "no connected pairing found in 200 tries; accepted: a larger n or d")


def conn_matrix(n: int, jumps, matchings=(), *, bidirectional: bool = True) -> np.ndarray:
    """The multiplicity matrix of ring jumps and matchings.

    Parameters
    ----------
    n : int
        Servers, >= 2.
    jumps : sequence of int
        Ring jumps: each adds i -> i + p (and i -> i - p when bidirectional) for every i.
    matchings : sequence of (pairs, 2) int arrays
        Each pair {i, j} adds i -> j and j -> i.
    bidirectional : bool
        Rings +p and -p (default).

    Returns
    -------
    int64 array [n, n]
        conn[i, j]: parallel links i -> j.

    Examples
    --------
    >>> conn_matrix(4, [1]).sum(axis=1).tolist(), conn_matrix(4, [2])[0].tolist()
    ([2, 2, 2, 2], [0, 0, 2, 0])
    """
    n = _int("n", n, 2)
    conn = np.zeros((n, n), dtype=np.int64)
    i = np.arange(n)
    for p in jumps:
        p = int(p) % n
        if p == 0:
            raise ConfigError("jumps", p, f"accepted: jumps that are not 0 mod {n}")
        np.add.at(conn, (i, (i + p) % n), 1)
        if bidirectional:
            np.add.at(conn, (i, (i - p) % n), 1)
    for m in matchings:
        m = np.asarray(m, dtype=np.int64).reshape(-1, 2)
        if len(m) and (m.min() < 0 or m.max() >= n or (m[:, 0] == m[:, 1]).any()):
            raise ConfigError("matchings", m.tolist()[:4], f"accepted: pairs of distinct servers 0..{n - 1}")
        np.add.at(conn, (m[:, 0], m[:, 1]), 1)
        np.add.at(conn, (m[:, 1], m[:, 0]), 1)
    return conn


def check_degree(conn, d: int) -> None:
    """Check that no server uses more than d interfaces, in or out.

    Parameters
    ----------
    conn : int array [n, n]
        Link multiplicities.
    d : int
        Interfaces per server.

    Returns
    -------
    None
        ConfigError naming the first server whose out- or in-degree exceeds d.
    """
    conn = np.asarray(conn)
    for name, deg in (("out", conn.sum(axis=1)), ("in", conn.sum(axis=0))):
        over = np.flatnonzero(deg > d)
        if len(over):
            s = int(over[0])
            raise ConfigError("conn", f"server {s} {name}-degree {int(deg[s])}",
                              f"accepted: at most d={d} links per server")
