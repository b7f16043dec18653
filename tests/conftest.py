"""Shared test settings: where the reference data lives.

The ASTRA-sim reference data ships inside the repository (`reference/astra-sim`, with its license notice), so a plain
clone runs every test; a missing data set fails loudly (tests/test_reference_data.py) instead of skipping.
`../shared/` (the team's copy) is only used to check that the shipped copy is identical to it.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASTRA_REFERENCE = ROOT / "reference" / "astra-sim"
SHARED = Path(os.environ.get("FABRICSIM_SHARED", ROOT.parent / "shared"))
