"""The result of a simulated training run: task times, communication pieces, and the breakdown
of every NPU's time into compute, exposed communication per category and idle time.

The breakdown counts, per NPU, time with compute running as compute; time with no compute but
communication of some category active as that category's exposed communication (the highest-
priority category when several are active); the rest (pipeline bubbles, waiting for a peer) as
idle. The parts sum to the makespan.

Iterations: iteration i ends when the last task of iterations 0..i has ended (`iteration_ends`);
its window is the time from the end of iteration i-1 (0 for the first) to its end, so the windows
tile the run and their lengths are the iteration times. The per-iteration breakdown
(`iteration_split`) applies the rule above inside each window (a task that straddles a window edge
counts in both, by time). The first iteration carries the warm-up (pipeline fill, no previous
iteration's tail to overlap); the last carries the cool-down (no next iteration overlaps its end or
competes with it: DLRM on 16 NPUs runs 666.5, 591.1, 591.1, 525.2 us). The steady state is
therefore the mean of the iterations in between (`steady_state`, 3 or more iterations), and the
headline (`headline`) is the steady state, else the last iteration (the first with 1 iteration).

The rule itself (`breakdown`, `split_time`) is `engine.timesplit`, importable from here as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..system.model import System
from ..vocab import CATEGORIES, PHASES, TaskKind
from ..workload.graph import WorkloadGraph
from .timesplit import BREAKDOWN, TaskSeconds, split_time
from .timesplit import breakdown  # noqa: F401  # re-exported: the engines import it from here


@dataclass(frozen=True, eq=False)
class IterationSplit:
    """Every NPU's time, split per iteration window (module doc).

    Parameters
    ----------
    edges : float array
        Window edges, s: 0, then the end of each iteration (n_iterations + 1 values).
    per_npu : float array
        [iteration, NPU, component] seconds, components in `BREAKDOWN` order; per iteration and
        NPU they sum to the window's length.
    tasks : TaskSeconds
        The seconds each task accounts for in each window (`split_time`).
    """

    edges: np.ndarray
    per_npu: np.ndarray
    tasks: TaskSeconds


@dataclass(frozen=True, eq=False)
class Period:
    """Iterations `first..last` (0-based, inclusive), each figure per iteration (their mean).

    Parameters
    ----------
    label : str
        What the period is, iterations numbered from 1: "iteration 1 (first: warm-up included)",
        "steady state (iterations 2-4)", "iteration 5 (last: cool-down included)".
    first, last : int
        The iterations, 0-based.
    time_s : float
        Mean iteration time, s.
    per_npu : dict
        Component (`BREAKDOWN`) -> per-NPU seconds per iteration; per NPU they sum to `time_s`.
    """

    label: str
    first: int
    last: int
    time_s: float
    per_npu: dict = field(default_factory=dict)

    def mean(self) -> dict[str, float]:
        """Mean over NPUs of each component, s per iteration."""
        return {k: float(v.mean()) for k, v in self.per_npu.items()}

    def max(self) -> dict[str, float]:
        """Max over NPUs of each component, s per iteration."""
        return {k: float(v.max()) for k, v in self.per_npu.items()}

    def stages(self, stage: np.ndarray) -> dict[int, dict[str, float]]:
        """Pipeline stage -> the mean over its NPUs of each component, s per iteration.

        Parameters
        ----------
        stage : int array
            Pipeline stage of each NPU (`WorkloadGraph.stage`).

        Returns
        -------
        dict
        """
        return {int(s): {k: float(v[stage == s].mean()) for k, v in self.per_npu.items()} for s in np.unique(stage)}


@dataclass(frozen=True, eq=False)
class TrainResult:
    """A simulated training run (module doc).

    Parameters
    ----------
    graph : WorkloadGraph
        The tasks that ran.
    system : System
        The NPU, endpoint policy and scheduling they ran on.
    start, end : float arrays
        Start and end of every task, s (indexed by task id).
    piece_task, piece_start, piece_end : arrays
        Communication pieces (a wave of a collective's chunks, or a whole communication task):
        the task id, its start and its end, s.
    breakdown : dict
        Component name (`BREAKDOWN`) -> per-NPU seconds over the whole run; per NPU the
        components sum to the makespan.
    events : int
        Events the engine processed.
    """

    graph: WorkloadGraph
    system: System
    start: np.ndarray  # per task, s
    end: np.ndarray  # per task, s
    piece_task: np.ndarray  # communication pieces: task, start, end
    piece_start: np.ndarray
    piece_end: np.ndarray
    breakdown: dict = field(default_factory=dict)  # name -> per-NPU seconds (sums to makespan)
    events: int = 0

    @property
    def makespan(self) -> float:
        """When the last task ended: the whole run, all iterations, s."""
        return float(np.nanmax(self.end)) if len(self.end) else 0.0

    @property
    def iteration_ends(self) -> np.ndarray:
        """When each iteration's last task ended (non-decreasing), s."""
        it = self.graph.iteration
        out = np.zeros(self.graph.n_iterations)
        np.maximum.at(out, it, self.end)
        return np.maximum.accumulate(out)

    @property
    def iteration_times(self) -> np.ndarray:
        """Length of each iteration: the gap between consecutive `iteration_ends`, s."""
        ends = self.iteration_ends
        return np.diff(np.concatenate([[0.0], ends]))

    @property
    def iteration_time(self) -> float:
        """Mean time per iteration over the whole run, warm-up included (= makespan / iterations), s.
        Reports use `headline().time_s` (the steady state when there is one)."""
        n = self.graph.n_iterations
        return self.makespan / n if n else 0.0

    def mean_breakdown(self) -> dict[str, float]:
        """Average over NPUs of each component over the whole run; they sum to the makespan.

        Returns
        -------
        dict
            Component name (`BREAKDOWN`) -> seconds.
        """
        return {k: float(v.mean()) for k, v in self.breakdown.items()}

    def stage_breakdown(self) -> dict[int, dict[str, float]]:
        """Pipeline stage -> the mean over its NPUs of each component over the whole run.

        Returns
        -------
        dict
            Stage -> {component name -> seconds}.
        """
        st = self.graph.stage
        return {int(s): {k: float(v[st == s].mean()) for k, v in self.breakdown.items()} for s in np.unique(st)}

    def compute_total(self, npu: int) -> float:
        """Sum of the durations of the compute tasks of one NPU.

        Parameters
        ----------
        npu : int
            NPU id.

        Returns
        -------
        float
            Seconds.
        """
        g = self.graph
        m = (g.kind == TaskKind.COMPUTE) & (g.npu == npu)
        return float((self.end[m] - self.start[m]).sum())

    @cached_property
    def iteration_split(self) -> IterationSplit:
        """Each NPU's time per iteration window, and each task's share of it (module doc).

        Returns
        -------
        IterationSplit
            Seconds; computed once per result.
        """
        edges = np.concatenate([[0.0], self.iteration_ends])
        per_npu, tasks = split_time(self.graph, self.start, self.end, self.piece_task, self.piece_start,
                                    self.piece_end, self.system.scheduling.priorities, edges, with_tasks=True)
        return IterationSplit(edges, per_npu, tasks)

    def period(self, first: int, last: int, label: str) -> Period:
        """Iterations `first..last` (0-based, inclusive), per iteration (module doc).

        Parameters
        ----------
        first, last : int
            Iterations, 0 <= first <= last < n_iterations.
        label : str
            What the period is called in reports.

        Returns
        -------
        Period
            Mean iteration time and per-NPU components, s per iteration.
        """
        sp = self.iteration_split
        n = last - first + 1
        mean = sp.per_npu[first:last + 1].sum(axis=0) / n
        time_s = float(sp.edges[last + 1] - sp.edges[first]) / n
        return Period(label, first, last, time_s, {k: mean[:, i] for i, k in enumerate(BREAKDOWN)})

    def first_iteration(self) -> Period:
        """Iteration 1, warm-up included, s."""
        only = " (the only one: warm-up included)" if self.graph.n_iterations == 1 else " (first: warm-up included)"
        return self.period(0, 0, "iteration 1" + only)

    def last_iteration(self) -> Period:
        """The last iteration (nothing overlaps its end), s."""
        n = self.graph.n_iterations
        return self.first_iteration() if n == 1 else self.period(n - 1, n - 1, f"iteration {n} (last: cool-down included)")

    def steady_state(self) -> Period | None:
        """Mean of the iterations after the first and before the last (None with fewer than 3
        iterations), s per iteration."""
        n = self.graph.n_iterations
        if n < 3:
            return None
        its = "iteration 2" if n == 3 else f"iterations 2-{n - 1}"
        return self.period(1, n - 2, f"steady state ({its})")

    def headline(self) -> Period:
        """The figure a report leads with: the steady state, else the last iteration (module doc)."""
        return self.steady_state() or self.last_iteration()

    @property
    def model_flop_per_iteration(self) -> float | None:
        """Model FLOPs of one iteration (mean over the run), FLOP; None when the workload does not
        know them.

        The sum of the FLOPs of the graph's compute tasks divided by the iterations: for the zoo
        models every layer's forward and backward (input-gradient + weight-gradient, each equal to
        the forward for matmul/conv layers) FLOPs for the whole global batch, a multiply-add
        counted as 2 (`workload.models`); for a transformer that is 3 x (2 x block params x seq +
        4 x seq^2 x h) per block and sequence plus 3 x 2 x seq x h x vocab for the head, about
        6 x params x tokens. Recomputed forwards (phase "recompute") are hardware FLOPs, not model
        FLOPs (`hardware_flop_per_iteration` counts them). A folded graph's FLOPs count every NPU
        it stands for. Unknown (None) when a compute task has a fixed duration and no FLOPs
        (ASTRA-sim text workloads, traces without `num_ops`).
        """
        return self._flops(False, 0, self.graph.n_iterations - 1)

    @property
    def hardware_flop_per_iteration(self) -> float | None:
        """FLOPs the NPUs execute per iteration (mean over the run), FLOP: the model FLOPs plus
        recomputed forwards (None as for `model_flop_per_iteration`)."""
        return self._flops(True, 0, self.graph.n_iterations - 1)

    @property
    def tokens_per_iteration(self) -> int | None:
        """Tokens one iteration trains on, tokens: the global batch (sequences) x the sequence
        length, for a transformer whose graph records both (`graph.meta["global_batch"]` and
        `graph.meta["seq"]`, set by `train.graph_of`); None otherwise (other models, ASTRA-sim
        text workloads, Chakra traces, graphs built by hand without them)."""
        b, s = self.graph.meta.get("global_batch"), self.graph.meta.get("seq")
        return None if b is None or s is None else int(b) * int(s)

    def _flops(self, with_recompute: bool, first: int, last: int) -> float | None:
        """FLOPs per iteration of iterations `first..last` (0-based, inclusive), FLOP; None where
        a compute task has a duration and no FLOPs, or there are no iterations."""
        g = self.graph
        comp = g.kind == TaskKind.COMPUTE
        fixed_blind = comp & ~np.isnan(g.duration) & (g.duration > 0) & (g.flops <= 0)
        if g.n_iterations == 0 or last < first or fixed_blind.any():
            return None
        comp &= (g.iteration >= first) & (g.iteration <= last)
        if not with_recompute:
            comp &= g.phase != PHASES.index("recompute")
        return float(g.flops[comp].sum()) * g.copies / (last - first + 1)

    def throughput(self, period: Period) -> dict:
        """FLOPs, FLOP rates, utilizations and token rate of a period, per iteration.

        Two FLOP counts: **model** FLOPs (the forward and backward the model needs, no recompute:
        PaLM's MFU, Chowdhery et al. 2022) and **hardware** FLOPs (model FLOPs plus recomputed
        forwards: what the NPUs execute; Korthikanti et al. 2022 report both, Table 5). With
        T = the period's iteration time, N = NPUs of the job, P = one NPU's peak FLOP/s (peak,
        not peak x efficiency):

        - `model_flop_per_iteration`, `hardware_flop_per_iteration`: FLOP, the FLOPs of the
          period's iterations per iteration;
        - `model_tflop_per_s_per_npu` = model FLOPs / (T x N) / 1e12 and
          `hardware_tflop_per_s_per_npu` = hardware FLOPs / (T x N) / 1e12: TFLOP/s per NPU;
        - `mfu` = model FLOPs / (T x N x P), `hfu` = hardware FLOPs / (T x N x P): fractions;
        - `tokens_per_iteration` (`tokens_per_iteration`), `tokens_per_s` = tokens / T and
          `tokens_per_s_per_npu` = tokens / (T x N): tokens, tokens/s;
        - `achieved_per_npu_tflop_per_s`: TFLOP/s, the same value as `model_tflop_per_s_per_npu`
          (the name summary.json has always had; kept for its readers).

        FLOP figures are None where the FLOPs are unknown (`model_flop_per_iteration`), token
        figures where the tokens are (`tokens_per_iteration`), rates where T is 0.

        Parameters
        ----------
        period : Period
            The iterations (`headline`, `first_iteration`, `steady_state`, `last_iteration`).

        Returns
        -------
        dict
            The keys above, in their units (FLOP, TFLOP/s, fraction, tokens, tokens/s) or None.
        """
        t, n, peak = period.time_s, self.graph.real_npus, self.system.npu.peak_flops
        model = self._flops(False, period.first, period.last)
        hardware = self._flops(True, period.first, period.last)
        tokens = self.tokens_per_iteration

        def per_npu_s(x):  # a per-iteration amount per NPU and second
            return None if x is None or t <= 0 else x / (t * n)

        m, h, tok = per_npu_s(model), per_npu_s(hardware), per_npu_s(tokens)
        return {"model_flop_per_iteration": model, "hardware_flop_per_iteration": hardware,
                "model_tflop_per_s_per_npu": None if m is None else m / 1e12,
                "hardware_tflop_per_s_per_npu": None if h is None else h / 1e12,
                "mfu": None if m is None else m / peak, "hfu": None if h is None else h / peak,
                "tokens_per_iteration": tokens, "tokens_per_s": None if tok is None else tok * n,
                "tokens_per_s_per_npu": tok,
                "achieved_per_npu_tflop_per_s": None if m is None else m / 1e12}

    def summary(self) -> dict:
        """A JSON-ready dict; every time is per iteration unless its name says otherwise (s).

        Keys: `npus`, `tasks`, `iterations`, `events`; `iteration_time_s` (the headline: the
        steady state with 3+ iterations, else the last iteration) and `iteration_time_basis`
        (which, in words); `first_iteration_time_s`, `steady_state_iteration_time_s` (None with
        fewer than 3 iterations), `last_iteration_time_s`, `iteration_times_s` (each iteration);
        `total_s` (the whole run, all iterations); `breakdown_mean_s`, `breakdown_max_s` (over
        NPUs), `exposed_comm_mean_s` and `stages` of the headline; `npu_peak_flop_per_s`
        (FLOP/s); the headline's `throughput` (model and hardware FLOPs per iteration, their
        TFLOP/s per NPU, `mfu`, `hfu`, tokens per iteration, per s and per s and NPU,
        `achieved_per_npu_tflop_per_s`; None where unknown); `first_iteration`, `steady_state`
        (None with fewer than 3 iterations) and `last_iteration`: the same figures for each period.
        """
        g = self.graph
        first, steady, last = self.first_iteration(), self.steady_state(), self.last_iteration()
        head = steady or last
        return {
            "npus": g.real_npus,
            "simulated_npus": g.n_npus,  # fewer than npus when identical replicas were folded (engine.fold)
            "tasks": len(g),
            "iterations": g.n_iterations,
            "events": self.events,
            "iteration_time_s": head.time_s,
            "iteration_time_basis": head.label,
            "first_iteration_time_s": first.time_s,
            "steady_state_iteration_time_s": steady.time_s if steady else None,
            "last_iteration_time_s": last.time_s,
            "iteration_times_s": [float(x) for x in self.iteration_times],
            "total_s": self.makespan,
            **self._period_figures(head),
            "npu_peak_flop_per_s": self.system.npu.peak_flops,
            **self.throughput(head),
            "first_iteration": self._period_block(first),
            "steady_state": self._period_block(steady) if steady else None,
            "last_iteration": self._period_block(last),
        }

    def _period_block(self, p: Period) -> dict:
        return {"iterations": [p.first + 1, p.last + 1], "iteration_time_s": p.time_s, **self._period_figures(p),
                **self.throughput(p)}

    def _period_figures(self, p: Period) -> dict:
        mean = p.mean()
        return {"breakdown_mean_s": mean, "breakdown_max_s": p.max(),
                "exposed_comm_mean_s": float(sum(mean[c] for c in CATEGORIES)),
                "stages": {str(k): v for k, v in p.stages(self.graph.stage).items()}}

