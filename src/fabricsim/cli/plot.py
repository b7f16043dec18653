"""`fabricsim plot`: draw a sweep's results (Parquet) as lines, bars, a training breakdown or a
Pareto front; all the work is in `sweep.plot.plot_results`."""

from __future__ import annotations

from typing import Optional

import typer

from .app import app


@app.command()
def plot(
    results: str = typer.Argument(..., metavar="RESULTS", help="a sweep's results: a Parquet file or a folder of Parquet part files"),
    x: str = typer.Option(..., "--x", help="column on the x-axis (numeric for line and pareto, categories for bar and breakdown)"),
    y: Optional[str] = typer.Option(None, "--y", help="numeric column on the y-axis (with --kind breakdown: none or iteration_s)"),
    hue: Optional[str] = typer.Option(None, "--hue", help="column whose values get a line, bar or colour each"),
    facet: Optional[str] = typer.Option(None, "--facet", help="column whose values get a panel each"),
    kind: str = typer.Option("line", "--kind", help="line, bar, breakdown (compute_s, exposed_*_s, idle_s stacked) or pareto (min x, min y)"),
    logx: bool = typer.Option(False, "--logx", help="log x-axis (line, pareto; automatic when x spans > 2 decades)"),
    logy: bool = typer.Option(False, "--logy", help="log y-axis (line, bar, pareto; automatic for line and pareto when y spans > 2 decades)"),
    out: Optional[str] = typer.Option(None, "--out", "-o", help="image file, .png or .svg (default: RESULTS-stem_<y>_vs_<x>.png next to the results)"),
):
    """Plot a sweep's results: y against x per hue value, one panel per facet value."""
    from ..sweep.plot import plot_results

    path = plot_results(results, x, y, hue=hue, facet=facet, kind=kind, logx=logx, logy=logy, out=out)
    print(f"wrote {path}")
