"""TopoOpt's TopologyFinder (NSDI'23, spec §2.3): a direct-connect topology for a job's traffic.

Step 1 splits each server's d interfaces between AllReduce rings and MP matchings by traffic
share (`split="paper"`), or gives all to rings as the authors' released code does
(`split="released"`). Step 2 gives each AllReduce group size its share of the ring interfaces
and wires rings i -> i + p chosen among the jumps that make one ring of every strided coset of
that size (TotientPerms, SelectPermutations); the full ring (k = n) is always wired so the
topology is connected. Step 3 adds d_mp maximum-weight matchings of the MP demand (Blossom).
Routing is fewest hops over all links with host-based forwarding (`to_topology`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from ..units import parse_bandwidth, parse_time
from .perms import _canon, _demand, _int, blossom_mp, check_degree, conn_matrix, select_permutations, totient_perms

SPLITS = ("paper", "released")


def split_degree(w_ar: float, w_mp: float, d: int, *, bidirectional: bool = True,
                 released: bool = False) -> tuple[int, int]:
    """Split a server's d interfaces between AllReduce rings and MP matchings (spec §2.3 step 1).

    Parameters
    ----------
    w_ar : float
        AllReduce weight, bytes (sum of S (2k - 1) over the groups).
    w_mp : float
        MP bytes (sum of the demand matrix).
    d : int
        Interfaces per server, >= 2 (>= 1 one-way); even when bidirectional and released.
    bidirectional : bool
        Rings are +p/-p pairs (default): d_ar is even and >= 2.
    released : bool
        The authors' released code: all to AllReduce, (d, 0).

    Returns
    -------
    (d_ar, d_mp) : tuple of int
        d_ar = round(d w_ar / (w_ar + w_mp)), to the nearest even number when bidirectional, at
        least one ring (2 bidirectional, 1 one-way) so the topology stays connected, at most d;
        d_mp = d - d_ar.

    Examples
    --------
    >>> split_degree(1.0, 1.0, 4), split_degree(3.0, 1.0, 8), split_degree(1.0, 9.0, 8, released=True)
    ((2, 2), (6, 2), (8, 0))
    """
    unit = 2 if bidirectional else 1
    why = " (a bidirectional ring uses 2 interfaces)" if bidirectional else ""
    d = _int("d", d, unit, f"accepted: an integer >= {unit}{why}")
    for name, w in (("w_ar", w_ar), ("w_mp", w_mp)):
        if not isinstance(w, (int, float, np.number)) or isinstance(w, bool) or not math.isfinite(w) or w < 0:
            raise ConfigError(name, w, "accepted: bytes >= 0")
    top = d - d % unit
    if released:
        if d % unit:
            raise ConfigError("d", d, "accepted: an even degree (released split: all interfaces on +p/-p rings)")
        return d, 0
    share = 1.0 if w_ar + w_mp == 0 else w_ar / (w_ar + w_mp)
    d_ar = unit * math.floor(d * share / unit + 0.5)
    d_ar = min(max(d_ar, unit), top)
    return d_ar, d - d_ar


def _distinct_rings(n: int, k: int, bidirectional: bool) -> int:
    return len({_canon(p, n, bidirectional) for p in totient_perms(n, k)})


def ring_capacity(n: int, *, bidirectional: bool = True) -> int:
    """Most interfaces per server that rings can use on n servers without wiring a ring twice.

    Parameters
    ----------
    n : int
        Servers, >= 2.
    bidirectional : bool
        Rings are +p/-p pairs of 2 interfaces (default).

    Returns
    -------
    int
        (2 if bidirectional else 1) x the distinct rings of every group size dividing n.

    Examples
    --------
    >>> ring_capacity(2), ring_capacity(12)   # Z_12: 1, 5 (k=12), 2 (6), 3 (4), 4 (3), 6 (2)
    (2, 12)
    """
    n = _int("n", n, 2)
    unit = 2 if bidirectional else 1
    return unit * sum(_distinct_rings(n, k, bidirectional) for k in range(2, n + 1) if n % k == 0)


def allocate_degree(traffic_by_size, d_ar: int, n: int, *, bidirectional: bool = True) -> dict[int, int]:
    """Interfaces per AllReduce group size, proportional to each size's traffic (spec §2.3 step 2).

    Parameters
    ----------
    traffic_by_size : mapping
        {k: bytes} for group sizes k dividing n (k >= 2), bytes >= 0.
    d_ar : int
        Interfaces for AllReduce rings: even and >= 2 bidirectional, >= 1 one-way.
    n : int
        Servers.
    bidirectional : bool
        Rings are +p/-p pairs of 2 interfaces (default).

    Returns
    -------
    dict
        {k: d_k}, the nonzero ones, summing to d_ar, each a multiple of the ring cost. Rings go
        by the largest-remainder rule on the traffic shares; the full ring k = n gets at least
        one ring (connected); no size gets more rings than it has distinct jumps, the surplus going
        to the other sizes with traffic (heaviest first), then k = n, then the other divisors of
        n (largest first). ConfigError when Z_n has fewer distinct rings than d_ar needs.

    Examples
    --------
    >>> allocate_degree({12: 3.0, 6: 1.0}, 8, 12)
    {12: 4, 6: 2, 4: 2}
    """
    n = _int("n", n, 2)
    unit = 2 if bidirectional else 1
    d_ar = _int("d_ar", d_ar, unit, f"accepted: an integer >= {unit}")
    if d_ar % unit:
        raise ConfigError("d_ar", d_ar, "accepted: an even degree (bidirectional rings use 2 interfaces)")
    traffic: dict[int, float] = {}
    for k, w in dict(traffic_by_size).items():
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 2 or n % k:
            raise ConfigError("traffic_by_size", k, f"accepted: group sizes that divide n={n} and are >= 2")
        if not math.isfinite(float(w)) or w < 0:
            raise ConfigError(f"traffic_by_size[{k}]", w, "accepted: bytes >= 0")
        if w > 0:
            traffic[int(k)] = float(w)
    rings = d_ar // unit
    caps = {k: _distinct_rings(n, k, bidirectional) for k in range(2, n + 1) if n % k == 0}
    if rings > sum(caps.values()):
        raise ConfigError("d_ar", d_ar, f"accepted: at most {unit * sum(caps.values())} (Z_{n} has "
                                        f"{sum(caps.values())} distinct rings)")
    alloc = {k: 0 for k in caps}
    total = sum(traffic.values())
    if total > 0:
        quota = {k: rings * w / total for k, w in traffic.items()}
        for k, q in quota.items():
            alloc[k] = math.floor(q)
        rest = rings - sum(alloc.values())
        for k in sorted(quota, key=lambda k: (-(quota[k] - alloc[k]), -k))[:rest]:
            alloc[k] += 1
    else:
        alloc[n] = rings
    if alloc[n] == 0:  # connectivity: take a ring from the size with the most
        k = max(alloc, key=lambda k: (alloc[k], -traffic.get(k, 0.0), k))
        alloc[k] -= 1
        alloc[n] = 1
    surplus = sum(max(0, alloc[k] - caps[k]) for k in alloc)
    alloc = {k: min(a, caps[k]) for k, a in alloc.items()}
    order = sorted(traffic, key=lambda k: (-traffic[k], -k)) + [n] + sorted(caps, reverse=True)
    for k in order:
        take = min(surplus, caps[k] - alloc[k])
        alloc[k] += take
        surplus -= take
    return {k: unit * a for k, a in sorted(alloc.items(), reverse=True) if a}


def _hops(conn: np.ndarray) -> np.ndarray:
    """All-pairs fewest hops over the links of conn (float; inf where unreachable)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import shortest_path

    return shortest_path(csr_matrix((conn > 0).astype(np.int8)), unweighted=True, directed=True)


