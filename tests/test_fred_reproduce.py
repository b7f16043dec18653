"""`fabricsim reproduce fred --quick`: the microbenchmarks against the paper's analytic values,
the traffic table against 2(N-1)/N, and the end-to-end table's structure (speedups over the mesh)."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli import main

# Where our model and the paper's analytic values are the same computation (spec section 3), they
# must agree to 1 % (latency: 20 ns per hop against 256 MiB). Known, explained gaps are excluded
# and checked separately: Fred-A MP(20) (the paper pipelines chunks through the two levels) and
# the mesh's PP (the paper counts one stage pair alone; all 10 pairs share column links here).
GAPS = {("MP(20)", "Fred-A"), ("PP of MP(2)-DP(5)-PP(2)", "mesh")}


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("fred")
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["reproduce", "fred", "--quick", "--json", "--out", str(out)]) == 0
    return json.loads(buf.getvalue()), out


def test_microbenchmarks_match_the_analytic_values(quick):
    d, _ = quick
    rows = d["microbenchmarks"]
    assert len(rows) == 4 * 5
    for r in rows:
        if (r["dimension"], r["system"]) in GAPS:
            continue
        assert r["per_D"] == pytest.approx(r["paper"], rel=0.01), r


def test_known_gaps_are_what_the_note_says(quick):
    d, _ = quick
    get = {(r["dimension"], r["system"]): r["per_D"] for r in d["microbenchmarks"]}
    # Fred-A, hierarchical without pipelining: L1 reduce-scatter + L2 ring on D/4 at 375 GB/s per
    # NPU (4 rings share a 1.5 TB/s uplink) + L1 all-gather = 2 (0.75/3 + 0.8 x 0.25/0.375)
    assert get[("MP(20)", "Fred-A")] == pytest.approx(2 * (0.75 / 3 + 0.8 * 0.25 / 0.375), rel=0.01)
    # mesh PP: stage pairs 2 rows apart, two pairs per column share the middle link: 375 GB/s
    assert get[("PP of MP(2)-DP(5)-PP(2)", "mesh")] == pytest.approx(1 / 0.375, rel=0.01)


def test_traffic_table(quick):
    d, _ = quick
    for r in d["traffic"]:
        n = r["n"]
        assert r["in_network_per_npu"] == pytest.approx(1.0)
        assert r["endpoint_per_npu"] == pytest.approx(2 * (n - 1) / n)
        assert r["factor"] == pytest.approx(r["formula"])
    assert [r["n"] for r in d["traffic"]] == [2, 4, 5, 10, 20]


def test_end_to_end_table(quick):
    d, out = quick
    rows = d["end_to_end"]
    assert {r["workload"] for r in rows} == {"ResNet-152", "Transformer-17B", "GPT-3", "Transformer-1T"}
    for r in rows:
        assert r["iteration_s"] > 0
        mesh = next(x for x in rows if x["workload"] == r["workload"] and x["system"] == "mesh")
        assert r["speedup"] == pytest.approx(mesh["iteration_s"] / r["iteration_s"])
        assert sum(r["breakdown_s"].values()) == pytest.approx(r["iteration_s"], rel=1e-6)
        if r["system"] in ("Fred-C", "Fred-D"):
            assert r["paper_speedup"] is not None and r["ratio"] == pytest.approx(r["speedup"] / r["paper_speedup"])
        # FRED never loses to the mesh on these workloads
        assert r["speedup"] >= 0.999
        if r["workload"] in ("GPT-3", "Transformer-1T"):  # weight streaming: gradients leave through I/O, no DP collectives
            assert r["breakdown_s"]["DP"] == 0
    for f in ("fred.json", "microbenchmarks.csv", "end_to_end.csv", "microbenchmarks.png", "end_to_end.png",
              "sweep.png"):
        assert (out / f).stat().st_size > 100


def test_strategy_sweep(quick):
    """Per sample: compute + exposed communication <= time; Fred-D never slower than the mesh and
    exposes less communication; the summary's means are the means of the rows."""
    d, _ = quick
    rows = d["sweep"]
    assert {r["workload"] for r in rows} == {"Transformer-17B", "Transformer-1T"}
    by = {(r["workload"], r["strategy"], r["system"]): r for r in rows}
    for (wl, st, system), r in by.items():
        assert r["compute_per_sample_s"] + r["exposed_comm_per_sample_s"] <= r["per_sample_s"] * (1 + 1e-9)
        if system == "Fred-D":
            mesh = by[(wl, st, "mesh")]
            assert r["per_sample_s"] <= mesh["per_sample_s"] * (1 + 1e-9)
            assert r["exposed_comm_per_sample_s"] < mesh["exposed_comm_per_sample_s"]
    for s in d["sweep_summary"]:
        strategies = sorted({k[1] for k in by if k[0] == s["workload"]})
        sp = [by[(s["workload"], x, "mesh")]["per_sample_s"] / by[(s["workload"], x, "Fred-D")]["per_sample_s"]
              for x in strategies]
        assert s["speedup_mean"] == pytest.approx(sum(sp) / len(sp))
        assert s["paper"]["speedup"] in (1.63, 1.44)
