"""ASTRA-sim emulation, part 3b: the native algorithms that walk a line of NPUs: ring, direct
(ASTRA-sim's `AllToAll` class, with a window) and halvingDoubling. Each is a queue of packets: a
packet is injected on init and after every receive, crosses the NPU<->memory bus as a bundle,
and is sent when the bundle comes back."""

from __future__ import annotations

import itertools
import math
from typing import Iterator

from ..errors import ConfigError
from .emu_base import Algorithm, RingLine
from .emu_network import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, REDUCE_SCATTER


class Ring(Algorithm):
    """Ring (and, as `Direct`, ASTRA-sim's AllToAll class): a queue of packets; a packet is
    injected on init and after every receive, crosses the memory bus, then is sent.

    Parameters
    ----------
    coll : str
        "all-reduce", "reduce-scatter", "all-gather" or "all-to-all".
    npu : int
        The NPU running this phase.
    line : RingLine
        The NPUs of the phase's dimension, in ring order.
    data_size : int
        Bytes the stream holds when the phase starts (one chunk, or the previous phase's output).
    window : int, optional
        Direct only: messages in flight at once (ASTRA-sim's directN); None for all n-1.
    """

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
        """Packets of a round that wait for received data (ASTRA-sim's non-zero-latency packets).

        Returns
        -------
        int
            `parallel` for direct, (n-1) x `parallel` for a ring.
        """
        if self.direct:
            return self.parallel
        return (self.n - 1) * self.parallel

    def run(self, event: str) -> None:
        """Advance the state machine on an event.

        Parameters
        ----------
        event : str
            "init", "general" (a bundle is back from the memory bus) or "recv" (a message arrived).
        """
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
        """Queue the next packet (to `receiver`, from `sender`) and push its bundle over the memory
        bus; a reduce-scatter's, or the first half of an all-reduce's, received packets carry a
        reduction."""
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
        """Send the packet's bundle over the memory bus; direct then aims at its next peer.

        Parameters
        ----------
        to_memory : bool
            A packet of the round's first (zero-latency) part: it carries no reduction.
        processed : bool
            The packet carries a reduction (adds its memory time unless `to_memory`).
        """
        self.stream.sys.bundle(self.stream, self.msg, processed and not to_memory)
        if self.direct:
            self.receiver = self.line.next(self.receiver, True)
            if self.receiver == self.id:
                self.receiver = self.line.next(self.receiver, True)
            self.sender = self.line.next(self.sender, False)
            if self.sender == self.id:
                self.sender = self.line.next(self.sender, False)

    def ready(self) -> bool:
        """Send the oldest queued packet (and post its receive) if a bundle is back and messages
        remain.

        Returns
        -------
        bool
            Whether a packet was sent.
        """
        if not self.packets or self.stream_count == 0 or self.free_packets == 0:
            return False
        dest, src = self.packets.pop(0)
        self.send(dest, self.msg)
        self.recv(src, self.msg)
        self.stream_count -= 1
        self.free_packets -= 1
        return True

    def iterate(self) -> None:
        """Leave the phase once every message is sent and every bundle is back."""
        if self.stream_count == 0 and self.free_packets == self.parallel:
            self.exit()


class Direct(Ring):
    """ASTRA-sim's direct algorithm (its `AllToAll` class): every peer of the line at once, or
    `window` at a time; the `Ring` state machine with `direct` set."""

    direct = True


