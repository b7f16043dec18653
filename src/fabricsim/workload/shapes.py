"""Layers and models from layer shapes: the `Layer` and `Model` types and the shape -> layer math
(a matmul, a convolution, a batch norm, an LSTM, a GPT-style transformer by its shape).

The zoo (`workload.models`: ResNets, GPT-3, GNMT, DLRM, ...) and the TopoOpt workloads
(`workload.zoo_topoopt`) are built from these; they live apart so that the arithmetic of one layer
is read in one place, and the presets are read as lists of shapes.

Conventions:
- A `Layer` holds the costs of ONE sample (one image, one sentence pair, one sequence).
  FLOPs count a multiply-add as 2 FLOPs.
- Backward = input-gradient + weight-gradient. For matmul/conv layers each is taken equal to
  the forward FLOPs (so backward = 2x forward). Layers that need no input gradient (the
  first conv of a ResNet, embedding lookups) have `bwd_input_flops = 0`.
- `activation_elems` is the number of elements of the layer's output for one sample.
- `params` counts the trainable parameters owned by the layer; `weight_elems` counts the
  weight elements the layer reads in the forward pass. They differ only for tied weights
  (the transformer head reads the embedding matrix but owns no parameters).
- `dtype` ("fp16", "bf16", "fp32") sets bytes per element for parameters, gradients and
  activations (`DTYPES`); a transformer's may be "fp8" (`MODEL_DTYPES`): its blocks' GEMMs in FP8
  (`workload.fp8`), everything stored or sent in bf16.
- `input_bytes`: one sample's input as read from storage: 3x224x224 pixels in `dtype` for the
  ResNets, int32 token ids (4 x seq) for transformers; 0 where not modelled (GNMT, DLRM).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..errors import ConfigError
from .transformer_shape import FFN_ACTS, NORMS, POSITIONS, TransformerShape, checked_shape  # noqa: F401 (re-exported)

DTYPES = {"fp16": 2, "bf16": 2, "fp32": 4}
_DTYPE_ACCEPTED = "accepted: " + ", ".join(DTYPES)
# A model's training precision -> bytes per element of what it stores and sends (`Model.dtype_bytes`).
# fp8 is Transformer Engine's FP8 training (`workload.fp8`): only the transformer blocks' GEMM operands
# are FP8 (`system.compute.FP8_BYTES`); weights, activations, gradients and communication stay bf16, so
# every reader of dtype bytes keeps reading activation bytes. Not in DTYPES: no tensor is stored as fp8
# there (`grad_dtype` and the storage types of other workloads take DTYPES only).
MODEL_DTYPES = {**DTYPES, "fp8": 2}


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of `dtype`.

    Parameters
    ----------
    dtype : str
        fp16, bf16 or fp32.

    Returns
    -------
    int
        2 or 4; ConfigError for an unknown name.
    """
    if dtype not in DTYPES:
        raise ConfigError("dtype", dtype, _DTYPE_ACCEPTED)
    return DTYPES[dtype]


@dataclass(frozen=True)
class Layer:
    """One layer's costs for ONE sample (one sequence for transformers); FLOPs with MAC = 2.

    Parameters
    ----------
    name : str
        Layer name (`layer1.0.conv2`, `block17`).
    kind : str
        conv, batchnorm, fc, embedding, transformer_block, lm_head, lstm, attention, interaction.
    params : int
        Trainable parameters the layer owns (elements).
    fwd_flops : float
        Forward FLOPs.
    bwd_input_flops : float
        Backward FLOPs of the input gradient (0 where none is needed).
    bwd_weight_flops : float
        Backward FLOPs of the weight gradient.
    activation_elems : int
        Elements of the layer's output.
    weight_elems : int
        Weight elements the forward pass reads (differs from `params` for tied weights).
    """

    name: str
    kind: str
    params: int
    fwd_flops: float
    bwd_input_flops: float
    bwd_weight_flops: float
    activation_elems: int
    weight_elems: int

    @property
    def bwd_flops(self) -> float:
        """Backward FLOPs: input plus weight gradient."""
        return self.bwd_input_flops + self.bwd_weight_flops

    def scaled(self, b: int) -> Layer:
        """This layer for a batch of `b` samples: FLOPs and activations x b, weights unchanged.

        Parameters
        ----------
        b : int
            Samples (sequences).

        Returns
        -------
        Layer
        """
        return replace(
            self,
            fwd_flops=self.fwd_flops * b,
            bwd_input_flops=self.bwd_input_flops * b,
            bwd_weight_flops=self.bwd_weight_flops * b,
            activation_elems=self.activation_elems * b,
        )


