"""The one plotting helper: every figure of fabricsim is drawn through it.

It owns the style (fonts, colours, dpi, panel sizes), unit-aware axes (byte sizes as `1KiB`,
`1MiB` ticks; times in ns/us/ms/s chosen from the data; bandwidths in GB/s), the rule "log axis
when the values span more than `LOG_DECADES` decades", value labels on bars, legends outside the
data, y-limits with headroom, and the "paper vs ours" markers (the paper's values as hollow black
diamonds beside ours, with the ratio ours/paper).

Figures are `matplotlib.figure.Figure` objects on the Agg canvas, made without pyplot (no global
state, no display, no backend switch); matplotlib is imported only when a figure is made, so the
CLI starts fast. Builders return the Figure (tests inspect its axes); `save` writes it. The
figures of the command line are in `report.figures`, the studies' in `experiments/*/plots.py`.

This module makes figures, scales their axes and writes files; the marks drawn on the axes (bars,
stacked bars, the paper's markers and bars, legends outside) and their colours are in
`plot_marks`, re-exported here, so figure code imports everything from `plotting`.
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from ..units import format_size
from .plot_marks import (  # noqa: F401  (re-exported: the marks, importable from here as before)
    COLORS,
    CYCLE,
    PAPER,
    PAPER_LABEL,
    bars,
    label_bars,
    legend_outside,
    paper_bars,
    paper_markers,
    ratio_text,
    stacked_bars,
)

DPI = 120
PANEL = (4.8, 3.6)  # inches per panel
LOG_DECADES = 2.0  # a value axis is logarithmic when max/min exceeds 10**LOG_DECADES
HEADROOM = 0.15  # fraction of the data range left above the tallest bar or point
FORMATS = ("png", "pdf", "svg")
STYLE = {"font.size": 9, "axes.titlesize": 9.5, "axes.labelsize": 9, "legend.fontsize": 8,
         "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.grid": True, "axes.grid.axis": "y", "grid.alpha": 0.3,
         "axes.axisbelow": True, "axes.spines.top": False, "axes.spines.right": False,
         "legend.frameon": False, "figure.dpi": DPI}
_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))


def styled(fn: Callable) -> Callable:
    """Decorator: run a figure builder under the style (`STYLE`), restoring matplotlib's settings.

    Parameters
    ----------
    fn : callable
        A function that builds and returns a Figure.

    Returns
    -------
    callable
        The same function, drawing with `STYLE`.
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context(STYLE):
            return fn(*args, **kwargs)

    return wrapper


