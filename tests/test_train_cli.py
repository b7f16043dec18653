"""`fabricsim train`: ASTRA-sim 1.0 text workloads in their original meaning, Chakra traces, the
Perfetto trace format, the breakdown plot, and one-line errors for bad configs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import ASTRA_REFERENCE
from fabricsim.cli import main
from fabricsim.engine.pricing import CommPricer
from fabricsim.engine import BREAKDOWN, simulate
from fabricsim.system import System
from fabricsim.topology import parse_topology
from fabricsim.workload.astra_text import read_astra_text
from fabricsim.workload.graph import COLLECTIVE
from fabricsim.workload.legacy import text_to_graph

LEGACY = ASTRA_REFERENCE / "legacy"
ROOT = Path(__file__).resolve().parents[1]


def write_config(tmp_path: Path, cfg: dict, name="run.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(cfg))
    return p


def train_json(capsys, cfg_path, *extra):
    rc = main(["train", str(cfg_path), "--json", *extra])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)


def ring_ar(p, size, bw, lat):
    return 2 * (p - 1) * (lat + size / (p * bw))


def file_compute_ns(wl):
    """The file's compute per iteration: every forward and weight gradient, input gradients of layers >= 1."""
    L = wl.layers
    return sum(x.fwd_compute_ns + x.wg_compute_ns for x in L) + sum(x.ig_compute_ns for x in L[1:])


# ---------------------------------------------------------------- ASTRA-sim 1.0 text workloads


def test_resnet50_text_on_8_ring_compute_and_exposed_comm(capsys, tmp_path):
    """ResNet-50 DATA on ring:8 of 50 GB/s links, 500 ns per hop. The backward issues the
    54 gradient all-reduces far faster than the ring drains them, so the (single) communication
    stream is busy from the first issue (after the forward pass and the last layer's weight
    gradient) to the end: iteration = t_first + sum of ring all-reduce times."""
    path = LEGACY / "Resnet50_DataParallel.txt"
    cfg = write_config(tmp_path, {"network": {"topology": "ring:8", "bandwidth": "50GB/s", "latency": "500ns"},
                                  "workload": {"astra_text": str(path)}, "output": {"dir": str(tmp_path / "o")}})
    s = train_json(capsys, cfg, "--no-trace", "--no-plot")
    wl = read_astra_text(path)
    compute = file_compute_ns(wl) * 1e-9
    assert compute == pytest.approx(1_082_450e-9)  # ns, as ASTRA-sim 1.0 meant them: about 1.08 ms
    assert s["breakdown_mean_s"]["compute"] == pytest.approx(compute, rel=1e-12)
    t_first = (sum(x.fwd_compute_ns for x in wl.layers) + wl.layers[-1].wg_compute_ns) * 1e-9
    comm = sum(ring_ar(8, x.wg_comm.bytes, 50e9, 500e-9) for x in wl.layers)
    assert s["iteration_time_s"] == pytest.approx(t_first + comm, rel=1e-12)
    assert s["breakdown_mean_s"]["DP"] == pytest.approx(t_first + comm - compute, rel=1e-12)
    assert s["exposed_comm_mean_s"] == pytest.approx(t_first + comm - compute, rel=1e-12)