@dataclass(frozen=True)
class Model:
    """A model: its layers (per-sample costs), element type and, for sequence models, `seq`.

    `hidden` is the transformer hidden size (None for other models); `notes` records the
    shape assumptions and communication hints (e.g. "alltoall" for DLRM embeddings).

    Parameters
    ----------
    name : str
        Zoo name (`gpt3-175b`).
    layers : tuple of Layer
        In forward order, per-sample costs.
    dtype : str
        fp16, bf16 or fp32: bytes per element of parameters, gradients and activations; or fp8
        (`MODEL_DTYPES`; a model with transformer blocks): their GEMMs in FP8, the rest bf16.
    seq : int, optional
        Sequence length, tokens (sequence models).
    notes : str
        Shape assumptions and communication hints.
    hidden : int, optional
        Transformer hidden size.
    input_bytes : int
        Bytes of ONE sample's input as loaded from storage (0: not modelled).
    heads, ffn, vocab : int, optional
        Transformer attention heads, MLP inner size and vocabulary (None for other models): with
        them the blocks' kernels are known by shape (`workload.kernels`).
    shape : TransformerShape, optional
        A transformer's architecture (`transformer`): key/value heads, MLP activation, norm,
        biases, embeddings (None for other models).
    """

    name: str
    layers: tuple[Layer, ...]
    dtype: str = "fp16"
    seq: int | None = None
    notes: str = ""
    hidden: int | None = field(default=None)
    input_bytes: int = 0  # bytes of ONE sample's input as loaded from storage (images, token ids)
    heads: int | None = None  # transformer shape, for kernels by shape
    ffn: int | None = None
    vocab: int | None = None
    shape: TransformerShape | None = None  # a transformer by shape: its whole architecture

    def __post_init__(self):
        if self.dtype not in MODEL_DTYPES:
            raise ConfigError("dtype", self.dtype, "accepted: " + ", ".join(MODEL_DTYPES))
        if self.dtype == "fp8" and not self.blocks():
            raise ConfigError("dtype", "fp8", f"{_DTYPE_ACCEPTED} for {self.name} (fp8 runs the GEMMs of "
                                              "transformer blocks; it has none)")

    @property
    def dtype_bytes(self) -> int:
        """Bytes per element of what the model stores and sends (`MODEL_DTYPES`: 2 for fp8)."""
        return MODEL_DTYPES[self.dtype]

    @property
    def params(self) -> int:
        """Trainable parameters, summed over the layers (elements)."""
        return sum(layer.params for layer in self.layers)

    @property
    def fwd_flops(self) -> float:
        """Forward FLOPs for ONE sample (one sequence)."""
        return sum(layer.fwd_flops for layer in self.layers)

    @property
    def bwd_flops(self) -> float:
        """Backward FLOPs (input- plus weight-gradient) for ONE sample."""
        return sum(layer.bwd_flops for layer in self.layers)

    @property
    def param_bytes(self) -> int:
        """Bytes of the parameters (= of one full set of gradients) in `dtype`."""
        return self.params * self.dtype_bytes

    @property
    def activation_elems(self) -> int:
        """Sum over layers of the output elements for ONE sample."""
        return sum(layer.activation_elems for layer in self.layers)

    def blocks(self, kind: str = "transformer_block") -> tuple[Layer, ...]:
        """The layers of one `kind`, in order.

        Parameters
        ----------
        kind : str
            A `Layer.kind` (default: the transformer blocks).

        Returns
        -------
        tuple of Layer
        """
        return tuple(layer for layer in self.layers if layer.kind == kind)

    def batch(self, b: int) -> tuple[Layer, ...]:
        """The layers for a batch of `b` samples (sequences); `self` is unchanged.

        FLOPs and activation elements scale linearly with `b`; params and weight elements do not.

        Parameters
        ----------
        b : int
            Samples (sequences), >= 1.

        Returns
        -------
        tuple of Layer
            ConfigError for a bad `b`.
        """
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise ConfigError("batch", b, "accepted: an integer >= 1")
        return tuple(layer.scaled(b) for layer in self.layers)

    def with_dtype(self, dtype: str) -> Model:
        """The same model with another element type.

        Parameters
        ----------
        dtype : str
            fp16, bf16 or fp32; fp8 for a model with transformer blocks.

        Returns
        -------
        Model
        """
        return replace(self, dtype=dtype)


