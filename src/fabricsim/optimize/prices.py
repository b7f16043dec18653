"""Unit prices of a fabric's parts (`Prices`), US dollars, for the cost model of `optimize.cost`.

Prices of rate-dependent parts (transceivers, NIC ports, switch ports) are tables of (line rate,
$) points. A rate between points costs the next point up (one buys a port at least as fast); a
rate above the fastest point is an error. `Prices.interpolated` reads the piecewise-linear
interpolation of the tables instead, for `cost_equivalent_bandwidth`'s continuous answer. Bandwidths
are bytes/s. `optimize.cost` re-exports `Prices` and `GBPS`.

Default prices
--------------
The paper's price table was **not found** (spec §1.4, §5 item 2). The defaults below are list
prices as we recall them, circa 2021-2022, for short-reach multimode optics and white-box
switches; none was checked against a price list here. Override them (`Prices.from_mapping`,
a `prices:` section of configs/topoopt.yaml) for any claim that depends on them.

=========  ===========  ========  ===========  ==================================================
rate       transceiver  NIC port  switch port  source / basis
=========  ===========  ========  ===========  ==================================================
10 Gbps    $20          $150      $100         ASSUMPTION: third-party SFP+ SR (~$20); dual-port
                                               10G adapter ~$300 / 2; 48x10G ToR ~$5k / ~50 ports
25 Gbps    $39          $175      $150         ASSUMPTION: third-party SFP28 SR (~$39); dual-port
                                               ConnectX-4 Lx class ~$350 / 2; 48x25G+8x100G
                                               white box ~$8k / 56 ports
40 Gbps    $49          $300      $250         ASSUMPTION: third-party QSFP+ SR4 (~$49); dual-port
                                               40G adapter ~$600 / 2; 32x40G white box ~$8k / 32
100 Gbps   $99          $500      $350         ASSUMPTION: third-party QSFP28 SR4 (~$99); dual-port
                                               ConnectX-5/6 Dx 100G ~$1,000 / 2; 32x100G
                                               Tomahawk white box ~$11k / 32
200 Gbps   $299         $1,100    $600         ASSUMPTION: QSFP56 SR4 (~$299); single-port
                                               ConnectX-6 200G ~$1,100; 400G switch port split
                                               in two, rounded up
400 Gbps   $599         $1,900    $1,000       ASSUMPTION: QSFP-DD SR8 (~$599); single-port
                                               ConnectX-7 400G ~$1,900; 32x400G Tomahawk 3
                                               white box ~$32k / 32
800 Gbps   $1,199       $3,800    $2,000       ASSUMPTION: no 2022 list price; 2 x the 400G
                                               price (800G optics and NICs shipped from 2023)
=========  ===========  ========  ===========  ==================================================

* patch-panel port: **$100** (spec §1.4 [recall, low confidence]: "a patch-panel port is priced
  around $100"; Telescent-class robotic panel).
* OCS port: **$500** (ASSUMPTION within the spec's [recall] "a few hundred dollars, several times
  a patch-panel port").
* fiber: **$30 per link** (ASSUMPTION: a ~10 m multimode MPO/LC patch cord, third-party price).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

from ..errors import ConfigError
from ..units import parse_bandwidth

GBPS = 1e9 / 8.0
"""Bytes/s in one Gbit/s."""

_REL = 1e-9  # relative tolerance when a rate is compared with a table's rate points

PricePoints = tuple[tuple[float, float], ...]
"""(line rate in bytes/s, US dollars) points, in increasing rate."""

RATED = ("transceiver", "nic_port", "switch_port")
"""The parts whose price depends on the line rate."""


def _table(*rows: tuple[float, float]) -> PricePoints:
    return tuple((g * GBPS, float(usd)) for g, usd in rows)


# The module docstring's table, with its sources.
_TRANSCEIVER = _table((10, 20), (25, 39), (40, 49), (100, 99), (200, 299), (400, 599), (800, 1199))
_NIC_PORT = _table((10, 150), (25, 175), (40, 300), (100, 500), (200, 1100), (400, 1900), (800, 3800))
_SWITCH_PORT = _table((10, 100), (25, 150), (40, 250), (100, 350), (200, 600), (400, 1000), (800, 2000))

_PRICE_ACCEPTED = "accepted: a price in US dollars, a number >= 0"
_TABLE_ACCEPTED = ("accepted: a non-empty mapping of line rate -> US dollars ({'100Gbps': 99, ...}) "
                   "or a list of [rate, dollars] pairs, with distinct rates")


def _gbps(rate: float) -> str:
    """`12.5e9` -> `100 Gbps` (labels and messages)."""
    return f"{rate / GBPS:.6g} Gbps"


def _price(value: object, field: str) -> float:
    """A price: a real number (not a bool), finite and >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(field, value, _PRICE_ACCEPTED)
    if not math.isfinite(value) or value < 0:
        raise ConfigError(field, value, _PRICE_ACCEPTED)
    return float(value)


def _points(value: object, field: str) -> PricePoints:
    """A price table from a mapping {rate: $} or pairs [(rate, $), ...]; sorted by rate."""
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, (list, tuple)):
        pairs = []
        for item in value:
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise ConfigError(field, item, _TABLE_ACCEPTED)
            pairs.append((item[0], item[1]))
    else:
        raise ConfigError(field, value, _TABLE_ACCEPTED)
    if not pairs:
        raise ConfigError(field, value, _TABLE_ACCEPTED)
    out = []
    for rate, usd in pairs:
        r = parse_bandwidth(rate, field)
        out.append((r, _price(usd, f"{field}[{_gbps(r)}]")))
    out.sort()
    for (r0, _), (r1, _) in zip(out, out[1:]):
        if r1 <= r0 * (1 + _REL):
            raise ConfigError(field, _gbps(r1), _TABLE_ACCEPTED)
    return tuple(out)