class HalvingDoubling(Algorithm):
    """ASTRA-sim's halvingDoubling: log2(n) exchanges with peers at distance 1, 2, 4, ... (halving
    the message, for reduce-scatter and the first half of an all-reduce) or n/2, n/4, ...
    (doubling it, for all-gather and the second half).

    On n NPUs that is not a power of two it does what ASTRA-sim's C++ does (docs/astra.md): the
    exchange count is truncated from the real log2 (all-reduce: int(2 log2 n), else int(log2 n)),
    distances and sizes are truncated products (n/2 -> floor(n/2), then halved), and an
    all-reduce never turns back (its distance never equals n). Peers that do not pair up leave
    NPUs waiting for messages that are never sent: the emulation then deadlocks, as ASTRA-sim
    never finishes those NPUs.

    Parameters
    ----------
    coll : str
        "all-reduce", "reduce-scatter" or "all-gather" (all-to-all is a ConfigError, as ASTRA-sim
        exits on it).
    npu : int
        The NPU running this phase.
    line : RingLine
        The NPUs of the phase's dimension (any number of them).
    data_size : int
        Bytes the stream holds when the phase starts.
    """

    def __init__(self, coll: str, npu: int, line: RingLine, data_size: int):
        if coll == ALL_TO_ALL:
            raise ConfigError("all-to-all-implementation", "halvingDoubling",
                              "ASTRA-sim's halvingDoubling has no all-to-all (it exits); accepted: ring, direct")
        n = line.size
        self.coll = coll
        self.id = npu
        self.line = line
        self.n = n
        # ASTRA-sim assigns the double log2(n) (times 2 for all-reduce) to ints: truncation
        self.log = int(math.log2(n))
        self.stream_count = int(2 * math.log2(n)) if coll == ALL_REDUCE else self.log
        self.packets: list = []
        self.free_packets = 0
        self.zero = 0
        self.nonzero = 0
        self.toggle = False
        self.final_data_size = {ALL_REDUCE: data_size, ALL_GATHER: data_size * n}.get(coll, data_size // n)
        self.walk = halving_doubling_walk(coll, n, data_size)
        self.offset, self.msg = next(self.walk)
        self.receiver = self.sender = npu
        self._aim()

    def _aim(self) -> None:
        """Peer at the current distance: `offset` steps round the line, clockwise from an even
        block of `offset` NPUs, anticlockwise from an odd one (ASTRA-sim walks it step by step;
        one jump is the same NPU). At distance 0 ASTRA-sim's walk does not run: the receiver is
        the NPU itself and the sender stays the previous one (never used: no exchange is left)."""
        if self.offset == 0:
            self.receiver = self.id
            return
        index = self.line.index
        clockwise = (index // self.offset) % 2 == 0
        self.receiver = self.sender = self.line.at(index + self.offset if clockwise else index - self.offset)

    def run(self, event: str) -> None:
        """Advance the state machine on an event.

        Parameters
        ----------
        event : str
            "init", "general" (a bundle is back from the memory bus) or "recv" (a message arrived).
        """
        if event == "general":
            self.free_packets += 1
            self.ready()
            self.iterate()
        elif event == "recv":
            self.insert()
        else:
            self.insert()

    def insert(self) -> None:
        """Queue the next exchange (peer, message size) and push its bundle over the memory bus;
        all but the first exchange of a reduce-scatter (or of an all-reduce's first half) reduce."""
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
        """Send the exchange's bundle over the memory bus, then move to the next distance and
        message size (an all-reduce turns back at distance n).

        Parameters
        ----------
        processed : bool
            The exchange carries a reduction (adds its memory time).
        """
        self.stream.sys.bundle(self.stream, self.msg, processed)
        self.offset, self.msg = next(self.walk)
        self._aim()

    def ready(self) -> bool:
        """Send the oldest queued exchange (and post its receive) if a bundle is back and
        exchanges remain.

        Returns
        -------
        bool
            Whether an exchange was sent.
        """
        if not self.packets or self.stream_count == 0 or self.free_packets == 0:
            return False
        dest, src, size = self.packets.pop(0)
        self.send(dest, size)
        self.recv(src, size)
        self.stream_count -= 1
        self.free_packets -= 1
        return True

    def iterate(self) -> None:
        """Leave the phase once every exchange is sent and its bundle is back."""
        if self.stream_count == 0 and self.free_packets == 1:
            self.exit()


def halving_doubling_distances(coll: str, n: int) -> list[int]:
    """The distances of the exchanges ASTRA-sim's halvingDoubling makes on a line of n NPUs, in
    order, with its integer arithmetic (see `HalvingDoubling`).

    Parameters
    ----------
    coll : str
        "all-reduce", "reduce-scatter" or "all-gather".
    n : int
        NPUs on the line (>= 2).

    Returns
    -------
    list of int
        One distance (in NPUs along the line) per exchange: 1, 2, 4, ... (reduce-scatter; an
        all-reduce turns back at n, which only a power of two reaches) or floor(n/2), floor(n/4),
        ... (all-gather).
    """
    count = int(2 * math.log2(n)) if coll == ALL_REDUCE else int(math.log2(n))
    return [offset for offset, _ in itertools.islice(halving_doubling_walk(coll, n), count)]


def halving_doubling_walk(coll: str, n: int, data_size: int = 0) -> Iterator[tuple[int, int]]:
    """(distance, message bytes) of each exchange of ASTRA-sim's halvingDoubling on a line of n
    NPUs, in order and without end, with its integer arithmetic: the distance and the size move by
    a double multiplier and are truncated to ints; an all-reduce turns back at distance n.

    Parameters
    ----------
    coll : str
        "all-reduce", "reduce-scatter" or "all-gather".
    n : int
        NPUs on the line (>= 2).
    data_size : int
        The collective's bytes per NPU (0: distances only).

    Yields
    ------
    (int, int)
        Distance in NPUs along the line, message bytes.
    """
    if coll == ALL_GATHER:
        offset, msg, mult = n // 2, data_size, 0.5
    else:
        offset, msg, mult = 1, data_size // 2, 2.0
    while True:
        yield offset, msg
        offset = int(offset * mult)
        msg = int(msg / mult)
        if offset == n and coll == ALL_REDUCE:
            mult = 0.5
            offset = int(offset * mult)
            msg = int(msg / mult)


def halving_doubling_unpaired(coll: str, n: int) -> tuple[int, int, int, int] | None:
    """The first exchange at which ASTRA-sim's halvingDoubling pairs NPUs one-sidedly: NPU i
    sends to, and waits for, NPU j, whose own peer at that distance is another NPU k.

    Parameters
    ----------
    coll : str
        "all-reduce", "reduce-scatter" or "all-gather".
    n : int
        NPUs on the line (>= 2).

    Returns
    -------
    tuple of int or None
        (distance, i, j, k), line positions, for the first such exchange; None when every
        exchange pairs each NPU with an NPU that exchanges with it (always for powers of two).
    """
    import numpy as np  # lazy: numpy costs start-up time and only this explanation needs it

    idx = np.arange(n)
    for o in halving_doubling_distances(coll, n):
        if o == 0:
            continue
        peer = np.where((idx // o) % 2 == 0, idx + o, idx - o) % n
        bad = np.flatnonzero(peer[peer] != idx)
        if bad.size:
            i = int(bad[0])
            return o, i, int(peer[i]), int(peer[peer[i]])
    return None
