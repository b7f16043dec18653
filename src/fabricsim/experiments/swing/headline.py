"""The Swing paper's headline figures beside ours: the table `fabricsim reproduce swing` ends with.

One row per headline figure the reproduction computes (`experiments.headlines.HeadlineFigure`):

- the largest speed-up of Swing over the best other algorithm on each torus the paper plots
  (Figs. 7, 8, 10, 11), the worst one on the square tori (Fig. 7), Swing at 3.2 Tb/s and 512 MiB
  (Fig. 8: "wins at every size") and on 256x4 at 512 MiB (Fig. 10);
- Swing's (and, on 64x64, recursive doubling's) 32 B runtimes, the labels of Figs. 6, 10, 11, 14;
- the goodputs the text states (Figs. 6, 11, 14) and HyperX's 3x at 8 MiB;
- the share of the paper's gains whose sign we reproduce.

Gains are compared as speed-ups, T_best / T_swing (`speedup_of_gain`: 1 + gain when Swing wins,
1 / (1 - gain) when it loses), so a ratio is meaningful near a gain of 0. A row whose case did
not run (`--quick`) is left out. The point the per-step overhead is inferred from
(`calibration.step_overhead_from`) is not a row: it is reproduced by construction.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..headlines import HeadlineFigure
from .results import GainRow, Reproduction, speedup_of_gain

# Why a row can miss, keyed by the row's tag; the same text is in docs/swing.md ("Where we
# differ"). A cause is attached only to a row outside the tolerance.
CAUSES = {
    "fig8_low": "SST's +105% peaks at 100-200 Gb/s are what Swing-L on all 2D ports gives; the artifact and Table 2 "
                "run it on one port, which matches 400 Gb/s-3.2 Tb/s (docs/swing.md, difference 1)",
    "fig8_high": "the artifact's NIC binds at none of the paper's bandwidths, so a gain still depends on size / "
                 "bandwidth only; SST's gains at 1.6-3.2 Tb/s do not (docs/swing.md, difference 2)",
    "fig7_peak": "mid sizes (8 KiB-512 KiB) are packet-level territory the model does not have (docs/swing.md, "
                 "difference 7)",
    "worst": "our Swing plateau is 1/Xi of the link rate, SST's is 5-13% lower (spec 5.8; docs/swing.md, difference 3)",
    "rect": "SST's plateaus on rectangular tori sit 5-13% below 1/Xi and its bucket pays more per phase "
            "(docs/swing.md, differences 3 and 4)",
    "runtime": "alpha is one constant inferred from 64x64; SST's per-step cost differs a little between tori "
               "(docs/swing.md, difference 6)",
    "goodput": "our plateau is 1/Xi of the link rate, SST's is 5-13% lower (spec 5.8; docs/swing.md, difference 3)",
    "sign": "gains within a few percent of zero at 32 MiB-2 GiB change sign (docs/swing.md, differences 2 and 5)",
    "dims": "bucket's 2D rings do not interfere in the model; in SST they do (docs/swing.md, difference 5)",
    "hyperx": "bucket on HyperX gets its full link rate in the model (docs/swing.md, difference 3)",
}


def _fig(rows: Sequence[GainRow], fig: str, case: str) -> list[GainRow]:
    return [r for r in rows if r.figure == fig and r.case == case]


def _peak_rows(rep: Reproduction) -> list[HeadlineFigure]:
    """Largest speed-up per torus (and bandwidth) the paper plots: theirs over their stated sizes,
    ours over every size of the case."""
    out = []
    specs = [("7", "8x8", "Fig. 7, 8x8", "fig7_peak"), ("7", "16x16", "Fig. 7, 16x16", "fig7_peak"),
             ("7", "32x32", "Fig. 7, 32x32", "fig7_peak"), ("7", "64x64", "Fig. 6/7, 64x64", "fig7_peak"),
             ("7", "128x128", "Fig. 7, 128x128", "fig7_peak")]
    specs += [("8", f"8x8@{bw}", f"Fig. 8, 8x8 at {bw}", "fig8_low" if bw in ("100Gb/s", "200Gb/s") else "fig8_high")
              for bw in ("100Gb/s", "200Gb/s", "800Gb/s", "1.6Tb/s", "3.2Tb/s")]
    specs += [("10", "64x16", "Fig. 10, 64x16", "rect"), ("10", "128x8", "Fig. 10, 128x8", "rect"),
              ("10", "256x4", "Fig. 10, 256x4", "rect"), ("11", "8x8x8", "Fig. 11, 8x8x8", "dims"),
              ("11", "8x8x8x8", "Fig. 11, 8x8x8x8", "dims")]
    for fig, case_name, label, tag in specs:
        rows, case = _fig(rep.gains, fig, case_name), rep.case(case_name)
        if not rows or case is None:
            continue
        ours = [g for g in case.gain_pct if g is not None]
        paper = speedup_of_gain(max(r.paper_hi for r in rows))
        out.append(_row(f"{label}: largest speed-up of Swing", paper, speedup_of_gain(max(ours)), tag))
    return out


def _point_rows(rep: Reproduction) -> list[HeadlineFigure]:
    """Single gains the text stresses: the worst square-torus loss, 3.2 Tb/s at 512 MiB, 256x4."""
    out = []
    sq = [r for r in rep.gains if r.figure == "7"]
    if sq:
        worst = min(sq, key=lambda r: r.paper_pct)
        ours = min(r.ours_pct for r in sq)
        out.append(_row(f"Fig. 7, square tori: smallest speed-up (paper: {worst.shape} at {worst.size_label})",
                        speedup_of_gain(worst.paper_pct), speedup_of_gain(ours), "worst"))
    for fig, case, size, label, tag in (("8", "8x8@3.2Tb/s", "512MiB", "Fig. 8, 8x8 at 3.2Tb/s, 512 MiB: speed-up",
                                         "fig8_high"),
                                        ("10", "256x4", "512MiB", "Fig. 10, 256x4, 512 MiB: speed-up", "rect")):
        r = next((g for g in _fig(rep.gains, fig, case) if g.size_label == size), None)
        if r is not None:
            out.append(_row(label, speedup_of_gain(r.paper_pct), speedup_of_gain(r.ours_pct), tag))
    return out


def _runtime_rows(rep: Reproduction, calibrated: tuple[str, str] | None) -> list[HeadlineFigure]:
    """32 B runtimes (us): Swing on every labelled shape, recursive doubling on 64x64."""
    figs = {"64x64": "6", "64x16": "10", "128x8": "10", "256x4": "10", "8x8": "11", "8x8x8": "11",
            "8x8x8x8": "11", "hyperx64x64": "14"}
    out = []
    for r in rep.latencies:
        keep = r.entry == "swing" or (r.shape == "64x64" and r.entry == "recdoub")
        if not keep or r.paper_us is None or (r.shape, r.entry) == calibrated:
            continue
        out.append(_row(f"Fig. {figs.get(r.shape, '?')}, {r.shape}: {r.label} 32 B runtime (us)", r.paper_us,
                        r.ours_us, "runtime"))
    return out


def _goodput_rows(rep: Reproduction) -> list[HeadlineFigure]:
    """Goodputs the text states (Gb/s) and HyperX's Swing/bucket ratio at 8 MiB."""
    keep = {("64x64", "swing", "512MiB"): "Fig. 6", ("8x8x8x8", "swing", "2GiB"): "Fig. 11",
            ("hyperx64x64", "swing", "512MiB"): "Fig. 14"}
    out = []
    by_key = {(g.shape, g.entry, _label(g.size)): g for g in rep.goodputs}
    for (shape, entry, size), fig in keep.items():
        g = by_key.get((shape, entry, size))
        if g is not None and g.ours_gbps is not None:
            out.append(_row(f"{fig}, {shape}: Swing goodput at {size} (Gb/s)", g.paper_gbps, g.ours_gbps, "goodput"))
    s, b = by_key.get(("hyperx64x64", "swing", "8MiB")), by_key.get(("hyperx64x64", "bucket", "8MiB"))
    if s is not None and b is not None and s.ours_gbps and b.ours_gbps:
        out.append(_row("Fig. 14, HyperX 64x64, 8 MiB: Swing / bucket goodput", s.paper_gbps / b.paper_gbps,
                        s.ours_gbps / b.ours_gbps, "hyperx"))
    return out