@dataclass(frozen=True)
class Prices:
    """Unit prices of the parts of a fabric, US dollars (defaults and sources: module docstring).

    Parameters
    ----------
    transceiver : tuple of (float, float)
        (line rate in bytes/s, $ per transceiver) points.
    nic_port : tuple of (float, float)
        (line rate in bytes/s, $ per NIC port) points.
    switch_port : tuple of (float, float)
        (line rate in bytes/s, $ per electrical switch port, optics excluded) points.
    patch_panel_port : float
        $ per patch-panel port.
    ocs_port : float
        $ per optical-circuit-switch port.
    fiber : float
        $ per fiber link (one duplex cable, any rate).

    Notes
    -----
    Tables may be given in any order (also as a mapping rate -> $); they are stored sorted by
    rate. A bad value is a one-line ConfigError naming `Prices.<field>`.
    """

    transceiver: PricePoints = _TRANSCEIVER
    nic_port: PricePoints = _NIC_PORT
    switch_port: PricePoints = _SWITCH_PORT
    patch_panel_port: float = 100.0
    ocs_port: float = 500.0
    fiber: float = 30.0

    def __post_init__(self):
        for name in RATED:
            object.__setattr__(self, name, _points(getattr(self, name), f"Prices.{name}"))
        for name in ("patch_panel_port", "ocs_port", "fiber"):
            object.__setattr__(self, name, _price(getattr(self, name), f"Prices.{name}"))

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, object] | None, where: str = "prices") -> Prices:
        """Prices from a config mapping: the defaults with the given fields replaced.

        Parameters
        ----------
        mapping : mapping or None
            Field -> value. `transceiver`, `nic_port`, `switch_port`: a mapping line rate ->
            US dollars (`{"100Gbps": 99, "400Gbps": 599}`; a number as rate is bytes/s) or a list
            of [rate, dollars] pairs; it replaces the whole default table. `patch_panel_port`,
            `ocs_port`, `fiber`: US dollars (numbers). None: the defaults.
        where : str
            The config section named in errors (`prices.fiber`).

        Returns
        -------
        Prices
            Validated prices; a one-line ConfigError naming the field for an unknown key, a
            negative or non-numeric price, or a bad table.

        Examples
        --------
        >>> Prices.from_mapping({"fiber": 12, "transceiver": {"100Gbps": 80}}).transceiver
        ((12500000000.0, 80.0),)
        """
        if mapping is None:
            return cls()
        names = [f.name for f in fields(cls)]
        if not isinstance(mapping, Mapping):
            raise ConfigError(where, mapping, f"accepted: a mapping with keys {', '.join(names)}")
        values = {}
        for key, value in mapping.items():
            if key not in names:
                raise ConfigError(f"{where}.{key}", value, f"accepted: keys {', '.join(names)}")
            field = f"{where}.{key}"
            values[key] = _points(value, field) if key in RATED else _price(value, field)
        return cls(**values)

    def top_rate(self, component: str | None = None) -> float:
        """The fastest line rate priced, bytes/s.

        Parameters
        ----------
        component : str, optional
            `transceiver`, `nic_port` or `switch_port`; default: the slowest of the three tables'
            fastest points (the fastest rate at which all three can be bought).

        Returns
        -------
        float
            Bytes/s.
        """
        if component is None:
            return min(getattr(self, c)[-1][0] for c in RATED)
        return self._table(component)[-1][0]

    def at(self, component: str, rate: float, field: str = "rate") -> float:
        """Price of one `component` at line `rate`: the price of the next rate point up.

        Parameters
        ----------
        component : str
            `transceiver`, `nic_port` or `switch_port`.
        rate : float
            Line rate, bytes/s (> 0).
        field : str
            The input named in the error when `rate` is above the table.

        Returns
        -------
        float
            US dollars; a one-line ConfigError naming `field` for a rate above the fastest point.

        Examples
        --------
        >>> Prices().at("transceiver", 80 * GBPS)     # no 80G point: a 100G transceiver
        99.0
        """
        table = self._table(component)
        for r, usd in table:
            if rate <= r * (1 + _REL):
                return usd
        raise ConfigError(field, _gbps(rate),
                          f"accepted: a line rate up to {_gbps(table[-1][0])} (the fastest {component} priced)")

    def interpolated(self, component: str, rate: float) -> float:
        """Price of one `component` at `rate` on the piecewise-linear interpolation of its table.

        Parameters
        ----------
        component : str
            `transceiver`, `nic_port` or `switch_port`.
        rate : float
            Line rate, bytes/s; below the first point the first point's price, above the last
            the last point's price (callers stop at `top_rate`).

        Returns
        -------
        float
            US dollars.

        Examples
        --------
        >>> Prices().interpolated("transceiver", 70 * GBPS)   # halfway from 40G ($49) to 100G ($99)
        74.0
        """
        table = self._table(component)
        if rate <= table[0][0]:
            return table[0][1]
        for (r0, p0), (r1, p1) in zip(table, table[1:]):
            if rate <= r1:
                return p0 + (p1 - p0) * (rate - r0) / (r1 - r0)
        return table[-1][1]

    def _table(self, component: str) -> PricePoints:
        if component not in RATED:
            raise ConfigError("component", component, f"accepted: one of {', '.join(RATED)}")
        return getattr(self, component)

