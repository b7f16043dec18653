"""Shared test settings: where the reference data lives.

The checkout sits next to `shared/` (CI clones main beside it); FABRICSIM_SHARED overrides.
"""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(os.environ.get("FABRICSIM_SHARED", Path(__file__).resolve().parents[2] / "shared"))
ASTRA_REFERENCE = SHARED / "reference" / "astra-sim"
