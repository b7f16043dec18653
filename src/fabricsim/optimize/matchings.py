"""What TopoOpt's TopologyFinder wires besides rings: MP matchings (repeated Blossom maximum-weight
matchings on the MP demand), the expander baseline (a random d-regular graph), the connection
matrix of rings and matchings, and its degree check. Re-exported by `optimize.perms`.

A matching pair {i, j} costs 1 interface at each end. A topology is the integer multiplicity
matrix `conn[i, j]` (parallel links i -> j).
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from .rings import _demand, _int


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
