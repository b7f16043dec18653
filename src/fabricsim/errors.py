"""The one error type for bad input.

A `ConfigError` carries a single-line message that names the field, the value and what is
accepted. The CLI prints it without a traceback and exits with code 2.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """Bad user input: a one-line message naming field, value and what is accepted."""

    def __init__(self, field: str, value: object, accepted: str):
        self.field = field
        self.value = value
        self.accepted = accepted
        super().__init__(f"{field}: invalid value {value!r}; {accepted}")


class UnsupportedGroupSize(ConfigError):
    """An algorithm cannot serve a collective on this many ranks."""

    def __init__(self, algorithm: str, collective: str, p: int, accepted: str):
        self.algorithm = algorithm
        self.collective = collective
        self.p = p
        ValueError.__init__(
            self,
            f"group size: {algorithm} {collective} cannot run on {p} ranks; {accepted}",
        )
        self.field, self.value, self.accepted = "group size", p, accepted
