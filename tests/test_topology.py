"""Topologies: builders, routers and spec strings.

Every expected value here is derived in the test from the definition of the topology
(coordinates with dimension 0 fastest, closed-form hop and link counts, hand-drawn graphs),
never by asking the code under test for it.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.errors import ConfigError
from fabricsim.topology import (
    build_topology,
    fat_tree,
    from_edges,
    fully_connected,
    mesh,
    parse_topology,
    ring,
    stack,
    switch,
    topology_from_config,
    torus,
)

BW = 1e9
LAT = 1e-6


# ---- helpers (independent of the code under test) -------------------------------------------


def coords_of(r: int, dims) -> tuple[int, ...]:
    """Coordinates of rank r, dimension 0 fastest."""
    out = []
    for size in dims:
        out.append(r % size)
        r //= size
    return tuple(out)


def rank_of(c, dims) -> int:
    r, stride = 0, 1
    for x, size in zip(c, dims):
        r += x * stride
        stride *= size
    return r


def all_pairs(n: int):
    pairs = [(s, d) for s in range(n) for d in range(n) if s != d]
    return np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64)


def random_pairs(n: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, k)
    dst = rng.integers(0, n, k)
    keep = src != dst
    return src[keep].astype(np.int64), dst[keep].astype(np.int64)


def paths(topo, src, dst) -> list[list[int]]:
    """Route and return each transfer's list of link ids, checking the CSR shape."""
    ptr, links = topo.route(src, dst)
    ptr = np.asarray(ptr)
    links = np.asarray(links)
    assert ptr.shape == (len(src) + 1,)
    assert ptr[0] == 0 and ptr[-1] == len(links)
    assert np.all(np.diff(ptr) >= 0)
    assert np.all((links >= 0) & (links < topo.n_links))
    return [links[ptr[i]:ptr[i + 1]].tolist() for i in range(len(src))]


def check_walks(topo, src, dst) -> np.ndarray:
    """Each path is a contiguous walk src -> dst, no link and no node repeated. Returns hops."""
    hops = []
    ls, ld = topo.link_src, topo.link_dst
    for s, d, p in zip(src.tolist(), dst.tolist(), paths(topo, src, dst)):
        if s == d:
            assert p == [], (s, d, p)
            hops.append(0)
            continue
        assert p, f"empty path {s} -> {d}"
        assert ls[p[0]] == s, (s, d, p)
        for a, b in itertools.pairwise(p):
            assert ld[a] == ls[b], f"path {s}->{d} not contiguous: {p}"
        assert ld[p[-1]] == d, (s, d, p)
        assert len(set(p)) == len(p), f"link repeated in {s}->{d}: {p}"
        nodes = [s] + [int(ld[x]) for x in p]
        assert len(set(nodes)) == len(nodes), f"node revisited in {s}->{d}: {nodes}"
        hops.append(len(p))
    return np.array(hops, dtype=np.int64)


def torus_hops(s: int, d: int, dims) -> int:
    cs, cd = coords_of(s, dims), coords_of(d, dims)
    return sum(min(abs(a - b), size - abs(a - b)) for a, b, size in zip(cs, cd, dims))


def mesh_hops(s: int, d: int, dims) -> int:
    return sum(abs(a - b) for a, b in zip(coords_of(s, dims), coords_of(d, dims)))


def pairs_for(n: int, max_pairs: int = 4000, seed: int = 0):
    if n * (n - 1) <= max_pairs:
        return all_pairs(n)
    return random_pairs(n, max_pairs, seed)


# ---- path validity and hop counts, per builder -----------------------------------------------

TORUS_SHAPES = [(2,), (3,), (5,), (2, 2), (3, 5), (2, 3, 4), (4, 4, 4), (8, 8)]


@pytest.mark.parametrize("dims", TORUS_SHAPES, ids=lambda d: "x".join(map(str, d)))
def test_torus_paths_and_hops(dims):
    t = torus(dims, BW, LAT)
    n = math.prod(dims)
    assert t.n_npus == n and t.n_switches == 0
    src, dst = pairs_for(n)
    hops = check_walks(t, src, dst)
    want = [torus_hops(s, d, dims) for s, d in zip(src.tolist(), dst.tolist())]
    assert hops.tolist() == want


@pytest.mark.parametrize("dims", TORUS_SHAPES, ids=lambda d: "x".join(map(str, d)))
def test_mesh_paths_and_hops(dims):
    t = mesh(dims, BW, LAT)
    n = math.prod(dims)
    src, dst = pairs_for(n)
    hops = check_walks(t, src, dst)
    want = [mesh_hops(s, d, dims) for s, d in zip(src.tolist(), dst.tolist())]
    assert hops.tolist() == want


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_bidirectional_ring_paths_and_hops(n):
    t = ring(n, BW, LAT)
    src, dst = all_pairs(n)
    hops = check_walks(t, src, dst)
    assert hops.tolist() == [min((d - s) % n, (s - d) % n) for s, d in zip(src.tolist(), dst.tolist())]


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_uni_ring_paths_and_hops(n):
    t = ring(n, BW, LAT, bidirectional=False)
    src, dst = all_pairs(n)
    hops = check_walks(t, src, dst)
    assert hops.tolist() == [(d - s) % n for s, d in zip(src.tolist(), dst.tolist())]
    # every link goes from i to i+1 (mod n): only the + direction exists
    assert sorted(zip(t.link_src.tolist(), t.link_dst.tolist())) == [(i, (i + 1) % n) for i in range(n)]


@pytest.mark.parametrize("n", [2, 3, 8])
def test_fully_connected_paths_and_hops(n):
    t = fully_connected(n, BW, LAT)
    src, dst = all_pairs(n)
    hops = check_walks(t, src, dst)
    assert np.all(hops == 1)
    # the single link is the direct one
    for s, d, p in zip(src.tolist(), dst.tolist(), paths(t, src, dst)):
        assert (t.link_src[p[0]], t.link_dst[p[0]]) == (s, d)


@pytest.mark.parametrize("n", [2, 5, 8])
def test_switch_paths_and_hops(n):
    t = switch(n, BW, LAT)
    assert t.n_switches == 1
    src, dst = all_pairs(n)
    hops = check_walks(t, src, dst)
    assert np.all(hops == 2)
    for p in paths(t, src, dst):
        assert t.link_dst[p[0]] == n  # via the switch, node n
    # src == dst: empty path
    ptr, links = t.route([3 % n], [3 % n])
    assert ptr.tolist() == [0, 0] and len(links) == 0


