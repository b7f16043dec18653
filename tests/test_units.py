"""Units: parsing sizes, bandwidths, times and size ranges; formatting; one-line errors.

Expected values are written out from the unit definitions (decimal prefixes = powers of 1000,
binary = powers of 1024, 8 bits per byte)."""

from __future__ import annotations

import pytest

from fabricsim.errors import ConfigError
from fabricsim.units import (
    format_bandwidth,
    format_size,
    format_time,
    parse_bandwidth,
    parse_size,
    parse_size_range,
    parse_time,
)

KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40


# ---- parse_size ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,want",
    [
        ("4096", 4096),
        ("0", 0),
        ("1B", 1),
        ("1KB", 1000),
        ("1kB", 1000),
        ("1KiB", 1024),
        ("64MiB", 64 * MiB),
        ("1.5GB", 1.5e9),
        ("2GiB", 2 * GiB),
        ("1TiB", TiB),
        ("3TB", 3e12),
        ("8b", 1),
        ("8bit", 1),
        ("16bits", 2),
        ("1Kb", 125),  # kilobit
        ("1 KiB", 1024),
        ("  512MiB  ", 512 * MiB),
        (".5KiB", 512),
        ("1e3", 1000),
        # a bare prefix, as nccl-tests' -b/-e take it, is binary; with a unit letter it is SI
        ("8K", 8 * KiB),
        ("8k", 8 * KiB),
        ("128M", 128 * MiB),
        ("1.5M", 1.5 * MiB),
        ("1G", GiB),
        ("2T", 2 * TiB),
        ("128 M", 128 * MiB),
        ("128MB", 128e6),
        ("128MiB", 128 * MiB),
        ("128Mb", 16e6),  # megabits
        (4096, 4096),
        (1, 1),
        (2.5, 2.5),
    ],
)
def test_parse_size(text, want):
    got = parse_size(text)
    assert isinstance(got, float)
    assert got == pytest.approx(want, rel=1e-12)


# ---- parse_bandwidth ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,want",
    [
        ("400Gbps", 50e9),  # 400e9 bits/s / 8
        ("100Gbit/s", 12.5e9),
        ("800Gb/s", 100e9),
        ("50GB/s", 50e9),
        ("50GBps", 50e9),
        ("25GiB/s", 25 * GiB),
        ("1.5TB/s", 1.5e12),
        ("10MB/s", 10e6),
        ("1kB/s", 1e3),
        (50e9, 50e9),
        (1, 1),
    ],
)
def test_parse_bandwidth(text, want):
    assert parse_bandwidth(text) == pytest.approx(want, rel=1e-12)


# ---- parse_time ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,want",
    [
        ("100ns", 100e-9),
        ("1.5us", 1.5e-6),
        ("2ms", 2e-3),
        ("0.5s", 0.5),
        ("3\u00b5s", 3e-6),  # MICRO SIGN
        ("3\u03bcs", 3e-6),  # GREEK SMALL LETTER MU: looks the same
        ("10ps", 10e-12),
        ("0ns", 0.0),
        ("1 us", 1e-6),
        (0, 0.0),
        (1.5e-6, 1.5e-6),
    ],
)
def test_parse_time(text, want):
    assert parse_time(text) == pytest.approx(want, rel=1e-12, abs=0)


# ---- parse_size_range ---------------------------------------------------------------------------


def test_size_range_doubling():
    sizes = parse_size_range("1KiB:1GiB")
    # 2^10, 2^11, ..., 2^30: 21 sizes
    assert len(sizes) == 21
    assert sizes == [float(2**k) for k in range(10, 31)]


def test_size_range_factor():
    assert parse_size_range("1KiB:1MiB:4") == [float(2**k) for k in (10, 12, 14, 16, 18, 20)]
    assert parse_size_range("1KB:1GB:10") == pytest.approx([10.0**k for k in range(3, 10)], rel=1e-12)


def test_size_range_nccl_tests_syntax():
    # issue 12: `-s 8:128M` is nccl-tests' `-b 8 -e 128M`: 8 B .. 128 x 2^20 B doubling, 2^3 .. 2^27
    sizes = parse_size_range("8:128M")
    assert sizes == [float(2**k) for k in range(3, 28)]
    assert parse_size_range("8:128MB")[-1] == 2.0**26  # SI: 128e6 B, so the doubling stops at 64 MiB


def test_bare_prefix_rule_is_sizes_only():
    # bandwidths keep decimal prefixes and need their unit
    assert parse_bandwidth("1MB/s") == 1e6
    check_error(parse_bandwidth, "1M", "bandwidth")


def test_size_accepted_documents_bare_prefix():
    from fabricsim.units import SIZE_ACCEPTED

    assert "128M = 128MiB" in SIZE_ACCEPTED


