"""The memory model of Megatron-style 3D-parallel transformer training: per transformer block and per
pipeline stage.

Per NPU of stage i (all in bytes): weights, gradients and optimizer states of the stage's
parameters (sharded over the `dp` replicas by the ZeRO stage), plus the activations of the
microbatches in flight at the stage's peak, after Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models" (arXiv 2205.05198), Section 4 and Table 2: one block's
parameters (`block_params`) and stored activations (`activation_bytes_per_block`), summed per stage
over its blocks and the microbatches the pipeline schedule holds (`stage_memory`).

The architecture follows `workload.shapes.TransformerShape`: key/value heads k (grouped-query
attention), the MLP activation (gelu: two matrices; swiglu: three), the norm (layernorm or
rmsnorm), biases, tied or untied embeddings and learned or rotary positions; each function takes
them as keywords whose defaults are GPT's (k = a, gelu, layernorm, biases, tied, learned), which
give the paper's numbers exactly. `shape_arguments` reads them off a model (`Model.shape`).

`workload.memory` re-exports all of this and searches the changes of a strategy that fit a
capacity; the model lives apart so that its equations are read, and tested, on their own.

Not modelled: workspace buffers (cuBLAS, NCCL, communication buckets), allocator fragmentation,
the one block whose activations are rebuilt at a time under recomputation, ZeRO-3's gathered
layer, the gradient of the activation in flight between stages, Megatron's padding of the
vocabulary to a multiple of 128 t, and the norms' statistics (2sb per LayerNorm, Section 4.1; sb
per RMSNorm).

Per stage (`stage_memory`):

Parameters: each stage's blocks (`block_params`); the word embedding, ceil(V/t) rows of h per
rank (vocabulary-parallel), and learned positions, s h replicated on every tensor rank as
Megatron-LM keeps them (none with rotary positions), on stage 0; on the last stage the final
norm (2h layernorm, h rmsnorm) and the output head's ceil(V/t) x h: its own when untied, the
tied embedding's copy with pp > 1 (none with p = 1: the head reuses the embedding). Weights
take `dtype_bytes`, gradients `grad_bytes` and optimizer states `optimizer_bytes` per
parameter; ZeRO divides the optimizer states by dp from stage 1, gradients from 2, weights at 3,
and a mixture of experts' routed experts by the expert-data-parallel d t / (ep etp) instead.
The stages hold consecutive blocks in model order; a MoE block's MLP is `workload.memory_moe`'s.
With `fp8` (`workload.fp8`) the weights add Transformer Engine's FP8 copy and its transpose, 2 bytes
per weight element of the blocks' FP8 linears (not biases, norms, router, embedding or head).

Activations (stage i): c_i chunk-microbatches in flight, each storing its chunk's blocks
(the stage's blocks / v) times `activation_bytes_per_block`. c_i is m with GPipe,
min(p - i, m) with 1F1B, and with interleaved 1F1B (v > 1, Megatron-LM's schedule)
min(2(p - i - 1) + (v - 1)p + 1, m v) (m v when m = p): with m > p stage 0 holds p v + p - 1 chunks,
p (1 + (p - 1)/(p v)) stage-microbatches, the factor of Section 4.2.3 (Eq. 5), where with
v = 1 the first stage holds p microbatches of L/p blocks, sbhL/t(34 + 5as/h) in all.
Section 4.3 adds the embedding's dropout mask (with `dropout`), sbh/t per microbatch in flight
through stage 0's first chunk (sbhp/t on the first stage; sbh without sequence parallelism),
and on the last stage, per microbatch in flight through its last chunk, the final norm's and
output layer's inputs (2e sbh/t each; not split without sequence parallelism) and the fp32
logits 4sbV/t: 4sbh/t(1 + V/h). The paper counts these on the first stage only when p = 1;
here they sit on the stage that holds them. Recomputation leaves them stored.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from ..errors import ConfigError
from .memory_block import RECOMPUTE, _choice, _int, activation_bytes_per_block, block_params  # noqa: F401 (re-exported)
from .memory_moe import checked_moe, moe_block_memory, stage_moe_blocks
from .shapes import FFN_ACTS, NORMS, POSITIONS

SCHEDULES = ("gpipe", "1f1b")


@dataclass(frozen=True)
class StageMemory:
    """Memory of one NPU of a pipeline stage at its peak.

    Parameters
    ----------
    stage : int
        Pipeline stage, 0-based.
    params : int
        Parameters held by one NPU of the stage (its tensor-parallel shard, before ZeRO).
    weights, gradients, optimizer : float
        Bytes of weights (with `fp8` their FP8 copies too), gradients and optimizer states, after
        ZeRO sharding.
    activations : float
        Bytes of activations stored at the peak.
    in_flight : int
        Microbatch-chunks whose activations are stored at the peak (microbatches when
        `virtual_stages` is 1).
    total : float
        Peak bytes: weights + gradients + optimizer + activations.
    expert_params : int
        Of `params`, the routed experts' (sharded by ZeRO over the expert-data-parallel group).
    """

    stage: int
    params: int
    weights: float
    gradients: float
    optimizer: float
    activations: float
    in_flight: int
    total: float
    expert_params: int = 0


def shape_arguments(model) -> dict:
    """`stage_memory`'s architecture keywords for a transformer by shape.

    Parameters
    ----------
    model : Model or TransformerShape
        A model built by `workload.shapes.transformer` (its `shape`), or the shape itself.

    Returns
    -------
    dict
        layers, hidden, heads, seq, vocab, ffn, kv_heads, ffn_act, norm, bias, tied_embeddings and
        position (and, for a model, dtype_bytes, bytes per element, and fp8=True with dtype fp8);
        for a mixture of experts (experts > 0) also experts, top_k, shared_experts, expert_ffn,
        moe_layers, capacity_factor and moe_imbalance. ConfigError for a model without a shape.

    Examples
    --------
    >>> from fabricsim.workload.shapes import transformer
    >>> model = transformer("tiny", 2, 64, 4, 32, 100, kv_heads=2, ffn_act="swiglu")
    >>> kw = shape_arguments(model)
    >>> kw["kv_heads"], kw["ffn_act"], kw["dtype_bytes"], stage_memory(**kw)[0].params, model.params
    (2, 'swiglu', 2, 133504, 133504)
    """
    shape = getattr(model, "shape", model)
    if shape is None or not hasattr(shape, "kv_heads"):
        raise ConfigError("model", getattr(model, "name", model), "accepted: a transformer by shape")
    out = {k: getattr(shape, k) for k in ("layers", "hidden", "heads", "seq", "vocab", "ffn", "kv_heads", "ffn_act",
                                          "norm", "bias", "tied_embeddings", "position")}
    if getattr(shape, "experts", 0):
        out.update({k: getattr(shape, k) for k in ("experts", "top_k", "shared_experts", "expert_ffn", "moe_layers",
                                                    "capacity_factor", "moe_imbalance")})
    if shape is not model:
        out["dtype_bytes"] = model.dtype_bytes
        if model.dtype == "fp8":  # Transformer Engine's FP8 linears (workload.fp8)
            out["fp8"] = True
    return out


def _peak_chunks(stage: int, p: int, m: int, v: int, schedule: str) -> int:
    """Microbatch-chunks started and not yet finished backward at the stage's peak."""
    if schedule == "gpipe":
        return m  # every forward runs before the first backward
    if v == 1:
        return min(p - stage, m)  # 1F1B: p - i - 1 warmup forwards, then one forward before each backward
    if m == p:
        return m * v  # Megatron-LM runs every forward first when m equals p
    # Megatron-LM's interleaved warmup, plus the steady state's forward before its first backward
    return min((p - stage - 1) * 2 + (v - 1) * p + 1, m * v)