def _mm_layer(name: str, kind: str, params: int, weight: int, macs: float, out: int, first: bool = False) -> Layer:
    """A matmul-like layer: fwd = 2*macs, input-grad = fwd (0 if `first`), weight-grad = fwd."""
    f = 2.0 * macs
    return Layer(name, kind, params, f, 0.0 if first else f, f, out, weight)


def _conv(name: str, cin: int, cout: int, k: int, stride: int, hw_in: int, first: bool = False, bias: bool = False):
    """k x k conv, 'same' padding, with `cout` bias terms if `bias` (not in the MACs). Returns (Layer, hw_out)."""
    hw = (hw_in + stride - 1) // stride
    w = k * k * cin * cout
    p = w + cout if bias else w
    return _mm_layer(name, "conv", p, p, float(w) * hw * hw, cout * hw * hw, first), hw


def _bn(name: str, c: int, hw: int) -> Layer:
    """Batch norm: 2c params (gamma, beta); ~2 FLOPs/elem forward (scale+shift), 2 input-grad, 2 weight-grad."""
    n = c * hw * hw
    return Layer(name, "batchnorm", 2 * c, 2.0 * n, 2.0 * n, 2.0 * n, n, 2 * c)


def _lstm(name: str, inp: int, h: int, steps: int) -> Layer:
    """One LSTM layer over `steps` time steps: 4 gates, params 4*((inp + h)*h + h) (one bias
    per gate); forward 2*4*(inp + h)*h FLOPs per step (gate elementwise ops ignored)."""
    w = 4 * (inp + h) * h
    return _mm_layer(name, "lstm", w + 4 * h, w + 4 * h, float(w) * steps, h * steps)


