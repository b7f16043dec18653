"""Topology builders, one file per family."""

from .fat_tree import fat_tree
from .general import from_edges
from .stack import fully_connected, mesh, ring, stack, switch, torus

__all__ = ["fat_tree", "from_edges", "fully_connected", "mesh", "ring", "stack", "switch", "torus"]
