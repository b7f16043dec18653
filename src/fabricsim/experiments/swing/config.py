"""The Swing reproduction's config (`configs/swing.yaml`): pydantic models for its structure and
units, then one pass that resolves the cross references (shape names, entry keys, Table 2 rows,
sizes on the run's grid) into the frozen `SwingConfig`.

Every error is one line naming the file, the field path (`algorithms[1].variants[0].options.mode`),
the value and what is accepted.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from ...config import read_yaml_mapping, validate
from ...errors import ConfigError
from ...units import format_size, parse_bandwidth, parse_size, parse_time

DEFAULT_CONFIG_NAME = "swing.yaml"
# The paper's algorithms, as the registry names them. A config may list them before they are
# registered: the run then skips them with a warning. Any other unknown name is a config error.
PAPER_ALGORITHMS = ("swing", "torus_recursive_doubling", "bucket", "hamiltonian_rings")
ROLES = ("subject", "baseline", "extra")


# ==== the resolved config =======================================================================


@dataclass(frozen=True)
class Variant:
    """One schedule: a registered algorithm with options (e.g. Swing-L = swing, mode=latency)."""

    label: str
    algorithm: str
    options: tuple[tuple[str, Any], ...] = ()
    table2: str | None = None  # row of the paper's Table 2 this variant is checked against

    @property
    def options_dict(self) -> dict:
        """The options as keyword arguments."""
        return dict(self.options)


@dataclass(frozen=True)
class Entry:
    """One curve of the paper: the best of its variants at each size."""

    key: str
    label: str
    role: str  # subject | baseline | extra
    variants: tuple[Variant, ...]
    shapes: tuple[str, ...] | None = None  # None: every shape

    def applies_to(self, shape: str) -> bool:
        """Whether this curve is drawn for `shape`."""
        return self.shapes is None or shape in self.shapes


@dataclass(frozen=True)
class Shape:
    """A torus (or a 2-D HyperX) of the paper: its name, dims (dimension 0 fastest), figures."""

    name: str
    dims: tuple[int, ...]
    figures: tuple[str, ...] = ()
    extended: bool = False
    topology: str = "torus"  # or "hyperx": every node linked to every node of its row and column

    def build(self, bandwidth_Bps: float, hop_s: float):
        """The topology at `bandwidth_Bps` per link and `hop_s` latency per hop."""
        from ...topology import stack, torus

        if self.topology == "hyperx":
            return stack(("fc",) * len(self.dims), self.dims, bandwidth_Bps, hop_s, name="hyperx:" + self.name)
        return torus(self.dims, bandwidth_Bps, hop_s)

    @property
    def p(self) -> int:
        """Number of nodes."""
        return int(np.prod(self.dims))

    @property
    def D(self) -> int:
        """Number of dimensions larger than 1."""
        return sum(1 for d in self.dims if d > 1)


@dataclass(frozen=True)
class PaperGain:
    """A gain of Swing the paper states: figure, shape, size (None: the largest), range in percent."""

    figure: str
    shape: str
    size: float | None  # bytes; None = the largest gain over all sizes ("max")
    lo: float  # percent; lo == hi unless the paper gives a range
    hi: float
    bandwidth_Bps: float | None = None  # None = the config's link bandwidth
    vs: str | None = None  # entry key the paper names as the best other algorithm there

    @property
    def mid(self) -> float:
        """The middle of the paper's range, percent."""
        return (self.lo + self.hi) / 2


@dataclass(frozen=True)
class PaperGoodput:
    """A goodput the paper states, Gb/s."""

    shape: str
    size: float
    entry: str
    gbps: float


@dataclass(frozen=True)
class Table2Row:
    """A row of the paper's Table 2 (deficiencies); values are numbers, maps D -> number or formulas."""

    key: str
    label: str
    lam: Any  # number | formula string | tuple of (D, number)
    psi: Any
    xi: Any

    def values(self, p: int, D: int, dmax: int) -> tuple[float | None, float | None, float | None]:
        """(Lambda, Psi, Xi) at p nodes, D dimensions, largest dimension dmax (None: not given)."""
        return tuple(_table2_value(v, p, D, dmax) for v in (self.lam, self.psi, self.xi))  # type: ignore[return-value]


