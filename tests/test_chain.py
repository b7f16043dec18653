"""Pipelined chains (ring broadcast and reduce): the composed form, the analytical model reading
its parts, the flow model's few-flow makespan (`network.lowering.chain`), and 1,024 ranks (4,096 and
16,384 under -m slow).

The references: the listed form written out here from the definition (piece c crosses hop d at
lock-step step c + d), the flow model simulating every transfer (the chain path switched off), and
closed forms: alone, hop d takes d_h = piece / B + (its links) x L, the flow model's makespan is
sum(d_h) + (P - 1) max(d_h), and a lock-step step costs the slowest hop it runs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.ir import composed
from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.chain import chain_entries, chain_form, chain_steps
from fabricsim.ir import Facts
from fabricsim.ir import Schedule, make_step
from fabricsim.collectives.verify import verify
from fabricsim.collectives.verify_sampled import run_sampled
from fabricsim.network.lowering import chain as flow_chain
from fabricsim.network.analytical import AnalyticalCollective
from fabricsim.network.lowering.chain import chain_flows, chain_hop_order
from fabricsim.network.flow_model import FlowModel
from fabricsim.topology import parse_topology
from stated_steps import listed, outcome, with_part

PAIRS = [(1, 1), (1, 5), (5, 1), (3, 8), (8, 3), (7, 7), (16, 16), (13, 40), (40, 13), (33, 64), (64, 33), (31, 31)]


def definition(n: int, P: int, order: np.ndarray, reduce: bool) -> list[set]:
    """Each lock-step step's (src, dst, block, reduce): piece c over hop d at step c + d."""
    steps = [set() for _ in range(n + P - 1)]
    for d in range(n):
        for c in range(P):
            steps[c + d].add((int(order[d]), int(order[d + 1]), c, reduce))
    return steps


@pytest.mark.parametrize("n, P", PAIRS)
@pytest.mark.parametrize("form", ["listed", "composed"])
def test_both_forms_are_the_definition_in_listing_order(n, P, form):
    order = np.random.default_rng(n * 100 + P).permutation(n + 1)
    steps = chain_steps(order, P, True, form=form)
    s = Schedule("reduce", "ring", n + 1, P, tuple(steps), root=int(order[-1]))
    got = []
    for _, st in s.expanded():
        e = st.explicit()
        assert (e.blocks_per_transfer == 1).all()
        assert np.all(np.diff(np.argsort(order)[e.src]) > 0)  # hops ascending, as the listed form lists them
        got.append(set(zip(e.src.tolist(), e.dst.tolist(), e.blocks.tolist(), e.reduce.tolist())))
        assert len(got[-1]) == e.n_transfers
    assert got == definition(n, P, order, True)
    if form == "composed":
        assert all(st.form == "composed" for st in steps)
        assert s.stored_entries < 2 * n * (int(np.log2(max(min(n, P), 1))) + 2)  # about 2 n log2(block)


def test_auto_form_and_entries():
    assert chain_form(16383, 16384) == "composed" and chain_form(63, 64) == "listed"
    assert chain_entries(63, 64) == 63 * 64
    assert chain_entries(16383, 16384) < 300_000  # 268 M listed
    with pytest.raises(ValueError, match="form"):
        chain_steps(np.arange(4), 3, False, form="packed")


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:5x3", "mesh:3x4", "ring:7", "switch:6"])
@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
def test_composed_chain_verifies_and_prices_as_listed(spec, collective):
    topo = parse_topology(spec, "50GB/s", "100ns")
    s = build_schedule(topo, collective, "ring", root=1, chunks=9)
    order = np.array(s.facts.chain)
    comp = replace(s, steps=tuple(chain_steps(order, 9, collective == "reduce", form="composed")))
    verify(comp)
    assert outcome(lambda: run_sampled(comp, np.arange(9), np.random.default_rng(0))) == "ok"
    sizes = np.array([1e3, 1e6, 1e9])
    for model in ("congestion-aware", "congestion-unaware"):
        for inj in (None, 20e9):
            a = AnalyticalCollective(topo, comp, model, injection=inj)
            b = AnalyticalCollective(topo, listed(comp), model, injection=inj)
            np.testing.assert_allclose(a.times(sizes), b.times(sizes), rtol=1e-12)
            np.testing.assert_allclose(a.link_frac, b.link_frac, rtol=1e-12)


def _times(topo, s, sizes, injection=None, **kw):
    return FlowModel(**kw).collective(topo, s, injection).times(sizes)


CHAIN_CASES = [("torus:4x4", None), ("torus:5x3", 2), ("mesh:3x4", 9), ("ring:7", 1), ("switch:6", 3),
               ("torus:8x8", None)]


@pytest.mark.parametrize("spec, chunks", CHAIN_CASES)
@pytest.mark.parametrize("collective", ["broadcast", "reduce"])
@pytest.mark.parametrize("kw", [{}, {"mode": "store-and-forward"}, {"chunk": 4096.0}, {"injection": 20e9}],
                         ids=["fluid", "store-and-forward", "fill", "injection"])
