"""The TopoOpt reproduction's report: summary of the rows, the paper beside ours with the ratio,
the cost table, the spec's worked example; JSON, CSV and printed tables (figures in `plots.py`)."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from ...units import format_bandwidth, format_time
from ..base import or_dash, study_table
from .config import TopoOptConfig
from .example import worked_example
from .points import FabricPoint, FabricRow


@dataclass(frozen=True)
class Reproduction:
    """The whole reproduction.

    Parameters
    ----------
    config : str
        The config's name.
    quick : bool
        The CI subset.
    rows : tuple of FabricRow
    fabrics : tuple of str
        The fabrics, in the config's order.
    speedups : tuple of dict
        Per (workload, d, B): the cost-equivalent fat-tree's time over TopoOpt's, and over the
        ideal switch's.
    paper : tuple of dict
        The paper's figures beside ours, with the ratio.
    costs : tuple of dict
        The cost table per (d, B).
    example : dict
        The spec's worked example, computed.
    elapsed_s : float
    """

    config: str
    quick: bool
    rows: tuple[FabricRow, ...]
    fabrics: tuple[str, ...]
    speedups: tuple[dict, ...]
    paper: tuple[dict, ...]
    costs: tuple[dict, ...]
    example: dict
    elapsed_s: float = 0.0


def _key(p: FabricPoint) -> tuple:
    return (p.workload, p.degree, p.link_bandwidth)


def summarize(cfg: TopoOptConfig, pts: Sequence[FabricPoint], rows: Sequence[FabricRow], quick: bool = False,
              elapsed_s: float = 0.0) -> Reproduction:
    """Speedups, the paper's figures beside ours, costs and the worked example.

    Parameters
    ----------
    cfg : TopoOptConfig
    pts : sequence of FabricPoint
    rows : sequence of FabricRow
        `rows[i]` evaluated `pts[i]`.
    quick : bool
    elapsed_s : float

    Returns
    -------
    Reproduction
    """
    from ...optimize.cost import Prices, cost_table

    by: dict = {}
    for r in rows:
        by.setdefault(_key(r.point), {})[r.point.fabric] = r
    speedups = []
    for (w, d, B), fab in by.items():
        topo = fab.get("topoopt")
        row = {"workload": w, "degree": d, "link_bandwidth": B}
        for f, r in fab.items():
            row[f] = r.iteration
        if topo is not None:
            for base in ("fat-tree-cost", "fat-tree", "fat-tree-2to1", "ideal", "expander", "ocs"):
                if base in fab:
                    row[f"{base} / topoopt"] = fab[base].iteration / topo.iteration
        if "fat-tree-cost" in fab:
            row["cost-equivalent bandwidth"] = fab["fat-tree-cost"].point.server_bandwidth
        speedups.append(row)
    paper = []
    for demo in cfg.paper.demo:
        fab = by.get((demo.workload, demo.degree, demo.bandwidth), {})
        t, f = fab.get("topoopt"), fab.get("fat-tree-cost")
        ours = (f.iteration / t.iteration) if t and f else None
        theirs = demo.fat_tree / demo.topoopt
        paper.append({"figure": f"{demo.workload} d={demo.degree} TopoOpt", "ours": t and t.iteration,
                      "paper": demo.topoopt, "unit": "s"})
        paper.append({"figure": f"{demo.workload} d={demo.degree} cost-equivalent fat-tree", "ours": f and f.iteration,
                      "paper": demo.fat_tree, "unit": "s"})
        paper.append({"figure": f"{demo.workload} d={demo.degree} speedup", "ours": ours, "paper": theirs, "unit": "x"})
    best = [s["fat-tree-cost / topoopt"] for s in speedups if "fat-tree-cost / topoopt" in s]
    for name, val in (("max speedup over the cost-equivalent fat-tree (v3 abstract)", cfg.paper.max_speedup_v3),
                      ("max speedup over the cost-equivalent fat-tree (v1 abstract)", cfg.paper.max_speedup_v1)):
        paper.append({"figure": name, "ours": max(best) if best else None, "paper": val, "unit": "x"})
    for row in paper:
        row["ratio"] = row["ours"] / row["paper"] if row["ours"] else None
    prices = Prices.from_mapping(cfg.prices)
    n = pts[0].servers if pts else cfg.servers
    costs = []
    for d, B in sorted({(p.degree, p.link_bandwidth) for p in pts}):
        equiv = next((p.server_bandwidth for p in pts if (p.degree, p.link_bandwidth) == (d, B)
                      and p.fabric == "fat-tree-cost"), None)
        rows_in = [{"fabric": "topoopt", "d": d, "link_bw": B, "label": "TopoOpt (patch panel)"},
                   {"fabric": "topoopt", "d": d, "link_bw": B, "ocs": True, "label": "OCS"},
                   {"fabric": "fat-tree", "server_bw": d * B, "tiers": cfg.fat_tree.tiers, "label": "fat-tree d x B"},
                   {"fabric": "fat-tree", "server_bw": d * B, "tiers": cfg.fat_tree.tiers,
                    "oversub": cfg.fat_tree.oversubscribed, "label": "fat-tree 2:1 d x B"}]
        if equiv is not None:
            rows_in.append({"fabric": "fat-tree", "server_bw": equiv, "tiers": cfg.fat_tree.tiers,
                            "label": "fat-tree cost-equivalent"})
        for row in cost_table(n, rows_in, prices):
            costs.append({"d": d, "link_bandwidth": B, **row})
    costs = tuple(costs)
    return Reproduction(cfg.name, quick, tuple(rows), tuple(f for f in cfg.fabrics if any(r.point.fabric == f for r in rows)),
                        tuple(speedups), tuple(paper), costs, worked_example(cfg.example.n, cfg.example.d), elapsed_s)


def to_json(rep: Reproduction) -> dict:
    """Everything as JSON-able data (times in s, bandwidths in bytes/s, costs in $)."""
    return {"config": rep.config, "quick": rep.quick, "elapsed_s": rep.elapsed_s,
            "runs": [{**asdict(r.point), "iteration_s": r.iteration, "estimate_s": r.estimate, "strategy": r.strategy,
                      "topology": r.topology} for r in rep.rows],
            "speedups": list(rep.speedups), "paper": list(rep.paper), "costs": list(rep.costs), "example": rep.example}


def write_outputs(rep: Reproduction, out: str | Path) -> list[Path]:
    """topoopt.json, runs.csv, speedups.csv, costs.csv and the figures in `out`.

    Parameters
    ----------
    rep : Reproduction
    out : str or Path
        Folder (created).

    Returns
    -------
    list of Path
    """
    from .plots import write_plots

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "topoopt.json"]
    files[0].write_text(json.dumps(to_json(rep), indent=1, default=str))
    runs = [{"workload": r.point.workload, "degree": r.point.degree, "link_bandwidth_Bps": r.point.link_bandwidth,
             "fabric": r.point.fabric, "server_bandwidth_Bps": r.point.server_bandwidth, "iteration_s": r.iteration,
             "estimate_s": r.estimate} for r in rep.rows]
    for name, table in (("runs.csv", runs), ("speedups.csv", list(rep.speedups)), ("costs.csv", list(rep.costs))):
        if not table:
            continue
        path = out / name
        cols = list(dict.fromkeys(k for row in table for k in row))
        with path.open("w", newline="") as fh:
            wr = csv.DictWriter(fh, fieldnames=cols)
            wr.writeheader()
            wr.writerows(table)
        files.append(path)
    return files + write_plots(rep, out)


def _ms(x) -> str:
    return "-" if x is None else format_time(x)


def print_report(rep: Reproduction, con, files=()) -> None:
    """The tables: iteration time per fabric, speedups, the paper beside ours, costs, the example.

    Parameters
    ----------
    rep : Reproduction
    con : rich Console
    files : sequence of Path
    """
    t = study_table(f"TopoOpt ({rep.config}{', quick' if rep.quick else ''}): iteration time per fabric",
                    ["workload", "d", "B"] + list(rep.fabrics) + ["fat-tree-cost / TopoOpt", "ideal / TopoOpt"])
    for s in rep.speedups:
        t.add_row(s["workload"], str(s["degree"]), format_bandwidth(s["link_bandwidth"]),
                  *[_ms(s.get(f)) for f in rep.fabrics],
                  or_dash(s.get("fat-tree-cost / topoopt"), "{:.2f}"), or_dash(s.get("ideal / topoopt"), "{:.2f}"))
    con.print(t)
    t = study_table("Ours beside the paper's", ["figure", "ours", "paper", "ratio"])
    for p in rep.paper:
        fmt = _ms if p["unit"] == "s" else (lambda v: or_dash(v, "{:.2f}x"))
        t.add_row(p["figure"], fmt(p["ours"]), fmt(p["paper"]), or_dash(p["ratio"], "{:.2f}"))
    con.print(t)
    if rep.costs:
        cols = list(rep.costs[0])
        t = study_table("Cost (US$, every price a named parameter: configs/topoopt.yaml prices)", cols)
        for c in rep.costs:
            t.add_row(*[_cost_cell(k, v) for k, v in c.items()])
        con.print(t)
    ex = rep.example
    con.print(f"Worked example n={ex['n']}, d={ex['d']}: TotientPerms {ex['totient']}, geometric jumps {ex['jumps']}, "
              f"diameter {ex['diameter']}, mean hops {ex['mean_hops']:.2f}; coin-change hops {ex['coin_hops']}; "
              f"byte-weighted MP hops option A {ex['mp_hops_a']:g}, option B {ex['mp_hops_b']:g}")
    con.print(f"{len(rep.rows)} runs in {rep.elapsed_s:.1f} s")
    for f in files:
        con.print(f"wrote {f}")


def _cost_cell(key: str, value) -> str:
    """A cost table cell: bandwidths with units, `relative` to two decimals (a fabric at 0.66 of
    TopoOpt's cost is not 1), dollars whole."""
    if "bandwidth" in key or key.endswith("_bw"):
        return format_bandwidth(value)
    if key == "relative":
        return or_dash(value, "{:.2f}")
    return f"{value:,.0f}" if isinstance(value, float) else str(value)