def _chunk_share(started: int, p: int, v: int, chunk: int) -> int:
    """Of the first `started` chunk-forwards, those of `chunk`."""
    # of the first `started` chunk-forwards, those of `chunk`: Megatron-LM's interleaved order runs
    # p microbatches through chunk 0, then the same p through chunk 1, and so on
    return sum(1 for k in range(started) if (k // p) % v == chunk)


def stage_memory(*, layers: int, hidden: int, heads: int, seq: int, vocab: int, ffn: int | None = None,
                 dtype_bytes: int = 2, tp: int = 1, pp: int = 1, dp: int = 1, microbatch: int = 1,
                 microbatches: int = 1, schedule: str = "1f1b", virtual_stages: int = 1,
                 recompute: str = "none", sequence_parallel: bool = False, zero: int = 0,
                 stage_blocks: list[int] | None = None, grad_bytes: int = 4, optimizer_bytes: int = 12,
                 kv_heads: int | None = None, ffn_act: str = "gelu", norm: str = "layernorm", bias: bool = True,
                 tied_embeddings: bool = True, position: str = "learned", dropout: bool = True,
                 experts: int = 0, top_k: int = 2, shared_experts: int = 0, expert_ffn: int | None = None,
                 moe_layers=None, capacity_factor: float = 0.0, moe_imbalance: float = 1.0, ep: int = 1,
                 etp: int | None = None, cp: int = 1, fused_attention: bool = False,
                 fp8: bool = False) -> tuple[StageMemory, ...]:
    """Peak memory of one NPU of each pipeline stage (module doc, "Per stage"; Korthikanti et al. Section 4).

    Parameters
    ----------
    layers, hidden, heads, seq, vocab : int
        Transformer blocks L, hidden size h, attention heads a, sequence length s (tokens), vocabulary V.
    ffn : int, optional
        MLP inner size (4h when not given).
    tp, pp, dp : int
        Tensor-parallel ranks t (dividing the key/value heads), pipeline stages p, data-parallel replicas d.
    microbatch, microbatches : int
        Sequences per microbatch b; microbatches per iteration per pipeline m.
    schedule, recompute : str
        "gpipe" or "1f1b"; "none", "selective" (attention scores) or "full" (each block's input only).
    virtual_stages : int
        Model chunks per stage v for Megatron-LM's interleaved 1F1B (1: plain; needs "1f1b",
        pp > 1, m >= p and each stage's blocks a multiple of v).
    sequence_parallel : bool
        Megatron sequence parallelism.
    zero : int
        ZeRO stage over the dp replicas, 0 to 3.
    stage_blocks : list of int, optional
        Transformer blocks on each of the pp stages, summing to L (L/p each when not given).
    dtype_bytes, grad_bytes, optimizer_bytes : int
        Bytes per weight and stored activation element (2: fp16/bf16), per gradient (4: Megatron's
        fp32 main gradients), per parameter of optimizer states (12: fp32 master, Adam's 2 moments).
    kv_heads, ffn_act, norm, bias, tied_embeddings, position, dropout
        The architecture as `TransformerShape` states it (`shape_arguments`), and dropout masks
        stored (Llama trains without): GPT's by default (kv_heads = heads, gelu, layernorm, biases,
        tied embeddings, learned positions, dropout).
    experts, top_k, shared_experts, expert_ffn, moe_layers, capacity_factor, moe_imbalance, ep, etp
        A mixture of experts as `TransformerShape` states it (experts 0: dense; moe_layers None: all
        blocks; expert_ffn None: ffn), its expert-parallel ranks (from the dp x cp replicas) and
        expert-tensor-parallel ranks (None: tp); `workload.memory_moe`.
    cp, fused_attention, fp8 : int, bool, bool
        Context-parallel ranks (`workload.context`: every activation term / cp, ZeRO over dp x cp), a
        fused attention kernel (no scores stored: `activation_bytes_per_block`'s `fused`), Transformer
        Engine's FP8 linears (`workload.fp8`: 2 bytes of FP8 copies per linear weight in `weights`,
        their saved inputs at 1 byte, a MoE block's experts' at e bytes still).

    Returns
    -------
    tuple of StageMemory
        One per stage, stage 0 first.

    Examples
    --------
    >>> st = stage_memory(layers=96, hidden=12288, heads=96, seq=2048, vocab=51200, tp=8, pp=8,
    ...                   microbatches=64, recompute="selective", sequence_parallel=True)
    >>> st[0].in_flight, st[0].activations == 2048 * 12288 * 96 / 8 * (34 + 8 / 96)
    (8, True)
    """
    z = _checked_sizes(layers, hidden, heads, seq, vocab, tp, pp, dp * _int("cp", cp), microbatch, microbatches, virtual_stages,
                       dtype_bytes, grad_bytes, optimizer_bytes, ffn, kv_heads)
    arch = _Arch(ffn_act, norm, bias, tied_embeddings, position, dropout, fused_attention)
    _check_choices(z, arch, schedule, recompute, sequence_parallel, zero)
    blocks = _checked_stage_blocks(z, stage_blocks)
    moe = checked_moe(layers=z.L, ffn=z.f, tp=z.t, dp=z.d, experts=experts, top_k=top_k, shared_experts=shared_experts,
                      expert_ffn=expert_ffn, moe_layers=moe_layers, capacity_factor=capacity_factor,
                      moe_imbalance=moe_imbalance, ep=ep, etp=etp)
    per_block = activation_bytes_per_block(z.s, z.b, z.h, z.a, z.t, sequence_parallel, recompute, z.f, z.e,
                                           kv_heads=z.k, ffn_act=ffn_act, dropout=dropout, fused=fused_attention,
                                           fp8=fp8)
    moe_block = moe_block_memory(z, arch, moe, sequence_parallel, recompute)
    copies = (0.0, 0.0, 0.0)
    if fp8:
        copies, moe_block = _fp8_terms(z, arch, moe, moe_block, sequence_parallel, recompute)
    return tuple(_per_rank_tokens(_stage(z, arch, i, blocks[i], per_block, schedule, sequence_parallel, zero, n_moe,
                                         moe_block, copies), cp) for i, n_moe in enumerate(stage_moe_blocks(blocks, moe)))


def _per_rank_tokens(m: StageMemory, cp: int) -> StageMemory:
    """`m` with context parallelism: each rank stores the activations of s / cp tokens (the scores of
    s / cp queries against s keys): 1 / cp of every term."""
    return m if cp == 1 else replace(m, activations=m.activations / cp, total=m.total - m.activations * (1 - 1 / cp))


class _Sizes(NamedTuple):
    """`stage_memory`'s checked sizes, by the paper's letters (its Parameters section); k: key/value heads."""

    L: int
    h: int
    a: int
    s: int
    V: int
    t: int
    p: int
    d: int
    b: int
    m: int
    v: int
    e: int
    gb: int
    ob: int
    f: int
    k: int


class _Arch(NamedTuple):
    """`stage_memory`'s architecture choices other than sizes (its Parameters section)."""

    ffn_act: str
    norm: str
    bias: bool
    tied: bool
    position: str
    dropout: bool
    fused: bool = False  # fused attention: no scores stored


def _checked_sizes(layers, hidden, heads, seq, vocab, tp, pp, dp, microbatch, microbatches, virtual_stages,
                   dtype_bytes, grad_bytes, optimizer_bytes, ffn, kv_heads) -> _Sizes:
    """The sizes as `_Sizes`, each an integer >= 1 (bytes of gradients and optimizer states >= 0)."""
    L, h, a, s, V = (_int(k, x) for k, x in
                     (("layers", layers), ("hidden", hidden), ("heads", heads), ("seq", seq), ("vocab", vocab)))
    t, p, d, b, m, v = (_int(k, x) for k, x in (("tp", tp), ("pp", pp), ("dp", dp), ("microbatch", microbatch),
                                                ("microbatches", microbatches), ("virtual_stages", virtual_stages)))
    e = _int("dtype_bytes", dtype_bytes)
    gb, ob = _int("grad_bytes", grad_bytes, 0), _int("optimizer_bytes", optimizer_bytes, 0)
    f = 4 * h if ffn is None else _int("ffn", ffn)
    k = a if kv_heads is None else _int("kv_heads", kv_heads)
    return _Sizes(L, h, a, s, V, t, p, d, b, m, v, e, gb, ob, f, k)


def _check_choices(z: _Sizes, arch: _Arch, schedule: str, recompute: str, sequence_parallel: bool,
                   zero: int) -> None:
    """None when the sizes divide as Megatron splits them and the strategy's choices are known, else ConfigError."""
    h, a, k, t, f, p, m, v = z.h, z.a, z.k, z.t, z.f, z.p, z.m, z.v
    if h % a:
        raise ConfigError("hidden", h, f"accepted: a multiple of heads ({a})")
    if a % k:
        raise ConfigError("kv_heads", k, f"accepted: a divisor of heads ({a})")
    if k % t:  # Megatron splits the key/value heads (the query groups) among the tensor ranks
        divisors = ", ".join(str(n) for n in range(1, k + 1) if k % n == 0)
        raise ConfigError("tp", t, f"accepted: a divisor of {'heads' if k == a else 'kv_heads'} ({k}): {divisors}")
    if f % t:
        raise ConfigError("ffn", f, f"accepted: a multiple of tp ({t})")
    yes_no = (True, False)
    for name, value, names in (("schedule", schedule, SCHEDULES), ("recompute", recompute, RECOMPUTE),
                               ("sequence_parallel", sequence_parallel, yes_no), ("ffn_act", arch.ffn_act, FFN_ACTS),
                               ("norm", arch.norm, NORMS), ("position", arch.position, POSITIONS),
                               ("bias", arch.bias, yes_no), ("tied_embeddings", arch.tied, yes_no),
                               ("dropout", arch.dropout, yes_no)):
        _choice(name, value, names)
    if isinstance(zero, bool) or zero not in (0, 1, 2, 3):
        raise ConfigError("zero", zero, "accepted: 0, 1, 2 or 3 (ZeRO stage)")
    if v > 1 and (schedule != "1f1b" or p == 1 or m < p):
        raise ConfigError("virtual_stages", v, "accepted: 1, or more with schedule 1f1b, pp > 1 and "
                                               f"microbatches >= pp (here {schedule}, pp {p}, microbatches {m})")


def _checked_stage_blocks(z: _Sizes, stage_blocks) -> list[int]:
    """The transformer blocks of each stage: `stage_blocks` once checked, else L / p each."""
    L, p, v = z.L, z.p, z.v
    if stage_blocks is None:
        if L % p:
            raise ConfigError("pp", p, f"accepted: a divisor of layers ({L}), or give stage_blocks")
        blocks = [L // p] * p
    else:
        blocks = list(stage_blocks) if isinstance(stage_blocks, (list, tuple)) else [None]
        if (len(blocks) != p or any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in blocks)
                or sum(blocks) != L):
            raise ConfigError("stage_blocks", stage_blocks,
                              f"accepted: {p} integers >= 0 (one per stage) summing to layers ({L})")
    if v > 1 and any(n % v for n in blocks):
        raise ConfigError("stage_blocks", blocks, f"accepted: each stage's blocks a multiple of virtual_stages ({v})")
    return blocks


def _fp8_terms(z: _Sizes, arch: _Arch, moe, moe_block: tuple, sequence_parallel: bool,
               recompute: str) -> tuple[tuple[float, float, float], tuple]:
    """FP8 linears (`workload.fp8`): the FP8 weight copies' bytes on one NPU of (a dense block, a MoE
    block's attention and shared experts, its routed experts), their linear weights being
    `block_params` without biases and norms (RMSNorm's h each) and `moe_mlp_params` without biases
    and the router's h E; and `moe_block` with its attention's saved inputs at 1 byte."""
    from .fp8 import input_saving, weight_copy_bytes
    from .memory_moe import moe_mlp_params

    def linears(ffn: int) -> int:  # QKV, projection and a dense MLP of `ffn` (0: none) on one tensor rank
        return block_params(z.h, ffn, z.t, heads=z.a, kv_heads=z.k, ffn_act=arch.ffn_act, norm="rmsnorm",
                            bias=False) - 2 * z.h

    if moe is None:
        return (weight_copy_bytes(linears(z.f)), 0.0, 0.0), moe_block
    shared_and_router, routed = moe_mlp_params(z.h, moe, z.t, ffn_act=arch.ffn_act, bias=False)
    dense, expert, acts, edp = moe_block
    acts -= input_saving(z.s, z.b, z.h, z.t, sequence_parallel, recompute, z.e, fused=arch.fused, mlp=False)
    return (weight_copy_bytes(linears(z.f)), weight_copy_bytes(linears(0) + shared_and_router - z.h * moe.experts),
            weight_copy_bytes(routed)), (dense, expert, acts, edp)


def _stage(z: _Sizes, arch: _Arch, i: int, n_blocks: int, per_block: float, schedule: str, sequence_parallel: bool,
           zero: int, n_moe: int = 0, moe_block: tuple = (0, 0, 0.0, 1),
           copies: tuple = (0.0, 0.0, 0.0)) -> StageMemory:
    """The `StageMemory` of stage `i`, holding `n_blocks` transformer blocks of which `n_moe` MoE
    blocks (`memory_moe.moe_block_memory`; `stage_memory` doc). With v > 1 each chunk holds the stage's
    mean block. `copies`: FP8 weight copies per dense block, per MoE block's dense part and experts
    (`_fp8_terms`), in the weights."""
    _, h, a, s, V, t, p, d, b, m, v, e, gb, ob, f, kv = z  # the paper's letters; L is not needed here
    shared_split = t if sequence_parallel else 1
    vocab_rows = -(-V // t)
    moe_dense, moe_expert, moe_acts, edp = moe_block
    params = (n_blocks - n_moe) * block_params(h, f, t, heads=a, kv_heads=kv, ffn_act=arch.ffn_act, norm=arch.norm,
                                               bias=arch.bias) + n_moe * moe_dense
    expert = n_moe * moe_expert
    chunks = _peak_chunks(i, p, m, v, schedule)
    acts = chunks * (n_blocks - n_moe) / v * per_block + chunks * n_moe / v * moe_acts
    if i == 0:
        params += vocab_rows * h + (s * h if arch.position == "learned" else 0)
        if arch.dropout:
            acts += _chunk_share(chunks, p, v, 0) * s * b * h / shared_split  # 1-byte dropout mask
    if i == p - 1:
        norm = (2 if arch.norm == "layernorm" else 1) * h
        params += norm + (vocab_rows * h if p > 1 or not arch.tied else 0)  # tied, p = 1: the embedding's
        head = 2 * e * s * b * h / shared_split + 4 * s * b * vocab_rows  # norm and output inputs, fp32 logits
        acts += _chunk_share(chunks, p, v, v - 1) * head
    # ZeRO stage k shards optimizer states from k = 1, gradients from k = 2, weights at k = 3; the
    # routed experts over their expert-data-parallel group (Megatron-Core's expert distributed optimizer)
    weights, grads, opt = (params * n / (d if zero >= k else 1) + expert * n / (edp if zero >= k else 1)
                           for n, k in ((e, 3), (gb, 2), (ob, 1)))
    # FP8 weight copies (workload.fp8): Transformer Engine makes them of the weights a rank holds
    weights += (((n_blocks - n_moe) * copies[0] + n_moe * copies[1]) / (d if zero >= 3 else 1)
                + n_moe * copies[2] / (edp if zero >= 3 else 1))
    return StageMemory(i, params + expert, weights, grads, opt, acts, chunks, weights + grads + opt + acts, expert)
