"""ASTRA-sim compatibility beyond mirror mode's single collective (issue 20, part 4).

- Workload graphs that every NPU runs alike are emulated with NPU 0 standing for all: exactly the
  full emulation's answers (random graphs, networks and systems).
- The congestion-aware links end their busy periods in reserved places of the event queue
  instead of events: the same deliveries as a plain heap of (tick, insertion) events with one
  "free" event per chunk, written out here as the oracle.
- halvingDoubling on a dimension that is not a power of two does what ASTRA-sim's
  HalvingDoubling.cc does: all-gather on 6 or 12 NPUs finishes (times from closed forms below);
  where its exchanges pair NPUs one-sidedly ASTRA-sim never finishes those NPUs, and fabricsim
  says so in one line (exit code 2).
"""

from __future__ import annotations

import heapq
import json
import math
import random

import pytest

from fabricsim.astra.config import parse_impl
from fabricsim.astra.emu_network import AwareNetwork, EventQueue, NetSpec, SysSpec
from fabricsim.astra.emu_ring import halving_doubling_distances, halving_doubling_unpaired
from fabricsim.astra.emulator import simulate_collective
from fabricsim.astra.run import run_astra
from fabricsim.astra.workload import mirror_why_not, run_workload
from fabricsim.cli import main
from fabricsim.errors import ConfigError
from fabricsim.workload.chakra import collective_traces, write_traces
from fabricsim.workload.chakra_trace import COMM_COLL_NODE, COMP_NODE, EtNode, EtTrace

B50 = 50 * 2**30 / 1e9  # 50 GB/s as ASTRA-sim converts it, bytes per ns
COMM_TYPE = {"all-reduce": 0, "all-gather": 2, "all-to-all": 6, "reduce-scatter": 7}


# ---- one NPU standing for all in a workload graph ---------------------------------------------


def _random_graph(rng: random.Random, splits: int, first_id: int) -> tuple[EtNode, ...]:
    """Compute (GPU or CPU) and collective nodes, each depending on up to two earlier ones."""
    nodes = []
    for k in range(rng.randint(2, 7)):
        deps = tuple(sorted({first_id + rng.randrange(k) for _ in range(rng.randint(0, min(k, 2)))})) if k else ()
        if rng.random() < 0.5:
            attrs = {"is_cpu_op": rng.random() < 0.3}
            nodes.append(EtNode(first_id + k, f"c{k}", COMP_NODE, data_deps=deps, duration_micros=rng.choice([0, 1, 3, 40]),
                                attrs=attrs))
        else:
            coll = rng.choice(list(COMM_TYPE))
            size = rng.choice([2**16, 3 * 2**14, 2**20]) * splits
            nodes.append(EtNode(first_id + k, f"x{k}", COMM_COLL_NODE, data_deps=deps,
                                attrs={"is_cpu_op": False, "comm_type": COMM_TYPE[coll], "comm_size": size}))
    return tuple(nodes)


def _shifted(nodes: tuple[EtNode, ...], delta: int) -> tuple[EtNode, ...]:
    """The same graph with every id and dependency moved by `delta` (as Chakra numbers ranks)."""
    return tuple(EtNode(n.id + delta, n.name, n.type, tuple(d + delta for d in n.ctrl_deps),
                        tuple(d + delta for d in n.data_deps), n.duration_micros, dict(n.attrs)) for n in nodes)


def test_workload_mirror_equals_full_emulation():
    """Random graphs run alike by every NPU (ids shifted per rank), on random symmetric systems:
    NPU 0 alone gives every NPU's finish, compute, exposed and communication time exactly."""
    rng = random.Random(20)
    compared = 0
    while compared < 40:
        nd = rng.choice([1, 1, 2, 3])
        dims = tuple(rng.choice([2, 3, 4, 5, 8]) for _ in range(nd))
        if math.prod(dims) > 40:
            continue
        backend = rng.choice(["congestion-unaware", "congestion-aware"]) if nd == 1 else "congestion-unaware"
        kinds = tuple(rng.choice(["Ring", "FullyConnected", "Switch"]) for _ in dims)
        net = NetSpec(kinds, dims, tuple(rng.choice([12.5, 50.0]) * 2**30 / 1e9 for _ in dims),
                      tuple(float(rng.choice([0, 10, 500])) for _ in dims))
        impl = rng.choice(["ring", "direct", "direct2"])
        sys_ = SysSpec(splits=rng.choice([1, 2, 4]), active_chunks=rng.choice([1, 2]), local_mem_bw=rng.choice([0, 1600]),
                       optimization=rng.choice(["baseline", "localBWAware"]), policy=rng.choice(["LIFO", "FIFO"]),
                       impls={c: (parse_impl(impl),) * nd for c in COMM_TYPE})
        nodes = _random_graph(rng, sys_.splits, 0)
        traces = [EtTrace(r, "0.0.4", {}, _shifted(nodes, 100 * r)) for r in range(net.npus)]
        if mirror_why_not(net, sys_, traces, backend) is not None:
            continue
        full = run_workload(net, sys_, traces, backend, mode="full")
        assert run_workload(net, sys_, traces, backend, mode="mirror") == full, (kinds, dims, backend, impl, nodes)
        compared += 1


