"""The FRED reproduction's config (`configs/fred.yaml`): pydantic models for every section
(loaded through `fabricsim.config.load_yaml`: one-line errors naming the field), and the systems
it describes (the wafer mesh, Fred-A..D) as topology specs and algorithms."""

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
    """A section: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


class Wafer(_Strict):
    """The wafer: a cols x rows mesh of NPUs, their bandwidths (bytes/s; `npu_bandwidth` each way,
    `mesh_link_bandwidth` per link), the I/O controllers (count, bytes/s each), latency per hop (s)."""

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
    """One system: the mesh or a FRED fabric (`up_bandwidth`: L1-L2 per L1 switch, bytes/s;
    `in_network`: reducing and multicasting switches), its collective algorithm, the order
    in which parallelism dimensions are placed on NPUs, and (mesh) whether its I/O controllers
    run at the rate at which all of them fit the links (`io_throttle`)."""

    kind: Literal["mesh", "fred"]
    algorithm: str
    placement: list[Literal["mp", "pp", "dp"]]
    up_bandwidth: float | None = None
    in_network: bool = False
    io_throttle: bool = False  # mesh: controllers at the rate the all-broadcast fits (wafer io_throttle)

    _up = field_validator("up_bandwidth", mode="before")(lambda v: None if v is None else parse_bandwidth(v, "up_bandwidth"))


class Micro(_Strict):
    """(a) The microbenchmarks: size D (bytes), the pieces an endpoint all-reduce with phases on
    different links (the hierarchical ring) is split into and pipelined through its phases, and
    the paper's times per dimension and system, in D / (TB/s)."""

    size: float
    chunks: int = Field(default=64, ge=1)
    paper: dict[str, dict[str, float]]

    _size = field_validator("size", mode="before")(lambda v: parse_size(v, "size"))


class NpuSpec(_Strict):
    """The NPU: peak (FLOP/s), memory bandwidth (bytes/s), efficiency (0..1]."""

    peak: float
    memory_bandwidth: float
    efficiency: float = Field(gt=0, le=1)

    _peak = field_validator("peak", mode="before")(lambda v: parse_flops(v, "peak"))
    _bw = field_validator("memory_bandwidth", mode="before")(lambda v: parse_bandwidth(v, "memory_bandwidth"))


class Sched(_Strict):
    """Collective scheduling: category priorities and communication streams."""

    priorities: list[Literal["MP", "PP", "DP", "IO", "other"]]
    comm_streams: Literal["one", "per-category"] = "per-category"


class Calibrated(_Strict):
    """The one-factor compute setting: ONE factor on the stated NPU's throughput (peak and memory
    bandwidth), inferred from ONE published result -- `workload`'s speedup of `target` over the
    mesh -- on `network_model` with `iterations`, and used for every workload and the sweep."""

    workload: str
    target: str
    network_model: str
    iterations: int = Field(ge=1)
    speed: float = Field(gt=0)


class Compute(_Strict):
    """The two compute settings: the NPU as stated and the one-factor setting (`calibrated`)."""

    as_stated: NpuSpec
    calibrated: Calibrated


class Training(_Strict):
    """How workloads train on every system: the DP collective (`all-reduce` or `zero-2`), its
    bucket (bytes), pipeline sends (`p2p` or `multicast`), input prefetch, the pipeline layout
    of weight-streaming workloads, and the pieces of a pipelined broadcast."""

    dp_collective: Literal["all-reduce", "zero-2"] = "all-reduce"
    dp_bucket: float = 0.0
    pp_send: Literal["p2p", "multicast"] = "p2p"
    input_prefetch: bool = False
    weight_streaming_layout: Literal["contiguous", "interleaved"] = "contiguous"
    broadcast_chunks: int = Field(default=64, ge=1)

    _bucket = field_validator("dp_bucket", mode="before")(lambda v: parse_size(v, "dp_bucket"))


COMPUTE_SETTINGS = ("as stated", "calibrated")


class Par(_Strict):
    """A parallelization: MP x DP x PP and microbatches."""

    mp: int = Field(ge=1)
    dp: int = Field(ge=1)
    pp: int = Field(ge=1)
    microbatches: int = Field(ge=1)


class WorkloadSpec(_Strict):
    """(c) One end-to-end workload: zoo model, weight mode, strategy, samples per DP replica and
    the paper's speedups per system."""

    model: str
    mode: Literal["weight-stationary", "weight-streaming"]
    parallelism: Par
    samples_per_dp: int = Field(ge=1)
    paper_speedup: dict[str, float]


class Quick(_Strict):
    """The CI subset: iterations, network model, workloads, strategies per sweep."""

    iterations: int = Field(ge=1)
    network_model: str
    workloads: list[str]
    sweep_strategies: int = Field(default=2, ge=1)


class SweepWorkload(_Strict):
    """(d) One workload of the strategy sweep: samples per DP replica, microbatches per PP depth,
    the strategies (`MP(x)-DP(y)-PP(z)`) and the paper's averages."""

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
    """(d) The strategy sweep: systems compared (first: the baseline), network model, iterations,
    workloads."""

    systems: list[str]
    network_model: str
    iterations: int = Field(ge=1)
    workloads: dict[str, SweepWorkload]


