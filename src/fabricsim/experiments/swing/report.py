"""The Swing reproduction's files and printed tables: results.json and CSVs, the goodput and gain
plots, and the tables beside the paper's numbers."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ...errors import ConfigError
from .config import size_label
from .results import GainRow, Reproduction, bandwidth_label, summary


def to_json(rep: Reproduction) -> dict:
    """The report as JSON-able data, with the summary of the gains."""
    d = rep.to_dict()
    d["summary"] = summary(rep)
    return d


def write_outputs(rep: Reproduction, out_dir: str | Path, plots: bool = True) -> list[Path]:
    """results.json, goodput.csv, gains.csv, deficiency.csv, and the figures."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError("--out", str(out_dir), f"cannot create the folder ({e.strerror}); accepted: a writable path") from None
    files: list[Path] = []
    p = out / "results.json"
    p.write_text(json.dumps(to_json(rep), indent=1))
    files.append(p)

    p = out / "goodput.csv"
    with p.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "shape", "bandwidth_gbps", "curve", "kind", "size_bytes", "time_s", "goodput_gbps", "chosen_variant"])
        for c in rep.cases:
            for cur in c.entries + c.variants:
                for i, s in enumerate(c.sizes):
                    w.writerow([c.name, c.shape, f"{c.bandwidth_Bps * 8 / 1e9:g}", cur.key, cur.kind, int(s),
                                f"{cur.times_s[i]:.6e}", f"{cur.goodput_gbps[i]:.4f}", cur.chosen[i]])
    files.append(p)

    for fname, rows in (("gains.csv", rep.gains), ("deficiency.csv", rep.deficiencies), ("runtime_32B.csv", rep.latencies),
                        ("peak_goodput.csv", rep.peaks), ("goodput_points.csv", rep.goodputs)):
        p = out / fname
        with p.open("w", newline="") as f:
            w = csv.writer(f)
            fields = list(rows[0].__dataclass_fields__) if rows else []
            w.writerow(fields)
            for r in rows:
                w.writerow(["" if getattr(r, k) is None else getattr(r, k) for k in fields])
        files.append(p)
    if plots:
        files += write_plots(rep, out)
    return files


def _size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ticks = list(sizes)[::2]
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(s).replace("iB", "") for s in ticks], rotation=45, fontsize=7)
    ax.minorticks_off()


_STYLES = {"swing": {"color": "C3", "lw": 2.2}, "recdoub": {"color": "C0"}, "bucket": {"color": "C2"},
           "rings": {"color": "C1"}, "mirrored": {"color": "C4"}}


def write_plots(rep: Reproduction, out: Path) -> list[Path]:
    """goodput_SHAPE.png per torus, gains_summary.png, gains_bandwidth_SHAPE.png (the sweep)."""
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


def _goodput_plot(plt, rep: Reproduction, case, out: Path) -> Path:
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


# ==== printing ================================================================================


def _f(x, fmt="{:.1f}", none="-"):
    return none if x is None or (isinstance(x, float) and not math.isfinite(x)) else fmt.format(x)


