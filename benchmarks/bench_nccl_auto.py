"""NCCL's choice at scale (issue 39): `fabricsim collective -t dgx-h100:nodes=8192 -s 1MiB:4GiB`, a
whole process as a user runs it. `-a auto` (the default) prices NCCL's ring and tree on 65,536 GPUs,
each in three protocols, at 13 sizes, and verifies the chosen schedules on sampled data. Target:
under 10 s and 2 GiB on a 2-core machine.

Each run is a new `python -m fabricsim` process; the median wall time of `--runs` (default 3) and the
largest peak resident memory (the children's ru_maxrss) are kept.
Run: `.venv/bin/python benchmarks/bench_nccl_auto.py [--runs N]` -> benchmarks/results/nccl_auto.json
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time

from _results import write_results  # benchmarks/ is on sys.path when run as a script

CASES = {
    "auto, dgx-h100:nodes=8192 (65,536 GPUs), 1MiB:4GiB": ["collective", "-t", "dgx-h100:nodes=8192", "-s", "1MiB:4GiB", "-q"],
}


def run_once(args: list[str]) -> tuple[float, float]:
    """(wall seconds, peak resident MiB) of one `python -m fabricsim args` process."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "fabricsim", *args], check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> dict:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    runs = ap.parse_args().runs
    rows = []
    for name, args in CASES.items():
        got = [run_once(args) for _ in range(runs)]
        wall = statistics.median(w for w, _ in got)
        peak = max(m for _, m in got)
        rows.append({"case": name, "command": "fabricsim " + " ".join(args), "runs": runs, "median_wall_s": wall,
                     "peak_rss_MiB": peak, "target_wall_s": 10.0, "target_rss_MiB": 2048.0})
        print(f"{name}: median {wall:.2f} s, peak {peak:.0f} MiB (targets 10 s, 2048 MiB)")
    return write_results("nccl_auto", "fabricsim collective with NCCL's choice at 65,536 GPUs", rows)


if __name__ == "__main__":
    main()
