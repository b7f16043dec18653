"""The `jobs:` of a `fabricsim train` config, checked when the file is loaded (`TrainConfig`
calls `check_jobs`): each job's GPUs (`parse_gpus`) within the network and apart from the other
jobs', as many as its strategy uses; and the config of one job alone (`job_config`). How the jobs
run together is `fabricsim.multi_job`; this module imports nothing that runs them, so that loading
a config does not import the engine.
"""

from __future__ import annotations

import contextlib

import numpy as np

from .errors import ConfigError

_GPUS_ACCEPTED = ("accepted: NPU ids as a group string (0-7, 0,2,4,6, 0-15:2), a list of NPU ids, or a placement rule "
                  "{first: N, count: M} (consecutive) or {first: N, count: M, stride: S} (every S-th)")


def network_npus(network) -> int:
    """NPUs of a config's network, counted from the topology's parameters without building it.

    Parameters
    ----------
    network : NetworkSection
        A validated `network:` section.

    Returns
    -------
    int
        NPUs; a ConfigError naming `network.topology` (as a run would) for a topology it refuses.
    """
    from .topology.spec import topology_npus

    n = topology_npus(network.topology)
    return n if n is not None else network.build_topology().n_npus  # whatever the builder says about it


def parse_gpus(value, field: str) -> list[int]:
    """A job's NPUs as written (`JobSection.gpus`), in local-rank order.

    Parameters
    ----------
    value : str, int, list of int or mapping
        `0-7` (the syntax of `collectives.api.parse_group`), `[0, 1, 2, 3]`, one NPU id, or a rule
        `{first: N, count: M[, stride: S]}` (first 0 and stride 1 by default).
    field : str
        The config path named in errors (`jobs[0].gpus`).

    Returns
    -------
    list of int
        ConfigError naming `field` for anything else, for an NPU listed twice, and beyond the
        `ranks` limit.
    """
    from .collectives.api import parse_group
    from .limits import check_limit

    def is_int(x) -> bool:
        return isinstance(x, (int, np.integer)) and not isinstance(x, bool)

    if isinstance(value, str) or is_int(value):
        gpus = parse_group(str(value), field) if not is_int(value) or value >= 0 else None
    elif isinstance(value, list) and value and all(is_int(x) and x >= 0 for x in value):
        check_limit("ranks", len(value), "ranks", field, f"<{len(value)} NPUs>")
        gpus = [int(x) for x in value]
    elif isinstance(value, dict) and "count" in value and set(value) <= {"first", "count", "stride"}:
        first, count, stride = value.get("first", 0), value["count"], value.get("stride", 1)
        if not all(is_int(x) for x in (first, count, stride)) or first < 0 or count < 1 or stride < 1:
            raise ConfigError(field, value, "accepted: integers first >= 0, count >= 1, stride >= 1")
        check_limit("ranks", count, "ranks", field, value)
        gpus = list(range(first, first + count * stride, stride))
    else:
        gpus = None
    if not gpus:
        raise ConfigError(field, value, _GPUS_ACCEPTED)
    seen: set[int] = set()
    twice = next((g for g in gpus if g in seen or seen.add(g)), None)
    if twice is not None:
        raise ConfigError(field, value, f"NPU {twice} is listed twice; accepted: distinct NPUs")
    return gpus


def check_jobs(cfg) -> None:
    """A config's `jobs:` as `TrainConfig` validates it: exactly one of `workload` and `jobs`, a
    non-empty list, distinct names, each job's GPUs within the network, as many as its strategy
    uses (mp x cp x dp x pp, for a zoo model or a transformer by shape), and no GPU in two jobs.

    Parameters
    ----------
    cfg : TrainConfig
        The config being validated.

    Returns
    -------
    None
        A one-line ConfigError naming `jobs`, `jobs[i].gpus` or `jobs[i].name`, the value and what
        is accepted.
    """
    if cfg.jobs is None:
        raise ConfigError("workload", None, "required field is missing; accepted: a workload: section, or jobs: "
                                            "(several jobs on one fabric)")
    if cfg.workload is not None:
        raise ConfigError("jobs", f"<{len(cfg.jobs)} jobs>", "given beside workload:; accepted: either workload: (one "
                                                             "job on every NPU) or jobs: (several on their own NPUs)")
    if not cfg.jobs:
        raise ConfigError("jobs", [], "accepted: a non-empty list of jobs, each a workload with name and gpus")
    n_npus = network_npus(cfg.network)
    owner: dict[int, int] = {}
    names = job_names(cfg)
    for i, job in enumerate(cfg.jobs):
        if names.index(names[i]) != i:
            raise ConfigError(f"jobs[{i}].name", names[i], f"also the name of jobs[{names.index(names[i])}]; "
                                                           "accepted: a name no other job has")
        where = f"jobs[{i}].gpus"
        gpus = parse_gpus(job.gpus, where)
        if max(gpus) >= n_npus:
            raise ConfigError(where, job.gpus, f"NPU {max(gpus)} is not in the network; accepted: NPUs 0..{n_npus - 1}")
        need = _strategy_npus(cfg, i)
        if need is not None and need != len(gpus):
            raise ConfigError(where, job.gpus, f"{len(gpus)} GPUs; accepted: {need} GPUs, what the job's strategy uses "
                                               f"(mp x cp x dp x pp)")
        for g in gpus:
            j = owner.setdefault(g, i)
            if j != i:
                raise ConfigError(where, job.gpus, f"job {names[i]!r} shares GPU {g} with job {names[j]!r} "
                                                   f"(jobs[{j}]); accepted: GPUs no other job runs on")


def job_names(cfg) -> list[str]:
    """Each job's name: its `name`, else `job<i>` (from 0)."""
    return [j.name if j.name is not None else f"job{i}" for i, j in enumerate(cfg.jobs or ())]


def _strategy_npus(cfg, i: int) -> int | None:
    """NPUs job i's strategy uses (`Strategy.npus`), None for text workloads and traces."""
    job = cfg.jobs[i]
    if job.model is None:
        return None
    with _as_job(cfg.source, i, job_names(cfg)[i]):
        return job.strategy(cfg.source).npus


def job_config(cfg, i: int):
    """The config of job i alone: `cfg` with its `jobs[i]` as the workload (source and folder kept).

    Parameters
    ----------
    cfg : TrainConfig
        A config with `jobs`.
    i : int
        The job.

    Returns
    -------
    TrainConfig
        Not validated again (its parts are).
    """
    return cfg.model_copy(update={"workload": cfg.jobs[i], "jobs": None})


@contextlib.contextmanager
def _as_job(source: str | None, i: int, name: str):
    """Errors of job i's workload name `jobs[i]` instead of `workload`; others name the job too."""
    try:
        yield
    except ConfigError as e:
        head = f"{source}: " if source else ""
        field = str(e.field)
        if field.startswith(head + "workload"):
            field = f"{head}jobs[{i}]{field[len(head + 'workload'):]}"
        elif f"jobs[{i}]" not in field:
            field = f"{field} (jobs[{i}], job {name!r})"
        raise ConfigError(field, e.value, e.accepted) from None


__all__ = ["check_jobs", "job_config", "job_names", "network_npus", "parse_gpus"]
