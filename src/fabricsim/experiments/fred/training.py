"""FRED parts (c) and (d): end-to-end training per (workload, system) and the strategy sweep per
(workload, strategy, system). Each point carries the validated training config it runs
(`fabricsim.train.TrainConfig`, plain data); evaluating it is `fabricsim.train.run_train`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ConfigError
from .config import COMPUTE_SETTINGS, FredConfig, Par, network, parse_strategy

if TYPE_CHECKING:
    from ...train import TrainConfig

# ---------------------------------------------------------------- training configs


def npu_of(cfg: FredConfig, workload: str, compute: str, speed: float | None = None) -> dict:
    """The NPU section of a training config in one compute setting.

    Parameters
    ----------
    cfg : FredConfig
    workload : str
        A key of `cfg.workloads`.
    compute : str
        `as stated` or `calibrated` (`COMPUTE_SETTINGS`).
    speed : float, optional
        A factor on the stated NPU's throughput instead of the setting's (calibration's search).

    Returns
    -------
    dict
        peak (FLOP/s), memory_bandwidth (bytes/s), efficiency: as stated, or with peak and memory
        bandwidth times the speed factor.
    """
    n = cfg.compute.as_stated
    k = speed_of(cfg, workload, compute) if speed is None else float(speed)
    return {"peak": n.peak * k, "memory_bandwidth": n.memory_bandwidth * k, "efficiency": n.efficiency}


def speed_of(cfg: FredConfig, workload: str, compute: str) -> float:
    """The factor on the stated NPU's throughput in one compute setting: 1 as stated; in the
    one-factor setting (`calibrated`) the ONE factor of `compute.calibrated.speed`, the same for
    every workload.

    Parameters
    ----------
    cfg : FredConfig
    workload : str
        A key of `cfg.workloads` (the factor does not depend on it).
    compute : str
        `as stated` or `calibrated`.

    Returns
    -------
    float
        ConfigError naming `compute` for another setting.
    """
    if compute not in COMPUTE_SETTINGS:
        raise ConfigError("compute", compute, f"accepted: {', '.join(COMPUTE_SETTINGS)}")
    return 1.0 if compute == "as stated" else float(cfg.compute.calibrated.speed)


def train_config(cfg: FredConfig, workload: str, system: str, iterations: int, model: str,
                 parallelism: Par | None = None, samples_per_dp: int | None = None,
                 compute: str = "as stated", speed: float | None = None) -> TrainConfig:
    """The training config of one workload on one system.

    Parameters
    ----------
    cfg : FredConfig
    workload : str
        A key of `cfg.workloads`.
    system : str
        A key of `cfg.systems`.
    iterations : int
        Training iterations simulated.
    model : str
        Network model name (`flow`, `analytical`).
    parallelism : Par, optional
        Instead of the workload's strategy.
    samples_per_dp : int, optional
        Instead of the workload's samples per DP replica (batch = DP x this).
    compute : str
        Compute setting: `as stated` or `calibrated`.
    speed : float, optional
        A factor on the stated NPU's throughput instead of the setting's (calibration's search).

    Returns
    -------
    TrainConfig
        With input loading through the I/O controllers and the `training` section's DP
        collective, bucket, pipeline sends, input prefetch and (weight streaming) layout.
    """
    from ...train import TrainConfig

    w = cfg.workloads[workload]
    s = cfg.systems[system]
    tr = cfg.training
    net = dict(network(cfg, system), model=model)
    p = parallelism or w.parallelism
    spd = samples_per_dp or w.samples_per_dp
    npu = npu_of(cfg, workload, compute, speed)
    streaming = w.mode == "weight-streaming"
    data = {
        "name": f"{workload} on {system}",
        "network": net,
        "system": {"npu": npu,
                   "scheduling": {"priorities": cfg.scheduling.priorities, "comm_streams": cfg.scheduling.comm_streams}},
        "workload": {"model": w.model, "batch": p.dp * spd, "iterations": iterations,
                     "input_loading": True, "input_prefetch": tr.input_prefetch,
                     "parallelism": {"mp": p.mp, "dp": p.dp, "pp": p.pp, "microbatches": p.microbatches,
                                     "zero": 2 if (p.dp > 1 and not streaming and tr.dp_collective == "zero-2") else 0,
                                     "dp_bucket": tr.dp_bucket, "pp_send": tr.pp_send,
                                     "stage_layout": tr.weight_streaming_layout if streaming else "contiguous",
                                     "placement": s.placement, "weight_streaming": streaming,
                                     # FRED's simulator keeps tensor-parallel collectives on the critical
                                     # path (no Megatron-style asynchronous TP communication)
                                     "tp_overlap": False}},
    }
    return TrainConfig.model_validate(data)


def _simulate(tc):
    """The training result of a config (`train.run_train`, the one engine set-up)."""
    from ...train import run_train

    return run_train(tc).result


# ---------------------------------------------------------------- (c) end to end


@dataclass(frozen=True)
class TrainPoint:
    """(c) One workload on one system, end to end.

    Parameters
    ----------
    workload, system : str
    iterations : int
    train : TrainConfig
        The run (`train_config`).
    paper_speedup : float, optional
        The paper's speedup over the mesh.
    compute : str
        The compute setting (`as stated`, `calibrated`).
    speed : float
        Its factor on the stated NPU's throughput.
    """

    workload: str
    system: str
    iterations: int
    train: TrainConfig
    paper_speedup: float | None
    compute: str = "as stated"
    speed: float = 1.0

    @property
    def label(self) -> str:
        """What progress bars show."""
        return f"e2e {self.compute} {self.workload} {self.system}"


@dataclass(frozen=True)
class E2ERow:
    """(c) One end-to-end run.

    Parameters
    ----------
    workload, system : str
    iteration_s : float or None
        Time per iteration, s (None: not modelled).
    breakdown_s : dict
        Per iteration, mean over NPUs, s: compute, exposed MP/PP/DP/IO/other, idle.
    speedup : float, optional
        Mesh iteration / this one (set by `summarize`).
    paper_speedup : float, optional
    note : str
    compute : str
        The compute setting (`as stated`, `calibrated`).
    speed : float
        Its factor on the stated NPU's throughput.
    """

    workload: str
    system: str
    iteration_s: float | None
    breakdown_s: dict = field(default_factory=dict)
    speedup: float | None = None
    paper_speedup: float | None = None
    note: str = ""
    compute: str = "as stated"
    speed: float = 1.0

    @property
    def ratio(self) -> float | None:
        """Our speedup / the paper's (None if either is missing)."""
        return self.speedup / self.paper_speedup if self.speedup and self.paper_speedup else None


def train_point(cfg: FredConfig, workload: str, system: str, iterations: int, model: str,
                compute: str = "as stated") -> TrainPoint:
    """One workload on one system, end to end, as a point.

    Parameters
    ----------
    cfg : FredConfig
        The reproduction's config.
    workload : str
        A key of `cfg.workloads`.
    system : str
        A key of `cfg.systems`.
    iterations : int
        Training iterations simulated.
    model : str
        Network model name (`flow`, `analytical`).
    compute : str
        The compute setting (`as stated`, `calibrated`).

    Returns
    -------
    TrainPoint
        Plain data: the validated training config (`train_config`) and the paper's speedup.
    """
    return TrainPoint(workload, system, iterations,
                      train_config(cfg, workload, system, iterations, model, compute=compute),
                      cfg.workloads[workload].paper_speedup.get(system), compute, speed_of(cfg, workload, compute))


def evaluate_train(pt: TrainPoint) -> E2ERow:
    """Simulate one end-to-end run (pure).

    Parameters
    ----------
    pt : TrainPoint

    Returns
    -------
    E2ERow
        Iteration time (s) and its breakdown per iteration; speedup unset.
    """
    res = _simulate(pt.train)
    per_it = {k: v / pt.iterations for k, v in res.mean_breakdown().items()}
    return E2ERow(pt.workload, pt.system, res.iteration_time, per_it, paper_speedup=pt.paper_speedup,
                  compute=pt.compute, speed=pt.speed)


def end_to_end(cfg: FredConfig, workload: str, system: str, iterations: int, model: str,
               compute: str = "as stated") -> E2ERow:
    """One workload on one system, end to end.

    Parameters
    ----------
    cfg : FredConfig
        The reproduction's config.
    workload : str
        A key of `cfg.workloads`.
    system : str
        A key of `cfg.systems`.
    iterations : int
        Training iterations simulated.
    model : str
        Network model name (`flow`, `analytical`).
    compute : str
        The compute setting (`as stated`, `calibrated`).

    Returns
    -------
    E2ERow
        `evaluate_train(train_point(...))`: iteration time (s) and its breakdown per iteration
        (s); no speedup yet (`summarize` adds it).
    """
    return evaluate_train(train_point(cfg, workload, system, iterations, model, compute))


# ---------------------------------------------------------------- (d) strategy sweep


@dataclass(frozen=True)
class SweepPoint:
    """(d) One strategy of the sweep on one system.

    Parameters
    ----------
    workload, strategy, system : str
    iterations : int
    batch : int
        Samples per iteration (DP x samples per replica).
    train : TrainConfig
    compute : str
        The compute setting (`as stated`, `calibrated`).
    """

    workload: str
    strategy: str
    system: str
    iterations: int
    batch: int
    train: TrainConfig
    compute: str = "as stated"

    @property
    def label(self) -> str:
        """What progress bars show."""
        return f"sweep {self.compute} {self.workload} {self.strategy} {self.system}"


@dataclass(frozen=True)
class SweepRow:
    """(d) One strategy on one system: time, compute and exposed communication per sample, s, in
    one compute setting."""

    workload: str
    strategy: str
    system: str
    per_sample_s: float
    compute_per_sample_s: float
    exposed_comm_per_sample_s: float
    compute: str = "as stated"


def sweep_point(cfg: FredConfig, workload: str, strategy: str, system: str, iterations: int, model: str,
                compute: str = "as stated", speed: float | None = None) -> SweepPoint:
    """One strategy of the sweep as a point.

    Parameters
    ----------
    cfg : FredConfig
    workload : str
        A key of `cfg.sweep.workloads`.
    strategy : str
        `MP(x)-DP(y)-PP(z)`.
    system : str
    iterations : int
    model : str
        Network model name.
    compute : str
        The compute setting (`as stated`, `calibrated`: the one factor).
    speed : float, optional
        A factor on the stated NPU's throughput instead of the setting's (calibration's search).

    Returns
    -------
    SweepPoint
        Microbatches from the workload's `microbatches_by_pp`.
    """
    sw = cfg.sweep.workloads[workload]
    mp, dp, pp = parse_strategy(strategy)
    par = Par(mp=mp, dp=dp, pp=pp, microbatches=sw.microbatches_by_pp[pp])
    tc = train_config(cfg, workload, system, iterations, model, par, sw.samples_per_dp, compute=compute, speed=speed)
    return SweepPoint(workload, strategy, system, iterations, dp * sw.samples_per_dp, tc, compute)


def evaluate_sweep(pt: SweepPoint) -> SweepRow:
    """Simulate one strategy of the sweep (pure).

    Parameters
    ----------
    pt : SweepPoint

    Returns
    -------
    SweepRow
        Per sample: iteration time, compute and exposed communication (MP+PP+DP+IO+other), s.
    """
    res = _simulate(pt.train)
    b = res.mean_breakdown()
    exposed = sum(b[c] for c in ("MP", "PP", "DP", "IO", "other"))
    return SweepRow(pt.workload, pt.strategy, pt.system, res.iteration_time / pt.batch,
                    b["compute"] / pt.iterations / pt.batch, exposed / pt.iterations / pt.batch, pt.compute)


@dataclass(frozen=True)
class SweepSummary:
    """(d) A workload's sweep averaged over strategies in one compute setting: mean of mesh /
    Fred-D time per sample, mean of mesh / Fred-D exposed communication, the fastest strategy per
    system, the paper's values."""

    workload: str
    speedup_mean: float
    exposed_reduction_mean: float
    fastest: dict
    paper: dict
    compute: str = "as stated"


def summarize_sweep(cfg: FredConfig, rows: list[SweepRow]) -> list[SweepSummary]:
    """Average the sweep's rows per workload.

    Parameters
    ----------
    cfg : FredConfig
        The first of `sweep.systems` is the baseline, the last the one compared.
    rows : list of SweepRow

    Returns
    -------
    list of SweepSummary
        One per (compute setting, workload), in the rows' order; the exposed reduction is NaN
        when the compared system exposes no communication for any strategy.
    """
    out = []
    base, other = cfg.sweep.systems[0], cfg.sweep.systems[-1]
    for comp, wl in dict.fromkeys((r.compute, r.workload) for r in rows):
        mine = [r for r in rows if r.workload == wl and r.compute == comp]
        by = {(r.strategy, r.system): r for r in mine}
        strategies = list(dict.fromkeys(r.strategy for r in mine))
        sp = [by[(s, base)].per_sample_s / by[(s, other)].per_sample_s for s in strategies]
        ex = [by[(s, base)].exposed_comm_per_sample_s / by[(s, other)].exposed_comm_per_sample_s
              for s in strategies if by[(s, other)].exposed_comm_per_sample_s > 0]
        fastest = {sysname: min(strategies, key=lambda s: by[(s, sysname)].per_sample_s) for sysname in cfg.sweep.systems}
        out.append(SweepSummary(wl, float(np.mean(sp)), float(np.mean(ex)) if ex else float("nan"), fastest,
                                dict(cfg.sweep.workloads[wl].paper), comp))
    return out
