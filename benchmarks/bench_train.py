"""Training-simulator benchmark: GPT-3 175B on 1024 NPUs, MP(8)-PP(8)-DP(16), one iteration with
8 microbatches (1F1B), from `configs/gpt3-175b.yaml`, folded as `fabricsim train` runs it (issue 40's
target: under 10 s) and every NPU simulated (the engine's throughput; target: under 30 s). The same iteration with
the endpoint model on (NPU-driven `comm-opt`, and `ace`: every wave holds a share of its NPUs and
re-times their compute) against off (`ideal`, the config's), to record what the endpoint costs.
The same iteration on the flow model (the whole graph as one flow simulation, 6.4 M flows; issue
20's target: under 120 s and 4 GiB), and the 64-NPU config on both models.

Each case runs in a fresh Python process so that its peak memory (ru_maxrss) is its own.
Recorded per case: wall time of building the graph, simulating, and the breakdown, the number
of tasks and events, peak resident memory, and the simulated iteration time.
Run: `.venv/bin/python benchmarks/bench_train.py` -> benchmarks/results/train.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _results import write_results  # benchmarks/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parents[1]
CASES = [
    ("gpt3-175b MP(8)-PP(8)-DP(16), 1024 NPUs, 8 microbatches, analytical, folded (what `fabricsim train` runs)",
     "configs/gpt3-175b.yaml", {"fold": True}),
    ("gpt3-175b MP(8)-PP(8)-DP(16), 1024 NPUs, 8 microbatches, analytical", "configs/gpt3-175b.yaml", {}),
    ("gpt3-175b MP(8)-PP(8)-DP(16), 1024 NPUs, 8 microbatches, shared comm stream", "configs/gpt3-175b.yaml",
     {"comm_streams": "one"}),
    ("gpt3-175b MP(8)-PP(8)-DP(16), 1024 NPUs, endpoint model on: comm-opt (NPU-driven)", "configs/gpt3-175b.yaml",
     {"endpoint": {"policy": "comm-opt"}}),
    ("gpt3-175b MP(8)-PP(8)-DP(16), 1024 NPUs, endpoint model on: ace", "configs/gpt3-175b.yaml",
     {"endpoint": {"policy": "ace", "sram": "4MiB", "alu_throughput": "1TB/s", "dma_bandwidth": "1TB/s"}}),
    ("gpt3-175b MP(8)-DP(2)-PP(4), 64 NPUs, 1F1B 8 microbatches, analytical", "configs/gpt3-175b-64.yaml", {}),
    ("gpt3-175b MP(8)-DP(2)-PP(4), 64 NPUs, 1F1B 8 microbatches, flow model", "configs/gpt3-175b-64.yaml",
     {"model": "flow"}),
    ("gpt3-175b MP(8)-PP(8)-DP(16), 1024 NPUs, 8 microbatches, flow model", "configs/gpt3-175b.yaml",
     {"model": "flow"}),
]

CHILD = r"""
import json, resource, sys, time
from fabricsim.train import load_train_config, topology_of, graph_of, system_of
from fabricsim.engine.pricing import CommPricer
from fabricsim.engine.simulator import simulate
cfg = load_train_config(sys.argv[1])
over = json.loads(sys.argv[2])
if "comm_streams" in over:
    cfg.system.scheduling.comm_streams = over["comm_streams"]
if "model" in over:
    cfg.network.model = over["model"]
if "endpoint" in over:
    from fabricsim.sections import EndpointSection
    cfg.system.endpoint = EndpointSection.model_validate(over["endpoint"])
t0 = time.perf_counter()
topo = topology_of(cfg)
g = graph_of(cfg, topo.n_npus, fold=over.get("fold", False))
t1 = time.perf_counter()
res = simulate(g, system_of(cfg), CommPricer(topo, cfg.network.model, cfg.network.algorithms))
t2 = time.perf_counter()
mb = res.mean_breakdown()
print(json.dumps({"npus": g.n_npus, "tasks": len(g), "events": res.events, "build_graph_s": t1 - t0,
                  "simulate_s": t2 - t1, "total_s": t2 - t0,
                  "peak_rss_MiB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "iteration_time_s": res.iteration_time, "breakdown_mean_s": mb}))
"""


def main() -> dict:
    results = []
    for label, cfg, over in CASES:
        out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / cfg), json.dumps(over)], capture_output=True,
                             text=True, check=True, cwd=ROOT)
        row = {"case": label, "config": cfg, **over, **json.loads(out.stdout)}
        results.append(row)
        print(f"{label}: {row['tasks']} tasks, build {row['build_graph_s']:.2f} s + simulate {row['simulate_s']:.2f} s "
              f"= {row['total_s']:.2f} s, peak {row['peak_rss_MiB']:.0f} MiB; iteration {row['iteration_time_s']:.4f} s")
    return write_results("train", "training simulator", results)


if __name__ == "__main__":
    main()
