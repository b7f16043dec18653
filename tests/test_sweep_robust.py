"""`fabricsim sweep` robustness (issue 46): points counted before they are expanded (defects 5, 6),
`--dask` checked and a silent scheduler named in one line (7), every point validated as it will run
and failed points never an exit 0 (8), `--out` and `plot` errors naming the option (12)."""

from __future__ import annotations

import contextlib
import copy
import io
import itertools
import random
import time
from pathlib import Path

import pytest
import yaml

from fabricsim.cli import main
from test_sweep_store import one_line  # noqa: E402  (the one-line error check both files use)
from fabricsim.sweep.spec import (COLLECTIVE_DEFAULTS, SweepSpec, _set, block_values, count_points, expand,
                                  point_hash)

SIZES = [f"{2**k}KiB" for k in range(10)]


def cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


def write(tmp_path, data, name="s.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


def collective(axes, **base):
    return {"name": "s", "kind": "collective",
            "base": {"collective": "all-reduce", "latency": "500ns", "topology": "ring:8", "algorithm": "ring",
                     "model": "analytical", "size": "1MiB", **base}, "axes": axes}


def brute(spec: SweepSpec) -> list[tuple]:
    """The sweep's points by the full product of the blocks (every combination built), repeats
    dropped: what `expand` must give without building the combinations it can skip."""
    out, seen = [], set()
    for parts in itertools.product(*[block_values(b) for b in spec.axes]):
        config, axes = copy.deepcopy(spec.base), {}
        for part in parts:
            for path, value in part.items():
                _set(config, path, value)
                axes[path] = value
        if spec.kind == "collective":
            config = {**COLLECTIVE_DEFAULTS, **config}
        h = point_hash(spec.kind, config)
        if h not in seen:
            seen.add(h)
            out.append((len(out), h, axes, config))
    return out


# ---------------------------------------------------------------- counting before expanding (5, 6)


def big7():
    """The filed sweep: 7 grid blocks of 10 values, 10^7 combinations; the last 5 blocks all set
    `size`, so 10 x 10 x 10 = 1,000 distinct points."""
    return collective([{"grid": {"bandwidth": [f"{10 * k}Gbps" for k in range(1, 11)]}},
                       {"grid": {"latency": [f"{k}ns" for k in range(1, 11)]}}]
                      + [{"grid": {"size": SIZES}}] * 5)


def test_ten_million_combinations_of_one_thousand_points_dry_run_fast(tmp_path):
    """The filed defect: `--dry-run` of big7 took 114 s (every combination built and hashed). Now
    it is counted as 10 x 10 x 10 = 1,000 and expanded as that: well under 10 s, 1,000 points."""
    spec = SweepSpec.model_validate(big7())
    assert count_points(spec) == 1000
    t0 = time.perf_counter()
    rc, text, err = cli("sweep", write(tmp_path, big7()), "--out", tmp_path / "o", "--dry-run")
    assert rc == 0 and "s: 1000 points (1000 to run)" in text, err
    assert time.perf_counter() - t0 < 10


def test_expansion_equals_the_full_product_in_order():
    """`expand` (first occurrences only) gives the points, order, axes and configs of the full
    product with repeats dropped: big7 cut to 4 blocks, and 60 random sweeps whose blocks repeat
    values and set fields (and sections above them: `c` over `c.x`) again."""
    cut = big7()
    cut["axes"] = cut["axes"][:4]
    specs = [SweepSpec.model_validate(cut)]
    rng = random.Random(46)
    pools = {"a": [1, 2, 2, 3], "b": ["x", "y", "x"], "c": [{"x": 1}, {"y": 2}, {"x": 1}], "c.x": [5, 6, 5],
             "c.y": [7, 8]}
    for _ in range(60):
        axes = []
        for _ in range(rng.randint(1, 4)):
            names = rng.sample(sorted(pools), rng.randint(1, 3))
            kind = rng.choice(["grid", "zip", "random"])
            if kind == "grid":
                axes.append({"grid": {n: rng.sample(pools[n], rng.randint(1, len(pools[n]))) for n in names}})
            elif kind == "zip":
                k = rng.randint(1, 3)
                axes.append({"zip": {n: [rng.choice(pools[n]) for _ in range(k)] for n in names}})
            else:
                axes.append({"random": {"n": rng.randint(1, 5), "seed": rng.randint(0, 9),
                                        "fields": {n: {"choice": pools[n]} for n in names}}})
        specs.append(SweepSpec.model_validate({"kind": "train", "base": {"c": {"z": 0}}, "axes": axes}))
    for spec in specs:
        want = brute(spec)
        got = [(p.index, p.hash, p.axes, p.config) for p in expand(spec)]
        assert got == want
        assert len(want) <= count_points(spec)


def test_points_beyond_the_limit_are_refused_before_any_is_drawn(tmp_path):
    """The filed defect: `random: {n: 100000000}` under --dry-run had no limit. Now one line naming
    axes, the count and `--limit points`, at once; a raised limit lets a sweep through."""
    data = collective([{"random": {"n": 100_000_000, "seed": 1, "fields": {"size": {"choice": ["1KiB", "1MiB"]}}}}])
    t0 = time.perf_counter()
    rc, _, err = cli("sweep", write(tmp_path, data), "--dry-run")
    assert rc == 2 and time.perf_counter() - t0 < 5
    one_line(err, "axes", "100,000,000 sweep points", "limit of 1,000,000", "--limit points=N")
    grid = collective([{"grid": {"size": SIZES[:3], "latency": ["1ns", "2ns", "3ns"]}}])
    f = write(tmp_path, grid, "g.yaml")
    rc, _, err = cli("--limit", "points=8", "sweep", f, "--dry-run")
    assert rc == 2 and "it needs 9 sweep points" in err
    rc, text, _ = cli("--limit", "points=9", "sweep", f, "--dry-run")
    assert rc == 0 and "9 points" in text


# ---------------------------------------------------------------- --dask (7)


@pytest.mark.parametrize("address", ["nope", "tcp://nope", "tcp://host:99999", "local:0", "local:x"])
def test_a_malformed_dask_address_is_one_line(tmp_path, address):
    """The filed defect: `--dask nope` ended in a ValueError traceback (missing port), for sweep and
    reproduce. Now one line naming --dask and the value, before anything runs."""
    f = write(tmp_path, collective([{"grid": {"size": ["1KiB"]}}]))
    rc, _, err = cli("sweep", f, "--out", tmp_path / "o", "--dask", address, "-q")
    assert rc == 2
    one_line(err, "--dask", address, "SCHEME://HOST:PORT")
    assert not (tmp_path / "o").exists()
    rc, _, err = cli("reproduce", "swing", "--quick", "-q", "--out", tmp_path / "r", "--dask", address)
    assert rc == 2
    one_line(err, "--dask", address)
    assert not (tmp_path / "r").exists()


def test_an_unreachable_scheduler_is_named_within_the_timeout(tmp_path, monkeypatch):
    """The filed defect: `--dask tcp://127.0.0.1:1` answered 'file: Timed out' after 30 s. Now one
    line naming --dask and the address after `DASK_CONNECT_S` (here 1 s), nothing written."""
    import fabricsim.sweep.run as run

    monkeypatch.setattr(run, "DASK_CONNECT_S", 1.0)
    f = write(tmp_path, collective([{"grid": {"size": ["1KiB"]}}]))
    for argv in (["sweep", f, "--out", tmp_path / "o", "-q"], ["reproduce", "swing", "--quick", "-q", "--out", tmp_path / "o"]):
        t0 = time.perf_counter()
        rc, _, err = cli(*argv, "--dask", "tcp://127.0.0.1:1")
        assert rc == 2 and time.perf_counter() - t0 < 15
        one_line(err, "--dask", "tcp://127.0.0.1:1", "no Dask scheduler answered within 1 s")
        assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- every point validated as it runs (8)


@pytest.mark.parametrize("block,needle", [
    ({"random": {"n": 3, "seed": 1, "fields": {"size": {"uniform": [1000, 100000]}}}}, "axes.size"),
    ({"random": {"n": 3, "seed": 1, "fields": {"bandwidth": {"loguniform": [1e9, 1e11]}}}}, "axes.bandwidth"),
    ({"grid": {"algorithm": ["ring", "nvls"]}}, "axes.algorithm: invalid value 'nvls'"),
    ({"grid": {"size": ["1KiB:1MiB"]}}, "axes.size"),
    ({"grid": {"root": [1.5], "collective": ["broadcast"]}}, "axes.root"),
])
def test_points_that_would_fail_when_run_fail_the_dry_run(tmp_path, block, needle):
    """The filed defects: a `uniform` draw of size passed --dry-run and then every point failed
    (fractional bytes), `nvls` on ring:8 failed only when run, a `loguniform` bandwidth ran as a
    bare number `collective -B` refuses. Now each is one line naming the axis, under --dry-run."""
    data = collective([block])
    rc, _, err = cli("sweep", write(tmp_path, data), "--out", tmp_path / "o", "--dry-run")
    assert rc == 2
    one_line(err, needle)


def test_failed_points_are_never_a_silent_exit_0(tmp_path):
    """A point that fails only when it runs (its training graph beyond the `tasks` limit: 427
    tasks for one iteration, more for two; the limit is 600) gives exit 1 and one line saying how
    many failed, and so does the resumed sweep (the row keeps its error)."""
    base = {"network": {"topology": "ring:4", "bandwidth": "100GB/s", "latency": "1us"},
            "workload": {"model": "resnet50", "batch": 64, "iterations": 1, "parallelism": {"dp": 4}}}
    f = write(tmp_path, {"name": "tr", "kind": "train", "base": base, "axes": [{"grid": {"workload.iterations": [1, 2]}}]})
    rc, text, err = cli("--limit", "tasks=600", "sweep", f, "--out", tmp_path / "o", "-q", "-j", "1")
    assert rc == 1 and "2 ran (1 failed)" in text
    one_line(err, "sweep tr: 1 of 2 points failed", "tasks")
    rc, text, err = cli("sweep", f, "--out", tmp_path / "o", "-q")
    assert rc == 1 and "2 already done, 0 ran (1 failed)" in text
    one_line(err, "1 of 2 points failed")


# ---------------------------------------------------------------- --out and plot (12)


def test_out_onto_a_file_or_an_impossible_place_names_out(tmp_path):
    """The filed defect: `--out` onto an existing file said 's2.yaml: File exists', onto /proc/x
    'No such file or directory', neither naming --out. Now one line naming --out; the file is unchanged."""
    f = write(tmp_path, collective([{"grid": {"size": ["1KiB"]}}]))
    before = f.read_bytes()
    rc, _, err = cli("sweep", f, "--out", f, "-q")
    assert rc == 2 and f.read_bytes() == before
    one_line(err, "--out", str(f), "is a file")
    if Path("/proc").is_dir():
        rc, _, err = cli("sweep", f, "--out", "/proc/x", "-q")
        assert rc == 2
        one_line(err, "--out", "/proc/x")
    rc, _, err = cli("sweep", write(tmp_path, {**collective([{"grid": {"size": ["1KiB"]}}]), "name": "../x"}, "n.yaml"))
    assert rc == 2
    one_line(err, "name", "without /")


def test_plot_of_an_empty_folder_says_so(tmp_path):
    """The filed defect: `plot` on an empty folder ended 'accepted: ' and an empty list. Now one
    line naming --results: it holds no results."""
    (tmp_path / "empty").mkdir()
    rc, _, err = cli("plot", tmp_path / "empty", "--x", "size_bytes", "--y", "busbw_Bps")
    assert rc == 2
    line = one_line(err, "--results", "holds no results", "accepted: a Parquet file")
    assert not line.rstrip().endswith("accepted:")


@pytest.mark.parametrize("name", ["fabricsim.sweep.spec", "fabricsim.sweep.store", "fabricsim.sweep.run"])
def test_docstring_examples(name):
    """The sweep modules' examples (point hashes, counts, fingerprints, --dask addresses) hold."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
