"""Topology builders, one file per family."""

from .fat_tree import fat_tree
from .general import from_edges
from .stack import fully_connected, mesh, ring, stack, switch, torus
from .wafer import fred_fabric, wafer_mesh

__all__ = ["fat_tree", "fred_fabric", "from_edges", "fully_connected", "mesh", "ring", "stack", "switch", "torus",
           "wafer_mesh"]
