"""Interconnect cost: TopoOpt (direct-connect through patch panels or OCSs) against fat-trees.

The model of the TopoOpt spec (`shared/specs/topoopt.md` §1.4, baselines §3.4): a fabric costs
the sum of its parts, count x unit price. Bandwidths are bytes/s, prices US dollars.

Counting (N servers)
--------------------
* **TopoOpt** (degree d, line rate B per interface): N·d NIC ports at B, N·d transceivers at B
  (one per interface; the patch panel or OCS is passive optics), N·d patch-panel (or OCS) ports,
  and **one fiber per interface** (server interface to its panel port), N·d fibers.
  No electrical switch. `expander_cost` counts the same parts (a random d-regular graph on the
  same panels).
* **Fat-tree** (per-server bandwidth b, t tiers, oversubscription o at the ToR): one NIC port per
  server at b, and every switch port and link at line rate b. Full bisection (o = 1):
  3 tiers (k-ary, N = k³/4): 5N switch ports (ToR down + up, aggregation down + up, core) and 3N
  links (server-ToR, ToR-aggregation, aggregation-core); 2 tiers (leaf/spine, as
  `topology.builders.fat_tree`): 3N ports, 2N links; 1 tier (one ideal switch): N ports, N links.
  In general ports = N + 2(t-1)·N/o and links = N + (t-1)·N/o: the ToR keeps its N down ports
  and N server links, everything above it is scaled by 1/o (2:1 halves the ToR uplinks and all
  above them). Counts are per-server and need not be whole numbers (a partly built tree).
  **Every link is optical**, server-ToR included: 2 transceivers and one fiber per link (a copper
  DAC would be cheaper for the server-ToR hop; we price it optical, as TopoOpt's server
  interfaces are optical too, so both sides pay for optics on every hop).

Prices of rate-dependent parts (transceivers, NIC ports, switch ports) are tables of (line rate,
$) points. A rate between points costs the next point up (one buys a port at least as fast); a
rate above the fastest point is an error. `cost_equivalent_bandwidth` also solves on the
piecewise-linear interpolation of the tables, for a continuous answer. The prices, their default
tables and the sources of each are in `optimize.prices` (`Prices`, re-exported here).

The default sweep of fat-tree per-server rates is the authors' scripts' (spec §1.4 [code]):
{10, 25, 40, 80, 100, 160, 200, 320, 400, 800, 1600} Gbps. With the default tables 80 Gbps
costs a 100G port and 1600 Gbps is above the fastest priced port (left out of the search).

Examples
--------
>>> p = Prices(transceiver=((12.5e9, 100.0),), nic_port=((12.5e9, 500.0),),
...            switch_port=((12.5e9, 300.0),), patch_panel_port=100.0, ocs_port=400.0, fiber=10.0)
>>> topoopt_cost(16, 4, "100Gbps", p).total          # 16 x 4 x (500 + 100 + 100 + 10)
45440.0
>>> fat_tree_cost(16, "100Gbps", p).total            # 16 x (500 + 5 x 300 + 3 x (2 x 100 + 10))
42080.0
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..errors import ConfigError
from ..units import parse_bandwidth
from .prices import _REL, GBPS, RATED, Prices, _gbps

# re-exported: the price-table type (`optimize.prices`)
from .prices import PricePoints  # noqa: F401

__all__ = [
    "DEFAULT_RATES",
    "GBPS",
    "CostBreakdown",
    "CostEquivalent",
    "Prices",
    "cost_equivalent_bandwidth",
    "cost_table",
    "expander_cost",
    "fat_tree_cost",
    "topoopt_cost",
]

DEFAULT_RATES: tuple[float, ...] = tuple(g * GBPS for g in (10, 25, 40, 80, 100, 160, 200, 320, 400, 800, 1600))
"""Fat-tree per-server bandwidths searched by `cost_equivalent_bandwidth`, bytes/s (spec §1.4)."""


@dataclass(frozen=True)
class CostBreakdown:
    """What a fabric costs, part by part.

    Parameters
    ----------
    fabric : str
        A label (`TopoOpt d=4 x 100 Gbps (patch panel)`).
    n : int
        Servers.
    per_server_bw : float
        Bandwidth per server, bytes/s (d·B for TopoOpt, b for a fat-tree).
    items : dict
        Part -> US dollars for all of them.
    quantities : dict
        Part -> how many (per-server counts times N; may be fractional when oversubscribed).
    """

    fabric: str
    n: int
    per_server_bw: float
    items: dict[str, float]
    quantities: dict[str, float]

    @property
    def total(self) -> float:
        """The whole fabric, US dollars."""
        return float(sum(self.items.values()))

    @property
    def per_server(self) -> float:
        """Total / servers, US dollars."""
        return self.total / self.n


@dataclass(frozen=True)
class CostEquivalent:
    """The fat-tree that costs no more than a TopoOpt fabric.

    Parameters
    ----------
    topoopt_bw : float
        TopoOpt's bandwidth per server d·B, bytes/s.
    topoopt_cost : float
        TopoOpt's cost, US dollars.
    rate : float or None
        The largest listed per-server rate b' whose fat-tree costs <= `topoopt_cost`, bytes/s;
        None if even the slowest costs more.
    fat_tree_cost : float or None
        The fat-tree's cost at `rate`, US dollars.
    continuous : float or None
        The largest b' with fat-tree cost <= `topoopt_cost` on the interpolated price tables,
        bytes/s, at most the fastest priced rate; None if none fits.
    """

    topoopt_bw: float
    topoopt_cost: float
    rate: float | None
    fat_tree_cost: float | None
    continuous: float | None


def _count(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(field, value, "accepted: an integer >= 1")
    return int(value)


def _oversub(value: object) -> float:
    ok = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value > 0
    if not ok:
        raise ConfigError("oversub", value, "accepted: a number > 0 (1: full bisection, 2: 2:1 at the ToR)")
    return float(value)


def _direct_connect(n: int, d: int, link_bw: object, prices: Prices | None, ocs: bool, name: str) -> CostBreakdown:
    """TopoOpt and the expander: N·d interfaces, each a NIC port, a transceiver, a panel port, a fiber."""
    n, d = _count(n, "n"), _count(d, "d")
    b = parse_bandwidth(link_bw, "link_bw")
    prices = Prices() if prices is None else prices
    k = float(n * d)
    port = "OCS ports" if ocs else "patch-panel ports"
    items = {
        "NIC ports": k * prices.at("nic_port", b, "link_bw"),
        "transceivers": k * prices.at("transceiver", b, "link_bw"),
        port: k * (prices.ocs_port if ocs else prices.patch_panel_port),
        "fibers": k * prices.fiber,
    }
    quantities = dict.fromkeys(items, k)
    label = f"{name} d={d} x {_gbps(b)} ({'OCS' if ocs else 'patch panel'})"
    return CostBreakdown(label, n, d * b, items, quantities)


def topoopt_cost(n: int, d: int, link_bw: float | str, prices: Prices | None = None, *,
                 ocs: bool = False) -> CostBreakdown:
    """TopoOpt's cost: N·d·(NIC port(B) + transceiver(B) + panel port) + N·d fibers.

    Parameters
    ----------
    n : int
        Servers.
    d : int
        Interfaces per server (degree).
    link_bw : float or str
        Line rate B of each interface, bytes/s (or `100Gbps`).
    prices : Prices, optional
        Unit prices, US dollars (default `Prices()`).
    ocs : bool
        Optical circuit switches instead of patch panels.

    Returns
    -------
    CostBreakdown
        Parts in US dollars; per-server bandwidth d·B, bytes/s. A one-line ConfigError for bad
        input or a line rate above the price tables.

    Examples
    --------
    >>> p = Prices(transceiver=((12.5e9, 100.0),), nic_port=((12.5e9, 500.0),),
    ...            switch_port=((12.5e9, 300.0),), patch_panel_port=100.0, ocs_port=400.0, fiber=10.0)
    >>> topoopt_cost(16, 4, 12.5e9, p, ocs=True).items["OCS ports"]   # 16 x 4 x $400
    25600.0
    """
    return _direct_connect(n, d, link_bw, prices, bool(ocs), "TopoOpt")


def expander_cost(n: int, d: int, link_bw: float | str, prices: Prices | None = None, *,
                  ocs: bool = False) -> CostBreakdown:
    """An expander's cost (random d-regular graph): the same interfaces as TopoOpt.

    Parameters
    ----------
    n : int
        Servers.
    d : int
        Interfaces per server (degree).
    link_bw : float or str
        Line rate B of each interface, bytes/s (or `100Gbps`).
    prices : Prices, optional
        Unit prices, US dollars (default `Prices()`).
    ocs : bool
        Optical circuit switches instead of patch panels.

    Returns
    -------
    CostBreakdown
        Parts in US dollars, equal to `topoopt_cost`'s; per-server bandwidth d·B, bytes/s.
    """
    return _direct_connect(n, d, link_bw, prices, bool(ocs), "Expander")


def _tree_counts(n: int, oversub: float, tiers: int) -> tuple[float, float]:
    """(switch ports, links) of a t-tier tree oversubscribed o:1 at the ToR (module docstring)."""
    above = (tiers - 1) * n / oversub
    return n + 2 * above, n + above


def fat_tree_cost(n: int, server_bw: float | str, prices: Prices | None = None, *, oversub: float = 1.0,
                  tiers: int = 3) -> CostBreakdown:
    """A fat-tree's cost: N NIC ports, switch ports, 2 transceivers and a fiber per link, all at b.

    Parameters
    ----------
    n : int
        Servers.
    server_bw : float or str
        Per-server bandwidth b, the line rate of every port and link, bytes/s (or `400Gbps`).
    prices : Prices, optional
        Unit prices, US dollars (default `Prices()`).
    oversub : float
        Oversubscription at the ToR: ports and links above the ToR scaled by 1/oversub (1: full
        bisection; 2: 2:1).
    tiers : int
        3: k-ary 3-tier (5N ports, 3N links at full bisection); 2: leaf/spine (3N, 2N);
        1: one switch (N, N).

    Returns
    -------
    CostBreakdown
        Parts in US dollars; per-server bandwidth b, bytes/s. A one-line ConfigError for bad
        input or a rate above the price tables.

    Examples
    --------
    >>> p = Prices(transceiver=((12.5e9, 100.0),), nic_port=((12.5e9, 500.0),),
    ...            switch_port=((12.5e9, 300.0),), patch_panel_port=100.0, ocs_port=400.0, fiber=10.0)
    >>> fat_tree_cost(16, 12.5e9, p, oversub=2).quantities["switch ports"]   # 16 + 4 x 16 / 2
    48.0
    """
    n, tiers = _count(n, "n"), _count(tiers, "tiers")
    b = parse_bandwidth(server_bw, "server_bw")
    oversub = _oversub(oversub)
    prices = Prices() if prices is None else prices
    ports, links = _tree_counts(n, oversub, tiers)
    quantities = {"NIC ports": float(n), "switch ports": ports, "transceivers": 2 * links, "fibers": links}
    unit = {"NIC ports": prices.at("nic_port", b, "server_bw"),
            "switch ports": prices.at("switch_port", b, "server_bw"),
            "transceivers": prices.at("transceiver", b, "server_bw"),
            "fibers": prices.fiber}
    items = {k: q * unit[k] for k, q in quantities.items()}
    label = f"Fat-tree {tiers}-tier {_gbps(b)}" + ("" if oversub == 1 else f" {oversub:g}:1")
    return CostBreakdown(label, n, b, items, quantities)


def _tree_cost_interpolated(n: int, b: float, prices: Prices, oversub: float, tiers: int) -> float:
    ports, links = _tree_counts(n, oversub, tiers)
    return (n * prices.interpolated("nic_port", b) + ports * prices.interpolated("switch_port", b)
            + 2 * links * prices.interpolated("transceiver", b) + links * prices.fiber)


def _continuous_rate(n: int, budget: float, prices: Prices, oversub: float, tiers: int) -> float | None:
    """The largest b <= top rate with interpolated fat-tree cost <= budget.

    The cost is piecewise linear in b with breaks at the tables' rate points, so the answer is
    exact: the last break point that fits, then the crossing on the segment after it."""
    top = prices.top_rate()
    xs = sorted({r for c in RATED for r, _ in getattr(prices, c) if r < top} | {top})
    cs = [_tree_cost_interpolated(n, x, prices, oversub, tiers) for x in xs]
    fits = [i for i, c in enumerate(cs) if c <= budget]
    if not fits:
        return None
    i = fits[-1]
    if i == len(xs) - 1:
        return top
    x0, x1, c0, c1 = xs[i], xs[i + 1], cs[i], cs[i + 1]
    return x0 + (x1 - x0) * (budget - c0) / (c1 - c0)


def cost_equivalent_bandwidth(n: int, d: int, link_bw: float | str, prices: Prices | None = None, *,
                              rates: Iterable[float | str] | None = None, oversub: float = 1.0, tiers: int = 3,
                              ocs: bool = False) -> CostEquivalent:
    """The per-server fat-tree bandwidth b' that costs no more than TopoOpt at (d, B).

    Parameters
    ----------
    n : int
        Servers.
    d : int
        TopoOpt interfaces per server.
    link_bw : float or str
        TopoOpt line rate B, bytes/s (or `100Gbps`).
    prices : Prices, optional
        Unit prices, US dollars (default `Prices()`).
    rates : iterable of float or str, optional
        Fat-tree per-server rates to choose from, bytes/s (or `400Gbps`); default `DEFAULT_RATES`
        (the spec's sweep, 10 to 1600 Gbps). Rates above the fastest priced port are left out.
    oversub : float
        The fat-tree's oversubscription at the ToR (1: full bisection, as the spec's baseline).
    tiers : int
        Fat-tree tiers (3: k-ary 3-tier; 2: leaf/spine).
    ocs : bool
        Price TopoOpt with OCS ports instead of patch-panel ports.

    Returns
    -------
    CostEquivalent
        TopoOpt's d·B (bytes/s) and cost ($); the largest listed rate whose fat-tree costs
        <= TopoOpt's (bytes/s, None if none) and that fat-tree's cost ($); the continuous
        solution on interpolated prices (bytes/s, capped at the fastest priced rate).

    Examples
    --------
    >>> p = Prices(transceiver=((12.5e9, 100.0),), nic_port=((12.5e9, 500.0),),
    ...            switch_port=((12.5e9, 300.0),), patch_panel_port=100.0, ocs_port=400.0, fiber=10.0)
    >>> eq = cost_equivalent_bandwidth(16, 4, 12.5e9, p, rates=[12.5e9])
    >>> eq.rate, eq.fat_tree_cost <= eq.topoopt_cost
    (12500000000.0, True)
    """
    prices = Prices() if prices is None else prices
    topo = topoopt_cost(n, d, link_bw, prices, ocs=ocs)
    oversub, tiers = _oversub(oversub), _count(tiers, "tiers")
    if rates is None:
        rates = DEFAULT_RATES
    elif isinstance(rates, (str, bytes)) or not isinstance(rates, Iterable):
        raise ConfigError("rates", rates, "accepted: a list of bandwidths such as [100Gbps, 400Gbps]")
    cand = sorted(parse_bandwidth(r, f"rates[{i}]") for i, r in enumerate(rates))
    if not cand:
        raise ConfigError("rates", rates, "accepted: a non-empty list of bandwidths")
    top = prices.top_rate()
    best = best_cost = None
    for r in cand:
        if r > top * (1 + _REL):
            break
        c = fat_tree_cost(n, r, prices, oversub=oversub, tiers=tiers).total
        if c <= topo.total:
            best, best_cost = r, c
    cont = _continuous_rate(topo.n, topo.total, prices, oversub, tiers)
    return CostEquivalent(topo.per_server_bw, topo.total, best, best_cost, cont)


_FABRIC_KEYS = {
    "topoopt": ("fabric", "label", "d", "link_bw", "ocs"),
    "expander": ("fabric", "label", "d", "link_bw", "ocs"),
    "fat-tree": ("fabric", "label", "server_bw", "oversub", "tiers"),
}


def cost_table(n: int, configs: Iterable[Mapping[str, object]], prices: Prices | None = None) -> list[dict]:
    """Rows of a cost table for a report: one fabric a row, relative to TopoOpt.

    Parameters
    ----------
    n : int
        Servers.
    configs : iterable of mapping
        One per row. `fabric`: `topoopt` or `expander` (with `d`, `link_bw`, optional `ocs`) or
        `fat-tree` (with `server_bw`, optional `oversub` = 1, `tiers` = 3); optional `label`.
        Bandwidths in bytes/s or as text (`100Gbps`).
    prices : Prices, optional
        Unit prices, US dollars (default `Prices()`).

    Returns
    -------
    list of dict
        Per row: `fabric` (label), `per_server_bw` (bytes/s), `total` ($), `per_server` ($ per
        server), `relative` (total / the first TopoOpt row's total; None without a TopoOpt row).
        A one-line ConfigError naming `configs[i].key` for a bad row.

    Examples
    --------
    >>> p = Prices(transceiver=((12.5e9, 100.0),), nic_port=((12.5e9, 500.0),),
    ...            switch_port=((12.5e9, 300.0),), patch_panel_port=100.0, ocs_port=400.0, fiber=10.0)
    >>> rows = cost_table(16, [{"fabric": "topoopt", "d": 4, "link_bw": "100Gbps"},
    ...                        {"fabric": "fat-tree", "server_bw": "100Gbps"}], p)
    >>> [(r["total"], round(r["relative"], 4)) for r in rows]
    [(45440.0, 1.0), (42080.0, 0.9261)]
    """
    prices = Prices() if prices is None else prices
    breakdowns, kinds = [], []
    for i, cfg in enumerate(configs):
        where = f"configs[{i}]"
        if not isinstance(cfg, Mapping):
            raise ConfigError(where, cfg, "accepted: a mapping with a `fabric` key")
        kind = cfg.get("fabric")
        if kind not in _FABRIC_KEYS:
            raise ConfigError(f"{where}.fabric", kind, f"accepted: one of {', '.join(_FABRIC_KEYS)}")
        for key in cfg:
            if key not in _FABRIC_KEYS[kind]:
                raise ConfigError(f"{where}.{key}", cfg[key], f"accepted: keys {', '.join(_FABRIC_KEYS[kind])}")
        try:
            if kind == "fat-tree":
                bd = fat_tree_cost(n, cfg.get("server_bw"), prices, oversub=cfg.get("oversub", 1.0),
                                   tiers=cfg.get("tiers", 3))
            else:
                fn = topoopt_cost if kind == "topoopt" else expander_cost
                bd = fn(n, cfg.get("d"), cfg.get("link_bw"), prices, ocs=bool(cfg.get("ocs", False)))
        except ConfigError as err:
            if err.field == "n":
                raise
            raise ConfigError(f"{where}.{err.field}", err.value, err.accepted) from None
        breakdowns.append((cfg.get("label") or bd.fabric, bd))
        kinds.append(kind)
    ref = next((bd.total for (_, bd), k in zip(breakdowns, kinds) if k == "topoopt"), None)
    return [{"fabric": label, "per_server_bw": bd.per_server_bw, "total": bd.total, "per_server": bd.per_server,
             "relative": (bd.total / ref if ref else None)} for label, bd in breakdowns]
