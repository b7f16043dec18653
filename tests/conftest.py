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

# Generated inputs are the same on every run (a failure in CI reproduces here); FABRICSIM_FUZZ=random
# explores new ones (hypothesis' own seeds).
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("fabricsim", derandomize=True)
_hypothesis_settings.register_profile("random", derandomize=False)
_hypothesis_settings.load_profile("random" if os.environ.get("FABRICSIM_FUZZ") == "random" else "fabricsim")
