"""Topology families: the registry, spec strings, and the one way a topology is built.

Every family (one file in `builders/`) declares its typed parameters (a pydantic model), a
parser from a spec string to those parameters and a builder from them (`TopologyFamily`).
`parse_topology("torus:8x8", ...)`, `build_topology("torus", dims=(8, 8), ...)` and a config's
`topology: {family: torus, dims: [8, 8]}` (`topology_from_config`) all end in `_build`: validate
the parameters, size them (`TopologyFamily.size`) against the `npus`, `links` and `route_table`
limits before anything is allocated, parse the bandwidths and latencies, call the family's builder.

    ring:8            bidirectional ring          ring:8,uni     one direction
    fully-connected:8 (fc:8)                      switch:8       one switch (switch:8,reduce: in-network)
    mesh:4x4          torus:8x8x8                 stack:Ring4xFullyConnected8xSwitch4   (ASTRA-sim style)
    fat-tree:64,leaf=8,spines=4,oversub=2
    wafer:5x4,io=128GB/s                          fred:5x4,up=12TB/s,io=128GB/s,reduce   (FRED paper)
    direct (programmatic only): n NPUs and a list of links, fewest-hop routing
    circulant:12:1,5  rings i <-> i+p for each jump p (TopoOpt), fewest-hop routing
    dgx:nodes=32,gpus=8,nics=8,nvlink=450GB/s,nic=400Gbps,fabric=rail-fat-tree   GPU nodes on a fabric
    dgx-a100:nodes=32  dgx-h100:nodes=32  tpu-v4:4x4x4   presets (topology/presets.py)

Bandwidth and latency are per link and direction, one value for all dimensions or one per
dimension (stack, torus, mesh). Adding a family: a file in `builders/` ending with its `FAMILY`
and one `_register(NAME.FAMILY)` line below (and NAME in the import).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..config import link_items, validate
from ..errors import ConfigError
from ..units import parse_bandwidth, parse_time
from .builders import (
    circulant,
    dgx,
    direct,
    fat_tree,
    fred,
    fully_connected,
    mesh,
    ring,
    stack,
    switch,
    torus,
    wafer,
)
from . import presets
from .defaults import DEFAULT_BANDWIDTH, DEFAULT_LATENCY
from .family import LinkValues, Params, TopologyFamily, check_link_value, check_size
from .graph import Topology

FAMILIES: dict[str, TopologyFamily] = {}
"""The registered families by name (`fabricsim topologies` lists them)."""

_ALIASES: dict[str, str] = {}


def _register(family: TopologyFamily) -> TopologyFamily:
    FAMILIES[family.name] = family
    for a in family.aliases:
        _ALIASES[a] = family.name
    return family


_register(ring.FAMILY)
_register(fully_connected.FAMILY)
_register(switch.FAMILY)
_register(mesh.FAMILY)
_register(torus.FAMILY)
_register(stack.FAMILY)
_register(fat_tree.FAMILY)
_register(wafer.FAMILY)
_register(fred.FAMILY)
_register(direct.FAMILY)
_register(circulant.FAMILY)
_register(dgx.FAMILY)
_register(presets.DGX_A100_FAMILY)
_register(presets.DGX_H100_FAMILY)
_register(presets.TPU_V4_FAMILY)


# ---- the one build path --------------------------------------------------------------------------


def _lookup(name: Any) -> TopologyFamily | None:
    key = str(name).strip().lower()
    return FAMILIES.get(_ALIASES.get(key, key))


def _link_values(value: Any, parse, field: str, where: str) -> LinkValues:
    """Bandwidths or latencies: a number, a string with units, a comma list or a sequence; each
    within the range `check_link_value` keeps finite."""
    items = link_items(value, field)
    text = value if isinstance(value, str) else ",".join(map(str, items))
    return LinkValues([check_link_value(parse(v, field), field, v) for v in items], field, text, where)


def _build(family: TopologyFamily, params: Mapping[str, Any] | Params, bandwidth: Any, latency: Any,
           where: str, given: object) -> Topology:
    """The one path from a family and its parameters to a Topology: validate, size it against the
    limits (before anything is allocated), parse the link values, build (`where`: named in errors;
    `given`: what the user wrote, named in a limit's error)."""
    if not isinstance(params, family.params):
        params = validate(family.params, dict(params), f"topology {family.name}")
    n_npus, n_links = family.size(params)
    check_size(n_npus, n_links, "topology", given, family.table(params) if family.table else 0)
    return family.build(params, _link_values(bandwidth, parse_bandwidth, "bandwidth", where),
                        _link_values(latency, parse_time, "latency", where))


def _shown(family: str, params: Mapping[str, Any]) -> dict:
    """The mapping as an error names it: a long list (a direct topology's links) by its length."""
    out: dict[str, Any] = {"family": family}
    for k, v in params.items():
        if (isinstance(v, (list, tuple)) or isinstance(v, np.ndarray) and v.ndim) and len(v) > 8:
            v = f"<{len(v)} items>"
        out[k] = list(v) if isinstance(v, tuple) else v
    return out


# ---- public entry points ---------------------------------------------------------------------------


def parse_topology(spec: str, bandwidth=DEFAULT_BANDWIDTH, latency=DEFAULT_LATENCY) -> Topology:
    """Build a topology from a spec string.

    Parameters
    ----------
    spec : str
        `KIND:SHAPE[,option...]` (see `fabricsim topologies`), e.g. `torus:8x8`, `switch:8,reduce`.
    bandwidth : str, float or list
        Per link and direction, bytes/s or with units (default `DEFAULT_BANDWIDTH`, 400Gbps); one
        value or one per dimension (a list or a comma list, `200GB/s,50GB/s`).
    latency : str, float or list
        Per link, s or with units (default `DEFAULT_LATENCY`, 100ns); one value or one per dimension.

    Returns
    -------
    Topology
        The same topology `build_topology` gives for the parsed parameters. ConfigError (one
        line naming the spec, the value and what is accepted) for anything not accepted, and
        for a topology beyond the `npus`, `links` or `route_table` limit (`fabricsim.limits`;
        sized before anything is allocated, the message gives the estimate).

    Examples
    --------
    >>> parse_topology("torus:4x4", "50GB/s", "100ns").n_links   # 16 NPUs x 2 dims x 2 directions
    64
    >>> parse_topology("stack:Ring4xSwitch8", "200GB/s,50GB/s", "50ns,500ns").dims
    (4, 8)
    """
    text = str(spec).strip()
    kind, sep, rest = text.partition(":")
    fam = _lookup(kind)
    if fam is None or (not sep and not _has_defaults(fam)):
        examples = ", ".join(f.example for f in FAMILIES.values() if f.parse is not None)
        raise ConfigError("topology", spec, f"accepted: {examples}")
    if fam.parse is None:
        raise ConfigError("topology", spec, f"the {fam.name} family has no spec string; accepted: a mapping such as "
                                            f"{fam.example} or build_topology({fam.name!r}, ...)")
    parts = rest.split(",")
    params = validate(fam.params, fam.parse(text, parts[0], parts[1:]), f"topology {text}")
    return _build(fam, params, bandwidth, latency, text, text)


def _has_defaults(fam) -> bool:
    """Whether a family's bare name is a whole spec (`tpu-v4`, `dgx-h100`: the same as `tpu-v4:`,
    its defaults); `ring` alone is not (it needs a size)."""
    if fam.parse is None:
        return False
    try:
        fam.parse(f"{fam.name}:", "", [])
    except ConfigError:
        return False
    return True


def build_topology(family: str, *, bandwidth=DEFAULT_BANDWIDTH, latency=DEFAULT_LATENCY, **params: Any) -> Topology:
    """Build a topology from its family's typed parameters (the programmatic twin of `parse_topology`).

    Parameters
    ----------
    family : str
        A registered family (`fabricsim topologies`, `FAMILIES`) or alias (`fc`, `fattree`, `astra`).
    bandwidth : str, float or list
        Per link and direction, bytes/s or with units (default `DEFAULT_BANDWIDTH`, 400Gbps); one
        value or one per dimension.
    latency : str, float or list
        Per link, s or with units (default `DEFAULT_LATENCY`, 100ns); one value or one per dimension.
    **params
        The family's parameters (`FAMILIES[family].params`): e.g. `dims=(8, 8)` for a torus,
        `n=8, reduce=True` for a switch, `n=4, links=[(0, 1), (1, 2), (2, 3), (3, 0)]` for direct.
        Bandwidth parameters (`io_bandwidth`, `up_bandwidth`) take units too.

    Returns
    -------
    Topology
        Identical to `parse_topology` of the equivalent spec string. ConfigError (one line naming
        the field, the value and what is accepted) for an unknown family or field, a bad value
        (integers and booleans are taken as given, never coerced from strings, floats or
        truthiness), or a topology beyond a limit (as `parse_topology`).

    Examples
    --------
    >>> build_topology("torus", dims=(4, 4), bandwidth="50GB/s").n_links
    64
    >>> t = build_topology("fat-tree", n=16, leaf=4, spines=2, bandwidth=50e9, latency="100ns")
    >>> t.n_switches, t.n_links   # 4 leaves + 2 spines; 2 x 16 NPU links + 2 x 4 x 2 uplinks
    (6, 48)
    >>> build_topology("direct", n=4, links=[(0, 1), (1, 2), (2, 3), (3, 0)]).n_links
    8
    """
    fam = _lookup(family)
    if fam is None:
        names = ", ".join(f.name + (f" ({', '.join(f.aliases)})" if f.aliases else "") for f in FAMILIES.values())
        raise ConfigError("topology: family", family, f"accepted: {names}")
    return _build(fam, params, bandwidth, latency, f"{fam.name} topology", _shown(fam.name, params))


def topology_from_config(value: Any, bandwidth=DEFAULT_BANDWIDTH, latency=DEFAULT_LATENCY) -> Topology:
    """A config's `topology:`: a spec string, or a mapping `{family: torus, dims: [8, 8], ...}`.

    Parameters
    ----------
    value : str or mapping
        The spec string (as `parse_topology`) or `family` with the family's parameters (as
        `build_topology`).
    bandwidth : str, float or list
        Per link and direction, bytes/s or with units (default 400Gbps); one value or one per dimension.
    latency : str, float or list
        Per link, s or with units (default 100ns); one value or one per dimension.

    Returns
    -------
    Topology
        ConfigError (one line naming the field, the value and what is accepted) for anything
        not accepted.

    Examples
    --------
    >>> topology_from_config({"family": "switch", "n": 8, "reduce": True}, "50GB/s", "100ns").describe()
    'switch:8,reduce: 8 NPUs, 1 switches, 16 directed links of 50 GB/s'
    """
    if isinstance(value, str):
        return parse_topology(value, bandwidth, latency)
    if not isinstance(value, Mapping) or "family" not in value:
        raise ConfigError("topology", value, "accepted: a spec string (torus:8x8) or a mapping with family: and its "
                                             "parameters, e.g. {family: torus, dims: [8, 8]}")
    rest = {str(k): v for k, v in value.items() if k != "family"}
    for key in ("bandwidth", "latency"):
        if key in rest:
            raise ConfigError(f"topology: {key}", rest[key], f"accepted: the {key} beside the topology (as the "
                                                           f"network's {key}), not inside its mapping")
    return build_topology(value["family"], bandwidth=bandwidth, latency=latency, **rest)


def topology_npus(value: Any) -> int | None:
    """NPUs of a topology as a config gives it (a spec string or a mapping with `family`), counted
    from its parameters without building it; None where only building it can tell (or it is refused).

    Parameters
    ----------
    value : str or mapping
        `KIND:SHAPE[,option...]`, or `{family: KIND, ...parameters}`.

    Returns
    -------
    int or None
        NPUs; ConfigError naming `topology <spec>` for parameters the family refuses.
    """
    if isinstance(value, str):
        text = value.strip()
        kind, sep, rest = text.partition(":")
        fam = _lookup(kind)
        if fam is not None and (sep or _has_defaults(fam)) and fam.parse is not None:
            parts = rest.split(",")
            return int(fam.size(validate(fam.params, fam.parse(text, parts[0], parts[1:]), f"topology {text}"))[0])
    elif isinstance(value, dict) and _lookup(value.get("family")) is not None:
        fam = _lookup(value["family"])
        params = {str(k): v for k, v in value.items() if k not in ("family", "bandwidth", "latency")}
        return int(fam.size(validate(fam.params, params, f"topology {fam.name}"))[0])
    return None
