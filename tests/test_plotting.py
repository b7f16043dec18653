"""The one plotting helper (`fabricsim.report.plotting`) and the figures drawn through it: scales
chosen by the data, bar labels equal to the bars, the paper's values beside ours, legends outside
the data, headroom above the tallest bar; `collective --plot` and `traffic --plot`."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.cli import main
from fabricsim.report import figures, plotting

PNG = b"\x89PNG\r\n\x1a\n"


def _numbers(texts) -> list[float]:
    out = []
    for t in texts:
        s = t.get_text().rstrip("%")
        try:
            out.append(float(s))
        except ValueError:
            pass
    return out


def _outside(fig, legend, axes) -> bool:
    """The legend's box lies right of every axes box (drawn, in pixels)."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    lb = legend.get_window_extent(r)
    return all(lb.x0 >= ax.get_window_extent(r).x1 - 1e-6 for ax in axes)


# ---------------------------------------------------------------- the rules


def test_log_rule_is_more_than_two_decades():
    assert not plotting.spans_decades([1.0, 100.0])  # exactly 2 decades: linear
    assert plotting.spans_decades([1.0, 100.5])
    assert not plotting.spans_decades([0.0, 1e9])  # a zero cannot go on a log axis
    assert not plotting.spans_decades([np.nan, 5.0, np.inf])


@pytest.mark.parametrize("seconds, unit, factor", [([406.0, 27.0], "s", 1.0), ([4.2e-3, 1e-4], "ms", 1e3),
                                                   ([5e-4], "us", 1e6), ([3e-8], "ns", 1e9), ([1.0], "s", 1.0)])
def test_time_unit_is_the_largest_in_which_the_largest_value_is_at_least_one(seconds, unit, factor):
    f, u = plotting.time_unit(seconds)
    assert u == unit and f == pytest.approx(factor, rel=1e-12)


def test_sizes_spanning_decades_get_a_log2_axis_with_binary_labels():
    sizes = [2.0 ** k for k in range(10, 31)]  # 1 KiB .. 1 GiB
    fig = figures.busbw_figure({"ring": (sizes, [10e9] * len(sizes))})
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert {"1KiB", "1MiB", "1GiB"} <= set(labels)
    assert ax.get_yscale() == "linear"  # 10 GB/s everywhere: nothing to spread
    line = ax.get_lines()[0]
    assert list(line.get_xdata()) == sizes and line.get_marker() == "o"


def test_sizes_within_two_decades_stay_linear_with_a_tick_per_size():
    sizes = [2.0 ** 20, 2.0 ** 21, 2.0 ** 22]
    fig = figures.busbw_figure({"ring": (sizes, [1e9, 2e9, 3e9])})
    ax = fig.axes[0]
    assert ax.get_xscale() == "linear"
    fig.canvas.draw()
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1MiB", "2MiB", "4MiB"]


def test_values_spanning_decades_get_a_log_value_axis():
    sizes = [2.0 ** k for k in range(5, 31)]
    busbw = [50e9 * s / (s + 2 ** 20) for s in sizes]  # 1.5e-3 .. 50 GB/s
    ax = figures.busbw_figure({"a": (sizes, busbw)}).axes[0]
    assert ax.get_yscale() == "log"
    assert ax.get_ylim()[1] > max(busbw) / 1e9


def test_stacked_bars_label_their_totals_and_keep_headroom():
    _fig, (ax,) = plotting.figure()
    segs = {"compute": [3.0, 1.0, 2.0], "MP": [0.5, 0.0, 1.5], "idle": [0.0, 0.0, 0.0]}
    totals = plotting.stacked_bars(ax, [0, 1, 2], segs)
    plotting.headroom(ax, totals)
    assert list(totals) == [3.5, 1.0, 3.5]
    assert _numbers(ax.texts) == [3.5, 1.0, 3.5]
    assert len(ax.containers) == 2  # the all-zero segment is not drawn
    assert ax.get_ylim()[1] > 3.5 and ax.get_ylim()[0] == 0.0


