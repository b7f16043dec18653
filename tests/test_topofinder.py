"""TopoOpt's TopologyFinder (shared/specs/topoopt.md §2.3-2.10): the group-theory blocks, the
degree split, Blossom matchings, the finder itself, its Topology and the circulant family.

Expected values are the spec's numbers or closed forms worked out by hand in the comments."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components

from fabricsim.errors import ConfigError
from fabricsim.optimize.finder import FoundTopology, allocate_degree, split_degree, to_topology, topology_finder
from fabricsim.optimize.perms import (
    blossom_mp,
    candidate_jumps,
    check_degree,
    circulant_distances,
    coin_change,
    coin_change_paths,
    conn_matrix,
    diameter_and_mean_hops,
    random_regular,
    select_permutations,
    totient_perms,
)
from fabricsim.topology import build_topology, parse_topology, topology_from_config


# ---- TotientPerms, candidate table (§2.4, §2.10) -------------------------------------------------


def test_totient_perms_of_12():
    assert totient_perms(12) == [1, 5, 7, 11]  # phi(12) = 4: the generators of Z_12


def test_candidate_table_n12():
    # §2.10: size 6 stride 2 {2, 10}; size 4 stride 3 {3, 9}; size 3 stride 4 {4, 8}; size 2 stride 6 {6}
    assert candidate_jumps(12) == {2: [6], 3: [4, 8], 4: [3, 9], 6: [2, 10], 12: [1, 5, 7, 11]}


def test_totient_perms_subgroup_count_is_phi_k():
    # n = 128, k = 64: stride 2, q odd in 1..63: phi(64) = 32 jumps 2, 6, 10, ...
    assert totient_perms(128, 64) == [2 * q for q in range(1, 64, 2)]


# ---- circulant hops, SelectPermutations (§2.5) ---------------------------------------------------


def test_c12_1_5_diameter_and_mean_hops():
    # offsets 1,5,7,11: 1 hop; 2,4,6,8,10: 2 hops; 3,9: 3 hops -> mean (4 + 10 + 6) / 11 = 20/11
    assert circulant_distances(12, [1, 5]).tolist() == [0, 1, 2, 3, 2, 1, 2, 1, 2, 3, 2, 1]
    d, m = diameter_and_mean_hops(12, [1, 5])
    assert d == 3 and m == pytest.approx(20 / 11)
    d, m = diameter_and_mean_hops(12, [1])  # a single ring: diameter n/2, mean n^2/4 / (n-1)
    assert d == 6 and m == pytest.approx(36 / 11)


def test_disconnected_circulant_is_infinite():
    assert diameter_and_mean_hops(12, [2]) == (float("inf"), float("inf"))
    assert circulant_distances(12, [2])[1] == -1


@pytest.mark.parametrize("n, d, jumps, diam, mean", [
    (12, 4, (1, 5), 3, 1.82),
    (128, 4, (1, 13), 10, 5.62),
    (128, 8, (1, 5, 13, 39), 5, 2.96),
    (432, 8, (1, 5, 23, 95), 7, 4.09),
    (1024, 8, (1, 7, 33, 181), 8, 5.12),
])
def test_geometric_selection_matches_spec_table(n, d, jumps, diam, mean):
    got = select_permutations(totient_perms(n), d // 2, n=n)
    assert got == jumps
    dm, mm = diameter_and_mean_hops(n, got)
    assert dm == diam and mm == pytest.approx(mean, abs=0.005)


def test_geometric_never_picks_p_and_n_minus_p():
    # n = 12 has only phi(12)/2 = 2 distinct rings: m = 2 takes both, m = 3 is refused
    assert select_permutations([1, 5, 7, 11], 2, n=12) == (1, 5)
    with pytest.raises(ConfigError, match="at most 2 distinct rings"):
        select_permutations([1, 5, 7, 11], 3, n=12)
    # one-way rings: p and n - p are different rings, four of them
    assert select_permutations([1, 5, 7, 11], 4, n=12, bidirectional=False) == (1, 5, 7, 11)


def test_search_mode_favours_the_demanded_offset():
    # n = 32, m = 2: 8 rings p in {1, 3, ..., 15}, all 28 pairs scored; MP bytes only at offset 7:
    # a set holding 7 serves them in 1 hop, none without 7 can
    mp = np.zeros((32, 32))
    mp[np.arange(32), (np.arange(32) + 7) % 32] = 1e6
    got = select_permutations(totient_perms(32), 2, n=32, mode="search", mp=mp)
    assert 7 in got
    assert select_permutations(totient_perms(32), 2, n=32, mode="search", mp=mp, seed=5) == got


# ---- coin change (§2.7, §2.10) -------------------------------------------------------------------


def test_coin_change_hops_of_spec_example():
    hops = coin_change(12, [1, 5, 7, 11])
    assert sorted(np.flatnonzero(hops == 1)) == [1, 5, 7, 11]
    assert sorted(np.flatnonzero(hops == 2)) == [2, 4, 6, 8, 10]
    assert sorted(np.flatnonzero(hops == 3)) == [3, 9]


def test_coin_change_paths_of_spec_example():
    coins = [1, 5, 7, 11]  # +-1, +-5 as residues mod 12
    # pairs (a, b) of coins with a + b = 2 (mod 12): 1+1, 7+7 (= -5-5)
    assert coin_change_paths(12, coins, 2) == [(1, 1), (7, 7)]
    # a + b = 4: only 5 + 11 (+5 -1) and 11 + 5
    assert coin_change_paths(12, coins, 4) == [(5, 11), (11, 5)]
    # a + b = 6: 1+5, 5+1, 7+11, 11+7
    assert coin_change_paths(12, coins, 6) == [(1, 5), (5, 1), (7, 11), (11, 7)]
    three = coin_change_paths(12, coins, 3)
    assert three[0] == (1, 1, 1) and all(len(p) == 3 and sum(p) % 12 == 3 for p in three)
    assert (5, 5, 5) in three  # 15 = 3 mod 12
    assert len(coin_change_paths(12, coins, 3, limit=2)) == 2
    assert coin_change_paths(12, coins, 0) == [()]


# ---- degree split and allocation (§2.3) ----------------------------------------------------------


@pytest.mark.parametrize("args, kw, expected", [
    ((1.0, 1.0, 4), {}, (2, 2)),            # half: 4 x 0.5 = 2 (§2.10 option B)
    ((3.0, 1.0, 8), {}, (6, 2)),            # 8 x 0.75 = 6
    ((0.0, 1.0, 8), {}, (2, 6)),            # no AllReduce: still one ring (connected)
    ((1.0, 0.0, 8), {}, (8, 0)),
    ((0.0, 0.0, 6), {}, (6, 0)),
    ((1.0, 1.0, 5), {}, (2, 3)),            # 5 x 0.5 = 2.5 -> nearest even 2; odd unit to MP
    ((1.0, 0.0, 5), {}, (4, 1)),            # largest even <= 5
    ((1.0, 1.0, 5), {"bidirectional": False}, (3, 2)),  # one-way: 2.5 rounds half up
    ((1.0, 9.0, 8), {"released": True}, (8, 0)),        # the released code
    ((1.0, 3.0, 8), {}, (2, 6)),            # 8 x 0.25 = 2
])
def test_split_degree(args, kw, expected):
    assert split_degree(*args, **kw) == expected


def test_allocate_degree_proportional_with_caps():
    # n = 12, 4 rings: quotas 12 -> 3, 6 -> 1; size 12 has 2 distinct rings (cap 2), the surplus
    # ring goes to the next size with room: 6 is full (1 ring, jump 2), then 4 (jump 3)
    assert allocate_degree({12: 3.0, 6: 1.0}, 8, 12) == {12: 4, 6: 2, 4: 2}
    # only a sub-group demand: the full ring still gets one ring
    assert allocate_degree({6: 1.0}, 4, 12) == {12: 2, 6: 2}
    assert allocate_degree({}, 4, 128) == {128: 4}
    # 128: 4 rings split 3:1 between full rings and the size-64 groups
    assert allocate_degree({128: 3.0, 64: 1.0}, 8, 128) == {128: 6, 64: 2}


# ---- Blossom (§2.6, §2.10 option B) --------------------------------------------------------------


def toy_demand() -> np.ndarray:
    """§2.10 option B: (i, i+6) 100, (0,3) (6,9) (1,4) (7,10) (2,5) (8,11) 60, every other pair 1;
    one entry per pair (i < j), as the spec's byte-hop totals count each pair once."""
    mp = np.triu(np.ones((12, 12)), 1)
    for i in range(6):
        mp[i, i + 6] = 100
    for a, b in [(0, 3), (6, 9), (1, 4), (7, 10), (2, 5), (8, 11)]:
        mp[a, b] = 60
    return mp


