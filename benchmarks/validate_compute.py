"""Validation of the GEMM model (`fabricsim.system.compute`) against a published cuBLASLt table.

Azure's AI-benchmarking-guide measures FP16 cuBLASLt GEMMs on ND A100 v4 (A100-SXM4-80GB, random
data, 10,000 warm-up iterations) at eight shapes. One of them, 802816 x 192 x 768 (where a tile's fixed cost dominates), sets
the A100 preset's one inferred figure, the tile overhead (its ceiling is the best measured matmul of
a shape sweep; `A100_SXM4_80GB.sources` say so); the other seven are predictions. Prints ours beside the
measured TFLOP/s and the ratio, and writes benchmarks/results/compute_validation.json
(docs/train.md has the table).
Run: `.venv/bin/python benchmarks/validate_compute.py` (under a second).
"""

from __future__ import annotations

import numpy as np
from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.system.compute import Gemm
from fabricsim.system.gpus import A100_SXM4_80GB

SOURCE = "https://github.com/Azure/AI-benchmarking-guide/blob/main/Azure_Results/ND_A100_v4_results.md"
# (m, n, k) -> measured TFLOP/s, "GEMM CuBLASLt" table; True where the row set an inferred figure
AZURE_A100 = {
    (1024, 1024, 1024): (119.4, False), (2048, 2048, 2048): (221.8, False), (4096, 4096, 4096): (228.0, False),
    (8192, 8192, 8192): (253.7, False), (16384, 16384, 16384): (256.5, False), (1024, 2145, 1024): (132.8, False),
    (6144, 12288, 12288): (250.8, False), (802816, 192, 768): (157.8, True),
}


def main() -> dict:
    gpu = A100_SXM4_80GB
    rows = []
    for (m, n, k), (measured, inferred) in AZURE_A100.items():
        g = Gemm(m, n, k)
        ours = g.flops / gpu.gemm_time(g) / 1e12
        rows.append({"gpu": gpu.name, "m": m, "n": n, "k": k, "measured_tflops": measured, "ours_tflops": ours,
                     "ratio": ours / measured, "inferred": inferred, "source": SOURCE})
        mark = "  (inferred from this row)" if inferred else ""
        print(f"{m:>7d} x {n:>6d} x {k:>6d}  measured {measured:6.1f}  ours {ours:6.1f} TFLOP/s  ratio {ours / measured:.3f}{mark}")
    pred = np.array([r["ratio"] for r in rows if not r["inferred"]])
    print(f"# predictions: {len(pred)} rows, ratios {pred.min():.3f}..{pred.max():.3f}, median |ratio - 1| "
          f"{np.median(np.abs(pred - 1)):.3f}")
    return write_results("compute_validation", "cuBLASLt FP16 GEMM TFLOP/s, Azure ND A100 v4", rows)


if __name__ == "__main__":
    main()
