"""The Swing reproduction's results: the paper's arithmetic (goodput, gain), the result
dataclasses, and a case's curves from its variants' times (tables beside the paper's numbers:
`tables.py`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from .config import Shape, SwingConfig


# ==== the paper's arithmetic ==========================================================


def goodput_gbps(size_bytes, time_s):
    """Goodput: vector size / runtime.

    Parameters
    ----------
    size_bytes : float or array
        Bytes.
    time_s : float or array
        Seconds.

    Returns
    -------
    float array
        Gb/s (bits).
    """
    return np.asarray(size_bytes, dtype=float) * 8.0 / np.asarray(time_s, dtype=float) / 1e9


def gain_pct(t_swing: float, t_best: float) -> float:
    """The paper's gain of Swing over the best other algorithm.

    Parameters
    ----------
    t_swing, t_best : float
        Times, s.

    Returns
    -------
    float
        Percent: T_best/T_swing - 1 when Swing is faster (100 = twice as fast), else
        -(T_swing/T_best - 1).
    """
    if t_swing <= t_best:
        return (t_best / t_swing - 1.0) * 100.0
    return -(t_swing / t_best - 1.0) * 100.0


def speedup_of_gain(g_pct: float) -> float:
    """The speedup of a gain (the inverse of `gain_pct`).

    Parameters
    ----------
    g_pct : float
        A gain of Swing over the best other algorithm, percent.

    Returns
    -------
    float
        T_best / T_swing.
    """
    g = g_pct / 100.0
    return 1.0 + g if g >= 0 else 1.0 / (1.0 - g)


# ==== results =================================================================================


@dataclass(frozen=True)
class Curve:
    """One curve of a case: an entry (fastest of its variants at each size) or a variant.

    Parameters
    ----------
    key : str
        The entry key, or the variant label.
    label : str
    kind : str
        `entry` or `variant`.
    times_s : tuple of float
        Seconds, one per size of the case.
    goodput_gbps : tuple of float
        Vector size / time, Gb/s.
    chosen : tuple of str
        The variant that gives the time at each size.
    """

    key: str
    label: str
    kind: str
    times_s: tuple[float, ...]
    goodput_gbps: tuple[float, ...]
    chosen: tuple[str, ...]


@dataclass(frozen=True)
class CaseResult:
    """One case (a shape at one link bandwidth): its curves and Swing's gain at each size.

    Parameters
    ----------
    name : str
        `8x8`, or `8x8@100Gb/s` in the bandwidth sweep.
    shape : str
    dims : tuple of int
    bandwidth_Bps : float
        Link bandwidth, bytes/s.
    base : bool
        At the config's link bandwidth.
    sizes : tuple of float
        Bytes.
    peak_gbps : float
        D x link bandwidth, Gb/s.
    entries, variants : tuple of Curve
    gain_pct : tuple of float or None
        Swing against the best baseline at each size, percent (the paper's definition).
    best_baseline : tuple of str or None
        The fastest baseline's key at each size.
    topology : str
        The shape's family: `torus` or `hyperx` (`Shape.topology`).
    """

    name: str
    shape: str
    dims: tuple[int, ...]
    bandwidth_Bps: float
    base: bool
    sizes: tuple[float, ...]
    peak_gbps: float
    entries: tuple[Curve, ...]
    variants: tuple[Curve, ...]
    gain_pct: tuple[float | None, ...]
    best_baseline: tuple[str | None, ...]
    topology: str = "torus"

    def entry(self, key: str) -> Curve | None:
        """One entry's curve on this case.

        Parameters
        ----------
        key : str
            An entry key of the config (`swing`, `recdoub`, ...).

        Returns
        -------
        Curve or None
            The curve, None if the entry is not drawn here.
        """
        return next((c for c in self.entries if c.key == key), None)

    def size_index(self, size: float) -> int | None:
        """Where a size is on this case's grid.

        Parameters
        ----------
        size : float
            A vector size, bytes.

        Returns
        -------
        int or None
            Its index in `sizes` (relative tolerance 1e-9), None if not on the grid.
        """
        for i, s in enumerate(self.sizes):
            if math.isclose(s, size, rel_tol=1e-9):
                return i
        return None


@dataclass(frozen=True)
class GainRow:
    """A gain the paper states beside ours (percent): `diff_pp` = ours - paper (to the nearest end
    of a range; 0 inside it), `ratio` = our speedup over the best other / the paper's."""

    figure: str
    case: str
    shape: str
    bandwidth_gbps: float
    size: float
    size_label: str
    ours_pct: float
    paper_pct: float  # middle of the paper's range
    paper_lo: float
    paper_hi: float
    diff_pp: float  # ours - paper (to the nearest end of a range; 0 inside it)
    ratio: float  # our speedup over the best other / the paper's (1 + gain factors)
    ours_vs: str
    paper_vs: str | None


@dataclass(frozen=True)
class PeakRow:
    """Swing's goodput at the largest size (Gb/s) as a fraction of the peak D x link bandwidth,
    beside 1/(Psi Xi) of Swing-B (the bandwidth-only bound), the spec's model and SST's fractions."""

    shape: str
    size: float
    ours_gbps: float
    peak_gbps: float
    ours_fraction: float
    ours_model_fraction: float | None  # 1 / (Psi Xi) of Swing-B: the bandwidth-only bound
    spec_model_fraction: float | None
    sst_fraction: float | None
    ratio_vs_sst: float | None


@dataclass(frozen=True)
class LatencyRow:
    """An entry's 32 B runtime, ours beside the paper's label (us)."""

    shape: str
    entry: str
    label: str
    ours_us: float
    paper_us: float | None
    ratio: float | None


@dataclass(frozen=True)
class GoodputRow:
    """A goodput the paper states beside ours (Gb/s)."""

    shape: str
    entry: str
    label: str
    size: float
    ours_gbps: float | None
    paper_gbps: float
    ratio: float | None


@dataclass(frozen=True)
class DeficiencyRow:
    """A variant's deficiencies on a shape beside Table 2's (`paper_*`) and, where the spec gives
    one, an exact value: Swing-B's Psi*Xi, or the L variants' summed step distances in hops."""

    shape: str
    variant: str
    algorithm: str
    table2: str | None
    steps: int
    lam: float
    psi: float
    xi: float
    psi_xi: float
    latency_us: float
    paper_lam: float | None
    paper_psi: float | None
    paper_xi: float | None
    exact_kind: str | None  # "Psi*Xi" (Swing-B: sum_s delta/2^(s+1)) or "hops" (L: sum of distances)
    exact_ours: float | None  # ours in that normalisation
    exact_spec: float | None  # the spec's exact value, where given


@dataclass(frozen=True)
class Reproduction:
    """The whole reproduction: the network parameters (bytes/s, s), every case and every table.
    `warnings` name algorithms that are not registered (skipped), `notes` the ones that do not
    serve a shape (skipped, as in the paper); `elapsed_s` is the run's wall time. The NIC
    (`nic_injection_Bps`, bytes/s; `packet_size_B`, bytes; `packet_overhead_s`, s per packet) is
    the config's; `calibration_point` (shape, entry) names the 32 B label alpha was inferred from
    (`calibration_us`, us), None when alpha was given."""

    config: str
    quick: bool
    model: str
    link_bandwidth_Bps: float
    hop_latency_s: float
    step_overhead_s: float
    cases: tuple[CaseResult, ...]
    gains: tuple[GainRow, ...]
    peaks: tuple[PeakRow, ...]
    latencies: tuple[LatencyRow, ...]
    goodputs: tuple[GoodputRow, ...]
    deficiencies: tuple[DeficiencyRow, ...]
    warnings: tuple[str, ...]  # algorithms not registered (skipped)
    notes: tuple[str, ...]  # algorithms that do not serve a shape (skipped, as in the paper)
    elapsed_s: float = 0.0
    nic_injection_Bps: float | None = None
    packet_size_B: float | None = None
    packet_overhead_s: float | None = None
    calibration_point: tuple[str, str] | None = None
    calibration_us: float | None = None

    def case(self, name: str) -> CaseResult | None:
        """One case of the run.

        Parameters
        ----------
        name : str
            A case name (`8x8`, or `8x8@100Gb/s` for the bandwidth sweep).

        Returns
        -------
        CaseResult or None
            The case, None if it was not run.
        """
        return next((c for c in self.cases if c.name == name), None)

    def to_dict(self) -> dict:
        """Everything as JSON-able data.

        Returns
        -------
        dict
            Every field, nested dataclasses as dicts, tuples as lists, non-finite floats as None.
        """
        return _jsonable(asdict(self))


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.floating, float)):
        return None if not math.isfinite(float(x)) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    return x


