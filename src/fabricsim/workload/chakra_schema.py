"""The Chakra execution-trace schema (`et_def.proto`, package `ChakraProtoMsg`, proto3), built at import time.

The schema is written here from the field table of the Chakra specification and registered in a private
descriptor pool, so fabricsim needs neither protoc nor a generated `_pb2` module (generated modules pin the
protobuf runtime version, astra-sim#214) and does not clash with a real `et_def_pb2` imported elsewhere.
Field numbers and types match Chakra exactly, so messages serialise to the same bytes.

Exports the message classes `GlobalMetadata`, `Node`, `IOInfo`, `Tensor`, `AttributeProto`, the list
messages (`Int64List`, ...), and the enum values as plain int dicts `NODE_TYPES` / `COLLECTIVE_COMM_TYPES`.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "ChakraProtoMsg"

_F = descriptor_pb2.FieldDescriptorProto

# NodeType and CollectiveCommType (names and numbers as in et_def.proto).
NODE_TYPES: dict[str, int] = {
    "INVALID_NODE": 0,
    "METADATA_NODE": 1,
    "MEM_LOAD_NODE": 2,
    "MEM_STORE_NODE": 3,
    "COMP_NODE": 4,
    "COMM_SEND_NODE": 5,
    "COMM_RECV_NODE": 6,
    "COMM_COLL_NODE": 7,
}
COLLECTIVE_COMM_TYPES: dict[str, int] = {
    "ALL_REDUCE": 0,
    "REDUCE": 1,
    "ALL_GATHER": 2,
    "GATHER": 3,
    "SCATTER": 4,
    "BROADCAST": 5,
    "ALL_TO_ALL": 6,
    "REDUCE_SCATTER": 7,
    "REDUCE_SCATTER_BLOCK": 8,
    "BARRIER": 9,
}
NODE_TYPE_NAMES: dict[int, str] = {v: k for k, v in NODE_TYPES.items()}
COLLECTIVE_COMM_TYPE_NAMES: dict[int, str] = {v: k for k, v in COLLECTIVE_COMM_TYPES.items()}

# The scalar types of AttributeProto's oneof, in field-number order: (suffix, FieldDescriptorProto type,
# list-message name). Field numbers: <suffix>_val = 3 + 2*i, <suffix>_list = 4 + 2*i.
ATTR_SCALARS: tuple[tuple[str, int, str], ...] = (
    ("double", _F.TYPE_DOUBLE, "DoubleList"),
    ("float", _F.TYPE_FLOAT, "FloatList"),
    ("int32", _F.TYPE_INT32, "Int32List"),
    ("int64", _F.TYPE_INT64, "Int64List"),
    ("uint32", _F.TYPE_UINT32, "Uint32List"),
    ("uint64", _F.TYPE_UINT64, "Uint64List"),
    ("sint32", _F.TYPE_SINT32, "Sint32List"),
    ("sint64", _F.TYPE_SINT64, "Sint64List"),
    ("fixed32", _F.TYPE_FIXED32, "Fixed32List"),
    ("fixed64", _F.TYPE_FIXED64, "Fixed64List"),
    ("sfixed32", _F.TYPE_SFIXED32, "Sfixed32List"),
    ("sfixed64", _F.TYPE_SFIXED64, "Sfixed64List"),
    ("bool", _F.TYPE_BOOL, "BoolList"),
    ("string", _F.TYPE_STRING, "StringList"),
    ("bytes", _F.TYPE_BYTES, "BytesList"),
)
ATTR_FIELD_NUMBERS: dict[str, int] = {}
for _i, (_suffix, _t, _l) in enumerate(ATTR_SCALARS):
    ATTR_FIELD_NUMBERS[f"{_suffix}_val"] = 3 + 2 * _i
    ATTR_FIELD_NUMBERS[f"{_suffix}_list"] = 4 + 2 * _i


def _field(msg, name: str, number: int, ftype: int, *, repeated: bool = False, type_name: str | None = None,
           oneof_index: int | None = None) -> None:
    f = msg.field.add()
    f.name = name
    f.number = number
    f.type = ftype
    f.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if type_name is not None:
        f.type_name = f".{PACKAGE}.{type_name}"
    if oneof_index is not None:
        f.oneof_index = oneof_index


def _enum(fdp, name: str, values: dict[str, int]) -> None:
    e = fdp.enum_type.add()
    e.name = name
    for vname, num in values.items():
        v = e.value.add()
        v.name = vname
        v.number = num


def _build_file() -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto of et_def.proto, message by message as in the Chakra field table."""
    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.name = "fabricsim/chakra/et_def.proto"
    fdp.package = PACKAGE
    fdp.syntax = "proto3"

    # AttributeProto: name, doc_string, oneof value { <t>_val, <t>_list ... }
    attr = fdp.message_type.add()
    attr.name = "AttributeProto"
    attr.oneof_decl.add().name = "value"
    _field(attr, "name", 1, _F.TYPE_STRING)
    _field(attr, "doc_string", 2, _F.TYPE_STRING)
    for suffix, ftype, list_name in ATTR_SCALARS:
        _field(attr, f"{suffix}_val", ATTR_FIELD_NUMBERS[f"{suffix}_val"], ftype, oneof_index=0)
        _field(attr, f"{suffix}_list", ATTR_FIELD_NUMBERS[f"{suffix}_list"], _F.TYPE_MESSAGE,
               type_name=list_name, oneof_index=0)

    # XxxList { repeated <t> values = 1; }
    for _suffix, ftype, list_name in ATTR_SCALARS:
        m = fdp.message_type.add()
        m.name = list_name
        _field(m, "values", 1, ftype, repeated=True)

    meta = fdp.message_type.add()
    meta.name = "GlobalMetadata"
    _field(meta, "version", 1, _F.TYPE_STRING)
    _field(meta, "attr", 2, _F.TYPE_MESSAGE, repeated=True, type_name="AttributeProto")

    node = fdp.message_type.add()
    node.name = "Node"
    _field(node, "id", 1, _F.TYPE_UINT64)
    _field(node, "name", 2, _F.TYPE_STRING)
    _field(node, "type", 3, _F.TYPE_ENUM, type_name="NodeType")
    _field(node, "ctrl_deps", 4, _F.TYPE_UINT64, repeated=True)
    _field(node, "data_deps", 5, _F.TYPE_UINT64, repeated=True)
    _field(node, "start_time_micros", 6, _F.TYPE_UINT64)
    _field(node, "duration_micros", 7, _F.TYPE_UINT64)
    _field(node, "inputs", 8, _F.TYPE_MESSAGE, type_name="IOInfo")
    _field(node, "outputs", 9, _F.TYPE_MESSAGE, type_name="IOInfo")
    _field(node, "attr", 10, _F.TYPE_MESSAGE, repeated=True, type_name="AttributeProto")

    io = fdp.message_type.add()
    io.name = "IOInfo"
    _field(io, "values", 1, _F.TYPE_STRING)
    _field(io, "shapes", 2, _F.TYPE_STRING)
    _field(io, "types", 3, _F.TYPE_STRING)

    tensor = fdp.message_type.add()
    tensor.name = "Tensor"
    for i, fname in enumerate(("tensor_id", "storage_id", "offset", "num_elem", "elem_bytes"), start=1):
        _field(tensor, fname, i, _F.TYPE_UINT64)
    _field(tensor, "device", 6, _F.TYPE_STRING)

    _enum(fdp, "NodeType", NODE_TYPES)
    _enum(fdp, "CollectiveCommType", COLLECTIVE_COMM_TYPES)
    return fdp


