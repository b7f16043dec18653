"""ring: N NPUs in a ring, links both ways (or one way), shortest-direction routing."""

from __future__ import annotations

from pydantic import Field

from ...errors import ConfigError

from ..family import Bool, Int, LinkValues, Params, TopologyFamily, grid_links, parse_flags, single_n
from ..graph import Topology
from .stack import stack


def ring(n: int, bandwidth, latency, *, bidirectional: bool = True) -> Topology:
    """A ring of `n` NPUs: each NPU linked to the next (and the previous, when bidirectional).

    Parameters
    ----------
    n : int
        NPUs, >= 2. A ring of 2 has one link each way, not two.
    bandwidth : float
        Per link and direction, bytes/s.
    latency : float
        Per link, s.
    bidirectional : bool
        Links both ways (shortest direction, a half-way tie goes +); False: one direction.

    Returns
    -------
    Topology
        Named `ring:N` (`ring:N,uni`), dimension-order routing.

    Examples
    --------
    >>> ring(8, 50e9, 1e-7).n_links, ring(8, 50e9, 1e-7, bidirectional=False).n_links
    (16, 8)
    """
    return stack(("ring" if bidirectional else "uniring",), (n,), bandwidth, latency,
                 name=f"ring:{n}" + ("" if bidirectional else ",uni"))


class RingParams(Params):
    """ring's parameters.

    Parameters
    ----------
    n : int
        NPUs, >= 2.
    bidirectional : bool
        Links both ways (default) or one way (`ring:8,uni`).
    """

    n: Int = Field(ge=2)
    bidirectional: Bool = True


def _parse(spec: str, shape: str, opts: list[str]) -> dict:
    f = parse_flags(opts, {"uni", "bi"}, spec)
    if "uni" in f and "bi" in f:
        raise ConfigError("topology", spec, "uni (one direction) contradicts bi (both); accepted: one of them")
    return {"n": single_n(shape, spec), "bidirectional": "uni" not in f}


def _size(p: RingParams) -> tuple[int, int]:
    return grid_links(("ring" if p.bidirectional else "uniring",), (p.n,))


def _build(p: RingParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    return ring(p.n, bandwidth.one(), latency.one(), bidirectional=p.bidirectional)


FAMILY = TopologyFamily("ring", "ring:8[,uni]", "ring of N NPUs, both directions (uni: one direction)",
                        RingParams, _parse, _build, size=_size)
