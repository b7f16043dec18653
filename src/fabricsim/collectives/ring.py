"""Ring algorithms.

All-reduce = reduce-scatter + all-gather, p-1 steps each, one block of size/p per step to the
next rank. `bidirectional=True` runs two half-size rings in opposite directions at once
(blocks 0..p-1 clockwise, p..2p-1 counter-clockwise). Broadcast and reduce are pipelined
chains around the ring in `chunks` pieces (default p), composed of runs of hops where listing
every (hop, piece) would be large (`chain.py`).

Every step of a ring phase has the same shape (rank r -> r+1), so each phase is one `Step`
repeated p-1 times with its block ids rotating: O(p) memory for any p.
"""

from __future__ import annotations

import numpy as np

from ._common import ROOTED, require_collective, require_group, require_root
from .algorithm import Algorithm, Option, proto_option
from .chain import chain_entries, chain_steps
from ..ir import Facts
from ..ir import Schedule, Step, make_step, parallel

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce")


def ring_phase(p: int, phase: str, direction: int = 1, block_base: int = 0) -> Step:
    """One ring reduce-scatter or all-gather on ranks 0..p-1, as one step repeated p-1 times.

    Parameters
    ----------
    p : int
        Ranks.
    phase : {"rs", "ag"}
        Reduce-scatter (rank r ends owning block block_base + r) or all-gather (rank r starts
        owning it).
    direction : int
        +1: rank r sends to r+1; -1: to r-1.
    block_base : int
        First block id; the phase uses blocks block_base..block_base+p-1.

    Returns
    -------
    Step
    """
    r = np.arange(p)
    dst = (r + direction) % p
    if phase == "rs":
        first = (r - direction) % p  # at step k rank r passes on block r - dir(k+1)
    else:
        first = r  # the block it owns
    return make_step(
        r, dst, block_base + first, phase == "rs", repeat=p - 1, shift=-direction, mod=p
    )


def ring(collective: str, p: int, *, root: int = 0, bidirectional: bool = False, chunks: int | None = None) -> Schedule:
    """Ring all-reduce / reduce-scatter / all-gather, or a pipelined chain for broadcast / reduce.

    Parameters
    ----------
    collective : str
        all-reduce, reduce-scatter, all-gather, broadcast or reduce (canonical name).
    p : int
        Ranks in the group, >= 2.
    root : int
        Root rank of a broadcast or reduce (ignored otherwise).
    bidirectional : bool
        Two half-size rings in opposite directions (all-reduce, reduce-scatter, all-gather).
    chunks : int, optional
        Pipeline pieces of a broadcast or reduce, >= 1 (default p).

    Returns
    -------
    Schedule
        Unplaced; p blocks (2p bidirectional, `chunks` for broadcast and reduce). A broadcast or
        reduce states its chain in `facts.chain`: the ranks from the root around the ring
        (root, root+1, ... mod p) for a broadcast, from the root's successor around to the root
        (root last) for a reduce.
    """
    require_collective("ring", collective, COLLECTIVES)
    require_group("ring", collective, p)
    meta = {"bidirectional": bidirectional}
    if collective in ("broadcast", "reduce"):
        root = require_root(root, p)
        chunks = p if chunks is None else int(chunks)
        if chunks < 1:
            from ..errors import ConfigError

            raise ConfigError("chunks", chunks, "accepted: an integer >= 1")
        if collective == "broadcast":
            order = (root + np.arange(p)) % p
            steps = chain_steps(order, chunks, reduce=False)
        else:
            order = (root + 1 + np.arange(p)) % p  # root last
            steps = chain_steps(order, chunks, reduce=True)
        # the chain, stated for readers that use it (`network.lowering.chain`)
        return Schedule(collective, "ring", p, chunks, tuple(steps), root=root, meta={"chunks": chunks},
                        facts=Facts(chain=tuple(order.tolist())))

    phases = {"all-reduce": ("rs", "ag"), "reduce-scatter": ("rs",), "all-gather": ("ag",)}[collective]
    if not bidirectional:
        steps = tuple(ring_phase(p, ph) for ph in phases)
        return Schedule(collective, "ring", p, p, steps, owner=np.arange(p), meta=meta)
    cw = [ring_phase(p, ph, +1, 0) for ph in phases]
    ccw = [ring_phase(p, ph, -1, p) for ph in phases]
    return Schedule(
        collective, "ring", p, 2 * p, parallel(cw, ccw), owner=np.tile(np.arange(p), 2), meta=meta
    )


def _estimate(c: str, p: int, o: dict) -> float:
    if c in ROOTED:  # a chain of `chunks` pieces over p - 1 hops: listed, or composed of runs of hops
        return float(chain_entries(p - 1, int(o.get("chunks") or p))) + p
    return 4.0 * p  # one compressed step per phase and direction


ALGORITHM = Algorithm(
    "ring", ring, COLLECTIVES, "any p >= 2", "ring: p-1 steps of size/p per phase; bidirectional = two half rings",
    options=(Option("bidirectional", "bool", False, "two half-size rings in opposite directions",
                    collectives=("all-reduce", "reduce-scatter", "all-gather")),
             Option("chunks", "int", None, "pipeline pieces of broadcast/reduce (default p)",
                    collectives=("broadcast", "reduce")),
             proto_option("none")),
    ring_order=True, nccl="ring",
    aliases={"bidirectional_ring": {"bidirectional": True}, "ring_bidirectional": {"bidirectional": True}},
    estimate=_estimate,
)
