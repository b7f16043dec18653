"""ASTRA-sim compatibility mode against ASTRA-sim's own answers (reference/astra-sim, shipped with the repository).

Every row of cases.csv and examples.csv is run from its files, through the same path as
`fabricsim astra`, and must match ASTRA-sim's reported finish times to the nanosecond.
"""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path

import pytest
from conftest import ASTRA_REFERENCE as REF

from fabricsim.astra.config import parse_impl
from fabricsim.astra.emulator import (
    NetSpec,
    SysSpec,
    mirror_eligible,
    simulate_collective,
)
from fabricsim.astra.run import compare_collectives, run_astra
from fabricsim.cli import main
from fabricsim.errors import ConfigError
from fabricsim.workload.chakra import collective_traces, read_traces


def _rows(name):
    with open(REF / name) as f:
        return list(csv.DictReader(f))


CASES = _rows("cases.csv")
EXAMPLES = _rows("examples.csv")


def _case_id(r):
    return f"{r['backend']}-{r['algorithm']}-{r['collective']}-{Path(r['network']).stem}-{Path(r['system']).stem}-{r['size_bytes']}"


@pytest.mark.parametrize("row", CASES, ids=[_case_id(r) for r in CASES])
def test_reference_case(row, monkeypatch):
    monkeypatch.chdir(REF)
    if row["astra_status"] != "ok":
        # ASTRA-sim itself exits (halvingDoubling has no all-to-all): a clear error here
        with pytest.raises(ConfigError) as e:
            run_astra(row["workload"], row["system"], row["network"], backend=row["backend"])
        assert "\n" not in str(e.value) and row["system"] in str(e.value)
        return
    run = run_astra(row["workload"], row["system"], row["network"], backend=row["backend"])
    assert run.finish_ns_max == int(row["finish_ns_max"])
    assert run.finish_ns_min == int(row["finish_ns_min"])


@pytest.mark.parametrize("row", EXAMPLES, ids=[f"{r['label']}-{r['backend']}" for r in EXAMPLES])
def test_reference_example(row, monkeypatch):
    monkeypatch.chdir(REF)
    run = run_astra(row["workload"], row["system"], row["network"], backend=row["backend"])
    assert run.finish_ns_max == int(row["finish_ns_max"])
    assert run.finish_ns_min == int(row["finish_ns_min"])


def test_resnet50_exposed_communication(monkeypatch):
    """The spec's measurement: compute 1,082,450,000 ns (the trace's duration_micros x 1000),
    29,776 ns of communication exposed."""
    monkeypatch.chdir(REF)
    run = run_astra("legacy/resnet50/r50", "systems/sys_ring_1d.json", "networks/Ring_8.yml")
    for r in run.results:
        assert r.compute_ns == 1_082_450_000
        assert r.exposed_comm_ns == 29_776


B50 = 50 * 2**30 / 1e9  # 50 GB/s as ASTRA-sim converts it, bytes per ns


