"""The Swing reproduction as points: one point per torus shape (its link bandwidths, sizes and the
variants that apply), `evaluate` (pure, picklable) builds every schedule once and prices every size
at every bandwidth, `summarize` compares with the paper.

Model (spec section 3, "recommended simulator model"): every collective is a sequence of lock-step
steps; a step lasts alpha + the longest path latency of its transfers (400 ns per hop = 100 ns link +
300 ns processing) + the bytes on its most loaded link / link bandwidth: the congestion-aware model
of `network.model`, with the per-step overhead alpha.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError
from .config import Shape, SwingConfig, Variant
from .results import (
    DeficiencyRow,
    Reproduction,
    _case_result,
    bandwidth_label,
    goodput_points,
    latency_table,
    peak_table,
    reproduction_table,
)


@dataclass(frozen=True)
class Deficiency:
    """The paper's deficiencies of one schedule on one torus, and the sums behind them."""

    steps: int
    lam: float  # steps / log2 p
    psi: float  # sum_steps largest message / (n / D)
    xi: float  # sum_steps max link bytes / sum_steps largest message
    msg_frac: float  # sum_steps largest message bytes / n
    link_frac: float  # sum_steps max link bytes / n (bandwidth time = n beta link_frac)
    latency_s: float  # sum_steps longest path latency

    @property
    def psi_xi(self) -> float:
        """Bandwidth time in units of n beta / D."""
        return self.psi * self.xi


def deficiency(topo, sched) -> Deficiency:
    """Lambda, Psi and Xi (`network.deficiencies`, the paper's Table 2 definitions), plus the
    sums behind them and the summed longest path latency (hops x per-hop latency)."""
    from ...collectives.schedule import lane_total
    from ...network.analytical import deficiencies, route_schedule

    routed = route_schedule(topo, sched)
    d = deficiencies(topo, sched, routed=routed)
    lat = lane_total(sched.steps, np.array([r.repeat * float(r.path_latency.max(initial=0.0)) for r in routed]))
    link = lane_total(sched.steps, np.array([r.repeat * float(r.link_frac.max(initial=0.0)) for r in routed]))
    D = sum(1 for x in topo.dims if x > 1) or 1
    return Deficiency(sched.n_steps, d.latency, d.bandwidth, d.congestion, d.bandwidth / D, float(link), float(lat))


@dataclass(frozen=True)
class CasePoint:
    """One torus shape to run: plain data, everything `evaluate` needs."""

    shape: Shape
    bandwidths: tuple[float, ...]  # bytes/s; the first is the config's link bandwidth (the base case)
    sizes: tuple[float, ...]  # bytes
    variants: tuple[Variant, ...]  # registered variants of the entries that apply to the shape
    model: str
    step_overhead_s: float
    hop_latency_s: float

    @property
    def label(self) -> str:
        return f"torus {self.shape.name}"


@dataclass(frozen=True)
class CaseRows:
    """What one point gives: per bandwidth the times of every variant, the base case's deficiencies."""

    shape: str
    times: tuple[tuple[float, tuple[tuple[str, tuple[float, ...]], ...]], ...]  # (bandwidth, ((label, s per size), ...))
    deficiencies: tuple[tuple[str, Deficiency], ...]  # (variant label, deficiency at the base bandwidth)
    notes: tuple[str, ...]  # variants that do not serve the shape


def points(cfg: SwingConfig, quick: bool = False, shapes: Sequence[str] | None = None) -> list[CasePoint]:
    """One point per shape of the run (every shape, the quick subset, or `shapes`)."""
    from ...collectives.registry import ALGORITHMS

    names = list(shapes) if shapes is not None else list(cfg.quick_shapes if quick else [s.name for s in cfg.shapes])
    for n in names:
        if n not in [s.name for s in cfg.shapes]:
            raise ConfigError("shapes", n, f"accepted: {', '.join(s.name for s in cfg.shapes)}")
    do_sweep = cfg.sweep_shape is not None and (cfg.quick_sweep or not quick)
    out = []
    for name in names:
        shape = cfg.shape(name)
        bws = [cfg.link_bandwidth_Bps]
        if do_sweep and name == cfg.sweep_shape:
            bws += [b for b in cfg.sweep_bandwidths if not math.isclose(b, cfg.link_bandwidth_Bps)]
        variants = tuple(v for e in cfg.algorithms if e.applies_to(name) for v in e.variants if v.algorithm in ALGORITHMS)
        out.append(CasePoint(shape, tuple(bws), cfg.sizes_extended if shape.extended else cfg.sizes, variants,
                             cfg.model, cfg.step_overhead_s, cfg.hop_latency_s))
    return out


