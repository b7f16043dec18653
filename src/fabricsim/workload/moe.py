"""A mixture-of-experts block's MLP as Megatron-Core runs it with expert parallelism
(`megatron/core/transformer/moe/`: `TopKRouter`, `MoEAlltoAllTokenDispatcher`, `GroupedMLP`,
`SharedExpertMLP`): its kernels, FLOPs and communication per GPU per microbatch.

Notation: b microbatch, s sequence, h hidden, E routed experts, k top_k, S shared experts, f_e one
expert's inner size, m = 2 (gelu) or 3 (swiglu) matrices of h x f_e per expert, e bytes per
element, t tensor-parallel degree (= etp: each expert is split over the tensor ranks like the
dense MLP), ep expert-parallel ranks (from the data-parallel replicas), q the load factor
(`load_factor`: `moe_imbalance`, capped by `capacity_factor` when > 0).

The MLP part of a MoE block (`TransformerShape.is_moe`) runs as three parts (`mlp_parts`), all named
`<block>.mlp` so that reports keep them with their block:

1. router: the post-attention norm, the router GEMM (b s tokens x h -> E; the router weight is whole
   on every tensor rank), softmax and top-k in fp32, and the permutation of the k token copies;
   then the dispatch all-to-all over the EP group;
2. experts: the E / ep local experts' MLPs on the tokens they receive; then the combine all-to-all;
3. shared: the un-permutation (the weighted sum of a token's k expert outputs), the S shared
   experts as one dense MLP of S f_e on all b s tokens, the dropout-add.

The tensor-parallel collectives of the dense MLP frame the three (before the router, after the
shared experts); backward mirrors it: the combine's and the dispatch's backward all-to-alls come
before the experts' and the router's backward (4 all-to-alls per MoE block and microbatch; 6 with
full recompute, which runs the forward's again). The MoE parts' backward runs as one task each
(no asynchronous tensor-parallel overlap).

All-to-all size per MoE block, direction and GPU (nccl-tests' convention: the bytes each rank
holds; a rank sends (ep - 1) / ep of it): b s k h e. Routing imbalance changes what a rank receives,
not what it sends; that size is kept.

FLOPs per GPU per microbatch (model FLOPs, as `shapes.transformer` counts them, divided over t):
the routed experts 2 b s k q P_e / t, P_e one expert's parameters (`expert_params`): with
balanced, dropless routing (q = 1) each of the ep ranks of a group receives on average the b s k
token copies its own tokens send, so the three parts add up to the block's MLP share of the
`Layer`'s active-parameter FLOPs; with imbalance q the busiest rank gets q times the mean and,
since the all-to-all makes the group wait for it, every rank is charged q times the routed
experts' compute (q > 1 adds FLOPs: the critical path's, not the model's). The shared experts
2 b s S P_e / t, the router the rest (2 b s (h E + norms and biases) / t). Backward twice forward.
The experts' GEMMs: `Gemm(T_e, n, h, count=E / ep)` with T_e = ceil(b s k q ep / E) tokens per
local expert (whole tokens: exact when E / ep divides b s k q; Megatron's grouped GEMM).
"""

from __future__ import annotations

import math

from ..errors import ConfigError
from ..system.compute import Gemm, Memory
from .plan_parts import Comm, Part


def load_factor(shape) -> float:
    """The busiest expert's tokens over the mean: `moe_imbalance`, capped at `capacity_factor`
    when that is > 0 (tokens beyond the capacity are dropped).

    Parameters
    ----------
    shape : TransformerShape
        A mixture-of-experts shape.

    Returns
    -------
    float
        q >= 1.
    """
    q = shape.moe_imbalance
    return min(q, shape.capacity_factor) if shape.capacity_factor > 0 else q


def expert_params(shape) -> int:
    """Parameters of one expert: m h f_e weights, plus (m - 1) f_e + h biases when `bias`.

    Parameters
    ----------
    shape : TransformerShape

    Returns
    -------
    int
        Elements.
    """
    h, fe, m = shape.hidden, shape.moe_ffn, shape.mlp_mats
    return m * h * fe + (((m - 1) * fe + h) if shape.bias else 0)


