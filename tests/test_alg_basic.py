"""direct, recursive_doubling and halving_doubling: exact verification on every group size
2..33 and 64, 100, 128, 1000; power-of-two rejection; registry agreement; mutations that
verify must catch; closed-form structure of halving-doubling computed from p."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from fabricsim.collectives.direct import direct
from fabricsim.collectives.halving_doubling import halving_doubling
from fabricsim.collectives.recursive_doubling import recursive_doubling
from fabricsim.ir import Step
from fabricsim.vocab import COLLECTIVES
from fabricsim.collectives.verify import ScheduleError, verify
from fabricsim.errors import ConfigError, UnsupportedGroupSize

SIZES = list(range(2, 34)) + [64, 100, 128, 1000]

# name -> (builder, supported collectives, collectives that need a power of two)
ALGS = {
    "direct": (direct, ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast", "reduce"), ()),
    "recursive_doubling": (recursive_doubling, ("all-reduce", "all-gather", "broadcast", "reduce"), ("all-gather",)),
    "halving_doubling": (halving_doubling, ("all-reduce", "reduce-scatter", "all-gather"), ("reduce-scatter", "all-gather")),
}


def pow2(p: int) -> bool:
    return p & (p - 1) == 0


def _rejections():
    for name, (_, _, pow2_only) in ALGS.items():
        for c in pow2_only:
            for p in range(3, 34):
                if not pow2(p):
                    yield pytest.param(name, c, p, id=f"{name}-{c}-{p}")


def _build(name: str, collective: str, p: int, root: int = 0):
    return ALGS[name][0](collective, p, root=root)


# ---- exact verification ------------------------------------------------------------------


def _check_all_to_all_pairs(s) -> None:
    """Exact structural proof for the one-step direct all-to-all: every ordered pair i != j
    is one copy of exactly block i*p + j."""
    (st,) = s.steps
    p = s.p
    assert st.repeat == 1 and not st.reduce.any()
    assert np.all(st.blocks_per_transfer == 1)
    assert np.all(st.blocks == st.src * p + st.dst)
    key = np.sort(st.src * p + st.dst)
    i, j = np.divmod(np.arange(p * p), p)
    assert np.array_equal(key, np.arange(p * p)[i != j])


# Plain verification of every algorithm x collective x size is in test_registry.py.


@pytest.mark.parametrize("p", [2, 7, 64, 1000])
def test_direct_all_to_all_pairs(p):
    _check_all_to_all_pairs(direct("all-to-all", p))


@pytest.mark.parametrize("name, collective", [(n, c) for n, (_, cs, _) in ALGS.items() for c in cs if c in ("broadcast", "reduce")])
def test_every_root(name, collective):
    for p in range(2, 10):
        for root in range(p):
            verify(_build(name, collective, p, root=root))


def test_direct_all_to_all_structure_small():
    for p in range(2, 34):
        _check_all_to_all_pairs(direct("all-to-all", p))


# ---- group sizes ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, collective, p", list(_rejections()))
def test_pow2_only_rejects(name, collective, p):
    with pytest.raises(UnsupportedGroupSize) as e:
        _build(name, collective, p)
    msg = str(e.value)
    assert f"on {p} ranks" in msg and "power of two" in msg and "\n" not in msg
    assert e.value.p == p


@pytest.mark.parametrize("name", list(ALGS))
def test_too_small_and_unsupported(name):
    build, colls, _ = ALGS[name]
    for c in colls:
        with pytest.raises(UnsupportedGroupSize):
            build(c, 1)
    for c in set(COLLECTIVES) - set(colls):
        with pytest.raises(ConfigError):
            build(c, 4)


@pytest.mark.parametrize("name", list(ALGS))
def test_registry_supports_agrees_with_builder(name):
    from fabricsim.collectives.registry import get_algorithm

    alg = get_algorithm(name)
    build, colls, pow2_only = ALGS[name]
    assert alg.build is build
    assert tuple(alg.collectives) == colls
    assert set(alg.pow2_only) == set(pow2_only)
    for c in COLLECTIVES:
        for p in list(range(1, 34)) + [64, 100]:
            reason = alg.supports(c, p)
            if reason is None:
                alg.build(c, p, root=p // 3)
            else:
                with pytest.raises(ConfigError):
                    alg.build(c, p, root=p // 3)


# ---- verify catches broken schedules --------------------------------------------------------


def _drop(step: Step, t: int) -> Step:
    """`step` without transfer t (listed explicitly)."""
    step = step.explicit()
    keep = np.ones(step.n_transfers, dtype=bool)
    keep[t] = False
    counts = step.blocks_per_transfer[keep]
    ptr = np.concatenate([[0], np.cumsum(counts)])
    entry_keep = np.repeat(keep, step.blocks_per_transfer)
    return Step(step.src[keep], step.dst[keep], step.reduce[keep], ptr, step.blocks[entry_keep])


def _with_step(s, i: int, step: Step):
    steps = list(s.steps)
    steps[i] = step
    return replace(s, steps=tuple(steps))


@pytest.mark.parametrize("name, collective, p", [
    ("direct", "all-reduce", 5),
    ("direct", "all-to-all", 4),
    ("recursive_doubling", "all-reduce", 6),
    ("recursive_doubling", "broadcast", 7),
    ("halving_doubling", "all-reduce", 8),
    ("halving_doubling", "all-reduce", 6),
])
def test_dropping_any_transfer_is_caught(name, collective, p):
    s = _build(name, collective, p)
    verify(s)
    for i, st in enumerate(s.steps):
        for t in range(st.n_transfers):
            with pytest.raises(ScheduleError):
                verify(_with_step(s, i, _drop(st, t)))


def test_copy_instead_of_reduce_is_caught():
    s = direct("all-reduce", 5)
    st = s.steps[0]
    red = st.reduce.copy()
    red[3] = False
    with pytest.raises(ScheduleError):
        verify(_with_step(s, 0, Step(st.src, st.dst, red, st.ptr, st.blocks)))


def test_duplicated_reduce_is_caught():
    s = direct("all-reduce", 4)
    st = s.steps[0]
    dup = Step(np.r_[st.src, st.src[:1]], np.r_[st.dst, st.dst[:1]], np.r_[st.reduce, True],
               np.r_[st.ptr, st.ptr[-1] + 1], np.r_[st.blocks, st.blocks[:1]])
    with pytest.raises(ScheduleError):
        verify(_with_step(s, 0, dup))


# ---- closed forms ---------------------------------------------------------------------------

SIZE = 3 * 2**20  # bytes; every expected message size below is exact in floating point


def _one_message_per_rank(st: Step, ranks: int) -> None:
    assert np.array_equal(np.sort(st.src), np.arange(ranks))
    assert np.array_equal(np.sort(st.dst), np.arange(ranks))


@pytest.mark.parametrize("p", [2, 4, 8, 16, 32, 64, 128, 1024])
def test_halving_doubling_closed_form_pow2(p):
    k = int(math.log2(p))
    s = halving_doubling("all-reduce", p)
    steps = [st for _, st in s.expanded()]
    assert s.n_steps == len(steps) == 2 * k
    for sidx in range(k):
        rs, ag = steps[sidx], steps[2 * k - 1 - sidx]
        for st, red in ((rs, True), (ag, False)):
            _one_message_per_rank(st, p)
            assert np.all(st.reduce == red)
            assert np.all(s.transfer_fraction(st) * SIZE == SIZE / 2 ** (sidx + 1))
        assert np.array_equal(rs.dst, rs.src ^ (p >> (sidx + 1)))  # distances p/2 .. 1
    assert np.allclose(s.bytes_sent(SIZE), 2 * SIZE * (p - 1) / p)
    for coll in ("reduce-scatter", "all-gather"):
        alone = halving_doubling(coll, p)
        assert alone.n_steps == k
        assert np.allclose(alone.bytes_sent(SIZE), SIZE * (p - 1) / p)


@pytest.mark.parametrize("p", [3, 5, 6, 7, 12, 24, 33, 100, 1000])
def test_halving_doubling_closed_form_fold(p):
    p2 = 1 << (p.bit_length() - 1)
    k = int(math.log2(p2))
    s = halving_doubling("all-reduce", p)
    steps = [st for _, st in s.expanded()]
    assert s.n_steps == len(steps) == 1 + 2 * k + 1
    fold, unfold, middle = steps[0], steps[-1], steps[1:-1]
    extra = np.arange(p2, p)
    assert np.array_equal(np.sort(fold.src), extra) and np.array_equal(fold.dst[np.argsort(fold.src)], extra - p2)
    assert fold.reduce.all() and np.all(s.transfer_fraction(fold) == 1.0)
    assert np.array_equal(np.sort(unfold.dst), extra) and np.array_equal(unfold.src[np.argsort(unfold.dst)], extra - p2)
    assert not unfold.reduce.any() and np.all(s.transfer_fraction(unfold) == 1.0)
    for sidx in range(k):
        for st in (middle[sidx], middle[2 * k - 1 - sidx]):
            _one_message_per_rank(st, p2)
            assert np.all(s.transfer_fraction(st) * SIZE == SIZE / 2 ** (sidx + 1))


@pytest.mark.parametrize("p", [2, 3, 4, 7, 8, 12, 100, 1000])
def test_recursive_doubling_and_direct_step_counts(p):
    p2 = 1 << (p.bit_length() - 1)
    rd = recursive_doubling("all-reduce", p)
    assert rd.n_steps == int(math.log2(p2)) + (0 if p == p2 else 2)
    assert all(np.all(rd.transfer_fraction(st) == 1.0) for st in rd.steps)  # whole buffer
    for coll in ("broadcast", "reduce"):
        tree = recursive_doubling(coll, p, root=p // 3)
        assert tree.n_steps == math.ceil(math.log2(p))
        assert tree.n_transfers == p - 1
    assert direct("all-reduce", p).n_steps == 2
    for coll in ("reduce-scatter", "all-gather", "all-to-all", "broadcast", "reduce"):
        assert direct(coll, p).n_steps == 1
    assert np.allclose(direct("all-reduce", p).bytes_sent(SIZE), 2 * SIZE * (p - 1) / p)
