"""Optimization on top of the public surfaces: TopoOpt (topology, routing and strategy)."""
