"""Per-operator parallelization (FlexFlow's space, as TopoOpt searches it): each op group of a
model is data parallel over k servers, or placed on one server (k = 1: model parallel).

A model's layers are cut into op groups (`op_groups`): every embedding table is one group, and
each run of other layers is cut into contiguous groups balanced by parameters (at most
`max_groups` per run). A strategy (`OpStrategy`) gives every group a degree k (a power of two
dividing the n servers) and a start s in [0, n/k): its replicas are the servers
s, s + n/k, s + 2n/k, ... (TopoOpt's strided placement, so every all-reduce group is a coset of
Z_n), and replica j processes samples [j B/k, (j+1) B/k) of the global batch B.

What a strategy costs (`plan`, one place for the workload graph, the search's estimate and the
traffic TopologyFinder sees):
- compute: each replica runs its group's forward and backward FLOPs for B/k samples (roofline);
  an embedding lookup reads `bag` rows of `dim` elements per sample and table;
- MP traffic: a group's input comes from its producers (the previous group; the consumer of an
  embedding block reads every table of the block and the dense group before it): producer
  replica j sends each consumer replica the activations of the samples they share, and the
  gradients of them come back in backward; nothing moves between a server and itself;
- all-reduce: after backward, the gradients of a group with k > 1 (params x dtype bytes) are
  all-reduced over its k replicas, after an intra-server reduce over the server's GPUs of
  2 S / (gpus x intra_bandwidth) (the released FlexNet's `compute_internal_ar_time`; 0 with one
  GPU per server).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import ConfigError
from .graph import GraphBuilder, WorkloadGraph
from .models import Layer, Model


@dataclass(frozen=True)
class OpGroup:
    """Consecutive layers parallelized together; costs for ONE sample.

    Parameters
    ----------
    name : str
        First layer's name (`top_mlp0`, `emb3`), or `first..last`.
    embedding : bool
        An embedding table (lookups, no FLOPs; placed on one server by default).
    params : int
        Trainable parameters (elements).
    weight_elems : int
        Weight elements the forward pass reads.
    fwd_flops, bwd_input_flops, bwd_weight_flops : float
        FLOPs per sample.
    act_elems : int
        Elements of the group's output per sample (what its consumers receive).
    act_total : int
        Elements of every layer's output per sample (memory traffic).
    """

    name: str
    embedding: bool
    params: int
    weight_elems: int
    fwd_flops: float
    bwd_input_flops: float
    bwd_weight_flops: float
    act_elems: int
    act_total: int


def _group(layers: list[Layer]) -> OpGroup:
    name = layers[0].name if len(layers) == 1 else f"{layers[0].name}..{layers[-1].name}"
    return OpGroup(name, layers[0].kind == "embedding", sum(x.params for x in layers),
                   sum(x.weight_elems for x in layers), sum(x.fwd_flops for x in layers),
                   sum(x.bwd_input_flops for x in layers), sum(x.bwd_weight_flops for x in layers),
                   layers[-1].activation_elems, sum(x.activation_elems for x in layers))


def op_groups(model: Model, max_groups: int = 8) -> tuple[OpGroup, ...]:
    """The op groups of `model` (module doc), in layer order.

    Parameters
    ----------
    model : Model
        A zoo model.
    max_groups : int
        Most groups per run of non-embedding layers, >= 1.

    Returns
    -------
    tuple of OpGroup
    """
    if max_groups < 1:
        raise ConfigError("search.max_groups", max_groups, "accepted: an integer >= 1")
    out: list[OpGroup] = []
    run: list[Layer] = []

    def flush():
        if not run:
            return
        total = sum(x.params for x in run)
        cut = max(total / max_groups, 1.0)
        cur: list[Layer] = []
        acc = 0
        for x in run:
            cur.append(x)
            acc += x.params
            if acc >= cut:
                out.append(_group(cur))
                cur, acc = [], 0
        if cur:
            out.append(_group(cur))
        run.clear()

    for layer in model.layers:
        if layer.kind == "embedding":
            flush()
            out.append(_group([layer]))
        else:
            run.append(layer)
    flush()
    return tuple(out)


def producers(groups: tuple[OpGroup, ...]) -> tuple[tuple[int, ...], ...]:
    """The groups each group reads its input from (module doc).

    Parameters
    ----------
    groups : tuple of OpGroup
        In layer order.

    Returns
    -------
    tuple of tuple of int
        Per group, the indices of its producers (embeddings have none).
    """
    out = []
    for g, grp in enumerate(groups):
        if grp.embedding or g == 0:
            out.append(())
            continue
        if not groups[g - 1].embedding:
            out.append((g - 1,))
            continue
        j = g - 1
        while j >= 0 and groups[j].embedding:
            j -= 1
        out.append(tuple(range(j + 1, g)) + ((j,) if j >= 0 else ()))
    return tuple(out)


@dataclass(frozen=True)
class OpStrategy:
    """Degree and start of every op group (module doc).

    Parameters
    ----------
    degrees : tuple of int
        Servers each group runs on, a power of two dividing n (1: on one server).
    starts : tuple of int
        First server of each group, in [0, n / degree).
    """

    degrees: tuple[int, ...]
    starts: tuple[int, ...]

    @classmethod
    def data_parallel(cls, groups: tuple[OpGroup, ...], n: int) -> OpStrategy:
        """Dense groups data parallel over all n servers, embedding tables one per server
        round-robin (TopoOpt's starting point).

        Parameters
        ----------
        groups : tuple of OpGroup
            The model's op groups.
        n : int
            Servers.

        Returns
        -------
        OpStrategy
        """
        degrees, starts, t = [], [], 0
        for grp in groups:
            if grp.embedding:
                degrees.append(1)
                starts.append(t % n)
                t += 1
            else:
                degrees.append(n)
                starts.append(0)
        return cls(tuple(degrees), tuple(starts))

    def replicas(self, g: int, n: int) -> np.ndarray:
        """Servers of group `g`: start + j n / degree, j = 0..degree-1."""
        k = self.degrees[g]
        return self.starts[g] + np.arange(k, dtype=np.int64) * (n // k)

    def with_group(self, g: int, degree: int, start: int) -> OpStrategy:
        """This strategy with group `g` moved to (`degree`, `start`)."""
        d, s = list(self.degrees), list(self.starts)
        d[g], s[g] = int(degree), int(start)
        return replace(self, degrees=tuple(d), starts=tuple(s))

    def check(self, n: int) -> None:
        """ConfigError naming the first group whose degree or start does not fit n servers."""
        for g, (k, s) in enumerate(zip(self.degrees, self.starts)):
            if k < 1 or n % k or k & (k - 1):
                raise ConfigError(f"strategy.degrees[{g}]", k, f"accepted: a power of two dividing {n}")
            if not 0 <= s < n // k:
                raise ConfigError(f"strategy.starts[{g}]", s, f"accepted: 0..{n // k - 1}")


@dataclass(frozen=True)
class Workload:
    """A model on n servers as TopoOpt runs it.

    Parameters
    ----------
    model : Model
        The zoo model (its dtype sets activation and gradient bytes).
    n : int
        Servers.
    batch : int
        Global batch, samples (n x per-GPU batch x GPUs per server).
    gpus : int
        GPUs per server (one big NPU; the intra-server all-reduce step).
    intra_bandwidth : float
        Per-GPU intra-server bandwidth, bytes/s.
    bag : int
        Rows an embedding lookup reads per sample and table.
    max_groups : int
        Most op groups per run of dense layers.

    Attributes
    ----------
    groups : tuple of OpGroup
        The model's op groups (`op_groups`).
    inputs : tuple of tuple of int
        Each group's producers (`producers`).
    order : tuple of int
        The order every server runs its groups' forwards in: embedding lookups first, then layer
        order (backward: the reverse).
    """

    model: Model
    n: int
    batch: int
    gpus: int = 1
    intra_bandwidth: float = float("inf")
    bag: int = 1
    max_groups: int = 8
    groups: tuple[OpGroup, ...] = field(init=False, repr=False)
    inputs: tuple[tuple[int, ...], ...] = field(init=False, repr=False)
    order: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self):
        if self.n < 1 or self.n & (self.n - 1):
            raise ConfigError("servers", self.n, "accepted: a power of two >= 1 (strided placement)")
        if self.batch % self.n:
            raise ConfigError("batch", self.batch, f"accepted: a multiple of the servers ({self.n})")
        object.__setattr__(self, "groups", op_groups(self.model, self.max_groups))
        object.__setattr__(self, "inputs", producers(self.groups))
        object.__setattr__(self, "order", tuple(sorted(range(len(self.groups)),
                                                       key=lambda g: (not self.groups[g].embedding, g))))

    def initial(self) -> OpStrategy:
        """TopoOpt's starting strategy (`OpStrategy.data_parallel`)."""
        return OpStrategy.data_parallel(self.groups, self.n)


@dataclass(frozen=True)
class Transfer:
    """MP transfers of one consumer group: src[i] -> dst[i], `size[i]` bytes (forward; backward
    moves the same bytes dst -> src)."""

    consumer: int
    producer: int
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray


@dataclass(frozen=True)
class Plan:
    """What a strategy runs (module doc): per group, its replicas, per-replica compute (FLOPs and
    memory bytes per phase), its MP transfers in, and its all-reduce.

    Parameters
    ----------
    work : Workload
    strategy : OpStrategy
    replicas : tuple of int arrays
    fwd, bwd_wg, bwd_ig : tuple of (flops, mem_bytes) per group, per replica
    transfers : tuple of Transfer
        One per (consumer, producer) pair with bytes to move.
    allreduce : tuple of float
        Gradient bytes all-reduced per group (0: none).
    intra : tuple of float
        Intra-server all-reduce step per group, s.
    """

    work: Workload
    strategy: OpStrategy
    replicas: tuple[np.ndarray, ...]
    fwd: tuple[tuple[float, float], ...]
    bwd_wg: tuple[tuple[float, float], ...]
    bwd_ig: tuple[tuple[float, float], ...]
    transfers: tuple[Transfer, ...]
    allreduce: tuple[float, ...]
    intra: tuple[float, ...]


def _shares(kp: int, kc: int, batch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(producer replica, consumer replica, samples) for every pair sharing samples."""
    if kp >= kc:
        j = np.arange(kp)
        return j, j // (kp // kc), np.full(kp, batch // kp)
    i = np.arange(kc)
    return i // (kc // kp), i, np.full(kc, batch // kc)


def plan(work: Workload, st: OpStrategy) -> Plan:
    """Compute, MP transfers and all-reduces of a strategy (module doc).

    Parameters
    ----------
    work : Workload
        The model on its servers.
    st : OpStrategy
        Degree and start per group.

    Returns
    -------
    Plan
    """
    n, B, E = work.n, work.batch, work.model.dtype_bytes
    if len(st.degrees) != len(work.groups) or len(st.starts) != len(work.groups):
        raise ConfigError("strategy.degrees", len(st.degrees), f"accepted: one per op group ({len(work.groups)})")
    st.check(n)
    reps, fwd, wg, ig, ar, intra = [], [], [], [], [], []
    for g, grp in enumerate(work.groups):
        k = st.degrees[g]
        reps.append(st.replicas(g, n))
        local = B // k
        if grp.embedding:
            rows = local * work.bag * grp.act_elems * E  # the rows a lookup reads
            fwd.append((0.0, float(rows)))
            wg.append((0.0, 2.0 * rows))  # sparse update: read and write the rows touched
            ig.append((0.0, 0.0))
        else:
            acts = grp.act_total * local * E
            fwd.append((grp.fwd_flops * local, float(grp.weight_elems * E + 2 * acts)))
            wg.append((grp.bwd_weight_flops * local, float(2 * grp.weight_elems * E + acts)))
            ig.append((grp.bwd_input_flops * local, float(grp.weight_elems * E + 2 * acts)))
        size = float(grp.params * E) if k > 1 else 0.0
        ar.append(size)
        intra.append(2 * size / (work.gpus * work.intra_bandwidth) if work.gpus > 1 and size else 0.0)
    transfers = []
    for c, prods in enumerate(work.inputs):
        for p in prods:
            pj, ci, samples = _shares(st.degrees[p], st.degrees[c], B)
            src, dst = reps[p][pj], reps[c][ci]
            size = samples * work.groups[p].act_elems * E
            keep = (src != dst) & (size > 0)
            if keep.any():
                transfers.append(Transfer(c, p, src[keep], dst[keep], size[keep].astype(float)))
    return Plan(work, st, tuple(reps), tuple(fwd), tuple(wg), tuple(ig), tuple(transfers), tuple(ar), tuple(intra))


def traffic(pl: Plan) -> tuple[list[tuple[tuple[int, ...], float]], np.ndarray]:
    """The demand TopologyFinder sees: all-reduce groups and the MP byte matrix of one iteration.

    Parameters
    ----------
    pl : Plan
        A planned strategy.

    Returns
    -------
    ar_groups : list of (members, bytes)
        Each all-reduce's servers and its gradient bytes.
    mp : float array [n, n]
        Bytes i -> j of MP transfers, forward plus backward.
    """
    n = pl.work.n
    mp = np.zeros((n, n))
    for t in pl.transfers:
        np.add.at(mp, (t.src, t.dst), t.size)
        np.add.at(mp, (t.dst, t.src), t.size)
    groups = [(tuple(int(x) for x in pl.replicas[g]), s) for g, s in enumerate(pl.allreduce) if s > 0]
    return groups, mp


def build_graph(pl: Plan, iterations: int = 1) -> WorkloadGraph:
    """The workload graph of a planned strategy, for the training engine.

    Forward: every server runs its groups in layer order (embedding lookups first); a group's
    forward waits for the transfers of its inputs. Backward: reverse order, weight gradient
    then input gradient, the gradients of the inputs sent back, then the intra-server step and
    the all-reduce of the group's gradients, which the next iteration's forward of the group
    waits for.

    Parameters
    ----------
    pl : Plan
        A planned strategy.
    iterations : int
        Training iterations, >= 1.

    Returns
    -------
    WorkloadGraph
    """
    work = pl.work
    n = work.n
    b = GraphBuilder(n)
    b.meta.update(model=work.model.name, strategy="per-op", servers=n)
    last: list = [None] * n
    into: dict[int, list[Transfer]] = {}
    for t in pl.transfers:
        into.setdefault(t.consumer, []).append(t)
    order = work.order
    ar_wait: dict[int, int] = {}
    for it in range(iterations):
        b.iteration = it
        done: dict[tuple[int, int], int] = {}  # (group, server) -> forward task
        for g in order:
            grp = work.groups[g]
            arrivals: dict[int, list] = {}
            for t in into.get(g, []):
                for s, d, size in zip(t.src.tolist(), t.dst.tolist(), t.size.tolist()):
                    tid = b.p2p(s, d, size, "MP", f"{work.groups[t.producer].name} -> {grp.name}",
                                deps=(done[(t.producer, s)],))
                    arrivals.setdefault(d, []).append(tid)
            flops, mem = pl.fwd[g]
            for r in pl.replicas[g].tolist():
                local = [done.get((p, r)) for p in work.inputs[g]]
                deps = (last[r], ar_wait.get(g), *arrivals.get(r, ()), *local)
                last[r] = done[(g, r)] = b.compute(r, f"{grp.name} fwd", flops=flops, mem_bytes=mem, phase="fwd",
                                                   deps=deps)
        back: dict[tuple[int, int], list] = {}  # (group, server) -> gradients it waits for
        for g in order[::-1]:
            grp = work.groups[g]
            reps = pl.replicas[g].tolist()
            wgs = []
            for r in reps:
                flops, mem = pl.bwd_wg[g]
                deps = (last[r], *back.get((g, r), ()))
                last[r] = b.compute(r, f"{grp.name} wg", flops=flops, mem_bytes=mem,
                                    phase="update" if grp.embedding else "bwd_wg", deps=deps)
                wgs.append(last[r])
                flops, mem = pl.bwd_ig[g]
                if flops or mem:
                    last[r] = b.compute(r, f"{grp.name} ig", flops=flops, mem_bytes=mem, phase="bwd_ig",
                                        deps=(last[r],))
            for t in into.get(g, []):
                for s, d, size in zip(t.src.tolist(), t.dst.tolist(), t.size.tolist()):
                    tid = b.p2p(d, s, size, "MP", f"{grp.name} -> {work.groups[t.producer].name} grad",
                                deps=(last[d],))
                    back.setdefault((t.producer, s), []).append(tid)
            if pl.allreduce[g] > 0:
                deps = wgs
                if pl.intra[g] > 0:
                    deps = [b.compute(r, f"{grp.name} intra-server reduce", duration=pl.intra[g], phase="comm",
                                      deps=(w,)) for r, w in zip(reps, wgs)]
                ar_wait[g] = b.collective("all-reduce", pl.allreduce[g], reps, "DP", f"{grp.name} all-reduce",
                                          deps=deps)
    return b.build()
