"""The FRED reproduction's figures: (a) microbenchmarks beside the paper's values, (c) the
end-to-end breakdown per system, (d) the strategy sweep per sample."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .config import DIMENSIONS

if TYPE_CHECKING:
    from .report import Reproduction


def write_plots(rep: Reproduction, out: Path) -> list[Path]:
    """Write the figures as PNG files.

    Parameters
    ----------
    rep : Reproduction
    out : Path
        An existing folder.

    Returns
    -------
    list of Path
        microbenchmarks.png, then end_to_end.png and sweep.png where those parts ran.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = [_micro_plot(plt, rep, out / "microbenchmarks.png")]
    if any(r.iteration_s for r in rep.e2e):
        files.append(_e2e_plot(plt, rep, out / "end_to_end.png"))
    if rep.sweep:
        files.append(_sweep_plot(plt, rep, out / "sweep.png"))
    return files


def _save(plt, fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _micro_plot(plt, rep: Reproduction, path: Path) -> Path:
    """(a) One panel per dimension: ours and the paper's time per byte per system."""
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
    return _save(plt, fig, path)


def _e2e_plot(plt, rep: Reproduction, path: Path) -> Path:
    """(c) One panel per workload: the iteration's breakdown per system, stacked."""
    from ...report.plots import COLORS

    done = [r for r in rep.e2e if r.iteration_s]
    workloads = list(dict.fromkeys(r.workload for r in done))
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
    return _save(plt, fig, path)


def _sweep_plot(plt, rep: Reproduction, path: Path) -> Path:
    """(d) One panel per workload: compute, exposed communication and idle per sample, per
    strategy and system."""
    from ...report.plots import COLORS

    sweep_wl = list(dict.fromkeys(r.workload for r in rep.sweep))
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
    return _save(plt, fig, path)
