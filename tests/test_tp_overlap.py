"""Megatron-LM's asynchronous tensor-parallel communication in backward (`parallelism.tp_overlap`,
`workload.plan`, `kernels.backward_overlap`): the column linear's input-gradient collective runs
beside its weight-gradient matmul, and the layer norm's backward waits for both.

Expected relations come from Megatron-LM's `LinearWithGradAccumulationAndAsyncCommunication.backward`
(written here), not from the code under test."""

from __future__ import annotations

import numpy as np
import pytest

from fabricsim.config import validate
from fabricsim.errors import ConfigError
from fabricsim.system.compute import Gemm, Memory
from fabricsim.train import TrainConfig, run_train
from fabricsim.workload.kernels import attention_forward, backward, backward_overlap, mlp_forward


def config(sp: bool, overlap: bool = True, **par):
    return validate(TrainConfig, config_dict(sp, overlap, **par), "t.yaml", context={"source": "t.yaml"})


def config_dict(sp: bool, overlap: bool = True, **par) -> dict:
    return {"network": {"topology": "switch:4", "bandwidth": "50GB/s", "latency": "1us", "model": "analytical"},
         "system": {"npu": {"gpu": "a100", "memory_check": "ignore"},
                    "scheduling": {"comm_streams": "per-category"}},
         "workload": {"model": {"layers": 2, "hidden": 1024, "heads": 16, "seq": 512, "vocab": 1024},
                      "batch": 2, "parallelism": {"mp": 4, "microbatches": 1, "sequence_parallel": sp,
                                                  "tp_overlap": overlap, **par}},
            "output": {"trace": False, "plot": False}}


def tasks(res, prefix: str):
    """{label: (start, end)} of the tasks of NPU 0 whose label starts with `prefix`."""
    g = res.graph
    out = {}
    for i in np.flatnonzero(g.npu == 0) if hasattr(g, "npu") else []:
        lab = g.labels[g.label[i]]
        if lab.startswith(prefix):
            out[lab] = (float(res.start[i]), float(res.end[i]))
    return out


def collectives(res, prefix: str):
    g = res.graph
    return {g.labels[g.label[i]]: (float(res.start[i]), float(res.end[i]))
            for i in range(len(g)) if g.labels[g.label[i]].startswith(prefix) and g.labels[g.label[i]].endswith(
                ("all-reduce", "reduce-scatter", "all-gather"))}


def test_backward_cut_is_linear_input_gradient_weight_gradient_layer_norm():
    for fwd in (attention_forward(2, 256, 512, 8, 4), mlp_forward(2, 256, 512, 2048, 4)):
        main, dx, dw, ln = backward_overlap(fwd)
        col = fwd[1]  # the column-parallel linear, Y = X W: dX = dY W^T, dW = X^T dY
        assert dx == (Gemm(col.m, col.k, col.n),) and dw == (Gemm(col.k, col.n, col.m),)
        assert ln == (Memory(fwd[0].bwd_nbytes, f"{fwd[0].name} backward"),)
        assert main + dx + dw + ln == backward(fwd)
    with pytest.raises(ConfigError):
        backward_overlap((Gemm(2, 2, 2),))


@pytest.mark.parametrize("sp", [False, True], ids=["all-reduce", "sequence-parallel"])
def test_gradient_collective_runs_beside_the_weight_gradient(sp):
    res = run_train(config(sp)).result
    coll = "reduce-scatter" if sp else "all-reduce"
    for part in ("block1.mlp", "block1.attn"):
        t = tasks(res, f"B0 {part}")
        # without sequence parallelism the backward up to the input gradient is one task
        ig, wg, ln = t[f"B0 {part} ig" if sp else f"B0 {part}"], t[f"B0 {part} wg"], t[f"B0 {part} ig LN"]
        c = collectives(res, f"B0 {part} MP {coll}")
        (start, end), = c.values()
        gathered = ig[1]
        if sp:  # the input is gathered again beside the input-gradient matmul, launched before it
            (gs, gathered), = collectives(res, f"B0 {part} input MP all-gather").values()
            assert gs == pytest.approx(ig[0]) and t[f"B0 {part}"][1] == pytest.approx(ig[0])
        # Megatron: the collective is launched once the input gradient (and the gather) are done, and
        # the weight gradient, which needs the gathered input, starts beside it
        assert start == pytest.approx(max(ig[1], gathered)) and wg[0] == pytest.approx(start)
        assert wg[1] > start  # they overlap
        assert ln[0] == pytest.approx(max(end, wg[1]))  # the layer norm waits for both


def test_overlap_off_puts_the_collective_after_the_whole_backward():
    on, off = run_train(config(False)).result, run_train(config(False, overlap=False)).result
    t = tasks(off, "B0 block1.mlp")
    assert set(t) == {"B0 block1.mlp"}  # one task
    (start, _), = collectives(off, "B0 block1.mlp MP all-reduce").values()
    assert start == pytest.approx(t["B0 block1.mlp"][1])
    assert on.iteration_time < off.iteration_time
    # the same work either way: FLOPs are split, not added
    assert on.model_flop_per_iteration == pytest.approx(off.model_flop_per_iteration, rel=1e-12)


def test_tp_overlap_must_be_a_bool():
    with pytest.raises(ConfigError) as e:
        config(False, overlap="yes")
    assert "tp_overlap" in str(e.value.field)


def test_fused_attention_needs_measured_rates():
    d = config_dict(False, attention="fused")
    d["system"]["npu"]["gpu"] = "a100"
    with pytest.raises(ConfigError) as e:
        validate(TrainConfig, d, "t.yaml", context={"source": "t.yaml"})
    assert "attention" in str(e.value.field) and "h100" in str(e.value)
    d["system"]["npu"]["gpu"] = "h100"
    from fabricsim.system.compute import Attention

    res = run_train(validate(TrainConfig, d, "t.yaml", context={"source": "t.yaml"})).result
    kernels = [k for w in res.graph.works for k in w]
    assert any(isinstance(k, Attention) and not k.backward for k in kernels)
    assert any(isinstance(k, Attention) and k.backward for k in kernels)
    assert not any(isinstance(k, Memory) and k.name.startswith("softmax") for k in kernels)
