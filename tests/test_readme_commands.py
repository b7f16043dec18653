"""A newcomer's first hour, as a test: clone the repository into an empty folder (no `../shared` beside it),
install it with the README's first command, and run every command README.md and docs/ show, each to exit 0.

`COMMANDS` is the table of those commands. The commands are read off the documents' ```bash blocks, so a
command added to (or changed in) a document without a row here fails `test_table_lists_every_documented_command`.
Python blocks run as one script per document (in order, as a reader would paste them); YAML blocks are
validated as training configs. The tests that need the clone are marked `clone` and run apart from the
default suite (`pytest -n auto -m "clone and not slow"`, which `.ci/run` runs after it); commands marked
`slow` (minutes) run with `-m slow`; the suite itself and the benchmarks are not run from here.

The clone is of the committed HEAD (uncommitted edits are not in it). Installing needs the packages
from pip (its cache, on CI, after `.ci/run` installed the same ones).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ["README.md"] + sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))

RUN, SLOW, NOT_HERE = "run", "slow", "not here"
# (document, command as shown, with comments stripped) -> how the test runs it
COMMANDS: dict[tuple[str, str], str] = {
    ("README.md", "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/fabricsim demo"): RUN,  # the clone fixture
    ("README.md", "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest -q -n auto"): NOT_HERE,
    ("README.md", "fabricsim collective --topology torus:8x8 --bandwidth 400Gbps --latency 100ns --collective all-reduce "
                  "--algorithm ring --sizes 1KiB:1GiB"): RUN,
    ("README.md", "fabricsim topologies"): RUN,
    ("docs/limits.md", "fabricsim --limit npus=1e5 collective -t switch:100000,reduce -a in_network -s 1MiB:1GiB:32 "
                       "--no-verify"): RUN,
    ("README.md", "fabricsim algorithms"): RUN,
    ("README.md", "fabricsim models"): RUN,
    ("README.md", "fabricsim collective -t switch:16,reduce -a in_network -s 1MiB:1GiB:4"): RUN,
    ("README.md", "fabricsim collective -t switch:16,reduce -a in_network -o lockstep=true"): RUN,
    ("README.md", "fabricsim collective -t stack:Ring4xSwitch8 -B 200GB/s,50GB/s -L 50ns,500ns -a hierarchical"): RUN,
    ("README.md", "fabricsim collective -t fat-tree:64,leaf=8,spines=4,oversub=2 -a ring -s 64MiB --json"): RUN,
    ("README.md", "fabricsim collective -t ring:16 -g 0-7 -o bidirectional=true -c reduce-scatter"): RUN,
    ("README.md", "fabricsim collective -t torus:4x4 -a recursive_doubling -c broadcast --root 5"): RUN,
    ("README.md", "fabricsim collective -t torus:8x8 -a swing -m flow"): RUN,
    ("README.md", "fabricsim traffic configs/traffic_example.yaml"): RUN,
    ("README.md", "fabricsim collective -t dgx-h100:nodes=32 -a nccl_ring -s 64MiB:4GiB:4"): RUN,
    ("docs/clusters.md", "fabricsim collective -t dgx-h100:nodes=32 -a nccl_ring -s 64MiB:4GiB:4"): RUN,
    ("docs/clusters.md", "fabricsim collective -t dgx-h100:nodes=32 -a nccl_tree -s 4GiB"): RUN,
    ("docs/clusters.md", "fabricsim collective -t dgx-h100:nodes=32,sharp -a nvls -s 4GiB"): RUN,
    ("docs/clusters.md", "fabricsim collective -t dgx-h100:nodes=1 -a nvls -s 4GiB"): RUN,
    ("docs/clusters.md", "fabricsim collective -t dgx:nodes=2,gpus=8,nics=4,nvlink=300GB/s,nic=200Gbps -a nccl_ring "
                         "-s 1GiB"): RUN,
    ("README.md", "fabricsim collective -t dgx-h100:nodes=2 -s 1MiB:8GiB:8"): RUN,
    ("README.md", "fabricsim collective -t dgx-h100:nodes=2 -a nccl_ring -o proto=LL128"): RUN,
    ("docs/clusters.md", "fabricsim collective -t dgx-h100:nodes=1 -s 1MiB:8GiB:8"): RUN,
    ("docs/clusters.md", "fabricsim collective -t dgx-a100:nodes=2,nics=4 -s 8GiB"): RUN,
    ("docs/clusters.md", "fabricsim collective -t dgx-h100:nodes=2 -a nccl_ring -o proto=LL128 -s 64MiB"): RUN,
    ("README.md", "fabricsim train configs/gpt3-175b-64.yaml"): RUN,
    ("README.md", "fabricsim train configs/gpt3-175b.yaml"): SLOW,
    ("README.md", "fabricsim train configs/resnet50-astra-text.yaml"): RUN,
    ("README.md", "fabricsim reproduce swing --quick"): RUN,
    ("README.md", "fabricsim reproduce swing"): SLOW,
    ("README.md", "fabricsim reproduce fred --quick"): RUN,
    ("README.md", "fabricsim reproduce fred"): SLOW,
    ("README.md", "fabricsim reproduce ace --quick"): RUN,
    ("README.md", "fabricsim reproduce ace"): SLOW,
    ("README.md", "fabricsim reproduce topoopt --quick"): RUN,
    ("README.md", "fabricsim reproduce topoopt"): SLOW,
    ("README.md", "fabricsim topology optimize configs/topoopt-job.yaml"): RUN,
    ("README.md", "fabricsim train configs/resnet50-ace.yaml --endpoint comm-opt"): RUN,
    ("README.md", "cd reference/astra-sim"): RUN,
    ("README.md", "fabricsim astra --workload-configuration workloads/all_reduce_8_1048576/x --system-configuration "
                  "systems/sys_ring_1d_s4_a1.json --network-configuration networks/Ring_8.yml --backend congestion-aware "
                  "--model analytical"): RUN,
    ("README.md", "fabricsim export chakra -o /tmp/ar -n 64 --collective all-reduce --size 64MiB --force"): RUN,
    ("README.md", ".venv/bin/python -m pytest -q -n auto"): NOT_HERE,
    ("README.md", '.venv/bin/python -m pytest -q -n auto -m "clone and not slow"'): NOT_HERE,
    ("README.md", ".venv/bin/python -m pytest -q -m slow"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/bench_core.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/bench_astra.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/bench_swing.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/bench_flow.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/bench_train.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/bench_train_scale.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/validate_megatron.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/validate_compute.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/validate_megatron_h100.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/validate_modern.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/bench_plan.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/validate_nccl.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/bench_nccl_auto.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/validate_plan.py"): NOT_HERE,
    ("README.md", "fabricsim plan configs/plan-gpt3-175b-1024.yaml"): SLOW,
    ("docs/plan.md", "fabricsim plan configs/plan-gpt3-175b-1024.yaml"): SLOW,
    ("docs/plan.md", "fabricsim plan configs/validation/plan/korthikanti-22b-8.yaml --top 5"): RUN,
    ("docs/plan.md", "fabricsim plan configs/plan-gpt3-175b-1024.yaml --dask local:2"): SLOW,
    ("docs/plan.md", "fabricsim plan configs/plan-gpt3-175b-1024.yaml -q && fabricsim plot "
                     "out/plans/GPT-3-175B-on-1024-A100s-global-batch-1536 --kind pareto --x peak_memory_GiB "
                     "--y iteration_s --hue recompute"): SLOW,
    ("docs/plan.md", ".venv/bin/python benchmarks/validate_plan.py"): NOT_HERE,
    ("README.md", "fabricsim train configs/megatron/175b-sp-selective.yaml"): RUN,
    ("README.md", "fabricsim train configs/llama3-70b.yaml"): RUN,
    ("README.md", "fabricsim train configs/mixtral-8x7b.yaml"): RUN,
    ("README.md", "fabricsim train configs/llama3-70b-cp.yaml"): RUN,
    ("README.md", "fabricsim train configs/llama3-70b-fp8.yaml"): RUN,
    ("README.md", "fabricsim train configs/two-jobs.yaml"): RUN,
    ("docs/train.md", "fabricsim train configs/megatron/175b-sp-selective.yaml"): RUN,
    ("docs/train.md", "fabricsim train configs/transformer-1t-3072.yaml"): SLOW,
    ("README.md", ".venv/bin/python benchmarks/bench_sweep.py"): NOT_HERE,
    ("README.md", ".venv/bin/python benchmarks/fuzz_inputs.py"): NOT_HERE,
    ("README.md", "fabricsim sweep configs/sweep-collectives.yaml --workers 2"): RUN,
    ("README.md", "fabricsim sweep configs/sweep-collectives.yaml --dask local:2"): SLOW,
    ("docs/sweep.md", "fabricsim sweep configs/sweep-collectives.yaml --dry-run"): RUN,
    ("docs/sweep.md", "fabricsim sweep configs/sweep-collectives.yaml --workers 2"): RUN,
    ("docs/sweep.md", "fabricsim sweep configs/sweep-collectives.yaml --dask local:2"): SLOW,
    ("docs/sweep.md", "fabricsim sweep configs/sweep-collectives.yaml -q && fabricsim plot out/sweeps/allreduce-1000.parquet "
                      "--x size_bytes --y busbw_Bps --hue algorithm --facet topology"): RUN,
    ("docs/astra.md", "cd reference/astra-sim"): RUN,
    ("docs/astra.md", "fabricsim astra --workload-configuration examples/workload/microbenchmarks/all_reduce/8npus_1MB/"
                      "all_reduce --system-configuration examples/system/native_collectives/HGX-H100-validated.json "
                      "--network-configuration examples/network/analytical/HGX-H100-validated.yml --backend congestion-aware "
                      "--model analytical"): RUN,
    ("docs/flow.md", "fabricsim collective -t torus:8x8 -a swing -m flow -s 1MiB:1GiB"): RUN,
    ("docs/flow.md", "fabricsim collective -t switch:8 -m flow-store-and-forward"): RUN,
    ("docs/flow.md", "fabricsim traffic configs/traffic_example.yaml"): RUN,
    ("docs/flow.md", "fabricsim traffic configs/traffic_example.yaml --timeline out/util.csv"): RUN,
    ("docs/ace.md", "fabricsim reproduce ace --quick"): SLOW,  # the README runs the same command
    ("docs/topoopt.md", "fabricsim reproduce topoopt --quick"): SLOW,  # the README runs the same command
    ("docs/topoopt.md", "fabricsim reproduce topoopt"): SLOW,
    ("docs/topoopt.md", "fabricsim topology optimize configs/topoopt-job.yaml"): RUN,
    ("docs/ace.md", "fabricsim reproduce ace --out out/ace"): SLOW,
    ("docs/ace.md", "fabricsim train configs/resnet50-ace.yaml --endpoint comm-opt"): RUN,
    ("docs/fred.md", "fabricsim reproduce fred --quick"): SLOW,  # the README runs the same command
    ("docs/fred.md", "fabricsim reproduce fred --out out/fred"): SLOW,
    ("docs/fred.md", "python -m fabricsim.experiments.fred.calibrate --sweep"): SLOW,
    ("docs/swing.md", "fabricsim reproduce swing --quick"): SLOW,  # the README runs the same command
    ("docs/swing.md", "fabricsim reproduce swing --out out/swing"): SLOW,
    ("docs/swing.md", "fabricsim collective -t torus:64x64 -a swing -s 32B:512MiB:4"): RUN,
    ("docs/swing.md", "fabricsim collective -t torus:8x8 -a swing -o mode=latency -s 32B:8KiB:4"): RUN,
    ("docs/train.md", "fabricsim train configs/gpt3-175b-64.yaml"): RUN,
    ("docs/train.md", "fabricsim train configs/gpt3-175b.yaml"): SLOW,
    ("docs/train.md", "fabricsim train configs/resnet50-astra-text.yaml"): RUN,
    ("docs/train.md", "fabricsim train configs/resnet152-dp.yaml"): RUN,
    ("docs/train.md", "fabricsim train configs/dlrm.yaml"): RUN,
    ("docs/train.md", "fabricsim train configs/resnet50-ace.yaml"): RUN,
    ("docs/train.md", "fabricsim train configs/resnet50-ace.yaml --endpoint comm-opt --out out/resnet50-ace-comm-opt"): RUN,
}
SCRIPT_DOCS = ["README.md", "docs/ace.md", "docs/swing.md", "docs/topologies.md", "docs/train.md"]  # documents with python blocks
SLOW_SCRIPTS = {"docs/swing.md"}  # the full Swing study in a process pool


def _blocks(doc: str, lang: str) -> list[str]:
    text = (ROOT / doc).read_text()
    return [m.group(1) for m in re.finditer(rf"```{lang}\n(.*?)```", text, re.S)]


def documented_commands() -> list[tuple[str, str, str]]:
    """(document, command, working folder relative to the clone) for every command of every ```bash block."""
    out = []
    for doc in DOCS:
        for block in _blocks(doc, "bash"):
            cwd = "."
            for line in block.replace("\\\n", " ").splitlines():
                cmd = re.sub(r"\s+#.*$", "", line).strip()
                cmd = re.sub(r"\s+", " ", cmd)
                if not cmd or cmd.startswith("#"):
                    continue
                out.append((doc, cmd, cwd))
                if cmd.startswith("cd "):
                    cwd = str(Path(cwd) / cmd[3:].strip())
    return out


def test_table_lists_every_documented_command():
    shown = {(d, c) for d, c, _ in documented_commands()}
    assert shown == set(COMMANDS), (f"documented but not in the table: {sorted(shown - set(COMMANDS))}; "
                                    f"in the table but no longer documented: {sorted(set(COMMANDS) - shown)}")


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A clone of HEAD in an empty folder, installed with the README's first command (which also runs the demo)."""
    if not (ROOT / ".git").exists():
        pytest.fail(f"{ROOT} is not a git checkout: this test clones the repository")
    where = tmp_path_factory.mktemp("newcomer") / "fabricsim"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(where)], check=True, timeout=300)
    assert not (where.parent / "shared").exists()
    install = next(c for (d, c), how in COMMANDS.items() if d == "README.md" and c.endswith("fabricsim demo"))
    t0 = time.perf_counter()
    r = subprocess.run(["bash", "-c", install], cwd=where, capture_output=True, text=True, timeout=1200,
                       env=_env(where))
    assert r.returncode == 0, f"{install} -> exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    assert "busbw" in r.stdout and "one iteration takes" in r.stdout  # the demo's table and its training answer
    print(f"\n{time.perf_counter() - t0:8.1f} s  {install}")
    return where


def _env(where: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "FABRICSIM_SHARED")}
    env["PATH"] = f"{where / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["MPLBACKEND"] = "Agg"
    return env


def _params():
    rows = []
    for doc, cmd, cwd in documented_commands():
        how = COMMANDS.get((doc, cmd))
        if how in (None, NOT_HERE) or cmd.startswith("cd ") or "pip install" in cmd:
            continue
        marks = [pytest.mark.slow] if how == SLOW else []
        rows.append(pytest.param(doc, cmd, cwd, marks=marks, id=f"{doc}::{cmd[:70]}"))
    return rows


@pytest.mark.clone
@pytest.mark.parametrize("doc, cmd, cwd", _params())
def test_documented_command_exits_0(clone, doc, cmd, cwd):
    # each command as a reader runs it first: documents repeat commands, and results are not replaced without --force
    shutil.rmtree(clone / cwd / "out", ignore_errors=True)
    t0 = time.perf_counter()
    r = subprocess.run(["bash", "-c", cmd], cwd=clone / cwd, capture_output=True, text=True, timeout=1800, env=_env(clone))
    assert r.returncode == 0, f"{doc}: {cmd} -> exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    assert r.stdout.strip(), f"{doc}: {cmd} printed nothing"
    assert "Traceback" not in r.stderr
    print(f"\n{time.perf_counter() - t0:8.1f} s  {cmd}")


@pytest.mark.clone
@pytest.mark.parametrize("doc", [pytest.param(d, marks=[pytest.mark.slow] if d in SLOW_SCRIPTS else []) for d in SCRIPT_DOCS])
def test_documented_python_runs(clone, doc, tmp_path):
    blocks = _blocks(doc, "python")
    assert blocks, f"{doc} has no python block any more: update SCRIPT_DOCS"
    script = tmp_path / "doc.py"
    script.write_text("\n".join(blocks))
    r = subprocess.run([str(clone / ".venv" / "bin" / "python"), str(script)], cwd=clone, capture_output=True,
                       text=True, timeout=1800, env=_env(clone))
    assert r.returncode == 0, f"{doc}'s python blocks -> exit {r.returncode}\n{r.stderr[-3000:]}"


def test_every_python_document_is_listed():
    assert [d for d in DOCS if _blocks(d, "python")] == SCRIPT_DOCS


@pytest.mark.clone
def test_documented_train_config_loads(clone, tmp_path):
    """docs/train.md's annotated config is a valid config (loaded by the clone's own fabricsim)."""
    (block,) = _blocks("docs/train.md", "yaml")
    cfg = tmp_path / "doc.yaml"
    cfg.write_text(block)
    code = f"from fabricsim.train import load_train_config; c = load_train_config({str(cfg)!r}); print(c.name)"
    r = subprocess.run([str(clone / ".venv" / "bin" / "python"), "-c", code], cwd=clone, capture_output=True,
                       text=True, timeout=300, env=_env(clone))
    assert r.returncode == 0 and "GPT-3 175B" in r.stdout, r.stderr[-2000:]


@pytest.mark.clone
def test_clone_collects_as_many_tests_as_this_checkout(clone):
    """Without `../shared` beside it the suite collects the same tests: the data it needs ships with it."""
    def collected(where: Path) -> int:
        r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"], cwd=where,
                           capture_output=True, text=True, timeout=600, env=_env(where) | {"PATH": os.environ["PATH"]})
        m = re.search(r"(\d+)(?:/\d+)? tests? collected", r.stdout)
        assert m, r.stdout[-2000:] + r.stderr[-2000:]
        return int(m.group(1))

    if shutil.which("git") is None:
        pytest.fail("git is needed to compare with HEAD")
    assert collected(clone) == collected(ROOT)
