"""The analytical model's straight-path route (difference arrays along rings) against the hop list.

`route_step` prices steps on rings, tori and meshes without listing every hop
(`analytical.straight.route_straight`); the general route (`analytical.route._route_hops`, every hop in a
sparse incidence matrix) is the oracle: link loads, used links, path latencies and path
bandwidths must agree bit for bit, and so must whole-collective times.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp
import pytest

from fabricsim.collectives.api import build_schedule
from fabricsim.errors import UnsupportedGroupSize
from fabricsim.network import analytical
from fabricsim.network.analytical import route as analytical_route
from fabricsim.network.analytical import AnalyticalCollective, RoutedStep, route_step
from fabricsim.network.analytical.route import _route_hops
from fabricsim.network.analytical.straight import route_straight as _route_straight
from fabricsim.topology import mesh, ring, stack, switch, torus

B = 50e9  # bytes/s per link and direction
A = 1e-7  # s per link

TOPOLOGIES = [
    ring(2, B, A), ring(7, B, A), ring(8, B, A), ring(9, B, A, bidirectional=False), ring(16, B, A),
    torus((4, 4), B, A), torus((5, 3), B, A), torus((2, 6), B, A), torus((6, 6), B, A),
    torus((3, 4, 5), [B, B / 2, B / 4], [A, 2 * A, 3 * A]), torus((8, 1, 2), B, A),
    mesh((4, 4), B, A), mesh((3, 5), B, A),
    stack(("uniring", "ring", "line"), (3, 4, 2), [B, B / 3, B / 7], [A, A / 3, A / 7]),
]
IDS = [t.name for t in TOPOLOGIES]


def _oracle(topo, src, dst, frac):
    """The hop-list route's numbers: link loads per byte, used links, path latency (s), bandwidth (bytes/s)."""
    step = SimpleNamespace(reduce=np.zeros(len(src), bool), first_block=None)
    inc, lat, bw = _hop_matrix(topo, src, dst, step)
    g = RoutedStep(1, inc, frac, lat, bw)
    return g.link_frac, g.used_links, lat, bw


def _hop_matrix(topo, src, dst, step):
    """The hop list as an incidence matrix [links, transfers] (scipy: the oracle's own sum of link loads)."""
    links, tid, use, lat, bw = _route_hops(topo, src, dst, step)
    return sp.csr_matrix((use, (links, tid)), shape=(topo.n_links, len(src))), lat, bw


def _assert_same(topo, src, dst, frac):
    fast = _route_straight(topo, src, dst, np.zeros(len(src), bool), frac)
    assert fast is not None
    link_frac, used, lat, bw = fast
    used = used() if callable(used) else used
    o_frac, o_used, o_lat, o_bw = _oracle(topo, src, dst, frac)
    assert np.array_equal(link_frac, o_frac)  # bit for bit, not approximately
    assert np.array_equal(used, o_used)
    assert np.array_equal(lat, o_lat)
    assert np.array_equal(bw, o_bw)


@pytest.mark.parametrize("topo", TOPOLOGIES, ids=IDS)
def test_every_pair_uniform_size(topo):
    """All p^2 pairs (self-pairs, both directions, half-way ties) with one non-dyadic size (1/3)."""
    p = topo.n_npus
    src, dst = np.divmod(np.arange(p * p), p)
    _assert_same(topo, src, dst, np.full(p * p, 1 / 3))


