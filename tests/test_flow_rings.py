"""Independent rings simulated one ring at a time (`lowering.rings`): the same times as simulating every
transfer, the closed form of Hamiltonian rings at 1,024 ranks (16,384 under -m slow), and no split
where parts interact."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.ring import ring_phase
from fabricsim.ir import Schedule
from fabricsim.network.flow_model import FlowModel
from fabricsim.network.lowering.rings import _parts, ring_parts
from fabricsim.topology import parse_topology
from test_flow_quotient import TOL, _full_model_times

SIZES = [1e3, 1e6, 1e8]
MODELS = [FlowModel(), FlowModel(chunk=4096.0), FlowModel("store-and-forward")]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.name}-{m.chunk:g}")
@pytest.mark.parametrize("spec", ["torus:4x4", "torus:5x5", "torus:8x8", "torus:9x3", "torus:3x9", "torus:16x4"])
def test_hamiltonian_rings_as_rings_keep_their_times(model, spec):
    """Every entry point's FlowModel.collective runs Hamiltonian rings as four rings of p flows'
    orbits each: the times of simulating every transfer on the torus, all three collectives."""
    topo = parse_topology(spec, "50GB/s", "100ns")
    p = topo.n_npus
    for coll, steps in (("all-reduce", 2), ("reduce-scatter", 1), ("all-gather", 1)):
        s = build_schedule(topo, coll, "hamiltonian_rings")
        got = model.collective(topo, s)
        assert got.topo.name == f"{spec}/rings4" and len(got.unit) == 4 * steps * (p - 1), (spec, coll)
        np.testing.assert_allclose(got.times(SIZES), _full_model_times(model, topo, s, SIZES), rtol=TOL)


def test_parts_are_the_rings():
    """On 8x8 the four rings (ring-major within each step, as `parallel` lays them) are the parts."""
    topo = parse_topology("torus:8x8", "50GB/s", "100ns")
    s = build_schedule(topo, "all-reduce", "hamiltonian_rings")
    part, first, *_ = _parts(topo, s)
    for i, st in enumerate(s.steps):
        ring = np.arange(st.n_transfers) // 64
        assert np.array_equal(part[first[i]:first[i + 1]], ring)


@pytest.mark.parametrize("side", [32, pytest.param(128, marks=pytest.mark.slow)])  # 1,024 ranks; 16,384 under -m slow
def test_large_torus_closed_form(side):
    """Hamiltonian rings on side x side: each ring's step moves size/(4p) over one link, every directed
    link used by one ring, so an all-reduce is 2(p - 1) x (size/(4p)/B + latency); 4 x 2(p-1) orbit
    flows instead of 8.4 M (32x32) or 2.1 G (128x128) transfers."""
    topo = parse_topology(f"torus:{side}x{side}", "50GB/s", "100ns")
    p, size = side * side, 64 * 2**20
    for coll, steps in (("all-reduce", 2 * (p - 1)), ("all-gather", p - 1)):
        s = build_schedule(topo, coll, "hamiltonian_rings")
        r = ring_parts(topo, s)
        assert [q.orbit for q in r.parts] == [p] * 4 and len(r.flows) == 4 * steps
        got = FlowModel().collective(topo, s).times([size])[0]
        assert got == pytest.approx(steps * (size / (4 * p) / 50e9 + 100e-9), rel=1e-9)


def test_shared_links_are_not_split():
    """A torus dimension of 2 has one link pair, which both cycles take: the rings share links, so
    they are one part, not a ring; the collective then runs every transfer, with the same times."""
    topo = parse_topology("torus:4x2", "50GB/s", "100ns")
    s = build_schedule(topo, "all-reduce", "hamiltonian_rings")
    assert _parts(topo, s)[5] < 4 and ring_parts(topo, s) is None
    got = FlowModel().collective(topo, s)
    assert "/rings" not in got.topo.name
    np.testing.assert_allclose(got.times(SIZES), _full_model_times(FlowModel(), topo, s, SIZES), rtol=TOL)


def test_shared_blocks_join_parts():
    """Two rings on different links (+ and -) that move the same blocks depend on each other: one part."""
    topo = parse_topology("ring:8", "50GB/s", "100ns")
    both = Schedule("reduce-scatter", "by-hand", 8, 8, (ring_phase(8, "rs", 1), ring_phase(8, "rs", -1)))
    assert _parts(topo, both)[5] == 1 and ring_parts(topo, both) is None
    apart = Schedule("reduce-scatter", "by-hand", 8, 16, (ring_phase(8, "rs", 1), ring_phase(8, "rs", -1, 8)),
                     owner=np.tile(np.arange(8), 2))  # the owner table names each ring's rotation of its blocks
    assert _parts(topo, apart)[5] == 2 and [q.orbit for q in ring_parts(topo, apart).parts] == [8, 8]


def test_refused_where_it_cannot_hold():
    """An injection limit (every ring's nodes share their endpoints), multi-hop channels (a direct
    all-reduce) and a rank-order ring on a 2-D torus (its row ends jump two hops) are not split; the
    flow model then keeps the answers of every transfer."""
    topo = parse_topology("torus:4x4", "50GB/s", "100ns")
    s = build_schedule(topo, "all-reduce", "hamiltonian_rings")
    assert ring_parts(topo, s, injection=20e9) is None
    got = FlowModel().collective(topo, s, 20e9)
    np.testing.assert_allclose(got.times(SIZES), _full_model_times(FlowModel(), topo, s, SIZES, 20e9), rtol=TOL)
    for alg in ("direct", "ring"):
        assert ring_parts(topo, build_schedule(topo, "all-reduce", alg)) is None
