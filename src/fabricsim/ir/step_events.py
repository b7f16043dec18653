"""The listed form's answers to a verification: where chosen blocks move, and when an id leaves the buffer.

`Step.sampled_moves`, `Step.first_bad_rep` and `Step.batch_moves` read these. A sampled check
(`collectives.verify_sampled`) lists the moves of a few chosen blocks (*events*: repetition,
transfer, entry position, column) for all repetitions of a step at once. A step repeated with
rotating block ids (`Step.shift`/`mod`) is not expanded: for each chosen block c and repetition k,
the entries that carry c at k are the ones whose first id is c rotated back by k (a table lookup).
A run in range form covers a chosen block exactly when its start reaches the block's tile start,
solved the same way per run length. Work: O(stored step + events + rotating repetitions x chosen
blocks) in numpy. A step-by-step check (`collectives.verify`) reads one repetition at a time, cut
to a batch of blocks (`listed_batch_moves`, `range_batch_moves`).
"""

from __future__ import annotations

import numpy as np

from ..errors import ScheduleError
from .form import rotate

_QUERY_CHUNK = 1 << 20  # (block, repetition) lookups built at once, bounds memory


def member(sorted_ids: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(hit mask, index) of `ids` in the sorted array `sorted_ids`."""
    j = np.searchsorted(sorted_ids, ids)
    jj = np.minimum(j, max(len(sorted_ids) - 1, 0))
    hit = (j < len(sorted_ids)) & (sorted_ids[jj] == ids) if len(sorted_ids) else np.zeros(len(ids), bool)
    return hit, jj


def first_bad_rep(b: np.ndarray, shift, mod, repeat: int, nblocks: int) -> int | None:
    """The first repetition at which one of the listed ids `b` (rotating by `shift` in aligned ranges
    of `mod` ids, None: not at all) leaves 0..nblocks-1, over `repeat` repetitions (None: never)."""
    if not len(b):
        return None
    if b.min() < 0 or b.max() >= nblocks:
        return 0
    if repeat == 1 or shift is None:
        return None
    m, s = mod, shift
    o = b % m
    lim = nblocks - (b - o)  # ids base + x leave the range when x >= lim
    risky = (s % m != 0) & (lim < m)
    if not risky.any():
        return None
    o, m, s, lim = o[risky], m[risky], s[risky], lim[risky]
    s = (s + m // 2) % m - m // 2  # the same rotation, small magnitude: k * s stays in int64
    R = repeat
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


def range_bad_rep(st, nblocks: int) -> int | None:
    """`first_bad_rep` of a step in range form: a run's first and last ids rotate as one."""
    if len(st.blocks) and (st.blocks.min() < 0 or (st.blocks + st.blocks_per_transfer).max() > nblocks):
        return 0
    if st.repeat > 1 and st.shift is not None:
        nz = np.flatnonzero(st.blocks_per_transfer > 0)
        return first_bad_rep(st.blocks[nz] + st.blocks_per_transfer[nz] - 1, st.shift[nz], st.mod[nz],
                             st.repeat, nblocks)
    return None


def rotating_events(st, idx: np.ndarray, reps: int, sample: np.ndarray):
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
            hit, r = member(uo, want)
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


def _run_events(st, tr: np.ndarray, starts: np.ndarray, sample: np.ndarray):
    """(transfer, entry position, column) of the chosen blocks inside runs `starts` of transfers `tr`."""
    i0 = np.searchsorted(sample, starts)
    n = np.searchsorted(sample, starts + st.blocks_per_transfer[tr]) - i0
    tot = int(n.sum())
    j = np.repeat(np.arange(len(tr)), n)
    col = np.repeat(i0 - (np.cumsum(n) - n), n) + np.arange(tot)
    return tr[j], st.ptr[tr[j]] + (sample[col] - starts[j]), col, j


def range_events(st, reps: int, sample: np.ndarray):
    """`listed_events` of a step in range form: runs that stay put give the same moves at every
    repetition; a rotating run (a tile of c ids) covers a chosen block b exactly when its start
    reaches b's tile start b - b % c, which `rotating_events` solves per tile length."""
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
        k, t = rotating_events(st, idx, reps, np.unique(sample - sample % c))
        tr, pos, col, j = _run_events(st, t, rotate(st.blocks[t], st.shift[t], st.mod[t], k), sample)
        ks.append(k[j])
        trs.append(tr)
        poss.append(pos)
        cols.append(col)
    return np.concatenate(ks), np.concatenate(trs), np.concatenate(poss), np.concatenate(cols)


def listed_events(st, reps: int, sample: np.ndarray):
    """(repetition, transfer, entry position, column) of the chosen blocks' moves in reps 0..reps-1
    of a step that lists its ids (in any order)."""
    b = st.blocks
    rot = np.zeros(len(b), dtype=bool)
    if st.shift is not None and reps > 1:
        rot = st.shift % st.mod != 0
    fixed = np.flatnonzero(~rot)
    hit, j = member(sample, b[fixed])
    e_fixed = fixed[hit]
    k = np.repeat(np.arange(reps, dtype=np.int64), len(e_fixed))
    e = np.tile(e_fixed, reps)
    if rot.any():
        k2, e2 = rotating_events(st, np.flatnonzero(rot), reps, sample)
        k, e = np.concatenate([k, k2]), np.concatenate([e, e2])
    ids = b[e]  # the id each event carries at its repetition
    if rot.any():
        ids = np.where(rot[e], rotate(ids, st.shift[e], st.mod[e], k), ids)
    tr = np.searchsorted(st.ptr, e, "right") - 1
    return k, tr, e, np.searchsorted(sample, ids)


def listed_batch_moves(st, k: int, col_of: np.ndarray, memo: dict):
    """`Step.batch_moves` of a step that lists its ids: the entries of repetition k whose id is in
    the batch (`col_of` >= 0); the per-entry arrays are built once per check (`memo`)."""
    if "entries" not in memo:
        memo["entries"] = (st.entry_src(), st.entry_dst(), st.entry_reduce())
    e_src, e_dst, e_red = memo["entries"]
    b = st.blocks_at(k)
    if len(b) and (b.min() < 0 or b.max() >= len(col_of)):
        return None
    col = col_of[b]
    m = col >= 0
    return e_src[m], e_dst[m], e_red[m], col[m]


def range_batch_moves(st, blocks: np.ndarray, nblocks: int):
    """`Step.batch_moves` of a step in range form that does not repeat: only the ids of its runs
    inside the sorted batch `blocks`, never the whole expansion."""
    a = st.blocks
    if len(a) and (a.min() < 0 or (a + st.blocks_per_transfer).max() > nblocks):
        return None
    i0 = np.searchsorted(blocks, a)
    i1 = np.searchsorted(blocks, a + st.blocks_per_transfer)
    n_e = i1 - i0
    e_col = np.repeat(i0 - (np.cumsum(n_e) - n_e), n_e) + np.arange(int(n_e.sum()))
    return np.repeat(st.src, n_e), np.repeat(st.dst, n_e), np.repeat(st.reduce, n_e), e_col
