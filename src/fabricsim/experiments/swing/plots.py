"""The Swing reproduction's figures, drawn through `report.plotting`: goodput per topology (torus or
2-D HyperX) beside the goodputs the paper states, and Swing's gain per size beside the paper's gains
(per shape, and over the bandwidth sweep)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...report.plotting import (
    CYCLE,
    PAPER,
    PAPER_LABEL,
    figure,
    headroom,
    legend_outside,
    paper_markers,
    save,
    size_axis,
    styled,
    value_axis,
)
from .results import CaseResult, GainRow, Reproduction, bandwidth_label

_STYLES = {"swing": {"color": CYCLE[3], "lw": 2.2}, "recdoub": {"color": CYCLE[0]}, "bucket": {"color": CYCLE[2]},
           "rings": {"color": CYCLE[1]}, "mirrored": {"color": CYCLE[4]}}
FAMILIES = {"torus": "torus", "hyperx": "2-D HyperX"}  # a shape's `topology` as the title names it


def family(case: CaseResult) -> str:
    """The topology family of a case, as titles name it.

    Parameters
    ----------
    case : CaseResult

    Returns
    -------
    str
        `torus` or `2-D HyperX` (an unknown family: its own name).
    """
    return FAMILIES.get(case.topology, case.topology)


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
        goodput_SHAPE.png per base case, gains_summary.png (every base case),
        gains_bandwidth_SHAPE.png (the bandwidth sweep, if it ran).
    """
    out = Path(out)
    files = [save(goodput_figure(rep, case), out / f"goodput_{case.shape}.png", "--out")
             for case in rep.cases if case.base]
    base = [c for c in rep.cases if c.base]
    if base:
        files.append(save(gain_figure(rep, base, lambda c: f"{c.shape} ({family(c)}): Swing gain vs best other (%)"),
                          out / "gains_summary.png", "--out"))
    swept = {c.shape for c in rep.cases if not c.base}
    sweep = sorted((c for c in rep.cases if c.shape in swept), key=lambda c: c.bandwidth_Bps)
    if sweep:
        files.append(save(gain_figure(rep, sweep, lambda c: f"{c.shape} at {bandwidth_label(c.bandwidth_Bps)}: gain (%)"),
                          out / f"gains_bandwidth_{sweep[0].shape}.png", "--out"))
    return files


@styled
def goodput_figure(rep: Reproduction, case: CaseResult):
    """One case's goodput curves (log y when they span decades, as they do from 32 B to GiB), the
    peak, and the goodputs the paper states as hollow diamonds (in the algorithm's colour) with
    ours / paper.

    Parameters
    ----------
    rep : Reproduction
    case : CaseResult

    Returns
    -------
    Figure
        Titled with the case's topology family (torus or 2-D HyperX).
    """
    fig, (ax,) = figure(panel=(7.0, 4.2))
    ys = [case.peak_gbps]
    for c in case.entries:
        ax.plot(case.sizes, c.goodput_gbps, marker="o", ms=3, label=c.label, **_STYLES.get(c.key, {}))
        ys += list(c.goodput_gbps)
    ax.axhline(case.peak_gbps, color="k", ls=":", lw=1, label=f"peak {case.peak_gbps:g} Gb/s")
    pts = [g for g in rep.goodputs if g.shape == case.shape]
    for g in pts:
        paper_markers(ax, [g.size], [g.paper_gbps], [g.ours_gbps], color=_STYLES.get(g.entry, {}).get("color", "k"),
                      label=None)
        ys.append(g.paper_gbps)
    if pts:
        ax.plot([], [], **PAPER, label=PAPER_LABEL)
    size_axis(ax, case.sizes, label="vector size")
    ax.grid(True, axis="both")
    value_axis(ax, ys, "goodput (Gb/s)")
    headroom(ax, ys, bottom=None)
    ax.set_title(f"all-reduce on the {case.shape} {family(case)}, {bandwidth_label(case.bandwidth_Bps)} links "
                 "(fabricsim model)")
    legend_outside(ax)
    return fig


@styled
def gain_figure(rep: Reproduction, cases, title):
    """One panel per case: our gain per size, the paper's points (hollow diamonds) with their ranges.

    Parameters
    ----------
    rep : Reproduction
    cases : sequence of CaseResult
    title : callable
        CaseResult -> panel title.

    Returns
    -------
    Figure
    """
    paper_by_case: dict[str, list[GainRow]] = {}
    for g in rep.gains:
        paper_by_case.setdefault(g.case, []).append(g)
    fig, axes = figure(len(cases), cols=min(3, len(cases)), panel=(4.4, 3.2))
    for ax, case in zip(axes, cases):
        g = np.array([np.nan if x is None else x for x in case.gain_pct], dtype=float)
        ax.plot(case.sizes, g, color=_STYLES["swing"]["color"], marker="o", ms=3, label="ours")
        rows = paper_by_case.get(case.name, [])
        if rows:
            ax.errorbar([r.size for r in rows], [r.paper_pct for r in rows],
                        yerr=[[r.paper_pct - r.paper_lo for r in rows], [r.paper_hi - r.paper_pct for r in rows]],
                        fmt="none", ecolor="black", elinewidth=0.8, capsize=2)
            paper_markers(ax, [r.size for r in rows], [r.paper_pct for r in rows], label="paper (range: bars)")
        ax.axhline(0, color="k", lw=0.7)
        size_axis(ax, case.sizes, label="vector size")
        ax.set_ylabel("gain (%)")
        ax.grid(True, axis="both")
        ax.set_title(title(case), fontsize=8.5)
    legend_outside(fig)
    return fig
