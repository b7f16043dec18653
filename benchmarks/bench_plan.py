"""`fabricsim plan` at scale (issue 44): GPT-3 175B on 1,024 A100s (`configs/plan-gpt3-175b-1024.yaml`):
the strategies estimated after pruning, the best 100 simulated, the wall time (target: 10,000+
estimated and 100 simulated in under 60 s on this 2-core machine); then a space ten times as large
(the same config with wider knob choices: 1,838,592 combinations, above the `combos` limit, which is
raised for it) on a Dask LocalCluster of 1 and of 2 workers, which enumerate, estimate and simulate
on the cluster. Each case starts from an empty results directory.

Run: `.venv/bin/python benchmarks/bench_plan.py [--quick]` -> benchmarks/results/plan.json
(`--quick`: the first case only).
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

import yaml
from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.plan.schema import plan_config
from fabricsim.plan.search import run_plan

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "plan-gpt3-175b-1024.yaml"
# ten times the config's 177,408 combinations (1,838,592), above the `combos` limit: raised for it
WIDER = {"cp": [1, 2, 4, 8, 16, 32, 64],
         "microbatch": [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768],
         "pp": [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96], "virtual_stages": [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96],
         "zero": [0, 1, 2, 3], "recompute": ["none", "selective", "full"]}


def case(name: str, data: dict, **kw) -> dict:
    """One search from an empty directory: its counts and times."""
    pc = plan_config(data, str(CONFIG), base_dir=str(CONFIG.parent), from_file=True)
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        res = run_plan(pc, Path(d) / "p", **kw)
        wall = time.perf_counter() - t0
    row = {"case": name, "combos": res["combos"], "evaluated": res["evaluated"], "simulated": res["simulated"],
           "pruned": res["pruned"], "estimate_phase_s": round(res["estimate_s"], 2), "wall_s": round(wall, 2),
           "best": res["best"]["strategy"], "best_iteration_s": res["best"]["iteration_s"],
           "spearman": res["spearman"], "estimate_error": res["estimate_error"]}
    print(f"{name}: {row['combos']} combos, {row['evaluated']} estimated ({row['estimate_phase_s']} s), "
          f"{row['simulated']} simulated, {row['wall_s']} s in all; best {row['best']} "
          f"{row['best_iteration_s']:.3f} s; Spearman {row['spearman']:.3f}")
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    base = yaml.safe_load(CONFIG.read_text())
    rows = [case("plan-gpt3-175b-1024, local, 2 processes", base, workers=2)]
    if not a.quick:
        wide = copy.deepcopy(base)
        wide["search"].update(WIDER)
        from fabricsim.limits import raised_limits

        with raised_limits(combos=2_000_000):
            for n in (1, 2):
                rows.append(case(f"ten times the space, Dask LocalCluster of {n}", wide, dask=f"local:{n}"))
    write_results("plan", "fabricsim plan: strategies estimated and simulated (issue 44)", rows)


if __name__ == "__main__":
    main()
