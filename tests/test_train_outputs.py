"""What `fabricsim train` writes: per-iteration figures (first, steady state, last), MFU and
TFLOP/s per NPU, breakdown.csv and layers.csv per iteration, and a Perfetto trace whose tracks
nest (plain or gzip-compressed). Expected values are closed forms written here."""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import ASTRA_REFERENCE
from fabricsim.cli import main
from fabricsim.engine import BREAKDOWN, CommPricer, simulate
from fabricsim.report.layers import layer_breakdown, layer_of
from fabricsim.report.trace import trace_events, write_trace
from fabricsim.system import NPU, System
from fabricsim.topology import parse_topology
from fabricsim.train import TrainConfig, run_train
from fabricsim.workload.graph import GraphBuilder
from fabricsim.workload.models import get_model

# a pipeline of 4 stages whose PP sends and receives overlapped on one track before tracks were split
PIPELINE = {"network": {"topology": "ring:4", "bandwidth": "50GB/s", "latency": "1us"},
            "system": {"npu": {"peak": "989TFLOP/s", "memory_bandwidth": "3.35TB/s", "efficiency": 0.5}},
            "workload": {"model": "transformer-17b", "batch": 4, "parallelism": {"pp": 4, "microbatches": 4}}}


def write_config(tmp_path: Path, cfg: dict, name="run.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(cfg))
    return p


def train_json(capsys, cfg_path, *extra):
    rc = main(["train", str(cfg_path), "--json", *extra])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def partial_overlaps(doc: dict) -> int:
    """X events overlapping an earlier event of their (pid, tid) without nesting in it, in the
    trace processor's integer nanoseconds."""
    rows: dict = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            a = round(e["ts"] * 1000)
            rows.setdefault((e["pid"], e["tid"]), []).append((a, a + round(e["dur"] * 1000)))
    bad = 0
    for iv in rows.values():
        open_ends: list[int] = []
        for a, b in sorted(iv, key=lambda x: (x[0], -x[1])):
            while open_ends and open_ends[-1] <= a:
                open_ends.pop()
            bad += bool(open_ends and b > open_ends[-1])
            open_ends.append(b)
    return bad


# ---------------------------------------------------------------- Perfetto trace


def test_pipeline_trace_tracks_nest_sends_and_receives_apart():
    """Regression: on this pipeline the old layout (one PP track per NPU) had 4 partly overlapping
    PP events (a stage receiving a gradient while its activation send is in flight) and 23 compute
    events overlapping by a rounding nanosecond."""
    res = run_train(TrainConfig.model_validate(PIPELINE)).result
    g = res.graph
    doc = trace_events(res)
    assert partial_overlaps(doc) == 0
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert all((e["pid"], e["tid"]) in names for e in xs)  # every event on a named track
    # stage 1 sends activations forward and gradients back, and receives both: 4 x 2 sends, 4 x 2 receives
    on1 = {}
    for e in xs:
        if e["pid"] == 1 and "p2p" in e["cat"]:
            kind = names[(1, e["tid"])].rstrip(" 0123456789")
            on1[kind] = on1.get(kind, 0) + 1
    assert on1 == {"PP send": 8, "PP recv": 8}
    # every compute task once and every transfer on both sides (4 stages x 4 microbatches x fwd + bwd, 3 links)
    n_p2p = 2 * 3 * 4
    assert len(xs) == int((g.kind == 0).sum()) + 2 * n_p2p
    assert sum("p2p" in e["cat"] for e in xs) == 2 * n_p2p
    # each arrow starts on a sender track and ends on a receiver track
    arrows = [e for e in doc["traceEvents"] if e["ph"] in "sf"]
    assert len(arrows) == 2 * n_p2p
    assert all(names[(e["pid"], e["tid"])].startswith("PP send" if e["ph"] == "s" else "PP recv") for e in arrows)


def test_overlapping_events_of_one_kind_get_extra_lanes():
    """NPUs 0 and 2 both send to NPU 1 at time 0 (a p2p holds only its sender's stream): NPU 1
    receives both at once: the longer (b; equal starts go longest first) on "PP recv", a on
    "PP recv 2"; c, after a, fits a's lane again. Tracks have the same ids on every NPU."""
    b = GraphBuilder(3)
    first = b.p2p(0, 1, 1e9, "PP", "a")
    b.p2p(2, 1, 2e9, "PP", "b")
    b.p2p(0, 1, 1e9, "PP", "c", deps=(first,))
    res = simulate(b.build(), System(NPU(1e15, 1e18, 1.0)), CommPricer(parse_topology("switch:3", "10GB/s", "1us")))
    assert res.start[1] == res.start[0] == 0 and res.start[2] == res.end[0] < res.end[1]  # b overlaps a and c
    doc = trace_events(res)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    on1 = {e["name"]: names[(1, e["tid"])] for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] == 1}
    assert on1 == {"a": "PP recv 2", "b": "PP recv", "c": "PP recv 2"}
    send_tid = {e["tid"] for e in doc["traceEvents"] if e["ph"] == "X" and e["pid"] in (0, 2)}
    assert len(send_tid) == 1 and names[(0, send_tid.pop())] == "PP send"
    assert partial_overlaps(doc) == 0


