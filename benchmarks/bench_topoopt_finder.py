"""TopoOpt's TopologyFinder at 1024 servers, degree 8 (target: under 10 s on 2 cores).

Demand (seed 0): one full all-reduce of 1.2 GB, the two strided all-reduce groups of 512 servers
(300 MB each) and the sixteen of 64 (50 MB each), MP of 1 MB on a random 10% of the server pairs.
Cases: the paper's AR/MP split (with this demand the MP share is 3%, so d_MP = 0), the released
split (d_MP = 0 by construction), SelectPermutations in search mode, and an MP-heavy demand (the
full all-reduce plus a dense 1024 x 1024 MP matrix of 0-10 MB per pair: d_MP = 6, six Blossom
rounds on each server's 32 heaviest pairs); then `to_topology` and `summary` (all-pairs hops).
Results go to benchmarks/results/topoopt_finder.json. Run: `.venv/bin/python benchmarks/bench_topoopt_finder.py`.
"""

from __future__ import annotations

import time

import numpy as np
from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.optimize.finder import to_topology, topology_finder

N, D = 1024, 8


def demand(seed: int = 0) -> tuple[list, np.ndarray]:
    """The realistic demand of the module doc: (AllReduce groups, MP bytes matrix)."""
    rng = np.random.default_rng(seed)
    groups = [(tuple(range(N)), 1.2e9)]
    groups += [(tuple(range(s, N, N // 512)), 3e8) for s in range(N // 512)]
    groups += [(tuple(range(s, N, N // 64)), 5e7) for s in range(N // 64)]
    mp = np.where(rng.random((N, N)) < 0.1, 1e6, 0.0)
    np.fill_diagonal(mp, 0.0)
    return groups, mp


def clock(fn, repeat: int = 3):
    """The result of fn and its best wall time over `repeat` runs, s."""
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def main() -> dict:
    groups, mp = demand()
    rng = np.random.default_rng(1)
    dense = rng.random((N, N)) * 1e7
    np.fill_diagonal(dense, 0.0)
    cases = [
        ("paper split, realistic demand", lambda: topology_finder(N, D, groups, mp, split="paper", seed=0)),
        ("released split, realistic demand", lambda: topology_finder(N, D, groups, mp, split="released", seed=0)),
        ("paper split, search selection", lambda: topology_finder(N, D, groups, mp, select="search", seed=0)),
        ("paper split, full AR + dense MP", lambda: topology_finder(N, D, groups[:1], dense, seed=0)),
    ]
    results = []
    found = {}
    for label, fn in cases:
        f, t = clock(fn, repeat=1 if "dense" in label else 3)
        found[label] = f
        s = f.summary()
        results.append({"case": label, "n": N, "d": D, "finder_s": t, "d_ar": f.d_ar, "d_mp": f.d_mp,
                        "jumps": list(f.jumps), "jumps_by_size": s["jumps_by_size"], "diameter": s["diameter"],
                        "mean_hops": s["mean_hops"]})
        print(f"{label:<36} {t:7.3f} s  d_ar={f.d_ar} d_mp={f.d_mp} jumps={f.jumps} diameter={s['diameter']:.0f} "
              f"mean hops={s['mean_hops']:.2f}")
    for label in ("paper split, realistic demand", "paper split, full AR + dense MP"):
        topo, t = clock(lambda f=found[label]: to_topology(f, "100Gbps", "1us"))
        _, ts = clock(lambda f=found[label]: f.summary())
        results.append({"case": f"to_topology ({label})", "seconds": t, "links": int(topo.n_links),
                        "summary_s": ts})
        print(f"to_topology ({label}): {t:.3f} s, {topo.n_links} links; summary (all-pairs hops) {ts:.3f} s")
    return write_results("topoopt_finder", "TopoOpt TopologyFinder, 1024 servers, degree 8", results)


if __name__ == "__main__":
    main()
