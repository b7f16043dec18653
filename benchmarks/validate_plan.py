"""Validation of `fabricsim plan` against published strategies (issue 44, item 6): for the setups of
Narayanan et al. SC21 (arXiv 2104.04473: Table 1's 18.4B, 39.1B, 76.1B and 145.6B rows, and GPT-3 175B
on 1,024 GPUs at batch 1,536 from §5.1) and Korthikanti et al. 2022 (arXiv 2205.05198, Tables 3 and 5:
22B on 8 GPUs, 175B on 64, 530B on 280, 1T on 512), model, GPUs and batch as published:

- the plan configs of `configs/validation/plan/` (each holds the published knobs among others in its
  `search:`), searched with `fabricsim.plan.search.run_plan` (every strategy estimated, the best K by
  estimate simulated by the engine);
- the published strategies of `configs/validation/plan/published.yaml` (their sources and what is
  assumed are there; no figure is copied into this script): each one's rank among all the estimated
  (by estimate) and among the simulated, its simulated iteration (simulated here when it is not among
  the best K), fabricsim's best and the speedup best / published by fabricsim's own model, and the
  published strategy's simulated time beside the paper's (Korthikanti: Table 5's seconds; SC21: the
  printed teraFLOP/s per GPU turned into seconds with the paper's Eq. 3);
- where the speedup comes from, by estimate: the best strategy within subsets of the space (the
  published TP and PP; no interleaving; no ZeRO; neither sequence parallelism nor selective recompute,
  which the 2021 code lacked; 10% of the memory kept free; the 2021 knobs with 10% free), and for each
  published strategy the best estimate with one knob changed.

Nothing is tuned: the configs are the validated Megatron configs' network, NPU and scheduling. `simulate:`
is 30 in every config (the default is 100) so that the whole script runs in about 6 minutes on two
cores. Prints a table and writes benchmarks/results/plan_validation.json (docs/plan.md has the table).
Run: `.venv/bin/python benchmarks/validate_plan.py [--only NAME ...] [--out DIR] [-j N]` (`--out`:
keep the results directories there, and resume them on a second run; default a temporary directory).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import yaml
from _results import write_results  # benchmarks/ is on sys.path when run as a script

from fabricsim.plan.schema import load_plan_config, train_config_for
from fabricsim.plan.search import knobs_of, run_plan, strategy_text
from fabricsim.plan.space import enumerate_space
from fabricsim.sweep.run import read_results, run_sweep
from fabricsim.sweep.spec import SweepPoint, point_hash

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs" / "validation" / "plan"
PUBLISHED = CONFIGS / "published.yaml"
KNOBS = ("tp", "pp", "cp", "ep", "virtual_stages", "microbatch", "recompute", "sequence_parallel", "zero")
INT_KNOBS = ("tp", "pp", "dp", "cp", "ep", "virtual_stages", "microbatch", "zero")
SUBSETS = {  # name -> which estimated strategies it keeps (row: the knobs as values)
    "published TP and PP": lambda r, pub: r["tp"] == pub["tp"] and r["pp"] == pub["pp"],
    "no interleaving": lambda r, pub: r["virtual_stages"] == 1,
    "no ZeRO": lambda r, pub: r["zero"] == 0,
    "no SP, no selective": lambda r, pub: not r["sequence_parallel"] and r["recompute"] != "selective",
    "the 2021 knobs": lambda r, pub: not r["sequence_parallel"] and r["recompute"] != "selective" and r["zero"] == 0,
}
HEADROOM = 0.10  # share of the memory kept free in the last subset


def eq3_iteration_s(pc, tflops_per_gpu: float) -> float:
    """SC21's published teraFLOP/s per GPU as seconds per iteration: F / (n X), F = 96 B s l h^2 (1 +
    s / 6h + V / 16 l h) (SC21 Eq. 3, the FLOPs it divides by the measured time, recompute included)."""
    sh = pc.train.workload.build_model().shape
    B, s, L, h, V = pc.batch, sh.seq, sh.layers, sh.hidden, sh.vocab
    flops = 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    return flops / (pc.n_gpus * tflops_per_gpu * 1e12)


def estimated_rows(out: Path) -> tuple[list[dict], dict]:
    """The results directory's estimate rows (knobs typed back) and its engine rows by hash."""
    est, sim = {}, {}
    for r in read_results(out).to_pylist():
        if r.get("error") is not None:
            continue
        if r["kind"] == "plan-estimate":
            k = {n: int(r[n]) for n in INT_KNOBS}
            k.update(recompute=r["recompute"], sequence_parallel=r["sequence_parallel"] == "True")
            est[r["hash"]] = {**k, "point": r["point"], "estimate_s": r["estimate_s"],
                              "peak_memory_GiB": r["peak_memory_GiB"]}
        elif r["kind"] == "train":
            sim[r["hash"]] = r
    return list(est.values()), sim


