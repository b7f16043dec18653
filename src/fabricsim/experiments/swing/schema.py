"""The structure of `configs/swing.yaml` as pydantic models: sections, units, types, ranges.

Loaded through `fabricsim.config.validate`, so the first error is one line naming the file, the
field path (`shapes[0].dims`), the value and what is accepted. A key set to null counts as not
given (its default, or "required field is missing"). Checks that span fields (shape names
referenced elsewhere, sizes on the run's grid, algorithm options) are `resolve.py`'s.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from ...errors import ConfigError
from ...units import parse_bandwidth, parse_size, parse_time

# ---- field types with the reproduction's messages ---------------------------------------------


def _unit(parse, what: str, positive: str = ""):
    """A validator reading a value with units through `parse` (to bytes, bytes/s or s);
    `positive`, if given, is the message for values <= 0."""

    def check(v):
        if isinstance(v, bool):
            raise ValueError(f"accepted: {what}")
        try:
            x = parse(v, "value")
        except ConfigError as e:
            raise ValueError(e.accepted) from None
        if positive and x <= 0:
            raise ValueError(f"accepted: {positive}")
        return x

    return BeforeValidator(check)


def _of_type(kind: type, what: str):
    """A before-validator accepting only values of `kind` (list or dict)."""

    def check(v):
        if not isinstance(v, kind):
            raise ValueError(f"accepted: {what}")
        return v

    return BeforeValidator(check)


def List(item, what: str, nonempty: bool = False):
    """A list field type with the reproduction's message.

    Parameters
    ----------
    item : type
        The type of each element.
    what : str
        What is accepted, named in the error.
    nonempty : bool
        Reject an empty list too.

    Returns
    -------
    type
        `Annotated[list[item], ...]`: a non-list (or, with `nonempty`, an empty list) fails with `what`.
    """
    checks = (_of_type(list, what),) + ((_nonempty(what),) if nonempty else ())
    return Annotated[(list[item], *checks)]


def Mapping(value, what: str = "a mapping (key: value)"):
    """A mapping field type with the reproduction's message.

    Parameters
    ----------
    value : type
        The type of each value (keys are names).
    what : str
        What is accepted, named in the error.

    Returns
    -------
    type
        `Annotated[dict[str, value], ...]`: anything but a mapping fails with `what`.
    """
    return Annotated[dict[str, value], _of_type(dict, what)]


def _check(test, accepted: str):
    """A before-validator: `test(v)` returns the value or None to reject it with `accepted`."""

    def check(v):
        out = test(v)
        if out is None:
            raise ValueError(f"accepted: {accepted}")
        return out

    return BeforeValidator(check)


def _as_number(v) -> float | None:
    ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
    return float(v) if ok else None


def _as_text(v) -> str | None:
    ok = not isinstance(v, bool) and isinstance(v, (str, int, float)) and str(v).strip()
    return str(v).strip() if ok else None


def _nonempty(what: str):
    """An after-validator rejecting an empty list."""

    def check(v):
        if not v:
            raise ValueError(f"accepted: {what}")
        return v

    return AfterValidator(check)


def _dims(v):
    ok = isinstance(v, (list, tuple)) and v and all(isinstance(d, int) and not isinstance(d, bool) and d >= 2 for d in v)
    return tuple(v) if ok else None


def _gain(v):
    """A gain in percent or a [low, high] range -> (low, high)."""
    if isinstance(v, (list, tuple)):
        xs = [_as_number(x) for x in v]
        if len(xs) != 2 or None in xs:
            raise ValueError("accepted: a number or a [low, high] range of gains in percent")
        return tuple(sorted(xs))
    x = _as_number(v)
    if x is None:
        raise ValueError("accepted: a gain in percent, or [low, high]")
    return (x, x)


def _size_or_max(v):
    """`max` -> None (the largest gain over all sizes), else a size in bytes > 0."""
    if isinstance(v, str) and v.strip().lower() == "max":
        return None
    if isinstance(v, bool):
        raise ValueError("accepted: a size greater than zero, or max")
    try:
        x = parse_size(v, "value")
    except ConfigError:
        raise ValueError("accepted: a size greater than zero (e.g. 2MiB), or max") from None
    if x <= 0:
        raise ValueError("accepted: a size greater than zero, or max")
    return x


_FORMULA = ("a number, a map D -> number, or a formula in p, D, dmax with + - * / **, log2, sqrt, min, max "
            "(at most 1000 characters; every value finite, powers below 1e300)")


def _table2_value(v):
    """A Table 2 entry: a number, a map D -> number (as sorted pairs), or a formula string."""
    from .config import eval_formula

    if isinstance(v, dict):
        pairs = [(_as_int(k), _as_number(x)) for k, x in v.items()]
        if any(d is None or x is None for d, x in pairs):
            raise ValueError("accepted: a map from D (an integer) to a number")
        return tuple(sorted(pairs))
    if isinstance(v, str):
        try:
            eval_formula(v, {"p": 64, "D": 2, "dmax": 8})
        except ValueError as e:
            raise ValueError(f"{e} at p=64, D=2, dmax=8; accepted: {_FORMULA}") from None
        return v
    x = _as_number(v)
    if x is None:
        raise ValueError(f"accepted: {_FORMULA}")
    return x


def _as_int(v) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _fraction(v) -> float | None:
    x = _as_number(v)
    return x if x is not None and 0 < x <= 1 else None


def _factor(v) -> float | None:
    x = _as_number(v)
    return x if x is not None and x > 1 else None


def _option(v):
    return v if isinstance(v, (str, int, float, bool)) else None


def _flag(v):
    return v if isinstance(v, bool) else None


Size = Annotated[float, _unit(parse_size, "a size, e.g. 32B, 2KiB, 512MiB",
                              positive="a size greater than zero, e.g. 32B, 2KiB, 512MiB")]
Bandwidth = Annotated[float, _unit(parse_bandwidth, "a bandwidth, e.g. 400Gbps")]
Time = Annotated[float, _unit(parse_time, "a time, e.g. 100ns")]
Number = Annotated[float, _check(_as_number, "a number")]
Text = Annotated[str, _check(_as_text, "a non-empty string")]
Flag = Annotated[bool, _check(_flag, "true or false")]
Fraction = Annotated[float, _check(_fraction, "a fraction in (0, 1]")]
OptionValue = Annotated[Any, _check(_option, "a string, number or boolean")]
Table2Value = Annotated[Any, BeforeValidator(_table2_value)]
Percent = Annotated[float, _check(_as_number, "a gain in percent")]
Gains = List(Percent, "a list of gains in percent, one per paper.gain_sizes")
Microseconds = Annotated[float, _check(_as_number, "microseconds")]
Hops = Annotated[float, _check(_as_number, "a number of hops")]


# ---- sections -----------------------------------------------------------------------------------


class _In(BaseModel):
    """A section: a mapping; unknown keys are errors (listing the fields); a key set to null
    counts as not given."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _mapping(cls, data):
        if not isinstance(data, dict):
            raise ValueError("accepted: a mapping (key: value)")
        names = [f.alias or n for n, f in cls.model_fields.items()]
        extra = [k for k in data if k not in names and k not in cls.model_fields]
        if extra and cls.model_config.get("extra") == "forbid":  # named before missing fields, as a ConfigError
            raise ConfigError(str(extra[0]), data[extra[0]], f"unknown field; accepted fields: {', '.join(names)}")
        return {k: v for k, v in data.items() if v is not None}


