"""Double binary tree, hierarchical (multi-dim) and in-network collectives: exact execution
with `verify` over many group sizes, and step / byte counts against closed forms."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from fabricsim.collectives.bucket import bucket
from fabricsim.collectives.double_binary_tree import (
    double_binary_tree,
    in_order_tree,
    second_tree_map,
)
from fabricsim.collectives.hierarchical import hierarchical
from fabricsim.collectives.in_network import in_network
from fabricsim.collectives.registry import ALGORITHMS, get_algorithm
from fabricsim.ir import Schedule, Step
from fabricsim.collectives.verify import ScheduleError, verify
from fabricsim.errors import ConfigError, UnsupportedGroupSize

SIZES = list(range(2, 34)) + [64, 100, 128, 1000]
MULTI_DIMS = [(2, 2), (4, 4), (3, 5), (2, 3, 4), (8, 8), (5, 4), (2, 2, 2, 2), (16, 16), (8, 8, 8)]
HIER_COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather")
IN_NETWORK_COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce")


def per_rank_sent(s: Schedule, step, size: float = 1.0) -> np.ndarray:
    """Bytes each node sends in one `Step` object, all its repetitions included."""
    out = np.zeros(s.n_nodes)
    np.add.at(out, step.src, s.transfer_fraction(step) * size * step.repeat)
    return out


# ---- double binary tree ----------------------------------------------------------------------


@pytest.mark.parametrize("p", [2, 3, 100])
def test_double_binary_tree_blocks(p):
    s = double_binary_tree("all-reduce", p)
    assert s.nblocks == 2 * s.meta["chunks"]


@pytest.mark.parametrize("p", [2, 3, 4, 5, 7, 8, 12, 17, 31, 64, 100])
@pytest.mark.parametrize("chunks", [1, 2, 3, 16])
def test_double_binary_tree_steps_closed_form(p, chunks):
    s = double_binary_tree("all-reduce", p, chunks=chunks)
    verify(s)
    height = p.bit_length() - 1  # the in-order tree with ceil(p/2) leaves has height floor(log2 p)
    assert s.meta["tree_height"] == height
    # reduce: chunk c leaves height h at step h + c, the root has it after step H-1+c;
    # broadcast: depth d forwards chunk c at step H + c + d, last from depth H-1
    assert s.n_steps == 2 * height + chunks - 1
    # every tree edge carries every chunk once up and once down, in both trees
    assert s.n_transfers == 2 * 2 * (p - 1) * chunks


@pytest.mark.parametrize("p", list(range(2, 70)) + [1000])
def test_double_binary_tree_interior_nodes_disjoint(p):
    parent1 = in_order_tree(p)
    assert (parent1 < 0).sum() == 1
    perm, kind = second_tree_map(p)
    assert kind == ("mirror" if p % 2 == 0 else "shift")
    interior1 = np.zeros(p, bool)
    interior1[parent1[parent1 >= 0]] = True
    interior2 = np.zeros(p, bool)
    interior2[perm[parent1[parent1 >= 0]]] = True
    assert not (interior1 & interior2).any()
    assert interior1.sum() == p // 2  # the leaves are exactly the even ranks
    assert np.array_equal(np.flatnonzero(interior1), np.arange(1, p, 2))


def test_double_binary_tree_pipeline_is_compressed_and_balanced():
    s = double_binary_tree("all-reduce", 128, chunks=64)
    verify(s)
    assert len(s.steps) < s.n_steps // 2  # the steady part is one repeated Step
    sent = s.bytes_sent(1.0)
    # interior in one tree (1/2 up + 2 x 1/2 down) plus a leaf in the other (1/2 up)
    assert sent.max() == pytest.approx(2.0)


def test_double_binary_tree_rejects():
    with pytest.raises(ConfigError):
        double_binary_tree("reduce-scatter", 8)
    with pytest.raises(ConfigError):
        double_binary_tree("all-reduce", 8, chunks=0)
    with pytest.raises(UnsupportedGroupSize):
        double_binary_tree("all-reduce", 1)


# ---- in-network ------------------------------------------------------------------------------


@pytest.mark.parametrize("p", SIZES)
def test_in_network_verifies(p):
    for c in IN_NETWORK_COLLECTIVES:
        roots = (0, p - 1) if c in ("broadcast", "reduce") else (0,)
        for root in roots:
            s = in_network(c, p, root=root)
            assert s.n_extra == 1 and s.meta["switch_node"] == p
            verify(s)


@pytest.mark.parametrize("p", [2, 3, 8, 33, 100])
@pytest.mark.parametrize("chunks", [1, 2, 3, 7])
def test_in_network_pipelined(p, chunks):
    for c in IN_NETWORK_COLLECTIVES:
        s = in_network(c, p, lockstep=True, chunks=chunks, root=p // 2)
        verify(s)
        assert not s.streaming
        assert s.n_steps == chunks + 1
        assert len(s.steps) == min(chunks + 1, 3)


@pytest.mark.parametrize("p", [2, 5, 16, 100, 1000])
@pytest.mark.parametrize("chunks", [1, 4])
def test_in_network_all_reduce_bytes(p, chunks):
    size = 1e6
    s = in_network("all-reduce", p, lockstep=chunks > 1, chunks=chunks)
    assert np.allclose(s.bytes_sent(size)[:p], size)
    assert np.allclose(s.bytes_received(size)[:p], size)
    assert s.bytes_received(size)[p] == pytest.approx(p * size)  # the switch takes all in
    assert s.bytes_sent(size)[p] == pytest.approx(p * size)  # and multicasts the sum


def test_in_network_rejects_all_to_all():
    with pytest.raises(ConfigError):
        in_network("all-to-all", 8)


# ---- hierarchical ----------------------------------------------------------------------------


@pytest.mark.parametrize("p", SIZES)
def test_hierarchical_one_dimension_is_the_ring(p):
    for c in HIER_COLLECTIVES:
        s = hierarchical(c, p)
        verify(s)
        assert s.n_steps == (2 if c == "all-reduce" else 1) * (p - 1)
        assert len(s.steps) == (2 if c == "all-reduce" else 1)


@pytest.mark.parametrize("dims", MULTI_DIMS + [(1, 6), (4, 1, 3)])
@pytest.mark.parametrize("order", ["rs-ag", "baseline"])
def test_hierarchical_multi_dim_ring(dims, order):
    p = math.prod(dims)
    phases = sum(d > 1 for d in dims)
    for c in HIER_COLLECTIVES:
        s = hierarchical(c, p, dims=dims, order=order)
        verify(s)
        assert len(s.steps) == phases * (2 if c == "all-reduce" else 1)  # compression kept
        if c == "all-reduce":
            assert s.n_steps == sum(2 * (d - 1) for d in dims)


@pytest.mark.parametrize("dims", [(2, 2), (4, 4), (2, 4), (4, 2, 2), (8, 8)])
@pytest.mark.parametrize("inner", ["direct", "halving_doubling", "mixed"])
@pytest.mark.parametrize("order", ["rs-ag", "baseline"])
def test_hierarchical_inner_algorithms(dims, inner, order):
    p = math.prod(dims)
    if inner == "mixed":
        inner = ("ring", "halving_doubling", "direct")[: len(dims)] + ("ring",) * (len(dims) - 3)
    for c in HIER_COLLECTIVES:
        verify(hierarchical(c, p, dims=dims, order=order, inner=inner))


@pytest.mark.parametrize("dims", [(3, 5), (2, 3, 4), (6,)])
def test_hierarchical_direct_non_power_of_two(dims):
    p = math.prod(dims)
    for c in HIER_COLLECTIVES:
        for order in ("rs-ag", "baseline"):
            s = hierarchical(c, p, dims=dims, order=order, inner="direct")
            verify(s)
            assert s.n_steps == sum(d > 1 for d in dims) * (2 if c == "all-reduce" else 1)


def test_hierarchical_local_bw_aware_alias():
    a = hierarchical("all-reduce", 12, dims=(3, 4), order="localBWAware")
    b = hierarchical("all-reduce", 12, dims=(3, 4))
    assert a.meta["order"] == b.meta["order"] == "rs-ag"
    assert a.n_steps == b.n_steps
    assert all(np.array_equal(x.blocks, y.blocks) and np.array_equal(x.src, y.src) for x, y in zip(a.steps, b.steps))


@pytest.mark.parametrize("order", ["rs-ag", "baseline"])
def test_hierarchical_64x64_stays_small(order):
    s = hierarchical("all-reduce", 4096, dims=(64, 64), order=order)
    assert len(s.steps) <= 8
    assert s.n_steps == 4 * 63
    verify(s, sample=300)


@pytest.mark.parametrize("a,b", [(2, 3), (4, 4), (3, 5), (8, 2), (16, 16)])
def test_hierarchical_closed_forms(a, b):
    p, size = a * b, 1.0
    s = hierarchical("all-reduce", p, dims=(a, b))
    assert s.n_steps == 2 * (a - 1) + 2 * (b - 1)
    rs0, rs1, ag1, ag0 = s.steps
    assert rs0.repeat == a - 1 and rs1.repeat == b - 1
    # a ring step on dim 0 rotates whole digit-0 ranges: shift -b inside aligned ranges of a*b
    if a > 2:
        assert np.all(rs0.shift == -b) and np.all(rs0.mod == a * b)
    assert np.allclose(per_rank_sent(s, rs0, size)[:p], (a - 1) / a * size)
    assert np.allclose(per_rank_sent(s, rs1, size)[:p], (b - 1) / (a * b) * size)
    assert np.allclose(per_rank_sent(s, ag1, size)[:p], (b - 1) / (a * b) * size)
    assert np.allclose(per_rank_sent(s, ag0, size)[:p], (a - 1) / a * size)
    # dim-0 phases stay on dim-0 lines, dim-1 phases on dim-1 lines
    assert np.all(rs0.src // a == rs0.dst // a)
    assert np.all(rs1.src % a == rs1.dst % a)
    # baseline: each dimension all-reduces the whole buffer
    base = hierarchical("all-reduce", p, dims=(a, b), order="baseline")
    sent = base.bytes_sent(size)
    assert np.allclose(sent, 2 * (a - 1) / a * size + 2 * (b - 1) / b * size)


def test_hierarchical_owner_is_coordinates():
    dims = (2, 3, 4)
    s = hierarchical("reduce-scatter", 24, dims=dims)
    # block digits (dim 0 most significant) are the owner's coordinates (dim 0 fastest)
    for b in range(24):
        d0, d1, d2 = b // 12, (b // 4) % 3, b % 4
        assert s.owner[b] == d0 + 2 * d1 + 6 * d2


def test_hierarchical_errors():
    with pytest.raises(UnsupportedGroupSize, match="dimension 1"):
        hierarchical("all-reduce", 24, dims=(4, 6), inner="halving_doubling")
    with pytest.raises(ConfigError, match="dims"):
        hierarchical("all-reduce", 24, dims=(4, 5))
    with pytest.raises(ConfigError, match="inner"):
        hierarchical("all-reduce", 16, dims=(4, 4), inner="tree")
    with pytest.raises(ConfigError, match="inner"):
        hierarchical("all-reduce", 16, dims=(4, 4), inner=("ring",))
    with pytest.raises(ConfigError, match="order"):
        hierarchical("all-reduce", 16, dims=(4, 4), order="sideways")
    with pytest.raises(ConfigError):
        hierarchical("broadcast", 16)


# ---- verify catches broken schedules ---------------------------------------------------------


def _broken_variants(s: Schedule):
    st = s.steps[0].explicit()  # its ids listed, so each variant breaks one entry
    yield "drop a transfer", replace(s, steps=(replace(st, src=st.src[1:], dst=st.dst[1:], reduce=st.reduce[1:],
                                                     ptr=st.ptr[1:] - st.ptr[1], blocks=st.blocks[st.ptr[1]:],
                                                     shift=None if st.shift is None else st.shift[st.ptr[1]:],
                                                     mod=None if st.mod is None else st.mod[st.ptr[1]:]),) + s.steps[1:])
    flip = st.reduce.copy()
    flip[0] = not flip[0]
    yield "copy instead of reduce", replace(s, steps=(replace(st, reduce=flip),) + s.steps[1:])
    blocks = st.blocks.copy()
    blocks[0] = (blocks[0] + 1) % s.nblocks
    yield "wrong block", replace(s, steps=(replace(st, blocks=blocks),) + s.steps[1:])
    yield "last step missing", replace(s, steps=s.steps[:-1])


@pytest.mark.parametrize("build", [
    lambda: double_binary_tree("all-reduce", 9, chunks=3),
    lambda: hierarchical("all-reduce", 12, dims=(3, 4)),
    lambda: in_network("all-reduce", 6, lockstep=True, chunks=2),
])
def test_verify_catches_broken_schedules(build):
    s = build()
    verify(s)
    for what, bad in _broken_variants(s):
        with pytest.raises(ScheduleError):
            verify(bad)


def _ranged_variants(s: Schedule):
    """Breakages of the first repeated range-form step (each run a rotating tile of c ids)."""
    i = next(i for i, st in enumerate(s.steps) if st.ranges and st.repeat > 1 and st.shift is not None)
    st = s.steps[i]
    c = int(st.blocks_per_transfer[0])

    def put(bad):
        return replace(s, steps=s.steps[:i] + (bad,) + s.steps[i + 1:])

    moved = st.blocks.copy()
    o = moved[0] % st.mod[0]
    moved[0] += (o + c) % st.mod[0] - o  # the next tile of its range
    yield "run on the wrong tile", put(replace(st, blocks=moved))
    turn = st.shift.copy()
    turn[0] = (turn[0] + c) % st.mod[0]  # one tile too far at every repetition
    yield "rotated too far", put(replace(st, shift=turn))
    yield "a transfer dropped", put(Step(st.src[1:], st.dst[1:], st.reduce[1:], st.ptr[1:] - st.ptr[1], st.blocks[1:],
                                         repeat=st.repeat, shift=st.shift[1:], mod=st.mod[1:], ranges=True))
    yield "one repetition short", put(replace(st, repeat=st.repeat - 1))


@pytest.mark.parametrize("build", [
    lambda: hierarchical("all-reduce", 16, dims=(4, 4)),
    lambda: hierarchical("reduce-scatter", 24, dims=(4, 2, 3)),
    lambda: bucket("all-reduce", 24, dims=(3, 2, 4)),
])
def test_repeated_runs_are_checked_in_full_and_by_sample(build):
    """Lifted ring phases are range-form steps whose runs rotate as tiles: a listed copy of the
    schedule gives the same answer, and full and sampled verification both catch a run on the
    wrong tile, a wrong rotation, a missing transfer and a missing repetition."""
    from fabricsim.collectives.verify_sampled import run_sampled

    s = build()
    assert any(st.ranges and st.repeat > 1 for st in s.steps)
    listed = replace(s, steps=tuple(st.explicit() for st in s.steps))
    assert sum(len(st.blocks) for st in listed.steps) > sum(len(st.blocks) for st in s.steps)
    for st, ls in zip(s.steps, listed.steps):  # the same ids at every repetition
        for k in range(st.repeat):
            assert np.array_equal(np.sort(st.blocks_at(k)), np.sort(ls.blocks_at(k)))
    verify(s)
    verify(listed)
    run_sampled(s, np.arange(s.nblocks), np.random.default_rng(0))
    for what, bad in _ranged_variants(s):
        with pytest.raises(ScheduleError):
            verify(bad)
        with pytest.raises(ScheduleError):
            run_sampled(bad, np.arange(s.nblocks), np.random.default_rng(0))


# ---- registry --------------------------------------------------------------------------------


def test_registry_entries():
    for name in ("double_binary_tree", "hierarchical", "in_network"):
        assert name in ALGORITHMS
    assert get_algorithm("dbt").collectives == ("all-reduce",)
    assert get_algorithm("hierarchical").dims and get_algorithm("hierarchical").helper is None
    assert get_algorithm("in-network").helper == "reducing-switch" and get_algorithm("in-network").streams
    assert get_algorithm("in_network_tree").helper == "switch-tree"
    assert get_algorithm("ring").ring_order and not get_algorithm("direct").ring_order
    assert get_algorithm("hierarchical").supports("all-reduce", 6) is None
    assert get_algorithm("in_network").supports("all-to-all", 6) is not None
    # the registered builders take the registry's uniform signature
    for name, c in (("double_binary_tree", "all-reduce"), ("hierarchical", "reduce-scatter"), ("in_network", "reduce")):
        verify(get_algorithm(name).build(c, 8, root=0))


@pytest.mark.parametrize("dims", [(4, 4), (3, 5), (2, 3, 4)])
def test_hierarchical_all_to_all_closed_form(dims):
    """One phase per dimension; in phase k every node sends d_k - 1 messages of S/d_k (p/d_k
    blocks of S/p) over direct links of a fully connected dimension: lat + S/(d_k B) each."""
    from fabricsim.collectives.api import build_schedule
    from fabricsim.network import time_schedule
    from fabricsim.topology import stack

    B, L, S = 50e9, 1e-6, 2**24
    topo = stack(("fc",) * len(dims), dims, B, L)
    s = build_schedule(topo, "all-to-all", "hierarchical")
    verify(s)
    assert s.n_steps == len(dims)
    assert all(np.all(st.blocks_per_transfer == math.prod(dims) // d) for st, d in zip(s.steps, dims))
    expect = sum(L + S / (d * B) for d in dims)
    assert time_schedule(topo, s, [S]).times[0] == pytest.approx(expect, rel=1e-12)


def test_switch_placement_is_linear_and_refuses_unrouted_trees():
    """Issue 20: the switches of in-network algorithms are found in one pass over the links (nvls on
    8,192 DGX nodes took minutes), and a switch tree the topology cannot route (a fat-tree routes
    NPU to NPU only) is one ConfigError, not a traceback of the model."""
    from fabricsim.collectives.api import build_schedule, node_switches, reducing_switch, switch_tree
    from fabricsim.topology import parse_topology

    t = parse_topology("dgx-h100:nodes=4,sharp")
    sw = node_switches(t, np.arange(32), 8, 8)
    assert len(sw) == 4 + 8 and len(set(sw.tolist())) == 12
    assert [reducing_switch(t, np.arange(8 * k, 8 * k + 8)) for k in range(4)] == sw[:4].tolist()
    leaves, root = switch_tree(parse_topology("fred:2x4,reduce"), np.arange(8))
    assert len(set(leaves.tolist())) == 2 and root is not None
    with pytest.raises(ConfigError, match="route between switches"):
        build_schedule(parse_topology("fat-tree:64,leaf=8,reduce"), "all-reduce", "in_network_tree")
