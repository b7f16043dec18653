"""The endpoint protocol: what running communication costs an NPU, and how fast its endpoint
can drive it. Both training engines call it.

An endpoint policy answers two questions:
- `held(npu)`: the share of the NPU's compute units and memory bandwidth that communication holds
  while a collective (or a p2p or io transfer) of that NPU runs. Compute running at the same time
  gets the rest: `slowed_task_times` is the roofline with the resources left (a compute-bound
  kernel slows by 1/(1-units), a memory-bound one by 1/(1-memory); fixed-duration kernels count as
  compute-bound). Several collectives at once hold the same share (a fixed set of units and
  memory channels is given to communication).
- `injection_rate(npu, schedule)`: the bytes/s each NPU's endpoint can put on its links for that
  collective (inf: the links decide), e.g. an offload engine's capacity. The network models take
  it as a private per-NPU link that the NPU's outgoing traffic crosses.

Policies (`ENDPOINT_POLICIES`, chosen by `system.endpoint.policy` in a training config):
- `npu`: collectives run on the NPU and hold fixed shares (`comm_compute_fraction`,
  `comm_memory_fraction`; both 0 = no interference, the default);
- `ideal`: nothing held, no limit (an upper bound);
- `offload`: an engine beside the NPU runs collectives: nothing held, at most `rate` bytes/s per NPU.
Adding a policy (ACE) is one class with these two methods and one `register_policy` line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator

from ..collectives.schedule import Schedule
from ..errors import ConfigError
from ..units import parse_bandwidth
from .npu import NPU


@dataclass(frozen=True)
class Held:
    """Fractions of an NPU's compute units and memory bandwidth that communication holds.

    Parameters
    ----------
    units : float
        Share of the compute units, in [0, 1).
    memory : float
        Share of the memory bandwidth, in [0, 1).
    """

    units: float = 0.0
    memory: float = 0.0

    def __post_init__(self):
        for name in ("units", "memory"):
            v = getattr(self, name)
            if not 0 <= v < 1:
                raise ConfigError(f"endpoint.{name}", v, "accepted: a fraction in [0, 1)")

    @property
    def any(self) -> bool:
        """Whether anything is held (communication then slows compute)."""
        return self.units > 0 or self.memory > 0


class EndpointModel(Protocol):
    """What every endpoint policy provides (see the module doc).

    Attributes
    ----------
    name : str
        The policy's registered name (`npu`, `ideal`, `offload`).
    """

    name: str

    def held(self, npu: NPU) -> Held:
        """The shares of `npu` that communication holds while it runs.

        Parameters
        ----------
        npu : NPU
            The NPU communication runs on.

        Returns
        -------
        Held
            Fractions of the compute units and of the memory bandwidth.
        """
        ...

    def injection_rate(self, npu: NPU, schedule: Schedule | None) -> float:
        """Bytes/s each NPU's endpoint can inject for `schedule`.

        Parameters
        ----------
        npu : NPU
            The NPU whose endpoint injects.
        schedule : Schedule or None
            The collective's placed schedule (None: a p2p or io transfer).

        Returns
        -------
        float
            Bytes/s (inf: the links decide).
        """
        ...


def slowed_task_times(npu: NPU, duration, flops, mem_bytes, held: Held) -> np.ndarray:
    """Per task: its time while communication holds `held` of the NPU.

    The roofline with the resources left, max(F / (peak eff (1 - units)), M / (mem_bw (1 - memory)));
    a fixed `duration` (not NaN) stretches by 1 / (1 - units).

    Parameters
    ----------
    npu : NPU
        The roofline.
    duration : float array
        Fixed time of each task, s (NaN: use the roofline).
    flops : float array
        FLOPs of each task.
    mem_bytes : float array
        Memory traffic of each task, bytes.
    held : Held
        What communication holds.

    Returns
    -------
    float array
        Seconds per task.
    """
    duration = np.asarray(duration, float)
    roof = np.maximum(np.asarray(flops, float) / (npu.peak_flops * npu.efficiency * (1.0 - held.units)),
                      np.asarray(mem_bytes, float) / (npu.memory_bandwidth * (1.0 - held.memory)))
    return np.where(np.isnan(duration), roof, duration / (1.0 - held.units))


@dataclass(frozen=True)
class Endpoint:
    """Policy `npu`: collectives run on the NPU and hold fixed shares of it while they run.

    Parameters
    ----------
    comm_compute_fraction : float
        Share of the compute units, in [0, 1).
    comm_memory_fraction : float
        Share of the memory bandwidth, in [0, 1).
    """

    comm_compute_fraction: float = 0.0
    comm_memory_fraction: float = 0.0
    name = "npu"

    def __post_init__(self):
        for name in ("comm_compute_fraction", "comm_memory_fraction"):
            v = getattr(self, name)
            if not 0 <= v < 1:
                raise ConfigError(f"endpoint.{name}", v, "accepted: a fraction in [0, 1)")

    @property
    def interferes(self) -> bool:
        """Whether running communication slows compute (either fraction > 0)."""
        return self.comm_compute_fraction > 0 or self.comm_memory_fraction > 0

    def held(self, npu: NPU) -> Held:
        """The shares communication holds on `npu` while it runs.

        Parameters
        ----------
        npu : NPU
            The NPU communication runs on.

        Returns
        -------
        Held
            `comm_compute_fraction` and `comm_memory_fraction`.
        """
        return Held(self.comm_compute_fraction, self.comm_memory_fraction)

    def injection_rate(self, npu: NPU, schedule: Schedule | None) -> float:
        """No limit of its own: the links decide.

        Parameters
        ----------
        npu : NPU
            The NPU whose endpoint injects.
        schedule : Schedule or None
            The collective's placed schedule (None: a p2p or io transfer).

        Returns
        -------
        float
            inf.
        """
        return np.inf


@dataclass(frozen=True)
class Ideal:
    """Policy `ideal`: communication costs the NPU nothing and the links decide its speed."""

    name = "ideal"

    def held(self, npu: NPU) -> Held:
        """Nothing held.

        Parameters
        ----------
        npu : NPU
            The NPU communication runs on.

        Returns
        -------
        Held
            Zero shares.
        """
        return Held()

    def injection_rate(self, npu: NPU, schedule: Schedule | None) -> float:
        """No limit of its own: the links decide.

        Parameters
        ----------
        npu : NPU
            The NPU whose endpoint injects.
        schedule : Schedule or None
            The collective's placed schedule (None: a p2p or io transfer).

        Returns
        -------
        float
            inf.
        """
        return np.inf


@dataclass(frozen=True)
class OffloadEngine:
    """Policy `offload`: an engine at the endpoint runs collectives without the NPU's units or
    memory, at most `rate` bytes/s per NPU (its DMA or processing capacity).

    Parameters
    ----------
    rate : float
        Bytes/s the engine can inject per NPU, > 0.
    """

    rate: float
    name = "offload"

    def __post_init__(self):
        if not (self.rate > 0):
            raise ConfigError("endpoint.rate", self.rate, "accepted: a bandwidth > 0, e.g. 200GB/s")

    def held(self, npu: NPU) -> Held:
        """Nothing held: the engine, not the NPU, runs the collective.

        Parameters
        ----------
        npu : NPU
            The NPU communication runs on.

        Returns
        -------
        Held
            Zero shares.
        """
        return Held()

    def injection_rate(self, npu: NPU, schedule: Schedule | None) -> float:
        """The engine's `rate`, bytes/s per NPU.

        Parameters
        ----------
        npu : NPU
            The NPU whose endpoint injects.
        schedule : Schedule or None
            The collective's placed schedule (None: a p2p or io transfer).

        Returns
        -------
        float
            `rate`, bytes/s.
        """
        return float(self.rate)


class _Fields(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NpuFields(_Fields):
    """Config fields of policy `npu`.

    Parameters
    ----------
    comm_compute_fraction : float
        Share of the NPU's compute units communication holds, in [0, 1).
    comm_memory_fraction : float
        Share of its memory bandwidth communication holds, in [0, 1).
    """

    comm_compute_fraction: float = 0.0
    comm_memory_fraction: float = 0.0


class IdealFields(_Fields):
    """Policy `ideal` has no fields."""


class OffloadFields(_Fields):
    """Config fields of policy `offload`.

    Parameters
    ----------
    rate : float
        Bytes/s the engine can inject per NPU; units accepted (`200GB/s`).
    """

    rate: float

    _rate = field_validator("rate", mode="before")(lambda v: parse_bandwidth(v, "rate"))


@dataclass(frozen=True)
class PolicyEntry:
    """A registered endpoint policy.

    Parameters
    ----------
    name : str
        Registry name (`offload`), the value of `system.endpoint.policy`.
    make : callable
        `make(**fields) -> EndpointModel`.
    fields : pydantic model class
        Its config fields (units accepted where they apply).
    summary : str
        One line for `fabricsim models`.
    """

    name: str
    make: Callable[..., EndpointModel]
    fields: type[BaseModel]
    summary: str


ENDPOINT_POLICIES: dict[str, PolicyEntry] = {}


def register_policy(entry: PolicyEntry) -> PolicyEntry:
    """Add an endpoint policy to the registry.

    Parameters
    ----------
    entry : PolicyEntry
        The policy; a registered name is replaced.

    Returns
    -------
    PolicyEntry
        `entry`.
    """
    ENDPOINT_POLICIES[entry.name] = entry
    return entry


register_policy(PolicyEntry("npu", Endpoint, NpuFields, "collectives run on the NPU, holding comm_compute_fraction "
                                                        "of its units and comm_memory_fraction of its memory bandwidth"))
register_policy(PolicyEntry("ideal", Ideal, IdealFields, "no interference, no endpoint limit"))
register_policy(PolicyEntry("offload", OffloadEngine, OffloadFields,
                            "an engine at the endpoint runs collectives at up to rate bytes/s per NPU, holding nothing"))


def make_endpoint(policy: str = "npu", **params: Any) -> EndpointModel:
    """The endpoint policy `policy`, made from its config fields.

    Parameters
    ----------
    policy : str
        A registered policy: npu, ideal or offload.
    **params
        Its config fields (units accepted: `rate="200GB/s"`).

    Returns
    -------
    EndpointModel
        ConfigError naming the field for an unknown policy, an unknown field or a bad value.

    Examples
    --------
    >>> make_endpoint("offload", rate="200GB/s")
    OffloadEngine(rate=200000000000.0)
    """
    from ..config import validate

    entry = ENDPOINT_POLICIES.get(str(policy))
    if entry is None:
        raise ConfigError("endpoint.policy", policy, f"accepted: {', '.join(ENDPOINT_POLICIES)}")
    fields = validate(entry.fields, dict(params), "endpoint")
    return entry.make(**fields.model_dump())
