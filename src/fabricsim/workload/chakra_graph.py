"""Chakra execution traces (one per NPU) as one workload graph.

- COMP_NODE -> a compute task: `duration_micros` replayed, or, when the node has no duration but
  `num_ops` or `tensor_size`, the NPU roofline on `num_ops` FLOPs and `tensor_size` bytes.
- COMM_COLL_NODE -> one collective task per instance: the k-th collective of a group on each
  member is the same instance (ASTRA-sim matches them the same way). Its group is `pg_name`
  looked up in `groups` (the communicator-groups JSON), else all NPUs. `comm_size` means what it
  means to ASTRA-sim: the per-NPU buffer, for an all-gather each NPU's contribution (fabricsim's
  all-gather size is the gathered output: comm_size x group size).
- COMM_SEND_NODE / COMM_RECV_NODE -> one p2p task: the k-th send from a to b with a tag meets the
  k-th receive on b from a with that tag; it waits for the dependencies of both.
- METADATA nodes -> zero-time compute tasks (they only carry dependencies).
Collectives take the category named by a `comm_category` attribute (MP, CP, EP, PP, DP, IO), else "other".
With several iterations, iteration k+1 of an NPU starts after everything of iteration k on it.

`graph_to_traces` goes the other way: a workload graph (e.g. GPT-3 under MP-DP-PP) as one trace per
NPU plus its communicator groups, for ASTRA-sim or for reading back.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import ConfigError
from .chakra import COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE, EtNode, EtTrace, check_peers
from .chakra_schema import COLLECTIVE_COMM_TYPE_NAMES, NODE_TYPES
from .graph import CATEGORIES, COLLECTIVE, COLLECTIVES, COMPUTE, IO, GraphBuilder, WorkloadGraph

_COLL = {"ALL_REDUCE": "all-reduce", "REDUCE_SCATTER": "reduce-scatter", "ALL_GATHER": "all-gather",
         "ALL_TO_ALL": "all-to-all", "BROADCAST": "broadcast", "REDUCE": "reduce"}
_METADATA = NODE_TYPES.get("METADATA_NODE", 1)


def traces_to_graph(traces: Sequence[EtTrace], iterations: int = 1,
                    groups: Mapping[str, Sequence[int]] | None = None) -> WorkloadGraph:
    """One workload graph from per-rank Chakra traces.

    Parameters
    ----------
    traces : sequence of EtTrace
        One per rank, rank order.
    iterations : int
        Times the traces run; an iteration's first nodes wait for the previous one's last nodes.
    groups : mapping, optional
        Communicator groups, `pg_name -> ranks` (ASTRA-sim's comm-group file).

    Returns
    -------
    WorkloadGraph
        Collectives matched by order per group, send/recv pairs by order per (src, dst, tag);
        ConfigError for unmatched or inconsistent nodes, a send or recv whose peer is not another
        rank (`chakra.check_peers`), and for cycles.
    """
    check_peers(traces, "trace")
    m = _TraceMatcher(traces, groups)
    for it in range(iterations):
        for tr in traces:
            m.add_nodes(it, tr)
        for tr in traces:
            m.link(it, tr)
    return m.emit()


class _TraceMatcher:
    """Tasks keyed across ranks (a collective or a send/recv pair is one task), then emitted in a
    stable global topological order."""

    def __init__(self, traces: Sequence[EtTrace], groups):
        self.n, self.groups = len(traces), groups
        self.world = tuple(range(self.n))
        self.tasks: dict = {}  # key -> dict(kind, ..., deps=set of keys)
        self.node_key: dict = {}  # (iteration, rank, node id) -> task key
        self.terminal: dict = {}

    def add_nodes(self, it: int, tr: EtTrace) -> None:
        """The tasks of rank `tr.rank`'s nodes in iteration `it`, and its last nodes (those nothing
        waits for), which the next iteration's first nodes wait for."""
        r = tr.rank
        counters: dict = defaultdict(int)
        has_succ = set()
        for nd in tr.nodes:
            has_succ.update(nd.deps)
        for nd in tr.nodes:
            self.node_key[(it, r, nd.id)] = self._task(it, r, nd, counters)
        self.terminal[(it, r)] = [nd.id for nd in tr.nodes if nd.id not in has_succ]

    def _task(self, it: int, r: int, nd: EtNode, counters: dict):
        where = f"rank {r} node {nd.id}"
        if nd.type == COMP_NODE or nd.type == _METADATA:
            key = ("c", it, r, nd.id)
            roofline = not nd.duration_micros and (nd.num_ops or nd.tensor_size)
            dur = None if roofline else float(nd.duration_micros) * 1e-6
            if nd.type == _METADATA:
                dur = 0.0
            self.tasks[key] = dict(kind="c", npu=r, name=nd.name or f"node {nd.id}", dur=dur,
                                   flops=float(nd.num_ops or 0), mem=float(nd.tensor_size or 0), deps=set())
            return key
        if nd.type == COMM_COLL_NODE:
            return self._collective(it, nd, counters, where)
        if nd.type in (COMM_SEND_NODE, COMM_RECV_NODE):
            send = nd.type == COMM_SEND_NODE
            src, dst = (r, int(nd.comm_dst)) if send else (int(nd.comm_src), r)
            ck = ("p2p", src, dst, nd.comm_tag, send)
            k = counters[ck]
            counters[ck] += 1
            key = ("p2p", it, src, dst, nd.comm_tag, k)
            self.tasks.setdefault(key, dict(kind="p2p", src=src, dst=dst, size=float(nd.comm_size or 0),
                                            name=nd.name or "p2p", cat=nd.attrs.get("comm_category", "other"),
                                            deps=set()))
            return key
        raise ConfigError(f"{where}", nd.type_name, "accepted: compute, metadata, collective, send and recv nodes")

    def _collective(self, it: int, nd: EtNode, counters: dict, where: str):
        members = self.world
        pg = nd.pg_name
        if pg not in (None, "", "0"):
            if not self.groups or str(pg) not in self.groups:
                raise ConfigError(f"{where} pg_name", pg, "accepted: a group of the communicator-groups file")
            members = tuple(int(x) for x in self.groups[str(pg)])
        name = COLLECTIVE_COMM_TYPE_NAMES.get(nd.comm_type)
        if name not in _COLL:
            raise ConfigError(f"{where} comm_type", nd.comm_type, f"accepted: {', '.join(_COLL)}")
        k = counters[("coll", members)]
        counters[("coll", members)] += 1
        key = ("coll", it, members, k)
        cat = nd.attrs.get("comm_category", "other")
        # ASTRA-sim's comm_size of an all-gather is each NPU's contribution; ours the gathered output
        size = float(nd.comm_size or 0) * (len(members) if name == "ALL_GATHER" else 1)
        t = self.tasks.setdefault(key, dict(kind="coll", coll=_COLL[name], size=size, members=members,
                                            name=nd.name or name, cat=cat if cat in CATEGORIES else "other", deps=set()))
        if t["size"] != size or t["coll"] != _COLL[name]:
            raise ConfigError(f"{where}", nd.name, f"collective {k} of group {members} differs between ranks")
        return key

    def link(self, it: int, tr: EtTrace) -> None:
        """Dependencies of rank `tr.rank`'s tasks in iteration `it` (and on the previous iteration)."""
        r, node_key, tasks = tr.rank, self.node_key, self.tasks
        for nd in tr.nodes:
            key = node_key[(it, r, nd.id)]
            for d in nd.deps:
                if (it, r, d) not in node_key:
                    raise ConfigError(f"rank {r} node {nd.id} deps", d, "accepted: ids of nodes in the same trace")
                dk = node_key[(it, r, d)]
                if dk != key:
                    tasks[key]["deps"].add(dk)
            if it > 0 and not nd.deps:
                for d in self.terminal[(it - 1, r)]:
                    tasks[key]["deps"].add(node_key[(it - 1, r, d)])

    def emit(self) -> WorkloadGraph:
        """The graph, tasks in a global topological order (Kahn, stable in insertion order)."""
        import heapq

        tasks = self.tasks
        unmatched = [k for k, t in tasks.items() if t["kind"] == "p2p" and k[2] == k[3]]
        if unmatched:
            raise ConfigError("trace", unmatched[0], "a send to itself")
        keys = list(tasks)
        index = {k: i for i, k in enumerate(keys)}
        indeg = [len(tasks[k]["deps"]) for k in keys]
        succ = defaultdict(list)
        for k in keys:
            for d in tasks[k]["deps"]:
                succ[d].append(k)
        ready = [index[k] for k in keys if indeg[index[k]] == 0]
        heapq.heapify(ready)
        b = GraphBuilder(self.n)
        b.meta.update(model="chakra trace", strategy=f"{self.n} ranks")
        new_id: dict = {}
        while ready:
            k = keys[heapq.heappop(ready)]
            new_id[k] = self._build(b, k, [new_id[d] for d in sorted(tasks[k]["deps"], key=index.get)])
            for s in succ[k]:
                j = index[s]
                indeg[j] -= 1
                if indeg[j] == 0:
                    heapq.heappush(ready, j)
        if len(new_id) != len(keys):
            stuck = next(k for k in keys if k not in new_id)
            raise ConfigError("trace", str(stuck), "collectives or send/recv pairs that wait for each other (a cycle), "
                                                   "or a collective some member never issues")
        return b.build()

    def _build(self, b: GraphBuilder, k, deps: list[int]) -> int:
        t = self.tasks[k]
        b.iteration = k[1]
        if t["kind"] == "c":
            return b.compute(t["npu"], t["name"], duration=t["dur"], flops=t["flops"], mem_bytes=t["mem"], deps=deps)
        if t["kind"] == "coll":
            return b.collective(t["coll"], t["size"], t["members"], t["cat"], t["name"], deps=deps)
        cat = t["cat"] if t["cat"] in CATEGORIES else "other"
        return b.p2p(t["src"], t["dst"], t["size"], cat, t["name"], deps=deps)


