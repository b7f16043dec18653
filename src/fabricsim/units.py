"""Units at the edges: parse `64MiB`, `400Gbps`, `100ns`, `1.5TB/s`; print with units.

Inside fabricsim everything is bytes, seconds and bytes/second (floats).
Decimal prefixes (k, M, G, T, P) are powers of 1000, binary prefixes (Ki, Mi, Gi, Ti, Pi) powers
of 1024. Bits are converted to bytes (`400Gbps` = 50e9 B/s).

Sizes follow nccl-tests where its users type its syntax: a bare prefix with no unit letter
(`8K`, `128M`, `1G`, as in `-b 8 -e 128M`) is binary, 128 x 2^20 bytes; with a unit it is SI:
`128MB` = 128e6 bytes, `128MiB` = 128 x 2^20 bytes, `128Mb` = 16e6 bytes. Bandwidths, times and
compute rates always need their unit and keep decimal prefixes.
"""

from __future__ import annotations

import contextlib
import math
import re
from contextvars import ContextVar

from .errors import ConfigError
from .limits import check_limit

_DEC = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_BARE = {"k": 2.0**10, "K": 2.0**10, "M": 2.0**20, "G": 2.0**30, "T": 2.0**40, "P": 2.0**50}  # sizes only
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "\u00b5s": 1e-6, "\u03bcs": 1e-6, "ns": 1e-9, "ps": 1e-12}  # micro sign and Greek mu

_NUM = r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_PREFIX = r"(Ki|Mi|Gi|Ti|Pi|k|K|M|G|T|P|)"
_SIZE_RE = re.compile(rf"^{_NUM}\s*{_PREFIX}(B|b|bit|bits)?$")
_BW_RE = re.compile(rf"^{_NUM}\s*{_PREFIX}(bps|bit/s|b/s|B/s|Bps)$")
_TIME_RE = re.compile(rf"^{_NUM}\s*(s|ms|us|\u00b5s|\u03bcs|ns|ps)$")
_FLOPS_RE = re.compile(rf"^{_NUM}\s*{_PREFIX}(FLOP/s|FLOPS|flop/s|flops|FLOP/S)$")

SIZE_ACCEPTED = ("accepted: a byte count such as 4096, 1KB, 64MiB, 1.5GB, 128M (B, KB/KiB, MB/MiB, GB/GiB, TB/TiB; "
                 "a bare K/M/G/T as in nccl-tests is binary: 128M = 128MiB)")
BW_ACCEPTED = "accepted: a bandwidth such as 400Gbps, 50GB/s, 25GiB/s (bps or B/s with k/M/G/T or Ki/Mi/Gi/Ti)"
FLOPS_ACCEPTED = "accepted: a compute rate such as 989TFLOP/s, 1PFLOPS, 312 TFLOP/s (FLOP/s or FLOPS with k/M/G/T/P)"
TIME_ACCEPTED = "accepted: a time such as 100ns, 1.5us, 2ms, 0.5s (s, ms, us, ns, ps)"


def _mult(prefix: str) -> float:
    return _BIN[prefix] if prefix in _BIN else _DEC[prefix]


# True while a config file is validated (`numbers_need_units`): a per-context flag, not global state
_NUMBERS_NEED_UNITS: ContextVar[bool] = ContextVar("fabricsim_numbers_need_units", default=False)


@contextlib.contextmanager
def numbers_need_units():
    """Within the block, the parsers read a number as the command line reads its text: YAML turns
    `latency: 100` into the number 100, which must be as ambiguous as `-L 100` (0 stays accepted,
    as it needs no unit; a bare size is bytes on both). `fabricsim.config.validate` uses it for
    values read from files; Python callers, who pass floats in SI units, are not affected.

    Yields
    ------
    None
    """
    token = _NUMBERS_NEED_UNITS.set(True)
    try:
        yield
    finally:
        _NUMBERS_NEED_UNITS.reset(token)


