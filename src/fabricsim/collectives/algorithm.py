"""What an algorithm declares about itself: its typed options and its placement needs.

Every algorithm file ends with one `Algorithm(...)` descriptor; `registry.py` registers it with
one line. Options are typed (`Option`): one parser turns what a user wrote (the command line's
`-o KEY=VALUE`, a config's `ring,bidirectional=no`, a YAML mapping) into typed values, and a bad
value is a one-line error naming the option, the value and what is accepted.

    >>> from fabricsim.collectives.registry import choose_algorithm
    >>> choose_algorithm("ring,bidirectional=no")
    AlgorithmChoice(name='ring', options=(('bidirectional', False),))
    >>> str(choose_algorithm("swing", {"dims": "4x4"}))
    'swing,dims=4x4'
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping

from ..errors import ConfigError
from ..limits import check_limit
from ._common import is_pow2
from ..ir import Schedule

OptionType = Literal["bool", "int", "ints", "choice", "shape", "choice-per-dim"]
Helper = Literal["reducing-switch", "switch-tree", "node-switches"]

_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")
# int options that size a schedule, and the resource limit (`fabricsim.limits`) each is under
_LIMITED = {"chunks": "chunks", "channels": "chunks"}
_MAX_DIGITS = 30  # longer integers are refused unread (int() of 5000 digits raises)


@dataclass(frozen=True)
class Option:
    """One typed option of an algorithm.

    Parameters
    ----------
    name : str
        As written after the algorithm's name (`chunks`, `bidirectional`).
    type : {"bool", "int", "choice", "shape", "choice-per-dim"}
        bool: true/false/yes/no/on/off/1/0; int: an integer >= `minimum`; choice: one of
        `choices` (or an alias in `aliases`); shape: dimension sizes as `4x4`, `16` or a list;
        choice-per-dim: one choice, or one per dimension as `ring/direct` or a list; ints:
        integers >= `minimum` as `1/5` or a list.
    default : Any
        The value when the option is not given (None: the algorithm derives it, see `help`).
    help : str
        What the option does, for `fabricsim algorithms`.
    choices : tuple of str
        The accepted values of a choice or choice-per-dim option (empty for other types).
    aliases : mapping
        Other spellings of choices, alias -> choice (any case).
    minimum : int
        Smallest accepted value of an int option (default 1).
    collectives : tuple of str
        The collectives the option changes (empty: all the algorithm serves); the command line
        refuses it for another (`Algorithm.check_applies`) rather than ignore it.
    """

    name: str
    type: OptionType
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    minimum: int = 1
    collectives: tuple[str, ...] = ()

    def describe(self) -> str:
        """`name (type, default X)`: one line for listings."""
        kind = {"bool": "true|false", "int": f"integer >= {self.minimum}",
                "ints": f"integers >= {self.minimum} as a/b/...", "shape": "shape like 4x4",
                "choice": "|".join(self.choices),
                "choice-per-dim": "|".join(self.choices) + " (or one per dimension, a/b/...)"}[self.type]
        default = "derived" if self.default is None else _text(self.default)
        return f"{self.name} ({kind}; default {default})"

    def parse(self, value: Any, where: str = "option") -> Any:
        """The typed value of `value`, as this option's `type` reads it.

        Parameters
        ----------
        value : Any
            A string from the command line or a config string, or a YAML scalar or list.
        where : str
            The field named in errors (`network.algorithms.all-reduce`, `--option`).

        Returns
        -------
        Any
            bool, int, str (choice), tuple of int (shape), or str / tuple of str (choice-per-dim);
            a one-line ConfigError naming `where`, the value and what is accepted otherwise.
        """
        field_name = _field(where, self.name)
        if self.type == "bool":
            if isinstance(value, bool):
                return value
            key = str(value).strip().lower()
            if key in _TRUE or key in _FALSE:
                return key in _TRUE
            raise ConfigError(field_name, value, "accepted: true or false (yes/no, on/off, 1/0)")
        if self.type == "int":
            v = _integer(value)
            if v is None or v < self.minimum:
                raise ConfigError(field_name, value, f"accepted: an integer >= {self.minimum}")
            if self.name in _LIMITED:  # refused here, before a builder allocates per piece
                check_limit(_LIMITED[self.name], v, self.name, field_name, value)
            return v
        if self.type == "ints":
            # `str(choice)` writes a tuple of ints as 1x5: read it back too
            items = list(value) if isinstance(value, (list, tuple)) else re.split(r"[/x]", str(value).lower())
            got = tuple(_integer(x) for x in items)
            if not got or any(v is None or v < self.minimum for v in got):
                raise ConfigError(field_name, value, f"accepted: integers >= {self.minimum} as 1/5 or a list [1, 5]")
            return got
        if self.type == "choice":
            return self._choice(value, field_name)
        if self.type == "shape":
            return _shape(value, field_name)
        items = value if isinstance(value, (list, tuple)) else str(value).split("/")
        got = tuple(self._choice(x, field_name) for x in items)
        if not got:
            raise ConfigError(field_name, value, f"accepted: one of {', '.join(self.choices)}, or one per dimension")
        return got[0] if len(got) == 1 else got

    def _choice(self, value: Any, field_name: str) -> str:
        key = str(value).strip()
        canon = {c.lower(): c for c in self.choices}
        canon.update({a.lower(): c for a, c in self.aliases.items()})
        got = canon.get(key.lower())
        if got is None or isinstance(value, bool):
            alias = f" (aliases: {', '.join(sorted(self.aliases))})" if self.aliases else ""
            raise ConfigError(field_name, value, f"accepted: {', '.join(self.choices)}{alias}")
        return got


def _field(where: str, name: str) -> str:
    """`network.algorithms.all-reduce.dims` in a config, `--option dims` on the command line."""
    if not where:
        return name
    return f"{where} {name}" if where.startswith("-") else f"{where}.{name}"


def _integer(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value) and len(value.strip()) <= _MAX_DIGITS:
        return int(value)
    return None


def _shape(value: Any, field_name: str) -> tuple[int, ...]:
    items = list(value) if isinstance(value, (list, tuple)) else str(value).lower().split("x")
    dims = tuple(_integer(x) for x in items)
    if not dims or any(d is None or d < 1 for d in dims):
        raise ConfigError(field_name, value, "accepted: dimension sizes >= 1 as 4x4, 16 or a list [4, 4]")
    return dims  # type: ignore[return-value]


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ("x" if all(isinstance(v, int) for v in value) else "/").join(map(str, value))
    return str(value)


@dataclass(frozen=True)
class Algorithm:
    """A collective algorithm: a pure `build(collective, p, *, root=, **options) -> Schedule` and
    what it declares.

    Parameters
    ----------
    name : str
        Registry name (`ring`, `in_network_tree`).
    build : callable
        `build(collective, p, **options) -> Schedule` on ranks 0..p-1; `root=` for broadcast/reduce.
    collectives : tuple of str
        Collectives it serves.
    group_sizes : str
        Which group sizes it serves, in words (for listings).
    summary : str
        One line for `fabricsim algorithms`.
    pow2_only : tuple of str
        Collectives that need a power-of-two group.
    options : tuple of Option
        Its typed options.
    dims : bool
        Takes a `dims` option that defaults to the topology's shape (when the group is the whole
        network in rank order; else (p,)).
    helper : {"reducing-switch", "switch-tree", "node-switches"} or None
        Helper nodes its schedules use: one switch that reduces and multicasts, attached to every
        rank; or each rank's reducing leaf switch and the root switch above the leaves; or each
        node's reducing switch (NVSwitch) and, with several nodes, one reducing fabric switch per
        rail reachable from the rail's GPUs (SHARP; `api.node_switches`).
    jumps : bool
        Takes a `steps` option that defaults to the ring steps a circulant topology's jumps give
        the group (`circulant_rings.ring_steps`).
    ring_order : bool
        Visits the group's members in the topology's preferred ring order (a wafer's Hamiltonian
        cycle) when the topology has one, so a logical ring takes one-hop steps.
    streams : bool
        Its schedules stream through switches (reduce up, multicast down, pipelined): every
        network model prices them as one stream per flow, not as lock-step steps, unless the
        option `lockstep` asks for steps.
    cluster : bool
        Takes options `gpus_per_node` and `nics_per_node` that default to the group's shape on a
        cluster of scale-up nodes (`Topology.node_gpus`, `node_nics`): the members per node and
        the NICs they use when the group is node-major with the same count on every node it
        touches, else one node of p ranks with one NIC (`api.cluster_shape`).
    aliases : mapping
        Other names, each with the options it presets (`bidirectional_ring` = ring with
        bidirectional=true).
    check : callable, optional
        `check(collective, p, options) -> reason or None` for limits that depend on options.
    nccl : {"ring", "tree", "nvls", "nvls_tree", "p2p"} or None
        The NCCL algorithm its schedules stand for: they pay that algorithm's protocol costs (LL,
        LL128, Simple: `network.nccl`) as its `proto` option (`proto_option`) says.
    estimate : callable, optional
        `estimate(collective, p, options) -> float`: an upper bound on the block entries its
        schedule stores, from the collective, the group size and the typed options, before
        anything is built (the `blocks` limit's estimate, `sizing.estimate_blocks`); None: the
        quadratic p x p x chunks bound.
    """

    name: str
    build: Callable[..., Schedule]
    collectives: tuple[str, ...]
    group_sizes: str
    summary: str
    pow2_only: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    dims: bool = False
    helper: Helper | None = None
    jumps: bool = False
    ring_order: bool = False
    streams: bool = False
    cluster: bool = False
    aliases: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    check: Callable[[str, int, dict], str | None] | None = None
    nccl: Literal["ring", "tree", "nvls", "nvls_tree", "p2p"] | None = None
    estimate: Callable[[str, int, dict], float] | None = None

    def option(self, name: str) -> Option | None:
        """The declared option `name`.

        Parameters
        ----------
        name : str
            The option's name, lower case with `_` (`bidirectional`).

        Returns
        -------
        Option or None
            None if the algorithm declares no option of that name.
        """
        return next((o for o in self.options if o.name == name), None)

    def parse_options(self, raw: Mapping[str, Any] | None, where: str = "option") -> dict[str, Any]:
        """Typed values of the options in `raw`; an unknown name is an error.

        Parameters
        ----------
        raw : mapping or None
            Option name (any case, `-` or `_`) -> value as `Option.parse` accepts it.
        where : str
            The field named in errors.

        Returns
        -------
        dict
            Canonical option name -> typed value; a one-line ConfigError listing the accepted
            options for an unknown name or a bad value.
        """
        out: dict[str, Any] = {}
        for key, value in (raw or {}).items():
            k = str(key).strip().lower().replace("-", "_")
            opt = self.option(k)
            if opt is None:
                accepted = ", ".join(o.describe() for o in self.options) or "no options"
                raise ConfigError(_field(where, str(key)), value, f"{self.name} accepts: {accepted}")
            out[k] = opt.parse(value, where)
        return out

    def check_applies(self, collective: str, given: Mapping[str, Any], where: str = "option") -> None:
        """Refuse options given for a collective they do not change (ring's `chunks` on an
        all-reduce), instead of ignoring them.

        Parameters
        ----------
        collective : str
            Canonical collective name.
        given : mapping
            Option name -> value, as the user gave them (canonical names).
        where : str
            The field named in errors (`--option`).

        Returns
        -------
        None
            A one-line ConfigError naming the option and the collectives it applies to (a
            collective the algorithm does not serve is left to `supports` to explain).
        """
        if collective not in self.collectives:
            return
        for name, value in given.items():
            opt = self.option(name)
            if opt is not None and opt.collectives and collective not in opt.collectives:
                raise ConfigError(_field(where, name), _text(value),
                                  f"{self.name}'s {name} applies to {', '.join(opt.collectives)} only; "
                                  f"accepted: leave it out for {collective}")

    def supports(self, collective: str, p: int, options: dict | None = None) -> str | None:
        """Why this algorithm cannot serve `collective` on `p` ranks, or None when it can.

        Parameters
        ----------
        collective : str
            Canonical collective name.
        p : int
            Ranks in the group.
        options : dict, optional
            Typed options (as `parse_options` returns them), for limits that depend on them.

        Returns
        -------
        str or None
            None when supported; else the reason, as the "accepted: ..." part of an error.
        """
        if collective not in self.collectives:
            return f"{self.name} supports: {', '.join(self.collectives)}"
        if p < 2:
            return "accepted: at least 2 ranks"
        if self.check is not None:
            return self.check(collective, p, options or {})
        if collective in self.pow2_only and not is_pow2(p):
            return "accepted: a power of two"
        return None


@dataclass(frozen=True)
class AlgorithmChoice:
    """An algorithm with typed option values: what a config or the command line chose.

    `str()` gives the spec string back (`ring,bidirectional=true`); equal choices are equal
    and hashable (cache keys).

    Parameters
    ----------
    name : str
        Registry name of the algorithm (canonical, not an alias).
    options : tuple of (str, Any)
        (option name, typed value) pairs, in name order when `choose_algorithm` made them.
    """

    name: str
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def kwargs(self) -> dict[str, Any]:
        """The options as keyword arguments for `Algorithm.build`."""
        return dict(self.options)

    def __str__(self) -> str:
        return ",".join([self.name] + [f"{k}={_text(v)}" for k, v in self.options])


PROTO_CHOICES = ("auto", "none", "LL", "LL128", "Simple")
"""The `proto` option's values (`network.nccl.PROTO_CHOICES`)."""


def proto_option(default: str = "auto") -> Option:
    """The `proto` option of the algorithms that run as NCCL runs them (`Algorithm.nccl`).

    Parameters
    ----------
    default : str
        auto (NCCL's algorithms: the fastest protocol NCCL enables, per size) or none (a plain
        algorithm: the schedule on the network alone, no protocol costs).

    Returns
    -------
    Option
        A choice of auto, none, LL, LL128, Simple (any case).
    """
    return Option("proto", "choice", default,
                  "NCCL protocol: LL, LL128 or Simple (its latency and share of the bandwidth, NCCL's tuning "
                  "model), auto = the fastest per size, none = no protocol costs",
                  choices=PROTO_CHOICES, aliases={"ll": "LL", "ll128": "LL128", "simple": "Simple"})


def lockstep_option(what: str) -> Option:
    """The `lockstep` option of streaming algorithms (in-network reduction).

    Parameters
    ----------
    what : str
        What the help text says is timed as steps (`the all-reduce`).

    Returns
    -------
    Option
        A bool option, default False.
    """
    return Option("lockstep", "bool", False,
                  f"time {what} as lock-step steps (all the way up, then all the way down) instead of one "
                  "pipelined stream through the switches")
