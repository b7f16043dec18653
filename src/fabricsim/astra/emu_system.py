"""ASTRA-sim emulation, part 2: the system layer of one NPU (`Sys`): per-tick event map, the
NPU<->memory bus, collectives split into streams of per-dimension phases, one queue per dimension
with at most `active-chunks-per-dimension` streams at once."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Callable

from ..errors import ConfigError
from .config import Impl
from .emu_algorithms import Algorithm, make_algorithm
from .emu_network import ALL_GATHER, ALL_REDUCE, CUSTOM, REDUCE_SCATTER

if TYPE_CHECKING:
    from .emulator import World


class Sys:
    """The system layer of one NPU (ASTRA-sim's `Sys`): its events, memory bus and stream queues.

    Parameters
    ----------
    world : World or MirrorWorld
        What the NPU runs in: `eq` (events), `net` (the network), `net_spec`, `sys_spec`, `trees`.
    npu : int
        The NPU's rank.
    """

    def __init__(self, world: "World", npu: int):
        self.world = world
        self.eq = world.eq
        self.id = npu
        self.events: dict[int, list] = {}
        self.num_streams = 0
        self.priority_counter = 0
        ndim = len(world.net_spec.dims)
        self.active_streams: list[list] = [[] for _ in range(ndim)]
        self.running_streams = [0] * ndim
        self.ready_list: list = []
        self.dbt_counter: dict = {}  # per (collective, dim): which tree the next chunk uses

    # events grouped per tick, run in registration order
    def register_event(self, fn: Callable, delta: int) -> None:
        """Call `fn()` later, after the functions this NPU already registered for that tick.

        Parameters
        ----------
        fn : callable
            Called with no arguments.
        delta : int or float
            Ticks (ns) from now, truncated to an integer.
        """
        t = self.eq.now + int(delta)
        lst = self.events.get(t)
        if lst is None:
            lst = self.events[t] = []
            self.eq.schedule(t, self._call_events, t)
        lst.append(fn)

    def _call_events(self, t: int) -> None:
        for fn in self.events[t]:  # a list iterator also sees what the calls append for this tick
            fn()
        del self.events[t]

    # memory bus
    def mem_cost(self, size: int) -> int:
        """The time a reduction holds the memory bus.

        Parameters
        ----------
        size : int
            Bytes reduced.

        Returns
        -------
        int
            Ticks (ns): 3 x floor(size / local-mem-bw) (one write and two reads); 0 when
            local-mem-bw is 0.
        """
        bw = self.world.sys_spec.local_mem_bw
        if bw <= 0:
            return 0
        one = int(size / bw)
        return 3 * one  # one write and two reads

    def bundle(self, stream: "Stream", size: int, processing: bool) -> None:
        """A packet bundle crossing the NPU<->memory bus: endpoint delay, then (if it carries a
        reduction) the reduction's memory time, then the stream's algorithm hears `General`.

        Parameters
        ----------
        stream : Stream
            The stream whose algorithm hears "general" afterwards.
        size : int
            Bytes of the bundle.
        processing : bool
            Whether it carries a reduction (adds `mem_cost(size)`).
        """
        d = self.world.sys_spec.endpoint_delay
        # after the endpoint delay: the algorithm hears "general", or a reduction first takes the
        # memory bus (registered then, so it queues behind what the NPU registered meanwhile);
        # bound methods and partials, not closures: this runs once per message
        if processing:
            self.register_event(partial(self.register_event, stream.general, self.mem_cost(size)), d)
        else:
            self.register_event(stream.general, d)

    # scheduling
    def insert_stream(self, queue: list, stream: "Stream") -> None:
        """Insert a stream after every started stream and every stream of at least its priority
        (so equal priorities keep their arrival order).

        Parameters
        ----------
        queue : list of Stream
            The ready list or a dimension's queue (changed in place).
        stream : Stream
            The stream to insert.
        """
        i = 0
        while i < len(queue):
            s = queue[i]
            if s.initialized or s.priority >= stream.priority:
                i += 1
                continue
            break
        queue.insert(i, stream)

    def schedule(self) -> None:
        """Move every stream of the ready list into its first phase's queue, in list order."""
        while self.ready_list:
            s = self.ready_list[0]
            self.proceed(s)
            self.ready_list.pop(0)

    def notify_added(self, q: int) -> None:
        """Start waiting streams of a queue while fewer than `active-chunks-per-dimension` run.

        Parameters
        ----------
        q : int
            The queue (dimension).
        """
        lst = self.active_streams[q]
        i = self.running_streams[q]
        thr = self.world.sys_spec.active_chunks
        while i < len(lst) and self.running_streams[q] < thr:
            lst[i].init()
            self.running_streams[q] += 1
            i += 1

    def notify_removed(self, q: int) -> None:
        """A stream left a queue: schedule the ready list, then refill the queue.

        Parameters
        ----------
        q : int
            The queue (dimension) the stream left.
        """
        self.running_streams[q] -= 1
        self.schedule()
        self.notify_added(q)

    def proceed(self, stream: "Stream") -> None:
        """ASTRA-sim's proceed_to_next_vnet_baseline: leave the current phase, enter the next.

        Parameters
        ----------
        stream : Stream
            The stream whose phase ended (or that has not started one); with no phase left, its
            data set hears that it finished.
        """
        prev = stream.queue
        if not stream.phases:
            stream.dataset.stream_finished(self.world.eq.now)
        if prev >= 0:
            self.active_streams[prev].remove(stream)
        if not stream.phases:
            if prev >= 0:
                self.notify_removed(prev)
            return
        phase = stream.phases.pop(0)
        stream.queue = phase.queue
        stream.algorithm = phase.algorithm
        stream.algorithm.stream = stream
        stream.initialized = False
        self.insert_stream(self.active_streams[stream.queue], stream)
        if prev >= 0:
            self.notify_removed(prev)
        self.notify_added(stream.queue)

    # collectives
    def generate(self, collective: str, size: int, involved: tuple[bool, ...] | None, dataset: "DataSet",
                 group: tuple[int, ...] | None = None) -> None:
        """Issue a collective on this NPU now: split it into `splits` streams of per-dimension
        phases and queue them.

        Parameters
        ----------
        collective : str
            "all-reduce", "reduce-scatter", "all-gather" or "all-to-all".
        size : int
            ASTRA-sim's comm_size, bytes; a positive multiple of `splits` (else a ConfigError).
        involved : tuple of bool or None
            Per dimension, whether the collective spans it (None: all).
        dataset : DataSet
            Hears when each stream finishes.
        group : tuple of int, optional
            Communicator group members (a flat ring over them); None for all NPUs.
        """
        w = self.world
        spec = w.sys_spec
        dims = w.net_spec.dims
        impls = self._implementations(collective, group)
        P = spec.splits
        chunk = size // P
        if chunk <= 0 or size % P:
            raise ConfigError(
                "comm_size", size,
                f"ASTRA-sim splits a collective into preferred-dataset-splits={P} equal chunks and loops "
                "forever otherwise; accepted: a size that is a positive multiple of it",
            )
        pri = self.priority_counter
        self.priority_counter += 1 if spec.policy == "LIFO" else -1
        flat = impls[0].flat or impls[0] is CUSTOM
        members = group if group is not None else None
        if flat:
            ldims, limpls = ((len(group),) if group is not None else (w.net_spec.npus,)), (impls[0],)
            involved = (True,)
        else:
            ldims, limpls = dims, impls
            involved = tuple(involved) if involved else (True,) * len(dims)
            involved = (involved + (True,) * len(dims))[: len(dims)]
        active = [d for d in range(len(ldims)) if ldims[d] > 1 and involved[d]]
        plan = self._plan(collective, active)  # the same for every stream
        for _ in range(P):
            if not plan:
                dataset.total -= 1
                continue
            phases = []
            remain = chunk
            for coll, d in plan:
                alg = make_algorithm(self, coll, d, ldims, limpls[d], remain, flat, members)
                phases.append(Phase(d if not flat else 0, alg))
                remain = alg.final_data_size
            sid = self.num_streams
            self.num_streams += 1
            s = Stream(self, dataset, sid, phases, pri)
            self.insert_stream(self.ready_list, s)
            self.schedule()
        dataset.check_done(self.world.eq.now)

    def _implementations(self, collective: str, group: tuple[int, ...] | None) -> tuple[Impl, ...]:
        spec = self.world.sys_spec
        impls = spec.impls.get(collective)
        if collective in spec.custom:  # a custom implementation wins over the native list
            impls = (CUSTOM,)
        elif group is not None and impls:  # sub-groups run as one flat ring (ASTRA-sim)
            impls = (Impl("ring", None, True),)
        if not impls:
            raise ConfigError("system", f"{collective}-implementation", "accepted: a list of algorithms, one per dimension (missing)")
        return impls

    def _plan(self, collective: str, active: list[int]) -> list[tuple[str, int]]:
        """(collective, dimension) of each phase of a stream over the `active` dimensions."""
        return phase_plan(collective, active, self.world.sys_spec.optimization)


def phase_plan(collective: str, active: list[int], optimization: str) -> list[tuple[str, int]]:
    """The phases of one stream: (collective, dimension) each, in the order they run.

    Parameters
    ----------
    collective : str
        "all-reduce", "reduce-scatter", "all-gather" or "all-to-all".
    active : list of int
        The dimensions the collective spans (more than one NPU, involved), ascending.
    optimization : str
        "localBWAware" (an all-reduce runs reduce-scatter up, all-reduce on the last dimension,
        all-gather down) or "baseline" (one phase per dimension).

    Returns
    -------
    list of (str, int)
        Per phase, its collective and dimension; all-gather walks the dimensions downwards.
    """
    plan: list[tuple[str, int]] = []
    if collective != ALL_REDUCE or optimization == "baseline":
        order = active[::-1] if collective == ALL_GATHER else active
        plan = [(collective, d) for d in order]
    elif active:
        last = active[-1]
        plan = [(REDUCE_SCATTER, d) for d in active[:-1]] + [(ALL_REDUCE, last)]
        plan += [(ALL_GATHER, d) for d in active[:-1][::-1]]
    return plan


class DataSet:
    """The streams of one collective on one NPU: calls `on_done(tick)` once all have finished.

    Parameters
    ----------
    total : int
        Streams to wait for (streams with no phase are taken off by `Sys.generate`).
    on_done : callable
        Called once with the tick (ns) the last stream finished.
    """

    def __init__(self, total: int, on_done: Callable[[int], None]):
        self.total = total
        self.finished = 0
        self.on_done = on_done
        self.done = False

    def stream_finished(self, now: int) -> None:
        """One stream finished.

        Parameters
        ----------
        now : int
            The tick it finished, ns.
        """
        self.finished += 1
        self.check_done(now)

    def check_done(self, now: int) -> None:
        """Call `on_done(now)` once, when every stream has finished.

        Parameters
        ----------
        now : int
            The current tick, ns.
        """
        if not self.done and self.finished >= self.total:
            self.done = True
            self.on_done(now)


@dataclass
class Phase:
    """One phase of a stream: the queue (dimension) it waits in and the algorithm that runs it.

    Attributes
    ----------
    queue : int
        The dimension whose queue the stream waits in (0 for a flat phase).
    algorithm : Algorithm
        The state machine that runs the phase.
    """

    queue: int
    algorithm: "Algorithm"


class Stream:
    """One chunk of a collective on one NPU (ASTRA-sim's `StreamBaseline`): its phases, run one
    after the other, each in its dimension's queue.

    Parameters
    ----------
    sys : Sys
        The NPU's system layer.
    dataset : DataSet
        The collective the chunk belongs to.
    sid : int
        Stream id, unique on the NPU (the tag of its messages).
    phases : list of Phase
        The phases still to run.
    priority : int
        Scheduling priority (higher goes first in a queue).
    """

    def __init__(self, sys: Sys, dataset: DataSet, sid: int, phases: list, priority: int):
        self.sys = sys
        self.npu = sys.id
        self.net = sys.world.net  # the algorithms' sends and receives go straight to it
        self.dataset = dataset
        self.id = sid
        self.phases = phases
        self.priority = priority
        self.queue = -1
        self.algorithm: Algorithm | None = None
        self.initialized = False

    def init(self) -> None:
        """The queue starts the stream's current phase: its algorithm hears "init"."""
        self.initialized = True
        self.algorithm.run("init")

    def general(self) -> None:
        """A bundle came back from the memory bus: the algorithm hears "general"."""
        self.algorithm.run("general")

    def received(self) -> None:
        """A message of the stream arrived: the algorithm hears "recv"."""
        self.algorithm.run("recv")
