"""Topologies: who is wired to whom, with per-link bandwidth and latency, and routing.

Build one from a spec string (`parse_topology("torus:8x8", "400Gbps", "100ns")`), from a
family's typed parameters (`build_topology("torus", dims=(8, 8), bandwidth="400Gbps")`), from a
config value (`topology_from_config({"family": "torus", "dims": [8, 8]}, ...)`) or by calling a
builder; all give the same `Topology`. `FAMILIES` lists the families and their parameter models.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

__all__ = ["FAMILIES", "Topology", "TopologyFamily", "build_topology", "fat_tree", "fred_fabric", "from_edges",
           "fully_connected", "mesh", "parse_topology", "ring", "stack", "switch", "topology_from_config", "torus",
           "wafer_mesh"]

# lazy (PEP 562): `fabricsim.topology.defaults` (the CLI's defaults) must not pull in every builder,
# pydantic and scipy; the names below are imported on first use
__getattr__, __dir__ = lazy_exports(__name__, {
    "from_edges": ".builders.direct", "fat_tree": ".builders.fat_tree", "fred_fabric": ".builders.fred",
    "fully_connected": ".builders.fully_connected", "mesh": ".builders.mesh", "ring": ".builders.ring",
    "stack": ".builders.stack", "switch": ".builders.switch", "torus": ".builders.torus",
    "wafer_mesh": ".builders.wafer", "TopologyFamily": ".family", "Topology": ".graph", "FAMILIES": ".spec",
    "build_topology": ".spec", "parse_topology": ".spec", "topology_from_config": ".spec",
})

if TYPE_CHECKING:  # what the names are, for type checkers and readers
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
