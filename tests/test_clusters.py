"""Real clusters end to end: NCCL's striped rings over NICs, NVLS through a switch with a limited
reduction rate, NVLS + SHARP across nodes, on the dgx family; every expected time is a closed
form written here (issue 19)."""

from __future__ import annotations

import pytest

from fabricsim.cli.collective import run_collective
from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.nvls import nvls
from fabricsim.collectives.verify import verify
from fabricsim.errors import ConfigError, UnsupportedGroupSize
from fabricsim.network.model import get_network_model
from fabricsim.topology import parse_topology

S = 2.0**30  # bytes
MODELS = ("congestion-aware", "flow")


def _time(topo, algorithm, model="congestion-aware", size=S, **kw):
    sched = build_schedule(topo, "all-reduce", algorithm, **kw)
    return float(get_network_model(model).collective(topo, sched).times([size])[0]), sched


# ---- striped rings: c channels over c NICs = c x one ring's inter-node bandwidth ----------------------


@pytest.mark.parametrize("channels", [1, 2, 4, 8])
@pytest.mark.parametrize("model", MODELS)
def test_striped_ring_over_c_nics_is_c_times_one_ring(channels, model):
    # 2 nodes x 8 GPUs x 8 NICs; NVLink and PCIe far faster than a NIC, no latency: the NICs bound it.
    # Ring all-reduce: every rank sends 2(p-1)/p x S/c per channel, and channel k crosses each node
    # boundary on NIC k alone, so time = 2(p-1)/p x S / (c x B_nic).
    B = 10e9
    topo = parse_topology(f"dgx:nodes=2,gpus=8,nics=8,nvlink=10TB/s,pcie=10TB/s,nic={B * 8 / 1e9:g}Gbps,"
                          "nvlink_eff=1,nic_eff=1,pcie_eff=1", latency="0s")
    p = 16
    t, sched = _time(topo, f"nccl_ring,channels={channels}", model)
    assert verify(sched).blocks_checked == channels * p
    assert t == pytest.approx(2 * (p - 1) / p * S / (channels * B), rel=1e-9)


def test_one_plain_ring_crosses_on_one_nic():
    # the old expression of the same cluster: one ring in rank order leaves each node through one NIC
    B = 10e9
    topo = parse_topology(f"dgx:nodes=2,gpus=8,nics=8,nvlink=10TB/s,pcie=10TB/s,nic={B * 8 / 1e9:g}Gbps,"
                          "nvlink_eff=1,nic_eff=1,pcie_eff=1", latency="0s")
    t_ring, _ = _time(topo, "ring")
    t_nccl, _ = _time(topo, "nccl_ring")  # default: one channel per NIC
    assert t_ring == pytest.approx(2 * 15 / 16 * S / B, rel=1e-9)
    assert t_ring / t_nccl == pytest.approx(8, rel=1e-9)


def test_shared_nics_stripe_over_the_nics_there_are():
    # 4 NICs shared by 8 GPUs: 4 channels (the default) give 4 x one NIC
    B = 10e9
    topo = parse_topology(f"dgx:nodes=2,gpus=8,nics=4,nvlink=10TB/s,pcie=10TB/s,nic={B * 8 / 1e9:g}Gbps,"
                          "nvlink_eff=1,nic_eff=1,pcie_eff=1", latency="0s")
    t, _ = _time(topo, "nccl_ring")
    assert t == pytest.approx(2 * 15 / 16 * S / (4 * B), rel=1e-9)


# ---- NVLS: S / min(link, switch reduction rate) + latency -------------------------------------------


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("rate", [100e9, 275e9, 1000e9])
def test_nvls_time_is_size_over_min_of_link_and_reduction_rate(model, rate):
    B, eff, lat = 450e9, 0.824, 500e-9
    topo = parse_topology(f"dgx:nodes=1,gpus=8,nvlink=450GB/s,nvlink_eff={eff},nvls,nvls_rate={rate / 1e9:g}GB/s",
                          latency=f"{lat * 1e9:g}ns")
    t, sched = _time(topo, "nvls", model)
    assert sched.streaming and verify(sched).blocks_checked == 1
    assert t == pytest.approx(S / min(B * eff, rate) + 2 * lat, rel=1e-9)  # up one link, down one link


def test_nvls_without_a_rate_is_link_bound_and_in_network_agrees():
    topo = parse_topology("dgx:nodes=1,gpus=8,nvlink=300GB/s,nvlink_eff=0.8,nvls", latency="0s")
    t_nvls, _ = _time(topo, "nvls")
    t_in, _ = _time(topo, "in_network")  # the same switch, the same answer
    assert t_nvls == t_in == pytest.approx(S / (300e9 * 0.8), rel=1e-12)


