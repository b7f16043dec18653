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

The parameters and spec strings are in `dgx_params`, the router in `dgx_router` (both re-exported
here); this module builds the topology.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..family import LinkValues, TopologyFamily, check_size
from ..graph import Topology
from .dgx_params import DgxParams, _name, dgx_size, layout, parse_dgx
from .dgx_router import DgxRouter

# re-exported: the parameters' defaults and validator (presets.py imports latency_field from here)
from .dgx_params import DEFAULT_LEAF, EFFICIENCY, FABRICS, latency_field  # noqa: F401

LINK_CLASSES = ("nvlink", "pcie", "nic", "fabric", "reduce")
"""`Topology.link_classes` of a dgx topology; `link_class` indexes it."""
NVLINK, PCIE, NIC, FABRIC, REDUCE = range(5)


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
