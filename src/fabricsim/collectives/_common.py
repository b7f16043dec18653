"""Small helpers shared by the algorithm files."""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError, UnsupportedGroupSize


def is_pow2(p: int) -> bool:
    """Whether `p` is a power of two (1 included)."""
    return p >= 1 and (p & (p - 1)) == 0


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
