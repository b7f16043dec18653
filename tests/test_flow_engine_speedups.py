"""The flow model's fast paths against the straightforward ones they replace, bit for bit.

- the compiled event loop (`network.flow.event_kernel`, `FlowRun.run`) against the stepwise loop
  (`FlowRun.run_stepwise`): every unit's times, link busy times and the event count, on contending
  flows with priorities, caps, dependencies, weighted explicit routes, store-and-forward hops, and
  on a training graph with endpoint holds (gated compute re-capped as holds rise and fall);
- the set-up passes (`network.flow.rows`): `unique_rows` against `np.unique(axis=0)` (also through
  a forced hash collision), `route_keys`, `path_sums` and `successors` compiled against numpy;
- the merge sorts the compiled loop sorts with, against numpy's stable argsort;
- the flow engine's pricing of each distinct size once against pricing every task's size.
"""

from __future__ import annotations

import numpy as np
import pytest

import fabricsim.kernels as kernels
from fabricsim.network.flow import Flows, Holds, _units, rows
from fabricsim.network.flow.loop import FlowRun
from fabricsim.topology import parse_topology


@pytest.fixture
def compiled(monkeypatch):
    """Every `kernels.load` gives the compiled build (the fast paths run only there)."""
    monkeypatch.setattr(kernels, "_cached", {})
    monkeypatch.setattr(kernels, "PYTHON_LIMIT", 0)


def _numpy_only(monkeypatch):
    """Every `kernels.load` gives the Python build: `rows` then takes its numpy paths."""
    monkeypatch.setattr(kernels, "_cached", {})
    monkeypatch.setattr(kernels, "is_cached", lambda *a: False)
    monkeypatch.setattr(kernels, "PYTHON_LIMIT", float("inf"))


def _contending(seed: int, n: int, weighted: bool = False) -> Flows:
    """n random flows on a 4x4 torus that share links: priorities, caps, starts, chains of
    dependencies; optionally explicit routes with weights (and an empty route)."""
    rng = np.random.default_rng(seed)
    topo = parse_topology("torus:4x4", "100GB/s", "100ns")
    src = rng.integers(0, 16, n)
    dst = (src + rng.integers(1, 16, n)) % 16
    dep_ptr = np.concatenate([[0], np.cumsum(np.r_[0, (rng.random(n - 1) < 0.4).astype(int)])])
    kw = dict(start=rng.uniform(0, 2e-6, n), cap=np.where(rng.random(n) < 0.3, 2e10, np.inf),
              priority=rng.integers(0, 3, n), dep_ptr=dep_ptr, dep_idx=np.flatnonzero(np.diff(dep_ptr)) - 1)
    size = np.where(rng.random(n) < 0.1, 0.0, rng.choice([1e5, 3e5, 1e6], n))  # equal sizes: ties
    if weighted:
        ptr, links = topo.route(src, dst)
        hops = np.diff(ptr)
        hops[0] = 0  # an empty route: arrives after its latency
        ptr = np.concatenate([[0], np.cumsum(hops)])
        links = np.concatenate([links[a: a + h] for a, h in zip(topo.route(src, dst)[0][:-1], hops)])
        kw.update(route_ptr=ptr, route_links=links, route_weight=rng.choice([1.0, 0.5, 2.0], len(links)),
                  latency=np.where(rng.random(n) < 0.2, 1e-7, np.nan))
    return topo, Flows(src, dst, size, **kw)


def _both_loops(topo, flows, mode="pipelined", incremental=True):
    """(compiled run, stepwise run) of the same flows: (t_start, t_sent, t_done, link_busy, events)."""
    got = []
    for stepwise in (False, True):
        run = FlowRun(topo, flows, _units(topo, flows, mode, 0.0), False, incremental)
        if stepwise:
            got.append(run.run_stepwise()[:5])
        else:
            run.run_stepwise = _refuse  # run() must take the compiled loop
            got.append(run.run()[:5])
    return got


def _refuse():
    raise AssertionError("the stepwise loop ran where the compiled one should")


def _assert_same(a, b):
    for x, y in zip(a[:4], b[:4]):
        assert np.array_equal(x, y, equal_nan=True)
    assert a[4] == b[4]


@pytest.mark.parametrize("seed,weighted,mode,incremental", [
    (1, False, "pipelined", True), (2, True, "pipelined", True), (3, False, "store-and-forward", True),
    (4, True, "pipelined", False)])
