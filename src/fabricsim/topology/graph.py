"""The Topology: who is wired to whom, and how messages are routed.

NPUs are nodes `0..n_npus-1`; switches follow. Links are directed, each with a bandwidth
(bytes/s) and a latency (s), stored as numpy arrays. A router turns arrays of (src, dst) pairs
into paths (CSR: `ptr`, `links`), vectorized over all pairs: the network models route a whole
step at once.

The names live in two modules, both re-exported here (`from fabricsim.topology.graph import
Topology` is the usual import):

- `topology.core`: `Topology` (the dataclass of nodes, link arrays and layout facts) and the
  `Router` protocol;
- `topology.routers`: `DimensionOrderRouter` (stacks of rings, lines, fc and switch dimensions),
  `TreeRouter` (up/down on trees of switches), `ShortestPathRouter` (fewest hops on any graph)
  and `csr_from_hops`, which assembles their paths.
"""

from __future__ import annotations

# re-exported: the Topology and the Router protocol
from .core import Router, Topology  # noqa: F401

# re-exported: the routers and their path assembly
from .routers import DimensionOrderRouter, ShortestPathRouter, TreeRouter, csr_from_hops  # noqa: F401
