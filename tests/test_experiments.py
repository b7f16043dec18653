"""Experiments as points: every registered study's points and evaluate pickle, a process pool
gives the same rows as the builtin map, every study is a `fabricsim reproduce` command, and a
registry line is all a new study needs."""

from __future__ import annotations

import json
import multiprocessing
import pickle
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from fabricsim.cli import main
from fabricsim.experiments import EXPERIMENTS, Experiment, run_experiment
from fabricsim.experiments import fred as fred_ex
from fabricsim.experiments import swing as swing_ex

REPO = Path(__file__).resolve().parents[1]


def test_every_study_pickles_its_points_and_evaluate():
    for name, exp in EXPERIMENTS.items():
        cfg = exp.load_config(None)
        pts = exp.points(cfg, True)
        assert pts, name
        for p in pts:
            assert pickle.loads(pickle.dumps(p)) == p, (name, exp.label(p))
        assert pickle.loads(pickle.dumps(exp.evaluate)) is exp.evaluate
        assert pickle.loads(pickle.dumps(exp)) == exp  # the whole study travels by reference


def test_swing_points_are_one_per_torus_and_bandwidth():
    """The shipped quick subset: 4 tori at 400 Gb/s plus the 8x8 sweep's 5 other bandwidths."""
    cfg = swing_ex.load_config(REPO / "configs" / "swing.yaml")
    pts = swing_ex.points(cfg, quick=True)
    assert [p.name for p in pts] == ["8x8", "8x8@100Gb/s", "8x8@200Gb/s", "8x8@800Gb/s", "8x8@1.6Tb/s", "8x8@3.2Tb/s",
                                     "16x16", "8x8x8", "64x16"]
    assert [p.base for p in pts].count(True) == 4
    assert pts[1].bandwidth_Bps == pytest.approx(100e9 / 8) and pts[0].bandwidth_Bps == pytest.approx(400e9 / 8)


def test_process_pool_gives_the_same_rows_as_map():
    """The quick Swing points on two fresh (spawned) processes: identical rows, so an identical
    report; FRED's traffic points there give 2(N-1)/N D per NPU for the ring and D in-network."""
    exp = EXPERIMENTS["swing"]
    cfg = exp.load_config(None)
    pts = exp.points(cfg, True)
    serial = list(map(exp.evaluate, pts))
    traffic = [p for p in fred_ex.points(fred_ex.load_config(None), True) if isinstance(p, fred_ex.TrafficPoint)]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        parallel = list(pool.map(exp.evaluate, pts))
        fred_rows = list(pool.map(fred_ex.evaluate, traffic))
    assert parallel == serial
    a = exp.summarize(cfg, pts, serial, True, 0.0)
    b = exp.summarize(cfg, pts, parallel, True, 0.0)
    assert a == b
    assert [r.n for r in fred_rows] == [2, 4, 5, 10, 20]
    for r in fred_rows:
        assert r.in_network_per_npu == pytest.approx(1.0)
        assert r.endpoint_per_npu == pytest.approx(2 * (r.n - 1) / r.n)


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_study_is_a_reproduce_command(capsys, name):
    assert main(["reproduce", name, "--help"]) == 0
    out = capsys.readouterr().out
    for opt in ("--quick", "--out", "--config", "--json"):
        assert opt in out
    assert main(["reproduce", "--help"]) == 0
    assert name in capsys.readouterr().out


@dataclass(frozen=True)
class _Square:
    x: int


def _square(p: _Square) -> int:
    return p.x * p.x


def _squares(tmp_path: Path, written: list) -> Experiment:
    """A study of sums of squares: n points 0..n-1 (3 with --quick), each evaluating to x^2."""
    return Experiment(
        name="squares", summary="sum of squares", quick_help="three points",
        load_config=lambda path: 5, points=lambda n, quick: [_Square(i) for i in range(3 if quick else n)],
        evaluate=_square, summarize=lambda cfg, pts, rows, quick, elapsed: sum(rows),
        write=lambda rep, out: written.append(Path(out)) or [], render=lambda rep, con, files: con.print(f"sum={rep}"),
        to_json=lambda rep: {"sum": rep}, default_out=tmp_path / "sq", label=lambda p: f"x={p.x}",
    )


def test_a_registry_line_is_all_a_study_needs(monkeypatch, tmp_path, capsys):
    """Registered with one line, the study runs through run_experiment and is a CLI command."""
    written: list = []
    exp = _squares(tmp_path, written)
    monkeypatch.setitem(EXPERIMENTS, "squares", exp)  # the registration line
    assert run_experiment(EXPERIMENTS["squares"], 5) == 0 + 1 + 4 + 9 + 16
    assert run_experiment(exp, 5, quick=True) == 0 + 1 + 4
    seen = []
    run_experiment(exp, 4, progress=lambda done, total, label: seen.append((done, total, label)))
    assert seen == [(0, 4, "x=0"), (1, 4, "x=1"), (2, 4, "x=2"), (3, 4, "x=3"), (4, 4, "done")]
    assert main(["reproduce", "squares", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"sum": 30, "files": []}
    # the study writes into a temporary sibling folder, renamed to its folder at the end
    assert [w.parent for w in written] == [tmp_path] and (tmp_path / "sq").is_dir()
    assert main(["reproduce", "squares", "--quick", "--out", str(tmp_path / "o")]) == 0
    assert "sum=5" in capsys.readouterr().out and written[-1].parent == tmp_path and (tmp_path / "o").is_dir()


def test_docstring_example_runs():
    import doctest

    import fabricsim.experiments.base as base

    result = doctest.testmod(base, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
