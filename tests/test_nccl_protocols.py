"""NCCL's protocols and its algorithm choice (issue 39), against closed forms written here.

Constants below are NCCL 2.23.4's (src/graph/tuning.cc), restated in the test, not read from
the code under test: baseLat / hwLat in us, LL's 0.5 and LL128's 0.92 share of the bandwidth,
LL's 141 GB/s bus-bandwidth ceiling on one Hopper node, the tree's 0.92 and its 1/2 ratio.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabricsim.cli import main
from fabricsim.cli.collective import run_collective
from fabricsim.collectives.registry import choose_algorithm
from fabricsim.engine.pricing import CommPricer
from fabricsim.errors import ConfigError
from fabricsim.network.model import get_network_model
from fabricsim.network.tuner import price_collective
from fabricsim.topology.spec import parse_topology

US = 1e-6
MIB = 2**20
# (base latency, per-hop NVLink latency) in us, share of the bandwidth: NCCL 2.23.4 tuning.cc
RING = {"LL": (6.6, 0.6, 0.5), "LL128": (14.0, 1.9, 0.92), "Simple": (8.4, 3.4, 1.0)}
LL_MAX_BUSBW_HOPPER_ONE_NODE = 141e9


def ring_closed_form(proto: str, p: int, size: float, bw: float) -> float:
    """A ring all-reduce on a switch of p ranks, links of `bw` and no link latency, in `proto`:
    latency = base + 2(p-1) hops; bandwidth: 2(p-1) steps of size/p at share x bw (LL: no faster
    than its bus-bandwidth ceiling, algbw = ceiling x p / (2(p-1)))."""
    base, hop, share = RING[proto]
    lat = (base + 2 * (p - 1) * hop) * US
    net = 2 * (p - 1) * (size / p) / (share * bw)
    if proto == "LL":
        net = max(net, size / (LL_MAX_BUSBW_HOPPER_ONE_NODE * p / (2 * (p - 1))))
    return lat + net


@pytest.mark.parametrize("p", [4, 7, 16])
@pytest.mark.parametrize("proto", ["LL", "LL128", "Simple"])
@pytest.mark.parametrize("bw", [100e9, 400e9])  # at 400 GB/s LL's ceiling binds, at 100 it does not
def test_ring_protocols_closed_form(p, proto, bw):
    topo = parse_topology(f"switch:{p}", f"{bw / 1e9:g}GB/s", "0ns")
    sizes = np.array([64 * 1024, 8 * MIB, 2**30], dtype=float)
    priced = price_collective(topo, "all-reduce", choose_algorithm(f"ring,proto={proto}"),
                              get_network_model("congestion-aware"))
    want = [ring_closed_form(proto, p, s, bw) for s in sizes]
    np.testing.assert_allclose(priced.times(sizes), want, rtol=1e-9)
    assert [c.protocol for c in priced.chosen(sizes)] == [proto] * 3


def test_plain_ring_pays_no_protocol():
    topo = parse_topology("switch:8", "100GB/s", "0ns")
    t = price_collective(topo, "all-reduce", choose_algorithm("ring"), get_network_model("analytical")).times([2**30])
    assert t[0] == pytest.approx(2 * 7 / 8 * 2**30 / 100e9, rel=1e-12)


def test_auto_picks_the_cheaper_by_hand():
    """dgx-h100, one node: NVLink 450 GB/s x 0.824 = 370.8 GB/s, 100 ns per link, NVSwitch reduction
    275 GB/s. NVLS pays 25 us and two chunk waves of pipeline fill, a wave being 16 channels x 8 heads
    chunks (NCCL's rule: 128 KiB, halved to 64, 32, 16 KiB below 64, 8, 2 waves of the larger chunk:
    16 KiB at 1 MiB, 64 KiB at 64 MiB). At 1 MiB
    ring/LL (28.0 us) beats NVLS (44.3 us); at 64 MiB NVLS (330.6 us) beats ring/LL128 (387.7) and
    ring/Simple (375.5)."""
    link, lat = 450e9 * 0.824, 100e-9
    p = 8

    def ring_ll(s):  # LL's ceiling binds here: 14 hops of s/8 at 185.4 GB/s take less than s / 80.6 GB/s
        return (6.6 + 14 * 0.6) * US + max(14 * (s / p / (0.5 * link) + 2 * lat), s / (141e9 * p / 14))

    def ring_ll128(s):
        return (14.0 + 14 * 1.9) * US + 14 * (s / p / (0.92 * link) + 2 * lat)

    def ring_simple(s):
        return (8.4 + 14 * 3.4) * US + 14 * (s / p / link + 2 * lat)

    def stream(s):  # one stream up and down at the switch's 275 GB/s
        return s / 275e9 + 2 * lat

    def nvls(s, chunk):  # NCCL's NVLS latency 25 us, the stream, two waves of 16 x 8 chunks
        return 25 * US + stream(s) + 2 * stream(min(16 * 8 * chunk, s))

    header, rows = run_collective("dgx-h100:nodes=1", "400Gbps", "100ns", "all-reduce", "auto", "1MiB,64MiB",
                                  "congestion-aware", check=False)
    assert ring_ll(MIB) < nvls(MIB, 16384)
    assert nvls(64 * MIB, 65536) < min(ring_ll128(64 * MIB), ring_simple(64 * MIB))
    assert (rows[0]["algorithm"], rows[0]["protocol"]) == ("nccl_ring", "LL")
    assert rows[0]["time_s"] == pytest.approx(ring_ll(MIB), rel=1e-9)
    assert (rows[1]["algorithm"], rows[1]["protocol"]) == ("nvls", "Simple")
    assert rows[1]["time_s"] == pytest.approx(nvls(64 * MIB, 65536), rel=1e-9)


def test_tree_nic_bound():
    """nccl_tree across 2 nodes of 8 A100 with 4 HDR NICs (25 GB/s x 0.96): a double binary tree puts
    2 S through a node's NICs per direction, so algbw <= 0.92 x 1/2 x 4 x 24 GB/s = 44.16 GB/s; its
    latency 8.4 + 2 x (7 x 4.0 + 1 x 14) us. With 16x faster NICs the bound is far and the network
    decides (slower than latency + S / bound)."""
    size = 8 * 2**30
    lat = (8.4 + 2 * (7 * 4.0 + 14.0)) * US
    bound = 0.92 * 0.5 * 4 * 25e9 * 0.96
    net = get_network_model("congestion-aware")
    topo = parse_topology("dgx-a100:nodes=2,nics=4", "400Gbps", "100ns")
    t = price_collective(topo, "all-reduce", choose_algorithm("nccl_tree,proto=Simple"), net).times([size])[0]
    assert t == pytest.approx(lat + size / bound, rel=1e-9)
    fast = parse_topology("dgx-a100:nodes=2,nics=4,nic=3200Gbps,pcie=400GB/s", "400Gbps", "100ns")
    t_fast = price_collective(fast, "all-reduce", choose_algorithm("nccl_tree,proto=Simple"), net).times([size])[0]
    plain = price_collective(fast, "all-reduce", choose_algorithm("nccl_tree,proto=none"), net)
    assert t_fast < lat + size / (2 * bound)  # the NICs no longer bind
    assert t_fast == pytest.approx(lat + plain.times([size / 0.92])[0], rel=1e-9)


def test_dgx_a100_two_nodes_default_is_nccls_choice():
    """No -a on 2 DGX A100 with 4 HDR NICs: NCCL's choice, within 10% of NVIDIA's ~90 GB/s."""
    header, rows = run_collective("dgx-a100:nodes=2,nics=4", "400Gbps", "100ns", "all-reduce", "auto", "8GiB",
                                  "congestion-aware", check=False)
    assert header["algorithm"] == "auto" and rows[0]["algorithm"] in ("nccl_ring", "nccl_tree")
    assert abs(rows[0]["busbw_GBps"] / 90 - 1) <= 0.10


def test_one_answer_cli_pricer_traffic():
    """auto through the CLI's path, the training pricer and per size are the same floats."""
    spec = "dgx-h100:nodes=2"
    sizes = [MIB, 64 * MIB, 2**30]
    _, rows = run_collective(spec, "400Gbps", "100ns", "all-reduce", "auto", ",".join(map(str, sizes)),
                             "congestion-aware", check=False)
    topo = parse_topology(spec, "400Gbps", "100ns")
    pricer = CommPricer(topo, "congestion-aware")
    group = tuple(range(topo.n_npus))
    assert [pricer.collective("all-reduce", group, s) for s in sizes] == [r["time_s"] for r in rows]
    assert pricer.schedule("all-reduce", group, MIB).algorithm == rows[0]["algorithm"]


