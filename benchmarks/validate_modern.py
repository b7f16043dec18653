"""Validation of today's models against published training throughput on H100 (issue 43): Llama 3.1
405B as Meta trained it (Table 4, three rows, one with context parallelism 16), NVIDIA's NeMo,
Megatron-Bridge and AutoModel tables (Llama 3 8B / 70B, FP8 and BF16, with context parallelism and
FSDP), and Megatron-Core's Mixtral 8x7B and 8x22B mappings.

Each row is a config in `configs/validation/modern/` (its assumptions in its header) and a
published entry of `configs/validation/modern_published.yaml`, found here by model, GPUs and
parallelism, never copied: the published figure is read from that file. Nothing is fitted: every
constant is the presets' (topology/presets.py, system/gpus.py). Memory is checked as a warning: a
row whose modelled peak exceeds the GPU still runs and its peak is reported. For each row this prints our model
TFLOP/s per GPU and tokens/s per GPU beside the published ones and the ratios (ours / published).
Tokens/s compares the same thing whatever FLOP count a source uses; it is the headline ratio where
the source prints it, else model TFLOP/s (Meta: PaLM's count, 6 N + 12 L h s per token, the same
as ours; Megatron-Core's MoE guide: Megatron's count). Writes benchmarks/results/modern_validation.json.
Run: `.venv/bin/python benchmarks/validate_modern.py` (about 2 minutes on two cores).
"""

from __future__ import annotations

import time
from pathlib import Path

import yaml
from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.train import load_train_config, run_train

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "configs" / "validation" / "modern_published.yaml"
CONFIGS = ROOT / "configs" / "validation" / "modern"

# config -> how its published entry is found: a substring of `model`, `gpus`, and parallelism fields
# (and the source's container where one model and size has several rows)
ROWS = (
    ("meta-llama3-405b-8k.yaml", dict(model="Llama 3.1 405B", gpus=8192, tp=8, pp=16, cp=1)),
    ("meta-llama3-405b-16k.yaml", dict(model="Llama 3.1 405B", gpus=16384, tp=8, pp=16, cp=1)),
    ("meta-llama3-405b-cp16.yaml", dict(model="Llama 3.1 405B (long-context", gpus=16384, tp=8, pp=16, cp=16)),
    ("nemo-llama3-8b-fp8-cp2.yaml", dict(model="Llama 3 8B", gpus=8, tp=1, pp=1, cp=2)),
    ("nemo-llama3-70b-fp8-cp2.yaml", dict(model="Llama 3 70B", gpus=64, tp=4, pp=4, cp=2)),
    ("bridge-llama3-70b-fp8.yaml", dict(model="Llama 3 70B", gpus=64, tp=4, pp=8, cp=1, source="25.11")),
    ("automodel-llama3-70b-fsdp-cp2.yaml", dict(model="Llama 3 70B", gpus=64, tp=1, pp=1, cp=2)),
    ("mcore-mixtral-8x7b.yaml", dict(model="Mixtral 8x7B", gpus=64, source="0b981f9c")),
    ("mcore-mixtral-8x7b.yaml", dict(model="Mixtral 8x7B", gpus=64, source="c230e0d7")),
    ("modelzoo-mixtral-8x22b.yaml", dict(model="Mixtral 8x22B", gpus=128)),
)


def published_entry(entries: list[dict], want: dict) -> dict:
    """The one entry of `entries` matching `want` (ValueError for none or several)."""
    def ok(e: dict) -> bool:
        par = e.get("parallelism") or {}
        return (want["model"] in e["model"] and e["gpus"] == want["gpus"]
                and all(par.get(k) == want[k] for k in ("tp", "pp", "cp") if k in want)
                and want.get("source", "") in e["source"])

    hits = [e for e in entries if ok(e)]
    if len(hits) != 1:
        raise ValueError(f"{len(hits)} published entries match {want}")
    return hits[0]


def run_row(name: str, entry: dict) -> dict:
    """Our figures for config `name` beside the published `entry`."""
    t0 = time.perf_counter()
    run = run_train(load_train_config(CONFIGS / name))
    res = run.result
    s = res.summary()
    ours_tf, ours_tok = s["model_tflop_per_s_per_npu"], s["tokens_per_s_per_npu"]
    pub_tf, pub_tok = entry.get("tflops_per_gpu"), entry.get("tokens_per_s_per_gpu")
    row = {"config": f"configs/validation/modern/{name}", "published": entry["model"], "source": entry["source"],
           "confidence": entry.get("confidence"), "precision": entry.get("precision"),
           "ours_tflop_per_s_per_gpu": ours_tf, "published_tflop_per_s_per_gpu": pub_tf,
           "tflops_ratio": ours_tf / pub_tf if pub_tf else None,
           "ours_tokens_per_s_per_gpu": ours_tok, "published_tokens_per_s_per_gpu": pub_tok,
           "tokens_ratio": ours_tok / pub_tok if pub_tok else None,
           "iteration_time_s": res.iteration_time, "mfu": s["mfu"],
           "breakdown_mean_s": {k: v for k, v in res.mean_breakdown().items() if v > 0},
           "memory_peak_GiB": max(m.total for m in run.memory) / 2**30 if run.memory else None,
           "simulate_s": time.perf_counter() - t0, "notes": list(run.notes)}
    row["ratio"] = row["tokens_ratio"] if row["tokens_ratio"] is not None else row["tflops_ratio"]
    row["ratio_of"] = "tokens/s per GPU" if row["tokens_ratio"] is not None else "model TFLOP/s per GPU"
    return row


def main() -> None:
    entries = yaml.safe_load(PUBLISHED.read_text())
    rows = []
    for name, want in ROWS:
        r = run_row(name, published_entry(entries, want))
        rows.append(r)
        tok = (f"tokens/s/GPU {r['ours_tokens_per_s_per_gpu']:8.1f} / {r['published_tokens_per_s_per_gpu']:8.1f}"
               if r["published_tokens_per_s_per_gpu"] else f"tokens/s/GPU {r['ours_tokens_per_s_per_gpu']:8.1f} /        -")
        print(f"{name:36s} TFLOP/s/GPU {r['ours_tflop_per_s_per_gpu']:6.1f} / {r['published_tflop_per_s_per_gpu']:6.1f}  "
              f"{tok}  ratio {r['ratio']:.3f} ({r['ratio_of']})  [{r['simulate_s']:.1f} s]")
    ratios = sorted(abs(r["ratio"] - 1) for r in rows)
    summary = {"rows": len(rows), "within_10pct": sum(x <= 0.10 for x in ratios),
               "within_20pct": sum(x <= 0.20 for x in ratios), "median_abs_error": ratios[len(ratios) // 2]}
    print(f"# {summary['within_10pct']} of {len(rows)} rows within 10%, {summary['within_20pct']} within 20%; "
          f"median |ratio - 1| {summary['median_abs_error']:.3f}")
    write_results("modern_validation", "today's models against published H100 throughput (issue 43)",
                  {"summary": summary, "rows": rows})


if __name__ == "__main__":
    main()
