"""dgx's parameters and spec strings: `DgxParams` (validated, with its limits), the fabric's shape
counted without building it (`layout`, `dgx_size`), the spec parser (`parse_dgx`) and the topology
name written back from the parameters.

What the parameters mean, and the topology `build_dgx` makes of them: the module doc of
`builders.dgx`, which re-exports these names.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from ...errors import ConfigError
from ...units import format_bandwidth, format_time, parse_time
from ..family import MAX_LATENCY, Bool, Int, Params, Real, bandwidth_field, parse_flags
from .fat_tree import MAX_OVERSUB

FABRICS = {"rail-fat-tree": "rail-fat-tree", "rail": "rail-fat-tree", "fat-tree": "fat-tree", "fattree": "fat-tree",
           "switch": "switch"}
"""Fabric names accepted (aliases included) and the fabric each means."""

DEFAULT_LEAF = 32
"""Nodes per rail leaf (NICs per leaf on a fat-tree): a DGX SuperPOD scalable unit of 32 nodes."""

EFFICIENCY = {
    "nvlink_eff": (0.8, "NCCL src/graph/topo.h: SM80_NVLINK_BW 20.0 GB/s per NVLink3 link of 25 GB/s line rate"),
    "nic_eff": (0.96, "NCCL src/graph/topo.h: NET_BW 12.0 GB/s for a 100 Gbit/s (12.5 GB/s) NIC"),
    "pcie_eff": (0.76, "NCCL src/graph/topo.h: PCI_BW 12.0 GB/s for PCIe Gen3 x16 (15.75 GB/s)"),
}
"""Default link efficiencies (share of line rate a collective reaches) and their sources."""

_VALUED = ("nodes", "gpus", "nics", "nvlink", "nic", "pcie", "fabric", "leaf", "spines", "oversub", "nvls_rate",
           "sharp_rate", "nvlink_eff", "nic_eff", "pcie_eff", "nvlink_lat", "nic_lat", "sm")
_FLAGS = ("nvls", "sharp", "nonvls", "nosharp")
_INTS = ("nodes", "gpus", "nics", "leaf", "spines", "sm")
_REALS = ("oversub", "nvlink_eff", "nic_eff", "pcie_eff")
_RATES = ("nvlink", "nic", "pcie", "nvls_rate", "sharp_rate")
_TIMES = ("nvlink_lat", "nic_lat")


def latency_field(value: Any, info) -> float | None:
    """Pydantic `mode="before"` validator for a latency parameter.

    Parameters
    ----------
    value : float, str or None
        Seconds, or a time with units (`1us`); None stays None (the family's default).
    info : ValidationInfo
        Pydantic's; its field name is named in errors.

    Returns
    -------
    float or None
        Seconds, 0 to 1e6; ConfigError naming the field otherwise.
    """
    if value is None:
        return None
    v = parse_time(value, info.field_name)
    if not 0 <= v <= MAX_LATENCY:
        raise ConfigError(info.field_name, value, "accepted: a latency from 0 to 1e6 s per link")
    return v


def _fabric_field(value: Any, info) -> str:
    """Pydantic `mode="before"` validator: a fabric name or alias, as its canonical name."""
    key = value.strip().lower() if isinstance(value, str) else None
    if key not in FABRICS:
        raise ConfigError("fabric", value, "accepted: rail-fat-tree (rail), fat-tree (fattree), switch")
    return FABRICS[key]


class DgxParams(Params):
    """dgx's parameters (module doc). Rates are bytes/s per direction (or strings with units).

    Parameters
    ----------
    nodes, gpus : int
        Scale-up nodes (>= 1) and GPUs per node (>= 1, default 8).
    nics : int, optional
        NICs per node, dividing gpus (default: gpus, one per GPU).
    nvlink, nic, pcie : float or str
        Line rates: NVLink per GPU (`450GB/s`, required), NIC (`400Gbps`, required when nodes > 1),
        GPU-NIC PCIe (default: none, the GPU-NIC hop then runs at the NIC's effective rate).
    fabric : str
        rail-fat-tree (rail; default), fat-tree (fattree) or switch.
    leaf : int
        Nodes per rail leaf (rail-fat-tree) or NICs per leaf (fat-tree), default 32; the nodes (NICs)
        must be at most leaf or a multiple of it. Not with fabric=switch.
    spines : int, optional
        Spines, 1 to m^2 (m ends per leaf); default m. Only where there are several leaves.
    oversub : float
        Oversubscription, 1/1024 to 1024: a leaf's uplinks carry m x nic / oversub. Only with spines.
    nvls, sharp : bool
        The NVSwitches (NVLink SHARP) / the fabric switches (SHARP, nodes > 1) reduce and multicast.
    nvls_rate, sharp_rate : float or str, optional
        Reduction throughput of each such switch, bytes/s of reduced output (a `reduce` self-loop);
        default unlimited. Needs nvls / sharp.
    nvlink_eff, nic_eff, pcie_eff : float
        Link efficiency per class, in (0, 1] (`EFFICIENCY`, NCCL src/graph/topo.h): 0.8 = SM80_NVLINK_BW
        20.0 / 25 GB/s per NVLink3 link; 0.96 = NET_BW 12.0 / 12.5 GB/s (100 Gbit/s NIC); 0.76 =
        PCI_BW 12.0 / 15.75 GB/s (PCIe Gen3 x16).
    sm : int
        GPU generation as compute capability x 10 (80: A100, 90: H100 and H200; default 90), which
        NCCL's tuner reads (LL's ceiling, LL128's enable rule; `network.nccl`).
    nvlink_lat, nic_lat : float or str, optional
        Latency of NVLink links and of the other links (pcie, nic, fabric), s or with units;
        default: the network's latency.
    """

    nodes: Int = Field(ge=1)
    gpus: Int = Field(default=8, ge=1)
    nics: Int | None = Field(default=None, ge=1)
    nvlink: float | None = None
    nic: float | None = None
    pcie: float | None = None
    fabric: str = "rail-fat-tree"
    leaf: Int = Field(default=DEFAULT_LEAF, ge=1)
    spines: Int | None = Field(default=None, ge=1)
    oversub: Real = 1.0
    nvls: Bool = False
    nvls_rate: float | None = None
    sharp: Bool = False
    sharp_rate: float | None = None
    nvlink_eff: Real = EFFICIENCY["nvlink_eff"][0]
    nic_eff: Real = EFFICIENCY["nic_eff"][0]
    pcie_eff: Real = EFFICIENCY["pcie_eff"][0]
    nvlink_lat: float | None = None
    nic_lat: float | None = None
    sm: Int = Field(default=90, ge=60, le=200)

    _rates = field_validator(*_RATES, mode="before")(bandwidth_field)
    _times = field_validator(*_TIMES, mode="before")(latency_field)
    _fabric = field_validator("fabric", mode="before")(_fabric_field)

    @field_validator("nvlink_eff", "nic_eff", "pcie_eff")
    @classmethod
    def _eff(cls, v, info):
        if not 0 < v <= 1:
            raise ConfigError(info.field_name, v, "accepted: a link efficiency in (0, 1] (0.8: 80% of line rate)")
        return v

    @model_validator(mode="after")
    def _check(self):
        g, k, given = self.gpus, self.n_nics, self.model_fields_set
        if k > g or g % k:
            divisors = ", ".join(str(d) for d in range(1, min(g, 64) + 1) if g % d == 0)
            raise ConfigError("nics", self.nics, f"accepted: a number of NICs dividing gpus={g} ({divisors}); rails "
                                                 "need one NIC per gpus/nics GPUs")
        if self.nvlink is None:
            raise ConfigError("nvlink", None, "required; accepted: the NVLink bandwidth per GPU and direction, "
                                              "e.g. nvlink=450GB/s")
        if self.nodes > 1 and self.nic is None:
            raise ConfigError("nic", None, f"required with {self.nodes} nodes; accepted: the NIC line rate, "
                                           "e.g. nic=400Gbps")
        for rate, flag in (("nvls_rate", "nvls"), ("sharp_rate", "sharp")):
            if rate not in given and not getattr(self, flag):  # a preset's rate goes with its flag
                object.__setattr__(self, rate, None)
            if getattr(self, rate) is not None and not getattr(self, flag):
                raise ConfigError(rate, format_bandwidth(getattr(self, rate)), f"sets the reduction rate and {flag} is off; accepted: "
                                                             f"{flag} with {rate}, or no {rate}")
        if self.nodes == 1:
            for key in ("sharp", "sharp_rate", "spines", "oversub"):
                if key in given and getattr(self, key) not in (False, None):
                    raise ConfigError(key, getattr(self, key), "one node has no fabric; accepted: nodes > 1, or "
                                                               f"no {key}")
            return self
        rail = self.fabric == "rail-fat-tree"
        ends = self.nodes if rail else self.nodes * k
        if self.fabric == "switch":
            if given & {"leaf", "spines", "oversub"}:
                key = sorted(given & {"leaf", "spines", "oversub"})[0]
                raise ConfigError(key, getattr(self, key), "fabric=switch has no leaves or spines; accepted: "
                                                           f"fabric=rail-fat-tree or fat-tree, or no {key}")
            return self
        if ends > self.leaf and ends % self.leaf:
            what = "nodes" if rail else "NICs (nodes x nics)"
            raise ConfigError("leaf", self.leaf, f"accepted: a leaf of at least the {ends} {what}, or dividing them")
        m, leaves, _ = layout(self.nodes, k, self.fabric, self.leaf, self.spines)
        if leaves == 1 and ("spines" in given or self.oversub != 1):
            key = "spines" if "spines" in given else "oversub"
            raise ConfigError(key, getattr(self, key), "one leaf has no spines; accepted: more nodes than leaf, or "
                                                       f"no {key}")
        if self.spines is not None and self.spines > m * m:
            raise ConfigError("spines", self.spines, f"accepted: 1 to {m * m} spines ({m} ends per leaf, squared: "
                                                     "single-path routing spreads two leaves' pairs over at most that)")
        if not 1 / MAX_OVERSUB <= self.oversub <= MAX_OVERSUB:
            raise ConfigError("oversub", self.oversub, f"accepted: a number from 1/{MAX_OVERSUB:g} to {MAX_OVERSUB:g}")
        return self

    @property
    def n_nics(self) -> int:
        """NICs per node (`nics`, default `gpus`)."""
        return self.nics if self.nics is not None else self.gpus


def layout(nodes: int, nics: int, fabric: str, leaf: int, spines: int | None) -> tuple[int, int, int]:
    """The fabric's shape, counted without building it.

    Parameters
    ----------
    nodes, nics : int
        Nodes and NICs per node.
    fabric : str
        rail-fat-tree, fat-tree or switch.
    leaf : int
        Nodes per rail leaf, or NICs per fat-tree leaf.
    spines : int or None
        Spines asked for (None: the default, m).

    Returns
    -------
    (int, int, int)
        m ends per leaf (nodes on a rail leaf, NICs otherwise), leaves, spines; (0, 0, 0) for one
        node (no fabric).

    Examples
    --------
    >>> layout(2, 2, "rail-fat-tree", 32, None), layout(64, 8, "rail-fat-tree", 32, 16)   # 2 x 8 rail leaves
    ((2, 2, 2), (32, 16, 16))
    >>> layout(2, 2, "switch", 32, None), layout(1, 8, "rail-fat-tree", 32, None)
    ((4, 1, 0), (0, 0, 0))
    """
    if nodes == 1:
        return 0, 0, 0
    if fabric == "switch":
        return nodes * nics, 1, 0
    ends = nodes if fabric == "rail-fat-tree" else nodes * nics
    m = min(ends, leaf)
    leaves = ends // m * (nics if fabric == "rail-fat-tree" else 1)
    return m, leaves, 0 if leaves == 1 else (spines or m)


def dgx_size(p: DgxParams) -> tuple[int, int]:
    """GPUs and directed links of a dgx topology, counted without building it.

    Parameters
    ----------
    p : DgxParams
        Validated parameters.

    Returns
    -------
    (int, int)
        n = nodes x gpus GPUs; links 2n (NVLink) plus, with more than one node, 2n (PCIe) +
        2 nodes x nics (NIC) + 2 leaves x spines (uplinks); plus a reduce self-loop per NVSwitch
        with nvls_rate and per fabric switch with sharp_rate.

    Examples
    --------
    >>> dgx_size(DgxParams(nodes=2, gpus=4, nics=2, nvlink=1e9, nic=1e9))   # 16 + 16 + 8 + 2 x 2 x 2
    (8, 48)
    """
    n, q = p.nodes * p.gpus, p.nodes * p.n_nics
    _, leaves, spines = layout(p.nodes, p.n_nics, p.fabric, p.leaf, p.spines)
    links = 2 * n + (p.nodes if p.nvls_rate is not None else 0)
    if p.nodes > 1:
        links += 2 * n + 2 * q + 2 * leaves * spines + (leaves + spines if p.sharp_rate is not None else 0)
    return n, links


# ---- spec strings -------------------------------------------------------------------------------


def _name(family: str, p: DgxParams) -> str:
    """`family:nodes=N,key=value,...` for the fields given (reports; the same for every input form)."""
    parts = [f"nodes={p.nodes}"]
    for key in type(p).model_fields:
        if key == "nodes" or key not in p.model_fields_set:
            continue
        v = getattr(p, key)
        if isinstance(v, bool):
            parts.append(key if v else "no" + key)
        elif key in _RATES and v is not None:
            parts.append(f"{key}={format_bandwidth(v, 6).replace(' ', '')}")
        elif key in _TIMES and v is not None:
            parts.append(f"{key}={format_time(v, 6).replace(' ', '')}")
        elif v is not None:
            parts.append(f"{key}={v:g}" if isinstance(v, float) else f"{key}={v}")
    return f"{family}:" + ",".join(parts)


def parse_dgx(spec: str, shape: str, opts: list[str]) -> dict:
    """The spec parser of dgx and its presets: `key=value` options (`nodes=32,gpus=8,...`; nodes
    may stand alone first, `dgx-h100:32`) and the flags nvls, sharp (nonvls, nosharp: off).

    Parameters
    ----------
    spec : str
        The whole spec string, named in errors.
    shape : str
        The part after `:` up to the first comma.
    opts : list of str
        The other comma-separated parts.

    Returns
    -------
    dict
        The parameters given, typed (ints, floats; rates and times as text for `DgxParams`);
        ConfigError naming the option for an unknown, repeated or unreadable one.
    """
    parts = [shape, *opts]
    if parts == [""]:
        parts = []
    elif shape.strip().isdigit():
        parts[0] = "nodes=" + shape.strip()
    f = parse_flags(parts, set(_VALUED) | set(_FLAGS), spec, valued=frozenset(_VALUED))
    out: dict[str, Any] = {}
    for key, text in f.items():
        if key in _FLAGS:
            name = key.removeprefix("no")
            if name in out:
                raise ConfigError(f"topology {spec}: {name}", text or key, f"{name} and no{name} contradict; "
                                                                         "accepted: one of them")
            out[name] = not key.startswith("no")
        elif key in _INTS:
            if not text.isdigit() or len(text) > 4000:
                raise ConfigError(f"topology {spec}: {key}", text, "accepted: an integer >= 1")
            out[key] = int(text)
        elif key in _REALS:
            try:
                out[key] = float(text)
            except ValueError:
                raise ConfigError(f"topology {spec}: {key}", text, "accepted: a number") from None
        else:
            out[key] = text
    return out