def _positive(field_name: str, value) -> int:
    """`value` when it is an integer >= 1, else ConfigError naming `field_name`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(field_name, value, "accepted: an integer >= 1")
    return value


def _shape_note(shape: TransformerShape) -> str:
    """The shape in one line, for `Model.notes`."""
    z = shape
    note = f"L={z.layers} h={z.hidden} heads={z.heads} seq={z.seq} vocab={z.vocab} ffn={z.ffn}"
    if z.kv_heads != z.heads:
        note += f" kv_heads={z.kv_heads}"
    if (z.ffn_act, z.norm, z.bias, z.position) != ("gelu", "layernorm", True, "learned"):
        note += f" {z.ffn_act} {z.norm}{'' if z.bias else ' no-bias'} {z.position}"
    if z.experts:
        shared = f" + {z.shared_experts} shared" if z.shared_experts else ""
        note += f"; {z.experts} experts top-{z.top_k}{shared} of ffn {z.moe_ffn} in {len(z.moe_layers)} blocks"
    return note + ("; tied embeddings" if z.tied_embeddings else "; untied embeddings")


def transformer(
    name: str,
    layers: int,
    hidden: int,
    heads: int,
    seq: int,
    vocab: int,
    ffn: int | None = None,
    dtype: str = "fp16",
    notes: str = "",
    *,
    kv_heads: int | None = None,
    ffn_act: str = "gelu",
    norm: str = "layernorm",
    bias: bool = True,
    tied_embeddings: bool = True,
    position: str = "learned",
    **moe,
) -> Model:
    """A decoder-only transformer from its shape (`TransformerShape`): GPT-2/3 by default, Llama
    with grouped-query attention, SwiGLU, RMSNorm, no biases, untied embeddings and rotary positions.

    Per block (h hidden, a heads, k kv_heads, f ffn, m = 2 MLP matrices for gelu, 3 for swiglu):
    QKV h (h + 2kh/a) weights, output projection h^2, MLP m h f; biases (when `bias`) h + 2kh/a,
    h, (m - 1) f and h; two norms of 2h (layernorm) or h (rmsnorm). GPT's 12h^2 + 13h with f = 4h,
    k = a. Embedding: token v h, plus learned positions s h; head: the final norm, and v h logits
    of its own when the embedding is not tied (tied: it reads the embedding's v h weights).
    Forward FLOPs per sequence: block 2 x params_block x s + attention scores and context 4 s^2 h
    (every query head scores every key: grouped keys save bytes, not FLOPs); head 2 s h v;
    embedding lookup 0. Backward: input-grad = weight-grad = forward for blocks and head (the
    attention-score part has no weights, but this common approximation keeps backward = 2x
    forward); the embedding has no backward FLOPs. Activation elements: s h per block output
    (s v for the logits).

    Parameters
    ----------
    name, notes : str
        Model name; what is added to the shape note in `Model.notes`.
    layers, hidden, heads, seq, vocab : int
        Transformer blocks, hidden size h, attention (query) heads (a divisor of `hidden`),
        sequence length and vocabulary, tokens.
    ffn : int, optional
        MLP inner size (default 4h).
    dtype : str
        Element type: fp16, bf16 or fp32.
    kv_heads : int, optional
        Key/value heads, a divisor of `heads` (default `heads`).
    ffn_act, norm, position : str
        gelu or swiglu; layernorm or rmsnorm; learned or rope.
    bias, tied_embeddings : bool
        Linear layers with biases; logits tied to the token embedding.
    **moe
        A mixture of experts (`TransformerShape`): experts, top_k, shared_experts, expert_ffn,
        moe_layers ("all", every N-th, or a list), capacity_factor, moe_imbalance; a block's FLOPs
        count its active parameters (router, top_k and shared experts), its parameters all.

    Returns
    -------
    Model
        Per-sequence costs; `input_bytes` = 4 x seq (int32 token ids); `shape` the architecture.
        ConfigError naming the field for a non-positive size, heads not dividing hidden, kv_heads
        not dividing heads, or an unknown activation, norm or position.
    """
    shape = checked_shape(layers, hidden, heads, seq, vocab, kv_heads, ffn, ffn_act, norm, bias, tied_embeddings,
                          position, **moe)
    h, ffn, kv_heads = shape.hidden, shape.ffn, shape.kv_heads
    out: list[Layer] = []
    emb = shape.embedding_params()
    out.append(Layer("embedding", "embedding", emb, 0.0, 0.0, 0.0, seq * h, emb))
    for i in range(layers):  # FLOPs from the parameters a token computes with (a mixture of experts: its top_k)
        f_block = 2.0 * shape.active_params(i) * seq + 2.0 * 2.0 * seq * seq * h
        out.append(Layer(f"block{i}", "transformer_block", shape.block_params(i), f_block, f_block, f_block, seq * h,
                         shape.block_weights(i)))
    f_head = 2.0 * seq * h * vocab
    out.append(Layer("head", "lm_head", shape.head_params(), f_head, f_head, f_head, seq * vocab,
                     vocab * h + shape.norm_params))
    note = _shape_note(shape)
    return Model(name, tuple(out), dtype, seq=seq, notes=(note + "; " + notes) if notes else note, hidden=h,
                 input_bytes=4 * seq, heads=heads, ffn=ffn, vocab=vocab, shape=shape)  # int32 token ids
