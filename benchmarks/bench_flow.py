"""Flow-level model speed.

1. 10,000 concurrent flows of 100 MB between random pairs on an 8x8 torus (dimension-order
   routing, 100 Gb/s links, 1 us): SimGrid's max-min model needs about 130 s for this on this
   kind of machine.
2. A ring all-reduce (64 MB, dataflow) concurrently with a direct all-to-all (64 MB per rank)
   on a 16x16 torus (256 ranks, 400 Gb/s, 100 ns); and each of them alone at 1024 ranks on
   32x32 (2.1 M and 1.0 M flows). The concurrent 1024-rank case is too slow yet (see main).

Run: `.venv/bin/python benchmarks/bench_flow.py` -> benchmarks/results/flow.json
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np

from fabricsim.collectives.api import build_schedule
from fabricsim.network.flow import Flows, collective_flows, merge_flows, simulate_flows
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


def ring_and_a2a(dims) -> dict:
    topo = torus(dims, 400e9 / 8, 100e-9)
    t0 = time.perf_counter()
    ar = collective_flows(build_schedule(topo, "all-reduce", "ring"), 64e6)
    a2a = collective_flows(build_schedule(topo, "all-to-all", "direct"), 64e6)
    both = merge_flows(ar, a2a)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = simulate_flows(topo, both)
    wall = time.perf_counter() - t0
    ring_done, a2a_done = float(res.finish[: len(ar)].max()), float(res.finish[len(ar):].max())
    label = "x".join(map(str, dims))
    print(f"ring AR + all-to-all on {label}: {len(ar)} + {len(a2a)} flows, build {t_build:.2f} s, "
          f"simulate {wall:.2f} s, {res.events} events; ring done {ring_done * 1e3:.3f} ms, a2a done {a2a_done * 1e3:.3f} ms")
    return {"case": f"ring all-reduce + direct all-to-all, {topo.n_npus} ranks, {label} torus", "flows": len(both),
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
    # The concurrent 1024-rank case (2.1 M + 1.0 M flows) is not run: while the 1 M all-to-all
    # flows are active, every ring event re-solves max-min over ~1 M route classes (hours).
    rows = [random_flows(), ring_and_a2a((16, 16)), alone((32, 32), "all-reduce", "ring"),
            alone((32, 32), "all-to-all", "direct")]
    out = {"benchmark": "flow-level model", "machine": platform.machine(), "python": platform.python_version(),
           "results": rows}
    path = Path(__file__).parent / "results" / "flow.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"written {path}")
    return out


if __name__ == "__main__":
    main()
