"""Hostile config files (issue 17, the YAML/JSON input layer): every defect ends in exit code 2 and
one stderr line that names the file (and line or field) and the value, or in the right answer.

Covers `fabricsim.config` (the file reader and the strict YAML loader), the training config
(`fabricsim.train`, `fabricsim.sections`), traffic files (`network.traffic`) and the ASTRA-sim
readers (`astra.config*`, `astra.run`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fabricsim.cli import main
from fabricsim.config import load_yaml_text, validate
from fabricsim.errors import ConfigError
from fabricsim.limits import raised_limits
from fabricsim.train import TrainConfig, load_train_config, run_train

sys.path.insert(0, str(Path(__file__).parent))
from hostile import TINY_TRAFFIC, TINY_TRAIN  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ASTRA = ROOT / "reference" / "astra-sim"
ASTRA_ARGS = ["astra", "--workload-configuration", f"{ASTRA}/workloads/all_reduce_8_1048576/x",
              "--system-configuration", f"{ASTRA}/systems/sys_ring_1d_s4_a1.json", "-q"]

TRAIN, TRAFFIC = TINY_TRAIN, TINY_TRAFFIC  # the same small files as the hostile-input table


def _sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


def _write(tmp_path: Path, text: str | bytes, name: str = "t.yaml") -> Path:
    p = tmp_path / name
    p.write_bytes(text) if isinstance(text, bytes) else p.write_text(text)
    return p


def run(argv) -> int:
    """`fabricsim ARGV...` in this process (paths as text)."""
    return main([str(a) for a in argv])


def one_error(capsys, argv, *words) -> str:
    """Run the CLI; assert exit 2 and exactly one stderr line `fabricsim: error: ...` containing `words`."""
    rc = run(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("fabricsim: error: "), err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def train_error(tmp_path, capsys, text, *words, extra=()):
    p = _write(tmp_path, text)
    return one_error(capsys, ["train", p, "--out", tmp_path / "o", "-q", *extra], "t.yaml", *words)


def traffic_error(tmp_path, capsys, text, *words):
    return one_error(capsys, ["traffic", _write(tmp_path, text), "-q"], "t.yaml", *words)


# ---- 1, 4: the file itself --------------------------------------------------------------------------


def test_non_utf8_is_one_line_naming_the_file(tmp_path, capsys):
    bad = b"network: {topology: '\xff\xfe'}\n"
    train_error(tmp_path, capsys, bad, "not UTF-8 text", "0xff")
    traffic_error(tmp_path, capsys, b"topology: '\xff'\n", "not UTF-8 text")
    one_error(capsys, ["export", "chakra", "-o", tmp_path / "ar", "--train", _write(tmp_path, bad, "x.yaml")],
              "x.yaml", "not UTF-8 text")
    one_error(capsys, ["reproduce", "swing", "--quick", "--config", _write(tmp_path, b"\xff\xfe\x00", "s.yaml"),
                       "--out", tmp_path / "r", "-q"], "s.yaml", "not UTF-8 text")


def test_non_utf8_text_workload_names_its_file(tmp_path, capsys):
    _write(tmp_path, b"DATA\n\xff\n", "w.txt")
    text = _sub(TRAIN, "{model: resnet50, batch: 8, iterations: 1, parallelism: {dp: 4}}", "{astra_text: w.txt}")
    one_error(capsys, ["train", _write(tmp_path, text), "--out", tmp_path / "o", "-q"], "w.txt:2", "not UTF-8 text")


def test_devices_folders_and_oversized_files_are_refused_before_reading(tmp_path, capsys):
    one_error(capsys, ["train", "/dev/zero", "-q"], "/dev/zero", "not a regular file")
    one_error(capsys, ["traffic", tmp_path, "-q"], str(tmp_path), "a folder")
    p = _write(tmp_path, TRAIN)
    one_error(capsys, ["--limit", "file_bytes=100", "train", p, "-q"], "t.yaml", f"{len(TRAIN):,} bytes",
              "file_bytes")
    one_error(capsys, ["train", tmp_path / "missing.yaml", "-q"], "missing.yaml", "no such file")


# ---- 2, 3, 5, 6: the YAML loader ---------------------------------------------------------------------


@pytest.mark.parametrize("text, words", [
    ("a: " + "[" * 3000 + "]" * 3000 + "\n", ["t.yaml:1", "100 levels"]),
    ("a:\n" + "".join("  " * (i + 1) + "b:\n" for i in range(1500)), ["t.yaml:100", "100 levels"]),
    ("".join(f"a{i}: &a{i} [{'*a' + str(i - 1) if i else 1}]\n" for i in range(300)), ["aliases are expanded"]),
    ("a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
     "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
     "f: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n", ["1,111,111 values"]),
    ("a: &a [*a]\n", ["recursive alias"]),
    ("n: 99999999999999999999999\n", ["t.yaml:1: n", "99999999999999999999999", "64 bits"]),
    ("n: " + "9" * 5000 + "\n", ["t.yaml:1: n", "64 bits"]),
    ("a: 1\nb: 2\na: 3\n", ["t.yaml:3: a", "key given twice (first at line 1)"]),
    ("p: !!set {DP, MP}\n", ["t.yaml:1: p", "!!set", "plain data"]),
    ("p: !!omap [a: 1]\n", ["!!omap"]),
    ("p: !!binary aGVsbG8=\n", ["!!binary"]),
    ("d: 2024-01-01\n", ["t.yaml:1: d", "2024-01-01", "date"]),
    ("o: !!python/object:os.system x\n", ["python/object"]),
    ("o: !custom x\n", ["!custom"]),
])
def test_strict_loader_refusals(text, words):
    with pytest.raises(ConfigError) as exc:
        load_yaml_text(text, "t.yaml")
    msg = str(exc.value)
    assert "\n" not in msg and len(msg) < 400, msg
    for w in words:
        assert w in msg, (w, msg)


def test_strict_loader_keeps_plain_data_and_merge_keys():
    data = load_yaml_text("base: &b {x: 1, y: 2}\nc: {<<: *b, x: 3}\nn: [1, 2.5, x, null, true, -9223372036854775808]\n",
                          "t.yaml")
    assert data == {"base": {"x": 1, "y": 2}, "c": {"x": 3, "y": 2}, "n": [1, 2.5, "x", None, True, -2**63]}


@pytest.mark.parametrize("old, new, words", [
    ("iterations: 1", "iterations: 99999999999999999999999", ["workload.iterations", "64 bits"]),
    ("workload:", "workload: {model: vgg16}\nworkload:", ["t.yaml:4: workload", "key given twice"]),
    ("system: {", "system: {scheduling: {priorities: !!set {DP, MP, IO, PP, other}}, ",
     ["system.scheduling.priorities", "!!set"]),
    ("system: {", "system: {scheduling: {priorities: []}, ", ["system.scheduling.priorities", "[]", "non-empty"]),
    ("system: {", "system: {scheduling: {priorities: [DP, DP]}, ", ["priorities", "distinct"]),
])
def test_train_loader_errors(tmp_path, capsys, old, new, words):
    train_error(tmp_path, capsys, _sub(TRAIN, old, new), *words)


# ---- 7: base_dir is not a field ----------------------------------------------------------------------


def test_base_dir_is_refused_and_paths_stay_relative_to_the_file(tmp_path, capsys):
    train_error(tmp_path, capsys, TRAIN + "base_dir: /etc\n", "base_dir", "/etc", "unknown field")
    sub = tmp_path / "sub"
    sub.mkdir()
    cfg = load_train_config(_write(sub, TRAIN))
    assert Path(cfg.base_dir) == sub.resolve() and cfg.source == str(sub / "t.yaml")
    assert "base_dir" not in cfg.model_dump()
    made = validate(TrainConfig, {"network": {"topology": "ring:4"}, "workload": {"model": "resnet50"}}, "x",
                    context={"base_dir": "/data"})
    assert made.base_dir == "/data"


# ---- 8: bare numbers in files need units, as on the command line -------------------------------------


@pytest.mark.parametrize("old, new, words", [
    ("latency: 1us", "latency: 100", ["network.latency", "100", "a time such as"]),
    ("bandwidth: 100GB/s", "bandwidth: 400", ["network.bandwidth", "400", "a bandwidth such as"]),
    ("bandwidth: 100GB/s", "bandwidth: [400]", ["network.bandwidth", "400"]),
    ("peak: 100TFLOP/s", "peak: 100000000000000", ["system.npu.peak", "100000000000000", "compute rate"]),
    ("memory_bandwidth: 1TB/s", "memory_bandwidth: 1.0e+12", ["system.npu.memory_bandwidth", "1000000000000.0"]),
])
def test_bare_numbers_in_a_train_config_are_refused(tmp_path, capsys, old, new, words):
    line = train_error(tmp_path, capsys, _sub(TRAIN, old, new), *words)
    # the same text on the command line is refused with the same phrase
    one_error(capsys, ["collective", "-t", "ring:4", "-L", "100"], "latency", "a time such as")
    assert "accepted: a " in line


def test_zero_latency_bare_sizes_and_python_floats_are_accepted(tmp_path, capsys):
    text = _sub(_sub(TRAIN, "latency: 1us", "latency: 0"), "dp: 4}", "dp: 4, dp_bucket: 4096}")
    assert run(["train", _write(tmp_path, text), "--out", tmp_path / "o", "-q"]) == 0
    capsys.readouterr()
    cfg = TrainConfig.model_validate({  # Python numbers are SI values
        "network": {"topology": "ring:4", "bandwidth": 100e9, "latency": 1e-6},
        "system": {"npu": {"peak": 100e12, "memory_bandwidth": 1e12, "efficiency": 0.5}},
        "workload": {"model": "resnet50", "batch": 8, "parallelism": {"dp": 4}}})
    assert run_train(cfg).result.iteration_time > 0


def test_bare_numbers_in_a_traffic_file(tmp_path, capsys):
    traffic_error(tmp_path, capsys, _sub(TRAFFIC, "latency: 1us", "latency: 100"), "latency", "a time such as")
    traffic_error(tmp_path, capsys, _sub(TRAFFIC, "start: 0us}\ncoll", "start: 5}\ncoll"), "flows[0].start", "5")
    assert run(["traffic", _write(tmp_path, _sub(TRAFFIC, "size: 1MiB, start: 0us}\ncoll",
                                                  "size: 1048576, start: 0}\ncoll")), "--json", "-q"]) == 0
    assert json.loads(capsys.readouterr().out)["items"][0]["bytes"] == 2**20


# ---- 9, 10, 16: types are not coerced; fields that do not apply; the value is always shown -----------


@pytest.mark.parametrize("old, new, words", [
    ("efficiency: 0.5", "efficiency: true", ["system.npu.efficiency", "True", "a number"]),
    ("iterations: 1", "iterations: 1.5", ["workload.iterations", "1.5", "an integer"]),
    ("iterations: 1", "iterations: '2'", ["workload.iterations", "'2'", "an integer"]),
    ("batch: 8", "batch: 0", ["workload.batch", "invalid value 0", "an integer >= 1"]),
    ("dp: 4}", "dp: 4, zero: false}", ["parallelism.zero", "False"]),
    ("plot: false", "plot: 'yes'", ["output.plot", "'yes'", "true or false"]),
    ("system: {", "system: {scheduling: {chunks: true}, ", ["system.scheduling.chunks", "True", "an integer"]),
    ("'ring:4'", "5", ["network.topology", "invalid value 5", "spec string"]),
    ("output: {", "output: {trace_npus: 1.5, ", ["output.trace_npus", "1.5", "text or an integer"]),
    ("parallelism: {dp: 4}", "parallelism: {dp: 4}, mp: 2", ["workload.mp", "invalid value 2", "does not apply"]),
    ("system: {", "system: {endpoint: {policy: npu, units: true, memory: 0.3}, ", ["system.endpoint.units", "True"]),
    ("system: {", "system: {endpoint: {policy: npu, units: '0.2', memory: 0.3}, ", ["system.endpoint.units", "'0.2'"]),
    ("iterations: 1,", "iterations: 1, input_prefetch: true,", ["workload.input_prefetch", "input_loading"]),
])
def test_train_values_are_typed_and_shown(tmp_path, capsys, old, new, words):
    train_error(tmp_path, capsys, _sub(TRAIN, old, new), *words)


def test_fields_that_do_not_apply_to_a_text_workload(tmp_path, capsys):
    text = _sub(TRAIN, "{model: resnet50, batch: 8, iterations: 1, parallelism: {dp: 4}}",
                "{astra_text: w.txt, parallelism: {dp: 4}}")
    train_error(tmp_path, capsys, text, "workload.parallelism", "does not apply to a text workload")


# ---- 11: traffic files -------------------------------------------------------------------------------

C0 = "ring, size: 1MiB, start: 0us}"  # the collective's line


@pytest.mark.parametrize("old, new, words", [
    (C0, "ring, size: 1MiB, start: 0us, group: [a, b]}", ["collectives[0].group", "['a', 'b']"]),
    (C0, "ring, size: 1MiB, start: 0us, group: [1.5, 2.7]}", ["collectives[0].group", "[1.5, 2.7]"]),
    (C0, "ring, size: 1MiB, start: 0us, group: 0-9}", ["collectives[0].group", "ring:4"]),
    (C0, "ring, size: 1MiB, start: 0us, group: 0-99999999999}", ["collectives[0].group", "ranks"]),
    ("dst: 2", "dst: 0", ["flows[0].dst", "invalid value 0", "to itself"]),
    ("dst: 2", "dst: 9", ["flows[0].dst", "9", "a node 0..3"]),
    ("src: 0", "src: '0'", ["flows[0].src", "'0'", "an integer"]),
    ("start: 0us}\ncoll", "start: 0us, count: 1000000000}\ncoll", ["flows[0].count", "1,000,000,000 flows", "--limit flows"]),
    ("start: 0us}\ncoll", "start: 0us, priority: 99999999999999999999}\ncoll", ["flows[0].priority", "64 bits"]),
    ("algorithm: ring,", "algorithm: ring, options: {chunks: abc},", ["collectives[0]", "chunks", "'abc'"]),
    ("algorithm: ring,", "algorithm: ring, options: {dims: 3x3},", ["collectives[0]", "dims", "ring accepts"]),
    ("algorithm: ring,", "algorithm: nope,", ["collectives[0].algorithm", "'nope'"]),
    ("latency: 1us", "latency: [1us, 2us]", ["latency", "ring:4"]),
    ("latency: 1us\n", "latency: 1us\nlatency: 2us\n", ["t.yaml:4: latency", "key given twice"]),
])
def test_traffic_errors_name_the_file_and_item(tmp_path, capsys, old, new, words):
    traffic_error(tmp_path, capsys, _sub(TRAFFIC, old, new), *words)


def test_traffic_flow_counts_add_up_against_the_limit(tmp_path, capsys):
    text = _sub(TRAFFIC, "start: 0us}\ncoll", "start: 0us, count: 3}\n  - {src: 1, dst: 3, size: 1MiB, count: 3}\ncoll")
    one_error(capsys, ["--limit", "flows=5", "traffic", _write(tmp_path, text), "-q"], "t.yaml: flows", "6 flows")
    assert run(["--limit", "flows=6", "traffic", _write(tmp_path, text), "-q"]) == 0


# ---- 12, 13, 14: limits before building; errors name the file; trace_npus ---------------------------


@pytest.mark.parametrize("old, new, words", [
    ("iterations: 1", "iterations: 1000000000", ["workload.iterations", "1,000,000,000 iterations", "--limit iterations"]),
    ("system: {", "system: {scheduling: {chunks: 1000000000}, ", ["system.scheduling.chunks", "--limit chunks"]),
    ("latency: 1us", "latency: [1us, 2us, 3us]", ["network.latency", "1us,2us,3us"]),
    ("'ring:4'", "'ring:4', nope: 1", ["network.nope", "unknown field"]),
    ("'ring:4'", "'torus:0x4'", ["network.topology"]),
    ("dp: 4}", "dp: 2}", ["workload.parallelism", "4 NPUs"]),
    ("output: {", "output: {trace_npus: 0-99999999999, ", ["output.trace_npus", "0-99999999999", "--limit ranks"]),
])
def test_train_limits_and_build_errors_name_the_file(tmp_path, capsys, old, new, words):
    train_error(tmp_path, capsys, _sub(TRAIN, old, new), *words)


def test_task_limit_is_checked_from_the_strategy(tmp_path, capsys):
    p = _write(tmp_path, TRAIN)
    line = one_error(capsys, ["--limit", "tasks=100", "train", p, "--out", tmp_path / "o", "-q"], "t.yaml: workload",
                     "resnet50 MP(1)-DP(4)-PP(1)", "tasks, beyond the limit of 100")
    with raised_limits(tasks=100):
        with pytest.raises(ConfigError):
            run_train(load_train_config(p))
    n = int(line.split("it needs ")[1].split(" tasks")[0].replace(",", ""))
    assert run(["train", p, "--out", tmp_path / "o", "--json", "-q"]) == 0
    assert n == json.loads(capsys.readouterr().out)["tasks"]  # the estimate is the graph's size here


@pytest.mark.parametrize("model, kw", [
    ("resnet50", dict(dp=4, batch=8, zero=2, dp_bucket=25e6, iterations=2)),
    ("gpt3-175b", dict(mp=2, dp=2, pp=2, microbatches=2, batch=4, schedule="gpipe", pp_send="multicast")),
    ("gpt3-175b", dict(mp=2, dp=1, pp=2, microbatches=2, batch=2, stage_layout="interleaved", weight_streaming=True)),
    ("dlrm", dict(dp=4, batch=64, iterations=2)),
    ("vgg16", dict(dp=2, batch=4, input_loading=True, input_prefetch=True, iterations=3)),
])
def test_task_estimate_bounds_the_graph(model, kw):
    from fabricsim.workload.estimate import training_tasks
    from fabricsim.workload.models import get_model
    from fabricsim.workload.parallelism import Strategy, build_training

    m, st = get_model(model), Strategy(**kw)
    n = len(build_training(m, st))
    assert n <= training_tasks(m, st) <= 1.25 * n


def test_cli_overrides_are_checked_against_limits(tmp_path, capsys):
    p = _write(tmp_path, TRAIN)
    one_error(capsys, ["train", p, "-q", "-n", "1000000000"], "--iterations", "1000000000", "--limit iterations")
    one_error(capsys, ["train", p, "-q", "--trace-npus", "0-99999999999"], "--trace-npus", "0-99999999999")


# ---- 15: ASTRA-sim inputs ----------------------------------------------------------------------------


def test_astra_unknown_keys_warn_in_every_file(tmp_path, capsys):
    net = _write(tmp_path, (ASTRA / "networks" / "Ring_8.yml").read_text() + "colour: red\n", "net.yml")
    mem = _write(tmp_path, '{"memory-type": "NO_MEMORY_EXPANSION", "flavour": 1}', "mem.json")
    assert run([*ASTRA_ARGS, "--network-configuration", net, "--remote-memory-configuration", mem, "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    assert f"{net}: unknown keys ignored: colour" in warnings
    assert f"{mem}: unknown keys ignored: flavour" in warnings


def test_astra_comm_groups_only_the_value_empty_means_none(tmp_path, capsys):
    net = ["--network-configuration", ASTRA / "networks" / "Ring_8.yml"]
    assert run([*ASTRA_ARGS, *net, "--comm-group-configuration", "empty"]) == 0
    capsys.readouterr()
    one_error(capsys, [*ASTRA_ARGS, *net, "--comm-group-configuration", _write(tmp_path, "junk", "empty_junk.json")],
              "empty_junk.json", "JSON")
    one_error(capsys, [*ASTRA_ARGS, *net, "--comm-group-configuration", tmp_path / "empty_missing.json"],
              "empty_missing.json", "no such file")


@pytest.mark.parametrize("name, text, words", [
    ("net.yml", "topology: [ Ring ]\nnpus_count: [ 1000000000 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n",
     ["net.yml: npus_count", "1,000,000,000 NPUs", "--limit npus"]),
    ("net.yml", "topology: [ Ring ]\ntopology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50 ]\nlatency: [ 500 ]\n",
     ["net.yml:2: topology", "key given twice"]),
    ("net.yml", b"topology: [ \xffRing ]\n", ["net.yml", "not UTF-8"]),
])
def test_astra_network_file_refusals(tmp_path, capsys, name, text, words):
    one_error(capsys, [*ASTRA_ARGS, "--network-configuration", _write(tmp_path, text, name)], *words)


@pytest.mark.parametrize("text, words", [
    ('{"1": [0, 99999999999999999999999]}', ["64 bits"]),
    ('{"1": ' + "[" * 5000 + "]" * 5000 + "}", ["nested too deep"]),
    ('{"1": [0, 1], "1": [2, 3]}', ["key given twice"]),
])
def test_astra_comm_group_json_refusals(tmp_path, capsys, text, words):
    net = ["--network-configuration", ASTRA / "networks" / "Ring_8.yml"]
    one_error(capsys, [*ASTRA_ARGS, *net, "--comm-group-configuration", _write(tmp_path, text, "g.json")],
              "g.json", *words)
