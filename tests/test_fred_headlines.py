"""FRED: the one-factor rule, the headline figures, Fred-A's pipelined MP(20) and the sweep's titles.

The one-factor rule: the NPU speed is the reproduction's one unknown; ONE factor on the stated NPU
is inferred from ONE published result (Transformer-17B's Fred-C speedup, 1.75x, Sec. 8.2) and used
for every workload and the strategy sweep; nothing else differs between the two compute settings.
Expected values are the paper's numbers or closed forms written here.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.experiments.fred import (
    E2ERow,
    MicroRow,
    Reproduction,
    SweepRow,
    SweepSummary,
    headlines,
    load_config,
)
from fabricsim.experiments.fred.training import sweep_point, train_config
from fabricsim.experiments.headlines import verdict_line

# The paper's end-to-end speedups over the mesh (Sec. 8.2 and the abstract) and its sweep (Sec. 8.3).
PAPER_C = {"ResNet-152": 1.41, "Transformer-17B": 1.75, "GPT-3": 1.34, "Transformer-1T": 1.40}
PAPER_D = {"ResNet-152": 1.76, "Transformer-17B": 1.87, "GPT-3": 1.34, "Transformer-1T": 1.40}
PAPER_SWEEP = {"Transformer-17B": (1.63, 4.22, "MP(20)-DP(1)-PP(1)"),
               "Transformer-1T": (1.44, 3.92, "MP(5)-DP(1)-PP(4)")}
AS_STATED_PEAK, AS_STATED_HBM = 989e12, 3e12  # configs/fred.yaml: H100 dense FP16 (ASSUMPTION), 3 TB/s [V]


@pytest.fixture(scope="module")
def cfg():
    return load_config(None)


# ---------------------------------------------------------------- the one-factor rule


def test_one_factor_for_every_workload_and_the_sweep(cfg):
    """Every workload and every sweep point of the one-factor setting runs the stated NPU times the
    same k: peak 989 TFLOP/s x k, HBM 3 TB/s x k."""
    k = cfg.compute.calibrated.speed
    assert isinstance(k, float) and k > 1
    npus = [train_config(cfg, wl, s, 2, "flow", compute="calibrated").system.npu
            for wl in cfg.workloads for s in cfg.systems]
    npus += [sweep_point(cfg, wl, st, s, 2, "analytical", "calibrated").train.system.npu
             for wl, spec in cfg.sweep.workloads.items() for st in spec.strategies for s in cfg.sweep.systems]
    for npu in npus:
        assert npu.peak == pytest.approx(AS_STATED_PEAK * k, rel=1e-12)
        assert npu.memory_bandwidth == pytest.approx(AS_STATED_HBM * k, rel=1e-12)


def test_nothing_else_is_fitted(cfg):
    """The two compute settings differ in the NPU's peak and memory bandwidth only, for every
    workload and system; the config holds one factor and names the one result it comes from."""
    cal = cfg.compute.calibrated.model_dump()
    assert set(cal) == {"workload", "target", "network_model", "iterations", "speed"}
    assert cfg.workloads[cal["workload"]].paper_speedup[cal["target"]] == PAPER_C["Transformer-17B"]
    for wl in cfg.workloads:
        for s in cfg.systems:
            a = train_config(cfg, wl, s, 2, "flow", compute="as stated").model_dump()
            b = train_config(cfg, wl, s, 2, "flow", compute="calibrated").model_dump()
            for d in (a, b):
                for key in ("peak", "memory_bandwidth"):
                    d["system"]["npu"].pop(key)
            assert a == b, (wl, s)


def test_the_paper_speedups_in_the_config_are_the_papers(cfg):
    """What the headline rows compare with: the paper's numbers, not values the code produced."""
    for wl, w in cfg.workloads.items():
        assert w.paper_speedup == {"Fred-C": PAPER_C[wl], "Fred-D": PAPER_D[wl]}
    for wl, (sp, red, fastest) in PAPER_SWEEP.items():
        p = cfg.sweep.workloads[wl].paper
        assert (p["speedup"], p["exposed_comm_reduction"], p["fastest_on_fred"]) == (sp, red, fastest)


# ---------------------------------------------------------------- the headline figures


