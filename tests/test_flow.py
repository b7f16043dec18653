"""The flow-level model against hand-computed answers and invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricsim.collectives.api import build_schedule
from fabricsim.ir import Schedule, make_step
from fabricsim.network import time_schedule
from fabricsim.network.lowering.dataflow import collective_flows, merge_flows
from fabricsim.network.flow import Flows, simulate_flows
from fabricsim.network.flow.maxmin import water_fill
from fabricsim.network.flow_model import time_collective_flow
from fabricsim.topology import from_edges, ring, switch, torus

G = 1e9  # 1 GB/s links in the textbook cases


def line(n, lat=0.0):
    return from_edges(list(range(n - 1)), list(range(1, n)), n_npus=n, name=f"line{n}", bandwidth=G, latency=lat)


def test_shared_bottleneck():
    """0->2 and 1->2 share link 1->2: 0.5 GB/s each, 1 GB each: both done at 2 s."""
    r = simulate_flows(line(3), Flows([0, 1], [2, 2], [1e9, 1e9]))
    np.testing.assert_allclose(r.finish, [2.0, 2.0])


def test_parking_lot():
    """Long flow over 3 links, one short flow per link: every link shared by 2 -> 0.5 each."""
    r = simulate_flows(line(4), Flows([0, 0, 1, 2], [3, 1, 2, 3], [1e9] * 4))
    np.testing.assert_allclose(r.finish, [2.0] * 4)


def test_max_min_is_not_equal_split():
    """Link a carries flows A (a only) and B (a, b); link b also carries C and D (b only). b's
    fair share is 1/3 (B, C, D); a then gives A the rest: 2/3. Sizes chosen so A and B finish
    first: B, C, D at 1/3 GB/s; A at 2/3 GB/s.
    Nodes: 0 -a-> 1 -b-> 2; A: 0->1, B: 0->2, C, D: 1->2."""
    rates = water_fill(np.array([G, G]), np.array([0, 1, 3, 4, 5]), np.array([0, 0, 1, 1, 1]),
                       np.ones(4), np.full(4, np.inf), np.zeros(4, dtype=np.int64))
    np.testing.assert_allclose(rates, [2 / 3 * G, G / 3, G / 3, G / 3])
    # the event loop: A (2/3 GB) finishes at 1 s; then B, C, D share b -> 1/3 each until the end
    r = simulate_flows(line(3), Flows([0, 0, 1, 1], [1, 2, 2, 2], [2 / 3 * 1e9, 1e9, 1e9, 1e9]))
    np.testing.assert_allclose(r.finish, [1.0, 3.0, 3.0, 3.0])


def test_rate_cap():
    """A cap of 0.2 GB/s on the short flow leaves 0.8 GB/s to the long one on the shared link."""
    r = simulate_flows(line(4), Flows([0, 0], [3, 1], [1e9, 1e9], cap=[np.inf, 0.2e9]))
    np.testing.assert_allclose(r.finish, [1.25, 5.0])


def test_strict_priority_and_preemption():
    """Priority 0 takes the whole link; a priority-0 flow arriving at 0.5 s preempts a running
    priority-1 flow, which resumes when it is done."""
    r = simulate_flows(line(2), Flows([0, 0], [1, 1], [1e9, 1e9], start=[0.0, 0.5], priority=[1, 0]))
    # low: 0.5 GB by 0.5 s; high: 0.5..1.5 s alone; low: its last 0.5 GB 1.5..2.0 s
    np.testing.assert_allclose(r.finish, [2.0, 1.5])


def test_latency_pipelined_and_store_and_forward():
    """Two hops of 1 us: pipelined = S/B + 2 us; store-and-forward = 2 (S/B + 1 us); a chunk
    adds one chunk's serialisation per extra hop."""
    g = line(3, lat=1e-6)
    S = 1e6
    assert simulate_flows(g, Flows([0], [2], [S])).finish[0] == pytest.approx(S / G + 2e-6)
    assert simulate_flows(g, Flows([0], [2], [S]), mode="store-and-forward").finish[0] == pytest.approx(2 * (S / G + 1e-6))
    assert simulate_flows(g, Flows([0], [2], [S]), chunk=4096).finish[0] == pytest.approx(S / G + 2e-6 + 4096 / G)


