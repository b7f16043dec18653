"""Flow-level model speed, each case in its own process, this tree and (optionally) an older commit.

1. 10,000 concurrent flows of 100 MB between random pairs on an 8x8 torus (dimension-order
   routing, 100 Gb/s links, 1 us). Target: under 1 s.
2. A ring all-reduce (64 MB, dataflow) concurrently with an all-to-all (64 MB per rank) on a
   torus (400 Gb/s, 100 ns): 256 ranks with the direct and the hierarchical all-to-all, 1024
   ranks with both (targets: hierarchical under 30 s, direct under 5 minutes); and each alone
   at 1024 ranks (2.1 M and 1.0 M flows).

Per case: flows, build (schedule -> flows), simulate wall and CPU time, events, the simulated
finish times; `load_s` is the first flow simulation's one-off cost in a process (numba loading
its compiled kernels from cache), measured on a 2-flow run before the case and not included.
With `--before COMMIT` every case also runs on that commit's source (git archive into a temporary
directory, same virtual environment) under `--before-timeout` seconds, recorded as `before`.

Cases not run (`--cases`) keep their recorded rows, and a case run without `--before` keeps its
recorded `before`.

Run: `.venv/bin/python benchmarks/bench_flow.py [--before f0c550e] [--cases a,b]` -> benchmarks/results/flow.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _results import write_results  # benchmarks/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parents[1]
CASES = {
    "random10k": "10k random flows, 100 MB, 8x8 torus",
    "ring+direct:16x16": "ring all-reduce + direct all-to-all, 256 ranks, 16x16 torus",
    "ring+hierarchical:16x16": "ring all-reduce + hierarchical all-to-all, 256 ranks, 16x16 torus",
    "ring+hierarchical:32x32": "ring all-reduce + hierarchical all-to-all, 1024 ranks, 32x32 torus",
    "ring+direct:32x32": "ring all-reduce + direct all-to-all, 1024 ranks, 32x32 torus",
    "ring:32x32": "all-reduce ring alone, 1024 ranks, 32x32 torus",
    "direct:32x32": "all-to-all direct alone, 1024 ranks, 32x32 torus",
}

CHILD = r"""
import json, sys, time
import numpy as np
from fabricsim.collectives.api import build_schedule
from fabricsim.network.lowering.dataflow import collective_flows, merge_flows
from fabricsim.network.flow import Flows, simulate_flows
from fabricsim.topology import torus

case = sys.argv[1]
t0 = time.perf_counter()
simulate_flows(torus((2, 2), 1e9, 0.0), Flows([0, 1], [1, 0], [1e6, 1e6]))  # one-off loading
load = time.perf_counter() - t0
out = {"load_s": round(load, 3)}
t0 = time.perf_counter()
if case == "random10k":
    topo = torus((8, 8), 100e9 / 8, 1e-6)
    rng = np.random.default_rng(0)
    src = rng.integers(0, 64, 10_000)
    dst = (src + rng.integers(1, 64, 10_000)) % 64
    parts = [Flows(src, dst, np.full(10_000, 100e6))]
else:
    what, dims = case.split(":")
    topo = torus(tuple(int(x) for x in dims.split("x")), 400e9 / 8, 100e-9)
    parts = []
    if what.startswith("ring"):
        parts.append(collective_flows(build_schedule(topo, "all-reduce", "ring"), 64e6))
    if what != "ring":
        a2a = what.split("+")[-1]
        parts.append(collective_flows(build_schedule(topo, "all-to-all", a2a), 64e6))
flows = merge_flows(*parts) if len(parts) > 1 else parts[0]
out["build_s"] = round(time.perf_counter() - t0, 3)
w0, c0 = time.perf_counter(), time.process_time()
res = simulate_flows(topo, flows)
out.update(flows=len(flows), wall_s=round(time.perf_counter() - w0, 3), cpu_s=round(time.process_time() - c0, 3),
           events=res.events, makespan_s=res.makespan)
if len(parts) > 1:
    n0 = len(parts[0])
    out.update(ring_finish_s=float(res.finish[:n0].max()), a2a_finish_s=float(res.finish[n0:].max()))
print(json.dumps(out))
"""


def run_case(case: str, src: Path, timeout: float) -> dict:
    """One case in a fresh process on the package source under `src`."""
    env = dict(os.environ, PYTHONPATH=str(src))
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, case], capture_output=True, text=True, env=env,
                             timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"outcome": f"not finished in {timeout:.0f} s"}
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["?"])[-1]
        return {"outcome": f"failed: {last}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="also run every case on this commit's source")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per case (this tree)")
    ap.add_argument("--before-timeout", type=float, default=600.0, help="seconds per case on --before's source")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of: " + ", ".join(CASES))
    args = ap.parse_args()
    old_dir = None
    if args.before:
        tmp = tempfile.mkdtemp(prefix="fabricsim-before-")
        archive = subprocess.run(["git", "archive", args.before], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        old_dir = Path(tmp) / "src"
    path = ROOT / "benchmarks" / "results" / "flow.json"
    old = {r.get("key"): r for r in json.loads(path.read_text())["results"]} if path.exists() else {}
    chosen = args.cases.split(",")
    rows = []
    for case in CASES:  # cases not run keep their recorded row; a case run without --before keeps its "before"
        if case not in chosen:
            if case in old:
                rows.append(old[case])
            continue
        row = {"case": CASES[case], "key": case, **run_case(case, ROOT / "src", args.timeout)}
        if old_dir is not None:
            row["before"] = {"commit": args.before, **run_case(case, old_dir, args.before_timeout)}
        elif "before" in old.get(case, {}):
            row["before"] = old[case]["before"]
        rows.append(row)
        b = row.get("before", {})
        print(f"{case}: {row.get('flows', '?')} flows, simulate {row.get('wall_s', row.get('outcome'))} s wall "
              f"({row.get('cpu_s', '?')} s CPU), {row.get('events', '?')} events"
              + (f"; before: {b.get('wall_s', b.get('outcome'))} s wall, {b.get('events', '?')} events" if b else ""))
    return write_results("flow", "flow-level model", rows)


if __name__ == "__main__":
    main()
