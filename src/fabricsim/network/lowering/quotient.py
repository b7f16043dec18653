"""A collective alone on a translation-invariant network, simulated one flow per orbit (exact).

On a torus or ring (`DimensionOrderRouter` over ring, uniring and fully connected dimensions: the
route from u to v depends only on v - u, a half-way tie always going +), translating every node
by g maps links to links of the same bandwidth and latency and routes to routes. When it also
maps the schedule onto itself -- every step's transfers onto that step's transfers, with one
permutation of the block ids (`pi_g`) for the whole schedule -- it maps the dataflow
dependencies onto themselves, so the flow simulation is invariant too: max-min fair rates are
unique, hence equal on the flows of an orbit, and by induction over events every flow of an orbit
starts and finishes at the same time. One flow per orbit is then enough:

- the group H of such translations: per dimension d, the multiples of the smallest a_d dividing
  the size for which translating by a_d is a symmetry (`period`, `lowering.symmetry.symmetry_period`);
  H acts freely, so an orbit of transfers has |H| flows and an orbit of links |H| links;
- the orbit's flow is the transfer whose source has coordinates below `period` (a fundamental
  domain F of |F| = p / |H| nodes); it crosses the link orbits of its path, each link orbit a link
  of capacity bandwidth x |H|, at route weight |H| per hop (pipelined with chunk 0: one entry per
  link orbit at weight |H| x hops on it, and the path's latency given), so water-filling the
  quotient gives every orbit the rate each of its flows has in the full simulation;
- an orbit waits for the orbits of the transfers its representative waits for (block runs read at
  F joined with those written into F, `lowering.dataflow_deps.block_deps`; FIFO channels among representatives),
  which is exact because every flow of an orbit arrives at the same time. Where many orbit flows wait
  for the same many orbit flows (a direct all-reduce's all-gather for its whole reduce-scatter: (p-1)^2
  pairs), one zero-byte join flow on no link stands between them (`JOIN_ABOVE`): the same start times.

The group and its check (per step shape, never on expanded transfers; the block permutation
derived from what blocks mean, then verified) are `lowering.symmetry`'s. Where nothing holds (trees,
rooted or XOR-paired schedules, helper nodes, switches, meshes, partial groups, a channel used
twice in a step) `quotient_flows` returns None and the caller simulates every transfer.

Forms: a step is read through the `StepForm` protocol -- its transfers' arrays and the blocks of the
few at the domain (`StepForm.block_runs`: a grid's lines state them by their rule) -- unless its
form registers a lowering of its own in `ORBIT_LOWERINGS` (`@lowers`, by form name, as the analytical
model's step routers): the mesh form (`_mesh_step`), whose full mesh, n(n-1) pairs no array holds,
names its domain's pairs by its rule (`_full_mesh_step`), and whose grid's lines are read through
the protocol. A registry here, not a method on the form: the lowering reads the
quotient's domain, which is this model's, while what it asks of the form (its pairs, their order,
their blocks) stays in the form's module.

Only for a collective ALONE (`FlowModel.collective`): flows merged with other traffic break the
symmetry. Exactness: the same answer as simulating every transfer, up to floating-point rounding
(tests/test_flow_quotient.py: relative difference below 1e-9 in completion and per-flow times).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...ir import FORMS, Schedule, ordered_pairs
from ...topology.graph import Topology
from .dataflow_deps import block_deps, dep_csr, merge_runs, sorted_unique
from ..flow import Flows
from .symmetry import TranslationGrid, StepShape, symmetry_period


@dataclass(frozen=True, eq=False)
class Quotient:
    """One flow per orbit of transfers on one link per orbit of links (module doc).

    Parameters
    ----------
    topo : Topology
        The quotient network: node i is the i-th node of the fundamental domain, link j an orbit
        of links (capacity: link bandwidth x links in the orbit, bytes/s); explicit routes only.
    flows : Flows
        One flow per orbit, for a collective of 1 byte (sizes scale linearly), in step order.
    period : tuple of int
        a_d per dimension: translations by multiples of a_d along d are symmetries.
    orbit : int
        Flows per orbit of transfers (= links per orbit of links, |H|).
    joins : int
        Flows after the orbit flows that only join dependencies (zero bytes, no link): where many
        orbit flows wait for the same many writes (`lowering.dataflow_deps.block_deps`, `share_above`).
    """

    topo: Topology
    flows: Flows
    period: tuple[int, ...]
    orbit: int
    joins: int = 0


JOIN_ABOVE = 4_000_000  # (read, write) pairs of one shared writer list above which the quotient joins them


class _NoRouter:
    """The quotient's flows carry their link sets; nothing is routed on it."""

    def route(self, topo, src, dst):  # pragma: no cover - explicit routes only
        raise ValueError("a quotient topology routes nothing: its flows carry explicit link sets")


