"""`fabricsim plot` and `sweep.plot`: every kind writes PNG and SVG with unit-carrying labels and a
legend entry per hue value, the Pareto front is right by hand, failed points are skipped, and bad
input is one line on stderr with exit code 2."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fabricsim.cli import main
from fabricsim.sweep.plot import load_results, pareto_front, results_figure

ALGOS, TOPOS, SIZES = ("ring", "tree"), ("ring:8", "torus:4x4"), [2 ** e for e in range(10, 31, 4)]


def _meta(i, error=None):
    return {"hash": f"h{i:04d}", "error": error, "wall_s": 0.01, "version": "0.1", "config": json.dumps({"i": i})}


def collective_rows():
    """all-reduce points: algorithm x topology x size; ring is 2x faster than tree, torus 1.5x."""
    rows = []
    for i, (a, t, s) in enumerate(itertools.product(ALGOS, TOPOS, SIZES)):
        time = (5e-6 + s / 50e9) * (2 if a == "tree" else 1) / (1.5 if t.startswith("torus") else 1)
        rows.append({**_meta(i), "algorithm": a, "topology": t, "size": s, "size_bytes": s, "time_s": time,
                     "algbw_Bps": s / time, "busbw_Bps": s / time * 7 / 4})
    # a failed point with absurd values: it must not show anywhere
    rows.append({**_meta(len(rows), "RuntimeError: boom"), "algorithm": "ring", "topology": "ring:8",
                 "size": 2 ** 20, "size_bytes": 2 ** 20, "time_s": None, "algbw_Bps": None, "busbw_Bps": 1e30})
    return rows


def train_rows():
    """training points: tp x dp; compute 40 ms shared out, exposed MP grows with tp, DP with dp."""
    rows = []
    for i, (tp, dp) in enumerate(itertools.product((1, 2, 4, 8), (1, 2))):
        b = {"compute_s": 0.04 / tp, "exposed_MP_s": 0.002 * (tp - 1), "exposed_DP_s": 0.003 * (dp - 1),
             "idle_s": 0.001}
        rows.append({**_meta(i), "tp": tp, "dp": dp, **b, "iteration_s": sum(b.values()), "cost": float(tp * dp)})
    return rows


def write(tmp_path, rows, layout, name="results"):
    """Rows as one Parquet file (`file`) or as a folder of two part files: with one schema
    (`folder`), or the first part's `error` column all null, typed null (`mixed`: what writing
    each part's rows as they come gives; `read_table` of the folder fails on it)."""
    if layout == "file":
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
        return path
    path = tmp_path / name
    path.mkdir()
    ok = [r for r in rows if not r["error"]]
    first, rest = ok[: len(ok) // 2], [r for r in rows if r not in ok[: len(ok) // 2]]
    schema = None if layout == "mixed" else pa.Table.from_pylist(rows).schema
    pq.write_table(pa.Table.from_pylist(first, schema=schema), path / "part-0000.parquet")
    pq.write_table(pa.Table.from_pylist(rest, schema=schema), path / "part-0001.parquet")
    return path


def cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------- the Pareto front


def brute_front(xs, ys):
    pts = [(x, y) for x, y in zip(xs, ys)]
    return sorted((i for i, (x, y) in enumerate(pts)
                   if not any(a <= x and b <= y and (a, b) != (x, y) for a, b in pts)),
                  key=lambda i: (pts[i], i))


def test_pareto_front_by_hand():
    """(1,5) beats (1,6) (same x) and (3,4); the two (2,3) are equal: both on the front; (5,0.5)
    beats (6,0.5) (same y); NaN points are ignored."""
    xs = [1, 2, 3, 4, 2, 5, 1, 6, float("nan"), 0]
    ys = [5, 3, 4, 1, 3, 0.5, 6, 0.5, 0, float("nan")]
    assert pareto_front(xs, ys) == [0, 1, 4, 3, 5]
    assert pareto_front([], []) == []
    assert pareto_front([3.0], [7.0]) == [0]
    assert pareto_front([1, 1, 1], [2, 2, 2]) == [0, 1, 2]  # all equal: nobody beats anybody
    assert pareto_front([1, 2, 3], [1, 2, 3]) == [0]  # one point beats all


def test_pareto_front_matches_brute_force():
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(1, 25)
        xs, ys = [rng.randint(0, 6) for _ in range(n)], [rng.randint(0, 6) for _ in range(n)]
        assert pareto_front(xs, ys) == brute_front(xs, ys)


# ---------------------------------------------------------------- every kind, PNG and SVG

KINDS = {
    # kind: (rows, options, texts the SVG must hold)
    "line": (collective_rows, ["--x", "size_bytes", "--y", "busbw_Bps", "--hue", "algorithm", "--facet", "topology"],
             ["busbw (GB/s)", "size", "ring", "tree", "topology = ring:8", "topology = torus:4x4", "1MiB"]),
    "bar": (collective_rows, ["--x", "algorithm", "--y", "time_s", "--hue", "topology", "--kind", "bar"],
            # tree on ring:8 at 1 GiB: 2 x (5 us + 1 GiB / 50 GB/s) = 42.96 ms, the tallest bar
            ["time (ms)", "algorithm", "ring:8", "torus:4x4", "ring", "tree"]),
    "breakdown": (train_rows, ["--x", "tp", "--hue", "dp", "--kind", "breakdown"],
                  ["time per iteration (ms)", "compute", "exposed MP", "exposed DP", "idle", "tp (groups), dp (bars)"]),
    "pareto": (train_rows, ["--x", "cost", "--y", "iteration_s", "--hue", "tp", "--kind", "pareto"],
               ["cost", "iteration (ms)", "Pareto front", "tp", "1", "2", "4", "8"]),
}


@pytest.mark.parametrize("layout", ["file", "folder", "mixed"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_writes_png_and_svg(tmp_path, kind, layout):
    make, opts, texts = KINDS[kind]
    results = write(tmp_path, make(), layout)
    for suffix in ("png", "svg"):
        out = tmp_path / f"{kind}.{suffix}"
        rc, stdout, err = cli("plot", results, *opts, "--out", out)
        assert rc == 0, err
        assert stdout.strip() == f"wrote {out}"
        assert out.stat().st_size > 1000
    svg = out.read_text()  # matplotlib writes each text as paths after a comment `<!-- text -->`
    assert svg.lstrip().startswith("<?xml")
    for t in texts:
        assert f"<!-- {t} -->" in svg, t


def test_default_output_name_is_next_to_the_results(tmp_path):
    for layout, stem in (("file", "a"), ("folder", "b"), ("mixed", "c")):
        results = write(tmp_path, collective_rows(), layout, stem)
        rc, out, err = cli("plot", results, "--x", "size_bytes", "--y", "busbw_Bps", "--hue", "algorithm")
        assert rc == 0, err
        assert out.strip() == f"wrote {tmp_path / f'{stem}_busbw_Bps_vs_size_bytes.png'}"
    rc, out, _ = cli("plot", write(tmp_path, train_rows(), "file", "t"), "--x", "tp", "--kind", "breakdown")
    assert rc == 0 and out.strip() == f"wrote {tmp_path / 't_breakdown_vs_tp.png'}"


# ---------------------------------------------------------------- what is drawn


def test_error_rows_are_skipped_and_counted(tmp_path):
    """The failed point (busbw 1e30) is not drawn; one note on stderr counts it."""
    results = write(tmp_path, collective_rows(), "mixed")
    notes = []
    fig = results_figure(load_results(results), "size_bytes", "busbw_Bps", hue="algorithm", facet="topology",
                         notes=notes)
    assert notes == ["note: skipped 1 of 25 points with an error"]
    ys = [y for ax in fig.axes for line in ax.get_lines() for y in line.get_ydata()]
    assert len(ys) == 24 and max(ys) < 200  # GB/s: at most 1 GiB in 14.3 ms x 7/4
    rc, _, err = cli("plot", results, "--x", "size_bytes", "--y", "busbw_Bps", "--hue", "algorithm",
                     "--facet", "topology", "--out", tmp_path / "p.png")
    assert rc == 0 and err.splitlines() == ["note: skipped 1 of 25 points with an error"]


def test_line_values_units_and_scales(tmp_path):
    """busbw is drawn in GB/s against bytes, one line per hue value (sorted); sizes (6 decades) and
    busbw (0.36 to 131 GB/s) span > 2 decades: log axes. Cost (1 to 16) and iteration time (17 to
    44 ms) do not: linear axes, unless --logx / --logy."""
    table = load_results(write(tmp_path, collective_rows(), "file"))
    (ax,) = results_figure(table, "size_bytes", "busbw_Bps", hue="algorithm", facet=None).axes
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_xlabel() == "size" and ax.get_ylabel() == "busbw (GB/s)"
    ring = ax.get_lines()[0]
    assert ring.get_label() == "ring" and list(ring.get_xdata()) == SIZES
    # without --facet the two topologies share each size: their mean is drawn
    want = [(s / (5e-6 + s / 50e9) * 7 / 4 + 1.5 * s / (5e-6 + s / 50e9) * 7 / 4) / 2 / 1e9 for s in SIZES]
    assert list(ring.get_ydata()) == pytest.approx(want, rel=1e-12)
    train = load_results(write(tmp_path, train_rows(), "file", "train"))
    for log in (False, True):
        (ax,) = results_figure(train, "cost", "iteration_s", kind="pareto", logx=log, logy=log).axes
        assert (ax.get_xscale(), ax.get_yscale()) == (("log", "log") if log else ("linear", "linear"))
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("cost", "iteration (ms)")


def test_shared_points_are_averaged_with_a_note(tmp_path):
    results = write(tmp_path, collective_rows(), "file")
    rc, _, err = cli("plot", results, "--x", "size_bytes", "--y", "time_s", "--out", tmp_path / "m.png")
    assert rc == 0
    assert err.splitlines()[1].startswith("note: 24 points share their size_bytes with others")


def test_pareto_front_drawn_on_the_results(tmp_path):
    """cost = tp x dp; the front of (cost, iteration time) is tp = 1, 2, 4 at dp = 1 (41, 23, 17 ms):
    tp = 8 (20 ms at cost 8) is beaten by tp = 4, every dp = 2 point by the dp = 1 point of equal cost."""
    fig = results_figure(load_results(write(tmp_path, train_rows(), "file")), "cost", "iteration_s", kind="pareto")
    (step,) = [line for line in fig.axes[0].get_lines() if line.get_label() == "Pareto front"]
    assert list(step.get_xdata()) == [1.0, 2.0, 4.0]
    assert list(step.get_ydata()) == pytest.approx([41.0, 23.0, 17.0], rel=1e-12)  # ms


def test_breakdown_stacks_and_totals(tmp_path):
    """One bar per tp, the mean over dp = 1, 2 of compute 40/tp ms, MP 2 (tp - 1) ms, DP 1.5 ms,
    idle 1 ms; the totals are written above the bars."""
    fig = results_figure(load_results(write(tmp_path, train_rows(), "file")), "tp", None, kind="breakdown")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "4", "8"]
    assert ax.get_ylabel() == "time per iteration (ms)"
    assert [t.get_text() for t in ax.texts] == ["42.5", "24.5", "18.5", "21.5"]
    assert [p.get_label() for p in ax.containers] == ["compute", "exposed MP", "exposed DP", "idle"]
    same = results_figure(load_results(write(tmp_path, train_rows(), "file", "again")), "tp", "iteration_s",
                          kind="breakdown").axes[0]
    assert [t.get_text() for t in same.texts] == ["42.5", "24.5", "18.5", "21.5"]


def test_axis_labels_carry_the_unit_of_the_suffix(tmp_path):
    """`_s`: the unit in which the largest value is >= 1; `_flops`: a decimal prefix; `_Bps`: GB/s;
    no known suffix: the name as it is."""
    rows = [{**_meta(i), "network.latency": 1e-7 * (i + 1), "lat_s": 2e-6 * (i + 1), "work_flops": 3e15 * (i + 1),
             "net_Bps": 4e10 * (i + 1), "speedup": 1.0 + i} for i in range(3)]
    table = load_results(write(tmp_path, rows, "file"))
    (ax,) = results_figure(table, "network.latency", "lat_s").axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("network.latency", "lat (us)")
    assert list(ax.get_lines()[0].get_ydata()) == pytest.approx([2.0, 4.0, 6.0])
    (ax,) = results_figure(table, "work_flops", "net_Bps", kind="pareto").axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("work (PFLOP)", "net (GB/s)")
    (ax,) = results_figure(table, "speedup", "wall_s", kind="bar").axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("speedup", "wall (ms)")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3"]


# ---------------------------------------------------------------- bad input

BAD = [
    # (options after RESULTS, words the error line must hold)
    (["--x", "size_bytes", "--y", "busbw_Bps", "--kind", "scatter"], ["--kind", "scatter", "line, bar"]),
    (["--x", "sizes", "--y", "busbw_Bps"], ["--x", "sizes", "size_bytes", "busbw_Bps"]),
    (["--x", "size_bytes", "--y", "busbw"], ["--y", "busbw", "busbw_Bps"]),
    (["--x", "size_bytes", "--y", "busbw_Bps", "--hue", "algo"], ["--hue", "algo", "algorithm"]),
    (["--x", "size_bytes", "--y", "busbw_Bps", "--facet", "topo"], ["--facet", "topo", "topology"]),
    (["--x", "algorithm", "--y", "busbw_Bps"], ["--x", "algorithm", "not numeric", "size_bytes"]),
    (["--x", "time_s", "--y", "topology", "--kind", "pareto"], ["--y", "topology", "not numeric"]),
    (["--x", "size_bytes", "--y", "busbw_Bps", "--out", "plot.jpg"], ["--out", "plot.jpg", ".png"]),
    (["--x", "size_bytes"], ["--y", "None"]),
    (["--x", "algorithm", "--y", "time_s", "--kind", "bar", "--logx"], ["--logx", "bar"]),
    (["--x", "algorithm", "--kind", "breakdown"], ["--kind", "breakdown", "compute_s"]),
    (["--x", "algorithm", "--y", "time_s", "--kind", "breakdown"], ["--y", "time_s", "iteration_s"]),
    (["--x", "size_bytes", "--y", "config"], ["--y", "config", "not numeric"]),
]


@pytest.mark.parametrize("opts, words", BAD, ids=[" ".join(o) for o, _ in BAD])
def test_bad_input_is_one_line_and_exit_2(tmp_path, opts, words):
    rc, out, err = cli("plot", write(tmp_path, collective_rows(), "file"), *opts)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], (w, lines[0])


def test_missing_results_and_empty_results(tmp_path):
    rc, _, err = cli("plot", tmp_path / "nope.parquet", "--x", "a", "--y", "b")
    assert rc == 2 and err.count("\n") == 1 and "--results" in err and "nope.parquet" in err
    failed = [r for r in collective_rows() if r["error"]]
    rc, _, err = cli("plot", write(tmp_path, failed, "file"), "--x", "size_bytes", "--y", "busbw_Bps")
    assert rc == 2 and err.count("\n") == 1 and "--results" in err and "results.parquet" in err
    assert "no point without an error" in err
    (tmp_path / "junk.parquet").write_text("not parquet")
    rc, _, err = cli("plot", tmp_path / "junk.parquet", "--x", "a", "--y", "b")
    assert rc == 2 and err.count("\n") == 1 and "--results" in err
