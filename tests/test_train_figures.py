"""Training figures as papers report them: model and hardware FLOPs per iteration, TFLOP/s per NPU
by each, MFU and HFU, tokens/s (`TrainResult.throughput`, summary.json, the report line).

Model FLOPs count the forward and backward the model needs; hardware FLOPs add the recomputed
forwards; MFU / HFU = FLOPs per iteration / (iteration time x NPUs x peak). Expected values are
closed forms written here:
- a graph built by hand whose compute tasks have known FLOPs, so its iteration time is known;
- a transformer by shape (forward FLOPs per block and sequence 2 P s + 4 s^2 h, P = 12h^2 + 13h;
  head 2 s h V; backward twice the forward; full recompute re-runs every block's forward), run
  data-parallel on links too fast to matter, so each NPU's iteration is its hardware FLOPs at
  peak x efficiency.
"""

from __future__ import annotations

import json

import pytest
import yaml

from fabricsim.cli import main
from fabricsim.engine import CommPricer, simulate
from fabricsim.report.train import throughput_line
from fabricsim.system import NPU, System
from fabricsim.topology import parse_topology
from fabricsim.train import TrainConfig, graph_of, run_train
from fabricsim.workload.graph import GraphBuilder

# ---------------------------------------------------------------- a graph by hand

PEAK, EFF = 1e15, 0.5  # FLOP/s, fraction
F, R = 1e12, 1e12  # forward and recomputed FLOPs of one task; the backward is 2F
BATCH, SEQ = 8, 1024  # sequences per iteration, tokens per sequence


def hand_graph(iterations: int = 3, tokens: bool = True):
    """2 NPUs, independent; per iteration each runs forward F, recompute R, backward 2F in a chain."""
    b = GraphBuilder(2)
    last = [None, None]
    for it in range(iterations):
        b.iteration = it
        for p in (0, 1):
            f = b.compute(p, "F", flops=F, deps=(last[p],))
            r = b.compute(p, "R", flops=R, phase="recompute", deps=(f,))
            last[p] = b.compute(p, "B", flops=2 * F, phase="bwd", deps=(r,))
    if tokens:
        b.meta.update(global_batch=BATCH, seq=SEQ)
    return b.build()


def hand_run(**kw):
    return simulate(hand_graph(**kw), System(NPU(PEAK, 1e18, EFF)), CommPricer(parse_topology("ring:2", 1e11, 1e-6)))


def test_hand_graph_figures_every_period():
    """Each NPU runs 3F + R = 4 TFLOP per iteration at 500 TFLOP/s: T = 8 ms. Model FLOPs 2 x 3F =
    6 TFLOP, hardware 2 x (3F + R) = 8 TFLOP per iteration."""
    res = hand_run()
    T = (3 * F + R) / (PEAK * EFF)
    model, hardware, tokens = 2 * 3 * F, 2 * (3 * F + R), BATCH * SEQ
    assert T == pytest.approx(8e-3) and model == 6e12 and hardware == 8e12
    for period in (res.first_iteration(), res.steady_state(), res.last_iteration()):
        assert period.time_s == pytest.approx(T, rel=1e-12)
        tp = res.throughput(period)
        assert tp["model_flop_per_iteration"] == pytest.approx(model, rel=1e-12)
        assert tp["hardware_flop_per_iteration"] == pytest.approx(hardware, rel=1e-12)
        assert tp["model_tflop_per_s_per_npu"] == pytest.approx(model / (T * 2) / 1e12, rel=1e-12)  # 375
        assert tp["hardware_tflop_per_s_per_npu"] == pytest.approx(hardware / (T * 2) / 1e12, rel=1e-12)  # 500
        assert tp["mfu"] == pytest.approx(3 * F / (3 * F + R) * EFF, rel=1e-12)  # 37.5%
        assert tp["hfu"] == pytest.approx(EFF, rel=1e-12)  # every FLOP the NPUs run, at peak x eff
        assert tp["tokens_per_iteration"] == tokens
        assert tp["tokens_per_s"] == pytest.approx(tokens / T, rel=1e-12)  # 1,024,000
        assert tp["tokens_per_s_per_npu"] == pytest.approx(tokens / T / 2, rel=1e-12)
        assert tp["achieved_per_npu_tflop_per_s"] == tp["model_tflop_per_s_per_npu"]
    s = res.summary()
    assert s["hfu"] == pytest.approx(EFF, rel=1e-12) and s["mfu"] == pytest.approx(0.375, rel=1e-12)
    for key in ("first_iteration", "steady_state", "last_iteration"):
        assert s[key]["hardware_tflop_per_s_per_npu"] == pytest.approx(500.0, rel=1e-12)
        assert s[key]["tokens_per_s"] == pytest.approx(1.024e6, rel=1e-12)
    json.dumps(s)  # JSON-ready


def test_hand_graph_report_line():
    line = throughput_line(hand_run())
    assert ("model FLOPs: 6 TFLOP per iteration, 375 TFLOP/s per NPU (MFU 37.5%); hardware FLOPs (model + "
            "recomputed forwards): 8 TFLOP per iteration, 500 TFLOP/s per NPU (HFU 50.0%); 1,024,000 tokens/s "
            "(512,000 per NPU); peak 1 PFLOP/s per NPU; steady state (iteration 2)") == line