def rank_of(value: float, values) -> int:
    """1 + how many of `values` are strictly below `value` (ties share a rank)."""
    return 1 + sum(v < value for v in values)


def published_candidate(pc, strategy: dict):
    """The published strategy judged as the search judges it: (Candidate, None) or (None, the step
    that prunes it: invalid, constraints, memory)."""
    one = {k: [strategy[k]] for k in KNOBS}
    sp = enumerate_space(replace(pc, search=pc.search.model_copy(update=one)))
    if sp.candidates:
        return sp.candidates[0], None
    why = [n for n, c in (("invalid", sp.pruned_invalid), ("constraints", sp.pruned_constraints),
                          ("memory", sp.pruned_memory)) if c]
    return None, why[0]


def simulate_one(pc, cand, index: int, out: Path) -> dict:
    """The engine's row of one candidate, run into the results directory (the plan's own point
    and hash: a later search reuses it)."""
    config = train_config_for(pc, cand.fields)
    h = point_hash("train", config)
    run_sweep([SweepPoint(index, "train", config, knobs_of(cand.strategy), h)], out, workers=1)
    return estimated_rows(out)[1][h]


def validate_setup(entry: dict, out: Path, workers: int) -> dict:
    """One plan config searched and its published strategies placed (module doc)."""
    pc = load_plan_config(CONFIGS / entry["config"])
    t0 = time.perf_counter()
    res = run_plan(pc, out, workers=workers)
    est = estimated_rows(out)[0]
    est_s = [r["estimate_s"] for r in est]
    ranking = res["ranking"]
    best = res["best"]
    by_point = {r["point"]: i for i, r in enumerate(ranking, 1)}
    cap_GiB = pc.train.system.npu.build().memory_capacity / 2**30
    setup = {"config": entry["config"], "paper": entry["paper"], "name": pc.train.name, "gpus": pc.n_gpus,
             "batch": pc.batch, "combos": res["combos"], "pruned": res["pruned"], "evaluated": res["evaluated"],
             "simulated": res["simulated"], "spearman": res["spearman"], "estimate_error": res["estimate_error"],
             "memory_GiB": cap_GiB,
             "best": {k: best[k] for k in ("strategy", "knobs", "iteration_s", "estimate_s", "mfu", "peak_memory_GiB",
                                           "exposed_s")},
             "published": []}
    for pub in entry["published"]:
        st = dict(pub["strategy"])
        st["dp"] = pc.n_gpus // (st["tp"] * st["pp"] * st["cp"])
        paper_s = pub.get("paper_iteration_s") or eq3_iteration_s(pc, pub["paper_tflops_per_gpu"])
        row = {"label": pub["label"], "strategy": strategy_text(st), "knobs": st, "stated": pub["stated"],
               "assumed": pub["assumed"], "paper_s": paper_s,
               "paper_s_from": "Table 5" if pub.get("paper_iteration_s") else
               f"{pub['paper_tflops_per_gpu']} teraFLOP/s per GPU, SC21 Eq. 3"}
        cand, why = published_candidate(pc, st)
        if cand is None:
            row.update(pruned=why)
            setup["published"].append(row)
            continue
        mine = next((r for r in est if _same(r, st)), None)
        if mine is None:  # a candidate the estimate refused (ConfigError when planned)
            row.update(pruned="refused by the workload")
            setup["published"].append(row)
            continue
        row.update(estimate_s=mine["estimate_s"], rank_by_estimate=rank_of(mine["estimate_s"], est_s),
                   of_estimated=len(est), peak_memory_GiB=mine["peak_memory_GiB"])
        if mine["point"] in by_point:
            r = ranking[by_point[mine["point"]] - 1]
            row.update(simulated_s=r["iteration_s"], rank_simulated=rank_of(r["iteration_s"],
                                                                           [x["iteration_s"] for x in ranking]),
                       among_simulated=True)
        else:
            r = simulate_one(pc, cand, mine["point"], out)
            row.update(simulated_s=r["iteration_s"], among_simulated=False,
                       rank_simulated=rank_of(r["iteration_s"], [x["iteration_s"] for x in ranking]))
        row.update(of_simulated=len(ranking), ratio_to_paper=row["simulated_s"] / paper_s,
                   speedup=row["simulated_s"] / best["iteration_s"],
                   rank_by_estimate_distinct=rank_of(mine["estimate_s"], _distinct(est)),
                   of_distinct=len(_distinct(est)), single_changes=single_changes(est, st))
        setup["published"].append(row)
    pub0 = setup["published"][0]["knobs"]
    subsets = {}
    for name, keep in SUBSETS.items():
        rows = [r for r in est if keep(r, pub0)]
        if rows:
            b = min(rows, key=lambda r: (r["estimate_s"], r["peak_memory_GiB"] or 0.0, r["point"]))
            subsets[name] = {"strategy": strategy_text(b), "estimate_s": b["estimate_s"], "count": len(rows),
                             "peak_memory_GiB": b["peak_memory_GiB"]}
    roomy = [r for r in est if r["peak_memory_GiB"] is None or r["peak_memory_GiB"] <= (1 - HEADROOM) * cap_GiB]
    for name, rows in ((f"{HEADROOM:.0%} memory free", roomy),
                       (f"the 2021 knobs, {HEADROOM:.0%} free", [r for r in roomy if SUBSETS["the 2021 knobs"](r, pub0)])):
        if rows:
            b = min(rows, key=lambda r: (r["estimate_s"], r["peak_memory_GiB"] or 0.0, r["point"]))
            subsets[name] = {"strategy": strategy_text(b), "estimate_s": b["estimate_s"], "count": len(rows),
                             "peak_memory_GiB": b["peak_memory_GiB"]}
    setup["best_estimate_s"] = min(est_s)
    setup["subsets_by_estimate"] = subsets
    setup["wall_s"] = time.perf_counter() - t0
    return setup


