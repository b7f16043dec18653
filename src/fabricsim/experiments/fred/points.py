"""The FRED reproduction as points: (a) a microbenchmark per (dimension, system), (b) traffic per
group size, (c) end to end per (workload, system), (d) the strategy sweep per (workload, strategy,
system). `evaluate` is pure and picklable; `summarize` computes the speedups over the mesh and the
sweep's averages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .comm import MicroPoint, MicroRow, TrafficPoint, TrafficRow, evaluate_micro, evaluate_traffic, micro_point, traffic_point
from .config import COMPUTE_SETTINGS, DIMENSIONS, FredConfig
from .training import (
    E2ERow,
    SweepPoint,
    SweepRow,
    TrainPoint,
    evaluate_sweep,
    evaluate_train,
    summarize_sweep,
    sweep_point,
    train_point,
)

FredPoint = MicroPoint | TrafficPoint | TrainPoint | SweepPoint
_EVALUATE = {MicroPoint: evaluate_micro, TrafficPoint: evaluate_traffic, TrainPoint: evaluate_train,
             SweepPoint: evaluate_sweep}


def points(cfg: FredConfig, quick: bool = False) -> list[FredPoint]:
    """Every measurement of the reproduction, in report order.

    Parameters
    ----------
    cfg : FredConfig
    quick : bool
        The CI subset: the quick workloads, iterations and network model, and the first
        `quick.sweep_strategies` strategies of each sweep workload.

    Returns
    -------
    list
        MicroPoint per (dimension, system), TrafficPoint per group size, TrainPoint per (compute
        setting, workload, system), SweepPoint per (compute setting, workload, strategy, system).
    """
    systems = list(cfg.systems)
    out: list[FredPoint] = [micro_point(cfg, s, d) for d in DIMENSIONS for s in systems]
    out += [traffic_point(cfg, n) for n in cfg.traffic_group_sizes]
    its = cfg.quick.iterations if quick else cfg.iterations
    model = cfg.quick.network_model if quick else cfg.network_model
    for comp in COMPUTE_SETTINGS:
        for wl in (cfg.quick.workloads if quick else list(cfg.workloads)):
            out += [train_point(cfg, wl, s, its, model, comp) for s in systems]
    n_strat = cfg.quick.sweep_strategies if quick else None
    sw_model = cfg.quick.network_model if quick else cfg.sweep.network_model
    sw_its = cfg.quick.iterations if quick else cfg.sweep.iterations
    for comp in COMPUTE_SETTINGS:
        for wl, spec in cfg.sweep.workloads.items():
            out += [sweep_point(cfg, wl, strategy, system, sw_its, sw_model, comp)
                    for strategy in spec.strategies[:n_strat] for system in cfg.sweep.systems]
    return out


def evaluate(point: FredPoint) -> MicroRow | TrafficRow | E2ERow | SweepRow:
    """The row of one measurement (pure: depends on the point only).

    Parameters
    ----------
    point : MicroPoint, TrafficPoint, TrainPoint or SweepPoint

    Returns
    -------
    MicroRow, TrafficRow, E2ERow or SweepRow
    """
    return _EVALUATE[type(point)](point)


def label(point: FredPoint) -> str:
    """What progress bars show for a point.

    Parameters
    ----------
    point : FredPoint
        Any of the four kinds of point.

    Returns
    -------
    str
        `point.label`, e.g. `micro MP(20) mesh`.
    """
    return point.label


def summarize(cfg: FredConfig, pts: Sequence[FredPoint], rows: Sequence, quick: bool = False, elapsed_s: float = 0.0):
    """The reproduction from the points' rows.

    Parameters
    ----------
    cfg : FredConfig
    pts : sequence of points
    rows : sequence
        `rows[i] = evaluate(pts[i])`.
    quick : bool
        Whether this was the CI subset (recorded).
    elapsed_s : float
        Wall time of the run, s (not recorded).

    Returns
    -------
    Reproduction
        Rows by part, end-to-end speedups over the mesh, the sweep's averages, and the
        (workload, system) the one NPU factor is inferred from.
    """
    from .report import Reproduction

    def of(kind):
        return [r for r in rows if isinstance(r, kind)]

    e2e = []
    for comp, wl in dict.fromkeys((r.compute, r.workload) for r in of(E2ERow)):
        got = [r for r in of(E2ERow) if r.workload == wl and r.compute == comp]
        base = next(r for r in got if r.system == "mesh").iteration_s
        for r in got:
            sp = base / r.iteration_s if base and r.iteration_s else None
            e2e.append(replace(r, speedup=sp))
    sweep = of(SweepRow)
    cal = cfg.compute.calibrated
    return Reproduction(cfg.name, quick, tuple(of(MicroRow)), tuple(of(TrafficRow)), tuple(e2e), tuple(sweep),
                        tuple(summarize_sweep(cfg, sweep)), (cal.workload, cal.target))
