"""The analytical network model against closed forms written here.

Notation: n or p ranks, S bytes, B bytes/s per link and direction, a seconds per link.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fabricsim.collectives.api import build_schedule
from fabricsim.ir import Schedule, make_step
from fabricsim.network import time_schedule
from fabricsim.topology import fat_tree, mesh, parse_topology, ring, switch, torus

B = 50e9  # 400 Gb/s
A = 250e-9
SIZES = np.array([1.0, 4096.0, 2.0**20, 2.0**30])


@pytest.mark.parametrize("n", [2, 3, 5, 8, 16, 33, 64, 1000])
@pytest.mark.parametrize("bidirectional_links", [True, False])
def test_ring_all_reduce_closed_form(n, bidirectional_links):
    topo = ring(n, B, A, bidirectional=bidirectional_links)
    s = build_schedule(topo, "all-reduce", "ring")
    t = time_schedule(topo, s, SIZES).times
    expect = 2 * (n - 1) * (A + SIZES / (n * B))
    np.testing.assert_allclose(t, expect, rtol=1e-12)
    # the congestion-unaware model agrees: the ring never shares a link
    np.testing.assert_allclose(time_schedule(topo, s, SIZES, "congestion-unaware").times, expect, rtol=1e-12)


@pytest.mark.parametrize("n", [4, 7, 16])
def test_ring_link_bytes(n):
    """Every clockwise link carries 2(n-1)/n of S over the whole all-reduce; the others none."""
    topo = ring(n, B, A)
    s = build_schedule(topo, "all-reduce", "ring")
    lb = time_schedule(topo, s, [1.0]).link_bytes(1e6)
    cw = (topo.link_dst - topo.link_src) % n == 1
    np.testing.assert_allclose(lb[cw], 2 * (n - 1) / n * 1e6)
    assert np.all(lb[~cw] == 0)


@pytest.mark.parametrize("n", [3, 8, 31])
def test_bidirectional_ring_halves_the_bandwidth_term(n):
    topo = ring(n, B, A)
    s = build_schedule(topo, "all-reduce", "ring", bidirectional=True)
    t = time_schedule(topo, s, SIZES).times
    np.testing.assert_allclose(t, 2 * (n - 1) * (A + SIZES / (2 * n * B)), rtol=1e-12)


def test_ring_on_a_line_pays_for_the_long_way_back():
    """On mesh:4 (a line) the wrap transfer 3 -> 0 crosses 3 links: each step lasts 3a, and the
    back links carry one block each, like the forward ones."""
    n = 4
    topo = mesh((n,), B, A)
    s = build_schedule(topo, "all-reduce", "ring")
    t = time_schedule(topo, s, SIZES).times
    np.testing.assert_allclose(t, 2 * (n - 1) * (3 * A + SIZES / (n * B)), rtol=1e-12)


@pytest.mark.parametrize("p", [2, 4, 8, 16, 64, 128])
def test_halving_doubling_on_a_switch_power_of_two(p):
    """log2 p reduce-scatter steps of S/2, S/4, ... and the mirror all-gather; each message
    crosses an up and a down link (2a), and no two messages share a link."""
    topo = switch(p, B, A)
    s = build_schedule(topo, "all-reduce", "halving_doubling")
    t = time_schedule(topo, s, SIZES).times
    k = int(math.log2(p))
    expect = 2 * sum(2 * A + SIZES / (2 ** (i + 1) * B) for i in range(k))
    np.testing.assert_allclose(t, expect, rtol=1e-12)
    np.testing.assert_allclose(expect, 4 * A * k + 2 * SIZES * (p - 1) / (p * B), rtol=1e-12)


@pytest.mark.parametrize("p", [3, 6, 12, 100])
def test_halving_doubling_on_a_switch_folded(p):
    """Off powers of two: the p - p' extra ranks send S to a partner first (one message per
    link), p' ranks run halving-doubling on S, the partners send S back."""
    topo = switch(p, B, A)
    s = build_schedule(topo, "all-reduce", "halving_doubling")
    t = time_schedule(topo, s, SIZES).times
    q = 1 << (p.bit_length() - 1)
    expect = 2 * (2 * A + SIZES / B) + 4 * A * math.log2(q) + 2 * SIZES * (q - 1) / (q * B)
    np.testing.assert_allclose(t, expect, rtol=1e-12)


