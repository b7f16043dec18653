"""Chakra execution traces (.et) and legacy ASTRA-sim 1.0 text workloads: every reference file, round trips,
the text converter against Chakra's own output, and malformed inputs.

Expected values are read off the reference files in reference/astra-sim and the spec (astra-sim.md
sections 2.4-2.6, 2.9): e.g. the ResNet-50 DATA conversion has 215 nodes per NPU and 54 all-reduces."""

from __future__ import annotations

import gzip
import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import ASTRA_REFERENCE as REF

from fabricsim.errors import ConfigError
from fabricsim.workload import (
    COMM_COLL_NODE,
    COMM_RECV_NODE,
    COMM_SEND_NODE,
    COMP_NODE,
    EtNode,
    EtTrace,
    TextComm,
    check_trace,
    encode_trace,
    parse_astra_text,
    read_astra_text,
    read_et,
    read_traces,
    text_to_traces,
    trace_path,
    write_et,
    write_traces,
)
from fabricsim.workload import chakra_schema as pb


ALL_ET = sorted(REF.glob("**/*.et"))
CUSTOM = REF / "examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce"
COLL_TYPES = {"all_reduce": 0, "all_gather": 2, "all_to_all": 6, "reduce_scatter": 7}


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _raw_write(path: Path, nodes: list, meta=None) -> Path:
    """Write protobuf messages with Chakra framing, bypassing fabricsim's checks (for malformed files)."""
    msgs = [meta if meta is not None else pb.GlobalMetadata(version="0.0.4")] + nodes
    path.write_bytes(b"".join(_varint(len(m.SerializeToString())) + m.SerializeToString() for m in msgs))
    return path


def _assert_one_line_error(exc: pytest.ExceptionInfo, *needles: str) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    for needle in needles:
        assert needle in msg, (needle, msg)
    return msg


# ------------------------------------------------------------------------------- schema


def test_schema_field_numbers_match_spec():
    node = pb.Node.DESCRIPTOR.fields_by_name
    assert {n: f.number for n, f in node.items()} == {
        "id": 1, "name": 2, "type": 3, "ctrl_deps": 4, "data_deps": 5, "start_time_micros": 6,
        "duration_micros": 7, "inputs": 8, "outputs": 9, "attr": 10}
    assert {n: f.number for n, f in pb.GlobalMetadata.DESCRIPTOR.fields_by_name.items()} == {"version": 1, "attr": 2}
    assert {n: f.number for n, f in pb.IOInfo.DESCRIPTOR.fields_by_name.items()} == {"values": 1, "shapes": 2,
                                                                                      "types": 3}
    assert [f.name for f in pb.Tensor.DESCRIPTOR.fields] == ["tensor_id", "storage_id", "offset", "num_elem",
                                                              "elem_bytes", "device"]
    attr = pb.AttributeProto.DESCRIPTOR
    oneof = [f.name for f in attr.oneofs_by_name["value"].fields]
    assert len(oneof) == 30
    assert {f.name: f.number for f in attr.fields if f.name in ("double_val", "int64_val", "uint64_val",
                                                                 "bool_val", "bool_list", "string_val",
                                                                 "bytes_list")} == {
        "double_val": 3, "int64_val": 9, "uint64_val": 13, "bool_val": 27, "bool_list": 28, "string_val": 29,
        "bytes_list": 32}
    assert pb.Int64List.DESCRIPTOR.fields_by_name["values"].number == 1
    assert {v.name: v.number for v in pb.NodeType.values}["COMM_COLL_NODE"] == 7
    assert {v.name: v.number for v in pb.CollectiveCommType.values}["BARRIER"] == 9
    assert pb.Node.DESCRIPTOR.full_name == "ChakraProtoMsg.Node"


# ------------------------------------------------------------------------------- every reference file


def test_every_reference_trace_reads_and_reencodes_byte_for_byte():
    assert len(ALL_ET) == 872
    for path in ALL_ET:
        trace = read_et(path)
        assert trace.rank == int(path.name.split(".")[-2])
        assert encode_trace(trace) == path.read_bytes(), path


@pytest.mark.parametrize("folder", sorted(p.name for p in (REF / "workloads").iterdir()))
def test_generated_workloads_hold_one_collective_per_rank(folder):
    coll, npus, size = re.fullmatch(r"(\w+)_(\d+)_(\d+)", folder).groups()
    traces = read_traces(REF / "workloads" / folder / "x", int(npus))
    assert [t.rank for t in traces] == list(range(int(npus)))
    for t in traces:
        assert t.version == "0.0.4"
        (node,) = t.nodes
        assert node.type == COMM_COLL_NODE and node.name == coll
        assert node.comm_type == COLL_TYPES[coll] and node.comm_size == int(size)
        assert node.is_cpu_op is False and node.data_deps == () and node.duration_micros == 0
        assert node.attr_kinds == {"is_cpu_op": "bool_val", "comm_type": "int64_val", "comm_size": "int64_val"}