def test_size_range_endpoint_not_on_grid():
    # 1, 2 KiB; 4 KiB would pass the 3 KiB maximum
    assert parse_size_range("1KiB:3KiB") == [1024.0, 2048.0]


def test_size_range_single_and_list():
    assert parse_size_range("1KiB,1MiB") == [1024.0, float(MiB)]
    assert parse_size_range("4KiB") == [4096.0]
    assert parse_size_range("1KiB:1KiB") == [1024.0]
    assert parse_size_range("8,16, 32") == [8.0, 16.0, 32.0]


# ---- formatting -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,want",
    [
        (1048576, "1 MiB"),
        (1536, "1.5 KiB"),
        (1024, "1 KiB"),
        (100, "100 B"),
        (0, "0 B"),
        (3 * GiB, "3 GiB"),
        (2 * TiB, "2 TiB"),
        (MiB - 1, "1 MiB"),  # 0.99999905 MiB, 1 at 4 significant digits (not "1024 KiB")
    ],
)
def test_format_size(value, want):
    assert format_size(value) == want


@pytest.mark.parametrize(
    "value,want",
    [
        (1.5e-6, "1.5 us"),
        (0, "0 s"),
        (2e-3, "2 ms"),
        (2.5, "2.5 s"),
        (100e-9, "100 ns"),
        (1e-3, "1 ms"),
        (12e-12, "12 ps"),
        (0.99999999e-3, "1 ms"),  # rounds to 1 ms, not "1000 us"
    ],
)
def test_format_time(value, want):
    assert format_time(value) == want


@pytest.mark.parametrize(
    "value,want",
    [
        (50e9, "50 GB/s"),
        (1.5e12, "1.5 TB/s"),
        (999, "999 B/s"),
        (12.5e6, "12.5 MB/s"),
        (2e3, "2 kB/s"),
    ],
)
def test_format_bandwidth(value, want):
    assert format_bandwidth(value) == want


def test_format_parse_round_trip():
    # format then parse gives back the value (exact for these round numbers)
    assert parse_size(format_size(64 * MiB).replace(" ", "")) == 64 * MiB
    assert parse_time(format_time(2e-3).replace(" ", "")) == pytest.approx(2e-3)
    assert parse_bandwidth(format_bandwidth(50e9).replace(" ", "")) == 50e9


# ---- errors ---------------------------------------------------------------------------------------


def check_error(fn, value, field: str, needle: str | None = None):
    with pytest.raises(ConfigError) as ei:
        fn(value)
    msg = str(ei.value)
    assert "\n" not in msg, msg
    assert msg.startswith(field + ":"), msg
    assert (needle if needle is not None else repr(value)) in msg, msg
    assert "accepted" in msg, msg
    return msg


@pytest.mark.parametrize("value", ["-1", "-1KiB", -5, "", "   ", "abc", "400Gbps", "10ns", "1.5XB", "KiB",
                                   float("inf"), float("nan"), True, "1KiB1"])
def test_parse_size_errors(value):
    check_error(parse_size, value, "size")


@pytest.mark.parametrize("value", ["10ns", "0GB/s", "-1GB/s", "", "abc", "64MiB", 0, -1.0,
                                   float("inf"), False])
def test_parse_bandwidth_errors(value):
    check_error(parse_bandwidth, value, "bandwidth")


@pytest.mark.parametrize("value", ["-1ns", "", "abc", "5GB", "1.5 hours", -1e-6, float("nan"), True])
def test_parse_time_errors(value):
    check_error(parse_time, value, "time")


@pytest.mark.parametrize(
    "text",
    [
        "1MiB:1KiB",  # MIN > MAX
        "1KiB:1MiB:1",  # factor <= 1
        "1KiB:1MiB:0.5",
        "1KiB:1MiB:-2",
        "1KiB:1MiB:abc",
        "1KiB:1MiB:nan",
        "0:1KiB",  # MIN must be > 0 (or the doubling never ends)
        "1:2:3:4",
        ",",  # a comma list with no sizes
        " , , ",
    ],
)
def test_parse_size_range_errors(text):
    check_error(parse_size_range, text, "sizes", needle=text.strip())


@pytest.mark.parametrize("text", ["", "abc", "1KiB:xyz", "1KiB,-4"])
def test_parse_size_range_bad_sizes(text):
    with pytest.raises(ConfigError) as ei:
        parse_size_range(text)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith("sizes:")


def test_error_names_custom_field():
    with pytest.raises(ConfigError) as ei:
        parse_size("lots", "message size")
    assert str(ei.value).startswith("message size: invalid value 'lots'")
    assert ei.value.field == "message size" and ei.value.value == "lots"
