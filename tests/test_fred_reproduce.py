"""`fabricsim reproduce fred --quick`: the microbenchmarks against the paper's analytic values,
the traffic table against 2(N-1)/N, and the end-to-end table's structure (speedups over the mesh).

The default run reproduces with the shipped config but two of the quick run's four end-to-end
workloads, one weight-stationary and one weight-streaming (ResNet-152 and Transformer-1T: 5 s of
the 23 s the four take); the microbenchmarks, the traffic table and the strategy sweep are the
quick run's own. The shipped `--quick` itself, every check on all four workloads, is under -m slow."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
import yaml

from fabricsim.cli import main
from fabricsim.experiments.fred.config import default_config_path

# Where our model and the paper's analytic values are the same computation (spec section 3), they
# must agree to 1 % (latency: 20 ns per hop against 256 MiB). Known, explained gaps are excluded
# and checked separately: Fred-A MP(20) (64 pieces pipelined through the two levels: the pieces'
# fill, drain and hop latency on top of the L1-L2 uplinks' work) and the pipeline multicasts that
# run as a chain of 64 pieces (mesh, Fred-A, Fred-C: the chain's fill and each piece's hop latency).
CHAINS = {("PP of MP(2)-DP(5)-PP(2)", s) for s in ("mesh", "Fred-A", "Fred-C")}
GAPS = {("MP(20)", "Fred-A")} | CHAINS
ALL_WORKLOADS = {"ResNet-152", "Transformer-17B", "GPT-3", "Transformer-1T"}
LIGHT_WORKLOADS = ["ResNet-152", "Transformer-1T"]


def _reproduce(out, config=None):
    """`fabricsim reproduce fred --quick --json` into `out`: (the JSON, out)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["reproduce", "fred", "--quick", "--json", "--out", str(out),
                     *(["--config", str(config)] if config else [])]) == 0
    return json.loads(buf.getvalue()), out


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    data = yaml.safe_load(default_config_path().read_text())
    data["quick"]["workloads"] = LIGHT_WORKLOADS
    config = tmp_path_factory.mktemp("fred-config") / "fred.yaml"
    config.write_text(yaml.safe_dump(data))
    d, out = _reproduce(tmp_path_factory.mktemp("fred"), config)
    assert {r["workload"] for r in d["end_to_end"]} == set(LIGHT_WORKLOADS)
    return d, out


def _check_microbenchmarks(d):
    rows = d["microbenchmarks"]
    assert len(rows) == 4 * 5
    for r in rows:
        if (r["dimension"], r["system"]) in GAPS:
            continue
        assert r["per_D"] == pytest.approx(r["paper"], rel=0.01), r


def _check_known_gaps(d):
    get = {(r["dimension"], r["system"]): r["per_D"] for r in d["microbenchmarks"]}
    # Fred-A, hierarchical, 64 pieces pipelined through L1 reduce-scatter, L2 ring on D/4 (4 rings
    # share each L1's 1.5 TB/s uplink: 375 GB/s per NPU), L1 all-gather: at least the uplinks' work,
    # 2 x 0.8 x 0.25 / 0.375 = 16/15, plus one piece's L1 fill and drain, 2 x 0.25 / 64; within 15 %
    # of the paper's 1850 GB/s (1.9 / 1.85 = 1.027). Phase after phase it would be
    # 2 (0.75/3 + 0.8 x 0.25/0.375) = 1.567 (tests/test_fred_headlines.py checks both forms).
    fred_a = get[("MP(20)", "Fred-A")]
    assert 16 / 15 + 0.5 / 64 <= fred_a <= 1.15 * 1.9 / 1.85
    # PP: one NPU per MP group multicasts to the next stage (a chain of 64 pieces: 2 transfers,
    # 65/64 of one transfer's time), each column's chain alone on its links: 750 GB/s on the mesh,
    # 3 TB/s on FRED; plus each piece's hop latency (20 ns x 2-3 hops per 4 MiB piece: < 4.5 %)
    assert get[("PP of MP(2)-DP(5)-PP(2)", "mesh")] == pytest.approx(4 / 3 * 65 / 64, rel=0.015)
    for s in ("Fred-A", "Fred-C"):
        assert get[("PP of MP(2)-DP(5)-PP(2)", s)] == pytest.approx(1 / 3 * 65 / 64, rel=0.03)


def _check_traffic(d):
    for r in d["traffic"]:
        n = r["n"]
        assert r["in_network_per_npu"] == pytest.approx(1.0)
        assert r["endpoint_per_npu"] == pytest.approx(2 * (n - 1) / n)
        assert r["factor"] == pytest.approx(r["formula"])
    assert [r["n"] for r in d["traffic"]] == [2, 4, 5, 10, 20]


