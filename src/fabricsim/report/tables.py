"""nccl-tests-style collective tables.

algbw = size / time; busbw = algbw x factor, with nccl-tests' factors, so that busbw is
comparable to a rank's link bandwidth whatever the group size. GB = 1e9 bytes. Sizes follow
nccl-tests: for all-gather the gathered output, for reduce-scatter the input. The factor
depends on the collective only, not on the algorithm (as in nccl-tests). `count` is the element
count nccl-tests prints: the count passed to the NCCL call, per rank for all-gather,
reduce-scatter and all-to-all.

Two text layouts: `rows_to_text` (fabricsim's table, header lines `#`-prefixed so that
`grep -v '^#'` keeps the data rows) and `rows_to_nccl` (exactly nccl-tests' all_reduce_perf
layout, for scripts that parse it).
"""

from __future__ import annotations

import csv
import io
import json

import numpy as np

from ..units import format_size

ELEMENT_BYTES = 4  # nccl-tests' count column, float32

PER_RANK_COUNT = frozenset({"all-gather", "reduce-scatter", "all-to-all"})  # nccl-tests' count is size/4/n
REDOP = {"all-reduce": "sum", "reduce-scatter": "sum", "reduce": "sum"}  # nccl-tests' redop; others "none"
ROOTED = frozenset({"broadcast", "reduce"})  # nccl-tests prints root -1 for the others

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
        Keys `size_bytes`, `count` (float32 elements, as nccl-tests counts them: per rank for
        all-gather, reduce-scatter and all-to-all), `time_s`, `time_us`, `algbw_GBps` and
        `busbw_GBps` (GB = 1e9 bytes; inf for a zero time).

    Examples
    --------
    >>> row = collective_rows("all-reduce", 8, [1e9], [0.01])[0]
    >>> row["size_bytes"], row["count"], round(row["algbw_GBps"], 6), round(row["busbw_GBps"], 6)
    (1000000000, 250000000, 100.0, 175.0)
    """
    rows = []
    f = busbw_factor(collective, n)
    per = n if collective in PER_RANK_COUNT else 1
    for size, t in zip(np.asarray(sizes, float), np.asarray(times, float)):
        algbw = size / t if t > 0 else float("inf")
        rows.append({
            "size_bytes": int(round(size)) if float(size).is_integer() else float(size),
            "count": int(size // ELEMENT_BYTES) // per,
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


def rows_to_text(rows: list[dict]) -> str:
    """fabricsim's table: size (B), size, count, type, time, algbw, busbw; the column names on a
    `#`-prefixed line, like every other line that is not a data row.

    Parameters
    ----------
    rows : list of dict
        Rows of `collective_rows`, with `algorithm`, `protocol` and `channels` where NCCL's
        algorithms ran (printed as three more columns).

    Returns
    -------
    str
        Lines ending in newlines; each column right-aligned to its widest entry.
    """
    head = ("size (B)", "size", "count (elements)", "type", "time (us)", "algbw (GB/s)", "busbw (GB/s)")
    body = [(str(r["size_bytes"]), format_size(r["size_bytes"]), str(r["count"]), "float", f"{r['time_us']:.2f}",
             f"{r['algbw_GBps']:.2f}", f"{r['busbw_GBps']:.2f}") for r in rows]
    if rows and "protocol" in rows[0]:  # what NCCL chose per size, as NCCL_DEBUG=INFO reports it
        head += ("algorithm", "proto", "channels")
        body = [b + (r["algorithm"], r["protocol"], str(r["channels"])) for b, r in zip(body, rows)]
    widths = [max(len(c) for c in col) for col in zip(head, *body)]
    line = lambda cells: "  ".join(c.rjust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "".join([f"# {line(head)}\n"] + [f"  {line(b)}\n" for b in body])


def nccl_time(us: float) -> str:
    """A time as nccl-tests prints it: 7 characters, 0, 1 or 2 decimals as the value grows.

    Parameters
    ----------
    us : float
        Microseconds.

    Returns
    -------
    str

    Examples
    --------
    >>> nccl_time(16.8), nccl_time(414.19), nccl_time(12646.4)
    ('  16.80', '  414.2', '  12646')
    """
    if us >= 10000.0:
        return f"{us:7.0f}"
    return f"{us:7.1f}" if us >= 100.0 else f"{us:7.2f}"


def rows_to_nccl(collective: str, rows: list[dict], root: int | None = None, wrong: int | None = 0,
                 preamble: tuple[str, ...] = ()) -> str:
    """The rows in nccl-tests' all_reduce_perf layout: `#` header lines, out-of-place and in-place
    columns (the same simulated time in both), `# Avg bus bandwidth` at the end.

    Parameters
    ----------
    collective : str
        Canonical collective name: sets redop (`sum` or `none`) and whether `root` is printed.
    rows : list of dict
        Rows of `collective_rows`.
    root : int, optional
        Root rank of broadcast and reduce (nccl-tests prints -1 for the other collectives).
    wrong : int or None
        The #wrong column: 0 after a passed verification, None (`N/A`) when not verified.
    preamble : tuple of str
        Lines printed first, each prefixed with `# `.

    Returns
    -------
    str
        Lines ending in newlines, with nccl-tests' column widths.
    """
    op = REDOP.get(collective, "none")
    rt = root if collective in ROOTED and root is not None else -1
    wr = "  N/A" if wrong is None else f"{wrong:5d}"
    out = [f"# {p}\n" for p in preamble] + ["#\n"]
    out.append(f"# {'':>10}  {'':>12}  {'':>8}  {'':>6}  {'':>6}           out-of-place"
               "                       in-place          \n")
    out.append(f"# {'size':>10}  {'count':>12}  {'type':>8}  {'redop':>6}  {'root':>6}"
               + f"  {'time':>7}  {'algbw':>6}  {'busbw':>6} {'#wrong':>6}" * 2 + "\n")
    out.append(f"# {'(B)':>10}  {'(elements)':>12}  {'':>8}  {'':>6}  {'':>6}"
               + f"  {'(us)':>7}  {'(GB/s)':>6}  {'(GB/s)':>6}  {'':>5}" * 2 + "\n")
    for r in rows:
        res = f"  {nccl_time(r['time_us'])}  {r['algbw_GBps']:6.2f}  {r['busbw_GBps']:6.2f}  {wr}"
        out.append(f"{int(r['size_bytes']):12d}  {r['count']:12d}  {'float':>8}  {op:>6}  {rt:6d}{res}{res}\n")
    out.append("# Out of bounds values : 0 OK\n")
    out.append(f"# Avg bus bandwidth    : {avg_busbw(rows):g} \n")
    out.append("#\n")
    return "".join(out)
