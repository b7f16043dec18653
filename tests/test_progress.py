"""Progress reports: the library's callbacks (`fabricsim.progress`) and the CLI's bar (`fabricsim.cli.progress`)."""

from __future__ import annotations

import io
import sys

import pytest
from conftest import ASTRA_REFERENCE, ROOT
from rich.console import Console

from fabricsim.astra.run import run_astra
from fabricsim.cli.progress import progress_bar
from fabricsim.progress import phase, report


def test_bar_is_off_when_stderr_is_not_a_terminal():
    buf = io.StringIO()
    with progress_bar("train", console=Console(file=buf, force_terminal=False)) as tick:
        tick(1, 2, "simulating")
    assert buf.getvalue() == ""


def test_bar_is_off_with_quiet():
    buf = io.StringIO()
    with progress_bar("train", quiet=True, console=Console(file=buf, force_terminal=True)) as tick:
        tick(1, 2, "simulating")
    assert buf.getvalue() == ""


def test_bar_draws_the_phase_and_the_count_on_a_terminal():
    buf = io.StringIO()
    con = Console(file=buf, force_terminal=True, width=100)
    with progress_bar("astra", console=con) as tick:
        tick(3, 8, "simulating")
        con.file.flush()
    out = buf.getvalue()
    assert "astra: simulating" in out and "3/8" in out


def test_phase_prefixes_the_inner_label_and_none_stays_none():
    seen = []
    inner = phase(lambda d, t, label: seen.append((d, t, label)), "simulating")
    inner(2, 5, "DP all-reduce")
    inner(5, 5)
    assert seen == [(2, 5, "simulating: DP all-reduce"), (5, 5, "simulating")]
    assert phase(None, "x") is None
    report(None, 1, 1, "nothing happens")


def test_astra_reports_its_phases_and_finishes_at_the_total(monkeypatch):
    """A workload run (not the lone-collective shortcut): the ResNet-50 traces on 8 NPUs."""
    monkeypatch.chdir(ASTRA_REFERENCE)
    calls = []
    run = run_astra("legacy/resnet50/r50", "examples/system/native_collectives/Ring_4chunks.json",
                    "examples/network/analytical/Ring_8npus.yml", progress=lambda d, t, label: calls.append((d, t, label)))
    labels = [c[2] for c in calls]
    assert labels[0] == "reading the configurations" and labels[1] == "reading 8 Chakra traces"
    assert labels[-1] == "simulating" and calls[-1][0] == calls[-1][1] > 0  # every node issued
    assert run.path.startswith("workload graph")


def _in_a_terminal(argv: list[str], cwd) -> tuple[int, str, str]:
    """Run `argv` with stderr on a pseudo-terminal (as a user's shell has it): (exit code, stderr, stdout)."""
    import os
    import pty
    import subprocess

    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdin=slave, stdout=subprocess.PIPE, stderr=slave, cwd=cwd, close_fds=True,
                         env={**os.environ, "COLUMNS": "160"})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out = p.stdout.read()
    p.wait()
    os.close(master)
    return p.returncode, b"".join(chunks).decode(errors="replace"), out.decode()


FABRICSIM = [sys.executable, "-m", "fabricsim"]
LONG_COMMANDS = [  # (what the bar shows last, command): rich redraws at 10 Hz, so short phases may never show
    ("collective: timing", ["collective", "-t", "torus:8x8", "-s", "1MiB"]),
    # train's phases each last well under a second (simulating 64 NPUs: about 0.4 s), so which one a
    # 10 Hz redraw catches depends on the machine's load: any train phase shows the bar was drawn
    ("train: ", ["train", "configs/gpt3-175b-64.yaml", "--no-trace", "--no-plot", "-o", "{tmp}"]),
    ("traffic: simulating", ["traffic", "configs/traffic_example.yaml"]),
    ("reproduce swing:", ["reproduce", "swing", "--quick", "--out", "{tmp}"]),
    ("astra: simulating", ["astra", "--workload-configuration", "{ref}/workloads/all_reduce_8_1048576/x",
                                           "--system-configuration", "{ref}/systems/sys_ring_1d_s4_a1.json",
                                           "--network-configuration", "{ref}/networks/Ring_8.yml"]),
]


@pytest.mark.parametrize("title, args", LONG_COMMANDS, ids=[a[0] for _, a in LONG_COMMANDS])
def test_long_commands_draw_a_bar_on_a_terminal_and_not_with_quiet(title, args, tmp_path):
    argv = FABRICSIM + [a.format(tmp=tmp_path, ref=ASTRA_REFERENCE) for a in args]
    rc, err, out = _in_a_terminal(argv, ROOT)
    assert rc == 0 and out.strip()
    assert title in err, err[-500:]
    again = ["--force"] if "{tmp}" in args else []  # the second run replaces the first one's results
    rc, err_quiet, out_quiet = _in_a_terminal(argv + ["--quiet"] + again, ROOT)
    assert rc == 0 and err_quiet == ""
