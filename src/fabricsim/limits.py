"""Resource limits that explain themselves.

A request is sized before anything is allocated (NPUs of a topology, blocks of a schedule,
flows of a traffic file, tasks of a training graph, entries of a size range, bytes of an input
file) and refused beyond a documented limit with a one-line ConfigError that gives the estimate
and the way to raise the limit: `fabricsim --limit NAME=VALUE COMMAND ...` on the command line,
`with raised_limits(NAME=VALUE):` in Python.

The defaults keep every request under about 8 GiB and a few minutes on a laptop; a user who
means more raises the one limit the message names. The limits in force are a context variable
(per thread and per task, not global state): `raised_limits` sets them for a block.

    npus          262,144      NPUs of one topology (a 512x512 torus; 2-3.5 GB for a collective at that size)
    links         4,194,304    directed links of one topology
    route_table   67,108,864   entries (nodes x nodes) of one fewest-hop routing table: direct and
                               circulant topologies (8192 nodes, ~1.4 GB, ~10 s)
    ranks         262,144      ranks named by one group or range (`-g 0-262143`)
    sizes         10,000       message sizes in one `--sizes` range
    blocks        50,000,000   transfers x blocks of one collective schedule (memory ~ 40 B each)
    flows         20,000,000   flows of one flow-model run or traffic file
    tasks         40,000,000   tasks of one training graph (all iterations)
    chunks        65,536       chunks one collective is split into
    iterations    10,000       training iterations of one run
    proposals     100,000      MCMC proposals (steps x rounds) of one TopoOpt search (`topology optimize`)
    combos        1,000,000    combinations of the knobs one `fabricsim plan` search judges (~30 us each)
    points        1,000,000    points of one sweep, counted before they are expanded (`fabricsim sweep`)
    file_bytes    256 MiB      bytes of one input file (YAML, JSON, text workload, trace)
    trace_nodes   10,000,000   nodes of the Chakra traces one export writes (all NPUs; ~450 B each)
"""

from __future__ import annotations

import contextlib
from decimal import Decimal
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace

from .errors import ConfigError


@dataclass(frozen=True)
class Limits:
    """The limits in force; each is the most of one thing a single request may ask for.

    Parameters
    ----------
    npus, links, route_table, ranks, sizes, blocks, flows, tasks, chunks, iterations, proposals, combos, points, trace_nodes : int
        Counts (see the module docstring for what each counts and its default).
    file_bytes : int
        Bytes of one input file.
    """

    npus: int = 262_144
    links: int = 4_194_304
    route_table: int = 67_108_864
    ranks: int = 262_144
    sizes: int = 10_000
    blocks: int = 50_000_000
    flows: int = 20_000_000
    tasks: int = 40_000_000
    chunks: int = 65_536
    iterations: int = 10_000
    proposals: int = 100_000
    combos: int = 1_000_000
    points: int = 1_000_000
    file_bytes: int = 256 * 2**20
    trace_nodes: int = 10_000_000


DEFAULT_LIMITS = Limits()
"""The documented defaults."""

_LIMITS: ContextVar[Limits] = ContextVar("fabricsim_limits", default=DEFAULT_LIMITS)


def current_limits() -> Limits:
    """The limits in force in this context.

    Returns
    -------
    Limits
        `DEFAULT_LIMITS` unless raised by `raised_limits` or `fabricsim --limit`.
    """
    return _LIMITS.get()


def limit_names() -> list[str]:
    """The names `--limit NAME=VALUE` accepts.

    Returns
    -------
    list of str
        Field names of `Limits`, in declaration order.
    """
    return [f.name for f in fields(Limits)]


@contextlib.contextmanager
def raised_limits(**values: int):
    """Run a block with some limits changed.

    Parameters
    ----------
    **values : int
        NAME=VALUE for names of `Limits` (counts; `file_bytes` in bytes).

    Yields
    ------
    Limits
        The limits in force inside the block.
    """
    unknown = sorted(set(values) - set(limit_names()))
    if unknown:
        raise ConfigError("--limit", unknown[0], "accepted: " + ", ".join(limit_names()))
    token = _LIMITS.set(replace(current_limits(), **{k: int(v) for k, v in values.items()}))
    try:
        yield _LIMITS.get()
    finally:
        _LIMITS.reset(token)


