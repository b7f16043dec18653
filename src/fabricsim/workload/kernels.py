"""The kernels of a transformer block, per GPU per microbatch, as Megatron-LM runs them.

Tensor parallelism of degree t splits the attention heads and the MLP's inner size over t GPUs
(Megatron-LM's column- then row-parallel linears), so every GEMM below has one dimension divided by
t. Without sequence parallelism the layer norms, dropouts and residual adds are replicated: each
of the t GPUs runs them on all b s tokens. With it (`sp`, Korthikanti et al. 2022, arXiv
2205.05198) each GPU runs them on s / t of the tokens.

The lists, in execution order (b microbatch, s sequence, h hidden, a heads, k key/value heads,
d = h / a head size, ffn MLP inner size f). The defaults are GPT-2/3 as Megatron-LM runs them
(k = a, GeLU, layer norm, biases, learned positions); the keyword arguments give the shapes of
`workload.shapes.TransformerShape` (Llama: grouped-query attention, SwiGLU, RMSNorm, no biases,
rotary positions) as Megatron-Core runs them:

* `attention_forward`: input norm, QKV projection and its bias add (Megatron-LM's
  column-parallel linear adds the bias in a kernel of its own: `output = output + bias` in
  `LinearWithGradAccumulationAndAsyncCommunication`, NVIDIA/Megatron-LM megatron/mpu/layers.py at
  2755bcb, June 2022, the code of Korthikanti et al.; no bias, no kernel), the rotary embedding
  when `rope`, Q K^T scores (a batched GEMM per head), softmax, attention dropout, attention over V
  (batched), output projection, then the fused bias-dropout-add of Megatron-LM (reads the output
  and the residual, writes the sum and a 1-byte mask per element; without biases Megatron-Core's
  `bias_dropout_add` runs the same dropout and add).
  Grouped-query attention (Megatron-Core's `num_query_groups` = k): the QKV projection writes
  h + 2 k h / a outputs (a query heads, k key and k value heads of d), split over the t ranks by
  query groups (t divides k), so a rank's QKV GEMM has (h + 2 k h / a) / t outputs. Every query
  head still scores every key (the score and context GEMMs, and their FLOPs, are those of a
  heads); the unfused core first repeats each rank's k / t key and value heads to its a / t heads
  (`key.repeat_interleave(...)` in Megatron-Core's `DotProductAttention.forward`, megatron/core/
  transformer/dot_product_attention.py: a copy reading 2 b s (k / t) d and writing 2 b s (a / t) d
  elements; its backward sums the copies' gradients back, the same bytes), while a fused kernel
  reads the k / t key/value heads as they are (`GroupedAttention`: smaller K/V reads).
  Rotary positions: Megatron-Core applies `apply_rotary_pos_emb` to the query and the key in
  `Attention.forward` (megatron/core/transformer/attention.py: `query = apply_rotary_pos_emb(query,
  q_pos_emb, ...)`, `key = apply_rotary_pos_emb(key, k_pos_emb, ...)`), not to the value: one fused
  kernel (`--apply-rope-fusion`) reads and writes the (h + k h / a) / t query and key elements of
  each token; its backward rotates the gradient back (reads it, writes the input gradient): the
  forward's bytes.
* `mlp_forward`: post-attention norm, fc1 (h -> ffn), the fused bias-GeLU, fc2 (ffn -> h),
  bias-dropout-add. SwiGLU (Megatron-Core's `--swiglu`, a gated linear unit): one fused fc1 GEMM
  h -> 2 ffn (gate and up side by side, `linear_fc1` of twice the inner size in megatron/core/
  transformer/mlp.py), the (bias-)SwiGLU kernel (`bias_swiglu` in megatron/core/fusions/
  fused_bias_swiglu.py: reads 2 ffn / t, writes ffn / t per token; its backward `swiglu_back`
  reads the output gradient ffn / t and the saved input 2 ffn / t, writes the input gradient
  2 ffn / t), fc2 (ffn -> h). Without biases the activation runs alone, the same bytes.
* `embedding_forward`, `head_forward`: the word-embedding gather, position add (learned
  positions only: rotary positions add nothing here) and dropout; the final norm, the logits GEMM
  against the vocab-parallel embedding (tied) or output layer (untied: the same GEMM) and the fp32
  cross-entropy (`vocab_parallel_cross_entropy` on the logits cast to fp32).
* `backward` of a forward list, and `selective_recompute`: what selective activation
  recomputation re-runs before the attention backward.

A norm reads and writes its b s h elements; softmax reads and writes the scores. Backward
bytes are stated per kernel (`Memory.backward_bytes`) where its implementation differs from "read
the output gradient and the input, write the input gradient" (twice the forward): Apex's fused
layer norm runs two kernels, the weight-gradient partial sums (read dy and x) and the input
gradient (read dy and x, write dx): 5 passes; Apex's and Transformer Engine's fused RMSNorm run the
same two kernels without the bias gradient (which summed dy in the same pass): a layer norm's
bytes, 2 passes forward and 5 backward; Megatron's fused masked softmax backward reads the
output gradient and the softmax output and writes the input gradient in place: 3 passes; dropout's
backward reads the gradient and the 1-byte mask and writes the gradient: its forward's bytes; the
QKV bias gradient is one reduction over the output gradient. Left out: the other bias adds (fused
into the bias-GeLU / bias-SwiGLU / bias-dropout-add kernels), the small reads of norm weights and
statistics and of the rotary cos / sin tables, the split of QKV into heads and the transposes
(views, no kernels), communication (the network model prices it) and gradient accumulation.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..errors import ConfigError
from ..system.compute import Attention, Gemm, Memory

Kernels = tuple  # of Gemm, Memory and Attention, in execution order

NORMS = {"layernorm": "layer norm", "rmsnorm": "RMSNorm"}  # norm key -> kernel name
ACTS = ("gelu", "swiglu")


@dataclass(frozen=True)
class GroupedAttention(Attention):
    """A fused attention kernel with grouped-query attention: `count` query heads read `kv_count`
    key/value heads as they are. FLOPs and rate are `Attention`'s (every query head attends); only
    the K/V bytes (`memory_bytes`) are smaller.

    Parameters
    ----------
    kv_count : int
        Key/value heads it reads (microbatch x key/value heads on this GPU), dividing `count`.
    """

    kv_count: int = 1

    def __post_init__(self):
        super().__post_init__()
        kv = self.kv_count
        if isinstance(kv, bool) or not isinstance(kv, numbers.Integral) or kv < 1 or self.count % kv:
            raise ConfigError("attention.kv_count", self.kv_count, f"accepted: a divisor of count={self.count}")


def _check(t: int, sp: bool, **sizes: int) -> None:
    """ConfigError unless all sizes are integers >= 1, t divides heads/kv_heads/ffn/vocab and sp is a bool."""
    for name, value in {**sizes, "t": t}.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ConfigError(f"kernels.{name}", value, "accepted: an integer >= 1")
    if not isinstance(sp, bool):
        raise ConfigError("kernels.sp", sp, "accepted: True or False (sequence parallelism)")
    if "a" in sizes and sizes["h"] % sizes["a"]:
        raise ConfigError("kernels.a", sizes["a"], f"accepted: a head count dividing hidden={sizes['h']}")
    if "kv_heads" in sizes and sizes["a"] % sizes["kv_heads"]:
        raise ConfigError("kernels.kv_heads", sizes["kv_heads"], f"accepted: a divisor of heads={sizes['a']}")
    for name in ("a", "kv_heads", "ffn", "vocab"):
        if name in sizes and sizes[name] % t:
            raise ConfigError("kernels.t", t, f"accepted: a tensor-parallel degree dividing {name}={sizes[name]}")
    if sp and sizes["s"] % t:
        raise ConfigError("kernels.t", t, f"accepted: with sequence parallelism, a degree dividing s={sizes['s']}")


def _check_keys(norm: str = "layernorm", act: str = "gelu", **flags: bool) -> None:
    """ConfigError unless `norm` and `act` are known and each flag (bias, rope) is a bool."""
    for name, value, accepted in (("norm", norm, tuple(NORMS)), ("act", act, ACTS)):
        if value not in accepted:
            raise ConfigError(f"kernels.{name}", value, "accepted: " + ", ".join(accepted))
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise ConfigError(f"kernels.{name}", value, "accepted: True or False")


def _tokens(b: int, s: int, t: int, sp: bool) -> int:
    """Tokens the replicated (or, with sp, sequence-split) elementwise kernels of one GPU touch."""
    return b * s // t if sp else b * s


def _layer_norm(tokens: int, h: int, dtype_bytes: float, where: str, norm: str = "layernorm") -> Memory:
    # read x, write y; backward (Apex; RMSNorm the same without the bias gradient): partial weight
    # gradients read dy, x; input gradient reads dy, x, writes dx
    return Memory(2 * tokens * h * dtype_bytes, f"{where} {NORMS[norm]}", backward_bytes=5 * tokens * h * dtype_bytes)


def _dropout_add(tokens: int, h: int, dtype_bytes: float, name: str) -> Memory:
    # Megatron-LM's fused bias-dropout-add: read x and the residual, write the sum and a 1-byte mask
    return Memory(tokens * h * (3 * dtype_bytes + 1), name)


def _core(b: int, s: int, h: int, a: int, k: int, t: int, dtype_bytes: float, fused: bool) -> Kernels:
    """The attention core of one GPU (module doc): a / t query heads over k / t key/value heads."""
    heads, d = b * a // t, h // a
    if fused:
        return (Attention(s, d, heads) if k == a else GroupedAttention(s, d, heads, kv_count=b * k // t),)
    scores = heads * s * s  # elements of this GPU's attention matrices
    # grouped-query: read k / t key and value heads, write a / t; backward the reverse (module doc)
    repeat = 2 * b * s * d * (k + a) // t * dtype_bytes
    return ((Memory(repeat, "K/V repeat", backward_bytes=repeat),) if k != a else ()) + (
        Gemm(s, s, d, count=heads),                                    # Q K^T
        Memory(2 * scores * dtype_bytes, "softmax", backward_bytes=3 * scores * dtype_bytes),  # read dy, y; write dx
        # read, write, 1-byte mask; backward reads the gradient and the mask, writes the gradient
        Memory(scores * (2 * dtype_bytes + 1), "attention dropout", backward_bytes=scores * (2 * dtype_bytes + 1)),
        Gemm(s, d, s, count=heads),                                    # scores x V
    )


def attention_forward(b: int, s: int, h: int, a: int, t: int, sp: bool = False, dtype_bytes: float = 2,
                      fused: bool = False, *, kv_heads: int | None = None, bias: bool = True,
                      norm: str = "layernorm", rope: bool = False) -> Kernels:
    """Kernels of the self-attention half of a layer, one GPU, one microbatch.

    Parameters
    ----------
    b, s, h, a : int
        Microbatch (sequences), sequence length (tokens), hidden size, attention (query) heads
        (dividing h).
    t : int
        Tensor-parallel degree, dividing a and kv_heads.
    sp : bool
        Sequence parallelism: norm and dropout-add on b s / t tokens.
    dtype_bytes : float
        Bytes per activation element (2 for fp16/bf16).
    fused : bool
        The attention core as one fused, causal kernel (FlashAttention; Transformer Engine's fused
        attention: `system.compute.Attention`, `GroupedAttention` when kv_heads < a) instead of the
        score GEMM, softmax, dropout and context GEMM.
    kv_heads : int, optional
        Key/value heads k, dividing a (default a: multi-head attention). Grouped-query attention
        (module doc): QKV outputs (h + 2 k h / a) / t per GPU.
    bias : bool
        The linear layers have biases: the QKV bias add kernel (default True).
    norm : str
        layernorm (default) or rmsnorm: the same bytes (module doc).
    rope : bool
        Rotary positions: a rotary-embedding kernel on Q and K after the QKV projection.

    Returns
    -------
    tuple of Gemm, Memory and Attention
        Norm, QKV, QKV bias add (bias), rotary embedding (rope), the core (K/V repeat if kv_heads <
        a, scores, softmax, dropout, context; fused: one kernel), output projection, dropout-add.
    """
    k = a if kv_heads is None else kv_heads
    _check(t, sp, b=b, s=s, h=h, a=a, kv_heads=k)
    _check_keys(norm, bias=bias, rope=rope)
    d, qkv = h // a, (h + 2 * k * (h // a)) // t  # this GPU's QKV outputs per token
    head = [_layer_norm(_tokens(b, s, t, sp), h, dtype_bytes, "input", norm), Gemm(b * s, qkv, h)]
    if bias:  # read, write the QKV output; backward: the bias gradient sums the output gradient (one read)
        head.append(Memory(2 * b * s * qkv * dtype_bytes, "QKV bias add", backward_bytes=b * s * qkv * dtype_bytes))
    if rope:  # read, write the a / t query and k / t key heads; backward: the same bytes (module doc)
        rot = 2 * b * s * (a + k) * d // t * dtype_bytes
        head.append(Memory(rot, "rotary embedding", backward_bytes=rot))
    tail = (Gemm(b * s, h, h // t), _dropout_add(_tokens(b, s, t, sp), h, dtype_bytes, "attention dropout-add"))
    return tuple(head) + _core(b, s, h, a, k, t, dtype_bytes, fused) + tail


def mlp_forward(b: int, s: int, h: int, ffn: int, t: int, sp: bool = False, dtype_bytes: float = 2, *,
                act: str = "gelu", bias: bool = True, norm: str = "layernorm") -> Kernels:
    """Kernels of the MLP half of a layer, one GPU, one microbatch.

    Parameters
    ----------
    b, s, h, ffn : int
        Microbatch (sequences), sequence length (tokens), hidden size, MLP inner size.
    t : int
        Tensor-parallel degree, dividing ffn.
    sp : bool
        Sequence parallelism: norm and dropout-add on b s / t tokens.
    dtype_bytes : float
        Bytes per activation element.
    act : str
        gelu (default: fc1 h -> ffn, bias-GeLU) or swiglu (fused fc1 h -> 2 ffn, bias-SwiGLU).
    bias : bool
        The linear layers have biases, fused into the activation kernel (named bias-GeLU /
        bias-SwiGLU; without: GeLU / SwiGLU, the same bytes).
    norm : str
        layernorm (default) or rmsnorm.

    Returns
    -------
    tuple of Gemm and Memory
        Norm, fc1, activation, fc2, dropout-add.
    """
    _check(t, sp, b=b, s=s, h=h, ffn=ffn)
    _check_keys(norm, act, bias=bias)
    tokens, f, prefix = _tokens(b, s, t, sp), ffn // t, "bias-" if bias else ""
    if act == "swiglu":  # read gate and up (2 f / t), write f / t; backward reads dy and the input, writes 2 f / t
        fc1 = Gemm(b * s, 2 * f, h)
        activation = Memory(3 * b * s * f * dtype_bytes, prefix + "SwiGLU", backward_bytes=5 * b * s * f * dtype_bytes)
    else:
        fc1 = Gemm(b * s, f, h)
        activation = Memory(2 * b * s * f * dtype_bytes, prefix + "GeLU")     # read, write
    return (
        _layer_norm(tokens, h, dtype_bytes, "post-attention", norm),
        fc1,
        activation,
        Gemm(b * s, h, f),
        _dropout_add(tokens, h, dtype_bytes, "MLP dropout-add"),
    )


def backward(kernels: Iterable) -> Kernels:
    """The backward kernels of a forward kernel list, in reverse order.

    Rules: Y = X W with `Gemm(m, n, k, c)` (X m x k, W k x n) gives the input gradient
    dX = dY W^T, `Gemm(m, k, n, c)`, then the weight gradient dW = X^T dY, `Gemm(k, n, m, c)`:
    each as many FLOPs as the forward, so the backward is twice the forward. The attention's
    batched score and context GEMMs have two activation operands and still give two GEMMs. A
    memory-bound kernel costs `Memory.bwd_nbytes`: what its backward is stated to move, else twice
    its forward bytes (it reads the output gradient and the saved input and writes the input
    gradient).

    Parameters
    ----------
    kernels : iterable of Gemm and Memory
        A forward list.

    Returns
    -------
    tuple of Gemm and Memory
        The backward kernels.
    """
    out = []
    for k in reversed(tuple(kernels)):
        ig, wg = _backward_of(k)
        out += [*ig, *wg]
    return tuple(out)


def backward_split(kernels: Iterable) -> tuple[Kernels, Kernels]:
    """The backward kernels of a forward list (`backward`'s rules), split for layers that run the
    weight gradient and the input gradient as separate tasks.

    Parameters
    ----------
    kernels : iterable of Gemm and Memory
        A forward list.

    Returns
    -------
    (tuple, tuple)
        (weight-gradient GEMMs, input-gradient GEMMs and the memory-bound kernels), each in
        reverse order.
    """
    wg, ig = [], []
    for k in reversed(tuple(kernels)):
        i, w = _backward_of(k)
        ig += i
        wg += w
    return tuple(wg), tuple(ig)


def _backward_of(k) -> tuple[tuple, tuple]:
    """(input-gradient kernels, weight-gradient kernels) of one forward kernel (`backward`'s rules)."""
    if isinstance(k, Gemm):
        return (Gemm(k.m, k.k, k.n, k.count),), (Gemm(k.k, k.n, k.m, k.count),)
    if isinstance(k, Memory):
        return (Memory(k.bwd_nbytes, f"{k.name} backward"),), ()
    if isinstance(k, Attention):  # one fused backward kernel, no weights
        return (replace(k, backward=True),), ()  # GroupedAttention stays grouped
    raise ConfigError("kernels", k, "accepted: Gemm, Memory and Attention kernels")


def backward_overlap(kernels: Iterable) -> tuple[Kernels, Kernels, Kernels, Kernels]:
    """A block part's backward, cut where Megatron-LM's asynchronous tensor-parallel communication
    runs beside it (`LinearWithGradAccumulationAndAsyncCommunication.backward`, NVIDIA/Megatron-LM
    megatron/mpu/layers.py at 2755bcb): the part's forward starts with a layer norm and the
    column-parallel linear (`attention_forward`, `mlp_forward`), so its backward (`backward`'s
    order) ends with that linear's input-gradient matmul, its weight-gradient matmul and the layer
    norm's backward. The input gradient's all-reduce (sequence parallel: its reduce-scatter) runs
    beside the weight-gradient matmul; with sequence parallelism the re-gather of the linear's
    input runs beside the input-gradient matmul.

    Parameters
    ----------
    kernels : iterable of Gemm and Memory
        A block part's forward list (a layer norm, then the column-parallel GEMM).

    Returns
    -------
    (tuple, tuple, tuple, tuple)
        (the backward before the linear's input gradient, its input-gradient matmul, its
        weight-gradient matmul, the layer norm's backward).
    """
    fwd = tuple(kernels)
    if len(fwd) < 2 or not isinstance(fwd[0], Memory) or not isinstance(fwd[1], Gemm):
        raise ConfigError("kernels", fwd[:2], "accepted: a block part's forward (a layer norm, then the column linear)")
    bwd = backward(fwd)
    return bwd[:-3], bwd[-3:-2], bwd[-2:-1], bwd[-1:]


def selective_recompute(b: int, s: int, h: int, a: int, t: int, dtype_bytes: float = 2, fused: bool = False, *,
                        kv_heads: int | None = None) -> Kernels:
    """What selective activation recomputation re-runs before the attention backward.

    Korthikanti et al. recompute the attention core, whose activations are large (a s^2 per
    sequence) and cheap to recompute: the Q K^T GEMM, softmax, dropout and the GEMM over V
    (Megatron-Core's `DotProductAttention`, the region it checkpoints, which with grouped-query
    attention begins with the K/V repeat).

    Parameters
    ----------
    b, s, h, a : int
        Microbatch (sequences), sequence length (tokens), hidden size, heads.
    t : int
        Tensor-parallel degree, dividing a and kv_heads.
    dtype_bytes : float
        Bytes per activation element.
    fused : bool
        The attention core as one fused kernel (`attention_forward`'s `fused`).
    kv_heads : int, optional
        Key/value heads (default a).

    Returns
    -------
    tuple of Gemm, Memory and Attention
        The forward kernels of the attention core: (K/V repeat,) score GEMM, softmax, dropout,
        context GEMM; or, `fused`, the one attention kernel.
    """
    k = a if kv_heads is None else kv_heads
    _check(t, False, b=b, s=s, h=h, a=a, kv_heads=k)
    return _core(b, s, h, a, k, t, dtype_bytes, fused)


def embedding_forward(b: int, s: int, h: int, t: int, sp: bool = False, dtype_bytes: float = 2, *,
                      rope: bool = False) -> Kernels:
    """Kernels of the input embedding, one GPU, one microbatch.

    Each GPU gathers the b s rows of its vocabulary shard (writing all b s x h outputs, zeros for
    the other shards' tokens) and adds the learned position embeddings on all tokens (rotary
    positions: no add, they act in the attention); with sequence parallelism the dropout after
    the scatter runs on b s / t tokens.

    Parameters
    ----------
    b, s, h : int
        Microbatch, sequence length, hidden size.
    t : int
        Tensor-parallel degree.
    sp : bool
        Sequence parallelism.
    dtype_bytes : float
        Bytes per activation element.
    rope : bool
        Rotary positions: no position add.

    Returns
    -------
    tuple of Memory
        Gather, position add (learned positions), dropout.
    """
    _check(t, sp, b=b, s=s, h=h)
    _check_keys(rope=rope)
    gather = Memory(2 * b * s * h * dtype_bytes, "embedding gather")  # read rows, write
    dropout = Memory(_tokens(b, s, t, sp) * h * (2 * dtype_bytes + 1), "embedding dropout")
    if rope:
        return gather, dropout
    return gather, Memory(3 * b * s * h * dtype_bytes, "position embedding add"), dropout  # read both, write


def head_forward(b: int, s: int, h: int, vocab: int, t: int, dtype_bytes: float = 2, *, sp: bool = False,
                 norm: str = "layernorm") -> Kernels:
    """Kernels of the output head and loss, one GPU, one microbatch.

    The logits GEMM is the same whether it multiplies by the tied embedding or an output layer of
    its own (untied). The logits of this GPU's vocabulary shard are cast to fp32 and `vocab_parallel_cross_entropy`
    takes their max, subtracts it, exponentiates, sums and normalizes: six passes over the
    b s vocab / t logits (4-byte elements after the cast).

    Parameters
    ----------
    b, s, h, vocab : int
        Microbatch, sequence length, hidden size, (padded) vocabulary size.
    t : int
        Tensor-parallel degree, dividing vocab.
    dtype_bytes : float
        Bytes per activation element.
    sp : bool
        Sequence parallelism: the final norm on b s / t tokens.
    norm : str
        layernorm (default) or rmsnorm: the final norm.

    Returns
    -------
    tuple of Gemm and Memory
        Final norm, logits GEMM, the cross-entropy passes.
    """
    _check(t, sp, b=b, s=s, h=h, vocab=vocab)
    _check_keys(norm)
    logits = b * s * vocab // t
    return (
        _layer_norm(_tokens(b, s, t, sp), h, dtype_bytes, "final", norm),
        Gemm(b * s, vocab // t, h),
        Memory(logits * (dtype_bytes + 4), "cross-entropy cast to fp32"),
        Memory(logits * 4, "cross-entropy max"),
        Memory(logits * 8, "cross-entropy subtract max"),
        Memory(logits * 8, "cross-entropy exp"),
        Memory(logits * 4, "cross-entropy sum"),
        Memory(logits * 8, "cross-entropy normalize"),
    )


def flops(kernels: Iterable) -> int:
    """Matmul and fused-attention FLOPs of a kernel list (memory-bound kernels count none).

    Parameters
    ----------
    kernels : iterable of Gemm and Memory
        The kernels.

    Returns
    -------
    int
        Sum of `Gemm.flops`.
    """
    return sum(k.flops for k in kernels if isinstance(k, (Gemm, Attention)))


def memory_bytes(kernels: Iterable, dtype_bytes: float = 2) -> float:
    """Bytes a kernel list moves: each GEMM's compulsory bytes plus each memory-bound kernel's.

    Parameters
    ----------
    kernels : iterable of Gemm and Memory
        The kernels.
    dtype_bytes : float
        Bytes per GEMM operand element.

    Returns
    -------
    float
        Bytes.
    """
    return sum(k.bytes(dtype_bytes) if isinstance(k, Gemm) else
               _attention_bytes(k, dtype_bytes) if isinstance(k, Attention) else k.nbytes for k in kernels)


def _attention_bytes(k: Attention, dtype_bytes: float) -> float:
    """A fused attention kernel reads Q, K, V and writes the output (and reads its gradient back):
    bytes small beside its FLOPs, counted as heads x seq x head_dim elements for Q and the output
    and kv heads x seq x head_dim for K and V each (kv heads = heads unless `GroupedAttention`)."""
    kv = k.kv_count if isinstance(k, GroupedAttention) else k.count
    return 2 * (k.count + kv) * k.seq * k.head_dim * dtype_bytes
