"""ASTRA-sim compatibility mode at scale: ring all-reduce, 4 chunks (the configuration of the
ASTRA-sim timings in reference/astra-sim/README.md), 256 to 4096 NPUs and 64x64,
both backends, end to end from ASTRA-sim's own input files (YAML, JSON, one .et per NPU).

Run: `.venv/bin/python benchmarks/bench_astra.py` -> benchmarks/results/astra.json
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.astra.run import run_astra
from fabricsim.workload.chakra import collective_traces, write_traces

# ASTRA-sim's own wall times on this kind of machine (reference README), seconds
ASTRA_WALL = {
    (256, "congestion-unaware"): (0.9, 1.0), (256, "congestion-aware"): (1.0, 1.7),
    (1024, "congestion-unaware"): (18, 21), (1024, "congestion-aware"): (35, 76),
    (2048, "congestion-unaware"): (152, 152), (2048, "congestion-aware"): (313, 313),
    (4096, "congestion-unaware"): (721, 721), ("64x64", "congestion-unaware"): (25, 28),
}
SYSTEM = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
          "preferred-dataset-splits": 4, "collective-optimization": "localBWAware", "local-mem-bw": 1600,
          "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
          "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"]}
SIZE = 1 << 20


def case(tmp: Path, dims: tuple[int, ...], backend: str) -> dict:
    label = "x".join(map(str, dims))
    n = 1
    for d in dims:
        n *= d
    net = tmp / f"net_{label}.yml"
    net.write_text(f"topology: [ {', '.join(['Ring'] * len(dims))} ]\nnpus_count: [ {', '.join(map(str, dims))} ]\n"
                   f"bandwidth: [ {', '.join(['50.0'] * len(dims))} ]\nlatency: [ {', '.join(['500.0'] * len(dims))} ]\n")
    sys_ = tmp / f"sys_{len(dims)}d.json"
    sys_.write_text(json.dumps({**SYSTEM, **{k: v * len(dims) for k, v in SYSTEM.items() if k.endswith("implementation")}}))
    prefix = tmp / f"ar_{label}" / "x"
    prefix.parent.mkdir(exist_ok=True)
    if not Path(f"{prefix}.0.et").exists():
        write_traces(prefix, collective_traces("all-reduce", SIZE, n))
    t0 = time.perf_counter()
    run = run_astra(str(prefix), str(sys_), str(net), backend=backend)
    wall = time.perf_counter() - t0
    key = label if len(dims) > 1 else n
    astra = ASTRA_WALL.get((key, backend))
    row = {"npus": n, "shape": label, "backend": backend, "finish_ns": run.finish_ns_max, "path": run.path,
           "fabricsim_wall_s": round(wall, 4), "emulation_wall_s": round(run.wall_s, 4),
           "astra_sim_wall_s": astra, "speedup_vs_astra_sim": [round(a / wall) for a in astra] if astra else None}
    print(f"{label:>6} {backend:<19} finish {run.finish_ns_max:>10} ns  fabricsim {wall:7.3f} s "
          f"(emulation {run.wall_s:.3f} s)  ASTRA-sim {astra} s  x{row['speedup_vs_astra_sim']}")
    return row


def main() -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for n in (256, 1024, 2048, 4096):
            for backend in ("congestion-unaware", "congestion-aware"):
                rows.append(case(tmp, (n,), backend))
        rows.append(case(tmp, (64, 64), "congestion-unaware"))
    return write_results("astra", "ASTRA-sim compatibility, ring all-reduce 1 MiB, 4 chunks, 50 GB/s, 500 ns", rows)


if __name__ == "__main__":
    main()
