"""The sections of a training config that describe the machine: `network:` and `system:` (`npu`,
`endpoint`, `scheduling`), as pydantic models that validate at load time and build their domain
objects (`NetworkSection.build_topology`, `SystemSection.build`). `fabricsim.train` composes them
with the workload into a `TrainConfig`; the studies (`configs/ace.yaml`) write their systems,
NPUs and endpoints as the same sections, so a study's point is a training config."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationInfo, field_validator,
                      model_validator)

from .collectives.algorithm import AlgorithmChoice
from .config import check_link_values, check_topology_value
from .engine.pricing import normalize_algorithms
from .errors import ConfigError
from .limits import check_limit
from .network.model import canonical_model_name
from .system.endpoint import DEFAULT_POLICY, make_endpoint
from .system.model import System
from .system.npu import NPU
from .system.resources import EndpointModel
from .system.scheduling import Scheduling
from .topology.graph import Topology
from .topology.spec import DEFAULT_BANDWIDTH, DEFAULT_LATENCY
from .units import parse_bandwidth, parse_flops, parse_size, parse_time
from .vocab import CATEGORIES, Category


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")  # a number written as text


class NetworkSection(_Strict):
    """`network:` the topology, its link parameters, the network model and the algorithm of each collective.

    Parameters
    ----------
    topology : str or dict
        A topology spec string (`torus:8x8`, see `fabricsim topologies`) or a mapping
        (`{family: torus, dims: [8, 8]}`).
    bandwidth : str, float or list
        Link bandwidth per direction, one value or one per dimension: `400Gbps` (in a file the
        unit is required, as on the command line; a Python float is bytes/s).
    latency : str, float or list
        Link latency, one value or one per dimension: `100ns` (in a file the unit is required,
        0 excepted; a Python float is s).
    model : str
        A network model name or alias (`fabricsim models`), stored canonical.
    algorithms : dict
        collective -> `NAME[,KEY=VALUE...]`, stored canonical (defaults: ring; direct for
        all-to-all).
    """

    topology: str | dict[str, Any]  # a spec string, or {family: torus, dims: [8, 8], ...}
    bandwidth: Any = DEFAULT_BANDWIDTH
    latency: Any = DEFAULT_LATENCY
    model: str = "congestion-aware"
    algorithms: dict[str, str] = Field(default_factory=dict)

    _model = field_validator("model")(lambda v: canonical_model_name(v))
    _topology = field_validator("topology", mode="before")(check_topology_value)
    _bandwidth = field_validator("bandwidth")(lambda v: check_link_values(v, parse_bandwidth, "bandwidth"))
    _latency = field_validator("latency")(lambda v: check_link_values(v, parse_time, "latency"))

    @field_validator("algorithms")
    @classmethod
    def _algs(cls, v):
        return _typed_algorithms(v)

    def build_topology(self) -> Topology:
        """The topology this section names.

        Returns
        -------
        Topology
        """
        from .topology.spec import topology_from_config

        return topology_from_config(self.topology, self.bandwidth, self.latency)

    def choices(self) -> dict[str, AlgorithmChoice]:
        """Every collective -> its algorithm with typed options.

        Returns
        -------
        dict
            Canonical collective name -> AlgorithmChoice (defaults filled in).
        """
        return normalize_algorithms(self.algorithms)


def _typed_algorithms(v: dict) -> dict[str, str]:
    """The section's algorithms, each written back in canonical form (`ring,bidirectional=false`)."""
    from .vocab import normalize_collective

    typed = normalize_algorithms(v)
    return {k: str(typed[normalize_collective(k)]) for k in v}


