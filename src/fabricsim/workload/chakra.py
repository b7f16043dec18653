"""Read and write Chakra execution traces (`.et`), the workload format of ASTRA-sim 2.x.

A trace is one file per NPU, `<prefix>.<rank>.et`: a stream of protobuf messages, each preceded by its byte
length as a varint32, first one `GlobalMetadata`, then `Node`s in any order; the whole stream may be gzipped
(detected by the magic bytes 1f 8b, not by the file name). The schema lives in `chakra_schema`.

In memory a trace is an `EtTrace` of frozen `EtNode`s with plain Python values, so the rest of fabricsim never
touches protobuf. Attribute values are decoded from whichever oneof field is set (every integer flavour ->
int, `*_list` -> tuple, bool, str, bytes, float). The oneof field each attribute used is remembered
(`EtNode.attr_kinds`, not part of equality) so that re-writing a file gives the same bytes; new attributes
get the types Chakra's own generators use (`ATTR_KINDS`).

Every problem with an input file (truncated stream, bytes that are not protobuf, a missing rank file,
duplicate node ids, dependencies on unknown nodes, dependency cycles, unknown node types) is a one-line
`ConfigError` naming the file, the field and what is expected; no protobuf exception leaks out.
"""

from __future__ import annotations

import gzip
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from . import chakra_schema as pb
from .chakra_codec import (  # noqa: F401  (ATTR_KINDS is part of the public surface)
    _ALL_KINDS,
    _INT_KINDS,
    _NODE_TYPES_ACCEPTED,
    ATTR_KINDS,
    _decode_attr,
    _encode_attr,
    _infer_kind,
    _kind_fits,
    _load_bytes,
    _one_line,
    _parse,
    _split_messages,
    _varint,
)

COMP_NODE = pb.NODE_TYPES["COMP_NODE"]
COMM_SEND_NODE = pb.NODE_TYPES["COMM_SEND_NODE"]
COMM_RECV_NODE = pb.NODE_TYPES["COMM_RECV_NODE"]
COMM_COLL_NODE = pb.NODE_TYPES["COMM_COLL_NODE"]


@dataclass(frozen=True)
class EtNode:
    """One Chakra node. `type` is the NodeType number (`chakra_schema.NODE_TYPES`); `duration_micros` is µs
    as in the file (an int; a float only in traces built in memory, e.g. `text_to_traces(duration_unit="ns")`,
    which `write_et` refuses unless whole). `inputs`/`outputs` are the IOInfo `values` strings (None when the
    node has no IOInfo). `attrs` maps attribute name -> Python value (first one wins if a name repeats, as in
    ASTRA-sim's feeder). `attr_kinds` (name -> oneof field such as "int64_val") and `io_detail` ((shapes,
    types) of inputs and outputs) only steer byte-exact re-writing and are ignored by ==."""

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
    """One NPU's trace: `version` and `metadata_attrs` from GlobalMetadata, then the nodes in file order.
    `rank` comes from the file name (`<prefix>.<rank>.et`), 0 when the name has no rank."""

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
        """Node id -> node."""
        return {n.id: n for n in self.nodes}


# ---------------------------------------------------------------------------------------------- reading

_RANK_RE = re.compile(r"\.(\d+)\.et(\.gz)?$")


def _from_proto(msg) -> EtNode:
    attrs: dict[str, Any] = {}
    kinds: dict[str, str] = {}
    for a in msg.attr:
        if a.name in attrs:
            continue
        value, kind = _decode_attr(a)
        attrs[a.name] = value
        if kind:
            kinds[a.name] = kind
    has_in, has_out = msg.HasField("inputs"), msg.HasField("outputs")
    detail = None
    if (has_in and (msg.inputs.shapes or msg.inputs.types)) or (has_out and (msg.outputs.shapes or msg.outputs.types)):
        detail = ((msg.inputs.shapes, msg.inputs.types), (msg.outputs.shapes, msg.outputs.types))
    return EtNode(
        id=msg.id, name=msg.name, type=msg.type, ctrl_deps=tuple(msg.ctrl_deps), data_deps=tuple(msg.data_deps),
        duration_micros=msg.duration_micros, attrs=attrs,
        inputs=msg.inputs.values if has_in else None, outputs=msg.outputs.values if has_out else None,
        start_time_micros=msg.start_time_micros, attr_kinds=kinds, io_detail=detail,
    )


