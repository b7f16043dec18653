"""`fabricsim sweep` throughput: the 1,000-point all-reduce sweep (configs/sweep-collectives.yaml:
5 topologies x 5 algorithms x 2 bandwidths x 20 sizes, analytical model) on 2 local worker
processes and on a Dask LocalCluster of 2 single-threaded workers; the rows of both must be equal
(but wall_s). Results (points per second, wall s) go to benchmarks/results/sweep.json.
Run: `.venv/bin/python benchmarks/bench_sweep.py`.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.sweep.run import read_results, run_sweep
from fabricsim.sweep.spec import load_sweep

SWEEP = Path(__file__).resolve().parents[1] / "configs" / "sweep-collectives.yaml"


def main() -> dict:
    _, pts = load_sweep(SWEEP)
    results, tables = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, kw in (("local, 2 workers", {"workers": 2}), ("dask LocalCluster, 2 workers", {"dask": "local:2"})):
            out = Path(tmp) / name.split(",")[0].replace(" ", "_")
            t0 = time.perf_counter()
            got = run_sweep(pts, out, **kw)
            dt = time.perf_counter() - t0
            tables[name] = read_results(out).drop(["wall_s"])
            results.append({"executor": name, "points": got["ran"], "failed": got["failed"], "wall_s": round(dt, 3),
                            "points_per_s": round(got["ran"] / dt, 1)})
            print(results[-1])
    a, b = tables.values()
    identical = a.equals(b)
    print("identical rows:", identical)
    return write_results("sweep", "fabricsim sweep, 1000 all-reduce points", {"runs": results, "identical_rows": identical})


if __name__ == "__main__":
    main()
