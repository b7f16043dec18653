"""Start-up (issue 20): commands import only what they use, so `fabricsim --help` and `fabricsim astra`
start fast. Untimed: each check runs the command in a fresh interpreter and looks at `sys.modules`
(the times themselves are in benchmarks/bench_startup.py).

`pydantic` is not on the astra list: typer (0.29) validates every command's parameter values with a
pydantic TypeAdapter, so any command that takes options imports it; `fabricsim --help` does not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fabricsim

SRC = Path(fabricsim.__file__).resolve().parents[1]

# what `fabricsim --help` must not import (0.1-0.3 s each, or their whole stack)
NOT_FOR_HELP = ("numpy", "scipy", "scipy.sparse", "matplotlib", "pydantic", "google.protobuf", "yaml", "dask",
                "distributed", "pyarrow", "rustworkx", "fabricsim.topology.spec", "fabricsim.collectives.registry",
                "fabricsim.network.model", "fabricsim.experiments", "fabricsim.astra.run")
# what `fabricsim astra` (ASTRA-sim's files in, the emulator, a table out) must not import
NOT_FOR_ASTRA = ("numpy", "scipy", "matplotlib", "dask", "distributed", "pyarrow", "rustworkx",
                 "fabricsim.topology.spec", "fabricsim.collectives.registry", "fabricsim.network.model",
                 "fabricsim.experiments", "fabricsim.workload.models", "fabricsim.workload.astra_text")


def _modules_after(code: str, cwd: Path | None = None) -> dict:
    """Run `code` (which sets `rc`) in a fresh interpreter; its exit code and the modules it imported."""
    script = ("import contextlib, io, json, sys\n" + code +
              "\nprint(json.dumps({'rc': rc, 'modules': sorted(sys.modules)}))\n")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=cwd, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def _run_cli(argv: list[str]) -> str:
    return ("from fabricsim.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            f"    rc = main({argv!r})\n")


@pytest.mark.parametrize("argv", [["--help"], []])
def test_help_imports_no_heavy_library(argv):
    out = _modules_after(_run_cli(argv))
    assert out["rc"] == 0
    assert [m for m in NOT_FOR_HELP if m in out["modules"]] == []


@pytest.mark.parametrize("argv", [["collective", "--help"], ["astra", "--help"], ["train", "--help"],
                                  ["topology", "--help"], ["export", "--help"], ["sweep", "--help"]])
def test_command_help_imports_no_numerics(argv):
    # a command's own --help goes through typer's parameter validation (pydantic), nothing more
    # (`reproduce --help` lists the studies, so it imports them)
    out = _modules_after(_run_cli(argv))
    assert out["rc"] == 0
    assert [m for m in NOT_FOR_HELP if m in out["modules"] and m != "pydantic"] == []


def test_import_fabricsim_is_light():
    out = _modules_after("import fabricsim, fabricsim.cli, fabricsim.topology.defaults\nrc = 0")
    assert [m for m in NOT_FOR_HELP if m in out["modules"]] == []


@pytest.mark.parametrize("backend", ["congestion-unaware", "congestion-aware"])
def test_astra_imports_no_numerics(tmp_path, backend):
    from fabricsim.workload.chakra import collective_traces, write_traces

    (tmp_path / "net.yml").write_text("topology: [ Ring ]\nnpus_count: [ 8 ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    (tmp_path / "sys.json").write_text(json.dumps({
        "scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1,
        "preferred-dataset-splits": 4, "collective-optimization": "localBWAware", "all-reduce-implementation": ["ring"], "all-gather-implementation": ["ring"],
        "reduce-scatter-implementation": ["ring"], "all-to-all-implementation": ["ring"]}))
    write_traces(tmp_path / "x", collective_traces("all-reduce", 1 << 20, 8))
    out = _modules_after(_run_cli(["astra", "--workload-configuration", "x", "--system-configuration", "sys.json",
                                   "--network-configuration", "net.yml", "--backend", backend]), cwd=tmp_path)
    assert out["rc"] == 0
    assert [m for m in NOT_FOR_ASTRA if m in out["modules"]] == []


@pytest.mark.parametrize("package", ["fabricsim", "fabricsim.topology", "fabricsim.workload"])
def test_lazy_reexports_resolve(package):
    """Every name a lazy package lists is the object its submodule defines, and `dir` shows it."""
    import importlib

    mod = importlib.import_module(package)
    for name in mod.__all__:
        value = getattr(mod, name)
        assert value is not None, name
        assert name in dir(mod)
    with pytest.raises(AttributeError):
        mod.no_such_name  # noqa: B018
    ns: dict = {}
    exec(f"from {package} import *", ns)  # noqa: S102
    assert set(mod.__all__) <= set(ns)


def test_lazy_reexports_are_the_defining_objects():
    import fabricsim.collectives.api as api
    import fabricsim.errors as errors
    import fabricsim.topology.spec as spec
    import fabricsim.workload.chakra as chakra
    from fabricsim import ScheduleError, build_schedule, parse_topology
    from fabricsim.collectives.verify import ScheduleError as VerifyScheduleError
    from fabricsim.topology import FAMILIES
    from fabricsim.workload import read_traces

    assert build_schedule is api.build_schedule and parse_topology is spec.parse_topology
    assert FAMILIES is spec.FAMILIES and read_traces is chakra.read_traces
    assert ScheduleError is VerifyScheduleError is errors.ScheduleError
