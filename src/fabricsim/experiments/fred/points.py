"""The FRED reproduction as points: (a) a microbenchmark per (dimension, system), (b) traffic per
group size, (c) end to end per (workload, system), (d) the strategy sweep per (workload, strategy,
system). `evaluate` is pure and picklable; `summarize` computes speedups over the mesh and the
sweep's averages."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .config import DIMENSIONS, FredConfig, Par, algorithms, network, parse_strategy, topology

# ---------------------------------------------------------------- (a) microbenchmarks


@dataclass(frozen=True)
class MicroRow:
    dimension: str
    system: str
    groups: int
    per_D: float  # time x 1e12 / D
    paper: float | None
    npu_bandwidth_TBps: float  # bytes each NPU injects / time

    @property
    def ratio(self) -> float | None:
        return self.per_D / self.paper if self.paper else None


def _groups(cfg: FredConfig, system: str, dim: str) -> list[list[int]]:
    from ...workload.parallelism import Strategy

    n = cfg.wafer.cols * cfg.wafer.rows
    if dim.startswith("MP(20)"):
        return [list(range(n))]
    R = Strategy(mp=2, dp=5, pp=2, batch=10, placement=tuple(cfg.systems[system].placement)).ranks()
    if dim.startswith("MP(2)"):
        return [R[:, p, d].tolist() for p in range(2) for d in range(5)]
    if dim.startswith("DP(5)"):
        return [R[m, p, :].tolist() for m in range(2) for p in range(2)]
    return [R[m, :, d].tolist() for m in range(2) for d in range(5)]  # PP: stage 0 -> stage 1


def microbenchmark(cfg: FredConfig, system: str, dim: str) -> MicroRow:
    """All-reduces (or pipeline transfers) of D bytes for every group of a dimension at once, on
    the flow model: time per byte and what each NPU injects per second."""
    from ...collectives.api import build_schedule
    from ...network.dataflow import merge_flows, schedule_flows
    from ...network.flow import Flows
    from ...network.model import get_network_model

    topo = topology(cfg, system)
    alg = algorithms(cfg, system)["all-reduce"]
    D = cfg.microbenchmarks.size
    groups = _groups(cfg, system, dim)
    parts = []
    injected = 0.0
    for g in groups:
        if dim.startswith("PP"):
            parts.append(Flows([g[0]], [g[1]], [D]))
            injected = D
            continue
        s = build_schedule(topo, "all-reduce", alg, group=g)
        parts.append(schedule_flows(topo, s, D))
        injected = D if s.streaming else 2 * (len(g) - 1) / len(g) * D
    t = get_network_model("flow").flows(topo, merge_flows(*parts, topo=topo)).makespan
    paper = cfg.microbenchmarks.paper.get(dim, {}).get(system)
    return MicroRow(dim, system, len(groups), t * 1e12 / D, paper, injected / t / 1e12)


# ---------------------------------------------------------------- (b) traffic


@dataclass(frozen=True)
class TrafficRow:
    n: int
    in_network_per_npu: float  # x D
    endpoint_per_npu: float  # x D
    factor: float  # endpoint / in-network
    formula: float  # 2(N-1)/N


def traffic(cfg: FredConfig, n: int) -> TrafficRow:
    """Both schedules executed on data (verify), then their bytes per NPU counted."""
    from ...collectives.api import build_schedule
    from ...collectives.verify import verify

    topo = topology(cfg, next(s for s, v in cfg.systems.items() if v.in_network))
    total = topo.n_npus
    group = list(range(n)) if n <= 4 else [int(x) for x in np.linspace(0, total - 1, n).round()]
    innet = build_schedule(topo, "all-reduce", "in_network_tree", group=group)
    ring = build_schedule(topo, "all-reduce", "ring", group=group)
    verify(innet)
    verify(ring)
    a = float(innet.bytes_sent(1.0)[:n].max())
    b = float(ring.bytes_sent(1.0).max())
    return TrafficRow(n, a, b, b / a, 2 * (n - 1) / n)


# ---------------------------------------------------------------- (c) end to end


@dataclass(frozen=True)
class E2ERow:
    workload: str
    system: str
    iteration_s: float | None
    breakdown_s: dict = field(default_factory=dict)  # per iteration, mean over NPUs
    speedup: float | None = None
    paper_speedup: float | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.speedup / self.paper_speedup if self.speedup and self.paper_speedup else None


def train_config(cfg: FredConfig, workload: str, system: str, iterations: int, model: str,
                 parallelism: Par | None = None, samples_per_dp: int | None = None):
    from ...train import TrainConfig

    w = cfg.workloads[workload]
    s = cfg.systems[system]
    net = dict(network(cfg, system), model=model)
    p = parallelism or w.parallelism
    spd = samples_per_dp or w.samples_per_dp
    data = {
        "name": f"{workload} on {system}",
        "network": net,
        "system": {"npu": {"peak": cfg.npu.peak, "memory_bandwidth": cfg.npu.memory_bandwidth,
                           "efficiency": cfg.npu.efficiency},
                   "scheduling": {"priorities": cfg.scheduling.priorities, "comm_streams": cfg.scheduling.comm_streams}},
        "workload": {"model": w.model, "batch": p.dp * spd, "iterations": iterations,
                     "input_loading": True,
                     "parallelism": {"mp": p.mp, "dp": p.dp, "pp": p.pp, "microbatches": p.microbatches,
                                     "zero": 2 if (p.dp > 1 and w.mode == "weight-stationary") else 0,
                                     "placement": s.placement, "weight_streaming": w.mode == "weight-streaming"}},
    }
    return TrainConfig.model_validate(data)


def _simulate(tc):
    from ...train import run_train

    return run_train(tc).result


def end_to_end(cfg: FredConfig, workload: str, system: str, iterations: int, model: str) -> E2ERow:
    res = _simulate(train_config(cfg, workload, system, iterations, model))
    per_it = {k: v / iterations for k, v in res.mean_breakdown().items()}
    return E2ERow(workload, system, res.iteration_time, per_it, paper_speedup=cfg.workloads[workload].paper_speedup.get(system))


# ---------------------------------------------------------------- (d) strategy sweep


@dataclass(frozen=True)
class SweepRow:
    workload: str
    strategy: str
    system: str
    per_sample_s: float
    compute_per_sample_s: float
    exposed_comm_per_sample_s: float


def sweep_point(cfg: FredConfig, workload: str, strategy: str, system: str, iterations: int, model: str) -> SweepRow:
    sw = cfg.sweep.workloads[workload]
    mp, dp, pp = parse_strategy(strategy)
    par = Par(mp=mp, dp=dp, pp=pp, microbatches=sw.microbatches_by_pp[pp])
    res = _simulate(train_config(cfg, workload, system, iterations, model, par, sw.samples_per_dp))
    batch = dp * sw.samples_per_dp
    b = res.mean_breakdown()
    exposed = sum(b[c] for c in ("MP", "PP", "DP", "IO", "other"))
    return SweepRow(workload, strategy, system, res.iteration_time / batch, b["compute"] / iterations / batch,
                    exposed / iterations / batch)


@dataclass(frozen=True)
class SweepSummary:
    workload: str
    speedup_mean: float  # mean over strategies of mesh / Fred-D time per sample
    exposed_reduction_mean: float  # mean over strategies of mesh / Fred-D exposed communication
    fastest: dict  # system -> strategy
    paper: dict


def summarize_sweep(cfg: FredConfig, rows: list[SweepRow]) -> list[SweepSummary]:
    out = []
    base, other = cfg.sweep.systems[0], cfg.sweep.systems[-1]
    for wl in dict.fromkeys(r.workload for r in rows):
        by = {(r.strategy, r.system): r for r in rows if r.workload == wl}
        strategies = list(dict.fromkeys(r.strategy for r in rows if r.workload == wl))
        sp = [by[(s, base)].per_sample_s / by[(s, other)].per_sample_s for s in strategies]
        ex = [by[(s, base)].exposed_comm_per_sample_s / by[(s, other)].exposed_comm_per_sample_s
              for s in strategies if by[(s, other)].exposed_comm_per_sample_s > 0]
        fastest = {sysname: min(strategies, key=lambda s: by[(s, sysname)].per_sample_s) for sysname in cfg.sweep.systems}
        out.append(SweepSummary(wl, float(np.mean(sp)), float(np.mean(ex)) if ex else float("nan"), fastest,
                                dict(cfg.sweep.workloads[wl].paper)))
    return out


# ---------------------------------------------------------------- points


@dataclass(frozen=True)
class FredPoint:
    """One measurement: `kind` is micro (dimension, system), traffic (group size), e2e (workload,
    system, iterations, network model) or sweep (workload, strategy, system, iterations, model)."""

    cfg: FredConfig
    kind: str
    args: tuple

    @property
    def label(self) -> str:
        return f"{self.kind} " + " ".join(map(str, self.args[:3]))


def points(cfg: FredConfig, quick: bool = False) -> list[FredPoint]:
    """Every measurement of the reproduction (the CI subset with `quick`), in report order."""
    systems = list(cfg.systems)
    out = [FredPoint(cfg, "micro", (d, s)) for d in DIMENSIONS for s in systems]
    out += [FredPoint(cfg, "traffic", (n,)) for n in cfg.traffic_group_sizes]
    its = cfg.quick.iterations if quick else cfg.iterations
    model = cfg.quick.network_model if quick else cfg.network_model
    for wl in (cfg.quick.workloads if quick else list(cfg.workloads)):
        out += [FredPoint(cfg, "e2e", (wl, s, its, model)) for s in systems]
    n_strat = cfg.quick.sweep_strategies if quick else None
    sw_model = cfg.quick.network_model if quick else cfg.sweep.network_model
    sw_its = cfg.quick.iterations if quick else cfg.sweep.iterations
    for wl, spec in cfg.sweep.workloads.items():
        out += [FredPoint(cfg, "sweep", (wl, strategy, system, sw_its, sw_model))
                for strategy in spec.strategies[:n_strat] for system in cfg.sweep.systems]
    return out


def evaluate(point: FredPoint):
    """The row of one measurement (pure: depends on the point only)."""
    cfg, a = point.cfg, point.args
    if point.kind == "micro":
        return microbenchmark(cfg, a[1], a[0])
    if point.kind == "traffic":
        return traffic(cfg, a[0])
    if point.kind == "e2e":
        return end_to_end(cfg, *a)
    return sweep_point(cfg, *a)


def summarize(cfg: FredConfig, pts, rows, quick: bool = False, elapsed_s: float = 0.0):
    """The reproduction: rows by part, end-to-end speedups over the mesh, the sweep's averages."""
    from .report import Reproduction

    by = {k: [r for p, r in zip(pts, rows) if p.kind == k] for k in ("micro", "traffic", "e2e", "sweep")}
    e2e = []
    for wl in dict.fromkeys(r.workload for r in by["e2e"]):
        got = [r for r in by["e2e"] if r.workload == wl]
        base = next(r for r in got if r.system == "mesh").iteration_s
        for r in got:
            sp = base / r.iteration_s if base and r.iteration_s else None
            e2e.append(E2ERow(r.workload, r.system, r.iteration_s, r.breakdown_s, sp, r.paper_speedup, r.note))
    sweep = by["sweep"]
    return Reproduction(cfg.name, quick, tuple(by["micro"]), tuple(by["traffic"]), tuple(e2e), tuple(sweep),
                        tuple(summarize_sweep(cfg, sweep)))
