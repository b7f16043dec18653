"""Task counts of training graphs, known before the graphs are built.

`fabricsim train` checks them against the `tasks` limit (`fabricsim.limits`) so that a config
asking for a graph too large to build is refused at once, with the count, instead of running
until memory or patience runs out. The counts come from the same per-layer plans the builders
use and cost O(layers) to compute.
"""

from __future__ import annotations

from .models import Model
from .parallelism import Strategy, _plan_layers


def training_tasks(model: Model, st: Strategy, fold: bool = False) -> int:
    """Tasks of `build_training(model, st, fold=fold)`: exact for compute, MP collectives,
    stage-boundary transfers, input loads, optimizer steps and zero 3's parameter gathers; an upper
    bound for data-parallel syncs (one per layer with gradients: exact without buckets) and weight streaming.

    Parameters
    ----------
    model : Model
        A zoo model.
    st : Strategy
        The strategy (all its iterations).
    fold : bool
        Count the folded graph (one NPU per stage, `engine.fold`).

    Returns
    -------
    int
        Tasks of all iterations; ConfigError where `build_training` would refuse the strategy for
        this model (tensor parallelism of a layer kind it is not modelled for).
    """
    n_layers = len(model.layers)
    if "alltoall" in model.notes:  # DLRM (`dlrm.build_dlrm`): embeddings sharded, MLPs data parallel
        n, layers = st.dp, model.layers
        embs = [x for x in layers if x.kind == "embedding"]
        first = layers.index(embs[0]) if embs else 0
        bottom, top = layers[:first], layers[first + len(embs):]
        mlp = [x for x in top if x.kind != "interaction"] + list(bottom)
        per_iteration = (2 * n + 2 * (n > 1) + (len(bottom) + len(top)) * n  # lookups, updates, all-to-alls, fwd
                         + sum(n + (n > 1) + n * (x.bwd_input_flops > 0) for x in mlp)  # wg, all-reduce, ig
                         + n * (len(top) - len([x for x in top if x.kind != "interaction"])))  # interaction ig
        return st.iterations * per_iteration
    mp, dp = (1, 1) if fold else (st.mp, st.replicas)  # replicas: dp x cp
    ep = st.ep
    per_microbatch = with_grads = with_expert_grads = 0
    # zero 3 (`emitter._gather`): per layer with parameters and MP rank, an all-gather before each
    # forward and, resharding, one before each backward
    gathers_per_layer = (1 + bool(st.reshard_after_forward)) * mp if (st.zero == 3 and st.replicas > 1) else 0
    for li, plan in enumerate(_plan_layers(model, st)):
        computes = colls = ep_colls = cp_colls = 0
        for part in plan.parts:
            full = st.recompute == "full" and part.block
            computes += 1 + (1 if part.ig_flops < 0 else 1 + (part.ig_flops > 0 and li != 0)) + (part.rc_flops > 0) + full
            if part.cp_fwd:  # context parallel (`emitter._cp_prefix`): two tasks before the part, forward
                computes += 2 * (2 + full)  # and backward (and the recompute's forward); its K/V exchanges:
                cp_colls += len(part.cp_bwd) + len(part.cp_fwd) * (1 + full)
            if part.bwd_steps is not None:  # the backward in tasks around Megatron's async TP collective:
                computes += 3 if part.bwd_pre else 2  # + input gradient (sequence parallel), weight gradient, layer norm
            if st.mp > 1:
                colls += _part_collectives(part, "mp", full)
            if st.ep > 1:  # a mixture of experts' all-to-alls
                ep_colls += _part_collectives(part, "ep", full)
        # MP collectives: one per MP group (dp of them); all-to-alls: one per EP group (mp dp / ep)
        per_microbatch += mp * dp * computes + dp * colls + (1 if fold else mp * dp // ep) * ep_colls
        per_microbatch += (1 if fold else mp * dp // st.cp) * cp_colls  # one per cp group
        per_microbatch += gathers_per_layer * (plan.params > 0)
        with_grads += plan.grad_bytes > 0 or plan.expert_grad_bytes > 0
        with_expert_grads += plan.expert_grad_bytes > 0 and st.replicas > ep
    if st.stage_layout == "interleaved":
        boundaries = n_layers - 1 if st.pp > 1 else 0
    else:
        boundaries = st.pp * st.virtual_stages - 1
    senders = dp if (st.pp_send == "multicast" and st.mp > 1) else mp * dp
    gathers = dp if (st.pp_send == "scatter-gather" and st.mp > 1 and not st.sequence_parallel) else 0
    per_microbatch += 2 * boundaries * (senders + gathers)
    # DP syncs: one per layer with gradients and MP rank (fewer when buckets gather layers)
    # (expert gradients: one more per layer, MP rank and expert-data-parallel group, `emitter._grads_done`)
    per_sync = 2 if st.zero in (1, 2) else 1  # reduce-scatter + all-gather; one all-reduce (0) or reduce-scatter (3)
    syncs = 0 if (st.replicas == 1 or st.weight_streaming) else (with_grads * mp + with_expert_grads * mp * min(ep, dp)) * per_sync
    streams = 3 * n_layers if st.weight_streaming else 0
    steps = mp * dp * st.pp if st.optimizer != "none" else 0
    loads = (st.iterations - st.input_prefetch) if (st.input_loading and model.input_bytes) else 0
    return st.iterations * (st.microbatches * per_microbatch + syncs + streams + steps) + loads


def _part_collectives(part, over: str, full: bool) -> int:
    """Collectives around one part over the MP group (`over` "mp") or the EP group ("ep") per
    microbatch: its forward's again under full recompute, the backward's pre collective again beside
    an overlapped backward (sequence parallel: the input gathered again)."""
    def n(comms) -> int:
        return sum(c.over == over for c in comms)

    k = n(part.fwd_pre) + n(part.fwd_post) + n(part.bwd_pre) + n(part.bwd_post)
    return k + (n(part.fwd_pre) + n(part.fwd_post)) * full + n(part.bwd_pre) * (part.bwd_steps is not None)


def text_tasks(layers: int, npus: int, iterations: int) -> int:
    """Compute tasks of an ASTRA-sim text workload's graph (its collectives come on top).

    Parameters
    ----------
    layers : int
        Layers of the text workload.
    npus : int
        NPUs that run it.
    iterations : int
        Training iterations.

    Returns
    -------
    int
        Forward, weight-gradient and input-gradient tasks of every NPU and iteration.
    """
    return iterations * npus * max(3 * layers - 1, 0)
