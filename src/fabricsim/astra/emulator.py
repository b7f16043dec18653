"""ASTRA-sim compatibility: an event-exact emulation of ASTRA-sim 2.x's system layer and its
two analytical network backends, so that fabricsim gives ASTRA-sim's answers (to the
nanosecond) on ASTRA-sim's inputs.

What is emulated (semantics from ../shared/specs/astra-sim.md and ASTRA-sim's documented
behaviour; the code is fabricsim's own):
- time in integer ticks of 1 ns; every delay is truncated to an integer as ASTRA-sim does;
- per NPU, events registered for a tick run together, in registration order, when that tick
  comes (ASTRA-sim's per-`Sys` event map);
- a collective is split into `preferred-dataset-splits` chunks ("streams"), each a list of
  per-dimension phases (baseline: one phase per dimension; localBWAware all-reduce:
  reduce-scatter up, all-reduce on the last dimension, all-gather down); each dimension has one
  queue that runs at most `active-chunks-per-dimension` streams at once, in priority order;
- the native algorithms' message state machines: ring, direct (`AllToAll`, with window),
  halvingDoubling, doubleBinaryTree;
- every message passes the NPU<->memory bus: `endpoint-delay` ticks each way, plus
  3 * floor(bytes / local-mem-bw) for messages that carry a reduction;
- sends and receives are matched by (tag, src, dst, size, sequence number);
- congestion-unaware network: delay = floor(hops * latency + bytes / bandwidth) on the first
  dimension where the addresses differ, no sharing; congestion-aware (1-D only): store-and-
  forward FIFO links, arrival after floor(latency + bytes/bw), link busy floor(bytes/bw).

This module knows nothing about files; `astra.run` feeds it parsed configurations.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field
from typing import Callable

from ..errors import ConfigError
from .config import Impl

# ---- configuration the emulator needs --------------------------------------------------------


@dataclass(frozen=True)
class NetSpec:
    kinds: tuple[str, ...]  # "Ring" | "FullyConnected" | "Switch" per dimension
    dims: tuple[int, ...]
    bw: tuple[float, ...]  # bytes per ns (ASTRA-sim: GB/s * 2^30 / 1e9)
    lat: tuple[float, ...]  # ns

    @property
    def npus(self) -> int:
        return math.prod(self.dims)


@dataclass(frozen=True)
class SysSpec:
    splits: int
    active_chunks: int = 1
    endpoint_delay: int = 10
    local_mem_bw: float = 0.0  # GB/s; 0 = reductions cost nothing
    optimization: str = "localBWAware"  # or "baseline"
    policy: str = "LIFO"
    impls: dict = field(default_factory=dict)  # collective -> tuple[Impl, ...] per dimension
    custom: dict = field(default_factory=dict)  # collective -> per-position node lists (custom ETs)


ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, ALL_TO_ALL = "all-reduce", "reduce-scatter", "all-gather", "all-to-all"
CUSTOM = Impl("custom", None, True)  # marks a collective given as per-rank Chakra graphs


# ---- the discrete-event core -------------------------------------------------------------------


class EventQueue:
    """Backend event queue: time-ordered, first-in first-out within a tick."""

    def __init__(self):
        self.now = 0
        self._heap: list = []
        self._seq = 0

    def schedule(self, t: int, fn: Callable, *args) -> None:
        if t < self.now:
            raise RuntimeError("event scheduled in the past")
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, fn, args))

    def run(self) -> None:
        heap = self._heap
        while heap:
            t, _, fn, args = heapq.heappop(heap)
            self.now = t
            fn(*args)


# ---- networks ----------------------------------------------------------------------------------


class Tracker:
    """Send/recv matching by (tag, src, dst, size) and a per-key sequence number."""

    def __init__(self):
        self.send_seq: dict = {}
        self.recv_seq: dict = {}
        self.entries: dict = {}

    def next_send(self, key) -> tuple:
        n = self.send_seq.get(key, 0) + 1
        self.send_seq[key] = n
        return key + (n,)

    def next_recv(self, key) -> tuple:
        n = self.recv_seq.get(key, 0) + 1
        self.recv_seq[key] = n
        return key + (n,)


class _Entry:
    __slots__ = ("send_cb", "recv_cb", "has_send", "has_recv", "finished")

    def __init__(self):
        self.send_cb = self.recv_cb = None
        self.has_send = self.has_recv = False
        self.finished = False


class Network:
    """Common matching logic of both backends; subclasses move the bytes."""

    def __init__(self, eq: EventQueue, spec: NetSpec):
        self.eq = eq
        self.spec = spec
        self.tracker = Tracker()
        self.strides = [math.prod(spec.dims[:d]) for d in range(len(spec.dims))]

    def coords(self, r: int) -> list[int]:
        return [(r // s) % n for s, n in zip(self.strides, self.spec.dims)]

    def sim_send(self, src: int, dst: int, tag, size: int, on_sent) -> None:
        cid = self.tracker.next_send((tag, src, dst, size))
        e = self.tracker.entries.get(cid)
        if e is None:
            e = self.tracker.entries[cid] = _Entry()
        e.send_cb, e.has_send = on_sent, True
        self.transmit(src, dst, size, cid)

    def sim_recv(self, dst: int, src: int, tag, size: int, on_recv) -> None:
        cid = self.tracker.next_recv((tag, src, dst, size))
        e = self.tracker.entries.get(cid)
        if e is not None:
            if e.finished:
                del self.tracker.entries[cid]
                self.eq.schedule(self.eq.now, on_recv)
            else:
                e.recv_cb, e.has_recv = on_recv, True
        else:
            e = self.tracker.entries[cid] = _Entry()
            e.recv_cb, e.has_recv = on_recv, True

    def arrived(self, cid) -> None:
        e = self.tracker.entries[cid]
        if e.has_send and e.has_recv:
            if e.send_cb:
                e.send_cb()
            e.recv_cb()
            del self.tracker.entries[cid]
        else:
            if e.send_cb:
                e.send_cb()
            e.finished = True

    def transmit(self, src, dst, size, cid) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


class UnawareNetwork(Network):
    """No contention: a message takes floor(hops x latency + bytes / bandwidth) on the first
    dimension in which source and destination differ."""

    def delay(self, src: int, dst: int, size: int) -> int:
        cs, cd = self.coords(src), self.coords(dst)
        for d, (a, b) in enumerate(zip(cs, cd)):
            if a != b:
                kind, n = self.spec.kinds[d], self.spec.dims[d]
                if kind == "Ring":
                    cw = (b - a) % n
                    hops = min(cw, n - cw)
                elif kind == "FullyConnected":
                    hops = 1
                else:
                    hops = 2
                return int(hops * self.spec.lat[d] + size / self.spec.bw[d])
        raise ValueError("message to itself")

    def transmit(self, src, dst, size, cid) -> None:
        self.eq.schedule(self.eq.now + self.delay(src, dst, size), self.arrived, cid)


class _Link:
    """A store-and-forward FIFO link: a chunk arrives floor(latency + bytes/bw) after it
    starts, and the link is busy for floor(bytes/bw); waiting chunks go in order."""

    __slots__ = ("eq", "bw", "lat", "busy", "pending", "on_arrive")

    def __init__(self, eq: EventQueue, bw: float, lat: float, on_arrive: Callable):
        self.eq, self.bw, self.lat = eq, bw, lat
        self.busy = False
        self.pending: list = []
        self.on_arrive = on_arrive

    def send(self, size: int, chunk) -> None:
        if self.busy:
            self.pending.append((size, chunk))
        else:
            self._start(size, chunk)

    def _start(self, size: int, chunk) -> None:
        self.busy = True
        now = self.eq.now
        self.eq.schedule(now + int(self.lat + size / self.bw), self.on_arrive, chunk)
        self.eq.schedule(now + int(size / self.bw), self._free)

    def _free(self) -> None:
        self.busy = False
        if self.pending:
            self._start(*self.pending.pop(0))


class AwareNetwork(Network):
    """Store-and-forward FIFO links on a 1-D Ring, FullyConnected or Switch."""

    def __init__(self, eq: EventQueue, spec: NetSpec):
        super().__init__(eq, spec)
        if len(spec.dims) != 1:
            raise ConfigError(
                "network", "x".join(map(str, spec.dims)),
                "the congestion-aware backend supports 1-D networks only (as ASTRA-sim: "
                "'only support 1-dim topology'); use --backend congestion-unaware",
            )
        self.n = spec.dims[0]
        self.kind = spec.kinds[0]
        self.links: dict = {}
        n = self.n
        if self.kind == "Ring":
            pairs = [(i, (i + 1) % n) for i in range(n)] + [((i + 1) % n, i) for i in range(n)]
        elif self.kind == "FullyConnected":
            pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
        else:
            pairs = [(i, n) for i in range(n)] + [(n, i) for i in range(n)]
        for pair in pairs:
            self.links[pair] = _Link(eq, spec.bw[0], spec.lat[0], self._hop_arrived)

    def route(self, src: int, dst: int) -> list[int]:
        n = self.n
        if self.kind == "Ring":
            cw = (dst - src) % n
            step = -1 if n - cw < cw else 1
            path = [src]
            cur = src
            while cur != dst:
                cur = (cur + step) % n
                path.append(cur)
            return path
        if self.kind == "FullyConnected":
            return [src, dst]
        return [src, n, dst]

    def transmit(self, src, dst, size, cid) -> None:
        path = self.route(src, dst)
        self._send((path, 0, size, cid))

    def _send(self, chunk) -> None:
        path, i, size, cid = chunk
        self.links[(path[i], path[i + 1])].send(size, chunk)

    def _hop_arrived(self, chunk) -> None:
        path, i, size, cid = chunk
        if i + 2 == len(path):
            self.arrived(cid)
        else:
            self._send((path, i + 1, size, cid))


# ---- the system layer of one NPU --------------------------------------------------------------


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


# ---- algorithms ------------------------------------------------------------------------------


class Algorithm:
    stream: Stream
    final_data_size: int

    def send(self, dst: int, size: int) -> None:
        s = self.stream
        s.sys.world.net.sim_send(s.sys.id, dst, s.id, size, None)

    def recv(self, src: int, size: int) -> None:
        s = self.stream
        s.sys.world.net.sim_recv(s.sys.id, src, s.id, size, s.received)

    def exit(self) -> None:
        self.stream.sys.proceed(self.stream)


class RingLine:
    """The NPUs of one dimension line around `npu`, in ring order (or an explicit member list,
    for communicator groups and flat rings)."""

    def __init__(self, npu: int, size: int, stride: int, members: tuple[int, ...] | None = None):
        self.size = size
        self.members = members
        if members is not None:
            self.pos = {m: i for i, m in enumerate(members)}
            self.index = self.pos[npu]
            return
        self.stride = stride
        self.index = (npu // stride) % size
        self.base = npu - self.index * stride

    def at(self, index: int) -> int:
        if self.members is not None:
            return self.members[index % self.size]
        return self.base + (index % self.size) * self.stride

    def next(self, npu: int, clockwise: bool = True) -> int:
        i = self.pos[npu] if self.members is not None else (npu - self.base) // self.stride
        return self.at(i + (1 if clockwise else -1))


class Ring(Algorithm):
    """Ring (and, as `Direct`, ASTRA-sim's AllToAll class): a queue of packets; a packet is
    injected on init and after every receive, crosses the memory bus, then is sent."""

    direct = False

    def __init__(self, coll: str, npu: int, line: RingLine, data_size: int, window: int | None = None):
        self.coll = coll
        self.id = npu
        self.line = line
        n = self.n = line.size
        self.receiver = line.next(npu, True)
        self.sender = line.next(npu, False)
        self.parallel = 1
        self.packets: list = []  # (dest, src)
        self.free_packets = 0
        self.received_count = 0
        self.zero = 0
        self.nonzero = 0
        self.toggle = False
        if coll == ALL_REDUCE:
            self.stream_count = 2 * (n - 1)
        elif coll == ALL_TO_ALL:
            self.stream_count = (n - 1) * n // 2
        else:
            self.stream_count = n - 1
        if coll == ALL_REDUCE:
            self.final_data_size, self.msg = data_size, data_size // n
        elif coll == ALL_GATHER:
            self.final_data_size, self.msg = data_size * n, data_size
        elif coll == REDUCE_SCATTER:
            self.final_data_size, self.msg = data_size // n, data_size // n
        else:
            self.final_data_size, self.msg = data_size, data_size // n
        if self.direct:
            self.middle = n - 1
            self.parallel = n - 1 if window is None else min(window, n - 1)
            if coll == ALL_TO_ALL:
                self.stream_count = n - 1

    def nonzero_packets(self) -> int:
        if self.direct:
            return self.parallel
        return (self.n - 1) * self.parallel

    def run(self, event: str) -> None:
        if event == "general":
            self.free_packets += 1
            if self.direct and self.coll == ALL_REDUCE and self.stream_count <= self.middle:
                if self.received_count < self.middle:
                    return
                for _ in range(self.parallel):
                    self.ready()
                self.iterate()
            else:
                self.ready()
                self.iterate()
        elif event == "recv":
            self.received_count += 1
            self.insert()
        else:  # init
            for _ in range(self.parallel):
                self.insert()

    def insert(self) -> None:
        if self.zero == 0 and self.nonzero == 0:
            self.zero = self.parallel
            self.nonzero = self.nonzero_packets()
            self.toggle = not self.toggle
        if self.zero > 0:
            self.packets.append((self.receiver, self.sender))
            self.release(to_memory=True, processed=False)
            self.zero -= 1
        elif self.nonzero > 0:
            self.packets.append((self.receiver, self.sender))
            processed = self.coll == REDUCE_SCATTER or (self.coll == ALL_REDUCE and self.toggle)
            self.release(to_memory=False, processed=processed)
            self.nonzero -= 1
        else:  # pragma: no cover - ASTRA-sim panics here too
            raise RuntimeError("ring: should not inject nothing")

    def release(self, to_memory: bool, processed: bool) -> None:
        self.stream.sys.bundle(self.stream, self.msg, processed and not to_memory)
        if self.direct:
            self.receiver = self.line.next(self.receiver, True)
            if self.receiver == self.id:
                self.receiver = self.line.next(self.receiver, True)
            self.sender = self.line.next(self.sender, False)
            if self.sender == self.id:
                self.sender = self.line.next(self.sender, False)

    def ready(self) -> bool:
        if not self.packets or self.stream_count == 0 or self.free_packets == 0:
            return False
        dest, src = self.packets.pop(0)
        self.send(dest, self.msg)
        self.recv(src, self.msg)
        self.stream_count -= 1
        self.free_packets -= 1
        return True

    def iterate(self) -> None:
        if self.stream_count == 0 and self.free_packets == self.parallel:
            self.exit()


class Direct(Ring):
    direct = True


class HalvingDoubling(Algorithm):
    def __init__(self, coll: str, npu: int, line: RingLine, data_size: int):
        if coll == ALL_TO_ALL:
            raise ConfigError("all-to-all-implementation", "halvingDoubling",
                              "ASTRA-sim's halvingDoubling has no all-to-all (it exits); accepted: ring, direct")
        n = line.size
        if n & (n - 1):
            raise ConfigError("implementation", "halvingDoubling",
                              f"needs a power-of-two dimension, got {n} NPUs")
        self.coll = coll
        self.id = npu
        self.line = line
        self.n = n
        self.log = int(math.log2(n))
        self.stream_count = 2 * self.log if coll == ALL_REDUCE else self.log
        self.packets: list = []
        self.free_packets = 0
        self.zero = 0
        self.nonzero = 0
        self.toggle = False
        if coll == ALL_REDUCE:
            self.final_data_size, self.msg, self.offset, self.mult = data_size, data_size // 2, 1, 2.0
        elif coll == ALL_GATHER:
            self.final_data_size, self.msg, self.offset, self.mult = data_size * n, data_size, n // 2, 0.5
        else:
            self.final_data_size, self.msg, self.offset, self.mult = data_size // n, data_size // 2, 1, 2.0
        self._aim()

    def _aim(self) -> None:
        clockwise = self.offset == 0 or (self.line.index // self.offset) % 2 == 0
        r = self.id
        for _ in range(self.offset):
            r = self.line.next(r, clockwise)
        self.receiver = self.sender = r

    def run(self, event: str) -> None:
        if event == "general":
            self.free_packets += 1
            self.ready()
            self.iterate()
        elif event == "recv":
            self.insert()
        else:
            self.insert()

    def insert(self) -> None:
        if self.zero == 0 and self.nonzero == 0:
            self.zero = 1
            self.nonzero = self.log - 1
            self.toggle = not self.toggle
        if self.zero > 0:
            self.packets.append((self.receiver, self.sender, self.msg))
            self.release(False)
            self.zero -= 1
        elif self.nonzero > 0:
            self.packets.append((self.receiver, self.sender, self.msg))
            processed = self.coll == REDUCE_SCATTER or (self.coll == ALL_REDUCE and self.toggle)
            self.release(processed)
            self.nonzero -= 1
        else:  # pragma: no cover
            raise RuntimeError("halvingDoubling: should not inject nothing")

    def release(self, processed: bool) -> None:
        self.stream.sys.bundle(self.stream, self.msg, processed)
        self.offset = int(self.offset * self.mult)
        self.msg = int(self.msg / self.mult)
        if self.offset == self.n and self.coll == ALL_REDUCE:
            self.mult = 0.5
            self.offset = int(self.offset * self.mult)
            self.msg = int(self.msg / self.mult)
        self._aim()

    def ready(self) -> bool:
        if not self.packets or self.stream_count == 0 or self.free_packets == 0:
            return False
        dest, src, size = self.packets.pop(0)
        self.send(dest, size)
        self.recv(src, size)
        self.stream_count -= 1
        self.free_packets -= 1
        return True

    def iterate(self) -> None:
        if self.stream_count == 0 and self.free_packets == 1:
            self.exit()


class BinaryTree:
    """ASTRA-sim's logical binary tree over n NPUs (start, stride): a complete tree of depth
    floor(log2 n) under a top node, numbered in order; RootMax puts the subtree left of the
    top (top = largest id), RootMin right (top = smallest id)."""

    def __init__(self, n: int, start: int, stride: int, root_max: bool):
        depth = 1
        tmp = n
        while tmp > 1:
            depth += 1
            tmp //= 2
        self.parent: dict[int, int] = {}
        self.left: dict[int, int] = {}
        self.right: dict[int, int] = {}
        counter = [start]
        nodes: list = []

        def build(d):  # returns a nested (left, right) structure of node slots
            node = {"l": None, "r": None, "id": None}
            if d > 1:
                node["l"] = build(d - 1)
                node["r"] = build(d - 1)
            return node

        top = {"l": None, "r": None, "id": None}
        if root_max:
            top["l"] = build(depth - 1)
        else:
            top["r"] = build(depth - 1)

        def number(node):
            if node["l"] is not None:
                number(node["l"])
            node["id"] = counter[0]
            counter[0] += stride
            nodes.append(node)
            if node["r"] is not None:
                number(node["r"])

        number(top)

        def link(node, parent):
            self.parent[node["id"]] = parent["id"] if parent else -1
            self.left[node["id"]] = node["l"]["id"] if node["l"] else -1
            self.right[node["id"]] = node["r"]["id"] if node["r"] else -1
            for c in (node["l"], node["r"]):
                if c:
                    link(c, node)

        link(top, None)

    def kind(self, npu: int) -> str:
        if self.parent[npu] == -1:
            return "root"
        if self.left[npu] == -1 and self.right[npu] == -1:
            return "leaf"
        return "intermediate"


class DoubleBinaryTree(Algorithm):
    """ASTRA-sim's doubleBinaryTree all-reduce state machine (whole chunk up the tree, reduced
    at every level, and back down; an inner node exits as soon as it has sent to its children)."""

    def __init__(self, npu: int, tree: BinaryTree, data_size: int):
        self.id = npu
        self.size = data_size
        self.final_data_size = data_size
        self.state = "begin"
        self.reductions = 0
        self.parent = tree.parent[npu]
        self.left = tree.left[npu]
        self.right = tree.right[npu]
        self.type = tree.kind(npu)

    def _bundle(self, processing: bool) -> None:
        self.stream.sys.bundle(self.stream, self.size, processing)

    def run(self, event: str) -> None:
        t, st = self.type, self.state
        if t == "leaf":
            if st == "begin":
                self._bundle(False)
                self.state = "to_parent"
            elif st == "to_parent":
                self.send(self.parent, self.size)
                self.recv(self.parent, self.size)
                self.state = "from_parent"
            elif st == "from_parent":
                self._bundle(False)
                self.state = "end"
            elif st == "end":
                self.exit()
            return
        if t == "intermediate":
            if st == "begin":
                self.state = "two_children"
                self.recv(self.left, self.size)
                self.recv(self.right, self.size)
            elif st == "two_children" and event == "recv":
                self._bundle(True)
                self.state = "one_child"
            elif st == "one_child" and event == "recv":
                self._bundle(True)
                self.state = "to_parent"
            elif self.reductions < 1 and event == "general":
                self.reductions += 1
            elif st == "to_parent":
                self.state = "from_parent"
                self.send(self.parent, self.size)
                self.recv(self.parent, self.size)
            elif st == "from_parent" and event == "recv":
                self._bundle(True)
                self.state = "to_children"
            elif st == "to_children":
                self.send(self.left, self.size)
                self.send(self.right, self.size)
                self.exit()
            return
        # root
        child = self.left if self.left >= 0 else self.right
        if st == "begin":
            self.state = "one_child"
            self.recv(child, self.size)
        elif st == "one_child":
            self._bundle(True)
            self.state = "to_children"
        elif st == "to_children":
            self.send(child, self.size)
            self.exit()


class DepGraph:
    """Chakra nodes and their data/control dependencies: which are free to run, and which
    become free when one finishes (dependencies outside the graph are ignored)."""

    def __init__(self, nodes):
        self.nodes = {n.id: n for n in nodes}
        self.children: dict[int, list[int]] = {i: [] for i in self.nodes}
        self.waiting: dict[int, int] = {}
        for n in self.nodes.values():
            deps = [d for d in n.deps if d in self.nodes]
            self.waiting[n.id] = len(deps)
            for d in deps:
                self.children[d].append(n.id)
        self.free = sorted(i for i, k in self.waiting.items() if k == 0)

    def finish(self, nid: int) -> None:
        """Mark `nid` done; its children whose dependencies are all done join `free` (sorted)."""
        for c in self.children[nid]:
            self.waiting[c] -= 1
            if self.waiting[c] == 0:
                self.free.append(c)
        self.free.sort()


class CustomAlgorithm(Algorithm):
    """A collective given as per-rank Chakra graphs of send / recv / compute nodes (ASTRA-sim's
    custom collectives, e.g. converted from MSCCL): nodes run as their dependencies allow; a
    send completes when it arrives, a compute node takes its duration (at least 1 ns)."""

    def __init__(self, coll: str, npu: int, nodes, members, data_size: int):
        self.id = npu
        self.members = members
        self.final_data_size = data_size
        self.graph = DepGraph(nodes)
        self.ongoing: set[int] = set()

    def real(self, rank: int) -> int:
        return self.members[rank] if self.members is not None else rank

    def run(self, event: str) -> None:
        self.issue_free()

    def issue_free(self) -> None:
        free, self.graph.free = self.graph.free, []
        for nid in free:
            self.issue(self.graph.nodes[nid])

    def issue(self, node) -> None:
        self.ongoing.add(node.id)
        s = self.stream
        net = s.sys.world.net
        done = lambda nid=node.id: self.finish(nid)  # noqa: E731
        if node.type == 5:  # COMM_SEND_NODE
            net.sim_send(self.id, self.real(node.comm_dst), ("p2p", node.comm_tag), node.comm_size, done)
        elif node.type == 6:  # COMM_RECV_NODE
            net.sim_recv(self.id, self.real(node.comm_src), ("p2p", node.comm_tag), node.comm_size, done)
        elif node.type == 4:  # COMP_NODE: a local reduction
            runtime = int(node.duration_micros * 1000) if node.duration_micros else 1
            s.sys.register_event(done, runtime)
        else:
            raise ConfigError("custom collective node", f"{node.id} ({node.type_name})",
                              "accepted: COMM_SEND_NODE, COMM_RECV_NODE, COMP_NODE")

    def finish(self, nid: int) -> None:
        self.ongoing.discard(nid)
        self.graph.finish(nid)
        self.issue_free()
        if not self.ongoing and not self.graph.free:
            self.exit()


def make_algorithm(sys: Sys, coll: str, dim: int, dims: tuple[int, ...], impl: Impl, data_size: int, flat: bool,
                   members: tuple[int, ...] | None = None) -> Algorithm:
    npu = sys.id
    stride = 1 if flat else math.prod(dims[:dim])
    size = dims[dim]
    name = impl.name
    if impl is CUSTOM:
        pos = members.index(npu) if members is not None else npu
        return CustomAlgorithm(coll, npu, sys.world.sys_spec.custom[coll][pos], members, data_size)
    line = RingLine(npu, size, stride, members)
    if name in ("ring", "oneRing"):
        return Ring(coll, npu, line, data_size)
    if name in ("direct", "oneDirect"):
        return Direct(coll, npu, line, data_size, impl.window)
    if name in ("halvingDoubling", "oneHalvingDoubling"):
        return HalvingDoubling(coll, npu, line, data_size)
    if name == "doubleBinaryTree":
        if coll != ALL_REDUCE:
            raise ConfigError("implementation", "doubleBinaryTree", "ASTRA-sim's doubleBinaryTree serves all-reduce only")
        last = dim == len(dims) - 1
        start = npu % stride if last else (npu - npu % (stride * size)) + npu % stride
        key = (coll, dim)
        k = sys.dbt_counter.get(key, 0)
        sys.dbt_counter[key] = k + 1
        cache = sys.world.trees
        tkey = (size, start, stride, k % 2 == 0)
        if tkey not in cache:
            cache[tkey] = BinaryTree(size, start, stride, root_max=k % 2 == 0)
        return DoubleBinaryTree(npu, cache[tkey], data_size)
    raise ConfigError("implementation", name, "accepted: ring, direct, directN, halvingDoubling, doubleBinaryTree, oneRing, oneDirect, oneHalvingDoubling")


# ---- mirror mode: one NPU stands for all ------------------------------------------------------


class MirrorNetwork(Network):
    """Only NPU 0 is simulated. The system is symmetric under translations of the NPU
    coordinates, so the k-th message NPU 0 receives from `src` (tag, size) is the translate of
    the k-th message NPU 0 itself sends to `-src`: both leave at the same tick and take the
    same time. Each send of NPU 0 therefore also injects its mirrored incoming message.

    Congestion-aware links are modelled where the symmetry covers them: NPU 0's own outgoing
    links (single-hop routes: FullyConnected, ring neighbours), and on a Switch the up link plus
    the shared down link into NPU 0, which carries the mirrored messages of all senders."""

    def __init__(self, eq: EventQueue, spec: NetSpec, backend: str):
        super().__init__(eq, spec)
        self.aware = backend == "congestion-aware"
        if self.aware:
            self.links: dict = {}
            self.bw, self.lat = spec.bw[0], spec.lat[0]

    def mirror(self, npu: int) -> int:
        return sum(((-c) % n) * st for c, n, st in zip(self.coords(npu), self.spec.dims, self.strides))

    def _link(self, key) -> _Link:
        link = self.links.get(key)
        if link is None:
            link = self.links[key] = _Link(self.eq, self.bw, self.lat, self._hop)
        return link

    def sim_send(self, src: int, dst: int, tag, size: int, on_sent) -> None:
        if src != 0 or on_sent is not None:
            raise RuntimeError("mirror mode simulates native collectives of NPU 0 only")
        m = self.mirror(dst)
        cid = self.tracker.next_send((tag, m, 0, size))
        e = self.tracker.entries.get(cid)
        if e is None:
            e = self.tracker.entries[cid] = _Entry()
        e.has_send = True
        if not self.aware:
            self.eq.schedule(self.eq.now + UnawareNetwork.delay(self, m, 0, size), self.arrived, cid)
        elif self.spec.kinds[0] == "Switch":
            self._link(("up",)).send(size, (size, cid, "up"))
        else:  # one hop: NPU 0's link to dst mirrors src's link to NPU 0
            self._link(("out", dst)).send(size, (size, cid, "last"))

    delay = UnawareNetwork.delay

    def _hop(self, chunk) -> None:
        size, cid, where = chunk
        if where == "up":  # at the switch: the mirrored message takes the down link into NPU 0
            self._link(("down",)).send(size, (size, cid, "last"))
        else:
            self.arrived(cid)


def mirror_eligible(net: NetSpec, system: SysSpec, collective: str, backend: str) -> str | None:
    """None when mirror mode gives exactly the full emulation's answer, else why not."""
    impls = system.impls.get(collective) or ()
    if collective in system.custom:
        return "custom collective"
    if any(i.name not in ("ring", "direct") for i in impls):
        return "only ring and direct are translation-symmetric"
    if any(i.flat for i in impls) and len(net.dims) > 1:
        return "a flat ring over several dimensions is not symmetric"
    if backend == "congestion-aware":
        if len(net.dims) != 1:
            return "congestion-aware is 1-D"
        if net.kinds[0] == "Ring" and any(i.name == "direct" for i in impls) and net.dims[0] > 3:
            return "direct on a ring shares multi-hop links"
    return None