def test_dependencies_and_start_times():
    """Flow 1 waits for flow 0 to arrive; flow 2 starts at 3 s."""
    g = line(2, lat=0.5)
    r = simulate_flows(g, Flows([0, 0, 0], [1, 1, 1], [1e9, 1e9, 1e9], start=[0, 0, 3.0],
                                dep_ptr=np.array([0, 0, 1, 1]), dep_idx=np.array([0])))
    np.testing.assert_allclose(r.finish, [1.5, 3.0, 4.5])


def test_dataflow_beats_lock_step():
    """Step 0: 0->1 sends 3 units, 2->3 sends 1; step 1: 3->2 sends back what it received.
    Lock-step waits for the big transfer; dataflow starts 3->2 as soon as 2->3 has arrived."""
    topo = from_edges([0, 2], [1, 3], n_npus=4, name="pairs", bandwidth=G, latency=0.0)
    s0 = make_step([0, 2], [1, 3], [[0, 1, 2], [3]], False)
    s1 = make_step([3], [2], [[3]], False)
    sched = Schedule("broadcast", "manual", 4, 4, (s0, s1), root=0)
    S = 4e9  # 1e9 per block
    assert time_schedule(topo, sched, [S]).times[0] == pytest.approx(3.0 + 1.0)
    r = simulate_flows(topo, collective_flows(sched, S))
    np.testing.assert_allclose(r.finish, [3.0, 1.0, 2.0])


@pytest.mark.parametrize("topo, alg", [(ring(8, 50e9, 1e-7), "ring"), (switch(8, 50e9, 1e-7), "halving_doubling"),
                                       (torus((4, 4), 50e9, 1e-7), "hierarchical"), (torus((4, 4), 50e9, 1e-7), "swing"),
                                       (switch(6, 50e9, 1e-7), "direct")])
def test_one_collective_equals_the_analytical_model(topo, alg):
    """No contention between steps: dataflow finishes when lock-step does, for every size."""
    s = build_schedule(topo, "all-reduce", alg)
    sizes = [1e3, 1e6, 1e8]
    np.testing.assert_allclose(time_collective_flow(topo, s, sizes), time_schedule(topo, s, sizes).times, rtol=1e-9)


def test_store_and_forward_on_a_switch_is_astra_congestion_aware():
    """ASTRA-sim's congestion-aware Switch: every message crosses two store-and-forward links,
    2 (L + m/B) per ring step (spec §4, without ASTRA-sim's integer truncation)."""
    n, B, L = 8, 50e9, 500e-9
    topo = switch(n, B, L)
    S = 2**20
    t = time_collective_flow(topo, build_schedule(topo, "all-reduce", "ring"), [S], mode="store-and-forward")[0]
    assert t == pytest.approx(2 * (n - 1) * 2 * (L + S / n / B), rel=1e-12)


def test_two_collectives_share_links():
    """Two identical ring all-reduces on the same ring: every link carries both, twice the
    bandwidth time; on disjoint halves of a ring:8 they do not interfere."""
    topo = ring(4, 50e9, 0.0)
    s = build_schedule(topo, "all-reduce", "ring")
    S = 1e8
    alone = simulate_flows(topo, collective_flows(s, S)).makespan
    both = simulate_flows(topo, merge_flows(collective_flows(s, S), collective_flows(s, S))).makespan
    assert both == pytest.approx(2 * alone, rel=1e-9)
    assert alone == pytest.approx(2 * 3 * S / 4 / 50e9, rel=1e-12)


# ---- invariants ---------------------------------------------------------------------------------


