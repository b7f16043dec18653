"""Grouping equal rows of key columns, and reversing dependencies: the flow model's set-up passes.

`unique_rows(cols)` gives what `np.unique(np.stack(cols, 1), axis=0, return_index=True,
return_inverse=True)` gives (groups in lexicographic order of their rows, each represented by its
first row), which the flow model asks twice per simulation (routes: `route_keys`; classes:
`FlowRun`). `np.unique(axis=0)` sorts the rows as one structured dtype through numpy's generic
compare: 19 s of a 1,024-GPU training run's 71 s (6.4 M flows). Here a 64-bit hash of each row is
grouped in one compiled pass (a hash table, groups numbered by first appearance), every row is
compared with its group's first row column by column (a collision falls back to numpy's sort),
and only the distinct rows are sorted. The groups are defined by equality (`==`) and ordered as
numpy orders them, so the result is numpy's, index for index; rows with a NaN take numpy's path
(NaN is unequal to itself).

`successors(dep_ptr, dep_idx)` reverses a predecessor CSR; the compiled pass fills each item's
successors in increasing order, as the stable sort it replaces did.

Each compiled pass runs only where its compiled build is loaded (`fabricsim.kernels.load`: cached,
or a run big enough to compile); otherwise numpy does the same, with the same result.
"""

from __future__ import annotations

import numpy as np

from ...kernels import kernel, load

_ENTRIES = ("_hash_groups", "_fill_successors", "_route_hashes", "_rows_equal", "_path_sums", "_mix", "_link_bytes")
_BASES = (np.uint64(0x100000001B3), np.uint64(0xC2B2AE3D27D4EB4F))  # route_keys' two polynomial hashes
_MIX = np.uint64(0x9E3779B97F4A7C15)  # an odd 64-bit constant (golden ratio): mixes the columns' bits


@kernel
def _hash_groups(h):
    """(group of each row, first row of each group, groups): rows grouped by equal hash h (uint64),
    groups numbered by first appearance. Open addressing, the table doubled at half full."""
    n = len(h)
    size = 1024
    slots = np.full(size, -1, np.int64)
    first = np.empty(64, np.int64)
    gid = np.empty(n, np.int64)
    ng = 0
    for i in range(n):
        x = h[i]
        mask = size - 1
        j = np.int64(x & np.uint64(mask))
        while True:
            g = slots[j]
            if g < 0:
                if ng == len(first):
                    grown = np.empty(2 * ng, np.int64)
                    grown[:ng] = first
                    first = grown
                first[ng] = i
                slots[j] = ng
                gid[i] = ng
                ng += 1
                break
            if h[first[g]] == x:
                gid[i] = g
                break
            j = (j + 1) & mask
        if 2 * ng > size:  # rehash every group into a table twice the size
            size *= 2
            slots = np.full(size, -1, np.int64)
            for g in range(ng):
                j = np.int64(h[first[g]] & np.uint64(size - 1))
                while slots[j] >= 0:
                    j = (j + 1) & (size - 1)
                slots[j] = g
    return gid, first[:ng].copy(), ng


@kernel
def _fill_successors(dep_ptr, dep_idx, succ_ptr):
    """Successors of each item in increasing order (CSR over succ_ptr)."""
    fill = succ_ptr[:-1].copy()
    succ = np.empty(len(dep_idx), np.int64)
    for i in range(len(dep_ptr) - 1):
        for e in range(dep_ptr[i], dep_ptr[i + 1]):
            j = dep_idx[e]
            succ[fill[j]] = i
            fill[j] += 1
    return succ


@kernel
def _route_hashes(ptr, links, wbits, weighted, b0, b1):
    """`route_keys`' two polynomial hashes of every row, as its numpy path computes them (sums
    modulo 2^64: any order gives the same value)."""
    n = len(ptr) - 1
    h0, h1 = np.zeros(n, np.uint64), np.zeros(n, np.uint64)
    for i in range(n):
        s0, s1, p0, p1 = np.uint64(0), np.uint64(0), b0, b1
        for e in range(ptr[i], ptr[i + 1]):
            v = np.uint64(links[e]) + np.uint64(1)
            if weighted:
                v = v * _MIX + wbits[e]
            s0 += v * p0
            s1 += v * p1
            p0 *= b0
            p1 *= b1
        h0[i], h1[i] = s0, s1
    return h0, h1


