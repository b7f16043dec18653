"""NCCL's ring algorithm as NCCL runs it on a cluster of scale-up nodes (DGX/HGX).

The group is `nodes` nodes of G GPUs each (rank k*G + g is GPU g of node k) with N NICs per
node, GPU g using NIC (rail) g*N // G, so rail r is GPUs r*q .. r*q+q-1 with q = G/N. NCCL
runs `channels` = c rings at once (default: one per NIC), ring k carrying 1/c of the buffer.
Every ring visits all p ranks: the nodes in order 0..nodes-1, and inside every node the local
GPUs e_k, e_k+1, ..., e_k+G-1 (mod G) from its *entry* GPU e_k to its *exit* GPU e_k-1. The
crossing from one node's exit to the next node's entry goes over the rail of the entry GPU
(NCCL's PXN: a cross-node transfer leaves through the NIC on the destination GPU's rail), so the
rings stripe over the NICs when ring k enters on rail r_k = k mod N (`entry_gpu`):

- q = 1 (a NIC per GPU): e_k = r_k, and the ring alternates direction node by node, as NCCL's
  rings on rail-optimized nodes do: an even node is crossed e_k, e_k+1, ..., e_k-1 and leaves on
  rail e_k-1, the next (odd) node is entered on that same rail and crossed backwards, e_k-1,
  e_k-2, ..., e_k, leaving on rail e_k, where the following even node is entered. Every crossing
  is then rail-aligned (no NVLink proxy hop) except, with an odd number of nodes, the one from the
  last node back to node 0 (PXN carries that one over NVLink to the NIC of rail r_k). So with
  G NICs a GPU's NVLink carries G-1 of the G rings' transfers and the NICs, not NVLink, bound 2
  nodes (NVIDIA measures 396 GB/s busbw on 2 DGX H100, above the 370.8 GB/s effective NVLink:
  nccl-tests#319);
- q >= 2: e_k = r_k*q + 1 + (k // N) mod (q-1), so the exit e_k - 1 is on rail r_k as well (no
  proxy hop); rings that share a rail spread over its q-1 such entries.

E.g. G = 8: N = 8 and c = 8 enter at GPUs 0, 1, ..., 7; N = 4 and c = 4 at GPUs 1, 3, 5, 7 (exits
0, 2, 4, 6). On one node (G = p) the channels are rotations of the same cycle.

Block layout: c*p blocks; ring k owns blocks [k*p, (k+1)*p) and the rank at position X of its
order ends the reduce-scatter owning block k*p + X (`owner`). Each phase of each ring is the
compressed `ring.ring_phase` on positions 0..p-1 with ranks renamed through the ring's order;
the rings run side by side in one `Step` of c*p transfers repeated p-1 times, so an all-reduce
is two `Step`s for any p and c (a 4096-rank, 8-channel all-reduce: 2 x 32768 transfers).
"""

from __future__ import annotations

import numpy as np

from ._common import channel_count, cluster_group_reason, cluster_layout, require_collective, require_group
from .algorithm import Algorithm, Option, proto_option
from ..ir import Facts
from .ring import ring_phase
from ..ir import Schedule, Step

COLLECTIVES = ("all-reduce", "reduce-scatter", "all-gather")


def entry_gpu(k: int, gpus_per_node: int, nics_per_node: int) -> int:
    """Local GPU at which ring (channel) k enters every node (module doc).

    Parameters
    ----------
    k : int
        Channel, >= 0.
    gpus_per_node : int
        G, GPUs per node.
    nics_per_node : int
        N, a divisor of G.

    Returns
    -------
    int
        A GPU on rail k mod N; for G/N >= 2 one whose predecessor (the ring's exit GPU) is on
        the same rail.

    Examples
    --------
    >>> [entry_gpu(k, 8, 4) for k in range(4)], [entry_gpu(k, 8, 2) for k in range(4)]
    ([1, 3, 5, 7], [1, 5, 2, 6])
    """
    q = gpus_per_node // nics_per_node
    r, j = k % nics_per_node, k // nics_per_node
    if q == 1:
        return r
    return r * q + 1 + j % (q - 1)


