"""Pipeline options of `Strategy`: the interleaved (weight-streaming) stage layout, multicast
stage-boundary transfers and prefetched inputs (FRED, ISCA'25; docs/specs/fred_ace.md 1.7).

Every expected time is a closed form written here (roofline FLOPs / rate, the breadth-first and
1F1B pipeline formulas, link-sharing rates, I/O rates), never read back from the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.config import validate
from fabricsim.engine.pricing import CommPricer
from fabricsim.engine.simulator import simulate
from fabricsim.errors import ConfigError
from fabricsim.system import NPU, System
from fabricsim.topology import parse_topology
from fabricsim.train import TrainConfig, graph_of
from fabricsim.vocab import CATEGORIES, COLLECTIVES
from fabricsim.workload.graph import COLLECTIVE, COMPUTE, IO, IO_LOAD, IO_STORE, P2P
from fabricsim.workload.models import Layer, Model, transformer
from fabricsim.workload.parallelism import Strategy, build_training

PEAK, EFF = 1e15, 0.5  # FLOP/s; 0.5e15 FLOP/s achieved
SYS = System(NPU(PEAK, 1e18, EFF))  # memory so fast that every task is compute-bound
PP_CAT = CATEGORIES.index("PP")


def count(g, kind, category=None):
    sel = g.kind == kind
    if category is not None:
        sel &= g.category == CATEGORIES.index(category)
    return int(sel.sum())


def uniform(L, fwd=3e12, act=1000):
    """L equal layers: forward `fwd` FLOPs per sample, backward 2 x fwd as one weight-gradient
    task (no input gradient), `act` output elements, no parameters."""
    return Model("uniform", tuple(Layer(f"l{i}", "fc", 0, fwd, 0.0, 2 * fwd, act, 0) for i in range(L)))


# ---------------------------------------------------------------- interleaved layout: time


@pytest.mark.parametrize("L,pp,M", [(4, 2, 2), (8, 2, 2), (8, 2, 4), (6, 3, 3), (8, 4, 4)])
def test_interleaved_iteration_is_the_breadth_first_closed_form(L, pp, M):
    """Layer i on stage i mod pp, breadth-first: with M >= pp no stage waits inside a pass, so the
    forward takes (L M / pp + pp - 1) t_f and the backward (L M / pp + pp - 1) t_b. Contiguous
    1F1B stages of L/pp layers take (M + pp - 1)(L / pp)(t_f + t_b): for pp = 2, M = 2, L = 4,
    5 (t_f + t_b) against 6 (t_f + t_b). Transfers are free (1e18 B/s, the most a link may have, no latency)."""
    model = uniform(L)
    t_f = model.layers[0].fwd_flops * 1 / (PEAK * EFF)  # microbatch of 1 sample
    t_b = model.layers[0].bwd_flops * 1 / (PEAK * EFF)
    pricer = CommPricer(parse_topology(f"ring:{pp}", 1e18, 0.0))
    inter = simulate(build_training(model, Strategy(pp=pp, batch=M, microbatches=M, stage_layout="interleaved")),
                     SYS, pricer)
    expected = (L * M / pp + pp - 1) * t_f + (L * M / pp + pp - 1) * t_b
    assert inter.makespan == pytest.approx(expected, rel=1e-9)
    contiguous = simulate(build_training(model, Strategy(pp=pp, batch=M, microbatches=M)), SYS, pricer)
    assert contiguous.makespan == pytest.approx((M + pp - 1) * (L / pp) * (t_f + t_b), rel=1e-9)
    assert contiguous.makespan - inter.makespan == pytest.approx((pp - 1) * (L / pp - 1) * (t_f + t_b), rel=1e-9)
    # every stage computes L/pp layers x M microbatches: the same compute, less idle
    assert inter.breakdown["compute"] == pytest.approx(np.full(pp, L / pp * M * (t_f + t_b)), rel=1e-9)


def test_interleaved_fewer_microbatches_than_stages_waits():
    """M = 1 < pp = 2: every layer waits for the previous one, wherever it runs: L (t_f + t_b)."""
    model = uniform(4)
    t_f, t_b = 3e12 / (PEAK * EFF), 6e12 / (PEAK * EFF)
    g = build_training(model, Strategy(pp=2, batch=1, microbatches=1, stage_layout="interleaved"))
    res = simulate(g, SYS, CommPricer(parse_topology("ring:2", 1e18, 0.0)))
    assert res.makespan == pytest.approx(4 * (t_f + t_b), rel=1e-9)


# ---------------------------------------------------------------- interleaved layout: graph


@pytest.mark.parametrize("streaming", [True, False])
def test_interleaved_graph_counts(streaming):
    """A transformer of L = 8 layers (embedding, 6 blocks, head) under MP(2)-DP(2)-PP(2), M = 2,
    interleaved. Per microbatch and (MP rank, DP replica): forward 1 + 2 x 6 + 1 = 14 compute
    tasks, backward 1 (embedding wg) + 3 x 12 (each block part's backward cut for Megatron's
    asynchronous TP all-reduce: up to and with the column linear's input gradient, its weight
    gradient, the layer norm) + 2 (head wg, ig) = 39; MP all-reduces 1 + 12 forward,
    12 + 1 backward per DP replica. PP: every one of the L - 1 = 7 boundaries is a crossing,
    x M x dp x mp p2p x 2 directions = 112. Weight streaming: 2 loads per layer, 1 store per
    layer (every layer owns parameters); otherwise one DP all-reduce per layer and MP rank."""
    L, mp, dp, pp, M = 8, 2, 2, 2, 2
    m = transformer("t", 6, 128, 4, 32, 500)
    assert len(m.layers) == L and all(layer.params > 0 for layer in m.layers)
    st = Strategy(mp=mp, dp=dp, pp=pp, batch=dp * M, microbatches=M, stage_layout="interleaved",
                  weight_streaming=streaming)
    g = build_training(m, st)
    assert count(g, COMPUTE) == (14 + 39) * M * mp * dp
    assert count(g, COLLECTIVE, "MP") == (13 + 13) * M * dp
    assert count(g, P2P, "PP") == (L - 1) * M * dp * mp * 2
    loads, stores = g.kind == IO, g.kind == IO
    loads &= g.peer == IO_LOAD
    stores &= g.peer == IO_STORE
    if streaming:
        assert int(loads.sum()) == 2 * L and int(stores.sum()) == L and count(g, COLLECTIVE, "DP") == 0
        # each layer's weights: loaded before its first forward and before its first backward
        for i, layer in enumerate(m.layers):
            ids = [t for t in np.flatnonzero(loads) if g.name(t) == f"{layer.name} weights in"]
            assert len(ids) == 2 and g.size[ids[0]] == layer.params * 2
            assert set(g.groups[g.group[ids[0]]]) == set(st.ranks()[:, i % pp, :].ravel().tolist())
            comp = np.flatnonzero(g.kind == COMPUTE)
            f0 = [t for t in comp if g.name(t).split()[:2] == ["F0", layer.name] or
                  g.name(t).startswith(f"F0 {layer.name}.")][0]
            b0 = [t for t in comp if g.name(t).split()[:2] == ["B0", layer.name] or
                  g.name(t).startswith(f"B0 {layer.name}.")][0]
            assert ids[0] in g.deps(f0) and ids[1] in g.deps(b0)
            out = [t for t in np.flatnonzero(stores) if g.name(t) == f"{layer.name} gradients out"]
            last_b = [t for t in comp if g.name(t).startswith(f"B{M - 1} {layer.name}")][-1]
            assert len(out) == 1 and out[0] > last_b and last_b in g.deps(out[0])
    else:
        assert not loads.any() and not stores.any() and count(g, COLLECTIVE, "DP") == L * mp
    # layer i runs on stage i mod pp only
    R = st.ranks()
    for t in np.flatnonzero(g.kind == COMPUTE):
        name = g.name(t).split()[1].split(".")[0]
        i = [layer.name for layer in m.layers].index(name)
        assert g.stage[g.npu[t]] == i % pp
        assert g.npu[t] in R[:, i % pp, :]
    # forward of (layer 1, microbatch m) waits for the activation of layer 0 sent from stage 0
    first = {g.name(t): t for t in np.flatnonzero(g.kind == COMPUTE)[::-1] if g.npu[t] == R[0, 1, 0]}
    for mb in range(M):
        deps = g.deps(first[f"F{mb} block0.attn"])
        sent = [d for d in deps if g.kind[d] == P2P]
        assert len(sent) == 1 and g.npu[sent[0]] == R[0, 0, 0] and g.name(sent[0]) == f"F{mb} activation 0->1"
        assert g.size[sent[0]] == m.layers[0].activation_elems * 1 * 2  # microbatch of 1 sequence, fp16


def test_interleaved_needs_a_layer_per_stage():
    with pytest.raises(ConfigError) as e:
        build_training(uniform(3), Strategy(pp=4, batch=4, microbatches=4, stage_layout="interleaved"))
    assert str(e.value).startswith("parallelism.pp: invalid value 4") and "\n" not in str(e.value)


# ---------------------------------------------------------------- multicast stage boundaries


def test_multicast_is_one_broadcast_per_dp_replica():
    """MP(2)-DP(5)-PP(2), M = 2: each boundary transfer is one broadcast per DP replica from MP
    rank 0 of the sending stage to the receiving MP group: 1 boundary x M x dp x 2 directions =
    20, each of the activation bytes (seq x h x mb x 2) over mp + 1 = 3 NPUs."""
    mp, dp, pp, M = 2, 5, 2, 2
    m = transformer("t", 4, 128, 4, 32, 500)
    st = Strategy(mp=mp, dp=dp, pp=pp, batch=dp * M, microbatches=M, placement=("dp", "mp", "pp"), pp_send="multicast")
    g = build_training(m, st)
    pp_tasks = np.flatnonzero(g.category == PP_CAT)
    assert len(pp_tasks) == 1 * M * dp * 2 and count(g, P2P) == 0
    R = st.ranks()
    groups = set()
    for t in pp_tasks:
        assert g.kind[t] == COLLECTIVE and COLLECTIVES[g.coll[t]] == "broadcast"
        assert g.size[t] == 32 * 128 * 1 * 2
        grp = g.groups[g.group[t]]
        assert len(grp) == mp + 1 and len(set(grp)) == mp + 1
        s, to = (0, 1) if g.name(t).split()[1] == "activation" else (1, 0)
        d = [di for di in range(dp) if R[0, s, di] == grp[0]]
        assert len(d) == 1 and list(grp[1:]) == R[:, to, d[0]].tolist()  # root = sender = group rank 0
        groups.add(grp)
        # every receiver's next compute waits on it
        for q in grp[1:]:
            assert any(t in g.deps(c) for c in np.flatnonzero((g.kind == COMPUTE) & (g.npu == q)))
    assert len(groups) == 2 * dp
    # the pricer builds its schedule: distinct members, root 0
    pricer = CommPricer(parse_topology("wafer:5x4", 750e9, 0.0), algorithms={"broadcast": "ring,chunks=64"})
    for grp in groups:
        assert pricer.schedule("broadcast", grp).root == 0
    # interleaved: one multicast per crossing (L - 1 = 5) x M x dp x 2 directions
    gi = build_training(m, Strategy(mp=mp, dp=dp, pp=pp, batch=dp * M, microbatches=M, stage_layout="interleaved",
                                    pp_send="multicast"))
    assert count(gi, COLLECTIVE, "PP") == 5 * M * dp * 2 and count(gi, P2P) == 0


def test_multicast_with_mp1_is_p2p():
    m = uniform(4)
    a = build_training(m, Strategy(dp=2, pp=2, batch=4, microbatches=2))
    b = build_training(m, Strategy(dp=2, pp=2, batch=4, microbatches=2, pp_send="multicast"))
    assert_same_graph(a, b)


def test_multicast_runs_at_line_rate_where_p2p_shares_a_link():
    """Wafer 5x4 mesh, 750 GB/s links, MP(2)-DP(5)-PP(2) placed [dp, mp, pp]: row y holds
    (mp, pp) = (y mod 2, y div 2), column d is DP replica d. The activation of stage 0 goes down
    column d: p2p d -> 10+d and 5+d -> 15+d (X-Y routes) both cross link 5+d -> 10+d, so each
    gets 375 GB/s: S / 375e9. The multicast d -> 10+d -> 15+d is a chain of 2 hops pipelined in
    C = 64 pieces, each link carrying the data once: (C + 1) / C x S / 750e9. The 5 replicas'
    transfers use different columns and run at once. Ratio 2 C / (C + 1) = 1.97."""
    B, C = 750e9, 64
    m = transformer("t", 4, 1024, 8, 1024, 1000)
    S = 1024 * 1024 * 1 * 2  # seq x hidden x microbatch x fp16
    topo = parse_topology("wafer:5x4", B, 0.0)
    times = {}
    for send in ("p2p", "multicast"):
        g = build_training(m, Strategy(mp=2, dp=5, pp=2, batch=5, microbatches=1, placement=("dp", "mp", "pp"),
                                       pp_send=send))
        res = simulate(g, SYS, CommPricer(topo, "flow", {"broadcast": f"ring,chunks={C}"}))
        fwd = [t for t in np.flatnonzero(g.category == PP_CAT) if g.name(t) == "F0 activation 0->1"]
        assert len(fwd) == (10 if send == "p2p" else 5)
        assert np.ptp(res.start[fwd]) == 0  # all at once
        dur = res.end[fwd] - res.start[fwd]
        assert np.ptp(dur) <= 1e-9 * dur.max()
        times[send] = float(dur.mean())
    assert times["p2p"] == pytest.approx(S / (B / 2), rel=1e-6)
    assert times["multicast"] == pytest.approx((C + 1) / C * S / B, rel=1e-6)
    assert times["p2p"] / times["multicast"] == pytest.approx(2 * C / (C + 1), rel=1e-6)


# ---------------------------------------------------------------- input prefetch


def _io_model(input_bytes):
    """A DP-only model: 2 layers of 3 TFLOPs forward, 6 backward per sample, no parameters."""
    layers = tuple(Layer(f"l{i}", "fc", 0, 3e12, 0.0, 6e12, 1000, 0) for i in range(2))
    return Model("io", layers, input_bytes=input_bytes)


def test_prefetch_skips_the_first_load_and_feeds_the_next_iteration():
    m = _io_model(10_000_000)
    g = build_training(m, Strategy(dp=4, batch=4, iterations=2, input_loading=True, input_prefetch=True))
    loads = np.flatnonzero(g.kind == IO)
    assert len(loads) == 1 and g.iteration[loads[0]] == 0 and g.size[loads[0]] == 4 * 10_000_000
    assert len(g.deps(loads[0])) == 0  # issued at the start of iteration 0, after no other load
    for p in range(4):
        comp = np.flatnonzero((g.kind == COMPUTE) & (g.npu == p))
        first0 = [t for t in comp if g.iteration[t] == 0][0]
        first1 = [t for t in comp if g.iteration[t] == 1][0]
        assert g.name(first1) == "F0 l0" and loads[0] in g.deps(first1)
        assert not any(g.kind[d] == IO for d in g.deps(first0))
    # three iterations: loads for iterations 1 and 2, chained, none after the last
    g3 = build_training(m, Strategy(dp=4, batch=4, iterations=3, input_loading=True, input_prefetch=True))
    l3 = np.flatnonzero(g3.kind == IO)
    assert g3.iteration[l3].tolist() == [0, 1] and g3.deps(l3[1]).tolist() == [l3[0]]
    # without prefetch: one load per iteration, the first exposed
    g0 = build_training(m, Strategy(dp=4, batch=4, iterations=2, input_loading=True))
    assert g0.iteration[g0.kind == IO].tolist() == [0, 1]


@pytest.mark.parametrize("io", ["1GB/s", "100MB/s"])
def test_prefetch_hides_the_input_load(io):
    """DP(20) on FRED (18 controllers at `io_bw`, fast switches): a minibatch of 20 x 10 MB loads
    in T = 20 x 10 MB / (18 io_bw); an iteration computes t_c = 2 (3 + 6) TFLOP / 0.5 PFLOP/s =
    36 ms. Without prefetch iteration 0 waits for its load and iteration 1 for the later of its
    load (T after the first) and iteration 0: T + max(t_c, T) + t_c. With prefetch iteration 0's
    input is there and iteration 1's loads during iteration 0: max(t_c, T) + t_c. At 1 GB/s
    T = 11.1 ms is hidden; at 0.1 GB/s T = 111 ms is not."""
    IN, dp = 10_000_000, 20
    m = _io_model(IN)
    io_bw = {"1GB/s": 1e9, "100MB/s": 1e8}[io]
    T = dp * IN / (18 * io_bw)
    t_c = 2 * (3e12 + 6e12) / (PEAK * EFF)
    pricer = CommPricer(parse_topology(f"fred:5x4,up=12TB/s,io={io}", "3TB/s", "0ns"), "flow")
    out = {}
    for pf in (False, True):
        g = build_training(m, Strategy(dp=dp, batch=dp, iterations=2, input_loading=True, input_prefetch=pf))
        out[pf] = simulate(g, SYS, pricer).makespan
    assert out[False] == pytest.approx(T + max(t_c, T) + t_c, rel=1e-9)
    assert out[True] == pytest.approx(max(t_c, T) + t_c, rel=1e-9)
    assert out[False] - out[True] == pytest.approx(T, rel=1e-9)


# ---------------------------------------------------------------- defaults unchanged


def assert_same_graph(a, b):
    for f in ("kind", "npu", "peer", "flops", "mem_bytes", "coll", "size", "group", "category", "phase", "iteration",
              "label", "dep_ptr", "dep_idx", "stage"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert np.array_equal(a.duration, b.duration, equal_nan=True)
    assert a.groups == b.groups and a.labels == b.labels


def test_defaults_build_the_contiguous_graph():
    """transformer(4 blocks, h 128, seq 32, vocab 500) under MP(2)-DP(2)-PP(2), M = 2, batch 8
    (microbatch 2): per microbatch and (MP rank, DP replica) 1 + 8 + 1 = 10 forward and
    1 + 3 x 8 + 2 = 27 backward compute tasks (each block part's backward in three, around
    Megatron's asynchronous TP all-reduce); 9 + 9 MP all-reduces per microbatch and DP replica,
    each of seq x h x mb x 2 bytes; one boundary: M x dp x mp p2p each way, the same bytes; one
    DP all-reduce per layer and MP rank, params / mp x 2 bytes (all DP bytes: 2 x params)."""
    mp, dp, pp, M, batch = 2, 2, 2, 2, 8
    m = transformer("t", 4, 128, 4, 32, 500)
    mb = batch // (dp * M)
    act = 32 * 128 * mb * 2
    g = build_training(m, Strategy(mp=mp, dp=dp, pp=pp, batch=batch, microbatches=M))
    assert count(g, COMPUTE) == (10 + 27) * M * mp * dp
    assert count(g, COLLECTIVE, "MP") == (9 + 9) * M * dp
    assert np.all(g.size[g.category == CATEGORIES.index("MP")] == act)
    assert count(g, P2P, "PP") == 1 * M * dp * mp * 2 and count(g, COLLECTIVE, "PP") == 0
    assert np.all(g.size[g.category == PP_CAT] == act)
    assert count(g, COLLECTIVE, "DP") == len(m.layers) * mp
    assert g.size[g.category == CATEGORIES.index("DP")].sum() == pytest.approx(2 * m.params, rel=1e-12)
    assert count(g, IO) == 0
    assert len(g) == (10 + 27) * M * mp * dp + 18 * M * dp + M * dp * mp * 2 + len(m.layers) * mp
    flops = m.fwd_flops + m.bwd_flops - m.layers[0].bwd_input_flops
    assert g.flops.sum() == pytest.approx(flops * batch, rel=1e-12)
    # spelling the defaults out changes nothing
    explicit = build_training(m, Strategy(mp=mp, dp=dp, pp=pp, batch=batch, microbatches=M, stage_layout="contiguous",
                                          pp_send="p2p", input_prefetch=False))
    assert_same_graph(g, explicit)
    assert g.meta["stage_layers"][0][0] == 0 and "stage_layout" not in g.meta


def test_config_options_reach_the_graph():
    base = {"network": {"topology": "wafer:5x4", "bandwidth": "750GB/s"},
            "workload": {"model": "transformer-17b", "batch": 10, "input_loading": True, "input_prefetch": True,
                         "parallelism": {"mp": 2, "dp": 5, "pp": 2, "microbatches": 2, "stage_layout": "interleaved",
                                         "pp_send": "multicast"}}}
    g = graph_of(TrainConfig.model_validate(base), 20)
    L = 80  # embedding, 78 blocks, head
    assert g.meta["stage_layout"] == "interleaved" and count(g, P2P) == 0
    assert count(g, COLLECTIVE, "PP") == (L - 1) * 2 * 5 * 2
    assert count(g, IO) == 0  # one iteration, prefetched: no load


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("kwargs,field", [
    (dict(stage_layout="zigzag"), "parallelism.stage_layout"), (dict(pp_send="bcast"), "parallelism.pp_send"),
    (dict(input_prefetch="maybe"), "workload.input_prefetch"),
])
def test_new_options_errors_name_the_field(kwargs, field):
    with pytest.raises(ConfigError) as e:
        Strategy(**kwargs)
    msg = str(e.value)
    assert msg.startswith(f"{field}: invalid value {next(iter(kwargs.values()))!r}; accepted:") and "\n" not in msg


@pytest.mark.parametrize("where,key,value", [
    ("parallelism", "stage_layout", "zigzag"), ("parallelism", "pp_send", "bcast"), ("workload", "input_prefetch", "maybe"),
])
def test_config_errors_name_the_field(where, key, value):
    w = {"model": "resnet50", "batch": 4, "parallelism": {"dp": 4}}
    (w["parallelism"] if where == "parallelism" else w)[key] = value
    with pytest.raises(ConfigError) as e:
        validate(TrainConfig, {"network": {"topology": "ring:4", "bandwidth": "100GB/s"}, "workload": w}, "cfg.yaml")
    field = f"workload.parallelism.{key}" if where == "parallelism" else f"workload.{key}"
    msg = str(e.value)
    assert msg.startswith(f"cfg.yaml: {field}: invalid value {value!r}; accepted:") and "\n" not in msg


@pytest.mark.parametrize("layout", ["contiguous", "interleaved"])
def test_last_bucket_is_synchronized_after_a_parameterless_layer(layout):
    """dp_bucket larger than the model: the stage's one bucket holds the 3 layers with 1000
    parameters each, 3 x 1000 x 2 bytes, and is all-reduced after the lowest layer's backward
    even though that layer owns no parameters (it used to be dropped)."""
    layers = (Layer("a", "fc", 0, 1e9, 0.0, 1e9, 10, 0),) + tuple(
        Layer(f"l{i}", "fc", 1000, 1e9, 1e9, 1e9, 10, 1000) for i in range(3))
    g = build_training(Model("m", layers), Strategy(dp=2, batch=2, dp_bucket=1e9, stage_layout=layout))
    dp = np.flatnonzero(g.category == CATEGORIES.index("DP"))
    assert len(dp) == 1 and g.size[dp[0]] == 3 * 1000 * 2 and g.name(dp[0]) == "l0..l2 DP all-reduce"
