"""NCCL's ring and tree as NCCL runs them on clusters of nodes (G GPUs and N NICs per node):
exact execution with `verify` over many (p, G, N, channels), the ring's and the tree's structure
against closed forms written here (entry GPUs and heads per rail, bytes per channel, node
crossings per step), the placement plumbing (`api.cluster_shape`), times on a single switch,
sizing and errors."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest

from fabricsim.cli import main
from fabricsim.collectives.api import build_schedule, cluster_shape
from fabricsim.collectives.double_binary_tree import double_binary_tree
from fabricsim.collectives.nccl_ring import entry_gpu, nccl_ring
from fabricsim.collectives.nccl_tree import head_gpu, nccl_tree, tree_of_channel
from fabricsim.collectives.registry import ALGORITHMS, choose_algorithm, get_algorithm
from fabricsim.collectives.sizing import estimate_blocks
from fabricsim.collectives.verify import verify
from fabricsim.errors import ConfigError, UnsupportedGroupSize
from fabricsim.limits import raised_limits
from fabricsim.network.model import time_collective
from fabricsim.topology import parse_topology

RING_COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather")
SHAPES = [(p, G, N) for p in (2, 3, 5, 6, 8, 12, 16, 24, 40) for G in (1, 2, 3, 4, 8) if p % G == 0
          for N in range(1, G + 1) if G % N == 0]
S = 2**30


def rail(g, G: int, N: int):
    """NIC of local GPU g: g*N // G."""
    return np.asarray(g) * N // G


def floor_log2(n: int) -> int:
    return n.bit_length() - 1


# ---- exact execution ---------------------------------------------------------------------------


@pytest.mark.parametrize("p, G, N", SHAPES, ids=[f"p{p}-G{G}-N{N}" for p, G, N in SHAPES])
def test_nccl_ring_verifies(p, G, N):
    for c in range(1, 10):
        for coll in RING_COLLECTIVES:
            s = nccl_ring(coll, p, channels=c, gpus_per_node=G, nics_per_node=N)
            assert (s.p, s.nblocks, s.facts.channels) == (p, c * p, c)
            assert verify(s, seed=c).blocks_checked == c * p
    assert nccl_ring("all-reduce", p, gpus_per_node=G, nics_per_node=N).facts.channels == N  # default


@pytest.mark.parametrize("p, G, N", SHAPES, ids=[f"p{p}-G{G}-N{N}" for p, G, N in SHAPES])
def test_nccl_tree_verifies(p, G, N):
    for c in range(1, 10):
        for chunks in (1, 3):
            s = nccl_tree("all-reduce", p, channels=c, chunks=chunks, gpus_per_node=G, nics_per_node=N)
            assert (s.nblocks, s.facts.channels) == (c * chunks, c)
            verify(s, seed=c)
    assert nccl_tree("all-reduce", p, gpus_per_node=G, nics_per_node=N).facts.channels == max(2, 2 * N)


def test_defaults_are_one_node_and_serve_every_size():
    for p in list(range(2, 34)) + [64, 100]:
        s = nccl_ring("all-reduce", p)
        assert s.meta["gpus_per_node"] == p and s.facts.channels == 1
        verify(s)
        t = nccl_tree("all-reduce", p)
        assert t.facts.channels == 2 and t.meta["tree_height"] == p - 1  # one node: chains
        verify(t)


# ---- ring structure -------------------------------------------------------------------------------


