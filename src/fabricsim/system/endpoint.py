"""The endpoint protocol: what running communication costs an NPU, and how fast its endpoint can
drive it. Both training engines call it (through `engine.pricing.CommPricer`).

A policy (`system.resources.EndpointModel`) answers, for one collective or transfer and its
`CommDemand` (what it moves through the network and through memory per byte, derived from its
schedule):
- `injection_rate(npu, demand)`: the network bytes/s each member's endpoint can drive (inf: the
  links decide). The network models take it as a private per-NPU link its outgoing traffic crosses.
- `held(npu, demand, pace)`: the shares of the NPU's compute units and memory bandwidth it holds
  while it runs at `pace` bytes of size per second. Compute running meanwhile gets the rest (the
  roofline with the resources left, `system.resources.slowed_task_times`); several communications
  at once hold the larger share of each resource.
- `memory_per_byte(demand)`: memory bytes per byte of size, for reports.

Registered policies (`ENDPOINT_POLICIES`; `system.endpoint.policy` in a training config):

| policy | what | fields |
|---|---|---|
| `ideal` (default) | nothing held, no limit | |
| `npu` | NPU-driven with a fixed split | `units`, `memory` (shares in [0.001, 1)) |
| `comp-opt` | `npu` preset favouring compute | (`units` 0.05, `memory` 0.1) |
| `comm-opt` | `npu` preset favouring communication | (`units` 0.2, `memory` 0.4) |
| `no-overlap` | communication takes the whole NPU, compute waits | |
| `ace` | ACE: DMA once in and out, SRAM to SRAM, own ALUs | `sram`, `alu_throughput`, `dma_bandwidth`, `min_block` |
| `offload` | a generic engine at `rate` bytes/s | `rate` |

The presets' shares are assumptions (the ACE paper's baselines are not in any text we have; see
docs/ace.md and configs/ace.yaml, which uses them). Adding a policy is one file in `system/` (a
frozen dataclass with the three methods and a pydantic model of its fields) and one
`register_policy` line here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import BaseModel

from ..errors import ConfigError
from .ace import ACE, AceFields
from .policies import (Ideal, NcclFields, NcclKernels, NoFields, NoOverlap, NpuDriven, NpuFields, OffloadEngine,
                       OffloadFields)
from .resources import EndpointModel

DEFAULT_POLICY = "ideal"


@dataclass(frozen=True)
class PolicyEntry:
    """A registered endpoint policy.

    Parameters
    ----------
    name : str
        Registry name, the value of `system.endpoint.policy`.
    make : callable
        `make(**fields) -> EndpointModel`.
    fields : pydantic model class
        Its config fields (units accepted where they apply).
    summary : str
        One line for `fabricsim models`.
    preset : dict
        Field values this name sets (a preset of another policy); fields given in a config
        override them.
    """

    name: str
    make: Callable[..., EndpointModel]
    fields: type[BaseModel]
    summary: str
    preset: dict[str, Any] = field(default_factory=dict)


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


register_policy(PolicyEntry("ideal", Ideal, NoFields, "no interference, no endpoint limit: the links decide"))
register_policy(PolicyEntry("npu", NpuDriven, NpuFields,
                            "collectives run on the NPU's cores out of its memory, with a fixed split: units and memory "
                            "(shares) go to communication while it runs; memory bytes per network byte from the schedule"))
# ASSUMPTION (docs/ace.md): the paper's compute- and communication-favouring baselines, whose
# shares no text we have gives. comp-opt leaves compute 95% of the units and 90% of the memory
# bandwidth; comm-opt gives communication 4x the units and 4x the memory of comp-opt.
register_policy(PolicyEntry("comp-opt", NpuDriven, NpuFields, "npu preset favouring compute",
                            preset={"units": 0.05, "memory": 0.1}))
register_policy(PolicyEntry("comm-opt", NpuDriven, NpuFields, "npu preset favouring communication",
                            preset={"units": 0.2, "memory": 0.4}))
register_policy(PolicyEntry("no-overlap", NoOverlap, NoFields,
                            "communication takes the whole NPU (all units, all memory bandwidth); compute waits"))
register_policy(PolicyEntry("ace", ACE, AceFields,
                            "ACE: a DMA reads each byte once into the engine's SRAM, every phase runs SRAM to SRAM on its "
                            "ALUs, one write back; no units; SRAM bounds the chunks in flight"))
register_policy(PolicyEntry("offload", OffloadEngine, OffloadFields,
                            "a generic engine at the endpoint runs collectives at up to rate bytes/s per NPU, holding nothing"))
register_policy(PolicyEntry("nccl", NcclKernels, NcclFields,
                            "NCCL's kernels on a GPU: ctas thread blocks (one SM each) of sms held while a collective "
                            "runs, and the memory bandwidth its schedule moves at its pace; no rate limit of its own"))


def make_endpoint(policy: str = DEFAULT_POLICY, **params: Any) -> EndpointModel:
    """The endpoint policy `policy`, made from its config fields (a preset's values first).

    Parameters
    ----------
    policy : str
        A registered policy (`fabricsim models` lists them).
    **params
        Its config fields (units accepted: `sram="4MiB"`, `rate="200GB/s"`).

    Returns
    -------
    EndpointModel
        ConfigError naming the field for an unknown policy, an unknown field or a bad value.

    Examples
    --------
    >>> make_endpoint("comp-opt")
    NpuDriven(units=0.05, memory=0.1)
    >>> make_endpoint("ace", sram="4MiB", alu_throughput="unlimited", dma_bandwidth="500GB/s")
    ACE(sram=4194304.0, alu_throughput=inf, dma_bandwidth=500000000000.0, min_block=4096.0)
    """
    from ..config import validate

    entry = ENDPOINT_POLICIES.get(str(policy))
    if entry is None:
        raise ConfigError("endpoint.policy", policy, f"accepted: {', '.join(ENDPOINT_POLICIES)}")
    fields = validate(entry.fields, {**entry.preset, **params}, "endpoint")
    return entry.make(**fields.model_dump())


def policy_fields(entry: PolicyEntry) -> str:
    """The fields of a policy as `fabricsim models` prints them (`units=0.05, memory=0.1` for a
    preset, the field names otherwise).

    Parameters
    ----------
    entry : PolicyEntry

    Returns
    -------
    str
    """
    if entry.preset:
        return ", ".join(f"{k}={v}" for k, v in entry.preset.items())
    names = list(entry.fields.model_fields)
    return ", ".join(names) if names else "no fields"
