"""Several training jobs on one fabric (`fabricsim.multi_job`, `jobs:` in a `fabricsim train` config):
hostile configs refused in one line at load time, disjoint jobs that do not slow each other (and
run as their own single-job configs do), and jobs whose traffic shares links against a closed form."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from fabricsim.cli import main
from fabricsim.multi_job import merge, parse_gpus, relabel, run_jobs
from fabricsim.report.jobs import gpus_text
from fabricsim.train import TrainConfig, graph_of
from fabricsim.errors import ConfigError
from fabricsim.vocab import TaskKind

ROOT = Path(__file__).resolve().parents[1]
SHAPE = {"layers": 2, "hidden": 256, "heads": 4, "seq": 128, "vocab": 1000}
SYSTEM = {"npu": {"peak": "100TFLOP/s", "memory_bandwidth": "2TB/s"}}


def job(name, gpus, **par):
    """A small GPT-style job: 2 blocks of hidden 256, batch 8, strategy `par` (default dp 4)."""
    return {"name": name, "gpus": gpus, "model": SHAPE, "batch": 8, "parallelism": par or {"dp": 4}}


def write(tmp_path: Path, cfg: dict, name="run.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return p


def config(jobs, topology="switch:8", model="congestion-aware", **more) -> dict:
    return {"network": {"topology": topology, "bandwidth": "50GB/s", "latency": "1us", "model": model},
            "system": SYSTEM, "jobs": jobs, **more}


def train_json(capsys, path: Path, tmp_path: Path, *extra) -> dict:
    rc = main(["train", str(path), "--json", "--no-plot", "--out", str(tmp_path / f"out-{path.stem}"), *extra])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)


# ---- hostile configs: one line, exit code 2, at load time --------------------------------------------

HOSTILE = {
    "overlap": ([job("a", "0-3"), job("b", "2-5")],
                "jobs[1].gpus: invalid value '2-5'; job 'b' shares GPU 2 with job 'a'"),
    "count": ([job("a", "0-2")], "jobs[0].gpus: invalid value '0-2'; 3 GPUs; accepted: 4 GPUs"),
    "count-mp": ([job("a", [0, 1, 2, 3], mp=2, dp=4)],
                 "jobs[0].gpus: invalid value [0, 1, 2, 3]; 4 GPUs; accepted: 8 GPUs"),
    "range": ([job("a", "0-3"), job("b", "6-9")], "jobs[1].gpus: invalid value '6-9'; NPU 9 is not in the network; "
                                                  "accepted: NPUs 0..7"),
    "rule-range": ([job("a", {"first": 1, "count": 4, "stride": 3})], "jobs[0].gpus: invalid value "
                                                                      "{'first': 1, 'count': 4, 'stride': 3}; NPU 10"),
    "empty": ([], "jobs: invalid value []; accepted: a non-empty list of jobs"),
    "twice": ([job("a", [0, 1, 1, 2])], "jobs[0].gpus: invalid value [0, 1, 1, 2]; NPU 1 is listed twice"),
    "negative": ([job("a", [-1, 0, 1, 2])], "jobs[0].gpus: invalid value [-1, 0, 1, 2]; accepted: NPU ids"),
    "bad-rule": ([job("a", {"first": 0, "step": 2})], "jobs[0].gpus: invalid value {'first': 0, 'step': 2}; accepted:"),
    "no-gpus": ([{k: v for k, v in job("a", "0-3").items() if k != "gpus"}], "jobs[0].gpus: invalid value None"),
    "names": ([job("a", "0-3"), job("a", "4-7")], "jobs[1].name: invalid value 'a'; also the name of jobs[0]"),
    "unknown": ([{**job("a", "0-3"), "gpu": 1}], "jobs.0.gpu: invalid value 1; unknown field"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_jobs_are_one_line_with_exit_code_2(capsys, tmp_path, case):
    jobs, expected = HOSTILE[case]
    path = write(tmp_path, config(jobs))
    assert main(["train", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith(f"fabricsim: error: {path}: "), err
    assert expected in err, err
    assert not (tmp_path / "o").exists()  # refused before anything ran


def test_jobs_and_workload_are_exclusive(capsys, tmp_path):
    both = config([job("a", "0-3")], workload={"model": "resnet50", "batch": 8, "parallelism": {"dp": 8}})
    neither = {k: v for k, v in config([]).items() if k != "jobs"}
    for cfg, expected in ((both, "jobs: invalid value '<1 jobs>'; given beside workload:"),
                          (neither, "workload: invalid value None; required field is missing")):
        path = write(tmp_path, cfg)
        assert main(["train", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and expected in err, err


def test_hostile_jobs_through_the_installed_command(tmp_path):
    path = write(tmp_path, config([job("a", "0-3"), job("b", "3-6")]))
    proc = subprocess.run([sys.executable, "-m", "fabricsim", "train", str(path)], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"fabricsim: error: {path}: jobs[1].gpus: invalid value '3-6'; job 'b' shares GPU 3 "
                                   "with job 'a' (jobs[0]); accepted: GPUs no other job runs on")


def test_a_job_config_is_refused_where_one_workload_is_expected():
    cfg = TrainConfig.model_validate(config([job("a", "0-3")]))
    with pytest.raises(ConfigError, match="accepted here: a config with workload:"):
        graph_of(cfg, 8)


# ---- placement rules, relabelling, merging ------------------------------------------------------------


def test_placement_rules_and_group_strings():
    assert parse_gpus({"first": 4, "count": 4}, "g") == [4, 5, 6, 7]
    assert parse_gpus({"count": 4, "stride": 2, "first": 1}, "g") == [1, 3, 5, 7]
    assert parse_gpus({"count": 3}, "g") == [0, 1, 2]
    assert parse_gpus("0-3,8-11", "g") == [0, 1, 2, 3, 8, 9, 10, 11]
    assert parse_gpus([3, 2, 1, 0], "g") == [3, 2, 1, 0]
    assert parse_gpus(5, "g") == [5]
    for text in ("0-3", "1-31:2", "0-3,8-11", "5", "3,2,1,0", "0,5,6"):
        assert parse_gpus(gpus_text(parse_gpus(text, "g")), "g") == parse_gpus(text, "g")
    for bad in (True, 1.5, [], [0, True], {"count": 0}, {"first": -1, "count": 2}, "0-3,x"):
        with pytest.raises(ConfigError):
            parse_gpus(bad, "g")


def test_relabel_and_merge_keep_every_task_on_its_jobs_gpus():
    cfg = TrainConfig.model_validate(config([job("a", "0-3", mp=2, dp=2), job("b", [7, 5, 6, 4], mp=2, dp=2)]))
    from fabricsim.multi_job import job_config

    g = graph_of(job_config(cfg, 0), 4)
    gpus = [[0, 1, 2, 3], [7, 5, 6, 4]]
    placed = [relabel(g, x, 8) for x in gpus]
    m = merge(placed, ["a", "b"], [np.array(x) for x in gpus], 8)
    n = len(g)
    assert len(m) == 2 * n and m.meta["job_first_task"].tolist() == [0, n]
    assert m.meta["job_of_npu"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    to_b = np.array(gpus[1])
    comp = g.kind == TaskKind.COMPUTE
    assert np.array_equal(m.npu[n:][comp], to_b[g.npu[comp]])  # local NPU r -> the r-th GPU
    coll = np.flatnonzero(g.kind == TaskKind.COLLECTIVE)
    assert all(m.members(n + t) == tuple(to_b[list(g.members(t))]) for t in coll)
    assert np.array_equal(m.dep_idx[len(g.dep_idx):], g.dep_idx + n)  # dependencies offset
    assert m.name(n) == f"b: {g.name(0)}"


# ---- disjoint jobs: no slowdown, and each job's time is its own single-job run's ----------------------


@pytest.mark.parametrize("model", ["congestion-aware", "flow"])
def test_disjoint_jobs_run_as_their_own_single_job_configs(capsys, tmp_path, model):
    """Two TP2 x DP2 jobs on the two halves of one switch: no link is shared, so each job's
    iteration together is its time alone (ratio exactly 1.0), and both are the time `fabricsim train`
    gives for the same workload as a single-job config on a 4-NPU switch."""
    par = {"mp": 2, "dp": 2, "microbatches": 2}
    jobs = [dict(job("a", "0-3", **par), iterations=3), dict(job("b", [7, 6, 5, 4], **par), iterations=3)]
    s = train_json(capsys, write(tmp_path, config(jobs, model=model), "jobs.yaml"), tmp_path)
    single = config(None, topology="switch:4", model=model)
    single.pop("jobs")
    single["workload"] = {k: v for k, v in jobs[0].items() if k not in ("name", "gpus")}
    one = train_json(capsys, write(tmp_path, single, "single.yaml"), tmp_path)
    assert [j["name"] for j in s["jobs"]] == ["a", "b"] and s["npus"] == 8
    assert [j["gpus"] for j in s["jobs"]] == ["0-3", "7,6,5,4"]
    for j in s["jobs"]:
        assert j["slowdown"] == 1.0
        assert j["iteration_time_together_s"] == j["iteration_time_alone_s"] == one["iteration_time_s"]
        assert j["together"]["iteration_times_s"] == one["iteration_times_s"]
        assert j["together"]["breakdown_mean_s"] == pytest.approx(one["breakdown_mean_s"], rel=1e-12, abs=1e-18)
        assert j["together"]["mfu"] == pytest.approx(one["mfu"], rel=1e-12)
        assert j["strategy"] == one["strategy"] == "MP(2)-DP(2)-PP(1)"
    assert any("fold: off for jobs" in n for n in s["notes"])
    assert Path(s["files"]["summary"]).is_file() and Path(s["files"]["trace"]).is_file()


# ---- shared links: the flow model slows both jobs down, by a closed form -----------------------------


def _ring_jobs(model: str) -> dict:
    """Two identical DP(2) jobs on ring:4 of 100 GB/s, zero latency, compute ~0: job a on NPUs 0
    and 2, job b on 1 and 3. Every transfer goes two hops (a half-way tie goes +): 0->2 over links
    0->1->2, 2->0 over 2->3->0, 1->3 over 1->2->3, 3->1 over 3->0->1, so every link carries one
    flow of each job."""
    sys_fast = {"npu": {"peak": "1e9TFLOP/s", "memory_bandwidth": "1e9TB/s"}}
    jobs = [{"name": n, "gpus": g, "model": SHAPE, "batch": 2, "parallelism": {"dp": 2}}
            for n, g in (("a", [0, 2]), ("b", "1-3:2"))]
    return {"network": {"topology": "ring:4", "bandwidth": "100GB/s", "latency": "0ns", "model": model},
            "system": sys_fast, "jobs": jobs}


def test_jobs_sharing_every_link_run_at_half_bandwidth_on_the_flow_model(capsys, tmp_path):
    """Alone, a job's iteration is its DP all-reduces: a 2-rank ring all-reduce of S bytes sends S/2
    each way twice, S in all over each link of its path, so the iteration is the gradient bytes
    2P / B (P parameters, fp16). Together every link carries both jobs' bytes: 4P / B, slowdown 2."""
    h, s_, v, L = SHAPE["hidden"], SHAPE["seq"], SHAPE["vocab"], SHAPE["layers"]
    params = L * (12 * h * h + 13 * h) + v * h + s_ * h + 2 * h  # blocks, embedding + positions, final norm
    alone = 2 * params / 100e9
    s = train_json(capsys, write(tmp_path, _ring_jobs("flow")), tmp_path)
    for j in s["jobs"]:
        assert j["iteration_time_alone_s"] == pytest.approx(alone, rel=1e-6)
        assert j["iteration_time_together_s"] == pytest.approx(2 * alone, rel=1e-6)
        assert j["slowdown"] == pytest.approx(2.0, rel=1e-6)
        assert j["together"]["breakdown_mean_s"]["DP"] == pytest.approx(2 * alone, rel=1e-6)


