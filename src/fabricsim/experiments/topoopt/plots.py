"""The TopoOpt reproduction's figures, drawn through `report.plotting`: iteration time per fabric
for every (workload, d, B) (TopoOpt's speedup over the cost-equivalent fat-tree written above),
and the search's convergence (estimated iteration time per MCMC step, current and best)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...report.plotting import CYCLE, figure, legend_outside, paper_markers, save, styled, time_unit

if TYPE_CHECKING:
    from .report import Reproduction


def write_plots(rep: Reproduction, out: Path) -> list[Path]:
    """Write fabrics.png and, when TopoOpt ran, convergence.png.

    Parameters
    ----------
    rep : Reproduction
    out : Path
        The folder (created if needed).

    Returns
    -------
    list of Path
    """
    files = [save(fabrics_figure(rep), Path(out) / "fabrics.png", "--out")]
    if any(r.trace for r in rep.rows):
        files.append(save(convergence_figure(rep), Path(out) / "convergence.png", "--out"))
    return files


@styled
def fabrics_figure(rep: Reproduction):
    """One panel per workload: grouped bars of iteration time per fabric for each (servers, d, B),
    the cost-equivalent fat-tree's time over TopoOpt's above each group, the paper's times (its
    demo points) as black diamonds on the bars they compare with.

    Parameters
    ----------
    rep : Reproduction

    Returns
    -------
    Figure
    """
    workloads = list(dict.fromkeys(s["workload"] for s in rep.speedups))
    fig, axes = figure(len(workloads), cols=2, panel=(6.4, 3.6))
    fabrics = list(rep.fabrics)
    for ax, w in zip(axes, workloads):
        rows = [s for s in rep.speedups if s["workload"] == w]
        top = max(max(s.get(f, 0.0) for f in fabrics) for s in rows)
        top = max([top] + [p["paper"] for p in rep.paper if p.get("workload") == w and p.get("fabric")])
        scale, unit = time_unit(top)
        x = np.arange(len(rows))
        width = 0.8 / len(fabrics)
        for i, f in enumerate(fabrics):
            ax.bar(x - 0.4 + (i + 0.5) * width, [s.get(f, np.nan) * scale for s in rows], width,
                   color=CYCLE[i % len(CYCLE)], label=f)
        _paper_markers(ax, rep, rows, x, fabrics, width, scale)
        for xi, s in zip(x, rows):
            if "fat-tree-cost / topoopt" in s:
                theirs = next((p["paper"] for p in rep.paper if p["unit"] == "x" and _at(p, s)), None)
                ax.text(xi, top * scale * 1.02, f"{s['fat-tree-cost / topoopt']:.2f}x"
                        + ("" if theirs is None else f" (paper {theirs:.2f}x)"), ha="center", va="bottom", fontsize=8)
        ax.set_xticks(x, [f"{s['servers']} servers\nd={s['degree']}\n{s['link_bandwidth'] * 8 / 1e9:g} Gb/s"
                          for s in rows])
        ax.set_ylim(0, top * scale * 1.15)
        ax.set_ylabel(f"iteration time ({unit})")
        ax.set_title(f"{w}: cost-equivalent fat-tree / TopoOpt above")
    legend_outside(fig)
    return fig


def _at(paper_row: dict, speedup_row: dict) -> bool:
    """Whether a paper figure is of this (workload, servers, d, B) group."""
    return all(paper_row.get(k) == speedup_row[k] for k in ("workload", "servers", "degree", "link_bandwidth"))


def _paper_markers(ax, rep: Reproduction, rows, x, fabrics, width: float, scale: float) -> None:
    """The paper's iteration times (its demo points) as diamonds on the bars they compare with,
    ours / paper beside each (`report.plotting.paper_markers`)."""
    xs, theirs, ours = [], [], []
    for xi, s in zip(x, rows):
        for p in rep.paper:
            if p.get("fabric") in fabrics and _at(p, s):
                xs.append(xi - 0.4 + (fabrics.index(p["fabric"]) + 0.5) * width)
                theirs.append(p["paper"] * scale)
                ours.append(None if p["ours"] is None else p["ours"] * scale)
    if xs:
        paper_markers(ax, xs, theirs, ours, label="paper (demo)")


@styled
def convergence_figure(rep: Reproduction):
    """One line pair per TopoOpt run: the estimate of the current strategy (thin) and of the best
    so far (thick) per MCMC step; rounds of TopologyFinder are where the lines jump.

    Parameters
    ----------
    rep : Reproduction

    Returns
    -------
    Figure
    """
    runs = [r for r in rep.rows if r.trace]
    fig, axes = figure(1, panel=(7.0, 4.0))
    ax = axes[0]
    top = max(max(t[2] for t in r.trace) for r in runs)
    scale, unit = time_unit(top)
    for i, r in enumerate(runs):
        steps = [t[0] * r.point.steps + t[1] for t in r.trace]
        c = CYCLE[i % len(CYCLE)]
        ax.plot(steps, [t[2] * scale for t in r.trace], color=c, lw=0.6, alpha=0.6)
        ax.plot(steps, [t[3] * scale for t in r.trace], color=c, lw=1.6,
                label=f"{r.point.workload} d={r.point.degree} {r.point.link_bandwidth * 8 / 1e9:g} Gb/s")
    ax.set_xlabel("MCMC step (all rounds)")
    ax.set_ylabel(f"estimated iteration ({unit})")
    ax.set_title("Strategy search: current (thin) and best (thick)")
    legend_outside(fig)
    return fig
