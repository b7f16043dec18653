"""Results beyond physical plausibility, refused at the result boundary with the inputs that caused them.

Every input may lie in its accepted range and still combine into an answer no machine gives: a
training iteration of 1e294 s, a collective over a year. `fabricsim train` (`train.run_train`) and `fabricsim collective`
(`collective_job.run_collective`) check their answers here and refuse such a one as bad input (one
line, exit code 2) that names the inputs its time comes from, instead of printing it.

- `YEAR_S`: the longest plausible time, s (a training iteration or one collective over a year is
  a unit or typing error: the largest published runs take seconds per iteration).
"""

from __future__ import annotations

import math

from ..errors import ConfigError

YEAR_S = 365.25 * 86400.0
"""The longest plausible iteration or collective, s (a Julian year)."""

_COMM = ("MP", "CP", "EP", "PP", "DP", "IO", "other")


def plausible_time(t: float) -> bool:
    """Whether a time in s is finite, not negative and at most `YEAR_S`.

    Parameters
    ----------
    t : float
        Seconds.

    Returns
    -------
    bool

    Examples
    --------
    >>> plausible_time(1.2e-3), plausible_time(5.3e294), plausible_time(float("nan"))
    (True, False, False)
    """
    return isinstance(t, (int, float)) and math.isfinite(t) and 0.0 <= t <= YEAR_S


def dominant_part(breakdown: dict[str, float]) -> tuple[str, float]:
    """(compute or communication, its share of compute + exposed communication) of a training
    breakdown (`TrainResult.mean_breakdown`, s per component; idle is left out: it is waiting for
    one of the others).

    Parameters
    ----------
    breakdown : dict of str to float
        Component -> seconds (`compute`, the categories, `idle`).

    Returns
    -------
    (str, float)
        ("compute" or "communication", share in [0, 1]).

    Examples
    --------
    >>> dominant_part({"compute": 1.0, "MP": 3.0, "DP": 0.0, "idle": 9.0})
    ('communication', 0.75)
    """
    comp = float(breakdown.get("compute", 0.0))
    comm = float(sum(breakdown.get(k, 0.0) for k in _COMM))
    total = comp + comm
    if not math.isfinite(total) or total <= 0:
        return ("compute" if not math.isfinite(comp) or comp >= comm else "communication"), 1.0
    return ("compute", comp / total) if comp >= comm else ("communication", comm / total)


def check_iteration(time_s: float, breakdown: dict[str, float], inputs: dict[str, str], where: str = "") -> None:
    """None, or a ConfigError naming the inputs behind an iteration time over `YEAR_S`.

    Parameters
    ----------
    time_s : float
        The run's iteration time, s.
    breakdown : dict of str to float
        Its mean breakdown (`TrainResult.mean_breakdown`), s.
    inputs : dict of str to str
        "compute" and "communication" -> the inputs that set that part's time, as the config
        names them (`system.npu (gpu: a100)`, `network.bandwidth 1B/s, system.endpoint npu`).
    where : str
        The config file, named first.
    """
    if plausible_time(time_s):
        return
    part, share = dominant_part(breakdown)
    field = (f"{where}: " if where else "") + inputs[part]
    raise ConfigError(field, f"{time_s:.4g} s per iteration",
                      f"beyond physical plausibility: over a year ({share:.0%} of it {part}); accepted: inputs for "
                      "which an iteration takes under a year")


def check_collective(rows: list[dict], inputs: str) -> None:
    """None, or a ConfigError naming the inputs behind a collective row that takes over `YEAR_S`.

    (A bus bandwidth above the sum of every link's bandwidth is not refused here: a registered network
    model may price steps by a rule of its own, as tests/test_extension_points.py's `toy-fixed` does.)

    Parameters
    ----------
    rows : list of dict
        `report.tables.collective_rows` (`size_bytes`, `time_s`).
    inputs : str
        The inputs the time comes from (`--bandwidth 100bps, --latency 100ns on ring:8`).

    Examples
    --------
    >>> check_collective([{"size_bytes": 1024, "time_s": 3.2e7}], "--bandwidth 1bps on ring:8")
    Traceback (most recent call last):
    ...
    fabricsim.errors.ConfigError: --bandwidth 1bps on ring:8, --sizes 1024: invalid value '3.2e+07 s'; beyond physical plausibility: one collective over a year; accepted: inputs for which it takes under a year (a larger bandwidth, a smaller size)
    """
    for r in rows:
        t = r["time_s"]
        if not plausible_time(t):
            raise ConfigError(f"{inputs}, --sizes {r['size_bytes']}", f"{t:.4g} s",
                              "beyond physical plausibility: one collective over a year; accepted: inputs for which "
                              "it takes under a year (a larger bandwidth, a smaller size)")