def test_all_reduce_16_1048576_as_stated_in_readme():
    traces = read_traces(REF / "workloads/all_reduce_16_1048576/x", 16)
    assert len(traces) == 16
    assert all(len(t.nodes) == 1 and t.nodes[0].type == COMM_COLL_NODE and t.nodes[0].comm_type == 0
               and t.nodes[0].comm_size == 1048576 for t in traces)


def test_shipped_microbenchmarks():
    folders = sorted((REF / "examples/workload/microbenchmarks").glob("*/*npus_1MB"))
    assert len(folders) == 12
    for folder in folders:
        coll, npus = folder.parent.name, int(folder.name.split("npus")[0])
        for t in read_traces(folder / coll, npus):
            (node,) = t.nodes
            assert node.name == f"{coll}_{npus}npus_1MB" and node.id == t.rank  # generator numbers by rank
            assert (node.comm_type, node.comm_size, node.is_cpu_op) == (COLL_TYPES[coll], 1 << 20, False)


def test_custom_ring_all_reduce_traces():
    traces = read_traces(CUSTOM, 8)
    xml = (CUSTOM.parent / "custom_allreduce.xml").read_text()
    for r, t in enumerate(traces):
        assert t.metadata_attrs["schema"] == "1.0.2-chakra.0.0.4"
        assert t.metadata_attrs["collective"] == "allreduce"
        assert t.metadata_attrs["input_file"].startswith('<algo name="allreduce_ring_1channelsperring"')
        assert t.metadata_attrs["input_file"].strip() == xml.strip()
        assert len(t.nodes) == 35
        kinds = Counter(n.type for n in t.nodes)
        assert kinds == {COMM_SEND_NODE: 14, COMM_RECV_NODE: 14, COMP_NODE: 7}
        for n in t.nodes:
            if n.type == COMM_SEND_NODE:
                assert (n.comm_size, n.comm_dst, n.comm_tag, n.comm_type) == (131072, (r + 1) % 8, 0, 5)
                assert n.attr_kinds["comm_dst"] == "int32_val"
            elif n.type == COMM_RECV_NODE:
                assert (n.comm_size, n.comm_src, n.comm_tag, n.comm_type) == (131072, (r - 1) % 8, 0, 6)
            else:
                assert n.duration_micros == 7 and n.comm_size is None
        # one chain: every node waits for the one before it
        assert [n.data_deps for n in t.nodes] == [()] + [(i,) for i in range(34)]


def _text_compute_sum(path: Path) -> tuple[int, int, int]:
    wl = read_astra_text(path)
    return (sum(L.fwd_compute_ns for L in wl.layers), sum(L.ig_compute_ns for L in wl.layers),
            sum(L.wg_compute_ns for L in wl.layers))


def test_resnet50_reference_conversion_facts():
    traces = read_traces(REF / "legacy/resnet50/r50", 8)
    text = (REF / "legacy/Resnet50_DataParallel.txt").read_text()
    wl = read_astra_text(REF / "legacy/Resnet50_DataParallel.txt")
    fwd, ig, wg = _text_compute_sum(REF / "legacy/Resnet50_DataParallel.txt")
    assert (fwd, ig, wg) == (380038, 377463, 337813)
    for r, t in enumerate(traces):
        assert t.version == "" and t.metadata_attrs == {"schema": "1.0.2-chakra.0.0.4", "input_file": text}
        assert len(t.nodes) == 215
        assert [n.id for n in t.nodes] == list(range(215 * r, 215 * (r + 1)))  # one id counter across NPUs
        colls = [n for n in t.nodes if n.type == COMM_COLL_NODE]
        assert len(colls) == 54 and {n.comm_type for n in colls} == {0}
        assert sorted(n.comm_size for n in colls) == sorted(L.wg_comm.bytes for L in wl.layers)
        assert all(n.is_cpu_op is None and n.duration_micros == 0 for n in colls)
        comps = [n for n in t.nodes if n.type == COMP_NODE]
        assert len(comps) == 161
        # the converter emits no input-gradient node for the first layer (conv1, 12864)
        assert sum(n.duration_micros for n in comps) == fwd + ig + wg - wl.layers[0].ig_compute_ns == 1_082_450
        assert "COMP_NODE_conv1_BWD_IG" not in {n.name for n in t.nodes}