FILE_DESCRIPTOR_PROTO = _build_file()
POOL = descriptor_pool.DescriptorPool()
FILE_DESCRIPTOR = POOL.AddSerializedFile(
    FILE_DESCRIPTOR_PROTO.SerializeToString())


def _message_class(name: str):
    desc = POOL.FindMessageTypeByName(f"{PACKAGE}.{name}")
    get = getattr(message_factory, "GetMessageClass", None)
    if get is not None:  # protobuf >= 4.22
        return get(desc)
    return message_factory.MessageFactory(POOL).GetPrototype(desc)  # protobuf 4.21


AttributeProto = _message_class("AttributeProto")
GlobalMetadata = _message_class("GlobalMetadata")
Node = _message_class("Node")
IOInfo = _message_class("IOInfo")
Tensor = _message_class("Tensor")
DoubleList = _message_class("DoubleList")
FloatList = _message_class("FloatList")
Int32List = _message_class("Int32List")
Int64List = _message_class("Int64List")
Uint32List = _message_class("Uint32List")
Uint64List = _message_class("Uint64List")
Sint32List = _message_class("Sint32List")
Sint64List = _message_class("Sint64List")
Fixed32List = _message_class("Fixed32List")
Fixed64List = _message_class("Fixed64List")
Sfixed32List = _message_class("Sfixed32List")
Sfixed64List = _message_class("Sfixed64List")
BoolList = _message_class("BoolList")
StringList = _message_class("StringList")
BytesList = _message_class("BytesList")

NodeType = POOL.FindEnumTypeByName(f"{PACKAGE}.NodeType")
CollectiveCommType = POOL.FindEnumTypeByName(f"{PACKAGE}.CollectiveCommType")

__all__ = [
    "ATTR_FIELD_NUMBERS",
    "ATTR_SCALARS",
    "COLLECTIVE_COMM_TYPES",
    "COLLECTIVE_COMM_TYPE_NAMES",
    "NODE_TYPES",
    "NODE_TYPE_NAMES",
    "PACKAGE",
    "AttributeProto",
    "BoolList",
    "BytesList",
    "CollectiveCommType",
    "DoubleList",
    "Fixed32List",
    "Fixed64List",
    "FloatList",
    "GlobalMetadata",
    "IOInfo",
    "Int32List",
    "Int64List",
    "Node",
    "NodeType",
    "Sfixed32List",
    "Sfixed64List",
    "Sint32List",
    "Sint64List",
    "StringList",
    "Tensor",
    "Uint32List",
    "Uint64List",
]
