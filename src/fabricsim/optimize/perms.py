"""Building blocks of TopoOpt's TopologyFinder (NSDI'23): ring permutations of Z_n, their
selection, coin-change routing over them, Blossom matchings, the expander baseline and the
connection matrix (the AR/MP degree split is TopologyFinder's first step, in `finder`).

Servers are the cyclic group Z_n. A ring jump p wires every server i to i + p (mod n); in the
bidirectional mode a ring is the pair +p, -p and costs 2 interfaces per server (p and n - p are
the same ring, so jumps are kept as p <= n/2). A matching pair {i, j} costs 1 interface at each
end. A topology is the integer multiplicity matrix `conn[i, j]` (parallel links i -> j).

The blocks live in two modules, both re-exported here:

- `optimize.rings`: the ring jumps (`totient_perms`, `candidate_jumps`, `select_permutations`),
  the hops of their circulant graph and coin-change routing over them;
- `optimize.matchings`: what is wired besides rings and the whole (`blossom_mp`, `random_regular`,
  `conn_matrix`, `check_degree`).

Examples
--------
The worked example n=12, d=4 (two bidirectional rings of the 12-server group):

>>> jumps = select_permutations(totient_perms(12), 2, n=12); totient_perms(12), jumps
([1, 5, 7, 11], (1, 5))
>>> conn_matrix(12, jumps).sum(axis=1).tolist() == [4] * 12   # 2 rings x 2 directions per server
True
"""

from __future__ import annotations

# re-exported: matchings, the expander and the connection matrix
from .matchings import blossom_mp, check_degree, conn_matrix, random_regular  # noqa: F401

# re-exported: the ring permutations and the input checks (`finder` imports _canon, _demand, _int from here)
from .rings import (  # noqa: F401
    MODES,
    _canon,
    _demand,
    _int,
    candidate_jumps,
    circulant_distances,
    coin_change,
    coin_change_paths,
    diameter_and_mean_hops,
    select_permutations,
    totient_perms,
)
