"""The TopoOpt workloads (Wang et al., NSDI 2023), built from layer shapes.

The simulation workloads of the TopoOpt evaluation (specs/topoopt.md section 3.3): VGG-16,
DLRM, CANDLE Uno, NCF and BERT, with the sizes passed by the authors' figure scripts
(hipersys-team/TopoOpt `simulation/scripts/fig11_17/*_dc.sh`) to the FlexFlow simulator
examples (hipersys-team/FlexFlow `examples/cpp/{vgg16sim,DLRMsim,candle_unosim,ncfsim,
Transformersim}`). ResNet-50 is `models.resnet50`. Every count is summed from the layer
shapes; the conventions are those of `models` (per-sample costs, a multiply-add = 2 FLOPs,
backward = input gradient + weight gradient, each equal to the forward FLOPs of a matmul).

Reading the FlexFlow MLP flags: FlexFlow's `create_mlp(input, ln)` adds `len(ln) - 1` dense
layers of widths `ln[1:]`; `ln[0]` is only the nominal input width (used for initialisation;
the real input width is the incoming tensor's). So `--arch-mlp-bot 2048x8` is a 2048-wide
dense input and 7 dense layers, `--arch-mlp-top 4096x16-1` is 15 dense layers of 4096 and a
1-wide output (16 layers), and NCF's `--arch-mlp-top 4096x8` is 7 dense layers. Every dense
layer has a bias. The functions below take the resulting layer widths, so another reading is
one argument away.

The recommendation models (DLRM, NCF) carry "alltoall" in `Model.notes`: their embedding
tables are model parallel and the pooled embeddings are exchanged with an all-to-all, which
`parallelism.build_training` turns into the DLRM graph. The other models' notes avoid that
word.

    from fabricsim.workload.models import get_model
    m = get_model("dlrm-topoopt")     # also vgg16, candle-uno, ncf, bert-topoopt
    m.params, m.fwd_flops             # 82,226,264,065 params, 0.61 GFLOPs per sample
"""

from __future__ import annotations

from itertools import pairwise

from ..errors import ConfigError
from .shapes import Layer, Model, _conv, _mm_layer, _positive, dtype_bytes, transformer

INT64_BYTES = 8  # FlexFlow's sparse inputs (embedding-bag indices) are int64


def _widths(field_name: str, widths) -> tuple[int, ...]:
    """A non-empty tuple of positive integers, or ConfigError."""
    try:
        out = tuple(widths)
    except TypeError:
        out = ()
    if not out or any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in out):
        raise ConfigError(field_name, widths, "accepted: a non-empty sequence of integers >= 1")
    return out


def _fc(name: str, a: int, b: int, bias: bool = True, first: bool = False) -> Layer:
    """Dense a -> b (+ bias): a*b (+ b) params, a*b MACs per sample, b output elements."""
    p = a * b + (b if bias else 0)
    return _mm_layer(name, "fc", p, p, float(a * b), b, first)


# ---------------------------------------------------------------- VGG-16

# (output channels, convolutions) per stage; each stage ends with a 2x2/2 max-pool
VGG16_STAGES = ((64, 2), (128, 2), (256, 3), (512, 3), (512, 3))


def vgg16(dtype: str = "fp16") -> Model:
    """VGG-16 (configuration "D", Simonyan & Zisserman 2015), ImageNet 224x224 input.

    13 convolutions 3x3, stride 1, padding 1, with bias, in five stages of 64, 128, 256, 512,
    512 channels (2, 2, 3, 3, 3 convolutions), each followed by a 2x2/2 max-pool
    (224 -> 7); then FC 25088-4096-4096-1000 with bias. 138,357,544 parameters (torchvision
    `vgg16`, the published 138M); 15,470,264,320 MACs forward per image (convolutions
    15,346,630,656, FC 123,633,664; the commonly cited 15.5 GMACs), i.e. 30.94 GFLOPs.
    ReLU, max-pool and dropout have no parameters and negligible FLOPs and are left out, as
    are the bias additions. The first convolution needs no input gradient.

    Parameters
    ----------
    dtype : str
        Element type: fp16, bf16 or fp32.

    Returns
    -------
    Model
        Per-image costs; `input_bytes` = 3 x 224 x 224 pixels in `dtype`.
    """
    layers: list[Layer] = []
    cin, hw = 3, 224
    for s, (cout, n) in enumerate(VGG16_STAGES, start=1):
        for i in range(1, n + 1):
            layers.append(_conv(f"conv{s}_{i}", cin, cout, 3, 1, hw, first=not layers, bias=True)[0])
            cin = cout
        hw //= 2  # 2x2/2 max-pool
    widths = (cin * hw * hw, 4096, 4096, 1000)
    for i, (a, b) in enumerate(pairwise(widths), start=1):
        layers.append(_fc(f"fc{i}", a, b))
    return Model("vgg16", tuple(layers), dtype,
                 notes="VGG-16 config D, 224x224, 13 conv3x3 + FC 25088-4096-4096-1000, all with bias "
                       "(torchvision vgg16 shapes)",
                 input_bytes=3 * 224 * 224 * dtype_bytes(dtype))


