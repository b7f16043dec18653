"""Megatron-LM's interleaved 1F1B schedule: virtual pipeline stages (Narayanan et al. 2021, Sec. 2.2).

The transformer blocks split into pp x v equal chunks (`plan.layer_stages`); chunk k runs on
stage k mod pp, so each stage holds v chunks (its "virtual stages"), the embedding rides with chunk
0 and the head with the last. A microbatch's forward goes through the chunks in order (from stage
pp-1 back to stage 0 between chunk rounds), its backward in reverse.

Each stage runs Megatron's program (`interleaved_program`): with M microbatches (a multiple of pp)
there are M v chunk-passes each way; the stage first runs `warmup` forwards,
(pp - s - 1) x 2 + (v - 1) x pp (all of them when M = pp), then alternates one forward and one
backward, then drains its backwards. Forward pass k is chunk (k mod pp v) div pp of microbatch
(k div pp v) pp + k mod pp; backward pass k the same with the chunks in reverse order.

With equal chunk times t_f + t_b per microbatch the pipeline bubble is (pp - 1) / v chunk times of
each direction: an iteration takes (M + (pp - 1) / v) x v (t_f + t_b) against (M + pp - 1) v (t_f +
t_b) / v for plain 1F1B: the bubble shrinks by v (Narayanan et al., Sec. 2.2.2).
"""

from __future__ import annotations

from .graph import WorkloadGraph
from .emitter import _Emitter
from .plan import layer_stages


def interleaved_program(s: int, pp: int, v: int, m: int) -> list[tuple[str, int, int]]:
    """Stage `s`'s program under Megatron's interleaved 1F1B schedule (module doc).

    Parameters
    ----------
    s : int
        Pipeline stage, 0..pp-1.
    pp : int
        Pipeline stages.
    v : int
        Model chunks per stage.
    m : int
        Microbatches, a multiple of pp.

    Returns
    -------
    list of (str, int, int)
        ("F" or "B", chunk on this stage 0..v-1, microbatch) in program order.

    Examples
    --------
    >>> interleaved_program(1, 2, 2, 2)[:4]
    [('F', 0, 0), ('F', 0, 1), ('F', 1, 0), ('F', 1, 1)]
    """
    total = m * v
    warm = total if m == pp else min((pp - s - 1) * 2 + (v - 1) * pp, total)

    def which(k: int, backward: bool) -> tuple[int, int]:
        chunk = (k % (pp * v)) // pp
        return (v - 1 - chunk if backward else chunk), (k // (pp * v)) * pp + k % pp

    prog = [("F", *which(k, False)) for k in range(warm)]
    for i in range(total - warm):
        prog += [("F", *which(warm + i, False)), ("B", *which(i, True))]
    return prog + [("B", *which(k, True)) for k in range(total - warm, total)]


class VirtualStageEmitter(_Emitter):
    """The workload graph of a transformer under interleaved 1F1B (`Strategy.virtual_stages` > 1;
    module doc). Everything per layer (tensor-parallel communication, recompute, DP syncs, the
    optimizer step) is `workload.parallelism`'s; this class orders the chunk passes."""

    def _stage_layers(self) -> list:
        st = self.st
        self.chunks = layer_stages(self.model, st.pp, st.virtual_stages)  # in model order: chunk k on stage k mod pp
        return [[li for k in range(s, len(self.chunks), st.pp) for li in self.chunks[k]] for s in range(st.pp)]

    def _describe(self) -> None:
        self.b.meta.update(stage_layers=[(r.start, r.stop) for r in self.chunks], schedule="interleaved-1f1b",
                           virtual_stages=self.st.virtual_stages)

    def run(self) -> WorkloadGraph:
        """Emit `st.iterations` iterations of the stages' programs, each step once what it waits for
        is emitted (task ids stay topologically ordered).

        Returns
        -------
        WorkloadGraph
        """
        st = self.st
        pp, v, M = st.pp, st.virtual_stages, st.microbatches
        last = pp * v - 1
        for it in range(st.iterations):
            self.b.iteration = it
            self._input(it)
            progs = [interleaved_program(s, pp, v, M) for s in range(pp)]
            ptr = [0] * pp
            made: set = set()
            n_b = [0] * (last + 1)
            while any(ptr[s] < len(progs[s]) for s in range(pp)):
                moved = False
                for s in range(pp):
                    while ptr[s] < len(progs[s]):
                        op, c, m = progs[s][ptr[s]]
                        k = c * pp + s  # the model chunk
                        need = ("F", k - 1, m) if op == "F" else ("B", k + 1, m)
                        if (op == "F" and k > 0 or op == "B" and k < last) and need not in made:
                            break
                        if op == "F":
                            self._forward_chunk(k, m)
                        else:
                            n_b[k] += 1
                            self._backward_chunk(k, m, final=n_b[k] == M)
                        made.add((op, k, m))
                        ptr[s] += 1
                        moved = True
                if not moved:  # pragma: no cover - Megatron's programs never deadlock
                    raise RuntimeError("pipeline program deadlocked")
            self._optimizer_step()
        return self.b.build()

    def _forward_chunk(self, k: int, m: int) -> None:
        st = self.st
        s = k % st.pp
        groups = self._mp_groups(s)
        if k > 0:
            entry = {p: self.act_in.pop(((k, m), p)) for g in groups for p in g}
        else:
            entry = {p: self.input_load for g in groups for p in g}
        tail: dict = {}
        for li in self.chunks[k]:
            tail = self._fwd_layer(s, li, m, groups, tail, entry)
            entry = {}
        if k < len(self.chunks) - 1:
            to = (k + 1) % st.pp
            self._send(groups, s, to, self.plans[self.chunks[k][-1]].act_bytes, (k + 1, m), self.act_in, tail,
                       f"F{m} activation chunk {k}->{k + 1}")

    def _backward_chunk(self, k: int, m: int, final: bool) -> None:
        st = self.st
        s = k % st.pp
        groups = self._mp_groups(s)
        entry = {p: self.grad_in.pop(((k, m), p)) for g in groups for p in g} if k < len(self.chunks) - 1 else {}
        tail: dict = {}
        layers = list(self.chunks[k])[::-1]
        for j, li in enumerate(layers):
            tail, wg_tasks = self._bwd_layer(s, li, m, groups, tail, entry, load=False)
            entry = {}
            if final:
                self._grads_done(s, li, wg_tasks, m, flush=j == len(layers) - 1)
        if k > 0:
            self._send(groups, s, (k - 1) % st.pp, self.plans[self.chunks[k - 1][-1]].act_bytes, (k - 1, m),
                       self.grad_in, tail, f"B{m} gradient chunk {k}->{k - 1}")
