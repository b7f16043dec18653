"""Analytical network model: a schedule's time on a topology, step by step (the public names, gathered).

Each step's transfers are routed onto links; the link loads, path latencies and bandwidths price
the step for any size, under two models: congestion-aware (a step lasts as long as its most loaded
link needs, plus its longest path latency) and congestion-unaware (as ASTRA-sim's analytical
backend: every transfer alone on its path). Steps run one after another (lock-step); a streaming
schedule runs as serial flows. The model is split by role, and this module imports every part
(importing it registers the step routers) and re-exports their public names:

- `analytical.route`: the core: `RoutedStep`, `route_step` (dispatching on the step's form
  through the registry of step routers: `register_step_router`, `STEP_ROUTERS`), `route_schedule`,
  the hop-list route (`hop_paths`);
- `analytical.straight`: the straight-path route of rings, tori and meshes (`straight_dims`,
  `route_straight`, `equal_sums`, `path_lat_bw`), bit-identical to the hop list;
- `analytical.mesh_route`, `analytical.composed_route`: the step routers of the stated forms (meshes, full or
  along a grid's lines, from per-dimension counts; composed steps from their parts), registered on import;
- `analytical.timing`: pricing (`step_times`, `phases_of`, `AnalyticalCollective`,
  `CollectiveTiming`, `time_schedule`, `normalize_model`);
- `analytical.model`: `AnalyticalModel`, the models behind the network-model interface
  (`network.model`);
- `analytical.deficiency`: the Swing paper's deficiencies (`deficiencies`, `Deficiency`).

Examples
--------
>>> import math
>>> from fabricsim.topology import parse_topology
>>> from fabricsim.collectives.api import build_schedule
>>> topo = parse_topology("torus:4x4", "100GB/s", "0ns")
>>> s = build_schedule(topo, "all-to-all", "direct")   # one full mesh, stated: routed by its counts
>>> [st.form for st in s.steps], STEP_ROUTERS["mesh"].route.__name__
(['mesh'], 'route_mesh')
>>> t = time_schedule(topo, s, 2**20)
>>> math.isclose(t.times[0], t.link_bytes(2**20).max() / 100e9)   # the busiest link's bytes over its bandwidth
True
"""

from __future__ import annotations

from . import composed_route, mesh_route  # noqa: F401 - importing them registers their step routers
from .deficiency import Deficiency, deficiencies
from .model import AnalyticalModel
from .route import STEP_ROUTERS, RoutedStep, StepRouter, hop_paths, register_step_router, route_schedule, route_step
from .straight import equal_sums, path_lat_bw, route_straight, straight_dims
from .timing import (
    MODEL_ALIASES, MODELS, AnalyticalCollective, CollectiveTiming, normalize_model, phases_of, step_times,
    time_schedule,
)

__all__ = ["MODELS", "MODEL_ALIASES", "STEP_ROUTERS", "AnalyticalCollective", "AnalyticalModel", "CollectiveTiming",
           "Deficiency", "RoutedStep", "StepRouter", "deficiencies", "equal_sums", "hop_paths", "normalize_model",
           "path_lat_bw", "phases_of", "register_step_router", "route_schedule", "route_step", "route_straight",
           "step_times", "straight_dims", "time_schedule"]