def _check_end_to_end(d, out, workloads):
    rows = d["end_to_end"]
    assert {r["workload"] for r in rows} == set(workloads)
    assert {r["compute"] for r in rows} == {"as stated", "calibrated"}
    for r in rows:
        assert r["iteration_s"] > 0
        mesh = next(x for x in rows if x["workload"] == r["workload"] and x["system"] == "mesh"
                    and x["compute"] == r["compute"])
        assert r["speedup"] == pytest.approx(mesh["iteration_s"] / r["iteration_s"])
        assert sum(r["breakdown_s"].values()) == pytest.approx(r["iteration_s"], rel=1e-6)
        if r["system"] in ("Fred-C", "Fred-D"):
            assert r["paper_speedup"] is not None and r["ratio"] == pytest.approx(r["speedup"] / r["paper_speedup"])
        # FRED never loses to the mesh on these workloads, but for Fred-A's DP(20) once compute is
        # fast (its hierarchical all-reduce runs its levels one after another: the (a) gap)
        if not (r["system"] == "Fred-A" and r["workload"] == "ResNet-152" and r["compute"] == "calibrated"):
            assert r["speedup"] >= 0.999, r
        if r["workload"] in ("GPT-3", "Transformer-1T"):  # weight streaming: gradients leave through I/O, no DP collectives
            assert r["breakdown_s"]["DP"] == 0
    for f in ("fred.json", "microbenchmarks.csv", "end_to_end.csv", "microbenchmarks.png", "end_to_end.png",
              "sweep.png"):
        assert (out / f).stat().st_size > 100


def _check_strategy_sweep(d):
    rows = d["sweep"]
    assert {r["workload"] for r in rows} == {"Transformer-17B", "Transformer-1T"}
    by = {(r["workload"], r["strategy"], r["system"], r["compute"]): r for r in rows}
    for (wl, st, system, comp), r in by.items():
        assert r["compute_per_sample_s"] + r["exposed_comm_per_sample_s"] <= r["per_sample_s"] * (1 + 1e-9)
        if system == "Fred-D":
            mesh = by[(wl, st, "mesh", comp)]
            assert r["per_sample_s"] <= mesh["per_sample_s"] * (1 + 1e-9)
            assert r["exposed_comm_per_sample_s"] < mesh["exposed_comm_per_sample_s"]
    for s in d["sweep_summary"]:
        c = s["compute"]
        strategies = sorted({k[1] for k in by if k[0] == s["workload"]})
        sp = [by[(s["workload"], x, "mesh", c)]["per_sample_s"] / by[(s["workload"], x, "Fred-D", c)]["per_sample_s"]
              for x in strategies]
        assert s["speedup_mean"] == pytest.approx(sum(sp) / len(sp))
        assert s["paper"]["speedup"] in (1.63, 1.44)


def test_microbenchmarks_match_the_analytic_values(quick):
    _check_microbenchmarks(quick[0])


def test_known_gaps_are_what_the_note_says(quick):
    _check_known_gaps(quick[0])


def test_traffic_table(quick):
    _check_traffic(quick[0])


def test_end_to_end_table(quick):
    """One weight-stationary and one weight-streaming workload: speedups over the mesh, breakdowns
    that sum to the iteration, the paper's speedups beside ours, the output files."""
    _check_end_to_end(*quick, LIGHT_WORKLOADS)


def test_strategy_sweep(quick):
    """Per sample: compute + exposed communication <= time; Fred-D never slower than the mesh and
    exposes less communication; the summary's means are the means of the rows."""
    _check_strategy_sweep(quick[0])


def _check_headlines(d, out, workloads):
    """The run ends with the headline figures: each e2e workload's Fred-C and Fred-D, the 20
    microbenchmarks, no Fig. 11 rows under --quick; the verdict counts the compared rows."""
    figs = d["headlines"]
    e2e = [f for f in figs if f["figure"].startswith("Sec. 8.2")]
    assert len(e2e) == 2 * len(workloads)
    assert len([f for f in figs if f["figure"].startswith("Fig. 9")]) == 20
    assert not [f for f in figs if "Fig. 11" in f["figure"]]
    compared = [f for f in figs if f["within"] is not None]
    n = sum(f["within"] for f in compared)
    assert d["verdict"]["line"].startswith(f"verdict: {n} of {len(compared)} headline figures within 15%")
    assert all(f["cause"] for f in figs if f["within"] is False)
    head = (out / "headlines.csv").read_text().splitlines()[0].split(",")
    assert {"figure", "paper", "fabricsim", "ratio", "within", "cause"} <= set(head)


def test_headline_figures(quick):
    _check_headlines(*quick, LIGHT_WORKLOADS)


@pytest.mark.slow
def test_the_shipped_quick_reproduction(tmp_path):
    """The shipped `--quick` (30 s): every check above, end to end on all four workloads."""
    d, out = _reproduce(tmp_path)
    _check_microbenchmarks(d)
    _check_known_gaps(d)
    _check_traffic(d)
    _check_end_to_end(d, out, ALL_WORKLOADS)
    _check_strategy_sweep(d)
    _check_headlines(d, out, ALL_WORKLOADS)
