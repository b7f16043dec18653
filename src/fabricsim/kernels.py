"""Compiled kernels without a cold-compile tax: numba's code cached on disk, or the same Python.

The flow model's event loop (`network.flow.kernel`, `network.flow.maxmin_kernel`, `network.flow.solo`)
is numba-compiled. numba caches what it compiles on disk (`cache=True`, beside the source), but
the first run of a fresh install pays the compile itself: about 10 s on two cores for the flow
model, where a 64-rank collective then simulates in milliseconds. So a kernel module is written
once, as plain Python decorated with `kernel`, and `load` hands a caller one of two builds of it:

- **compiled** (numba, cached on disk): when its kernels are already in numba's cache, or when
  the run is big enough (`work` at least `PYTHON_LIMIT`) that interpreting it would cost more than
  compiling; a compile on a terminal says so on stderr first (`progress.notice`);
- **Python** (the same source, undecorated, loaded as a private copy of the module): a small run
  on a cold cache.

The two builds compute the same IEEE operations in the same order (numba compiles without
fast-math, and the kernels call no libm function nor numpy reduction), so their results are
bit-identical (tests/test_kernels.py runs both on the same simulations); which one ran is a
matter of speed, never of the answer.
"""

from __future__ import annotations

import importlib.util
import threading
from types import ModuleType
from typing import Callable

__all__ = ["PYTHON_LIMIT", "compiled", "is_cached", "kernel", "load", "sibling"]

PYTHON_LIMIT = 200_000
"""Work below which a cold cache runs the Python build. A caller states its run's work in
interpreted steps: the event loop units x classes (every event re-shares about every class), the
one-pass solo timing units plus route entries. Measured on this 2-core machine
(benchmarks/bench_startup.py, `kernels` rows): the loop interprets about 7 us per unit of work
(200 contending flows, 40,000: 0.13 s; 1,000, 10^6: 7 s) against 0.16 s compiled and about 10 s to
compile, so the limit keeps an interpreted run near a second and everything bigger compiled."""

_PYTHON = "[python]"  # suffix of a Python build's module name: `kernel` leaves its functions as they are
_lock = threading.RLock()  # re-entrant: a build executing imports its siblings' builds
_builds: dict[str, ModuleType] = {}  # Python builds, made once per process (like imported modules)
# per kernel module, whether numba's disk cache holds it: read once per process (a compile fills it), so
# a run costs no file read after the first
_cached: dict[str, bool] = {}


def kernel(fn: Callable) -> Callable:
    """Decorate a kernel function: numba-compiled (cached on disk) in the module itself, left as
    Python in its Python build (`load`). numba is imported on the first compiled definition."""
    if fn.__module__.endswith(_PYTHON):
        return fn
    from numba import njit  # lazy: importing numba costs about 0.3 s

    return njit(cache=True)(fn)


def _python_build(name: str) -> ModuleType:
    """The module `name` executed afresh under `name[python]`, its kernels plain functions."""
    with _lock:
        mod = _builds.get(name)
        if mod is None:
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None:  # pragma: no cover - kernel modules are in the package
                raise ImportError(name)
            code = spec.loader.get_code(name)  # the module's own (byte-compiled) source
            mod = ModuleType(name + _PYTHON)
            mod.__package__ = name.rpartition(".")[0]  # its relative imports resolve as the module's
            mod.__file__ = spec.origin
            exec(code, mod.__dict__)  # noqa: S102 - our own module's code, run as a second build
            _builds[name] = mod
    return mod


def sibling(current: str, name: str) -> ModuleType:
    """Kernel module `name` in the same build as the module named `current` (its `__name__`):
    what a kernel module imports another kernel module's functions through."""
    if current.endswith(_PYTHON):
        return _python_build(name)
    return importlib.import_module(name)


def is_cached(module: ModuleType, entries: tuple[str, ...]) -> bool:
    """Whether numba's disk cache holds a compiled version of every function named in `entries`.

    Reads each dispatcher's cache index (numba's own files, keyed by the source file's stamp);
    False when any is missing, stale or unreadable.
    """
    for entry in entries:
        try:
            cache = getattr(module, entry)._cache
            index = cache._cache_file._load_index()
        except Exception:  # noqa: BLE001 - any failure to read means: not known to be cached
            return False
        if not index:
            return False
    return True


def _in_cache(name: str, module: ModuleType, entries: tuple[str, ...]) -> bool:
    """`is_cached`, read once per process per module (`_cached`)."""
    if name not in _cached:
        _cached[name] = is_cached(module, entries)
    return _cached[name]


def compiled(name: str, entries: tuple[str, ...], label: str, seconds: int = 10) -> ModuleType:
    """numba's build of kernel module `name`; on a cold cache a terminal is told first that it
    compiles (`progress.notice`), once per process.

    Parameters
    ----------
    name, entries, label : str, tuple of str, str
        As `load` takes them.
    seconds : int
        About how long the compile takes on two cores, for the notice.

    Returns
    -------
    module
        `import name`.
    """
    module = importlib.import_module(name)
    if not _in_cache(name, module, entries):
        from .progress import notice

        notice(f"compiling {label} (numba, once per install; about {seconds} s)")
        _cached[name] = True  # what compiles now is cached for the rest of this process and the next
    return module


def load(name: str, entries: tuple[str, ...], work: float, label: str) -> ModuleType:
    """The build of kernel module `name` a run of `work` units should use (module doc).

    Parameters
    ----------
    name : str
        The kernel module (`fabricsim.network.flow.kernel`).
    entries : tuple of str
        The functions the caller calls from Python (numba compiles what they call with them).
    work : float
        The run's size in interpreted steps (`PYTHON_LIMIT`); at least `PYTHON_LIMIT` compiles on
        a cold cache.
    label : str
        What is compiled, for the notice (`"the flow model's kernels"`).

    Returns
    -------
    module
        The compiled module (`compiled`) or its Python build.
    """
    if work < PYTHON_LIMIT and not _in_cache(name, importlib.import_module(name), entries):
        return _python_build(name)
    return compiled(name, entries, label)