def _parse_quantity(text, field: str, pattern: re.Pattern, accepted: str, convert, positive: bool) -> float:
    """Shared shape of the parsers: numbers pass through (already SI), strings must match
    `pattern` and `convert(groups)` turns the match into SI; the result must be finite and
    >= 0 (> 0 if `positive`). Under `numbers_need_units` a nonzero number is read as its text."""
    if isinstance(text, bool):
        raise ConfigError(field, text, accepted)
    if isinstance(text, (int, float)) and _NUMBERS_NEED_UNITS.get() and text != 0:
        m = pattern.match(str(text))
        if not m:
            raise ConfigError(field, text, accepted)
        value = convert(*m.groups())
    elif isinstance(text, (int, float)):
        value = float(text)
    else:
        m = pattern.match(str(text).strip())
        if not m:
            raise ConfigError(field, text, accepted)
        value = convert(*m.groups())
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ConfigError(field, text, accepted + (" (greater than zero)" if positive else " (not negative)"))
    return value


def _size_value(num: str, prefix: str, unit: str | None) -> float:
    if unit is None and prefix in _BARE:  # nccl-tests' `128M`: binary
        return float(num) * _BARE[prefix]
    bits = unit in ("b", "bit", "bits")
    return float(num) * _mult(prefix) / (8.0 if bits else 1.0)


def _bandwidth_value(num: str, prefix: str, unit: str) -> float:
    bits = unit in ("bps", "bit/s", "b/s")
    return float(num) * _mult(prefix) / (8.0 if bits else 1.0)


def parse_size(text: str | int | float, field: str = "size") -> float:
    """Bytes from `4096`, `1KiB`, `64MiB`, `1.5GB`, `8b`, `128M`; a number (or a digit string) is bytes.

    Parameters
    ----------
    text : str, int or float
        A byte count, with or without a unit (B, or b/bit/bits for bits). A bare prefix is binary
        as in nccl-tests (`128M` = 128 x 2^20), one with a unit letter SI (`128MB` = 128e6).
    field : str
        The field named in the error.

    Returns
    -------
    float
        Bytes, >= 0; a one-line ConfigError naming `field` for anything else.

    Examples
    --------
    >>> parse_size("64MiB"), parse_size("1.5GB"), parse_size(4096), parse_size("128M")
    (67108864.0, 1500000000.0, 4096.0, 134217728.0)
    """
    return _parse_quantity(text, field, _SIZE_RE, SIZE_ACCEPTED, _size_value, positive=False)


def parse_bandwidth(text: str | int | float, field: str = "bandwidth") -> float:
    """Bytes/second from `400Gbps`, `50GB/s`, `25GiB/s`; a Python number is bytes/second (a
    string needs its unit: `50` alone is ambiguous).

    Parameters
    ----------
    text : str, int or float
        A rate in bits (bps, bit/s, b/s) or bytes (B/s, Bps) per second.
    field : str
        The field named in the error.

    Returns
    -------
    float
        Bytes/second, > 0; a one-line ConfigError naming `field` for anything else.

    Examples
    --------
    >>> parse_bandwidth("400Gbps"), parse_bandwidth("50GB/s"), parse_bandwidth("25GiB/s")
    (50000000000.0, 50000000000.0, 26843545600.0)
    """
    return _parse_quantity(text, field, _BW_RE, BW_ACCEPTED, _bandwidth_value, positive=True)


def parse_time(text: str | int | float, field: str = "time") -> float:
    """Seconds from `100ns`, `1.5us`, `2ms`; a Python number is seconds (a string needs its unit).

    Parameters
    ----------
    text : str, int or float
        A time with a unit: s, ms, us (or µs), ns, ps.
    field : str
        The field named in the error.

    Returns
    -------
    float
        Seconds, >= 0; a one-line ConfigError naming `field` for anything else.

    Examples
    --------
    >>> parse_time("1.5us"), parse_time("2ms"), parse_time(0.5)
    (1.5e-06, 0.002, 0.5)
    """
    return _parse_quantity(text, field, _TIME_RE, TIME_ACCEPTED, lambda num, unit: float(num) * _TIME[unit], positive=False)


