"""Every strategy a plan config's search allows (`enumerate_space`), pruned before anything is timed.

The knobs of `search:` (`plan.schema.KNOBS`) are combined in a fixed order (tp slowest, then pp,
cp, ep, virtual_stages, microbatch, recompute, sequence_parallel, zero; each knob's values in
`SearchSection.choices` order), dp = gpus / (tp x pp x cp) and microbatches = batch / (dp x
microbatch). Each combination is judged in three steps, and counted under the first it fails:

1. invalid: tp x pp x cp does not divide the GPUs, dp x microbatch does not divide the batch, or
   the workload graph would refuse the strategy: `Strategy`'s own checks (sequence parallelism
   only with tp > 1, virtual stages only with even layer splits and microbatches a multiple of
   pp, ep a divisor of dp x cp, ...), tp dividing a transformer's heads, key/value heads and ffn
   (`workload.plan.by_shape`), cp (`workload.context.check`), ep (`workload.moe.check`), the
   stage split (more stages than layers) and the layer plans (`workload.plan.plan_layers`:
   sequence parallelism needs tp dividing the sequence, FP8 needs shapes, ...), or the memory
   model refusing it (as `fabricsim train` would);
2. constraints: `tp_within_node` (tp <= GPUs per node, where the topology has nodes);
3. memory: the memory model's peak per GPU (`workload.memory.memory_arguments`, the arguments
   `fabricsim.train.memory_of` checks) above (1 - memory_headroom) x the NPU's memory; not
   applied when the memory is unbounded or the memory model does not apply (peak None).

The stage split is "layers" (Megatron-LM's, equal transformer blocks per stage) when the blocks
split evenly over pp x virtual_stages, else "flops", unless `search.fixed` names one. Nothing is
built: the layer plans are computed once per (tp, cp, sequence_parallel, recompute, ep) and the
memory model once per distinct argument set, so 10,000 combinations take about a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from itertools import product

from ..errors import ConfigError
from ..workload.strategy import Strategy
from .schema import PlanConfig


@dataclass(frozen=True)
class Candidate:
    """A strategy that runs, meets the constraints and fits in memory.

    Parameters
    ----------
    strategy : Strategy
        The parallelization (batch: the searched batch).
    fields : dict
        The `workload.parallelism:` mapping that gives `strategy` (the knobs, dp, microbatches, the
        stage split and `search.fixed`): `plan.schema.train_config_for` writes its config.
    peak_memory : float or None
        Bytes per GPU at the peak, the largest stage's (`workload.memory.stage_memory`); None where
        the memory model does not apply.
    """

    strategy: Strategy
    fields: dict
    peak_memory: float | None


@dataclass(frozen=True)
class Space:
    """What `enumerate_space` found.

    Parameters
    ----------
    candidates : tuple of Candidate
        In enumeration order (module doc).
    combos : int
        Combinations of the knobs judged; combos = len(candidates) + the three pruned counts.
    pruned_invalid, pruned_constraints, pruned_memory : int
        Combinations dropped at each step (module doc), each counted once, under the first step
        it fails.
    n_gpus : int
        GPUs of the network.
    gpus_per_node : int or None
        GPUs per node of the topology; None where it has no nodes (tp_within_node is vacuous).
    memory_limit : float
        Bytes a GPU's peak may reach: (1 - memory_headroom) x the NPU's memory (inf: unbounded).
    """

    candidates: tuple[Candidate, ...]
    combos: int
    pruned_invalid: int
    pruned_constraints: int
    pruned_memory: int
    n_gpus: int
    gpus_per_node: int | None
    memory_limit: float = math.inf

    @property
    def pruned(self) -> int:
        """Combinations dropped, for any reason."""
        return self.pruned_invalid + self.pruned_constraints + self.pruned_memory


class _Judge:
    """The verdicts of one enumeration, with its caches (each keyed by everything the cached result
    depends on that varies between candidates; the model and `search.fixed` do not)."""

    def __init__(self, cfg: PlanConfig):
        self.model = cfg.train.workload.build_model()
        self.base = cfg.base_strategy()
        self.batch, self.n = cfg.batch, cfg.n_gpus
        self.n_blocks = len(self.model.blocks())
        self.fixed = dict(cfg.search.fixed)
        c = cfg.search.constraints
        self.tp_max = cfg.gpus_per_node if c.tp_within_node and cfg.gpus_per_node else None
        cap = cfg.train.system.npu.build().memory_capacity  # bytes; inf without a memory
        self.limit = (1.0 - c.memory_headroom) * cap if math.isfinite(cap) else math.inf
        self._tp: dict = {}
        self._split: dict = {}
        self._plans: dict = {}
        self._peaks: dict = {}

    def tp_ok(self, tp: int) -> bool:
        """Megatron's layout under tp for a transformer (`by_shape`); tp 1 always (the roofline)."""
        if tp not in self._tp:
            from ..workload.plan import by_shape

            self._tp[tp] = tp == 1 or not self.n_blocks or by_shape(self.model, tp)
        return self._tp[tp]

    def stage_split(self, pp: int, vs: int) -> str:
        """search.fixed's stage split, else "layers" when the blocks split evenly over pp x vs."""
        even = self.n_blocks and self.n_blocks % (pp * vs) == 0
        return self.fixed.get("stage_split") or ("layers" if even else "flops")

    def blocks(self, st: Strategy):
        """Blocks per stage (`memory.blocks_per_stage`, cached per split); ConfigError when the
        split refuses pp (the graph would too: more stages than layers, an uneven layer split)."""
        key = (st.pp, st.virtual_stages, st.stage_split)
        if key not in self._split:
            from ..workload.emitter import _stages
            from ..workload.memory import blocks_per_stage
            from ..workload.plan import layer_stages

            try:
                if st.stage_split == "layers":  # every chunk of the pp x virtual_stages the same blocks
                    layer_stages(self.model, st.pp, st.virtual_stages)
                elif not self.n_blocks:
                    _stages(self.model, st.pp)  # at most one stage per layer
                self._split[key] = (blocks_per_stage(self.model, st.pp, st.stage_split) if self.n_blocks
                                    else None, None)
            except ConfigError as e:
                self._split[key] = (None, e)
        blocks, err = self._split[key]
        if err is not None:
            raise err
        return blocks

    def plans(self, st: Strategy) -> None:
        """ConfigError where the layer plans refuse `st` (`plan.plan_layers`). Its checks read tp,
        cp, sequence parallelism, recompute and ep (and fixed keys), never the microbatch size
        (which only scales sizes >= 1): cached without it."""
        key = (st.mp, st.cp, st.sequence_parallel, st.recompute, st.ep)
        if key not in self._plans:
            from ..workload import context, moe
            from ..workload.plan import by_shape, plan_layers

            try:
                moe.check(self.model.shape, st.ep, self.model.name)
                context.check(self.model, st, by_shape(self.model, st.mp))
                plan_layers(self.model, st)
                self._plans[key] = None
            except ConfigError as e:
                self._plans[key] = e
        if self._plans[key] is not None:
            raise self._plans[key]

    def peak(self, st: Strategy) -> float | None:
        """The largest stage's peak bytes (`stage_memory` on `memory_arguments`, cached per argument
        set), None where the memory model does not apply; ConfigError where it refuses `st`."""
        from ..workload.memory import memory_arguments, stage_memory

        blocks = self.blocks(st)
        kw = None if blocks is None else memory_arguments(self.model, st, blocks)
        if kw is None:
            return None
        key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in kw.items()))
        if key not in self._peaks:
            try:
                self._peaks[key] = max(s.total for s in stage_memory(**kw))
            except ConfigError as e:
                self._peaks[key] = e
        if isinstance(self._peaks[key], ConfigError):
            raise self._peaks[key]
        return self._peaks[key]

    def judge(self, tp: int, pp: int, cp: int, ep: int, vs: int, mb: int, rc: str, sp: bool,
              zero: int) -> str | Candidate:
        """The first step the combination fails ("invalid", "constraints", "memory"; module doc), or
        its Candidate."""
        dp = self.n // (tp * pp * cp)  # the caller checked that tp x pp x cp divides the GPUs
        if self.batch % (dp * mb):
            return "invalid"
        fields = dict(mp=tp, dp=dp, pp=pp, cp=cp, ep=ep, microbatches=self.batch // (dp * mb), virtual_stages=vs,
                      stage_split=self.stage_split(pp, vs), recompute=rc, sequence_parallel=sp, zero=zero)
        try:
            st = replace(self.base, **fields)  # replace runs Strategy's checks again
            self.blocks(st)
            self.plans(st)
            peak = self.peak(st)
        except ConfigError:
            return "invalid"
        if self.tp_max is not None and tp > self.tp_max:
            return "constraints"
        if peak is not None and peak > self.limit:
            return "memory"
        return Candidate(st, {**fields, **{k: v for k, v in self.fixed.items() if k not in fields}}, peak)