def test_blossom_rounds_on_toy_demand():
    r1, r2 = blossom_mp(toy_demand(), 2)
    assert r1.tolist() == [[0, 6], [1, 7], [2, 8], [3, 9], [4, 10], [5, 11]]   # 6 x 100 = 600
    # decayed: heavy pairs 50 each; the 60-pairs (360) beat any mix (e.g. 2 x 50 + 4 x 60 = 340)
    assert r2.tolist() == [[0, 3], [1, 4], [2, 5], [6, 9], [7, 10], [8, 11]]
    # without decay round 2 repeats round 1
    assert blossom_mp(toy_demand(), 2, decay=False)[1].tolist() == r1.tolist()


def test_blossom_perfect_on_sparse_and_odd():
    mp = np.zeros((8, 8))
    mp[0, 5] = 3.0  # one demanded pair: matched, the rest paired anyway (perfect)
    (m,) = blossom_mp(mp, 1)
    assert [0, 5] in m.tolist() and sorted(m.ravel().tolist()) == list(range(8))
    (m,) = blossom_mp(np.ones((5, 5)), 1)  # odd n: two pairs, one server left
    assert m.shape == (2, 2) and len(set(m.ravel().tolist())) == 4


def test_blossom_sparsified_equals_exact_on_heavy_pairs():
    # a planted perfect matching of heavy pairs among light noise: both candidate sets find it
    rng = np.random.default_rng(3)
    n = 64
    mp = rng.random((n, n))
    perm = rng.permutation(n).reshape(-1, 2)
    mp[perm[:, 0], perm[:, 1]] = 1e3
    planted = sorted(tuple(sorted(p)) for p in perm.tolist())
    for partners in (None, 4):
        (m,) = blossom_mp(mp, 1, partners=partners)
        assert [tuple(p) for p in m.tolist()] == planted