# ---- the quotient -------------------------------------------------------------------------------


class _Domain:
    """The fundamental domain of the translations by multiples of `period`."""

    def __init__(self, topo: Topology, schedule: Schedule, period: tuple[int, ...]):
        self.grid, self.a = TranslationGrid(topo), np.asarray(period, dtype=np.int64)
        self.nodes = schedule.topology_nodes()
        self.pos = np.empty(topo.n_npus, np.int64)
        self.pos[self.nodes] = np.arange(schedule.p)
        self.size = int(np.prod(self.a))  # |F|
        self.orbit = schedule.p // self.size  # |H|
        self.radix = np.cumprod(np.concatenate([[1], self.a[:-1]]))

    def inside(self, x: np.ndarray) -> np.ndarray:
        """Whether each topology node lies in the domain."""
        return np.all(self.grid.coords[x] < self.a, axis=1)

    def index(self, x: np.ndarray) -> np.ndarray:
        """The domain node each topology node's orbit holds, as 0..|F|-1."""
        return (self.grid.coords[x] % self.a) @ self.radix

    def offset(self, x: np.ndarray) -> np.ndarray:
        """The translation that brings each topology node into the domain, negated."""
        return self.grid.coords[x] // self.a * self.a

    def orbit_rep(self, sh: StepShape, tr: np.ndarray) -> np.ndarray:
        """The transfer of the same step whose source is in the domain, in the orbit of each of `tr`."""
        st = sh.st
        ts, td = self.nodes[st.src[tr]], self.nodes[st.dst[tr]]
        off = -self.offset(ts)
        rep = sh.find(self.pos[self.grid.shift(ts, off)], self.pos[self.grid.shift(td, off)])
        if rep is None:  # pragma: no cover - the period was checked on every step
            raise AssertionError("flow_quotient: a translated transfer is missing")
        return rep


ORBIT_LOWERINGS: dict[str, Callable] = {}
"""Form name (`StepForm.form`) -> the quotient's lowering of a step of that form, where reading its
transfers' arrays would list what the form states by rule (module doc, "forms"): fn(dom, schedule,
st) -> (rep sources, rep destinations (schedule nodes), rep sizes per byte of collective size,
reads, writes), reads and writes as (id, node, repetition, lo, hi) with ids counted from the step's
first orbit flow (repetition k's rep i is k x reps + i). A form without one is read by `_step_orbits`."""


def lowers(form: str) -> Callable:
    """Decorator: register the function as the quotient's lowering of the steps of form `form` (a
    name in `ir.FORMS`); ValueError for an unknown form or one another function lowers."""
    if form not in FORMS:
        raise ValueError(f"lowers: no step form {form!r} (registered: {', '.join(sorted(FORMS))})")

    def put(fn: Callable) -> Callable:
        had = ORBIT_LOWERINGS.get(form)
        if had is not None and had.__qualname__ != fn.__qualname__:
            raise ValueError(f"lowers: form {form!r} is lowered by {had.__qualname__}")
        ORBIT_LOWERINGS[form] = fn
        return fn
    return put


def _step_orbits(dom: _Domain, schedule: Schedule, st):
    """A step's orbit flows from its transfers' arrays and `StepForm.block_runs` (`ORBIT_LOWERINGS`
    for what it returns): the transfers whose source is in the domain (the reps), what they read,
    and the writes into the domain named by their orbit."""
    sh = StepShape(st, schedule.n_nodes, schedule.nblocks)
    reps = np.flatnonzero(dom.inside(dom.nodes[st.src]))
    n_r = len(reps)
    rep_pos = np.full(st.n_transfers, -1, np.int64)
    rep_pos[reps] = np.arange(n_r)
    k, j, lo, hi = _sel_runs(st, reps)
    read = (k * n_r + j, st.src[reps[j]], k, lo, hi)
    wr = np.flatnonzero(dom.inside(dom.nodes[st.dst]))  # writes into the domain, named by their orbit
    w_orbit = rep_pos[dom.orbit_rep(sh, wr)]
    k, j, lo, hi = _sel_runs(st, wr)
    write = (k * n_r + w_orbit[j], st.dst[wr[j]], k, lo, hi)
    return st.src[reps], st.dst[reps], schedule.transfer_fraction(st)[reps], read, write


