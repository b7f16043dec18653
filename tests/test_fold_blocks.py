"""Copies proved alike by symmetry (issue 42, item 1): a topology's identical blocks
(`topology.blocks`) and the fold check that uses them and the transfers' paths (`engine.fold.check_fold`).

The proof rests on two stated claims, checked here against full pricing: a router routes inside a
block alike in every block (a dgx node, a stack or torus line, a fat-tree leaf), and the schedule
builders place a group's schedule by its order and its block alone. Every registered all-reduce,
all-gather and reduce-scatter algorithm is priced on a group in one block and on its image in
another: where the schedules stay in the block (what the fold check requires), the times are equal
bit for bit. The check's counts are compared with closed forms of the strategy.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from fabricsim.collectives.registry import algorithms_for
from fabricsim.engine import CommPricer
from fabricsim.engine.fold import check_fold
from fabricsim.topology import parse_topology
from fabricsim.topology.blocks import block_classes
from fabricsim.workload.models import transformer
from fabricsim.workload.parallelism import Strategy, build_training

MODEL = transformer("small", 8, 256, 8, 128, 1024)  # 8 layers, hidden 256, 8 heads, seq 128, vocab 1024
BLOCKED = ["dgx-h100:nodes=8", "dgx-a100:nodes=8,nics=4", "stack:Switch8xSwitch8", "torus:8x8",
           "fat-tree:64,leaf=8,spines=4", "stack:Ring4xFullyConnected4xSwitch4"]


@pytest.mark.parametrize("spec,size,blocks", [
    ("dgx-h100:nodes=8", 8, 8), ("stack:Switch8xSwitch8", 8, 8), ("torus:8x8", 8, 8),
    ("fat-tree:64,leaf=8,spines=4", 8, 8), ("stack:Ring4xFullyConnected4xSwitch4", 4, 16), ("switch:8", 8, 1)])
def test_blocks_are_what_the_router_states_and_all_alike(spec, size, blocks):
    b = block_classes(parse_topology(spec))
    assert (b.size, len(b.klass)) == (size, blocks)
    assert np.all(b.klass == 0)


def test_a_mesh_wafer_states_no_blocks():
    assert block_classes(parse_topology("wafer:8x8")) is None


def test_a_degraded_link_puts_its_block_in_a_class_of_its_own():
    """Half the rate on one NVLink of node 5 (dgx) or one ring link of line 3 (torus): that block,
    and only it, is of another class; a link between blocks (a NIC's) changes no class."""
    for spec, cls, block in (("dgx-h100:nodes=8", "nvlink", 5), ("torus:8x8", None, 3)):
        topo = parse_topology(spec)
        b = block_classes(topo)
        inside = b.owner[topo.link_src] == b.owner[topo.link_dst]
        pick = inside & (b.owner[topo.link_src] == block)
        if cls is not None:
            pick &= topo.link_class == topo.link_classes.index(cls)
        bw = topo.link_bw.copy()
        bw[np.flatnonzero(pick)[0]] /= 2
        k = block_classes(replace(topo, link_bw=bw)).klass
        assert [i for i in range(len(k)) if k[i] != k[0 if block else 1]] == [block]
    topo = parse_topology("dgx-h100:nodes=8")
    bw = topo.link_bw.copy()
    bw[np.flatnonzero(topo.link_class == topo.link_classes.index("nic"))[5]] /= 2
    assert np.all(block_classes(replace(topo, link_bw=bw)).klass == 0)


@pytest.mark.parametrize("spec", BLOCKED)
@pytest.mark.parametrize("coll", ["all-reduce", "all-gather", "reduce-scatter"])
def test_every_algorithm_prices_a_group_alike_in_every_block_it_stays_in(spec, coll):
    topo = parse_topology(spec)
    b = block_classes(topo)
    s = b.size
    group, image = tuple(range(s)), tuple(range(3 * s, 4 * s))  # block 0 and block 3, same local indices
    served = 0
    for alg in algorithms_for(coll):
        base, copy = (CommPricer(topo, "analytical", {coll: alg}) for _ in range(2))
        try:
            want = base.phase_times(coll, group, 3e6)
        except Exception:  # the algorithm cannot serve this group here: nothing to compare
            continue
        stays = all(np.all(b.owner[c.schedule.topology_nodes()] == 0) for c in base.priced(coll, group).candidates)
        if not stays:
            continue
        served += 1
        assert np.array_equal(copy.phase_times(coll, image, 3e6), want), alg
        assert copy.endpoint_floor(coll, image, 3e6) == base.endpoint_floor(coll, group, 3e6), alg
    assert served >= 3


def _counts(mp: int, dp: int, pp: int) -> dict:
    """The fold check's counts for `MODEL` under MP(mp)-DP(dp)-PP(pp) when each stage's tensor-parallel
    group is one block: per stage one TP all-reduce key (copies: the dp - 1 other replicas, all proved
    by blocks, one of them priced) and two DP all-reduce keys (copies: the mp - 1 other ranks, priced);
    two pipeline transfers between the two stages (copies: mp x dp - 1 each, all proved by their paths)."""
    return dict(collectives=3 * pp, copies=pp * (dp - 1) + 2 * pp * (mp - 1), by_blocks=pp * (dp - 1),
                transfers=2, transfer_copies=2 * (mp * dp - 1), by_path=2 * (mp * dp - 1),
                priced=2 * pp * (mp - 1) + pp, unchecked=0)


@pytest.mark.parametrize("spec", ["dgx-h100:nodes=8", "torus:8x8", "stack:Switch8xSwitch8", "fat-tree:64,leaf=8,spines=4"])
def test_the_check_proves_what_symmetry_covers_and_prices_the_rest(spec):
    st = Strategy(mp=8, pp=2, dp=4, batch=16, microbatches=4)
    c = check_fold(build_training(MODEL, st, fold=True), CommPricer(parse_topology(spec), "analytical"))
    assert c.why == ""
    assert {k: getattr(c, k) for k in _counts(8, 4, 2)} == _counts(8, 4, 2)


def test_without_blocks_every_collective_copy_is_priced():
    st = Strategy(mp=8, pp=2, dp=4, batch=16, microbatches=4)
    c = check_fold(build_training(MODEL, st, fold=True), CommPricer(parse_topology("wafer:8x8"), "analytical"))
    want = _counts(8, 4, 2)
    assert (c.why, c.by_blocks, c.priced, c.by_path) == ("", 0, want["copies"], want["by_path"])


def test_a_degraded_nvlink_is_found_on_the_copy_in_that_node():
    """Node 5 (NPUs 40-47) holds stage 1 of replica 1 (Megatron's order: NPU = rank + 8 (replica +
    4 stage)): its tensor-parallel all-reduce is the copy of stage 1's (NPUs 32-39), priced because
    node 5 is of another class, and found slower."""
    topo = parse_topology("dgx-h100:nodes=8")
    nv = np.flatnonzero((topo.link_class == topo.link_classes.index("nvlink")) & (topo.link_src == 42))
    bw = topo.link_bw.copy()
    bw[nv] /= 2
    st = Strategy(mp=8, pp=2, dp=4, batch=16, microbatches=4)
    c = check_fold(build_training(MODEL, st, fold=True), CommPricer(replace(topo, link_bw=bw), "analytical"))
    assert c.why == ("all-reduce of 65536 B over NPUs [32, 33, 34, 35, 36, 37, 38, 39] is priced differently on "
                     "NPUs [40, 41, 42, 43, 44, 45, 46, 47]")


def test_a_degraded_link_on_one_pipeline_path_is_found():
    """torus:8x8, MP8-PP2 (no replicas): stage 0 is row 0, stage 1 row 1; the transfer 0 -> 8 has the
    copies r -> 8 + r. Half the rate on the link 5 -> 13: the copy 5 -> 13 is priced and found slower;
    the six others are proved by their paths."""
    topo = parse_topology("torus:8x8")
    _, link = topo.route([5], [13])
    bw = topo.link_bw.copy()
    bw[link] /= 2
    st = Strategy(mp=8, pp=2, dp=1, batch=4, microbatches=4)
    c = check_fold(build_training(MODEL, st, fold=True), CommPricer(replace(topo, link_bw=bw), "analytical"))
    assert c.why.startswith("a transfer of ") and c.why.endswith("B from NPU 0 to 8 is priced differently from NPU 5 to 13")
    assert c.by_path == 6 and c.priced == 1


def test_the_budget_bounds_what_is_priced_and_the_summary_says_what_was_not():
    st = Strategy(mp=8, pp=2, dp=4, batch=16, microbatches=4)
    c = check_fold(build_training(MODEL, st, fold=True), CommPricer(parse_topology("wafer:8x8"), "analytical"), budget=2)
    # each of the 6 collective keys prices at most 2 copies: TP keys have 3 copies, DP keys 7
    assert (c.why, c.priced, c.unchecked) == ("", 6 * 2, 2 * (3 - 2) + 4 * (7 - 2))
    assert c.summary().endswith(f"{c.unchecked} copies beyond the budget not checked")


@pytest.mark.parametrize("mp,dp,pp", [(4, 6, 2), (8, 4, 2), (2, 9, 3)])
def test_the_images_of_a_group_are_every_shift_of_it(mp, dp, pp):
    """`group_images` (shifts cut to one per distinct image along each axis) against every one of the
    mp x dp shifts applied by hand: tensor-parallel, data-parallel, cross-stage and odd groups."""
    from fabricsim.engine.fold import _Copies

    g = build_training(MODEL, Strategy(mp=mp, pp=pp, dp=dp, batch=2 * dp, microbatches=2), fold=True)
    copies = _Copies(g)
    real = g.fold.reshape(pp, dp, mp)  # [stage, replica, MP rank] -> real NPU
    rng = np.random.default_rng(7)
    groups = [real[0, 0, :], real[1, :, 0], real[:, 1, 1], np.sort(rng.choice(real.size, 5, replace=False))]
    for group in groups:
        group = np.asarray(group, dtype=np.int64)
        want = set()
        for x in range(mp):
            for y in range(dp):
                perm = np.empty(real.size, dtype=np.int64)
                perm[real.ravel()] = np.roll(np.roll(real, -y, axis=1), -x, axis=2).ravel()
                img = perm[group]
                want.add(tuple(np.sort(img).tolist() if np.all(np.diff(group) > 0) else img.tolist()))
        want.discard(tuple(group.tolist()))
        assert {tuple(r) for r in copies.group_images(group).tolist()} == want


@pytest.mark.slow
def test_sc21s_529b_job_folds_with_a_leaf_per_replica():
    """configs/megatron/sc21-529b-interleaved.yaml (2,520 GPUs, 35 nodes per replica and per rail leaf):
    every copy proved or priced alike; with 21 nodes per leaf the replicas straddle leaves and a
    stage-to-stage transfer crossing a spine is found (one more hop)."""
    from fabricsim.train import graph_of, load_train_config, pricer_of, system_of

    cfg = load_train_config(str(Path(__file__).resolve().parents[1] / "configs/megatron/sc21-529b-interleaved.yaml"))
    system = system_of(cfg)
    g = graph_of(cfg, 2520, fold=True)
    for spec, folds in (("dgx-a100:nodes=315,leaf=35", True), ("dgx-a100:nodes=315,leaf=21", False)):
        topo = parse_topology(spec)
        pricer = pricer_of(cfg, topo).for_system(system.endpoint, system.npu)
        why = check_fold(g, pricer).why
        assert (why == "") == folds, why
        if not folds:
            assert why.startswith("a transfer of ") and "is priced differently from NPU" in why


def test_expert_parallel_groups_are_checked_on_their_own_copies_and_fold_exactly():
    """MP1-PP4-DP16 with EP8 on 64 GPUs of dgx-h100 (NPU = stage + 4 x replica): an all-to-all group is 8
    consecutive replicas, which sit on 4 nodes for replicas 0-7 and on 4 others for 8-15. Its copies
    are the groups of 8 replicas (shifts by multiples of 8, `meta["replica_period"]`), not every
    replica shift: shifting by 1 would give NPUs no group of the job holds. Folded equals unfolded."""
    from fabricsim.engine import simulate
    from fabricsim.system import NPU, Scheduling, System

    moe = transformer("moe", 4, 256, 8, 128, 1000, ffn=512, kv_heads=4, ffn_act="swiglu", norm="rmsnorm", bias=False,
                      tied_embeddings=False, position="rope", experts=8, top_k=2)
    st = Strategy(mp=1, pp=4, dp=16, ep=8, batch=32, microbatches=2)
    pr = CommPricer(parse_topology("dgx-h100:nodes=8"), "analytical")
    system = System(NPU(1e14, 2e12, 0.5), scheduling=Scheduling())
    gf, gu = build_training(moe, st, fold=True), build_training(moe, st)
    assert set(gf.meta["replica_period"].values()) == {8}
    assert check_fold(gf, pr.for_system(system.endpoint, system.npu)).why == ""
    assert simulate(gf, system, pr).iteration_time == simulate(gu, system, pr).iteration_time
    every_shift = dict(gf.meta, replica_period={})  # as if every replica shift made a copy: found different
    assert check_fold(replace(gf, meta=every_shift), pr.for_system(system.endpoint, system.npu)).why.startswith("all-to-all")
