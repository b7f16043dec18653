"""Validation against Korthikanti et al. 2022 (arXiv 2205.05198), Table 5: the iteration times of
22B, 175B, 530B and 1T on Selene (DGX A100) with full recompute and with sequence parallelism +
selective recompute, from `configs/megatron/*.yaml` (datasheet figures only, nothing fitted).
Prints our time beside the paper's and the ratio, and writes them to
benchmarks/results/megatron_validation.json (docs/train.md has the table).
Run: `.venv/bin/python benchmarks/validate_megatron.py` (about 90 s).
"""

from __future__ import annotations

import time
from pathlib import Path

from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.train import load_train_config, run_train

ROOT = Path(__file__).resolve().parents[1]
PAPER_S = {  # Table 5, seconds per iteration
    "22b-full": 1.42, "22b-sp-selective": 1.10, "175b-full": 18.13, "175b-sp-selective": 13.75,
    "530b-full": 49.05, "530b-sp-selective": 37.83, "1t-full": 94.42, "1t-sp-selective": 71.49,
}


def main() -> dict:
    rows = []
    for key, paper in PAPER_S.items():
        t0 = time.perf_counter()
        run = run_train(load_train_config(ROOT / "configs" / "megatron" / f"{key}.yaml"))
        res = run.result
        ours = res.iteration_time
        rows.append({"case": key, "paper_s": paper, "ours_s": ours, "ratio": ours / paper,
                     "mfu": res.throughput(res.headline())["mfu"], "breakdown_mean_s": res.mean_breakdown(),
                     "peak_memory_bytes": max(m.total for m in run.memory) if run.memory else None,
                     "notes": list(run.notes), "wall_s": time.perf_counter() - t0})
        print(f"{key:18s} paper {paper:6.2f} s  ours {ours:7.3f} s  ratio {ours / paper:.3f}")
    return write_results("megatron_validation", "Korthikanti et al. 2022 Table 5", rows)


if __name__ == "__main__":
    main()
