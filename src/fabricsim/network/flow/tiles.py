"""Writing one row of values at many offsets of a flat array: how the flow engine tiles a
collective's template over its tasks (`engine.flow_engine`).

`out[starts[:, None] + np.arange(len(row))] = row` builds an index matrix as large as what it
writes and scatters through numpy's fancy indexing: 6 s of a 64-GPU training run's set-up (23 M
flows). Each function here writes the same values at the same places in one compiled pass (rows
are contiguous runs), where the compiled build is loaded (`fabricsim.kernels.load`: cached, or a
run big enough to compile); else numpy's expression, which defines it. The values are computed by
the same operations (`put_outer`: one product per element, as numpy's broadcast), so equal.
"""

from __future__ import annotations

import numpy as np

from ...kernels import kernel, load

_ENTRIES = ("_put_rows", "_put_each", "_put_outer", "_put_shifted")


@kernel
def _put_rows(out, starts, row):
    for s in starts:
        for j in range(len(row)):
            out[s + j] = row[j]


@kernel
def _put_each(out, starts, n, vals):
    for i in range(len(starts)):
        for j in range(n):
            out[starts[i] + j] = vals[i]


@kernel
def _put_outer(out, starts, a, row):
    for i in range(len(starts)):
        for j in range(len(row)):
            out[starts[i] + j] = a[i] * row[j]


@kernel
def _put_shifted(out, starts, a, row):
    for i in range(len(starts)):
        for j in range(len(row)):
            out[starts[i] + j] = a[i] + row[j]


def _compiled(starts: np.ndarray, n: int):
    """The compiled build, or None where numpy writes (a small write on a cold cache)."""
    mod = load(__name__, _ENTRIES, len(starts) * n, "the flow model's kernels")
    return None if mod.__name__.endswith("[python]") else mod


def _at(starts: np.ndarray, n: int) -> np.ndarray:
    return np.asarray(starts, dtype=np.int64)[:, None] + np.arange(n)


def put_rows(out: np.ndarray, starts: np.ndarray, row: np.ndarray) -> None:
    """out[starts[i] + j] = row[j] for every i and j < len(row) (runs of equal length)."""
    mod = _compiled(starts, len(row))
    if mod is None:
        out[_at(starts, len(row))] = row
    else:
        mod._put_rows(out, np.ascontiguousarray(starts, dtype=np.int64), np.ascontiguousarray(row, dtype=out.dtype))


def put_each(out: np.ndarray, starts: np.ndarray, n: int, vals: np.ndarray) -> None:
    """out[starts[i] + j] = vals[i] for every i and j < n."""
    mod = _compiled(starts, n)
    if mod is None:
        out[_at(starts, n)] = np.asarray(vals)[:, None]
    else:
        mod._put_each(out, np.ascontiguousarray(starts, dtype=np.int64), int(n),
                      np.ascontiguousarray(vals, dtype=out.dtype))


def put_outer(out: np.ndarray, starts: np.ndarray, a: np.ndarray, row: np.ndarray) -> None:
    """out[starts[i] + j] = a[i] * row[j] (floats: the product numpy's broadcast takes)."""
    mod = _compiled(starts, len(row))
    if mod is None:
        out[_at(starts, len(row))] = np.asarray(a, dtype=float)[:, None] * np.asarray(row, dtype=float)
    else:
        mod._put_outer(out, np.ascontiguousarray(starts, dtype=np.int64), np.ascontiguousarray(a, dtype=float),
                       np.ascontiguousarray(row, dtype=float))


def put_shifted(out: np.ndarray, starts: np.ndarray, a: np.ndarray, row: np.ndarray) -> None:
    """out[starts[i] + j] = a[i] + row[j] (integers)."""
    mod = _compiled(starts, len(row))
    if mod is None:
        out[_at(starts, len(row))] = np.asarray(a, dtype=np.int64)[:, None] + np.asarray(row, dtype=np.int64)
    else:
        mod._put_shifted(out, np.ascontiguousarray(starts, dtype=np.int64), np.ascontiguousarray(a, dtype=np.int64),
                         np.ascontiguousarray(row, dtype=np.int64))
