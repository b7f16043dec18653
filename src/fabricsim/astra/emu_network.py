"""ASTRA-sim emulation, part 1: what the emulator needs to know (`NetSpec`, `SysSpec`), its
discrete-event core (integer ns ticks) and ASTRA-sim's two analytical networks: congestion-
unaware (a delay per message, no sharing) and congestion-aware (store-and-forward FIFO links)."""

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
    """The network as the emulator sees it: one entry per dimension, dimension 0 fastest.

    Attributes
    ----------
    kinds : tuple of str
        "Ring", "FullyConnected" or "Switch" per dimension.
    dims : tuple of int
        NPUs per dimension.
    bw : tuple of float
        Link bandwidth per dimension, bytes per ns (ASTRA-sim: GB/s x 2^30 / 1e9).
    lat : tuple of float
        Latency of one link traversal per dimension, ns.
    """

    kinds: tuple[str, ...]  # "Ring" | "FullyConnected" | "Switch" per dimension
    dims: tuple[int, ...]
    bw: tuple[float, ...]  # bytes per ns (ASTRA-sim: GB/s * 2^30 / 1e9)
    lat: tuple[float, ...]  # ns

    @property
    def npus(self) -> int:
        """NPUs in the network (the product of `dims`)."""
        return math.prod(self.dims)


@dataclass(frozen=True)
class SysSpec:
    """The system layer's settings, in ASTRA-sim's units (the system JSON's keys).

    Attributes
    ----------
    splits : int
        Chunks ("streams") per collective (`preferred-dataset-splits`).
    active_chunks : int
        Streams a dimension's queue runs at once (`active-chunks-per-dimension`).
    endpoint_delay : int
        Ticks (ns) a packet bundle takes over the NPU<->memory bus, each way.
    local_mem_bw : float
        `local-mem-bw`, GB/s (1e9 bytes/s); 0 makes reductions free.
    optimization : str
        "localBWAware" (all-reduce as reduce-scatter up, all-reduce, all-gather down) or "baseline".
    policy : str
        "LIFO" or "FIFO": the order streams of different collectives are scheduled in.
    impls : dict
        Collective -> tuple of `Impl`, one per dimension (or one flat one).
    custom : dict
        Collective -> per-rank node lists of a collective given as Chakra graphs.
    """

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
        """Call `fn(*args)` at tick `t`, after what is already due then.

        Parameters
        ----------
        t : int
            The tick, ns; not before `now` (RuntimeError otherwise).
        fn : callable
            Called with `args` when the tick comes.
        *args
            Its arguments.
        """
        if t < self.now:
            raise RuntimeError("event scheduled in the past")
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, fn, args))

    def run(self, on_progress: Callable[[], None] | None = None, every: int = 1 << 16) -> None:
        """Run events in time order until none is left; `now` follows each event's tick.

        Parameters
        ----------
        on_progress : callable, optional
            Called with no arguments after every `every` events (progress bars).
        every : int
            Events between calls.
        """
        heap = self._heap
        if on_progress is None:  # the hot loop without the counter when nobody listens
            while heap:
                t, _, fn, args = heapq.heappop(heap)
                self.now = t
                fn(*args)
            return
        n = 0
        while heap:
            t, _, fn, args = heapq.heappop(heap)
            self.now = t
            fn(*args)
            n += 1
            if n % every == 0:
                on_progress()


# ---- networks ----------------------------------------------------------------------------------


