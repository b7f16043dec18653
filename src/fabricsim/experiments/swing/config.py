"""The Swing reproduction's config (`configs/swing.yaml`) as frozen dataclasses of plain data.

`parse_config` checks a mapping against the file's pydantic models (`schema.py`: structure,
units, types, ranges), then resolves the cross references (`resolve.py`: shape names, entry keys,
Table 2 rows, sizes on the run's grid, algorithm options through the registry's one parser) into
a `SwingConfig`. Every error is one line naming the file, the field path
(`algorithms[1].variants[0].options.mode`), the value and what is accepted. Table 2's formulas are
evaluated by `formula.eval_formula` (re-exported here).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...config import read_yaml_mapping, validate
from ...errors import ConfigError
from ...units import format_size
from .formula import (  # noqa: F401  (re-exported: the formula evaluator, importable from here as before)
    FORMULA_MAX_CHARS,
    FORMULA_MAX_LOG10,
    FORMULA_MAX_NODES,
    eval_formula,
)

DEFAULT_CONFIG_NAME = "swing.yaml"
# The paper's algorithms, as the registry names them. A config may list them before they are
# registered: the run then skips them with a warning. Any other unknown name is a config error.
PAPER_ALGORITHMS = ("swing", "torus_recursive_doubling", "bucket", "hamiltonian_rings")
ROLES = ("subject", "baseline", "extra")


# ==== the resolved config =======================================================================


@dataclass(frozen=True)
class Variant:
    """One schedule: a registered algorithm with typed options (Swing-L = swing, mode=latency).

    Parameters
    ----------
    label : str
        Unique over the config (`Swing-L`).
    algorithm : str
        The registry's canonical name.
    options : tuple of (str, value)
        Typed options in name order (`choose_algorithm`), without `dims` (the shape gives them).
    table2 : str, optional
        The row of the paper's Table 2 this variant is compared with.
    """

    label: str
    algorithm: str
    options: tuple[tuple[str, Any], ...] = ()
    table2: str | None = None

    @property
    def options_dict(self) -> dict:
        """The options as keyword arguments (dict)."""
        return dict(self.options)


@dataclass(frozen=True)
class Entry:
    """One curve of the paper: at each size, the fastest of its variants.

    Parameters
    ----------
    key : str
        Short name (`swing`, `recdoub`), referenced by the paper's numbers.
    label : str
        Shown in tables and plots.
    role : str
        `subject` (Swing), `baseline` (what Swing's gain is measured against) or `extra`.
    variants : tuple of Variant
    shapes : tuple of str, optional
        The shapes the curve is drawn for (None: every shape).
    """

    key: str
    label: str
    role: str
    variants: tuple[Variant, ...]
    shapes: tuple[str, ...] | None = None

    def applies_to(self, shape: str) -> bool:
        """Whether this curve is drawn for a shape.

        Parameters
        ----------
        shape : str
            A shape's name.

        Returns
        -------
        bool
            True if the entry names no shapes or names this one.
        """
        return self.shapes is None or shape in self.shapes


@dataclass(frozen=True)
class Shape:
    """A torus (or a 2-D HyperX) of the paper.

    Parameters
    ----------
    name : str
        `8x8` unless named.
    dims : tuple of int
        Dimension sizes, dimension 0 fastest.
    figures : tuple of str
        The paper's figures that show it.
    extended : bool
        Run to `sizes.max_extended` instead of `sizes.max`.
    topology : str
        `torus`, or `hyperx` (every node linked to every node of its row and column).
    """

    name: str
    dims: tuple[int, ...]
    figures: tuple[str, ...] = ()
    extended: bool = False
    topology: str = "torus"

    def build(self, bandwidth_Bps: float, hop_s: float):
        """The topology.

        Parameters
        ----------
        bandwidth_Bps : float
            Link bandwidth, bytes/s (each direction).
        hop_s : float
            Latency per hop, s.

        Returns
        -------
        Topology
        """
        from ...topology import stack, torus

        if self.topology == "hyperx":
            return stack(("fc",) * len(self.dims), self.dims, bandwidth_Bps, hop_s, name="hyperx:" + self.name)
        return torus(self.dims, bandwidth_Bps, hop_s)

    @property
    def p(self) -> int:
        """Number of nodes (int)."""
        return int(np.prod(self.dims))

    @property
    def D(self) -> int:
        """Number of dimensions larger than 1 (int)."""
        return sum(1 for d in self.dims if d > 1)


@dataclass(frozen=True)
class PaperGain:
    """A gain of Swing the paper states.

    Parameters
    ----------
    figure : str
        The paper's figure (`7`, `8`, `11`).
    shape : str
    size : float or None
        Bytes; None: the largest gain over all sizes (`max` in the file).
    lo, hi : float
        Percent; equal unless the paper gives a range.
    bandwidth_Bps : float, optional
        Link bandwidth, bytes/s (None: the config's).
    vs : str, optional
        The entry key the paper names as the best other algorithm there.
    """

    figure: str
    shape: str
    size: float | None
    lo: float
    hi: float
    bandwidth_Bps: float | None = None
    vs: str | None = None

    @property
    def mid(self) -> float:
        """The middle of the paper's range, percent."""
        return (self.lo + self.hi) / 2


@dataclass(frozen=True)
class PaperGoodput:
    """A goodput the paper states: `gbps` Gb/s for entry `entry` on `shape` at `size` bytes."""

    shape: str
    size: float
    entry: str
    gbps: float


@dataclass(frozen=True)
class Table2Row:
    """A row of the paper's Table 2 (deficiencies, in units of the vector size).

    Parameters
    ----------
    key, label : str
    lam, psi, xi : float, str, tuple of (int, float) or None
        A number, a formula in p, D and dmax, pairs (D, number), or None (not given).
    """

    key: str
    label: str
    lam: Any
    psi: Any
    xi: Any

    def values(self, p: int, D: int, dmax: int) -> tuple[float | None, float | None, float | None]:
        """The row at one torus.

        Parameters
        ----------
        p : int
            Nodes.
        D : int
            Dimensions larger than 1.
        dmax : int
            Largest dimension.

        Returns
        -------
        (Lambda, Psi, Xi)
            Floats, None where the row gives none.
        """
        out = []
        for name, v in (("lambda", self.lam), ("psi", self.psi), ("xi", self.xi)):
            try:
                out.append(_table2_value(v, p, D, dmax))
            except ValueError as e:  # a formula that checked at p=64, D=2 and fails at this torus
                raise ConfigError(f"paper.table2.{self.key}.{name}", v, f"{e} at p={p}, D={D}, dmax={dmax}") from None
        return tuple(out)  # type: ignore[return-value]


@dataclass(frozen=True)
class SwingConfig:
    """Everything the reproduction uses, checked and resolved.

    Bandwidths in bytes/s, times in s, sizes in bytes. `sizes` is the grid min..max by factor,
    `sizes_extended` the same to `max_extended` (extended shapes). `runtime_32B_us` holds
    (shape, entry key, us), `peak_fraction` (shape, model, sst), `swing_b_exact` (shape,
    Psi*Xi), `l_distance_sums` (shape, Table 2 key, hops). The per-step overhead is either given
    (`step_overhead_s`) or inferred from one labelled runtime, `step_overhead_from` = (shape,
    entry key, s) (`calibrate.step_overhead`). `nic_injection_Bps` (bytes/s) bounds what a node
    injects; `packet_size_B` (bytes) and `packet_overhead_s` (s per packet and send machine) bound
    each of its 2D send machines (None: no bound).
    """

    name: str
    source: str
    link_bandwidth_Bps: float
    link_latency_s: float
    hop_processing_s: float
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
    runtime_32B_us: tuple[tuple[str, str, float], ...]
    peak_fraction: tuple[tuple[str, float | None, float | None], ...]
    paper_goodput: tuple[PaperGoodput, ...]
    table2: tuple[Table2Row, ...]
    swing_b_exact: tuple[tuple[str, float], ...]
    l_distance_sums: tuple[tuple[str, str, float], ...] = ()
    step_overhead_s: float | None = None
    step_overhead_from: tuple[str, str, float] | None = None
    nic_injection_Bps: float | None = None
    packet_size_B: float | None = None
    packet_overhead_s: float | None = None

    @property
    def hop_latency_s(self) -> float:
        """Per hop: link latency + packet processing, s (400 ns in the paper's setup)."""
        return self.link_latency_s + self.hop_processing_s

    @property
    def subject(self) -> Entry:
        """The entry with role subject (Swing)."""
        return next(e for e in self.algorithms if e.role == "subject")

    def shape(self, name: str) -> Shape:
        """The shape called `name`.

        Parameters
        ----------
        name : str
            A shape's name.

        Returns
        -------
        Shape
            That shape (StopIteration if there is none).
        """
        return next(s for s in self.shapes if s.name == name)

    def table2_row(self, key: str | None) -> Table2Row | None:
        """A row of the paper's Table 2.

        Parameters
        ----------
        key : str or None
            The row's key (`swing_b`, `rd_l`, ...).

        Returns
        -------
        Table2Row or None
            The row, None if there is none.
        """
        return next((r for r in self.table2 if r.key == key), None)


# ---- Table 2 values: numbers, a map D -> number, or an arithmetic formula (`formula`) -----------


def _table2_value(v: Any, p: int, D: int, dmax: int) -> float | None:
    if v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, tuple):  # ((D, value), ...)
        return dict(v).get(D)
    return eval_formula(v, {"p": p, "D": D, "dmax": dmax})


def size_grid(lo: float, hi: float, factor: float) -> tuple[float, ...]:
    """The geometric grid of vector sizes lo, lo x factor, ... up to hi.

    Parameters
    ----------
    lo, hi : float
        Smallest and largest size, bytes (hi included up to rounding).
    factor : float
        Ratio of consecutive sizes (> 1).

    Returns
    -------
    tuple of float
        The sizes, bytes.
    """
    out, s = [], lo
    while s <= hi * (1 + 1e-12):
        out.append(float(s))
        s *= factor
    return tuple(out)


def size_label(nbytes: float) -> str:
    """A size without spaces, for tables and file names.

    Parameters
    ----------
    nbytes : float
        A size, bytes.

    Returns
    -------
    str
        E.g. `2MiB`, `32B`.
    """
    return format_size(nbytes).replace(" ", "")


# ==== loading ===================================================================================


def default_config_path() -> Path:
    """The shipped config (`experiments.base.shipped_config`).

    Returns
    -------
    Path
        The file; ConfigError naming `--config` if it is not found.
    """
    from ..base import shipped_config

    return shipped_config(DEFAULT_CONFIG_NAME, "a swing reproduction config (see configs/swing.yaml)")


def load_config(path: str | Path | None = None, data: dict | None = None) -> SwingConfig:
    """Read and check a reproduction config (a YAML file, or an already-parsed mapping).

    Parameters
    ----------
    path : str or Path, optional
        The YAML file (default: configs/swing.yaml).
    data : dict, optional
        An already-parsed mapping instead of a file (errors then name `config`).

    Returns
    -------
    SwingConfig
        A one-line ConfigError (file, field, value, what is accepted) for bad input.
    """
    if data is not None:
        return parse_config(data, "config")
    p = Path(path) if path is not None else default_config_path()
    if not p.is_file():
        raise ConfigError("--config", str(p), "not found; accepted: a readable YAML file")
    return parse_config(read_yaml_mapping(p, "network, sizes, shapes, algorithms, paper"), p.name)


def parse_config(data: Any, source: str = "config") -> SwingConfig:
    """Check a config mapping and resolve its cross references.

    Parameters
    ----------
    data : dict
        The parsed YAML (the layout of configs/swing.yaml).
    source : str
        What errors name first (the file name).

    Returns
    -------
    SwingConfig
        A one-line ConfigError naming `source`, the field path, the value and what is accepted
        for bad input.
    """
    from .resolve import resolve
    from .schema import SwingConfigIn

    if not isinstance(data, dict):
        raise ConfigError(source, type(data).__name__, "accepted: a YAML mapping")
    return resolve(validate(SwingConfigIn, data, source, brackets=True), source)
