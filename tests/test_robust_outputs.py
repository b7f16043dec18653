"""Output safety: no command overwrites an input, follows a symbolic link, mixes an earlier run's
files with a new run's, or loses earlier results without `--force`; bad output paths are one line
naming the option (exit 2) before any simulation work (`fabricsim.outputs`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from fabricsim.cli import main
from fabricsim.errors import ConfigError
from fabricsim.experiments import EXPERIMENTS, Experiment
from fabricsim.outputs import MANIFEST, check_output_dir, fresh_dir

ROOT = Path(__file__).resolve().parents[1]
TRAIN = {"network": {"topology": "ring:4", "bandwidth": "50GB/s", "latency": "1us"},
         "system": {"npu": {"peak": "989TFLOP/s", "memory_bandwidth": "3.35TB/s", "efficiency": 0.5}},
         "workload": {"model": "transformer-17b", "batch": 4, "parallelism": {"pp": 4, "microbatches": 4}},
         "output": {"plot": False}}
TRAFFIC = {"topology": "ring:4", "bandwidth": "100GB/s", "latency": "1us",
           "flows": [{"name": "f", "src": 0, "dst": 2, "size": "1MiB", "start": "0us"}]}


def _write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


def _refused(capsys, argv, field, value=None):
    """Run the CLI expecting exit 2 and exactly one stderr line naming `field` (and `value`)."""
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("fabricsim: error: "), err
    assert field in lines[0], err
    if value is not None:
        assert repr(str(value)) in lines[0], err
    assert "Traceback" not in err
    return lines[0]


def _ok(capsys, argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def _tree(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- traffic --timeline / --plot


@pytest.fixture
def traffic_file(tmp_path):
    return _write(tmp_path / "T.yaml", TRAFFIC)


def test_timeline_never_overwrites_the_input(capsys, tmp_path, traffic_file):
    before = traffic_file.read_bytes()
    _refused(capsys, ["traffic", traffic_file, "--timeline", traffic_file, "-q"], "--timeline", traffic_file)
    # the same file by another name: a relative path, a symbolic link's target, a hard link
    os.link(traffic_file, tmp_path / "hard.csv")
    _refused(capsys, ["traffic", traffic_file, "--timeline", tmp_path / "hard.csv", "-q"], "--timeline")
    _refused(capsys, ["traffic", traffic_file, "--plot", tmp_path / "T.yaml", "-q"], "--plot")
    assert traffic_file.read_bytes() == before


@pytest.mark.parametrize("bad", ["", "dir", "file/t.csv", "link.csv", "/", "/proc/x/t.csv", "/dev/null", "a\0b.csv", "sub/"])
def test_timeline_bad_paths_are_one_line(capsys, tmp_path, traffic_file, bad):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "target.csv").write_text("keep")
    (tmp_path / "link.csv").symlink_to(tmp_path / "target.csv")
    value = bad if bad.startswith("/") or not bad else f"{tmp_path}/{bad}"
    _refused(capsys, ["traffic", traffic_file, "--timeline", value, "-q"], "--timeline")
    assert (tmp_path / "target.csv").read_text() == "keep"
    assert not list(tmp_path.glob(".*tmp"))


def test_timeline_replaces_a_regular_file_whole(capsys, tmp_path, traffic_file):
    out = tmp_path / "new" / "t.csv"  # a missing folder is created
    _ok(capsys, ["traffic", traffic_file, "--timeline", out, "-q"])
    first = out.read_text()
    assert first.startswith("t_start_s,t_end_s,link,rate_Bps\n")
    out.write_text("old content that is much longer than nothing " * 100)
    _ok(capsys, ["traffic", traffic_file, "--timeline", out, "-q"])
    assert out.read_text() == first
    assert sorted(p.name for p in out.parent.iterdir()) == ["t.csv"]  # no temporary file left


def test_timeline_and_plot_must_differ(capsys, tmp_path, traffic_file):
    _refused(capsys, ["traffic", traffic_file, "--timeline", tmp_path / "u.png", "--plot", tmp_path / "u.png", "-q"],
             "--timeline")


def test_plot_never_writes_through_a_link(capsys, tmp_path):
    (tmp_path / "precious").write_text("keep")
    (tmp_path / "p.png").symlink_to(tmp_path / "precious")
    _refused(capsys, ["collective", "-t", "ring:4", "-s", "1KiB", "--plot", tmp_path / "p.png"], "--plot")
    assert (tmp_path / "precious").read_text() == "keep"
    _ok(capsys, ["collective", "-t", "ring:4", "-s", "1KiB", "--plot", tmp_path / "q.png"])
    assert (tmp_path / "q.png").read_bytes()[:4] == b"\x89PNG"


# ---------------------------------------------------------------- train


@pytest.fixture
def train_cfg(tmp_path):
    (tmp_path / "cfg").mkdir()
    return _write(tmp_path / "cfg" / "t.yaml", TRAIN)


def test_train_rerun_is_refused_then_replaced_whole_with_force(capsys, tmp_path, train_cfg):
    out = tmp_path / "o"
    _ok(capsys, ["train", train_cfg, "--out", out, "-q"])
    first = _tree(out)
    assert {"summary.json", "breakdown.csv", "layers.csv", "trace.json", MANIFEST} == set(first)
    _refused(capsys, ["train", train_cfg, "--out", out, "--no-trace", "-q"], "--out", out)
    assert _tree(out) == first
    _ok(capsys, ["train", train_cfg, "--out", out, "--no-trace", "--force", "-n", "2", "-q"])
    second = _tree(out)
    assert "trace.json" not in second  # no stale file of the earlier run beside the new ones
    assert json.loads(second["summary.json"])["iterations"] == 2
    assert json.loads(second[MANIFEST])["files"] == ["breakdown.csv", "layers.csv", "summary.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cfg", "o"]  # no temporary or old folder left


def test_train_never_follows_a_link_in_or_as_its_folder(capsys, tmp_path, train_cfg):
    important = tmp_path / "important"
    important.write_text("keep")
    out = tmp_path / "o"
    out.mkdir()
    (out / "summary.json").symlink_to(important)
    _refused(capsys, ["train", train_cfg, "--out", out, "-q"], "--out")
    _refused(capsys, ["train", train_cfg, "--out", out, "--force", "-q"], "--out")  # not a folder fabricsim wrote
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    _refused(capsys, ["train", train_cfg, "--out", tmp_path / "alias", "-q"], "--out")
    assert important.read_text() == "keep" and os.path.islink(out / "summary.json")
    assert list((tmp_path / "real").iterdir()) == []


def test_force_never_deletes_what_fabricsim_did_not_write(capsys, tmp_path, train_cfg):
    out = tmp_path / "o"
    _ok(capsys, ["train", train_cfg, "--out", out, "--no-trace", "-q"])
    (out / "notes.txt").write_text("mine")
    msg = _refused(capsys, ["train", train_cfg, "--out", out, "--force", "-q"], "--out")
    assert "notes.txt" in msg and (out / "notes.txt").read_text() == "mine"
    # a folder holding the config (an input) is never replaced, even with --force
    _refused(capsys, ["train", train_cfg, "--out", train_cfg.parent, "--force", "-q"], "--out")
    assert train_cfg.is_file()


@pytest.mark.parametrize("bad", ["", "/proc/x", "/dev/null", "file", "file/sub", "a\0b", "cfg/t.yaml"])
def test_train_bad_out_is_one_line_before_the_run(capsys, tmp_path, train_cfg, monkeypatch, bad):
    (tmp_path / "file").write_text("x")
    monkeypatch.chdir(tmp_path)
    import fabricsim.train

    def boom(*a, **k):
        raise AssertionError("simulated before checking the output folder")

    monkeypatch.setattr(fabricsim.train, "run_train", boom)
    _refused(capsys, ["train", train_cfg, "--out", bad, "-q"], "--out", bad)
    assert (tmp_path / "file").read_text() == "x" and train_cfg.read_text() == yaml.safe_dump(TRAIN)
    assert not (tmp_path / "out").exists()  # an empty --out is no silent default


def test_train_default_folder_is_relative_to_the_working_folder(capsys, tmp_path, train_cfg, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    _ok(capsys, ["train", train_cfg, "--no-trace", "-q"])
    assert (work / "out" / "t" / "summary.json").is_file()
    msg = _refused(capsys, ["train", train_cfg, "--no-trace", "-q"], "--out")
    assert "--force" in msg
    # output.dir is relative to the config file, and named as the config's field
    _write(train_cfg, {**TRAIN, "output": {"dir": "res", "plot": False}})
    _ok(capsys, ["train", train_cfg, "--no-trace", "-q"])
    assert (train_cfg.parent / "res" / "summary.json").is_file()
    _refused(capsys, ["train", train_cfg, "--no-trace", "-q"], "output.dir")


def test_shipped_configs_name_no_output_folder():
    """Their results go to out/<name> in the working folder, never inside the checkout's sources."""
    for p in sorted((ROOT / "configs").glob("*.yaml")):
        data = yaml.safe_load(p.read_text())
        if isinstance(data, dict) and isinstance(data.get("output"), dict):
            assert "dir" not in data["output"], p.name