_COMM_TYPE = {"all-reduce": 0, "reduce": 1, "all-gather": 2, "broadcast": 5, "all-to-all": 6, "reduce-scatter": 7}


def graph_to_traces(graph: WorkloadGraph) -> tuple[list[EtTrace], dict[str, list[int]]]:
    """One Chakra trace per NPU and the communicator groups ({"1": [ranks], ...}; all NPUs is group 0,
    no pg_name). Compute nodes carry `num_ops` (FLOPs) and `tensor_size` (bytes) for a roofline, or
    `duration_micros` when the task has a fixed duration (rounded to whole microseconds, as Chakra
    stores them). A p2p task is a send on its source and a receive on its destination, tagged with
    the task id. Each node depends on the nodes, on its own NPU, of the tasks it depends on.

    Parameters
    ----------
    graph : WorkloadGraph
        A workload without io tasks (ConfigError otherwise: traces have no I/O controllers).

    Returns
    -------
    traces : list of EtTrace
        One per NPU, rank order.
    groups : dict of str to list of int
        Communicator groups other than all NPUs, id -> ranks (the comm-group JSON).
    """
    g = graph
    world = tuple(range(g.n_npus))
    gid = {}
    for members in g.groups:
        if members != world and members not in gid:
            gid[members] = len(gid) + 1
    nodes: list[list[EtNode]] = [[] for _ in range(g.n_npus)]
    local: dict = {}  # (task, npu) -> node id on that NPU

    if np.any(g.kind == IO):
        raise ConfigError("workload", "io tasks", "Chakra traces have no I/O-controller transfers; accepted for export: "
                                                  "workloads without weight streaming or input loading")
    for t in range(len(g)):
        members = g.members(t)
        for p in members:
            deps = tuple(local[(d, p)] for d in g.deps(t).tolist() if (d, p) in local)
            nid = len(nodes[p])
            nodes[p].append(_trace_node(g, t, p, nid, deps, members, gid.get(members)))
            local[(t, p)] = nid
        for d in g.deps(t).tolist():
            if not any((d, p) in local for p in members):
                raise ValueError(f"task {t} ({g.name(t)}) depends on task {d}, which involves none of its NPUs: "
                                 "not expressible as per-NPU traces")
    traces = [EtTrace(p, "0.0.4", {"schema": "fabricsim"}, tuple(nodes[p])) for p in range(g.n_npus)]
    return traces, {str(i): list(m) for m, i in gid.items()}


