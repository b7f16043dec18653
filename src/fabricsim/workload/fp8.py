"""FP8 training as Megatron-Core runs it with Transformer Engine (`--fp8-format hybrid`: E4M3 in the
forward, E5M2 for gradients, delayed scaling): `workload.dtype: fp8`. Every FP8 decision of fabricsim
is here; `plan.plan_layers` calls `apply`, the memory model `input_saving` and `weight_copy_bytes`.

What runs in FP8: the GEMMs of a transformer block's linear layers, which Megatron-Core's Transformer
Engine spec builds from TE modules (`TELayerNormColumnParallelLinear`, `TERowParallelLinear`,
`TEGroupedLinear`): QKV, the attention output projection, fc1 (SwiGLU's fused gate-and-up) and fc2,
and a mixture of experts' routed experts (grouped GEMMs) and shared experts. TE runs all three GEMMs
of such a linear in FP8, the forward, the input gradient and the weight gradient (`fp8_gemm` in
`_Linear.forward` and `_Linear.backward`, NVIDIA/TransformerEngine transformer_engine/pytorch/module/
linear.py), with 1-byte operands and a bf16 output: `system.compute.Gemm` with `fp8`, priced at the
GPU's FP8 peak and ceiling (`GpuCompute.fp8_peak_flops`, `fp8_gemm_ceiling`).

What stays bf16: the attention core, fused or not (TE's `DotProductAttention` runs FP8 only with
`fp8_dpa`, off by default), norms, softmax, activations, dropout and residuals, the MoE router's
GEMM (Megatron-Core's `TopKRouter` multiplies by its weight outside TE), the embedding, the logits
GEMM and cross-entropy (Megatron-Core builds the output layer from its own `ColumnParallelLinear`,
not a TE module), and the optimizer step (bf16 model, fp32 main parameters, no loss scaling: 42
bytes per parameter, `plan.optimizer_step`). Activations between layers and all communication
(tensor- and sequence-parallel all-reduce, all-gather, reduce-scatter, pipeline sends, expert
all-to-alls, context-parallel exchanges) are bf16: `Model.dtype_bytes` is 2. Gradients reduced over
the data-parallel replicas are bf16 unless `grad_dtype` says otherwise, decided where every dtype's
are (`plan.plan_layers`). Model FLOPs do not change (a GEMM's FLOPs are its shape's); MFU stays
model FLOPs over the dense bf16 peak (`GpuCompute.peak_flops`, `system.npu.peak`).

The casts TE runs around each FP8 linear (`_casts`), memory-bound kernels of their bytes: forward,
an input's cast-and-transpose (`fp8_cast_transpose_fused`: read e bytes, write the FP8 copy and its
transpose, 1 + 1) unless a norm writes it in FP8 already (QKV and fc1 follow `LayerNormLinear`'s
fused norm: no pass of their own); backward, each FP8 linear's output gradient cast and transposed
the same way (`fp8_cast_transpose_bgrad_fused`, in the part's first backward task, where the first
gradient arrives). Not modelled (the simulated time is optimistic by them): the weights' cast, once
per iteration (TE caches it over the microbatches: under 1 / microbatches of the above), the amax
and scale updates; and the one place TE sends FP8: with sequence parallelism it all-gathers an FP8
linear's input after the cast (`gather_along_first_dim(inputmat, ...)`), which fabricsim prices at
bf16.

Memory (`workload.memory_model`): TE keeps, beside each bf16 weight of an FP8 linear, its FP8 copy
and, on Hopper (whose FP8 GEMMs take only the "TN" layout), the copy's transpose (`weight_fp8`,
`weight_t_fp8`, filled by `fp8_cast_transpose_fused` in `_Linear.forward`): `WEIGHT_COPY_BYTES` = 2
bytes per linear weight element. It saves an FP8 linear's input for the weight gradient in FP8
(`saved_inputmat` or `saved_inputmat_t`, 1 byte), so the bf16 input is freed unless another kernel
keeps it: `input_saving`.
"""

from __future__ import annotations

from dataclasses import fields, replace

from ..errors import ConfigError
from ..system.compute import FP8_BYTES, Gemm, Memory
from .plan_parts import LayerPlan, Part, Step

WEIGHT_COPY_BYTES = 2 * FP8_BYTES  # an FP8 copy of each linear weight and its transpose (Hopper), bytes/element


def apply(plans: list[LayerPlan], model, st) -> list[LayerPlan]:
    """The plans of `model` under its dtype: for fp8, every transformer block's linear-layer GEMMs
    tagged FP8 (module doc) in each of its parts' kernel tuples (forward, backward, their steps);
    other dtypes and other layers unchanged.

    Parameters
    ----------
    plans : list of LayerPlan
        `plan.plan_layers`' plans, one per layer of `model`, in order.
    model : Model
        The model (`Model.dtype`).
    st : Strategy
        The parallelization (named in a refusal).

    Returns
    -------
    list of LayerPlan
        ConfigError naming `dtype` when a block is not priced by its kernels (fp8 needs its GEMMs'
        shapes: heads, key/value heads and ffn divisible by mp).
    """
    if model.dtype != "fp8":
        return plans
    return [_block(plan, model, st) if layer.kind == "transformer_block" else plan
            for layer, plan in zip(model.layers, plans, strict=True)]


