"""Folded equals unfolded on every topology family (issue 42, item 4), and the fold check finds the
asymmetric placements.

A folded run simulates one NPU per pipeline stage for its MP x DP copies (`engine.fold`); where the
fold check (`asymmetry`) finds every copy priced alike, the folded run's iteration times and
breakdowns must equal the full run's bit for bit. 64 GPUs (8 nodes of 8, TP8, PP2, DP4) on the
dgx presets, a two-level switch stack, a torus, a fat-tree and a wafer in the default run; 256 and
512 GPUs under `-m slow`. Two placements the check must refuse: a tensor-parallel group across a
node boundary, and one degraded rail link.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.engine import CommPricer, simulate
from fabricsim.engine.fold import asymmetry
from fabricsim.system import NPU, Scheduling, System
from fabricsim.topology import parse_topology
from fabricsim.workload.models import transformer
from fabricsim.workload.parallelism import Strategy, build_training, foldable

MODEL = transformer("small", 8, 256, 8, 128, 1024)  # 8 layers, hidden 256, 8 heads, seq 128, vocab 1024
SYSTEM = System(NPU(1e14, 2e12, 0.5), scheduling=Scheduling())
TP8 = dict(mp=8, pp=2, dp=4, batch=16, microbatches=4)

CASES = [
    ("dgx-h100:nodes=8", TP8), ("dgx-a100:nodes=8,nics=4", TP8), ("stack:Switch8xSwitch8", TP8),
    ("torus:8x8", TP8), ("fat-tree:64,leaf=8,spines=4", TP8), ("wafer:8x8", TP8),
    pytest.param("dgx-h100:nodes=32", dict(mp=8, pp=4, dp=8, batch=32, microbatches=4), marks=pytest.mark.slow),
    pytest.param("torus:16x16", dict(mp=8, pp=4, dp=8, batch=32, microbatches=4), marks=pytest.mark.slow),
    pytest.param("dgx-h100:nodes=64", dict(mp=8, pp=4, dp=16, batch=64, microbatches=4), marks=pytest.mark.slow),
]


@pytest.mark.parametrize("topo,kw", CASES)
def test_folded_equals_unfolded(topo, kw):
    st = Strategy(**kw)
    pr = CommPricer(parse_topology(topo), "analytical")
    assert foldable(MODEL, st) == ""
    gf, gu = build_training(MODEL, st, fold=True), build_training(MODEL, st)
    assert (gf.n_npus, gu.n_npus) == (st.pp, st.npus)
    assert asymmetry(gf, pr.for_system(SYSTEM.endpoint, SYSTEM.npu), 1, 1) == ""
    rf, ru = simulate(gf, SYSTEM, pr), simulate(gu, SYSTEM, pr)
    assert rf.iteration_time == ru.iteration_time  # bit for bit
    assert np.array_equal(rf.iteration_times, ru.iteration_times)
    bf, bu = rf.mean_breakdown(), ru.mean_breakdown()
    assert bf.keys() == bu.keys()
    for k in bu:
        assert bf[k] == pytest.approx(bu[k], rel=1e-12, abs=1e-18), k


def test_a_tensor_parallel_group_across_a_node_boundary_is_found():
    """TP4 on nodes of 6: the second group is NPUs 4-7, two on each node, priced over the network."""
    st = Strategy(mp=4, pp=1, dp=3, batch=6, microbatches=2)
    pr = CommPricer(parse_topology("stack:Switch6xSwitch2", ["300GB/s", "25GB/s"], ["1us", "5us"]), "analytical")
    why = asymmetry(build_training(MODEL, st, fold=True), pr, 1, 1)
    assert why == "all-reduce of 65536 B over NPUs [0, 1, 2, 3] is priced differently on NPUs [4, 5, 6, 7]"


def test_a_degraded_rail_is_found():
    """One NIC link of the 64-GPU dgx cluster at half its rate: the data-parallel all-reduce of the
    rail through it is slower than its copies'."""
    topo = parse_topology("dgx-h100:nodes=8")
    nic = np.flatnonzero(topo.link_class == topo.link_classes.index("nic"))
    bw = topo.link_bw.copy()
    bw[nic[5]] /= 2
    pr = CommPricer(replace(topo, link_bw=bw), "analytical")
    why = asymmetry(build_training(MODEL, Strategy(**TP8), fold=True), pr, 1, 1)
    assert why.startswith("all-reduce of ") and "is priced differently on NPUs" in why
    clean = CommPricer(topo, "analytical")
    assert asymmetry(build_training(MODEL, Strategy(**TP8), fold=True), clean, 1, 1) == ""