class NetworkIn(_In):
    """`network`: link bandwidth (bytes/s), link latency and per-hop processing (s), the per-step
    overhead (s; or inferred, `calibration`), the NIC's injection bandwidth (bytes/s), its packet
    size (bytes) and per-packet overhead (s), and the analytical model's name."""

    link_bandwidth: Bandwidth
    link_latency: Time
    hop_processing: Time
    step_overhead: Time | None = None
    nic_injection: Annotated[float, _unit(parse_bandwidth, "a bandwidth, e.g. 12800Gbps",
                                          positive="a bandwidth greater than zero")] | None = None
    packet_size: Size | None = None
    packet_overhead: Annotated[float, _unit(parse_time, "a time, e.g. 1ns",
                                            positive="a time greater than zero")] | None = None
    model: str = "congestion-aware"

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, v):
        from ...network.analytical import normalize_model

        return normalize_model(v)


class CalibrationPointIn(_In):
    """The one point a constant is inferred from: an entry's 32 B runtime label on a shape
    (`paper.runtime_32B_us`)."""

    shape: Text
    entry: Text


class CalibrationIn(_In):
    """`calibration`: the per-step overhead is inferred from one labelled 32 B runtime."""

    step_overhead_from: CalibrationPointIn | None = None


class SizesIn(_In):
    """`sizes`: the vector sizes, min .. max (bytes) in steps of `factor` (> 1); `max_extended`
    for the shapes marked extended."""

    min: Size
    max: Size
    factor: Annotated[float, _check(_factor, "a number > 1, e.g. 4")]
    max_extended: Size | None = None


