"""`fabricsim topology optimize CONFIG`: TopoOpt for a user's own job. The config names the servers,
their interfaces, the model and the search; the run co-optimizes the strategy and the topology,
times one iteration on the training engine and writes the topology (edge list, permutations),
its routing and the strategy.

    name: DLRM on 64 servers
    servers: 64
    degree: 4
    link_bandwidth: 100Gbps
    latency: 1us
    server: {gpus: 4, intra_bandwidth: 200Gbps, npu: {peak: 624TFLOP/s, memory_bandwidth: 6.22TB/s, efficiency: 0.5}}
    workload: {model: dlrm-topoopt, batch_per_gpu: 128, bag: 100}
    search: {steps: 200, rounds: 2, alpha: 1.0, split: paper, select: geometric, seed: 0}

The config sections here (`ServerSection`, `SearchSection`, `WorkloadSection`) are the ones the
TopoOpt reproduction's config uses too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

from ..config import load_yaml
from ..errors import ConfigError
from ..sections import NpuSection
from ..topology.family import check_link_value
from ..units import parse_bandwidth, parse_time


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _bw(field: str, link: bool = False):
    """A bandwidth field; `link`: one of the built topology's links, so within the range its
    builder accepts (`topology.family.check_link_value`: 1 B/s to 1 EB/s), refused at load with the
    file named, not later by the builder without it."""
    def parse(v):
        bw = parse_bandwidth(v, field)
        return check_link_value(bw, field, v) if link else bw

    return field_validator(field, mode="before")(parse)


def _time(field: str, link: bool = False):
    """A time field; `link`: a link latency of the built topology (0 to 1e6 s)."""
    def parse(v):
        t = parse_time(v, field)
        return check_link_value(t, "latency", v) if link else t

    return field_validator(field, mode="before")(parse)


def _network_model(v):
    """A registered network model's name (checked at load time)."""
    from ..network.model import canonical_model_name

    try:
        return canonical_model_name(v)
    except ConfigError as e:
        raise ValueError(e.accepted) from None


class ServerSection(_Strict):
    """One server: its GPUs as one NPU (roofline), and the intra-server all-reduce step's bandwidth
    per GPU (bytes/s; units accepted)."""

    npu: NpuSection
    gpus: StrictInt = Field(default=1, ge=1)
    intra_bandwidth: float = float("inf")
    _intra = _bw("intra_bandwidth")


class SearchSection(_Strict):
    """MCMC and TopologyFinder settings (`optimize.search`): proposals per round, rounds, alpha
    (per ms), degree split (`paper` or `released`), SelectPermutations mode (`geometric` or
    `search`), seed, op groups per run of dense layers."""

    steps: StrictInt = Field(default=200, ge=0)
    rounds: StrictInt = Field(default=2, ge=1)
    alpha: float = Field(default=1.0, gt=0)
    split: str = "paper"
    select: str = "geometric"
    seed: StrictInt = Field(default=0, ge=0, lt=2**63)  # numpy's generators take non-negative seeds
    max_groups: StrictInt = Field(default=8, ge=1)

    @field_validator("split")
    @classmethod
    def _split(cls, v):
        if v not in ("paper", "released"):
            raise ValueError("accepted: paper (degree split by traffic) or released (all degree to all-reduce)")
        return v

    @field_validator("select")
    @classmethod
    def _select(cls, v):
        if v not in ("geometric", "search"):
            raise ValueError("accepted: geometric or search")
        return v


class WorkloadSection(_Strict):
    """One model: zoo name, element type, per-GPU batch, embedding bag (rows read per sample and
    table), Metropolis alpha (default: the search's)."""

    model: str
    dtype: str = "fp32"
    batch_per_gpu: StrictInt = Field(ge=1)
    bag: StrictInt = Field(default=1, ge=1)
    alpha: float | None = Field(default=None, gt=0)

    @field_validator("model")
    @classmethod
    def _model(cls, v):
        from ..workload.models import MODELS

        if v not in MODELS:
            raise ValueError(f"accepted: {', '.join(MODELS)}")
        return v

    @field_validator("dtype")
    @classmethod
    def _dtype(cls, v):
        from ..workload.models import DTYPES

        if v not in DTYPES:
            raise ValueError(f"accepted: {', '.join(DTYPES)}")
        return v


