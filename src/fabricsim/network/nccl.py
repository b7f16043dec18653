"""NCCL's protocols (LL, LL128, Simple) and the cost terms of its tuner, as NCCL states them.

Every constant below is NVIDIA's, from NVIDIA/nccl v2.23.4-1 `src/graph/tuning.cc` (`baseLat`,
`hwLat`, `llMaxBws`, the model refinements of `ncclTopoTuneModel`, `treeCorrectionFactor` and the
ring plateau of `ncclTopoGetAlgoTime`), `src/enqueue.cc` (NVLS's chunk rule), `src/transport/nvls.cc`
(its channels and chunk) and `src/graph/topo.h`; none is fitted here. NCCL's tuner
prices an algorithm a in protocol p as `latency(a, p) + bytes / bandwidth(a, p)`. fabricsim keeps
NCCL's latency terms and its protocol's share of the bandwidth, and takes the bandwidth itself from
its network model on the algorithm's schedule (links at NCCL's effective rates, congestion where
transfers share links), so that

    time(S) = latency(a, p) + network_time(schedule, S / (fraction(a, p) x correction(a, p, S)))

bounded below by latency + S / cap(a, p), the protocol's own ceiling (LL's `llMaxBw`; a double
binary tree's NICs between nodes).

- **latency** (`protocol_latency`): `baseLat[a][p]` once, plus per hop of the algorithm's critical
  path `hwLat[hw][a][p]`: NVLink (or PCI) hops inside a node, network hops between nodes (ring:
  2(nodes-1) of its 2(p-1) all-reduce steps; tree: 2((p/nodes - 1) intra + log2(nodes) inter);
  NVLS: one NVLink hop, plus one network hop with several nodes; NVLS-tree: one NVLink hop and
  2 log2(nodes) network hops; send/recv (all-to-all, an ASSUMPTION: NCCL's tuner has no entry for
  it): a Simple ring's p - 1 steps). Between nodes a ring step costs
  at least the network post overhead (1 us on x86, 3x for Simple), and a multi-node Simple ring
  all-reduce 1.4x its latency (the "plateau effect of ring").
- **fraction**: the share of a link's rate the protocol leaves to data. LL: 0.5 (every 8 bytes
  carry 4 of data and a 4-byte flag); LL128: 0.92 (a 128-byte line carries 120 bytes of data;
  NCCL's model rounds it to 0.92); Simple: 1 (NCCL's effective link rates, which the presets
  use, already hold its overhead). Trees pay NCCL's 0.92 on top (`busBw*.92`), LL on a tree 1/3.8
  of that, LL128 on a tree 7/9 in one node and 120/128 across nodes.
- **correction**: `treeCorrectionFactor` for tree all-reduces of 64 B to 256 MiB.
- **NVLS's pipeline fill**: NVLS runs (without registered buffers) as a three-stage pipeline of
  scatter, reduce and gather warps over chunks of 16-128 KiB that NCCL picks by size
  (`nvls_chunk`); a call pays two chunk waves (16 channels x heads chunks) of fill, priced on the
  network like the rest. This is what makes NVLS at 8-512 MiB slower than latency + size / rate.

Which of these a schedule pays is stated by its algorithm (`Algorithm.nccl`: the NCCL algorithm it
is), not guessed from its shape.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ir import Schedule
from ..errors import ConfigError
from ..topology.graph import Topology

NCCL_VERSION = "2.23.4-1"
"""The NCCL release whose constants this module carries (NVIDIA/nccl tag v2.23.4-1)."""

PROTOCOLS = ("LL", "LL128", "Simple")
"""NCCL's protocols, in NCCL's order (`ncclProtoStr`)."""

PROTO_CHOICES = ("auto", "none") + PROTOCOLS
"""What the `proto` option accepts: auto = the fastest protocol NCCL enables, none = no protocol
costs (the schedule on the network alone)."""

FAMILIES = ("ring", "tree", "nvls", "nvls_tree", "p2p")
"""The NCCL algorithms fabricsim's schedules stand for (`Algorithm.nccl`)."""