# ---- the finder ----------------------------------------------------------------------------------


def test_option_a_and_b_byte_weighted_hops():
    """§2.10, checked by hand. Option A, C12(1, 5): offset-6 pairs take 2 hops, offset-3 pairs 3:
    6 x 100 x 2 + 6 x 60 x 3 = 2280; the 66 pairs hop 12 x 20 / 2 = 120 in all, the 12 heavy ones
    30, so the 54 one-unit pairs add 90: 2370. Option B, ring +-1 and the two matchings: the 12
    heavy pairs are direct (960); the graph is symmetric under i -> i + 6 and i -> 5 - i, with
    orbits {0,5,6,11}, {1,4,7,10}, {2,3,8,9}; servers 0, 1, 2 reach the other 11 in 18, 19, 19
    hops, so the 66 pairs hop 4 x (18 + 19 + 19) / 2 = 112, the 54 light ones 100: 1060."""
    mp = toy_demand()
    assert mp.sum() == 600 + 360 + 54
    a = topology_finder(12, 4, [(tuple(range(12)), 1e9)], mp, split="released")
    assert a.jumps == (1, 5) and (a.d_ar, a.d_mp) == (4, 0)
    assert a.byte_weighted_hops(mp) == 2370
    # W_AR = 44 x (2 x 12 - 1) = 1012 ~ W_MP = 1014: d_AR = 2, d_MP = 2
    b = topology_finder(12, 4, [(tuple(range(12)), 44.0)], mp, split="paper")
    assert b.jumps == (1,) and (b.d_ar, b.d_mp) == (2, 2)
    assert [m.tolist() for m in b.matchings] == [blossom_mp(mp, 2)[0].tolist(), blossom_mp(mp, 2)[1].tolist()]
    assert b.byte_weighted_hops(mp) == 1060
    heavy = mp >= 60
    assert b.byte_weighted_hops(np.where(heavy, mp, 0)) == 960
    assert a.byte_weighted_hops(np.where(heavy, mp, 0)) == 2280
    s = b.summary()
    assert s["diameter"] == 3 and s["d_ar"] == 2 and s["link_units"] == 48
    np.testing.assert_array_equal(b.conn.sum(axis=0), 4)
    np.testing.assert_array_equal(b.conn.sum(axis=1), 4)
    json.dumps(s)


