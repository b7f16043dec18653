"""Sampled verification (issue 20): the all-steps-at-once checker of chosen blocks
(`collectives.verify_sampled`) agrees with the step-by-step full check, catches a corrupted block
when its sample covers it, and is what `fabricsim collective` runs by default above 5M block moves
(`--verification auto|full|sample|off`)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from fabricsim.cli import main
from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.registry import ALGORITHMS
from fabricsim.collectives.verify import (DEFAULT_SAMPLE, FULL_VERIFY_LIMIT, MIN_SAMPLE, ScheduleError,
                                          default_sample, sample_plan, sample_size, verify, verify_work)
from fabricsim.collectives.verify_sampled import run_sampled
from fabricsim.errors import ConfigError
from fabricsim.topology import parse_topology
from stated_steps import outcome

TOPOS = ["ring:8", "ring:6", "torus:4x4", "torus:2x4x2", "switch:8,reduce", "fred:2x4,reduce", "dgx-h100:nodes=2,sharp"]
COLLECTIVES = ["all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast", "reduce"]
OPTIONS = [("ring", {"bidirectional": True}), ("ring", {"chunks": 3}), ("swing", {"ports": "single"}),
           ("swing", {"mode": "latency"}), ("hierarchical", {"order": "baseline"}),
           ("hierarchical", {"inner": "direct"}), ("in_network", {"lockstep": True, "chunks": 3}),
           ("torus_recursive_doubling", {"mirrored": True}), ("nccl_tree", {"chunks": 4})]


def _both(s) -> tuple[str, str]:
    """(full step-by-step check, all-at-once check of every block)."""
    return (outcome(lambda: verify(s)),
            outcome(lambda: run_sampled(s, np.arange(s.nblocks), np.random.default_rng(0))))


def _corrupted(s, rng, n=3):
    """Variants with one destination, one block id or one reduce flag changed, or a step dropped."""
    busy = [i for i, st in enumerate(s.steps) if st.n_transfers]
    out = []
    for kind in range(n + 1):
        i = int(rng.choice(busy))
        st = s.steps[i]
        st = st.explicit() if not st.listed else st  # a corrupted stated step is listed
        t = int(rng.integers(st.n_transfers))
        if kind == 0:
            dst = st.dst.copy()
            dst[t] = next(x for x in range(s.n_nodes) if x not in (st.dst[t], st.src[t]))
            new = replace(st, dst=dst)
        elif kind == 1:
            b = st.blocks.copy()
            c = int(st.ptr[t + 1] - st.ptr[t])
            if st.ranges and st.repeat > 1 and st.shift is not None and c and st.shift[t] % st.mod[t]:
                o = b[t] % st.mod[t]  # a rotating run: the next tile of its aligned range
                b[t] += (o + c) % st.mod[t] - o
            else:
                b[t] = (b[t] + 1) % s.nblocks
            new = replace(st, blocks=b)
        elif kind == 2:
            r = st.reduce.copy()
            r[t] = ~r[t]
            new = replace(st, reduce=r)
        else:
            out.append(replace(s, steps=s.steps[:i] + s.steps[i + 1:]))
            continue
        out.append(replace(s, steps=s.steps[:i] + (new,) + s.steps[i + 1:]))
    return out


def _cases():
    for alg in ALGORITHMS:
        for topo in TOPOS:
            for coll in COLLECTIVES:
                yield alg, {}, topo, coll
    for alg, opts in OPTIONS:
        for topo in ("ring:8", "torus:4x4", "switch:8,reduce", "dgx-h100:nodes=2"):
            for coll in COLLECTIVES:
                yield alg, opts, topo, coll


def test_all_at_once_agrees_with_step_by_step():
    """Every registry algorithm (and option variants) on small topologies, and corrupted copies of
    each: the same verdict and the same first error, word for word."""
    rng = np.random.default_rng(7)
    checked = failing = 0
    for alg, opts, topo, coll in _cases():
        try:
            s = build_schedule(parse_topology(topo), coll, alg, **opts)
        except (ConfigError, ValueError):
            continue  # the algorithm does not serve this collective or topology
        assert _both(s) == ("ok", "ok"), (alg, opts, topo, coll)
        for bad in _corrupted(s, rng):
            full, at_once = _both(bad)
            assert full == at_once, (alg, opts, topo, coll)
            failing += full != "ok"
        checked += 1
    assert checked > 300 and failing > 300


def test_sample_catches_a_corrupted_block_it_covers():
    """ring:512: rank 100's transfer of the rotating reduce-scatter step copied instead of added in
    wipes rank 101's contribution to every block it carries, i.e. all but block 100 (the one rank
    100 ends owning): a sample holding any of them fails, the sample {100} passes, and the full check
    fails. (A transfer sent to a wrong rank further down the ring only reroutes a partial sum: most
    blocks still add up, which is why the corruption here is the reduce flag.)"""
    s = build_schedule(parse_topology("ring:512"), "all-reduce", "ring")
    rs = s.steps[0]
    assert rs.repeat == 511 and rs.shift is not None
    red = rs.reduce.copy()
    red[100] = False
    bad = replace(s, steps=(replace(rs, reduce=red),) + s.steps[1:])
    for blocks in ([int(rs.blocks[100])], [5], [100, 101], [300, 511]):
        with pytest.raises(ScheduleError, match="ring all-reduce p=512"):
            verify(bad, blocks=blocks)
    assert verify(bad, blocks=[100]).blocks_checked == 1
    with pytest.raises(ScheduleError):
        verify(bad)
    verify(s, blocks=[5, 100, 101, 300, 511])


def test_every_sample_catches_a_missing_repetition():
    """ring:8192 without the last all-gather repetition: every block misses one rank, so a random
    sample fails whatever it draws."""
    s = build_schedule(parse_topology("ring:8192"), "all-reduce", "ring")
    n = default_sample(s)
    assert n is not None and MIN_SAMPLE <= n <= DEFAULT_SAMPLE
    ag = s.steps[1]
    short = replace(s, steps=(s.steps[0], replace(ag, repeat=ag.repeat - 1)))
    for seed in range(3):
        with pytest.raises(ScheduleError, match="at the end node"):
            verify(short, sample=MIN_SAMPLE, seed=seed)
    assert verify(s, sample=n).blocks_checked == n


def test_out_of_range_ids_of_a_rotation_are_found_at_their_repetition():
    s = build_schedule(parse_topology("ring:8"), "all-reduce", "ring")
    rs = s.steps[0]
    mod = rs.mod.copy()
    mod[:] = 16  # rotating in 0..15: ids 8.. leave the buffer of 8 blocks
    bad = replace(s, steps=(replace(rs, mod=mod),) + s.steps[1:])
    assert _both(bad)[0] == _both(bad)[1]
    assert "block id outside 0..7" in _both(bad)[1]


def test_sample_plan_picks_the_cheaper_executor_and_bounds_the_work():
    ring = build_schedule(parse_topology("ring:65536"), "all-reduce", "ring")
    assert sample_plan(ring) == (MIN_SAMPLE, True)  # 131,070 steps: all at once, and the floor
    swing = build_schedule(parse_topology("torus:256x256"), "all-reduce", "swing")
    n, at_once = sample_plan(swing)  # 32 wide steps: step by step
    assert not at_once and MIN_SAMPLE <= n < DEFAULT_SAMPLE
    assert sample_size(build_schedule(parse_topology("torus:32x32"), "all-reduce", "swing")) == DEFAULT_SAMPLE
    small = build_schedule(parse_topology("ring:8"), "all-reduce", "ring")
    assert sample_size(small) == small.nblocks  # never more than every block


def test_both_executors_agree_on_a_sample():
    """The same sampled blocks of a few wide steps, step by step (what `verify` picks for them) and
    all at once (`run_sampled`), on Swing 16x16 and on a copy with one transfer misdirected."""
    s = build_schedule(parse_topology("torus:16x16"), "all-reduce", "swing")
    st = s.steps[2].explicit()
    carried = np.sort(st.blocks[st.ptr[0]:st.ptr[1]])
    blocks = np.union1d(carried, np.arange(0, s.nblocks, 17))
    assert len(blocks) >= 64 and not sample_plan(s, len(blocks))[1]
    verify(s, blocks=blocks)
    run_sampled(s, blocks, np.random.default_rng(0))
    dst = st.dst.copy()
    dst[0] = (dst[0] + 1) % s.p
    bad = replace(s, steps=s.steps[:2] + (replace(st, dst=dst),) + s.steps[3:])
    step_by_step = outcome(lambda: verify(bad, blocks=blocks))
    assert step_by_step != "ok"
    assert step_by_step == outcome(lambda: run_sampled(bad, blocks, np.random.default_rng(0)))


def test_threshold_small_full_large_sampled():
    small = build_schedule(parse_topology("torus:16x16"), "all-reduce", "swing")
    assert verify_work(small) <= FULL_VERIFY_LIMIT and default_sample(small) is None
    large = build_schedule(parse_topology("ring:4096"), "all-reduce", "ring")  # 2 x 4095 x 4096 moves
    assert verify_work(large) > FULL_VERIFY_LIMIT
    assert default_sample(large) == sample_size(large) < large.nblocks


# ---- the command line ------------------------------------------------------------------------


def _verified(capsys, *args):
    assert main(["collective", "-s", "1MiB", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)["verified"]


def test_cli_modes(capsys):
    v = _verified(capsys, "-t", "torus:8x8", "-a", "swing")  # small: every block by default
    assert v == {"blocks_checked": 256, "nblocks": 256, "sampled": False, "mode": "auto"}
    assert _verified(capsys, "-t", "torus:8x8", "-a", "swing", "--verification", "full")["mode"] == "full"
    assert _verified(capsys, "-t", "torus:8x8", "-a", "swing", "--verification", "off") is None
    assert _verified(capsys, "-t", "torus:8x8", "-a", "swing", "--no-verify") is None
    assert _verified(capsys, "-t", "torus:8x8", "-a", "swing", "--verify") is not None  # the old flag still works
    v = _verified(capsys, "-t", "ring:4096", "--verification", "auto")
    assert v["sampled"] and v["blocks_checked"] < 4096 and v["nblocks"] == 4096
    v = _verified(capsys, "-t", "ring:64", "--verification", "sample")
    assert v["mode"] == "sample" and v["blocks_checked"] == 64  # a sample of a small schedule: every block


def test_cli_says_which_verification_ran(capsys):
    assert main(["collective", "-t", "ring:4096", "-s", "1MiB"]) == 0
    title = capsys.readouterr().out.splitlines()[0]
    n = sample_size(build_schedule(parse_topology("ring:4096"), "all-reduce", "ring"))
    assert title.endswith(f"verified on data: {n} sampled blocks of 4096")
    assert main(["collective", "-t", "ring:8", "-s", "1MiB", "--verification", "full"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("verified on data: all 8 blocks")


@pytest.mark.parametrize("args, words", [
    (["--verification", "most"], ["--verification", "most", "auto, full, sample, off"]),
    (["--verification", "full", "--no-verify"], ["--verification", "full", "--no-verify"]),
])
def test_cli_bad_mode_is_one_line_exit_2(capsys, args, words):
    assert main(["collective", "-t", "ring:8", "-s", "1MiB", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and all(w in err[0] for w in words), err
