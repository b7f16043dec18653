"""One default link bandwidth and latency (issue 12): the library, the CLI and the YAML configs
all give 400 Gb/s (50e9 B/s) and 100 ns when none is named."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fabricsim.cli import main
from fabricsim.network.traffic import TrafficFile
from fabricsim.topology import build_topology, parse_topology, topology_from_config
from fabricsim.topology.spec import DEFAULT_BANDWIDTH, DEFAULT_LATENCY
from fabricsim.train import NetworkSection

BW, LAT = 400e9 / 8, 100e-9  # 400 Gb/s in bytes/s; 100 ns


def test_the_constants():
    assert (DEFAULT_BANDWIDTH, DEFAULT_LATENCY) == ("400Gbps", "100ns")


@pytest.mark.parametrize("make", [
    lambda: parse_topology("ring:8"),
    lambda: build_topology("ring", n=8),
    lambda: topology_from_config("ring:8"),
    lambda: topology_from_config({"family": "ring", "n": 8}),
    lambda: NetworkSection(topology="ring:8").build_topology(),  # a training config's network:
])
def test_library_and_yaml_defaults(make):
    t = make()
    assert t.n_links == 16
    assert np.all(t.link_bw == BW)
    assert t.link_lat.tolist() == pytest.approx([LAT] * 16, rel=1e-12)


def test_traffic_file_defaults():
    spec = TrafficFile(topology="ring:8")
    assert (spec.bandwidth, spec.latency) == (DEFAULT_BANDWIDTH, DEFAULT_LATENCY)


def test_cli_default_is_the_same(capsys):
    """`fabricsim collective` with no -B/-L: ring all-reduce 2(n-1)(a + S/(nB)) with a = 100 ns."""
    assert main(["collective", "-t", "ring:8", "-s", "1MiB", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    n, S = 8, 2**20
    assert (data["bandwidth"], data["latency"]) == ("400Gbps", "100ns")
    assert data["rows"][0]["time_s"] == pytest.approx(2 * (n - 1) * (LAT + S / (n * BW)), rel=1e-12)
