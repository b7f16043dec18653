"""ASTRA-sim emulation, part 1: ASTRA-sim's two analytical networks: congestion-unaware (a delay
per message, no sharing) and congestion-aware (store-and-forward FIFO links), on the
discrete-event core of `emu_events` (integer ns ticks; `EventQueue` is importable from here too).

What the emulator needs to know (`NetSpec`, `SysSpec`, the collective names, the engines and the
emulation's exceptions) is in `emu_spec` and importable from here as before.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Callable

from ..errors import ConfigError
from .emu_events import _NOOP, EventQueue  # noqa: F401  (EventQueue: importable from here as before)
from .emu_spec import (  # noqa: F401  (re-exported: the specs' names, importable from here as before)
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    CUSTOM,
    ENGINES,
    REDUCE_SCATTER,
    Deadlock,
    NetSpec,
    NotServed,
    SysSpec,
    check_engine,
    on_core,
)


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
        self._pair_cache: dict = {}  # (src, dst) -> (hops x latency, bandwidth), congestion-unaware

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
        tr = self.tracker
        cid = tr.next_send((tag, src, dst, size))
        e = tr.entries.get(cid)
        if e is None:
            e = tr.entries[cid] = _Entry()
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
        tr = self.tracker
        cid = tr.next_recv((tag, src, dst, size))
        entries = tr.entries
        e = entries.get(cid)
        if e is not None:
            if e.finished:
                del entries[cid]
                self.eq.schedule(self.eq.now, on_recv)
            else:
                e.recv_cb, e.has_recv = on_recv, True
        else:
            e = entries[cid] = _Entry()
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
        hop_lat_bw = self._pair_cache.get((src, dst))
        if hop_lat_bw is None:
            hop_lat_bw = self._pair_cache[(src, dst)] = self._hop_lat_bw(src, dst)
        return int(hop_lat_bw[0] + size / hop_lat_bw[1])

    def _hop_lat_bw(self, src: int, dst: int) -> tuple[float, float]:
        """(hops x latency, bandwidth) of the first dimension where `src` and `dst` differ."""
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
                return hops * self.spec.lat[d], self.spec.bw[d]
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
        eq = self.eq
        eq.schedule(eq.now + self.delay(src, dst, size), self.arrived, cid)


class _Link:
    """A store-and-forward FIFO link: a chunk (a tuple) arrives floor(latency + bytes/bw) after
    it starts, as `on_arrive(*chunk)`, and the link is busy for floor(bytes/bw); waiting chunks go
    in order.

    The end of a busy period is a reserved place in the event queue (`EventQueue.reserve`),
    filled with `_free` only when a chunk waits: the link is free again once the queue has passed
    that place, exactly when a scheduled "free" event would have run, without running one per
    chunk (half the events of a congestion-aware emulation)."""

    __slots__ = ("eq", "bw", "lat", "pending", "on_arrive", "free_t", "free_bucket", "free_idx")

    def __init__(self, eq: EventQueue, bw: float, lat: float, on_arrive: Callable):
        self.eq, self.bw, self.lat = eq, bw, lat
        self.pending: deque = deque()
        self.on_arrive = on_arrive
        self.free_t = -1  # tick of the place where the current busy period ends
        self.free_bucket: list | None = None
        self.free_idx = -1

    @property
    def busy(self) -> bool:
        """Whether a chunk holds the link now (its end-of-busy place is not passed yet)."""
        eq = self.eq
        t = self.free_t
        # same tick: busy until the queue passes the place (in the list it runs now; a list already
        # run, when a later run() starts at the same tick, is passed)
        return bool(self.pending) or t > eq.now or (
            t == eq.now and self.free_bucket is eq._buckets.get(t) and self.free_idx > eq.pos)

    def send(self, size: int, chunk) -> None:
        """Start `chunk` (`size` bytes) now if the link is free, else queue it."""
        if self.busy:
            if not self.pending:  # the first waiter: the end of the busy period must start it
                self.free_bucket[self.free_idx] = (self._free, ())
            self.pending.append((size, chunk))
        else:
            self._start(size, chunk)

    def _start(self, size: int, chunk) -> None:
        eq = self.eq
        now = eq.now
        eq.schedule(now + int(self.lat + size / self.bw), self.on_arrive, *chunk)
        self.free_t = now + int(size / self.bw)
        self.free_bucket, self.free_idx = eq.reserve(self.free_t)
        if self.pending:
            self.free_bucket[self.free_idx] = (self._free, ())

    def _free(self) -> None:
        self._start(*self.pending.popleft())


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
        self.links: dict = {}  # (from, to) -> _Link, made on first use (FullyConnected 1024 has 10^6)
        self._paths: dict = {}  # (src, dst) -> the _Links of its route, in order
        self._times: dict = {}  # bytes -> (ticks to arrive, ticks the link is busy)
        self._hop_arrived = self._make_hop()

    def _route_links(self, src: int, dst: int) -> tuple[_Link, ...]:
        """The links a message from `src` to `dst` crosses, in order (cached per pair)."""
        path = self.route(src, dst)
        out = []
        for pair in zip(path, path[1:]):
            link = self.links.get(pair)
            if link is None:
                link = self.links[pair] = _Link(self.eq, self.spec.bw[0], self.spec.lat[0], self._hop_arrived)
            out.append(link)
        links = self._paths[(src, dst)] = tuple(out)
        return links

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
            if n - cw < cw:
                return [(src - k) % n for k in range(n - cw + 1)]
            return [(src + k) % n for k in range(cw + 1)]
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
        links = self._paths.get((src, dst)) or self._route_links(src, dst)
        self._hop_arrived(links, -1, size, cid)

    def _make_hop(self) -> Callable:
        """The function a chunk runs when it has crossed a link, `hop(links, i, size, cid)`
        (i = -1: it is injected): deliver it, or put it on its next link.

        It is `_Link.send` and `_Link._start` written out, touching the event lists itself in the
        same order (arrival, then the reserved end of the busy period), and a closure over what it
        uses, because it runs once per hop: 10^7 times for a 1024-NPU halvingDoubling on a ring."""
        eq, arrived, times_of = self.eq, self.arrived, self._times
        buckets, ticks, heappush = eq._buckets, eq._ticks, heapq.heappush
        lat, bw = self.spec.lat[0], self.spec.bw[0]

        def hop(links: tuple, i: int, size: int, cid) -> None:
            i += 1
            if i == len(links):
                arrived(cid)
                return
            link = links[i]
            now = eq.now
            t = link.free_t
            if link.pending or t > now or (t == now and link.free_bucket is buckets.get(t) and link.free_idx > eq.pos):
                link.send(size, (links, i, size, cid))  # busy: it queues
                return
            times = times_of.get(size)
            if times is None:
                times = times_of[size] = (int(lat + size / bw), int(size / bw))
            ta = now + times[0]
            bucket = buckets.get(ta)
            if bucket is None:
                bucket = buckets[ta] = []
                heappush(ticks, ta)
            bucket.append((hop, (links, i, size, cid)))
            tf = now + times[1]
            bucket = buckets.get(tf)
            if bucket is None:
                bucket = buckets[tf] = []
                heappush(ticks, tf)
            link.free_t, link.free_bucket, link.free_idx = tf, bucket, len(bucket)
            bucket.append(_NOOP)

        return hop