def _trace_node(g: WorkloadGraph, t: int, p: int, nid: int, deps: tuple[int, ...], members: tuple[int, ...],
                group: int | None) -> EtNode:
    """Node `nid` on NPU `p` for task `t` (of NPUs `members`); `group` is the task's communicator
    group id (None: all NPUs)."""
    kind = g.kind[t]
    name = g.name(t)
    if kind == COMPUTE:
        fixed = not np.isnan(g.duration[t])
        attrs = {"is_cpu_op": False, "num_ops": int(round(g.flops[t])), "tensor_size": int(round(g.mem_bytes[t]))}
        return EtNode(nid, name, COMP_NODE, data_deps=deps, attrs=attrs,
                      duration_micros=int(round(g.duration[t] * 1e6)) if fixed else 0)
    if kind == COLLECTIVE:
        coll = COLLECTIVES[g.coll[t]]
        size = g.size[t] / (len(members) if coll == "all-gather" else 1)  # ASTRA-sim: each NPU's share
        attrs = {"is_cpu_op": False, "comm_type": _COMM_TYPE[coll], "comm_size": int(round(size)),
                 "comm_category": CATEGORIES[g.category[t]]}
        if group is not None:
            attrs["pg_name"] = str(group)
        return EtNode(nid, name, COMM_COLL_NODE, data_deps=deps, attrs=attrs)
    send = p == g.npu[t]
    attrs = {"is_cpu_op": False, "comm_size": int(round(g.size[t])), "comm_tag": int(t),
             "comm_category": CATEGORIES[g.category[t]]}
    attrs["comm_dst" if send else "comm_src"] = int(g.peer[t] if send else g.npu[t])
    return EtNode(nid, name, COMM_SEND_NODE if send else COMM_RECV_NODE, data_deps=deps, attrs=attrs)
