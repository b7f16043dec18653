"""The marks every figure draws through `report.plotting`: bars with their values written above,
stacked bars, the paper's values beside ours (hollow diamonds or hatched bars, with the ratio
ours / paper) and legends outside the data, with the series colours they use (`COLORS`, `CYCLE`)
and the paper's marker style (`PAPER`).

Split from `plotting` (which re-exports every name here, so figure code keeps one import): these
draw on axes a caller already has, while `plotting` makes the figures, scales their axes and
writes the files. Like `plotting`, nothing here imports matplotlib at import time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

# the training breakdown's segments, the same in every figure that stacks them
COLORS = {"compute": "#4C72B0", "MP": "#DD8452", "PP": "#55A868", "DP": "#C44E52", "IO": "#8172B3",
          "other": "#937860", "idle": "#CCCCCC"}
CYCLE = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C",
         "#CCB974", "#64B5CD")
# the paper's values: hollow diamonds, black unless a series colour is given
PAPER = {"marker": "D", "markerfacecolor": "none", "markeredgecolor": "black", "markeredgewidth": 1.5,
         "markersize": 7, "linestyle": "none", "zorder": 5}
PAPER_LABEL = "paper (hollow diamonds; ratio = ours / paper)"


# ---------------------------------------------------------------- drawing


def label_bars(ax, container, values, fmt: Callable[[float], str] = "{:.3g}".format):
    """Write each bar's value above it.

    Parameters
    ----------
    ax : Axes
    container : BarContainer
        The bars (for stacks: the top segment, so labels sit on the stack).
    values : sequence of float
        What to write (display units), one per bar.
    fmt : callable
        Value -> text.

    Returns
    -------
    list of Annotation
    """
    return ax.bar_label(container, labels=[fmt(v) for v in values], padding=2, fontsize=6.5)


def bars(ax, x, heights, width: float = 0.6, fmt: Callable[[float], str] | None = "{:.3g}".format, **kw):
    """Bars with their values written above.

    Parameters
    ----------
    ax : Axes
    x : sequence of float
        Bar centres.
    heights : sequence of float
        Display units.
    width : float
    fmt : callable or None
        Value -> label text (None: no labels).
    **kw
        Passed to `Axes.bar` (color, label, hatch, ...).

    Returns
    -------
    BarContainer
    """
    c = ax.bar(x, heights, width, **kw)
    if fmt is not None:
        label_bars(ax, c, heights, fmt)
    return c


def stacked_bars(ax, x, segments: Mapping[str, Sequence[float]], width: float = 0.6,
                 colors: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None,
                 fmt: Callable[[float], str] | None = "{:.3g}".format) -> np.ndarray:
    """Stacked bars (segments in the mapping's order, all-zero ones skipped), totals written above.
    Stacks stay on a linear axis: segments must add up visually.

    Parameters
    ----------
    ax : Axes
    x : sequence of float
        Bar centres.
    segments : mapping
        Segment name -> heights (display units), one per bar.
    width : float
    colors : mapping, optional
        Segment name -> colour (default `COLORS`, then `CYCLE`).
    labels : mapping, optional
        Segment name -> legend label (default the name).
    fmt : callable or None
        Total -> label text (None: no labels).

    Returns
    -------
    float array
        The totals.
    """
    colors = {**COLORS, **(colors or {})}
    bottom = np.zeros(len(x))
    top = None
    for k, (name, vals) in enumerate(segments.items()):
        v = np.asarray(vals, dtype=float)
        if not np.any(v > 0):
            continue
        top = ax.bar(x, v, width, bottom=bottom, color=colors.get(name, CYCLE[k % len(CYCLE)]),
                     label=(labels or {}).get(name, name))
        bottom = bottom + v
    if top is not None and fmt is not None:
        label_bars(ax, top, bottom, fmt)
    return bottom


def paper_markers(ax, x, paper, ours=None, color: str = "black", label: str | None = PAPER_LABEL,
                  ratio_fmt: str = "x{:.2f}"):
    """The paper's values as hollow diamonds, with ours / paper written beside each.

    Parameters
    ----------
    ax : Axes
    x : sequence of float
        Positions (bar centres, sizes).
    paper : sequence of float or None
        The paper's values (display units); None: the paper gives none there (skipped).
    ours : sequence of float or None, optional
        Our values at the same positions, for the ratio.
    color : str
        Edge colour of the diamonds.
    label : str, optional
        Legend label.
    ratio_fmt : str
        Format of the ratio text.

    Returns
    -------
    Line2D or None
        The markers (None when the paper gives no value).
    """
    pts = [(i, float(xi), float(p)) for i, (xi, p) in enumerate(zip(x, paper)) if p is not None and np.isfinite(p)]
    if not pts:
        return None
    line, = ax.plot([p[1] for p in pts], [p[2] for p in pts], **{**PAPER, "markeredgecolor": color}, label=label)
    line.set_gid("paper")
    if ours is not None:
        for i, xi, p in pts:
            o = ours[i]
            if o is not None and p != 0 and np.isfinite(o):
                ax.annotate(ratio_fmt.format(o / p), (xi, p), xytext=(6, -3), textcoords="offset points",
                            fontsize=6.5, color=color)
    return line


def paper_bars(ax, x, ours, paper, width: float = 0.8, color: str = CYCLE[0],
               fmt: Callable[[float], str] = "{:.3g}".format, label: str = "fabricsim"):
    """Ours and the paper's values side by side: ours solid, the paper's hatched (white with black
    hatching), both written above their bars.

    Parameters
    ----------
    ax : Axes
    x : sequence of float
        Group centres.
    ours : sequence of float
        Our values (display units).
    paper : sequence of float or None
        The paper's (None: no paper bar there).
    width : float
        Width of the pair.
    color : str
        Our bars' colour.
    fmt : callable
        Value -> label text.
    label : str
        Legend label of our bars.

    Returns
    -------
    (BarContainer, BarContainer or None)
        Ours, the paper's.
    """
    x = np.asarray(x, dtype=float)
    mine = bars(ax, x - width / 4, ours, width / 2, fmt, color=color, label=label)
    idx = [i for i, p in enumerate(paper) if p is not None and np.isfinite(p)]
    if not idx:
        return mine, None
    theirs = ax.bar(x[idx] + width / 4, [paper[i] for i in idx], width / 2, color="white", edgecolor="black",
                    hatch="////", linewidth=0.8, label="paper")
    for patch in theirs:
        patch.set_gid("paper")
    label_bars(ax, theirs, [paper[i] for i in idx], fmt)
    return mine, theirs


def ratio_text(ours, paper, fmt: str = "{:.2f}") -> str:
    """Ours / paper as text (`x0.93`), `-` without a paper value.

    Parameters
    ----------
    ours, paper : float or None

    Returns
    -------
    str
    """
    if ours is None or paper is None or not paper or not np.isfinite(ours):
        return "-"
    return "x" + fmt.format(ours / paper)


def legend_outside(target, handles=None, labels=None, order: Sequence[str] = ()):
    """A legend outside the data: right of the axes (Axes) or of all panels (Figure); one entry per
    label.

    Parameters
    ----------
    target : Axes or Figure
    handles, labels : sequences, optional
        Default: every labelled artist of the axes (of all axes for a Figure).
    order : sequence of str
        Labels to list first, in this order (the rest follow as found).

    Returns
    -------
    Legend or None
        None when nothing is labelled.
    """
    from matplotlib.axes import Axes

    is_axes = isinstance(target, Axes)
    if handles is None:
        axes = [target] if is_axes else [a for a in target.axes if a.get_visible()]
        seen: dict = {}
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                seen.setdefault(lab, h)
        labels = [lab for lab in order if lab in seen] + [lab for lab in seen if lab not in order]
        handles = [seen[lab] for lab in labels]
    if not handles:
        return None
    if is_axes:
        return target.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    return target.legend(handles, labels, loc="outside right upper")
