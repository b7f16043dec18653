"""The mixture-of-experts terms of the memory model (`workload.memory_model`): parameters and stored
activations of a MoE block's MLP on one NPU, under tensor (t), expert (ep) and expert-tensor (etp)
parallelism as Megatron-Core lays them out (`megatron/core/transformer/moe/`).

A MoE block (`TransformerShape.is_moe`) keeps the dense block's attention, norms and dropout, and
replaces its MLP by a router (`router.py`, `TopKRouter`: a weight of E x h, no bias), E routed
experts (`experts.py`, `GroupedMLP`/`SequentialMLP`) and S shared experts (`shared_experts.py`,
`SharedExpertMLP`), each an MLP of m matrices of h x f_e (m = 2 gelu, 3 swiglu).

Parameters per NPU (elements): the router's h E, replicated on every tensor rank (Megatron-Core
keeps the router weight whole); E / ep routed experts, each m h f_e / etp plus, with biases,
(m - 1) f_e / etp (its input matrices' column-parallel biases) and h (fc2's, replicated); the S
shared experts as a dense MLP of f_e split over t: S (m h f_e + (m - 1) f_e) / t + S h. The routed
experts are the *expert* parameters, replicated over the expert-data-parallel group of
d t / (ep etp) NPUs (d / ep with etp = t), over which ZeRO and the distributed optimizer shard them;
the router and shared experts are dense, sharded over d like the rest.

Activations (bytes, one microbatch of b sequences of s tokens, e bytes per element; r = t with
sequence parallelism, else 1), of the MLP part only (the rest is the dense block's):
  router input e sbh / r (the tokens of this rank; the same tensor as the dense fc1 input, which
    `activation_bytes_per_block` counts, and the shared experts' input);
  router probabilities 4 sbE / r (fp32 logits through softmax and top-k, `TopKRouter`);
  dispatched tokens: the token copies this rank's experts receive after the all-to-all over ep and
    the all-gather over etp (`token_dispatcher.py`), T = s b k q etp / t with k = top_k and
    q = moe_imbalance (the busiest expert's tokens over the mean), q = min(q, capacity_factor) when
    the capacity factor drops tokens (> 0); each stored as the experts' fc1 input, e T h;
  each routed expert's fc1 output and fc2 input as the dense MLP stores them, per token routed here:
    m e T f_e / etp (gelu: its input and output; swiglu: gate and up, and their product);
  the combine output (`token_unpermutation`, the weighted sum of the expert outputs) e sbh / r;
  the shared experts as a dense MLP of S f_e: m e s b S f_e / t (input: the router's).
Selective recomputation leaves these (it drops the attention scores); full recomputation keeps only
the block's input, as for a dense block.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

from ..errors import ConfigError
from .memory_block import activation_bytes_per_block, block_params


class MoeArgs(NamedTuple):
    """A MoE layout, checked (`checked_moe`): experts E, top_k k, shared experts S, expert inner size
    f_e, the 0-based MoE blocks, capacity factor c (0: dropless), imbalance q, expert-parallel ranks
    ep, expert-tensor-parallel ranks etp, and the expert-data-parallel replicas edp = d t / (ep etp)."""

    experts: int
    top_k: int
    shared: int
    ffn: int
    blocks: frozenset
    capacity_factor: float
    imbalance: float
    ep: int
    etp: int
    edp: int


def _count(field: str, value, least: int) -> int:
    """`value` when an integer >= `least`, else ConfigError naming `field`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
        raise ConfigError(field, value, f"accepted: an integer >= {least}")
    return int(value)


