"""Flow model at 16,384 ranks: every registry collective and algorithm, alone.

Each case builds the schedule and prices one 64 MiB collective on the flow model
(`FlowModel().collective(topo, schedule).times`, what `fabricsim collective -m flow` runs), in its
own process under a 300 s alarm and an 8 GiB address-space cap; wall time (schedule + flows +
simulation, imports excluded) and peak resident memory (the process's, imports included) are
recorded, or the MemoryError / timeout / error it ended in. Topologies (400 Gb/s, 100 ns): a
128x128 torus for every algorithm; ring:16384 for the ring-like ones (on a 2-D torus a rank-order
ring is only invariant under row shifts); in-network algorithms on switch:16384,reduce and on
FRED's 128 x 128 (its fewest-hop routing table, 273 M entries, needs the `route_table` limit raised:
the topology alone takes about 50 s and 4.4 GiB); nvls on 2048 DGX H100 nodes with SHARP.

`--before DIR` also runs each case on the code in DIR/src (e.g. `git archive HEAD` before issue 20);
`--no-after` keeps the "after" numbers already in the results file, and without `--before` the
"before" ones are kept.

Run: `.venv/bin/python benchmarks/bench_flow_scale.py [--before /tmp/before_fq] [--no-after] [--only SUBSTRING]`
-> benchmarks/results/flow_scale.json
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from _results import write_results  # benchmarks/ is on sys.path when run as a script

TIMEOUT_S = 300
CAP_BYTES = 8 * 2**30
SIZE = 64 * 2**20
TORUS = "torus:128x128"
ALGORITHMS = {  # algorithm -> collectives it serves (the registry's)
    "ring": ("all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce"),
    "direct": ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast", "reduce"),
    "recursive_doubling": ("all-reduce", "all-gather", "broadcast", "reduce"),
    "halving_doubling": ("all-reduce", "reduce-scatter", "all-gather"),
    "double_binary_tree": ("all-reduce",),
    "hierarchical": ("all-reduce", "reduce-scatter", "all-gather", "all-to-all"),
    "swing": ("all-reduce", "reduce-scatter", "all-gather"),
    "torus_recursive_doubling": ("all-reduce", "reduce-scatter", "all-gather"),
    "bucket": ("all-reduce", "reduce-scatter", "all-gather"),
    "hamiltonian_rings": ("all-reduce", "reduce-scatter", "all-gather"),
    "circulant_rings": ("all-reduce", "reduce-scatter", "all-gather"),
    "nccl_ring": ("all-reduce", "reduce-scatter", "all-gather"),
    "nccl_tree": ("all-reduce",),
}
OTHER = ([("switch:16384,reduce", "in_network", c) for c in ALGORITHMS["ring"]]
         + [("fred:128x128,up=12TB/s,reduce", "in_network_tree", c) for c in ALGORITHMS["ring"]]
         + [("dgx-h100:nodes=2048,sharp", "nvls", "all-reduce")]
         + [("ring:16384", a, "all-reduce") for a in ("ring", "nccl_ring", "circulant_rings", "hamiltonian_rings",
                                                     "bucket", "hierarchical", "swing")]
         + [("ring:16384", "ring", c) for c in ("reduce-scatter", "all-gather")])


def cases() -> list[tuple[str, str, str]]:
    """(topology, algorithm, collective) for every case."""
    return [(TORUS, a, c) for a, cs in ALGORITHMS.items() for c in cs] + OTHER


def child(topology: str, algorithm: str, collective: str) -> None:
    """One case, in this process: prints one JSON line."""
    from fabricsim.collectives.api import build_schedule
    from fabricsim.limits import raised_limits
    from fabricsim.network.flow_model import FlowModel
    from fabricsim.topology import parse_topology

    out: dict = {}
    t0 = time.perf_counter()
    try:
        with raised_limits(route_table=300_000_000):  # FRED's fewest-hop table: 273 M entries
            topo = parse_topology(topology, "400Gbps", "100ns")
        s = build_schedule(topo, collective, algorithm)
        out["transfers"] = s.n_transfers
        t1 = time.perf_counter()
        c = FlowModel().collective(topo, s)
        out["flows"] = len(c.unit)
        out["quotient"] = "/translations" in c.topo.name or "/rings" in c.topo.name
        t2 = time.perf_counter()
        out["time_s"] = float(c.times([SIZE])[0])
        t3 = time.perf_counter()
        out.update(status="ok", schedule_s=round(t1 - t0, 3), flows_s=round(t2 - t1, 3), simulate_s=round(t3 - t2, 3))
    except MemoryError:
        out["status"] = "MemoryError"
    except Exception as e:  # noqa: BLE001 - recorded as the case's outcome
        out["status"] = f"error: {type(e).__name__}: {str(e)[:160]}"
    out["wall_s"] = round(time.perf_counter() - t0, 3)
    print(json.dumps(out), flush=True)


def run_case(case: tuple[str, str, str], src: str | None) -> dict:
    """One case in a child process (code from `src`, or this tree), its wall time and peak memory."""
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    cmd = [sys.executable, __file__, "--child", *case]

    def cap():  # the child's own address-space cap, so a runaway case fails instead of swapping
        resource.setrlimit(resource.RLIMIT_AS, (CAP_BYTES, CAP_BYTES))

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, preexec_fn=cap)
    t0 = time.perf_counter()
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t0 > TIMEOUT_S:
            os.kill(proc.pid, signal.SIGKILL)
            _, status, usage = os.wait4(proc.pid, 0)
            return {"status": "timeout", "wall_s": TIMEOUT_S, "peak_rss_gib": round(usage.ru_maxrss / 2**20, 2)}
        time.sleep(0.2)
    text = proc.stdout.read().decode().strip().splitlines()
    row = json.loads(text[-1]) if text else {"status": f"died (exit status {status})"}
    row["peak_rss_gib"] = round(usage.ru_maxrss / 2**20, 2)
    return row


def main(argv: list[str]) -> dict:
    before = argv[argv.index("--before") + 1] + "/src" if "--before" in argv else None
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    path = Path(__file__).parent / "results" / "flow_scale.json"
    old = {}
    if path.exists():
        old = {(r["topology"], r["algorithm"], r["collective"]): r for r in json.loads(path.read_text())["results"]}
    rows = []
    for case in cases():
        key = case
        prev = old.get(key, {})
        if only and only not in " ".join(case):
            if prev:
                rows.append(prev)
            continue
        row = {"topology": case[0], "algorithm": case[1], "collective": case[2]}
        row["after"] = prev.get("after") if "--no-after" in argv else run_case(case, None)
        row["before"] = run_case(case, before) if before else prev.get("before")
        print(f"{case[0]:22s} {case[1]:25s} {case[2]:15s} after: {row['after']}  before: {row['before']}", flush=True)
        rows.append(row)
    return write_results("flow_scale", "flow model at 16,384 ranks, one collective alone", rows)


if __name__ == "__main__":
    if "--child" in sys.argv:
        child(*sys.argv[sys.argv.index("--child") + 1:][:3])
    else:
        main(sys.argv[1:])