def parse_limit(text: str) -> tuple[str, int]:
    """One `--limit NAME=VALUE` item.

    Parameters
    ----------
    text : str
        `npus=1000000`, `blocks=2e8`, `file_bytes=1GiB` (sizes take units).

    Returns
    -------
    (str, int)
        The limit's name and its new value (>= 1); ConfigError naming `--limit` otherwise.

    Examples
    --------
    >>> parse_limit("npus=1e6")
    ('npus', 1000000)
    >>> parse_limit("file_bytes=1GiB")
    ('file_bytes', 1073741824)
    """
    name, eq, value = str(text).partition("=")
    name = name.strip().lower().replace("-", "_")
    if not eq or name not in limit_names():
        raise ConfigError("--limit", text, "accepted: NAME=VALUE with NAME one of " + ", ".join(limit_names()))
    if name == "file_bytes":
        from .units import parse_size

        n = parse_size(value, "--limit file_bytes")
    else:
        try:
            n = float(value)
        except ValueError:
            n = float("nan")
    if not (n == n) or n < 1 or n > 2**62 or n != int(n):
        raise ConfigError("--limit", text, f"{name} must be a whole number >= 1 (e.g. {name}=1e6)")
    return name, int(n)


def parse_limits(items) -> dict[str, int]:
    """Every `--limit NAME=VALUE` of a command line (`parse_limit`), each NAME once.

    Parameters
    ----------
    items : iterable of str
        The `--limit` values, in order.

    Returns
    -------
    dict of str to int
        NAME -> new value; ConfigError naming `--limit` when a NAME is given twice (the last would
        win in silence).

    Examples
    --------
    >>> parse_limits(["npus=8", "blocks=1e9"])
    {'npus': 8, 'blocks': 1000000000}
    >>> parse_limits(["npus=8", "npus=16"])
    Traceback (most recent call last):
    ...
    fabricsim.errors.ConfigError: --limit: invalid value 'npus=16'; limit 'npus' is given twice (first 'npus=8'); accepted: each limit once
    """
    out: dict[str, int] = {}
    first: dict[str, str] = {}
    for text in items:
        name, value = parse_limit(text)
        if name in out:
            raise ConfigError("--limit", text, f"limit {name!r} is given twice (first {first[name]!r}); "
                                               "accepted: each limit once")
        out[name], first[name] = value, str(text)
    return out


def check_limit(name: str, estimate: float, what: str, field: str, value: object) -> None:
    """Refuse a request whose estimated size exceeds a limit, naming the estimate and the way out.

    Parameters
    ----------
    name : str
        The limit (a field of `Limits`).
    estimate : float
        The request's size in that limit's unit (may be huge; never allocated).
    what : str
        What the estimate counts, as a phrase (`NPUs`, `schedule blocks (transfers x blocks)`).
    field : str
        The input field named in the error (`topology`, `--option chunks`).
    value : object
        The value the user gave.

    Returns
    -------
    None
        ConfigError (one line: field, value, the estimate, the limit, `--limit NAME=...`) when
        `estimate` exceeds the limit.

    Examples
    --------
    >>> check_limit("npus", 64, "NPUs", "topology", "ring:64")   # fine: returns None
    >>> check_limit("npus", 10**8, "NPUs", "topology", "torus:10000x10000")
    Traceback (most recent call last):
    ...
    fabricsim.errors.ConfigError: topology: invalid value 'torus:10000x10000'; it needs 100,000,000 NPUs, beyond the limit of 262,144 (raise it with fabricsim --limit npus=N, or raised_limits(npus=N) in Python)
    """
    limit = getattr(current_limits(), name)
    if estimate > limit:
        raise ConfigError(field, value, f"it needs {_count(estimate)} {what}, beyond the limit of {_count(limit)} "
                                        f"(raise it with fabricsim --limit {name}=N, or raised_limits({name}=N) in Python)")


def _count(x: float) -> str:
    """A count for a message: digits grouped, or in scientific form when astronomically large."""
    if x >= 1e18:  # Decimal: an int beyond a float's range still prints (a spec of 400 digits)
        return f"{x:.3g}" if x < 1e300 else f"{Decimal(x):.3g}"
    return f"{int(x):,}"