@dataclass(frozen=True, eq=False)
class FoundTopology:
    """A topology found by `topology_finder`.

    Parameters
    ----------
    n : int
        Servers.
    d : int
        Interfaces per server.
    conn : int64 array [n, n]
        conn[i, j]: parallel links i -> j (capacity conn[i, j] x B).
    jumps : tuple of int
        Every ring jump wired (i -> i + p, and i -> i - p when bidirectional), ascending; p <= n/2
        when bidirectional.
    jumps_by_size : dict
        {k: jumps} of the group sizes served by rings of their own (each jump a one-hop ring of
        every strided coset of size k).
    matchings : tuple of int64 arrays (pairs, 2)
        The MP matchings, one per interface.
    d_ar, d_mp : int
        Interfaces per server on rings and on matchings.
    bidirectional : bool
        Rings are +p/-p pairs.
    """

    n: int
    d: int
    conn: np.ndarray
    jumps: tuple[int, ...]
    jumps_by_size: dict = field(default_factory=dict)
    matchings: tuple = ()
    d_ar: int = 0
    d_mp: int = 0
    bidirectional: bool = True

    def directed_jumps(self) -> tuple[int, ...]:
        """Every offset q with links i -> i + q for all i (both p and n - p when bidirectional).

        Returns
        -------
        tuple of int
            Offsets in 1..n-1, ascending (what `Topology.jumps` holds).
        """
        both = {p % self.n for p in self.jumps}
        if self.bidirectional:
            both |= {(-p) % self.n for p in self.jumps}
        return tuple(sorted(both - {0}))

    def byte_weighted_hops(self, mp) -> float:
        """MP bytes times the fewest hops each crosses.

        Parameters
        ----------
        mp : n x n array
            Bytes from server i to server j.

        Returns
        -------
        float
            Sum over i, j of mp[i, j] x hops(i -> j), byte-hops.
        """
        mp = _demand(mp, self.n)
        return float((mp * _hops(self.conn)).sum())

    def summary(self) -> dict:
        """The topology in plain values (for JSON).

        Returns
        -------
        dict
            n, d, d_ar, d_mp, jumps, jumps_by_size (keys as strings), matchings (count),
            diameter (hops), mean_hops (over ordered pairs of distinct servers), edges (directed
            server pairs with a link) and link_units (links counted with multiplicity).
        """
        h = _hops(self.conn)
        off = h[~np.eye(self.n, dtype=bool)]
        return {"n": self.n, "d": self.d, "d_ar": self.d_ar, "d_mp": self.d_mp, "jumps": list(self.jumps),
                "jumps_by_size": {str(k): list(v) for k, v in self.jumps_by_size.items()},
                "matchings": len(self.matchings), "diameter": float(off.max()) if len(off) else 0.0,
                "mean_hops": float(off.mean()) if len(off) else 0.0, "edges": int((self.conn > 0).sum()),
                "link_units": int(self.conn.sum())}