def test_few_flows_give_every_transfers_makespan(monkeypatch, spec, chunks, collective, kw):
    topo = parse_topology(spec, "50GB/s", "100ns")
    s = build_schedule(topo, collective, "ring", root=2 % topo.n_npus, **({} if chunks is None else {"chunks": chunks}))
    c = chain_flows(topo, s)
    assert c is not None and len(c.flows) == c.hops + c.classes * (c.pieces - 1) <= c.hops * c.pieces
    sizes = np.array([1e3, 1e6, 1e9])
    got = _times(topo, s, sizes, **kw)
    with monkeypatch.context() as m:
        m.setattr(flow_chain, "chain_flows", lambda *a: None)
        ref = _times(topo, s, sizes, **kw)
    np.testing.assert_allclose(got, ref, rtol=1e-12)


def test_closed_form_with_two_hop_classes():
    """4x4 torus, rank order: 12 one-link hops, 3 row ends over two links (x wrap, then y)."""
    B, L, S = 50e9, 100e-9, 2.0**20
    topo = parse_topology("torus:4x4", "50GB/s", "100ns")
    s = build_schedule(topo, "broadcast", "ring")  # P = 16 pieces
    piece = S / 16
    one, two = piece / B + L, piece / B + 2 * L
    assert _times(topo, s, [S])[0] == pytest.approx(12 * one + 3 * two + 15 * two, rel=1e-12)
    # lock-step: a step costs its slowest hop; the row ends are hops 3, 7, 11 of 0..14, so steps
    # 0..2 (before hop 3 starts) and 27..29 (after hop 11 ends) run one-link hops only
    t = AnalyticalCollective(topo, s).times([S])[0]
    assert t == pytest.approx(6 * one + 24 * two, rel=1e-12)


def test_hops_that_share_links_are_every_transfer():
    topo = parse_topology("dgx-h100:nodes=2")
    s = build_schedule(topo, "broadcast", "ring")
    assert chain_hop_order(s) is not None and chain_flows(topo, s) is None


def test_a_stated_chain_is_checked_against_its_steps():
    topo = parse_topology("torus:5x5")
    s = build_schedule(topo, "broadcast", "ring", chunks=20)
    comp = replace(s, steps=tuple(chain_steps(np.array(s.facts.chain), 20, False, form="composed")))
    assert chain_hop_order(comp) is not None
    n_parts = len({id(q) for st in comp.steps for q in st.parts})
    bad = [
        replace(s, facts=Facts(chain=s.facts.chain[::-1])),  # another order
        replace(s, steps=s.steps[:-1]),  # a piece missing
        replace(s, steps=s.steps + s.steps[-1:]),  # a hop twice
        replace(s, collective="all-gather"),
        with_part(comp, n_parts // 2, lambda q: replace(q, blocks=q.blocks + 1)),  # pieces one step late
        with_part(comp, n_parts // 2, lambda q: replace(q, reduce=~q.reduce)),
        replace(s, steps=(make_step([0], [1], [1], False),) + s.steps[1:]),  # piece 1 first
    ]
    for b in bad:
        assert chain_hop_order(b) is None


# 1,024 ranks in the default run; 4,096 and 16,384 under -m slow
@pytest.mark.parametrize("side", [32, *(pytest.param(s, marks=pytest.mark.slow) for s in (64, 128))])
def test_thousands_of_ranks_closed_forms_without_listing(monkeypatch, side):
    """side x side torus, rank order, broadcast of P = p pieces over n = p - 1 hops: the side - 1
    row ends cross two links. Flow: sum(d) + (P - 1) d_two. Lock-step: every step costs a two-link
    hop but the side - 1 steps before the first row end starts and the side - 1 after the last ends."""
    def refuse(self):
        raise AssertionError("a composed step was listed")
    monkeypatch.setattr(composed.ComposedStep, "explicit", refuse)
    p = side * side
    n, P, ends = p - 1, p, side - 1
    B, L, S = 50e9, 100e-9, 64 * 2.0**20
    topo = parse_topology(f"torus:{side}x{side}", "50GB/s", "100ns")
    s = build_schedule(topo, "broadcast", "ring")
    assert all(st.form == "composed" for st in s.steps) and s.stored_entries < n * P / 50
    piece = S / P
    one, two = piece / B + L, piece / B + 2 * L
    c = chain_flows(topo, s)
    assert (c.hops, c.pieces, c.classes) == (n, P, 2)
    assert _times(topo, s, [S])[0] == pytest.approx((n - ends) * one + ends * two + (P - 1) * two, rel=1e-12)
    steps = n + P - 1
    t = AnalyticalCollective(topo, s).times([S])[0]
    assert t == pytest.approx(2 * ends * one + (steps - 2 * ends) * two, rel=1e-12)
    run_sampled(s, np.array([0, 7, P // 2, P - 1]), np.random.default_rng(0))
