"""Parallelization: a zoo model and a strategy MP(x)-DP(y)-PP(z) -> the workload graph.

Strategy (see `Strategy`): tensor/model parallel (Megatron), data parallel (all-reduce per layer
or per bucket; ZeRO-2: reduce-scatter + all-gather), pipeline parallel with microbatches
(contiguous stages run GPipe or 1F1B; or FRED's interleaved weight-streaming layout, see
`workload.pipeline`), a placement order (default MP consecutive first, then PP, then DP, as FRED
places workers), and the number of iterations.

What each NPU runs, per microbatch of `mb = batch / (dp * microbatches)` samples:
- Layers are split into `pp` contiguous stages balanced by forward FLOPs (`stage_layout`
  "contiguous"), or layer i runs on stage i mod pp ("interleaved", `workload.pipeline`).
- A transformer block is two parts, attention (QKV and output projections 4h^2 per token plus
  the score/context matmuls 4*seq^2*h per sequence) and MLP (the rest). With mp > 1 each part's
  FLOPs and weights are divided by mp and an all-reduce of mb*seq*hidden elements over the MP
  group follows each part forward and each part backward (Megatron: 2 + 2 per block). The
  vocabulary-parallel embedding all-reduces its output forward; the head all-reduces its input
  gradient backward. Other layer kinds accept mp = 1 only.
- Backward of a block part is one task (input + weight gradient); other layers run the weight
  gradient, then (ASTRA-sim's order) the input gradient, skipped where a layer has none.
- Pipeline boundaries: each NPU sends its microbatch activation (forward) and the gradient of
  it (backward) to the NPU with the same MP and DP index in the neighbouring stage (`pp_send`
  "p2p"). With `pp_send` "multicast" and mp > 1 (FRED: every NPU of the MP group holds the same
  output), MP rank 0 of each DP replica broadcasts it to the receiving stage's MP group instead:
  one `broadcast` collective, category PP, over (sender, receiver MP ranks 0..mp-1), root rank 0.
- Data parallel: after the last microbatch's backward of a layer, its gradients (fp16 by
  default, params/mp per NPU) are all-reduced over the DP group -- per layer, or per bucket of
  at least `dp_bucket` bytes in backward order (what is left goes after the stage's lowest
  layer, whether that layer has parameters or not). ZeRO-2: a reduce-scatter instead, then an
  all-gather of the updated parameters. The next iteration's forward of a layer waits for it
  (ASTRA-sim's data-parallel loop).
- Compute tasks of an NPU run in program order (control dependencies), which fixes the GPipe
  and 1F1B orders.
- DLRM: MLPs data parallel over all NPUs; embedding tables sharded table-wise over the NPUs; the
  pooled embeddings are exchanged with an all-to-all forward and their gradients backward (MP
  category: the embeddings are model parallel).
- Wafer I/O (topologies with I/O controllers), FRED's execution modes:
  - `weight_streaming`: no weights live on the NPUs. Before a layer's first forward, its weights
    (all MP shards, `params x dtype` bytes) are loaded through the controllers, each MP shard
    multicast to the stage's NPUs of that MP rank; before its first backward they are loaded
    again; after its last backward its gradients are stored (reduced on the way out over the DP
    replicas), replacing the DP collectives (the optimizer runs near the storage). Each stage's
    loads run in order, and so do its stores (links are full duplex); loads prefetch freely:
    on-wafer memory is assumed to hold what is prefetched, so the bound is I/O bandwidth.
  - `input_loading`: each iteration's minibatch (`batch x input_bytes`) is loaded to the first
    stage (each DP replica its own slice, to all its MP ranks); the next iteration's load starts as
    soon as the previous one is done (prefetch), so only the first is exposed.
  - `input_prefetch` (with `input_loading`), FRED's steady state: iteration 0's input is already on
    the wafer (loaded during the unsimulated previous iteration; no io task); iteration i issues
    the load of iteration i+1's input (after the previous input load only) and iteration i+1's
    first forward on stage 0 waits for it; no load follows the last simulated iteration.

Memory traffic per task (for the roofline): forward reads the weights and the input and writes
the output activation; backward reads twice the weights and three activations' worth.

This module is the entry point (`build_training` picks the emitter of a layout, `foldable` says
whether a strategy folds); the task-by-task emitter of contiguous stages is `workload.emitter`.
"""

