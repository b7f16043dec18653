"""The FRED reproduction's config (`configs/fred.yaml`): pydantic models for every section, and
the systems it describes (the wafer mesh, Fred-A..D) as topology specs and algorithms."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...config import load_yaml
from ...errors import ConfigError
from ...units import parse_bandwidth, parse_flops, parse_size, parse_time

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
    for cand in (here.parents[4] / "configs" / "fred.yaml", Path.cwd() / "configs" / "fred.yaml"):
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
    from ...topology.spec import parse_topology

    net = network(cfg, system)
    return parse_topology(net["topology"], net["bandwidth"], net["latency"])


def algorithms(cfg: FredConfig, system: str) -> dict[str, str]:
    a = cfg.systems[system].algorithm
    return {"all-reduce": a, "reduce-scatter": a, "all-gather": a}
