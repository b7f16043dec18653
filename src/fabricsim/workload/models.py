"""Model zoo built from layer shapes: parameters, per-layer FLOPs and activation sizes.

Nothing here is a hard-coded total: every count is summed from the layer shapes, and the
tests compare the sums with the published sizes (ResNet-50 25.6M, ResNet-152 60.2M,
GPT-3 175B).

    from fabricsim.workload.models import get_model, megatron_mp_allreduce_bytes
    m = get_model("gpt3-175b")            # Model, per-sample (per-sequence) costs
    m.params, m.fwd_flops, m.bwd_flops    # 174.6e9, ... FLOPs for ONE sequence
    layers = m.batch(16)                  # the layers with FLOPs/activations x 16

The `Layer` and `Model` types, their conventions (per-sample costs, a multiply-add = 2 FLOPs,
backward = input gradient + weight gradient) and the shape -> layer math (`transformer` by shape)
are `workload.shapes`, importable from here as before; this module holds the zoo's presets, the
registry (`MODELS`, `get_model`) and the traffic of a model (`megatron_mp_allreduce_bytes`,
`zero2_bytes`).
"""

from __future__ import annotations

from itertools import pairwise

from ..errors import ConfigError

# re-exported: DTYPES, MODEL_DTYPES (with fp8), Layer, Model, dtype_bytes and transformer live in
# `workload.shapes` and are importable from here as before (so are the private helpers `zoo_topoopt` imports)
from .shapes import DTYPES, MODEL_DTYPES  # noqa: F401
from .shapes import Layer, Model, _bn, _conv, _lstm, _mm_layer, _positive, dtype_bytes, transformer


# ---------------------------------------------------------------- ResNet


def _resnet(name: str, blocks: tuple[int, int, int, int], dtype: str) -> Model:
    """Bottleneck ResNet (torchvision / v1.5: the stride sits on the 3x3 conv), 224x224 input.

    Modelled: every conv (no bias) and batch norm, and the FC 2048x1000 + bias. ReLU, max-pool,
    average-pool and residual adds have no parameters and negligible FLOPs and are left out."""
    layers: list[Layer] = []
    conv, hw = _conv("conv1", 3, 64, 7, 2, 224, first=True)
    layers += [conv, _bn("bn1", 64, hw)]
    hw = (hw + 1) // 2  # 3x3/2 max-pool: 112 -> 56
    cin = 64
    for stage, (n, width) in enumerate(zip(blocks, (64, 128, 256, 512)), start=1):
        for i in range(n):
            stride = 2 if (i == 0 and stage > 1) else 1
            p = f"layer{stage}.{i}"
            hw_in = hw
            c1, hw1 = _conv(f"{p}.conv1", cin, width, 1, 1, hw_in)
            c2, hw2 = _conv(f"{p}.conv2", width, width, 3, stride, hw1)
            c3, hw3 = _conv(f"{p}.conv3", width, 4 * width, 1, 1, hw2)
            layers += [c1, _bn(f"{p}.bn1", width, hw1), c2, _bn(f"{p}.bn2", width, hw2), c3, _bn(f"{p}.bn3", 4 * width, hw3)]
            if i == 0:
                cd, hwd = _conv(f"{p}.downsample", cin, 4 * width, 1, stride, hw_in)
                layers += [cd, _bn(f"{p}.downsample.bn", 4 * width, hwd)]
            cin, hw = 4 * width, hw3
    layers.append(_mm_layer("fc", "fc", cin * 1000 + 1000, cin * 1000 + 1000, cin * 1000, 1000))
    return Model(name, tuple(layers), dtype, notes=f"bottleneck blocks {list(blocks)}, 224x224, torchvision v1.5 shapes",
                 input_bytes=3 * 224 * 224 * dtype_bytes(dtype))


def resnet50(dtype: str = "fp16") -> Model:
    """ResNet-50: blocks [3, 4, 6, 3]; 25,557,032 params (published 25.6M).

    Parameters
    ----------
    dtype : str
        Element type: fp16, bf16 or fp32.

    Returns
    -------
    Model
        Per-sample costs.
    """
    return _resnet("resnet50", (3, 4, 6, 3), dtype)