def _groups(ar_groups, n: int) -> tuple[float, dict[int, float]]:
    """(W_AR, {k: traffic}) of the AllReduce groups (sizes not dividing n fold to k = n)."""
    w_ar, by_size = 0.0, {}
    try:
        items = list(ar_groups)
    except TypeError:
        raise ConfigError("ar_groups", ar_groups, "accepted: a sequence of (members, bytes)") from None
    for g, item in enumerate(items):
        try:
            members, size = item
            members = np.asarray(members)
        except (TypeError, ValueError):
            raise ConfigError(f"ar_groups[{g}]", item, "accepted: a (members, bytes) pair") from None
        if members.ndim != 1 or (len(members) and members.dtype.kind not in "iu"):
            raise ConfigError(f"ar_groups[{g}]", item, "accepted: members as a sequence of server ids")
        if len(members) == 0 or members.min() < 0 or members.max() >= n or len(np.unique(members)) != len(members):
            raise ConfigError(f"ar_groups[{g}]", members.tolist()[:8], f"accepted: distinct server ids 0..{n - 1}")
        number = isinstance(size, (int, float, np.number)) and not isinstance(size, bool)
        if not number or not math.isfinite(size) or size < 0:
            raise ConfigError(f"ar_groups[{g}] bytes", size, "accepted: bytes >= 0")
        k = len(members)
        if k < 2 or size == 0:
            continue
        w_ar += float(size) * (2 * k - 1)
        key = k if n % k == 0 else n
        by_size[key] = by_size.get(key, 0.0) + float(size) * (2 * k - 1) / k
    return w_ar, by_size


