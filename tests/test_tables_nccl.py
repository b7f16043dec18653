"""nccl-tests habits (issue 12): `--nccl` prints all_reduce_perf's exact layout; the default table's
non-data lines start with `#`; `-s 8:128M` reads M as nccl-tests does (binary).

Expected text comes from nccl-tests' own output (the header lines below are copied from an
all_reduce_perf run); expected numbers from the ring closed form t = 2(n-1)(a + S/(nB))."""

from __future__ import annotations

import pytest

from fabricsim.cli import main
from fabricsim.report.tables import collective_rows, rows_to_nccl

# all_reduce_perf's three header lines (nccl-tests 2.13), trailing blanks included
NCCL_HEADER = [
    "#                                                              out-of-place                       in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
]
# a row of that run: 16 ranks, 2 GiB: widths of every column
NCCL_ROW = "  2147483648     536870912     float     sum      -1    12646  169.81  318.40      0    12646  169.81  318.40      0"

N, B, A = 8, 50e9, 100e-9  # ring:8, 400 Gb/s, 100 ns


def ring_time(S: float) -> float:
    return 2 * (N - 1) * (A + S / (N * B))


def run(capsys, *args):
    rc = main(list(args))
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


def data_lines(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if not ln.startswith("#")]


def test_nccl_header_lines_exactly(capsys):
    out = run(capsys, "collective", "-t", "ring:8", "-s", "1MiB", "--nccl")
    lines = out.splitlines()
    assert lines[0].startswith("# fabricsim collective: all-reduce, ring on ring:8 (8 ranks)")
    assert lines[1] == "#"
    assert lines[2:5] == NCCL_HEADER
    assert lines[-3] == "# Out of bounds values : 0 OK"
    assert lines[-1] == "#"


def test_nccl_row_layout_matches_nccl_tests():
    """The 2 GiB row of a 16-rank all_reduce_perf run, rebuilt from its time, algbw and busbw."""
    S, t = 2147483648, 12646.0e-6
    rows = collective_rows("all-reduce", 16, [S], [t])
    # our algbw comes from the rounded time, nccl-tests' from the measured one: compare the layout
    rows[0]["algbw_GBps"], rows[0]["busbw_GBps"] = 169.81, 318.40
    row = rows_to_nccl("all-reduce", rows).splitlines()[4]
    assert row == NCCL_ROW


def test_nccl_row_parsed_back_matches_the_closed_form(capsys):
    S = 2**20
    out = run(capsys, "collective", "-t", "ring:8", "-B", "400Gbps", "-L", "100ns", "-s", "1MiB", "--nccl")
    (row,) = data_lines(out)
    f = row.split()
    assert len(f) == 13
    size, count, typ, redop, root = int(f[0]), int(f[1]), f[2], f[3], int(f[4])
    assert (size, count, typ, redop, root) == (S, S // 4, "float", "sum", -1)
    t = ring_time(S)  # 295.0 us: 7 characters, one decimal between 100 and 10000 us
    algbw = S / t / 1e9
    busbw = algbw * 2 * (N - 1) / N
    for half in (f[5:9], f[9:13]):  # out-of-place and in-place: the same simulated time
        assert float(half[0]) == pytest.approx(t * 1e6, abs=0.05)
        assert float(half[1]) == pytest.approx(algbw, abs=0.005)
        assert float(half[2]) == pytest.approx(busbw, abs=0.005)
        assert half[3] == "0"
    avg = out.splitlines()[-2]
    assert avg.startswith("# Avg bus bandwidth    : ") and avg.endswith(" ")
    assert float(avg.split(":")[1]) == pytest.approx(busbw, rel=1e-5)  # %g: 6 digits


def test_nccl_avg_busbw_over_a_range(capsys):
    sizes = [2.0**k for k in range(3, 28)]  # -s 8:128M: 8 B .. 128 MiB as nccl-tests' -b 8 -e 128M
    out = run(capsys, "collective", "-t", "ring:8", "-s", "8:128M", "--nccl")
    rows = data_lines(out)
    assert [int(r.split()[0]) for r in rows] == [int(s) for s in sizes]
    want = sum(s / ring_time(s) * 2 * (N - 1) / N / 1e9 for s in sizes) / len(sizes)
    got = float(out.splitlines()[-2].split(":")[1])
    assert got == pytest.approx(want, rel=1e-5)  # %g keeps 6 digits


@pytest.mark.parametrize("collective, redop, root, count_div", [
    ("all-gather", "none", -1, 4 * N),  # nccl-tests' count is per rank for all-gather
    ("reduce-scatter", "sum", -1, 4 * N),
    ("broadcast", "none", 3, 4),
    ("reduce", "sum", 3, 4),
])
def test_nccl_redop_root_count(capsys, collective, redop, root, count_div):
    S = 2**20
    # --root only where it applies (it is refused for collectives without a root)
    out = run(capsys, "collective", "-t", "ring:8", "-c", collective, *(["--root", "3"] if root >= 0 else []),
              "-s", "1MiB", "--nccl")
    f = data_lines(out)[0].split()
    assert (int(f[1]), f[3], int(f[4])) == (S // count_div, redop, root)


def test_nccl_no_verify_prints_na(capsys):
    out = run(capsys, "collective", "-t", "ring:8", "-s", "1KiB,1MiB", "--nccl", "--no-verify")
    for row in data_lines(out):
        f = row.split()
        assert f[8] == "N/A" and f[12] == "N/A"
        assert row.endswith("    N/A")


def test_default_table_header_is_hash_prefixed(capsys):
    out = run(capsys, "collective", "-t", "ring:8", "-s", "1KiB:1MiB")
    lines = out.splitlines()
    assert lines[1].startswith("#") and "size (B)" in lines[1] and "busbw (GB/s)" in lines[1]
    rows = data_lines(out)
    assert [int(r.split()[0]) for r in rows] == [2**k for k in range(10, 21)]
    for r in rows:  # size (B), size with unit, count, type, time, algbw, busbw
        f = r.split()
        S = int(f[0])
        assert f[3] == "float" or f[4] == "float"
        assert float(f[-1]) == pytest.approx(S / ring_time(S) * 2 * (N - 1) / N / 1e9, abs=0.005)
    # the header's columns line up with the data: every right edge matches
    head, first = lines[1], rows[0]
    assert len(head) == len(first)
