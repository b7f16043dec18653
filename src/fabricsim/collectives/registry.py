"""The algorithm registry: one line per algorithm.

An algorithm is a pure function `build(collective, p, **options) -> Schedule` on ranks 0..p-1
of a group; `root=` is passed for broadcast and reduce only. `supports(collective, p)` returns None when it can serve that many
ranks, else the reason (what is accepted). Topology-dependent inputs (the dimensions of a
multi-dimensional network for `hierarchical`) come in as options; `collectives.api` derives
them from the topology.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..errors import ConfigError
from ._common import is_pow2
from .bucket import bucket
from .direct import direct
from .double_binary_tree import double_binary_tree
from .halving_doubling import halving_doubling
from .hamiltonian_rings import hamiltonian_rings
from .hierarchical import hierarchical
from .hierarchical_all_to_all import hierarchical_all_to_all
from .in_network import in_network
from .in_network_tree import in_network_tree
from .recursive_doubling import recursive_doubling
from .ring import ring
from .schedule import Schedule
from .swing import swing, torus_recursive_doubling


@dataclass(frozen=True)
class Algorithm:
    name: str
    build: Callable[..., Schedule]
    collectives: tuple[str, ...]
    group_sizes: str  # human-readable: which p it serves
    summary: str
    pow2_only: tuple[str, ...] = ()  # collectives that need a power-of-two group
    options: dict[str, str] = field(default_factory=dict)  # option -> what it does
    needs: tuple[str, ...] = ()  # topology facts: "dims" (multi-dim shape), "reducing-switch"
    check: Callable[[str, int, dict], str | None] | None = None  # limits that depend on options

    def supports(self, collective: str, p: int, options: dict | None = None) -> str | None:
        if collective not in self.collectives:
            return f"{self.name} supports: {', '.join(self.collectives)}"
        if p < 2:
            return "accepted: at least 2 ranks"
        if self.check is not None:
            return self.check(collective, p, options or {})
        if collective in self.pow2_only and not is_pow2(p):
            return "accepted: a power of two"
        return None


ALGORITHMS: dict[str, Algorithm] = {}


def register(alg: Algorithm) -> Algorithm:
    ALGORITHMS[alg.name] = alg
    return alg


register(Algorithm(
    "ring", ring, ("all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce"),
    "any p >= 2", "ring: p-1 steps of size/p per phase; bidirectional = two half rings",
    options={"bidirectional": "two half-size rings in opposite directions", "chunks": "pipeline chunks for broadcast/reduce (default p)"},
))


def get_algorithm(name: str) -> Algorithm:
    key = name.strip().lower().replace("-", "_")
    aliases = {"rabenseifner": "halving_doubling", "halvingdoubling": "halving_doubling",
               "recursive_halving_doubling": "halving_doubling", "rd": "recursive_doubling",
               "doublebinarytree": "double_binary_tree", "dbt": "double_binary_tree",
               "innetwork": "in_network", "in_network_reduction": "in_network", "bidirectional_ring": "ring_bidirectional"}
    key = aliases.get(key, key)
    if key not in ALGORITHMS:
        raise ConfigError("algorithm", name, f"accepted: {', '.join(sorted(ALGORITHMS))}")
    return ALGORITHMS[key]


# ---- algorithms registered by their own files (one line each) ------------------------------
# [direct / recursive_doubling / halving_doubling]
register(Algorithm(
    "direct", direct, ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast", "reduce"),
    "any p >= 2", "direct: one full-mesh step per phase, every rank to every other rank at once",
))
register(Algorithm(
    "recursive_doubling", recursive_doubling, ("all-reduce", "all-gather", "broadcast", "reduce"),
    "any p >= 2 (all-gather: powers of two)",
    "recursive doubling: log2 p whole-buffer exchanges (fold/unfold off powers of two); binomial tree for broadcast/reduce",
    pow2_only=("all-gather",),
))
register(Algorithm(
    "halving_doubling", halving_doubling, ("all-reduce", "reduce-scatter", "all-gather"),
    "all-reduce: any p >= 2 (fold/unfold off powers of two); reduce-scatter, all-gather: powers of two",
    "Rabenseifner: recursive-halving reduce-scatter + recursive-doubling all-gather, 2 log2 p steps",
    pow2_only=("reduce-scatter", "all-gather"),
))

# [double_binary_tree / hierarchical / in_network]
register(Algorithm(
    "double_binary_tree", double_binary_tree, ("all-reduce",),
    "any p >= 2", "NCCL double binary tree: two complementary trees, half the buffer each, pipelined reduce up + broadcast down",
    options={"chunks": "pipeline chunks per tree (default 8)"},
))
def _hierarchical(collective: str, p: int, **options) -> Schedule:
    """The per-dimension algorithms: all-to-all has its own phase structure."""
    if collective == "all-to-all":
        extra = set(options) - {"dims"}
        if extra:
            raise ConfigError("option", sorted(extra)[0], "the hierarchical all-to-all accepts: dims")
        return hierarchical_all_to_all(p, options.get("dims"))
    return hierarchical(collective, p, **options)


register(Algorithm(
    "hierarchical", _hierarchical, ("all-reduce", "reduce-scatter", "all-gather", "all-to-all"),
    "any p >= 2 (prod(dims) == p; inner halving_doubling: power-of-two dimensions)",
    "multi-dim: reduce-scatter up the dimensions, all-gather back down; all-to-all one dimension per phase",
    options={"dims": "group shape, dimension 0 fastest (default: the topology's dims, else (p,))",
             "order": "rs-ag (= localBWAware, default) or baseline (a full all-reduce per dimension)",
             "inner": "1-D algorithm per dimension: ring (default), direct, halving_doubling, or a tuple"},
    needs=("dims",),
))
register(Algorithm(
    "in_network", in_network, ("all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce"),
    "any p >= 2 (one switch that reduces and multicasts, linked to every rank)",
    "in-network (SHARP-like): up to a reducing switch and multicast down, size bytes each way per rank",
    options={"chunks": "pipeline pieces: ranks send piece t up while the switch sends piece t-1 down (default 1)"},
    needs=("reducing-switch",),
))
register(Algorithm(
    "in_network_tree", in_network_tree, ("all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce"),
    "any p >= 2 (each rank on a reducing leaf switch; leaves under one reducing root switch)",
    "in-network up and down a switch tree (FRED): reduce into the leaves and the root, multicast down; size bytes each way per rank",
    needs=("switch-tree",),
))


# [swing / torus_recursive_doubling]
def _swing_check(collective: str, p: int, options: dict) -> str | None:
    if str(options.get("mode", "bandwidth")).lower() in ("latency", "l") and collective != "all-reduce":
        return "the latency-optimal mode serves all-reduce only (accepted: mode=bandwidth)"
    return None


def _trd_check(collective: str, p: int, options: dict) -> str | None:
    latency = str(options.get("mode", "bandwidth")).lower() in ("latency", "l")
    if latency:
        return None if collective == "all-reduce" else "the latency-optimal mode serves all-reduce only"
    dims = options.get("dims") or (p,)
    if not all(is_pow2(int(d)) for d in dims):
        return "accepted: power-of-two dimensions in bandwidth mode (mode=latency folds any size)"
    return None


register(Algorithm(
    "swing", swing, ("all-reduce", "reduce-scatter", "all-gather"),
    "any p >= 2 (1-D); even or power-of-two torus dimensions",
    "Swing (NSDI'24): short-cutting pairwise exchanges, all 2D ports (bandwidth or latency mode)",
    options={"mode": "bandwidth (Swing-B, default) or latency (Swing-L)", "ports": "all (default) or single",
             "dims": "torus shape, dimension 0 fastest (default: the topology's)"},
    needs=("dims",), check=_swing_check,
))
register(Algorithm(
    "torus_recursive_doubling", torus_recursive_doubling, ("all-reduce", "reduce-scatter", "all-gather"),
    "bandwidth: power-of-two dims; latency: any p >= 2 (fold)",
    "recursive doubling on a torus, dimensions alternating: Rabenseifner (bandwidth) or whole-vector (latency); mirrored = multiport",
    pow2_only=("all-reduce", "reduce-scatter", "all-gather"),
    options={"mode": "bandwidth (default) or latency", "mirrored": "the paper's multiport variant (D plain + D mirrored)",
             "dims": "torus shape (default: the topology's)"},
    needs=("dims",), check=_trd_check,
))

# [bucket / hamiltonian_rings: torus baselines of the Swing paper]
register(Algorithm(
    "bucket", bucket, ("all-reduce", "reduce-scatter", "all-gather"),
    "any p >= 2 (prod(dims) == p)",
    "bucket: 2D parts (start dimension x direction), synchronized ring reduce-scatter phases over the torus dimensions, all-gather back",
    options={"dims": "torus shape, dimension 0 fastest (default: the topology's dims, else (p,) = a bidirectional ring)"},
    needs=("dims",),
))
register(Algorithm(
    "hamiltonian_rings", hamiltonian_rings, ("all-reduce", "reduce-scatter", "all-gather"),
    "any p >= 2 as a 1-D torus; 2-D: r x c with r = k*c and gcd(r, c-1) = 1",
    "rings on two edge-disjoint Hamiltonian cycles of a 2-D torus, both directions, size/4 each (1-D: bidirectional ring)",
    options={"dims": "torus shape, dimension 0 fastest (default: the topology's dims, else (p,) = a bidirectional ring)"},
    needs=("dims",),
))
