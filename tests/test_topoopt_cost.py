"""TopoOpt's cost model (spec topoopt.md §1.4, §3.4): TopoOpt, fat-trees, the cost-equivalent rate.

Every expected number is a closed form written here from the small price table `P` below
(not the module's defaults): C_topo = N·d·(nic + trx + panel + fiber); a k-ary 3-tier fat-tree
has 5N switch ports and 3N links (2 transceivers and a fiber each), leaf/spine 3N and 2N; 2:1 at
the ToR halves everything above the ToR."""

from __future__ import annotations

import pytest

from fabricsim.errors import ConfigError
from fabricsim.optimize.cost import (
    Prices,
    cost_equivalent_bandwidth,
    cost_table,
    expander_cost,
    fat_tree_cost,
    topoopt_cost,
)

G = 1e9 / 8  # bytes/s per Gbps

# $ per part at 10 / 100 / 400 Gbps
TRX = {10: 10.0, 100: 100.0, 400: 400.0}
NIC = {10: 50.0, 100: 500.0, 400: 2000.0}
SW = {10: 30.0, 100: 300.0, 400: 1200.0}
PP, OCS, FIBER = 100.0, 400.0, 5.0
P = Prices(
    transceiver=tuple((g * G, usd) for g, usd in TRX.items()),
    nic_port=tuple((g * G, usd) for g, usd in NIC.items()),
    switch_port=tuple((g * G, usd) for g, usd in SW.items()),
    patch_panel_port=PP, ocs_port=OCS, fiber=FIBER,
)
N = 128  # k = 8: k^3/4 = 128 servers (3-tier); k = 16: k^2/2 = 128 (leaf/spine)


def link(g):
    """One optical link at g Gbps: two transceivers and a fiber."""
    return 2 * TRX[g] + FIBER


def ft_per_server(g, ports, links):
    """Fat-tree $ per server with `ports` switch ports and `links` links per server."""
    return NIC[g] + ports * SW[g] + links * link(g)


def one_line(err):
    text = str(err.value)
    assert "\n" not in text
    return text


# ---- TopoOpt and the expander ------------------------------------------------------------------


@pytest.mark.parametrize("d,g", [(4, 100), (8, 10), (2, 400)])
def test_topoopt_cost_is_interfaces_times_unit_price(d, g):
    c = topoopt_cost(N, d, g * G, P)
    assert c.total == pytest.approx(N * d * (NIC[g] + TRX[g] + PP + FIBER))
    assert c.items["patch-panel ports"] == pytest.approx(N * d * PP)
    assert c.items["fibers"] == pytest.approx(N * d * FIBER)  # one fiber per interface
    assert c.quantities["transceivers"] == N * d
    assert c.per_server_bw == pytest.approx(d * g * G)
    assert c.per_server == pytest.approx(d * (NIC[g] + TRX[g] + PP + FIBER))


def test_topoopt_ocs_prices_ocs_ports_and_expander_is_the_same_fabric():
    ocs = topoopt_cost(N, 4, "100Gbps", P, ocs=True)
    assert ocs.total == pytest.approx(N * 4 * (NIC[100] + TRX[100] + OCS + FIBER))
    assert "patch-panel ports" not in ocs.items
    assert expander_cost(N, 4, "100Gbps", P).total == topoopt_cost(N, 4, "100Gbps", P).total
    assert expander_cost(N, 4, "100Gbps", P, ocs=True).total == ocs.total


# ---- fat-trees ---------------------------------------------------------------------------------