def test_gz_trace_is_the_same_json_and_deterministic(tmp_path):
    res = run_train(TrainConfig.model_validate(PIPELINE)).result
    plain = write_trace(res, tmp_path / "trace.json").read_bytes()
    gz = write_trace(res, tmp_path / "trace.json.gz").read_bytes()
    assert gz[:2] == b"\x1f\x8b" and gz[4:8] == b"\0\0\0\0"  # gzip, mtime 0
    assert gzip.decompress(gz) == plain and len(gz) < len(plain) / 5
    assert write_trace(res, tmp_path / "again.json.gz").read_bytes() == gz


def test_trace_format_option_and_config(tmp_path, capsys):
    cfg = write_config(tmp_path, {**PIPELINE, "output": {"dir": "o", "plot": False, "trace_format": "json.gz"}})
    s = train_json(capsys, cfg)
    assert Path(s["files"]["trace"]).name == "trace.json.gz" and not (tmp_path / "o" / "trace.json").exists()
    doc = json.loads(gzip.decompress((tmp_path / "o" / "trace.json.gz").read_bytes()))
    assert doc["otherData"]["iteration_time_s"] == pytest.approx(s["iteration_time_s"])
    s = train_json(capsys, cfg, "--trace-format", "json", "--out", str(tmp_path / "p"))
    assert Path(s["files"]["trace"]).name == "trace.json"
    assert main(["train", str(cfg), "--trace-format", "zip"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--trace-format" in err and "'zip'" in err and "json, json.gz" in err
    bad = write_config(tmp_path, {**PIPELINE, "output": {"trace_format": "xml"}}, "bad.yaml")
    assert main(["train", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "output.trace_format" in err and "'xml'" in err and "json, json.gz" in err


# ---------------------------------------------------------------- iterations: warm-up, steady state, cool-down


def pipeline_of_two(c_flops: float, size: float, iterations: int = 3):
    """NPU 0 computes (c_flops), sends `size` bytes to NPU 1, which computes (c_flops); the next
    iteration's compute on NPU 0 waits only for its previous compute: a 2-stage pipeline."""
    b = GraphBuilder(2)
    last0 = last1 = None
    for it in range(iterations):
        b.iteration = it
        last0 = b.compute(0, "A", flops=c_flops, deps=(last0,))
        send = b.p2p(0, 1, size, "PP", f"F{it} activation 0->1", deps=(last0,))
        last1 = b.compute(1, "B", flops=c_flops, deps=(send, last1))
    return b.build()


def test_pipeline_warm_up_steady_state_and_cool_down_closed_form():
    """Compute c = F / (peak x eff) per task, transfer tp = latency + size / bandwidth (< c).
    NPU 0 computes at [kc, (k+1)c), sends at [(k+1)c, (k+1)c + tp); NPU 1 computes at
    [(k+1)c + tp, (k+2)c + tp). Iterations end at 2c + tp, 3c + tp, 4c + tp."""
    F, peak, eff, size, bw, lat = 1e12, 1e15, 0.5, 1e8, 1e11, 1e-6
    c, tp = F / (peak * eff), lat + size / bw
    res = simulate(pipeline_of_two(F, size), System(NPU(peak, 1e18, eff)),
                   CommPricer(parse_topology("ring:2", bw, lat)))
    assert res.iteration_times == pytest.approx([2 * c + tp, c, c], rel=1e-12)
    first, steady, last = res.first_iteration(), res.steady_state(), res.last_iteration()
    assert (steady.first, steady.last) == (1, 1) and res.headline() is not None
    assert first.time_s == pytest.approx(2 * c + tp) and steady.time_s == pytest.approx(c) and last.time_s == pytest.approx(c)
    # per NPU and window (module doc of engine.result): [compute, PP, idle]
    expect = {
        (0, 0): (2 * c + tp, 0, 0), (1, 0): (c, tp, c),        # NPU 1 waits c, then the transfer is exposed
        (0, 1): (c - tp, tp, 0), (1, 1): (c, 0, 0),            # NPU 0's send of iteration 3 is exposed
        (0, 2): (0, 0, c), (1, 2): (c, 0, 0),                  # cool-down: NPU 0 has nothing left
    }
    sp = res.iteration_split
    for (p, w), (comp, pp, idle) in expect.items():
        row = dict(zip(BREAKDOWN, sp.per_npu[w, p]))
        assert row["compute"] == pytest.approx(comp, abs=1e-15)
        assert row["PP"] == pytest.approx(pp, abs=1e-15)
        assert row["idle"] == pytest.approx(idle, abs=1e-12)
    # MFU: 2F per iteration over 2 NPUs; steady state c per iteration -> exactly eff
    tp_steady, tp_first = res.throughput(steady), res.throughput(first)
    assert res.model_flop_per_iteration == pytest.approx(2 * F)
    assert tp_steady["mfu"] == pytest.approx(eff, rel=1e-12)
    assert tp_steady["achieved_per_npu_tflop_per_s"] == pytest.approx(peak * eff / 1e12, rel=1e-12)
    assert tp_first["mfu"] == pytest.approx(2 * F / ((2 * c + tp) * 2 * peak), rel=1e-12)
    s = res.summary()
    assert s["iteration_time_s"] == pytest.approx(c) and s["iteration_time_basis"] == "steady state (iteration 2)"
    assert s["total_s"] == pytest.approx(4 * c + tp) and s["mfu"] == pytest.approx(eff)
    # layers: A on NPU 0, B on NPU 1, the transfer in "(pipeline)"; values are means over the 2 NPUs
    layers, values, npus = layer_breakdown(res)
    assert layers == ["A", "(pipeline)", "B"] and list(npus) == [1, 0, 1]
    pp_col = BREAKDOWN.index("PP")  # compute, MP, CP, EP, PP, ...
    assert values[0, 0, 0] == pytest.approx((2 * c + tp) / 2) and values[0, 1, pp_col] == pytest.approx(tp / 2)
    assert values[1, 0, 0] == pytest.approx((c - tp) / 2) and values[1, 1, pp_col] == pytest.approx(tp / 2)
    assert values[1, 2, 0] == pytest.approx(c / 2) and values[2, 0].sum() == pytest.approx(0, abs=1e-15)


def test_summary_fields_are_per_iteration(tmp_path, capsys):
    """4 iterations: the headline is the mean of iterations 2-3; first + 2 x steady + last = the
    whole run; each period's breakdown sums to its iteration time; breakdown.csv has a row per
    iteration and NPU whose parts sum to that iteration's time."""
    cfg = write_config(tmp_path, {**PIPELINE, "workload": {**PIPELINE["workload"], "iterations": 4,
                                                           "parallelism": {"pp": 2, "dp": 2, "microbatches": 2}},
                                  "output": {"dir": "o", "trace": False, "plot": False}})
    s = train_json(capsys, cfg)
    its = s["iteration_times_s"]
    assert len(its) == 4 and sum(its) == pytest.approx(s["total_s"], rel=1e-12)
    assert s["iteration_time_s"] == s["steady_state_iteration_time_s"] == pytest.approx((its[1] + its[2]) / 2, rel=1e-12)
    assert s["iteration_time_basis"] == "steady state (iterations 2-3)"
    assert s["first_iteration_time_s"] == its[0] and s["last_iteration_time_s"] == its[3]
    for key in ("first_iteration", "steady_state", "last_iteration"):
        p = s[key]
        assert sum(p["breakdown_mean_s"].values()) == pytest.approx(p["iteration_time_s"], rel=1e-9)
    assert s["steady_state"]["iterations"] == [2, 3] and s["breakdown_mean_s"] == s["steady_state"]["breakdown_mean_s"]
    rows = read_csv(tmp_path / "o" / "breakdown.csv")
    assert [int(r["iteration"]) for r in rows] == [i for i in (1, 2, 3, 4) for _ in range(4)]
    for r in rows:
        parts = sum(float(r[f"{k}_s"]) for k in BREAKDOWN)
        assert parts == pytest.approx(float(r["iteration_s"]), rel=1e-9)
        assert float(r["iteration_s"]) == pytest.approx(its[int(r["iteration"]) - 1], rel=1e-12)
    # the table names its basis and prints the throughput
    assert main(["train", str(cfg), "--no-trace", "--no-plot", "--force"]) == 0  # the same run again, into its folder
    out = capsys.readouterr().out
    assert "steady state (iterations 2-3)" in out and "iteration 1 (first: warm-up included)" in out
    assert "TFLOP/s per NPU" in out and "MFU" in out


# ---------------------------------------------------------------- MFU


def test_mfu_closed_form_gpt3_data_parallel(tmp_path, capsys):
    """GPT-3 175B, 2 sequences, DP(2) on ring:2 with links too fast to matter: each NPU computes one
    sequence, compute-bound, so the iteration takes F/2 / (peak x eff) and MFU = eff.
    FLOPs per sequence (forward; backward = 2x forward): block 2 x (12h^2 + 13h) x s + 4 s^2 h,
    head 2 s h V, embedding 0."""
    L, h, s_, V = 96, 12288, 2048, 50257
    f_block = 2 * (12 * h * h + 13 * h) * s_ + 4 * s_ * s_ * h
    F = 2 * 3 * (L * f_block + 2 * s_ * h * V)  # 2 sequences, forward + backward
    peak, eff = 989e12, 0.5
    cfg = write_config(tmp_path, {
        "network": {"topology": "ring:2", "bandwidth": "1000000TB/s", "latency": "0s"},
        "system": {"npu": {"peak": "989TFLOP/s", "memory_bandwidth": "1000000TB/s", "efficiency": eff}},
        "workload": {"model": "gpt3-175b", "batch": 2, "parallelism": {"dp": 2}},
        "output": {"dir": "o", "trace": False, "plot": False}})
    s = train_json(capsys, cfg)
    T = F / 2 / (peak * eff)
    assert s["model_flop_per_iteration"] == pytest.approx(F, rel=1e-12)
    assert s["iteration_time_s"] == pytest.approx(T, rel=1e-8)
    assert s["mfu"] == pytest.approx(eff, rel=1e-8)
    assert s["achieved_per_npu_tflop_per_s"] == pytest.approx(peak * eff / 1e12, rel=1e-8)
    assert s["npu_peak_flop_per_s"] == peak
    assert main(["train", str(cfg), "--force"]) == 0
    out = capsys.readouterr().out
    assert "494.5 TFLOP/s per NPU" in out and "MFU 50.0%" in out


def test_mfu_is_na_for_workloads_given_in_durations(tmp_path, capsys):
    path = ASTRA_REFERENCE / "legacy" / "Resnet50_DataParallel.txt"
    cfg = write_config(tmp_path, {"network": {"topology": "ring:8", "bandwidth": "50GB/s", "latency": "500ns"},
                                  "workload": {"astra_text": str(path)},
                                  "output": {"dir": "o", "trace": False, "plot": False}})
    s = train_json(capsys, cfg)
    assert s["model_flop_per_iteration"] is None and s["mfu"] is None and s["achieved_per_npu_tflop_per_s"] is None
    assert main(["train", str(cfg), "--force"]) == 0
    out = capsys.readouterr().out
    assert "model FLOPs: n/a" in out and "MFU: n/a" in out


# ---------------------------------------------------------------- layers.csv


def test_layers_csv_sums_to_the_breakdown(tmp_path, capsys):
    """Per iteration, the layers' compute and exposed communication add up to the mean over NPUs
    of breakdown.csv; the rows are the model's layers (and the pipeline transfers)."""
    cfg = write_config(tmp_path, {**PIPELINE, "workload": {**PIPELINE["workload"], "iterations": 2, "batch": 8,
                                                           "parallelism": {"pp": 2, "dp": 2, "microbatches": 2}},
                                  "output": {"dir": "o", "trace": False, "plot": False}})
    train_json(capsys, cfg)
    layers = read_csv(tmp_path / "o" / "layers.csv")
    bd = read_csv(tmp_path / "o" / "breakdown.csv")
    n_npus = 4
    for it in ("1", "2"):
        for k in ("compute", "MP", "PP", "DP", "IO", "other"):
            from_layers = sum(float(r[f"{k}_s"]) for r in layers if r["iteration"] == it)
            from_npus = sum(float(r[f"{k}_s"]) for r in bd if r["iteration"] == it) / n_npus
            assert from_layers == pytest.approx(from_npus, rel=1e-9, abs=1e-15), (it, k)
    model_layers = [x.name for x in get_model("transformer-17b").layers]
    names = [r["layer"] for r in layers if r["iteration"] == "1"]
    assert sorted(names) == sorted(model_layers + ["(pipeline)"])
    # every block runs on its stage's 2 DP replicas; per layer compute is its share of the mean NPU
    assert {int(r["npus"]) for r in layers if r["layer"].startswith("block")} == {2}
    assert all(float(r["DP_s"]) >= 0 and float(r["compute_s"]) >= 0 for r in layers)


@pytest.mark.parametrize("label,layer", [
    ("F3 block7.attn", "block7"), ("B0 block7.mlp MP all-reduce", "block7"), ("B2 layer1.0.conv1 wg", "layer1.0.conv1"),
    ("B2 enc0.fwd ig", "enc0.fwd"), ("block95..block90 DP reduce-scatter", "block95..block90"),
    ("F1 activation 0->1", "(pipeline)"), ("B1 gradient 3->2", "(pipeline)"), ("input load", "(input)"),
    ("embedding gradient all-to-all", "embedding"), ("conv1 wg ALLREDUCE", "conv1"), ("head weights in", "head"),
])
def test_layer_of_task_labels(label, layer):
    assert layer_of(label) == layer


def test_outputs_are_deterministic(tmp_path, capsys):
    cfg = write_config(tmp_path, {**PIPELINE, "workload": {**PIPELINE["workload"], "iterations": 2}})
    for d in ("a", "b"):
        assert main(["train", str(cfg), "--out", str(tmp_path / d), "--trace-format", "json.gz"]) == 0
    capsys.readouterr()
    files = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert files == [".fabricsim-output", "breakdown.csv", "breakdown.png", "layers.csv", "summary.json", "trace.json.gz"]
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    assert np.isfinite(json.loads((tmp_path / "a" / "summary.json").read_text())["mfu"])


def test_layers_module_examples():
    import doctest

    import fabricsim.report.layers as mod

    result = doctest.testmod(mod)
    assert result.attempted > 0 and result.failed == 0