def _block(plan: LayerPlan, model, st) -> LayerPlan:
    """A block's plan with its linears' GEMMs in FP8: the router part as it is, the attention part
    without its core (`_attention`), the MLP parts (dense, experts, shared experts) whole."""
    parts = []
    for part in plan.parts:
        if part.fwd_work is None:
            raise ConfigError("dtype", "fp8", f"accepted for {model.name} under mp={st.mp}: fp16, bf16, fp32 "
                                              "(fp8 prices a block's GEMMs by their shapes: heads, kv_heads and "
                                              "ffn divisible by mp)")
        if _is_router(part):
            parts.append(part)
        elif part.name.endswith(".attn"):
            parts.append(_casts(_attention(part, model.dtype_bytes), model.dtype_bytes))
        else:
            parts.append(_casts(_map(part, model.dtype_bytes, lambda name, kernels: _tag(kernels)), model.dtype_bytes))
    return replace(plan, parts=tuple(parts))


CAST_BYTES = 2 + 2 * FP8_BYTES  # per element of a bf16 (e = 2) tensor cast to FP8 and transposed: read e, write 1 + 1


def _casts(part: Part, dtype_bytes: float) -> Part:
    """`part` with Transformer Engine's casts (module doc): its forward with a cast-and-transpose of
    each FP8 GEMM's input that no norm wrote (m k elements), its first backward task with one of
    each FP8 GEMM's output gradient (m n), at (e + 2) bytes per element."""
    from . import kernels as K

    e = dtype_bytes - 2 + CAST_BYTES  # e + 1 + 1
    fwd = (*(part.cp_fwd_steps[0].work if part.cp_fwd_steps else ()), *part.fwd_work)
    prev, inputs, grads = None, 0.0, 0.0
    for k in fwd:
        if isinstance(k, Gemm) and k.fp8:
            normed = isinstance(prev, Memory) and any(w in prev.name for w in ("layer norm", "RMSNorm"))
            inputs += 0.0 if normed else k.count * k.m * k.k
            grads += k.count * k.m * k.n
        prev = k
    if not inputs and not grads:
        return part
    fcast = (Memory(e * inputs, "FP8 cast-transpose (inputs)"),) if inputs else ()
    bcast = Memory(e * grads, "FP8 cast-transpose (output gradients)")
    new = {"fwd_work": part.fwd_work + fcast, "fwd_mem": part.fwd_mem + e * inputs}
    if part.cp_bwd_steps is not None:
        first = part.cp_bwd_steps[0]
        work = (bcast, *first.work)
        new["cp_bwd_steps"] = (Step(first.flops, K.memory_bytes(work, dtype_bytes), work), part.cp_bwd_steps[1])
    elif part.bwd_steps is not None:
        first = part.bwd_steps[0]
        work = (bcast, *first.work)
        new["bwd_steps"] = (Step(first.flops, K.memory_bytes(work, dtype_bytes), work), *part.bwd_steps[1:])
    if part.cp_bwd_steps is None:
        new.update(bwd_work=(bcast, *part.bwd_work), bwd_mem=part.bwd_mem + e * grads)
    return replace(part, **new)


def _is_router(part: Part) -> bool:
    """A mixture of experts' router part (`moe.router_forward`: its softmax and top-k kernel)."""
    return any(isinstance(k, Memory) and "router" in k.name for k in part.fwd_work)


def _attention(part: Part, dtype_bytes: float) -> Part:
    """The attention part with QKV and the output projection in FP8 and the core in bf16. The core
    is where the kernel lists put it: in the forward between the first GEMM (QKV) and the last (the
    projection); in the backward (`kernels.backward`'s order, whole or cut in steps) between the
    projection's two gradient GEMMs, first, and QKV's two, last; with context parallelism a step of
    its own (`cp_fwd_steps[1]`, `cp_bwd_steps[1]`, `workload.context`), the part's other kernels
    then holding no core. Selective recompute's kernels (`rc_work`) are the core."""
    if getattr(part, "cp_fwd_steps", None) is not None:
        return _map(part, dtype_bytes, lambda name, kernels: kernels if name in ("cp_fwd_steps[1]", "cp_bwd_steps[1]",
                                                                                  "rc_work") else _tag(kernels))

    def tag(name: str, kernels: tuple) -> tuple:
        gemms = [i for i, k in enumerate(kernels) if isinstance(k, Gemm)]
        if name == "rc_work":
            return kernels
        if name == "fwd_work" and len(gemms) >= 2:
            return _tag(kernels, range(gemms[0] + 1, gemms[-1]))
        if name in ("bwd_work", "bwd_steps") and len(gemms) >= 4:
            return _tag(kernels, range(gemms[1] + 1, gemms[-2]))
        raise ValueError(f"{part.name}: {name} is not an attention part's kernel list (QKV, core, projection)")

    return _map(part, dtype_bytes, tag)


