"""Start-up: whole `fabricsim` processes, as a user runs them (issue 20): `fabricsim --help`,
`fabricsim collective --help`, and `fabricsim astra` on the 1024-NPU ring all-reduce of
`bench_astra.py` (1 MiB in 4 chunks, 50 GB/s, 500 ns; ASTRA-sim's own input files), both backends.
Targets: `--help` under 0.3 s, the astra case under 0.6 s end to end. Issue 41: the first flow-model
run of a fresh install (`fabricsim collective -t torus:8x8 -a swing -m flow`, numba's cache empty:
each run gets a new `NUMBA_CACHE_DIR`) under 4 s, later runs (the cache filled) under 2 s.

Each case runs `python -m fabricsim ...` in a new process `--runs` times (default 7) and keeps the
median wall time, and the median CPU time (user + system) of the process, which other work on a busy
machine disturbs less. `--before SRC --before-commit SHA` also times another checkout's `src` folder (e.g. an
extracted `git archive` of the commit before a change) the same way, runs interleaved, so both
see the same machine load.

Run: `.venv/bin/python benchmarks/bench_startup.py [--runs N] [--before SRC --before-commit SHA]`
-> benchmarks/results/startup.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import write_results  # benchmarks/ is on sys.path when run as a script

from bench_astra import SIZE, SYSTEM

ROOT = Path(__file__).resolve().parents[1]
NPUS = 1024
FINISH_NS = 4206616  # ASTRA-sim's answer for this case (benchmarks/results/astra.json)


def write_inputs(tmp: Path) -> list[str]:
    """ASTRA-sim's input files for the 1024-NPU ring (as `bench_astra.case` writes them); the
    `fabricsim astra` arguments that read them."""
    from fabricsim.workload.chakra import collective_traces, write_traces

    net = tmp / "net.yml"
    net.write_text(f"topology: [ Ring ]\nnpus_count: [ {NPUS} ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    sys_ = tmp / "sys.json"
    sys_.write_text(json.dumps(SYSTEM))
    prefix = tmp / "ar" / "x"
    prefix.parent.mkdir()
    write_traces(prefix, collective_traces("all-reduce", SIZE, NPUS))
    return ["--workload-configuration", str(prefix), "--system-configuration", str(sys_),
            "--network-configuration", str(net)]


# compiles the flow model's kernels into NUMBA_CACHE_DIR: 1,000 random flows contend on an 8x8 torus
# (work 10^6, above `fabricsim.kernels.PYTHON_LIMIT`), then a chain that never contends (the solo pass)
_COMPILE = """
import numpy as np
from fabricsim.topology import parse_topology
from fabricsim.network.flow import Flows, simulate_flows
rng = np.random.default_rng(0)
src = rng.integers(0, 64, 1000)
topo = parse_topology("torus:8x8", "100GB/s", "100ns")
simulate_flows(topo, Flows(src, (src + rng.integers(1, 64, 1000)) % 64, rng.uniform(1e5, 1e6, 1000)))
n = 300000
simulate_flows(parse_topology("ring:64", "100GB/s", "100ns"),
               Flows(np.arange(n) % 64, (np.arange(n) + 1) % 64, np.full(n, 1e5),
                     dep_ptr=np.concatenate([[0, 0], np.arange(1, n)]), dep_idx=np.arange(n - 1)))
"""


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_once(src: Path, args: list[str], cwd: Path, expect: str | None, cache: str | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one `python -m fabricsim ARGS` process with `src` first on the path.

    `cache`: numba's cache folder for the process; "cold" a new empty one (a fresh install), None
    numba's own (beside the source)."""
    env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "150"}
    if cache == "cold":
        env["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="numba-cold-", dir=cwd)
    elif cache is not None:
        env["NUMBA_CACHE_DIR"] = cache
    cpu0, t0 = _children_cpu(), time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "fabricsim", *args], cwd=cwd, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if p.returncode != 0 or (expect is not None and expect not in p.stdout):
        raise SystemExit(f"fabricsim {' '.join(args)} ({src}) failed, exit {p.returncode}: {p.stderr.strip()[-500:]}")
    return wall, cpu


