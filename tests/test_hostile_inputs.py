"""Every command on hostile inputs (issue 17): the table in tests/hostile_cases.py, each case run in
a child process with its address space capped (3 GiB) and a 30 s alarm, must end in exit 0 with a
result or exit 2 with one stderr line naming the field; never a traceback, a hang, a memory error
or a silent acceptance. Generated inputs (hypothesis) for the parsers every command shares, and
the same answers under different PYTHONHASHSEED values."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from hostile import TINY_TRAFFIC, TINY_TRAIN, run_cases  # noqa: E402
from hostile_cases import all_cases  # noqa: E402

from fabricsim.cli import main  # noqa: E402

CASES = all_cases()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    """All cases, run once in one capped child process."""
    outs = run_cases(CASES, tmp_path_factory.mktemp("hostile"), timeout_s=30.0, memory_bytes=3 * 2**30)
    return {o.case["index"]: o for o in outs}


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c.command}:{c.defect}:{c.id}" for c in CASES])
def test_case(outcomes, index):
    case, got = CASES[index], outcomes[index]
    assert got.verdict == case.expect, f"{got.verdict} (rc {got.rc}): {got.err.strip()[-400:]}"


def test_the_table_covers_every_command():
    commands = {c.command for c in CASES}
    assert commands >= {"collective", "train", "traffic", "astra", "export", "reproduce"}
    assert sum(c.expect == "error" for c in CASES) > 80


# ---- generated inputs, in-process, for the parsers every command shares -------------------------


@contextlib.contextmanager
def _deadline(seconds: float):
    """Fail (not hang) when a generated input takes longer than `seconds`."""
    def _raise(*_):
        raise TimeoutError(f"took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _exit0_or_one_line(rc: int, err: str) -> None:
    assert rc in (0, 2), err
    assert "Traceback" not in err
    if rc == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("fabricsim: error: "), err


NUMBER = st.one_of(st.integers(-3, 40), st.sampled_from(["0", "1e308", "nan", "inf", "-1", "99999999999999999999999",
                                                         "1.5", "2**70", "1e9", "0x10", ""]))
FAMILY = st.sampled_from(["ring", "torus", "mesh", "switch", "fully-connected", "fat-tree", "wafer", "fred", "stack",
                          "circulant", "nope", ""])
OPTION = st.sampled_from(["", ",reduce", ",uni", ",leaf=4", ",spines=64", ",oversub=1e308", ",io=1GB/s", ",noio",
                          ",leaf=4,leaf=8", ",up=12TB/s", ",iothrottle", ",x"])


@st.composite
def topology_specs(draw):
    fam = draw(FAMILY)
    shape = "x".join(str(draw(NUMBER)) for _ in range(draw(st.integers(1, 3))))
    if fam == "stack":
        shape = "x".join(draw(st.sampled_from(["Ring", "Switch", "FullyConnected", "Nope"])) + str(draw(NUMBER))
                         for _ in range(draw(st.integers(1, 3))))
    if fam == "circulant":
        shape = f"{draw(NUMBER)}:{draw(NUMBER)},{draw(NUMBER)}"
    return f"{fam}:{shape}{draw(OPTION)}"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(topology_specs(), st.sampled_from(["ring", "direct", "swing", "bucket", "in_network", "hierarchical"]),
       st.sampled_from(["all-reduce", "all-to-all", "broadcast"]))
def test_generated_topologies(capsys, spec, algorithm, collective):
    with _deadline(20):
        rc = main(["collective", "-t", spec, "-a", algorithm, "-c", collective, "-s", "1MiB", "-q"])
    _exit0_or_one_line(rc, capsys.readouterr().err)


OPT_KEY = st.sampled_from(["chunks", "bidirectional", "dims", "root", "leaf_of", "mode", "ports", "lockstep", "x", ""])
OPT_VALUE = st.one_of(NUMBER.map(str), st.sampled_from(["true", "maybe", "3x3", "abc", "bandwidth", "single", ""]))
GROUP = st.one_of(st.sampled_from(["", "0-7", "7-0", "0-99999999999", "a,b", "0,0", "0-15:0", "1.5", "-1"]),
                  st.lists(st.integers(-1, 9), max_size=6).map(lambda xs: ",".join(map(str, xs))))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(OPT_KEY, OPT_VALUE), max_size=3), GROUP,
       st.sampled_from(["ring", "swing", "hierarchical", "bucket", "recursive_doubling", "double_binary_tree"]),
       st.sampled_from(["1KiB", "1b", "0", "1:1GiB:1.000001", "1KiB:1MiB", "1e30", "-1", "8:128M"]))
def test_generated_collective_options(capsys, options, group, algorithm, sizes):
    argv = ["collective", "-t", "torus:4x4", "-a", algorithm, "-s", sizes, "-g", group, "-q"]
    for k, v in options:
        argv += ["-o", f"{k}={v}"]
    with _deadline(20):
        rc = main(argv)
    _exit0_or_one_line(rc, capsys.readouterr().err)


YAML_VALUE = st.one_of(NUMBER, st.sampled_from(["true", "[]", "{}", "!!set {a}", "[1.5, 2.7]", "'3'", "null",
                                                "100GB/s", "1us", "2020-01-01", "&a [*a]"]))
TRAIN_FIELD = st.sampled_from(["network.latency", "network.bandwidth", "system.npu.efficiency", "system.npu.peak",
                               "workload.iterations", "workload.batch", "system.scheduling.chunks",
                               "system.scheduling.priorities", "workload.parallelism.dp", "output.trace_npus"])


def _with_field(text: str, path: str, value: str) -> str:
    """TINY_TRAIN with one field set (flow style keeps it one line per section)."""
    import yaml

    data = yaml.safe_load(text)
    *parents, leaf = path.split(".")
    node = data
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = "@@"
    return yaml.safe_dump(data).replace("'@@'", value)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TRAIN_FIELD, YAML_VALUE)
def test_generated_train_fields(capsys, tmp_path, path, value):
    cfg = tmp_path / "t.yaml"
    cfg.write_text(_with_field(TINY_TRAIN, path, str(value)))
    with _deadline(20):
        rc = main(["train", str(cfg), "--out", str(tmp_path / "o"), "--force", "-q"])
    _exit0_or_one_line(rc, capsys.readouterr().err)


# ---- determinism under different hash seeds ------------------------------------------------------


def _run_seeded(seed: int, argv: list[str], cwd: Path) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    p = subprocess.run([sys.executable, "-m", "fabricsim", *argv], capture_output=True, text=True, env=env, cwd=cwd,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_same_answers_under_different_hash_seeds(tmp_path):
    """The same inputs give bit-identical outputs whatever PYTHONHASHSEED is (set iteration order,
    dict-of-set order, hashing of names never reach a result)."""
    (tmp_path / "train.yaml").write_text(TINY_TRAIN.replace(
        "system: {", "system: {scheduling: {priorities: [DP, MP, PP, IO, other], comm_streams: per-category}, "))
    (tmp_path / "traffic.yaml").write_text(TINY_TRAFFIC)
    runs = {}
    for seed in (0, 1, 12345):
        outs = []
        for argv in (["train", "train.yaml", "--json", "--out", f"o{seed}"],
                     ["traffic", "traffic.yaml", "--json"],
                     ["collective", "-t", "fat-tree:16,leaf=4,spines=2", "-a", "direct", "-c", "all-to-all",
                      "-m", "flow", "-s", "1KiB:1MiB", "--json"]):
            text = _run_seeded(seed, argv, tmp_path).replace(f"o{seed}", "o")
            outs.append(json.loads(text))
        summary = (tmp_path / f"o{seed}" / "summary.json").read_text().replace(f"o{seed}", "o")
        runs[seed] = (outs, summary)
    assert runs[0] == runs[1] == runs[12345]
