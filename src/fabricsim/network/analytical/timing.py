"""The analytical model's timing: a routed schedule priced for any size, step by step.

Two models:

- congestion-aware: a step lasts as long as its most loaded link needs (load / bandwidth),
  plus the longest path latency among its transfers (sum of link latencies on the path);
- congestion-unaware (as ASTRA-sim's analytical backend): transfers do not share; each takes
  its path latency plus bytes / (slowest link bandwidth on its path); the step lasts as long
  as its slowest transfer.

Steps run one after another (lock-step). A repeated `Step` is routed (`analytical.route`) and
costed once: its repetitions have identical sources, destinations and sizes. Costs are linear in
the message size, so one routing pass prices every size of a sweep (`step_times`,
`AnalyticalCollective`, `time_schedule`).

A streaming schedule (`Schedule.streaming`, in-network reduction) is not lock-step: each of its
flows (`network.lowering.dataflow.streaming_flows`) takes its tree's depth in latency plus its bytes over
the slowest link of its tree, and serial flows add up, the same answer the flow model gives for
it alone. An endpoint injection limit (`injection`, bytes/s per NPU) bounds what each NPU can put
on its links for the collective: a step lasts at least the bytes an NPU sends in it over that rate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ConfigError
from ...ir import Schedule, lane_total
from ...topology.graph import Topology
from . import mesh_route  # noqa: F401 - importing it registers the mesh step router
from .route import RoutedStep, route_schedule
from .composed_route import total_link_frac  # importing it registers the composed step router

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
        from ..lowering.dataflow import streaming_flows
        from ..lowering.streams import serial_streams

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

