"""Resource limits (`fabricsim.limits`): documented defaults, raised for one block or one command
and restored after, bad `--limit` items as one line."""

from __future__ import annotations

import threading

import pytest

from fabricsim.cli import main
from fabricsim.errors import ConfigError
from fabricsim.limits import DEFAULT_LIMITS, check_limit, current_limits, parse_limit, raised_limits


def test_defaults_are_the_documented_ones():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "limits.md").read_text()
    for name, value in vars(DEFAULT_LIMITS).items():
        shown = "256 MiB" if name == "file_bytes" else f"{value:,}"
        assert f"| `{name}` | {shown} |" in doc, name


def test_raised_for_a_block_and_restored():
    with pytest.raises(ConfigError, match="it needs 300,000 NPUs, beyond the limit of 262,144"):
        check_limit("npus", 300_000, "NPUs", "topology", "ring:300000")
    with raised_limits(npus=400_000) as lim:
        assert lim.npus == 400_000 and current_limits().npus == 400_000
        check_limit("npus", 300_000, "NPUs", "topology", "ring:300000")
    assert current_limits() == DEFAULT_LIMITS


def test_other_threads_keep_the_defaults():
    seen = []
    with raised_limits(npus=5):
        t = threading.Thread(target=lambda: seen.append(current_limits().npus))
        t.start()
        t.join()
    assert seen == [DEFAULT_LIMITS.npus]


@pytest.mark.parametrize("text", ["npus", "npus=", "npus=0", "npus=-3", "npus=1.5", "npus=nan", "npus=inf",
                                  "nope=3", "npus=1e400", "file_bytes=abc"])
def test_bad_limit_items(text):
    with pytest.raises(ConfigError, match="--limit"):
        parse_limit(text)


def test_cli_limit_lasts_one_command(capsys):
    assert main(["--limit", "npus=8", "collective", "-t", "ring:16", "-s", "1KiB", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "16 NPUs, beyond the limit of 8" in err and "--limit npus=N" in err
    assert current_limits() == DEFAULT_LIMITS  # not leaked into the caller
    assert main(["collective", "-t", "ring:16", "-s", "1KiB", "-q"]) == 0