_US = 1e-6
# tuning.cc v2.23.4-1 `baseLat` (us), per algorithm, (LL, LL128, Simple)
BASE_LAT_US = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0)}
# tuning.cc v2.23.4-1 `hwLat` (us): per hop, by the hop's hardware and the algorithm, (LL, LL128, Simple)
HW_LAT_US = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0.0, 0.0, 25.0),
               "nvls_tree": (0.0, 0.0, 25.0)},
    "pci": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7), "nvls": (0.0, 0.0, 0.0), "nvls_tree": (0.0, 0.0, 0.0)},
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0.0, 0.0, 18.0),
            "nvls_tree": (0.0, 0.0, 14.0)},
}
# tuning.cc `getNetOverhead` (us): a network post on x86 (Intel; AMD 2.0), x3 for Simple
NET_OVERHEAD_US = 1.0
# tuning.cc `llMaxBws` (GB/s of NCCL bus bandwidth): one node by GPU generation (Volta, Ampere,
# Hopper), 2 and more nodes by CPU (Intel row)
LL_MAX_BW_ONE_NODE = {70: 39.0, 80: 87.7, 90: 141.0}
LL_MAX_BW_NODES = {2: 39.0, 3: 20.4}
# tuning.cc `treeCorrectionFactor`: (LL, LL128, Simple) x log2(bytes / 64) = 0..22
TREE_CORRECTION = {
    "LL": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0),
    "LL128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9),
}
RING_PLATEAU = 1.4  # tuning.cc ncclTopoGetAlgoTime: multi-node Simple ring all-reduce latency x1.4 (sm >= 80)
# NVLS's pipeline (v2.23.4-1): transport/nvls.cc NCCL_NVLS_NCHANNELS 16 and NCCL_NVLS_CHUNKSIZE 128 KiB;
# enqueue.cc calcCollChunking halves the chunk to 64, 32, 16 KiB below 64, 8, 2 x (channels x heads x
# chunk) bytes; device/all_reduce.h runs NVLS without registered buffers as scatter, reduce and gather
# warps, a three-stage pipeline, so a call pays two chunk waves of fill beyond its bandwidth
NVLS_CHANNELS = 16
NVLS_CHUNK = 128 * 1024
NVLS_STAGES = 3
TREE_RATIO = 0.5  # tuning.cc: a tree's algorithm bandwidth is half its bus bandwidth (`ratio *= .5`)


@dataclass(frozen=True)
class NcclShape:
    """What NCCL's tuner knows of a communicator.

    Parameters
    ----------
    ranks : int
        GPUs in the group.
    nodes : int
        Nodes they span (1 on a topology that is not a cluster).
    intra : {"nvlink", "pci"}
        The hardware of hops inside a node.
    sm : int
        GPU generation as compute capability x 10 (80: A100, 90: H100).
    nics : int
        NICs per node the group uses (0 on one node).
    nic_rate : float
        Effective bytes/s of one NIC and direction (0 on one node).
    channels : int
        Channels of the schedule (rings, trees) for the ring plateau's threshold.
    heads : int
        NVLS heads: the GPUs of a node (one node) or its NICs (several).
    """

    ranks: int
    nodes: int
    intra: str = "nvlink"
    sm: int = 90
    nics: int = 0
    nic_rate: float = 0.0
    channels: int = 1
    heads: int = 1