def bandwidth_label(Bps: float) -> str:
    """A bandwidth as the paper writes it, in bits.

    Parameters
    ----------
    Bps : float
        A bandwidth, bytes/s.

    Returns
    -------
    str
        E.g. `400 Gb/s`, `1.6 Tb/s`.
    """
    gbps = Bps * 8 / 1e9
    return f"{gbps / 1000:g} Tb/s" if gbps >= 1000 else f"{gbps:g} Gb/s"


def case_result(name: str, shape: Shape, bw: float, base: bool, sizes, cfg: SwingConfig,
                var_times: dict[str, np.ndarray]) -> CaseResult:
    """A case's curves and gains from its variants' times.

    Parameters
    ----------
    name : str
        The case's name.
    shape : Shape
    bw : float
        Link bandwidth, bytes/s.
    base : bool
        At the config's link bandwidth.
    sizes : sequence of float
        Bytes.
    cfg : SwingConfig
    var_times : dict
        Variant label -> times, s, one per size (variants that ran).

    Returns
    -------
    CaseResult
        Each entry is the fastest of its variants at each size; the gain compares the subject
        with the fastest baseline.
    """
    sizes_a = np.asarray(sizes, dtype=float)
    variants, entries = [], []
    for e in cfg.algorithms:
        have = [v for v in e.variants if v.label in var_times]
        if not e.applies_to(shape.name) or not have:
            continue
        for v in have:
            t = var_times[v.label]
            variants.append(Curve(v.label, v.label, "variant", tuple(t), tuple(goodput_gbps(sizes_a, t)), (v.label,) * len(t)))
        stack = np.stack([var_times[v.label] for v in have])
        k = np.argmin(stack, axis=0)
        t = stack[k, np.arange(len(sizes_a))]
        entries.append(Curve(e.key, e.label, "entry", tuple(t), tuple(goodput_gbps(sizes_a, t)), tuple(have[i].label for i in k)))
    subj = next((c for c in entries if c.key == cfg.subject.key), None)
    base_keys = {e.key for e in cfg.algorithms if e.role == "baseline"}
    bases = [c for c in entries if c.key in base_keys]
    gains: list[float | None] = []
    best: list[str | None] = []
    for i in range(len(sizes_a)):
        if subj is None or not bases:
            gains.append(None)
            best.append(None)
            continue
        b = min(bases, key=lambda c: c.times_s[i])
        gains.append(gain_pct(subj.times_s[i], b.times_s[i]))
        best.append(b.key)
    return CaseResult(name, shape.name, shape.dims, bw, base, tuple(float(s) for s in sizes_a),
                      shape.D * bw * 8 / 1e9, tuple(entries), tuple(variants), tuple(gains), tuple(best),
                      shape.topology)