def test_paper_bars_beside_ours_and_the_ratio():
    _fig, (ax,) = plotting.figure()
    plotting.paper_bars(ax, [0, 1], [2.0, 1.5], [1.0, None], fmt="{:.2f}".format)
    paper = [p for p in ax.patches if p.get_gid() == "paper"]
    assert [p.get_height() for p in paper] == [1.0]
    assert paper[0].get_hatch() == "////"
    assert sorted(_numbers(ax.texts)) == [1.0, 1.5, 2.0]
    assert plotting.ratio_text(2.0, 1.0) == "x2.00" and plotting.ratio_text(1.5, None) == "-"


# ---------------------------------------------------------------- FRED's figures


def _fred_rep():
    from fabricsim.experiments.fred import (
        E2ERow,
        MicroRow,
        Reproduction,
        SweepRow,
        SweepSummary,
    )

    micro = tuple(MicroRow("MP(20)", s, 5, ours, paper, 1.0) for s, ours, paper in
                  (("mesh", 1.27, 1.267), ("Fred-A", 1.57, 1.027), ("Fred-D", 0.334, 0.333)))
    bd = {"compute": 400.0, "DP": 6.0, "idle": 0.0}
    e2e = (E2ERow("T-1T", "mesh", 406.0, bd, None, None), E2ERow("T-1T", "Fred-C", 290.0, {"compute": 290.0}, 1.4, 1.40),
           E2ERow("T-1T", "Fred-D", 203.0, {"compute": 203.0}, 2.0, 1.60))
    sweep = (SweepRow("T-17B", "MP(20)-DP(1)-PP(1)", "mesh", 14.6e-3, 11.1e-3, 3.5e-3),
             SweepRow("T-17B", "MP(20)-DP(1)-PP(1)", "Fred-D", 12.1e-3, 11.1e-3, 1.0e-3),
             SweepRow("T-17B", "MP(10)-DP(2)-PP(1)", "mesh", 14.4e-3, 11.0e-3, 3.4e-3),
             SweepRow("T-17B", "MP(10)-DP(2)-PP(1)", "Fred-D", 11.6e-3, 11.0e-3, 0.6e-3))
    summ = (SweepSummary("T-17B", 1.23, 5.5, {"mesh": "MP(10)-DP(2)-PP(1)", "Fred-D": "MP(10)-DP(2)-PP(1)"},
                         {"exposed_comm_reduction": 4.22, "speedup": 1.63, "fastest_on_fred": "MP(20)-DP(1)-PP(1)"}),)
    return Reproduction("fred.yaml", True, micro, (), e2e, sweep, summ)


def test_fred_microbenchmarks_show_the_papers_values_and_ratios():
    from fabricsim.experiments.fred.plots import micro_figure

    fig = micro_figure(_fred_rep())
    ax = fig.axes[0]
    ours = [p for p in ax.patches if p.get_gid() != "paper"]
    paper = [p for p in ax.patches if p.get_gid() == "paper"]
    assert [p.get_height() for p in ours] == [1.27, 1.57, 0.334]
    assert [p.get_height() for p in paper] == [1.267, 1.027, 0.333]
    assert sorted(_numbers(ax.texts)) == sorted(float(f"{v:.2f}") for v in (1.27, 1.57, 0.334, 1.267, 1.027, 0.333))
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[1] == f"Fred-A\nx{1.57 / 1.027:.2f}"
    assert ax.get_ylim()[1] > 1.57
    assert fig.legends and _outside(fig, fig.legends[0], fig.axes)


