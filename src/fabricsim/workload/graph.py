"""The workload graph: every task of a training run on every NPU, with its dependencies.

One global DAG (Chakra's node model, made global): a *compute* task runs on one NPU; a
*collective* task is ONE node shared by all members of its group (it starts when every member
is ready and leaves each member at the same instant, as a collective does); a *p2p* task moves
bytes from one NPU to another (pipeline activations and gradients); an *io* task moves bytes
between external memory and NPUs through the topology's I/O controllers: a load multicasts to
its members, a store reduces from them (weight streaming, input loading). An io task's `size` is
the total over its `shards`: its members are listed shard by shard (equal counts), shard j's
bytes go to (come from) shard j's members, and controller c serves shard c mod shards.

Tasks are stored as numpy arrays (one entry per task) so a 1024-NPU GPT-3 iteration with a few
hundred thousand tasks stays small. `GraphBuilder` appends tasks and freezes them.

Compute tasks of an NPU run one at a time; among ready ones the lowest task id goes first
(ASTRA-sim's issue order). A schedule that needs a fixed order (1F1B) adds control dependencies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from ..vocab import CATEGORIES, COLLECTIVES, PHASES, IODirection, TaskKind

# the vocabulary lives in fabricsim.vocab; these names are its values, for array comparisons
COMPUTE, COLLECTIVE, P2P, IO = TaskKind.COMPUTE, TaskKind.COLLECTIVE, TaskKind.P2P, TaskKind.IO
# a builder's row per task, in this order (`GraphBuilder._add`), and each column's type in the graph
_COLUMNS = ("kind", "npu", "peer", "duration", "flops", "mem_bytes", "coll", "size", "group", "category", "phase",
            "iteration", "label", "work")
_INT_COLUMNS = {"kind": np.int8, "npu": np.int64, "peer": np.int64, "coll": np.int32, "group": np.int64,
                "category": np.int8, "phase": np.int8, "iteration": np.int32, "label": np.int64, "work": np.int32}
PHASE_INDEX = {p: i for i, p in enumerate(PHASES)}  # phase name -> its index in `PHASES`
KINDS = tuple(k.name.lower() for k in TaskKind)
IO_LOAD, IO_STORE = IODirection.LOAD, IODirection.STORE  # io task direction (kept in `peer`)


def category_index(name: str) -> int:
    """Index of a communication category in `CATEGORIES`.

    Parameters
    ----------
    name : str
        MP, CP, EP, PP, DP, IO or other.

    Returns
    -------
    int
    """
    return CATEGORIES.index(name)


@dataclass(frozen=True, eq=False)
class WorkloadGraph:
    """Frozen task arrays. Units: seconds, FLOPs, bytes.

    `duration` is a fixed compute time (NaN: use the NPU roofline on `flops` and `mem_bytes`).
    `group` indexes `groups` (tuples of NPU ids) for collectives; `npu`/`peer` are the source and
    destination of p2p tasks. `stage` gives each NPU's pipeline stage (for reports).

    Parameters
    ----------
    n_npus : int
        NPUs of the workload.
    kind : int8 array
        `TaskKind` of each task.
    npu : int64 array
        NPU of a compute task, source of a p2p task; -1 otherwise.
    peer : int64 array
        Destination of a p2p task, `IODirection` of an io task; -1 otherwise.
    duration : float array
        Fixed compute time, s (NaN: roofline).
    flops : float array
        Compute FLOPs.
    mem_bytes : float array
        Memory traffic of a compute task, bytes.
    coll : int32 array
        Index into `COLLECTIVES`; for io tasks the number of shards; -1 otherwise.
    size : float array
        Bytes a communication task moves (collectives: nccl-tests' size).
    group : int64 array
        Index into `groups` (collectives and io tasks); -1 otherwise.
    category : int8 array
        Index into `CATEGORIES`; -1 for compute.
    phase : int8 array
        Index into `PHASES`.
    iteration : int32 array
        Training iteration of each task.
    label : int64 array
        Index into `labels`.
    dep_ptr, dep_idx : int64 arrays
        Dependencies in CSR form: task t waits for `dep_idx[dep_ptr[t]:dep_ptr[t+1]]`, all < t.
    groups : tuple of tuple of int
        NPU groups of collectives and io tasks.
    labels : tuple of str
        Task names.
    stage : int64 array
        Pipeline stage of each NPU.
    meta : dict
        Model, strategy and other facts, for reports.
    work : int32 array, optional
        Index into `works` of a compute task's kernels (-1: none; the roofline on FLOPs and bytes).
    works : tuple of tuple
        Kernel lists (`system.compute.Gemm`/`Memory`), interned; an NPU with a compute model
        prices a task by its kernels (`system.npu.NPU.task_times`).
    price_groups : tuple of tuple of int, optional
        Folded graphs: the real NPU group each entry of `groups` stands for, which the network
        model prices (None: the groups themselves).
    fold : int64 array, optional
        Folded graphs (`engine.fold`): row i lists the real NPUs local NPU i stands for, all
        simulated alike; the first is the one whose transfers are priced. None: not folded.
    """

    n_npus: int
    kind: np.ndarray
    npu: np.ndarray
    peer: np.ndarray
    duration: np.ndarray
    flops: np.ndarray
    mem_bytes: np.ndarray
    coll: np.ndarray  # index into COLLECTIVES; for io tasks the number of shards; -1 otherwise
    size: np.ndarray
    group: np.ndarray
    category: np.ndarray  # index into CATEGORIES, -1 for compute
    phase: np.ndarray
    iteration: np.ndarray
    label: np.ndarray  # index into labels
    dep_ptr: np.ndarray
    dep_idx: np.ndarray
    groups: tuple[tuple[int, ...], ...]
    labels: tuple[str, ...]
    stage: np.ndarray = field(default=None)
    meta: dict = field(default_factory=dict)
    work: np.ndarray = field(default=None)
    works: tuple = ()
    price_groups: tuple | None = None
    fold: np.ndarray | None = None

    def __post_init__(self):
        if self.work is None:
            object.__setattr__(self, "work", np.full(len(self.kind), -1, dtype=np.int32))

    @property
    def copies(self) -> int:
        """Real NPUs each NPU of the graph stands for (1 unless folded)."""
        return 1 if self.fold is None else int(self.fold.shape[1])

    @property
    def real_npus(self) -> int:
        """NPUs of the job: `n_npus` x `copies`."""
        return self.n_npus * self.copies

    def price_group(self, i: int) -> tuple[int, ...]:
        """The real NPU group that group `i` stands for (itself unless folded).

        Parameters
        ----------
        i : int
            Index into `groups`.

        Returns
        -------
        tuple of int
        """
        return self.groups[i] if self.price_groups is None else self.price_groups[i]

    def fold_index(self) -> tuple[np.ndarray, np.ndarray]:
        """For every real NPU: the NPU of the graph that stands for it, and its column in `fold`.

        Returns
        -------
        (int64 array, int64 array)
            Both of length `real_npus`, indexed by real NPU id (identity and zeros unless folded).
        """
        n = self.real_npus
        if self.fold is None:
            return np.arange(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        local, col = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        local[self.fold.ravel()] = np.repeat(np.arange(self.n_npus), self.copies)
        col[self.fold.ravel()] = np.tile(np.arange(self.copies), self.n_npus)
        return local, col

    def real_npu(self, p: int) -> int:
        """The real NPU whose transfers NPU `p` of the graph is priced as (itself unless folded).

        Parameters
        ----------
        p : int
            NPU of the graph.

        Returns
        -------
        int
        """
        return int(p) if self.fold is None else int(self.fold[p, 0])

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def n_iterations(self) -> int:
        """Training iterations in the graph."""
        return int(self.iteration.max()) + 1 if len(self) else 0

    def name(self, t: int) -> str:
        """The label of task `t`.

        Parameters
        ----------
        t : int
            Task id.

        Returns
        -------
        str
        """
        return self.labels[self.label[t]]

    def deps(self, t: int) -> np.ndarray:
        """Ids of the tasks task `t` waits for.

        Parameters
        ----------
        t : int
            Task id.

        Returns
        -------
        int64 array
        """
        return self.dep_idx[self.dep_ptr[t]: self.dep_ptr[t + 1]]

    def members(self, t: int) -> tuple[int, ...]:
        """NPUs a task involves: its NPU, its group, or (src, dst).

        Parameters
        ----------
        t : int
            Task id.

        Returns
        -------
        tuple of int
        """
        k = self.kind[t]
        if k == COMPUTE:
            return (int(self.npu[t]),)
        if k == COLLECTIVE or k == IO:
            return self.groups[self.group[t]]
        return (int(self.npu[t]), int(self.peer[t]))

    def moves_nothing(self) -> np.ndarray:
        """Communication tasks with nothing to move: no bytes, a collective of one member, a p2p
        transfer to itself. Engines finish them the moment they are ready."""
        gsize = np.array([len(m) for m in (self.groups if self.price_groups is None else self.price_groups)],
                         dtype=np.int64)
        one = np.zeros(len(self), dtype=bool)
        coll = self.kind == COLLECTIVE
        one[coll] = gsize[self.group[coll]] < 2
        return (self.kind != COMPUTE) & ((self.size <= 0) | one | ((self.kind == P2P) & (self.npu == self.peer)))


class GraphBuilder:
    """Append tasks; `build()` freezes them. Every method that adds a task returns its id.

    Parameters
    ----------
    n_npus : int
        NPUs of the workload.

    Attributes
    ----------
    iteration : int
        Training iteration stamped on the tasks added next (set it between iterations).
    stage : int64 array
        Pipeline stage of each NPU (for reports).
    meta : dict
        Model, strategy and other facts, copied into the graph.

    Examples
    --------
    >>> b = GraphBuilder(2)
    >>> f = b.compute(0, "fwd", flops=1e12)
    >>> b.p2p(0, 1, 64e6, "PP", "activations", deps=(f,))
    1
    >>> g = b.build()
    >>> len(g), g.deps(1).tolist(), g.members(1)
    (2, [0], (0, 1))
    """

    def __init__(self, n_npus: int):
        self.n_npus = int(n_npus)
        self._rows: list[tuple] = []  # one per task, columns `_COLUMNS` (plain numbers: fast to append)
        self._deps: list[tuple[int, ...]] = []
        self._groups: dict[tuple, int] = {}  # (members, priced members or None) -> index
        self._labels: dict[str, int] = {}
        self._works: dict[tuple, int] = {}
        self._work_ids: dict[int, tuple] = {}  # id(work) -> (work, index): the emitter passes the same tuples
        self.fold: np.ndarray | None = None  # set by a folding emitter: row i = real NPUs of NPU i
        self.iteration = 0
        self.stage = np.zeros(self.n_npus, dtype=np.int64)
        self.meta: dict = {}

    def __len__(self) -> int:
        return len(self._deps)

    def _label(self, name: str) -> int:
        return self._labels.setdefault(name, len(self._labels))

    def group_id(self, members, price=None) -> int:
        """Index of a group in `groups`, added if new.

        Parameters
        ----------
        members : iterable of int
            NPU ids, in order (the order is part of the group).
        price : iterable of int, optional
            Folded graphs: the real NPUs the group stands for (`WorkloadGraph.price_groups`).

        Returns
        -------
        int
        """
        if type(members) is tuple and (price is None or type(price) is tuple):  # the emitters' groups: look up as given
            i = self._groups.get((members, price))
            if i is not None:
                return i
        g = (tuple(int(m) for m in members), None if price is None else tuple(int(m) for m in price))
        i = self._groups.get(g)
        if i is None:
            i = self._groups[g] = len(self._groups)
        return i

    def _add(self, deps, row: tuple) -> int:
        tid = len(self._rows)
        self._rows.append(row)
        self._deps.append(tuple([d for d in deps if d is not None]))  # ints (numpy's too: `build` reads them as int64)
        return tid

    def compute(self, npu: int, name: str, *, flops: float = 0.0, mem_bytes: float = 0.0,
                duration: float | None = None, phase: str = "fwd", deps=(), work=None) -> int:
        """Add a compute task on one NPU: a roofline task, or one of fixed duration.

        Parameters
        ----------
        npu : int
            NPU id.
        name : str
            Task label.
        flops : float
            FLOPs.
        mem_bytes : float
            Memory traffic, bytes.
        duration : float, optional
            Fixed time, s (None: the roofline on `flops` and `mem_bytes`).
        phase : str
            One of `PHASES` (fwd, bwd, bwd_ig, bwd_wg, update, comm, recompute).
        deps : iterable of int
            Ids of the tasks it waits for, all earlier (None entries are skipped).
        work : tuple, optional
            Its kernels (`system.compute.Gemm`/`Memory`), priced by an NPU with a compute model.

        Returns
        -------
        int
            The task's id.
        """
        return self.compute_task(int(npu), name, float(flops), float(mem_bytes),
                                 np.nan if duration is None else float(duration), PHASE_INDEX[phase], deps, work)

    def compute_task(self, npu: int, name: str, flops: float, mem_bytes: float, duration: float, phase: int,
                     deps, work) -> int:
        """`compute` for emitters that add hundreds of thousands of tasks: every argument given, in
        order and already of its type (`duration` nan for the roofline, `phase` an index into
        `PHASES`, `work` a kernel tuple or None). Returns the task's id."""
        w = -1
        if work is not None:  # the emitters pass the same kernel tuples again and again: by identity first
            hit = self._work_ids.get(id(work))
            if hit is not None and hit[0] is work:
                w = hit[1]
            else:  # hashing the kernels is slow; keeping `work` keeps its id from being reused
                w = self._works.setdefault(work, len(self._works))
                self._work_ids[id(work)] = (work, w)
        labels, tid = self._labels, len(self._rows)
        self._rows.append((int(COMPUTE), npu, -1, duration, flops, mem_bytes, -1, 0.0, -1, -1, phase, self.iteration,
                           labels.setdefault(name, len(labels)), w))
        self._deps.append(tuple([d for d in deps if d is not None]))
        return tid

    def collective(self, collective: str, size: float, members, category: str, name: str, deps=(),
                   price=None) -> int:
        """Add a collective: one task shared by every member of its group.

        Parameters
        ----------
        collective : str
            Canonical collective name.
        size : float
            Collective size, bytes (nccl-tests' convention).
        members : iterable of int
            NPU ids of the group, in rank order.
        category : str
            Communication category: MP, CP, EP, PP, DP, IO or other.
        name : str
            Task label.
        deps : iterable of int
            Ids of the tasks it waits for, all earlier (None entries are skipped).
        price : iterable of int, optional
            Folded graphs: the real group it stands for, which the network model prices.

        Returns
        -------
        int
            The task's id.
        """
        return self._add(deps, (int(COLLECTIVE), -1, -1, np.nan, 0.0, 0.0, COLLECTIVES.index(collective), float(size),
                                self.group_id(members, price), category_index(category), PHASE_INDEX["comm"], self.iteration,
                                self._label(name), -1))

    def p2p(self, src: int, dst: int, size: float, category: str, name: str, deps=()) -> int:
        """Add a transfer of `size` bytes from NPU `src` to NPU `dst`.

        Parameters
        ----------
        src, dst : int
            NPU ids.
        size : float
            Bytes.
        category : str
            Communication category: MP, CP, EP, PP, DP, IO or other.
        name : str
            Task label.
        deps : iterable of int
            Ids of the tasks it waits for, all earlier (None entries are skipped).

        Returns
        -------
        int
            The task's id.
        """
        return self._add(deps, (int(P2P), int(src), int(dst), np.nan, 0.0, 0.0, -1, float(size), -1,
                                category_index(category), PHASE_INDEX["comm"], self.iteration, self._label(name), -1))

    def io(self, direction: int, size: float, members, shards: int, name: str, deps=()) -> int:
        """Add a load (IO_LOAD) into or a store (IO_STORE) from `members` through the I/O controllers.

        Parameters
        ----------
        direction : int
            `IODirection.LOAD` or `IODirection.STORE`.
        size : float
            Bytes, the total over all shards.
        members : sequence of int
            NPU ids, listed shard by shard (equal counts).
        shards : int
            Shards, >= 1, dividing the number of members.
        name : str
            Task label.
        deps : iterable of int
            Ids of the tasks it waits for, all earlier (None entries are skipped).

        Returns
        -------
        int
            The task's id; ValueError when the members do not split into equal shards.
        """
        if shards < 1 or len(members) % shards:
            raise ValueError("io task: members must split into equal shards")
        return self._add(deps, (int(IO), -1, int(direction), np.nan, 0.0, 0.0, int(shards), float(size),
                                self.group_id(members), category_index("IO"), PHASE_INDEX["comm"], self.iteration,
                                self._label(name), -1))

    def build(self) -> WorkloadGraph:
        """The frozen graph; ValueError if a task depends on itself or on a later task.

        Returns
        -------
        WorkloadGraph
        """
        n, w = len(self._rows), len(_COLUMNS)
        # every value is a float or an int below 2**53 (ids, counts): exact through float64
        table = np.fromiter(chain.from_iterable(self._rows), dtype=np.float64, count=n * w).reshape(n, w)
        arrs = {k: table[:, i].astype(_INT_COLUMNS.get(k, np.float64)) for i, k in enumerate(_COLUMNS)}
        counts = np.fromiter(map(len, self._deps), dtype=np.int64, count=len(self._deps))
        dep_ptr = np.zeros(len(self._deps) + 1, dtype=np.int64)
        np.cumsum(counts, out=dep_ptr[1:])
        dep_idx = np.fromiter(chain.from_iterable(self._deps), dtype=np.int64, count=int(dep_ptr[-1]))
        n = len(self._deps)
        if len(dep_idx) and (dep_idx.min() < 0 or np.any(dep_idx >= np.repeat(np.arange(n), counts))):
            raise ValueError("workload graph: a task depends on itself or on a later task")
        keys = sorted(self._groups, key=self._groups.get)
        groups = tuple(k[0] for k in keys)
        price_groups = tuple(k[1] if k[1] is not None else k[0] for k in keys) if self.fold is not None else None
        labels = tuple(sorted(self._labels, key=self._labels.get))
        works = tuple(sorted(self._works, key=self._works.get))
        return WorkloadGraph(self.n_npus, dep_ptr=dep_ptr, dep_idx=dep_idx, groups=groups, labels=labels,
                             stage=self.stage.copy(), meta=dict(self.meta), works=works, price_groups=price_groups,
                             fold=None if self.fold is None else np.asarray(self.fold, dtype=np.int64), **arrs)
