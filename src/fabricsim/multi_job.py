"""Several training jobs sharing one fabric: a `fabricsim train` config with `jobs:` instead of
`workload:` (docs/train.md, "Several jobs on one fabric").

Each job is a workload (the fields of `workload:`) on its own NPUs of the one network (`gpus`), under
the one system. How it runs (`run_jobs`):

1. each job's workload graph is built as `train.graph_of` builds one (unfolded: `fold` is off for
   jobs) on its own NPUs 0..n-1, and its memory checked as `train.memory_of` checks one;
2. its local NPU ids are relabelled to its GPUs (`relabel`: compute NPUs, p2p ends, collective
   and io groups), and all jobs' graphs are merged into one graph over the network's NPUs
   (`merge`: tasks concatenated, dependencies, groups, labels and kernels offset);
3. the merged graph is simulated once with the config's network model: *together*. Where the model
   shares links (`flow`), jobs whose traffic crosses the same links slow each other down; the
   analytical models price every collective alone, so there they do not;
4. each job's relabelled graph is simulated alone on the same network: *alone*;
5. per job, its tasks' times in each run are read back onto its own graph (`job_result`), which
   gives its iteration windows, breakdown and throughput exactly as a single-job run reports them.
   slowdown = iteration time together / iteration time alone (headline iterations).

Reports (summary.json with a `jobs` list, the tables `fabricsim train` prints) are in
`fabricsim.report.jobs`.

Times in s, sizes in bytes, as everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .errors import ConfigError
from .jobs_config import _as_job, check_jobs, job_config, job_names, network_npus, parse_gpus  # noqa: F401 (re-exported)
from .vocab import TaskKind

# ---- graphs: relabelled onto the job's GPUs, merged ---------------------------------------------------


def relabel(g, gpus, n_npus: int):
    """`g` (a job's graph on its NPUs 0..n-1) on the network's NPUs: local NPU r becomes `gpus[r]`.

    Parameters
    ----------
    g : WorkloadGraph
        Unfolded (`fold` None), `g.n_npus == len(gpus)`.
    gpus : sequence of int
        Distinct NPU ids of the network.
    n_npus : int
        NPUs of the network.

    Returns
    -------
    WorkloadGraph
        The same tasks (ids, times, dependencies), with compute NPUs, p2p source and destination
        and collective and io groups relabelled; `stage` over the network's NPUs (0 elsewhere).
    """
    gpus = np.asarray(gpus, dtype=np.int64)
    if g.fold is not None or g.n_npus != len(gpus):
        raise ValueError("relabel: an unfolded graph on as many NPUs as gpus")
    npu, peer = g.npu.copy(), g.peer.copy()
    on = npu >= 0
    npu[on] = gpus[npu[on]]
    p2p = g.kind == TaskKind.P2P
    peer[p2p] = gpus[peer[p2p]]
    groups = tuple(tuple(gpus[np.asarray(m, dtype=np.int64)].tolist()) for m in g.groups)
    stage = np.zeros(n_npus, dtype=np.int64)
    stage[gpus] = g.stage
    return replace(g, n_npus=int(n_npus), npu=npu, peer=peer, groups=groups, stage=stage, price_groups=None)


def merge(graphs, names, gpus_of, n_npus: int):
    """One graph of several relabelled graphs on disjoint NPUs (`relabel`), tasks in job order.

    Parameters
    ----------
    graphs : sequence of WorkloadGraph
        Each on the network's `n_npus` NPUs, unfolded.
    names : sequence of str
        Each job's name: labels become `name: label`.
    gpus_of : sequence of int arrays
        Each job's NPUs (disjoint).
    n_npus : int
        NPUs of the network.

    Returns
    -------
    WorkloadGraph
        Job j's task t is task `meta["job_first_task"][j] + t`; `meta["job_of_npu"]` is the job of
        each NPU (-1: none), `meta["jobs"]` the names.
    """
    firsts = np.concatenate([[0], np.cumsum([len(g) for g in graphs])]).astype(np.int64)
    cols = ("kind", "npu", "peer", "duration", "flops", "mem_bytes", "coll", "size", "category", "phase", "iteration")
    arrs = {c: np.concatenate([getattr(g, c) for g in graphs]) for c in cols}
    groups, labels, works, stage = [], [], [], np.zeros(n_npus, dtype=np.int64)
    group, label, work, dep_idx, dep_ptr = [], [], [], [], [np.zeros(1, dtype=np.int64)]
    job_of_npu = np.full(n_npus, -1, dtype=np.int64)
    for j, (g, name, gpus) in enumerate(zip(graphs, names, gpus_of)):
        group.append(np.where(g.group >= 0, g.group + len(groups), -1))
        label.append(g.label + len(labels))
        work.append(np.where(g.work >= 0, g.work + len(works), -1).astype(np.int32))
        dep_idx.append(g.dep_idx + firsts[j])
        dep_ptr.append(g.dep_ptr[1:] + dep_ptr[-1][-1])
        groups.extend(g.groups)
        labels.extend(f"{name}: {x}" for x in g.labels)
        works.extend(g.works)
        job_of_npu[gpus] = j
        stage[gpus] = g.stage[gpus]
    meta = {"model": ", ".join(str(g.meta.get("model", "workload")) for g in graphs),
            "strategy": "; ".join(str(g.meta.get("strategy", "")) for g in graphs),
            "jobs": list(names), "job_first_task": firsts[:-1], "job_of_npu": job_of_npu}
    return type(graphs[0])(int(n_npus), **arrs, group=np.concatenate(group), label=np.concatenate(label),
                           dep_ptr=np.concatenate(dep_ptr), dep_idx=np.concatenate(dep_idx), groups=tuple(groups),
                           labels=tuple(labels), stage=stage, meta=meta, work=np.concatenate(work), works=tuple(works))


def job_result(res, g, first: int):
    """Job's own result from a run of a merged (or relabelled) graph: its tasks' times on its graph.

    Parameters
    ----------
    res : TrainResult
        The run.
    g : WorkloadGraph
        The job's graph on its own NPUs 0..n-1 (before `relabel`).
    first : int
        Its first task's id in the graph that ran.

    Returns
    -------
    TrainResult
        The job's task times (s), communication pieces and breakdown over its own NPUs; iteration
        windows from its own tasks. `events` is the whole run's.
    """
    from .engine.timesplit import breakdown

    end_task = first + len(g)
    start, end = res.start[first:end_task], res.end[first:end_task]
    mine = (res.piece_task >= first) & (res.piece_task < end_task)
    pt, ps, pe = res.piece_task[mine] - first, res.piece_start[mine], res.piece_end[mine]
    bd = breakdown(g, start, end, pt, ps, pe, res.system.scheduling.priorities)
    return type(res)(g, res.system, start, end, pt, ps, pe, bd, res.events)


# ---- the run ------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class JobRun:
    """One job of a several-job run.

    Parameters
    ----------
    name : str
        Its name.
    gpus : int64 array
        Its NPUs in the network, local rank order.
    together, alone : TrainResult
        Its tasks' times (s) on its own graph, with the other jobs running and without them.
    memory : tuple of StageMemory, optional
        Peak memory per pipeline stage (`train.memory_of`), bytes.
    """

    name: str
    gpus: np.ndarray
    together: object
    alone: object
    memory: tuple | None = None

    @property
    def time_together(self) -> float:
        """Headline iteration time with the other jobs running, s."""
        return self.together.headline().time_s

    @property
    def time_alone(self) -> float:
        """Headline iteration time on the same network without the other jobs, s."""
        return self.alone.headline().time_s

    @property
    def slowdown(self) -> float:
        """Together / alone (1.0: the other jobs cost it nothing)."""
        return self.time_together / self.time_alone if self.time_alone > 0 else 1.0

    @property
    def strategy(self) -> str:
        """Its model's strategy (`graph.meta["strategy"]`), or the workload's name."""
        m = self.together.graph.meta
        return str(m.get("strategy") or m.get("model") or "")


@dataclass(frozen=True, eq=False)
class JobsRun:
    """What `run_jobs` returns.

    Parameters
    ----------
    config : TrainConfig
        The config (with `jobs`).
    topology : Topology
        The network.
    result : TrainResult
        The run of all jobs together (the merged graph over the network's NPUs), s.
    jobs : tuple of JobRun
        Per job, in config order.
    notes : tuple of str
        What the run says besides its figures (fold off, link sharing, memory warnings).
    """

    config: object
    topology: object
    result: object
    jobs: tuple
    notes: tuple = ()

    @property
    def title(self) -> str:
        """The config's name, or the jobs' names."""
        n = len(self.jobs)
        return self.config.name or f"{n} job{'s' * (n != 1)}: " + ", ".join(j.name for j in self.jobs)


def run_jobs(cfg, progress=None) -> JobsRun:
    """Run a config's jobs together on its network, then each alone (module doc).

    Parameters
    ----------
    cfg : TrainConfig
        A validated config with `jobs`.
    progress : callable, optional
        `progress(done, total, phase)` (`fabricsim.progress`).

    Returns
    -------
    JobsRun
        Times in s. ConfigErrors name `jobs[i]` for what a job's graph or memory check refuses.
    """
    from .config import errors_in
    from .engine.simulator import simulate
    from .limits import check_limit
    from .progress import report
    from .train import graph_of, memory_of, system_of, system_pricer, topology_of

    report(progress, 0, 0, "building the topology")
    topo, system, names = topology_of(cfg), system_of(cfg), job_names(cfg)
    pricer = system_pricer(cfg, topo, system)
    notes = ["fold: off for jobs (every NPU of every job is simulated, together and alone)"]
    if not pricer.model.shares_links:
        notes.append(f"network model {cfg.network.model} prices each collective alone: jobs whose traffic shares links "
                     "do not slow each other here (model: flow shares them)")
    graphs, placed, gpus_of, memories, total = [], [], [], [], 0
    for i, job in enumerate(cfg.jobs):
        report(progress, i, len(cfg.jobs), f"building job {names[i]}")
        gpus = parse_gpus(job.gpus, f"jobs[{i}].gpus")
        with _as_job(cfg.source, i, names[i]):
            memory, warnings = memory_of(job_config(cfg, i), system)
            g = graph_of(job_config(cfg, i), len(gpus))
        total += len(g)
        with errors_in(cfg.source, "jobs"):
            check_limit("tasks", total, "tasks", "jobs", f"{i + 1} jobs")
        notes += [f"{names[i]}: {w}" for w in warnings]
        graphs.append(g)
        gpus_of.append(np.asarray(gpus, dtype=np.int64))
        memories.append(memory)
        placed.append(relabel(g, gpus, topo.n_npus))
    merged = merge(placed, names, gpus_of, topo.n_npus)
    with errors_in(cfg.source, "network.algorithms"):
        report(progress, 0, len(merged), "simulating the jobs together")
        together = simulate(merged, system, pricer)
        alone = []
        for i, g in enumerate(placed):
            report(progress, i, len(placed), f"simulating {names[i]} alone")
            alone.append(simulate(g, system, pricer))
    firsts = merged.meta["job_first_task"]
    jobs = tuple(JobRun(names[i], gpus_of[i], job_result(together, graphs[i], int(firsts[i])),
                        job_result(alone[i], graphs[i], 0), memories[i]) for i in range(len(graphs)))
    return JobsRun(cfg, topo, together, jobs, tuple(notes))


__all__ = ["JobRun", "JobsRun", "check_jobs", "job_config", "job_names", "job_result", "merge", "network_npus",
           "parse_gpus", "relabel", "run_jobs"]