@st.composite
def flow_sets(draw):
    dims = tuple(draw(st.lists(st.integers(2, 5), min_size=1, max_size=2)))
    n = int(np.prod(dims))
    k = draw(st.integers(1, 25))
    src = draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k))
    dst = draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k))
    size = draw(st.lists(st.floats(0, 1e6), min_size=k, max_size=k))
    start = draw(st.lists(st.sampled_from([0.0, 1e-6, 5e-6, 2e-5]), min_size=k, max_size=k))
    cap = draw(st.lists(st.sampled_from([np.inf, np.inf, 1e9, 3e9]), min_size=k, max_size=k))
    prio = draw(st.lists(st.integers(0, 2), min_size=k, max_size=k))
    mode = draw(st.sampled_from(["pipelined", "store-and-forward"]))
    return dims, Flows(src, dst, size, start, cap, prio), mode


@settings(max_examples=60, deadline=None)
@given(flow_sets())
def test_never_above_capacity_and_bytes_conserved(case):
    dims, flows, mode = case
    topo = torus(dims, 12.5e9, 1e-7)
    r = simulate_flows(topo, flows, mode=mode, record_timeline=True)
    for t0, t1, load in r.timeline:
        assert np.all(load <= topo.link_bw * (1 + 1e-9)), "a link ran above its capacity"
    ptr, _ = topo.route(flows.src, flows.dst)
    assert r.link_bytes.sum() == pytest.approx(float((flows.size * np.diff(ptr)).sum()), rel=1e-6, abs=1e-3)
    # nobody beats its own path: start + size / (min(cap, link bw)) + latency
    lat = np.array([topo.link_lat[topo.route([s], [d])[1]].sum() for s, d in zip(flows.src, flows.dst)])
    floor = flows.start + np.where(np.diff(ptr) > 0, flows.size / np.minimum(flows.cap, 12.5e9), 0) + lat
    assert np.all(r.finish >= floor * (1 - 1e-9) - 1e-15)


@st.composite
def random_graph_flows(draw):
    """A random connected graph (a random spanning tree plus extra edges, bidirectional links of
    random bandwidths) and random flows with caps, priorities, starts and dependencies."""
    n = draw(st.integers(2, 9))
    parents = [draw(st.integers(0, i - 1)) for i in range(1, n)]
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=6))
    edges = [(p, i) for i, p in zip(range(1, n), parents)] + [(a, b) for a, b in extra if a != b]
    bw = draw(st.lists(st.sampled_from([1e9, 2e9, 5e9]), min_size=len(edges), max_size=len(edges)))
    k = draw(st.integers(1, 20))
    src = draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k))
    dst = draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k))
    size = draw(st.lists(st.floats(0, 1e7), min_size=k, max_size=k))
    prio = draw(st.lists(st.integers(0, 1), min_size=k, max_size=k))
    cap = draw(st.lists(st.sampled_from([np.inf, 5e8]), min_size=k, max_size=k))
    dep = [draw(st.integers(-1, i - 1)) if i else -1 for i in range(k)]  # each flow may wait for an earlier one
    dep_ptr = np.concatenate([[0], np.cumsum([d >= 0 for d in dep])])
    dep_idx = np.array([d for d in dep if d >= 0], dtype=np.int64)
    topo = from_edges([a for a, _ in edges], [b for _, b in edges], n_npus=n, name="random", bandwidth=np.array(bw),
                      latency=1e-7)
    return topo, Flows(src, dst, size, None, cap, prio, dep_ptr, dep_idx), draw(st.sampled_from(["pipelined", "store-and-forward"]))


@settings(max_examples=60, deadline=None)
@given(random_graph_flows())
def test_random_topologies_never_above_capacity(case):
    topo, flows, mode = case
    r = simulate_flows(topo, flows, mode=mode, record_timeline=True)
    for _, _, load in r.timeline:
        assert np.all(load <= topo.link_bw * (1 + 1e-9))
    ptr, _ = topo.route(flows.src, flows.dst)
    assert r.link_bytes.sum() == pytest.approx(float((flows.size * np.diff(ptr)).sum()), rel=1e-6, abs=1e-3)
    # a flow never starts before its predecessor has arrived
    for i in range(len(flows)):
        for d in flows.dep_idx[flows.dep_ptr[i]: flows.dep_ptr[i + 1]]:
            assert r.start[i] >= r.finish[d] - 1e-15


