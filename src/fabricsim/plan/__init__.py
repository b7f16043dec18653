"""`fabricsim plan`: the fastest parallelization of a model on a cluster that fits in memory.

Layers, one way: `plan.schema` (the `search:` section of a plan config and the config itself) ->
`plan.space` (every strategy the search allows, pruned by divisibility, the constraints and the
memory model, before anything is timed) -> `plan.estimate` (a closed-form iteration time per
strategy, milliseconds each) -> `plan.search` (the best K by estimate simulated by the engine on the
sweep layer, ranked; Parquet rows, the best point as a train config). docs/plan.md works an example.
"""
