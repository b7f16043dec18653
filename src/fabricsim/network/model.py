"""Network models behind one interface, found by name.

A network model answers four questions about a topology:
- `collective(topo, schedule, injection=None)`: a placed schedule prepared for pricing, with
  `times(sizes)` (s per size) and `phase_times(size)` (the collective's phases, s); `injection`
  is what each NPU's endpoint can inject for it (bytes/s; an offload engine's capacity);
- `p2p(topo, src, dst, size)`: one transfer alone, s;
- `flows(topo, flows, record_timeline=False)`: a set of flows with start times, priorities and
  dependencies run together (`FlowResult`);
- `shares_links`: whether concurrent traffic shares links in this model, in which case the
  training engine runs a whole workload as one flow simulation instead of pricing each
  collective alone;
- `streams`: whether data may stream through switches (in-network reduction as one pipelined
  stream); a store-and-forward model says no, and a streaming schedule then moves up, then down.

Every entry point (`fabricsim collective`, the training engine's pricer, `fabricsim astra
--model`, traffic files, the reproductions) gets its model from `get_network_model`, so one
question gets one answer. Adding a model is one file with a class that has these methods, and
one `register` line below.

    >>> from fabricsim.network.model import get_network_model
    >>> get_network_model("analytical").name
    'congestion-aware'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

from ..ir import Schedule
from ..errors import ConfigError
from ..topology.graph import Topology
from .analytical import AnalyticalModel
from .flow import FlowResult, Flows
from .flow_model import FlowModel


class CollectiveCost(Protocol):
    """A schedule prepared by a network model: price it at any size."""

    def times(self, sizes) -> np.ndarray:
        """Completion time for each size.

        Parameters
        ----------
        sizes : float or array
            Collective sizes, bytes.

        Returns
        -------
        float array
            Seconds, one per size.
        """
        ...

    def phase_times(self, size: float) -> np.ndarray:
        """Time of each phase of the collective for one size.

        Parameters
        ----------
        size : float
            Collective size, bytes.

        Returns
        -------
        float array
            Seconds, one per phase.
        """
        ...


class NetworkModel(Protocol):
    """What every network model provides (see the module doc).

    Attributes
    ----------
    name : str
        The registered name.
    shares_links : bool
        Concurrent traffic shares links: the training engine then runs a whole workload as one
        flow simulation.
    streams : bool
        Data may stream through switches (a streaming schedule is priced as streams).
    """

    name: str
    shares_links: bool
    streams: bool

    def collective(self, topo: Topology, schedule: Schedule, injection: float | None = None) -> CollectiveCost:
        """A placed `schedule` prepared for pricing.

        Parameters
        ----------
        topo : Topology
            The network.
        schedule : Schedule
            Placed on `topo`.
        injection : float, optional
            Bytes/s each NPU's endpoint can inject for the collective (None: no limit).

        Returns
        -------
        CollectiveCost
        """
        ...

    def p2p(self, topo: Topology, src: int, dst: int, size: float) -> float:
        """Time of one transfer alone.

        Parameters
        ----------
        topo : Topology
            The network.
        src, dst : int
            Topology node ids.
        size : float
            Bytes.

        Returns
        -------
        float
            Seconds.
        """
        ...

    def flows(self, topo: Topology, flows: Flows, record_timeline: bool = False) -> FlowResult:
        """Run `flows` together (start times, priorities, dependencies) to completion.

        Parameters
        ----------
        topo : Topology
            The network.
        flows : Flows
            What to run.
        record_timeline : bool
            Keep per-interval link rates, where the model records them.

        Returns
        -------
        FlowResult
        """
        ...


@dataclass(frozen=True)
class ModelEntry:
    """A registered network model.

    Parameters
    ----------
    name : str
        Registry name (`congestion-aware`).
    make : callable
        `make(**params) -> NetworkModel`.
    summary : str
        One line for `fabricsim models`.
    aliases : tuple of str
        Other names accepted for it.
    """

    name: str
    make: Callable[..., NetworkModel]
    summary: str
    aliases: tuple[str, ...] = ()


NETWORK_MODELS: dict[str, ModelEntry] = {}
_ALIASES: dict[str, str] = {}


def register(entry: ModelEntry) -> ModelEntry:
    """Add a network model (and its aliases) to the registry.

    Parameters
    ----------
    entry : ModelEntry
        The model; a registered name is replaced.

    Returns
    -------
    ModelEntry
        `entry`.
    """
    NETWORK_MODELS[entry.name] = entry
    for a in (entry.name,) + entry.aliases:
        _ALIASES[a] = entry.name
    return entry


register(ModelEntry("congestion-aware", lambda **kw: AnalyticalModel(True, **kw),
                    "lock-step steps; a step lasts as long as its most loaded link needs (+ path latency)",
                    ("analytical", "aware", "analytical-aware")))
register(ModelEntry("congestion-unaware", lambda **kw: AnalyticalModel(False, **kw),
                    "lock-step steps; transfers do not share links (ASTRA-sim's congestion-unaware backend)",
                    ("unaware", "analytical-unaware")))
register(ModelEntry("flow", lambda **kw: FlowModel("pipelined", **kw),
                    "max-min fair flows, dataflow between steps, priorities; concurrent traffic shares links",
                    ("flow-pipelined", "pipelined")))
register(ModelEntry("flow-store-and-forward", lambda **kw: FlowModel("store-and-forward", **kw),
                    "the flow model, each hop after the previous one (ASTRA-sim's congestion-aware backend, fair)",
                    ("store-and-forward", "flow-saf")))


def canonical_model_name(name: str) -> str:
    """The registered name of a model name or alias.

    Parameters
    ----------
    name : str
        A name or alias, any case, `_` or `-`.

    Returns
    -------
    str
        The registry name; ConfigError listing the accepted names if none.
    """
    key = str(name).strip().lower().replace("_", "-")
    if key not in _ALIASES:
        accepted = ", ".join(f"{e.name} ({', '.join(e.aliases)})" if e.aliases else e.name
                             for e in NETWORK_MODELS.values())
        raise ConfigError("model", name, f"accepted: {accepted}")
    return _ALIASES[key]


def get_network_model(name: str | NetworkModel, **params: Any) -> NetworkModel:
    """The network model registered under `name` (or an alias), made with `params`.

    Parameters
    ----------
    name : str or NetworkModel
        `congestion-aware` (= analytical), `congestion-unaware`, `flow`, `flow-store-and-forward`,
        or a model object (returned as it is).
    **params
        Model parameters: `step_overhead` (s per lock-step step) for the analytical models,
        `chunk` (bytes of pipeline fill) for the flow models.

    Returns
    -------
    NetworkModel
    """
    if not isinstance(name, str):
        return name
    entry = NETWORK_MODELS[canonical_model_name(name)]
    try:
        return entry.make(**params)
    except TypeError:
        raise ConfigError("model parameters", ", ".join(params), f"not accepted by the {entry.name} model") from None


def time_collective(topo: Topology, schedule: Schedule, sizes, model: str | NetworkModel = "congestion-aware",
                    **params: Any) -> np.ndarray:
    """Completion time of a placed `schedule` alone for every size, on `model` (s).

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo` (`collectives.api.build_schedule`).
    sizes : float or array
        Collective sizes, bytes (nccl-tests' convention).
    model : str or NetworkModel
        A registered model name (see `get_network_model`).
    **params
        Model parameters.

    Returns
    -------
    array
        Seconds, one per size.

    Examples
    --------
    >>> from fabricsim.topology import parse_topology
    >>> from fabricsim.collectives.api import build_schedule
    >>> topo = parse_topology("switch:8,reduce", "400GB/s", "0ns")
    >>> s = build_schedule(topo, "all-reduce", "in_network")
    >>> float(time_collective(topo, s, 2**30)[0]) == 2**30 / 400e9   # streams: size / bandwidth
    True
    """
    return get_network_model(model, **params).collective(topo, schedule).times(sizes)