# ---- incremental max-min (network.flow.maxmin) against the whole re-solve at every event ----------


def _random_case(seed: int):
    """Random flows on a 4x4 torus: sizes, starts, priorities, caps, chains of dependencies, and
    explicit weighted link sets for some."""
    rng = np.random.default_rng(seed)
    topo = torus((4, 4), 100e9 / 8, 1e-6)
    n = 300
    src = rng.integers(0, 16, n)
    dst = (src + rng.integers(1, 16, n)) % 16
    size = rng.choice([0.0, 1e5, 1e6, 4e6, 3e7], n)
    start = rng.choice([0.0, 0.0, 1e-4, 7e-4], n)
    prio = rng.integers(0, 3, n)
    cap = np.where(rng.random(n) < 0.2, rng.choice([1e9, 5e9], n), np.inf)
    # a flow waits for up to two earlier ones
    deps = [sorted(set(rng.integers(0, i, rng.integers(0, 3)).tolist())) if i else [] for i in range(n)]
    dep_ptr = np.concatenate([[0], np.cumsum([len(d) for d in deps])])
    dep_idx = np.array([x for d in deps for x in d], dtype=np.int64)
    return topo, Flows(src, dst, size, start, cap, prio, dep_ptr, dep_idx)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("mode", ["pipelined", "store-and-forward"])