def enumerate_space(cfg: PlanConfig, *, workers: int = 1, dask: str | None = None) -> Space:
    """Every combination of the search's knobs, judged and pruned (module doc).

    Parameters
    ----------
    cfg : PlanConfig
        A validated plan config (`plan.schema.load_plan_config`).
    workers : int
        Local processes judging contiguous runs of (tp, pp, cp) blocks (1: this process; 0: one per
        CPU); the result does not depend on it.
    dask : str, optional
        Judge on Dask instead: a scheduler address or `local:N`.

    Returns
    -------
    Space
        The candidates in enumeration order and the pruned counts; the same inputs give the same
        Space. ConfigError only where the config itself is refused (`PlanConfig.base_strategy`).
    """
    import os

    ch = cfg.search.choices()
    blocks = list(product(ch["tp"], ch["pp"], ch["cp"]))
    n = 1 if (workers == 1 and not dask) else min(len(blocks), 4 * (workers or os.cpu_count() or 1))
    if n <= 1:
        found, counts, combos = _judge_blocks(cfg, blocks)
    else:
        bounds = [len(blocks) * k // n for k in range(n + 1)]
        data = {**cfg.mapping, "search": cfg.search.model_dump(mode="json", exclude_none=True)}
        from dataclasses import asdict

        from ..limits import current_limits

        limits = asdict(current_limits())  # a worker validates the config again under the caller's limits
        jobs = [(data, cfg.source, cfg.train.base_dir, blocks[a:b], limits) for a, b in zip(bounds[:-1], bounds[1:])]
        parts = _map(_judge_job, jobs, workers, dask)
        found, counts, combos = [], {"invalid": 0, "constraints": 0, "memory": 0}, 0
        for f, c, k in parts:
            found += f
            combos += k
            for key in counts:
                counts[key] += c[key]
    judge_limit = _Judge(cfg).limit
    return Space(tuple(found), combos, counts["invalid"], counts["constraints"], counts["memory"], cfg.n_gpus,
                 cfg.gpus_per_node, judge_limit)


def _judge_blocks(cfg: PlanConfig, blocks) -> tuple[list, dict, int]:
    """(candidates, pruned counts, combinations) of the (tp, pp, cp) `blocks`, in order."""
    ch = cfg.search.choices()
    judge = _Judge(cfg)
    inner = list(product(ch["ep"], ch["virtual_stages"], ch["microbatch"], ch["recompute"], ch["sequence_parallel"],
                         ch["zero"]))
    counts = {"invalid": 0, "constraints": 0, "memory": 0}
    found: list[Candidate] = []
    combos = 0
    for tp, pp, cp in blocks:
        combos += len(inner)
        if cfg.n_gpus % (tp * pp * cp) or not judge.tp_ok(tp):  # the whole block at once
            counts["invalid"] += len(inner)
            continue
        for ep, vs, mb, rc, sp, zero in inner:
            v = judge.judge(tp, pp, cp, ep, vs, mb, rc, sp, zero)
            if isinstance(v, Candidate):
                found.append(v)
            else:
                counts[v] += 1
    return found, counts, combos


def _judge_job(job) -> tuple[list, dict, int]:
    """`_judge_blocks` of one run of blocks, from plain data (a pool's or Dask's task)."""
    from .schema import plan_config

    from ..limits import raised_limits

    data, source, base_dir, blocks, limits = job
    with raised_limits(**limits):
        return _judge_blocks(plan_config(data, source, base_dir=base_dir), blocks)


def _map(fn, jobs: list, workers: int, dask: str | None) -> list:
    """fn over jobs, in order, on a process pool of `workers` (0: one per CPU) or on Dask."""
    if dask:
        from ..sweep.run import dask_map

        with dask_map(dask) as map_fn:
            return list(map_fn(fn, jobs))
    import multiprocessing
    import os

    from ..sweep.run import _ignore_interrupts

    with multiprocessing.Pool(workers or os.cpu_count(), initializer=_ignore_interrupts) as pool:
        return pool.map(fn, jobs)


__all__ = ["Candidate", "Space", "enumerate_space"]
