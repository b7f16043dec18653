"""Workloads: Chakra execution traces (`.et`, ASTRA-sim 2.x) and legacy ASTRA-sim 1.0 text workloads.

    from fabricsim.workload import read_traces, read_astra_text, text_to_traces, write_traces
    traces = read_traces("workloads/all_reduce_8_1048576/x", 8)
    wl = read_astra_text("Resnet50_DataParallel.txt")
    write_traces("out/r50", text_to_traces(wl, npus=8))
"""

from .astra_text import (
    COMM_TYPES,
    CONVERTIBLE,
    PARALLELISMS,
    TextComm,
    TextLayer,
    TextWorkload,
    parse_astra_text,
    read_astra_text,
    text_to_traces,
)
from .chakra import (
    ATTR_KINDS,
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    EtNode,
    EtTrace,
    check_trace,
    collective_traces,
    encode_trace,
    read_et,
    read_traces,
    trace_path,
    write_et,
    write_traces,
)
from .chakra_schema import (
    COLLECTIVE_COMM_TYPE_NAMES,
    COLLECTIVE_COMM_TYPES,
    NODE_TYPE_NAMES,
    NODE_TYPES,
)

__all__ = [
    "ATTR_KINDS",
    "COLLECTIVE_COMM_TYPES",
    "COLLECTIVE_COMM_TYPE_NAMES",
    "COMM_COLL_NODE",
    "COMM_RECV_NODE",
    "COMM_SEND_NODE",
    "COMM_TYPES",
    "COMP_NODE",
    "CONVERTIBLE",
    "NODE_TYPES",
    "NODE_TYPE_NAMES",
    "PARALLELISMS",
    "EtNode",
    "EtTrace",
    "TextComm",
    "TextLayer",
    "TextWorkload",
    "check_trace",
    "collective_traces",
    "encode_trace",
    "parse_astra_text",
    "read_astra_text",
    "read_et",
    "read_traces",
    "text_to_traces",
    "trace_path",
    "write_et",
    "write_traces",
]
