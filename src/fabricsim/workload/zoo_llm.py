"""This year's language models by shape: Llama 3 (8B, 70B), Llama 3.1 (405B), Mixtral 8x7B and
8x22B, DeepSeek-V3.

Each preset is a `TransformerShape` taken from a published configuration, and a `Model` built from
it by `shapes.transformer`; nothing here is a total: the tests compare the sums with the published
parameter counts (within 1%).

- Llama 3 8B and 70B: Meta's released `config.json` (huggingface.co/meta-llama/Meta-Llama-3-8B and
  -70B): hidden 4096 / 8192, intermediate (ffn) 14336 / 28672, 32 / 80 layers, 32 / 64 attention
  heads, 8 key/value heads, vocabulary 128,256, RMSNorm, SwiGLU (`hidden_act: silu` with gate and
  up projections), no biases (`attention_bias: false`), `tie_word_embeddings: false`, rotary
  positions. Published sizes: 8.03B and 70.6B parameters (the model cards).
- Llama 3.1 405B: Dubey et al. 2024, "The Llama 3 Herd of Models" (arXiv 2407.21783), Table 3:
  126 layers, model dimension 16,384, FFN dimension 53,248, 128 attention heads, 8 key/value heads,
  vocabulary 128,000 (the released tokenizer holds 128,256 with the special tokens, as in its
  `config.json`); 405B parameters.
- Sequence length: 8,192 tokens, the pre-training length of Llama 3 (Dubey et al., Section 3.4.1:
  8K, extended to 128K only at the end). A config changes it by shape (`workload.model: {preset:
  llama3-70b, seq: 4096}`).
- Mixtral 8x7B: Jiang et al. 2024, "Mixtral of Experts" (arXiv 2401.04088), Table 1: dim 4096, 32
  layers, 32 heads of 128, 8 KV heads, hidden_dim 14336, vocabulary 32,000, 8 experts, top-2 in
  every layer; "47B parameters, 13B active". Mixtral 8x22B: Mistral AI's released `config.json`
  (huggingface.co/mistralai/Mixtral-8x22B-v0.1): hidden 6144, 56 layers, 48 heads, 8 KV heads,
  intermediate 16384, vocabulary 32,000, 8 experts, top-2; "141B parameters, 39B active" (Mistral
  AI's announcement). Both: SwiGLU experts, RMSNorm, no biases, untied, rotary positions.
  ASSUMPTION: sequence length 4,096 (the papers state the context, 32K and 64K, not the training length).
- DeepSeek-V3: DeepSeek-AI 2024 (arXiv 2412.19437), Section 4.2: 61 layers, hidden 7168, 128
  heads, the first three layers dense (FFN 18432, the released config's `intermediate_size`), the
  rest mixture of experts: 256 routed experts and 1 shared of 2048 (`moe_intermediate_size`),
  8 routed per token; vocabulary 129,280 (config); pre-training sequence 4,096; 671B parameters,
  37B active (the 14B multi-token-prediction module excluded, as in the 671B). Approximated at shape
  level: multi-head latent attention (queries compressed to 1536, keys and values to 512, heads of
  128 + 64 rotary) as multi-head attention of 128 heads of 56 (h/a): 205.5M parameters per layer
  against MLA's 187.1M (+1.1B of 671B, 0.17%); its attention FLOPs and the smaller KV activations
  of MLA are not modelled. Routing: the auxiliary-loss-free balancing and node-limited routing
  (at most 4 nodes per token) as balanced routing (`moe_imbalance` 1; a config can set it).
"""

from __future__ import annotations

from .shapes import Model, TransformerShape, transformer

LLAMA3 = dict(ffn_act="swiglu", norm="rmsnorm", bias=False, tied_embeddings=False, position="rope")
SHAPES: dict[str, TransformerShape] = {
    "llama3-8b": TransformerShape(32, 4096, 32, 8192, 128256, kv_heads=8, ffn=14336, **LLAMA3),
    "llama3-70b": TransformerShape(80, 8192, 64, 8192, 128256, kv_heads=8, ffn=28672, **LLAMA3),
    "llama3-405b": TransformerShape(126, 16384, 128, 8192, 128256, kv_heads=8, ffn=53248, **LLAMA3),
    "mixtral-8x7b": TransformerShape(32, 4096, 32, 4096, 32000, kv_heads=8, ffn=14336, **LLAMA3, experts=8, top_k=2,
                                     moe_layers=tuple(range(32))),
    "mixtral-8x22b": TransformerShape(56, 6144, 48, 4096, 32000, kv_heads=8, ffn=16384, **LLAMA3, experts=8, top_k=2,
                                      moe_layers=tuple(range(56))),
    "deepseek-v3": TransformerShape(61, 7168, 128, 4096, 129280, kv_heads=128, ffn=18432, **LLAMA3, experts=256,
                                    top_k=8, shared_experts=1, expert_ffn=2048, moe_layers=tuple(range(3, 61))),
}
"""Preset name -> its architecture (module doc for the sources)."""

PUBLISHED_PARAMS = {"llama3-8b": 8.03e9, "llama3-70b": 70.6e9, "llama3-405b": 405e9, "mixtral-8x7b": 46.7e9,
                    "mixtral-8x22b": 141e9, "deepseek-v3": 671e9}
"""The parameter counts the model cards and papers state (module doc)."""
PUBLISHED_ACTIVE = {"mixtral-8x7b": 12.9e9, "mixtral-8x22b": 39e9, "deepseek-v3": 37e9}
"""Parameters a token computes with, as published (Mixtral 8x7B: 12.9B, Jiang et al. Section 2.1)."""


def from_shape(name: str, shape: TransformerShape, dtype: str = "bf16") -> Model:
    """The model of a transformer shape.

    Parameters
    ----------
    name : str
        Its name in reports.
    shape : TransformerShape
        Its architecture.
    dtype : str
        Element type: fp16, bf16 or fp32.

    Returns
    -------
    Model
        Per-sequence costs (`shapes.transformer`).
    """
    s = shape
    moe = dict(experts=s.experts, top_k=s.top_k, shared_experts=s.shared_experts, expert_ffn=s.expert_ffn or None,
               moe_layers=list(s.moe_layers), capacity_factor=s.capacity_factor,
               moe_imbalance=s.moe_imbalance) if s.experts else {}
    return transformer(name, s.layers, s.hidden, s.heads, s.seq, s.vocab, ffn=s.ffn, dtype=dtype, kv_heads=s.kv_heads,
                       ffn_act=s.ffn_act, norm=s.norm, bias=s.bias, tied_embeddings=s.tied_embeddings,
                       position=s.position, **moe)


def _preset(name: str):
    def build(dtype: str = "bf16") -> Model:
        return from_shape(name, SHAPES[name], dtype)

    build.__name__ = name.replace("-", "_")
    build.__doc__ = f"{name}: `zoo_llm.SHAPES[{name!r}]` (module doc for its source)."
    return build


LLM_MODELS = {name: _preset(name) for name in SHAPES}
"""Zoo entries (`models.MODELS`): name -> builder(dtype)."""

__all__ = ["LLM_MODELS", "PUBLISHED_ACTIVE", "PUBLISHED_PARAMS", "SHAPES", "from_shape"]
