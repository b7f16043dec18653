"""The ACE reproduction as points: a training run per (workload, system, endpoint policy), and the
sensitivity grid (one workload on one system, NPU-driven with each (units, memory) share).
Each point carries the validated training config it runs; `evaluate` is `train.run_train` plus
`engine.usage.endpoint_usage` (pure, picklable); `summarize` compares ACE with the best baseline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .config import AceConfig, endpoint_of, train_config

if TYPE_CHECKING:
    from ...train import TrainConfig
    from .report import Reproduction


@dataclass(frozen=True)
class RunPoint:
    """One workload on one system with one endpoint policy.

    Parameters
    ----------
    workload, system, policy : str
        Keys of the config's workloads, systems and policies.
    train : TrainConfig
        The run.
    """

    workload: str
    system: str
    policy: str
    train: TrainConfig

    @property
    def label(self) -> str:
        """What progress bars show."""
        return f"{self.workload} {self.system} {self.policy}"


@dataclass(frozen=True)
class SplitPoint:
    """One (units, memory) share of the sensitivity grid, NPU-driven.

    Parameters
    ----------
    workload, system : str
    units, memory : float
        Shares of the NPU given to communication.
    train : TrainConfig
    """

    workload: str
    system: str
    units: float
    memory: float
    train: TrainConfig

    @property
    def label(self) -> str:
        """What progress bars show."""
        return f"sensitivity {self.workload} {self.system} units {self.units:g} memory {self.memory:g}"


@dataclass(frozen=True)
class RunRow:
    """What one run measured (the headline iteration: the steady state with 3+ iterations).

    Parameters
    ----------
    workload, system, policy : str
    npus : int
        NPUs of the system (the job's, not the folded graph's).
    batch_per_npu : int
        Samples per NPU per iteration.
    iteration_s : float
        Time per iteration, s.
    compute_s, exposed_s : float
        Mean over NPUs per iteration: compute (stretched where slowed) and exposed communication, s.
    network_bandwidth : float
        Bytes/s communication sent per NPU while in flight.
    utilization : float
        That over what the NPU's links take (0..1).
    memory_bandwidth : float
        Bytes/s of memory traffic communication caused while in flight.
    memory_per_network_byte : float
        Memory bytes moved per network byte sent.
    compute_slowdown : float
        Compute time over compute time alone.
    """

    workload: str
    system: str
    policy: str
    npus: int
    batch_per_npu: int
    iteration_s: float
    compute_s: float
    exposed_s: float
    network_bandwidth: float
    utilization: float
    memory_bandwidth: float
    memory_per_network_byte: float
    compute_slowdown: float


@dataclass(frozen=True)
class SplitRow:
    """One point of the sensitivity grid.

    Parameters
    ----------
    workload, system : str
    units, memory : float
    iteration_s, exposed_s : float
        s per iteration.
    compute_slowdown, utilization : float
    """

    workload: str
    system: str
    units: float
    memory: float
    iteration_s: float
    exposed_s: float
    compute_slowdown: float
    utilization: float


@dataclass(frozen=True)
class SystemSummary:
    """ACE against the best baseline for one workload on one system.

    Parameters
    ----------
    workload, system : str
    npus : int
    best_baseline : str
        The baseline policy with the shortest iteration.
    speedup : float
        Its iteration time over ACE's.
    utilization_gain : float
        ACE's network bandwidth utilization over the best baseline's.
    memory_reduction : float
        Memory bytes per network byte, best baseline over ACE (memory bandwidth needed to drive
        the same network bandwidth).
    ideal_speedup : float
        The best baseline's iteration over the ideal endpoint's (what any endpoint could give),
        None without an `ideal` policy.
    """

    workload: str
    system: str
    npus: int
    best_baseline: str
    speedup: float
    utilization_gain: float
    memory_reduction: float
    ideal_speedup: float | None = None


@dataclass(frozen=True)
class WorkloadSummary:
    """ACE's speedup over the best baseline for one workload, over the systems, beside the paper's.

    Parameters
    ----------
    workload : str
    mean, max : float
        Over the systems run.
    paper_mean, paper_max : float
    by_family : dict
        Topology family (torus, switch) -> the mean over its systems.
    """

    workload: str
    mean: float
    max: float
    paper_mean: float
    paper_max: float
    by_family: dict = field(default_factory=dict)

    @property
    def ratio_mean(self) -> float:
        """Our mean over the paper's."""
        return self.mean / self.paper_mean

    @property
    def ratio_max(self) -> float:
        """Our max over the paper's."""
        return self.max / self.paper_max


