"""A collective alone made of independent rings, each simulated on a ring of its own (exact).

Some schedules are unions of parts that touch nothing in common. Hamiltonian rings on a 2-D torus
run four ring all-reduces side by side, each on its own directed links (two edge-disjoint
Hamiltonian cycles, both directions) and on its own quarter of the blocks. No translation of the
torus maps them onto themselves (`lowering.symmetry`), yet each ring alone is invariant under rotation
along its own cycle. So:

- **parts**: transfers joined when they share a channel (FIFO order), a link of their route
  (rates), or a block range (dependencies: every id a transfer moves at any repetition, a rotating
  entry its whole aligned range; overlapping ranges are joined, which can only join more). Parts
  share no link, no channel and no block, hence neither rates nor dependencies: simulated side by
  side in one flow simulation, every flow keeps the time it has alone.
- **a part that is a ring**: its channels form one directed cycle through its m >= 3 nodes, each
  channel routed over exactly one link, its m links distinct and of one bandwidth and latency.
  Naming its nodes by position along the cycle maps it onto the same transfers on a one-direction
  ring of m nodes (`uniring`), link for link: the same flows share the same links at the same
  capacities, with the same dependencies (block ids moved down by the part's first id, a multiple
  of every rotation's range so the rotations stay aligned). Its flow times are the part's.
- that ring is translation-invariant: `lowering.quotient.quotient_flows` simulates one flow per orbit
  when its schedule is invariant too (a ring phase is, under rotation: 2(m - 1) orbit flows for an
  all-reduce instead of 2m(m - 1) transfers).

`ring_parts` returns the disjoint union of the parts' quotients, or None when the schedule has a
part that is not such a ring, or a part whose ring the quotient does not serve, or an endpoint
injection limit (every part's nodes share their endpoints), or steps not listed (`StepForm.listed`
False: a full or line mesh, a composed step): the caller then simulates every transfer. Decided in
`flow_model.FlowCollective`, after the torus's own translations (`lowering.quotient`) and only for a
collective alone. A listed step's layout (ids listed, or runs in range form) is its own to read:
`Step.id_spans` (every id an entry moves) and `Step.select` (a part's transfers as a step).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ...ir import Schedule, Step
from ...topology.builders.stack import stack
from ...topology.graph import Topology
from .dataflow import merge_flows
from ..flow import Flows
from .quotient import Quotient, _NoRouter, quotient_flows


@dataclass(frozen=True, eq=False)
class RingParts:
    """Independent ring parts, each one flow per orbit on its own ring, simulated side by side.

    Parameters
    ----------
    topo : Topology
        The parts' quotient networks side by side (nodes and links offset part by part).
    flows : Flows
        The parts' orbit flows, part by part, for a collective of 1 byte (sizes scale linearly).
    parts : tuple of Quotient
        Each part's quotient on its ring (`Quotient.orbit`: the ring's length).
    """

    topo: Topology
    flows: Flows
    parts: tuple[Quotient, ...]


def _parts(topo: Topology, schedule: Schedule):
    """Label every transfer (steps concatenated) with its part; also the channels and their links.

    Returns
    -------
    tuple
        (part label per transfer, per step its first transfer's index, each transfer's channel
        (index into the unique channel keys), the unique channel keys, the one link each crosses,
        number of parts, (transfer, lo, hi) of every entry's ids); None when a channel's route
        is not one link.
    """
    n, steps = schedule.n_nodes, schedule.steps
    first = np.cumsum([0] + [st.n_transfers for st in steps])
    N = int(first[-1])
    key = np.concatenate([st.src * n + st.dst for st in steps])
    chan, ch_of = np.unique(key, return_inverse=True)
    nodes = schedule.topology_nodes()
    u, v = nodes[chan // n], nodes[chan % n]
    adjacent = np.sort(topo.link_src * topo.n_nodes + topo.link_dst)
    at = np.minimum(np.searchsorted(adjacent, u * topo.n_nodes + v), len(adjacent) - 1)
    if not len(adjacent) or np.any(adjacent[at] != u * topo.n_nodes + v):
        return None  # a channel between nodes no link joins: not routed over one link (checked before routing)
    ptr, links = topo.route(u, v)
    if np.any(np.diff(ptr) != 1):
        return None  # a channel over more or fewer than one link: no part is a ring
    spans = [st.id_spans() for st in steps]  # every id each entry moves at any repetition
    t = np.concatenate([s[0] + f for s, f in zip(spans, first)])
    lo, hi = np.concatenate([s[1] for s in spans]), np.concatenate([s[2] for s in spans])
    # block classes: overlapping [lo, hi) joined by a sweep in order of lo
    order = np.argsort(lo, kind="stable")
    reach = np.maximum.accumulate(hi[order])
    cls = np.empty(len(lo), np.int64)
    cls[order] = np.cumsum(np.concatenate([[0], lo[order][1:] >= reach[:-1]])) if len(lo) else []
    C, L = len(chan), topo.n_links
    K = int(cls.max()) + 1 if len(cls) else 0
    a = np.concatenate([np.arange(N), N + np.repeat(np.arange(C), np.diff(ptr)), t])
    b = np.concatenate([N + ch_of, N + C + links, N + C + L + cls])
    V = N + C + L + K
    graph = coo_matrix((np.ones(len(a), np.int8), (a, b)), shape=(V, V)).tocsr()
    label = connected_components(graph, directed=False)[1][:N]
    used = np.unique(label)
    return np.searchsorted(used, label), first, ch_of, chan, links, len(used), (t, lo, hi)


def _part_step(st: Step, sel: np.ndarray, name: np.ndarray, lo: int) -> Step:
    """The transfers `sel` of a step, nodes renamed by `name`, block ids moved down by `lo`."""
    part = st.select(sel)
    return replace(part, src=name[part.src], dst=name[part.dst], blocks=part.blocks - lo)


def _ring_schedule(topo: Topology, schedule: Schedule, sel: list[np.ndarray], chans: np.ndarray,
                   links: np.ndarray, block_lo: int, block_hi: int):
    """The part's schedule on a uniring along its cycle, and that ring; None if it is no ring."""
    n = schedule.n_nodes
    src, dst = chans // n, chans % n
    m = len(chans)
    ring_nodes = np.unique(src)
    if m < 3 or len(ring_nodes) != m or not np.array_equal(np.unique(dst), ring_nodes):
        return None  # not one out- and one in-channel per node
    succ = np.full(n, -1, np.int64)
    succ[src] = dst
    name = np.full(n, -1, np.int64)
    x = int(ring_nodes[0])
    for i in range(m):  # walk the cycle: position along it
        if name[x] >= 0:
            return None  # a shorter cycle: not one ring through every node
        name[x] = i
        x = int(succ[x])
    bw, lat = topo.link_bw[links], topo.link_lat[links]
    if len(np.unique(links)) != m or np.any(bw != bw[0]) or np.any(lat != lat[0]):
        return None
    steps = [_part_step(st, s, name, block_lo) for st, s in zip(schedule.steps, sel) if len(s)]
    for st in steps:
        if st.shift is not None and st.repeat > 1 and np.any(block_lo % st.mod[st.shift % st.mod != 0]):
            return None  # moved down, a rotation would leave its aligned range
    owner = None
    if schedule.owner is not None and len(schedule.owner) == schedule.nblocks:
        own = name[schedule.owner[block_lo:block_hi]]
        owner = own if np.all(own >= 0) else None
    part = Schedule(schedule.collective, schedule.algorithm, m, block_hi - block_lo, tuple(steps),
                    block_frac=schedule.block_frac, owner=owner)
    return part, stack(("uniring",), (m,), float(bw[0]), float(lat[0]), name=f"uniring:{m}")


def ring_parts(topo: Topology, schedule: Schedule, *, mode: str = "pipelined", chunk: float = 0.0,
               injection: float | None = None) -> RingParts | None:
    """A collective alone as independent rings, each one flow per orbit (module doc), or None.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`, run as dataflow, alone.
    mode : {"pipelined", "store-and-forward"}
        The flow model's mode (`lowering.quotient.quotient_flows`).
    chunk : float
        Pipeline fill packet, bytes.
    injection : float, optional
        Bytes/s each NPU's endpoint can inject: with a limit the parts share their nodes'
        endpoints, so None is returned.

    Returns
    -------
    RingParts or None
        None when some part is not a ring the quotient serves: simulate the transfers themselves.

    Examples
    --------
    Hamiltonian rings on a 9x3 torus: four rings of 27 NPUs, 52 orbit flows each:

    >>> from fabricsim.collectives.api import build_schedule
    >>> from fabricsim.topology import parse_topology
    >>> topo = parse_topology("torus:9x3", "50GB/s", "0ns")
    >>> r = ring_parts(topo, build_schedule(topo, "all-reduce", "hamiltonian_rings"))
    >>> [q.orbit for q in r.parts], len(r.flows)
    ([27, 27, 27, 27], 208)
    """
    if injection is not None and np.isfinite(injection):
        return None
    if schedule.streaming or schedule.n_extra or not schedule.steps:
        return None
    if not all(st.listed for st in schedule.steps):  # stated steps (meshes, composed): not listed here
        return None
    found = _parts(topo, schedule)
    if found is None:
        return None
    part, first, ch_of, chan, links, n_parts, (ent_t, ent_lo, ent_hi) = found
    lo, hi = np.full(n_parts, np.iinfo(np.int64).max), np.full(n_parts, -1, np.int64)
    np.minimum.at(lo, part[ent_t], ent_lo)  # each part's blocks: [lo, hi)
    np.maximum.at(hi, part[ent_t], ent_hi)
    if np.any(hi < 0):
        return None  # a part that moves no block
    by_part = np.argsort(part, kind="stable")  # each part's transfers, ascending: one sort, not a scan per part
    bounds = np.searchsorted(part[by_part], np.arange(n_parts + 1))
    quotients = []
    for c in range(n_parts):
        tr = by_part[bounds[c]:bounds[c + 1]]
        cut = np.searchsorted(tr, first)
        sel = [tr[cut[i]:cut[i + 1]] - first[i] for i in range(len(schedule.steps))]
        mine = np.unique(ch_of[tr])
        got = _ring_schedule(topo, schedule, sel, chan[mine], links[mine], int(lo[c]), int(hi[c]))
        if got is None:
            return None
        q = quotient_flows(got[1], got[0], mode=mode, chunk=chunk)
        if q is None:
            return None
        quotients.append(q)
    return _side_by_side(topo, quotients)


def _side_by_side(topo: Topology, parts: list[Quotient]) -> RingParts:
    """The parts' quotient networks and flows as one (nodes, links and flow ids offset)."""
    node0 = np.cumsum([0] + [q.topo.n_npus for q in parts])
    link0 = np.cumsum([0] + [q.topo.n_links for q in parts])
    cat = lambda f: np.concatenate([f(q, i) for i, q in enumerate(parts)])  # noqa: E731
    union = Topology(f"{topo.name}/rings{len(parts)}", int(node0[-1]),
                     cat(lambda q, i: q.topo.link_src + node0[i]), cat(lambda q, i: q.topo.link_dst + node0[i]),
                     cat(lambda q, i: q.topo.link_bw), cat(lambda q, i: q.topo.link_lat), _NoRouter(),
                     link_dim=cat(lambda q, i: q.topo.link_dim))
    flows = [replace(q.flows, src=q.flows.src + node0[i], dst=q.flows.dst + node0[i],
                     route_links=q.flows.route_links + link0[i]) for i, q in enumerate(parts)]
    return RingParts(union, merge_flows(*flows, topo=union), tuple(parts))
