"""ASTRA-sim configuration readers: every reference network and system file, and malformed inputs.

Expected values are read off the reference files in reference/astra-sim (and the spec
docs/specs/astra-sim.md §2.2-2.8), written here as literals, never computed by the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import ASTRA_REFERENCE as REF

from fabricsim.astra.config import (
    AstraConfigError,
    AstraNetwork,
    Impl,
    parse_impl,
    read_comm_groups,
    read_network,
    read_per_node_custom_implementation,
    read_remote_memory,
    read_system,
    to_topology,
)
from fabricsim.errors import ConfigError


# 50 GB/s as ASTRA-sim converts it: 50 * 2**30 / 1e9 bytes per ns
BW50_BYTES_PER_NS = 53.6870912
BW400_BYTES_PER_NS = 429.4967296

ALL_NETWORKS = sorted(REF.glob("networks/*.yml")) + sorted(REF.glob("examples/network/analytical/*.yml"))
ALL_SYSTEMS = sorted(REF.glob("systems/*.json")) + sorted(REF.glob("examples/system/**/*.json"))


# ------------------------------------------------------------------------------- reference files


def test_reference_file_counts():
    assert len(ALL_NETWORKS) == 15  # 11 generated + 4 shipped examples
    assert len(ALL_SYSTEMS) == 16  # 13 generated + 3 shipped examples


@pytest.mark.parametrize("path", ALL_NETWORKS, ids=lambda p: p.name)
def test_every_reference_network_reads(path):
    net = read_network(path)
    assert net.path == str(path)
    assert net.unknown == ()
    assert len(net.topology) == len(net.npus_count) == len(net.bandwidth_gbps) == len(net.latency_ns) == net.ndims
    # the file name says the size: Ring_8.yml, RFS_2x8x4.yml, Ring_16npus.yml, HGX (8 GPUs)
    expected = {"HGX-H100-validated.yml": 8, "RFS_2x8x4.yml": 64, "RingRing_4x4.yml": 16}.get(path.name)
    if expected is None:
        expected = int(path.stem.split("_")[-1].removesuffix("npus"))
    assert net.npus == expected


def test_rfs_2x8x4():
    net = read_network(REF / "networks" / "RFS_2x8x4.yml")
    assert net.topology == ("Ring", "FullyConnected", "Switch")
    assert net.npus_count == (2, 8, 4)
    assert net.ndims == 3 and net.npus == 64
    assert net.bandwidth_gbps == (200.0, 100.0, 50.0)
    assert net.latency_ns == (50.0, 500.0, 2000.0)
    assert net.bandwidth_bytes_per_ns == pytest.approx((214.7483648, 107.3741824, 53.6870912), rel=1e-15)


def test_hgx_h100_validated_network():
    net = read_network(REF / "examples" / "network" / "analytical" / "HGX-H100-validated.yml")
    assert net.topology == ("Switch",)
    assert net.npus_count == (8,)
    assert net.bandwidth_gbps == (400.0,)
    assert net.latency_ns == (936.25,)
    assert net.bandwidth_bytes_per_ns[0] == pytest.approx(BW400_BYTES_PER_NS, rel=1e-15)


@pytest.mark.parametrize("name", ["Ring_4.yml", "Ring_8.yml", "Ring_16.yml", "Switch_8.yml", "FullyConnected_4.yml"])
def test_generated_networks_are_50gbps_500ns(name):
    net = read_network(REF / "networks" / name)
    assert net.bandwidth_gbps == (50.0,) and net.latency_ns == (500.0,)
    assert net.bandwidth_bytes_per_ns[0] == pytest.approx(BW50_BYTES_PER_NS, rel=1e-15)
    assert net.topology == (name.split("_")[0],)


def test_bandwidth_conversion_is_gib():
    net = AstraNetwork(("Ring",), (4,), (50.0,), (500.0,))
    assert net.bandwidth_bytes_per_ns[0] == pytest.approx(53.6870912, rel=1e-15)
    assert net.bandwidth_bytes_per_s[0] == pytest.approx(53_687_091_200.0, rel=1e-15)
    assert net.latency_s[0] == pytest.approx(5e-7, rel=1e-15)


@pytest.mark.parametrize("path", ALL_SYSTEMS, ids=lambda p: p.name)
def test_every_reference_system_reads(path):
    sys_ = read_system(path)
    assert sys_.path == str(path)
    assert sys_.unknown == ()
    assert sys_.raw["scheduling-policy"] == sys_.scheduling_policy
    assert sys_.preferred_dataset_splits >= 1


@pytest.mark.parametrize("path", sorted(REF.glob("systems/*.json")), ids=lambda p: p.name)
def test_generated_systems_match_their_names(path):
    # sys_<algo>_<d>d[_s<splits>_a<active>][_<optimization>].json; all: LIFO, endpoint 10, local-mem-bw 1600
    sys_ = read_system(path)
    parts = path.stem.split("_")
    algo, ndims = parts[1], int(parts[2][:-1])
    splits = next((int(p[1:]) for p in parts[3:] if p.startswith("s")), 4)
    active = next((int(p[1:]) for p in parts[3:] if p.startswith("a")), 1)
    optimization = "baseline" if parts[-1] == "baseline" else "localBWAware"
    assert sys_.scheduling_policy == "LIFO"
    assert sys_.endpoint_delay == 10
    assert sys_.local_mem_bw == 1600.0
    assert sys_.preferred_dataset_splits == splits
    assert sys_.active_chunks_per_dimension == active
    assert sys_.collective_optimization == optimization
    for coll in ("all-reduce", "reduce-scatter", "all-gather", "all-to-all"):
        assert sys_.implementation(coll) == (Impl(algo),) * ndims
        assert sys_.custom_implementation(coll) is None
    assert sys_.boost_mode == 0 and sys_.ignored == ("boost-mode",)
    # checked against a network of the right number of dimensions it still reads
    net = AstraNetwork(("Ring",) * ndims, (4,) * ndims, (50.0,) * ndims, (500.0,) * ndims, "n.yml")
    assert read_system(path, net) == sys_


def test_ring_4chunks():
    s = read_system(REF / "examples" / "system" / "native_collectives" / "Ring_4chunks.json")
    assert s.preferred_dataset_splits == 4
    assert s.scheduling_policy == "LIFO"
    assert s.collective_optimization == "localBWAware"
    assert s.local_mem_bw == 1600.0
    assert s.local_mem_bw_bytes_per_s == 1.6e12
    assert s.endpoint_delay == 10
    assert s.active_chunks_per_dimension == 1
    assert s.peak_perf == 900.0 and s.peak_perf_flops == 9e14
    assert s.roofline_enabled is False
    assert s.all_reduce_implementation == (Impl("ring", None, False),)
    assert s.all_to_all_implementation == (Impl("ring"),)
    assert s.ignored == ("boost-mode",)


def test_hgx_h100_validated_system():
    s = read_system(REF / "examples" / "system" / "native_collectives" / "HGX-H100-validated.json")
    assert s.active_chunks_per_dimension == 2
    assert s.local_mem_bw == 3350.0
    assert s.preferred_dataset_splits == 4
    assert s.scheduling_policy == "LIFO" and s.collective_optimization == "localBWAware"
    # keys the file does not give keep ASTRA-sim's defaults
    assert s.peak_perf == 0.0 and s.roofline_enabled is False
    assert s.model_shared_bus is False and (s.L, s.o, s.g, s.G) == (0.0, 0.0, 0.0, 0.0)
    assert s.local_reduction_delay == 1
    assert (s.trace_enabled, s.replay_only, s.track_local_mem) == (False, False, False)
    assert s.local_mem_trace_filename == "local_mem_trace"
    assert s.per_node_custom_implementation is None


def test_custom_collective_system():
    s = read_system(REF / "examples" / "system" / "custom_collectives" / "custom_collective.json")
    assert s.scheduling_policy == "FIFO"
    assert s.preferred_dataset_splits == 1
    assert s.local_mem_bw == 50.0
    assert s.all_reduce_implementation_custom == (
        "examples/system/custom_collectives/custom_ring_allreduce_8npus_1MB/custom_allreduce")
    assert s.custom_implementation("all_reduce") == s.all_reduce_implementation_custom
    assert s.all_reduce_implementation == ()
    # no native implementation: ASTRA-sim never reads the optimization, so it may be absent
    assert s.collective_optimization is None
    assert s.endpoint_delay == 10 and s.active_chunks_per_dimension == 1  # defaults
    assert s.ignored == ()


def test_system_defaults(tmp_path):
    p = tmp_path / "min.json"
    p.write_text(json.dumps({"scheduling-policy": "EXPLICIT", "preferred-dataset-splits": 2}))
    s = read_system(p)
    assert (s.active_chunks_per_dimension, s.endpoint_delay, s.local_mem_bw, s.model_shared_bus) == (1, 10, 0.0, False)
    assert (s.L, s.o, s.g, s.G, s.local_reduction_delay, s.peak_perf) == (0.0, 0.0, 0.0, 0.0, 1, 0.0)
    assert (s.roofline_enabled, s.trace_enabled, s.replay_only, s.track_local_mem) == (False,) * 4
    assert s.local_mem_trace_filename == "local_mem_trace"
    assert s.collective_optimization is None and s.ignored == () and s.unknown == ()


def test_every_key_typed_and_unknown_kept(tmp_path):
    doc = {
        "scheduling-policy": "FIFO", "collective-optimization": "baseline", "active-chunks-per-dimension": 3,
        "preferred-dataset-splits": 8, "endpoint-delay": 0, "local-mem-bw": 50,
        "all-reduce-implementation": ["oneRing", "ring"], "reduce-scatter-implementation": ["direct4", "ring"],
        "all-gather-implementation": ["oneDirect16", "halvingDoubling"],
        "all-to-all-implementation": ["direct", "oneHalvingDoubling"],
        "all-gather-implementation-custom": ["ag/x"], "per-node-custom-implementation": "pn.yaml",
        "model-shared-bus": 1, "L": 1.5, "o": 2, "g": 3, "G": 0.25, "local-reduction-delay": 5,
        "peak-perf": 312, "roofline-enabled": 1, "trace-enabled": True, "replay-only": 0, "track-local-mem": 1,
        "local-mem-trace-filename": "trace.json", "boost-mode": 1, "intra-dimension-scheduling": "SCF",
        "inter-dimension-scheduling": "themis", "endpoint-dely": 5,
    }
    p = tmp_path / "all.json"
    p.write_text(json.dumps(doc))
    s = read_system(p)
    assert s.scheduling_policy == "FIFO" and s.collective_optimization == "baseline"
    assert s.active_chunks_per_dimension == 3 and s.preferred_dataset_splits == 8 and s.endpoint_delay == 0
    assert s.local_mem_bw == 50.0
    assert s.all_reduce_implementation == (Impl("ring", None, True), Impl("ring", None, False))
    assert s.reduce_scatter_implementation == (Impl("direct", 4, False), Impl("ring"))
    assert s.all_gather_implementation == (Impl("direct", 16, True), Impl("halvingDoubling"))
    assert s.all_to_all_implementation == (Impl("direct"), Impl("halvingDoubling", None, True))
    assert s.all_gather_implementation_custom == "ag/x" and s.all_reduce_implementation_custom is None
    assert s.per_node_custom_implementation == "pn.yaml"
    assert s.model_shared_bus is True and (s.L, s.o, s.g, s.G) == (1.5, 2.0, 3.0, 0.25)
    assert s.local_reduction_delay == 5 and s.peak_perf == 312.0
    assert (s.roofline_enabled, s.trace_enabled, s.replay_only, s.track_local_mem) == (True, True, False, True)
    assert s.local_mem_trace_filename == "trace.json"
    assert (s.boost_mode, s.intra_dimension_scheduling, s.inter_dimension_scheduling) == (1, "SCF", "themis")
    assert s.ignored == ("boost-mode", "intra-dimension-scheduling", "inter-dimension-scheduling")
    assert s.unknown == ("endpoint-dely",)
    assert s.raw["endpoint-dely"] == 5
    assert isinstance(s.L, float) and isinstance(s.endpoint_delay, int)


@pytest.mark.parametrize("text, impl", [
    ("ring", Impl("ring", None, False)), ("direct", Impl("direct", None, False)),
    ("direct4", Impl("direct", 4, False)), ("halvingDoubling", Impl("halvingDoubling", None, False)),
    ("doubleBinaryTree", Impl("doubleBinaryTree", None, False)), ("oneRing", Impl("ring", None, True)),
    ("oneDirect", Impl("direct", None, True)), ("oneDirect8", Impl("direct", 8, True)),
    ("oneHalvingDoubling", Impl("halvingDoubling", None, True)),
])
def test_parse_impl(text, impl):
    assert parse_impl(text) == impl
    assert str(impl) == text


@pytest.mark.parametrize("text", ["warp", "Ring", "directX", "direct0", "ring4", "oneDoubleBinaryTree", "", 3])
def test_parse_impl_rejects(text):
    with pytest.raises((ValueError, TypeError)):
        parse_impl(text)


# ------------------------------------------------------------------------------------ to_topology


def test_to_topology_rfs():
    topo = to_topology(read_network(REF / "networks" / "RFS_2x8x4.yml"))
    assert topo.n_npus == 64 and topo.dims == (2, 8, 4)
    assert topo.dim_kinds == ("ring", "fc", "switch")
    assert topo.n_switches == 16  # one per line of 4 along dimension 2
    bw = {d: set(topo.link_bw[topo.link_dim == d]) for d in range(3)}
    lat = {d: set(topo.link_lat[topo.link_dim == d]) for d in range(3)}
    assert bw == {0: {214_748_364_800.0}, 1: {107_374_182_400.0}, 2: {53_687_091_200.0}}
    assert {d: pytest.approx(next(iter(v)), rel=1e-12) for d, v in lat.items()} == {0: 5e-8, 1: 5e-7, 2: 2e-6}
    assert all(len(v) == 1 for v in lat.values())
    # links: ring of 2 = 1 per NPU, fc of 8 = 7 per NPU, switch = up + down per NPU
    counts = np.bincount(topo.link_dim, minlength=3)
    assert counts.tolist() == [64, 448, 128]


def test_to_topology_hgx_switch():
    topo = to_topology(read_network(REF / "examples" / "network" / "analytical" / "HGX-H100-validated.yml"))
    assert topo.n_npus == 8 and topo.n_switches == 1 and len(topo.link_src) == 16
    assert set(topo.link_bw) == {400 * 2**30}
    assert topo.link_lat[0] == pytest.approx(936.25e-9, rel=1e-12)


def test_to_topology_ring_links(tmp_path):
    p = tmp_path / "r.yml"
    p.write_text("topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    topo = to_topology(read_network(p), name="r8")
    assert topo.name == "r8" and topo.n_npus == 8 and topo.n_switches == 0
    assert len(topo.link_src) == 16  # bidirectional ring
    assert set(topo.link_bw) == {53_687_091_200.0}


# ------------------------------------------------------------------------------ malformed inputs


def _assert_error(exc: pytest.ExceptionInfo, path: Path, key: str):
    msg = str(exc.value)
    assert isinstance(exc.value, ConfigError) and isinstance(exc.value, AstraConfigError)
    assert "\n" not in msg and "\r" not in msg, msg
    assert msg.startswith(str(path)), msg
    assert path.name in msg and key in msg, msg
    return msg


NET_OK = {"topology": ["Ring", "Switch"], "npus_count": [4, 2], "bandwidth": [50.0, 25.0], "latency": [500.0, 100.0]}


def _yaml(tmp_path, name, **override):
    doc = {**NET_OK, **override}
    lines = [f"{k}: [ {', '.join(str(x) for x in v)} ]" if isinstance(v, list) else f"{k}: {v}"
             for k, v in doc.items() if v is not None]
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def test_network_ok_2d(tmp_path):
    net = read_network(_yaml(tmp_path, "ok.yml"))
    assert net.topology == ("Ring", "Switch") and net.npus == 8


@pytest.mark.parametrize("name, override, key", [
    ("lengths.yml", {"latency": [500.0]}, "latency"),
    ("lengths2.yml", {"npus_count": [4, 2, 2]}, "npus_count"),
    ("npus1.yml", {"npus_count": [4, 1]}, "npus_count[1]"),
    ("npus_float.yml", {"npus_count": [4, 2.5]}, "npus_count[1]"),
    ("neglat.yml", {"latency": [500.0, -1.0]}, "latency[1]"),
    ("zerobw.yml", {"bandwidth": [0, 25.0]}, "bandwidth[0]"),
    ("torus.yml", {"topology": ["Torus", "Switch"]}, "topology[0]"),
    ("textbw.yml", {"bandwidth": ["fast", 25.0]}, "bandwidth[0]"),
    ("boolbw.yml", {"bandwidth": ["true", 25.0]}, "bandwidth[0]"),
    ("nobw.yml", {"bandwidth": None}, "bandwidth"),
    ("scalar.yml", {"latency": 500}, "latency"),
    ("empty.yml", {"topology": [], "npus_count": [], "bandwidth": [], "latency": []}, "topology"),
])
def test_network_rejects(tmp_path, name, override, key):
    p = _yaml(tmp_path, name, **override)
    with pytest.raises(ConfigError) as exc:
        read_network(p)
    _assert_error(exc, p, key)


def test_network_error_messages(tmp_path):
    p = _yaml(tmp_path, "torus.yml", topology=["Torus", "Ring"])
    with pytest.raises(ConfigError) as exc:
        read_network(p)
    msg = _assert_error(exc, p, "topology")
    assert "'Torus'" in msg and "FullyConnected" in msg
    p = _yaml(tmp_path, "lengths.yml", latency=[1.0])
    with pytest.raises(ConfigError) as exc:
        read_network(p)
    assert "2" in _assert_error(exc, p, "latency")


def test_network_yaml_1_1_exponent_and_unknown_key(tmp_path):
    p = tmp_path / "exp.yml"  # PyYAML reads 1e3 as text; yaml-cpp (ASTRA-sim) as a number
    p.write_text("topology: [ Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 1e3 ]\nlatency: [ 0 ]\nname: x\n")
    net = read_network(p)
    assert net.bandwidth_gbps == (1000.0,) and net.latency_ns == (0.0,) and net.unknown == ("name",)


def test_network_yaml_syntax_error(tmp_path):
    p = tmp_path / "bad.yml"
    p.write_text("topology: [ Ring ]\nnpus_count: [ 4\nbandwidth: [ 50 ]\n")
    with pytest.raises(ConfigError) as exc:
        read_network(p)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(str(p)) and "line" in msg and "YAML" in msg


def test_network_not_a_mapping_and_missing_file(tmp_path):
    p = tmp_path / "list.yml"
    p.write_text("- Ring\n- Switch\n")
    with pytest.raises(ConfigError) as exc:
        read_network(p)
    _assert_error(exc, p, "top level")
    missing = tmp_path / "nope.yml"
    with pytest.raises(ConfigError) as exc:
        read_network(missing)
    assert str(exc.value).startswith(str(missing)) and "\n" not in str(exc.value)


SYS_OK = {"scheduling-policy": "LIFO", "preferred-dataset-splits": 4, "collective-optimization": "localBWAware",
          "all-reduce-implementation": ["ring"]}


def _json(tmp_path, name, drop=(), **override):
    doc = {k: v for k, v in {**SYS_OK, **override}.items() if k not in drop}
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize("name, drop, override, key", [
    ("nosplits.json", ("preferred-dataset-splits",), {}, "preferred-dataset-splits"),
    ("splits0.json", (), {"preferred-dataset-splits": 0}, "preferred-dataset-splits"),
    ("splits_neg.json", (), {"preferred-dataset-splits": -2}, "preferred-dataset-splits"),
    ("splits_frac.json", (), {"preferred-dataset-splits": 2.5}, "preferred-dataset-splits"),
    ("splits_text.json", (), {"preferred-dataset-splits": "4"}, "preferred-dataset-splits"),
    ("nopolicy.json", ("scheduling-policy",), {}, "scheduling-policy"),
    ("policy.json", (), {"scheduling-policy": "lifo"}, "scheduling-policy"),
    ("noopt.json", ("collective-optimization",), {}, "collective-optimization"),
    ("opt.json", (), {"collective-optimization": "themis"}, "collective-optimization"),
    ("warp.json", (), {"all-reduce-implementation": ["warp"]}, "all-reduce-implementation"),
    ("notlist.json", (), {"all-gather-implementation": "ring"}, "all-gather-implementation"),
    ("custom2.json", (), {"all-reduce-implementation-custom": ["a", "b"]}, "all-reduce-implementation-custom"),
    ("active0.json", (), {"active-chunks-per-dimension": 0}, "active-chunks-per-dimension"),
    ("negdelay.json", (), {"endpoint-delay": -10}, "endpoint-delay"),
    ("negbw.json", (), {"local-mem-bw": -1}, "local-mem-bw"),
    ("boolbw.json", (), {"local-mem-bw": True}, "local-mem-bw"),
    ("negL.json", (), {"L": -0.5}, "L"),
    ("flag2.json", (), {"model-shared-bus": 2}, "model-shared-bus"),
    ("fname.json", (), {"local-mem-trace-filename": 7}, "local-mem-trace-filename"),
    ("roofline.json", (), {"roofline-enabled": 1, "local-mem-bw": 100}, "peak-perf"),
    ("roofline_bw.json", (), {"roofline-enabled": 1, "peak-perf": 100}, "local-mem-bw"),
])
def test_system_rejects(tmp_path, name, drop, override, key):
    p = _json(tmp_path, name, drop, **override)
    with pytest.raises(ConfigError) as exc:
        read_system(p)
    _assert_error(exc, p, key)


def test_system_missing_splits_message(tmp_path):
    p = _json(tmp_path, "nosplits.json", drop=("preferred-dataset-splits",))
    with pytest.raises(ConfigError) as exc:
        read_system(p)
    msg = _assert_error(exc, p, "preferred-dataset-splits")
    assert "missing" in msg and "divides by zero" in msg


def test_system_unknown_algorithm_message(tmp_path):
    p = _json(tmp_path, "warp.json", **{"all-to-all-implementation": ["ring", "warp"]})
    with pytest.raises(ConfigError) as exc:
        read_system(p)
    msg = _assert_error(exc, p, "all-to-all-implementation[1]")
    assert "'warp'" in msg and "halvingDoubling" in msg


def test_system_implementation_length_vs_network(tmp_path):
    net2 = read_network(_yaml(tmp_path, "net2.yml"))
    p = _json(tmp_path, "sys1d.json", **{"reduce-scatter-implementation": ["ring"],
                                          "all-reduce-implementation": ["ring", "ring"]})
    with pytest.raises(ConfigError) as exc:
        read_system(p, net2)
    msg = _assert_error(exc, p, "reduce-scatter-implementation")
    assert "2" in msg and "net2.yml" in msg
    p3 = _json(tmp_path, "sys3d.json", **{"all-reduce-implementation": ["ring"] * 3})
    with pytest.raises(ConfigError) as exc:
        read_system(p3, net2)
    _assert_error(exc, p3, "all-reduce-implementation")
    # without a network the length is not checked; a single flat entry covers all dimensions
    assert len(read_system(p3).all_reduce_implementation) == 3
    flat = _json(tmp_path, "flat.json", **{"all-reduce-implementation": ["oneRing"]})
    assert read_system(flat, net2).all_reduce_implementation == (Impl("ring", None, True),)


def test_system_json_syntax_error(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text('{\n  "scheduling-policy": "LIFO",\n  "preferred-dataset-splits": 4,\n}\n')
    with pytest.raises(ConfigError) as exc:
        read_system(p)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(str(p)) and "line 4" in msg and "JSON" in msg


def test_system_duplicate_key_and_top_level(tmp_path):
    p = tmp_path / "dup.json"
    p.write_text('{"scheduling-policy": "LIFO", "preferred-dataset-splits": 4, "preferred-dataset-splits": 0}')
    with pytest.raises(ConfigError) as exc:
        read_system(p)
    _assert_error(exc, p, "preferred-dataset-splits")
    q = tmp_path / "list.json"
    q.write_text("[1, 2]")
    with pytest.raises(ConfigError) as exc:
        read_system(q)
    _assert_error(exc, q, "top level")


def test_system_integral_float_accepted(tmp_path):
    s = read_system(_json(tmp_path, "f.json", **{"preferred-dataset-splits": 4.0, "endpoint-delay": 10.0}))
    assert s.preferred_dataset_splits == 4 and isinstance(s.preferred_dataset_splits, int)
    assert s.endpoint_delay == 10 and isinstance(s.endpoint_delay, int)


# ----------------------------------------------------------------------- comm groups, memory, per-node


def test_comm_groups(tmp_path):
    p = tmp_path / "groups.json"
    p.write_text('{"1": [0, 1, 2, 3], "2": [4, 5, 6, 7]}')
    assert read_comm_groups(p, 8) == {1: (0, 1, 2, 3), 2: (4, 5, 6, 7)}
    assert read_comm_groups(p) == {1: (0, 1, 2, 3), 2: (4, 5, 6, 7)}
    assert read_comm_groups("empty") == {}
    with pytest.raises(ConfigError, match="empty_groups.json"):  # only the value `empty` means none
        read_comm_groups(tmp_path / "empty_groups.json")


@pytest.mark.parametrize("name, text, npus, key", [
    ("rank_big.json", '{"1": [0, 1, 8]}', 8, "1"),
    ("rank_neg.json", '{"3": [0, -1]}', None, "3"),
    ("rank_dup.json", '{"2": [0, 1, 1]}', None, "2"),
    ("rank_text.json", '{"2": [0, "1"]}', None, "2"),
    ("gid0.json", '{"0": [0, 1]}', None, "0"),
    ("gid_text.json", '{"tp": [0, 1]}', None, "tp"),
    ("gid_twice.json", '{"1": [0, 1], "01": [2, 3]}', None, "01"),
    ("members.json", '{"1": []}', None, "1"),
])
def test_comm_groups_reject(tmp_path, name, text, npus, key):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(ConfigError) as exc:
        read_comm_groups(p, npus)
    _assert_error(exc, p, key)


def test_comm_group_rank_beyond_network(tmp_path):
    net = AstraNetwork(("Ring",), (4,), (50.0,), (500.0,))
    p = tmp_path / "groups.json"
    p.write_text('{"1": [0, 1], "2": [2, 3, 4]}')
    with pytest.raises(ConfigError) as exc:
        read_comm_groups(p, net)
    msg = _assert_error(exc, p, "2")
    assert "4" in msg and "0..3" in msg


def test_remote_memory(tmp_path):
    p = tmp_path / "no_memory_expansion.json"
    p.write_text('{"memory-type": "NO_MEMORY_EXPANSION"}')
    m = read_remote_memory(p)
    assert m.memory_type == "NO_MEMORY_EXPANSION" and m.remote_mem_bw == 0.0
    with pytest.raises(ConfigError):
        m.runtime_ns(1024)
    q = tmp_path / "node.json"
    q.write_text(json.dumps({"memory-type": "PER_NODE_MEMORY_EXPANSION", "num-nodes": 2, "num-npus-per-node": 4,
                             "remote-mem-latency": 100, "remote-mem-bw": 32}))
    m = read_remote_memory(q, 8)
    assert (m.num_nodes, m.num_npus_per_node, m.remote_mem_latency, m.remote_mem_bw) == (2, 4, 100, 32.0)
    assert m.runtime_ns(3200) == 200  # 100 ns + 3200 B / 32 B/ns
    with pytest.raises(ConfigError) as exc:
        read_remote_memory(q, 16)
    _assert_error(exc, q, "num-nodes")


@pytest.mark.parametrize("doc, key", [
    ({"memory-type": "HBM"}, "memory-type"),
    ({"memory-type": "MEMORY_POOL"}, "remote-mem-bw"),
    ({"memory-type": "PER_NPU_MEMORY_EXPANSION", "remote-mem-bw": -1}, "remote-mem-bw"),
    ({"memory-type": "PER_NODE_MEMORY_EXPANSION", "remote-mem-bw": 10, "num-nodes": 2}, "num-npus-per-node"),
])
def test_remote_memory_rejects(tmp_path, doc, key):
    p = tmp_path / "mem.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as exc:
        read_remote_memory(p)
    _assert_error(exc, p, key)


def test_per_node_custom_implementation(tmp_path):
    p = tmp_path / "per_node.yaml"
    p.write_text("12: dir/custom_ar\n40: dir/custom_ag\n")
    assert read_per_node_custom_implementation(p) == {12: "dir/custom_ar", 40: "dir/custom_ag"}
    q = tmp_path / "bad_per_node.yaml"
    q.write_text("abc: dir/x\n")
    with pytest.raises(ConfigError) as exc:
        read_per_node_custom_implementation(q)
    _assert_error(exc, q, "abc")
