"""Automorphisms of a topology (`topology.symmetry`): a permutation of the NPUs extended to the
switches and checked link by link (issue 42's first half of a fold proved by symmetry)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.topology import parse_topology
from fabricsim.topology.symmetry import extend, is_automorphism


def _node_shift(gpus: int, nodes: int, by: int) -> np.ndarray:
    """GPU a of node k -> GPU a of node k + by (mod nodes)."""
    g = np.arange(gpus * nodes)
    return (g // gpus + by) % nodes * gpus + g % gpus


def _rail_shift(gpus: int, nodes: int, by: int) -> np.ndarray:
    """GPU a of node k -> GPU a + by (mod gpus) of node k: every node's rails rotate alike."""
    g = np.arange(gpus * nodes)
    return g // gpus * gpus + (g % gpus + by) % gpus


def _torus_shift(dims: tuple, d: int) -> np.ndarray:
    """A translation by +1 along dimension d of a torus (dimension 0 fastest)."""
    c = np.array(np.unravel_index(np.arange(int(np.prod(dims))), dims[::-1]))[::-1]
    c[d] = (c[d] + 1) % dims[d]
    return np.ravel_multi_index(tuple(c[::-1]), dims[::-1])


@pytest.mark.parametrize("spec,perm", [
    ("torus:4x3", _torus_shift((4, 3), 0)),
    ("torus:4x3", _torus_shift((4, 3), 1)),
    ("ring:7", (np.arange(7) + 3) % 7),
    ("switch:6", np.array([5, 0, 1, 2, 3, 4])),
    ("stack:Switch4xSwitch3", _node_shift(4, 3, 1)),
    ("stack:Switch4xSwitch3", _rail_shift(4, 3, 1)),
    ("dgx-h100:nodes=4", _node_shift(8, 4, 1)),
    ("dgx-h100:nodes=4", _rail_shift(8, 4, 3)),
])
def test_symmetric_shifts_extend_to_automorphisms(spec, perm):
    topo = parse_topology(spec)
    sigma = extend(topo, perm)
    assert sigma is not None and np.array_equal(sigma[: topo.n_npus], perm)
    assert is_automorphism(topo, sigma)


def test_identity_is_an_automorphism_and_a_degraded_link_breaks_a_shift():
    topo = parse_topology("torus:4x4", "100GB/s", "100ns")
    n = topo.n_npus
    assert is_automorphism(topo, extend(topo, np.arange(n)))
    shift = _torus_shift((4, 4), 0)
    assert is_automorphism(topo, extend(topo, shift))
    bw = topo.link_bw.copy()
    bw[0] /= 2  # one degraded link: no translation maps the network onto itself any more
    worse = replace(topo, link_bw=bw)
    assert not is_automorphism(worse, extend(worse, shift))
    assert is_automorphism(worse, extend(worse, np.arange(n)))


def test_a_replica_across_a_node_boundary_is_no_symmetry():
    """GPU 7 of node 0 and GPU 0 of node 1 swapped: NVLink neighbours split across nodes."""
    topo = parse_topology("dgx-h100:nodes=2")
    perm = np.arange(16)
    perm[[7, 8]] = perm[[8, 7]]
    assert not is_automorphism(topo, extend(topo, perm))


def test_not_a_permutation_is_refused():
    topo = parse_topology("ring:4")
    assert extend(topo, [0, 0, 1, 2]) is None and extend(topo, [0, 1, 2]) is None
    assert not is_automorphism(topo, None) and not is_automorphism(topo, np.array([0, 1, 2, 2]))
    assert is_automorphism(topo, (-np.arange(4)) % 4)  # a reversal: both directions of every link exist
    assert not is_automorphism(topo, np.array([0, 2, 1, 3]))  # 0-2 is no link of ring:4
