"""The command line: tables with the right numbers, machine-readable output, one-line errors."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fabricsim.cli import main
from fabricsim.collectives.registry import ALGORITHMS
from fabricsim.topology.spec import FAMILIES


def run(capsys, *args):
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_collective_json_matches_the_closed_form(capsys):
    """ring:8 at 400 Gb/s, 100 ns: ring all-reduce takes 2(n-1)(a + S/(nB)); busbw =
    S/t * 2(n-1)/n (nccl-tests)."""
    rc, out, _ = run(capsys, "collective", "--topology", "ring:8", "--bandwidth", "400Gbps", "--latency", "100ns",
                     "--collective", "all-reduce", "--algorithm", "ring", "--sizes", "1KiB:1GiB", "--json")
    assert rc == 0
    data = json.loads(out)
    n, B, a = 8, 50e9, 100e-9
    assert len(data["rows"]) == 21  # 2^10 .. 2^30
    for row in data["rows"]:
        S = row["size_bytes"]
        t = 2 * (n - 1) * (a + S / (n * B))
        assert row["time_s"] == pytest.approx(t, rel=1e-12)
        assert row["algbw_GBps"] == pytest.approx(S / t / 1e9, rel=1e-12)
        assert row["busbw_GBps"] == pytest.approx(S / t * 2 * (n - 1) / n / 1e9, rel=1e-12)
        assert row["count"] == S // 4
    assert data["verified"]["blocks_checked"] == data["verified"]["nblocks"]


@pytest.mark.parametrize("collective, factor", [("reduce-scatter", 7 / 8), ("all-gather", 7 / 8), ("broadcast", 1.0)])
def test_busbw_factors(capsys, collective, factor):
    rc, out, _ = run(capsys, "collective", "-t", "ring:8", "-c", collective, "-s", "1MiB", "--json")
    row = json.loads(out)["rows"][0]
    assert rc == 0
    assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * factor, rel=1e-12)


def test_table_output(capsys):
    rc, out, _ = run(capsys, "collective", "--topology", "torus:8x8", "--bandwidth", "400Gbps", "--latency", "100ns",
                     "--collective", "all-reduce", "--algorithm", "ring", "--sizes", "1KiB:1GiB")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("# fabricsim collective: all-reduce, ring on torus:8x8 (64 ranks)")
    assert "busbw" in out and "algbw" in out and "time (us)" in out
    assert "1073741824" in out and "1 GiB" in out
    assert lines[-1].startswith("# Avg bus bandwidth")


def test_csv_output(capsys):
    rc, out, _ = run(capsys, "collective", "-t", "switch:4", "-a", "direct", "-s", "1KiB,1MiB", "--csv")
    assert rc == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [int(r["size_bytes"]) for r in rows] == [1024, 1048576]
    # direct all-reduce on a switch: 2 (2a + (p-1) S / (p B))
    p, B, a = 4, 50e9, 100e-9
    for r in rows:
        S = int(r["size_bytes"])
        assert float(r["time_s"]) == pytest.approx(2 * (2 * a + (p - 1) * S / (p * B)), rel=1e-9)


def test_algorithm_options_and_groups(capsys):
    rc, out, _ = run(capsys, "collective", "-t", "ring:16", "-g", "0-7", "-o", "bidirectional=true", "-s", "8MiB", "--json")
    assert rc == 0
    data = json.loads(out)
    assert data["ranks"] == 8
    S, n, B, a = 8 * 2**20, 8, 50e9, 100e-9
    # ranks 0..7 of a 16-ring: each half ring has 7 one-hop transfers and a 7-hop wrap that
    # runs back over the other half ring's links, so every link between 0 and 7 carries two
    # blocks of S/(2n) per step: 2(n-1)(7a + S/(nB))
    assert data["rows"][0]["time_s"] == pytest.approx(2 * (n - 1) * (7 * a + S / (n * B)), rel=1e-12)


def test_listings(capsys):
    rc, out, _ = run(capsys, "topologies")
    assert rc == 0
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == len(FAMILIES)
    for name in FAMILIES:
        assert any(ln.startswith(name) for ln in lines)
    rc, out, _ = run(capsys, "algorithms")
    assert rc == 0
    lines = out.splitlines()
    for name, alg in ALGORITHMS.items():
        i = next(k for k, ln in enumerate(lines) if ln.startswith(name + " "))
        end = next((k for k in range(i + 1, len(lines)) if lines[k] and not lines[k].startswith(" ")), len(lines))
        line, block = lines[i], "\n".join(lines[i:end])
        for c in alg.collectives:
            assert c in line
        assert alg.group_sizes in block
        for opt in alg.options:  # every option with its type and default
            assert f"-o {opt.describe()}" in block


BAD = [
    (["--topology", "torus:8xq"], ["topology", "torus:8xq"]),
    (["--topology", "torus:8x8", "--sizes", "-1"], ["sizes", "-1"]),
    (["--topology", "torus:8x8", "--algorithm", "warp"], ["algorithm", "warp", "ring"]),
    (["--topology", "torus:2x2", "--group", "0-7"], ["group", "0-7", "4"]),
    (["--topology", "torus:2x2", "--group", "0,9"], ["group", "0..3"]),
    (["--topology", "ring:8", "-a", "ring", "--collective", "all-to-all"], ["collective", "all-to-all"]),
    (["--topology", "ring:8", "--collective", "gossip"], ["collective", "gossip"]),
    (["--topology", "ring:6", "-c", "reduce-scatter", "-a", "halving_doubling"], ["6", "power of two"]),
    (["--topology", "ring:8", "--bandwidth", "fast"], ["bandwidth", "fast"]),
    (["--topology", "ring:8", "--latency", "-3ns"], ["latency", "-3ns"]),
    (["--topology", "ring:8", "--model", "magic"], ["model", "magic"]),
    (["--topology", "ring:8", "-o", "chunks"], ["option", "chunks"]),
    (["--topology", "ring:8", "-o", "warp=9"], ["option", "warp"]),
    (["--topology", "ring:8", "-c", "broadcast", "--root", "8"], ["root", "8"]),
    (["--topology", "switch:8", "-a", "in_network"], ["in_network", "reduce"]),
    (["--bogus"], ["bogus"]),
]


@pytest.mark.parametrize("args, words", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_line_and_exit_2(capsys, args, words):
    rc, out, err = run(capsys, "collective", *args)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0]


def test_console_script_exit_code_and_no_traceback():
    exe = Path(sys.executable).with_name("fabricsim")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "fabricsim"]
    r = subprocess.run(cmd + ["collective", "--topology", "torus:8xq"], capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "200"})
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert "torus:8xq" in r.stderr


@pytest.mark.parametrize("model, per_message", [("analytical", "shared"), ("congestion-aware", "shared"),
                                                ("congestion-unaware", "alone")])
def test_model_choice(capsys, model, per_message):
    """direct all-reduce on switch:8: with congestion, each up/down link carries (p-1) blocks
    of S/p per step; without, every message has its links to itself."""
    rc, out, _ = run(capsys, "collective", "-t", "switch:8", "-a", "direct", "-s", "8MiB", "-m", model, "--json")
    assert rc == 0
    p, S, B, a = 8, 8 * 2**20, 50e9, 100e-9
    blocks = (p - 1) if per_message == "shared" else 1
    assert json.loads(out)["rows"][0]["time_s"] == pytest.approx(2 * (2 * a + blocks * S / (p * B)), rel=1e-12)


def test_demo_numbers_match_closed_forms(capsys):
    """The demo's ring on switch:64: t = 2(n-1)(2a + S/(nB)); busbw = S/t x 2(n-1)/n (GB/s,
    printed with 2 decimals) at 4 KiB, 1 MiB, 64 MiB, 1 GiB."""
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if ln.split()[:2] == ["switch:64,reduce", "ring"])
    n, a, B = 64, 100e-9, 50e9
    for S, shown in zip([4096, 2**20, 2**26, 2**30], row.split()[-4:]):
        t = 2 * (n - 1) * (2 * a + S / (n * B))
        assert float(shown) == pytest.approx(S / t * 2 * (n - 1) / n / 1e9, abs=0.006)
    assert any(ln.split()[:2] == ["torus:8x8", "swing"] for ln in out.splitlines())


def test_demo_training_iteration_matches_closed_forms(capsys, tmp_path):
    """The demo's GPT-3 iteration: its FLOPs are the model's FLOPs x batch, plus the forward of
    every block again (full recompute); the mean compute per NPU is each task's roofline,
    max(FLOPs / (989 TFLOP/s x 0.5), bytes / 3.35 TB/s), summed over the 64 NPUs' tasks: the FLOPs
    time, plus the memory-bound tasks that Megatron's asynchronous TP all-reduce leaves on their
    own (each layer norm's backward, the attention core's backward), under 3%; the pipeline idles at
    least the 1F1B bubble (p-1)/(m+p-1) of the compute of a stage."""
    from fabricsim.workload.models import get_model

    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    row = next(ln for ln in out.splitlines() if ln.strip().startswith("all (mean)"))
    cells = row.split()[2:]  # value unit pairs: compute, MP, CP, EP, PP, DP, IO, other, idle, total
    vals = [float(v) * {"s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[u] for v, u in zip(cells[::2], cells[1::2])]
    m = get_model("gpt3-175b")
    h, s = 12288, 2048
    block_fwd = 2.0 * (12 * h * h + 13 * h) * s + 4.0 * s * s * h  # per sequence: matmuls and attention core
    compute = (m.fwd_flops + m.bwd_flops + 96 * block_fwd) * 32 / (64 * 989e12 * 0.5)
    from fabricsim.train import load_train_config, run_train
    from fabricsim.vocab import TaskKind

    g = run_train(load_train_config(Path(__file__).resolve().parents[1] / "configs" / "gpt3-175b-64.yaml")).result.graph
    comp = g.kind == TaskKind.COMPUTE
    assert g.flops[comp].sum() * g.copies / (64 * 989e12 * 0.5) == pytest.approx(compute, rel=1e-6)
    roofline = np.maximum(g.flops[comp] / (989e12 * 0.5), g.mem_bytes[comp] / 3.35e12).sum() * g.copies / 64
    assert vals[0] == pytest.approx(roofline, rel=2e-3)
    assert compute < vals[0] < 1.03 * compute
    assert vals[-2] >= 3 / (8 + 3) * compute * 0.99
    assert vals[-1] == pytest.approx(sum(vals[:-1]), rel=2e-3)
    # "the same from a file": configs/gpt3-175b-64.yaml is the demo's run
    import json

    cfg = Path(__file__).resolve().parents[1] / "configs" / "gpt3-175b-64.yaml"
    assert main(["train", str(cfg), "--json", "--no-trace", "--no-plot", "--out", str(tmp_path)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["iteration_time_s"] == pytest.approx(vals[-1], rel=2e-3)
