"""Analytical network model: a schedule's time on a topology, step by step.

Each step's transfers are routed onto links; a sparse links x transfers incidence matrix turns
transfer sizes into link loads with one matrix-vector product. Two models:

- congestion-aware: a step lasts as long as its most loaded link needs (load / bandwidth),
  plus the longest path latency among its transfers (sum of link latencies on the path);
- congestion-unaware (as ASTRA-sim's analytical backend): transfers do not share; each takes
  its path latency plus bytes / (slowest link bandwidth on its path); the step lasts as long
  as its slowest transfer.

Steps run one after another (lock-step). A repeated `Step` is routed and costed once: its
repetitions have identical sources, destinations and sizes. Costs are linear in the message
size, so one routing pass prices every size of a sweep.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..collectives.schedule import Schedule, Step, lane_total
from ..topology.graph import Topology

MODELS = ("congestion-aware", "congestion-unaware")
MODEL_ALIASES = {"analytical": "congestion-aware", "aware": "congestion-aware", "unaware": "congestion-unaware",
                 "analytical-unaware": "congestion-unaware"}


def normalize_model(name: str) -> str:
    """`analytical` means the congestion-aware analytical model."""
    key = str(name).strip().lower().replace("_", "-")
    key = MODEL_ALIASES.get(key, key)
    if key not in MODELS:
        from ..errors import ConfigError

        raise ConfigError("model", name, f"accepted: {', '.join(MODELS)} (analytical = congestion-aware)")
    return key


@dataclass(frozen=True, eq=False)
class RoutedStep:
    """One step shape on a topology."""

    repeat: int
    incidence: sp.csr_matrix  # links x transfers, 1 where the transfer crosses the link
    frac: np.ndarray  # transfer size / collective size
    path_latency: np.ndarray  # s, per transfer
    path_bw: np.ndarray  # bytes/s, slowest link on each transfer's path (inf: no hop)

    @property
    def link_frac(self) -> np.ndarray:
        """Bytes on each link per byte of collective size."""
        return self.incidence @ self.frac


def route_step(topo: Topology, schedule: Schedule, step: Step) -> RoutedStep:
    nodes = schedule.topology_nodes()
    src, dst = nodes[step.src], nodes[step.dst]
    ptr, links = topo.route(src, dst)
    n_t = len(src)
    hops = np.diff(ptr)
    tid = np.repeat(np.arange(n_t), hops)
    inc = sp.csr_matrix((np.ones(len(links)), (links, tid)), shape=(topo.n_links, n_t))
    lat = np.bincount(tid, weights=topo.link_lat[links], minlength=n_t)
    bw = np.full(n_t, np.inf)
    if len(links):
        np.minimum.at(bw, tid, topo.link_bw[links])
    return RoutedStep(step.repeat, inc, schedule.transfer_fraction(step), lat, bw)


def route_schedule(topo: Topology, schedule: Schedule) -> list[RoutedStep]:
    if schedule.nodes is None and schedule.n_nodes > topo.n_npus:
        raise ValueError("schedule with helper nodes must be placed on the topology first")
    return [route_step(topo, schedule, st) for st in schedule.steps]


def step_times(topo: Topology, routed: RoutedStep, sizes: np.ndarray, model: str) -> np.ndarray:
    """Time of one repetition of a step for each size."""
    sizes = np.asarray(sizes, dtype=float)
    if routed.frac.size == 0:
        return np.zeros_like(sizes)
    if model == "congestion-aware":
        per_byte = float(np.max(routed.link_frac / topo.link_bw)) if topo.n_links else 0.0
        lat = float(routed.path_latency.max())
        return lat + per_byte * sizes
    if model == "congestion-unaware":
        per_byte = np.where(np.isfinite(routed.path_bw), routed.frac / routed.path_bw, 0.0)
        # the upper envelope of lat + per_byte*size only needs the distinct pairs
        pairs = np.unique(np.stack([routed.path_latency, per_byte], axis=1), axis=0)
        return np.max(pairs[:, 0][:, None] + pairs[:, 1][:, None] * sizes[None, :], axis=0)
    raise ValueError(f"unknown model {model!r}; accepted: {', '.join(MODELS)}")


@dataclass(frozen=True, eq=False)
class CollectiveTiming:
    """Times of one schedule for several sizes."""

    schedule: Schedule
    model: str
    sizes: np.ndarray  # bytes
    times: np.ndarray  # s
    step_time: np.ndarray  # [n_step_shapes, n_sizes] time of one repetition
    repeats: np.ndarray  # [n_step_shapes]
    link_frac: np.ndarray  # [n_links] bytes carried per byte of size, whole collective

    def link_bytes(self, size: float) -> np.ndarray:
        return self.link_frac * size


def time_schedule(topo: Topology, schedule: Schedule, sizes, model: str = "congestion-aware",
                  step_overhead: float = 0.0) -> CollectiveTiming:
    """Time `schedule` on `topo` for every size. `step_overhead` (s) is a fixed cost per
    lock-step step (the alpha of an alpha-beta model: software and NIC start-up)."""
    model = normalize_model(model)
    sizes = np.atleast_1d(np.asarray(sizes, dtype=float))
    routed = route_schedule(topo, schedule)
    if routed:
        per_step = np.stack([step_times(topo, r, sizes, model) + step_overhead for r in routed])
        repeats = np.array([r.repeat for r in routed])
        link_frac = sum(r.link_frac * r.repeat for r in routed)
    else:
        per_step = np.zeros((0, len(sizes)))
        repeats = np.zeros(0, dtype=int)
        link_frac = np.zeros(topo.n_links)
    times = lane_total(schedule.steps, per_step * repeats[:, None])
    return CollectiveTiming(schedule, model, sizes, times, per_step, repeats, np.asarray(link_frac, dtype=float))



@dataclass(frozen=True)
class Deficiency:
    """The Swing paper's deficiencies of an all-reduce schedule on a network (spec swing.md §3):
    T = alpha log2(p) Lambda + (n/D) beta Psi Xi."""

    latency: float  # Lambda: lock-step steps / log2 p
    bandwidth: float  # Psi: sum over steps of the largest message, in units of n/D
    congestion: float  # Xi: sum over steps of the busiest link's bytes / sum of the largest messages


def deficiencies(topo: Topology, schedule: Schedule, dims: int | None = None,
                 routed: list[RoutedStep] | None = None) -> Deficiency:
    """Lambda, Psi and Xi from the schedule and its routing (`routed`, if the caller has it).
    Psi is what the messages alone cost (one message per link per step), Xi how much more the
    busiest link carries because messages share it. `dims` is D (default: the topology's
    dimensions larger than 1)."""
    D = dims or max(1, sum(1 for d in topo.dims if d > 1))
    routed = route_schedule(topo, schedule) if routed is None else routed
    per = np.array([[r.repeat * float(r.frac.max()), r.repeat * float(r.link_frac.max())] if r.frac.size else [0.0, 0.0]
                    for r in routed]).reshape(-1, 2)
    msg_sum = float(lane_total(schedule.steps, per[:, :1])[0]) if len(per) else 0.0
    link_sum = float(lane_total(schedule.steps, per[:, 1:])[0]) if len(per) else 0.0
    return Deficiency(schedule.n_steps / math.log2(schedule.p), msg_sum * D, link_sum / msg_sum if msg_sum else 1.0)
