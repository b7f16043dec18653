"""Topology builders, one file per family: the builder function, the family's typed parameters,
its spec-string parser and its `FAMILY` descriptor (registered in `topology/spec.py`).

    ring.py  fully_connected.py  switch.py  mesh.py  torus.py  stack.py   (all built by `stack`)
    fat_tree.py  wafer.py  fred.py  direct.py (`from_edges`)  circulant.py (TopoOpt's ring jumps)
    dgx.py (GPU nodes on a scale-out fabric; its presets in `topology/presets.py`)

The builder functions are re-exported by `fabricsim.topology`; this package does not re-export
them, so `from .builders import ring` names the module.
"""
