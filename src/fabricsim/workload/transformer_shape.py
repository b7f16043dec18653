"""`TransformerShape`: a decoder-only transformer's architecture as its model card states it, dense
or mixture-of-experts, and the parameter counts that follow from it (`shapes.transformer` builds a
model from it).

Dense (h hidden, a heads, k kv_heads, f ffn, m = 2 MLP matrices for gelu and 3 for swiglu): per
block QKV h (h + 2kh/a), output projection h^2, MLP m h f weights; biases h + 2kh/a, h, (m - 1) f
and h when `bias`; two norms of 2h (layernorm) or h (rmsnorm).

Mixture of experts (GShard / Switch / Mixtral / DeepSeek-MoE): in the blocks listed in `moe_layers`
the MLP is replaced by a router (h x E, no bias) and E routed experts plus `shared_experts` always-on
experts, each an MLP of `expert_ffn` (m h f_e weights, and its biases when `bias`). Each token goes
to its `top_k` routed experts and to every shared one, so a block holds
attention + router + (E + shared) experts of parameters and computes with attention + router +
(top_k + shared) experts of them (`block_params`, `active_params`).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from ..errors import ConfigError

FFN_ACTS = ("gelu", "swiglu")
NORMS = ("layernorm", "rmsnorm")
POSITIONS = ("learned", "rope")


@dataclass(frozen=True)
class TransformerShape:
    """The architecture of a decoder-only transformer (module doc).

    Parameters
    ----------
    layers, hidden, heads, seq, vocab : int
        Transformer blocks, hidden size h, attention (query) heads a, sequence length s, vocabulary.
    kv_heads : int
        Key/value heads k (grouped-query attention; k = a: multi-head, k = 1: multi-query); a
        divisor of `heads`.
    ffn : int
        MLP inner size f (of the dense blocks).
    ffn_act : str
        gelu (two matrices, h x f and f x h) or swiglu (three: gate and up h x f, down f x h).
    norm : str
        layernorm (weight and bias, 2h per norm) or rmsnorm (weight only, h).
    bias : bool
        The linear layers have biases (GPT-2/3: yes; Llama, Mixtral: no).
    tied_embeddings : bool
        The logits reuse the token embedding (no parameters of their own).
    position : str
        learned (a position embedding of s x h) or rope (rotary: no parameters).
    experts : int
        Routed experts E of a mixture-of-experts block (0: a dense model).
    top_k : int
        Routed experts per token.
    shared_experts : int
        Experts every token goes through besides its routed ones (DeepSeek-MoE).
    expert_ffn : int
        Inner size of one expert's MLP (0: `ffn`).
    moe_layers : tuple of int
        The 0-based blocks whose MLP is a mixture of experts (empty for a dense model).
    capacity_factor : float
        Tokens an expert takes at most, as a multiple of its even share (0: dropless, every token
        routed).
    moe_imbalance : float
        The busiest expert's tokens over the mean (>= 1; 1: perfectly balanced routing).
    """

    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    kv_heads: int
    ffn: int
    ffn_act: str = "gelu"
    norm: str = "layernorm"
    bias: bool = True
    tied_embeddings: bool = True
    position: str = "learned"
    experts: int = 0
    top_k: int = 2
    shared_experts: int = 0
    expert_ffn: int = 0
    moe_layers: tuple[int, ...] = ()
    capacity_factor: float = 0.0
    moe_imbalance: float = 1.0

    @property
    def head_dim(self) -> int:
        """Elements per attention head, h / a."""
        return self.hidden // self.heads

    @property
    def qkv_out(self) -> int:
        """Outputs of the QKV projection: queries h plus keys and values 2 k h / a."""
        return self.hidden + 2 * self.kv_heads * self.head_dim

    @property
    def mlp_mats(self) -> int:
        """Matrices of h x f in the MLP: 2 (gelu) or 3 (swiglu)."""
        return 3 if self.ffn_act == "swiglu" else 2

    @property
    def norm_params(self) -> int:
        """Parameters of one norm: 2h (layernorm) or h (rmsnorm)."""
        return (2 if self.norm == "layernorm" else 1) * self.hidden

    @property
    def moe_ffn(self) -> int:
        """One expert's inner size."""
        return self.expert_ffn or self.ffn

    def is_moe(self, block: int) -> bool:
        """Whether block `block` (0-based) is a mixture of experts."""
        return self.experts > 0 and block in self.moe_layers

    def _attention(self) -> tuple[int, int]:
        """(weights, biases) of the attention part: QKV and the output projection."""
        h = self.hidden
        return h * self.qkv_out + h * h, (self.qkv_out + h if self.bias else 0)

    def _mlp(self, f: int) -> tuple[int, int]:
        """(weights, biases) of one MLP of inner size f."""
        return self.mlp_mats * self.hidden * f, ((self.mlp_mats - 1) * f + self.hidden if self.bias else 0)

    def block_weights(self, block: int | None = None) -> int:
        """Weight elements of a block's linear layers (all experts and the router for a mixture of
        experts; default: a dense block)."""
        aw, _ = self._attention()
        if block is not None and self.is_moe(block):
            ew, _ = self._mlp(self.moe_ffn)
            return aw + self.hidden * self.experts + (self.experts + self.shared_experts) * ew
        return aw + self._mlp(self.ffn)[0]

    def block_params(self, block: int | None = None) -> int:
        """Parameters of a block: its weights, biases and two norms (default: a dense block)."""
        _, ab = self._attention()
        if block is not None and self.is_moe(block):
            _, eb = self._mlp(self.moe_ffn)
            biases = ab + (self.experts + self.shared_experts) * eb
        else:
            biases = ab + self._mlp(self.ffn)[1]
        return self.block_weights(block) + biases + 2 * self.norm_params

    def active_params(self, block: int | None = None) -> int:
        """Parameters one token computes with in a block: all of a dense block's; in a mixture of
        experts the router, its top_k routed experts and the shared ones."""
        if block is None or not self.is_moe(block):
            return self.block_params(block)
        aw, ab = self._attention()
        ew, eb = self._mlp(self.moe_ffn)
        return aw + ab + self.hidden * self.experts + (self.top_k + self.shared_experts) * (ew + eb) + 2 * self.norm_params

    def embedding_params(self) -> int:
        """Token embedding v h, plus s h for learned positions."""
        return self.vocab * self.hidden + (self.seq * self.hidden if self.position == "learned" else 0)

    def head_params(self) -> int:
        """The final norm, plus v h logits when the embedding is not tied."""
        return self.norm_params + (0 if self.tied_embeddings else self.vocab * self.hidden)

    @property
    def params(self) -> int:
        """All parameters: embedding, blocks and head."""
        return self.embedding_params() + sum(self.block_params(i) for i in range(self.layers)) + self.head_params()

    @property
    def active(self) -> int:
        """Parameters one token computes with: embedding, the blocks' active ones and head."""
        return self.embedding_params() + sum(self.active_params(i) for i in range(self.layers)) + self.head_params()