def test_non_cluster_auto_is_ring():
    _, rows = run_collective("torus:4x4", "100GB/s", "0ns", "all-reduce", "auto", "1GiB", "congestion-aware",
                             check=False)
    assert rows[0]["time_s"] == pytest.approx(2 * 15 / 16 * 2**30 / 100e9, rel=1e-9)  # a ring's, no protocol


@pytest.mark.parametrize("args, field", [
    (["-a", "nvls", "-o", "proto=LL"], "proto"),
    (["-a", "nccl_ring", "-o", "proto=LL256"], "--option proto"),
    (["-a", "swing", "-o", "proto=LL"], "--option proto"),
    (["-a", "auto", "-o", "dims=4x4"], "--option dims"),
    (["-o", "channels=0"], "--option channels"),
    (["-a", "warp"], "algorithm"),
])
def test_bad_protocol_or_algorithm_is_one_line(capsys, args, field):
    rc = main(["collective", "-t", "dgx-h100:nodes=1", "-s", "1MiB", "-q", *args])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "Traceback" not in err and len(err.splitlines()) == 1 and field in err


def test_nvls_without_reducing_switch_refused(capsys):
    rc = main(["collective", "-t", "dgx-a100:nodes=1", "-a", "nvls", "-s", "1MiB", "-q"])
    assert rc == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_json_reports_the_choice_per_size(capsys):
    assert main(["collective", "-t", "dgx-h100:nodes=1", "-s", "1MiB,1GiB", "--json", "-q"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["algorithm"], r["protocol"]) for r in rows] == [("nccl_ring", "LL"), ("nvls", "Simple")]


