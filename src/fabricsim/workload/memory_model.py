"""The memory model of Megatron-style 3D-parallel transformer training: per transformer block and per
pipeline stage.

Per NPU of stage i (all in bytes): weights, gradients and optimizer states of the stage's
parameters (sharded over the `dp` replicas by the ZeRO stage), plus the activations of the
microbatches in flight at the stage's peak, after Korthikanti et al. 2022, "Reducing Activation
Recomputation in Large Transformer Models" (arXiv 2205.05198), Section 4 and Table 2: one block's
parameters (`block_params`) and stored activations (`activation_bytes_per_block`), summed per stage
over its blocks and the microbatches the pipeline schedule holds (`stage_memory`).

`workload.memory` re-exports all of this and searches the changes of a strategy that fit a
capacity; the model lives apart so that its equations are read, and tested, on their own.

Not modelled: workspace buffers (cuBLAS, NCCL, communication buckets), allocator fragmentation,
the one block whose activations are rebuilt at a time under recomputation, ZeRO-3's gathered
layer, the gradient of the activation in flight between stages, Megatron's padding of the
vocabulary to a multiple of 128 t, and LayerNorm statistics (2sb per LayerNorm, Section 4.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..errors import ConfigError

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


def block_params(hidden: int, ffn: int, tp: int = 1) -> int:
    """Parameters of one transformer block held by one tensor-parallel rank.

    A block holds QKV (3h^2 + 3h), the attention output projection (h^2 + h), two LayerNorms
    (4h) and the MLP (2 h ffn + ffn + h): 4h^2 + 2 h ffn + ffn + 9h in all, 12h^2 + 13h with
    ffn = 4h. Megatron splits the QKV and first MLP layer by columns (weights and biases) and
    the output projection and second MLP layer by rows (weights only), so the two row-parallel
    biases (2h) and the LayerNorms (4h) are replicated on every rank and counted on each.

    Parameters
    ----------
    hidden : int
        Hidden size h.
    ffn : int
        MLP inner size, a multiple of `tp`.
    tp : int
        Tensor-parallel ranks t, dividing h.

    Returns
    -------
    int
        (4h^2 + 2 h ffn + ffn + 3h) / t + 6h.

    Examples
    --------
    >>> block_params(64, 256), 12 * 64**2 + 13 * 64
    (49984, 49984)
    """
    h = hidden
    return (4 * h * h + 2 * h * ffn + ffn + 3 * h) // tp + 6 * h


def activation_bytes_per_block(s: int, b: int, h: int, a: int, t: int, sequence_parallel: bool,
                               recompute: str, ffn: int | None = None, dtype_bytes: int = 2) -> float:
    """Activation bytes one transformer block stores for one microbatch on one tensor rank.

    Korthikanti et al. Section 4.1 counts, with 16-bit activations and 1-byte dropout masks:
    attention 11sbh + 5as^2b (QKV input 2sbh, Q and K 4sbh, V 2sbh, projection input 2sbh,
    dropout mask sbh; softmax output 2as^2b, its dropout mask as^2b, dropout output 2as^2b),
    MLP 19sbh (first layer input 2sbh, GeLU input 8sbh, second layer input 8sbh, mask sbh),
    LayerNorm inputs 4sbh: sbh(34 + 5as/h) (Eq. 1). Tensor parallelism (Section 4.2.1, Eq. 2)
    splits 24sbh and the 5as^2b scores by t, leaving the LayerNorm inputs, the QKV and first MLP
    layer inputs and the two masks (10sbh) replicated: sbh(10 + 24/t + 5as/(ht)); sequence
    parallelism (Section 4.2.2) splits those 10sbh too: sbh/t(34 + 5as/h). Selective
    recomputation (Section 5) drops the 5as^2b scores; full recomputation keeps only the block's
    input, 2sbh (Section 5), split by t with sequence parallelism as Megatron stores it.
    These are the rows of Table 2.

    The breakdown generalizes cleanly with e = `dtype_bytes` bytes per element and any ffn: the
    GeLU and second-layer inputs are ffn wide (2e sb ffn, 16sbh at ffn = 4h, split by t); the other
    split terms are 4e sbh (Q, K, V, projection input), the replicated ones (4e + 2)sbh, the
    scores (2e + 1)as^2b/t (masks stay 1 byte). With e = 2 and ffn = 4h this is Table 2 exactly.

    Parameters
    ----------
    s, b, h, a : int
        Sequence length (tokens), microbatch size (sequences), hidden size, attention heads.
    t : int
        Tensor-parallel ranks.
    sequence_parallel : bool
        Megatron sequence parallelism in the LayerNorm and dropout regions.
    recompute : str
        "none", "selective" or "full".
    ffn : int, optional
        MLP inner size; 4h when not given.
    dtype_bytes : int
        Bytes per stored activation element (2: fp16/bf16).

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
    if recompute not in RECOMPUTE:
        raise ConfigError("recompute", recompute, "accepted: " + ", ".join(RECOMPUTE))
    f = 4 * h if ffn is None else ffn
    e = dtype_bytes
    sbh = s * b * h
    shared_split = 1 / t if sequence_parallel else 1.0  # the regions that sequence parallelism splits
    if recompute == "full":
        return e * sbh * shared_split
    split = (4 * e * sbh + 2 * e * s * b * f) / t
    replicated = (4 * e + 2) * sbh * shared_split
    scores = 0.0 if recompute == "selective" else (2 * e + 1) * a * s * s * b / t
    return split + replicated + scores


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
                 stage_blocks: list[int] | None = None, grad_bytes: int = 4,
                 optimizer_bytes: int = 12) -> tuple[StageMemory, ...]:
    """Peak memory of one NPU of each pipeline stage (module doc; Korthikanti et al. Section 4).

    Parameters: each stage's blocks (`block_params`); the word embedding, ceil(V/t) rows of h per
    rank (vocabulary-parallel), and the learned position embedding, s h replicated on every tensor
    rank as Megatron-LM keeps it, on stage 0; the final LayerNorm (2h) and, with pp > 1, the tied
    output head's copy of the word embedding on the last stage. Weights take `dtype_bytes`,
    gradients `grad_bytes` and optimizer states `optimizer_bytes` per parameter; ZeRO divides the
    optimizer states by dp from stage 1, the gradients from stage 2, the weights at stage 3.

    Activations (stage i): c_i chunk-microbatches in flight, each storing its chunk's blocks
    (the stage's blocks / v) times `activation_bytes_per_block`. c_i is m with GPipe,
    min(p - i, m) with 1F1B, and with interleaved 1F1B (v > 1, Megatron-LM's schedule)
    min(2(p - i - 1) + (v - 1)p + 1, m v) (m v when m = p): with m > p stage 0 holds p v + p - 1 chunks,
    p (1 + (p - 1)/(p v)) stage-microbatches, the factor of Section 4.2.3 (Eq. 5), where with
    v = 1 the first stage holds p microbatches of L/p blocks, sbhL/t(34 + 5as/h) in all.
    Section 4.3 adds the embedding's dropout mask, sbh/t per microbatch in flight through stage
    0's first chunk (sbhp/t on the first stage; sbh without sequence parallelism), and on the last
    stage, per microbatch in flight through its last chunk, the final LayerNorm's and output
    layer's inputs (2e sbh/t each; not split without sequence parallelism) and the fp32 logits
    4sbV/t: 4sbh/t(1 + V/h). The paper counts these on the first stage only when p = 1; here
    they sit on the stage that holds them. Recomputation leaves them stored.

    Parameters
    ----------
    layers, hidden, heads, seq, vocab : int
        Transformer blocks L, hidden size h, attention heads a, sequence length s (tokens),
        vocabulary V.
    ffn : int, optional
        MLP inner size (4h when not given).
    dtype_bytes : int
        Bytes per weight and per stored activation element (2: fp16/bf16).
    tp, pp, dp : int
        Tensor-parallel ranks t (dividing heads), pipeline stages p, data-parallel replicas d.
    microbatch, microbatches : int
        Sequences per microbatch b; microbatches per iteration per pipeline m.
    schedule : str
        "gpipe" or "1f1b".
    virtual_stages : int
        Model chunks per stage v for Megatron-LM's interleaved 1F1B (1: plain; needs "1f1b",
        pp > 1, m >= p and each stage's blocks a multiple of v).
    recompute : str
        "none", "selective" (attention scores) or "full" (keep each block's input only).
    sequence_parallel : bool
        Megatron sequence parallelism.
    zero : int
        ZeRO stage over the dp replicas, 0 to 3.
    stage_blocks : list of int, optional
        Transformer blocks on each of the pp stages, summing to L (L/p each when not given).
    grad_bytes, optimizer_bytes : int
        Bytes per parameter of gradients (4: Megatron's fp32 main gradients) and of optimizer
        states (12: fp32 master weights and Adam's two fp32 moments).

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
                       dtype_bytes, grad_bytes, optimizer_bytes, ffn)
    _check_choices(z, schedule, recompute, sequence_parallel, zero)
    blocks = _checked_stage_blocks(z, stage_blocks)
    per_block = activation_bytes_per_block(z.s, z.b, z.h, z.a, z.t, sequence_parallel, recompute, z.f, z.e)
    return tuple(_stage(z, i, blocks[i], per_block, schedule, sequence_parallel, zero) for i in range(z.p))


class _Sizes(NamedTuple):
    """`stage_memory`'s checked sizes, by the paper's letters (its Parameters section)."""

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


def _checked_sizes(layers, hidden, heads, seq, vocab, tp, pp, dp, microbatch, microbatches, virtual_stages,
                   dtype_bytes, grad_bytes, optimizer_bytes, ffn) -> _Sizes:
    """The sizes as `_Sizes`, each an integer >= 1 (bytes of gradients and optimizer states >= 0)."""
    L, h, a, s, V = (_int(k, x) for k, x in
                     (("layers", layers), ("hidden", hidden), ("heads", heads), ("seq", seq), ("vocab", vocab)))
    t, p, d, b, m, v = (_int(k, x) for k, x in (("tp", tp), ("pp", pp), ("dp", dp), ("microbatch", microbatch),
                                                ("microbatches", microbatches), ("virtual_stages", virtual_stages)))
    e = _int("dtype_bytes", dtype_bytes)
    gb, ob = _int("grad_bytes", grad_bytes, 0), _int("optimizer_bytes", optimizer_bytes, 0)
    f = 4 * h if ffn is None else _int("ffn", ffn)
    return _Sizes(L, h, a, s, V, t, p, d, b, m, v, e, gb, ob, f)


def _check_choices(z: _Sizes, schedule: str, recompute: str, sequence_parallel: bool, zero: int) -> None:
    """None when the sizes divide as Megatron splits them and the strategy's choices are known, else ConfigError."""
    h, a, t, f, p, m, v = z.h, z.a, z.t, z.f, z.p, z.m, z.v
    if h % a:
        raise ConfigError("hidden", h, f"accepted: a multiple of heads ({a})")
    if a % t:
        divisors = ", ".join(str(k) for k in range(1, a + 1) if a % k == 0)
        raise ConfigError("tp", t, f"accepted: a divisor of heads ({a}): {divisors}")
    if f % t:
        raise ConfigError("ffn", f, f"accepted: a multiple of tp ({t})")
    for name, value, names in (("schedule", schedule, SCHEDULES), ("recompute", recompute, RECOMPUTE)):
        if value not in names:
            raise ConfigError(name, value, "accepted: " + ", ".join(names))
    if not isinstance(sequence_parallel, bool):
        raise ConfigError("sequence_parallel", sequence_parallel, "accepted: true or false")
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


