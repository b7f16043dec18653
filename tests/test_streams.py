"""Serial streams kept by path (`network.lowering.streams`): what the models read equals what the listed link
sets give, a collective alone gets the times of its full link sets, and 1,024 ranks (16,384 under
-m slow) the closed form."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from fabricsim.collectives.api import build_schedule
from fabricsim.errors import ConfigError
from fabricsim.network.analytical import AnalyticalModel
from fabricsim.network.lowering.dataflow import streaming_flows
from fabricsim.network.flow_model import FlowModel
from fabricsim.network.lowering.streams import serial_streams
from fabricsim.topology import parse_topology
from fabricsim.network.flow_model import endpoint_topology, with_injection
from test_flow_quotient import TOL


def _listed_times(model, topo, s, sizes, injection=None):
    """What FlowCollective did before: the streams with their full link sets, fed by every member."""
    unit = streaming_flows(topo, s, 1.0)
    if injection is not None:
        unit = with_injection(topo, unit, np.full(len(unit), float(injection)), stream=True)
        topo = endpoint_topology(topo, topo.n_npus, 1.0)
    return np.array([model.flows(topo, replace(unit, size=unit.size * x)).makespan for x in sizes])

CASES = [("switch:8,reduce", "in_network"), ("switch:5,reduce", "in_network"),
         ("fred:4x4,up=12TB/s,reduce", "in_network_tree"), ("fred:6x4,reduce", "in_network_tree"),
         ("fred:5x4,up=12TB/s,reduce", "in_network_tree")]
SERIAL = ("reduce-scatter", "all-gather")


@pytest.mark.parametrize("spec,alg", CASES)
@pytest.mark.parametrize("collective", SERIAL)
def test_paths_give_what_the_link_sets_give(spec, alg, collective):
    """Per stream: latency, the slowest link's s/byte (with and without an injection bound on links
    leaving an NPU) and a link that has it; per link: the streams crossing it -- from the listed sets."""
    topo = parse_topology(spec, "400Gbps", "100ns")
    s = build_schedule(topo, collective, alg)
    ss, f = serial_streams(topo, s), streaming_flows(topo, s, 1.0)
    assert ss.p == len(f) == s.p
    assert np.array_equal(ss.latency, f.latency)
    sid = np.repeat(np.arange(len(f)), np.diff(f.route_ptr))
    for inv in (1.0 / topo.link_bw, np.where(topo.link_src < topo.n_npus, np.maximum(1.0 / topo.link_bw, 1 / 20e9),
                                             1.0 / topo.link_bw)):
        worst, link = ss.slowest(inv)
        assert np.array_equal(worst, np.maximum.reduceat(inv[f.route_links], f.route_ptr[:-1]))
        assert np.all(inv[link] == worst) and np.all(np.isin(link * len(f) + np.arange(len(f)),
                                                             f.route_links * len(f) + sid))
    assert np.array_equal(ss.link_streams(), np.bincount(f.route_links, minlength=topo.n_links))


@pytest.mark.parametrize("model", [FlowModel(), FlowModel(chunk=4096.0)], ids=["fluid", "chunk"])
@pytest.mark.parametrize("spec,alg", CASES)
def test_alone_keeps_the_times_of_its_link_sets(model, spec, alg):
    """FlowModel.collective prices the streams alone (fluid) on their slowest links: the times of
    simulating the full link sets; with a fill chunk or an injection limit it lists them (the
    same times as before)."""
    topo = parse_topology(spec, "400Gbps", "100ns")
    sizes = [1e3, 1e6, 1e8]
    for c in SERIAL:
        s = build_schedule(topo, c, alg)
        got = model.collective(topo, s)
        one = np.array_equal(np.diff(got.unit.route_ptr), np.ones(s.p, np.int64))  # one link per stream
        assert one == (model.chunk == 0)  # a fill chunk depends on the whole set: listed
        np.testing.assert_allclose(got.times(sizes), _listed_times(model, topo, s, sizes), rtol=TOL)
        limited = model.collective(topo, s, 20e9)
        np.testing.assert_allclose(limited.times(sizes), _listed_times(model, topo, s, sizes, 20e9), rtol=TOL)


def test_analytical_equals_its_listed_form():
    """The analytical model's stream costs from the paths equal those from the listed link sets
    (times exactly; link loads within rounding: a count x 1/p instead of a sum of p times 1/p)."""
    for spec, alg in CASES:
        topo = parse_topology(spec, "400Gbps", "100ns")
        for c in SERIAL:
            s = build_schedule(topo, c, alg)
            f = streaming_flows(topo, s, 1.0)
            for inj in (None, 20e9):
                t = AnalyticalModel().collective(topo, s, inj).times([1e3, 1e8])
                inv = 1.0 / topo.link_bw[f.route_links]
                if inj is not None:
                    inv = np.where(topo.link_src[f.route_links] < topo.n_npus, np.maximum(inv, 1 / inj), inv)
                per_byte = f.size * np.maximum.reduceat(inv, f.route_ptr[:-1])
                want = [float(np.sum(f.latency + per_byte * x)) for x in (1e3, 1e8)]
                np.testing.assert_allclose(t, want, rtol=1e-12)


@pytest.mark.parametrize("p", [1024, pytest.param(16384, marks=pytest.mark.slow)])
def test_large_switch_closed_form(p):
    """switch:p (1,024; 16,384 under -m slow): each of the p serial streams moves size/p at the link
    rate over two hops, so both collectives take size/B + 2 p x latency, on the analytical and the
    flow model alike."""
    topo = parse_topology(f"switch:{p},reduce", "50GB/s", "100ns")
    size = 64 * 2**20
    want = p * (size / p / 50e9 + 2 * 100e-9)
    for c in SERIAL:
        s = build_schedule(topo, c, "in_network")
        for model in (AnalyticalModel(), FlowModel()):
            assert model.collective(topo, s).times([size])[0] == pytest.approx(want, rel=1e-9)


def test_listed_for_shared_traffic_is_sized():
    """Listing the link sets (flows that share the network, e.g. the training engine's graph) is
    still bounded: at 16,384 ranks one line names the limit and the group size."""
    topo = parse_topology("switch:16384,reduce", "50GB/s", "100ns")
    s = build_schedule(topo, "reduce-scatter", "in_network")
    with pytest.raises(ConfigError, match=r"group size: invalid value 16384; it needs 536,870,912 stream link entries"):
        streaming_flows(topo, s, 1.0)


def test_only_serial_streams():
    """An all-reduce streams as one flow, a lock-step schedule does not stream: neither is serial streams."""
    topo = parse_topology("switch:8,reduce", "400Gbps", "100ns")
    assert serial_streams(topo, build_schedule(topo, "all-reduce", "in_network")) is None
    lock = build_schedule(topo, "reduce-scatter", "in_network", lockstep=True)
    assert not lock.streaming and serial_streams(topo, lock) is None
