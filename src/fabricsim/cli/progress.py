"""The CLI's progress bar: one transient rich bar on stderr for every long command.

Every command that can run longer than about 2 s opens `progress_bar(...)` and hands the callback
it yields to the library (`fabricsim.progress`). The bar is off when stderr is not a terminal
(pipes, CI logs) or with `--quiet`; the callback is then a no-op, so outputs are the same either way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..progress import Progress


def _noop(done: int, total: int, label: str = "") -> None:
    return None


@contextmanager
def progress_bar(title: str, quiet: bool = False, console=None) -> Iterator[Progress]:
    """A progress callback drawn as a transient bar: `title: label`, a bar, done/total, elapsed time
    and the estimated time left.

    Parameters
    ----------
    title : str
        What the command does ("reproduce fred", "train", "astra").
    quiet : bool
        No bar (`--quiet`).
    console : rich Console, optional
        Where to draw (default: a Console on stderr).

    Yields
    ------
    callable
        `progress(done, total, label)`; a no-op when the bar is off.
    """
    from rich.console import Console

    con = console if console is not None else Console(stderr=True)
    if quiet or not con.is_terminal:
        yield _noop
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=con, transient=True) as bar:
        task = bar.add_task(title, total=None)

        def tick(done: int, total: int, label: str = "") -> None:
            bar.update(task, completed=done, total=total or None, description=f"{title}: {label}" if label else title)

        yield tick


QUIET_HELP = "no progress bar on stderr (it is also off when stderr is not a terminal)"