def test_micro_all_reduce_reference_conversion_facts():
    for r, t in enumerate(read_traces(REF / "legacy/micro/mar", 8)):
        (node,) = t.nodes
        assert node.id == r and node.name == "COMM_COLL_NODE_conv1_ALLREDUCE"
        assert (node.type, node.comm_type, node.comm_size, node.data_deps) == (COMM_COLL_NODE, 0, 1048576, ())
        assert t.metadata_attrs["input_file"] == "MICRO\n1\nconv1 -1 5 NONE 0 5 NONE 0 5  ALLREDUCE 1048576 5\n"


# ------------------------------------------------------------------------------- text converter vs Chakra's


def _structure(trace: EtTrace):
    """The graph up to id renumbering: per node (type, name, comm_type, comm_size, duration, deps as
    positions in file order)."""
    pos = {n.id: i for i, n in enumerate(trace.nodes)}
    return [(n.type, n.name, n.comm_type, n.comm_size, n.duration_micros, tuple(pos[d] for d in n.data_deps),
             tuple(pos[d] for d in n.ctrl_deps)) for n in trace.nodes]


@pytest.mark.parametrize("txt,prefix", [("Resnet50_DataParallel.txt", "resnet50/r50"),
                                        ("microAllReduce.txt", "micro/mar")])
def test_text_converter_reproduces_chakra_output(txt, prefix, tmp_path):
    ref = read_traces(REF / "legacy" / prefix, 8)
    mine = text_to_traces(read_astra_text(REF / "legacy" / txt), 8)
    # same multiset of (type, comm_type, comm_size, duration) and the same dependency structure
    for m, r in zip(mine, ref):
        key = lambda n: (n.type, n.comm_type or 0, n.comm_size or 0, n.duration_micros)
        assert Counter(map(key, m.nodes)) == Counter(map(key, r.nodes))
        assert _structure(m) == _structure(r)
    # in fact identical, ids and metadata included, down to the bytes ASTRA-sim reads
    assert mine == ref
    paths = write_traces(tmp_path / "conv", mine)
    for r, p in enumerate(paths):
        assert p.read_bytes() == trace_path(REF / "legacy" / prefix, r).read_bytes()


def test_resnet50_graph_shape():
    """Per pass: FWD chain; backward per layer (reverse) WG -> ALLREDUCE and WG -> IG -> next layer's WG."""
    wl = read_astra_text(REF / "legacy/Resnet50_DataParallel.txt")
    (t,) = text_to_traces(wl, 1)
    by_name = {n.name: n for n in t.nodes}
    names = [L.name for L in wl.layers]
    fwd = [by_name[f"COMP_NODE_{x}_FWD"] for x in names]
    assert fwd[0].data_deps == () and all(f.data_deps == (fwd[i].id,) for i, f in enumerate(fwd[1:]))
    prev = fwd[-1]
    for i in reversed(range(len(names))):
        wg = by_name[f"COMP_NODE_{names[i]}_BWD_WG"]
        ar = by_name[f"COMM_COLL_NODE_{names[i]}_ALLREDUCE"]
        assert wg.data_deps == (prev.id,) and ar.data_deps == (wg.id,)
        if i:
            prev = by_name[f"COMP_NODE_{names[i]}_BWD_IG"]
            assert prev.data_deps == (wg.id,)
    # nothing waits for an all-reduce within a pass: they are the leaves of the graph
    waited = {d for n in t.nodes for d in n.data_deps}
    assert {n.id for n in t.nodes if n.id not in waited} == {n.id for n in t.nodes if n.type == COMM_COLL_NODE}


