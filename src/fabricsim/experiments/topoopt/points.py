"""The TopoOpt study as points: one (workload, d, B, fabric) each, evaluated alone.

Every fabric gets its own strategy search (the same MCMC on its own topology, as the paper
does); TopoOpt alternates it with TopologyFinder. The iteration time reported is the training
engine's (`workload.opstrategy.build_graph` on `engine.simulate`); the search's estimate is kept
beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...engine import CommPricer, simulate
from ...system import NPU
from ...system.model import System
from ...topology import fat_tree, from_edges, parse_topology
from ...topology.graph import Topology
from ...workload.models import get_model
from ...workload.opstrategy import OpStrategy, Workload, build_graph, plan
from .config import TopoOptConfig

CIRCULANT = ("topoopt", "expander", "ocs")


@dataclass(frozen=True)
class FabricPoint:
    """One workload on one fabric at one (d, B): plain data (picklable).

    Parameters
    ----------
    workload, model : str
        The config's name for it and the zoo model.
    dtype : str
        Element type of activations and gradients.
    batch : int
        Global batch, samples.
    bag : int
        Embedding rows read per sample and table.
    alpha : float
        Metropolis temperature per ms.
    servers, gpus : int
    intra_bandwidth : float
        bytes/s per GPU inside a server.
    npu : tuple of float
        (peak FLOP/s, memory bytes/s, efficiency) of one server.
    degree : int
        Interfaces per server, d.
    link_bandwidth : float
        Per interface, B (bytes/s).
    server_bandwidth : float
        What a switched fabric gives each server (bytes/s): d x B, or the cost-equivalent rate.
    latency : float
        Per link, s.
    fabric : str
        One of `config.FABRICS`.
    steps, rounds : int
        MCMC proposals per round, rounds (fixed fabrics search steps x rounds).
    split, select : str
        TopologyFinder's modes.
    seed, max_groups : int
    network_model : str
        The engine's network model.
    leaf : int
        Servers per leaf switch of the fat-trees.
    oversub : float
        Oversubscription of the oversubscribed fat-tree.
    duty : float
        Share of time an OCS is live (live / (live + reconfiguration)).
    """

    workload: str
    model: str
    dtype: str
    batch: int
    bag: int
    alpha: float
    servers: int
    gpus: int
    intra_bandwidth: float
    npu: tuple[float, float, float]
    degree: int
    link_bandwidth: float
    server_bandwidth: float
    latency: float
    fabric: str
    steps: int
    rounds: int
    split: str
    select: str
    seed: int
    max_groups: int
    network_model: str
    leaf: int
    oversub: float
    duty: float


@dataclass(frozen=True)
class FabricRow:
    """What one point measured.

    Parameters
    ----------
    point : FabricPoint
    iteration : float
        The training engine's iteration time, s.
    estimate : float
        The search's estimate of it, s.
    strategy : dict
        Degree -> op groups at that degree; `tables_on`: servers holding embedding tables.
    topology : dict
        What was built (name, links; jumps, d_ar, d_mp, diameter for direct-connect fabrics).
    trace : tuple of (round, step, current s, best s)
        The search (TopoOpt only; thinned to at most 400 rows).
    """

    point: FabricPoint
    iteration: float
    estimate: float
    strategy: dict
    topology: dict
    trace: tuple = ()


def algorithms_for(fabric: str) -> dict:
    """The all-reduce each fabric runs: rings of the topology's jumps on direct-connect fabrics
    (`circulant_rings`: a plain ring where there are no jumps, the expander), a ring on switches.

    Parameters
    ----------
    fabric : str

    Returns
    -------
    dict
        collective -> algorithm, for `CommPricer`.
    """
    from ...optimize.search import DIRECT_ALGORITHMS

    return dict(DIRECT_ALGORITHMS) if fabric in CIRCULANT else {"all-reduce": "ring"}


def _conn_topology(conn: np.ndarray, bandwidth: float, latency: float, name: str) -> Topology:
    """A direct-connect topology from a link-multiplicity matrix: one link per (i, j) with
    conn[i, j] > 0 of conn[i, j] x bandwidth."""
    src, dst = np.nonzero(conn)
    return from_edges(src, dst, n_npus=len(conn), bandwidth=conn[src, dst] * bandwidth, latency=latency,
                      bidirectional=False, name=name)


def workload_of(p: FabricPoint) -> Workload:
    """The point's model on its servers (`workload.opstrategy.Workload`)."""
    return Workload(get_model(p.model, p.dtype), p.servers, p.batch, gpus=p.gpus, intra_bandwidth=p.intra_bandwidth,
                    bag=p.bag, max_groups=p.max_groups)