@kernel
def _rows_equal(ptr, links, weight, weighted, rep):
    """Whether every row equals its representative row entry by entry (weights too)."""
    for i in range(len(ptr) - 1):
        r = rep[i]
        if r == i:
            continue
        a, b = ptr[i], ptr[r]
        for k in range(ptr[i + 1] - a):
            if links[a + k] != links[b + k] or (weighted and not weight[a + k] == weight[b + k]):
                return False
    return True


@kernel
def _path_sums(ptr, links, link_lat, link_bw, weight, weighted):
    """(latency, slowest rate) of every row: its links' latencies summed in order from 0.0 (as
    `np.bincount` sums them), the least link bandwidth / max(weight, 1e-300) (inf for none)."""
    n = len(ptr) - 1
    lat, bw = np.zeros(n), np.full(n, np.inf)
    for i in range(n):
        s, b = 0.0, np.inf
        for e in range(ptr[i], ptr[i + 1]):
            lk = links[e]
            s += link_lat[lk]
            v = link_bw[lk]
            if weighted:
                w = weight[e]
                v = v / (w if w >= 1e-300 else 1e-300)  # np.maximum(w, 1e-300)
            if not (b <= v or b != b):  # np.minimum(b, v): b unless v is smaller, NaN kept
                b = v
        lat[i], bw[i] = s, b
    return lat, bw


@kernel
def _mix(h, bits, floats):
    """Mix one column's bits into the row hashes h (in place); floats: -0.0 hashes as 0.0 (equal
    values, equal hashes)."""
    for i in range(len(h)):
        b = bits[i]
        if floats and b == np.uint64(0x8000000000000000):
            b = np.uint64(0)
        x = (h[i] ^ b) * _MIX
        h[i] = x ^ (x >> np.uint64(31))


@kernel
def _link_bytes(ptr, links, size, weight, weighted, n_out):
    """Bytes per link: every row's size (x its entry's weight) added over its links, entry by
    entry in order (as `np.bincount` adds them)."""
    out = np.zeros(n_out)
    for u in range(len(ptr) - 1):
        for e in range(ptr[u], ptr[u + 1]):
            out[links[e]] += size[u] * weight[e] if weighted else size[u] * 1.0
    return out


def _compiled(work: float):
    """The compiled build of this module's passes, or None where numpy should do them (`load`)."""
    mod = load(__name__.removesuffix("[python]"), _ENTRIES, work, "the flow model's kernels")
    return None if mod.__name__.endswith("[python]") else mod


def _row_hash(cols: list[np.ndarray], mod) -> np.ndarray:
    """A 64-bit hash of each row: every column's bits mixed in turn (compiled `_mix`)."""
    h = np.full(len(cols[0]), 0x2545F4914F6CDD1D, dtype=np.uint64)
    for c in cols:
        if c.dtype.kind == "f":
            mod._mix(h, np.ascontiguousarray(c, dtype=np.float64).view(np.uint64), True)
        else:
            mod._mix(h, np.ascontiguousarray(c).astype(np.int64 if c.dtype.kind == "i" else np.uint64, copy=False)
                     .view(np.uint64), False)
    return h


