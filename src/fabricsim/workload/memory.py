"""Memory per pipeline stage of Megatron-style 3D-parallel transformer training, and the changes of
a strategy that bring it under the NPU's memory.

The model (`workload.memory_model`, re-exported here): per NPU of stage i (all in bytes), weights,
gradients and optimizer states of the stage's parameters (sharded over the `dp` replicas by the
ZeRO stage), plus the activations of the microbatches in flight at the stage's peak, after
Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models" (arXiv
2205.05198), Section 4 and Table 2, for any `TransformerShape` (grouped-query attention, SwiGLU,
RMSNorm, no biases, untied embeddings, rotary positions, mixture-of-experts blocks under expert
parallelism (`workload.memory_moe`): `stage_memory`'s keywords, read off a model by
`shape_arguments`); what it leaves out is listed in its module doc. A strategy dict with those
keywords keeps them through every change `fitting_changes` tries.

`fitting_changes` says which single changes of the strategy (or pairs of them) bring every stage
under a capacity; `check_memory` names them when it refuses a job.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ConfigError
from ..units import format_size

# re-exported: the model, importable from here as before
from .memory_model import RECOMPUTE, SCHEDULES, StageMemory, activation_bytes_per_block, block_params  # noqa: F401
from .memory_model import shape_arguments, stage_memory  # noqa: F401
from .memory_moe import moe_mlp_activation_bytes, moe_mlp_params  # noqa: F401

ON_EXCEED = ("error", "warn", "ignore")
ZERO_STAGES = (1, 2, 3)
CHANGES = ("recompute", "sequence_parallel", "zero", "pp", "schedule", "microbatch")
"""The kinds of single change `fitting_changes` tries, in its order."""


@dataclass(frozen=True)
class Fit:
    """A change of the strategy and the peak memory it leaves.

    Parameters
    ----------
    fields : dict
        The strategy's fields that change and their new values, as a `workload.parallelism:`
        config writes them (`{"recompute": "full"}`; `{"pp": 8, "dp": 1, "microbatches": 16}`).
    peak : float
        Bytes: the largest stage's peak after the change.
    strategy : dict
        The `stage_memory` arguments after the change.
    """

    fields: dict
    peak: float
    strategy: dict

    @property
    def change(self) -> str:
        """The change as config text: `pp: 8, dp: 1, microbatches: 16`."""
        return ", ".join(f"{k}: {str(v).lower() if isinstance(v, bool) else v}" for k, v in self.fields.items())


def _single_changes(kw: dict, zero_stages, blocks_for, accepts=None, before=None) -> list[tuple[str, dict, dict]]:
    """(kind, changed fields, arguments) of each single change of `kw` (`stage_memory`'s arguments)
    that applies, in the order of `CHANGES`; each keeps the global batch, dp x microbatches x
    microbatch, and the NPUs, tp x pp x dp. `before`: the fields an earlier change set (a pair);
    `accepts(fields)`: whether the caller can run the change (both changes of a pair)."""
    t, p, d = kw.get("tp", 1), kw.get("pp", 1), kw.get("dp", 1)
    m, b, zero = kw.get("microbatches", 1), kw.get("microbatch", 1), kw.get("zero", 0)
    recompute = kw.get("recompute", "none")
    out = []  # (kind, fields as a config writes them, other stage_memory arguments that follow)
    if recompute == "none":
        out.append(("recompute", {"recompute": "selective"}, {}))
    if recompute != "full":
        out.append(("recompute", {"recompute": "full"}, {}))
    if t > 1 and not kw.get("sequence_parallel", False):
        out.append(("sequence_parallel", {"sequence_parallel": True}, {}))
    if d > 1:
        out += [("zero", {"zero": z}, {}) for z in zero_stages if z > zero]
    if d % 2 == 0:  # twice the stages on the same NPUs: half the replicas, each running twice the microbatches
        if blocks_for is not None:
            blocks = blocks_for(2 * p)
        else:
            blocks = None if kw["layers"] % (2 * p) == 0 else False
        if blocks is not False:
            out.append(("pp", {"pp": 2 * p, "dp": d // 2, "microbatches": 2 * m}, {"stage_blocks": blocks}))
    if kw.get("schedule", "1f1b") == "gpipe":
        out.append(("schedule", {"schedule": "1f1b"}, {}))
    if b % 2 == 0:  # half the microbatch size: twice the microbatches
        out.append(("microbatch", {"microbatches": 2 * m}, {"microbatch": b // 2}))
    return [(kind, fields, {**kw, **fields, **more}) for kind, fields, more in out
            if accepts is None or accepts({**(before or {}), **fields})]


def _peak(kw: dict) -> float | None:
    """The largest stage's peak bytes under `kw` (`stage_memory`'s arguments), None where they do not apply."""
    try:
        return max(st.total for st in stage_memory(**kw))
    except ConfigError:  # the change does not apply to this shape (stages, chunks, heads)
        return None


def fitting_changes(capacity: float, strategy: dict, *, zero_stages=ZERO_STAGES, blocks_for=None, accepts=None,
                    most: int = 3, pairs: bool = True) -> tuple[list[Fit], str]:
    """Single changes of a strategy that bring every pipeline stage's peak within `capacity`.

    Tried in this order, each from `strategy` alone (those that do not apply are skipped):
    `recompute: selective`, `recompute: full`, `sequence_parallel: true` (tp > 1), `zero: z` for the
    stages in `zero_stages` above the current one (dp > 1), twice the pipeline stages on the same
    NPUs (dp even: dp / 2 replicas running twice the microbatches of the same size), `schedule: 1f1b`
    (from GPipe: at most pp microbatches in flight), and half the microbatch size (b even: twice the
    microbatches). Each is priced by `stage_memory`. When none fits alone and `pairs` is true, the
    pairs of changes of different kinds are tried, in the same order.

    Parameters
    ----------
    capacity : float
        Bytes per NPU.
    strategy : dict
        `stage_memory`'s keyword arguments (the shape and the strategy as they are).
    zero_stages : iterable of int
        The ZeRO stages the caller can run (a `fabricsim train` config: 2).
    blocks_for : callable, optional
        pp -> the transformer blocks of each of pp stages (`stage_blocks`) as the caller splits the
        model, or False where it cannot; without it, L / pp each where pp divides L.
    accepts : callable, optional
        The changed fields (`Fit.fields`) -> whether the caller's strategy takes them (a change the
        caller's other settings refuse is not named); without it, every change is taken.
    most : int
        Fits to return at most.
    pairs : bool
        Try pairs when no single change fits.

    Returns
    -------
    (list of Fit, str)
        Up to `most` changes that fit, in the order tried, and "single" or "pair"; with none that
        fits, "none" and the three single changes with the lowest peaks (all over `capacity`).

    Examples
    --------
    >>> kw = dict(layers=4, hidden=64, heads=4, seq=32, vocab=100, pp=2, dp=2, microbatches=4)
    >>> max(st.total for st in stage_memory(**kw))
    2316032.0
    >>> fits, how = fitting_changes(1.6e6, kw)
    >>> how, [(f.change, f.peak) for f in fits]  # doctest: +NORMALIZE_WHITESPACE
    ('single', [('zero: 2', 1448704.0), ('zero: 3', 1340288.0),
                ('pp: 4, dp: 1, microbatches: 8', 1420416.0)])
    >>> fitting_changes(1e6, kw)[1], fitting_changes(1e6, kw)[0][0].change
    ('pair', 'recompute: full, zero: 3')
    >>> fitting_changes(1e3, kw)[1]
    'none'
    """
    singles = [(kind, Fit(fields, peak, kw))
               for kind, fields, kw in _single_changes(strategy, zero_stages, blocks_for, accepts)
               if (peak := _peak(kw)) is not None]
    closest = sorted((f for _, f in singles), key=lambda f: f.peak)[:3]
    fits = [f for _, f in singles if f.peak <= capacity]
    if fits:
        return fits[:most], "single"
    if not pairs:
        return closest, "none"
    found = []
    for kind, first in singles:
        for kind2, fields, kw in _single_changes(first.strategy, zero_stages, blocks_for, accepts, first.fields):
            if CHANGES.index(kind2) <= CHANGES.index(kind):
                continue  # each pair once, and two of a kind (recompute twice) are not a pair
            peak = _peak(kw)
            if peak is not None and peak <= capacity:
                found.append(Fit({**first.fields, **fields}, peak, kw))
                if len(found) == most:
                    return found, "pair"
    return (found, "pair") if found else (closest, "none")


def fits_text(capacity: float, strategy: dict, **search) -> str:
    """What would fit, as the end of a refusal: `fits with: recompute: full (61.2 GiB) or ...`.

    Parameters
    ----------
    capacity : float
        Bytes per NPU.
    strategy : dict
        `stage_memory`'s keyword arguments.
    **search
        `fitting_changes`'s options (`zero_stages`, `blocks_for`, `accepts`).

    Returns
    -------
    str
        One phrase: the changes that fit with their peaks (alternatives joined by " or "), or the
        pairs that do when no single change fits, or that none does and the closest single changes.

    Examples
    --------
    >>> kw = dict(layers=4, hidden=64, heads=4, seq=32, vocab=100, pp=2, dp=2, microbatches=4)
    >>> fits_text(1.6e6, kw, zero_stages=(2,))
    'fits with: zero: 2 (1.38 MiB) or pp: 4, dp: 1, microbatches: 8 (1.35 MiB)'
    >>> for alternative in fits_text(1.2e6, kw, zero_stages=(2,)).split(" or "):
    ...     print(alternative)
    no single change fits; these pairs do: recompute: full, zero: 2 (1.05 MiB)
    recompute: full, pp: 4, dp: 1, microbatches: 8 (1.03 MiB)
    """
    fits, how = fitting_changes(capacity, strategy, **search)
    listed = " or ".join(f"{f.change} ({format_size(f.peak, 3)})" for f in fits)  # a change may hold commas
    if how != "none":
        return f"fits with: {listed}" if how == "single" else f"no single change fits; these pairs do: {listed}"
    closest = f"; the closest single changes: {listed}" if fits else ""
    return ("no single change or pair of changes fits: combine more of recompute, sequence_parallel, zero, "
            f"more pipeline stages, smaller microbatches, or more NPUs{closest}")


def check_memory(stages, capacity: float, on_exceed: str = "error", field: str = "system.npu.memory",
                 strategy: dict | None = None, **search) -> list[str]:
    """Compare each stage's peak with the NPU's memory.

    Parameters
    ----------
    stages : iterable of StageMemory
        From `stage_memory`.
    capacity : float
        Bytes of memory per NPU, > 0.
    on_exceed : str
        "error": raise when a stage is over capacity, naming the stage with the largest peak;
        "warn": return a line per such stage; "ignore": return nothing.
    field : str
        The field the error names (the NPU's memory as the user configured it).
    strategy : dict, optional
        The `stage_memory` arguments `stages` came from: the error then names the changes that fit
        (`fits_text`); without it, the kinds of change that need less.
    **search
        `fitting_changes`'s options (`zero_stages`, `blocks_for`, `accepts`).

    Returns
    -------
    list of str
        One line per stage over capacity ("warn"), else empty.

    Raises
    ------
    ConfigError
        With "error", one line naming `field`, the capacity, the stage's need and what to change
        (with `strategy`: the single changes that fit and their peaks).

    Examples
    --------
    >>> st = stage_memory(layers=2, hidden=64, heads=4, seq=32, vocab=100)
    >>> check_memory(st, 2**20, "warn")
    ['stage 0 needs 2.06 MiB, more than the 1 MiB of the NPU']
    """
    if on_exceed not in ON_EXCEED:
        raise ConfigError("on_exceed", on_exceed, "accepted: " + ", ".join(ON_EXCEED))
    if isinstance(capacity, bool) or not isinstance(capacity, (int, float)) or not 0 < capacity < math.inf:
        raise ConfigError(field, capacity, "accepted: a finite memory size > 0 bytes")
    if on_exceed == "ignore":
        return []
    lines = []
    stages = tuple(stages)
    for st in stages:
        if st.total <= capacity:
            continue
        need, cap = format_size(st.total, 3), format_size(capacity, 3)
        if on_exceed == "error":
            st = max(stages, key=lambda x: x.total)  # "at least" the largest peak, not the first stage over
            need = format_size(st.total, 3)
            less = (fits_text(capacity, strategy, **search) if strategy is not None else
                    "or need less: recompute activations, more pipeline stages, fewer microbatches in flight, "
                    "a higher ZeRO stage")
            raise ConfigError(field, cap, f"accepted: at least {need}, the peak of pipeline stage {st.stage} (weights "
                                          f"{format_size(st.weights, 3)}, gradients {format_size(st.gradients, 3)}, "
                                          f"optimizer {format_size(st.optimizer, 3)}, activations "
                                          f"{format_size(st.activations, 3)}); {less}")
        lines.append(f"stage {st.stage} needs {need}, more than the {cap} of the NPU")
    return lines


def blocks_per_stage(model, pp: int, stage_split: str = "flops") -> list[int] | None:
    """Transformer blocks on each of `pp` contiguous pipeline stages, split as the workload graph
    splits them (`plan.layer_stages` for "layers", the emitter's FLOP balance for "flops").

    Parameters
    ----------
    model : Model
        With transformer blocks; `pp` contiguous stages of them, split by `stage_split` ("flops" or
        "layers", `Strategy.stage_split`).
    pp : int
    stage_split : str

    Returns
    -------
    list of int or None
        Blocks per stage, stage 0 first; None when a stage would hold no block (the memory model
        needs one per stage). ConfigError when the split refuses `pp` (more stages than layers,
        blocks that do not split evenly).
    """
    from .emitter import _stages  # lazy: the emitter imports the graph builders
    from .plan import layer_stages

    split = layer_stages(model, pp) if stage_split == "layers" else _stages(model, pp)
    blocks = [sum(model.layers[i].kind == "transformer_block" for i in r) for r in split]
    return blocks if min(blocks) >= 1 else None


def memory_arguments(model, st, blocks: list[int] | None = None) -> dict | None:
    """`stage_memory`'s keywords for `model` under the strategy `st`: the one place a strategy
    becomes memory-model arguments (`fabricsim.train.memory_of`, `fabricsim.plan.space`).

    Parameters
    ----------
    model : Model
        A zoo model or a transformer by shape.
    st : workload.strategy.Strategy
        The parallelization.
    blocks : list of int, optional
        `blocks_per_stage(model, st.pp, st.stage_split)` when the caller has it already (a cache);
        computed otherwise.

    Returns
    -------
    dict or None
        The keywords (sizes in elements, `grad_bytes` in bytes per gradient); None where the memory
        model does not apply: Korthikanti's forms need Megatron's layout (`plan.by_shape`) with the
        weights on the NPUs, contiguous stages and at least one block per stage. ConfigError when
        the stage split refuses `st.pp`.
    """
    from .models import DTYPES
    from .plan import by_shape

    if not by_shape(model, st.mp) or st.stage_layout != "contiguous" or st.weight_streaming:
        return None
    if blocks is None:
        blocks = blocks_per_stage(model, st.pp, st.stage_split)
    if blocks is None:
        return None
    return dict(shape_arguments(model), tp=st.mp, pp=st.pp, dp=st.dp, microbatch=st.microbatch,
                microbatches=st.microbatches, schedule=st.schedule, virtual_stages=st.virtual_stages,
                recompute=st.recompute, sequence_parallel=st.sequence_parallel, zero=st.zero,
                stage_blocks=list(blocks), grad_bytes=DTYPES[st.grad_dtype] if st.grad_dtype else 4,
                ep=st.ep, etp=st.expert_tp, cp=st.cp,
                fused_attention=st.attention == "fused")  # expert (tensor) and context parallelism
