"""DLRM under data parallelism: embedding tables sharded table-wise over all NPUs, the pooled
embeddings exchanged with an all-to-all forward and their gradients backward (MP category), the
MLPs data parallel (`workload.parallelism` module doc)."""

from __future__ import annotations

from ..errors import ConfigError
from .graph import GraphBuilder, WorkloadGraph
from .models import Layer, Model
from .strategy import Strategy


def build_dlrm(model: Model, st: Strategy) -> WorkloadGraph:
    """The workload graph of DLRM under MP(1)-DP(n)-PP(1) with one microbatch (module doc).

    Parameters
    ----------
    model : Model
        The DLRM zoo model (its notes say "alltoall").
    st : Strategy
        The strategy; ConfigError for anything but pure data parallelism.

    Returns
    -------
    WorkloadGraph
    """
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
