"""Topologies against bad and hostile input: sizes refused before anything is allocated (with the
estimate), parameters that would give nan/inf answers, fat-tree spines that took bisection
bandwidth away, repeated and contradicting options, and coerced mapping values.

Every refusal is checked as the user sees it: exit code 2 and exactly one line on stderr naming
the field and value. Every accepted answer is checked against a closed form computed here.
"""

from __future__ import annotations

import doctest
import importlib
import json
import math
import re
from decimal import Decimal

import pytest

from fabricsim.cli import main
from fabricsim.errors import ConfigError
from fabricsim.limits import raised_limits
from fabricsim.topology import FAMILIES, build_topology, parse_topology

B = 50e9  # the default link bandwidth, 400Gbps, in bytes/s


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def refused(capsys, argv, *needles: str) -> str:
    """`argv` exits 2 with one line on stderr that holds every needle; returns the line."""
    rc, _, err = run(capsys, *argv)
    assert rc == 2, err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fabricsim: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def coll(spec: str, *extra: str) -> list[str]:
    return ["collective", "-t", spec, "-s", "1KiB", "-q", *extra]


# ---- 1. sizes: the estimate equals the built topology, and is checked before building ------------

# (family, parameters): every family, small, with its corner cases (size-2 rings, size-1
# dimensions, one leaf, no I/O controllers, a jump of n/2)
SMALL = [
    ("ring", {"n": 2}), ("ring", {"n": 3}), ("ring", {"n": 8}), ("ring", {"n": 2, "bidirectional": False}),
    ("ring", {"n": 7, "bidirectional": False}),
    ("fully-connected", {"n": 2}), ("fully-connected", {"n": 9}),
    ("switch", {"n": 2}), ("switch", {"n": 8, "reduce": True}),
    ("mesh", {"dims": (4, 4)}), ("mesh", {"dims": (2, 1, 3)}), ("mesh", {"dims": (5,)}),
    ("torus", {"dims": (4, 4)}), ("torus", {"dims": (2, 3, 1)}), ("torus", {"dims": (2, 2, 2, 2)}),
    ("stack", {"kinds": ("ring", "fc", "switch"), "dims": (4, 3, 2)}),
    ("stack", {"kinds": ("uniring", "line"), "dims": (2, 5)}),
    ("stack", {"kinds": ("line", "uniring", "ring"), "dims": (3, 3, 2), }),
    ("fat-tree", {"n": 16, "leaf": 4, "spines": 2}), ("fat-tree", {"n": 8}), ("fat-tree", {"n": 12, "leaf": 3}),
    ("fat-tree", {"n": 64, "leaf": 8, "spines": 64}),
    ("wafer", {"cols": 5, "rows": 4}), ("wafer", {"cols": 2, "rows": 3, "io": False}),
    ("fred", {"groups": 5, "per_group": 4}), ("fred", {"groups": 3, "per_group": 2, "io_controllers": 0}),
    ("direct", {"n": 4, "links": [(0, 1), (1, 2), (2, 3), (3, 0)]}),
    ("direct", {"n": 3, "links": [(0, 1), (1, 2), (2, 0)], "bidirectional": False}),
    ("direct", {"n": 3, "switches": 1, "links": [(0, 3), (1, 3), (2, 3)]}),
    ("circulant", {"n": 12, "jumps": (1, 5)}), ("circulant", {"n": 8, "jumps": (1, 4)}),
    ("dgx", {"nodes": 2, "gpus": 4, "nics": 2, "nvlink": 3e11, "nic": 2.5e10}), ("dgx", {"nodes": 1, "nvlink": 3e11}),
    ("dgx", {"nodes": 4, "gpus": 2, "nics": 2, "nvlink": 1e9, "nic": 1e9, "leaf": 2, "sharp": True, "sharp_rate": 1e9}),
    ("dgx", {"nodes": 2, "gpus": 4, "nics": 1, "nvlink": 1e9, "nic": 1e9, "fabric": "switch"}),
    ("dgx-a100", {"nodes": 2}), ("dgx-h100", {"nodes": 2, "nvls_rate": 1e11}), ("tpu-v4", {}), ("tpu-v4", {"dims": (2, 1, 3)}),
]


