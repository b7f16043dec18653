"""The flow model's plans (`network.lowering.plans`): one oracle over the registry (every built-in plan
gives the times of every transfer, the plan `lower` picks named per case), closed forms that anchor
the reference, and a toy plan registered here that shows what adding one costs: one function and one
`register_plan` line, and its name in `fabricsim collective --json`."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from fabricsim.cli import main
from fabricsim.collective_job import run_collective
from fabricsim.collectives.api import build_schedule
from fabricsim.network.lowering import plans as flow_plans
from fabricsim.network.flow import Flows
from fabricsim.network.flow_model import FlowModel
from fabricsim.network.lowering.plans import FLOW_PLANS, FlowPlan, PlanResult, lower, register_plan
from fabricsim.topology import parse_topology

SIZES = [1e3, 1e6, 1e8]
BUILT_IN = ["chain", "orbits", "rings", "serial-streams", "every-transfer"]
EVERY = tuple(p for p in FLOW_PLANS if p.name == "every-transfer")
# The fast paths' own tests compare them with every transfer at these tolerances: the chain at 1e-12
# (tests/test_chain.py); orbits, rings and serial streams at test_flow_quotient.TOL = 1e-9 (rounding:
# observed at most 2.7e-12 on larger tori there), which tests/test_flow_rings.py and test_streams.py
# share. The same here, 1e-12 where no looser one is stated (observed on these cases: at most 1e-15).
RTOL = {"chain": 1e-12, "orbits": 1e-9, "rings": 1e-9, "serial-streams": 1e-9, "every-transfer": 1e-12}
VARIANTS = {"pipelined": (FlowModel(), None), "store-and-forward": (FlowModel("store-and-forward"), None),
            "injection": (FlowModel(), 20e9)}

# (topology, collective, algorithm, build options) -> the plan lowering picks per variant
CASES = [
    (("torus:4x4", "broadcast", "ring", {"root": 2}), {"pipelined": "chain", "store-and-forward": "chain",
                                                       "injection": "chain"}),
    (("ring:8", "all-reduce", "ring", {}), {"pipelined": "orbits", "store-and-forward": "orbits",
                                            "injection": "orbits"}),
    (("torus:4x4", "all-reduce", "ring", {}), {"pipelined": "orbits", "store-and-forward": "orbits",
                                               "injection": "orbits"}),
    # no translation maps Hamiltonian rings on a square torus onto themselves: the rings plan; with an
    # injection limit (the rings share their nodes' endpoints) no split
    (("torus:4x4", "all-reduce", "hamiltonian_rings", {}), {"pipelined": "rings", "store-and-forward": "rings",
                                                            "injection": "every-transfer"}),
    # on 9x3 row shifts do (orbits of 3 < 27 ranks), and the four rings give fewer flows: orbits
    # answers with the rings (named rings), or, with an injection limit, its own orbits
    (("torus:9x3", "all-reduce", "hamiltonian_rings", {}), {"pipelined": "rings", "store-and-forward": "rings",
                                                            "injection": "orbits"}),
    (("switch:8,reduce", "reduce-scatter", "in_network", {}), {"pipelined": "serial-streams",
                                                               "store-and-forward": "every-transfer",
                                                               "injection": "every-transfer"}),
    (("fat-tree:16,leaf=4,spines=2", "all-to-all", "direct", {}), {"pipelined": "every-transfer",
                                                                   "store-and-forward": "every-transfer",
                                                                   "injection": "every-transfer"}),
    (("torus:4x4", "all-reduce", "ring", {"group": [0, 1, 2, 5, 6]}), {"pipelined": "every-transfer",
                                                                       "store-and-forward": "every-transfer",
                                                                       "injection": "every-transfer"}),
]


def _schedule(spec, coll, alg, kw):
    topo = parse_topology(spec, "50GB/s", "100ns")
    return topo, build_schedule(topo, coll, alg, **kw)


def _times(model, got: PlanResult, sizes) -> np.ndarray:
    return np.array([model.flows(got.topo, replace(got.flows, size=got.flows.size * s)).makespan for s in sizes])


def _entries(f: Flows) -> int:
    return len(f) + (0 if f.route_links is None else len(f.route_links))


def test_every_built_in_plan_is_registered_in_order():
    assert [p.name for p in FLOW_PLANS] == BUILT_IN  # and no test's plan leaked into the registry


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("case, picks", CASES, ids=["-".join(c[:3]) + ("-group" if c[3].get("group") else "")
                                                   for c, _ in CASES])
def test_every_plan_gives_the_times_of_every_transfer(case, picks, variant):
    """The oracle: the plan lowering picks (asserted by name, as FlowCollective keeps it) against
    every transfer alone (the same plans tuple cut to every-transfer)."""
    model, injection = VARIANTS[variant]
    topo, s = _schedule(*case)
    name, got = lower(model, topo, s, injection)
    assert name == picks[variant]
    assert model.collective(topo, s, injection).plan == name
    ref_name, ref = lower(model, topo, s, injection, plans=EVERY)
    assert ref_name == "every-transfer"
    np.testing.assert_allclose(_times(model, got, SIZES), _times(model, ref, SIZES), rtol=RTOL[name])
    if name != "every-transfer":  # fewer flows (serial streams: as many, on fewer links)
        assert _entries(got.flows) < _entries(ref.flows)


def test_every_built_in_plan_is_covered():
    assert {p for _, picks in CASES for p in picks.values()} == set(BUILT_IN)


def test_closed_forms_anchor_the_reference():
    """Every transfer (and the plan picked) equals closed forms: a ring all-reduce on ring:8,
    2(p-1)(a + S/(pB)); Hamiltonian rings on 4x4, 2(p-1)(S/(4p)/B + a); an in-network
    reduce-scatter on switch:8, p(S/p/B + 2a)."""
    B, a, S = 50e9, 100e-9, 1e8
    for case, want in ((("ring:8", "all-reduce", "ring", {}), 14 * (a + S / (8 * B))),
                       (("torus:4x4", "all-reduce", "hamiltonian_rings", {}), 30 * (S / 64 / B + a)),
                       (("switch:8,reduce", "reduce-scatter", "in_network", {}), 8 * (S / 8 / B + 2 * a))):
        topo, s = _schedule(*case)
        for plans in (None, EVERY):
            assert _times(FlowModel(), lower(FlowModel(), topo, s, plans=plans)[1], [S])[0] == pytest.approx(
                want, rel=1e-9), (case, plans)


def test_orbits_choose_rings_only_where_they_give_fewer_flows():
    """Alone before every transfer, orbits answers for 9x3 with the rings (its name: rings) and
    declines on 4x4, where the rings plan answers."""
    orbits = tuple(p for p in FLOW_PLANS if p.name == "orbits") + EVERY
    topo, s = _schedule("torus:9x3", "all-reduce", "hamiltonian_rings", {})
    assert lower(FlowModel(), topo, s, plans=orbits)[0] == "rings"
    topo, s = _schedule("torus:4x4", "all-reduce", "hamiltonian_rings", {})
    assert lower(FlowModel(), topo, s, plans=orbits)[0] == "every-transfer"


# -- adding a plan: one function and one registration ------------------------------------------------

def _one_flow(given):
    """A 2-rank schedule of one transfer, no injection limit: that transfer as one flow."""
    s = given.schedule
    if s.p != 2 or s.n_transfers != 1 or not given.unlimited:
        return None
    _, st = next(s.expanded())
    nodes = s.topology_nodes()
    size = st.blocks_per_transfer[0] / s.nblocks
    return PlanResult(given.topo, Flows(nodes[st.src[:1]], nodes[st.dst[:1]], np.array([size], float)))


TOY = FlowPlan("toy-one-flow", _one_flow, "a 2-rank schedule of one transfer as that flow")


@pytest.fixture
def toy_first(monkeypatch):
    """The toy plan registered first for this test only (monkeypatch puts FLOW_PLANS back)."""
    plans = register_plan(TOY, before="chain")
    monkeypatch.setattr(flow_plans, "FLOW_PLANS", plans)
    return plans


def test_a_toy_plan_wins_first_where_it_answers_and_others_follow():
    plans = register_plan(TOY, before="chain")
    assert [p.name for p in plans] == ["toy-one-flow"] + BUILT_IN
    assert [p.name for p in FLOW_PLANS] == BUILT_IN  # a new tuple: the registry is unchanged
    topo, s = _schedule("ring:2", "broadcast", "ring", {"chunks": 1})
    name, got = lower(FlowModel(), topo, s, plans=plans)
    assert name == "toy-one-flow" and len(got.flows) == 1
    want = np.array(SIZES) / 50e9 + 100e-9  # one hop: latency + size / bandwidth
    np.testing.assert_allclose(_times(FlowModel(), got, SIZES), want, rtol=1e-12)
    np.testing.assert_allclose(_times(FlowModel(), lower(FlowModel(), topo, s, plans=EVERY)[1], SIZES), want,
                               rtol=1e-12)
    assert lower(FlowModel(), topo, s, 20e9, plans=plans)[0] == "chain"  # it declines: the next answers
    topo, s = _schedule("ring:8", "all-reduce", "ring", {})
    assert lower(FlowModel(), topo, s, plans=plans)[0] == "orbits"
    assert lower(FlowModel(), topo, s, plans=register_plan(TOY, before=None))[0] == "orbits"  # last: never asked


def test_register_plan_replaces_by_name_and_refuses_unknown_places():
    other = FlowPlan("chain", lambda given: None, "a chain that never answers")
    plans = register_plan(other, before="every-transfer")
    assert [p.name for p in plans] == ["orbits", "rings", "serial-streams", "chain", "every-transfer"]
    assert plans[3] is other
    with pytest.raises(ValueError, match="no plan named 'nowhere'"):
        register_plan(TOY, before="nowhere")
    with pytest.raises(ValueError, match="no flow plan answered"):
        topo, s = _schedule("ring:8", "all-reduce", "ring", {})
        lower(FlowModel(), topo, s, plans=(TOY,))


def test_the_plan_reaches_json_and_csv(toy_first, capsys):
    """run_collective's rows name the plan on a flow model (the toy where it answers, chain on 4
    ranks where it does not); the analytical models add nothing."""
    _, rows = run_collective("ring:2", "50GB/s", "100ns", "broadcast", "ring", "1MiB,1GiB", "flow",
                             options=["chunks=1"])
    assert [r["flow_plan"] for r in rows] == ["toy-one-flow"] * 2
    assert rows[0]["time_s"] == pytest.approx(2**20 / 50e9 + 100e-9, rel=1e-12)
    _, rows = run_collective("ring:4", "50GB/s", "100ns", "broadcast", "ring", "1MiB", "flow-store-and-forward")
    assert rows[0]["flow_plan"] == "chain"
    _, rows = run_collective("ring:2", "50GB/s", "100ns", "broadcast", "ring", "1MiB", "congestion-aware",
                             options=["chunks=1"])
    assert "flow_plan" not in rows[0]
    argv = ["collective", "-t", "ring:2", "-B", "50GB/s", "-L", "100ns", "-c", "broadcast", "-a", "ring",
            "-o", "chunks=1", "-m", "flow", "-s", "1MiB", "-q"]
    assert main(argv + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["flow_plan"] == "toy-one-flow"
    assert main(argv + ["--csv"]) == 0
    head, row = capsys.readouterr().out.splitlines()
    assert head.split(",")[-1] == "flow_plan" and row.split(",")[-1] == "toy-one-flow"


def test_nccl_choices_name_their_plan_per_row():
    """auto on a GPU cluster: every row names the chosen candidate's plan next to NCCL's choice."""
    _, rows = run_collective("dgx-h100:nodes=2", "400Gbps", "100ns", "all-reduce", "auto", "1MiB,64MiB", "flow",
                             check=False)
    for r in rows:
        assert {"algorithm", "protocol", "channels"} <= set(r) and r["flow_plan"] in BUILT_IN