def figure(panels: int = 1, cols: int | None = None, panel: tuple[float, float] = PANEL, sharey: bool = False):
    """A new figure on the Agg canvas with a grid of panels (constrained layout).

    Parameters
    ----------
    panels : int
        Number of axes.
    cols : int, optional
        Panels per row (default all in one row).
    panel : (float, float)
        Size of one panel, inches.
    sharey : bool
        Share the y-axis between panels.

    Returns
    -------
    (Figure, list of Axes)
        Unused grid cells are hidden and not returned.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = max(1, min(cols or panels, panels))
    rows = math.ceil(panels / cols)
    fig = Figure(figsize=(panel[0] * cols, panel[1] * rows), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    grid = np.atleast_1d(fig.subplots(rows, cols, sharey=sharey, squeeze=False)).ravel()
    for ax in grid[panels:]:
        ax.set_visible(False)
    return fig, list(grid[:panels])


# ---------------------------------------------------------------- units and scales


def spans_decades(values, decades: float = LOG_DECADES) -> bool:
    """Whether positive values span more than `decades` decades (the log-axis rule).

    Parameters
    ----------
    values : array-like of float
        Data on one axis (NaN and infinities ignored).
    decades : float
        Threshold, decades.

    Returns
    -------
    bool
        True if every finite value is > 0 and max / min > 10**decades.
    """
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0 or v.min() <= 0:
        return False
    return float(v.max() / v.min()) > 10.0 ** decades


def time_unit(seconds) -> tuple[float, str]:
    """The unit to show times in: the largest of s, ms, us, ns in which the largest value is >= 1.

    Parameters
    ----------
    seconds : array-like of float
        Times, s.

    Returns
    -------
    (float, str)
        Factor to multiply seconds by, and the unit's name (`ms`).
    """
    v = np.abs(np.asarray(seconds, dtype=float).ravel())
    v = v[np.isfinite(v)]
    top = float(v.max()) if v.size else 0.0
    for mult, name in _TIME_UNITS:
        if top >= mult:
            return 1.0 / mult, name
    return 1e9, "ns"


def size_label(nbytes: float) -> str:
    """A byte size as a tick label, without spaces (`1KiB`, `256MiB`).

    Parameters
    ----------
    nbytes : float
        Bytes.

    Returns
    -------
    str
    """
    return format_size(nbytes, digits=3).replace(" ", "")


def size_axis(ax, sizes, axis: str = "x", label: str = "message size") -> str:
    """Put byte sizes on an axis: log base 2 with ticks at powers of two when they span more than
    `LOG_DECADES` decades, else linear with a tick at each size; labels like `1KiB`.

    Parameters
    ----------
    ax : Axes
    sizes : array-like of float
        The sizes plotted, bytes.
    axis : str
        `x` or `y`.
    label : str
        Axis label.

    Returns
    -------
    str
        The scale chosen: `log` or `linear`.
    """
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    s = np.asarray(sizes, dtype=float)
    s = s[np.isfinite(s) & (s > 0)]
    a = ax.xaxis if axis == "x" else ax.yaxis
    (ax.set_xlabel if axis == "x" else ax.set_ylabel)(label)
    if s.size == 0:
        return "linear"
    if spans_decades(s):
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=2)
        lo, hi = math.floor(math.log2(s.min())), math.ceil(math.log2(s.max()))
        step = next(k for k in (1, 2, 5, 10, 20) if (hi - lo) // k + 1 <= 9)
        ticks = [2.0 ** e for e in range(lo, hi + 1) if e % step == 0]
        a.set_major_locator(FixedLocator(ticks))
        a.set_minor_locator(NullLocator())
        scale = "log"
    else:
        ticks = np.unique(s) if len(np.unique(s)) <= 9 else None
        if ticks is not None:
            a.set_major_locator(FixedLocator(ticks))
        scale = "linear"
    a.set_major_formatter(FuncFormatter(lambda v, _pos: size_label(v) if v > 0 else "0"))
    return scale


def value_axis(ax, values, label: str, axis: str = "y") -> str:
    """Label a value axis and make it logarithmic when its values span more than `LOG_DECADES`.

    Parameters
    ----------
    ax : Axes
    values : array-like of float
        Everything plotted on that axis (display units).
    label : str
        Axis label, with its unit.
    axis : str
        `x` or `y`.

    Returns
    -------
    str
        The scale chosen: `log` or `linear`.
    """
    from matplotlib.ticker import FuncFormatter

    scale = "log" if spans_decades(values) else "linear"
    (ax.set_yscale if axis == "y" else ax.set_xscale)(scale)
    if scale == "log":  # plain numbers (0.01, 1, 100), not powers of ten
        (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    (ax.set_ylabel if axis == "y" else ax.set_xlabel)(label)
    return scale


def headroom(ax, values, bottom: float | None = 0.0, frac: float = HEADROOM, axis: str = "y") -> tuple[float, float]:
    """Set an axis' limits so the tallest value (and the label above it) stays inside the axes.

    Parameters
    ----------
    ax : Axes
    values : array-like of float
        Every height plotted (bars' tops, markers), display units.
    bottom : float, optional
        Lower limit (default 0, for bars; None: 0 or the lowest value if negative; ignored on a
        log axis).
    frac : float
        Room above the top: a fraction of the range (linear) or of the decades spanned (log).
    axis : str
        `y`, or `x` for horizontal bars.

    Returns
    -------
    (float, float)
        The limits set.
    """
    get_lim, set_lim = (ax.get_ylim, ax.set_ylim) if axis == "y" else (ax.get_xlim, ax.set_xlim)
    v = np.asarray(values, dtype=float).ravel()
    v = v[np.isfinite(v)]
    if v.size == 0:
        return get_lim()
    top = float(v.max())
    if (ax.get_yscale() if axis == "y" else ax.get_xscale()) == "log":
        pos = v[v > 0]
        lo = float(pos.min()) if pos.size else 1.0
        span = max(math.log10(top / lo), 1.0) if top > 0 else 1.0
        set_lim(lo / 10 ** (0.5 * frac * span), top * 10 ** (frac * span + 0.1))
    else:
        lo = min(0.0, float(v.min())) if bottom is None else bottom
        rng = (top - lo) or abs(top) or 1.0
        set_lim(lo, top + frac * rng)
    return get_lim()


# ---------------------------------------------------------------- files


def check_path(path: str | Path, field: str = "--plot", inputs=()) -> Path:
    """Check an image path before any work is done.

    Parameters
    ----------
    path : str or Path
        Where the figure will go; the suffix picks the format.
    field : str
        The option or config field, for the error.
    inputs : iterable of str or Path
        The run's input files, which the image may not replace.

    Returns
    -------
    Path
        `path`; ConfigError naming `field` for an unknown format or anything
        `outputs.check_output_file` refuses (a folder, a link, a device, an unwritable place, an
        input).
    """
    from ..outputs import check_output_file

    p = Path(path)
    fmt = p.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ConfigError(field, str(path), f"accepted: a file ending in {', '.join('.' + f for f in FORMATS)}")
    check_output_file(path, field, inputs)
    return p


def save(fig, path: str | Path, field: str = "--plot") -> Path:
    """Write a figure (its folder is created) and close it; an existing file is replaced
    atomically (`outputs.atomic_file`: a temporary file beside it, renamed over it), never
    through a symbolic link.

    Parameters
    ----------
    fig : Figure
    path : str or Path
        The file; its suffix picks the format (png, pdf, svg). PNG and PDF carry no date or
        version, so the same figure gives the same bytes.
    field : str
        Named in the error when the file cannot be written.

    Returns
    -------
    Path
        `path`; ConfigError naming `field` when it cannot be written.
    """
    from ..outputs import atomic_file

    p = check_path(path, field)
    fmt = p.suffix.lower().lstrip(".")
    meta = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Producer": None}, "svg": {"Date": None}}[fmt]
    with atomic_file(p, field, binary=True) as fh:
        fig.savefig(fh, format=fmt, dpi=DPI, bbox_inches="tight", metadata=meta)
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:  # a figure made through pyplot: release it
        plt.close(fig)
    return p
