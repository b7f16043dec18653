"""Readers for ASTRA-sim 2.x configuration files (spec: shared/specs/astra-sim.md §1.3-1.6, §2.2-2.8).

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
Unknown keys do not fail (ASTRA-sim ignores them); they are listed in `unknown` so a caller can warn.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from ..errors import ConfigError

__all__ = [
    "BLOCKS",
    "COLLECTIVES",
    "MEMORY_TYPES",
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

#: network building blocks and the fabricsim `stack` kind each becomes
BLOCKS: dict[str, str] = {"Ring": "ring", "FullyConnected": "fc", "Switch": "switch"}
#: collectives with a `*-implementation` key, in ASTRA-sim's spelling
COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")
SCHEDULING_POLICIES = ("LIFO", "FIFO", "EXPLICIT")
COLLECTIVE_OPTIMIZATIONS = ("baseline", "localBWAware")
MEMORY_TYPES = ("NO_MEMORY_EXPANSION", "PER_NPU_MEMORY_EXPANSION", "PER_NODE_MEMORY_EXPANSION", "MEMORY_POOL")
#: keys present in shipped examples / docs that ASTRA-sim (HEAD) does not read
IGNORED_KEYS = ("boost-mode", "intra-dimension-scheduling", "inter-dimension-scheduling")

GIB = 2**30  # ASTRA-sim's network "GB" (bytes)
_MAX_VALUE_REPR = 80


# ----------------------------------------------------------------------------------------- errors


def _one_line(text: str) -> str:
    return re.sub(r"\s*[\r\n]+\s*", " ", text).strip()


def _short_repr(value: object) -> str:
    r = repr(value)
    return r if len(r) <= _MAX_VALUE_REPR else r[: _MAX_VALUE_REPR - 3] + "..."


class AstraConfigError(ConfigError):
    """A bad ASTRA-sim input file. One line: `<file>: <key>: <problem>; <what is accepted>`.

    `path` and `key` are kept as attributes; `field` is `"<file>: <key>"` as in `ConfigError`."""

    def __init__(self, path: str | Path, key: str | None, value: object, accepted: str, *,
                 problem: str | None = None):
        self.path = str(path)
        self.key = key
        self.field = f"{self.path}: {key}" if key else self.path
        self.value = value
        self.accepted = accepted
        what = problem if problem is not None else f"invalid value {_short_repr(value)}"
        ValueError.__init__(self, _one_line(f"{self.field}: {what}; {accepted}"))


def _missing(path, key: str, accepted: str) -> AstraConfigError:
    return AstraConfigError(path, key, None, accepted, problem="missing")


# ----------------------------------------------------------------------------------- file loading


def _read_text(path) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or type(e).__name__
        raise AstraConfigError(path, None, None, "accepted: a readable UTF-8 file",
                               problem=f"cannot read the file ({reason})") from None


def _no_duplicates(path):
    def hook(pairs):
        seen: dict[str, Any] = {}
        for k, v in pairs:
            if k in seen:
                raise AstraConfigError(path, k, v, "accepted: each key once (JSON keeps only the last)",
                                       problem="key given twice")
            seen[k] = v
        return seen
    return hook


def _reject_constant(path):
    def hook(name):
        raise AstraConfigError(path, None, name, "accepted: standard JSON (no NaN or Infinity)",
                               problem=f"non-standard number {name}")
    return hook


def _load_json(path) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates(path), parse_constant=_reject_constant(path))
    except json.JSONDecodeError as e:
        raise AstraConfigError(f"{path}:{e.lineno}", None, None, "accepted: valid JSON",
                               problem=f"JSON syntax error at line {e.lineno} column {e.colno}: {e.msg}") from None


def _load_yaml(path) -> Any:
    text = _read_text(path)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = mark.line + 1 if mark is not None else 0
        detail = getattr(e, "problem", None) or type(e).__name__
        where = f"line {line} column {mark.column + 1}" if mark is not None else "unknown line"
        raise AstraConfigError(f"{path}:{line}" if line else path, None, None, "accepted: valid YAML",
                               problem=f"YAML syntax error at {where}: {detail}") from None


def _mapping(path, data, what: str) -> dict:
    if not isinstance(data, dict):
        raise AstraConfigError(path, "top level", data if not isinstance(data, (list, dict)) else type(data).__name__,
                               f"accepted: {what}", problem=f"expected {what}, got {type(data).__name__}")
    return data


# ------------------------------------------------------------------------------- value checking

_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _number(path, key: str, v, *, minimum: float | None = 0.0, strict: bool = False,
            allow_text: bool = False, unit: str = "") -> float:
    """A finite real number (not a bool) >= minimum (> minimum if `strict`)."""
    bound = "" if minimum is None else (f" > {minimum:g}" if strict else f" >= {minimum:g}")
    accepted = f"accepted: a number{bound}{(' (' + unit + ')') if unit else ''}"
    x = v
    if allow_text and isinstance(v, str) and _NUMBER_TEXT.fullmatch(v.strip()):
        x = float(v)  # YAML 1.1 (PyYAML) reads `1e3` as text; yaml-cpp reads it as a number
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise AstraConfigError(path, key, v, accepted)
    if minimum is not None and (x <= minimum if strict else x < minimum):
        raise AstraConfigError(path, key, v, accepted)
    return float(x)


def _integer(path, key: str, v, *, minimum: int | None = 0, why: str = "") -> int:
    """An integer (an integral float such as 4.0 is accepted, as nlohmann/yaml-cpp convert it; 4.5 is
    not, because ASTRA-sim would silently truncate it)."""
    accepted = f"accepted: an integer{'' if minimum is None else f' >= {minimum}'}{(' ' + why) if why else ''}"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise AstraConfigError(path, key, v, accepted)
    if isinstance(v, float) and not (math.isfinite(v) and v.is_integer()):
        raise AstraConfigError(path, key, v, accepted)
    n = int(v)
    if minimum is not None and n < minimum:
        raise AstraConfigError(path, key, v, accepted)
    return n


def _flag(path, key: str, v) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    raise AstraConfigError(path, key, v, "accepted: 0 or 1 (or false/true)")


def _string(path, key: str, v, accepted: str = "accepted: a non-empty string") -> str:
    if not isinstance(v, str) or not v:
        raise AstraConfigError(path, key, v, accepted)
    return v


def _choice(path, key: str, v, choices) -> str:
    accepted = "accepted: " + " / ".join(choices) + " (case-sensitive)"
    if not isinstance(v, str) or v not in choices:
        raise AstraConfigError(path, key, v, accepted)
    return v


# ----------------------------------------------------------------------------------------- network


@dataclass(frozen=True)
class AstraNetwork:
    """An analytical-backend network: one entry per dimension, dimension 0 innermost (fastest)."""

    topology: tuple[str, ...]  # "Ring" / "FullyConnected" / "Switch"
    npus_count: tuple[int, ...]  # NPUs per dimension (> 1 each)
    bandwidth_gbps: tuple[float, ...]  # as written: ASTRA-sim "GB/s" per link per direction
    latency_ns: tuple[float, ...]  # per link traversal (a Switch path is 2 links)
    path: str = ""
    unknown: tuple[str, ...] = ()  # keys ASTRA-sim's parser does not read

    @property
    def ndims(self) -> int:
        return len(self.topology)

    @property
    def npus(self) -> int:
        return math.prod(self.npus_count)

    @property
    def bandwidth_bytes_per_ns(self) -> tuple[float, ...]:
        """ASTRA-sim's conversion: bw * 2^30 / 1e9 bytes per ns (its "GB/s" is GiB/s)."""
        return tuple(b * GIB / 1e9 for b in self.bandwidth_gbps)

    @property
    def bandwidth_bytes_per_s(self) -> tuple[float, ...]:
        return tuple(b * GIB for b in self.bandwidth_gbps)

    @property
    def latency_s(self) -> tuple[float, ...]:
        return tuple(lat / 1e9 for lat in self.latency_ns)


