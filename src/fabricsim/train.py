"""`fabricsim train CONFIG.yaml`: one config names the network, the system, the workload and
the strategy; this module validates it and runs it.

```yaml
name: GPT-3 175B, MP(8)-DP(16)-PP(8)
network:
  topology: torus:8x8x16          # any topology spec of `fabricsim topologies`
  bandwidth: 400GB/s              # per link and direction; one value or one per dimension
  latency: 100ns
  model: analytical               # congestion-aware (= analytical), congestion-unaware, flow, flow-store-and-forward
  algorithms: {all-reduce: ring}  # per collective, NAME[,KEY=VALUE...] (default auto: NCCL's choice per size on a GPU cluster; ring, direct for all-to-all, elsewhere)
system:
  npu: {peak: 989TFLOP/s, memory_bandwidth: 3.35TB/s, efficiency: 0.5, unit_bandwidth: unlimited}
  endpoint: {policy: ideal}       # or {policy: npu, units: 0.1, memory: 0.3}, {policy: comp-opt},
                                  # {policy: comm-opt}, {policy: no-overlap},
                                  # {policy: ace, sram: 4MiB, alu_throughput: 1TB/s, dma_bandwidth: 500GB/s}
  scheduling: {policy: LIFO, priorities: [MP, PP, DP, IO, other], chunks: 1, chunks_in_flight: 1,
               comm_streams: one}
workload:
  model: gpt3-175b                # zoo: workload.models.MODELS (resnet50, gpt3-175b, dlrm, vgg16, ...)
  dtype: fp16
  batch: 1024                     # global minibatch (samples / sequences)
  iterations: 1
  parallelism: {mp: 8, dp: 16, pp: 8, microbatches: 8, schedule: 1f1b, zero: 0, dp_bucket: 0,
                placement: [mp, pp, dp], weight_streaming: false}
  input_loading: false            # inputs through the topology's I/O controllers (wafer:, fred:)
  # or instead of model: astra_text: path/to/Resnet50_DataParallel.txt  (compute in ns; mp: N for hybrids)
  # or: chakra: path/to/prefix    (rank r reads prefix.r.et; comm_groups: groups.json for pg_name)
output:
  dir: out/gpt3                   # summary.json, breakdown.csv, layers.csv, trace.json, breakdown.png
  trace: true
  trace_npus: 0-63                # NPUs in the Perfetto trace (default: the first 64)
  trace_format: json              # or json.gz (gzip-compressed trace.json.gz)
  plot: true
```
Paths in the file are relative to the file. Every field is checked when the file is loaded,
and each section builds its domain object (`NetworkSection.build`, `SystemSection.build`); an
error names the file and the field (`t.yaml: network.latency: ...`), also one found while the
topology or the workload graph is built. Numbers are not coerced (`iterations: '2'`, `1.5` or
`true` are refused), bandwidths, times and compute rates need their units as on the command line,
and fields that do not apply to the workload (`mp` beside a zoo model) are refused. Iterations,
chunks and the tasks of the graph (estimated before it is built) are bounded by `fabricsim.limits`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, StrictBool, StrictInt, ValidationInfo,
                      field_validator, model_validator)

from .config import errors_in, read_yaml_mapping, validate
from .engine.pricing import CommPricer
from .engine.result import TrainResult
from .engine.simulator import simulate
from .errors import ConfigError
from .limits import check_limit
from .progress import Progress, report
from .sections import (  # the machine's sections, importable from here as before
    EndpointSection,
    NetworkSection,
    NpuSection,
    SchedulingSection,
    SystemSection,
    parse_endpoint,
)
from .system.model import System
from .topology.graph import Topology
from .units import parse_size
from .workload.graph import WorkloadGraph


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ParallelismSection(_Strict):
    """`workload.parallelism:` the strategy of a zoo model (`workload.parallelism.Strategy`).

    Parameters
    ----------
    mp, dp, pp : int
        Model (tensor), data and pipeline parallel degrees; mp x dp x pp = the network's NPUs.
    microbatches : int
        Microbatches per minibatch (pipeline).
    schedule : str
        Pipeline schedule: gpipe or 1f1b.
    zero : int
        0 (data-parallel all-reduce) or 2 (ZeRO-2: reduce-scatter + all-gather).
    dp_bucket : float
        Data-parallel bucket size, bytes (units accepted); 0 = one collective per layer.
    placement : list of str
        Order of mp, pp, dp in the rank numbering, fastest-varying first.
    weight_streaming : bool
        Weights in from the I/O controllers each pass, gradients out (FRED).
    stage_layout : str
        contiguous (balanced contiguous stages, run as `schedule` says) or interleaved (layer i on
        stage i mod pp, breadth-first: FRED's weight-streaming pipeline; `schedule` is not used).
    pp_send : str
        Stage-boundary transfers: p2p (each NPU to its peer), multicast (MP rank 0 broadcasts to
        the next stage's MP group; as p2p when mp = 1) or scatter-gather (each NPU sends 1/mp,
        the receiving MP group all-gathers; Megatron-LM's default without sequence parallelism).
    recompute : str
        Activation recomputation of transformer blocks: none, selective (the attention core) or
        full (each block's forward, with its MP communication, before its backward).
    sequence_parallel : bool
        Megatron's sequence parallelism (mp > 1): all-gather + reduce-scatter per block part
        instead of an all-reduce; LayerNorm/dropout sharded; pipeline transfers of 1/mp.
    virtual_stages : int
        Model chunks per stage: Megatron's interleaved 1F1B (needs stage_split: layers, schedule
        1f1b, microbatches a multiple of pp).
    stage_split : str
        flops (stages balanced by forward FLOPs) or layers (equal transformer blocks per stage,
        the embedding with the first, the head with the last: Megatron-LM).
    optimizer : str
        none or adam: a memory-bound mixed-precision Adam step per NPU and iteration.
    tp_overlap : bool
        Megatron-LM's asynchronous tensor-parallel communication in backward (its default since
        2022; `--no-async-tensor-model-parallel-allreduce` turns it off): the column-parallel
        linear's input-gradient all-reduce (sequence parallel: its input's all-gather, then the
        gradient's reduce-scatter) overlaps that linear's weight-gradient (input-gradient) matmul.
    attention : str
        unfused (Megatron-LM 2022: score GEMM, softmax, dropout, context GEMM) or fused (one causal
        kernel at the GPU preset's measured fused-attention rate: FlashAttention, Transformer
        Engine).
    """

    mp: StrictInt = Field(default=1, ge=1)
    dp: StrictInt = Field(default=1, ge=1)
    pp: StrictInt = Field(default=1, ge=1)
    microbatches: StrictInt = Field(default=1, ge=1)
    schedule: Literal["gpipe", "1f1b"] = "1f1b"
    zero: Literal[0, 2] = 0
    dp_bucket: float = 0.0
    placement: list[Literal["mp", "pp", "dp"]] = Field(default_factory=lambda: ["mp", "pp", "dp"])
    weight_streaming: StrictBool = False  # weights in from I/O controllers each pass, gradients out (FRED)
    stage_layout: Literal["contiguous", "interleaved"] = "contiguous"  # interleaved: layer i on stage i mod pp
    pp_send: Literal["p2p", "multicast", "scatter-gather"] = "p2p"  # multicast: MP rank 0 broadcasts to the next stage's MP group
    recompute: Literal["none", "selective", "full"] = "none"
    sequence_parallel: StrictBool = False
    virtual_stages: StrictInt = Field(default=1, ge=1)
    stage_split: Literal["flops", "layers"] = "flops"
    optimizer: Literal["none", "adam"] = "none"
    tp_overlap: StrictBool = True
    attention: Literal["unfused", "fused"] = "unfused"

    _bucket = field_validator("dp_bucket", mode="before")(lambda v: parse_size(v, "dp_bucket"))

    @field_validator("zero", mode="before")
    @classmethod
    def _zero(cls, v):
        if isinstance(v, (bool, float)):  # false would pass as 0, 2.0 as 2
            raise ConfigError("zero", v, "accepted: 0 (plain all-reduce) or 2 (ZeRO stage 2)")
        return v


class ShapeSection(_Strict):
    """`workload.model:` a GPT-style transformer by its shape (`workload.models.transformer`).

    Parameters
    ----------
    name : str
        Its name in reports.
    layers, hidden, heads, seq, vocab : int
        Transformer blocks, hidden size, attention heads (dividing hidden), sequence length,
        vocabulary.
    ffn : int, optional
        MLP inner size (default 4 x hidden).
    """

    name: str = "transformer"
    layers: StrictInt = Field(ge=1)
    hidden: StrictInt = Field(ge=1)
    heads: StrictInt = Field(ge=1)
    seq: StrictInt = Field(ge=1)
    vocab: StrictInt = Field(ge=1)
    ffn: StrictInt | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _heads(self):
        if self.hidden % self.heads:
            raise ConfigError("heads", self.heads, f"accepted: a divisor of hidden = {self.hidden}")
        return self


class WorkloadSection(_Strict):
    """`workload:` what runs: exactly one of `model`, `astra_text`, `chakra`.

    Parameters
    ----------
    model : str or ShapeSection, optional
        A zoo model (`workload.models.MODELS`), or a transformer by shape
        (`{layers: 96, hidden: 12288, heads: 96, seq: 2048, vocab: 51200}`).
    astra_text : str, optional
        An ASTRA-sim 1.0 text workload file (relative to the config file).
    chakra : str, optional
        A Chakra trace prefix: rank r reads `<prefix>.<r>.et`.
    comm_groups : str, optional
        ASTRA-sim communicator-groups JSON for Chakra traces (pg_name -> NPUs).
    dtype : str
        Element type of parameters and activations: fp16, bf16 or fp32.
    grad_dtype : str, optional
        Element type of gradients (default: `dtype`).
    batch : int
        Global minibatch, samples (sequences).
    iterations : int
        Training iterations to simulate (at most the `iterations` limit).
    input_loading : bool
        Each iteration's inputs come in through the I/O controllers (prefetched).
    input_prefetch : bool
        With input_loading: iteration 0's input is already on the wafer and each iteration loads
        the next one's while it runs (FRED's steady state).
    mp : int, optional
        Model-parallel group of hybrid text workloads.
    parallelism : ParallelismSection
        The strategy of a zoo model.
    fold : str
        `auto` (default): data-parallel replicas and tensor-parallel ranks that provably run
        alike are simulated once (`engine.fold`; the answer is exact, checked per run); `off`:
        every NPU is simulated.

    Fields that do not apply to the workload given (`WORKLOAD_FIELDS`) are refused when set to
    anything but their default: a zoo model's strategy is `parallelism`, not `mp`.
    """

    model: str | ShapeSection | None = None
    astra_text: str | None = None
    chakra: str | None = None
    comm_groups: str | None = None  # ASTRA-sim communicator-groups JSON for chakra traces (pg_name -> NPUs)
    dtype: Literal["fp16", "bf16", "fp32"] = "fp16"
    grad_dtype: Literal["fp16", "bf16", "fp32"] | None = None
    batch: StrictInt = Field(default=1, ge=1)
    iterations: StrictInt = Field(default=1, ge=1)
    input_loading: StrictBool = False  # each iteration's inputs through the I/O controllers (prefetched)
    input_prefetch: StrictBool = False  # iteration 0's input already loaded; each iteration loads the next one's
    mp: StrictInt | None = Field(default=None, ge=1)  # model-parallel group of hybrid text workloads
    parallelism: ParallelismSection = Field(default_factory=ParallelismSection)
    fold: Literal["auto", "off"] = "auto"

    @field_validator("iterations")
    @classmethod
    def _iterations(cls, v):
        check_limit("iterations", v, "iterations", "iterations", v)
        return v

    @model_validator(mode="after")
    def _applies(self):
        given = [k for k in WORKLOAD_FIELDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ConfigError("workload", ", ".join(given) or "none",
                              "accepted: exactly one of model (zoo), astra_text (file), chakra (trace prefix)")
        kind = given[0]
        for name in sorted(self.model_fields_set - set(WORKLOAD_FIELDS) - set(WORKLOAD_FIELDS[kind])):
            value = getattr(self, name)
            if value != type(self).model_fields[name].get_default(call_default_factory=True):
                what = {"model": f"a zoo model (model: {self.model}; its strategy is workload.parallelism)",
                        "astra_text": "a text workload", "chakra": "Chakra traces"}[kind]
                raise ConfigError(name, value if not isinstance(value, BaseModel) else value.model_dump(),
                                  f"does not apply to {what}; accepted with {kind}: {', '.join(WORKLOAD_FIELDS[kind])}")
        if self.input_prefetch and not self.input_loading:
            raise ConfigError("input_prefetch", True, "applies with input_loading: true; accepted: input_loading: true, "
                                                      "or input_prefetch: false")
        return self

    @field_validator("model")
    @classmethod
    def _zoo(cls, v):
        from .workload.models import MODELS

        if isinstance(v, str) and v not in MODELS:
            raise ValueError("accepted: " + ", ".join(MODELS) + ", or a transformer by shape {layers, hidden, heads, "
                             "seq, vocab[, ffn]}")
        return v

    def build_model(self):
        """The zoo model or transformer this section names, in its `dtype`.

        Returns
        -------
        Model
        """
        from .workload.models import get_model, transformer

        m = self.model
        if isinstance(m, ShapeSection):
            return transformer(m.name, m.layers, m.hidden, m.heads, m.seq, m.vocab, ffn=m.ffn, dtype=self.dtype)
        return get_model(m, self.dtype)


WORKLOAD_FIELDS = {
    "model": ("dtype", "grad_dtype", "batch", "iterations", "input_loading", "input_prefetch", "parallelism", "fold"),
    "astra_text": ("iterations", "mp"),
    "chakra": ("iterations", "comm_groups"),
}
"""Each kind of workload -> the other `workload:` fields that apply to it."""


class OutputSection(_Strict):
    """`output:` where and what the run writes.

    Parameters
    ----------
    dir : str, optional
        Folder for summary.json, breakdown.csv, layers.csv, the trace and breakdown.png, relative
        to the config file (default of `fabricsim train`: out/<config name>).
    trace : bool
        Write the Perfetto trace.
    trace_npus : str, optional
        NPUs in the trace as a group string (`0-63`; at most the `ranks` limit), or one NPU;
        default the first 64.
    trace_format : str
        `json` (trace.json) or `json.gz` (trace.json.gz, gzip-compressed).
    plot : bool
        Write the breakdown plot.
    """

    dir: str | None = None
    trace: StrictBool = True
    trace_npus: str | StrictInt | None = None
    trace_format: str = "json"
    plot: StrictBool = True

    @field_validator("trace_npus")
    @classmethod
    def _trace_npus(cls, v):
        from .collectives.api import parse_group

        if v is not None:
            parse_group(str(v), "trace_npus")  # syntax and the ranks limit, before any range is expanded
        return None if v is None else str(v)

    @field_validator("trace_format")
    @classmethod
    def _trace_format(cls, v):
        from .report.trace import trace_file_name

        trace_file_name(v, "trace_format")  # the one list of formats; ConfigError otherwise
        return v


class TrainConfig(_Strict):
    """A whole training config (module doc).

    Parameters
    ----------
    name : str, optional
        Title of the run (default: model and strategy).
    network : NetworkSection
        The topology, network model and algorithms.
    system : SystemSection
        The NPU, endpoint policy and scheduling.
    workload : WorkloadSection
        The model (or text workload, or Chakra traces) and its strategy.
    output : OutputSection
        Where and what the run writes.

    The folder relative paths are resolved against (`base_dir`, the config file's) and the file
    errors name (`source`) are not fields a config can set: `load_train_config` sets them, and
    Python callers pass `context={"base_dir": ...}` to `model_validate` (default: `.`).
    """

    name: str | None = None
    network: NetworkSection
    system: SystemSection = Field(default_factory=SystemSection)
    workload: WorkloadSection
    output: OutputSection = Field(default_factory=OutputSection)
    _base_dir: str = PrivateAttr(".")
    _source: str | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _from_context(self, info: ValidationInfo):
        ctx = info.context or {}
        self._base_dir = str(ctx.get("base_dir", "."))
        self._source = ctx.get("source")
        self._fused_attention_priced()
        return self

    def _fused_attention_priced(self) -> None:
        """Fused attention needs a GPU preset that carries measured rates (`GpuCompute.attention_rates`)."""
        par = self.workload.parallelism
        if par is None or par.attention != "fused":
            return
        gpu = self.system.npu.gpu
        from .system.gpus import get_gpu

        if gpu is None or self.system.npu.compute == "roofline" or not get_gpu(gpu).attention_rates:
            raise ConfigError("workload.parallelism.attention", "fused",
                              f"needs a GPU preset with measured fused-attention rates (gpu: h100), not "
                              f"{gpu or 'a roofline NPU'}; accepted: unfused")

    @property
    def base_dir(self) -> str:
        """Folder relative paths in the config are resolved against (the config file's, or `.`)."""
        return self._base_dir

    @property
    def source(self) -> str | None:
        """The file the config was read from (named first in errors), or None."""
        return self._source


def load_train_config(path: str | Path) -> TrainConfig:
    """Read and validate a training config file (module doc).

    Parameters
    ----------
    path : str or Path
        A YAML file; relative paths inside it are relative to it.

    Returns
    -------
    TrainConfig
        Every section checked; a one-line ConfigError names the file, the field, the value and
        what is accepted (also when the workload names none or several of model, astra_text,
        chakra).
    """
    data = read_yaml_mapping(path, "network, system, workload, output")
    return validate(TrainConfig, data, str(path), from_file=True,
                    context={"base_dir": str(Path(path).resolve().parent), "source": str(path)})


def system_of(cfg: TrainConfig) -> System:
    """The config's system (NPU, endpoint policy, scheduling).

    Parameters
    ----------
    cfg : TrainConfig
        A validated config.

    Returns
    -------
    System
    """
    return cfg.system.build()


def topology_of(cfg: TrainConfig) -> Topology:
    """The config's topology.

    Parameters
    ----------
    cfg : TrainConfig
        A validated config.

    Returns
    -------
    Topology
        ConfigError naming the config file and `network.<field>` for what the topology refuses.
    """
    with errors_in(cfg.source, "network"):
        return cfg.network.build_topology()


def pricer_of(cfg: TrainConfig, topo: Topology) -> CommPricer:
    """What prices communication for this config: its network model and algorithms on `topo`.

    The engine adds the system's endpoint (`CommPricer.for_system`).

    Parameters
    ----------
    cfg : TrainConfig
        A validated config.
    topo : Topology
        The config's topology (`topology_of`).

    Returns
    -------
    CommPricer
    """
    return CommPricer(topo, cfg.network.model, cfg.network.algorithms)


def _resolve(cfg: TrainConfig, p: str) -> str:
    q = Path(p)
    return str(q if q.is_absolute() else Path(cfg.base_dir) / q)


def strategy_of(cfg: TrainConfig):
    """The config's `workload.parallelism.Strategy` (zoo models and transformers by shape).

    Parameters
    ----------
    cfg : TrainConfig
        A validated config with `workload.model`.

    Returns
    -------
    Strategy
    """
    from .workload.strategy import Strategy

    w, p = cfg.workload, cfg.workload.parallelism
    with errors_in(cfg.source, "workload"):
        return Strategy(mp=p.mp, pp=p.pp, dp=p.dp, batch=w.batch, microbatches=p.microbatches, schedule=p.schedule,
                        zero=p.zero, dp_bucket=p.dp_bucket, placement=tuple(p.placement), iterations=w.iterations,
                        grad_dtype=w.grad_dtype, weight_streaming=p.weight_streaming, input_loading=w.input_loading,
                        stage_layout=p.stage_layout, pp_send=p.pp_send, input_prefetch=w.input_prefetch,
                        recompute=p.recompute, sequence_parallel=p.sequence_parallel, virtual_stages=p.virtual_stages,
                        stage_split=p.stage_split, optimizer=p.optimizer, tp_overlap=p.tp_overlap,
                        attention=p.attention)


def graph_of(cfg: TrainConfig, n_npus: int, fold: bool = False) -> WorkloadGraph:
    """The config's workload graph: a zoo model under its strategy, a text workload, or Chakra traces.

    Parameters
    ----------
    cfg : TrainConfig
        A validated config.
    n_npus : int
        NPUs of the network.
    fold : bool
        A model's graph folded to one NPU per stage (`engine.fold`; the caller checks the network).

    Returns
    -------
    WorkloadGraph
        Compute in FLOPs and bytes (zoo) or fixed durations in s (text, Chakra), communication
        in bytes. A transformer's `meta` has `global_batch` (sequences) and `seq` (tokens per
        sequence): `TrainResult.tokens_per_iteration` is their product.
    """
    w, where = cfg.workload, cfg.source
    with errors_in(where, "workload"):  # iterations may come from --iterations or Python, past the validator
        check_limit("iterations", w.iterations, "iterations", "iterations", w.iterations)
    if w.model is not None:
        from .workload.estimate import training_tasks
        from .workload.parallelism import build_training

        st = strategy_of(cfg)
        with errors_in(where, "workload"):
            model = w.build_model()
            if st.npus == n_npus:  # otherwise build_training says why
                check_limit("tasks", training_tasks(model, st, fold), "tasks", "workload",
                            f"{model.name} {st.name}, {w.iterations} iteration(s)")
            g = build_training(model, st, n_npus, fold=fold)
        if model.seq is None or not model.blocks():  # tokens are counted for transformers only
            return g
        return replace(g, meta={**g.meta, "global_batch": st.batch, "seq": model.seq})
    if w.astra_text is not None:
        from .workload.astra_text import read_astra_text
        from .workload.estimate import text_tasks
        from .workload.legacy import text_to_graph

        text = read_astra_text(_resolve(cfg, w.astra_text))  # its errors name the text file
        with errors_in(where, "workload"):
            check_limit("tasks", text_tasks(len(text.layers), n_npus, w.iterations), "compute tasks", "workload",
                        f"{w.astra_text} on {n_npus} NPUs, {w.iterations} iteration(s)")
            return text_to_graph(text, n_npus, w.iterations, w.mp)
    from .workload.chakra import read_traces
    from .workload.chakra_graph import traces_to_graph

    groups = None
    if w.comm_groups is not None:
        from .astra.config import read_comm_groups

        groups = {str(k): v for k, v in read_comm_groups(_resolve(cfg, w.comm_groups), n_npus).items()}
    traces = read_traces(_resolve(cfg, w.chakra), n_npus)
    with errors_in(where, "workload"):
        check_limit("tasks", sum(len(t.nodes) for t in traces) * w.iterations, "trace nodes (all ranks and iterations)",
                    "workload", f"{w.chakra}, {w.iterations} iteration(s)")
    return traces_to_graph(traces, w.iterations, groups)


def memory_of(cfg: TrainConfig, system: System):
    """Peak memory per pipeline stage of a transformer config (`workload.memory`), checked against
    the NPU's memory as `system.npu.memory_check` says.

    Parameters
    ----------
    cfg : TrainConfig
        A validated config.
    system : System
        Its system (the NPU's `memory_capacity`).

    Returns
    -------
    (tuple of StageMemory, list of str) or (None, [])
        Per stage (bytes) and the warnings; None for models without transformer blocks by shape
        and other workloads. ConfigError naming `system.npu.memory` when a stage does not fit
        and the check is `error`, with the single changes of `workload.parallelism` that would fit
        and their peaks (`workload.memory.fitting_changes`).
    """
    w = cfg.workload
    if w.model is None:
        return None, []
    model = w.build_model()
    from .workload.memory import check_memory, stage_memory
    from .workload.models import DTYPES
    from .workload.parallelism import _stages
    from .workload.plan import by_shape, layer_stages

    st = strategy_of(cfg)
    with errors_in(cfg.source, "workload"):
        # Korthikanti's forms need Megatron's layout (`plan.by_shape`) with the weights on the NPUs
        if not by_shape(model, st.mp) or st.stage_layout != "contiguous" or st.weight_streaming:
            return None, []

        def blocks_for(pp: int, strict: bool = False):  # blocks per stage as the graph splits them; False: none
            try:
                split = layer_stages(model, pp) if st.stage_split == "layers" else _stages(model, pp)
            except ConfigError:
                if strict:
                    raise
                return False
            blocks = [sum(model.layers[i].kind == "transformer_block" for i in r) for r in split]
            return blocks if min(blocks) >= 1 else False

        blocks = blocks_for(st.pp, strict=True)
        if blocks is False:
            return None, []
        shape = dict(layers=len(model.blocks()), hidden=model.hidden, heads=model.heads, seq=model.seq,
                     vocab=model.vocab, ffn=model.ffn, dtype_bytes=model.dtype_bytes, tp=st.mp, pp=st.pp, dp=st.dp,
                     microbatch=st.microbatch, microbatches=st.microbatches, schedule=st.schedule,
                     virtual_stages=st.virtual_stages, recompute=st.recompute, sequence_parallel=st.sequence_parallel,
                     zero=st.zero, stage_blocks=blocks, grad_bytes=DTYPES[st.grad_dtype] if st.grad_dtype else 4)
        stages = stage_memory(**shape)
    cap = system.npu.memory_capacity
    if cap == float("inf"):
        return stages, []

    def accepts(fields: dict) -> bool:  # the strategy with these changes passes its own checks
        try:
            replace(st, **fields)
        except ConfigError:
            return False
        return True

    with errors_in(cfg.source, "system.npu"):
        # a refusal names the changes that fit: only those a config can make (ZeRO 2 of `parallelism.zero`)
        warnings = check_memory(stages, cap, cfg.system.npu.memory_check, field="memory", strategy=shape,
                                zero_stages=(2,), blocks_for=blocks_for, accepts=accepts)
    return stages, warnings


@dataclass(frozen=True, eq=False)
class TrainRun:
    """What `run_train` returns.

    Parameters
    ----------
    config : TrainConfig
        The config that ran.
    topology : Topology
        Its network.
    result : TrainResult
        Task times and the breakdown (s).
    pricer : CommPricer
        What priced its communication, with the system's endpoint policy (`engine.usage`).
    memory : tuple of StageMemory, optional
        Peak memory per pipeline stage (`workload.memory`), for transformers by shape.
    notes : tuple of str
        What the run says besides its figures: memory warnings, whether it was folded.
    """

    config: TrainConfig
    topology: Topology
    result: TrainResult
    pricer: CommPricer
    memory: tuple | None = None
    notes: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        """The config's name, or the model and strategy names."""
        g = self.result.graph
        return self.config.name or f"{g.meta.get('model', 'workload')} {g.meta.get('strategy', '')}".strip()


def run_train(cfg: TrainConfig, progress: Progress | None = None) -> TrainRun:
    """Build the config's topology, workload graph, system and pricer, and simulate.

    Parameters
    ----------
    cfg : TrainConfig
        A validated config (`load_train_config`, or `TrainConfig.model_validate(mapping)`).
    progress : callable, optional
        `progress(done, total, phase)` (`fabricsim.progress`): building the topology, the workload
        graph, then tasks done of all tasks while simulating.

    Returns
    -------
    TrainRun
        The config, the topology and the `TrainResult` (times in s).

    Examples
    --------
    >>> from fabricsim.units import format_time
    >>> cfg = TrainConfig.model_validate({
    ...     "network": {"topology": "ring:4", "bandwidth": "100GB/s", "latency": "1us"},
    ...     "system": {"npu": {"peak": "100TFLOP/s", "memory_bandwidth": "2TB/s"}},
    ...     "workload": {"model": "resnet50", "batch": 128, "parallelism": {"dp": 4}}})
    >>> run = run_train(cfg)
    >>> run.title, format_time(run.result.iteration_time)
    ('resnet50 MP(1)-DP(4)-PP(1)', '10.16 ms')
    >>> sorted(k for k, v in run.result.mean_breakdown().items() if v > 0)   # s per NPU
    ['DP', 'compute']
    """
    report(progress, 0, 0, "building the topology")
    topo = topology_of(cfg)
    system = system_of(cfg)
    memory, notes = memory_of(cfg, system)
    with errors_in(cfg.source, "network.algorithms"):
        pricer = pricer_of(cfg, topo).for_system(system.endpoint, system.npu)
    fold = _fold_wanted(cfg, pricer, topo.n_npus)
    report(progress, 0, 0, f"building the workload graph ({topo.n_npus} NPUs{', folded' if fold else ''})")
    graph = graph_of(cfg, topo.n_npus, fold=fold)
    if fold:
        from .engine.fold import asymmetry

        sc = system.scheduling
        with errors_in(cfg.source, "network.algorithms"):
            why = asymmetry(graph, pricer, sc.chunks, sc.chunks_in_flight)
        if why:
            notes = [*notes, f"not folded: {why}"]
            graph = graph_of(cfg, topo.n_npus)
        else:
            notes = [*notes, f"folded: {graph.copies} NPUs per stage simulated as one (exact, engine.fold)"]
    report(progress, 0, len(graph), "simulating")
    tasks = None if progress is None else (lambda done, total: progress(done, total, "simulating"))
    with errors_in(cfg.source, "network.algorithms"):  # an algorithm that cannot serve a group of the workload
        return TrainRun(cfg, topo, simulate(graph, system, pricer, progress=tasks), pricer, memory, tuple(notes))


def _fold_wanted(cfg: TrainConfig, pricer: CommPricer, n_npus: int) -> bool:
    """Whether to try a folded graph: a model under `fold: auto`, an analytical network model and
    a strategy symmetric over its MP ranks and DP replicas (`parallelism.foldable`)."""
    w = cfg.workload
    if w.model is None or w.fold != "auto" or pricer.model.shares_links:
        return False
    from .workload.parallelism import foldable

    st = strategy_of(cfg)
    return st.npus == n_npus and not foldable(w.build_model(), st)


__all__ = ["EndpointSection", "NetworkSection", "NpuSection", "OutputSection", "ParallelismSection", "SchedulingSection",
           "SystemSection", "ShapeSection", "TrainConfig", "TrainRun", "WorkloadSection", "graph_of",
           "load_train_config", "memory_of", "parse_endpoint", "pricer_of", "run_train", "strategy_of", "system_of",
           "topology_of"]
