"""The Swing reproduction's files and printed tables: results.json and CSVs (figures in
`plots.py`), and the tables beside the paper's numbers."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path

from ...errors import ConfigError
from .config import size_label
from .plots import write_plots
from .results import GainRow, Reproduction, bandwidth_label
from .tables import summary


def to_json(rep: Reproduction) -> dict:
    """The report as JSON-able data (what `--json` prints, less the files).

    Parameters
    ----------
    rep : Reproduction
        The Swing reproduction.

    Returns
    -------
    dict
        `rep.to_dict()` plus `summary`, the summary of the gains (`results.summary`).
    """
    d = rep.to_dict()
    d["summary"] = summary(rep)
    return d


def write_outputs(rep: Reproduction, out_dir: str | Path, plots: bool = True) -> list[Path]:
    """Write the reproduction's files.

    Parameters
    ----------
    rep : Reproduction
    out_dir : str or Path
        Created if needed (ConfigError naming `--out` if it cannot be).
    plots : bool
        Also the figures (`plots.write_plots`).

    Returns
    -------
    list of Path
        results.json, goodput.csv (every curve: time in s and goodput in Gb/s per size),
        gains.csv, deficiency.csv, runtime_32B.csv, peak_goodput.csv, goodput_points.csv, then
        the figures.
    """
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError("--out", str(out_dir), f"cannot create the folder ({e.strerror}); accepted: a writable path") from None
    p = out / "results.json"
    p.write_text(json.dumps(to_json(rep), indent=1))
    files = [p, _goodput_csv(rep, out / "goodput.csv")]
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


def _goodput_csv(rep: Reproduction, p: Path) -> Path:
    """Every curve of every case, one row per size."""
    with p.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "shape", "bandwidth_gbps", "curve", "kind", "size_bytes", "time_s", "goodput_gbps", "chosen_variant"])
        for c in rep.cases:
            for cur in c.entries + c.variants:
                for i, s in enumerate(c.sizes):
                    w.writerow([c.name, c.shape, f"{c.bandwidth_Bps * 8 / 1e9:g}", cur.key, cur.kind, int(s),
                                f"{cur.times_s[i]:.6e}", f"{cur.goodput_gbps[i]:.4f}", cur.chosen[i]])
    return p


# ==== printing ================================================================================


def _f(x, fmt="{:.1f}", none="-"):
    return none if x is None or (isinstance(x, float) and not math.isfinite(x)) else fmt.format(x)


def _table(title: str, columns: Sequence[str], left: Sequence[str]):
    from rich.table import Table

    t = Table(title=title, header_style="bold", box=None, title_justify="left")
    for col in columns:
        t.add_column(col, justify="left" if col in left else "right")
    return t


def print_report(rep: Reproduction, con, files: Sequence[Path] = ()) -> None:
    """Print the reproduction's tables, ours beside the paper's numbers.

    Parameters
    ----------
    rep : Reproduction
    con : rich Console
    files : sequence of Path
        The files written (listed at the end).
    """
    for w in rep.warnings:
        con.print(f"warning: {w}", style="yellow", highlight=False, markup=False)
    con.print(f"# Swing (NSDI'24) reproduction{' (quick)' if rep.quick else ''}: {rep.model} model, "
              f"{bandwidth_label(rep.link_bandwidth_Bps)} links, {rep.hop_latency_s * 1e9:g} ns per hop, "
              f"{_nic(rep)}; alpha = {rep.step_overhead_s * 1e6:.3f} us per step{_alpha_source(rep)}; "
              f"{len(rep.cases)} cases in {rep.elapsed_s:.1f} s", highlight=False, markup=False)
    _print_gains(rep, con)
    _print_latencies(rep, con)
    _print_peaks(rep, con)
    _print_goodputs(rep, con)
    _print_deficiencies(rep, con)
    for n in rep.notes:
        con.print(f"note: {n}", highlight=False, markup=False)
    if files:
        con.print(f"# wrote {len(files)} files to {Path(files[0]).parent}: " + ", ".join(Path(f).name for f in files),
                  highlight=False, markup=False)


def _nic(rep: Reproduction) -> str:
    """The NIC as the header states it (`NIC 12800 Gb/s, 8KiB packets, 1 ns per packet`)."""
    parts = []
    if rep.nic_injection_Bps is not None:
        parts.append(f"NIC {bandwidth_label(rep.nic_injection_Bps)}")
    if rep.packet_size_B is not None and rep.packet_overhead_s is not None:
        parts.append(f"{size_label(rep.packet_size_B)} packets, {rep.packet_overhead_s * 1e9:g} ns per packet")
    return ", ".join(parts) if parts else "no NIC bound"


def _alpha_source(rep: Reproduction) -> str:
    """Where alpha comes from: ` (inferred from 64x64 swing 32 B = 40 us)`, or nothing (given)."""
    if rep.calibration_point is None:
        return ""
    shape, entry = rep.calibration_point
    return f" (inferred from {shape} {entry} 32 B = {rep.calibration_us:g} us)"


def _print_gains(rep: Reproduction, con) -> None:
    """One table per figure of the paper's gains, then how close they are overall."""
    figs: dict[str, list[GainRow]] = {}
    for g in rep.gains:
        figs.setdefault(g.figure, []).append(g)
    for fig_id, rows in figs.items():
        t = _table(f"Fig. {fig_id}: Swing gain vs the best other algorithm (%), ours vs paper",
                   ("torus", "link", "size", "ours %", "best other (ours)", "paper %", "diff pp", "speedup ratio"),
                   ("torus", "best other (ours)"))
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


