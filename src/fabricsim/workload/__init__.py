"""Workloads: Chakra execution traces (`.et`, ASTRA-sim 2.x) and legacy ASTRA-sim 1.0 text workloads.

    from fabricsim.workload import read_traces, read_astra_text, text_to_traces, write_traces
    traces = read_traces("workloads/all_reduce_8_1048576/x", 8)
    wl = read_astra_text("Resnet50_DataParallel.txt")
    write_traces("out/r50", text_to_traces(wl, npus=8))
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

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
    "CRITEO_KAGGLE_ROWS",
    "DTYPES",
    "MODELS",
    "NODE_TYPES",
    "NODE_TYPE_NAMES",
    "PARALLELISMS",
    "EtNode",
    "EtTrace",
    "Layer",
    "Model",
    "TextComm",
    "TextLayer",
    "TextWorkload",
    "check_trace",
    "collective_traces",
    "dlrm",
    "encode_trace",
    "get_model",
    "gnmt",
    "gpt3_175b",
    "megatron_mp_allreduce_bytes",
    "parse_astra_text",
    "read_astra_text",
    "read_et",
    "read_traces",
    "resnet50",
    "resnet152",
    "text_to_traces",
    "trace_path",
    "transformer",
    "transformer_1t",
    "transformer_17b",
    "write_et",
    "write_traces",
    "zero2_bytes",
]

# lazy (PEP 562): `fabricsim astra` reads traces (`.chakra`) and needs neither the model zoo nor the text
# workloads; each name is imported on first use
__getattr__, __dir__ = lazy_exports(__name__, {
    "COMM_TYPES": ".astra_text", "CONVERTIBLE": ".astra_text", "PARALLELISMS": ".astra_text",
    "TextComm": ".astra_text", "TextLayer": ".astra_text", "TextWorkload": ".astra_text",
    "parse_astra_text": ".astra_text", "read_astra_text": ".astra_text", "text_to_traces": ".astra_text",
    "ATTR_KINDS": ".chakra", "COMM_COLL_NODE": ".chakra", "COMM_RECV_NODE": ".chakra", "COMM_SEND_NODE": ".chakra",
    "COMP_NODE": ".chakra", "EtNode": ".chakra", "EtTrace": ".chakra", "check_trace": ".chakra",
    "collective_traces": ".chakra", "encode_trace": ".chakra", "read_et": ".chakra", "read_traces": ".chakra",
    "trace_path": ".chakra", "write_et": ".chakra", "write_traces": ".chakra",
    "COLLECTIVE_COMM_TYPE_NAMES": ".chakra_schema", "COLLECTIVE_COMM_TYPES": ".chakra_schema",
    "NODE_TYPE_NAMES": ".chakra_schema", "NODE_TYPES": ".chakra_schema", "CRITEO_KAGGLE_ROWS": ".models",
    "DTYPES": ".models", "MODELS": ".models", "Layer": ".models", "Model": ".models", "dlrm": ".models",
    "get_model": ".models", "gnmt": ".models", "gpt3_175b": ".models", "megatron_mp_allreduce_bytes": ".models",
    "resnet50": ".models", "resnet152": ".models", "transformer": ".models", "transformer_1t": ".models",
    "transformer_17b": ".models", "zero2_bytes": ".models",
})

if TYPE_CHECKING:  # what the names are, for type checkers and readers
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
    from .models import (
        CRITEO_KAGGLE_ROWS,
        DTYPES,
        MODELS,
        Layer,
        Model,
        dlrm,
        get_model,
        gnmt,
        gpt3_175b,
        megatron_mp_allreduce_bytes,
        resnet50,
        resnet152,
        transformer,
        transformer_1t,
        transformer_17b,
        zero2_bytes,
    )