_NETWORK_KEYS = ("topology", "npus_count", "bandwidth", "latency")


def read_network(path: str | Path) -> AstraNetwork:
    """Read an analytical network YAML with the checks of ASTRA-sim's `NetworkParser` (lists present
    and of equal length, known building blocks, npus_count > 1, bandwidth > 0, latency >= 0), plus
    type checks it leaves to yaml-cpp exceptions or asserts (non-numeric values, empty lists)."""
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
    bw = [_number(path, f"bandwidth[{i}]", v, strict=True, allow_text=True, unit="GB/s")
          for i, v in enumerate(lists["bandwidth"])]
    lat = [_number(path, f"latency[{i}]", v, allow_text=True, unit="ns") for i, v in enumerate(lists["latency"])]
    unknown = tuple(str(k) for k in data if k not in _NETWORK_KEYS)
    return AstraNetwork(tuple(topo), tuple(npus), tuple(bw), tuple(lat), str(path), unknown)


def to_topology(net: AstraNetwork, *, name: str | None = None):
    """The same network as a fabricsim `Topology` (a `stack`): Ring -> "ring", FullyConnected -> "fc",
    Switch -> "switch"; link bandwidth bw*2^30 bytes/s (ASTRA-sim's GB/s), latency ns/1e9 s."""
    from ..topology.builders.stack import stack

    label = name or "astra:" + "x".join(f"{b}{k}" for b, k in zip(net.topology, net.npus_count, strict=True))
    return stack([BLOCKS[b] for b in net.topology], net.npus_count, list(net.bandwidth_bytes_per_s),
                 list(net.latency_s), name=label)