@dataclass(frozen=True)
class Headline:
    """The paper's abstract figures, ours beside them (means and maxima over workloads and systems).

    Parameters
    ----------
    memory_reduction, utilization_gain_mean, utilization_gain_max : float
        Ours.
    memory_reduction_all_reduce : dict
        System -> memory bytes per network byte of its all-reduce over all NPUs, best baseline
        over ACE (from the schedules alone: what the workloads' mix of collectives dilutes).
    paper : dict
        The paper's `memory_bandwidth_reduction`, `utilization_gain_mean`, `utilization_gain_max`.
    """

    memory_reduction: float
    utilization_gain_mean: float
    utilization_gain_max: float
    memory_reduction_all_reduce: dict = field(default_factory=dict)
    paper: dict = field(default_factory=dict)

    @property
    def memory_reduction_all_reduce_mean(self) -> float:
        """Mean over the systems of `memory_reduction_all_reduce`."""
        v = list(self.memory_reduction_all_reduce.values())
        return float(np.mean(v)) if v else float("nan")


def compare(cfg: AceConfig, by: dict, workload: str, system: str) -> SystemSummary:
    """ACE against the best baseline for one workload on one system.

    Parameters
    ----------
    cfg : AceConfig
    by : dict
        (workload, system, policy) -> RunRow, every policy of the config run.
    workload, system : str

    Returns
    -------
    SystemSummary
    """
    ace = by[(workload, system, cfg.ace)]
    base = min((by[(workload, system, b)] for b in cfg.baselines), key=lambda r: r.iteration_s)
    ideal = by.get((workload, system, "ideal"))
    nan = float("nan")
    return SystemSummary(
        workload, system, ace.npus, base.policy, base.iteration_s / ace.iteration_s,
        ace.utilization / base.utilization if base.utilization > 0 else nan,
        base.memory_per_network_byte / ace.memory_per_network_byte if ace.memory_per_network_byte > 0 else nan,
        base.iteration_s / ideal.iteration_s if ideal else None)


def family(cfg: AceConfig, system: str) -> str:
    """The topology family of a system of the config (`torus`, `switch`).

    Parameters
    ----------
    cfg : AceConfig
    system : str

    Returns
    -------
    str
    """
    topo = cfg.systems[system].topology
    return str(topo["family"]) if isinstance(topo, dict) else str(topo).split(":")[0]


def all_reduce_memory_reduction(cfg: AceConfig, systems: Sequence[str]) -> dict[str, float]:
    """Per system: memory bytes per byte of an all-reduce over all its NPUs under the first
    baseline over under ACE (its schedule's `CommDemand`, each policy's `memory_per_byte`).

    Parameters
    ----------
    cfg : AceConfig
    systems : sequence of str

    Returns
    -------
    dict
        System -> ratio (3.5 (p-1)/p for a ring-like all-reduce while ACE's SRAM holds a chunk).
    """
    from ...engine.pricing import CommPricer

    base, ace = cfg.policies[cfg.baselines[0]].build(), cfg.policies[cfg.ace].build()
    out = {}
    for name in systems:
        net = cfg.systems[name]
        topo = net.build_topology()
        pr = CommPricer(topo, cfg.network_model, net.algorithms, ace, cfg.npu.build())
        d = pr.demand("all-reduce", tuple(range(topo.n_npus)))
        out[name] = base.memory_per_byte(d) / ace.memory_per_byte(d)
    return out


def points(cfg: AceConfig, quick: bool = False) -> list[RunPoint | SplitPoint]:
    """Every run of the reproduction, in report order.

    Parameters
    ----------
    cfg : AceConfig
    quick : bool
        The CI subset: `quick.systems`, `quick.iterations`, the first `quick.sensitivity_points`
        values of each axis of the grid.

    Returns
    -------
    list
        RunPoint per (workload, system, policy), then BatchPoint per (scale, system, policy) of the
        batch sensitivity (`batch.batch_points`), then SplitPoint per (units, memory).
    """
    systems = cfg.quick.systems if quick else list(cfg.systems)
    its = cfg.quick.iterations if quick else cfg.iterations
    out: list = []
    for wl in cfg.workloads:
        for sys_name in systems:
            for pol in cfg.policies:
                out.append(RunPoint(wl, sys_name, pol, train_config(cfg, wl, sys_name, endpoint_of(cfg, pol), its)))
    from .batch import batch_points

    out += batch_points(cfg, systems, its)
    sen = cfg.sensitivity
    k = cfg.quick.sensitivity_points if quick else None
    for u in sen.units[:k]:
        for m in sen.memory[:k]:
            ep = {"policy": "npu", "units": u, "memory": m}
            out.append(SplitPoint(sen.workload, sen.system, u, m, train_config(cfg, sen.workload, sen.system, ep, its)))
    return out