def print_report(rep: Reproduction, con, files: Sequence[Path] = ()) -> None:
    """The reproduction tables with rich: ours beside the paper's numbers."""
    from rich.table import Table

    for w in rep.warnings:
        con.print(f"warning: {w}", style="yellow", highlight=False, markup=False)
    con.print(f"# Swing (NSDI'24) reproduction{' (quick)' if rep.quick else ''}: {rep.model} model, "
              f"{bandwidth_label(rep.link_bandwidth_Bps)} links, {rep.hop_latency_s * 1e9:g} ns per hop, "
              f"alpha = {rep.step_overhead_s * 1e6:g} us per step; {len(rep.cases)} cases in {rep.elapsed_s:.1f} s",
              highlight=False, markup=False)

    figs: dict[str, list[GainRow]] = {}
    for g in rep.gains:
        figs.setdefault(g.figure, []).append(g)
    for fig_id, rows in figs.items():
        t = Table(title=f"Fig. {fig_id}: Swing gain vs the best other algorithm (%), ours vs paper", header_style="bold",
                  box=None, title_justify="left")
        for col, j in (("torus", "left"), ("link", "right"), ("size", "right"), ("ours %", "right"), ("best other (ours)", "left"),
                       ("paper %", "right"), ("diff pp", "right"), ("speedup ratio", "right")):
            t.add_column(col, justify=j)
        for r in rows:
            paper = f"{r.paper_lo:g}..{r.paper_hi:g}" if r.paper_lo != r.paper_hi else f"{r.paper_pct:g}"
            t.add_row(r.shape, f"{r.bandwidth_gbps:g}G", r.size_label, f"{r.ours_pct:+.1f}", r.ours_vs, paper,
                      f"{r.diff_pp:+.1f}", f"{r.ratio:.3f}")
        con.print(t)
    s = summary(rep)
    if s["rows"]:
        con.print(f"# {s['rows']} gains compared: median |diff| {s['median_abs_diff_pp']:.1f} pp, "
                  f"{s['within_10pp']} within 10 pp, {s['within_25pp']} within 25 pp, same sign {s['same_sign']}, "
                  f"median speedup ratio {s['median_ratio']:.3f}", highlight=False, markup=False)

    if rep.latencies:
        t = Table(title="32 B runtimes (us): ours vs the paper's labels", header_style="bold", box=None, title_justify="left")
        for col in ("torus", "algorithm", "ours (us)", "paper (us)", "ratio"):
            t.add_column(col, justify="left" if col in ("torus", "algorithm") else "right")
        for r in rep.latencies:
            t.add_row(r.shape, r.label, f"{r.ours_us:.2f}", _f(r.paper_us, "{:g}"), _f(r.ratio, "{:.3f}"))
        con.print(t)
    if rep.peaks:
        t = Table(title="Swing's goodput at the largest size / peak (D x link)", header_style="bold", box=None, title_justify="left")
        for col in ("torus", "size", "ours (Gb/s)", "peak", "ours frac", "ours 1/(Psi Xi) B", "spec model 1/Xi", "SST measured",
                    "ours/SST"):
            t.add_column(col, justify="left" if col == "torus" else "right")
        for r in rep.peaks:
            t.add_row(r.shape, size_label(r.size), f"{r.ours_gbps:.0f}", f"{r.peak_gbps:g}", f"{r.ours_fraction:.3f}",
                      _f(r.ours_model_fraction, "{:.3f}"), _f(r.spec_model_fraction, "{:.3f}"), _f(r.sst_fraction, "{:.3f}"),
                      _f(r.ratio_vs_sst, "{:.3f}"))
        con.print(t)
    if rep.goodputs:
        t = Table(title="Goodput the paper states (Gb/s)", header_style="bold", box=None, title_justify="left")
        for col in ("torus", "algorithm", "size", "ours", "paper", "ratio"):
            t.add_column(col, justify="left" if col in ("torus", "algorithm") else "right")
        for r in rep.goodputs:
            t.add_row(r.shape, r.label, size_label(r.size), _f(r.ours_gbps, "{:.0f}"), f"{r.paper_gbps:g}", _f(r.ratio, "{:.3f}"))
        con.print(t)
    if rep.deficiencies:
        t = Table(title="Deficiencies (units of the vector size): ours vs the paper's Table 2 at this p, D",
                  header_style="bold", box=None, title_justify="left")
        for col in ("torus", "variant", "steps", "Lambda", "T2", "Psi", "T2", "Xi", "T2", "Psi*Xi", "exact: what",
                    "ours", "spec", "sum lat (us)"):
            t.add_column(col, justify="left" if col in ("torus", "variant", "exact: what") else "right")
        for r in rep.deficiencies:
            t.add_row(r.shape, r.variant, str(r.steps), f"{r.lam:.3f}", _f(r.paper_lam, "{:.3g}"), f"{r.psi:.3f}",
                      _f(r.paper_psi, "{:.3g}"), f"{r.xi:.3f}", _f(r.paper_xi, "{:.3g}"), f"{r.psi_xi:.3f}",
                      r.exact_kind or "", _f(r.exact_ours, "{:.4g}"), _f(r.exact_spec, "{:.4g}"), f"{r.latency_us:.2f}")
        con.print(t)
        con.print("# T2 = the paper's Table 2 at this p, D (Xi of Swing-B: its D = 2/3/4 values). Psi*Xi = bandwidth time "
                  "in units of n beta / D, exact in this model. exact: Psi*Xi of Swing-B vs the spec's sum_s delta/2^(s+1); "
                  "hops of the L variants (Xi x log2 p) vs the spec's sums of step distances. Table 2's L rows give the "
                  "bound 2D p^(1/D) (RD) or (4/3) D p^(1/D) (Swing) on that sum, with Psi = D log2 p.",
                  highlight=False, markup=False)
    for n in rep.notes:
        con.print(f"note: {n}", highlight=False, markup=False)
    if files:
        con.print(f"# wrote {len(files)} files to {Path(files[0]).parent}: " + ", ".join(Path(f).name for f in files),
                  highlight=False, markup=False)