def test_auto_refused_where_a_schedule_is_built():
    from fabricsim.collectives.api import build_schedule

    with pytest.raises(ConfigError):
        build_schedule(parse_topology("ring:4"), "all-reduce", "auto")


def test_all_to_all_pays_a_simple_rounds_latency():
    """auto's all-to-all on one DGX A100 node: direct (NCCL's send/recv rounds), Simple, charged as a
    Simple ring's p - 1 steps (ASSUMPTION stated in network/nccl.py): 8.4 + 7 x 3.4 us, plus each rank's
    7/8 S over its NVLink (300 GB/s x 0.8) and two 100 ns links."""
    _, rows = run_collective("dgx-a100:nodes=1", "400Gbps", "100ns", "all-to-all", "auto", "1MiB,8MiB",
                             "congestion-aware", check=False)
    for row, s in zip(rows, (MIB, 8 * MIB)):
        assert (row["algorithm"], row["protocol"]) == ("direct", "Simple")
        assert row["time_s"] == pytest.approx((8.4 + 7 * 3.4) * US + 7 / 8 * s / 240e9 + 2 * 100e-9, rel=1e-9)


@pytest.mark.parametrize("model", ["congestion-aware", "flow"])
def test_training_engines_price_a_collective_as_the_command(model):
    """One all-reduce of 1 MiB after one of 64 MiB on one DGX H100 node, default algorithms (auto):
    both engines end at the sum of what `fabricsim collective` prints for the two sizes (ring/LL,
    NVLS), on the analytical model and on the flow model (the flow engine's whole-workload flows
    carry the protocol's bandwidth share and latency)."""
    from fabricsim.engine.simulator import simulate  # the flow model runs the flow engine
    from fabricsim.system import NPU, Ideal, Scheduling, System
    from fabricsim.workload.graph import GraphBuilder

    topo = parse_topology("dgx-h100:nodes=1", "400Gbps", "100ns")
    _, rows = run_collective("dgx-h100:nodes=1", "400Gbps", "100ns", "all-reduce", "auto", f"{64 * MIB},{MIB}", model,
                             check=False)
    b = GraphBuilder(8)
    first = b.collective("all-reduce", 64 * MIB, tuple(range(8)), "DP", "big")
    b.collective("all-reduce", MIB, tuple(range(8)), "DP", "small", deps=(first,))
    pricer = CommPricer(topo, model)
    sysm = System(NPU(), Ideal(), Scheduling())
    res = simulate(b.build(), sysm, pricer)
    assert res.makespan == pytest.approx(rows[0]["time_s"] + rows[1]["time_s"], rel=1e-9)


def test_auto_with_a_protocol_runs_what_can_run_it():
    """auto with proto=LL128 (as NCCL_PROTO=LL128): NVLS, which runs only Simple, drops out; the
    rings and trees run in LL128."""
    _, rows = run_collective("dgx-h100:nodes=1", "400Gbps", "100ns", "all-reduce", "auto", "1MiB,1GiB",
                             "congestion-aware", options=["proto=LL128"], check=False)
    assert {r["protocol"] for r in rows} == {"LL128"} and {r["algorithm"] for r in rows} <= {"nccl_ring", "nccl_tree"}


@pytest.mark.parametrize("model", ["congestion-aware", "flow"])
def test_a_traffic_file_prices_a_collective_as_the_command(tmp_path, model):
    """A traffic file's collective without an algorithm (auto) ends when `fabricsim collective` says:
    its flows at the protocol's share, then the protocol's latency (ring/LL at 1 MiB, NVLS at 64 MiB)."""
    from fabricsim.network.traffic import load_traffic, run_traffic

    for size in (MIB, 64 * MIB):
        f = tmp_path / f"t{size}.yaml"
        f.write_text(f"topology: dgx-h100:nodes=1\nbandwidth: 400Gbps\nlatency: 100ns\nmodel: {model}\n"
                     f"collectives:\n  - {{name: c, collective: all-reduce, size: {size}B}}\n")
        res = run_traffic(load_traffic(str(f)))
        _, rows = run_collective("dgx-h100:nodes=1", "400Gbps", "100ns", "all-reduce", "auto", str(size), model,
                                 check=False)
        assert res.items[0].finish_s == pytest.approx(rows[0]["time_s"], rel=1e-9)