# ------------------------------------------------------------------------------ implementations

_BASE = {"ring": "ring", "direct": "direct", "halvingDoubling": "halvingDoubling",
         "doubleBinaryTree": "doubleBinaryTree"}
_FLAT = {"oneRing": "ring", "oneDirect": "direct", "oneHalvingDoubling": "halvingDoubling"}
_IMPL_RE = re.compile(r"(ring|halvingDoubling|doubleBinaryTree|oneRing|oneHalvingDoubling|direct|oneDirect)([0-9]*)")
IMPL_ACCEPTED = ("accepted: ring, direct, directN (window N >= 1), halvingDoubling, doubleBinaryTree, oneRing, "
                 "oneDirect, oneDirectN, oneHalvingDoubling (case-sensitive)")


@dataclass(frozen=True)
class Impl:
    """One native collective implementation: `name` in ring / direct / halvingDoubling / doubleBinaryTree,
    `window` the directN window (None: unlimited, ASTRA-sim's -1), `flat` for the one* variants that
    run one logical ring over all NPUs instead of one phase per dimension."""

    name: str
    window: int | None = None
    flat: bool = False

    def __str__(self) -> str:
        base = ("one" + self.name[0].upper() + self.name[1:]) if self.flat else self.name
        return base + (str(self.window) if self.window is not None else "")


def parse_impl(text: object) -> Impl:
    """`"direct4"` -> Impl("direct", 4, False); `"oneRing"` -> Impl("ring", None, True).
    Raises ValueError (TypeError for a non-string) on anything ASTRA-sim would not accept or would
    crash on (e.g. `directX`)."""
    if not isinstance(text, str):
        raise TypeError(f"not a string: {text!r}")
    m = _IMPL_RE.fullmatch(text)
    if not m:
        raise ValueError(f"unknown implementation {text!r}")
    word, digits = m.groups()
    if digits and word not in ("direct", "oneDirect"):
        raise ValueError(f"only direct/oneDirect take a window: {text!r}")
    window = int(digits) if digits else None
    if window is not None and window < 1:
        raise ValueError(f"window must be >= 1: {text!r}")
    if word in _FLAT:
        return Impl(_FLAT[word], window, True)
    return Impl(_BASE[word], window, False)


# ------------------------------------------------------------------------------------------ system