def read_et(path: str | Path, *, rank: int | None = None, validate: bool = True) -> EtTrace:
    """Read one Chakra trace file (plain or gzip). `rank` defaults to the `<r>` of `<prefix>.<r>.et`.
    With `validate` (default) the graph is checked as `check_trace` does.

    Parameters
    ----------
    path : str or Path
        The `.et` file.
    rank : int, optional
        The trace's rank (default: from the file name, 0 if it has none).
    validate : bool
        Check node types, unique ids, dependencies and cycles.

    Returns
    -------
    EtTrace
        A one-line ConfigError naming the file and field on anything unreadable or invalid.
    """
    return _decode_trace(_load_bytes(Path(path)), str(path), rank, validate)


def _decode_trace(data: bytes, p: str, rank: int | None, validate: bool) -> EtTrace:
    messages = _split_messages(data, p)
    if not messages:
        raise ConfigError(f"{p}: GlobalMetadata", "empty file",
                          "expected a length-prefixed GlobalMetadata message, then Node messages")
    offset, body = messages[0]
    meta = _parse(pb.GlobalMetadata, body, p, "GlobalMetadata message", offset)
    mattrs: dict[str, Any] = {}
    mkinds: dict[str, str] = {}
    for a in meta.attr:
        if a.name not in mattrs:
            mattrs[a.name], kind = _decode_attr(a)
            if kind:
                mkinds[a.name] = kind
    nodes = [_from_proto(_parse(pb.Node, body, p, "Node message", offset)) for offset, body in messages[1:]]
    if rank is None:
        m = _RANK_RE.search(p)
        rank = int(m.group(1)) if m else 0
    trace = EtTrace(rank=rank, version=meta.version, metadata_attrs=mattrs, nodes=tuple(nodes),
                    metadata_attr_kinds=mkinds)
    if validate:
        check_trace(trace, p)
    return trace


def trace_path(prefix: str | Path, rank: int) -> Path:
    """`<prefix>.<rank>.et`, the file ASTRA-sim reads for NPU `rank`.

    Parameters
    ----------
    prefix : str or Path
        The trace prefix.
    rank : int
        The NPU.

    Returns
    -------
    Path
    """
    return Path(f"{prefix}.{rank}.et")


def read_traces(prefix: str | Path, npus: int, *, validate: bool = True) -> list[EtTrace]:
    """The traces `<prefix>.<r>.et` for r = 0..npus-1 (a missing file is an error, as in ASTRA-sim).

    Parameters
    ----------
    prefix : str or Path
        The trace prefix.
    npus : int
        NPUs, one file each.
    validate : bool
        Check each trace as `check_trace` does.

    Returns
    -------
    list of EtTrace
        Rank order; byte-identical files are decoded once.
    """
    if isinstance(npus, bool) or not isinstance(npus, int) or npus < 1:
        raise ConfigError("npus", npus, "accepted: a positive integer")
    paths = [f"{prefix}.{r}.et" for r in range(npus)]  # plain strings: pathlib costs 30 us a file
    missing = [r for r, f in enumerate(paths) if not os.path.isfile(f)]
    if missing:
        shown = ", ".join(str(r) for r in missing[:8]) + (" ..." if len(missing) > 8 else "")
        raise ConfigError(f"{paths[missing[0]]}", "missing",
                          f"expected one trace file per NPU, {prefix}.0.et .. {prefix}.{npus - 1}.et "
                          f"(missing ranks: {shown})")
    out = []
    seen: dict[bytes, EtTrace] = {}  # ranks whose files are byte-identical share one decoding
    for r, f in enumerate(paths):
        data = _load_bytes(Path(f)) if f.endswith(".gz") else _read_plain(f)
        same = seen.get(data)
        if same is not None:
            out.append(replace(same, rank=r))
            continue
        trace = _decode_trace(data, f, r, validate)
        seen[data] = trace
        out.append(trace)
    return out


