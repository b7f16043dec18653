"""`fabricsim traffic` and `--model flow`: hand-computed answers and one-line errors."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli import main


def _write(tmp_path, text):
    p = tmp_path / "t.yaml"
    p.write_text(text)
    return str(p)


def test_traffic_two_flows_share_a_link(tmp_path, capsys):
    """ring:4 (both directions), 1 GB/s links, no latency: flows 0->1 and 0->1 share link 0->1
    (0.5 GB/s each: 2 s); flow 2->3 is alone (1 s); a flow capped at 0.25 GB/s takes 4 s."""
    f = _write(tmp_path, """
topology: ring:4
bandwidth: 1GB/s
latency: 0ns
flows:
  - {name: a, src: 0, dst: 1, size: 1GB, count: 2}
  - {name: b, src: 2, dst: 3, size: 1GB}
  - {name: c, src: 1, dst: 2, size: 1GB, cap: 0.25GB/s}
""")
    assert main(["traffic", f, "--json"]) == 0
    items = {i["name"]: i for i in json.loads(capsys.readouterr().out)["items"]}
    assert items["a"]["finish_s"] == pytest.approx(2.0)
    assert items["b"]["finish_s"] == pytest.approx(1.0)
    assert items["c"]["finish_s"] == pytest.approx(4.0)


def test_traffic_collective_with_priority(tmp_path, capsys):
    """A high-priority ring all-reduce on ring:4 finishes as if alone, 2(n-1) S/(n B); a
    low-priority one sharing every link waits: it ends at twice that."""
    f = _write(tmp_path, """
topology: ring:4,uni
bandwidth: 1GB/s
latency: 0ns
collectives:
  - {name: hi, collective: all-reduce, size: 4GB, priority: 0}
  - {name: lo, collective: all-reduce, size: 4GB, priority: 1}
""")
    assert main(["traffic", f, "--json"]) == 0
    items = {i["name"]: i for i in json.loads(capsys.readouterr().out)["items"]}
    alone = 2 * 3 * 4e9 / 4 / 1e9
    assert items["hi"]["finish_s"] == pytest.approx(alone)
    assert items["lo"]["finish_s"] == pytest.approx(2 * alone)


@pytest.mark.parametrize("body, words", [
    ("topology: torus:8x8\nflows:\n  - {src: 0, dst: 1, size: -5}\n", ["flows[0].size", "-5"]),
    ("topology: torus:8x8\nmode: warp\n", ["mode", "warp", "pipelined"]),
    ("topology: torus:8x8\nflows:\n  - {src: 0, dst: 99, size: 1MiB}\n", ["dst", "99"]),
    ("topology: torus:8x8\nflows:\n  - {src: 0, dst: 1, size: 1MiB, speed: 3}\n", ["speed"]),
    ("topology: torus:8x8\ncollectives:\n  - {collective: all-reduce, algorithm: warp, size: 1MiB}\n", ["algorithm", "warp"]),
    ("topology: [oops\n", ["t.yaml"]),
    ("topology: torus:8x8\nmodel: telepathy\n", ["model", "telepathy", "congestion-aware"]),
    ("topology: torus:8x8\nmodel: analytical\nmode: pipelined\n", ["mode", "pipelined", "flow models"]),
    ("topology: torus:8x8\ncollectives:\n  - {collective: all-sum, size: 1MiB}\n", ["collective", "all-sum", "all-reduce"]),
    ("topology: torus:8x8\ncollectives:\n  - {collective: all-reduce, size: 1MiB, options: {lockstep: 2}}\n",
     ["lockstep", "none takes lockstep"]),  # no algorithm: auto, whose candidates take no lockstep
    ("topology: torus:8x8\ncollectives:\n  - {collective: all-reduce, algorithm: ring, size: 1MiB, options: {lockstep: 2}}\n",
     ["lockstep", "ring accepts"]),
])
def test_traffic_bad_input_is_one_line(tmp_path, capsys, body, words):
    rc = main(["traffic", _write(tmp_path, body)])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    for w in words:
        assert w in err, (w, err)


def test_collective_model_flow_matches_the_ring_closed_form(capsys):
    rc = main(["collective", "-t", "ring:8", "-B", "400Gbps", "-L", "100ns", "-m", "flow", "-s", "1MiB,1GiB", "--json"])
    assert rc == 0
    n, B, a = 8, 50e9, 100e-9
    for row in json.loads(capsys.readouterr().out)["rows"]:
        S = row["size_bytes"]
        assert row["time_s"] == pytest.approx(2 * (n - 1) * (a + S / (n * B)), rel=1e-12)


def test_traffic_on_the_analytical_model_runs_in_levels(tmp_path, capsys):
    """model: congestion-aware runs flows in dependency levels, each a lock-step step: two 1 GB flows
    sharing link 0->1 and one alone on 2->3 (1 GB/s) form one level that lasts 2 GB / 1 GB/s = 2 s."""
    f = _write(tmp_path, """
topology: ring:4
bandwidth: 1GB/s
latency: 0ns
model: congestion-aware
flows:
  - {name: a, src: 0, dst: 1, size: 1GB, count: 2}
  - {name: b, src: 2, dst: 3, size: 1GB}
""")
    assert main(["traffic", f, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["makespan_s"] == pytest.approx(2.0)