def parse_flops(text: str | int | float, field: str = "peak") -> float:
    """FLOP/s from `989TFLOP/s`, `1PFLOPS`; a Python number is FLOP/s.

    Parameters
    ----------
    text : str, int or float
        A compute rate, FLOP/s or FLOPS with a decimal prefix (k, M, G, T, P).
    field : str
        The field named in the error.

    Returns
    -------
    float
        FLOP/s, > 0; a one-line ConfigError naming `field` for anything else.

    Examples
    --------
    >>> parse_flops("989TFLOP/s"), parse_flops("1PFLOPS")
    (989000000000000.0, 1000000000000000.0)
    """
    return _parse_quantity(text, field, _FLOPS_RE, FLOPS_ACCEPTED,
                           lambda num, prefix, unit: float(num) * _DEC.get(prefix, 0.0) if prefix in _DEC else -1.0,
                           positive=True)


MAX_SIZE = 2.0**53
"""The largest message size (bytes, 8 PiB) of a size list: whole bytes stay exact in a float up to here."""

_WHOLE = "accepted: whole bytes from 1 to 2^53 (8 PiB), e.g. 4096, 1KiB, 64MiB (1b is 1/8 byte)"


def parse_whole_size(text: str | int | float, field: str = "size") -> int:
    """A message size: `parse_size`, then a whole number of bytes from 1 to `MAX_SIZE` (a message
    moves whole bytes; 0 B or `1b` = 1/8 B would make times and bandwidths meaningless).

    Parameters
    ----------
    text : str, int or float
        As `parse_size` reads it (`4096`, `1KiB`, `64MiB`, `8b` = 1 B).
    field : str
        The field named in the error.

    Returns
    -------
    int
        Bytes; a one-line ConfigError naming `field` for anything else.

    Examples
    --------
    >>> parse_whole_size("1KiB"), parse_whole_size("8b")
    (1024, 1)
    """
    return int(_whole_size(text, text, field))


def _whole_size(part, text, field: str) -> float:
    """One size of a size list (`parse_whole_size`), the error naming the whole list `text`."""
    value = parse_size(part, field)
    if not (1 <= value <= MAX_SIZE) or value != math.floor(value):
        raise ConfigError(field, text, _WHOLE)
    return value


def parse_size_range(text: str, field: str = "sizes") -> list[float]:
    """Sizes from `1KiB:1GiB` (doubling, like nccl-tests -b/-e/-f 2), `1KiB:1GiB:4` (factor 4),
    or a comma list `1KiB,1MiB`; each size as `parse_size` reads it (`8:128M` is nccl-tests'
    `-b 8 -e 128M`: 8 B to 128 MiB).

    Parameters
    ----------
    text : str
        SIZE, MIN:MAX, MIN:MAX:FACTOR (FACTOR > 1, finite) or SIZE,SIZE,...; every size a whole
        number of bytes from 1 to 2^53 (`MAX_SIZE`).
    field : str
        The field named in the error.

    Returns
    -------
    list of float
        Bytes: MIN times powers of FACTOR up to MAX, each rounded to the nearest whole byte
        (duplicates dropped) for a fractional FACTOR; a one-line ConfigError for anything else,
        and for more sizes than the `sizes` limit (counted before the list is made).

    Examples
    --------
    >>> parse_size_range("1KiB:16KiB:4"), parse_size_range("8:128M")[-1] == 128 * 2**20
    ([1024.0, 4096.0, 16384.0], True)
    >>> parse_size_range("1:4:1.5")
    [1.0, 2.0, 3.0]
    """
    text = str(text).strip()
    if "," in text:
        parts = [part for part in text.split(",") if part.strip()]
        if not parts:
            raise ConfigError(field, text, "accepted: SIZE, MIN:MAX, MIN:MAX:FACTOR or a comma list of sizes")
        check_limit("sizes", len(parts), "sizes", field, text)
        return [_whole_size(part, text, field) for part in parts]
    parts = text.split(":")
    if len(parts) == 1:
        return [_whole_size(parts[0], text, field)]
    if len(parts) not in (2, 3):
        raise ConfigError(field, text, "accepted: SIZE, MIN:MAX, MIN:MAX:FACTOR or a comma list")
    lo, hi = _whole_size(parts[0], text, field), _whole_size(parts[1], text, field)
    factor = 2.0
    if len(parts) == 3:
        try:
            factor = float(parts[2])
        except ValueError:
            factor = -1.0
        if not (1 < factor < math.inf):
            raise ConfigError(field, text, "accepted: MIN:MAX:FACTOR with a finite FACTOR > 1")
    if hi < lo:
        raise ConfigError(field, text, "accepted: MIN:MAX with 1 B <= MIN <= MAX")
    # count before expanding: `1:1GiB:1.000001` would be 21 million sizes
    count = math.floor(math.log(hi / lo) / math.log(factor) + 1e-9) + 1
    check_limit("sizes", count, "sizes", field, text)
    sizes: list[float] = []
    s = lo
    while s <= hi * (1 + 1e-12):
        whole = float(round(s))  # a fractional factor steps through whole bytes, as nccl-tests does
        if not sizes or whole != sizes[-1]:
            sizes.append(whole)
        s *= factor
    return sizes