def _run(train):
    """(TrainRun, EndpointUsage, headline Period) of a training config."""
    from ...engine.usage import endpoint_usage
    from ...train import run_train

    run = run_train(train)
    head = run.result.headline()
    return run, endpoint_usage(run.result, run.pricer, head), head


def evaluate(point: RunPoint | SplitPoint) -> RunRow | SplitRow:
    """The row of one run (pure: depends on the point only).

    Parameters
    ----------
    point : RunPoint or SplitPoint

    Returns
    -------
    RunRow or SplitRow
    """
    run, use, head = _run(point.train)
    mean = head.mean()
    exposed = float(sum(v for k, v in mean.items() if k not in ("compute", "idle")))
    if isinstance(point, SplitPoint):
        return SplitRow(point.workload, point.system, point.units, point.memory, head.time_s, exposed,
                        use.compute_slowdown, use.utilization)
    npus = run.topology.n_npus  # the system's: a folded data-parallel graph holds one NPU standing for all
    return RunRow(point.workload, point.system, point.policy, npus, run.config.workload.batch // npus, head.time_s,
                  mean["compute"], exposed, use.network_bandwidth, use.utilization, use.memory_bandwidth,
                  use.memory_per_network_byte, use.compute_slowdown)


def label(point: RunPoint | SplitPoint) -> str:
    """What progress bars show for a point.

    Parameters
    ----------
    point : RunPoint or SplitPoint

    Returns
    -------
    str
    """
    return point.label


def summarize(cfg: AceConfig, pts: Sequence, rows: Sequence, quick: bool = False, elapsed_s: float = 0.0) -> Reproduction:
    """The reproduction from the rows: ACE against the best baseline per (workload, system), per
    workload beside the paper, the abstract's memory and utilization figures, and the batch
    sensitivity (`batch.summarize_batches`).

    Parameters
    ----------
    cfg : AceConfig
    pts : sequence of points
    rows : sequence
        `rows[i] = evaluate(pts[i])`.
    quick : bool
        Whether this was the CI subset (recorded).
    elapsed_s : float
        Wall time of the run, s (recorded).

    Returns
    -------
    Reproduction
    """
    from .batch import BatchPoint, summarize_batches
    from .report import Reproduction

    runs = [r for p, r in zip(pts, rows) if isinstance(r, RunRow) and not isinstance(p, BatchPoint)]
    by = {(r.workload, r.system, r.policy): r for r in runs}
    systems = [compare(cfg, by, wl, sys_name) for wl, sys_name in dict.fromkeys((r.workload, r.system) for r in runs)]
    workloads = []
    for wl in dict.fromkeys(s.workload for s in systems):
        sp = [s.speedup for s in systems if s.workload == wl]
        paper = cfg.workloads[wl].paper
        fam: dict[str, list] = {}
        for s in systems:
            if s.workload == wl:
                fam.setdefault(family(cfg, s.system), []).append(s.speedup)
        workloads.append(WorkloadSummary(wl, float(np.mean(sp)), float(np.max(sp)), paper.mean, paper.max,
                                         {k: float(np.mean(v)) for k, v in fam.items()}))
    gains = [s.utilization_gain for s in systems]
    sys_names = list(dict.fromkeys(s.system for s in systems))
    head = Headline(float(np.mean([s.memory_reduction for s in systems])), float(np.mean(gains)), float(np.max(gains)),
                    all_reduce_memory_reduction(cfg, sys_names), cfg.paper.model_dump())
    splits = tuple(r for r in rows if isinstance(r, SplitRow))
    policies = {name: repr(sec.build()) for name, sec in cfg.policies.items()}  # presets resolved
    batches = summarize_batches(cfg, pts, rows, systems)
    return Reproduction(cfg.name, quick, tuple(runs), tuple(systems), tuple(workloads), head, splits, policies,
                        cfg.ace, tuple(cfg.baselines), round(elapsed_s, 1), batches)