class ShapeIn(_In):
    """One torus (or 2-D HyperX): dimension sizes (dimension 0 fastest), name, figures."""

    name: Text | None = None
    dims: Annotated[tuple[int, ...], _check(_dims, "a list of integers >= 2, e.g. [8, 8]")]
    figures: List(Text, "a list of figure names") = Field(default_factory=list)
    extended: Flag = False
    topology: Literal["torus", "hyperx"] = "torus"


class SweepIn(_In):
    """`bandwidth_sweep`: one shape at several link bandwidths (bytes/s)."""

    shape: Text
    bandwidths: List(Bandwidth, "a non-empty list of bandwidths, e.g. [100Gbps, 400Gbps]", nonempty=True)


class VariantIn(_In):
    """One schedule of an entry: an algorithm, its options, a Table 2 row to compare with."""

    label: Text | None = None
    algorithm: Text
    options: Mapping(OptionValue, "a mapping of option: value") = Field(default_factory=dict)
    table2: Text | None = None


class EntryIn(_In):
    """One curve: its key, label, role and variants (and the shapes it is drawn for)."""

    key: Text
    label: Text | None = None
    role: Literal["subject", "baseline", "extra"]
    variants: List(VariantIn, "a non-empty list of variants", nonempty=True)
    shapes: List(Text, "a non-empty list of shape names", nonempty=True) | None = None


class QuickIn(_In):
    """`quick`: the CI subset (shape names, and whether the bandwidth sweep runs)."""

    shapes: List(Text, "a non-empty list of shape names", nonempty=True) | None = None
    bandwidth_sweep: Flag = False


class Table2In(_In):
    """A row of the paper's Table 2: Lambda, Psi, Xi as numbers, maps D -> number or formulas."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    label: Text | None = None
    lam: Table2Value = Field(default=None, alias="lambda")
    psi: Table2Value = None
    xi: Table2Value = None


class PointIn(_In):
    """A gain the paper states: figure, shape, size (or max), gain or [low, high] in percent."""

    figure: Text = "?"
    shape: Text
    size: Annotated[float | None, BeforeValidator(_size_or_max)]
    gain: Annotated[tuple[float, float], BeforeValidator(_gain)]
    vs: Text | None = None
    bandwidth: Bandwidth | None = None


class PeakIn(_In):
    """The paper's peak-goodput fractions of one shape (model and SST)."""

    model: Fraction | None = None
    sst: Fraction | None = None


class GoodputIn(_In):
    """A goodput the paper states: shape, size, and one `entry key: Gb/s` per algorithm."""

    model_config = ConfigDict(extra="allow")
    shape: Text
    size: Size


class PaperIn(_In):
    """`paper`: the numbers to compare with (gains, runtimes, peaks, goodputs, Table 2)."""

    gain_sizes: List(Size, "a list of sizes") = Field(default_factory=list)
    fig7: Mapping(Gains) = Field(default_factory=dict)
    fig8: Mapping(Gains) = Field(default_factory=dict)
    points: List(PointIn, "a list of points") = Field(default_factory=list)
    runtime_32B_us: Mapping(Mapping(Microseconds)) = Field(default_factory=dict)
    peak_fraction: Mapping(PeakIn) = Field(default_factory=dict)
    goodput_gbps: List(GoodputIn, "a list of goodputs") = Field(default_factory=list)
    table2: Mapping(Table2In) = Field(default_factory=dict)
    swing_b_exact_psi_xi: Mapping(Number) = Field(default_factory=dict)
    l_distance_sums: Mapping(Mapping(Hops)) = Field(default_factory=dict)


class SwingConfigIn(_In):
    """The whole file, before cross references are resolved (`resolve.resolve`)."""

    name: Text = "swing"
    network: NetworkIn
    calibration: CalibrationIn = Field(default_factory=CalibrationIn)
    sizes: SizesIn
    shapes: List(ShapeIn, "a non-empty list of tori", nonempty=True)
    bandwidth_sweep: SweepIn | None = None
    algorithms: List(EntryIn, "a non-empty list of algorithm entries", nonempty=True)
    quick: QuickIn = Field(default_factory=QuickIn)
    paper: PaperIn = Field(default_factory=PaperIn)
