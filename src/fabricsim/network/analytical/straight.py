"""The analytical model's straight-path route: link loads, path latencies and bandwidths without a hop list.

On a network whose routes are straight per dimension (`Topology.structure.straight_routes`: dimension
order over rings, one-way rings and lines, with one latency and one bandwidth per dimension,
`straight_dims`) a transfer's path in dimension d is an interval of the ring (line) it is on then. A
difference array per ring and direction, summed once, gives the transfers crossing every link
(`route_straight`, O(transfers + links)); a path's latency and bandwidth depend only on its hop
count per dimension (`path_lat_bw`). Every float is the one the hop list gives (the sparse product
adds a link's transfers one by one in transfer order): sums of one size are tabulated sequentially
(`equal_sums`), dyadic sizes are exact in any order (`_exact_link_sums`).

Used by the listed route of `analytical.route.route_step` and by the mesh router
(`analytical.mesh_route`); this module imports no other part of the analytical model.
"""

from __future__ import annotations

import numpy as np

from ...topology.graph import Topology


def straight_dims(topo: Topology) -> tuple[list[float], list[float]] | None:
    """Per dimension the one link latency (s) and bandwidth (bytes/s) of a network whose every path is
    straight per dimension (`route_straight`'s networks), or None.

    Parameters
    ----------
    topo : Topology
        The network.

    Returns
    -------
    (list of float, list of float) or None
        Latency (s) and bandwidth (bytes/s) of each dimension's links (a dimension without links: 0
        and inf); None unless the topology states straight routes (`Structure.straight_routes`:
        dimension order over ring, one-way ring and line dimensions only) over all its dimensions,
        with one latency and one bandwidth per dimension.
    """
    structure = topo.structure
    if not structure.straight_routes:
        return None
    step_link = topo.router.step_link  # the dimension-order router's table of +/- steps
    dims = tuple(topo.dims)
    if len(structure.kinds) != len(dims) or step_link.shape[:2] != (topo.n_npus, len(dims)):
        return None
    lat_d, bw_d = [], []
    for d in range(len(dims)):  # one latency and bandwidth per dimension: then a path's depend on its hop counts only
        ids = step_link[:, d, :]
        ids = ids[ids >= 0]
        lat, bw = topo.link_lat[ids], topo.link_bw[ids]
        if len(ids) and (np.any(lat != lat[0]) or np.any(bw != bw[0])):
            return None
        lat_d.append(float(lat[0]) if len(ids) else 0.0)
        bw_d.append(float(bw[0]) if len(ids) else np.inf)
    return lat_d, bw_d


def route_straight(topo: Topology, src: np.ndarray, dst: np.ndarray, reduce, frac: np.ndarray):
    """`route_step`'s numbers without a hop list, where every path is straight per dimension.

    Applies where `straight_dims` does (module doc), with NPU endpoints, no switch reduction unit on
    the way, and transfer sizes whose per-link sums the hop list's sequential sums reproduce exactly
    (`_exact_link_sums`).

    Parameters
    ----------
    topo : Topology
        The network.
    src, dst : int64 arrays [T]
        Topology nodes of each transfer.
    reduce : bool array [T]
        Whether each transfer is reduced at its destination (a reduction unit adds a hop).
    frac : float array [T]
        Bytes of each transfer per byte of collective size.

    Returns
    -------
    tuple or None
        (link_frac [links] bytes per byte of size, used link ids ascending (or a function giving
        them), path latency [T] s, path bandwidth [T] bytes/s, inf for no hop), equal bit for bit
        to what the hop list gives; None where the conditions above do not hold (the caller lists
        the hops).
    """
    n, n_t = topo.n_npus, len(src)
    if n_t and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        return None  # switches or bad nodes: the general router handles (or rejects) them
    if topo.reduce_link is not None and n_t and (np.asarray(reduce, bool) & (topo.reduce_link[dst] >= 0)).any():
        return None
    per_dim = straight_dims(topo)
    if per_dim is None:
        return None
    lat_d, bw_d = per_dim
    exact = _exact_link_sums(frac)
    if exact is None:
        return None
    weight, unit, one = exact
    count, load, hops_all = _straight_counts(topo, src, dst, weight)
    used = np.flatnonzero(count > 0)
    if load is not None:
        link_frac = np.ldexp(load, unit)
    else:
        k = count[used].astype(np.int64)
        table = equal_sums(one, int(k.max(initial=0)))
        link_frac = np.zeros(topo.n_links)
        link_frac[used] = table[k]
    lat, bw = path_lat_bw(hops_all, lat_d, bw_d)
    if np.array_equal(count > 0, link_frac > 0):  # no zero-byte transfer alone on a link: derive, do not keep
        return link_frac, lambda: np.flatnonzero(link_frac > 0), lat, bw
    return link_frac, used, lat, bw


