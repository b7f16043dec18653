"""Small helpers shared by the algorithm files."""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError, UnsupportedGroupSize


ROOTED = ("broadcast", "reduce")
"""Collectives with a root rank."""
SPLIT = ("reduce-scatter", "all-gather")
"""Collectives that move one block per rank (the halves of an all-reduce)."""


def is_pow2(p: int) -> bool:
    """Whether `p` is a power of two (1 included)."""
    return p >= 1 and (p & (p - 1)) == 0


def log2_rounds(p: int) -> int:
    """ceil(log2 p), at least 1: the rounds of a doubling on p ranks, as the size estimates
    (`Algorithm.estimate`) count them."""
    return max(1, math.ceil(math.log2(max(p, 2))))


def dims_option(p: int, o: dict) -> tuple[int, ...]:
    """The `dims` option of typed options `o` as a tuple of ints; (p,) when absent or not a shape."""
    d = o.get("dims") or (p,)
    return tuple(int(x) for x in d) if isinstance(d, (tuple, list)) else (p,)


def require_group(algorithm: str, collective: str, p: int, *, pow2: bool = False, minimum: int = 2) -> None:
    """Raise a clear error when `p` ranks cannot run this algorithm."""
    if not isinstance(p, (int, np.integer)) or p < minimum:
        raise UnsupportedGroupSize(algorithm, collective, p, f"accepted: at least {minimum} ranks")
    if pow2 and not is_pow2(p):
        lo = 1 << (int(p).bit_length() - 1)
        raise UnsupportedGroupSize(
            algorithm, collective, p, f"accepted: a power of two (nearest: {lo} or {lo * 2})"
        )


def require_collective(algorithm: str, collective: str, supported: tuple[str, ...]) -> None:
    """Raise a ConfigError naming `supported` when `algorithm` does not serve `collective`."""
    if collective not in supported:
        raise ConfigError("collective", collective, f"{algorithm} supports: {', '.join(supported)}")


def require_root(root: int, p: int) -> int:
    """`root` as an int, checked to be a rank 0..p-1 (ConfigError otherwise)."""
    if not 0 <= int(root) < p:
        raise ConfigError("root", root, f"accepted: a rank 0..{p - 1}")
    return int(root)


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(name, value, "accepted: an integer >= 1")
    return int(value)


def cluster_group_reason(p: int, options: dict) -> str | None:
    """Why `p` ranks cannot be split into nodes of `options["gpus_per_node"]` GPUs, or None.

    Parameters
    ----------
    p : int
        Ranks in the group.
    options : dict
        Typed options; `gpus_per_node` absent or None means one node of p GPUs.

    Returns
    -------
    str or None
        None when p is a multiple of gpus_per_node; else the "accepted: ..." text.
    """
    gpus = options.get("gpus_per_node")
    if p < 2:
        return "accepted: at least 2 ranks"
    if gpus is not None and not isinstance(gpus, bool) and isinstance(gpus, (int, np.integer)) and gpus >= 1 and p % gpus:
        return f"accepted: a multiple of gpus_per_node={int(gpus)} ranks (whole nodes)"
    return None


def cluster_layout(algorithm: str, collective: str, p: int, gpus_per_node, nics_per_node) -> tuple[int, int, int]:
    """Checked node shape of an NCCL-style algorithm on p ranks (rank k*G + g is GPU g of node k).

    Parameters
    ----------
    algorithm, collective : str
        For error messages.
    p : int
        Ranks in the group, >= 2.
    gpus_per_node : int or None
        GPUs per node G (None: p, one node).
    nics_per_node : int or None
        NICs per node N, a divisor of G (None: 1); GPU g uses NIC g*N // G.

    Returns
    -------
    (int, int, int)
        (G, N, nodes); UnsupportedGroupSize when p is not a multiple of G, ConfigError naming
        `gpus_per_node` or `nics_per_node` for a bad value.
    """
    G = p if gpus_per_node is None else _positive_int("gpus_per_node", gpus_per_node)
    N = 1 if nics_per_node is None else _positive_int("nics_per_node", nics_per_node)
    reason = cluster_group_reason(p, {"gpus_per_node": G})
    if reason is not None:
        raise UnsupportedGroupSize(algorithm, collective, p, reason)
    if G % N:
        small = [d for d in range(1, int(G**0.5) + 1) if G % d == 0]
        divisors = sorted(set(small + [G // d for d in small]))
        raise ConfigError("nics_per_node", N, f"accepted: a divisor of gpus_per_node={G} ({', '.join(map(str, divisors))})")
    return G, N, p // G


def channel_count(channels, default: int) -> int:
    """Checked `channels` option of an NCCL-style algorithm.

    Parameters
    ----------
    channels : int or None
        What was given (None: `default`).
    default : int
        The algorithm's default for this node shape.

    Returns
    -------
    int
        The channel count; ConfigError naming `channels` unless an integer >= 1.
    """
    return default if channels is None else _positive_int("channels", channels)


def set_runs(member: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of contiguous ids in the sets that `member` describes.

    Parameters
    ----------
    member : bool array [S, n]
        Row s: which of the ids 0..n-1 set s holds.

    Returns
    -------
    (int64 array, int64 array, int64 array)
        (set, first id, ids in the run) per run, by set then id: the sets as range-form transfers
        (one per run), so "every block but the rank's own" is two runs, not p - 1 ids.
    """
    S, n = member.shape
    pad = np.zeros((S, n + 2), dtype=np.int8)
    pad[:, 1:-1] = member
    edge = np.diff(pad, axis=1)
    s_up, at_up = np.nonzero(edge == 1)
    _, at_down = np.nonzero(edge == -1)
    return s_up.astype(np.int64), at_up.astype(np.int64), (at_down - at_up).astype(np.int64)


def all_but_own_runs(p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of "every id of 0..p-1 but r", for each r: `set_runs` without the p x p matrix.

    Parameters
    ----------
    p : int
        Ids (and sets).

    Returns
    -------
    (int64 array, int64 array, int64 array)
        (r, first id, ids in the run): [0, r) and [r+1, p), the empty ones left out, by r.
    """
    r = np.arange(p, dtype=np.int64)
    who = np.concatenate([r[1:], r[:-1]])
    start = np.concatenate([np.zeros(p - 1, np.int64), r[:-1] + 1])
    count = np.concatenate([r[1:], p - 1 - r[:-1]])
    order = np.argsort(who * 2 + (start > 0), kind="stable")
    return who[order], start[order], count[order]
