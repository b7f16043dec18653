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

from ..errors import ConfigError
from ._common import require_group
from ..ir import FullMeshStep
from ..ir import LineMeshStep
from ..ir import Schedule


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
        Unplaced, `p*p` blocks, one step per dimension larger than 1 (a `LineMeshStep`, or a
        `FullMeshStep` for a dimension of all `p`); ConfigError when the product of `dims` is not `p`.
    """
    require_group("hierarchical", "all-to-all", p)
    dims = tuple(int(d) for d in (dims or (p,)))
    if math.prod(dims) != p:
        raise ConfigError("dims", "x".join(map(str, dims)), f"accepted: sizes whose product is the group size {p}")
    # each phase the lines of a grid, its blocks stated by rule (ir/mesh.py); a dimension that is the whole
    # group, a full mesh (the same transfers in the same order, destination-major)
    steps = tuple(FullMeshStep(p, "pair", False, by_dst=True) if dk == p else LineMeshStep(dims, k)
                  for k, dk in enumerate(dims) if dk > 1)
    return Schedule("all-to-all", "hierarchical", p, p * p, steps, meta={"dims": dims})