def test_text_converter_passes_and_units(tmp_path):
    wl = read_astra_text(REF / "legacy/Resnet50_DataParallel.txt")
    two = text_to_traces(wl, 2, passes=2)
    assert len(two[0].nodes) == 430 and two[1].nodes[0].id == 430
    by_name: dict[str, list[EtNode]] = {}
    for n in two[0].nodes:
        by_name.setdefault(n.name, []).append(n)
    fwd2 = by_name["COMP_NODE_layer_64_1_conv1_FWD"][1]
    ar1 = by_name["COMM_COLL_NODE_layer_64_1_conv1_ALLREDUCE"][0]
    assert fwd2.data_deps == (by_name["COMP_NODE_layer_64_1_conv4_FWD"][1].id, ar1.id)
    assert by_name["COMP_NODE_conv1_FWD"][1].data_deps == (by_name["COMM_COLL_NODE_conv1_ALLREDUCE"][0].id,)
    check_trace(two[1])

    local = text_to_traces(wl, 2, global_ids=False)
    assert [n.id for n in local[1].nodes] == list(range(215))

    ns = text_to_traces(wl, 1, duration_unit="ns")[0]
    assert ns.nodes[0].duration_micros == pytest.approx(13.003)
    assert sum(n.duration_micros for n in ns.nodes) == pytest.approx(1082.450)
    with pytest.raises(ConfigError) as e:
        write_et(tmp_path / "ns.0.et", ns)
    _assert_one_line_error(e, "ns.0.et", "node 0 duration_micros", "integer microseconds")


def _tiny(parallelism: str, extra: str = "") -> str:
    return (f"{parallelism}{extra}\n3\n"
            "a -1 10 ALLGATHER 100 11 ALLREDUCE 101 12 ALLREDUCE 102 1\n"
            "b -1 20 NONE 0 21 REDUCESCATTER 201 22 NONE 0 2\n"
            "c -1 30 ALLTOALL 300 31 NONE 0 32 ALLREDUCE 302 3\n")


@pytest.mark.parametrize("parallelism,per_pass", [("MICRO", 3), ("DATA", 11), ("MODEL", 14),
                                                  ("HYBRID_DATA_MODEL", 17), ("HYBRID_MODEL_DATA", 17)])
def test_text_converter_other_parallelisms(parallelism, per_pass):
    wl = parse_astra_text(_tiny(parallelism))
    for passes in (1, 2):
        (t,) = text_to_traces(wl, 1, passes=passes)
        assert len(t.nodes) == per_pass * passes
        check_trace(t)
        assert all(n.type in (COMP_NODE, COMM_COLL_NODE) for n in t.nodes)
    names = [n.name for n in text_to_traces(wl, 1)[0].nodes]
    if parallelism == "MODEL":
        assert names[:2] == ["COMP_NODE_a_FWD", "COMM_COLL_NODE_a_ALLGATHER"]
        assert "COMM_COLL_NODE_a_ALLREDUCE" not in names  # layer 0 has no IG collective, MODEL no WG ones
        assert names[-1] == "COMP_NODE_a_BWD_WG"
    if parallelism == "HYBRID_DATA_MODEL":
        assert "COMM_COLL_NODE_b_IG_COMM__REDUCESCATTER" in names
    if parallelism == "HYBRID_MODEL_DATA":
        assert "COMM_COLL_NODE_b_REDUCESCATTER" in names


def test_text_converter_none_comms():
    wl = parse_astra_text(_tiny("DATA"))
    (t,) = text_to_traces(wl, 1)
    none = [n for n in t.nodes if n.name == "COMM_COLL_NODE_b_NONE"]
    assert len(none) == 1 and (none[0].comm_type, none[0].comm_size) == (0, 0)  # the converter's ALL_REDUCE of 0 B
    (t2,) = text_to_traces(wl, 1, passes=2, none_comms="drop")
    assert len(t2.nodes) == 20 and not any(n.name.endswith("_NONE") for n in t2.nodes)
    assert [n.id for n in t2.nodes] == list(range(20))
    check_trace(t2)
    byname = [n for n in t2.nodes if n.name == "COMP_NODE_b_FWD"]
    wg_b = next(n for n in t2.nodes if n.name == "COMP_NODE_b_BWD_WG")
    assert wg_b.id in byname[1].data_deps  # waits for the dropped node's parent instead


def test_text_converter_dlrm():
    wl = read_astra_text(REF / "legacy/DLRM_HybridParallel.txt")
    (t,) = text_to_traces(wl, 1)
    assert len(t.nodes) == 32
    check_trace(t)
    by_name = {n.name: n for n in t.nodes if n.name != "COMM_COLL_NODE_Embedding_ALLTOALL"}
    a2a = [n for n in t.nodes if n.name == "COMM_COLL_NODE_Embedding_ALLTOALL"]
    assert len(a2a) == 2 and {n.comm_type for n in a2a} == {6}
    # the bottom MLP's last layer waits for the embedding all-to-all; the embedding's WG for the backward one
    assert a2a[0].id in by_name["COMP_NODE_MLP_Bottom_3_FWD"].data_deps
    assert a2a[1].id in by_name["COMP_NODE_Embedding_BWD_WG"].data_deps
    assert a2a[1].data_deps == (by_name["COMP_NODE_MLP_Top_0_BWD_IG"].id,)
    assert "COMM_COLL_NODE_Embedding_NONE" not in by_name  # DLRM skips NONE weight-gradient collectives
    assert len(text_to_traces(wl, 1, passes=2)[0].nodes) == 64


