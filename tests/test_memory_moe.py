"""The memory model of mixture-of-experts blocks (`workload.memory_moe`, `stage_memory`'s MoE keywords).

Every expectation is written out here from closed forms, not taken from the code under test:

- parameters of one MoE block on one NPU of t tensor, ep expert-parallel and etp expert-tensor ranks,
  with w = k h / a and m = 3 (swiglu): attention (h (h + 2w) + h^2) / t, the router h E whole on
  every rank, E / ep routed experts of m h f_e / etp each, the shared experts S m h f_e / t, two
  RMSNorms 2h;
- Mixtral 8x7B (L 32, h 4096, a 32, k 8, f_e 14336, E 8, top-2, V 32000, swiglu, rmsnorm, no biases,
  untied, rope): 32 (4096 x 6144 + 4096^2 + 4096 x 8 + 8 x 3 x 4096 x 14336 + 2 x 4096)
  + 2 x 32000 x 4096 + 4096 = 46,702,792,704, the published 46.7B;
- ZeRO shards the routed experts over the expert-data-parallel group d / ep (etp = t), the rest over d;
- activations of one MoE block (`moe_block_bytes`): the dense block's attention and norms, the router
  input e sbh/r and fp32 probabilities 4 sbE/r, T = s b k q etp / t routed token copies (q the
  imbalance, capped by the capacity factor) stored as the experts' input e T h and their fc1 output
  and fc2 input m e T f_e / etp, the combine output e sbh/r and the shared experts m e s b S f_e / t.
"""

from __future__ import annotations

import pytest

from fabricsim.errors import ConfigError
from fabricsim.workload.memory_model import shape_arguments, stage_memory
from fabricsim.workload.transformer_shape import TransformerShape

H, A, K, FE, E, V, L = 4096, 32, 8, 14336, 8, 32000, 32  # Mixtral 8x7B
W = K * H // A
MIXTRAL = TransformerShape(L, H, A, 4096, V, kv_heads=K, ffn=FE, ffn_act="swiglu", norm="rmsnorm", bias=False,
                           tied_embeddings=False, position="rope", experts=E, top_k=2, moe_layers=tuple(range(L)))


def mixtral_block(t=1, ep=1, etp=1):
    """Parameters of one Mixtral block on one NPU (module doc)."""
    return (H * (H + 2 * W) + H * H) // t + H * E + (E // ep) * 3 * H * FE // etp + 2 * H


