"""Analytical network model: a schedule's time on a topology, step by step.

Each step's transfers are routed onto links; a sparse links x transfers incidence matrix turns
transfer sizes into link loads with one matrix-vector product. Two models:

- congestion-aware: a step lasts as long as its most loaded link needs (load / bandwidth),
  plus the longest path latency among its transfers (sum of link latencies on the path);
- congestion-unaware (as ASTRA-sim's analytical backend): transfers do not share; each takes
  its path latency plus bytes / (slowest link bandwidth on its path); the step lasts as long
  as its slowest transfer.

Steps run one after another (lock-step). A repeated `Step` is routed and costed once: its
repetitions have identical sources, destinations and sizes. Costs are linear in the message
size, so one routing pass prices every size of a sweep.

A streaming schedule (`Schedule.streaming`, in-network reduction) is not lock-step: each of its
flows (`network.dataflow.streaming_flows`) takes its tree's depth in latency plus its bytes over
the slowest link of its tree, and serial flows add up, the same answer the flow model gives for
it alone. An endpoint injection limit (`injection`, bytes/s per NPU) bounds what each NPU can put
on its links for the collective: a step lasts at least the bytes an NPU sends in it over that rate.

`AnalyticalModel` is this module behind the network-model interface (`network.model`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..ir import Schedule, Step, lane_total
from ..topology.graph import Topology
from ..errors import ConfigError
from .flow import FlowResult, Flows, successors

if TYPE_CHECKING:
    import scipy.sparse as sp

MODELS = ("congestion-aware", "congestion-unaware")
MODEL_ALIASES = {"analytical": "congestion-aware", "aware": "congestion-aware", "unaware": "congestion-unaware",
                 "analytical-unaware": "congestion-unaware"}


def normalize_model(name: str) -> str:
    """The canonical name of an analytical model.

    Parameters
    ----------
    name : str
        congestion-aware, congestion-unaware or an alias (analytical = aware, unaware,
        analytical-unaware); any case, `_` or `-`.

    Returns
    -------
    str
        congestion-aware or congestion-unaware; ConfigError for anything else.
    """
    key = str(name).strip().lower().replace("_", "-")
    key = MODEL_ALIASES.get(key, key)
    if key not in MODELS:
        raise ConfigError("model", name, f"accepted: {', '.join(MODELS)} (analytical = congestion-aware)")
    return key


class RoutedStep:
    """One step shape of a placed schedule, routed on a topology (`route_step`).

    Parameters
    ----------
    repeat : int
        Repetitions of the step.
    incidence : scipy.sparse.csr_matrix or callable
        [links, transfers]: the link use of each transfer per byte of it (1 on its path's links); or
        a function of no arguments that builds that matrix, called on first access of `incidence`
        (the straight-path fast route of `route_step` has no hop list to build it from otherwise).
    frac : float array
        Size of each transfer per byte of collective size.
    path_latency : float array
        Sum of the link latencies on each transfer's path, s.
    path_bw : float array
        Slowest link bandwidth on each transfer's path, bytes/s (inf: no hop).
    src_npu : int array, optional
        Topology NPU sending each transfer (-1: a switch), for injection limits.
    link_frac : float array [links], optional
        `incidence @ frac` when the router already has it (bytes per byte of collective size).
    used_links : int array or callable, optional
        Links that at least one transfer crosses (rows of `incidence` with an entry), ascending;
        or a function of no arguments that gives them on each access (not kept: it is cheap, and
        32 steps of a 65,536-NPU torus would otherwise hold 64 MB of them).
    sent : float array [NPUs] or callable, optional
        Bytes each topology NPU sends per byte of collective size, when the rows are not one per
        transfer (a full mesh's rows are its distinct paths: `full_mesh_route`; a composed step's
        the distinct rows of its parts), or a function of no arguments that gives it (called on
        first use); default: summed from `src_npu` and `frac`.
    parts : tuple of composed_route.PartRoute, optional
        A composed step's parts (`network.composed_route`): then `link_frac` and `sent` are
        functions called on every access, never kept (a chain's 32,766 steps would hold 16 GB).
    link_time : float, optional
        The busiest link's seconds per byte of collective size, when known without `link_frac`.
    """

    def __init__(self, repeat: int, incidence, frac: np.ndarray, path_latency: np.ndarray, path_bw: np.ndarray,
                 src_npu: np.ndarray | None = None, *, link_frac: np.ndarray | None = None,
                 used_links=None, sent: np.ndarray | None = None, parts: tuple | None = None,
                 link_time: float | None = None):
        self.repeat = repeat
        self._incidence = incidence
        self.frac = frac  # transfer size / collective size
        self.path_latency = path_latency  # s, per transfer
        self.path_bw = path_bw  # bytes/s, slowest link on each transfer's path (inf: no hop)
        self.src_npu = src_npu  # topology NPU sending each transfer (-1: a switch), for injection limits
        self._link_frac = link_frac
        self._used_links = used_links
        self._sent = sent
        self.parts = parts
        self._link_time = link_time
        self._link_time_of: tuple | None = None  # (link_bw, its busiest link): a composed step's loads are built per call

    def npu_sent(self, n_npus: int) -> np.ndarray:
        """Bytes each topology NPU sends in one repetition, per byte of collective size (float array [n_npus])."""
        if callable(self._sent):
            if self.parts is not None:
                return self._sent()
            self._sent = self._sent()
        if self._sent is not None:
            return self._sent
        npu = self.src_npu >= 0
        return np.bincount(self.src_npu[npu], weights=self.frac[npu], minlength=n_npus)

    @property
    def incidence(self) -> sp.csr_matrix:
        """[links, transfers] link use per byte of each transfer (built on first use when deferred)."""
        if callable(self._incidence):
            self._incidence = self._incidence()
        return self._incidence

    @property
    def link_frac(self) -> np.ndarray:
        """Bytes on each link per byte of collective size."""
        if self._link_frac is None:
            return self.incidence @ self.frac
        if callable(self._link_frac):
            return self._link_frac()
        return self._link_frac

    def link_dims(self, link_dim: np.ndarray) -> tuple:
        """The network dimensions the step's links are in, ascending.

        Parameters
        ----------
        link_dim : int array [links]
            The topology's `link_dim`.

        Returns
        -------
        tuple of int
            A composed step: the union of its parts' (no link list built).
        """
        if self.parts is not None:
            return tuple(sorted(set().union(*(p.dims for p in self.parts))))
        return tuple(np.unique(link_dim[self.used_links]).tolist())

    def link_time(self, link_bw: np.ndarray) -> float:
        """The busiest link's seconds per byte of collective size: max of `link_frac` / `link_bw`.

        Parameters
        ----------
        link_bw : float array [links]
            The topology's link bandwidths, bytes/s.

        Returns
        -------
        float
            Seconds per byte (0 without links).
        """
        if self._link_time is not None:
            return self._link_time
        if self._link_time_of is not None and self._link_time_of[0] is link_bw:
            return self._link_time_of[1]
        t = float(np.max(self.link_frac / link_bw, initial=0.0))
        self._link_time_of = (link_bw, t)  # one scalar kept, not the per-link loads
        return t

    @property
    def used_links(self) -> np.ndarray:
        """Ids of the links at least one transfer crosses, ascending (zero-byte transfers count)."""
        if self._used_links is None:
            self._used_links = np.flatnonzero(np.diff(self.incidence.indptr))
        if callable(self._used_links):
            return self._used_links()
        return self._used_links


def route_step(topo: Topology, schedule: Schedule, step: Step, cache: dict | None = None) -> RoutedStep:
    """Route one step shape of a placed schedule.

    On rings, tori and meshes (dimension-order routing over ring, one-way ring and line
    dimensions of uniform links) every path is a straight segment per dimension, and link loads,
    path latencies and path bandwidths come from difference arrays along each ring
    (`_route_straight`, O(transfers + links)) instead of a list of every hop (p^1.5 hops for
    Swing on a 2-D torus); the results are bit-identical to the hop list's, and `incidence` is
    then built only if asked for. Other topologies list the hops.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        The schedule the step belongs to (placed, or on NPUs 0..p-1).
    step : Step
        One of its steps.
    cache : dict, optional
        Routes of the parts of composed steps, kept between calls (`route_schedule` passes one:
        a part shared by many composed steps is routed once).

    Returns
    -------
    RoutedStep
        Incidence, transfer sizes per byte, path latencies (s) and path bandwidths (bytes/s).
    """
    if step.composed:
        from .composed_route import route_composed

        return route_composed(topo, schedule, step, {} if cache is None else cache)
    if step.full_mesh or step.line_mesh:
        from .full_mesh_route import route_full_mesh, route_line_mesh

        routed = (route_full_mesh if step.full_mesh else route_line_mesh)(topo, schedule, step)
        if routed is not None:
            return routed
    src, dst = _endpoints(schedule, step)
    frac = schedule.transfer_fraction(step)
    src_npu = np.where(src < topo.n_npus, src, -1)
    fast = _route_straight(topo, src, dst, step.reduce, frac)
    if fast is not None:
        link_frac, used, lat, bw = fast
        # the closure keeps the schedule (already held), not copies of src and dst
        return RoutedStep(step.repeat, lambda: _route_hops(topo, *_endpoints(schedule, step), step)[0], frac, lat,
                          bw, src_npu, link_frac=link_frac, used_links=used)
    inc, lat, bw = _route_hops(topo, src, dst, step)
    return RoutedStep(step.repeat, inc, frac, lat, bw, src_npu)


def _endpoints(schedule: Schedule, step: Step) -> tuple[np.ndarray, np.ndarray]:
    """Topology nodes sending and receiving each transfer of `step`."""
    nodes = schedule.topology_nodes()
    return nodes[step.src], nodes[step.dst]


def _route_hops(topo: Topology, src: np.ndarray, dst: np.ndarray, step: Step):
    """The general route: every hop listed; (incidence [links, transfers], path latency s, path bw bytes/s)."""
    import scipy.sparse as sp  # lazy: scipy.sparse costs 0.1-0.2 s at start-up; only routing needs it

    ptr, links, use = topo.route_reducing(src, dst, step.reduce, step.first_block)
    tid, lat, bw = hop_paths(topo, ptr, links, use)
    return sp.csr_matrix((use, (links, tid)), shape=(topo.n_links, len(src))), lat, bw


def hop_paths(topo: Topology, ptr: np.ndarray, links: np.ndarray, use: np.ndarray):
    """Per transfer of a hop list (`Topology.route_reducing`): its path latency, the link
    latencies added in path order from 0, and its slowest link per byte of use.

    Parameters
    ----------
    topo : Topology
        The network.
    ptr, links, use : arrays
        `route_reducing`'s paths: CSR offsets [T + 1], link ids, use per byte of each entry.

    Returns
    -------
    (int64 array, float array [T], float array [T])
        The transfer of every entry, path latency (s), path bandwidth (bytes/s; inf: no hop).
    """
    n_t = len(ptr) - 1
    tid = np.repeat(np.arange(n_t), np.diff(ptr))
    lat = np.bincount(tid, weights=topo.link_lat[links], minlength=n_t)
    bw = np.full(n_t, np.inf)
    if len(links):
        np.minimum.at(bw, tid, topo.link_bw[links] / use)
    return tid, lat, bw


_STRAIGHT_KINDS = ("ring", "uniring", "line")


def _route_straight(topo: Topology, src: np.ndarray, dst: np.ndarray, reduce, frac: np.ndarray):
    """`route_step`'s numbers without a hop list, where every path is straight per dimension.

    Applies to a `DimensionOrderRouter` whose dimensions are all rings, one-way rings or lines,
    with one latency and one bandwidth per dimension, NPU endpoints, no switch reduction unit on
    the way, and transfer sizes whose per-link sums the hop list's sequential sums reproduce
    exactly (`_exact_link_sums`). Each transfer's path in dimension d is an interval of the
    ring (line) it is on then; a difference array per ring and direction, summed once, gives the
    bytes on every link. Its path latency and bandwidth depend only on its hop count per
    dimension.

    Parameters
    ----------
    topo : Topology
        The network.
    src, dst : int64 arrays [T]
        Topology nodes of each transfer.
    reduce : bool array [T]
        Whether each transfer is reduced at its destination (a reduction unit adds a hop).
    frac : float array [T]
        Bytes of each transfer per byte of collective size.

    Returns
    -------
    tuple or None
        (link_frac [links] bytes per byte of size, used link ids ascending (or a function giving
        them), path latency [T] s, path bandwidth [T] bytes/s, inf for no hop), equal bit for bit
        to what the hop list gives; None where the conditions above do not hold (the caller lists
        the hops).
    """
    n, n_t, dims = topo.n_npus, len(src), tuple(topo.dims)
    if n_t and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        return None  # switches or bad nodes: the general router handles (or rejects) them
    if topo.reduce_link is not None and n_t and (np.asarray(reduce, bool) & (topo.reduce_link[dst] >= 0)).any():
        return None
    per_dim = straight_dims(topo)
    if per_dim is None:
        return None
    lat_d, bw_d = per_dim
    router = topo.router
    exact = _exact_link_sums(frac)
    if exact is None:
        return None
    weight, unit, one = exact

    cs, cd = topo.coords(src), topo.coords(dst)
    strides = np.cumprod((1,) + dims[:-1])
    count = np.zeros(topo.n_links)  # transfers crossing each link (exact integers in float64)
    load = np.zeros(topo.n_links) if weight is not None else None  # sum of `weight` over them
    hops_all = np.zeros((n_t, len(dims)), dtype=np.int64)
    for d, kind in enumerate(router.kinds):
        size, st = dims[d], int(strides[d])
        a = cs[:, d]
        diff = cd[:, d] - a
        if not diff.any():
            continue
        # the node the transfer is at when dimension d starts (dims < d corrected, dims > d as at
        # src), with coordinate d set to 0: the first node of the ring it travels on
        line_node = src + (cd[:, :d] - cs[:, :d]) @ strides[:d] - a * st
        fwd = diff % size
        if kind == "ring":  # as DimensionOrderRouter: shortest direction, a half-way tie goes +
            plus = fwd <= size - fwd
            hops = np.where(plus, fwd, size - fwd)
        elif kind == "uniring":
            plus = np.ones(n_t, bool)
            hops = fwd
        else:
            plus = diff > 0
            hops = np.abs(diff)
        hops = np.where(diff != 0, hops, 0)
        hops_all[:, d] = hops
        m = hops > 0
        # ring id of each transfer in dimension d: node index with coordinate d removed
        line = (line_node // (st * size)) * st + line_node % st
        n_lines = n // size
        width = 2 * size + 1  # positions unrolled twice so that a wrapping interval is one interval
        for direction, sel in ((0, m & plus), (1, m & ~plus)):
            if not sel.any():
                continue
            h, s0, ln = hops[sel], a[sel], line[sel]
            # + crosses the links leaving positions a .. a+h-1; - those leaving a-h+1 .. a (shifted by size)
            lo = s0 if direction == 0 else s0 - h + 1 + size
            key = np.concatenate([ln * width + lo, ln * width + lo + h])
            per_node = []
            for w in (None,) if weight is None else (None, weight[sel]):
                ww = np.ones(len(h)) if w is None else w
                acc = np.bincount(key, weights=np.concatenate([ww, -ww]), minlength=n_lines * width)
                acc = np.cumsum(acc.reshape(n_lines, width), axis=1)
                folded = acc[:, :size] + acc[:, size:2 * size]  # exact: integers below 2**53
                # [line, position] -> node: lines are (outer, inner) with coordinate d in between
                per_node.append(folded.reshape(n // (st * size), st, size).transpose(0, 2, 1).reshape(n))
            links = router.step_link[:, d, direction]
            hit = per_node[0] > 0
            if (links[hit] < 0).any():
                raise ValueError("routing used a link that does not exist")
            np.add.at(count, links[hit], per_node[0][hit])
            if load is not None:
                np.add.at(load, links[hit], per_node[1][hit])
    used = np.flatnonzero(count > 0)
    if load is not None:
        link_frac = np.ldexp(load, unit)
    else:
        k = count[used].astype(np.int64)
        table = equal_sums(one, int(k.max(initial=0)))
        link_frac = np.zeros(topo.n_links)
        link_frac[used] = table[k]
    lat, bw = _path_lat_bw(hops_all, lat_d, bw_d)
    if np.array_equal(count > 0, link_frac > 0):  # no zero-byte transfer alone on a link: derive, do not keep
        return link_frac, lambda: np.flatnonzero(link_frac > 0), lat, bw
    return link_frac, used, lat, bw


def straight_dims(topo: Topology) -> tuple[list[float], list[float]] | None:
    """Per dimension the one link latency (s) and bandwidth (bytes/s) of a network whose every path is
    straight per dimension (`_route_straight`'s networks), or None.

    Parameters
    ----------
    topo : Topology
        The network.

    Returns
    -------
    (list of float, list of float) or None
        Latency and bandwidth of each dimension's links (a dimension without links: 0 and inf); None
        unless a `DimensionOrderRouter` routes over ring, one-way ring and line dimensions only,
        with one latency and one bandwidth per dimension.
    """
    from ..topology.graph import DimensionOrderRouter

    router = topo.router
    if not isinstance(router, DimensionOrderRouter) or any(k not in _STRAIGHT_KINDS for k in router.kinds):
        return None
    dims = tuple(topo.dims)
    if len(router.kinds) != len(dims) or router.step_link.shape[:2] != (topo.n_npus, len(dims)):
        return None
    lat_d, bw_d = [], []
    for d in range(len(dims)):  # one latency and bandwidth per dimension: then a path's depend on its hop counts only
        ids = router.step_link[:, d, :]
        ids = ids[ids >= 0]
        lat, bw = topo.link_lat[ids], topo.link_bw[ids]
        if len(ids) and (np.any(lat != lat[0]) or np.any(bw != bw[0])):
            return None
        lat_d.append(float(lat[0]) if len(ids) else 0.0)
        bw_d.append(float(bw[0]) if len(ids) else np.inf)
    return lat_d, bw_d


def equal_sums(x: float, most: int) -> np.ndarray:
    """Sums of k equal terms x added one by one from 0, as the sparse product and `np.add.at` add them.

    Parameters
    ----------
    x : float
        The term.
    most : int
        The largest k needed.

    Returns
    -------
    float array [most + 1]
        Entry k: x + x + ... (k terms), left to right (np.cumsum is strictly sequential, unlike
        np.sum's pairwise sum).
    """
    return np.concatenate([[0.0], np.cumsum(np.full(most, x))])


def _exact_link_sums(frac: np.ndarray):
    """How to reproduce, without ordering them, the hop list's per-link sums of transfer sizes.

    The sparse product adds a link's transfers one by one in transfer order. With one size x
    for all, k transfers give the k-th term of s_k = s_(k-1) + x, tabulated once. With
    sizes that are integer multiples of one power of two summing below 2**53 (dyadic fractions,
    as power-of-two schedules have), every partial sum is exact in any order.

    Parameters
    ----------
    frac : float array [T]
        Bytes per transfer per byte of collective size.

    Returns
    -------
    tuple or None
        (None, 0, x): one size x for all (the caller tabulates its sequential sums); or (weights,
        e, None): sizes = weights * 2**e with integer weights; None: neither (order matters).
    """
    if len(frac) == 0 or np.all(frac == frac[0]):
        return None, 0, float(frac[0]) if len(frac) else 0.0
    if not np.all(np.isfinite(frac)) or np.any(frac < 0):
        return None
    nz = frac[frac > 0]
    mant, expo = np.frexp(nz)
    ints = (mant * 2.0 ** 53).astype(np.int64)
    low = (ints & -ints).astype(np.float64)  # lowest set bit of each mantissa
    unit = int(np.min(expo - 53 + np.log2(low).astype(np.int64)))
    weight = np.ldexp(frac, -unit)
    if float(np.sum(weight)) >= 2.0 ** 53:
        return None
    return weight, unit, None


def _path_lat_bw(hops: np.ndarray, lat_d: list[float], bw_d: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Path latency (s) and bandwidth (bytes/s) of straight paths from their hop counts per dimension.

    The hop list adds a path's link latencies in path order (dimension 0's hops first) from 0;
    the same sequential sum is formed once per distinct hop-count vector, so the floats agree bit
    for bit. The bandwidth is the slowest dimension crossed (inf: no hop).
    """
    n_t = len(hops)
    if n_t == 0:
        return np.zeros(0), np.full(0, np.inf)
    # one integer key per hop-count vector (mixed radix); the distinct keys found by counting when
    # the key range is small (no sort), else by np.unique
    top = hops.max(axis=0) + 1
    radix = np.cumprod(np.concatenate([[1], top[:-1]])).astype(np.int64)
    key = hops @ radix
    if float(np.prod(top.astype(float))) <= 4 * n_t:
        keys = np.flatnonzero(np.bincount(key))
        where = np.zeros(int(key.max()) + 1, dtype=np.int64)
        where[keys] = np.arange(len(keys))
        inv = where[key]
    else:
        keys, inv = np.unique(key, return_inverse=True)
        inv = np.asarray(inv).reshape(-1)
    uniq = (keys[:, None] // radix[None, :]) % top[None, :]
    acc = np.zeros(len(uniq))
    ubw = np.full(len(uniq), np.inf)
    for d in range(hops.shape[1]):
        for k in range(int(uniq[:, d].max(initial=0))):
            acc = np.where(uniq[:, d] > k, acc + lat_d[d], acc)
        ubw = np.where(uniq[:, d] > 0, np.minimum(ubw, bw_d[d]), ubw)
    return acc[inv], ubw[inv]


def route_schedule(topo: Topology, schedule: Schedule) -> list[RoutedStep]:
    """Every step shape of a placed schedule, routed (`route_step`).

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo` (unplaced is accepted when it has no helper nodes).

    Returns
    -------
    list of RoutedStep
        One per `Schedule.steps` entry; ValueError for an unplaced schedule with helpers.
    """
    if schedule.nodes is None and schedule.n_nodes > topo.n_npus:
        raise ValueError("schedule with helper nodes must be placed on the topology first")
    cache: dict = {}
    if any(st.composed for st in schedule.steps):  # every part of the composed steps in one route
        from .composed_route import route_all_parts

        route_all_parts(topo, schedule, cache)
    return [route_step(topo, schedule, st, cache) for st in schedule.steps]


def step_times(topo: Topology, routed: RoutedStep, sizes: np.ndarray, model: str,
               injection: float | None = None) -> np.ndarray:
    """Time of one repetition of a step for each size.

    Parameters
    ----------
    topo : Topology
        The network.
    routed : RoutedStep
        The routed step shape.
    sizes : array
        Collective sizes, bytes.
    model : {"congestion-aware", "congestion-unaware"}
        The analytical model.
    injection : float, optional
        Bytes/s each NPU can inject for this collective (None or inf: no limit), see the module doc.

    Returns
    -------
    float array
        Seconds, one per size.
    """
    sizes = np.asarray(sizes, dtype=float)
    if routed.frac.size == 0:
        return np.zeros_like(sizes)
    limited = injection is not None and np.isfinite(injection) and routed.src_npu is not None
    if model == "congestion-aware":
        per_byte = routed.link_time(topo.link_bw)
        if limited:
            sent = routed.npu_sent(topo.n_npus)
            per_byte = max(per_byte, float(np.max(sent, initial=0.0)) / injection)
        lat = float(routed.path_latency.max())
        return lat + per_byte * sizes
    if model == "congestion-unaware":
        bw = routed.path_bw
        if limited:
            bw = np.where(routed.src_npu >= 0, np.minimum(bw, injection), bw)
        per_byte = np.where(np.isfinite(bw), routed.frac / bw, 0.0)
        # the upper envelope of lat + per_byte*size only needs the distinct pairs; one complex per
        # pair (exact: the parts are stored, not computed) sorts far faster than unique rows
        pair = np.empty(len(per_byte), dtype=complex)
        pair.real, pair.imag = routed.path_latency, per_byte
        pairs = np.unique(pair)
        return np.max(pairs.real[:, None] + pairs.imag[:, None] * sizes[None, :], axis=0)
    raise ValueError(f"unknown model {model!r}; accepted: {', '.join(MODELS)}")


@dataclass(frozen=True, eq=False)
class CollectiveTiming:
    """Times of one schedule for several sizes (`time_schedule`).

    Parameters
    ----------
    schedule : Schedule
        The placed schedule.
    model : str
        congestion-aware or congestion-unaware.
    sizes, times : float arrays
        Collective sizes (bytes) and their completion times (s).
    step_time : float array
        [step shapes, sizes]: one repetition of each step shape, s (streams: one row per flow).
    repeats : int array
        Repetitions of each step shape.
    link_frac : float array
        Bytes each link carries per byte of collective size, whole collective.
    """

    schedule: Schedule
    model: str
    sizes: np.ndarray  # bytes
    times: np.ndarray  # s
    step_time: np.ndarray  # [n_step_shapes, n_sizes] time of one repetition (streams: one row per flow)
    repeats: np.ndarray  # [n_step_shapes]
    link_frac: np.ndarray  # [n_links] bytes carried per byte of size, whole collective

    def link_bytes(self, size: float) -> np.ndarray:
        """Bytes each link carries for a collective of `size` bytes.

        Parameters
        ----------
        size : float
            Collective size, bytes.

        Returns
        -------
        float array [links]
            Bytes per link, whole collective.
        """
        return self.link_frac * size


def phases_of(topo: Topology, steps, routed) -> list[np.ndarray]:
    """Indices of the step shapes of each phase.

    A phase is a run of steps on the same set of network dimensions (a block of lanes counts as
    one step on the union of its lanes' dimensions), e.g. a hierarchical all-reduce on a 2-D
    network: reduce-scatter on dimension 0, on dimension 1, then all-gather back; a bucket
    all-reduce, whose blocks all use every dimension, is one phase (chunks cannot pipeline
    through links they share).

    Parameters
    ----------
    topo : Topology
        The network (`link_dim` names each link's dimension).
    steps : sequence of Step
        The schedule's steps.
    routed : sequence of RoutedStep
        The same steps, routed.

    Returns
    -------
    list of int64 array
        Step indices of each phase, in order.
    """
    dims = [r.link_dims(topo.link_dim) for r in routed]
    block_dims: dict = {}  # a block of lanes runs its lanes at once: its phase is the union of their dimensions
    for st, d in zip(steps, dims):
        if st.lane is not None:
            block_dims[st.lane[0]] = tuple(sorted(set(block_dims.get(st.lane[0], ())) | set(d)))
    keys = [block_dims[st.lane[0]] if st.lane is not None else d for st, d in zip(steps, dims)]
    out: list[list[int]] = []
    prev = object()
    for i, k in enumerate(keys):
        if k != prev or not out:
            out.append([])
        out[-1].append(i)
        prev = k
    return [np.array(x, dtype=np.int64) for x in out]


class AnalyticalCollective:
    """A placed schedule prepared for the analytical model: routed once, priced for any size.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`.
    model : {"congestion-aware", "congestion-unaware"}
        The analytical model (aliases accepted).
    step_overhead : float
        Fixed cost per lock-step step (per flow of a stream), s.
    injection : float, optional
        Bytes/s each NPU can inject for this collective (None or inf: no limit).
    """

    def __init__(self, topo: Topology, schedule: Schedule, model: str = "congestion-aware",
                 step_overhead: float = 0.0, injection: float | None = None):
        self.topo, self.schedule, self.model = topo, schedule, normalize_model(model)
        self.step_overhead, self.injection = float(step_overhead), injection
        if schedule.nodes is None and schedule.n_nodes > topo.n_npus:
            raise ValueError("schedule with helper nodes must be placed on the topology first")
        if schedule.streaming:
            self._stream_setup()
        else:
            self.routed = route_schedule(topo, schedule)
            self.phases = phases_of(topo, schedule.steps, self.routed)

    def _stream_setup(self) -> None:
        from .dataflow import streaming_flows
        from .streams import serial_streams

        topo = self.topo
        self.routed = None
        serial = serial_streams(topo, self.schedule)
        if serial is not None:  # p serial streams, from their paths (never p x p link entries)
            inv_bw = 1.0 / topo.link_bw
            if self.injection is not None:
                inv_bw = np.where(topo.link_src < topo.n_npus, np.maximum(inv_bw, 1.0 / self.injection), inv_bw)
            each = 1.0 / serial.p
            self.phases = [np.arange(serial.p)]
            self._stream_per_byte = each * serial.slowest(inv_bw)[0]
            self._stream_lat = serial.latency
            self._stream_link_frac = serial.link_streams() * each
            return
        f = streaming_flows(topo, self.schedule, 1.0)
        self.phases = [np.arange(len(f))]
        links = f.route_links
        use = np.ones(len(links)) if f.route_weight is None else np.asarray(f.route_weight, float)
        inv_bw = use / topo.link_bw[links]
        if self.injection is not None:  # links leaving an NPU carry what it injects
            inv_bw = np.where(topo.link_src[links] < topo.n_npus, np.maximum(inv_bw, 1.0 / self.injection), inv_bw)
        self._stream_per_byte = f.size * np.maximum.reduceat(inv_bw, f.route_ptr[:-1])  # s per byte of size
        self._stream_lat = f.latency
        ent = np.repeat(np.arange(len(f)), np.diff(f.route_ptr))
        self._stream_link_frac = np.bincount(links, weights=f.size[ent] * use, minlength=topo.n_links)

    def _per_repetition(self, sizes: np.ndarray) -> np.ndarray:
        if self.routed is None:
            return self._stream_lat[:, None] + self.step_overhead + self._stream_per_byte[:, None] * sizes[None, :]
        if not self.routed:
            return np.zeros((0, len(sizes)))
        return np.stack([step_times(self.topo, r, sizes, self.model, self.injection) + self.step_overhead
                         for r in self.routed])

    def _repeats(self) -> np.ndarray:
        if self.routed is None:
            return np.ones(len(self._stream_lat), dtype=int)
        return np.array([r.repeat for r in self.routed], dtype=int)

    def step_costs(self, sizes) -> np.ndarray:
        """Each step shape's time, all its repetitions (stream: each flow's time).

        Parameters
        ----------
        sizes : float or array
            Collective sizes, bytes.

        Returns
        -------
        float array [step shapes, sizes]
            Seconds.
        """
        sizes = np.atleast_1d(np.asarray(sizes, dtype=float))
        return self._per_repetition(sizes) * self._repeats()[:, None]

    def times(self, sizes) -> np.ndarray:
        """Completion time for each size.

        Parameters
        ----------
        sizes : float or array
            Collective sizes, bytes.

        Returns
        -------
        float array
            Seconds, one per size.
        """
        cost = self.step_costs(sizes)
        if self.routed is None:
            return cost.sum(axis=0)  # serial flows
        idx = range(len(self.schedule.steps))
        return lane_total(self.schedule.steps, cost, self._lane_floor(idx, np.atleast_1d(np.asarray(sizes, float))))

    def _lane_floor(self, idx, sizes: np.ndarray) -> dict | None:
        """Block id -> the time an NPU's injection limit imposes on a block of concurrent lanes:
        what it sends in all of them together over the limit (each lane alone only sees its own)."""
        if self.injection is None or not np.isfinite(self.injection):
            return None
        sent: dict = {}
        for i in idx:
            st, r = self.schedule.steps[i], self.routed[i]
            if st.lane is None or r.src_npu is None:
                continue
            per = r.npu_sent(self.topo.n_npus) * r.repeat
            sent[st.lane[0]] = sent.get(st.lane[0], 0.0) + per
        return {k: float(np.max(v, initial=0.0)) / self.injection * sizes for k, v in sent.items()}

    def phase_times(self, size: float) -> np.ndarray:
        """Time of each phase for one size (they add up to `times`).

        Parameters
        ----------
        size : float
            Collective size, bytes.

        Returns
        -------
        float array
            Seconds, one per phase (`phases_of`; one for a stream).
        """
        cost = self.step_costs([size])
        if self.routed is None:
            return np.array([float(cost.sum())])
        one = np.array([float(size)])
        return np.array([float(lane_total([self.schedule.steps[i] for i in idx], cost[idx],
                                          self._lane_floor(idx, one))[0]) for idx in self.phases])

    @property
    def link_frac(self) -> np.ndarray:
        """Bytes each link carries per byte of collective size."""
        if self.routed is None:
            return self._stream_link_frac
        from .composed_route import total_link_frac

        return total_link_frac(self.routed, self.topo.n_links)

    def timing(self, sizes) -> CollectiveTiming:
        """Everything `time_schedule` reports.

        Parameters
        ----------
        sizes : float or array
            Collective sizes, bytes.

        Returns
        -------
        CollectiveTiming
        """
        sizes = np.atleast_1d(np.asarray(sizes, dtype=float))
        return CollectiveTiming(self.schedule, self.model, sizes, self.times(sizes), self._per_repetition(sizes),
                                self._repeats(), self.link_frac)


def time_schedule(topo: Topology, schedule: Schedule, sizes, model: str = "congestion-aware",
                  step_overhead: float = 0.0) -> CollectiveTiming:
    """Time `schedule` on `topo` for every size with an analytical model.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo` (`build_schedule`).
    sizes : float or array
        Collective sizes, bytes.
    model : str
        congestion-aware (= analytical) or congestion-unaware.
    step_overhead : float
        A fixed cost per lock-step step, s (the alpha of an alpha-beta model: software and NIC
        start-up).

    Returns
    -------
    CollectiveTiming
        Times (s) per size, per step shape, and the bytes each link carries.

    Examples
    --------
    >>> import math
    >>> from fabricsim.topology import parse_topology
    >>> from fabricsim.collectives.api import build_schedule
    >>> topo = parse_topology("ring:8", "100GB/s", "0ns")
    >>> t = time_schedule(topo, build_schedule(topo, "all-reduce", "ring"), [2**20, 2**30])
    >>> math.isclose(t.times[1], 2 * 7 / 8 * 2**30 / 100e9)   # 2 (p-1)/p x size / bandwidth
    True
    >>> float(t.link_bytes(2**30).max()) == 14 * 2**30 / 8   # 14 steps of size/p on the busiest link
    True
    """
    return AnalyticalCollective(topo, schedule, model, step_overhead).timing(sizes)


@dataclass(frozen=True)
class AnalyticalModel:
    """The analytical models behind the network-model interface (`network.model`).

    Parameters
    ----------
    congestion_aware : bool
        True: a step lasts as long as its most loaded link needs; False: transfers do not share
        links (ASTRA-sim's congestion-unaware backend).
    step_overhead : float
        Fixed cost per lock-step step, s.
    """

    congestion_aware: bool = True
    step_overhead: float = 0.0
    shares_links = False  # collectives are priced alone; the engine does not share links between them
    streams = True  # a streaming schedule is priced as streams through its switches

    @property
    def name(self) -> str:
        """The registered model name: congestion-aware or congestion-unaware."""
        return "congestion-aware" if self.congestion_aware else "congestion-unaware"

    def collective(self, topo: Topology, schedule: Schedule, injection: float | None = None) -> AnalyticalCollective:
        """`schedule` prepared for pricing at any size (see `AnalyticalCollective`).

        Parameters
        ----------
        topo : Topology
            The network.
        schedule : Schedule
            Placed on `topo`.
        injection : float, optional
            Bytes/s each NPU's endpoint can inject (None: no limit).

        Returns
        -------
        AnalyticalCollective
        """
        return AnalyticalCollective(topo, schedule, self.name, self.step_overhead, injection)

    def p2p(self, topo: Topology, src: int, dst: int, size: float) -> float:
        """A transfer alone: its path latency plus `size` over the slowest link of its route.

        Parameters
        ----------
        topo : Topology
            The network.
        src, dst : int
            Topology node ids.
        size : float
            Bytes.

        Returns
        -------
        float
            Seconds (plus `step_overhead`); 0 for src == dst or no bytes.
        """
        if src == dst or size <= 0:
            return 0.0
        _, links = topo.route([src], [dst])
        bw = float(topo.link_bw[links].min()) if len(links) else np.inf
        return float(topo.link_lat[links].sum()) + size / bw + self.step_overhead

    def flows(self, topo: Topology, flows: Flows, record_timeline: bool = False) -> FlowResult:
        """A set of flows in lock-step levels.

        A flow's level is one more than its deepest predecessor's; a level starts when the previous
        one has ended (and not before its flows' start times) and lasts like one step of this model
        (congestion-aware: the most loaded link's bytes over its bandwidth plus the longest latency;
        unaware: its slowest flow alone). Caps and priorities are not used.

        Parameters
        ----------
        topo : Topology
            The network.
        flows : Flows
            The flows (routes, weights and latencies used when given).
        record_timeline : bool
            Accepted for the interface; no timeline is recorded.

        Returns
        -------
        FlowResult
            `events` is the number of levels; ConfigError when dependencies form a cycle.
        """
        return _flow_levels(topo, flows, self.congestion_aware, self.step_overhead)


def _flow_levels(topo: Topology, flows: Flows, aware: bool, overhead: float) -> FlowResult:
    n = len(flows)
    if flows.route_ptr is not None:
        ptr, links = np.asarray(flows.route_ptr, np.int64), np.asarray(flows.route_links, np.int64)
    else:
        ptr, links = topo.route(flows.src, flows.dst)
    w = np.ones(len(links)) if flows.route_weight is None else np.asarray(flows.route_weight, float)
    tid = np.repeat(np.arange(n), np.diff(ptr))
    lat = np.bincount(tid, weights=topo.link_lat[links], minlength=n)
    if flows.latency is not None:
        lat = np.where(np.isnan(flows.latency), lat, flows.latency)
    level = _levels(flows)
    entry_level = level[tid]
    entry_bytes = flows.size[tid] * w
    flow_bw = np.full(n, np.inf)  # each flow alone: its slowest (weighted) link
    np.minimum.at(flow_bw, tid, topo.link_bw[links] / w)
    start = np.zeros(n)
    finish = np.zeros(n)
    link_bytes = np.zeros(topo.n_links)
    link_busy = np.zeros(topo.n_links)
    t = 0.0
    for lv in range(int(level.max(initial=-1)) + 1):
        idx = np.flatnonzero(level == lv)
        t = max(t, float(flows.start[idx].max()))
        ent = entry_level == lv
        load = np.bincount(links[ent], weights=entry_bytes[ent], minlength=topo.n_links)
        if aware:
            dur = float(np.max(load / topo.link_bw, initial=0.0)) + float(lat[idx].max(initial=0.0))
            end = np.full(len(idx), t + dur + overhead)
        else:
            alone = lat[idx] + np.where(np.isfinite(flow_bw[idx]), flows.size[idx] / flow_bw[idx], 0.0)
            end = t + alone + overhead
        start[idx], finish[idx] = t, end
        link_bytes += load
        link_busy += np.where(load > 0, float(end.max()) - t, 0.0)
        t = float(end.max())
    return FlowResult(start, finish, finish, link_bytes, link_busy, int(level.max(initial=-1)) + 1)


def _levels(flows: Flows) -> np.ndarray:
    """Dependency depth of every flow (0: no predecessors); ConfigError on a cycle."""
    n = len(flows)

    succ_ptr, succ = successors(flows.dep_ptr, flows.dep_idx)
    waiting = np.diff(flows.dep_ptr).copy()
    level = np.zeros(n, dtype=np.int64)
    frontier = np.flatnonzero(waiting == 0)
    seen = 0
    while len(frontier):
        seen += len(frontier)
        a, c = succ_ptr[frontier], succ_ptr[frontier + 1] - succ_ptr[frontier]
        src = np.repeat(frontier, c)
        nxt = succ[np.repeat(a - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))]
        np.maximum.at(level, nxt, level[src] + 1)
        np.subtract.at(waiting, nxt, 1)
        frontier = np.unique(nxt[waiting[nxt] == 0])
    if seen < n:
        raise ConfigError("flows", f"{n - seen} flows", "never start: their predecessors form a cycle")
    return level


@dataclass(frozen=True)
class Deficiency:
    """The Swing paper's deficiencies of an all-reduce schedule on a network (spec swing.md §3).

    T = alpha log2(p) Lambda + (n/D) beta Psi Xi.

    Parameters
    ----------
    latency : float
        Lambda: lock-step steps / log2 p.
    bandwidth : float
        Psi: sum over steps of the largest message, in units of n/D (n: the vector's bytes).
    congestion : float
        Xi: sum over steps of the busiest link's bytes / sum of the largest messages.
    """

    latency: float  # Lambda: lock-step steps / log2 p
    bandwidth: float  # Psi: sum over steps of the largest message, in units of n/D
    congestion: float  # Xi: sum over steps of the busiest link's bytes / sum of the largest messages


def deficiencies(topo: Topology, schedule: Schedule, dims: int | None = None,
                 routed: list[RoutedStep] | None = None) -> Deficiency:
    """Lambda, Psi and Xi of a schedule on a network, from its routing.

    Psi is what the messages alone cost (one message per link per step), Xi how much more the
    busiest link carries because messages share it.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo`.
    dims : int, optional
        D (default: the topology's dimensions larger than 1).
    routed : list of RoutedStep, optional
        `route_schedule(topo, schedule)`, if the caller has it.

    Returns
    -------
    Deficiency
    """
    D = dims or max(1, sum(1 for d in topo.dims if d > 1))
    routed = route_schedule(topo, schedule) if routed is None else routed
    per = np.array([[r.repeat * float(r.frac.max()), r.repeat * float(r.link_frac.max())] if r.frac.size else [0.0, 0.0]
                    for r in routed]).reshape(-1, 2)
    msg_sum = float(lane_total(schedule.steps, per[:, :1])[0]) if len(per) else 0.0
    link_sum = float(lane_total(schedule.steps, per[:, 1:])[0]) if len(per) else 0.0
    return Deficiency(schedule.n_steps / math.log2(schedule.p), msg_sum * D, link_sum / msg_sum if msg_sum else 1.0)
