"""Composed steps (`collectives.composed`): NCCL's pipelined tree stored as its edge classes once,
each lock-step step naming the classes it runs.

The listed form is the pipeline's definition (written out here from the trees, not from the
builder); every native reader (analytical routing, sampled verification, per-node byte sums) gives
exactly what the listed form gives; at 65,536 ranks nothing is listed and the congestion-unaware
time is the closed form of a pipelined tree on a switch."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.ir import composed
from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.memory import engine_memory_traffic, npu_memory_traffic
from fabricsim.collectives.nccl_tree import channel_tree, nccl_tree, node_trees
from fabricsim.ir import Schedule, make_step
from fabricsim.collectives.verify import verify
from fabricsim.collectives.verify_sampled import run_sampled
from fabricsim.errors import ConfigError
from fabricsim.limits import raised_limits
from fabricsim.network.analytical import AnalyticalCollective, route_schedule, route_step, step_times
from fabricsim.topology import parse_topology
from stated_steps import listed, outcome, with_part

CASES = [  # (p, G, N, channels, chunks)
    (40, 8, 8, None, 5), (24, 8, 2, None, 3), (13, 1, 1, 3, 4), (16, 16, 1, None, 1), (36, 4, 2, 5, 7),
]


def composed_tree(p, G, N, c, chunks) -> Schedule:
    """NCCL's tree with composed steps, whatever size (auto lists small trees)."""
    return nccl_tree("all-reduce", p, channels=c, chunks=chunks, gpus_per_node=G, nics_per_node=N, form="composed")


def composed_like(s: Schedule) -> Schedule:
    """A placed nccl_tree schedule with its steps composed."""
    m, f = s.meta, s.facts
    return replace(s, steps=composed_tree(s.p, m["gpus_per_node"], f.nics_per_node, f.channels, m["chunks"]).steps)


def pipeline(p, G, N, c, chunks):
    """The set of (src, dst, block, reduce) of each lock-step step, from the trees: a non-root rank
    of height h sends piece t - h of its channel up; a parent at depth d sends piece t - H - d down."""
    trees = node_trees(p // G)
    H = G - 1 + int(trees[0][2].max())
    steps = [set() for _ in range(2 * H + chunks - 1)]
    for k in range(c):
        parent, depth, height = channel_tree(k, p, G, N, trees)
        for v in np.flatnonzero(parent >= 0).tolist():
            u = int(parent[v])
            for piece in range(chunks):
                b = k * chunks + piece
                steps[int(height[v]) + piece].add((v, u, b, True))
                steps[H + int(depth[u]) + piece].add((u, v, b, False))
    return steps


@pytest.mark.parametrize("p, G, N, c, chunks", CASES)
def test_listed_form_is_the_pipeline(p, G, N, c, chunks):
    s = composed_tree(p, G, N, c, chunks)
    c = s.facts.channels
    assert all(st.form == "composed" for st in s.steps)
    got = []
    for _, st in s.expanded():
        e = st.explicit()
        assert (e.blocks_per_transfer == 1).all()
        got.append(set(zip(e.src.tolist(), e.dst.tolist(), e.blocks.tolist(), e.reduce.tolist())))
        assert len(got[-1]) == e.n_transfers
    assert got == pipeline(p, G, N, c, chunks)
    # every tree edge stored once up and once down, whatever the pieces
    assert s.stored_entries == 2 * c * (p - 1)
    verify(s)
    # the listed builder: the same transfers in the same order, repeated steps alike
    other = nccl_tree("all-reduce", p, channels=c, chunks=chunks, gpus_per_node=G, nics_per_node=N, form="listed")
    assert not any(st.form == "composed" for st in other.steps)
    assert [st.repeat for st in other.steps] == [st.repeat for st in s.steps]
    for a, b in zip(s.steps, other.steps):
        a = a.explicit()
        for name in ("src", "dst", "reduce", "ptr", "blocks", "shift", "mod"):
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None and y is None) or np.array_equal(x, y), name


def test_auto_composes_large_classes_only():
    assert all(st.form == "composed" for st in nccl_tree("all-reduce", 8 * 512, gpus_per_node=8, nics_per_node=8).steps)
    assert not any(st.form == "composed" for st in nccl_tree("all-reduce", 64).steps)  # one chain: classes of 2 edges
    with pytest.raises(ConfigError, match="form"):
        nccl_tree("all-reduce", 64, form="packed")


def test_steady_middle_is_one_repeated_step():
    s = composed_tree(64 * 8, 8, 8, None, 64)
    H = 7 + 6
    middle = [st for st in s.steps if st.repeat > 1]
    assert len(middle) == 1 and middle[0].repeat == 64 - (2 * H - 1)
    assert len(middle[0].parts) == 2 * H  # every child height up (0..H-1), every parent depth down (0..H-1)


