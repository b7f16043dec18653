"""Reproduce Swing (De Sensi et al., NSDI'24) with fabricsim's analytical network model.

Everything the paper fixes comes from `configs/swing.yaml` (spec: shared/specs/swing.md):
torus shapes, link bandwidth and latency, the per-step overhead alpha, vector sizes, the
algorithms compared, and the paper's numbers to compare against.

Model (spec section 3, "recommended simulator model"): every collective is a sequence of
lock-step steps; a step lasts alpha + the longest path latency of its transfers (400 ns per
hop = 100 ns link + 300 ns processing) + the bytes on its most loaded link / link bandwidth.
Each algorithm's schedule is built once per torus and every size is priced in one
`time_schedule` pass.

Definitions (the paper's):
- goodput = vector size / runtime, in Gb/s (bits);
- Swing's curve is the better of Swing-L and Swing-B at each size, recursive doubling's "(D)"
  the better of recursive doubling-L and Rabenseifner-B;
- gain of Swing vs the best other algorithm: T_best/T_swing - 1 when Swing is faster, else
  -(T_swing/T_best - 1) (percent);
- deficiencies (Table 2), all in units of the vector size n:
  Lambda = steps / log2 p;
  Psi = sum over steps of the most bytes any node puts on one port (the first link of a
  transfer's path), divided by the optimum 1/D;
  Xi = sum over steps of the most bytes on any link / the same sum of port bytes.
  So the bandwidth time is (n/D) beta Psi Xi exactly in this model.
"""

from __future__ import annotations

import ast
import csv
import json
import math
import operator
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..units import format_size, parse_bandwidth, parse_size, parse_time

DEFAULT_CONFIG_NAME = "swing.yaml"
DEFAULT_OUT = Path("out") / "swing"

# The paper's algorithms, as the registry names them. A config may list them before they are
# registered: the run then skips them with a warning. Any other unknown name is a config error.
PAPER_ALGORITHMS = ("swing", "torus_recursive_doubling", "bucket", "hamiltonian_rings")
ROLES = ("subject", "baseline", "extra")


# ==== configuration ===========================================================================


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING = _Missing()


@dataclass(frozen=True)
class Variant:
    """One schedule: a registered algorithm with options (e.g. Swing-L = swing, mode=latency)."""

    label: str
    algorithm: str
    options: tuple[tuple[str, Any], ...] = ()
    table2: str | None = None  # row of the paper's Table 2 this variant is checked against

    @property
    def options_dict(self) -> dict:
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
        return self.shapes is None or shape in self.shapes


@dataclass(frozen=True)
class Shape:
    name: str
    dims: tuple[int, ...]
    figures: tuple[str, ...] = ()
    extended: bool = False
    topology: str = "torus"  # or "hyperx": every node linked to every node of its row and column

    def build(self, bandwidth_Bps: float, hop_s: float):
        from ..topology import stack, torus

        if self.topology == "hyperx":
            return stack(("fc",) * len(self.dims), self.dims, bandwidth_Bps, hop_s, name="hyperx:" + self.name)
        return torus(self.dims, bandwidth_Bps, hop_s)

    @property
    def p(self) -> int:
        return int(np.prod(self.dims))

    @property
    def D(self) -> int:
        return sum(1 for d in self.dims if d > 1)


@dataclass(frozen=True)
class PaperGain:
    figure: str
    shape: str
    size: float | None  # bytes; None = the largest gain over all sizes ("max")
    lo: float  # percent; lo == hi unless the paper gives a range
    hi: float
    bandwidth_Bps: float | None = None  # None = the config's link bandwidth
    vs: str | None = None  # entry key the paper names as the best other algorithm there

    @property
    def mid(self) -> float:
        return (self.lo + self.hi) / 2


@dataclass(frozen=True)
class PaperGoodput:
    shape: str
    size: float
    entry: str
    gbps: float


@dataclass(frozen=True)
class Table2Row:
    key: str
    label: str
    lam: Any  # number | formula string | tuple of (D, number)
    psi: Any
    xi: Any

    def values(self, p: int, D: int, dmax: int) -> tuple[float | None, float | None, float | None]:
        return tuple(_table2_value(v, p, D, dmax) for v in (self.lam, self.psi, self.xi))  # type: ignore[return-value]


@dataclass(frozen=True)
class SwingConfig:
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
        return next(e for e in self.algorithms if e.role == "subject")

    def shape(self, name: str) -> Shape:
        return next(s for s in self.shapes if s.name == name)

    def table2_row(self, key: str | None) -> Table2Row | None:
        return next((r for r in self.table2 if r.key == key), None)


class _Checker:
    """Plain checks with one-line errors naming the field (prefixed with the file name)."""

    def __init__(self, source: str):
        self.prefix = f"{source}: " if source else ""

    def fail(self, path: str, value: Any, accepted: str):
        raise ConfigError(self.prefix + path, value, accepted)

    def mapping(self, value: Any, path: str, keys: Iterable[str] | None = None) -> dict:
        if not isinstance(value, dict):
            self.fail(path, value, "accepted: a mapping (key: value)")
        if keys is not None:
            extra = sorted(set(map(str, value)) - set(keys))
            if extra:
                self.fail(f"{path}.{extra[0]}" if path else extra[0], value[extra[0]] if extra[0] in value else extra[0],
                          f"unknown field; accepted fields: {', '.join(keys)}")
        return value

    def get(self, d: dict, key: str, path: str, accepted: str, default: Any = MISSING) -> Any:
        full = f"{path}.{key}" if path else key
        if key not in d or d[key] is None:
            if default is MISSING:
                self.fail(full, MISSING, f"required field; {accepted}")
            return default
        return d[key]

    def seq(self, value: Any, path: str, accepted: str, nonempty: bool = True) -> list:
        if not isinstance(value, (list, tuple)) or (nonempty and not value):
            self.fail(path, value, accepted)
        return list(value)

    def size(self, value: Any, path: str, positive: bool = True) -> float:
        if isinstance(value, bool):
            self.fail(path, value, "accepted: a size, e.g. 32B, 2KiB, 512MiB")
        v = parse_size(value, self.prefix + path)
        if positive and v <= 0:
            self.fail(path, value, "accepted: a size greater than zero, e.g. 32B, 2KiB, 512MiB")
        return v

    def bandwidth(self, value: Any, path: str) -> float:
        return parse_bandwidth(value, self.prefix + path)

    def time(self, value: Any, path: str) -> float:
        return parse_time(value, self.prefix + path)

    def number(self, value: Any, path: str, accepted: str = "accepted: a number") -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.fail(path, value, accepted)
        return float(value)

    def text(self, value: Any, path: str, accepted: str = "accepted: a non-empty string") -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)) or not str(value).strip():
            self.fail(path, value, accepted)
        return str(value).strip()


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


