"""The shape-aware GPU compute model (`system.compute`): tile and wave quantization, the memory
bound, memory-bound kernels, the Adam step's bytes, presets and their sources, bad input.

Expected values are closed forms written here, never the code under test."""

from __future__ import annotations

import doctest
import math
from dataclasses import replace

import pytest

from fabricsim.errors import ConfigError
from fabricsim.system import compute
from fabricsim.system import gpus
from fabricsim.system.compute import FIGURES, Gemm, GpuCompute, Memory
from fabricsim.system.optimizer import adam_step_bytes
from fabricsim.system.gpus import A100_SXM4_40GB, A100_SXM4_80GB, GPUS, H100_SXM5_80GB, get_gpu

A100 = A100_SXM4_80GB


def only_256x128(gpu: GpuCompute, **kw) -> GpuCompute:
    """The GPU with cuBLAS restricted to 256x128 tiles, no launch cost and (by default) unlimited memory."""
    return replace(gpu, **{"tiles": ((256, 128),), "kernel_overhead": 0.0, "memory_bandwidth": 1e18, **kw})


def wave_time(gpu: GpuCompute, waves: int, k: int, tm: int = 256, tn: int = 128) -> float:
    """Closed form: waves x one tile's FLOPs, k plus the tile's fixed k-steps, at one SM's share of
    peak x ceiling."""
    return waves * 2 * tm * tn * (k + gpu.tile_overhead) / (gpu.peak_flops * gpu.gemm_ceiling / gpu.sms)


def test_docstring_examples():
    for module in (compute, gpus):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted > 0


def test_gemm_flops_and_bytes():
    g = Gemm(3, 5, 7, count=2)
    assert g.flops == 2 * 3 * 5 * 7 * 2
    assert g.bytes(2) == (3 * 7 + 7 * 5 + 3 * 5) * 2 * 2


@pytest.mark.parametrize("gpu", [A100, H100_SXM5_80GB], ids=["a100", "h100"])
def test_one_tile_past_a_full_wave_doubles_the_time(gpu):
    g = only_256x128(gpu)
    k = 4096
    full = g.gemm_time(Gemm(256, 128, k, count=gpu.sms))          # exactly sms tiles: one wave
    over = g.gemm_time(Gemm(256, 128, k, count=gpu.sms + 1))      # one more tile: a second wave
    assert full == pytest.approx(wave_time(gpu, 1, k), rel=1e-12)
    assert over == pytest.approx(2 * full, rel=1e-12)


def test_wave_quantization_on_a_2d_grid_with_real_memory():
    g = only_256x128(A100, memory_bandwidth=A100.memory_bandwidth)
    k = 8192
    # 12 x 9 = 108 tiles (one wave) against 10 x 11 = 110 tiles (two waves), both compute-bound
    assert g.gemm_time(Gemm(12 * 256, 9 * 128, k)) == pytest.approx(wave_time(A100, 1, k), rel=1e-12)
    assert g.gemm_time(Gemm(10 * 256, 11 * 128, k)) == pytest.approx(wave_time(A100, 2, k), rel=1e-12)


def test_tile_quantization_a_partial_tile_does_full_work():
    g = only_256x128(A100)
    k, c = 2048, A100.sms
    t256, t257, t512 = (g.gemm_time(Gemm(m, 128, k, count=c)) for m in (256, 257, 512))
    assert t257 == pytest.approx(t512, rel=1e-12)                 # 257 rows cost two 256-row tiles
    assert t512 == pytest.approx(wave_time(A100, 2, k), rel=1e-12)
    assert t256 == pytest.approx(wave_time(A100, 1, k), rel=1e-12)


def test_the_fastest_tile_wins():
    # 64 x 64 output: one 64x64 tile runs 1/8 of the work a 256x128 tile does
    g = replace(A100, tiles=((256, 128), (64, 64)), kernel_overhead=0.0, memory_bandwidth=1e18, l2_bandwidth=math.inf)
    assert g.gemm_time(Gemm(64, 64, 4096)) == pytest.approx(wave_time(A100, 1, 4096, 64, 64), rel=1e-12)


def test_a_full_wave_of_the_best_tile_runs_at_the_ceiling():
    g = Gemm(12 * 256, 9 * 128, 8192)                             # 108 tiles of 256x128
    expected = g.flops * (8192 + A100.tile_overhead) / 8192 / (A100.peak_flops * A100.gemm_ceiling) + A100.kernel_overhead
    assert A100.gemm_time(g) == pytest.approx(expected, rel=1e-12)


