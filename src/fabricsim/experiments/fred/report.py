"""The FRED reproduction's report: the result, its files (JSON, CSV; figures in `plots.py`) and
printed tables."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ...units import format_time
from .comm import MicroRow, TrafficRow
from ..base import or_dash, study_table
from .plots import write_plots
from .training import E2ERow, SweepRow, SweepSummary


@dataclass(frozen=True)
class Reproduction:
    """The whole reproduction: (a) microbenchmarks, (b) traffic, (c) end to end with speedups over
    the mesh, (d) the strategy sweep and its averages; `source`, the (workload, system) whose
    published speedup the one NPU factor is inferred from."""

    config: str
    quick: bool
    micro: tuple[MicroRow, ...]
    traffic: tuple[TrafficRow, ...]
    e2e: tuple[E2ERow, ...]
    sweep: tuple[SweepRow, ...] = ()
    sweep_summary: tuple[SweepSummary, ...] = ()
    source: tuple[str, str] | None = None

    def to_dict(self) -> dict:
        """Everything as JSON-able data.

        Returns
        -------
        dict
            `config`, `quick`, `factor_source` (workload, system), and the rows of each part
            (`microbenchmarks` and `end_to_end` with their ratios to the paper), `sweep` and
            `sweep_summary`.
        """
        return {"config": self.config, "quick": self.quick, "factor_source": list(self.source or ()),
                "microbenchmarks": [dict(asdict(r), ratio=r.ratio) for r in self.micro],
                "traffic": [asdict(r) for r in self.traffic],
                "end_to_end": [dict(asdict(r), ratio=r.ratio) for r in self.e2e],
                "sweep": [asdict(r) for r in self.sweep],
                "sweep_summary": [asdict(r) for r in self.sweep_summary]}


def to_json(rep: Reproduction) -> dict:
    """The report as JSON-able data (what `--json` prints, less the files).

    Parameters
    ----------
    rep : Reproduction
        The FRED reproduction.

    Returns
    -------
    dict
        `rep.to_dict()`.
    """
    return rep.to_dict()


def write_outputs(rep: Reproduction, out: str | Path) -> list[Path]:
    """Write the reproduction's files.

    Parameters
    ----------
    rep : Reproduction
    out : str or Path
        Created if needed.

    Returns
    -------
    list of Path
        fred.json, microbenchmarks.csv, end_to_end.csv and the figures.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "fred.json"]
    files[0].write_text(json.dumps(rep.to_dict(), indent=1))
    with open(out / "microbenchmarks.csv", "w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(["dimension", "system", "groups", "ours_per_D", "paper_per_D", "ratio", "npu_TBps"])
        for r in rep.micro:
            wr.writerow([r.dimension, r.system, r.groups, r.per_D, r.paper, r.ratio, r.npu_bandwidth_TBps])
    files.append(out / "microbenchmarks.csv")
    with open(out / "end_to_end.csv", "w", newline="") as fh:
        wr = csv.writer(fh)
        keys = sorted({k for r in rep.e2e for k in r.breakdown_s})
        wr.writerow(["compute", "npu_speed", "workload", "system", "iteration_s", "speedup", "paper_speedup", "ratio",
                     *keys, "note"])
        for r in rep.e2e:
            wr.writerow([r.compute, r.speed, r.workload, r.system, r.iteration_s, r.speedup, r.paper_speedup, r.ratio,
                         *[r.breakdown_s.get(k) for k in keys], r.note])
    files.append(out / "end_to_end.csv")
    files += write_plots(rep, out)
    return files


def print_report(rep: Reproduction, con, files=()) -> None:
    """Print the reproduction's tables, ours beside the paper's numbers.

    Parameters
    ----------
    rep : Reproduction
    con : rich Console
    files : sequence of Path
        The files written (listed at the end).
    """
    _print_comm(rep, con)
    _print_e2e(rep, con)
    _print_sweep(rep, con)
    for note in dict.fromkeys(f"{r.workload}: {r.note}" for r in rep.e2e if r.note):
        con.print(f"# {note}", highlight=False, markup=False)
    for f in files:
        con.print(f"wrote {f}", highlight=False, markup=False)


def _print_comm(rep: Reproduction, con) -> None:
    """(a) and (b)."""
    t = study_table("(a) communication microbenchmarks: time per byte, D/(TB/s); all groups at once",
               ("dimension", "system", "groups", "fabricsim", "paper", "ratio", "per-NPU TB/s"))
    for r in rep.micro:
        t.add_row(r.dimension, r.system, str(r.groups), or_dash(r.per_D), or_dash(r.paper), or_dash(r.ratio, "{:.2f}"),
                  or_dash(r.npu_bandwidth_TBps, "{:.2f}"))
    con.print(t)
    t = study_table("(b) all-reduce traffic per NPU (x D), executed on data",
               ("N", "in-network", "endpoint (ring)", "endpoint / in-network", "2(N-1)/N"))
    for r in rep.traffic:
        t.add_row(str(r.n), or_dash(r.in_network_per_npu), or_dash(r.endpoint_per_npu), or_dash(r.factor), or_dash(r.formula))
    con.print(t)


def _print_e2e(rep: Reproduction, con) -> None:
    """(c) per compute setting, workload and system: the iteration, its breakdown, the speedup over
    the mesh; then the speedups of both settings side by side."""
    for comp in dict.fromkeys(r.compute for r in rep.e2e):
        _print_e2e_setting(rep, con, comp)
    settings = list(dict.fromkeys(r.compute for r in rep.e2e))
    by = {(r.compute, r.workload, r.system): r for r in rep.e2e}
    cols = ["workload", "system"]
    for comp in settings:
        cols += [f"{comp}: NPU x", "speedup", "ratio"]
    src = " ".join(rep.source) if rep.source else "one result"
    t = study_table("(c) speedup over the mesh in both compute settings beside the paper's "
                    f"(calibrated: ONE NPU factor, inferred from {src}; the rest predicted)",
                    (*cols[:2], "paper", *cols[2:]))
    for wl, system in dict.fromkeys((r.workload, r.system) for r in rep.e2e):
        if system == "mesh":
            continue
        cells = []
        paper = None
        for comp in settings:
            r = by.get((comp, wl, system))
            paper = paper if r is None else r.paper_speedup
            cells += ["-", "-", "-"] if r is None else [f"{r.speed:.3g}", or_dash(r.speedup, "{:.2f}"),
                                                        or_dash(r.ratio, "{:.2f}")]
        t.add_row(wl, system, or_dash(paper, "{:.2f}"), *cells)
    con.print(t)


def _print_e2e_setting(rep: Reproduction, con, comp: str) -> None:
    """(c) one compute setting's table."""
    t = study_table(f"(c) end-to-end training, compute {comp}: time per iteration (mean over NPUs) and speedup "
                    "over the mesh",
               ("workload", "system", "iteration", "compute", "exp. MP", "exp. PP", "exp. DP", "exp. I/O", "idle",
                "speedup", "paper", "ratio"))
    for r in (x for x in rep.e2e if x.compute == comp):
        if r.iteration_s is None:
            t.add_row(r.workload, r.system, "not modelled", *["-"] * 6, "-", or_dash(r.paper_speedup, "{:.2f}"), "-")
            continue
        b = r.breakdown_s
        t.add_row(r.workload, r.system, format_time(r.iteration_s), *(format_time(b.get(k, 0.0)) for k in
                  ("compute", "MP", "PP", "DP", "IO", "idle")), or_dash(r.speedup, "{:.2f}"), or_dash(r.paper_speedup, "{:.2f}"),
                  or_dash(r.ratio, "{:.2f}"))
    con.print(t)


def _print_sweep(rep: Reproduction, con) -> None:
    """(d) per strategy and system, then averaged over strategies beside the paper's."""
    t = study_table("(d) strategy sweep: time per sample and exposed communication per sample",
               ("compute setting", "workload", "strategy", "system", "per sample", "compute", "exposed comm"))
    for r in rep.sweep:
        t.add_row(r.compute, r.workload, r.strategy, r.system, format_time(r.per_sample_s),
                  format_time(r.compute_per_sample_s), format_time(r.exposed_comm_per_sample_s))
    con.print(t)
    t = study_table("(d) averaged over strategies: Fred-D against the mesh",
               ("compute setting", "workload", "speedup", "paper", "ratio", "exposed comm reduction", "paper", "ratio",
                "fastest on mesh", "fastest on Fred-D", "paper"))
    for r in rep.sweep_summary:
        ps, pe = r.paper.get("speedup"), r.paper.get("exposed_comm_reduction")
        t.add_row(r.compute, r.workload, or_dash(r.speedup_mean, "{:.2f}"), or_dash(ps, "{:.2f}"), or_dash(r.speedup_mean / ps if ps else None, "{:.2f}"),
                  or_dash(r.exposed_reduction_mean, "{:.2f}"), or_dash(pe, "{:.2f}"),
                  or_dash(r.exposed_reduction_mean / pe if pe else None, "{:.2f}"),
                  *[str(v) for v in r.fastest.values()], str(r.paper.get("fastest_on_fred", "-")))
    con.print(t)
