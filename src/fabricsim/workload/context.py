"""Context parallelism as Megatron-Core runs it with Transformer Engine (`--context-parallel-size`,
`--cp-comm-type`; `transformer_engine/pytorch/attention.py`, `AttnFuncWithCPAndKVP2P`): each
sequence of s tokens is split over cp ranks, each holding s / cp tokens (in 2 cp chunks, rank i
holding chunks i and 2 cp - 1 - i, so that a causal mask gives every rank the same work).

Everything outside the attention core works on the rank's s / cp tokens: its linear layers,
norms, dropouts, MLP, embedding and head, their tensor-parallel collectives and the pipeline
transfers all shrink by cp. The attention core needs every key and value: the ranks' K/V chunks
pass around the cp group. Per rank and attention, with b sequences per microbatch, k key/value
heads of size d, t tensor ranks and e bytes per element:

- one K/V chunk is 2 b (s / cp) (k / t) d e bytes; the whole gathered K/V (nccl-tests' size of an
  all-gather over the cp group) `kv_bytes` = 2 b s (k / t) d e; a ring sends (cp - 1) chunks;
- `cp_comm` "p2p" (ring attention, Megatron's default): forward, the K/V chunks circulate beside the
  attention core (cp - 1 steps: an all-gather over the cp group running beside the core); backward,
  the K/V circulate again and their gradients follow them back (an all-gather, then a
  reduce-scatter of the same size), beside the core's backward;
- `cp_comm` "all_gather": forward, the K/V are all-gathered before the core; backward, gathered
  again before the core's backward and their gradients reduce-scattered after it (no overlap).

The core on one rank is cp blocks of s / cp queries against s / cp keys (`attention_cut`): causal
and fused, its FLOPs are exactly 1 / cp of the whole causal core; unfused (the full score matrix),
1 / cp of 4 s^2 h. Gradients are reduced over the dp x cp replicas (the ranks share the weights),
and optimizer states shard over them (`Strategy.replicas`).
"""

from __future__ import annotations

from ..errors import ConfigError
from .plan_parts import Comm, Step


def check(model, st, shaped: bool) -> None:
    """ConfigError unless context parallelism `st.cp` fits `model`: 1, or a transformer whose shape
    the kernels model (`shaped`, `plan.by_shape`) with seq a multiple of 2 cp, without selective
    recompute.

    Parameters
    ----------
    model : Model
        The model.
    st : Strategy
        The parallelization.
    shaped : bool
        Its kernels are modelled by shape under `st.mp` (`plan.by_shape`).
    """
    if st.cp == 1:
        return
    if not shaped:
        raise ConfigError("parallelism.cp", st.cp, f"accepted: 1 for {model.name} (context parallelism is modelled "
                                                   "for transformers by shape whose heads and ffn mp divides)")
    if model.seq % (2 * st.cp):
        raise ConfigError("parallelism.cp", st.cp, f"accepted: a divisor of seq / 2 = {model.seq / 2:g} (each "
                                                   "sequence is cut in 2 cp equal chunks)")
    if st.recompute == "selective":
        raise ConfigError("parallelism.recompute", "selective", "accepted with cp > 1: none or full (the attention "
                                                                "core's recompute would exchange K/V again)")


def kv_bytes(b: int, s: int, model, t: int, dtype_bytes: float) -> float:
    """The gathered keys and values of one attention on one rank (module doc): 2 b s (k / t) d e.

    Parameters
    ----------
    b, s : int
        Microbatch (sequences) and the whole sequence length (tokens).
    model : Model
        A transformer by shape (heads, hidden, key/value heads).
    t : int
        Tensor-parallel degree (dividing the key/value heads).
    dtype_bytes : float
        Bytes per element.

    Returns
    -------
    float
        Bytes (nccl-tests' size of the all-gather over the cp group).
    """
    k = model.shape.kv_heads if model.shape is not None else model.heads
    return float(2 * b * s * (k // t) * (model.hidden // model.heads) * dtype_bytes)


def comms(size: float) -> tuple[tuple[Comm, ...], tuple[Comm, ...]]:
    """(forward, backward) K/V exchanges of one attention (module doc): an all-gather; an all-gather
    then a reduce-scatter of the gradients.

    Parameters
    ----------
    size : float
        `kv_bytes`, bytes.

    Returns
    -------
    (tuple of Comm, tuple of Comm)
    """
    return (Comm("all-gather", size, over="cp"),), (Comm("all-gather", size, over="cp"),
                                                    Comm("reduce-scatter", size, over="cp"))


def attention_cut(K, b: int, s: int, h: int, a: int, t: int, cp: int, sp: bool, dtype_bytes: float, fused: bool,
                  **keys) -> tuple[tuple, tuple, tuple]:
    """The attention part of one rank as (before the core, the core, after it): the norm, QKV (bias,
    rotary) on b s / cp tokens; the core as cp blocks of s / cp queries against s / cp keys (the
    core of b cp sequences of s / cp tokens: the same FLOPs and bytes as s / cp queries against all
    s keys, module doc); the output projection and dropout-add.

    Parameters
    ----------
    K : module
        `workload.kernels`.
    b, s, h, a, t : int
        Microbatch, whole sequence length, hidden, heads, tensor-parallel degree.
    cp : int
        Context-parallel degree (dividing s).
    sp : bool
        Sequence parallelism.
    dtype_bytes : float
    fused : bool
        The fused attention kernel.
    **keys
        `attention_forward`'s shape keywords (kv_heads, bias, norm, rope).

    Returns
    -------
    (tuple, tuple, tuple)
        Kernels in execution order.
    """
    local = s // cp
    fwd = K.attention_forward(b, local, h, a, t, sp, dtype_bytes, fused, **keys)
    n_core = len(K.selective_recompute(b, local, h, a, t, dtype_bytes, fused, kv_heads=keys.get("kv_heads")))
    core = K.selective_recompute(b * cp, local, h, a, t, dtype_bytes, fused, kv_heads=keys.get("kv_heads"))
    return fwd[:len(fwd) - 2 - n_core], core, fwd[-2:]


def split(K, cuts: tuple, flops: float, dtype_bytes: float) -> tuple[Step, ...]:
    """`cuts` (kernel tuples) as Steps sharing `flops` as their kernels' FLOPs do (the model FLOPs
    stay the part's), each with its kernels' own bytes.

    Parameters
    ----------
    K : module
        `workload.kernels`.
    cuts : tuple of tuple
        Kernel tuples.
    flops : float
        The FLOPs the steps share.
    dtype_bytes : float

    Returns
    -------
    tuple of Step
    """
    total = K.flops(sum(cuts, ())) or 1.0
    return tuple(Step(flops * K.flops(c) / total, K.memory_bytes(c, dtype_bytes), c) for c in cuts)


__all__ = ["attention_cut", "check", "comms", "kv_bytes", "split"]
