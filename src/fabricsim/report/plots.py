"""Plots of training simulations (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

from ..engine.result import BREAKDOWN, TrainResult

COLORS = {"compute": "#4C72B0", "MP": "#DD8452", "PP": "#55A868", "DP": "#C44E52", "IO": "#8172B3",
          "other": "#937860", "idle": "#CCCCCC"}


def plot_breakdown(res: TrainResult, path: str | Path, title: str = "") -> Path:
    """Stacked bars of the time per iteration, written as an image.

    One bar for all NPUs (the mean) and, with several pipeline stages, one per stage (mean over
    its NPUs); segments compute, exposed MP/PP/DP/IO/other communication, idle; in ms below a 10 s
    makespan, else s.

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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = res.stage_breakdown()
    bars = [("all NPUs", res.mean_breakdown())]
    if len(stages) > 1:
        bars += [(f"stage {s}", b) for s, b in stages.items()]
    n_it = max(res.graph.n_iterations, 1)
    scale, unit = (1e3, "ms") if res.makespan < 10 else (1.0, "s")
    fig, ax = plt.subplots(figsize=(max(5.0, 1.0 + 0.9 * len(bars)), 4.5))
    x = range(len(bars))
    bottom = [0.0] * len(bars)
    for comp in BREAKDOWN:
        vals = [b[comp] / n_it * scale for _, b in bars]
        if not any(v > 0 for v in vals):
            continue
        label = {"compute": "compute", "idle": "idle (bubbles, waiting)"}.get(comp, f"exposed {comp}")
        ax.bar(x, vals, bottom=bottom, color=COLORS[comp], label=label, width=0.6)
        bottom = [a + v for a, v in zip(bottom, vals)]
    ax.set_xticks(list(x), [name for name, _ in bars], rotation=30 if len(bars) > 4 else 0)
    ax.set_ylabel(f"time per iteration ({unit})")
    ax.set_title(title or "iteration time breakdown", fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
