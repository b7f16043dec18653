"""ASTRA-sim system JSON: collective implementations (`ring`, `directN`, ...) and every key `Sys`
and `CollectiveImplLookup` read, with ASTRA-sim's defaults and its own units."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .config_common import (
    COLLECTIVE_OPTIMIZATIONS,
    COLLECTIVES,
    IGNORED_KEYS,
    SCHEDULING_POLICIES,
    AstraConfigError,
    _choice,
    _flag,
    _integer,
    _load_json,
    _load_yaml,
    _mapping,
    _missing,
    _number,
    _string,
)

if TYPE_CHECKING:
    from .config import AstraNetwork


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
    run one logical ring over all NPUs instead of one phase per dimension.

    Attributes
    ----------
    name : str
        "ring", "direct", "halvingDoubling" or "doubleBinaryTree".
    window : int or None
        directN's window: messages in flight at once (None: all).
    flat : bool
        A one* variant.
    """

    name: str
    window: int | None = None
    flat: bool = False

    def __str__(self) -> str:
        base = ("one" + self.name[0].upper() + self.name[1:]) if self.flat else self.name
        return base + (str(self.window) if self.window is not None else "")


def parse_impl(text: object) -> Impl:
    """`"direct4"` -> Impl("direct", 4, False); `"oneRing"` -> Impl("ring", None, True).
    Raises ValueError (TypeError for a non-string) on anything ASTRA-sim would not accept or would
    crash on (e.g. `directX`).

    Parameters
    ----------
    text : str
        An implementation as ASTRA-sim spells it (`ring`, `direct4`, `oneHalvingDoubling`, ...).

    Returns
    -------
    Impl
    """
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
    key is absent. Units as ASTRA-sim reads them: ns, GB/s (decimal, 1e9), TFLOPS.

    Attributes
    ----------
    scheduling_policy : str
        "LIFO", "FIFO" or "EXPLICIT" (required).
    preferred_dataset_splits : int
        Chunks per collective, >= 1 (required).
    collective_optimization : str or None
        "baseline" or "localBWAware"; None only when no native implementation is given.
    active_chunks_per_dimension : int
        Streams a dimension's queue runs at once.
    endpoint_delay : int
        ns per message over the NPU<->memory bus, each way (x --injection-scale).
    local_mem_bw : float
        GB/s (1e9 bytes/s); 0 makes reductions free.
    all_reduce_implementation : tuple of Impl
        Native implementation per dimension (or one flat one*); empty when not given. Likewise
        `reduce_scatter_implementation`, `all_gather_implementation`, `all_to_all_implementation`.
    all_reduce_implementation_custom : str or None
        The one Chakra ET prefix of a custom all-reduce. Likewise `reduce_scatter_...`,
        `all_gather_...`, `all_to_all_implementation_custom`.
    per_node_custom_implementation : str or None
        Path of a YAML map {et_node_id: et_prefix}.
    model_shared_bus : bool
        ASTRA-sim's LogGP shared-bus model.
    L, o, g : float
        LogGP latency, overhead and gap, ns (only with `model_shared_bus`).
    G : float
        LogGP gap per byte, ns per byte (only with `model_shared_bus`).
    local_reduction_delay : int
        ns per local reduction (LogGP path only).
    peak_perf : float
        TFLOPS (1e12 FLOP/s), for the roofline.
    roofline_enabled, trace_enabled, replay_only, track_local_mem : bool
        ASTRA-sim's flags of the same names.
    local_mem_trace_filename : str
        File name of the local-memory trace.
    boost_mode, intra_dimension_scheduling, inter_dimension_scheduling : object
        Raw values of keys ASTRA-sim does not read.
    path : str
        The file it was read from.
    ignored : tuple of str
        Keys present in the file that ASTRA-sim does not read.
    unknown : tuple of str
        Keys nobody reads (typos?).
    raw : mapping
        The file as read (read-only).
    """

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
        """`local-mem-bw` in bytes/s (x 1e9)."""
        return self.local_mem_bw * 1e9

    @property
    def peak_perf_flops(self) -> float:
        """`peak-perf` in FLOP/s (x 1e12)."""
        return self.peak_perf * 1e12

    def implementation(self, collective: str) -> tuple[Impl, ...]:
        """The native per-dimension implementation list of a collective (empty if not given).

        Parameters
        ----------
        collective : str
            "all-reduce" / "all_reduce" / "reduce-scatter" / ... (KeyError for anything else).

        Returns
        -------
        tuple of Impl
        """
        return getattr(self, _ck(collective).replace("-", "_") + "_implementation")

    def custom_implementation(self, collective: str) -> str | None:
        """The Chakra ET prefix of a collective's `*-implementation-custom`.

        Parameters
        ----------
        collective : str
            "all-reduce" / "all_reduce" / "reduce-scatter" / ... (KeyError for anything else).

        Returns
        -------
        str or None
            The prefix, None if the key is not given.
        """
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
    entry per network dimension (ASTRA-sim leaves dimensions out, or reads past the list, otherwise).

    Parameters
    ----------
    path : str or Path
        The system JSON.
    network : AstraNetwork, optional
        The network it runs on (None: implementation lists are not checked against it).

    Returns
    -------
    AstraSystem
        Every key ASTRA-sim reads, its default where absent, in its units (ns, GB/s, TFLOPS); an
        `AstraConfigError` (one line naming file and key) on what ASTRA-sim rejects or crashes on.
    """
    data = _mapping(path, _load_json(path), "a JSON object")
    kw: dict[str, Any] = {}
    _read_required(path, data, kw)
    _read_implementations(path, data, network, kw)
    _read_settings(path, data, kw)
    _check_roofline(path, data, kw)
    ignored = tuple(k for k in data if k in IGNORED_KEYS)
    for k in ignored:
        kw[k.replace("-", "_")] = data[k]
    unknown = tuple(k for k in data if k not in _SYSTEM_KEYS)
    return AstraSystem(**kw, path=str(path), ignored=ignored, unknown=unknown, raw=MappingProxyType(dict(data)))