def _numpy_rows(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """`unique_rows` by numpy's structured sort (the definition)."""
    _, first, inv = np.unique(np.stack(cols, axis=1), axis=0, return_index=True, return_inverse=True)
    return first.astype(np.int64), inv.reshape(-1).astype(np.int64)


def unique_rows(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(first, inverse) of the rows formed by `cols`, as `np.unique` with axis=0 gives them.

    Parameters
    ----------
    cols : list of 1-D arrays
        Key columns of equal length, all floats or all integers (rows compare column by column).

    Returns
    -------
    (int64 array, int64 array)
        `first[g]`: the first row of group g, groups in lexicographic order of their rows;
        `inverse[i]`: the group of row i.

    Examples
    --------
    >>> first, inv = unique_rows([np.array([2.0, 1.0, 2.0, 1.0]), np.array([0.5, 0.5, 0.5, 0.25])])
    >>> first.tolist(), inv.tolist()
    ([3, 1, 0], [2, 1, 2, 0])
    """
    n = len(cols[0])
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if any(c.dtype.kind == "f" and np.isnan(c).any() for c in cols):  # NaN order and equality: numpy's own
        return _numpy_rows(cols)
    cols = [cols[0], *(c for c in cols[1:] if not np.all(c == c[0]))]  # a constant column orders and splits nothing
    mod = _compiled(n)
    if mod is None:
        return _numpy_rows(cols)
    gid, first, _ = mod._hash_groups(_row_hash(cols, mod))
    rep = first[gid]
    if not all(np.array_equal(c, c[rep]) for c in cols):  # a hash collision (never seen): numpy's sort
        return _numpy_rows(cols)
    order = np.lexsort([c[first] for c in cols[::-1]])  # the distinct rows, lexicographic
    rank = np.empty(len(first), np.int64)
    rank[order] = np.arange(len(first))
    return first[order], rank[gid]


def successors(dep_ptr: np.ndarray, dep_idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reverse a predecessor CSR into a successor CSR.

    Parameters
    ----------
    dep_ptr, dep_idx : int64 arrays
        Item i waits for `dep_idx[dep_ptr[i]:dep_ptr[i+1]]`.

    Returns
    -------
    (int64 array, int64 array)
        (succ_ptr, succ): item j's dependents are `succ[succ_ptr[j]:succ_ptr[j+1]]`, increasing.
    """
    n = len(dep_ptr) - 1
    succ_ptr = np.concatenate([[0], np.cumsum(np.bincount(dep_idx, minlength=n))]).astype(np.int64)
    mod = _compiled(len(dep_idx))
    if mod is None:
        order = np.argsort(dep_idx, kind="stable")
        return succ_ptr, np.repeat(np.arange(n), np.diff(dep_ptr))[order]
    return succ_ptr, mod._fill_successors(np.ascontiguousarray(dep_ptr, dtype=np.int64),
                                          np.ascontiguousarray(dep_idx, dtype=np.int64), succ_ptr)


def route_keys(ptr: np.ndarray, links: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
    """One id per distinct link sequence (and weights) of a route CSR, ids dense from 0.

    Two 64-bit polynomial hashes of each row group the rows (`unique_rows`: ids in the order of
    (hash, hash, hops)); every row is then compared with its group's first row entry by entry, so
    the ids are exact (a hash collision falls back to grouping by tuples, slow and never seen).
    The hashes and the comparison run compiled where `_compiled` allows, else in numpy: the same
    values.

    Parameters
    ----------
    ptr, links : int arrays
        Route CSR: row i is `links[ptr[i]:ptr[i+1]]`.
    weight : float array, optional
        Per entry weight, part of the identity.

    Returns
    -------
    int64 array [rows]
        Equal ids for equal rows.
    """
    n = len(ptr) - 1
    hops = np.diff(ptr)
    if n == 0:
        return np.zeros(0, np.int64)
    mod = _compiled(len(links) + n)
    if mod is not None:
        p64, l64 = np.ascontiguousarray(ptr, dtype=np.int64), np.ascontiguousarray(links, dtype=np.int64)
        w = np.zeros(0) if weight is None else np.ascontiguousarray(weight, dtype=np.float64)
        wbits = np.zeros(0, np.uint64) if weight is None else w.view(np.uint64)
        h = mod._route_hashes(p64, l64, wbits, weight is not None, *_BASES)
        first, key = unique_rows([h[0], h[1], hops.astype(np.uint64)])
        if mod._rows_equal(p64, l64, w, weight is not None, first[key]):
            return key
        return _tuple_keys(ptr, links, weight)
    return _numpy_route_keys(ptr, links, weight, hops)


def _numpy_route_keys(ptr, links, weight, hops) -> np.ndarray:
    """`route_keys` in numpy (the definition of its hashes and order)."""
    n = len(ptr) - 1
    pos = np.arange(len(links)) - np.repeat(ptr[:-1], hops)
    vals = links.astype(np.uint64) + np.uint64(1)
    if weight is not None:
        vals = vals * _MIX + weight.astype(np.float64).view(np.uint64)
    with np.errstate(over="ignore"):
        h = []
        for base in _BASES:
            powers = np.cumprod(np.full(max(int(hops.max(initial=0)), 1), base, dtype=np.uint64))
            mixed = vals * powers[pos]
            s = np.zeros(n, np.uint64)
            nz = hops > 0
            if len(links):
                s[nz] = np.add.reduceat(mixed, ptr[:-1][nz])
            h.append(s)
    first, key = unique_rows([h[0], h[1], hops.astype(np.uint64)])
    rep = first[key]  # each row's group representative
    same = links == links[np.repeat(ptr[rep], hops) + pos]
    if weight is not None:
        same &= weight == weight[np.repeat(ptr[rep], hops) + pos]
    if same.all():
        return key.astype(np.int64)
    return _tuple_keys(ptr, links, weight)


def _tuple_keys(ptr, links, weight) -> np.ndarray:
    """A hash collision: group by the rows themselves (ids by first appearance)."""
    ids: dict = {}
    rows = ((tuple(links[ptr[i]: ptr[i + 1]].tolist()),
             () if weight is None else tuple(weight[ptr[i]: ptr[i + 1]].tolist())) for i in range(len(ptr) - 1))
    return np.fromiter((ids.setdefault(r, len(ids)) for r in rows), dtype=np.int64, count=len(ptr) - 1)


def path_sums(ptr: np.ndarray, links: np.ndarray, link_lat: np.ndarray, link_bw: np.ndarray,
              weight: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Each route's latency (s: its links' latencies summed in order) and slowest rate (bytes/s:
    the least link bandwidth / weight of its entries; inf for an empty route).

    Parameters
    ----------
    ptr, links : int64 arrays
        Route CSR.
    link_lat, link_bw : float arrays [links]
        Latency (s) and bandwidth (bytes/s) of every link.
    weight : float array or None
        Per route entry: link use per byte (None: 1).

    Returns
    -------
    (float array, float array)
        Per row: latency, rate.
    """
    n = len(ptr) - 1
    mod = _compiled(len(links) + n)
    if mod is not None:
        w = np.zeros(0) if weight is None else np.ascontiguousarray(weight, dtype=float)
        return mod._path_sums(np.ascontiguousarray(ptr, dtype=np.int64), np.ascontiguousarray(links, dtype=np.int64),
                              np.ascontiguousarray(link_lat, dtype=float), np.ascontiguousarray(link_bw, dtype=float),
                              w, weight is not None)
    hops = np.diff(ptr)
    lat = np.bincount(np.repeat(np.arange(n), hops), weights=link_lat[links], minlength=n)
    bw = np.full(n, np.inf)
    if len(links):
        on = hops > 0  # reduceat over the rows (minimum.at: the same minima, slower)
        bw[on] = np.minimum.reduceat(link_bw[links] / (1.0 if weight is None else np.maximum(weight, 1e-300)),
                                     ptr[:-1][on])
    return lat, bw


def link_bytes(ptr: np.ndarray, links: np.ndarray, size: np.ndarray, weight: np.ndarray | None,
               n_links: int) -> np.ndarray:
    """Bytes each link carried: every route's size (bytes) over its links, at each entry's weight.

    Parameters
    ----------
    ptr, links : int64 arrays
        Route CSR.
    size : float array [rows]
        Bytes of each row.
    weight : float array or None
        Per entry: link use per byte (None: 1).
    n_links : int
        Links at least (the result's length; more if a link id is larger).

    Returns
    -------
    float array
        Bytes per link.
    """
    n = len(ptr) - 1
    n_out = max(int(n_links), int(links.max()) + 1 if len(links) else 0)
    mod = _compiled(len(links) + n)
    if mod is not None:
        w = np.zeros(0) if weight is None else np.ascontiguousarray(weight, dtype=float)
        return mod._link_bytes(np.ascontiguousarray(ptr, dtype=np.int64), np.ascontiguousarray(links, dtype=np.int64),
                               np.ascontiguousarray(size, dtype=float), w, weight is not None, n_out)
    hops = np.diff(ptr)
    per_unit = np.where(hops > 0, size, 0.0)
    w = 1.0 if weight is None else weight
    return np.bincount(links, weights=np.repeat(per_unit, hops) * w, minlength=n_links)
