"""Training at Megatron scale: Transformer-1T on 3072 NPUs, MP(8)-DP(6)-PP(64), global batch 3072,
one iteration (`configs/transformer-1t-3072.yaml`). Target: under 60 s and under 2 GiB.

The engine simulates the 48 identical copies of each pipeline stage (8 tensor-parallel ranks x 6
data-parallel replicas) once (`engine.fold`; exact, checked against the network per run). Before
folding (commit 43a21d4, measured on this machine with the same config and code path): 17,382,416
tasks, build 90.2 s + simulate 310.3 s = 400.4 s, peak 14,656 MiB, iteration 100.4346 s (recorded
below as `before`). Each case runs in a fresh Python process so that its peak memory is its own.
Run: `.venv/bin/python benchmarks/bench_train_scale.py` -> benchmarks/results/train_scale.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _results import write_results  # benchmarks/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parents[1]
CONFIG = "configs/transformer-1t-3072.yaml"
BEFORE = {"case": "before: every NPU simulated (commit 43a21d4)", "tasks": 17382416, "build_graph_s": 90.18,
          "simulate_s": 310.25, "total_s": 400.44, "peak_rss_MiB": 14655.6, "iteration_time_s": 100.43459160311379}

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from fabricsim.train import load_train_config, run_train
run = run_train(load_train_config(sys.argv[1]))
t1 = time.perf_counter()
res = run.result
print(json.dumps({"tasks": len(res.graph), "simulated_npus": res.graph.n_npus, "npus": res.graph.real_npus,
                  "events": res.events, "total_s": t1 - t0,
                  "peak_rss_MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "iteration_time_s": res.iteration_time, "notes": list(run.notes)}))
"""


def main() -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / CONFIG)], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    row = {"case": "after: folded (engine.fold), imports, build, fold check and simulation", "config": CONFIG,
           **json.loads(out.stdout)}
    print(f"{row['case']}: {row['tasks']} tasks, {row['total_s']:.2f} s, peak {row['peak_rss_MiB']:.0f} MiB; "
          f"iteration {row['iteration_time_s']:.4f} s (before: {BEFORE['total_s']} s, {BEFORE['peak_rss_MiB']} MiB, "
          f"{BEFORE['iteration_time_s']:.4f} s)")
    return write_results("train_scale", "training at Megatron scale (1T, 3072 NPUs)", [BEFORE, row])


if __name__ == "__main__":
    main()
