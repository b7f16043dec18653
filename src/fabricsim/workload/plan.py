"""What one NPU runs per microbatch for each layer: its parts, their FLOPs, bytes and kernels, and
the tensor-parallel communication around them (Megatron-LM, Shoeybi et al. 2019; sequence
parallelism and recomputation, Korthikanti et al. 2022).

A transformer block is two parts, attention and MLP. Per microbatch of b sequences, with
tensor-parallel degree t > 1 and S = b x seq x hidden x dtype bytes (one full activation):
- without sequence parallelism each part's forward ends with an all-reduce of S over the MP group
  and so does each part's backward (Megatron's f and g operators: 2 + 2 per block);
- with sequence parallelism each part starts with an all-gather of S and ends with a
  reduce-scatter of S, forward and backward (4 all-gathers + 4 reduce-scatters per block). A ring
  all-reduce of S sends 2 (t-1)/t S per rank, an all-gather plus a reduce-scatter (t-1)/t S each:
  the same bytes, split in two. LayerNorm, dropout and residual work on seq/t tokens.
- The vocabulary-parallel embedding ends with an all-reduce of its output (sequence parallel: a
  reduce-scatter; its backward then starts with an all-gather); the head all-reduces the gradient
  of its input (sequence parallel: all-gathers its input forward, reduce-scatters backward).
- Backward, tensor parallel (`Strategy.tp_overlap`, Megatron-LM's asynchronous TP communication):
  the part's backward runs as four tasks (`kernels.backward_overlap`): up to the column-parallel
  linear, its input-gradient matmul, its weight-gradient matmul, the layer norm (without sequence
  parallelism the first two are one task: nothing starts between them). The input
  gradient's all-reduce (sequence parallel: reduce-scatter) starts after the input-gradient matmul
  and runs beside the weight-gradient matmul; the layer norm waits for both. With sequence
  parallelism the linear's input is all-gathered again (Megatron keeps only its 1/t shard) beside
  the input-gradient matmul. Without `tp_overlap` the part's backward is one task followed by its
  collective.
- Recompute "selective": before the attention part's backward, its attention core (score and
  context matmuls, softmax, dropout: 4 x seq^2 x hidden x b / t FLOPs) runs again. "full": before a
  block's backward, its whole forward runs again, with its tensor-parallel communication. These
  tasks have phase "recompute": hardware FLOPs, not model FLOPs.

Each part carries FLOPs and memory bytes (the roofline's inputs, as before) and, when the model's
shape is known (heads, ffn, vocab), its kernels by shape (`workload.kernels`), which an NPU with a
compute model (`system.compute`) prices instead of the roofline. A transformer by shape
(`Model.shape`, `workload.shapes.TransformerShape`) gives the kernels its key/value heads, MLP
activation, norm, biases and positions; the attention part's FLOPs are then its linear layers'
2 s h (h + 2 k h / a) + 2 s h^2 plus the scores and context 4 s^2 h, the MLP part the rest of the
block (its matrices, and all biases and norms, as in GPT's split: 2 s 4 h^2 + 4 s^2 h for
attention), so the two add up to the block's `fwd_flops`.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ConfigError
from . import context
from .models import DTYPES, Model
from .plan_parts import Comm, LayerPlan, Part, Step  # re-exported: their home is plan_parts
from .strategy import Strategy


def _tp_comms(st: Strategy, size: float) -> tuple[tuple[Comm, ...], tuple[Comm, ...]]:
    """(before, after) a block part, forward or backward: nothing at t = 1; an all-reduce after;
    or, sequence parallel, an all-gather before and a reduce-scatter after."""
    if st.mp == 1 or size <= 0:
        return (), ()
    if st.sequence_parallel:
        return (Comm("all-gather", size),), (Comm("reduce-scatter", size),)
    return (), (Comm("all-reduce", size),)


def by_shape(model: Model, mp: int) -> bool:
    """Whether `model` runs Megatron-LM's layout under tensor degree `mp`: a transformer whose shape is
    known and whose heads, key/value heads (`Model.shape`, when given) and ffn `mp` divides. Then its
    kernels (`workload.kernels`) and its memory (`workload.memory`) are modelled by shape; other
    splits keep the roofline on FLOPs, as before shapes were known.

    Parameters
    ----------
    model : Model
        The model.
    mp : int
        Tensor-parallel degree.

    Returns
    -------
    bool
    """
    return (model.heads is not None and model.ffn is not None and model.vocab is not None and bool(model.blocks())
            and model.heads % mp == 0 and model.ffn % mp == 0
            and (model.shape is None or model.shape.kv_heads % mp == 0))


def _check_kv_heads(model: Model, mp: int) -> None:
    """ConfigError when `model` has grouped-query attention (fewer key/value heads than heads) and
    `mp` does not divide its key/value heads: Megatron-Core splits the query groups over the
    tensor-parallel ranks. (Multi-head shapes whose heads `mp` does not divide keep the roofline.)"""
    shape = model.shape
    if shape is not None and shape.kv_heads < shape.heads and shape.kv_heads % mp:
        raise ConfigError("parallelism.mp", mp, f"accepted: a divisor of kv_heads={shape.kv_heads} "
                                                f"(the query groups of {model.name} split over tensor-parallel ranks)")


def _shape_keys(model: Model) -> tuple[dict, dict]:
    """(attention, MLP) keyword arguments of `workload.kernels` from `model.shape` (none without:
    the GPT defaults)."""
    shape = model.shape
    if shape is None:
        return {}, {}
    return ({"kv_heads": shape.kv_heads, "bias": shape.bias, "norm": shape.norm, "rope": shape.position == "rope"},
            {"act": shape.ffn_act, "bias": shape.bias, "norm": shape.norm})


def plan_layers(model: Model, st: Strategy) -> list[LayerPlan]:
    """Every layer's plan under `st` (module doc).

    Parameters
    ----------
    model : Model
        A zoo model or a transformer by shape.
    st : Strategy
        The parallelization (mp, microbatch, recompute, sequence parallelism).

    Returns
    -------
    list of LayerPlan
        In layer order; ConfigError for tensor parallelism of a layer kind it is not modelled for,
        a degree not dividing a grouped-query model's key/value heads, or recompute / sequence
        parallelism of a model without transformer blocks.
    """
    mb, mp, B = st.microbatch, st.mp, model.dtype_bytes
    gB = DTYPES[st.grad_dtype] if st.grad_dtype else B
    _check_kv_heads(model, mp)
    from . import moe

    moe.check(model.shape, st.ep, model.name)
    shaped = by_shape(model, mp)
    context.check(model, st, shaped)
    cp = st.cp  # each rank holds seq / cp tokens of every sequence (`workload.context`)
    if (st.recompute != "none" or st.sequence_parallel) and not model.blocks():
        field = "parallelism.recompute" if st.recompute != "none" else "parallelism.sequence_parallel"
        raise ConfigError(field, st.recompute if st.recompute != "none" else True,
                          f"applies to transformer models ({model.name} has no transformer blocks)")
    if shaped:
        from . import kernels as K
    plans = []
    n_block = 0
    blocks: dict = {}  # a block's costs and MoE flag -> its plan: equal blocks share one (kernels included)
    for layer in model.layers:
        act = layer.activation_elems * mb * B / cp
        if layer.kind == "transformer_block":
            key = (replace(layer, name=""), model.shape is not None and model.shape.is_moe(n_block))
            seen = blocks.get(key)
            if seen is None:
                seen = blocks[key] = _plan_block(model, st, layer, act, gB, K if shaped else None, n_block)
            plans.append(_renamed(seen, layer.name))
            n_block += 1
            continue
        shard = mp if layer.kind in ("embedding", "lm_head") and model.hidden is not None else 1
        if mp > 1 and shard == 1:
            raise ConfigError("parallelism.mp", mp, f"accepted: 1 for layer kind {layer.kind!r} of {model.name} "
                                                    "(tensor parallelism is modelled for transformer models)")
        S = model.seq * model.hidden * mb * B / cp if model.hidden else 0.0
        pre_f = post_f = pre_b = post_b = ()
        if mp > 1 and layer.kind == "embedding":
            post_f = (Comm("reduce-scatter" if st.sequence_parallel else "all-reduce", act),)
            pre_b = (Comm("all-gather", act),) if st.sequence_parallel else ()
        if mp > 1 and layer.kind == "lm_head":
            pre_f = (Comm("all-gather", S),) if st.sequence_parallel else ()
            post_b = (Comm("reduce-scatter" if st.sequence_parallel else "all-reduce", S),)
        fwd_work = wg_work = ig_work = None
        if shaped and layer.kind == "embedding":
            rope = model.shape is not None and model.shape.position == "rope"
            fwd_work = K.embedding_forward(mb, model.seq // cp, model.hidden, mp, st.sequence_parallel, B, rope=rope)
            wg_work = K.backward_split(fwd_work)[1]  # the gradient rows added into the table
        elif shaped and layer.kind == "lm_head":
            # Megatron-LM pads the vocabulary to a multiple of 128 x t (make_vocab_size_divisible_by)
            padded = -(-model.vocab // (128 * mp)) * 128 * mp
            # untied embeddings: the same logits GEMM against an output layer of its own
            norm = model.shape.norm if model.shape is not None else "layernorm"
            fwd_work = K.head_forward(mb, model.seq // cp, model.hidden, padded, mp, B, sp=st.sequence_parallel,
                                      norm=norm)
            wg_work, ig_work = K.backward_split(fwd_work)
        w, a_el, n = layer.weight_elems / shard, layer.activation_elems * mb / cp, mb / (shard * cp)
        plans.append(LayerPlan(layer.name, (Part(
            layer.name, layer.fwd_flops * n, (w + 2 * a_el) * B, layer.bwd_weight_flops * n, (2 * w + 2 * a_el) * B,
            layer.bwd_input_flops * n, (w + 2 * a_el) * B,
            pre_f, post_f, pre_b, post_b, fwd_work, wg_work, ig_work),),
            layer.params / shard * gB, act, layer.params / shard))
    from .fp8 import apply as precision_form  # dtype fp8: the blocks' linear GEMMs in FP8 (workload.fp8)

    return precision_form(plans, model, st)


def _renamed(plan: LayerPlan, name: str) -> LayerPlan:
    """`plan` (a block's) for the block named `name`: its parts named `<name>.attn`, `<name>.mlp`."""
    if plan.name == name:
        return plan
    parts = tuple(replace(p, name=name + p.name[len(plan.name):]) for p in plan.parts)
    return replace(plan, name=name, parts=parts)


def _plan_block(model: Model, st: Strategy, layer, act: float, gB: int, K, index: int = -1) -> LayerPlan:
    """A transformer block's attention and MLP parts (module doc); block `index` (0-based) of a
    mixture of experts (`TransformerShape.is_moe`): its MLP as `workload.moe.mlp_parts`. With
    context parallelism every figure is one rank's s / cp tokens' and the attention part exchanges
    K/V over the cp group (`_context_part`)."""
    moe = model.shape is not None and model.shape.is_moe(index)
    mb, mp, B, cp = st.microbatch, st.mp, model.dtype_bytes, st.cp
    h, s = model.hidden, model.seq
    linear = 4 * h * h if model.shape is None else h * model.shape.qkv_out + h * h  # QKV and output weights
    attn = min(2.0 * s * linear + 4.0 * s * s * h, layer.fwd_flops)
    fr = (attn / layer.fwd_flops, 1 - attn / layer.fwd_flops) if layer.fwd_flops else (0.5, 0.5)
    pre, post = _tp_comms(st, act)
    works: dict = {}
    a_kw, m_kw = _shape_keys(model)
    if K is not None:
        sp, fused = st.sequence_parallel, st.attention == "fused"
        if cp > 1:
            a_cut = context.attention_cut(K, mb, s, h, model.heads, mp, cp, sp, B, fused, **a_kw)
            a_f = sum(a_cut, ())
        else:
            a_f = K.attention_forward(mb, s, h, model.heads, mp, sp, B, fused=fused, **a_kw)
        m_f = K.mlp_forward(mb, s // cp, h, model.ffn, mp, sp, B, **m_kw)
        works = {"attn": (a_f, K.backward(a_f)), "mlp": (m_f, K.backward(m_f))}
    parts = []
    for nm, f in zip(("attn", "mlp"), fr):
        if moe and nm == "mlp":
            from .moe import mlp_parts

            more, dense, expert = mlp_parts(model, st, layer, (layer.fwd_flops - attn) / cp, pre, post, K)
            if st.ep == 1:  # the expert-data-parallel group is the data-parallel group: one sync
                return LayerPlan(layer.name, (*parts, *more), (dense + expert) * gB, act, dense + expert)
            return LayerPlan(layer.name, (*parts, *more), dense * gB, act, dense + expert, expert * gB)
        w = linear if moe else layer.weight_elems * f  # a MoE block's attention reads its own weights only
        rc_flops = rc_mem = 0.0
        rc_work = None
        if st.recompute == "selective" and nm == "attn":
            heads = model.heads or 1
            rc_flops = 4.0 * s * s * h * mb / mp  # score and context matmuls
            rc_mem = 4.0 * mb * heads / mp * s * s * B  # scores written, softmax read + written, dropout written
            rc_work = (K.selective_recompute(mb, s, h, model.heads, mp, B, st.attention == "fused",
                                             kv_heads=a_kw.get("kv_heads")) if K is not None else None)
        fw, bw = works.get(nm, (None, None))
        a_el = layer.activation_elems * mb / cp
        fwd_flops, bwd_flops = layer.fwd_flops * f * mb / (mp * cp), layer.bwd_flops * f * mb / (mp * cp)
        part = Part(f"{layer.name}.{nm}", fwd_flops, (w / mp + 2 * a_el) * B, bwd_flops, (2 * w / mp + 3 * a_el) * B,
                    -1.0, 0.0, pre, post, pre, post, fw, bw, None, rc_flops, rc_mem, rc_work, block=True,
                    bwd_steps=_overlap_steps(K, fw, bwd_flops, B) if (fw is not None and st.tp_overlap and mp > 1)
                    else None)
        if cp > 1 and nm == "attn":
            part = _context_part(model, st, part, a_cut, K)
        parts.append(part)
    return LayerPlan(layer.name, tuple(parts), layer.params / mp * gB, act, layer.params / mp)


def _context_part(model: Model, st: Strategy, part: Part, cut: tuple, K) -> Part:
    """The attention part under context parallelism (`workload.context`): its forward up to and with
    the core (`cp_fwd_steps`) and its backward down to and with the core's (`cp_bwd_steps`) run
    before the K/V exchanges are waited for; the part's own forward is then the output projection
    and dropout-add, its own backward what lies before the core (the QKV projection's backward, with
    Megatron's asynchronous TP cut when `bwd_steps`)."""
    B = model.dtype_bytes
    head, core, tail = cut
    fa, fc, ft = context.split(K, cut, part.fwd_flops, B)
    bt, bc, bh = context.split(K, (K.backward(tail), K.backward(core), K.backward(head)), part.bwd_flops, B)
    steps = part.bwd_steps
    if steps is not None:  # the asynchronous TP cut of what is left: QKV's input and weight gradients, the norm
        main = steps[0].work[len(bt.work) + len(bc.work):]
        rest = context.split(K, (main, steps[1].work, steps[2].work, steps[3].work), bh.flops, B)
        steps = rest
    fwd, bwd = context.comms(context.kv_bytes(st.microbatch, model.seq, model, st.mp, B))
    return replace(part, fwd_flops=ft.flops, fwd_mem=ft.mem, fwd_work=ft.work, bwd_flops=bh.flops, bwd_mem=bh.mem,
                   bwd_work=bh.work, bwd_steps=steps, cp_fwd=fwd, cp_bwd=bwd, cp_fwd_steps=(fa, fc),
                   cp_bwd_steps=(bt, bc))


def _overlap_steps(K, fwd_work: tuple, flops: float, dtype_bytes: float) -> tuple[Step, ...]:
    """A block part's backward as the four tasks Megatron's asynchronous TP communication runs
    beside (`kernels.backward_overlap`): the part's FLOPs shared as its kernels' FLOPs are (so the
    model FLOPs stay the part's), each task's bytes its kernels' own (a roofline NPU then prices the
    layer norm's backward, a task of its own, by its bytes)."""
    cuts = K.backward_overlap(fwd_work)
    f_all = K.flops(sum(cuts, ())) or 1.0
    return tuple(Step(flops * K.flops(c) / f_all, K.memory_bytes(c, dtype_bytes), c) for c in cuts)


def layer_stages(model: Model, pp: int, chunks: int = 1) -> list[range]:
    """Megatron-LM's split: the transformer blocks in pp x chunks equal contiguous runs, the layers
    before the first block (the embedding) with the first run, those after the last (the head)
    with the last.

    Parameters
    ----------
    model : Model
        A model with transformer blocks.
    pp : int
        Pipeline stages.
    chunks : int
        Model chunks per stage (virtual stages); chunk c runs on stage c mod pp.

    Returns
    -------
    list of range
        Layer ranges of the pp x chunks chunks in model order; ConfigError when the blocks do not
        split evenly.
    """
    kinds = [layer.kind for layer in model.layers]
    blocks = [i for i, k in enumerate(kinds) if k == "transformer_block"]
    n = pp * chunks
    if not blocks or len(blocks) % n:
        what = "pp" if chunks == 1 else "pp x virtual_stages"
        raise ConfigError("parallelism.stage_split", "layers",
                          f"accepted when the {len(blocks)} transformer blocks of {model.name} split evenly over "
                          f"{what} = {n}; or stage_split: flops")
    per = len(blocks) // n
    cuts = [blocks[0] + per * c for c in range(n)] + [len(kinds)]
    cuts[0] = 0
    return [range(a, b) for a, b in zip(cuts[:-1], cuts[1:])]


def optimizer_step(params: float, dtype: str) -> tuple:
    """The kernels of Megatron-LM's mixed-precision Adam step over `params` parameters
    (`system.optimizer.megatron_optimizer_step`; fp16 runs its loss-scaling pass).

    Parameters
    ----------
    params : float
        Parameters this NPU updates.
    dtype : str
        The model's dtype ("fp16" scales the loss).

    Returns
    -------
    tuple of Memory
        In order; their bytes sum to 50 per parameter in fp16, 42 otherwise.
    """
    from ..system.optimizer import megatron_optimizer_step

    return megatron_optimizer_step(params, loss_scaling=dtype == "fp16")


__all__ = ["Comm", "LayerPlan", "Part", "Step", "by_shape", "layer_stages", "optimizer_step", "plan_layers"]
