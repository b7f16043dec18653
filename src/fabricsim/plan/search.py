"""`fabricsim plan`'s search: every strategy of the space estimated, the best K simulated, ranked.

1. `plan.space.enumerate_space`: the strategies the `search:` section allows, pruned by
   divisibility, the constraints and the memory model (each reason counted);
2. `plan.estimate.Estimator`: each one's iteration in closed form (milliseconds);
3. the K best by estimate (then memory, then enumeration order) run as `fabricsim train` configs
   on the sweep layer (`sweep.run.run_sweep`: local processes or Dask, resumable: a point already in
   the results directory is not run again);
4. ranked by the engine's iteration time, then peak memory per GPU. The estimate's error against
   the engine and the Spearman rank correlation of the two over the simulated set are reported.

Every evaluated strategy is a row of the results directory (Parquet parts in the sweep's format):
kind "plan-estimate" rows carry the estimate (`estimate_s`, `estimate_exposed_*_s`), kind "train"
rows the engine's figures for the simulated ones (`iteration_s`, `exposed_*_s`, `mfu`,
`tokens_per_s`, `peak_memory_GiB`); both carry the strategy's knobs as columns, so
`fabricsim plot --kind pareto --x peak_memory_GiB --y iteration_s` draws the simulated front. The
best point is written as a ready `fabricsim train` config (`best.yaml`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..errors import ConfigError

KNOBS = ("tp", "pp", "dp", "cp", "ep", "virtual_stages", "microbatch", "recompute", "sequence_parallel", "zero")


def knobs_of(st) -> dict:
    """A strategy's searched knobs (`KNOBS`), plain values."""
    return {"tp": st.mp, "pp": st.pp, "dp": st.dp, "cp": st.cp, "ep": st.ep, "virtual_stages": st.virtual_stages,
            "microbatch": st.microbatch, "recompute": st.recompute, "sequence_parallel": bool(st.sequence_parallel),
            "zero": st.zero}


def strategy_text(k: dict) -> str:
    """`TP8 PP4 DP32 mb1 selective SP zero1` (CP, EP and VP only when above 1)."""
    parts = [f"TP{k['tp']}", f"PP{k['pp']}", f"DP{k['dp']}"]
    parts += [f"{n}{k[key]}" for n, key in (("CP", "cp"), ("EP", "ep"), ("VP", "virtual_stages")) if k[key] > 1]
    parts += [f"mb{k['microbatch']}", k["recompute"]] + (["SP"] if k["sequence_parallel"] else []) + [f"zero{k['zero']}"]
    return " ".join(parts)


def _machine(cfg):
    """(model, system, pricer) of a plan's train config, as `fabricsim train` builds them."""
    from ..train import system_of, system_pricer, topology_of

    topo, system = topology_of(cfg), system_of(cfg)
    return cfg.workload.build_model(), system, system_pricer(cfg, topo, system)


def distinct(space) -> tuple:
    """`space` without the candidates that run the same program as an earlier one: without replicas
    (dp x cp = 1) every ZeRO stage is plain data parallelism over one rank, so only the first ZeRO
    stage of such a strategy is kept. Returns (space, how many were dropped)."""
    from dataclasses import replace

    seen, keep = set(), []
    for c in space.candidates:
        st = c.strategy
        key = replace(st, zero=0) if st.replicas == 1 else None
        if key is not None and key in seen:
            continue
        if key is not None:
            seen.add(key)
        keep.append(c)
    return replace(space, candidates=tuple(keep)), len(space.candidates) - len(keep)


