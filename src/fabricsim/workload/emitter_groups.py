"""The collectives of a stage over its replicas (`Strategy.replicas`: the dp x cp copies of each
MP rank), a mixin of the emitter (`workload.emitter._Emitter`, which holds the state they use):
context parallelism's K/V exchanges and the attention core around them (`workload.context`), a
mixture of experts' all-to-alls over the expert-parallel groups, ZeRO-3's parameter gathers and the
data-parallel gradient collectives. Apart from the emitter so that each reads in one sitting.
"""

from __future__ import annotations


class ReplicaCollectives:
    """Collectives over groups of a stage's replicas (module doc); mixed into `_Emitter`."""

    def _cp_prefix(self, groups, steps, comms, name: str, phase: str, deps: dict) -> dict:
        """Context parallelism (`workload.context`): on every NPU of `groups` the step before the
        attention core (after `deps[p]`), the K/V exchange over its cp group and the core: "p2p"
        runs the exchange (all of `comms`, one after another) beside the core, "all_gather" makes
        the core wait for the gather and sends the gradients' reduce-scatter after it. Returns
        {npu: the collective the rest of the part waits for}."""
        (before, core), members = steps, [p for g in groups for p in g]
        for p in members:
            self._comp(p, name, before.flops, before.mem, phase, deps[p], before.work)
        overlap = self.st.cp_comm == "p2p"
        first = self._replica_comm(groups, comms if overlap else comms[:1], f"{name} CP", {})
        for p in members:
            self._comp(p, f"{name} core", core.flops, core.mem, phase, () if overlap else (first[p],), core.work)
        if overlap or len(comms) == 1:
            return first
        return self._replica_comm(groups, comms[1:], f"{name} CP", {})

    def _replica_comm(self, groups, comms, name: str, extra: dict) -> dict:
        """Collectives over the groups of consecutive replicas of the stage of `groups` at each MP
        rank: a MoE block's all-to-alls over each expert-parallel group (ep replicas, category "EP",
        module doc), a K/V exchange over each context-parallel group (cp replicas, category "CP"),
        each member after its last compute and `extra[p]`; {npu: last one}."""
        st, over = self.st, comms[0].over
        n = st.ep if over == "ep" else st.cp
        s = self.coord[groups[0][0]][1]
        width = min(n, self.dp_n)  # folded: the stage's one NPU stands for the group
        price = tuple(int(x) for x in self.RR[0, s, :n]) if self.folded else None
        if price is not None:  # its copies are the groups of n replicas: shifts by multiples of n (`engine.fold`)
            self.b.meta.setdefault("replica_period", {})[price] = n
        tail: dict = {}
        for a in range(self.mp_n):
            for d0 in range(0, self.dp_n, width):
                g = tuple(int(x) for x in self.R[a, s, d0:d0 + width])
                deps = [self.last[p] for p in g] + [d for p in g for d in extra.get(p, ()) if d is not None]
                for c in comms:
                    t = self.b.collective(c.coll, c.size, g, over.upper(), f"{name} {c.coll}", deps=deps, price=price)
                    deps = [t]
                tail.update({p: t for p in g})
        return tail

    def _gather(self, s: int, li: int, groups, name: str) -> dict:
        """Zero 3 (module doc): the all-gather of layer `li`'s parameters (`plan.params` x dtype
        bytes per NPU, bytes) over each MP rank's DP group of stage `s`, in the gather stream, at most
        two in flight when resharding (PyTorch FSDP's rate limiter, Zhao et al. 2023, VLDB 16(12),
        Section 3.4: a gather waits until the parameters gathered the time before last are freed,
        `_free_gather`); {npu: its gather} ({} without zero 3, dp = 1 or parameters)."""
        st, plan = self.st, self.plans[li]
        if st.zero != 3 or st.replicas == 1 or plan.params <= 0:
            return {}
        size = plan.params * self.model.dtype_bytes
        price = tuple(int(x) for x in self.RR[0, s, :]) if self.folded else None
        freed = self.gathers_freed.setdefault(s, [])
        out: dict = {}
        for mi in range(self.mp_n):
            g = tuple(self.R[mi, s, :].tolist())
            it, prev = self.gather_last.get((s, mi), (None, None))
            deps = [prev] + [d for p in g for d in self.dp_wait.get((li, p), ())]  # its previous reduce-scatter
            if it != self.b.iteration:  # the iteration's first gather: after the previous optimizer step
                deps += [self.last[p] for p in g]
            if st.reshard_after_forward and len(freed) >= 2:  # at most two in flight: after the one before last is freed
                deps += [freed[-2][p] for p in g]
            t = self.b.collective("all-gather", size, g, "DP", f"{name} {plan.name} DP all-gather", deps=deps,
                                  price=price)
            self.gather_last[(s, mi)] = (self.b.iteration, t)
            out.update({p: t for p in g})
        return out

    def _free_gather(self, s: int, gather: dict) -> None:
        """Zero 3: the parameters of `gather` (a layer's, on stage `s`) are freed after the compute that
        used them, its NPUs' last tasks now; the gather after the next one waits for that (`_gather`)."""
        if gather:
            self.gathers_freed.setdefault(s, []).append({p: self.last[p] for p in gather})

    def _dp_sync(self, s: int, layers: list[int], nbytes: float, wg_tasks: dict, step: int) -> dict:
        """The data-parallel collectives of `layers`' `nbytes` gradients per NPU on stage `s`: over
        each MP rank's replicas r, r + step, r + 2 step, ... (step 1: all dp; ep: the
        expert-data-parallel groups); {npu: (its collective,)}."""
        b, st = self.b, self.st
        name = self.plans[layers[0]].name if len(layers) == 1 else f"{self.plans[layers[-1]].name}..{self.plans[layers[0]].name}"
        price = tuple(int(x) for x in self.RR[0, s, ::step]) if self.folded else None
        done: dict = {}
        for mi in range(self.mp_n):
            for r in range(min(step, self.dp_n)):
                g = tuple(self.R[mi, s, r::step].tolist())
                deps = [wg_tasks[p] for p in g]
                if st.zero == 3:  # FSDP: each replica keeps its shard of the gradients and parameters
                    c = b.collective("reduce-scatter", nbytes, g, "DP", f"{name} DP reduce-scatter", deps=deps,
                                     price=price)
                elif st.zero >= 1:  # distributed optimizer (1) and ZeRO-2: each replica updates its shard
                    rs = b.collective("reduce-scatter", nbytes, g, "DP", f"{name} DP reduce-scatter", deps=deps,
                                      price=price)
                    c = b.collective("all-gather", nbytes, g, "DP", f"{name} DP all-gather", deps=[rs], price=price)
                else:
                    c = b.collective("all-reduce", nbytes, g, "DP", f"{name} DP all-reduce", deps=deps, price=price)
                self.dp_done.setdefault(s, []).append(c)
                done.update({p: (c,) for p in g})
        return done
