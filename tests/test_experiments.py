"""Experiments as points: every registered study's points evaluate through any map (a process
pool gives the same rows as the builtin map), every study is a `fabricsim reproduce` command,
and a registry line is all a new study needs."""

from __future__ import annotations

import pickle
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from fabricsim.cli import main
from fabricsim.experiments import EXPERIMENTS, Experiment, run_experiment
from fabricsim.experiments import swing as swing_ex


def test_every_study_pickles_its_points_and_evaluate():
    for name, exp in EXPERIMENTS.items():
        cfg = exp.load_config(None)
        pts = exp.points(cfg, True)
        assert pts, name
        for p in pts:
            assert pickle.loads(pickle.dumps(p)) == p
        assert pickle.loads(pickle.dumps(exp.evaluate)) is exp.evaluate


def test_process_pool_gives_the_same_rows_as_map():
    """The quick Swing points on two processes: identical rows, so an identical report."""
    cfg = swing_ex.parse_config(_small_swing())
    pts = swing_ex.points(cfg, quick=True)
    serial = list(map(swing_ex.evaluate, pts))
    with ProcessPoolExecutor(2) as pool:
        parallel = list(pool.map(swing_ex.evaluate, pts))
    assert parallel == serial
    a = run_experiment(EXPERIMENTS["swing"], cfg, quick=True)
    with ProcessPoolExecutor(2) as pool:
        b = run_experiment(EXPERIMENTS["swing"], cfg, quick=True, map_fn=pool.map)
    assert [c.entries for c in a.cases] == [c.entries for c in b.cases] and a.gains == b.gains


def _small_swing() -> dict:
    """Two small tori with the ring as baseline and hierarchical as subject: a fast run."""
    return {
        "name": "small",
        "network": {"link_bandwidth": "400Gbps", "link_latency": "100ns", "hop_processing": "300ns",
                    "step_overhead": "0.486us"},
        "sizes": {"min": "32B", "max": "2MiB", "factor": 16},
        "shapes": [{"dims": [4, 4]}, {"dims": [2, 4, 4]}],
        "algorithms": [
            {"key": "hier", "role": "subject", "variants": [{"algorithm": "hierarchical"}]},
            {"key": "ring", "role": "baseline", "variants": [{"algorithm": "ring"}]},
        ],
        "quick": {"shapes": ["4x4", "2x4x4"]},
    }


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_study_is_a_reproduce_command(capsys, name):
    assert main(["reproduce", name, "--help"]) == 0
    out = capsys.readouterr().out
    assert "--quick" in out and "--config" in out and "--json" in out


@dataclass(frozen=True)
class _Square:
    x: int


def _square(p: _Square) -> int:
    return p.x * p.x


def test_a_registry_line_is_all_a_study_needs(monkeypatch, tmp_path, capsys):
    """A study of sums of squares: registered, it runs through run_experiment and the CLI."""
    import fabricsim.cli.reproduce as cli_reproduce

    written = []
    exp = Experiment(
        name="squares", summary="sum of squares", quick_help="three points",
        load_config=lambda path: 5, points=lambda n, quick: [_Square(i) for i in range(3 if quick else n)],
        evaluate=_square, summarize=lambda cfg, pts, rows, quick, elapsed: sum(rows),
        write=lambda rep, out: written.append(Path(out)) or [], render=lambda rep, con, files: con.print(f"sum={rep}"),
        to_json=lambda rep: {"sum": rep}, default_out=tmp_path / "sq",
    )
    assert run_experiment(exp, 5) == 0 + 1 + 4 + 9 + 16
    assert run_experiment(exp, 5, quick=True) == 5
    seen = []
    run_experiment(exp, 4, progress=lambda done, total, label: seen.append((done, total)))
    assert seen[-1] == (4, 4)
    monkeypatch.setitem(EXPERIMENTS, "squares", exp)
    monkeypatch.setattr(cli_reproduce.reproduce_app, "registered_commands",
                        list(cli_reproduce.reproduce_app.registered_commands))  # restored after the test
    cli_reproduce.reproduce_app.command("squares")(cli_reproduce._command(exp))
    assert main(["reproduce", "squares", "--json"]) == 0
    assert '"sum": 30' in capsys.readouterr().out and written == [tmp_path / "sq"]
