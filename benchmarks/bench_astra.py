"""ASTRA-sim compatibility mode at scale: ring all-reduce, 4 chunks (the configuration of the
ASTRA-sim timings in reference/astra-sim/README.md), 256 to 4096 NPUs and 64x64,
both backends, end to end from ASTRA-sim's own input files (YAML, JSON, one .et per NPU).

Also, at 1024 NPUs on the same ring and system, the cases mirror mode did not serve before
issue 20 (every NPU simulated): doubleBinaryTree and halvingDoubling all-reduce, and a workload
graph (5 us of GPU compute, then the ring all-reduce) that now runs mirrored. Each runs in its
own process; the answers must be those of before (per-NPU finish, compute, exposed and
communication times, hashed). `--before DIR` also runs each on the code in DIR/src (e.g.
`git archive HEAD` before issue 20); without it the "before" numbers in the results file are kept.

Also a workload graph that differs per NPU (5, 6 or 7 us of compute before the all-reduce), which no
mirror serves: every NPU simulated, N^2 messages.

Run: `.venv/bin/python benchmarks/bench_astra.py [--before /tmp/before_astra] [--cases a,b]` ->
benchmarks/results/astra.json (`--cases`: only the non-symmetric cases whose name contains one of
the strings, the other rows kept as recorded)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
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


# ---- systems mirror mode did not serve (issue 20): every NPU simulated, or a workload graph ----

NONSYM = [  # (case, all-reduce implementation, trace shape)
    ("doubleBinaryTree all-reduce", "doubleBinaryTree", "collective"),
    ("halvingDoubling all-reduce", "halvingDoubling", "collective"),
    ("workload graph: 5 us compute, ring all-reduce", "ring", "workload"),
    # each NPU its own graph (as real per-rank Chakra traces): no mirror; every NPU simulated, N^2 messages
    ("workload graph differing per NPU: 5-7 us compute, ring all-reduce", "ring", "workload-varied"),
]
NONSYM_NPUS = 1024
DESCRIPTION = ("ASTRA-sim compatibility, ring all-reduce 1 MiB, 4 chunks, 50 GB/s, 500 ns; 1024-NPU doubleBinaryTree, "
               "halvingDoubling and workload-graph cases (the same graph on every NPU, and one per NPU) before/after issue 20")


def nonsym_inputs(tmp: Path, impl: str, shape: str, n: int) -> tuple[str, str, str]:
    """(workload prefix, system JSON, network YAML) of one case, written under `tmp`."""
    net = tmp / f"net_{n}.yml"
    net.write_text(f"topology: [ Ring ]\nnpus_count: [ {n} ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    sys_ = tmp / f"sys_{impl}.json"
    sys_.write_text(json.dumps({**SYSTEM, "all-reduce-implementation": [impl]}))
    prefix = tmp / f"{shape}_{n}" / "x"
    prefix.parent.mkdir(exist_ok=True)
    if not Path(f"{prefix}.0.et").exists():
        traces = collective_traces("all-reduce", SIZE, n)
        if shape == "workload":
            traces = [_after_compute(t) for t in traces]
        elif shape == "workload-varied":
            traces = [_after_compute(t, 5 + i % 3) for i, t in enumerate(traces)]
        write_traces(prefix, traces)
    return str(prefix), str(sys_), str(net)


def _after_compute(trace, micros: int = 5):
    """The trace with a GPU compute node of `micros` us before its collective (which then depends on it)."""
    from dataclasses import replace

    from fabricsim.workload.chakra_trace import COMP_NODE, EtNode

    comp = EtNode(0, "comp", COMP_NODE, duration_micros=micros, attrs={"is_cpu_op": False}, attr_kinds={"is_cpu_op": "bool_val"})
    coll = trace.nodes[0]
    return replace(trace, nodes=(comp, EtNode(1, coll.name, coll.type, data_deps=(0,), attrs=dict(coll.attrs),
                                             attr_kinds=dict(coll.attr_kinds))))


def child(case: str, backend: str) -> None:
    """One non-symmetric case in this process (inputs written first, not timed): one JSON line."""
    impl, shape = next((i, sh) for c, i, sh in NONSYM if c == case)
    with tempfile.TemporaryDirectory() as d:
        files = nonsym_inputs(Path(d), impl, shape, NONSYM_NPUS)
        t0, c0 = time.perf_counter(), time.process_time()
        run = run_astra(*files, backend=backend)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    per_npu = [[r.finish_ns, r.compute_ns, r.exposed_comm_ns, r.comm_ns] for r in run.results]
    print(json.dumps({"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "path": run.path,
                      "finish_ns_max": run.finish_ns_max, "finish_ns_min": run.finish_ns_min,
                      "results_sha256": hashlib.sha256(json.dumps(per_npu).encode()).hexdigest()[:16]}), flush=True)


def run_child(case: str, backend: str, src: str | None) -> dict:
    """`child` in a fresh process, on the code in `src` (None: this tree)."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    out = subprocess.run([sys.executable, __file__, "--child", case, backend], env=env, capture_output=True, text=True)
    lines = out.stdout.strip().splitlines()
    return json.loads(lines[-1]) if out.returncode == 0 and lines else {"error": out.stderr.strip()[-300:]}


def nonsym_rows(before_src: str | None, old_rows: list, only: list[str] | None = None) -> list[dict]:
    """The non-symmetric cases, after (this tree) and before (`before_src`, or the recorded numbers);
    with `only`, just the cases whose name contains one of its strings (the others keep their rows)."""
    kept = {(r.get("case"), r["backend"]): r for r in old_rows if "case" in r}
    rows = []
    for case, _, _ in NONSYM:
        for backend in ("congestion-unaware", "congestion-aware"):
            if only is not None and not any(o in case for o in only):
                if (case, backend) in kept:
                    rows.append(kept[(case, backend)])
                continue
            after = run_child(case, backend, None)
            before = run_child(case, backend, before_src) if before_src else kept.get((case, backend), {}).get("before")
            same = bool(before) and before.get("results_sha256") == after.get("results_sha256")
            speedup = round(before["wall_s"] / after["wall_s"], 1) if before and "wall_s" in before else None
            rows.append({"npus": NONSYM_NPUS, "case": case, "backend": backend, **after,
                         "load_avg_1min": round(os.getloadavg()[0], 2), "before": before,
                         "identical_to_before": same, "speedup_vs_before": speedup})
            print(f"{case:46s} {backend:19s} after {after}  before {before}  identical {same}", flush=True)
    return rows


def main(argv: list[str]) -> dict:
    before = argv[argv.index("--before") + 1] + "/src" if "--before" in argv else None
    only = argv[argv.index("--cases") + 1].split(",") if "--cases" in argv else None
    path = Path(__file__).parent / "results" / "astra.json"
    old_rows = json.loads(path.read_text())["results"] if path.exists() else []
    if only is not None:  # just those non-symmetric cases: every other row as recorded
        rows = [r for r in old_rows if "case" not in r] + nonsym_rows(before, old_rows, only)
        return write_results("astra", DESCRIPTION, rows)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for n in (256, 1024, 2048, 4096):
            for backend in ("congestion-unaware", "congestion-aware"):
                rows.append(case(tmp, (n,), backend))
        rows.append(case(tmp, (64, 64), "congestion-unaware"))
    rows += nonsym_rows(before, old_rows)
    return write_results("astra", DESCRIPTION, rows)


if __name__ == "__main__":
    if "--child" in sys.argv:
        child(*sys.argv[sys.argv.index("--child") + 1:][:2])
    else:
        main(sys.argv[1:])
