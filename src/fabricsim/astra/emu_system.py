"""ASTRA-sim emulation, part 2: the system layer of one NPU (`Sys`): per-tick event map, the
NPU<->memory bus, collectives split into streams of per-dimension phases, one queue per dimension
with at most `active-chunks-per-dimension` streams at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..errors import ConfigError
from .config import Impl

from .emu_algorithms import Algorithm, make_algorithm
from .emu_network import ALL_GATHER, ALL_REDUCE, CUSTOM, REDUCE_SCATTER

if TYPE_CHECKING:
    from .emulator import World


class Sys:
    def __init__(self, world: "World", npu: int):
        self.world = world
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
        now = self.world.eq.now
        t = now + int(delta)
        lst = self.events.get(t)
        if lst is None:
            lst = self.events[t] = []
            self.world.eq.schedule(t, self._call_events, t)
        lst.append(fn)

    def _call_events(self, t: int) -> None:
        lst = self.events[t]
        i = 0
        while i < len(lst):
            lst[i]()
            i += 1
        del self.events[t]

    # memory bus
    def mem_cost(self, size: int) -> int:
        bw = self.world.sys_spec.local_mem_bw
        if bw <= 0:
            return 0
        one = int(size / bw)
        return 3 * one  # one write and two reads

    def bundle(self, stream: "Stream", size: int, processing: bool) -> None:
        """A packet bundle crossing the NPU<->memory bus: endpoint delay, then (if it carries a
        reduction) the reduction's memory time, then the stream's algorithm hears `General`."""
        d = self.world.sys_spec.endpoint_delay

        def after_bus():
            if processing:
                self.register_event(lambda: stream.general(), self.mem_cost(size))
            else:
                stream.general()

        self.register_event(after_bus, d)

    # scheduling
    def insert_stream(self, queue: list, stream: "Stream") -> None:
        i = 0
        while i < len(queue):
            s = queue[i]
            if s.initialized or s.priority >= stream.priority:
                i += 1
                continue
            break
        queue.insert(i, stream)

    def schedule(self) -> None:
        while self.ready_list:
            s = self.ready_list[0]
            self.proceed(s)
            self.ready_list.pop(0)

    def notify_added(self, q: int) -> None:
        lst = self.active_streams[q]
        i = self.running_streams[q]
        thr = self.world.sys_spec.active_chunks
        while i < len(lst) and self.running_streams[q] < thr:
            lst[i].init()
            self.running_streams[q] += 1
            i += 1

    def notify_removed(self, q: int) -> None:
        self.running_streams[q] -= 1
        self.schedule()
        self.notify_added(q)

    def proceed(self, stream: "Stream") -> None:
        """ASTRA-sim's proceed_to_next_vnet_baseline: leave the current phase, enter the next."""
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
        w = self.world
        spec = w.sys_spec
        dims = w.net_spec.dims
        impls = spec.impls.get(collective)
        if collective in spec.custom:  # a custom implementation wins over the native list
            impls = (CUSTOM,)
        elif group is not None and impls:  # sub-groups run as one flat ring (ASTRA-sim)
            impls = (Impl("ring", None, True),)
        if not impls:
            raise ConfigError("system", f"{collective}-implementation", "accepted: a list of algorithms, one per dimension (missing)")
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
        for _ in range(P):
            plan: list[tuple[str, int]] = []
            if collective != ALL_REDUCE or spec.optimization == "baseline":
                order = active[::-1] if collective == ALL_GATHER else active
                plan = [(collective, d) for d in order]
            elif active:
                last = active[-1]
                plan = [(REDUCE_SCATTER, d) for d in active[:-1]] + [(ALL_REDUCE, last)]
                plan += [(ALL_GATHER, d) for d in active[:-1][::-1]]
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


class DataSet:
    def __init__(self, total: int, on_done: Callable[[int], None]):
        self.total = total
        self.finished = 0
        self.on_done = on_done
        self.done = False

    def stream_finished(self, now: int) -> None:
        self.finished += 1
        self.check_done(now)

    def check_done(self, now: int) -> None:
        if not self.done and self.finished >= self.total:
            self.done = True
            self.on_done(now)


@dataclass
class Phase:
    queue: int
    algorithm: "Algorithm"


class Stream:
    def __init__(self, sys: Sys, dataset: DataSet, sid: int, phases: list, priority: int):
        self.sys = sys
        self.dataset = dataset
        self.id = sid
        self.phases = phases
        self.priority = priority
        self.queue = -1
        self.algorithm: Algorithm | None = None
        self.initialized = False

    def init(self) -> None:
        self.initialized = True
        self.algorithm.run("init")

    def general(self) -> None:
        self.algorithm.run("general")

    def received(self) -> None:
        self.algorithm.run("recv")
