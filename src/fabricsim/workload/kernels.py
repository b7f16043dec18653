"""The kernels of a transformer block, per GPU per microbatch, as Megatron-LM runs them.

Tensor parallelism of degree t splits the attention heads and the MLP's inner size over t GPUs
(Megatron-LM's column- then row-parallel linears), so every GEMM below has one dimension divided by
t. Without sequence parallelism the layer norms, dropouts and residual adds are replicated: each
of the t GPUs runs them on all b s tokens. With it (`sp`, Korthikanti et al. 2022, arXiv
2205.05198) each GPU runs them on s / t of the tokens.

The lists, in execution order (b microbatch, s sequence, h hidden, a heads, ffn MLP inner size):

* `attention_forward`: input layer norm, QKV projection and its bias add (Megatron-LM's
  column-parallel linear adds the bias in a kernel of its own: `output = output + bias` in
  `LinearWithGradAccumulationAndAsyncCommunication`, NVIDIA/Megatron-LM megatron/mpu/layers.py at
  2755bcb, June 2022, the code of Korthikanti et al.), Q K^T scores (a batched GEMM per head),
  softmax, attention dropout, attention over V (batched), output projection, then the fused
  bias-dropout-add of Megatron-LM (reads the output and the residual, writes the sum and a 1-byte
  mask per element).
* `mlp_forward`: post-attention layer norm, fc1 (h -> ffn), the fused bias-GeLU, fc2 (ffn -> h),
  bias-dropout-add.
* `embedding_forward`, `head_forward`: the word-embedding gather, position add and dropout; the
  final layer norm, the logits GEMM against the (tied) vocab-parallel embedding and the fp32
  cross-entropy (`vocab_parallel_cross_entropy` on the logits cast to fp32).
* `backward` of a forward list, and `selective_recompute`: what selective activation
  recomputation re-runs before the attention backward.

A layer norm reads and writes its b s h elements; softmax reads and writes the scores. Backward
bytes are stated per kernel (`Memory.backward_bytes`) where its implementation differs from "read
the output gradient and the input, write the input gradient" (twice the forward): Apex's fused
layer norm runs two kernels, the weight-gradient partial sums (read dy and x) and the input
gradient (read dy and x, write dx): 5 passes; Megatron's fused masked softmax backward reads the
output gradient and the softmax output and writes the input gradient in place: 3 passes; dropout's
backward reads the gradient and the 1-byte mask and writes the gradient: its forward's bytes; the
QKV bias gradient is one reduction over the output gradient. Left out: the other bias adds (fused
into the bias-GeLU / bias-dropout-add kernels), the small
reads of layer-norm weights and statistics, the split of QKV into heads and the transposes
(views, no kernels), communication (the network model prices it) and gradient accumulation.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable

from ..errors import ConfigError
from ..system.compute import Attention, Gemm, Memory

Kernels = tuple  # of Gemm, Memory and Attention, in execution order


def _check(t: int, sp: bool, **sizes: int) -> None:
    """ConfigError unless all sizes are integers >= 1, t divides heads/ffn/vocab and sp is a bool."""
    for name, value in {**sizes, "t": t}.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
            raise ConfigError(f"kernels.{name}", value, "accepted: an integer >= 1")
    if not isinstance(sp, bool):
        raise ConfigError("kernels.sp", sp, "accepted: True or False (sequence parallelism)")
    if "a" in sizes and sizes["h"] % sizes["a"]:
        raise ConfigError("kernels.a", sizes["a"], f"accepted: a head count dividing hidden={sizes['h']}")
    for name in ("a", "ffn", "vocab"):
        if name in sizes and sizes[name] % t:
            raise ConfigError("kernels.t", t, f"accepted: a tensor-parallel degree dividing {name}={sizes[name]}")
    if sp and sizes["s"] % t:
        raise ConfigError("kernels.t", t, f"accepted: with sequence parallelism, a degree dividing s={sizes['s']}")


def _tokens(b: int, s: int, t: int, sp: bool) -> int:
    """Tokens the replicated (or, with sp, sequence-split) elementwise kernels of one GPU touch."""
    return b * s // t if sp else b * s


def _layer_norm(tokens: int, h: int, dtype_bytes: float, name: str) -> Memory:
    # read x, write y; backward (Apex): partial weight gradients read dy, x; input gradient reads dy, x, writes dx
    return Memory(2 * tokens * h * dtype_bytes, name, backward_bytes=5 * tokens * h * dtype_bytes)


def _dropout_add(tokens: int, h: int, dtype_bytes: float, name: str) -> Memory:
    # Megatron-LM's fused bias-dropout-add: read x and the residual, write the sum and a 1-byte mask
    return Memory(tokens * h * (3 * dtype_bytes + 1), name)


def attention_forward(b: int, s: int, h: int, a: int, t: int, sp: bool = False, dtype_bytes: float = 2,
                      fused: bool = False) -> Kernels:
    """Kernels of the self-attention half of a layer, one GPU, one microbatch.

    Parameters
    ----------
    b, s, h, a : int
        Microbatch (sequences), sequence length, hidden size, attention heads (dividing h).
    t : int
        Tensor-parallel degree, dividing a.
    sp : bool
        Sequence parallelism: layer norm and dropout-add on b s / t tokens.
    dtype_bytes : float
        Bytes per activation element (2 for fp16/bf16).
    fused : bool
        The attention core as one fused, causal kernel (FlashAttention; Transformer Engine's fused
        attention: `system.compute.Attention`) instead of the score GEMM, softmax, dropout and
        context GEMM.

    Returns
    -------
    tuple of Gemm, Memory and Attention
        Layer norm, QKV, QKV bias add, scores, softmax, dropout, context (fused: the attention
        kernel), output projection, dropout-add.
    """
    _check(t, sp, b=b, s=s, h=h, a=a)
    tokens, heads = _tokens(b, s, t, sp), b * a // t
    scores = heads * s * s  # elements of this GPU's attention matrices
    head = (
        _layer_norm(tokens, h, dtype_bytes, "input layer norm"),
        Gemm(b * s, 3 * h // t, h),
        # read, write the QKV output; backward: the bias gradient sums the output gradient (one read)
        Memory(2 * b * s * (3 * h // t) * dtype_bytes, "QKV bias add", backward_bytes=b * s * (3 * h // t) * dtype_bytes),
    )
    tail = (
        Gemm(b * s, h, h // t),
        _dropout_add(tokens, h, dtype_bytes, "attention dropout-add"),
    )
    if fused:
        return head + (Attention(s, h // a, heads),) + tail
    return head + (
        Gemm(s, s, h // a, count=heads),                               # Q K^T
        # read, write; backward reads the output gradient and the output, writes the input gradient
        Memory(2 * scores * dtype_bytes, "softmax", backward_bytes=3 * scores * dtype_bytes),
        # read, write, 1-byte mask; backward reads the gradient and the mask, writes the gradient
        Memory(scores * (2 * dtype_bytes + 1), "attention dropout", backward_bytes=scores * (2 * dtype_bytes + 1)),
        Gemm(s, h // a, s, count=heads),                               # scores x V
    ) + tail


def mlp_forward(b: int, s: int, h: int, ffn: int, t: int, sp: bool = False, dtype_bytes: float = 2) -> Kernels:
    """Kernels of the MLP half of a layer, one GPU, one microbatch.

    Parameters
    ----------
    b, s, h, ffn : int
        Microbatch, sequence length, hidden size, MLP inner size.
    t : int
        Tensor-parallel degree, dividing ffn.
    sp : bool
        Sequence parallelism: layer norm and dropout-add on b s / t tokens.
    dtype_bytes : float
        Bytes per activation element.

    Returns
    -------
    tuple of Gemm and Memory
        Layer norm, fc1, bias-GeLU, fc2, dropout-add.
    """
    _check(t, sp, b=b, s=s, h=h, ffn=ffn)
    tokens = _tokens(b, s, t, sp)
    return (
        _layer_norm(tokens, h, dtype_bytes, "post-attention layer norm"),
        Gemm(b * s, ffn // t, h),
        Memory(2 * b * s * (ffn // t) * dtype_bytes, "bias-GeLU"),     # read, write
        Gemm(b * s, h, ffn // t),
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
        return (Attention(k.seq, k.head_dim, k.count, k.causal, backward=True),), ()
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


def selective_recompute(b: int, s: int, h: int, a: int, t: int, dtype_bytes: float = 2, fused: bool = False) -> Kernels:
    """What selective activation recomputation re-runs before the attention backward.

    Korthikanti et al. recompute the attention core, whose activations are large (a s^2 per
    sequence) and cheap to recompute: the Q K^T GEMM, softmax, dropout and the GEMM over V.

    Parameters
    ----------
    b, s, h, a : int
        Microbatch, sequence length, hidden size, heads.
    t : int
        Tensor-parallel degree, dividing a.
    dtype_bytes : float
        Bytes per activation element.
    fused : bool
        The attention core as one fused kernel (`attention_forward`'s `fused`).

    Returns
    -------
    tuple of Gemm, Memory and Attention
        The forward kernels of the attention core: score GEMM, softmax, dropout, context GEMM; or,
        `fused`, the one attention kernel.
    """
    return attention_forward(b, s, h, a, t, False, dtype_bytes, fused)[3:-2]  # between the QKV bias and the projection


def embedding_forward(b: int, s: int, h: int, t: int, sp: bool = False, dtype_bytes: float = 2) -> Kernels:
    """Kernels of the input embedding, one GPU, one microbatch.

    Each GPU gathers the b s rows of its vocabulary shard (writing all b s x h outputs, zeros for
    the other shards' tokens) and adds the position embeddings on all tokens; with sequence
    parallelism the dropout after the scatter runs on b s / t tokens.

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

    Returns
    -------
    tuple of Memory
        Gather, position add, dropout.
    """
    _check(t, sp, b=b, s=s, h=h)
    return (
        Memory(2 * b * s * h * dtype_bytes, "embedding gather"),      # read rows, write
        Memory(3 * b * s * h * dtype_bytes, "position embedding add"),  # read both, write
        Memory(_tokens(b, s, t, sp) * h * (2 * dtype_bytes + 1), "embedding dropout"),
    )


def head_forward(b: int, s: int, h: int, vocab: int, t: int, dtype_bytes: float = 2, *, sp: bool = False) -> Kernels:
    """Kernels of the output head and loss, one GPU, one microbatch.

    The logits of this GPU's vocabulary shard are cast to fp32 and `vocab_parallel_cross_entropy`
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
        Sequence parallelism: the final layer norm on b s / t tokens.

    Returns
    -------
    tuple of Gemm and Memory
        Final layer norm, logits GEMM, the cross-entropy passes.
    """
    _check(t, sp, b=b, s=s, h=h, vocab=vocab)
    logits = b * s * vocab // t
    return (
        _layer_norm(_tokens(b, s, t, sp), h, dtype_bytes, "final layer norm"),
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
    # a fused attention kernel reads Q, K, V and writes the output (and reads its gradient back): bytes
    # small beside its FLOPs, counted as 4 x heads x seq x head_dim elements
    return sum(k.bytes(dtype_bytes) if isinstance(k, Gemm) else
               4 * k.count * k.seq * k.head_dim * dtype_bytes if isinstance(k, Attention) else k.nbytes for k in kernels)
