"""Figures of a sweep's results (Parquet, a row per point), drawn through `report.plotting`: `line`
(y against a numeric x), `bar` (y per x category, values written), `breakdown` (stacked
`compute_s`, `exposed_*_s`, `idle_s` per x category, totals written), `pareto` (y against x, the
frontier minimising both as a step line); a series per hue value, a panel per facet value. Points
with an error are skipped; points sharing their x, hue and facet are drawn as their mean. Units come
from the column's suffix: `_s` (s, ms, us or ns), `_bytes` (`1MiB` ticks), `_Bps` (GB/s), `_flops`
(FLOP with a decimal prefix); other columns are labelled by their name.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from ..errors import ConfigError
from ..report import plotting as P
from ..units import format_bandwidth, format_time

__all__ = ["KINDS", "SEGMENTS", "load_results", "pareto_front", "plot_results", "results_figure"]

KINDS = ("line", "bar", "breakdown", "pareto")
# the training breakdown's columns, stacked bottom to top (other exposed_*_s columns go before idle)
SEGMENTS = ("compute_s", "exposed_MP_s", "exposed_PP_s", "exposed_DP_s", "exposed_IO_s", "exposed_other_s", "idle_s")
_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def pareto_front(xs, ys) -> list[int]:
    """The points no other point beats on both coordinates, both minimised.

    A point is on the front when no other point has x and y both <= its own with one of them
    smaller; equal points are all on it. Points with a NaN or infinite coordinate are ignored.

    Parameters
    ----------
    xs, ys : sequences of float
        The coordinates (any units), one pair per point.

    Returns
    -------
    list of int
        Indices of the front's points, sorted by x (then y, then index): y falls along it.
    """
    pts = sorted((float(a), float(b), i) for i, (a, b) in enumerate(zip(xs, ys))
                 if math.isfinite(float(a)) and math.isfinite(float(b)))
    front, best, k = [], math.inf, 0
    while k < len(pts):  # pts[k:j]: one distinct (x, y); beaten only by an earlier y <= its y
        j = k
        while j < len(pts) and pts[j][:2] == pts[k][:2]:
            j += 1
        if pts[k][1] < best:
            front += [p[2] for p in pts[k:j]]
            best = pts[k][1]
        k = j
    return front


def load_results(path: str | Path, field: str = "--results", notes: list | None = None):
    """Read a sweep's results: a Parquet file or a folder of Parquet part files.

    Parameters
    ----------
    path : str or Path
        The file or folder.
    field : str
        The option named in errors.
    notes : list, optional
        Receives one-line notes on what a folder held but the table leaves out (damaged parts,
        files that are not parts of the sweep, repeated rows; `sweep.store`).

    Returns
    -------
    pyarrow.Table
        Every point (rows with an error included); ConfigError naming `field` when the path is
        missing, not Parquet, or a folder without one readable part.
    """
    import pyarrow as pa

    from .run import read_results

    p = Path(path)
    accepted = "accepted: a Parquet file or a folder of Parquet part files"
    if not p.exists():
        raise ConfigError(field, str(path), f"no such file or folder; {accepted}")
    mine: list[str] = []
    try:
        table = read_results(p, mine)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise ConfigError(field, str(path), f"cannot be read ({' '.join(str(e).split())[:200]}); {accepted}") from None
    if p.is_dir() and not table.column_names:
        why = f"; {len(mine)} files left out ({mine[0][6:]})" if mine else ""
        raise ConfigError(field, str(path), f"holds no results (no readable part file{why}); {accepted}")
    if notes is not None:
        notes += mine
    return table


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _key(v):
    return (0, v, "") if _num(v) else (1, 0, "" if v is None else str(v))


def _scale(col: str, values) -> tuple[str, float, bool]:
    """(axis label, factor from stored to shown units, whether the axis shows byte sizes)."""
    top = max((abs(v) for v in values if _num(v)), default=0.0)
    if col.endswith("_bytes"):
        return col[:-6], 1.0, True
    if col.endswith("_Bps"):
        return f"{col[:-4]} (GB/s)", 1e-9, False
    if col.endswith("_flops"):
        mult, pre = next(((m, p) for m, p in _SI if top >= m), (1.0, ""))
        return f"{col[:-6]} ({pre}FLOP)", 1.0 / mult, False
    if col.endswith("_s") and len(col) > 2:
        factor, unit = P.time_unit([top])
        return f"{col[:-2]} ({unit})", factor, False
    return col, 1.0, False


def _text(col: str, v) -> str:
    """A value of a column as a category or legend label, in the column's unit."""
    if not _num(v):
        return "null" if v is None else str(v)
    if col.endswith("_bytes"):
        return P.size_label(v)
    if col.endswith("_s"):
        return format_time(v)
    if col.endswith("_Bps"):
        return format_bandwidth(v)
    return f"{v:g}" if isinstance(v, float) else str(v)