def parse_strategy(name: str) -> tuple[int, int, int]:
    """Read a strategy name.

    Parameters
    ----------
    name : str
        `MP(x)-DP(y)-PP(z)`, e.g. `MP(2)-DP(5)-PP(2)`.

    Returns
    -------
    (mp, dp, pp) : tuple of int
        ConfigError naming `strategy` for anything else.
    """
    import re

    m = re.fullmatch(r"\s*MP\((\d+)\)-DP\((\d+)\)-PP\((\d+)\)\s*", str(name))
    if not m:
        raise ConfigError("strategy", name, "accepted: MP(x)-DP(y)-PP(z), e.g. MP(2)-DP(5)-PP(2)")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


class FredConfig(_Strict):
    """The whole reproduction config (configs/fred.yaml): the wafer, the systems, and the
    parameters of parts (a) to (d)."""

    name: str
    wafer: Wafer
    systems: dict[str, SystemSpec]
    microbenchmarks: Micro
    traffic_group_sizes: list[int]
    compute: Compute
    training: Training
    scheduling: Sched
    iterations: int = Field(ge=1)
    network_model: str
    workloads: dict[str, WorkloadSpec]
    sweep: Sweep
    quick: Quick


def default_config_path() -> Path:
    """The shipped config (`experiments.base.shipped_config`).

    Returns
    -------
    Path
        The file; ConfigError naming `--config` if it is not found.
    """
    from ..base import shipped_config

    return shipped_config("fred.yaml", "a FRED reproduction config")


def load_config(path: str | Path | None = None) -> FredConfig:
    """Read and check the reproduction config.

    Parameters
    ----------
    path : str or Path, optional
        The YAML file (default configs/fred.yaml).

    Returns
    -------
    FredConfig
        A one-line ConfigError (file, field, value, what is accepted) for bad input, including
        names that do not refer to a workload or system and strategies that do not fill the wafer.
    """
    cfg = load_yaml(FredConfig, path or default_config_path(), "wafer, systems, microbenchmarks, workloads")
    if "mesh" not in cfg.systems:
        raise ConfigError("systems", list(cfg.systems), "accepted: a 'mesh' baseline among the systems")
    for name in cfg.quick.workloads:
        if name not in cfg.workloads:
            raise ConfigError("quick.workloads", name, f"accepted: {', '.join(cfg.workloads)}")
    for name in list(cfg.sweep.workloads) + cfg.sweep.systems:
        if name not in cfg.workloads and name not in cfg.systems:
            raise ConfigError("sweep", name, f"accepted: workloads {', '.join(cfg.workloads)}; systems {', '.join(cfg.systems)}")
    cal = cfg.compute.calibrated
    if cal.workload not in cfg.workloads:
        raise ConfigError("compute.calibrated.workload", cal.workload, f"accepted: {', '.join(cfg.workloads)}")
    if cal.target not in cfg.workloads[cal.workload].paper_speedup:
        raise ConfigError("compute.calibrated.target", cal.target,
                          f"accepted: a system with a paper speedup for {cal.workload}: "
                          f"{', '.join(cfg.workloads[cal.workload].paper_speedup)}")
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
    """The `network` section of a training config for one system.

    Parameters
    ----------
    cfg : FredConfig
    system : str
        A key of `cfg.systems`.

    Returns
    -------
    dict
        topology (a spec string), bandwidth (bytes/s: the mesh link's, or the NPU's on FRED),
        latency (s per hop) and algorithms (per collective).
    """
    w, s = cfg.wafer, cfg.systems[system]
    if s.kind == "mesh":
        spec = f"wafer:{w.cols}x{w.rows},io={w.io_bandwidth}B/s" + (",iothrottle" if s.io_throttle else "")
        bw = w.mesh_link_bandwidth
    else:
        n = w.cols * w.rows
        spec = (f"fred:{n // NPUS_PER_L1}x{NPUS_PER_L1},up={s.up_bandwidth}B/s,io={w.io_bandwidth}B/s,"
                f"ios={w.io_controllers}" + (",reduce" if s.in_network else ""))
        bw = w.npu_bandwidth
    return {"topology": spec, "bandwidth": bw, "latency": w.hop_latency, "algorithms": algorithms(cfg, system)}


def topology(cfg: FredConfig, system: str):
    """The topology of one system, built from `network(cfg, system)`.

    Parameters
    ----------
    cfg : FredConfig
        The reproduction's config.
    system : str
        A key of `cfg.systems` (`mesh`, `Fred-A` .. `Fred-D`).

    Returns
    -------
    Topology
        The wafer mesh or FRED's switch fabric, link bandwidths in bytes/s, latencies in s.
    """
    from ...topology.spec import parse_topology

    net = network(cfg, system)
    return parse_topology(net["topology"], net["bandwidth"], net["latency"])


def algorithms(cfg: FredConfig, system: str) -> dict[str, str]:
    """The system's algorithm for all-reduce, reduce-scatter, all-gather and broadcast.

    Parameters
    ----------
    cfg : FredConfig
        The reproduction's config.
    system : str
        A key of `cfg.systems`.

    Returns
    -------
    dict
        Collective name -> registered algorithm (the system's for the first three; broadcast:
        FRED's multicast flow with in-network switches, else a chain of
        `training.broadcast_chunks` pipelined pieces).
    """
    s = cfg.systems[system]
    a = s.algorithm
    bcast = "in_network_tree" if s.in_network else f"ring,chunks={cfg.training.broadcast_chunks}"
    return {"all-reduce": a, "reduce-scatter": a, "all-gather": a, "broadcast": bcast}