def _straight_counts(topo: Topology, src: np.ndarray, dst: np.ndarray, weight: np.ndarray | None):
    """Per link the transfers crossing it (exact integers in float64) and, with `weight`, the sum of
    their weights (else None); per transfer its hop count in each dimension (int64 [T, D])."""
    n, n_t, dims = topo.n_npus, len(src), tuple(topo.dims)
    step_link = topo.router.step_link
    cs, cd = topo.coords(src), topo.coords(dst)
    strides = np.cumprod((1,) + dims[:-1])
    count = np.zeros(topo.n_links)  # transfers crossing each link (exact integers in float64)
    load = np.zeros(topo.n_links) if weight is not None else None  # sum of `weight` over them
    hops_all = np.zeros((n_t, len(dims)), dtype=np.int64)
    for d, kind in enumerate(topo.structure.kinds):
        size, st = dims[d], int(strides[d])
        a = cs[:, d]
        diff = cd[:, d] - a
        if not diff.any():
            continue
        # the node the transfer is at when dimension d starts (dims < d corrected, dims > d as at
        # src), with coordinate d set to 0: the first node of the ring it travels on
        line_node = src + (cd[:, :d] - cs[:, :d]) @ strides[:d] - a * st
        plus, hops = _dim_hops(kind, diff, size)
        hops_all[:, d] = hops
        m = hops > 0
        # ring id of each transfer in dimension d: node index with coordinate d removed
        line = (line_node // (st * size)) * st + line_node % st
        for direction, sel in ((0, m & plus), (1, m & ~plus)):
            if not sel.any():
                continue
            per_node = _interval_sums(hops[sel], a[sel], line[sel], direction, size, st, n,
                                      None if weight is None else weight[sel])
            links = step_link[:, d, direction]
            hit = per_node[0] > 0
            if (links[hit] < 0).any():
                raise ValueError("routing used a link that does not exist")
            np.add.at(count, links[hit], per_node[0][hit])
            if load is not None:
                np.add.at(load, links[hit], per_node[1][hit])
    return count, load, hops_all


def _dim_hops(kind: str, diff: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Direction (True: +) and hop count of each transfer along one dimension of `kind` (as the
    dimension-order router: a ring the short way, a half-way tie going +), from its coordinate change."""
    fwd = diff % size
    if kind == "ring":  # as DimensionOrderRouter: shortest direction, a half-way tie goes +
        plus = fwd <= size - fwd
        hops = np.where(plus, fwd, size - fwd)
    elif kind == "uniring":
        plus = np.ones(len(diff), bool)
        hops = fwd
    else:
        plus = diff > 0
        hops = np.abs(diff)
    return plus, np.where(diff != 0, hops, 0)


def _interval_sums(h: np.ndarray, s0: np.ndarray, ln: np.ndarray, direction: int, size: int, st: int, n: int,
                   weight: np.ndarray | None) -> list[np.ndarray]:
    """Per node, the transfers whose interval of `h` hops from position `s0` of ring `ln` leaves it in
    `direction` (0: +, 1: -), and with `weight` their summed weights: [count [n]] or [count, weights]."""
    n_lines = n // size
    width = 2 * size + 1  # positions unrolled twice so that a wrapping interval is one interval
    # + crosses the links leaving positions a .. a+h-1; - those leaving a-h+1 .. a (shifted by size)
    lo = s0 if direction == 0 else s0 - h + 1 + size
    key = np.concatenate([ln * width + lo, ln * width + lo + h])
    per_node = []
    for w in (None,) if weight is None else (None, weight):
        ww = np.ones(len(h)) if w is None else w
        acc = np.bincount(key, weights=np.concatenate([ww, -ww]), minlength=n_lines * width)
        acc = np.cumsum(acc.reshape(n_lines, width), axis=1)
        folded = acc[:, :size] + acc[:, size:2 * size]  # exact: integers below 2**53
        # [line, position] -> node: lines are (outer, inner) with coordinate d in between
        per_node.append(folded.reshape(n // (st * size), st, size).transpose(0, 2, 1).reshape(n))
    return per_node


def equal_sums(x: float, most: int) -> np.ndarray:
    """Sums of k equal terms x added one by one from 0, as the sparse product and `np.add.at` add them.

    Parameters
    ----------
    x : float
        The term (bytes per byte of collective size, or any unit: the sums are in its unit).
    most : int
        The largest k needed.

    Returns
    -------
    float array [most + 1]
        Entry k: x + x + ... (k terms), left to right (np.cumsum is strictly sequential, unlike
        np.sum's pairwise sum).
    """
    return np.concatenate([[0.0], np.cumsum(np.full(most, x))])


def _exact_link_sums(frac: np.ndarray):
    """How to reproduce, without ordering them, the hop list's per-link sums of transfer sizes.

    The sparse product adds a link's transfers one by one in transfer order. With one size x
    for all, k transfers give the k-th term of s_k = s_(k-1) + x, tabulated once. With
    sizes that are integer multiples of one power of two summing below 2**53 (dyadic fractions,
    as power-of-two schedules have), every partial sum is exact in any order.

    Parameters
    ----------
    frac : float array [T]
        Bytes per transfer per byte of collective size.

    Returns
    -------
    tuple or None
        (None, 0, x): one size x for all (the caller tabulates its sequential sums); or (weights,
        e, None): sizes = weights * 2**e with integer weights; None: neither (order matters).
    """
    if len(frac) == 0 or np.all(frac == frac[0]):
        return None, 0, float(frac[0]) if len(frac) else 0.0
    if not np.all(np.isfinite(frac)) or np.any(frac < 0):
        return None
    nz = frac[frac > 0]
    mant, expo = np.frexp(nz)
    ints = (mant * 2.0 ** 53).astype(np.int64)
    low = (ints & -ints).astype(np.float64)  # lowest set bit of each mantissa
    unit = int(np.min(expo - 53 + np.log2(low).astype(np.int64)))
    weight = np.ldexp(frac, -unit)
    if float(np.sum(weight)) >= 2.0 ** 53:
        return None
    return weight, unit, None


def path_lat_bw(hops: np.ndarray, lat_d: list[float], bw_d: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Path latency and bandwidth of straight paths from their hop counts per dimension.

    The hop list adds a path's link latencies in path order (dimension 0's hops first) from 0;
    the same sequential sum is formed once per distinct hop-count vector, so the floats agree bit
    for bit. The bandwidth is the slowest dimension crossed (inf: no hop).

    Parameters
    ----------
    hops : int64 array [T, D]
        Hops of each path along each dimension.
    lat_d, bw_d : lists of float [D]
        Each dimension's link latency (s) and bandwidth (bytes/s), `straight_dims`.

    Returns
    -------
    (float array [T], float array [T])
        Path latency (s) and path bandwidth (bytes/s; inf: no hop).
    """
    n_t = len(hops)
    if n_t == 0:
        return np.zeros(0), np.full(0, np.inf)
    # one integer key per hop-count vector (mixed radix); the distinct keys found by counting when
    # the key range is small (no sort), else by np.unique
    top = hops.max(axis=0) + 1
    radix = np.cumprod(np.concatenate([[1], top[:-1]])).astype(np.int64)
    key = hops @ radix
    if float(np.prod(top.astype(float))) <= 4 * n_t:
        keys = np.flatnonzero(np.bincount(key))
        where = np.zeros(int(key.max()) + 1, dtype=np.int64)
        where[keys] = np.arange(len(keys))
        inv = where[key]
    else:
        keys, inv = np.unique(key, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
    uniq = (keys[:, None] // radix[None, :]) % top[None, :]
    acc = np.zeros(len(uniq))
    ubw = np.full(len(uniq), np.inf)
    for d in range(hops.shape[1]):
        for k in range(int(uniq[:, d].max(initial=0))):
            acc = np.where(uniq[:, d] > k, acc + lat_d[d], acc)
        ubw = np.where(uniq[:, d] > 0, np.minimum(ubw, bw_d[d]), ubw)
    return acc[inv], ubw[inv]
