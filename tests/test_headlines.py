"""The headline-figures table every reproduction ends with: ratio, within/outside 15%, verdict,
and what `fabricsim reproduce` prints, writes and puts in its JSON."""

import json

import pytest

from fabricsim.experiments.headlines import (
    HEADLINE_TOLERANCE,
    HeadlineFigure,
    counts,
    format_value,
    headlines_json,
    verdict_line,
    write_headlines,
)


def test_ratio_and_tolerance_edges():
    assert HEADLINE_TOLERANCE == 0.15
    assert HeadlineFigure("a", 2.0, 2.3).within is True        # 1.15: on the edge, within
    assert HeadlineFigure("a", 2.0, 1.7).within is True        # 0.85
    assert HeadlineFigure("a", 2.0, 2.32).within is False      # 1.16
    assert HeadlineFigure("a", 2.0, 1.68).within is False      # 0.84
    assert HeadlineFigure("a", 4.0, 3.0).ratio == 0.75
    for paper, ours in ((None, 1.0), (1.0, None), (0.0, 1.0)):
        h = HeadlineFigure("a", paper, ours)
        assert h.ratio is None and h.within is None and h.word == "not compared"


def test_verdict_counts_only_what_is_compared():
    figs = [HeadlineFigure("a", 1.0, 1.1), HeadlineFigure("b", 1.0, 2.0, "cause"), HeadlineFigure("c", 1.0, None)]
    assert counts(figs) == (1, 2)
    assert verdict_line(figs) == "verdict: 1 of 2 headline figures within 15% (1 not compared)"
    assert verdict_line(figs[:2]) == "verdict: 1 of 2 headline figures within 15%"
    d = headlines_json(figs)
    assert d["verdict"] == {"within": 1, "compared": 2, "total": 3, "tolerance": 0.15, "line": verdict_line(figs)}
    assert [h["within"] for h in d["headlines"]] == [True, False, None]


def test_units_print_as_the_paper_gives_them():
    assert format_value(0.0447, "s") == "44.7 ms"
    assert format_value(2.966, "x") == "2.97x"
    assert format_value(0.55, "%") == "55%"
    assert format_value(None, "x") == "-"


def test_csv_round_trips_the_numbers(tmp_path):
    import csv

    figs = [HeadlineFigure("Fig. 1, a speedup", 2.97, 3.11, "", "x"), HeadlineFigure("b, c", 1.0, 1.5, "why, so", "")]
    (path,) = write_headlines(figs, tmp_path)
    rows = list(csv.DictReader(path.open()))
    assert [r["figure"] for r in rows] == ["Fig. 1, a speedup", "b, c"]
    assert float(rows[0]["fabricsim"]) == 3.11 and float(rows[0]["ratio"]) == pytest.approx(3.11 / 2.97)
    assert rows[1]["within"] == "outside" and rows[1]["cause"] == "why, so"
    assert write_headlines([], tmp_path / "none") == []


def test_reproduce_prints_the_table_last_and_writes_it(tmp_path, capsys):
    """A study's headlines reach the console (after everything else), the JSON and headlines.csv."""
    from dataclasses import replace

    from fabricsim.experiments import EXPERIMENTS
    from fabricsim.experiments.base import reproduce

    figs = (HeadlineFigure("Fig. 2, speedup", 2.0, 2.1, "", "x"), HeadlineFigure("Fig. 3", 1.0, 1.6, "the cause"))
    exp = replace(EXPERIMENTS["swing"], headlines=lambda rep: figs)
    rep_points = exp.points
    exp = replace(exp, points=lambda cfg, quick: rep_points(cfg, quick)[:1])
    reproduce(exp, out=tmp_path / "a", quick=True)
    out = capsys.readouterr().out.rstrip().splitlines()
    assert out[-2:] == ["verdict: 1 of 2 headline figures within 15%", "  outside: Fig. 3: the cause"]
    assert any(line.split()[:1] == ["headline"] for line in out[-8:])
    assert (tmp_path / "a" / "headlines.csv").is_file()
    reproduce(exp, out=tmp_path / "b", quick=True, json_out=True)
    d = json.loads(capsys.readouterr().out)
    assert d["verdict"]["line"] == "verdict: 1 of 2 headline figures within 15%"
    assert str(tmp_path / "b" / "headlines.csv") in d["files"]
