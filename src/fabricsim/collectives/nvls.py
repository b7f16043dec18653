"""NVLink SHARP (NVLS) all-reduce, and NVLS + SHARP across nodes, as NCCL runs them.

Inside a node the NVSwitch reduces and multicasts: every GPU streams its buffer up, the switch
reduces it and multicasts the sum back (`in_network` on the node's switch): S bytes each way per
GPU, and the switch's reduction unit (`Topology.reduce_link`, bytes of reduced output per second)
caps the stream, so one node takes S / min(link, reduction rate) + two link latencies.

Across nodes (NCCL's NVLS with CollNet/SHARP) the buffer is cut into G slices, one per local GPU:
1. every GPU streams its buffer up to its node's NVSwitch (reduce);
2. the switch sends slice g of the node's sum to local GPU g;
3. GPU g streams slice g up its NIC to the SHARP switch of its rail (reduce over the nodes);
4. that switch multicasts the global slice g down to GPU g of every node;
5. GPU g sends it up to its NVSwitch (copy), and
6. the switch multicasts it to the node's other GPUs.
Schedule nodes: ranks 0..p-1 (rank k*G + g is GPU g of node k), then the nodes' switches p..p+nodes-1,
then one SHARP switch per rail p+nodes..p+nodes+N-1 (GPU g uses rail g*N // G). The schedule
streams: every stage runs at once on successive pieces, so a network model prices it as one stream
whose rate the busiest link sets (NVLink: S up and S down per GPU; each NIC: G/N slices of S/G
each way), plus the latencies of the six stages.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ._common import cluster_layout, require_collective, require_group
from .algorithm import Algorithm, Option, proto_option
from ..ir import Facts
from .in_network import _others, in_network
from ..ir import Schedule, make_step

COLLECTIVES = ("all-reduce",)


def nvls(collective: str, p: int, *, gpus_per_node: int | None = None, nics_per_node: int | None = None,
         root: int = 0) -> Schedule:
    """NVLS all-reduce on one node, or NVLS + SHARP over several (module doc).

    Parameters
    ----------
    collective : str
        all-reduce.
    p : int
        Ranks, a multiple of `gpus_per_node`.
    gpus_per_node : int, optional
        GPUs per node G (default p: one node).
    nics_per_node : int, optional
        NICs (rails) per node N, dividing G (default 1).
    root : int
        Unused (all-reduce has none).

    Returns
    -------
    Schedule
        Unplaced, streaming; helpers: the nodes' switches, then (several nodes) one SHARP switch
        per rail; `facts` states the NICs per node. UnsupportedGroupSize when p is not whole nodes.

    Examples
    --------
    >>> s = nvls("all-reduce", 16, gpus_per_node=8, nics_per_node=8)
    >>> s.n_extra, s.nblocks, s.n_steps   # 2 node switches + 8 rail switches; 8 slices; 6 stages
    (10, 8, 6)
    """
    require_collective("nvls", collective, COLLECTIVES)
    require_group("nvls", collective, p)
    G, N, nodes = cluster_layout("nvls", collective, p, gpus_per_node, nics_per_node)
    meta, facts = {"gpus_per_node": G}, Facts(nics_per_node=N)
    if nodes == 1:
        return replace(in_network("all-reduce", p), algorithm="nvls", meta={**meta, "switch_node": p}, facts=facts)
    rank = np.arange(p, dtype=np.int64)
    node, local = rank // G, rank % G
    switch = p + node  # each rank's node switch
    rail_switch = p + nodes + local * N // G  # the SHARP switch of each rank's rail
    every = np.broadcast_to(np.arange(G, dtype=np.int64), (p, G))
    steps = (
        make_step(rank, switch, every, True),  # 1. up to the node's switch, reduced there
        make_step(switch, rank, local, False),  # 2. slice g of the node's sum to GPU g
        make_step(rank, rail_switch, local, True),  # 3. up the rail, reduced over the nodes
        make_step(rail_switch, rank, local, False),  # 4. the global slice back to GPU g of every node
        make_step(rank, switch, local, False),  # 5. GPU g hands it to its node's switch
        _multicast(p, G),  # 6. the switch sends it to the node's other GPUs
    )
    return Schedule("all-reduce", "nvls", p, G, steps, n_extra=nodes + N, meta=meta, streaming=True, facts=facts)


def _multicast(p: int, G: int):
    """Step 6: node switch k sends slice g to every GPU of node k but GPU g."""
    rank = np.arange(p, dtype=np.int64)
    return make_step(p + rank // G, rank, _others(G)[rank % G], False)  # every slice but the rank's own


def _estimate(c: str, p: int, o: dict) -> float:
    gpus = int(o.get("gpus_per_node") or p)
    return 2.0 * p * gpus + 6.0 * p  # steps 1 and 6 move G slices per rank, the others one


ALGORITHM = Algorithm(
    "nvls", nvls, COLLECTIVES, "whole nodes of a cluster whose node switches reduce (NVLink SHARP), and with "
    "several nodes reducing fabric switches on every rail (SHARP)",
    "NVLink SHARP all-reduce in a node (S / min(link, switch reduction rate)); across nodes NVLS + SHARP: "
    "slices reduced in the node switch, over the rail's SHARP switch, multicast back",
    options=(Option("gpus_per_node", "int", None, "GPUs per node (default: the topology's, for a group of whole nodes)"),
             Option("nics_per_node", "int", None, "NICs (rails) per node (default: the topology's)"),
             proto_option()),
    helper="node-switches", streams=True, cluster=True, nccl="nvls",
    aliases={"nvls_sharp": {}, "nvlink_sharp": {}},
    estimate=_estimate,
)
