"""Shared by the benchmark scripts: where and how results are written."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path


def write_results(name: str, benchmark: str, results) -> dict:
    """benchmarks/results/<name>.json with the machine it ran on."""
    out = {"benchmark": benchmark, "machine": platform.machine(), "python": platform.python_version(),
           "cpus": os.cpu_count(), "results": results}
    path = Path(__file__).parent / "results" / f"{name}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"written {path}")
    return out
