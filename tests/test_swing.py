"""Swing and the torus baselines against the spec (docs/specs/swing.md): worked examples,
verify on every reproduction shape, and the congestion deficiency from routed schedules.

The spec numbers ranks row-major (coordinate 0 slowest); fabricsim's dimension 0 is fastest. On
a square torus the two conventions differ by transposing coordinates, which the tests apply.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.swing import (
    peers,
    port_schedule,
    rho,
    swing,
    torus_recursive_doubling,
)
from fabricsim.collectives.verify import verify
from fabricsim.errors import UnsupportedGroupSize
from fabricsim.network import deficiencies, time_schedule
from fabricsim.topology import torus


def test_rho_and_delta():
    assert [rho(k) for k in range(11)] == [1, -1, 3, -5, 11, -21, 43, -85, 171, -341, 683]


def test_worked_example_p8_peers():
    table = [[1, 0, 3, 2, 5, 4, 7, 6], [7, 2, 1, 4, 3, 6, 5, 0], [3, 6, 5, 0, 7, 2, 1, 4]]
    assert [q.tolist() for q in peers((8,), "swing", 0, False)] == table


def _send_sets(s, rank: int) -> list[tuple[int, set[int]]]:
    """(peer, original block ids) rank sends in each reduce-scatter step (single collective)."""
    out = []
    for st in s.steps[: len(s.steps) // 2]:
        st = st.explicit()
        t = int(np.flatnonzero(st.src == rank)[0])
        blocks = st.blocks[st.ptr[t]: st.ptr[t + 1]]
        out.append((int(st.dst[t]), {int(s.owner[b]) for b in blocks}))
    return out


def test_worked_example_p8_send_sets():
    s = swing("all-reduce", 8, ports="single")
    assert _send_sets(s, 0) == [(1, {1, 2, 5, 6}), (7, {4, 7}), (3, {3})]
    assert _send_sets(s, 5) == [(4, {0, 3, 4, 7}), (6, {1, 6}), (2, {2})]
    # all-gather of rank 0: with 3 {0}/{3}, with 7 {0,3}/{4,7}, with 1 {0,3,4,7}/{1,2,5,6}
    ag = []
    for st in s.steps[3:]:
        st = st.explicit()
        t = int(np.flatnonzero(st.src == 0)[0])
        ag.append((int(st.dst[t]), {int(s.owner[b]) for b in st.blocks[st.ptr[t]: st.ptr[t + 1]]}))
    assert ag == [(3, {0}), (7, {0, 3}), (1, {0, 3, 4, 7})]


def test_p16_send_sets():
    s = swing("all-reduce", 16, ports="single")
    assert _send_sets(s, 0) == [(1, {1, 2, 5, 6, 9, 10, 13, 14}), (15, {4, 7, 12, 15}), (3, {3, 8}), (11, {11})]


def test_p6_not_a_power_of_two():
    assert [q.tolist() for q in peers((6,), "swing", 0, False)] == [[1, 0, 3, 2, 5, 4], [5, 2, 1, 4, 3, 0], [3, 4, 5, 0, 1, 2]]
    s = swing("all-reduce", 6, ports="single")
    assert _send_sets(s, 0) == [(1, {1, 4}), (5, {2, 5}), (3, {3})]


@pytest.mark.parametrize("p, counts", [(6, [2, 2, 1]), (10, [2, 4, 2, 1]), (12, [6, 2, 2, 1]), (14, [6, 4, 2, 1]),
                                       (20, [10, 2, 4, 2, 1]), (24, [12, 6, 2, 2, 1])])
def test_blocks_per_step_off_powers_of_two(p, counts):
    s = swing("reduce-scatter", p, ports="single")
    assert [int(st.blocks_per_transfer.max()) for st in s.steps] == counts
    assert sum(counts) == p - 1


def _transpose(r: int, a: int, b: int) -> int:
    """The spec's row-major rank r = x0*b + x1 on an a x b torus, as fabricsim numbers the same
    node when its dimension 0 is the spec's x0: x0 + x1*a."""
    return (r // b) + (r % b) * a


def test_4x4_and_8x8_peers_match_the_spec():
    # spec (row-major): 4x4 rank 0, port 0 peers over steps 0-3: 4, 1, 12, 3; step 0 all ports 4, 1, 12, 3
    spec_port0 = [4, 1, 12, 3]
    ours = [int(q[0]) for q in peers((4, 4), "swing", 0, False)]
    assert ours == [_transpose(x, 4, 4) for x in spec_port0]
    step0 = [int(peers((4, 4), "swing", c % 2, c >= 2)[0][0]) for c in range(4)]
    assert sorted(step0) == sorted(_transpose(x, 4, 4) for x in [4, 1, 12, 3])
    spec = {0: [8, 1, 56, 7, 24, 3], 1: [1, 8, 7, 56, 3, 24], 2: [56, 7, 8, 1, 40, 5], 3: [7, 56, 1, 8, 5, 40]}
    for c, seq in spec.items():
        ours = [int(q[0]) for q in peers((8, 8), "swing", c % 2, c >= 2)]
        assert ours == [_transpose(x, 8, 8) for x in seq], c


def test_port_schedules_on_a_rectangle():
    # spec's 2x4: port 0 = (0,0), (1,0), (1,1); port 1 = (1,0), (0,0), (1,1)
    assert port_schedule((2, 4), 0) == [(0, 0), (1, 0), (1, 1)]
    assert port_schedule((2, 4), 1) == [(1, 0), (0, 0), (1, 1)]


FULL = [(8,), (16,), (6,), (10,), (5,), (7,), (4, 4), (8, 8), (16, 16), (2, 4), (4, 2), (2, 8), (4, 16), (16, 4),
        (6, 6), (6, 4), (10, 10), (12, 6), (4, 4, 4), (2, 4, 8), (8, 8, 8), (2, 2, 2, 2)]
SAMPLED = [(32, 32), (64, 64), (128, 128), (64, 16), (128, 8), (256, 4), (8, 8, 8, 8)]
SAMPLED_SLOW = {(128, 128)}  # 16,384 ranks (2 s) under -m slow; 32x32 and 64x64 stay in the default run
VARIANTS = [("swing", {}), ("swing", {"ports": "single"}), ("swing", {"mode": "latency"}),
            ("torus_recursive_doubling", {}), ("torus_recursive_doubling", {"mode": "latency"}),
            ("torus_recursive_doubling", {"mirrored": True})]


def _build(name, p, dims, opts, collective="all-reduce"):
    fn = swing if name == "swing" else torus_recursive_doubling
    return fn(collective, p, dims=dims, **opts)


@pytest.mark.parametrize("dims", FULL, ids=["x".join(map(str, d)) for d in FULL])
def test_verify_fully(dims):
    p = math.prod(dims)
    for name, opts in VARIANTS:
        if name == "torus_recursive_doubling" and opts.get("mode") != "latency" and any(d & (d - 1) for d in dims):
            with pytest.raises(UnsupportedGroupSize):
                _build(name, p, dims, opts)
            continue
        verify(_build(name, p, dims, opts))
        if opts.get("mode") != "latency":
            for c in ("reduce-scatter", "all-gather"):
                verify(_build(name, p, dims, opts, c))


@pytest.mark.parametrize("dims", [pytest.param(d, marks=[pytest.mark.slow] * (d in SAMPLED_SLOW), id="x".join(map(str, d)))
                                  for d in SAMPLED])
def test_verify_sampled(dims):
    p = math.prod(dims)
    for name, opts in VARIANTS:
        verify(_build(name, p, dims, opts), sample=64)


def test_odd_dimensions_in_several_dimensions_are_rejected():
    with pytest.raises(UnsupportedGroupSize, match="odd"):
        swing("all-reduce", 15, dims=(3, 5))
    verify(swing("all-reduce", 15, dims=(3, 5), mode="latency"))  # the latency mode shrinks any size


def _xi(dims, name="swing", **opts):
    t = torus(dims, 50e9, 400e-9)
    return deficiencies(t, build_schedule(t, "all-reduce", name, **opts))


def test_swing_b_congestion_deficiency():
    """Spec §3: Xi(64x64) = 1.184 (within 1%); rectangular exact values 1.41 (128x8), 1.95 (256x4)."""
    d = _xi((64, 64))
    assert d.congestion == pytest.approx(1.184, rel=0.01)
    assert d.latency == 2 and d.bandwidth == pytest.approx(1.0, abs=1e-3)
    assert _xi((128, 8)).congestion == pytest.approx(1.41, abs=0.005)
    assert _xi((256, 4)).congestion == pytest.approx(1.95, abs=0.005)


def test_xi_from_the_spec_formula():
    """Xi(Swing-B) = sum_s delta(sigma(s)) / 2^(s+1) / (1 - 1/p) on square power-of-two tori:
    the busiest link of step s carries delta(sigma(s)) messages (plain and mirrored collectives
    in opposite senses), normalised by the bytes a node sends."""
    for a, D in [(8, 2), (16, 2), (32, 2), (8, 3)]:
        p = a**D
        S = int(math.log2(p))
        xi = sum(abs(rho(s // D)) / 2 ** (s + 1) for s in range(S)) / (1 - 1 / p)
        assert _xi((a,) * D).congestion == pytest.approx(xi, rel=1e-9), (a, D)


def test_rabenseifner_xi_tends_to_the_table():
    """Table 2: (2^D - 1)/(2^D - 2) for D = 2, 3, 4 as p grows (finite tori are a little below)."""
    assert _xi((128, 128), "torus_recursive_doubling").congestion == pytest.approx(1.5, rel=0.01)
    assert _xi((8, 8, 8, 8), "torus_recursive_doubling").congestion == pytest.approx(15 / 14, rel=0.01)


def test_swing_l_step_time_closed_form():
    """Swing-L single port on 8x8 with no congestion accounting trick: step s moves the whole
    vector delta(sigma(s)) hops; the busiest link carries (delta+1)/2 messages (even and odd
    nodes go opposite ways) -- spec §1.7."""
    a, B, h = 8, 50e9, 400e-9
    t = torus((a, a), B, h)
    s = build_schedule(t, "all-reduce", "swing", mode="latency", ports="single")
    S = 2**20
    steps = [abs(rho(k)) for k in range(3) for _ in range(2)]  # distances, dims alternating
    expect = sum(d * h + (d + 1) // 2 * S / B for d in steps)
    assert time_schedule(t, s, [S]).times[0] == pytest.approx(expect, rel=1e-12)
