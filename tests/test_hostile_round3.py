"""Issue 46, "Robustness, round three": regressions for the defects fixed here, one test (or a few)
per defect, expected values from closed forms or explicit expectations. Command-line cases run
in-process through `fabricsim.cli.main` (exit code and the one stderr line)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fabricsim.cli import main
from hostile_cases import BASE3 as BASE  # the small config (base.yaml)


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `fabricsim argv`."""
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    out, err = capsys.readouterr()
    return rc or 0, out, err


def _refused(capsys, argv: list[str], *names: str) -> str:
    """The one error line of a refused command line; it names every one of `names`."""
    rc, _, err = _run(capsys, argv)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("fabricsim: error: "), (rc, err)
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def _train_config(tmp_path: Path, text: str, name: str = "t.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


# ---- 1. a tensor-parallel degree that does not divide heads / ffn / kv_heads --------------------


@pytest.mark.parametrize("old, new, field, value", [
    ("heads: 8", "heads: 1", "workload.model.heads", "1"),
    ("vocab: 1000}", "vocab: 1000, ffn: 3}", "workload.model.ffn", "3"),
    ("heads: 8", "heads: 8, kv_heads: 1", "workload.model.kv_heads", "1"),
])
def test_mp_not_dividing_the_shape_is_refused(tmp_path, capsys, old, new, field, value):
    """Before: the run left Megatron's layout in silence (heads: 1: compute 845 -> 46 us, iteration
    1.24 ms -> 259 us, exit 0). Megatron-LM refuses a tensor-parallel size that does not divide the
    heads, the query groups or the MLP; so does the config now, naming the key."""
    cfg = _train_config(tmp_path, BASE.replace(old, new))
    line = _refused(capsys, ["train", cfg, "-o", str(tmp_path / "o"), "-q"], field, f"invalid value {value}",
                    "parallelism.mp = 2")
    assert "Megatron-LM" in line


def test_mp_not_dividing_heads_is_refused_before_the_memory_check(tmp_path, capsys):
    """hidden 65536, seq 8192: heads 2 is refused for memory (908 GiB); heads 1 ran at 77% MFU
    (no memory model off Megatron's layout). Now heads 1 is refused for its split."""
    text = BASE.replace("hidden: 256", "hidden: 65536").replace("seq: 128", "seq: 8192")
    cfg = _train_config(tmp_path, text.replace("heads: 8", "heads: 1"))
    _refused(capsys, ["train", cfg, "-o", str(tmp_path / "o"), "-q"], "workload.model.heads")
    cfg = _train_config(tmp_path, text.replace("heads: 8", "heads: 2"), "two.yaml")
    _refused(capsys, ["train", cfg, "-o", str(tmp_path / "o2"), "-q"], "system.npu.memory", "908 GiB")


def test_mp_not_dividing_heads_is_refused_by_export(tmp_path, capsys):
    cfg = _train_config(tmp_path, BASE.replace("heads: 8", "heads: 1"))
    _refused(capsys, ["export", "chakra", "-o", str(tmp_path / "ch"), "--train", cfg], "workload.model.heads")


def test_zoo_transformer_off_megatron_layout_says_so():
    """A zoo transformer under an mp that does not divide its heads (FRED's Transformer-17B, 28
    heads, at MP(8)) still runs (FRED's strategies need it), with a note instead of in silence."""
    from fabricsim.train import TrainConfig, _layout_note

    cfg = TrainConfig.model_validate({
        "network": {"topology": "switch:8", "bandwidth": "300GB/s", "latency": "1us"},
        "system": {"npu": {"gpu": "a100"}},
        "workload": {"model": "transformer-17b", "batch": 8, "parallelism": {"mp": 8}}})
    (note,) = _layout_note(cfg)
    assert "mp = 8 does not divide heads = 28" in note and "roofline" in note
    ok = cfg.model_copy(update={"workload": cfg.workload.model_copy(
        update={"parallelism": cfg.workload.parallelism.model_copy(update={"mp": 4})})})
    assert _layout_note(ok) == []  # 28 heads and ffn 17024 split over 4


def test_base_config_still_runs(tmp_path, capsys):
    cfg = _train_config(tmp_path, BASE)
    rc, out, err = _run(capsys, ["train", cfg, "-o", str(tmp_path / "o"), "-q"])
    assert rc == 0 and "iteration time" in out and not err.strip()


# ---- 5. a graph beyond the tasks limit, sized before the model is built -------------------------


def test_layers_beyond_the_tasks_limit_are_refused_at_once(tmp_path, capsys):
    """Before: 3.7 GB in 37 s, then 'out of memory' naming nothing. Now refused from the config:
    at least 4 tasks per block, microbatch and iteration = 4 x 1e8 x 4 x 1 = 1.6e9 > 40,000,000."""
    cfg = _train_config(tmp_path, BASE.replace("layers: 4", "layers: 100000000"))
    t0 = time.perf_counter()
    line = _refused(capsys, ["train", cfg, "-o", str(tmp_path / "o"), "-q"], "workload.model.layers",
                    "100000000", "1,600,000,000 tasks", "--limit tasks=N")
    assert time.perf_counter() - t0 < 10, line


def test_tasks_lower_bound_is_below_the_exact_count():
    """The bound used before building (4 per block, microbatch, iteration) never exceeds the graph's
    own count (`workload.estimate.training_tasks`), folded or not, so no graph within the limit is
    refused by it."""
    from fabricsim.train import TrainConfig
    from fabricsim.workload.estimate import training_tasks

    import yaml

    data = yaml.safe_load(BASE)
    for par in ({"mp": 1, "pp": 1, "microbatches": 1}, {"mp": 2, "pp": 2, "microbatches": 4}):
        data["workload"]["parallelism"] = par
        w = TrainConfig.model_validate(data).workload
        st = w.strategy()
        bound = 4 * 4 * par["microbatches"]
        assert bound <= training_tasks(w.build_model(), st, fold=True) <= training_tasks(w.build_model(), st)


# ---- 6. Chakra dependency processing linear in nodes ---------------------------------------------


def _wide_traces(n: int, npus: int, p2p: bool):
    """`npus` traces of `n` independent GPU compute nodes of 1 us each (all ready at once, one GPU),
    then, with `p2p`, a send and a receive with the neighbour (the Python emulation then runs)."""
    from fabricsim.workload.chakra_schema import NODE_TYPES
    from fabricsim.workload.chakra_trace import COMP_NODE, EtNode, EtTrace

    traces = []
    for r in range(npus):
        nodes = [EtNode(i, "c", COMP_NODE, duration_micros=1, attrs={"is_cpu_op": False}) for i in range(n)]
        if p2p:
            peer = r ^ 1
            attrs = {"comm_size": 1024, "comm_tag": 0, "is_cpu_op": False}
            nodes.append(EtNode(n, "s", NODE_TYPES["COMM_SEND_NODE"], data_deps=(n - 1,), attrs={**attrs, "comm_dst": peer}))
            nodes.append(EtNode(n + 1, "r", NODE_TYPES["COMM_RECV_NODE"], data_deps=(n - 1,),
                                attrs={**attrs, "comm_src": peer}))
        traces.append(EtTrace(r, "0.0.4", {}, tuple(nodes)))
    return traces


@pytest.mark.parametrize("engine, p2p", [("python", True), ("compiled", False)])
def test_wide_chakra_graph_runs_in_linear_time(engine, p2p):
    """Every ready node waiting for the GPU was scanned at every event (8,000 nodes per NPU: 46 s in
    Python, 16,000: 31 s compiled; quadratic). Now each resource keeps a heap of its ready nodes:
    30,000 nodes on 2 NPUs in seconds, and the GPU runs them back to back: finish = n x 1 us (plus
    the message, with p2p)."""
    from fabricsim.astra.emu_network import NetSpec, SysSpec
    from fabricsim.astra.workload import run_workload

    n = 30_000
    net = NetSpec(("Ring",), (2,), (50.0,), (0.0,))
    run_workload(net, SysSpec(splits=1), _wide_traces(10, 2, p2p), engine=engine)  # compiled once, untimed
    t0 = time.perf_counter()
    res = run_workload(net, SysSpec(splits=1), _wide_traces(n, 2, p2p), engine=engine)
    took = time.perf_counter() - t0
    for r in res:
        assert r.compute_ns == n * 1000
        assert r.finish_ns == n * 1000 if not p2p else r.finish_ns > n * 1000
    assert took < 20, took


# ---- 9. options given twice: refused, each once (as topology options are) -----------------------


@pytest.mark.parametrize("argv, field", [
    (["--limit", "npus=8", "--limit", "npus=16", "collective", "-t", "ring:12", "-s", "1MiB"], "--limit"),
    (["collective", "-t", "ring:8", "-s", "1MiB", "-s", "2MiB"], "--sizes"),
    (["collective", "-t", "ring:8", "-s", "1MiB", "--sizes=2MiB"], "--sizes"),
    (["collective", "-t", "ring:8", "-s", "1MiB", "--verify", "--no-verify"], "--verify/--no-verify"),
    (["collective", "-t", "ring:8", "-c", "broadcast", "-a", "ring", "-s", "1MiB", "-o", "chunks=2", "-o", "chunks=4"],
     "--option"),
])
def test_an_option_given_twice_is_refused(capsys, argv, field):
    """Before: the last one won in silence (`--limit npus=8 --limit npus=16` let ring:12 through)."""
    line = _refused(capsys, argv, field)
    assert "given twice" in line and "accepted: each" in line


def test_an_endpoint_field_given_twice_is_refused(tmp_path, capsys):
    cfg = _train_config(tmp_path, BASE)
    _refused(capsys, ["train", cfg, "-o", str(tmp_path / "o"), "-q", "--endpoint", "npu,units=0.2,units=0.3,memory=0.1"],
             "--endpoint", "'units' is given twice")


def test_an_algorithm_option_given_twice_is_refused(tmp_path, capsys):
    """In the algorithm's string, or in it and in `-o` (before: the `-o` one won in silence), and in a
    training config's `network.algorithms`."""
    _refused(capsys, ["collective", "-t", "ring:8", "-s", "1MiB", "-a", "ring,bidirectional=true",
                      "-o", "bidirectional=false"], "--algorithm", "'bidirectional' is given twice")
    net = "latency: 1us}"
    cfg = _train_config(tmp_path, BASE.replace(net, "latency: 1us, algorithms: {all-reduce: "
                                                    "'ring,bidirectional=true,bidirectional=false'}}"))
    _refused(capsys, ["train", cfg, "-o", str(tmp_path / "o"), "-q"], "network.algorithms.all-reduce",
             "'bidirectional' is given twice")


def test_repeatable_options_still_repeat(capsys):
    rc, out, err = _run(capsys, ["--limit", "npus=64", "--limit", "blocks=1e8", "collective", "-t", "ring:8",
                                 "-s", "1MiB", "-a", "ring", "-o", "bidirectional=true", "-q"])
    assert rc == 0 and "Avg bus bandwidth" in out, err


# ---- 10. an option that contradicts the topology's node shape ----------------------------------


@pytest.mark.parametrize("opt, value, real", [("gpus_per_node", 16, 8), ("gpus_per_node", 4, 8),
                                               ("nics_per_node", 2, 8)])
def test_node_shape_contradicting_the_topology_is_refused(capsys, opt, value, real):
    """Before: `-a nccl_tree -o gpus_per_node=16` on dgx-h100:nodes=2 (8 GPUs per node) priced nodes of
    16 (a different answer, exit 0)."""
    line = _refused(capsys, ["collective", "-t", "dgx-h100:nodes=2", "-a", "nccl_tree", "-s", "1MiB", "-o",
                             f"{opt}={value}"], f"--option {opt}", f"invalid value {value}")
    assert f"accepted: {real}" in line


def test_node_shape_agreeing_with_the_topology_gives_the_same_answer(capsys):
    """gpus_per_node = the topology's 8: the same time as leaving it out."""
    base = ["collective", "-t", "dgx-h100:nodes=2", "-a", "nccl_tree", "-s", "1MiB", "--json"]
    import json

    rc1, out1, _ = _run(capsys, base)
    rc2, out2, _ = _run(capsys, [*base, "-o", "gpus_per_node=8"])
    assert rc1 == rc2 == 0
    assert json.loads(out1)["rows"][0]["time_s"] == json.loads(out2)["rows"][0]["time_s"]


# ---- 11. absurd answers in accepted ranges; the plausibility check (what-to-build item 5) ------


def test_endpoint_share_below_a_thousandth_is_refused(tmp_path, capsys):
    """Before: `--endpoint npu,units=1e-300,memory=1e-300` answered 5.3e294 s per iteration."""
    cfg = _train_config(tmp_path, BASE)
    _refused(capsys, ["train", cfg, "-o", str(tmp_path / "o"), "-q", "--endpoint", "npu,units=1e-300,memory=1e-300"],
             "--endpoint: units", "1e-300", "at least 0.001")


def _chakra_files(tmp_path: Path, npus: int, nodes, check: bool = True, monkeypatch=None) -> str:
    """Write one trace per NPU of `nodes` (a function of the rank) under tmp_path; the prefix."""
    from fabricsim.workload import chakra
    from fabricsim.workload.chakra_trace import EtTrace

    if not check:  # a file fabricsim's own writer would refuse, as another tool might write it
        monkeypatch.setattr(chakra, "check_trace", lambda *a, **k: None)
    chakra.write_traces(tmp_path / "tr" / "t", [EtTrace(r, "0.0.4", {}, tuple(nodes(r))) for r in range(npus)])
    return str(tmp_path / "tr" / "t")


ASTRA = Path(__file__).resolve().parents[1] / "reference" / "astra-sim"


def _astra(prefix: str) -> list[str]:
    return ["astra", "--workload-configuration", prefix, "--system-configuration",
            str(ASTRA / "systems" / "sys_ring_1d_s4_a1.json"), "--network-configuration",
            str(ASTRA / "networks" / "Ring_8.yml"), "-q"]


def test_chakra_duration_beyond_64_bit_ns_is_refused(tmp_path, capsys):
    """Before: a compute node of 2^64 - 1 us answered 1.8e22 cycles, beyond ASTRA-sim's own 64-bit
    counter. Now the node is named; 9,223,372,036,854,775 us (2^63 - 1 ns, truncated) still runs."""
    from fabricsim.workload.chakra_trace import COMP_NODE, EtNode

    def node(d):
        return lambda r: [EtNode(0, "c", COMP_NODE, duration_micros=d, attrs={"is_cpu_op": False})]

    prefix = _chakra_files(tmp_path, 8, node(2**64 - 1))
    _refused(capsys, _astra(prefix), "t.0.et: node 0 duration_micros", "18446744073709551615 us")
    ok = _chakra_files(tmp_path / "ok", 8, node((2**63 - 1) // 1000))
    rc, out, err = _run(capsys, _astra(ok))
    assert rc == 0 and str((2**63 - 1) // 1000 * 1000) in out, err


def test_train_iteration_over_a_year_is_refused_naming_its_inputs(tmp_path, capsys):
    """The result boundary of `fabricsim train`: the same trace's iteration is 1.8e13 s (all compute),
    refused naming the trace whose durations make it; a 1 B/s network (45 days) still runs."""
    from fabricsim.workload.chakra_trace import COMP_NODE, EtNode

    prefix = _chakra_files(tmp_path, 2, lambda r: [EtNode(0, "c", COMP_NODE, duration_micros=2**64 - 1,
                                                          attrs={"is_cpu_op": False})])
    cfg = _train_config(tmp_path, f"network: {{topology: 'ring:2', bandwidth: 100GB/s, latency: 1us}}\n"
                                  f"system: {{npu: {{peak: 100TFLOP/s, memory_bandwidth: 1TB/s}}}}\n"
                                  f"workload: {{chakra: {prefix}}}\noutput: {{trace: false, plot: false}}\n")
    line = _refused(capsys, ["train", cfg, "-o", str(tmp_path / "o"), "-q"], f"workload.chakra {prefix}",
                    "1.845e+13 s per iteration", "over a year (100% of it compute)")
    assert "physical plausibility" in line
    slow = _train_config(tmp_path, BASE.replace("300GB/s", "1B/s"), "slow.yaml")
    rc, out, err = _run(capsys, ["train", slow, "-o", str(tmp_path / "o2"), "-q"])
    assert rc == 0 and "iteration time: 3.867e+06 s" in out, err


def test_collective_over_a_year_is_refused_naming_its_inputs(capsys):
    """1 GiB ring all-reduce on 8 ranks at 100 b/s (12.5 B/s): 2 x 7/8 x 2^30 / 12.5 = 1.503e8 s."""
    t = 2 * 7 / 8 * 2**30 / 12.5
    line = _refused(capsys, ["collective", "-t", "ring:8", "-B", "100bps", "-s", "1GiB", "-a", "ring"],
                    "--bandwidth 100bps", "--sizes 1073741824", f"{t:.4g} s")
    assert "over a year" in line


def test_plausibility_rules():
    """The rule in closed form: a year of 365.25 days, refused just past it (and NaN, inf)."""
    from fabricsim.engine.plausible import YEAR_S, check_collective, plausible_time
    from fabricsim.errors import ConfigError

    assert YEAR_S == 31_557_600.0 and plausible_time(YEAR_S) and not plausible_time(YEAR_S * 1.001)
    assert not plausible_time(float("inf")) and not plausible_time(float("nan"))
    check_collective([{"size_bytes": 1024, "time_s": YEAR_S}], "x")  # a year exactly: fine
    with pytest.raises(ConfigError, match="one collective over a year"):
        check_collective([{"size_bytes": 1024, "time_s": YEAR_S * 1.001}], "x")


# ---- 12. the field named, and what it was read as ----------------------------------------------


def test_topology_optimize_link_bandwidth_names_file_and_field(tmp_path, capsys):
    """Before: 'bandwidth: invalid value 0.125' (no file, not the field given)."""
    job = (Path(__file__).resolve().parents[1] / "configs" / "topoopt-job.yaml").read_text()
    path = tmp_path / "j.yaml"
    path.write_text(job.replace("link_bandwidth: 100Gbps", "link_bandwidth: 1bps"))
    _refused(capsys, ["topology", "optimize", str(path), "--out", str(tmp_path / "o"), "-q"],
             "j.yaml: link_bandwidth", "'1bps'", "1 B/s to 1 EB/s")


def test_nvls_on_a_cluster_without_nvlink_sharp_names_nvls(capsys):
    """Before: "invalid value 'in_network'" (the helper's name) and a hint of switch:8,reduce."""
    line = _refused(capsys, ["collective", "-t", "dgx-a100:nodes=2", "-a", "nvls", "-s", "1MiB"],
                    "algorithm: invalid value 'nvls'", "dgx-h100")
    assert "in_network" not in line


def test_chakra_comm_size_with_a_fraction_is_refused_as_given(tmp_path, capsys, monkeypatch):
    """Before: comm_size 1.5 showed as '1' (astra), or ran as 1.5 bytes (train)."""
    from fabricsim.workload.chakra_schema import NODE_TYPES
    from fabricsim.workload.chakra_trace import EtNode

    prefix = _chakra_files(tmp_path, 8, lambda r: [EtNode(0, "ar", NODE_TYPES["COMM_COLL_NODE"], attrs={
        "comm_type": 0, "comm_size": 1.5, "is_cpu_op": False})], check=False, monkeypatch=monkeypatch)
    monkeypatch.undo()
    _refused(capsys, _astra(prefix), "node 0 comm_size", "invalid value 1.5", "a whole number of bytes")


@pytest.mark.parametrize("yaml_value, hint", [
    ("5e-1", "YAML 1.1 reads '5e-1', an exponent without a dot, as text: write 5.0e-1"),
    ('"0.5"', "given as text, in quotes: write 0.5 without them"),
])
def test_a_number_read_as_text_says_so(tmp_path, capsys, yaml_value, hint):
    cfg = _train_config(tmp_path, BASE.replace("{gpu: a100}", f"{{gpu: a100, efficiency: {yaml_value}}}"))
    _refused(capsys, ["train", cfg, "-o", str(tmp_path / "o"), "-q"], "system.npu.efficiency", "accepted: a number",
             hint)


@pytest.mark.parametrize("name", ["fabricsim.cli.argv", "fabricsim.engine.plausible", "fabricsim.config"])
def test_docstring_examples_of_the_new_checks(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("old, new, field, value", [
    ("vocab: 1000}", "vocab: 1000, ffn: 0}", "workload.model.ffn", "0"),
    ("vocab: 1000}", "vocab: 1000, ffn: -256}", "workload.model.ffn", "-256"),
    ("vocab: 1000}", "vocab: 0}", "workload.model.vocab", "0"),
    ("seq: 128", "seq: 0", "workload.model.seq", "0"),
    ("hidden: 256", "hidden: 99999999999", "workload.model.heads", "8"),  # 8 does not divide 99999999999
])
def test_a_bad_shape_key_is_named_itself(tmp_path, capsys, old, new, field, value):
    """Filed: 'workload.model.str ... accepted: text' (the union's member named instead of the key)."""
    cfg = _train_config(tmp_path, BASE.replace(old, new))
    line = _refused(capsys, ["train", cfg, "-o", str(tmp_path / "o"), "-q"], f"{field}: invalid value {value}")
    assert "accepted: text" not in line and "Value error" not in line


# ---- defect 12, the topology part: a bare preset name, a rate shown as given -------------------


def test_a_bare_preset_name_is_its_defaults(capsys):
    """`tpu-v4` and `dgx-h100` alone are `tpu-v4:` and `dgx-h100:` (their defaults); `ring` alone
    needs a size and is refused naming the topology."""
    from fabricsim.cli import main
    from fabricsim.topology.spec import parse_topology, topology_npus

    for bare in ("tpu-v4", "dgx-h100", "dgx-a100"):
        assert parse_topology(bare).n_npus == parse_topology(bare + ":").n_npus
        assert topology_npus(bare) == topology_npus(bare + ":")
    assert parse_topology("tpu-v4").n_npus == 64  # 4x4x4, the preset's default
    assert main(["collective", "-t", "ring", "-s", "1MiB", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "topology" in err and "'ring'" in err


def test_a_reduction_rate_is_shown_with_its_unit(capsys):
    from fabricsim.cli import main

    assert main(["collective", "-t", "dgx-h100:nodes=2,sharp_rate=1GB/s", "-s", "1MiB", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "sharp_rate: invalid value '1 GB/s'" in err and "1000000000" not in err


# ---- defect 6, the workers part: local worker processes bounded by the machine -----------------


def test_local_workers_are_bounded_by_the_machine(capsys):
    """`--workers` and `local:N` take at most 4 per CPU: `local:99999` grew past 1 GB before."""
    import os

    from fabricsim.cli import main

    top = 4 * (os.cpu_count() or 1)
    for argv, field in ((["sweep", "configs/sweep-collectives.yaml", "--dry-run", "--workers", str(top + 1)], "--workers"),
                        (["sweep", "configs/sweep-collectives.yaml", "--dry-run", "--dask", "local:99999"], "--dask"),
                        (["reproduce", "swing", "--quick", "--dask", f"local:{top + 1}"], "--dask"),
                        (["plan", "configs/plan-gpt3-175b-1024.yaml", "--workers", "99999"], "--workers")):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and err.startswith(f"fabricsim: error: {field}") and f"to {top}" in err, err


# ---- the fuzz net's finding: YAML 1.1 numbers that are not what is written ----------------------


@pytest.mark.parametrize("text, shown, read", [("010", "'010'", "octal (8)"), ("-07", "'-07'", "octal (-7)"),
                                               ("12:30:00", "'12:30:00'", "base-60 number (45000)"),
                                               ("1:30.5", "'1:30.5'", "base-60 number (90.5)")])
def test_yaml_11_numbers_unlike_what_is_written_are_refused(tmp_path, capsys, text, shown, read):
    """`batch: 010` was 8 and `batch: 12:30:00` was 45000 without a word (YAML 1.1); YAML 1.2 and
    every reader would take them otherwise, so they are refused naming the field and the reading."""
    from fabricsim.cli import main

    cfg = tmp_path / "t.yaml"
    cfg.write_text("network: {topology: 'switch:4', bandwidth: 300GB/s, latency: 1us}\nsystem: {npu: {gpu: a100}}\n"
                   "workload: {model: {layers: 2, hidden: 256, heads: 8, seq: 128, vocab: 1000}, "
                   f"batch: {text}, parallelism: {{dp: 4}}}}\n")
    assert main(["train", str(cfg), "-q", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "workload.batch" in err and shown in err and read in err, err


def test_plain_yaml_numbers_still_read_as_written():
    import yaml

    from fabricsim.inputs import StrictLoader

    got = yaml.load("a: 0\nb: 10\nc: -3\nd: 1_000\ne: 0x1F\nf: 0.5\ng: '010'\n", Loader=StrictLoader)  # noqa: S506
    assert got == {"a": 0, "b": 10, "c": -3, "d": 1000, "e": 31, "f": 0.5, "g": "010"}


@pytest.mark.parametrize("io", ["input_loading: true, parallelism: {dp: 4}",
                                "parallelism: {dp: 4, weight_streaming: true}"])
def test_io_on_a_topology_without_controllers_names_the_topology(tmp_path, capsys, io):
    """Was `network.algorithms.topology` (the error surfaced while simulating)."""
    from fabricsim.cli import main

    cfg = tmp_path / "t.yaml"
    cfg.write_text("network: {topology: 'switch:4', bandwidth: 300GB/s, latency: 1us}\nsystem: {npu: {gpu: a100}}\n"
                   "workload: {model: {layers: 2, hidden: 256, heads: 8, seq: 128, vocab: 1000}, batch: 8, " + io + "}\n")
    assert main(["train", str(cfg), "-q", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ": network.topology: invalid value 'switch:4'" in err and "I/O" in err, err


@pytest.mark.parametrize("block", ["grid: {}", "zip: {}"])
def test_an_empty_sweep_block_is_one_line(tmp_path, capsys, block):
    """Found by the schema fuzz net: `axes: [{grid: {}}, ...]` was an AttributeError traceback."""
    from fabricsim.cli import main

    f = tmp_path / "s.yaml"
    f.write_text("name: s\nkind: collective\nbase: {topology: 'ring:8', size: 1MiB}\n"
                 f"axes:\n  - {block}\n  - grid: {{algorithm: [ring]}}\n")
    assert main(["sweep", str(f), "--dry-run", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "axes.0" in err and "empty block" in err and "Traceback" not in err


def test_the_tasks_limit_names_the_factor_that_makes_it_large(tmp_path, capsys):
    """Found by the schema fuzz net: `microbatches: 2^63-1` was blamed on `model.layers: 2`."""
    from fabricsim.cli import main

    cfg = tmp_path / "t.yaml"
    cfg.write_text("network: {topology: 'switch:4', bandwidth: 300GB/s, latency: 1us}\nsystem: {npu: {gpu: a100}}\n"
                   "workload: {model: {layers: 2, hidden: 256, heads: 8, seq: 128, vocab: 1000}, batch: 8, "
                   "parallelism: {dp: 1, pp: 2, microbatches: 100000000}}\n")
    assert main(["train", str(cfg), "-q", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "parallelism.microbatches: invalid value 100000000" in err, err
