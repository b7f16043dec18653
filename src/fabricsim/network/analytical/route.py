"""The analytical model's core: one step routed onto links (`RoutedStep`), dispatching on the step's form.

A step's transfers are routed onto links; a sparse links x transfers incidence matrix turns
transfer sizes into link loads with one matrix-vector product. `route_step` looks the step's form
(`StepForm.form`) up in a registry of step routers (`register_step_router`): a stated form routes
by its rule where its router can (`analytical.mesh_route`: meshes, full or along a grid's lines, from
per-dimension counts; `analytical.composed_route`: a composed step from its parts), and every step without a router, or
whose router declines it, is routed as listed transfers, by straight segments where the network
states straight routes (`analytical.straight`) or hop by hop (`hop_paths`). The routers register
themselves when their modules are imported; this module imports none of them
(`network.analytical` does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from ...ir import Schedule, Step
from ...topology.graph import Topology
from .straight import route_straight

if TYPE_CHECKING:
    import scipy.sparse as sp


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
        transfer (a full mesh's rows are its distinct paths: `analytical.mesh_route`; a composed step's
        the distinct rows of its parts), or a function of no arguments that gives it (called on
        first use); default: summed from `src_npu` and `frac`.
    parts : tuple of composed_route.PartRoute, optional
        A composed step's parts (`network.analytical.composed_route`): then `link_frac` and `sent` are
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


# ---- the registry of step routers ---------------------------------------------------------------


@dataclass(frozen=True)
class StepRouter:
    """How the analytical model routes the steps of one form (`register_step_router`).

    Parameters
    ----------
    form : str
        The form's name (`StepForm.form`: mesh, composed, ...).
    route : callable
        `route(topo, schedule, step, cache) -> RoutedStep or None`: the step routed by its rule
        (link loads per byte of collective size, path latencies in s, bandwidths in bytes/s), or None
        where the rule does not apply (the step is then routed as listed transfers). `cache` is a
        dict kept over the steps of one schedule.
    prepare : callable, optional
        `prepare(topo, schedule, steps, cache) -> None`: called once per schedule by
        `route_schedule` with all its steps of this form, before any is routed (e.g. every part of
        the composed steps routed in one call into `cache`).
    """

    form: str
    route: Callable
    prepare: Callable | None = None


STEP_ROUTERS: dict[str, StepRouter] = {}
"""The registered step routers by form name (`StepRouter.form`)."""


def register_step_router(form: str, prepare: Callable | None = None) -> Callable:
    """Decorator: register a function as the analytical router of the steps of `form` (`StepRouter`).

    Parameters
    ----------
    form : str
        The form's name (`StepForm.form`).
    prepare : callable, optional
        `StepRouter.prepare`: called once per schedule with all its steps of the form.

    Returns
    -------
    callable
        The decorator; it returns the function unchanged. ValueError when another function
        already routes `form` (registering the same function again, as a module reload does,
        replaces it).
    """

    def register(route: Callable) -> Callable:
        had = STEP_ROUTERS.get(form)
        if had is not None and (had.route.__module__, had.route.__qualname__) != (route.__module__, route.__qualname__):
            raise ValueError(f"register_step_router: form {form!r} is routed by {had.route.__qualname__}")
        STEP_ROUTERS[form] = StepRouter(form, route, prepare)
        return route

    return register


# ---- routing ------------------------------------------------------------------------------------


def route_step(topo: Topology, schedule: Schedule, step: Step, cache: dict | None = None) -> RoutedStep:
    """Route one step shape of a placed schedule.

    A step whose form has a registered router (`STEP_ROUTERS`) is routed by it where it applies.
    Otherwise the step's listed transfers are routed: on rings, tori and meshes (the topology
    states straight routes, with one latency and bandwidth per dimension) every path is a straight
    segment per dimension, and link loads, path latencies and path bandwidths come from difference
    arrays along each ring (`analytical.straight.route_straight`, O(transfers + links)) instead of
    a list of every hop (p^1.5 hops for Swing on a 2-D torus); the results are bit-identical to the
    hop list's, and `incidence` is then built only if asked for. Other topologies list the hops.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        The schedule the step belongs to (placed, or on NPUs 0..p-1).
    step : StepForm
        One of its steps, in any form.
    cache : dict, optional
        Kept between calls for the step routers (`route_schedule` passes one: a part shared by
        many composed steps is routed once).

    Returns
    -------
    RoutedStep
        Incidence, transfer sizes per byte, path latencies (s) and path bandwidths (bytes/s).
    """
    router = STEP_ROUTERS.get(step.form)
    if router is not None:
        routed = router.route(topo, schedule, step, {} if cache is None else cache)
        if routed is not None:
            return routed
    src, dst = _endpoints(schedule, step)
    frac = schedule.transfer_fraction(step)
    src_npu = np.where(src < topo.n_npus, src, -1)
    fast = route_straight(topo, src, dst, step.reduce, frac)
    if fast is not None:
        link_frac, used, lat, bw = fast
        # the closure keeps the schedule (already held), not copies of src and dst
        return RoutedStep(step.repeat, lambda: _incidence(topo, schedule, step), frac, lat,
                          bw, src_npu, link_frac=link_frac, used_links=used)
    links, tid, use, lat, bw = _route_hops(topo, src, dst, step)
    # the link loads straight from the hop list: what `incidence @ frac` sums, in the same order
    # (entries by transfer), without a matrix whose row pointers span every link of the network
    link_frac = np.bincount(links, weights=use * frac[tid], minlength=topo.n_links)
    return RoutedStep(step.repeat, lambda: _incidence(topo, schedule, step), frac, lat, bw, src_npu,
                      link_frac=link_frac, used_links=np.unique(links))


def route_schedule(topo: Topology, schedule: Schedule) -> list[RoutedStep]:
    """Every step shape of a placed schedule, routed (`route_step`).

    The step routers that prepare (`StepRouter.prepare`) see all the schedule's steps of their form
    first, in step order.

    Parameters
    ----------
    topo : Topology
        The network.
    schedule : Schedule
        Placed on `topo` (unplaced is accepted when it has no helper nodes).

    Returns
    -------
    list of RoutedStep
        One per `Schedule.steps` entry (link loads per byte of size, latencies s, bandwidths
        bytes/s); ValueError for an unplaced schedule with helpers.
    """
    if schedule.nodes is None and schedule.n_nodes > topo.n_npus:
        raise ValueError("schedule with helper nodes must be placed on the topology first")
    cache: dict = {}
    by_form: dict[str, list] = {}
    for st in schedule.steps:
        by_form.setdefault(st.form, []).append(st)
    for form, steps in by_form.items():
        router = STEP_ROUTERS.get(form)
        if router is not None and router.prepare is not None:
            router.prepare(topo, schedule, steps, cache)
    return [route_step(topo, schedule, st, cache) for st in schedule.steps]


def _endpoints(schedule: Schedule, step: Step) -> tuple[np.ndarray, np.ndarray]:
    """Topology nodes sending and receiving each transfer of `step`."""
    nodes = schedule.topology_nodes()
    return nodes[step.src], nodes[step.dst]


def _route_hops(topo: Topology, src: np.ndarray, dst: np.ndarray, step: Step):
    """The general route: every hop listed; (link of each entry, its transfer, its use per byte,
    path latency s, path bw bytes/s)."""
    ptr, links, use = topo.route_reducing(src, dst, step.reduce, step.first_block)
    tid, lat, bw = hop_paths(topo, ptr, links, use)
    return links, tid, use, lat, bw


def _incidence(topo: Topology, schedule: Schedule, step: Step) -> sp.csr_matrix:
    """The step's incidence matrix [links, transfers] (use per byte of each transfer), routed again:
    built only for whoever asks for it (not kept routed: it spans every link of the network)."""
    import scipy.sparse as sp  # lazy: scipy.sparse costs 0.1-0.2 s at start-up; only the matrix needs it

    src, dst = _endpoints(schedule, step)
    links, tid, use, _, _ = _route_hops(topo, src, dst, step)
    return sp.csr_matrix((use, (links, tid)), shape=(topo.n_links, len(src)))


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
