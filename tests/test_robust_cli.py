"""Hostile command-line input to `collective`, `astra` and `export chakra`, algorithm options, sizes,
groups, Chakra traces and Swing's config formulas: exit code 2 and one stderr line naming the field
and the value, or the right answer; never a traceback, a hang or an allocation without bound."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

import fabricsim.workload.chakra as chakra
from fabricsim.cli import main
from fabricsim.collectives.api import build_schedule, parse_group
from fabricsim.collectives.registry import ALGORITHMS, choose_algorithm
from fabricsim.collectives.sizing import estimate_blocks
from fabricsim.errors import ConfigError
from fabricsim.limits import raised_limits
from fabricsim.topology.spec import parse_topology
from fabricsim.units import parse_size_range, parse_whole_size
from fabricsim.workload.chakra import COMM_RECV_NODE, COMM_SEND_NODE, COMP_NODE, EtNode, EtTrace

ROOT = Path(__file__).resolve().parents[1]
ASTRA = ROOT / "reference" / "astra-sim"
ASTRA_ARGS = ["astra", "--workload-configuration", str(ASTRA / "workloads/all_reduce_8_1048576/x"),
              "--system-configuration", str(ASTRA / "systems/sys_ring_1d_s4_a1.json"),
              "--network-configuration", str(ASTRA / "networks/Ring_8.yml"), "-q"]
TEXT = str(ROOT / "reference/astra-sim/legacy/Resnet50_DataParallel.txt")


def run(capsys, *argv):
    """(exit code, stdout, stderr lines) of `fabricsim argv`."""
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, [ln for ln in err.splitlines() if ln.strip()]


def refused(capsys, *argv, needles=()):
    """Assert `fabricsim argv` exits 2 with one `fabricsim: error:` line containing every needle."""
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (rc, out[-300:], err)
    assert len(err) == 1 and err[0].startswith("fabricsim: error: "), err
    for n in needles:
        assert n in err[0], (n, err[0])
    return err[0]


def coll(*extra, t="ring:8"):
    return ("collective", "-t", t, "-s", "1MiB", "-q", *extra)


# ---- algorithm options ----------------------------------------------------------------------------

@pytest.mark.parametrize("alg, topo", [("ring", "ring:8"), ("swing", "torus:4x4"), ("hierarchical", "torus:4x4"),
                                       ("bucket", "torus:4x4"), ("in_network", "switch:8,reduce"),
                                       ("double_binary_tree", "ring:8"), ("direct", "ring:8")])
@pytest.mark.parametrize("opt", ["leaf_of=1", "root=3", "chunks=abc", "bidirectional=maybe"])
def test_options_an_algorithm_does_not_take_or_parse(capsys, alg, topo, opt):
    key, _, value = opt.partition("=")
    refused(capsys, *coll("-a", alg, "-o", opt, t=topo), needles=(f"--option {key}", repr(value)))


@pytest.mark.parametrize("alg, topo, value", [("ring", "ring:8", "3x3"), ("swing", "torus:4x4", "3x3"),
                                              ("hierarchical", "torus:4x4", "3x3"), ("bucket", "torus:4x4", "2x9"),
                                              ("direct", "ring:8", "2x4")])
def test_dims_is_one_line_naming_the_option_and_the_value_as_written(capsys, alg, topo, value):
    refused(capsys, *coll("-a", alg, "-o", f"dims={value}", t=topo), needles=("--option dims", repr(value)))


@pytest.mark.parametrize("text, want", [("true", True), ("YES", True), ("1", True), ("False", False), ("no", False),
                                        ("0", False)])
def test_booleans_are_words_not_truthiness(text, want):
    assert choose_algorithm("ring", {"bidirectional": text}).kwargs["bidirectional"] is want


@pytest.mark.parametrize("text", ["maybe", "2", "", "truee", "-1"])
def test_booleans_refuse_other_words(text):
    with pytest.raises(ConfigError) as e:
        choose_algorithm("ring", {"bidirectional": text}, where="--option")
    assert str(e.value).startswith("--option bidirectional:")


def test_chunks_beyond_the_limit_is_refused_at_once(capsys):
    t0 = time.perf_counter()
    refused(capsys, *coll("-c", "broadcast", "-o", "chunks=1000000000"),
            needles=("--option chunks", "1,000,000,000 chunks", "--limit chunks="))
    # raised past the chunks limit, the schedule estimate stops it before anything is built
    refused(capsys, "--limit", "chunks=1e9", *coll("-c", "broadcast", "-o", "chunks=1000000000"),
            needles=("--option chunks", "schedule entries", "--limit blocks="))
    refused(capsys, *coll("-c", "broadcast", "-o", "chunks=" + "9" * 5000), needles=("--option chunks",))
    assert time.perf_counter() - t0 < 10


def test_a_schedule_beyond_the_blocks_limit_is_refused_before_it_is_built(capsys):
    refused(capsys, "--limit", "blocks=100", *coll("-a", "hierarchical", "-c", "all-reduce", "-o", "order=baseline",
                                                   t="torus:8x8"),
            needles=("group size", "64", "hierarchical all-reduce", "--limit blocks="))
    rc, out, err = run(capsys, *coll("-a", "hierarchical", "-c", "all-reduce", "-o", "order=baseline", t="torus:8x8"))
    assert rc == 0 and not err
    # a hierarchical all-to-all keeps one entry per transfer (its blocks stated: LineMeshStep); a full
    # check on data lists its first phase: 16 x 3 transfers of 4 blocks
    refused(capsys, "--limit", "blocks=100", *coll("-a", "hierarchical", "-c", "all-to-all", t="torus:4x4"),
            needles=("group size: invalid value 16", "192 schedule entries (phase 0 of a hierarchical all-to-all on 4x4",
                     "--limit blocks="))
    # a direct full mesh is stated, not listed; a full check on data lists its 240 transfers
    refused(capsys, "--limit", "blocks=100", *coll("-a", "direct", "-c", "all-to-all", t="ring:16"),
            needles=("group size: invalid value 16", "240 schedule entries (a full mesh of 16 ranks", "--limit blocks="))
    # the default pieces (chunks = p for a ring broadcast) are what is too many: say so. Composed of
    # runs of hops (collectives.chain) the 16,384-rank chain stores 212,993 entries (plus p), not 268 M
    line = refused(capsys, "--limit", "blocks=100000", *coll("-c", "broadcast", t="ring:16384"),
                   needles=("group size", "229,377"))
    assert "fewer pipeline pieces fit: --option chunks=N" in line
    line = refused(capsys, "--limit", "blocks=1000000", *coll("-a", "hierarchical", "-c", "all-to-all", t="torus:4x4096"),
                   needles=("group size", "16384", "hierarchical all-to-all"))
    assert "chunks" not in line  # no pieces to drop


def test_a_collective_alone_on_the_flow_model_is_sized_when_every_transfer_is_a_flow(capsys):
    """NCCL's trees on a 4x4 torus map onto themselves under no translation and are no set of
    independent rings: all 2 x 2 x 2 x 15 x 16 = 3,840 transfers would be flows, refused at once
    beyond the `flows` limit; a ring (one flow per orbit) and Hamiltonian rings (four independent
    rings, each one flow per orbit of its own rotations) run under the same limit."""
    lim = ("--limit", "flows=1000")
    refused(capsys, *lim, *coll("-a", "nccl_tree", "-m", "flow", t="torus:4x4"),
            needles=("algorithm: invalid value 'nccl_tree'", "3,840 flows", "--limit flows="))
    for alg in ("ring", "hamiltonian_rings"):
        rc, out, err = run(capsys, *lim, *coll("-a", alg, "-m", "flow", t="torus:4x4"))
        assert rc == 0 and not err


def test_in_network_split_collectives_are_sized_by_what_the_models_build(capsys):
    """A streaming reduce-scatter is p serial streams priced from their 2p paths (never the p^2
    link entries of their sets): it runs under a limit far below p^2 on both models, with one answer;
    lock-step all-gather on the flow model joins runs of p - 1 blocks against p writes at the switch
    (p^2 dataflow segments): refused before the join."""
    lim = ("--limit", "blocks=1000")
    times = []
    for model in ("congestion-aware", "flow"):
        rc, out, err = run(capsys, *lim, *coll("-a", "in_network", "-c", "reduce-scatter", "-m", model,
                                               t="switch:64,reduce"))
        assert rc == 0 and not err
        times.append(out.strip().splitlines()[-2].split()[4])  # the table's time column
    assert times[0] == times[1]
    rc, out, err = run(capsys, *lim, *coll("-a", "in_network", "-c", "reduce-scatter", "-o", "lockstep=true",
                                           t="switch:64,reduce"))
    assert rc == 0 and not err  # range form: 2p runs
    refused(capsys, *lim, *coll("-a", "in_network", "-c", "all-gather", "-o", "lockstep=true", "-m", "flow",
                                t="switch:64,reduce"),
            needles=("schedule:", "dataflow segments", "--limit blocks="))


@pytest.mark.parametrize("extra, needle", [
    (("-o", "chunks=4"), "--option chunks"),  # ring's chunks are pieces of a broadcast/reduce
    (("-c", "reduce", "-o", "bidirectional=true"), "--option bidirectional"),
    (("-c", "reduce", "-a", "bidirectional_ring"), "--option bidirectional"),
    (("-a", "hierarchical", "-c", "reduce-scatter", "-o", "order=baseline"), "--option order"),
])
def test_options_the_collective_would_ignore_are_refused(capsys, extra, needle):
    refused(capsys, *coll(*extra), needles=(needle, "applies to"))


def test_options_that_apply_still_run(capsys):
    for extra, opts in ((("-c", "broadcast", "-o", "chunks=4"), {"chunks": 4}),
                        (("-o", "bidirectional=yes"), {"bidirectional": True}),
                        (("-a", "hierarchical", "-o", "order=baseline"), {"order": "baseline"})):
        rc, out, err = run(capsys, *coll(*extra, "--json"))
        assert rc == 0 and not err, (extra, err)
        d = json.loads(out)
        assert d["options"] == opts and len(d["rows"]) == 1


@pytest.mark.parametrize("alg, coll_name, opts", [
    ("ring", "all-reduce", {}), ("ring", "broadcast", {"chunks": 37}), ("direct", "all-to-all", {}),
    ("double_binary_tree", "all-reduce", {"chunks": 50}), ("hierarchical", "all-reduce", {"dims": (4, 8)}),
    ("hierarchical", "all-reduce", {"dims": (2, 2, 8), "order": "baseline"}), ("swing", "all-reduce", {}),
    ("bucket", "all-reduce", {"dims": (2, 2, 8)}), ("halving_doubling", "all-reduce", {}),
    ("in_network", "reduce-scatter", {"lockstep": True, "chunks": 9}),
    ("halving_doubling", "reduce-scatter", {}), ("recursive_doubling", "all-gather", {}),
    ("hierarchical", "all-reduce", {"dims": (2, 4, 4), "inner": "halving_doubling"}),
    ("hierarchical", "all-reduce", {"dims": (2, 4, 4), "inner": ("direct", "ring", "halving_doubling")}),
    ("hierarchical", "all-reduce", {"dims": (4, 8), "inner": "halving_doubling", "order": "baseline"}),
    ("hierarchical", "reduce-scatter", {"dims": (2, 2, 2, 4)}),
    ("bucket", "all-gather", {"dims": (4, 2, 4)}),
    # three dimensions of 16: the first phase lists p/16 ids per transfer (the old estimate was 0.37x / 0.16x)
    ("hierarchical", "all-reduce", {"dims": (16, 16, 16)}), ("bucket", "all-reduce", {"dims": (16, 16, 16)}),
    # blocks as runs: every block but the rank's own is two
    ("in_network", "all-gather", {}), ("in_network", "reduce-scatter", {}),
    ("in_network", "all-gather", {"lockstep": True, "chunks": 3}),
    ("in_network_tree", "all-gather", {"leaf_of": tuple(i // 4 for i in range(32))}),
    ("in_network_tree", "reduce-scatter", {"leaf_of": tuple(i % 3 for i in range(32))}),
])
def test_the_blocks_estimate_bounds_what_the_builder_makes(alg, coll_name, opts):
    p = math.prod(opts["dims"]) if "dims" in opts else 32
    s = ALGORITHMS[alg].build(coll_name, p, **({"root": 0} if coll_name == "broadcast" else {}), **opts)
    entries = s.stored_entries
    est = estimate_blocks(alg, coll_name, p, opts)
    assert entries <= est <= 64 * entries


# ---- groups, roots, sizes, output formats, models, link values -----------------------------------

@pytest.mark.parametrize("group", ["99999999999999999999999", "0-10000000000", "0-99999999999999999999999", "",
                                   "5-3", "0-7:0", "a"])
def test_bad_groups_are_one_line(capsys, group):
    t0 = time.perf_counter()
    refused(capsys, *coll("-g", group), needles=("group:", repr(group)))
    assert time.perf_counter() - t0 < 5  # counted, never expanded


def test_parse_group_counts_before_expanding_and_names_its_field():
    assert parse_group("0-3,8-12:2") == [0, 1, 2, 3, 8, 10, 12]
    with pytest.raises(ConfigError) as e:
        parse_group("0-99999999999", field="trace_npus")
    assert str(e.value).startswith("trace_npus: invalid value '0-99999999999'") and "100,000,000,000 ranks" in str(e.value)
    with raised_limits(ranks=10):
        assert len(parse_group("0-9")) == 10
        with pytest.raises(ConfigError):
            parse_group("0-10")


@pytest.mark.parametrize("extra, needles", [
    (("--root", "3"), ("--root", "3", "broadcast and reduce")),
    (("--root", "0", "-c", "all-gather"), ("--root",)),
    (("--root", "-1", "-c", "broadcast"), ("root", "-1")),
    (("--root", "99", "-c", "broadcast"), ("root", "99")),
    (("--root", "99999999999999999999999", "-c", "reduce"), ("root",)),
    (("--json", "--csv"), ("--json --csv",)),
    (("--csv", "--nccl"), ("--csv --nccl",)),
    (("-m", "nope"), ("model", "flow", "congestion-unaware", "flow-store-and-forward")),
    (("-B", "0"), ("bandwidth",)), (("-B", "nanGB/s"), ("bandwidth",)), (("-B", "infGB/s"), ("bandwidth",)),
    (("-L", "-1ns"), ("latency",)), (("-L", "nan"), ("latency",)),
])
def test_option_values_and_combinations(capsys, extra, needles):
    refused(capsys, *coll(*extra), needles=needles)


def test_root_still_works_where_it_applies(capsys):
    rc, out, err = run(capsys, *coll("-c", "broadcast", "--root", "3", "--nccl"))
    assert rc == 0 and not err and "3" in out


@pytest.mark.parametrize("sizes, needles", [
    ("1:1GiB:1.000001", ("sizes", "20,794,426 sizes", "--limit sizes=")),
    ("1b", ("sizes", "'1b'", "whole bytes")), ("0", ("sizes", "whole bytes")), ("-1", ("sizes",)),
    ("nan", ("sizes",)), ("1e30", ("sizes", "2^53")), ("1TiB:1KiB", ("sizes",)), ("1KiB:1MiB:inf", ("sizes",)),
    ("1KiB:1MiB:nan", ("sizes",)), ("1KiB:1MiB:1", ("sizes",)), ("1,2b", ("sizes",)),
])
def test_bad_sizes_are_one_line(capsys, sizes, needles):
    t0 = time.perf_counter()
    refused(capsys, "collective", "-t", "ring:8", "-q", "-s", sizes, needles=needles)
    assert time.perf_counter() - t0 < 5


def test_size_ranges_are_whole_bytes():
    assert parse_size_range("1:4:1.5") == [1.0, 2.0, 3.0]
    assert parse_size_range("8b,16") == [1.0, 16.0]
    assert parse_size_range("1KB:1GB:10") == [10.0**k for k in range(3, 10)]
    assert parse_whole_size("1KiB") == 1024
    with raised_limits(sizes=3):
        assert len(parse_size_range("1:4")) == 3
        with pytest.raises(ConfigError):
            parse_size_range("1:8")
        with pytest.raises(ConfigError):
            parse_size_range("1,2,3,4")


# ---- fabricsim astra -------------------------------------------------------------------------------

@pytest.mark.parametrize("model", ["analytical", "flow"])
def test_astra_json_with_a_model_carries_the_comparison(capsys, model):
    rc, out, err = run(capsys, *ASTRA_ARGS, "--model", model, "--json")
    assert rc == 0, err
    d = json.loads(out)
    (c,) = d["comparison"]
    assert c["collective"] == "all-reduce" and c["size"] == 1048576 and isinstance(c["impossible"], bool)
    assert c["astra_ns"] == d["finish_ns_max"] and c["fabricsim_ns"] > c["bound_ns"] > 0


@pytest.mark.parametrize("scale", ["nan", "inf", "-inf", "-1", "1e308", "1000001"])
def test_astra_injection_scale_must_be_from_0_to_1e6(capsys, scale):
    refused(capsys, *ASTRA_ARGS, "--injection-scale", scale, needles=("--injection-scale", "from 0 to 1e6"))


def _p2p_traces(folder: Path, monkeypatch, drop: str = "", dst: int = 1) -> str:
    """Eight traces: rank 0 sends 1 KiB to `dst`, rank 1 receives it; `drop` removes one attribute.
    Written with the checks off, as another tool might have written them."""
    monkeypatch.setattr(chakra, "check_trace", lambda *a, **k: None)
    for r in range(8):
        nodes = [EtNode(0, "c", COMP_NODE, duration_micros=2, attrs={"is_cpu_op": False})]
        if r in (0, 1):
            attrs = {"comm_dst": dst} if r == 0 else {"comm_src": 0}
            attrs.update(comm_size=1024, comm_tag=3)
            attrs.pop(drop, None)
            nodes.append(EtNode(7, "p2p", COMM_SEND_NODE if r == 0 else COMM_RECV_NODE, data_deps=(0,), attrs=attrs))
        (folder / f"x.{r}.et").write_bytes(chakra.encode_trace(EtTrace(r, "0.0.4", {}, tuple(nodes))))
    monkeypatch.undo()
    return str(folder / "x")


def test_astra_reads_a_valid_send_recv_pair(capsys, tmp_path, monkeypatch):
    prefix = _p2p_traces(tmp_path, monkeypatch)
    args = ["astra", "--workload-configuration", prefix, *ASTRA_ARGS[3:], "--json"]
    rc, out, err = run(capsys, *args)
    assert rc == 0, err
    assert json.loads(out)["finish_ns_max"] > 2000


@pytest.mark.parametrize("drop, dst, file, needles", [
    ("comm_dst", 1, "x.0.et", ("node 7 comm_dst", "'missing'", "COMM_SEND_NODE")),
    ("comm_src", 1, "x.1.et", ("node 7 comm_src", "'missing'", "COMM_RECV_NODE")),
    ("comm_size", 1, "x.0.et", ("node 7 comm_size", "'missing'")),
    ("", 99, "x.0.et", ("node 7 comm_dst", "99", "0..7")),
    ("", 0, "x.0.et", ("node 7 comm_dst", "except 0")),
])
def test_astra_send_recv_without_their_peer_is_one_line(capsys, tmp_path, monkeypatch, drop, dst, file, needles):
    prefix = _p2p_traces(tmp_path, monkeypatch, drop, dst)
    args = ["astra", "--workload-configuration", prefix, *ASTRA_ARGS[3:]]
    refused(capsys, *args, needles=(str(tmp_path / file), *needles))


def test_astra_trace_beyond_the_file_limit_is_refused_before_it_is_read(capsys, tmp_path, monkeypatch):
    """A trace larger than the file_bytes limit (2 MiB under --limit file_bytes=1MiB) is refused by
    its size, with the estimate, before it is read (`config.read_input_bytes`)."""
    prefix = _p2p_traces(tmp_path, monkeypatch)
    (tmp_path / "x.3.et").write_bytes(bytes(2 * 2**20))
    refused(capsys, "--limit", "file_bytes=1MiB", "astra", "--workload-configuration", prefix, *ASTRA_ARGS[3:],
            needles=(str(tmp_path / "x.3.et"), "2,097,152 bytes, beyond the limit of 1,048,576"))


def test_astra_gzip_trace_that_expands_beyond_the_limit_is_one_line(capsys, tmp_path, monkeypatch):
    """A gzipped trace is held to the file_bytes limit once decompressed: 2 MiB of zeros gzip to
    about 2 KiB, refused under --limit file_bytes=1MiB (a gzip bomb of the default limit works alike)."""
    import gzip

    prefix = _p2p_traces(tmp_path, monkeypatch)
    (tmp_path / "x.2.et").write_bytes(gzip.compress(bytes(2 * 2**20)))
    assert (tmp_path / "x.2.et").stat().st_size < 2**20
    refused(capsys, "--limit", "file_bytes=1MiB", "astra", "--workload-configuration", prefix, *ASTRA_ARGS[3:],
            needles=(str(tmp_path / "x.2.et"), "bytes once decompressed", "--limit file_bytes=N"))


# ---- fabricsim export chakra -----------------------------------------------------------------------

@pytest.mark.parametrize("extra, needles", [
    (("-n", "1000000000", "--collective", "all-reduce"), ("--npus", "1,000,000,000 NPUs", "--limit npus=")),
    (("-n", "99999999999999999999999", "--collective", "all-reduce"), ("--npus",)),
    (("-n", "0", "--collective", "all-reduce"), ("--npus", ">= 1")),
    (("-n", "4", "--collective", "all-reduce", "--passes", "-5"), ("--passes", "-5", "--text only")),
    (("-n", "4", "--collective", "all-reduce", "--units", "ns"), ("--units", "--text only")),
    (("-n", "4", "--collective", "all-reduce", "--size", "1b"), ("--size", "'1b'", "whole bytes")),
    (("-n", "4", "--collective", "all-reduce", "--size", "0"), ("--size",)),
    (("-n", "4", "--text", TEXT, "--size", "1MiB"), ("--size", "--collective only")),
    (("-n", "4", "--text", TEXT, "--passes", "1000000000"), ("--passes", "trace nodes", "--limit trace_nodes=")),
    (("-n", "4", "--text", TEXT, "--passes", "0"), ("--passes", ">= 1")),
    (("-n", "4", "--text", TEXT, "--units", "s"), ("--units", "ns, converter")),
])
def test_export_chakra_counts_and_options(capsys, tmp_path, extra, needles):
    t0 = time.perf_counter()
    refused(capsys, "export", "chakra", "-o", tmp_path / "ar", *extra, needles=needles)
    assert time.perf_counter() - t0 < 10
    assert not list(tmp_path.iterdir())  # nothing written


def test_export_chakra_still_writes(capsys, tmp_path):
    rc, out, err = run(capsys, "export", "chakra", "-o", tmp_path / "ar", "-n", "4", "--collective", "all-reduce",
                       "--size", "8b")
    assert rc == 0, err
    assert [t.nodes[0].comm_size for t in chakra.read_traces(tmp_path / "ar", 4)] == [1] * 4


# ---- Swing's config formulas -----------------------------------------------------------------------

@pytest.mark.parametrize("formula, needle", [
    ("2.0**10000", "power beyond"), ("9**9**9**9", "power beyond"), ("1+" * 50_000 + "1", "characters"),
    ("p+" * 150 + "1", "elements"), ("(" * 400 + "1" + ")" * 400, "syntax"), ("1e308*10", "finite"), ("(-8)**(1/3)", "fractional"),
    ("log2(0)", "log2"), ("1/(D-2)", "division by zero"), ("10" * 200, "beyond 1e308"),
])
def test_swing_formulas_are_bounded(formula, needle):
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from test_swing_reproduce import stand_in_config

    import fabricsim.experiments.swing as ex

    d = stand_in_config()
    d["paper"]["table2"]["ring"]["lambda"] = formula
    t0 = time.perf_counter()
    with pytest.raises(ConfigError) as e:
        ex.parse_config(d, "swing.yaml")
    msg = str(e.value)
    assert time.perf_counter() - t0 < 2
    assert "\n" not in msg and "paper.table2.ring.lambda" in msg and needle in msg, msg


def test_swing_formula_failing_at_a_later_torus_names_the_entry():
    import fabricsim.experiments.swing as ex

    assert ex.eval_formula("2**996", {}) == pytest.approx(2.0**996)
    assert ex.eval_formula("2*D*p**(1/D)", {"p": 64, "D": 2}) == pytest.approx(32)
    row = ex.config.Table2Row("ring", "Ring", "1/(p-16)", 1, None)
    assert row.values(64, 2, 8)[0] == pytest.approx(1 / 48)
    with pytest.raises(ConfigError) as e:
        row.values(16, 2, 4)
    assert str(e.value).startswith("paper.table2.ring.lambda: invalid value '1/(p-16)'") and "p=16" in str(e.value)


def test_build_schedule_names_option_fields_only_when_asked():
    topo = parse_topology("torus:4x4")
    with pytest.raises(ConfigError) as e:
        build_schedule(topo, "all-reduce", "swing", dims="3x3")
    assert e.value.field == "dims"
    with pytest.raises(ConfigError) as e:
        build_schedule(topo, "all-reduce", "swing", dims="3x3", where="--option")
    assert e.value.field == "--option dims" and e.value.value == "3x3"
