"""`fabricsim plan`'s search (`plan.search`, `cli.plan`): a toy whose optimum and its time are known
by hand, determinism, resuming with nothing recomputed or written twice, the `--json` fields, and a
bad `search:` section as one line with exit code 2."""

from __future__ import annotations

import json

import pytest
import yaml

from fabricsim.cli import main
from fabricsim.plan.schema import plan_config
from fabricsim.plan.search import run_plan
from fabricsim.sweep.run import read_results
from fabricsim.workload.shapes import transformer

PEAK, EFF = 100e12, 0.5
TOY = {"layers": 4, "hidden": 256, "heads": 8, "seq": 128, "vocab": 1000}


def _toy(search: dict, bandwidth="1e18B/s") -> dict:
    """2 NPUs on one switch whose links (1 EB/s, no latency) make communication all but free (the
    last data-parallel all-reduce, 2.6 MB: 2.6 ps exposed), roofline NPUs
    whose memory is so fast that every task is compute-bound: time is FLOPs / (peak x efficiency)."""
    return {"network": {"topology": "switch:2", "bandwidth": bandwidth, "latency": "0ns"},
            "system": {"npu": {"peak": "100TFLOP/s", "memory_bandwidth": "1e18B/s", "efficiency": EFF}},
            "workload": {"model": dict(TOY), "batch": 8},
            "output": {"trace": False, "plot": False}, "search": search}


SEARCH = {"pp": [1, 2], "recompute": ["none", "full"], "microbatch": [1, 2, 4], "zero": [0, 1], "simulate": 24}


def test_the_toy_optimum_and_its_time_are_the_closed_form(tmp_path):
    """Free communication, compute-bound NPUs: any pipeline adds its bubble and full recompute its
    forward again, so the best is dp 2 without recompute (every microbatch size and ZeRO stage ties),
    and its iteration is half the model's training FLOPs over one NPU's rate: the forward, and the
    backward's weight gradients of every layer and input gradients of all but the first."""
    res = run_plan(plan_config(_toy(SEARCH)), tmp_path / "p", workers=1)
    m = transformer("toy", **TOY)
    flops = sum(x.fwd_flops + x.bwd_weight_flops + (x.bwd_input_flops if i else 0.0) for i, x in enumerate(m.layers))
    want = 8 * flops / 2 / (PEAK * EFF)
    best = res["best"]
    assert (best["knobs"]["pp"], best["knobs"]["dp"], best["knobs"]["recompute"]) == (1, 2, "none")
    assert best["iteration_s"] == pytest.approx(want, rel=1e-7)
    ties = [r for r in res["ranking"] if r["iteration_s"] == pytest.approx(want, rel=1e-7)]
    assert len(ties) == 6  # microbatch 1, 2, 4 x zero 0, 1
    slower = [r for r in res["ranking"] if r["knobs"]["pp"] == 2 or r["knobs"]["recompute"] == "full"]
    assert slower and all(r["iteration_s"] > want * (1 + 1e-6) for r in slower)
    # pp 2 leaves one replica: its ZeRO 0 and 1 are one program, estimated and simulated once
    assert res["evaluated"] == res["simulated"] == 18 and res["pruned"]["same_program"] == 6
    assert res["pruned"]["invalid"] == 0


def test_the_same_inputs_give_the_same_ranking(tmp_path):
    search = {**SEARCH, "simulate": 8}
    a = run_plan(plan_config(_toy(search, "100GB/s")), tmp_path / "a", workers=1)
    b = run_plan(plan_config(_toy(search, "100GB/s")), tmp_path / "b", workers=2)
    key = lambda r: (r["strategy"], r["iteration_s"], r["estimate_s"])  # noqa: E731
    assert [key(r) for r in a["ranking"]] == [key(r) for r in b["ranking"]]
    assert (tmp_path / "a" / "best.yaml").read_text() == (tmp_path / "b" / "best.yaml").read_text()


def test_a_second_run_resumes_and_writes_nothing_twice(tmp_path):
    pc = plan_config(_toy({**SEARCH, "simulate": 4}, "100GB/s"))
    first = run_plan(pc, tmp_path / "p", workers=1)
    rows = read_results(tmp_path / "p").num_rows
    assert rows == first["evaluated"] + 4  # every estimate, and the 4 simulations
    again = run_plan(pc, tmp_path / "p", workers=1)
    assert read_results(tmp_path / "p").num_rows == rows
    assert [r["strategy"] for r in again["ranking"]] == [r["strategy"] for r in first["ranking"]]


def test_the_best_is_a_ready_train_config(tmp_path):
    run_plan(plan_config(_toy({**SEARCH, "simulate": 4}, "100GB/s")), tmp_path / "p", workers=1)
    best = yaml.safe_load((tmp_path / "p" / "best.yaml").read_text())
    cfg = tmp_path / "best.yaml"
    cfg.write_text(yaml.safe_dump(best))
    assert main(["train", str(cfg), "--out", str(tmp_path / "o"), "-q"]) == 0


def test_the_json_fields(tmp_path, capsys):
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump(_toy({**SEARCH, "simulate": 3, "top": 2}, "100GB/s")))
    assert main(["plan", str(f), "--out", str(tmp_path / "p"), "--json", "-j", "1"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert {"evaluated", "simulated", "pruned", "best", "elapsed_s", "ranking", "spearman"} <= set(got)
    assert got["simulated"] == 3 and len(got["ranking"]) == 2 and got["best"] == got["ranking"][0]


@pytest.mark.parametrize("search,field", [({"tp": [0]}, "search.tp"), ({"nope": 1}, "search.nope"),
                                          ({"simulate": 0}, "search.simulate"),
                                          ({"constraints": {"memory_headroom": 1.5}}, "search.constraints")])
def test_a_bad_search_is_one_line_and_exit_2(tmp_path, capsys, search, field):
    f = tmp_path / "plan.yaml"
    f.write_text(yaml.safe_dump(_toy(search)))
    assert main(["plan", str(f), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err
