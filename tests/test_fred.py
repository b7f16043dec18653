"""FRED (ISCA'25): the wafer mesh and the FRED fabric, in-network collectives, and the paper's
analytic checks (docs/specs/fred_ace.md, section 3), all in units of D / (TB/s): the time
to all-reduce D bytes, times 1e12 / D."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.registry import get_algorithm
from fabricsim.collectives.verify import verify
from fabricsim.errors import ConfigError
from fabricsim.network.lowering.dataflow import collective_flows, merge_flows, streaming_flows
from fabricsim.network.flow import simulate_flows
from fabricsim.topology import parse_topology
from fabricsim.topology.builders.wafer import hamiltonian_cycle, perimeter_edges
from fabricsim.workload.parallelism import Strategy

D = 1e9  # bytes
MESH = ("wafer:5x4", "750GB/s")
FRED = {"A": ("fred:5x4,up=1.5TB/s", "3TB/s"), "B": ("fred:5x4,up=1.5TB/s,reduce", "3TB/s"),
        "C": ("fred:5x4,up=12TB/s", "3TB/s"), "D": ("fred:5x4,up=12TB/s,reduce", "3TB/s")}


def topo_of(system):
    spec, bw = MESH if system == "mesh" else FRED[system]
    return parse_topology(spec, bw, "0ns")


def per_D(topo, groups, algorithm, **opts):
    """All-reduces of D bytes over `groups`, concurrently, on the flow model; time x 1e12 / D."""
    parts = []
    for g in groups:
        s = build_schedule(topo, "all-reduce", algorithm, group=g, **opts)
        parts.append(streaming_flows(topo, s, D) if algorithm == "in_network_tree" else collective_flows(s, D))
    return simulate_flows(topo, merge_flows(*parts, topo=topo)).makespan * 1e12 / D


# ---------------------------------------------------------------- topologies


def test_wafer_mesh_shape_and_io_controllers():
    t = topo_of("mesh")
    assert t.n_npus == 20 and t.dims == (5, 4)
    io = t.io_nodes
    assert len(io) == 18 == 2 * (5 + 4)
    # a corner NPU has two controllers, an edge NPU one, an inner NPU none
    counts = np.bincount(t.io_attach, minlength=20)
    assert counts[[0, 4, 15, 19]].tolist() == [2, 2, 2, 2]
    assert counts[[6, 7, 8, 11, 12, 13]].sum() == 0 and counts.sum() == 18
    io_links = np.isin(t.link_src, io) | np.isin(t.link_dst, io)
    assert np.all(t.link_bw[io_links] == 128e9) and np.all(t.link_bw[~io_links] == 750e9)
    # X-Y between NPUs: 0 -> 13 goes along x first
    ptr, links = t.route([0], [13])
    assert t.link_dst[links].tolist() == [1, 2, 3, 8, 13]


def test_fred_fabric_shape():
    t = topo_of("C")
    l1, l2 = np.unique(t.leaf_of), 25  # nodes: 20 NPUs, 5 L1 switches, the L2 switch, I/O controllers
    assert len(l1) == 5 and t.leaf_of.tolist() == list(np.repeat(np.arange(20, 25), 4))
    up = (np.isin(t.link_src, l1)) & (t.link_dst == l2)
    assert up.sum() == 5 and np.all(t.link_bw[up] == 12e12)
    assert np.all(t.link_bw[(t.link_src < 20)] == 3e12)
    assert len(t.io_nodes) == 18 and not t.can_reduce.any()
    assert topo_of("D").can_reduce[l1].all() and topo_of("D").can_reduce[l2]


@pytest.mark.parametrize("spec", ["fred:5x4", "fred:4x8,reduce", "fred:1x6", "fred:8x3,ios=2", "fred:3x3,ios=0"])
def test_fred_tree_paths_are_the_fewest_hop_paths(spec):
    """Parent pointers give, for every ordered pair of nodes (NPUs, L1s, the L2, I/O controllers),
    the path of the fewest-hop table they replace (a tree has one simple path per pair)."""
    from fabricsim.topology.graph import ShortestPathRouter

    t = parse_topology(spec)
    n = t.n_nodes
    s, d = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n)))
    got = t.route(s, d)
    want = ShortestPathRouter.build(n, t.link_src, t.link_dst).route(t, s, d)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    # NPU 0 to the last NPU: up to its L1, to the L2, down to the other L1, to the NPU
    hops = np.diff(t.route(np.array([0]), np.array([t.n_npus - 1]))[0])[0]
    assert hops == (4 if t.leaf_of[0] != t.leaf_of[-1] else 2)


def test_tree_router_refuses_what_is_not_a_tree():
    from fabricsim.topology.tree_paths import ParentTreeRouter

    with pytest.raises(ValueError, match="cycle"):  # a triangle
        ParentTreeRouter.build(3, np.array([0, 1, 1, 2, 2, 0]), np.array([1, 0, 2, 1, 0, 2]), 0)
    with pytest.raises(ValueError, match="not reached"):
        ParentTreeRouter.build(3, np.array([0, 1]), np.array([1, 0]), 0)
    with pytest.raises(ValueError, match="one way"):
        ParentTreeRouter.build(2, np.array([0]), np.array([1]), 0)


def test_a_65536_npu_fred_fabric_routes_without_a_table():
    """256 L1 switches of 256 NPUs: 4.3 G fewest-hop table entries before, parent arrays now; the
    in-network all-reduce streams up and down the tree (4 hops between leaves)."""
    t = parse_topology("fred:256x256,reduce")
    assert t.n_npus == 65536
    ptr, links = t.route(np.array([0, 0]), np.array([255, 65535]))
    assert np.diff(ptr).tolist() == [2, 4]


def test_hamiltonian_cycle_of_the_wafer():
    o = hamiltonian_cycle(5, 4)
    x, y = o % 5, o // 5
    hops = np.abs(np.diff(np.append(x, x[0]))) + np.abs(np.diff(np.append(y, y[0])))
    assert sorted(o.tolist()) == list(range(20)) and hops.max() == 1


# ---------------------------------------------------------------- in-network collectives


@pytest.mark.parametrize("collective", ["all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce"])
def test_in_network_tree_verifies_on_random_trees(collective):
    alg = get_algorithm("in_network_tree")
    rng = np.random.default_rng(7)
    for p in list(range(2, 34)) + [64, 100]:
        leaf = rng.integers(0, max(1, p // 3), p)
        kw = {"root": int(rng.integers(p))} if collective in ("broadcast", "reduce") else {}
        s = alg.build(collective, p, leaf_of=leaf, **kw)
        assert verify(s, seed=p).blocks_checked == s.nblocks


@pytest.mark.parametrize("n", [2, 4, 5, 20])
def test_traffic_in_network_D_endpoint_2_n_minus_1_over_n_D(n):
    """Executed on data: the in-network all-reduce sends and receives D per NPU; the endpoint
    (ring) all-reduce 2(N-1)/N D. Groups spread over L1 switches where N > 4."""
    t = topo_of("D")
    group = list(range(0, 20, 20 // n))[:n] if n > 4 else list(range(n))
    innet = build_schedule(t, "all-reduce", "in_network_tree", group=group)
    ring = build_schedule(t, "all-reduce", "ring", group=group)
    for s in (innet, ring):
        verify(s)
    assert innet.bytes_sent(D)[:n] == pytest.approx(np.full(n, D))
    assert innet.bytes_received(D)[:n] == pytest.approx(np.full(n, D))
    assert ring.bytes_sent(D) == pytest.approx(np.full(n, 2 * (n - 1) / n * D))
    assert ring.bytes_received(D) == pytest.approx(np.full(n, 2 * (n - 1) / n * D))


def test_in_network_tree_needs_reducing_switches():
    with pytest.raises(ConfigError, match="reduces and multicasts"):
        build_schedule(topo_of("C"), "all-reduce", "in_network_tree")


# ---------------------------------------------------------------- analytic checks (spec section 3)


def test_mp20_wafer_wide_all_reduce():
    """MP(20): mesh 1.267 (two opposite chunks: a bidirectional ring on a Hamiltonian cycle,
    corner NPUs' 2 links x 750 GB/s), Fred-C 0.633 (endpoint at 3 TB/s), Fred-D 0.333 (in-network)."""
    mesh = topo_of("mesh")
    assert per_D(mesh, [mesh.ring_order.tolist()], "ring", bidirectional=True) == pytest.approx(1.9 / 1.5)
    assert per_D(topo_of("C"), [list(range(20))], "hierarchical") == pytest.approx(1.9 / 3)
    assert per_D(topo_of("D"), [list(range(20))], "in_network_tree") == pytest.approx(1 / 3)


DP5 = {"mesh": 1.6 / 0.75, "A": 1.6 / 0.375, "B": 1 / 0.375, "C": 1.6 / 3, "D": 1 / 3}


@pytest.mark.parametrize("system", list(DP5))
def test_dp5_inside_mp2_dp5_pp2(system):
    """The 4 DP(5) groups of MP(2)-DP(5)-PP(2) all-reduce at once. Mesh: DP groups are rows
    (placement dp, mp, pp), each its own ring of 750 GB/s links: 2.13. FRED (placement mp, pp,
    dp): one member per L1 switch, the 4 groups share each L1 uplink: A 4.27 (375 GB/s, endpoint),
    B 2.67 (375 GB/s, in-network), C 0.53, D 0.33."""
    placement = ("dp", "mp", "pp") if system == "mesh" else ("mp", "pp", "dp")
    R = Strategy(mp=2, dp=5, pp=2, batch=10, placement=placement).ranks()
    groups = [R[m, p, :].tolist() for m in range(2) for p in range(2)]
    alg = "in_network_tree" if system in ("B", "D") else "ring"
    assert per_D(topo_of(system), groups, alg) == pytest.approx(DP5[system])


def test_io_throttle_emerges_from_link_loads():
    """Every I/O controller broadcasts to every NPU at P = 128 GB/s. Entering perpendicular to its
    edge, the busiest mesh link carries (2N-1)P = 9P with N = 5: I/O is throttled to 750 / 1152
    = 0.651 of line rate. The reverse pattern (gradients written back) loads it the same."""
    t = topo_of("mesh")
    mesh_link = t.link_dim >= 0
    for direction in ("broadcast", "write-back"):
        load = np.zeros(t.n_links)
        for c in t.io_nodes:
            src, dst = (np.full(20, c), np.arange(20)) if direction == "broadcast" else (np.arange(20), np.full(20, c))
            _, links = t.route(src, dst)
            load[np.unique(links)] += 128e9  # a multicast (or reduction) tree carries the stream once per link
        assert load[mesh_link].max() == pytest.approx(9 * 128e9)
        assert 750e9 / load[mesh_link].max() == pytest.approx(0.651, abs=5e-4)
    # the flow model reaches the same rate: the 18 broadcasts as flows over their trees
    assert broadcast_rate(t) == pytest.approx(750e9 / 9, rel=1e-9)  # per controller, throttled
    assert perimeter_edges(5, 4)[0] == (0, "top")
    assert broadcast_rate(topo_of("D")) == pytest.approx(128e9, rel=1e-9)  # FRED: full line rate


def broadcast_rate(t) -> float:
    """Every controller multicasts D to every NPU at once, each a flow over its tree: the rate per controller."""
    from fabricsim.network.flow import Flows

    parts = []
    for c in t.io_nodes:
        _, links = t.route(np.full(20, c), np.arange(20))
        u = np.unique(links)
        parts.append(Flows([c], [0], [D], route_ptr=np.array([0, len(u)]), route_links=u))
    return D / simulate_flows(t, merge_flows(*parts, topo=t)).makespan


# ---------------------------------------------------------------- the engine's pricing on FRED systems


def test_pricer_streams_in_network_and_orders_rings_on_the_wafer():
    from fabricsim.engine.pricing import CommPricer

    d = CommPricer(topo_of("D"), algorithms={"all-reduce": "in_network_tree"})
    assert d.collective("all-reduce", tuple(range(20)), D) * 1e12 / D == pytest.approx(1 / 3)
    b = CommPricer(topo_of("B"), algorithms={"all-reduce": "in_network_tree"})
    assert b.collective("all-reduce", tuple(range(20)), D) * 1e12 / D == pytest.approx(1 / 1.5)  # L1 uplink
    # reduce-scatter: 20 serial reduce flows of D/20 at 3 TB/s
    rs = CommPricer(topo_of("D"), algorithms={"reduce-scatter": "in_network_tree"})
    assert rs.collective("reduce-scatter", tuple(range(20)), D) * 1e12 / D == pytest.approx(1 / 3)
    # the wafer: rank order 0..19 becomes the Hamiltonian cycle, both directions
    m = CommPricer(topo_of("mesh"), algorithms={"all-reduce": "ring,bidirectional=true"})
    assert m.collective("all-reduce", tuple(range(20)), D) * 1e12 / D == pytest.approx(1.9 / 1.5)
    with pytest.raises(ConfigError, match="bidirectional"):
        CommPricer(topo_of("mesh"), algorithms={"all-reduce": "ring,colour=red"})


def test_flow_engine_runs_in_network_flows_with_priorities():
    """Fred-B: an MP all-reduce (in-network) starts while a DP one streams over the same L1
    uplinks; MP has priority and the 1.5 TB/s uplinks; DP resumes after it."""
    from fabricsim.engine.pricing import CommPricer
    from fabricsim.engine.simulator import simulate
    from fabricsim.system import NPU, System
    from fabricsim.workload.graph import GraphBuilder

    b = GraphBuilder(20)
    everyone = tuple(range(20))
    b.collective("all-reduce", 3e9, everyone, "DP", "dp")
    c = [b.compute(p, "c", duration=1e-3) for p in everyone]
    b.collective("all-reduce", 0.3e9, everyone, "MP", "mp", deps=c)
    pricer = CommPricer(topo_of("B"), "flow", {"all-reduce": "in_network_tree"})
    res = simulate(b.build(), System(NPU()), pricer)
    t_dp, t_mp = 3e9 / 1.5e12, 0.3e9 / 1.5e12
    assert res.end[21] == pytest.approx(1e-3 + t_mp, rel=1e-9)
    assert res.end[0] == pytest.approx(t_dp + t_mp, rel=1e-9)


def test_weight_streaming_bound_is_the_io_rate():
    """A weight-streaming run with negligible compute: each layer's weights come in twice and its
    gradients go out once. On FRED loads and stores never share a link direction: the iteration
    is (2L + 1) x layer bytes / 2.304 TB/s. On the mesh a load alone runs at the hotspot's
    18 x 128 GB/s x 0.651; while gradients go out, their reverse trees share row links with the
    other edge's loads (12 streams on the busiest link instead of 9), so the mesh is slower than
    the spec's 1/0.651 bound, which counts loads alone."""
    from fabricsim.engine.pricing import CommPricer
    from fabricsim.engine.simulator import simulate
    from fabricsim.system import NPU, Ideal, Scheduling, System
    from fabricsim.workload.models import Layer, Model
    from fabricsim.workload.parallelism import Strategy, build_training

    L, params = 6, 500_000_000
    m = Model("stream", tuple(Layer(f"l{i}", "fc", params, 1.0, 1.0, 1.0, 1, params) for i in range(L)))
    g = build_training(m, Strategy(dp=20, batch=20, weight_streaming=True))
    sysm = System(NPU(1e18, 1e18, 1.0), Ideal(), Scheduling(comm_streams="per-category"))
    times = {}
    for name in ("mesh", "D"):
        t = topo_of(name)
        times[name] = simulate(g, sysm, CommPricer(t, "flow")).makespan
    W = params * 2
    assert times["D"] == pytest.approx((2 * L + 1) * W / (18 * 128e9), rel=1e-3)
    assert times["mesh"] > (2 * L + 1) * W / (18 * 128e9 * 750 / 1152)
    assert times["mesh"] / times["D"] > 1152 / 750
    # one load alone: the hotspot rate exactly
    mesh = CommPricer(topo_of("mesh"))
    assert mesh.io(0, tuple(range(20)), 1, W) == pytest.approx(W / (18 * 128e9 * 750 / 1152), rel=1e-6)
    assert CommPricer(topo_of("D")).io(0, tuple(range(20)), 1, W) == pytest.approx(W / (18 * 128e9), rel=1e-6)
