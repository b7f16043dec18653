"""The dgx family (GPU nodes on NVSwitch, NICs on a scale-out fabric) and the presets dgx-a100,
dgx-h100 and tpu-v4: counts, paths and bandwidths against values worked out by hand here, the
three input forms giving one topology, and one-line errors naming the field."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.cli import main
from fabricsim.collectives.api import build_schedule
from fabricsim.errors import ConfigError
from fabricsim.network.model import get_network_model
from fabricsim.topology import FAMILIES, build_topology, parse_topology, topology_from_config

# 2 nodes x 4 GPUs x 2 NICs, NVLink 300 GB/s, NIC 200 Gb/s = 25 GB/s
SMALL = "dgx:nodes=2,gpus=4,nics=2,nvlink=300GB/s,nic=200Gbps"
NV, NIC = 300e9, 25e9


def only(values) -> float:
    """The one value an array holds (asserted)."""
    u = np.unique(values)
    assert len(u) == 1, u
    return float(u[0])


def path(t, s, d) -> list[tuple[int, int, str]]:
    """The links of s -> d as (from, to, class)."""
    _, links = t.route([s], [d])
    return [(int(t.link_src[x]), int(t.link_dst[x]), t.link_classes[t.link_class[x]]) for x in links]


def test_counts_of_a_small_cluster_per_fabric():
    # n = 8 GPUs (0..7), NVSwitches 8, 9, NICs 10..13 (node 0: 10, 11; node 1: 12, 13).
    # links: 2n NVLink + 2n PCIe + 2 x 4 NIC = 40, plus 2 x leaves x spines uplinks.
    n, nvsw, nics, base = 8, 2, 4, 2 * 8 + 2 * 8 + 2 * 4
    # rail: one leaf per rail (2 nodes <= 32), 2 leaves -> default spines = 2 nodes per leaf
    t = parse_topology(SMALL)
    assert (t.n_npus, t.n_switches, t.n_links) == (n, nvsw + nics + 2 + 2, base + 2 * 2 * 2)
    assert t.dims == (4, 2) and (t.node_gpus, t.node_nics) == (4, 2)
    # fat-tree with the default leaf 32: the 4 NICs on one leaf, no spines
    t = parse_topology(SMALL + ",fabric=fat-tree")
    assert (t.n_switches, t.n_links) == (nvsw + nics + 1, base)
    # fat-tree with 2 NICs per leaf: 2 leaves, 2 spines
    t = parse_topology(SMALL + ",fabric=fat-tree,leaf=2")
    assert (t.n_switches, t.n_links) == (nvsw + nics + 2 + 2, base + 2 * 2 * 2)
    # one switch
    t = parse_topology(SMALL + ",fabric=switch")
    assert (t.n_switches, t.n_links) == (nvsw + nics + 1, base)
    # one node: GPUs and the NVSwitch only
    t = parse_topology("dgx:nodes=1,gpus=8,nvlink=300GB/s")
    assert (t.n_npus, t.n_switches, t.n_links, t.node_nics) == (8, 1, 16, 0)


def test_size_estimate_is_exact():
    fam = FAMILIES["dgx"]
    base = {"nodes": 2, "gpus": 4, "nics": 2, "nvlink": NV, "nic": NIC}
    for extra in ({}, {"fabric": "fat-tree"}, {"fabric": "fat-tree", "leaf": 2}, {"fabric": "switch"}, {"leaf": 1},
                  {"nvls": True, "nvls_rate": 1e11}, {"sharp": True, "sharp_rate": 1e10, "leaf": 1},
                  {"nodes": 1}, {"nodes": 1, "nvls": True, "nvls_rate": 1e11}, {"nodes": 6, "leaf": 3, "spines": 5}):
        params = {**base, **extra}
        t = build_topology("dgx", **params)
        assert fam.size(fam.params.model_validate(params)) == (t.n_npus, t.n_links), extra
    # a SuperPOD-like cluster: 64 nodes x 8 GPUs x 8 NICs, leaf 32: 8 rails x 2 leaves, 32 spines
    t = parse_topology("dgx:nodes=64,nvlink=450GB/s,nic=400Gbps")
    n = 64 * 8
    assert t.n_switches == 64 + 64 * 8 + 16 + 32
    assert t.n_links == 2 * n + 2 * n + 2 * n + 2 * 16 * 32


def test_same_node_pair_is_two_nvlink_links():
    t = parse_topology(SMALL)
    assert path(t, 1, 3) == [(1, 8, "nvlink"), (8, 3, "nvlink")]
    assert path(t, 6, 5) == [(6, 9, "nvlink"), (9, 5, "nvlink")]


def test_cross_node_other_rail_goes_through_the_proxy_gpu():
    t = parse_topology(SMALL)
    # GPU 0 (node 0, rail 0) -> GPU 6 (node 1, local 2, rail 2 * 2 // 4 = 1): NVLink to the proxy
    # GPU 2 (node 0, local 2), its NIC 11 (node 0, rail 1), rail-1 leaf 15, NIC 13, GPU 6
    assert path(t, 0, 6) == [(0, 8, "nvlink"), (8, 2, "nvlink"), (2, 11, "pcie"), (11, 15, "nic"),
                             (15, 13, "nic"), (13, 6, "pcie")]
    # a source already on the destination's rail takes its own NIC: GPU 1 (rail 0) -> GPU 4 (rail 0)
    assert path(t, 1, 4) == [(1, 10, "pcie"), (10, 14, "nic"), (14, 12, "nic"), (12, 4, "pcie")]


def test_rail_pairs_never_touch_a_spine_while_nodes_fit_a_leaf():
    t = parse_topology("dgx:nodes=4,gpus=8,nics=8,nvlink=450GB/s,nic=400Gbps")   # 8 leaves, 4 spines
    assert t.n_switches == 4 + 32 + 8 + 4
    n = t.n_npus
    s, d = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n)))
    _, links = t.route(s, d)
    assert not np.isin(t.link_class[links], [t.link_classes.index("fabric")]).any()


def test_rail_leaves_beyond_a_scalable_unit_go_over_a_spine():
    # leaf=1: every node's NIC r on its own leaf; 2 nodes x 2 rails = 4 leaves, spines = 1 (m = 1)
    t = parse_topology(SMALL + ",leaf=1")
    # GPUs 0..7, NVSwitches 8, 9, NICs 10..13, leaves 14..17 (rail 0: 14, 15; rail 1: 16, 17), spine 18
    leaves, spine = [14, 15, 16, 17], 18
    assert t.n_nodes == spine + 1
    assert path(t, 0, 4) == [(0, 10, "pcie"), (10, leaves[0], "nic"), (leaves[0], spine, "fabric"),
                             (spine, leaves[1], "fabric"), (leaves[1], 12, "nic"), (12, 4, "pcie")]


def test_spines_spread_the_pairs_of_two_leaves():
    # 4 nodes of 1 GPU and 1 NIC, 2 nodes per leaf, 4 spines: the 2 x 2 pairs between the leaves
    # take 4 different spines, (2 i + j + A + B) mod 4
    t = parse_topology("dgx:nodes=4,gpus=1,nics=1,nvlink=1GB/s,nic=1GB/s,leaf=2,spines=4")
    first_spine = 4 + 4 + 4 + 2
    used = set()
    for s in (0, 1):
        for d in (2, 3):
            spines = {b for a, b, c in path(t, s, d) if c == "fabric" and b >= first_spine}
            assert len(spines) == 1
            used |= spines
    assert used == {first_spine + k for k in range(4)}


def test_fat_tree_and_switch_fabrics_use_the_sources_own_nic():
    for fabric in ("fat-tree", "switch"):
        t = parse_topology(SMALL + f",fabric={fabric}")
        # GPU 0 uses NIC 10 (0 * 2 // 4 = 0), GPU 6 uses NIC 13 (node 1, 2 * 2 // 4 = 1): no NVLink hop
        p = path(t, 0, 6)
        assert p[0] == (0, 10, "pcie") and p[-1] == (13, 6, "pcie")
        assert all(c != "nvlink" for _, _, c in p)


def test_gpu_to_switches_above_it_and_back():
    t = parse_topology(SMALL + ",leaf=1")   # NICs 10..13, leaves 14..17, spine 18
    assert path(t, 5, 9) == [(5, 9, "nvlink")]
    assert path(t, 9, 5) == [(9, 5, "nvlink")]
    assert path(t, 3, 11) == [(3, 11, "pcie")]            # GPU 3 uses NIC 3 * 2 // 4 = 1 of node 0
    assert path(t, 3, 16) == [(3, 11, "pcie"), (11, 16, "nic")]   # rail 1, node 0: leaf 16
    assert path(t, 3, 18) == [(3, 11, "pcie"), (11, 16, "nic"), (16, 18, "fabric")]
    assert path(t, 18, 3) == [(18, 16, "fabric"), (16, 11, "nic"), (11, 3, "pcie")]
    for s, d in ((3, 14), (3, 9), (8, 9), (10, 14), (14, 3), (3, 12)):
        with pytest.raises(ValueError):
            t.route([s], [d])


def test_every_path_is_connected():
    for extra in ("", ",leaf=1", ",fabric=fat-tree,leaf=2", ",fabric=switch"):
        t = parse_topology(SMALL + extra)
        n = t.n_npus
        s, d = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n)))
        ptr, links = t.route(s, d)
        for i in range(len(s)):
            cur = s[i]
            for x in links[ptr[i]:ptr[i + 1]]:
                assert t.link_src[x] == cur
                cur = t.link_dst[x]
            assert cur == d[i]


def test_link_bandwidth_is_line_rate_times_efficiency():
    t = parse_topology(SMALL + ",pcie=32GB/s,nvlink_eff=0.9,nic_eff=0.5,pcie_eff=0.25,leaf=1,oversub=2")
    want = {"nvlink": NV * 0.9, "pcie": 32e9 * 0.25, "nic": NIC * 0.5,
            # uplinks: m x nic x nic_eff / (oversub x spines), m = 1 node per leaf, 1 spine
            "fabric": 1 * NIC * 0.5 / (2 * 1)}
    for k, name in enumerate(t.link_classes):
        bw = t.link_bw[t.link_class == k]
        if name in want:
            assert len(bw) and np.all(bw == pytest.approx(want[name], rel=1e-12)), name
    # defaults: 0.8; no pcie: the GPU-NIC hop at the NIC's effective rate; 0.96
    t = parse_topology(SMALL)
    cls = dict(zip(t.link_classes, range(5)))
    assert only(t.link_bw[t.link_class == cls["nvlink"]]) == pytest.approx(NV * 0.8)
    assert only(t.link_bw[t.link_class == cls["pcie"]]) == pytest.approx(NIC * 0.96)
    assert only(t.link_bw[t.link_class == cls["nic"]]) == pytest.approx(NIC * 0.96)
    # uplinks: 2 nodes per leaf x 25 GB/s x 0.96 / 2 spines
    assert only(t.link_bw[t.link_class == cls["fabric"]]) == pytest.approx(2 * NIC * 0.96 / 2)


def test_latencies():
    t = parse_topology(SMALL + ",nic_lat=2us", latency="100ns")
    cls = np.array(t.link_classes)[t.link_class]
    assert only(t.link_lat[cls == "nvlink"]) == pytest.approx(1e-7)
    assert only(t.link_lat[cls != "nvlink"]) == pytest.approx(2e-6)
    t = parse_topology(SMALL, latency="50ns,1us")   # NVLink, then the rest
    assert only(t.link_lat[np.array(t.link_classes)[t.link_class] == "nvlink"]) == pytest.approx(5e-8)
    assert only(t.link_lat[np.array(t.link_classes)[t.link_class] == "pcie"]) == pytest.approx(1e-6)


def test_in_network_reduction_units():
    t = parse_topology(SMALL + ",nvls,nvls_rate=100GB/s,sharp,sharp_rate=10GB/s")
    nvsw, fabric = [8, 9], [14, 15, 16, 17]   # NICs 10..13, 2 rail leaves, 2 spines
    assert t.can_reduce[nvsw].all() and t.can_multicast[nvsw].all()
    assert t.can_reduce[fabric].all() and not t.can_reduce[:8].any() and not t.can_reduce[10:14].any()
    for sw, rate in [(s, 100e9) for s in nvsw] + [(s, 10e9) for s in fabric]:
        x = t.reduce_link[sw]
        assert t.link_src[x] == t.link_dst[x] == sw and t.link_bw[x] == rate and t.link_lat[x] == 0
        assert t.link_classes[t.link_class[x]] == "reduce" and t.link_dim[x] == -1
    assert (t.reduce_link[:8] == -1).all()
    assert t.n_links == 48 + 2 + 4   # a self-loop per reducing switch


def test_spec_string_mapping_and_build_topology_agree():
    a = parse_topology("dgx:nodes=4,gpus=8,nics=4,nvlink=450GB/s,nic=400Gbps,fabric=rail,leaf=2,nvls",
                       latency="1us")
    params = {"nodes": 4, "gpus": 8, "nics": 4, "nvlink": "450GB/s", "nic": "400Gbps", "fabric": "rail-fat-tree",
              "leaf": 2, "nvls": True}
    b = build_topology("dgx", latency="1us", **params)
    c = topology_from_config({"family": "dgx", **params}, latency="1us")
    for t in (b, c):
        assert t.name == a.name
        for f in ("link_src", "link_dst", "link_bw", "link_lat", "link_dim", "link_class", "can_reduce", "reduce_link"):
            assert np.array_equal(getattr(t, f), getattr(a, f)), f
        assert t.route(np.arange(32), np.arange(32)[::-1])[1].tolist() == a.route(np.arange(32),
                                                                                  np.arange(32)[::-1])[1].tolist()
    h = parse_topology("dgx-h100:nodes=2")
    m = topology_from_config({"family": "dgx-h100", "nodes": 2})
    assert h.name == m.name and np.array_equal(h.link_bw, m.link_bw)


def test_presets():
    gen4 = 16e9 * 16 * 128 / 130 / 8   # 31.5 GB/s
    gen5 = 32e9 * 16 * 128 / 130 / 8   # 63.0 GB/s
    for spec, nv, eff, nic, pcie, nvls in (("dgx-a100:nodes=2", 300e9, 0.8, 25e9, gen4, False),
                                           ("dgx-h100:nodes=2", 450e9, 0.824, 50e9, gen5, True)):
        t = parse_topology(spec)
        cls = np.array(t.link_classes)[t.link_class]
        assert (t.node_gpus, t.node_nics, t.n_npus) == (8, 8, 16)
        assert only(t.link_bw[cls == "nvlink"]) == pytest.approx(nv * eff)
        assert only(t.link_bw[cls == "nic"]) == pytest.approx(nic * 0.96)
        assert only(t.link_bw[cls == "pcie"]) == pytest.approx(pcie * 0.76)
        assert bool(t.can_reduce[16]) == nvls   # node 16: the first NVSwitch
    assert abs(gen4 - 31.5e9) < 0.01e9 and abs(gen5 - 63.0e9) < 0.02e9
    t = parse_topology("dgx-h100:nodes=2,nics=4,nonvls")
    assert t.node_nics == 4 and not t.can_reduce.any()
    assert parse_topology("dgx-h100:32").n_npus == 256
    assert parse_topology("dgx-h100:").n_npus == 8   # nodes default 1
    # tpu-v4: 4x4x4 torus, 6 links per chip at 50 GB/s per direction x 0.9 usable (4.5e10 B/s, JAX scaling book)
    t = parse_topology("tpu-v4:4x4x4", latency="1us")
    assert t.dims == (4, 4, 4) and t.n_links == 64 * 6 and set(t.link_bw) == {50e9 * 0.9}
    assert set(parse_topology("tpu-v4:4x4x4,ici_eff=1").link_bw) == {50e9}
    assert parse_topology("tpu-v4:").dims == (4, 4, 4)
    assert set(parse_topology("tpu-v4:4x4x8,ici=100GB/s,ici_lat=2us").link_lat) == {2e-6}


@pytest.mark.parametrize("spec,field", [
    (SMALL.replace("gpus=4", "gpus=0"), "gpus"),
    (SMALL.replace("nodes=2", "nodes=0"), "nodes"),
    (SMALL.replace("nics=2", "nics=8"), "nics"),
    (SMALL.replace("nics=2", "nics=3"), "nics"),
    (SMALL + ",fabric=torus", "fabric"),
    (SMALL + ",nvlink_eff=1.5", "nvlink_eff"),
    (SMALL + ",nic_eff=0", "nic_eff"),
    (SMALL + ",pcie_eff=-1", "pcie_eff"),
    ("dgx:nodes=40,nvlink=1GB/s,nic=1GB/s", "leaf"),
    ("dgx:nodes=2,nic=1GB/s", "nvlink"),
    ("dgx:nodes=2,nvlink=1GB/s", "nic"),
    (SMALL + ",colour=red", "colour"),
    (SMALL + ",nvls_rate=1GB/s", "nvls_rate"),
    (SMALL + ",spines=5", "spines"),
    (SMALL + ",fabric=switch,leaf=4", "leaf"),
    (SMALL + ",nvlink_lat=-1us", "nvlink_lat"),
    (SMALL + ",nvls,nonvls", "nvls"),
    (SMALL + ",gpus=4", "gpus"),
    ("dgx:nodes=1,nvlink=1GB/s,sharp", "sharp"),
    ("tpu-v4:4x4", "dims"),
])
def test_bad_specs_name_the_field(spec, field):
    with pytest.raises(ConfigError) as e:
        parse_topology(spec)
    assert field in str(e.value) and "\n" not in str(e.value)


def test_bad_mapping_names_the_field():
    with pytest.raises(ConfigError, match="nics"):
        topology_from_config({"family": "dgx-h100", "nodes": 2, "nics": 3})
    with pytest.raises(ConfigError, match="nodes"):
        topology_from_config({"family": "dgx-a100", "nodes": 2.0})


def test_cli_error_is_one_line_with_exit_code_2(capsys):
    rc = main(["collective", "-t", "dgx:nodes=2,gpus=8,nics=3,nvlink=300GB/s,nic=200Gbps", "-s", "1KiB", "-q"])
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("fabricsim: error: ") and "nics" in lines[0]


def test_cli_lists_the_presets(capsys):
    assert main(["topologies"]) == 0
    names = [ln.split()[0] for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    assert {"dgx", "dgx-a100", "dgx-h100", "tpu-v4"} <= set(names)


def test_ring_all_reduce_on_one_node_runs_at_nvlink_times_efficiency():
    """Ring all-reduce on p = 8 GPUs of one node: 2(p - 1) steps, each moving S/p over every GPU's
    NVLink up and down link (one transfer per link), so with zero latency t = 2(p - 1)/p x S / B_eff
    and busbw = S/t x 2(p - 1)/p = B_eff = 300 GB/s x 0.8."""
    t = parse_topology("dgx:nodes=1,gpus=8,nics=8,nvlink=300GB/s,nic=200Gbps", latency=0.0)
    s = build_schedule(t, "all-reduce", "ring")
    S, p, B = 2.0**30, 8, 300e9 * 0.8
    time = float(get_network_model("analytical").collective(t, s).times([S])[0])
    assert time == pytest.approx(2 * (p - 1) / p * S / B, rel=1e-9)
    assert S / time * 2 * (p - 1) / p == pytest.approx(300e9 * 0.8, rel=1e-9)


def test_limits_apply_before_building():
    with pytest.raises(ConfigError, match="NPUs"):
        parse_topology("dgx:nodes=100000,nvlink=450GB/s,nic=400Gbps")
    with pytest.raises(ConfigError, match="NPUs"):
        parse_topology("dgx-h100:nodes=32" + "0" * 30)
