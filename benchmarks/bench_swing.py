"""Swing reproduction speed: the full 64x64 sweep (every all-reduce algorithm of the
reproduction, 13 sizes 32 B .. 512 MiB) and the same on 128x128: schedule generation plus the
analytical model, wall time per algorithm.

Run: `.venv/bin/python benchmarks/bench_swing.py` -> benchmarks/results/swing.json
Target (issue 4): the 64x64 sweep in under one minute on a 2-core machine.
"""

from __future__ import annotations

import time

import numpy as np
from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.registry import ALGORITHMS
from fabricsim.network import time_schedule
from fabricsim.topology import torus

VARIANTS = [("swing", {"mode": "bandwidth"}), ("swing", {"mode": "latency"}),
            ("torus_recursive_doubling", {"mode": "bandwidth"}), ("torus_recursive_doubling", {"mode": "latency"}),
            ("torus_recursive_doubling", {"mirrored": True}), ("bucket", {}), ("hamiltonian_rings", {}), ("ring", {})]
SIZES = 32 * 4.0 ** np.arange(13)  # 32 B .. 512 MiB
LINK_BW = 400e9 / 8
HOP = 100e-9 + 300e-9  # link latency + per-hop processing (paper)
ALPHA = 0.486e-6  # per-step overhead (spec §3 calibration)


def sweep(dims) -> dict:
    topo = torus(dims, LINK_BW, HOP)
    rows = []
    t_all = time.perf_counter()
    for name, opts in VARIANTS:
        if name not in ALGORITHMS:
            continue
        t0 = time.perf_counter()
        sched = build_schedule(topo, "all-reduce", name, **opts)
        t1 = time.perf_counter()
        timing = time_schedule(topo, sched, SIZES, step_overhead=ALPHA)
        t2 = time.perf_counter()
        rows.append({"algorithm": name, "options": opts, "steps": sched.n_steps, "generate_s": round(t1 - t0, 4),
                     "time_model_s": round(t2 - t1, 4), "time_32B_us": float(timing.times[0] * 1e6),
                     "goodput_512MiB_Gbps": float(SIZES[-1] * 8 / timing.times[-1] / 1e9)})
        print(f"{'x'.join(map(str, dims)):>8} {name:<26} {str(opts):<24} generate {t1 - t0:6.3f} s  time {t2 - t1:6.3f} s")
    total = time.perf_counter() - t_all
    print(f"{'x'.join(map(str, dims)):>8} sweep total {total:.2f} s")
    return {"dims": list(dims), "total_s": round(total, 3), "algorithms": rows}


def main() -> dict:
    return write_results("swing", "Swing reproduction sweep: all algorithms x 13 sizes", [sweep((64, 64)), sweep((128, 128))])


if __name__ == "__main__":
    main()