def _rep(quick=False):
    """A synthetic reproduction: speedups chosen here, one factor k = 2 from T-17B's Fred-C."""
    e2e = []
    for wl in PAPER_C:
        e2e.append(E2ERow(wl, "mesh", 1.0, {"compute": 0.5}, 1.0, None, compute="calibrated", speed=2.0))
        for sysname, paper, ours in (("Fred-C", PAPER_C[wl], 1.3), ("Fred-D", PAPER_D[wl], 1.5)):
            e2e.append(E2ERow(wl, sysname, 1 / ours, {"compute": 0.5}, ours, paper, compute="calibrated", speed=2.0))
    e2e.append(E2ERow("GPT-3", "Fred-D", 1.0, {}, 1.0, 1.34, compute="as stated"))  # not a headline row
    sweep = []
    for wl, (_, _, fastest) in PAPER_SWEEP.items():
        for st, t in ((fastest, 2e-3), ("MP(1)-DP(20)-PP(1)", 1e-3)):
            sweep += [SweepRow(wl, st, "mesh", 2 * t, t, t, "calibrated"),
                      SweepRow(wl, st, "Fred-D", t, t, 0.0, "calibrated")]
    summ = tuple(SweepSummary(wl, 2.0, 5.0, {"mesh": "MP(1)-DP(20)-PP(1)", "Fred-D": "MP(1)-DP(20)-PP(1)"},
                              {"speedup": sp, "exposed_comm_reduction": red, "fastest_on_fred": f}, "calibrated")
                 for wl, (sp, red, f) in PAPER_SWEEP.items())
    micro = (MicroRow("MP(20)", "Fred-A", 1, 1.10, 1.027, 1.7), MicroRow("MP(20)", "mesh", 1, 1.269, 1.267, 1.5))
    return Reproduction("fred.yaml", quick, micro, (), tuple(e2e), tuple(sweep), summ, ("Transformer-17B", "Fred-C"))


def test_headline_rows_compare_the_papers_figures():
    """One row per end-to-end speedup (Fred-C and Fred-D per workload), per sweep average and
    fastest strategy, per microbenchmark; the one factor's source is listed, not compared."""
    figs = headlines(_rep())
    by = {f.figure: f for f in figs}
    for wl in PAPER_C:
        d = by[f"Sec. 8.2, {wl}: Fred-D speedup over the mesh"]
        assert (d.paper, d.fabricsim) == (PAPER_D[wl], 1.5)
        assert d.ratio == pytest.approx(1.5 / PAPER_D[wl])
    src = by["Sec. 8.2, Transformer-17B: Fred-C speedup over the mesh (the one factor's source)"]
    assert src.paper == 1.75 and src.fabricsim is None and src.within is None and "by construction" in src.cause
    for wl in ("ResNet-152", "GPT-3", "Transformer-1T"):
        c = by[f"Sec. 8.2, {wl}: Fred-C speedup over the mesh"]
        assert (c.paper, c.fabricsim) == (PAPER_C[wl], 1.3)
    for wl, (sp, red, fastest) in PAPER_SWEEP.items():
        assert by[f"Fig. 11, {wl}: mean speedup of Fred-D over the mesh"].paper == sp
        assert by[f"Fig. 11, {wl}: mean exposed-communication reduction"].paper == red
        f = next(x for x in figs if x.figure.startswith(f"Sec. 8.3, {wl}: time per sample of the paper's fastest"))
        # the paper's fastest takes 2 ms per sample on Fred-D, the fastest 1 ms
        assert fastest in f.figure and (f.paper, f.fabricsim) == (1.0, 2.0) and not f.within
    a = by["Fig. 9, MP(20), Fred-A: time per byte, D/(TB/s)"]
    assert (a.paper, a.fabricsim) == (1.027, 1.10)
    assert len(figs) == 7 + 1 + 6 + 2  # the as-stated row is not a headline figure
    # compared: 7 end to end, 6 sweep (speedup, reduction, fastest per workload), 2 microbenchmarks
    ratios = [1.3 / 1.41, 1.5 / 1.76, 1.5 / 1.87, 1.3 / 1.34, 1.5 / 1.34, 1.3 / 1.40, 1.5 / 1.40,
              2.0 / 1.63, 5.0 / 4.22, 2.0, 2.0 / 1.44, 5.0 / 3.92, 2.0, 1.10 / 1.027, 1.269 / 1.267]
    n = sum(abs(r - 1) <= 0.15 for r in ratios)
    assert verdict_line(figs) == f"verdict: {n} of {len(ratios)} headline figures within 15% (1 not compared)"
    assert all(f.cause for f in figs if f.within is False)