@dataclass(frozen=True)
class SwingConfig:
    """Everything the reproduction uses: network parameters, sizes, shapes, algorithms, the paper's numbers."""

    name: str
    source: str
    link_bandwidth_Bps: float
    link_latency_s: float
    hop_processing_s: float
    step_overhead_s: float
    model: str
    sizes: tuple[float, ...]
    sizes_extended: tuple[float, ...]
    shapes: tuple[Shape, ...]
    sweep_shape: str | None
    sweep_bandwidths: tuple[float, ...]
    algorithms: tuple[Entry, ...]
    quick_shapes: tuple[str, ...]
    quick_sweep: bool
    paper_gains: tuple[PaperGain, ...]
    runtime_32B_us: tuple[tuple[str, str, float], ...]  # (shape, entry key, us)
    peak_fraction: tuple[tuple[str, float | None, float | None], ...]  # (shape, model, sst)
    paper_goodput: tuple[PaperGoodput, ...]
    table2: tuple[Table2Row, ...]
    swing_b_exact: tuple[tuple[str, float], ...]
    l_distance_sums: tuple[tuple[str, str, float], ...] = ()  # (shape, table2 key, hops)

    @property
    def hop_latency_s(self) -> float:
        """Per hop: link latency + packet processing (400 ns in the paper's setup)."""
        return self.link_latency_s + self.hop_processing_s

    @property
    def subject(self) -> Entry:
        """The entry with role subject (Swing)."""
        return next(e for e in self.algorithms if e.role == "subject")

    def shape(self, name: str) -> Shape:
        """The shape called `name`."""
        return next(s for s in self.shapes if s.name == name)

    def table2_row(self, key: str | None) -> Table2Row | None:
        """The Table 2 row `key` (None if there is none)."""
        return next((r for r in self.table2 if r.key == key), None)


# ---- Table 2 formulas: numbers, a map D -> number, or an arithmetic formula -------------------

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos}
_FUNCS = {"log2": math.log2, "sqrt": math.sqrt, "max": max, "min": min}


def eval_formula(text: str, names: dict[str, float]) -> float:
    """A small arithmetic formula (+ - * / **, log2, sqrt, min, max) in the given names."""

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
            return _FUNCS[node.func.id](*(ev(a) for a in node.args))
        raise ValueError(f"unsupported element {ast.dump(node)[:40]}")

    return float(ev(ast.parse(str(text), mode="eval")))


def _table2_value(v: Any, p: int, D: int, dmax: int) -> float | None:
    if v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, tuple):  # ((D, value), ...)
        return dict(v).get(D)
    return eval_formula(v, {"p": p, "D": D, "dmax": dmax})


def _size_list(lo: float, hi: float, factor: float) -> tuple[float, ...]:
    out, s = [], lo
    while s <= hi * (1 + 1e-12):
        out.append(float(s))
        s *= factor
    return tuple(out)


# ==== the file's structure (pydantic) ==========================================================


def _unit(parse, what: str, positive: bool = False):
    def check(v):
        if isinstance(v, bool):
            raise ValueError(f"accepted: {what}")
        try:
            x = parse(v, "value")
        except ConfigError as e:
            raise ValueError(e.accepted) from None
        if positive and x <= 0:
            raise ValueError(f"accepted: {what} greater than zero")
        return x
    return BeforeValidator(check)


