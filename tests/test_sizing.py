"""The `blocks` limit's estimate (`sizing.estimate_blocks`): every algorithm states its own next to
its descriptor (`Algorithm.estimate`), or is listed here as taking the quadratic bound; the expected
values are closed forms written out below."""

from __future__ import annotations

import pytest

from fabricsim.collectives.registry import ALGORITHMS
from fabricsim.collectives.sizing import estimate_blocks

# Registered algorithms without an estimate of their own: they get p x p x chunks. A new algorithm
# must state `estimate=` or be added here on purpose, so none loses its estimate silently.
QUADRATIC = ("nvls_tree",)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_states_its_estimate_or_is_listed_as_quadratic(name):
    alg = ALGORITHMS[name]
    if name in QUADRATIC:
        assert alg.estimate is None, f"{name} states an estimate: take it off QUADRATIC"
    else:
        assert callable(alg.estimate), f"{name} states no estimate (Algorithm.estimate) and is not in QUADRATIC"


def test_the_quadratic_list_names_registered_algorithms():
    assert set(QUADRATIC) <= set(ALGORITHMS)


@pytest.mark.parametrize("alg, coll, p, opts, expected", [
    ("ring", "all-reduce", 8, {}, 4.0 * 8),  # one compressed step per phase and direction
    ("swing", "all-reduce", 16, {"dims": (4, 4)}, 8.0 * 2 * 16 * 4),  # 2D ports x log2 p steps x 2 phases
    ("torus_recursive_doubling", "reduce-scatter", 16, {"dims": (4, 4)}, 8.0 * 2 * 16 * 4),
    ("halving_doubling", "all-reduce", 7, {}, 2.0 * 7 * (3 + 1)),  # ceil(log2 7) = 3, fold and unfold
    ("nvls_tree", "all-reduce", 16, {"chunks": 3}, 16.0 * 16 * 3),  # quadratic: p x p x chunks
    ("no_such_algorithm", "all-reduce", 5, {}, 5.0 * 5),
])
def test_estimates_match_their_closed_forms(alg, coll, p, opts, expected):
    assert estimate_blocks(alg, coll, p, opts) == expected
