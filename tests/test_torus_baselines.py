"""The Swing paper's torus baselines: bucket and Hamiltonian rings.

Correctness through `verify`; shapes (lock-step steps, compressed `Step` objects) and
congestion-aware times on fabricsim tori against closed forms derived here from the spec
(docs/specs/swing.md §2 items 1 and 5): every directed link carries one message per step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.bucket import bucket, bucket_parts
from fabricsim.collectives.hamiltonian_rings import (
    hamiltonian_rings,
    snake_cycles,
    torus_cycles,
)
from fabricsim.collectives.ring import ring
from fabricsim.collectives.verify import verify
from fabricsim.errors import ConfigError
from fabricsim.network import time_schedule
from fabricsim.topology import torus

COLLS = ("all-reduce", "reduce-scatter", "all-gather")
B = 50e9  # bytes/s per link
LAT = 1e-6  # s per link
S = 2.0**26  # bytes


def _sample(p: int) -> int | None:
    return None if p <= 256 else (500 if p >= 4096 else 2000)


# ---- correctness ------------------------------------------------------------------------------

BUCKET_DIMS = [(2, 2), (4, 4), (8, 8), (16, 16), (4, 8), (8, 4), (16, 4), (3, 5), (2, 3, 4), (8, 8, 8),
               (32, 32), (64, 64), (5,), (1, 6), (3, 1, 4)]
HAM_DIMS = [(2, 2), (4, 4), (8, 8), (16, 16), (4, 8), (8, 4), (16, 4), (4, 16), (3, 9), (2, 4), (1, 8, 8),
            (32, 32), (64, 64), (7,)]
SLOW_DIMS = {(64, 64)}  # 4,096 ranks (5 s each) under -m slow; 32x32 (1,024, sampled too) in the default run


def _dims_params(dims_list):
    return [pytest.param(d, marks=[pytest.mark.slow] if d in SLOW_DIMS else [], id="x".join(map(str, d)))
            for d in dims_list]


@pytest.mark.parametrize("dims", _dims_params(BUCKET_DIMS))
def test_bucket_verifies(dims):
    p = math.prod(dims)
    for c in COLLS if p <= 512 else ("all-reduce",):
        s = bucket(c, p, dims=dims)
        verify(s, seed=p, sample=_sample(p))


@pytest.mark.parametrize("dims", _dims_params(HAM_DIMS))
def test_hamiltonian_rings_verify(dims):
    p = math.prod(dims)
    for c in COLLS if p <= 512 else ("all-reduce",):
        s = hamiltonian_rings(c, p, dims=dims)
        verify(s, seed=p, sample=_sample(p))


@pytest.mark.parametrize("dims", [(3, 5), (3, 6), (6, 3), (2, 3), (5, 7), (2, 3, 4), (8, 8, 8)])
def test_hamiltonian_rings_reject_other_shapes(dims):
    with pytest.raises(ConfigError) as err:
        hamiltonian_rings("all-reduce", math.prod(dims), dims=dims)
    msg = str(err.value)
    assert "\n" not in msg and "gcd(r, c-1) = 1" in msg and "dims" in msg


# ---- the Hamiltonian cycles -------------------------------------------------------------------


def _torus_edge(dims, a, b):
    """Undirected torus edge between ranks a and b as a hashable key; fails if not neighbours."""
    strides = np.cumprod((1,) + tuple(dims[:-1]))
    ca = [(a // strides[d]) % dims[d] for d in range(len(dims))]
    cb = [(b // strides[d]) % dims[d] for d in range(len(dims))]
    diff = [d for d in range(len(dims)) if ca[d] != cb[d]]
    assert len(diff) == 1, (a, b)
    d = diff[0]
    assert (ca[d] - cb[d]) % dims[d] in (1, dims[d] - 1), (a, b)
    return (min(a, b), max(a, b))


@pytest.mark.parametrize("dims", [(8, 8), (16, 16), (64, 64), (16, 4), (4, 16), (4, 8), (8, 4), (3, 9), (9, 3),
                                  (5, 25), (3, 3)])
def test_cycles_are_hamiltonian_and_edge_disjoint(dims):
    p = math.prod(dims)
    cycles = torus_cycles(dims)
    assert len(cycles) == 2
    edge_sets = []
    for order in cycles:
        assert np.array_equal(np.sort(order), np.arange(p))  # every node exactly once
        nxt = np.roll(order, -1)
        edges = {_torus_edge(dims, int(a), int(b)) for a, b in zip(order, nxt)}
        assert len(edges) == p  # a cycle, no edge twice
        edge_sets.append(edges)
    assert not edge_sets[0] & edge_sets[1]
    assert len(edge_sets[0] | edge_sets[1]) == 2 * p  # together: every edge of the torus


def test_snake_condition_is_what_the_construction_needs():
    """Cycle 1 visits every node exactly once iff gcd(r, c-1) = 1 (r = k1 rows, c = k0 columns,
    c | r); cycle 0 always does."""
    for c in range(2, 8):
        for r in range(c, 8 * c, c):
            (r0, c0), (r1, c1) = snake_cycles(c, r)
            assert len(set(zip(r0.tolist(), c0.tolist()))) == r * c
            assert (len(set(zip(r1.tolist(), c1.tolist()))) == r * c) == (math.gcd(r, c - 1) == 1), (r, c)


# ---- shapes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [(4, 4), (8, 8), (16, 16), (64, 64), (5, 5, 5), (8, 8, 8), (7,)])
def test_bucket_square_steps(dims):
    a, D = dims[0], len(dims)
    s = bucket("all-reduce", math.prod(dims), dims=dims)
    assert s.n_steps == 2 * D * (a - 1)
    assert len(s.steps) == 2 * D * D  # one compressed Step per dimension (lane) per phase
    assert s.nblocks == 2 * D * s.p


@pytest.mark.parametrize("dims", [(4, 8), (8, 4), (16, 4), (3, 5), (2, 3, 4), (3, 4, 5), (6, 1, 2)])
def test_bucket_phases_are_synchronized(dims):
    D = sum(d > 1 for d in dims)
    s = bucket("all-reduce", math.prod(dims), dims=dims)
    assert s.n_steps == 2 * D * (max(dims) - 1)  # every phase as long as its longest ring
    assert len(s.steps) == 2 * D * D  # one compressed Step per dimension (lane) per phase


def test_hamiltonian_rings_shape():
    s = hamiltonian_rings("all-reduce", 4096, dims=(64, 64))
    assert len(s.steps) == 2 and s.n_steps == 2 * 4095 and s.nblocks == 4 * 4096
    s1 = hamiltonian_rings("all-reduce", 10)  # 1-D: the bidirectional ring
    assert s1.nblocks == 20 and s1.n_steps == 18


def test_bucket_64x64_is_compressed():
    s = bucket("all-reduce", 4096, dims=(64, 64))
    assert [st.repeat for st in s.steps] == [63] * 8  # 4 phases x 2 lanes (dimensions)


# ---- time on a torus --------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [(8, 8), (16, 16), (4, 16)])
def test_hamiltonian_rings_time(dims):
    p = math.prod(dims)
    topo = torus(dims, B, LAT)
    t = time_schedule(topo, build_schedule(topo, "all-reduce", "hamiltonian_rings"), [S])
    expect = 2 * (p - 1) * (LAT + S / (4 * p * B))  # every link: one message of S/(4p) per step
    assert t.times[0] == pytest.approx(expect, rel=1e-9)
    per_link = t.link_bytes(S)
    assert np.allclose(per_link, 2 * (p - 1) * S / (4 * p))  # every directed link used, evenly


def _bucket_time(dims) -> float:
    """Closed form for tori whose dimensions are all >= 3 (no shared links): RS phase j of a
    part with dimension order o sends, per step, one block of (S/2D) / prod(dims[o[:j+1]]) to
    its neighbour (its active data (S/2D) / prod(dims[o[:j]]) split into dims[o[j]] blocks).
    Parts on the same dimension go in opposite directions, so per step a link carries one
    message; rings on different dimensions are independent and the phase (synchronized across
    instances) lasts as long as its slowest ring.
    The all-gather mirrors the reduce-scatter."""
    parts = bucket_parts(dims)
    D = len(parts) // 2
    total = 0.0
    for j in range(D):
        # each ring runs at its own pace (its own links); the phase ends with the slowest ring
        rings = [(dims[o[j]] - 1, S / (2 * D) / math.prod(dims[e] for e in o[: j + 1])) for o, _ in parts]
        total += max(n * (LAT + m / B) for n, m in rings)
    return 2 * total


@pytest.mark.parametrize("dims", [(4, 4), (8, 8), (16, 16), (8, 8, 8)])
def test_bucket_square_time(dims):
    a, D = dims[0], len(dims)
    topo = torus(dims, B, LAT)
    t = time_schedule(topo, build_schedule(topo, "all-reduce", "bucket"), [S])
    # 2D phases of a-1 steps; RS phase j (and its AG mirror): one message of S/(2D a^(j+1)) per link
    expect = 2 * sum((a - 1) * (LAT + S / (2 * D * a ** (j + 1) * B)) for j in range(D))
    assert t.times[0] == pytest.approx(expect, rel=1e-9)
    assert t.times[0] == pytest.approx(_bucket_time(dims), rel=1e-9)


@pytest.mark.parametrize("dims", [(4, 8), (8, 4), (3, 5), (16, 4), (3, 4, 5)])
def test_bucket_non_square_time(dims):
    topo = torus(dims, B, LAT)
    t = time_schedule(topo, build_schedule(topo, "all-reduce", "bucket"), [S])
    assert t.times[0] == pytest.approx(_bucket_time(dims), rel=1e-9)


def test_one_dimension_is_the_bidirectional_ring():
    topo = torus((12,), B, LAT)
    ref = time_schedule(topo, ring("all-reduce", 12, bidirectional=True), [S]).times[0]
    for name in ("bucket", "hamiltonian_rings"):
        s = build_schedule(topo, "all-reduce", name)
        assert s.n_steps == 22
        assert time_schedule(topo, s, [S]).times[0] == pytest.approx(ref, rel=1e-12)


def test_build_schedule_passes_the_torus_dims():
    topo = torus((4, 8), B, LAT)
    assert build_schedule(topo, "all-reduce", "bucket").meta["dims"] == (4, 8)
    assert build_schedule(topo, "all-reduce", "hamiltonian_rings").meta["dims"] == (4, 8)
