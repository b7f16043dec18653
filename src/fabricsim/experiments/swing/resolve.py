"""Resolve a structurally valid Swing config (`config.SwingConfigIn`) into a `SwingConfig`: the
checks that span fields (names referenced elsewhere, sizes on the run's grid, one subject, Table 2
formulas, algorithm options through the registry's one parser)."""

from __future__ import annotations

import math
from typing import Any

from ...errors import ConfigError
from .config import (
    PAPER_ALGORITHMS,
    Entry,
    PaperGain,
    PaperGoodput,
    Shape,
    SwingConfig,
    SwingConfigIn,
    Table2Row,
    Variant,
    _size_list,
    eval_formula,
    size_label,
)


class _Resolver:
    """One pass over the parsed config; `fail` raises the one-line error for `path`."""

    def __init__(self, raw: SwingConfigIn, source: str):
        self.raw, self.prefix = raw, f"{source}: " if source else ""

    def fail(self, path: str, value: Any, accepted: str):
        raise ConfigError(self.prefix + path, value, accepted)

    def shape_name(self, v: str, path: str) -> str:
        if v not in self.names:
            self.fail(path, v, f"accepted: a shape listed under shapes ({', '.join(self.names)})")
        return v

    def entry_key(self, v: str, path: str) -> str:
        if v not in self.keys:
            self.fail(path, v, f"accepted: an algorithm entry key ({', '.join(self.keys)})")
        return v

    def number(self, v: Any, path: str, accepted: str = "accepted: a number") -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            self.fail(path, v, accepted)
        return float(v)

    # ---- sections -------------------------------------------------------------------------

    def sizes(self):
        sz = self.raw.sizes
        if sz.max < sz.min:
            self.fail("sizes.max", sz.max, f"accepted: a size >= sizes.min ({size_label(sz.min)})")
        ext = sz.max if sz.max_extended is None else sz.max_extended
        if ext < sz.max:
            self.fail("sizes.max_extended", ext, f"accepted: a size >= sizes.max ({size_label(sz.max)})")
        self.grid = _size_list(sz.min, ext, sz.factor)
        return _size_list(sz.min, sz.max, sz.factor), self.grid

    def shapes(self) -> tuple[Shape, ...]:
        out: list[Shape] = []
        for i, s in enumerate(self.raw.shapes):
            name = s.name or "x".join(map(str, s.dims))
            if any(x.name == name for x in out):
                self.fail(f"shapes[{i}].name", name, "accepted: a name not used by another shape")
            out.append(Shape(name, tuple(s.dims), tuple(s.figures), s.extended, s.topology))
        self.names = [s.name for s in out]
        return tuple(out)

    def sweep(self):
        sw = self.raw.bandwidth_sweep
        if sw is None:
            return None, ()
        return self.shape_name(sw.shape, "bandwidth_sweep.shape"), tuple(sw.bandwidths)

    def table2(self) -> tuple[Table2Row, ...]:
        rows = []
        for key, row in self.raw.paper.table2.items():
            vals = []
            for fld, v in (("lambda", row.lam), ("psi", row.psi), ("xi", row.xi)):
                if isinstance(v, dict):
                    v = tuple(sorted(v.items()))
                elif isinstance(v, str):
                    try:
                        eval_formula(v, {"p": 64, "D": 2, "dmax": 8})
                    except (ValueError, SyntaxError, ZeroDivisionError, TypeError):
                        self.fail(f"paper.table2.{key}.{fld}", v, "accepted: a number, a map D -> number, or a formula "
                                                                   "in p, D, dmax with + - * / ** and log2()")
                vals.append(v)
            rows.append(Table2Row(str(key), str(row.label or key), *vals))
        self.t2keys = [r.key for r in rows]
        return tuple(rows)

    def entries(self) -> tuple[Entry, ...]:
        entries: list[Entry] = []
        labels: set[str] = set()
        for i, e in enumerate(self.raw.algorithms):
            path = f"algorithms[{i}]"
            if any(x.key == e.key for x in entries):
                self.fail(f"{path}.key", e.key, "accepted: a key not used by another entry")
            only = None if e.shapes is None else tuple(self.shape_name(s, f"{path}.shapes[{j}]")
                                                       for j, s in enumerate(e.shapes))
            variants = tuple(self.variant(v, f"{path}.variants[{j}]", labels) for j, v in enumerate(e.variants))
            entries.append(Entry(e.key, e.label or e.key, e.role, variants, only))
        n_subj = sum(e.role == "subject" for e in entries)
        if n_subj != 1:
            self.fail("algorithms", f"{n_subj} entries with role subject",
                      "accepted: exactly one entry with role: subject (Swing)")
        if not any(e.role == "baseline" for e in entries):
            self.fail("algorithms", "no baseline", "accepted: at least one entry with role: baseline")
        self.keys = [e.key for e in entries]
        return tuple(entries)

    def variant(self, v, path: str, labels: set[str]) -> Variant:
        from ...collectives.registry import ALGORITHMS, choose_algorithm, resolve_algorithm

        name = v.algorithm.lower().replace("-", "_")
        options: tuple = tuple(sorted(v.options.items()))
        if name not in PAPER_ALGORITHMS or name in ALGORITHMS:
            try:
                name = resolve_algorithm(name)[0].name
            except ConfigError:
                known = sorted(set(ALGORITHMS) | set(PAPER_ALGORITHMS))
                self.fail(f"{path}.algorithm", v.algorithm, f"accepted: {', '.join(known)}")
            if "dims" in v.options:
                self.fail(f"{path}.options.dims", v.options["dims"], "accepted: no dims (the shape gives them)")
            try:  # the one parser of algorithm options: typed values, one-line errors
                options = choose_algorithm(name, v.options, where=f"{path}.options").options
            except ConfigError as err:
                self.fail(err.field, err.value, err.accepted)
        label = v.label or name
        if label in labels:
            self.fail(f"{path}.label", label, "accepted: a label not used by another variant")
        labels.add(label)
        if v.table2 is not None and v.table2 not in self.t2keys:
            self.fail(f"{path}.table2", v.table2, f"accepted: a row of paper.table2 ({', '.join(self.t2keys) or 'none defined'})")
        return Variant(label, name, options, v.table2)

    def quick(self) -> tuple[tuple[str, ...], bool]:
        q = self.raw.quick
        shapes = q.shapes if q.shapes is not None else self.names[:1]
        return tuple(self.shape_name(s, f"quick.shapes[{j}]") for j, s in enumerate(shapes)), q.bandwidth_sweep

    def on_grid(self, size: float, path: str, raw: Any) -> None:
        if not any(math.isclose(size, x, rel_tol=1e-9) for x in self.grid):
            self.fail(path, raw, f"accepted: a size of the run's grid ({size_label(self.grid[0])} "
                                 f"x{self.raw.sizes.factor:g} .. {size_label(self.grid[-1])})")

    def gain_rows(self, sweep_shape, sweep_bw) -> list[PaperGain]:
        paper, gains = self.raw.paper, []
        gsizes = paper.gain_sizes
        for j, s in enumerate(gsizes):
            self.on_grid(s, f"paper.gain_sizes[{j}]", s)

        def row(values, path):
            if len(values) != len(gsizes):
                self.fail(path, f"{len(values)} values", f"accepted: {len(gsizes)} values, one per paper.gain_sizes")
            return values

        for shp, vals in paper.fig7.items():
            shp = self.shape_name(shp, f"paper.fig7.{shp}")
            gains += [PaperGain("7", shp, s, g, g) for s, g in zip(gsizes, row(vals, f"paper.fig7.{shp}"))]
        if paper.fig8 and sweep_shape is None:
            self.fail("paper.fig8", "given", "accepted: only with a bandwidth_sweep section")
        for bwt, vals in paper.fig8.items():
            from ...units import parse_bandwidth

            b = parse_bandwidth(bwt, self.prefix + f"paper.fig8.{bwt}")
            if not any(math.isclose(b, x) for x in sweep_bw):
                self.fail(f"paper.fig8.{bwt}", bwt, "accepted: a bandwidth of bandwidth_sweep.bandwidths")
            gains += [PaperGain("8", sweep_shape, s, g, g, bandwidth_Bps=b) for s, g in zip(gsizes, row(vals, f"paper.fig8.{bwt}"))]
        return gains + [self.point(p, f"paper.points[{j}]") for j, p in enumerate(paper.points)]

    def point(self, pt, path: str) -> PaperGain:
        from ...units import parse_size

        shp = self.shape_name(pt.shape, f"{path}.shape")
        size = None
        if str(pt.size).strip().lower() != "max":
            size = parse_size(pt.size, self.prefix + f"{path}.size")
            if size <= 0:
                self.fail(f"{path}.size", pt.size, "accepted: a size greater than zero, or max")
            self.on_grid(size, f"{path}.size", pt.size)
        if isinstance(pt.gain, list):
            if len(pt.gain) != 2:
                self.fail(f"{path}.gain", pt.gain, "accepted: a number or a [low, high] range")
            lo, hi = sorted(pt.gain)
        else:
            lo = hi = pt.gain
        vs = self.entry_key(pt.vs, f"{path}.vs") if pt.vs is not None else None
        return PaperGain(pt.figure, shp, size, lo, hi, pt.bandwidth, vs)

    def paper_tables(self):
        paper = self.raw.paper
        rt = [(self.shape_name(shp, f"paper.runtime_32B_us.{shp}"), self.entry_key(k, f"paper.runtime_32B_us.{shp}.{k}"), v)
              for shp, row in paper.runtime_32B_us.items() for k, v in row.items()]
        peaks = [(self.shape_name(shp, f"paper.peak_fraction.{shp}"), r.model, r.sst) for shp, r in paper.peak_fraction.items()]
        gput = []
        for j, row in enumerate(paper.goodput_gbps):
            path = f"paper.goodput_gbps[{j}]"
            shp = self.shape_name(row.shape, f"{path}.shape")
            for k, v in (row.model_extra or {}).items():
                gput.append(PaperGoodput(shp, row.size, self.entry_key(k, f"{path}.{k}"),
                                         self.number(v, f"{path}.{k}", "accepted: Gb/s")))
        exact = tuple((self.shape_name(k, f"paper.swing_b_exact_psi_xi.{k}"), v)
                      for k, v in paper.swing_b_exact_psi_xi.items())
        lsums = []
        for shp, row in paper.l_distance_sums.items():
            path = f"paper.l_distance_sums.{shp}"
            shp = self.shape_name(shp, path)
            for k, v in row.items():
                if k not in self.t2keys:
                    self.fail(f"{path}.{k}", k, f"accepted: a row of paper.table2 ({', '.join(self.t2keys) or 'none defined'})")
                lsums.append((shp, str(k), v))
        return tuple(rt), tuple(peaks), tuple(gput), exact, tuple(lsums)