def test_a_tall_thin_gemm_is_memory_bound():
    # 65536 x 16 outputs over k = 8192: the 2 x 65536 x 8192 byte operand takes 632 us at 1.70 TB/s,
    # while 1,024 64x64 tiles (10 waves) take 10 x 2 x 64 x 64 x (8192 + 545) / (271.2 TFLOP/s / 108)
    g = Gemm(65536, 16, 8192)
    nbytes = (65536 * 8192 + 8192 * 16 + 65536 * 16) * 2
    expected = nbytes / (A100.memory_bandwidth * A100.memory_efficiency) + A100.kernel_overhead
    assert A100.gemm_time(g) == pytest.approx(expected, rel=1e-12)
    assert A100.gemm_time(g, dtype_bytes=4) == pytest.approx(2 * (expected - A100.kernel_overhead)
                                                             + A100.kernel_overhead, rel=1e-12)


@pytest.mark.parametrize("gpu", [A100, A100_SXM4_40GB, H100_SXM5_80GB], ids=lambda g: g.name)
def test_large_gemm_reaches_the_ceiling(gpu):
    # 8192^2 outputs in 256x128 tiles: 2048 tiles, 18.96 waves on 108 SMs (19: 0.998 of the ceiling),
    # 15.52 on 132 (16: 0.970); the L2 bandwidth does not bind a 256x128 tile (85 FLOP per byte)
    # (a tile's fixed k-steps cost k / (k + tile_overhead) of the rate)
    waves = 2048 / gpu.sms
    fixed = 8192 / (8192 + gpu.tile_overhead)
    assert gpu.efficiency(Gemm(8192, 8192, 8192)) == pytest.approx(gpu.gemm_ceiling * waves / math.ceil(waves) * fixed,
                                                                   rel=1e-3)
    assert gpu.efficiency(Gemm(8192, 8192, 8192)) <= gpu.gemm_ceiling


def test_small_tiles_are_held_back_by_the_l2():
    # a 64x64 tile reads 128 k elements per 2 x 64 x 64 x k FLOPs: 32 FLOP per byte in fp16, so an SM's
    # share of the L2 (7.22 TB/s / 108) feeds 2.14 TFLOP/s, below the ceiling's 2.51 TFLOP/s per SM
    g = replace(A100, tiles=((64, 64),), kernel_overhead=0.0, memory_bandwidth=1e18)
    one_wave = Gemm(12 * 64, 9 * 64, 8192)
    rate = min(312e12 * A100.gemm_ceiling, 5120 * 1.41e9 * 2 * 64 * 64 / (128 * 2)) / 108
    assert g.gemm_time(one_wave) == pytest.approx(2 * 64 * 64 * (8192 + A100.tile_overhead) / rate, rel=1e-12)


def test_memory_kernel_time():
    k = Memory(3e9, "layer norm")
    assert A100.memory_time(k) == pytest.approx(3e9 / (2.039e12 * A100.memory_efficiency) + A100.kernel_overhead)
    assert A100.kernel_time(k) == A100.memory_time(k)


def test_kernels_time_splits_gemms_and_memory_kernels():
    gemms, mems = [Gemm(4096, 4096, 4096), Gemm(1024, 2048, 512, count=3)], [Memory(1e8), Memory(5e7, "x")]
    total, t_gemm, t_mem = A100.kernels_time([gemms[0], mems[0], gemms[1], mems[1]])
    assert t_gemm == pytest.approx(sum(A100.gemm_time(g) for g in gemms))
    assert t_mem == pytest.approx(1.5e8 / (A100.memory_bandwidth * A100.memory_efficiency) + 2 * A100.kernel_overhead)
    assert total == pytest.approx(t_gemm + t_mem)
    assert A100.kernels_time([]) == (0.0, 0.0, 0.0)


def test_adam_step_bytes_by_hand():
    # read fp32 grad 4 + read/write fp32 master 8 + read/write two fp32 moments 16 + write bf16 weight 2
    assert adam_step_bytes(1) == 4 + 2 * 4 + 2 * 2 * 4 + 2 == 30
    assert adam_step_bytes(1.5e9) == pytest.approx(45e9)
    assert adam_step_bytes(10, param_bytes=2, grad_bytes=2, master_bytes=4, state_bytes=8) == 10 * (2 + 8 + 16 + 2)


