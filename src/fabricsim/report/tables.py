"""nccl-tests-style collective tables.

algbw = size / time; busbw = algbw x factor, with nccl-tests' factors, so that busbw is
comparable to a rank's link bandwidth whatever the group size. GB = 1e9 bytes. Sizes follow
nccl-tests: for all-gather the gathered output, for reduce-scatter the input. The factor
depends on the collective only, not on the algorithm (as in nccl-tests).
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np

ELEMENT_BYTES = 4  # nccl-tests' count column, float32

BUSBW_FACTOR = {
    "all-reduce": lambda n: 2 * (n - 1) / n,
    "reduce-scatter": lambda n: (n - 1) / n,
    "all-gather": lambda n: (n - 1) / n,
    "all-to-all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}


def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor of `collective` on `n` ranks (busbw = algbw x factor).

    Parameters
    ----------
    collective : str
        Canonical collective name.
    n : int
        Ranks in the group.

    Returns
    -------
    float

    Examples
    --------
    >>> busbw_factor("all-reduce", 8)
    1.75
    """
    return BUSBW_FACTOR[collective](n)


def collective_rows(collective: str, n: int, sizes, times) -> list[dict]:
    """One nccl-tests row per size.

    Parameters
    ----------
    collective : str
        Canonical collective name (sets the busbw factor).
    n : int
        Ranks in the group.
    sizes : array of float
        Collective sizes, bytes.
    times : array of float
        Their times, s.

    Returns
    -------
    list of dict
        Keys `size_bytes`, `count` (float32 elements), `time_s`, `time_us`, `algbw_GBps` and
        `busbw_GBps` (GB = 1e9 bytes; inf for a zero time).

    Examples
    --------
    >>> row = collective_rows("all-reduce", 8, [1e9], [0.01])[0]
    >>> row["size_bytes"], row["count"], round(row["algbw_GBps"], 6), round(row["busbw_GBps"], 6)
    (1000000000, 250000000, 100.0, 175.0)
    """
    rows = []
    f = busbw_factor(collective, n)
    for size, t in zip(np.asarray(sizes, float), np.asarray(times, float)):
        algbw = size / t if t > 0 else float("inf")
        rows.append({
            "size_bytes": int(round(size)) if float(size).is_integer() else float(size),
            "count": int(size // ELEMENT_BYTES),
            "time_s": float(t),
            "time_us": float(t * 1e6),
            "algbw_GBps": float(algbw / 1e9),
            "busbw_GBps": float(algbw * f / 1e9),
        })
    return rows


def avg_busbw(rows: list[dict]) -> float:
    """Mean `busbw_GBps` of the rows with a finite value (nccl-tests' "Avg bus bandwidth").

    Parameters
    ----------
    rows : list of dict
        Rows of `collective_rows`.

    Returns
    -------
    float
        GB/s (GB = 1e9 bytes); 0 when no row has a finite value.
    """
    vals = [r["busbw_GBps"] for r in rows if np.isfinite(r["busbw_GBps"])]
    return float(np.mean(vals)) if vals else 0.0


def rows_to_csv(rows: list[dict]) -> str:
    """The rows as CSV text with a header line.

    Parameters
    ----------
    rows : list of dict
        Rows of `collective_rows` (the first row's keys are the columns).

    Returns
    -------
    str
        Empty text for no rows.
    """
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    return buf.getvalue()


def rows_to_json(header: dict, rows: list[dict]) -> str:
    """JSON text of `header`'s keys, the `rows` and their `avg_busbw_GBps`.

    Parameters
    ----------
    header : dict
        Keys written first (topology, collective, algorithm, ...).
    rows : list of dict
        Rows of `collective_rows`.

    Returns
    -------
    str
        Indented JSON.
    """
    return json.dumps({**header, "rows": rows, "avg_busbw_GBps": avg_busbw(rows)}, indent=2)