def _read_required(path, data: dict, kw: dict[str, Any]) -> None:
    if "scheduling-policy" not in data:
        raise _missing(path, "scheduling-policy",
                       "required (ASTRA-sim leaves it uninitialised): LIFO / FIFO / EXPLICIT")
    kw["scheduling_policy"] = _choice(path, "scheduling-policy", data["scheduling-policy"], SCHEDULING_POLICIES)

    if "preferred-dataset-splits" not in data:
        raise _missing(path, "preferred-dataset-splits",
                       "required (ASTRA-sim divides by zero without it): an integer >= 1 (chunks per collective)")
    kw["preferred_dataset_splits"] = _integer(path, "preferred-dataset-splits", data["preferred-dataset-splits"],
                                              minimum=1, why="(chunks per collective)")


def _read_implementations(path, data: dict, network: AstraNetwork | None, kw: dict[str, Any]) -> None:
    """The `*-implementation` and `*-implementation-custom` keys, and `collective-optimization`."""
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


def _read_settings(path, data: dict, kw: dict[str, Any]) -> None:
    """The optional scalar keys: chunks in flight, delays, bandwidths, LogGP, flags, file names."""
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


def _check_roofline(path, data: dict, kw: dict[str, Any]) -> None:
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


def read_per_node_custom_implementation(path: str | Path) -> dict[int, str]:
    """The YAML map of `per-node-custom-implementation`: ET node id (int) -> custom ET prefix.

    Parameters
    ----------
    path : str or Path
        The YAML file.

    Returns
    -------
    dict of int to str
    """
    data = _mapping(path, _load_yaml(path), "a mapping {et_node_id: et_prefix}")
    out: dict[int, str] = {}
    for k, v in data.items():
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise AstraConfigError(path, str(k), k, "accepted: integer ET node ids >= 0 as keys")
        out[k] = _string(path, str(k), v, "accepted: a Chakra ET prefix (string)")
    return out