def all_to_all_bytes(b: int, s: int, shape, dtype_bytes: float) -> float:
    """Size of one dispatch or combine all-to-all per GPU (module doc): b s k h e bytes.

    Parameters
    ----------
    b, s : int
        Microbatch (sequences) and sequence length (tokens).
    shape : TransformerShape
    dtype_bytes : float
        Bytes per activation element.

    Returns
    -------
    float
        Bytes each rank holds (nccl-tests' size).
    """
    return float(b * s * shape.top_k * shape.hidden * dtype_bytes)


def check(shape, ep: int, model_name: str) -> None:
    """ConfigError unless `ep` fits the model: 1 for a dense model, else a divisor of its experts.

    Parameters
    ----------
    shape : TransformerShape or None
    ep : int
        Expert-parallel ranks.
    model_name : str
    """
    experts = shape.experts if shape is not None else 0
    if ep > 1 and not experts:
        raise ConfigError("parallelism.ep", ep,
                          f"accepted: 1 ({model_name} is dense: expert parallelism needs experts)")
    if experts and experts % ep:
        raise ConfigError("parallelism.ep", ep, f"accepted: a divisor of experts = {experts} ({model_name})")


def router_forward(b: int, s: int, shape, t: int, sp: bool, dtype_bytes: float = 2) -> tuple:
    """Kernels before the dispatch, one GPU, one microbatch: norm (b s / t tokens with sequence
    parallelism), router GEMM (b s, E, h), softmax and top-k over fp32 logits (read e, write 4
    bytes, then read 4 and write 4 + 8 per logit: probabilities and indices), the permutation
    (read b s h, write b s k h).

    Returns
    -------
    tuple of Gemm and Memory
    """
    h, E, k, e = shape.hidden, shape.experts, shape.top_k, dtype_bytes
    tokens = b * s // t if sp else b * s
    norm = Memory(2 * tokens * h * e, "post-attention " + ("RMSNorm" if shape.norm == "rmsnorm" else "layer norm"),
                  backward_bytes=5 * tokens * h * e)
    return (norm, Gemm(b * s, E, h), Memory(b * s * E * (e + 16), "router softmax top-k"),
            Memory(b * s * h * (1 + k) * e, "token permutation"))


def experts_forward(tokens: float, local: int, shape, t: int, dtype_bytes: float = 2) -> tuple:
    """Kernels of the local experts, one GPU, one microbatch: each of `local` experts an MLP of
    f_e / t on ceil(tokens / local) tokens (a grouped GEMM per matrix), its activation between.

    Parameters
    ----------
    tokens : float
        Token copies this GPU's experts receive (b s k q).
    local : int
        Experts on this GPU (E / ep).
    shape : TransformerShape
    t : int
        Expert tensor-parallel degree, dividing f_e.
    dtype_bytes : float

    Returns
    -------
    tuple of Gemm and Memory
        fc1, activation, fc2.
    """
    h, f, e = shape.hidden, shape.moe_ffn // t, dtype_bytes
    te = max(1, math.ceil(tokens / local))
    n = te * local
    prefix = "bias-" if shape.bias else ""
    if shape.ffn_act == "swiglu":
        fc1 = Gemm(te, 2 * f, h, count=local)
        act = Memory(3 * n * f * e, prefix + "SwiGLU (experts)", backward_bytes=5 * n * f * e)
    else:
        fc1 = Gemm(te, f, h, count=local)
        act = Memory(2 * n * f * e, prefix + "GeLU (experts)")
    return fc1, act, Gemm(te, h, f, count=local)