@pytest.mark.parametrize("p", [2, 3, 8, 17, 64])
def test_direct_all_reduce_on_a_switch(p):
    """Reduce-scatter in one step: each up link carries (p-1) blocks of S/p, each down link
    receives (p-1) blocks; then the all-gather, the same."""
    topo = switch(p, B, A)
    s = build_schedule(topo, "all-reduce", "direct")
    t = time_schedule(topo, s, SIZES).times
    np.testing.assert_allclose(t, 2 * (2 * A + (p - 1) * SIZES / (p * B)), rtol=1e-12)
    # congestion-unaware: every message alone on its links
    t_u = time_schedule(topo, s, SIZES, "congestion-unaware").times
    np.testing.assert_allclose(t_u, 2 * (2 * A + SIZES / (p * B)), rtol=1e-12)


@pytest.mark.parametrize("p", [2, 5, 8, 64])
def test_in_network_all_reduce_streams_S_over_B(p):
    """Reduce up, multicast down, pipelined through the switch: S/B plus the two link latencies,
    whatever p (busbw = 2(p-1)/p B), on every network model."""
    from fabricsim.network.model import time_collective

    topo = switch(p, B, A, reduce=True)
    s = build_schedule(topo, "all-reduce", "in_network")
    assert s.streaming
    want = 2 * A + SIZES / B
    for model in ("congestion-aware", "congestion-unaware", "flow"):
        np.testing.assert_allclose(time_collective(topo, s, SIZES, model), want, rtol=1e-12)
    timing = time_schedule(topo, s, SIZES)
    np.testing.assert_allclose(timing.times, want, rtol=1e-12)
    S = 3e6
    lb = timing.link_bytes(S)
    np.testing.assert_allclose(lb[topo.link_dst == p], S)  # each up link carries S once
    np.testing.assert_allclose(lb[topo.link_src == p], S)  # each down link too
    busbw = SIZES / want * 2 * (p - 1) / p
    np.testing.assert_allclose(busbw[-1], 2 * (p - 1) / p * B, rtol=1e-3)


@pytest.mark.parametrize("p", [2, 5, 8, 64])
def test_in_network_all_reduce_moves_S_each_way(p):
    topo = switch(p, B, A, reduce=True)
    s = build_schedule(topo, "all-reduce", "in_network", lockstep=True)
    timing = time_schedule(topo, s, SIZES)
    S = 3e6
    lb = timing.link_bytes(S)
    up = topo.link_dst == p  # NPU -> switch
    down = topo.link_src == p
    np.testing.assert_allclose(lb[up], S)
    np.testing.assert_allclose(lb[down], S)
    # lock-step: up (a + S/B), then down (a + S/B)
    np.testing.assert_allclose(timing.times, 2 * (A + SIZES / B), rtol=1e-12)


def test_in_network_needs_a_reducing_switch():
    from fabricsim.errors import ConfigError

    with pytest.raises(ConfigError, match="reduce"):
        build_schedule(switch(8, B, A), "all-reduce", "in_network")


def _timing_only(p: int, src, dst, nblk) -> Schedule:
    step = make_step(src, dst, [np.arange(k) for k in nblk], True)
    return Schedule("reduce", "manual", p, 1, (step,), root=0)