# ---------------------------------------------------------------- DLRM (TopoOpt size)


def dlrm_topoopt(
    dtype: str = "fp16",
    tables: int = 64,
    rows: int = 10_000_000,
    dim: int = 128,
    bag: int = 100,
    bottom: tuple[int, ...] = (2048,) * 8,
    top: tuple[int, ...] = (4096,) * 15 + (1,),
) -> Model:
    """The DLRM of the TopoOpt simulations: 64 tables x 10M rows x 128, concatenation interaction.

    Source: TopoOpt `fig11_17/dlrm128_dc.sh` -> FlexFlow `DLRMsim` with `--arch-embedding-size
    10000000` x 64, `--arch-sparse-feature-size 128`, `--embedding-bag-size 100`,
    `--arch-mlp-bot 2048-...-2048` (8 entries), `--arch-mlp-top 4096-...-4096-1` (16 x 4096, 1);
    specs/topoopt.md section 3.3.

    ASSUMPTION (dense input): 2048 features, the first entry of the bottom-MLP flag, which
    FlexFlow uses as the width of the dense input tensor; the bottom MLP is then 7 dense
    layers 2048 -> 2048. ASSUMPTION (interaction): concatenation of the bottom-MLP output
    (2048) with the 64 pooled embeddings (64 x 128) -> 10240 inputs to the top MLP, as
    FlexFlow's DLRM does (its only interaction, "cat"); no projection to 128 and no dot
    interaction. The top MLP is 10240 -> 4096, 14 x 4096 -> 4096, 4096 -> 1 (16 layers; the
    flag's first 4096 is the nominal input width). All dense layers have a bias.
    Each table is an embedding bag summing `bag` rows per sample (reads bag x dim elements);
    the bag size is recorded in `notes` only: the layer's FLOPs stay 0 (like `models.dlrm`)
    and the training graph moves one pooled row per table and sample.
    Params: embeddings 64 x 10M x 128 = 81.92e9, MLPs 306,264,065 -> 82,226,264,065.

    Parameters
    ----------
    dtype : str
        Element type: fp16, bf16 or fp32.
    tables : int
        Embedding tables.
    rows : int
        Rows per table.
    dim : int
        Embedding dimension (pooled vector per table and sample).
    bag : int
        Lookups (rows read and summed) per table per sample.
    bottom : tuple of int
        Bottom-MLP widths, dense input first.
    top : tuple of int
        Output widths of the top-MLP layers; the input is the concatenation width
        bottom[-1] + tables x dim.

    Returns
    -------
    Model
        Per-sample costs, layers in the order bottom MLP, embeddings, interaction, top MLP;
        `input_bytes` = dense input in `dtype` + tables x bag int64 indices.
    """
    tables, rows, dim, bag = (_positive(k, v) for k, v in (("tables", tables), ("rows", rows), ("dim", dim),
                                                           ("bag", bag)))
    bottom, top = _widths("bottom", bottom), _widths("top", top)
    if len(bottom) < 2:
        raise ConfigError("bottom", bottom, "accepted: the dense input width and at least one layer width")
    out: list[Layer] = []
    for i, (a, b) in enumerate(pairwise(bottom)):
        out.append(_fc(f"bot_mlp{i}", a, b, first=(i == 0)))
    for t in range(tables):
        out.append(Layer(f"emb{t}", "embedding", rows * dim, 0.0, 0.0, 0.0, dim, rows * dim))
    cat = bottom[-1] + tables * dim
    out.append(Layer("interaction", "interaction", 0, 0.0, 0.0, 0.0, cat, 0))  # concatenation: no FLOPs
    for i, (a, b) in enumerate(pairwise((cat,) + top)):
        out.append(_fc(f"top_mlp{i}", a, b))
    notes = (f"TopoOpt DLRM (FlexFlow DLRMsim): {tables} tables x {rows} rows dim {dim}, bag={bag} lookups per "
             f"table per sample (bag not modelled in FLOPs or traffic); bottom {'-'.join(map(str, bottom))}; "
             f"interaction concat -> {cat}; top {'-'.join(map(str, (cat,) + top))}; ASSUMPTION: dense input "
             f"{bottom[0]} and concat interaction, as FlexFlow; embeddings model-parallel -> alltoall of pooled "
             "embeddings")
    return Model("dlrm-topoopt", tuple(out), dtype, notes=notes,
                 input_bytes=bottom[0] * dtype_bytes(dtype) + tables * bag * INT64_BYTES)