def checked_moe(*, layers: int, ffn: int, tp: int, dp: int, experts: int, top_k: int, shared_experts: int,
                expert_ffn: int | None, moe_layers, capacity_factor: float, moe_imbalance: float, ep: int,
                etp: int | None) -> MoeArgs | None:
    """The MoE arguments of `stage_memory`, checked; None for a dense model (experts 0).

    `moe_layers` None: every block; `expert_ffn` 0 or None: `ffn`; `etp` None: t. ep divides E and
    d t / etp; etp divides t and f_e; t divides S f_e. ConfigError naming the first bad field.
    """
    ep = _count("ep", ep, 1)
    etp = tp if etp is None else _count("etp", etp, 1)
    if _count("experts", experts, 0) == 0:
        return None
    k, S = _count("top_k", top_k, 1), _count("shared_experts", shared_experts, 0)
    if k > experts:
        raise ConfigError("top_k", top_k, f"accepted: at most experts = {experts}")
    fe = ffn if not expert_ffn else _count("expert_ffn", expert_ffn, 1)
    blocks = range(layers) if moe_layers is None else moe_layers
    if not isinstance(blocks, (list, tuple, range, frozenset, set)) or any(
            isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < layers for i in blocks):
        raise ConfigError("moe_layers", moe_layers, f"accepted: blocks 0..{layers - 1}")
    for name, value, least in (("capacity_factor", capacity_factor, 0.0), ("moe_imbalance", moe_imbalance, 1.0)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= least:
            raise ConfigError(name, value, f"accepted: a number >= {least:g}")
    if experts % ep:
        raise ConfigError("ep", ep, f"accepted: a divisor of experts ({experts})")
    if tp % etp or fe % etp:
        raise ConfigError("etp", etp, f"accepted: a divisor of tp ({tp}) and of expert_ffn ({fe})")
    if (dp * (tp // etp)) % ep:
        raise ConfigError("ep", ep, f"accepted: a divisor of dp x tp / etp ({dp * (tp // etp)})")
    if (S * fe) % tp:
        raise ConfigError("tp", tp, f"accepted: a divisor of shared_experts x expert_ffn ({S * fe})")
    return MoeArgs(int(experts), k, S, fe, frozenset(int(i) for i in blocks), float(capacity_factor),
                   float(moe_imbalance), ep, etp, dp * (tp // etp) // ep)


def moe_mlp_params(hidden: int, moe: MoeArgs, tp: int = 1, *, ffn_act: str = "gelu",
                   bias: bool = True) -> tuple[int, int]:
    """Parameters of one MoE block's MLP held by one NPU (module doc), in elements.

    Returns
    -------
    (int, int)
        (dense, expert): the router h E plus the shared experts
        S ((m h f_e + (m - 1) f_e) / t + h), and the E / ep routed experts
        (E / ep) ((m h f_e + (m - 1) f_e) / etp + h); the biases with `bias` only.

    Examples
    --------
    >>> moe = MoeArgs(8, 2, 0, 14336, frozenset(), 0.0, 1.0, 1, 1, 1)  # Mixtral 8x7B's MLP
    >>> moe_mlp_params(4096, moe, ffn_act="swiglu", bias=False)
    (32768, 1409286144)
    """
    h, m, fe = hidden, 3 if ffn_act == "swiglu" else 2, moe.ffn
    split = m * h * fe + ((m - 1) * fe if bias else 0)  # one expert's column- and row-parallel parts
    replicated = h if bias else 0  # fc2's bias
    dense = h * moe.experts + moe.shared * (split // tp + replicated)
    expert = moe.experts // moe.ep * (split // moe.etp + replicated)
    return dense, expert


def moe_mlp_activation_bytes(s: int, b: int, h: int, t: int, sequence_parallel: bool, moe: MoeArgs,
                             ffn_act: str = "gelu", dtype_bytes: int = 2) -> float:
    """Activation bytes a MoE block's MLP stores for one microbatch on one NPU beyond what
    `activation_bytes_per_block(..., ffn=0)` counts (its fc1 input is the router input; module doc):
    4 sbE / r + e T h + m e T f_e / etp + e sbh / r + m e s b S f_e / t, with
    T = s b k q etp / t routed token copies (q capped by the capacity factor when > 0).

    Examples
    --------
    >>> moe = MoeArgs(4, 2, 0, 64, frozenset(), 0.0, 1.0, 1, 1, 1)
    >>> s, b, h = 8, 1, 16
    >>> moe_mlp_activation_bytes(s, b, h, 1, False, moe) == 4*s*b*4 + 2*s*b*2*h + 2*2*s*b*2*64 + 2*s*b*h
    True
    """
    e, m, r = dtype_bytes, 3 if ffn_act == "swiglu" else 2, t if sequence_parallel else 1
    q = min(moe.imbalance, moe.capacity_factor) if moe.capacity_factor > 0 else moe.imbalance
    routed = s * b * moe.top_k * q * moe.etp / t  # token copies this rank's experts receive
    router = 4 * s * b * moe.experts / r  # fp32 probabilities
    experts = e * routed * h + m * e * routed * moe.ffn / moe.etp  # experts' input; fc1 output, fc2 input
    shared = m * e * s * b * moe.shared * moe.ffn / t
    return router + experts + e * s * b * h / r + shared  # the combine output


def stage_moe_blocks(stage_blocks: list[int], moe: MoeArgs | None) -> list[int]:
    """MoE blocks on each stage, the stages holding consecutive blocks in model order (stage 0 first)."""
    out, start = [], 0
    for n in stage_blocks:
        out.append(0 if moe is None else sum(1 for i in range(start, start + n) if i in moe.blocks))
        start += n
    return out


def moe_block_memory(z, arch, moe: MoeArgs | None, sequence_parallel: bool,
                     recompute: str) -> tuple[int, int, float, int]:
    """One MoE block on one NPU: (dense parameters, expert parameters, activation bytes per
    microbatch, expert-data-parallel replicas edp). The dense block's attention, norms and dropout
    (`memory_model.block_params` and `activation_bytes_per_block` with no MLP, whose fc1 input is the
    router's input) plus this module's MLP (module doc). Zeros and d for a dense model.

    `z` and `arch` are `memory_model`'s checked sizes (h, a, k, s, b, t, e, d) and architecture.
    """
    if moe is None:
        return 0, 0, 0.0, z.d
    attention = block_params(z.h, 0, z.t, heads=z.a, kv_heads=z.k, ffn_act=arch.ffn_act, norm=arch.norm,
                             bias=arch.bias) - (z.h if arch.bias else 0)  # fc2's bias is the experts'
    dense, expert = moe_mlp_params(z.h, moe, z.t, ffn_act=arch.ffn_act, bias=arch.bias)
    acts = activation_bytes_per_block(z.s, z.b, z.h, z.a, z.t, sequence_parallel, recompute, 0, z.e, kv_heads=z.k,
                                      ffn_act=arch.ffn_act, dropout=arch.dropout, fused=arch.fused)
    if recompute != "full":
        acts += moe_mlp_activation_bytes(z.s, z.b, z.h, z.t, sequence_parallel, moe, arch.ffn_act, z.e)
    return attention + dense, expert, acts, moe.edp