@pytest.mark.parametrize("family,params", SMALL)
def test_size_estimate_is_exact(family, params):
    fam = FAMILIES[family]
    p = fam.params.model_validate(params)
    t = build_topology(family, **params)
    assert fam.size(p) == (t.n_npus, t.n_links)
    if fam.table is not None:  # fewest-hop routing: a nodes x nodes table
        assert fam.table(p) == t.n_nodes ** 2


def test_every_family_is_sized():
    assert {f for f, _ in SMALL} == set(FAMILIES)
    assert all(callable(f.size) for f in FAMILIES.values())


N, L, T = "NPUs", "directed links", "routing-table entries"
LIMIT = {N: ("262,144", "npus"), L: ("4,194,304", "links"), T: ("67,108,864", "route_table")}


@pytest.mark.parametrize("spec,estimate,what", [
    # closed forms: ring 2n links, torus 2 x dims x n, fully connected n(n - 1); the limit named is
    # the one exceeded by the largest factor
    ("ring:1180591620717411303424", "1.18e+21", N),   # 2**70
    ("ring:99999999999999999999999", "1e+23", N),
    ("ring:" + "9" * 500, "1.00e+500", N),             # beyond a float: no OverflowError
    ("torus:10000x10000", f"{10000 * 10000:,}", N),
    ("ring:10000000", f"{10_000_000:,}", N),
    ("switch:10000000", f"{10_000_000:,}", N),
    ("torus:1024x1024", f"{2**20:,}", N),
    ("torus:64x64x256", f"{2**20:,}", N),
    ("mesh:1024x1024", f"{2**20:,}", N),
    ("fat-tree:10000000", f"{10_000_000:,}", N),
    ("wafer:1000x1000", f"{10**6:,}", N),
    ("stack:Ring1000xRing1000xRing1000", f"{10**9:,}", N),
    # no int64 overflow; its links (40 per NPU) exceed their limit by the largest factor
    ("torus:" + "x".join(["4611686018427387904"] * 20), f"{Decimal((2**62)**20 * 40):.3g}", L),
    ("fully-connected:100000", f"{100000 * 99999:,}", L),   # 1.5 x the NPU limit, 2,400 x the links
    ("fred:1000x1000", f"{10**6:,}", N),  # tree paths: no routing table to size
    ("circulant:10000000:1,2", f"{10**14:,}", T),
])
def test_oversize_specs_are_refused_with_the_estimate(capsys, spec, estimate, what):
    limit, name = LIMIT[what]
    refused(capsys, coll(spec), f"topology: invalid value '{spec}'", f"it needs {estimate} {what}",
            f"beyond the limit of {limit}", f"--limit {name}=N")


def test_fewest_hop_tables_are_sized(capsys):
    # 65536 NPUs pass the NPU limit, but the next-hop table would be 65536^2 entries (~80 GB)
    refused(capsys, coll("circulant:65536:1"), f"it needs {65536**2:,} routing-table entries",
            "--limit route_table=N")
    with pytest.raises(ConfigError, match=f"{20000**2:,} routing-table entries"):
        build_topology("direct", n=20000, links=[(0, 1)])


def test_mappings_are_sized_before_building():
    with pytest.raises(ConfigError) as e:
        build_topology("torus", dims=[10000, 10000])
    assert str(e.value) == ("topology: invalid value {'family': 'torus', 'dims': [10000, 10000]}; it needs "
                            "100,000,000 NPUs, beyond the limit of 262,144 (raise it with fabricsim --limit npus=N, "
                            "or raised_limits(npus=N) in Python)")
    from fabricsim.topology import topology_from_config
    with pytest.raises(ConfigError, match=re.escape(f"it needs {10**30:.3g} NPUs")):
        topology_from_config({"family": "ring", "n": 10**30})


