"""Validation against Korthikanti et al. 2022 (arXiv 2205.05198) on Selene (DGX A100):
- Table 5: the iteration times of 22B, 175B, 530B and 1T with full recompute and with sequence
  parallelism + selective recompute, from `configs/megatron/*.yaml`;
- Table 4: the forward, backward and combined time of one transformer layer of the 22B model in
  its five experiments (no recompute, sequence parallelism, full recompute, selective recompute,
  selective + sequence parallelism), from `configs/megatron/22b-full.yaml` with those options (the
  memory check off: the paper measured these layers on a model that fits; the whole 22B without
  recompute does not).
The cluster preset, the A100 preset and NCCL's algorithm choice; nothing fitted to these tables.
Prints ours beside the paper's and the ratio, and writes them to
benchmarks/results/megatron_validation.json (docs/train.md has the tables).
Run: `.venv/bin/python benchmarks/validate_megatron.py` (about 3 minutes).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import yaml
from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.train import load_train_config, run_train

ROOT = Path(__file__).resolve().parents[1]
PAPER_S = {  # Table 5, seconds per iteration
    "22b-full": 1.42, "22b-sp-selective": 1.10, "175b-full": 18.13, "175b-sp-selective": 13.75,
    "530b-full": 49.05, "530b-sp-selective": 37.83, "1t-full": 94.42, "1t-sp-selective": 71.49,
}
PAPER_UTIL = {  # Table 5, present work (SP + selective): model and hardware FLOPs utilization
    "22b-sp-selective": (0.415, 0.437), "175b-sp-selective": (0.514, 0.528),
    "530b-sp-selective": (0.560, 0.570), "1t-sp-selective": (0.563, 0.570),
}
TABLE4_MS = {  # Table 4, 22B, one transformer layer: (recompute, sequence_parallel) -> forward, backward, combined
    "baseline no recompute": (("none", False), (7.7, 11.9, 19.6)),
    "sequence parallelism": (("none", True), (7.2, 11.8, 19.0)),
    "baseline with recompute": (("full", False), (7.7, 19.5, 27.2)),
    "selective recompute": (("selective", False), (7.7, 13.2, 20.9)),
    "selective + sequence": (("selective", True), (7.2, 13.1, 20.3)),
}
LAYER = "block10"  # a layer inside the model: every block runs the same tasks


def layer_times(res, layer: str) -> tuple[float, float]:
    """(forward, backward) seconds of `layer` per iteration, mean over NPUs: its compute and the
    communication it exposes (`TrainResult.iteration_split`); recompute counts as backward, as in
    the paper's Table 4."""
    g = res.graph
    labels = np.array(g.labels, dtype=object)
    ts = res.iteration_split.tasks
    names = labels[g.label[ts.task]]
    fwd = np.array([n.startswith("F") and n.split(" ")[1].split(".")[0] == layer for n in names])
    bwd = np.array([n[0] in "BR" and n.split(" ")[1].split(".")[0] == layer for n in names])
    scale = 1.0 / max(g.n_npus, 1)
    return float(ts.seconds[fwd].sum() * scale), float(ts.seconds[bwd].sum() * scale)


def table5() -> list[dict]:
    rows = []
    for key, paper in PAPER_S.items():
        t0 = time.perf_counter()
        run = run_train(load_train_config(ROOT / "configs" / "megatron" / f"{key}.yaml"))
        res = run.result
        ours = res.iteration_time
        tp = res.throughput(res.headline())
        row = {"table": 5, "case": key, "paper_s": paper, "ours_s": ours, "ratio": ours / paper, "mfu": tp["mfu"],
               "hfu": tp.get("hfu"), "breakdown_mean_s": res.mean_breakdown(),
               "peak_memory_bytes": max(m.total for m in run.memory) if run.memory else None,
               "notes": list(run.notes), "wall_s": time.perf_counter() - t0}
        util = ""
        if key in PAPER_UTIL:
            row["paper_mfu"], row["paper_hfu"] = PAPER_UTIL[key]
            util = f"  MFU {tp['mfu']:.1%} (paper {row['paper_mfu']:.1%})"
        rows.append(row)
        print(f"{key:18s} paper {paper:6.2f} s  ours {ours:7.3f} s  ratio {ours / paper:.3f}{util}")
    return rows


def table4() -> list[dict]:
    base = yaml.safe_load((ROOT / "configs" / "megatron" / "22b-full.yaml").read_text())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, ((recompute, sp), paper) in TABLE4_MS.items():
            cfg = dict(base)
            cfg["workload"] = {**base["workload"], "parallelism": {**base["workload"]["parallelism"],
                                                                    "recompute": recompute, "sequence_parallel": sp}}
            cfg["system"] = {**base["system"], "npu": {**base["system"]["npu"], "memory_check": "ignore"}}
            path = Path(tmp) / "table4.yaml"
            path.write_text(yaml.safe_dump(cfg))
            res = run_train(load_train_config(path)).result
            fwd, bwd = layer_times(res, LAYER)
            ours = (fwd * 1e3, bwd * 1e3, (fwd + bwd) * 1e3)
            rows.append({"table": 4, "case": name, "recompute": recompute, "sequence_parallel": sp,
                         "paper_ms": dict(zip(("forward", "backward", "combined"), paper)),
                         "ours_ms": dict(zip(("forward", "backward", "combined"), ours)),
                         "ratio": {k: o / p for k, o, p in zip(("forward", "backward", "combined"), ours, paper)}})
            print(f"{name:24s} forward {paper[0]:5.1f} / {ours[0]:5.2f} ms  backward {paper[1]:5.1f} / {ours[1]:5.2f} ms  "
                  f"combined {paper[2]:5.1f} / {ours[2]:5.2f} ms  ratio {ours[2] / paper[2]:.3f}")
    return rows


def main() -> dict:
    t4 = table4()
    t5 = table5()
    r = np.array([x["ratio"] for x in t5])
    print(f"# Table 5: {np.sum(np.abs(r - 1) <= 0.05)} of {len(r)} rows within 5%, median |ratio - 1| "
          f"{np.median(np.abs(r - 1)):.3f}")
    return write_results("megatron_validation", "Korthikanti et al. 2022, Tables 4 and 5", t4 + t5)


if __name__ == "__main__":
    main()