def test_nvls_rate_binds_any_group_size_of_the_node():
    # the unit's rate is reduced output per second: any subset of the node streams S through it
    topo = parse_topology("dgx-h100:nodes=1", latency="0s")
    for group in ([0, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5, 6, 7]):
        t, _ = _time(topo, "nvls", group=group)
        assert t == pytest.approx(S / 275e9, rel=1e-12)


def test_lockstep_in_network_pays_the_reduction_unit_once_per_output():
    # lock-step: all the way up (S over min(link, rate): the 8 inputs share one output), then down
    B, rate = 100e9, 50e9
    topo = parse_topology(f"dgx:nodes=1,gpus=8,nvlink={B / 1e9:g}GB/s,nvlink_eff=1,nvls,nvls_rate={rate / 1e9:g}GB/s",
                          latency="0s")
    t, _ = _time(topo, "in_network,lockstep=true")
    assert t == pytest.approx(S / min(B, rate) + S / B, rel=1e-12)


# ---- NVLS + SHARP across nodes ------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("nics", [8, 4])
def test_nvls_sharp_is_one_stream_set_by_its_busiest_link(model, nics):
    # one stream through all six stages; per byte of S: a GPU's NVLink up carries 1 + 1/G (its
    # buffer, then its slice back to the switch), NVLink down 1 (its slice, then the G-1 others),
    # each NIC G/N slices of 1/G each way = 1/N, the node switch's unit 1 (the node's sum), a rail
    # switch's unit G/N slices = 1/N.
    G, nodes = 8, 2
    nvl, nic, nvs_rate, sharp_rate = 400e9, 40e9, 300e9, 20e9
    topo = parse_topology(
        f"dgx:nodes={nodes},gpus={G},nics={nics},nvlink={nvl / 1e9:g}GB/s,nic={nic * 8 / 1e9:g}Gbps,pcie=1TB/s,"
        f"nvlink_eff=1,nic_eff=1,pcie_eff=1,nvls,nvls_rate={nvs_rate / 1e9:g}GB/s,sharp,"
        f"sharp_rate={sharp_rate / 1e9:g}GB/s", latency="0s")
    t, sched = _time(topo, "nvls", model)
    assert sched.n_extra == nodes + nics and verify(sched).blocks_checked == G
    per_byte = max((1 + 1 / G) / nvl, 1 / nvl, (1 / nics) / nic, 1 / nvs_rate, (1 / nics) / sharp_rate)
    assert t == pytest.approx(S * per_byte, rel=1e-9)


def test_nvls_across_nodes_needs_sharp():
    topo = parse_topology("dgx-h100:nodes=2")
    with pytest.raises(ConfigError, match="SHARP"):
        build_schedule(topo, "all-reduce", "nvls")


@pytest.mark.parametrize("p,G,N", [(16, 8, 8), (8, 8, 1), (12, 4, 2), (6, 3, 1), (10, 5, 5), (3, 3, 1), (4, 1, 1),
                                   (40, 8, 4), (9, 3, 3)])
def test_nvls_verified_on_data(p, G, N):
    s = nvls("all-reduce", p, gpus_per_node=G, nics_per_node=N)
    assert verify(s).blocks_checked == s.nblocks
    assert s.n_extra == (1 if p == G else p // G + N)


def test_nvls_refuses_part_of_a_node():
    with pytest.raises(UnsupportedGroupSize):
        nvls("all-reduce", 12, gpus_per_node=8, nics_per_node=8)


# ---- the same number through the command line's path ---------------------------------------------------


def test_collective_command_path_gives_the_closed_form():
    # dgx-a100, 2 nodes, NCCL ring: NICs 25 GB/s x 0.96 = 24 GB/s, PCIe 31.5 x 0.76 = 23.94 GB/s on
    # every crossing's way in and out: 8 rails of min(24, 23.94) -> busbw 8 x 23.94 GB/s (latency 0;
    # the network alone: proto=none leaves NCCL's protocol latency out, tests/test_nccl_protocols.py has it)
    header, rows = run_collective("dgx-a100:nodes=2", "400Gbps", "0s", "all-reduce", "nccl_ring,proto=none", "8GiB",
                                  "congestion-aware")
    pcie = 16e9 * 16 * 128 / 130 / 8 * 0.76
    assert header["ranks"] == 16
    assert rows[0]["busbw_GBps"] * 1e9 == pytest.approx(8 * min(25e9 * 0.96, pcie), rel=1e-9)


def test_datasheet_nodes_ring_busbw_is_the_effective_nvlink():
    for preset, nvlink in (("dgx-a100", 300e9 * 0.8), ("dgx-h100", 450e9 * 0.824)):
        _, rows = run_collective(f"{preset}:nodes=1", "400Gbps", "0s", "all-reduce", "nccl_ring,proto=none", "1GiB",
                                 "congestion-aware")
        assert rows[0]["busbw_GBps"] * 1e9 == pytest.approx(nvlink, rel=1e-12)
