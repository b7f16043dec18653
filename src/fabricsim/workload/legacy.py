"""ASTRA-sim 1.0 text workloads as workload graphs, with their original meaning.

Compute times are ASTRA-sim 1.0 cycles of a 1 GHz clock: nanoseconds (not the microseconds
Chakra's converter stores them as). The training loop is ASTRA-sim 1.0's:

- Forward, layer 0..L-1: the forward compute of layer l waits for the previous layer's blocking
  forward communication and, from the second iteration on, for layer l's weight-gradient
  collective of the previous iteration.
- Backward, layer L-1..0: weight-gradient compute, then its collective (non-blocking), then
  the input-gradient compute (skipped for layer 0) and its collective (blocking: the next
  layer's backward waits for it).
- Groups: DATA, MICRO and MODEL use all NPUs for every collective. HYBRID_TRANSFORMER* take
  the model-parallel group size from line 1 (`model_parallel_NPU_group: 4`); HYBRID_MODEL_DATA
  and HYBRID_DATA_MODEL take it from `mp`. Forward and input-gradient collectives run over the
  model-parallel group, weight-gradient collectives over the data-parallel group.
  HYBRID_MODEL_DATA and HYBRID_TRANSFORMER*: model-parallel groups are consecutive NPUs;
  HYBRID_DATA_MODEL: data-parallel groups are consecutive (the inner name first).
- HYBRID_DLRM / _ENHANCED: the embedding (layer 0) all-to-all of the forward pass is waited for
  by the first top layer (`last_bottom_layer` + 1); the bottom MLP runs meanwhile. Backward, the
  embedding's all-to-all is issued after the first top layer's input gradient and the
  embedding's weight gradient waits for it. MLP weight gradients are all-reduced over all NPUs.
- Sizes mean what they mean to ASTRA-sim: the per-NPU buffer; an ALLGATHER's bytes are each NPU's
  contribution (fabricsim's all-gather size, the gathered output, is that times the group size).
- The weight-update column is not simulated (no optimizer model in ASTRA-sim 1.0's loop).
- HYBRID_CUSTOMIZED: each layer's 13th column names its parallelism (DATA, MODEL, HYBRID_*),
  which picks that layer's groups as above.
"""

from __future__ import annotations

from ..errors import ConfigError
from .astra_text import TextComm, TextWorkload
from .graph import GraphBuilder, WorkloadGraph

_COLL = {"ALLREDUCE": "all-reduce", "ALLGATHER": "all-gather", "ALLTOALL": "all-to-all", "REDUCESCATTER": "reduce-scatter"}
NS = 1e-9


def _groups(kind: str, n: int, mp: int | None, where: str):
    """(model-parallel groups, data-parallel groups) as lists of tuples of NPUs."""
    world = [tuple(range(n))]
    if kind in ("DATA", "MICRO", "MODEL", "HYBRID_DLRM", "HYBRID_DLRM_ENHANCED"):
        return world, world
    if mp is None:
        raise ConfigError("workload.mp", None, f"accepted: the model-parallel group size for {kind} ({where})")
    if mp < 1 or n % mp:
        raise ConfigError("workload.mp", mp, f"accepted: a divisor of the {n} NPUs")
    dp = n // mp
    consecutive = [tuple(range(i * mp, (i + 1) * mp)) for i in range(dp)]
    strided = [tuple(range(i, n, mp)) for i in range(mp)]
    if kind == "HYBRID_DATA_MODEL":  # data inside: DP groups consecutive of size dp, MP strided
        dps = [tuple(range(i * dp, (i + 1) * dp)) for i in range(mp)]
        mps = [tuple(range(i, n, dp)) for i in range(dp)]
        return mps, dps
    return consecutive, strided


def text_to_graph(wl: TextWorkload, npus: int, iterations: int = 1, mp: int | None = None) -> WorkloadGraph:
    """The graph of `iterations` training iterations of a text workload on `npus` NPUs.

    Parameters
    ----------
    wl : TextWorkload
        A parsed text workload (`astra_text.read_astra_text`).
    npus : int
        NPUs that run it, >= 1.
    iterations : int
        Training iterations.
    mp : int, optional
        Model-parallel group size for HYBRID_MODEL_DATA and HYBRID_DATA_MODEL (a divisor of
        `npus`); HYBRID_TRANSFORMER* read it from line 1 when given there.

    Returns
    -------
    WorkloadGraph
        Compute tasks with fixed durations (s, from the file's ns), collectives in bytes (an
        ALLGATHER's per-NPU bytes x its group size), dependencies of ASTRA-sim 1.0's loop
        (module doc).
    """
    if npus < 1:
        raise ConfigError("npus", npus, "accepted: an integer >= 1")
    loop = _TextLoop(wl, npus, mp)
    for it in range(iterations):
        loop.b.iteration = it
        loop.forward()
        loop.backward()
    return loop.b.build()