# ---------------------------------------------------------------- CANDLE Uno

# FlexFlow candle_uno's inputs (feature shapes of the CANDLE Pilot1 Uno data): the towered
# ones (cell RNA-seq, drug descriptors, drug fingerprints) and the two doses fed directly
CANDLE_UNO_TOWERS = (
    ("cell.rnaseq", 942),
    ("drug1.descriptors", 5270),
    ("drug1.fingerprints", 2048),
    ("drug2.descriptors", 5270),
    ("drug2.fingerprints", 2048),
)
CANDLE_UNO_DIRECT = (("dose1", 1), ("dose2", 1))


def candle_uno(
    dtype: str = "fp16",
    feature_layers: tuple[int, ...] = (16384,) * 16,
    dense_layers: tuple[int, ...] = (16384,) * 8,
    towers: tuple[tuple[str, int], ...] = CANDLE_UNO_TOWERS,
    direct: tuple[tuple[str, int], ...] = CANDLE_UNO_DIRECT,
    share_drug_towers: bool = False,
) -> Model:
    """CANDLE Uno (drug-response MLP, CANDLE Pilot1 benchmark) at the TopoOpt size.

    Source: TopoOpt `fig11_17/candle128_dc.sh` -> FlexFlow `candle_unosim` with
    `--dense-feature-layers 16384` x 16 and `--dense-layers 16384` x 8 then 1; input feature
    widths from that example's defaults (cell.rnaseq 942, drug.descriptors 5270,
    drug.fingerprints 2048, dose 1); specs/topoopt.md section 3.3.

    ASSUMPTION (towers): one feature tower of 16 dense layers x 16384 per towered input:
    cell RNA-seq, drug-1 descriptors, drug-1 fingerprints, drug-2 descriptors, drug-2
    fingerprints (5 towers with their own weights, as FlexFlow builds them); the two doses
    bypass the towers. The Keras Uno shares one tower per feature type between drug 1 and
    drug 2: `share_drug_towers=True` models that (the drug-2 towers then own no parameters
    but still read the weights and cost the same FLOPs). The concatenation, 5 x 16384 + 2 =
    81922 wide, feeds 8 dense layers of 16384 and a 1-output head. All dense layers have a
    bias. (FlexFlow's example appends a further 1 -> 1 dense layer after the "+ 1" of the
    flag: 2 params, left out.) The first layer of each tower needs no input gradient.
    Defaults: 23,610,605,569 params; 23,609,163,776 MACs = 47.2 GFLOPs forward per sample.

    Parameters
    ----------
    dtype : str
        Element type: fp16, bf16 or fp32.
    feature_layers : tuple of int
        Output widths of each feature tower's dense layers.
    dense_layers : tuple of int
        Output widths of the dense layers after the concatenation (before the 1-output head).
    towers : tuple of (str, int)
        The towered inputs and their widths.
    direct : tuple of (str, int)
        The inputs concatenated without a tower, and their widths.
    share_drug_towers : bool
        Towers named drug2.* reuse the weights of the drug1.* tower of the same feature type.

    Returns
    -------
    Model
        Per-sample costs, layers in the order towers (one after the other), concatenation,
        dense layers, head; `input_bytes` = all input features in `dtype`.
    """
    feature_layers, dense_layers = _widths("feature_layers", feature_layers), _widths("dense_layers", dense_layers)
    for fld, items in (("towers", towers), ("direct", direct)):
        if any(not isinstance(name, str) for name, _ in items):
            raise ConfigError(fld, items, "accepted: (name, width) pairs")
        _widths(fld, [w for _, w in items] or [1])
    if not towers:
        raise ConfigError("towers", towers, "accepted: at least one (name, width) pair")
    out: list[Layer] = []
    for name, width in towers:
        shared = share_drug_towers and name.startswith("drug2.")
        for i, (a, b) in enumerate(pairwise((width,) + feature_layers)):
            la = _fc(f"{name}.fc{i}", a, b, first=(i == 0))
            out.append(Layer(la.name, la.kind, 0, la.fwd_flops, la.bwd_input_flops, la.bwd_weight_flops,
                             la.activation_elems, la.weight_elems) if shared else la)
    cat = len(towers) * feature_layers[-1] + sum(w for _, w in direct)
    out.append(Layer("concat", "interaction", 0, 0.0, 0.0, 0.0, cat, 0))
    for i, (a, b) in enumerate(pairwise((cat,) + dense_layers + (1,))):
        out.append(_fc(f"dense{i}" if i < len(dense_layers) else "head", a, b))
    inputs = sum(w for _, w in towers) + sum(w for _, w in direct)
    notes = (f"TopoOpt CANDLE Uno (FlexFlow candle_unosim): ASSUMPTION {len(towers)} feature towers "
             f"({', '.join(n for n, _ in towers)}; drug towers {'shared' if share_drug_towers else 'not shared'}) "
             f"of {len(feature_layers)} x {feature_layers[-1]}, {len(direct)} inputs direct; concat {cat}; "
             f"dense {'-'.join(map(str, dense_layers))}-1")
    return Model("candle-uno", tuple(out), dtype, notes=notes, input_bytes=inputs * dtype_bytes(dtype))


