"""A GPU compute model that prices a transformer's kernels from their shapes.

A GEMM runs as cuBLAS runs it (NVIDIA, "Matrix Multiplication Background User's Guide",
https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html):
the output is cut into tm x tn tiles, one thread block each, stepping through all of K. Tile
quantization: a partial tile at the edge does a full tile's work (m costs ceil(m / tm) tiles).
Wave quantization: the SMs run the tiles in waves of `sms` (one 256x128 tile per SM on the A100,
the guide's example), and a partial last wave takes a full wave's time. A tile does 2 tm tn k
FLOPs on one SM at its share of peak x ceiling, and pays a fixed cost besides, its pipeline's fill
and its epilogue (loading the first k-slices, writing the tm x tn output), stated as
`tile_overhead` k-steps: a tile takes 2 tm tn (k + tile_overhead) / rate. That cost is what makes a
GEMM with a short k (Megatron's row-parallel projections: k = h / t) far slower than its FLOPs say. A tile size takes max(its compute, the
GEMM's compulsory bytes at the achievable bandwidth); cuBLAS' heuristics pick the fastest tile, so
the GEMM takes the minimum over the tiles, plus one launch. Limitation: every tile size runs at the
same per-SM rate, while the guide notes smaller tiles reuse less data and run slower, so shapes
where small tiles win are priced optimistically.

An FP8 GEMM (`Gemm.fp8`, Transformer Engine's; `workload.fp8`) is the same tile model at the FP8
peak and ceiling (`GpuCompute.fp8_peak_flops`, `fp8_gemm_ceiling`) with 1-byte operands.

The GPU presets and their sources are in `system.gpus`.

A memory-bound kernel (layer norm, softmax, GeLU, dropout, residual add, the optimizer step)
takes its bytes over the achievable bandwidth, plus one launch. The single-efficiency roofline
(`system.npu.NPU`) stays as the simpler option.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError

# The output tile shapes cuBLAS chooses among, largest (most data reuse, most efficient) first, as
# the Matrix Multiplication Background User's Guide lists them.
CUBLAS_TILES = ((256, 128), (128, 256), (128, 128), (256, 64), (64, 256), (128, 64), (64, 128), (64, 64))

# The figures each preset cites a source for (one `sources` entry per figure, "figure: ...").
FIGURES = ("peak_flops", "memory_bandwidth", "memory_capacity", "sms", "tiles", "gemm_ceiling",
           "memory_efficiency", "kernel_overhead", "l2_bandwidth", "tile_overhead", "attention_rates",
           "fp8_peak_flops", "fp8_gemm_ceiling")

# Bytes of one FP8 element (E4M3 or E5M2): the operands of a `Gemm` with `fp8` (`workload.fp8`).
FP8_BYTES = 1


def _count(field: str, value) -> int:
    """`value` as a positive integer, else ConfigError naming `field`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ConfigError(field, value, "accepted: an integer >= 1")
    return int(value)