class _TextLoop:
    """ASTRA-sim 1.0's training loop over a text workload (module doc): `forward` and `backward`
    emit one iteration's tasks into the builder `b`."""

    def __init__(self, wl: TextWorkload, npus: int, mp: int | None):
        self.wl, self.npus, self.where = wl, npus, wl.path
        kind = wl.parallelism
        if kind.startswith("HYBRID_TRANSFORMER"):
            mp = int(wl.params.get("model_parallel_NPU_group", mp or 0)) or mp
        self.b = GraphBuilder(npus)
        self.b.meta.update(model=self.where, strategy=kind, units="ns")
        L = len(wl.layers)
        self.layer_kind = [layer.parallelism or kind for layer in wl.layers] if kind == "HYBRID_CUSTOMIZED" else [kind] * L
        self.grp = {}
        for k in set(self.layer_kind):
            self.grp[k] = _groups(k, npus, mp, self.where)
        self.dlrm = kind.startswith("HYBRID_DLRM")
        self.top0 = int(wl.params.get("last_bottom_layer", 0)) + 1 if self.dlrm else None
        if self.dlrm and not 0 < self.top0 < L:
            raise ConfigError("last_bottom_layer", self.top0 - 1, f"accepted: 0..{L - 2} ({self.where})")
        self.last = [None] * npus  # last compute task per NPU
        self.wg_wait: dict = {}  # (layer, npu) -> its weight-gradient collective of the previous iteration

    def comp(self, p, name, ns, phase, extra=()):
        """A compute task of `ns` ns on NPU `p` after its previous one and `extra`; returns its id."""
        t = self.b.compute(p, name, duration=ns * NS, phase=phase, deps=(self.last[p], *extra))
        self.last[p] = t
        return t

    def coll(self, comm: TextComm, groups, category, name):
        """One collective per group, each after its members' last compute; returns {npu: task}."""
        out = {}
        if comm.type == "NONE" or comm.bytes <= 0:
            return out
        if comm.type not in _COLL:
            raise ConfigError("comm type", comm.type, f"accepted: {', '.join(_COLL)} or NONE ({self.where})")
        for g in groups:
            size = comm.bytes * (len(g) if comm.type == "ALLGATHER" else 1)  # contribution -> gathered output
            c = self.b.collective(_COLL[comm.type], size, g, category, name, deps=[self.last[p] for p in g])
            out.update({p: c for p in g})
        return out

    def forward(self) -> None:
        """Forward of one iteration, layer 0..L-1."""
        fwd_block: dict = {}
        emb_fwd: dict = {}
        for li, layer in enumerate(self.wl.layers):
            mps, _ = self.grp[self.layer_kind[li]]
            for p in range(self.npus):
                extra = [fwd_block.get(p), self.wg_wait.get((li, p))]
                if self.dlrm and li == self.top0:
                    extra.append(emb_fwd.get(p))
                self.comp(p, f"{layer.name} fwd", layer.fwd_compute_ns, "fwd", extra)
            cat = "DP" if self.layer_kind[li] in ("DATA", "MICRO") else "MP"
            made = self.coll(layer.fwd_comm, mps, cat, f"{layer.name} fwd {layer.fwd_comm.type}")
            if self.dlrm and li == 0:
                emb_fwd, fwd_block = made, {}
            else:
                fwd_block = made

    def backward(self) -> None:
        """Backward of one iteration, layer L-1..0."""
        wl, layer_kind = self.wl, self.layer_kind
        ig_block: dict = {}
        emb_bwd: dict = {}
        for li in range(len(wl.layers) - 1, -1, -1):
            layer = wl.layers[li]
            mps, dps = self.grp[layer_kind[li]]
            for p in range(self.npus):
                extra = [ig_block.get(p)] + ([emb_bwd.get(p)] if self.dlrm and li == 0 else [])
                self.comp(p, f"{layer.name} wg", layer.wg_compute_ns, "bwd_wg", extra)
            made = self.coll(layer.wg_comm, dps, "DP", f"{layer.name} wg {layer.wg_comm.type}")
            for p, c in made.items():
                self.wg_wait[(li, p)] = c
            ig_block = {}
            if li > 0:
                for p in range(self.npus):
                    self.comp(p, f"{layer.name} ig", layer.ig_compute_ns, "bwd_ig")
                cat = "DP" if layer_kind[li] in ("DATA", "MICRO") else "MP"
                ig_block = self.coll(layer.ig_comm, mps, cat, f"{layer.name} ig {layer.ig_comm.type}")
            if self.dlrm and li == self.top0:
                emb = wl.layers[0]
                emb_bwd = self.coll(emb.ig_comm, self.grp[layer_kind[0]][0], "MP", f"{emb.name} ig {emb.ig_comm.type}")