def _number(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError("accepted: a number")
    return float(v)


Size = Annotated[float, _unit(parse_size, "a size, e.g. 32B, 2KiB, 512MiB", positive=True)]
Bandwidth = Annotated[float, _unit(parse_bandwidth, "a bandwidth, e.g. 400Gbps")]
Time = Annotated[float, _unit(parse_time, "a time, e.g. 100ns")]
Number = Annotated[float, BeforeValidator(_number)]
Text = Annotated[str, BeforeValidator(lambda v: _text(v))]


def _text(v) -> str:
    if isinstance(v, bool) or not isinstance(v, (str, int, float)) or not str(v).strip():
        raise ValueError("accepted: a non-empty string")
    return str(v).strip()


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NetworkIn(_In):
    link_bandwidth: Bandwidth
    link_latency: Time
    hop_processing: Time
    step_overhead: Time
    model: str = "congestion-aware"

    @field_validator("model")
    @classmethod
    def _model(cls, v):
        from ...network.analytical import normalize_model

        return normalize_model(v)


class SizesIn(_In):
    min: Size
    max: Size
    factor: Number
    max_extended: Size | None = None

    @field_validator("factor")
    @classmethod
    def _factor(cls, v):
        if v <= 1:
            raise ValueError("accepted: a number > 1, e.g. 4")
        return v


class ShapeIn(_In):
    name: Text | None = None
    dims: list[Annotated[int, Field(ge=2, strict=True)]] = Field(min_length=1)
    figures: list[Text] = Field(default_factory=list)
    extended: bool = False
    topology: Literal["torus", "hyperx"] = "torus"


class SweepIn(_In):
    shape: Text
    bandwidths: list[Bandwidth] = Field(min_length=1)


class VariantIn(_In):
    label: Text | None = None
    algorithm: Text
    options: dict[str, str | int | float | bool] = Field(default_factory=dict)
    table2: str | None = None


class EntryIn(_In):
    key: Text
    label: Text | None = None
    role: Literal["subject", "baseline", "extra"]
    variants: list[VariantIn] = Field(min_length=1)
    shapes: list[Text] | None = None


class QuickIn(_In):
    shapes: list[Text] | None = Field(default=None, min_length=1)
    bandwidth_sweep: bool = False


class Table2In(_In):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    label: str | None = None
    lam: Number | dict[int, Number] | str | None = Field(default=None, alias="lambda")
    psi: Number | dict[int, Number] | str | None = None
    xi: Number | dict[int, Number] | str | None = None


class PointIn(_In):
    figure: Text = "?"
    shape: Text
    size: str | int | float
    gain: Number | list[Number]
    vs: Text | None = None
    bandwidth: Bandwidth | None = None


class PeakIn(_In):
    model: Annotated[Number, Field(gt=0, le=1)] | None = None
    sst: Annotated[Number, Field(gt=0, le=1)] | None = None


class GoodputIn(BaseModel):
    model_config = ConfigDict(extra="allow")
    shape: Text
    size: Size


class PaperIn(_In):
    gain_sizes: list[Size] = Field(default_factory=list)
    fig7: dict[str, list[Number]] = Field(default_factory=dict)
    fig8: dict[str, list[Number]] = Field(default_factory=dict)
    points: list[PointIn] = Field(default_factory=list)
    runtime_32B_us: dict[str, dict[str, Number]] = Field(default_factory=dict)
    peak_fraction: dict[str, PeakIn] = Field(default_factory=dict)
    goodput_gbps: list[GoodputIn] = Field(default_factory=list)
    table2: dict[str, Table2In] = Field(default_factory=dict)
    swing_b_exact_psi_xi: dict[str, Number] = Field(default_factory=dict)
    l_distance_sums: dict[str, dict[str, Number]] = Field(default_factory=dict)


class SwingConfigIn(_In):
    name: Text = "swing"
    network: NetworkIn
    sizes: SizesIn
    shapes: list[ShapeIn] = Field(min_length=1)
    bandwidth_sweep: SweepIn | None = None
    algorithms: list[EntryIn] = Field(min_length=1)
    quick: QuickIn = Field(default_factory=QuickIn)
    paper: PaperIn = Field(default_factory=PaperIn)


# ==== loading ===================================================================================


def default_config_path() -> Path:
    """configs/swing.yaml of the checkout this package runs from, else of the current directory."""
    here = Path(__file__).resolve()
    for cand in (here.parents[4] / "configs" / DEFAULT_CONFIG_NAME, Path.cwd() / "configs" / DEFAULT_CONFIG_NAME):
        if cand.is_file():
            return cand
    raise ConfigError("--config", str(Path("configs") / DEFAULT_CONFIG_NAME),
                      "not found; accepted: the path of a swing reproduction config (see configs/swing.yaml)")


def load_config(path: str | Path | None = None, data: dict | None = None) -> SwingConfig:
    """Read and check a reproduction config (a YAML file, or an already-parsed mapping).

    Parameters
    ----------
    path : str or Path, optional
        The YAML file (default: configs/swing.yaml).
    data : dict, optional
        An already-parsed mapping instead of a file.

    Returns
    -------
    SwingConfig
    """
    if data is not None:
        return parse_config(data, "config")
    p = Path(path) if path is not None else default_config_path()
    if not p.is_file():
        raise ConfigError("--config", str(p), "not found; accepted: a readable YAML file")
    return parse_config(read_yaml_mapping(p, "network, sizes, shapes, algorithms, paper"), p.name)


def parse_config(data: Any, source: str = "config") -> SwingConfig:
    """Check a config mapping and resolve it into a `SwingConfig` (one-line ConfigError naming
    `source` and the field otherwise)."""
    if not isinstance(data, dict):
        raise ConfigError(source, type(data).__name__, "accepted: a YAML mapping")
    raw = validate(SwingConfigIn, data, source, brackets=True)
    from .resolve import resolve

    return resolve(raw, source)


def size_label(nbytes: float) -> str:
    """`2MiB`, `32B`: a size without spaces."""
    return format_size(nbytes).replace(" ", "")
