"""Chakra execution traces in memory: `EtNode` and `EtTrace` (frozen, plain Python values, so the rest
of fabricsim never touches protobuf), the node types fabricsim uses, and `check_trace`, the graph checks
every trace passes before it is read or written (known node types, unique ids, the peer and size of every
send and recv, dependencies on nodes of the same trace, no cycles). Reading and writing files is `chakra`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..errors import ConfigError
from . import chakra_schema as pb
from .chakra_codec import _NODE_TYPES_ACCEPTED

COMP_NODE = pb.NODE_TYPES["COMP_NODE"]
COMM_SEND_NODE = pb.NODE_TYPES["COMM_SEND_NODE"]
COMM_RECV_NODE = pb.NODE_TYPES["COMM_RECV_NODE"]
COMM_COLL_NODE = pb.NODE_TYPES["COMM_COLL_NODE"]


# what a point-to-point node must carry to be simulated (ASTRA-sim's feeder reads them unchecked)
_P2P_NEEDS = {
    COMM_SEND_NODE: (("comm_dst", "the receiver's rank"), ("comm_size", "the bytes sent")),
    COMM_RECV_NODE: (("comm_src", "the sender's rank"), ("comm_size", "the bytes received")),
}


@dataclass(frozen=True)
class EtNode:
    """One Chakra node, with plain Python values. `attr_kinds` and `io_detail` only steer byte-exact
    re-writing and are ignored by ==.

    Attributes
    ----------
    id : int
        Node id, unique within its trace.
    name : str
        Node name.
    type : int
        NodeType number (`chakra_schema.NODE_TYPES`, e.g. `COMP_NODE`).
    ctrl_deps, data_deps : tuple of int
        Ids of the nodes this one waits for (ASTRA-sim treats both kinds the same way).
    duration_micros : int or float
        Duration, µs as in the file: an int; a float only in traces built in memory (e.g.
        `text_to_traces(duration_unit="ns")`), which `write_et` refuses unless whole.
    attrs : mapping of str to object
        Attribute name -> value (int, float, bool, str, bytes or a tuple of one of these); the first
        one wins if a name repeats, as in ASTRA-sim's feeder.
    inputs, outputs : str or None
        The IOInfo `values` strings (None when the node has no IOInfo).
    start_time_micros : int
        Start time as recorded, µs.
    attr_kinds : mapping of str to str
        Attribute name -> the oneof field it was read from (e.g. "int64_val").
    io_detail : tuple or None
        ((shapes, types) of inputs, (shapes, types) of outputs) as read, None when all are empty.
    """

    id: int
    name: str = ""
    type: int = COMP_NODE
    ctrl_deps: tuple[int, ...] = ()
    data_deps: tuple[int, ...] = ()
    duration_micros: int | float = 0
    attrs: Mapping[str, Any] = field(default_factory=dict)
    inputs: str | None = None
    outputs: str | None = None
    start_time_micros: int = 0
    attr_kinds: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    io_detail: tuple[tuple[str, str], tuple[str, str]] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "ctrl_deps", tuple(self.ctrl_deps))
        object.__setattr__(self, "data_deps", tuple(self.data_deps))
        object.__setattr__(self, "attrs", {k: tuple(v) if isinstance(v, list) else v for k, v in self.attrs.items()})

    @property
    def type_name(self) -> str:
        """`COMP_NODE`, `COMM_COLL_NODE`, ... (or `UNKNOWN_<n>`)."""
        return pb.NODE_TYPE_NAMES.get(self.type, f"UNKNOWN_{self.type}")

    @property
    def deps(self) -> tuple[int, ...]:
        """data_deps then ctrl_deps: every node this one waits for (ASTRA-sim treats both the same way)."""
        return self.data_deps + tuple(d for d in self.ctrl_deps if d not in self.data_deps)

    def _attr(self, name: str):
        return self.attrs.get(name)

    comm_type = property(lambda self: self._attr("comm_type"), doc="CollectiveCommType number, or None.")
    comm_size = property(lambda self: self._attr("comm_size"), doc="Bytes of a collective/p2p, or None.")
    is_cpu_op = property(lambda self: self._attr("is_cpu_op"), doc="CPU (True) or GPU (False) op, or None.")
    comm_src = property(lambda self: self._attr("comm_src"), doc="Sender rank of a recv, or None.")
    comm_dst = property(lambda self: self._attr("comm_dst"), doc="Receiver rank of a send, or None.")
    comm_tag = property(lambda self: self._attr("comm_tag"), doc="Send/recv matching tag, or None.")
    comm_priority = property(lambda self: self._attr("comm_priority"), doc="Scheduling priority, or None.")
    pg_name = property(lambda self: self._attr("pg_name"), doc="Communicator group id string, or None.")
    involved_dim = property(lambda self: self._attr("involved_dim"), doc="Tuple of bools per dimension, or None.")
    num_ops = property(lambda self: self._attr("num_ops"), doc="FLOPs (roofline), or None.")
    tensor_size = property(lambda self: self._attr("tensor_size"), doc="Bytes (roofline, memory nodes), or None.")


@dataclass(frozen=True)
class EtTrace:
    """One NPU's trace: GlobalMetadata, then the nodes in file order.

    Attributes
    ----------
    rank : int
        The NPU, from the file name (`<prefix>.<rank>.et`), 0 when the name has no rank.
    version : str
        GlobalMetadata's `version`.
    metadata_attrs : mapping of str to object
        GlobalMetadata's attributes, name -> value.
    nodes : tuple of EtNode
        The nodes, in file order.
    metadata_attr_kinds : mapping of str to str
        Attribute name -> the oneof field it was read from (re-writing only; ignored by ==).
    """

    rank: int
    version: str = ""
    metadata_attrs: Mapping[str, Any] = field(default_factory=dict)
    nodes: tuple[EtNode, ...] = ()
    metadata_attr_kinds: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "metadata_attrs", dict(self.metadata_attrs))

    @cached_property
    def by_id(self) -> dict[int, EtNode]:
        """Node id -> node (a dict, built once)."""
        return {n.id: n for n in self.nodes}


# ---------------------------------------------------------------------------------------------- checking

def check_trace(trace: EtTrace, where: str = "trace") -> None:
    """Raise ConfigError unless every node has a known type and a unique id, every send and recv its
    peer rank and size, and every data/ctrl dependency names a node of this trace without forming a
    cycle (ASTRA-sim would never finish such a graph).

    Parameters
    ----------
    trace : EtTrace
        The trace.
    where : str
        What to call it in error messages (a file name).
    """
    ids: set[int] = set()
    for n in trace.nodes:
        if n.type not in pb.NODE_TYPE_NAMES:
            raise ConfigError(f"{where}: node {n.id} type", n.type, f"expected {_NODE_TYPES_ACCEPTED}")
        if n.id in ids:
            raise ConfigError(f"{where}: node {n.id} id", n.id, "expected node ids unique within the file")
        ids.add(n.id)
        for attr, what in _P2P_NEEDS.get(n.type, ()):
            value = n.attrs.get(attr)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{where}: node {n.id} {attr}", "missing" if value is None else value,
                                  f"a {n.type_name} needs {attr}, {what} (a whole number >= 0)")
        size = n.attrs.get("comm_size")
        if n.type == COMM_COLL_NODE and size is not None and not _whole(size):  # 1.5 would be read as 1
            raise ConfigError(f"{where}: node {n.id} comm_size", size, "accepted: a whole number of bytes >= 0")
    for n in trace.nodes:
        for fname in ("data_deps", "ctrl_deps"):
            for d in getattr(n, fname):
                if d not in ids:
                    raise ConfigError(f"{where}: node {n.id} {fname}", d,
                                      "expected the id of a node in this file")
    cycle = _find_cycle(trace.nodes)
    if cycle:
        shown = " -> ".join(str(i) for i in cycle[:12]) + (" ..." if len(cycle) > 12 else "")
        raise ConfigError(f"{where}: node {cycle[0]} data_deps/ctrl_deps", shown,
                          "expected an acyclic dependency graph")


def _whole(value: Any) -> bool:
    """Whether an attribute value is a whole number >= 0 (an int, or a float without a fraction)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return value >= 0 and (isinstance(value, int) or float(value).is_integer())


def _find_cycle(nodes: Sequence[EtNode]) -> list[int]:
    """Node ids along one dependency cycle (each waits for the next), or [] if the graph is acyclic."""
    deps = {n.id: n.deps for n in nodes}
    indeg = {i: 0 for i in deps}
    children: dict[int, list[int]] = {i: [] for i in deps}
    for i, ds in deps.items():
        for d in set(ds):
            indeg[i] += 1
            children[d].append(i)
    ready = [i for i, k in indeg.items() if k == 0]
    done = 0
    while ready:
        i = ready.pop()
        done += 1
        for c in children[i]:
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    if done == len(deps):
        return []
    left = {i for i, k in indeg.items() if k > 0}
    cur, seen = next(iter(left)), []
    index: dict[int, int] = {}
    while cur not in index:  # every node left waits on some node left
        index[cur] = len(seen)
        seen.append(cur)
        cur = next(d for d in deps[cur] if d in left)
    return seen[index[cur]:] + [cur]
