"""The FRED reproduction's figures, drawn through `report.plotting`: (a) microbenchmarks beside the
paper's values, (c) the end-to-end breakdown per system with the paper's speedups, (d) the strategy
sweep per sample with the paper's averages."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...report.plotting import (
    COLORS,
    figure,
    headroom,
    legend_outside,
    paper_bars,
    paper_markers,
    ratio_text,
    save,
    stacked_bars,
    styled,
    time_unit,
)
from .config import DIMENSIONS

if TYPE_CHECKING:
    from .report import Reproduction

SEGMENTS = ("compute", "MP", "PP", "DP", "IO", "other", "idle")
_SEGMENT_LABELS = {c: c if c in ("compute", "idle") else f"exposed {c}" for c in SEGMENTS}


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
        microbenchmarks.png, then end_to_end.png and sweep.png where those parts ran.
    """
    files = [save(micro_figure(rep), Path(out) / "microbenchmarks.png", "--out")]
    if any(r.iteration_s for r in rep.e2e):
        files.append(save(e2e_figure(rep), Path(out) / "end_to_end.png", "--out"))
    if rep.sweep:
        files.append(save(sweep_figure(rep), Path(out) / "sweep.png", "--out"))
    return files


@styled
def micro_figure(rep: Reproduction):
    """(a) One panel per dimension: our time per byte per system beside the paper's (hatched), values
    written above, ours / paper under each system.

    Parameters
    ----------
    rep : Reproduction

    Returns
    -------
    Figure
    """
    dims = [d for d in DIMENSIONS if any(r.dimension == d for r in rep.micro)] or list(DIMENSIONS[:1])
    fig, axes = figure(len(dims), cols=2, panel=(4.6, 3.2))
    for ax, dim in zip(axes, dims):
        rows = [r for r in rep.micro if r.dimension == dim]
        x = np.arange(len(rows))
        ours = [r.per_D for r in rows]
        paper_bars(ax, x, ours, [r.paper for r in rows], 0.8, COLORS["compute"], fmt="{:.2f}".format)
        ax.set_xticks(x, [f"{r.system}\n{ratio_text(r.per_D, r.paper)}" for r in rows])
        ax.set_title(dim)
        ax.set_ylabel("time per byte, D / (TB/s)")
        headroom(ax, ours + [r.paper for r in rows if r.paper is not None])
    legend_outside(fig)
    return fig


@styled
def e2e_figure(rep: Reproduction):
    """(c) One panel per workload: the iteration's breakdown per system, stacked (time unit chosen
    per panel), totals written; under each system our speedup over the mesh and the paper's; the
    paper's speedup also as a hollow diamond at the time it implies (mesh time / paper speedup).

    Parameters
    ----------
    rep : Reproduction

    Returns
    -------
    Figure
    """
    done = [r for r in rep.e2e if r.iteration_s]
    panels = list(dict.fromkeys((r.workload, r.compute) for r in done))
    fig, axes = figure(len(panels), cols=2, panel=(5.4, 3.6))
    for ax, (wl, comp) in zip(axes, panels):
        rows = [r for r in done if r.workload == wl and r.compute == comp]
        secs = {c: np.array([r.breakdown_s.get(c, 0.0) for r in rows]) for c in SEGMENTS}
        scale, unit = time_unit([r.iteration_s for r in rows])
        x = np.arange(len(rows))
        totals = stacked_bars(ax, x, {c: v * scale for c, v in secs.items()}, labels=_SEGMENT_LABELS)
        mesh = next((r for r in rows if r.system == "mesh"), None)
        implied = [None if mesh is None or not r.paper_speedup else mesh.iteration_s * scale / r.paper_speedup
                   for r in rows]
        paper_markers(ax, x, implied, label="paper: mesh time / paper speedup")
        ax.set_xticks(x, [_speedup_tick(r) for r in rows], fontsize=7)
        ax.set_xlabel("system; speedup over the mesh", fontsize=7.5)
        ax.set_title(f"{wl}, {_setting(comp, rows)}")
        ax.set_ylabel(f"time per iteration ({unit})")
        headroom(ax, list(totals) + [v for v in implied if v is not None])
    legend_outside(fig, order=[_SEGMENT_LABELS[c] for c in SEGMENTS])
    return fig


def _setting(comp: str, rows) -> str:
    """A compute setting as a title says it: `compute as stated`, or `one NPU factor x25.9`."""
    speed = getattr(rows[0], "speed", 1.0) if rows else 1.0
    if comp == "calibrated":
        return "one NPU factor" + (f" x{speed:.3g}" if speed != 1 else "")
    return f"compute {comp}" + (f" (NPU x{speed:.3g})" if speed != 1 else "")


