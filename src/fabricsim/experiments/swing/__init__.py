"""Reproduce Swing (De Sensi et al., NSDI'24) with fabricsim's analytical network model.

Everything the paper fixes comes from `configs/swing.yaml` (spec: docs/specs/swing.md): torus
shapes, link bandwidth and latency, the NIC of the paper's SST artifact (injection bandwidth,
packet size, per-packet overhead), the one labelled runtime the per-step overhead alpha is inferred
from, vector sizes, the algorithms compared, and the paper's numbers to compare against.

Definitions (the paper's):
- goodput = vector size / runtime, in Gb/s (bits);
- Swing's curve is the better of Swing-L and Swing-B at each size, recursive doubling's "(D)"
  the better of recursive doubling-L and Rabenseifner-B;
- gain of Swing vs the best other algorithm: T_best/T_swing - 1 when Swing is faster, else
  -(T_swing/T_best - 1) (percent);
- deficiencies (Table 2), all in units of the vector size n: Lambda = steps / log2 p; Psi = sum
  over steps of the most bytes any node puts on one port, divided by the optimum 1/D; Xi = sum over
  steps of the most bytes on any link / the same sum of port bytes. So the bandwidth time is
  (n/D) beta Psi Xi exactly in this model.

Modules: `config` (the resolved config), `schema` (the file's pydantic models), `resolve` (cross
references), `calibrate` (the NIC's injection bound, alpha from one label), `points` (points,
evaluate, summarize, run), `results` (the paper's arithmetic, result dataclasses), `tables` (ours
beside the paper's numbers), `report` (files, printed tables), `plots` (figures), `headline` (the
headline figures `reproduce` ends with).
"""

from pathlib import Path

from ..base import Experiment
from .calibrate import injection_Bps, step_overhead
from .config import (
    PAPER_ALGORITHMS,
    Entry,
    PaperGain,
    PaperGoodput,
    Shape,
    SwingConfig,
    Table2Row,
    Variant,
    eval_formula,
    load_config,
    parse_config,
    size_label,
)
from .headline import headlines
from .plots import write_plots
from .points import CasePoint, CaseRows, Deficiency, deficiency, evaluate, points, run, summarize
from .report import print_report, to_json, write_outputs
from .results import (
    CaseResult,
    Curve,
    DeficiencyRow,
    GainRow,
    GoodputRow,
    LatencyRow,
    PeakRow,
    Reproduction,
    bandwidth_label,
    gain_pct,
    goodput_gbps,
    speedup_of_gain,
)
from .tables import goodput_table, summary

DEFAULT_OUT = Path("out") / "swing"


def _label(point: CasePoint) -> str:
    return point.label


EXPERIMENT = Experiment(
    name="swing",
    summary="Swing (NSDI'24): gains over the best other all-reduce on tori, ours beside the paper's.",
    quick_help="the CI subset of tori (config: quick)",
    load_config=load_config, points=points, evaluate=evaluate, summarize=summarize,
    write=write_outputs, render=print_report, to_json=to_json, default_out=DEFAULT_OUT, label=_label,
    headlines=headlines,
)


def reproduce(config: str | Path | None = None, out: str | Path | None = None, quick: bool = False,
              json_out: bool = False, con=None, progress=None) -> Reproduction:
    """What `fabricsim reproduce swing` does (`experiments.base.reproduce` with this study).

    Parameters
    ----------
    config : str or Path, optional
        The config file (default configs/swing.yaml).
    out : str or Path, optional
        Output folder (default out/swing).
    quick : bool
        The CI subset of tori.
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


__all__ = [
    "CasePoint", "CaseResult", "CaseRows", "Curve", "DEFAULT_OUT", "Deficiency", "DeficiencyRow", "EXPERIMENT",
    "Entry", "GainRow", "GoodputRow", "LatencyRow", "PAPER_ALGORITHMS", "PaperGain", "PaperGoodput", "PeakRow",
    "Reproduction", "Shape", "SwingConfig", "Table2Row", "Variant", "bandwidth_label", "deficiency",
    "eval_formula", "evaluate", "gain_pct", "goodput_gbps", "goodput_table", "headlines", "injection_Bps",
    "load_config", "parse_config", "points", "print_report", "reproduce", "run", "size_label",
    "speedup_of_gain", "step_overhead", "summarize", "summary", "to_json", "write_outputs", "write_plots"
]
