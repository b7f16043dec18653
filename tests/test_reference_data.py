"""The reference data ships with the repository: a plain clone runs every test.

A missing or partial data set fails here, loudly, instead of the tests that read it skipping silently.
The counts below are those of the data set as produced (reference/astra-sim/README.md).
"""

from __future__ import annotations

import csv
import hashlib

import pytest
from conftest import ASTRA_REFERENCE, ROOT, SHARED

# what the data set holds: 884 generated cases, 31 runs of ASTRA-sim's shipped examples, 911 files + the license
N_CASES, N_EXAMPLES, N_FILES = 884, 31, 912


def _files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_astra_reference_is_shipped_and_complete():
    assert ASTRA_REFERENCE.is_dir(), f"{ASTRA_REFERENCE} is missing: the ASTRA-sim reference data must ship with the repository"
    with open(ASTRA_REFERENCE / "cases.csv") as f:
        assert len(list(csv.DictReader(f))) == N_CASES
    with open(ASTRA_REFERENCE / "examples.csv") as f:
        assert len(list(csv.DictReader(f))) == N_EXAMPLES
    assert len(_files(ASTRA_REFERENCE)) == N_FILES


def test_astra_reference_keeps_its_license_notice():
    text = (ASTRA_REFERENCE / "LICENSE").read_text()
    assert "Copyright (c) 2020 ASTRA-SIM" in text and "Meta Platforms" in text and text.count("MIT License") == 2


def test_every_file_a_case_names_exists():
    with open(ASTRA_REFERENCE / "cases.csv") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        assert (ASTRA_REFERENCE / r["network"]).is_file() and (ASTRA_REFERENCE / r["system"]).is_file()
        assert (ASTRA_REFERENCE / f"{r['workload']}.0.et").is_file(), r["workload"]


def test_shipped_copy_equals_the_teams_copy():
    """Where the team's `../shared/reference/astra-sim` is beside the checkout, the shipped copy is byte-identical."""
    team = SHARED / "reference" / "astra-sim"
    if not team.is_dir():
        pytest.skip(f"no team copy at {team} to compare with (the shipped copy is checked above)")
    ours = [f for f in _files(ASTRA_REFERENCE) if f != "LICENSE"]
    assert ours == _files(team)
    for f in ours:
        assert hashlib.sha256((ASTRA_REFERENCE / f).read_bytes()).digest() == hashlib.sha256((team / f).read_bytes()).digest(), f


SPECS = ROOT / "docs" / "specs"


def test_specs_ship_with_the_docs():
    """The specs the code and configs cite (`docs/specs/*.md`) are in the repository."""
    assert sorted(p.name for p in SPECS.glob("*.md")) == ["astra-sim.md", "formats.md", "fred_ace.md", "swing.md", "topoopt.md"]


def test_shipped_specs_equal_the_teams_copy():
    team = SHARED / "specs"
    if not team.is_dir():
        pytest.skip(f"no team copy at {team} to compare with")
    for p in team.glob("*.md"):
        assert (SPECS / p.name).read_bytes() == p.read_bytes(), p.name
