"""`fabricsim collective` at scale (issue 20 part 5): every registry algorithm on 65,536 ranks,
analytical model, default verification (every block up to 5M block moves, else a sample solved for
all steps at once), plus Swing on 4k / 16k / 65k ranks and 1-D Swing on ring:4096. Target: every
algorithm under 10 s.

Each case is a whole `python -m fabricsim collective ... --json` process (interpreter start and
imports included), so its wall time is what a user waits and its peak memory (ru_maxrss of the
process) its own. An algorithm that cannot serve 65,536 ranks under the default limits exits 2 with
its one-line reason, recorded as such. `before_s` / `before_peak_MiB`: the same command at the
commit before this work (f0c550e, measured 2026-11-24 on this 2-core machine under load from other
processes; None = refused the same way; `before_timed_out`: killed at 300 s).
Run: `.venv/bin/python benchmarks/bench_collective_scale.py [--only ALGORITHM]` -> benchmarks/results/collective_scale.json
(`--only`: run that algorithm's cases, keep every other row as recorded).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from _results import write_results  # benchmarks/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parents[1]
TORUS = "torus:256x256"
DGX = "dgx-h100:nodes=8192"  # 8,192 nodes x 8 GPUs
# (algorithm, topology, before_s, before_peak_MiB, before_timed_out)
CASES = [
    ("ring", TORUS, 158.75, 911, False),
    ("direct", TORUS, None, None, False),  # p^2 listed transfers: refused by the blocks limit (now a FullMeshStep)
    ("recursive_doubling", TORUS, 11.85, 914, False),
    ("halving_doubling", TORUS, None, None, False),  # p^2 explicit block entries: refused
    ("double_binary_tree", TORUS, 10.43, 369, False),
    ("hierarchical", TORUS, None, None, False),  # lifted ring phases list 256 ids per block: refused
    ("in_network", "switch:65536,reduce", 1.89, 94, False),
    ("in_network_tree", "fred:256x256,reduce", None, None, False),  # fred's routing table: refused
    ("nvls", DGX + ",sharp", 300.0, None, True),
    ("swing", TORUS, 134.05, 3044, False),
    ("torus_recursive_doubling", TORUS, 41.75, 1567, False),
    ("bucket", TORUS, None, None, False),  # lifted ring phases: refused by the blocks limit
    ("hamiltonian_rings", TORUS, 300.0, None, True),
    ("circulant_rings", TORUS, 300.0, None, True),
    ("nccl_ring", DGX, 300.0, None, True),
    ("nccl_tree", DGX, None, None, False),  # every (edge, piece) listed: refused by the blocks limit (now composed steps)
    ("swing", "torus:64x64", 14.6, 184, False),
    ("swing", "torus:128x128", 63.81, 540, False),
    ("swing", "ring:4096", 26.73, 997, False),
]
TIMEOUT_S = 300

CHILD = r"""
import resource, sys
from fabricsim.cli import main
rc = main(sys.argv[1:])
print(f"PEAK_RSS_KIB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
sys.exit(rc)
"""


def run_case(alg: str, topo: str) -> dict:
    """One `fabricsim collective` process: wall time, peak memory, what it verified (or why it refused)."""
    argv = ["collective", "-t", topo, "-a", alg, "-m", "analytical", "-q", "--json"]
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, cwd=ROOT,
                           timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"rc": None, "wall_s": float(TIMEOUT_S), "timed_out": True}
    wall = time.perf_counter() - t0
    peak = [int(line.split()[1]) / 1024 for line in p.stderr.splitlines() if line.startswith("PEAK_RSS_KIB")]
    row = {"rc": p.returncode, "wall_s": wall, "peak_MiB": peak[-1] if peak else None, "timed_out": False}
    if p.returncode == 0:
        out = json.loads(p.stdout)
        row.update(ranks=out["ranks"], steps=out["steps"], verified=out["verified"])
    else:
        row["error"] = next((line for line in p.stderr.splitlines() if not line.startswith("PEAK_RSS_KIB")), "")
    return row


def main(argv: list[str]) -> dict:
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    path = Path(__file__).parent / "results" / "collective_scale.json"
    old = {}
    if only and path.exists():
        old = {(r["algorithm"], r["topology"]): r for r in json.loads(path.read_text())["results"]}
    results = []
    for alg, topo, before, before_peak, before_to in CASES:
        if only and alg != only and (alg, topo) in old:  # keep the recorded row
            results.append(old[(alg, topo)])
            continue
        row = {"algorithm": alg, "topology": topo, **run_case(alg, topo), "before_s": before,
               "before_peak_MiB": before_peak, "before_timed_out": before_to}
        results.append(row)
        v = row.get("verified")
        what = (row.get("error", "")[:90] if row["rc"] else
                "not verified" if v is None else f"{v['blocks_checked']} of {v['nblocks']} blocks verified")
        before_txt = "refused" if before is None else (f"> {before:.0f} s" if before_to else f"{before:.1f} s")
        peak = "-" if row.get("peak_MiB") is None else f"{row['peak_MiB']:.0f} MiB"
        print(f"{alg:<26} {topo:<26} {row['wall_s']:6.1f} s {peak:>9} (before {before_txt})  {what}", flush=True)
    return write_results("collective_scale", "fabricsim collective at 65,536 ranks, analytical, default verification",
                         results)


if __name__ == "__main__":
    main(sys.argv[1:])