def test_no_tokens_without_batch_and_sequence():
    res = hand_run(tokens=False)
    tp = res.throughput(res.headline())
    assert tp["tokens_per_iteration"] is None and tp["tokens_per_s"] is None and tp["tokens_per_s_per_npu"] is None
    assert tp["hfu"] == pytest.approx(EFF, rel=1e-12)
    assert "tokens/s" not in throughput_line(res)


# ---------------------------------------------------------------- a transformer by shape

L, H, HEADS, S, V, B = 2, 64, 4, 32, 128, 4
P_BLOCK = 12 * H * H + 13 * H  # parameters of one block, ffn = 4h
F_BLOCK = 2.0 * P_BLOCK * S + 4.0 * S * S * H  # forward FLOPs of one block, one sequence
F_HEAD = 2.0 * S * H * V  # forward FLOPs of the head (logits), one sequence
MODEL_FLOPS = 3 * B * (L * F_BLOCK + F_HEAD)  # forward + backward (2x), embedding lookup 0
T_PEAK, T_EFF = 1e12, 0.5


def transformer_config(recompute: str) -> dict:
    """DP(2) on links at 1 EB/s without latency: the gradient all-reduce (about 220 kB) takes
    ~2e-13 s against ~1e-4 s of compute, below 1e-8 of the iteration."""
    return {"network": {"topology": "ring:2", "bandwidth": "1000000TB/s", "latency": "0s"},
            "system": {"npu": {"peak": "1TFLOP/s", "memory_bandwidth": "1000000TB/s", "efficiency": T_EFF}},
            "workload": {"model": {"name": "toy", "layers": L, "hidden": H, "heads": HEADS, "seq": S, "vocab": V},
                         "batch": B, "iterations": 3,
                         "parallelism": {"dp": 2, "microbatches": 2, "recompute": recompute}}}


def test_transformer_full_recompute_mfu_hfu_tokens():
    hardware = MODEL_FLOPS + B * L * F_BLOCK  # full recompute: every block's forward once more
    T = hardware / 2 / (T_PEAK * T_EFF)  # each NPU runs half the FLOPs
    res = run_train(TrainConfig.model_validate(transformer_config("full"))).result
    tp = res.throughput(res.headline())
    assert res.headline().time_s == pytest.approx(T, rel=1e-8)
    assert tp["model_flop_per_iteration"] == pytest.approx(MODEL_FLOPS, rel=1e-12)
    assert tp["hardware_flop_per_iteration"] == pytest.approx(hardware, rel=1e-12)
    assert tp["model_tflop_per_s_per_npu"] == pytest.approx(MODEL_FLOPS / (2 * T) / 1e12, rel=1e-8)
    assert tp["hardware_tflop_per_s_per_npu"] == pytest.approx(T_PEAK * T_EFF / 1e12, rel=1e-8)
    assert tp["mfu"] == pytest.approx(T_EFF * MODEL_FLOPS / hardware, rel=1e-8)
    assert tp["hfu"] == pytest.approx(T_EFF, rel=1e-8)
    assert tp["tokens_per_iteration"] == B * S
    assert tp["tokens_per_s"] == pytest.approx(B * S / T, rel=1e-8)
    assert tp["tokens_per_s_per_npu"] == pytest.approx(B * S / T / 2, rel=1e-8)


def test_transformer_without_recompute_hfu_is_mfu(tmp_path, capsys):
    res = run_train(TrainConfig.model_validate(transformer_config("none"))).result
    T = MODEL_FLOPS / 2 / (T_PEAK * T_EFF)
    tp = res.throughput(res.headline())
    assert tp["hardware_flop_per_iteration"] == tp["model_flop_per_iteration"] == pytest.approx(MODEL_FLOPS, rel=1e-12)
    assert tp["hfu"] == tp["mfu"] == pytest.approx(T_EFF, rel=1e-8)
    assert tp["hardware_tflop_per_s_per_npu"] == tp["model_tflop_per_s_per_npu"]
    assert tp["tokens_per_s"] == pytest.approx(B * S / T, rel=1e-8)
    # the CLI prints both and writes both
    cfg = tmp_path / "run.yaml"
    out_section = {"dir": "o", "trace": False, "plot": False}
    cfg.write_text(yaml.safe_dump({**transformer_config("none"), "output": out_section}))
    assert main(["train", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "(MFU 50.0%)" in out and "(HFU 50.0%)" in out and "tokens/s" in out
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert s["hfu"] == s["mfu"] == pytest.approx(T_EFF, rel=1e-8)
    assert s["tokens_per_iteration"] == B * S


def test_tokens_only_for_transformers():
    """The workload graph records the global batch and the sequence for transformers only."""
    tr = graph_of(TrainConfig.model_validate(transformer_config("none")), 2)
    assert (tr.meta["global_batch"], tr.meta["seq"]) == (B, S)
    cnn = graph_of(TrainConfig.model_validate({
        "network": {"topology": "ring:2", "bandwidth": "100GB/s", "latency": "1us"},
        "workload": {"model": "resnet50", "batch": 4, "parallelism": {"dp": 2}}}), 2)
    assert "global_batch" not in cnn.meta and "seq" not in cnn.meta