def test_text_converter_rejects_transformer():
    wl = read_astra_text(REF / "legacy/Transformer_HybridParallel.txt")
    with pytest.raises(ConfigError) as e:
        text_to_traces(wl, 4)
    _assert_one_line_error(e, "Transformer_HybridParallel.txt", "HYBRID_TRANSFORMER", "DATA")
    for kw in ({"duration_unit": "s"}, {"none_comms": "x"}):
        with pytest.raises(ConfigError):
            text_to_traces(parse_astra_text(_tiny("DATA")), 1, **kw)
    with pytest.raises(ConfigError):
        text_to_traces(parse_astra_text(_tiny("DATA")), 0)


# ------------------------------------------------------------------------------- round trips


def _sample_traces() -> list[EtTrace]:
    nodes = [
        EtNode(0, "load", 2, attrs={"tensor_size": 4096, "is_cpu_op": False}),
        EtNode(1, "gemm", COMP_NODE, data_deps=[0], duration_micros=17, start_time_micros=5,
               attrs={"num_ops": 2**40, "tensor_size": 2**20, "is_cpu_op": False},
               inputs="[[1,2]]", outputs="[[3]]"),
        EtNode(2, "ar", COMM_COLL_NODE, data_deps=(1,), ctrl_deps=(0,),
               attrs={"comm_type": 0, "comm_size": 1 << 30, "pg_name": "1", "involved_dim": (True, False),
                      "comm_priority": 3}),
        EtNode(3, "send", COMM_SEND_NODE, ctrl_deps=(2,),
               attrs={"comm_dst": 1, "comm_tag": 7, "comm_size": 8, "neg": -5, "ratio": 0.25, "raw": b"\x00\xff",
                      "ints": (1, -2, 3), "names": ("x", "y"), "floats": (0.5, 1.5), "blobs": (b"a",), "empty": None}),
        EtNode(4, "recv", COMM_RECV_NODE, data_deps=(3, 2), attrs={"comm_src": 1, "comm_tag": 7, "comm_size": 8},
               inputs=""),
    ]
    return [EtTrace(rank=r, version="0.0.4", metadata_attrs={"note": "fabricsim", "seed": r},
                    nodes=tuple(nodes)) for r in range(3)]


@pytest.mark.parametrize("compress", [False, True])
def test_round_trip(tmp_path, compress):
    traces = _sample_traces()
    paths = write_traces(tmp_path / "sub" / "w", traces, compress=compress)
    assert [p.name for p in paths] == ["w.0.et", "w.1.et", "w.2.et"]
    assert (paths[0].read_bytes()[:2] == b"\x1f\x8b") == compress
    back = read_traces(tmp_path / "sub" / "w", 3)
    assert back == traces
    n3 = back[0].by_id[3]
    assert n3.attrs["raw"] == b"\x00\xff" and n3.attrs["ints"] == (1, -2, 3) and n3.attrs["empty"] is None
    assert back[0].by_id[2].involved_dim == (True, False) and back[0].by_id[2].pg_name == "1"
    assert back[0].by_id[1].inputs == "[[1,2]]" and back[0].by_id[4].inputs == "" and back[0].by_id[0].inputs is None
    # attribute types as Chakra's generators write them
    kinds = back[0].by_id[1].attr_kinds | back[0].by_id[2].attr_kinds | back[0].by_id[3].attr_kinds
    assert kinds["num_ops"] == "int64_val" and kinds["tensor_size"] == "uint64_val"
    assert kinds["comm_type"] == kinds["comm_size"] == "int64_val" and kinds["comm_dst"] == "int32_val"
    assert kinds["is_cpu_op"] == "bool_val" and kinds["involved_dim"] == "bool_list"
    assert kinds["ratio"] == "double_val" and kinds["neg"] == "int64_val"
    # a gzip file with any name is recognised by its magic bytes
    if not compress:
        gz = tmp_path / "plain_name.7.et"
        gz.write_bytes(gzip.compress(paths[1].read_bytes()))
        assert read_et(gz) == EtTrace(7, "0.0.4", {"note": "fabricsim", "seed": 1}, traces[1].nodes)


@pytest.mark.parametrize("path", [REF / "legacy/resnet50/r50.3.et", CUSTOM.parent / "custom_allreduce.5.et",
                                  REF / "workloads/all_to_all_64_67108864/x.63.et"])