# ---------------------------------------------------------------- NCF


def ncf(
    dtype: str = "fp16",
    tables: int = 32,
    users: int = 1_000_000,
    items: int = 1_000_000,
    factor: int = 64,
    dim: int = 128,
    bag: int = 100,
    mlp: tuple[int, ...] = (4096,) * 7,
) -> Model:
    """NCF / NeuMF (He et al. 2017) at the TopoOpt size: 32 tables of 1M users and 1M items.

    Source: TopoOpt `fig11_17/ncf128_dc.sh` -> FlexFlow `ncfsim` with `--ntables 32
    --unum_per_table 1000000 --inum_per_table 1000000 --factor_num 64 --edim_per_table 128
    --embedding-bag-size 100 --arch-mlp-top 4096` x 8; specs/topoopt.md section 3.3.

    ASSUMPTION ("32 tables"): each of the 32 tables has a user side (1M rows) and an item side
    (1M rows), and each side holds a GMF factor of 64 and an MLP embedding of 128 (FlexFlow
    builds these as four embeddings per table, looked up with the same indices). They are
    modelled as 64 embedding layers (user and item per table) of rows 64 + 128 = 192 wide, so
    every pooled vector has the same width: same parameters, lookups and all-to-all bytes.
    GMF: concatenated user factors (32 x 64 = 2048) times item factors, elementwise, then a
    2048 -> 1 dense layer without bias. MLP: the 64 MLP embeddings concatenated (8192) ->
    7 dense layers of 4096 (8192 -> 4096, 6 x 4096 -> 4096: the flag's first 4096 is the
    nominal input width). Prediction: concat(GMF 1, MLP 4096) -> 1 with bias. Each table
    sums a bag of `bag` rows per sample; the bag size is recorded in `notes` only.
    Defaults: embeddings 32 x 2 x 1M x 192 = 12.288e9, dense 134,252,546 -> 12,422,252,546
    params; 0.268 GFLOPs forward per sample.

    Parameters
    ----------
    dtype : str
        Element type: fp16, bf16 or fp32.
    tables : int
        Tables, each with a user and an item side.
    users, items : int
        Rows of the user and of the item side of each table.
    factor : int
        GMF factor (embedding width of the GMF path).
    dim : int
        MLP-path embedding width.
    bag : int
        Lookups per table per sample.
    mlp : tuple of int
        Output widths of the MLP-path dense layers.

    Returns
    -------
    Model
        Per-sample costs, layers in the order embeddings, interaction (concat and GMF
        product), MLP, GMF output, prediction; `input_bytes` = tables x bag int64 indices.
    """
    tables, users, items, factor, dim, bag = (
        _positive(k, v) for k, v in (("tables", tables), ("users", users), ("items", items), ("factor", factor),
                                     ("dim", dim), ("bag", bag)))
    mlp = _widths("mlp", mlp)
    row = factor + dim
    out: list[Layer] = []
    for t in range(tables):
        out.append(Layer(f"emb{t}.user", "embedding", users * row, 0.0, 0.0, 0.0, row, users * row))
        out.append(Layer(f"emb{t}.item", "embedding", items * row, 0.0, 0.0, 0.0, row, items * row))
    gmf = tables * factor
    cat = 2 * tables * dim
    # concat of the MLP embeddings (no FLOPs) and the GMF elementwise product (1 FLOP per element;
    # its input gradient is one product for each of the two operands)
    out.append(Layer("interaction", "interaction", 0, float(gmf), 2.0 * gmf, 0.0, cat + gmf, 0))
    for i, (a, b) in enumerate(pairwise((cat,) + mlp)):
        out.append(_fc(f"mlp{i}", a, b))
    out.append(_fc("gmf_out", gmf, 1, bias=False))
    out.append(_fc("predict", 1 + mlp[-1], 1))
    notes = (f"TopoOpt NCF (FlexFlow ncfsim): ASSUMPTION {tables} tables each with {users} users and {items} items, "
             f"rows = GMF factor {factor} + MLP embedding {dim}; bag={bag} lookups per table per sample (not "
             f"modelled in FLOPs or traffic); MLP {'-'.join(map(str, (cat,) + mlp))}; GMF {gmf}->1; predict "
             f"{1 + mlp[-1]}->1; embeddings model-parallel -> alltoall of pooled embeddings")
    return Model("ncf", tuple(out), dtype, notes=notes, input_bytes=tables * bag * INT64_BYTES)