@lowers("mesh")
def _mesh_step(dom: _Domain, schedule: Schedule, st):
    """A mesh step's orbit flows (`ORBIT_LOWERINGS`; `st` an `ir.mesh.MeshStep`): the full mesh's by
    its rule (`_full_mesh_step`), a grid's lines' from their arrays and rule (`_step_orbits`)."""
    return (_full_mesh_step if st.full else _step_orbits)(dom, schedule, st)


def _full_mesh_step(dom: _Domain, schedule: Schedule, st):
    """A full mesh's orbit flows without listing it (`st` an `ir.mesh.MeshStep`, `full`):
    the pairs whose source is in the domain, by its rule (`ordered_pairs`, `index_of`, `blocks_of`),
    in the listed order."""
    inside = np.flatnonzero(dom.inside(dom.nodes[: st.n]))  # ranks whose node is in the domain
    c, a = ordered_pairs(st.n, inside)  # (c in the domain, every other rank a)
    order = np.argsort(st.index_of(c, a), kind="stable")  # reps: c sends to a, in the listed order
    i, j = c[order], a[order]
    rep_key = st.index_of(i, j)  # ascending
    order = np.argsort(st.index_of(a, c), kind="stable")  # writes into the domain: a sends to c
    a, c = a[order], c[order]
    off = -dom.offset(dom.nodes[a])  # the translation that brings the source into the domain
    a2, c2 = dom.pos[dom.grid.shift(dom.nodes[a], off)], dom.pos[dom.grid.shift(dom.nodes[c], off)]
    w_rep = np.searchsorted(rep_key, st.index_of(a2, c2))
    size = np.full(len(i), 1 * schedule.block_frac)  # one block per transfer
    rb, wb = st.blocks_of(i, j), st.blocks_of(a, c)  # repetition 0: the step does not repeat
    read = (np.arange(len(i)), i, np.zeros(len(i), np.int64), rb, rb + 1)
    return i, j, size, read, (w_rep, c, np.zeros(len(a), np.int64), wb, wb + 1)


def _sel_runs(st, sel: np.ndarray):
    """Block runs of the transfers `sel` of a step at every repetition: (rep, index in sel, lo, hi),
    each transfer's runs maximal (`StepForm.block_runs`, `lowering.dataflow_deps.merge_runs`)."""
    k, j, lo, hi = st.block_runs(sel, np.arange(st.repeat, dtype=np.int64))
    n = max(len(sel), 1)
    t, lo, hi = merge_runs(k * n + j, lo, hi)
    return t // n, t % n, lo, hi


def _orbit_routes(topo: Topology, dom: _Domain, orbits: tuple, ts: np.ndarray, td: np.ndarray, merged: bool,
                  rate: float | None):
    """The quotient routes of orbit flows from topology nodes `ts` to `td`: (latency per flow, entries
    per flow, link orbit of each entry, its weight), on link orbits `orbits` = (canonical links, each
    link's orbit); merged: one entry per (flow, link orbit), else one per hop in path order; an
    injection `rate` puts the source's endpoint first."""
    orb, orbit_of = orbits
    n_r, H = len(ts), dom.orbit
    ptr, links = topo.route(ts, td)  # the same paths at every repetition
    hops = np.diff(ptr)
    fid = np.repeat(np.arange(n_r), hops)
    lat = np.bincount(fid, weights=topo.link_lat[links], minlength=n_r)
    if merged:  # one entry per (flow, link orbit): weight |H| x hops on it
        key = np.sort(fid * len(orb) + orbit_of[links])
        first = np.flatnonzero(np.concatenate([[True], key[1:] != key[:-1]]))
        cnt = np.diff(np.concatenate([first, [len(key)]]))
        fid, ent, w = key[first] // len(orb), key[first] % len(orb), H * cnt.astype(float)
    else:  # one entry per hop, in path order
        ent, w = orbit_of[links], np.full(len(links), float(H))
    if rate is not None:  # the source's endpoint first, as with_injection puts it
        out = np.flatnonzero(hops > 0)
        fid = np.concatenate([out, fid])
        ent = np.concatenate([len(orb) + dom.index(ts[out]), ent])
        w = np.concatenate([np.full(len(out), H / rate), w])
        order = np.argsort(fid, kind="stable")
        fid, ent, w = fid[order], ent[order], w[order]
    return lat, np.bincount(fid, minlength=n_r), ent, w