def mixtral_rank(t=1, ep=1, etp=1):
    """Parameters on one NPU with one pipeline stage: blocks, embedding and untied head rows, final norm."""
    return L * mixtral_block(t, ep, etp) + 2 * (V // t) * H + H


def test_mixtral_8x7b_has_its_published_parameters_at_tp1_ep1():
    assert mixtral_rank() == 46_702_792_704 == MIXTRAL.params
    kw = shape_arguments(MIXTRAL)
    assert (kw["experts"], kw["top_k"], kw["expert_ffn"], kw["moe_layers"]) == (E, 2, 0, tuple(range(L)))
    (st,) = stage_memory(**kw)
    assert st.params == 46_702_792_704
    assert st.expert_params == L * E * 3 * H * FE


@pytest.mark.parametrize("t,ep,dp", [(1, 8, 8), (2, 1, 1), (2, 2, 2), (2, 8, 8)])
def test_mixtral_parameters_per_rank_under_expert_and_tensor_parallelism(t, ep, dp):
    (st,) = stage_memory(**shape_arguments(MIXTRAL), tp=t, dp=dp, ep=ep, etp=t)
    assert st.params == mixtral_rank(t, ep, t)
    assert st.expert_params == L * (E // ep) * 3 * H * FE // t
    if (t, ep) == (1, 8):  # one expert per rank: 32 (41,943,040 + 32,768 + 176,160,768 + 8,192) + 262,148,096
        assert st.params == 7_242_780_672


def test_etp_defaults_to_tp_and_can_be_one():
    kw = shape_arguments(MIXTRAL)
    assert stage_memory(**kw, tp=2)[0].params == mixtral_rank(2, 1, 2)
    assert stage_memory(**kw, tp=2, etp=1)[0].params == mixtral_rank(2, 1, 1)  # experts whole on each tensor rank


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_expert_states_are_sharded_over_the_expert_data_parallel_group(zero):
    d, ep, t = 8, 4, 1
    (st,) = stage_memory(**shape_arguments(MIXTRAL), dp=d, ep=ep, etp=t, zero=zero)
    expert = L * (E // ep) * 3 * H * FE
    dense = mixtral_rank(1, ep) - expert
    assert (st.params, st.expert_params) == (dense + expert, expert)
    edp = d // ep  # 2

    def sharded(n, stage):
        return dense * n / (d if zero >= stage else 1) + expert * n / (edp if zero >= stage else 1)
    assert st.weights == sharded(2, 3)
    assert st.gradients == sharded(4, 2)
    assert st.optimizer == sharded(12, 1)
    if zero == 1:  # Adam's 12 bytes: the dense part over 8 replicas, the experts' over 2
        assert st.optimizer == 12 * dense / 8 + 12 * expert / 2


def test_moe_blocks_counted_on_the_stages_that_hold_them():
    # 4 blocks, experts in blocks 1 and 3 (every second), two stages of 2: one MoE block each;
    # stage_blocks [1, 3]: stage 0 dense only, stage 1 both MoE blocks
    h, a, f, fe, e_, s, v = 64, 4, 256, 96, 4, 16, 100
    shape = TransformerShape(4, h, a, s, v, kv_heads=a, ffn=f, experts=e_, top_k=1, expert_ffn=fe, moe_layers=(1, 3))
    dense = 12 * h * h + 13 * h  # GPT's block: 4h^2 + 2hf + f + 9h with f = 4h
    moe = 4 * h * h + 4 * h + 4 * h + h * e_ + e_ * (2 * h * fe + fe + h)  # attention, its biases, norms, experts
    assert shape.block_params(1) == moe and shape.block_params(0) == dense
    kw = shape_arguments(shape)
    st = stage_memory(**kw, pp=2, microbatches=2)
    assert [x.params for x in st] == [dense + moe + v * h + s * h, dense + moe + v * h + 2 * h]
    st = stage_memory(**kw, pp=2, microbatches=2, stage_blocks=[1, 3])
    assert [x.params for x in st] == [dense + v * h + s * h, dense + 2 * moe + v * h + 2 * h]
    assert [x.expert_params for x in st] == [0, 2 * e_ * (2 * h * fe + fe + h)]


def moe_block_bytes(s, b, h, a, k, fe, E, top_k, S, t, etp, e, sp, recompute, dropout, act, q, c):
    """Stored bytes of one MoE block, one microbatch, one NPU, term by term (module doc)."""
    w = k * h // a
    r = t if sp else 1
    mask = 1 if dropout else 0
    m = 3 if act == "swiglu" else 2
    if recompute == "full":
        return e * s * b * h / r
    attention = (e * s * b * h / r + e * s * b * h / t + 2 * e * s * b * w / t + e * s * b * h / t
                 + mask * s * b * h / r)  # QKV input, Q, K and V, projection input, dropout mask
    scores = (e + mask * (1 + e)) * a * s * s * b / t  # softmax output, its mask and dropout output
    norms = 2 * e * s * b * h / r
    router = e * s * b * h / r + 4 * s * b * E / r  # its input, fp32 probabilities
    tokens = s * b * top_k * (min(q, c) if c > 0 else q) * etp / t  # routed copies to this rank's experts
    experts = e * tokens * h + m * e * tokens * fe / etp  # experts' input, fc1 output and fc2 input
    combine = e * s * b * h / r
    shared = m * e * s * b * S * fe / t
    after = mask * s * b * h / r  # the MLP's dropout mask
    return (attention + norms + router + experts + combine + shared + after
            + (0 if recompute == "selective" else scores))


SMALL = dict(s=32, b=2, h=64, a=8, k=2, fe=96, E=8)


@pytest.mark.parametrize("t,sp,recompute,dropout,act,q,c,S", [
    (1, False, "none", False, "swiglu", 1.0, 0.0, 0),
    (2, True, "none", False, "swiglu", 1.5, 0.0, 1),
    (2, True, "selective", True, "gelu", 2.0, 1.25, 2),
    (2, False, "none", True, "gelu", 1.0, 1.5, 0),
    (1, False, "full", False, "swiglu", 1.2, 0.0, 1),
])
def test_activations_of_one_moe_block(t, sp, recompute, dropout, act, q, c, S):
    g = SMALL
    s, b, h, v = g["s"], g["b"], g["h"], 100
    kw = dict(layers=1, hidden=h, heads=g["a"], kv_heads=g["k"], seq=s, vocab=v, ffn=128, microbatch=b, tp=t,
              sequence_parallel=sp, recompute=recompute, dropout=dropout, ffn_act=act, norm="rmsnorm",
              experts=g["E"], top_k=2, shared_experts=S, expert_ffn=g["fe"], capacity_factor=c, moe_imbalance=q)
    (st,) = stage_memory(**kw)
    r = t if sp else 1
    e = 2
    embedding = (s * b * h / r if dropout else 0)  # its dropout mask
    head = 2 * e * s * b * h / r + 4 * s * b * (v // t)  # final norm and output inputs, fp32 logits
    block = moe_block_bytes(s, b, h, g["a"], g["k"], g["fe"], g["E"], 2, S, t, t, e, sp, recompute, dropout, act, q, c)
    assert st.activations == pytest.approx(block + embedding + head, rel=1e-12)


def test_small_moe_block_numbers():
    # t 1, no sp, swiglu, no dropout, q 1: sbh = 4096; attention 2(4096 + 4096 + 2 x 1024 + 4096) = 28672,
    # norms 16384, router 8192 + 4 x 64 x 8 = 10240, tokens 128: 2 x 128 x 64 + 3 x 2 x 128 x 96 = 90112,
    # combine 8192, scores 2 x 8 x 32^2 x 2 = 32768: 186,368
    g = SMALL
    assert moe_block_bytes(g["s"], g["b"], g["h"], g["a"], g["k"], g["fe"], g["E"], 2, 0, 1, 1, 2, False, "none",
                           False, "swiglu", 1.0, 0.0) == 186_368


def test_dense_results_unchanged_by_the_moe_defaults():
    kw = dict(layers=4, hidden=64, heads=4, seq=32, vocab=100, pp=2, dp=2, microbatches=4, zero=1, tp=2,
              sequence_parallel=True)
    plain = stage_memory(**kw)
    assert stage_memory(**kw, experts=0, ep=1, etp=2) == plain
    assert stage_memory(**kw, experts=4, moe_layers=()) == plain  # experts in no block: dense
    assert all(x.expert_params == 0 for x in plain)
    dense = TransformerShape(2, 64, 4, 32, 100, kv_heads=4, ffn=256)
    assert "experts" not in shape_arguments(dense)


@pytest.mark.parametrize("more,field", [
    (dict(ep=3, dp=3), "ep"),  # 3 does not divide 8 experts
    (dict(ep=4, dp=2), "ep"),  # 4 does not divide dp x tp / etp = 2
    (dict(tp=2, etp=4), "etp"),
    (dict(top_k=9), "top_k"),
    (dict(moe_layers=(32,)), "moe_layers"),
    (dict(moe_imbalance=0.5), "moe_imbalance"),
])
def test_bad_moe_arguments_name_their_field(more, field):
    with pytest.raises(ConfigError) as err:
        stage_memory(**{**shape_arguments(MIXTRAL), **more})
    assert err.value.field == field
