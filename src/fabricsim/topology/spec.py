"""Topology specification strings, as given on the command line: `KIND:SHAPE[,option...]`.

    ring:8            bidirectional ring          ring:8,uni     one direction
    fully-connected:8 (fc:8)                      switch:8       one switch (switch:8,reduce: in-network)
    mesh:4x4          torus:8x8x8                 stack:Ring4xFullyConnected8xSwitch4   (ASTRA-sim style)
    fat-tree:64,leaf=8,spines=4,oversub=2
    wafer:5x4,io=128GB/s                          fred:5x4,up=12TB/s,io=128GB/s,reduce   (FRED paper)

Bandwidth and latency are per link and direction, one value for all dimensions or one per
dimension (stack, torus, mesh).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable

from ..errors import ConfigError
from ..units import parse_bandwidth, parse_time
from .builders import fat_tree, fred_fabric, fully_connected, mesh, ring, stack, switch, torus, wafer_mesh
from .graph import Topology


@dataclass(frozen=True)
class TopologyFamily:
    name: str
    example: str
    summary: str
    build: Callable[[str, list[str], list[float], list[float]], Topology]


def _int(field: str, text: str, spec: str) -> int:
    if not re.fullmatch(r"\d+", text.strip()):
        raise ConfigError(field, spec, f"{text!r} is not a size; accepted: positive integer sizes, e.g. torus:8x8, ring:16")
    v = int(text)
    if v < 1:
        raise ConfigError(field, spec, "accepted: sizes >= 1")
    return v


def _shape(shape: str, spec: str) -> tuple[int, ...]:
    parts = shape.lower().split("x")
    dims = tuple(_int("topology", p, spec) for p in parts)
    return dims


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


def _one(values: list[float], what: str, spec: str, ndim: int = 1) -> list[float]:
    if len(values) not in (1, ndim):
        text = getattr(values, "text", None) or ",".join(map(str, values))  # as the user wrote it
        counts = "1 value" if ndim == 1 else f"1 value or {ndim} (one per dimension)"
        raise ConfigError(what, text, f"got {len(values)} values; accepted: {counts} for {spec}")
    return values


class _Values(list):
    """Parsed per-dimension values that remember the text they came from (for error messages)."""

    text: str = ""


def _single_n(shape: str, spec: str) -> int:
    dims = _shape(shape, spec)
    if len(dims) != 1:
        raise ConfigError("topology", spec, "accepted: a single size, e.g. ring:8")
    if dims[0] < 2:
        raise ConfigError("topology", spec, "accepted: at least 2 NPUs")
    return dims[0]


def _ring(spec, shape, opts, bw, lat):
    f = _flags(opts, {"uni", "bi"}, spec)
    return ring(_single_n(shape, spec), _one(bw, "bandwidth", spec)[0], _one(lat, "latency", spec)[0], bidirectional="uni" not in f)


def _fc(spec, shape, opts, bw, lat):
    _flags(opts, set(), spec)
    return fully_connected(_single_n(shape, spec), _one(bw, "bandwidth", spec)[0], _one(lat, "latency", spec)[0])


def _switch(spec, shape, opts, bw, lat):
    f = _flags(opts, {"reduce", "multicast"}, spec)
    return switch(_single_n(shape, spec), _one(bw, "bandwidth", spec)[0], _one(lat, "latency", spec)[0],
                  reduce="reduce" in f, multicast=("multicast" in f) or ("reduce" in f))


def _grid(builder):
    def build(spec, shape, opts, bw, lat):
        _flags(opts, set(), spec)
        dims = _shape(shape, spec)
        if any(d < 1 for d in dims) or max(dims) < 2:
            raise ConfigError("topology", spec, "accepted: dimensions >= 1 with at least one >= 2")
        return builder(dims, _one(bw, "bandwidth", spec, len(dims)), _one(lat, "latency", spec, len(dims)))
    return build


_STACK_KINDS = {"ring": "ring", "r": "ring", "fullyconnected": "fc", "fc": "fc", "switch": "switch", "sw": "switch"}


def _stack(spec, shape, opts, bw, lat):
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
    return stack(kinds, dims, _one(bw, "bandwidth", spec, len(dims)), _one(lat, "latency", spec, len(dims)),
                 name=f"stack:{shape}", switch_reduce="reduce" in f)


def _fat_tree(spec, shape, opts, bw, lat):
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
    return fat_tree(n, _one(bw, "bandwidth", spec)[0], _one(lat, "latency", spec)[0], leaf=leaf,
                    spines=spines, oversub=oversub, reduce="reduce" in f)


def _valued_bw(f: dict, key: str, default: float, spec: str) -> float:
    return parse_bandwidth(f[key], f"topology {key}") if key in f else default


def _wafer(spec, shape, opts, bw, lat):
    f = _flags(opts, {"io", "noio"}, spec, valued=frozenset({"io"}))
    dims = _shape(shape, spec)
    if len(dims) != 2 or min(dims) < 2:
        raise ConfigError("topology", spec, "accepted: wafer:COLSxROWS with both >= 2, e.g. wafer:5x4")
    return wafer_mesh(dims[0], dims[1], _one(bw, "bandwidth", spec)[0], _one(lat, "latency", spec)[0],
                      io_bandwidth=_valued_bw(f, "io", 128e9, spec), io="noio" not in f)


def _fred(spec, shape, opts, bw, lat):
    f = _flags(opts, {"up", "io", "ios", "reduce"}, spec, valued=frozenset({"up", "io", "ios"}))
    dims = _shape(shape, spec)
    if len(dims) != 2 or min(dims) < 1 or dims[0] * dims[1] < 2:
        raise ConfigError("topology", spec, "accepted: fred:GROUPSxNPUS_PER_L1, e.g. fred:5x4,up=12TB/s,reduce")
    b = _one(bw, "bandwidth", spec)[0]
    ios = _int("topology", f.get("ios", "18"), spec) if f.get("ios", "18") != "0" else 0
    return fred_fabric(dims[0], dims[1], b, _valued_bw(f, "up", b * dims[1], spec), _one(lat, "latency", spec)[0],
                       io_controllers=ios, io_bandwidth=_valued_bw(f, "io", 128e9, spec), reduce="reduce" in f)


FAMILIES: dict[str, TopologyFamily] = {}


def _register(name, example, summary, build, aliases=()):
    fam = TopologyFamily(name, example, summary, build)
    FAMILIES[name] = fam
    for a in aliases:
        _ALIASES[a] = name


_ALIASES: dict[str, str] = {}
_register("ring", "ring:8[,uni]", "ring of N NPUs, both directions (uni: one direction)", _ring)
_register("fully-connected", "fully-connected:8", "a link between every pair of NPUs", _fc, ("fc", "fullyconnected"))
_register("switch", "switch:8[,reduce]", "N NPUs on one switch (reduce: it reduces and multicasts)", _switch)
_register("mesh", "mesh:4x4", "N-D mesh, dimension-order routing", _grid(mesh))
_register("torus", "torus:8x8", "N-D torus (any sizes), dimension-order routing, shortest direction", _grid(torus))
_register("stack", "stack:Ring4xSwitch8", "ASTRA-sim multi-dimensional stack of Ring/FullyConnected/Switch", _stack, ("astra",))
_register("fat-tree", "fat-tree:64,leaf=8,spines=4,oversub=2", "two-level leaf/spine fat-tree with oversubscription", _fat_tree, ("fattree", "fat_tree"))
_register("wafer", "wafer:5x4[,io=128GB/s]", "wafer 2-D mesh, X-Y routing, an I/O controller per perimeter edge (FRED's baseline)", _wafer)
_register("fred", "fred:5x4,up=12TB/s[,reduce]", "FRED: L1 switches of NPUs under one L2 (up = L1-L2 per L1), I/O on L1; reduce = in-network", _fred)


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


def parse_topology(spec: str, bandwidth="400Gbps", latency="0ns") -> Topology:
    """Build a topology from `KIND:SHAPE[,opt...]`, a bandwidth and a latency (each one value
    or one per dimension, with units)."""
    text = str(spec).strip()
    kind, sep, rest = text.partition(":")
    key = _ALIASES.get(kind.strip().lower(), kind.strip().lower())
    if not sep or key not in FAMILIES:
        examples = ", ".join(f.example for f in FAMILIES.values())
        raise ConfigError("topology", spec, f"accepted: {examples}")
    parts = rest.split(",")
    bw = _values(bandwidth, parse_bandwidth, "bandwidth")
    lat = _values(latency, parse_time, "latency")
    return FAMILIES[key].build(text, parts[0], parts[1:], bw, lat)
