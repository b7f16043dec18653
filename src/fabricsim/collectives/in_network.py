"""In-network collectives on one switch that reduces and multicasts (SHARP / NVLS style).

The schedule has one helper node, schedule node p: the switch every rank hangs off. Data
goes up once and comes down once, so an all-reduce moves exactly `size` bytes out of and
into every rank (half of what the bandwidth-optimal ring needs), in two hops whatever p.
The switch starts holding nothing; reducing into it accumulates the ranks' contributions.

- all-reduce: every rank sends its buffer up (reduce into the switch), the switch sends the
  sum down to every rank (copy, one multicast).
- reduce-scatter (p blocks, rank r owns block r): every rank sends its whole buffer up
  (reduce), the switch sends block r to rank r.
- all-gather (p blocks): rank r sends its block r up (copy), the switch multicasts every
  block to every rank that does not already hold it.
- broadcast: the root sends the buffer up, the switch multicasts it to the other ranks.
- reduce: every rank sends its buffer up (reduce), the switch sends the sum to the root.

Timing: by default the schedule *streams* (`Schedule.streaming`): the switch reduces and
multicasts as data arrives, so every network model prices it as one pipelined stream through the
switch, about size / bandwidth + two link latencies (NVLink SHARP, FRED's switches). With
`lockstep=True` the steps are timed as steps: all the way up, then all the way down (2 x size /
bandwidth), and `chunks` pipelines the two hops: the buffer is cut into `chunks` pieces, and at
step t the ranks send piece t up while the switch sends piece t-1 down (chunks + 1 steps). The middle
steps all have the same shape, so they are one `Step` repeated with block ids moving by one
piece. For reduce-scatter and all-gather each piece holds one block per rank (block
c*p + r is owned by rank r).
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ._common import SPLIT, all_but_own_runs, require_collective, require_group, require_root
from .algorithm import Algorithm, Option, lockstep_option
from ..ir import ordered_pairs
from ..ir import Schedule, Step, make_range_step, make_step, merge_steps

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce")


def _piece(collective: str, p: int, root: int, q: int) -> tuple[tuple, tuple]:
    """(up, down) transfers of piece 0 as (src, dst, blocks, reduce); blocks 0..q-1."""
    sw = p
    r = np.arange(p, dtype=np.int64)
    all_blocks = np.broadcast_to(np.arange(q, dtype=np.int64), (p, q))
    if collective == "all-reduce":
        return (r, np.full(p, sw), all_blocks, True), (np.full(p, sw), r, all_blocks, False)
    if collective == "reduce-scatter":
        return (r, np.full(p, sw), all_blocks, True), (np.full(p, sw), r, r, False)
    if collective == "all-gather":
        return (r, np.full(p, sw), r, False), (np.full(p, sw), r, _others(p), False)
    others = np.delete(r, root)
    if collective == "broadcast":
        return (np.array([root]), np.array([sw]), np.zeros((1, 1), np.int64), False), (
            np.full(p - 1, sw), others, np.zeros((p - 1, 1), np.int64), False)
    # reduce
    return (r, np.full(p, sw), np.zeros((p, 1), np.int64), True), (
        np.array([sw]), np.array([root]), np.zeros((1, 1), np.int64), False)


def _others(p: int) -> np.ndarray:
    """Row i: 0..p-1 without i (vectorized)."""
    return ordered_pairs(p)[1].reshape(p, p - 1)


def in_network(collective: str, p: int, *, lockstep: bool = False, chunks: int = 1, root: int = 0) -> Schedule:
    """In-network collective through one reducing, multicasting switch (schedule node p; module doc).

    Parameters
    ----------
    collective : str
        all-reduce, reduce-scatter, all-gather, broadcast or reduce (canonical name).
    p : int
        Ranks in the group, >= 2.
    lockstep : bool
        Time the steps as lock-step steps (up, then down) instead of one stream.
    chunks : int
        With `lockstep`: pipeline pieces, >= 1 (a stream takes 1).
    root : int
        Root rank of a broadcast or reduce (ignored otherwise).

    Returns
    -------
    Schedule
        Unplaced, one helper node (`n_extra` = 1), `streaming` unless `lockstep`.
    """
    require_collective("in_network", collective, COLLECTIVES)
    require_group("in_network", collective, p)
    p = int(p)
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
        raise ConfigError("chunks", chunks, "accepted: an integer >= 1")
    chunks = int(chunks)
    if chunks > 1 and not lockstep:
        raise ConfigError("chunks", chunks, "pieces apply to lock-step timing; accepted: chunks=1, or lockstep=true "
                                            "with chunks >= 1 (a stream is already pipelined)")
    rooted = collective in ("broadcast", "reduce")
    root = require_root(root, p) if rooted else 0
    q = p if collective in ("reduce-scatter", "all-gather") else 1  # blocks per piece
    nblocks = q * chunks
    meta = {"switch_node": p, "chunks": chunks, "lockstep": bool(lockstep)}
    if q == p and chunks == 1:  # runs of blocks (range form): O(p) entries, not p x p
        r, sw = np.arange(p, dtype=np.int64), np.full(p, p, dtype=np.int64)
        if collective == "reduce-scatter":  # the whole buffer up, block r down
            steps = (make_range_step(r, sw, 0, p, True), make_range_step(sw, r, r, 1, False))
        else:  # block r up, every block but r down: two runs
            who, start, count = all_but_own_runs(p)
            steps = (make_range_step(r, sw, r, 1, False), make_range_step(sw[who], who, start, count, False))
        return Schedule(collective, "in_network", p, nblocks, steps, owner=np.arange(p), n_extra=1, meta=meta,
                        streaming=not lockstep)
    (us, ud, ub, ur), (ds, dd, db, dr) = _piece(collective, p, root, q)
    up = make_step(us, ud, ub, ur)
    down = make_step(ds, dd, db, dr)
    steps: list[Step] = [up]
    if chunks > 1:
        # piece t up and piece t-1 down, t = 1..chunks-1: one repeated step
        both = merge_steps(
            make_step(us, ud, np.asarray(ub) + q, ur),
            make_step(ds, dd, db, dr),
        )
        if chunks > 2:
            both = Step(both.src, both.dst, both.reduce, both.ptr, both.blocks,
                        repeat=chunks - 1, shift=np.full(len(both.blocks), q), mod=np.full(len(both.blocks), nblocks))
        steps.append(both)
    last = down.blocks + (chunks - 1) * q
    steps.append(Step(down.src, down.dst, down.reduce, down.ptr, last))
    owner = np.tile(np.arange(p), chunks) if q == p else None
    return Schedule(collective, "in_network", p, nblocks, tuple(steps), owner=owner,
                    root=root if rooted else None, n_extra=1, meta=meta, streaming=not lockstep)


def _estimate(c: str, p: int, o: dict) -> float:
    # pieces repeat one step: no factor `chunks`; one piece's blocks are runs (range form), several
    # pieces' all-gather lists every block but the rank's own
    listed = c in SPLIT and int(o.get("chunks") or 1) > 1
    return 2.0 * (p * p if listed else p) + 4.0 * p


ALGORITHM = Algorithm(
    "in_network", in_network, COLLECTIVES, "any p >= 2 (one switch that reduces and multicasts, linked to every rank)",
    "in-network (SHARP/NVLS-like): one stream up to a reducing switch and multicast down, size bytes each way per rank",
    options=(lockstep_option("the collective"),
             Option("chunks", "int", 1, "with lockstep: pipeline pieces (ranks send piece t up while the switch "
                                        "sends piece t-1 down)")),
    helper="reducing-switch", streams=True,
    aliases={"innetwork": {}, "in_network_reduction": {}},
    estimate=_estimate,
)
