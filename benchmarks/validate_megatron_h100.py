"""First comparison with published Megatron-LM throughput on H100 (the README's weak-scaling table,
`configs/validation/megatron_h100_weak_scaling.yaml`): nine GPT models, 48 to 6,144 H100s.

Each row runs on the dgx-h100 preset with the h100 GPU preset, fused attention (Transformer
Engine's: `parallelism.attention: fused`), the table's TP / PP / DP and global batch, and these
ASSUMPTIONs, the README stating none of them: microbatch 1, sequence parallelism wherever TP > 1,
no recompute, no virtual pipeline stages, ZeRO-2 for the distributed optimizer, bf16, memory
checked as a warning (a refusal is reported). The published per-GPU model TFLOP/s becomes an
iteration time through Megatron-LM's own FLOP count (`num_floating_point_operations`,
megatron/training/training.py at f2e5db402c, the commit of the table):
12 B s l h^2 (2 + s / h + ffn / h + V / (2 l h)); ours is the simulated iteration. Prints both
and the ratio, and writes benchmarks/results/megatron_h100.json.
Not a validation yet: fabricsim does not model the runs' TP communication overlapped with the
forward matmuls nor DP communication overlapped with the next forward (docs/train.md, "H100").
Run: `.venv/bin/python benchmarks/validate_megatron_h100.py` (10-20 minutes on two cores).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import yaml
from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.errors import ConfigError
from fabricsim.train import load_train_config, run_train

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "configs" / "validation" / "megatron_h100_weak_scaling.yaml"


def megatron_flops(batch: int, seq: int, layers: int, hidden: int, vocab: int, ffn: int) -> float:
    """Megatron-LM's model FLOPs per iteration (f2e5db402c, no GQA, no MoE, no SwiGLU)."""
    return 12.0 * batch * seq * layers * hidden * hidden * (2 + seq / hidden + ffn / hidden + vocab / (2 * layers * hidden))


def leaf_for(nodes: int) -> int:
    """The largest leaf size up to 32 nodes that the dgx preset accepts for `nodes`."""
    return nodes if nodes <= 32 else max(d for d in range(1, 33) if nodes % d == 0)


def config(row: dict, seq: int, vocab: int) -> dict:
    nodes = row["gpus"] // 8
    tp = row["tp"]
    return {
        "name": f"Megatron-LM README, {row['model']} on {row['gpus']} H100",
        "network": {"topology": f"dgx-h100:nodes={nodes},leaf={leaf_for(nodes)}", "model": "analytical"},
        "system": {"npu": {"gpu": "h100", "memory_check": "warn"},
                   "scheduling": {"policy": "FIFO", "priorities": ["MP", "PP", "DP", "IO", "other"],
                                  "comm_streams": "per-category"}},
        "workload": {"model": {"name": row["model"], "layers": row["layers"], "hidden": row["hidden"],
                               "heads": row["heads"], "seq": seq, "vocab": vocab},
                     "dtype": "bf16", "batch": row["batch"], "iterations": 1,
                     "parallelism": {"mp": tp, "pp": row["pp"], "dp": row["dp"],
                                     "microbatches": row["batch"] // row["dp"], "schedule": "1f1b",
                                     "stage_split": "layers", "recompute": "none", "sequence_parallel": tp > 1,
                                     "zero": 2, "optimizer": "adam", "attention": "fused"}},
        "output": {"trace": False, "plot": False},
    }


def main() -> dict:
    data = yaml.safe_load(DATA.read_text())
    seq, vocab = int(data["seq"]), int(data["vocab"])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for row in data["rows"]:
            t0 = time.perf_counter()
            flops = megatron_flops(row["batch"], seq, row["layers"], row["hidden"], vocab, 4 * row["hidden"])
            published = flops / (row["tflops_per_gpu"] * 1e12 * row["gpus"])
            path = Path(tmp) / "row.yaml"
            path.write_text(yaml.safe_dump(config(row, seq, vocab)))
            out = {"model": row["model"], "gpus": row["gpus"], "tp": row["tp"], "pp": row["pp"], "dp": row["dp"],
                   "published_tflops_per_gpu": row["tflops_per_gpu"], "published_iteration_s": published,
                   "source": data["source"]}
            try:
                run = run_train(load_train_config(path))
            except ConfigError as e:
                out["refused"] = str(e)
                print(f"{row['model']:>5s} on {row['gpus']:>5d}: refused: {e}")
                rows.append(out)
                continue
            ours = run.result.iteration_time
            out.update({"ours_iteration_s": ours, "ratio": ours / published,
                        "ours_tflops_per_gpu": flops / (ours * row["gpus"]) / 1e12,
                        "breakdown_mean_s": run.result.mean_breakdown(), "notes": list(run.notes),
                        "wall_s": time.perf_counter() - t0})
            rows.append(out)
            print(f"{row['model']:>5s} on {row['gpus']:>5d} GPUs (TP{row['tp']} PP{row['pp']} DP{row['dp']}): published "
                  f"{published:7.3f} s ({row['tflops_per_gpu']:.1f} TFLOP/s)  ours {ours:7.3f} s "
                  f"({out['ours_tflops_per_gpu']:.1f})  ratio {ours / published:.3f}")
    r = np.array([x["ratio"] for x in rows if "ratio" in x])
    if len(r):
        print(f"# {len(r)} rows: ratio {r.min():.3f}..{r.max():.3f}, median |ratio - 1| {np.median(np.abs(r - 1)):.3f}")
    return write_results("megatron_h100", "Megatron-LM README weak scaling on H100 (first comparison)", rows)


if __name__ == "__main__":
    main()
