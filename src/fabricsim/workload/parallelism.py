"""Parallelization: a zoo model and a strategy MP(x)-DP(y)-PP(z) -> the workload graph.

Strategy (see `Strategy`): tensor/model parallel (Megatron), data parallel (all-reduce per layer
or per bucket; ZeRO-2: reduce-scatter + all-gather), pipeline parallel with microbatches
(contiguous stages run GPipe or 1F1B; or FRED's interleaved weight-streaming layout, see
`workload.pipeline`), a placement order (default MP consecutive first, then PP, then DP, as FRED
places workers), and the number of iterations.

What each NPU runs, per microbatch of `mb = batch / (dp * microbatches)` samples:
- Layers are split into `pp` contiguous stages balanced by forward FLOPs (`stage_layout`
  "contiguous"), or layer i runs on stage i mod pp ("interleaved", `workload.pipeline`).
- A transformer block is two parts, attention (QKV and output projections 4h^2 per token plus
  the score/context matmuls 4*seq^2*h per sequence) and MLP (the rest). With mp > 1 each part's
  FLOPs and weights are divided by mp and an all-reduce of mb*seq*hidden elements over the MP
  group follows each part forward and each part backward (Megatron: 2 + 2 per block). The
  vocabulary-parallel embedding all-reduces its output forward; the head all-reduces its input
  gradient backward. Other layer kinds accept mp = 1 only.
- Backward of a block part is one task (input + weight gradient); other layers run the weight
  gradient, then (ASTRA-sim's order) the input gradient, skipped where a layer has none.
- Pipeline boundaries: each NPU sends its microbatch activation (forward) and the gradient of
  it (backward) to the NPU with the same MP and DP index in the neighbouring stage (`pp_send`
  "p2p"). With `pp_send` "multicast" and mp > 1 (FRED: every NPU of the MP group holds the same
  output), MP rank 0 of each DP replica broadcasts it to the receiving stage's MP group instead:
  one `broadcast` collective, category PP, over (sender, receiver MP ranks 0..mp-1), root rank 0.
- Data parallel: after the last microbatch's backward of a layer, its gradients (fp16 by
  default, params/mp per NPU) are all-reduced over the DP group -- per layer, or per bucket of
  at least `dp_bucket` bytes in backward order (what is left goes after the stage's lowest
  layer, whether that layer has parameters or not). ZeRO-2: a reduce-scatter instead, then an
  all-gather of the updated parameters. The next iteration's forward of a layer waits for it
  (ASTRA-sim's data-parallel loop).
- Compute tasks of an NPU run in program order (control dependencies), which fixes the GPipe
  and 1F1B orders.
- DLRM: MLPs data parallel over all NPUs; embedding tables sharded table-wise over the NPUs; the
  pooled embeddings are exchanged with an all-to-all forward and their gradients backward (MP
  category: the embeddings are model parallel).
- Wafer I/O (topologies with I/O controllers), FRED's execution modes:
  - `weight_streaming`: no weights live on the NPUs. Before a layer's first forward, its weights
    (all MP shards, `params x dtype` bytes) are loaded through the controllers, each MP shard
    multicast to the stage's NPUs of that MP rank; before its first backward they are loaded
    again; after its last backward its gradients are stored (reduced on the way out over the DP
    replicas), replacing the DP collectives (the optimizer runs near the storage). Each stage's
    loads run in order, and so do its stores (links are full duplex); loads prefetch freely:
    on-wafer memory is assumed to hold what is prefetched, so the bound is I/O bandwidth.
  - `input_loading`: each iteration's minibatch (`batch x input_bytes`) is loaded to the first
    stage (each DP replica its own slice, to all its MP ranks); the next iteration's load starts as
    soon as the previous one is done (prefetch), so only the first is exposed.
  - `input_prefetch` (with `input_loading`), FRED's steady state: iteration 0's input is already on
    the wafer (loaded during the unsimulated previous iteration; no io task); iteration i issues
    the load of iteration i+1's input (after the previous input load only) and iteration i+1's
    first forward on stage 0 waits for it; no load follows the last simulated iteration.

Memory traffic per task (for the roofline): forward reads the weights and the input and writes
the output activation; backward reads twice the weights and three activations' worth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from .graph import IO_LOAD, IO_STORE, GraphBuilder, WorkloadGraph
from .models import DTYPES, Layer, Model

SCHEDULES = ("gpipe", "1f1b")
STAGE_LAYOUTS = ("contiguous", "interleaved")
PP_SENDS = ("p2p", "multicast")
AXES = ("mp", "pp", "dp")


def _pos(field: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ConfigError(field, v, "accepted: an integer >= 1")
    return int(v)


@dataclass(frozen=True)
class Strategy:
    """A parallelization MP(x)-DP(y)-PP(z) and how it runs (module doc).

    Parameters
    ----------
    mp, pp, dp : int
        Model (tensor), pipeline and data parallel degrees, >= 1; NPUs = mp x pp x dp.
    batch : int
        Global minibatch, samples (sequences); a multiple of dp x microbatches.
    microbatches : int
        Microbatches per minibatch on each pipeline.
    schedule : str
        Pipeline schedule of contiguous stages: gpipe or 1f1b (the interleaved layout is
        breadth-first by construction and ignores it).
    zero : int
        0 (data-parallel all-reduce) or 2 (ZeRO-2: reduce-scatter, then all-gather).
    dp_bucket : float
        Data-parallel bucket size, bytes; 0 = one collective per layer.
    placement : tuple of str
        Order of mp, pp, dp in the rank numbering, fastest-varying first.
    iterations : int
        Training iterations.
    grad_dtype : str, optional
        Element type of gradients (default: the model's dtype).
    weight_streaming : bool
        Weights stream in from the I/O controllers for forward and backward, gradients out.
    input_loading : bool
        Each iteration's inputs come in through the I/O controllers.
    stage_layout : str
        "contiguous" (balanced contiguous stages) or "interleaved" (layer i on stage i mod pp,
        breadth-first: FRED's weight-streaming pipeline, `workload.pipeline`).
    pp_send : str
        Stage-boundary transfers: "p2p" (each NPU to its peer) or "multicast" (MP rank 0
        broadcasts to the next stage's MP group; the same as p2p when mp = 1).
    input_prefetch : bool
        With `input_loading`: iteration 0's input is already on the wafer and each iteration
        prefetches the next one's (module doc).

    Examples
    --------
    >>> st = Strategy(mp=2, pp=2, dp=2, batch=8, microbatches=2)
    >>> st.name, st.npus, st.microbatch
    ('MP(2)-DP(2)-PP(2)', 8, 2)
    >>> st.rank(mp_i=1, pp_i=0, dp_i=0), st.rank(0, 1, 0), st.rank(0, 0, 1)   # mp fastest
    (1, 2, 4)
    """

    mp: int = 1
    pp: int = 1
    dp: int = 1
    batch: int = 1  # global minibatch, samples (sequences)
    microbatches: int = 1
    schedule: str = "1f1b"
    zero: int = 0
    dp_bucket: float = 0.0  # bytes; 0 = one collective per layer
    placement: tuple[str, ...] = AXES  # fastest-varying first
    iterations: int = 1
    grad_dtype: str | None = None  # default: the model's dtype
    weight_streaming: bool = False  # weights stream in from I/O for forward and backward, gradients out
    input_loading: bool = False  # each iteration's inputs come in through the I/O controllers
    stage_layout: str = "contiguous"  # or "interleaved": layer i on stage i mod pp (workload.pipeline)
    pp_send: str = "p2p"  # or "multicast": MP rank 0 broadcasts a boundary transfer to the next stage's MP group
    input_prefetch: bool = False  # iteration 0's input already loaded; each iteration prefetches the next

    def __post_init__(self):
        for f in ("mp", "pp", "dp", "batch", "microbatches", "iterations"):
            _pos(f"parallelism.{f}" if f in AXES else f"workload.{f}", getattr(self, f))
        if self.schedule not in SCHEDULES:
            raise ConfigError("parallelism.schedule", self.schedule, f"accepted: {', '.join(SCHEDULES)}")
        if self.stage_layout not in STAGE_LAYOUTS:
            raise ConfigError("parallelism.stage_layout", self.stage_layout, f"accepted: {', '.join(STAGE_LAYOUTS)}")
        if self.pp_send not in PP_SENDS:
            raise ConfigError("parallelism.pp_send", self.pp_send, f"accepted: {', '.join(PP_SENDS)}")
        if not isinstance(self.input_prefetch, (bool, np.bool_)):
            raise ConfigError("workload.input_prefetch", self.input_prefetch, "accepted: true or false")
        if self.zero not in (0, 2):
            raise ConfigError("parallelism.zero", self.zero, "accepted: 0 (plain all-reduce) or 2 (ZeRO stage 2)")
        if not self.dp_bucket >= 0:
            raise ConfigError("parallelism.dp_bucket", self.dp_bucket, "accepted: a size >= 0 (0 = per layer)")
        pl = tuple(self.placement)
        if sorted(pl) != sorted(AXES):
            raise ConfigError("parallelism.placement", ",".join(pl), "accepted: an order of mp, pp, dp (fastest first), e.g. mp,pp,dp")
        object.__setattr__(self, "placement", pl)
        if self.grad_dtype is not None and self.grad_dtype not in DTYPES:
            raise ConfigError("parallelism.grad_dtype", self.grad_dtype, "accepted: " + ", ".join(DTYPES))
        if self.batch % (self.dp * self.microbatches):
            raise ConfigError("workload.batch", self.batch,
                              f"accepted: a multiple of dp x microbatches = {self.dp * self.microbatches}")

    @property
    def npus(self) -> int:
        """NPUs the strategy needs: mp x pp x dp."""
        return self.mp * self.pp * self.dp

    @property
    def microbatch(self) -> int:
        """Samples per microbatch: batch / (dp x microbatches)."""
        return self.batch // (self.dp * self.microbatches)

    @property
    def name(self) -> str:
        """`MP(x)-DP(y)-PP(z)`."""
        return f"MP({self.mp})-DP({self.dp})-PP({self.pp})"

    def rank(self, mp_i: int, pp_i: int, dp_i: int) -> int:
        """NPU id of one worker, from the rank numbering `placement` sets.

        Parameters
        ----------
        mp_i : int
            Index in the model-parallel group, 0..mp-1.
        pp_i : int
            Pipeline stage, 0..pp-1.
        dp_i : int
            Data-parallel replica, 0..dp-1.

        Returns
        -------
        int
        """
        idx = {"mp": mp_i, "pp": pp_i, "dp": dp_i}
        size = {"mp": self.mp, "pp": self.pp, "dp": self.dp}
        r, stride = 0, 1
        for ax in self.placement:
            r += idx[ax] * stride
            stride *= size[ax]
        return r

    def ranks(self) -> np.ndarray:
        """ranks()[mp_i, pp_i, dp_i] = NPU id."""
        out = np.empty((self.mp, self.pp, self.dp), dtype=np.int64)
        for a in range(self.mp):
            for b in range(self.pp):
                for c in range(self.dp):
                    out[a, b, c] = self.rank(a, b, c)
        return out


@dataclass(frozen=True)
class _Part:
    """One compute unit of a layer, per NPU per microbatch."""

    name: str
    fwd_flops: float
    fwd_mem: float
    bwd_flops: float  # combined input+weight gradient (block parts) or weight gradient
    bwd_mem: float
    ig_flops: float  # input gradient run separately after the weight gradient (-1: combined)
    ig_mem: float
    fwd_ar: float  # bytes of the MP all-reduce after the forward part (0: none)
    bwd_ar: float  # bytes of the MP all-reduce after the backward part


@dataclass(frozen=True)
class _LayerPlan:
    name: str
    parts: tuple[_Part, ...]
    grad_bytes: float  # per NPU
    act_bytes: float  # output activation of one microbatch (full)


def _plan_layers(model: Model, st: Strategy) -> list[_LayerPlan]:
    mb, mp, B = st.microbatch, st.mp, model.dtype_bytes
    gB = DTYPES[st.grad_dtype] if st.grad_dtype else B
    plans = []
    for layer in model.layers:
        act = layer.activation_elems * mb * B
        if layer.kind == "transformer_block":
            h, s = model.hidden, model.seq
            attn = min(2.0 * s * 4 * h * h + 4.0 * s * s * h, layer.fwd_flops)
            fr = (attn / layer.fwd_flops, 1 - attn / layer.fwd_flops) if layer.fwd_flops else (0.5, 0.5)
            ar = act if mp > 1 else 0.0
            parts = tuple(
                _Part(f"{layer.name}.{nm}", layer.fwd_flops * f * mb / mp,
                      (layer.weight_elems * f / mp + 2 * layer.activation_elems * mb) * B,
                      layer.bwd_flops * f * mb / mp, (2 * layer.weight_elems * f / mp + 3 * layer.activation_elems * mb) * B,
                      -1.0, 0.0, ar, ar)
                for nm, f in zip(("attn", "mlp"), fr))
            plans.append(_LayerPlan(layer.name, parts, layer.params / mp * gB, act))
            continue
        shard = mp if layer.kind in ("embedding", "lm_head") and model.hidden is not None else 1
        if mp > 1 and shard == 1:
            raise ConfigError("parallelism.mp", mp, f"accepted: 1 for layer kind {layer.kind!r} of {model.name} "
                                                    "(tensor parallelism is modelled for transformer models)")
        fwd_ar = act if (mp > 1 and layer.kind == "embedding") else 0.0
        bwd_ar = model.seq * model.hidden * mb * B if (mp > 1 and layer.kind == "lm_head") else 0.0
        w = layer.weight_elems / shard
        plans.append(_LayerPlan(layer.name, (_Part(
            layer.name, layer.fwd_flops * mb / shard, (w + 2 * layer.activation_elems * mb) * B,
            layer.bwd_weight_flops * mb / shard, (2 * w + 2 * layer.activation_elems * mb) * B,
            layer.bwd_input_flops * mb / shard, (w + 2 * layer.activation_elems * mb) * B,
            fwd_ar, float(bwd_ar)),), layer.params / shard * gB, act))
    return plans


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


def _program(schedule: str, s: int, pp: int, m: int) -> list[tuple[str, int]]:
    if schedule == "gpipe":
        return [("F", i) for i in range(m)] + [("B", i) for i in range(m)]
    warm = min(pp - s - 1, m)
    prog = [("F", i) for i in range(warm)]
    for i in range(m - warm):
        prog += [("F", warm + i), ("B", i)]
    return prog + [("B", i) for i in range(m - warm, m)]


def build_training(model: Model, st: Strategy, n_npus: int | None = None) -> WorkloadGraph:
    """The workload graph of `st.iterations` iterations of `model` under `st` (module doc).

    Parameters
    ----------
    model : Model
        A zoo model (`workload.models.get_model`).
    st : Strategy
        The parallelization and how it runs.
    n_npus : int, optional
        The network's NPUs; when given, mp x dp x pp must equal it (ConfigError otherwise).

    Returns
    -------
    WorkloadGraph
        Compute tasks (FLOPs, memory bytes), collectives, p2p and io transfers (bytes), with
        dependencies; `meta` names the model, the strategy, the microbatch and the stages.

    Examples
    --------
    >>> from fabricsim.vocab import TaskKind
    >>> from fabricsim.workload.models import get_model
    >>> m = get_model("resnet50")
    >>> g = build_training(m, Strategy(dp=4, batch=128))
    >>> g.n_npus, g.meta["microbatch"]
    (4, 32)
    >>> int((g.kind == TaskKind.COLLECTIVE).sum()) == len(m.layers)   # one DP all-reduce per layer
    True
    """
    if n_npus is not None and n_npus != st.npus:
        raise ConfigError("parallelism", st.name,
                          f"accepted: mp x dp x pp equal to the {n_npus} NPUs of the network (this is {st.npus})")
    if "alltoall" in model.notes:
        return _build_dlrm(model, st)
    if st.stage_layout == "interleaved":
        from .pipeline import InterleavedEmitter

        return InterleavedEmitter(model, st).run()
    return _Emitter(model, st).run()


class _Emitter:
    """Emits the graph of contiguous stages (GPipe or 1F1B); `workload.pipeline` subclasses it for
    the interleaved layout. The per-layer steps (`_fwd_layer`, `_bwd_layer`, `_grads_done`),
    stage-boundary transfers (`_send`) and input loading (`_input`) are shared."""

    def __init__(self, model: Model, st: Strategy):
        self.model, self.st = model, st
        self.b = GraphBuilder(st.npus)
        self.plans = _plan_layers(model, st)
        self.stages = self._stage_layers()
        self.R = st.ranks()
        self.coord = {int(self.R[a, c, d]): (a, c, d) for a in range(st.mp) for c in range(st.pp) for d in range(st.dp)}
        self.last = [None] * st.npus  # last compute task per NPU (program order)
        self.dp_wait: dict[tuple[int, int], int] = {}  # (layer, npu) -> collective the next forward waits for
        self.act_in: dict = {}  # (key, npu) -> transfer the receiving forward waits for
        self.grad_in: dict = {}  # (key, npu) -> transfer the receiving backward waits for
        self.io_last: dict = {}  # (stage, 0 in / 1 out) -> its last weight-streaming io task
        self.input_load = None  # the input load this iteration's first forwards wait for
        self.input_issued = None  # the last input load task issued
        self.bucket: dict[int, tuple[list[int], float]] = {}  # stage -> DP bucket being filled (layers, bytes)
        for s in range(st.pp):
            self.b.stage[self.R[:, s, :].ravel()] = s
        self.b.meta.update(model=model.name, strategy=st.name, microbatch=st.microbatch)
        self._describe()
        for k, default in (("pp_send", "p2p"), ("input_prefetch", False)):
            if getattr(st, k) != default:
                self.b.meta[k] = getattr(st, k)

    def _stage_layers(self) -> list:
        return _stages(self.model, self.st.pp)

    def _describe(self) -> None:
        self.b.meta.update(stage_layers=[(r.start, r.stop) for r in self.stages], schedule=self.st.schedule)

    def _input(self, it: int) -> None:
        """Input loading at the start of iteration `it` (module doc): sets `input_load`."""
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
        return self.b.build()

    def _mp_groups(self, s: int):
        return [tuple(self.R[:, s, d].tolist()) for d in range(self.st.dp)]

    def _comp(self, npu, name, flops, mem, phase, extra=()):
        t = self.b.compute(npu, name, flops=flops, mem_bytes=mem, phase=phase, deps=(self.last[npu], *extra))
        self.last[npu] = t
        return t

    def forward(self, s: int, m: int):
        st = self.st
        groups = self._mp_groups(s)
        if s > 0:
            entry = {p: self.act_in.pop((m, p)) for g in groups for p in g}
        else:
            entry = {p: self.input_load for g in groups for p in g}
        tail: dict = {}  # npu -> task the next part waits for (an MP all-reduce)
        for li in self.stages[s]:
            tail = self._fwd_layer(s, li, m, groups, tail, entry)
            entry = {}
        if s < st.pp - 1:
            self._send(groups, s, s + 1, self.plans[self.stages[s][-1]].act_bytes, m, self.act_in, tail,
                       f"F{m} activation {s}->{s + 1}")

    def _fwd_layer(self, s: int, li: int, m: int, groups, tail: dict, entry: dict) -> dict:
        """Forward of layer `li`, microbatch `m`, on stage `s`'s NPUs: its weights streamed in first
        (m = 0), each part after `tail` (the previous part's MP all-reduce), the first part also
        after `entry` (activation in, input load); returns the tail after the layer."""
        st = self.st
        load = self._stream(s, li, "load") if (st.weight_streaming and m == 0) else None
        for j, part in enumerate(self.plans[li].parts):
            for g in groups:
                for p in g:
                    extra = [tail.get(p), load]
                    if j == 0:
                        extra.append(entry.get(p))
                    extra.append(self.dp_wait.get((li, p)))
                    self._comp(p, f"F{m} {part.name}", part.fwd_flops, part.fwd_mem, "fwd", extra)
            tail = self._mp_allreduce(groups, part.fwd_ar, f"F{m} {part.name} MP all-reduce")
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

    def _mp_allreduce(self, groups, size: float, name: str) -> dict:
        """Megatron's all-reduce over each MP group after a part; {npu: task} for the next part to wait on."""
        tail: dict = {}
        if size > 0 and self.st.mp > 1:
            for g in groups:
                c = self.b.collective("all-reduce", size, g, "MP", name, deps=[self.last[p] for p in g])
                tail.update({p: c for p in g})
        return tail

    def _send(self, groups, s: int, to: int, size: float, key, inbox: dict, tail: dict, name: str) -> None:
        """A stage-boundary transfer from stage `s` to stage `to`; inbox[(key, npu)] = the task each
        receiver waits for. p2p: each NPU sends to its peer (same MP and DP index). multicast
        (mp > 1): per DP replica one broadcast from MP rank 0 to the receiving MP group."""
        st = self.st
        if st.pp_send == "multicast" and st.mp > 1:
            for d in range(st.dp):
                src = int(self.R[0, s, d])
                dst = [int(q) for q in self.R[:, to, d]]
                c = self.b.collective("broadcast", size, (src, *dst), "PP", name, deps=(self.last[src], tail.get(src)))
                inbox.update({(key, q): c for q in dst})
            return
        for g in groups:
            for p in g:
                mi, _, di = self.coord[p]
                q = int(self.R[mi, to, di])
                inbox[(key, q)] = self.b.p2p(p, q, size, "PP", name, deps=(self.last[p], tail.get(p)))

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
        streamed in first if `load`, each part after `tail`, the first also after `entry` (gradient
        in). Returns (tail after the layer, {npu: its last weight-gradient task})."""
        load_t = self._stream(s, li, "load") if load else None
        wg_tasks: dict = {}
        for j, part in enumerate(self.plans[li].parts[::-1]):
            for g in groups:
                for p in g:
                    extra = [tail.get(p), load_t]
                    if j == 0:
                        extra.append(entry.get(p))
                    if part.ig_flops < 0:  # block part: one backward task
                        wg_tasks[p] = self._comp(p, f"B{m} {part.name}", part.bwd_flops, part.bwd_mem, "bwd", extra)
                    else:
                        wg_tasks[p] = self._comp(p, f"B{m} {part.name} wg", part.bwd_flops, part.bwd_mem, "bwd_wg", extra)
                        if part.ig_flops > 0 and li != 0:  # the first layer needs no input gradient
                            self._comp(p, f"B{m} {part.name} ig", part.ig_flops, part.ig_mem, "bwd_ig")
            tail = self._mp_allreduce(groups, part.bwd_ar, f"B{m} {part.name} MP all-reduce")
        return tail, wg_tasks

    def _grads_done(self, s: int, li: int, wg_tasks: dict, m: int, flush: bool) -> None:
        """After the last microbatch's backward of layer `li` on stage `s`: stream its gradients out
        (weight streaming) or add them to the stage's DP bucket, synchronized once it holds
        `dp_bucket` bytes or when `flush` (the stage's last layer in backward order)."""
        st, plan = self.st, self.plans[li]
        if st.weight_streaming:
            if plan.grad_bytes > 0:
                self._stream(s, li, "store")
            return
        if st.dp == 1:
            return
        layers, nbytes = self.bucket.pop(s, ([], 0.0))
        if plan.grad_bytes > 0:
            layers, nbytes = layers + [li], nbytes + plan.grad_bytes
        if layers and (nbytes >= st.dp_bucket or flush):
            self._dp_sync(s, layers, nbytes, wg_tasks, m)
        elif layers:
            self.bucket[s] = (layers, nbytes)

    def _dp_sync(self, s: int, layers: list[int], nbytes: float, wg_tasks: dict, m: int):
        b, st = self.b, self.st
        name = self.plans[layers[0]].name if len(layers) == 1 else f"{self.plans[layers[-1]].name}..{self.plans[layers[0]].name}"
        for mi in range(st.mp):
            g = tuple(self.R[mi, s, :].tolist())
            deps = [wg_tasks[p] for p in g]
            if st.zero == 2:
                rs = b.collective("reduce-scatter", nbytes, g, "DP", f"{name} DP reduce-scatter", deps=deps)
                c = b.collective("all-gather", nbytes, g, "DP", f"{name} DP all-gather", deps=[rs])
            else:
                c = b.collective("all-reduce", nbytes, g, "DP", f"{name} DP all-reduce", deps=deps)
            for li in layers:
                for p in g:
                    self.dp_wait[(li, p)] = c


def _build_dlrm(model: Model, st: Strategy) -> WorkloadGraph:
    if st.mp != 1 or st.pp != 1 or st.microbatches != 1:
        raise ConfigError("parallelism", st.name, "accepted for DLRM: MP(1)-DP(n)-PP(1) with 1 microbatch "
                                                  "(embeddings are sharded over all NPUs, MLPs data parallel)")
    n, B = st.dp, model.dtype_bytes
    b = GraphBuilder(n)
    b.meta.update(model=model.name, strategy=st.name, microbatch=st.microbatch)
    local = st.microbatch
    embs = [layer for layer in model.layers if layer.kind == "embedding"]
    first_emb = model.layers.index(embs[0])
    bottom = list(model.layers[:first_emb])
    top = [layer for layer in model.layers[first_emb + len(embs):]]
    dim = embs[0].activation_elems
    world = tuple(range(n))
    # table-wise sharding: NPU i holds tables i, i+n, ...; the all-to-all moves every pooled vector
    a2a = st.batch * len(embs) * dim * B / n
    last = [None] * n
    ar_wait: dict = {}

    def comp(p, name, layer: Layer, which, extra=()):
        flops = {"fwd": layer.fwd_flops, "bwd_wg": layer.bwd_weight_flops, "bwd_ig": layer.bwd_input_flops}[which] * local
        mem = (layer.weight_elems * (2 if which == "bwd_wg" else 1) + 2 * layer.activation_elems * local) * B
        t = b.compute(p, name, flops=flops, mem_bytes=mem, phase=which, deps=(last[p], *extra))
        last[p] = t
        return t

    def mlp_bwd(layers):
        for layer in layers[::-1]:
            wg = [comp(p, f"{layer.name} wg", layer, "bwd_wg") for p in range(n)]
            if n > 1:
                c = b.collective("all-reduce", layer.params * B, world, "DP", f"{layer.name} DP all-reduce", deps=wg)
                ar_wait[layer.name] = c
            if layer.bwd_input_flops > 0:
                for p in range(n):
                    comp(p, f"{layer.name} ig", layer, "bwd_ig")

    for it in range(st.iterations):
        b.iteration = it
        look = []
        for p in range(n):
            rows = len(range(p, len(embs), n)) * st.batch * dim * B
            t = b.compute(p, "embedding lookup", flops=0.0, mem_bytes=2 * rows, phase="fwd", deps=(last[p],))
            last[p] = t
            look.append(t)
        fa = b.collective("all-to-all", a2a, world, "MP", "embedding all-to-all", deps=look) if n > 1 else None
        for layer in bottom + top:
            for p in range(n):
                extra = [ar_wait.get(layer.name)]
                if layer is top[0]:  # the interaction needs the exchanged embeddings
                    extra.append(fa)
                comp(p, f"{layer.name}", layer, "fwd", extra)
        mlp_bwd([x for x in top if x.kind != "interaction"])
        inter = [x for x in top if x.kind == "interaction"]
        for layer in inter:
            for p in range(n):
                comp(p, f"{layer.name} ig", layer, "bwd_ig")
        ba = b.collective("all-to-all", a2a, world, "MP", "embedding gradient all-to-all",
                          deps=[last[p] for p in range(n)]) if n > 1 else None
        mlp_bwd(bottom)
        for p in range(n):
            rows = len(range(p, len(embs), n)) * st.batch * dim * B
            t = b.compute(p, "embedding update", flops=0.0, mem_bytes=2 * rows, phase="update", deps=(last[p], ba))
            last[p] = t
    return b.build()