def test_rewrite_reference_file(tmp_path, path):
    ref = read_et(path)
    out = write_et(tmp_path / path.name, ref)
    assert read_et(out) == ref and read_et(out).nodes == ref.nodes
    assert out.read_bytes() == path.read_bytes()
    gz = write_et(tmp_path / ("gz_" + path.name), ref, compress=True)
    assert read_et(gz).nodes == ref.nodes


def test_written_attribute_types_follow_reference_generators():
    t = EtTrace(0, "0.0.4", nodes=(EtNode(0, "all_reduce", COMM_COLL_NODE,
                                          attrs={"is_cpu_op": False, "comm_type": 0, "comm_size": 1048576}),))
    msg = pb.Node()
    data = encode_trace(t)
    meta_len = data[0]
    msg.ParseFromString(data[2 + meta_len:])
    assert [a.WhichOneof("value") for a in msg.attr] == ["bool_val", "int64_val", "int64_val"]


# ------------------------------------------------------------------------------- malformed traces


def test_truncated_files(tmp_path):
    src = REF / "legacy/resnet50/r50.2.et"
    data = src.read_bytes()
    # message boundaries: a cut there leaves a valid, shorter trace; cut everywhere else
    bounds, pos = {0}, 0
    while pos < len(data):
        n, shift = 0, 0
        while True:
            b = data[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        pos += n
        bounds.add(pos)
    offsets = [1, 2, 50, 200, 211, 5000, 9999, len(data) - 1]
    assert not set(offsets) & bounds
    for off in offsets:
        p = tmp_path / f"cut_{off}.0.et"
        p.write_bytes(data[:off])
        with pytest.raises(ConfigError) as e:
            read_et(p)
        _assert_one_line_error(e, p.name, "length prefix at byte")
        g = tmp_path / f"cutgz_{off}.0.et"
        gz = gzip.compress(data)
        g.write_bytes(gz[: min(max(off * len(gz) // len(data), 3), len(gz) - 1)])
        with pytest.raises(ConfigError) as e:
            read_et(g)
        _assert_one_line_error(e, g.name)
    empty = tmp_path / "empty.0.et"
    empty.write_bytes(b"")
    with pytest.raises(ConfigError) as e:
        read_et(empty)
    _assert_one_line_error(e, "empty.0.et", "GlobalMetadata")


def test_varint_cut_off_and_too_long(tmp_path):
    p = tmp_path / "v.0.et"
    p.write_bytes(b"\x02\x0a\x00" + b"\x96")  # metadata, then a varint whose continuation byte is missing
    with pytest.raises(ConfigError) as e:
        read_et(p)
    _assert_one_line_error(e, "v.0.et", "length prefix at byte 3", "varint32")
    p.write_bytes(b"\xff" * 6 + b"\x01")
    with pytest.raises(ConfigError) as e:
        read_et(p)
    _assert_one_line_error(e, "v.0.et", "length prefix at byte 0", "at most 5 bytes")


def test_garbage_bytes(tmp_path):
    p = tmp_path / "garbage.0.et"
    p.write_bytes(b"this is certainly not a chakra trace")
    with pytest.raises(ConfigError) as e:
        read_et(p)
    _assert_one_line_error(e, "garbage.0.et")
    # correct framing around bytes that are not a Node message
    body = b"\xff\xff\xff\xff"
    meta = pb.GlobalMetadata(version="0.0.4").SerializeToString()
    p.write_bytes(_varint(len(meta)) + meta + _varint(len(body)) + body)
    with pytest.raises(ConfigError) as e:
        read_et(p)
    _assert_one_line_error(e, "garbage.0.et", f"Node message at byte {len(meta) + 2}", "ChakraProtoMsg.Node")
    p.write_bytes(_varint(len(body)) + body)
    with pytest.raises(ConfigError) as e:
        read_et(p)
    _assert_one_line_error(e, "garbage.0.et", "GlobalMetadata message at byte 1")
    p.write_bytes(b"\x1f\x8bnot really gzip")
    with pytest.raises(ConfigError) as e:
        read_et(p)
    _assert_one_line_error(e, "garbage.0.et", "gzip")


def test_missing_rank_file(tmp_path):
    write_traces(tmp_path / "w", _sample_traces()[:2])
    with pytest.raises(ConfigError) as e:
        read_traces(tmp_path / "w", 4)
    _assert_one_line_error(e, "w.2.et", "missing", "missing ranks: 2, 3")
    with pytest.raises(ConfigError) as e:
        read_et(tmp_path / "nope.0.et")
    _assert_one_line_error(e, "nope.0.et", "missing")
    with pytest.raises(ConfigError):
        read_traces(tmp_path / "w", 0)


@pytest.mark.parametrize("case,needle", [
    ("dangling data", "node 2 data_deps: invalid value 99"),
    ("dangling ctrl", "node 2 ctrl_deps: invalid value 42"),
    ("duplicate", "node 1 id"),
    ("unknown type", "node 2 type: invalid value 11"),
    ("cycle", "acyclic"),
])
def test_bad_graphs(tmp_path, case, needle):
    nodes = [pb.Node(id=0, name="a", type=4), pb.Node(id=1, name="b", type=4, data_deps=[0]),
             pb.Node(id=2, name="c", type=7, data_deps=[1])]
    if case == "dangling data":
        nodes[2].data_deps.append(99)
    elif case == "dangling ctrl":
        nodes[2].ctrl_deps.append(42)
    elif case == "duplicate":
        nodes.append(pb.Node(id=1, name="again", type=4))
    elif case == "unknown type":
        nodes[2].type = 11
    elif case == "cycle":
        nodes[0].ctrl_deps.append(2)
    p = _raw_write(tmp_path / "bad.3.et", nodes)
    with pytest.raises(ConfigError) as e:
        read_et(p)
    _assert_one_line_error(e, "bad.3.et", needle)
    # read without checks, the writer refuses the same graph
    t = read_et(p, validate=False)
    assert t.rank == 3
    with pytest.raises(ConfigError):
        write_et(tmp_path / "again.0.et", t)


def test_writer_rejects_bad_values(tmp_path):
    for node, needle in [(EtNode(0, "x", attrs={"comm_dst": 2**40}), "attr comm_dst"),
                         (EtNode(0, "x", attrs={"obj": object()}), "attr obj"),
                         (EtNode(-1, "x"), "id"),
                         (EtNode(0, "x", duration_micros=1.5), "duration_micros")]:
        with pytest.raises(ConfigError) as e:
            write_et(tmp_path / "w.0.et", EtTrace(0, nodes=(node,)))
        _assert_one_line_error(e, "w.0.et", needle)
    with pytest.raises(ConfigError) as e:
        write_traces(tmp_path / "w", [EtTrace(1)])
    _assert_one_line_error(e, "w.0.et", "rank")
    # a whole float duration is fine
    write_et(tmp_path / "ok.0.et", EtTrace(0, nodes=(EtNode(0, "x", duration_micros=3.0),)))
    assert read_et(tmp_path / "ok.0.et").nodes[0].duration_micros == 3


# ------------------------------------------------------------------------------- legacy text workloads


def test_reference_text_workloads():
    r50 = read_astra_text(REF / "legacy/Resnet50_DataParallel.txt")
    assert (r50.parallelism, r50.params, len(r50.layers)) == ("DATA", {}, 54)
    L = r50.layers[0]
    assert (L.name, L.reserved, L.fwd_compute_ns, L.fwd_comm, L.ig_compute_ns, L.ig_comm, L.wg_compute_ns,
            L.wg_comm, L.wg_update_ns) == ("conv1", -1, 13003, TextComm("NONE", 0), 12864, TextComm("NONE", 0),
                                           32291, TextComm("ALLREDUCE", 37632), 3229)
    assert r50.layers[-1] == read_astra_text(REF / "legacy/Resnet50_DataParallel.txt").layers[-1]
    assert (r50.layers[-1].name, r50.layers[-1].wg_comm.bytes, r50.layers[-1].wg_update_ns) == ("fc1000", 8192000, 922)
    assert all(x.wg_comm.type == "ALLREDUCE" and x.fwd_comm.type == x.ig_comm.type == "NONE" for x in r50.layers)

    dlrm = read_astra_text(REF / "legacy/DLRM_HybridParallel.txt")  # tab-separated, trailing tabs, CRLF
    assert (dlrm.parallelism, dlrm.params, len(dlrm.layers)) == ("HYBRID_DLRM", {"last_bottom_layer": 4}, 8)
    emb = dlrm.layers[0]
    assert (emb.name, emb.fwd_comm, emb.ig_comm, emb.wg_comm, emb.wg_update_ns) == (
        "Embedding", TextComm("ALLTOALL", 98304), TextComm("ALLTOALL", 98304), TextComm("NONE", 0), 98)
    assert (dlrm.layers[5].name, dlrm.layers[5].wg_comm.bytes) == ("MLP_Top_0", 1064960)
    assert "\r" not in dlrm.source

    tr = read_astra_text(REF / "legacy/Transformer_HybridParallel.txt")
    assert (tr.parallelism, tr.params, len(tr.layers)) == ("HYBRID_TRANSFORMER", {"model_parallel_NPU_group": 4}, 57)
    concat = tr.layers[6]
    assert (concat.name, concat.fwd_compute_ns, concat.fwd_comm, concat.ig_comm, concat.wg_comm) == (
        "Concat1", 2162688, TextComm("ALLREDUCE", 8388608), TextComm("ALLGATHER", 134217728),
        TextComm("ALLREDUCE", 33554432))
    assert (tr.layers[-2].name, tr.layers[-2].fwd_comm) == ("fc", TextComm("ALLGATHER", 73728000))
    assert tr.layers[-1].name == "softmax"

    micro = read_astra_text(REF / "legacy/microAllReduce.txt")
    assert (micro.parallelism, len(micro.layers)) == ("MICRO", 1)
    assert micro.layers[0].wg_comm == TextComm("ALLREDUCE", 1048576) and micro.layers[0].fwd_compute_ns == 5


def test_text_params_and_customized():
    wl = parse_astra_text("HYBRID_CUSTOMIZED\n1\nl -1 1 NONE 0 2 NONE 0 3 ALLREDUCE 4 5 DATA\n")
    assert wl.layers[0].parallelism == "DATA"
    wl = parse_astra_text("HYBRID_TRANSFORMER_FWD_IN_BCKWD checkpoints: 2 0 7 model_parallel_NPU_group: 8\n"
                          "1\nl -1 1 NONE 0 2 NONE 0 3 ALLREDUCE 4 5\n")
    assert wl.params == {"checkpoints": (2, 0, 7), "model_parallel_NPU_group": 8}


@pytest.mark.parametrize("text,needles", [
    ("DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1048576\n", ["w.txt:3", "layer fields", "12"]),
    ("DATA\n1\nconv1 -1 5x NONE 0 5 NONE 0 5 ALLREDUCE 1048576 5\n", ["w.txt:3", "fwd_compute", "'5x'"]),
    ("DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1.5 5\n", ["w.txt:3", "wg_comm bytes", "'1.5'"]),
    ("DATA\n1\nconv1 -1 5 NONE 0 5 BCAST 0 5 ALLREDUCE 1 5\n", ["w.txt:3", "ig_comm type", "'BCAST'", "ALLTOALL"]),
    ("DATA\n2\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1 5\n", ["w.txt:2", "layer count", "(1)"]),
    ("DATA\n1\na -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1 5\nb -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1 5\n",
     ["w.txt:2", "layer count"]),
    ("DATA\nmany\n", ["w.txt:2", "layer count", "'many'"]),
    ("PIPELINE\n1\n", ["w.txt:1", "parallelism", "'PIPELINE'", "HYBRID_DLRM"]),
    ("HYBRID_DLRM\n1\n", ["w.txt:1", "last_bottom_layer"]),
    ("HYBRID_TRANSFORMER 4\n1\n", ["w.txt:1", "key: value"]),
    ("", ["w.txt:1", "empty"]),
    ("DATA\n", ["w.txt:2", "layer count", "missing"]),
    ("DATA\n1\nconv1 -1 -5 NONE 0 5 NONE 0 5 ALLREDUCE 1 5\n", ["w.txt:3", "fwd_compute", "-5"]),
])
def test_malformed_text(tmp_path, text, needles):
    p = tmp_path / "w.txt"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        read_astra_text(p)
    _assert_one_line_error(e, *needles)


def test_missing_text_file(tmp_path):
    with pytest.raises(ConfigError) as e:
        read_astra_text(tmp_path / "none.txt")
    _assert_one_line_error(e, "none.txt", "missing")


def test_dlrm_bad_last_bottom_layer():
    text = _tiny("HYBRID_DLRM", " 7")
    with pytest.raises(ConfigError) as e:
        text_to_traces(parse_astra_text(text, "d.txt"), 1)
    _assert_one_line_error(e, "d.txt", "last_bottom_layer", "0 to 2")
    text = _tiny("HYBRID_DLRM", " 1").replace("a -1 10 ALLGATHER", "a -1 10 NONE")
    with pytest.raises(ConfigError) as e:
        text_to_traces(parse_astra_text(text, "d.txt"), 1)
    _assert_one_line_error(e, "d.txt", "layer 0 fwd_comm type", "ALLTOALL")