def _sign_row(rep: Reproduction) -> list[HeadlineFigure]:
    """The share of the paper's gains (Figs. 7, 8, 10, 11) whose sign we reproduce (a paper gain
    within 3 points of zero counts as either sign)."""
    if not rep.gains:
        return []
    same = sum(1 for r in rep.gains if (r.ours_pct >= 0) == (r.paper_pct >= 0) or abs(r.paper_pct) <= 3)
    return [_row(f"Figs. 7-11: gains with the paper's sign ({same} of {len(rep.gains)})", 1.0,
                 same / len(rep.gains), "sign")]


def _label(size: float) -> str:
    from .config import size_label

    return size_label(size)


def _row(figure: str, paper: float, ours: float, tag: str) -> HeadlineFigure:
    h = HeadlineFigure(figure, float(paper), float(ours))
    return h if h.within else HeadlineFigure(figure, float(paper), float(ours), CAUSES[tag])


def headlines(rep: Reproduction) -> list[HeadlineFigure]:
    """The paper's headline figures beside ours, for the cases this run computed.

    Parameters
    ----------
    rep : Reproduction
        A full or `--quick` run.

    Returns
    -------
    list of HeadlineFigure
        Peak speed-ups per torus and bandwidth, the single gains the text stresses, 32 B runtimes
        (us, less the calibration point), stated goodputs (Gb/s), and the share of gains with the
        paper's sign; each miss carries its documented cause.
    """
    calibrated = getattr(rep, "calibration_point", None)
    return (_peak_rows(rep) + _point_rows(rep) + _runtime_rows(rep, calibrated) + _goodput_rows(rep)
            + _sign_row(rep))
