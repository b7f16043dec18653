"""All-to-all in one phase per dimension (the hierarchical all-to-all of multi-dimensional
networks): in phase k every block moves along dimension k to the node whose coordinate k is
its destination's, so after D phases it has arrived. A node trades with the d_k - 1 others of
its line in phase k, each message carrying p / d_k blocks: D (d - 1) messages per node
instead of p - 1, each crossing one dimension (one hop on a torus line of size <= 3, a direct
link on a fully connected dimension).

Block b = i*p + j goes from rank i to rank j (as in every all-to-all schedule). After phase k a
block sits at the node whose coordinates 0..k are j's and k+1.. are i's.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError
from ._common import require_group
from .schedule import Schedule, make_step


def hierarchical_all_to_all(p: int, dims=None) -> Schedule:
    """The all-to-all of `p` ranks in one phase per dimension of `dims` (module doc).

    Parameters
    ----------
    p : int
        Ranks in the group, >= 2.
    dims : sequence of int, optional
        Sizes of the dimensions, dimension 0 fastest; their product must be `p` (default: one
        dimension of `p`, i.e. the direct all-to-all).

    Returns
    -------
    Schedule
        Unplaced, `p*p` blocks, one step per dimension larger than 1; ConfigError when the
        product of `dims` is not `p`.
    """
    require_group("hierarchical", "all-to-all", p)
    dims = tuple(int(d) for d in (dims or (p,)))
    if math.prod(dims) != p:
        raise ConfigError("dims", "x".join(map(str, dims)), f"accepted: sizes whose product is the group size {p}")
    strides = [math.prod(dims[:d]) for d in range(len(dims))]
    m = np.arange(p)
    steps = []
    for k, dk in enumerate(dims):
        if dk == 1:
            continue
        sk, sk1 = strides[k], strides[k] * dk
        ck = (m // sk) % dk
        i_low = np.arange(sk)  # i's coordinates below k: free
        j_high = np.arange(p // sk1) * sk1  # j's coordinates above k: free
        src, dst, blocks = [], [], []
        for t in range(dk):
            mm = m[ck != t]
            i = (mm - mm % sk)[:, None] + i_low[None, :]  # i: free below k, the holder's coordinates from k on
            j = (mm % sk + t * sk)[:, None] + j_high[None, :]  # j: the holder's below k, t at k, free above
            src.append(mm)
            dst.append(mm + (t - (mm // sk) % dk) * sk)
            blocks.append((i[:, :, None] * p + j[:, None, :]).reshape(len(mm), -1))
        steps.append(make_step(np.concatenate(src), np.concatenate(dst), np.concatenate(blocks), False))
    return Schedule("all-to-all", "hierarchical", p, p * p, tuple(steps), meta={"dims": dims})
