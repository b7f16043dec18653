"""circulant: N NPUs wired by rings i <-> i + p (mod N) for each jump p, fewest-hop routing
(the direct-connect topologies of TopoOpt, NSDI'23, without MP matchings)."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
from pydantic import Field, model_validator

from ...config import validate
from ...errors import ConfigError
from ..family import Int, LinkValues, Params, TopologyFamily, check_size, single_n
from ..graph import Topology
from .direct import from_edges

_SPEC = "accepted: circulant:N:p1,p2,... with integer jumps 1..N-1, e.g. circulant:12:1,5"


def circulant_size(n: int, jumps) -> tuple[int, int, int]:
    """NPUs, directed links and routing-table entries of a circulant topology, without building it.

    Parameters
    ----------
    n : int
        NPUs.
    jumps : sequence of int
        Ring jumps, one per ring (p and n - p are one ring).

    Returns
    -------
    (int, int, int)
        n; 2n links per jump (n for p = n/2, whose two rings coincide); n^2 routing-table entries.

    Examples
    --------
    >>> circulant_size(12, [1, 5]), circulant_size(8, [1, 4])
    ((12, 48, 144), (8, 24, 64))
    """
    return n, sum(n if 2 * p == n else 2 * n for p in jumps), n * n


def circulant(n: int, jumps, bandwidth, latency) -> Topology:
    """`n` NPUs, each linked both ways to i + p and i - p (mod n) for every jump p.

    Parameters
    ----------
    n : int
        NPUs, >= 2.
    jumps : sequence of int
        Ring jumps in 1..n-1 (p and n - p are the same ring: give one), together connecting the
        NPUs (gcd of n and the jumps is 1).
    bandwidth : float
        Per ring link and direction, bytes/s. Each jump uses 2 interfaces per NPU (the +p and -p
        rings); for p = n/2 both land on the same neighbour, one link of 2 x bandwidth.
    latency : float
        Per link, s.

    Returns
    -------
    Topology
        Named `circulant:N:p1,p2,...` (jumps as min(p, n - p), ascending), fewest-hop routing,
        `jumps` holding every offset q wired as i -> i + q (p and n - p).

    Examples
    --------
    >>> t = circulant(12, [1, 5], 50e9, 1e-7)
    >>> t.n_links, t.jumps
    (48, (1, 5, 7, 11))
    """
    p = validate(CirculantParams, {"n": n, "jumps": tuple(jumps)}, "circulant")
    n, canon = p.n, p.jumps
    n_npus, n_links, table = circulant_size(n, canon)
    check_size(n_npus, n_links, "topology", f"circulant:{n}:{','.join(map(str, canon))}", table)  # before allocating
    i = np.arange(n, dtype=np.int64)
    src = np.concatenate([i for _ in canon] + [i for _ in canon])
    dst = np.concatenate([(i + q) % n for q in canon] + [(i - q) % n for q in canon])
    key, count = np.unique(src * n + dst, return_counts=True)  # p = n/2: the +p and -p rings coincide
    topo = from_edges(key // n, key % n, n_npus=n, bandwidth=count * float(bandwidth), latency=float(latency),
                      bidirectional=False, name=f"circulant:{n}:{','.join(map(str, canon))}")
    return dataclasses.replace(topo, jumps=tuple({q % n for q in canon} | {(-q) % n for q in canon}))


class CirculantParams(Params):
    """circulant's parameters.

    Parameters
    ----------
    n : int
        NPUs, >= 2.
    jumps : tuple of int
        Ring jumps in 1..n-1, one per ring (p and n - p are one ring), connecting the NPUs
        (gcd of n and the jumps is 1); kept as min(p, n - p), ascending.
    """

    n: Int = Field(ge=2)
    jumps: tuple[Int, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _jumps(self):
        n = self.n
        bad = [p for p in self.jumps if not 1 <= p < n]
        if bad:
            raise ConfigError("jumps", bad[0], f"accepted: jumps 1..{n - 1}")
        canon = [min(p, n - p) for p in self.jumps]
        if len(set(canon)) != len(canon):
            dup = next(p for p in self.jumps if canon.count(min(p, n - p)) > 1)
            raise ConfigError("jumps", list(self.jumps), f"jump {dup} repeats a ring (p and {n}-p are one ring); "
                                                       "accepted: one jump per ring")
        if math.gcd(n, *canon) != 1:
            raise ConfigError("jumps", list(self.jumps), f"accepted: jumps whose gcd with n={n} is 1 (a connected "
                                                       "topology), e.g. including 1")
        object.__setattr__(self, "jumps", tuple(sorted(canon)))
        return self


def _parse(spec: str, shape: str, opts: list[str]) -> dict:
    n_text, sep, rest = ",".join([shape, *opts]).partition(":")
    if not sep or not rest.strip():
        raise ConfigError("topology", spec, _SPEC)
    jumps = []
    for x in rest.split(","):
        if not re.fullmatch(r"\s*\d{1,30}\s*", x):  # 30 digits: no jump is larger, and int() stays cheap
            raise ConfigError("topology", spec, f"{x.strip()!r} is not a jump; {_SPEC}")
        jumps.append(int(x))
    return {"n": single_n(n_text, spec), "jumps": tuple(jumps)}


def _build(p: CirculantParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    return circulant(p.n, p.jumps, bandwidth.one(), latency.one())


FAMILY = TopologyFamily("circulant", "circulant:12:1,5", "rings i <-> i+p for each jump p (TopoOpt's direct-connect "
                        "rings), fewest-hop routing", CirculantParams, _parse, _build,
                        size=lambda p: circulant_size(p.n, p.jumps)[:2], table=lambda p: p.n * p.n)
