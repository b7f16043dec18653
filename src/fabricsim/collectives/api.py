"""Build a collective's schedule for a group of NPUs on a topology.

This is where topology facts meet pure algorithms, through what each algorithm declares
(`collectives.algorithm.Algorithm`): the group (default: every NPU in rank order), visited in
the topology's preferred ring order for ring algorithms; the dimensions of a multi-dimensional
network for algorithms that take `dims` (when the group is the whole network in rank order); the
switch that reduces in the network, or the tree of them, for in-network algorithms; the GPUs and
NICs per node of a cluster (`cluster_shape`) for NCCL's algorithms. The returned schedule is
placed: its nodes are topology nodes.
"""

from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ..errors import ConfigError, UnsupportedGroupSize
from ..limits import check_limit, current_limits
from ..topology.graph import Topology
from ..vocab import normalize_collective
from .algorithm import Algorithm, AlgorithmChoice, _field, _text
from .registry import AUTO, choose_algorithm, get_algorithm
from ..ir import Schedule
from .sizing import estimate_blocks

_MAX_RANK = 10**18

__all__ = ["build_schedule", "cluster_shape", "node_switches", "normalize_collective", "parse_group", "reducing_switch", "resolve_group",
           "switch_tree"]


def parse_group(text: str | None, field: str = "group") -> list[int] | None:
    """Ranks of a group as written on the command line or in a config.

    Parameters
    ----------
    text : str or None
        `0,1,2,3`, `0-7`, `0-15:2` (range with stride), or a mix; None = no group given.
    field : str
        The field named in errors (`group`, `--group`, `trace_npus`).

    Returns
    -------
    list of int or None
        The ranks in the order written; ConfigError for anything else, for a rank beyond
        2**62, and for more ranks than the `ranks` limit (counted before any range is expanded).
    """
    if text is None:
        return None
    parts = []
    for part in str(text).split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d+)(?:-(\d+)(?::(\d+))?)?", part)
        if not m:
            raise ConfigError(field, text, "accepted: ranks like 0,1,2,3 or ranges 0-7 or 0-15:2")
        # 19+ digits would overflow the int64 arrays ranks live in (and int() of very long text is slow)
        if any(g is not None and len(g.lstrip("0")) > 18 for g in m.groups()):
            raise ConfigError(field, text, f"accepted: ranks and strides below {_MAX_RANK:,}")
        a, b, stride = (None if g is None else int(g.lstrip("0") or "0") for g in m.groups())
        b = a if b is None else b
        stride = 1 if stride is None else stride
        if b < a or stride < 1:
            raise ConfigError(field, text, "accepted: ranges A-B with A <= B and stride >= 1")
        parts.append((a, b, stride))
    # count arithmetically so that `0-10000000000` is refused before a list of it is built
    count = sum((b - a) // stride + 1 for a, b, stride in parts)
    check_limit("ranks", count, "ranks", field, text)
    ranks: list[int] = []
    for a, b, stride in parts:
        ranks.extend(range(a, b + 1, stride))
    return ranks


def resolve_group(topo: Topology, group: Sequence[int] | None) -> np.ndarray:
    """The group's NPU ids as an array, checked against `topo`.

    Parameters
    ----------
    topo : Topology
        The network.
    group : sequence of int or None
        NPU ids; None: every NPU in rank order.

    Returns
    -------
    int64 array
        The NPU ids; ConfigError for too many, out-of-range or repeated ids.
    """
    if group is None:
        return np.arange(topo.n_npus, dtype=np.int64)
    g = np.asarray(list(group), dtype=np.int64)
    if len(g) > topo.n_npus:
        raise ConfigError("group", len(g), f"accepted: at most {topo.n_npus} ranks on {topo.name}")
    if len(g) and (g.min() < 0 or g.max() >= topo.n_npus):
        raise ConfigError("group", g.tolist() if len(g) < 20 else f"{len(g)} ranks",
                          f"accepted: NPU ids 0..{topo.n_npus - 1} of {topo.name}")
    if len(np.unique(g)) != len(g):
        raise ConfigError("group", g.tolist() if len(g) < 20 else f"{len(g)} ranks", "accepted: distinct NPU ids")
    return g


def reducing_switch(topo: Topology, group: np.ndarray) -> int:
    """A switch that can reduce and multicast and is directly linked, both ways, to every rank.

    Parameters
    ----------
    topo : Topology
        The network.
    group : int64 array
        NPU ids of the group.

    Returns
    -------
    int
        The lowest-id such switch; ConfigError when there is none.
    """
    _, sw = _linked_switches(topo, group)
    full = np.flatnonzero(np.bincount(sw, minlength=topo.n_nodes) == len(group))  # linked to every rank
    if len(full):
        return int(full[0])
    raise ConfigError(
        "algorithm", "in_network",
        f"needs a switch that reduces and multicasts, attached to every rank of the group; "
        f"{topo.name} has none (try --topology switch:{len(group)},reduce)",
    )


def _linked_switches(topo: Topology, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(member index, switch) pairs, in that order, of switches that reduce and multicast and are
    linked both ways to the member: one pass over the links (per-switch scans were quadratic at
    8,192 nodes)."""
    able = np.asarray(topo.can_reduce & topo.can_multicast, dtype=bool)
    n = topo.n_nodes
    pos = np.full(n, -1, dtype=np.int64)
    pos[np.asarray(members, dtype=np.int64)] = np.arange(len(members))
    src, dst = topo.link_src, topo.link_dst
    up = (pos[src] >= 0) & able[dst]
    down = able[src] & (pos[dst] >= 0)
    both = np.intersect1d(pos[src[up]] * n + dst[up], pos[dst[down]] * n + src[down])  # sorted, distinct
    return both // n, both % n


def switch_tree(topo: Topology, group: np.ndarray) -> tuple[np.ndarray, int | None]:
    """For `in_network_tree`: each rank's leaf switch and the root switch above the leaves.

    A rank's leaf is the lowest-id reducing, multicasting switch linked both ways to it; the
    root is one linked both ways to all the leaves used.

    Parameters
    ----------
    topo : Topology
        The network.
    group : int64 array
        NPU ids of the group.

    Returns
    -------
    (int64 array, int or None)
        Leaf switch of each rank, and the root switch (None when the ranks use one leaf);
        ConfigError when a rank has no leaf or no switch sits above the leaves.
    """
    member, sw = _linked_switches(topo, group)
    leaves = np.full(len(group), -1, dtype=np.int64)
    first = np.ones(len(member), dtype=bool)
    first[1:] = member[1:] != member[:-1]
    leaves[member[first]] = sw[first]  # pairs come sorted: the first switch of a member is its lowest
    if (leaves < 0).any():
        r = int(group[np.flatnonzero(leaves < 0)[0]])
        raise ConfigError("algorithm", "in_network_tree",
                          f"needs every rank on a switch that reduces and multicasts; NPU {r} of {topo.name} has none "
                          "(try fred:5x4,up=12TB/s,reduce)")
    used = np.unique(leaves)
    if len(used) == 1:
        return leaves, None
    _, above = _linked_switches(topo, used)
    roots = np.flatnonzero(np.bincount(above, minlength=topo.n_nodes) == len(used))
    if len(roots):
        root = int(roots[0])
        try:  # the leaves stream into the root and back: the topology must route between switches
            topo.route(used, np.full(len(used), root))
            topo.route(np.full(len(used), root), used)
        except ValueError:
            raise ConfigError("algorithm", "in_network_tree",
                              f"needs its leaf switches routed to the root switch above them; {topo.name} does not "
                              "route between switches (try fred:5x4,up=12TB/s,reduce)") from None
        return leaves, root
    raise ConfigError("algorithm", "in_network_tree",
                      f"needs one reducing switch above the leaf switches {used.tolist()} of {topo.name}")


def ring_ordered(topo: Topology, group: np.ndarray) -> np.ndarray:
    """The group's members in the topology's preferred ring order.

    Parameters
    ----------
    topo : Topology
        The network; `Topology.ring_order` is its preferred order (a wafer's Hamiltonian cycle).
    group : int64 array
        NPU ids of the group.

    Returns
    -------
    int64 array
        The same ids sorted by their position in the ring order; the group unchanged when the
        topology has none.
    """
    order = topo.ring_order
    if order is None:
        return group
    pos = np.empty(topo.n_npus, dtype=np.int64)
    pos[np.asarray(order)] = np.arange(len(order))
    return group[np.argsort(pos[group], kind="stable")]


def node_switches(topo: Topology, group: np.ndarray, gpus_per_node: int, nics_per_node: int,
                  rails: bool = True) -> np.ndarray:
    """For `nvls`: each node's reducing switch and, with several nodes, each rail's SHARP switch
    (`nvls_tree`: the nodes' switches only, `rails` False).

    Parameters
    ----------
    topo : Topology
        The network.
    group : int64 array
        NPU ids, node-major: members k*G .. k*G + G - 1 of the group are node k's.
    gpus_per_node, nics_per_node : int
        G and N of the group (`cluster_shape`); member g of a node uses rail g*N // G.
    rails : bool
        Also each rail's SHARP switch, with several nodes.

    Returns
    -------
    int64 array
        The nodes' switches in node order (`reducing_switch` of each node's members), then for
        each rail the lowest-id switch that reduces and multicasts and that every member on the
        rail reaches (`Topology.route`); ConfigError when a node or a rail has none.
    """
    G, N = int(gpus_per_node), int(nics_per_node)
    nodes = len(group) // G
    member, sw = _linked_switches(topo, group)  # all nodes at once (`reducing_switch` per node)
    key, count = np.unique((member // G) * topo.n_nodes + sw, return_counts=True)
    key = key[count == G]  # switches linked to all G members of a node; per node, lowest id first
    node, first = np.unique(key // topo.n_nodes, return_index=True)
    if len(node) < nodes:
        k = int(np.setdiff1d(np.arange(nodes), node)[0])
        reducing_switch(topo, group[k * G:(k + 1) * G])  # raises its error for that node
    out = (key[first] % topo.n_nodes).tolist()
    if nodes == 1 or not rails:
        return np.array(out, dtype=np.int64)
    able = np.flatnonzero(topo.can_reduce & topo.can_multicast)
    taken = set(out)
    fabric = [int(s) for s in able if int(s) not in taken]
    rail = (np.arange(len(group)) % G) * N // G
    for r in range(N):
        members = group[rail == r]
        for s in fabric:
            try:  # one member first: most candidates fail, and a call costs about its size
                for m in (members[:1], members):
                    topo.route(m, np.full(len(m), s))
                    topo.route(np.full(len(m), s), m)
            except ValueError:
                continue
            out.append(s)
            break
        else:
            raise ConfigError("algorithm", "nvls",
                              f"across nodes needs a fabric switch that reduces and multicasts (SHARP) above every "
                              f"rail; rail {r} of {topo.name} has none (try dgx-h100:nodes=2,sharp)")
    return np.array(out, dtype=np.int64)


def cluster_shape(topo: Topology, group: np.ndarray) -> tuple[int, int]:
    """GPUs per node and NICs per node of a group, as NCCL's algorithms see it (`Algorithm.cluster`).

    On a cluster of scale-up nodes (`topo.node_gpus` = G > 0; NPU k*G + g is GPU g of node k, which
    uses NIC g*node_nics // G), a group that is node-major in its given order (the members on one
    node consecutive, in any order of nodes) with the same number m of members on every node it
    touches is m GPUs per node; its NICs per node are the distinct NICs the m members of a node
    use, when that count is the same on every node and divides m, else 1. Any other group, and
    every group on a topology that is not a cluster, is one node of p GPUs with one NIC.

    Parameters
    ----------
    topo : Topology
        The network (`node_gpus`, `node_nics`).
    group : int64 array
        NPU ids of the group, in group order (local rank i of a node is its i-th member there).

    Returns
    -------
    (int, int)
        (gpus_per_node, nics_per_node): the whole 4-GPU, 2-NIC nodes give (4, 2), one node's GPUs
        (4, 2), GPU g of every node (a data-parallel group) (1, 1), a non-cluster topology (p, 1).

    Examples
    --------
    >>> from dataclasses import replace
    >>> from fabricsim.topology import parse_topology
    >>> topo = replace(parse_topology("switch:16"), node_gpus=4, node_nics=2)
    >>> cluster_shape(topo, np.arange(16)), cluster_shape(topo, np.array([1, 5, 9, 13]))
    ((4, 2), (1, 1))
    """
    g = np.asarray(group, dtype=np.int64)
    p = len(g)
    G = int(getattr(topo, "node_gpus", 0) or 0)
    if G <= 0 or p == 0:
        return p, 1
    node = g // G
    starts = np.concatenate([[0], np.flatnonzero(node[1:] != node[:-1]) + 1])
    lengths = np.diff(np.append(starts, p))
    if len(np.unique(node[starts])) != len(starts) or np.any(lengths != lengths[0]):
        return p, 1  # a node's members are not consecutive, or nodes hold different counts
    m = int(lengths[0])
    N = max(1, int(getattr(topo, "node_nics", 0) or 0))
    nic = (g % G) * N // G
    run = np.repeat(np.arange(len(starts)), m)
    per_node = np.bincount(np.unique(run * N + nic) // N, minlength=len(starts))
    n = int(per_node[0])
    return (m, n) if np.all(per_node == n) and m % n == 0 else (m, 1)


def build_schedule(
    topo: Topology,
    collective: str,
    algorithm: str | AlgorithmChoice,
    *,
    group: Sequence[int] | None = None,
    root: int = 0,
    where: str | None = None,
    **options,
) -> Schedule:
    """The placed schedule of `collective` with `algorithm` on `group` of `topo`.

    Parameters
    ----------
    topo : Topology
        The network.
    collective : str
        all-reduce, reduce-scatter, all-gather, all-to-all, broadcast or reduce (aliases accepted).
    algorithm : str or AlgorithmChoice
        A registered name or alias, optionally with options (`ring,bidirectional=true`).
    group : sequence of int, optional
        NPU ids (default: every NPU in rank order).
    root : int
        Root's index in the group, for broadcast and reduce.
    where : str, optional
        The field that named the options (`--option`): errors about an option then name
        `--option KEY` (None: `algorithm`, and a builder's errors name the bare option).
    **options
        Algorithm options (typed values or strings, as `choose_algorithm` parses them).

    Returns
    -------
    Schedule
        Placed on topology nodes (helper switches included); ConfigError / UnsupportedGroupSize
        when the algorithm cannot serve this collective, group or topology, or when the
        schedule would hold more entries than the `blocks` limit (estimated before building).

    Examples
    --------
    >>> from fabricsim.topology import parse_topology
    >>> s = build_schedule(parse_topology("torus:4x4"), "all-reduce", "swing")
    >>> s.p, s.n_steps
    (16, 8)
    """
    collective = normalize_collective(collective)
    choice = choose_algorithm(algorithm, options, **({"where": where} if where else {}))
    if choice.name == AUTO:
        raise ConfigError("algorithm", AUTO, "auto picks an algorithm per size when a collective is priced "
                                             "(network.tuner.price_collective); accepted here: a named algorithm")
    alg = get_algorithm(choice.name)
    opts = choice.kwargs
    opts.pop("proto", None)  # how the schedule is timed (network.nccl), not what it moves
    g = resolve_group(topo, group)
    if alg.ring_order:
        g = ring_ordered(topo, g)
    p = len(g)
    _topology_options(topo, alg, g, opts)
    _check_supported(alg, collective, p, opts, root)
    tree = None
    if alg.helper == "switch-tree":
        tree = switch_tree(topo, g)
        opts["leaf_of"] = tree[0]
    _check_blocks(alg, collective, p, opts, choice.kwargs, where)
    s = _build(alg, collective, p, opts, where)
    return s.placed(_placed_nodes(topo, alg, g, s, opts, tree))


def _topology_options(topo: Topology, alg: Algorithm, g: np.ndarray, opts: dict) -> None:
    """Nothing: fills into `opts` what the algorithm takes from the topology (dims, ring steps, cluster shape)."""
    p = len(g)
    if alg.dims and opts.get("dims") is None:
        whole = p == topo.n_npus and np.array_equal(g, np.arange(p))
        opts["dims"] = tuple(topo.dims) if whole else (p,)
    if alg.jumps and opts.get("steps") is None:
        from .circulant_rings import ring_steps

        opts["steps"] = ring_steps(topo.n_npus, topo.jumps, g)
    if alg.cluster and (opts.get("gpus_per_node") is None or opts.get("nics_per_node") is None):
        gpus, nics = cluster_shape(topo, g)
        if opts.get("gpus_per_node") is None:
            opts["gpus_per_node"] = gpus
        elif opts["gpus_per_node"] != gpus:
            nics = 1  # the user's node size is not the group's: its NICs are unknown
        if opts.get("nics_per_node") is None:
            opts["nics_per_node"] = nics


def _check_supported(alg: Algorithm, collective: str, p: int, opts: dict, root: int) -> None:
    """Nothing: raises unless the algorithm serves this collective and group; sets a root in `opts`."""
    reason = alg.supports(collective, p, opts)
    if reason is not None:
        if collective not in alg.collectives:
            raise ConfigError("collective", collective, reason)
        raise UnsupportedGroupSize(alg.name, collective, p, reason)
    if collective in ("broadcast", "reduce"):
        if not 0 <= int(root) < p:
            raise ConfigError("root", root, f"accepted: a rank 0..{p - 1} of the group")
        opts["root"] = int(root)


def _check_blocks(alg: Algorithm, collective: str, p: int, opts: dict, given: dict, where: str | None) -> None:
    """Nothing: raises when the schedule would hold more entries than the `blocks` limit, naming what to lower."""
    culprit = next(((k, given[k]) for k in ("chunks", "steps", "channels") if k in given), None)
    need = estimate_blocks(alg.name, collective, p, opts)
    what = f"schedule entries ({alg.name} {collective} on {p} ranks: transfers x blocks)"
    if culprit is None and alg.option("chunks") is not None:  # the default pieces may be what is too many
        fewer = estimate_blocks(alg.name, collective, p, {**opts, "chunks": 1})
        if fewer <= current_limits().blocks < need:
            what = what[:-1] + f"; fewer pipeline pieces fit: {_field(where or 'algorithm', 'chunks')}=N)"
    check_limit("blocks", need, what,
                *((_field(where or "algorithm", culprit[0]), _text(culprit[1])) if culprit else ("group size", p)))


def _build(alg: Algorithm, collective: str, p: int, opts: dict, where: str | None) -> Schedule:
    """The unplaced schedule from the algorithm's builder; its option errors name `where` the option was given."""
    try:
        return alg.build(collective, p, **opts)
    except UnsupportedGroupSize:
        raise
    except ConfigError as e:
        # a builder names its option bare (`dims`): say where it was given (`--option dims`)
        if where and alg.option(e.field) is not None:
            raise ConfigError(_field(where, e.field), _text(e.value), e.accepted) from None
        raise


def _placed_nodes(topo: Topology, alg: Algorithm, g: np.ndarray, s: Schedule, opts: dict,
                  tree: tuple[np.ndarray, int | None] | None) -> np.ndarray:
    """The topology nodes of the schedule's nodes: the group, then its helper switches."""
    p = len(g)
    nodes = g
    if s.n_extra:
        if tree is not None:
            nodes = np.concatenate([g, np.unique(tree[0]), [] if tree[1] is None else [tree[1]]]).astype(np.int64)
        elif alg.helper == "reducing-switch":
            nodes = np.concatenate([g, [reducing_switch(topo, g)]])
        elif alg.helper == "node-switches":
            G = opts["gpus_per_node"]
            nodes = np.concatenate([g, node_switches(topo, g, G, opts["nics_per_node"], rails=s.n_extra > p // G)])
        else:
            raise ValueError(f"{alg.name}: schedule has helper nodes but declares no helper")
    return nodes