def _speedup_tick(r) -> str:
    """A system's tick: its name, our speedup over the mesh and the paper's."""
    if r.system == "mesh":
        return "mesh\n(baseline)"
    ours = "-" if r.speedup is None else f"{r.speedup:.2f}x"
    paper = "" if r.paper_speedup is None else f"\npaper {r.paper_speedup:.2f}x"
    return f"{r.system}\n{ours}{paper}"


@styled
def sweep_figure(rep: Reproduction):
    """(d) One panel per workload: compute, exposed communication and idle per sample, per strategy
    and system (side by side, totals written); the paper's averages (speedup, exposed communication
    reduction, fastest strategy) beside ours in the panel, and a hollow diamond over the strategy the
    paper finds fastest on the compared system.

    Parameters
    ----------
    rep : Reproduction

    Returns
    -------
    Figure
    """
    panels = list(dict.fromkeys((r.workload, r.compute) for r in rep.sweep))
    summary = {(s.workload, s.compute): s for s in rep.sweep_summary}
    fig, axes = figure(len(panels), cols=1, panel=(9.0, 3.9))
    for ax, key in zip(axes, panels):
        wl, comp = key
        rows = [r for r in rep.sweep if r.workload == wl and r.compute == comp]
        strategies = list(dict.fromkeys(r.strategy for r in rows))
        systems = list(dict.fromkeys(r.system for r in rows))
        scale, unit = time_unit([r.per_sample_s for r in rows])
        x = np.arange(len(strategies))
        w = 0.8 / len(systems)
        tops: list[float] = []
        for k, sysname in enumerate(systems):
            by = {r.strategy: r for r in rows if r.system == sysname}
            busy = np.array([by[st].compute_per_sample_s if st in by else 0.0 for st in strategies]) * scale
            exp_ = np.array([by[st].exposed_comm_per_sample_s if st in by else 0.0 for st in strategies]) * scale
            rest = np.array([by[st].per_sample_s if st in by else 0.0 for st in strategies]) * scale - busy - exp_
            xs = x + (k - (len(systems) - 1) / 2) * w
            tot = stacked_bars(ax, xs, {"compute": busy, f"exposed communication, {sysname}": exp_,
                                        "idle": np.maximum(rest, 0.0)}, w,
                               colors={f"exposed communication, {sysname}": COLORS["MP" if k == 0 else "PP"]})
            tops += list(tot)
            for xi in xs:  # which system each bar is, under it
                ax.annotate(sysname, (xi, 0), xytext=(0, -2), textcoords="offset points", ha="center", va="top",
                            fontsize=6.5, annotation_clip=False)
        fastest = summary[key].paper.get("fastest_on_fred") if key in summary else None
        ax.set_xticks(x, [st + (f"\npaper's fastest on {systems[-1]}" if st == fastest else "") for st in strategies],
                      fontsize=7, va="top")
        ax.tick_params(axis="x", pad=12)
        ax.set_ylabel(f"time per sample ({unit})")
        same = [r for r in rep.e2e if r.compute == comp] or rows  # the sweep's rows carry no factor
        ax.set_title(f"{wl}: strategy sweep ({' vs '.join(systems)}), {_setting(comp, same)}")
        ax.set_xlabel(_summary_text(summary.get(key), systems), fontsize=7.5)
        headroom(ax, tops)
    legend_outside(fig)
    return fig


def _summary_text(s, systems) -> str:
    """Our averages over strategies beside the paper's, with the ratios."""
    if s is None:
        return ""
    other = systems[-1] if systems else "?"
    parts = []
    for what, ours, key in (("speedup", s.speedup_mean, "speedup"),
                            ("exposed comm. reduction", s.exposed_reduction_mean, "exposed_comm_reduction")):
        p = s.paper.get(key)
        ratio = f" (x{ours / p:.2f})" if isinstance(p, (int, float)) and p and np.isfinite(ours) else ""
        parts.append(f"{what}: ours {ours:.2f}, paper {p if p is not None else '-'}{ratio}")
    fast = s.fastest.get(other, "-") if isinstance(s.fastest, dict) else "-"
    parts.append(f"fastest on {other}: ours {fast}, paper {s.paper.get('fastest_on_fred', '-')}")
    return (f"mean over strategies, {other} vs {systems[0] if systems else '?'} (ratio = ours / paper)\n"
            + "; ".join(parts[:2]) + "\n" + parts[2])


__all__ = ["e2e_figure", "micro_figure", "sweep_figure", "write_plots"]
