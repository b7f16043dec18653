"""The graph emitter of contiguous pipeline stages (GPipe or 1F1B): what each NPU runs, task by
task, for a model under a strategy, as the `workload.parallelism` module doc describes it.

`_Emitter` walks the stages' programs and emits every compute task, Megatron collective,
stage-boundary transfer, data-parallel collective, weight-streaming and input-loading io task and
optimizer step; `workload.pipeline` (FRED's interleaved layout) and `workload.megatron` (virtual
stages) subclass it. It lives apart from `build_training`, which picks the emitter, so that the
entry point and its rules are read in one short module and the task-by-task mechanics in this one.

Mixture of experts (`workload.moe`): the dispatch and combine all-to-alls of a MoE block run over
each expert-parallel group, the ep NPUs at the same stage and tensor rank in consecutive replicas
(replicas j ep .. j ep + ep - 1), category "EP". Expert gradients are reduced over the
expert-data-parallel group, the dp / ep replicas holding the same experts (r, r + ep, r + 2 ep, ...),
the dense ones over all dp replicas; the next iteration's forward waits for both. Folded, each
collective carries the first copy's real group (`price`).

Replicas: the third axis of the rank array (`Strategy.ranks`) holds the dp x cp replicas of each
MP rank, replica r being context rank r mod cp of data-parallel replica r div cp; data-parallel
collectives run over all of them (the context ranks share the weights). Context parallelism
(`workload.context`): an attention part runs the tasks up to and with its core, and its K/V
exchanges over each context-parallel group (cp consecutive replicas, category "CP"), before the
rest of the part (`ReplicaCollectives._cp_prefix`, `workload.emitter_groups`).

FSDP / ZeRO-3 (`Strategy.zero` 3): before each forward of a layer with parameters, every microbatch,
its parameters (the MP rank's shard of the layer, `LayerPlan.params` x the model's dtype bytes, the
whole gathered buffer as nccl-tests counts it) are all-gathered over each MP rank's DP group of its
stage, category "DP"; the gathers of a stage and MP rank run in their own stream ahead of compute
(prefetch: each after the previous one only; the stage's first gather of an iteration also after
its NPUs' last task of the previous iteration, the optimizer step) and the layer's forward waits for
its gather. With `reshard_after_forward` the parameters are gathered again before the layer's
backward (before its recompute with full recompute). After the last microbatch's backward, the
layer's gradients (`LayerPlan.grad_bytes`, bucketed as `dp_bucket` says) are reduce-scattered over
the DP group, once per iteration; no all-gather follows (each replica keeps its shard). With dp = 1
nothing is gathered or reduced.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from .emitter_groups import ReplicaCollectives
from .graph import IO_LOAD, IO_STORE, PHASE_INDEX, GraphBuilder, WorkloadGraph
from .plan import Step, layer_stages, optimizer_step, plan_layers
from .shapes import DTYPES, Model
from .strategy import Strategy


def _stages(model: Model, pp: int) -> list[range]:
    """Contiguous layer ranges, balanced by forward FLOPs (each stage at least one layer)."""
    n = len(model.layers)
    if pp > n:
        raise ConfigError("parallelism.pp", pp, f"accepted: at most {n} stages ({model.name} has {n} layers)")
    w = np.array([max(layer.fwd_flops, 1.0) for layer in model.layers])
    cum = np.cumsum(w)
    cuts = [0]
    for k in range(1, pp):
        target = cum[-1] * k / pp
        i = int(np.searchsorted(cum, target))  # first layer whose prefix reaches the target
        # cut after layer i or before it, whichever prefix is closer to the target
        c = i + 1 if i == 0 or abs(cum[i] - target) <= abs(cum[i - 1] - target) else i
        c = min(max(c, cuts[-1] + 1), n - (pp - k))
        cuts.append(c)
    cuts.append(n)
    return [range(a, b) for a, b in zip(cuts[:-1], cuts[1:])]


NAN = float("nan")


def _program(schedule: str, s: int, pp: int, m: int) -> list[tuple[str, int]]:
    """Stage `s`'s program: ("F" or "B", microbatch) in the order `schedule` runs them."""
    if schedule == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    warm = min(pp - s - 1, m)
    prog = [("F", i) for i in range(warm)]
    for i in range(m - warm):
        prog += [("F", warm + i), ("B", i)]
    return prog + [("B", i) for i in range(m - warm, m)]