def test_analytical_models_price_each_collective_alone(tmp_path):
    """The same jobs on the congestion-aware model: collectives are priced alone, so sharing links
    costs nothing (documented; the run's notes say so)."""
    run = run_jobs(TrainConfig.model_validate(_ring_jobs("congestion-aware")))
    assert [j.slowdown for j in run.jobs] == [1.0, 1.0]
    assert any("prices each collective alone" in n for n in run.notes)


# ---- the CLI: the table, --iterations, the shipped example --------------------------------------------


def test_the_table_and_iterations_override(capsys, tmp_path):
    path = write(tmp_path, config([job("a", "0-3"), job("b", {"first": 4, "count": 4})], output={"trace": False}))
    assert main(["train", str(path), "-n", "2", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "job  GPUs  strategy           together" in out and " b    4-7   MP(1)-DP(4)-PP(1)" in out
    assert "1.000x" in out and "wrote summary" in out
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert [j["together"]["iterations"] for j in s["jobs"]] == [2, 2]
    assert s["config"]["jobs"][1]["gpus"] == {"first": 4, "count": 4}


def test_the_example_config_shows_the_shared_uplinks(capsys, tmp_path):
    s = train_json(capsys, ROOT / "configs" / "two-jobs.yaml", tmp_path, "--no-trace")
    a, b = s["jobs"]
    assert (a["gpus"], b["gpus"]) == ("0-3,8-11,16-19,24-27", "4-7,12-15,20-23,28-31")
    assert a["slowdown"] > 1.05 and a["slowdown"] == pytest.approx(b["slowdown"], rel=1e-9)
    # only the data-parallel all-reduces cross the uplinks: compute and MP are what they are alone
    for k in ("compute", "MP"):
        assert a["together"]["breakdown_mean_s"][k] == pytest.approx(a["alone"]["breakdown_mean_s"][k], rel=1e-9)
    assert a["together"]["breakdown_mean_s"]["DP"] > a["alone"]["breakdown_mean_s"]["DP"]


def test_even_and_odd_gpus_do_not_meet_on_the_example_fat_tree(tmp_path):
    """The example's jobs on the even and the odd GPUs instead: the fat-tree's router takes spine
    j mod 2 to NPU j (8 NPUs per leaf, 2 spines), so the jobs share no link and run as alone."""
    cfg = yaml.safe_load((ROOT / "configs" / "two-jobs.yaml").read_text())
    cfg["jobs"][0]["gpus"] = {"first": 0, "count": 16, "stride": 2}
    cfg["jobs"][1]["gpus"] = {"first": 1, "count": 16, "stride": 2}
    run = run_jobs(TrainConfig.model_validate(cfg))
    assert [j.slowdown for j in run.jobs] == [1.0, 1.0]


def test_a_job_that_does_not_fit_is_named(capsys, tmp_path):
    cfg = config([job("a", "0-3"), job("b", "4-7")])
    cfg["system"] = {"npu": {**SYSTEM["npu"], "memory": "1MB"}}
    assert main(["train", str(write(tmp_path, cfg)), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "system.npu.memory (jobs[0], job 'a'): invalid value" in err, err