def _positive(field_name: str, value) -> int:
    """`value` when it is an integer >= 1, else ConfigError naming `field_name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ConfigError(field_name, value, "accepted: an integer >= 1")
    return int(value)


def moe_layer_list(moe_layers, layers: int) -> tuple[int, ...]:
    """The blocks a `moe_layers` value names: "all", an integer N (every N-th block: N - 1, 2N - 1,
    ... as GShard and Switch alternate dense and expert blocks), or a list of 0-based blocks.

    Parameters
    ----------
    moe_layers : str, int or list of int
    layers : int
        Blocks of the model.

    Returns
    -------
    tuple of int
        Sorted; ConfigError naming `moe_layers` otherwise.
    """
    accepted = f"accepted: all, an integer N >= 1 (every N-th block), or a list of blocks 0..{layers - 1}"
    if moe_layers == "all":
        return tuple(range(layers))
    if isinstance(moe_layers, numbers.Integral) and not isinstance(moe_layers, bool) and moe_layers >= 1:
        return tuple(range(int(moe_layers) - 1, layers, int(moe_layers)))
    if isinstance(moe_layers, (list, tuple)) and moe_layers and all(
            isinstance(i, numbers.Integral) and not isinstance(i, bool) and 0 <= i < layers for i in moe_layers):
        return tuple(sorted({int(i) for i in moe_layers}))
    raise ConfigError("moe_layers", moe_layers, accepted)


def checked_shape(layers, hidden, heads, seq, vocab, kv_heads, ffn, ffn_act, norm, bias, tied_embeddings, position,
                  experts=0, top_k=2, shared_experts=0, expert_ffn=None, moe_layers="all", capacity_factor=0.0,
                  moe_imbalance=1.0) -> TransformerShape:
    """The `TransformerShape` of `shapes.transformer`'s arguments; ConfigError naming the first bad one."""
    layers, hidden, heads, seq, vocab = (_positive(f, v) for f, v in (
        ("layers", layers), ("hidden", hidden), ("heads", heads), ("seq", seq), ("vocab", vocab)))
    ffn = 4 * hidden if ffn is None else _positive("ffn", ffn)
    kv_heads = heads if kv_heads is None else _positive("kv_heads", kv_heads)
    if hidden % heads:
        raise ConfigError("heads", heads, f"accepted: a divisor of hidden = {hidden}")
    if heads % kv_heads:
        raise ConfigError("kv_heads", kv_heads, f"accepted: a divisor of heads = {heads}")
    for field_name, value, accepted in (("ffn_act", ffn_act, FFN_ACTS), ("norm", norm, NORMS),
                                        ("position", position, POSITIONS)):
        if value not in accepted:
            raise ConfigError(field_name, value, "accepted: " + ", ".join(accepted))
    for field_name, value in (("bias", bias), ("tied_embeddings", tied_embeddings)):
        if not isinstance(value, bool):
            raise ConfigError(field_name, value, "accepted: true or false")
    moe = _checked_moe(layers, experts, top_k, shared_experts, expert_ffn, moe_layers, capacity_factor, moe_imbalance)
    return TransformerShape(layers, hidden, heads, seq, vocab, kv_heads, ffn, ffn_act, norm, bias, tied_embeddings,
                            position, **moe)