def test_stack_ring_fc_switch_paths_and_hops():
    dims = (2, 4, 2)
    t = parse_topology("stack:Ring2xFullyConnected4xSwitch2", "100GB/s", "1us")
    n = 16
    assert t.n_npus == n and t.dims == dims
    # one switch per line along dimension 2: n / 2 lines
    assert t.n_switches == n // 2
    src, dst = all_pairs(n)
    hops = check_walks(t, src, dst)
    per_dim_cost = (1, 1, 2)  # ring of 2: 1 hop; fully connected: 1; switch: up + down
    want = []
    for s, d in zip(src.tolist(), dst.tolist()):
        cs, cd = coords_of(s, dims), coords_of(d, dims)
        want.append(sum(c for a, b, c in zip(cs, cd, per_dim_cost) if a != b))
    assert hops.tolist() == want


@pytest.mark.parametrize("n,leaf,spines", [(16, 4, 2), (16, 4, 4), (12, 3, 1), (8, 8, None)])
def test_fat_tree_paths_and_hops(n, leaf, spines):
    t = fat_tree(n, BW, LAT, leaf=leaf, spines=spines)
    n_leaves = n // leaf
    src, dst = all_pairs(n)
    hops = check_walks(t, src, dst)
    want = [2 if s // leaf == d // leaf else 4 for s, d in zip(src.tolist(), dst.tolist())]
    assert hops.tolist() == want
    # documented spine choice: destination mod spines; node ids NPUs, leaves, spines
    if n_leaves > 1:
        k = spines if spines is not None else leaf
        for s, d, p in zip(src.tolist(), dst.tolist(), paths(t, src, dst)):
            nodes = [s] + [int(t.link_dst[x]) for x in p]
            assert nodes[1] == n + s // leaf  # own leaf
            if s // leaf != d // leaf:
                assert nodes[2] == n + n_leaves + d % k
                assert nodes[3] == n + d // leaf


# ---- dimension order and tie-breaking ----------------------------------------------------------


@pytest.mark.parametrize("dims", [(3, 5), (2, 3, 4), (4, 4, 4), (8, 8)], ids=str)
def test_torus_corrects_dimensions_in_order(dims):
    t = torus(dims, BW, LAT)
    n = math.prod(dims)
    src, dst = pairs_for(n, 1500, seed=3)
    for s, d, p in zip(src.tolist(), dst.tolist(), paths(t, src, dst)):
        nodes = [s] + [int(t.link_dst[x]) for x in p]
        changed = []
        for a, b in itertools.pairwise(nodes):
            ca, cb = coords_of(a, dims), coords_of(b, dims)
            diff = [k for k in range(len(dims)) if ca[k] != cb[k]]
            assert len(diff) == 1, f"a link changes {len(diff)} coordinates"
            k = diff[0]
            assert (cb[k] - ca[k]) % dims[k] in (1, dims[k] - 1), "not a neighbour step"
            changed.append(k)
        assert changed == sorted(changed), f"{s}->{d}: dimensions visited {changed}"
        # the link is labelled with the dimension it moves along
        assert [int(t.link_dim[x]) for x in p] == changed


def test_ring_tie_goes_plus():
    # Stated convention: on an even ring, a destination exactly half-way round is reached in
    # the + direction (increasing coordinate, wrapping).
    t = ring(8, BW, LAT)
    (p,) = paths(t, np.array([0]), np.array([4]))
    assert [0] + [int(t.link_dst[x]) for x in p] == [0, 1, 2, 3, 4]
    (p,) = paths(t, np.array([5]), np.array([1]))
    assert [5] + [int(t.link_dst[x]) for x in p] == [5, 6, 7, 0, 1]
    # a non-tie goes the short way, here -
    (p,) = paths(t, np.array([1]), np.array([6]))
    assert [1] + [int(t.link_dst[x]) for x in p] == [1, 0, 7, 6]


def test_torus_tie_goes_plus_in_each_dimension():
    dims = (4, 4)
    t = torus(dims, BW, LAT)
    # (0,0) -> (2,2): + along dim 0 to (2,0), then + along dim 1
    s, d = rank_of((0, 0), dims), rank_of((2, 2), dims)
    (p,) = paths(t, np.array([s]), np.array([d]))
    want = [(0, 0), (1, 0), (2, 0), (2, 1), (2, 2)]
    assert [s] + [int(t.link_dst[x]) for x in p] == [rank_of(c, dims) for c in want]
    # (3,3) -> (1,1): + with wrap in both dims
    s, d = rank_of((3, 3), dims), rank_of((1, 1), dims)
    (p,) = paths(t, np.array([s]), np.array([d]))
    want = [(3, 3), (0, 3), (1, 3), (1, 0), (1, 1)]
    assert [s] + [int(t.link_dst[x]) for x in p] == [rank_of(c, dims) for c in want]


def test_size_two_torus_dimension_has_one_link_each_way():
    dims = (2, 3)
    t = torus(dims, BW, LAT)
    pairs = list(zip(t.link_src.tolist(), t.link_dst.tolist()))
    assert len(pairs) == len(set(pairs)), "parallel links"
    dim0 = [(a, b) for a, b in pairs if coords_of(a, dims)[1] == coords_of(b, dims)[1]]
    # 3 lines of 2 nodes along dimension 0, one link each way: 6 directed links
    assert len(dim0) == 6
    for a in range(6):
        partner = a ^ 1  # flip the dimension-0 coordinate
        assert pairs.count((a, partner)) == 1
    # dimension 1 is a ring of 3: every node has a + and a - link, 2 * 6 links; total 6 + 12
    assert t.n_links == 18
    # both directions between partners use those single links
    src = np.array([0, 1]); dst = np.array([1, 0])
    p01, p10 = paths(t, src, dst)
    assert len(p01) == len(p10) == 1 and p01 != p10
    assert pairs[p01[0]] == (0, 1) and pairs[p10[0]] == (1, 0)


def test_ring_of_two_has_two_links():
    t = ring(2, BW, LAT)
    assert sorted(zip(t.link_src.tolist(), t.link_dst.tolist())) == [(0, 1), (1, 0)]


# ---- link counts, bandwidth and latency ----------------------------------------------------------


@pytest.mark.parametrize("dims", [(3,), (5,), (3, 5), (4, 4, 4), (8, 8), (3, 4, 5)], ids=str)
def test_torus_link_count_all_sizes_above_two(dims):
    t = torus(dims, BW, LAT)
    n = math.prod(dims)
    assert t.n_links == 2 * len(dims) * n
    pairs = set(zip(t.link_src.tolist(), t.link_dst.tolist()))
    assert len(pairs) == t.n_links
    # every node has 2k outgoing and 2k incoming links
    assert np.all(np.bincount(t.link_src, minlength=n) == 2 * len(dims))
    assert np.all(np.bincount(t.link_dst, minlength=n) == 2 * len(dims))


@pytest.mark.parametrize("dims", [(2,), (5,), (3, 5), (2, 3, 4), (4, 4, 4)], ids=str)
def test_mesh_link_count(dims):
    t = mesh(dims, BW, LAT)
    n = math.prod(dims)
    # along dim k there are n / size lines, each with size - 1 edges, two directions each
    want = sum(2 * (size - 1) * (n // size) for size in dims)
    assert t.n_links == want
    # each link joins mesh neighbours (Manhattan distance 1, no wrap)
    for a, b in zip(t.link_src.tolist(), t.link_dst.tolist()):
        assert mesh_hops(a, b, dims) == 1


@pytest.mark.parametrize("n", [2, 3, 7])
def test_fc_switch_ring_link_counts(n):
    assert fully_connected(n, BW, LAT).n_links == n * (n - 1)
    sw = switch(n, BW, LAT)
    assert sw.n_links == 2 * n and sw.n_nodes == n + 1
    assert sorted(zip(sw.link_src.tolist(), sw.link_dst.tolist())) == sorted(
        [(i, n) for i in range(n)] + [(n, i) for i in range(n)])
    assert ring(n, BW, LAT, bidirectional=False).n_links == n
    assert ring(n, BW, LAT).n_links == (2 * n if n > 2 else 2)


@pytest.mark.parametrize("n,leaf,spines", [(16, 4, 2), (16, 4, 4), (12, 3, 1), (32, 8, 3)])
def test_fat_tree_link_count(n, leaf, spines):
    t = fat_tree(n, BW, LAT, leaf=leaf, spines=spines)
    leaves = n // leaf
    assert t.n_switches == leaves + spines
    assert t.n_links == 2 * n + 2 * leaves * spines


def test_single_leaf_fat_tree_has_no_spines():
    t = fat_tree(8, BW, LAT, leaf=8)
    assert t.n_switches == 1 and t.n_links == 16


@pytest.mark.parametrize("oversub", [1.0, 2.0, 4.0, 1.5])
def test_fat_tree_uplink_bandwidth(oversub):
    n, leaf, spines = 16, 4, 2
    t = fat_tree(n, BW, LAT, leaf=leaf, spines=spines, oversub=oversub)
    want_up = leaf * BW / (oversub * spines)
    leaves = range(n, n + n // leaf)
    spine_nodes = range(n + n // leaf, n + n // leaf + spines)
    n_up = n_down = 0
    for a, b, bw, lat in zip(t.link_src.tolist(), t.link_dst.tolist(), t.link_bw.tolist(), t.link_lat.tolist()):
        assert lat == LAT
        if a < n or b < n:
            assert bw == BW  # NPU <-> leaf
        else:
            assert bw == pytest.approx(want_up, rel=1e-12)
            if a in leaves:
                assert b in spine_nodes
                n_up += 1
            else:
                assert a in spine_nodes and b in leaves
                n_down += 1
    assert n_up == n_down == (n // leaf) * spines


def test_fat_tree_spec_uplink_bandwidth():
    # 4 NPUs per leaf at 100 GB/s = 400 GB/s per leaf, / oversub 4 = 100 GB/s, over 2 spines
    t = parse_topology("fat-tree:16,leaf=4,spines=2,oversub=4", "100GB/s", "0ns")
    up = t.link_bw[(t.link_src >= 16) & (t.link_dst >= 16)]
    assert len(up) == 2 * 4 * 2
    assert np.allclose(up, 50e9)


def link_dimension(a: int, b: int, dims, n: int, switch_dim: int | None) -> int:
    if a >= n or b >= n:
        return switch_dim
    ca, cb = coords_of(a, dims), coords_of(b, dims)
    diff = [k for k in range(len(dims)) if ca[k] != cb[k]]
    assert len(diff) == 1
    return diff[0]


def test_stack_per_dimension_bandwidth_and_latency():
    dims = (2, 4, 2)
    n = 16
    t = parse_topology("stack:Ring2xFullyConnected4xSwitch2", "100GB/s,50GB/s,200Gbps", "1us,2us,3us")
    bw = (100e9, 50e9, 25e9)
    lat = (1e-6, 2e-6, 3e-6)
    # link counts per dimension: ring of 2 -> one link per node; fc 4 -> 3 per node; switch -> 2 per node
    counts = [0, 0, 0]
    for a, b, lbw, llat, ld in zip(t.link_src.tolist(), t.link_dst.tolist(), t.link_bw.tolist(),
                                   t.link_lat.tolist(), t.link_dim.tolist()):
        k = link_dimension(a, b, dims, n, switch_dim=2)
        counts[k] += 1
        assert ld == k
        assert lbw == pytest.approx(bw[k], rel=1e-12)
        assert llat == pytest.approx(lat[k], rel=1e-12)
    assert counts == [n, 3 * n, 2 * n]


def test_torus_per_dimension_lists():
    dims = (4, 3)
    t = torus(dims, [1e9, 2e9], [1e-6, 5e-6])
    for a, b, lbw, llat in zip(t.link_src.tolist(), t.link_dst.tolist(), t.link_bw.tolist(), t.link_lat.tolist()):
        k = link_dimension(a, b, dims, 12, None)
        assert lbw == [1e9, 2e9][k]
        assert llat == [1e-6, 5e-6][k]
    # same through the spec parser, with units
    t = parse_topology("torus:4x3", "8Gbps,16Gbps", "1us,5us")
    for a, b, lbw, llat in zip(t.link_src.tolist(), t.link_dst.tolist(), t.link_bw.tolist(), t.link_lat.tolist()):
        k = link_dimension(a, b, dims, 12, None)
        assert lbw == pytest.approx([1e9, 2e9][k], rel=1e-12)
        assert llat == pytest.approx([1e-6, 5e-6][k], rel=1e-12)


def test_single_value_applies_to_every_dimension():
    t = parse_topology("mesh:3x3x2", "400Gbps", "100ns")
    assert np.allclose(t.link_bw, 50e9) and np.allclose(t.link_lat, 100e-9)


# ---- switch capability and switch endpoints --------------------------------------------------------


def test_switch_reduce_capability_only_on_switch():
    t = parse_topology("switch:8,reduce", "100GB/s", "0ns")
    assert t.n_npus == 8 and t.n_nodes == 9
    want = [False] * 8 + [True]
    assert t.can_reduce.tolist() == want
    assert t.can_multicast.tolist() == want
    plain = parse_topology("switch:8", "100GB/s", "0ns")
    assert plain.can_reduce.tolist() == [False] * 9
    assert plain.can_multicast.tolist() == [False] * 9


def test_switch_multicast_only():
    t = parse_topology("switch:4,multicast", "100GB/s", "0ns")
    assert t.can_reduce.tolist() == [False] * 5
    assert t.can_multicast.tolist() == [False] * 4 + [True]


def test_fat_tree_reduce_capability():
    t = parse_topology("fat-tree:16,leaf=4,spines=2,reduce", "100GB/s", "0ns")
    want = [False] * 16 + [True] * (4 + 2)
    assert t.can_reduce.tolist() == want and t.can_multicast.tolist() == want
    t = parse_topology("fat-tree:16,leaf=4,spines=2", "100GB/s", "0ns")
    assert not t.can_reduce.any() and not t.can_multicast.any()


def test_npu_to_own_switch_and_back():
    n = 8
    t = switch(n, BW, LAT, reduce=True)
    sw = n
    src = np.array([0, 3, 7, sw, sw, 2], dtype=np.int64)
    dst = np.array([sw, sw, sw, 0, 5, 6], dtype=np.int64)
    ps = paths(t, src, dst)
    for s, d, p in zip(src.tolist(), dst.tolist(), ps[:5]):
        assert len(p) == 1, "a single up or down link"
        assert (t.link_src[p[0]], t.link_dst[p[0]]) == (s, d)
    # an NPU -> NPU pair in the same call still goes up and down
    assert [(int(t.link_src[x]), int(t.link_dst[x])) for x in ps[5]] == [(2, sw), (sw, 6)]


def test_stack_npu_addresses_only_its_own_switch():
    # switch dimension 1 of size 4 over 2 lines: NPUs with even rank on switch 8, odd on 9
    dims = (2, 4)
    t = stack(("ring", "switch"), dims, BW, LAT, switch_reduce=True)
    n = 8
    assert t.n_switches == 2
    for r in range(n):
        sw = n + coords_of(r, dims)[0]
        (p,) = paths(t, np.array([r]), np.array([sw]))
        assert len(p) == 1 and (t.link_src[p[0]], t.link_dst[p[0]]) == (r, sw)
        (p,) = paths(t, np.array([sw]), np.array([r]))
        assert len(p) == 1 and (t.link_src[p[0]], t.link_dst[p[0]]) == (sw, r)
        other = n + 1 - coords_of(r, dims)[0]
        with pytest.raises(ValueError):
            t.route(np.array([r]), np.array([other]))


def test_fat_tree_npu_to_own_leaf_and_back():
    t = fat_tree(16, BW, LAT, leaf=4, spines=2)
    for r in (0, 5, 15):
        leaf = 16 + r // 4
        (p,) = paths(t, np.array([r]), np.array([leaf]))
        assert len(p) == 1 and (t.link_src[p[0]], t.link_dst[p[0]]) == (r, leaf)
        (p,) = paths(t, np.array([leaf]), np.array([r]))
        assert len(p) == 1 and (t.link_src[p[0]], t.link_dst[p[0]]) == (leaf, r)
    with pytest.raises(ValueError):
        t.route(np.array([0]), np.array([17]))  # leaf of NPUs 4..7


def test_route_rejects_nodes_outside_topology():
    t = torus((4, 4), BW, LAT)
    with pytest.raises(ValueError):
        t.route(np.array([0]), np.array([16]))
    with pytest.raises(ValueError):
        t.route(np.array([-1]), np.array([3]))


def test_route_empty_and_self_pairs():
    t = torus((4, 4), BW, LAT)
    ptr, links = t.route(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert ptr.tolist() == [0] and len(links) == 0
    ptr, links = t.route(np.array([5, 5]), np.array([5, 6]))
    assert ptr.tolist() == [0, 0, 1]


# ---- shortest-path router on hand-drawn graphs ------------------------------------------------------


def test_shortest_path_line():
    # 0 - 1 - 2 - 3 - 4: distance |i - j|
    t = from_edges([0, 1, 2, 3], [1, 2, 3, 4], n_npus=5, name="line", bandwidth=BW, latency=LAT)
    assert t.n_links == 8
    src, dst = all_pairs(5)
    hops = check_walks(t, src, dst)
    assert hops.tolist() == [abs(s - d) for s, d in zip(src.tolist(), dst.tolist())]


def test_shortest_path_ring_of_six():
    # 0-1-2-3-4-5-0 drawn by hand; distance table from node 0: 0 1 2 3 2 1
    t = from_edges([0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0], n_npus=6, name="ring6", bandwidth=BW, latency=LAT)
    from_zero = [0, 1, 2, 3, 2, 1]
    src, dst = all_pairs(6)
    hops = check_walks(t, src, dst)
    assert hops.tolist() == [from_zero[(d - s) % 6] for s, d in zip(src.tolist(), dst.tolist())]


def test_shortest_path_star_with_switch_center():
    # NPUs 0..4 around switch node 5: NPU <-> NPU = 2 hops, NPU <-> switch = 1
    t = from_edges([0, 1, 2, 3, 4], [5, 5, 5, 5, 5], n_npus=5, n_switches=1, name="star", bandwidth=BW, latency=LAT)
    src, dst = all_pairs(6)
    hops = check_walks(t, src, dst)
    assert hops.tolist() == [1 if 5 in (s, d) else 2 for s, d in zip(src.tolist(), dst.tolist())]


def test_shortest_path_hand_drawn_graph():
    #   0 --- 1 --- 2
    #   |           |
    #   3 --- 4 --- 5 --- 6
    # BFS distances worked by hand:
    dist = {
        0: [0, 1, 2, 1, 2, 3, 4],
        1: [1, 0, 1, 2, 3, 2, 3],
        2: [2, 1, 0, 3, 2, 1, 2],
        3: [1, 2, 3, 0, 1, 2, 3],
        4: [2, 3, 2, 1, 0, 1, 2],
        5: [3, 2, 1, 2, 1, 0, 1],
        6: [4, 3, 2, 3, 2, 1, 0],
    }
    edges = [(0, 1), (1, 2), (0, 3), (2, 5), (3, 4), (4, 5), (5, 6)]
    t = from_edges([a for a, _ in edges], [b for _, b in edges], n_npus=7, name="house", bandwidth=BW, latency=LAT)
    src, dst = all_pairs(7)
    hops = check_walks(t, src, dst)
    assert hops.tolist() == [dist[s][d] for s, d in zip(src.tolist(), dst.tolist())]


def test_shortest_path_unreachable_raises():
    # two components: 0-1 and 2-3
    t = from_edges([0, 2], [1, 3], n_npus=4, name="split", bandwidth=BW, latency=LAT)
    assert check_walks(t, np.array([0, 3]), np.array([1, 2])).tolist() == [1, 1]
    with pytest.raises(ValueError):
        t.route(np.array([0]), np.array([3]))
    # one-way line 0 -> 1 -> 2: the way back does not exist
    t = from_edges([0, 1], [1, 2], n_npus=3, name="oneway", bandwidth=BW, latency=LAT, bidirectional=False)
    assert check_walks(t, np.array([0]), np.array([2])).tolist() == [2]
    with pytest.raises(ValueError):
        t.route(np.array([2]), np.array([0]))


def test_from_edges_bandwidth_per_edge():
    t = from_edges([0, 1], [1, 2], n_npus=3, bandwidth=[1e9, 2e9], latency=1e-6)
    got = {(a, b): bw for a, b, bw in zip(t.link_src.tolist(), t.link_dst.tolist(), t.link_bw.tolist())}
    assert got == {(0, 1): 1e9, (1, 0): 1e9, (1, 2): 2e9, (2, 1): 2e9}


# ---- spec errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec,bandwidth,latency,needle",
    [
        ("torus:8xq", "100GB/s", "0ns", "torus:8xq"),
        ("torus:", "100GB/s", "0ns", "torus:"),
        ("blah:4", "100GB/s", "0ns", "blah:4"),
        ("ring:1", "100GB/s", "0ns", "ring:1"),
        ("fat-tree:10,leaf=4", "100GB/s", "0ns", "fat-tree:10,leaf=4"),
        ("stack:Foo4", "100GB/s", "0ns", "stack:Foo4"),
        ("ring:8,zzz", "100GB/s", "0ns", "zzz"),
        ("torus:4x4", "1GB/s,2GB/s,3GB/s", "0ns", "1GB/s,2GB/s,3GB/s"),
        ("mesh:4x4", "1GB/s", "1us,2us,3us", "1us,2us,3us"),
        ("ring:8", "1GB/s,2GB/s", "0ns", "1GB/s,2GB/s"),
        ("torus:4x4", "fast", "0ns", "fast"),
        ("torus:4x4", "100GB/s", "soon", "soon"),
        ("mesh:1", "100GB/s", "0ns", "mesh:1"),
        ("torus:0x4", "100GB/s", "0ns", "torus:0x4"),
        ("ring8", "100GB/s", "0ns", "ring8"),
        ("fat-tree:16,leaf=4,oversub=0", "100GB/s", "0ns", "oversub=0"),
        ("fat-tree:16,leaf=4,oversub=nan", "100GB/s", "0ns", "oversub=nan"),
        ("fat-tree:16,leaf=4,oversub=inf", "100GB/s", "0ns", "oversub=inf"),
        ("fat-tree:16,leaf=0", "100GB/s", "0ns", "leaf=0"),
        ("switch:8,reduce=no", "100GB/s", "0ns", "reduce=no"),
        ("ring:8,uni=3", "100GB/s", "0ns", "uni=3"),
    ],
)
def test_spec_errors(spec, bandwidth, latency, needle):
    with pytest.raises(ConfigError) as ei:
        parse_topology(spec, bandwidth, latency)
    msg = str(ei.value)
    assert "\n" not in msg, msg
    assert needle in msg, msg


def test_spec_aliases_and_shapes():
    assert parse_topology("fc:4", "1GB/s").n_links == 12
    assert parse_topology("TORUS:4X4", "1GB/s").dims == (4, 4)
    t = parse_topology("ring:8,uni", "1GB/s")
    assert t.n_links == 8
    t = parse_topology("stack:R2xFC4xSW2", "1GB/s")
    assert t.dims == (2, 4, 2) and t.n_switches == 8
    t = parse_topology("fat-tree:16,leaf=4,spines=2", "1GB/s")
    assert t.n_switches == 6 and t.n_links == 2 * 16 + 2 * 4 * 2


# ---- property test ----------------------------------------------------------------------------------


@st.composite
def grid_case(draw):
    ndim = draw(st.integers(1, 3))
    dims = tuple(draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    if math.prod(dims) < 2:
        dims = dims[:-1] + (dims[-1] + 1,)
    kind = draw(st.sampled_from(["torus", "mesh"]))
    n = math.prod(dims)
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1, max_size=30))
    return kind, dims, pairs


@settings(max_examples=150, deadline=None)
@given(grid_case())
def test_property_grid_routes(case):
    kind, dims, pairs = case
    t = (torus if kind == "torus" else mesh)(dims, BW, LAT)
    src = np.array([p[0] for p in pairs], dtype=np.int64)
    dst = np.array([p[1] for p in pairs], dtype=np.int64)
    hops = check_walks(t, src, dst)
    closed = torus_hops if kind == "torus" else mesh_hops
    assert hops.tolist() == [closed(s, d, dims) for s, d in pairs]


# ---- scale smoke -------------------------------------------------------------------------------------


def test_scale_64x64_torus_ring_neighbours():
    side = 64
    n = side * side
    t = torus((side, side), 100e9, 1e-6)
    src = np.arange(n, dtype=np.int64)
    dst = (src + 1) % n
    ptr, links = t.route(src, dst)
    hops = np.diff(ptr)
    # same row: (x, y) -> (x+1, y), one hop; row wrap: (63, y) -> (0, y+1) is one wrap-around
    # hop in dimension 0 plus one hop in dimension 1
    want = np.where(src % side == side - 1, 2, 1)
    assert np.array_equal(hops, want)
    assert hops[63] == 2 and hops[62] == 1 and hops[n - 1] == 2
    assert hops.sum() == n + side
    # contiguity of every path, vectorized
    starts, ends = ptr[:-1], ptr[1:] - 1
    assert np.array_equal(t.link_src[links[starts]], src)
    assert np.array_equal(t.link_dst[links[ends]], dst)
    inner = np.ones(len(links), bool)
    inner[ends] = False
    idx = np.flatnonzero(inner)
    assert np.array_equal(t.link_dst[links[idx]], t.link_src[links[idx + 1]])


# ---- typed parameters: one build path --------------------------------------------------------------


@pytest.mark.parametrize("spec,family,params", [
    ("ring:8", "ring", {"n": 8}),
    ("ring:8,uni", "ring", {"n": 8, "bidirectional": False}),
    ("fc:6", "fully-connected", {"n": 6}),
    ("switch:8,reduce", "switch", {"n": 8, "reduce": True}),
    ("switch:8,multicast", "switch", {"n": 8, "multicast": True}),
    ("mesh:4x3", "mesh", {"dims": [4, 3]}),
    ("torus:4x4x2", "torus", {"dims": (4, 4, 2)}),
    ("stack:Ring4xSwitch8", "stack", {"kinds": ["ring", "switch"], "dims": [4, 8]}),
    ("fat-tree:16,leaf=4,spines=2,oversub=2", "fat-tree", {"n": 16, "leaf": 4, "spines": 2, "oversub": 2}),
    ("wafer:5x4,io=100GB/s", "wafer", {"cols": 5, "rows": 4, "io_bandwidth": "100GB/s"}),
    ("fred:5x4,up=12TB/s,reduce", "fred", {"groups": 5, "per_group": 4, "up_bandwidth": "12TB/s", "reduce": True}),
    # defaults, aliases and the remaining options of every family
    ("ring:2", "ring", {"n": 2}),
    ("fully-connected:3", "fc", {"n": 3}),
    ("switch:4", "switch", {"n": 4}),
    ("mesh:5", "mesh", {"dims": [5]}),
    ("torus:3x1x2", "torus", {"dims": [3, 1, 2]}),
    ("stack:R2xFC4xSW2,reduce", "stack", {"kinds": ["ring", "fc", "switch"], "dims": [2, 4, 2], "reduce": True}),
    ("astra:Switch4xSwitch4", "astra", {"kinds": ("switch", "switch"), "dims": (4, 4)}),
    ("fat-tree:16", "fat-tree", {"n": 16}),
    ("fat-tree:8,reduce", "fattree", {"n": 8, "reduce": True}),
    ("fat-tree:64,leaf=8,spines=4,oversub=2.5", "fat-tree", {"n": 64, "leaf": 8, "spines": 4, "oversub": 2.5}),
    ("wafer:4x3,noio", "wafer", {"cols": 4, "rows": 3, "io": False}),
    ("wafer:3x3", "wafer", {"cols": 3, "rows": 3}),
    ("fred:4x4,ios=0", "fred", {"groups": 4, "per_group": 4, "io_controllers": 0}),
    ("fred:2x8,io=1GB/s,ios=5", "fred", {"groups": 2, "per_group": 8, "io_bandwidth": 1e9, "io_controllers": 5}),
])
def test_spec_string_and_typed_parameters_build_the_same_topology(spec, family, params):
    a = parse_topology(spec, "50GB/s", "100ns")
    b = build_topology(family, bandwidth="50GB/s", latency="100ns", **params)
    c = topology_from_config({"family": family, **params}, "50GB/s", "100ns")
    for t in (b, c):
        assert_same_topology(t, a)
        src, dst = np.arange(a.n_npus), np.arange(a.n_npus)[::-1]
        pa, la = a.route(src, dst)
        pb, lb = t.route(src, dst)
        np.testing.assert_array_equal(pa, pb)
        np.testing.assert_array_equal(la, lb)


def assert_same_topology(t, a):
    """Every fact of two topologies agrees: name, sizes, link arrays, capabilities, typed facts."""
    assert t.name == a.name and t.n_npus == a.n_npus and t.n_switches == a.n_switches and t.dims == a.dims
    assert t.dim_kinds == a.dim_kinds
    for name in ("link_src", "link_dst", "link_bw", "link_lat", "link_dim", "can_reduce", "can_multicast",
                 "io_nodes", "io_attach"):
        np.testing.assert_array_equal(getattr(t, name), getattr(a, name))
    for name in ("ring_order", "switch_dim", "leaf_of"):
        x, y = getattr(t, name), getattr(a, name)
        assert (x is None) == (y is None) and (x is None or np.array_equal(x, y))


def test_direct_family_from_links():
    """A 4-node ring given as links, both ways: 8 directed links; 0 -> 2 takes 2 hops."""
    t = build_topology("direct", n=4, links=[(0, 1), (1, 2), (2, 3), (3, 0)], bandwidth="10GB/s")
    assert t.n_npus == 4 and t.n_links == 8 and np.all(t.link_bw == 10e9)
    ptr, _ = t.route([0], [2])
    assert int(np.diff(ptr)[0]) == 2


@pytest.mark.parametrize("value,needle", [
    ({"family": "hypercube", "n": 8}, "hypercube"),
    ({"family": "torus", "dims": [4, "x"]}, "dims"),
    ({"family": "torus", "dims": [1, 1]}, "dims"),
    ({"family": "ring", "n": 8, "colour": "red"}, "colour"),
    ({"family": "fat-tree", "n": 10, "leaf": 4}, "leaf"),
    ({"family": "direct", "n": 3, "links": [[0, 5]]}, "links"),
    ({"dims": [4, 4]}, "family"),
    ({"family": "wafer", "cols": 5, "rows": 4, "io_bandwidth": "fast"}, "io_bandwidth"),
])
def test_bad_topology_mapping_is_one_line(value, needle):
    with pytest.raises(ConfigError) as ei:
        topology_from_config(value, "50GB/s", "100ns")
    msg = str(ei.value)
    assert "\n" not in msg and needle in msg, msg


def test_train_config_takes_a_topology_mapping(tmp_path):
    import yaml

    from fabricsim.train import load_train_config

    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump({"network": {"topology": {"family": "torus", "dims": [2, 4]}},
                                 "workload": {"model": "resnet50", "batch": 8, "parallelism": {"dp": 8}}}))
    topo = load_train_config(p).network.build_topology()
    assert topo.dims == (2, 4) and topo.n_links == 8 + 2 * 8  # size-2 dimension: one link each way, size 4: two


# ---- typed parameters: closed forms, facts, errors ------------------------------------------------


@pytest.mark.parametrize("family,params,n_npus,n_switches,n_links", [
    ("ring", {"n": 8}, 8, 0, 16),                                  # 8 NPUs x 2 directions
    ("ring", {"n": 8, "bidirectional": False}, 8, 0, 8),
    ("ring", {"n": 2}, 2, 0, 2),                                   # size 2: one link each way
    ("fully-connected", {"n": 6}, 6, 0, 30),                       # 6 x 5 ordered pairs
    ("switch", {"n": 8}, 8, 1, 16),                                # an up and a down link per NPU
    ("mesh", {"dims": [4, 3]}, 12, 0, 34),                         # 2 x (3 x 3) + 2 x (2 x 4)
    ("torus", {"dims": [4, 4]}, 16, 0, 64),                        # 16 x 2 dims x 2 directions
    ("torus", {"dims": [3, 2]}, 6, 0, 18),                         # 6 x 2 (ring of 3) + 6 x 1 (size 2)
    ("stack", {"kinds": ["ring", "switch"], "dims": [4, 8]}, 32, 4, 128),  # 32 x 2 + 4 switches x 2 x 8
    ("stack", {"kinds": ["fc", "ring"], "dims": [3, 5]}, 15, 0, 60),       # 15 x 2 (fc of 3) + 15 x 2
    ("fat-tree", {"n": 16, "leaf": 4, "spines": 2}, 16, 6, 48),    # 2 x 16 + 2 x (4 leaves x 2 spines)
    ("fat-tree", {"n": 8}, 8, 1, 16),                              # one leaf of 8, no spines
    ("wafer", {"cols": 5, "rows": 4}, 20, 18, 98),                 # 2 x (4x4 + 5x3) + 2 x 2 x (5 + 4)
    ("wafer", {"cols": 4, "rows": 3, "io": False}, 12, 0, 34),
    ("fred", {"groups": 5, "per_group": 4}, 20, 24, 86),           # 5 L1 + L2 + 18 I/O; 2 x (20 + 5 + 18)
    ("fred", {"groups": 4, "per_group": 4, "io_controllers": 0}, 16, 5, 40),
    ("direct", {"n": 4, "links": [[0, 1], [1, 2], [2, 3], [3, 0]]}, 4, 0, 8),
    ("direct", {"n": 4, "links": [[0, 1], [1, 2], [2, 3], [3, 0]], "bidirectional": False}, 4, 0, 4),
    ("direct", {"n": 4, "switches": 1, "links": [[0, 4], [1, 4], [2, 4], [3, 4]]}, 4, 1, 8),
])
def test_build_topology_sizes_closed_form(family, params, n_npus, n_switches, n_links):
    t = build_topology(family, bandwidth="50GB/s", latency="100ns", **params)
    assert (t.n_npus, t.n_switches, t.n_links) == (n_npus, n_switches, n_links)
    np.testing.assert_allclose(t.link_lat, 100e-9, rtol=1e-12)


def test_typed_facts_from_mappings():
    # switch: every NPU hangs off node 8
    t = topology_from_config({"family": "switch", "n": 8, "reduce": True}, "50GB/s", "0ns")
    assert t.leaf_of.tolist() == [8] * 8 and t.can_reduce.tolist() == [False] * 8 + [True]
    # stack: Ring4 x Switch8 -> 4 switches, all serving dimension 1
    t = topology_from_config({"family": "stack", "kinds": ["ring", "switch"], "dims": [4, 8]}, "50GB/s", "0ns")
    assert t.dim_kinds == ("ring", "switch") and t.switch_dim.tolist() == [1] * 4 and t.leaf_of is None
    # fat-tree 16 NPUs, leaves of 4 (nodes 16..19), 2 spines; uplink = 4 x 40 GB/s / (oversub 4 x 2 spines)
    t = topology_from_config({"family": "fat-tree", "n": 16, "leaf": 4, "spines": 2, "oversub": 4}, "40GB/s", "0ns")
    assert t.leaf_of.tolist() == [16 + i // 4 for i in range(16)]
    up = (t.link_src >= 16) & (t.link_dst >= 16)
    assert up.sum() == 2 * 4 * 2 and np.all(t.link_bw[up] == 20e9) and np.all(t.link_bw[~up] == 40e9)
    # wafer 5x4: controllers 20..37 clockwise from the top-left: top row, right column, bottom row, left column
    t = topology_from_config({"family": "wafer", "cols": 5, "rows": 4, "io_bandwidth": "100GB/s"}, "750GB/s", "0ns")
    assert t.io_nodes.tolist() == list(range(20, 38))
    assert t.io_attach.tolist() == [0, 1, 2, 3, 4, 4, 9, 14, 19, 19, 18, 17, 16, 15, 15, 10, 5, 0]
    io = (t.link_src >= 20) | (t.link_dst >= 20)
    assert io.sum() == 36 and np.all(t.link_bw[io] == 100e9) and np.all(t.link_bw[~io] == 750e9)
    assert sorted(t.ring_order.tolist()) == list(range(20))
    # fred 5x4: L1 switches 20..24, L2 25, 18 I/O controllers 26..43 round robin on the L1s
    t = topology_from_config({"family": "fred", "groups": 5, "per_group": 4, "reduce": True}, "1TB/s", "0ns")
    assert t.leaf_of.tolist() == [20 + i // 4 for i in range(20)]
    assert t.io_nodes.tolist() == list(range(26, 44)) and t.io_attach.tolist() == [20 + k % 5 for k in range(18)]
    assert np.flatnonzero(t.can_reduce).tolist() == list(range(20, 26))
    l1_l2 = ((t.link_src >= 20) & (t.link_src <= 24) & (t.link_dst == 25))
    assert l1_l2.sum() == 5 and np.all(t.link_bw[l1_l2] == 4 * 1e12)  # default up: per_group x bandwidth


def test_build_topology_per_dimension_link_values():
    """torus 4x2, 100 GB/s and 1 us on dimension 0, 25 GB/s and 2 us on dimension 1 (typed or with units)."""
    a = build_topology("torus", dims=(4, 2), bandwidth=["100GB/s", "25GB/s"], latency=[1e-6, 2e-6])
    b = parse_topology("torus:4x2", "100GB/s,25GB/s", "1us,2us")
    c = build_topology("torus", dims=[4, 2], bandwidth=[100e9, 25e9], latency="1us,2us")
    for t in (a, c):
        assert_same_topology(t, b)
    d0 = a.link_dim == 0
    assert d0.sum() == 8 * 2 and (~d0).sum() == 8  # ring of 4 both ways; size 2 one link each way
    assert np.all(a.link_bw[d0] == 100e9) and np.all(a.link_bw[~d0] == 25e9)
    assert np.all(a.link_lat[d0] == 1e-6) and np.all(a.link_lat[~d0] == 2e-6)


def test_topology_mapping_from_yaml():
    import yaml

    value = yaml.safe_load("{family: fat-tree, n: 16, leaf: 4, spines: 2, oversub: 2, reduce: yes}")
    t = topology_from_config(value, "50GB/s", "100ns")
    assert_same_topology(t, parse_topology("fat-tree:16,leaf=4,spines=2,oversub=2,reduce", "50GB/s", "100ns"))


def test_direct_mapping_is_from_edges():
    """A star of 5 NPUs around node 5: 10 directed links, every NPU pair 2 hops through the centre."""
    links = [(i, 5) for i in range(5)]
    t = build_topology("direct", n=5, switches=1, links=links, bandwidth=10e9, latency=1e-6)
    assert_same_topology(t, from_edges([a for a, _ in links], [b for _, b in links], n_npus=5, n_switches=1,
                                        bandwidth=10e9, latency=1e-6))
    src, dst = all_pairs(5)
    assert check_walks(t, src, dst).tolist() == [2] * 20


def test_direct_parallel_links_route_on_the_lowest_id():
    t = build_topology("direct", n=3, links=[(0, 1), (1, 2), (0, 1)], bidirectional=False, bandwidth=1e9)
    ptr, links = t.route([0], [2])
    assert links[ptr[0]:ptr[1]].tolist() == [0, 1]


def test_wafer_without_io_routes_like_its_mesh():
    t = build_topology("wafer", cols=4, rows=3, io=False, bandwidth=1e9)
    src, dst = all_pairs(12)
    hops = check_walks(t, src, dst)
    assert hops.tolist() == [mesh_hops(s, d, (4, 3)) for s, d in zip(src.tolist(), dst.tolist())]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3).filter(lambda d: max(d) >= 2),
       st.sampled_from(["torus", "mesh"]))
def test_property_grid_spec_and_parameters_agree(dims, family):
    spec = f"{family}:" + "x".join(map(str, dims))
    assert_same_topology(build_topology(family, dims=dims, bandwidth=1e9, latency=1e-6), parse_topology(spec, 1e9, 1e-6))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.sampled_from([1, 2, 0.5]), st.booleans())
def test_property_fat_tree_spec_and_parameters_agree(leaves, leaf, spines, oversub, reduce):
    n = leaves * leaf
    if n < 2:
        return
    spec = f"fat-tree:{n},leaf={leaf},spines={spines},oversub={oversub}" + (",reduce" if reduce else "")
    if leaves == 1 or spines > leaf * leaf:  # one leaf has no spines; at most leaf^2 spines: both refuse
        for build in (lambda: build_topology("fat-tree", n=n, leaf=leaf, spines=spines, oversub=oversub, bandwidth=1e9),
                      lambda: parse_topology(spec, 1e9)):
            with pytest.raises(ConfigError, match="spines"):
                build()
        return
    t = build_topology("fat-tree", n=n, leaf=leaf, spines=spines, oversub=oversub, reduce=reduce, bandwidth=1e9)
    assert_same_topology(t, parse_topology(spec, 1e9))


@pytest.mark.parametrize("value,field,shown", [
    ({"family": "hypercube", "n": 8}, "family", "'hypercube'"),
    ({"family": "torus", "dims": [1, 1]}, "dims", "[1, 1]"),
    ({"family": "torus", "dims": [4, "x"]}, "dims.1", "'x'"),
    ({"family": "ring", "n": 8, "colour": "red"}, "colour", "'red'"),
    ({"family": "ring"}, "n", "None"),
    ({"family": "ring", "n": 1}, "n", "1"),
    ({"family": "switch", "n": 4, "reduce": "maybe"}, "reduce", "'maybe'"),
    ({"family": "fat-tree", "n": 10, "leaf": 4}, "leaf", "4"),
    ({"family": "fat-tree", "n": 16, "oversub": 0}, "oversub", "0.0"),
    ({"family": "stack", "kinds": ["ring", "tree"], "dims": [2, 2]}, "kinds.1", "'tree'"),
    ({"family": "stack", "kinds": ["ring"], "dims": [2, 2]}, "dims", "[2, 2]"),
    ({"family": "wafer", "cols": 5, "rows": 1}, "rows", "1"),
    ({"family": "wafer", "cols": 5, "rows": 4, "io_bandwidth": "fast"}, "io_bandwidth", "'fast'"),
    ({"family": "fred", "groups": 1, "per_group": 1}, "per_group", "1"),
    ({"family": "fred", "groups": 2, "per_group": 2, "up_bandwidth": "12TB"}, "up_bandwidth", "'12TB'"),
    ({"family": "direct", "n": 3, "links": [[0, 5]]}, "links", "[0, 5]"),
    ({"family": "direct", "n": 3, "links": [[1, 1]]}, "links", "[1, 1]"),
    ({"family": "direct", "n": 3, "links": []}, "links", "[]"),
    ({"family": "torus", "dims": [4, 4], "bandwidth": "1GB/s"}, "bandwidth", "'1GB/s'"),
    (42, "topology", "42"),
])
def test_bad_topology_mapping_names_field_and_value(value, field, shown):
    with pytest.raises(ConfigError) as ei:
        topology_from_config(value, "50GB/s", "100ns")
    msg = str(ei.value)
    assert "\n" not in msg, msg
    assert f"{field}: invalid value {shown};" in msg, msg
    assert msg.split(f"invalid value {shown};")[1].strip(), msg  # says what is accepted


def test_unknown_field_error_lists_the_accepted_fields():
    with pytest.raises(ConfigError) as ei:
        build_topology("fat-tree", n=16, leafs=4)
    assert "leafs" in str(ei.value) and "n, leaf, spines, oversub, reduce" in str(ei.value)


@pytest.mark.parametrize("kwargs,field,shown", [
    ({"bandwidth": "fast"}, "bandwidth", "'fast'"),
    ({"latency": "soon"}, "latency", "'soon'"),
    ({"bandwidth": ["1GB/s", "2GB/s", "3GB/s"]}, "bandwidth", "'1GB/s,2GB/s,3GB/s'"),
    ({"latency": [1e-9, 2e-9, 3e-9]}, "latency", "'1e-09,2e-09,3e-09'"),
])
def test_build_topology_bad_link_values(kwargs, field, shown):
    with pytest.raises(ConfigError) as ei:
        build_topology("torus", dims=(4, 4), **kwargs)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(f"{field}: invalid value {shown};"), msg


@pytest.mark.parametrize("params,unreachable", [
    ({"n": 4, "links": [[0, 1], [2, 3]]}, "no path from NPU 0 to NPU 2"),              # two islands
    ({"n": 4, "switches": 1, "links": [[0, 4], [1, 4], [2, 3]]}, "no path from NPU 0 to NPU 2"),
])
def test_direct_with_disconnected_npus_is_one_line(params, unreachable):
    with pytest.raises(ConfigError) as ei:
        build_topology("direct", bandwidth=1e9, **params)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith("topology direct: links: invalid value") and unreachable in msg, msg


def test_direct_one_way_links_and_unreachable_switch_are_accepted():
    """A one-way 3-cycle (3 links, 0 -> 2 two hops); a one-way line builds, and routing 1 -> 0 has no
    path; a switch nobody reaches is fine."""
    t = build_topology("direct", n=3, links=[[0, 1], [1, 2], [2, 0]], bidirectional=False, bandwidth=1e9)
    assert t.n_links == 3 and int(np.diff(t.route([0], [2])[0])[0]) == 2
    t = build_topology("direct", n=3, links=[[0, 1], [1, 2]], bidirectional=False, bandwidth=1e9)
    with pytest.raises(ValueError, match="no path from node 1 to node 0"):
        t.route([1], [0])
    t = build_topology("direct", n=2, switches=1, links=[[0, 1]], bandwidth=1e9)
    assert (t.n_npus, t.n_switches, t.n_links) == (2, 1, 2)


def test_direct_links_as_an_array():
    """An optimizer's (E, 2) int array: a ring of 64 plus chords i -> i + 32, both ways: 2 x (64 + 64) links;
    NPU 0 reaches NPU 32 in one hop and NPU 16 in at most 16 hops."""
    ring_links = np.stack([np.arange(64), (np.arange(64) + 1) % 64], axis=1)
    chords = np.stack([np.arange(64), (np.arange(64) + 32) % 64], axis=1)
    t = build_topology("direct", n=64, links=np.concatenate([ring_links, chords]).astype(np.int32), bandwidth=1e9)
    assert t.n_links == 2 * 128
    ptr, _ = t.route([0, 0], [32, 16])
    assert np.diff(ptr).tolist()[0] == 1 and 1 <= np.diff(ptr).tolist()[1] <= 16
    src, dst = random_pairs(64, 300)
    check_walks(t, src, dst)


def test_direct_has_no_spec_string():
    with pytest.raises(ConfigError) as ei:
        parse_topology("direct:4")
    assert "mapping" in str(ei.value) and "\n" not in str(ei.value)


def test_topology_docstring_examples():
    """The examples in every topology module's docstrings run and print what they say."""
    import doctest
    import importlib
    import pkgutil

    import fabricsim.topology as pkg
    from fabricsim.topology import builders

    names = [f"fabricsim.topology.{m.name}" for m in pkgutil.iter_modules(pkg.__path__) if not m.ispkg]
    names += [f"fabricsim.topology.builders.{m.name}" for m in pkgutil.iter_modules(builders.__path__)]
    attempted = 0
    for name in names:
        result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, name
        attempted += result.attempted
    assert attempted >= 20