def _same(row: dict, st: dict) -> bool:
    return all(row[k] == st[k] for k in (*KNOBS, "dp"))


def _distinct(est: list[dict]) -> list[float]:
    """The estimates of the distinct strategies: ZeRO shards over dp x cp ranks, so with one the four
    stages are the same program (the search counts them apart)."""
    seen = {}
    for r in est:
        key = tuple(r[k] for k in (*KNOBS, "dp") if k != "zero") + (r["zero"] if r["dp"] * r["cp"] > 1 else 0,)
        seen.setdefault(key, r["estimate_s"])
    return list(seen.values())


def single_changes(est: list[dict], st: dict) -> list[dict]:
    """For each knob, the best estimate among the strategies that differ from `st` in that knob alone
    (dp follows tp and pp), fastest first: where the published strategy's time goes, by estimate."""
    out = []
    for k in ("tp", "pp", "virtual_stages", "microbatch", "recompute", "sequence_parallel", "zero"):
        free = {k, "dp"} if k in ("tp", "pp") else {k}
        rows = [r for r in est if r[k] != st[k] and all(r[n] == st[n] for n in (*KNOBS, "dp") if n not in free)]
        if rows:
            b = min(rows, key=lambda r: (r["estimate_s"], r["peak_memory_GiB"] or 0.0, r["point"]))
            out.append({"knob": k, "value": b[k], "strategy": strategy_text(b), "estimate_s": b["estimate_s"],
                        "peak_memory_GiB": b["peak_memory_GiB"]})
    return sorted(out, key=lambda x: x["estimate_s"])