@dataclass(frozen=True)
class Gemm:
    """`count` independent (batched) GEMMs, each an (m x k) by (k x n) product.

    Parameters
    ----------
    m, n, k : int
        Each output is m x n, reduced over k; each >= 1.
    count : int
        Independent GEMMs of this shape run as one batched kernel, >= 1.
    fp8 : bool
        Both operands in FP8 (`FP8_BYTES` each), run at the GPU's FP8 tensor-core rate
        (`GpuCompute.fp8_peak_flops`); the output stays in the activations' type (bf16), as
        Transformer Engine's FP8 GEMMs write it (`workload.fp8`).

    Examples
    --------
    >>> g = Gemm(2048, 4608, 12288)
    >>> g.flops == 2 * 2048 * 4608 * 12288, g.bytes(2) == (2048 * 12288 + 12288 * 4608 + 2048 * 4608) * 2
    (True, True)
    >>> Gemm(2048, 4608, 12288, fp8=True).bytes(2) == 2048 * 12288 + 12288 * 4608 + 2048 * 4608 * 2
    True
    """

    m: int
    n: int
    k: int
    count: int = 1
    fp8: bool = False

    def __post_init__(self):
        for name in ("m", "n", "k", "count"):
            object.__setattr__(self, name, _count(f"gemm.{name}", getattr(self, name)))
        if not isinstance(self.fp8, bool):
            raise ConfigError("gemm.fp8", self.fp8, "accepted: True or False")

    @property
    def flops(self) -> int:
        """FLOPs: 2 m n k per GEMM (a multiply and an add per term), times `count`."""
        return 2 * self.m * self.n * self.k * self.count

    def bytes(self, dtype_bytes: float = 2) -> float:
        """Compulsory memory traffic: read both operands and write the output once.

        Parameters
        ----------
        dtype_bytes : float
            Bytes per element (2 for fp16/bf16).

        Returns
        -------
        float
            (m k + k n + m n) x count x dtype_bytes, bytes; with `fp8` the operands at `FP8_BYTES`:
            ((m k + k n) FP8_BYTES + m n dtype_bytes) x count.
        """
        if self.fp8:
            return ((self.m * self.k + self.k * self.n) * FP8_BYTES + self.m * self.n * dtype_bytes) * self.count
        return (self.m * self.k + self.k * self.n + self.m * self.n) * self.count * dtype_bytes


@dataclass(frozen=True)
class Memory:
    """A memory-bound kernel that reads and writes `nbytes` bytes in total.

    Parameters
    ----------
    nbytes : float
        Bytes read plus bytes written, >= 0.
    name : str
        What it is (layer norm, softmax, ...), for reports.
    backward_bytes : float, optional
        Bytes its backward kernel(s) read and write, as the kernel's implementation states them
        (`workload.kernels` says per kernel); None: twice `nbytes` (read the output gradient and the
        saved input, write the input gradient).
    """

    nbytes: float
    name: str = ""
    backward_bytes: float | None = None

    def __post_init__(self):
        _real("memory.nbytes", self.nbytes, lambda v: 0 <= v < math.inf, "accepted: a finite byte count >= 0")
        if self.backward_bytes is not None:
            _real("memory.backward_bytes", self.backward_bytes, lambda v: 0 <= v < math.inf,
                  "accepted: a finite byte count >= 0")

    @property
    def bwd_nbytes(self) -> float:
        """Bytes of the backward (`backward_bytes`, or twice `nbytes` when not stated)."""
        return 2 * self.nbytes if self.backward_bytes is None else self.backward_bytes


@dataclass(frozen=True)
class Attention:
    """A fused attention kernel (FlashAttention; Transformer Engine's cuDNN fused attention): the
    scores and their softmax stay on chip, so it moves only Q, K, V and the output, and runs at a
    measured rate for its head dimension and sequence length (`GpuCompute.attention_rates`).

    Parameters
    ----------
    seq : int
        Sequence length (queries = keys).
    head_dim : int
        Head dimension.
    count : int
        Heads it runs (microbatch x heads on this GPU).
    causal : bool
        Causal mask: half the score matrix is computed.
    backward : bool
        The backward kernel (recomputes the scores: 2.5x the forward's FLOPs, the FlashAttention
        papers' count).

    Examples
    --------
    >>> Attention(4096, 128, 32).flops == 4 * 4096 ** 2 * 128 * 32 // 2
    True
    """

    seq: int
    head_dim: int
    count: int
    causal: bool = True
    backward: bool = False

    def __post_init__(self):
        for name in ("seq", "head_dim", "count"):
            object.__setattr__(self, name, _count(f"attention.{name}", getattr(self, name)))

    @property
    def flops(self) -> float:
        """FLOPs as the FlashAttention papers count them: 4 seq^2 head_dim per head forward, half
        of it causal, 2.5x for the backward."""
        f = 4.0 * self.seq * self.seq * self.head_dim * self.count * (0.5 if self.causal else 1.0)
        return f * 2.5 if self.backward else f


Kernel = Gemm | Memory | Attention