def default_config_path() -> Path:
    """configs/swing.yaml of the checkout this package runs from, else of the current directory."""
    here = Path(__file__).resolve()
    for cand in (here.parents[3] / "configs" / DEFAULT_CONFIG_NAME, Path.cwd() / "configs" / DEFAULT_CONFIG_NAME):
        if cand.is_file():
            return cand
    raise ConfigError("--config", str(Path("configs") / DEFAULT_CONFIG_NAME),
                      "not found; accepted: the path of a swing reproduction config (see configs/swing.yaml)")


def load_config(path: str | Path | None = None, data: dict | None = None) -> SwingConfig:
    """Read and check a reproduction config (a YAML file, or an already-parsed mapping)."""
    import yaml

    if data is None:
        p = Path(path) if path is not None else default_config_path()
        if not p.is_file():
            raise ConfigError("--config", str(p), "not found; accepted: a readable YAML file")
        try:
            data = yaml.safe_load(p.read_text())
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"line {mark.line + 1}" if mark is not None else "?"
            raise ConfigError(f"{p.name}: {where}", "YAML", "not valid YAML; accepted: a YAML mapping") from None
        source = p.name
    else:
        source = "config"
    return parse_config(data, source)


def parse_config(data: Any, source: str = "config") -> SwingConfig:
    from ..collectives.registry import ALGORITHMS
    from ..network.analytical import normalize_model

    c = _Checker(source)
    top = ("name", "network", "sizes", "shapes", "bandwidth_sweep", "algorithms", "quick", "paper")
    data = c.mapping(data, "", top)

    # -- network
    net = c.mapping(c.get(data, "network", "", "accepted: a mapping of link parameters"), "network",
                    ("link_bandwidth", "link_latency", "hop_processing", "step_overhead", "model"))
    bw = c.bandwidth(c.get(net, "link_bandwidth", "network", "accepted: e.g. 400Gbps"), "network.link_bandwidth")
    lat = c.time(c.get(net, "link_latency", "network", "accepted: e.g. 100ns"), "network.link_latency")
    proc = c.time(c.get(net, "hop_processing", "network", "accepted: e.g. 300ns"), "network.hop_processing")
    alpha = c.time(c.get(net, "step_overhead", "network", "accepted: e.g. 0.486us"), "network.step_overhead")
    try:
        model = normalize_model(net.get("model", "congestion-aware"))
    except ConfigError as e:
        c.fail("network.model", net.get("model"), e.accepted)

    # -- sizes
    sz = c.mapping(c.get(data, "sizes", "", "accepted: min, max, factor, max_extended"), "sizes",
                   ("min", "max", "factor", "max_extended"))
    smin = c.size(c.get(sz, "min", "sizes", "accepted: e.g. 32B"), "sizes.min")
    smax = c.size(c.get(sz, "max", "sizes", "accepted: e.g. 512MiB"), "sizes.max")
    factor = c.number(c.get(sz, "factor", "sizes", "accepted: e.g. 4"), "sizes.factor", "accepted: a number > 1, e.g. 4")
    if factor <= 1:
        c.fail("sizes.factor", sz["factor"], "accepted: a number > 1, e.g. 4")
    if smax < smin:
        c.fail("sizes.max", sz["max"], f"accepted: a size >= sizes.min ({format_size(smin)})")
    sext = c.size(sz.get("max_extended", sz["max"]), "sizes.max_extended")
    if sext < smax:
        c.fail("sizes.max_extended", sz.get("max_extended"), f"accepted: a size >= sizes.max ({format_size(smax)})")
    sizes = _size_list(smin, smax, factor)
    sizes_ext = _size_list(smin, sext, factor)

    # -- shapes
    shapes: list[Shape] = []
    for i, item in enumerate(c.seq(c.get(data, "shapes", "", "accepted: a list of tori"), "shapes", "accepted: a non-empty list of tori")):
        path = f"shapes[{i}]"
        item = c.mapping(item, path, ("name", "dims", "figures", "extended", "topology"))
        dims = c.seq(c.get(item, "dims", path, "accepted: e.g. [8, 8]"), f"{path}.dims", "accepted: a list of dimension sizes, e.g. [8, 8]")
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 2 for d in dims):
            c.fail(f"{path}.dims", dims, "accepted: integers >= 2, e.g. [8, 8]")
        name = c.text(item.get("name", "x".join(map(str, dims))), f"{path}.name")
        if any(s.name == name for s in shapes):
            c.fail(f"{path}.name", name, "accepted: a name not used by another shape")
        figs = tuple(str(f) for f in c.seq(item.get("figures", []), f"{path}.figures", "accepted: a list", nonempty=False))
        ext = item.get("extended", False)
        if not isinstance(ext, bool):
            c.fail(f"{path}.extended", ext, "accepted: true or false")
        topo_kind = item.get("topology", "torus")
        if topo_kind not in ("torus", "hyperx"):
            c.fail(f"{path}.topology", topo_kind, "accepted: torus, hyperx")
        shapes.append(Shape(name, tuple(dims), figs, ext, topo_kind))
    names = [s.name for s in shapes]

    def shape_name(v, path):
        v = c.text(v, path)
        if v not in names:
            c.fail(path, v, f"accepted: a shape listed under shapes ({', '.join(names)})")
        return v

    # -- bandwidth sweep
    sweep_shape, sweep_bw = None, ()
    if data.get("bandwidth_sweep") is not None:
        sw = c.mapping(data["bandwidth_sweep"], "bandwidth_sweep", ("shape", "bandwidths"))
        sweep_shape = shape_name(c.get(sw, "shape", "bandwidth_sweep", "accepted: a shape name"), "bandwidth_sweep.shape")
        sweep_bw = tuple(c.bandwidth(b, f"bandwidth_sweep.bandwidths[{j}]") for j, b in enumerate(
            c.seq(c.get(sw, "bandwidths", "bandwidth_sweep", "accepted: a list of bandwidths"), "bandwidth_sweep.bandwidths",
                  "accepted: a non-empty list of bandwidths, e.g. [100Gbps, 400Gbps]")))

    # -- paper (before algorithms: variants name Table 2 rows)
    paper = c.mapping(data.get("paper") or {}, "paper",
                      ("gain_sizes", "fig7", "fig8", "points", "runtime_32B_us", "peak_fraction", "goodput_gbps",
                       "table2", "swing_b_exact_psi_xi", "l_distance_sums"))
    table2: list[Table2Row] = []
    for key, row in c.mapping(paper.get("table2") or {}, "paper.table2").items():
        path = f"paper.table2.{key}"
        row = c.mapping(row, path, ("label", "lambda", "psi", "xi"))
        vals = []
        for fld in ("lambda", "psi", "xi"):
            v = row.get(fld)
            if isinstance(v, dict):
                try:
                    v = tuple(sorted((int(k), c.number(x, f"{path}.{fld}.{k}")) for k, x in v.items()))
                except (TypeError, ValueError):
                    c.fail(f"{path}.{fld}", v, "accepted: a map from D (an integer) to a number")
            elif isinstance(v, str):
                try:
                    eval_formula(v, {"p": 64, "D": 2, "dmax": 8})
                except (ValueError, SyntaxError, ZeroDivisionError, TypeError):
                    c.fail(f"{path}.{fld}", v, "accepted: a number, a map D -> number, or a formula in p, D, dmax "
                                               "with + - * / ** and log2()")
            elif v is not None:
                v = c.number(v, f"{path}.{fld}")
            vals.append(v)
        table2.append(Table2Row(str(key), str(row.get("label", key)), *vals))
    t2keys = [r.key for r in table2]

    # -- algorithms
    entries: list[Entry] = []
    labels: set[str] = set()
    known = sorted(set(ALGORITHMS) | set(PAPER_ALGORITHMS))
    for i, item in enumerate(c.seq(c.get(data, "algorithms", "", "accepted: a list of algorithm entries"), "algorithms",
                                   "accepted: a non-empty list of algorithm entries")):
        path = f"algorithms[{i}]"
        item = c.mapping(item, path, ("key", "label", "role", "variants", "shapes"))
        key = c.text(c.get(item, "key", path, "accepted: a short name, e.g. swing"), f"{path}.key")
        if any(e.key == key for e in entries):
            c.fail(f"{path}.key", key, "accepted: a key not used by another entry")
        role = c.text(c.get(item, "role", path, f"accepted: {', '.join(ROLES)}"), f"{path}.role")
        if role not in ROLES:
            c.fail(f"{path}.role", role, f"accepted: {', '.join(ROLES)}")
        only = item.get("shapes")
        if only is not None:
            only = tuple(shape_name(s, f"{path}.shapes[{j}]") for j, s in
                         enumerate(c.seq(only, f"{path}.shapes", "accepted: a list of shape names")))
        variants = []
        for j, v in enumerate(c.seq(c.get(item, "variants", path, "accepted: a list of variants"), f"{path}.variants",
                                    "accepted: a non-empty list of variants")):
            vpath = f"{path}.variants[{j}]"
            v = c.mapping(v, vpath, ("label", "algorithm", "options", "table2"))
            alg = c.text(c.get(v, "algorithm", vpath, "accepted: a registered algorithm"), f"{vpath}.algorithm")
            alg = alg.lower().replace("-", "_")
            if alg not in known:
                c.fail(f"{vpath}.algorithm", v["algorithm"], f"accepted: {', '.join(known)}")
            opts = c.mapping(v.get("options") or {}, f"{vpath}.options")
            for k, x in opts.items():
                if not isinstance(x, (str, int, float, bool)):
                    c.fail(f"{vpath}.options.{k}", x, "accepted: a string, number or boolean")
            if alg in ALGORITHMS:
                allowed = {o.name for o in ALGORITHMS[alg].options} - {"dims"}
                bad = sorted(set(opts) - allowed)
                if bad:
                    c.fail(f"{vpath}.options.{bad[0]}", opts[bad[0]], f"{alg} accepts: {', '.join(sorted(allowed)) or 'no options'}")
            label = c.text(v.get("label", alg), f"{vpath}.label")
            if label in labels:
                c.fail(f"{vpath}.label", label, "accepted: a label not used by another variant")
            labels.add(label)
            t2 = v.get("table2")
            if t2 is not None and t2 not in t2keys:
                c.fail(f"{vpath}.table2", t2, f"accepted: a row of paper.table2 ({', '.join(t2keys) or 'none defined'})")
            variants.append(Variant(label, alg, tuple(sorted(opts.items())), t2))
        label = c.text(item.get("label", key), f"{path}.label")
        entries.append(Entry(key, label, role, tuple(variants), only))
    n_subj = sum(e.role == "subject" for e in entries)
    if n_subj != 1:
        c.fail("algorithms", f"{n_subj} entries with role subject", "accepted: exactly one entry with role: subject (Swing)")
    if not any(e.role == "baseline" for e in entries):
        c.fail("algorithms", "no baseline", "accepted: at least one entry with role: baseline")
    keys = [e.key for e in entries]

    def entry_key(v, path):
        v = c.text(v, path)
        if v not in keys:
            c.fail(path, v, f"accepted: an algorithm entry key ({', '.join(keys)})")
        return v

    # -- quick
    q = c.mapping(data.get("quick") or {}, "quick", ("shapes", "bandwidth_sweep"))
    quick_shapes = tuple(shape_name(s, f"quick.shapes[{j}]") for j, s in
                         enumerate(c.seq(q.get("shapes", names[:1]), "quick.shapes", "accepted: a non-empty list of shape names")))
    quick_sweep = q.get("bandwidth_sweep", False)
    if not isinstance(quick_sweep, bool):
        c.fail("quick.bandwidth_sweep", quick_sweep, "accepted: true or false")

    # -- paper numbers
    gains: list[PaperGain] = []
    gsizes = tuple(c.size(s, f"paper.gain_sizes[{j}]") for j, s in enumerate(
        c.seq(paper.get("gain_sizes", []), "paper.gain_sizes", "accepted: a list of sizes", nonempty=False)))

    def on_grid(size, path, raw):
        if not any(math.isclose(size, x, rel_tol=1e-9) for x in sizes_ext):
            c.fail(path, raw, f"accepted: a size of the run's grid ({size_label(sizes_ext[0])} x{factor:g} .. "
                              f"{size_label(sizes_ext[-1])})")

    for j, (s, raw) in enumerate(zip(gsizes, paper.get("gain_sizes", []))):
        on_grid(s, f"paper.gain_sizes[{j}]", raw)

    def gain_row(values, path):
        vals = c.seq(values, path, f"accepted: a list of {len(gsizes)} gains in percent (one per paper.gain_sizes)")
        if len(vals) != len(gsizes):
            c.fail(path, f"{len(vals)} values", f"accepted: {len(gsizes)} values, one per paper.gain_sizes")
        return [c.number(x, f"{path}[{j}]", "accepted: a gain in percent") for j, x in enumerate(vals)]

    for shp, row in c.mapping(paper.get("fig7") or {}, "paper.fig7").items():
        shp = shape_name(shp, f"paper.fig7.{shp}")
        for s, g in zip(gsizes, gain_row(row, f"paper.fig7.{shp}")):
            gains.append(PaperGain("7", shp, s, g, g))
    if paper.get("fig8"):
        if sweep_shape is None:
            c.fail("paper.fig8", "given", "accepted: only with a bandwidth_sweep section")
        for bwt, row in c.mapping(paper["fig8"], "paper.fig8").items():
            b = c.bandwidth(bwt, f"paper.fig8.{bwt}")
            if not any(math.isclose(b, x) for x in sweep_bw):
                c.fail(f"paper.fig8.{bwt}", bwt, "accepted: a bandwidth of bandwidth_sweep.bandwidths")
            for s, g in zip(gsizes, gain_row(row, f"paper.fig8.{bwt}")):
                gains.append(PaperGain("8", sweep_shape, s, g, g, bandwidth_Bps=b))
    for j, pt in enumerate(c.seq(paper.get("points", []), "paper.points", "accepted: a list", nonempty=False)):
        path = f"paper.points[{j}]"
        pt = c.mapping(pt, path, ("figure", "shape", "size", "gain", "vs", "bandwidth"))
        shp = shape_name(c.get(pt, "shape", path, "accepted: a shape name"), f"{path}.shape")
        sv = c.get(pt, "size", path, "accepted: a size or max")
        size = None if str(sv).strip().lower() == "max" else c.size(sv, f"{path}.size")
        if size is not None:
            on_grid(size, f"{path}.size", sv)
        gv = c.get(pt, "gain", path, "accepted: a gain in percent, or [low, high]")
        if isinstance(gv, (list, tuple)):
            if len(gv) != 2:
                c.fail(f"{path}.gain", gv, "accepted: a number or a [low, high] range")
            lo, hi = sorted(c.number(x, f"{path}.gain", "accepted: a gain in percent") for x in gv)
        else:
            lo = hi = c.number(gv, f"{path}.gain", "accepted: a gain in percent, or [low, high]")
        vs = entry_key(pt["vs"], f"{path}.vs") if pt.get("vs") is not None else None
        b = c.bandwidth(pt["bandwidth"], f"{path}.bandwidth") if pt.get("bandwidth") is not None else None
        gains.append(PaperGain(c.text(pt.get("figure", "?"), f"{path}.figure"), shp, size, lo, hi, b, vs))

    rt = []
    for shp, row in c.mapping(paper.get("runtime_32B_us") or {}, "paper.runtime_32B_us").items():
        shp = shape_name(shp, f"paper.runtime_32B_us.{shp}")
        for k, v in c.mapping(row, f"paper.runtime_32B_us.{shp}").items():
            rt.append((shp, entry_key(k, f"paper.runtime_32B_us.{shp}.{k}"),
                       c.number(v, f"paper.runtime_32B_us.{shp}.{k}", "accepted: microseconds")))
    peaks = []
    for shp, row in c.mapping(paper.get("peak_fraction") or {}, "paper.peak_fraction").items():
        path = f"paper.peak_fraction.{shp}"
        shp = shape_name(shp, path)
        row = c.mapping(row, path, ("model", "sst"))
        vals = [None if row.get(k) is None else c.number(row[k], f"{path}.{k}", "accepted: a fraction 0..1") for k in ("model", "sst")]
        for k, v in zip(("model", "sst"), vals):
            if v is not None and not 0 < v <= 1:
                c.fail(f"{path}.{k}", v, "accepted: a fraction in (0, 1]")
        peaks.append((shp, vals[0], vals[1]))
    gput = []
    for j, row in enumerate(c.seq(paper.get("goodput_gbps", []), "paper.goodput_gbps", "accepted: a list", nonempty=False)):
        path = f"paper.goodput_gbps[{j}]"
        row = c.mapping(row, path)
        shp = shape_name(c.get(row, "shape", path, "accepted: a shape name"), f"{path}.shape")
        size = c.size(c.get(row, "size", path, "accepted: a size"), f"{path}.size")
        for k, v in row.items():
            if k in ("shape", "size"):
                continue
            gput.append(PaperGoodput(shp, size, entry_key(k, f"{path}.{k}"), c.number(v, f"{path}.{k}", "accepted: Gb/s")))
    exact = tuple((shape_name(k, f"paper.swing_b_exact_psi_xi.{k}"), c.number(v, f"paper.swing_b_exact_psi_xi.{k}"))
                  for k, v in c.mapping(paper.get("swing_b_exact_psi_xi") or {}, "paper.swing_b_exact_psi_xi").items())

    lsums = []
    for shp, row in c.mapping(paper.get("l_distance_sums") or {}, "paper.l_distance_sums").items():
        path = f"paper.l_distance_sums.{shp}"
        shp = shape_name(shp, path)
        for k, v in c.mapping(row, path).items():
            if k not in t2keys:
                c.fail(f"{path}.{k}", k, f"accepted: a row of paper.table2 ({', '.join(t2keys) or 'none defined'})")
            lsums.append((shp, str(k), c.number(v, f"{path}.{k}", "accepted: a number of hops")))

    return SwingConfig(
        name=str(data.get("name", "swing")), source=source, link_bandwidth_Bps=bw, link_latency_s=lat,
        hop_processing_s=proc, step_overhead_s=alpha, model=model, sizes=sizes, sizes_extended=sizes_ext,
        shapes=tuple(shapes), sweep_shape=sweep_shape, sweep_bandwidths=sweep_bw, algorithms=tuple(entries),
        quick_shapes=quick_shapes, quick_sweep=quick_sweep, paper_gains=tuple(gains), runtime_32B_us=tuple(rt),
        peak_fraction=tuple(peaks), paper_goodput=tuple(gput), table2=tuple(table2), swing_b_exact=exact,
        l_distance_sums=tuple(lsums),
    )