def test_k_ary_3_tier_has_5n_ports_and_3n_links():
    k = 8
    tor_ports = (k * k // 2) * k       # k^2/2 ToRs (k pods x k/2), k ports each
    agg_ports = (k * k // 2) * k       # k^2/2 aggregation switches
    core_ports = (k * k // 4) * k      # k^2/4 core switches
    assert tor_ports + agg_ports + core_ports == 5 * N
    c = fat_tree_cost(N, 100 * G, P)
    assert c.quantities["switch ports"] == 5 * N
    assert c.quantities["transceivers"] == 2 * 3 * N
    assert c.quantities["fibers"] == 3 * N
    assert c.total == pytest.approx(N * ft_per_server(100, 5, 3))
    assert c.total == pytest.approx(N * NIC[100] + 5 * N * SW[100] + 3 * N * 2 * TRX[100] + 3 * N * FIBER)


def test_two_tier_leaf_spine_has_3n_ports_and_2n_links():
    c = fat_tree_cost(N, 400 * G, P, tiers=2)
    assert (c.quantities["switch ports"], c.quantities["fibers"]) == (3 * N, 2 * N)
    assert c.total == pytest.approx(N * ft_per_server(400, 3, 2))


def test_one_tier_is_one_switch():
    assert fat_tree_cost(N, 10 * G, P, tiers=1).total == pytest.approx(N * ft_per_server(10, 1, 1))


@pytest.mark.parametrize("tiers,ports,links", [(3, 1 + 4 / 2, 1 + 2 / 2), (2, 1 + 2 / 2, 1 + 1 / 2)])
def test_two_to_one_oversubscription_halves_everything_above_the_tor(tiers, ports, links):
    # 3-tier 2:1: N ToR down ports + (ToR up, agg down, agg up, core) N/2 each; N + 2 x N/2 links
    c = fat_tree_cost(N, 100 * G, P, oversub=2, tiers=tiers)
    assert c.quantities["switch ports"] == pytest.approx(ports * N)
    assert c.quantities["fibers"] == pytest.approx(links * N)
    assert c.total == pytest.approx(N * ft_per_server(100, ports, links))
    assert c.total < fat_tree_cost(N, 100 * G, P, tiers=tiers).total


# ---- price lookup ------------------------------------------------------------------------------


def test_price_between_points_is_the_next_rate_up():
    assert P.at("transceiver", 40 * G) == TRX[100]
    assert P.at("transceiver", 100 * G) == TRX[100]
    assert P.at("nic_port", 100.5 * G) == NIC[400]
    assert P.at("switch_port", 1 * G) == SW[10]  # below the table: the slowest port
    assert fat_tree_cost(N, 40 * G, P).total == fat_tree_cost(N, 100 * G, P).total


def test_rate_above_the_table_is_a_one_line_error_naming_the_input():
    with pytest.raises(ConfigError) as err:
        fat_tree_cost(N, 800 * G, P)
    assert one_line(err).startswith("server_bw:") and "400 Gbps" in str(err.value)
    with pytest.raises(ConfigError) as err:
        topoopt_cost(N, 4, "800Gbps", P)
    assert one_line(err).startswith("link_bw:")


def test_interpolated_price_is_linear_between_points():
    assert P.interpolated("nic_port", 55 * G) == pytest.approx((NIC[10] + NIC[100]) / 2)


# ---- cost-equivalent bandwidth -----------------------------------------------------------------


RATES = [g * G for g in (10, 25, 40, 80, 100, 160, 200, 320, 400, 800, 1600)]


def test_cost_equivalent_picks_the_largest_rate_that_fits():
    # d = 4, B = 100G: budget/server 4 x 705 = 2820 >= 100G tree (2615) < 400G tree
    eq = cost_equivalent_bandwidth(N, 4, 100 * G, P, rates=RATES)
    assert eq.topoopt_cost == pytest.approx(N * 4 * (NIC[100] + TRX[100] + PP + FIBER))
    assert eq.topoopt_bw == pytest.approx(400 * G)
    assert N * ft_per_server(100, 5, 3) <= eq.topoopt_cost < N * ft_per_server(400, 5, 3)
    assert eq.rate == pytest.approx(100 * G)
    assert eq.fat_tree_cost == pytest.approx(N * ft_per_server(100, 5, 3))


def test_cost_equivalent_skips_rates_that_round_up_past_the_budget():
    # d = 2, B = 100G: budget/server 1410; 25..100G all cost a 100G tree (2615): only 10G fits
    eq = cost_equivalent_bandwidth(N, 2, 100 * G, P, rates=RATES)
    assert eq.rate == pytest.approx(10 * G)
    assert eq.fat_tree_cost == pytest.approx(N * ft_per_server(10, 5, 3))
    # continuous: per-server cost linear from 275 (10G) to 2615 (100G) on interpolated prices
    budget, lo, hi = 2 * (NIC[100] + TRX[100] + PP + FIBER), ft_per_server(10, 5, 3), ft_per_server(100, 5, 3)
    assert eq.continuous == pytest.approx((10 + 90 * (budget - lo) / (hi - lo)) * G)


def test_cost_equivalent_none_and_cap():
    low = cost_equivalent_bandwidth(N, 1, 10 * G, P, rates=RATES)  # 165/server < 275
    assert (low.rate, low.fat_tree_cost, low.continuous) == (None, None, None)
    high = cost_equivalent_bandwidth(N, 8, 400 * G, P, rates=RATES)  # 800G and 1600G are unpriced
    assert high.rate == pytest.approx(400 * G) and high.continuous == pytest.approx(400 * G)


def test_cost_equivalent_two_tier_and_oversubscribed_trees_are_cheaper_so_never_slower():
    for d, g in [(2, 100), (4, 100), (4, 10), (8, 100)]:
        full = cost_equivalent_bandwidth(N, d, g * G, P, rates=RATES)
        for kw in ({"tiers": 2}, {"oversub": 2}):
            other = cost_equivalent_bandwidth(N, d, g * G, P, rates=RATES, **kw)
            assert (other.rate or 0) >= (full.rate or 0)
            assert (other.continuous or 0) >= (full.continuous or 0)


@pytest.mark.parametrize("tiers", [2, 3])
def test_more_topoopt_bandwidth_never_gives_a_smaller_rate(tiers):
    configs = sorted(((d, g) for d in (1, 2, 4, 6, 8) for g in (10, 25, 40, 100, 200, 400)),
                     key=lambda dg: topoopt_cost(N, dg[0], dg[1] * G, P).total)
    prev_rate = prev_cont = 0.0
    for d, g in configs:
        eq = cost_equivalent_bandwidth(N, d, g * G, P, rates=RATES, tiers=tiers)
        rate, cont = eq.rate or 0.0, eq.continuous or 0.0
        assert rate >= prev_rate and cont >= prev_cont * (1 - 1e-12)
        prev_rate, prev_cont = rate, cont
    for d in (1, 2, 4, 8):  # more d at one B, and more B at one d
        rates = [cost_equivalent_bandwidth(N, d, g * G, P, rates=RATES, tiers=tiers).rate or 0.0
                 for g in (10, 25, 40, 100, 200, 400)]
        assert rates == sorted(rates)


# ---- Prices.from_mapping -----------------------------------------------------------------------


def test_from_mapping_overrides_and_sorts():
    p = Prices.from_mapping({"fiber": 7, "transceiver": {"100Gbps": 80, "10Gbps": 8}, "ocs_port": 250})
    assert p.transceiver == ((10 * G, 8.0), (100 * G, 80.0))
    assert (p.fiber, p.ocs_port) == (7.0, 250.0)
    assert p.nic_port == Prices().nic_port  # untouched fields keep the defaults
    assert Prices.from_mapping({"switch_port": [["400Gbps", 900], ["100Gbps", 300]]}).switch_port[0] == (100 * G, 300.0)


def test_from_mapping_rejects_an_unknown_key():
    with pytest.raises(ConfigError) as err:
        Prices.from_mapping({"fiber": 7, "optics": 3})
    assert one_line(err).startswith("prices.optics:")
    assert err.value.field == "prices.optics"


@pytest.mark.parametrize("mapping,field", [
    ({"patch_panel_port": -100}, "prices.patch_panel_port"),
    ({"fiber": "$5"}, "prices.fiber"),
    ({"ocs_port": True}, "prices.ocs_port"),
    ({"transceiver": {"100Gbps": -1}}, "prices.transceiver[100 Gbps]"),
    ({"nic_port": {"fast": 5}}, "prices.nic_port"),
    ({"nic_port": {}}, "prices.nic_port"),
])
def test_from_mapping_rejects_bad_prices_naming_the_field(mapping, field):
    with pytest.raises(ConfigError) as err:
        Prices.from_mapping(mapping)
    assert one_line(err).startswith(field + ":")
    assert err.value.field == field


# ---- bad input and the report table ------------------------------------------------------------


@pytest.mark.parametrize("call,field", [
    (lambda: topoopt_cost(0, 4, 100 * G, P), "n"),
    (lambda: topoopt_cost(N, 0, 100 * G, P), "d"),
    (lambda: topoopt_cost(N, 4, 0, P), "link_bw"),
    (lambda: fat_tree_cost(N, 100 * G, P, oversub=0), "oversub"),
    (lambda: fat_tree_cost(N, 100 * G, P, tiers=0), "tiers"),
    (lambda: cost_equivalent_bandwidth(N, 4, 100 * G, P, rates=[]), "rates"),
])
def test_bad_input_is_a_one_line_config_error(call, field):
    with pytest.raises(ConfigError) as err:
        call()
    one_line(err)
    assert err.value.field == field


def test_cost_table_rows_relative_to_topoopt():
    rows = cost_table(N, [
        {"fabric": "fat-tree", "server_bw": "400Gbps", "oversub": 2},
        {"fabric": "topoopt", "d": 4, "link_bw": "100Gbps"},
        {"fabric": "fat-tree", "server_bw": "100Gbps", "tiers": 2, "label": "leaf/spine"},
    ], P)
    topo = N * 4 * (NIC[100] + TRX[100] + PP + FIBER)
    assert [r["total"] for r in rows] == pytest.approx(
        [N * ft_per_server(400, 3, 2), topo, N * ft_per_server(100, 3, 2)])
    assert rows[1]["relative"] == 1.0 and rows[0]["relative"] == pytest.approx(rows[0]["total"] / topo)
    assert rows[2]["fabric"] == "leaf/spine" and rows[0]["fabric"].startswith("Fat-tree 3-tier 400 Gbps 2:1")
    assert rows[1]["per_server"] == pytest.approx(topo / N)
    assert rows[0]["per_server_bw"] == pytest.approx(400 * G)
    with pytest.raises(ConfigError) as err:
        cost_table(N, [{"fabric": "topoopt", "d": 4, "link_bw": "100Gbps", "bw": 1}], P)
    assert one_line(err).startswith("configs[0].bw:")
    with pytest.raises(ConfigError) as err:
        cost_table(N, [{"fabric": "fat-tree", "server_bw": "800Gbps"}], P)
    assert one_line(err).startswith("configs[0].server_bw:")