class JobConfig(_Strict):
    """A `fabricsim topology optimize` config (module doc)."""

    name: str = "job"
    servers: StrictInt = Field(ge=2)
    degree: StrictInt = Field(ge=2)
    link_bandwidth: float
    latency: float = 1e-6
    network_model: str = "congestion-aware"
    server: ServerSection
    workload: WorkloadSection
    search: SearchSection = Field(default_factory=SearchSection)
    _b = _bw("link_bandwidth", link=True)
    _l = _time("latency", link=True)
    _m = field_validator("network_model", mode="before")(_network_model)

    @field_validator("servers")
    @classmethod
    def _servers(cls, v):
        if v & (v - 1):
            raise ValueError("accepted: a power of two (strided placement of all-reduce groups)")
        return v

    @field_validator("degree")
    @classmethod
    def _degree(cls, v):
        if v % 2:
            raise ValueError("accepted: an even degree >= 2 (rings both ways)")
        return v


def load_job(path: str | Path) -> JobConfig:
    """Read and check a job config (one-line ConfigError naming the field for bad input).

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    JobConfig
        Also refused: a degree above what rings can use on the servers (`finder.ring_capacity`),
        and servers beyond the `npus`, `links` (servers x degree) or `route_table` limit.
    """
    from ..limits import check_limit
    from ..topology.family import check_size
    from .finder import ring_capacity

    cfg = load_yaml(JobConfig, path, "servers, degree, link_bandwidth, server, workload")
    # sized as the topology it builds (servers x servers routing table) before the search allocates
    check_size(cfg.servers, cfg.servers, f"{path}: servers", cfg.servers, cfg.servers ** 2)
    cap = ring_capacity(cfg.servers)  # O(servers): after the servers are known to be within the limits
    if cfg.degree > cap:
        raise ConfigError(f"{path}: degree", cfg.degree, f"accepted: at most {cap} on {cfg.servers} servers "
                                                        "(their distinct rings, 2 interfaces each)")
    check_size(cfg.servers, cfg.servers * cfg.degree, f"{path}: degree", cfg.degree, cfg.servers ** 2)
    check_limit("proposals", cfg.search.steps * cfg.search.rounds, "MCMC proposals (steps x rounds)",
                f"{path}: search.steps", cfg.search.steps)
    return cfg


def workload_of(cfg: JobConfig):
    """The job's model on its servers (`workload.opstrategy.Workload`).

    Parameters
    ----------
    cfg : JobConfig

    Returns
    -------
    Workload
        Global batch = servers x GPUs per server x per-GPU batch.
    """
    from ..workload.models import get_model
    from ..workload.opstrategy import Workload

    w = cfg.workload
    return Workload(get_model(w.model, w.dtype), cfg.servers, cfg.servers * cfg.server.gpus * w.batch_per_gpu,
                    gpus=cfg.server.gpus, intra_bandwidth=cfg.server.intra_bandwidth, bag=w.bag,
                    max_groups=cfg.search.max_groups)


@dataclass(frozen=True)
class JobResult:
    """What `optimize_job` found.

    Parameters
    ----------
    config : JobConfig
    work : Workload
        The model on its servers (`workload_of`).
    search : SearchResult
        Strategy, topology, trace, TopologyFinder's result.
    iteration : float
        The training engine's iteration time on it, s.
    """

    config: JobConfig
    work: object
    search: object
    iteration: float