def test_mapping_sizes_in_a_config_file(capsys, tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("topology: {family: torus, dims: [10000, 10000]}\nbandwidth: 100GB/s\nlatency: 1us\n"
                    "flows:\n  - {name: f, src: 0, dst: 2, size: 1MiB, start: 0us}\n")
    refused(capsys, ["traffic", str(path), "-q"], "topology", "100,000,000 NPUs")


def test_builder_functions_are_sized_too():
    from fabricsim.topology import fat_tree, fred_fabric, from_edges, ring, torus, wafer_mesh
    from fabricsim.topology.builders.circulant import circulant

    for build in (lambda: ring(10**7, B, 0.0), lambda: torus((1000, 1000), B, 0.0),
                  lambda: fat_tree(10**6, B, 0.0, leaf=8), lambda: wafer_mesh(1000, 1000, B, 0.0),
                  lambda: fred_fabric(1000, 1000, B, B, 0.0), lambda: circulant(10**6, [1], B, 0.0),
                  lambda: from_edges([0], [1], n_npus=10**6)):
        with pytest.raises(ConfigError, match="it needs"):
            build()


def test_the_npu_limit_can_be_lowered_and_raised(capsys):
    refused(capsys, ["--limit", "npus=8", *coll("ring:16")], "it needs 16 NPUs, beyond the limit of 8")
    rc, out, err = run(capsys, "--limit", "npus=8", *coll("ring:8", "--json"))
    assert rc == 0 and err == ""
    assert json.loads(out)["npus"] == 8
    with pytest.raises(ConfigError, match="it needs 270,000 NPUs, beyond the limit of 262,144"):
        parse_topology("ring:270000")
    with raised_limits(npus=270_000):
        t = parse_topology("ring:270000")
    assert (t.n_npus, t.n_links) == (270_000, 2 * 270_000)
    with raised_limits(npus=8):
        with pytest.raises(ConfigError, match="beyond the limit of 8"):
            build_topology("fat-tree", n=16, leaf=4)


def test_topoopt_servers_are_sized(capsys, tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("servers: 1048576\ndegree: 4\nlink_bandwidth: 100Gbps\n"
                    "server: {gpus: 4, intra_bandwidth: 200Gbps, npu: {peak: 624TFLOP/s, memory_bandwidth: 6TB/s}}\n"
                    "workload: {model: resnet50, batch_per_gpu: 2}\n")
    refused(capsys, ["topology", "optimize", str(path), "--out", str(tmp_path / "o"), "-q"],
            "servers: invalid value 1048576", f"it needs {2**40:,} routing-table entries")


@pytest.mark.parametrize("spec,shown", [
    ("ring:" + "9" * 5000, "5000 digits"),                      # beyond Python's int-from-text limit
    ("torus:" + "x".join(["1"] * 65 + ["2"]), "66 dimensions"),
    ("circulant:12:" + "1" * 40, "is not a jump"),
])
def test_absurd_shapes_are_one_line(capsys, spec, shown):
    refused(capsys, coll(spec), "topology: invalid value", shown)


# ---- 2. parameters whose answers would be nan or inf -------------------------------------------


@pytest.mark.parametrize("oversub", ["1e308", "inf", "nan", "0", "-1", "1e-9", "2000", "x"])
def test_oversub_out_of_range_is_refused(capsys, oversub):
    spec = f"fat-tree:64,oversub={oversub}"
    refused(capsys, coll(spec), f"'{spec}'", "oversub", "1/1024 to 1024")


@pytest.mark.parametrize("oversub", [1 / 1024, 1024])
def test_oversub_bounds_give_finite_uplinks(oversub):
    t = build_topology("fat-tree", n=16, leaf=4, spines=2, oversub=oversub, bandwidth=B)
    up = t.link_bw[(t.link_src >= 16) & (t.link_dst >= 16)]
    assert len(up) == 2 * 4 * 2
    assert all(math.isclose(x, 4 * B / (oversub * 2)) for x in up.tolist())


@pytest.mark.parametrize("value,field", [
    ({"family": "fat-tree", "n": 64, "oversub": float("nan")}, "oversub"),
    ({"family": "fat-tree", "n": 64, "oversub": float("inf")}, "oversub"),
    ({"family": "fat-tree", "n": 64, "oversub": 1e308}, "oversub"),
    ({"family": "fat-tree", "n": 64, "oversub": "2"}, "oversub"),
    ({"family": "wafer", "cols": 5, "rows": 4, "io_bandwidth": "1e-3B/s"}, "io_bandwidth"),
    ({"family": "fred", "groups": 5, "per_group": 4, "up_bandwidth": 1e30}, "up_bandwidth"),
])
def test_mapping_floats_out_of_range(value, field):
    from fabricsim.topology import topology_from_config
    with pytest.raises(ConfigError) as e:
        topology_from_config(value)
    assert f"{field}: invalid value" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("opt,value", [
    ("-B", "1e-320B/s"), ("-B", "0.5B/s"), ("-B", "1e19B/s"), ("-B", "1e400GB/s"), ("-B", "nanGB/s"),
    ("-B", "inf GB/s"), ("-B", "0"), ("-L", "1e300s"), ("-L", "-1ns"), ("-L", "nan"),
])
def test_link_values_out_of_range(capsys, opt, value):
    field = "bandwidth" if opt == "-B" else "latency"
    refused(capsys, coll("ring:8", opt, value), f"{field}: invalid value '{value}'")


@pytest.mark.parametrize("spec,field", [
    ("wafer:5x4,io=1e30B/s", "io"), ("wafer:5x4,io=0.1B/s", "io"), ("fred:5x4,up=1e19B/s", "up"),
])
def test_family_bandwidths_out_of_range(capsys, spec, field):
    refused(capsys, coll(spec), field, "1 B/s to 1 EB/s")


# ---- 3. fat-tree: more spines never take bisection bandwidth away ---------------------------------


@pytest.mark.parametrize("model", ["analytical", "flow"])
@pytest.mark.parametrize("oversub", [1, 2])
@pytest.mark.parametrize("spines", [1, 2, 8, 16, 64])
def test_all_to_all_busbw_does_not_depend_on_spines(capsys, spines, oversub, model):
    """64 NPUs, 8 per leaf, all-to-all: each NPU sends S/64 to each other NPU. Its own link carries
    63 S/64; a leaf's uplinks, 8 B / oversub in all, carry 8 x 56 S/64. Time = the larger over
    its bandwidth, busbw = (S / time) x 63/64 (nccl-tests' factor); whatever the spines."""
    n, leaf, size = 64, 8, 64 * 2**20
    time = max((n - 1) / n * size / B, leaf * (n - leaf) / n * size / (leaf * B / oversub))
    rc, out, err = run(capsys, "collective", "-t", f"fat-tree:{n},leaf={leaf},spines={spines},oversub={oversub}",
                       "-c", "all-to-all", "-a", "direct", "-s", "64MiB", "-L", "0ns", "-m", model, "--json")
    assert rc == 0, err
    row = json.loads(out)["rows"][0]
    assert row["time_s"] == pytest.approx(time, rel=1e-9)
    assert row["busbw_GBps"] == pytest.approx(size / time * (n - 1) / n / 1e9, rel=1e-9)


def test_spines_beyond_leaf_squared_are_refused(capsys):
    refused(capsys, coll("fat-tree:64,leaf=8,spines=65"), "spines=65", "1 to 64 spines")
    with pytest.raises(ConfigError, match="spines: invalid value 2"):
        build_topology("fat-tree", n=16, leaf=1, spines=2)


# ---- 4 and 5. repeated and contradicting options ---------------------------------------------------


@pytest.mark.parametrize("spec,option", [
    ("fat-tree:64,leaf=8,leaf=16", "'leaf' is given twice"),
    ("switch:8,reduce,reduce", "'reduce' is given twice"),
    ("ring:8,uni,uni", "'uni' is given twice"),
    ("wafer:5x4,io=1GB/s,io=2GB/s", "'io' is given twice"),
    ("fred:5x4,up=1TB/s,UP=2TB/s", "'up' is given twice"),
    ("fat-tree:64,leaf", "'leaf' takes a value"),
])
def test_repeated_options_are_refused(capsys, spec, option):
    refused(capsys, coll(spec), f"'{spec}'", option)


@pytest.mark.parametrize("spec,why", [
    ("wafer:5x4,noio,io=1GB/s", "noio (no I/O controllers) contradicts io=1GB/s"),
    ("wafer:5x4,noio,iothrottle", "contradicts iothrottle"),
    ("ring:8,uni,bi", "uni (one direction) contradicts bi"),
    ("fred:5x4,ios=0,io=1GB/s", "ios=0 (no I/O controllers) contradicts io=1GB/s"),
    ("fat-tree:8,leaf=8,spines=4", "no spines"),
    ("fat-tree:8,oversub=2", "no spines"),
    ("stack:Ring4xRing4,reduce", "without a Switch dimension"),
])
def test_contradicting_options_are_refused(capsys, spec, why):
    refused(capsys, coll(spec), f"'{spec}'", why)


@pytest.mark.parametrize("value,field", [
    ({"family": "wafer", "cols": 5, "rows": 4, "io": False, "io_bandwidth": "1GB/s"}, "io_bandwidth"),
    ({"family": "wafer", "cols": 5, "rows": 4, "io": False, "throttle": True}, "throttle"),
    ({"family": "fred", "groups": 5, "per_group": 4, "io_controllers": 0, "io_bandwidth": "1GB/s"}, "io_bandwidth"),
    ({"family": "switch", "n": 8, "reduce": True, "multicast": False}, "multicast"),
    ({"family": "fat-tree", "n": 8, "leaf": 8, "spines": 2}, "spines"),
    ({"family": "stack", "kinds": ["ring"], "dims": [4], "reduce": True}, "reduce"),
])
def test_contradicting_mapping_values(value, field):
    from fabricsim.topology import topology_from_config
    with pytest.raises(ConfigError) as e:
        topology_from_config(value)
    assert f".{field}: invalid value" in str(e.value) or f" {field}: invalid value" in str(e.value)


# ---- 6. mapping values are taken as given, never coerced -------------------------------------------


@pytest.mark.parametrize("topology,field,shown", [
    ("{family: switch, n: 8, reduce: maybe}", "switch.reduce", "'maybe'"),
    ("{family: switch, n: 8, reduce: 'yes'}", "switch.reduce", "'yes'"),
    ("{family: switch, n: 8, reduce: 1}", "switch.reduce", "1"),
    ("{family: ring, n: 8, bidirectional: 'maybe'}", "ring.bidirectional", "'maybe'"),
    ("{family: ring, n: 8.5}", "ring.n", "8.5"),
    ("{family: ring, n: 8.0}", "ring.n", "8.0"),
    ("{family: ring, n: true}", "ring.n", "True"),
    ("{family: ring, n: '8'}", "ring.n", "'8'"),
    ("{family: torus, dims: [1.5, 2]}", "torus.dims.0", "1.5"),
    ("{family: torus, dims: ['8', '8']}", "torus.dims.0", "'8'"),
    ("{family: fat-tree, n: 64, oversub: true}", "fat-tree.oversub", "True"),
])
def test_mapping_values_are_not_coerced(capsys, tmp_path, topology, field, shown):
    path = tmp_path / "t.yaml"
    path.write_text(f"topology: {topology}\nbandwidth: 100GB/s\nlatency: 1us\n"
                    "flows:\n  - {name: f, src: 0, dst: 2, size: 1MiB, start: 0us}\n")
    refused(capsys, ["traffic", str(path), "-q"], f"{field}: invalid value {shown}")


def test_real_yaml_booleans_and_integers_are_accepted(capsys, tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("topology: {family: switch, n: 4, reduce: true}\nbandwidth: 100GB/s\nlatency: 1us\n"
                    "flows:\n  - {name: f, src: 0, dst: 2, size: 1MiB, start: 0us}\n")
    rc, _, err = run(capsys, "traffic", str(path), "-q")
    assert rc == 0, err


# ---- the wafer's I/O throttle, in closed form now (it routed every controller to every NPU) ------


@pytest.mark.parametrize("cols,rows", [(4, 4), (5, 4), (6, 6), (7, 3), (64, 64), (256, 256)])
def test_io_throttle_is_link_over_2N_minus_1(cols, rows):
    """FRED Sec. 3.2.1: the busiest mesh link carries (2N - 1) P, N the wider side; 750 GB/s
    links and 128 GB/s controllers run at min(1, 750 / ((2N - 1) 128)). A 256x256 wafer took
    hours when the loads were routed."""
    from fabricsim.topology.builders.wafer import io_throttle, wafer_mesh

    link, p = 750e9, 128e9
    want = min(1.0, link / ((2 * max(cols, rows) - 1) * p))
    assert io_throttle(wafer_mesh(cols, rows, link, 0.0, io_bandwidth=p)) == pytest.approx(want, rel=1e-12)


# ---- docstring examples of the sizes (closed forms) --------------------------------------------------


@pytest.mark.parametrize("name", ["fabricsim.topology.family", "fabricsim.topology.builders.fat_tree",
                                  "fabricsim.topology.builders.fred", "fabricsim.topology.builders.circulant",
                                  "fabricsim.topology.builders.wafer"])
def test_size_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