def nccl_shape(topo: Topology, schedule: Schedule) -> NcclShape:
    """The `NcclShape` of a placed schedule on `topo`.

    Parameters
    ----------
    topo : Topology
        The network; a cluster (`node_gpus` > 0) gives nodes, NICs and the GPU generation.
    schedule : Schedule
        Placed (`schedule.nodes` set); its `facts` give the channels and the NICs per node (default:
        the topology's).

    Returns
    -------
    NcclShape
        On a topology that is not a cluster: one node of NVLink-connected Hopper GPUs.
    """
    p = int(schedule.p)
    channels = schedule.facts.channels
    G = int(getattr(topo, "node_gpus", 0) or 0)
    sm = int(getattr(topo, "gpu_sm", 0) or 90)
    if G <= 0 or schedule.nodes is None:
        return NcclShape(p, 1, sm=sm, channels=channels, heads=p)
    members = np.asarray(schedule.nodes[:p], dtype=np.int64)
    nodes = int(len(np.unique(members // G)))
    nics, rate = 0, 0.0
    if nodes > 1:
        nics = schedule.facts.nics_per_node or max(1, int(getattr(topo, "node_nics", 1) or 1))
        rate = _nic_rate(topo)
    return NcclShape(p, nodes, "nvlink", sm, nics, rate, channels, p // nodes if nodes == 1 else max(nics, 1))


def _nic_rate(topo: Topology) -> float:
    """Effective rate of the slowest NIC link (bytes/s), 0 when the topology names no NIC links."""
    if topo.link_class is None or "nic" not in topo.link_classes:
        return 0.0
    nic = topo.link_bw[topo.link_class == topo.link_classes.index("nic")]
    return float(nic.min()) if len(nic) else 0.0


def _log2i(n: int) -> int:
    return max(int(n), 1).bit_length() - 1


def ring_steps(collective: str, n: int) -> int:
    """Steps of NCCL's ring for a collective on n ranks (tuning.cc `nsteps`): 2(n-1) for all-reduce,
    n-1 for reduce-scatter and all-gather, n for broadcast and reduce."""
    return {"all-reduce": 2 * (n - 1), "reduce-scatter": n - 1, "all-gather": n - 1}.get(collective, n)


def protocol_latency(family: str, collective: str, proto: str, shape: NcclShape) -> float:
    """NCCL's latency of one collective (s), before the size-dependent ring plateau.

    Parameters
    ----------
    family : {"ring", "tree", "nvls", "nvls_tree", "p2p"}
        The NCCL algorithm.
    collective : str
        Canonical collective name.
    proto : {"LL", "LL128", "Simple"}
    shape : NcclShape

    Returns
    -------
    float
        Seconds (tuning.cc `ncclTopoTuneModel`'s latencies).

    Examples
    --------
    A Simple ring all-reduce on 8 NVLink GPUs: 8.4 + 14 x 3.4 us.

    >>> round(protocol_latency("ring", "all-reduce", "Simple", NcclShape(8, 1)) * 1e6, 6)
    56.0
    """
    if family == "p2p":
        # ASSUMPTION: NCCL's tuner has no entry for send/recv. NCCL runs an all-to-all as p - 1
        # rounds of point-to-point transfers (Simple); they are charged as a Simple ring's p - 1
        # steps (its all-gather latency: nodes - 1 of them on the network)
        return protocol_latency("ring", "all-gather", "Simple", shape)
    i = PROTOCOLS.index(proto)
    n, nodes = shape.ranks, shape.nodes
    intra = HW_LAT_US[shape.intra][family][i]
    # with one GPU per node every hop is exposed: tuning.cc takes the tree's network latency
    inter = HW_LAT_US["net"]["tree" if n == nodes else family][i]
    lat = BASE_LAT_US[family][i]
    if family == "ring":
        nsteps = ring_steps(collective, n)
        if collective in ("broadcast", "reduce"):
            # NCCL charges every step a chunk's latency (the tree's for Simple) when channels differ
            hw = shape.intra if nodes == 1 else "net"
            step = HW_LAT_US[hw]["tree" if proto == "Simple" else "ring"][i]
            return (lat + nsteps * step) * _US
        if nodes > 1:
            intra = max(intra, NET_OVERHEAD_US * (3 if proto == "Simple" else 1))
        n_inter = 0 if nodes == 1 else (2 * (nodes - 1) if collective == "all-reduce" else nodes - 1)
        return (lat + (nsteps - n_inter) * intra + n_inter * inter) * _US
    if family == "tree":
        return (lat + 2 * ((n // nodes - 1) * intra + _log2i(nodes) * inter)) * _US
    if family == "nvls_tree":  # one NVLink hop, then up and down log2(nodes) network hops
        return (lat + intra + 2 * _log2i(nodes) * inter) * _US
    # NVLS: its latency replaces the base (tuning.cc sets it, not adds)
    return (intra + (inter if nodes > 1 else 0.0)) * _US


def protocol_fraction(family: str, proto: str, shape: NcclShape) -> float:
    """The share of the network's bandwidth the protocol leaves to data (module doc).

    Parameters
    ----------
    family : {"ring", "tree", "nvls", "nvls_tree", "p2p"}
    proto : {"LL", "LL128", "Simple"}
    shape : NcclShape

    Returns
    -------
    float
        In (0, 1].

    Examples
    --------
    >>> protocol_fraction("ring", "LL", NcclShape(8, 1)), protocol_fraction("tree", "Simple", NcclShape(8, 1))
    (0.5, 0.92)
    """
    if family == "ring":
        return {"LL": 0.5, "LL128": 0.92, "Simple": 1.0}[proto]
    if family == "tree":
        per = {"LL": 1 / 3.8, "LL128": 7 / 9 if shape.nodes == 1 else 120 / 128, "Simple": 1.0}[proto]
        return 0.92 * per
    return 1.0  # NVLS, NVLS-tree, point-to-point: Simple


def protocol_cap(family: str, collective: str, proto: str, shape: NcclShape) -> float:
    """The protocol's ceiling on algorithm bandwidth (bytes/s; inf: the network decides).

    LL is capped at `llMaxBw` of NCCL bus bandwidth (per GPU generation on one node, per node
    count beyond), turned into algorithm bandwidth with NCCL's ratio (ring: ranks / steps; tree:
    1/2). A tree across nodes is bounded by its NICs: in a double binary tree every node is an
    inner node of one tree and a leaf of the other, which puts 2 S through each node's NICs per
    direction, so algbw <= fraction x 1/2 x NICs x NIC rate (tuning.cc's tree ratio 1/2 on the
    inter-node bandwidth).

    Parameters
    ----------
    family : {"ring", "tree", "nvls", "nvls_tree", "p2p"}
    collective : str
    proto : {"LL", "LL128", "Simple"}
    shape : NcclShape

    Returns
    -------
    float
        Bytes/s.
    """
    n, cap = shape.ranks, math.inf
    nsteps = ring_steps(collective, n)
    ratio = n / nsteps if family == "ring" else TREE_RATIO
    if proto == "LL" and family in ("ring", "tree"):
        ll = LL_MAX_BW_ONE_NODE.get(shape.sm, 141.0) if shape.nodes == 1 else LL_MAX_BW_NODES[min(shape.nodes, 3)]
        cap = ll * 1e9 * ratio
    if family == "tree" and shape.nodes > 1 and shape.nics and shape.nic_rate:
        cap = min(cap, protocol_fraction(family, proto, shape) * TREE_RATIO * shape.nics * shape.nic_rate)
    return cap


def nvls_chunk(sizes: np.ndarray, heads: int) -> np.ndarray:
    """NVLS's chunk for each size (bytes), as NCCL's `calcCollChunking` picks it: 128 KiB, halved
    to 64, 32 and 16 KiB below 64, 8 and 2 chunk waves (channels x heads chunks).

    Examples
    --------
    >>> nvls_chunk(np.array([2**20, 8 * 2**20, 64 * 2**20, 2**30]), 8).tolist()
    [16384, 32768, 65536, 131072]
    """
    s = np.asarray(sizes, float)
    ops = NVLS_CHANNELS * max(int(heads), 1)
    c = np.full(len(s), NVLS_CHUNK, dtype=np.int64)
    for waves, floor in ((64, 65536), (8, 32768), (2, 16384)):
        c = np.where((s < waves * ops * c) & (c > floor), floor, c)
    return c


def nvls_tree_chunk(sizes: np.ndarray, heads: int, nodes: int) -> np.ndarray:
    """NVLS-tree's chunk for each size (bytes), as `calcCollChunking` picks it: 128 KiB (64 KiB from
    4 nodes), cut to 256, 128, 64 and 32 KiB below 32, 16, 4 and 1 chunk waves.

    Examples
    --------
    >>> nvls_tree_chunk(np.array([2**20, 64 * 2**20, 2**30]), 8, 2).tolist()
    [32768, 65536, 131072]
    """
    s = np.asarray(sizes, float)
    ops = NVLS_CHANNELS * max(int(heads), 1)
    c = np.full(len(s), NVLS_CHUNK if nodes < 4 else 65536, dtype=np.int64)
    for waves, cap in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
        c = np.where((s < waves * ops * c) & (c > cap), cap, c)
    return c


def tree_correction(proto: str, sizes: np.ndarray) -> np.ndarray:
    """`treeCorrectionFactor` of each size (1 beyond 256 MiB and below 64 B)."""
    log = np.floor(np.log2(np.maximum(np.asarray(sizes, float), 1.0) / 64.0)).astype(np.int64)
    table = np.array(TREE_CORRECTION[proto])
    out = np.ones(len(log))
    ok = (log >= 0) & (log < len(table))
    out[ok] = table[log[ok]]
    return out


@dataclass(frozen=True)
class ProtocolTerms:
    """What one protocol adds to a schedule's network time (module doc)."""

    family: str
    collective: str
    proto: str
    latency: float
    fraction: float
    cap: float
    plateau: bool
    shape: NcclShape

    def latency_at(self, sizes: np.ndarray) -> np.ndarray:
        """Latency for each size (s): the ring plateau applies where every rank's share of a
        channel is at least 64 bytes."""
        lat = np.full(len(sizes), self.latency)
        if self.plateau:
            per = np.asarray(sizes, float) / (max(self.shape.channels, 1) * self.shape.ranks)
            lat[per >= 64] *= RING_PLATEAU
        return lat

    def fill_wave(self, sizes: np.ndarray) -> np.ndarray:
        """Bytes of one chunk wave (every NVLS channel and head one chunk) whose time the pipeline
        pays NVLS_STAGES - 1 times beyond its bandwidth; 0 for the other algorithms."""
        if self.family == "nvls":
            chunk = nvls_chunk(sizes, self.shape.heads)
        elif self.family == "nvls_tree":
            chunk = nvls_tree_chunk(sizes, self.shape.heads, self.shape.nodes)
        else:
            return np.zeros(len(sizes))
        return chunk * float(NVLS_CHANNELS * max(self.shape.heads, 1))

    def data_scale(self, sizes: np.ndarray) -> np.ndarray:
        """Bytes the network carries per byte of data, for each size."""
        s = np.atleast_1d(np.asarray(sizes, float))
        corr = tree_correction(self.proto, s) if self.family == "tree" and self.collective == "all-reduce" else 1.0
        return np.ones(len(s)) / (self.fraction * corr)


def protocol_terms(family: str, collective: str, proto: str, shape: NcclShape) -> ProtocolTerms:
    """The latency, bandwidth share and ceiling of `proto` on NCCL algorithm `family`.

    Parameters
    ----------
    family : {"ring", "tree", "nvls", "nvls_tree", "p2p"}
    collective : str
        Canonical collective name.
    proto : {"LL", "LL128", "Simple"}
    shape : NcclShape

    Returns
    -------
    ProtocolTerms
    """
    plateau = family == "ring" and proto == "Simple" and shape.nodes > 1 and collective == "all-reduce"
    return ProtocolTerms(family, collective, proto, protocol_latency(family, collective, proto, shape),
                         protocol_fraction(family, proto, shape), protocol_cap(family, collective, proto, shape),
                         plateau, shape)


def enabled_protocols(family: str, shape: NcclShape) -> tuple[str, ...]:
    """The protocols NCCL runs `family` in by default: NVLS only Simple; LL128 where the links
    inside a node are NVLink on Volta, Ampere or Hopper (tuning.cc's LL128 enable rule)."""
    if family in ("nvls", "nvls_tree", "p2p"):
        return ("Simple",)
    ll128 = shape.intra == "nvlink" and shape.sm in (70, 80, 90)
    return ("LL", "LL128", "Simple") if ll128 else ("LL", "Simple")


class ProtocolCost:
    """A network model's cost of a schedule with one NCCL protocol's terms (module doc).

    Parameters
    ----------
    base : CollectiveCost
        The network model's prepared schedule (`times`, `phase_times`).
    terms : ProtocolTerms
    """

    def __init__(self, base, terms: ProtocolTerms):
        self.base, self.terms = base, terms

    def overhead(self, sizes) -> np.ndarray:
        """What the protocol adds before the network's time for each size (s): its latency and, for
        NVLS, the pipeline's fill (two chunk waves priced on the network)."""
        s = np.atleast_1d(np.asarray(sizes, float))
        t = self.terms
        lat = t.latency_at(s)
        wave = t.fill_wave(s)
        if np.any(wave > 0):
            lat = lat + (NVLS_STAGES - 1) * np.asarray(self.base.times(np.minimum(wave, s)), float)
        return lat

    def ceiling_wait(self, sizes) -> np.ndarray:
        """How much longer than the network alone the protocol's ceiling makes each size (s)."""
        s = np.atleast_1d(np.asarray(sizes, float))
        if not math.isfinite(self.terms.cap):
            return np.zeros(len(s))
        net = np.asarray(self.base.times(s * self.terms.data_scale(s)), float)
        return np.maximum(0.0, s / self.terms.cap - net)

    def tail(self, sizes) -> np.ndarray:
        """What a flow simulation of the schedule (at the protocol's share) waits after its last byte
        to take this cost's time alone: the overhead and the ceiling's wait (s)."""
        return self.overhead(sizes) + self.ceiling_wait(sizes)

    def times(self, sizes) -> np.ndarray:
        """Seconds for each size (bytes): overhead + the network's time, no faster than the ceiling."""
        s = np.atleast_1d(np.asarray(sizes, float))
        net = np.asarray(self.base.times(s * self.terms.data_scale(s)), float)
        if math.isfinite(self.terms.cap):
            net = np.maximum(net, s / self.terms.cap)
        return np.where(s > 0, self.overhead(s) + net, 0.0)

    def phase_times(self, size: float) -> np.ndarray:
        """The network's phases at the protocol's data scale, scaled to this total (s)."""
        total = float(self.times([size])[0])
        t = self.terms
        phases = np.asarray(self.base.phase_times(float(size * t.data_scale(np.array([size]))[0])), float)
        s = phases.sum()
        return phases * (total / s) if s > 0 else np.array([total])


def check_proto(proto: str, family: str | None, algorithm: str, shape: NcclShape | None = None,
                where: str = "algorithm") -> None:
    """Refuse a protocol the algorithm cannot run: one line naming the option.

    Parameters
    ----------
    proto : str
        As chosen (`auto`, `none`, `LL`, `LL128`, `Simple`).
    family : str or None
        The algorithm's NCCL family.
    algorithm : str
        Its name, for the message.
    shape : NcclShape, optional
        For NCCL's enable rules (NVLS: Simple only; LL128: NVLink).
    where : str
        The field that named the options (`--option`, `network.algorithms.all-reduce`).
    """
    if proto in ("auto", "none"):
        return
    field = f"{where} proto" if where.startswith("--") else f"{where}.proto"
    if family is None:
        raise ConfigError(field, proto, f"{algorithm} is no NCCL algorithm; accepted: leave proto out")
    allowed = enabled_protocols(family, shape or NcclShape(2, 1))
    if proto not in allowed:
        raise ConfigError(field, proto, f"{algorithm} runs in: {', '.join(allowed)} (or auto, none)")


__all__ = ["FAMILIES", "NCCL_VERSION", "NcclShape", "PROTOCOLS", "PROTO_CHOICES", "ProtocolCost", "ProtocolTerms",
           "check_proto", "enabled_protocols", "nccl_shape", "protocol_cap", "protocol_fraction", "protocol_latency",
           "protocol_terms", "tree_correction"]