def _stage(z: _Sizes, i: int, n_blocks: int, per_block: float, schedule: str, sequence_parallel: bool,
           zero: int) -> StageMemory:
    """The `StageMemory` of stage `i`, holding `n_blocks` transformer blocks (`stage_memory` doc)."""
    _, h, _, s, V, t, p, d, b, m, v, e, gb, ob, f = z  # the paper's letters; L and a are not needed here
    shared_split = t if sequence_parallel else 1
    vocab_rows = -(-V // t)
    params = n_blocks * block_params(h, f, t)
    chunks = _peak_chunks(i, p, m, v, schedule)
    acts = chunks * n_blocks / v * per_block
    if i == 0:
        params += vocab_rows * h + s * h
        acts += _chunk_share(chunks, p, v, 0) * s * b * h / shared_split  # 1-byte dropout mask
    if i == p - 1:
        params += 2 * h + (vocab_rows * h if p > 1 else 0)  # with p = 1 the head reuses the embedding
        head = 2 * e * s * b * h / shared_split + 4 * s * b * vocab_rows  # LN and output inputs, fp32 logits
        acts += _chunk_share(chunks, p, v, v - 1) * head
    # ZeRO stage k shards optimizer states from k = 1, gradients from k = 2, weights at k = 3
    weights, grads, opt = (params * n / (d if zero >= k else 1) for n, k in ((e, 3), (gb, 2), (ob, 1)))
    return StageMemory(i, params, weights, grads, opt, acts, chunks, weights + grads + opt + acts)