def optimize_job(cfg: JobConfig, progress=None) -> JobResult:
    """Co-optimize the job's strategy and topology, then time one iteration on the engine.

    Parameters
    ----------
    cfg : JobConfig
    progress : callable, optional
        `progress(done, total, label)`.

    Returns
    -------
    JobResult
    """
    from ..engine import CommPricer, simulate
    from ..system.model import System
    from ..workload.opstrategy import build_graph, plan
    from .search import DIRECT_ALGORITHMS, co_optimize

    s, w = cfg.search, cfg.workload
    work = workload_of(cfg)
    npu = cfg.server.npu.build()
    total = s.steps * s.rounds
    tick = (lambda i: progress(i, total, "MCMC + TopologyFinder")) if progress is not None else None
    res = co_optimize(work, npu, degree=cfg.degree, bandwidth=cfg.link_bandwidth, latency=cfg.latency,
                      rounds=s.rounds, steps=s.steps, alpha=w.alpha or s.alpha, seed=s.seed, split=s.split,
                      select=s.select, progress=tick)
    if progress is not None:
        progress(total, total, "training engine")
    pricer = CommPricer(res.topology, cfg.network_model, DIRECT_ALGORITHMS)
    out = simulate(build_graph(plan(work, res.strategy)), System(npu), pricer)
    return JobResult(cfg, work, res, float(out.makespan))


def routing(result: JobResult) -> dict:
    """The routing of the found topology: per all-reduce group its ring steps and the hops of each
    ring step; per MP pair with demand its path (servers, in order).

    Parameters
    ----------
    result : JobResult

    Returns
    -------
    dict
        `allreduce`: [{members, bytes, steps, hops}], `mp`: [{src, dst, bytes, path}].
    """
    from ..collectives.circulant_rings import ring_steps
    from ..workload.opstrategy import plan, traffic

    res = result.search
    topo = res.topology
    groups, mp = traffic(plan(result.work, res.strategy))
    ar = []
    for members, size in groups:
        steps = ring_steps(topo.n_npus, topo.jumps, members)
        stride = topo.n_npus // len(members)
        ptr, _ = topo.route([members[0]] * len(steps), [(members[0] + q * stride) % topo.n_npus for q in steps])
        ar.append({"members": list(members), "bytes": size, "steps": list(steps),
                   "hops": [int(h) for h in np.diff(ptr)]})
    src, dst = np.nonzero(mp)
    ptr, links = topo.route(src, dst)
    paths = [[int(src[i])] + topo.link_dst[links[ptr[i]:ptr[i + 1]]].tolist() for i in range(len(src))]
    return {"allreduce": ar, "mp": [{"src": int(a), "dst": int(b), "bytes": float(mp[a, b]), "path": p}
                                    for a, b, p in zip(src, dst, paths)]}


def write_job(result: JobResult, out: str | Path) -> list[Path]:
    """topology.json (permutations, degree split, diameter), edges.csv (src, dst, links,
    bandwidth), routing.json, strategy.json in `out`.

    Parameters
    ----------
    result : JobResult
    out : str or Path
        Folder (created).

    Returns
    -------
    list of Path
    """
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError("--out", str(out), f"cannot create it ({e.strerror}); accepted: a writable folder") from None
    res = result.search
    found = res.found
    conn = found.conn
    files = []
    topo_json = {"name": result.config.name, "iteration_s": result.iteration, "estimate_s": res.estimate,
                 **found.summary(), "directed_jumps": list(found.directed_jumps()),
                 "matchings": [m.tolist() for m in found.matchings]}
    files.append(out / "topology.json")
    files[-1].write_text(json.dumps(topo_json, indent=1))
    src, dst = np.nonzero(conn)
    files.append(out / "edges.csv")
    with files[-1].open("w") as fh:
        fh.write("src,dst,links,bandwidth_Bps\n")
        for a, b in zip(src.tolist(), dst.tolist()):
            fh.write(f"{a},{b},{int(conn[a, b])},{conn[a, b] * result.config.link_bandwidth:.6g}\n")
    files.append(out / "routing.json")
    files[-1].write_text(json.dumps(routing(result)))
    files.append(out / "strategy.json")
    st = res.strategy
    files[-1].write_text(json.dumps({"degrees": list(st.degrees), "starts": list(st.starts)}))
    return files
