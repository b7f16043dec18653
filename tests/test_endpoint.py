"""The endpoint model (issue 13): what collectives cost an NPU, and ACE.

Every expected figure is a closed form written here:
- NPU-driven ring all-reduce of D on p ranks: 7(p-1)/p D of memory traffic for 2(p-1)/p D sent
  (3.5 memory bytes per network byte); its injection rate min(u U, m M) / 3.5;
- ACE: 2D of memory traffic per all-reduce whatever p and the dimensions (while the SRAM holds a
  chunk: every block at min_block bytes); DMA-bound all-reduce time 2D / DMA; ALU-bound
  (p-1)/p D / ALU; SRAM-bound L (1 + D / S) with L the schedule's latency 2(p-1) alpha;
- roofline with what communication holds: max(F / (P (1-u)), M / (B (1-m))).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from fabricsim.collectives.api import build_schedule
from fabricsim.engine.pricing import CommPricer
from fabricsim.engine.simulator import simulate
from fabricsim.engine.usage import endpoint_usage
from fabricsim.errors import ConfigError
from fabricsim.network import get_network_model
from fabricsim.system import ACE, NPU, Ideal, NoOverlap, NpuDriven, Scheduling, System, collective_demand, make_endpoint
from fabricsim.topology import parse_topology
from fabricsim.workload.graph import GraphBuilder
from fabricsim.workload.models import get_model
from fabricsim.workload.parallelism import Strategy, build_training

ENGINES = ["congestion-aware", "flow"]
INF = float("inf")


def demand(spec, alg="ring", coll="all-reduce", lat="0ns"):
    topo = parse_topology(spec, "50GB/s", lat)
    sched = build_schedule(topo, coll, alg)
    return collective_demand(sched, float(get_network_model("congestion-aware").collective(topo, sched).times([0.0])[0]))


def one_collective(p, size, ep, npu, model, bw="50GB/s", lat="0ns", coll="all-reduce"):
    b = GraphBuilder(p)
    b.collective(coll, size, tuple(range(p)), "DP", "c")
    return simulate(b.build(), System(npu, ep, Scheduling()), CommPricer(parse_topology(f"ring:{p}", bw, lat), model))


# ---------------------------------------------------------------- memory traffic from the schedule


@pytest.mark.parametrize("p", [2, 3, 5, 8, 13, 64])
def test_npu_driven_ring_moves_3_5_memory_bytes_per_network_byte(p):
    d = demand(f"ring:{p}")
    f = (p - 1) / p
    assert d.sent == pytest.approx(2 * f)
    assert d.npu_memory == pytest.approx(7 * f)
    assert d.npu_per_sent == pytest.approx(3.5)
    assert NpuDriven(0.1, 0.2).memory_per_byte(d) == pytest.approx(7 * f)


@pytest.mark.parametrize("spec, alg", [("ring:8", "ring"), ("ring:13", "ring"), ("torus:4x4", "hierarchical"),
                                       ("torus:4x4x4", "hierarchical"), ("torus:8x4x4", "bucket"), ("torus:8x8", "swing"),
                                       ("switch:16", "direct"), ("switch:16,reduce", "in_network")])
def test_ace_moves_2D_per_all_reduce_whatever_the_ranks_and_dimensions(spec, alg):
    d = demand(spec, alg)
    assert ACE(INF, INF, INF).memory_per_byte(d) == pytest.approx(2.0)
    assert ACE(4 * 2**20, INF, INF, min_block=4096).memory_per_byte(d) == pytest.approx(2.0)  # 4 MiB holds it


@pytest.mark.parametrize("p", [16, 64])
def test_ace_pays_every_step_when_its_sram_cannot_hold_a_chunk(p):
    """A ring's chunk has p blocks of at least min_block: below p x min_block the data goes through
    memory at every step, 7(p-1)/p D as if the NPU drove it."""
    d = demand(f"ring:{p}")
    fits = ACE(sram=p * 4096, alu_throughput=INF, dma_bandwidth=INF, min_block=4096)
    spills = ACE(sram=p * 4096 - 1, alu_throughput=INF, dma_bandwidth=INF, min_block=4096)
    assert fits.memory_per_byte(d) == pytest.approx(2.0)
    assert spills.memory_per_byte(d) == pytest.approx(7 * (p - 1) / p)


def test_ace_saves_memory_traffic_over_the_npu_by_3_5_p_minus_1_over_p():
    for p in (4, 16, 128):
        d = demand(f"ring:{p}")
        assert NpuDriven(0.1, 0.1).memory_per_byte(d) / ACE(INF, INF, INF).memory_per_byte(d) == pytest.approx(3.5 * (p - 1) / p)


# ---------------------------------------------------------------- injection rates, closed forms


@pytest.mark.parametrize("model", ENGINES)
@pytest.mark.parametrize("units, memory, unit_bw", [(0.5, 0.1, INF), (0.05, 0.9, 2e12), (0.2, 0.2, 1e12)])
def test_npu_driven_injection_is_the_least_of_links_units_and_memory(model, units, memory, unit_bw):
    p, D, B, M = 4, 1e9, 50e9, 1e12
    npu = NPU(memory_bandwidth=M, unit_bandwidth=unit_bw)
    res = one_collective(p, D, NpuDriven(units, memory), npu, model)
    rate = min(B, units * unit_bw / 3.5, memory * M / 3.5)
    assert res.makespan == pytest.approx(2 * (p - 1) / p * D / rate, rel=1e-9)


@pytest.mark.parametrize("model", ENGINES)
def test_no_overlap_drives_communication_with_the_whole_npu(model):
    p, D, M = 4, 1e9, 100e9
    res = one_collective(p, D, NoOverlap(), NPU(memory_bandwidth=M, unit_bandwidth=4 * M), model)
    assert res.makespan == pytest.approx(2 * (p - 1) / p * D / (M / 3.5), rel=1e-9)


@pytest.mark.parametrize("model", ENGINES)
def test_ace_dma_bound_all_reduce_takes_2D_over_the_dma(model):
    p, D, dma = 8, 1e9, 20e9
    res = one_collective(p, D, ACE(INF, INF, dma), NPU(memory_bandwidth=1e12), model)
    assert res.makespan == pytest.approx(2 * D / dma, rel=1e-9)


@pytest.mark.parametrize("model", ENGINES)
def test_ace_alu_bound_all_reduce_takes_what_it_reduces_over_the_alus(model):
    p, D, alu = 8, 1e9, 10e9
    res = one_collective(p, D, ACE(INF, alu, INF), NPU(memory_bandwidth=1e12), model)
    assert res.makespan == pytest.approx((p - 1) / p * D / alu, rel=1e-9)


def test_ace_sram_bounds_the_rate_by_the_bandwidth_delay_product():
    """A chunk stays in SRAM for the collective's latency L = 2(p-1) alpha: S bytes in flight
    move S / L bytes per second, so the whole takes L + D L / S."""
    p, D, alpha, S = 8, 64e6, 1e-6, 1 * 2**20
    res = one_collective(p, D, ACE(S, INF, INF, min_block=1024), NPU(memory_bandwidth=1e13), "congestion-aware",
                         bw="1TB/s", lat="1us")
    L = 2 * (p - 1) * alpha
    assert res.makespan == pytest.approx(L + D * L / S, rel=1e-9)
    big = one_collective(p, D, ACE(INF, INF, INF), NPU(memory_bandwidth=1e13), "congestion-aware", bw="1TB/s", lat="1us")
    assert big.makespan == pytest.approx(L + 2 * (p - 1) / p * D / 1e12, rel=1e-9)


@pytest.mark.parametrize("model", ENGINES)
@pytest.mark.parametrize("alg", ["bucket", "hierarchical", "ring", "swing"])
def test_an_npus_injection_limit_holds_across_concurrent_lanes_and_forwarded_traffic(model, alg):
    """Regression: bucket's lanes each saw the whole limit (3x too fast), and a ring routed over
    a torus was charged at every NPU it crossed (3x too slow). Time = bytes an NPU sends / limit."""
    topo = parse_topology("torus:4x4x4", "50GB/s", "0ns")
    sched = build_schedule(topo, "all-reduce", alg)
    sent = sched.bytes_sent(1e9)[: topo.n_npus].max()
    t = get_network_model(model).collective(topo, sched, 10e9).times([1e9])[0]
    assert t == pytest.approx(sent / 10e9, rel=1e-9)


# ---------------------------------------------------------------- compute slowed by what communication holds


@pytest.mark.parametrize("model", ENGINES)
@pytest.mark.parametrize("ep, expected", [
    # a memory-bound kernel (8 ms: 8 GB at 1 TB/s; 1 ms of FLOPs) beside a 4 ms ring:2 all-reduce of S
    (Ideal(), 8e-3),
    # NPU-driven holding half the memory: 4 ms at half speed (2 ms of work), then 6 ms: 10 ms
    (NpuDriven(0.25, 0.5), 4e-3 + (8e-3 - 2e-3)),
    # ACE: its DMA moves 2S in 4 ms = 0.1 of 1 TB/s: 4 ms at 0.9 (3.6 ms of work), then 4.4 ms
    (ACE(INF, 1e12, 1e12), 4e-3 + (8e-3 - 3.6e-3)),
    # no overlap: the kernel waits for the 4 ms collective
    (NoOverlap(), 12e-3),
])
def test_a_kernel_slows_by_the_roofline_with_what_communication_holds(model, ep, expected):
    S = 4e-3 * 50e9  # ring:2 all-reduce: 2 steps of S/2 at 50 GB/s = 4 ms
    npu = NPU(peak_flops=1e15, memory_bandwidth=1e12, efficiency=1.0)
    b = GraphBuilder(2)
    b.compute(0, "kernel", flops=1e12, mem_bytes=8e9)
    b.collective("all-reduce", S, (0, 1), "DP", "ar")
    res = simulate(b.build(), System(npu, ep, Scheduling()), CommPricer(parse_topology("ring:2", "50GB/s", "0ns"), model))
    assert res.end[1] == pytest.approx(4e-3, rel=1e-9)
    assert res.end[0] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("model", ENGINES)
def test_nccl_kernels_hold_their_sms_and_the_memory_their_schedule_moves(model):
    """NCCL's kernels (issue 39): 16 of 128 SMs held, and the memory bandwidth the ring:2 all-reduce
    moves at its pace. ring:2 all-reduce of S = 4 ms x 50 GB/s: memory 7(p-1)/p S = 3.5 S over 4 ms,
    3.5 x 50 GB/s = 175 GB/s of 1 TB/s.
    A compute-bound kernel (F/P 8 ms) runs at 1 - 1/8 for the 4 ms collective: 3.5 ms of work, then
    4.5 ms: 8.5 ms. A memory-bound one (M/B 8 ms) at 1 - 0.175: 3.3 ms, then 4.7 ms: 8.7 ms."""
    S = 4e-3 * 50e9
    npu = NPU(peak_flops=1e15, memory_bandwidth=1e12, efficiency=1.0)
    ep = make_endpoint("nccl", ctas=16, sms=128)
    for flops, mem, expected in ((8e12, 1e9, 4e-3 + (8e-3 - 4e-3 * 7 / 8)), (1e12, 8e9, 4e-3 + (8e-3 - 4e-3 * 0.825))):
        b = GraphBuilder(2)
        b.compute(0, "kernel", flops=flops, mem_bytes=mem)
        b.collective("all-reduce", S, (0, 1), "DP", "ar")
        res = simulate(b.build(), System(npu, ep, Scheduling()), CommPricer(parse_topology("ring:2", "50GB/s", "0ns"), model))
        assert res.end[1] == pytest.approx(4e-3, rel=1e-9)  # no rate limit of its own
        assert res.end[0] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("fields, field", [({"ctas": 0}, "ctas"), ({"ctas": 200}, "ctas"), ({"sms": 0}, "sms")])
def test_nccl_policy_fields_are_checked(fields, field):
    with pytest.raises(ConfigError, match=field):
        make_endpoint("nccl", **fields)


@pytest.mark.parametrize("model", ENGINES)
def test_a_compute_bound_kernel_only_feels_the_units(model):
    """F/P = 8 ms, M/B = 1 ms: NPU-driven holding 25% of the units and 50% of the memory runs it at
    0.75 for the 4 ms collective (3 ms of work): 4 + 5 = 9 ms; ACE holds no unit: 8 ms."""
    S = 4e-3 * 50e9
    npu = NPU(peak_flops=1e15, memory_bandwidth=1e12, efficiency=1.0)
    for ep, expected in ((NpuDriven(0.25, 0.5), 9e-3), (ACE(INF, 1e12, 1e12), 8e-3)):
        b = GraphBuilder(2)
        b.compute(0, "kernel", flops=8e12, mem_bytes=1e9)
        b.collective("all-reduce", S, (0, 1), "DP", "ar")
        res = simulate(b.build(), System(npu, ep, Scheduling()), CommPricer(parse_topology("ring:2", "50GB/s", "0ns"), model))
        assert res.end[0] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("model", ENGINES)
def test_ace_with_unlimited_sram_equals_ideal_when_compute_leaves_memory_free(model):
    """ResNet-50 data parallel on a 2x4 torus: with memory bandwidth to spare (every kernel
    compute-bound even with ACE's DMA beside it) ACE costs nothing; on a memory-starved NPU its
    DMA slows the memory-bound kernels."""
    g = build_training(get_model("resnet50"), Strategy(dp=8, batch=16, iterations=2))
    pricer = CommPricer(parse_topology("torus:2x4", "50GB/s", "200ns"), model, {"all-reduce": "hierarchical"})
    ace = ACE(INF, INF, INF)
    roomy = NPU(peak_flops=1e14, memory_bandwidth=1e15, efficiency=0.5)
    a, i = (simulate(g, System(roomy, ep, Scheduling(chunks=2)), pricer) for ep in (ace, Ideal()))
    assert np.array_equal(a.end, i.end)
    starved = NPU(peak_flops=1e14, memory_bandwidth=2e11, efficiency=0.5)
    a, i = (simulate(g, System(starved, ep, Scheduling(chunks=2)), pricer) for ep in (ace, Ideal()))
    assert a.makespan > i.makespan * 1.001


# ---------------------------------------------------------------- what a run reports


@pytest.mark.parametrize("model", ENGINES)
def test_usage_of_a_lone_ring_all_reduce_is_its_closed_form(model):
    """NPU-driven, memory-bound: it sends 2(p-1)/p D per NPU at m M / 3.5 and moves 3.5 times that
    through memory; ACE moves p/(p-1) memory bytes per network byte."""
    p, D, M = 8, 1e9, 1e12
    npu = NPU(memory_bandwidth=M)
    res = one_collective(p, D, NpuDriven(0.1, 0.1), npu, model)
    pricer = CommPricer(parse_topology(f"ring:{p}", "50GB/s", "0ns"), model)
    u = endpoint_usage(res, pricer)
    assert u.sent == pytest.approx(np.full(p, 2 * (p - 1) / p * D))
    assert u.memory_per_network_byte == pytest.approx(3.5)
    assert u.network_bandwidth == pytest.approx(0.1 * M / 3.5, rel=1e-9)
    assert u.memory_bandwidth == pytest.approx(0.1 * M, rel=1e-9)
    assert u.utilization == pytest.approx(0.1 * M / 3.5 / 100e9, rel=1e-9)  # ring:8: two 50 GB/s links out
    res = one_collective(p, D, ACE(INF, INF, INF), npu, model)
    assert endpoint_usage(res, pricer).memory_per_network_byte == pytest.approx(p / (p - 1))


# ---------------------------------------------------------------- bad parameters


@pytest.mark.parametrize("policy, fields, words", [
    ("npu", {"units": 1.0, "memory": 0.5}, ["endpoint.units", "1.0", "(0, 1)"]),
    ("npu", {"units": 0.2, "memory": 1.2}, ["endpoint.memory", "1.2", "(0, 1)"]),
    ("npu", {"units": -0.1, "memory": 0.2}, ["endpoint.units", "-0.1"]),
    ("ace", {"sram": "-1MiB", "alu_throughput": "1TB/s", "dma_bandwidth": "1TB/s"}, ["sram", "-1MiB", "negative"]),
    ("ace", {"sram": 0, "alu_throughput": "1TB/s", "dma_bandwidth": "1TB/s"}, ["endpoint.sram", "0"]),
    ("ace", {"sram": "4MiB", "alu_throughput": "1TB/s", "dma_bandwidth": "0GB/s"}, ["dma_bandwidth", "0GB/s"]),
    ("ace", {"sram": "4MiB", "alu_throughput": "1TB/s", "dma_bandwidth": "1TB/s", "min_block": "unlimited"},
     ["endpoint.min_block"]),
    ("warp-drive", {}, ["endpoint.policy", "warp-drive", "ideal, npu, comp-opt, comm-opt, no-overlap, ace"]),
    ("comp-opt", {"rate": "1GB/s"}, ["endpoint: rate", "unknown field", "units, memory"]),
])
def test_bad_endpoint_parameters_are_one_line_errors(policy, fields, words):
    with pytest.raises(ConfigError) as e:
        make_endpoint(policy, **fields)
    msg = str(e.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, msg


def test_presets_and_unlimited_values():
    assert make_endpoint("comp-opt") == NpuDriven(0.05, 0.1)
    assert make_endpoint("comm-opt") == NpuDriven(0.2, 0.4)
    assert make_endpoint("comm-opt", memory=0.5) == NpuDriven(0.2, 0.5)  # a field overrides the preset
    assert make_endpoint("ace", sram="unlimited", alu_throughput="inf", dma_bandwidth="2TB/s") == ACE(INF, INF, 2e12)
    assert make_endpoint() == Ideal()


# ---------------------------------------------------------------- chunks through phases


def _chunked(alg, ep, npu=NPU()):
    b = GraphBuilder(16)
    b.collective("all-reduce", 1e9, tuple(range(16)), "DP", "ar")
    pricer = CommPricer(parse_topology("torus:4x4", "50GB/s", "0ns"), "congestion-aware", {"all-reduce": alg})
    return simulate(b.build(), System(npu, ep, Scheduling(chunks=4)), pricer).makespan


def test_chunks_pipeline_only_through_phases_on_different_links():
    """S = 1 GB on a 4x4 torus of 50 GB/s links, 4 chunks. Bucket's blocks all use both dimensions
    (one phase): no pipelining, 2(p-1)/p S over the NPU's 4 links = 9.375 ms. Hierarchical: phases
    RS dim 0 (3/4 c/B), dims 1 (2 x 3/16 c/B), AG dim 0 (3/4 c/B) for a chunk c = S/4; the first
    chunk pays them all, the next three only the slowest."""
    S, B = 1e9, 50e9
    assert _chunked("bucket", Ideal()) == pytest.approx(2 * 15 / 16 * S / (4 * B), rel=1e-9)
    c = S / 4
    assert _chunked("hierarchical", Ideal()) == pytest.approx((3 / 4 + 3 / 8 + 3 / 4) * c / B + 3 * (3 / 4) * c / B, rel=1e-9)


def test_pipelined_chunks_still_share_the_endpoint():
    """The same hierarchical all-reduce NPU-driven with 1% of 1 TB/s for communication: every
    phase is endpoint-bound, and so is the pipeline: 2(p-1)/p S at 0.01 M / 3.5."""
    S, M = 1e9, 1e12
    t = _chunked("hierarchical", NpuDriven(0.5, 0.01), NPU(memory_bandwidth=M))
    assert t == pytest.approx(2 * 15 / 16 * S / (0.01 * M / 3.5), rel=1e-9)



@settings(max_examples=200, deadline=None)
@given(hst.sampled_from(["npu", "ace", "comp-opt", "no-overlap", "offload", "ideal", "?"]),
       hst.dictionaries(hst.sampled_from(["units", "memory", "sram", "alu_throughput", "dma_bandwidth", "min_block",
                                          "rate", "colour"]),
                        hst.one_of(hst.floats(allow_nan=True, allow_infinity=True), hst.text(max_size=8),
                                   hst.integers(-5, 5), hst.sampled_from(["4MiB", "-1GB/s", "unlimited", "1TB/s", "0"])),
                        max_size=5))
def test_any_endpoint_fields_give_a_policy_or_one_line_error(policy, fields):
    try:
        ep = make_endpoint(policy, **fields)
    except ConfigError as e:
        assert "\n" not in str(e) and str(e)
        return
    assert ep.name in ("npu", "ace", "no-overlap", "offload", "ideal")
