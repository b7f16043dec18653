"""The calibrated compute setting of the FRED reproduction: per workload, the one NPU throughput
at which the target system's (Fred-C's) speedup over the mesh equals the paper's.

The paper gives no NPU speed ("H100 GPU-like"); with an H100-class roofline compute is nearly the
whole mesh iteration and no fabric can give 1.4-1.9x (docs/fred.md). This is a CALIBRATION, not a
parameter of the paper: one number per workload, a factor k on the stated NPU's peak FLOP/s and
memory bandwidth together, found by bisection on log k. Everything else in the calibrated column
is predicted with it.

Run `python -m fabricsim.experiments.fred.calibrate [--config FILE] [--sweep]` to print the
factors for `compute.calibrated.speed` in configs/fred.yaml (and, with --sweep, the factor at
which each strategy sweep's mean speedup would be the paper's, for comparison).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

from .config import FredConfig, load_config
from .training import evaluate_train, TrainPoint, train_config

LOW, HIGH = 1.0, 1e4  # bracket of the factor searched


@dataclass(frozen=True)
class Calibration:
    """One workload's calibration.

    Parameters
    ----------
    workload : str
    speed : float
        The factor on the stated NPU's throughput (the bracket's end when unreachable).
    speedup : float
        The target system's speedup over the mesh at `speed`.
    paper : float
        The paper's speedup it was matched to.
    reachable : bool
        False when even the fastest NPU of the bracket leaves the speedup below the paper's
        (communication alone cannot give it); `speedup` is then that limit.
    """

    workload: str
    speed: float
    speedup: float
    paper: float
    reachable: bool


def target_speedup(cfg: FredConfig, workload: str, speed: float) -> float:
    """The calibration target's speedup over the mesh at one NPU speed factor.

    Parameters
    ----------
    cfg : FredConfig
    workload : str
        A key of `cfg.workloads`.
    speed : float
        Factor on the stated NPU's peak and memory bandwidth.

    Returns
    -------
    float
        mesh iteration / target iteration, on `compute.calibrated`'s network model and
        iterations.
    """
    cal = cfg.compute.calibrated
    times = []
    for system in ("mesh", cal.target):
        tc = train_config(cfg, workload, system, cal.iterations, cal.network_model, speed=speed)
        times.append(evaluate_train(TrainPoint(workload, system, cal.iterations, tc, None)).iteration_s)
    return times[0] / times[1]


def calibrate(cfg: FredConfig, workload: str, rel: float = 2e-3) -> Calibration:
    """The factor at which the target's speedup equals the paper's (bisection on log factor).

    Parameters
    ----------
    cfg : FredConfig
    workload : str
        A key of `cfg.workloads` with a paper speedup for the target system.
    rel : float
        Relative width of the final bracket.

    Returns
    -------
    Calibration
        The speedup rises with the factor (compute shrinks, communication stays); when it stays
        below the paper's at the bracket's top the calibration is unreachable.
    """
    paper = cfg.workloads[workload].paper_speedup[cfg.compute.calibrated.target]
    top = target_speedup(cfg, workload, HIGH)
    if top < paper:
        return Calibration(workload, HIGH, top, paper, False)
    k = _bisect(lambda x: target_speedup(cfg, workload, x), paper, rel)
    return Calibration(workload, k, target_speedup(cfg, workload, k), paper, True)


def _bisect(speedup, paper: float, rel: float) -> float:
    """The smallest factor in [LOW, HIGH] (to `rel` in log) at which `speedup(factor)` reaches
    `paper`, for a speedup that rises with the factor."""
    lo, hi = math.log(LOW), math.log(HIGH)
    while hi - lo > rel:
        mid = 0.5 * (lo + hi)
        if speedup(math.exp(mid)) < paper:
            lo = mid
        else:
            hi = mid
    return math.exp(hi)


def sweep_speedup(cfg: FredConfig, workload: str, speed: float) -> float:
    """The strategy sweep's mean speedup (compared system over the baseline) at one NPU factor.

    Parameters
    ----------
    cfg : FredConfig
    workload : str
        A key of `cfg.sweep.workloads`.
    speed : float
        Factor on the stated NPU's peak and memory bandwidth.

    Returns
    -------
    float
        Mean over the workload's strategies of baseline / compared time per sample, on the
        sweep's network model and iterations.
    """
    import numpy as np

    from .training import evaluate_sweep, sweep_point

    base, other = cfg.sweep.systems[0], cfg.sweep.systems[-1]
    its, model = cfg.sweep.iterations, cfg.sweep.network_model
    ratios = [evaluate_sweep(sweep_point(cfg, workload, name, base, its, model, speed=speed)).per_sample_s
              / evaluate_sweep(sweep_point(cfg, workload, name, other, its, model, speed=speed)).per_sample_s
              for name in cfg.sweep.workloads[workload].strategies]
    return float(np.mean(ratios))


def sweep_speed_needed(cfg: FredConfig, workload: str, rel: float = 1e-2) -> Calibration:
    """The NPU factor at which the sweep's mean speedup would be the paper's (not used by the
    reproduction: it says how far the end-to-end calibration is from what the sweep implies).

    Parameters
    ----------
    cfg : FredConfig
    workload : str
        A key of `cfg.sweep.workloads` with a paper `speedup`.
    rel : float
        Relative width of the final bracket.

    Returns
    -------
    Calibration
    """
    paper = float(cfg.sweep.workloads[workload].paper["speedup"])
    k = _bisect(lambda x: sweep_speedup(cfg, workload, x), paper, rel)
    return Calibration(workload, k, sweep_speedup(cfg, workload, k), paper, True)


def main(argv: list[str] | None = None) -> int:
    """Print every workload's calibration and the `speed:` line for the config.

    Parameters
    ----------
    argv : list of str, optional
        `[--config FILE] [--sweep]` (--sweep: also the factor each strategy sweep would need).

    Returns
    -------
    int
        0.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    path = args[args.index("--config") + 1] if "--config" in args else None
    cfg = load_config(path)
    got = []
    for wl in cfg.workloads:  # one at a time, printed as each is found (minutes on the flow model)
        c = calibrate(cfg, wl)
        got.append(c)
        state = "" if c.reachable else "  UNREACHABLE: the limit with compute -> 0"
        print(f"# {c.workload}: speed x{c.speed:.4g}, {cfg.compute.calibrated.target} speedup {c.speedup:.4f} "
              f"(paper {c.paper}){state}", flush=True)
    print("speed: {" + ", ".join(f"{c.workload}: {c.speed:.4g}" for c in got) + "}")
    if "--sweep" in args:
        for wl in cfg.sweep.workloads:
            c = sweep_speed_needed(cfg, wl)
            print(f"# sweep {wl}: mean speedup {c.paper} would need NPU x{c.speed:.4g} "
                  f"(end-to-end calibration: x{cfg.compute.calibrated.speed.get(wl, 1.0):.4g})")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
