"""Progress of long library calls: one callback shape shared by every layer.

A long call (a reproduction, a training simulation, an ASTRA-sim workload, a sweep of collective
sizes) takes `progress=None` and calls `progress(done, total, label)` now and then: `done` of
`total` units of work finished (`total` 0: unknown), `label` the phase or item now running
("building schedule", "simulating", a point's name). The library never draws anything; the CLI
turns the calls into a rich progress bar on stderr (`fabricsim.cli.progress`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

Progress = Callable[[int, int, str], None]


def report(progress: Progress | None, done: int, total: int, label: str) -> None:
    """Call `progress(done, total, label)` if there is a callback.

    Parameters
    ----------
    progress : callable or None
        The caller's callback.
    done, total : int
        Units finished and in all (total 0: unknown).
    label : str
        The phase or item now running.
    """
    if progress is not None:
        progress(done, total, label)


def phase(progress: Progress | None, label: str) -> Progress | None:
    """A callback for one phase of a longer call: forwards `(done, total)` with the phase's name.

    Parameters
    ----------
    progress : callable or None
        The caller's callback.
    label : str
        The phase's name, shown before the inner label (`"simulating"`, `"simulating: DP all-reduce"`).

    Returns
    -------
    callable or None
        None when `progress` is None, so inner code can skip its bookkeeping.
    """
    if progress is None:
        return None

    def inner(done: int, total: int, what: str = "") -> None:
        progress(done, total, f"{label}: {what}" if what else label)

    return inner


def notice(message: str) -> None:
    """Tell a person at a terminal about a one-off wait (a kernel compiling): one line on stderr.

    Written only when stderr is a terminal, so pipes, logs and tests see nothing; under the CLI's
    progress bar it appears above the bar (rich redirects stderr while it draws).

    Parameters
    ----------
    message : str
        The line, without "fabricsim: " or a newline.
    """
    stream = sys.stderr
    if stream is not None and getattr(stream, "isatty", lambda: False)():
        stream.write(f"fabricsim: {message}\n")
        stream.flush()
