"""A training iteration's time in closed form, milliseconds per strategy: what `fabricsim plan`
ranks thousands of strategies by before the engine simulates the best (`plan.search`).

The parts are the engine's own (`workload.plan.plan_layers`: every layer's parts, kernels and
collectives; the NPU's compute model prices the kernels; the network model prices each collective
once per distinct group and size), put together by the schedule's closed form instead of a
simulation:

- a layer's forward time per microbatch f_l: its tasks' times, each part's tensor-parallel
  collectives in sequence, a context-parallel K/V exchange beside the attention core ("p2p": the
  longer of the two) or before it ("all_gather": both), a mixture of experts' all-to-alls in
  sequence; its backward b_l the same way, Megatron's asynchronous TP collective beside the weight
  gradient (`Strategy.tp_overlap`: the longer of the two), plus recompute (selective: the core
  again; full: the forward again);
- ZeRO-3: each layer pass takes the longer of its compute and its parameter gather (the gathers
  run ahead, at most two in flight);
- the pipeline: each stage s sums its chunks' layers, T_s = F_s + B_s per microbatch; with m
  microbatches and v virtual stages the pipeline takes m max_s T_s + (sum_s T_s - max_s T_s) / v
  (balanced stages: (m + (p - 1) / v) T, 1F1B's and GPipe's bubble), plus the stage-boundary
  transfers of the fill and the drain, 2 (p - 1) transfers;
- data parallelism: after the last microbatch the stage's layers' collectives run in backward order,
  each once its layer's backward is done; what runs past the stage's end is exposed, less the
  stage's lead over stage 0 (stage s finishes s backward passes earlier); then the optimizer step.

The estimate ignores what the engine's scheduling adds (collectives of different kinds competing
for one stream, priorities) and the interleaved schedule's warm-up details; `plan.search` reports
its error against the engine for every simulated strategy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..workload.plan import layer_stages, optimizer_step, plan_layers
from ..workload.strategy import Strategy

CATEGORY = {"mp": "MP", "cp": "CP", "ep": "EP"}
PLAN_FIELDS = ("mp", "cp", "ep", "etp", "microbatch", "sequence_parallel", "recompute", "tp_overlap", "attention",
               "grad_dtype", "cp_comm")  # what a layer's plan depends on (`plan_layers`)


@dataclass(frozen=True)
class Estimate:
    """A strategy's estimated iteration (module doc). Times in s.

    Parameters
    ----------
    iteration_s : float
        One iteration.
    compute_s : float
        Compute of the busiest stage per iteration (all microbatches).
    exposed : dict
        Exposed communication per category (MP, CP, EP, PP, DP), s per iteration, busiest stage.
    bubble_s : float
        Pipeline fill and drain.
    model_flop : float
        Model FLOPs per iteration (every NPU), FLOP.
    """

    iteration_s: float
    compute_s: float
    exposed: dict
    bubble_s: float
    model_flop: float


@dataclass
class _Layer:
    """One layer's per-microbatch times, s: forward and backward with what they expose, by category."""

    f: float
    b: float
    comm: dict
    flops: float  # model FLOPs per NPU per microbatch
    grad: float  # gradient bytes per NPU
    expert_grad: float
    params: float
    act: float  # output activation of one microbatch, bytes (a stage-boundary transfer)


