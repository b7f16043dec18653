"""The ACE reproduction's figures, drawn through `report.plotting`: ACE's speedup over the best
baseline per workload and system beside the paper's mean and maximum; the iteration time of every
endpoint policy; the sensitivity of the iteration to the units and memory bandwidth given to
NPU-driven communication (the paper's "pernicious balance")."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...report.plotting import CYCLE, bars, figure, headroom, legend_outside, save, styled, time_unit

if TYPE_CHECKING:
    from .report import Reproduction


def write_plots(rep: Reproduction, out: Path) -> list[Path]:
    """Write the figures as PNG files.

    Parameters
    ----------
    rep : Reproduction
    out : Path
        The folder (created if needed).

    Returns
    -------
    list of Path
        speedup.png, policies.png and, when the grid ran, sensitivity.png.
    """
    files = [save(speedup_figure(rep), Path(out) / "speedup.png", "--out"),
             save(policies_figure(rep), Path(out) / "policies.png", "--out")]
    if rep.sensitivity:
        files.append(save(sensitivity_figure(rep), Path(out) / "sensitivity.png", "--out"))
    return files


@styled
def speedup_figure(rep: Reproduction):
    """One panel per workload: ACE's speedup over the best baseline per system (bars, values
    written, the best baseline under each), our mean (solid line) and the paper's mean (dashed)
    and maximum (dotted), the ratios in the title.

    Parameters
    ----------
    rep : Reproduction

    Returns
    -------
    Figure
    """
    fig, axes = figure(len(rep.workloads), cols=3, panel=(5.6, 3.6))
    for ax, w in zip(axes, rep.workloads):
        rows = [s for s in rep.systems if s.workload == w.workload]
        x = np.arange(len(rows))
        bars(ax, x, [s.speedup for s in rows], 0.6, "{:.2f}".format, color=CYCLE[0], label=f"{rep.ace} / best baseline")
        ax.axhline(w.mean, color=CYCLE[0], lw=1.2, label="our mean")
        ax.axhline(w.paper_mean, color="black", lw=1.2, ls="--", label="paper: mean")
        ax.axhline(w.paper_max, color="black", lw=1.0, ls=":", label="paper: max")
        ax.axhline(1.0, color="#888888", lw=0.8)
        ax.set_xticks(x, [f"{s.system}\nvs {s.best_baseline}" for s in rows], fontsize=6.5)
        ax.set_xlabel("system; the best baseline under each", fontsize=7.5)
        ax.set_title(f"{w.workload}: mean {w.mean:.2f} vs {w.paper_mean:.2f} (x{w.ratio_mean:.2f}), "
                     f"max {w.max:.2f} vs {w.paper_max:.2f} (x{w.ratio_max:.2f})", fontsize=8)
        ax.set_ylabel("iteration-time speedup")
        headroom(ax, [s.speedup for s in rows] + [w.paper_max], bottom=0.0)
    legend_outside(fig)
    return fig


@styled
def policies_figure(rep: Reproduction):
    """One panel per workload: the iteration time of every endpoint policy on every system
    (grouped bars; time unit chosen per panel).

    Parameters
    ----------
    rep : Reproduction

    Returns
    -------
    Figure
    """
    workloads = list(dict.fromkeys(r.workload for r in rep.runs))
    fig, axes = figure(len(workloads), cols=1, panel=(11.0, 3.0))
    for ax, wl in zip(axes, workloads):
        rows = [r for r in rep.runs if r.workload == wl]
        systems = list(dict.fromkeys(r.system for r in rows))
        policies = list(dict.fromkeys(r.policy for r in rows))
        by = {(r.system, r.policy): r for r in rows}
        scale, unit = time_unit([r.iteration_s for r in rows])
        x = np.arange(len(systems))
        w = 0.8 / len(policies)
        tops = []
        for k, pol in enumerate(policies):
            h = [by[(s, pol)].iteration_s * scale for s in systems]
            bars(ax, x + (k - (len(policies) - 1) / 2) * w, h, w, "{:.3g}".format, color=CYCLE[k % len(CYCLE)], label=pol)
            tops += h
        ax.set_xticks(x, systems)
        ax.set_ylabel(f"time per iteration ({unit})")
        ax.set_title(f"{wl}: every endpoint policy")
        headroom(ax, tops)
    legend_outside(fig)
    return fig


@styled
def sensitivity_figure(rep: Reproduction):
    """The iteration time over the grid of (units, memory) shares given to NPU-driven
    communication, as a heat map with each cell's time written; the fastest cell outlined.

    Parameters
    ----------
    rep : Reproduction

    Returns
    -------
    Figure
    """
    rows = list(rep.sensitivity)
    units = sorted({r.units for r in rows})
    mem = sorted({r.memory for r in rows})
    grid = np.full((len(units), len(mem)), np.nan)
    for r in rows:
        grid[units.index(r.units), mem.index(r.memory)] = r.iteration_s
    scale, unit = time_unit(grid[np.isfinite(grid)])
    fig, (ax,) = figure(1, panel=(5.6, 4.2))
    ax.grid(False)
    im = ax.imshow(grid * scale, origin="lower", cmap="viridis_r", aspect="auto")
    mid = np.nanmean([np.nanmin(grid), np.nanmax(grid)])
    for i in range(len(units)):
        for j in range(len(mem)):
            if np.isfinite(grid[i, j]):  # dark text on the light (fast) cells
                ax.text(j, i, f"{grid[i, j] * scale:.3g}", ha="center", va="center", fontsize=7,
                        color="black" if grid[i, j] < mid else "white")
    bi, bj = np.unravel_index(np.nanargmin(grid), grid.shape)
    ax.add_patch(_outline(bj, bi))
    ax.set_xticks(range(len(mem)), [f"{m:g}" for m in mem])
    ax.set_yticks(range(len(units)), [f"{u:g}" for u in units])
    ax.set_xlabel("share of memory bandwidth given to communication")
    ax.set_ylabel("share of compute units given to communication")
    first = rows[0]
    ace = next((r for r in rep.runs if r.workload == first.workload and r.system == first.system and r.policy == rep.ace), None)
    extra = f"; {rep.ace}: {ace.iteration_s * scale:.3g} {unit}" if ace else ""
    ax.set_title(f"{first.workload} on {first.system}: time per iteration ({unit}), NPU-driven{extra}")
    fig.colorbar(im, ax=ax, label=f"time per iteration ({unit})")
    return fig


def _outline(x, y):
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.5, y - 0.5), 1, 1, fill=False, edgecolor="red", lw=2, label="fastest split")


__all__ = ["policies_figure", "sensitivity_figure", "speedup_figure", "write_plots"]
