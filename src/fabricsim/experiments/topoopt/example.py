"""The spec's worked example (docs/specs/topoopt.md §2.10), computed: TotientPerms, the geometric
jumps and the circulant's diameter, coin-change hops per strided group size, and the trade-off of
the degree split on the toy MP demand (option A: all degree to rings; option B: one ring and two
Blossom matchings)."""

from __future__ import annotations

import numpy as np


def toy_demand(n: int = 12) -> np.ndarray:
    """The spec's toy MP demand on n = 12 servers: 100 units on (i, i + 6), 60 on (0,3), (6,9),
    (1,4), (7,10), (2,5), (8,11), 1 on every other pair (symmetric).

    Parameters
    ----------
    n : int
        Servers (12 in the spec).

    Returns
    -------
    float array [n, n]
    """
    mp = np.ones((n, n)) - np.eye(n)
    half = n // 2
    for i in range(half):
        mp[i, i + half] = mp[i + half, i] = 100
    for a, b in ((0, 3), (6, 9), (1, 4), (7, 10), (2, 5), (8, 11)):
        if b < n:
            mp[a, b] = mp[b, a] = 60
    return mp


def worked_example(n: int = 12, d: int = 4) -> dict:
    """The example's numbers (module doc).

    Parameters
    ----------
    n : int
        Servers.
    d : int
        Interfaces per server (even).

    Returns
    -------
    dict
        n, d, totient (TotientPerms(n)), jumps (geometric, d/2 of them), diameter, mean_hops,
        coin_hops ({group size: hops of its ring step}), matchings (option B's pairs per round),
        mp_hops_a and mp_hops_b (byte-weighted MP hops of the two options, upper triangle: each
        pair once).
    """
    from ...optimize.finder import FoundTopology
    from ...optimize.perms import (
        blossom_mp,
        coin_change,
        conn_matrix,
        diameter_and_mean_hops,
        select_permutations,
        totient_perms,
    )

    tot = totient_perms(n)
    jumps = select_permutations(tot, d // 2, n=n)
    diam, mean = diameter_and_mean_hops(n, jumps)
    hops = coin_change(n, jumps)
    coin = {k: int(hops[n // k]) for k in range(2, n) if n % k == 0}
    mp = toy_demand(n)
    upper = np.triu(mp)
    a = FoundTopology(n, d, conn_matrix(n, jumps), tuple(jumps))
    matchings = blossom_mp(mp, d // 2)
    b = FoundTopology(n, d, conn_matrix(n, (1,), matchings), (1,), matchings=tuple(matchings))
    return {"n": n, "d": d, "totient": list(tot), "jumps": list(jumps), "diameter": diam, "mean_hops": mean,
            "coin_hops": coin, "matchings": [sorted(map(tuple, m.tolist())) for m in matchings],
            "mp_hops_a": a.byte_weighted_hops(upper), "mp_hops_b": b.byte_weighted_hops(upper)}
