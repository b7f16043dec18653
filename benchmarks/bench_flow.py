"""Flow-level model speed.

1. 10,000 concurrent flows of 100 MB between random pairs on an 8x8 torus (dimension-order
   routing, 100 Gb/s links, 1 us): SimGrid's max-min model needs about 130 s for this on this
   kind of machine.
2. A ring all-reduce (64 MB, dataflow) concurrently with an all-to-all (64 MB per rank) on a
   torus (400 Gb/s, 100 ns): 256 ranks with the direct and the hierarchical all-to-all, 1024
   ranks with the hierarchical one; and each alone at 1024 ranks (2.1 M and 1.0 M flows).

Run: `.venv/bin/python benchmarks/bench_flow.py` -> benchmarks/results/flow.json
"""

from __future__ import annotations

import time

import numpy as np
from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.collectives.api import build_schedule
from fabricsim.network.dataflow import collective_flows, merge_flows
from fabricsim.network.flow import Flows, simulate_flows
from fabricsim.topology import torus


def random_flows() -> dict:
    topo = torus((8, 8), 100e9 / 8, 1e-6)
    rng = np.random.default_rng(0)
    n = 10_000
    src = rng.integers(0, 64, n)
    dst = (src + rng.integers(1, 64, n)) % 64
    t0 = time.perf_counter()
    res = simulate_flows(topo, Flows(src, dst, np.full(n, 100e6)))
    wall = time.perf_counter() - t0
    print(f"10k flows x 100 MB on 8x8: {wall:.2f} s wall, {res.events} events, makespan {res.makespan:.4f} s")
    return {"case": "10k random flows, 100 MB, 8x8 torus", "wall_s": round(wall, 3), "events": res.events,
            "makespan_s": res.makespan, "simgrid_wall_s_reference": 130}


def ring_and_a2a(dims, a2a_algorithm: str = "direct") -> dict:
    topo = torus(dims, 400e9 / 8, 100e-9)
    t0 = time.perf_counter()
    ar = collective_flows(build_schedule(topo, "all-reduce", "ring"), 64e6)
    a2a = collective_flows(build_schedule(topo, "all-to-all", a2a_algorithm), 64e6)
    both = merge_flows(ar, a2a)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = simulate_flows(topo, both)
    wall = time.perf_counter() - t0
    ring_done, a2a_done = float(res.finish[: len(ar)].max()), float(res.finish[len(ar):].max())
    label = "x".join(map(str, dims))
    print(f"ring AR + all-to-all ({a2a_algorithm}) on {label}: {len(ar)} + {len(a2a)} flows, build {t_build:.2f} s, "
          f"simulate {wall:.2f} s, {res.events} events; ring done {ring_done * 1e3:.3f} ms, a2a done {a2a_done * 1e3:.3f} ms")
    return {"case": f"ring all-reduce + {a2a_algorithm} all-to-all, {topo.n_npus} ranks, {label} torus", "flows": len(both),
            "build_s": round(t_build, 3), "wall_s": round(wall, 3), "events": res.events,
            "ring_finish_s": ring_done, "a2a_finish_s": a2a_done}


def alone(dims, collective: str, algorithm: str) -> dict:
    topo = torus(dims, 400e9 / 8, 100e-9)
    t0 = time.perf_counter()
    flows = collective_flows(build_schedule(topo, collective, algorithm), 64e6)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = simulate_flows(topo, flows)
    wall = time.perf_counter() - t0
    label = "x".join(map(str, dims))
    print(f"{collective} ({algorithm}) alone on {label}: {len(flows)} flows, build {t_build:.2f} s, "
          f"simulate {wall:.2f} s, {res.events} events, done {res.makespan * 1e3:.3f} ms")
    return {"case": f"{collective} {algorithm} alone, {topo.n_npus} ranks, {label} torus", "flows": len(flows),
            "build_s": round(t_build, 3), "wall_s": round(wall, 3), "events": res.events, "finish_s": res.makespan}


def main() -> dict:
    # 1024 ranks concurrently: with the direct all-to-all (1 M distinct routes active) every ring
    # event re-solves max-min over all of them (hours); the hierarchical all-to-all (one phase
    # per torus dimension, 63 k flows) runs.
    rows = [random_flows(), ring_and_a2a((16, 16)), ring_and_a2a((16, 16), "hierarchical"),
            ring_and_a2a((32, 32), "hierarchical"), alone((32, 32), "all-reduce", "ring"),
            alone((32, 32), "all-to-all", "direct")]
    return write_results("flow", "flow-level model", rows)


if __name__ == "__main__":
    main()