def _axis(ax, scale: tuple[str, float, bool], shown, which: str, log: bool, auto: bool = True) -> None:
    """Label an axis in its unit; log when `log`, or (with `auto`) when the values span decades."""
    from matplotlib.ticker import FuncFormatter

    label, _, is_bytes = scale
    if auto:
        done = (P.size_axis(ax, shown, which, label) if is_bytes else P.value_axis(ax, shown, label, which)) == "log"
    else:
        (ax.set_xlabel if which == "x" else ax.set_ylabel)(label)
        done = False
    if log and not done:
        (ax.set_xscale if which == "x" else ax.set_yscale)("log", **({"base": 2} if is_bytes else {}))
    if (log and not done) or (is_bytes and not auto):
        fmt = (lambda v, _p: P.size_label(v) if v > 0 else "0") if is_bytes else (lambda v, _p: f"{v:g}")
        (ax.xaxis if which == "x" else ax.yaxis).set_major_formatter(FuncFormatter(fmt))


def _mean(rows, col) -> float:
    v = [float(r[col]) for r in rows if _num(r[col])]
    return sum(v) / len(v) if v else math.nan


def _check(table, x, y, hue, facet, kind, logx, logy) -> list[str]:
    """Validate the options against the results; returns the breakdown's columns (else [])."""
    import pyarrow as pa

    if kind not in KINDS:
        raise ConfigError("--kind", kind, f"accepted: {', '.join(KINDS)}")
    names = table.column_names
    if y is None and kind != "breakdown":
        raise ConfigError("--y", None, f"accepted: a column of the results with --kind {kind}: {', '.join(names)}")
    for opt, col in (("--x", x), ("--y", y), ("--hue", hue), ("--facet", facet)):
        if col is not None and col not in names:
            raise ConfigError(opt, col, f"no such column; accepted: {', '.join(names)}")
    numeric = [c for c in names if pa.types.is_integer(table.schema.field(c).type)
               or pa.types.is_floating(table.schema.field(c).type)]
    must = {"line": (("--x", x), ("--y", y)), "pareto": (("--x", x), ("--y", y)), "bar": (("--y", y),)}.get(kind, ())
    for opt, col in must:
        if col not in numeric:
            raise ConfigError(opt, col, f"is not numeric ({table.schema.field(col).type}); accepted with "
                              f"--kind {kind}: a numeric column: {', '.join(numeric)}")
    for opt, flag, ok in (("--logx", logx, ("line", "pareto")), ("--logy", logy, ("line", "bar", "pareto"))):
        if flag and kind not in ok:
            raise ConfigError(opt, f"with --kind {kind}", f"accepted: {opt} with --kind {' or '.join(ok)}")
    if kind != "breakdown":
        return []
    if y not in (None, "iteration_s"):
        raise ConfigError("--y", y, "accepted with --kind breakdown: iteration_s or no --y (the bars stack "
                          "compute_s, exposed_*_s, idle_s)")
    extra = sorted(c for c in names if c.startswith("exposed_") and c.endswith("_s") and c not in SEGMENTS)
    segs = [c for c in SEGMENTS[:-1] + tuple(extra) + SEGMENTS[-1:] if c in names and c in numeric]
    if not segs:
        raise ConfigError("--kind", kind, f"the results have none of the columns {', '.join(SEGMENTS)}; accepted: "
                          f"line, bar, pareto")
    return segs