class NpuSection(_Strict):
    """`system.npu:` the roofline (`system.NPU`, which checks the values).

    Parameters
    ----------
    peak : float
        Peak compute rate, FLOP/s (`989TFLOP/s`; in a file the unit is required).
    memory_bandwidth : float
        Memory bandwidth, bytes/s (`3.35TB/s`; in a file the unit is required).
    efficiency : float
        Fraction of peak that compute-bound kernels reach, in (0, 1].
    unit_bandwidth : float
        Memory bytes/s all compute units together move running communication kernels (units
        accepted: `4TB/s`; `unlimited`, the default: the units never limit NPU-driven communication).
    gpu : str, optional
        A GPU preset (`system.gpus.GPUS`: a100, a100-40gb, h100) that sets `peak`,
        `memory_bandwidth` and `memory` from its datasheet (so they are not given beside it) and
        prices transformer kernels by shape (`compute: kernels`).
    compute : str
        `kernels` (with `gpu`: matmuls with tile and wave quantization, memory-bound kernels from
        their bytes) or `roofline` (every task max(F / (peak x efficiency), M / memory_bandwidth)).
    memory : float, optional
        Device memory, bytes (`80GB`); the memory model checks each pipeline stage against it.
    memory_check : str
        What a stage over `memory` does: `error` (the run is refused, one line), `warn`, `ignore`.
    """

    peak: StrictFloat = 1e15
    memory_bandwidth: StrictFloat = 3e12
    efficiency: StrictFloat = 1.0  # not true/false or text: a number
    unit_bandwidth: StrictFloat = float("inf")
    gpu: str | None = None
    compute: Literal["kernels", "roofline"] | None = None
    memory: StrictFloat | None = None
    memory_check: Literal["error", "warn", "ignore"] = "error"

    _peak = field_validator("peak", mode="before")(lambda v: parse_flops(v, "peak"))
    _bw = field_validator("memory_bandwidth", mode="before")(lambda v: parse_bandwidth(v, "memory_bandwidth"))
    _ubw = field_validator("unit_bandwidth", mode="before")(
        lambda v: float("inf") if str(v).strip().lower() in ("unlimited", "inf") else parse_bandwidth(v, "unit_bandwidth"))
    _mem = field_validator("memory", mode="before")(lambda v: None if v is None else parse_size(v, "memory"))
    _built = model_validator(mode="after")(lambda self: self.build() and self)

    @field_validator("gpu")
    @classmethod
    def _gpu(cls, v):
        from .system.gpus import get_gpu

        if v is not None:
            get_gpu(v)  # ConfigError listing the presets
        return v

    @model_validator(mode="after")
    def _one_source(self):
        if self.gpu is not None:
            for f in ("peak", "memory_bandwidth", "memory"):
                if f in self.model_fields_set:
                    raise ConfigError(f, getattr(self, f), f"set by gpu: {self.gpu} (its datasheet); accepted: "
                                                           f"one of gpu or {f}")
        elif self.compute == "kernels":
            raise ConfigError("compute", "kernels", "needs a gpu preset (gpu: a100, h100); accepted: roofline")
        return self

    def build(self) -> NPU:
        """The `system.NPU` of this section.

        Returns
        -------
        NPU
            Peak FLOP/s, memory bytes/s, efficiency; with `gpu`, the preset's figures, its compute
            model (unless `compute: roofline`) and its memory capacity.
        """
        if self.gpu is None:
            return NPU(self.peak, self.memory_bandwidth, self.efficiency, self.unit_bandwidth,
                       memory_capacity=float("inf") if self.memory is None else self.memory)
        from .system.gpus import get_gpu

        gpu = get_gpu(self.gpu)
        return NPU(gpu.peak_flops, gpu.memory_bandwidth, self.efficiency, self.unit_bandwidth,
                   compute=None if self.compute == "roofline" else gpu, memory_capacity=gpu.memory_capacity)


class EndpointSection(BaseModel):
    """`system.endpoint:` an endpoint policy and its fields (default `ideal`: no interference).

    Parameters
    ----------
    policy : str
        A policy of `system.endpoint.ENDPOINT_POLICIES` (`fabricsim models`): ideal, npu,
        comp-opt, comm-opt, no-overlap, ace, offload.
    **fields
        The policy's config fields (npu: `units`, `memory`, shares in [0.001, 1); ace: `sram`,
        `alu_throughput`, `dma_bandwidth`, `min_block`, with units; offload: `rate`).
    """

    model_config = ConfigDict(extra="allow")
    policy: str = DEFAULT_POLICY

    _built = model_validator(mode="after")(lambda self: self.build() and self)

    @model_validator(mode="before")
    @classmethod
    def _plain_values(cls, data, info: ValidationInfo):
        # the policies' fields are numbers or values with units, which pydantic would make of true or
        # of '0.2' in quotes; quoted numbers only in files, as `--endpoint` gives every value as text
        if isinstance(data, dict):
            for k, v in data.items():
                quoted = (info.context or {}).get("from_file") and isinstance(v, str) and _NUMBER.fullmatch(v.strip())
                if k != "policy" and (isinstance(v, bool) or quoted):
                    raise ConfigError(k, v, "accepted: a number, or a value with its unit (4MiB, 200GB/s)")
        return data

    def build(self) -> EndpointModel:
        """The endpoint policy this section names, made from its other fields.

        Returns
        -------
        EndpointModel
        """
        return make_endpoint(self.policy, **(self.model_extra or {}))