# ==== the paper's arithmetic ==================================================================


def goodput_gbps(size_bytes, time_s):
    """Goodput in Gb/s (bits): vector size / runtime."""
    return np.asarray(size_bytes, dtype=float) * 8.0 / np.asarray(time_s, dtype=float) / 1e9


def gain_pct(t_swing: float, t_best: float) -> float:
    """The paper's gain of Swing over the best other algorithm, in percent: T_best/T_swing - 1
    when Swing is faster (100 = twice as fast), else -(T_swing/T_best - 1)."""
    if t_swing <= t_best:
        return (t_best / t_swing - 1.0) * 100.0
    return -(t_swing / t_best - 1.0) * 100.0


def speedup_of_gain(g_pct: float) -> float:
    """T_best/T_swing for a gain in percent (inverse of `gain_pct`)."""
    g = g_pct / 100.0
    return 1.0 + g if g >= 0 else 1.0 / (1.0 - g)


# ==== deficiencies ============================================================================


@dataclass(frozen=True)
class Deficiency:
    steps: int
    lam: float  # steps / log2 p
    psi: float  # sum_steps largest message / (n / D)
    xi: float  # sum_steps max link bytes / sum_steps largest message
    msg_frac: float  # sum_steps largest message bytes / n
    link_frac: float  # sum_steps max link bytes / n (bandwidth time = n beta link_frac)
    latency_s: float  # sum_steps longest path latency

    @property
    def psi_xi(self) -> float:
        return self.psi * self.xi


