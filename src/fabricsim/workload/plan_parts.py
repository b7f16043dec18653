"""The plan's parts: what one NPU runs per microbatch of a layer (`Part`, its backward cut in
`Step`s), the collectives around a part (`Comm`) and a layer's plan (`LayerPlan`). Apart from
`plan` so that the modules that make parts (`plan` for dense blocks, `moe` for a mixture of
experts) both import them, and neither the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Comm:
    """One collective around a part: `coll` of `size` bytes (nccl-tests' size) over the MP group, or
    (`over` "ep") over the expert-parallel group (a mixture of experts' all-to-alls, `workload.moe`),
    or ("cp") over the context-parallel group (K/V exchanges, `workload.context`)."""

    coll: str
    size: float
    over: str = "mp"


@dataclass(frozen=True)
class Step:
    """One compute task's share of a part's backward: FLOPs, bytes and kernels."""

    flops: float
    mem: float
    work: tuple | None = None


@dataclass(frozen=True)
class Part:
    """One compute unit of a layer, per NPU per microbatch (module doc). FLOPs, bytes; kernels
    (tuples of `system.compute.Gemm`/`Memory`) or None where the shape is unknown."""

    name: str
    fwd_flops: float
    fwd_mem: float
    bwd_flops: float  # combined input+weight gradient (block parts) or weight gradient
    bwd_mem: float
    ig_flops: float  # input gradient run separately after the weight gradient (-1: combined)
    ig_mem: float
    fwd_pre: tuple[Comm, ...] = ()  # before the forward compute (sequence parallel all-gather)
    fwd_post: tuple[Comm, ...] = ()  # after it (all-reduce, or reduce-scatter)
    bwd_pre: tuple[Comm, ...] = ()
    bwd_post: tuple[Comm, ...] = ()
    fwd_work: tuple | None = None
    bwd_work: tuple | None = None
    ig_work: tuple | None = None
    rc_flops: float = 0.0  # selective recompute before the backward (0: none)
    rc_mem: float = 0.0
    rc_work: tuple | None = None
    block: bool = False  # a transformer block part (full recompute re-runs its forward)
    bwd_steps: tuple[Step, ...] | None = None  # the backward cut for overlapped TP communication (below)
    # context parallelism (`workload.context`): the K/V exchanges over the cp group and the tasks before
    # the part's own forward / backward (which then hold only what follows the attention core)
    cp_fwd: tuple[Comm, ...] = ()  # beside (p2p) or before (all_gather) the core's forward
    cp_bwd: tuple[Comm, ...] = ()  # the same for its backward: K/V again, then their gradients
    cp_fwd_steps: tuple[Step, Step] | None = None  # (before the core, the core)
    cp_bwd_steps: tuple[Step, Step] | None = None  # (the output projection's backward, the core's backward)


@dataclass(frozen=True)
class LayerPlan:
    """A layer's parts, its gradient bytes per NPU and its output activation of one microbatch.
    A mixture-of-experts block's expert gradients (`expert_grad_bytes`) are reduced over the
    replicas holding the same experts (dp / ep), its other gradients (`grad_bytes`) over dp."""

    name: str
    parts: tuple[Part, ...]
    grad_bytes: float  # per NPU
    act_bytes: float  # output activation of one microbatch (full)
    params: float  # parameters per NPU (the optimizer step)
    expert_grad_bytes: float = 0.0  # per NPU: routed experts' gradients (expert-data-parallel group)


__all__ = ["Comm", "LayerPlan", "Part", "Step"]
