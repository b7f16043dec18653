"""The analytical model's registry of step routers (`analytical.route.register_step_router`) and the
structure topologies state (`Topology.structure`), which the models ask instead of testing router
classes."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np
import pytest

from fabricsim.collectives.api import build_schedule
from fabricsim.ir import Step
from fabricsim.network.analytical import STEP_ROUTERS, register_step_router, route_schedule, route_step
from fabricsim.topology import parse_topology
from fabricsim.topology.core import DIMENSION_ORDER, WAFER_XY, Structure


@dataclasses.dataclass(frozen=True, eq=False)
class _ToyFormStep(Step):
    """A listed step under a form name of its own (not in `ir.FORMS`: the registry is the model's)."""

    form: ClassVar[str] = "toy-routed"


@pytest.fixture
def toy_router():
    """A router registered for `toy-routed` for one test: records its calls, declines every step."""
    calls = {"route": [], "prepare": []}

    def prepare(topo, schedule, steps, cache):
        calls["prepare"].append(list(steps))

    @register_step_router("toy-routed", prepare=prepare)
    def route_toy(topo, schedule, step, cache):
        calls["route"].append(step)
        return None  # declined: the step is routed as listed transfers

    yield calls
    del STEP_ROUTERS["toy-routed"]


def test_the_stated_forms_register_their_routers():
    assert {f: r.route.__name__ for f, r in STEP_ROUTERS.items() if f != "toy-routed"} == {
        "mesh": "route_mesh", "composed": "route_composed"}
    assert STEP_ROUTERS["composed"].prepare.__name__ == "route_all_parts"


def test_route_step_dispatches_on_the_form_and_falls_back_to_the_listed_route(toy_router):
    topo = parse_topology("torus:4x4", "50GB/s", "100ns")
    s = build_schedule(topo, "all-reduce", "swing")
    steps = tuple(_ToyFormStep(**{f.name: getattr(st, f.name) for f in dataclasses.fields(st)}) for st in s.steps)
    toy = dataclasses.replace(s, steps=steps)
    routed = route_schedule(topo, toy)
    assert toy_router["prepare"] == [list(steps)]  # once, every step of the form, in order
    assert toy_router["route"] == list(steps)
    for r, st in zip(routed, s.steps):
        plain = route_step(topo, s, st)
        assert np.array_equal(r.link_frac, plain.link_frac) and np.array_equal(r.path_latency, plain.path_latency)


def test_a_taken_form_is_refused():
    with pytest.raises(ValueError, match="'mesh'"):
        register_step_router("mesh")(lambda topo, schedule, step, cache: None)


@pytest.mark.parametrize("spec, routing, straight, translations", [
    ("ring:8", DIMENSION_ORDER, True, True), ("ring:9,uni", DIMENSION_ORDER, True, True),
    ("torus:4x4x2", DIMENSION_ORDER, True, True), ("mesh:4x4", DIMENSION_ORDER, True, False),
    ("stack:Ring4xFullyConnected2", DIMENSION_ORDER, False, True), ("switch:8", DIMENSION_ORDER, False, False),
    ("wafer:4x4", WAFER_XY, False, False), ("wafer:5x4,noio", WAFER_XY, False, False),
    ("fat-tree:16", "", False, False), ("circulant:8:1,3", "", False, False), ("dgx-h100:nodes=2", "", False, False),
])
def test_topologies_state_their_structure(spec, routing, straight, translations):
    topo = parse_topology(spec, "50GB/s", "100ns")
    st = topo.structure
    assert (st.routing, st.straight_routes, st.translations, st.grid) == (routing, straight, translations, topo.dims)
    assert st.kinds == (tuple(topo.router.kinds) if routing else ())
    # the structure follows the router, not the link arrays: a copy with other latencies states the same
    assert dataclasses.replace(topo, link_lat=topo.link_lat * 2).structure == st


def test_nothing_stated_is_nothing_claimed():
    assert Structure() == Structure("", (), ()) and not Structure().straight_routes and not Structure().translations
