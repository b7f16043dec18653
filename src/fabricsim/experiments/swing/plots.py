"""The Swing reproduction's figures: goodput per torus beside the goodputs the paper states, and
Swing's gain per size beside the paper's gains (per shape, and over the bandwidth sweep)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .config import size_label
from .results import CaseResult, GainRow, Reproduction, bandwidth_label


def _size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ticks = list(sizes)[::2]
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(s).replace("iB", "") for s in ticks], rotation=45, fontsize=7)
    ax.minorticks_off()


_STYLES = {"swing": {"color": "C3", "lw": 2.2}, "recdoub": {"color": "C0"}, "bucket": {"color": "C2"},
           "rings": {"color": "C1"}, "mirrored": {"color": "C4"}}


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
        goodput_SHAPE.png per base case, gains_summary.png (every base case),
        gains_bandwidth_SHAPE.png (the bandwidth sweep, if it ran).
    """
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    files = [_goodput_plot(plt, rep, case, out) for case in rep.cases if case.base]
    base = [c for c in rep.cases if c.base]
    if base:
        files.append(_gain_grid(plt, rep, base, out / "gains_summary.png",
                                lambda c: f"{c.shape}: Swing gain vs best other (%)"))
    swept = {c.shape for c in rep.cases if not c.base}
    sweep = sorted((c for c in rep.cases if c.shape in swept), key=lambda c: c.bandwidth_Bps)
    if sweep:
        files.append(_gain_grid(plt, rep, sweep, out / f"gains_bandwidth_{sweep[0].shape}.png",
                                lambda c: f"{c.shape} at {bandwidth_label(c.bandwidth_Bps)}: gain (%)"))
    return files


def _goodput_plot(plt, rep: Reproduction, case: CaseResult, out: Path) -> Path:
    """One case's goodput curves, the peak, and the goodputs the paper states."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for c in case.entries:
        ax.plot(case.sizes, c.goodput_gbps, marker="o", ms=3, label=c.label, **_STYLES.get(c.key, {}))
    ax.axhline(case.peak_gbps, color="k", ls=":", lw=1, label=f"peak {case.peak_gbps:g} Gb/s")
    pts = [g for g in rep.goodputs if g.shape == case.shape]
    for g in pts:
        ax.plot([g.size], [g.paper_gbps], marker="x", color=_STYLES.get(g.entry, {}).get("color", "k"), ms=8, mew=2, ls="none")
    if pts:
        ax.plot([], [], marker="x", color="k", ls="none", label="paper (values stated)")
    _size_axis(ax, case.sizes)
    ax.set_xlabel("vector size")
    ax.set_ylabel("goodput (Gb/s)")
    ax.set_title(f"all-reduce on a {case.shape} torus, {bandwidth_label(case.bandwidth_Bps)} links (fabricsim model)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = out / f"goodput_{case.shape}.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


def _gain_grid(plt, rep: Reproduction, cases, path: Path, title) -> Path:
    """One panel per case: our gain per size, the paper's points with their ranges."""
    paper_by_case: dict[str, list[GainRow]] = {}
    for g in rep.gains:
        paper_by_case.setdefault(g.case, []).append(g)
    cols = min(3, len(cases))
    rows_n = math.ceil(len(cases) / cols)
    fig, axes = plt.subplots(rows_n, cols, figsize=(4.6 * cols, 3.3 * rows_n), squeeze=False)
    for ax, case in zip(axes.flat, cases):
        g = np.array([np.nan if x is None else x for x in case.gain_pct], dtype=float)
        ax.plot(case.sizes, g, color="C3", marker="o", ms=3, label="ours")
        rows = paper_by_case.get(case.name, [])
        if rows:
            ax.errorbar([r.size for r in rows], [r.paper_pct for r in rows],
                        yerr=[[r.paper_pct - r.paper_lo for r in rows], [r.paper_hi - r.paper_pct for r in rows]],
                        fmt="s", color="k", ms=4, label="paper")
        ax.axhline(0, color="k", lw=0.7)
        _size_axis(ax, case.sizes)
        ax.set_title(title(case), fontsize=9)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(cases):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