def test_fred_end_to_end_in_seconds_with_the_papers_speedups():
    from fabricsim.experiments.fred.plots import e2e_figure

    fig = e2e_figure(_fred_rep())
    ax = fig.axes[0]
    assert ax.get_ylabel() == "time per iteration (s)"  # 406 s, not 406,000 ms
    assert _numbers(ax.texts) == [406.0, 290.0, 203.0]  # totals on the bars
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[1] == "Fred-C\n1.40x\npaper 1.40x" and ticks[2] == "Fred-D\n2.00x\npaper 1.60x"
    (paper,) = [ln for ln in ax.get_lines() if ln.get_gid() == "paper"]
    # the paper's speedup as the time it implies: our mesh time / the paper's speedup
    assert list(paper.get_ydata()) == pytest.approx([406.0 / 1.40, 406.0 / 1.60], rel=1e-12)
    assert paper.get_marker() == "D" and paper.get_markerfacecolor() == "none"
    assert ax.get_ylim()[1] > 406.0
    assert _outside(fig, fig.legends[0], fig.axes)


def test_fred_sweep_labels_bars_and_states_the_papers_averages():
    from fabricsim.experiments.fred.plots import sweep_figure

    fig = sweep_figure(_fred_rep())
    ax = fig.axes[0]
    assert ax.get_ylabel() == "time per sample (ms)"
    assert sorted(_numbers(ax.texts)) == [11.6, 12.1, 14.4, 14.6]  # every bar's total, in ms
    assert ax.get_ylim()[1] > 14.6
    text = ax.get_xlabel()
    assert "speedup: ours 1.23, paper 1.63" in text and f"x{1.23 / 1.63:.2f}" in text
    assert "reduction: ours 5.50, paper 4.22" in text and "paper MP(20)-DP(1)-PP(1)" in text
    assert "paper's fastest on Fred-D" in ax.get_xticklabels()[0].get_text()
    assert _outside(fig, fig.legends[0], fig.axes)


# ---------------------------------------------------------------- Swing's goodput


def test_swing_goodput_names_the_topology_family_and_uses_a_log_axis():
    from fabricsim.experiments.swing.results import (
        CaseResult,
        Curve,
        GoodputRow,
        Reproduction,
        goodput_gbps,
    )

    sizes = tuple(2.0 ** k for k in range(5, 31, 5))
    t = np.array([1e-6 + s / 50e9 for s in sizes])
    gp = tuple(goodput_gbps(np.array(sizes), t))
    case = CaseResult("hyperx64x64", "hyperx64x64", (64, 64), 50e9, True, sizes, 800.0,
                      (Curve("swing", "Swing", "entry", tuple(t), gp, ("B",) * len(sizes)),), (),
                      (None,) * len(sizes), (None,) * len(sizes), "hyperx")
    row = GoodputRow("hyperx64x64", "swing", "Swing", sizes[-1], gp[-1], 795.0, gp[-1] / 795.0)
    rep = Reproduction("swing.yaml", True, "flow", 50e9, 1e-7, 0.0, (case,), (), (), (), (row,), (), (), ())
    from fabricsim.experiments.swing.plots import goodput_figure

    ax = goodput_figure(rep, case).axes[0]
    assert "HyperX" in ax.get_title() and "torus" not in ax.get_title()
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    (paper,) = [ln for ln in ax.get_lines() if ln.get_gid() == "paper"]
    assert list(paper.get_xdata()) == [sizes[-1]] and list(paper.get_ydata()) == [795.0]
    assert f"x{gp[-1] / 795.0:.2f}" in [t.get_text() for t in ax.texts]
    assert _outside(ax.figure, ax.get_legend(), [ax])


# ---------------------------------------------------------------- the CLI