def test_incremental_max_min_equals_whole_re_solve(seed, mode):
    topo, flows = _random_case(seed)
    fast = simulate_flows(topo, flows, mode=mode)
    ref = simulate_flows(topo, flows, mode=mode, exact=True)
    np.testing.assert_allclose(fast.finish, ref.finish, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(fast.start, ref.start, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(fast.link_bytes, ref.link_bytes, rtol=1e-9)
    np.testing.assert_allclose(fast.link_busy, ref.link_busy, rtol=1e-9, atol=1e-15)


def test_incremental_max_min_ring_beside_all_to_all():
    """The case the repair is for: a ring all-reduce's flows come and go beside an all-to-all."""
    topo = torus((4, 4), 400e9 / 8, 100e-9)
    from fabricsim.collectives.api import build_schedule
    from fabricsim.network.lowering.dataflow import collective_flows, merge_flows
    ar = collective_flows(build_schedule(topo, "all-reduce", "ring"), 16e6)
    a2a = collective_flows(build_schedule(topo, "all-to-all", "direct"), 16e6)
    both = merge_flows(ar, a2a)
    fast, ref = simulate_flows(topo, both), simulate_flows(topo, both, exact=True)
    np.testing.assert_allclose(fast.finish, ref.finish, rtol=1e-9)
    # the ring alone: 2(p-1) steps of size/p each at the link rate, plus the latency of the longest
    # hop (rank order row by row: the step from a row's end to the next row's start crosses 2 links)
    alone = simulate_flows(topo, ar)
    assert alone.makespan == pytest.approx(2 * 15 * (16e6 / 16 / (400e9 / 8) + 2 * 100e-9), rel=1e-9)


def test_route_keys_group_equal_link_sequences_exactly():
    """Explicit routes get one class id per distinct (links, weights) sequence, in any order."""
    from fabricsim.network.flow import route_keys
    rng = np.random.default_rng(3)
    base = [rng.integers(0, 50, rng.integers(0, 6)) for _ in range(40)]
    rows = [base[i] for i in rng.integers(0, 40, 500)] + [base[0][::-1]]  # a reversed row is another route
    ptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    links = np.concatenate(rows).astype(np.int64)
    key = route_keys(ptr, links)
    want = {}
    expect = [want.setdefault(tuple(r.tolist()), len(want)) for r in rows]
    # the same partition: equal rows share an id, different rows do not
    pairs = {(k, e) for k, e in zip(key.tolist(), expect)}
    assert len(pairs) == len(set(key.tolist())) == len(set(expect))
    w = rng.choice([0.5, 1.0], len(links))
    kw = route_keys(ptr, links, w)
    expect_w = {}
    ew = [expect_w.setdefault((tuple(links[ptr[i]:ptr[i + 1]].tolist()), tuple(w[ptr[i]:ptr[i + 1]].tolist())), len(expect_w))
          for i in range(len(rows))]
    assert len({(k, e) for k, e in zip(kw.tolist(), ew)}) == len(set(kw.tolist())) == len(set(ew))


@pytest.mark.parametrize("seed", range(4))
def test_fair_share_repair_equals_water_fill_after_every_change(seed):
    """Classes start and stop in random batches; after each repair every rate equals a whole
    water-fill of the sending classes (priorities, caps, weights)."""
    from fabricsim.network.flow.maxmin import FairShare, _gather
    rng = np.random.default_rng(seed)
    topo = torus((4, 4), 10.0, 0.0)
    n = 120
    src = rng.integers(0, 16, n)
    ptr, links = topo.route(src, (src + rng.integers(1, 16, n)) % 16)
    w = rng.choice([0.5, 1.0, 2.0], len(links))
    prio = rng.integers(0, 2, n)
    cap = np.where(rng.random(n) < 0.3, rng.choice([0.5, 2.0], n), np.inf)
    fs = FairShare(topo.link_bw, ptr, links, w, prio, cap)
    for _ in range(40):
        changed = np.unique(rng.integers(0, n, rng.integers(1, 12)))
        fs.mult[changed] = rng.integers(0, 3, len(changed))
        fs.update(changed)
        act = np.flatnonzero(fs.mult > 0)
        ent = _gather(fs.c_ptr, act)
        sub = np.concatenate([[0], np.cumsum(np.diff(fs.c_ptr)[act])])
        want = water_fill(topo.link_bw, sub, links[ent], fs.mult[act], cap[act], prio[act], w[ent])
        np.testing.assert_allclose(fs.rate[act], want, rtol=1e-9, atol=1e-12)
        assert np.all(fs.rate[fs.mult == 0] == 0)


# ---- units that never meet (network.flow.solo) against the event loop --------------------------


def _serialized_case(seed: int, weighted: bool):
    """Random flows on a 4x4 torus where every flow waits for each earlier flow it shares a link
    with, so no two ever send on one link at once: sizes (some 0), caps, starts, extra random
    dependencies, and (weighted) explicit routes with weights."""
    rng = np.random.default_rng(seed)
    topo = torus((4, 4), 100e9 / 8, 1e-6)
    n = 200
    src = rng.integers(0, 16, n)
    dst = (src + rng.integers(1, 16, n)) % 16
    ptr, links = topo.route(src, dst)
    route = [set(links[ptr[i]: ptr[i + 1]].tolist()) for i in range(n)]
    deps = []
    for i in range(n):
        d = {j for j in range(i) if route[i] & route[j]}
        d |= set(rng.integers(0, i, rng.integers(0, 2)).tolist()) if i else set()
        deps.append(sorted(d))
    dep_ptr = np.concatenate([[0], np.cumsum([len(d) for d in deps])])
    dep_idx = np.array([x for d in deps for x in d], dtype=np.int64)
    size = rng.choice([0.0, 1e5, 1e6, 4e6], n)
    start = rng.choice([0.0, 0.0, 1e-4], n)
    cap = np.where(rng.random(n) < 0.3, rng.choice([1e9, 5e9], n), np.inf)
    weight = rng.choice([0.5, 1.0, 2.0], len(links)) if weighted else None
    return topo, Flows(src, dst, size, start, cap, rng.integers(0, 3, n), dep_ptr, dep_idx,
                       ptr if weighted else None, links if weighted else None, None, weight)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mode", ["pipelined", "store-and-forward"])
@pytest.mark.parametrize("weighted", [False, True])
def test_units_that_never_meet_skip_the_loop_with_its_answer(seed, mode, weighted):
    from fabricsim.network.flow import _units, successors
    from fabricsim.network.flow.solo import solo_run

    topo, flows = _serialized_case(seed, weighted)
    U = _units(topo, flows, mode, 0.0)
    assert solo_run(topo, U, *successors(U.dep_ptr, U.dep_idx)) is not None  # the pass serves
    fast = simulate_flows(topo, flows, mode=mode)
    ref = simulate_flows(topo, flows, mode=mode, exact=True)  # the event loop, whole re-solves
    np.testing.assert_allclose(fast.finish, ref.finish, rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(fast.start, ref.start, rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(fast.sent, ref.sent, rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(fast.link_bytes, ref.link_bytes, rtol=1e-12)
    np.testing.assert_allclose(fast.link_busy, ref.link_busy, rtol=1e-9, atol=1e-15)
    assert fast.events == ref.events


def test_units_that_meet_go_to_the_loop():
    """Two 1 GB flows on one 100 GB/s link at once share it (0.02 s each); a third that starts
    on it while the first still sends (not at its end) also sends the loop there."""
    from fabricsim.network.flow import _units, successors
    from fabricsim.network.flow.solo import solo_run
    from fabricsim.topology import parse_topology

    topo = parse_topology("ring:4", "100GB/s", "0ns")
    both = Flows(src=[0, 0], dst=[1, 1], size=[1e9, 1e9])
    U = _units(topo, both, "pipelined", 0.0)
    assert solo_run(topo, U, *successors(U.dep_ptr, U.dep_idx)) is None
    assert simulate_flows(topo, both).finish.tolist() == [0.02, 0.02]
    # back to back (the second waits for the first): the pass serves, 0.01 then 0.02
    chain = Flows(src=[0, 0], dst=[1, 1], size=[1e9, 1e9], dep_ptr=[0, 0, 1], dep_idx=[0])
    U = _units(topo, chain, "pipelined", 0.0)
    assert solo_run(topo, U, *successors(U.dep_ptr, U.dep_idx)) is not None
    assert simulate_flows(topo, chain).finish.tolist() == pytest.approx([0.01, 0.02], rel=1e-15)
    late = Flows(src=[0, 0], dst=[1, 1], size=[1e9, 1e9], start=[0.0, 0.005])
    U = _units(topo, late, "pipelined", 0.0)
    assert solo_run(topo, U, *successors(U.dep_ptr, U.dep_idx)) is None
    # 0.005 s alone, then both at half rate: the first's last 0.5 GB -> 0.015; the second has then
    # sent 0.5 GB and sends the rest alone: 0.02
    assert simulate_flows(topo, late).finish.tolist() == pytest.approx([0.015, 0.02], rel=1e-12)


def test_ring_reduce_scatter_on_a_torus_rows_pass_without_the_loop():
    """A rank-order ring reduce-scatter on an 8x8 torus (the row-wrap transfer crosses 2 links):
    the pass serves it, with the loop's answer (each transfer at its own time: no two finish
    together after a few steps); closed form of the last arrival: a rank's send also waits for its
    previous one, so the row-wrap rank's chain of 2-hop transfers is the longest: (p - 1) x
    (size/p at the link rate + 2 link latencies), as in the ring beside the all-to-all above."""
    from fabricsim.collectives.api import build_schedule
    from fabricsim.network.lowering.dataflow import collective_flows

    topo = torus((8, 8), 400e9 / 8, 100e-9)
    fl = collective_flows(build_schedule(topo, "reduce-scatter", "ring"), 64e6)
    fast, ref = simulate_flows(topo, fl), simulate_flows(topo, fl, exact=True)
    np.testing.assert_allclose(fast.finish, ref.finish, rtol=1e-12)
    assert fast.events == ref.events
    assert fast.makespan == pytest.approx(63 * (64e6 / 64 / (400e9 / 8) + 2 * 100e-9), rel=1e-12)
