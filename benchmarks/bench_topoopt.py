"""TopoOpt benchmark: one MCMC round of the strategy search for DLRM (the paper's shape) on 128
servers (target: under 60 s on 2 cores), and what one step costs. The round is what `fabricsim
reproduce topoopt` runs per round: `search.steps` proposals of configs/topoopt.yaml on the topology
TopologyFinder builds for the data-parallel start, d = 8 x 100 Gb/s. TopologyFinder alone at
n = 1024, d = 8 is benchmarks/bench_topoopt_finder.py.
Results: benchmarks/results/topoopt.json. Run: `.venv/bin/python benchmarks/bench_topoopt.py`.
"""

from __future__ import annotations

import time

from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.experiments.topoopt import load_config, workload_of
from fabricsim.experiments.topoopt import points as study_points
from fabricsim.optimize.finder import to_topology, topology_finder
from fabricsim.optimize.search import DIRECT_ALGORITHMS, mcmc
from fabricsim.optimize.estimate import Estimator
from fabricsim.system import NPU
from fabricsim.workload.opstrategy import plan, traffic


def main() -> dict:
    cfg = load_config(None)
    p = next(p for p in study_points(cfg) if p.workload == "DLRM" and p.degree == 8
             and p.link_bandwidth == 12.5e9 and p.fabric == "topoopt")
    work = workload_of(p)
    npu = NPU(*p.npu)
    t0 = time.perf_counter()
    groups, mp = traffic(plan(work, work.initial()))
    found = topology_finder(p.servers, p.degree, groups, mp, split=p.split, select=p.select, seed=p.seed)
    topo = to_topology(found, p.link_bandwidth, p.latency)
    t_finder = time.perf_counter() - t0
    t0 = time.perf_counter()
    est = Estimator(topo, npu, algorithms=DIRECT_ALGORITHMS)
    t_est = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = mcmc(work, topo, npu, steps=p.steps, alpha=p.alpha, seed=p.seed, estimator=est)
    t_round = time.perf_counter() - t0
    results = [{"case": f"DLRM-128 d=8 one MCMC round ({p.steps} steps, {len(work.groups)} op groups)",
                "topology_finder_s": round(t_finder, 3), "estimator_setup_s": round(t_est, 3),
                "round_s": round(t_round, 3), "per_step_ms": round(t_round / max(p.steps, 1) * 1e3, 2),
                "best_estimate_ms": round(res.estimate * 1e3, 3), "target_s": 60}]
    print(results[0])
    return write_results("topoopt", "TopoOpt strategy search", results)


if __name__ == "__main__":
    main()
