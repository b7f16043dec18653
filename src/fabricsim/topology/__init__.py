"""Topologies: who is wired to whom, with per-link bandwidth and latency, and routing."""

from .builders import (
           fat_tree,
           from_edges,
           fully_connected,
           mesh,
           ring,
           stack,
           switch,
           torus,
)
from .graph import Topology
from .spec import FAMILIES, build_topology, parse_topology, topology_from_config

__all__ = ["FAMILIES", "Topology", "build_topology", "fat_tree", "from_edges", "fully_connected", "mesh",
           "parse_topology", "ring", "stack", "switch", "topology_from_config", "torus"]