@pytest.mark.parametrize("n", [8, 256, 1024])
@pytest.mark.parametrize("backend", ["congestion-unaware", "congestion-aware"])
def test_ring_closed_form_at_scale(n, backend):
    """The spec's exact closed form for a 1-D ring all-reduce (P chunks, endpoint delay d,
    reduction 3 floor(m / local-mem-bw) per reducing step)."""
    P, S, d, L, bw = 4, 2**20, 10, 500.0, 1600
    net = NetSpec(("Ring",), (n,), (B50,), (L,))
    sys_ = SysSpec(splits=P, endpoint_delay=d, local_mem_bw=bw, impls={"all-reduce": (parse_impl("ring"),)})
    m = (S // P) // n
    expect = P * ((2 * (n - 1) + 1) * d + 2 * (n - 1) * math.floor(L + m / B50) + (n - 1) * 3 * math.floor(m / bw))
    assert simulate_collective(net, sys_, "all-reduce", S, backend) == [expect] * n


def test_mirror_mode_equals_full_emulation():
    """One NPU standing for all gives exactly what simulating every NPU gives, wherever the
    system is symmetric (random 1-3-D stacks, both backends, 1-4 active chunks, both orders)."""
    rng = random.Random(7)
    compared = 0
    while compared < 60:
        nd = rng.choice([1, 1, 2, 3])
        dims = tuple(rng.choice([2, 3, 4, 5, 8]) for _ in range(nd))
        if math.prod(dims) > 48:
            continue
        kinds = tuple(rng.choice(["Ring", "FullyConnected", "Switch"]) for _ in dims)
        backend = rng.choice(["congestion-unaware", "congestion-aware"])
        coll = rng.choice(["all-reduce", "reduce-scatter", "all-gather", "all-to-all"])
        impl = parse_impl(rng.choice(["ring", "direct", "direct2"]))
        net = NetSpec(kinds, dims, tuple(rng.choice([12.5, 50.0]) * 2**30 / 1e9 for _ in dims),
                      tuple(float(rng.choice([0, 10, 500])) for _ in dims))
        sys_ = SysSpec(splits=rng.choice([1, 2, 4]), active_chunks=rng.choice([1, 2, 4]),
                       local_mem_bw=rng.choice([0, 50, 1600]), optimization=rng.choice(["baseline", "localBWAware"]),
                       impls={coll: (impl,) * nd})
        if mirror_eligible(net, sys_, coll, backend) or (backend == "congestion-aware" and nd > 1):
            continue
        size = rng.choice([2**20, 3 * 2**18]) * sys_.splits
        full = simulate_collective(net, sys_, coll, size, backend, mode="full")
        assert simulate_collective(net, sys_, coll, size, backend, mode="mirror") == full, (kinds, dims, backend, coll, impl)
        compared += 1


def test_mirror_mode_refuses_asymmetric_systems():
    net = NetSpec(("Ring",), (8,), (B50,), (500.0,))
    sys_ = SysSpec(splits=1, impls={"all-reduce": (parse_impl("doubleBinaryTree"),)})
    with pytest.raises(ConfigError, match="mirror"):
        simulate_collective(net, sys_, "all-reduce", 2**20, mode="mirror")


def _write_system(tmp_path, **over):
    sys_ = {"scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
            "preferred-dataset-splits": 4, "collective-optimization": "localBWAware", "local-mem-bw": 1600,
            "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
            "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"]}
    sys_.update(over)
    p = tmp_path / "sys.json"
    p.write_text(json.dumps(sys_))
    return str(p)


def test_physically_impossible_answers_are_flagged(tmp_path, capsys):
    """Congestion-unaware with 4 active chunks runs an 8-NPU ring all-reduce faster than its
    links allow (spec: 9.2 ms vs the 35.0 ms bandwidth bound at 1 GiB); the aware backend
    does not."""
    system = _write_system(tmp_path, **{"active-chunks-per-dimension": 4})
    net = str(REF / "networks/Ring_8.yml")
    rc = main(["export", "chakra", "-o", str(tmp_path / "w"), "-n", "8", "-c", "all-reduce", "-s", "1GiB"])
    assert rc == 0
    unaware = compare_collectives(run_astra(str(tmp_path / "w"), system, net), "analytical")[0]
    aware = compare_collectives(run_astra(str(tmp_path / "w"), system, net, backend="congestion-aware"), "analytical")[0]
    # bound: 2(n-1)/n S over 2 links of 50 GiB/s per NPU
    bound_ns = 2 * 7 / 8 * 2**30 / (2 * 50 * 2**30) * 1e9
    assert unaware.bound_ns == pytest.approx(bound_ns)
    assert unaware.impossible and unaware.astra_ns < bound_ns
    assert not aware.impossible and aware.astra_ns >= bound_ns
    capsys.readouterr()
    rc = main(["astra", "--workload-configuration", str(tmp_path / "w"), "--system-configuration", system,
               "--network-configuration", net, "--model", "analytical"])
    out = capsys.readouterr().out
    assert rc == 0 and "faster than the links allow" in out