def resnet152(dtype: str = "fp16") -> Model:
    """ResNet-152: blocks [3, 8, 36, 3]; 60,192,808 params (published 60.2M).

    Parameters
    ----------
    dtype : str
        Element type: fp16, bf16 or fp32.

    Returns
    -------
    Model
        Per-sample costs.
    """
    return _resnet("resnet152", (3, 8, 36, 3), dtype)


# ---------------------------------------------------------------- transformers


def gpt3_175b(dtype: str = "fp16") -> Model:
    """GPT-3 175B (Brown et al. 2020): 96 layers, h 12288, 96 heads, seq 2048, vocab 50257.

    Parameters
    ----------
    dtype : str
        Element type: fp16, bf16 or fp32.

    Returns
    -------
    Model
        Per-sample costs.
    """
    return transformer("gpt3-175b", 96, 12288, 96, 2048, 50257, dtype=dtype)


def transformer_17b(dtype: str = "fp16") -> Model:
    """Transformer-17B, with the shape of Turing-NLG 17B (an assumption).

    ASSUMPTION: the FRED paper gives no shape; we use Turing-NLG 17B (78 layers, h 4256, 28 heads,
    seq 1024, vocab 50257), about 17.2B parameters.

    Parameters
    ----------
    dtype : str
        Element type: fp16, bf16 or fp32.

    Returns
    -------
    Model
        Per-sample costs.
    """
    return transformer(
        "transformer-17b", 78, 4256, 28, 1024, 50257, dtype=dtype,
        notes="ASSUMPTION: shape of Turing-NLG 17B (FRED gives none)",
    )


def transformer_1t(dtype: str = "fp16") -> Model:
    """Transformer-1T, with the Megatron-LM 1T configuration (an assumption).

    ASSUMPTION: the FRED paper gives no shape; we use the Megatron-LM 1T configuration
    (Narayanan et al. 2021: 128 layers, h 25600, 160 heads, seq 2048, vocab 51200), about 1.008T
    parameters.

    Parameters
    ----------
    dtype : str
        Element type: fp16, bf16 or fp32.

    Returns
    -------
    Model
        Per-sample costs.
    """
    return transformer(
        "transformer-1t", 128, 25600, 160, 2048, 51200, dtype=dtype,
        notes="ASSUMPTION: Megatron-LM 1T configuration (FRED gives none)",
    )


# ---------------------------------------------------------------- GNMT


def gnmt(
    dtype: str = "fp16",
    layers: int = 8,
    hidden: int = 1024,
    vocab: int = 32000,
    src_len: int = 50,
    tgt_len: int = 50,
) -> Model:
    """GNMT (Wu et al. 2016), approximate; one sample = one sentence pair.

    Shape chosen: separate source and target embeddings vocab x h; encoder of `layers` LSTM
    layers, the first bidirectional (two LSTMs of h units, output 2h), the second takes 2h,
    the rest h; additive attention (query and key projections h x h, score vector h); decoder
    of `layers` LSTM layers, each fed its input (h) concatenated with the attention context
    (h); softmax projection h x vocab + bias.
    About 281M parameters with the defaults; published GNMT sizes range ~160-280M with the
    vocabulary and variant, so only the shape sum is checked.

    Parameters
    ----------
    dtype : str
        Element type: fp16, bf16 or fp32.
    layers : int
        LSTM layers of the encoder and of the decoder.
    hidden : int
        LSTM units h.
    vocab : int
        Vocabulary size, tokens.
    src_len, tgt_len : int
        Source and target sentence lengths, tokens.

    Returns
    -------
    Model
        Per-sentence-pair costs.
    """
    h = hidden
    out: list[Layer] = []
    for side, steps in (("src", src_len), ("tgt", tgt_len)):
        out.append(Layer(f"{side}_embedding", "embedding", vocab * h, 0.0, 0.0, 0.0, steps * h, vocab * h))
    out.append(_lstm("enc0.fwd", h, h, src_len))
    out.append(_lstm("enc0.bwd", h, h, src_len))
    for i in range(1, layers):
        out.append(_lstm(f"enc{i}", 2 * h if i == 1 else h, h, src_len))
    # attention: keys projected once per source token, query per target step; scores + context
    att_params = 2 * h * h + h
    att_macs = float(h * h) * (src_len + tgt_len) + 2.0 * src_len * h * tgt_len
    out.append(_mm_layer("attention", "attention", att_params, att_params, att_macs, tgt_len * h))
    for i in range(layers):
        out.append(_lstm(f"dec{i}", 2 * h, h, tgt_len))
    soft = h * vocab + vocab
    out.append(_mm_layer("softmax", "fc", soft, soft, float(h) * vocab * tgt_len, vocab * tgt_len))
    return Model(
        "gnmt", tuple(out), dtype, seq=src_len,
        notes=f"APPROXIMATE GNMT: {layers}+{layers} LSTM layers, h={h}, vocab={vocab}, src/tgt len {src_len}/{tgt_len}",
    )