def test_preset_figures():
    assert (A100.peak_flops, A100.sms, A100.memory_bandwidth, A100.memory_capacity) == (312e12, 108, 2.039e12, 80e9)
    assert (A100_SXM4_40GB.memory_bandwidth, A100_SXM4_40GB.memory_capacity) == (1.555e12, 40e9)
    assert (H100_SXM5_80GB.peak_flops, H100_SXM5_80GB.sms, H100_SXM5_80GB.memory_bandwidth) == (989.4e12, 132, 3.35e12)
    assert A100.tiles[0] == (256, 128) and len(A100.tiles) == 8
    for gpu in GPUS.values():
        assert 0.5 < gpu.gemm_ceiling < 1 and 0.5 < gpu.memory_efficiency < 1 and 0 < gpu.kernel_overhead < 1e-5


@pytest.mark.parametrize("gpu", list(GPUS.values()), ids=list(GPUS))
def test_presets_cite_one_source_per_figure(gpu):
    for figure in FIGURES:
        cited = [s for s in gpu.sources if s.startswith(f"{figure}:")]
        assert len(cited) == 1, figure
        assert "http" in cited[0], cited[0]
    assert len(gpu.sources) == len(FIGURES)


def test_get_gpu():
    assert get_gpu("a100") is A100 and get_gpu(" H100 ") is H100_SXM5_80GB and get_gpu("a100-40gb") is A100_SXM4_40GB
    with pytest.raises(ConfigError) as err:
        get_gpu("v100")
    assert err.value.field == "npu.gpu" and "a100, a100-40gb, h100" in str(err.value)
    with pytest.raises(ConfigError):
        get_gpu(None)


@pytest.mark.parametrize("field, value", [
    ("sms", 0), ("sms", 1.5), ("peak_flops", 0), ("peak_flops", math.inf), ("memory_bandwidth", -1),
    ("memory_capacity", 0), ("gemm_ceiling", 0), ("gemm_ceiling", 1.5), ("memory_efficiency", 0),
    ("memory_efficiency", float("nan")), ("kernel_overhead", -1e-6), ("tiles", ()), ("tiles", ((0, 128),)),
    ("tiles", ((256,),)), ("name", ""), ("sources", "a string"),
])
def test_bad_gpu_values_name_the_field(field, value):
    with pytest.raises(ConfigError) as err:
        replace(A100, **{field: value})
    assert err.value.field == f"npu.{field}"


@pytest.mark.parametrize("make, field", [
    (lambda: Gemm(0, 1, 1), "gemm.m"), (lambda: Gemm(1, 1.5, 1), "gemm.n"), (lambda: Gemm(1, 1, True), "gemm.k"),
    (lambda: Gemm(1, 1, 1, count=0), "gemm.count"), (lambda: Memory(-1.0), "memory.nbytes"),
    (lambda: Memory(math.inf), "memory.nbytes"), (lambda: adam_step_bytes(-1), "params"),
    (lambda: A100.kernel_time("gemm"), "kernel"),
])
def test_bad_kernels_name_the_field(make, field):
    with pytest.raises(ConfigError) as err:
        make()
    assert err.value.field == field


def test_presets_are_frozen():
    with pytest.raises(AttributeError):
        A100.sms = 1
    with pytest.raises(TypeError):
        GPUS["b200"] = A100


# The A100 preset's GEMM formula by hand (module doc of system.compute): a tile (tm, tn) takes
# 2 tm tn (k + 545) FLOP-times at min(ceiling x peak, its L2 share x its reuse) / 108 per SM, in
# waves of 108 tiles; the GEMM takes the fastest tile, no faster than its compulsory bytes at
# 1.70 TB/s; plus a 0.9 us launch.
TILES = ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64))


def gemm_by_hand(m: int, n: int, k: int, count: int = 1) -> float:
    per_sm = 271.2e12 / 108
    l2_sm = 5120 * 1.41e9 / 108
    memory = (m * k + k * n + m * n) * count * 2 / 1.70e12
    best = min(math.ceil(math.ceil(m / tm) * math.ceil(n / tn) * count / 108)
               * 2 * tm * tn * (k + 545) / min(per_sm, l2_sm * 2 * tm * tn / ((tm + tn) * 2)) for tm, tn in TILES)
    return max(best, memory) + 0.9e-6


@pytest.mark.parametrize("shape", [
    (8192, 2304, 6144),   # 22B QKV at t = 8, b = 4: the column-parallel linear
    (8192, 6144, 768),    # its row-parallel projection: k = h / t = 768, where the tile overhead bites
    (2048, 6144, 12288),  # 175B fc1 at t = 8, b = 1: the skinny m of a microbatch of one
])
def test_megatron_gemm_shapes_by_hand(shape):
    assert A100.gemm_time(Gemm(*shape)) == pytest.approx(gemm_by_hand(*shape), rel=1e-12)


