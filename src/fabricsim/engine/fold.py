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
model's prices are checked here, for every collective and transfer of the folded graph on every
distinct copy: its phase times, endpoint floor and endpoint demand must be equal (`asymmetry`). A
copy is the job's communicator for its NPUs, so a shift that maps a group onto its own NPUs (a
data-parallel group under a replica shift) prices nothing new. Where one
differs (a torus whose MP groups sit on different dimensions, a fat-tree that is oversubscribed
for some replicas), `fabricsim train` simulates every NPU instead; tests cross-check both paths.
"""

from __future__ import annotations

import numpy as np

from ..vocab import COLLECTIVES, TaskKind
from ..workload.graph import WorkloadGraph
from .pricing import CommPricer


def shifts(g: WorkloadGraph) -> list[np.ndarray]:
    """The permutations of real NPU ids a folded graph is symmetric under (module doc).

    Parameters
    ----------
    g : WorkloadGraph
        A folded graph (`g.fold`; `g.meta["fold_shape"]` = (mp, dp)).

    Returns
    -------
    list of int64 array
        perm[r] = image of real NPU r, one per shift other than the identity.
    """
    mp, dp = g.meta["fold_shape"]
    pp = g.fold.shape[0]
    real = g.fold.reshape(pp, dp, mp)  # [stage, replica, MP rank] -> real NPU
    out = []
    for x in range(mp):
        for y in range(dp):
            if x == 0 and y == 0:
                continue
            perm = np.empty(real.size, dtype=np.int64)
            perm[real.ravel()] = np.roll(np.roll(real, -y, axis=1), -x, axis=2).ravel()
            out.append(perm)
    return out


def asymmetry(g: WorkloadGraph, pricer: CommPricer, chunks: int = 1, in_flight: int = 1) -> str:
    """Why a folded graph would not give the full graph's answer on `pricer` ('' when it would).

    Parameters
    ----------
    g : WorkloadGraph
        A folded graph.
    pricer : CommPricer
        The network model (with the system's endpoint, `CommPricer.for_system`).
    chunks, in_flight : int
        The scheduling's chunks and chunks in flight (waves are priced at those sizes).

    Returns
    -------
    str
        The first transfer or collective priced differently on a copy, or ''.
    """
    perms = shifts(g)
    want = pricer.endpoint.interferes
    coll = np.flatnonzero((g.kind == TaskKind.COLLECTIVE) & ~g.moves_nothing())
    keys = {(int(g.coll[t]), int(g.group[t]), float(g.size[t])) for t in coll.tolist()}
    fracs = sorted({min(in_flight, chunks) / chunks, (chunks % in_flight or in_flight) / chunks})
    for c, grp, size in sorted(keys):
        name, group = COLLECTIVES[c], np.asarray(g.price_group(grp), dtype=np.int64)
        bases = [_collective_price(pricer, name, tuple(group.tolist()), size * f, want) for f in fracs]
        for img in _images(group, perms):
            copy = pricer.scratch()  # each copy on a pricer of its own, dropped after it: nothing kept per replica
            for f, base in zip(fracs, bases):
                if not _same(base, _collective_price(copy, name, img, size * f, want)):
                    return f"{name} of {size:.0f} B over NPUs {group.tolist()} is priced differently on NPUs {list(img)}"
    p2p = np.flatnonzero((g.kind == TaskKind.P2P) & ~g.moves_nothing())
    pairs = {(g.real_npu(int(g.npu[t])), g.real_npu(int(g.peer[t])), float(g.size[t])) for t in p2p.tolist()}
    for src, dst, size in sorted(pairs):
        base = (pricer.p2p(src, dst, size), pricer.p2p_demand(src, dst) if want else None)
        copy = pricer.scratch()  # one per transfer: its copies' few entries go with it
        for a, b in sorted({(int(perm[src]), int(perm[dst])) for perm in perms} - {(src, dst)}):
            if not _same(base, (copy.p2p(a, b, size), copy.p2p_demand(a, b) if want else None)):
                return f"a transfer of {size:.0f} B from NPU {src} to {dst} is priced differently from NPU {a} to {b}"
    return ""


def _images(group: np.ndarray, perms: list[np.ndarray]) -> list[tuple]:
    """The distinct groups the copies of `group` run on, in first-seen order, without `group` itself.

    A shift lists a copy's NPUs in a rotated order (a data-parallel group under a replica shift
    starts at another replica), but a copy runs on the job's communicator for those NPUs, which the
    training builder lists in ascending order as it does `group` (`build_training`: every group is
    its members in coordinate order, so ascending). So where `group` is ascending, a copy is its
    NPUs sorted, and a copy on `group`'s own NPUs is `group`; otherwise each image as the shift lists it.
    """
    ascending = bool(np.all(np.diff(group) > 0))
    own = tuple(group.tolist())
    seen: dict[tuple, None] = {}
    for perm in perms:
        img = perm[group]
        key = tuple(np.sort(img).tolist()) if ascending else tuple(img.tolist())
        if key != own:
            seen.setdefault(key)
    return list(seen)


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
