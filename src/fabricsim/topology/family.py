"""What a topology family declares, and the pieces its spec parser and builder share.

A family (one file in `builders/`) is a `TopologyFamily`: a pydantic model of its typed
parameters, a parser from the shape and options of a spec string to those parameters, and a
builder from validated parameters and the per-link bandwidths and latencies to a `Topology`.
`spec.py` registers each family with one line and builds every topology through the same path.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from ..errors import ConfigError
from ..units import parse_bandwidth
from .graph import Topology


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
        Bytes/s; ConfigError naming the field for anything else.
    """
    return None if value is None else parse_bandwidth(value, info.field_name)


class GridParams(Params):
    """mesh, torus: the NPUs per dimension.

    Parameters
    ----------
    dims : tuple of int
        NPUs per dimension, dimension 0 fastest; every size >= 1 and at least one >= 2.
    """

    dims: tuple[int, ...] = Field(min_length=1)

    @field_validator("dims")
    @classmethod
    def _dims(cls, v):
        if any(d < 1 for d in v) or max(v) < 2:
            raise ConfigError("dims", list(v), "accepted: dimensions >= 1 with at least one >= 2")
        return v


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
    """

    name: str
    example: str
    summary: str
    params: type[Params]
    parse: Callable[[str, str, list[str]], dict] | None
    build: Callable[[Any, LinkValues, LinkValues], Topology]
    aliases: tuple[str, ...] = ()


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
        >= 1; ConfigError naming the spec otherwise.
    """
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
        Each >= 1 (`(8, 8, 4)`); ConfigError naming the spec otherwise.
    """
    return tuple(parse_int(p, spec) for p in shape.lower().split("x"))


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
        {name: value, or '' for a flag}; ConfigError naming the spec for an unknown option or a
        flag given a value.
    """
    out = {}
    for o in opts:
        k, eq, v = o.partition("=")
        k = k.strip().lower()
        if k not in allowed:
            raise ConfigError("topology", spec, f"unknown option {k!r}; accepted options: {', '.join(sorted(allowed)) or 'none'}")
        if eq and k not in valued:
            raise ConfigError("topology", spec, f"option {k!r} is a flag and takes no value; write {k!r} alone to turn it on")
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
