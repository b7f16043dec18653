"""switch: N NPUs on one switch, optionally reducing and multicasting in the network."""

from __future__ import annotations

from pydantic import Field, model_validator

from ...errors import ConfigError

from ..family import Bool, Int, LinkValues, Params, TopologyFamily, grid_links, parse_flags, single_n
from ..graph import Topology
from .stack import stack


def switch(n: int, bandwidth, latency, *, reduce: bool = False, multicast: bool | None = None) -> Topology:
    """`n` NPUs on one switch (node `n`), an up and a down link per NPU.

    Parameters
    ----------
    n : int
        NPUs, >= 2.
    bandwidth : float
        Per link and direction, bytes/s.
    latency : float
        Per link, s (a path NPU -> NPU is two links).
    reduce : bool
        The switch reduces in the network (in-network collectives).
    multicast : bool, optional
        The switch multicasts; default: as `reduce`.

    Returns
    -------
    Topology
        Named `switch:N` (`switch:N,reduce`), `leaf_of` = the switch for every NPU.

    Examples
    --------
    >>> t = switch(8, 50e9, 1e-7, reduce=True)
    >>> t.n_switches, t.n_links, bool(t.can_reduce[8])
    (1, 16, True)
    """
    return stack(("switch",), (n,), bandwidth, latency, name=f"switch:{n}" + (",reduce" if reduce else ""),
                 switch_reduce=reduce, switch_multicast=multicast)


class SwitchParams(Params):
    """switch's parameters.

    Parameters
    ----------
    n : int
        NPUs, >= 2.
    reduce : bool
        The switch reduces and multicasts (in-network collectives).
    multicast : bool
        The switch multicasts only (with `reduce`: true, or left out, as reduce multicasts).
    """

    n: Int = Field(ge=2)
    reduce: Bool = False
    multicast: Bool = False

    @model_validator(mode="after")
    def _consistent(self):
        if self.reduce and "multicast" in self.model_fields_set and not self.multicast:
            raise ConfigError("multicast", False, "a reducing switch multicasts (reduce: true); accepted: multicast "
                                                  "true or left out with reduce")
        return self


def _parse(spec: str, shape: str, opts: list[str]) -> dict:
    f = parse_flags(opts, {"reduce", "multicast"}, spec)
    out = {"n": single_n(shape, spec), "reduce": "reduce" in f}
    if "multicast" in f:  # only when given: a reducing switch multicasts anyway
        out["multicast"] = True
    return out


def _size(p: SwitchParams) -> tuple[int, int]:
    return grid_links(("switch",), (p.n,))


def _build(p: SwitchParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    return switch(p.n, bandwidth.one(), latency.one(), reduce=p.reduce, multicast=p.multicast or p.reduce)


FAMILY = TopologyFamily("switch", "switch:8[,reduce]", "N NPUs on one switch (reduce: it reduces and multicasts)",
                        SwitchParams, _parse, _build, size=_size)