@pytest.mark.parametrize("G, N, c, entries", [
    (8, 8, 8, [0, 1, 2, 3, 4, 5, 6, 7]),  # a NIC per GPU: ring k enters node 0 at GPU k, alternating direction
    (8, 4, 4, [1, 3, 5, 7]),  # GPUs 2r, 2r+1 on NIC r: enter at 2r+1, leave from 2r, same NIC
    (8, 4, 8, [1, 3, 5, 7, 1, 3, 5, 7]),
    (8, 2, 4, [1, 5, 2, 6]),  # GPUs 4r..4r+3 on NIC r: entries 4r+1, 4r+2, 4r+3 have exits on NIC r
    (4, 1, 3, [1, 2, 3]),
    (3, 3, 2, [0, 1]),
])
def test_ring_enters_every_node_on_the_rail_of_its_channel(G, N, c, entries):
    nodes = 4
    p = nodes * G
    s = nccl_ring("all-reduce", p, channels=c, gpus_per_node=G, nics_per_node=N)
    assert list(s.meta["entries"]) == entries
    assert [entry_gpu(k, G, N) for k in range(c)] == entries
    for st in s.steps:
        ch = st.blocks // p  # ring k's blocks stay in [k p, (k+1) p) at every repetition
        cross = st.src // G != st.dst // G
        for k in range(c):
            mine = cross & (ch == k)
            assert mine.sum() == nodes  # one crossing into every node
            if G == N:  # even nodes entered at e_k, odd ones at e_k - 1, each from the same rail (4 nodes)
                into = st.dst[mine] // G
                want = np.where(into % 2 == 0, entries[k], (entries[k] - 1) % G)
                assert np.array_equal(st.dst[mine] % G, want) and np.array_equal(st.src[mine] % G, want)
                continue
            assert np.all(st.dst[mine] % G == entries[k]) and np.all(st.src[mine] % G == (entries[k] - 1) % G)
            assert np.all(rail(st.dst[mine] % G, G, N) == k % N)
            if G > N:  # exit and entry on the same NIC: no proxy hop
                assert np.all(rail(st.src[mine] % G, G, N) == k % N)
    assert len({e * N // G for e in entries[:N]}) == min(c, N)  # c <= N channels use c distinct NICs


@pytest.mark.parametrize("p, G, N, c", [(16, 8, 8, 8), (16, 8, 4, 4), (40, 8, 2, 3), (24, 3, 1, 5), (12, 1, 1, 2),
                                        (8, 8, 4, 6), (30, 6, 3, 7)])
def test_ring_bytes_and_crossings_per_channel(p, G, N, c):
    """Per channel every rank sends 2(p-1)/p x S/c in an all-reduce, and in every step the
    channel's ring crosses between nodes exactly once per node (none on one node)."""
    nodes = p // G
    s = nccl_ring("all-reduce", p, channels=c, gpus_per_node=G, nics_per_node=N)
    assert len(s.steps) == 2 and s.n_steps == 2 * (p - 1)
    sent = np.zeros((c, p))
    for st in s.steps:
        np.add.at(sent, (st.blocks // p, st.entry_src()), s.block_frac * st.repeat)
    np.testing.assert_allclose(sent, 2 * (p - 1) / p / c, rtol=1e-12)
    for _, st in s.expanded():
        ch = st.blocks // p
        crossing = st.src // G != st.dst // G
        np.testing.assert_array_equal(np.bincount(ch[crossing], minlength=c), [nodes if nodes > 1 else 0] * c)
        np.testing.assert_array_equal(np.bincount(ch, minlength=c), [p] * c)  # each ring: every rank sends once


def test_ring_on_one_node_is_rotations_of_one_cycle():
    p = 8
    s = nccl_ring("all-reduce", p, channels=5, nics_per_node=4)
    (st, _) = s.steps
    for k in range(5):
        mine = st.blocks // p == k
        assert set(zip(st.src[mine].tolist(), st.dst[mine].tolist())) == {(r, (r + 1) % p) for r in range(p)}


def test_ring_stays_compressed_at_4096_ranks():
    t0 = time.perf_counter()
    s = nccl_ring("all-reduce", 4096, channels=8, gpus_per_node=8, nics_per_node=8)
    assert time.perf_counter() - t0 < 2
    assert len(s.steps) == 2 and all(st.n_transfers == 8 * 4096 and st.repeat == 4095 for st in s.steps)
    verify(nccl_ring("all-reduce", 512, channels=8, gpus_per_node=8, nics_per_node=8), sample=64)


# ---- tree structure -------------------------------------------------------------------------------


@pytest.mark.parametrize("G, N, c, heads", [
    (8, 8, 16, [0, 1, 2, 3, 4, 5, 6, 7] * 2),
    (8, 4, 8, [0, 2, 4, 6, 1, 3, 5, 7]),  # NIC r = GPUs 2r, 2r+1
    (8, 2, 4, [0, 4, 1, 5]),
    (4, 1, 2, [0, 1]),
])
def test_tree_heads_and_crossings(G, N, c, heads):
    nodes, chunks = 5, 3
    p = nodes * G
    s = nccl_tree("all-reduce", p, channels=c, chunks=chunks, gpus_per_node=G, nics_per_node=N)
    assert list(s.meta["heads"]) == heads == [head_gpu(k, G, N) for k in range(c)]
    H = G - 1 + floor_log2(nodes)
    assert s.meta["tree_height"] == H and s.n_steps == 2 * H + chunks - 1
    assert s.n_transfers == 2 * c * (p - 1) * chunks  # every tree edge, every piece, up and down
    crossings = np.zeros(c, dtype=int)
    for _, st in s.expanded():
        ch = st.blocks // chunks
        cross = st.src // G != st.dst // G
        for k in range(c):
            mine = cross & (ch == k)
            crossings[k] += mine.sum()
            assert np.all(st.src[mine] % G == heads[k]) and np.all(st.dst[mine] % G == heads[k])
            assert np.all(rail(heads[k], G, N) == k % N)
            inside = ~cross & (ch == k) & st.reduce
            # up the chain h, h+1, ..., h+G-1: every GPU reduces into the one before it
            assert np.all((st.src[inside] - st.dst[inside]) % G == 1)
            assert np.all(st.src[inside] % G != heads[k])
    np.testing.assert_array_equal(crossings, 2 * (nodes - 1) * chunks)  # node-tree edges, up and down


def test_tree_channels_pair_up_both_trees_on_every_rail():
    for N in (1, 2, 3, 4, 8):
        trees = [tree_of_channel(k, N) for k in range(2 * N)]
        assert all(trees[2 * m] != trees[2 * m + 1] for m in range(N))  # each pair is a double binary tree
        for r in range(N):
            assert {trees[k] for k in range(2 * N) if k % N == r} == {0, 1}


@pytest.mark.parametrize("p", [2, 5, 8, 13, 32])
@pytest.mark.parametrize("chunks", [1, 4])
def test_tree_with_one_gpu_per_node_is_the_double_binary_tree(p, chunks):
    mine = nccl_tree("all-reduce", p, chunks=chunks, gpus_per_node=1)
    dbt = double_binary_tree("all-reduce", p, chunks=chunks)
    assert mine.n_steps == dbt.n_steps and mine.nblocks == dbt.nblocks
    for (_, a), (_, b) in zip(mine.expanded(), dbt.expanded()):
        key = lambda st: sorted(zip(st.src.tolist(), st.dst.tolist(), st.blocks.tolist(), st.reduce.tolist()))
        assert key(a) == key(b)


def test_tree_bytes_per_channel():
    """Every tree edge carries the channel's S/c once up and once down: 2(p-1) S/c per channel."""
    p, G, N, c, chunks = 32, 8, 4, 8, 4
    s = nccl_tree("all-reduce", p, channels=c, chunks=chunks, gpus_per_node=G, nics_per_node=N)
    per_channel = np.zeros(c)
    for st in s.steps:
        np.add.at(per_channel, st.blocks // chunks, s.block_frac * st.repeat)
    np.testing.assert_allclose(per_channel, 2 * (p - 1) / c, rtol=1e-12)


def test_tree_is_fast_and_compressed():
    t0 = time.perf_counter()
    verify(nccl_tree("all-reduce", 64, channels=8, gpus_per_node=8, nics_per_node=8))
    assert time.perf_counter() - t0 < 3  # about 0.01 s
    t0 = time.perf_counter()
    s = nccl_tree("all-reduce", 512, chunks=64, gpus_per_node=8, nics_per_node=8)
    assert time.perf_counter() - t0 < 3
    H = 7 + 6
    assert s.n_steps == 2 * H + 63
    # steps 2H-1 .. chunks-1 (every edge busy up and down) are one Step, the ramps one Step each
    assert len(s.steps) == s.n_steps - (64 - 2 * H + 1) + 1
    verify(s, sample=128)


# ---- placement ------------------------------------------------------------------------------------


@pytest.fixture
def cluster():
    """Four nodes of 4 GPUs and 2 NICs on one switch: GPUs 0, 1 use NIC 0, GPUs 2, 3 NIC 1."""
    return replace(parse_topology("switch:16", "100GB/s", "0s"), node_gpus=4, node_nics=2)


@pytest.mark.parametrize("group, shape", [
    (list(range(16)), (4, 2)),  # the whole network
    ([4, 5, 6, 7], (4, 2)),  # one node
    ([1, 5, 9, 13], (1, 1)),  # GPU 1 of every node: a data-parallel group
    ([5, 4, 7, 6], (4, 2)),  # members of a node in the group's order
    ([8, 9, 10, 11, 0, 1, 2, 3], (4, 2)),  # nodes in any order
    ([0, 1, 4, 5], (2, 1)),  # GPUs 0, 1: both on NIC 0
    ([0, 2, 4, 6], (2, 2)),
    ([0, 2, 4, 5], (2, 1)),  # 2 NICs on node 0, 1 on node 1: not the same on every node
    ([0, 1, 2], (3, 1)),  # 2 NICs do not divide 3 GPUs
    ([0, 1, 2, 4], (4, 1)),  # 3 on node 0, 1 on node 1: one node of p
    ([0, 4, 1, 5], (4, 1)),  # node 0's members are not consecutive
])
def test_cluster_shape(cluster, group, shape):
    assert cluster_shape(cluster, np.array(group)) == shape


def test_cluster_shape_off_a_cluster():
    topo = parse_topology("switch:8")
    assert cluster_shape(topo, np.arange(8)) == (8, 1)
    assert cluster_shape(replace(topo, node_gpus=4, node_nics=0), np.arange(8)) == (4, 1)


@pytest.mark.parametrize("name, channels", [("nccl_ring", 2), ("nccl_tree", 4)])
def test_build_schedule_fills_the_node_shape(cluster, name, channels):
    for group, (G, N, c) in (
        (None, (4, 2, channels)), ([4, 5, 6, 7], (4, 2, channels)), ([1, 5, 9, 13], (1, 1, channels // 2)),
    ):
        s = build_schedule(cluster, "all-reduce", name, group=group)
        assert (s.meta["gpus_per_node"], s.facts.nics_per_node, s.facts.channels) == (G, N, c)
        np.testing.assert_array_equal(s.nodes, np.arange(16) if group is None else group)
        verify(s)
    # what the user gives wins; a node size other than the group's has one NIC unless given
    assert build_schedule(cluster, "all-reduce", name, gpus_per_node=2).facts.nics_per_node == 1
    assert build_schedule(cluster, "all-reduce", name, gpus_per_node=4).facts.nics_per_node == 2
    assert build_schedule(cluster, "all-reduce", name, nics_per_node=1).meta["gpus_per_node"] == 4
    assert build_schedule(parse_topology("switch:8"), "all-reduce", name).meta["gpus_per_node"] == 8


def test_build_schedule_errors(cluster):
    with pytest.raises(UnsupportedGroupSize) as e:
        build_schedule(cluster, "all-reduce", "nccl_ring", group=list(range(6)), gpus_per_node=4)
    assert "multiple of gpus_per_node=4" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ConfigError) as e:
        build_schedule(cluster, "all-reduce", "nccl_ring", nics_per_node=3, where="--option")
    assert e.value.field == "--option nics_per_node" and "divisor of gpus_per_node=4" in str(e.value)
    with pytest.raises(ConfigError, match="collective"):
        build_schedule(cluster, "reduce-scatter", "nccl_tree")
    assert get_algorithm("nccl_ring").supports("all-reduce", 6, {"gpus_per_node": 4}) is not None
    assert get_algorithm("nccl-tree").supports("all-reduce", 8, {"gpus_per_node": 4}) is None


# ---- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("build", [nccl_ring, nccl_tree])
def test_builder_errors(build):
    with pytest.raises(UnsupportedGroupSize) as e:
        build("all-reduce", 6, gpus_per_node=4)
    assert "accepted: a multiple of gpus_per_node=4" in str(e.value)
    with pytest.raises(UnsupportedGroupSize):
        build("all-reduce", 1)
    with pytest.raises(ConfigError) as e:
        build("all-reduce", 8, gpus_per_node=4, nics_per_node=3)
    assert e.value.field == "nics_per_node" and "1, 2, 4" in str(e.value)
    for bad in (0, -1, True, "2"):
        with pytest.raises(ConfigError) as e:
            build("all-reduce", 8, channels=bad)
        assert e.value.field == "channels"
        with pytest.raises(ConfigError):
            build("all-reduce", 8, gpus_per_node=bad)
    with pytest.raises(ConfigError, match="collective"):
        build("all-to-all", 8)
    with pytest.raises(ConfigError):
        choose_algorithm(f"{build.__name__},channels=0")


def test_tree_serves_all_reduce_only():
    for coll in ("reduce-scatter", "all-gather", "broadcast", "reduce"):
        with pytest.raises(ConfigError, match="nccl_tree supports: all-reduce"):
            nccl_tree(coll, 8)
    with pytest.raises(ConfigError) as e:
        nccl_tree("all-reduce", 8, chunks=0)
    assert e.value.field == "chunks"


# ---- time on a single switch ------------------------------------------------------------------------


@pytest.mark.parametrize("G, N, channels", [(8, 1, c) for c in range(1, 9)] + [(4, 2, c) for c in (1, 2, 3, 4)]
                         + [(2, 1, 3), (1, 1, 2)])
def test_ring_time_on_a_switch(G, N, channels):
    """Every rank sends S/(c p) on each of c rings per step, S/p in all, over its one link to the
    switch: all-reduce 2(p-1)/p S/B, reduce-scatter and all-gather (p-1)/p S/B, for any c."""
    p, B = 8, 100e9
    topo = parse_topology("switch:8", "100GB/s", "0s")
    for coll, phases in (("all-reduce", 2), ("reduce-scatter", 1), ("all-gather", 1)):
        s = build_schedule(topo, coll, "nccl_ring", channels=channels, gpus_per_node=G, nics_per_node=N)
        t = float(time_collective(topo, s, S)[0])
        assert t == pytest.approx(phases * (p - 1) / p * S / B, rel=1e-12)


# ---- sizing and listings ----------------------------------------------------------------------------


@pytest.mark.parametrize("alg, p, opts", [
    ("nccl_ring", 32, {}), ("nccl_ring", 64, {"channels": 8, "gpus_per_node": 8, "nics_per_node": 8}),
    ("nccl_ring", 48, {"gpus_per_node": 8, "nics_per_node": 4}),
    ("nccl_tree", 32, {}), ("nccl_tree", 64, {"gpus_per_node": 8, "nics_per_node": 8}),
    ("nccl_tree", 64, {"gpus_per_node": 8, "nics_per_node": 2, "chunks": 100}),
    ("nccl_tree", 40, {"gpus_per_node": 1, "channels": 3, "chunks": 1}), ("nccl_tree", 100, {"chunks": 50}),
])
def test_the_blocks_estimate_bounds_what_the_builder_makes(alg, p, opts):
    s = ALGORITHMS[alg].build("all-reduce", p, **opts)
    entries = s.stored_entries  # a part shared by the composed steps of nccl_tree counts once
    assert entries <= estimate_blocks(alg, "all-reduce", p, opts) <= 64 * entries


def test_the_blocks_limit_names_channels():
    topo = parse_topology("switch:8")
    with raised_limits(blocks=1000):
        with pytest.raises(ConfigError) as e:
            build_schedule(topo, "all-reduce", "nccl_ring", channels=100)
    assert "channels" in str(e.value) and "blocks" in str(e.value)
    with pytest.raises(ConfigError, match="chunks"):
        choose_algorithm("nccl_tree", {"channels": 10**9})  # the chunks limit: pieces of a buffer


def test_listed(capsys):
    assert main(["algorithms"]) == 0
    out = capsys.readouterr().out
    for name in ("nccl_ring", "nccl_tree"):
        assert any(line.startswith(name + " ") for line in out.splitlines())
    assert "-o channels" in out and "-o gpus_per_node" in out and "aliases: nccl-ring" in out


@pytest.mark.parametrize("module", ["fabricsim.collectives.nccl_ring", "fabricsim.collectives.nccl_tree"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
