"""ASTRA-sim emulation, part 0: the discrete-event core, integer ns ticks run in time order and,
within a tick, in the order they were scheduled (ASTRA-sim's event lists)."""

from __future__ import annotations

import gc
import heapq
from contextlib import contextmanager
from typing import Callable, Iterator

_NOOP = (None, ())  # a reserved place in a tick's event list (EventQueue.reserve; inlined in emu_network)

YOUNG_GC_THRESHOLD = 10_000
"""Allocations between two collections of the youngest GC generation while events run (Python's
default is 700). An emulation allocates a few short-lived objects per event (tuples, entries,
lists) and keeps 10^4-10^5 long-lived ones (NPU state, caches): at the default, collection was a
quarter of a 1024-NPU emulation's time (61 s -> 47 s); cycles are still collected, less often."""


@contextmanager
def fewer_gc_passes() -> Iterator[None]:
    """Raise the youngest generation's GC threshold to `YOUNG_GC_THRESHOLD` for the block (never
    lower it), and restore the process's thresholds afterwards, also on an exception."""
    old = gc.get_threshold()
    gc.set_threshold(max(old[0], YOUNG_GC_THRESHOLD), *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


class EventQueue:
    """Backend event queue: time-ordered, first-in first-out within a tick.

    Events are kept in one list per tick (a heap holds only the distinct ticks): the order is
    exactly that of a heap keyed by (tick, insertion number), at O(1) per event instead of
    O(log events), which matters when a 1024-NPU emulation holds 10^5 events at once.
    """

    def __init__(self):
        self.now = 0
        self.pos = -1  # index of the running event in its tick's list (-1: none ran yet)
        self._ticks: list[int] = []  # heap of the ticks that have a bucket
        self._buckets: dict[int, list] = {}  # tick -> [(fn, args), ...] in insertion order

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
        bucket = self._buckets.get(t)
        if bucket is None:
            bucket = self._buckets[t] = []
            heapq.heappush(self._ticks, t)
        bucket.append((fn, args))

    def reserve(self, t: int) -> tuple[list, int]:
        """Hold the next place at tick `t` for an event that may never be needed: it stays a
        no-op unless filled in (`bucket[index] = (fn, args)`) before its turn comes. A link's
        "free" event is one: only a message waiting for the link needs it, and a filled place runs
        exactly where a scheduled event would have.

        Parameters
        ----------
        t : int
            The tick, ns; not before `now`.

        Returns
        -------
        tuple of (list, int)
            The tick's event list and the place's index in it.
        """
        self.schedule(t, None)  # the place: (None, ()) = _NOOP, run as nothing until filled in
        bucket = self._buckets[t]
        return bucket, len(bucket) - 1

    def run(self, on_progress: Callable[[], None] | None = None, every: int = 1 << 16) -> None:
        """Run events in time order until none is left; `now` follows each event's tick.

        Parameters
        ----------
        on_progress : callable, optional
            Called with no arguments after every `every` events (progress bars).
        every : int
            Events between calls.
        """
        with fewer_gc_passes():
            self._run(on_progress, every)

    def _run(self, on_progress: Callable[[], None] | None, every: int) -> None:
        ticks, buckets = self._ticks, self._buckets
        n = 0
        while ticks:
            t = heapq.heappop(ticks)
            self.now = t
            bucket = buckets[t]
            i = -1
            for i, (fn, args) in enumerate(bucket):  # sees the events appended for this tick meanwhile
                if fn is not None:  # None: a reserved place nobody filled
                    self.pos = i
                    fn(*args)
            del buckets[t]
            if on_progress is not None:
                n += i + 1
                if n >= every:
                    n = 0
                    on_progress()
