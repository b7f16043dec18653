"""Properties of the training engine on random strategies, topologies and scheduling settings:
dependencies respected, one compute task at a time per NPU, one collective at a time per stream,
the breakdown adds up, and the graph's compute equals the model's FLOPs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricsim.engine.pricing import CommPricer
from fabricsim.engine.simulator import simulate
from fabricsim.system import ACE, NPU, Ideal, NoOverlap, NpuDriven, Scheduling, System
from fabricsim.topology import parse_topology
from fabricsim.workload.graph import COMPUTE
from fabricsim.workload.models import get_model, transformer
from fabricsim.workload.parallelism import Strategy, build_training

TOPOS = {8: ["ring:8", "torus:2x4", "switch:8", "stack:Ring2xSwitch4"], 16: ["torus:4x4", "stack:Switch4xSwitch4"],
         4: ["ring:4", "switch:4"], 12: ["ring:12", "torus:3x4"]}


@st.composite
def runs(draw):
    n = draw(st.sampled_from(sorted(TOPOS)))
    divisors = [d for d in range(1, n + 1) if n % d == 0]
    mp = draw(st.sampled_from(divisors))
    pp = draw(st.sampled_from([d for d in divisors if (n // mp) % d == 0 and d <= 6]))
    dp = n // (mp * pp)
    m = draw(st.integers(1, 4))
    strategy = Strategy(mp=mp, pp=pp, dp=dp, batch=dp * m * draw(st.integers(1, 2)), microbatches=m,
                        schedule=draw(st.sampled_from(["gpipe", "1f1b"])), zero=draw(st.sampled_from([0, 2])),
                        dp_bucket=draw(st.sampled_from([0.0, 1e6])), iterations=draw(st.integers(1, 2)),
                        placement=tuple(draw(st.permutations(["mp", "pp", "dp"]))))
    sched = Scheduling(policy=draw(st.sampled_from(["LIFO", "FIFO"])), chunks=draw(st.sampled_from([1, 2, 4])),
                       chunks_in_flight=draw(st.sampled_from([1, 2])),
                       comm_streams=draw(st.sampled_from(["one", "per-category"])),
                       priorities=tuple(draw(st.permutations(["MP", "PP", "DP", "IO", "other"]))))
    endpoint = draw(st.sampled_from([Ideal(), NpuDriven(0.3, 0.5), NpuDriven(0.05, 0.1), NoOverlap(),
                                     ACE(4 * 2**20, 1e12, 5e11), ACE(64 * 2**10, 1e12, 5e11)]))
    topo = draw(st.sampled_from(TOPOS[n]))
    model = draw(st.sampled_from(["analytical", "congestion-unaware"]))
    return strategy, System(NPU(1e14, 1e12, 0.5), endpoint, sched), topo, model


def check(res):
    g = res.graph
    # dependencies: nothing starts before its predecessors end
    owner = np.repeat(np.arange(len(g)), np.diff(g.dep_ptr))
    assert np.all(res.start[owner] >= res.end[g.dep_idx] - 1e-15)
    assert np.all(res.end >= res.start)
    # one compute task at a time on each NPU
    comp = np.flatnonzero(g.kind == COMPUTE)
    for p in range(g.n_npus):
        mine = comp[g.npu[comp] == p]
        o = mine[np.argsort(res.start[mine], kind="stable")]
        assert np.all(res.start[o[1:]] >= res.end[o[:-1]] - 1e-15)
    total = sum(res.breakdown.values())
    assert total == pytest.approx(np.full(g.n_npus, res.makespan), rel=1e-9, abs=1e-15)
    assert np.all(np.concatenate(list(res.breakdown.values())) >= -1e-15)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_random_transformer_runs(case):
    strategy, system, topo, model = case
    m = transformer("t", 6, 128, 4, 32, 500)
    g = build_training(m, strategy)
    res = simulate(g, system, CommPricer(parse_topology(topo, "10GB/s", "1us"), model))
    check(res)
    # all FLOPs of the model x batch x iterations are computed, split over MP ranks and DP replicas
    flops = g.flops[g.kind == COMPUTE].sum()
    first_ig = m.layers[0].bwd_input_flops  # the first layer's input gradient is never computed
    expected = (m.fwd_flops + m.bwd_flops - first_ig) * strategy.batch * strategy.iterations
    assert flops == pytest.approx(expected, rel=1e-9)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(["one", "per-category"]), st.integers(1, 2),
       st.sampled_from([Ideal(), NpuDriven(0.3, 0.5), NoOverlap(), ACE(4 * 2**20, 1e12, 5e11)]))
def test_flow_engine_respects_dependencies(streams, iterations, endpoint):
    m = transformer("t", 4, 128, 4, 32, 500)
    g = build_training(m, Strategy(mp=2, pp=2, dp=2, batch=4, microbatches=2, iterations=iterations))
    res = simulate(g, System(NPU(1e14, 1e12, 0.5), endpoint, Scheduling(comm_streams=streams)),
                   CommPricer(parse_topology("torus:2x4", "10GB/s", "1us"), "flow"))
    check(res)


def test_stage_partition_balances_gpt3():
    g = build_training(get_model("gpt3-175b"), Strategy(mp=8, pp=8, dp=1, batch=8, microbatches=8))
    stages = g.meta["stage_layers"]
    assert stages[0][0] == 0 and stages[-1][1] == 98  # embedding first, head (layer 97) last
    blocks = [sum(1 for i in range(a, b) if 1 <= i <= 96) for a, b in stages]
    assert sum(blocks) == 96 and max(blocks) - min(blocks) <= 1