def topology_finder(n: int, d: int, ar_groups, mp, *, bidirectional: bool = True, split: str = "paper",
                    select: str = "geometric", seed: int = 0, partners: int | None = 32) -> FoundTopology:
    """TopoOpt's TopologyFinder (spec §2.3): rings for AllReduce, matchings for MP.

    Parameters
    ----------
    n : int
        Servers, >= 2.
    d : int
        Interfaces per server: >= 2 when bidirectional (even with the released split), >= 1 one-way.
    ar_groups : sequence of (members, bytes)
        AllReduce groups: the servers (ids 0..n-1) and the bytes reduced (S per member). A size k
        that divides n is served as strided cosets of that size; other sizes count toward the
        full ring. Groups of 1 server carry nothing.
    mp : n x n array
        MP bytes from server i to server j (zeros for none).
    bidirectional : bool
        Rings are +p/-p pairs of 2 interfaces (default); False: one-way rings of 1 interface.
    split : str
        `paper`: d_ar = round(d W_AR / (W_AR + W_MP)) with W_AR = sum S (2k - 1), W_MP = sum mp;
        `released`: d_ar = d, d_mp = 0 (the authors' code).
    select : str
        SelectPermutations mode, `geometric` or `search` (spec §2.5).
    seed : int
        Seed of the search samples and of the pairing of servers without MP demand.
    partners : int or None
        Blossom candidate pairs per server on dense demand (`blossom_mp`); None: exact.

    Returns
    -------
    FoundTopology
        Every server with at most d links out and in, connected (a full ring is always wired),
        the same for the same inputs and seed. ConfigError (one line) for bad input.

    Examples
    --------
    >>> t = topology_finder(12, 4, [(tuple(range(12)), 1e9)], np.zeros((12, 12)))
    >>> t.jumps, t.d_ar, t.d_mp
    ((1, 5), 4, 0)
    """
    unit = 2 if bidirectional else 1
    n = _int("n", n, 2)
    why = " (a bidirectional ring uses 2 interfaces)" if bidirectional else ""
    d = _int("d", d, unit, f"accepted: an integer >= {unit}{why}")
    if split not in SPLITS:
        raise ConfigError("split", split, f"accepted: {', '.join(SPLITS)}")
    mp = _demand(mp, n)
    w_ar, by_size = _groups(ar_groups, n)
    d_ar, d_mp = split_degree(w_ar, float(mp.sum()), d, bidirectional=bidirectional, released=split == "released")
    alloc = allocate_degree(by_size, d_ar, n, bidirectional=bidirectional)
    order = [n] + sorted((k for k in alloc if k != n), key=lambda k: (-by_size.get(k, 0.0), -k))
    jumps_by_size: dict[int, tuple[int, ...]] = {}
    wired: list[int] = []
    for k in order:
        picked = select_permutations(totient_perms(n, k), alloc[k] // unit, n=n, mode=select, mp=mp, seed=seed,
                                     bidirectional=bidirectional, base=wired)
        jumps_by_size[k] = picked
        wired += picked
    matchings = blossom_mp(mp, d_mp, partners=partners, seed=seed) if d_mp else []
    conn = conn_matrix(n, wired, matchings, bidirectional=bidirectional)
    check_degree(conn, d)
    return FoundTopology(n, d, conn, tuple(sorted(wired)), dict(sorted(jumps_by_size.items(), reverse=True)),
                         tuple(matchings), d_ar, d_mp, bidirectional)


def to_topology(found: FoundTopology, bandwidth, latency, name: str | None = None):
    """The found topology as a `Topology` routed by fewest hops (host-based forwarding).

    Parameters
    ----------
    found : FoundTopology
        From `topology_finder`.
    bandwidth : float or str
        Per interface (one link of conn) and direction, bytes/s or with units (`100Gbps`).
    latency : float or str
        Per link, s or with units (`1us`).
    name : str, optional
        Default `topoopt:N,d=D`.

    Returns
    -------
    Topology
        One directed link per server pair with conn[i, j] > 0, of conn[i, j] x bandwidth
        (parallel links merged); `jumps` holds every offset q wired as i -> i + q (both p and
        n - p for bidirectional rings). Relayed traffic crosses the intermediate servers' links.
    """
    from ..topology import from_edges

    if not isinstance(found, FoundTopology):
        raise ConfigError("found", type(found).__name__, "accepted: a FoundTopology from topology_finder")
    bw = parse_bandwidth(bandwidth, "bandwidth")
    lat = parse_time(latency, "latency")
    src, dst = np.nonzero(found.conn)
    topo = from_edges(src, dst, n_npus=found.n, bandwidth=found.conn[src, dst] * bw, latency=lat,
                      bidirectional=False, name=name or f"topoopt:{found.n},d={found.d}")
    return dataclasses.replace(topo, jumps=found.directed_jumps())
