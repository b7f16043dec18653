"""The one unknown of the FRED reproduction, inferred from one published result.

The paper gives no NPU speed ("H100 GPU-like", Table 3 unreadable); with an H100-class roofline
compute is nearly the whole mesh iteration and no fabric can give 1.4-1.9x (docs/fred.md). The
speed is therefore the ONE unknown inferred from ONE published result: a factor k on the stated
NPU's peak FLOP/s and memory bandwidth together, found by bisection on log k so that
`compute.calibrated.workload`'s `target` speedup over the mesh (Transformer-17B's Fred-C, 1.75x,
Sec. 8.2) is the paper's. That factor is used for every workload and the strategy sweep: every
other figure of the `calibrated` column is a prediction.

Run `python -m fabricsim.experiments.fred.calibrate [--config FILE] [--sweep]` to print the factor
for `compute.calibrated.speed` in configs/fred.yaml and, as a diagnostic that fits nothing, the
speedup the factor predicts for every other workload's target and (with --sweep) the factor at
which each strategy sweep's mean speedup would be the paper's.
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
    """The target system's speedup over the mesh for one workload at one NPU speed factor.

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


def calibrate(cfg: FredConfig, workload: str | None = None, rel: float = 1e-5) -> Calibration:
    """The factor at which the target's speedup equals the paper's (bisection on log factor).

    Parameters
    ----------
    cfg : FredConfig
    workload : str, optional
        The published result's workload (default `compute.calibrated.workload`, the one the
        reproduction infers its factor from; another one only as a diagnostic).
    rel : float
        Relative width of the final bracket (1e-5: the factor to 5 significant digits).

    Returns
    -------
    Calibration
        The speedup rises with the factor (compute shrinks, communication stays); when it stays
        below the paper's at the bracket's top the calibration is unreachable.
    """
    workload = workload or cfg.compute.calibrated.workload
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
    """The NPU factor at which the sweep's mean speedup would be the paper's (a diagnostic, not
    used by the reproduction: it says how far the one factor is from what the sweep implies).

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
    """Print the one factor, the `speed:` line for the config and what it predicts elsewhere.

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
    cal = cfg.compute.calibrated
    c = calibrate(cfg)
    state = "" if c.reachable else "  UNREACHABLE: the limit with compute -> 0"
    print(f"# inferred from {c.workload} {cal.target} {c.paper}x: speed x{c.speed:.5g}, "
          f"{cal.target} speedup {c.speedup:.5f}{state}", flush=True)
    print(f"speed: {c.speed:.5g}")
    for wl in cfg.workloads:  # predictions at that factor (nothing is fitted here)
        if wl != c.workload and cal.target in cfg.workloads[wl].paper_speedup:
            got = target_speedup(cfg, wl, c.speed)
            print(f"# predicted {wl} {cal.target}: {got:.4f} (paper {cfg.workloads[wl].paper_speedup[cal.target]})",
                  flush=True)
    if "--sweep" in args:
        for wl in cfg.sweep.workloads:
            s = sweep_speed_needed(cfg, wl)
            print(f"# sweep {wl}: mean speedup {s.paper} would need NPU x{s.speed:.4g} "
                  f"(the one factor: x{c.speed:.5g})")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
