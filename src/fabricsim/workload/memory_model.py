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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..errors import ConfigError
from .shapes import FFN_ACTS, NORMS, POSITIONS

SCHEDULES = ("gpipe", "1f1b")
RECOMPUTE = ("none", "selective", "full")


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
        Bytes of weights, gradients and optimizer states, after ZeRO sharding.
    activations : float
        Bytes of activations stored at the peak.
    in_flight : int
        Microbatch-chunks whose activations are stored at the peak (microbatches when
        `virtual_stages` is 1).
    total : float
        Peak bytes: weights + gradients + optimizer + activations.
    """

    stage: int
    params: int
    weights: float
    gradients: float
    optimizer: float
    activations: float
    in_flight: int
    total: float


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
                               kv_heads: int | None = None, ffn_act: str = "gelu", dropout: bool = True) -> float:
    """Activation bytes one transformer block stores for one microbatch on one tensor rank.

    Korthikanti et al. Section 4.1, term by term, with e bytes per element (2 in the paper), 1-byte
    dropout masks, w = k h / a the key (and value) width (h without grouped-query attention) and f
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
    scores = 0.0 if recompute == "selective" else (2 * e + 1 if dropout else e) * a * s * s * b / t
    return split + replicated + scores


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
        position (and dtype_bytes, bytes per element, for a model). ConfigError for a model
        without a shape.

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
    if shape is not model:
        out["dtype_bytes"] = model.dtype_bytes
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
                 ) -> tuple[StageMemory, ...]:
    """Peak memory of one NPU of each pipeline stage (module doc; Korthikanti et al. Section 4).

    Parameters: each stage's blocks (`block_params`); the word embedding, ceil(V/t) rows of h per
    rank (vocabulary-parallel), and learned positions, s h replicated on every tensor rank as
    Megatron-LM keeps them (none with rotary positions), on stage 0; on the last stage the final
    norm (2h layernorm, h rmsnorm) and the output head's ceil(V/t) x h: its own when untied, the
    tied embedding's copy with pp > 1 (none with p = 1: the head reuses the embedding). Weights
    take `dtype_bytes`, gradients `grad_bytes` and optimizer states `optimizer_bytes` per
    parameter; ZeRO divides the optimizer states by dp from stage 1, gradients from 2, weights at 3.

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
    z = _checked_sizes(layers, hidden, heads, seq, vocab, tp, pp, dp, microbatch, microbatches, virtual_stages,
                       dtype_bytes, grad_bytes, optimizer_bytes, ffn, kv_heads)
    arch = _Arch(ffn_act, norm, bias, tied_embeddings, position, dropout)
    _check_choices(z, arch, schedule, recompute, sequence_parallel, zero)
    blocks = _checked_stage_blocks(z, stage_blocks)
    per_block = activation_bytes_per_block(z.s, z.b, z.h, z.a, z.t, sequence_parallel, recompute, z.f, z.e,
                                           kv_heads=z.k, ffn_act=ffn_act, dropout=dropout)
    return tuple(_stage(z, arch, i, blocks[i], per_block, schedule, sequence_parallel, zero) for i in range(z.p))


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


def _stage(z: _Sizes, arch: _Arch, i: int, n_blocks: int, per_block: float, schedule: str, sequence_parallel: bool,
           zero: int) -> StageMemory:
    """The `StageMemory` of stage `i`, holding `n_blocks` transformer blocks (`stage_memory` doc)."""
    _, h, a, s, V, t, p, d, b, m, v, e, gb, ob, f, kv = z  # the paper's letters; L is not needed here
    shared_split = t if sequence_parallel else 1
    vocab_rows = -(-V // t)
    params = n_blocks * block_params(h, f, t, heads=a, kv_heads=kv, ffn_act=arch.ffn_act, norm=arch.norm,
                                     bias=arch.bias)
    chunks = _peak_chunks(i, p, m, v, schedule)
    acts = chunks * n_blocks / v * per_block
    if i == 0:
        params += vocab_rows * h + (s * h if arch.position == "learned" else 0)
        if arch.dropout:
            acts += _chunk_share(chunks, p, v, 0) * s * b * h / shared_split  # 1-byte dropout mask
    if i == p - 1:
        norm = (2 if arch.norm == "layernorm" else 1) * h
        params += norm + (vocab_rows * h if p > 1 or not arch.tied else 0)  # tied, p = 1: the embedding's
        head = 2 * e * s * b * h / shared_split + 4 * s * b * vocab_rows  # norm and output inputs, fp32 logits
        acts += _chunk_share(chunks, p, v, v - 1) * head
    # ZeRO stage k shards optimizer states from k = 1, gradients from k = 2, weights at k = 3
    weights, grads, opt = (params * n / (d if zero >= k else 1) for n, k in ((e, 3), (gb, 2), (ob, 1)))
    return StageMemory(i, params, weights, grads, opt, acts, chunks, weights + grads + opt + acts)
