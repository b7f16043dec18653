"""Core benchmark: ring all-reduce on a 4096-rank ring and a 64x64 torus, 1 MiB and 1 GiB.

For each case: generate the schedule, verify it on data (full, and on a sample of blocks),
and time it with the analytical model (both sizes in one pass). Wall times are written to
benchmarks/results/core.json. Run: `.venv/bin/python benchmarks/bench_core.py`.
For scale: ASTRA-sim's analytical backend needs about 12 minutes for the 4096-rank ring case.
Also: building many topologies from typed parameters (what a topology optimizer does): 1000 each of
tori, fat-trees, stacks and direct-connect graphs of 64 NPUs of degree 4 (a ring plus random chords),
per topology.
"""

from __future__ import annotations

import time

from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.verify import verify
from fabricsim.network import time_schedule
from fabricsim.topology import build_topology, parse_topology

CASES = [("ring:4096", "ring"), ("torus:64x64", "ring"), ("torus:64x64", "hierarchical")]
SIZES = [2.0**20, 2.0**30]
SAMPLE = 256


def clock(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def topology_builds(count: int = 1000) -> list[dict]:
    """Time per topology built through `build_topology` (the one build path of spec strings, mappings
    and typed parameters), as a topology optimizer builds them: small tori, fat-trees and stacks, a
    spec string for comparison, and direct-connect graphs of 64 NPUs of degree 4 (a ring plus the
    chords of a random permutation, both ways: connected by construction), with the share of the
    latter spent in the fewest-hop table (rustworkx's distance matrix + the lowest-link-id next hop)."""
    import numpy as np

    from fabricsim.topology.graph import ShortestPathRouter

    rng = np.random.default_rng(0)
    perms = [[(i, (i + 1) % 64) for i in range(64)] + [(i, int(p[i])) for i in range(64) if p[i] != i]
             for p in (rng.permutation(64) for _ in range(count))]
    cases = [
        ("torus 8x8 (build_topology)", lambda i: build_topology("torus", dims=(8, 8), bandwidth=50e9, latency=1e-7)),
        ("torus:8x8 (parse_topology)", lambda i: parse_topology("torus:8x8", 50e9, 1e-7)),
        ("fat-tree 64, leaf 8, 4 spines", lambda i: build_topology("fat-tree", n=64, leaf=8, spines=4, bandwidth=50e9)),
        ("stack Ring4 x Switch8, two bandwidths", lambda i: build_topology("stack", kinds=("ring", "switch"), dims=(4, 8),
                                                                          bandwidth=[200e9, 50e9])),
        ("direct 64 NPUs, degree 4 (build_topology)", lambda i: build_topology("direct", n=64, links=perms[i],
                                                                              bandwidth=50e9)),
    ]
    out = []
    for label, build in cases:
        build(0)  # warm: imports (rustworkx for direct) and pydantic's first validation
        t0 = time.perf_counter()
        for i in range(count):
            build(i)
        per = (time.perf_counter() - t0) / count
        out.append({"case": label, "count": count, "per_topology_s": per})
        print(f"{label:<44} {per * 1e3:.3f} ms per topology ({count} built)")
    # the direct family's fewest-hop table alone (the same graphs, both ways)
    arrays = [np.array(p + [(b, a) for a, b in p], dtype=np.int64) for p in perms]
    t0 = time.perf_counter()
    for a in arrays:
        ShortestPathRouter.build(64, a[:, 0], a[:, 1])
    per = (time.perf_counter() - t0) / count
    out.append({"case": "direct: ShortestPathRouter.build alone (rustworkx distances + next-hop table)", "count": count,
                "per_topology_s": per})
    print(f"{'  of which the fewest-hop table':<44} {per * 1e3:.3f} ms per topology")
    import rustworkx as rx

    graphs = []
    for a in arrays:
        g = rx.PyDiGraph()
        g.add_nodes_from(range(64))
        g.add_edges_from_no_data([(int(u), int(v)) for u, v in a])
        graphs.append(g)
    t0 = time.perf_counter()
    for g in graphs:
        rx.digraph_distance_matrix(g)
    per = (time.perf_counter() - t0) / count
    out.append({"case": "direct: rustworkx distance matrix alone", "count": count, "per_topology_s": per})
    print(f"{'  of which rustworkx distance_matrix':<44} {per * 1e3:.3f} ms per topology")
    return out


def main() -> dict:
    results = topology_builds()
    for topo_spec, alg in CASES:
        topo, t_topo = clock(lambda s=topo_spec: parse_topology(s, "400Gbps", "100ns"))
        sched, t_gen = clock(lambda t=topo, a=alg: build_schedule(t, "all-reduce", a))
        _, t_ver_sample = clock(lambda s=sched: verify(s, sample=SAMPLE))
        _, t_ver_full = clock(lambda s=sched: verify(s))
        timing, t_time = clock(lambda t=topo, s=sched: time_schedule(t, s, SIZES))
        row = {
            "topology": topo_spec, "algorithm": alg, "ranks": sched.p, "steps": sched.n_steps,
            "transfers": sched.n_transfers, "step_shapes": len(sched.steps),
            "build_topology_s": t_topo, "generate_s": t_gen, f"verify_sample{SAMPLE}_s": t_ver_sample,
            "verify_full_s": t_ver_full, "time_model_s": t_time,
            "total_s_with_sampled_verify": t_topo + t_gen + t_ver_sample + t_time,
            "simulated_time_1MiB_s": float(timing.times[0]), "simulated_time_1GiB_s": float(timing.times[1]),
        }
        results.append(row)
        print(f"{topo_spec:<12} {alg:<13} steps={row['steps']:<6} generate {t_gen:.3f}s  verify(sample {SAMPLE}) "
              f"{t_ver_sample:.2f}s  verify(full) {t_ver_full:.2f}s  time {t_time:.3f}s  -> "
              f"1MiB {timing.times[0] * 1e3:.4f} ms, 1GiB {timing.times[1] * 1e3:.3f} ms")
    return write_results("core", "core ring all-reduce", results)


if __name__ == "__main__":
    main()
