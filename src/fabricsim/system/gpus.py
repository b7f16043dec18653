"""The GPU presets of the shape-aware compute model (`system.compute.GpuCompute`): A100 SXM4 (80 and
40 GB; no FP8 tensor cores) and H100 SXM5 (FP8 too: `workload.dtype: fp8`), every figure with its
source (`GpuCompute.sources`: one per `compute.FIGURES` entry), and `get_gpu` to name them in
configs (`system.npu.gpu`). No H200 or B200 preset exists yet (their FP8 peaks would come with them).
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from ..errors import ConfigError
from .compute import CUBLAS_TILES, GpuCompute

# Sources shared by the presets.
_GUIDE = ("NVIDIA, Matrix Multiplication Background User's Guide, https://docs.nvidia.com/deeplearning/"
          "performance/dl-performance-matrix-multiplication/index.html")
_MAMF = ("S. Bekman, ml-engineering, 'Maximum Achievable Matmul FLOPS comparison table' (BF16, mean of 100 "
         "iterations, best shape), https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md")
_AZURE = "Microsoft Azure, AI-benchmarking-guide, https://github.com/Azure/AI-benchmarking-guide, Azure_Results/"
_AZURE_A100_GEMM = ("Azure's cuBLASLt FP16 GEMM table on ND A100 v4 (A100-SXM4-80GB, random data, 10,000 warm-up "
                    "iterations; CUDA 12.5, PyTorch 2.4.1), " + _AZURE + "ND_A100_v4_results.md")
_AZURE_H100_FP8 = ("Azure's cuBLASLt FP8 GEMM table on ND H100 v5 (H100 80GB HBM3, random data, 10,000 warm-up "
                   "iterations; CUDA 12.6, PyTorch 2.4.0), " + _AZURE + "ND_H100_v5_results.md (kept in its forks, "
                   "e.g. github.com/samuel-bohman/AI-benchmarking-guide)")
_A100_DS = ("NVIDIA A100 Tensor Core GPU datasheet, https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/"
            "a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf")
_A100_WP = ("NVIDIA A100 Tensor Core GPU Architecture whitepaper, https://images.nvidia.com/aem-dam/en-zz/"
            "Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf")
_H100_WP = "NVIDIA H100 Tensor Core GPU Architecture whitepaper, https://resources.nvidia.com/en-us-hopper-architecture/nvidia-h100-tensor-c"
_H100_DS = "NVIDIA H100 datasheet, https://www.nvidia.com/en-us/data-center/h100/"
_TILES = f"tiles: 256x128, 128x256, 128x128, 256x64, 64x256, 128x64, 64x128, 64x64, {_GUIDE}"
# Back-to-back launches of a 2.9 us kernel in one stream took 3.8 us each: ~0.9 us per launch that
# the GPU does not hide. Not re-read in this session (the stored copy here holds only its title).
_LAUNCH = ("kernel_overhead: 0.9 us = 3.8 us per back-to-back launch of a 2.9 us kernel in one stream, A. Gray, "
           "'Getting Started with CUDA Graphs', NVIDIA Technical Blog 2019, https://developer.nvidia.com/blog/cuda-graphs/")

A100_SXM4_80GB = GpuCompute(
    name="A100-SXM4-80GB",
    peak_flops=312e12,            # dense fp16/bf16 tensor core (624 with sparsity)
    memory_bandwidth=2.039e12,    # HBM2e
    memory_capacity=80e9,         # datasheet GB; the part holds 80 GiB, so this is conservative
    sms=108,
    tiles=CUBLAS_TILES,
    gemm_ceiling=271.2 / 312,     # best measured bf16 matmul, 0.869 (sources)
    memory_efficiency=1.70e12 / 2.039e12,  # STREAM Triad 1.70 TB/s, 0.834 (BabelStream on EPCC Tursa: 1.725, 0.846)
    kernel_overhead=0.9e-6,
    l2_bandwidth=5120 * 1.41e9,   # 5,120 bytes/clk at the 1,410 MHz boost clock: 7.22 TB/s
    tile_overhead=545,            # INFERRED from ONE row of Azure's cuBLASLt table (sources)
    sources=(
        f"peak_flops: 312 TFLOP/s dense FP16/BF16 Tensor Core, {_A100_DS}",
        f"memory_bandwidth: 2,039 GB/s HBM2e (A100 80GB SXM), {_A100_DS}",
        f"memory_capacity: 80 GB HBM2e, {_A100_DS}",
        f"sms: 108 SMs in the A100 product, {_A100_WP}",
        _TILES,
        f"gemm_ceiling: 271.2 of 312 TFLOP/s (86.9%), NVIDIA A100 SXM, torch 2.6.0+cu126, the best of a shape sweep, "
        f"whose best shapes are large enough that a tile's fixed cost is a few percent, {_MAMF}",
        f"memory_efficiency: STREAM Triad 1.70 TB/s on A100-SXM4-80GB (ND A100 v4), {_AZURE}ND_A100_v4_results.md",
        _LAUNCH,
        f"l2_bandwidth: 5,120 bytes/clk (A100) at 1,410 MHz boost, {_A100_WP} (L2 cache read bandwidth, "
        "2.3x V100's 2,048 bytes/clk)",
        "attention_rates: none carried: no measurement of the fused attention Megatron-LM runs on A100, by "
        "sequence length, was found (FlashAttention-2 measures its own kernel), so `attention: fused` is refused "
        "on this GPU, https://arxiv.org/abs/2307.08691",
        f"tile_overhead: 545 k-steps, the ONE figure inferred here, from ONE row of {_AZURE_A100_GEMM}: m=802816, "
        "n=192, k=768, 157.8 TFLOP/s, the row where a tile's fixed cost dominates (k = 768) and no wave is partial "
        "(3,136 x 2 tiles); the table's other seven rows are predictions (benchmarks/validate_compute.py)",
        "fp8_peak_flops: 0, no FP8 tensor cores (the A100's tensor cores take TF32, FP16, BF16, INT8, INT4), "
        + _A100_DS,
        f"fp8_gemm_ceiling: 0, no FP8 tensor cores, {_A100_DS}",
    ),
)

A100_SXM4_40GB = replace(
    A100_SXM4_80GB,
    name="A100-SXM4-40GB",
    memory_bandwidth=1.555e12,    # HBM2; same GA100 compute and clocks as the 80 GB part
    memory_capacity=40e9,
    memory_efficiency=1377.5e9 / 1.555e12,  # BabelStream 5.0 Triad 1,377.5 GB/s on ALCF Polaris, 0.886
    sources=tuple(
        {"memory_bandwidth": f"memory_bandwidth: 1,555 GB/s HBM2 (A100 40GB SXM), {_A100_DS}",
         "memory_capacity": f"memory_capacity: 40 GB HBM2, {_A100_DS}",
         "memory_efficiency": "memory_efficiency: BabelStream 5.0 CUDA Triad 1,377,517 MB/s on A100-SXM4-40GB "
                              "(ALCF Polaris), https://github.com/argonne-lcf/ALCFBeginnersGuide, polaris/02_profiling.md",
         }.get(src.split(":")[0], src) for src in A100_SXM4_80GB.sources),
)

# FlashAttention-3 (Shah et al. 2024, arXiv 2407.08608v2), H100 80GB SXM5, BF16, batch x seq = 16k,
# hidden 2048: the cuDNN bars' labels of its forward (non-causal, causal) and backward figures, head dim 128
_FA3 = "J. Shah et al., FlashAttention-3, arXiv 2407.08608v2 (2024), attention speed figures, cuDNN bars"
_CUDNN_FWD_128 = ((512, 497), (1024, 574), (2048, 617), (4096, 609), (8192, 600), (16384, 595))
_CUDNN_FWD_128_CAUSAL = ((512, 315), (1024, 410), (2048, 484), (4096, 518), (8192, 529), (16384, 539))
_CUDNN_BWD_128 = ((512, 305), (1024, 408), (2048, 465), (4096, 499), (8192, 518), (16384, 516))

H100_SXM5_80GB = GpuCompute(
    name="H100-SXM5-80GB",
    peak_flops=989.4e12,          # dense bf16 (the datasheet's 1,979 TFLOP/s is with sparsity)
    memory_bandwidth=3.35e12,     # HBM3
    memory_capacity=80e9,
    sms=132,
    tiles=CUBLAS_TILES,           # the guide's list; Hopper's kernels differ, the wave rule is the same
    gemm_ceiling=794.5 / 989,     # best measured bf16 matmul, 0.803
    memory_efficiency=2.97e12 / 3.35e12,   # STREAM Triad 2.97 TB/s, 0.887
    kernel_overhead=0.9e-6,
    l2_bandwidth=5120 / 108 * 132 * 1.98e9,  # ASSUMPTION: A100's L2 bytes/clk per SM, 132 SMs, 1,980 MHz boost
    tile_overhead=545,            # ASSUMPTION: the A100's (sources)
    fp8_peak_flops=1978.9e12,     # dense FP8 tensor core (3,957.8 with sparsity)
    fp8_gemm_ceiling=1382.2 / 1978.9,  # best row of Azure's cuBLASLt FP8 table on H100 80GB HBM3, 0.698
    # cuDNN fused attention (what Transformer Engine runs on Hopper), BF16, head dim 128, TFLOP/s by
    # sequence length: FlashAttention-3 paper, figures "Attention forward/backward speed" (sources)
    attention_rates=(
        ("forward", False, 128, tuple((s, r * 1e12) for s, r in _CUDNN_FWD_128)),
        ("forward", True, 128, tuple((s, r * 1e12) for s, r in _CUDNN_FWD_128_CAUSAL)),
        ("backward", False, 128, tuple((s, r * 1e12) for s, r in _CUDNN_BWD_128)),
    ),
    sources=(
        f"peak_flops: 989.4 TFLOP/s dense BF16 Tensor Core (1,978.9 with sparsity), H100 SXM5, {_H100_WP}",
        f"memory_bandwidth: 3.35 TB/s HBM3, H100 SXM, {_H100_DS}",
        f"memory_capacity: 80 GB HBM3, H100 SXM, {_H100_DS}",
        f"sms: 132 SMs in H100 SXM5, {_H100_WP}",
        _TILES,
        f"gemm_ceiling: 794.5 of 989 TFLOP/s (80.3%), NVIDIA H100 SXM, torch 2.7.0+cu126, {_MAMF}",
        f"memory_efficiency: STREAM Triad 2.97 TB/s on H100 80GB HBM3 (ND H100 v5), {_AZURE}ND_H100_v5_results.md "
        "(kept in its forks, e.g. github.com/samuel-bohman/AI-benchmarking-guide)",
        _LAUNCH,
        "l2_bandwidth: ASSUMPTION 12.4 TB/s = A100's 5,120 bytes/clk over 108 SMs, x 132 SMs x 1,980 MHz boost "
        f"(the H100 whitepaper gives no bytes/clk figure), {_H100_WP}",
        f"attention_rates: cuDNN fused attention, BF16, head dim 128: forward 497-617 TFLOP/s non-causal, 315-539 "
        f"causal, backward 305-518 (the causal backward at the non-causal rate: ASSUMPTION), {_FA3}, "
        "https://arxiv.org/abs/2407.08608",
        "tile_overhead: ASSUMPTION 545 k-steps, the A100's (inferred from Azure's A100 table), at bf16 and FP8 alike: "
        "no published bf16 GEMM table by shape for H100 was found (Azure's H100 and H200 tables are FP8; with this "
        "overhead the H100 FP8 table's other eight rows are predictions, tests/test_fp8.py), "
        + _AZURE + "ND_A100_v4_results.md",
        f"fp8_peak_flops: 1,978.9 TFLOP/s dense FP8 Tensor Core (3,957.8 with sparsity), H100 SXM5, {_H100_WP}; "
        f"1,979 TFLOP/s in {_H100_DS}",
        "fp8_gemm_ceiling: 1,382.2 of 1,978.9 TFLOP/s (69.8%), the best row (32768 x 32768 x 32768) of "
        + _AZURE_H100_FP8,
    ),
)

GPUS = MappingProxyType({"a100": A100_SXM4_80GB, "a100-40gb": A100_SXM4_40GB, "h100": H100_SXM5_80GB})


def get_gpu(name: str) -> GpuCompute:
    """The preset GPU of this name (case-insensitive).

    Parameters
    ----------
    name : str
        One of `GPUS`' names: ``a100``, ``a100-40gb``, ``h100``.

    Returns
    -------
    GpuCompute

    Examples
    --------
    >>> get_gpu("A100").sms
    108
    """
    key = name.strip().lower() if isinstance(name, str) else None
    if key not in GPUS:
        raise ConfigError("npu.gpu", name, f"accepted: one of {', '.join(GPUS)}")
    return GPUS[key]
