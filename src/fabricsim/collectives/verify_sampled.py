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

Work: O(stored schedule + events + rotating repetitions x chosen blocks) in numpy. A step repeated
with rotating block ids (`Step.shift`/`mod`) is not expanded: for each chosen block c and repetition
k, the entries that carry c at k are the ones whose first id is c rotated back by k (a table lookup).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve_triangular

from ..errors import ScheduleError
from ..ir import Schedule, Step, rotate
from .verify_expect import OneRow, expected_values

_VALUE_BOUND = 1 << 20  # random values below this: float64 sums stay exact (module doc)
_QUERY_CHUNK = 1 << 20  # (block, repetition) lookups built at once, bounds memory


def _member(sorted_ids: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hit mask, index) of `ids` in the sorted array `sorted_ids`."""
    j = np.searchsorted(sorted_ids, ids)
    jj = np.minimum(j, max(len(sorted_ids) - 1, 0))
    hit = (j < len(sorted_ids)) & (sorted_ids[jj] == ids) if len(sorted_ids) else np.zeros(len(ids), bool)
    return hit, jj


def _first_bad_rep(st: Step, nblocks: int) -> int | None:
    """The first repetition at which an entry's block id leaves 0..nblocks-1 (None: never)."""
    b = st.blocks
    if not len(b):
        return None
    if b.min() < 0 or b.max() >= nblocks:
        return 0
    if st.repeat == 1 or st.shift is None:
        return None
    m, s = st.mod, st.shift
    o = b % m
    lim = nblocks - (b - o)  # ids base + x leave the range when x >= lim
    risky = (s % m != 0) & (lim < m)
    if not risky.any():
        return None
    o, m, s, lim = o[risky], m[risky], s[risky], lim[risky]
    s = (s + m // 2) % m - m // 2  # the same rotation, small magnitude: k * s stays in int64
    R = st.repeat
    first = np.full(len(o), R, dtype=np.int64)
    last = o + (R - 1) * s  # no wrap in 0..m-1: ids move monotonically, closed form
    mono = (last >= 0) & (last < m)
    up = mono & (s > 0)
    first[up] = np.where(last[up] >= lim[up], -((o[up] - lim[up]) // s[up]), R)  # ceil((lim - o) / s)
    wrap = np.flatnonzero(~mono)  # wrapping entries (a malformed schedule): step through repetitions
    per = max(1, _QUERY_CHUNK // max(len(wrap), 1))
    for k0 in range(0, R if len(wrap) else 0, per):  # in chunks, until the first repetition that leaves
        kk = np.arange(k0, min(R, k0 + per), dtype=np.int64)
        x = (o[wrap][:, None] + kk[None, :] * s[wrap][:, None]) % m[wrap][:, None]
        hit = (x >= lim[wrap][:, None]).any(axis=0)
        if hit.any():
            first[wrap] = kk[np.argmax(hit)]
            break
    k = int(first.min())
    return k if k < R else None


def _rotating_events(st: Step, idx: np.ndarray, reps: int, sample: np.ndarray):
    """(repetition, entry) of every chosen block that rotating entries `idx` carry in reps 0..reps-1."""
    b, m, s = st.blocks[idx], st.mod[idx], st.shift[idx]
    o = b % m
    base = b - o
    s = (s + m // 2) % m - m // 2  # the same rotation, small magnitude: k * s stays in int64
    if reps * int(np.abs(s).max(initial=0)) >= 1 << 62:
        raise ScheduleError("verify: a rotation too large to check by sample; verify every block instead")
    # groups of entries rotating alike: the same aligned range (base, mod) and shift
    if base.min() == base.max() and m.min() == m.max() and s.min() == s.max():
        g = np.zeros(len(idx), dtype=np.int64)
        gb, gm, gs = base[:1], m[:1], s[:1]
    else:
        srt = np.lexsort((s, m, base))
        bs, ms, ss = base[srt], m[srt], s[srt]
        new = np.ones(len(srt), dtype=bool)
        new[1:] = (bs[1:] != bs[:-1]) | (ms[1:] != ms[:-1]) | (ss[1:] != ss[:-1])
        g = np.empty(len(idx), dtype=np.int64)
        g[srt] = np.cumsum(new) - 1
        gb, gm, gs = bs[new], ms[new], ss[new]
    n_g = len(gb)
    M = int(gm.max())
    slot = order = None
    dense = n_g * M <= 4 * len(idx) + (1 << 20)  # a direct table of (group, offset) slots
    if dense:
        key = g * M + o
        count = np.bincount(key, minlength=n_g * M)
        if count.max() <= 1:  # one entry per slot (a ring step): no sort at all
            slot = np.full(n_g * M, -1, dtype=np.int64)
            slot[key] = np.arange(len(key))
        else:
            first = np.cumsum(count) - count
            order = np.argsort(key)
    else:  # offsets ranked among those present (e.g. ranges of 2^62 ids that never wrap)
        uo, o_rank = np.unique(o, return_inverse=True)
        n_o = len(uo)
        key = g * n_o + o_rank.reshape(-1)
        order = np.argsort(key)
        skey = key[order]
    lo = np.searchsorted(sample, gb)
    hi = np.searchsorted(sample, gb + gm)
    cnt = hi - lo
    pg = np.repeat(np.arange(n_g), cnt)  # (group, chosen block) pairs
    pc = np.arange(int(cnt.sum())) - np.repeat(np.cumsum(cnt) - cnt, cnt) + np.repeat(lo, cnt)
    ks, es = [], []
    if not len(pg):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    per = max(1, _QUERY_CHUNK // len(pg))
    rel = sample[pc] - gb[pg]
    for k0 in range(0, reps, per):
        kk = np.arange(k0, min(reps, k0 + per), dtype=np.int64)
        want = ((rel[None, :] - kk[:, None] * gs[pg][None, :]) % gm[pg][None, :]).reshape(-1)  # first id's offset
        if slot is not None:
            e = slot[pg[np.arange(len(want)) % len(pg)] * M + want]
            q = np.flatnonzero(e >= 0)
            ks.append(kk[q // len(pg)])
            es.append(idx[e[q]])
            continue
        if dense:
            q = np.arange(len(want))
            qkey = pg[q % len(pg)] * M + want
            a, n = first[qkey], count[qkey]
        else:
            hit, r = _member(uo, want)
            q = np.flatnonzero(hit)
            qkey = pg[q % len(pg)] * n_o + r[q]
            a = np.searchsorted(skey, qkey, "left")
            n = np.searchsorted(skey, qkey, "right") - a
        tot = int(n.sum())
        if not tot:
            continue
        at = np.repeat(a - (np.cumsum(n) - n), n) + np.arange(tot)
        ks.append(kk[np.repeat(q // len(pg), n)])
        es.append(idx[order[at]])
    if not ks:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(ks), np.concatenate(es)


def _run_events(st: Step, tr: np.ndarray, starts: np.ndarray, sample: np.ndarray):
    """(transfer, entry position, column) of the chosen blocks inside runs `starts` of transfers `tr`."""
    i0 = np.searchsorted(sample, starts)
    n = np.searchsorted(sample, starts + st.blocks_per_transfer[tr]) - i0
    tot = int(n.sum())
    j = np.repeat(np.arange(len(tr)), n)
    col = np.repeat(i0 - (np.cumsum(n) - n), n) + np.arange(tot)
    return tr[j], st.ptr[tr[j]] + (sample[col] - starts[j]), col, j


def _range_events(st: Step, reps: int, sample: np.ndarray):
    """`_step_events` of a step in range form: runs that stay put give the same moves at every
    repetition; a rotating run (a tile of c ids) covers a chosen block b exactly when its start
    reaches b's tile start b - b % c, which `_rotating_events` solves per tile length."""
    cnt = st.blocks_per_transfer
    turn = np.zeros(len(cnt), dtype=bool)
    if st.shift is not None and reps > 1:
        turn = (cnt > 0) & (st.shift % st.mod != 0)
    still = np.flatnonzero(~turn & (cnt > 0))
    tr, pos, col, _ = _run_events(st, still, st.blocks[still], sample)
    ks, trs, poss, cols = [np.repeat(np.arange(reps, dtype=np.int64), len(tr))], [np.tile(tr, reps)], \
        [np.tile(pos, reps)], [np.tile(col, reps)]
    for c in np.unique(cnt[turn]).tolist():
        idx = np.flatnonzero(turn & (cnt == c))
        k, t = _rotating_events(st, idx, reps, np.unique(sample - sample % c))
        tr, pos, col, j = _run_events(st, t, rotate(st.blocks[t], st.shift[t], st.mod[t], k), sample)
        ks.append(k[j])
        trs.append(tr)
        poss.append(pos)
        cols.append(col)
    return np.concatenate(ks), np.concatenate(trs), np.concatenate(poss), np.concatenate(cols)


def _step_events(st: Step, reps: int, sample: np.ndarray):
    """(repetition, transfer, entry position, column) of the chosen blocks' moves in reps 0..reps-1."""
    if st.ranges:
        return _range_events(st, reps, sample)
    b = st.blocks
    rot = np.zeros(len(b), dtype=bool)
    if st.shift is not None and reps > 1:
        rot = st.shift % st.mod != 0
    fixed = np.flatnonzero(~rot)
    hit, j = _member(sample, b[fixed])
    e_fixed = fixed[hit]
    k = np.repeat(np.arange(reps, dtype=np.int64), len(e_fixed))
    e = np.tile(e_fixed, reps)
    if rot.any():
        k2, e2 = _rotating_events(st, np.flatnonzero(rot), reps, sample)
        k, e = np.concatenate([k, k2]), np.concatenate([e, e2])
    ids = b[e]  # the id each event carries at its repetition
    if rot.any():
        ids = np.where(rot[e], rotate(ids, st.shift[e], st.mod[e], k), ids)
    tr = np.searchsorted(st.ptr, e, "right") - 1
    return k, tr, e, np.searchsorted(sample, ids)


def _bad_rep(st: Step, nblocks: int) -> int | None:
    """The first repetition at which a block id of the step leaves 0..nblocks-1 (None: never),
    range form included (a run's first and last ids rotate as one)."""
    if not st.ranges:
        return _first_bad_rep(st, nblocks)
    if len(st.blocks) and (st.blocks.min() < 0 or (st.blocks + st.blocks_per_transfer).max() > nblocks):
        return 0
    if st.repeat > 1 and st.shift is not None:
        nz = np.flatnonzero(st.blocks_per_transfer > 0)
        ends = Step(st.src[nz], st.dst[nz], st.reduce[nz], np.arange(len(nz) + 1),
                    st.blocks[nz] + st.blocks_per_transfer[nz] - 1, repeat=st.repeat,
                    shift=st.shift[nz], mod=st.mod[nz])
        return _first_bad_rep(ends, nblocks)
    return None


def _structure_problem(st: Step, n: int) -> str | None:
    """A transfer naming a node outside 0..n-1, or sending to itself (the same at every repetition)."""
    if len(st.src) and (st.src.min() < 0 or st.dst.min() < 0 or max(st.src.max(), st.dst.max()) >= n):
        return f"transfer names a node outside 0..{n - 1}"
    if np.any(st.src == st.dst):
        tt = int(np.flatnonzero(st.src == st.dst)[0])
        return f"node {st.src[tt]} sends to itself"
    return None


def _composed_events(s: Schedule, st, t0: int, sample: np.ndarray, seen: dict):
    """The events of a `ComposedStep` run from t0, and its first structural error: each part's
    events over all its repetitions are found once (`seen`, shared by the composed steps) and cut
    to the repetitions this step runs; entry positions count from the part's place in the listed
    form, so errors rank as in it."""
    events, err = [], None
    e_off = st.entry_offsets()
    r = st.repeat
    for i, (part, f) in enumerate(zip(st.parts, st.first)):
        hit = seen.get(id(part))
        if hit is None or hit[0] is not part:
            problem = _structure_problem(part, s.n_nodes)
            bad = None if problem else _bad_rep(part, s.nblocks)
            k, tr, pos, col = _step_events(part, part.repeat if bad is None else bad, sample) if not problem \
                else (np.zeros(0, np.int64),) * 4
            order = np.argsort(k, kind="stable")
            hit = seen[id(part)] = (part, problem, bad, k[order], tr[order], pos[order], col[order])
        _, problem, bad, k, tr, pos, col = hit
        if problem is not None:
            e = (t0, f"step {t0}: {problem}")
            err = min(err or e, e)
            continue
        if bad is not None and bad < f + r:  # a block id leaves the range in the run: this window, exactly
            w = part.window(f, f + r)
            kb = _bad_rep(w, s.nblocks)
            if kb is not None:
                e = (t0 + kb, f"step {t0 + kb}: block id outside 0..{s.nblocks - 1}")
                err = min(err or e, e)
            if kb != 0:
                wk, wtr, wpos, wcol = _step_events(w, r if kb is None else kb, sample)
                events.append((t0 + wk, part.src[wtr], part.dst[wtr], part.reduce[wtr], wcol, wpos + e_off[i]))
            continue
        lo, hi = np.searchsorted(k, f), np.searchsorted(k, f + r)
        j = tr[lo:hi]
        events.append((t0 + k[lo:hi] - f, part.src[j], part.dst[j], part.reduce[j], col[lo:hi], pos[lo:hi] + e_off[i]))
    if err is not None:  # the step-by-step run stops at the error: nothing from its step on
        events = [tuple(a[ev[0] < err[0]] for a in ev) for ev in events]
    return events, err


def _collect(s: Schedule, sample: np.ndarray):
    """Events of all steps in run order, and the first structural error (step, message) if any."""
    n = s.n_nodes
    parts = []
    seen: dict = {}  # parts of composed steps: their events, found once
    t0 = 0
    for st in s.steps:
        if st.composed:
            events, err = _composed_events(s, st, t0, sample, seen)
            parts.extend(events)
            if err is not None:
                return parts, err
            t0 += st.repeat
            continue
        if st.full_mesh or st.line_mesh:  # a chosen block's moves by the step's rule (a row or a column of a
            # full mesh; once in a line mesh), never the listed step
            if st.node_bound > n:
                return parts, (t0, f"step {t0}: transfer names a node outside 0..{n - 1}")
            if st.id_bound > s.nblocks:
                return parts, (t0, f"step {t0}: block id outside 0..{s.nblocks - 1}")
            col, src, dst, pos = st.moves_of(sample)
            parts.append((np.full(len(col), t0, np.int64), src, dst, np.full(len(col), st.reduce_all), col, pos))
            t0 += 1
            continue
        problem = _structure_problem(st, n)
        err = None if problem is None else (t0, f"step {t0}: {problem}")
        reps = st.repeat
        if err is None:
            k_bad = _bad_rep(st, s.nblocks)
            if k_bad is not None:
                err = (t0 + k_bad, f"step {t0 + k_bad}: block id outside 0..{s.nblocks - 1}")
                reps = k_bad
        if reps > 0 and (err is None or err[0] > t0):
            k, tr, pos, col = _step_events(st, reps, sample)  # in any order: errors are ranked below
            parts.append((t0 + k, st.src[tr], st.dst[tr], st.reduce[tr], col, pos))
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