def parse_endpoint(text: str, field: str = "system.endpoint") -> dict:
    """A `system.endpoint` mapping from `POLICY[,FIELD=VALUE...]` (the command line's form).

    Parameters
    ----------
    text : str
        e.g. `comm-opt`, `npu,units=0.1,memory=0.3`, `ace,sram=4MiB,alu_throughput=1TB/s,dma_bandwidth=500GB/s`.
    field : str
        The field named in errors.

    Returns
    -------
    dict
        `{"policy": POLICY, FIELD: VALUE, ...}` (values as written; the policy's fields model
        reads their units); ConfigError for an item without `=`.

    Examples
    --------
    >>> parse_endpoint("npu,units=0.1,memory=0.3")
    {'policy': 'npu', 'units': '0.1', 'memory': '0.3'}
    """
    name, *items = [x.strip() for x in str(text).split(",")]
    out: dict = {"policy": name}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(field, item, "accepted: POLICY[,FIELD=VALUE...], e.g. npu,units=0.1,memory=0.3")
        if key.strip() in out:  # the last would win in silence
            raise ConfigError(field, item, f"field {key.strip()!r} is given twice; accepted: each field once")
        out[key.strip()] = value.strip()
    return out


class SchedulingSection(_Strict):
    """`system.scheduling:` streams, priorities and chunks (`system.Scheduling`).

    Parameters
    ----------
    policy : {"LIFO", "FIFO"}
        Among ready collectives of the same category, the newest or the oldest goes first.
    priorities : list of str
        Distinct communication categories (MP, CP, EP, PP, DP, IO, other), highest priority first; a
        non-empty list (those left out follow in the default order).
    chunks : int
        Chunks a collective is split into, >= 1 (at most the `chunks` limit).
    chunks_in_flight : int
        Chunks per wave, >= 1.
    comm_streams : {"one", "per-category"}
        One collective in flight per NPU, or one stream per category.
    """

    policy: Literal["LIFO", "FIFO"] = "LIFO"
    priorities: list[Category] = Field(default_factory=lambda: list(CATEGORIES))
    chunks: StrictInt = Field(default=1, ge=1)
    chunks_in_flight: StrictInt = Field(default=1, ge=1)
    comm_streams: Literal["one", "per-category"] = "one"

    @field_validator("priorities", mode="before")
    @classmethod
    def _priorities(cls, v):
        if not isinstance(v, (list, tuple)) or not v or len(set(map(str, v))) != len(v):
            raise ConfigError("priorities", v, f"accepted: a non-empty list of distinct categories from "
                                               f"{', '.join(CATEGORIES)}, highest first")
        return list(v)

    @field_validator("chunks")
    @classmethod
    def _chunks(cls, v):
        check_limit("chunks", v, "chunks per collective", "chunks", v)
        return v

    _built = model_validator(mode="after")(lambda self: self.build() and self)

    def build(self) -> Scheduling:
        """The `system.Scheduling` of this section.

        Returns
        -------
        Scheduling
        """
        return Scheduling(self.policy, tuple(self.priorities), self.chunks, self.chunks_in_flight, self.comm_streams)


class SystemSection(_Strict):
    """`system:` the NPU, its endpoint policy and collective scheduling.

    Parameters
    ----------
    npu : NpuSection
        The roofline.
    endpoint : EndpointSection
        What communication costs the NPU.
    scheduling : SchedulingSection
        How collectives are scheduled on it.
    """

    npu: NpuSection = Field(default_factory=NpuSection)
    endpoint: EndpointSection = Field(default_factory=EndpointSection)
    scheduling: SchedulingSection = Field(default_factory=SchedulingSection)

    def build(self) -> System:
        """The `system.System`: NPU, endpoint policy and scheduling.

        Returns
        -------
        System
        """
        return System(self.npu.build(), self.endpoint.build(), self.scheduling.build())
