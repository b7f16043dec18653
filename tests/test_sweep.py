"""`fabricsim sweep` (issue 16): points from a base and axes, validated before anything runs, rows in
Parquet that any executor fills identically, resumed after interruptions without duplicates."""

from __future__ import annotations

import contextlib
import io
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from fabricsim.cli import main
from fabricsim.sweep import store
from fabricsim.sweep.run import evaluate_point, read_results, run_sweep
from fabricsim.sweep.spec import SweepSpec, expand, load_sweep

ROOT = Path(__file__).resolve().parents[1]


def _write(tmp_path, data, name="s.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data))
    return p


def _collectives(sizes=("1KiB", "1MiB", "64MiB"), **extra):
    return {"name": "t", "kind": "collective",
            "base": {"collective": "all-reduce", "latency": "1us", "model": "analytical", "bandwidth": "100GB/s"},
            "axes": [{"grid": {"topology": ["ring:8", "torus:4x4"], "algorithm": ["ring", "recursive_doubling"]}},
                     {"grid": {"size": list(sizes)}}], **extra}


def _run(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


# ---------------------------------------------------------------- points


def test_blocks_combine_by_product_and_random_is_seeded():
    """grid 2x3 = 6, zip of 2 = 2, random n = 4: 48 points; the same seed draws the same values,
    equal points collapse to one."""
    spec = SweepSpec.model_validate({
        "kind": "collective", "base": {"topology": "ring:8", "size": "1MiB"},
        "axes": [{"grid": {"algorithm": ["ring", "direct"], "size": ["1KiB", "2KiB", "4KiB"]}},
                 {"zip": {"bandwidth": ["1GB/s", "2GB/s"], "latency": ["1us", "2us"]}},
                 {"random": {"n": 4, "seed": 7, "fields": {"root": {"randint": [0, 1000000]}}}}]})
    pts = expand(spec)
    assert len(pts) == 6 * 2 * 4
    assert [p.config["root"] for p in pts] == [p.config["root"] for p in expand(spec)]
    assert len({p.hash for p in pts}) == 48
    dup = SweepSpec.model_validate({"kind": "collective", "base": {"topology": "ring:8", "size": "1MiB"},
                                    "axes": [{"grid": {"algorithm": ["ring", "ring", "direct"]}}]})
    assert len(expand(dup)) == 2


def test_a_point_is_the_same_question_as_fabricsim_collective():
    """A sweep row's time is `fabricsim collective`'s for the same inputs: ring all-reduce of 64 MiB
    on ring:8 at 100 GB/s, 1 us: 2 x 7 x (64 MiB / 8 / 100 GB/s + 1 us)."""
    spec = SweepSpec.model_validate(_collectives(sizes=("64MiB",)))
    pt = next(p for p in expand(spec) if p.axes == {"topology": "ring:8", "algorithm": "ring", "size": "64MiB"})
    row = evaluate_point(pt)
    assert row["error"] is None
    assert row["time_s"] == pytest.approx(2 * 7 * (64 * 2**20 / 8 / 100e9 + 1e-6), rel=1e-9)
    assert row["busbw_Bps"] == pytest.approx(row["algbw_Bps"] * 2 * 7 / 8, rel=1e-12)


def test_train_points_are_run_train(tmp_path):
    """A training sweep's iteration time is `run_train`'s for the same config (one answer)."""
    from fabricsim.config import validate
    from fabricsim.train import TrainConfig, run_train

    base = {"network": {"topology": "ring:4", "bandwidth": "100GB/s", "latency": "1us"},
            "workload": {"model": "resnet50", "batch": 64, "iterations": 1, "parallelism": {"dp": 4}}}
    spec = SweepSpec.model_validate({"kind": "train", "base": base,
                                     "axes": [{"grid": {"network.bandwidth": ["50GB/s", "400GB/s"]}}]})
    for pt in expand(spec):
        row = evaluate_point(pt)
        ref = run_train(validate(TrainConfig, pt.config, "x")).result.iteration_time
        assert row["error"] is None and row["iteration_s"] == ref


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("edit,needle", [
    (lambda d: d["axes"][0]["grid"].update(topology=["ring:8", "donut:3"]), "axes.topology"),
    (lambda d: d["axes"][1]["grid"].update(size=["1KiB", "lots"]), "axes.size"),
    (lambda d: d["axes"][0]["grid"].update(algorithm=["ring", "telepathy"]), "axes.algorithm"),
    (lambda d: d["axes"].append({"zip": {"bandwidth": ["1GB/s"], "latency": ["1us", "2us"]}}), "zip"),
    (lambda d: d["axes"].append({"grid": {}, "zip": {}}), "axes"),
    (lambda d: d.update(kind="inference"), "kind"),
    (lambda d: d["axes"].append({"random": {"n": 2, "fields": {"size": {"gaussian": [1, 2]}}}}), "size"),
])
def test_malformed_sweep_fails_before_any_point_runs(tmp_path, edit, needle):
    data = _collectives()
    edit(data)
    out = tmp_path / "res"
    code, _, err = _run(["sweep", str(_write(tmp_path, data)), "--out", str(out), "-q"])
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and needle in lines[0], err
    assert not out.exists()


def test_bad_axis_value_is_named_with_the_value(tmp_path):
    data = _collectives()
    data["axes"][0]["grid"]["topology"] = ["ring:8", "donut:3"]
    code, _, err = _run(["sweep", str(_write(tmp_path, data)), "--dry-run"])
    assert code == 2 and "axes.topology" in err and "donut:3" in err


# ---------------------------------------------------------------- running


def test_local_pool_and_dask_give_identical_rows(tmp_path):
    """The same 12 points on 2 local processes and on a Dask LocalCluster of 2 workers: every
    column but wall_s equal."""
    f = _write(tmp_path, _collectives())
    _, pts = load_sweep(f)
    a = run_sweep(pts, tmp_path / "a", workers=2)
    b = run_sweep(pts, tmp_path / "b", dask="local:2")
    assert a["ran"] == b["ran"] == 12
    ta, tb = (read_results(tmp_path / x).drop(["wall_s"]) for x in ("a", "b"))
    assert ta.equals(tb)


def test_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path):
    """In-network reduction needs a reducing switch: on ring:6 each size fails with a one-line
    error when it runs (`load_sweep` refuses such a sweep before it runs; here the points go to the
    runner unvalidated); the ring points run."""
    data = _collectives()
    data["axes"][0]["grid"].update(topology=["ring:6"], algorithm=["ring", "in_network"])
    pts = expand(SweepSpec.model_validate(data))
    got = run_sweep(pts, tmp_path / "r", workers=1)
    rows = read_results(tmp_path / "r").to_pylist()
    bad = [r for r in rows if r["error"]]
    assert got["failed"] == len(bad) == 3 and all(r["algorithm"] == "in_network" for r in bad)
    assert all("\n" not in r["error"] and "in_network" in r["error"] for r in bad)
    assert all(r["time_s"] > 0 for r in rows if not r["error"])


def test_resume_skips_finished_points(tmp_path):
    _, pts = load_sweep(_write(tmp_path, _collectives()))
    run_sweep(pts[:10], tmp_path / "r", workers=1)
    got = run_sweep(pts, tmp_path / "r", workers=1)
    assert (got["skipped"], got["ran"]) == (10, 2)
    hashes = read_results(tmp_path / "r").column("hash").to_pylist()
    assert sorted(hashes) == sorted(p.hash for p in pts)


def _part_files(out):
    return {p.name for p in out.glob("part-*.parquet")}


def _damage(out, k):
    """Between runs k and k+1: 50 zero bytes in the middle of the newest part and an unrelated
    Parquet file (k = 1), the newest part truncated to 100 bytes (k = 2), a 0-byte part (k = 3)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    newest = max(out.glob("part-*.parquet"), key=lambda p: p.name.split("-")[1], default=None)
    if k == 1 and newest is not None:
        b = bytearray(newest.read_bytes())
        b[len(b) // 2:len(b) // 2 + 50] = b"\0" * 50
        newest.write_bytes(bytes(b))
        pq.write_table(pa.table({"hash": ["not-a-point"], "busbw_Bps": [1e30]}), out / "unrelated.parquet")
    elif k == 2 and newest is not None:
        os.truncate(newest, 100)
    elif k == 3:
        (out / "part-1-1-00000.parquet").write_bytes(b"")
    return newest.name if newest is not None and k in (1, 2) else "part-1-1-00000.parquet" if k == 3 else None


def test_killed_five_times_every_point_exactly_once(tmp_path):
    """Kill `fabricsim sweep` (its whole process group: SIGKILL or SIGINT) 5 times, each at a random
    moment after that run has written rows of its own, then let it finish: the results hold every
    point exactly once, with the values of an uninterrupted run. Between runs the folder is damaged
    (zero bytes in a part, a truncated part, a 0-byte part, an unrelated Parquet file): each damaged
    part ends in _damaged/ and its points are run again, the unrelated file is left alone. A second
    writer started while the first runs is refused in one line (exit 2) and changes nothing."""
    # 256 points, ~4 s on 2 workers: five runs killed early, even on a loaded machine where a run gets
    # far before the kill lands, leave points for the last run
    data = _collectives(sizes=[f"{2**k}KiB" for k in range(16)])
    # the flow model on algorithms whose flows share links: points of ~25 ms each, so a run killed
    # 0-0.05 s after its first rows has written a few (~5 here) and left most
    data["base"]["model"] = "flow"
    data["axes"][0]["grid"]["topology"] = ["torus:8x8", "torus:16x8"]
    data["axes"][0]["grid"]["algorithm"] = ["direct", "double_binary_tree"]
    data["axes"].insert(1, {"grid": {"bandwidth": [f"{b}GB/s" for b in (25, 50, 100, 200)]}})
    f = _write(tmp_path, data)
    _, pts = load_sweep(f)
    out = tmp_path / "res"
    cmd = [sys.executable, "-m", "fabricsim", "sweep", str(f), "--out", str(out), "--workers", "2", "--flush-s", "0.05", "-q"]
    rng = random.Random(15)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    kills, damaged, second = 0, [], None
    for k in range(5):
        before = _part_files(out)
        proc = subprocess.Popen(cmd, start_new_session=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not (_part_files(out) - before) and proc.poll() is None:  # this run's first rows
            assert time.monotonic() < deadline
            time.sleep(0.01)
        if k == 0 and proc.poll() is None:  # a second writer meanwhile: refused, nothing written
            os.killpg(proc.pid, signal.SIGSTOP)  # the first holds the lock and cannot finish meanwhile
            try:
                second = (subprocess.run(cmd, env=env, timeout=120, capture_output=True, text=True), True)
            finally:
                os.killpg(proc.pid, signal.SIGCONT)
        time.sleep(rng.uniform(0.0, 0.05))
        if proc.poll() is not None:  # it finished what was left before the kill (this process starved)
            assert proc.returncode == 0
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL if k % 2 == 0 else signal.SIGINT)
        proc.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # any worker left behind
        kills += 1
        damaged.append(_damage(out, k))
    assert kills >= 2  # at least a SIGKILL and a SIGINT landed mid-sweep
    assert 0 < read_results(out).num_rows and (kills < 5 or read_results(out).num_rows < len(pts))
    if second is not None and second[1]:  # the first was still running when the second finished
        res = second[0]
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert res.returncode == 2 and len(lines) == 1 and "--out" in lines[0] and "another fabricsim sweep" in lines[0]
    unrelated = (out / "unrelated.parquet").read_bytes() if (out / "unrelated.parquet").exists() else None
    last = subprocess.run(cmd, env=env, timeout=600, capture_output=True, text=True)
    assert last.returncode == 0, last.stderr
    hashes = read_results(out).column("hash").to_pylist()
    assert len(hashes) == len(set(hashes)) == len(pts)
    assert set(hashes) == {p.hash for p in pts}
    assert store.scan(out).duplicates == 0  # no row written twice (a reader would hide it)
    for name in filter(None, damaged):  # moved aside by the run after the damage
        assert (out / "_damaged" / name).exists() and not (out / name).exists(), name
    if unrelated is not None:
        assert (out / "unrelated.parquet").read_bytes() == unrelated
    run_sweep(pts, tmp_path / "clean", workers=2)
    got, clean = (read_results(x).drop(["wall_s"]) for x in (out, tmp_path / "clean"))
    assert got.equals(clean)


def test_a_reproduction_runs_on_dask_with_the_same_rows(tmp_path):
    """`fabricsim reproduce swing --quick --dask local:2` gives the JSON of the local run but the
    wall time and the output paths."""
    import json

    def run(*extra):
        out = tmp_path / ("d" if extra else "l")
        code, text, _ = _run(["reproduce", "swing", "--quick", "--json", "-q", "--out", str(out), *extra])
        assert code == 0
        d = json.loads(text)
        for k in ("elapsed_s", "files"):
            d.pop(k, None)
        return d

    assert run("--dask", "local:2") == run()


def test_reproduction_points_answer_as_the_reproduction(tmp_path):
    """kind: reproduction -- one FRED point with the wafer's I/O bandwidth swept: at the config's
    own 128 GB/s the row is the reproduction's own (same iteration time to the bit); halving the
    I/O makes the weight-streaming iteration longer."""
    from fabricsim.experiments import EXPERIMENTS

    label = "e2e calibrated Transformer-1T Fred-D"
    data = {"name": "fred-io", "kind": "reproduction", "base": {"study": "fred", "point": label, "quick": True},
            "axes": [{"grid": {"set.wafer.io_bandwidth": ["64GB/s", "128GB/s"]}}]}
    _, pts = load_sweep(_write(tmp_path, data))
    run_sweep(pts, tmp_path / "r", workers=1)
    rows = {r["set.wafer.io_bandwidth"]: r for r in read_results(tmp_path / "r").to_pylist()}
    exp = EXPERIMENTS["fred"]
    own = next(p for p in exp.points(exp.load_config(None), True) if exp.label(p) == label)
    assert rows["128GB/s"]["iteration_s"] == exp.evaluate(own).iteration_s
    # longer, if by little: with FRED's one NPU factor T-1T's compute hides most of its streaming
    assert rows["64GB/s"]["iteration_s"] > rows["128GB/s"]["iteration_s"]


@pytest.mark.parametrize("base,axis,needle", [
    ({"study": "fred", "point": "e2e nowhere"}, {"set.iterations": [1]}, "base.point"),
    ({"study": "fred", "point": "e2e calibrated GPT-3 Fred-D", "quick": True}, {"set.wafer.io_bandwidth": ["fast"]},
     "axes.set.wafer.io_bandwidth"),
    ({"study": "nsdi", "point": "x"}, {"set.iterations": [1]}, "base.study"),
])
def test_bad_reproduction_points_fail_before_running(tmp_path, base, axis, needle):
    data = {"kind": "reproduction", "base": base, "axes": [{"grid": axis}]}
    code, _, err = _run(["sweep", str(_write(tmp_path, data)), "--out", str(tmp_path / "o"), "-q"])
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and needle in lines[0], err


def test_collective_defaults_are_the_commands():
    """A point that names only topology and size takes `fabricsim collective`'s defaults: ring
    all-reduce, 400 Gbps (50 GB/s) and 100 ns per link: 2 x 7 x (64 MiB / 8 / 50 GB/s + 100 ns)."""
    spec = SweepSpec.model_validate({"kind": "collective", "base": {"topology": "ring:8"},
                                     "axes": [{"grid": {"size": ["64MiB"]}}]})
    (pt,) = expand(spec)
    row = evaluate_point(pt)
    assert row["time_s"] == pytest.approx(2 * 7 * (64 * 2**20 / 8 / 50e9 + 100e-9), rel=1e-9)
