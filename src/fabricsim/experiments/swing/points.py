"""The Swing reproduction as points: one point per case, a torus shape at one link bandwidth (the
config's, or one of the bandwidth sweep's), with the variants that apply to it. `evaluate` (pure,
picklable) builds every variant's schedule on that torus and prices every size in one pass;
`summarize` turns the rows into curves and gains and compares them with the paper.

Model (spec section 3, "recommended simulator model"): every collective is a sequence of lock-step
steps; a step lasts alpha + the longest path latency of its transfers (400 ns per hop = 100 ns link +
300 ns processing) + the larger of the bytes on its most loaded link / link bandwidth and the bytes
a node sends in it / the node's injection bound (the SST artifact's NIC, `calibrate.injection_Bps`):
the congestion-aware model of `network.model`, with the per-step overhead alpha (given, or inferred
from one labelled runtime, `calibrate.step_overhead`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError
from .calibrate import injection_Bps, step_overhead
from .config import Shape, SwingConfig, Variant
from .results import DeficiencyRow, Reproduction, bandwidth_label, case_result
from .tables import goodput_points, latency_table, peak_table, reproduction_table


@dataclass(frozen=True)
class Deficiency:
    """The paper's deficiencies of one schedule on one torus, and the sums behind them.

    Parameters
    ----------
    steps : int
    lam : float
        Lambda = steps / log2 p.
    psi : float
        Psi = sum over steps of the largest message / (n / D).
    xi : float
        Xi = sum over steps of the busiest link's bytes / the same sum of largest messages.
    msg_frac : float
        Sum over steps of the largest message, in units of the vector size n.
    link_frac : float
        Sum over steps of the busiest link's bytes / n (bandwidth time = n beta link_frac).
    latency_s : float
        Sum over steps of the longest path latency, s.
    """

    steps: int
    lam: float
    psi: float
    xi: float
    msg_frac: float
    link_frac: float
    latency_s: float

    @property
    def psi_xi(self) -> float:
        """Bandwidth time in units of n beta / D."""
        return self.psi * self.xi


def deficiency(topo, sched) -> Deficiency:
    """The deficiencies of a schedule on a topology (`network.deficiencies`, Table 2's definitions).

    Parameters
    ----------
    topo : Topology
    sched : Schedule
        Placed on `topo`.

    Returns
    -------
    Deficiency
        Lambda, Psi, Xi, the sums behind them and the summed longest path latency (hops x
        per-hop latency, s).
    """
    from ...ir import lane_total
    from ...network.analytical import deficiencies, route_schedule

    routed = route_schedule(topo, sched)
    d = deficiencies(topo, sched, routed=routed)
    lat = lane_total(sched.steps, np.array([r.repeat * float(r.path_latency.max(initial=0.0)) for r in routed]))
    link = lane_total(sched.steps, np.array([r.repeat * float(r.link_frac.max(initial=0.0)) for r in routed]))
    D = sum(1 for x in topo.dims if x > 1) or 1
    return Deficiency(sched.n_steps, d.latency, d.bandwidth, d.congestion, d.bandwidth / D, float(link), float(lat))


@dataclass(frozen=True)
class CasePoint:
    """One case to run: a shape at one link bandwidth, with everything `evaluate` needs.

    Parameters
    ----------
    shape : Shape
    bandwidth_Bps : float
        Link bandwidth, bytes/s.
    base : bool
        At the config's link bandwidth (False: a case of the bandwidth sweep). Deficiencies and
        notes come from the base case only: they do not depend on the bandwidth.
    sizes : tuple of float
        Vector sizes, bytes.
    variants : tuple of Variant
        The registered variants of the entries drawn for this shape.
    model : str
        The analytical model's name (`network.model.get_network_model`).
    step_overhead_s : float
        Per-step overhead alpha, s.
    hop_latency_s : float
        Latency per hop, s.
    injection_Bps : float, optional
        What a node can inject for the collective, bytes/s (None: no bound).
    """

    shape: Shape
    bandwidth_Bps: float
    base: bool
    sizes: tuple[float, ...]
    variants: tuple[Variant, ...]
    model: str
    step_overhead_s: float
    hop_latency_s: float
    injection_Bps: float | None = None

    @property
    def name(self) -> str:
        """The case's name: `8x8`, or `8x8@100Gb/s` in the bandwidth sweep."""
        return self.shape.name if self.base else f"{self.shape.name}@{bandwidth_label(self.bandwidth_Bps).replace(' ', '')}"

    @property
    def label(self) -> str:
        """What progress bars show (`torus 8x8`, `hyperx 8x8`, `torus 8x8 at 100 Gb/s`)."""
        return f"{self.shape.topology} {self.shape.name}" + ("" if self.base else f" at {bandwidth_label(self.bandwidth_Bps)}")


@dataclass(frozen=True)
class CaseRows:
    """What one point gives.

    Parameters
    ----------
    case : str
        The case's name (`CasePoint.name`).
    times : tuple of (str, tuple of float)
        Per variant label, its time at each size of the point, s.
    deficiencies : tuple of (str, Deficiency)
        Per variant label (base cases only; empty otherwise).
    notes : tuple of str
        Variants that do not serve the shape (base cases only).
    """

    case: str
    times: tuple[tuple[str, tuple[float, ...]], ...]
    deficiencies: tuple[tuple[str, Deficiency], ...]
    notes: tuple[str, ...]


def points(cfg: SwingConfig, quick: bool = False, shapes: Sequence[str] | None = None) -> list[CasePoint]:
    """The cases of a run, in report order: per shape, the base case, then its sweep bandwidths.

    Parameters
    ----------
    cfg : SwingConfig
    quick : bool
        The config's quick subset of shapes (and the sweep only if `quick.bandwidth_sweep`).
    shapes : sequence of str, optional
        These shapes only (overrides `quick`'s choice of shapes).

    Returns
    -------
    list of CasePoint
        ConfigError for a shape name the config does not have.
    """
    from ...collectives.registry import ALGORITHMS

    names = list(shapes) if shapes is not None else list(cfg.quick_shapes if quick else [s.name for s in cfg.shapes])
    for n in names:
        if n not in [s.name for s in cfg.shapes]:
            raise ConfigError("shapes", n, f"accepted: {', '.join(s.name for s in cfg.shapes)}")
    do_sweep = cfg.sweep_shape is not None and (cfg.quick_sweep or not quick)
    alpha = step_overhead(cfg)
    out = []
    for name in names:
        shape = cfg.shape(name)
        bws = [cfg.link_bandwidth_Bps]
        if do_sweep and name == cfg.sweep_shape:
            bws += [b for b in cfg.sweep_bandwidths if not math.isclose(b, cfg.link_bandwidth_Bps)]
        variants = tuple(v for e in cfg.algorithms if e.applies_to(name) for v in e.variants if v.algorithm in ALGORITHMS)
        sizes = cfg.sizes_extended if shape.extended else cfg.sizes
        inj = injection_Bps(cfg, shape)
        out += [CasePoint(shape, bw, k == 0, sizes, variants, cfg.model, alpha, cfg.hop_latency_s, inj)
                for k, bw in enumerate(bws)]
    return out


def evaluate(point: CasePoint) -> CaseRows:
    """Price every variant of one case at every size (pure: depends on `point` only).

    Parameters
    ----------
    point : CasePoint

    Returns
    -------
    CaseRows
        Times (s) per variant and size through `get_network_model(model).collective(topo,
        schedule, injection).times(sizes)`; on a base case also the deficiencies, and notes for the
        variants that cannot serve the shape (e.g. Hamiltonian rings in 3-D).
    """
    from ...collectives.api import build_schedule
    from ...network.model import get_network_model

    shape = point.shape
    model = get_network_model(point.model, step_overhead=point.step_overhead_s)
    topo = shape.build(point.bandwidth_Bps, point.hop_latency_s)
    scheds, notes = {}, []
    for v in point.variants:
        try:
            scheds[v.label] = build_schedule(topo, "all-reduce", v.algorithm, **v.options_dict)
        except ConfigError as err:  # the algorithm does not serve this shape
            notes.append(f"{shape.name}: {v.label} ({v.algorithm}) not applicable: {err}")
    priced = {lab: model.collective(topo, s, injection=point.injection_Bps).times(point.sizes) for lab, s in scheds.items()}
    times = tuple((lab, tuple(float(x) for x in t)) for lab, t in priced.items())
    if not point.base:
        return CaseRows(point.name, times, (), ())
    defs = tuple((lab, deficiency(topo, s)) for lab, s in scheds.items())
    return CaseRows(point.name, times, defs, tuple(notes))


def _deficiency_rows(cfg: SwingConfig, shape: Shape, rows: CaseRows) -> list[DeficiencyRow]:
    """The deficiency table's rows of one base case, beside Table 2 and the spec's exact values."""
    exact = dict(cfg.swing_b_exact)
    lsums = {(s, k): v for s, k, v in cfg.l_distance_sums}
    got = dict(rows.deficiencies)
    p, D, dmax = shape.p, shape.D, max(shape.dims)
    out = []
    for v in (v for e in cfg.algorithms for v in e.variants if v.label in got):
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


def _warnings(cfg: SwingConfig) -> list[str]:
    """One warning per paper algorithm the config lists that is not registered (skipped)."""
    from ...collectives.registry import ALGORITHMS

    out = []
    for alg in sorted({v.algorithm for e in cfg.algorithms for v in e.variants}):
        if alg not in ALGORITHMS:
            users = [v.label for e in cfg.algorithms for v in e.variants if v.algorithm == alg]
            out.append(f"algorithm {alg!r} is not registered in fabricsim.collectives.registry: "
                       f"skipping {', '.join(users)}")
    return out


def summarize(cfg: SwingConfig, pts: Sequence[CasePoint], rows: Sequence[CaseRows], quick: bool = False,
              elapsed_s: float = 0.0) -> Reproduction:
    """The reproduction from the points' rows: curves and gains per case, and every table.

    Parameters
    ----------
    cfg : SwingConfig
    pts : sequence of CasePoint
    rows : sequence of CaseRows
        `rows[i] = evaluate(pts[i])`.
    quick : bool
        Whether this was the quick subset (recorded in the report).
    elapsed_s : float
        Wall time of the run, s (recorded).

    Returns
    -------
    Reproduction
    """
    cases, defs, notes = [], [], []
    for pt, r in zip(pts, rows, strict=True):
        times = {lab: np.asarray(t) for lab, t in r.times}
        cases.append(case_result(r.case, pt.shape, pt.bandwidth_Bps, pt.base, pt.sizes, cfg, times))
        defs += _deficiency_rows(cfg, pt.shape, r)
        notes += r.notes
    cases_t = tuple(cases)
    cal = cfg.step_overhead_from
    return Reproduction(
        config=cfg.name, quick=quick, model=cfg.model, link_bandwidth_Bps=cfg.link_bandwidth_Bps,
        hop_latency_s=cfg.hop_latency_s, step_overhead_s=step_overhead(cfg), cases=cases_t,
        gains=tuple(reproduction_table(cfg, cases_t)), peaks=tuple(peak_table(cfg, cases_t, defs)),
        latencies=tuple(latency_table(cfg, cases_t)), goodputs=tuple(goodput_points(cfg, cases_t)),
        deficiencies=tuple(defs), warnings=tuple(_warnings(cfg)), notes=tuple(notes), elapsed_s=elapsed_s,
        nic_injection_Bps=cfg.nic_injection_Bps, packet_size_B=cfg.packet_size_B,
        packet_overhead_s=cfg.packet_overhead_s, calibration_point=None if cal is None else (cal[0], cal[1]),
        calibration_us=None if cal is None else cal[2] * 1e6,
    )


def run(cfg: SwingConfig, quick: bool = False, shapes: Sequence[str] | None = None,
        progress: Callable[[int, int, str], None] | None = None, map_fn: Callable = map) -> Reproduction:
    """Every case (or the quick subset, or `shapes`) evaluated through `map_fn` and summarized.

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
