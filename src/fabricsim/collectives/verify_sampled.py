"""Verification of chosen blocks as one linear system: exact, without a loop over steps.

`verify(..., sample=n)` checks n blocks. Running them step after step, as a full `verify` does,
costs a numpy pass over every stored entry at every lock-step step: a ring on 65,536 ranks has
131,070 steps of 65,536 entries, 8.6e9 entry visits whatever the sample. Here the moves of the chosen
blocks (*events*: step, transfer, block) are listed for all steps at once, and the data flow they
form is solved at once; `verify.sample_plan` picks this executor when its cost model expects it to
be the cheaper one (many repeated steps), step by step otherwise (a few wide steps, e.g. Swing's):

- each (step, destination cell) written is a *version* of that cell (cell = node x chosen block);
- a transfer at step t reads its source cell's latest version written before t, or its value at
  the start (what the collective gives the node), and sending a cell one does not hold is an error;
- a copy's version is what it read; a reduce's version is the cell's previous version (an empty
  helper cell counts 0) plus everything reduced into it at that step.

Versions depend only on versions of earlier steps, so their values solve one unit lower-triangular
sparse system (SuperLU's triangular solve in scipy), in float64: random values below 2^20 keep every
sum exact (< 2^53) up to 2^33 contributions, so a contribution counted twice or missed is caught as
in `verify`. The checks and their words are those of `verify._run_batch`; the one reported is the
earliest (step, then kind, then entry), as the step-by-step run would meet it.

Each step's form finds the moves of the chosen blocks and its structural errors
(`StepForm.sampled_events`): the listed form without expanding its repetitions (`ir.step_events`),
a full or line mesh by its rule, a composed step by its parts. Work: O(stored schedule + events +
rotating repetitions x chosen blocks) in numpy.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve_triangular

from ..errors import ScheduleError
from ..ir import Schedule
from .verify_expect import OneRow, expected_values

_VALUE_BOUND = 1 << 20  # random values below this: float64 sums stay exact (module doc)


def _collect(s: Schedule, sample: np.ndarray):
    """Events of all steps in run order, and the first structural error (step, message) if any: each
    step's, as its form finds them (`StepForm.sampled_events`: a stated step by its rule or its
    parts, never listed)."""
    parts = []
    memo: dict = {}  # what steps share (a composed step's parts: their events, found once)
    t0 = 0
    for st in s.steps:
        events, err = st.sampled_events(t0, s.n_nodes, s.nblocks, sample, memo)
        parts.extend(events)
        if err is not None:
            return parts, err
        t0 += st.repeat
    return parts, None


def _initial(s: Schedule, sample: np.ndarray, node: np.ndarray, col: np.ndarray, vals) -> tuple[np.ndarray, np.ndarray]:
    """(held at the start, value at the start) of cells (node, col)."""
    c = s.collective
    if c in ("all-reduce", "reduce-scatter", "reduce"):
        held = node < s.p
        return held, np.where(held, vals[np.minimum(node, s.p - 1), col], 0)
    if c == "all-gather":
        held = node == s.owner[sample[col]]
    elif c == "all-to-all":
        held = node == sample[col] // s.p
    else:  # broadcast
        held = node == s.root
    return held, np.where(held, vals[col], 0)


def _versions(wkey: np.ndarray, rkey: np.ndarray, T1: int):
    """Group writes by key (cell * T1 + step) and find, for each read key (cell * T1 + step), the
    latest group of the same cell at an earlier step.

    One sort of writes and reads together (a read sorts before a write of its own key, so it sees
    the start of its step), then a running maximum: binary searches of reads in random order into
    the groups would cost several times more at millions of events.

    Returns
    -------
    gkey : int64 array [G]
        Group keys, sorted (by cell, then step).
    gid : int64 array
        Group of each write.
    found : int64 array
        The group each read reads (-1: none).
    """
    nw = len(wkey)
    keys = np.concatenate([wkey * 2 + 1, rkey * 2])
    order = np.argsort(keys)
    sk = keys[order]
    del keys  # peak memory: several arrays of (writes + reads) int64 live here
    sk >>= 1
    isw = order < nw
    wpos = np.flatnonzero(isw)
    wk = sk[wpos]
    new = np.ones(len(wk), dtype=bool)
    new[1:] = wk[1:] != wk[:-1]
    gnum = np.cumsum(new) - 1
    gid = np.empty(nw, dtype=np.int64)
    gid[order[wpos]] = gnum
    at = np.full(len(sk), -1, dtype=np.int64)
    at[wpos] = gnum
    last = np.arange(len(sk))
    last[~isw] = -1
    np.maximum.accumulate(last, out=last)  # latest write at or before each position
    rpos = np.flatnonzero(~isw)
    lr = np.maximum(last[rpos], 0)
    bits = T1.bit_length() - 1  # T1 is a power of two: cells by a shift, not a division
    hit = (last[rpos] >= 0) & (sk[lr] >> bits == sk[rpos] >> bits)
    found = np.empty(len(rkey), dtype=np.int64)
    found[order[rpos] - nw] = np.where(hit, at[lr], -1)
    return wk[new], gid, found


def run_sampled(s: Schedule, sample: np.ndarray, rng: np.random.Generator) -> None:
    """Check the sorted block ids `sample` of `s` (module doc); raise ScheduleError on a violation."""
    B = len(sample)
    one_row = s.collective in ("all-gather", "all-to-all", "broadcast")
    vals = rng.integers(0, _VALUE_BOUND, size=B if one_row else (s.p, B), dtype=np.int64)
    parts, struct_err = _collect(s, sample)
    t, src, dst, red, col, pos = [np.concatenate([p[i] for p in parts]) if parts else np.zeros(0, np.int64)
                                  for i in range(6)]
    del parts
    red = red.astype(bool)
    T1 = 1 << sum(st.repeat for st in s.steps).bit_length()  # (cell, step) keys = cell * T1 + step
    head = f"{s.algorithm} {s.collective} p={s.p}"
    errors = []  # (step, kind, entry position, message)
    if struct_err is not None:
        errors.append((struct_err[0], 0, 0, struct_err[1]))

    # versions: one per (destination cell, step); each read resolved to the latest earlier version
    holder, hcol, expect = expected_values(s, sample, OneRow(vals) if one_row else vals)
    gkey, gid, src_g = _versions((dst * B + col) * T1 + t, (src * B + col) * T1 + t, T1)
    G = len(gkey)
    gcell, gt = gkey >> (T1.bit_length() - 1), gkey & (T1 - 1)
    g_end = _end_versions(gkey, gcell, holder * B + hcol, T1)
    n_copy = np.bincount(gid, weights=~red, minlength=G)
    n_red = np.bincount(gid, weights=red, minlength=G)
    errors += _write_errors(n_copy, n_red, gt, head)

    # what each transfer reads
    has = src_g >= 0
    held0, val0 = _initial(s, sample, src, col, vals)
    missing = ~has & ~held0
    if missing.any():
        i = _earliest(np.flatnonzero(missing), t, pos)
        errors.append((int(t[i]), 1, int(pos[i]), f"{head}: step {t[i]}: node {src[i]} sends block {sample[col[i]]} "
                                                  f"to {dst[i]} before it holds it"))
    # what a reduce adds to: the cell's previous version, its start value, or 0 in an empty helper
    is_red = n_red > 0
    prev = np.zeros(G, dtype=bool)
    prev[1:] = gcell[1:] == gcell[:-1]
    gnode, gcol = gcell // B, gcell % B
    gheld0, gval0 = _initial(s, sample, gnode, gcol, vals)
    empty = is_red & ~prev & ~gheld0 & (gnode < s.p)
    if empty.any():
        i = _earliest(np.flatnonzero(empty[gid] & red), t, pos)
        errors.append((int(t[i]), 4, int(pos[i]), f"{head}: step {t[i]}: node {src[i]} reduces block "
                                                  f"{sample[col[i]]} into rank {dst[i]}, which does not hold it"))
    if errors:
        raise ScheduleError(min(errors)[3])
    rank, x = _solve_versions(gt, gid, src_g, val0, is_red & ~prev & gheld0, gval0, np.flatnonzero(is_red & prev))
    _check_end(s, sample, vals, (holder, hcol, expect), g_end, x[rank[g_end]] if G else 0.0, head)


def _end_versions(gkey: np.ndarray, gcell: np.ndarray, hcell: np.ndarray, T1: int) -> np.ndarray:
    """The last version of each held cell `hcell` (-1: none); holders come in cell order where they are many."""
    if not len(gkey):
        return np.full(len(hcell), -1)
    g_end = np.searchsorted(gkey, (hcell + 1) * T1) - 1
    return np.where((g_end >= 0) & (gcell[np.maximum(g_end, 0)] == hcell), g_end, -1)


def _write_errors(n_copy: np.ndarray, n_red: np.ndarray, gt: np.ndarray, head: str) -> list[tuple]:
    """The errors (step, kind, 0, message) of versions written by two copies, or by a copy and a reduce."""
    errors = []
    for mask, kind, what in ((n_copy > 1, 2, "two copies into the same block of one node"),
                             ((n_copy > 0) & (n_red > 0), 3, "copy and reduce into the same block of one node")):
        if mask.any():
            g = np.flatnonzero(mask)[np.argmin(gt[mask])]
            errors.append((int(gt[g]), kind, 0, f"{head}: step {gt[g]}: {what}"))
    return errors


def _earliest(ev: np.ndarray, t: np.ndarray, pos: np.ndarray) -> int:
    """The earliest of the events `ev` (by step, then entry position)."""
    return ev[np.lexsort((pos[ev], t[ev]))[0]]


def _solve_versions(gt: np.ndarray, gid: np.ndarray, src_g: np.ndarray, val0: np.ndarray, start: np.ndarray,
                    gval0: np.ndarray, chain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rank of each version in step order, its value): the unit lower-triangular system over versions."""
    G = len(gt)
    has = src_g >= 0
    rank = np.empty(G, dtype=np.int64)
    rank[np.argsort(gt)] = np.arange(G)  # step order: versions depend on earlier steps only
    rhs = np.zeros(G)
    rhs += np.bincount(rank[gid[~has]], weights=val0[~has], minlength=G)
    rhs[rank[start]] += gval0[start]
    rows = np.concatenate([rank, rank[gid[has]], rank[chain]])
    cols = np.concatenate([rank, rank[src_g[has]], rank[chain - 1]])
    data = np.concatenate([np.ones(G), -np.ones(int(has.sum()) + len(chain))])
    x = np.zeros(0)
    if G:
        L = sp.csr_array((data, (rows, cols)), shape=(G, G))
        del rows, cols, data
        x = spsolve_triangular(L, rhs, lower=True, unit_diagonal=True)
    return rank, x


def _check_end(s: Schedule, sample: np.ndarray, vals, held: tuple, g_end: np.ndarray, end_value, head: str) -> None:
    """Nothing: raises ScheduleError unless every (holder, block, expected value) of `held` ends as expected."""
    holder, hcol, expect = held
    has_end = g_end >= 0
    h0, v0 = _initial(s, sample, holder, hcol, vals)
    final = np.where(has_end, end_value, v0)
    ok = (has_end | h0) & (final == expect)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        what = "does not hold" if not (has_end[i] or h0[i]) else "holds a wrong value of"
        raise ScheduleError(f"{head}: at the end node {holder[i]} {what} block {sample[hcol[i]]} "
                            f"({int((~ok).sum())} of {len(ok)} checks fail)")
