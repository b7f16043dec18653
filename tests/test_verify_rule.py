"""The default verification rule (issue 12): full below FULL_VERIFY_LIMIT block moves, sampled
above, counting the blocks that range-form steps move (not their transfers).

Closed form: a bandwidth-optimal all-reduce (swing, ring) sends (p-1)/p of each rank's buffer of
`nblocks` blocks in its reduce-scatter and again in its all-gather: 2 (p-1) nblocks block moves."""

from __future__ import annotations

import json

import pytest

from fabricsim.cli import main
from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.verify import DEFAULT_SAMPLE, FULL_VERIFY_LIMIT, default_sample, verify, verify_work
from fabricsim.topology import parse_topology


def swing(shape: str):
    return build_schedule(parse_topology(f"torus:{shape}"), "all-reduce", "swing")


@pytest.mark.parametrize("shape, p", [("8x8", 64), ("16x16", 256), ("32x32", 1024)])
def test_verify_work_is_block_moves(shape, p):
    s = swing(shape)
    assert all(st.ranges for st in s.steps)  # range form: one transfer moves many blocks
    assert verify_work(s) == 2 * (p - 1) * s.nblocks


def test_ring_work_counts_repetitions():
    s = build_schedule(parse_topology("ring:16"), "all-reduce", "ring")
    assert verify_work(s) == 2 * 15 * s.nblocks


def test_small_schedule_verified_fully():
    # torus:16x16 swing: 16,384 transfers, 1,024 blocks, 2 x 255 x 1024 = 522,240 block moves
    s = swing("16x16")
    assert (s.n_transfers, s.nblocks, verify_work(s)) == (16_384, 1_024, 522_240)
    assert verify_work(s) <= FULL_VERIFY_LIMIT
    assert default_sample(s) is None
    rep = verify(s, sample=default_sample(s))
    assert rep.blocks_checked == rep.nblocks == 1_024


def test_large_range_form_schedule_sampled(capsys):
    # torus:32x32 swing: only 81,920 transfers (the old rule, transfers <= 5M, verified all of it)
    # but 2 x 1023 x 4096 = 8,380,416 block moves: sampled
    s = swing("32x32")
    assert (s.n_transfers, s.nblocks, verify_work(s)) == (81_920, 4_096, 8_380_416)
    assert default_sample(s) == DEFAULT_SAMPLE
    assert main(["collective", "-t", "torus:32x32", "-a", "swing", "-s", "1MiB", "--json"]) == 0
    v = json.loads(capsys.readouterr().out)["verified"]
    assert v == {"blocks_checked": DEFAULT_SAMPLE, "nblocks": 4_096, "sampled": True, "mode": "auto"}


def test_limit_is_the_boundary():
    s = swing("16x16")
    w = verify_work(s)
    assert default_sample(s, limit=w) is None
    assert default_sample(s, limit=w - 1) == DEFAULT_SAMPLE