def test_collective_plot_draws_the_busbw_of_the_closed_form(tmp_path, capsys, monkeypatch):
    """ring all-reduce on ring:8, 50 GB/s, 100 ns: t = 2(n-1)(a + S/(nB)), busbw = 2(n-1)/n S/t."""
    drawn = []
    real_save = plotting.save
    monkeypatch.setattr(plotting, "save", lambda fig, path, *a: drawn.append(fig) or real_save(fig, path, *a))
    png = tmp_path / "sub" / "busbw.png"
    rc = main(["collective", "-t", "ring:8", "-B", "50GB/s", "-L", "100ns", "-s", "1KiB:1GiB", "--plot", str(png)])
    out, err = capsys.readouterr()
    assert rc == 0 and err == "" and f"wrote plot: {png}" in out
    assert png.read_bytes()[:8] == PNG
    n, B, a = 8, 50e9, 100e-9
    S = np.array([2.0 ** k for k in range(10, 31)])
    busbw = 2 * (n - 1) / n * S / (2 * (n - 1) * (a + S / (n * B)))
    (ax,) = drawn[0].axes
    (line,) = ax.get_lines()
    assert list(line.get_xdata()) == list(S)
    assert np.asarray(line.get_ydata()) == pytest.approx(busbw / 1e9, rel=1e-12)
    assert ax.get_xscale() == "log" and ax.get_ylabel() == "busbw (GB/s)"
    assert line.get_label() == "ring (congestion-aware)"


@pytest.mark.parametrize("cmd", ["collective", "traffic"])
@pytest.mark.parametrize("bad", ["plot.xyz", "afile/plot.png", "."])
def test_a_bad_plot_path_is_one_line_and_exit_2(tmp_path, capsys, cmd, bad):
    (tmp_path / "afile").write_text("")
    traffic = tmp_path / "t.yaml"
    traffic.write_text("topology: ring:4\nflows:\n  - {src: 0, dst: 1, size: 1MB}\n")
    args = ["collective", "-t", "ring:4", "-s", "1KiB"] if cmd == "collective" else ["traffic", str(traffic)]
    path = tmp_path / bad if bad != "." else tmp_path
    rc = main(args + ["--plot", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("fabricsim: error: --plot: invalid value")
    assert "accepted" in err and "Traceback" not in err


def test_traffic_plot_names_the_busiest_links(tmp_path, capsys, monkeypatch):
    """ring:4, 100 GB/s, no latency: 1 GB over 0->1 and 0.5 GB over 2->3 at once. Makespan 1e9/1e11 =
    10 ms; utilization = bytes / (bandwidth x makespan): 0->1 100 %, 2->3 50 %, the rest 0."""
    drawn = []
    real_save = plotting.save
    monkeypatch.setattr(plotting, "save", lambda fig, path, *a: drawn.append(fig) or real_save(fig, path, *a))
    f = tmp_path / "t.yaml"
    f.write_text("topology: ring:4\nbandwidth: 100GB/s\nlatency: 0ns\nflows:\n"
                 "  - {name: a, src: 0, dst: 1, size: 1GB}\n  - {name: b, src: 2, dst: 3, size: 500MB}\n")
    png = tmp_path / "util.png"
    assert main(["traffic", str(f), "--plot", str(png)]) == 0
    assert f"wrote plot: {png}" in capsys.readouterr().out
    assert png.read_bytes()[:8] == PNG
    left, right = drawn[0].axes
    ticks = sorted(zip(left.get_yticks(), (t.get_text() for t in left.get_yticklabels())), reverse=True)
    assert [name for _, name in ticks] == ["0->1", "2->3"]  # busiest on top
    assert sorted(p.get_width() for p in left.patches) == pytest.approx([50.0, 100.0], rel=1e-9)
    assert [t.get_text() for t in left.texts] == ["100.0%", "50.0%"]
    assert [p.get_height() for p in right.patches] == pytest.approx([100.0, 50.0] + [0.0] * 6, rel=1e-9, abs=1e-9)
    assert left.get_xlim()[1] > 100.0 and right.get_ylim()[1] > 100.0
    assert _outside(drawn[0], drawn[0].legends[0], drawn[0].axes)


def test_the_same_figure_gives_the_same_bytes(tmp_path):
    sizes = [2.0 ** k for k in range(10, 21)]
    paths = [plotting.save(figures.busbw_figure({"x": (sizes, [s / 1e3 for s in sizes])}), tmp_path / f"{i}.png")
             for i in range(2)]
    assert paths[0].read_bytes() == paths[1].read_bytes()
