"""The ACE reproduction's config (`configs/ace.yaml`): the NPU, the systems, the endpoint policies
and the workloads, each section written exactly as the matching section of a training config
(`fabricsim.train`: `system.npu`, `network`, `system.endpoint`, `system.scheduling`) and validated
by the same models, so a point of this study is a training config any user can run with
`fabricsim train`. Loaded through `fabricsim.config.load_yaml` (one-line errors naming the field)."""

from __future__ import annotations

from pathlib import Path
from pydantic import BaseModel, ConfigDict, Field

from ...config import load_yaml
from ...errors import ConfigError
from ...sections import EndpointSection, NetworkSection, NpuSection, SchedulingSection

DEFAULT_OUT = Path("out") / "ace"


class _Strict(BaseModel):
    """A section: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


class PaperSpeedup(_Strict):
    """The paper's iteration-time speedup of ACE over the best baseline for one workload: the
    average over network sizes and its maximum."""

    mean: float = Field(gt=0)
    max: float = Field(gt=0)


class Workload(_Strict):
    """One workload: zoo model, samples per NPU, gradient element type, strategy and the paper's
    speedups.

    Parameters
    ----------
    model : str
        A zoo model (`fabricsim train` names).
    batch_per_npu : int
        Samples per NPU per iteration (the global batch is this x NPUs).
    grad_dtype : str, optional
        Element type of the gradients all-reduced (default: the model's).
    paper : PaperSpeedup

    Data parallel over every NPU; DLRM is hybrid by construction (`workload.parallelism`: its
    embedding tables sharded over all NPUs and exchanged with an all-to-all, its MLPs data parallel).
    """

    model: str
    batch_per_npu: int = Field(ge=1)
    grad_dtype: str | None = None
    paper: PaperSpeedup


class Paper(_Strict):
    """The paper's headline figures besides the speedups (abstract [V])."""

    memory_bandwidth_reduction: float = Field(gt=0)
    utilization_gain_mean: float = Field(gt=0)
    utilization_gain_max: float = Field(gt=0)


class Sensitivity(_Strict):
    """The "pernicious balance": one workload on one system with NPU-driven communication given
    each (units, memory) share of the grid."""

    workload: str
    system: str
    units: list[float]
    memory: list[float]


class BatchSensitivity(_Strict):
    """One workload's samples per NPU scaled: ACE's speedup over the best baseline at each scale,
    on every system run (what an unknown batch and sequence length are worth).

    Parameters
    ----------
    workload : str
        A key of the config's workloads.
    scales : list of float
        Factors on its `batch_per_npu` (> 0; 1, the study's own runs, is always included).
    """

    workload: str
    scales: list[float]


class Quick(_Strict):
    """The CI subset: systems and the sensitivity grid's size."""

    systems: list[str]
    iterations: int = Field(default=2, ge=1)
    sensitivity_points: int = Field(default=2, ge=1)


class AceConfig(_Strict):
    """The whole reproduction config (configs/ace.yaml; module doc)."""

    name: str
    npu: NpuSection
    scheduling: SchedulingSection
    network_model: str = "congestion-aware"
    iterations: int = Field(default=3, ge=1)
    systems: dict[str, NetworkSection]
    policies: dict[str, EndpointSection]
    baselines: list[str]
    ace: str = "ACE"
    workloads: dict[str, Workload]
    paper: Paper
    sensitivity: Sensitivity
    batch_sensitivity: BatchSensitivity | None = None
    quick: Quick


def load_config(path: str | Path | None = None) -> AceConfig:
    """Read and check the reproduction config.

    Parameters
    ----------
    path : str or Path, optional
        The YAML file (default configs/ace.yaml).

    Returns
    -------
    AceConfig
        A one-line ConfigError (file, field, value, what is accepted) for bad input, including
        names that refer to no policy, system or workload.
    """
    from ..base import shipped_config

    path = path or shipped_config("ace.yaml", "an ACE reproduction config")
    cfg = load_yaml(AceConfig, path, "npu, systems, policies, workloads")

    def known(field: str, names, pool) -> None:
        for name in names:
            if name not in pool:
                raise ConfigError(f"{path}: {field}", name, f"accepted: {', '.join(pool)}")

    for name, net in cfg.systems.items():  # every system is built now: bad links fail at load time
        try:
            net.build_topology()
        except ConfigError as e:
            raise ConfigError(f"{path}: systems.{name}.{str(e.field).split(': ')[-1]}", e.value, e.accepted) from None
    known("baselines", cfg.baselines, cfg.policies)
    known("ace", [cfg.ace], cfg.policies)
    known("quick.systems", cfg.quick.systems, cfg.systems)
    known("sensitivity.workload", [cfg.sensitivity.workload], cfg.workloads)
    known("sensitivity.system", [cfg.sensitivity.system], cfg.systems)
    for key in ("units", "memory"):
        for v in getattr(cfg.sensitivity, key):
            if not 0 < v < 1:
                raise ConfigError(f"{path}: sensitivity.{key}", v, "accepted: shares in (0, 1)")
    if cfg.batch_sensitivity is not None:
        known("batch_sensitivity.workload", [cfg.batch_sensitivity.workload], cfg.workloads)
        for v in cfg.batch_sensitivity.scales:
            if not v > 0:
                raise ConfigError(f"{path}: batch_sensitivity.scales", v, "accepted: factors > 0")
    return cfg


def scaled_batch(cfg: AceConfig, workload: str, scale: float) -> int:
    """Samples per NPU of a workload scaled by `scale`, rounded, at least 1.

    Parameters
    ----------
    cfg : AceConfig
    workload : str
    scale : float

    Returns
    -------
    int
    """
    return max(1, round(cfg.workloads[workload].batch_per_npu * scale))


def train_config(cfg: AceConfig, workload: str, system: str, endpoint: dict, iterations: int,
                 batch_per_npu: int | None = None):
    """The training config of one workload on one system with one endpoint policy.

    Parameters
    ----------
    cfg : AceConfig
    workload, system : str
        Keys of `cfg.workloads` and `cfg.systems`.
    endpoint : dict
        A `system.endpoint` mapping (`policy` and its fields).
    iterations : int
    batch_per_npu : int, optional
        Samples per NPU (default: the workload's `batch_per_npu`).

    Returns
    -------
    TrainConfig
        Data parallel over every NPU (DLRM: hybrid), LIFO scheduling and chunks as configured.
    """
    from ...train import TrainConfig

    w, net = cfg.workloads[workload], cfg.systems[system]
    topo = net.build_topology()
    n = topo.n_npus
    workload_section = {"model": w.model, "batch": (batch_per_npu or w.batch_per_npu) * n, "iterations": iterations,
                        "parallelism": {"dp": n}}
    if w.grad_dtype:
        workload_section["grad_dtype"] = w.grad_dtype
    data = {
        "name": f"{workload} on {system}, endpoint {endpoint.get('policy')}",
        "network": {**net.model_dump(), "model": cfg.network_model},
        "system": {"npu": cfg.npu.model_dump(), "endpoint": endpoint, "scheduling": cfg.scheduling.model_dump()},
        "workload": workload_section,
    }
    return TrainConfig.model_validate(data)


def endpoint_of(cfg: AceConfig, policy: str) -> dict:
    """The `system.endpoint` mapping of a policy of the config.

    Parameters
    ----------
    cfg : AceConfig
    policy : str
        A key of `cfg.policies`.

    Returns
    -------
    dict
    """
    sec = cfg.policies[policy]
    return {"policy": sec.policy, **(sec.model_extra or {})}
