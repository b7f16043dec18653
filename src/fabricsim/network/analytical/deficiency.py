"""The Swing paper's deficiencies of a schedule on a network (spec swing.md §3), from the analytical routing.

T = alpha log2(p) Lambda + (n/D) beta Psi Xi: `deficiencies` gives Lambda, Psi and Xi from the
routed steps (`analytical.route.route_schedule`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...ir import Schedule, lane_total
from ...topology.graph import Topology
from . import composed_route, mesh_route  # noqa: F401 - importing them registers their step routers
from .route import RoutedStep, route_schedule


@dataclass(frozen=True)
class Deficiency:
    """The Swing paper's deficiencies of an all-reduce schedule on a network (spec swing.md §3).

    T = alpha log2(p) Lambda + (n/D) beta Psi Xi.

    Parameters
    ----------
    latency : float
        Lambda: lock-step steps / log2 p.
    bandwidth : float
        Psi: sum over steps of the largest message, in units of n/D (n: the vector's bytes).
    congestion : float
        Xi: sum over steps of the busiest link's bytes / sum of the largest messages.
    """

    latency: float  # Lambda: lock-step steps / log2 p
    bandwidth: float  # Psi: sum over steps of the largest message, in units of n/D
    congestion: float  # Xi: sum over steps of the busiest link's bytes / sum of the largest messages


def deficiencies(topo: Topology, schedule: Schedule, dims: int | None = None,
                 routed: list[RoutedStep] | None = None) -> Deficiency:
    """Lambda, Psi and Xi of a schedule on a network, from its routing.

    Psi is what the messages alone cost (one message per link per step), Xi how much more the
    busiest link carries because messages share it.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`.
    dims : int, optional
        D (default: the topology's dimensions larger than 1).
    routed : list of RoutedStep, optional
        `route_schedule(topo, schedule)`, if the caller has it.

    Returns
    -------
    Deficiency
    """
    D = dims or max(1, sum(1 for d in topo.dims if d > 1))
    routed = route_schedule(topo, schedule) if routed is None else routed
    per = np.array([[r.repeat * float(r.frac.max()), r.repeat * float(r.link_frac.max())] if r.frac.size else [0.0, 0.0]
                    for r in routed]).reshape(-1, 2)
    msg_sum = float(lane_total(schedule.steps, per[:, :1])[0]) if len(per) else 0.0
    link_sum = float(lane_total(schedule.steps, per[:, 1:])[0]) if len(per) else 0.0
    return Deficiency(schedule.n_steps / math.log2(schedule.p), msg_sum * D, link_sum / msg_sum if msg_sum else 1.0)