def deficiency(topo, sched) -> Deficiency:
    """Lambda, Psi and Xi (`network.deficiencies`, the paper's Table 2 definitions), plus the
    sums behind them and the summed longest path latency (hops x per-hop latency)."""
    from ..collectives.schedule import lane_total
    from ..network.analytical import deficiencies, route_schedule

    routed = route_schedule(topo, sched)
    d = deficiencies(topo, sched, routed=routed)
    lat = lane_total(sched.steps, np.array([r.repeat * float(r.path_latency.max(initial=0.0)) for r in routed]))
    link = lane_total(sched.steps, np.array([r.repeat * float(r.link_frac.max(initial=0.0)) for r in routed]))
    D = sum(1 for x in topo.dims if x > 1) or 1
    return Deficiency(sched.n_steps, d.latency, d.bandwidth, d.congestion, d.bandwidth / D, float(link), float(lat))


# ==== results =================================================================================


@dataclass(frozen=True)
class Curve:
    key: str  # entry key, or variant label
    label: str
    kind: str  # "entry" | "variant"
    times_s: tuple[float, ...]
    goodput_gbps: tuple[float, ...]
    chosen: tuple[str, ...]  # the variant that gives the time at each size


@dataclass(frozen=True)
class CaseResult:
    name: str  # "8x8", or "8x8@100Gb/s" for the bandwidth sweep
    shape: str
    dims: tuple[int, ...]
    bandwidth_Bps: float
    base: bool  # at the config's link bandwidth
    sizes: tuple[float, ...]
    peak_gbps: float  # D x link bandwidth
    entries: tuple[Curve, ...]
    variants: tuple[Curve, ...]
    gain_pct: tuple[float | None, ...]  # Swing vs the best baseline at each size
    best_baseline: tuple[str | None, ...]

    def entry(self, key: str) -> Curve | None:
        return next((c for c in self.entries if c.key == key), None)

    def size_index(self, size: float) -> int | None:
        for i, s in enumerate(self.sizes):
            if math.isclose(s, size, rel_tol=1e-9):
                return i
        return None


