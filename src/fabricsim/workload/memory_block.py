"""One transformer block's memory terms: its parameters per tensor-parallel rank (`block_params`) and
the activations it stores per microbatch (`activation_bytes_per_block`), after Korthikanti et al. 2022
(arXiv 2205.05198), Section 4; the derivations are in the functions' docs. `memory_model` sums them
over stages and `memory_moe` builds a mixture-of-experts block on them; both import this module.

Activations of a block (`activation_bytes_per_block`): Korthikanti et al. Section 4.1, term by term,
with e bytes per element (2 in the paper), 1-byte dropout masks, w = k h / a the key (and value) width (h without grouped-query attention) and f
the MLP inner size; [S] marks a term split by t, [R] one replicated on the tensor ranks (and
split by t with sequence parallelism, Section 4.2.2):
  attention (paper: 11sbh + 5as^2b): QKV input e sbh [R]; Q e sbh and K e sbw [S] (paper 4sbh:
    grouped-query attention stores its k heads of keys, not a; rotary positions rotate Q and K
    with no stored input of their own); softmax output e as^2b [S] (a query heads score every
    key); its dropout mask as^2b [S]; dropout output e as^2b [S]; V e sbw [S] (paper 2sbh);
    projection input e sbh [S]; dropout mask sbh [R];
  MLP (paper: 19sbh): fc1 input e sbh [R]; gelu: its input and output (fc2's input) e sbf each
    [S] (paper 8sbh each); swiglu: fc1's output, gate and up, 2e sbf, and its output (fc2's
    input) e sbf [S]; that is m e sbf with m = 2 (gelu) or 3 (swiglu) matrices; mask sbh [R];
  norms (paper: 4sbh): the two inputs, 2e sbh [R]; an RMSNorm stores its input as a LayerNorm.
Per block: e sb(2h + 2w + m f)/t [S] + (4e + 2)sbh [R] + (2e + 1)as^2b/t, which with e = 2,
w = h, m = 2 and f = 4h is 24sbh/t + 10sbh + 5as^2b/t: sbh(34 + 5as/h) at t = 1 (Eq. 1),
sbh(10 + 24/t + 5as/(ht)) (Eq. 2), sbh/t(34 + 5as/h) with sequence parallelism.
Without `dropout` (Llama-style training) the three masks and the dropout output go: [R] 4e sbh,
scores e as^2b/t (the softmax output is the values' matmul input too). Selective recomputation
(Section 5) drops the scores; full recomputation keeps only the block's input, e sbh (2sbh),
split by t with sequence parallelism as Megatron stores it. These are the rows of Table 2.
With `fp8` (Transformer Engine's FP8 linears, `workload.fp8.input_saving`) the QKV and fc1 inputs
[R], fc2's input [S] and the projection input [S] are stored at 1 byte instead of e: e sb(h + 2w
+ (m - 1) f)/t + sb(h + f)/t [S] + (2e + 2 + 2)sbh [R] (the norms' inputs, the FP8 QKV and fc1
inputs, the masks) + scores; with a fused core the projection input is e + 1 bytes (the kernel
keeps its bf16 output for its backward, the linear its FP8 copy). With a fused attention kernel
(`fused`) the as^2b terms are replaced by the softmax statistics, 4 as b / t.
"""

from __future__ import annotations

from ..errors import ConfigError
from .shapes import FFN_ACTS, NORMS

RECOMPUTE = ("none", "selective", "full")