def _checked_moe(layers, experts, top_k, shared_experts, expert_ffn, moe_layers, capacity_factor, moe_imbalance) -> dict:
    """The mixture-of-experts fields, checked (ConfigError naming the field); a dense model's when
    experts is 0."""
    if isinstance(experts, bool) or not isinstance(experts, numbers.Integral) or experts < 0:
        raise ConfigError("experts", experts, "accepted: an integer >= 0 (0: a dense model)")
    if experts == 0:
        return {}
    top_k = _positive("top_k", top_k)
    if top_k > experts:
        raise ConfigError("top_k", top_k, f"accepted: at most experts = {experts}")
    if isinstance(shared_experts, bool) or not isinstance(shared_experts, numbers.Integral) or shared_experts < 0:
        raise ConfigError("shared_experts", shared_experts, "accepted: an integer >= 0")
    expert_ffn = 0 if expert_ffn is None else _positive("expert_ffn", expert_ffn)
    for field_name, value, least in (("capacity_factor", capacity_factor, 0.0), ("moe_imbalance", moe_imbalance, 1.0)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= least:
            raise ConfigError(field_name, value, f"accepted: a number >= {least:g}"
                              + (" (0: dropless)" if field_name == "capacity_factor" else ""))
    if 0 < capacity_factor < 1:
        raise ConfigError("capacity_factor", capacity_factor, "accepted: 0 (dropless) or a number >= 1")
    return dict(experts=int(experts), top_k=top_k, shared_experts=int(shared_experts), expert_ffn=expert_ffn,
                moe_layers=moe_layer_list(moe_layers, layers), capacity_factor=float(capacity_factor),
                moe_imbalance=float(moe_imbalance))


__all__ = ["FFN_ACTS", "NORMS", "POSITIONS", "TransformerShape", "checked_shape", "moe_layer_list"]