def test_attention_core_by_hand():
    # 22B at t = 8, b = 4, s = 2048, 64 heads of 96: per GPU 32 score matrices of 2048 x 2048
    from fabricsim.workload.kernels import selective_recompute

    b, s, h, a, t = 4, 2048, 6144, 64, 8
    heads, scores = b * a // t, b * a // t * s * s
    stream = 2.039e12 * (1.70e12 / 2.039e12)
    expected = (gemm_by_hand(s, s, h // a, heads)                     # Q K^T
                + 2 * scores * 2 / stream + 0.9e-6                    # softmax: read, write
                + scores * (2 * 2 + 1) / stream + 0.9e-6              # dropout: read, write, 1-byte mask
                + gemm_by_hand(s, h // a, s, heads))                  # scores x V
    total, _, _ = A100.kernels_time(selective_recompute(b, s, h, a, t))
    assert total == pytest.approx(expected, rel=1e-12)
    # the score GEMM (k = 96) pays its tiles' fixed cost: 4,096 256x128 tiles in 38 waves of
    # 2 x 256 x 128 x (96 + 545) FLOP-times, more than writing its 32 x 2048^2 fp16 scores
    tile = 2 * 256 * 128 * (96 + 545) / (271.2e12 / 108)
    assert A100.gemm_time(Gemm(s, s, h // a, heads)) == pytest.approx(38 * tile + 0.9e-6, rel=1e-12)


def test_megatron_optimizer_step_bytes_by_hand():
    from fabricsim.system.optimizer import megatron_optimizer_step

    # fp16: unscale (read + write fp32 grad) 8, norm (read) 4, Adam (read g, p, m, v; write p, m, v) 28,
    # copy to the model (read fp32, write fp16) 6, zero the buffer 4
    fp16 = megatron_optimizer_step(2e9)
    assert [k.name for k in fp16] == ["unscale and inf check", "gradient norm", "adam", "copy main to model parameters",
                                      "zero gradient buffer"]
    assert sum(k.nbytes for k in fp16) == pytest.approx(2e9 * (8 + 4 + 28 + 6 + 4))
    assert sum(k.nbytes for k in megatron_optimizer_step(2e9, loss_scaling=False)) == pytest.approx(2e9 * 42)


def test_fused_attention_by_hand():
    from fabricsim.system.compute import Attention

    # 4 x 16 heads of dim 128 over 4096 tokens, causal: 4 s^2 d x count / 2 FLOPs at cuDNN's measured
    # causal forward rate at 4k (518 TFLOP/s, FlashAttention-3's figure); backward 2.5x the FLOPs at
    # the backward rate (499), between 2k and 4k (465, 499) interpolated in log2(seq)
    fwd = Attention(4096, 128, 64)
    assert fwd.flops == 4 * 4096 ** 2 * 128 * 64 / 2
    assert H100_SXM5_80GB.kernel_time(fwd) == pytest.approx(fwd.flops / 518e12 + 0.9e-6, rel=1e-12)
    bwd = Attention(4096, 128, 64, backward=True)
    assert bwd.flops == 2.5 * fwd.flops
    assert H100_SXM5_80GB.kernel_time(bwd) == pytest.approx(bwd.flops / 499e12 + 0.9e-6, rel=1e-12)
    mid = Attention(int(2048 * 2 ** 0.5), 128, 64, causal=False)
    # (2896 tokens is log2 11.4998: the midpoint to 1e-5)
    assert H100_SXM5_80GB.kernel_time(mid) == pytest.approx(mid.flops / ((617 + 609) / 2 * 1e12) + 0.9e-6, rel=1e-5)
    # beyond the measured lengths the rate holds; the A100 carries no rates and refuses
    long = Attention(65536, 128, 1)
    assert H100_SXM5_80GB.kernel_time(long) == pytest.approx(long.flops / 539e12 + 0.9e-6, rel=1e-12)
    with pytest.raises(ConfigError) as e:
        A100.kernel_time(fwd)
    assert e.value.field == "parallelism.attention"


def test_fused_attention_replaces_the_core():
    from fabricsim.system.compute import Attention
    from fabricsim.workload.kernels import attention_forward, backward

    b, s, h, a, t = 2, 1024, 2048, 16, 4
    fused = attention_forward(b, s, h, a, t, fused=True)
    assert fused[3] == Attention(s, h // a, b * a // t)
    assert not any(isinstance(k, Memory) and k.name in ("softmax", "attention dropout") for k in fused)
    assert Attention(s, h // a, b * a // t, backward=True) in backward(fused)