def estimate_all(pc, space, *, workers: int = 1, dask: str | None = None) -> tuple[list, int]:
    """Every candidate's estimate, in enumeration order: ([(index, candidate, Estimate)], refused),
    refused counting the strategies the workload refuses only when planned (`ConfigError`). The
    candidates are estimated in contiguous chunks (strategies next to each other share plans and
    prices) in this process (`workers` 1), on a pool of `workers` processes, or on Dask.

    Parameters
    ----------
    pc : PlanConfig
    space : Space
    workers : int
        Local processes (0: one per CPU; 1: this process).
    dask : str, optional
        A Dask scheduler address or `local:N`.

    Returns
    -------
    (list, int)
    """
    import os

    cands = space.candidates
    n = 1 if (workers == 1 and not dask) or len(cands) < 64 else 4 * (workers or os.cpu_count() or 1)
    if dask:
        n = max(n, 16)
    bounds = [len(cands) * k // n for k in range(n + 1)]
    jobs = [(pc.mapping, pc.train.base_dir, pc.source, [c.strategy for c in cands[a:b]])
            for a, b in zip(bounds[:-1], bounds[1:])]
    if n == 1:
        parts = map(_estimate_chunk, jobs)
    elif dask:
        from ..sweep.run import dask_map

        with dask_map(dask) as map_fn:
            parts = list(map_fn(_estimate_chunk, jobs))
    else:
        import multiprocessing

        from ..sweep.run import _ignore_interrupts

        with multiprocessing.Pool(workers or os.cpu_count(), initializer=_ignore_interrupts) as pool:
            parts = pool.map(_estimate_chunk, jobs)
    rows, refused = [], 0
    for i, (c, e) in enumerate(zip(cands, (e for part in parts for e in part))):
        if e is None:
            refused += 1
        else:
            rows.append((i, c, e))
    return rows, refused


def _estimate_chunk(job) -> list:
    """Estimates of a chunk of strategies (`estimate_all`), None for one the workload refuses; a
    module-level function of plain data, so that a pool or Dask can run it."""
    from ..train import TrainConfig
    from .estimate import Estimator

    mapping, base_dir, source, strategies = job
    cfg = TrainConfig.model_validate(mapping, context={"base_dir": base_dir, "source": source})
    est = Estimator(*_machine(cfg))
    out = []
    for st in strategies:
        try:
            out.append(est(st))
        except ConfigError:
            out.append(None)
    return out


def _estimate_row(pc, i: int, c, e, tokens: float) -> dict:
    """The results row of an estimated strategy (module doc)."""
    from ..sweep.spec import point_hash
    from .schema import train_config_for

    config = train_config_for(pc, c.fields)
    row = {"point": i, "hash": point_hash("plan-estimate", config), "kind": "plan-estimate",
           "config": json.dumps(config, sort_keys=True, default=str), **{k: str(v) for k, v in knobs_of(c.strategy).items()},
           "estimate_s": e.iteration_s, "estimate_compute_s": e.compute_s, "estimate_bubble_s": e.bubble_s,
           "peak_memory_GiB": None if c.peak_memory is None else c.peak_memory / 2**30,
           "estimate_tokens_per_s": tokens / e.iteration_s if tokens else None, "error": None}
    for k in ("MP", "CP", "EP", "PP", "DP"):
        row[f"estimate_exposed_{k}_s"] = float(e.exposed.get(k, 0.0))
    return row


def run_plan(pc, out: str | Path, *, workers: int = 0, dask: str | None = None, progress=None) -> dict:
    """Search the strategies of a plan config (module doc).

    Parameters
    ----------
    pc : PlanConfig
        A loaded plan config (`plan.schema.load_plan_config`).
    out : str or Path
        The results directory (created; a second run into it resumes).
    workers : int
        Local worker processes for the simulations (0: one per CPU).
    dask : str, optional
        Simulate on Dask instead: a scheduler address or `local:N`.
    progress : callable, optional
        `progress(done, total, label)` as simulations finish.

    Returns
    -------
    dict
        `evaluated`, `simulated`, `pruned` (by reason), `best` (its knobs, strategy text and figures),
        `ranking` (the simulated points, best first), `spearman`, `estimate_error`, `elapsed_s`.
    """
    from ..sweep.run import PartWriter, done_hashes, read_results, run_sweep
    from ..sweep.spec import SweepPoint, point_hash
    from .schema import train_config_for
    from .space import enumerate_space

    t0 = time.perf_counter()
    space = enumerate_space(pc, workers=1, dask=dask)  # on a local pool its warm-up outweighs the split
    space, duplicates = distinct(space)
    rows, refused = estimate_all(pc, space, workers=workers, dask=dask)
    w = pc.train.workload
    seq = w.build_model().seq
    tokens = (pc.search.batch or w.batch) * seq if seq else 0
    order = sorted(rows, key=lambda r: (r[2].iteration_s, r[1].peak_memory or 0.0, r[0]))
    out = Path(out)
    done = done_hashes(out)
    writer = PartWriter(out)
    for i, c, e in rows:
        row = _estimate_row(pc, i, c, e, tokens)
        if row["hash"] not in done:
            writer.add(row)
    writer.flush()
    points = []
    for i, c, e in order[:pc.search.simulate]:
        config = train_config_for(pc, c.fields)
        points.append(SweepPoint(i, "train", config, knobs_of(c.strategy), point_hash("train", config)))
    t_est = time.perf_counter() - t0
    run_sweep(points, out, workers=workers, dask=dask, progress=progress)
    sim = _simulated(read_results(out), points, {i: (c, e) for i, c, e in rows})
    result = {"evaluated": len(rows), "simulated": len(sim), "combos": space.combos,
              "pruned": {"invalid": space.pruned_invalid, "constraints": space.pruned_constraints,
                         "memory": space.pruned_memory, "refused_by_the_workload": refused,
                         "same_program": duplicates},
              "estimate_s": t_est, **_ranking(sim), "elapsed_s": time.perf_counter() - t0}
    if sim:
        best = sim[0]
        _write_best(out, train_config_for(pc, best["fields"]))
    return result


def _simulated(table, points, by_index: dict) -> list[dict]:
    """The simulated points' engine figures with their estimates, ranked by iteration time, then
    peak memory, then enumeration order; failed simulations are left out."""
    got = {}
    if table.num_rows:
        for r in table.to_pylist():
            if r.get("kind") == "train" and r.get("error") is None:
                got[r["hash"]] = r
    out = []
    for p in points:
        r = got.get(p.hash)
        if r is None:
            continue
        c, e = by_index[p.index]
        out.append({"point": p.index, "knobs": dict(p.axes), "strategy": strategy_text(p.axes), "fields": c.fields,
                    "iteration_s": r["iteration_s"], "estimate_s": e.iteration_s,
                    "estimate_error": e.iteration_s / r["iteration_s"] - 1.0, "mfu": r.get("mfu"),
                    "tokens_per_s": r.get("tokens_per_s"), "peak_memory_GiB": r.get("peak_memory_GiB"),
                    "exposed_s": {k: r.get(f"exposed_{k}_s", 0.0) for k in ("MP", "CP", "EP", "PP", "DP")}})
    out.sort(key=lambda x: (x["iteration_s"], x["peak_memory_GiB"] or 0.0, x["point"]))
    return out


def _ranking(sim: list[dict]) -> dict:
    """`ranking`, `best`, the estimate's errors and the Spearman correlation of estimate and engine."""
    import numpy as np

    res: dict = {"ranking": sim, "best": sim[0] if sim else None}
    if len(sim) >= 2:
        from scipy.stats import spearmanr

        rho = spearmanr([x["estimate_s"] for x in sim], [x["iteration_s"] for x in sim]).statistic
        res["spearman"] = float(rho)
    else:
        res["spearman"] = None
    errs = np.abs([x["estimate_error"] for x in sim]) if sim else np.zeros(0)
    res["estimate_error"] = {"median": float(np.median(errs)), "max": float(errs.max())} if sim else None
    return res


def _write_best(out: Path, config: dict) -> None:
    """`best.yaml` in the results directory: the best point as a `fabricsim train` config (atomic)."""
    import yaml

    from ..outputs import atomic_file

    with atomic_file(out / "best.yaml", "--out") as f:
        f.write("# fabricsim plan: the best strategy found (simulated), as a `fabricsim train` config\n")
        yaml.safe_dump(config, f, sort_keys=False)


__all__ = ["KNOBS", "estimate_all", "knobs_of", "run_plan", "strategy_text"]
