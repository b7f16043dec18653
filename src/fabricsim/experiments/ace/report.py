"""The ACE reproduction's report: the result, its files (JSON, CSV; figures in `plots.py`) and
printed tables, ours beside the paper's with the ratio."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ...units import format_bandwidth, format_time
from ..base import or_dash, study_table
from .batch import BatchSummary
from .plots import write_plots
from .points import Headline, RunRow, SplitRow, SystemSummary, WorkloadSummary


@dataclass(frozen=True)
class Reproduction:
    """The whole reproduction.

    Parameters
    ----------
    config : str
        The config's name.
    quick : bool
        The CI subset.
    runs : tuple of RunRow
        Every (workload, system, policy).
    systems : tuple of SystemSummary
        ACE against the best baseline per (workload, system).
    workloads : tuple of WorkloadSummary
        Per workload beside the paper.
    headline : Headline
    sensitivity : tuple of SplitRow
    policies : dict
        Policy name -> the endpoint it resolved to (presets' values shown).
    ace : str
        The name of ACE's policy.
    baselines : tuple of str
    elapsed_s : float
        Wall time of the run, s.
    batch_sensitivity : tuple of BatchSummary
        ACE's speedup against a workload's samples per NPU (`batch`), empty without one.
    """

    config: str
    quick: bool
    runs: tuple[RunRow, ...]
    systems: tuple[SystemSummary, ...]
    workloads: tuple[WorkloadSummary, ...]
    headline: Headline
    sensitivity: tuple[SplitRow, ...]
    policies: dict
    ace: str
    baselines: tuple[str, ...]
    elapsed_s: float = 0.0
    batch_sensitivity: tuple[BatchSummary, ...] = ()

    def to_dict(self) -> dict:
        """Everything as JSON-able data (times in s, bandwidths in bytes/s).

        Returns
        -------
        dict
        """
        return {"config": self.config, "quick": self.quick, "policies": self.policies, "ace": self.ace,
                "baselines": list(self.baselines), "runs": [asdict(r) for r in self.runs],
                "systems": [asdict(s) for s in self.systems],
                "workloads": [dict(asdict(w), ratio_mean=w.ratio_mean, ratio_max=w.ratio_max) for w in self.workloads],
                "headline": dict(asdict(self.headline),
                                 memory_reduction_all_reduce_mean=self.headline.memory_reduction_all_reduce_mean),
                "sensitivity": [asdict(r) for r in self.sensitivity],
                "batch_sensitivity": [asdict(b) for b in self.batch_sensitivity],
                "elapsed_s": self.elapsed_s}


def to_json(rep: Reproduction) -> dict:
    """The report as JSON-able data (what `--json` prints, less the files).

    Parameters
    ----------
    rep : Reproduction

    Returns
    -------
    dict
    """
    return rep.to_dict()


def write_outputs(rep: Reproduction, out: str | Path) -> list[Path]:
    """Write the reproduction's files.

    Parameters
    ----------
    rep : Reproduction
    out : str or Path
        Created if needed.

    Returns
    -------
    list of Path
        ace.json, runs.csv, speedups.csv, sensitivity.csv, batch_sensitivity.csv and the figures.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "ace.json"]
    files[0].write_text(json.dumps(rep.to_dict(), indent=1))
    tables = {"runs.csv": rep.runs, "speedups.csv": rep.systems, "sensitivity.csv": rep.sensitivity,
              "batch_sensitivity.csv": rep.batch_sensitivity}
    for name, rows in tables.items():
        with open(out / name, "w", newline="") as fh:
            wr = csv.writer(fh)
            if rows:
                keys = list(asdict(rows[0]))
                wr.writerow(keys)
                for r in rows:
                    d = asdict(r)
                    wr.writerow([d[k] for k in keys])
        files.append(out / name)
    files += write_plots(rep, out)
    return files


def print_report(rep: Reproduction, con, files=()) -> None:
    """Print the reproduction's tables, ours beside the paper's numbers with the ratio.

    Parameters
    ----------
    rep : Reproduction
    con : rich Console
    files : sequence of Path
        The files written (listed at the end).
    """
    say = lambda s: con.print(s, highlight=False, markup=False)  # noqa: E731
    say("endpoints: " + "; ".join(f"{k} = {v}" for k, v in rep.policies.items()))
    t = study_table("every run: time per iteration (steady state), where it goes, what communication moved",
               ("workload", "system", "policy", "iteration", "compute", "exposed comm", "net BW/NPU", "util.",
                "mem BW (comm)", "mem/net B", "compute x"))
    for r in rep.runs:
        t.add_row(r.workload, r.system, r.policy, format_time(r.iteration_s), format_time(r.compute_s),
                  format_time(r.exposed_s), format_bandwidth(r.network_bandwidth), or_dash(r.utilization, "{:.3f}"),
                  format_bandwidth(r.memory_bandwidth), or_dash(r.memory_per_network_byte), or_dash(r.compute_slowdown, "{:.3f}"))
    con.print(t)
    t = study_table(f"{rep.ace} against the best baseline ({', '.join(rep.baselines)}) per system",
               ("workload", "system", "NPUs", "best baseline", "speedup", "util. gain", "mem BW reduction",
                "ideal over best"))
    for s in rep.systems:
        t.add_row(s.workload, s.system, str(s.npus), s.best_baseline, or_dash(s.speedup, "{:.3f}"),
                  or_dash(s.utilization_gain), or_dash(s.memory_reduction), or_dash(s.ideal_speedup, "{:.3f}"))
    con.print(t)
    fams = list(dict.fromkeys(k for w in rep.workloads for k in w.by_family))
    t = study_table(f"{rep.ace}'s iteration-time speedup over the best baseline, over the systems",
               ("workload", "mean", "paper", "ratio", "max", "paper", "ratio", *[f"mean, {f}" for f in fams]))
    for w in rep.workloads:
        t.add_row(w.workload, or_dash(w.mean, "{:.3f}"), or_dash(w.paper_mean), or_dash(w.ratio_mean), or_dash(w.max, "{:.3f}"),
                  or_dash(w.paper_max), or_dash(w.ratio_max), *[or_dash(w.by_family.get(f), "{:.3f}") for f in fams])
    con.print(t)
    if rep.batch_sensitivity:
        wl = rep.batch_sensitivity[0].workload
        t = study_table(f"{wl}: {rep.ace}'s speedup over the best baseline against its samples per NPU",
                        ("factor", "samples/NPU", "compute/iteration", "mean", "paper", "ratio", "max", "paper", "ratio"))
        for b in rep.batch_sensitivity:
            t.add_row(f"{b.scale:g}", str(b.batch_per_npu), format_time(b.compute_s), or_dash(b.mean), or_dash(b.paper_mean),
                      or_dash(b.mean / b.paper_mean), or_dash(b.max), or_dash(b.paper_max), or_dash(b.max / b.paper_max))
        con.print(t)
    if rep.sensitivity:
        t = study_table("sensitivity: NPU-driven with each share of units and memory bandwidth given to communication",
                   ("workload", "system", "units", "memory", "iteration", "exposed comm", "compute x", "util."))
        for r in rep.sensitivity:
            t.add_row(r.workload, r.system, f"{r.units:g}", f"{r.memory:g}", format_time(r.iteration_s),
                      format_time(r.exposed_s), or_dash(r.compute_slowdown, "{:.3f}"), or_dash(r.utilization, "{:.3f}"))
        con.print(t)
    for f in files:
        say(f"wrote {f}")
