"""One question, one answer: the same collective gets the same number through every entry point
(library, `fabricsim collective`, a training config through the engine, a traffic file, the
ASTRA-sim comparison), on every network model; and the defects that broke this stay fixed.

Expected times are closed forms written here."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from fabricsim.cli import main
from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.registry import choose_algorithm, get_algorithm
from fabricsim.errors import ConfigError
from fabricsim.network.model import NETWORK_MODELS, get_network_model, time_collective
from fabricsim.topology import parse_topology

S = 2**30  # 1 GiB
GiB = 2**30


def _cli_time(capsys, *args) -> float:
    capsys.readouterr()
    assert main(["collective", *args, "-s", str(S), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["rows"][0]["time_us"] * 1e-6


def _micro(tmp_path, size: int, kind: str = "ALLREDUCE") -> str:
    """An ASTRA-sim 1.0 text workload with one collective and no compute."""
    p = tmp_path / "one.txt"
    p.write_text(f"MICRO\n1\nl0 -1 0 NONE 0 0 NONE 0 0 {kind} {size} 0\n")
    return str(p)


def _train_time(capsys, tmp_path, network: dict) -> float:
    cfg = {"network": network, "workload": {"astra_text": _micro(tmp_path, S)},
           "output": {"dir": str(tmp_path / "out"), "trace": False, "plot": False}}
    path = tmp_path / "train.yaml"
    path.write_text(yaml.safe_dump(cfg))
    capsys.readouterr()
    assert main(["train", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["iteration_time_s"]


def _traffic_time(capsys, tmp_path, topology, bandwidth, latency, model, algorithm) -> float:
    spec = {"topology": topology, "bandwidth": bandwidth, "latency": latency, "model": model,
            "collectives": [{"name": "c", "collective": "all-reduce", "algorithm": algorithm, "size": S}]}
    path = tmp_path / "traffic.yaml"
    path.write_text(yaml.safe_dump(spec))
    capsys.readouterr()
    assert main(["traffic", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["items"][0]["duration_s"]


def _astra_inputs(tmp_path) -> tuple[str, str, str]:
    """ASTRA-sim inputs for one 1 GiB all-reduce on an 8-NPU ring of 50 GiB/s, 500 ns links."""
    net = tmp_path / "Ring_8.yml"
    net.write_text("topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    sys_ = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
            "preferred-dataset-splits": 4, "collective-optimization": "localBWAware", "local-mem-bw": 1600,
            "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
            "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"]}
    system = tmp_path / "sys.json"
    system.write_text(json.dumps(sys_))
    assert main(["export", "chakra", "-o", str(tmp_path / "w"), "-n", "8", "-c", "all-reduce", "-s", "1GiB"]) == 0
    return str(tmp_path / "w"), str(system), str(net)


@pytest.mark.parametrize("model", ["congestion-aware", "flow"])
def test_ring_all_reduce_one_answer_everywhere(capsys, tmp_path, model):
    """Ring all-reduce of 1 GiB on an 8-NPU ring (50 GiB/s, 500 ns): 2 (p-1) (a + S/(p B)), from
    the library, the command line, a training config, a traffic file and the ASTRA-sim comparison."""
    from fabricsim.astra.run import compare_collectives, run_astra

    B, a, p = 50 * GiB, 500e-9, 8
    want = 2 * (p - 1) * (a + S / (p * B))
    topo = parse_topology("ring:8", "50GiB/s", "500ns")
    assert float(time_collective(topo, build_schedule(topo, "all-reduce", "ring"), S, model)[0]) == pytest.approx(want, rel=1e-12)
    assert _cli_time(capsys, "-t", "ring:8", "-B", "50GiB/s", "-L", "500ns", "-a", "ring", "-m", model) == \
        pytest.approx(want, rel=1e-9)
    net = {"topology": "ring:8", "bandwidth": "50GiB/s", "latency": "500ns", "model": model}
    assert _train_time(capsys, tmp_path, net) == pytest.approx(want, rel=1e-9)
    assert _traffic_time(capsys, tmp_path, "ring:8", "50GiB/s", "500ns", model, "ring") == pytest.approx(want, rel=1e-9)
    cmp = compare_collectives(run_astra(*_astra_inputs(tmp_path)), model)[0]
    assert cmp.fabricsim_algorithm == "ring"
    assert cmp.fabricsim_ns * 1e-9 == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("model", sorted(NETWORK_MODELS))
def test_in_network_all_reduce_streams_everywhere(capsys, tmp_path, model):
    """The in-network all-reduce on a reducing switch streams: S/B + the two link latencies,
    busbw 2(n-1)/n B, through every entry point and model (was: 2S/B from the command line,
    S/B from the engine). A store-and-forward model cannot stream: each hop waits for the whole
    message, up (a + S/B) then down (a + S/B), the same through every entry point."""
    B, a, n = 450e9, 100e-9, 8
    saf = model == "flow-store-and-forward"
    want = 2 * (a + S / B) if saf else S / B + 2 * a
    capsys.readouterr()
    assert main(["collective", "-t", "switch:8,reduce", "-B", "450GB/s", "-L", "100ns", "-a", "in_network",
                 "-m", model, "-s", str(S), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["rows"][0]
    assert row["time_us"] * 1e-6 == pytest.approx(want, rel=1e-9)
    if not saf:
        assert row["busbw_GBps"] == pytest.approx(2 * (n - 1) / n * B / 1e9, rel=1e-3)  # 787 GB/s, above the ring's 450
    net = {"topology": "switch:8,reduce", "bandwidth": "450GB/s", "latency": "100ns", "model": model,
           "algorithms": {"all-reduce": "in_network"}}
    assert _train_time(capsys, tmp_path, net) == pytest.approx(want, rel=1e-9)
    assert _traffic_time(capsys, tmp_path, "switch:8,reduce", "450GB/s", "100ns", model, "in_network") == \
        pytest.approx(want, rel=1e-9)


def test_in_network_lockstep_is_an_option(capsys):
    """`-o lockstep=true` keeps the two-traversal answer: up (a + S/B), then down (a + S/B)."""
    B, a = 450e9, 100e-9
    t = _cli_time(capsys, "-t", "switch:8,reduce", "-B", "450GB/s", "-L", "100ns", "-a", "in_network", "-o", "lockstep=true")
    assert t == pytest.approx(2 * (a + S / B), rel=1e-9)
    assert get_algorithm("in_network").option("lockstep") is not None  # named in `fabricsim algorithms`


# ---- regressions of the defects ------------------------------------------------------------------


@pytest.mark.parametrize("value,directions", [("no", 1), ("false", 1), ("off", 1), ("0", 1), ("yes", 2), ("true", 2)])
def test_ring_bidirectional_in_a_config_means_what_it_says(capsys, tmp_path, value, directions):
    """`ring,bidirectional=no` in a train config ran a bidirectional ring (18.75 ms instead of 37.5 ms
    for 1 GB on ring:16): 2 (p-1)/p S / (directions x B)."""
    B, p = 50e9, 16
    net = {"topology": "ring:16", "bandwidth": "400Gbps", "latency": "0ns",
           "algorithms": {"all-reduce": f"ring,bidirectional={value}"}}
    want = 2 * (p - 1) / p * S / (directions * B)
    assert _train_time(capsys, tmp_path, net) == pytest.approx(want, rel=1e-12)
    assert _cli_time(capsys, "-t", "ring:16", "-B", "400Gbps", "-L", "0ns", "-o", f"bidirectional={value}") == \
        pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize("dims", ["4x4", "[4, 4]"])
def test_swing_dims_in_a_config(capsys, tmp_path, dims):
    """`swing,dims=4x4` in a config ended in a ValueError traceback: it is the torus's own shape,
    so it gives the default's answer."""
    topo = parse_topology("torus:4x4", "400Gbps", "0ns")
    want = float(time_collective(topo, build_schedule(topo, "all-reduce", "swing"), S)[0])
    algs = {"all-reduce": "swing,dims=4x4"} if dims == "4x4" else {"all-reduce": "swing"}
    net = {"topology": "torus:4x4", "bandwidth": "400Gbps", "latency": "0ns", "algorithms": algs}
    assert _train_time(capsys, tmp_path, net) == pytest.approx(want, rel=1e-12)
    # the bandwidth-optimal Swing moves 2 (p-1)/p S per rank over 2D = 4 ports: at least S (p-1)/(p D B)
    assert want >= 2 * 15 / 16 * S / (4 * 50e9) * (1 - 1e-12)


