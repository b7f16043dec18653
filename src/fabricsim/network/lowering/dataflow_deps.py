"""Which transfer waits for which: the dataflow dependencies of a schedule's transfers.

A transfer waits for every earlier transfer that wrote, into its source, one of the blocks it sends,
and for the previous transfer on its channel (FIFO: `dep_csr`). The blocks are joined as runs of
contiguous ids, never as (transfer, block) pairs: each step form states its runs
(`StepForm.block_runs`: listed ids, range-form runs whole, a stated rule's blocks), `merge_runs`
joins a transfer's touching runs, and `block_deps` joins reads with earlier writes at each node by
an interval join on those runs. `network.lowering.dataflow` builds the flows on them (and re-exports these
names); the flow model's quotient (`lowering.quotient`) joins the runs of its orbit flows the same way.
"""

from __future__ import annotations

import numpy as np

from ...ir import StepForm
from ...ir.step import span_indices
from ...limits import check_limit


def dep_csr(n: int, reader: np.ndarray, writer: np.ndarray, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dataflow pairs plus FIFO channels as a predecessor CSR, each flow's predecessors ascending.

    Parameters
    ----------
    n : int
        Flows, in step order.
    reader, writer : int64 arrays
        Flow `reader[j]` waits for flow `writer[j]` (repeats allowed).
    src, dst : int64 arrays [n]
        Each flow's channel ends: a flow also waits for the previous flow on the same channel.

    Returns
    -------
    (int64 array, int64 array)
        (dep_ptr [n + 1], dep_idx).
    """
    # a channel (source, destination) is FIFO: a transfer also waits for the previous one on it,
    # so the pieces of a pipelined chain go in order instead of sharing the first link at once
    chan = np.lexsort((np.arange(n), dst, src))
    same = (src[chan[1:]] == src[chan[:-1]]) & (dst[chan[1:]] == dst[chan[:-1]])
    m = max(n, 1)
    pairs = sorted_unique(np.concatenate([reader * m + writer, chan[1:][same] * m + chan[:-1][same]]))
    dep_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(pairs // m, minlength=n), out=dep_ptr[1:])
    return dep_ptr, (pairs % m).astype(np.int64)


def step_runs(st: StepForm, k: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each transfer's blocks at repetition k as runs of contiguous ids.

    Parameters
    ----------
    st : StepForm
        Any form (`StepForm.block_runs`); a range-form step is one run per transfer as it stands
        (never expanded).
    k : int
        Repetition, 0-based.

    Returns
    -------
    (int64 array, int64 array, int64 array)
        (transfer, first id, one past the last id) per run, by transfer then id; a transfer
        without blocks has none.
    """
    _, t, lo, hi = st.block_runs(None, (k,))
    return merge_runs(t, lo, hi)


def merge_runs(key: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of ids as a step holds them (`StepForm.block_runs`), joined into maximal runs per key.

    Parameters
    ----------
    key : int64 array
        Each run's owner (e.g. its transfer), non-decreasing.
    lo, hi : int64 arrays
        Its ids lo .. hi - 1.

    Returns
    -------
    (int64 array, int64 array, int64 array)
        (key, first id, one past the last id) of each maximal run: runs of one id (a listed step)
        joined where they touch (`entry_runs`); one run per key (range form) as it stands.
    """
    w = hi - lo
    if np.all(w == 1):
        return entry_runs(key, lo)
    if np.all(key[1:] > key[:-1]):
        return key, lo, hi
    return entry_runs(np.repeat(key, w), span_indices(lo, w))  # (never met by a step's runs)


def entry_runs(t: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(transfer, block) entries, grouped by transfer, as runs of contiguous block ids.

    Parameters
    ----------
    t : int64 array
        Transfer of each entry, non-decreasing.
    b : int64 array
        Block id of each entry (any order inside a transfer; repeats count once).

    Returns
    -------
    (int64 array, int64 array, int64 array)
        (transfer, first id, one past the last id) of each maximal run.
    """
    if not len(b):
        return t[:0], b[:0], b[:0]
    dt, db = np.diff(t), np.diff(b)
    if not np.all((dt > 0) | (db > 0)):  # unsorted or repeated ids inside a transfer
        order = np.lexsort((b, t))
        t, b = t[order], b[order]
        keep = np.concatenate([[True], (np.diff(t) != 0) | (np.diff(b) != 0)])
        t, b = t[keep], b[keep]
        dt, db = np.diff(t), np.diff(b)
    first = np.flatnonzero(np.concatenate([[True], (dt != 0) | (db != 1)]))
    last = np.concatenate([first[1:], [len(b)]]) - 1
    return t[first], b[first], b[last] + 1


def block_deps(reads: tuple, writes: tuple, nblocks: int, *, share_above: int | None = None):
    """Which reads see which earlier writes: an interval join on block runs.

    Every (read, write) pair at the same node whose block runs overlap, the write in an earlier
    step. The runs at a node are cut at every run end there (elementary segments, never finer
    than blocks), so both sides become (segment, step) keys and one sorted search finds, for each
    read segment, the writes of the same segment before its step.

    Parameters
    ----------
    reads, writes : tuples of int64 arrays (id, node, step, lo, hi)
        One entry per run: who reads (writes), at which node, in which lock-step step, blocks
        lo .. hi - 1.
    nblocks : int
        Block ids are below this.

    share_above : int, optional
        Join shared writer lists: the reads of one segment in one step all see the same earlier
        writes, so a group of g such reads of c writes whose g x c pairs exceed this becomes one
        *join* waiting for the c writes and g reads waiting for the join (g + c pairs; a direct
        all-reduce's all-gather waits for its whole reduce-scatter: p^2 pairs -> 2p). None: no joins.

    Returns
    -------
    (int64 array, int64 array) or (int64 array, int64 array, (int64 array, int64 array))
        (reader id, writer id) per pair found, with repeats. The elementary segments and the pairs
        are counted before they are made: beyond the `blocks` limit, a ConfigError (a run of p - 1
        blocks read at one node where p runs of one were written, p times: p^2 segments). With
        `share_above`, also the joins as a CSR of their writers (ptr, writer ids); a pair whose
        writer is join k has writer id -1 - k.
    """
    r_id, r_node, r_step, r_lo, r_hi = reads
    w_id, w_node, w_step, w_lo, w_hi = writes
    if not len(r_id) or not len(w_id):
        none = np.zeros(0, np.int64)
        return (none, none) if share_above is None else (none, none, (np.zeros(1, np.int64), none))
    span = int(nblocks) + 1
    bounds = sorted_unique(np.concatenate([r_node * span + r_lo, r_node * span + r_hi,
                                           w_node * span + w_lo, w_node * span + w_hi]))
    what = f"{len(r_id)} reads of {len(w_id)} writes"
    n_steps = int(max(r_step.max(), w_step.max())) + 1
    w_seg, w_cnt = _segments(bounds, span, w_node, w_lo, w_hi, what)
    w_key = w_seg * n_steps + np.repeat(w_step, w_cnt)
    order = np.argsort(w_key, kind="stable")
    w_key, w_who = w_key[order], np.repeat(w_id, w_cnt)[order]
    del w_seg, order
    r_seg, r_cnt = _segments(bounds, span, r_node, r_lo, r_hi, what)
    key = r_seg * n_steps
    seg_step = key + np.repeat(r_step, r_cnt)
    lo = np.searchsorted(w_key, key)
    cnt = np.searchsorted(w_key, seg_step) - lo
    del key, r_seg
    who = np.repeat(r_id, r_cnt)
    if share_above is None:
        joined, jk, j_lo, j_cnt = np.zeros(len(cnt), bool), None, lo[:0], cnt[:0]
    else:  # reads of one (segment, step) share their writers: join big groups
        joined, jk, j_lo, j_cnt = _join_groups(seg_step, lo, cnt, share_above)
    check_limit("blocks", int(cnt[~joined].sum()) + int(joined.sum()) + int(j_cnt.sum()),
                "dataflow dependencies (read, earlier write) pairs", "schedule", what)
    free = ~joined
    reader = np.repeat(who[free], cnt[free])
    writer = w_who[span_indices(lo[free], cnt[free])]
    if share_above is None:
        return reader, writer
    j_ptr = np.concatenate([[0], np.cumsum(j_cnt)]).astype(np.int64) if joined.any() else np.zeros(1, np.int64)
    j_idx = w_who[span_indices(j_lo, j_cnt)] if joined.any() else np.zeros(0, np.int64)
    return (np.concatenate([reader, who[joined]]), np.concatenate([writer, -1 - jk[joined]]), (j_ptr, j_idx))


def _segments(bounds: np.ndarray, span: int, node: np.ndarray, lo: np.ndarray, hi: np.ndarray,
              what: str) -> tuple[np.ndarray, np.ndarray]:
    """The elementary segments (indices into `bounds`) each run [lo, hi) at `node` covers, and how
    many each (`block_deps`); beyond the `blocks` limit, a ConfigError."""
    a = np.searchsorted(bounds, node * span + lo)
    cnt = np.searchsorted(bounds, node * span + hi) - a
    check_limit("blocks", int(cnt.sum()), "dataflow segments (block runs cut at every run end of their node)",
                "schedule", what)
    return span_indices(a, cnt), cnt


def _join_groups(seg_step: np.ndarray, lo: np.ndarray, cnt: np.ndarray, share_above: int):
    """The read segments that share their writers through a join (`block_deps`, `share_above`).

    Returns
    -------
    tuple
        (joined: bool per read segment, its join's index (-1: none), per join the first of its
        writers in the sorted writes and their count).
    """
    order = np.argsort(seg_step, kind="stable")
    first = np.flatnonzero(np.concatenate([[True], seg_step[order][1:] != seg_step[order][:-1]]))
    g = np.diff(np.concatenate([first, [len(order)]]))
    c = cnt[order[first]]
    big = (g >= 2) & (g * c > share_above)
    group = np.repeat(np.arange(len(first)), g)
    k_of = np.full(len(first), -1, np.int64)
    k_of[big] = np.arange(int(big.sum()))
    jk = np.empty(len(cnt), np.int64)
    jk[order] = k_of[group]
    return jk >= 0, jk, lo[order[first[big]]], c[big]


def sorted_unique(x: np.ndarray) -> np.ndarray:
    """The distinct values of an int array, ascending: `np.unique` by sorting (numpy 2.4's hash-based
    `np.unique` takes minutes on tens of millions of int64 where a sort takes a second)."""
    x = np.sort(x)
    return x[np.concatenate([[True], x[1:] != x[:-1]])] if len(x) else x
