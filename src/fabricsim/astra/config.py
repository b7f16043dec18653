"""Readers for ASTRA-sim 2.x configuration files (spec: docs/specs/astra-sim.md §1.3-1.6, §2.2-2.8).

- `read_network`: analytical network YAML (`topology`, `npus_count`, `bandwidth`, `latency`).
- `read_system`: system JSON (every key `Sys` and `CollectiveImplLookup` read, with ASTRA-sim's defaults).
- `read_comm_groups`: communicator-group JSON (`{"1": [0, 1, 2, 3], ...}`).
- `read_remote_memory`: analytical remote-memory JSON.
- `read_per_node_custom_implementation`: the YAML map `{et_node_id: et_prefix}`.

Values are kept in ASTRA-sim's own units (GB/s, ns, TFLOPS) and converted by properties, so that a
compatibility mode can repeat ASTRA-sim's arithmetic exactly (network "GB/s" is 2^30 bytes per 1e9 ns,
`local-mem-bw` is 1e9 bytes/s). Validation rejects, with one-line `ConfigError`s that start with the
file path and name the key, everything ASTRA-sim rejects and also what it would crash on or silently
misread (a missing `preferred-dataset-splits` divides by zero; a missing `scheduling-policy` is an
uninitialised enum; an implementation list shorter than the network leaves dimensions out).
Unknown keys do not fail (ASTRA-sim ignores them); they are listed in `unknown` so a caller can warn
(`run_astra` does, for the network, system and remote-memory files alike).

This module reads the network, communicator groups and remote memory; the system JSON is in
`config_system`, the shared vocabulary, errors and value checks in `config_common`. Every public name is
importable from here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..limits import check_limit
from .config_common import (  # noqa: F401  (the public surface)
    BLOCKS,
    COLLECTIVE_OPTIMIZATIONS,
    COLLECTIVES,
    GIB,
    IGNORED_KEYS,
    MEMORY_TYPES,
    SCHEDULING_POLICIES,
    AstraConfigError,
    _choice,
    _integer,
    _load_json,
    _load_yaml,
    _mapping,
    _missing,
    _number,
)
from .config_system import (  # noqa: F401  (the public surface)
    IMPL_ACCEPTED,
    AstraSystem,
    Impl,
    parse_impl,
    read_per_node_custom_implementation,
    read_system,
)

__all__ = [
    "BLOCKS",
    "COLLECTIVE_OPTIMIZATIONS",
    "COLLECTIVES",
    "IGNORED_KEYS",
    "IMPL_ACCEPTED",
    "MEMORY_TYPES",
    "SCHEDULING_POLICIES",
    "AstraConfigError",
    "AstraNetwork",
    "AstraRemoteMemory",
    "AstraSystem",
    "Impl",
    "parse_impl",
    "read_comm_groups",
    "read_network",
    "read_per_node_custom_implementation",
    "read_remote_memory",
    "read_system",
    "to_topology",
]


# ----------------------------------------------------------------------------------------- network


@dataclass(frozen=True)
class AstraNetwork:
    """An analytical-backend network: one entry per dimension, dimension 0 innermost (fastest).

    Attributes
    ----------
    topology : tuple of str
        "Ring", "FullyConnected" or "Switch" per dimension.
    npus_count : tuple of int
        NPUs per dimension (> 1 each).
    bandwidth_gbps : tuple of float
        As written: ASTRA-sim "GB/s" (GiB/s) per link per direction.
    latency_ns : tuple of float
        Per link traversal, ns (a Switch path is 2 links).
    path : str
        The file it was read from.
    unknown : tuple of str
        Keys ASTRA-sim's parser does not read.
    """

    topology: tuple[str, ...]  # "Ring" / "FullyConnected" / "Switch"
    npus_count: tuple[int, ...]  # NPUs per dimension (> 1 each)
    bandwidth_gbps: tuple[float, ...]  # as written: ASTRA-sim "GB/s" per link per direction
    latency_ns: tuple[float, ...]  # per link traversal (a Switch path is 2 links)
    path: str = ""
    unknown: tuple[str, ...] = ()  # keys ASTRA-sim's parser does not read

    @property
    def ndims(self) -> int:
        """Number of dimensions."""
        return len(self.topology)

    @property
    def npus(self) -> int:
        """NPUs in the network (the product of `npus_count`)."""
        return math.prod(self.npus_count)

    @property
    def bandwidth_bytes_per_ns(self) -> tuple[float, ...]:
        """Link bandwidth per dimension, bytes per ns: ASTRA-sim's conversion bw * 2^30 / 1e9 (its
        "GB/s" is GiB/s)."""
        return tuple(b * GIB / 1e9 for b in self.bandwidth_gbps)

    @property
    def bandwidth_bytes_per_s(self) -> tuple[float, ...]:
        """Link bandwidth per dimension, bytes/s (bw * 2^30)."""
        return tuple(b * GIB for b in self.bandwidth_gbps)

    @property
    def latency_s(self) -> tuple[float, ...]:
        """Link latency per dimension, s."""
        return tuple(lat / 1e9 for lat in self.latency_ns)


_NETWORK_KEYS = ("topology", "npus_count", "bandwidth", "latency")


def read_network(path: str | Path) -> AstraNetwork:
    """Read an analytical network YAML with the checks of ASTRA-sim's `NetworkParser` (lists present
    and of equal length, known building blocks, npus_count > 1, bandwidth > 0, latency >= 0), plus
    type checks it leaves to yaml-cpp exceptions or asserts (non-numeric values, empty lists).

    Parameters
    ----------
    path : str or Path
        The network YAML (`topology`, `npus_count`, `bandwidth` in GB/s, `latency` in ns).

    Returns
    -------
    AstraNetwork
        Values as written; an `AstraConfigError` (one line naming file and key) on bad input, and a
        ConfigError for more NPUs (the product of `npus_count`) than the `npus` limit.
    """
    data = _mapping(path, _load_yaml(path), "a mapping with keys topology, npus_count, bandwidth, latency")
    lists: dict[str, list] = {}
    for key in _NETWORK_KEYS:
        if key not in data:
            raise _missing(path, key, "required: a list with one entry per dimension")
        v = data[key]
        if not isinstance(v, list) or not v:
            raise AstraConfigError(path, key, v, "accepted: a non-empty list with one entry per dimension")
        lists[key] = v
    n = len(lists["topology"])
    for key in _NETWORK_KEYS[1:]:
        if len(lists[key]) != n:
            raise AstraConfigError(path, key, lists[key],
                                   f"accepted: one entry per dimension ({n}, as in topology)",
                                   problem=f"{len(lists[key])} entries")
    topo = []
    for i, b in enumerate(lists["topology"]):
        if not isinstance(b, str) or b not in BLOCKS:
            raise AstraConfigError(path, f"topology[{i}]", b,
                                   "accepted: " + " / ".join(BLOCKS) + " (case-sensitive)")
        topo.append(b)
    npus = [_integer(path, f"npus_count[{i}]", v, minimum=2, why="(NPUs in the dimension, more than 1)")
            for i, v in enumerate(lists["npus_count"])]
    check_limit("npus", math.prod(npus), "NPUs", f"{path}: npus_count", npus)  # before anything is sized by it
    bw = [_number(path, f"bandwidth[{i}]", v, strict=True, allow_text=True, unit="GB/s")
          for i, v in enumerate(lists["bandwidth"])]
    lat = [_number(path, f"latency[{i}]", v, allow_text=True, unit="ns") for i, v in enumerate(lists["latency"])]
    unknown = tuple(str(k) for k in data if k not in _NETWORK_KEYS)
    return AstraNetwork(tuple(topo), tuple(npus), tuple(bw), tuple(lat), str(path), unknown)


def to_topology(net: AstraNetwork, *, name: str | None = None):
    """The same network as a fabricsim `Topology` (a `stack`): Ring -> "ring", FullyConnected -> "fc",
    Switch -> "switch"; link bandwidth bw*2^30 bytes/s (ASTRA-sim's GB/s), latency ns/1e9 s.

    Parameters
    ----------
    net : AstraNetwork
        The network.
    name : str, optional
        The topology's name (default: "astra:" and the blocks, e.g. "astra:Ring8xSwitch4").

    Returns
    -------
    Topology
    """
    from ..topology.builders.stack import stack

    label = name or "astra:" + "x".join(f"{b}{k}" for b, k in zip(net.topology, net.npus_count, strict=True))
    return stack([BLOCKS[b] for b in net.topology], net.npus_count, list(net.bandwidth_bytes_per_s),
                 list(net.latency_s), name=label)


# ----------------------------------------------------------------------------------- comm groups


def read_comm_groups(path: str | Path, npus: int | AstraNetwork | None = None) -> dict[int, tuple[int, ...]]:
    """Communicator groups `{"1": [0, 1, 2, 3], ...}` -> {1: (0, 1, 2, 3), ...}. Keys are integer
    strings > 0 (0 is the world), members distinct ranks >= 0 (and < npus when given). The value
    `empty`, ASTRA-sim's default, means no groups; any other path must be a readable groups file
    (ASTRA-sim also skips paths that merely contain "empty": fabricsim reads them, so that a
    missing or broken file is an error, not silently no groups).

    Parameters
    ----------
    path : str or Path
        The communicator-groups JSON.
    npus : int or AstraNetwork, optional
        NPUs in the system, to check ranks against (None: not checked).

    Returns
    -------
    dict of int to tuple of int
        Group id -> member ranks, in the file's order.
    """
    if str(path) == "empty":
        return {}
    n = npus.npus if isinstance(npus, AstraNetwork) else npus
    data = _mapping(path, _load_json(path), 'a JSON object {"<group id>": [ranks]}')
    groups: dict[int, tuple[int, ...]] = {}
    for key, members in data.items():
        label = f"group {key!r}"
        if not re.fullmatch(r"[0-9]+", key) or int(key) <= 0:
            raise AstraConfigError(path, label, key, "accepted: group ids are integer strings > 0 (0 is the world)",
                                   problem="invalid group id")
        gid = int(key)
        if gid in groups:
            raise AstraConfigError(path, label, key, "accepted: each group id once", problem="group id given twice")
        if not isinstance(members, list) or not members:
            raise AstraConfigError(path, label, members, "accepted: a non-empty list of NPU ranks")
        seen: set[int] = set()
        for r in members:
            accepted = "accepted: NPU ranks 0.." + (f"{n - 1}" if n is not None else "N-1") + ", each once"
            if isinstance(r, bool) or not isinstance(r, int) or r < 0 or (n is not None and r >= n):
                raise AstraConfigError(path, label, r, accepted, problem=f"invalid rank {r!r}")
            if r in seen:
                raise AstraConfigError(path, label, r, accepted, problem=f"rank {r} listed twice")
            seen.add(r)
        groups[gid] = tuple(members)
    return groups


# --------------------------------------------------------------------------------- remote memory


@dataclass(frozen=True)
class AstraRemoteMemory:
    """Analytical remote memory (§1.6, §2.8). A load/store of S bytes takes
    `remote_mem_latency + S / remote_mem_bw` ns (GB/s = bytes/ns); PER_NODE serialises per node of
    `num_npus_per_node` NPUs, MEMORY_POOL globally, PER_NPU not at all; NO_MEMORY_EXPANSION aborts.

    Attributes
    ----------
    memory_type : str
        One of `MEMORY_TYPES`.
    remote_mem_latency : int
        ns per access.
    remote_mem_bw : float
        GB/s (1e9 bytes/s, i.e. bytes per ns).
    num_nodes, num_npus_per_node : int
        PER_NODE_MEMORY_EXPANSION only.
    path : str
        The file it was read from.
    unknown : tuple of str
        Keys ASTRA-sim does not read.
    """

    memory_type: str = "NO_MEMORY_EXPANSION"
    remote_mem_latency: int = 0  # ns
    remote_mem_bw: float = 0.0  # GB/s (1e9 bytes/s = bytes/ns)
    num_nodes: int = 0  # PER_NODE_MEMORY_EXPANSION only
    num_npus_per_node: int = 0  # PER_NODE_MEMORY_EXPANSION only
    path: str = ""
    unknown: tuple[str, ...] = ()

    def runtime_ns(self, tensor_bytes: int) -> int:
        """ASTRA-sim's time of one remote access: latency + floor(bytes / bw), in ns.

        Parameters
        ----------
        tensor_bytes : int
            Bytes loaded or stored.

        Returns
        -------
        int
            ns; an `AstraConfigError` with NO_MEMORY_EXPANSION (ASTRA-sim aborts).
        """
        if self.memory_type == "NO_MEMORY_EXPANSION":
            raise AstraConfigError(self.path, "memory-type", self.memory_type,
                                   "accepted: a memory expansion type for remote loads/stores "
                                   "(ASTRA-sim aborts on them with NO_MEMORY_EXPANSION)")
        return int(self.remote_mem_latency + int(tensor_bytes / (self.remote_mem_bw * 1e9) * 1e9))


_MEMORY_KEYS = ("memory-type", "remote-mem-latency", "remote-mem-bw", "num-nodes", "num-npus-per-node")


def read_remote_memory(path: str | Path, npus: int | AstraNetwork | None = None) -> AstraRemoteMemory:
    """Read a remote-memory JSON. Expansion types need `remote-mem-bw` > 0 (ASTRA-sim divides by it);
    PER_NODE needs `num-nodes` and `num-npus-per-node` > 0 (covering all NPUs when `npus` is given).

    Parameters
    ----------
    path : str or Path
        The remote-memory JSON.
    npus : int or AstraNetwork, optional
        NPUs in the system (None: PER_NODE coverage not checked).

    Returns
    -------
    AstraRemoteMemory
    """
    data = _mapping(path, _load_json(path), "a JSON object")
    mt = _choice(path, "memory-type", data["memory-type"], MEMORY_TYPES) if "memory-type" in data \
        else "NO_MEMORY_EXPANSION"
    kw: dict[str, Any] = {"memory_type": mt}
    if "remote-mem-latency" in data:
        kw["remote_mem_latency"] = _integer(path, "remote-mem-latency", data["remote-mem-latency"], why="(ns)")
    if "remote-mem-bw" in data:
        kw["remote_mem_bw"] = _number(path, "remote-mem-bw", data["remote-mem-bw"], unit="GB/s")
    for key in ("num-nodes", "num-npus-per-node"):
        if key in data:
            kw[key.replace("-", "_")] = _integer(path, key, data[key])
    if mt != "NO_MEMORY_EXPANSION" and kw.get("remote_mem_bw", 0.0) <= 0:
        raise AstraConfigError(path, "remote-mem-bw", data.get("remote-mem-bw"),
                               f"accepted: a number > 0 (GB/s) with {mt}",
                               problem="missing" if "remote-mem-bw" not in data else None)
    if mt == "PER_NODE_MEMORY_EXPANSION":
        for key in ("num-nodes", "num-npus-per-node"):
            if kw.get(key.replace("-", "_"), 0) <= 0:
                raise AstraConfigError(path, key, data.get(key), f"accepted: an integer >= 1 with {mt}",
                                       problem="missing" if key not in data else None)
        n = npus.npus if isinstance(npus, AstraNetwork) else npus
        if n is not None and kw["num_nodes"] * kw["num_npus_per_node"] < n:
            raise AstraConfigError(path, "num-nodes", data["num-nodes"],
                                   f"accepted: num-nodes x num-npus-per-node >= {n} NPUs")
    unknown = tuple(k for k in data if k not in _MEMORY_KEYS)
    return AstraRemoteMemory(**kw, path=str(path), unknown=unknown)
