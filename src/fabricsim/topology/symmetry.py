"""Automorphisms of a topology: when a permutation of the NPUs extends to one of the whole network.

A permutation `sigma` of a topology's nodes (NPUs, then switches) is an automorphism when it maps
every directed link onto a link with the same bandwidth, latency, class and dimension (as a multiset:
parallel links count), NPUs onto NPUs, and keeps what each node can do (reduce, multicast, I/O).
Then every quantity a network model computes from the links alone is the same for a group and its
image. `extend` finds the switches' images for a permutation of the NPUs by refinement: a switch
goes to the switch whose neighbours are the images of its neighbours, rounds outward from the NPUs
(an NVSwitch from its GPUs, a NIC from its GPU, a leaf from its NICs, a spine from its leaves); where
several switches fit alike (the spines above the same leaves) it keeps a switch in place when it can,
else pairs them in order. `is_automorphism` then checks the whole map, so a wrong guess is refused,
never trusted.

This is the first half of proving that a training job's replicas run alike without pricing every
copy (issue 42): the other half, that the router maps routes onto routes under `sigma`, is the
router's to state.
"""

from __future__ import annotations

import numpy as np

from .graph import Topology


def _neighbours(topo: Topology) -> tuple[np.ndarray, np.ndarray]:
    """CSR of each node's neighbours over links in either direction: (ptr [n + 1], nodes)."""
    n = topo.n_nodes
    a = np.concatenate([topo.link_src, topo.link_dst]).astype(np.int64)
    b = np.concatenate([topo.link_dst, topo.link_src]).astype(np.int64)
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    return np.searchsorted(a, np.arange(n + 1)), b


def extend(topo: Topology, npu_perm) -> np.ndarray | None:
    """A permutation of all nodes that maps NPU i to `npu_perm[i]` and each switch as refinement
    finds it (module doc); None when no switch fits a switch's neighbourhood.

    Parameters
    ----------
    topo : Topology
    npu_perm : int array [n_npus]
        A permutation of 0..n_npus-1.

    Returns
    -------
    int64 array [n_nodes] or None
        Not yet checked: pass it to `is_automorphism`.
    """
    n, npus = topo.n_nodes, topo.n_npus
    perm = np.asarray(npu_perm, dtype=np.int64)
    if perm.shape != (npus,) or not np.array_equal(np.sort(perm), np.arange(npus)):
        return None
    sigma = np.full(n, -1, dtype=np.int64)
    sigma[:npus] = perm
    taken = np.zeros(n, dtype=bool)
    taken[:npus] = True
    ptr, nb = _neighbours(topo)
    while np.any(sigma < 0):
        wanted: dict[tuple, list[int]] = {}  # images of a switch's placed neighbours -> those switches
        for w in np.flatnonzero(sigma < 0).tolist():
            m = sigma[nb[ptr[w]:ptr[w + 1]]]
            m = m[m >= 0]
            if len(m):
                wanted.setdefault(tuple(np.unique(m).tolist()), []).append(w)
        if not wanted:
            return None  # switches that touch no placed node: nothing to go by
        offered: dict[tuple, list[int]] = {}  # a free switch's neighbours among the images
        for x in np.flatnonzero(~taken).tolist():
            m = nb[ptr[x]:ptr[x + 1]]
            m = m[taken[m]]
            if len(m):
                offered.setdefault(tuple(np.unique(m).tolist()), []).append(x)
        for key, ws in wanted.items():
            xs = offered.get(key, [])
            if len(xs) != len(ws):
                return None
            mine = set(ws)
            free = [x for x in xs if x not in mine]
            for w in ws:  # a switch stays where it can (the identity), the rest pair in order
                sigma[w] = w if w in xs else free.pop(0)
            taken[sigma[ws]] = True
    return sigma


def is_automorphism(topo: Topology, sigma) -> bool:
    """Whether `sigma` maps the topology onto itself (module doc).

    Parameters
    ----------
    topo : Topology
    sigma : int array [n_nodes] or None

    Returns
    -------
    bool
        True when `sigma` permutes the nodes, keeps NPUs NPUs, maps the multiset of links with their
        bandwidth, latency, class and dimension onto itself, and keeps each node's reduce,
        multicast and I/O roles.
    """
    n = topo.n_nodes
    if sigma is None:
        return False
    s = np.asarray(sigma, dtype=np.int64)
    if s.shape != (n,) or not np.array_equal(np.sort(s), np.arange(n)):
        return False
    if not np.array_equal(np.sort(s[: topo.n_npus]), np.arange(topo.n_npus)):
        return False
    for flags in (topo.can_reduce, topo.can_multicast):
        if flags is not None and not np.array_equal(np.asarray(flags)[s], np.asarray(flags)):
            return False
    if len(topo.io_nodes):
        io = np.zeros(n, dtype=bool)
        io[topo.io_nodes] = True
        if not np.array_equal(io[s], io):
            return False
    zero = np.zeros(len(topo.link_src), dtype=np.int64)
    cls = zero if topo.link_class is None else np.asarray(topo.link_class, dtype=np.int64)
    dim = zero if topo.link_dim is None else np.asarray(topo.link_dim, dtype=np.int64)

    def table(src, dst):
        cols = (dim, cls, topo.link_lat, topo.link_bw, dst, src)
        order = np.lexsort(cols)
        return [np.asarray(c)[order] for c in cols]

    return all(np.array_equal(a, b) for a, b in zip(table(topo.link_src, topo.link_dst),
                                                    table(s[topo.link_src], s[topo.link_dst])))


__all__ = ["extend", "is_automorphism"]
