"""Two-level fat-tree (leaf/spine) with an oversubscription ratio.

`leaf` NPUs hang off each leaf switch with links of the NPU bandwidth; every leaf has one link
to every spine. The uplink capacity of a leaf is (NPUs per leaf x NPU bandwidth) / oversub,
split evenly over the spines, so `oversub=1` is full bisection bandwidth (1/1024 <= oversub <= 1024).
Node ids: NPUs, then leaves, then spines. Routing: up/down, the spine chosen from both ends so
that the leaf^2 pairs of NPUs of two leaves spread over all spines (`TreeRouter.spine_of`; a
destination-mod-spines choice would reach each leaf through only `leaf` spines and lose
bisection bandwidth with more spines than that). Hence at most leaf^2 spines: single-path
routing cannot spread two leaves' traffic over more, and adding spines up to there keeps the
bisection bandwidth (exactly for uniform traffic when spines divides leaf^2).
"""

from __future__ import annotations

import math

import numpy as np
from pydantic import Field, model_validator

from ...errors import ConfigError
from ..family import (
    Bool,
    Int,
    LinkValues,
    Params,
    Real,
    TopologyFamily,
    check_size,
    parse_flags,
    parse_int,
    single_n,
)
from ..graph import Topology, TreeRouter

MAX_OVERSUB = 1024.0
"""Largest oversubscription accepted (uplinks 1/1024 of the NPU links below a leaf); the smallest
is 1/1024 (uplinks 1024 times wider): every uplink rate stays finite and > 0."""


def fat_tree_size(n: int, leaf: int, spines: int | None = None) -> tuple[int, int]:
    """NPUs and directed links of a fat-tree, counted without building it.

    Parameters
    ----------
    n : int
        NPUs.
    leaf : int
        NPUs per leaf (dividing n).
    spines : int, optional
        Spines (default `leaf`; none with a single leaf).

    Returns
    -------
    (int, int)
        n and 2 n + 2 x leaves x spines (an up and a down link per NPU and per leaf-spine pair).

    Examples
    --------
    >>> fat_tree_size(16, 4, 2), fat_tree_size(8, 8, 4)
    ((16, 48), (8, 16))
    """
    leaves = n // leaf
    return n, 2 * n + (2 * leaves * (leaf if spines is None else spines) if leaves > 1 else 0)


def _spines_accepted(leaf: int) -> str:
    return (f"accepted: 1 to {leaf * leaf} spines (NPUs per leaf squared: single-path routing spreads the pairs of "
            "NPUs of two leaves over at most that many)")


_OVERSUB_ACCEPTED = (f"accepted: a number from 1/{MAX_OVERSUB:g} to {MAX_OVERSUB:g} (1: full bisection bandwidth, "
                     "2: uplinks half the NPU links below a leaf)")


def _oversub_ok(oversub: float) -> bool:
    return isinstance(oversub, (int, float, np.integer, np.floating)) and not isinstance(oversub, bool) \
        and math.isfinite(oversub) and 1 / MAX_OVERSUB <= oversub <= MAX_OVERSUB


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
        Spine switches, 1 to leaf^2 (default: `leaf`); every leaf has one link to every spine.
    oversub : float
        Oversubscription, 1/1024 to 1024: a leaf's uplinks carry leaf x bandwidth / oversub in all,
        split over the spines (1: full bisection bandwidth).
    reduce : bool
        The switches reduce and multicast (in-network collectives).

    Returns
    -------
    Topology
        Nodes: NPUs, leaves, spines; `leaf_of` = each NPU's leaf; up/down routing over a spine
        chosen from both ends (`TreeRouter.spine_of`). ConfigError for an oversub outside 1/1024..1024
        or beyond the `npus`/`links` limits (`fat_tree_size`, checked before allocating).

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
    if spines > leaf * leaf:
        raise ConfigError("spines", spines, _spines_accepted(leaf))
    if not _oversub_ok(oversub):  # nan/inf/huge would give nan or zero uplink bandwidth
        raise ConfigError("oversub", oversub, _OVERSUB_ACCEPTED)
    check_size(*fat_tree_size(n, leaf, spines), "topology", f"fat-tree:{n},leaf={leaf},spines={spines}")
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
        TreeRouter(leaf_of, up, down, leaf_up, spine_down, per_leaf=leaf),
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
        Spine switches, 1 to leaf^2; default `leaf`. Not with a single leaf (it has none).
    oversub : float
        Oversubscription ratio, 1/1024 to 1024 (uplinks: NPUs per leaf x bandwidth / oversub). Not
        with a single leaf (no uplinks).
    reduce : bool
        The switches reduce and multicast.
    """

    n: Int = Field(ge=2)
    leaf: Int | None = Field(default=None, ge=1)
    spines: Int | None = Field(default=None, ge=1)
    oversub: Real = 1.0
    reduce: Bool = False

    @model_validator(mode="after")
    def _check(self):
        if not _oversub_ok(self.oversub):
            raise ConfigError("oversub", self.oversub, _OVERSUB_ACCEPTED)
        leaf = self.leaf or min(self.n, 8)
        if self.n % leaf:
            raise ConfigError("leaf", leaf, f"accepted: a number of NPUs per leaf dividing n={self.n}")
        if self.n == leaf and (self.spines is not None or self.oversub != 1):  # one leaf: no uplinks to set
            k = "spines" if self.spines is not None else "oversub"
            raise ConfigError(k, getattr(self, k), f"a fat-tree of one leaf ({self.n} NPUs per leaf) has no spines; "
                                                   "accepted: leaf below n, or no spines/oversub")
        if self.spines is not None and self.spines > leaf * leaf:
            raise ConfigError("spines", self.spines, _spines_accepted(leaf))
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
    if not _oversub_ok(oversub):  # also rejects nan and inf
        raise ConfigError("topology", spec, "oversub=RATIO: " + _OVERSUB_ACCEPTED)
    if n % leaf:
        raise ConfigError("topology", spec, f"accepted: leaf=K where K divides {n}")
    if n == leaf and ({"spines", "oversub"} & set(f)):
        raise ConfigError("topology", spec, f"one leaf of {n} NPUs has no spines; accepted: leaf below n, or no "
                                            "spines/oversub")
    if spines is not None and spines > leaf * leaf:
        raise ConfigError("topology", spec, f"spines={spines}; " + _spines_accepted(leaf))
    return {"n": n, "leaf": leaf, "spines": spines, "oversub": oversub, "reduce": "reduce" in f}


def _build(p: FatTreeParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    return fat_tree(p.n, bandwidth.one(), latency.one(), leaf=p.leaf or min(p.n, 8), spines=p.spines,
                    oversub=p.oversub, reduce=p.reduce)


FAMILY = TopologyFamily("fat-tree", "fat-tree:64,leaf=8,spines=4,oversub=2",
                        "two-level leaf/spine fat-tree with oversubscription", FatTreeParams, _parse, _build,
                        ("fattree", "fat_tree"), size=lambda p: fat_tree_size(p.n, p.leaf or min(p.n, 8), p.spines))
