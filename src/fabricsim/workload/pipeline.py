"""FRED's interleaved weight-streaming pipeline (`Strategy.stage_layout = "interleaved"`).

FRED (ISCA'25, Sec. 7.3): "GPT-3 combines weight streaming with PP; with PP=2, two consecutive
layers are brought onto the wafer at a time and distributed along PP, so two microbatches
suffice" to hide the pipeline latency. Model:

- Layer i lives on stage i mod pp; each layer is its own virtual stage.
- Each stage runs breadth-first: for each of its layers in order, the forward of every
  microbatch 0..M-1; then its layers in reverse order, for each the backward of every
  microbatch. (The `schedule` option applies to contiguous stages only.)
- Forward of (layer i, microbatch m) waits for forward of (layer i-1, m), through a PP transfer
  of layer i-1's output activation when that layer is on another stage (p2p or multicast, as
  `Strategy.pp_send` says); backward of (i, m) waits for backward of (i+1, m), through a PP
  transfer of the gradient of layer i's output.
- Everything else is as for contiguous stages (`workload.parallelism`): Megatron MP
  all-reduces per part; DP sync after the last microbatch's backward of a layer, bucketed with
  `dp_bucket` over the stage's layers in backward order; with weight streaming, each layer's
  weights are loaded before its first forward and again before its first backward and its
  gradients stored after its last backward, each stage's loads (stores) in order; input
  loading before the forward of layer 0.

With equal per-layer times t_f and t_b, L layers (a multiple of pp) and M >= pp microbatches,
no stage ever waits inside a pass: an iteration takes (L M / pp + pp - 1)(t_f + t_b), against
(M + pp - 1)(L / pp)(t_f + t_b) for contiguous 1F1B or GPipe stages.
"""

from __future__ import annotations

from ..errors import ConfigError
from .graph import WorkloadGraph
from .emitter import _Emitter


class InterleavedEmitter(_Emitter):
    """The workload graph of a model under a strategy with `stage_layout = "interleaved"` (module doc).

    Parameters
    ----------
    model : Model
        A zoo model with at least `st.pp` layers (ConfigError naming parallelism.pp otherwise).
    st : Strategy
        The parallelization; `st.schedule` is not used.
    """

    def _stage_layers(self) -> list:
        n, pp = len(self.model.layers), self.st.pp
        if pp > n:
            raise ConfigError("parallelism.pp", pp, f"accepted: at most {n} stages ({self.model.name} has {n} "
                                                    "layers; the interleaved layout puts one layer on a stage at a time)")
        return [list(range(s, n, pp)) for s in range(pp)]

    def _describe(self) -> None:
        self.b.meta.update(stage_layout="interleaved", stage_layer_ids=[list(r) for r in self.stages],
                           schedule="breadth-first")

    def _stage_of(self, li: int) -> int:
        return li % self.st.pp

    def _programs(self) -> list[list[tuple[str, int, int]]]:
        """Per stage, its breadth-first program of (F or B, layer, microbatch)."""
        M = self.st.microbatches
        progs = []
        for layers in self.stages:
            fwd = [("F", li, m) for li in layers for m in range(M)]
            bwd = [("B", li, m) for li in layers[::-1] for m in range(M)]
            progs.append(fwd + bwd)
        return progs

    def run(self) -> WorkloadGraph:
        """Emit `st.iterations` iterations of the stages' programs, each step once what it waits
        for is emitted (task ids stay topologically ordered).

        Returns
        -------
        WorkloadGraph
        """
        st, L = self.st, len(self.model.layers)
        for it in range(st.iterations):
            self.b.iteration = it
            self._input(it)
            self._tails: dict = {}  # (F or B, layer, m) -> MP tail the next layer waits for on the same stage
            progs = self._programs()
            ptr = [0] * st.pp
            made: set = set()
            while any(ptr[s] < len(progs[s]) for s in range(st.pp)):
                moved = False
                for s in range(st.pp):
                    while ptr[s] < len(progs[s]):
                        op, li, m = progs[s][ptr[s]]
                        need = ("F", li - 1, m) if op == "F" else ("B", li + 1, m)
                        if (op == "F" and li > 0 or op == "B" and li < L - 1) and need not in made:
                            break
                        (self.forward_layer if op == "F" else self.backward_layer)(li, m)
                        made.add((op, li, m))
                        ptr[s] += 1
                        moved = True
                if not moved:  # pragma: no cover - breadth-first programs never deadlock
                    raise RuntimeError("pipeline program deadlocked")
        return self.b.build()

    def forward_layer(self, li: int, m: int) -> None:
        """Forward of layer `li`, microbatch `m`, on its stage; then its output to the next
        layer's stage (when that is another stage).

        Parameters
        ----------
        li : int
            Layer index.
        m : int
            Microbatch, 0..microbatches-1.
        """
        L = len(self.model.layers)
        s = self._stage_of(li)
        groups = self._mp_groups(s)
        tail: dict = {}
        if li == 0:
            entry = {p: self.input_load for g in groups for p in g}
        elif self._stage_of(li - 1) != s:
            entry = {p: self.act_in.pop(((li - 1, m), p)) for g in groups for p in g}
        else:  # pp = 1: the previous layer ran here; wait for its last MP all-reduce
            entry, tail = {}, self._tails.pop(("F", li - 1, m), {})
        tail = self._fwd_layer(s, li, m, groups, tail, entry)
        if li < L - 1:
            to = self._stage_of(li + 1)
            if to != s:
                self._send(groups, s, to, self.plans[li].act_bytes, (li, m), self.act_in, tail,
                           f"F{m} activation {s}->{to}")
            else:
                self._tails[("F", li, m)] = tail

    def backward_layer(self, li: int, m: int) -> None:
        """Backward of layer `li`, microbatch `m`, on its stage: its weights streamed in before
        the first microbatch, its gradients out or into the DP bucket after the last; then the
        gradient of its input to the previous layer's stage (when that is another stage).

        Parameters
        ----------
        li : int
            Layer index.
        m : int
            Microbatch, 0..microbatches-1.
        """
        st, L = self.st, len(self.model.layers)
        s = self._stage_of(li)
        groups = self._mp_groups(s)
        tail: dict = {}
        entry: dict = {}
        if li < L - 1:
            if self._stage_of(li + 1) != s:
                entry = {p: self.grad_in.pop(((li + 1, m), p)) for g in groups for p in g}
            else:
                tail = self._tails.pop(("B", li + 1, m), {})
        tail, wg_tasks = self._bwd_layer(s, li, m, groups, tail, entry, load=st.weight_streaming and m == 0)
        if m == st.microbatches - 1:
            self._grads_done(s, li, wg_tasks, m, flush=li == self.stages[s][0])
        if li > 0:
            to = self._stage_of(li - 1)
            if to != s:
                self._send(groups, s, to, self.plans[li - 1].act_bytes, (li, m), self.grad_in, tail,
                           f"B{m} gradient {s}->{to}")
            else:
                self._tails[("B", li, m)] = tail
