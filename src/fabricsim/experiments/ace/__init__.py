"""Reproduce ACE (Rashidi et al., "Enabling Compute-Communication Overlap in Distributed Deep
Learning Training Platforms", ISCA'21) with fabricsim, from `configs/ace.yaml` (every parameter,
its source or ASSUMPTION, the paper's numbers).

ResNet-50, GNMT (data parallel) and DLRM (hybrid: embedding all-to-all, data-parallel MLPs) on
tori and switches of several sizes, under each endpoint policy: NPU-driven baselines (a compute-
and a communication-favouring split, no overlap), ideal, and ACE. Per run: iteration time, achieved
network bandwidth and its utilization, memory bandwidth used by communication, compute slowdown;
ACE's speedup over the best baseline beside the paper's, its memory-bandwidth reduction and
utilization gain; the sensitivity grid of the NPU-driven split.

Modules: `config` (the file; every section a training-config section), `points` (points,
evaluate, summarize), `batch` (the samples-per-NPU sensitivity), `report` (result, files, tables),
`verdict` (the paper's headline figures beside ours, each miss with its cause), `plots` (figures).
"""

from __future__ import annotations

from ..base import Experiment
from .batch import BatchPoint, BatchSummary
from .config import DEFAULT_OUT, AceConfig, endpoint_of, load_config, train_config
from .plots import write_plots
from .points import (
    Headline,
    RunPoint,
    RunRow,
    SplitPoint,
    SplitRow,
    SystemSummary,
    WorkloadSummary,
    evaluate,
    label,
    points,
    summarize,
)
from .report import Reproduction, print_report, to_json, write_outputs
from .verdict import headlines

EXPERIMENT = Experiment(
    name="ace",
    summary="ACE (ISCA'21): NPU-driven collectives vs the ACE endpoint engine, ours beside the paper's.",
    quick_help="the CI subset (config: quick)",
    load_config=load_config, points=points, evaluate=evaluate, summarize=summarize,
    write=write_outputs, render=print_report, to_json=to_json, default_out=DEFAULT_OUT, label=label,
    headlines=headlines,
)


__all__ = ["DEFAULT_OUT", "EXPERIMENT", "AceConfig", "BatchPoint", "BatchSummary", "Headline", "Reproduction", "RunPoint",
           "RunRow", "SplitPoint", "SplitRow", "SystemSummary", "WorkloadSummary", "endpoint_of", "evaluate", "headlines",
           "label", "load_config", "points", "print_report", "summarize", "to_json", "train_config", "write_outputs",
           "write_plots"]
