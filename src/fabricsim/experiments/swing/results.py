"""The Swing reproduction's results: the paper's arithmetic (goodput, gain), the result
dataclasses, and the comparison tables beside the paper's numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from .config import Shape, SwingConfig, size_label


# ==== the paper's arithmetic ==========================================================


def goodput_gbps(size_bytes, time_s):
    """Goodput in Gb/s (bits): vector size / runtime."""
    return np.asarray(size_bytes, dtype=float) * 8.0 / np.asarray(time_s, dtype=float) / 1e9


def gain_pct(t_swing: float, t_best: float) -> float:
    """The paper's gain of Swing over the best other algorithm, in percent: T_best/T_swing - 1
    when Swing is faster (100 = twice as fast), else -(T_swing/T_best - 1)."""
    if t_swing <= t_best:
        return (t_best / t_swing - 1.0) * 100.0
    return -(t_swing / t_best - 1.0) * 100.0


def speedup_of_gain(g_pct: float) -> float:
    """T_best/T_swing for a gain in percent (inverse of `gain_pct`)."""
    g = g_pct / 100.0
    return 1.0 + g if g >= 0 else 1.0 / (1.0 - g)


# ==== results =================================================================================


@dataclass(frozen=True)
class Curve:
    key: str  # entry key, or variant label
    label: str
    kind: str  # "entry" | "variant"
    times_s: tuple[float, ...]
    goodput_gbps: tuple[float, ...]
    chosen: tuple[str, ...]  # the variant that gives the time at each size


@dataclass(frozen=True)
class CaseResult:
    name: str  # "8x8", or "8x8@100Gb/s" for the bandwidth sweep
    shape: str
    dims: tuple[int, ...]
    bandwidth_Bps: float
    base: bool  # at the config's link bandwidth
    sizes: tuple[float, ...]
    peak_gbps: float  # D x link bandwidth
    entries: tuple[Curve, ...]
    variants: tuple[Curve, ...]
    gain_pct: tuple[float | None, ...]  # Swing vs the best baseline at each size
    best_baseline: tuple[str | None, ...]

    def entry(self, key: str) -> Curve | None:
        return next((c for c in self.entries if c.key == key), None)

    def size_index(self, size: float) -> int | None:
        for i, s in enumerate(self.sizes):
            if math.isclose(s, size, rel_tol=1e-9):
                return i
        return None


@dataclass(frozen=True)
class GainRow:
    figure: str
    case: str
    shape: str
    bandwidth_gbps: float
    size: float
    size_label: str
    ours_pct: float
    paper_pct: float  # middle of the paper's range
    paper_lo: float
    paper_hi: float
    diff_pp: float  # ours - paper (to the nearest end of a range; 0 inside it)
    ratio: float  # our speedup over the best other / the paper's (1 + gain factors)
    ours_vs: str
    paper_vs: str | None


@dataclass(frozen=True)
class PeakRow:
    shape: str
    size: float
    ours_gbps: float
    peak_gbps: float
    ours_fraction: float
    ours_model_fraction: float | None  # 1 / (Psi Xi) of Swing-B: the bandwidth-only bound
    spec_model_fraction: float | None
    sst_fraction: float | None
    ratio_vs_sst: float | None


@dataclass(frozen=True)
class LatencyRow:
    shape: str
    entry: str
    label: str
    ours_us: float
    paper_us: float | None
    ratio: float | None


@dataclass(frozen=True)
class GoodputRow:
    shape: str
    entry: str
    label: str
    size: float
    ours_gbps: float | None
    paper_gbps: float
    ratio: float | None


@dataclass(frozen=True)
class DeficiencyRow:
    shape: str
    variant: str
    algorithm: str
    table2: str | None
    steps: int
    lam: float
    psi: float
    xi: float
    psi_xi: float
    latency_us: float
    paper_lam: float | None
    paper_psi: float | None
    paper_xi: float | None
    exact_kind: str | None  # "Psi*Xi" (Swing-B: sum_s delta/2^(s+1)) or "hops" (L: sum of distances)
    exact_ours: float | None  # ours in that normalisation
    exact_spec: float | None  # the spec's exact value, where given


@dataclass(frozen=True)
class Reproduction:
    config: str
    quick: bool
    model: str
    link_bandwidth_Bps: float
    hop_latency_s: float
    step_overhead_s: float
    cases: tuple[CaseResult, ...]
    gains: tuple[GainRow, ...]
    peaks: tuple[PeakRow, ...]
    latencies: tuple[LatencyRow, ...]
    goodputs: tuple[GoodputRow, ...]
    deficiencies: tuple[DeficiencyRow, ...]
    warnings: tuple[str, ...]  # algorithms not registered (skipped)
    notes: tuple[str, ...]  # algorithms that do not serve a shape (skipped, as in the paper)
    elapsed_s: float = 0.0

    def case(self, name: str) -> CaseResult | None:
        return next((c for c in self.cases if c.name == name), None)

    def to_dict(self) -> dict:
        return _jsonable(asdict(self))


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return None if not math.isfinite(float(x)) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    return x


def bandwidth_label(Bps: float) -> str:
    gbps = Bps * 8 / 1e9
    return f"{gbps / 1000:g} Tb/s" if gbps >= 1000 else f"{gbps:g} Gb/s"


def _case_result(name, shape: Shape, bw: float, base: bool, sizes, cfg: SwingConfig,
                 var_times: dict[str, np.ndarray]) -> CaseResult:
    sizes_a = np.asarray(sizes, dtype=float)
    variants, entries = [], []
    for e in cfg.algorithms:
        have = [v for v in e.variants if v.label in var_times]
        if not e.applies_to(shape.name) or not have:
            continue
        for v in have:
            t = var_times[v.label]
            variants.append(Curve(v.label, v.label, "variant", tuple(t), tuple(goodput_gbps(sizes_a, t)), (v.label,) * len(t)))
        stack = np.stack([var_times[v.label] for v in have])
        k = np.argmin(stack, axis=0)
        t = stack[k, np.arange(len(sizes_a))]
        entries.append(Curve(e.key, e.label, "entry", tuple(t), tuple(goodput_gbps(sizes_a, t)), tuple(have[i].label for i in k)))
    subj = next((c for c in entries if c.key == cfg.subject.key), None)
    base_keys = {e.key for e in cfg.algorithms if e.role == "baseline"}
    bases = [c for c in entries if c.key in base_keys]
    gains: list[float | None] = []
    best: list[str | None] = []
    for i in range(len(sizes_a)):
        if subj is None or not bases:
            gains.append(None)
            best.append(None)
            continue
        b = min(bases, key=lambda c: c.times_s[i])
        gains.append(gain_pct(subj.times_s[i], b.times_s[i]))
        best.append(b.key)
    return CaseResult(name, shape.name, shape.dims, bw, base, tuple(float(s) for s in sizes_a),
                      shape.D * bw * 8 / 1e9, tuple(entries), tuple(variants), tuple(gains), tuple(best))


def goodput_table(case: CaseResult, variants: bool = False) -> list[dict]:
    """(a) Goodput (Gb/s) per algorithm and size on one case: one row per size."""
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
    """(b) For every case and size where the paper gives a gain: ours beside the paper's."""
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
    """(c) Swing's goodput at the largest size as a fraction of D x link bandwidth."""
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
    """(d) 32 B runtimes beside the paper's labels (every shape with labels that was run)."""
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
    """How close the gains are, over all rows of the reproduction table."""
    if not rep.gains:
        return {"rows": 0}
    d = np.array([abs(r.diff_pp) for r in rep.gains])
    same_sign = sum(1 for r in rep.gains if (r.ours_pct >= 0) == (r.paper_pct >= 0) or abs(r.paper_pct) <= 3)
    return {"rows": len(rep.gains), "median_abs_diff_pp": float(np.median(d)), "within_10pp": int((d <= 10).sum()),
            "within_25pp": int((d <= 25).sum()), "same_sign": same_sign,
            "median_ratio": float(np.median([r.ratio for r in rep.gains]))}