def _rank(p: dict) -> str:
    if "pruned" in p:
        return f"pruned ({p['pruned']})"
    n = p["of_simulated"]
    sim = (f"{p['rank_simulated']} of {n} simulated" if p["among_simulated"] else
           f"not among the {n} simulated" + (", slower than all" if p["rank_simulated"] > n else
                                             f", would rank {p['rank_simulated']}"))
    distinct = ("" if p["of_distinct"] == p["of_estimated"] else
                f" ({p['rank_by_estimate_distinct']} of {p['of_distinct']} distinct)")
    return f"{p['rank_by_estimate']} of {p['of_estimated']} by estimate{distinct}; {sim}"


def summary(setups: list[dict]) -> None:
    """The table of docs/plan.md: one row per published strategy."""
    print("| setup | published strategy | paper | simulated (/ paper) | rank by estimate | among the simulated "
          "| fabricsim's best | best | best / published |")
    print("|---|---|---:|---:|---:|---|---|---:|---:|")
    for s in setups:
        b = s["best"]
        for p in s["published"]:
            where = s["name"].split(": ", 1)[-1]
            if "pruned" in p:
                print(f"| {where} | {p['label']}: {p['strategy']} | {p['paper_s']:.2f} s | pruned ({p['pruned']}) "
                      f"| | | {b['strategy']} | {b['iteration_s']:.2f} s | |")
                continue
            distinct = ("" if p["of_distinct"] == p["of_estimated"] else
                        f" ({p['rank_by_estimate_distinct']} of {p['of_distinct']} distinct)")
            sim = (f"{p['rank_simulated']} of {p['of_simulated']}" if p["among_simulated"] else
                   f"not in the {p['of_simulated']}" + (" (slower than all)" if p["rank_simulated"] > p["of_simulated"]
                                                        else f" (would be {p['rank_simulated']})"))
            print(f"| {where} | {p['label']}: {p['strategy']} | {p['paper_s']:.2f} s | {p['simulated_s']:.2f} s "
                  f"({p['ratio_to_paper']:.3f}) | {p['rank_by_estimate']} of {p['of_estimated']}{distinct} | {sim} "
                  f"| {b['strategy']} | {b['iteration_s']:.2f} s | {p['speedup']:.2f}x |")


def main() -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="config names (e.g. korthikanti-22b-8)")
    ap.add_argument("--out", help="keep the results directories under DIR (a second run resumes them)")
    ap.add_argument("-j", "--workers", type=int, default=2)
    a = ap.parse_args()
    entries = yaml.safe_load(PUBLISHED.read_text())
    if a.only:
        entries = [e for e in entries if Path(e["config"]).stem in a.only]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(a.out) if a.out else Path(tmp)
        setups = []
        for e in entries:
            s = validate_setup(e, root / Path(e["config"]).stem, a.workers)
            setups.append(s)
            b = s["best"]
            print(f"\n{s['name']}: {s['combos']} strategies, {s['evaluated']} estimated, {s['simulated']} simulated "
                  f"(Spearman {s['spearman']:.3f}, |error| median {s['estimate_error']['median']:.1%}), "
                  f"{s['wall_s']:.0f} s")
            print(f"  best: {b['strategy']}  {b['iteration_s']:.3f} s  ({b['peak_memory_GiB']:.1f} GiB)")
            for p in s["published"]:
                if "pruned" in p:
                    print(f"  {p['label']:22s} {p['strategy']:38s} {_rank(p)}")
                    continue
                print(f"  {p['label']:22s} {p['strategy']:38s} paper {p['paper_s']:7.3f} s  simulated "
                      f"{p['simulated_s']:7.3f} s ({p['ratio_to_paper']:.3f})  {_rank(p)}  best is "
                      f"{p['speedup']:.3f}x faster")
                ch = ", ".join(f"{c['knob']} {c['value']}: {c['estimate_s']:.3f} s" for c in p["single_changes"][:3])
                print(f"    by estimate {p['estimate_s']:.3f} s; one knob changed: {ch}")
            for name, x in s["subsets_by_estimate"].items():
                print(f"    by estimate, best with {name:26s} {x['strategy']:42s} {x['estimate_s']:7.3f} s "
                      f"({x['peak_memory_GiB']:.1f} GiB)")
    print()
    summary(setups)
    print(f"\n# {time.perf_counter() - t0:.0f} s in all")
    return write_results("plan_validation", "fabricsim plan against published strategies (issue 44, item 6)",
                         setups)


if __name__ == "__main__":
    main()