@pytest.mark.parametrize("topo", TOPOLOGIES, ids=IDS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_pairs_dyadic_sizes(topo, seed):
    """Random pairs with mixed power-of-two sizes (exact in any order), zero-byte transfers included."""
    rng = np.random.default_rng(seed)
    p, t = topo.n_npus, 3 * topo.n_npus
    src, dst = rng.integers(0, p, t), rng.integers(0, p, t)
    frac = np.ldexp(rng.integers(0, 9, t).astype(float), -rng.integers(0, 30, t))
    _assert_same(topo, src, dst, frac)


def test_half_way_ties_go_plus():
    """On an even ring a half-way transfer goes + (as the router): the + links carry it, not the - ones."""
    topo = ring(8, B, A)
    src = np.arange(8)
    _assert_same(topo, src, (src + 4) % 8, np.full(8, 0.25))
    link_frac = _route_straight(topo, src, (src + 4) % 8, np.zeros(8, bool), np.full(8, 0.25))[0]
    plus = topo.link_dst == (topo.link_src + 1) % 8
    assert np.all(link_frac[plus] == 1.0) and np.all(link_frac[~plus] == 0.0)


def test_empty_step():
    topo = torus((4, 4), B, A)
    none = np.zeros(0, np.int64)
    link_frac, used, lat, bw = _route_straight(topo, none, none, np.zeros(0, bool), np.zeros(0))
    assert not link_frac.any() and len(used() if callable(used) else used) == 0 and len(lat) == len(bw) == 0


def test_falls_back_where_order_or_topology_matters():
    """Mixed non-dyadic sizes, non-uniform links and other routers keep the hop list."""
    topo = ring(8, B, A)
    src, dst = np.arange(8), (np.arange(8) + 3) % 8
    no = np.zeros(8, bool)
    assert _route_straight(topo, src, dst, no, np.linspace(0.1, 0.7, 8)) is None
    lat = topo.link_lat.copy()
    lat[0] *= 2
    assert _route_straight(dataclasses.replace(topo, link_lat=lat), src, dst, no, np.full(8, 0.5)) is None
    bw = topo.link_bw.copy()
    bw[3] /= 2
    assert _route_straight(dataclasses.replace(topo, link_bw=bw), src, dst, no, np.full(8, 0.5)) is None
    assert _route_straight(switch(8, B, A), src, dst, no, np.full(8, 0.5)) is None
    assert _route_straight(stack(("ring", "fc"), (4, 2), B, A), src, dst, no, np.full(8, 0.5)) is None


SCHEDULES = [
    ("torus:8x8", "all-reduce", "swing"), ("torus:8x8", "all-reduce", "torus_recursive_doubling"),
    ("torus:16x16", "all-reduce", "swing"), ("torus:6x6", "all-reduce", "swing"),
    ("torus:2x6", "all-reduce", "swing"), ("torus:4x4x4", "all-reduce", "swing"),
    ("ring:64", "all-reduce", "swing"), ("ring:12", "all-reduce", "swing"), ("ring:7", "all-reduce", "swing"),
    ("ring:16", "all-reduce", "torus_recursive_doubling"), ("torus:8x8", "all-reduce", "recursive_doubling"),
    ("torus:5x3", "all-reduce", "ring"), ("torus:4x4", "all-to-all", "direct"),
    ("mesh:4x4", "all-reduce", "swing"), ("torus:8x8", "reduce-scatter", "swing"),
    ("torus:8x8", "all-gather", "swing"), ("ring:9,uni", "all-reduce", "recursive_doubling"),
]


def _schedule(spec, collective, algorithm):
    from fabricsim.topology import parse_topology

    topo = parse_topology(spec, "400Gbps", "100ns")
    try:
        return topo, build_schedule(topo, collective, algorithm)
    except UnsupportedGroupSize:
        pytest.skip(f"{algorithm} does not run on {spec}")


@pytest.mark.parametrize("spec,collective,algorithm", SCHEDULES)
def test_schedule_steps_match_hop_list(spec, collective, algorithm):
    """Every step shape of real schedules: the same numbers as the hop list, bit for bit."""
    topo, sched = _schedule(spec, collective, algorithm)
    fast = 0
    for st in sched.steps:
        # a full mesh's own route has one row per path shape (tests/test_full_mesh.py): here its listed form
        st = st if st.listed else st.explicit()
        r = route_step(topo, sched, st)
        fast += callable(r._incidence)  # incidence deferred: the fast route priced this step
        nodes = sched.topology_nodes()
        src, dst = nodes[st.src], nodes[st.dst]
        o_frac, o_used, o_lat, o_bw = _oracle(topo, src, dst, r.frac)
        assert np.array_equal(r.link_frac, o_frac)
        assert np.array_equal(r.used_links, o_used)
        assert np.array_equal(r.path_latency, o_lat)
        assert np.array_equal(r.path_bw, o_bw)
        # the deferred incidence is the hop list's own
        inc, _, _ = _hop_matrix(topo, src, dst, st)
        assert (r.incidence != inc).nnz == 0
    assert fast  # the fast route was taken (for every step of power-of-two schedules, some of the others)


@pytest.mark.parametrize("spec,collective,algorithm", SCHEDULES)
@pytest.mark.parametrize("model", ["congestion-aware", "congestion-unaware"])
def test_collective_times_match_hop_list(spec, collective, algorithm, model, monkeypatch):
    """Times, per-step times, phase times and link loads equal with the fast route switched off."""
    topo, sched = _schedule(spec, collective, algorithm)
    sizes = np.array([1.0, 1000.0, 2.0**20, 2.0**30])
    fast = AnalyticalCollective(topo, sched, model, step_overhead=1e-6, injection=3e10)
    monkeypatch.setattr(analytical_route, "route_straight", lambda *a: None)
    slow = AnalyticalCollective(topo, sched, model, step_overhead=1e-6, injection=3e10)
    assert np.array_equal(fast.times(sizes), slow.times(sizes))
    assert np.array_equal(fast.step_costs(sizes), slow.step_costs(sizes))
    assert np.array_equal(fast.phase_times(2.0**24), slow.phase_times(2.0**24))
    assert np.array_equal(fast.link_frac, slow.link_frac)
    assert [list(p) for p in fast.phases] == [list(p) for p in slow.phases]
    assert analytical.deficiencies(topo, sched, routed=fast.routed) == analytical.deficiencies(topo, sched,
                                                                                             routed=slow.routed)


def test_placed_on_a_subgroup():
    """A schedule placed on part of a torus (not rank order) routes the same both ways."""
    topo = torus((8, 8), B, A)
    group = [9, 10, 17, 18, 41, 42, 49, 50]
    sched = build_schedule(topo, "all-reduce", "recursive_doubling", group=group)
    for st in sched.steps:
        r = route_step(topo, sched, st)
        nodes = sched.topology_nodes()
        o_frac, o_used, o_lat, o_bw = _oracle(topo, nodes[st.src], nodes[st.dst], r.frac)
        assert np.array_equal(r.link_frac, o_frac) and np.array_equal(r.used_links, o_used)
        assert np.array_equal(r.path_latency, o_lat) and np.array_equal(r.path_bw, o_bw)


def test_unaware_envelope_matches_every_transfer():
    """The congestion-unaware step time (distinct (latency, s/byte) pairs) equals the max over all transfers."""
    from fabricsim.network.analytical import step_times

    rng = np.random.default_rng(3)
    t = 5000
    lat = rng.choice([0.0, 1e-7, 3e-7, 2.5e-6], t)
    frac = rng.choice([0.0, 1 / 3, 0.25, 1.0], t)
    bw = rng.choice([np.inf, B, B / 3], t)
    topo = ring(8, B, A)
    r = RoutedStep(1, None, frac, lat, bw)
    sizes = np.array([0.0, 1.0, 1e3, 2.0**20, 2.0**30, 1e12])
    per_byte = np.where(np.isfinite(bw), frac / bw, 0.0)
    expect = np.max(lat[:, None] + per_byte[:, None] * sizes[None, :], axis=0)
    assert np.array_equal(step_times(topo, r, sizes, "congestion-unaware"), expect)


@pytest.mark.parametrize("size", [1 / 3, 0.1, 1 / 7])
def test_many_crossings_sequential_sums(size):
    """Hundreds of equal non-dyadic transfers on one link: the sequential sum, not k * size or a pairwise sum."""
    topo = ring(64, B, A)
    src, dst = np.divmod(np.arange(64 * 64), 64)
    _assert_same(topo, src, dst, np.full(64 * 64, size))
    count = _route_straight(topo, src, dst, np.zeros(64 * 64, bool), np.ones(64 * 64))[0]
    assert count.max() > 500  # enough crossings that k * size and pairwise sums would differ
