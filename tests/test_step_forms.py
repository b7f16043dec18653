"""The oracle over the step forms (issue 41, item 5): every registered form against its own listed
form.

A stated form's listed form (`explicit()`) is its definition. Every answer a form gives from its
rule (counts, per-repetition ids, windows, per-node byte sums, stored entries) must equal what the
same question asked of `explicit()` gives: exactly for ids and counts, bit for bit for the byte sums
(the forms add the same floats in the same order). Every form in `FORMS` needs examples here: a
new form without them fails `test_every_registered_form_has_examples`.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.ir import (FORMS, ComposedStep, FullMeshStep, LineMeshStep, MeshStep, Schedule, Step, StepForm,
                          make_range_step, make_step)


def _ring_step(p: int, repeat: int) -> Step:
    """Rank r sends block r - k to r + 1 at repetition k (a ring all-gather's steps)."""
    r = np.arange(p)
    return make_step(r, (r + 1) % p, r, False, repeat=repeat, shift=-1, mod=p)


def _range_step() -> Step:
    """Range form: 4 transfers of runs of 2 ids, rotating by 2 in aligned ranges of 8."""
    st = make_range_step([0, 1, 2, 3], [1, 2, 3, 0], [0, 2, 4, 6], 2, [False, True, False, True])
    return Step(st.src, st.dst, st.reduce, st.ptr, st.blocks, repeat=3, shift=np.full(4, 2), mod=np.full(4, 8),
                ranges=True)


def _composed() -> ComposedStep:
    a, b = _ring_step(6, 5), make_step([0, 2, 4], [3, 5, 1], [[0, 1], [2, 3], [4, 5]], True, repeat=4, shift=1, mod=6)
    return ComposedStep((a, b), (1, 0), repeat=3)


EXAMPLES = {
    "listed": [lambda: _ring_step(5, 4), _range_step,
               lambda: make_step([0, 1, 2], [2, 0, 1], [[0], [1, 2], []], [True, False, True])],
    # the full mesh (one line over every node) and the lines of a grid: one form
    "mesh": [lambda: FullMeshStep(5, "dst", True), lambda: FullMeshStep(4, "src", False),
             lambda: FullMeshStep(3, "pair", False, by_dst=True), lambda: FullMeshStep(4, "pair", True),
             lambda: LineMeshStep((3, 4), 0), lambda: LineMeshStep((3, 4), 1), lambda: LineMeshStep((2, 3, 2), 1),
             lambda: MeshStep((1, 4, 1), 1, "pair", False, by_dst=True)],
    "composed": [_composed],
}
CASES = [(name, i) for name, makers in EXAMPLES.items() for i in range(len(makers))]


def test_every_registered_form_has_examples():
    assert set(FORMS) <= set(EXAMPLES), f"add examples for {sorted(set(FORMS) - set(EXAMPLES))}"
    for name, cls in FORMS.items():
        assert cls.form == name
        st = EXAMPLES[name][0]()
        assert isinstance(st, cls) and isinstance(st, StepForm)
        assert st.listed == (name == "listed")  # only the listed form holds its transfers in arrays


def _nodes(st) -> int:
    ex = st.explicit()
    return int(max(ex.src.max(), ex.dst.max())) + 1


@pytest.mark.parametrize("name,i", CASES)
def test_counts_and_ids_equal_the_listed_form(name, i):
    st = EXAMPLES[name][i]()
    ex = st.explicit()
    assert type(ex) is Step and ex.listed and not ex.ranges and ex.explicit() is ex  # every id listed
    assert (st.n_transfers, st.n_moves, st.repeat) == (ex.n_transfers, ex.n_moves, ex.repeat)
    assert st.n_moves == int(ex.blocks_per_transfer.sum())
    for k in range(st.repeat):
        assert np.array_equal(st.blocks_at(k), ex.blocks_at(k))
        one = st.single(k).explicit()
        assert one.repeat == 1 and np.array_equal(one.blocks, ex.blocks_at(k))
        assert np.array_equal(one.src, ex.explicit().src) and np.array_equal(one.dst, ex.explicit().dst)
    for k0 in range(st.repeat):
        for k1 in range(k0 + 1, st.repeat + 1):
            w = st.window(k0, k1)
            assert w.repeat == k1 - k0
            for k in range(k1 - k0):
                assert np.array_equal(w.blocks_at(k), ex.blocks_at(k0 + k))
    assert np.array_equal(st.entry_src(), ex.explicit().entry_src())
    assert np.array_equal(st.entry_dst(), ex.explicit().entry_dst())
    assert np.array_equal(st.entry_reduce(), ex.explicit().entry_reduce())


@pytest.mark.parametrize("name,i", CASES)
def test_node_sums_are_the_listed_forms_bit_for_bit(name, i):
    st = EXAMPLES[name][i]()
    ex = st.explicit()
    n = _nodes(st)
    frac = 1.0 / 7.0  # not a power of two: the order of additions shows in the last bits
    for side in ("src", "dst"):
        for reduce_only in (False, True):
            start = np.linspace(0.0, 3.3, n)  # running sums from earlier steps, some equal below
            start[1::2] = start[0]
            got = st.add_node_sums(frac, side, (3e6, st.repeat), start.copy(), reduce_only)
            want = ex.add_node_sums(frac, side, (3e6, st.repeat), start.copy(), reduce_only)
            assert np.array_equal(got, want), (side, reduce_only)


@pytest.mark.parametrize("name,i", CASES)
def test_a_schedule_counts_each_form_as_its_listed_form(name, i):
    st = EXAMPLES[name][i]()
    n = _nodes(st)
    nblocks = int(max(st.explicit().blocks_at(k).max(initial=0) for k in range(st.repeat))) + 2
    stated = Schedule("all-to-all" if getattr(st, "block", "") == "pair" else "all-reduce",
                      "oracle", n, max(nblocks, n * n), (st,))
    listed = Schedule(stated.collective, "oracle", n, stated.nblocks, (st.explicit(),))
    assert stated.n_transfers == listed.n_transfers and stated.n_steps == listed.n_steps
    assert np.array_equal(stated.bytes_sent(1e6), listed.bytes_sent(1e6))
    assert np.array_equal(stated.bytes_received(1e6), listed.bytes_received(1e6))
    assert stated.stored_entries <= listed.stored_entries or name == "listed"


def test_composed_parts_shared_between_steps_are_stored_once():
    c = _composed()
    again = ComposedStep(c.parts, (0, 0), repeat=1)
    s = Schedule("all-reduce", "oracle", 6, 6, (c, again))
    assert s.stored_entries == sum(p.stored_entries for p in c.parts)  # 6 + 6 entries, not twice that


def _rows(*arrays) -> list[tuple]:
    """The rows of parallel arrays, sorted: moves compared as sets with multiplicity."""
    return sorted(zip(*(np.asarray(a).tolist() for a in arrays)))


@pytest.mark.parametrize("name,i", CASES)
def test_where_blocks_move_equals_the_listed_form(name, i):
    """The sampled check's questions (which moves carry the chosen ids, from which repetition an id
    leaves range, what is wrong with the transfers) answered by the form equal its listed form's."""
    st = EXAMPLES[name][i]()
    ex = st.explicit()
    n = _nodes(st)
    ids = np.unique(np.concatenate([ex.blocks_at(k) for k in range(st.repeat)]))
    sample = ids[::2]
    assert _rows(*st.sampled_moves(sample, st.repeat)) == _rows(*ex.sampled_moves(sample, st.repeat))
    for nblocks in (int(ids.max()) + 1, int(ids.max()), 1):
        assert st.first_bad_rep(nblocks) == ex.first_bad_rep(nblocks)
    for nodes in (n, n - 1):
        assert st.structure_problem(nodes) == ex.structure_problem(nodes)
    reps = np.arange(st.repeat)
    got = [(int(reps[r]), int(t), b) for r, t, lo, hi in zip(*st.block_runs(None, reps)) for b in range(lo, hi)]
    want = [(k, int(t), int(b)) for k in range(st.repeat)
            for t, b in zip(np.repeat(np.arange(ex.n_transfers), ex.blocks_per_transfer), ex.blocks_at(k))]
    assert sorted(got) == sorted(want)
    memo_a, memo_b = {}, {}
    blocks = sample
    col_of = np.full(int(ids.max()) + 1, -1)
    col_of[blocks] = np.arange(len(blocks))
    for k in range(st.repeat):
        a, b = st.batch_moves(k, blocks, col_of, memo_a), ex.batch_moves(k, blocks, col_of, memo_b)
        assert _rows(*a) == _rows(*b)


def _translation(dims: tuple, dim: int) -> np.ndarray:
    """Node map of a grid translation by +1 along `dim` (dimension 0 fastest)."""
    c = np.array(np.unravel_index(np.arange(int(np.prod(dims))), dims[::-1]))[::-1]  # coordinates, dim 0 first
    c[dim] = (c[dim] + 1) % dims[dim]
    return np.ravel_multi_index(tuple(c[::-1]), dims[::-1])


@pytest.mark.parametrize("name,i", CASES)
def test_a_stated_symmetry_holds_on_the_listed_transfers(name, i):
    """Where a form states that a node map carries its transfers onto themselves (`maps_channels`
    True), the listed transfers say so too: for the identity, a reversal, a shift by one of nodes
    0..n-1 and, on a grid, a translation along each dimension. A full mesh states it for every
    permutation, a line mesh for every grid translation."""
    st = EXAMPLES[name][i]()
    ex = st.explicit()
    n = _nodes(st)
    pairs = set(zip(ex.src.tolist(), ex.dst.tolist()))
    sigs = [np.arange(n), np.arange(n)[::-1].copy(), (np.arange(n) + 1) % n]
    dims = getattr(st, "dims", None)
    if dims is not None:
        sigs += [_translation(dims, d) for d in range(len(dims))]
    for j, sig in enumerate(sigs):
        stated = st.maps_channels(sig)
        if stated:
            assert {(int(sig[a]), int(sig[b])) for a, b in pairs} == pairs, sig
        if name == "mesh" and (st.full or j == 0 or j >= 3):
            assert stated, sig  # what the rule promises


def test_only_the_listed_form_runs_in_range_form_and_a_composed_step_names_its_parts():
    assert _range_step().run_starts() is not None and _ring_step(4, 2).run_starts() is None
    assert all(EXAMPLES[name][0]().run_starts() is None for name in ("mesh", "composed"))
    c = _composed()
    assert [(q, f) for q, f in c.listed_parts()] == list(zip(c.parts, c.first))
    assert FullMeshStep(4, "dst", True).listed_parts() is None
    st = _ring_step(4, 2)
    assert st.listed_parts() == ((st, 0),)
    assert c.rotates and st.rotates and not FullMeshStep(4, "dst", True).rotates


def test_the_full_mesh_is_the_one_line_case_of_the_mesh_form():
    # a grid whose dimension is the whole group is the full mesh: held as dims (p,), the same
    # transfers, blocks and order as FullMeshStep's "pair" rule destination-major
    whole, full = MeshStep((1, 4, 1), 1, "pair", False, by_dst=True), FullMeshStep(4, "pair", False, by_dst=True)
    assert type(whole) is type(full) is type(LineMeshStep((2, 2), 0)) is MeshStep
    assert (whole.dims, whole.dim, whole.full, full.full, LineMeshStep((2, 2), 0).full) == ((4,), 0, True, True, False)
    for a, b in ((whole.explicit(), full.explicit()), (FullMeshStep(2, "pair", False, by_dst=True).explicit(),
                                                        MeshStep((2,), 0, "pair", False, True).explicit())):
        assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("src", "dst", "reduce", "ptr", "blocks"))
    # the grid's pair rule at d_k = p is the full mesh's: index_of and moves_of agree
    g = LineMeshStep((3, 4), 1)
    assert np.array_equal(g.index_of(g.src, g.dst), np.arange(g.n_transfers))
    assert (whole.shown_as, g.shown_as) == ("FullMeshStep", "LineMeshStep")
    for bad in (dict(block="dst"), dict(reduce_all=True), dict(by_dst=False)):
        kw = dict(block="pair", reduce_all=False, by_dst=True) | bad
        with pytest.raises(ValueError, match="a grid's lines move the pair rule's blocks"):
            MeshStep((3, 4), 1, **kw)
    with pytest.raises(ValueError, match="dimension 2 of"):
        MeshStep((3, 4), 2)
    with pytest.raises(ValueError, match="block must be one of"):
        MeshStep((4,), 0, "row")


