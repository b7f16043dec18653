"""What a workload's unknown samples per NPU are worth: the batch sensitivity of the ACE reproduction.

The paper's per-NPU batch and sequence length could not be read (spec 2.2), so `configs/ace.yaml`
states an assumption for each workload; `batch_sensitivity` reruns one workload at each factor on
its samples per NPU, on every system of the run and under every policy, and reports ACE's speedup
over the best baseline per factor. For an LSTM the compute per gradient byte is proportional to the
tokens per NPU (samples x sequence length), so a factor on the samples is the same factor on the
sequence length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .config import AceConfig, endpoint_of, scaled_batch, train_config
from .points import RunPoint, RunRow, SystemSummary, compare


@dataclass(frozen=True)
class BatchPoint(RunPoint):
    """A run of the batch sensitivity: a RunPoint whose samples per NPU are `scale` x the workload's.

    Parameters
    ----------
    scale : float
        Factor on the workload's `batch_per_npu`.
    """

    scale: float = 1.0

    @property
    def label(self) -> str:
        """What progress bars show."""
        return f"batch x{self.scale:g} {self.workload} {self.system} {self.policy}"


@dataclass(frozen=True)
class BatchSummary:
    """ACE's speedup over the best baseline with one factor on a workload's samples per NPU.

    Parameters
    ----------
    workload : str
    scale : float
        Factor on the config's samples per NPU (1: the study's own runs).
    batch_per_npu : int
        Samples per NPU.
    compute_s : float
        Compute per iteration alone (the ideal endpoint's, else ACE's), s.
    mean, max : float
        ACE's speedup over the best baseline, mean and maximum over the systems run.
    paper_mean, paper_max : float
        The paper's (over its network sizes).
    """

    workload: str
    scale: float
    batch_per_npu: int
    compute_s: float
    mean: float
    max: float
    paper_mean: float
    paper_max: float


def batch_points(cfg: AceConfig, systems: Sequence[str], iterations: int) -> list[BatchPoint]:
    """The runs of the batch sensitivity: each factor but 1 on every system under every policy.

    Parameters
    ----------
    cfg : AceConfig
    systems : sequence of str
        The systems of this run (the quick subset's under `--quick`).
    iterations : int

    Returns
    -------
    list of BatchPoint
        Empty without a `batch_sensitivity` section.
    """
    sen = cfg.batch_sensitivity
    if sen is None:
        return []
    out = []
    for scale in sen.scales:
        if scale == 1:
            continue  # the study's own runs
        b = scaled_batch(cfg, sen.workload, scale)
        for sys_name in systems:
            for pol in cfg.policies:
                tc = train_config(cfg, sen.workload, sys_name, endpoint_of(cfg, pol), iterations, b)
                out.append(BatchPoint(sen.workload, sys_name, pol, tc, scale))
    return out


def summarize_batches(cfg: AceConfig, pts: Sequence, rows: Sequence,
                      systems: Sequence[SystemSummary]) -> tuple[BatchSummary, ...]:
    """Per factor (1 from the study's own runs): mean and maximum over the systems of ACE's speedup.

    Parameters
    ----------
    cfg : AceConfig
    pts, rows : sequence
        The study's points and `rows[i] = evaluate(pts[i])`.
    systems : sequence of SystemSummary
        The study's own comparisons (factor 1).

    Returns
    -------
    tuple of BatchSummary
        In increasing factor; empty without a `batch_sensitivity` section.
    """
    sen = cfg.batch_sensitivity
    if sen is None:
        return ()
    wl, paper = sen.workload, cfg.workloads[sen.workload].paper
    by_scale: dict[float, dict] = {}
    for p, r in zip(pts, rows):
        if isinstance(p, BatchPoint) and isinstance(r, RunRow):
            by_scale.setdefault(p.scale, {})[(r.workload, r.system, r.policy)] = r
    own = [s for s in systems if s.workload == wl]
    out = []
    for scale in sorted({1.0, *sen.scales}):
        if scale == 1:
            sp = [s.speedup for s in own]
            runs = [r for p, r in zip(pts, rows) if type(p) is RunPoint and r.workload == wl]
        else:
            by = by_scale.get(scale, {})
            names = list(dict.fromkeys(k[1] for k in by))
            sp = [compare(cfg, by, wl, n).speedup for n in names]
            runs = list(by.values())
        if not sp:
            continue
        alone = [r.compute_s for r in runs if r.policy == "ideal"] or [r.compute_s for r in runs if r.policy == cfg.ace]
        out.append(BatchSummary(wl, float(scale), scaled_batch(cfg, wl, scale), float(np.mean(alone)),
                                float(np.mean(sp)), float(np.max(sp)), paper.mean, paper.max))
    return tuple(out)