# ---------------------------------------------------------------- DLRM


# Criteo Kaggle (Display Advertising Challenge) categorical cardinalities, as used by the
# facebookresearch/dlrm reference: 26 tables, 33,762,577 rows in total.
CRITEO_KAGGLE_ROWS = (
    1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194,
    27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572,
)


def dlrm(
    dtype: str = "fp16",
    rows: tuple[int, ...] = CRITEO_KAGGLE_ROWS,
    dim: int = 16,
    bottom: tuple[int, ...] = (13, 512, 256, 64, 16),
    top: tuple[int, ...] = (512, 256, 1),
) -> Model:
    """DLRM (Naumov et al. 2019), by default the reference Criteo Kaggle configuration.

    Bottom MLP 13-512-256-64-16, 26 embedding tables of dimension 16 (`CRITEO_KAGGLE_ROWS`, one
    lookup per table per sample), pairwise dot interaction of the 27 vectors (27*26/2 = 351
    dots) concatenated with the dense vector -> 367 inputs, top MLP 367-512-256-1. About 540.2M
    parameters (embeddings 540.2M, MLPs ~0.6M). Embedding layers have kind "embedding", ~0
    FLOPs; in a model-parallel layout their outputs are exchanged with an all-to-all (hint in
    `notes`).

    Parameters
    ----------
    dtype : str
        Element type: fp16, bf16 or fp32.
    rows : tuple of int
        Rows of each embedding table.
    dim : int
        Embedding dimension.
    bottom : tuple of int
        Widths of the bottom MLP, input first; the last must equal `dim`.
    top : tuple of int
        Widths of the top MLP after the interaction.

    Returns
    -------
    Model
        Per-sample costs.
    """
    if bottom[-1] != dim:
        raise ConfigError("bottom", bottom, f"accepted: an MLP whose last width equals dim={dim}")
    out: list[Layer] = []
    for i, (a, b) in enumerate(pairwise(bottom)):
        out.append(_mm_layer(f"bot_mlp{i}", "fc", a * b + b, a * b + b, float(a * b), b, first=(i == 0)))
    for t, r in enumerate(rows):
        out.append(Layer(f"emb{t}", "embedding", r * dim, 0.0, 0.0, 0.0, dim, r * dim))
    n = len(rows) + 1
    pairs = n * (n - 1) // 2
    f_int = 2.0 * pairs * dim
    out.append(Layer("interaction", "interaction", 0, f_int, f_int, 0.0, pairs + dim, 0))
    widths = (pairs + dim,) + tuple(top)
    for i, (a, b) in enumerate(pairwise(widths)):
        out.append(_mm_layer(f"top_mlp{i}", "fc", a * b + b, a * b + b, float(a * b), b))
    return Model(
        "dlrm", tuple(out), dtype,
        notes=f"DLRM Criteo Kaggle config: {len(rows)} tables dim {dim}, bottom {'-'.join(map(str, bottom))}, "
        f"top {'-'.join(map(str, widths))}; embeddings model-parallel -> alltoall of pooled embeddings",
    )


