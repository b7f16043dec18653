"""Headline figures: how every reproduction ends.

A study states its paper's headline figures (`Experiment.headlines(report)`), each with the
paper's number, fabricsim's and, where fabricsim is outside the tolerance, the documented cause.
`fabricsim reproduce NAME` prints them as one table, `headline figures`, with the ratio
(fabricsim / paper) and `within` / `outside` 15%, then one line `verdict: N of M headline figures
within 15%`, then the cause of each miss; `--json` carries the same rows and `headlines.csv` is
written beside the study's files. A `--quick` run states the rows its subset covers.

    >>> h = HeadlineFigure("Fig. 1, speedup", paper=2.0, fabricsim=2.2)
    >>> round(h.ratio, 3), h.within
    (1.1, True)
    >>> verdict_line([h, HeadlineFigure("Fig. 2", paper=1.0, fabricsim=1.5, cause="why")])
    'verdict: 1 of 2 headline figures within 15%'
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# The yardstick for "the paper's figure reproduced": |fabricsim / paper - 1| <= 15%.
HEADLINE_TOLERANCE = 0.15


@dataclass(frozen=True)
class HeadlineFigure:
    """One headline figure of a paper: its number, fabricsim's, and why they differ.

    Parameters
    ----------
    figure : str
        What it is and where the paper gives it (`Fig. 11, DLRM d=8: speedup over the
        cost-equivalent fat-tree`).
    paper : float or None
        The paper's number (None: the paper gives none that this run can be compared with).
    fabricsim : float or None
        Ours, in the same unit (None: this run does not compute it, e.g. under `--quick`).
    cause : str
        The documented cause when the figure is outside the tolerance (or why it is not compared);
        empty when there is nothing to explain.
    unit : str
        How the table prints both numbers: `""` (a plain number), `"x"` (a factor, `2.97x`), `"s"`
        (a time in seconds, printed as `44.7 ms`), `"%"` (a fraction, printed as `55%`).
    """

    figure: str
    paper: float | None
    fabricsim: float | None
    cause: str = ""
    unit: str = ""

    @property
    def ratio(self) -> float | None:
        """fabricsim / paper, or None when either is missing (or the paper's is 0)."""
        if self.paper is None or self.fabricsim is None or self.paper == 0:
            return None
        r = float(self.fabricsim) / float(self.paper)
        return r if math.isfinite(r) else None

    @property
    def within(self) -> bool | None:
        """Whether the ratio is within `HEADLINE_TOLERANCE` of 1; None when not compared."""
        r = self.ratio
        return None if r is None else abs(r - 1.0) <= HEADLINE_TOLERANCE + 1e-12

    @property
    def word(self) -> str:
        """`within`, `outside` or `not compared`, as the table prints it."""
        w = self.within
        return "not compared" if w is None else ("within" if w else "outside")


def no_headlines(report) -> tuple:
    """The headline figures of a study that reproduces no paper: none."""
    return ()


def counts(figs: Sequence[HeadlineFigure]) -> tuple[int, int]:
    """(within, compared): how many figures are within the tolerance, of those compared."""
    compared = [f for f in figs if f.within is not None]
    return sum(1 for f in compared if f.within), len(compared)


def verdict_line(figs: Sequence[HeadlineFigure]) -> str:
    """`verdict: N of M headline figures within 15%` (M: the figures compared).

    Parameters
    ----------
    figs : sequence of HeadlineFigure

    Returns
    -------
    str
    """
    n, m = counts(figs)
    tail = "" if m == len(figs) else f" ({len(figs) - m} not compared)"
    return f"verdict: {n} of {m} headline figures within {HEADLINE_TOLERANCE:.0%}{tail}"


def format_value(x: float | None, unit: str = "") -> str:
    """A headline number as the table prints it (see `HeadlineFigure.unit`); `-` for None."""
    if x is None:
        return "-"
    if unit == "s":
        from ..units import format_time

        return format_time(x)
    if unit == "%":
        return f"{x * 100:.0f}%"
    if unit == "x":
        return f"{x:.2f}x"
    return f"{x:.3g}" if x != 0 and (abs(x) < 1e-2 or abs(x) >= 1e4) else f"{x:.3f}"


def print_headlines(figs: Sequence[HeadlineFigure], con) -> None:
    """Print the `headline figures` table, the verdict line and the cause of each miss.

    Parameters
    ----------
    figs : sequence of HeadlineFigure
    con : rich Console
    """
    from rich.table import Table

    if not figs:
        return
    t = Table(box=None, header_style="bold", title="headline figures")  # as the studies print theirs
    for c in ("figure", "paper", "fabricsim", "ratio", f"within {HEADLINE_TOLERANCE:.0%}"):
        t.add_column(c, justify="right")
    for f in figs:
        t.add_row(f.figure, format_value(f.paper, f.unit), format_value(f.fabricsim, f.unit), "-" if f.ratio is None else f"{f.ratio:.3f}", f.word)
    t.columns[0].justify = "left"
    con.print(t)
    say = lambda s: con.print(s, highlight=False, markup=False)  # noqa: E731
    say(verdict_line(figs))
    for f in figs:
        if f.within is not True and f.cause:
            say(f"  {f.word}: {f.figure}: {f.cause}")


def headlines_json(figs: Sequence[HeadlineFigure]) -> dict:
    """The headline figures and the verdict as JSON-able data.

    Returns
    -------
    dict
        `{"headlines": [{figure, paper, fabricsim, ratio, within, cause}, ...], "verdict":
        {"within": N, "compared": M, "total": len, "tolerance": 0.15, "line": str}}`.
    """
    n, m = counts(figs)
    return {
        "headlines": [{"figure": f.figure, "paper": f.paper, "fabricsim": f.fabricsim, "ratio": f.ratio,
                       "within": f.within, "cause": f.cause, "unit": f.unit} for f in figs],
        "verdict": {"within": n, "compared": m, "total": len(figs), "tolerance": HEADLINE_TOLERANCE,
                    "line": verdict_line(figs)},
    }


def write_headlines(figs: Sequence[HeadlineFigure], out_dir: Path) -> list[Path]:
    """Write `headlines.csv` (figure, unit, paper, fabricsim, ratio, within, cause) into `out_dir`
    (numbers in the unit's SI base: seconds, a factor, a fraction).

    Returns
    -------
    list of Path
        The file written, or nothing when the study states no headline figures.
    """
    if not figs:
        return []
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("figure", "unit", "paper", "fabricsim", "ratio", "within", "cause"))
    for f in figs:
        w.writerow((f.figure, f.unit, "" if f.paper is None else repr(float(f.paper)),
                    "" if f.fabricsim is None else repr(float(f.fabricsim)),
                    "" if f.ratio is None else repr(f.ratio), f.word, f.cause))
    path = Path(out_dir) / "headlines.csv"
    path.write_text(buf.getvalue())
    return [path]
