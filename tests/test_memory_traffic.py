"""Memory traffic of collectives at the endpoint, from their schedules (docs/specs/fred_ace.md §2.4).

Closed forms, written here: NPU-driven, a send reads its blocks, a receive lands them (one write), a
reduction reads two operands and writes one. Ring all-reduce of D on p ranks: reduce-scatter
5(p-1)/p D, all-gather 2(p-1)/p D; 2(p-1)/p D sent. Engine-driven (ACE): one read, one write.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.memory import engine_memory_traffic, npu_memory_traffic
from fabricsim.topology import parse_topology


@pytest.mark.parametrize("p", [2, 3, 5, 8, 13, 64])
def test_ring_all_reduce_npu_driven_closed_form(p):
    m = npu_memory_traffic(build_schedule(parse_topology(f"ring:{p}"), "all-reduce", "ring"))
    f = (p - 1) / p
    assert np.allclose(m.read, 4 * f)  # RS: send 1 + two operands 2 (per step); AG: send 1
    assert np.allclose(m.write, 3 * f)  # RS: land 1 + sum 1; AG: land 1
    assert np.allclose(m.sent, 2 * f)
    assert np.allclose(m.per_network_byte(), 3.5)


@pytest.mark.parametrize("p", [4, 7, 16])
def test_ring_reduce_scatter_and_all_gather(p):
    topo = parse_topology(f"ring:{p}")
    f = (p - 1) / p
    rs = npu_memory_traffic(build_schedule(topo, "reduce-scatter", "ring"))
    ag = npu_memory_traffic(build_schedule(topo, "all-gather", "ring"))
    assert np.allclose(rs.total, 5 * f) and np.allclose(rs.sent, f)
    assert np.allclose(ag.total, 2 * f) and np.allclose(ag.sent, f)


@pytest.mark.parametrize("a, b", [(4, 4), (2, 8), (3, 5)])
def test_hierarchical_all_reduce_pays_each_phase(a, b):
    """Reduce-scatter along dim 0 (D), then dim 1 (D/a), all-gather dim 1 then dim 0."""
    sched = build_schedule(parse_topology(f"torus:{a}x{b}"), "all-reduce", "hierarchical")
    m = npu_memory_traffic(sched)
    fa, fb = (a - 1) / a, (b - 1) / b
    assert np.allclose(m.total, 5 * fa + 5 * fb / a + 2 * fb / a + 2 * fa)
    assert np.allclose(m.sent, 2 * fa + 2 * fb / a)


@pytest.mark.parametrize("spec, alg", [("ring:8", "ring"), ("ring:13", "ring"), ("torus:4x4", "hierarchical"),
                                       ("torus:4x4", "swing"), ("torus:4x4x4", "bucket"), ("switch:16,reduce", "in_network")])
def test_engine_all_reduce_is_2D_whatever_the_ranks_and_dimensions(spec, alg):
    sched = build_schedule(parse_topology(spec), "all-reduce", alg)
    m = engine_memory_traffic(sched)
    assert np.allclose(m.read, 1.0) and np.allclose(m.write, 1.0)
    assert np.allclose(m.sent, sched.bytes_sent(1.0)[: sched.p])


def test_engine_saves_memory_over_the_npu_for_every_all_reduce():
    for spec, alg in [("ring:8", "ring"), ("torus:4x4", "hierarchical"), ("torus:8x8", "swing")]:
        sched = build_schedule(parse_topology(spec), "all-reduce", alg)
        assert (npu_memory_traffic(sched).total > engine_memory_traffic(sched).total).all()


def test_in_network_all_reduce_npu_driven_reads_once_and_writes_once():
    """Each rank sends D to the switch (read D) and receives the sum (write D); the switch reduces."""
    m = npu_memory_traffic(build_schedule(parse_topology("switch:8,reduce"), "all-reduce", "in_network"))
    assert np.allclose(m.read, 1.0) and np.allclose(m.write, 1.0) and np.allclose(m.sent, 1.0)


@pytest.mark.parametrize("coll, read, write", [("reduce-scatter", 1.0, 1 / 8), ("all-gather", 1 / 8, 1.0),
                                               ("all-to-all", 1.0, 1.0)])
def test_engine_reads_inputs_and_writes_outputs_as_nccl_tests_sizes_them(coll, read, write):
    m = engine_memory_traffic(build_schedule(parse_topology("ring:8"), coll, "ring" if coll != "all-to-all" else "direct"))
    assert np.allclose(m.read, read) and np.allclose(m.write, write)


def test_rooted_collectives_on_the_engine():
    topo = parse_topology("torus:4x4")
    b = engine_memory_traffic(build_schedule(topo, "broadcast", "recursive_doubling", root=5))
    assert b.read.tolist() == [1.0 if r == 5 else 0.0 for r in range(16)] and b.write[5] == 0 and b.write.sum() == 15
    r = engine_memory_traffic(build_schedule(topo, "reduce", "recursive_doubling", root=3))
    assert np.allclose(r.read, 1.0) and r.write.tolist() == [1.0 if i == 3 else 0.0 for i in range(16)]