def _print_latencies(rep: Reproduction, con) -> None:
    if not rep.latencies:
        return
    t = _table("32 B runtimes (us): ours vs the paper's labels", ("torus", "algorithm", "ours (us)", "paper (us)", "ratio"),
               ("torus", "algorithm"))
    for r in rep.latencies:
        t.add_row(r.shape, r.label, f"{r.ours_us:.2f}", _f(r.paper_us, "{:g}"), _f(r.ratio, "{:.3f}"))
    con.print(t)


def _print_peaks(rep: Reproduction, con) -> None:
    if not rep.peaks:
        return
    t = _table("Swing's goodput at the largest size / peak (D x link)",
               ("torus", "size", "ours (Gb/s)", "peak", "ours frac", "ours 1/(Psi Xi) B", "spec model 1/Xi", "SST measured",
                "ours/SST"), ("torus",))
    for r in rep.peaks:
        t.add_row(r.shape, size_label(r.size), f"{r.ours_gbps:.0f}", f"{r.peak_gbps:g}", f"{r.ours_fraction:.3f}",
                  _f(r.ours_model_fraction, "{:.3f}"), _f(r.spec_model_fraction, "{:.3f}"), _f(r.sst_fraction, "{:.3f}"),
                  _f(r.ratio_vs_sst, "{:.3f}"))
    con.print(t)


def _print_goodputs(rep: Reproduction, con) -> None:
    if not rep.goodputs:
        return
    t = _table("Goodput the paper states (Gb/s)", ("torus", "algorithm", "size", "ours", "paper", "ratio"),
               ("torus", "algorithm"))
    for r in rep.goodputs:
        t.add_row(r.shape, r.label, size_label(r.size), _f(r.ours_gbps, "{:.0f}"), f"{r.paper_gbps:g}", _f(r.ratio, "{:.3f}"))
    con.print(t)


def _print_deficiencies(rep: Reproduction, con) -> None:
    if not rep.deficiencies:
        return
    t = _table("Deficiencies (units of the vector size): ours vs the paper's Table 2 at this p, D",
               ("torus", "variant", "steps", "Lambda", "T2", "Psi", "T2", "Xi", "T2", "Psi*Xi", "exact: what",
                "ours", "spec", "sum lat (us)"), ("torus", "variant", "exact: what"))
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
