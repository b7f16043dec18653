"""Validation against published nccl-tests results (configs/clusters/nccl_tests.yaml).

Two parts, every figure through `run_collective`, the path `fabricsim collective` takes:
- peaks: the large-message busbw of 8-GPU A100 and H100 nodes (ring, NVLS) and of 2, 4 and 32
  nodes on InfiniBand (`cases`);
- curves: whole published tables (`curves`, rows transcribed in configs/clusters/nccl_curves.yaml
  and nccl_curves_more.yaml) at 1 MiB, 8 MiB, 64 MiB, 512 MiB and the table's largest size, with
  NCCL's algorithm choice where the run used NCCL's default; the targets over the sources whose NCCL
  version is stated and at least 2.18, and over every source.
Curves timed by nccl-tests as one process driving 8 GPUs (`one_process`) are compared as that
harness times them: no faster than its host floor (`harness_floor`, inferred from ONE published row;
nccl_tests.yaml says which), max(floor, fabricsim's time); fabricsim's own figure is printed too, and
the floor is checked against the smallest rows of other such tables.
Prints ours beside the published figure and the ratio, then the curve targets (from 8 MiB up
every point within 10% and the median within 5%; 1 MiB within 25%), and writes
benchmarks/results/nccl_validation.json (docs/clusters.md has the tables).
Run: `.venv/bin/python benchmarks/validate_nccl.py` (about 2 s).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.cli.collective import run_collective
from fabricsim.config import load_yaml_text
from fabricsim.report.tables import busbw_factor
from fabricsim.units import parse_bandwidth, parse_time

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "clusters" / "nccl_tests.yaml"
CURVES = (ROOT / "configs" / "clusters" / "nccl_curves.yaml", ROOT / "configs" / "clusters" / "nccl_curves_more.yaml")


def peaks(cfg: dict) -> list[dict]:
    """The large-message cases: one row each."""
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
                     "chosen": f"{row.get('algorithm', header['algorithm'])}/{row.get('protocol', '-')}",
                     "wall_s": time.perf_counter() - t0})
        mark = " (inferred)" if case.get("inferred") else ""
        print(f"{case['name']:48s} published {paper / 1e9:7.1f} GB/s  ours {ours / 1e9:7.1f} GB/s  "
              f"ratio {ours / paper:.3f}{mark}")
    return rows


def floor_checks(cfg: dict) -> list[dict]:
    """The harness floor beside other one-process tables' smallest rows: one row each."""
    floor = parse_time(cfg["harness_floor"], "harness_floor")
    rows = []
    for chk in cfg["floor_checks"]:
        paper = parse_time(chk["published"], "floor_checks.published")
        rows.append({"floor_check": chk["label"], "published_s": paper, "ours_s": floor, "ratio": floor / paper,
                     "source": chk["source"]})
        print(f"{chk['label']:52s} published {paper * 1e6:6.2f} us  floor {floor * 1e6:6.2f} us  ratio {floor / paper:.3f}")
    return rows


def as_timed(row: dict, size: int, floor: float) -> tuple[float, float]:
    """busbw (bytes/s) and time (s) a one-process nccl-tests run would print for fabricsim's row:
    the harness's host loop bounds an iteration below by `floor`."""
    own = size / (row["algbw_GBps"] * 1e9)
    timed = max(own, floor)
    return row["busbw_GBps"] * 1e9 * own / timed, timed


def curves(cfg: dict) -> list[dict]:
    """Every published table at the curve sizes and its largest size: one row per point."""
    floor = parse_time(cfg["harness_floor"], "harness_floor")
    sources = {s["name"]: s for f in CURVES for s in load_yaml_text(f.read_text(), str(f))["sources"]}
    rows = []
    for cur in cfg["curves"]:
        src = sources[cur["source"]]
        column = cur.get("column", "busbw")
        table = {int(r["size"]): float(r[column]) for r in src["rows"] if r.get(column) is not None}
        sizes = sorted(s for s in table if s in cfg["curve_sizes"] or s == max(table))
        header, ours = run_collective(cur["topology"], "400Gbps", "100ns", cur["collective"], cur["algorithm"],
                                      ",".join(str(s) for s in sizes), cfg["model"], check=False)
        one = bool(cur.get("one_process"))
        harness = "one process, 8 GPUs: max(floor, ours)" if one else "one process per GPU"
        print(f"# {cur['label']}  ({cur['topology']}, -a {cur['algorithm']}; NCCL {cur['nccl']}; {harness}; {src['url']})")
        for size, row in zip(sizes, ours):
            paper = table[size] * 1e9
            own = row["busbw_GBps"] * 1e9
            got, timed = as_timed(row, size, floor if one else 0.0)
            chosen = f"{row.get('algorithm', header['algorithm'])}/{row.get('protocol', '-')}"
            rows.append({"curve": cur["label"], "topology": cur["topology"], "collective": cur["collective"],
                         "algorithm": cur["algorithm"], "size": size, "chosen": chosen, "column": column,
                         "nccl": cur["nccl"], "nccl_known": bool(cur["nccl_known"]), "one_process": one,
                         "published_busbw": paper, "ours_busbw": own, "ours_as_timed_busbw": got,
                         "ours_time_s": size / (row["algbw_GBps"] * 1e9), "ours_as_timed_s": timed,
                         "ratio": got / paper, "ratio_collective_alone": own / paper,
                         "source": src["url"], "source_at": src.get("path_commit", "")})
            floored = f"  as timed {got / 1e9:7.1f}" if got != own else " " * 17
            print(f"  {size:>12d} B  published {paper / 1e9:7.1f}  ours {own / 1e9:7.1f}{floored} GB/s  "
                  f"ratio {got / paper:.3f}  ({chosen})")
    return rows


def targets(rows: list[dict], label: str) -> dict:
    """Issue 39's curve targets over `rows`."""
    big = np.array([r["ratio"] for r in rows if r["size"] >= 8 << 20])
    small = np.array([r["ratio"] for r in rows if r["size"] == 1 << 20])
    dev = np.abs(big - 1)
    out = {"over": label, "points_from_8MiB": int(len(big)), "within_10pct_from_8MiB": int(np.sum(dev <= 0.10)),
           "median_abs_dev_from_8MiB": float(np.median(dev)), "points_1MiB": int(len(small)),
           "within_25pct_at_1MiB": int(np.sum(np.abs(small - 1) <= 0.25)),
           "median_ratio_1MiB": float(np.median(small))}
    print(f"# {label}: from 8 MiB {out['within_10pct_from_8MiB']} of {out['points_from_8MiB']} points within 10%, "
          f"median |ratio - 1| = {out['median_abs_dev_from_8MiB']:.3f}; at 1 MiB {out['within_25pct_at_1MiB']} of "
          f"{out['points_1MiB']} within 25%")
    return out


def main() -> dict:
    cfg = load_yaml_text(CONFIG.read_text(), str(CONFIG))
    peak_rows = peaks(cfg)
    floor_rows = floor_checks(cfg)
    curve_rows = curves(cfg)
    known = targets([r for r in curve_rows if r["nccl_known"]], "sources with NCCL >= 2.18 stated")
    every = targets(curve_rows, "every source")
    return write_results("nccl_validation", "published nccl-tests busbw: peaks and whole curves",
                         peak_rows + [{**r, "kind": "floor_check"} for r in floor_rows]
                         + [{**r, "kind": "curve"} for r in curve_rows]
                         + [{"kind": "targets", **known}, {"kind": "targets", **every}])


if __name__ == "__main__":
    main()