def test_a_step_by_step_check_reads_a_repeated_run_listed():
    """`checked_entries`: what a step-by-step check reads per repetition. A run that does not
    repeat is cut to the batch (one entry); a repeated one is read listed (every id); a stated form
    is visited transfer by transfer. The sample planner prices with it, so a lifted ring phase on a
    torus (runs of 128 ids repeated 127 times) is checked all at once: step by step read 16.7 M
    entries per repetition on 256x256 (410 s for 64 sampled blocks, 11 s all at once)."""
    once = make_range_step([0, 1, 2, 3], [1, 2, 3, 0], [0, 2, 4, 6], 2, False)
    assert once.checked_entries == once.stored_entries == 4
    rep = _range_step()
    assert (rep.checked_entries, rep.stored_entries) == (4 * 2, 4)
    assert FullMeshStep(5, "dst", True).checked_entries == 20
    from fabricsim.collectives.api import build_schedule
    from fabricsim.collectives.verify import sample_plan
    from fabricsim.topology import parse_topology

    s = build_schedule(parse_topology("torus:128x128"), "all-reduce", "hierarchical")  # 18.8 s step by step, 1.5 s
    assert any(st.repeat > 1 and st.run_starts() is not None for st in s.steps)
    assert sample_plan(s, 64) == (64, True)
