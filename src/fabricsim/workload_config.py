"""The `workload:` sections of a `fabricsim train` config (`fabricsim.train_config` has the whole
format): what runs (`WorkloadSection`: a zoo model, a transformer by shape (`ShapeSection`), an
ASTRA-sim text workload or Chakra traces), its strategy (`ParallelismSection`), and one job of
several sharing a network (`JobSection`). Apart from the config's other sections so that the
schema of a workload reads in one sitting.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator

from .errors import ConfigError
from .limits import check_limit
from .units import parse_size


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ParallelismSection(_Strict):
    """`workload.parallelism:` the strategy of a zoo model (`workload.parallelism.Strategy`).

    Parameters
    ----------
    mp, dp, pp : int
        Model (tensor), data and pipeline parallel degrees; mp x cp x dp x pp = the network's NPUs.
    microbatches : int
        Microbatches per minibatch (pipeline).
    schedule : str
        Pipeline schedule: gpipe or 1f1b.
    zero, reshard_after_forward : int, bool
        0 (data-parallel all-reduce), 1 (Megatron-LM's distributed optimizer: optimizer states
        sharded), 2 (ZeRO-2: gradients too) or 3 (FSDP: parameters too, gathered per layer, and with
        reshard_after_forward, FSDP's default, gathered again for the backward).
    dp_bucket : float
        Data-parallel bucket size, bytes (units accepted); 0 = one collective per layer.
    placement : list of str
        Order of mp, cp, pp, dp in the rank numbering, fastest-varying first (default Megatron-Core's
        tp-cp-ep-dp-pp: [mp, cp, dp, pp]); an order of mp, pp, dp puts cp right after mp.
    cp, cp_comm : int, str
        Context parallelism: each sequence split over cp ranks (a divisor of seq / 2); the key/value
        exchange of each attention: p2p (ring, beside the attention core) or all_gather (before it).
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
    ep, etp : int
        Expert parallelism (a MoE model's experts over ep of the dp replicas: a divisor of dp and of
        the experts) and expert tensor parallelism (default and only layout modelled: mp).
    """

    mp: StrictInt = Field(default=1, ge=1)
    dp: StrictInt = Field(default=1, ge=1)
    pp: StrictInt = Field(default=1, ge=1)
    microbatches: StrictInt = Field(default=1, ge=1)
    schedule: Literal["gpipe", "1f1b"] = "1f1b"
    zero: Literal[0, 1, 2, 3] = 0  # 3: FSDP / ZeRO-3 (parameters sharded too)
    reshard_after_forward: StrictBool = True
    dp_bucket: float = 0.0
    placement: list[Literal["mp", "cp", "pp", "dp"]] = Field(default_factory=lambda: ["mp", "cp", "dp", "pp"])
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
    ep: StrictInt = Field(default=1, ge=1)
    etp: StrictInt | None = Field(default=None, ge=1)
    cp: StrictInt = Field(default=1, ge=1)
    cp_comm: Literal["p2p", "all_gather"] = "p2p"

    _bucket = field_validator("dp_bucket", mode="before")(lambda v: parse_size(v, "dp_bucket"))

    @field_validator("zero", mode="before")
    @classmethod
    def _zero(cls, v):
        if isinstance(v, (bool, float)):  # false would pass as 0, 2.0 as 2
            from .workload.strategy import ZERO_ACCEPTED

            raise ConfigError("zero", v, ZERO_ACCEPTED)
        return v

    @model_validator(mode="after")
    def _experts(self):
        if (self.dp * self.cp) % self.ep:
            raise ConfigError("ep", self.ep, f"accepted: a divisor of dp x cp = {self.dp * self.cp} (ranks from the "
                                             "replicas)")
        if self.etp is not None and self.etp != self.mp:
            raise ConfigError("etp", self.etp, f"accepted: mp = {self.mp} (experts split like the dense MLP)")
        return self


DENSE_KEYS = ("layers", "hidden", "heads", "seq", "vocab", "kv_heads", "ffn", "ffn_act", "norm", "bias",
              "tied_embeddings", "position")
"""The keys of a dense transformer shape (`ShapeSection`); the others are a mixture of experts'."""


class ShapeSection(_Strict):
    """`workload.model:` a decoder-only transformer by its shape (`workload.shapes.transformer`):
    GPT-2/3 by default; Llama with `kv_heads`, `ffn_act: swiglu`, `norm: rmsnorm`, `bias: false`,
    `tied_embeddings: false`, `position: rope`. A `preset` (a zoo name with a shape: llama3-8b,
    llama3-70b, llama3-405b) fills every key not given.

    Parameters
    ----------
    name : str, optional
        Its name in reports (default: the preset's, else "transformer").
    preset : str, optional
        A zoo model whose shape fills the keys not given (`workload.zoo_llm.SHAPES`).
    layers, hidden, heads, seq, vocab : int
        Transformer blocks, hidden size, attention (query) heads (dividing hidden), sequence
        length, vocabulary; required without a preset.
    kv_heads : int, optional
        Key/value heads (grouped-query attention; 1: multi-query), dividing heads; default heads.
    ffn : int, optional
        MLP inner size (default 4 x hidden).
    ffn_act, norm, position : str
        gelu or swiglu; layernorm or rmsnorm; learned or rope.
    bias, tied_embeddings : bool
        Linear layers with biases; logits tied to the token embedding.
    """

    name: str | None = None
    preset: str | None = None
    layers: StrictInt | None = Field(default=None, ge=1)
    hidden: StrictInt | None = Field(default=None, ge=1)
    heads: StrictInt | None = Field(default=None, ge=1)
    seq: StrictInt | None = Field(default=None, ge=1)
    vocab: StrictInt | None = Field(default=None, ge=1)
    kv_heads: StrictInt | None = Field(default=None, ge=1)
    ffn: StrictInt | None = Field(default=None, ge=1)
    ffn_act: Literal["gelu", "swiglu"] | None = None
    norm: Literal["layernorm", "rmsnorm"] | None = None
    bias: StrictBool | None = None
    tied_embeddings: StrictBool | None = None
    position: Literal["learned", "rope"] | None = None
    experts: StrictInt | None = Field(default=None, ge=0)
    top_k: StrictInt | None = Field(default=None, ge=1)
    shared_experts: StrictInt | None = Field(default=None, ge=0)
    expert_ffn: StrictInt | None = Field(default=None, ge=1)
    moe_layers: Literal["all"] | StrictInt | list[StrictInt] | None = None
    capacity_factor: float | None = None
    moe_imbalance: float | None = None

    @model_validator(mode="after")
    def _shape(self):
        self.shape()  # every key checked now, at load time: the error names the key
        return self

    def shape(self):
        """The architecture: the preset's, with the keys given here over it (defaults: GPT's, dense).

        Returns
        -------
        workload.shapes.TransformerShape
            ConfigError naming the key for a missing size, heads not dividing hidden, kv_heads
            not dividing heads, top_k above experts, a bad moe_layers, or an unknown preset.
        """
        from .workload.transformer_shape import TransformerShape, checked_shape
        from .workload.zoo_llm import SHAPES

        fields = TransformerShape.__dataclass_fields__
        base: dict = {}
        if self.preset is not None:
            if self.preset not in SHAPES:
                raise ConfigError("preset", self.preset, "accepted: " + ", ".join(SHAPES))
            base = {f: getattr(SHAPES[self.preset], f) for f in fields}
            if not base["experts"]:  # a dense preset: no expert fields to carry over
                base = {f: v for f, v in base.items() if f in DENSE_KEYS}
            base["expert_ffn"] = base.get("expert_ffn") or None
        keys = {**base, **{f: getattr(self, f) for f in fields if getattr(self, f) is not None}}
        for f in ("layers", "hidden", "heads", "seq", "vocab"):
            if f not in keys:
                raise ConfigError(f, None, "required without a preset; accepted: an integer >= 1")
        defaults = dict(kv_heads=None, ffn=None, ffn_act="gelu", norm="layernorm", bias=True, tied_embeddings=True,
                        position="learned")
        return checked_shape(**{**defaults, **keys})

    def model_name(self) -> str:
        """Its name in reports: `name`, else the preset's, else "transformer"."""
        return self.name or self.preset or "transformer"


def check_tensor_split(shape, mp: int) -> None:
    """None when Megatron-LM can split a transformer by shape over `mp` tensor-parallel ranks: `mp`
    divides its attention heads, its key/value heads and its MLP inner size (Megatron-LM refuses a
    tensor-parallel size that does not). A ConfigError naming `model.heads`, `model.kv_heads` or
    `model.ffn` otherwise: such a run would leave Megatron's layout (no kernels, no memory model).

    Parameters
    ----------
    shape : workload.shapes.TransformerShape
        The architecture.
    mp : int
        Tensor-parallel degree (`workload.parallelism.mp`).
    """
    if mp == 1:
        return
    for key, what in (("heads", "attention heads"), ("kv_heads", "key/value heads (query groups)"),
                      ("ffn", "MLP inner size (default 4 x hidden)")):
        value = getattr(shape, key)
        if value % mp:
            raise ConfigError(f"model.{key}", value, f"accepted with parallelism.mp = {mp}: a multiple of {mp} "
                                                     f"(Megatron-LM splits the {what} over the tensor-parallel ranks); "
                                                     f"or an mp dividing {value}")


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
        Element type of parameters and activations: fp16, bf16 or fp32; or fp8, Transformer Engine's
        FP8 training (`workload.fp8`: the transformer blocks' linear GEMMs in FP8, everything stored
        or sent in bf16), which needs a GPU preset with FP8 tensor cores (`gpu: h100`).
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
    dtype: Literal["fp16", "bf16", "fp32", "fp8"] = "fp16"
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
        kind = given[0]  # (a job's own keys, name and gpus, are not the workload's)
        for name in sorted(self.model_fields_set & set(WorkloadSection.model_fields) - set(WORKLOAD_FIELDS)
                           - set(WORKLOAD_FIELDS[kind])):
            value = getattr(self, name)
            if value != type(self).model_fields[name].get_default(call_default_factory=True):
                what = {"model": f"a zoo model (model: {self.model}; its strategy is workload.parallelism)",
                        "astra_text": "a text workload", "chakra": "Chakra traces"}[kind]
                raise ConfigError(name, value if not isinstance(value, BaseModel) else value.model_dump(),
                                  f"does not apply to {what}; accepted with {kind}: {', '.join(WORKLOAD_FIELDS[kind])}")
        if self.input_prefetch and not self.input_loading:
            raise ConfigError("input_prefetch", True, "applies with input_loading: true; accepted: input_loading: true, "
                                                      "or input_prefetch: false")
        if isinstance(self.model, ShapeSection):
            shape = self.model.shape()
            check_tensor_split(shape, self.parallelism.mp)
            # sized before the model (a Layer per block) or its graph is built: each block is at least
            # two parts (attention, MLP), each a forward and a backward task, per microbatch and iteration
            factors = {"model.layers": shape.layers, "parallelism.microbatches": self.parallelism.microbatches,
                       "iterations": self.iterations}
            field = max(factors, key=lambda k: factors[k])  # blame the factor that makes it large
            check_limit("tasks", 4 * shape.layers * self.parallelism.microbatches * self.iterations,
                        "tasks (at least 4 per transformer block, microbatch and iteration)", field, factors[field])
        return self

    @field_validator("model", mode="before")
    @classmethod
    def _zoo(cls, v):
        from .workload.models import MODELS

        if isinstance(v, dict):  # a shape: validated here, so that its error names its own key
            from .config import validate

            return validate(ShapeSection, v, "model")
        if isinstance(v, str) and v not in MODELS:
            raise ValueError("accepted: " + ", ".join(MODELS) + ", or a transformer by shape {layers, hidden, heads, "
                             "seq, vocab[, kv_heads, ffn, ffn_act, norm, bias, tied_embeddings, position]} or "
                             "{preset: llama3-70b, ...}")
        return v

    def build_model(self):
        """The zoo model or transformer this section names, in its `dtype`.

        Returns
        -------
        Model
        """
        from .workload.models import get_model

        from .workload.zoo_llm import from_shape

        m = self.model
        if isinstance(m, ShapeSection):
            return from_shape(m.model_name(), m.shape(), self.dtype)
        return get_model(m, self.dtype)

    def strategy(self, source: str | None = None):
        """The `workload.parallelism.Strategy` of a zoo model or transformer by shape.

        Parameters
        ----------
        source : str, optional
            The config file, named first in errors.

        Returns
        -------
        Strategy
            ConfigError naming `workload.parallelism.<field>` for a choice the strategy refuses.
        """
        from .config import errors_in
        from .workload.strategy import Strategy

        p = self.parallelism
        with errors_in(source, "workload"):
            return Strategy(mp=p.mp, pp=p.pp, dp=p.dp, batch=self.batch, microbatches=p.microbatches,
                            schedule=p.schedule, zero=p.zero, dp_bucket=p.dp_bucket, placement=tuple(p.placement),
                            iterations=self.iterations, grad_dtype=self.grad_dtype,
                            weight_streaming=p.weight_streaming, input_loading=self.input_loading,
                            stage_layout=p.stage_layout, pp_send=p.pp_send, input_prefetch=self.input_prefetch,
                            recompute=p.recompute, sequence_parallel=p.sequence_parallel,
                            virtual_stages=p.virtual_stages, stage_split=p.stage_split, optimizer=p.optimizer,
                            tp_overlap=p.tp_overlap, attention=p.attention, ep=p.ep, etp=p.etp,
                            reshard_after_forward=p.reshard_after_forward, cp=p.cp, cp_comm=p.cp_comm)



WORKLOAD_FIELDS = {
    "model": ("dtype", "grad_dtype", "batch", "iterations", "input_loading", "input_prefetch", "parallelism", "fold"),
    "astra_text": ("iterations", "mp"),
    "chakra": ("iterations", "comm_groups"),
}
"""Each kind of workload -> the other `workload:` fields that apply to it."""


class JobSection(WorkloadSection):
    """`jobs[i]:` one training job of several sharing the network (`fabricsim.multi_job`): the fields
    of `workload:` plus its name and the NPUs it runs on.

    Parameters
    ----------
    name : str, optional
        Its name in reports (default: `job<i>`, from 0); unique among the jobs.
    gpus : str, int, list of int or mapping
        Its NPUs, local rank r on the r-th listed: a group string (`0-7`, `0,2,4,6`, `0-15:2`), a
        list of NPU ids, or a placement rule `{first: N, count: M}` (consecutive) or `{first: N,
        count: M, stride: S}` (every S-th); checked against the network and the other jobs when the
        config is loaded (`multi_job.check_jobs`).
    """

    name: str | None = None
    gpus: Any = None


__all__ = ["DENSE_KEYS", "JobSection", "ParallelismSection", "ShapeSection", "WORKLOAD_FIELDS", "WorkloadSection"]