class Estimator:
    """Estimates iterations of one model on one system and network (module doc); caches every
    plan, kernel time and collective price it computes, so that strategies sharing them cost little.

    Parameters
    ----------
    model : Model
        A zoo model or a transformer by shape.
    system : System
        The NPU (its compute model prices kernels) and endpoint.
    pricer : CommPricer
        Prices collectives and transfers (`CommPricer.collective`, `p2p`), with the system's endpoint.
    """

    def __init__(self, model, system, pricer):
        self.model, self.npu, self.pricer = model, system.npu, pricer
        self._layers: dict = {}
        self._kernels: dict = {}
        self._comms: dict = {}
        self._dp: dict = {}  # (plan, zero, ep, group) -> each layer's data-parallel collectives, s
        self._opt: dict = {}  # (params, dtype) -> the optimizer step's kernels (one tuple each: `task` keys by value)

    def task(self, work, flops: float, mem: float) -> float:
        """One compute task's time, s: its kernels priced by the compute model, else the roofline."""
        if work is not None and self.npu.compute is not None:
            got = self._kernels.get(work)  # by value: equal kernels of other layers and strategies share it
            if got is None:
                got = self._kernels[work] = self.npu.compute.kernels_time(work)[0]
            return got
        return float(self.npu.compute_time(flops, mem))

    def comm(self, coll: str, group: tuple, size: float) -> float:
        """A collective's time over `group` (NPU ids), s; 0 for one member or no bytes."""
        if len(group) < 2 or size <= 0:
            return 0.0
        key = (coll, group, size)
        got = self._comms.get(key)
        if got is None:
            got = self._comms[key] = float(self.pricer.collective(coll, group, size))
        return got

    def __call__(self, st: Strategy) -> Estimate:
        """The estimate of one strategy (module doc).

        Parameters
        ----------
        st : Strategy

        Returns
        -------
        Estimate
            ConfigError where the strategy does not apply to the model (as `build_training`).
        """
        R = st.ranks()
        layers = self._plan(st, R)
        chunks = layer_stages(self.model, st.pp, st.virtual_stages) if st.stage_split == "layers" else None
        if chunks is None:
            from ..workload.emitter import _stages

            chunks = _stages(self.model, st.pp)
        per_stage, stage_chunks = [[] for _ in range(st.pp)], [[] for _ in range(st.pp)]
        for c, rng in enumerate(chunks):
            per_stage[c % st.pp].extend(rng)
            stage_chunks[c % st.pp].append(list(rng))
        gathers = st.zero == 3 and st.replicas > 1
        F, B, comm = np.zeros(st.pp), np.zeros(st.pp), [dict() for _ in range(st.pp)]
        for s, lis in enumerate(per_stage):
            dp_group = tuple(int(x) for x in R[0, s, :])
            for li in lis:
                lay = layers[li]
                g = self.comm("all-gather", dp_group, lay.params * self.model.dtype_bytes) if gathers else 0.0
                F[s] += max(lay.f, g)
                B[s] += max(lay.b, g) if st.reshard_after_forward else lay.b
                for k, v in lay.comm.items():
                    comm[s][k] = comm[s].get(k, 0.0) + v
        return self._assemble(st, R, layers, per_stage, stage_chunks, F, B, comm)

    def _plan(self, st: Strategy, R: np.ndarray) -> list[_Layer]:
        """Every layer's times under `st` (cached by what they depend on: `PLAN_FIELDS` and the groups)."""
        key = tuple(getattr(st, f) for f in PLAN_FIELDS) + (R[:, 0, 0].tobytes(), R[0, 0, :max(st.cp, st.ep)].tobytes())
        got = self._layers.get(key)
        if got is None:
            got = self._layers[key] = [self._layer(p, st, R) for p in plan_layers(self.model, st)]
        return got

    def _layer(self, plan, st: Strategy, R: np.ndarray) -> _Layer:
        """One layer's per-microbatch forward and backward times and exposed communication."""
        groups = {"mp": tuple(int(x) for x in R[:, 0, 0]), "cp": tuple(int(x) for x in R[0, 0, :st.cp]),
                  "ep": tuple(int(x) for x in R[0, 0, :st.ep])}
        f = b = flops = 0.0
        comm: dict = {}

        def seq(comms) -> float:  # collectives one after another, each exposed
            t = 0.0
            for c in comms:
                x = self.comm(c.coll, groups[c.over], c.size)
                comm[CATEGORY[c.over]] = comm.get(CATEGORY[c.over], 0.0) + x
                t += x
            return t

        for part in plan.parts:
            fwd = seq(part.fwd_pre) + self._cp(part.cp_fwd_steps, part.cp_fwd, groups["cp"], st, comm)
            fwd += self.task(part.fwd_work, part.fwd_flops, part.fwd_mem) + seq(part.fwd_post)
            bwd = self._cp(part.cp_bwd_steps, part.cp_bwd, groups["cp"], st, comm) + self._backward(part, seq, groups)
            if part.rc_flops > 0:
                bwd += self.task(part.rc_work, part.rc_flops, part.rc_mem)
            if st.recompute == "full" and part.block:
                bwd += fwd
            f, b = f + fwd, b + bwd
            ig = part.ig_flops if part.ig_flops > 0 else 0.0
            flops += part.fwd_flops + part.bwd_flops + ig + sum(s.flops for s in (part.cp_fwd_steps or ()))
            flops += sum(s.flops for s in (part.cp_bwd_steps or ()))
        return _Layer(f, b, comm, flops, plan.grad_bytes, plan.expert_grad_bytes, plan.params, plan.act_bytes)

    def _cp(self, steps, comms, group, st: Strategy, comm: dict) -> float:
        """Context parallelism's tasks before the rest of a part and its K/V exchange (module doc)."""
        if not comms:
            return 0.0
        (before, core) = steps
        t_before, t_core = self.task(before.work, before.flops, before.mem), self.task(core.work, core.flops, core.mem)
        t_comm = sum(self.comm(c.coll, group, c.size) for c in comms)
        if st.cp_comm == "p2p":
            exposed = max(0.0, t_comm - t_core)
        else:
            exposed = t_comm
        comm["CP"] = comm.get("CP", 0.0) + exposed
        return t_before + t_core + exposed

    def _backward(self, part, seq, groups) -> float:
        """A part's backward after its context-parallel prefix: one task and its collectives, or
        Megatron's asynchronous TP cut (the input gradient's collective beside the weight gradient)."""
        if part.bwd_steps is None:
            t = self.task(part.bwd_work, part.bwd_flops, part.bwd_mem)
            if part.ig_flops > 0:
                t += self.task(part.ig_work, part.ig_flops, part.ig_mem)
            return seq(part.bwd_pre) + t + seq(part.bwd_post)
        main, dx, dw, ln = (self.task(s.work, s.flops, s.mem) for s in part.bwd_steps)
        t = seq(part.bwd_pre) + main
        mp = groups["mp"]
        if part.bwd_pre:  # sequence parallel: the input gathered again beside the input gradient
            g = sum(self.comm(c.coll, mp, c.size) for c in part.bwd_pre)
            t += max(dx, g)
        else:
            t += dx
        post = sum(self.comm(c.coll, mp, c.size) for c in part.bwd_post)
        t += max(dw, post) + ln
        return t

    def _assemble(self, st: Strategy, R, layers, per_stage, stage_chunks, F, B, comm) -> Estimate:
        """The pipeline, its transfers, the data-parallel tail and the optimizer (module doc)."""
        m, p, v = st.microbatches, st.pp, st.virtual_stages
        T = F + B
        pipe = m * T.max() + (T.sum() - T.max()) / v
        pp_t = 0.0
        if p > 1 and per_stage[0]:  # as `emitter._send`: 1 / mp of the activation with sequence parallelism
            act = layers[per_stage[0][-1]].act / (st.mp if (st.sequence_parallel and st.mp > 1) else 1)
            pp_t = 2 * (p - 1) * float(self.pricer.p2p(int(R[0, 0, 0]), int(R[0, 1, 0]), act))
        dp_tail = max(self._dp_tail(st, R, layers, ch, s, B) for s, ch in enumerate(stage_chunks))
        params0 = sum(layers[li].params for li in per_stage[0])
        opt = 0.0
        if st.optimizer != "none":
            kernels = _opt_kernels(self, params0, self.model.dtype)
            opt = self.task(kernels, 0.0, sum(k.nbytes for k in kernels))
        busiest = int(np.argmax(T))
        exposed = {k: v_ * m for k, v_ in comm[busiest].items()}
        exposed["PP"] = pp_t
        exposed["DP"] = dp_tail
        flops = sum(lay.flops for lay in layers) * m * st.mp * st.replicas
        compute = m * T[busiest] - sum(exposed.get(k, 0.0) for k in ("MP", "CP", "EP"))
        return Estimate(pipe + pp_t + dp_tail + opt, compute, exposed, pipe - m * T.max(), flops)

    def _dp_tail(self, st: Strategy, R, layers, chunks, s: int, B) -> float:
        """Data-parallel collectives of stage `s` past the end of its last backward, less its lead
        over stage 0 (module doc), s. The stage's chunks (virtual stages) finish their last backward
        one after another in the drain, chunk k of its v (0 last) p chunk-backwards before the end."""
        if st.replicas == 1 or not any(chunks) or st.weight_streaming:
            return 0.0
        sync = self._syncs(st, R, layers)
        stream = -np.inf
        for k in range(len(chunks) - 1, -1, -1):  # chunk v - 1 finishes first
            b_chunk = sum(layers[li].b for li in chunks[k])
            ready = -k * st.pp * b_chunk - b_chunk  # its backward starts here (0: the stage's end)
            for li in reversed(chunks[k]):  # backward order: a layer's gradients are ready as its backward ends
                ready += layers[li].b
                stream = max(stream, ready) + sync[li]
        lead = s * B[s] / len(chunks)  # stage s ends s chunk-backward passes before stage 0 (the drain)
        return max(0.0, stream - lead)

    def _syncs(self, st: Strategy, R, layers) -> list[float]:
        """Each layer's data-parallel collectives, s, over stage 0's groups (every stage's are priced
        alike: the replicas of any stage sit as stage 0's do), cached per plan and ZeRO stage."""
        key = (id(layers), st.zero, st.ep, R[0, 0, :].tobytes())
        got = self._dp.get(key)
        if got is None:
            group = tuple(int(x) for x in R[0, 0, :])
            ep_group = tuple(int(x) for x in R[0, 0, ::st.ep]) if st.ep > 1 else group
            got = self._dp[key] = [self._sync(st, group, lay.grad) + self._sync(st, ep_group, lay.expert_grad)
                                   for lay in layers]
        return got

    def _sync(self, st: Strategy, group: tuple, nbytes: float) -> float:
        """One layer's gradient collectives over `group` (zero 0: all-reduce; 1, 2: reduce-scatter
        then all-gather; 3: reduce-scatter), s."""
        if nbytes <= 0:
            return 0.0
        if st.zero == 0:
            return self.comm("all-reduce", group, nbytes)
        rs = self.comm("reduce-scatter", group, nbytes)
        return rs + (self.comm("all-gather", group, nbytes) if st.zero in (1, 2) else 0.0)


def _opt_kernels(est: Estimator, params: float, dtype: str) -> tuple:
    """The optimizer step's kernels for `params` parameters, cached per count and dtype."""
    key = (params, dtype)
    got = est._opt.get(key)
    if got is None:
        got = est._opt[key] = optimizer_step(params, dtype)
    return got


__all__ = ["Estimate", "Estimator"]
