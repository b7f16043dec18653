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

This module reads and writes files; the in-memory trace (`EtNode`, `EtTrace`) and its graph checks
(`check_trace`) are in `chakra_trace`, attribute encoding and framing in `chakra_codec`. Every public
name is importable from here.
"""

from __future__ import annotations

import gzip
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
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
from .chakra_trace import (  # noqa: F401  (the public surface)
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    EtNode,
    EtTrace,
    _find_cycle,
    check_trace,
)

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
        Rank order; byte-identical files are decoded once. With `validate`, a send or recv whose
        peer is not one of the `npus` ranks is a ConfigError naming the file and node (a peer
        that is the rank itself: `check_peers`, for the simulators).
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
        data = _load_bytes(f)
        same = seen.get(data)
        trace = replace(same, rank=r) if same is not None else _decode_trace(data, f, r, validate)
        seen.setdefault(data, trace)
        if validate:
            _check_peers(trace, npus, f, self_ok=True)
        out.append(trace)
    return out


def check_peers(traces: Sequence[EtTrace], prefix: str | Path = "trace") -> None:
    """Refuse a send or recv whose peer is not another NPU of `traces` (a message to the sender
    itself cannot be simulated; one to a rank beyond them would wait forever).

    Parameters
    ----------
    traces : sequence of EtTrace
        One per NPU, in rank order (`read_traces`).
    prefix : str or Path
        The trace prefix, for the file named in errors.

    Returns
    -------
    None
        ConfigError naming the file, the node and its comm_dst / comm_src otherwise.
    """
    for t in traces:
        _check_peers(t, len(traces), str(trace_path(prefix, t.rank)), self_ok=False)


def _check_peers(trace: EtTrace, npus: int, where: str, self_ok: bool) -> None:
    for n in trace.nodes:
        attr = "comm_dst" if n.type == COMM_SEND_NODE else "comm_src" if n.type == COMM_RECV_NODE else None
        if attr is None:
            continue
        peer = n.attrs.get(attr)
        if (not isinstance(peer, int) or isinstance(peer, bool) or not 0 <= peer < npus
                or (peer == trace.rank and not self_ok)):
            but = "" if self_ok else f" except {trace.rank}"
            raise ConfigError(f"{where}: node {n.id} {attr}", peer, f"accepted: the rank of an NPU, 0..{npus - 1}{but}")


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

    The file is written to a temporary file beside it and renamed over it (`outputs.atomic_file`):
    an existing file is replaced whole, never through a symbolic link.

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
    from ..outputs import write_bytes_atomic

    path = Path(path)
    return write_bytes_atomic(path, _et_bytes(trace, path, compress), "path")


def _et_bytes(trace: EtTrace, path: Path, compress: bool) -> bytes:
    data = encode_trace(trace, str(path))
    return gzip.compress(data, mtime=0) if compress else data


def write_traces(prefix: str | Path, traces: Iterable[EtTrace], *, compress: bool = False,
                 groups: dict | None = None, field: str = "prefix") -> list[Path]:
    """Write `traces[r]` to `<prefix>.<r>.et` (and `groups` to `<prefix>.groups.json`) as one set;
    each trace's `rank` must equal its position.

    The set replaces whatever set was under the prefix (`outputs.prefix_set`: `.et`, `.et.gz`
    of any rank, `.groups.json`): every new file is written to a temporary file beside it first;
    once all are written they are renamed into place and the earlier files not rewritten (ranks
    beyond the new count, a stale groups file) are removed. An error leaves the earlier set as
    it was. The command line refuses an existing set without `--force` (`outputs.check_prefix`).

    Parameters
    ----------
    prefix : str or Path
        The trace prefix.
    traces : iterable of EtTrace
        Rank order.
    compress : bool
        gzip each file.
    groups : dict, optional
        Communicator groups (pg_name -> NPUs), written as ASTRA-sim's comm-group JSON.
    field : str
        The option named in errors (`--output`).

    Returns
    -------
    list of Path
        The trace files, in rank order (the groups file is `<prefix>.groups.json`).
    """
    import json

    from ..outputs import prefix_set, replace_files

    paths = []
    with replace_files(field, str(prefix), prefix_set(prefix)) as stage:
        for r, t in enumerate(traces):
            if t.rank != r:
                raise ConfigError(f"{trace_path(prefix, r)}: rank", t.rank, f"expected traces in rank order (rank {r})")
            p = trace_path(prefix, r)
            with stage(p) as fh:
                fh.write(_et_bytes(t, p, compress))
            paths.append(p)
        if groups is not None:
            with stage(f"{prefix}.groups.json") as fh:
                fh.write(json.dumps(groups, indent=1).encode())
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
