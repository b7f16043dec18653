"""Reproduce TopoOpt (Wang et al., "TopoOpt: Co-optimizing Network Topology and Parallelization
Strategy for Distributed Training Jobs", NSDI'23) with fabricsim, from `configs/topoopt.yaml`
(every parameter, its source or ASSUMPTION, the paper's numbers).

Six models on 128 servers of 4 GPUs, d = 4 and 8 interfaces at several link bandwidths: TopoOpt
(strategy search alternating with TopologyFinder) against an ideal switch, full-bisection
fat-trees at equal and at cost-equivalent bandwidth, a 2:1 oversubscribed fat-tree, a random
expander and a reconfigured OCS, each with its own strategy search; the training engine's
iteration time per fabric, TopoOpt's speedup beside the paper's, the cost table and the spec's
worked example.

Modules: `config` (the file), `points` (points, evaluate), `report` (summary, files, tables),
`plots` (figures), `example` (the worked example).
"""

from __future__ import annotations

from ..base import Experiment
from .config import DEFAULT_OUT, FABRICS, TopoOptConfig, load_config
from .example import toy_demand, worked_example
from .points import FabricPoint, FabricRow, algorithms_for, evaluate, label, points, workload_of
from .report import Reproduction, headlines, print_report, summarize, to_json, write_outputs

EXPERIMENT = Experiment(
    name="topoopt",
    summary="TopoOpt (NSDI'23): co-optimized direct-connect topology and strategy vs fat-trees of similar cost.",
    quick_help="the CI subset (config: quick): DLRM and ResNet-50 on 16 servers at d=4, 100 Gb/s, four fabrics; "
               "and the paper's two demo points at full size (128 servers), so the demo's figures are compared",
    load_config=load_config, points=points, evaluate=evaluate, summarize=summarize,
    write=write_outputs, render=print_report, to_json=to_json, default_out=DEFAULT_OUT, label=label,
    headlines=headlines,
)

__all__ = ["DEFAULT_OUT", "EXPERIMENT", "FABRICS", "FabricPoint", "FabricRow", "Reproduction", "TopoOptConfig",
           "algorithms_for", "headlines", "evaluate", "label", "load_config", "points", "print_report", "summarize", "to_json",
           "toy_demand", "workload_of", "worked_example", "write_outputs"]
