"""The parallelization of a training job: `Strategy`, MP(x)-DP(y)-PP(z) and how it runs.

What each field means for the workload graph is in `workload.parallelism` (the emitter) and
`workload.megatron` (recompute, sequence parallelism, virtual pipeline stages, the optimizer step);
this module only holds and checks the choices, each error naming the config field.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from .models import DTYPES

SCHEDULES = ("gpipe", "1f1b")
STAGE_LAYOUTS = ("contiguous", "interleaved")
PP_SENDS = ("p2p", "multicast", "scatter-gather")
RECOMPUTES = ("none", "selective", "full")
STAGE_SPLITS = ("flops", "layers")
OPTIMIZERS = ("none", "adam")
AXES = ("mp", "pp", "dp")
PLACEMENT_AXES = ("mp", "cp", "pp", "dp")
MEGATRON_ORDER = ("mp", "cp", "dp", "pp")  # Megatron-Core's default order tp-cp-ep-dp-pp (ep: from the replicas)
CP_COMMS = ("p2p", "all_gather")


def _pos(field: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ConfigError(field, v, "accepted: an integer >= 1")
    return int(v)


ZERO_ACCEPTED = ("accepted: 0 (plain all-reduce), 1 (distributed optimizer: optimizer states sharded), 2 "
                 "(ZeRO-2: gradients too) or 3 (FSDP / ZeRO-3: parameters too)")

@dataclass(frozen=True)
class Strategy:
    """A parallelization MP(x)-DP(y)-PP(z) and how it runs (module doc).

    Parameters
    ----------
    mp, pp, dp : int
        Model (tensor), pipeline and data parallel degrees, >= 1; NPUs = mp x pp x dp.
    batch : int
        Global minibatch, samples (sequences); a multiple of dp x microbatches.
    microbatches : int
        Microbatches per minibatch on each pipeline.
    schedule : str
        Pipeline schedule of contiguous stages: gpipe or 1f1b (the interleaved layout is
        breadth-first by construction and ignores it).
    zero : int
        0 (data-parallel all-reduce), 1 (Megatron-LM's distributed optimizer: optimizer states
        sharded over the replicas), 2 (ZeRO-2: gradients too) or 3 (FSDP / ZeRO-3: parameters
        too); 1 and 2 reduce-scatter the gradients and all-gather the updated parameters; 3
        all-gathers each layer's parameters over the DP group before its forward of every
        microbatch (the next layer's gather prefetched: gathers run ahead of compute) and, with
        `reshard_after_forward`, again before its backward, and reduce-scatters its gradients once
        per iteration (each replica keeps its shard: no all-gather after the optimizer).
    reshard_after_forward : bool
        With zero 3: each layer's gathered parameters are freed after its forward and gathered
        again before its backward (FSDP's default); false keeps them from forward to backward.
    dp_bucket : float
        Data-parallel bucket size, bytes; 0 = one collective per layer.
    placement : tuple of str
        Order of mp, cp, pp, dp in the rank numbering, fastest-varying first; default Megatron-Core's
        tp-cp-ep-dp-pp (expert-parallel ranks are consecutive replicas). Without "cp", cp follows mp.
    cp : int
        Context parallelism (Megatron-Core, Transformer Engine): each sequence split over cp ranks
        (seq / cp tokens each, in 2 cp chunks for a balanced causal mask); the key/value exchange of
        each attention runs over the cp group (`cp_comm`); gradients are reduced over dp x cp.
    cp_comm : str
        "p2p" (ring attention: the K/V chunks pass around the cp ranks beside the attention core;
        backward the K/V and their gradients) or "all_gather" (K/V all-gathered before the core,
        their gradients reduce-scattered after its backward: not overlapped).
    iterations : int
        Training iterations.
    grad_dtype : str, optional
        Element type of gradients (default: the model's dtype).
    weight_streaming : bool
        Weights stream in from the I/O controllers for forward and backward, gradients out.
    input_loading : bool
        Each iteration's inputs come in through the I/O controllers.
    stage_layout : str
        "contiguous" (balanced contiguous stages) or "interleaved" (layer i on stage i mod pp,
        breadth-first: FRED's weight-streaming pipeline, `workload.pipeline`).
    pp_send : str
        Stage-boundary transfers: "p2p" (each NPU to its peer) or "multicast" (MP rank 0
        broadcasts to the next stage's MP group; the same as p2p when mp = 1).
    input_prefetch : bool
        With `input_loading`: iteration 0's input is already on the wafer and each iteration
        prefetches the next one's (module doc).
    recompute : str
        Activation recomputation of transformer blocks (Megatron-LM, Korthikanti et al. 2022):
        "none", "selective" (the attention core is recomputed before its backward) or "full"
        (each block's forward, with its tensor-parallel communication, before its backward).
    sequence_parallel : bool
        Megatron's sequence parallelism (mp > 1): each block part is framed by an all-gather
        before and a reduce-scatter after instead of one all-reduce; LayerNorm, dropout and
        residual work on seq/mp tokens; stage-boundary transfers carry 1/mp of the activation.
    virtual_stages : int
        Model chunks per pipeline stage (Megatron's interleaved 1F1B): chunk c of pp x v equal
        chunks of blocks runs on stage c mod pp. Needs schedule 1f1b, stage_split "layers" and
        microbatches a multiple of pp.
    stage_split : str
        "flops" (contiguous stages balanced by forward FLOPs) or "layers" (Megatron-LM: equal
        transformer blocks per stage, the embedding with the first, the head with the last).
    optimizer : str
        "none" or "adam": a memory-bound optimizer step per NPU after its stage's gradients are
        reduced (Megatron-LM's mixed-precision Adam step, `system.optimizer.megatron_optimizer_step`).
    attention : str
        "unfused" (the 2022 code: score GEMM, softmax, dropout, context GEMM) or "fused" (one
        causal kernel at the GPU's measured fused-attention rate, `system.compute.Attention`).
    tp_overlap : bool
        Megatron-LM's asynchronous tensor-parallel communication in backward (`plan`): the
        column-parallel linear's input-gradient all-reduce (sequence parallel: the re-gather of
        its input, then the gradient's reduce-scatter) runs beside that linear's matmuls.

    Examples
    --------
    >>> st = Strategy(mp=2, pp=2, dp=2, batch=8, microbatches=2)
    >>> st.name, st.npus, st.microbatch
    ('MP(2)-DP(2)-PP(2)', 8, 2)
    >>> st.rank(mp_i=1, pp_i=0, dp_i=0), st.rank(0, 1, 0), st.rank(0, 0, 1)   # mp fastest, then dp (Megatron)
    (1, 4, 2)
    """

    mp: int = 1
    pp: int = 1
    dp: int = 1
    batch: int = 1  # global minibatch, samples (sequences)
    microbatches: int = 1
    schedule: str = "1f1b"
    zero: int = 0
    reshard_after_forward: bool = True  # zero 3: parameters gathered again before each backward (FSDP)
    dp_bucket: float = 0.0  # bytes; 0 = one collective per layer
    placement: tuple[str, ...] = MEGATRON_ORDER  # fastest-varying first
    iterations: int = 1
    grad_dtype: str | None = None  # default: the model's dtype
    weight_streaming: bool = False  # weights stream in from I/O for forward and backward, gradients out
    input_loading: bool = False  # each iteration's inputs come in through the I/O controllers
    stage_layout: str = "contiguous"  # or "interleaved": layer i on stage i mod pp (workload.pipeline)
    pp_send: str = "p2p"  # or "multicast": MP rank 0 broadcasts a boundary transfer to the next stage's MP group
    input_prefetch: bool = False  # iteration 0's input already loaded; each iteration prefetches the next
    recompute: str = "none"  # none, selective (attention core) or full (each block's forward)
    sequence_parallel: bool = False  # Megatron SP: all-gather + reduce-scatter per part instead of all-reduce
    virtual_stages: int = 1  # model chunks per stage (interleaved 1F1B)
    stage_split: str = "flops"  # or "layers": equal blocks per stage (Megatron)
    optimizer: str = "none"  # or "adam": a memory-bound optimizer step per iteration
    tp_overlap: bool = True  # Megatron's async TP communication in backward (overlaps the column linear's matmuls)
    attention: str = "unfused"  # or "fused": the attention core as one fused kernel (FlashAttention, TE)
    ep: int = 1  # expert-parallel ranks (a divisor of dp and of the model's experts)
    etp: int | None = None  # expert tensor parallelism: None = mp (the only layout modelled)
    cp: int = 1  # context-parallel ranks: each sequence split over them
    cp_comm: str = "p2p"  # or "all_gather": how the K/V of each attention reach every cp rank

    def __post_init__(self):
        for f in ("mp", "pp", "dp", "batch", "microbatches", "iterations"):
            _pos(f"parallelism.{f}" if f in AXES else f"workload.{f}", getattr(self, f))
        if self.schedule not in SCHEDULES:
            raise ConfigError("parallelism.schedule", self.schedule, f"accepted: {', '.join(SCHEDULES)}")
        if self.stage_layout not in STAGE_LAYOUTS:
            raise ConfigError("parallelism.stage_layout", self.stage_layout, f"accepted: {', '.join(STAGE_LAYOUTS)}")
        if self.pp_send not in PP_SENDS:
            raise ConfigError("parallelism.pp_send", self.pp_send, f"accepted: {', '.join(PP_SENDS)}")
        if not isinstance(self.input_prefetch, (bool, np.bool_)):
            raise ConfigError("workload.input_prefetch", self.input_prefetch, "accepted: true or false")
        if isinstance(self.zero, (bool, np.bool_)) or self.zero not in (0, 1, 2, 3):
            raise ConfigError("parallelism.zero", self.zero, ZERO_ACCEPTED)
        if not self.dp_bucket >= 0:
            raise ConfigError("parallelism.dp_bucket", self.dp_bucket, "accepted: a size >= 0 (0 = per layer)")
        object.__setattr__(self, "placement", _placement(self.placement))
        self._check_context()
        if self.grad_dtype is not None and self.grad_dtype not in DTYPES:
            raise ConfigError("parallelism.grad_dtype", self.grad_dtype, "accepted: " + ", ".join(DTYPES))
        for f, names in (("recompute", RECOMPUTES), ("stage_split", STAGE_SPLITS), ("optimizer", OPTIMIZERS),
                         ("attention", ("unfused", "fused"))):
            if getattr(self, f) not in names:
                raise ConfigError(f"parallelism.{f}", getattr(self, f), f"accepted: {', '.join(names)}")
        if not isinstance(self.sequence_parallel, (bool, np.bool_)):
            raise ConfigError("parallelism.sequence_parallel", self.sequence_parallel, "accepted: true or false")
        if self.sequence_parallel and self.mp == 1:
            raise ConfigError("parallelism.sequence_parallel", True, "applies with mp > 1 (it splits the "
                                                                     "tensor-parallel group's work along the sequence)")
        if self.sequence_parallel and self.pp_send == "multicast":
            raise ConfigError("parallelism.pp_send", "multicast", "accepted with sequence_parallel: p2p or "
                                                                 "scatter-gather (each rank holds 1/mp of the activation)")
        _pos("parallelism.virtual_stages", self.virtual_stages)
        if self.virtual_stages > 1:
            need = {"schedule": ("1f1b", self.schedule), "stage_layout": ("contiguous", self.stage_layout),
                    "stage_split": ("layers", self.stage_split)}
            for f, (want, got) in need.items():
                if got != want:
                    raise ConfigError(f"parallelism.{f}", got, f"accepted with virtual_stages > 1: {want}")
            if self.pp < 2 or self.microbatches % self.pp:
                raise ConfigError("parallelism.microbatches", self.microbatches,
                                  f"accepted with virtual_stages > 1: pp >= 2 and a multiple of pp = {self.pp} "
                                  "(Megatron's interleaved schedule)")
        self._check_experts()
        self._check_zero3()
        if self.batch % (self.dp * self.microbatches):
            raise ConfigError("workload.batch", self.batch,
                              f"accepted: a multiple of dp x microbatches = {self.dp * self.microbatches}")

    def _check_context(self) -> None:
        """ConfigError for a cp that is not an integer >= 1, an unknown cp_comm, or cp > 1 with FRED's
        I/O modes or interleaved layout (sequence chunks are not modelled there)."""
        _pos("parallelism.cp", self.cp)
        if self.cp_comm not in CP_COMMS:
            raise ConfigError("parallelism.cp_comm", self.cp_comm, f"accepted: {', '.join(CP_COMMS)}")
        if self.cp > 1 and (self.weight_streaming or self.input_loading or self.stage_layout == "interleaved"):
            raise ConfigError("parallelism.cp", self.cp, "accepted with weight_streaming, input_loading or the "
                                                         "interleaved layout: 1")

    def _check_zero3(self) -> None:
        """ConfigError for a non-boolean `reshard_after_forward`, or zero 3 with weight streaming
        (the weights live off the NPUs) or expert parallelism (expert shards not modelled)."""
        if not isinstance(self.reshard_after_forward, (bool, np.bool_)):
            raise ConfigError("parallelism.reshard_after_forward", self.reshard_after_forward, "accepted: true or false")
        if self.zero == 3 and self.weight_streaming:
            raise ConfigError("parallelism.zero", 3, "accepted with weight_streaming: 0, 1 or 2 (the weights "
                                                     "stream in from the I/O controllers: nothing to gather)")
        if self.zero == 3 and self.ep > 1:
            raise ConfigError("parallelism.zero", 3, "accepted with ep > 1: 0, 1 or 2 (ZeRO-3 of expert "
                                                     "parameters is not modelled)")

    def _check_experts(self) -> None:
        """ConfigError for an ep that is not a divisor of dp x cp, or an etp other than mp."""
        _pos("parallelism.ep", self.ep)
        _pos("parallelism.cp", self.cp)
        if (self.dp * self.cp) % self.ep:
            raise ConfigError("parallelism.ep", self.ep, f"accepted: a divisor of dp x cp = {self.dp * self.cp} "
                                                         "(expert-parallel ranks are taken from the replicas)")
        if self.etp is not None and (isinstance(self.etp, bool) or not isinstance(self.etp, (int, np.integer))
                                     or self.etp != self.mp):
            raise ConfigError("parallelism.etp", self.etp,
                              f"accepted: mp = {self.mp} (each expert split over the tensor-parallel ranks like the "
                              "dense MLP; 1 only with mp = 1)")

    @property
    def expert_tp(self) -> int:
        """Tensor-parallel ranks each expert is split over: `etp`, default mp."""
        return self.mp if self.etp is None else int(self.etp)

    @property
    def npus(self) -> int:
        """NPUs the strategy needs: mp x cp x pp x dp."""
        return self.mp * self.cp * self.pp * self.dp

    @property
    def replicas(self) -> int:
        """Copies of a stage's model shard: dp x cp (gradients are reduced over them, ZeRO shards
        over them, expert-parallel groups are taken from them). Replica r is context rank r mod cp
        of data-parallel replica r div cp."""
        return self.dp * self.cp

    @property
    def microbatch(self) -> int:
        """Samples per microbatch: batch / (dp x microbatches)."""
        return self.batch // (self.dp * self.microbatches)

    @property
    def name(self) -> str:
        """`MP(x)-DP(y)-PP(z)`, with `-CP(c)` when cp > 1."""
        return f"MP({self.mp})-DP({self.dp})-PP({self.pp})" + (f"-CP({self.cp})" if self.cp > 1 else "")

    def rank(self, mp_i: int, pp_i: int, dp_i: int, cp_i: int = 0) -> int:
        """NPU id of one worker, from the rank numbering `placement` sets.

        Parameters
        ----------
        mp_i : int
            Index in the model-parallel group, 0..mp-1.
        pp_i : int
            Pipeline stage, 0..pp-1.
        dp_i : int
            Data-parallel replica, 0..dp-1.
        cp_i : int
            Context-parallel rank, 0..cp-1.

        Returns
        -------
        int
        """
        idx = {"mp": mp_i, "pp": pp_i, "dp": dp_i, "cp": cp_i}
        size = {"mp": self.mp, "pp": self.pp, "dp": self.dp, "cp": self.cp}
        r, stride = 0, 1
        for ax in self.placement:
            r += idx[ax] * stride
            stride *= size[ax]
        return r

    def ranks(self) -> np.ndarray:
        """ranks()[mp_i, pp_i, r] = NPU id, r = cp_i + cp x dp_i the replica (`replicas`)."""
        size = {"mp": self.mp, "pp": self.pp, "dp": self.dp, "cp": self.cp}
        stride, step = {}, 1
        for ax in self.placement:
            stride[ax], step = step, step * size[ax]
        a, b, d, c = np.meshgrid(np.arange(self.mp), np.arange(self.pp), np.arange(self.dp), np.arange(self.cp),
                                 indexing="ij")
        out = a * stride["mp"] + b * stride["pp"] + d * stride["dp"] + c * stride["cp"]
        return out.reshape(self.mp, self.pp, self.dp * self.cp).astype(np.int64)


def _placement(order) -> tuple[str, ...]:
    """The rank order as four axes (fastest first): an order of mp, cp, pp, dp, or of mp, pp, dp
    (cp then follows mp, as Megatron-Core places it); ConfigError otherwise."""
    pl = tuple(order)
    if sorted(pl) == sorted(AXES):
        i = pl.index("mp") + 1
        pl = pl[:i] + ("cp",) + pl[i:]
    if sorted(pl) != sorted(PLACEMENT_AXES):
        raise ConfigError("parallelism.placement", ",".join(map(str, order)),
                          "accepted: an order of mp, cp, pp, dp (or mp, pp, dp), fastest first, e.g. mp,cp,dp,pp")
    return pl
