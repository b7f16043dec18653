"""The FRED reproduction's report: the result, its files (JSON, CSV, plots) and printed tables."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ...units import format_time
from .config import DIMENSIONS
from .points import E2ERow, MicroRow, SweepRow, SweepSummary, TrafficRow

# ---------------------------------------------------------------- run, report


@dataclass(frozen=True)
class Reproduction:
    config: str
    quick: bool
    micro: tuple[MicroRow, ...]
    traffic: tuple[TrafficRow, ...]
    e2e: tuple[E2ERow, ...]
    sweep: tuple[SweepRow, ...] = ()
    sweep_summary: tuple[SweepSummary, ...] = ()

    def to_dict(self) -> dict:
        return {"config": self.config, "quick": self.quick,
                "microbenchmarks": [dict(asdict(r), ratio=r.ratio) for r in self.micro],
                "traffic": [asdict(r) for r in self.traffic],
                "end_to_end": [dict(asdict(r), ratio=r.ratio) for r in self.e2e],
                "sweep": [asdict(r) for r in self.sweep],
                "sweep_summary": [asdict(r) for r in self.sweep_summary]}


def to_json(rep: Reproduction) -> dict:
    """The report as JSON-able data."""
    return rep.to_dict()


def write_outputs(rep: Reproduction, out: str | Path) -> list[Path]:
    """fred.json, microbenchmarks.csv, end_to_end.csv and the plots in `out`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "fred.json"]
    files[0].write_text(json.dumps(rep.to_dict(), indent=1))
    import csv

    with open(out / "microbenchmarks.csv", "w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(["dimension", "system", "groups", "ours_per_D", "paper_per_D", "ratio", "npu_TBps"])
        for r in rep.micro:
            wr.writerow([r.dimension, r.system, r.groups, r.per_D, r.paper, r.ratio, r.npu_bandwidth_TBps])
    files.append(out / "microbenchmarks.csv")
    with open(out / "end_to_end.csv", "w", newline="") as fh:
        wr = csv.writer(fh)
        keys = sorted({k for r in rep.e2e for k in r.breakdown_s})
        wr.writerow(["workload", "system", "iteration_s", "speedup", "paper_speedup", "ratio", *keys, "note"])
        for r in rep.e2e:
            wr.writerow([r.workload, r.system, r.iteration_s, r.speedup, r.paper_speedup, r.ratio,
                         *[r.breakdown_s.get(k) for k in keys], r.note])
    files.append(out / "end_to_end.csv")
    files += write_plots(rep, out)
    return files


def write_plots(rep: Reproduction, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...report.plots import COLORS

    files = []
    fig, axes = plt.subplots(1, len(DIMENSIONS), figsize=(4 * len(DIMENSIONS), 3.6), sharey=False)
    for ax, dim in zip(axes, DIMENSIONS):
        rows = [r for r in rep.micro if r.dimension == dim]
        x = np.arange(len(rows))
        ax.bar(x - 0.2, [r.per_D for r in rows], 0.4, label="fabricsim", color="#4C72B0")
        ax.bar(x + 0.2, [r.paper or 0 for r in rows], 0.4, label="paper", color="#CCCCCC")
        ax.set_xticks(x, [r.system for r in rows], rotation=30)
        ax.set_title(dim, fontsize=9)
        ax.set_ylabel("time per byte (D / (TB/s))")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    files.append(out / "microbenchmarks.png")
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)
    done = [r for r in rep.e2e if r.iteration_s]
    workloads = list(dict.fromkeys(r.workload for r in done))
    if workloads:
        fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 4))
        axes = np.atleast_1d(axes)
        for ax, wl in zip(axes, workloads):
            rows = [r for r in done if r.workload == wl]
            bottom = np.zeros(len(rows))
            for comp in ("compute", "MP", "PP", "DP", "IO", "other", "idle"):
                v = np.array([r.breakdown_s.get(comp, 0.0) * 1e3 for r in rows])
                if v.any():
                    ax.bar([r.system for r in rows], v, bottom=bottom, color=COLORS[comp],
                           label=comp if comp in ("compute", "idle") else f"exposed {comp}")
                    bottom += v
            ax.set_title(wl, fontsize=10)
            ax.set_ylabel("time per iteration (ms)")
            ax.tick_params(axis="x", rotation=30)
        seen: dict = {}
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                seen.setdefault(lab, h)
        axes[-1].legend(list(seen.values()), list(seen), fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        files.append(out / "end_to_end.png")
        fig.savefig(files[-1], dpi=110)
        plt.close(fig)
    sweep_wl = list(dict.fromkeys(r.workload for r in rep.sweep))
    if sweep_wl:
        fig, axes = plt.subplots(1, len(sweep_wl), figsize=(6 * len(sweep_wl), 4))
        axes = np.atleast_1d(axes)
        for ax, wl in zip(axes, sweep_wl):
            rows = [r for r in rep.sweep if r.workload == wl]
            strategies = list(dict.fromkeys(r.strategy for r in rows))
            systems = list(dict.fromkeys(r.system for r in rows))
            x = np.arange(len(strategies))
            w = 0.8 / len(systems)
            for k, sysname in enumerate(systems):
                by = {r.strategy: r for r in rows if r.system == sysname}
                comp = np.array([by[st].compute_per_sample_s for st in strategies]) * 1e3
                exp_ = np.array([by[st].exposed_comm_per_sample_s for st in strategies]) * 1e3
                rest = np.array([by[st].per_sample_s for st in strategies]) * 1e3 - comp - exp_
                xs = x + (k - (len(systems) - 1) / 2) * w
                ax.bar(xs, comp, w, color=COLORS["compute"], label="compute" if k == 0 else None)
                ax.bar(xs, exp_, w, bottom=comp, color=COLORS["MP"] if k == 0 else COLORS["PP"],
                       label=f"exposed communication, {sysname}")
                ax.bar(xs, rest, w, bottom=comp + exp_, color=COLORS["idle"], label="idle" if k == 0 else None)
            ax.set_xticks(x, strategies, rotation=35, fontsize=7)
            ax.set_ylabel("time per sample (ms)")
            ax.set_title(f"{wl}: strategy sweep ({' vs '.join(systems)})", fontsize=9)
            ax.legend(fontsize=7)
        fig.tight_layout()
        files.append(out / "sweep.png")
        fig.savefig(files[-1], dpi=110)
        plt.close(fig)
    return files


def _f(x, fmt="{:.3f}"):
    return "-" if x is None else fmt.format(x)


def print_report(rep: Reproduction, con, files=()) -> None:
    from rich.table import Table

    t = Table(box=None, header_style="bold", title="(a) communication microbenchmarks: time per byte, D/(TB/s); all groups at once")
    for c in ("dimension", "system", "groups", "fabricsim", "paper", "ratio", "per-NPU TB/s"):
        t.add_column(c, justify="right")
    for r in rep.micro:
        t.add_row(r.dimension, r.system, str(r.groups), _f(r.per_D), _f(r.paper), _f(r.ratio, "{:.2f}"),
                  _f(r.npu_bandwidth_TBps, "{:.2f}"))
    con.print(t)
    t = Table(box=None, header_style="bold", title="(b) all-reduce traffic per NPU (x D), executed on data")
    for c in ("N", "in-network", "endpoint (ring)", "endpoint / in-network", "2(N-1)/N"):
        t.add_column(c, justify="right")
    for r in rep.traffic:
        t.add_row(str(r.n), _f(r.in_network_per_npu), _f(r.endpoint_per_npu), _f(r.factor), _f(r.formula))
    con.print(t)
    t = Table(box=None, header_style="bold", title="(c) end-to-end training: time per iteration (mean over NPUs) and speedup over the mesh")
    for c in ("workload", "system", "iteration", "compute", "exp. MP", "exp. PP", "exp. DP", "exp. I/O", "idle",
              "speedup", "paper", "ratio"):
        t.add_column(c, justify="right")
    for r in rep.e2e:
        if r.iteration_s is None:
            t.add_row(r.workload, r.system, "not modelled", *["-"] * 6, "-", _f(r.paper_speedup, "{:.2f}"), "-")
            continue
        b = r.breakdown_s
        t.add_row(r.workload, r.system, format_time(r.iteration_s), *(format_time(b.get(k, 0.0)) for k in
                  ("compute", "MP", "PP", "DP", "IO", "idle")), _f(r.speedup, "{:.2f}"), _f(r.paper_speedup, "{:.2f}"),
                  _f(r.ratio, "{:.2f}"))
    con.print(t)
    t = Table(box=None, header_style="bold", title="(d) strategy sweep: time per sample and exposed communication per sample")
    for c in ("workload", "strategy", "system", "per sample", "compute", "exposed comm"):
        t.add_column(c, justify="right")
    for r in rep.sweep:
        t.add_row(r.workload, r.strategy, r.system, format_time(r.per_sample_s), format_time(r.compute_per_sample_s),
                  format_time(r.exposed_comm_per_sample_s))
    con.print(t)
    t = Table(box=None, header_style="bold", title="(d) averaged over strategies: Fred-D against the mesh")
    for c in ("workload", "speedup", "paper", "ratio", "exposed comm reduction", "paper", "ratio",
              "fastest on mesh", "fastest on Fred-D", "paper"):
        t.add_column(c, justify="right")
    for r in rep.sweep_summary:
        ps, pe = r.paper.get("speedup"), r.paper.get("exposed_comm_reduction")
        t.add_row(r.workload, _f(r.speedup_mean, "{:.2f}"), _f(ps, "{:.2f}"), _f(r.speedup_mean / ps if ps else None, "{:.2f}"),
                  _f(r.exposed_reduction_mean, "{:.2f}"), _f(pe, "{:.2f}"),
                  _f(r.exposed_reduction_mean / pe if pe else None, "{:.2f}"),
                  *[str(v) for v in r.fastest.values()], str(r.paper.get("fastest_on_fred", "-")))
    con.print(t)
    for note in dict.fromkeys(f"{r.workload}: {r.note}" for r in rep.e2e if r.note):
        con.print(f"# {note}", highlight=False, markup=False)
    for f in files:
        con.print(f"wrote {f}", highlight=False, markup=False)
