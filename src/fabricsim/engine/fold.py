"""Replica folding: simulate once what runs alike, and prove that it does.

In a training job under MP(t)-DP(d)-PP(p) the t tensor-parallel ranks of a stage and its d
data-parallel replicas run the same tasks at the same times when the network prices their
communication alike: a folded workload graph (`build_training(..., fold=True)`) has one NPU per
stage standing for its t x d copies, every collective keeps its real group for pricing and every
transfer is priced as the copies' first (`WorkloadGraph.fold`). The analytical engine then does
the same arithmetic it does on the full graph, t x d times fewer times.

Exact when the whole system is symmetric under the shifts (MP rank a, stage s, replica r) ->
((a + x) mod t, s, (r + y) mod d): the workload is by construction (`parallelism.foldable` says
what breaks it: multicast sends from MP rank 0, I/O controllers, DLRM), the engine's choices depend
only on task order within an NPU, which the emitter keeps alike on every copy, and the network
model's prices are checked here (`check_fold`), for every collective and transfer of the folded
graph on every distinct copy: its phase times, endpoint floor and endpoint demand must be equal.
A copy is the job's communicator for its NPUs, so a shift that maps a group onto its own NPUs (a
data-parallel group under a replica shift) has nothing new to check; an expert-parallel group of ep
consecutive replicas has as copies its images under shifts by multiples of ep only (the emitter
states the period, `meta["replica_period"]`): other shifts give NPUs no group of the job holds. A copy is proved alike
without pricing it where a symmetry says so:

- a collective inside one block of the topology's identical blocks (`topology.blocks`: a dgx node,
  a torus or stack line, a fat-tree leaf), whose schedules stay in that block, is priced alike on
  every block of its class at the same local indices: the router maps routes onto routes there and
  the links are equal. One such copy per collective is still priced, so the builders' placing of a
  schedule by the group's order is checked too;
- a transfer is priced alone from its path's links (`AnalyticalModel.p2p`: latencies in path order
  and the slowest bandwidth; the endpoint is the same on every NPU), so a copy whose path has the
  same links' bandwidths and latencies in order is priced alike; one copy per other path is priced.

What no symmetry covers is priced copy by copy, at most `budget` copies per collective or transfer
(evenly spaced over the copies beyond that; the note says so). Where one differs (a torus whose MP
groups sit on different dimensions, a degraded link, a fat-tree that is oversubscribed for some
replicas), `fabricsim train` simulates every NPU instead; tests cross-check both paths. Nothing is
kept per copy: copies are priced on scratch pricers dropped after them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..topology.blocks import Blocks, block_classes
from ..vocab import COLLECTIVES, TaskKind
from ..workload.graph import WorkloadGraph
from .pricing import CommPricer

PRICE_BUDGET = 4096
"""Copies of one collective or transfer priced at most where no symmetry proves them (module doc)."""


@dataclass(frozen=True)
class FoldCheck:
    """What `check_fold` found and how.

    Parameters
    ----------
    why : str
        The first collective or transfer priced differently on a copy; '' when none is.
    collectives, copies, by_blocks : int
        Distinct (collective, group, size) of the folded graph, their distinct copies on other
        NPUs, and the copies proved by identical blocks.
    transfers, transfer_copies, by_path : int
        Distinct (source, destination, size) transfers, their copies, and the copies proved by
        their paths' links.
    priced : int
        Copies priced (one per collective or path proved, and every copy no symmetry covers).
    unchecked : int
        Copies neither proved nor priced: beyond the budget (0 for an exact answer).
    """

    why: str = ""
    collectives: int = 0
    copies: int = 0
    by_blocks: int = 0
    transfers: int = 0
    transfer_copies: int = 0
    by_path: int = 0
    priced: int = 0
    unchecked: int = 0

    def summary(self) -> str:
        """One line: what was checked and how (for a run's notes)."""
        out = (f"{self.collectives} collectives on {self.copies:,} copies, {self.by_blocks:,} proved by identical "
               f"blocks; {self.transfers} transfers on {self.transfer_copies:,} copies, {self.by_path:,} proved by "
               f"their paths; {self.priced:,} copies priced")
        return out + (f"; {self.unchecked:,} copies beyond the budget not checked" if self.unchecked else "")


class _Copies:
    """The real NPUs of a folded graph by (stage, replica, MP rank), and the images of a set of them
    under the shifts (module doc), computed from coordinates: nothing per shift is kept."""

    def __init__(self, g: WorkloadGraph):
        self.mp, self.dp = g.meta["fold_shape"]
        self.real = np.asarray(g.fold, dtype=np.int64).reshape(-1, self.dp, self.mp)  # [stage, replica, rank]
        pp = self.real.shape[0]
        self.coord = np.empty((self.real.size, 3), dtype=np.int64)
        s, r, a = np.meshgrid(np.arange(pp), np.arange(self.dp), np.arange(self.mp), indexing="ij")
        self.coord[self.real.ravel()] = np.stack([s.ravel(), r.ravel(), a.ravel()], axis=1)

    def _at(self, members: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Images of `members` under shifts (x[k], y[k]): [K, m]."""
        s, r, a = self.coord[members].T
        return self.real[s[None, :], (r[None, :] + y[:, None]) % self.dp, (a[None, :] + x[:, None]) % self.mp]

    def _representatives(self, members: np.ndarray, n: int, axis: int, step: int = 1) -> np.ndarray:
        """One shift per distinct image of the set of `members` under the shifts k x step along one
        axis (MP rank or replica): 0, step, .., (d - 1) step, where d step is the least such shift
        that maps the set onto itself.

        The shifts that keep a set form a subgroup of the cyclic group of n / step shifts, so they are
        the multiples of one divisor d of n / step; the first divisor that keeps the set is d, and
        shifts below it give distinct images. Each test sorts the set once: a 2,048-member group on
        2,048 replicas costs a few divisors, not 2,048 images."""
        zero = np.zeros(1, dtype=np.int64)
        codes = np.sort(self._at(members, zero, zero)[0])
        m = n // step
        for d in (k for k in range(1, m + 1) if m % k == 0):
            k = np.array([d * step], dtype=np.int64)
            img = self._at(members, k, zero) if axis == 0 else self._at(members, zero, k)
            if d == m or np.array_equal(np.sort(img[0]), codes):
                return np.arange(d) * step
        return np.arange(m) * step  # pragma: no cover - d = m always keeps the set

    def group_images(self, group: np.ndarray, replica_period: int = 1) -> np.ndarray:
        """The distinct groups the copies of `group` run on, without `group` itself: [K, m].

        A shift lists a copy's NPUs in a rotated order (a data-parallel group under a replica shift
        starts at another replica), but a copy runs on the job's communicator for those NPUs, which
        the training builder lists in ascending order as it does `group` (`build_training`: every
        group is its members in coordinate order, so ascending). So where `group` is ascending, a copy
        is its NPUs sorted; otherwise each image as the shift lists it. Shifts that map the set onto
        itself along one axis are left out before the product of both axes is formed. A group whose
        copies are its images under replica shifts by multiples of `replica_period` only (an
        expert-parallel group of ep consecutive replicas: `WorkloadGraph.meta["replica_period"]`) is
        shifted by those."""
        xs = self._representatives(group, self.mp, 0)
        ys = self._representatives(group, self.dp, 1, replica_period)
        img = self._at(group, np.repeat(xs, len(ys)), np.tile(ys, len(xs)))
        if np.all(np.diff(group) > 0):
            img = np.sort(img, axis=1)
        img = np.unique(img, axis=0)
        return img[~np.all(img == group[None, :], axis=1)]

    def pair_images(self, src: int, dst: int) -> np.ndarray:
        """The distinct (source, destination) copies of a transfer, without itself: [K, 2]."""
        x, y = np.repeat(np.arange(self.mp), self.dp), np.tile(np.arange(self.dp), self.mp)
        img = np.unique(self._at(np.array([src, dst]), x, y), axis=0)
        return img[~((img[:, 0] == src) & (img[:, 1] == dst))]


def check_fold(g: WorkloadGraph, pricer: CommPricer, chunks: int = 1, in_flight: int = 1,
               budget: int = PRICE_BUDGET) -> FoldCheck:
    """Whether a folded graph gives the full graph's answer on `pricer`, and how that was checked.

    Parameters
    ----------
    g : WorkloadGraph
        A folded graph.
    pricer : CommPricer
        The network model (with the system's endpoint, `CommPricer.for_system`); an analytical one.
    chunks, in_flight : int
        The scheduling's chunks and chunks in flight (waves are priced at those sizes).
    budget : int
        Copies of one collective or transfer priced at most where no symmetry proves them.

    Returns
    -------
    FoldCheck
        `why` is '' when every copy is priced alike (module doc).
    """
    if pricer.model.shares_links:
        raise ValueError("fold check: a network model whose flows share links prices copies together; "
                         "accepted: an analytical model")
    copies = _Copies(g)
    blocks = block_classes(pricer.topo)
    want = pricer.endpoint.interferes
    fracs = sorted({min(in_flight, chunks) / chunks, (chunks % in_flight or in_flight) / chunks})
    stats = dict.fromkeys(("collectives", "copies", "by_blocks", "transfers", "transfer_copies", "by_path",
                           "priced", "unchecked"), 0)
    coll = np.flatnonzero((g.kind == TaskKind.COLLECTIVE) & ~g.moves_nothing())
    keys = sorted({(int(g.coll[t]), int(g.group[t]), float(g.size[t])) for t in coll.tolist()})
    stats["collectives"] = len(keys)
    periods = g.meta.get("replica_period", {})
    for c, grp, size in keys:
        group = g.price_group(grp)
        why = _check_collective(pricer, blocks, COLLECTIVES[c], np.asarray(group, dtype=np.int64), size, fracs, want,
                                copies, budget, stats, periods.get(tuple(group), 1))
        if why:
            return FoldCheck(why, **stats)
    p2p = np.flatnonzero((g.kind == TaskKind.P2P) & ~g.moves_nothing())
    pairs = sorted({(g.real_npu(int(g.npu[t])), g.real_npu(int(g.peer[t])), float(g.size[t])) for t in p2p.tolist()})
    stats["transfers"] = len(pairs)
    by_pair: dict[tuple[int, int], list[float]] = {}
    for src, dst, size in pairs:
        by_pair.setdefault((src, dst), []).append(size)
    for (src, dst), sizes in by_pair.items():
        why = _check_transfer(pricer, src, dst, sizes, want, copies, budget, stats)
        if why:
            return FoldCheck(why, **stats)
    return FoldCheck("", **stats)


def asymmetry(g: WorkloadGraph, pricer: CommPricer, chunks: int = 1, in_flight: int = 1) -> str:
    """Why a folded graph would not give the full graph's answer on `pricer` ('' when it would):
    `check_fold(...).why`.

    Parameters
    ----------
    g : WorkloadGraph
    pricer : CommPricer
    chunks, in_flight : int

    Returns
    -------
    str
    """
    return check_fold(g, pricer, chunks, in_flight).why


def _check_collective(pricer: CommPricer, blocks: Blocks | None, name: str, group: np.ndarray, size: float,
                      fracs: list, want: bool, copies: _Copies, budget: int, stats: dict, period: int = 1) -> str:
    """Check every copy of one collective (module doc); '' or why one differs."""
    own = tuple(group.tolist())
    bases = [_collective_price(pricer, name, own, size * f, want) for f in fracs]
    img = copies.group_images(group, period)
    stats["copies"] += len(img)
    proved = _in_identical_blocks(pricer, blocks, name, group, img)
    stats["by_blocks"] += int(proved.sum())
    # one proved copy priced all the same (the builders' placing is checked), then what no symmetry covers
    todo = [np.flatnonzero(proved)[:1], _spread(np.flatnonzero(~proved), budget, stats)]
    for i in np.concatenate(todo).tolist():
        other = tuple(img[i].tolist())
        scratch = pricer.scratch()  # each copy on a pricer of its own, dropped after it: nothing kept per copy
        stats["priced"] += 1
        for f, base in zip(fracs, bases):
            if not _same(base, _collective_price(scratch, name, other, size * f, want)):
                return f"{name} of {size:.0f} B over NPUs {list(own)} is priced differently on NPUs {list(other)}"
    return ""


def _in_identical_blocks(pricer: CommPricer, blocks: Blocks | None, name: str, group: np.ndarray,
                         img: np.ndarray) -> np.ndarray:
    """Which copies identical blocks prove alike (module doc): the group's schedules stay in its block
    and the copy sits in a block of the same class at the same local indices, in order."""
    none = np.zeros(len(img), dtype=bool)
    if blocks is None or not len(img):
        return none
    klass, local = blocks.placement(group[None, :])
    if klass[0] < 0:
        return none
    home = group[0] // blocks.size
    for cand in pricer.priced(name, tuple(group.tolist())).candidates:
        if np.any(blocks.owner[cand.schedule.topology_nodes()] != home):
            return none  # a schedule reaches beyond the block (a switch above it): no local symmetry
    k, loc = blocks.placement(img)
    return (k == klass[0]) & np.all(loc == local, axis=1)


def _check_transfer(pricer: CommPricer, src: int, dst: int, sizes: list, want: bool, copies: _Copies,
                    budget: int, stats: dict) -> str:
    """Check every copy of the transfers src -> dst at each of `sizes` (module doc); '' or why one differs."""
    topo = pricer.topo
    img = copies.pair_images(src, dst)
    stats["transfer_copies"] += len(img) * len(sizes)
    if not len(img):
        return ""
    _, base = topo.route([src], [dst])
    ptr, links = topo.route(img[:, 0], img[:, 1])
    sig = _path_signatures(topo, ptr, links)
    mine = _path_signatures(topo, np.array([0, len(base)]), base)[0]
    same = np.array([s == mine for s in sig], dtype=bool)
    stats["by_path"] += int(same.sum()) * len(sizes)
    # one copy per distinct path (signature) other than the transfer's own: equal paths price alike
    first: dict[tuple, int] = {}
    for i in np.flatnonzero(~same).tolist():
        first.setdefault(sig[i], i)
    todo = _spread(np.array(sorted(first.values()), dtype=np.int64), budget, stats)
    uncovered = int((~same).sum()) - len(first)
    stats["by_path"] += uncovered * len(sizes)  # copies on a path of a priced representative
    for size in sizes:
        ref = (pricer.p2p(src, dst, size), pricer.p2p_demand(src, dst) if want else None)
        for i in todo.tolist():
            a, b = int(img[i, 0]), int(img[i, 1])
            scratch = pricer.scratch()
            stats["priced"] += 1
            if not _same(ref, (scratch.p2p(a, b, size), scratch.p2p_demand(a, b) if want else None)):
                return f"a transfer of {size:.0f} B from NPU {src} to {dst} is priced differently from NPU {a} to {b}"
    return ""


def _path_signatures(topo, ptr: np.ndarray, links: np.ndarray) -> list[tuple]:
    """Each path's links' (bandwidth, latency) in path order, as a hashable tuple per path."""
    bw, lat = topo.link_bw[links], topo.link_lat[links]
    lens = np.diff(ptr)
    out: list[tuple] = [()] * len(lens)
    for n in np.unique(lens).tolist():  # paths of one length at once
        rows = np.flatnonzero(lens == n)
        at = ptr[rows][:, None] + np.arange(n)[None, :]
        table = np.concatenate([bw[at], lat[at]], axis=1) if n else np.zeros((len(rows), 0))
        uniq, inv = np.unique(table, axis=0, return_inverse=True)
        keys = [tuple(u.tolist()) for u in uniq]
        for r, j in zip(rows.tolist(), inv.reshape(-1).tolist()):
            out[r] = keys[j]
    return out


def _spread(idx: np.ndarray, budget: int, stats: dict) -> np.ndarray:
    """`idx`, or `budget` of them evenly spaced when there are more (the rest counted unchecked)."""
    if len(idx) <= budget:
        return idx
    stats["unchecked"] += len(idx) - budget
    return idx[np.linspace(0, len(idx) - 1, budget).round().astype(np.int64)]


def _collective_price(pricer: CommPricer, name: str, group: tuple, size: float, want: bool) -> tuple:
    return (pricer.phase_times(name, group, size), pricer.endpoint_floor(name, group, size),
            pricer.demand(name, group) if want else None)


def _same(a: tuple, b: tuple) -> bool:
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not np.array_equal(np.asarray(x), np.asarray(y)):
                return False
        elif x != y:
            return False
    return True
