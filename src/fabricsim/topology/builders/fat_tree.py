"""Two-level fat-tree (leaf/spine) with an oversubscription ratio.

`leaf` NPUs hang off each leaf switch with links of the NPU bandwidth; every leaf has one link
to every spine. The uplink capacity of a leaf is (NPUs per leaf x NPU bandwidth) / oversub,
split evenly over the spines, so `oversub=1` is full bisection bandwidth.
Node ids: NPUs, then leaves, then spines. Routing: up/down, spine = destination mod spines.
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field, model_validator

from ...errors import ConfigError
from ..family import (
    LinkValues,
    Params,
    TopologyFamily,
    parse_flags,
    parse_int,
    single_n,
)
from ..graph import Topology, TreeRouter


def fat_tree(n: int, bandwidth: float, latency: float, *, leaf: int, spines: int | None = None,
             oversub: float = 1.0, reduce: bool = False) -> Topology:
    """A two-level leaf/spine fat-tree (module doc).

    Parameters
    ----------
    n : int
        NPUs.
    bandwidth : float
        NPU-leaf link bandwidth per direction, bytes/s.
    latency : float
        Per link, s.
    leaf : int
        NPUs per leaf switch; divides `n`. A single leaf has no spines.
    spines : int, optional
        Spine switches (default: `leaf`); every leaf has one link to every spine.
    oversub : float
        Oversubscription: a leaf's uplinks carry leaf x bandwidth / oversub in all, split over
        the spines (1: full bisection bandwidth).
    reduce : bool
        The switches reduce and multicast (in-network collectives).

    Returns
    -------
    Topology
        Nodes: NPUs, leaves, spines; `leaf_of` = each NPU's leaf; up/down routing, spine =
        destination mod spines (`TreeRouter`).

    Examples
    --------
    >>> t = fat_tree(16, 50e9, 1e-7, leaf=4, spines=2, oversub=4)
    >>> t.n_switches, t.n_links, float(t.link_bw[-1])   # 2 x 16 + 2 x 4 x 2 links; 4 x 50e9 / (4 x 2)
    (6, 48, 25000000000.0)
    """
    if leaf < 1 or n % leaf:
        raise ValueError(f"fat-tree: {n} NPUs do not split into leaves of {leaf}")
    n_leaves = n // leaf
    spines = (leaf if spines is None else int(spines)) if n_leaves > 1 else 0
    if n_leaves > 1 and spines < 1:
        raise ValueError("fat-tree: needs at least one spine")
    if not (np.isfinite(oversub) and oversub > 0):  # nan/inf would give nan/zero uplink bandwidth
        raise ValueError("fat-tree: oversubscription must be a finite number > 0")
    npu = np.arange(n)
    leaf_of = n + npu // leaf
    up_bw = leaf * bandwidth / (oversub * spines) if spines else 0.0
    src = [npu, leaf_of]
    dst = [leaf_of, npu]
    bws = [np.full(n, bandwidth), np.full(n, bandwidth)]
    up, down = np.arange(n), np.arange(n, 2 * n)
    leaf_up = spine_down = None
    if spines:
        lv = np.repeat(np.arange(n_leaves), spines)
        sp = np.tile(np.arange(spines), n_leaves)
        sp_node = n + n_leaves + sp
        base = 2 * n
        leaf_up = (base + np.arange(n_leaves * spines)).reshape(n_leaves, spines)
        spine_down = (base + n_leaves * spines + np.arange(n_leaves * spines)).reshape(n_leaves, spines).T.copy()
        src += [n + lv, sp_node]
        dst += [sp_node, n + lv]
        bws += [np.full(len(lv), up_bw)] * 2
    src_a, dst_a, bw_a = np.concatenate(src), np.concatenate(dst), np.concatenate(bws)
    n_sw = n_leaves + spines
    can_reduce = np.zeros(n + n_sw, bool)
    can_reduce[n:] = reduce
    return Topology(
        f"fat-tree:{n},leaf={leaf},spines={spines},oversub={oversub:g}",
        n, src_a, dst_a, bw_a, np.full(len(src_a), float(latency)),
        TreeRouter(leaf_of, up, down, leaf_up, spine_down),
        n_switches=n_sw, can_reduce=can_reduce, can_multicast=can_reduce.copy(),
        leaf_of=leaf_of,
    )


class FatTreeParams(Params):
    """fat-tree's parameters.

    Parameters
    ----------
    n : int
        NPUs, >= 2.
    leaf : int, optional
        NPUs per leaf switch, dividing `n`; default min(n, 8).
    spines : int, optional
        Spine switches; default `leaf`.
    oversub : float
        Oversubscription ratio, finite and > 0 (uplinks: NPUs per leaf x bandwidth / oversub).
    reduce : bool
        The switches reduce and multicast.
    """

    n: int = Field(ge=2)
    leaf: int | None = Field(default=None, ge=1)
    spines: int | None = Field(default=None, ge=1)
    oversub: float = 1.0
    reduce: bool = False

    @model_validator(mode="after")
    def _check(self):
        if not (math.isfinite(self.oversub) and self.oversub > 0):
            raise ConfigError("oversub", self.oversub, "accepted: a finite number > 0")
        if self.n % (self.leaf or min(self.n, 8)):
            raise ConfigError("leaf", self.leaf or min(self.n, 8), f"accepted: a number of NPUs per leaf dividing n={self.n}")
        return self


def _parse(spec: str, shape: str, opts: list[str]) -> dict:
    f = parse_flags(opts, {"leaf", "spines", "oversub", "reduce"}, spec, valued=frozenset({"leaf", "spines", "oversub"}))
    n = single_n(shape, spec)
    leaf = parse_int(f.get("leaf", str(min(n, 8))), spec)
    spines = parse_int(f["spines"], spec) if "spines" in f else None
    try:
        oversub = float(f.get("oversub", "1"))
    except ValueError:
        oversub = -1.0
    if not (math.isfinite(oversub) and oversub > 0):  # also rejects nan and inf
        raise ConfigError("topology", spec, "accepted: oversub=RATIO with RATIO a finite number > 0")
    if n % leaf:
        raise ConfigError("topology", spec, f"accepted: leaf=K where K divides {n}")
    return {"n": n, "leaf": leaf, "spines": spines, "oversub": oversub, "reduce": "reduce" in f}


def _build(p: FatTreeParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    return fat_tree(p.n, bandwidth.one(), latency.one(), leaf=p.leaf or min(p.n, 8), spines=p.spines,
                    oversub=p.oversub, reduce=p.reduce)


FAMILY = TopologyFamily("fat-tree", "fat-tree:64,leaf=8,spines=4,oversub=2",
                        "two-level leaf/spine fat-tree with oversubscription", FatTreeParams, _parse, _build,
                        ("fattree", "fat_tree"))