def _orbit_flows(topo: Topology, schedule: Schedule, dom: _Domain, orbits: tuple, merged: bool,
                 rate: float | None) -> tuple[dict, list, list]:
    """Every step's orbit flows, repetition by repetition: their columns (src, dst, fsrc, fdst, size,
    lat, n_ent, ent, w: lists of arrays to concatenate), and the reads and writes of their block runs
    as (flow, node, lock-step step, lo, hi)."""
    cols = {k: [] for k in ("src", "dst", "fsrc", "fdst", "size", "lat", "n_ent", "ent", "w")}
    reads, writes = [], []
    base = step0 = 0
    for st in schedule.steps:
        R = st.repeat
        r_src, r_dst, r_size, read, write = ORBIT_LOWERINGS.get(st.form, _step_orbits)(dom, schedule, st)
        n_r = len(r_src)
        reads.append((base + read[0], read[1], step0 + read[2], read[3], read[4]))
        writes.append((base + write[0], write[1], step0 + write[2], write[3], write[4]))
        ts, td = dom.nodes[r_src], dom.nodes[r_dst]
        lat, n_ent, ent, w = _orbit_routes(topo, dom, orbits, ts, td, merged, rate)
        for name, v in (("src", r_src), ("dst", r_dst), ("fsrc", dom.index(ts)),
                        ("fdst", dom.index(td)), ("size", r_size),
                        ("lat", lat), ("n_ent", n_ent), ("ent", ent), ("w", w)):
            cols[name].append(np.tile(v, R))
        base += R * n_r
        step0 += R
    return cols, reads, writes


