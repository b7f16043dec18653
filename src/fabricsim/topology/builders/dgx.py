"""dgx: clusters of scale-up nodes (DGX/HGX) on a scale-out fabric (InfiniBand); docs/topologies.md.

Nodes, in order: GPUs (GPU g of node k is NPU k * gpus + g; dims (gpus, nodes)), one NVSwitch per
node (a non-blocking switch standing for its NVSwitch chips), NICs (NIC r of node k is node
n + nodes + k * nics + r; GPU g uses NIC g * nics // gpus), fabric switches (leaves, then spines).
One node has no NICs and no fabric (`node_nics` 0). Links, line rate x class efficiency:

    nvlink  GPU <-> NVSwitch at `nvlink` per GPU and direction     x nvlink_eff   dim 0
    pcie    GPU <-> its NIC at `pcie` x pcie_eff (default: the NIC's effective rate)  dim 1
    nic     NIC <-> its leaf (or the one switch) at `nic`          x nic_eff      dim 1
    fabric  leaf <-> spine at m x nic / (oversub x spines)        x nic_eff      dim 1
    reduce  self-loop of a reducing switch at nvls/sharp_rate      as given       dim -1

Fabrics: `rail-fat-tree` (`rail`, default): rail r = NIC r of every node, each rail its own leaves
of `leaf` nodes (32: a SuperPOD scalable unit), every leaf linked to every spine (default m spines,
m = ends per leaf: each uplink at the NIC rate for oversub 1); `fat-tree`: NICs in id order, `leaf`
per leaf; `switch`: one switch. No spines with one leaf in all.

Routing (`DgxRouter`): GPU -> NVSwitch -> GPU inside a node; between nodes on a rail fabric NCCL's
PXN: out through NIC r = the destination's rail, a source on another rail first crossing NVLink to
its node's GPU with the destination's local index (the proxy); other fabrics: own NIC to own NIC.
Leaf A's end i to leaf B's end j takes spine (m i + j + A + B) mod spines (even when spines | m^2).

Efficiency defaults, NCCL src/graph/topo.h (`EFFICIENCY`): nvlink_eff 0.8 = SM80_NVLINK_BW 20.0 of
25 GB/s per NVLink3 link (SM90_NVLINK_BW 20.6 / 25 = 0.824: dgx-h100); nic_eff 0.96 = NET_BW 12.0
for a 12.5 GB/s (100 Gbit/s) NIC; pcie_eff 0.76 = PCI_BW 12.0 for PCIe Gen3 x16 (15.75 GB/s).
Latency: `nvlink_lat` (NVLink), `nic_lat` (pcie, nic, fabric), default the network's latency (one
value, or two: NVLink, rest). The network's bandwidth is not used: rates are dgx parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import Field, field_validator, model_validator

from ...errors import ConfigError
from ...units import format_bandwidth, format_time, parse_time
from ..family import (
    MAX_LATENCY,
    Bool,
    Int,
    LinkValues,
    Params,
    Real,
    TopologyFamily,
    bandwidth_field,
    check_size,
    parse_flags,
)
from ..graph import Topology
from .fat_tree import MAX_OVERSUB

LINK_CLASSES = ("nvlink", "pcie", "nic", "fabric", "reduce")
"""`Topology.link_classes` of a dgx topology; `link_class` indexes it."""
NVLINK, PCIE, NIC, FABRIC, REDUCE = range(5)

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
                raise ConfigError(rate, getattr(self, rate), f"sets the reduction rate and {flag} is off; accepted: "
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


@dataclass(frozen=True, eq=False)
class DgxRouter:
    """Routing of a dgx topology (module doc): NVLink inside a node, PXN rail alignment on a rail
    fabric, own NIC to own NIC otherwise; NPU <-> its NVSwitch, its NIC, the leaf and spines above
    its NIC (in-network reductions). Link ids index the topology's arrays; -1 where absent.

    Parameters
    ----------
    gpus, nics, rail, per_leaf, first_leaf : int, int, bool, int, int
        GPUs and NICs per node (nics 0: one node), a rail fabric (PXN), m ends per leaf, node id of
        leaf 0 (spines follow the leaves).
    nv_up, nv_down, pcie_up, pcie_down : int64 arrays [n]
        GPU -> its NVSwitch and back, GPU -> its NIC and back.
    nic_up, nic_down, nic_leaf, nic_pos : int64 arrays [nodes x nics]
        NIC -> its leaf and back; each NIC's leaf (0-based) and its end's position on that leaf.
    leaf_up, spine_down : int64 arrays [leaves, spines], [spines, leaves]
        Leaf -> spine and spine -> leaf links (no spines: empty).
    """

    gpus: int
    nics: int
    rail: bool
    per_leaf: int
    first_leaf: int
    nv_up: np.ndarray
    nv_down: np.ndarray
    pcie_up: np.ndarray
    pcie_down: np.ndarray
    nic_up: np.ndarray
    nic_down: np.ndarray
    nic_leaf: np.ndarray
    nic_pos: np.ndarray
    leaf_up: np.ndarray
    spine_down: np.ndarray

    def nic_of(self, npu: np.ndarray) -> np.ndarray:
        """Global NIC index (node x nics + rail) of each GPU's own NIC.

        Parameters
        ----------
        npu : int64 array
            GPUs.

        Returns
        -------
        int64 array
            NIC indexes; the NIC's node id is n + nodes + index.
        """
        return npu // self.gpus * self.nics + npu % self.gpus * self.nics // self.gpus

    def spine_of(self, a_pos, a_leaf, b_pos, b_leaf) -> np.ndarray:
        """The spine of a leaf-to-leaf transfer: (m i + j + A + B) mod spines for end i of leaf A to
        end j of leaf B (every term reduced first: no overflow).

        Parameters
        ----------
        a_pos, a_leaf, b_pos, b_leaf : int64 arrays [T]
            Positions of the two ends on their leaves, and the leaves.

        Returns
        -------
        int64 array [T]
            Spine indexes 0..spines-1.
        """
        k, m = self.leaf_up.shape[1], self.per_leaf
        return (m % k * (a_pos % k) + b_pos + a_leaf % k + b_leaf % k) % k

    def route(self, topo: Topology, src: np.ndarray, dst: np.ndarray):
        """Paths of GPU -> GPU transfers, GPU -> a switch above it and back (class doc).

        Parameters
        ----------
        topo : Topology
            The topology this router belongs to.
        src, dst : int64 arrays [T]
            GPUs, or a GPU and its NVSwitch, its NIC, the leaf above its NIC or a spine.

        Returns
        -------
        ptr : int64 array [T + 1]
        links : int64 array
            Transfer t uses links `links[ptr[t]:ptr[t + 1]]`, in path order (none when src == dst).
            ValueError for a node outside the topology, a switch-to-switch pair or a switch not above the GPU.
        """
        n, T = topo.n_npus, len(src)
        if T and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= topo.n_nodes):
            raise ValueError("dgx routing: node outside the topology")
        sw_s, sw_d = src >= n, dst >= n
        if (sw_s & sw_d).any():
            raise ValueError("dgx routing: switch-to-switch transfers are not routed")
        hops = np.full((T, 8), -1, dtype=np.int64)
        m = ~sw_s & ~sw_d & (src != dst)
        self._gpu_pairs(hops, np.flatnonzero(m), src[m], dst[m])
        for mask, gpu, sw, down in ((~sw_s & sw_d, src, dst, False), (sw_s & ~sw_d, dst, src, True)):
            if mask.any():
                hops[np.flatnonzero(mask), :3] = self._switch_path(topo, gpu[mask], sw[mask], down)
        valid = hops >= 0
        ptr = np.zeros(T + 1, dtype=np.int64)
        np.cumsum(valid.sum(axis=1), out=ptr[1:])
        return ptr, hops[valid]

    def _gpu_pairs(self, hops: np.ndarray, t: np.ndarray, s: np.ndarray, d: np.ndarray) -> None:
        """Fill `hops[t]` with the paths s -> d of distinct GPUs (columns: nvlink up, nvlink down,
        pcie up, nic up, leaf up, spine down, nic down, pcie down)."""
        G = self.gpus
        same = s // G == d // G
        hops[t[same], 0], hops[t[same], 1] = self.nv_up[s[same]], self.nv_down[d[same]]
        t, s, d = t[~same], s[~same], d[~same]
        if not len(t):
            return
        if self.nics == 0:
            raise ValueError("dgx routing: one node has no path between nodes")
        if self.rail:  # PXN: leave through the destination's rail, via the proxy GPU of that rail
            proxy = s // G * G + d % G
            hop = self.nic_of(s) != self.nic_of(proxy)
            hops[t[hop], 0], hops[t[hop], 1] = self.nv_up[s[hop]], self.nv_down[proxy[hop]]
            s = np.where(hop, proxy, s)
        qs, qd = self.nic_of(s), self.nic_of(d)
        hops[t, 2], hops[t, 3] = self.pcie_up[s], self.nic_up[qs]
        ls, ld = self.nic_leaf[qs], self.nic_leaf[qd]
        x = ls != ld
        if x.any():
            sp = self.spine_of(self.nic_pos[qs[x]], ls[x], self.nic_pos[qd[x]], ld[x])
            hops[t[x], 4], hops[t[x], 5] = self.leaf_up[ls[x], sp], self.spine_down[sp, ld[x]]
        hops[t, 6], hops[t, 7] = self.nic_down[qd], self.pcie_down[d]

    def _switch_path(self, topo: Topology, g: np.ndarray, x: np.ndarray, down: bool) -> np.ndarray:
        """Paths GPU g -> switch x above it (or x -> g when `down`), rows of 3 links padded with -1
        at the end: its NVSwitch (1 link), its NIC (1), the leaf above its NIC (2) or a spine (3)."""
        n, G = topo.n_npus, self.gpus
        out = np.full((len(g), 3), -1, dtype=np.int64)
        nv = x == n + g // G
        out[nv, 0] = (self.nv_down if down else self.nv_up)[g[nv]]
        ok = nv.copy()
        if self.nics:
            q = self.nic_of(g)
            leaf = self.nic_leaf[q]
            spine = x - self.first_leaf - self.leaf_up.shape[0]
            at = ((1, x == n + n // G + q), (2, x == self.first_leaf + leaf),
                  (3, (spine >= 0) & (spine < self.leaf_up.shape[1])))
            for depth, hit in at:
                if not hit.any():
                    continue
                gh, qh, lh = g[hit], q[hit], leaf[hit]
                sh = spine[hit] if depth == 3 else None
                if down:  # spine -> leaf -> NIC -> GPU
                    cols = [self.pcie_down[gh], self.nic_down[qh], *([self.spine_down[sh, lh]] if depth == 3 else [])]
                    cols = cols[:depth][::-1]
                else:
                    cols = [self.pcie_up[gh], self.nic_up[qh], *([self.leaf_up[lh, sh]] if depth == 3 else [])][:depth]
                out[hit, :depth] = np.stack(cols, axis=1)
                ok |= hit
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0])
            raise ValueError(f"dgx routing: node {int(x[i])} is not a switch above GPU {int(g[i])}")
        return out


def dgx(nodes: int, latency: float | tuple[float, float] = 1e-7, **params: Any) -> Topology:
    """A cluster of scale-up nodes on a scale-out fabric (module doc).

    Parameters
    ----------
    nodes : int
        Nodes.
    latency : float or (float, float)
        Latency of NVLink links and of the others (pcie, nic, fabric), s, unless given in params.
    **params
        `DgxParams` fields: `nvlink` (required), `nic` (required with nodes > 1), `gpus`, ...

    Returns
    -------
    Topology
        ConfigError naming the field for a parameter not accepted, or beyond the limits.

    Examples
    --------
    >>> t = dgx(2, gpus=4, nics=2, nvlink="300GB/s", nic="200Gbps", latency=0.0)
    >>> t.n_npus, t.n_switches, t.n_links, t.dims   # 2 NVSwitches, 4 NICs, 2 rail leaves, 2 spines
    (8, 10, 48, (4, 2))
    >>> float(t.link_bw[0])   # 300 GB/s x 0.8
    240000000000.0
    """
    from ...config import validate

    p = validate(DgxParams, {"nodes": nodes, **params}, "topology dgx")
    lat = tuple(latency) if isinstance(latency, (tuple, list)) else (latency, latency)
    return build_dgx(p, "dgx", float(lat[0]), float(lat[1]))


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


def build_dgx(p: DgxParams, family: str, nvlink_lat: float, nic_lat: float) -> Topology:
    """The topology of validated parameters (the builder behind `dgx` and the presets).

    Parameters
    ----------
    p : DgxParams
        Validated parameters (a preset's model included).
    family : str
        Named in the topology's name (`dgx`, `dgx-h100`).
    nvlink_lat, nic_lat : float
        Latencies used where `p.nvlink_lat` / `p.nic_lat` are not given, s.

    Returns
    -------
    Topology
        ConfigError beyond the `npus`/`links` limits (checked before anything is allocated).
    """
    name = _name(family, p)
    check_size(*dgx_size(p), "topology", name)
    G, N, nodes = p.gpus, (p.n_nics if p.nodes > 1 else 0), p.nodes
    n, Q = nodes * G, nodes * N
    m, L, S = layout(nodes, N, p.fabric, p.leaf, p.spines)
    lat_nv = p.nvlink_lat if p.nvlink_lat is not None else nvlink_lat
    lat_nic = p.nic_lat if p.nic_lat is not None else nic_lat
    gpu = np.arange(n)
    nvsw = n + gpu // G
    nic0, leaf0 = n + nodes, n + nodes + Q
    cols: dict[str, list] = {"src": [], "dst": [], "bw": [], "lat": [], "cls": [], "dim": []}
    count = [0]

    def add(s, d, bw, lat, cls, dim) -> np.ndarray:
        s = np.asarray(s, dtype=np.int64)
        for key, v in (("src", s), ("dst", d), ("bw", np.full(len(s), bw)), ("lat", np.full(len(s), lat)),
                       ("cls", np.full(len(s), cls)), ("dim", np.full(len(s), dim))):
            cols[key].append(np.asarray(v))
        count[0] += len(s)
        return np.arange(count[0] - len(s), count[0])

    nv_bw = p.nvlink * p.nvlink_eff
    nv_up, nv_down = add(gpu, nvsw, nv_bw, lat_nv, NVLINK, 0), add(nvsw, gpu, nv_bw, lat_nv, NVLINK, 0)
    empty = np.zeros(0, dtype=np.int64)
    pcie_up = pcie_down = np.full(n, -1, dtype=np.int64)
    nic_up = nic_down = nic_leaf = nic_pos = empty
    leaf_up, spine_down = np.zeros((L, 0), dtype=np.int64), np.zeros((0, L), dtype=np.int64)
    if nodes > 1:
        q = np.arange(Q)
        own = nic0 + gpu // G * N + gpu % G * N // G
        # no pcie given: the GPU-NIC hop is as fast as the NIC (never the bottleneck)
        pc_bw = p.pcie * p.pcie_eff if p.pcie is not None else p.nic * p.nic_eff
        pcie_up, pcie_down = add(gpu, own, pc_bw, lat_nic, PCIE, 1), add(own, gpu, pc_bw, lat_nic, PCIE, 1)
        if p.fabric == "rail-fat-tree":  # leaf index: rail-major, then the node's block of m
            nic_leaf, nic_pos = q % N * (nodes // m) + q // N // m, q // N % m
        else:
            nic_leaf, nic_pos = q // m, q % m
        nic_up = add(nic0 + q, leaf0 + nic_leaf, p.nic * p.nic_eff, lat_nic, NIC, 1)
        nic_down = add(leaf0 + nic_leaf, nic0 + q, p.nic * p.nic_eff, lat_nic, NIC, 1)
        if S:
            up_bw = m * p.nic * p.nic_eff / (p.oversub * S)
            lv, sp = np.repeat(np.arange(L), S), np.tile(np.arange(S), L)
            leaf_up = add(leaf0 + lv, leaf0 + L + sp, up_bw, lat_nic, FABRIC, 1).reshape(L, S)
            spine_down = add(leaf0 + L + sp, leaf0 + lv, up_bw, lat_nic, FABRIC, 1).reshape(L, S).T.copy()
    n_nodes = n + nodes + Q + L + S
    reduce_link = np.full(n_nodes, -1, dtype=np.int64)
    can = np.zeros(n_nodes, dtype=bool)
    can[n:n + nodes] = p.nvls
    can[leaf0:] = p.sharp
    for on, rate, first, count_sw in ((p.nvls, p.nvls_rate, n, nodes), (p.sharp, p.sharp_rate, leaf0, L + S)):
        if on and rate is not None and count_sw:
            sw = np.arange(first, first + count_sw)
            reduce_link[sw] = add(sw, sw, rate, 0.0, REDUCE, -1)
    router = DgxRouter(G, N, p.fabric == "rail-fat-tree", m, leaf0, nv_up, nv_down, pcie_up, pcie_down, nic_up,
                       nic_down, nic_leaf, nic_pos, leaf_up, spine_down)
    cat = {k: np.concatenate(v) for k, v in cols.items()}
    return Topology(name, n, cat["src"], cat["dst"], cat["bw"], cat["lat"], router, n_switches=n_nodes - n,
                    dims=(G, nodes), link_dim=cat["dim"], can_reduce=can, can_multicast=can.copy(), leaf_of=nvsw,
                    node_gpus=G, node_nics=N, link_class=cat["cls"], link_classes=LINK_CLASSES,
                    reduce_link=reduce_link, gpu_sm=p.sm)


# ---- spec strings -------------------------------------------------------------------------------


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


def dgx_family(name: str, params: type[DgxParams], example: str, summary: str) -> TopologyFamily:
    """A family built by `build_dgx`: `dgx` itself and each preset (`presets.py`).

    Parameters
    ----------
    name : str
        The family's name (`dgx`, `dgx-h100`), also the start of its topologies' names.
    params : type
        `DgxParams` or a preset's subclass of it (its defaults).
    example, summary : str
        For `fabricsim topologies`.

    Returns
    -------
    TopologyFamily
        Parsed by `parse_dgx`, sized by `dgx_size`; the network's latency is NVLink's and the others'
        (one value, or two per dimension).
    """
    def build(p: DgxParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
        return build_dgx(p, name, *latency.per_dim(2))

    return TopologyFamily(name, example, summary, params, parse_dgx, build, size=dgx_size)


FAMILY = dgx_family("dgx", DgxParams, "dgx:nodes=32,nvlink=450GB/s,nic=400Gbps",
                    "GPU nodes (NVSwitch) on a rail/fat-tree/switch fabric, PXN routing")
