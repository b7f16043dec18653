"""What a collective must leave where: the expected end state of a schedule run on data.

Shared by the exact check (`verify`) and the sampled one (`verify_sampled`), which execute a
schedule differently and compare the result with the same definition (the table in `verify`'s
module doc).
"""

from __future__ import annotations

import numpy as np

from ..errors import ScheduleError
from ..ir import Schedule


class OneRow:
    """Values where only one rank per block contributes (all-gather, all-to-all, broadcast):
    `v[rank, col]` for that rank, drawn once per block instead of once per (rank, block)."""

    def __init__(self, vals: np.ndarray):
        self.vals = vals

    def __getitem__(self, idx):
        rows, cols = idx if isinstance(idx, tuple) else (idx, slice(None))
        return self.vals[cols]


def expected_values(s: Schedule, blocks: np.ndarray, rng_vals) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where the checked blocks must end and with what value, as the collective defines it.

    Parameters
    ----------
    s : Schedule
        The schedule checked (its collective, ranks, owners and root).
    blocks : int array
        The checked block ids, in column order.
    rng_vals : int array [p, blocks] or OneRow
        Each rank's own value of each checked block (`OneRow` where one rank per block contributes).

    Returns
    -------
    (int array, int array, int array)
        (holder node, column, expected value) triples: every node that must hold a block at the
        end, the block's column, and its exact value (a sum over ranks, or the contributor's value).
    """
    p, nb = s.p, len(blocks)
    cols = np.arange(nb)
    c = s.collective
    total = rng_vals.sum(axis=0) if c in ("all-reduce", "reduce-scatter", "reduce") else None
    if c == "all-reduce":
        return np.repeat(np.arange(p), nb), np.tile(cols, p), np.tile(total, p)
    if c == "reduce-scatter":
        return s.owner[blocks], cols, total
    if c == "reduce":
        return np.full(nb, s.root), cols, total
    if c == "all-gather":
        own = s.owner[blocks]
        v = rng_vals[own, cols]
        return np.repeat(np.arange(p), nb), np.tile(cols, p), np.tile(v, p)
    if c == "broadcast":
        return np.repeat(np.arange(p), nb), np.tile(cols, p), np.tile(rng_vals[s.root], p)
    if c == "all-to-all":
        origin, target = blocks // p, blocks % p
        return target, cols, rng_vals[origin, cols]
    raise ScheduleError(f"unknown collective {c}")
