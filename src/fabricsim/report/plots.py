"""Plots of training simulations, drawn through `report.plotting` (the one plotting helper)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..engine.result import BREAKDOWN, TrainResult
from .plotting import (
    COLORS,
    figure,
    headroom,
    legend_outside,
    save,
    stacked_bars,
    styled,
    time_unit,
)

__all__ = ["COLORS", "breakdown_figure", "plot_breakdown"]


def _segment_label(comp: str) -> str:
    return {"compute": "compute", "idle": "idle (bubbles, waiting)"}.get(comp, f"exposed {comp}")


@styled
def breakdown_figure(res: TrainResult, title: str = ""):
    """Stacked bars of the time per iteration.

    One bar for all NPUs (the mean) and, with several pipeline stages, one per stage (mean over
    its NPUs); segments compute, exposed MP/PP/DP/IO/other communication, idle; the time unit
    (ns/us/ms/s) is chosen from the tallest bar; totals written above the bars.

    Parameters
    ----------
    res : TrainResult
        The run.
    title : str
        Plot title (default "iteration time breakdown").

    Returns
    -------
    Figure
    """
    stages = res.stage_breakdown()
    bars = [("all NPUs", res.mean_breakdown())]
    if len(stages) > 1:
        bars += [(f"stage {s}", b) for s, b in stages.items()]
    n_it = max(res.graph.n_iterations, 1)
    secs = {comp: np.array([b[comp] / n_it for _, b in bars]) for comp in BREAKDOWN}
    scale, unit = time_unit(sum(secs.values()))
    fig, (ax,) = figure(panel=(max(4.5, 1.0 + 0.9 * len(bars)), 4.2))
    x = np.arange(len(bars))
    totals = stacked_bars(ax, x, {c: v * scale for c, v in secs.items()},
                          labels={c: _segment_label(c) for c in BREAKDOWN})
    ax.set_xticks(x, [name for name, _ in bars], rotation=30 if len(bars) > 4 else 0)
    ax.set_ylabel(f"time per iteration ({unit})")
    ax.set_title(title or "iteration time breakdown")
    headroom(ax, totals)
    legend_outside(ax)
    return fig


def plot_breakdown(res: TrainResult, path: str | Path, title: str = "") -> Path:
    """Write `breakdown_figure(res, title)` as an image.

    Parameters
    ----------
    res : TrainResult
        The run.
    path : str or Path
        The image file (its folder is created; the suffix picks the format, e.g. `.png`).
    title : str
        Plot title (default "iteration time breakdown").

    Returns
    -------
    Path
        `path`.
    """
    return save(breakdown_figure(res, title), path, field="output.plot")
