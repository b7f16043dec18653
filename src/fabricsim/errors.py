"""The one error type for bad input.

A `ConfigError` carries a single-line message that names the field, the value and what is
accepted. The CLI prints it without a traceback and exits with code 2. `ScheduleError` (a schedule
that fails verification: a bug, not bad input; exit code 1) lives here too, so the CLI can catch
it without importing the collectives.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """Bad user input: a one-line message naming field, value and what is accepted.

    Parameters
    ----------
    field : str
        The field, as the user wrote it (`network.bandwidth`, `--sizes`, a file and a path).
    value : object
        The value given.
    accepted : str
        What is accepted, as a phrase (`accepted: ...`).
    """

    def __init__(self, field: str, value: object, accepted: str):
        self.field = field
        self.value = value
        self.accepted = accepted
        super().__init__(f"{field}: invalid value {value!r}; {accepted}")


class UnsupportedGroupSize(ConfigError):
    """An algorithm cannot serve a collective on this many ranks.

    Parameters
    ----------
    algorithm : str
        The algorithm's name.
    collective : str
        The collective.
    p : int
        Ranks in the group (the error's `value`).
    accepted : str
        Which group sizes it serves.
    """

    def __init__(self, algorithm: str, collective: str, p: int, accepted: str):
        self.algorithm = algorithm
        self.collective = collective
        self.p = p
        ValueError.__init__(
            self,
            f"group size: {algorithm} {collective} cannot run on {p} ranks; {accepted}",
        )
        self.field, self.value, self.accepted = "group size", p, accepted


class ScheduleError(AssertionError):
    """A schedule does not do what its collective promises (a bug in an algorithm, not in the input).

    Raised by `collectives.verify`, which re-exports it.
    """
