"""Strategy search: Metropolis MCMC over per-op-group parallelization (FlexFlow's search, as
TopoOpt uses it), alternating with TopologyFinder (TopoOpt's co-optimization, NSDI'23 §2.2).

One MCMC step proposes a change to one op group: a new degree (a power of two dividing n) and
a random start, or, for an embedding table, a random server. The estimate
(`optimize.estimate.Estimator`) prices it; a faster strategy is always accepted, a slower one
with probability exp(-alpha x (t_new - t_cur) / 1 ms) (FlexFlow's rule, times in ms). Every
`reset` steps the chain restarts from the best strategy seen.

`co_optimize` alternates: MCMC on the current topology, then TopologyFinder on the best
strategy's traffic gives the next topology, for `rounds` rounds (the paper's alternation;
the released code rebuilds the topology at every accepted step instead: not modelled here).
Everything is driven by one seeded `numpy.random.Generator`: the same inputs and
seed give the same strategy, topology and trace.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import ConfigError
from ..system.npu import NPU
from ..topology.graph import Topology
from ..workload.opstrategy import OpStrategy, Workload, plan, traffic
from .estimate import Estimator

DIRECT_ALGORITHMS = {"all-reduce": "circulant_rings"}
"""What a direct-connect (circulant) topology runs: the all-reduce split over the rings of its jumps
(TopoOpt's routing of all-reduce traffic, `collectives.circulant_rings`)."""


@dataclass(frozen=True)
class SearchResult:
    """The best strategy found and how the search got there.

    Parameters
    ----------
    strategy : OpStrategy
        Best strategy.
    estimate : float
        Its estimated iteration time, s.
    topology : Topology
        The topology it was estimated on.
    trace : tuple of (round, step, current s, best s)
        One row per MCMC step.
    found : object or None
        TopologyFinder's last result (`optimize.finder.FoundTopology`) when co-optimizing.
    """

    strategy: OpStrategy
    estimate: float
    topology: Topology
    trace: tuple[tuple[int, int, float, float], ...] = ()
    found: object | None = None
    history: tuple = field(default=(), repr=False)


def _propose(work: Workload, st: OpStrategy, rng: np.random.Generator, degrees: np.ndarray) -> OpStrategy:
    g = int(rng.integers(len(work.groups)))
    n = work.n
    if work.groups[g].embedding and rng.random() < 0.5:
        return st.with_group(g, 1, int(rng.integers(n)))  # move the table
    k = int(degrees[rng.integers(len(degrees))])
    return st.with_group(g, k, int(rng.integers(n // k)))


def mcmc(work: Workload, topo: Topology, npu: NPU, *, steps: int, alpha: float = 1.0, seed: int = 0,
         start: OpStrategy | None = None, reset: int | None = None, estimator: Estimator | None = None,
         rng: np.random.Generator | None = None, progress: Callable[[int], None] | None = None,
         on_accept: Callable[[OpStrategy], None] | None = None, round_index: int = 0,
         algorithms=None) -> SearchResult:
    """Metropolis search over strategies on a fixed topology (module doc).

    Parameters
    ----------
    work : Workload
        The model on its servers.
    topo : Topology
        The network; its NPUs are the servers.
    npu : NPU
        One server's roofline.
    steps : int
        Proposals, >= 0.
    alpha : float
        Metropolis temperature, per ms of slowdown (> 0).
    seed : int
        Seed of the generator (ignored when `rng` is given).
    start : OpStrategy, optional
        First strategy (default `work.initial()`: data parallel, tables round-robin).
    reset : int, optional
        Restart from the best every `reset` steps (default steps / 10).
    estimator : Estimator, optional
        The objective on `topo` (built if not given).
    rng : numpy Generator, optional
        Shared generator (co-optimization).
    progress : callable, optional
        `progress(steps_done)` after each step.
    on_accept : callable, optional
        Called with each accepted strategy.
    round_index : int
        Round number written in the trace.
    algorithms : mapping, optional
        collective -> algorithm for the estimator built here (`engine.pricing.normalize_algorithms`).

    Returns
    -------
    SearchResult
    """
    if steps < 0:
        raise ConfigError("search.steps", steps, "accepted: an integer >= 0")
    if not alpha > 0:
        raise ConfigError("search.alpha", alpha, "accepted: a number > 0")
    rng = np.random.default_rng(seed) if rng is None else rng
    est = Estimator(topo, npu, algorithms=algorithms) if estimator is None else estimator
    n = work.n
    degrees = np.array([1 << i for i in range(n.bit_length()) if n % (1 << i) == 0])
    cur = start if start is not None else work.initial()
    t_cur = est(plan(work, cur))
    best, t_best = cur, t_cur
    reset = max(1, steps // 10) if reset is None else int(reset)
    trace = []
    for i in range(steps):
        cand = _propose(work, cur, rng, degrees)
        t = est(plan(work, cand))
        if t < t_cur or rng.random() < np.exp(-alpha * (t - t_cur) * 1e3):
            cur, t_cur = cand, t
            if on_accept is not None:
                on_accept(cur)
            if t < t_best:
                best, t_best = cand, t
        if (i + 1) % reset == 0:
            cur, t_cur = best, t_best
        trace.append((round_index, i, t_cur, t_best))
        if progress is not None:
            progress(i + 1)
    return SearchResult(best, t_best, topo, tuple(trace))


def co_optimize(work: Workload, npu: NPU, *, degree: int, bandwidth: float, latency: float, rounds: int,
                steps: int, alpha: float = 1.0, seed: int = 0, split: str = "paper", select: str = "geometric",
                progress: Callable[[int], None] | None = None) -> SearchResult:
    """TopoOpt's alternating optimization: MCMC on a topology, TopologyFinder on the strategy's
    traffic, `rounds` times (module doc).

    Parameters
    ----------
    work : Workload
        The model on its servers.
    npu : NPU
        One server's roofline.
    degree : int
        Interfaces per server, d.
    bandwidth : float
        Per interface, bytes/s.
    latency : float
        Per link (and forwarding hop), s.
    rounds : int
        Alternations, >= 1.
    steps : int
        MCMC proposals per round.
    alpha : float
        Metropolis temperature per ms.
    seed : int
        Seed of the one generator driving the search.
    split : {"paper", "released"}
        Degree split between all-reduce and MP (`optimize.perms.split_degree`).
    select : {"geometric", "search"}
        SelectPermutations mode.
    progress : callable, optional
        `progress(steps_done)` over all rounds.

    Returns
    -------
    SearchResult
        Estimated with the all-reduce on the topology's rings (`DIRECT_ALGORITHMS`). The best
        strategy over all rounds, the topology TopologyFinder built for it, the trace
        of every step, and `found` (TopologyFinder's result).
    """
    from .finder import to_topology, topology_finder

    if rounds < 1:
        raise ConfigError("search.rounds", rounds, "accepted: an integer >= 1")
    rng = np.random.default_rng(seed)
    st = work.initial()
    trace: list = []
    best = None
    history = []
    for r in range(rounds):
        groups, mp = traffic(plan(work, st))
        found = topology_finder(work.n, degree, groups, mp, split=split, select=select,
                                seed=int(rng.integers(2**31)))
        topo = to_topology(found, bandwidth, latency)
        done = r * steps

        def tick(i, done=done):
            if progress is not None:
                progress(done + i)

        res = mcmc(work, topo, npu, steps=steps, alpha=alpha, start=st, rng=rng, progress=tick, round_index=r,
                   algorithms=DIRECT_ALGORITHMS)
        trace.extend(res.trace)
        history.append((r, found, res.estimate))
        if best is None or res.estimate < best[0]:
            best = (res.estimate, res.strategy, topo, found)
        st = res.strategy
    # the topology for the final strategy: TopologyFinder on its traffic, kept if no slower
    groups, mp = traffic(plan(work, best[1]))
    found = topology_finder(work.n, degree, groups, mp, split=split, select=select, seed=int(rng.integers(2**31)))
    topo = to_topology(found, bandwidth, latency)
    t = Estimator(topo, npu, algorithms=DIRECT_ALGORITHMS)(plan(work, best[1]))
    if t <= best[0]:
        best = (t, best[1], topo, found)
    return SearchResult(best[1], best[0], best[2], tuple(trace), best[3], tuple(history))