def test_interrupted_run_leaves_earlier_results_intact(tmp_path):
    out = tmp_path / "o"
    with fresh_dir(out, "--out") as d:
        (d / "a.csv").write_text("old")
    before = _tree(out)
    with pytest.raises(KeyboardInterrupt):
        with fresh_dir(out, "--out", force=True) as d:
            (d / "a.csv").write_text("new, half written")
            raise KeyboardInterrupt
    assert _tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]
    with pytest.raises(ConfigError, match="--out"):
        check_output_dir(out, "--out")


# ---------------------------------------------------------------- export chakra


def _export(prefix, n, *extra):
    return ["export", "chakra", "-o", prefix, "-n", n, "--collective", "all-reduce", "--size", "1KiB", *extra]


def test_export_rerun_refused_and_force_replaces_the_whole_set(capsys, tmp_path):
    prefix = tmp_path / "et" / "ar"
    _ok(capsys, _export(prefix, 8))
    names = lambda: sorted(p.name for p in prefix.parent.iterdir())  # noqa: E731
    assert names() == [f"ar.{r}.et" for r in range(8)]
    first = (prefix.parent / "ar.0.et").read_bytes()
    _refused(capsys, _export(prefix, 4), "--output", prefix)
    assert names() == [f"ar.{r}.et" for r in range(8)]
    (prefix.parent / "ar.9.et.gz").write_bytes(b"old")
    (prefix.parent / "ar.groups.json").write_text("{}")
    (prefix.parent / "ar.x.et").write_text("not of the set")
    _ok(capsys, _export(prefix, 4, "--force"))
    assert names() == ["ar.0.et", "ar.1.et", "ar.2.et", "ar.3.et", "ar.x.et"]  # ranks 4-7 and the rest of the set gone
    assert (prefix.parent / "ar.0.et").read_bytes() != first  # 4 ranks now


