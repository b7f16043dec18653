"""Every registered algorithm x collective, through `verify`, for every group size 2..33 and
64, 100, 128, 1000 it supports; the sizes it does not support are rejected with a clear error.

New algorithms are covered by registering them: nothing to add here.
"""

from __future__ import annotations

import pytest

from fabricsim.collectives.registry import ALGORITHMS
from fabricsim.collectives.verify import verify
from fabricsim.errors import UnsupportedGroupSize

SIZES = list(range(2, 34)) + [64, 100, 128, 1000]

ALL = {"all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast", "reduce"}
# What each algorithm serves, and which collectives need a power-of-two group: stated here,
# independently of the registry (a new algorithm adds its line).
EXPECTED = {
    "ring": (ALL - {"all-to-all"}, set()),
    "direct": (ALL, set()),
    "recursive_doubling": ({"all-reduce", "all-gather", "broadcast", "reduce"}, {"all-gather"}),
    "halving_doubling": ({"all-reduce", "reduce-scatter", "all-gather"}, {"reduce-scatter", "all-gather"}),
    "double_binary_tree": ({"all-reduce"}, set()),
    "hierarchical": ({"all-reduce", "reduce-scatter", "all-gather", "all-to-all"}, set()),
    "in_network": (ALL - {"all-to-all"}, set()),
    "in_network_tree": (ALL - {"all-to-all"}, set()),
    "bucket": ({"all-reduce", "reduce-scatter", "all-gather"}, set()),
    "hamiltonian_rings": ({"all-reduce", "reduce-scatter", "all-gather"}, set()),
    "circulant_rings": ({"all-reduce", "reduce-scatter", "all-gather"}, set()),
    "nccl_ring": ({"all-reduce", "reduce-scatter", "all-gather"}, set()),
    "nccl_tree": ({"all-reduce"}, set()),
    "nvls": ({"all-reduce"}, set()),
    "nvls_tree": ({"all-reduce"}, set()),
    "swing": ({"all-reduce", "reduce-scatter", "all-gather"}, set()),
    "torus_recursive_doubling": ({"all-reduce", "reduce-scatter", "all-gather"}, {"all-reduce", "reduce-scatter", "all-gather"}),
}


def test_registry_declares_what_is_expected():
    assert set(ALGORITHMS) == set(EXPECTED)
    for name, (colls, pow2_only) in EXPECTED.items():
        alg = ALGORITHMS[name]
        assert set(alg.collectives) == colls, name
        assert set(alg.pow2_only) == pow2_only, name
        for c in colls:
            for p in SIZES:
                ok = c not in pow2_only or (p & (p - 1)) == 0
                assert (alg.supports(c, p) is None) == ok, (name, c, p)
CASES = [(a.name, c) for a in ALGORITHMS.values() for c in a.collectives]


def _build(alg, collective, p):
    kwargs = {"root": p // 3} if collective in ("broadcast", "reduce") else {}
    return alg.build(collective, p, **kwargs)


@pytest.mark.parametrize("name, collective", CASES, ids=[f"{a}-{c}" for a, c in CASES])
def test_every_supported_size_verifies(name, collective):
    alg = ALGORITHMS[name]
    checked = 0
    for p in SIZES:
        if alg.supports(collective, p) is not None:
            continue
        s = _build(alg, collective, p)
        assert (s.p, s.collective) == (p, collective)
        rep = verify(s, seed=p)
        assert rep.blocks_checked == s.nblocks
        checked += 1
    assert checked >= 6  # every algorithm serves at least the powers of two


@pytest.mark.parametrize("name, collective", CASES, ids=[f"{a}-{c}" for a, c in CASES])
def test_unsupported_sizes_are_rejected_clearly(name, collective):
    alg = ALGORITHMS[name]
    for p in SIZES:
        reason = alg.supports(collective, p)
        if reason is None:
            continue
        with pytest.raises(UnsupportedGroupSize) as err:
            _build(alg, collective, p)
        msg = str(err.value)
        assert "\n" not in msg and str(p) in msg and "accepted" in msg
