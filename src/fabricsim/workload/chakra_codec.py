"""Chakra trace encoding details: attribute values to and from protobuf's oneof fields, and the
varint-length framing of a `.et` stream (gzip allowed)."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from . import chakra_schema as pb

# The oneof field each well-known attribute is written with: what the reference traces use (Chakra's
# microbenchmark generators, text converter and MSCCL converter: comm_type/comm_size int64, is_cpu_op bool,
# comm_src/comm_dst/comm_tag int32) and, for the rest, what Chakra's PyTorch converter writes.
ATTR_KINDS: dict[str, str] = {
    "is_cpu_op": "bool_val",
    "comm_type": "int64_val",
    "comm_size": "int64_val",
    "comm_src": "int32_val",
    "comm_dst": "int32_val",
    "comm_tag": "int32_val",
    "comm_priority": "int32_val",
    "num_ops": "int64_val",
    "tensor_size": "uint64_val",
    "tensor_loc": "uint32_val",
    "pg_name": "string_val",
    "involved_dim": "bool_list",
}

_INT_KINDS = {f"{s}_val" for s in ("int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64",
                                    "sfixed32", "sfixed64")}
_ALL_KINDS = set(pb.ATTR_FIELD_NUMBERS)
_NODE_TYPES_ACCEPTED = "a NodeType number: " + ", ".join(f"{v}={k}" for k, v in pb.NODE_TYPES.items())


# ---------------------------------------------------------------------------------------------- attributes

def _decode_attr(a) -> tuple[Any, str | None]:
    kind = a.WhichOneof("value")
    if kind is None:
        return None, None
    value = getattr(a, kind)
    if kind.endswith("_list"):
        value = tuple(value.values)
    return value, kind


def _infer_kind(value: Any) -> str:
    """The oneof field for a Python value without a known kind."""
    if isinstance(value, bool):
        return "bool_val"
    if isinstance(value, int):
        return "int64_val" if value < 2**63 else "uint64_val"
    if isinstance(value, float):
        return "double_val"
    if isinstance(value, str):
        return "string_val"
    if isinstance(value, (bytes, bytearray)):
        return "bytes_val"
    if isinstance(value, (tuple, list)):
        if all(isinstance(v, bool) for v in value) and value:
            return "bool_list"
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return "int64_list"
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return "double_list"
        if all(isinstance(v, str) for v in value):
            return "string_list"
        if all(isinstance(v, (bytes, bytearray)) for v in value):
            return "bytes_list"
    return ""


def _kind_fits(kind: str, value: Any) -> bool:
    if kind.endswith("_list"):
        return isinstance(value, (tuple, list)) and all(_kind_fits(kind[:-5] + "_val", v) for v in value)
    if kind in _INT_KINDS:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "bool_val":
        return isinstance(value, bool)
    if kind in ("double_val", "float_val"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string_val":
        return isinstance(value, str)
    if kind == "bytes_val":
        return isinstance(value, (bytes, bytearray))
    return False


def _encode_attr(msg, name: str, value: Any, kind: str | None, where: str) -> None:
    """Append AttributeProto `name` = `value` to the repeated field `msg`."""
    a = msg.add()
    a.name = name
    if value is None:
        return
    if not kind or kind not in _ALL_KINDS or not _kind_fits(kind, value):
        kind = ATTR_KINDS.get(name, "")
        if not _kind_fits(kind, value):
            kind = _infer_kind(value)
    if not kind:
        raise ConfigError(f"{where} attr {name}", value,
                          "accepted: bool, int, float, str, bytes or a tuple of one of these")
    try:
        if kind.endswith("_list"):
            getattr(a, kind).values.extend(value)
        else:
            setattr(a, kind, value)
    except (ValueError, TypeError, OverflowError) as e:
        raise ConfigError(f"{where} attr {name}", value,
                          f"accepted: a value that fits protobuf {kind} ({_one_line(e)})") from None


# ---------------------------------------------------------------------------------------------- framing

def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _split_messages(buf: bytes, path: str) -> list[tuple[int, bytes]]:
    """(byte offset of the message body, body) for each length-prefixed message in `buf`."""
    out: list[tuple[int, bytes]] = []
    pos, end = 0, len(buf)
    while pos < end:
        start, length, shift = pos, 0, 0
        while True:
            if pos >= end:
                raise ConfigError(f"{path}: length prefix at byte {start}", buf[start:end].hex(),
                                  "expected a complete varint32 message length (the file is truncated)")
            b = buf[pos]
            pos += 1
            length |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift >= 35:
                raise ConfigError(f"{path}: length prefix at byte {start}", buf[start:pos].hex(),
                                  "expected a varint32 message length of at most 5 bytes (not a Chakra trace)")
        if length > end - pos:
            raise ConfigError(f"{path}: length prefix at byte {start}", length,
                              f"expected at most the {end - pos} bytes left in the file (the file is truncated "
                              "or not a Chakra trace)")
        out.append((pos, buf[pos:pos + length]))
        pos += length
    return out


def _load_bytes(path: str | Path) -> bytes:
    """The trace's bytes (`config.read_input_bytes`: a regular file within the `file_bytes` limit),
    gunzipped when gzipped, the output held to the same limit (a small gzip may expand a thousandfold)."""
    from ..config import read_input_bytes
    from ..limits import check_limit, current_limits

    data = read_input_bytes(path, what="a Chakra .et file")
    if data[:2] == b"\x1f\x8b":
        limit = current_limits().file_bytes
        out, rest = b"", data
        while rest:  # one gzip member after another, as gzip.decompress reads them
            try:
                d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip framing
                out += d.decompress(rest, limit + 1 - len(out))
            except zlib.error as e:
                raise ConfigError(f"{path}: gzip stream", "corrupt",
                                  f"expected a complete gzip file ({_one_line(e)})") from None
            check_limit("file_bytes", len(out), "bytes once decompressed", str(path), f"more than {limit:,} bytes")
            if not d.eof:
                raise ConfigError(f"{path}: gzip stream", "corrupt", "expected a complete gzip file (it ends early)")
            rest = d.unused_data
        data = out
    return data


def _parse(cls, body: bytes, path: str, what: str, offset: int):
    msg = cls()
    try:
        msg.ParseFromString(body)
    except Exception as e:  # noqa: BLE001 -- DecodeError, or whatever else the C extension raises on garbage
        raise ConfigError(f"{path}: {what} at byte {offset}", f"{len(body)} bytes",
                          f"expected a ChakraProtoMsg.{cls.DESCRIPTOR.name} message ({_one_line(e)})") from None
    return msg