from __future__ import annotations

from .._gc import gc_paused
from ..errors import ConfigError
from .emitter import _Emitter  # re-exported too: `workload.pipeline` and `workload.megatron` subclass it
from .graph import WorkloadGraph
from .models import Model
from .plan import plan_layers
from .strategy import AXES, PP_SENDS, RECOMPUTES, SCHEDULES, STAGE_LAYOUTS, STAGE_SPLITS, Strategy

_plan_layers = plan_layers  # the name `workload.estimate` and older callers use


def build_training(model: Model, st: Strategy, n_npus: int | None = None, fold: bool = False) -> WorkloadGraph:
    """The workload graph of `st.iterations` iterations of `model` under `st` (module doc).

    Parameters
    ----------
    model : Model
        A zoo model (`workload.models.get_model`) or a transformer by shape.
    st : Strategy
        The parallelization and how it runs.
    n_npus : int, optional
        The network's NPUs; when given, mp x cp x dp x pp must equal it (ConfigError otherwise).
    fold : bool
        Emit one NPU per pipeline stage standing for its mp x dp copies (`engine.fold`): every
        collective and transfer keeps its real group for pricing (`WorkloadGraph.fold`).
        ConfigError where the strategy is not symmetric over them (`foldable` says why).

    Returns
    -------
    WorkloadGraph
        Compute tasks (FLOPs, memory bytes, kernels), collectives, p2p and io transfers (bytes),
        with dependencies; `meta` names the model, the strategy, the microbatch and the stages.

    Examples
    --------
    >>> from fabricsim.vocab import TaskKind
    >>> from fabricsim.workload.models import get_model
    >>> m = get_model("resnet50")
    >>> g = build_training(m, Strategy(dp=4, batch=128))
    >>> g.n_npus, g.meta["microbatch"]
    (4, 32)
    >>> int((g.kind == TaskKind.COLLECTIVE).sum()) == len(m.layers)   # one DP all-reduce per layer
    True
    """
    if n_npus is not None and n_npus != st.npus:
        raise ConfigError("parallelism", st.name,
                          f"accepted: mp x cp x dp x pp equal to the {n_npus} NPUs of the network (this is {st.npus})")
    if fold:
        why = foldable(model, st)
        if why:
            raise ConfigError("fold", "on", f"not symmetric: {why}")
    if "alltoall" in model.notes:
        from .dlrm import build_dlrm

        return build_dlrm(model, st)
    if st.stage_layout == "interleaved":
        from .pipeline import InterleavedEmitter

        emitter = InterleavedEmitter(model, st)
    elif st.virtual_stages > 1:
        from .megatron import VirtualStageEmitter

        emitter = VirtualStageEmitter(model, st, fold)
    else:
        emitter = _Emitter(model, st, fold)
    with gc_paused():  # millions of task rows, all kept
        return emitter.run()


def foldable(model: Model, st: Strategy) -> str:
    """Why the graph of `model` under `st` cannot be folded to one NPU per stage ('' if it can):
    every MP rank and DP replica must run the same tasks, with nothing that singles one out.

    Parameters
    ----------
    model : Model
        The model.
    st : Strategy
        The strategy.

    Returns
    -------
    str
        The reason, or ''.
    """
    if "alltoall" in model.notes:
        return "DLRM's embedding all-to-all"
    if st.stage_layout == "interleaved":
        return "FRED's interleaved layout"
    if st.weight_streaming or st.input_loading:
        return "I/O controllers serve the NPUs in turn"
    if st.pp_send == "multicast" and st.mp > 1:
        return "multicast sends come from MP rank 0"
    if st.mp * st.replicas == 1:
        return "nothing to fold (mp = dp = cp = 1)"
    return ""


__all__ = ["AXES", "PP_SENDS", "RECOMPUTES", "SCHEDULES", "STAGE_LAYOUTS", "STAGE_SPLITS", "Strategy", "build_training",
           "foldable", "plan_layers"]