def _tag(kernels: tuple, keep=()) -> tuple:
    """`kernels` with every GEMM tagged FP8 except those at the positions in `keep`."""
    return tuple(replace(k, fp8=True) if isinstance(k, Gemm) and i not in keep else k for i, k in enumerate(kernels))


def _map(part: Part, dtype_bytes: float, tag) -> Part:
    """`part` with each kernel tuple replaced by `tag(name, kernels)`: its `*_work` fields by name; a
    tuple of `Step`s (`*_steps`) tagged as one list and cut again where it was ("bwd_steps"), or step
    by step ("cp_fwd_steps[i]"); a step's bytes are its new kernels' (`kernels.memory_bytes`), as
    when it was cut."""
    from . import kernels as K

    new = {}
    for f in fields(part):
        value = getattr(part, f.name)
        if value is None or not (f.name.endswith("_work") or f.name.endswith("_steps")):
            continue
        if f.name.endswith("_work"):
            new[f.name] = tag(f.name, value)
            continue
        if f.name == "bwd_steps":
            flat = tag(f.name, sum((s.work for s in value), ()))
            cuts, at = [], 0
            for s in value:
                cuts.append(flat[at:at + len(s.work)])
                at += len(s.work)
        else:
            cuts = [tag(f"{f.name}[{i}]", s.work) for i, s in enumerate(value)]
        new[f.name] = tuple(Step(s.flops, K.memory_bytes(c, dtype_bytes), c) for s, c in zip(value, cuts))
    return replace(part, **new)


def input_saving(s: int, b: int, h: int, t: int, sequence_parallel: bool, recompute: str, dtype_bytes: float, *,
                 ffn: int | None = None, fused: bool = False, mlp: bool = True) -> float:
    """Activation bytes one block stores less per microbatch on one tensor rank with FP8 linears
    (module doc), against `memory_block.activation_bytes_per_block`'s terms at e bytes per element.

    Each FP8 linear saves its input at 1 byte (`FP8_BYTES`) instead of e: the QKV input e sbh [R]
    and fc1 input e sbh [R] (the norms' outputs; the norms keep their own bf16 inputs), fc2's input
    e sbf [S] (the activation's output; GeLU and SwiGLU keep their inputs) and the projection's
    input e sbh [S]. That last one is the core's output: an unfused core frees it (its backward
    reads the scores and V), while a fused kernel keeps it in bf16 for its own backward, so the FP8
    copy adds 1 byte. [R] terms are divided by t with sequence parallelism, [S] by t always. Full
    recompute stores only the block's input (bf16): nothing saved.

    Parameters
    ----------
    s, b, h, t : int
        Sequence length, microbatch (sequences), hidden size, tensor-parallel ranks.
    sequence_parallel : bool
    recompute : str
        "none", "selective" or "full".
    dtype_bytes : float
        e, bytes per activation element (2).
    ffn : int, optional
        The MLP's inner size f (4h when not given).
    fused : bool
        A fused attention core.
    mlp : bool
        The block's MLP is dense (False: a mixture of experts', whose terms `memory_moe` counts and
        whose router input stays bf16: the attention's terms only).

    Returns
    -------
    float
        (e - 1) sbh r + (e - 1 or, fused, -1) sbh / t [+ (e - 1)(sbh r + sbf / t) with `mlp`], bytes,
        with r = 1 / t under sequence parallelism, else 1; 0 under full recompute.

    Examples
    --------
    >>> input_saving(2048, 1, 8192, 8, True, "selective", 2, ffn=28672) == 2048 * (8192 + 8192 + 8192 + 28672) / 8
    True
    """
    if recompute == "full":
        return 0.0
    r = 1 / t if sequence_parallel else 1.0
    f = 4 * h if ffn is None else ffn
    d = dtype_bytes - FP8_BYTES
    attention = d * s * b * h * r + (-FP8_BYTES if fused else d) * s * b * h / t
    return attention + (d * (s * b * h * r + s * b * f / t) if mlp else 0.0)


def weight_copy_bytes(linear_weights: float) -> float:
    """Bytes of Transformer Engine's FP8 copies of `linear_weights` weight elements (module doc):
    `WEIGHT_COPY_BYTES` (2: the FP8 weight and its transpose) per element.

    Parameters
    ----------
    linear_weights : float
        Weight elements of FP8 linears (no biases, norms or router) on one NPU.

    Returns
    -------
    float
        Bytes.
    """
    return WEIGHT_COPY_BYTES * linear_weights


__all__ = ["WEIGHT_COPY_BYTES", "apply", "input_saving", "weight_copy_bytes"]
