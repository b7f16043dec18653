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
from .spec import FAMILIES, parse_topology

__all__ = ["FAMILIES", "Topology", "fat_tree", "from_edges", "fully_connected", "mesh", "parse_topology",
           "ring", "stack", "switch", "torus"]
