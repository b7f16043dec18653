"""Reproduce FRED (Rashidi et al., ISCA'25) with fabricsim: the wafer mesh against FRED's
switch fabric (Fred-A..D), from `configs/fred.yaml` (every parameter, its source, the paper's
numbers).

(a) communication microbenchmarks: all-reduces (and pipeline transfers) of D bytes for every
    group of a dimension at once, on the flow model, in D/(TB/s) beside the paper's values;
(b) traffic per NPU of an all-reduce, in-network vs endpoint, from schedules executed on data;
(c) end-to-end training, weight-stationary (ResNet-152, Transformer-17B) and weight-streaming
    (GPT-3, Transformer-1T), inputs loaded (and prefetched) through the I/O controllers:
    iteration time and its breakdown per system, speedups over the mesh beside the paper's.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..config import load_yaml
from ..errors import ConfigError
from ..units import format_time, parse_bandwidth, parse_flops, parse_size, parse_time

DEFAULT_OUT = Path("out") / "fred"
DIMENSIONS = ("MP(20)", "MP(2) of MP(2)-DP(5)-PP(2)", "DP(5) of MP(2)-DP(5)-PP(2)", "PP of MP(2)-DP(5)-PP(2)")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Wafer(_Strict):
    cols: int = Field(ge=2)
    rows: int = Field(ge=2)
    npu_bandwidth: float
    mesh_link_bandwidth: float
    io_controllers: int = Field(ge=0)
    io_bandwidth: float
    hop_latency: float

    _bw = field_validator("npu_bandwidth", "mesh_link_bandwidth", "io_bandwidth", mode="before")(
        lambda v: parse_bandwidth(v, "bandwidth"))
    _lat = field_validator("hop_latency", mode="before")(lambda v: parse_time(v, "hop_latency"))


class SystemSpec(_Strict):
    kind: Literal["mesh", "fred"]
    algorithm: str
    placement: list[Literal["mp", "pp", "dp"]]
    up_bandwidth: float | None = None
    in_network: bool = False

    _up = field_validator("up_bandwidth", mode="before")(lambda v: None if v is None else parse_bandwidth(v, "up_bandwidth"))


class Micro(_Strict):
    size: float
    paper: dict[str, dict[str, float]]

    _size = field_validator("size", mode="before")(lambda v: parse_size(v, "size"))


class NpuSpec(_Strict):
    peak: float
    memory_bandwidth: float
    efficiency: float = Field(gt=0, le=1)

    _peak = field_validator("peak", mode="before")(lambda v: parse_flops(v, "peak"))
    _bw = field_validator("memory_bandwidth", mode="before")(lambda v: parse_bandwidth(v, "memory_bandwidth"))


class Sched(_Strict):
    priorities: list[Literal["MP", "PP", "DP", "IO", "other"]]
    comm_streams: Literal["one", "per-category"] = "per-category"


class Par(_Strict):
    mp: int = Field(ge=1)
    dp: int = Field(ge=1)
    pp: int = Field(ge=1)
    microbatches: int = Field(ge=1)


class WorkloadSpec(_Strict):
    model: str
    mode: Literal["weight-stationary", "weight-streaming"]
    parallelism: Par
    samples_per_dp: int = Field(ge=1)
    paper_speedup: dict[str, float]


class Quick(_Strict):
    iterations: int = Field(ge=1)
    network_model: str
    workloads: list[str]
    sweep_strategies: int = Field(default=2, ge=1)


class SweepWorkload(_Strict):
    samples_per_dp: int = Field(ge=1)
    microbatches_by_pp: dict[int, int]
    strategies: list[str]
    paper: dict[str, float | str]

    @field_validator("strategies")
    @classmethod
    def _names(cls, v):
        for name in v:
            parse_strategy(name)
        return v


class Sweep(_Strict):
    systems: list[str]
    network_model: str
    iterations: int = Field(ge=1)
    workloads: dict[str, SweepWorkload]


def parse_strategy(name: str) -> tuple[int, int, int]:
    """`MP(2)-DP(5)-PP(2)` -> (2, 5, 2)."""
    import re

    m = re.fullmatch(r"\s*MP\((\d+)\)-DP\((\d+)\)-PP\((\d+)\)\s*", str(name))
    if not m:
        raise ConfigError("strategy", name, "accepted: MP(x)-DP(y)-PP(z), e.g. MP(2)-DP(5)-PP(2)")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


class FredConfig(_Strict):
    name: str
    wafer: Wafer
    systems: dict[str, SystemSpec]
    microbenchmarks: Micro
    traffic_group_sizes: list[int]
    npu: NpuSpec
    scheduling: Sched
    iterations: int = Field(ge=1)
    network_model: str
    workloads: dict[str, WorkloadSpec]
    sweep: Sweep
    quick: Quick


def default_config_path() -> Path:
    here = Path(__file__).resolve()
    for cand in (here.parents[3] / "configs" / "fred.yaml", Path.cwd() / "configs" / "fred.yaml"):
        if cand.is_file():
            return cand
    raise ConfigError("--config", "configs/fred.yaml", "not found; accepted: the path of a FRED reproduction config")


def load_config(path: str | Path | None = None) -> FredConfig:
    cfg = load_yaml(FredConfig, path or default_config_path(), "wafer, systems, microbenchmarks, workloads")
    if "mesh" not in cfg.systems:
        raise ConfigError("systems", list(cfg.systems), "accepted: a 'mesh' baseline among the systems")
    for name in cfg.quick.workloads:
        if name not in cfg.workloads:
            raise ConfigError("quick.workloads", name, f"accepted: {', '.join(cfg.workloads)}")
    for name in list(cfg.sweep.workloads) + cfg.sweep.systems:
        if name not in cfg.workloads and name not in cfg.systems:
            raise ConfigError("sweep", name, f"accepted: workloads {', '.join(cfg.workloads)}; systems {', '.join(cfg.systems)}")
    n = cfg.wafer.cols * cfg.wafer.rows
    for wl, sw in cfg.sweep.workloads.items():
        for name in sw.strategies:
            a, b, c = parse_strategy(name)
            if a * b * c != n or c not in sw.microbatches_by_pp:
                raise ConfigError(f"sweep.workloads.{wl}.strategies", name,
                                  f"accepted: MP x DP x PP = {n} with PP in microbatches_by_pp")
    return cfg


# ---------------------------------------------------------------- systems


NPUS_PER_L1 = 4  # [V] spec 1.5


def network(cfg: FredConfig, system: str) -> dict:
    """The `network` section of a training config for `system`: topology spec and bandwidth."""
    w, s = cfg.wafer, cfg.systems[system]
    if s.kind == "mesh":
        spec = f"wafer:{w.cols}x{w.rows},io={w.io_bandwidth}B/s"
        bw = w.mesh_link_bandwidth
    else:
        n = w.cols * w.rows
        spec = (f"fred:{n // NPUS_PER_L1}x{NPUS_PER_L1},up={s.up_bandwidth}B/s,io={w.io_bandwidth}B/s,"
                f"ios={w.io_controllers}" + (",reduce" if s.in_network else ""))
        bw = w.npu_bandwidth
    return {"topology": spec, "bandwidth": bw, "latency": w.hop_latency, "algorithms": algorithms(cfg, system)}


def topology(cfg: FredConfig, system: str):
    from ..topology.spec import parse_topology

    net = network(cfg, system)
    return parse_topology(net["topology"], net["bandwidth"], net["latency"])


def algorithms(cfg: FredConfig, system: str) -> dict[str, str]:
    a = cfg.systems[system].algorithm
    return {"all-reduce": a, "reduce-scatter": a, "all-gather": a}


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
    from ..workload.parallelism import Strategy

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
    from ..engine.pricing import CommPricer
    from ..network.dataflow import collective_flows, merge_flows, streaming_flows
    from ..network.flow import Flows, simulate_flows

    topo = topology(cfg, system)
    pricer = CommPricer(topo, "flow", algorithms(cfg, system))
    D = cfg.microbenchmarks.size
    groups = _groups(cfg, system, dim)
    parts = []
    injected = 0.0
    for g in groups:
        if dim.startswith("PP"):
            parts.append(Flows([g[0]], [g[1]], [D]))
            injected = D
            continue
        s = pricer.schedule("all-reduce", tuple(g))
        stream = s.streaming
        parts.append(streaming_flows(topo, s, D) if stream else collective_flows(s, D))
        injected = D if stream else 2 * (len(g) - 1) / len(g) * D
    t = simulate_flows(topo, merge_flows(*parts, topo=topo)).makespan
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
    from ..collectives.api import build_schedule
    from ..collectives.verify import verify

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
    from ..train import TrainConfig

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
    from ..train import run_train

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


# ---------------------------------------------------------------- run, report


@dataclass(frozen=True)
class Reproduction:
    config: str
    quick: bool
    micro: tuple[MicroRow, ...]
    traffic: tuple[TrafficRow, ...]
    e2e: tuple[E2ERow, ...]
    sweep: tuple[SweepRow, ...] = ()
    sweep_summary: tuple[SweepSummary, ...] = ()

    def to_dict(self) -> dict:
        return {"config": self.config, "quick": self.quick,
                "microbenchmarks": [dict(asdict(r), ratio=r.ratio) for r in self.micro],
                "traffic": [asdict(r) for r in self.traffic],
                "end_to_end": [dict(asdict(r), ratio=r.ratio) for r in self.e2e],
                "sweep": [asdict(r) for r in self.sweep],
                "sweep_summary": [asdict(r) for r in self.sweep_summary]}


def run(cfg: FredConfig, quick: bool = False, progress=None) -> Reproduction:
    systems = list(cfg.systems)
    micro = tuple(microbenchmark(cfg, s, d) for d in DIMENSIONS for s in systems)
    traf = tuple(traffic(cfg, n) for n in cfg.traffic_group_sizes)
    names = cfg.quick.workloads if quick else list(cfg.workloads)
    its = cfg.quick.iterations if quick else cfg.iterations
    model = cfg.quick.network_model if quick else cfg.network_model
    rows = []
    for k, wl in enumerate(names):
        if progress:
            progress(wl, k, len(names))
        got = {s: end_to_end(cfg, wl, s, its, model) for s in systems}
        base = got["mesh"].iteration_s
        for s, r in got.items():
            sp = base / r.iteration_s if base and r.iteration_s else None
            rows.append(E2ERow(r.workload, r.system, r.iteration_s, r.breakdown_s, sp, r.paper_speedup, r.note))
    sweep = []
    n_strat = cfg.quick.sweep_strategies if quick else None
    sw_model = cfg.quick.network_model if quick else cfg.sweep.network_model
    sw_its = cfg.quick.iterations if quick else cfg.sweep.iterations
    for wl, spec in cfg.sweep.workloads.items():
        for strategy in spec.strategies[:n_strat]:
            for system in cfg.sweep.systems:
                sweep.append(sweep_point(cfg, wl, strategy, system, sw_its, sw_model))
    return Reproduction(cfg.name, quick, micro, traf, tuple(rows), tuple(sweep), tuple(summarize_sweep(cfg, sweep)))


def write_outputs(rep: Reproduction, out: str | Path) -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "fred.json"]
    files[0].write_text(json.dumps(rep.to_dict(), indent=1))
    import csv

    with open(out / "microbenchmarks.csv", "w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(["dimension", "system", "groups", "ours_per_D", "paper_per_D", "ratio", "npu_TBps"])
        for r in rep.micro:
            wr.writerow([r.dimension, r.system, r.groups, r.per_D, r.paper, r.ratio, r.npu_bandwidth_TBps])
    files.append(out / "microbenchmarks.csv")
    with open(out / "end_to_end.csv", "w", newline="") as fh:
        wr = csv.writer(fh)
        keys = sorted({k for r in rep.e2e for k in r.breakdown_s})
        wr.writerow(["workload", "system", "iteration_s", "speedup", "paper_speedup", "ratio", *keys, "note"])
        for r in rep.e2e:
            wr.writerow([r.workload, r.system, r.iteration_s, r.speedup, r.paper_speedup, r.ratio,
                         *[r.breakdown_s.get(k) for k in keys], r.note])
    files.append(out / "end_to_end.csv")
    files += write_plots(rep, out)
    return files


def write_plots(rep: Reproduction, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..report.plots import COLORS

    files = []
    fig, axes = plt.subplots(1, len(DIMENSIONS), figsize=(4 * len(DIMENSIONS), 3.6), sharey=False)
    for ax, dim in zip(axes, DIMENSIONS):
        rows = [r for r in rep.micro if r.dimension == dim]
        x = np.arange(len(rows))
        ax.bar(x - 0.2, [r.per_D for r in rows], 0.4, label="fabricsim", color="#4C72B0")
        ax.bar(x + 0.2, [r.paper or 0 for r in rows], 0.4, label="paper", color="#CCCCCC")
        ax.set_xticks(x, [r.system for r in rows], rotation=30)
        ax.set_title(dim, fontsize=9)
        ax.set_ylabel("time per byte (D / (TB/s))")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    files.append(out / "microbenchmarks.png")
    fig.savefig(files[-1], dpi=110)
    plt.close(fig)
    done = [r for r in rep.e2e if r.iteration_s]
    workloads = list(dict.fromkeys(r.workload for r in done))
    if workloads:
        fig, axes = plt.subplots(1, len(workloads), figsize=(5 * len(workloads), 4))
        axes = np.atleast_1d(axes)
        for ax, wl in zip(axes, workloads):
            rows = [r for r in done if r.workload == wl]
            bottom = np.zeros(len(rows))
            for comp in ("compute", "MP", "PP", "DP", "IO", "other", "idle"):
                v = np.array([r.breakdown_s.get(comp, 0.0) * 1e3 for r in rows])
                if v.any():
                    ax.bar([r.system for r in rows], v, bottom=bottom, color=COLORS[comp],
                           label=comp if comp in ("compute", "idle") else f"exposed {comp}")
                    bottom += v
            ax.set_title(wl, fontsize=10)
            ax.set_ylabel("time per iteration (ms)")
            ax.tick_params(axis="x", rotation=30)
        seen: dict = {}
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                seen.setdefault(lab, h)
        axes[-1].legend(list(seen.values()), list(seen), fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        files.append(out / "end_to_end.png")
        fig.savefig(files[-1], dpi=110)
        plt.close(fig)
    sweep_wl = list(dict.fromkeys(r.workload for r in rep.sweep))
    if sweep_wl:
        fig, axes = plt.subplots(1, len(sweep_wl), figsize=(6 * len(sweep_wl), 4))
        axes = np.atleast_1d(axes)
        for ax, wl in zip(axes, sweep_wl):
            rows = [r for r in rep.sweep if r.workload == wl]
            strategies = list(dict.fromkeys(r.strategy for r in rows))
            systems = list(dict.fromkeys(r.system for r in rows))
            x = np.arange(len(strategies))
            w = 0.8 / len(systems)
            for k, sysname in enumerate(systems):
                by = {r.strategy: r for r in rows if r.system == sysname}
                comp = np.array([by[st].compute_per_sample_s for st in strategies]) * 1e3
                exp_ = np.array([by[st].exposed_comm_per_sample_s for st in strategies]) * 1e3
                rest = np.array([by[st].per_sample_s for st in strategies]) * 1e3 - comp - exp_
                xs = x + (k - (len(systems) - 1) / 2) * w
                ax.bar(xs, comp, w, color=COLORS["compute"], label="compute" if k == 0 else None)
                ax.bar(xs, exp_, w, bottom=comp, color=COLORS["MP"] if k == 0 else COLORS["PP"],
                       label=f"exposed communication, {sysname}")
                ax.bar(xs, rest, w, bottom=comp + exp_, color=COLORS["idle"], label="idle" if k == 0 else None)
            ax.set_xticks(x, strategies, rotation=35, fontsize=7)
            ax.set_ylabel("time per sample (ms)")
            ax.set_title(f"{wl}: strategy sweep ({' vs '.join(systems)})", fontsize=9)
            ax.legend(fontsize=7)
        fig.tight_layout()
        files.append(out / "sweep.png")
        fig.savefig(files[-1], dpi=110)
        plt.close(fig)
    return files


def _f(x, fmt="{:.3f}"):
    return "-" if x is None else fmt.format(x)


def print_report(rep: Reproduction, con, files=()) -> None:
    from rich.table import Table

    t = Table(box=None, header_style="bold", title="(a) communication microbenchmarks: time per byte, D/(TB/s); all groups at once")
    for c in ("dimension", "system", "groups", "fabricsim", "paper", "ratio", "per-NPU TB/s"):
        t.add_column(c, justify="right")
    for r in rep.micro:
        t.add_row(r.dimension, r.system, str(r.groups), _f(r.per_D), _f(r.paper), _f(r.ratio, "{:.2f}"),
                  _f(r.npu_bandwidth_TBps, "{:.2f}"))
    con.print(t)
    t = Table(box=None, header_style="bold", title="(b) all-reduce traffic per NPU (x D), executed on data")
    for c in ("N", "in-network", "endpoint (ring)", "endpoint / in-network", "2(N-1)/N"):
        t.add_column(c, justify="right")
    for r in rep.traffic:
        t.add_row(str(r.n), _f(r.in_network_per_npu), _f(r.endpoint_per_npu), _f(r.factor), _f(r.formula))
    con.print(t)
    t = Table(box=None, header_style="bold", title="(c) end-to-end training: time per iteration (mean over NPUs) and speedup over the mesh")
    for c in ("workload", "system", "iteration", "compute", "exp. MP", "exp. PP", "exp. DP", "exp. I/O", "idle",
              "speedup", "paper", "ratio"):
        t.add_column(c, justify="right")
    for r in rep.e2e:
        if r.iteration_s is None:
            t.add_row(r.workload, r.system, "not modelled", *["-"] * 6, "-", _f(r.paper_speedup, "{:.2f}"), "-")
            continue
        b = r.breakdown_s
        t.add_row(r.workload, r.system, format_time(r.iteration_s), *(format_time(b.get(k, 0.0)) for k in
                  ("compute", "MP", "PP", "DP", "IO", "idle")), _f(r.speedup, "{:.2f}"), _f(r.paper_speedup, "{:.2f}"),
                  _f(r.ratio, "{:.2f}"))
    con.print(t)
    t = Table(box=None, header_style="bold", title="(d) strategy sweep: time per sample and exposed communication per sample")
    for c in ("workload", "strategy", "system", "per sample", "compute", "exposed comm"):
        t.add_column(c, justify="right")
    for r in rep.sweep:
        t.add_row(r.workload, r.strategy, r.system, format_time(r.per_sample_s), format_time(r.compute_per_sample_s),
                  format_time(r.exposed_comm_per_sample_s))
    con.print(t)
    t = Table(box=None, header_style="bold", title="(d) averaged over strategies: Fred-D against the mesh")
    for c in ("workload", "speedup", "paper", "ratio", "exposed comm reduction", "paper", "ratio",
              "fastest on mesh", "fastest on Fred-D", "paper"):
        t.add_column(c, justify="right")
    for r in rep.sweep_summary:
        ps, pe = r.paper.get("speedup"), r.paper.get("exposed_comm_reduction")
        t.add_row(r.workload, _f(r.speedup_mean, "{:.2f}"), _f(ps, "{:.2f}"), _f(r.speedup_mean / ps if ps else None, "{:.2f}"),
                  _f(r.exposed_reduction_mean, "{:.2f}"), _f(pe, "{:.2f}"),
                  _f(r.exposed_reduction_mean / pe if pe else None, "{:.2f}"),
                  *[str(v) for v in r.fastest.values()], str(r.paper.get("fastest_on_fred", "-")))
    con.print(t)
    for note in dict.fromkeys(f"{r.workload}: {r.note}" for r in rep.e2e if r.note):
        con.print(f"# {note}", highlight=False, markup=False)
    for f in files:
        con.print(f"wrote {f}", highlight=False, markup=False)


def reproduce(config: str | None, out: str | None, quick: bool, json_out: bool, con, err_con=None) -> Reproduction:
    cfg = load_config(config)
    rep = run(cfg, quick=quick)
    files = write_outputs(rep, Path(out) if out else DEFAULT_OUT)
    if json_out:
        d = rep.to_dict()
        d["files"] = [str(f) for f in files]
        print(json.dumps(d, indent=1))
    else:
        print_report(rep, con, files)
    return rep
