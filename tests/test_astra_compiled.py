"""The compiled ASTRA-sim core (astra/emu_kernel.py) against the Python emulation, its reference:
every NPU's finish, compute, exposed and communication time equal, on random systems and on
workload graphs that differ per NPU (which no mirror serves); the same errors where runs deadlock;
a clear refusal where it does not serve and the Python emulation's answer under `engine="auto"`."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from fabricsim.astra.config import parse_impl
from fabricsim.astra.emu_compiled import run_kernel, workload_arrays
from fabricsim.astra.emu_network import NetSpec, SysSpec
from fabricsim.astra.emulator import simulate_collective
from fabricsim.astra.workload import run_workload
from fabricsim.errors import ConfigError
from fabricsim.workload.chakra_trace import COMM_COLL_NODE, COMP_NODE, EtNode, EtTrace

COMM_TYPE = {"all-reduce": 0, "all-gather": 2, "all-to-all": 6, "reduce-scatter": 7}
METADATA_NODE = 1


def _system(rng: random.Random, nd: int) -> SysSpec:
    """Random system settings; ring, direct or directN per dimension, or one flat ring/direct."""
    if rng.random() < 0.2:
        impls = (parse_impl(rng.choice(["oneRing", "oneDirect"])),)
    else:
        impls = tuple(parse_impl(rng.choice(["ring", "direct", "direct2"])) for _ in range(nd))
    return SysSpec(splits=rng.choice([1, 2, 4]), active_chunks=rng.choice([1, 2]),
                   endpoint_delay=rng.choice([0, 10]), local_mem_bw=rng.choice([0, 50, 1600]),
                   optimization=rng.choice(["baseline", "localBWAware"]), policy=rng.choice(["LIFO", "FIFO"]),
                   impls={c: impls for c in COMM_TYPE})


def _network(rng: random.Random, max_npus: int) -> tuple[NetSpec, str]:
    while True:
        nd = rng.choice([1, 1, 2, 3])
        dims = tuple(rng.choice([2, 3, 4, 5, 6, 7, 8]) for _ in range(nd))
        if math.prod(dims) <= max_npus:
            break
    backend = rng.choice(["congestion-unaware", "congestion-aware"]) if nd == 1 else "congestion-unaware"
    kinds = tuple(rng.choice(["Ring", "FullyConnected", "Switch"]) for _ in dims)
    net = NetSpec(kinds, dims, tuple(rng.choice([12.5, 50.0]) * 2**30 / 1e9 for _ in dims),
                  tuple(float(rng.choice([0, 10, 500])) for _ in dims))
    return net, backend


def _graphs(rng: random.Random, net: NetSpec, splits: int) -> list[EtTrace]:
    """One graph per NPU: the same collectives in the same order (so they meet), compute of durations
    that differ per NPU, metadata and replayed broadcasts, dependencies on up to two earlier nodes."""
    plan = []
    for _ in range(rng.randint(2, 7)):
        r = rng.random()
        if r < 0.45:
            plan.append(("comp", rng.random() < 0.3))
        elif r < 0.55:
            plan.append(("meta", None))
        elif r < 0.6:
            plan.append(("bcast", rng.choice([0, 2, 7])))
        else:
            involved = tuple(rng.random() < 0.7 for _ in net.dims) if len(net.dims) > 1 and rng.random() < 0.3 else None
            plan.append((rng.choice(list(COMM_TYPE)), (rng.choice([2**16, 3 * 2**14, 2**20]) * splits, involved)))
    deps = [tuple(sorted({rng.randrange(k) for _ in range(rng.randint(0, min(k, 2)))})) if k else () for k in range(len(plan))]
    traces = []
    for npu in range(net.npus):
        first = 1000 * npu  # ids shifted per rank, as Chakra's converter numbers them
        nodes = []
        for k, (what, arg) in enumerate(plan):
            d = tuple(first + x for x in deps[k])
            if what == "comp":
                nodes.append(EtNode(first + k, f"c{k}", COMP_NODE, data_deps=d, duration_micros=rng.choice([0, 1, 3, 7, 40]),
                                    attrs={"is_cpu_op": arg}))
            elif what == "meta":
                nodes.append(EtNode(first + k, f"m{k}", METADATA_NODE, data_deps=d))
            elif what == "bcast":
                nodes.append(EtNode(first + k, f"b{k}", COMM_COLL_NODE, data_deps=d, duration_micros=arg,
                                    attrs={"is_cpu_op": False, "comm_type": 5, "comm_size": 64}))
            else:
                size, involved = arg
                attrs = {"is_cpu_op": False, "comm_type": COMM_TYPE[what], "comm_size": size}
                if involved is not None:
                    attrs["involved_dim"] = involved
                nodes.append(EtNode(first + k, f"x{k}", COMM_COLL_NODE, data_deps=d, attrs=attrs))
        traces.append(EtTrace(npu, "0.0.4", {}, tuple(nodes)))
    return traces


def _outcome(fn):
    try:
        return fn()
    except ConfigError as e:
        return ("error", str(e))


def test_compiled_equals_python_on_graphs_that_differ_per_npu():
    """120 random systems and per-NPU graphs: every field of every NPU equal, or the same error."""
    rng = random.Random(7)
    finished = 0
    for case in range(120):
        net, backend = _network(rng, 40)
        sys_ = _system(rng, len(net.dims))
        traces = _graphs(rng, net, sys_.splits)
        python = _outcome(lambda: run_workload(net, sys_, traces, backend, engine="python"))
        compiled = _outcome(lambda: run_workload(net, sys_, traces, backend, engine="compiled"))
        assert compiled == python, (case, net, backend, sys_)
        finished += not isinstance(python, tuple)
    assert finished > 100  # the comparison is of runs, not mostly of errors


@pytest.mark.parametrize("seed", range(3))
def test_compiled_equals_python_for_one_collective_on_every_npu(seed):
    """`simulate_collective` in full mode: the same finish tick per NPU, including what mirror mode
    cannot serve (direct on a congestion-aware ring of more than 3 NPUs, flat rings over several
    dimensions)."""
    rng = random.Random(100 + seed)
    for _ in range(25):
        net, backend = _network(rng, 64)
        sys_ = _system(rng, len(net.dims))
        coll = rng.choice(list(COMM_TYPE))
        size = rng.choice([2**16, 2**20]) * sys_.splits
        python = simulate_collective(net, sys_, coll, size, backend, mode="full", engine="python")
        assert simulate_collective(net, sys_, coll, size, backend, mode="full", engine="compiled") == python


def test_ring_all_reduce_after_per_npu_compute_at_96_npus():
    """The benchmark's shape (5, 6 or 7 us of compute, then a 1 MiB ring all-reduce in 4 chunks) on a
    96-NPU ring, both backends: equal to the Python emulation; and to the spec's closed form where all
    NPUs start together."""
    net = NetSpec(("Ring",), (96,), (50.0 * 2**30 / 1e9,), (500.0,))
    sys_ = SysSpec(splits=4, active_chunks=1, endpoint_delay=10, local_mem_bw=1600, impls={"all-reduce": (parse_impl("ring"),)})
    for backend in ("congestion-unaware", "congestion-aware"):
        traces = []
        for r in range(96):
            comp = EtNode(0, "c", COMP_NODE, duration_micros=5 + r % 3, attrs={"is_cpu_op": False})
            coll = EtNode(1, "ar", COMM_COLL_NODE, data_deps=(0,), attrs={"is_cpu_op": False, "comm_type": 0, "comm_size": 2**20})
            traces.append(EtTrace(r, "0.0.4", {}, (comp, coll)))
        python = run_workload(net, sys_, traces, backend, engine="python")
        assert run_workload(net, sys_, traces, backend, engine="compiled") == python
        assert len({r.finish_ns for r in python}) > 1  # the NPUs do differ
    # all together: the spec's exact closed form (tests/test_astra_compat.py), every NPU simulated
    P, S, d, L, bw, n = 4, 2**20, 10, 500.0, 1600, 96
    m = (S // P) // n
    expect = P * ((2 * (n - 1) + 1) * d + 2 * (n - 1) * math.floor(L + m / net.bw[0]) + (n - 1) * 3 * math.floor(m / bw))
    for backend in ("congestion-unaware", "congestion-aware"):
        assert simulate_collective(net, sys_, "all-reduce", S, backend, mode="full", engine="compiled") == [expect] * n


def test_capacities_grow_and_give_the_same_answer():
    """Starting from capacities of a few entries (each run out several times), the same results."""
    rng = random.Random(3)
    net = NetSpec(("Ring",), (12,), (50.0 * 2**30 / 1e9,), (500.0,))
    sys_ = SysSpec(splits=2, active_chunks=2, endpoint_delay=10, local_mem_bw=1600,
                   impls={c: (parse_impl("direct"),) for c in COMM_TYPE})
    traces = _graphs(rng, net, sys_.splits)
    for backend in ("congestion-unaware", "congestion-aware"):
        arrays = workload_arrays(net, sys_, traces)
        big = run_kernel(net, sys_, backend, arrays)
        small = run_kernel(net, sys_, backend, arrays, caps=[2, 2, 1, 1, 1])
        for a, b in zip(big, small):
            np.testing.assert_array_equal(a, b)
        expected = run_workload(net, sys_, traces, backend, engine="python")
        assert [r.finish_ns for r in expected] == big[0].tolist()


def test_a_run_the_core_does_not_serve():
    """halvingDoubling: a one-line refusal under engine="compiled", the Python emulation's answer
    under "auto"; an unknown engine is refused, in mirror mode too."""
    net = NetSpec(("Ring",), (8,), (50.0 * 2**30 / 1e9,), (500.0,))
    sys_ = SysSpec(splits=1, impls={"all-reduce": (parse_impl("halvingDoubling"),)})
    traces = [EtTrace(r, "", {}, (EtNode(0, "ar", COMM_COLL_NODE, attrs={"comm_type": 0, "comm_size": 2**20}),))
              for r in range(8)]
    with pytest.raises(ConfigError) as e:
        run_workload(net, sys_, traces, engine="compiled")
    assert "engine" in str(e.value) and "only ring and direct" in str(e.value) and "\n" not in str(e.value)
    assert run_workload(net, sys_, traces, engine="auto") == run_workload(net, sys_, traces, engine="python")
    with pytest.raises(ConfigError, match="engine"):
        simulate_collective(net, sys_, "all-reduce", 2**20, mode="full", engine="compiled")
    with pytest.raises(ConfigError, match="accepted: auto, python, compiled"):
        run_workload(net, sys_, traces, engine="numba")
    ring = SysSpec(splits=1, impls={"all-reduce": (parse_impl("ring"),)})  # mirror mode serves it: checked there too
    with pytest.raises(ConfigError, match="accepted: auto, python, compiled"):
        simulate_collective(net, ring, "all-reduce", 2**20, engine="numba")


def test_a_deadlock_gives_the_same_error():
    """NPU 0 issues one collective more than the others: both engines name NPU 0 and the nodes it
    never issued, word for word."""
    net = NetSpec(("Ring",), (4,), (50.0 * 2**30 / 1e9,), (500.0,))
    sys_ = SysSpec(splits=1, impls={"all-reduce": (parse_impl("ring"),)})
    ar = {"is_cpu_op": False, "comm_type": 0, "comm_size": 2**16}
    traces = [EtTrace(r, "", {}, (EtNode(0, "a", COMM_COLL_NODE, attrs=ar),) +
                      ((EtNode(1, "b", COMM_COLL_NODE, data_deps=(0,), attrs=ar),
                        EtNode(2, "c", COMP_NODE, data_deps=(1,), duration_micros=1)) if r == 0 else ()))
              for r in range(4)]
    python = _outcome(lambda: run_workload(net, sys_, traces, engine="python"))
    assert isinstance(python, tuple) and "NPU 0 never finished" in python[1]
    assert _outcome(lambda: run_workload(net, sys_, traces, engine="compiled")) == python