@pytest.mark.parametrize("file,npus", [("DLRM_HybridParallel.txt", 8), ("Transformer_HybridParallel.txt", 16)])
def test_hybrid_text_workloads_run_with_their_meaning(capsys, tmp_path, file, npus):
    path = LEGACY / file
    cfg = write_config(tmp_path, {"network": {"topology": f"ring:{npus}", "bandwidth": "50GB/s", "latency": "500ns"},
                                  "workload": {"astra_text": str(path), "iterations": 2},
                                  "output": {"dir": str(tmp_path / "o"), "trace": False, "plot": False}})
    s = train_json(capsys, cfg)
    wl = read_astra_text(path)
    compute = file_compute_ns(wl) * 1e-9
    # breakdown.csv: per iteration and NPU; over the 2 iterations the mean NPU computes the file's compute twice
    rows = [r.split(",") for r in (tmp_path / "o" / "breakdown.csv").read_text().splitlines()[1:]]
    assert len(rows) == 2 * npus
    assert sum(float(r[3]) for r in rows) / npus == pytest.approx(2 * compute, rel=1e-12)
    # the headline of 2 iterations is the last one (no steady state without a middle iteration), per iteration
    assert s["steady_state"] is None and s["iteration_time_s"] == s["last_iteration_time_s"] >= compute / 2
    assert s["first_iteration_time_s"] + s["last_iteration_time_s"] == pytest.approx(s["total_s"], rel=1e-12)
    assert sum(s["breakdown_mean_s"].values()) == pytest.approx(s["iteration_time_s"], rel=1e-9)
    g = text_to_graph(wl, npus)
    sizes = {len(grp) for grp in g.groups}
    if file.startswith("Transformer"):
        # model_parallel_NPU_group: 4 -> MP groups of 4 consecutive NPUs, DP groups of npus/4 at stride 4
        assert (0, 1, 2, 3) in g.groups and tuple(range(0, npus, 4)) in g.groups
        assert sizes == {4, npus // 4}
        assert s["breakdown_mean_s"]["MP"] > 0
    else:
        colls = [g.coll[t] for t in np.flatnonzero(g.kind == COLLECTIVE)]
        from fabricsim.vocab import COLLECTIVES

        assert sorted({COLLECTIVES[c] for c in colls}) == ["all-reduce", "all-to-all"]
        assert sizes == {npus}


def test_dlrm_embedding_all_to_all_waits_for_the_top_mlp():
    wl = read_astra_text(LEGACY / "DLRM_HybridParallel.txt")
    g = text_to_graph(wl, 4)
    res = simulate(g, System(), CommPricer(parse_topology("ring:4", "50GB/s", "500ns")))
    name = {g.name(t): t for t in range(len(g))}
    a2a = [t for t in range(len(g)) if "Embedding fwd ALLTOALL" == g.name(t)][0]
    top0 = [t for t in range(len(g)) if g.name(t) == "MLP_Top_0 fwd" and g.npu[t] == 0][0]
    bottom = [t for t in range(len(g)) if g.name(t) == "MLP_Bottom_0 fwd" and g.npu[t] == 0][0]
    assert res.start[top0] >= res.end[a2a]  # the interaction needs the exchanged embeddings
    assert res.start[bottom] < res.end[a2a]  # the bottom MLP runs while they travel
    assert name  # graph has names


def test_chakra_traces_run_through_the_same_engine(tmp_path, capsys):
    """Chakra's conversion of the ResNet-50 text (compute stored as microseconds): the compute is
    1000x the text's ns, all but the last (conv1) all-reduce hide behind it."""
    cfg = write_config(tmp_path, {"network": {"topology": "ring:8", "bandwidth": "50GB/s", "latency": "500ns"},
                                  "workload": {"chakra": str(LEGACY / "resnet50" / "r50")},
                                  "output": {"dir": str(tmp_path / "o"), "trace": False, "plot": False}})
    s = train_json(capsys, cfg)
    wl = read_astra_text(LEGACY / "Resnet50_DataParallel.txt")
    compute = file_compute_ns(wl) * 1e-6
    assert s["breakdown_mean_s"]["compute"] == pytest.approx(compute, rel=1e-12)
    last = ring_ar(8, wl.layers[0].wg_comm.bytes, 50e9, 500e-9)
    assert s["iteration_time_s"] == pytest.approx(compute + last, rel=1e-12)


# ---------------------------------------------------------------- Perfetto trace and plot


def validate_trace_event_format(doc: dict) -> dict:
    """Checks of the Chrome/Perfetto trace-event JSON format (docs/specs/formats.md (c)).
    Returns {pid: {tid: thread name}}."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    names: dict = {}
    for e in doc["traceEvents"]:
        assert isinstance(e["name"], str) and e["ph"] in "XBEiIMCsftben"
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index", "thread_sort_index")
            key = "name" if e["name"].endswith("_name") else "sort_index"
            assert key in e["args"]
            if e["name"] == "thread_name":
                names.setdefault(e["pid"], {})[e["tid"]] = e["args"]["name"]
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
        if "args" in e:
            assert isinstance(e["args"], dict)
        if "cat" in e:
            assert isinstance(e["cat"], str)
        if e["ph"] in "stf":
            assert "id" in e
    json.dumps(doc)  # plain JSON types only
    return names


def test_gpt3_config_writes_a_perfetto_trace_and_a_breakdown_png(tmp_path, capsys):
    cfg = ROOT / "configs" / "gpt3-175b-64.yaml"
    s = train_json(capsys, cfg, "--out", str(tmp_path))
    doc = json.loads((tmp_path / "trace.json").read_text())
    threads = validate_trace_event_format(doc)
    # a track for compute, MP collectives, PP sends, PP receives and DP collectives on each of the 64 NPUs
    assert sorted(threads) == list(range(64))
    assert sorted(threads[0].values()) == ["DP", "MP", "PP recv", "PP send", "compute"]
    tid = {v: k for k, v in threads[0].items()}
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    comp0 = [e for e in xs if e["pid"] == 0 and e["tid"] == tid["compute"]]
    mp0 = [e for e in xs if e["pid"] == 0 and e["tid"] == tid["MP"]]
    # NPU 0's compute track adds up to its compute time (us on a whole-ns grid in the trace, s in breakdown.csv)
    summary_rows = {int(r.split(",")[1]): r for r in (tmp_path / "breakdown.csv").read_text().splitlines()[1:]}
    comp_s = float(summary_rows[0].split(",")[3])
    assert sum(e["dur"] for e in comp0) == pytest.approx(comp_s * 1e6, abs=1e-3 * len(comp0))
    # Megatron: 2 + 2 MP all-reduces per block per microbatch on stage 0 (24 blocks, 8 microbatches), 2 more
    # for the forward that full recompute re-runs before each backward, + the embedding's (not recomputed)
    assert len(mp0) == (2 + 2 + 2) * 8 * 24 + 8
    # on one track any two events are disjoint or nested (Perfetto's rule), in the trace processor's ns
    assert partial_overlaps(xs) == 0
    assert max(e["ts"] + e["dur"] for e in xs) == pytest.approx(s["total_s"] * 1e6, abs=1e-3)
    # the PNG: a real image with the bars drawn (not blank)
    import matplotlib.image as mpimg

    png = tmp_path / "breakdown.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = mpimg.imread(png)
    assert img.shape[0] > 300 and img.shape[1] > 300
    blue = np.array([0x4C, 0x72, 0xB0]) / 255  # compute colour
    assert (np.abs(img[..., :3] - blue).sum(axis=-1) < 0.02).sum() > 1000
    assert set(s["stages"]) == {"0", "1", "2", "3"}
    assert s["config"]["workload"]["parallelism"]["mp"] == 8  # the run says what it ran
    assert json.loads((tmp_path / "summary.json").read_text())["config"] == s["config"]
    # pipeline transfers: an arrow (flow start/finish with the same id) from each sender to its receiver
    starts = {e["id"]: e for e in doc["traceEvents"] if e["ph"] == "s"}
    ends = {e["id"]: e for e in doc["traceEvents"] if e["ph"] == "f"}
    assert starts and starts.keys() == ends.keys()
    assert all(ends[i]["bp"] == "e" and starts[i]["pid"] != ends[i]["pid"] for i in starts)


def partial_overlaps(xs: list[dict]) -> int:
    """X events that overlap an earlier event of their (pid, tid) without nesting in it, with
    times as the trace processor reads them (integer ns)."""
    rows: dict = {}
    for e in xs:
        a = round(e["ts"] * 1000)
        rows.setdefault((e["pid"], e["tid"]), []).append((a, a + round(e["dur"] * 1000)))
    bad = 0
    for iv in rows.values():
        open_ends: list[int] = []  # ends of the enclosing events, innermost last
        for a, b in sorted(iv, key=lambda x: (x[0], -x[1])):
            while open_ends and open_ends[-1] <= a:
                open_ends.pop()
            bad += bool(open_ends and b > open_ends[-1])
            open_ends.append(b)
    return bad


def test_trace_npus_option_limits_rows(tmp_path, capsys):
    cfg = ROOT / "configs" / "gpt3-175b-64.yaml"
    train_json(capsys, cfg, "--out", str(tmp_path), "--trace-npus", "0,8,16", "--no-plot")
    doc = json.loads((tmp_path / "trace.json").read_text())
    assert {e["pid"] for e in doc["traceEvents"]} == {0, 8, 16}
    assert not (tmp_path / "breakdown.png").exists()


def test_breakdown_csv_rows_sum_to_the_makespan(tmp_path, capsys):
    cfg = write_config(tmp_path, {
        "network": {"topology": "torus:2x4", "bandwidth": "10GB/s", "latency": "1us"},
        "system": {"npu": {"peak": "100TFLOP/s", "memory_bandwidth": "1TB/s", "efficiency": 0.5}},
        "workload": {"model": "resnet50", "batch": 64, "parallelism": {"dp": 8, "dp_bucket": "25MiB"}},
        "output": {"dir": str(tmp_path / "o"), "trace": False, "plot": False}})
    s = train_json(capsys, cfg)
    rows = (tmp_path / "o" / "breakdown.csv").read_text().splitlines()
    assert rows[0].split(",") == ["iteration", "npu", "stage"] + [f"{k}_s" for k in BREAKDOWN] + ["iteration_s"]
    assert len(rows) == 1 + 8
    for r in rows[1:]:
        vals = [float(x) for x in r.split(",")[3:]]
        assert sum(vals[:-1]) == pytest.approx(vals[-1], rel=1e-9)
        assert vals[-1] == pytest.approx(s["total_s"], rel=1e-12)  # 1 iteration: the whole run


def test_table_output(tmp_path, capsys):
    cfg = ROOT / "configs" / "gpt3-175b-64.yaml"
    assert main(["train", str(cfg), "--out", str(tmp_path), "--no-trace", "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "iteration time:" in out and "exposed MP" in out and "stage 3" in out


# ---------------------------------------------------------------- errors


BASE = {"network": {"topology": "ring:8"}, "workload": {"model": "resnet50", "batch": 8, "parallelism": {"dp": 8}}}


@pytest.mark.parametrize("patch,words", [
    ({"workload": {"model": "resnet51"}}, ["workload.model", "resnet51", "resnet50"]),
    ({"workload": {"batch": 12}}, ["workload.batch", "12", "multiple"]),
    ({"workload": {"parallelism": {"dp": 4}}}, ["parallelism", "8 NPUs"]),
    ({"workload": {"parallelism": {"schedule": "zb"}}}, ["workload.parallelism.schedule", "zb", "gpipe"]),
    ({"workload": {"parallelism": {"dp_bucket": "lots"}}}, ["dp_bucket", "lots", "accepted"]),
    ({"system": {"npu": {"peak": "fast"}}}, ["system.npu.peak", "fast", "FLOP/s"]),
    ({"system": {"npu": {"efficiency": 1.5}}}, ["system.npu.efficiency", "1.5", "(0, 1]"]),
    ({"system": {"scheduling": {"policy": "RANDOM"}}}, ["system.scheduling.policy", "RANDOM", "LIFO"]),
    ({"system": {"colour": "red"}}, ["system.colour", "unknown field", "npu"]),
    ({"network": {"topology": "ring:8", "model": "magic"}}, ["model", "magic", "congestion-aware"]),
    ({"network": {"topology": "ring:8", "algorithms": {"all-reduce": "swing2"}}}, ["algorithm", "swing2"]),
    ({"workload": {"astra_text": "x.txt"}}, ["workload", "exactly one"]),
    ({"system": {"endpoint": {"policy": "telepathy"}}}, ["system.endpoint.policy", "telepathy", "ideal, npu, comp-opt"]),
    ({"system": {"endpoint": {"policy": "npu", "units": 1.0, "memory": 0.5}}}, ["system.endpoint.units", "1.0", "(0, 1)"]),
    ({"system": {"endpoint": {"policy": "npu", "units": 0.2, "memory": 1.5}}}, ["system.endpoint.memory", "1.5", "(0, 1)"]),
    ({"system": {"endpoint": {"policy": "npu", "units": 0.0, "memory": 0.5}}}, ["system.endpoint.units", "0.0", "(0, 1)"]),
    ({"system": {"endpoint": {"policy": "npu", "units": 0.2}}}, ["system.endpoint.memory", "required"]),
    ({"system": {"endpoint": {"policy": "comp-opt", "colour": 1}}}, ["system.endpoint.colour", "unknown field", "units"]),
    ({"system": {"endpoint": {"comm_compute_fraction": 0.2}}}, ["system.endpoint.comm_compute_fraction", "unknown field"]),
    ({"system": {"endpoint": {"policy": "ace", "sram": "-4MiB", "alu_throughput": "1TB/s", "dma_bandwidth": "1TB/s"}}},
     ["system.endpoint.sram", "-4MiB", "not negative"]),
    ({"system": {"endpoint": {"policy": "ace", "sram": "0B", "alu_throughput": "1TB/s", "dma_bandwidth": "1TB/s"}}},
     ["system.endpoint.sram", "0", "size > 0"]),
    ({"system": {"endpoint": {"policy": "ace", "sram": "4MiB", "alu_throughput": "fast", "dma_bandwidth": "1TB/s"}}},
     ["system.endpoint.alu_throughput", "fast", "bandwidth"]),
    ({"system": {"endpoint": {"policy": "ace", "sram": "4MiB", "alu_throughput": "1TB/s"}}},
     ["system.endpoint.dma_bandwidth", "required"]),
    ({"system": {"npu": {"unit_bandwidth": "0TB/s"}}}, ["system.npu.unit_bandwidth", "0TB/s"]),
    ({"system": {"endpoint": {"policy": "offload", "rate": "-1GB/s"}}}, ["system.endpoint.rate", "-1GB/s", "bandwidth"]),
    ({"system": {"endpoint": {"policy": "offload"}}}, ["system.endpoint.rate", "required"]),
    ({"system": {"endpoint": {"policy": "ideal", "rate": "1GB/s"}}}, ["system.endpoint.rate", "unknown field"]),
    ({"network": {"topology": "ring:8", "algorithms": {"all-reduce": "ring,chunks=-3"}}},
     ["network.algorithms.all-reduce.chunks", "-3", ">= 1"]),
    ({"network": {"topology": "ring:8", "algorithms": {"all-reduce": "in_network,lockstep=sometimes"}}},
     ["network.algorithms.all-reduce.lockstep", "sometimes", "true or false"]),
])
def test_bad_config_is_one_line_and_exit_2(tmp_path, capsys, patch, words):
    cfg = json.loads(json.dumps(BASE))
    for k, v in patch.items():
        if isinstance(v, dict) and k in cfg:
            for kk, vv in v.items():
                if isinstance(vv, dict) and isinstance(cfg[k].get(kk), dict):
                    cfg[k][kk].update(vv)
                else:
                    cfg[k][kk] = vv
        else:
            cfg[k] = v
    p = write_config(tmp_path, cfg)
    rc = main(["train", str(p), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    for w in words:
        assert w in err, err


def test_missing_file_and_bad_yaml(tmp_path, capsys):
    assert main(["train", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err
    p = tmp_path / "bad.yaml"
    p.write_text("network: [\n")
    assert main(["train", str(p)]) == 2
    assert "YAML" in capsys.readouterr().err


def test_console_script_exit_code(tmp_path):
    p = write_config(tmp_path, {**BASE, "workload": {**BASE["workload"], "batch": 12}})
    exe = Path(sys.executable).with_name("fabricsim")
    r = subprocess.run([str(exe), "train", str(p)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "workload.batch" in r.stderr


def test_chakra_groups_send_recv_and_all_gather_sizes(tmp_path, capsys):
    """Hand-made traces on 4 NPUs: compute 2 us; an all-reduce of 1 MB in groups {0,1} and {2,3}
    (pg_name via the groups JSON); NPU 0 sends 4 MB to NPU 2 and NPU 2 then computes 3 us; an
    all-gather over all NPUs with comm_size 1 MB (each NPU's contribution)."""
    from fabricsim.workload.chakra import COMM_COLL_NODE, COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE, EtNode, EtTrace, write_traces

    traces = []
    for r in range(4):
        nodes = [EtNode(0, "c", COMP_NODE, duration_micros=2, attrs={"is_cpu_op": False}),
                 EtNode(1, "ar", COMM_COLL_NODE, data_deps=(0,),
                        attrs={"comm_type": 0, "comm_size": 1_000_000, "pg_name": "1" if r < 2 else "2"})]
        if r == 0:
            nodes.append(EtNode(2, "send", COMM_SEND_NODE, data_deps=(1,),
                                attrs={"comm_dst": 2, "comm_size": 4_000_000, "comm_tag": 7}))
        if r == 2:
            nodes.append(EtNode(2, "recv", COMM_RECV_NODE, data_deps=(1,),
                                attrs={"comm_src": 0, "comm_size": 4_000_000, "comm_tag": 7}))
            nodes.append(EtNode(3, "c2", COMP_NODE, duration_micros=3, data_deps=(2,), attrs={"is_cpu_op": False}))
        last = nodes[-1].id
        nodes.append(EtNode(9, "ag", COMM_COLL_NODE, data_deps=(last,), attrs={"comm_type": 2, "comm_size": 1_000_000}))
        traces.append(EtTrace(r, "0.0.4", {}, tuple(nodes)))
    write_traces(tmp_path / "t", traces)
    (tmp_path / "groups.json").write_text(json.dumps({"1": [0, 1], "2": [2, 3]}))
    B, a = 50e9, 1e-6
    cfg = write_config(tmp_path, {"network": {"topology": "switch:4", "bandwidth": "50GB/s", "latency": "1us"},
                                  "workload": {"chakra": "t", "comm_groups": "groups.json"},
                                  "output": {"dir": "o", "trace": False, "plot": False}})
    s = train_json(capsys, cfg)
    ar = 2 * (2 * a + 1e6 / 2 / B)  # ring of 2 through the switch: 2 steps of S/2, 2 hops each
    send = 2 * a + 4e6 / B
    ag = 3 * (2 * a + 1e6 / B)  # ring all-gather of 4 x 1 MB: 3 steps of 1 MB
    assert s["total_s"] == pytest.approx(2e-6 + ar + send + 3e-6 + ag, rel=1e-12)


def test_export_generated_workload_to_chakra_and_back(tmp_path, capsys):
    """A zoo model under MP-DP-PP exported as Chakra traces (+ communicator groups) and read back
    runs to the same times: the per-NPU traces say everything the graph says."""
    cfg = write_config(tmp_path, {
        "network": {"topology": "torus:2x4", "bandwidth": "10GB/s", "latency": "1us"},
        "system": {"npu": {"peak": "100TFLOP/s", "memory_bandwidth": "1TB/s", "efficiency": 0.5},
                   "scheduling": {"comm_streams": "per-category"}},
        "workload": {"model": "gpt3-175b", "batch": 4, "iterations": 1,
                     "parallelism": {"mp": 2, "pp": 2, "dp": 2, "microbatches": 2, "zero": 2}},
        "output": {"dir": "o", "trace": False, "plot": False}}, "gen.yaml")
    assert main(["export", "chakra", "--train", str(cfg), "-o", str(tmp_path / "et" / "gpt")]) == 0
    capsys.readouterr()
    groups = json.loads((tmp_path / "et" / "gpt.groups.json").read_text())
    # MP pairs and DP pairs (Megatron's order: dp right after mp)
    assert sorted(map(tuple, groups.values())) == [(0, 1), (0, 2), (1, 3), (2, 3), (4, 5), (4, 6), (5, 7), (6, 7)]
    direct = train_json(capsys, cfg)
    back = dict(yaml.safe_load(cfg.read_text()))
    back["workload"] = {"chakra": "et/gpt", "comm_groups": "et/gpt.groups.json"}
    s = train_json(capsys, write_config(tmp_path, back, "back.yaml"), "--force")  # into the same output.dir
    assert s["total_s"] == pytest.approx(direct["total_s"], rel=1e-12)
    for k, v in direct["breakdown_mean_s"].items():
        assert s["breakdown_mean_s"][k] == pytest.approx(v, rel=1e-9, abs=1e-15)