def _int(field: str, value, least: int = 1) -> int:
    """`value` when it is an integer >= `least`, else ConfigError naming `field`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(field, value, f"accepted: an integer >= {least}")
    return value


def _choice(field: str, value, accepted: tuple) -> None:
    """None when `value` is one of `accepted` (True and False for booleans), else ConfigError naming `field`."""
    if accepted == (True, False):
        if not isinstance(value, bool):
            raise ConfigError(field, value, "accepted: true or false")
    elif value not in accepted:
        raise ConfigError(field, value, "accepted: " + ", ".join(accepted))


def _kv_width(hidden: int, heads: int | None, kv_heads: int | None) -> int:
    """Elements of the keys (or of the values) per token, k h / a: h without grouped-query attention."""
    if kv_heads is None or kv_heads == heads:
        return hidden
    if heads is None:
        raise ConfigError("heads", heads, f"accepted: the attention heads, to split hidden={hidden} "
                                          f"among kv_heads={kv_heads}")
    return kv_heads * (hidden // heads)


def block_params(hidden: int, ffn: int, tp: int = 1, *, heads: int | None = None, kv_heads: int | None = None,
                 ffn_act: str = "gelu", norm: str = "layernorm", bias: bool = True) -> int:
    """Parameters of one transformer block held by one tensor-parallel rank.

    With w = k h / a the key (and value) width, m the MLP's matrices (2 gelu, 3 swiglu) and n the
    parameters of one norm (2h layernorm, h rmsnorm): QKV h (h + 2w) weights and h + 2w biases,
    the output projection h^2 and h, the MLP m h ffn weights, (m - 1) ffn biases on its input
    matrices (gelu's fc1; swiglu's gate and up) and h on fc2, two norms 2n. Megatron splits QKV
    and the MLP's input matrices by columns (weights and biases; t divides k) and the output
    projection and fc2 by rows (weights only), so the two row-parallel biases (2h) and the norms
    are replicated on every rank and counted on each. Without `bias` no biases. GPT (k = a, gelu,
    layernorm, biases): 4h^2 + 2 h ffn + ffn + 9h, 12h^2 + 13h with ffn = 4h.

    Parameters
    ----------
    hidden : int
        Hidden size h.
    ffn : int
        MLP inner size, a multiple of `tp`.
    tp : int
        Tensor-parallel ranks t, dividing the key/value heads.
    heads, kv_heads : int, optional
        Attention (query) heads a and key/value heads k (k = a when either is not given).
    ffn_act, norm : str
        gelu or swiglu; layernorm or rmsnorm.
    bias : bool
        The linear layers have biases.

    Returns
    -------
    int
        (h (h + 2w) + h^2 + m h ffn + [h + 2w + (m - 1) ffn]) / t + [2h] + 2n, the bracketed
        terms with `bias` only.

    Examples
    --------
    >>> block_params(64, 256), 12 * 64**2 + 13 * 64
    (49984, 49984)
    >>> h, f = 4096, 14336  # a Llama 3 8B block: 8 of 32 heads for keys and values, swiglu, rmsnorm, no biases
    >>> block_params(h, f, heads=32, kv_heads=8, ffn_act="swiglu", norm="rmsnorm", bias=False)
    218112000
    """
    _choice("ffn_act", ffn_act, FFN_ACTS)
    _choice("norm", norm, NORMS)
    _choice("bias", bias, (True, False))
    h, qkv = hidden, hidden + 2 * _kv_width(hidden, heads, kv_heads)
    m = 3 if ffn_act == "swiglu" else 2
    split = h * qkv + h * h + m * h * ffn + (qkv + (m - 1) * ffn if bias else 0)
    replicated = (2 * h if bias else 0) + 2 * (2 if norm == "layernorm" else 1) * h
    return split // tp + replicated


def activation_bytes_per_block(s: int, b: int, h: int, a: int, t: int, sequence_parallel: bool,
                               recompute: str, ffn: int | None = None, dtype_bytes: int = 2, *,
                               kv_heads: int | None = None, ffn_act: str = "gelu", dropout: bool = True,
                               fused: bool = False, fp8: bool = False) -> float:
    """Activation bytes one transformer block stores for one microbatch on one tensor rank.

    The terms (Korthikanti et al. Section 4.1, with grouped-query attention, SwiGLU, no dropout, fused
    attention and FP8) are the module doc's "Activations of a block".

    Parameters
    ----------
    s, b, h, a : int
        Sequence length (tokens), microbatch size (sequences), hidden size, attention (query) heads.
    t : int
        Tensor-parallel ranks.
    sequence_parallel : bool
        Megatron sequence parallelism in the norm and dropout regions.
    recompute : str
        "none", "selective" or "full".
    ffn : int, optional
        MLP inner size; 4h when not given.
    dtype_bytes : int
        Bytes per stored activation element (2: fp16/bf16).
    kv_heads : int, optional
        Key/value heads k (a when not given).
    ffn_act : str
        gelu or swiglu.
    dropout : bool
        Dropout in attention and after the attention and MLP (GPT's training; Llama's runs without).
    fused : bool
        A fused attention kernel (FlashAttention; Transformer Engine): the scores never reach
        memory; the kernel keeps the softmax statistics, one fp32 value per query and head,
        4 as b / t (FlashAttention-2, Dao 2023, Algorithm 1: the logsumexp L saved for backward),
        instead of the as^2b terms.
    fp8 : bool
        The block's linears run in FP8 (`workload.dtype: fp8`): their saved inputs take 1 byte.

    Returns
    -------
    float
        Bytes.

    Examples
    --------
    >>> s, b, h, a, t = 2048, 1, 12288, 96, 8
    >>> activation_bytes_per_block(s, b, h, a, t, True, "selective") == 34 * s * b * h / t
    True
    >>> activation_bytes_per_block(s, b, h, a, t, False, "none") == s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
    True
    """
    _choice("recompute", recompute, RECOMPUTE)
    _choice("ffn_act", ffn_act, FFN_ACTS)
    _choice("dropout", dropout, (True, False))
    f = 4 * h if ffn is None else ffn
    e, w, m = dtype_bytes, _kv_width(h, a, kv_heads), 3 if ffn_act == "swiglu" else 2
    sbh = s * b * h
    shared_split = 1 / t if sequence_parallel else 1.0  # the regions that sequence parallelism splits
    if recompute == "full":
        return e * sbh * shared_split
    split = e * s * b * (2 * h + 2 * w + m * f) / t
    replicated = (4 * e + (2 if dropout else 0)) * sbh * shared_split
    if fused:
        scores = 4.0 * a * s * b / t
    else:
        scores = 0.0 if recompute == "selective" else (2 * e + 1 if dropout else e) * a * s * s * b / t
    if fp8:  # Transformer Engine saves its FP8 linears' inputs in FP8 (one place decides: workload.fp8)
        from .fp8 import input_saving

        return split + replicated + scores - input_saving(s, b, h, t, sequence_parallel, recompute, e, ffn=f,
                                                          fused=fused)
    return split + replicated + scores


__all__ = ["RECOMPUTE", "activation_bytes_per_block", "block_params"]