@P.styled
def results_figure(table, x: str, y: str | None, hue: str | None = None, facet: str | None = None,
                   kind: str = "line", logx: bool = False, logy: bool = False, notes: list | None = None,
                   name: str = "results"):
    """Draw a sweep's results (see `plot_results` for the kinds and options).

    Parameters
    ----------
    table : pyarrow.Table
        The results (`load_results`); rows with a non-empty `error` are skipped.
    x, y, hue, facet : str or None
        Column names (y may be None with `kind="breakdown"`).
    kind : str
        One of `KINDS`.
    logx, logy : bool
        Force logarithmic axes.
    notes : list, optional
        Receives one-line notes (points skipped, points averaged).
    name : str
        The results' path, named in the error when no point is without an error.

    Returns
    -------
    Figure
        One panel per facet value; ConfigError naming the option for a bad option or no points.
    """
    segs = _check(table, x, y, hue, facet, kind, logx, logy)
    notes = [] if notes is None else notes
    keep = [c for c in dict.fromkeys((x, y, hue, facet, "error", *segs)) if c in table.column_names]
    every = table.select(keep).to_pylist()
    rows = [r for r in every if not r.get("error")]
    if len(rows) < len(every):
        notes.append(f"note: skipped {len(every) - len(rows)} of {len(every)} points with an error")
    if not rows:
        raise ConfigError("--results", name, f"has no point without an error ({len(every)} with one); "
                          "accepted: results with at least one point without an error")
    if kind != "breakdown" and not any(_num(r[y]) for r in rows):
        raise ConfigError("--y", y, "has no values in the points without an error; accepted: a column with values")
    uniq = lambda col: sorted({r[col] for r in rows}, key=_key) if col else [None]  # noqa: E731
    hues, facets = uniq(hue), uniq(facet)
    sx, sy = _scale(x, [r[x] for r in rows]), _scale(y, [r[y] for r in rows]) if y else None
    fig, axes = P.figure(len(facets), cols=3, panel=(5.4, 3.8) if kind in ("line", "pareto") else
                         (max(4.8, 0.5 * len(uniq(x)) * len(hues) + 1.5), 3.8))
    shared = 0
    for fv, ax in zip(facets, axes):
        panel = [r for r in rows if facet is None or r[facet] == fv]
        series = [(k, h, [r for r in panel if hue is None or r[hue] == h]) for k, h in enumerate(hues)]
        if kind == "breakdown":
            shared += _breakdown(ax, panel, x, hue, hues, uniq(x), segs)
        elif kind == "bar":
            shared += _bar(ax, series, x, y, hue, uniq(x), sy, logy)
        else:
            shared += _points(ax, series, x, y, hue, sx, sy, kind)
            shown = lambda col, s: [r[col] * s[1] for r in rows if _num(r[col])]  # noqa: E731
            _axis(ax, sx, shown(x, sx), "x", logx)
            _axis(ax, sy, shown(y, sy), "y", logy)
            ax.grid(True, axis="both")
        if facet:
            ax.set_title(f"{facet} = {_text(facet, fv)}")
    if shared:
        where = ", ".join(c for c in (x, hue, facet) if c)
        notes.append(f"note: {shared} points share their {where} with others; drawn as the mean of each group "
                     f"(split them with --hue or --facet)")
    order = [_label(c) for c in segs] if segs else [_text(hue, h) for h in hues if hue] + ["Pareto front"]
    legend = P.legend_outside(axes[0] if len(axes) == 1 else fig, order=order)
    if legend is not None and hue and kind != "breakdown":
        legend.set_title(hue)
    return fig


def _points(ax, series, x, y, hue, sx, sy, kind) -> int:
    """Lines (the mean y at each x) or a scatter with its Pareto front; returns the points averaged."""
    shared, pts = 0, []
    for k, h, rows in series:
        at: dict = {}
        for r in (r for r in rows if _num(r[x]) and _num(r[y])):
            at.setdefault(r[x], []).append(r)
        style = {"color": P.CYCLE[k % len(P.CYCLE)], "label": _text(hue, h) if hue else None}
        if kind == "line" and at:
            shared += sum(len(g) for g in at.values() if len(g) > 1)
            ax.plot([v * sx[1] for v in sorted(at)], [_mean(at[v], y) * sy[1] for v in sorted(at)], marker="o",
                    ms=3.5, **style)
        elif at:
            mine = [(r[x] * sx[1], r[y] * sy[1]) for g in at.values() for r in g]
            ax.scatter(*zip(*mine), s=18, zorder=3, **style)
            pts += mine
    front = [pts[i] for i in pareto_front([p[0] for p in pts], [p[1] for p in pts])]
    if front:
        ax.step(*zip(*front), where="post", color="black", lw=1.2, label="Pareto front", zorder=2)
        ax.scatter(*zip(*front), s=70, facecolors="none", edgecolors="black", linewidths=1.3, zorder=4)
    return shared


def _slots(cats, hues, present):
    """Bar centres: a group per category (at 0, 1, ...), side by side the hue values present in it."""
    groups = [[h for h in hues if (c, h) in present] for c in cats]
    w = 0.8 / max(map(len, groups), default=1)
    return w, [(i + (j - (len(g) - 1) / 2) * w, c, h) for i, (c, g) in enumerate(zip(cats, groups))
               for j, h in enumerate(g)]


def _groups(rows, x, hue, y=None) -> dict:
    """(x value, hue value) -> the rows there (with a value of y, when given)."""
    out: dict = {}
    for r in rows:
        if y is None or _num(r[y]):
            out.setdefault((r[x], r[hue] if hue else None), []).append(r)
    return out


