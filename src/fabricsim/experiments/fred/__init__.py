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
Two compute settings: the NPU as stated, and ONE speed factor on it inferred from ONE published
result (Transformer-17B's Fred-C speedup; `calibrate`), with which every other figure is
predicted. The run ends with the paper's headline figures beside ours (`headline`).

Modules: `config` (the file and the systems), `comm` ((a) and (b)), `training` ((c) and (d)),
`points` (points, evaluate, summarize), `report` (result, files, tables), `plots` (figures),
`calibrate` (the one factor), `headline` (the headline figures and the causes of misses).
"""

from __future__ import annotations

from pathlib import Path

from ..base import Experiment
from .comm import MicroPoint, MicroRow, TrafficPoint, TrafficRow, microbenchmark, traffic
from .config import DEFAULT_OUT, DIMENSIONS, FredConfig, load_config, parse_strategy
from .headline import headlines
from .plots import write_plots
from .points import FredPoint, evaluate, label, points, summarize
from .report import Reproduction, print_report, to_json, write_outputs
from .training import (
    E2ERow,
    SweepPoint,
    SweepRow,
    SweepSummary,
    TrainPoint,
    end_to_end,
    summarize_sweep,
    sweep_point,
    train_config,
)

EXPERIMENT = Experiment(
    name="fred",
    summary="FRED (ISCA'25): the wafer mesh vs FRED's fabric (Fred-A..D), ours beside the paper's.",
    quick_help="the CI subset (config: quick)",
    load_config=load_config, points=points, evaluate=evaluate, summarize=summarize,
    write=write_outputs, render=print_report, to_json=to_json, default_out=DEFAULT_OUT, label=label,
    headlines=headlines,
)


def run(cfg: FredConfig, quick: bool = False, progress=None, map_fn=map) -> Reproduction:
    """Every measurement evaluated through `map_fn` and summarized.

    Parameters
    ----------
    cfg : FredConfig
    quick : bool
        The CI subset.
    progress : callable, optional
        `progress(done, total, label)` as points finish.
    map_fn : callable
        A map (builtin `map`, a process pool's `map`).

    Returns
    -------
    Reproduction
    """
    from ..base import run_experiment

    return run_experiment(EXPERIMENT, cfg, quick, map_fn, progress)


def reproduce(config: str | Path | None = None, out: str | Path | None = None, quick: bool = False,
              json_out: bool = False, con=None, progress=None) -> Reproduction:
    """What `fabricsim reproduce fred` does (`experiments.base.reproduce` with this study).

    Parameters
    ----------
    config : str or Path, optional
        The config file (default configs/fred.yaml).
    out : str or Path, optional
        Output folder (default out/fred).
    quick : bool
        The CI subset.
    json_out : bool
        Print JSON instead of tables.
    con : rich Console, optional
        Where the tables go (default stdout).
    progress : callable, optional
        `progress(done, total, label)` as points finish (`fabricsim.progress`).

    Returns
    -------
    Reproduction
    """
    from ..base import reproduce as run_study

    return run_study(EXPERIMENT, config, out, quick, json_out, con, progress)


__all__ = ["DEFAULT_OUT", "DIMENSIONS", "EXPERIMENT", "E2ERow", "FredConfig", "FredPoint", "MicroPoint", "MicroRow",
           "Reproduction", "SweepPoint", "SweepRow", "SweepSummary", "TrafficPoint", "TrafficRow", "TrainPoint",
           "end_to_end", "evaluate", "headlines", "load_config", "microbenchmark", "parse_strategy", "points", "print_report",
           "reproduce", "run", "summarize", "summarize_sweep", "sweep_point", "to_json", "traffic", "train_config",
           "write_outputs", "write_plots"]