def _strategy_summary(work: Workload, st: OpStrategy) -> dict:
    dense = [k for k, g in zip(st.degrees, work.groups) if not g.embedding]
    out = {str(k): dense.count(k) for k in sorted(set(dense), reverse=True)}
    tables = [s for k, s, g in zip(st.degrees, st.starts, work.groups) if g.embedding and k == 1]
    if tables:
        out["tables_on"] = len(set(tables))
    return out


def evaluate(p: FabricPoint) -> FabricRow:
    """Search a strategy for the point's fabric (and, for TopoOpt, its topology), then run the
    training engine on it.

    Parameters
    ----------
    p : FabricPoint

    Returns
    -------
    FabricRow
    """
    from ...optimize.estimate import Estimator
    from ...optimize.finder import to_topology, topology_finder
    from ...optimize.perms import random_regular
    from ...optimize.search import co_optimize, mcmc
    from ...workload.opstrategy import traffic

    work = workload_of(p)
    npu = NPU(*p.npu)
    n, budget = p.servers, p.steps * p.rounds
    info: dict = {}
    trace: tuple = ()
    if p.fabric == "topoopt":
        res = co_optimize(work, npu, degree=p.degree, bandwidth=p.link_bandwidth, latency=p.latency, rounds=p.rounds,
                          steps=p.steps, alpha=p.alpha, seed=p.seed, split=p.split, select=p.select)
        topo, st, est = res.topology, res.strategy, res.estimate
        info = res.found.summary()
        trace = tuple(res.trace[::max(1, len(res.trace) // 400)])
    elif p.fabric == "ocs":  # the demand of the strategy found for a fat-tree of d x B, re-matched
        ft = fat_tree(n, p.server_bandwidth, p.latency, leaf=min(p.leaf, n))
        st = mcmc(work, ft, npu, steps=budget, alpha=p.alpha, seed=p.seed, algorithms=algorithms_for("fat-tree")).strategy
        groups, mp = traffic(plan(work, st))
        found = topology_finder(n, p.degree, groups, mp, split="paper", select=p.select, seed=p.seed)
        topo = to_topology(found, p.link_bandwidth * p.duty, p.latency)
        info = found.summary()
        est = Estimator(topo, npu, algorithms=algorithms_for(p.fabric))(plan(work, st))
    else:
        if p.fabric == "ideal":
            topo = parse_topology(f"switch:{n}", p.server_bandwidth, p.latency)
        elif p.fabric == "expander":
            topo = _conn_topology(random_regular(n, p.degree, p.seed), p.link_bandwidth, p.latency, f"expander:{n}")
        else:  # the fat-trees
            topo = fat_tree(n, p.server_bandwidth, p.latency, leaf=min(p.leaf, n),
                            oversub=p.oversub if p.fabric == "fat-tree-2to1" else 1.0)
        res = mcmc(work, topo, npu, steps=budget, alpha=p.alpha, seed=p.seed, algorithms=algorithms_for(p.fabric))
        st, est = res.strategy, res.estimate
    pricer = CommPricer(topo, p.network_model, algorithms_for(p.fabric))
    result = simulate(build_graph(plan(work, st)), System(npu), pricer)
    info.update(name=topo.name, links=int(topo.n_links))
    return FabricRow(p, float(result.makespan), float(est), _strategy_summary(work, st), info, trace)


def points(cfg: TopoOptConfig, quick: bool = False) -> list[FabricPoint]:
    """Every (workload, d, B, fabric) of the config (the quick subset with `quick`, and with
    `quick.demo` the paper's demo points at full size: TopoOpt and the cost-equivalent fat-tree
    with the full search, so that the quick run compares the demo's figures).

    Parameters
    ----------
    cfg : TopoOptConfig
    quick : bool

    Returns
    -------
    list of FabricPoint
        In workload, degree, bandwidth, fabric order (the demo points last).
    """
    from ...optimize.cost import Prices

    prices = Prices.from_mapping(cfg.prices)
    q = cfg.quick
    n = q.servers if quick else cfg.servers
    names = q.workloads if quick else list(cfg.workloads)
    degrees = q.degrees if quick else cfg.degrees
    bws = q.link_bandwidths if quick else cfg.link_bandwidths
    fabrics = q.fabrics if quick else cfg.fabrics
    budget = (q.steps, q.rounds) if quick else (cfg.search.steps, cfg.search.rounds)
    cases = [(name, n, d, B, fabrics, budget) for name in names for d in degrees for B in bws]
    if quick and q.demo:
        cases += [(demo.workload, cfg.servers, demo.degree, demo.bandwidth, ("topoopt", "fat-tree-cost"),
                   (cfg.search.steps, cfg.search.rounds)) for demo in cfg.paper.demo]
    out, seen = [], set()
    for name, servers, d, B, fabs, (steps, rounds) in cases:
        equiv = cost_equivalent(servers, d, B, prices, cfg.fat_tree.tiers)
        for f in fabs:
            if (name, servers, d, B, f) not in seen:  # a demo point the subset already runs
                seen.add((name, servers, d, B, f))
                out.append(_point(cfg, name, servers, d, B, f, equiv if f == "fat-tree-cost" else d * B, steps, rounds))
    return out


def _point(cfg: TopoOptConfig, name: str, n: int, d: int, B: float, fabric: str, server_bw: float,
           steps: int, rounds: int) -> FabricPoint:
    """One run: workload `name` on `n` servers, degree `d`, line rate `B` (bytes/s), `fabric` at
    `server_bw` bytes/s per server, the search's `steps` x `rounds`."""
    w = cfg.workloads[name]
    npu = cfg.server.npu.build()
    return FabricPoint(
        name, w.model, w.dtype, n * cfg.server.gpus * w.batch_per_gpu, w.bag, w.alpha or cfg.search.alpha, n,
        cfg.server.gpus, cfg.server.intra_bandwidth, (npu.peak_flops, npu.memory_bandwidth, npu.efficiency), d, B,
        server_bw, cfg.latency, fabric, steps, rounds, cfg.search.split, cfg.search.select, cfg.search.seed,
        cfg.search.max_groups, cfg.network_model, cfg.fat_tree.leaf, cfg.fat_tree.oversubscribed,
        cfg.ocs.live / (cfg.ocs.live + cfg.ocs.reconfiguration))


def cost_equivalent(n: int, d: int, link_bw: float, prices, tiers: int) -> float:
    """The per-server rate of the fat-tree that costs what TopoOpt costs at (d, B), bytes/s: the
    rate at which the fat-tree's cost, interpolated between the price tables' points, equals
    TopoOpt's (`optimize.cost.cost_equivalent_bandwidth`'s `continuous`), not the fastest swept
    rate below it (a 100 Gb/s fat-tree 0.6% dearer than TopoOpt would drop to 40 Gb/s).

    Parameters
    ----------
    n, d : int
        Servers; TopoOpt's interfaces per server.
    link_bw : float
        TopoOpt's line rate B, bytes/s.
    prices : Prices
    tiers : int
        Fat-tree tiers.

    Returns
    -------
    float
        Bytes/s; ConfigError when even the cheapest priced fat-tree costs more than TopoOpt.
    """
    from ...errors import ConfigError
    from ...optimize.cost import cost_equivalent_bandwidth

    eq = cost_equivalent_bandwidth(n, d, link_bw, prices, tiers=tiers)
    if eq.continuous is None:
        raise ConfigError("prices", f"d={d}, B={link_bw * 8 / 1e9:g} Gb/s", "no priced fat-tree costs as little as "
                                                                         "TopoOpt; accepted: price tables reaching lower rates")
    return eq.continuous


def label(p: FabricPoint) -> str:
    """`DLRM d=8 B=100 Gb/s topoopt`."""
    return f"{p.workload} d={p.degree} B={p.link_bandwidth * 8 / 1e9:g} Gb/s {p.fabric}"