# ---------------------------------------------------------------- registry and traffic


MODELS = {
    "resnet50": resnet50,
    "resnet152": resnet152,
    "gnmt": gnmt,
    "dlrm": dlrm,
    "gpt3-175b": gpt3_175b,
    "transformer-17b": transformer_17b,
    "transformer-1t": transformer_1t,
}


def get_model(name: str, dtype: str = "fp16") -> Model:
    """Build a zoo model by name (see `MODELS`); ConfigError naming the accepted names.

    Parameters
    ----------
    name : str
        resnet50, resnet152, gnmt, dlrm, gpt3-175b, transformer-17b, transformer-1t, the TopoOpt
        workloads vgg16, dlrm-topoopt, candle-uno, ncf, bert-topoopt, or this year's language
        models llama3-8b, llama3-70b, llama3-405b (`zoo_llm`).
    dtype : str
        fp16, bf16 or fp32; fp8 for the transformers (`workload.fp8`).

    Returns
    -------
    Model
        Per-sample costs (FLOPs, elements) summed from the layer shapes.

    Examples
    --------
    >>> m = get_model("gpt3-175b")
    >>> m.params, len(m.blocks()), m.param_bytes   # elements, blocks, bytes in fp16
    (174604259328, 96, 349208518656)
    """
    if name not in MODELS:
        raise ConfigError("model", name, "accepted: " + ", ".join(MODELS))
    return MODELS[name](dtype=dtype)


def megatron_mp_allreduce_bytes(model: Model, batch: int, mp: int, dtype_bytes: int | None = None):
    """Megatron tensor-parallel traffic of a transformer.

    Each transformer block does 2 all-reduces in the forward pass and 2 in the backward pass over
    the MP group, each of batch*seq*hidden elements.

    Parameters
    ----------
    model : Model
        A transformer (with `hidden` and `seq`).
    batch : int
        Samples (sequences) the all-reduces carry.
    mp : int
        Model-parallel group size.
    dtype_bytes : int, optional
        Bytes per element (default: the model's).

    Returns
    -------
    (int, int, int)
        Per-block forward bytes, per-block backward bytes, and the total per iteration over all
        blocks, as all-reduce buffer sizes; all zero when mp == 1.
    """
    if model.hidden is None or model.seq is None:
        raise ConfigError("model", model.name, "accepted: a transformer model (with hidden and seq)")
    batch = _positive("batch", batch)
    mp = _positive("mp", mp)
    nbytes = model.dtype_bytes if dtype_bytes is None else _positive("dtype_bytes", dtype_bytes)
    if mp == 1:
        return 0, 0, 0
    one = batch * model.seq * model.hidden * nbytes
    fwd = bwd = 2 * one
    return fwd, bwd, len(model.blocks()) * (fwd + bwd)


def zero2_bytes(model: Model, dp: int):
    """ZeRO stage 2 data-parallel traffic per iteration.

    A reduce-scatter of the gradients and an all-gather of the updated parameters, each of
    `param_bytes`.

    Parameters
    ----------
    model : Model
        The model.
    dp : int
        Data-parallel group size.

    Returns
    -------
    (int, int, float)
        Reduce-scatter bytes, all-gather bytes, and the bytes each rank sends with ring
        algorithms = 2*(dp-1)/dp*param_bytes.
    """
    dp = _positive("dp", dp)
    p = model.param_bytes
    return p, p, 2.0 * (dp - 1) / dp * p


# The TopoOpt workloads live in zoo_topoopt, which imports the helpers above: imported last.
from .zoo_llm import LLM_MODELS  # noqa: E402
from .zoo_topoopt import TOPOOPT_MODELS  # noqa: E402

MODELS.update(TOPOOPT_MODELS)
MODELS.update(LLM_MODELS)