class MirrorWorld:
    """NPU 0 alone on a MirrorNetwork (see MirrorNetwork)."""

    def __init__(self, net_spec: NetSpec, sys_spec: SysSpec, backend: str):
        self.net_spec = net_spec
        self.sys_spec = sys_spec
        self.eq = EventQueue()
        self.net = MirrorNetwork(self.eq, net_spec, backend)
        self.trees: dict = {}
        self.sys = [Sys(self, 0)]


# ---- the world: all NPUs on one network --------------------------------------------------------


class World:
    def __init__(self, net_spec: NetSpec, sys_spec: SysSpec, backend: str):
        self.net_spec = net_spec
        self.sys_spec = sys_spec
        self.eq = EventQueue()
        if backend == "congestion-unaware":
            self.net: Network = UnawareNetwork(self.eq, net_spec)
        elif backend == "congestion-aware":
            self.net = AwareNetwork(self.eq, net_spec)
        else:
            raise ConfigError("backend", backend, "accepted: congestion-unaware, congestion-aware")
        self.trees: dict = {}
        self.sys = [Sys(self, i) for i in range(net_spec.npus)]

    def collective(self, npu: int, collective: str, size: int, involved=None, on_done=None,
                   group: tuple[int, ...] | None = None) -> DataSet:
        """Issue a collective on one NPU now; `on_done(tick)` when all its chunks finish there."""
        ds = DataSet(self.sys_spec.splits, on_done or (lambda t: None))
        self.sys[npu].generate(collective, size, involved, ds, group)
        return ds