@pytest.mark.parametrize("spec", ["dgx-h100:nodes=5", "torus:6x6", "fat-tree:16", "switch:24", "dgx-h100:nodes=3,sharp"])
@pytest.mark.parametrize("model", ["congestion-aware", "congestion-unaware"])
def test_analytical_reads_the_parts_as_the_listed_form(spec, model):
    topo = parse_topology(spec)
    s = composed_like(build_schedule(topo, "all-reduce", "nccl_tree", chunks=3))
    sizes = np.array([1e3, 1e6, 1e9])
    for st, r in zip(s.steps, route_schedule(topo, s)):
        one = route_step(topo, s, st.explicit())
        assert r.repeat == one.repeat
        np.testing.assert_array_equal(r.link_frac, one.link_frac)
        np.testing.assert_array_equal(r.used_links, one.used_links)
        np.testing.assert_array_equal(r.npu_sent(topo.n_npus), one.npu_sent(topo.n_npus))
        for inj in (None, 10e9):
            np.testing.assert_array_equal(step_times(topo, r, sizes, model, inj), step_times(topo, one, sizes, model, inj))
    a = AnalyticalCollective(topo, s, model, injection=10e9)
    b = AnalyticalCollective(topo, listed(s), model, injection=10e9)
    np.testing.assert_array_equal(a.times(sizes), b.times(sizes))
    # the collective's loads add each part once, weighted by its steps' repetitions: the listed
    # form's step-by-step sum up to rounding
    np.testing.assert_allclose(a.link_frac, b.link_frac, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(a.phase_times(1e6), b.phase_times(1e6))


def test_node_sums_and_memory_traffic_are_the_listed_forms():
    s = composed_tree(24, 8, 2, None, 3)
    ls = listed(s)
    np.testing.assert_array_equal(s.bytes_sent(3e6), ls.bytes_sent(3e6))
    np.testing.assert_array_equal(s.bytes_received(3e6), ls.bytes_received(3e6))
    for fn in (npu_memory_traffic, engine_memory_traffic):
        a, b = fn(s), fn(ls)
        for name in ("read", "write", "sent", "reduced"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def _corrupt_part(s: Schedule, i: int, kind: int) -> Schedule:
    """Replace part i of the schedule's parts everywhere it is used by a corrupted copy."""
    def corrupt(old):
        b, d, r = old.blocks.copy(), old.dst.copy(), old.reduce.copy()
        if kind == 0:
            b[0] = (b[0] + 1) % s.nblocks
        elif kind == 1:
            d[0] = old.src[0]  # sends to itself (another destination may be harmless: sums associate)
        elif kind == 2:
            r[0] = ~r[0]
        else:
            b[0] = s.nblocks - 1  # rotates out of the id range at the next repetition
        return replace(old, blocks=b, dst=d, reduce=r)
    return with_part(s, i, corrupt)


@pytest.mark.parametrize("p, G, N, c, chunks", CASES[:3])
def test_sampled_check_of_the_parts_agrees_with_the_listed_run(p, G, N, c, chunks):
    s = composed_tree(p, G, N, c, chunks)
    every = np.arange(s.nblocks)
    assert outcome(lambda: run_sampled(s, every, np.random.default_rng(0))) == "ok"
    n_parts = len({id(q) for st in s.steps for q in st.parts})
    rng = np.random.default_rng(p)
    for kind in range(4 if chunks > 1 else 3):
        bad = _corrupt_part(s, int(rng.integers(n_parts)), kind)
        full = outcome(lambda: verify(listed(bad)))
        assert full != "ok"
        assert outcome(lambda: run_sampled(bad, every, np.random.default_rng(0))) == full


def test_65536_ranks_never_listed_and_closed_form(monkeypatch):
    """On a switch every transfer is two hops of one bandwidth, so congestion-unaware lock-step
    steps all cost 2 L + S / (blocks B): (2H + chunks - 1) of them."""
    def refuse(self):
        raise AssertionError("a composed step was listed")
    monkeypatch.setattr(composed.ComposedStep, "explicit", refuse)
    p, G, N, chunks = 65536, 8, 8, 64
    topo = parse_topology(f"switch:{p}", "400Gbps", "100ns")
    s = build_schedule(topo, "all-reduce", "nccl_tree", gpus_per_node=G, nics_per_node=N)
    assert all(st.form == "composed" for st in s.steps)  # auto: classes of about 50,000 edges
    c = 2 * N
    H = G - 1 + 13  # 8,192 = 2^13 nodes: the in-order tree is 13 levels high
    assert s.meta["tree_height"] == H and s.n_steps == 2 * H + chunks - 1
    assert s.stored_entries == 2 * c * (p - 1)
    S, B, L = 2.0**30, 400e9 / 8, 100e-9
    t = AnalyticalCollective(topo, s, "congestion-unaware").times(np.array([S]))[0]
    assert t == pytest.approx((2 * H + chunks - 1) * (2 * L + S / (c * chunks) / B), rel=1e-12)
    run_sampled(s, np.array([0, 5, 333, s.nblocks - 1]), np.random.default_rng(0))
    assert s.bytes_sent(S).sum() == pytest.approx(2 * (p - 1) * S, rel=1e-12)  # every edge, up and down


def test_listing_beyond_the_blocks_limit_is_one_line():
    s = composed_tree(64, 8, 8, None, 4)
    st = max(s.steps, key=lambda x: x.n_moves)
    with raised_limits(blocks=10):
        with pytest.raises(ConfigError) as e:
            st.explicit()
    assert "\n" not in str(e.value) and "blocks" in str(e.value) and "composed step" in str(e.value)


def test_bad_compositions_are_refused():
    part = make_step([0, 1], [1, 0], [0, 1], False, repeat=3, shift=1, mod=2)
    with pytest.raises(ValueError, match="repetitions"):
        composed.ComposedStep((part,), (2,), 2)
    with pytest.raises(ValueError, match="one first"):
        composed.ComposedStep((part,), (0, 1))
    ok = composed.ComposedStep((part, part), (0, 1), 2)
    assert ok.n_transfers == 4 and ok.window(1, 2).first == (1, 2)
    np.testing.assert_array_equal(ok.single(1).blocks, [1, 0, 0, 1])
