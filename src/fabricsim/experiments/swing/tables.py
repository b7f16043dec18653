"""The Swing reproduction's comparison tables: ours beside the paper's gains, peak goodputs, 32 B
runtimes and stated goodputs, and how close the gains are overall."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .config import SwingConfig, size_label
from .results import (
    CaseResult,
    DeficiencyRow,
    GainRow,
    GoodputRow,
    LatencyRow,
    PeakRow,
    Reproduction,
    speedup_of_gain,
)


def goodput_table(case: CaseResult, variants: bool = False) -> list[dict]:
    """(a) Goodput per algorithm and size on one case.

    Parameters
    ----------
    case : CaseResult
    variants : bool
        Also every variant's curve.

    Returns
    -------
    list of dict
        One row per size: size (bytes), size_label, Gb/s per curve label, Swing's gain (percent)
        and the best other entry.
    """
    curves = case.entries + (case.variants if variants else ())
    rows = []
    for i, s in enumerate(case.sizes):
        row = {"size": s, "size_label": size_label(s)}
        for c in curves:
            row[c.label] = c.goodput_gbps[i]
        row["swing_gain_pct"] = case.gain_pct[i]
        row["best_other"] = case.best_baseline[i]
        rows.append(row)
    return rows


def _find_case(cases: Sequence[CaseResult], shape: str, bw: float | None, base_bw: float) -> CaseResult | None:
    want = base_bw if bw is None else bw
    return next((c for c in cases if c.shape == shape and math.isclose(c.bandwidth_Bps, want)), None)


def reproduction_table(cfg: SwingConfig, cases: Sequence[CaseResult]) -> list[GainRow]:
    """(b) Ours beside the paper's, for every case and size where the paper gives a gain.

    Parameters
    ----------
    cfg : SwingConfig
    cases : sequence of CaseResult

    Returns
    -------
    list of GainRow
        In the config's order; gains whose case did not run are left out.
    """
    rows = []
    for g in cfg.paper_gains:
        case = _find_case(cases, g.shape, g.bandwidth_Bps, cfg.link_bandwidth_Bps)
        if case is None:
            continue
        valid = [i for i, x in enumerate(case.gain_pct) if x is not None]
        if not valid:
            continue
        if g.size is None:
            i = max(valid, key=lambda k: case.gain_pct[k])
            lab = f"max ({size_label(case.sizes[i])})"
        else:
            i = case.size_index(g.size)
            if i is None or case.gain_pct[i] is None:
                continue
            lab = size_label(case.sizes[i])
        ours = float(case.gain_pct[i])
        diff = 0.0 if g.lo <= ours <= g.hi else (ours - g.lo if ours < g.lo else ours - g.hi)
        rows.append(GainRow(g.figure, case.name, case.shape, case.bandwidth_Bps * 8 / 1e9, case.sizes[i], lab, ours,
                            g.mid, g.lo, g.hi, diff, speedup_of_gain(ours) / speedup_of_gain(g.mid),
                            case.best_baseline[i] or "", g.vs))
    return rows


def peak_table(cfg: SwingConfig, cases: Sequence[CaseResult], defs: Sequence[DeficiencyRow]) -> list[PeakRow]:
    """(c) Swing's goodput at the largest size as a fraction of D x link bandwidth.

    Parameters
    ----------
    cfg : SwingConfig
    cases : sequence of CaseResult
    defs : sequence of DeficiencyRow
        For Swing-B's bound 1/(Psi Xi).

    Returns
    -------
    list of PeakRow
        One per base case where Swing ran.
    """
    spec = {s: (m, t) for s, m, t in cfg.peak_fraction}
    rows = []
    for case in cases:
        if not case.base:
            continue
        subj = case.entry(cfg.subject.key)
        if subj is None:
            continue
        ours = subj.goodput_gbps[-1]
        frac = ours / case.peak_gbps
        b = [d for d in defs if d.shape == case.shape and d.table2 == "swing_b"]  # Swing-B's 1/(Psi Xi)
        model = 1.0 / b[0].psi_xi if b else None
        m, t = spec.get(case.shape, (None, None))
        rows.append(PeakRow(case.shape, case.sizes[-1], ours, case.peak_gbps, frac, model, m, t,
                            frac / t if t else None))
    return rows


def latency_table(cfg: SwingConfig, cases: Sequence[CaseResult]) -> list[LatencyRow]:
    """(d) 32 B runtimes beside the paper's labels.

    Parameters
    ----------
    cfg : SwingConfig
    cases : sequence of CaseResult

    Returns
    -------
    list of LatencyRow
        Every entry of every base case whose shape has labels in the paper.
    """
    paper = {(s, k): v for s, k, v in cfg.runtime_32B_us}
    rows = []
    for case in cases:
        if not case.base or not any(s == case.shape for s, _ in paper):
            continue
        i = case.size_index(32.0)
        if i is None:
            continue
        for c in case.entries:
            pv = paper.get((case.shape, c.key))
            ours = c.times_s[i] * 1e6
            rows.append(LatencyRow(case.shape, c.key, c.label, ours, pv, ours / pv if pv else None))
    return rows


def goodput_points(cfg: SwingConfig, cases: Sequence[CaseResult]) -> list[GoodputRow]:
    """The goodputs the paper states, ours beside them.

    Parameters
    ----------
    cfg : SwingConfig
    cases : sequence of CaseResult

    Returns
    -------
    list of GoodputRow
        One per stated goodput whose shape ran (ours None where the entry or size did not).
    """
    rows = []
    for g in cfg.paper_goodput:
        case = _find_case(cases, g.shape, None, cfg.link_bandwidth_Bps)
        if case is None:
            continue
        i = case.size_index(g.size)
        c = case.entry(g.entry)
        label = next(e.label for e in cfg.algorithms if e.key == g.entry)
        ours = c.goodput_gbps[i] if (c is not None and i is not None) else None
        rows.append(GoodputRow(g.shape, g.entry, label, g.size, ours, g.gbps, ours / g.gbps if ours is not None else None))
    return rows


def summary(rep: Reproduction) -> dict:
    """How close the gains are, over all rows of the reproduction table.

    Parameters
    ----------
    rep : Reproduction

    Returns
    -------
    dict
        rows; median_abs_diff_pp (percentage points); within_10pp, within_25pp and same_sign
        (counts; a paper gain within 3 points of zero counts as the same sign); median_ratio of
        speedups. Only `rows` (0) when there are none.
    """
    if not rep.gains:
        return {"rows": 0}
    d = np.array([abs(r.diff_pp) for r in rep.gains])
    same_sign = sum(1 for r in rep.gains if (r.ours_pct >= 0) == (r.paper_pct >= 0) or abs(r.paper_pct) <= 3)
    return {"rows": len(rep.gains), "median_abs_diff_pp": float(np.median(d)), "within_10pp": int((d <= 10).sum()),
            "within_25pp": int((d <= 25).sum()), "same_sign": same_sign,
            "median_ratio": float(np.median([r.ratio for r in rep.gains]))}