@pytest.mark.parametrize("bad", ["", "dir", "dir/", "/proc/x", "file/ar", "a\0b"])
def test_export_bad_prefix_is_one_line(capsys, tmp_path, bad, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    _refused(capsys, _export(bad, 4), "--output")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "file"]  # no hidden .0.et files
    assert list((tmp_path / "dir").iterdir()) == []


def test_export_never_overwrites_its_input(capsys, tmp_path):
    text = tmp_path / "w.0.et"
    text.write_text("DATA\n1\nconv1 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 1024 5\n")
    _refused(capsys, ["export", "chakra", "-o", tmp_path / "w", "-n", "2", "--text", text, "--force"], "--output")
    assert text.read_text().startswith("DATA")


# ---------------------------------------------------------------- reproduce


@dataclass(frozen=True)
class _Point:
    x: int


def _evaluate(p: _Point) -> int:
    return p.x


def _study(tmp_path: Path, files: tuple) -> Experiment:
    """A study that writes `files` (name -> text) into its folder."""
    def write(rep, out):
        out.mkdir(parents=True, exist_ok=True)
        for name, text in files:
            (out / name).write_text(text)
        return [out / name for name, _ in files]

    return Experiment(name="tiny", summary="tiny", quick_help="tiny", load_config=lambda path: 2,
                      points=lambda n, quick: [_Point(i) for i in range(n)], evaluate=_evaluate,
                      summarize=lambda cfg, pts, rows, quick, elapsed: sum(rows), write=write,
                      render=lambda rep, con, fs: con.print(" ".join(str(f) for f in fs)),
                      to_json=lambda rep: {"sum": rep}, default_out=Path("out") / "tiny")


def test_reproduce_rerun_refused_then_replaced_whole(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(EXPERIMENTS, "tiny", _study(tmp_path, (("a.csv", "1"), ("b.png", "2"))))
    out = _ok(capsys, ["reproduce", "tiny", "--json"])
    assert json.loads(out)["files"] == ["out/tiny/a.csv", "out/tiny/b.png"]  # default: out/NAME in the working folder
    _refused(capsys, ["reproduce", "tiny", "-q"], "--out", "out/tiny")
    monkeypatch.setitem(EXPERIMENTS, "tiny", _study(tmp_path, (("a.csv", "3"),)))
    _ok(capsys, ["reproduce", "tiny", "--force", "-q"])
    assert _tree(tmp_path / "out" / "tiny") == {"a.csv": b"3", MANIFEST: (tmp_path / "out" / "tiny" / MANIFEST).read_bytes()}
    for bad in ("", "/proc/x", "/dev/null", "a\0b"):
        _refused(capsys, ["reproduce", "tiny", "--out", bad, "-q"], "--out")
    (tmp_path / "cfg.yaml").write_text("x: 1\n")
    _refused(capsys, ["reproduce", "tiny", "--config", tmp_path / "cfg.yaml", "--out", tmp_path, "--force", "-q"], "--out")
    assert (tmp_path / "cfg.yaml").is_file()