def ring_orders(p: int, gpus_per_node: int, nics_per_node: int, channels: int) -> np.ndarray:
    """Rank at every position of every channel's ring.

    Parameters
    ----------
    p : int
        Ranks, a multiple of `gpus_per_node`.
    gpus_per_node, nics_per_node : int
        G and N (N divides G).
    channels : int
        c, rings.

    Returns
    -------
    int64 array [c, p]
        Row k: nodes in order 0..nodes-1, each visited from GPU e_k (`entry_gpu`) to e_k - 1; with a
        NIC per GPU the odd nodes backwards from e_k - 1 to e_k (module doc).
    """
    G = gpus_per_node
    entries = np.array([entry_gpu(k, G, nics_per_node) for k in range(channels)], dtype=np.int64)
    j = np.arange(G, dtype=np.int64)[None, :]
    forward = (entries[:, None] + j) % G  # [c, G]
    nodes = p // G
    local = np.broadcast_to(forward[:, None, :], (channels, nodes, G)).copy()
    if G // nics_per_node == 1 and nodes > 1:
        local[:, 1::2, :] = ((entries[:, None] - 1 - j) % G)[:, None, :]  # odd nodes backwards
    base = np.arange(nodes, dtype=np.int64) * G
    return (base[None, :, None] + local).reshape(channels, p)


def nccl_ring(
    collective: str,
    p: int,
    *,
    channels: int | None = None,
    gpus_per_node: int | None = None,
    nics_per_node: int | None = None,
    root: int = 0,
) -> Schedule:
    """Multi-channel ring all-reduce / reduce-scatter / all-gather striped over the NICs.

    Parameters
    ----------
    collective : str
        all-reduce, reduce-scatter or all-gather (canonical name).
    p : int
        Ranks in the group, >= 2, a multiple of `gpus_per_node`.
    channels : int, optional
        Rings run at once, each on 1/channels of the buffer (default: nics_per_node).
    gpus_per_node : int, optional
        GPUs per node G (default p: one node).
    nics_per_node : int, optional
        NICs per node N, a divisor of G (default 1).
    root : int
        Accepted for a uniform signature and ignored.

    Returns
    -------
    Schedule
        Unplaced, channels*p blocks, one `Step` per phase (p-1 repetitions of channels*p
        transfers); `facts` states the channels and NICs per node, `meta` has the node shape
        and each ring's entry GPU.
    """
    require_collective("nccl_ring", collective, COLLECTIVES)
    require_group("nccl_ring", collective, p)
    p = int(p)
    G, N, nodes = cluster_layout("nccl_ring", collective, p, gpus_per_node, nics_per_node)
    c = channel_count(channels, max(1, N))
    orders = ring_orders(p, G, N, c)
    phases = {"all-reduce": ("rs", "ag"), "reduce-scatter": ("rs",), "all-gather": ("ag",)}[collective]
    base = (np.arange(c, dtype=np.int64) * p)[:, None]
    steps = []
    for ph in phases:
        st = ring_phase(p, ph)  # positions 0..p-1, position r -> r+1
        ids = (st.blocks[None, :] + base).reshape(-1)
        ptr = np.arange(c * p + 1, dtype=np.int64)
        steps.append(Step(orders[:, st.src].reshape(-1), orders[:, st.dst].reshape(-1), np.tile(st.reduce, c), ptr,
                          ids, repeat=st.repeat, shift=np.tile(st.shift, c), mod=np.tile(st.mod, c)))
    meta = {"gpus_per_node": G, "nodes": nodes, "entries": tuple(int(x) for x in orders[:, 0] % G)}
    return Schedule(collective, "nccl_ring", p, c * p, tuple(steps), owner=orders.reshape(-1), meta=meta,
                    facts=Facts(channels=c, nics_per_node=N))


CLUSTER_OPTIONS = (
    Option("gpus_per_node", "int", None, "GPUs per node G; the group is p/G nodes, rank k*G+g = GPU g of node k "
                                         "(default: the group's members per node on a cluster topology, else p)"),
    Option("nics_per_node", "int", None, "NICs per node, a divisor of G; GPU g uses NIC g*N/G (default: the NICs "
                                         "the group's members of a node use on a cluster topology, else 1)"),
)

def _estimate(c: str, p: int, o: dict) -> float:
    channels = int(o.get("channels") or max(1, int(o.get("nics_per_node") or 1)))
    return 4.0 * channels * p  # one compressed step of channels x p transfers per phase


ALGORITHM = Algorithm(
    "nccl_ring", nccl_ring, COLLECTIVES, "any p >= 2 that is a multiple of gpus_per_node",
    "NCCL ring on nodes of G GPUs: `channels` rings, 1/channels of the buffer each, entering every node on "
    "NIC k mod N (striped over the NICs)",
    options=(Option("channels", "int", None, "rings run at once, 1/channels of the buffer each (default: nics_per_node)"),)
    + CLUSTER_OPTIONS + (proto_option(),),
    cluster=True, nccl="ring",
    check=lambda collective, p, options: cluster_group_reason(p, options),
    aliases={"nccl-ring": {}},
    estimate=_estimate,
)
