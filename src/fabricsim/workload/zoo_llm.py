"""This year's language models by shape: Llama 3 (8B, 70B) and Llama 3.1 (405B).

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
"""

from __future__ import annotations

from .shapes import Model, TransformerShape, transformer

LLAMA3 = dict(ffn_act="swiglu", norm="rmsnorm", bias=False, tied_embeddings=False, position="rope")
SHAPES: dict[str, TransformerShape] = {
    "llama3-8b": TransformerShape(32, 4096, 32, 8192, 128256, kv_heads=8, ffn=14336, **LLAMA3),
    "llama3-70b": TransformerShape(80, 8192, 64, 8192, 128256, kv_heads=8, ffn=28672, **LLAMA3),
    "llama3-405b": TransformerShape(126, 16384, 128, 8192, 128256, kv_heads=8, ffn=53248, **LLAMA3),
}
"""Preset name -> its architecture (module doc for the sources)."""

PUBLISHED_PARAMS = {"llama3-8b": 8.03e9, "llama3-70b": 70.6e9, "llama3-405b": 405e9}
"""The parameter counts the model cards and the Llama 3 paper state (module doc)."""


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
    return transformer(name, s.layers, s.hidden, s.heads, s.seq, s.vocab, ffn=s.ffn, dtype=dtype, kv_heads=s.kv_heads,
                       ffn_act=s.ffn_act, norm=s.norm, bias=s.bias, tied_embeddings=s.tied_embeddings,
                       position=s.position)


def _preset(name: str):
    def build(dtype: str = "bf16") -> Model:
        return from_shape(name, SHAPES[name], dtype)

    build.__name__ = name.replace("-", "_")
    build.__doc__ = f"{name}: `zoo_llm.SHAPES[{name!r}]` (module doc for its source)."
    return build


LLM_MODELS = {name: _preset(name) for name in SHAPES}
"""Zoo entries (`models.MODELS`): name -> builder(dtype)."""

__all__ = ["LLM_MODELS", "PUBLISHED_PARAMS", "SHAPES", "from_shape"]