def test_workload_mirror_only_where_exact():
    net = NetSpec(("Ring",), (4,), (B50,), (500.0,))
    sys_ = SysSpec(splits=1, impls={"all-reduce": (parse_impl("ring"),)})
    coll = EtNode(0, "ar", COMM_COLL_NODE, attrs={"is_cpu_op": False, "comm_type": 0, "comm_size": 2**20})
    same = [EtTrace(r, "", {}, (coll,)) for r in range(4)]
    assert mirror_why_not(net, sys_, same, "congestion-unaware") is None
    longer = same[:3] + [EtTrace(3, "", {}, (coll, EtNode(1, "c", COMP_NODE, duration_micros=1)))]
    assert mirror_why_not(net, sys_, longer, "congestion-unaware") == "NPUs run different graphs"
    tree = SysSpec(splits=1, impls={"all-reduce": (parse_impl("doubleBinaryTree"),)})
    assert "symmetric" in mirror_why_not(net, tree, same, "congestion-unaware")
    grouped = [EtTrace(r, "", {}, (EtNode(0, "ar", COMM_COLL_NODE, attrs={**coll.attrs, "pg_name": "1"}),)) for r in range(4)]
    assert mirror_why_not(net, sys_, grouped, "congestion-unaware") == "communicator groups"


# ---- congestion-aware links: reserved places instead of "free" events ---------------------------


def _oracle(net: NetSpec, sends: list[tuple[int, int, int, int]]) -> dict[int, int]:
    """Arrival tick of each message on store-and-forward FIFO links, with a heap of (tick,
    insertion number) events and one "free" event per chunk; sends are (tick, src, dst, bytes)."""
    n, kind, bw, lat = net.dims[0], net.kinds[0], net.bw[0], net.lat[0]
    heap, seq, busy, pending, out = [], [0], {}, {}, {}

    def at(t, fn, *args):
        seq[0] += 1
        heapq.heappush(heap, (t, seq[0], fn, args))

    def route(s, d):
        if kind == "FullyConnected":
            return [s, d]
        if kind == "Switch":
            return [s, n, d]
        cw = (d - s) % n
        step = -1 if n - cw < cw else 1
        return [(s + step * k) % n for k in range(min(cw, n - cw) + 1)]

    def start(link, size, chunk, now):
        busy[link] = True
        at(now + int(lat + size / bw), hop, chunk)
        at(now + int(size / bw), free, link)

    def enter(chunk, now):
        path, i, size, m = chunk
        link = (path[i], path[i + 1])
        if busy.get(link):
            pending.setdefault(link, []).append((size, chunk))
        else:
            start(link, size, chunk, now)

    def free(link, now):
        busy[link] = False
        if pending.get(link):
            size, chunk = pending[link].pop(0)
            start(link, size, chunk, now)

    def hop(chunk, now):
        path, i, size, m = chunk
        if i + 2 == len(path):
            out[m] = now
        else:
            enter((path, i + 1, size, m), now)

    for m, (t, s, d, size) in enumerate(sends):
        at(t, lambda now, s=s, d=d, size=size, m=m: enter((route(s, d), 0, size, m), now))
    while heap:
        t, _, fn, args = heapq.heappop(heap)
        fn(*args, t)
    return out


@pytest.mark.parametrize("kind", ["Ring", "FullyConnected", "Switch"])
def test_aware_links_deliver_as_free_events_would(kind):
    """Many messages on few links, ties included (latency 0: a chunk arrives as its link frees)."""
    rng = random.Random(kind)
    for _ in range(30):
        n = rng.choice([3, 4, 6, 8])
        net = NetSpec((kind,), (n,), (rng.choice([1.0, B50]),), (float(rng.choice([0, 1, 7])),))
        sends = []
        for _ in range(rng.randint(1, 40)):
            s, d = rng.sample(range(n), 2)
            sends.append((rng.choice([0, 0, 1, 5, 64]), s, d, rng.choice([1, 16, 64, 100])))
        eq = EventQueue()
        aw = AwareNetwork(eq, net)
        got: dict[int, int] = {}
        for m, (t, s, d, size) in enumerate(sends):
            eq.schedule(t, aw.sim_send, s, d, m, size, lambda m=m: got.__setitem__(m, eq.now))
        eq.run()
        assert got == _oracle(net, sends) and len(got) == len(sends), (net, sends)