class Tracker:
    """Send/recv matching by (tag, src, dst, size) and a per-key sequence number."""

    def __init__(self):
        self.send_seq: dict = {}
        self.recv_seq: dict = {}
        self.entries: dict = {}

    def next_send(self, key) -> tuple:
        """The id of the next send with this key.

        Parameters
        ----------
        key : tuple
            (tag, src, dst, size in bytes).

        Returns
        -------
        tuple
            `key` + (its sequence number among sends with that key, from 1,).
        """
        n = self.send_seq.get(key, 0) + 1
        self.send_seq[key] = n
        return key + (n,)

    def next_recv(self, key) -> tuple:
        """The id of the next receive with this key.

        Parameters
        ----------
        key : tuple
            (tag, src, dst, size in bytes).

        Returns
        -------
        tuple
            `key` + (its sequence number among receives with that key, from 1,).
        """
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
    """Common matching logic of both backends; subclasses move the bytes (`transmit`).

    A message completes when it has arrived and its receive is posted; whichever comes second
    runs the receiver's callback (the sender's runs on arrival).

    Parameters
    ----------
    eq : EventQueue
        The event queue the network schedules on.
    spec : NetSpec
        The network.
    """

    def __init__(self, eq: EventQueue, spec: NetSpec):
        self.eq = eq
        self.spec = spec
        self.tracker = Tracker()
        self.strides = [math.prod(spec.dims[:d]) for d in range(len(spec.dims))]

    def coords(self, r: int) -> list[int]:
        """The coordinates of an NPU.

        Parameters
        ----------
        r : int
            The NPU's rank.

        Returns
        -------
        list of int
            One coordinate per dimension, dimension 0 fastest.
        """
        return [(r // s) % n for s, n in zip(self.strides, self.spec.dims)]

    def sim_send(self, src: int, dst: int, tag, size: int, on_sent) -> None:
        """Inject a message now.

        Parameters
        ----------
        src, dst : int
            Source and destination NPU.
        tag : hashable
            Matching tag (a stream id, or ("p2p", comm_tag)).
        size : int
            Bytes.
        on_sent : callable or None
            Called with no arguments when the message arrives.
        """
        cid = self.tracker.next_send((tag, src, dst, size))
        e = self.tracker.entries.get(cid)
        if e is None:
            e = self.tracker.entries[cid] = _Entry()
        e.send_cb, e.has_send = on_sent, True
        self.transmit(src, dst, size, cid)

    def sim_recv(self, dst: int, src: int, tag, size: int, on_recv) -> None:
        """Post a receive; `on_recv()` runs when the matching message (same tag, src, dst, size and
        sequence number) has arrived: now (as an event) if it already has, else on arrival.

        Parameters
        ----------
        dst, src : int
            Receiving and sending NPU.
        tag : hashable
            Matching tag.
        size : int
            Bytes.
        on_recv : callable
            Called with no arguments.
        """
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
        """A message reached its destination: run the sender's callback, and the receiver's if
        its receive is posted (else mark the message finished for `sim_recv`).

        Parameters
        ----------
        cid : tuple
            The message's id (`Tracker.next_send`).
        """
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
        """Move a message from `src` to `dst`; call `arrived(cid)` when it is there.

        Parameters
        ----------
        src, dst : int
            Source and destination NPU.
        size : int
            Bytes.
        cid : tuple
            The message's id (`Tracker.next_send`).
        """
        raise NotImplementedError


class UnawareNetwork(Network):
    """No contention: a message takes floor(hops x latency + bytes / bandwidth) on the first
    dimension in which source and destination differ."""

    def delay(self, src: int, dst: int, size: int) -> int:
        """The time a message takes, alone on the network.

        Parameters
        ----------
        src, dst : int
            Source and destination NPU (ValueError if they are the same).
        size : int
            Bytes.

        Returns
        -------
        int
            Ticks (ns): floor(hops x latency + size / bandwidth) of the first dimension where the
            two differ (ring: the shorter way round; fully connected: 1 hop; switch: 2).
        """
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
        """Deliver a message after `delay(src, dst, size)` ticks.

        Parameters
        ----------
        src, dst : int
            Source and destination NPU.
        size : int
            Bytes.
        cid : tuple
            The message's id (`Tracker.next_send`).
        """
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
        """Start `chunk` (`size` bytes) now if the link is free, else queue it."""
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
    """Store-and-forward FIFO links on a 1-D Ring, FullyConnected or Switch (ConfigError for more
    dimensions, as ASTRA-sim). A chunk crosses its route link by link; each link carries one chunk
    at a time, in arrival order.

    Parameters
    ----------
    eq : EventQueue
        The event queue the links schedule on.
    spec : NetSpec
        A one-dimensional network.
    """

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
        """The nodes a message visits.

        Parameters
        ----------
        src, dst : int
            Source and destination NPU.

        Returns
        -------
        list of int
            From `src` to `dst`, both included: the shorter way round a ring (clockwise on a tie),
            direct on FullyConnected, through the switch (node n) on Switch.
        """
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
        """Put a message on the first link of its route.

        Parameters
        ----------
        src, dst : int
            Source and destination NPU.
        size : int
            Bytes.
        cid : tuple
            The message's id (`Tracker.next_send`).
        """
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
