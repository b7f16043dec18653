"""What a topology family declares, and the pieces its spec parser and builder share.

A family (one file in `builders/`) is a `TopologyFamily`: a pydantic model of its typed
parameters (`Int`, `Bool`, `Real`: taken as given, never coerced), a parser from the shape and
options of a spec string to those parameters, a builder from validated parameters and the
per-link bandwidths and latencies to a `Topology`, and a size function that counts its NPUs and
links without building it (`check_size` refuses what is beyond the limits).
`spec.py` registers each family with one line and builds every topology through the same path.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field as dc_field
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator

from ..errors import ConfigError
from ..limits import check_limit, current_limits
from ..units import parse_bandwidth
from .graph import Topology

MAX_DIMS = 64
"""Most dimensions of one topology: routing tables hold NPUs x dimensions entries, and 64
dimensions of 2 are already 2^64 NPUs."""

MIN_BANDWIDTH, MAX_BANDWIDTH = 1.0, 1e18
"""Link bandwidths accepted, bytes/s per direction (1 B/s to 1 EB/s): times and rates derived
from them (size / bandwidth, bandwidth x NPUs per leaf) stay finite and > 0."""

MAX_LATENCY = 1e6
"""Longest link latency accepted, s (about 11.6 days); sums over hops and steps stay finite."""


def _strict_int(value: Any, info: ValidationInfo) -> int:
    """Pydantic `mode="before"` validator: an integer as given (Python or numpy), never a bool,
    a float (8.0, 8.5) or a string ('8'); ConfigError naming the field otherwise."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise ConfigError(info.field_name or "value", value, "accepted: an integer (not true/false, 8.5, 8.0 or '8')")


def _strict_bool(value: Any, info: ValidationInfo) -> bool:
    """Pydantic `mode="before"` validator: true or false as given, never a string or a number
    read by truthiness; ConfigError naming the field otherwise."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ConfigError(info.field_name or "value", value, "accepted: true or false (not a string or a number)")


def _strict_real(value: Any, info: ValidationInfo) -> float:
    """Pydantic `mode="before"` validator: a finite number (int or float), never a bool or a
    string; ConfigError naming the field otherwise."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)):
        if math.isfinite(float(value)):
            return float(value)
    raise ConfigError(info.field_name or "value", value, "accepted: a finite number (not true/false, a string, "
                                                         "nan or inf)")


Int = Annotated[int, BeforeValidator(_strict_int)]
"""An integer parameter: refuses bools, floats and strings instead of coercing them."""
Bool = Annotated[bool, BeforeValidator(_strict_bool)]
"""A boolean parameter: refuses strings and numbers instead of reading them by truthiness."""
Real = Annotated[float, BeforeValidator(_strict_real)]
"""A real parameter: a finite int or float; refuses bools, strings, nan and inf."""