def test_a_later_run_at_the_same_tick_finds_the_link_free():
    """The end of a busy period at the tick a run stopped is passed when the next run starts."""
    eq = EventQueue()
    aw = AwareNetwork(eq, NetSpec(("Ring",), (4,), (1.0,), (0.0,)))
    got = []
    eq.schedule(0, aw.sim_send, 0, 1, "a", 10, lambda: got.append(eq.now))
    eq.run()
    eq.schedule(10, aw.sim_send, 0, 1, "b", 5, lambda: got.append(eq.now))
    eq.run()
    assert got == [10, 15]


def test_event_queue_is_tick_then_insertion_order():
    eq, seen = EventQueue(), []
    for t, name in [(5, "a"), (2, "b"), (5, "c"), (2, "d")]:
        eq.schedule(t, seen.append, name)
    eq.schedule(2, lambda: eq.schedule(2, seen.append, "e"))  # scheduled for now: runs this tick, last
    eq.run()
    assert seen == ["b", "d", "e", "a", "c"] and eq.now == 5


def test_event_loop_collects_garbage_less_often_and_restores_the_thresholds():
    """While events run the youngest GC generation waits for YOUNG_GC_THRESHOLD allocations; the
    process's thresholds are back afterwards, also when an event raises, and never lowered."""
    import gc

    from fabricsim.astra.emu_events import YOUNG_GC_THRESHOLD

    old = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        eq, seen = EventQueue(), []
        eq.schedule(1, lambda: seen.append(gc.get_threshold()))
        eq.run()
        assert seen == [(YOUNG_GC_THRESHOLD, 10, 10)] and gc.get_threshold() == (700, 10, 10)
        eq.schedule(2, lambda: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            eq.run()
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(50_000, 5, 5)  # a process that asked for fewer passes keeps them
        eq.schedule(3, lambda: seen.append(gc.get_threshold()))
        eq.run()
        assert seen[-1] == (50_000, 5, 5)
    finally:
        gc.set_threshold(*old)


# ---- halvingDoubling on dimensions that are not powers of two --------------------------------


def test_halving_doubling_distances_as_astra_sim():
    """ASTRA-sim truncates log2(n) (times 2 for all-reduce) to the exchange count, n/2 to the
    first all-gather distance, and turns an all-reduce back only when the distance equals n."""
    assert halving_doubling_distances("all-gather", 6) == [3, 1]
    assert halving_doubling_distances("all-gather", 12) == [6, 3, 1]
    assert halving_doubling_distances("reduce-scatter", 6) == [1, 2]
    assert halving_doubling_distances("all-reduce", 6) == [1, 2, 4, 8, 16]  # int(2 x 2.585) = 5, never back
    assert halving_doubling_distances("all-reduce", 8) == [1, 2, 4, 4, 2, 1]
    # who waits for whom: (distance, i, its peer j, j's own peer)
    assert halving_doubling_unpaired("all-gather", 6) is None
    assert halving_doubling_unpaired("all-gather", 20) is None  # distances 10, 5, 2, 1 all divide 20 in pairs
    assert halving_doubling_unpaired("all-gather", 5) == (2, 4, 1, 3)
    assert halving_doubling_unpaired("all-gather", 10) == (2, 8, 0, 2)
    assert halving_doubling_unpaired("reduce-scatter", 6) == (2, 4, 0, 2)
    assert halving_doubling_unpaired("all-reduce", 3) == (1, 2, 0, 1)
    for n in (2, 4, 8, 16, 64):
        for coll in ("all-reduce", "reduce-scatter", "all-gather"):
            assert halving_doubling_unpaired(coll, n) is None


def _hd(n: int, kind: str = "Ring", splits: int = 1) -> tuple[NetSpec, SysSpec]:
    net = NetSpec((kind,), (n,), (B50,), (500.0,))
    return net, SysSpec(splits=splits, endpoint_delay=10, local_mem_bw=1600,
                        impls={c: (parse_impl("halvingDoubling"),) for c in ("all-reduce", "reduce-scatter", "all-gather")})


@pytest.mark.parametrize("splits", [1, 4])
def test_all_gather_on_6_npus(splits):
    """Exchange k of a chunk of c bytes goes floor(6/2^k) NPUs away with c x 2^(k-1) bytes: 3 hops
    with c, then 1 hop with 2c; each exchange waits for one bundle (d) before it is sent and the
    chunk leaves after one more bundle (the packet ASTRA-sim inserts after the last receive).
    No reduction (all-gather). Chunks run one after the other (one active chunk)."""
    S, d, L = 3 * 2**20, 10, 500.0
    net, sys_ = _hd(6, splits=splits)
    c = S // splits
    unaware = splits * (3 * d + math.floor(3 * L + c / B50) + math.floor(L + 2 * c / B50))
    assert simulate_collective(net, sys_, "all-gather", S, "congestion-unaware") == [unaware] * 6
    # store-and-forward: 3 x (L + c/B) (every NPU sends clockwise, one chunk per link at a time)
    aware = splits * (3 * d + 3 * math.floor(L + c / B50) + math.floor(L + 2 * c / B50))
    assert simulate_collective(net, sys_, "all-gather", S, "congestion-aware") == [aware] * 6


def test_all_gather_on_12_npus_switch():
    """Distances 6, 3, 1 with c, 2c, 4c bytes through the switch (2 links each way)."""
    S, d, L = 2**20, 10, 500.0
    net, sys_ = _hd(12, kind="Switch")
    unaware = 4 * d + sum(math.floor(2 * L + m / B50) for m in (S, 2 * S, 4 * S))
    assert simulate_collective(net, sys_, "all-gather", S, "congestion-unaware") == [unaware] * 12
    aware = 4 * d + sum(2 * math.floor(L + m / B50) for m in (S, 2 * S, 4 * S))
    assert simulate_collective(net, sys_, "all-gather", S, "congestion-aware") == [aware] * 12


def _files(tmp_path, n: int, coll: str, impl: str = "halvingDoubling") -> list[str]:
    net = tmp_path / "net.yml"
    net.write_text(f"topology: [ Ring ]\nnpus_count: [ {n} ]\nbandwidth: [ 50.0 ]\nlatency: [ 500.0 ]\n")
    sys_ = tmp_path / "sys.json"
    sys_.write_text(json.dumps({
        "scheduling-policy": "LIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 1, "preferred-dataset-splits": 1,
        "collective-optimization": "localBWAware", "local-mem-bw": 1600, **{f"{c}-implementation": [impl] for c in COMM_TYPE}}))
    write_traces(tmp_path / "w", collective_traces(coll, 2**20, n))
    return ["astra", "--workload-configuration", str(tmp_path / "w"), "--system-configuration", str(sys_),
            "--network-configuration", str(net)]


def test_all_gather_on_6_npus_end_to_end(tmp_path, capsys):
    args = _files(tmp_path, 6, "all-gather")
    assert main(args) == 0
    expect = 3 * 10 + math.floor(3 * 500 + 2**20 / B50) + math.floor(500 + 2**21 / B50)
    assert f"sys[5] finished, {expect} cycles" in capsys.readouterr().out


@pytest.mark.parametrize("n, coll, where", [
    (6, "all-reduce", "all-reduce on 6 NPUs (not a power of two) pairs line position 4 with 0 at distance 2"),
    (6, "reduce-scatter", "reduce-scatter on 6 NPUs"),
    (5, "all-gather", "all-gather on 5 NPUs (not a power of two) pairs line position 4 with 1 at distance 2"),
    (10, "all-gather", "all-gather on 10 NPUs"),
    (3, "all-reduce", "position 2 with 0 at distance 1"),
])
def test_halving_doubling_that_never_finishes(tmp_path, capsys, n, coll, where):
    """ASTRA-sim runs these until its events run out, with the NPUs that wait for a message nobody
    sends never reporting: one line, exit code 2."""
    rc = main(_files(tmp_path, n, coll))
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "ASTRA-sim never finishes" in err and where in err and f"{coll}-implementation" in err
    with pytest.raises(ConfigError, match="never finishes"):
        run_astra(str(tmp_path / "w"), str(tmp_path / "sys.json"), str(tmp_path / "net.yml"), backend="congestion-aware")


def test_halving_doubling_all_to_all_and_tree_on_6(tmp_path, capsys):
    """ASTRA-sim exits on a halvingDoubling all-to-all, and crashes on a doubleBinaryTree whose
    tree has fewer places than NPUs (2^floor(log2 n))."""
    rc = main(_files(tmp_path, 6, "all-to-all"))
    err = capsys.readouterr().err
    assert rc == 2 and "has no all-to-all" in err and len(err.strip().splitlines()) == 1
    rc = main(_files(tmp_path, 6, "all-reduce", impl="doubleBinaryTree"))
    err = capsys.readouterr().err
    assert rc == 2 and "ASTRA-sim crashes" in err and "places for 4" in err and len(err.strip().splitlines()) == 1