def main(argv: list[str] | None = None) -> dict:
    """Time every case (and `--before`'s tree beside it), print one line each, write results/startup.json."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7, help="processes per case (the median is kept)")
    ap.add_argument("--before", type=Path, help="another checkout's src folder, timed the same way")
    ap.add_argument("--before-commit", help="the commit that --before holds (recorded beside its times)")
    a = ap.parse_args(argv)
    if a.before is not None and not a.before_commit:
        ap.error("--before needs --before-commit")
    after_src = ROOT / "src"
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        astra_args = write_inputs(tmp)
        # (target s: issue 20's and 41's, label, arguments, text the output must hold, numba cache)
        cases = [(0.3, "fabricsim --help", ["--help"], None, None),
                 (None, "fabricsim collective --help", ["collective", "--help"], None, None)]
        for backend in ("congestion-unaware", "congestion-aware"):
            cases.append((0.6, f"fabricsim astra (ring, {NPUS} NPUs, 1 MiB, 4 chunks) --backend {backend}",
                          ["astra", *astra_args, "--backend", backend], str(FINISH_NS), None))
        flow = ["collective", "-t", "torus:8x8", "-a", "swing", "-m", "flow", "-s", "1MiB", "-q"]
        warm = str(tmp / "numba-warm")
        cases += [(4.0, "first flow-model run of a fresh install (swing, torus:8x8; numba cache empty)", flow,
                   "155.16", "cold"),
                  (2.0, "a later flow-model run (the same; numba cache filled)", flow, "155.16", warm)]
        for target, label, args, expect, cache in cases:
            srcs = [("after", after_src)] + ([("before", a.before)] if a.before is not None else [])
            for _, src in srcs:  # warm the file cache and the bytecode of both trees (and numba's cache)
                run_once(src, args, tmp, expect, cache)
                if cache == warm:  # a Python build compiles nothing: fill the cache as a big run would
                    subprocess.run([sys.executable, "-c", _COMPILE], env={**os.environ, "PYTHONPATH": str(src),
                                                                          "NUMBA_CACHE_DIR": warm}, check=True)
            times: dict[str, list[float]] = {name: [] for name, _ in srcs}
            cpus: dict[str, list[float]] = {name: [] for name, _ in srcs}
            for _ in range(a.runs):
                for name, src in srcs:
                    wall, cpu = run_once(src, args, tmp, expect, cache)
                    times[name].append(wall)
                    cpus[name].append(cpu)
            row = {"case": label, "runs": a.runs, "median_s": round(statistics.median(times["after"]), 3),
                   "min_s": round(min(times["after"]), 3), "cpu_median_s": round(statistics.median(cpus["after"]), 3),
                   "times_s": [round(t, 3) for t in times["after"]], "target_s": target,
                   "load_average_1min": round(os.getloadavg()[0], 2)}  # other work on the machine, for reading the times
            if a.before is not None:
                row.update({"before_commit": a.before_commit,
                            "before_median_s": round(statistics.median(times["before"]), 3),
                            "before_min_s": round(min(times["before"]), 3),
                            "before_cpu_median_s": round(statistics.median(cpus["before"]), 3),
                            "before_times_s": [round(t, 3) for t in times["before"]]})
            before = (f"  (before, {a.before_commit}: {row['before_median_s']:.3f} s, CPU {row['before_cpu_median_s']:.3f} s)"
                      if a.before is not None else "")
            goal = f", target {target} s" if target is not None else ""
            print(f"{label:<78} median {row['median_s']:.3f} s of {a.runs} (min {row['min_s']:.3f}, CPU "
                  f"{row['cpu_median_s']:.3f}){goal}{before}")
            rows.append(row)
    return write_results("startup", "start-up: whole `python -m fabricsim` processes, median of --runs", rows)


if __name__ == "__main__":
    main()
