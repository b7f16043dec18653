"""Validation against published nccl-tests all-reduce bus bandwidths (configs/clusters/nccl_tests.yaml):
8-GPU A100 and H100 nodes (ring, NVLS), 2, 4 and 32 nodes on InfiniBand, from the dgx-a100 and
dgx-h100 presets (datasheet figures; NCCL's effective link rates; one inferred parameter, the
NVSwitch's reduction throughput, named in the config). Every case goes through `run_collective`,
the path `fabricsim collective` takes. Prints ours beside the published figure and the ratio and
writes benchmarks/results/nccl_validation.json (docs/clusters.md has the table).
Run: `.venv/bin/python benchmarks/validate_nccl.py` (a few seconds).
"""

from __future__ import annotations

import time
from pathlib import Path

from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.cli.collective import run_collective
from fabricsim.config import load_yaml_text
from fabricsim.report.tables import busbw_factor
from fabricsim.units import parse_bandwidth

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "clusters" / "nccl_tests.yaml"


def main() -> dict:
    cfg = load_yaml_text(CONFIG.read_text(), str(CONFIG))
    rows = []
    for case in cfg["cases"]:
        t0 = time.perf_counter()
        size = case.get("size", cfg["size"])
        header, table = run_collective(case["topology"], "400Gbps", "100ns", "all-reduce", case["algorithm"], size,
                                       cfg["model"], group=case.get("group"), check=False)
        row = table[-1]
        ours = row["busbw_GBps"] * 1e9
        paper = parse_bandwidth(case["published_busbw"], "published_busbw")
        n = header["ranks"]
        rows.append({"case": case["name"], "topology": case["topology"], "algorithm": case["algorithm"],
                     "group": case.get("group"), "size": size, "ours_busbw": ours, "ours_algbw": row["algbw_GBps"] * 1e9,
                     "published_busbw": paper, "ratio": ours / paper, "inferred": bool(case.get("inferred")),
                     "source": case["source"], "ranks": n, "busbw_factor": busbw_factor("all-reduce", n),
                     "wall_s": time.perf_counter() - t0})
        mark = " (inferred)" if case.get("inferred") else ""
        print(f"{case['name']:48s} published {paper / 1e9:7.1f} GB/s  ours {ours / 1e9:7.1f} GB/s  "
              f"ratio {ours / paper:.3f}{mark}")
    return write_results("nccl_validation", "published nccl-tests all-reduce busbw", rows)


if __name__ == "__main__":
    main()