@dataclass(frozen=True)
class GainRow:
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
    shape: str
    entry: str
    label: str
    ours_us: float
    paper_us: float | None
    ratio: float | None


@dataclass(frozen=True)
class GoodputRow:
    shape: str
    entry: str
    label: str
    size: float
    ours_gbps: float | None
    paper_gbps: float
    ratio: float | None


@dataclass(frozen=True)
class DeficiencyRow:
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

    def case(self, name: str) -> CaseResult | None:
        return next((c for c in self.cases if c.name == name), None)

    def to_dict(self) -> dict:
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
    gbps = Bps * 8 / 1e9
    return f"{gbps / 1000:g} Tb/s" if gbps >= 1000 else f"{gbps:g} Gb/s"


def size_label(nbytes: float) -> str:
    return format_size(nbytes).replace(" ", "")


# ==== the run =================================================================================


def _case_result(name, shape: Shape, bw: float, base: bool, sizes, cfg: SwingConfig,
                 var_times: dict[str, np.ndarray]) -> CaseResult:
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
                      shape.D * bw * 8 / 1e9, tuple(entries), tuple(variants), tuple(gains), tuple(best))


def run(cfg: SwingConfig, quick: bool = False, shapes: Sequence[str] | None = None,
        progress: Callable[[str, int, int], None] | None = None) -> Reproduction:
    """Every shape (or the quick subset, or `shapes`): build each schedule once, price all
    sizes in one pass per link bandwidth, and compare with the paper."""
    from ..collectives.api import build_schedule
    from ..collectives.registry import ALGORITHMS
    from ..network.analytical import time_schedule

    t_start = time.perf_counter()
    names = list(shapes) if shapes is not None else list(cfg.quick_shapes if quick else [s.name for s in cfg.shapes])
    for n in names:
        if n not in [s.name for s in cfg.shapes]:
            raise ConfigError("shapes", n, f"accepted: {', '.join(s.name for s in cfg.shapes)}")
    do_sweep = cfg.sweep_shape is not None and (cfg.quick_sweep or not quick)
    warnings: list[str] = []
    notes: list[str] = []
    for alg in sorted({v.algorithm for e in cfg.algorithms for v in e.variants}):
        if alg not in ALGORITHMS:
            users = [v.label for e in cfg.algorithms for v in e.variants if v.algorithm == alg]
            warnings.append(f"algorithm {alg!r} is not registered in fabricsim.collectives.registry: "
                            f"skipping {', '.join(users)}")
    cases: list[CaseResult] = []
    defs: list[DeficiencyRow] = []
    exact = dict(cfg.swing_b_exact)
    lsums = {(s, k): v for s, k, v in cfg.l_distance_sums}
    for idx, name in enumerate(names):
        if progress is not None:
            progress(name, idx, len(names))
        shape = cfg.shape(name)
        sizes = cfg.sizes_extended if shape.extended else cfg.sizes
        topo = shape.build(cfg.link_bandwidth_Bps, cfg.hop_latency_s)
        scheds = {}
        for e in cfg.algorithms:
            if not e.applies_to(name):
                continue
            for v in e.variants:
                if v.algorithm not in ALGORITHMS:
                    continue
                try:
                    scheds[v.label] = build_schedule(topo, "all-reduce", v.algorithm, **v.options_dict)
                except ConfigError as err:  # the algorithm does not serve this shape (e.g. rings in 3-D)
                    notes.append(f"{name}: {v.label} ({v.algorithm}) not applicable: {err}")
        times = {lab: time_schedule(topo, s, sizes, cfg.model, step_overhead=cfg.step_overhead_s).times
                 for lab, s in scheds.items()}
        cases.append(_case_result(name, shape, cfg.link_bandwidth_Bps, True, sizes, cfg, times))
        if do_sweep and name == cfg.sweep_shape:
            for bw in cfg.sweep_bandwidths:
                if math.isclose(bw, cfg.link_bandwidth_Bps):
                    continue
                tb = shape.build(bw, cfg.hop_latency_s)
                tt = {lab: time_schedule(tb, s, sizes, cfg.model, step_overhead=cfg.step_overhead_s).times
                      for lab, s in scheds.items()}
                cases.append(_case_result(f"{name}@{bandwidth_label(bw).replace(' ', '')}", shape, bw, False, sizes, cfg, tt))
        p, D, dmax = shape.p, shape.D, max(shape.dims)
        for e in cfg.algorithms:
            for v in e.variants:
                if v.label not in scheds:
                    continue
                d = deficiency(topo, scheds[v.label])
                row = cfg.table2_row(v.table2)
                pl, pp, px = row.values(p, D, dmax) if row is not None else (None, None, None)
                if v.table2 == "swing_b":
                    ek, eo, es = "Psi*Xi", d.psi_xi, exact.get(name)
                elif v.options_dict.get("mode") == "latency" or (v.table2 or "").endswith("_l"):
                    ek, eo, es = "hops", d.latency_s / cfg.hop_latency_s, lsums.get((name, v.table2))
                else:
                    ek = eo = es = None
                defs.append(DeficiencyRow(name, v.label, v.algorithm, v.table2, d.steps, d.lam, d.psi, d.xi, d.psi_xi,
                                          d.latency_s * 1e6, pl, pp, px, ek, eo, es))
    cases_t = tuple(cases)
    return Reproduction(
        config=cfg.name, quick=quick, model=cfg.model, link_bandwidth_Bps=cfg.link_bandwidth_Bps,
        hop_latency_s=cfg.hop_latency_s, step_overhead_s=cfg.step_overhead_s, cases=cases_t,
        gains=tuple(reproduction_table(cfg, cases_t)), peaks=tuple(peak_table(cfg, cases_t, defs)),
        latencies=tuple(latency_table(cfg, cases_t)), goodputs=tuple(goodput_points(cfg, cases_t)),
        deficiencies=tuple(defs), warnings=tuple(warnings), notes=tuple(notes),
        elapsed_s=time.perf_counter() - t_start,
    )


