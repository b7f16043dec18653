"""A pipelined chain alone on the flow model: its makespan from n + (P - 1) x classes flows.

A chain (a ring broadcast or reduce, `collectives.ring`) sends P pieces over n hops, order[h] ->
order[h+1]: piece t crosses hop h at lock-step step t + h. As dataflow (`lowering.dataflow.collective_flows`)
the transfer (t, h) waits for (t, h - 1), which brought the piece to its source, and for (t - 1, h),
the previous transfer on its channel (FIFO), so it arrives at

    F(t, h) = max(F(t - 1, h), F(t, h - 1)) + d_h,

where d_h is hop h's time alone, provided no two transfers ever send on one link at once: the
transfers of one hop never overlap (each waits for the previous to arrive), and transfers of
different hops never meet where the hops' routes share no link (`chain_flows` checks it). The
last arrival, the longest path through that grid, is sum(d_h) + (P - 1) x max(d_h): every hop once,
and the slowest P - 1 more times. So the same makespan comes from far fewer flows: one piece
through every hop, then, for each class of hops of one route shape (the bandwidths and latencies
of its links in order, which fix d_h in every mode), P - 1 pieces on one hop of that class, the
classes side by side. At 16,384 ranks: 16,383 + 2 x 16,383 flows instead of 268 M. The times
equal simulating every transfer up to rounding (the tests compare them).

The schedule states its chain (`facts.chain`, the ranks in order, stated by the ring builder); it
is checked from the steps before it is used, in O(stored entries + parts named): every transfer
moves one block from order[h] to order[h + 1] with block id = lock-step step - h, each step's
transfers cover distinct hops, and the transfers number n x P. Each step is read as the listed
steps it runs (`StepForm.listed_parts`: a composed pipeline step its parts, each checked once); a
step stated by a rule over no listed parts (a full or line mesh) is no chain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ir import Schedule
from ...topology.graph import Topology
from ..flow import Flows


@dataclass(frozen=True)
class ChainFlows:
    """A chain's makespan as few flows (module doc).

    Parameters
    ----------
    flows : Flows
        One piece through every hop, then P - 1 pieces on one hop of each class.
    hops, pieces, classes : int
        n, P and the number of route classes.
    """

    flows: Flows
    hops: int
    pieces: int
    classes: int


def chain_hop_order(schedule: Schedule) -> np.ndarray | None:
    """The schedule nodes along the chain the schedule states, if its steps are that chain.

    Parameters
    ----------
    schedule : Schedule
        Any schedule; a chain names its nodes in `facts.chain`.

    Returns
    -------
    int64 array [n + 1] or None
        The nodes in chain order; None when the schedule states no chain or its steps are not
        one (module doc: each transfer one block, order[h] -> order[h + 1], block = step - h, the
        hops of one step distinct, n x P transfers).
    """
    order = schedule.facts.chain
    if order is None or schedule.collective not in ("broadcast", "reduce"):
        return None
    order = np.asarray(order, dtype=np.int64)
    n, P = len(order) - 1, schedule.nblocks
    if n < 1 or len(np.unique(order)) != len(order):
        return None
    pos = np.full(schedule.n_nodes, -1, dtype=np.int64)
    pos[order] = np.arange(n + 1)
    want = schedule.collective == "reduce"
    checked: dict = {}  # part id -> (its constant block + hop, first hop, last hop)
    i = moves = 0
    for st in schedule.steps:
        occ = st.listed_parts()  # a composed step's parts; None for a mesh stated by a rule
        if occ is None or st.lane is not None:
            return None
        spans = []
        for q, f in occ:
            hit = checked.get(id(q))
            if hit is None or hit[0] is not q:
                if np.any(q.blocks_per_transfer != 1) or np.any(q.reduce != want):
                    return None
                h = pos[q.src]
                if len(h) == 0 or np.any(h < 0) or np.any(pos[q.dst] != h + 1):
                    return None
                if np.any(np.diff(h) != 1):  # contiguous ascending hops: distinct, and a span
                    return None
                c = q.blocks + h  # block + hop, one constant for the part (one block each: listed or runs alike)
                if np.any(c != c[0]):
                    return None
                if q.repeat > 1 and (q.shift is None or np.any(q.shift != 1) or np.any(q.mod != P)):
                    return None
                hit = checked[id(q)] = (q, int(c[0]), int(h[0]), int(h[-1]))
            _, c, lo, hi = hit
            if c + f != i:  # block id = step - hop at every repetition
                return None
            if c + f - hi < 0 or c + f + st.repeat - 1 - lo >= P:  # ids in 0..P-1: no rotation wraps
                return None
            spans.append((lo, hi))
            moves += (hi - lo + 1) * st.repeat
        spans.sort()
        if any(b[0] <= a[1] for a, b in zip(spans, spans[1:])):
            return None
        i += st.repeat
    return order if moves == n * P else None


def chain_flows(topo: Topology, schedule: Schedule) -> ChainFlows | None:
    """A placed chain's makespan as few flows of one byte of collective size (module doc).

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`.

    Returns
    -------
    ChainFlows or None
        None when the schedule is no chain (`chain_hop_order`) or two of its hops' routes share a
        link (transfers could meet: every transfer is then simulated).
    """
    order = chain_hop_order(schedule)
    if order is None or topo.has_reduction_units:
        return None  # (a switch's reduction unit is a resource the transfers would share)
    nodes = schedule.topology_nodes()[order]
    n, P = len(order) - 1, schedule.nblocks
    src, dst = nodes[:-1], nodes[1:]
    ptr, links = topo.route(src, dst)
    if len(np.unique(links)) != len(links):
        return None
    hops = np.diff(ptr)
    if np.any(hops == 0):
        return None
    # a hop's class: the bandwidths and latencies of its links in order (rows padded with -1)
    width = int(hops.max())
    sig = np.full((n, 2 * width), -1.0)
    col = np.arange(len(links)) - np.repeat(ptr[:-1], hops)
    row = np.repeat(np.arange(n), hops)
    sig[row, 2 * col] = topo.link_bw[links]
    sig[row, 2 * col + 1] = topo.link_lat[links]
    _, first = np.unique(sig, axis=0, return_index=True)
    reps = np.sort(first)  # one hop of each class, in chain order
    k = len(reps)
    f_src = np.concatenate([src, np.repeat(src[reps], P - 1)])
    f_dst = np.concatenate([dst, np.repeat(dst[reps], P - 1)])
    m = n + k * (P - 1)
    # flow j waits for flow j - 1 along the through chain; each class's first repeat waits for the
    # through chain's last hop, its next for the one before
    dep_idx = np.arange(-1, m - 1, dtype=np.int64)
    if P > 1:
        heads = n + np.arange(k) * (P - 1)
        dep_idx[heads] = n - 1
    dep_ptr = np.concatenate([[0], np.arange(m)]).astype(np.int64)  # one predecessor each but the first
    flows = Flows(f_src, f_dst, np.full(m, schedule.block_frac), np.zeros(m), np.full(m, np.inf),
                  np.zeros(m, dtype=np.int64), dep_ptr, dep_idx[1:])
    return ChainFlows(flows, n, P, k)