def test_compiled_loop_equals_the_stepwise_loop(compiled, seed, weighted, mode, incremental):
    topo, flows = _contending(seed, 120, weighted)
    fast, slow = _both_loops(topo, flows, mode, incremental)
    _assert_same(fast, slow)
    assert fast[4] > 10 and np.isfinite(fast[2]).all()


def _training_flows(endpoint):
    """The flows of a four-NPU training graph (compute beside two all-reduces) on a ring, as the
    flow engine builds them, with the endpoint's holds."""
    from fabricsim.engine.flow_engine import _FlowGraph
    from fabricsim.engine.pricing import CommPricer
    from fabricsim.system import NPU, Scheduling, System
    from fabricsim.workload.graph import GraphBuilder

    b = GraphBuilder(4)
    for r in range(4):
        b.compute(r, "gemm", flops=(r + 1) * 2e12, mem_bytes=1e9)
        b.compute(r, "norm", flops=1e11, mem_bytes=(4 - r) * 2e9)
    b.collective("all-reduce", 3e8, (0, 1, 2, 3), "DP", "ar")
    b.collective("all-reduce", 1e8, (0, 2), "MP", "ar2")
    system = System(NPU(peak_flops=1e15, memory_bandwidth=1e12, efficiency=1.0), endpoint, Scheduling())
    pricer = CommPricer(parse_topology("ring:4", "50GB/s", "1us"), "flow").for_system(endpoint, system.npu)
    return _FlowGraph(b.build(), system, pricer).assemble()


def test_compiled_loop_equals_the_stepwise_loop_with_holds(compiled):
    from fabricsim.system import NpuDriven, make_endpoint

    for endpoint in (NpuDriven(0.25, 0.5), make_endpoint("nccl", ctas=16, sms=128)):
        topo, flows = _training_flows(endpoint)
        assert flows.holds is not None and (flows.holds.gate >= 0).any()
        fast, slow = _both_loops(topo, flows)
        _assert_same(fast, slow)


def test_compiled_loop_reports_a_stall_as_the_stepwise_loop_does(compiled):
    """A gated flow whose group is wholly held never finishes: both loops say so."""
    topo = parse_topology("ring:2", "1GB/s", "0ns")
    holds = Holds(group=np.array([0]), units=np.array([1.0]), memory=np.array([0.0]),
                  mark_ptr=np.array([0, 1, 1]), mark_idx=np.array([0]), mark_delta=np.array([1]),
                  gate=np.array([-1, 0]), compute=np.array([0.0, 1.0]), memory_time=np.array([0.0, 0.0]),
                  rate=np.ones(2))
    flows = Flows([0, 0], [1, 1], [1.0, 1.0], dep_ptr=np.array([0, 0, 1]), dep_idx=np.array([0]), holds=holds)
    for stepwise in (False, True):
        run = FlowRun(topo, flows, _units(topo, flows, "pipelined", 0.0), False)
        with pytest.raises(RuntimeError, match="stalled"):
            (run.run_stepwise if stepwise else run.run)()


def _random_cols(rng, n: int, floats: bool) -> list:
    cols = []
    for _ in range(int(rng.integers(1, 5))):
        if floats:
            cols.append(rng.choice([0.0, -0.0, 1.5, np.inf, 2.0, -np.inf], n) if rng.random() < 0.8 else np.full(n, 3.0))
        else:
            cols.append(rng.integers(0, 2**63, 4, dtype=np.uint64)[rng.integers(0, 4, n)])
    return cols


def test_unique_rows_equals_numpys_unique(compiled, monkeypatch):
    rng = np.random.default_rng(0)
    for trial in range(60):
        cols = _random_cols(rng, int(rng.integers(1, 400)), trial % 2 == 0)
        _, first, inv = np.unique(np.stack(cols, axis=1), axis=0, return_index=True, return_inverse=True)
        got = rows.unique_rows(cols)
        assert np.array_equal(got[0], first) and np.array_equal(got[1], inv.reshape(-1))
    # every row hashed alike: the comparison with each group's first row finds it, numpy sorts
    monkeypatch.setattr(rows, "_row_hash", lambda cols, mod: np.zeros(len(cols[0]), np.uint64))
    cols = _random_cols(rng, 200, True)
    _, first, inv = np.unique(np.stack(cols, axis=1), axis=0, return_index=True, return_inverse=True)
    got = rows.unique_rows(cols)
    assert np.array_equal(got[0], first) and np.array_equal(got[1], inv.reshape(-1))


