"""Hostile values for the inputs issue 12 added (`--sizes` with nccl-tests suffixes, `--plot`, `--nccl`,
`--quiet`, `--trace-format` / `output.trace_format`): each run ends in exit 0, or exit 2 with one line
on stderr naming the field; never a traceback."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabricsim.cli import main

TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)


def _one_line_or_ok(rc: int, err: str, field: str) -> None:
    assert rc in (0, 2)
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("fabricsim: error:") and field in lines[0], err
    assert "Traceback" not in err


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(TEXT, st.from_regex(r"\A[0-9]{1,4}[kKmMgGtT]?:[0-9]{1,4}[kKmMgGtT]?(:[0-9])?\Z")))
def test_sizes(capsys, sizes):
    rc = main(["collective", "-t", "ring:4", "-s", sizes, "--nccl", "--no-verify", "--quiet"])
    _one_line_or_ok(rc, capsys.readouterr().err, "sizes")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TEXT)
def test_plot_path(capsys, tmp_path, name):
    rc = main(["collective", "-t", "ring:4", "-s", "1MiB", "--plot", str(tmp_path / name) if name else "", "--quiet"])
    _one_line_or_ok(rc, capsys.readouterr().err, "--plot")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(TEXT, st.integers(), st.lists(st.integers(), max_size=2), st.none()))
def test_trace_format_in_a_config(capsys, tmp_path, value):
    cfg = {"network": {"topology": "ring:4"}, "system": {"npu": {"peak": "100TFLOP/s", "memory_bandwidth": "2TB/s"}},
           "workload": {"model": "resnet50", "batch": 8, "parallelism": {"dp": 4}},
           "output": {"dir": str(tmp_path / "o"), "trace_format": value, "plot": False}}
    path = Path(tmp_path) / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    rc = main(["train", str(path), "--quiet", "--force"])  # examples share tmp_path: each replaces the last's results
    _one_line_or_ok(rc, capsys.readouterr().err, "trace_format")


# ---- issue 13: `--endpoint`, `system.endpoint` and `system.npu.unit_bandwidth` -----------------


def _train_config(tmp_path, **system) -> Path:
    cfg = {"network": {"topology": "ring:4"},
           "system": {"npu": {"peak": "100TFLOP/s", "memory_bandwidth": "2TB/s"}, **system},
           "workload": {"model": "resnet50", "batch": 8, "parallelism": {"dp": 4}},
           "output": {"dir": str(tmp_path / "o"), "trace": False, "plot": False}}
    path = Path(tmp_path) / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(TEXT, st.sampled_from(["npu,units=0.2", "npu,units=2,memory=0.1", "ace,sram=-1MiB", "ace,sram",
                                        "comp-opt,colour=red", "ideal,", ",", "ace,sram=unlimited,alu_throughput=inf"])))
def test_endpoint_option(capsys, tmp_path, text):
    rc = main(["train", str(_train_config(tmp_path)), "--endpoint", text, "--quiet", "--no-trace", "--no-plot", "--force"])
    _one_line_or_ok(rc, capsys.readouterr().err, "--endpoint")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(["policy", "units", "memory", "sram", "alu_throughput", "dma_bandwidth",
                                        "min_block", "rate"]),
                       st.one_of(TEXT, st.floats(allow_nan=False), st.integers(-3, 3), st.none()), max_size=4),
       st.one_of(TEXT, st.floats(allow_nan=False), st.none()))
def test_endpoint_section_and_unit_bandwidth(capsys, tmp_path, endpoint, unit_bandwidth):
    system = {"endpoint": endpoint}
    path = _train_config(tmp_path, **system)
    data = yaml.safe_load(path.read_text())
    if unit_bandwidth is not None:
        data["system"]["npu"]["unit_bandwidth"] = unit_bandwidth
    path.write_text(yaml.safe_dump(data))
    rc = main(["train", str(path), "--quiet", "--force"])
    _one_line_or_ok(rc, capsys.readouterr().err, "system.")


# ---- issue 14: `fabricsim topology optimize` configs, the circulant family, circulant_rings steps ----

_JOB = {"servers": 8, "degree": 4, "link_bandwidth": "100Gbps",
        "server": {"gpus": 4, "intra_bandwidth": "200Gbps", "npu": {"peak": "624TFLOP/s", "memory_bandwidth": "6TB/s"}},
        "workload": {"model": "resnet50", "batch_per_gpu": 2}, "search": {"steps": 2, "rounds": 1}}
_VALUES = st.one_of(TEXT, st.integers(-3, 20), st.floats(allow_nan=True), st.none(), st.lists(st.integers(), max_size=2))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from([("servers",), ("degree",), ("link_bandwidth",), ("latency",), ("network_model",),
                        ("server", "gpus"), ("server", "intra_bandwidth"), ("workload", "model"),
                        ("workload", "dtype"), ("workload", "batch_per_gpu"), ("workload", "bag"),
                        ("search", "steps"), ("search", "rounds"), ("search", "alpha"), ("search", "split"),
                        ("search", "select"), ("search", "max_groups")]), _VALUES)
def test_topology_optimize_config_fields(capsys, tmp_path, key, value):
    import copy

    cfg = copy.deepcopy(_JOB)
    (cfg[key[0]] if len(key) == 2 else cfg)[key[-1]] = value
    path = Path(tmp_path) / "job.yaml"
    path.write_text(yaml.safe_dump(cfg))
    rc = main(["topology", "optimize", str(path), "--out", str(tmp_path / "o"), "--force", "--quiet"])
    _one_line_or_ok(rc, capsys.readouterr().err, key[-1])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(TEXT, st.from_regex(r"\Acirculant:[0-9]{1,2}:[0-9,\-]{0,8}\Z")))
def test_circulant_spec(capsys, spec):
    rc = main(["collective", "-t", spec, "-s", "1MiB", "--quiet"])
    _one_line_or_ok(rc, capsys.readouterr().err, "")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(TEXT, st.from_regex(r"\A[0-9\-]{1,3}(/[0-9\-]{1,3}){0,2}\Z")))
def test_circulant_rings_steps(capsys, steps):
    rc = main(["collective", "-t", "circulant:12:1,5", "-a", "circulant_rings", "-o", f"steps={steps}", "-s", "1MiB",
               "--quiet"])
    _one_line_or_ok(rc, capsys.readouterr().err, "steps")


# ---- issues 15 and 16: sweep files, `fabricsim plot` options, FRED's training section ------------


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(["topology", "size", "algorithm", "bandwidth", "latency", "model", "collective"]),
       st.one_of(TEXT, st.integers(), st.floats(allow_nan=True), st.none(), st.lists(st.integers(), max_size=2)))
def test_sweep_axis_values(capsys, tmp_path, field, value):
    data = {"kind": "collective", "base": {"topology": "ring:4", "size": "1MiB"}, "axes": [{"grid": {field: [value]}}]}
    path = Path(tmp_path) / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    rc = main(["sweep", str(path), "--dry-run", "--out", str(Path(tmp_path) / "o")])
    _one_line_or_ok(rc, capsys.readouterr().err, "axes")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(TEXT, st.integers(), st.none(), st.lists(TEXT, max_size=2)),
       st.sampled_from(["pp_send", "dp_collective", "dp_bucket", "input_prefetch", "weight_streaming_layout",
                        "broadcast_chunks"]))
def test_fred_training_section(capsys, tmp_path, value, field):
    from fabricsim.experiments.fred.config import default_config_path

    data = yaml.safe_load(default_config_path().read_text())
    data["training"][field] = value
    data["quick"]["workloads"] = []  # load and check only; no training runs
    data["sweep"]["workloads"] = {}
    path = Path(tmp_path) / "fred.yaml"
    path.write_text(yaml.safe_dump(data))
    from fabricsim.errors import ConfigError
    from fabricsim.experiments.fred.config import load_config

    try:
        load_config(path)
    except ConfigError as e:
        assert field in str(e) and "\n" not in str(e)