def check_size(npus: int, links: int, field: str, value: object, table: int = 0) -> None:
    """Refuse a topology too large for the limits in force, before anything is allocated.

    Parameters
    ----------
    npus : int
        NPUs the topology would have (any size: never allocated).
    links : int
        Directed links it would have.
    field : str
        The field named in the error (`topology`).
    value : object
        What the user gave (the spec string or the mapping).
    table : int
        Entries of its fewest-hop routing table (nodes x nodes), 0 for routers without one.

    Returns
    -------
    None
        ConfigError (one line with the estimate and `fabricsim --limit NAME=N`) beyond the
        `npus`, `links` or `route_table` limit (`fabricsim.limits`); beyond several, it names
        the one exceeded by the largest factor (fully-connected:100000 is 1.5 x the NPUs but
        2,400 x the links).
    """
    limits = current_limits()
    checks = [("npus", npus, "NPUs"), ("links", links, "directed links"),
              ("route_table", table, "routing-table entries (nodes x nodes: fewest-hop routing)")]
    # integer ratios: estimates beyond a float's range still compare
    for name, estimate, what in sorted(checks, key=lambda c: -(c[1] // getattr(limits, c[0]))):
        check_limit(name, estimate, what, field, value)


def check_link_value(value: float, field: str, text: object) -> float:
    """Refuse a link bandwidth or latency outside the range the models keep finite.

    Parameters
    ----------
    value : float
        Bytes/s for a bandwidth, s for a latency (as parsed).
    field : str
        `bandwidth`, `latency`, `io_bandwidth`, ... (a name containing `latency` is a latency);
        named in errors.
    text : object
        What the user wrote, named in errors.

    Returns
    -------
    float
        `value`, when a bandwidth is within [MIN_BANDWIDTH, MAX_BANDWIDTH] (1 B/s to 1 EB/s) or a
        latency within [0, MAX_LATENCY] (1e6 s); ConfigError naming the field otherwise.
    """
    if "latency" in field:
        if not 0 <= value <= MAX_LATENCY:
            raise ConfigError(field, text, "accepted: a latency from 0 to 1e6 s per link")
    elif not MIN_BANDWIDTH <= value <= MAX_BANDWIDTH:
        raise ConfigError(field, text, "accepted: a bandwidth from 1 B/s to 1 EB/s (1e18 B/s) per link and direction")
    return value


class Params(BaseModel):
    """Base of every family's typed parameters: a frozen pydantic model that rejects unknown fields.

    A family's model (`RingParams`, `GridParams`, ...) declares its fields with types, defaults
    and bounds; validating a mapping against it gives one-line ConfigErrors naming the field.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)


def bandwidth_field(value: Any, info: ValidationInfo) -> float | None:
    """Pydantic `mode="before"` validator for a bandwidth parameter.

    Parameters
    ----------
    value : float, str or None
        A number (bytes/s) or a string with units (`128GB/s`, `400Gbps`); None stays None (the
        family's default applies).
    info : ValidationInfo
        Pydantic's; its field name is named in errors.

    Returns
    -------
    float or None
        Bytes/s, 1 B/s to 1 EB/s (`check_link_value`); ConfigError naming the field for anything else.
    """
    return None if value is None else check_link_value(parse_bandwidth(value, info.field_name), info.field_name, value)


class GridParams(Params):
    """mesh, torus: the NPUs per dimension.

    Parameters
    ----------
    dims : tuple of int
        NPUs per dimension, dimension 0 fastest; every size >= 1, at least one >= 2, at most
        `MAX_DIMS` (64) dimensions.
    """

    dims: tuple[Int, ...] = Field(min_length=1)

    @field_validator("dims")
    @classmethod
    def _dims(cls, v):
        if len(v) > MAX_DIMS:
            raise ConfigError("dims", f"{len(v)} dimensions", f"accepted: at most {MAX_DIMS} dimensions")
        if any(d < 1 for d in v) or max(v) < 2:
            raise ConfigError("dims", list(v), "accepted: dimensions >= 1 with at least one >= 2")
        return v


def grid_links(kinds: tuple[str, ...], dims: tuple[int, ...]) -> tuple[int, int]:
    """NPUs and directed links of a stack of building blocks (exact; Python ints, never overflows).

    Parameters
    ----------
    kinds : tuple of str
        ring, uniring, line, fc or switch per dimension (`builders/stack.py`).
    dims : tuple of int
        NPUs per dimension.

    Returns
    -------
    (int, int)
        NPUs (the product of `dims`) and directed links: per dimension of size s over n NPUs, a
        ring 2n (n when s = 2), a one-way ring n, a line 2n (s - 1) / s, fully connected n (s - 1),
        switches 2n; a size-1 dimension none.

    Examples
    --------
    >>> grid_links(("ring", "ring"), (4, 4)), grid_links(("line",), (4,)), grid_links(("fc",), (8,))
    ((16, 64), (4, 6), (8, 56))
    """
    n = math.prod(dims)
    links = 0
    for kind, s in zip(kinds, dims):
        if s == 1:
            continue
        links += {"ring": n if s == 2 else 2 * n, "uniring": n, "line": 2 * (n // s) * (s - 1),
                  "fc": n * (s - 1), "switch": 2 * n}[kind]
    return n, links


class LinkValues(list):
    """Bandwidths (bytes/s) or latencies (s) as parsed, one or one per dimension, remembering
    the text they came from and the topology they are for (named in errors).

    Parameters
    ----------
    values : sequence of float
        The parsed values, bytes/s or s.
    field : str
        `bandwidth` or `latency` (named in errors).
    text : str
        What the user wrote (named in errors).
    where : str
        The topology they are for (named in errors).

    Examples
    --------
    >>> LinkValues([50e9], "bandwidth", "50GB/s", "torus:4x4").per_dim(2)
    [50000000000.0, 50000000000.0]
    """

    def __init__(self, values, field: str, text: str, where: str):
        super().__init__(values)
        self.field, self.text, self.where = field, text, where

    def one(self) -> float:
        """The single value of a family with one bandwidth or latency.

        Returns
        -------
        float
            The value (bytes/s or s); ConfigError when several were given.
        """
        return self.per_dim(1)[0]

    def per_dim(self, ndim: int) -> list[float]:
        """One value per dimension.

        Parameters
        ----------
        ndim : int
            Dimensions of the topology.

        Returns
        -------
        list of float
            `ndim` values (bytes/s or s): the one value repeated, or the values given one per
            dimension; ConfigError for another count.
        """
        if len(self) == ndim:
            return list(self)
        if len(self) == 1:
            return list(self) * ndim
        counts = "1 value" if ndim == 1 else f"1 value or {ndim} (one per dimension)"
        raise ConfigError(self.field, self.text, f"got {len(self)} values; accepted: {counts} for {self.where}")


@dataclass(frozen=True)
class TopologyFamily:
    """A topology family: its name, typed parameters, spec-string parser and builder.

    Parameters
    ----------
    name : str
        The family's name in spec strings and mappings (`torus`, `fat-tree`).
    example : str
        A spec string (or mapping) shown in `fabricsim topologies` and error messages.
    summary : str
        One line for `fabricsim topologies`.
    params : type of Params
        The pydantic model of the family's typed parameters.
    parse : callable or None
        `parse(spec, shape, options) -> dict` of parameters from a spec string split at `:` and
        `,` (ConfigError naming the spec for anything not accepted); None: no spec-string form.
    build : callable
        `build(params, bandwidth, latency) -> Topology` from validated parameters and the
        per-link `LinkValues` (bytes/s, s).
    aliases : tuple of str
        Other names accepted for the family.
    size : callable
        `size(params) -> (n_npus, n_links)`: the NPUs and directed links the builder would make,
        counted without building (exact); checked against the limits before the builder runs.
    table : callable or None
        `table(params) -> int`: entries of the fewest-hop routing table the builder allocates
        (nodes x nodes); None for routers without one.
    """

    name: str
    example: str
    summary: str
    params: type[Params]
    parse: Callable[[str, str, list[str]], dict] | None
    build: Callable[[Any, LinkValues, LinkValues], Topology]
    aliases: tuple[str, ...] = ()
    size: Callable[[Any], tuple[int, int]] = dc_field(kw_only=True)
    table: Callable[[Any], int] | None = dc_field(default=None, kw_only=True)


# ---- spec-string parsing helpers ------------------------------------------------------------------


def parse_int(text: str, spec: str) -> int:
    """A size written in a spec string.

    Parameters
    ----------
    text : str
        The size (`8`).
    spec : str
        The whole spec string, named in errors.

    Returns
    -------
    int
        >= 1, of any size (the limits judge it); ConfigError naming the spec otherwise.
    """
    if len(text) > 4000:  # beyond Python's int-from-text limit, and beyond any limit
        raise ConfigError("topology", spec, f"a size of {len(text.strip())} digits is beyond every limit; accepted: "
                                            "positive integer sizes, e.g. torus:8x8, ring:16")
    if not re.fullmatch(r"\d+", text.strip()):
        raise ConfigError("topology", spec, f"{text!r} is not a size; accepted: positive integer sizes, e.g. torus:8x8, ring:16")
    v = int(text)
    if v < 1:
        raise ConfigError("topology", spec, "accepted: sizes >= 1")
    return v


def parse_shape(shape: str, spec: str) -> tuple[int, ...]:
    """The sizes of a spec string's shape.

    Parameters
    ----------
    shape : str
        `AxBx...` (`8x8x4`), case-insensitive.
    spec : str
        The whole spec string, named in errors.

    Returns
    -------
    tuple of int
        Each >= 1 (`(8, 8, 4)`), at most `MAX_DIMS` of them; ConfigError naming the spec otherwise.
    """
    parts = shape.lower().split("x")
    if len(parts) > MAX_DIMS:
        raise ConfigError("topology", spec, f"{len(parts)} dimensions; accepted: at most {MAX_DIMS}")
    return tuple(parse_int(p, spec) for p in parts)


def parse_flags(opts: list[str], allowed: set[str], spec: str, valued: frozenset[str] = frozenset()) -> dict[str, str]:
    """A spec string's options: `name` (an on/off flag) and, for names in `valued`, `name=value`.

    Parameters
    ----------
    opts : list of str
        The comma-separated parts after the shape.
    allowed : set of str
        Option names accepted (lower case).
    spec : str
        The whole spec string, named in errors.
    valued : frozenset of str
        The options that take a value.

    Returns
    -------
    dict
        {name: value, or '' for a flag}; ConfigError naming the spec for an unknown option, a
        flag given a value, a valued option without one, or an option given twice.
    """
    out = {}
    for o in opts:
        k, eq, v = o.partition("=")
        k = k.strip().lower()
        if k not in allowed:
            raise ConfigError("topology", spec, f"unknown option {k!r}; accepted options: {', '.join(sorted(allowed)) or 'none'}")
        if eq and k not in valued:
            raise ConfigError("topology", spec, f"option {k!r} is a flag and takes no value; write {k!r} alone to turn it on")
        if not eq and k in valued:
            raise ConfigError("topology", spec, f"option {k!r} takes a value; accepted: {k}=VALUE")
        if k in out:  # the last would win silently
            raise ConfigError("topology", spec, f"option {k!r} is given twice; accepted: each option once")
        out[k] = v.strip()
    return out


def single_n(shape: str, spec: str) -> int:
    """The one size of a flat family (`ring:8`).

    Parameters
    ----------
    shape : str
        The shape part of the spec string.
    spec : str
        The whole spec string, named in errors.

    Returns
    -------
    int
        >= 2; ConfigError naming the spec otherwise.
    """
    dims = parse_shape(shape, spec)
    if len(dims) != 1:
        raise ConfigError("topology", spec, "accepted: a single size, e.g. ring:8")
    if dims[0] < 2:
        raise ConfigError("topology", spec, "accepted: at least 2 NPUs")
    return dims[0]


def parse_grid(spec: str, shape: str, opts: list[str]) -> dict:
    """The spec parser of mesh and torus: a shape `4x4x2`, no options.

    Parameters
    ----------
    spec : str
        The whole spec string, named in errors.
    shape : str
        Its shape part.
    opts : list of str
        Its options (none accepted).

    Returns
    -------
    dict
        `{"dims": (4, 4, 2)}`, for `GridParams`.
    """
    parse_flags(opts, set(), spec)
    dims = parse_shape(shape, spec)
    if any(d < 1 for d in dims) or max(dims) < 2:
        raise ConfigError("topology", spec, "accepted: dimensions >= 1 with at least one >= 2")
    return {"dims": dims}