# ==== comparison tables =======================================================================


def goodput_table(case: CaseResult, variants: bool = False) -> list[dict]:
    """(a) Goodput (Gb/s) per algorithm and size on one case: one row per size."""
    curves = case.entries + (case.variants if variants else ())
    rows = []
    for i, s in enumerate(case.sizes):
        row = {"size": s, "size_label": size_label(s)}
        for c in curves:
            row[c.label] = c.goodput_gbps[i]
        row["swing_gain_pct"] = case.gain_pct[i]
        row["best_other"] = case.best_baseline[i]
        rows.append(row)
    return rows


def _find_case(cases: Sequence[CaseResult], shape: str, bw: float | None, base_bw: float) -> CaseResult | None:
    want = base_bw if bw is None else bw
    return next((c for c in cases if c.shape == shape and math.isclose(c.bandwidth_Bps, want)), None)


def reproduction_table(cfg: SwingConfig, cases: Sequence[CaseResult]) -> list[GainRow]:
    """(b) For every case and size where the paper gives a gain: ours beside the paper's."""
    rows = []
    for g in cfg.paper_gains:
        case = _find_case(cases, g.shape, g.bandwidth_Bps, cfg.link_bandwidth_Bps)
        if case is None:
            continue
        valid = [i for i, x in enumerate(case.gain_pct) if x is not None]
        if not valid:
            continue
        if g.size is None:
            i = max(valid, key=lambda k: case.gain_pct[k])
            lab = f"max ({size_label(case.sizes[i])})"
        else:
            i = case.size_index(g.size)
            if i is None or case.gain_pct[i] is None:
                continue
            lab = size_label(case.sizes[i])
        ours = float(case.gain_pct[i])
        diff = 0.0 if g.lo <= ours <= g.hi else (ours - g.lo if ours < g.lo else ours - g.hi)
        rows.append(GainRow(g.figure, case.name, case.shape, case.bandwidth_Bps * 8 / 1e9, case.sizes[i], lab, ours,
                            g.mid, g.lo, g.hi, diff, speedup_of_gain(ours) / speedup_of_gain(g.mid),
                            case.best_baseline[i] or "", g.vs))
    return rows


def peak_table(cfg: SwingConfig, cases: Sequence[CaseResult], defs: Sequence[DeficiencyRow]) -> list[PeakRow]:
    """(c) Swing's goodput at the largest size as a fraction of D x link bandwidth."""
    spec = {s: (m, t) for s, m, t in cfg.peak_fraction}
    rows = []
    for case in cases:
        if not case.base:
            continue
        subj = case.entry(cfg.subject.key)
        if subj is None:
            continue
        ours = subj.goodput_gbps[-1]
        frac = ours / case.peak_gbps
        b = [d for d in defs if d.shape == case.shape and d.table2 == "swing_b"]  # Swing-B's 1/(Psi Xi)
        model = 1.0 / b[0].psi_xi if b else None
        m, t = spec.get(case.shape, (None, None))
        rows.append(PeakRow(case.shape, case.sizes[-1], ours, case.peak_gbps, frac, model, m, t,
                            frac / t if t else None))
    return rows


def latency_table(cfg: SwingConfig, cases: Sequence[CaseResult]) -> list[LatencyRow]:
    """(d) 32 B runtimes beside the paper's labels (every shape with labels that was run)."""
    paper = {(s, k): v for s, k, v in cfg.runtime_32B_us}
    rows = []
    for case in cases:
        if not case.base or not any(s == case.shape for s, _ in paper):
            continue
        i = case.size_index(32.0)
        if i is None:
            continue
        for c in case.entries:
            pv = paper.get((case.shape, c.key))
            ours = c.times_s[i] * 1e6
            rows.append(LatencyRow(case.shape, c.key, c.label, ours, pv, ours / pv if pv else None))
    return rows


def goodput_points(cfg: SwingConfig, cases: Sequence[CaseResult]) -> list[GoodputRow]:
    rows = []
    for g in cfg.paper_goodput:
        case = _find_case(cases, g.shape, None, cfg.link_bandwidth_Bps)
        if case is None:
            continue
        i = case.size_index(g.size)
        c = case.entry(g.entry)
        label = next(e.label for e in cfg.algorithms if e.key == g.entry)
        ours = c.goodput_gbps[i] if (c is not None and i is not None) else None
        rows.append(GoodputRow(g.shape, g.entry, label, g.size, ours, g.gbps, ours / g.gbps if ours is not None else None))
    return rows