def _ck(collective: str) -> str:
    c = collective.replace("_", "-").lower()
    if c not in COLLECTIVES:
        raise KeyError(f"unknown collective {collective!r}; one of {', '.join(COLLECTIVES)}")
    return c


@dataclass(frozen=True)
class AstraSystem:
    """An ASTRA-sim system JSON, one field per key (key with '-' -> '_'), ASTRA-sim's default where the
    key is absent. Units as ASTRA-sim reads them: ns, GB/s (decimal, 1e9), TFLOPS."""

    scheduling_policy: str  # LIFO / FIFO / EXPLICIT (required)
    preferred_dataset_splits: int  # chunks per collective (required, >= 1)
    collective_optimization: str | None = None  # baseline / localBWAware; None only if no native impl is given
    active_chunks_per_dimension: int = 1
    endpoint_delay: int = 10  # ns per message (x --injection-scale)
    local_mem_bw: float = 0.0  # GB/s (1e9); 0 = reductions cost nothing
    all_reduce_implementation: tuple[Impl, ...] = ()
    reduce_scatter_implementation: tuple[Impl, ...] = ()
    all_gather_implementation: tuple[Impl, ...] = ()
    all_to_all_implementation: tuple[Impl, ...] = ()
    all_reduce_implementation_custom: str | None = None  # the one ET prefix
    reduce_scatter_implementation_custom: str | None = None
    all_gather_implementation_custom: str | None = None
    all_to_all_implementation_custom: str | None = None
    per_node_custom_implementation: str | None = None  # path of a YAML {et_node_id: et_prefix}
    model_shared_bus: bool = False
    L: float = 0.0  # LogGP, only with model_shared_bus
    o: float = 0.0
    g: float = 0.0
    G: float = 0.0
    local_reduction_delay: int = 1  # LogGP path only
    peak_perf: float = 0.0  # TFLOPS
    roofline_enabled: bool = False
    trace_enabled: bool = False
    replay_only: bool = False
    track_local_mem: bool = False
    local_mem_trace_filename: str = "local_mem_trace"
    boost_mode: Any = None  # raw value; ignored by ASTRA-sim
    intra_dimension_scheduling: Any = None  # raw value; ignored by ASTRA-sim at HEAD
    inter_dimension_scheduling: Any = None  # raw value; ignored by ASTRA-sim at HEAD
    path: str = ""
    ignored: tuple[str, ...] = ()  # keys present in the file that ASTRA-sim does not read
    unknown: tuple[str, ...] = ()  # keys nobody reads (typos?)
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def local_mem_bw_bytes_per_s(self) -> float:
        return self.local_mem_bw * 1e9

    @property
    def peak_perf_flops(self) -> float:
        return self.peak_perf * 1e12

    def implementation(self, collective: str) -> tuple[Impl, ...]:
        """Native per-dimension list for "all-reduce" / "all_reduce" / ... (empty if not given)."""
        return getattr(self, _ck(collective).replace("-", "_") + "_implementation")

    def custom_implementation(self, collective: str) -> str | None:
        return getattr(self, _ck(collective).replace("-", "_") + "_implementation_custom")


_SYSTEM_KEYS = (
    "scheduling-policy", "collective-optimization", "active-chunks-per-dimension", "preferred-dataset-splits",
    "endpoint-delay", "local-mem-bw",
    *(f"{c}-implementation" for c in COLLECTIVES), *(f"{c}-implementation-custom" for c in COLLECTIVES),
    "per-node-custom-implementation", "model-shared-bus", "L", "o", "g", "G", "local-reduction-delay",
    "peak-perf", "roofline-enabled", "trace-enabled", "replay-only", "track-local-mem",
    "local-mem-trace-filename", *IGNORED_KEYS,
)