def shared_forward(b: int, s: int, shape, t: int, sp: bool, dtype_bytes: float = 2) -> tuple:
    """Kernels after the combine, one GPU, one microbatch: the un-permutation (read b s k h, write
    b s h), the shared experts as one MLP of S f_e / t on all b s tokens (none when S = 0), the
    dropout-add (b s / t tokens with sequence parallelism).

    Returns
    -------
    tuple of Gemm and Memory
    """
    h, k, e = shape.hidden, shape.top_k, dtype_bytes
    tokens = b * s // t if sp else b * s
    out = [Memory(b * s * h * (k + 1) * e, "token un-permutation")]
    if shape.shared_experts:
        f = shape.shared_experts * shape.moe_ffn // t
        swiglu = shape.ffn_act == "swiglu"
        out += [Gemm(b * s, 2 * f if swiglu else f, h),
                Memory((3 if swiglu else 2) * b * s * f * e, "shared experts " + ("SwiGLU" if swiglu else "GeLU"),
                       backward_bytes=(5 if swiglu else 4) * b * s * f * e),
                Gemm(b * s, h, f)]
    return (*out, Memory(tokens * h * (3 * e + 1), "MLP dropout-add"))


def mlp_parts(model, st, layer, mlp_flops: float, pre: tuple, post: tuple, K) -> tuple[tuple, float, float]:
    """The MLP of a MoE block as three parts (module doc).

    Parameters
    ----------
    model : Model
        A transformer by shape with experts.
    st : Strategy
        The parallelization (mp, ep, microbatch, sequence parallelism).
    layer : Layer
        The block (per-sequence costs).
    mlp_flops : float
        The block's forward FLOPs per sequence outside the attention part (of this rank's seq / cp tokens).
    pre, post : tuple of Comm
        The tensor-parallel collectives before and after the MLP (`plan._tp_comms`).
    K : module or None
        `workload.kernels` when the block is modelled by shape (kernels), else None.

    Returns
    -------
    (tuple of Part, float, float)
        The parts; dense and expert parameters per GPU: the router's h E whole (Megatron-Core
        keeps it whole on every tensor rank) plus the rest / t, and E / ep experts / t.
    """
    shape, mb, t, e = model.shape, st.microbatch, st.mp, model.dtype_bytes
    s, h, E, k = model.seq // st.cp, model.hidden, shape.experts, shape.top_k  # this rank's tokens (context parallel)
    q, pe, local = load_factor(shape), expert_params(shape), E // st.ep
    scale = mb / t
    routed1 = 2.0 * s * k * pe * scale  # balanced
    shared = 2.0 * s * shape.shared_experts * pe * scale
    router = mlp_flops * scale - routed1 - shared
    ratio = layer.bwd_flops / layer.fwd_flops if layer.fwd_flops else 2.0
    a2a = (Comm("all-to-all", all_to_all_bytes(mb, s, shape, e), over="ep"),) if st.ep > 1 else ()
    act = float(mb * s * h)  # one activation, elements
    works: list = [None, None, None]
    if K is not None and shape.moe_ffn % t == 0 and (shape.shared_experts * shape.moe_ffn) % t == 0:
        sp = st.sequence_parallel
        works = [router_forward(mb, s, shape, t, sp, e), experts_forward(mb * s * k * q, local, shape, t, e),
                 shared_forward(mb, s, shape, t, sp, e)]
    specs = (  # flops, weights (elements), activations moved (elements), comms (fwd_pre, fwd_post, bwd_pre, bwd_post)
        (router, h * E, act * (2 + k), (pre, a2a, a2a, post)),
        (routed1 * q, local * pe / t, 2 * act * k * q, ((), a2a, a2a, ())),
        (shared, shape.shared_experts * pe / t, act * (k + 3), ((), post, pre, ())),
    )
    parts = []
    for (flops, w, moved, (fp, fq, bp, bq)), fw in zip(specs, works):
        parts.append(Part(f"{layer.name}.mlp", flops, (w + moved) * e, flops * ratio, (2 * w + 1.5 * moved) * e,
                          -1.0, 0.0, fp, fq, bp, bq, fw, K.backward(fw) if fw is not None else None, block=True))
    dense = (layer.params - E * pe - h * E) / t + h * E
    return tuple(parts), dense, local * pe / t


__all__ = ["all_to_all_bytes", "check", "expert_params", "experts_forward", "load_factor", "mlp_parts",
           "router_forward", "shared_forward"]
