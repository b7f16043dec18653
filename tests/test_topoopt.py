"""TopoOpt: the circulant-rings all-reduce, per-op strategies, the search's estimate and search, the
routing checked on the flow model, `fabricsim topology optimize` and the reproduction.

Expected times are closed forms written here (ring all-reduce 2(k-1)/k S / (rings x B), roofline
FLOPs / peak) or the spec's numbers (docs/specs/topoopt.md §2.10)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from fabricsim.cli import main
from fabricsim.collectives.api import build_schedule
from fabricsim.collectives.circulant_rings import circulant_rings, ring_steps
from fabricsim.collectives.verify import verify
from fabricsim.engine import CommPricer, simulate
from fabricsim.errors import ConfigError
from fabricsim.network import Flows, simulate_flows
from fabricsim.system import NPU
from fabricsim.system.model import System
from fabricsim.topology import parse_topology
from fabricsim.workload.models import Layer, Model
from fabricsim.workload.opstrategy import OpStrategy, Workload, build_graph, plan, traffic

# ---------------------------------------------------------------- circulant rings


@pytest.mark.parametrize("p", [2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17])
def test_circulant_rings_all_reduce_on_data(p):
    steps = [q for q in range(1, p // 2 + 1) if math.gcd(q, p) == 1]
    for chosen in (steps[:1], steps[:3], steps):
        for coll in ("all-reduce", "reduce-scatter", "all-gather"):
            rep = verify(circulant_rings(coll, p, steps=tuple(chosen)))
            rings = 1 if p == 2 else 2 * len(chosen)
            assert rep.nblocks == rings * p


def test_circulant_rings_refuses_a_step_sharing_a_factor():
    with pytest.raises(ConfigError, match="coprime"):
        circulant_rings("all-reduce", 12, steps=(2,))


def _c12():
    return parse_topology("circulant:12:1,5", "100GB/s", "0ns")


def test_ring_steps_of_the_spec_example():
    t = _c12()
    assert t.jumps == (1, 5, 7, 11)
    assert ring_steps(12, t.jumps, list(range(12))) == (1, 5)
    # strided groups without rings of their own: the fewest-hop steps; hops as the spec's coin change
    for k, hops in {6: 2, 4: 3, 3: 2, 2: 2}.items():
        group = list(range(0, 12, 12 // k))
        (q,) = ring_steps(12, t.jumps, group)
        ptr, _ = t.route([0], [q * 12 // k])
        assert int(ptr[1]) == hops
    assert ring_steps(12, t.jumps, [0, 1, 5]) == (1,)  # not a strided coset: one ring


def test_circulant_all_reduce_time_is_the_ring_formula():
    # 12 servers, rings on +-1 and +-5: each member sends 2 (k-1)/k S / 4 on each of its 4 links
    t = _c12()
    S, B = 1.2e9, 100e9
    got = CommPricer(t, "congestion-aware", {"all-reduce": "circulant_rings"}).collective(
        "all-reduce", tuple(range(12)), S)
    assert got == pytest.approx(2 * 11 / 12 * S / (4 * B), rel=1e-12)
    s = build_schedule(t, "all-reduce", "circulant_rings")
    assert s.meta["steps"] == (1, 5)
    verify(s)


# ---------------------------------------------------------------- per-op strategies

E = 4  # fp32


def _toy(params=(1000, 2000), acts=(10, 20), flops=(1e6, 2e6)) -> Model:
    layers = tuple(Layer(f"fc{i}", "fc", p, f, f, f, a, p) for i, (p, a, f) in enumerate(zip(params, acts, flops)))
    return Model("toy", layers, "fp32")


def test_plan_data_parallel_has_all_reduces_and_no_mp():
    w = Workload(_toy(), 8, 64, gpus=4, intra_bandwidth=25e9, max_groups=4)
    assert len(w.groups) == 2
    pl = plan(w, w.initial())
    assert pl.allreduce == (1000 * E, 2000 * E)
    assert pl.intra == pytest.approx((2 * 1000 * E / (4 * 25e9), 2 * 2000 * E / (4 * 25e9)))
    assert pl.transfers == ()
    assert pl.fwd[1][0] == 2e6 * 64 / 8  # FLOPs of B / k samples


def test_plan_moves_activations_between_degrees():
    w = Workload(_toy(), 8, 64, max_groups=4)
    st = w.initial().with_group(1, 2, 1)  # group 1 on servers 1 and 5
    pl = plan(w, st)
    (t,) = pl.transfers
    # producer replica j (server j, 8 samples) sends to consumer replica j // 4 (server 1 + 4 (j // 4))
    expect = [(j, 1 + 4 * (j // 4), 8 * 10 * E) for j in range(8) if j != 1 + 4 * (j // 4)]
    assert list(zip(t.src.tolist(), t.dst.tolist(), t.size.tolist())) == expect
    groups, mp = traffic(pl)
    assert groups == [((0, 1, 2, 3, 4, 5, 6, 7), 1000 * E), ((1, 5), 2000 * E)]
    assert mp.sum() == 2 * sum(s for _, _, s in expect)  # forward plus the gradients back


def test_strategy_checks_degrees():
    w = Workload(_toy(), 8, 64)
    with pytest.raises(ConfigError, match="power of two"):
        plan(w, OpStrategy((3, 8), (0, 0)))
    with pytest.raises(ConfigError, match="starts"):
        plan(w, OpStrategy((2, 8), (4, 0)))


def test_estimate_and_engine_agree_on_a_closed_form():
    """One dense group, data parallel over 8 servers of a switch: forward, backward, the intra-server
    step, then the ring all-reduce 2 (k-1)/k S / B."""
    from fabricsim.optimize.estimate import Estimator

    model = _toy(params=(10_000_000,), acts=(100,), flops=(1e9,))
    w = Workload(model, 8, 64, gpus=4, intra_bandwidth=25e9)
    npu = NPU(peak_flops=1e14, memory_bandwidth=1e15)
    topo = parse_topology("switch:8", "50GB/s", "0ns")
    S = 10_000_000 * E
    flops = 3 * 1e9 * 8  # fwd + wg + ig for 8 samples
    expect = flops / 1e14 + 2 * S / (4 * 25e9) + 2 * 7 / 8 * S / 50e9
    est = Estimator(topo, npu, algorithms={"all-reduce": "ring"})(plan(w, w.initial()))
    assert est == pytest.approx(expect, rel=1e-9)
    res = simulate(build_graph(plan(w, w.initial())), System(npu), CommPricer(topo, "congestion-aware", {"all-reduce": "ring"}))
    assert res.makespan == pytest.approx(expect, rel=1e-9)


# ---------------------------------------------------------------- search


def _dlrm_like():
    layers = [Layer("bot", "fc", 4_000_000, 8e6, 8e6, 8e6, 64, 4_000_000)]
    layers += [Layer(f"emb{i}", "embedding", 1_000_000, 0.0, 0.0, 0.0, 64, 1_000_000) for i in range(8)]
    layers += [Layer(f"top{i}", "fc", 16_000_000, 3e7, 3e7, 3e7, 256, 16_000_000) for i in range(3)]
    return Model("dlrm-like", tuple(layers), "fp32")


def test_co_optimize_is_deterministic_under_a_seed_and_never_worse_than_its_start():
    from fabricsim.optimize.estimate import Estimator
    from fabricsim.optimize.search import DIRECT_ALGORITHMS, co_optimize

    w = Workload(_dlrm_like(), 16, 16 * 64, gpus=4, intra_bandwidth=25e9)
    npu = NPU(peak_flops=1e14, memory_bandwidth=2e12)
    kw = dict(degree=4, bandwidth=12.5e9, latency=1e-6, rounds=2, steps=40, seed=3)
    a, b = co_optimize(w, npu, **kw), co_optimize(w, npu, **kw)
    assert a.strategy == b.strategy and a.trace == b.trace and a.topology.jumps == b.topology.jumps
    assert np.array_equal(a.found.conn, b.found.conn)
    start = Estimator(a.topology, npu, algorithms=DIRECT_ALGORITHMS)(plan(w, w.initial()))
    assert a.estimate <= start
    assert all(best <= cur + 1e-15 for _, _, cur, best in a.trace)
    # every interface used, none twice: in- and out-degree d
    assert (a.found.conn.sum(0) == 4).all() and (a.found.conn.sum(1) == 4).all()


def test_found_routing_keeps_every_link_within_capacity_on_the_flow_model():
    """Send every demand of a strategy (each all-reduce's ring hops, every MP pair) through the flow
    model on the topology TopologyFinder built for it: no link ever carries more than its capacity,
    and every byte arrives."""
    from fabricsim.optimize.finder import to_topology, topology_finder

    w = Workload(_dlrm_like(), 16, 16 * 64)
    st = w.initial().with_group(9, 4, 1)
    groups, mp = traffic(plan(w, st))
    found = topology_finder(16, 4, groups, mp, split="paper", seed=0)
    topo = to_topology(found, "100Gbps", "1us")
    src, dst, size = [], [], []
    for members, nbytes in groups:
        k = len(members)
        for q in ring_steps(16, topo.jumps, members):
            for i, m in enumerate(members):
                for sgn in (1, -1):
                    src.append(m)
                    dst.append(members[(i + sgn * q) % k])
                    size.append(2 * (k - 1) / k * nbytes)
    a, b = np.nonzero(mp)
    src += a.tolist()
    dst += b.tolist()
    size += mp[a, b].tolist()
    res = simulate_flows(topo, Flows(np.array(src), np.array(dst), np.array(size)), record_timeline=True)
    assert np.isfinite(res.finish).all()
    for _, _, rates in res.timeline:
        assert (rates <= topo.link_bw * (1 + 1e-9)).all()
    ptr, links = topo.route(np.array(src), np.array(dst))
    carried = np.bincount(links, weights=np.repeat(size, np.diff(ptr)), minlength=topo.n_links)
    assert res.link_bytes == pytest.approx(carried, rel=1e-9)


# ---------------------------------------------------------------- command line and reproduction

JOB = """
name: toy job
servers: 16
degree: 4
link_bandwidth: 100Gbps
server: {gpus: 4, intra_bandwidth: 200Gbps, npu: {peak: 624TFLOP/s, memory_bandwidth: 6.22TB/s, efficiency: 0.5}}
workload: {model: dlrm-topoopt, batch_per_gpu: 16, bag: 10}
search: {steps: 20, rounds: 1}
"""


def test_topology_optimize_writes_topology_routing_and_strategy(tmp_path, capsys):
    cfg = tmp_path / "job.yaml"
    cfg.write_text(JOB)
    assert main(["topology", "optimize", str(cfg), "--out", str(tmp_path / "o"), "-q"]) == 0
    out = capsys.readouterr().out
    assert "iteration time" in out
    edges = np.loadtxt(tmp_path / "o" / "edges.csv", delimiter=",", skiprows=1)
    per_src = np.bincount(edges[:, 0].astype(int), weights=edges[:, 2])
    assert (per_src == 4).all()  # every server uses its d interfaces
    assert (edges[:, 3] == edges[:, 2] * 12.5e9).all()
    topo = json.loads((tmp_path / "o" / "topology.json").read_text())
    routing = json.loads((tmp_path / "o" / "routing.json").read_text())
    assert topo["d_ar"] + topo["d_mp"] == 4
    for r in routing["mp"][:50]:
        assert r["path"][0] == r["src"] and r["path"][-1] == r["dst"]
        assert len(r["path"]) - 1 <= topo["diameter"]


@pytest.mark.parametrize("line, field", [("degree: 3", "degree"), ("servers: 12", "servers"),
                                         ("link_bandwidth: fast", "link_bandwidth")])
def test_topology_optimize_bad_config_is_one_line(tmp_path, capsys, line, field):
    key = line.split(":")[0]
    text = "\n".join(line if ln.startswith(key + ":") else ln for ln in JOB.splitlines())
    cfg = tmp_path / "job.yaml"
    cfg.write_text(text)
    assert main(["topology", "optimize", str(cfg), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err


def test_reproduce_topoopt_quick(tmp_path):
    from fabricsim.experiments import EXPERIMENTS, run_experiment

    exp = EXPERIMENTS["topoopt"]
    cfg = exp.load_config(None)
    rep = run_experiment(exp, cfg, quick=True)
    q = cfg.quick
    # the subset, then the paper's demo points at full size: TopoOpt and the cost-equivalent fat-tree
    n_demo = 2 * len(cfg.paper.demo)
    assert len(rep.rows) == len(q.workloads) * len(q.degrees) * len(q.link_bandwidths) * len(q.fabrics) + n_demo
    assert {r.point.servers for r in rep.rows[-n_demo:]} == {cfg.servers}
    assert {r.point.steps for r in rep.rows[-n_demo:]} == {cfg.search.steps}
    for s in rep.speedups:
        # the ideal switch gives every server d x B without relaying: never slower than TopoOpt
        if "ideal" in s:
            assert s["ideal"] <= s["topoopt"] * 1.02
        assert s["fat-tree-cost / topoopt"] == pytest.approx(s["fat-tree-cost"] / s["topoopt"])
    ex = rep.example
    assert (ex["totient"], ex["jumps"], ex["diameter"]) == ([1, 5, 7, 11], [1, 5], 3.0)
    assert ex["coin_hops"] == {6: 2, 4: 3, 3: 2, 2: 2}
    assert (ex["mp_hops_a"], ex["mp_hops_b"]) == (2370, 1060)  # spec §2.10
    files = exp.write(rep, tmp_path)
    assert {f.name for f in files} >= {"topoopt.json", "runs.csv", "fabrics.png", "convergence.png", "costs.csv"}
    # the quick run compares the demo's figures (the paper's numbers, spec §3.5), not the largest speedup
    figs = {h.figure: h for h in exp.headlines(rep)}
    assert figs["DLRM-128 d=8 (demo): speedup"].paper == pytest.approx(132.6 / 44.7)
    assert figs["NCF-128 d=4 (demo): TopoOpt"].paper == pytest.approx(56.9e-3)
    assert sum(h.within is not None for h in figs.values()) == 6
    big = figs["largest speedup over a similar-cost fat-tree (abstract, v3)"]
    assert big.paper == 3.4 and big.fabricsim is None and "--quick" in big.cause
    for h in figs.values():  # every miss names its cause
        assert h.within is not False or "ASSUMPTION" in h.cause


def test_reproduce_topoopt_is_deterministic():
    from fabricsim.experiments.topoopt import evaluate, load_config, points

    p = next(p for p in points(load_config(None), quick=True) if p.fabric == "topoopt")
    p = replace(p, steps=15)
    a, b = evaluate(p), evaluate(p)
    assert a.iteration == b.iteration and a.trace == b.trace


def test_topoopt_config_errors(tmp_path):
    from fabricsim.experiments.topoopt import load_config
    from fabricsim.experiments.base import shipped_config

    text = shipped_config("topoopt.yaml", "").read_text()
    for old, new, field in (("degrees: [4, 8]", "degrees: [4, 5]", "degrees"),
                            ("fabrics: [topoopt,", "fabrics: [torus, topoopt,", "fabrics"),
                            ("model: ncf,", "model: ncf2,", "model"),
                            ("prices: {}", "prices: {fiber: -1}", "fiber")):
        bad = tmp_path / "bad.yaml"
        bad.write_text(text.replace(old, new, 1))
        with pytest.raises(ConfigError) as e:
            load_config(bad)
        assert field in str(e.value) and "\n" not in str(e.value)


@pytest.mark.slow
def test_reproduce_topoopt_full():
    from fabricsim.experiments import EXPERIMENTS, run_experiment

    exp = EXPERIMENTS["topoopt"]
    rep = run_experiment(exp, exp.load_config(None))
    for s in rep.speedups:  # TopoOpt beats the fat-tree of the same cost and the expander everywhere
        assert s["fat-tree-cost / topoopt"] > 1 and s["expander / topoopt"] > 1
    demo = {p["figure"]: p for p in rep.paper}
    assert demo["DLRM-128 d=8 (demo): speedup"]["ours"] > 1 and demo["NCF-128 d=4 (demo): speedup"]["ours"] > 1
    big = {h.figure: h for h in exp.headlines(rep)}["largest speedup over a similar-cost fat-tree (abstract, v3)"]
    assert big.fabricsim == max(s["fat-tree-cost / topoopt"] for s in rep.speedups)