def _joined_deps(cat: dict, n: int, reads: list, writes: list, nblocks: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The orbit flows' dependencies (`lowering.dataflow_deps.block_deps`, FIFO channels), with a join flow after
    them wherever many wait for the same many (`JOIN_ABOVE`): those are appended to `cat` (nothing
    to send, no link, a channel of their own each). Returns (dep_ptr, dep_idx, joins)."""
    cat_t = lambda i: np.concatenate([x[i] for x in reads] + [np.zeros(0, np.int64)])  # noqa: E731
    cat_w = lambda i: np.concatenate([x[i] for x in writes] + [np.zeros(0, np.int64)])  # noqa: E731
    reader, writer, (j_ptr, j_idx) = block_deps(tuple(cat_t(i) for i in range(5)), tuple(cat_w(i) for i in range(5)),
                                                nblocks, share_above=JOIN_ABOVE)
    n_j = len(j_ptr) - 1
    if n_j:
        writer = np.where(writer < 0, n - 1 - writer, writer)
        reader = np.concatenate([reader, n + np.repeat(np.arange(n_j), np.diff(j_ptr))])
        writer = np.concatenate([writer, j_idx])
        ch = -1 - np.arange(n_j)
        for name, v in (("src", ch), ("dst", ch), ("fsrc", 0), ("fdst", 0), ("size", 0.0), ("lat", 0.0), ("n_ent", 0)):
            cat[name] = np.concatenate([cat[name], np.broadcast_to(v, (n_j,))])
    dep_ptr, dep_idx = dep_csr(n + n_j, reader, writer, cat["src"], cat["dst"])
    return dep_ptr, dep_idx, n_j


def quotient_flows(topo: Topology, schedule: Schedule, *, mode: str = "pipelined", chunk: float = 0.0,
                   injection: float | None = None) -> Quotient | None:
    """A collective alone as one flow per orbit of transfers (module doc), or None.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`, run as dataflow (`lowering.dataflow.collective_flows`), alone.
    mode : {"pipelined", "store-and-forward"}
        The flow model's mode: pipelined with chunk 0 merges each path's hops on one link orbit
        into one weighted entry (and gives the path latency); otherwise one entry per hop, in path
        order, so per-hop timing is the full simulation's.
    chunk : float
        Pipeline fill packet, bytes (see `flow.simulate_flows`).
    injection : float, optional
        Bytes/s each NPU's endpoint can inject (`flow_model.with_injection`): an endpoint link
        orbit per domain node, charged at the flow's source.

    Returns
    -------
    Quotient or None
        None when no translation but the identity maps the schedule onto itself (or the network
        or schedule is not eligible): simulate the transfers themselves.

    Examples
    --------
    A ring all-reduce on 8 NPUs: 112 transfers, 14 orbits of 8 (every rotation is a symmetry):

    >>> from fabricsim.collectives.api import build_schedule
    >>> from fabricsim.topology import parse_topology
    >>> topo = parse_topology("ring:8", "50GB/s", "0ns")
    >>> q = quotient_flows(topo, build_schedule(topo, "all-reduce", "ring"))
    >>> q.period, q.orbit, len(q.flows), q.topo.n_links
    ((1,), 8, 14, 2)
    """
    period = symmetry_period(topo, schedule)
    if period is None:
        return None
    dom = _Domain(topo, schedule, period)
    rate = float(injection) if injection is not None and np.isfinite(injection) else None
    # link orbits: each link's canonical member (its source brought into the domain)
    canon = dom.grid.shift_links(np.arange(topo.n_links), -dom.offset(topo.link_src))
    orb = sorted_unique(canon)
    merged = mode == "pipelined" and chunk == 0
    cols, reads, writes = _orbit_flows(topo, schedule, dom, (orb, np.searchsorted(orb, canon)), merged, rate)
    cat = {k: np.concatenate(v) for k, v in cols.items()}
    n = len(cat["src"])
    dep_ptr, dep_idx, n_j = _joined_deps(cat, n, reads, writes, schedule.nblocks)
    route_ptr = np.concatenate([[0], np.cumsum(cat["n_ent"])]).astype(np.int64)
    flows = Flows(cat["fsrc"], cat["fdst"], cat["size"], dep_ptr=dep_ptr, dep_idx=dep_idx, route_ptr=route_ptr,
                  route_links=cat["ent"].astype(np.int64), latency=cat["lat"] if merged else None,
                  route_weight=cat["w"])
    return Quotient(_quotient_topology(topo, dom, orb, rate is not None), flows, period, dom.orbit, n_j)


def _quotient_topology(topo: Topology, dom: _Domain, orb: np.ndarray, endpoints: bool) -> Topology:
    """One link per link orbit (capacity x |H|), then one endpoint link per domain node when injecting."""
    H, k = dom.orbit, dom.size if endpoints else 0
    own = np.arange(k)
    return Topology(f"{topo.name}/translations{tuple(int(x) for x in dom.a)}", dom.size,
                    np.concatenate([dom.index(topo.link_src[orb]), own]),
                    np.concatenate([dom.index(topo.link_dst[orb]), own]),
                    np.concatenate([topo.link_bw[orb] * H, np.full(k, float(H))]),
                    np.concatenate([topo.link_lat[orb], np.zeros(k)]), _NoRouter(),
                    link_dim=np.concatenate([topo.link_dim[orb], np.full(k, -1)]))


def orbit_index(topo: Topology, schedule: Schedule, period: tuple[int, ...]) -> np.ndarray:
    """The quotient flow of every transfer, in `collective_flows` order (O(all transfers): for tests).

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`.
    period : tuple of int
        `Quotient.period`.

    Returns
    -------
    int64 array [transfers]
        Index into `Quotient.flows` of each transfer's orbit.
    """
    dom = _Domain(topo, schedule, period)
    out, base = [], 0
    for st in schedule.steps:
        sh = StepShape(st, schedule.n_nodes, schedule.nblocks)
        reps = np.flatnonzero(dom.inside(dom.nodes[st.src]))
        rep_pos = np.full(st.n_transfers, -1, np.int64)
        rep_pos[reps] = np.arange(len(reps))
        o = rep_pos[dom.orbit_rep(sh, np.arange(st.n_transfers))]
        out += [base + k * len(reps) + o for k in range(st.repeat)]
        base += st.repeat * len(reps)
    return np.concatenate(out) if out else np.zeros(0, np.int64)