# ---------------------------------------------------------------- BERT (TopoOpt size)


def bert_topoopt(dtype: str = "fp16") -> Model:
    """The TopoOpt "BERT" transformer: 12 layers, hidden 1024, 16 heads, sequence 64.

    Source: TopoOpt `fig11_17/bert128_dc.sh` (`--num-layers 12 --sequence-length 64
    --hidden-size 1024 --num-heads 16`); specs/topoopt.md section 3.3. Built with
    `models.transformer`: FFN 4 x hidden = 4096 (BERT, Devlin et al. 2019), vocabulary 30522
    (BERT's uncased WordPiece vocabulary, google-research/bert `vocab.txt`), learned positions
    for the 64 tokens, output logits through the tied token embedding.
    ASSUMPTION: `transformer`'s GPT-style block (no token-type embeddings, pooler or MLM
    transform layer; BERT's are < 2% of the parameters). The FlexFlow `Transformersim` the
    scripts run differs: an encoder-decoder stack with dense layers of width hidden and no
    embeddings; the BERT shape is used here as the spec names it.
    182,476,800 params; 23.55 GFLOPs forward per sequence.

    Parameters
    ----------
    dtype : str
        Element type: fp16, bf16 or fp32.

    Returns
    -------
    Model
        Per-sequence costs; `input_bytes` = 4 x 64 (int32 token ids).
    """
    return transformer(
        "bert-topoopt", 12, 1024, 16, 64, 30522, ffn=4 * 1024, dtype=dtype,
        notes="TopoOpt BERT; ASSUMPTION: vocab 30522 (BERT WordPiece), ffn 4h, GPT-style block and tied head "
              "from models.transformer",
    )


TOPOOPT_MODELS = {
    "vgg16": vgg16,
    "dlrm-topoopt": dlrm_topoopt,
    "candle-uno": candle_uno,
    "ncf": ncf,
    "bert-topoopt": bert_topoopt,
}