def _random_routes(rng, n: int):
    hops = rng.integers(0, 6, n)
    pool = [rng.integers(0, 20, h) for h in range(6) for _ in range(3)]  # a few routes of each length
    links = [pool[3 * h + int(rng.integers(0, 3))] for h in hops]
    ptr = np.concatenate([[0], np.cumsum(hops)]).astype(np.int64)
    return ptr, np.concatenate(links + [np.zeros(0, np.int64)]).astype(np.int64)


def _compiled_and_numpy(monkeypatch, fn):
    """fn() with the compiled set-up passes, then with numpy's."""
    with monkeypatch.context() as m:
        m.setattr(kernels, "_cached", {})
        m.setattr(kernels, "PYTHON_LIMIT", 0)
        a = fn()
    with monkeypatch.context() as m:
        _numpy_only(m)
        b = fn()
    return a, b


def test_route_keys_path_sums_and_successors_equal_their_numpy_paths(monkeypatch):
    rng = np.random.default_rng(1)
    link_lat, link_bw = rng.uniform(0, 1e-6, 20), rng.choice([1e9, 5e10, 2.5e11], 20)
    for trial in range(30):
        n = int(rng.integers(1, 300))
        ptr, links = _random_routes(rng, n)
        w = None if trial % 2 else rng.choice([1.0, 0.5, 2.0], len(links))
        a, b = _compiled_and_numpy(monkeypatch, lambda: rows.route_keys(ptr, links, w))
        assert np.array_equal(a, b)
        a, b = _compiled_and_numpy(monkeypatch, lambda: rows.path_sums(ptr, links, link_lat, link_bw, w))
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
        dep_ptr = np.concatenate([[0], np.cumsum(rng.integers(0, 3, n))])
        dep_idx = rng.integers(0, n, dep_ptr[-1])
        a, b = _compiled_and_numpy(monkeypatch, lambda: rows.successors(dep_ptr, dep_idx))
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_merge_sorts_equal_numpys_stable_sort(compiled):
    from fabricsim.network.flow import kernel

    rng = np.random.default_rng(2)
    for _ in range(100):
        n = int(rng.integers(0, 80))
        keys = rng.choice([0.0, 1.0, 2.5, -1.0, np.inf], 100)
        idx = np.concatenate([rng.permutation(100)[:n], [7, 7]]).astype(np.int64)
        want = idx[:n][np.argsort(keys[idx[:n]], kind="stable")]
        kernel.stable_order(idx, n, keys, np.zeros(len(idx), np.int64))
        assert np.array_equal(idx[:n], want) and idx[n:].tolist() == [7, 7]
        vals = rng.integers(0, 10, n).astype(np.int64)
        want = np.sort(vals)
        kernel.sort_values(vals, n, np.zeros(n, np.int64))
        assert np.array_equal(vals, want)


def test_pricing_each_distinct_size_once_chooses_as_pricing_every_task():
    """The flow engine asks NCCL's choice for each distinct size of a (collective, group) and
    spreads it over the tasks (`_FlowGraph._templates`): the same candidate as asking per task."""
    from fabricsim.engine.pricing import CommPricer

    pc = CommPricer(parse_topology("dgx-h100:nodes=2", "1GB/s", "0ns"), "flow")
    sizes = np.array([2.0**20, 2.0**27, 2.0**20, 3e4, 2.0**27, 3e4, 2.0**30])
    for coll, group in (("all-reduce", tuple(range(16))), ("all-gather", tuple(range(8)))):
        every = pc.priced(coll, group).winners(sizes)
        uniq, back = np.unique(sizes, return_inverse=True)
        assert np.array_equal(CommPricer(pc.topo, "flow").priced(coll, group).winners(uniq)[back], every)


def test_solo_sweep_pops_units_in_a_stable_sorts_order():
    """The one-pass timing's sweep (`network.flow.solo`) takes units from a heap keyed by (start,
    id), so that a conflict stops it early: the order it pops is numpy's stable argsort."""
    from fabricsim.network.flow import solo

    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(1, 200))
        key = rng.choice([0.0, -0.0, 1e-6, 2e-6, 3.5e-6], n)
        heap = solo._heap(key)
        popped = []
        for left in range(n, 0, -1):
            popped.append(int(heap[0]))
            heap[0] = heap[left - 1]
            solo._down(heap, left - 1, 0, key)
        assert popped == np.argsort(key, kind="stable").tolist()
