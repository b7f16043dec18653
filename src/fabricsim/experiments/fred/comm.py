"""FRED parts (a) and (b): communication microbenchmarks on the flow model, and the traffic per
NPU of in-network and endpoint all-reduces. Each is a point of plain data (the topology as a spec
string, the groups as tuples) and a pure function that evaluates it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .config import FredConfig, algorithms, network

# ---------------------------------------------------------------- (a) microbenchmarks


@dataclass(frozen=True)
class MicroPoint:
    """(a) One microbenchmark: every group of a dimension all-reduces (or, for pipeline stages,
    sends) D bytes at once on one system.

    Parameters
    ----------
    dimension : str
        One of `config.DIMENSIONS`.
    system : str
    topology : str
        The system's topology spec (`wafer:5x4,...`, `fred:5x4,...`).
    bandwidth_Bps : float
        Link bandwidth of the spec, bytes/s.
    latency_s : float
        Latency per hop, s.
    algorithm : str
        The system's algorithm for `collective`.
    size : float
        D, bytes.
    groups : tuple of tuple of int
        The NPU groups; for pipeline transfers (source, destination) pairs, or for multicasts
        (source, destinations...).
    collective : str
        `all-reduce`, `p2p` (one flow per pair) or `broadcast` (from each group's first NPU).
    paper : float, optional
        The paper's time, D / (TB/s).
    chunks : int
        Pieces a hierarchical all-reduce is split into and pipelined through its phases
        (`pipelined`); 1: phase after phase.
    """

    dimension: str
    system: str
    topology: str
    bandwidth_Bps: float
    latency_s: float
    algorithm: str
    size: float
    groups: tuple[tuple[int, ...], ...]
    collective: str
    paper: float | None
    chunks: int = 1

    @property
    def label(self) -> str:
        """What progress bars show."""
        return f"micro {self.dimension} {self.system}"


@dataclass(frozen=True)
class MicroRow:
    """(a) One microbenchmark's result.

    Parameters
    ----------
    dimension, system : str
    groups : int
        Groups that ran at once.
    per_D : float
        Time / D, in D / (TB/s) (time x 1e12 / D).
    paper : float, optional
        The paper's value, same unit.
    npu_bandwidth_TBps : float
        Bytes each NPU injects / time, TB/s.
    """

    dimension: str
    system: str
    groups: int
    per_D: float
    paper: float | None
    npu_bandwidth_TBps: float

    @property
    def ratio(self) -> float | None:
        """Ours / the paper's (None without a paper value)."""
        return self.per_D / self.paper if self.paper else None


def _groups(cfg: FredConfig, system: str, dim: str) -> list[list[int]]:
    """The NPU groups of a dimension under the system's placement of MP(2)-DP(5)-PP(2); for PP
    with multicast sends (`training.pp_send`), MP rank 0 of stage 0 and stage 1's MP group, per
    DP replica."""
    from ...workload.parallelism import Strategy

    n = cfg.wafer.cols * cfg.wafer.rows
    if dim.startswith("MP(20)"):
        return [list(range(n))]
    R = Strategy(mp=2, dp=5, pp=2, batch=10, placement=tuple(cfg.systems[system].placement)).ranks()
    if dim.startswith("MP(2)"):
        return [R[:, p, d].tolist() for p in range(2) for d in range(5)]
    if dim.startswith("DP(5)"):
        return [R[m, p, :].tolist() for m in range(2) for p in range(2)]
    if cfg.training.pp_send == "multicast":
        return [[int(R[0, 0, d])] + R[:, 1, d].tolist() for d in range(5)]
    return [R[m, :, d].tolist() for m in range(2) for d in range(5)]  # PP: stage 0 -> stage 1


def micro_point(cfg: FredConfig, system: str, dim: str) -> MicroPoint:
    """The microbenchmark of dimension `dim` on `system` as a point.

    Parameters
    ----------
    cfg : FredConfig
    system : str
        A key of `cfg.systems`.
    dim : str
        One of `config.DIMENSIONS`.

    Returns
    -------
    MicroPoint
    """
    net = network(cfg, system)
    groups = tuple(tuple(g) for g in _groups(cfg, system, dim))
    paper = cfg.microbenchmarks.paper.get(dim, {}).get(system)
    coll = "all-reduce" if not dim.startswith("PP") else ("broadcast" if cfg.training.pp_send == "multicast" else "p2p")
    alg = algorithms(cfg, system).get(coll, "")
    return MicroPoint(dim, system, net["topology"], net["bandwidth"], net["latency"], alg, cfg.microbenchmarks.size,
                      groups, coll, paper, cfg.microbenchmarks.chunks)


def evaluate_micro(pt: MicroPoint) -> MicroRow:
    """Run one microbenchmark on the flow model (pure).

    Every group's schedule becomes flows through `network.lowering.dataflow.schedule_flows` (streams
    through the switch tree for in-network algorithms, dataflow otherwise), all groups merged
    and run at once by `get_network_model("flow").flows`. A hierarchical all-reduce with phases
    on two levels (L1 and L2) runs as `pt.chunks` pieces pipelined through its phases
    (`pipelined`), as ASTRA-sim's chunks flow through the dimensions; on one level it has one
    phase and runs whole.

    Parameters
    ----------
    pt : MicroPoint

    Returns
    -------
    MicroRow
        Time per byte and what each NPU injects per second.
    """
    from ...collectives.api import build_schedule
    from ...network.lowering.dataflow import merge_flows, schedule_flows
    from ...network.flow import Flows
    from ...network.model import get_network_model
    from ...topology.spec import parse_topology

    topo = parse_topology(pt.topology, pt.bandwidth_Bps, pt.latency_s)
    D = pt.size
    parts = []
    injected = 0.0
    for g in pt.groups:
        if pt.collective == "p2p":
            parts.append(Flows([g[0]], [g[1]], [D]))
            injected = D
            continue
        s = build_schedule(topo, pt.collective, pt.algorithm, group=list(g))
        if pt.chunks > 1 and sum(d > 1 for d in s.meta.get("dims", ())) > 1:  # phases on two levels
            parts.append(pipelined(schedule_flows(topo, s, D / pt.chunks), pt.chunks))
        else:
            parts.append(schedule_flows(topo, s, D))
        injected = D if (s.streaming or pt.collective == "broadcast") else 2 * (len(g) - 1) / len(g) * D
    t = get_network_model("flow").flows(topo, merge_flows(*parts, topo=topo)).makespan
    return MicroRow(pt.dimension, pt.system, len(pt.groups), t * 1e12 / D, pt.paper, injected / t / 1e12)


def pipelined(flows, k: int):
    """`k` pieces of a collective's flows, each piece's transfers FIFO behind the previous
    piece's on the same transfer: piece c's step waits for its own previous step and for piece
    c-1's same step, so the pieces flow through the phases one behind the other.

    Parameters
    ----------
    flows : Flows
        The dataflow of one piece (`schedule_flows` of size / k), routed by the topology.
    k : int
        Pieces, >= 1.

    Returns
    -------
    Flows
        k x the flows; piece c's flow i is flow c * n + i (n flows per piece).
    """
    from dataclasses import replace

    n = len(flows)
    if k <= 1 or n == 0:
        return flows
    if flows.route_ptr is not None:
        raise ValueError("pipelined: flows with explicit link sets are not pieces of a dataflow")
    ptrs, idxs, base = [flows.dep_ptr], [flows.dep_idx], int(flows.dep_ptr[-1])
    for c in range(1, k):  # each flow gains one dependency: the same flow of the previous piece
        idx = np.insert(flows.dep_idx + c * n, flows.dep_ptr[1:], (c - 1) * n + np.arange(n))
        ptrs.append((flows.dep_ptr + np.arange(n + 1))[1:] + base)
        idxs.append(idx)
        base += len(idx)
    tile = lambda a: None if a is None else np.tile(a, k)  # noqa: E731
    return replace(flows, src=tile(flows.src), dst=tile(flows.dst), size=tile(flows.size), start=tile(flows.start),
                   cap=tile(flows.cap), priority=tile(flows.priority), dep_ptr=np.concatenate(ptrs),
                   dep_idx=np.concatenate(idxs).astype(np.int64), latency=tile(flows.latency))


def microbenchmark(cfg: FredConfig, system: str, dim: str) -> MicroRow:
    """All-reduces (or pipeline transfers) of D bytes for every group of a dimension at once.

    Parameters
    ----------
    cfg : FredConfig
    system : str
    dim : str
        One of `config.DIMENSIONS`.

    Returns
    -------
    MicroRow
        `evaluate_micro(micro_point(cfg, system, dim))`.
    """
    return evaluate_micro(micro_point(cfg, system, dim))


# ---------------------------------------------------------------- (b) traffic


@dataclass(frozen=True)
class TrafficPoint:
    """(b) One group size on the in-network system's fabric.

    Parameters
    ----------
    n : int
        Group size.
    topology : str
        The topology spec of the first in-network system.
    bandwidth_Bps : float
        Its link bandwidth, bytes/s.
    latency_s : float
        Latency per hop, s.
    """

    n: int
    topology: str
    bandwidth_Bps: float
    latency_s: float

    @property
    def label(self) -> str:
        """What progress bars show."""
        return f"traffic {self.n}"


@dataclass(frozen=True)
class TrafficRow:
    """(b) Bytes each NPU sends for an all-reduce of D, in units of D: in-network, endpoint (ring),
    their ratio, and the closed form 2(N-1)/N."""

    n: int
    in_network_per_npu: float
    endpoint_per_npu: float
    factor: float
    formula: float


def traffic_point(cfg: FredConfig, n: int) -> TrafficPoint:
    """Group size `n` on the first in-network system of the config, as a point.

    Parameters
    ----------
    cfg : FredConfig
        The reproduction's config.
    n : int
        NPUs in the all-reduce group.

    Returns
    -------
    TrafficPoint
        Plain data: the group size and that system's topology spec, link bandwidth (bytes/s) and
        hop latency (s).
    """
    net = network(cfg, next(s for s, v in cfg.systems.items() if v.in_network))
    return TrafficPoint(n, net["topology"], net["bandwidth"], net["latency"])


def evaluate_traffic(pt: TrafficPoint) -> TrafficRow:
    """Count the traffic per NPU of both schedules after executing them on data (pure).

    Parameters
    ----------
    pt : TrafficPoint

    Returns
    -------
    TrafficRow
        The group: the first n NPUs for n <= 4, else n spread evenly over the wafer.
    """
    from ...collectives.api import build_schedule
    from ...collectives.verify import verify
    from ...topology.spec import parse_topology

    topo = parse_topology(pt.topology, pt.bandwidth_Bps, pt.latency_s)
    n, total = pt.n, topo.n_npus
    group = list(range(n)) if n <= 4 else [int(x) for x in np.linspace(0, total - 1, n).round()]
    innet = build_schedule(topo, "all-reduce", "in_network_tree", group=group)
    ring = build_schedule(topo, "all-reduce", "ring", group=group)
    verify(innet)
    verify(ring)
    a = float(innet.bytes_sent(1.0)[:n].max())
    b = float(ring.bytes_sent(1.0).max())
    return TrafficRow(n, a, b, b / a, 2 * (n - 1) / n)


def traffic(cfg: FredConfig, n: int) -> TrafficRow:
    """Traffic per NPU of in-network and endpoint all-reduces of `n` NPUs.

    Parameters
    ----------
    cfg : FredConfig
        The reproduction's config.
    n : int
        NPUs in the all-reduce group.

    Returns
    -------
    TrafficRow
        `evaluate_traffic(traffic_point(cfg, n))`: bytes per NPU in units of D.
    """
    return evaluate_traffic(traffic_point(cfg, n))
