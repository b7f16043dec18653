"""Translations that map a placed schedule onto itself on a torus or ring (`lowering.quotient`'s group).

On a torus or ring (a topology whose `structure.translations` holds: dimension-order routing over
ring, uniring and fully connected dimensions; the route from u to v depends only on v - u, a half-
way tie always going +), translating every node by g maps links onto links of the same bandwidth and
latency, and routes onto routes. A translation is a symmetry of a schedule when it maps every step's
transfers onto that step's transfers, with one permutation pi_g of the block ids for the whole
schedule; the symmetries form a group, and per dimension d the translations along d in it are the
multiples of the smallest a_d dividing the size that is one (`symmetry_period`).

Invariance is checked per step shape (a repeated `Step` with its shift/mod), never on expanded
transfers: the translated channels must be channels of the step (each channel at most once per
step), with the same reduce flag and block count, and pi_g must map each transfer's blocks onto its
image's -- as a set (range form: by range minimum and maximum of pi_g) with the same rotation --
and commute with every rotation on the aligned id range it moves in, so that every repetition
holds (pi(R^k b) = R^k pi(b) by induction). A stated step is invariant by its rule, and the rule's
symmetry is knowledge the form states, in its own module (`StepForm.maps_channels`, `maps_blocks`):
a full mesh under every node permutation, a line mesh under translations of its grid, both with
the all-to-all's pi where they carry its blocks; such a step is never listed here. A listed step
is matched transfer by transfer, its runs (`StepForm.run_starts`: range form) whole. pi_g is derived from what the blocks mean and then
verified: the owner of each block (`Schedule.owner`: the k-th block of rank r goes to the k-th
block of rank r + g), the all-to-all's i*p + j, rank-indexed layouts q*p + r and r*m + q, or the
identity (whole-vector blocks).
"""

from __future__ import annotations

import numpy as np

from ...ir import Schedule, StepForm, rotate
from ...topology.graph import Topology
from .dataflow_deps import sorted_unique



