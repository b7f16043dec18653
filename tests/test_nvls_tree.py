"""NCCL's NVLS-tree (issue 39): NVLink SHARP in every node, NCCL's double binary tree between the
nodes. Executed on data for many node counts and node shapes; NCCL's trees against its own
illustration (src/graph/trees.cc); the busiest link against a closed form."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.nvls_tree import nccl_dtree
from fabricsim.collectives.verify import verify
from fabricsim.errors import UnsupportedGroupSize
from fabricsim.network.model import get_network_model
from fabricsim.topology.spec import parse_topology


@pytest.mark.parametrize("nodes", [2, 3, 4, 5, 7, 9, 16])
@pytest.mark.parametrize("gpus, nics", [(1, 1), (2, 1), (4, 2), (8, 8), (6, 3)])
def test_every_rank_ends_with_the_sum(nodes, gpus, nics):
    topo = parse_topology(f"dgx:nodes={nodes},gpus={gpus},nics={nics},nvlink=450GB/s,nic=400Gbps,nvls",
                          "400Gbps", "100ns")
    s = build_schedule(topo, "all-reduce", "nvls_tree")
    assert (s.p, s.nblocks, s.n_extra) == (nodes * gpus, 2 * gpus, nodes)
    rep = verify(s, seed=nodes * 10 + gpus)
    assert rep.blocks_checked == s.nblocks


def test_nccl_btree_is_nccls_illustration():
    """trees.cc draws 13 ranks: 0-8, 8-{4, 12}, 4-{2, 6}, 12-10, 2-{1, 3}, 6-{5, 7}, 10-{9, 11}; the
    second tree is it shifted by one rank (odd n)."""
    want = {1: 2, 2: 4, 3: 2, 4: 8, 5: 6, 6: 4, 7: 6, 8: 0, 9: 10, 10: 12, 11: 10, 12: 8}
    t1, t2 = nccl_dtree(13)
    assert t1[0][0] == -1 and {r: int(t1[0][r]) for r in range(1, 13)} == want
    shifted = {(r + 1) % 13: (q + 1) % 13 for r, q in want.items()}
    assert t2[0][1] == -1 and {r: int(t2[0][r]) for r in range(13) if r != 1} == shifted
    t1, t2 = nccl_dtree(12)  # even: mirrored, node r plays node 11 - r
    assert all(t2[0][11 - r] == (-1 if t1[0][r] < 0 else 11 - t1[0][r]) for r in range(12))


def test_one_node_is_refused():
    topo = parse_topology("dgx-h100:nodes=1", "400Gbps", "100ns")
    with pytest.raises(UnsupportedGroupSize, match="at least two whole nodes"):
        build_schedule(topo, "all-reduce", "nvls_tree")


@pytest.mark.parametrize("nodes, busiest", [(2, 2), (8, 4)])
def test_stream_rate_is_the_busiest_nic_or_the_switch(nodes, busiest):
    """dgx-h100 (NIC 48 GB/s, PCIe Gen5 x16 x 0.76 = 47.9 GB/s per GPU's rail, NVSwitch 275 GB/s):
    half-slices of S/16 cross each GPU's rail; per direction a node carries `busiest` of them
    (2 nodes: one up and one down per tree's edge; from 4 nodes an inner node of one tree with two
    children and a parent, and a leaf of the other: 4). Rate: min(275, 47.9 x 16 / busiest) GB/s."""
    topo = parse_topology(f"dgx-h100:nodes={nodes}", "400Gbps", "0ns")
    s = build_schedule(topo, "all-reduce", "nvls_tree")
    pcie = 32e9 * 16 * 128 / 130 / 8 * 0.76
    rate = min(275e9, min(pcie, 50e9 * 0.96) * 16 / busiest)
    size = 2.0**36
    t = get_network_model("congestion-aware").collective(topo, s).times([size])[0]
    assert size / t == pytest.approx(rate, rel=1e-9)