def simulate_collective(net_spec: NetSpec, sys_spec: SysSpec, collective: str, size: int,
                        backend: str = "congestion-unaware", involved=None, mode: str = "auto") -> list[int]:
    """Finish tick (ns) of every NPU for one collective issued on all NPUs at time 0.
    `mode`: "full" simulates every NPU; "mirror" one NPU standing for all (symmetric systems
    only); "auto" picks mirror where it is exact."""
    if mode not in ("auto", "full", "mirror"):
        raise ConfigError("mode", mode, "accepted: auto, full, mirror")
    if backend not in ("congestion-unaware", "congestion-aware"):
        raise ConfigError("backend", backend, "accepted: congestion-unaware, congestion-aware")
    why = mirror_eligible(net_spec, sys_spec, collective, backend)
    if mode == "mirror" and why:
        raise ConfigError("mode", "mirror", f"not exact here ({why}); use full")
    if mode == "mirror" or (mode == "auto" and why is None):
        if backend == "congestion-aware":
            AwareNetwork(EventQueue(), net_spec)  # same validation as the full model
        mw = MirrorWorld(net_spec, sys_spec, backend)
        out: list = []
        ds = DataSet(sys_spec.splits, out.append)
        mw.sys[0].generate(collective, size, involved, ds)
        mw.eq.run()
        if not out:
            raise RuntimeError("ASTRA-sim emulation (mirror mode) deadlocked")
        return [out[0]] * net_spec.npus
    world = World(net_spec, sys_spec, backend)
    finish = [None] * net_spec.npus

    def done(i):
        def f(t):
            finish[i] = t
        return f

    for i in range(net_spec.npus):
        world.collective(i, collective, size, involved, done(i))
    world.eq.run()
    if any(f is None for f in finish):
        stuck = [i for i, f in enumerate(finish) if f is None][:8]
        raise RuntimeError(f"ASTRA-sim emulation deadlocked: NPUs {stuck} never finished")
    return finish