def _bar(ax, series, x, y, hue, cats, sy, logy) -> int:
    groups = _groups([r for _k, _h, rows in series for r in rows], x, hue, y)
    w, slots = _slots(cats, [h for _k, h, _r in series], groups)
    fmt = P.size_label if sy[2] else "{:.3g}".format
    tops = []
    for k, h, _rows in series:
        mine = [(pos, _mean(groups[c, hh], y) * sy[1]) for pos, c, hh in slots if hh == h]
        if mine:
            P.bars(ax, [m[0] for m in mine], [m[1] for m in mine], w * 0.95, fmt,
                   color=P.CYCLE[k % len(P.CYCLE)], label=_text(hue, h) if hue else None)
            tops += [m[1] for m in mine]
    _ticks(ax, x, cats)
    _axis(ax, sy, tops, "y", logy, auto=False)
    P.headroom(ax, tops, bottom=None)
    return sum(len(g) for g in groups.values() if len(g) > 1)


def _ticks(ax, x, cats) -> None:
    labels = [_text(x, c) for c in cats]
    ax.set_xticks(range(len(cats)), labels, rotation=30 if len(cats) > 6 or max(map(len, labels)) > 10 else 0)
    ax.set_xlabel(_scale(x, [])[0].split(" (")[0])


def _seg(col: str) -> str:  # a breakdown column's segment: `compute`, `MP`, `idle` (`plotting.COLORS`)
    return col[8:-2] if col.startswith("exposed_") else col[:-2]


def _label(col: str) -> str:  # its legend label: `compute`, `exposed MP`, `idle`
    return f"exposed {_seg(col)}" if col.startswith("exposed_") else _seg(col)


def _breakdown(ax, rows, x, hue, hues, cats, segs) -> int:
    groups = _groups(rows, x, hue)
    w, slots = _slots(cats, hues, groups)
    secs = {c: [_mean(groups[g, h], c) for _p, g, h in slots] for c in segs}
    secs = {c: [0.0 if math.isnan(v) else v for v in vals] for c, vals in secs.items()}
    factor, unit = P.time_unit([sum(t) for t in zip(*secs.values())] or [0.0])
    totals = P.stacked_bars(ax, [s[0] for s in slots], {_seg(c): [v * factor for v in vals] for c, vals in secs.items()},
                            width=w * 0.95, labels={_seg(c): _label(c) for c in segs})
    _ticks(ax, x, cats)
    if hue:  # a tick per bar with its hue value; the categories below, centred on their groups
        labels = [_text(hue, h) for _p, _c, h in slots]
        longest = max(map(len, labels))
        ax.set_xticks([s[0] for s in slots], labels, rotation=90 if longest > 4 else 0)
        sec = ax.secondary_xaxis("bottom")
        sec.set_xticks(range(len(cats)), [_text(x, c) for c in cats])
        sec.tick_params(length=0, pad=16 if longest <= 4 else 8 + 5 * longest)
        sec.spines["bottom"].set_visible(False)
        sec.set_xlabel(f"{x} (groups), {hue} (bars)")
        ax.set_xlabel("")
    ax.set_ylabel(f"time per iteration ({unit})")
    P.headroom(ax, totals)
    return sum(len(g) for g in groups.values() if len(g) > 1)


def plot_results(path: str | Path, x: str, y: str | None, hue: str | None = None, facet: str | None = None,
                 kind: str = "line", logx: bool = False, logy: bool = False, out: str | Path | None = None) -> Path:
    """Plot a sweep's results to an image file.

    Parameters
    ----------
    path : str or Path
        The results: a Parquet file or a folder of Parquet part files, one row per point.
    x : str
        Column on the x-axis: numeric for `line` and `pareto`, categories for `bar` and `breakdown`.
    y : str or None
        Numeric column on the y-axis (`_s` in seconds, `_bytes` in bytes, `_Bps` in bytes/s,
        `_flops` in FLOP, or unitless); with `breakdown` None or `iteration_s`.
    hue : str, optional
        Column whose values get a line, bar or colour each (sorted).
    facet : str, optional
        Column whose values get a panel each.
    kind : str
        `line`, `bar`, `breakdown` or `pareto`.
    logx, logy : bool
        Force logarithmic axes (a value axis is log anyway when its values span > 2 decades).
    out : str or Path, optional
        The image; `.png` or `.svg` (or `.pdf`) picks the format. Default: next to the results,
        `<results stem>_<y>_vs_<x>.png` (`_breakdown_vs_<x>` for a breakdown).

    Returns
    -------
    Path
        The file written. Notes (points skipped or averaged) go to stderr, one line each; bad
        options raise ConfigError naming the option, the value and what is accepted.
    """
    if out is not None:
        P.check_path(out, "--out")
    notes: list[str] = []
    table = load_results(path, notes=notes)
    fig = results_figure(table, x, y, hue, facet, kind, logx, logy, notes, str(path))
    if out is None:
        p = Path(path)
        what = "breakdown" if kind == "breakdown" else y
        out = p.with_name(f"{p.stem}_{what}_vs_{x}.png".replace("/", "_"))
    for line in notes:
        print(line, file=sys.stderr)
    return P.save(fig, out, "--out")
