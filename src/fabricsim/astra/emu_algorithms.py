"""ASTRA-sim emulation, part 3: the collective algorithms' message state machines, and which one
runs a phase (`make_algorithm`).

The algorithms live in their own modules and are re-exported here:
- `emu_base`: the `Algorithm` base and `RingLine`;
- `emu_ring`: ring, direct and halvingDoubling;
- `emu_tree`: doubleBinaryTree (`BinaryTree`, `DoubleBinaryTree`);
- `emu_custom`: collectives given as Chakra graphs (`CustomAlgorithm`, `DepGraph`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .config import Impl
from .emu_base import Algorithm, RingLine
from .emu_custom import CustomAlgorithm, DepGraph
from .emu_network import ALL_REDUCE, CUSTOM
from .emu_ring import Direct, HalvingDoubling, Ring
from .emu_tree import BinaryTree, DoubleBinaryTree

if TYPE_CHECKING:
    from .emu_system import Sys

__all__ = [
    "Algorithm",
    "BinaryTree",
    "CustomAlgorithm",
    "DepGraph",
    "Direct",
    "DoubleBinaryTree",
    "HalvingDoubling",
    "Ring",
    "RingLine",
    "make_algorithm",
]


def make_algorithm(sys: Sys, coll: str, dim: int, dims: tuple[int, ...], impl: Impl, data_size: int, flat: bool,
                   members: tuple[int, ...] | None = None) -> Algorithm:
    """The state machine of one phase of one stream on NPU `sys.id`.

    Parameters
    ----------
    sys : Sys
        The NPU's system layer (doubleBinaryTree counts its chunks there to alternate trees).
    coll : str
        The phase's collective: "all-reduce", "reduce-scatter", "all-gather" or "all-to-all".
    dim : int
        The phase's dimension (0 for a flat phase).
    dims : tuple of int
        NPUs per dimension the phase sees (one entry, all NPUs or the group, when `flat`).
    impl : Impl
        The implementation named for this dimension, or `CUSTOM` for a Chakra-graph collective.
    data_size : int
        Bytes the stream holds when the phase starts.
    flat : bool
        One logical line over all NPUs (or the group) instead of one dimension's line.
    members : tuple of int, optional
        Communicator group members in ring order (None: all NPUs).

    Returns
    -------
    Algorithm
        Ring, Direct, HalvingDoubling, DoubleBinaryTree or CustomAlgorithm; a ConfigError for an
        implementation that cannot serve `coll`.
    """
    npu = sys.id
    stride = 1 if flat else math.prod(dims[:dim])
    size = dims[dim]
    name = impl.name
    if impl is CUSTOM:
        pos = members.index(npu) if members is not None else npu
        return CustomAlgorithm(coll, npu, sys.world.sys_spec.custom[coll][pos], members, data_size)
    line = RingLine(npu, size, stride, members)
    if name in ("ring", "oneRing"):
        return Ring(coll, npu, line, data_size)
    if name in ("direct", "oneDirect"):
        return Direct(coll, npu, line, data_size, impl.window)
    if name in ("halvingDoubling", "oneHalvingDoubling"):
        return HalvingDoubling(coll, npu, line, data_size)
    if name == "doubleBinaryTree":
        if coll != ALL_REDUCE:
            raise ConfigError("implementation", "doubleBinaryTree", "ASTRA-sim's doubleBinaryTree serves all-reduce only")
        last = dim == len(dims) - 1
        start = npu % stride if last else (npu - npu % (stride * size)) + npu % stride
        key = (coll, dim)
        k = sys.dbt_counter.get(key, 0)
        sys.dbt_counter[key] = k + 1
        cache = sys.world.trees
        tkey = (size, start, stride, k % 2 == 0)
        if tkey not in cache:
            cache[tkey] = BinaryTree(size, start, stride, root_max=k % 2 == 0)
        return DoubleBinaryTree(npu, cache[tkey], data_size)
    raise ConfigError("implementation", name, "accepted: ring, direct, directN, halvingDoubling, doubleBinaryTree, oneRing, oneDirect, oneHalvingDoubling")
