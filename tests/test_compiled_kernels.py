"""The flow model's kernels in their two builds (`fabricsim.kernels`): numba-compiled and cached on
disk, or the same source as Python for a small run on a cold cache. Which build runs is a matter
of speed only: both must give bit-identical results, and a cold cache must compile nothing for a
small run."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import fabricsim.kernels as kernels
from fabricsim.network.flow import Flows, simulate_flows
from fabricsim.topology import parse_topology

ROOT = Path(__file__).resolve().parents[1]
FLOW_KERNELS = ("fabricsim.network.flow.kernel", "fabricsim.network.flow.maxmin_kernel", "fabricsim.network.flow.solo")


def _build(monkeypatch, which: str) -> None:
    """Make every `kernels.load` in this test return the `which` build, cache or not."""
    monkeypatch.setattr(kernels, "_cached", {})  # nothing decided yet in this process
    if which == "python":
        monkeypatch.setattr(kernels, "is_cached", lambda *a: False)
        monkeypatch.setattr(kernels, "PYTHON_LIMIT", float("inf"))
    else:
        monkeypatch.setattr(kernels, "PYTHON_LIMIT", 0)


def _contending(seed: int, n: int, holds: bool = False) -> tuple:
    """n random flows on an 8x8 torus: they share links (the event loop and max-min runs)."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, 64, n)
    dst = (src + rng.integers(1, 64, n)) % 64
    prio = rng.integers(0, 2, n)
    cap = np.where(rng.random(n) < 0.3, 2e10, np.inf)
    start = rng.uniform(0, 2e-6, n)
    dep_ptr = np.concatenate([[0], np.cumsum(np.r_[0, (rng.random(n - 1) < 0.4).astype(int)])])
    dep_idx = np.flatnonzero(np.diff(dep_ptr)) - 1  # flow i waits for flow i - 1 where it has one
    return Flows(src, dst, rng.uniform(1e4, 1e6, n), start=start, cap=cap, priority=prio,
                 dep_ptr=dep_ptr, dep_idx=dep_idx)


def _chain(n: int) -> Flows:
    """n flows one after another around a ring: no two ever meet (the one-pass solo timing)."""
    return Flows(np.arange(n) % 64, (np.arange(n) + 1) % 64, np.full(n, 1e5),
                 dep_ptr=np.concatenate([[0, 0], np.arange(1, n)]), dep_idx=np.arange(n - 1))