def _random_case(rng, n):
    sizes = [k for k in range(2, n + 1) if n % k == 0]
    groups = []
    for _ in range(int(rng.integers(0, 4))):
        k = int(rng.choice(sizes))
        s = int(rng.integers(0, n // k))
        groups.append((tuple(range(s, n, n // k)), float(rng.integers(1, 10**9))))
    if rng.random() < 0.3:  # a group that is not a strided coset, of a size not dividing n
        groups.append((tuple(rng.choice(n, 3 if n % 3 else 5, replace=False).tolist()), 1e8))
    kind = rng.integers(0, 3)
    mp = np.zeros((n, n)) if kind == 0 else rng.random((n, n)) * 1e9 * (rng.random((n, n)) < (0.1 if kind == 1 else 1))
    np.fill_diagonal(mp, 0)
    return groups, mp


@pytest.mark.parametrize("n", [8, 12, 16, 32, 128])
def test_every_topology_respects_degree_and_is_connected(n):
    rng = np.random.default_rng(n)
    for d in (2, 4, 6, 8):
        for split in ("paper", "released"):
            for _ in range(6 if n < 128 else 2):
                groups, mp = _random_case(rng, n)
                t = topology_finder(n, d, groups, mp, split=split, seed=int(rng.integers(100)))
                check_degree(t.conn, d)
                # even n: perfect matchings, so every interface is used
                np.testing.assert_array_equal(t.conn.sum(axis=1), d)
                np.testing.assert_array_equal(t.conn.sum(axis=0), d)
                assert np.diag(t.conn).sum() == 0
                assert connected_components(t.conn > 0, directed=True, connection="strong")[0] == 1
                assert t.d_ar + t.d_mp == d and (split == "paper" or t.d_mp == 0)
                assert n in t.jumps_by_size
                for k, js in t.jumps_by_size.items():
                    assert set(js) <= set(totient_perms(n, k)) and all(p <= n // 2 for p in js)


def test_one_way_rings_respect_degree():
    rng = np.random.default_rng(7)
    for d in (1, 2, 3, 5):
        groups, mp = _random_case(rng, 16)
        t = topology_finder(16, d, groups, mp, bidirectional=False)
        check_degree(t.conn, d)
        assert connected_components(t.conn > 0, directed=True, connection="strong")[0] == 1


def test_finder_deterministic_under_seed():
    rng = np.random.default_rng(11)
    groups, mp = _random_case(rng, 32)
    mp = rng.random((32, 32)) * (rng.random((32, 32)) < 0.2)
    for select in ("geometric", "search"):
        a = topology_finder(32, 6, groups, mp, select=select, seed=4)
        b = topology_finder(32, 6, groups, mp, select=select, seed=4)
        np.testing.assert_array_equal(a.conn, b.conn)
        assert a.jumps == b.jumps and a.jumps_by_size == b.jumps_by_size


def test_subgroup_sizes_get_their_own_rings():
    # n = 128, d = 8, released: 4 rings, full AR 3 : size-64 groups 1 (weights S (2k-1)/k)
    full = (tuple(range(128)), 1.0e9)
    w_full = 1.0e9 * 255 / 128
    s64 = w_full / 3 / (127 / 64)  # bytes so that the size-64 weight is a third of the full one
    groups = [full, (tuple(range(0, 128, 2)), s64 / 2), (tuple(range(1, 128, 2)), s64 / 2)]
    t = topology_finder(128, 8, groups, np.zeros((128, 128)), split="released")
    # 3 full rings: geometric m = 3, r = 127^(1/3) = 5.03: targets 1, 5.03, 25.3 -> 1, 7, 27
    assert t.jumps_by_size == {128: (1, 7, 27), 64: (2,)}
    assert t.jumps == (1, 2, 7, 27)


# ---- to_topology ---------------------------------------------------------------------------------


def test_to_topology_merges_parallel_links():
    # n = 8, d = 4: MP demand on (0,1), (2,3), (4,5), (6,7) only, as large as the AllReduce:
    # d_AR = 2 (ring +-1), both matchings take those pairs: 1 ring + 2 matchings = 3 links 0 <-> 1
    mp = np.zeros((8, 8))
    mp[[0, 2, 4, 6], [1, 3, 5, 7]] = 1.0e9
    t = topology_finder(8, 4, [(tuple(range(8)), 4e9 / 15)], mp)
    assert (t.d_ar, t.d_mp) == (2, 2) and t.conn[0, 1] == 3 and t.conn[1, 2] == 1
    topo = to_topology(t, "100Gbps", "1us", name="toy")
    B = 100e9 / 8
    assert topo.n_links == 16 and topo.name == "toy" and topo.jumps == (1, 7)
    bw = {(int(s), int(d)): float(b) for s, d, b in zip(topo.link_src, topo.link_dst, topo.link_bw)}
    assert bw[(0, 1)] == bw[(1, 0)] == 3 * B and bw[(1, 2)] == bw[(2, 1)] == B
    assert np.all(topo.link_lat == 1e-6)
    ptr, _ = topo.route(np.array([0, 0]), np.array([4, 7]))
    assert np.diff(ptr).tolist() == [4, 1]  # a ring of 8: 0 -> 4 takes 4 hops, 0 -> 7 one


def test_to_topology_half_ring_is_doubled():
    # n = 4, jump 2 = n/2: the +2 and -2 rings land on the same neighbour: one link of 2B
    conn = conn_matrix(4, [1, 2])
    t = FoundTopology(4, 4, conn, (1, 2), {4: (1,), 2: (2,)}, (), 4, 0)
    topo = to_topology(t, 10e9, 1e-7)
    bw = {(int(s), int(d)): float(b) for s, d, b in zip(topo.link_src, topo.link_dst, topo.link_bw)}
    assert topo.n_links == 12 and bw[(0, 2)] == 20e9 and bw[(0, 1)] == 10e9
    assert topo.jumps == (1, 2, 3)


# ---- expander baseline, conn matrix --------------------------------------------------------------


def test_random_regular_is_regular_connected_and_seeded():
    g = random_regular(128, 8, seed=1)
    assert (g == g.T).all() and np.diag(g).sum() == 0
    np.testing.assert_array_equal(g.sum(axis=1), 8)
    assert connected_components(g > 0, directed=False)[0] == 1
    np.testing.assert_array_equal(g, random_regular(128, 8, seed=1))


def test_conn_matrix_and_check_degree():
    c = conn_matrix(6, [1], [np.array([[0, 3], [1, 4], [2, 5]])])
    assert c[0].tolist() == [0, 1, 0, 1, 0, 1]
    check_degree(c, 3)
    with pytest.raises(ConfigError, match="server 0 out-degree 3"):
        check_degree(c, 2)
    assert conn_matrix(6, [1], bidirectional=False)[0].tolist() == [0, 1, 0, 0, 0, 0]


# ---- the circulant family ------------------------------------------------------------------------


def test_circulant_family():
    t = parse_topology("circulant:12:1,5", "100Gbps", "1us")
    assert t.name == "circulant:12:1,5" and t.n_npus == 12 and t.n_links == 48 and t.jumps == (1, 5, 7, 11)
    assert np.all(t.link_bw == 100e9 / 8) and np.all(t.link_lat == 1e-6)
    # hops of C12(1, 5) from 0: offsets 3 and 9 take 3, 6 takes 2, 5 takes 1
    ptr, _ = t.route(np.zeros(4, dtype=np.int64), np.array([3, 9, 6, 5]))
    assert np.diff(ptr).tolist() == [3, 3, 2, 1]
    for other in (topology_from_config({"family": "circulant", "n": 12, "jumps": [1, 5]}, "100Gbps", "1us"),
                  build_topology("circulant", n=12, jumps=(7, 1), bandwidth="100Gbps", latency="1us")):
        assert other.name == t.name and other.jumps == t.jumps
        np.testing.assert_array_equal(other.link_src, t.link_src)
        np.testing.assert_array_equal(other.link_dst, t.link_dst)
    # n/2: one link each way of twice the bandwidth
    t8 = parse_topology("circulant:8:1,4", 10e9, 1e-7)
    assert t8.n_links == 24 and sorted(set(t8.link_bw.tolist())) == [10e9, 20e9]


@pytest.mark.parametrize("spec, words", [
    ("circulant:12", ["circulant:12", "circulant:N:p1,p2"]),
    ("circulant:12:1,11", ["repeats a ring"]),
    ("circulant:12:2", ["gcd"]),
    ("circulant:12:13", ["jumps", "1..11"]),
    ("circulant:12:a", ["'a' is not a jump"]),
])
def test_circulant_family_bad_specs(spec, words):
    with pytest.raises(ConfigError) as e:
        parse_topology(spec)
    assert "\n" not in str(e.value)
    for w in words:
        assert w in str(e.value)


# ---- bad input -----------------------------------------------------------------------------------


def _full(n):
    return [(tuple(range(n)), 1e9)]


@pytest.mark.parametrize("call, field", [
    (lambda: totient_perms(12, 5), "k"),
    (lambda: totient_perms(1), "n"),
    (lambda: split_degree(1.0, 1.0, 1), "d"),
    (lambda: split_degree(1.0, 1.0, 5, released=True), "d"),
    (lambda: split_degree(-1.0, 1.0, 4), "w_ar"),
    (lambda: allocate_degree({12: 1.0}, 3, 12), "d_ar"),
    (lambda: allocate_degree({5: 1.0}, 2, 12), "traffic_by_size"),
    (lambda: allocate_degree({12: 1.0}, 14, 12), "d_ar"),
    (lambda: select_permutations([1, 5, 7, 11], 2, n=12, mode="best"), "select"),
    (lambda: topology_finder(12, 1, _full(12), np.zeros((12, 12))), "d"),
    (lambda: topology_finder(12, 5, _full(12), np.zeros((12, 12)), split="released"), "d"),
    (lambda: topology_finder(12, 4, _full(12), np.zeros((12, 12)), split="greedy"), "split"),
    (lambda: topology_finder(12, 4, _full(12), np.zeros((12, 12)), select="best"), "select"),
    (lambda: topology_finder(12, 4, _full(12), np.zeros((8, 8))), "mp"),
    (lambda: topology_finder(12, 4, _full(12), -np.ones((12, 12))), "mp"),
    (lambda: topology_finder(12, 4, [((0, 12), 1e9)], np.zeros((12, 12))), "ar_groups[0]"),
    (lambda: topology_finder(12, 4, [((0, 0), 1e9)], np.zeros((12, 12))), "ar_groups[0]"),
    (lambda: topology_finder(12, 4, [((0, 1), -1.0)], np.zeros((12, 12))), "ar_groups[0] bytes"),
    (lambda: coin_change_paths(12, [2], 3), "step"),
    (lambda: random_regular(5, 3), "d"),
    (lambda: conn_matrix(4, [1], [np.array([[0, 0]])]), "matchings"),
    (lambda: blossom_mp(np.ones((4, 4)), -1), "rounds"),
    (lambda: to_topology("ring", 1e9, 1e-6), "found"),
])
def test_bad_input_is_a_config_error(call, field):
    with pytest.raises(ConfigError) as e:
        call()
    assert e.value.field == field
    assert "accepted" in str(e.value) and "\n" not in str(e.value)


def test_odd_degree_paper_split_gives_the_odd_unit_to_mp():
    t = topology_finder(12, 5, _full(12), np.zeros((12, 12)))
    assert (t.d_ar, t.d_mp) == (4, 1)
    np.testing.assert_array_equal(t.conn.sum(axis=1), 5)
