"""fully-connected: a direct link between every ordered pair of NPUs."""

from __future__ import annotations

from pydantic import Field

from ..family import Int, LinkValues, Params, TopologyFamily, grid_links, parse_flags, single_n
from ..graph import Topology
from .stack import stack


def fully_connected(n: int, bandwidth, latency) -> Topology:
    """`n` NPUs with a link from every NPU to every other: n (n - 1) directed links.

    Parameters
    ----------
    n : int
        NPUs, >= 2.
    bandwidth : float
        Per link and direction, bytes/s.
    latency : float
        Per link, s.

    Returns
    -------
    Topology
        Named `fully-connected:N`; every route is the one direct link.

    Examples
    --------
    >>> fully_connected(4, 50e9, 1e-7).n_links
    12
    """
    return stack(("fc",), (n,), bandwidth, latency, name=f"fully-connected:{n}")


class FullyConnectedParams(Params):
    """fully-connected's parameters.

    Parameters
    ----------
    n : int
        NPUs, >= 2.
    """

    n: Int = Field(ge=2)


def _parse(spec: str, shape: str, opts: list[str]) -> dict:
    parse_flags(opts, set(), spec)
    return {"n": single_n(shape, spec)}


def _build(p: FullyConnectedParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    return fully_connected(p.n, bandwidth.one(), latency.one())


FAMILY = TopologyFamily("fully-connected", "fully-connected:8", "a link between every pair of NPUs",
                        FullyConnectedParams, _parse, _build, ("fc", "fullyconnected"),
                        size=lambda p: grid_links(("fc",), (p.n,)))