CASES = {
    "contending-40": ("torus:8x8", lambda: _contending(1, 40), False),
    "contending-150": ("torus:8x8", lambda: _contending(2, 150), False),
    "contending-150-exact": ("torus:8x8", lambda: _contending(3, 150), True),
    "chain-500": ("ring:64", lambda: _chain(500), False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_python_and_compiled_builds_give_bit_identical_results(case, monkeypatch):
    spec, make, exact = CASES[case]
    topo = parse_topology(spec, "100GB/s", "100ns")
    got = {}
    for which in ("python", "compiled"):
        with monkeypatch.context() as m:
            _build(m, which)
            r = simulate_flows(topo, make(), exact=exact, record_timeline=False)
        got[which] = r
    a, b = got["python"], got["compiled"]
    for name in ("start", "sent", "finish", "link_bytes", "link_busy"):
        x, y = getattr(a, name), getattr(b, name)
        assert np.array_equal(x, y, equal_nan=True), name
    assert a.events == b.events
    assert np.isfinite(a.finish).all() and (a.finish > 0).all()


def test_both_builds_time_kernels_slowed_by_what_communication_holds(monkeypatch):
    """The flow engine with endpoint holds (gated flows re-capped as holds rise and fall): four
    NPUs, kernels of both kinds beside ring all-reduces, NPU-driven and NCCL endpoints."""
    from fabricsim.engine.pricing import CommPricer
    from fabricsim.engine.simulator import simulate
    from fabricsim.system import NPU, NpuDriven, Scheduling, System, make_endpoint
    from fabricsim.workload.graph import GraphBuilder

    npu = NPU(peak_flops=1e15, memory_bandwidth=1e12, efficiency=1.0)
    got = {}
    for which in ("python", "compiled"):
        ends = []
        for ep in (NpuDriven(0.25, 0.5), make_endpoint("nccl", ctas=16, sms=128)):
            b = GraphBuilder(4)
            for r in range(4):
                b.compute(r, "gemm", flops=(r + 1) * 2e12, mem_bytes=1e9)
                b.compute(r, "norm", flops=1e11, mem_bytes=(4 - r) * 2e9)
            b.collective("all-reduce", 3e8, (0, 1, 2, 3), "DP", "ar")
            b.collective("all-reduce", 1e8, (0, 2), "MP", "ar2")
            with monkeypatch.context() as m:
                _build(m, which)
                res = simulate(b.build(), System(npu, ep, Scheduling()),
                               CommPricer(parse_topology("ring:4", "50GB/s", "1us"), "flow"))
            ends.append(np.asarray(res.end, dtype=float))
        got[which] = np.concatenate(ends)
    assert np.array_equal(got["python"], got["compiled"])
    assert (got["python"] > 0).all()


def test_a_cold_cache_gives_small_runs_the_python_build_and_big_ones_the_compiled(monkeypatch):
    monkeypatch.setattr(kernels, "_cached", {})
    monkeypatch.setattr(kernels, "is_cached", lambda *a: False)
    said = []
    monkeypatch.setattr("fabricsim.progress.notice", said.append)
    small = kernels.load("fabricsim.network.flow.maxmin_kernel", ("update",), kernels.PYTHON_LIMIT - 1, "x")
    assert small.__name__ == "fabricsim.network.flow.maxmin_kernel[python]"
    assert isinstance(small.update, types.FunctionType)  # a plain function: nothing to compile
    assert isinstance(small._set_key, types.FunctionType)  # its sibling's helper from the same build
    assert said == []
    big = kernels.load("fabricsim.network.flow.maxmin_kernel", ("update",), kernels.PYTHON_LIMIT, "the kernels")
    assert big is sys.modules["fabricsim.network.flow.maxmin_kernel"]
    assert not isinstance(big.update, types.FunctionType)  # numba's dispatcher
    assert said == ["compiling the kernels (numba, once per install; about 10 s)"]


def test_a_warm_cache_always_gives_the_compiled_build(monkeypatch):
    monkeypatch.setattr(kernels, "_cached", {})
    looked = []
    monkeypatch.setattr(kernels, "is_cached", lambda *a: looked.append(a[1]) or True)
    got = kernels.load("fabricsim.network.flow.kernel", ("release",), 1, "x")
    assert got is sys.modules["fabricsim.network.flow.kernel"]
    again = kernels.load("fabricsim.network.flow.kernel", ("release",), 1, "x")
    assert again is got and looked == [("release",)]  # the cache index is read once per process


def test_the_notice_is_written_only_to_a_terminal(monkeypatch):
    from fabricsim.progress import notice

    class Tty(io.StringIO):
        def isatty(self):
            return True

    pipe, tty = io.StringIO(), Tty()
    monkeypatch.setattr(sys, "stderr", pipe)
    notice("compiling")
    monkeypatch.setattr(sys, "stderr", tty)
    notice("compiling")
    assert pipe.getvalue() == ""
    assert tty.getvalue() == "fabricsim: compiling\n"


def _cache_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in (".nbi", ".nbc"))


def _env(tmp_path: Path) -> dict:
    """A fresh install: numba's cache an empty folder of its own (NUMBA_CACHE_DIR)."""
    return {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"), "PYTHONPATH": str(ROOT / "src")}


def test_a_fresh_install_runs_the_readme_flow_collective_without_compiling(tmp_path):
    """The 64-rank flow run of the README on an empty numba cache compiles nothing."""
    run = subprocess.run([sys.executable, "-m", "fabricsim", "collective", "-t", "torus:8x8", "-a", "swing",
                          "-m", "flow", "-s", "1MiB", "-q"], env=_env(tmp_path), capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert "155.16" in run.stdout  # busbw: 2 x 63/64 x 1 MiB / 13.30 us
    assert _cache_files(tmp_path) == []


@pytest.mark.slow
def test_a_fresh_install_compiles_a_big_run_once_into_the_cache(tmp_path):
    """1,000 contending flows (work 10^6, above PYTHON_LIMIT) compile the loop's kernels and fill
    the empty cache (about 10 s)."""
    big = ("import numpy as np\nfrom fabricsim.topology import parse_topology\n"
           "from fabricsim.network.flow import Flows, simulate_flows\n"
           "rng = np.random.default_rng(0); src = rng.integers(0, 64, 1000)\n"
           "simulate_flows(parse_topology('torus:8x8', '100GB/s', '100ns'),"
           " Flows(src, (src + rng.integers(1, 64, 1000)) % 64, rng.uniform(1e5, 1e6, 1000)))\n")
    run = subprocess.run([sys.executable, "-c", big], env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    names = {p.name.split("-")[0] for p in _cache_files(tmp_path)}
    # the compiled event loop (`event_kernel.run_events`) holds the loop's kernels
    assert {"event_kernel.run_events"} <= names