def _impl_list(path, key: str, v, network: AstraNetwork | None) -> tuple[Impl, ...]:
    if not isinstance(v, list) or not v:
        raise AstraConfigError(path, key, v, "accepted: a non-empty list, one implementation per dimension")
    impls = []
    for i, text in enumerate(v):
        try:
            impls.append(parse_impl(text))
        except (ValueError, TypeError):
            raise AstraConfigError(path, f"{key}[{i}]", text, IMPL_ACCEPTED) from None
    if network is not None and len(impls) != network.ndims and not (len(impls) == 1 and impls[0].flat):
        raise AstraConfigError(
            path, key, v,
            f"accepted: {network.ndims} entries, one per dimension of {network.path or 'the network'} "
            f"(or a single flat one* entry)", problem=f"{len(impls)} entries for a {network.ndims}-D network")
    return tuple(impls)


def read_system(path: str | Path, network: AstraNetwork | None = None) -> AstraSystem:
    """Read a system JSON. With `network`, also check that every native implementation list has one
    entry per network dimension (ASTRA-sim leaves dimensions out, or reads past the list, otherwise)."""
    data = _mapping(path, _load_json(path), "a JSON object")
    kw: dict[str, Any] = {}

    if "scheduling-policy" not in data:
        raise _missing(path, "scheduling-policy",
                       "required (ASTRA-sim leaves it uninitialised): LIFO / FIFO / EXPLICIT")
    kw["scheduling_policy"] = _choice(path, "scheduling-policy", data["scheduling-policy"], SCHEDULING_POLICIES)

    if "preferred-dataset-splits" not in data:
        raise _missing(path, "preferred-dataset-splits",
                       "required (ASTRA-sim divides by zero without it): an integer >= 1 (chunks per collective)")
    kw["preferred_dataset_splits"] = _integer(path, "preferred-dataset-splits", data["preferred-dataset-splits"],
                                              minimum=1, why="(chunks per collective)")

    for c in COLLECTIVES:
        key = f"{c}-implementation"
        if key in data:
            kw[key.replace("-", "_")] = _impl_list(path, key, data[key], network)
        ckey = f"{c}-implementation-custom"
        if ckey in data:
            v = data[ckey]
            if not (isinstance(v, list) and len(v) == 1 and isinstance(v[0], str) and v[0]):
                raise AstraConfigError(path, ckey, v, "accepted: a list with exactly one Chakra ET prefix "
                                                      "(it covers all dimensions)")
            kw[ckey.replace("-", "_")] = v[0]
    has_native = any(f"{c}-implementation" in data for c in COLLECTIVES)

    if "collective-optimization" in data:
        kw["collective_optimization"] = _choice(path, "collective-optimization", data["collective-optimization"],
                                                COLLECTIVE_OPTIMIZATIONS)
    elif has_native:
        raise _missing(path, "collective-optimization",
                       "required with native implementations (ASTRA-sim leaves it uninitialised): "
                       "baseline / localBWAware")

    if "active-chunks-per-dimension" in data:
        kw["active_chunks_per_dimension"] = _integer(path, "active-chunks-per-dimension",
                                                     data["active-chunks-per-dimension"], minimum=1,
                                                     why="(streams in flight per queue)")
    if "endpoint-delay" in data:
        kw["endpoint_delay"] = _integer(path, "endpoint-delay", data["endpoint-delay"], minimum=0, why="(ns)")
    if "local-reduction-delay" in data:
        kw["local_reduction_delay"] = _integer(path, "local-reduction-delay", data["local-reduction-delay"],
                                               minimum=0)
    for key, unit in (("local-mem-bw", "GB/s"), ("peak-perf", "TFLOPS"), ("L", "ns"), ("o", "ns"), ("g", "ns"),
                      ("G", "ns per byte")):
        if key in data:
            kw[key.replace("-", "_")] = _number(path, key, data[key], unit=unit)
    for key in ("model-shared-bus", "roofline-enabled", "trace-enabled", "replay-only", "track-local-mem"):
        if key in data:
            kw[key.replace("-", "_")] = _flag(path, key, data[key])
    if "local-mem-trace-filename" in data:
        kw["local_mem_trace_filename"] = _string(path, "local-mem-trace-filename", data["local-mem-trace-filename"])
    if "per-node-custom-implementation" in data:
        kw["per_node_custom_implementation"] = _string(
            path, "per-node-custom-implementation", data["per-node-custom-implementation"],
            "accepted: the path of a YAML map {et_node_id: et_prefix}")

    if kw.get("roofline_enabled"):
        # roofline time = ops / min(local_mem_bw * intensity, peak_perf): a zero divides by zero
        if kw.get("peak_perf", 0.0) <= 0:
            raise AstraConfigError(path, "peak-perf", data.get("peak-perf"),
                                   "accepted: a number > 0 (TFLOPS) when roofline-enabled is 1",
                                   problem="missing" if "peak-perf" not in data else None)
        if kw.get("local_mem_bw", 0.0) <= 0:
            raise AstraConfigError(path, "local-mem-bw", data.get("local-mem-bw"),
                                   "accepted: a number > 0 (GB/s) when roofline-enabled is 1",
                                   problem="missing" if "local-mem-bw" not in data else None)

    ignored = tuple(k for k in data if k in IGNORED_KEYS)
    for k in ignored:
        kw[k.replace("-", "_")] = data[k]
    unknown = tuple(k for k in data if k not in _SYSTEM_KEYS)
    return AstraSystem(**kw, path=str(path), ignored=ignored, unknown=unknown, raw=MappingProxyType(dict(data)))