@pytest.mark.parametrize("a", [0.0, A])
def test_two_transfers_sharing_a_link_take_twice_as_long(a):
    """On a 3-port switch, 0 -> 2 alone vs 0 -> 2 and 1 -> 2 together: both use the down link
    into NPU 2, so serialization doubles; the latency (2a) does not."""
    topo = switch(3, B, a)
    S = 1e6
    one = time_schedule(topo, _timing_only(3, [0], [2], [1]), [S]).times[0]
    two = time_schedule(topo, _timing_only(3, [0, 1], [2, 2], [1, 1]), [S]).times[0]
    assert one == pytest.approx(2 * a + S / B, rel=1e-12)
    assert two == pytest.approx(2 * a + 2 * S / B, rel=1e-12)
    if a == 0:
        assert two == pytest.approx(2 * one, rel=1e-12)
    # congestion-unaware: no sharing
    unaware = time_schedule(topo, _timing_only(3, [0, 1], [2, 2], [1, 1]), [S], "congestion-unaware").times[0]
    assert unaware == pytest.approx(one, rel=1e-12)


def test_fat_tree_oversubscription_is_the_bottleneck():
    """fat-tree of 8, 4 per leaf, 1 spine, oversub 2: the leaf uplink has 4B/2 = 2B. Four
    flows of S from leaf 0 to leaf 1 share it: 2S/B, over 4 hops."""
    topo = fat_tree(8, B, A, leaf=4, spines=1, oversub=2)
    S = 1e6
    t = time_schedule(topo, _timing_only(8, [0, 1, 2, 3], [4, 5, 6, 7], [1, 1, 1, 1]), [S]).times[0]
    assert t == pytest.approx(4 * A + 4 * S / (2 * B), rel=1e-12)
    topo1 = fat_tree(8, B, A, leaf=4, spines=1, oversub=1)
    t1 = time_schedule(topo1, _timing_only(8, [0, 1, 2, 3], [4, 5, 6, 7], [1, 1, 1, 1]), [S]).times[0]
    assert t1 == pytest.approx(4 * A + S / B, rel=1e-12)


@pytest.mark.parametrize("dims", [(8, 8), (4, 6), (3, 5)])
def test_hierarchical_ring_on_a_torus(dims):
    """RS along dimension 0 (d0-1 steps of S/d0), along dimension 1 (d1-1 steps of S/(d0 d1)),
    then the all-gathers: every transfer is one hop, no link shared within a step."""
    d0, d1 = dims
    topo = torus(dims, B, A)
    s = build_schedule(topo, "all-reduce", "hierarchical")
    t = time_schedule(topo, s, SIZES).times
    expect = 2 * (d0 - 1) * (A + SIZES / (d0 * B)) + 2 * (d1 - 1) * (A + SIZES / (d0 * d1 * B))
    np.testing.assert_allclose(t, expect, rtol=1e-12)


def test_per_dimension_bandwidth_on_a_stack():
    """stack Ring4 x Ring2 with 100 and 10 GB/s: the hierarchical all-reduce pays each phase at
    its own dimension's bandwidth and latency."""
    topo = parse_topology("stack:Ring4xRing2", "100GB/s,10GB/s", "10ns,1us")
    s = build_schedule(topo, "all-reduce", "hierarchical")
    S = 2.0**24
    t = time_schedule(topo, s, [S]).times[0]
    expect = 2 * 3 * (10e-9 + S / (4 * 100e9)) + 2 * 1 * (1e-6 + S / (8 * 10e9))
    assert t == pytest.approx(expect, rel=1e-12)


def test_sizes_are_independent():
    topo = torus((4, 4), B, A)
    s = build_schedule(topo, "all-reduce", "ring")
    together = time_schedule(topo, s, SIZES).times
    alone = [time_schedule(topo, s, [x]).times[0] for x in SIZES]
    np.testing.assert_allclose(together, alone, rtol=1e-15)


def test_group_on_part_of_a_topology():
    """A 4-rank ring over NPUs 0, 2, 4, 6 of ring:8: every transfer crosses 2 links (one
    shared with nobody), the wrap 6 -> 0 also 2 (shortest way round)."""
    topo = ring(8, B, A)
    s = build_schedule(topo, "all-reduce", "ring", group=[0, 2, 4, 6])
    t = time_schedule(topo, s, SIZES).times
    np.testing.assert_allclose(t, 2 * 3 * (2 * A + SIZES / (4 * B)), rtol=1e-12)