def evaluate(point: CasePoint) -> CaseRows:
    """Build every variant's schedule once on the point's torus and price all sizes at every
    bandwidth in one pass each; deficiencies on the base torus. Pure: depends on `point` only."""
    from ...collectives.api import build_schedule
    from ...network.model import get_network_model

    shape = point.shape
    model = get_network_model(point.model, step_overhead=point.step_overhead_s)
    base = shape.build(point.bandwidths[0], point.hop_latency_s)
    scheds, notes = {}, []
    for v in point.variants:
        try:
            scheds[v.label] = build_schedule(base, "all-reduce", v.algorithm, **v.options_dict)
        except ConfigError as err:  # the algorithm does not serve this shape (e.g. rings in 3-D)
            notes.append(f"{shape.name}: {v.label} ({v.algorithm}) not applicable: {err}")
    times = []
    for k, bw in enumerate(point.bandwidths):
        topo = base if k == 0 else shape.build(bw, point.hop_latency_s)
        times.append((bw, tuple((lab, tuple(float(x) for x in model.collective(topo, s).times(point.sizes)))
                                for lab, s in scheds.items())))
    defs = tuple((lab, deficiency(base, s)) for lab, s in scheds.items())
    return CaseRows(shape.name, tuple(times), defs, tuple(notes))


def _deficiency_rows(cfg: SwingConfig, shape: Shape, rows: CaseRows) -> list[DeficiencyRow]:
    exact = dict(cfg.swing_b_exact)
    lsums = {(s, k): v for s, k, v in cfg.l_distance_sums}
    got = dict(rows.deficiencies)
    p, D, dmax = shape.p, shape.D, max(shape.dims)
    out = []
    for e in cfg.algorithms:
        for v in e.variants:
            if v.label not in got:
                continue
            d = got[v.label]
            row = cfg.table2_row(v.table2)
            pl, pp, px = row.values(p, D, dmax) if row is not None else (None, None, None)
            if v.table2 == "swing_b":
                ek, eo, es = "Psi*Xi", d.psi_xi, exact.get(shape.name)
            elif v.options_dict.get("mode") == "latency" or (v.table2 or "").endswith("_l"):
                ek, eo, es = "hops", d.latency_s / cfg.hop_latency_s, lsums.get((shape.name, v.table2))
            else:
                ek = eo = es = None
            out.append(DeficiencyRow(shape.name, v.label, v.algorithm, v.table2, d.steps, d.lam, d.psi, d.xi, d.psi_xi,
                                     d.latency_s * 1e6, pl, pp, px, ek, eo, es))
    return out


def summarize(cfg: SwingConfig, pts: Sequence[CasePoint], rows: Sequence[CaseRows], quick: bool = False,
              elapsed_s: float = 0.0) -> Reproduction:
    """The cases (curves, gains) and every comparison table, from the points' rows."""
    from ...collectives.registry import ALGORITHMS

    warnings = []
    for alg in sorted({v.algorithm for e in cfg.algorithms for v in e.variants}):
        if alg not in ALGORITHMS:
            users = [v.label for e in cfg.algorithms for v in e.variants if v.algorithm == alg]
            warnings.append(f"algorithm {alg!r} is not registered in fabricsim.collectives.registry: "
                            f"skipping {', '.join(users)}")
    cases, defs, notes = [], [], []
    for pt, r in zip(pts, rows):
        for k, (bw, per) in enumerate(r.times):
            name = pt.shape.name if k == 0 else f"{pt.shape.name}@{bandwidth_label(bw).replace(' ', '')}"
            times = {lab: np.asarray(t) for lab, t in per}
            cases.append(_case_result(name, pt.shape, bw, k == 0, pt.sizes, cfg, times))
        defs += _deficiency_rows(cfg, pt.shape, r)
        notes += r.notes
    cases_t = tuple(cases)
    return Reproduction(
        config=cfg.name, quick=quick, model=cfg.model, link_bandwidth_Bps=cfg.link_bandwidth_Bps,
        hop_latency_s=cfg.hop_latency_s, step_overhead_s=cfg.step_overhead_s, cases=cases_t,
        gains=tuple(reproduction_table(cfg, cases_t)), peaks=tuple(peak_table(cfg, cases_t, defs)),
        latencies=tuple(latency_table(cfg, cases_t)), goodputs=tuple(goodput_points(cfg, cases_t)),
        deficiencies=tuple(defs), warnings=tuple(warnings), notes=tuple(notes), elapsed_s=elapsed_s,
    )


def run(cfg: SwingConfig, quick: bool = False, shapes: Sequence[str] | None = None,
        progress: Callable[[int, int, str], None] | None = None, map_fn=map) -> Reproduction:
    """Every shape (or the quick subset, or `shapes`) evaluated through `map_fn` and summarized.

    Parameters
    ----------
    cfg : SwingConfig
    quick : bool
        The config's quick subset of shapes.
    shapes : sequence of str, optional
        These shapes only.
    progress : callable, optional
        `progress(done, total, label)` as points finish.
    map_fn : callable
        A map (builtin `map`, a process pool's `map`).

    Returns
    -------
    Reproduction
    """
    from ..base import evaluate_points

    t0 = time.perf_counter()
    pts = points(cfg, quick, shapes)
    rows = evaluate_points(evaluate, pts, map_fn, progress, lambda p: p.label)
    return summarize(cfg, pts, rows, quick, time.perf_counter() - t0)
