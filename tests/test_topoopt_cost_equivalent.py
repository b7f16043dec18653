"""TopoOpt's cost-equivalent fat-tree (issue 45): the rate at which the fat-tree, priced between the
tables' points by linear interpolation, costs exactly what TopoOpt costs; two cases by hand."""

from __future__ import annotations

import pytest

from fabricsim.experiments.topoopt.points import cost_equivalent
from fabricsim.optimize.cost import Prices, fat_tree_cost, topoopt_cost

# two rate points, 100 and 400 Gb/s (12.5 and 50 GB/s)
P = Prices(transceiver=((12.5e9, 100.0), (50e9, 300.0)), nic_port=((12.5e9, 500.0), (50e9, 1000.0)),
           switch_port=((12.5e9, 300.0), (50e9, 700.0)), patch_panel_port=100.0, ocs_port=400.0, fiber=10.0)


@pytest.mark.parametrize("d", [4, 8])
def test_the_fat_tree_costs_what_topoopt_costs(d):
    """16 servers. TopoOpt at d x 100 Gb/s: 16 d (NIC $500 + transceiver $100 + panel port $100) + 16 d
    fibers x $10 = 16 d x $710. A 3-tier fat-tree at b: 16 NIC ports, 5 x 16 switch ports, 2 x 3 x 16
    transceivers, 3 x 16 fibers: $42,080 at 100 Gb/s, $101,280 at 400 Gb/s, linear between. So
    b = 12.5e9 + 37.5e9 x (16 d x 710 - 42,080) / 59,200 bytes/s: 14.63 GB/s (d 4), 43.41 GB/s (d 8)."""
    budget = 16 * d * 710.0
    assert topoopt_cost(16, d, 12.5e9, P).total == pytest.approx(budget)
    assert fat_tree_cost(16, 12.5e9, P).total == pytest.approx(42080.0)
    assert fat_tree_cost(16, 50e9, P).total == pytest.approx(101280.0)
    want = 12.5e9 + 37.5e9 * (budget - 42080.0) / 59200.0
    assert cost_equivalent(16, d, 12.5e9, P, 3) == pytest.approx(want, rel=1e-12)


def test_no_fat_tree_as_cheap_is_refused():
    from fabricsim.errors import ConfigError

    with pytest.raises(ConfigError) as e:
        cost_equivalent(16, 1, 12.5e9, P, 3)  # 16 x $710 < $42,080
    assert "prices" in str(e.value) and "\n" not in str(e.value)
