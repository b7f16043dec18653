"""Reproduce FRED (Rashidi et al., ISCA'25) with fabricsim: the wafer mesh against FRED's
switch fabric (Fred-A..D), from `configs/fred.yaml` (every parameter, its source, the paper's
numbers).

(a) communication microbenchmarks: all-reduces (and pipeline transfers) of D bytes for every
    group of a dimension at once, on the flow model, in D/(TB/s) beside the paper's values;
(b) traffic per NPU of an all-reduce, in-network vs endpoint, from schedules executed on data;
(c) end-to-end training, weight-stationary (ResNet-152, Transformer-17B) and weight-streaming
    (GPT-3, Transformer-1T), inputs loaded (and prefetched) through the I/O controllers:
    iteration time and its breakdown per system, speedups over the mesh beside the paper's.
(d) the strategy sweep: time and exposed communication per sample, Fred-D against the mesh.

Modules: `config` (the file and the systems), `points` (measurements, evaluate, summarize),
`report` (files, plots, tables).
"""

from __future__ import annotations

from ..base import Experiment
from .config import DEFAULT_OUT, DIMENSIONS, FredConfig, load_config, parse_strategy
from .points import (
    E2ERow,
    FredPoint,
    MicroRow,
    SweepRow,
    SweepSummary,
    TrafficRow,
    end_to_end,
    evaluate,
    microbenchmark,
    points,
    summarize,
    sweep_point,
    traffic,
    train_config,
)
from .report import Reproduction, print_report, to_json, write_outputs, write_plots


def run(cfg: FredConfig, quick: bool = False, progress=None, map_fn=map) -> Reproduction:
    """Every measurement through `map_fn`, summarized (see `experiments.base.run_experiment`)."""
    from ..base import run_experiment

    return run_experiment(EXPERIMENT, cfg, quick, map_fn, progress)


EXPERIMENT = Experiment(
    name="fred",
    summary="FRED (ISCA'25): the wafer mesh vs FRED's fabric (Fred-A..D), ours beside the paper's.",
    quick_help="the CI subset (config: quick)",
    load_config=load_config, points=points, evaluate=evaluate, summarize=summarize,
    write=write_outputs, render=print_report, to_json=to_json, default_out=DEFAULT_OUT,
    label=lambda p: p.label,
)

__all__ = ["DEFAULT_OUT", "DIMENSIONS", "EXPERIMENT", "E2ERow", "FredConfig", "FredPoint", "MicroRow", "Reproduction",
           "SweepRow", "SweepSummary", "TrafficRow", "end_to_end", "evaluate", "load_config", "microbenchmark",
           "parse_strategy", "points", "print_report", "run", "summarize", "sweep_point", "to_json", "traffic",
           "train_config", "write_outputs", "write_plots"]