def _read_plain(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return _load_bytes(Path(path))  # the same one-line errors
    if data[:2] == b"\x1f\x8b":
        return _load_bytes(Path(path))
    return data


# ---------------------------------------------------------------------------------------------- checking

def check_trace(trace: EtTrace, where: str = "trace") -> None:
    """Raise ConfigError unless every node has a known type and a unique id, and every data/ctrl dependency
    names a node of this trace without forming a cycle (ASTRA-sim would never finish such a graph).

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


# ---------------------------------------------------------------------------------------------- writing

def _uint(value: Any, what: str, where: str, *, integral_float_ok: bool = False) -> int:
    if isinstance(value, float) and integral_float_ok and math.isfinite(value) and value == int(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
        raise ConfigError(f"{where} {what}", value, "expected a whole number from 0 to 2**64-1"
                          + (" (Chakra stores integer microseconds)" if integral_float_ok else ""))
    return value


def _to_proto(node: EtNode, where: str):
    w = f"{where}: node {node.id}"
    msg = pb.Node()
    msg.id = _uint(node.id, "id", w)
    msg.name = node.name
    msg.type = node.type
    msg.ctrl_deps.extend(_uint(d, "ctrl_deps", w) for d in node.ctrl_deps)
    msg.data_deps.extend(_uint(d, "data_deps", w) for d in node.data_deps)
    msg.start_time_micros = _uint(node.start_time_micros, "start_time_micros", w)
    msg.duration_micros = _uint(node.duration_micros, "duration_micros", w, integral_float_ok=True)
    detail = node.io_detail
    for i, (fname, values) in enumerate((("inputs", node.inputs), ("outputs", node.outputs))):
        shapes, types = detail[i] if detail else ("", "")
        if values is not None or shapes or types:
            io = getattr(msg, fname)
            io.SetInParent()
            io.values, io.shapes, io.types = values or "", shapes, types
    for name, value in node.attrs.items():
        _encode_attr(msg.attr, name, value, node.attr_kinds.get(name), w)
    return msg


def encode_trace(trace: EtTrace, where: str = "trace") -> bytes:
    """The uncompressed bytes of a trace file (checked first with `check_trace`).

    Parameters
    ----------
    trace : EtTrace
        The trace.
    where : str
        What to call it in error messages.

    Returns
    -------
    bytes
        GlobalMetadata then the nodes, each preceded by its length as a varint.
    """
    check_trace(trace, where)
    meta = pb.GlobalMetadata()
    meta.version = trace.version
    for name, value in trace.metadata_attrs.items():
        _encode_attr(meta.attr, name, value, trace.metadata_attr_kinds.get(name), f"{where}: GlobalMetadata")
    parts = []
    for msg in [meta] + [_to_proto(n, where) for n in trace.nodes]:
        body = msg.SerializeToString()
        parts.append(_varint(len(body)))
        parts.append(body)
    return b"".join(parts)


def write_et(path: str | Path, trace: EtTrace, *, compress: bool = False) -> Path:
    """Write one trace file ASTRA-sim can read (gzip-compressed if `compress`); returns the path.

    Parameters
    ----------
    path : str or Path
        The file (parent folders are made).
    trace : EtTrace
        The trace.
    compress : bool
        gzip the stream (reproducibly: no timestamp).

    Returns
    -------
    Path
    """
    path = Path(path)
    data = encode_trace(trace, str(path))
    if compress:
        data = gzip.compress(data, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def write_traces(prefix: str | Path, traces: Iterable[EtTrace], *, compress: bool = False) -> list[Path]:
    """Write `traces[r]` to `<prefix>.<r>.et`; each trace's `rank` must equal its position.

    Parameters
    ----------
    prefix : str or Path
        The trace prefix.
    traces : iterable of EtTrace
        Rank order.
    compress : bool
        gzip each file.

    Returns
    -------
    list of Path
    """
    paths = []
    for r, t in enumerate(traces):
        if t.rank != r:
            raise ConfigError(f"{trace_path(prefix, r)}: rank", t.rank, f"expected traces in rank order (rank {r})")
        paths.append(write_et(trace_path(prefix, r), t, compress=compress))
    return paths


COMM_TYPE_OF = {"all-reduce": 0, "all-gather": 2, "all-to-all": 6, "reduce-scatter": 7}


def collective_traces(collective: str, size: int, npus: int) -> list[EtTrace]:
    """One COMM_COLL_NODE per NPU (ASTRA-sim's microbenchmark shape): `size` is ASTRA-sim's
    comm_size (per-NPU buffer; for all-gather the per-NPU contribution).

    Parameters
    ----------
    collective : str
        "all-reduce", "all-gather", "all-to-all" or "reduce-scatter".
    size : int
        comm_size, bytes.
    npus : int
        NPUs, one trace each.

    Returns
    -------
    list of EtTrace
        Rank order, ready for `write_traces`.
    """
    if collective not in COMM_TYPE_OF:
        raise ConfigError("collective", collective, f"accepted: {', '.join(COMM_TYPE_OF)}")
    name = f"{collective.replace('-', '_')}_{npus}npus_{int(size)}B"
    node = EtNode(0, name, COMM_COLL_NODE, attrs={"is_cpu_op": False, "comm_type": COMM_TYPE_OF[collective],
                                                  "comm_size": int(size)},
                  attr_kinds={"is_cpu_op": "bool_val", "comm_type": "int64_val", "comm_size": "int64_val"})
    return [EtTrace(r, "0.0.4", {}, (node,)) for r in range(npus)]
