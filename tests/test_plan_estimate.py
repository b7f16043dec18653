"""`plan.estimate`: the closed-form iteration against the engine (`engine.simulate` of the built,
folded graph) on three model/cluster pairs: the same best strategy, Spearman rank correlation at
least 0.9 (issue 44); and equal to the engine where the closed form is the schedule itself."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import spearmanr

from fabricsim.engine import CommPricer, simulate
from fabricsim.errors import ConfigError
from fabricsim.plan.estimate import Estimator
from fabricsim.system import NPU, Scheduling, System
from fabricsim.system.gpus import get_gpu
from fabricsim.topology import parse_topology
from fabricsim.workload.parallelism import Strategy, build_training
from fabricsim.workload.shapes import transformer

LLAMA = dict(kv_heads=8, ffn=2816, ffn_act="swiglu", norm="rmsnorm", bias=False, tied_embeddings=False,
             position="rope", dtype="bf16")


def _machine(spec: str, gpu: str | None):
    if gpu is None:
        npu = NPU(100e12, 2e12, 0.5)
    else:
        g = get_gpu(gpu)
        npu = NPU(g.peak_flops, g.memory_bandwidth, 1.0, compute=g)
    system = System(npu, scheduling=Scheduling(policy="FIFO", comm_streams="per-category"))
    return system, CommPricer(parse_topology(spec), "analytical").for_system(system.endpoint, system.npu)


PAIRS = {
    "llama-like on 2 DGX H100": (transformer("dense", 8, 1024, 16, 1024, 32000, **LLAMA), "dgx-h100:nodes=2", "h100",
                                 dict(ep=[1])),
    "mixture of experts on 2 DGX H100": (transformer("moe", 4, 1024, 16, 512, 32000, experts=8, top_k=2, **LLAMA),
                                         "dgx-h100:nodes=2", "h100", dict(ep=[1, 2, 4])),
    "GPT on a 4x4 torus, roofline NPUs": (transformer("gpt", 8, 512, 8, 512, 8000), "torus:4x4", None, dict(ep=[1])),
}


def _strategies(gpus: int, ep_choices, batch: int = 32):
    for tp, pp, mb, zero, rc, sp, ep in itertools.product([1, 2, 4, 8], [1, 2, 4], [1, 2], [0, 1], ["none", "full"],
                                                          [False, True], ep_choices):
        dp = gpus // (tp * pp)
        if sp and tp == 1 or dp == 0 or batch % (dp * mb) or dp % ep:
            continue
        try:
            yield Strategy(mp=tp, pp=pp, dp=dp, ep=ep, batch=batch, microbatches=batch // (dp * mb), zero=zero,
                           recompute=rc, sequence_parallel=sp, stage_split="layers", optimizer="adam")
        except ConfigError:
            continue


@pytest.mark.parametrize("pair", list(PAIRS))
def test_the_estimate_ranks_as_the_engine_does(pair):
    model, spec, gpu, extra = PAIRS[pair]
    system, pricer = _machine(spec, gpu)
    est = Estimator(model, system, pricer)
    ours, engine = [], []
    for st in _strategies(pricer.topo.n_npus, extra["ep"]):
        try:
            e = est(st).iteration_s
            r = simulate(build_training(model, st, fold=True), system, pricer).iteration_time
        except ConfigError:  # the workload refuses it (tp not dividing heads, ...): so do both
            continue
        ours.append(e)
        engine.append(r)
    assert len(ours) >= 20
    # the best by estimate is the engine's best (strategies the engine ties, zero 0 and 1 without a
    # pipeline, may swap places: the same time to 1e-12)
    assert engine[int(np.argmin(ours))] == pytest.approx(min(engine), rel=1e-12)
    assert spearmanr(ours, engine).statistic >= 0.9


def test_a_balanced_pipeline_without_data_parallelism_is_the_engine_exactly():
    """TP2 PP4, 16 microbatches, one replica: every stage the same, nothing after the last backward
    but the optimizer: the closed form (m + p - 1) T + fill and drain transfers is the schedule."""
    model = transformer("dense", 8, 1024, 16, 1024, 32000, **LLAMA)
    system, pricer = _machine("dgx-h100:nodes=1", "h100")
    st = Strategy(mp=2, pp=4, dp=1, batch=16, microbatches=16, stage_split="layers", optimizer="adam")
    e = Estimator(model, system, pricer)(st)
    r = simulate(build_training(model, st, fold=True), system, pricer)
    assert e.iteration_s == pytest.approx(r.iteration_time, rel=1e-3)
    assert e.model_flop == pytest.approx(r.model_flop_per_iteration, rel=1e-12)


def test_estimates_are_deterministic_and_cached():
    model = transformer("dense", 8, 1024, 16, 1024, 32000, **LLAMA)
    system, pricer = _machine("dgx-h100:nodes=2", "h100")
    st = Strategy(mp=4, pp=2, dp=2, batch=32, microbatches=16, stage_split="layers", sequence_parallel=True)
    a, b = Estimator(model, system, pricer), Estimator(model, system, pricer)
    assert a(st) == b(st) == a(st)
