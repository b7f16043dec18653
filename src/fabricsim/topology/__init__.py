"""Topologies: who is wired to whom, with per-link bandwidth and latency, and routing.

Build one from a spec string (`parse_topology("torus:8x8", "400Gbps", "100ns")`), from a
family's typed parameters (`build_topology("torus", dims=(8, 8), bandwidth="400Gbps")`), from a
config value (`topology_from_config({"family": "torus", "dims": [8, 8]}, ...)`) or by calling a
builder; all give the same `Topology`. `FAMILIES` lists the families and their parameter models.
"""

from .builders.direct import from_edges
from .builders.fat_tree import fat_tree
from .builders.fred import fred_fabric
from .builders.fully_connected import fully_connected
from .builders.mesh import mesh
from .builders.ring import ring
from .builders.stack import stack
from .builders.switch import switch
from .builders.torus import torus
from .builders.wafer import wafer_mesh
from .family import TopologyFamily
from .graph import Topology
from .spec import FAMILIES, build_topology, parse_topology, topology_from_config

__all__ = ["FAMILIES", "Topology", "TopologyFamily", "build_topology", "fat_tree", "fred_fabric", "from_edges",
           "fully_connected", "mesh", "parse_topology", "ring", "stack", "switch", "topology_from_config", "torus",
           "wafer_mesh"]
