"""Resolve a structurally valid Swing config (`schema.SwingConfigIn`) into a `SwingConfig`: the
checks that span fields (names referenced elsewhere, sizes on the run's grid, one subject, one
baseline at least, unique keys and labels) and algorithm options through the registry's one
parser, `choose_algorithm`."""

from __future__ import annotations

import math
from typing import Any

from ...errors import ConfigError
from ...units import parse_bandwidth
from .config import (
    PAPER_ALGORITHMS,
    Entry,
    PaperGain,
    PaperGoodput,
    Shape,
    SwingConfig,
    Table2Row,
    Variant,
    size_grid,
    size_label,
)
from .schema import EntryIn, PointIn, SwingConfigIn, VariantIn


class _Resolver:
    """One pass over the parsed config, section by section; `fail` raises the one-line error."""

    def __init__(self, raw: SwingConfigIn, source: str):
        self.raw, self.prefix = raw, f"{source}: " if source else ""
        self.names: list[str] = []
        self.keys: list[str] = []
        self.t2keys: list[str] = []
        self.grid: tuple[float, ...] = ()

    def fail(self, path: str, value: Any, accepted: str):
        """Raise the ConfigError for field `path` (prefixed with the file)."""
        raise ConfigError(self.prefix + path, value, accepted)

    def shape_name(self, v: str, path: str) -> str:
        """`v` if it names a shape of the config."""
        if v not in self.names:
            self.fail(path, v, f"accepted: a shape listed under shapes ({', '.join(self.names)})")
        return v

    def entry_key(self, v: str, path: str) -> str:
        """`v` if it is the key of an algorithm entry."""
        if v not in self.keys:
            self.fail(path, v, f"accepted: an algorithm entry key ({', '.join(self.keys)})")
        return v

    def table2_key(self, v: str, path: str) -> str:
        """`v` if it names a row of paper.table2."""
        if v not in self.t2keys:
            self.fail(path, v, f"accepted: a row of paper.table2 ({', '.join(self.t2keys) or 'none defined'})")
        return v

    # ---- sections -------------------------------------------------------------------------

    def sizes(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The size grids (to max, to max_extended), bytes."""
        sz = self.raw.sizes
        if sz.max < sz.min:
            self.fail("sizes.max", size_label(sz.max), f"accepted: a size >= sizes.min ({size_label(sz.min)})")
        ext = sz.max if sz.max_extended is None else sz.max_extended
        if ext < sz.max:
            self.fail("sizes.max_extended", size_label(ext), f"accepted: a size >= sizes.max ({size_label(sz.max)})")
        self.grid = size_grid(sz.min, ext, sz.factor)
        return size_grid(sz.min, sz.max, sz.factor), self.grid

    def shapes(self) -> tuple[Shape, ...]:
        """The shapes, named (`8x8` by default) and unique."""
        out: list[Shape] = []
        for i, s in enumerate(self.raw.shapes):
            name = s.name or "x".join(map(str, s.dims))
            if any(x.name == name for x in out):
                self.fail(f"shapes[{i}].name", name, "accepted: a name not used by another shape")
            out.append(Shape(name, tuple(s.dims), tuple(s.figures), s.extended, s.topology))
        self.names = [s.name for s in out]
        return tuple(out)

    def sweep(self) -> tuple[str | None, tuple[float, ...]]:
        """The bandwidth sweep: its shape and bandwidths (bytes/s), or (None, ())."""
        sw = self.raw.bandwidth_sweep
        if sw is None:
            return None, ()
        return self.shape_name(sw.shape, "bandwidth_sweep.shape"), tuple(sw.bandwidths)

    def table2(self) -> tuple[Table2Row, ...]:
        """The rows of the paper's Table 2 (values already checked by the schema)."""
        rows = tuple(Table2Row(str(k), r.label or str(k), r.lam, r.psi, r.xi) for k, r in self.raw.paper.table2.items())
        self.t2keys = [r.key for r in rows]
        return rows

    def entries(self) -> tuple[Entry, ...]:
        """The algorithm entries: unique keys, one subject, a baseline at least."""
        entries: list[Entry] = []
        labels: set[str] = set()
        for i, e in enumerate(self.raw.algorithms):
            entries.append(self.entry(e, f"algorithms[{i}]", labels, entries))
        n_subj = sum(e.role == "subject" for e in entries)
        if n_subj != 1:
            self.fail("algorithms", f"{n_subj} entries with role subject",
                      "accepted: exactly one entry with role: subject (Swing)")
        if not any(e.role == "baseline" for e in entries):
            self.fail("algorithms", "no baseline", "accepted: at least one entry with role: baseline")
        self.keys = [e.key for e in entries]
        return tuple(entries)

    def entry(self, e: EntryIn, path: str, labels: set[str], before: list[Entry]) -> Entry:
        """One entry with its variants (variant labels unique over the config)."""
        if any(x.key == e.key for x in before):
            self.fail(f"{path}.key", e.key, "accepted: a key not used by another entry")
        only = None if e.shapes is None else tuple(self.shape_name(s, f"{path}.shapes[{j}]")
                                                   for j, s in enumerate(e.shapes))
        variants = tuple(self.variant(v, f"{path}.variants[{j}]", labels) for j, v in enumerate(e.variants))
        return Entry(e.key, e.label or e.key, e.role, variants, only)

    def variant(self, v: VariantIn, path: str, labels: set[str]) -> Variant:
        """One variant: a registered algorithm (or one of the paper's, not registered yet) with
        its options typed by `choose_algorithm`."""
        from ...collectives.registry import ALGORITHMS, choose_algorithm, resolve_algorithm

        name = v.algorithm.lower().replace("-", "_")
        options: tuple = tuple(sorted(v.options.items()))
        if name not in PAPER_ALGORITHMS or name in ALGORITHMS:
            try:
                alg = resolve_algorithm(name)[0]
            except ConfigError:
                known = sorted(set(ALGORITHMS) | set(PAPER_ALGORITHMS))
                self.fail(f"{path}.algorithm", v.algorithm, f"accepted: {', '.join(known)}")
            allowed = [o for o in alg.options if o.name != "dims"]  # the shape gives the dims
            for key, value in v.options.items():
                k = str(key).strip().lower().replace("-", "_")
                if k == "dims" or alg.option(k) is None:
                    self.fail(f"{path}.options.{key}", value, f"{alg.name} accepts: "
                              f"{', '.join(o.describe() for o in allowed) or 'no options'} (the shape gives dims)")
            try:  # the one parser of algorithm options: typed values, one-line errors
                choice = choose_algorithm(name, v.options, where=f"{path}.options")
            except ConfigError as err:
                self.fail(err.field, err.value, err.accepted)
            name, options = choice.name, choice.options
        label = v.label or name
        if label in labels:
            self.fail(f"{path}.label", label, "accepted: a label not used by another variant")
        labels.add(label)
        if v.table2 is not None:
            self.table2_key(v.table2, f"{path}.table2")
        return Variant(label, name, options, v.table2)

    def quick(self) -> tuple[tuple[str, ...], bool]:
        """The quick subset: shape names (default: the first shape) and whether to sweep."""
        q = self.raw.quick
        shapes = q.shapes if q.shapes is not None else self.names[:1]
        return tuple(self.shape_name(s, f"quick.shapes[{j}]") for j, s in enumerate(shapes)), q.bandwidth_sweep

    def on_grid(self, size: float, path: str) -> None:
        """Fail unless `size` (bytes) is a size of the run's grid."""
        if not any(math.isclose(size, x, rel_tol=1e-9) for x in self.grid):
            self.fail(path, size_label(size), f"accepted: a size of the run's grid ({size_label(self.grid[0])} "
                                              f"x{self.raw.sizes.factor:g} .. {size_label(self.grid[-1])})")

    def gains(self, sweep_shape: str | None, sweep_bw: tuple[float, ...]) -> list[PaperGain]:
        """The paper's gains: Fig. 7 per shape, Fig. 8 per bandwidth, and the single points."""
        paper, gains = self.raw.paper, []
        gsizes = paper.gain_sizes
        for j, s in enumerate(gsizes):
            self.on_grid(s, f"paper.gain_sizes[{j}]")

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
            b = parse_bandwidth(bwt, self.prefix + f"paper.fig8.{bwt}")
            if not any(math.isclose(b, x) for x in sweep_bw):
                self.fail(f"paper.fig8.{bwt}", bwt, "accepted: a bandwidth of bandwidth_sweep.bandwidths")
            gains += [PaperGain("8", sweep_shape, s, g, g, bandwidth_Bps=b)
                      for s, g in zip(gsizes, row(vals, f"paper.fig8.{bwt}"))]
        return gains + [self.point(p, f"paper.points[{j}]") for j, p in enumerate(paper.points)]

    def point(self, pt: PointIn, path: str) -> PaperGain:
        """One stated gain (its size on the grid, its `vs` an entry key)."""
        shp = self.shape_name(pt.shape, f"{path}.shape")
        if pt.size is not None:
            self.on_grid(pt.size, f"{path}.size")
        vs = self.entry_key(pt.vs, f"{path}.vs") if pt.vs is not None else None
        return PaperGain(pt.figure, shp, pt.size, pt.gain[0], pt.gain[1], pt.bandwidth, vs)

    def tables(self):
        """The paper's 32 B runtimes, peak fractions, goodputs, exact Psi*Xi and distance sums."""
        paper = self.raw.paper
        rt = [(self.shape_name(shp, f"paper.runtime_32B_us.{shp}"), self.entry_key(k, f"paper.runtime_32B_us.{shp}.{k}"), v)
              for shp, row in paper.runtime_32B_us.items() for k, v in row.items()]
        peaks = [(self.shape_name(shp, f"paper.peak_fraction.{shp}"), r.model, r.sst) for shp, r in paper.peak_fraction.items()]
        gput = []
        for j, row in enumerate(paper.goodput_gbps):
            path = f"paper.goodput_gbps[{j}]"
            shp = self.shape_name(row.shape, f"{path}.shape")
            for k, v in (row.model_extra or {}).items():
                if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                    self.fail(f"{path}.{k}", v, "accepted: Gb/s")
                gput.append(PaperGoodput(shp, row.size, self.entry_key(k, f"{path}.{k}"), float(v)))
        exact = tuple((self.shape_name(k, f"paper.swing_b_exact_psi_xi.{k}"), v)
                      for k, v in paper.swing_b_exact_psi_xi.items())
        lsums = [(self.shape_name(shp, f"paper.l_distance_sums.{shp}"),
                  self.table2_key(str(k), f"paper.l_distance_sums.{shp}.{k}"), v)
                 for shp, row in paper.l_distance_sums.items() for k, v in row.items()]
        return tuple(rt), tuple(peaks), tuple(gput), exact, tuple(lsums)

    def network(self, rt) -> dict:
        """The NIC, the packets and where the per-step overhead comes from: a value
        (`network.step_overhead`) or one labelled 32 B runtime (`calibration.step_overhead_from`)."""
        net, cal = self.raw.network, self.raw.calibration.step_overhead_from
        if (net.packet_size is None) != (net.packet_overhead is None):
            self.fail("network.packet_overhead" if net.packet_overhead is None else "network.packet_size", None,
                      "required with the other; accepted: packet_size and packet_overhead together (or neither)")
        point = None
        if cal is not None:
            if net.step_overhead is not None:
                self.fail("calibration.step_overhead_from", f"{cal.shape}/{cal.entry}",
                          "accepted: either network.step_overhead or calibration.step_overhead_from, not both")
            path = "calibration.step_overhead_from"
            shp, key = self.shape_name(cal.shape, f"{path}.shape"), self.entry_key(cal.entry, f"{path}.entry")
            label = next((v for s, k, v in rt if s == shp and k == key), None)
            if label is None:
                self.fail(path, f"{shp}/{key}", "accepted: a shape and entry with a label in paper.runtime_32B_us")
            point = (shp, key, label * 1e-6)
        elif net.step_overhead is None:
            self.fail("network.step_overhead", None, "required field is missing; accepted: a time, e.g. 0.5us "
                      "(or calibration.step_overhead_from)")
        return {"step_overhead_s": net.step_overhead, "step_overhead_from": point,
                "nic_injection_Bps": net.nic_injection, "packet_size_B": net.packet_size,
                "packet_overhead_s": net.packet_overhead}


def resolve(raw: SwingConfigIn, source: str) -> SwingConfig:
    """The `SwingConfig` of a structurally valid config, cross references checked.

    Parameters
    ----------
    raw : SwingConfigIn
        The validated file.
    source : str
        What errors name first (the file name).

    Returns
    -------
    SwingConfig
        A one-line ConfigError naming the field for a broken reference.
    """
    r = _Resolver(raw, source)
    sizes, sizes_ext = r.sizes()
    shapes = r.shapes()
    sweep_shape, sweep_bw = r.sweep()
    table2 = r.table2()
    entries = r.entries()
    quick_shapes, quick_sweep = r.quick()
    gains = r.gains(sweep_shape, sweep_bw)
    rt, peaks, gput, exact, lsums = r.tables()
    net = raw.network
    nic = r.network(rt)
    return SwingConfig(
        name=raw.name, source=source, link_bandwidth_Bps=net.link_bandwidth, link_latency_s=net.link_latency,
        hop_processing_s=net.hop_processing, model=net.model, sizes=sizes,
        sizes_extended=sizes_ext, shapes=shapes, sweep_shape=sweep_shape, sweep_bandwidths=sweep_bw,
        algorithms=entries, quick_shapes=quick_shapes, quick_sweep=quick_sweep, paper_gains=tuple(gains),
        runtime_32B_us=rt, peak_fraction=peaks, paper_goodput=gput, table2=table2, swing_b_exact=exact,
        l_distance_sums=lsums, **nic,
    )
