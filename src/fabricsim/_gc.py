"""`gc_paused()`: Python's cyclic garbage collector held off while a loop allocates millions of
small objects that live on (a workload graph's task rows, an event loop's heap entries).

Each collection walks every live container, so a loop that keeps what it allocates pays for its
own growth again and again (5-10% of building and simulating the 854,658 tasks of the 1T job,
`benchmarks/bench_train_scale.py`). Nothing these loops allocate forms a cycle that must be
freed before they end; the collector is restored as it was on the way out, exception or not.
"""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def gc_paused():
    """Hold off cyclic garbage collection inside the block (module doc); reference counting still
    frees what is dropped. Restores the collector's previous state."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