def test_quick_states_only_the_rows_it_covers():
    """--quick runs two strategies of each sweep, not the paper's average: no Fig. 11 rows."""
    figs = headlines(_rep(quick=True))
    assert not [f for f in figs if "Fig. 11" in f.figure or "Sec. 8.3" in f.figure]
    assert len(figs) == 8 + 2


# ---------------------------------------------------------------- Fred-A MP(20), pipelined


def test_fred_a_mp20_pipelined_through_the_levels(cfg):
    """Fred-A's wafer-wide all-reduce, L1 ring (3 TB/s) -> L2 ring on D/4 (4 rings per 1.5 TB/s
    uplink: 375 GB/s per NPU) -> L1 ring, without latency: phase after phase (1 piece) it takes
    2 (0.75/3 + 0.8 x 0.25/0.375) D/(TB/s); in k pieces pipelined through the phases, at least the
    uplinks' work 2 x 0.8 x 0.25/0.375 = 16/15 plus one piece's L1 fill and drain at full rate
    (2 x 0.25/k), at most that plus the same again (the fill's three L1 steps share their links with
    up to three pieces); the paper's Themis-style estimate is 1.9 / 1.85 = 1.027."""
    from fabricsim.experiments.fred.comm import evaluate_micro, micro_point

    pt = replace(micro_point(cfg, "Fred-A", "MP(20)"), latency_s=0.0)
    serial = evaluate_micro(replace(pt, chunks=1)).per_D
    assert serial == pytest.approx(2 * (0.75 / 3 + 0.8 * 0.25 / 0.375), rel=1e-9)
    got = {k: evaluate_micro(replace(pt, chunks=k)).per_D for k in (4, 16, 64)}
    for k, t in got.items():
        assert 16 / 15 + 0.5 / k - 1e-9 <= t <= 16 / 15 + 1.0 / k + 1e-9, (k, t)
    assert got[4] > got[16] > got[64]
    assert abs(got[64] / 1.027 - 1) <= 0.15
    # Fred-C's uplinks carry 3 TB/s per NPU: the NPU links bound it, pieces change nothing (1.9/3)
    c = replace(micro_point(cfg, "Fred-C", "MP(20)"), latency_s=0.0)
    assert evaluate_micro(c).per_D == pytest.approx(1.9 / 3, rel=1e-9)


def test_pipelined_pieces_wait_for_their_predecessor_on_the_same_transfer():
    """Two transfers a -> b (b after a), in 3 pieces: piece c's transfer i waits for its own
    predecessors and for piece c-1's transfer i; sizes as given."""
    from fabricsim.experiments.fred.comm import pipelined
    from fabricsim.network.flow import Flows

    f = Flows([0, 1], [1, 2], [1.0, 1.0], dep_ptr=np.array([0, 0, 1]), dep_idx=np.array([0]))
    p = pipelined(f, 3)
    deps = [sorted(p.dep_idx[p.dep_ptr[i]:p.dep_ptr[i + 1]].tolist()) for i in range(len(p))]
    assert deps == [[], [0], [0], [1, 2], [2], [3, 4]]
    assert p.src.tolist() == [0, 1] * 3 and p.size.tolist() == [1.0] * 6
    assert pipelined(f, 1) is f


# ---------------------------------------------------------------- the sweep's titles


def test_sweep_titles_are_words_not_arrays():
    """sweep.png's panel titles name the workload, the systems and the compute setting (before:
    a numpy array of compute times)."""
    from fabricsim.experiments.fred.plots import sweep_figure

    titles = [ax.get_title() for ax in sweep_figure(_rep()).axes if ax.get_title()]
    assert titles == ["Transformer-17B: strategy sweep (mesh vs Fred-D), one NPU factor x2",
                      "Transformer-1T: strategy sweep (mesh vs Fred-D), one NPU factor x2"]