def test_swing_dims_16_is_one_dimensional_swing(capsys, tmp_path):
    """`swing,dims=16` ended in a TypeError: it is the 1-D Swing on 16 ranks, the same answer
    as `-o dims=16` on the command line."""
    net = {"topology": "torus:4x4", "bandwidth": "400Gbps", "latency": "0ns", "algorithms": {"all-reduce": "swing,dims=16"}}
    t_cfg = _train_time(capsys, tmp_path, net)
    t_cli = _cli_time(capsys, "-t", "torus:4x4", "-B", "400Gbps", "-L", "0ns", "-a", "swing", "-o", "dims=16")
    assert t_cfg == pytest.approx(t_cli, rel=1e-9)
    assert choose_algorithm("swing,dims=16").kwargs == {"dims": (16,)}


@pytest.mark.parametrize("spec,field", [
    ("ring,bidirectional=maybe", "network.algorithms.all-reduce.bidirectional"),
    ("swing,dims=4xq", "network.algorithms.all-reduce.dims"),
    ("ring,colour=red", "network.algorithms.all-reduce.colour"),
    ("in_network,chunks=0", "network.algorithms.all-reduce.chunks"),
    ("hierarchical,inner=ring/banana", "network.algorithms.all-reduce.inner"),
    ("warp_drive", "algorithm"),
])
def test_bad_algorithm_option_in_a_config_is_one_line(capsys, tmp_path, spec, field):
    cfg = {"network": {"topology": "switch:8,reduce", "algorithms": {"all-reduce": spec}},
           "workload": {"astra_text": _micro(tmp_path, S)}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    capsys.readouterr()
    assert main(["train", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err and "Traceback" not in err


def test_alias_bidirectional_ring_is_a_bidirectional_ring():
    """The alias pointed to an algorithm that did not exist."""
    choice = choose_algorithm("bidirectional_ring")
    assert choice.name == "ring" and choice.kwargs == {"bidirectional": True}
    topo = parse_topology("ring:8", "50GB/s", "0ns")
    t = float(time_collective(topo, build_schedule(topo, "all-reduce", "bidirectional_ring"), S)[0])
    assert t == pytest.approx(2 * 7 / 8 * S / (2 * 50e9), rel=1e-12)


def test_every_registered_alias_resolves():
    from fabricsim.collectives.registry import ALGORITHMS, resolve_algorithm

    for alg in ALGORITHMS.values():
        for alias, preset in alg.aliases.items():
            got, opts = resolve_algorithm(alias)
            assert got is alg and opts == dict(preset)
            for k in opts:
                assert alg.option(k) is not None


def test_architecture_doc_names_only_what_exists():
    """docs/architecture.md described a `remap_blocks` that did not exist: every `name` it puts in
    backticks next to "schedule.py" composition must be a function of that module."""
    from pathlib import Path

    from fabricsim.ir import compose as schedule

    doc = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text()
    assert "remap_blocks" not in doc
    for name in ("parallel", "sequence", "align", "in_lanes"):
        assert hasattr(schedule, name)


def test_unknown_network_model_is_one_line():
    with pytest.raises(ConfigError, match="accepted: congestion-aware"):
        get_network_model("telepathy")
    for name, entry in NETWORK_MODELS.items():
        assert get_network_model(name).name == name
        for alias in entry.aliases:
            assert get_network_model(alias).name == name


def test_traffic_file_options_are_typed(capsys, tmp_path):
    """Traffic files take algorithm options through the same parser: a bad value is one line."""
    spec = {"topology": "ring:8", "collectives": [{"collective": "all-reduce", "algorithm": "ring", "size": "1MiB",
                                                   "options": {"bidirectional": "perhaps"}}]}
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(spec))
    capsys.readouterr()
    assert main(["traffic", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "bidirectional" in err and "perhaps" in err and len(err.splitlines()) == 1


def test_phase_times_add_up_to_the_collective_on_every_model():
    """The engine's pipelining needs phases that sum to the whole collective."""
    topo = parse_topology("torus:4x4", "400Gbps", "100ns")
    s = build_schedule(topo, "all-reduce", "hierarchical")
    for name in NETWORK_MODELS:
        cost = get_network_model(name).collective(topo, s)
        assert np.sum(cost.phase_times(S)) == pytest.approx(float(cost.times([S])[0]), rel=1e-9)


def test_reproduction_helpers_give_the_same_answer(capsys):
    """The Swing reproduction's evaluate and FRED's microbenchmark price collectives through the
    same network models: a ring all-reduce on an 8-node torus line with the Swing config's alpha
    per step and hop latency, 2 (p-1) (alpha + hop + S/(p B)), equals the library's answer with the
    same alpha; FRED's in-network MP(20) on Fred-D streams at 3 TB/s: D / 3 TB/s + the tree's depth."""
    from fabricsim.experiments import fred as fred_ex
    from fabricsim.experiments import swing as swing_ex
    from fabricsim.experiments.swing.config import Shape, Variant

    alpha, hop, B, p = 0.486e-6, 400e-9, 50e9, 8
    sizes = (32.0, float(2**20), float(2**29))
    pt = swing_ex.CasePoint(Shape("8", (8,)), B, True, sizes, (Variant("Ring", "ring"),), "congestion-aware", alpha, hop)
    got = dict(swing_ex.evaluate(pt).times)["Ring"]
    want = [2 * (p - 1) * (alpha + hop + s / (p * B)) for s in sizes]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    topo = parse_topology("torus:8", B, hop)
    lib = time_collective(topo, build_schedule(topo, "all-reduce", "ring"), sizes, "congestion-aware", step_overhead=alpha)
    np.testing.assert_allclose(got, lib, rtol=1e-15)

    cfg = fred_ex.load_config(None)
    row = fred_ex.microbenchmark(cfg, "Fred-D", "MP(20)")
    D, lat = 2**28, 20e-9  # configs/fred.yaml: 256 MiB, 20 ns per hop; up NPU-L1-L2, down L2-L1-NPU
    assert row.per_D * D / 1e12 == pytest.approx(D / 3e12 + 4 * lat, rel=1e-12)  # ~ the paper's 0.333 D/(TB/s)