def test_export_round_trip(tmp_path):
    """A workload exported to Chakra and read back is the same graph."""
    from fabricsim.workload.astra_text import read_astra_text, text_to_traces

    assert main(["export", "chakra", "-o", str(tmp_path / "c"), "-n", "4", "-c", "reduce-scatter", "-s", "64MiB"]) == 0
    assert read_traces(tmp_path / "c", 4) == collective_traces("reduce-scatter", 64 * 2**20, 4)
    text = REF / "legacy" / "Resnet50_DataParallel.txt"
    assert main(["export", "chakra", "-o", str(tmp_path / "r"), "-n", "8", "--text", str(text), "--units", "converter", "--passes", "2"]) == 0
    back = read_traces(tmp_path / "r", 8)
    expect = text_to_traces(read_astra_text(text), 8, 2)
    assert back == expect
    assert len(back[0].nodes) == 2 * 215


def _one_line_exit_2(capsys, args, *words):
    rc = main(args)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    for w in words:
        assert w in err, (w, err)


def _astra_args(workload, system, network, *extra):
    return ["astra", "--workload-configuration", str(workload), "--system-configuration", str(system),
            "--network-configuration", str(network), *extra]


def test_malformed_inputs(tmp_path, capsys):
    net = REF / "networks/Ring_4.yml"
    good_sys = REF / "systems/sys_ring_1d.json"
    # a truncated .et
    for r in range(4):
        data = (REF / f"workloads/all_reduce_4_1048576/x.{r}.et").read_bytes()
        (tmp_path / f"t.{r}.et").write_bytes(data if r else data[: len(data) - 5])
    _one_line_exit_2(capsys, _astra_args(tmp_path / "t", good_sys, net), "t.0.et")
    # a rank file missing
    (tmp_path / "t.0.et").write_bytes((REF / "workloads/all_reduce_4_1048576/x.0.et").read_bytes())
    (tmp_path / "t.3.et").unlink()
    _one_line_exit_2(capsys, _astra_args(tmp_path / "t", good_sys, net), "t.3.et")
    # a YAML whose lists differ in length
    bad_net = tmp_path / "n.yml"
    bad_net.write_text("topology: [ Ring, Ring ]\nnpus_count: [ 4 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n")
    _one_line_exit_2(capsys, _astra_args(REF / "workloads/all_reduce_4_1048576/x", good_sys, bad_net), "n.yml")
    # an unknown algorithm name
    bad_sys = _write_system(tmp_path, **{"all-reduce-implementation": ["warp"]})
    _one_line_exit_2(capsys, _astra_args(REF / "workloads/all_reduce_4_1048576/x", bad_sys, net), "sys.json",
                     "all-reduce-implementation", "warp")
    # a missing preferred-dataset-splits (ASTRA-sim divides by zero)
    raw = json.loads(Path(bad_sys).read_text())
    raw["all-reduce-implementation"] = ["ring"]
    del raw["preferred-dataset-splits"]
    Path(bad_sys).write_text(json.dumps(raw))
    _one_line_exit_2(capsys, _astra_args(REF / "workloads/all_reduce_4_1048576/x", bad_sys, net), "preferred-dataset-splits")


def test_model_flow_side_by_side(monkeypatch):
    """--model flow prices each collective on the flow model: a ring all-reduce alone on a ring
    does not contend, so it equals the analytical model's answer."""
    monkeypatch.chdir(REF)
    run = run_astra("workloads/all_reduce_8_1048576/x", "systems/sys_ring_1d_s4_a1.json", "networks/Ring_8.yml")
    flow = compare_collectives(run, "flow")[0]
    ana = compare_collectives(run, "analytical")[0]
    assert flow.fabricsim_ns == pytest.approx(ana.fabricsim_ns, rel=1e-9)
    with pytest.raises(ConfigError, match="analytical"):
        compare_collectives(run, "packet")