def _fmt(value: float, scale: list[tuple[float, str]], digits: int) -> str:
    for mult, name in scale:
        # largest unit whose *rounded* mantissa is >= 1 (so 1048575 B prints "1 MiB", not "1024 KiB")
        if abs(float(f"{value / mult:.{digits}g}")) >= 1:
            return f"{value / mult:.{digits}g} {name}"
    mult, name = scale[-1]
    return f"{value / mult:.{digits}g} {name}"


def format_size(nbytes: float, digits: int = 4) -> str:
    """`1048576` -> `1 MiB` (binary prefixes, as sizes are usually powers of two).

    Parameters
    ----------
    nbytes : float
        Bytes.
    digits : int
        Significant digits.

    Returns
    -------
    str
        The value in the largest unit (B .. TiB) in which it is at least 1.

    Examples
    --------
    >>> format_size(1048576), format_size(1536)
    ('1 MiB', '1.5 KiB')
    """
    scale = [(2.0**40, "TiB"), (2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**10, "KiB"), (1.0, "B")]
    return _fmt(nbytes, scale, digits)


def format_time(seconds: float, digits: int = 4) -> str:
    """Seconds as text in s, ms, us, ns or ps.

    Parameters
    ----------
    seconds : float
        Seconds.
    digits : int
        Significant digits.

    Returns
    -------
    str
        The value in the largest unit in which it is at least 1 (`0 s` for zero).

    Examples
    --------
    >>> format_time(1.5e-6), format_time(0.0123456), format_time(0)
    ('1.5 us', '12.35 ms', '0 s')
    """
    scale = [(1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"), (1e-12, "ps")]
    if seconds == 0:
        return "0 s"
    return _fmt(seconds, scale, digits)


def format_bandwidth(bytes_per_s: float, digits: int = 4) -> str:
    """Bytes/second as text in decimal units (B/s, kB/s, MB/s, GB/s, TB/s).

    Parameters
    ----------
    bytes_per_s : float
        Bytes/second.
    digits : int
        Significant digits.

    Returns
    -------
    str
        The value in the largest unit in which it is at least 1.

    Examples
    --------
    >>> format_bandwidth(50e9)
    '50 GB/s'
    """
    scale = [(1e12, "TB/s"), (1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1.0, "B/s")]
    return _fmt(bytes_per_s, scale, digits)


def format_flops(flops_per_s: float, digits: int = 4) -> str:
    """FLOP/s as text in decimal units (FLOP/s, MFLOP/s, GFLOP/s, TFLOP/s, PFLOP/s).

    Parameters
    ----------
    flops_per_s : float
        FLOP/s.
    digits : int
        Significant digits.

    Returns
    -------
    str
        The value in the largest unit in which it is at least 1.

    Examples
    --------
    >>> format_flops(989e12)
    '989 TFLOP/s'
    """
    scale = [(1e15, "PFLOP/s"), (1e12, "TFLOP/s"), (1e9, "GFLOP/s"), (1e6, "MFLOP/s"), (1.0, "FLOP/s")]
    return _fmt(flops_per_s, scale, digits)