def _real(field: str, value, ok, accepted: str) -> None:
    """ConfigError naming `field` unless `value` is a real number (not a bool) with ok(value)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not ok(value):
        raise ConfigError(field, value, accepted)


@dataclass(frozen=True)
class GpuCompute:
    """One GPU as the shape-aware compute model of the module doc.

    Parameters
    ----------
    name : str
        The part, e.g. ``A100-SXM4-80GB``.
    peak_flops : float
        Dense fp16/bf16 tensor-core peak, FLOP/s.
    memory_bandwidth : float
        HBM bandwidth from the datasheet, bytes/s.
    memory_capacity : float
        HBM capacity, bytes.
    sms : int
        Streaming multiprocessors: tiles in one wave.
    tiles : tuple of (int, int)
        Output tile shapes (tm, tn) cuBLAS chooses among.
    gemm_ceiling : float
        Fraction of peak a full wave of the best tile sustains, in (0, 1].
    memory_efficiency : float
        Fraction of `memory_bandwidth` memory-bound kernels reach, in (0, 1].
    kernel_overhead : float
        Seconds added per kernel launch, >= 0.
    sources : tuple of str
        One citation per figure (``"figure: value, source"``).
    l2_bandwidth : float
        L2 cache bandwidth, bytes/s (inf: not limiting). A tile's main loop reads (tm + tn) k
        operand elements from L2 for 2 tm tn k FLOPs, so an SM's share l2_bandwidth / sms feeds at
        most 2 tm tn / ((tm + tn) dtype bytes) FLOP per byte: small tiles reuse less and run slower
        (the guide's point that larger tiles are more efficient).
    tile_overhead : float
        A tile's fixed cost (pipeline fill, epilogue) in k-steps, >= 0: a tile takes
        2 tm tn (k + tile_overhead) FLOP-times at its rate.
    attention_rates : tuple
        Measured fused-attention throughput: ((direction, causal, head_dim, ((seq, FLOP/s), ...)),
        ...) with direction "forward" or "backward"; empty: the GPU has no fused attention here.
    fp8_peak_flops : float
        Dense FP8 tensor-core peak, FLOP/s, >= 0 (0: no FP8 tensor cores; a `Gemm` with `fp8` is
        then refused).
    fp8_gemm_ceiling : float
        Fraction of `fp8_peak_flops` a full wave of the best tile sustains, in (0, 1] (0 without
        FP8): an FP8 GEMM takes the same tiles, waves and tile overhead (k-steps) at this peak and
        ceiling, its operands 1 byte in the L2 and memory bounds.

    Examples
    --------
    >>> gpu = GpuCompute("toy", peak_flops=100e12, memory_bandwidth=1e12, memory_capacity=1e9, sms=4,
    ...                  tiles=((128, 128),), gemm_ceiling=0.5, memory_efficiency=1.0, kernel_overhead=0.0)
    >>> t4, t5 = gpu.gemm_time(Gemm(256, 256, 4096)), gpu.gemm_time(Gemm(256, 384, 4096))  # 4 tiles, 6 tiles
    >>> round(t5 / t4, 6)   # 6 tiles on 4 SMs: two waves
    2.0
    """

    name: str
    peak_flops: float
    memory_bandwidth: float
    memory_capacity: float
    sms: int
    tiles: tuple
    gemm_ceiling: float
    memory_efficiency: float
    kernel_overhead: float
    sources: tuple = ()
    l2_bandwidth: float = math.inf
    tile_overhead: float = 0.0
    attention_rates: tuple = ()
    fp8_peak_flops: float = 0.0
    fp8_gemm_ceiling: float = 0.0

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError("npu.name", self.name, "accepted: a non-empty name")
        for field, example in (("peak_flops", "312e12"), ("memory_bandwidth", "2.039e12"), ("memory_capacity", "80e9")):
            _real(f"npu.{field}", getattr(self, field), lambda v: 0 < v < math.inf, f"accepted: a number > 0, e.g. {example}")
        _count("npu.sms", self.sms)
        try:
            tiles = tuple((_count("npu.tiles", tm), _count("npu.tiles", tn)) for tm, tn in self.tiles)
        except (TypeError, ValueError):
            raise ConfigError("npu.tiles", self.tiles, "accepted: (tm, tn) pairs of integers >= 1") from None
        if not tiles:
            raise ConfigError("npu.tiles", self.tiles, "accepted: at least one (tm, tn) tile shape")
        object.__setattr__(self, "tiles", tiles)
        for field in ("gemm_ceiling", "memory_efficiency"):
            _real(f"npu.{field}", getattr(self, field), lambda v: 0 < v <= 1, "accepted: a fraction in (0, 1]")
        _real("npu.kernel_overhead", self.kernel_overhead, lambda v: 0 <= v < math.inf, "accepted: seconds >= 0, e.g. 1e-6")
        _real("npu.tile_overhead", self.tile_overhead, lambda v: 0 <= v < math.inf, "accepted: k-steps >= 0, e.g. 545")
        _real("npu.fp8_peak_flops", self.fp8_peak_flops, lambda v: 0 <= v < math.inf,
              "accepted: a number >= 0 (0: no FP8 tensor cores), e.g. 1978.9e12")
        fp8 = self.fp8_peak_flops > 0  # FP8 tensor cores: their ceiling is a fraction; none: 0
        _real("npu.fp8_gemm_ceiling", self.fp8_gemm_ceiling, lambda v: 0 < v <= 1 if fp8 else v == 0,
              "accepted: a fraction in (0, 1] with fp8_peak_flops > 0, else 0")
        if isinstance(self.sources, str) or not all(isinstance(s, str) for s in self.sources):
            raise ConfigError("npu.sources", self.sources, "accepted: a tuple of citation strings")
        object.__setattr__(self, "sources", tuple(self.sources))

    def gemm_time(self, g: Gemm, dtype_bytes: float = 2) -> float:
        """Seconds of one (batched) GEMM: tile and wave quantization, memory bound, one launch.

        Parameters
        ----------
        g : Gemm
            The GEMM.
        dtype_bytes : float
            Bytes per element of its operands (2 for fp16/bf16) and, for an FP8 GEMM (`Gemm.fp8`),
            of its output; its operands are then `FP8_BYTES`.

        Returns
        -------
        float
            min over tiles (tm, tn) of max(waves x 2 tm tn (k + tile_overhead) / per-SM rate,
            compulsory bytes / (bandwidth x memory efficiency)), plus `kernel_overhead`; waves = ceil(ceil(m / tm)
            ceil(n / tn) count / sms); per-SM rate = min(peak x ceiling, l2_bandwidth x 2 tm tn /
            ((tm + tn) operand bytes)) / sms; peak and ceiling those of the GEMM's precision
            (`fp8_peak_flops` and `fp8_gemm_ceiling` for an FP8 GEMM). ConfigError for an FP8 GEMM
            on a GPU without FP8 tensor cores.
        """
        peak, ceiling = self.peak_of(g), self.fp8_gemm_ceiling if g.fp8 else self.gemm_ceiling
        operand = FP8_BYTES if g.fp8 else dtype_bytes  # bytes per operand element read through L2
        per_sm = peak * ceiling / self.sms  # FLOP/s of one SM at the ceiling
        memory = g.bytes(dtype_bytes) / (self.memory_bandwidth * self.memory_efficiency)
        best = math.inf
        for tm, tn in self.tiles:
            # integer ceilings: a partial tile does a full tile's work, a partial wave takes a full wave's time
            tiles = -(-g.m // tm) * -(-g.n // tn) * g.count
            waves = -(-tiles // self.sms)
            rate = min(per_sm, self.l2_bandwidth / self.sms * 2.0 * tm * tn / ((tm + tn) * operand))
            best = min(best, max(waves * 2.0 * tm * tn * (g.k + self.tile_overhead) / rate, memory))
        return best + self.kernel_overhead

    def peak_of(self, g: Gemm) -> float:
        """The dense tensor-core peak of `g`'s precision, FLOP/s: `fp8_peak_flops` for an FP8 GEMM,
        else `peak_flops`; ConfigError naming `workload.dtype` for an FP8 GEMM on a GPU without FP8."""
        if not g.fp8:
            return self.peak_flops
        if not self.fp8_peak_flops:
            raise ConfigError("workload.dtype", "fp8", f"needs a GPU with FP8 tensor cores, not {self.name}; "
                                                       "accepted: fp16, bf16, fp32")
        return self.fp8_peak_flops

    def memory_time(self, k: Memory) -> float:
        """Seconds of a memory-bound kernel.

        Parameters
        ----------
        k : Memory
            The kernel.

        Returns
        -------
        float
            nbytes / (memory_bandwidth x memory_efficiency) + kernel_overhead.
        """
        return k.nbytes / (self.memory_bandwidth * self.memory_efficiency) + self.kernel_overhead

    def attention_time(self, k: Attention) -> float:
        """Seconds of a fused attention kernel: its FLOPs at the measured rate for its direction,
        mask and head dimension (the nearest measured head dimension; a causal backward at the
        non-causal rate where only that was measured), interpolated in log2(seq) between measured
        lengths and held flat beyond them; plus one launch.

        Parameters
        ----------
        k : Attention

        Returns
        -------
        float
            Seconds; ConfigError when the preset has no measured rates.
        """
        direction = "backward" if k.backward else "forward"
        rows = [r for r in self.attention_rates if r[0] == direction]
        if not rows:
            raise ConfigError("parallelism.attention", "fused",
                              f"no measured fused-attention rates for {self.name}; accepted: unfused")
        same = [r for r in rows if r[1] == k.causal] or rows
        _, _, _, points = min(same, key=lambda r: (abs(math.log2(r[2] / k.head_dim)), r[2]))
        seqs = [math.log2(s) for s, _ in points]
        rate = float(np.interp(math.log2(k.seq), seqs, [r for _, r in points]))
        return k.flops / rate + self.kernel_overhead

    def kernel_time(self, k: Kernel, dtype_bytes: float = 2) -> float:
        """Seconds of one kernel: `gemm_time` of a `Gemm`, `memory_time` of a `Memory`.

        Parameters
        ----------
        k : Gemm or Memory
            The kernel.
        dtype_bytes : float
            Bytes per GEMM operand element.

        Returns
        -------
        float
            Seconds, launch included.
        """
        if isinstance(k, Gemm):
            return self.gemm_time(k, dtype_bytes)
        if isinstance(k, Memory):
            return self.memory_time(k)
        if isinstance(k, Attention):
            return self.attention_time(k)
        raise ConfigError("kernel", k, "accepted: a Gemm, Memory or Attention kernel")

    def kernels_time(self, kernels: Iterable[Kernel], dtype_bytes: float = 2) -> tuple[float, float, float]:
        """Seconds of running kernels one after another on one stream.

        Parameters
        ----------
        kernels : iterable of Gemm or Memory
            The kernels.
        dtype_bytes : float
            Bytes per GEMM operand element.

        Returns
        -------
        tuple of float
            (total, seconds in matmuls and fused attention, seconds in memory-bound kernels),
            launches included.
        """
        times = [(not isinstance(k, Memory), self.kernel_time(k, dtype_bytes)) for k in kernels]
        gemm = sum(t for is_gemm, t in times if is_gemm)
        memory = sum(t for is_gemm, t in times if not is_gemm)
        return gemm + memory, gemm, memory

    def efficiency(self, g: Gemm, dtype_bytes: float = 2) -> float:
        """Achieved fraction of peak of one GEMM, flops / `gemm_time` / the peak of its precision
        (`peak_of`: the FP8 peak for an FP8 GEMM) (reports, tests).

        Parameters
        ----------
        g : Gemm
            The GEMM.
        dtype_bytes : float
            Bytes per operand element.

        Returns
        -------
        float
            In (0, gemm_ceiling] (fp8: (0, fp8_gemm_ceiling]).
        """
        return g.flops / self.gemm_time(g, dtype_bytes) / self.peak_of(g)