class TranslationGrid:
    """Translations of a torus-like network: node and link maps by a coordinate offset.

    Parameters
    ----------
    topo : Topology
        Routed by a `DimensionOrderRouter` over ring, uniring and fc dimensions; every link is a
        step of a ring dimension (slot 0: +, 1: -) or an fc link (slot: the coordinate offset to
        its target), so translating its source gives the translated link. `link_dim` is -1 for a
        link outside those tables (then the network is not translation-invariant here).
    """

    def __init__(self, topo: Topology):
        r = topo.router
        self.topo, self.dims = topo, np.asarray(topo.dims, dtype=np.int64)
        self.coords = topo.coords(np.arange(topo.n_npus))
        L = topo.n_links
        self.link_dim, self.slot = np.full(L, -1, np.int64), np.full(L, -1, np.int64)
        for d, kind in enumerate(r.kinds):
            if kind == "fc":  # slot: the coordinate offset to the target, unchanged by translation
                tab = r.fc_link[d]
                off = (np.arange(tab.shape[1])[None, :] - self.coords[:, d:d + 1]) % self.dims[d]
                ok = tab >= 0
                self.link_dim[tab[ok]], self.slot[tab[ok]] = d, off[ok]
            else:
                for j in (1, 0):  # a size-2 ring names one link both ways: it is the + link
                    ids = r.step_link[:, d, j]
                    self.link_dim[ids[ids >= 0]], self.slot[ids[ids >= 0]] = d, j

    def shift(self, nodes: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Nodes translated by g (one offset, or one per node), coordinates mod the sizes."""
        return self.topo.rank_of((self.coords[nodes] + g) % self.dims)

    def shift_links(self, links: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Links translated by g (one offset per link)."""
        r, out = self.topo.router, np.empty(len(links), np.int64)
        u = self.shift(self.topo.link_src[links], g)
        d, s = self.link_dim[links], self.slot[links]
        for dd, kind in enumerate(r.kinds):
            m = d == dd
            if kind == "fc":
                out[m] = r.fc_link[dd][u[m], (self.coords[u[m], dd] + s[m]) % self.dims[dd]]
            else:
                out[m] = r.step_link[u[m], dd, s[m]]
        return out


def _eligible(topo: Topology, schedule: Schedule) -> bool:
    """A network where translations are automorphisms, and a schedule over all its NPUs."""
    if not topo.structure.translations:  # dimension order over ring, uniring and fc dimensions
        return False
    if topo.n_switches or len(topo.io_nodes) or topo.has_reduction_units:
        return False
    return not schedule.streaming and schedule.n_extra == 0 and schedule.p == topo.n_npus and len(schedule.steps) > 0


# ---- block permutations -------------------------------------------------------------------------


class _Perm:
    """A candidate pi_g: block ids to block ids, with range minimum and maximum for range-form steps."""

    def __init__(self, fn, nblocks: int, kind: str = ""):
        self.fn, self.nb, self._tab, self.kind = fn, nblocks, None, kind

    def __call__(self, b: np.ndarray) -> np.ndarray:
        return self.fn(b)

    def range_min_max(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """min and max of pi over lo .. hi - 1 for each run (sparse tables, built once)."""
        if self._tab is None:
            mn = [self.fn(np.arange(self.nb, dtype=np.int64))]
            mx = [mn[0]]
            w = 1
            while 2 * w <= self.nb:
                mn.append(np.minimum(mn[-1][:-w], mn[-1][w:]))
                mx.append(np.maximum(mx[-1][:-w], mx[-1][w:]))
                w *= 2
            self._tab = (mn, mx)
        mn, mx = self._tab
        j = np.floor(np.log2(np.maximum(hi - lo, 1))).astype(np.int64)
        out_min, out_max = np.empty(len(lo), np.int64), np.empty(len(lo), np.int64)
        for lev in np.unique(j):
            m = j == lev
            a, b = lo[m], hi[m] - (1 << int(lev))
            out_min[m] = np.minimum(mn[lev][a], mn[lev][b])
            out_max[m] = np.maximum(mx[lev][a], mx[lev][b])
        return out_min, out_max


def _candidates(schedule: Schedule, sig: np.ndarray) -> list[_Perm]:
    """Block permutations a rank permutation `sig` may induce, from what the blocks mean."""
    p, nb = schedule.p, schedule.nblocks
    out = []
    own = schedule.owner
    if own is not None and len(own) == nb and own.min() >= 0 and own.max() < p:
        per = np.bincount(own, minlength=p)
        if np.all(per == per[0]) and per[0] > 0:  # the k-th block of rank r -> the k-th of sig(r)
            table = np.lexsort((np.arange(nb), own)).reshape(p, per[0])
            pi = np.empty(nb, np.int64)
            pi[table.ravel()] = table[sig].ravel()
            out.append(_Perm(lambda b, pi=pi: pi[b], nb))
    if nb == p * p:  # all-to-all: block i*p + j goes from rank i to rank j
        out.append(_Perm(lambda b: sig[b // p] * p + sig[b % p], nb, "all-to-all"))
    elif nb % p == 0:  # rank-indexed layouts without an owner table
        m = nb // p
        out.append(_Perm(lambda b: b - b % p + sig[b % p], nb))
        if m > 1:
            out.append(_Perm(lambda b: sig[b // m] * m + b % m, nb))
    out.append(_Perm(lambda b: b, nb))
    return out


# ---- invariance of one step shape ---------------------------------------------------------------


class StepShape:
    """One step's channels, looked up by (source, destination), and its entries keyed by
    (transfer, block), computed once (on first use) for every translation tried.

    Parameters
    ----------
    st : StepForm
        A step of the schedule (any form; repeated steps are checked once with their rotation; a
        form whose rule states its symmetry is never listed here: `StepForm.maps_channels`).
    n_nodes : int
        Schedule nodes (channel keys are src * n_nodes + dst).
    nblocks : int
        The schedule's block count (entry keys are transfer * nblocks + block).
    """

    def __init__(self, st: StepForm, n_nodes: int, nblocks: int):
        if st.listed and st.repeat > 1:  # a repeated run (range form) is checked id by id: its ids listed
            st = st.explicit()
        self.st, self.n, self.nb = st, n_nodes, nblocks
        self._keys = self._entries = None

    def _keyed(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """(the transfers in channel-key order, their sorted keys, whether every channel is used once)."""
        if self._keys is None:
            key = self.st.src * self.n + self.st.dst
            order = np.argsort(key, kind="stable")
            key = key[order]
            self._keys = (order, key, bool(np.all(key[1:] != key[:-1])))
        return self._keys

    @property
    def unique(self) -> bool:
        """Whether the step uses each channel at most once."""
        return self._keyed()[2]

    def entries(self):
        """(transfer of each entry, shift and mod (0 where it does not rotate), the entries' order by
        (transfer, block), their sorted keys, and per (mod, shift) of the rotating entries every id
        of the aligned ranges they move in)."""
        if self._entries is None:
            st = self.st
            t = np.repeat(np.arange(st.n_transfers), st.blocks_per_transfer)
            rot = st.shift is not None and st.repeat > 1
            sh = st.shift % st.mod if rot else np.zeros(len(t), np.int64)
            md = np.where(sh != 0, st.mod, 0) if rot else sh
            key = t * self.nb + st.blocks
            order = np.argsort(key, kind="stable")
            # every id of each aligned range a rotating entry moves in, per (mod, shift)
            rot = sh != 0
            m_rot, s_rot = md[rot], sh[rot]
            base = (st.blocks - st.blocks % np.maximum(md, 1))[rot]
            ranges, w = [], self.nb + 1
            if rot.any() and m_rot.max() > self.nb:  # rotating in a range wider than the ids: refused
                ranges.append((0, 0, None))
            elif rot.any():
                for ms in sorted_unique(m_rot * w + s_rot):  # shift % mod < mod <= nb: one key per pair
                    m, s = divmod(int(ms), w)
                    sel = (m_rot == m) & (s_rot == s)
                    ranges.append((m, s, (sorted_unique(base[sel])[:, None] + np.arange(m)[None, :]).ravel()))
            self._entries = (t, sh, md, order, key[order], ranges)
        return self._entries

    def find(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray | None:
        """The transfer on each channel (src, dst); None when one is missing."""
        order, keys, _ = self._keyed()
        key = src * self.n + dst
        i = np.minimum(np.searchsorted(keys, key), max(len(keys) - 1, 0))
        if not len(keys) or np.any(keys[i] != key):
            return None if len(key) else np.zeros(0, np.int64)
        return order[i]


def _channels_match(sh: StepShape, sig: np.ndarray) -> np.ndarray | None:
    """The image of every transfer under the node map `sig`, if it is a transfer of the same kind;
    for a form whose rule states it (`StepForm.maps_channels`), `sig` itself (its transfers map by it)."""
    st = sh.st
    stated = st.maps_channels(sig)
    if stated is not None:
        return sig if stated else None
    match = sh.find(sig[st.src], sig[st.dst]) if sh.unique else None
    if match is None:
        return None
    cnt = st.blocks_per_transfer
    if not (np.array_equal(st.reduce[match], st.reduce) and np.array_equal(cnt[match], cnt)):
        return None
    return match


def _blocks_match(shape: StepShape, match: np.ndarray, pi: _Perm) -> bool:
    """Whether pi maps every transfer's blocks onto its image's, at every repetition (`match`: the
    node map itself for a form whose rule states it, `_channels_match`)."""
    st = shape.st
    stated = st.maps_blocks(match, pi, shape.nb)
    if stated is not None:
        return stated
    starts = st.run_starts()
    if starts is not None:  # runs (range form, not repeated: `StepShape`): pi maps each onto its image's
        cnt = st.blocks_per_transfer
        nz = np.flatnonzero(cnt > 0)
        lo, hi = starts[nz], starts[nz] + cnt[nz]
        mn, mx = pi.range_min_max(lo, hi)
        to = starts[match[nz]]
        return bool(np.all(mn >= to) & np.all(mx < to + cnt[nz]))  # same count: a bijection onto it
    t, sh, md, order, key, ranges = shape.entries()
    img = match[t] * shape.nb + pi(st.blocks)  # each entry's image, keyed as (transfer, block)
    mine = np.argsort(img, kind="stable")
    if not np.array_equal(img[mine], key):
        return False
    if not np.any(sh):
        return True
    if np.any(key[1:] == key[:-1]):  # a block twice in a transfer: pair the entries by (block, shift, mod)
        a = np.stack([img, sh, md])
        b = np.stack([t * shape.nb + st.blocks, sh, md])
        if not np.array_equal(a[:, np.lexsort(a[::-1])], b[:, np.lexsort(b[::-1])]):
            return False
    elif not (np.array_equal(sh[mine], sh[order]) and np.array_equal(md[mine], md[order])):
        return False
    # pi must commute with each rotation on the aligned id range it moves in: then pi(R^k b) = R^k pi(b)
    # for every repetition k, by induction
    for m, s, x in ranges:
        if x is None:  # rotating in a range wider than the ids
            return False
        y = pi(x)
        if not np.array_equal(pi(rotate(x, s, m, 1)), rotate(y, s, m, 1)):
            return False
    return True


def _is_symmetry(schedule: Schedule, shapes: list[StepShape], sig: np.ndarray) -> bool:
    """Whether the rank permutation `sig`, with some candidate pi, maps every step onto itself."""
    matches = []
    for sh in shapes:  # the channels first: most translations fail there, whatever pi
        m = _channels_match(sh, sig)
        if m is None:
            return False
        matches.append(m)
    return any(all(_blocks_match(sh, m, pi) for sh, m in zip(shapes, matches))
               for pi in _candidates(schedule, sig))


def symmetry_period(topo: Topology, schedule: Schedule) -> tuple[int, ...] | None:
    """Per dimension, the smallest translation that maps the placed schedule onto itself.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`.

    Returns
    -------
    tuple of int or None
        a_d per dimension (a_d = the size: no translation along d); None when the network or the
        schedule is not eligible (module doc) or only the identity is left.
    """
    if not _eligible(topo, schedule):
        return None
    grid, nodes, p = TranslationGrid(topo), schedule.topology_nodes(), schedule.p
    if np.any(grid.link_dim < 0):
        return None
    pos = np.empty(topo.n_npus, np.int64)
    pos[nodes] = np.arange(p)
    shapes = sorted((StepShape(st, schedule.n_nodes, schedule.nblocks) for st in schedule.steps), key=lambda s: s.st.n_transfers)
    period = []
    for d, size in enumerate(topo.dims):
        a = int(size)
        for div in (k for k in range(1, int(size)) if size % k == 0):
            g = np.zeros(len(topo.dims), np.int64)
            g[d] = div
            if _is_symmetry(schedule, shapes, pos[grid.shift(nodes, g)]):
                a = div
                break
        period.append(a)
    if int(np.prod(period)) == p:
        return None
    # links must keep their bandwidth and latency under the translations found
    off = grid.coords[topo.link_src] // period * period
    rep = grid.shift_links(np.arange(topo.n_links), -off)
    if not (np.array_equal(topo.link_bw[rep], topo.link_bw) and np.array_equal(topo.link_lat[rep], topo.link_lat)):
        return None
    return tuple(period)