def read_per_node_custom_implementation(path: str | Path) -> dict[int, str]:
    """The YAML map of `per-node-custom-implementation`: ET node id (int) -> custom ET prefix."""
    data = _mapping(path, _load_yaml(path), "a mapping {et_node_id: et_prefix}")
    out: dict[int, str] = {}
    for k, v in data.items():
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise AstraConfigError(path, str(k), k, "accepted: integer ET node ids >= 0 as keys")
        out[k] = _string(path, str(k), v, "accepted: a Chakra ET prefix (string)")
    return out


# ----------------------------------------------------------------------------------- comm groups


def read_comm_groups(path: str | Path, npus: int | AstraNetwork | None = None) -> dict[int, tuple[int, ...]]:
    """Communicator groups `{"1": [0, 1, 2, 3], ...}` -> {1: (0, 1, 2, 3), ...}. Keys are integer
    strings > 0 (0 is the world), members distinct ranks >= 0 (and < npus when given). A path that
    contains "empty" means no groups, as in ASTRA-sim (its default is the literal `empty`)."""
    if "empty" in str(path):
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
    `num_npus_per_node` NPUs, MEMORY_POOL globally, PER_NPU not at all; NO_MEMORY_EXPANSION aborts."""

    memory_type: str = "NO_MEMORY_EXPANSION"
    remote_mem_latency: int = 0  # ns
    remote_mem_bw: float = 0.0  # GB/s (1e9 bytes/s = bytes/ns)
    num_nodes: int = 0  # PER_NODE_MEMORY_EXPANSION only
    num_npus_per_node: int = 0  # PER_NODE_MEMORY_EXPANSION only
    path: str = ""
    unknown: tuple[str, ...] = ()

    def runtime_ns(self, tensor_bytes: int) -> int:
        """ASTRA-sim's time of one remote access: latency + floor(bytes / bw), in ns."""
        if self.memory_type == "NO_MEMORY_EXPANSION":
            raise AstraConfigError(self.path, "memory-type", self.memory_type,
                                   "accepted: a memory expansion type for remote loads/stores "
                                   "(ASTRA-sim aborts on them with NO_MEMORY_EXPANSION)")
        return int(self.remote_mem_latency + int(tensor_bytes / (self.remote_mem_bw * 1e9) * 1e9))


_MEMORY_KEYS = ("memory-type", "remote-mem-latency", "remote-mem-bw", "num-nodes", "num-npus-per-node")


def read_remote_memory(path: str | Path, npus: int | AstraNetwork | None = None) -> AstraRemoteMemory:
    """Read a remote-memory JSON. Expansion types need `remote-mem-bw` > 0 (ASTRA-sim divides by it);
    PER_NODE needs `num-nodes` and `num-npus-per-node` > 0 (covering all NPUs when `npus` is given)."""
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
