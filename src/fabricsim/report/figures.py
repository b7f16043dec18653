"""The command line's figures, drawn through `report.plotting`: busbw against size
(`fabricsim collective --plot`) and per-link utilization (`fabricsim traffic --plot`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .plotting import (
    CYCLE,
    figure,
    headroom,
    legend_outside,
    size_axis,
    styled,
    value_axis,
)

__all__ = ["busbw_figure", "utilization_figure"]


@styled
def busbw_figure(series: Mapping[str, tuple[Sequence[float], Sequence[float]]], title: str = ""):
    """Bus bandwidth against message size, one line per series, a marker at each measured size.

    Parameters
    ----------
    series : mapping
        Label -> (sizes in bytes, busbw in bytes/s).
    title : str

    Returns
    -------
    Figure
        x: sizes (log base 2 when they span decades); y: busbw in GB/s (1e9 bytes/s).
    """
    fig, (ax,) = figure(panel=(6.4, 4.0))
    sizes, ys = [], []
    for k, (name, (s, bw)) in enumerate(series.items()):
        y = np.asarray(bw, dtype=float) / 1e9
        y = np.where(np.isfinite(y), y, np.nan)  # a zero time has no bandwidth to draw
        ax.plot(np.asarray(s, dtype=float), y, marker="o", ms=3.5, color=CYCLE[k % len(CYCLE)], label=name)
        sizes.extend(s)
        ys.extend(y)
    size_axis(ax, sizes)
    ax.grid(True, axis="both")
    value_axis(ax, ys, "busbw (GB/s)")
    headroom(ax, ys, bottom=None if ax.get_yscale() == "log" else 0.0)
    ax.set_title(title)
    legend_outside(ax)
    return fig


@styled
def utilization_figure(utilization, names: Sequence[str], title: str = "", busiest: int = 10):
    """Per-link utilization: the busiest links by name (left) and every link, busiest first (right).

    Parameters
    ----------
    utilization : array-like of float
        Bytes carried / (bandwidth x makespan) per link, 0..1.
    names : sequence of str
        A name per link (`src->dst`).
    title : str
    busiest : int
        How many of the busiest links to name.

    Returns
    -------
    Figure
        Two panels, in percent: horizontal bars of the busiest links (values written, names on
        the y-axis, busiest on top), and the sorted profile of all links with the mean (ties in
        link order).
    """
    u = np.asarray(utilization, dtype=float) * 100.0
    order = np.argsort(-u, kind="stable")
    carried = int((u > 0).sum())
    top = order[:max(1, min(busiest, carried))] if len(u) else order
    fig, (left, right) = figure(2, panel=(4.6, max(3.2, 0.25 * len(top) + 1.2)))
    y = np.arange(len(top))[::-1]  # busiest on top
    c = left.barh(y, u[top], 0.7, color=CYCLE[3], label="busiest links")
    left.bar_label(c, labels=[f"{v:.1f}%" for v in u[top]], padding=2, fontsize=6.5)
    left.set_yticks(y, [names[i] for i in top])
    left.grid(True, axis="x")
    left.grid(False, axis="y")
    left.set_xlabel("utilization (%)")
    left.set_title(f"{len(top)} busiest links (src->dst node ids)")
    headroom(left, u[top], axis="x", frac=0.25)
    ranks = np.arange(len(u))
    right.bar(ranks, u[order], 1.0, color=CYCLE[0], label="every link, busiest first")
    mean = float(u.mean()) if len(u) else 0.0
    right.axhline(mean, color="black", ls="--", lw=1, label=f"mean {mean:.1f}%")
    right.set_xlim(-0.5, max(len(u), 1) - 0.5)
    right.set_xlabel(f"links by utilization ({carried} of {len(u)} carried traffic)")
    right.set_ylabel("utilization (% of bandwidth x makespan)")
    right.set_title("all links")
    headroom(right, list(u) + [mean])
    fig.suptitle(title, fontsize=9.5)
    legend_outside(fig)
    return fig
