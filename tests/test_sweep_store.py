"""A sweep's results folder as a small database (issue 46, defects 2-4): one writer at a time
(flock, released however the writer ends), a manifest naming the sweep (another sweep's folder
refused unless --force), every part checked on read (checksum, footer, row count), damaged parts
moved aside and their points run again, foreign files ignored with a note."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from fabricsim.cli import main
from fabricsim.sweep import store
from fabricsim.sweep.run import read_results, run_sweep
from fabricsim.sweep.spec import load_sweep

ROOT = Path(__file__).resolve().parents[1]


def sweep_file(tmp_path, sizes=("1KiB", "1MiB", "64MiB"), name="s", topologies=("ring:8", "torus:4x4")):
    """12 all-reduce points (2 topologies x 2 algorithms x 3 sizes) on the analytical model."""
    data = {"name": name, "kind": "collective",
            "base": {"collective": "all-reduce", "latency": "1us", "model": "analytical", "bandwidth": "100GB/s"},
            "axes": [{"grid": {"topology": list(topologies), "algorithm": ["ring", "recursive_doubling"]}},
                     {"grid": {"size": list(sizes)}}]}
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([str(a) for a in args])
    return rc, out.getvalue(), err.getvalue()


def parts(out):
    return sorted(p.name for p in Path(out).glob("part-*.parquet"))


def rows(out):
    return read_results(out).drop(["wall_s"]).to_pylist()


def one_line(err, *words):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


# ---------------------------------------------------------------- the lock (defect 2)


def test_a_second_writer_is_refused_in_one_line(tmp_path):
    """While one writer holds the folder, `fabricsim sweep` into it is refused at once (exit 2, one
    line naming --out, the folder and the holder's pid) and writes nothing; after, it runs."""
    f, out = sweep_file(tmp_path), tmp_path / "res"
    out.mkdir()
    with store.locked(out):
        t0 = time.monotonic()
        rc, _, err = cli("sweep", f, "--out", out, "-q")
        assert rc == 2 and time.monotonic() - t0 < 30
        one_line(err, "--out", str(out), "another fabricsim sweep", f"pid {os.getpid()}")
        assert parts(out) == [] and not (out / store.MANIFEST).exists()
    rc, text, _ = cli("sweep", f, "--out", out, "-q", "-j", "1")
    assert rc == 0 and "0 already done, 12 ran" in text


def _popen(f, out, *extra):
    cmd = [sys.executable, "-m", "fabricsim", "sweep", str(f), "--out", str(out), "-q", *extra]
    return subprocess.Popen(cmd, start_new_session=True, env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_lock(out, proc, deadline_s=120):
    t0 = time.monotonic()
    while proc.poll() is None:
        with contextlib.suppress(OSError, ValueError):
            if int((out / store.LOCK).read_text().split()[0]) == proc.pid:
                return True
        assert time.monotonic() - t0 < deadline_s
        time.sleep(0.01)
    return False


def test_two_writers_at_once_write_every_point_once(tmp_path):
    """The filed defect: two `fabricsim sweep` on one folder both exited 0 with every row twice. Now
    the second, started while the first holds the folder, exits 2 in one line; every point is
    in the results exactly once."""
    f = sweep_file(tmp_path, sizes=[f"{2**k}KiB" for k in range(12)])  # 48 points
    out = tmp_path / "res"
    first = _popen(f, out, "-j", "1", "--flush-s", "0")
    try:
        held = _wait_for_lock(out, first)
        second = _popen(f, out, "-j", "1")
        _, err2 = second.communicate(timeout=120)
        _, err1 = first.communicate(timeout=300)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, signal.SIGKILL)
    assert first.returncode == 0, err1
    if held and second.returncode == 2:
        one_line(err2, "--out", "another fabricsim sweep", f"pid {first.pid}")
    else:  # the first finished before the second asked (a starved machine): nothing left to run
        assert second.returncode == 0, err2
    hashes = [r["hash"] for r in rows(out)]
    _, pts = load_sweep(f)
    assert len(hashes) == len(set(hashes)) == len(pts) == 48 and store.scan(out).duplicates == 0


def test_the_lock_goes_with_a_killed_writer(tmp_path):
    """kill -9 of the sweep process alone (its pool workers left alive): the lock is free at once
    (the workers closed their inherited copy), and the next run finishes the sweep."""
    f = sweep_file(tmp_path, sizes=[f"{2**k}KiB" for k in range(16)])
    out = tmp_path / "res"
    proc = _popen(f, out, "-j", "2", "--flush-s", "0")
    try:
        _wait_for_lock(out, proc)
        while not parts(out) and proc.poll() is None:  # its pool is running
            time.sleep(0.01)
        if proc.poll() is not None:
            pytest.skip("the sweep finished before it could be killed")
        os.kill(proc.pid, signal.SIGKILL)  # the parent only
        proc.wait(timeout=60)
        t0 = time.monotonic()
        while True:  # the kernel drops the lock with the process: at once, not when the workers end
            try:
                with store.locked(out):
                    break
            except Exception:
                assert time.monotonic() - t0 < 5
                time.sleep(0.05)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    rc, _, err = cli("sweep", f, "--out", out, "-q", "-j", "1")
    assert rc == 0, err
    assert sorted(r["hash"] for r in rows(out)) == sorted(p.hash for p in load_sweep(f)[1])


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_pool_workers_close_their_copy_of_the_lock(tmp_path):
    """A forked worker inherits the lock's descriptor (and with it the lock, which would outlive a
    killed sweep while a worker computes): the pool's initializer closes it in the worker."""
    import multiprocessing

    from fabricsim.sweep.run import _ignore_interrupts

    with store.locked(tmp_path):
        fd = store._lock_fd
        assert fd is not None and _fd_open(fd)
        with multiprocessing.get_context("fork").Pool(1, initializer=_ignore_interrupts) as pool:
            assert pool.apply(_fd_open, (fd,)) is False
        assert _fd_open(fd)
    assert store._lock_fd is None


# ---------------------------------------------------------------- damage (defects 3, 4)


def _zeros_in_the_middle(p: Path):
    b = bytearray(p.read_bytes())
    m = len(b) // 2
    b[m:m + 50] = b"\0" * 50
    p.write_bytes(bytes(b))


DAMAGE = {"50 zero bytes in the middle": _zeros_in_the_middle,
          "truncated to 100 bytes": lambda p: os.truncate(p, 100),
          "0 bytes": lambda p: os.truncate(p, 0)}


@pytest.mark.parametrize("how", list(DAMAGE))
def test_a_damaged_part_is_moved_aside_and_its_points_run_again(tmp_path, how):
    """The filed defect: 50 zero bytes in a part, then resume: '12 already done, 0 ran', exit 0, rows
    unreadable. Now the part fails its check: `plot` draws the other part with a note, the resume
    moves it to _damaged/ with a note and runs its 6 points again; the rows equal a clean run's."""
    f, out = sweep_file(tmp_path), tmp_path / "res"
    _, pts = load_sweep(f)
    run_sweep(pts[:6], out, workers=1, flush_s=1e9)  # no manifest: the next run adopts the folder
    first = parts(out)
    run_sweep(pts, out, workers=1, sweep={"name": "s", "kind": "collective"}, flush_s=1e9)
    assert len(parts(out)) == 2
    DAMAGE[how](out / first[0])
    rc, _, err = cli("plot", out, "--x", "size_bytes", "--y", "busbw_Bps", "-o", tmp_path / "p.png")
    assert rc == 0 and f"note: {first[0]} is damaged" in err and (tmp_path / "p.png").stat().st_size > 0
    rc, text, err = cli("sweep", f, "--out", out, "-q", "-j", "1")
    assert rc == 0 and "6 already done, 6 ran (0 failed)" in text, (text, err)
    one_line(err, first[0], "is damaged", "moved to _damaged/")
    assert (out / "_damaged" / first[0]).exists() and first[0] not in parts(out)
    run_sweep(pts, tmp_path / "clean", workers=1)
    assert rows(out) == rows(tmp_path / "clean")


def test_parts_of_an_earlier_version_are_checked_by_decoding(tmp_path):
    """A folder an earlier fabricsim wrote (parts `part-<ns>-<pid>-<n>.parquet`, no checksum, no
    manifest) is this sweep's when its rows are points of it: the good part's points are skipped,
    a truncated one is moved aside and its points run again."""
    f, out = sweep_file(tmp_path), tmp_path / "res"
    _, pts = load_sweep(f)
    run_sweep(pts, tmp_path / "clean", workers=1)
    table = read_results(tmp_path / "clean")
    out.mkdir()
    pq.write_table(table.slice(0, 5), out / "part-1-2-00000.parquet")
    pq.write_table(table.slice(5, 7), out / "part-1-2-00001.parquet")
    os.truncate(out / "part-1-2-00001.parquet", 100)
    rc, text, err = cli("sweep", f, "--out", out, "-q", "-j", "1")
    assert rc == 0 and "5 already done, 7 ran" in text, (text, err)
    one_line(err, "part-1-2-00001.parquet", "is damaged")
    assert json.loads((out / store.MANIFEST).read_text())["points"] == 12
    assert rows(out) == rows(tmp_path / "clean")


def test_foreign_files_are_ignored_with_a_note_and_left_as_they_are(tmp_path):
    """The filed defect: an unrelated .parquet file crashed `sweep` and `plot` read it in. Now both
    leave it out with a note (other files silently), and its bytes stay as they were."""
    f, out = sweep_file(tmp_path), tmp_path / "res"
    assert cli("sweep", f, "--out", out, "-q", "-j", "1")[0] == 0
    pq.write_table(pa.table({"x": [1.0, 2.0], "busbw_Bps": [1e30, 1e30]}), out / "unrelated.parquet")
    (out / "notes.txt").write_text("mine")
    before = (out / "unrelated.parquet").read_bytes()
    rc, text, err = cli("sweep", f, "--out", out, "-q")
    assert rc == 0 and "12 already done, 0 ran" in text
    assert "note: ignoring unrelated.parquet" in err and "notes.txt" not in err  # only Parquet files could pass for parts
    notes: list = []
    from fabricsim.sweep.plot import load_results

    table = load_results(out, notes=notes)
    assert table.num_rows == 12 and "x" not in table.column_names and max(table.column("busbw_Bps").to_pylist()) < 1e13
    assert any("unrelated.parquet" in n for n in notes)
    assert (out / "unrelated.parquet").read_bytes() == before and (out / "notes.txt").read_text() == "mine"


def test_another_sweeps_folder_is_refused_unless_force(tmp_path):
    """The filed defect: different sweeps into one folder mixed their rows. Now the manifest names
    the sweep: another one is refused (exit 2, one line naming --out and both sweeps), also under
    --dry-run, and the folder is unchanged; --force replaces that sweep's results (only what
    fabricsim wrote)."""
    a, b = sweep_file(tmp_path, name="a"), sweep_file(tmp_path, name="b", sizes=("2KiB", "2MiB"))
    out = tmp_path / "res"
    assert cli("sweep", a, "--out", out, "-q", "-j", "1")[0] == 0
    (out / "mine.txt").write_text("keep")
    had = parts(out)
    for extra in ((), ("--dry-run",)):
        rc, _, err = cli("sweep", b, "--out", out, "-q", *extra)
        assert rc == 2
        one_line(err, "--out", "sweep 'a' (12 points)", "'b' (8 points)", "--force")
    assert parts(out) == had and json.loads((out / store.MANIFEST).read_text())["name"] == "a"
    rc, text, err = cli("sweep", b, "--out", out, "-q", "-j", "1", "--force")
    assert rc == 0 and "0 already done, 8 ran" in text, err
    got = rows(out)
    assert len(got) == 8 and {r["size"] for r in got} == {"2KiB", "2MiB"}
    assert (out / "mine.txt").read_text() == "keep" and not set(had) & set(parts(out))
    assert json.loads((out / store.MANIFEST).read_text())["name"] == "b"


def test_a_folder_of_other_files_is_refused(tmp_path):
    """`--out` at a folder holding files fabricsim did not write (no manifest, no parts): refused in
    one line naming --out and a file; nothing written there."""
    f, out = sweep_file(tmp_path), tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("x")
    rc, _, err = cli("sweep", f, "--out", out, "-q")
    assert rc == 2
    one_line(err, "--out", "thesis.tex", "did not write")
    assert sorted(p.name for p in out.iterdir()) == ["thesis.tex"]


def test_dry_run_changes_nothing_and_counts_what_a_run_would(tmp_path):
    """--dry-run of a folder with a damaged part: '6 to run' (the damaged part's 6 points and none
    of the good part's), a note, and the folder byte for byte as it was."""
    f, out = sweep_file(tmp_path), tmp_path / "res"
    _, pts = load_sweep(f)
    run_sweep(pts[:6], out, workers=1, flush_s=1e9)  # no manifest: the next run adopts the folder
    run_sweep(pts, out, workers=1, sweep={"name": "s", "kind": "collective"}, flush_s=1e9)
    os.truncate(out / parts(out)[0], 0)
    snap = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    rc, text, err = cli("sweep", f, "--out", out, "--dry-run")
    assert rc == 0 and "12 points (6 to run)" in text and "a run moves it to _damaged/" in err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == snap


def test_parts_are_named_by_rows_and_checksum_and_temporaries_are_cleared(tmp_path):
    """A part's name carries its row count and the SHA-256 prefix of its bytes; a temporary a
    killed writer left is removed by the next writer (and never read); `pyarrow.parquet.read_table`
    of the folder still reads it (the manifest, lock and damaged parts are skipped by name)."""
    import hashlib

    f, out = sweep_file(tmp_path), tmp_path / "res"
    assert cli("sweep", f, "--out", out, "-q", "-j", "1", "--flush-s", "1e9")[0] == 0
    (name,) = parts(out)
    m = store.PART.fullmatch(name)
    assert int(m.group(4)) == 12 and m.group(5) == hashlib.sha256((out / name).read_bytes()).hexdigest()[:16]
    (out / ".part-1-2-00000.parquet.tmp").write_bytes(b"half")
    assert len(read_results(out)) == 12
    assert cli("sweep", f, "--out", out, "-q")[0] == 0
    assert not (out / ".part-1-2-00000.parquet.tmp").exists()
    (out / "_damaged").mkdir()  # what fabricsim keeps beside the parts: skipped by pyarrow's own reader
    (out / "_damaged" / "part-1-2-00001.parquet").write_bytes(b"")
    assert (out / store.LOCK).exists() and (out / store.MANIFEST).exists()
    assert pq.read_table(out).num_rows == 12


def test_an_interrupt_after_a_part_is_named_never_writes_its_rows_twice(tmp_path, monkeypatch):
    """Ctrl-C that lands just after a part's rename (inside `flush`) used to leave the rows in the
    buffer, and the run's final flush wrote them again: a duplicate found by the kill test. The
    buffer is emptied before the write: 3 rows, one part, no duplicate."""
    from fabricsim.sweep.run import PartWriter

    real = store.write_part

    def interrupted(*a, **k):
        real(*a, **k)
        raise KeyboardInterrupt

    w = PartWriter(tmp_path, every_s=1e9)
    for i in range(3):
        w.add({"point": i, "hash": f"h{i}", "error": None})
    monkeypatch.setattr(store, "write_part", interrupted)
    with pytest.raises(KeyboardInterrupt):
        try:
            w.flush()
        finally:
            monkeypatch.setattr(store, "write_part", real)
            w.flush()  # what run_sweep's `finally` does
    s = store.scan(tmp_path)
    assert len(s.parts) == 1 and sorted(s.rows) == ["h0", "h1", "h2"] and s.duplicates == 0


def test_rows_written_twice_before_the_lock_are_read_once_with_a_note(tmp_path):
    """A folder two writers filled before there was a lock (every row twice, in parts of their own):
    read as one row per point (the first part's), with a note counting the 12 left out."""
    f, out = sweep_file(tmp_path), tmp_path / "res"
    _, pts = load_sweep(f)
    run_sweep(pts, tmp_path / "clean", workers=1)
    table = read_results(tmp_path / "clean")
    out.mkdir()
    pq.write_table(table, out / "part-1-2-00000.parquet")
    pq.write_table(table, out / "part-1-3-00000.parquet")
    notes: list = []
    got = read_results(out, notes)
    assert got.drop(["wall_s"]).equals(table.drop(["wall_s"]))
    assert notes == ["note: left out 12 rows of points an earlier part already holds"]
