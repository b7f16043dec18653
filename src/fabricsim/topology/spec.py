"""Topology families: typed parameters, spec strings, and one way to build.

Every family declares its parameters as a pydantic model and a builder from those parameters; a
spec string (`KIND:SHAPE[,option...]`, as on the command line) is parsed into the same parameters,
so `parse_topology("torus:8x8", ...)`, `build_topology("torus", dims=(8, 8), ...)` and a config's
`topology: {family: torus, dims: [8, 8]}` build the same topology through one path.

    ring:8            bidirectional ring          ring:8,uni     one direction
    fully-connected:8 (fc:8)                      switch:8       one switch (switch:8,reduce: in-network)
    mesh:4x4          torus:8x8x8                 stack:Ring4xFullyConnected8xSwitch4   (ASTRA-sim style)
    fat-tree:64,leaf=8,spines=4,oversub=2
    wafer:5x4,io=128GB/s                          fred:5x4,up=12TB/s,io=128GB/s,reduce   (FRED paper)
    direct (programmatic only): n NPUs and a list of links, fewest-hop routing

Bandwidth and latency are per link and direction, one value for all dimensions or one per
dimension (stack, torus, mesh). Adding a family: a builder file in `builders/`, and one
`_register` line below with its parameter model, its spec parser and its build function.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..errors import ConfigError
from ..units import parse_bandwidth, parse_time
from .builders import fat_tree, fred_fabric, from_edges, fully_connected, mesh, ring, stack, switch, torus, wafer_mesh
from .graph import Topology


# ---- typed parameters ---------------------------------------------------------------------------


class _P(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _bw(v):
    return None if v is None else parse_bandwidth(v, "bandwidth")


class RingParams(_P):
    """ring: `n` NPUs, both directions (or one)."""
    n: int = Field(ge=2)
    bidirectional: bool = True


class FullyConnectedParams(_P):
    """fully-connected: a link between every pair of `n` NPUs."""
    n: int = Field(ge=2)


class SwitchParams(_P):
    """switch: `n` NPUs on one switch; `reduce` (reduces and multicasts) or `multicast` only."""
    n: int = Field(ge=2)
    reduce: bool = False
    multicast: bool = False


class GridParams(_P):
    """mesh, torus: `dims`, dimension 0 fastest; sizes >= 1 with at least one >= 2."""
    dims: tuple[int, ...] = Field(min_length=1)

    @field_validator("dims")
    @classmethod
    def _dims(cls, v):
        if any(d < 1 for d in v) or max(v) < 2:
            raise ValueError("accepted: dimensions >= 1 with at least one >= 2")
        return v


class StackParams(_P):
    """stack: a building block per dimension (ring, fc, switch; ASTRA-sim's Ring,
    FullyConnected, Switch), each dimension >= 2 NPUs; `reduce`: the switches reduce."""
    kinds: tuple[Literal["ring", "uniring", "line", "fc", "switch"], ...] = Field(min_length=1)
    dims: tuple[int, ...] = Field(min_length=1)
    reduce: bool = False

    @model_validator(mode="after")
    def _same_length(self):
        if len(self.kinds) != len(self.dims) or any(d < 2 for d in self.dims):
            raise ValueError("accepted: one kind per dimension, every dimension >= 2 NPUs")
        return self


class FatTreeParams(_P):
    """fat-tree: `n` NPUs, `leaf` per leaf switch (default min(n, 8)), `spines` (default leaf),
    uplinks at NPUs per leaf x bandwidth / `oversub`, split over the spines."""
    n: int = Field(ge=2)
    leaf: int | None = Field(default=None, ge=1)
    spines: int | None = Field(default=None, ge=1)
    oversub: float = 1.0
    reduce: bool = False

    @model_validator(mode="after")
    def _check(self):
        if not (math.isfinite(self.oversub) and self.oversub > 0):
            raise ValueError("accepted: oversub a finite number > 0")
        if self.n % (self.leaf or min(self.n, 8)):
            raise ValueError(f"accepted: leaf=K where K divides {self.n}")
        return self


class WaferParams(_P):
    """wafer: a `cols` x `rows` mesh of NPUs with an I/O controller per perimeter edge."""
    cols: int = Field(ge=2)
    rows: int = Field(ge=2)
    io_bandwidth: float = 128e9
    io: bool = True

    _io_bw = field_validator("io_bandwidth", mode="before")(_bw)


class FredParams(_P):
    """fred: `groups` L1 switches of `per_group` NPUs under one L2 switch (`up_bandwidth` per L1,
    default per_group x bandwidth), `io_controllers` on the L1s; `reduce`: in-network switches."""
    groups: int = Field(ge=1)
    per_group: int = Field(ge=1)
    up_bandwidth: float | None = None
    io_bandwidth: float = 128e9
    io_controllers: int = Field(default=18, ge=0)
    reduce: bool = False

    _bws = field_validator("up_bandwidth", "io_bandwidth", mode="before")(_bw)

    @model_validator(mode="after")
    def _two(self):
        if self.groups * self.per_group < 2:
            raise ValueError("accepted: at least 2 NPUs")
        return self


class DirectParams(_P):
    """direct: `n` NPUs (and `switches` more nodes) wired by `links` [(src, dst), ...], each both
    ways unless `bidirectional` is false; fewest-hop routing (direct-connect designs)."""
    n: int = Field(ge=2)
    links: tuple[tuple[int, int], ...] = Field(min_length=1)
    switches: int = Field(default=0, ge=0)
    bidirectional: bool = True

    @model_validator(mode="after")
    def _nodes(self):
        top = self.n + self.switches
        if any(not (0 <= a < top and 0 <= b < top) or a == b for a, b in self.links):
            raise ValueError(f"accepted: links between distinct nodes 0..{top - 1}")
        return self


# ---- building from parameters -----------------------------------------------------------------


def _one(values: list[float], what: str, spec: str, ndim: int = 1) -> list[float]:
    if len(values) not in (1, ndim):
        text = getattr(values, "text", None) or ",".join(map(str, values))  # as the user wrote it
        counts = "1 value" if ndim == 1 else f"1 value or {ndim} (one per dimension)"
        raise ConfigError(what, text, f"got {len(values)} values; accepted: {counts} for {spec}")
    return values


def _build_ring(p: RingParams, bw, lat, spec):
    return ring(p.n, _one(bw, "bandwidth", spec)[0], _one(lat, "latency", spec)[0], bidirectional=p.bidirectional)


def _build_fc(p: FullyConnectedParams, bw, lat, spec):
    return fully_connected(p.n, _one(bw, "bandwidth", spec)[0], _one(lat, "latency", spec)[0])


def _build_switch(p: SwitchParams, bw, lat, spec):
    return switch(p.n, _one(bw, "bandwidth", spec)[0], _one(lat, "latency", spec)[0], reduce=p.reduce,
                  multicast=p.multicast or p.reduce)


def _grid_builder(builder):
    def build(p: GridParams, bw, lat, spec):
        return builder(p.dims, _one(bw, "bandwidth", spec, len(p.dims)), _one(lat, "latency", spec, len(p.dims)))
    return build


_STACK_NAMES = {"ring": "Ring", "uniring": "UniRing", "line": "Line", "fc": "FullyConnected", "switch": "Switch"}


def _build_stack(p: StackParams, bw, lat, spec):
    name = "stack:" + "x".join(f"{_STACK_NAMES[k]}{d}" for k, d in zip(p.kinds, p.dims))
    if ":" in spec:  # from a spec string: named as the user wrote the shape
        name = "stack:" + spec.partition(":")[2].partition(",")[0].strip()
    return stack(p.kinds, p.dims, _one(bw, "bandwidth", spec, len(p.dims)), _one(lat, "latency", spec, len(p.dims)),
                 name=name, switch_reduce=p.reduce)


def _build_fat_tree(p: FatTreeParams, bw, lat, spec):
    return fat_tree(p.n, _one(bw, "bandwidth", spec)[0], _one(lat, "latency", spec)[0], leaf=p.leaf or min(p.n, 8),
                    spines=p.spines, oversub=p.oversub, reduce=p.reduce)


def _build_wafer(p: WaferParams, bw, lat, spec):
    return wafer_mesh(p.cols, p.rows, _one(bw, "bandwidth", spec)[0], _one(lat, "latency", spec)[0],
                      io_bandwidth=p.io_bandwidth, io=p.io)


def _build_fred(p: FredParams, bw, lat, spec):
    b = _one(bw, "bandwidth", spec)[0]
    return fred_fabric(p.groups, p.per_group, b, p.up_bandwidth if p.up_bandwidth is not None else b * p.per_group,
                       _one(lat, "latency", spec)[0], io_controllers=p.io_controllers, io_bandwidth=p.io_bandwidth,
                       reduce=p.reduce)


def _build_direct(p: DirectParams, bw, lat, spec):
    src = [a for a, _ in p.links]
    dst = [b for _, b in p.links]
    return from_edges(f"direct:{p.n}", p.n, p.switches, src, dst, _one(bw, "bandwidth", spec)[0], _one(lat, "latency", spec)[0],
                      bidirectional=p.bidirectional)


# ---- spec strings -> parameters ------------------------------------------------------------------


def _int(field: str, text: str, spec: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()):
        raise ConfigError(field, spec, f"{text!r} is not a size; accepted: positive integer sizes, e.g. torus:8x8, ring:16")
    v = int(text)
    if v < 1:
        raise ConfigError(field, spec, "accepted: sizes >= 1")
    return v


def _shape(shape: str, spec: str) -> tuple[int, ...]:
    return tuple(_int("topology", p, spec) for p in shape.lower().split("x"))


def _flags(opts: list[str], allowed: set[str], spec: str, valued: frozenset[str] = frozenset()) -> dict[str, str]:
    """Options `name` (on/off flags) and, for names in `valued`, `name=value`."""
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


def _single_n(shape: str, spec: str) -> int:
    dims = _shape(shape, spec)
    if len(dims) != 1:
        raise ConfigError("topology", spec, "accepted: a single size, e.g. ring:8")
    if dims[0] < 2:
        raise ConfigError("topology", spec, "accepted: at least 2 NPUs")
    return dims[0]


def _parse_ring(spec, shape, opts):
    return {"n": _single_n(shape, spec), "bidirectional": "uni" not in _flags(opts, {"uni", "bi"}, spec)}


def _parse_fc(spec, shape, opts):
    _flags(opts, set(), spec)
    return {"n": _single_n(shape, spec)}


def _parse_switch(spec, shape, opts):
    f = _flags(opts, {"reduce", "multicast"}, spec)
    return {"n": _single_n(shape, spec), "reduce": "reduce" in f, "multicast": "multicast" in f}


def _parse_grid(spec, shape, opts):
    _flags(opts, set(), spec)
    dims = _shape(shape, spec)
    if any(d < 1 for d in dims) or max(dims) < 2:
        raise ConfigError("topology", spec, "accepted: dimensions >= 1 with at least one >= 2")
    return {"dims": dims}


_STACK_KINDS = {"ring": "ring", "r": "ring", "fullyconnected": "fc", "fc": "fc", "switch": "switch", "sw": "switch"}


def _parse_stack(spec, shape, opts):
    f = _flags(opts, {"reduce"}, spec)
    kinds, dims = [], []
    for part in re.split(r"[xX]", shape):
        m = re.fullmatch(r"([A-Za-z]+)\(?(\d+)\)?", part.strip())
        if not m or m.group(1).lower() not in _STACK_KINDS:
            raise ConfigError("topology", spec, "accepted: stack:Ring4xFullyConnected8xSwitch4 (Ring, FullyConnected, Switch per dimension)")
        kinds.append(_STACK_KINDS[m.group(1).lower()])
        dims.append(_int("topology", m.group(2), spec))
    if any(d < 2 for d in dims):
        raise ConfigError("topology", spec, "accepted: every stacked dimension has at least 2 NPUs")
    return {"kinds": tuple(kinds), "dims": tuple(dims), "reduce": "reduce" in f}


def _parse_fat_tree(spec, shape, opts):
    f = _flags(opts, {"leaf", "spines", "oversub", "reduce"}, spec, valued=frozenset({"leaf", "spines", "oversub"}))
    n = _single_n(shape, spec)
    leaf = _int("topology", f.get("leaf", str(min(n, 8))), spec)
    spines = _int("topology", f["spines"], spec) if "spines" in f else None
    try:
        oversub = float(f.get("oversub", "1"))
    except ValueError:
        oversub = -1.0
    if not (math.isfinite(oversub) and oversub > 0):  # also rejects nan and inf
        raise ConfigError("topology", spec, "accepted: oversub=RATIO with RATIO a finite number > 0")
    if n % leaf:
        raise ConfigError("topology", spec, f"accepted: leaf=K where K divides {n}")
    return {"n": n, "leaf": leaf, "spines": spines, "oversub": oversub, "reduce": "reduce" in f}


def _parse_wafer(spec, shape, opts):
    f = _flags(opts, {"io", "noio"}, spec, valued=frozenset({"io"}))
    dims = _shape(shape, spec)
    if len(dims) != 2 or min(dims) < 2:
        raise ConfigError("topology", spec, "accepted: wafer:COLSxROWS with both >= 2, e.g. wafer:5x4")
    out = {"cols": dims[0], "rows": dims[1], "io": "noio" not in f}
    if "io" in f:
        out["io_bandwidth"] = parse_bandwidth(f["io"], "topology io")
    return out


def _parse_fred(spec, shape, opts):
    f = _flags(opts, {"up", "io", "ios", "reduce"}, spec, valued=frozenset({"up", "io", "ios"}))
    dims = _shape(shape, spec)
    if len(dims) != 2 or min(dims) < 1 or dims[0] * dims[1] < 2:
        raise ConfigError("topology", spec, "accepted: fred:GROUPSxNPUS_PER_L1, e.g. fred:5x4,up=12TB/s,reduce")
    ios = _int("topology", f.get("ios", "18"), spec) if f.get("ios", "18") != "0" else 0
    out = {"groups": dims[0], "per_group": dims[1], "io_controllers": ios, "reduce": "reduce" in f}
    for key, name in (("up", "up_bandwidth"), ("io", "io_bandwidth")):
        if key in f:
            out[name] = parse_bandwidth(f[key], f"topology {key}")
    return out


def _no_spec(spec, shape, opts):
    raise ConfigError("topology", spec, "the direct family is built from a mapping (n, links), not a spec string")


# ---- the registry ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopologyFamily:
    """A registered topology family: its typed parameters, its spec-string parser, its builder."""

    name: str
    example: str
    summary: str
    params: type[BaseModel]
    parse: Callable[[str, str, list[str]], dict]  # (spec, shape, options) -> parameters
    build: Callable[[Any, list[float], list[float], str], Topology]  # (parameters, bandwidths, latencies, spec)


FAMILIES: dict[str, TopologyFamily] = {}
_ALIASES: dict[str, str] = {}


def _register(name, example, summary, params, parse, build, aliases=()):
    FAMILIES[name] = TopologyFamily(name, example, summary, params, parse, build)
    for a in aliases:
        _ALIASES[a] = name


_register("ring", "ring:8[,uni]", "ring of N NPUs, both directions (uni: one direction)", RingParams, _parse_ring, _build_ring)
_register("fully-connected", "fully-connected:8", "a link between every pair of NPUs", FullyConnectedParams, _parse_fc,
          _build_fc, ("fc", "fullyconnected"))
_register("switch", "switch:8[,reduce]", "N NPUs on one switch (reduce: it reduces and multicasts)", SwitchParams,
          _parse_switch, _build_switch)
_register("mesh", "mesh:4x4", "N-D mesh, dimension-order routing", GridParams, _parse_grid, _grid_builder(mesh))
_register("torus", "torus:8x8", "N-D torus (any sizes), dimension-order routing, shortest direction", GridParams,
          _parse_grid, _grid_builder(torus))
_register("stack", "stack:Ring4xSwitch8", "ASTRA-sim multi-dimensional stack of Ring/FullyConnected/Switch", StackParams,
          _parse_stack, _build_stack, ("astra",))
_register("fat-tree", "fat-tree:64,leaf=8,spines=4,oversub=2", "two-level leaf/spine fat-tree with oversubscription",
          FatTreeParams, _parse_fat_tree, _build_fat_tree, ("fattree", "fat_tree"))
_register("wafer", "wafer:5x4[,io=128GB/s]", "wafer 2-D mesh, X-Y routing, an I/O controller per perimeter edge "
          "(FRED's baseline)", WaferParams, _parse_wafer, _build_wafer)
_register("fred", "fred:5x4,up=12TB/s[,reduce]", "FRED: L1 switches of NPUs under one L2 (up = L1-L2 per L1), I/O on "
          "L1; reduce = in-network", FredParams, _parse_fred, _build_fred)
_register("direct", "{family: direct, n: 4, links: [[0, 1], [1, 2], [2, 3], [3, 0]]}",
          "NPUs wired by a list of links (direct-connect), fewest-hop routing; from a mapping or build_topology",
          DirectParams, _no_spec, _build_direct)


# ---- public entry points ---------------------------------------------------------------------------


class _Values(list):
    """Parsed per-dimension values that remember the text they came from (for error messages)."""

    text: str = ""


def _values(value, parse, field: str) -> list[float]:
    if isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, str):
        items = [v for v in value.split(",") if v.strip()]
    else:
        items = [value]
    if not items:
        raise ConfigError(field, value, "accepted: one value or a comma list, one per dimension")
    out = _Values(parse(v, field) for v in items)
    out.text = value if isinstance(value, str) else ",".join(map(str, items))
    return out


def _family(kind: str, spec: str) -> TopologyFamily:
    key = _ALIASES.get(str(kind).strip().lower(), str(kind).strip().lower())
    if key not in FAMILIES:
        examples = ", ".join(f.example for f in FAMILIES.values() if f.name != "direct")
        raise ConfigError("topology", spec, f"accepted: {examples}")
    return FAMILIES[key]


def parse_topology(spec: str, bandwidth="400Gbps", latency="0ns") -> Topology:
    """Build a topology from a spec string.

    Parameters
    ----------
    spec : str
        `KIND:SHAPE[,option...]` (see `fabricsim topologies`), e.g. `torus:8x8`, `switch:8,reduce`.
    bandwidth : str, float or list
        Per link and direction, bytes/s or with units (`400Gbps`); one value or one per dimension.
    latency : str, float or list
        Per link, s or with units (`100ns`); one value or one per dimension.

    Returns
    -------
    Topology
        ConfigError (one line naming the spec) for anything not accepted.

    Examples
    --------
    >>> parse_topology("torus:4x4", "50GB/s", "100ns").n_links
    64
    """
    text = str(spec).strip()
    kind, sep, rest = text.partition(":")
    fam = _family(kind, spec)
    if not sep:
        _family("", spec)  # the accepted forms
    parts = rest.split(",")
    params = fam.parse(text, parts[0], parts[1:])
    return fam.build(fam.params.model_validate(params), _values(bandwidth, parse_bandwidth, "bandwidth"),
                     _values(latency, parse_time, "latency"), text)


def build_topology(family: str, *, bandwidth="400Gbps", latency="0ns", **params: Any) -> Topology:
    """Build a topology from its family's typed parameters (the programmatic twin of `parse_topology`).

    Parameters
    ----------
    family : str
        A registered family (`fabricsim topologies`) or alias.
    bandwidth, latency
        As for `parse_topology` (values with units or numbers in bytes/s and s).
    **params
        The family's parameters (`FAMILIES[family].params`), e.g. `dims=(8, 8)` for a torus,
        `n=8, reduce=True` for a switch, `n=4, links=[(0, 1), (1, 2), (2, 3), (3, 0)]` for direct.

    Returns
    -------
    Topology
        ConfigError naming the field for an unknown family, field or a bad value.

    Examples
    --------
    >>> build_topology("torus", dims=(4, 4), bandwidth="50GB/s").n_links
    64
    """
    from ..config import validate

    fam = _family(family, str(family))
    p = validate(fam.params, dict(params), f"topology {fam.name}")
    return fam.build(p, _values(bandwidth, parse_bandwidth, "bandwidth"), _values(latency, parse_time, "latency"),
                     f"{fam.name} topology")


def topology_from_config(value: Any, bandwidth="400Gbps", latency="0ns") -> Topology:
    """A config's `topology:`: a spec string, or a mapping `{family: torus, dims: [8, 8], ...}`.

    Parameters
    ----------
    value : str or mapping
        The spec string or the family with its parameters.
    bandwidth, latency
        As for `parse_topology`.

    Returns
    -------
    Topology
    """
    if isinstance(value, str):
        return parse_topology(value, bandwidth, latency)
    if not isinstance(value, dict) or "family" not in value:
        raise ConfigError("topology", value, "accepted: a spec string (torus:8x8) or a mapping with family: and its "
                                             "parameters, e.g. {family: torus, dims: [8, 8]}")
    rest = {k: v for k, v in value.items() if k != "family"}
    return build_topology(str(value["family"]), bandwidth=bandwidth, latency=latency, **rest)
