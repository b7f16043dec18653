"""Facts an algorithm states about its schedule (`collectives.facts`): what builders state, how they
are checked, that they survive placing and `replace`, and that network models read them (not `meta`).

Expected values are written here from the builders' documentation: a ring broadcast's chain runs from
the root around the ring (root, root+1, ... mod p), a reduce's from the root's successor to the root."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.collectives import Facts
from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.nccl_ring import nccl_ring
from fabricsim.collectives.nccl_tree import nccl_tree
from fabricsim.collectives.nvls import nvls
from fabricsim.collectives.ring import ring
from fabricsim.network.lowering.chain import chain_hop_order
from fabricsim.network.nccl import nccl_shape
from fabricsim.topology import parse_topology


def test_defaults_state_nothing():
    f = Facts()
    assert (f.chain, f.channels, f.nics_per_node) == (None, 1, None)
    s = ring("all-reduce", 4)
    assert s.facts == Facts()


def test_ring_states_its_chain():
    assert ring("broadcast", 5, root=2).facts.chain == (2, 3, 4, 0, 1)
    assert ring("reduce", 5, root=2).facts.chain == (3, 4, 0, 1, 2)  # root last
    assert ring("broadcast", 5, root=2).meta == {"chunks": 5}  # the chain is a fact, not a report option


def test_nccl_builders_state_channels_and_nics():
    s = nccl_ring("all-reduce", 8, channels=3, gpus_per_node=4, nics_per_node=2)
    assert (s.facts.channels, s.facts.nics_per_node) == (3, 2)
    t = nccl_tree("all-reduce", 8, channels=3, gpus_per_node=4, nics_per_node=2)
    assert (t.facts.channels, t.facts.nics_per_node) == (3, 2)
    assert nvls("all-reduce", 16, gpus_per_node=8, nics_per_node=8).facts == Facts(nics_per_node=8)
    assert nvls("all-reduce", 8, gpus_per_node=8, nics_per_node=2).facts == Facts(nics_per_node=2)  # one node


@pytest.mark.parametrize("kwargs, field", [
    ({"channels": 0}, "channels"), ({"channels": True}, "channels"), ({"channels": 2.0}, "channels"),
    ({"nics_per_node": 0}, "nics_per_node"), ({"nics_per_node": "4"}, "nics_per_node"),
    ({"chain": (0, 1.5)}, "chain"), ({"chain": (0, -1)}, "chain"), ({"chain": 3}, "chain"),
])
def test_invalid_facts_name_their_field(kwargs, field):
    with pytest.raises(ValueError, match=rf"Facts\.{field}\b"):
        Facts(**kwargs)


def test_facts_are_normalised_and_frozen():
    f = Facts(chain=np.array([2, 0, 1]), channels=np.int64(4), nics_per_node=np.int32(2))
    assert f == Facts(chain=(2, 0, 1), channels=4, nics_per_node=2)
    assert all(type(x) is int for x in (*f.chain, f.channels, f.nics_per_node))
    with pytest.raises(AttributeError):
        f.channels = 2
    with pytest.raises(ValueError, match="Schedule.facts"):
        replace(ring("all-reduce", 4), facts={"channels": 2})


def test_facts_survive_placing_and_replace():
    s = ring("broadcast", 5, root=2)
    placed = s.placed([10, 11, 12, 13, 14])
    assert placed.facts == Facts(chain=(2, 3, 4, 0, 1))  # schedule nodes, not topology nodes
    assert replace(placed, algorithm="copy").facts == Facts(chain=(2, 3, 4, 0, 1))
    built = build_schedule(parse_topology("torus:3x3"), "broadcast", "ring", root=4)
    assert built.facts.chain == (4, 5, 6, 7, 8, 0, 1, 2, 3)
    cluster = build_schedule(parse_topology("dgx-a100:nodes=2,nics=4"), "all-reduce", "nccl_ring")
    assert (cluster.facts.channels, cluster.facts.nics_per_node) == (4, 4)


def test_network_reads_facts_not_meta():
    topo = parse_topology("dgx-a100:nodes=2,nics=4")  # 8 GPUs and 4 NICs per node
    s = build_schedule(topo, "all-reduce", "nccl_ring", channels=3, nics_per_node=2)
    shape = nccl_shape(topo, s)
    assert (shape.channels, shape.nics) == (3, 2)
    assert nccl_shape(topo, replace(s, meta={"channels": 7, "nics_per_node": 1})).channels == 3
    bare = replace(s, facts=Facts())  # states nothing: one channel, the topology's NICs
    assert (nccl_shape(topo, bare).channels, nccl_shape(topo, bare).nics) == (1, 4)
    chain = ring("broadcast", 5, root=2)
    assert chain_hop_order(chain).tolist() == [2, 3, 4, 0, 1]
    assert chain_hop_order(replace(chain, facts=Facts(), meta={"chain": (2, 3, 4, 0, 1)})) is None

