"""Lowering a collective to flows: the flow model's plans (`plans`: chain, orbits, rings, serial
streams, every transfer), each a way to turn a placed schedule into the flows the simulator
(`network.flow`) runs, and what they share (`dataflow`: a schedule's flows and their dependencies;
`streams`: in-network streams; `injection`: the endpoints' limits; `quotient` and `symmetry`: orbits
of a translation group; `chain`, `rings`). The analytical model uses `dataflow` and `streams` for
streaming schedules; nothing here imports the analytical model.
"""