def resolve(raw: SwingConfigIn, source: str) -> SwingConfig:
    """The `SwingConfig` of a structurally valid config (cross references checked)."""
    r = _Resolver(raw, source)
    sizes, sizes_ext = r.sizes()
    shapes = r.shapes()
    sweep_shape, sweep_bw = r.sweep()
    table2 = r.table2()
    entries = r.entries()
    quick_shapes, quick_sweep = r.quick()
    gains = r.gain_rows(sweep_shape, sweep_bw)
    rt, peaks, gput, exact, lsums = r.paper_tables()
    net = raw.network
    return SwingConfig(
        name=raw.name, source=source, link_bandwidth_Bps=net.link_bandwidth, link_latency_s=net.link_latency,
        hop_processing_s=net.hop_processing, step_overhead_s=net.step_overhead, model=net.model, sizes=sizes,
        sizes_extended=sizes_ext, shapes=shapes, sweep_shape=sweep_shape, sweep_bandwidths=sweep_bw,
        algorithms=entries, quick_shapes=quick_shapes, quick_sweep=quick_sweep, paper_gains=tuple(gains),
        runtime_32B_us=rt, peak_fraction=peaks, paper_goodput=gput, table2=table2, swing_b_exact=exact,
        l_distance_sums=lsums,
    )