def summary(rep: Reproduction) -> dict:
    """How close the gains are, over all rows of the reproduction table."""
    if not rep.gains:
        return {"rows": 0}
    d = np.array([abs(r.diff_pp) for r in rep.gains])
    same_sign = sum(1 for r in rep.gains if (r.ours_pct >= 0) == (r.paper_pct >= 0) or abs(r.paper_pct) <= 3)
    return {"rows": len(rep.gains), "median_abs_diff_pp": float(np.median(d)), "within_10pp": int((d <= 10).sum()),
            "within_25pp": int((d <= 25).sum()), "same_sign": same_sign,
            "median_ratio": float(np.median([r.ratio for r in rep.gains]))}


# ==== files ===================================================================================


def write_outputs(rep: Reproduction, out_dir: str | Path, plots: bool = True) -> list[Path]:
    """results.json, goodput.csv, gains.csv, deficiency.csv, and the figures."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError("--out", str(out_dir), f"cannot create the folder ({e.strerror}); accepted: a writable path") from None
    files: list[Path] = []
    res = rep.to_dict()
    res["summary"] = summary(rep)
    p = out / "results.json"
    p.write_text(json.dumps(res, indent=1))
    files.append(p)

    p = out / "goodput.csv"
    with p.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "shape", "bandwidth_gbps", "curve", "kind", "size_bytes", "time_s", "goodput_gbps", "chosen_variant"])
        for c in rep.cases:
            for cur in c.entries + c.variants:
                for i, s in enumerate(c.sizes):
                    w.writerow([c.name, c.shape, f"{c.bandwidth_Bps * 8 / 1e9:g}", cur.key, cur.kind, int(s),
                                f"{cur.times_s[i]:.6e}", f"{cur.goodput_gbps[i]:.4f}", cur.chosen[i]])
    files.append(p)

    for fname, rows in (("gains.csv", rep.gains), ("deficiency.csv", rep.deficiencies), ("runtime_32B.csv", rep.latencies),
                        ("peak_goodput.csv", rep.peaks), ("goodput_points.csv", rep.goodputs)):
        p = out / fname
        with p.open("w", newline="") as f:
            w = csv.writer(f)
            fields = list(rows[0].__dataclass_fields__) if rows else []
            w.writerow(fields)
            for r in rows:
                w.writerow(["" if getattr(r, k) is None else getattr(r, k) for k in fields])
        files.append(p)
    if plots:
        files += write_plots(rep, out)
    return files


def _size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ticks = list(sizes)[::2]
    ax.set_xticks(ticks)
    ax.set_xticklabels([size_label(s).replace("iB", "") for s in ticks], rotation=45, fontsize=7)
    ax.minorticks_off()


def write_plots(rep: Reproduction, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    files = []
    paper_by_case: dict[str, list[GainRow]] = {}
    for g in rep.gains:
        paper_by_case.setdefault(g.case, []).append(g)
    styles = {"swing": {"color": "C3", "lw": 2.2}, "recdoub": {"color": "C0"}, "bucket": {"color": "C2"},
              "rings": {"color": "C1"}, "mirrored": {"color": "C4"}}
    for case in rep.cases:
        if not case.base:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for c in case.entries:
            ax.plot(case.sizes, c.goodput_gbps, marker="o", ms=3, label=c.label, **styles.get(c.key, {}))
        ax.axhline(case.peak_gbps, color="k", ls=":", lw=1, label=f"peak {case.peak_gbps:g} Gb/s")
        pts = [g for g in rep.goodputs if g.shape == case.shape]
        for g in pts:
            ax.plot([g.size], [g.paper_gbps], marker="x", color=styles.get(g.entry, {}).get("color", "k"), ms=8, mew=2, ls="none")
        if pts:
            ax.plot([], [], marker="x", color="k", ls="none", label="paper (values stated)")
        _size_axis(ax, case.sizes)
        ax.set_xlabel("vector size")
        ax.set_ylabel("goodput (Gb/s)")
        ax.set_title(f"all-reduce on a {case.shape} torus, {bandwidth_label(case.bandwidth_Bps)} links (fabricsim model)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        p = out / f"goodput_{case.shape}.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        files.append(p)

    def gain_panel(ax, case, title):
        g = np.array([np.nan if x is None else x for x in case.gain_pct], dtype=float)
        ax.plot(case.sizes, g, color="C3", marker="o", ms=3, label="ours")
        rows = paper_by_case.get(case.name, [])
        if rows:
            ax.errorbar([r.size for r in rows], [r.paper_pct for r in rows],
                        yerr=[[r.paper_pct - r.paper_lo for r in rows], [r.paper_hi - r.paper_pct for r in rows]],
                        fmt="s", color="k", ms=4, label="paper")
        ax.axhline(0, color="k", lw=0.7)
        _size_axis(ax, case.sizes)
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)

    base = [c for c in rep.cases if c.base]
    if base:
        n = len(base)
        cols = min(3, n)
        rows_n = math.ceil(n / cols)
        fig, axes = plt.subplots(rows_n, cols, figsize=(4.6 * cols, 3.3 * rows_n), squeeze=False)
        for ax, case in zip(axes.flat, base):
            gain_panel(ax, case, f"{case.shape}: Swing gain vs best other (%)")
        for ax in list(axes.flat)[n:]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=8)
        fig.tight_layout()
        p = out / "gains_summary.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        files.append(p)
    swept = {c.shape for c in rep.cases if not c.base}
    sweep = [c for c in rep.cases if c.shape in swept]
    if sweep:
        sweep.sort(key=lambda c: c.bandwidth_Bps)
        cols = min(3, len(sweep))
        rows_n = math.ceil(len(sweep) / cols)
        fig, axes = plt.subplots(rows_n, cols, figsize=(4.6 * cols, 3.3 * rows_n), squeeze=False)
        for ax, case in zip(axes.flat, sweep):
            gain_panel(ax, case, f"{case.shape} at {bandwidth_label(case.bandwidth_Bps)}: gain (%)")
        for ax in list(axes.flat)[len(sweep):]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=8)
        fig.tight_layout()
        p = out / f"gains_bandwidth_{sweep[0].shape}.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        files.append(p)
    return files


# ==== printing ================================================================================


def _f(x, fmt="{:.1f}", none="-"):
    return none if x is None or (isinstance(x, float) and not math.isfinite(x)) else fmt.format(x)


def print_report(rep: Reproduction, con, files: Sequence[Path] = ()) -> None:
    """The reproduction tables with rich: ours beside the paper's numbers."""
    from rich.table import Table

    for w in rep.warnings:
        con.print(f"warning: {w}", style="yellow", highlight=False, markup=False)
    con.print(f"# Swing (NSDI'24) reproduction{' (quick)' if rep.quick else ''}: {rep.model} model, "
              f"{bandwidth_label(rep.link_bandwidth_Bps)} links, {rep.hop_latency_s * 1e9:g} ns per hop, "
              f"alpha = {rep.step_overhead_s * 1e6:g} us per step; {len(rep.cases)} cases in {rep.elapsed_s:.1f} s",
              highlight=False, markup=False)

    figs: dict[str, list[GainRow]] = {}
    for g in rep.gains:
        figs.setdefault(g.figure, []).append(g)
    for fig_id, rows in figs.items():
        t = Table(title=f"Fig. {fig_id}: Swing gain vs the best other algorithm (%), ours vs paper", header_style="bold",
                  box=None, title_justify="left")
        for col, j in (("torus", "left"), ("link", "right"), ("size", "right"), ("ours %", "right"), ("best other (ours)", "left"),
                       ("paper %", "right"), ("diff pp", "right"), ("speedup ratio", "right")):
            t.add_column(col, justify=j)
        for r in rows:
            paper = f"{r.paper_lo:g}..{r.paper_hi:g}" if r.paper_lo != r.paper_hi else f"{r.paper_pct:g}"
            t.add_row(r.shape, f"{r.bandwidth_gbps:g}G", r.size_label, f"{r.ours_pct:+.1f}", r.ours_vs, paper,
                      f"{r.diff_pp:+.1f}", f"{r.ratio:.3f}")
        con.print(t)
    s = summary(rep)
    if s["rows"]:
        con.print(f"# {s['rows']} gains compared: median |diff| {s['median_abs_diff_pp']:.1f} pp, "
                  f"{s['within_10pp']} within 10 pp, {s['within_25pp']} within 25 pp, same sign {s['same_sign']}, "
                  f"median speedup ratio {s['median_ratio']:.3f}", highlight=False, markup=False)

    if rep.latencies:
        t = Table(title="32 B runtimes (us): ours vs the paper's labels", header_style="bold", box=None, title_justify="left")
        for col in ("torus", "algorithm", "ours (us)", "paper (us)", "ratio"):
            t.add_column(col, justify="left" if col in ("torus", "algorithm") else "right")
        for r in rep.latencies:
            t.add_row(r.shape, r.label, f"{r.ours_us:.2f}", _f(r.paper_us, "{:g}"), _f(r.ratio, "{:.3f}"))
        con.print(t)
    if rep.peaks:
        t = Table(title="Swing's goodput at the largest size / peak (D x link)", header_style="bold", box=None, title_justify="left")
        for col in ("torus", "size", "ours (Gb/s)", "peak", "ours frac", "ours 1/(Psi Xi) B", "spec model 1/Xi", "SST measured",
                    "ours/SST"):
            t.add_column(col, justify="left" if col == "torus" else "right")
        for r in rep.peaks:
            t.add_row(r.shape, size_label(r.size), f"{r.ours_gbps:.0f}", f"{r.peak_gbps:g}", f"{r.ours_fraction:.3f}",
                      _f(r.ours_model_fraction, "{:.3f}"), _f(r.spec_model_fraction, "{:.3f}"), _f(r.sst_fraction, "{:.3f}"),
                      _f(r.ratio_vs_sst, "{:.3f}"))
        con.print(t)
    if rep.goodputs:
        t = Table(title="Goodput the paper states (Gb/s)", header_style="bold", box=None, title_justify="left")
        for col in ("torus", "algorithm", "size", "ours", "paper", "ratio"):
            t.add_column(col, justify="left" if col in ("torus", "algorithm") else "right")
        for r in rep.goodputs:
            t.add_row(r.shape, r.label, size_label(r.size), _f(r.ours_gbps, "{:.0f}"), f"{r.paper_gbps:g}", _f(r.ratio, "{:.3f}"))
        con.print(t)
    if rep.deficiencies:
        t = Table(title="Deficiencies (units of the vector size): ours vs the paper's Table 2 at this p, D",
                  header_style="bold", box=None, title_justify="left")
        for col in ("torus", "variant", "steps", "Lambda", "T2", "Psi", "T2", "Xi", "T2", "Psi*Xi", "exact: what",
                    "ours", "spec", "sum lat (us)"):
            t.add_column(col, justify="left" if col in ("torus", "variant", "exact: what") else "right")
        for r in rep.deficiencies:
            t.add_row(r.shape, r.variant, str(r.steps), f"{r.lam:.3f}", _f(r.paper_lam, "{:.3g}"), f"{r.psi:.3f}",
                      _f(r.paper_psi, "{:.3g}"), f"{r.xi:.3f}", _f(r.paper_xi, "{:.3g}"), f"{r.psi_xi:.3f}",
                      r.exact_kind or "", _f(r.exact_ours, "{:.4g}"), _f(r.exact_spec, "{:.4g}"), f"{r.latency_us:.2f}")
        con.print(t)
        con.print("# T2 = the paper's Table 2 at this p, D (Xi of Swing-B: its D = 2/3/4 values). Psi*Xi = bandwidth time "
                  "in units of n beta / D, exact in this model. exact: Psi*Xi of Swing-B vs the spec's sum_s delta/2^(s+1); "
                  "hops of the L variants (Xi x log2 p) vs the spec's sums of step distances. Table 2's L rows give the "
                  "bound 2D p^(1/D) (RD) or (4/3) D p^(1/D) (Swing) on that sum, with Psi = D log2 p.",
                  highlight=False, markup=False)
    for n in rep.notes:
        con.print(f"note: {n}", highlight=False, markup=False)
    if files:
        con.print(f"# wrote {len(files)} files to {Path(files[0]).parent}: " + ", ".join(Path(f).name for f in files),
                  highlight=False, markup=False)


def reproduce(config: str | None, out: str | None, quick: bool, json_out: bool, con, err_con=None) -> Reproduction:
    """What `fabricsim reproduce swing` does."""
    cfg = load_config(config)
    out_dir = Path(out) if out else DEFAULT_OUT
    if json_out:
        rep = run(cfg, quick=quick)
    else:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                      TimeElapsedColumn(), console=err_con or con, transient=True) as bar:
            names = cfg.quick_shapes if quick else [s.name for s in cfg.shapes]
            task = bar.add_task("swing reproduction", total=len(names))

            def tick(name, i, n):
                bar.update(task, completed=i, description=f"torus {name}")

            rep = run(cfg, quick=quick, progress=tick)
            bar.update(task, completed=len(names))
    files = write_outputs(rep, out_dir)
    if json_out:
        d = rep.to_dict()
        d["summary"] = summary(rep)
        d["files"] = [str(f) for f in files]
        print(json.dumps(d, indent=1))
    else:
        print_report(rep, con, files)
    return rep