class _Emitter(ReplicaCollectives):
    """Emits the graph of contiguous stages (GPipe or 1F1B); `workload.pipeline` and
    `workload.megatron` subclass it for FRED's interleaved layout and for virtual stages. The
    per-layer steps (`_fwd_layer`, `_bwd_layer`, `_grads_done`), stage-boundary transfers (`_send`),
    input loading (`_input`) and the optimizer step are shared.

    Folded (`fold`), the graph has one NPU per stage (local NPU s = stage s) standing for its mp x dp
    copies; every collective carries its real group (`price`) for the network model."""

    def __init__(self, model: Model, st: Strategy, fold: bool = False):
        self.model, self.st, self.folded = model, st, fold
        self.plans = plan_layers(model, st)
        self.stages = self._stage_layers()
        self.RR = st.ranks()  # real NPU ids [mp, pp, dp]
        self.R = np.arange(st.pp, dtype=np.int64).reshape(1, st.pp, 1) if fold else self.RR
        self.mp_n, _, self.dp_n = self.R.shape
        n = self.R.size
        self.b = GraphBuilder(n)
        if fold:
            self.b.fold = self.RR.transpose(1, 2, 0).reshape(st.pp, st.replicas * st.mp)  # stage -> its real NPUs
            self.b.meta["fold_shape"] = (st.mp, st.replicas)
        self.coord = {int(self.R[a, c, d]): (a, c, d) for a in range(self.mp_n) for c in range(st.pp)
                      for d in range(self.dp_n)}
        self.last = [None] * n  # last compute task per NPU (program order)
        self._mp_price: dict[int, tuple] = {}  # first NPU of a local MP group -> the real group it stands for
        self._merged: dict[int, Step] = {}  # id(part) -> its backward up to and with the input gradient
        self.dp_wait: dict[tuple[int, int], tuple] = {}  # (layer, npu) -> collectives the next forward waits for
        self.dp_done: dict[int, list] = {}  # stage -> its DP collectives of this iteration (the optimizer waits)
        self.act_in: dict = {}  # (key, npu) -> transfer the receiving forward waits for
        self.grad_in: dict = {}  # (key, npu) -> transfer the receiving backward waits for
        self.io_last: dict = {}  # (stage, 0 in / 1 out) -> its last weight-streaming io task
        self.input_load = None  # the input load this iteration's first forwards wait for
        self.input_issued = None  # the last input load task issued
        self.bucket: dict[int, tuple[list[int], float]] = {}  # stage -> DP bucket being filled (layers, bytes)
        self.gather_last: dict = {}  # (stage, MP rank) -> (iteration, its last zero-3 parameter gather)
        self.gathers_freed: dict = {}  # stage -> per zero-3 gather in order, {npu: the task after which it is freed}
        for s in range(st.pp):
            self.b.stage[self.R[:, s, :].ravel()] = s
        self.b.meta.update(model=model.name, strategy=st.name, microbatch=st.microbatch)
        self._describe()
        for k, default in (("pp_send", "p2p"), ("input_prefetch", False), ("recompute", "none"),
                           ("sequence_parallel", False), ("virtual_stages", 1), ("optimizer", "none"), ("ep", 1)):
            if getattr(st, k) != default:
                self.b.meta[k] = getattr(st, k)

    def _stage_layers(self) -> list:
        if self.st.stage_split == "layers":
            return layer_stages(self.model, self.st.pp)
        return _stages(self.model, self.st.pp)

    def _describe(self) -> None:
        self.b.meta.update(stage_layers=[(r.start, r.stop) for r in self.stages], schedule=self.st.schedule)

    def _price_mp(self, g) -> tuple | None:
        """The real MP group a local MP group stands for (None: not folded, the group itself)."""
        if not self.folded:
            return None
        got = self._mp_price.get(g[0])
        if got is None:
            got = self._mp_price[g[0]] = tuple(int(x) for x in self.RR[:, self.coord[g[0]][1], 0])
        return got

    def _input(self, it: int) -> None:
        """Input loading at the start of iteration `it` (`workload.parallelism` module doc): sets
        `input_load`."""
        st = self.st
        if not (st.input_loading and self.model.input_bytes):
            return
        members = [int(self.R[a, 0, d]) for d in range(st.dp) for a in range(st.mp)]
        size = st.batch * self.model.input_bytes
        if st.input_prefetch:  # this iteration's input came with the previous iteration; prefetch the next
            self.input_load = self.input_issued
            if it + 1 < st.iterations:
                self.input_issued = self.b.io(IO_LOAD, size, members, st.dp, "input load", deps=(self.input_issued,))
        else:
            self.input_issued = self.input_load = self.b.io(IO_LOAD, size, members, st.dp, "input load",
                                                            deps=(self.input_issued,))

    def run(self) -> WorkloadGraph:
        st = self.st
        for it in range(st.iterations):
            self.b.iteration = it
            self._input(it)
            progs = [_program(st.schedule, s, st.pp, st.microbatches) for s in range(st.pp)]
            ptr = [0] * st.pp
            made: set = set()
            n_b = [0] * st.pp
            while any(ptr[s] < len(progs[s]) for s in range(st.pp)):
                moved = False
                for s in range(st.pp):
                    while ptr[s] < len(progs[s]):
                        op, m = progs[s][ptr[s]]
                        need = (("F", s - 1, m) if s > 0 else None) if op == "F" else (("B", s + 1, m) if s < st.pp - 1 else None)
                        if need is not None and need not in made:
                            break
                        if op == "F":
                            self.forward(s, m)
                        else:
                            n_b[s] += 1
                            self.backward(s, m, final=n_b[s] == st.microbatches, first_b=n_b[s] == 1)
                        made.add((op, s, m))
                        ptr[s] += 1
                        moved = True
                if not moved:  # pragma: no cover - the programs above never deadlock
                    raise RuntimeError("pipeline program deadlocked")
            self._optimizer_step()
        return self.b.build()

    def _mp_groups(self, s: int):
        return [tuple(self.R[:, s, d].tolist()) for d in range(self.dp_n)]

    def _comp(self, npu, name, flops, mem, phase, extra=(), work=None):
        last = self.last
        t = last[npu] = self.b.compute_task(npu, name, float(flops), float(mem), NAN, PHASE_INDEX[phase],
                                            (last[npu], *extra), work)
        return t

    def forward(self, s: int, m: int):
        st = self.st
        groups = self._mp_groups(s)
        if s > 0:
            entry = {p: self.act_in.pop((m, p)) for g in groups for p in g}
        else:
            entry = {p: self.input_load for g in groups for p in g}
        tail: dict = {}  # npu -> task the next part waits for (an MP collective)
        for li in self.stages[s]:
            tail = self._fwd_layer(s, li, m, groups, tail, entry)
            entry = {}
        if s < st.pp - 1:
            self._send(groups, s, s + 1, self.plans[self.stages[s][-1]].act_bytes, m, self.act_in, tail,
                       f"F{m} activation {s}->{s + 1}")

    def _part(self, groups, pre, post, name, phase, tail: dict, extra: dict, compute, cp=None) -> dict:
        """One part on every NPU of `groups`: the collectives `pre` (after `tail` and `extra`), with
        context parallelism the tasks up to the attention core and the K/V exchange (`cp`: (steps,
        comms), `_cp_prefix`), the compute (`compute(p, deps)`), the collectives `post`; returns the
        tail after it."""
        if pre:
            tail = self._comm(groups, pre, name, {p: [tail.get(p), *extra.get(p, ())] for g in groups for p in g})
            extra = {}
        if cp is not None:
            wait = self._cp_prefix(groups, *cp, name, phase, {p: [tail.get(p), *extra.get(p, ())] for g in groups
                                                              for p in g})
            tail, extra = {}, {p: (t,) for p, t in wait.items()}
        for g in groups:
            for p in g:
                compute(p, [tail.get(p), *extra.get(p, ())])
        return self._comm(groups, post, name, {})

    def _comm(self, groups, comms, name: str, extra: dict) -> dict:
        """`_tp_comm` over the MP groups, or `_replica_comm` for a mixture of experts' all-to-alls
        (over "ep") and a context-parallel K/V exchange (over "cp")."""
        if comms and comms[0].over != "mp":
            return self._replica_comm(groups, comms, name, extra)
        return self._tp_comm(groups, comms, f"{name} MP", extra)

    def _fwd_layer(self, s: int, li: int, m: int, groups, tail: dict, entry: dict, phase: str = "fwd",
                   gather: dict | None = None) -> dict:
        """Forward of layer `li`, microbatch `m`, on stage `s`'s NPUs: its weights streamed in first
        (m = 0), each part after `tail` (the previous part's MP collective), the first part also
        after `entry` (activation in, input load); returns the tail after the layer. `phase`
        "recompute": the same forward run again before the backward (full recompute). Zero 3: the
        first part also after the layer's parameter gather (`gather`, default: one made here for a
        forward)."""
        st = self.st
        load = self._stream(s, li, "load") if (st.weight_streaming and m == 0 and phase == "fwd") else None
        tag = "F" if phase == "fwd" else "R"
        made = gather is None
        if made:
            gather = self._gather(s, li, groups, f"{tag}{m}") if phase == "fwd" else {}
        for j, part in enumerate(self.plans[li].parts):
            extra = {p: [load, entry.get(p) if j == 0 else None, gather.get(p) if j == 0 else None,
                         *self.dp_wait.get((li, p), ())] for g in groups for p in g}
            tail = self._part(groups, part.fwd_pre, part.fwd_post, f"{tag}{m} {part.name}", phase, tail, extra,
                              lambda p, deps, part=part: self._comp(p, f"{tag}{m} {part.name}", part.fwd_flops,
                                                                    part.fwd_mem, phase, deps, part.fwd_work),
                              (part.cp_fwd_steps, part.cp_fwd) if part.cp_fwd else None)
        if made and st.reshard_after_forward:  # resharded after this forward (else kept until the backward)
            self._free_gather(s, gather)
        return tail

    def _stream(self, s: int, li: int, what: str) -> int:
        """Weight streaming for layer `li` of stage `s`: "load" its weights or "store" its
        gradients, after the stage's previous io task in that direction (links are full duplex:
        loads and stores each keep their own order)."""
        st = self.st
        layer = self.model.layers[li]
        members = [int(self.R[a, s, d]) for a in range(st.mp) for d in range(st.dp)]  # shard (MP rank) by shard
        if what == "load":
            size = layer.params * self.model.dtype_bytes
            t = self.b.io(IO_LOAD, size, members, st.mp, f"{layer.name} weights in", deps=(self.io_last.get((s, 0)),))
            self.io_last[(s, 0)] = t
        else:
            size = layer.params * (DTYPES[st.grad_dtype] if st.grad_dtype else self.model.dtype_bytes)
            deps = (self.io_last.get((s, 1)), *[self.last[p] for p in members])
            t = self.b.io(IO_STORE, size, members, st.mp, f"{layer.name} gradients out", deps=deps)
            self.io_last[(s, 1)] = t
        return t

    def _tp_comm(self, groups, comms, name: str, extra: dict) -> dict:
        """Megatron's collectives over each MP group (one after another), each member after its
        last compute and `extra[p]`; {npu: last collective} for what follows to wait on."""
        tail: dict = {}
        if not comms or self.st.mp == 1:
            return tail
        for g in groups:
            deps = [self.last[p] for p in g] + [d for p in g for d in extra.get(p, ()) if d is not None]
            for c in comms:
                t = self.b.collective(c.coll, c.size, g, "MP", f"{name} {c.coll}", deps=deps, price=self._price_mp(g))
                deps = [t]
            tail.update({p: t for p in g})
        return tail

    def _send(self, groups, s: int, to: int, size: float, key, inbox: dict, tail: dict, name: str) -> None:
        """A stage-boundary transfer from stage `s` to stage `to`; inbox[(key, npu)] = the task each
        receiver waits for. p2p: each NPU sends to its peer (same MP and DP index); with sequence
        parallelism each holds 1/mp of the activation and sends that. multicast (mp > 1): per DP
        replica one broadcast from MP rank 0 to the receiving MP group. scatter-gather (mp > 1):
        each NPU sends 1/mp of it to its peer, and the receiving MP group all-gathers it."""
        st = self.st
        if st.pp_send == "multicast" and st.mp > 1:
            for d in range(st.replicas):
                src = int(self.R[0, s, d])
                dst = [int(q) for q in self.R[:, to, d]]
                c = self.b.collective("broadcast", size, (src, *dst), "PP", name, deps=(self.last[src], tail.get(src)))
                inbox.update({(key, q): c for q in dst})
            return
        split = st.mp > 1 and (st.sequence_parallel or st.pp_send == "scatter-gather")
        sent: dict = {}
        for g in groups:
            for p in g:
                mi, _, di = self.coord[p]
                q = int(self.R[mi, to, di])
                sent[q] = self.b.p2p(p, q, size / st.mp if split else size, "PP", name,
                                     deps=(self.last[p], tail.get(p)))
        if st.pp_send == "scatter-gather" and st.mp > 1 and not st.sequence_parallel:
            for d in range(self.dp_n):
                g = tuple(int(q) for q in self.R[:, to, d])
                c = self.b.collective("all-gather", size, g, "PP", f"{name} all-gather", deps=[sent[q] for q in g],
                                      price=self._price_mp(g))
                inbox.update({(key, q): c for q in g})
            return
        inbox.update({(key, q): t for q, t in sent.items()})

    def backward(self, s: int, m: int, final: bool, first_b: bool = False):
        st = self.st
        groups = self._mp_groups(s)
        entry = {p: self.grad_in.pop((m, p)) for g in groups for p in g} if s < st.pp - 1 else {}
        tail: dict = {}
        layers = list(self.stages[s])[::-1]
        for k, li in enumerate(layers):
            tail, wg_tasks = self._bwd_layer(s, li, m, groups, tail, entry, load=st.weight_streaming and first_b)
            entry = {}
            if final:
                self._grads_done(s, li, wg_tasks, m, flush=k == len(layers) - 1)
        if s > 0:
            self._send(groups, s, s - 1, self.plans[self.stages[s - 1][-1]].act_bytes, m, self.grad_in, tail,
                       f"B{m} gradient {s}->{s - 1}")

    def _bwd_layer(self, s: int, li: int, m: int, groups, tail: dict, entry: dict, load: bool):
        """Backward of layer `li`, microbatch `m`, on stage `s`'s NPUs, parts in reverse: its weights
        streamed in first if `load`; with full recompute of a transformer block its forward first
        (after `entry`, the gradient in, as Megatron recomputes when the gradient arrives); each
        part after `tail`, the first also after `entry`; a selective recompute before the part's
        backward. Zero 3 with `reshard_after_forward`: the layer's parameters gathered first (the
        recompute and the first part wait for it). Returns (tail after the layer, {npu: its last
        weight-gradient task})."""
        plan = self.plans[li]
        gather = held = self._gather(s, li, groups, f"B{m}") if self.st.reshard_after_forward else {}
        if self.st.recompute == "full" and plan.parts[0].block:
            tail = self._fwd_layer(s, li, m, groups, tail, entry, phase="recompute", gather=gather)
            entry, gather = {}, {}
        load_t = self._stream(s, li, "load") if load else None
        wg_tasks: dict = {}

        def compute(p, deps, part):
            if part.rc_flops > 0:
                self._comp(p, f"R{m} {part.name} core", part.rc_flops, part.rc_mem, "recompute", deps, part.rc_work)
                deps = ()
            if part.ig_flops < 0:  # block part: one backward task
                wg_tasks[p] = self._comp(p, f"B{m} {part.name}", part.bwd_flops, part.bwd_mem, "bwd", deps, part.bwd_work)
            else:
                wg_tasks[p] = self._comp(p, f"B{m} {part.name} wg", part.bwd_flops, part.bwd_mem, "bwd_wg", deps,
                                         part.bwd_work)
                if part.ig_flops > 0 and li != 0:  # the first layer needs no input gradient
                    self._comp(p, f"B{m} {part.name} ig", part.ig_flops, part.ig_mem, "bwd_ig", (), part.ig_work)

        for j, part in enumerate(plan.parts[::-1]):
            extra = {p: [load_t, entry.get(p) if j == 0 else None, gather.get(p) if j == 0 else None]
                     for g in groups for p in g}
            if part.bwd_steps is not None:
                tail = self._bwd_overlapped(groups, part, m, tail, extra, wg_tasks)
                continue
            tail = self._part(groups, part.bwd_pre, part.bwd_post, f"B{m} {part.name}", "bwd", tail, extra,
                              lambda p, deps, part=part: compute(p, deps, part),
                              (part.cp_bwd_steps, part.cp_bwd) if part.cp_bwd else None)
        self._free_gather(s, held)  # the gathered parameters are freed after the backward
        return tail, wg_tasks

    def _bwd_overlapped(self, groups, part, m: int, tail: dict, extra: dict, wg_tasks: dict) -> dict:
        """A block part's backward with Megatron's asynchronous TP communication (`plan` module doc):
        [pre collective] -> (selective recompute) -> backward up to the column linear -> its input
        gradient (sequence parallel: beside the re-gather of its input) -> the gradient's collective
        beside its weight gradient -> the layer norm's backward after both. Fills `wg_tasks` with
        each NPU's last task; returns the tail (the gradient's collective)."""
        name = f"B{m} {part.name}"
        main, dx, dw, ln = part.bwd_steps
        if part.bwd_pre:
            tail = self._tp_comm(groups, part.bwd_pre, f"{name} MP", {p: [tail.get(p), *extra.get(p, ())] for g in groups for p in g})
            extra = {}
        if part.cp_bwd:  # context parallel: the output projection's and the core's backward with the K/V exchange
            wait = self._cp_prefix(groups, part.cp_bwd_steps, part.cp_bwd, name, "bwd",
                                   {p: [tail.get(p), *extra.get(p, ())] for g in groups for p in g})
            tail, extra = {}, {p: (t,) for p, t in wait.items()}
        members = [p for g in groups for p in g]
        sp = bool(part.bwd_pre)
        if not sp:  # nothing starts between the two: one task up to and with the input gradient
            merged = self._merged.get(id(part))
            if merged is None:  # one per part: the same kernel tuple each time (the builder keys it by identity)
                merged = self._merged[id(part)] = Step(main.flops + dx.flops, main.mem + dx.mem,
                                                       (main.work or ()) + (dx.work or ()))
            main = merged
        for p in members:
            deps = [tail.get(p), *extra.get(p, ())]
            if part.rc_flops > 0:
                self._comp(p, f"R{m} {part.name} core", part.rc_flops, part.rc_mem, "recompute", deps, part.rc_work)
                deps = []
            self._comp(p, name, main.flops, main.mem, "bwd", deps, main.work)
        # sequence parallel: the column linear's input (a 1/t shard) is gathered again beside its input gradient
        gather = self._tp_comm(groups, part.bwd_pre, f"{name} input MP", {}) if sp else {}
        for p in members if sp else ():
            self._comp(p, f"{name} ig", dx.flops, dx.mem, "bwd", (), dx.work)
        comm = self._tp_comm(groups, part.bwd_post, f"{name} MP", {p: [gather.get(p)] for p in members})
        for p in members:  # the weight gradient needs the gathered input (sequence parallel)
            self._comp(p, f"{name} wg", dw.flops, dw.mem, "bwd", (gather.get(p),), dw.work)
            wg_tasks[p] = self._comp(p, f"{name} ig LN", ln.flops, ln.mem, "bwd", (comm.get(p),), ln.work)
        return comm

    def _grads_done(self, s: int, li: int, wg_tasks: dict, m: int, flush: bool) -> None:
        """After the last microbatch's backward of layer `li` on stage `s`: stream its gradients out
        (weight streaming) or add them to the stage's DP bucket, synchronized once it holds
        `dp_bucket` bytes or when `flush` (the stage's last layer in backward order)."""
        st, plan = self.st, self.plans[li]
        if st.weight_streaming:
            if plan.grad_bytes > 0:
                self._stream(s, li, "store")
            return
        if st.replicas == 1:
            return
        layers, nbytes, ebytes = self.bucket.pop(s, ([], 0.0, 0.0))
        if plan.grad_bytes > 0 or plan.expert_grad_bytes > 0:
            layers, nbytes, ebytes = layers + [li], nbytes + plan.grad_bytes, ebytes + plan.expert_grad_bytes
        if layers and (nbytes + ebytes >= st.dp_bucket or flush):
            done = self._dp_sync(s, layers, nbytes, wg_tasks, 1)
            if ebytes > 0 and st.replicas > st.ep:  # expert gradients over the replicas holding the same experts
                got = self._dp_sync(s, layers, ebytes, wg_tasks, st.ep)
                done = {p: done.get(p, ()) + got.get(p, ()) for p in {*done, *got}}
            for li in layers:
                for p, cs in done.items():
                    self.dp_wait[(li, p)] = cs
        elif layers:
            self.bucket[s] = (layers, nbytes, ebytes)

    def _optimizer_step(self) -> None:
        """The optimizer step of this iteration on every NPU (`Strategy.optimizer`): after its last
        backward and its stage's DP collectives; the next iteration's compute follows it."""
        if self.st.optimizer == "none":
            return
        for s, layers in enumerate(self.stages):
            params = sum(self.plans[li].params for li in layers)
            kernels = optimizer_step(params, self.model.dtype)
            nbytes = sum(k.nbytes for k in kernels)
            done = self.dp_done.pop(s, [])
            for p in self.R[:, s, :].ravel().tolist():
                self._comp(p, "optimizer step", 0.0, nbytes, "update", done, kernels)
