"""The wafer of the FRED paper: a 2-D mesh of NPUs with perimeter I/O controllers (FRED's own
switch fabric is `fred.py`).

- `wafer_mesh(cols, rows, ...)`: NPUs 0..n-1 on a cols x rows mesh (dimension 0 = x, fastest),
  X-Y routing. One I/O controller per external edge of the perimeter (a corner NPU has two):
  2 (cols + rows) controllers, nodes n.. in order around the perimeter, each linked both ways to
  its NPU at `io_bandwidth`. Traffic from or to a controller enters or leaves the mesh at its
  NPU, perpendicular to the controller's edge (see `IORouter`).
- `io_throttle(topo)`: the share of line rate at which every controller can stream at once when
  each broadcasts to every NPU (or every NPU writes back to each): the paper's P = link / (2N-1)
  (Sec. 3.2.1), here from the routes' link loads. `wafer:5x4,iothrottle` runs the controllers at
  it, as the paper's mesh does for every strategy ("the I/O channel rate must be reduced").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from pydantic import Field, field_validator, model_validator

from ...errors import ConfigError
from ...units import parse_bandwidth
from ..family import (
    Bool,
    Int,
    LinkValues,
    Params,
    TopologyFamily,
    bandwidth_field,
    check_size,
    parse_flags,
    parse_shape,
)
from ..core import WAFER_XY
from ..graph import Topology, csr_from_hops
from .stack import stack


@dataclass(frozen=True, eq=False)
class IORouter:
    """Dimension-order routing on a 2-D mesh, X then Y between NPUs. Traffic of an I/O
    controller enters the mesh perpendicular to its edge: from a controller on the top or bottom
    edge Y then X, on the left or right edge X then Y; traffic to a controller takes the reverse
    path. Each controller's broadcast then spreads along its own row or column first, which
    balances the perimeter's channels over the mesh (the paper's (2N-1)P hotspot).

    Parameters
    ----------
    inner : Topology
        The mesh alone (its router's `step_link` table gives the link of a +/- step per dimension).
    io_npu : int64 array [K]
        The NPU each controller hangs off.
    io_vertical : bool array [K]
        True for controllers on the top or bottom edge.
    io_up, io_down : int64 arrays [K]
        Each controller's link to its NPU and the link back.
    """

    inner: Topology  # the mesh alone (its step_link table: link of a +/- step per dimension)
    io_npu: np.ndarray  # NPU of each controller
    io_vertical: np.ndarray  # True for controllers on the top or bottom edge
    io_up: np.ndarray  # link controller -> NPU
    io_down: np.ndarray  # link NPU -> controller
    routing: ClassVar[str] = WAFER_XY  # the rule it states (`core.Structure`), with `kinds`

    @property
    def kinds(self) -> tuple[str, ...]:
        """The mesh's dimension kinds: ("line", "line")."""
        return tuple(self.inner.router.kinds)

    def _walk(self, s: np.ndarray, d: np.ndarray, y_first: np.ndarray):
        """Paths s -> d inside the mesh, correcting dimension 0 first, or 1 first where `y_first`."""
        step = self.inner.router.step_link
        cols, rows = self.inner.dims
        cur = s.copy()
        t = np.arange(len(s))
        hop_t, hop_l = [], []
        for phase in (0, 1):
            dim = np.where(y_first, 1 - phase, phase)
            for _ in range(max(cols, rows)):
                cc = np.where(dim == 0, cur % cols, cur // cols)
                cd = np.where(dim == 0, d % cols, d // cols)
                act = cc != cd
                if not act.any():
                    break
                direction = (cd[act] < cc[act]).astype(np.int64)  # 0: +, 1: -
                ln = step[cur[act], dim[act], direction]
                hop_t.append(t[act])
                hop_l.append(ln)
                cur[act] = self.inner.link_dst[ln]
        return hop_t, hop_l

    def route(self, topo: Topology, src: np.ndarray, dst: np.ndarray):
        """Paths of every (src, dst): X-Y between NPUs, perpendicular to the edge for controllers.

        Parameters
        ----------
        topo : Topology
            The wafer this router belongs to.
        src, dst : int64 arrays [T]
            Nodes of each transfer: NPUs or I/O controllers.

        Returns
        -------
        ptr : int64 array [T + 1]
        links : int64 array
            Transfer t uses links `links[ptr[t]:ptr[t + 1]]`, in path order (none when src == dst).
            ValueError for a node outside the topology.
        """
        src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
        n = topo.n_npus
        if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= topo.n_nodes):
            raise ValueError("route: node out of range")
        s_io, d_io = src >= n, dst >= n
        if len(self.io_npu) == 0:  # no controllers: every node is an NPU (checked above)
            s, d = src, dst
        else:
            s = np.where(s_io, self.io_npu[np.clip(src - n, 0, len(self.io_npu) - 1)], src)
            d = np.where(d_io, self.io_npu[np.clip(dst - n, 0, len(self.io_npu) - 1)], dst)
        y_first = np.zeros(len(src), bool)
        y_first[s_io] = self.io_vertical[src[s_io] - n]  # from a top/bottom controller: Y then X
        to_io = d_io & ~s_io
        y_first[to_io] = ~self.io_vertical[dst[to_io] - n]  # to it: the reverse, X then Y
        t = np.arange(len(src))
        ht, hl = self._walk(s, d, y_first)
        hop_t = [t[s_io & (src != dst)]] + ht + [t[d_io & (src != dst)]]
        hop_l = [self.io_up[src[s_io & (src != dst)] - n]] + hl + [self.io_down[dst[d_io & (src != dst)] - n]]
        return csr_from_hops(len(src), hop_t, hop_l)


def perimeter_edges(cols: int, rows: int) -> list[tuple[int, str]]:
    """Every external edge of a mesh's perimeter, clockwise from the top-left corner: the top row
    left to right, the right column downwards, the bottom row right to left, the left column
    upwards (a corner NPU has two).

    Parameters
    ----------
    cols, rows : int
        NPUs along x (dimension 0) and y.

    Returns
    -------
    list of (int, str)
        (NPU rank x + y cols, side: top, right, bottom or left), 2 (cols + rows) of them.
    """
    rank = lambda x, y: y * cols + x
    out = [(rank(x, 0), "top") for x in range(cols)]
    out += [(rank(cols - 1, y), "right") for y in range(rows)]
    out += [(rank(x, rows - 1), "bottom") for x in range(cols - 1, -1, -1)]
    out += [(rank(0, y), "left") for y in range(rows - 1, -1, -1)]
    return out


def hamiltonian_cycle(cols: int, rows: int) -> np.ndarray:
    """NPU ranks (x + y*cols) in the order of a cycle through every NPU of a cols x rows mesh with
    one hop between neighbours, closing back to the start: along row 0, snake through columns
    1..cols-1 of the other rows, back up column 0. Needs an even number of rows (else the
    transposed cycle with an even number of columns); with both odd no such cycle exists and the
    snake path is returned (its closing step is several hops).

    Parameters
    ----------
    cols, rows : int
        NPUs along x (dimension 0) and y.

    Returns
    -------
    int64 array [cols x rows]
        A permutation of the NPU ranks.
    """
    if rows % 2 and not cols % 2:
        return np.array([(r % rows) * cols + r // rows for r in hamiltonian_cycle(rows, cols)], dtype=np.int64)
    if rows % 2 or cols < 2 or rows < 2:
        return np.array([y * cols + (x if y % 2 == 0 else cols - 1 - x) for y in range(rows) for x in range(cols)],
                        dtype=np.int64)
    order = [x for x in range(cols)]
    for y in range(1, rows):
        xs = range(cols - 1, 0, -1) if y % 2 else range(1, cols)
        order += [y * cols + x for x in xs]
    order += [y * cols for y in range(rows - 1, 0, -1)]
    return np.array(order, dtype=np.int64)


def io_throttle(topo: Topology) -> float:
    """The share of line rate at which all I/O controllers can stream at once, worst case.

    Every controller broadcasts to every NPU at its line rate (a multicast tree: one copy per
    link), and in the reverse pattern every NPU writes back to each controller (reduced on the
    way); the busiest NPU-to-NPU link then carries load L, and the controllers fit at
    min(1, link bandwidth / L) of their rate (the paper's P = link_BW / (2N - 1), Sec. 3.2.1).

    Parameters
    ----------
    topo : Topology
        A topology with I/O controllers (`io_nodes`).

    Returns
    -------
    float
        In (0, 1]; 1 without controllers. On a wafer (`Structure.routing` `WAFER_XY`, as
        `IORouter` states) the trees' link loads come from prefix sums over the mesh
        (`_wafer_tree_loads`, linear in the links); elsewhere from routing every controller to
        every NPU (`io_tree_loads`).

    Examples
    --------
    >>> round(io_throttle(wafer_mesh(5, 4, 750e9, 0.0)), 4)   # 750 / (9 x 128)
    0.651
    """
    if len(topo.io_nodes) == 0:
        return 1.0
    n = topo.n_npus
    inner = (topo.link_src < n) & (topo.link_dst < n)
    wafer = topo.structure.routing == WAFER_XY and len(topo.dims) == 2
    share = 1.0
    for broadcast in (True, False):
        load = _wafer_tree_loads(topo, broadcast) if wafer else io_tree_loads(topo, broadcast)
        used = inner & (load > 0)
        if used.any():
            share = min(share, float(np.min(topo.link_bw[used] / load[used])))
    return min(1.0, share)


def _controller_rates(topo: Topology, broadcast: bool) -> np.ndarray:
    """Each node's rate as a controller: the bandwidth of its own link (out of it when
    broadcasting, into it when written back), bytes/s; 0 for nodes without links."""
    rate = np.zeros(topo.n_nodes)
    np.maximum.at(rate, topo.link_src if broadcast else topo.link_dst, topo.link_bw)
    return rate


def io_tree_loads(topo: Topology, broadcast: bool = True) -> np.ndarray:
    """Load on every link when each I/O controller multicasts to every NPU (or every NPU writes
    back to each controller), by routing: each link of a controller's tree carries its rate once.

    Parameters
    ----------
    topo : Topology
        A topology with I/O controllers (`io_nodes`).
    broadcast : bool
        Controllers to NPUs; False: NPUs to controllers.

    Returns
    -------
    float array [n_links]
        Bytes/s per link.
    """
    ctrl = np.asarray(topo.io_nodes, dtype=np.int64)
    L, npus = topo.n_links, np.arange(topo.n_npus)
    rate = _controller_rates(topo, broadcast)
    batch = max(1, 4_000_000 // (len(npus) * (sum(topo.dims) + 2)))  # about 4M hops per routing call
    load = np.zeros(L)
    for first in range(0, len(ctrl), batch):
        cs = ctrl[first: first + batch]
        c_rep, t_rep = np.repeat(cs, len(npus)), np.tile(npus, len(cs))
        ptr, links = topo.route(*((c_rep, t_rep) if broadcast else (t_rep, c_rep)))
        pair = np.unique(np.repeat(c_rep, np.diff(ptr)) * L + links)  # each link once per controller's tree
        load += np.bincount(pair % L, weights=rate[pair // L], minlength=L)
    return load


def _wafer_tree_loads(topo: Topology, broadcast: bool) -> np.ndarray:
    """`io_tree_loads` of a wafer in closed form (the `IORouter` paths), linear in the links.

    Broadcasting, a top or bottom controller in column x0 goes along its column, then along
    every row both ways from x0: it loads its column's links away from its edge, and in every
    row the -x links leaving x <= x0 and the +x links leaving x >= x0; a left or right
    controller in row y0 likewise with rows and columns swapped. Writing back, every path is
    reversed: a link carries what its reverse carries in a broadcast at the write-back rates.
    The sums over controllers are prefix sums over columns and rows (tests: equal to routing).
    """
    cols, rows = topo.dims
    rate = _controller_rates(topo, broadcast)[np.asarray(topo.io_nodes, dtype=np.int64)]
    x0, y0 = topo.coords(topo.io_attach).T
    vert = topo.router.io_vertical

    def per(index, mask, size):  # summed rates of the controllers in `mask`, by column or row
        return np.bincount(index[mask], weights=rate[mask], minlength=size)

    v_col, h_row = per(x0, vert, cols), per(y0, ~vert, rows)
    top, bottom = per(x0, vert & (y0 == 0), cols), per(x0, vert & (y0 == rows - 1), cols)
    left, right = per(y0, ~vert & (x0 == 0), rows), per(y0, ~vert & (x0 == cols - 1), rows)
    v_le, h_le = np.cumsum(v_col), np.cumsum(h_row)  # controllers at or before a column / row
    v_ge, h_ge = np.cumsum(v_col[::-1])[::-1], np.cumsum(h_row[::-1])[::-1]  # at or after

    mesh = topo.link_dim >= 0
    s_xy, d_xy = topo.coords(topo.link_src[mesh]), topo.coords(topo.link_dst[mesh])
    if not broadcast:  # the reverse link's broadcast load
        s_xy, d_xy = d_xy, s_xy
    (sx, sy), (dx, dy) = s_xy.T, d_xy.T
    load_mesh = np.select(
        [dx < sx, dx > sx, dy > sy, dy < sy],
        [v_ge[sx] + right[sy], v_le[sx] + left[sy], top[sx] + h_le[sy], bottom[sx] + h_ge[sy]])
    load = np.zeros(topo.n_links)
    load[mesh] = load_mesh
    return load


def wafer_size(cols: int, rows: int, io: bool = True) -> tuple[int, int]:
    """NPUs and directed links of a wafer, counted without building it.

    Parameters
    ----------
    cols, rows : int
        NPUs along x and y.
    io : bool
        With the 2 (cols + rows) perimeter I/O controllers.

    Returns
    -------
    (int, int)
        cols x rows NPUs; mesh links 2 ((cols - 1) rows + (rows - 1) cols), plus 2 per controller.

    Examples
    --------
    >>> wafer_size(5, 4), wafer_size(5, 4, io=False)
    ((20, 98), (20, 62))
    """
    mesh = 2 * ((cols - 1) * rows + (rows - 1) * cols)
    return cols * rows, mesh + (4 * (cols + rows) if io else 0)


def wafer_mesh(cols: int, rows: int, bandwidth: float, latency: float, *, io_bandwidth: float = 128e9,
               io_latency: float | None = None, io: bool = True, throttle: bool = False) -> Topology:
    """FRED's baseline wafer: a `cols` x `rows` mesh of NPUs, an I/O controller per external edge
    of the perimeter (module doc).

    Parameters
    ----------
    cols, rows : int
        NPUs along x (dimension 0, fastest) and y.
    bandwidth : float
        Mesh links, per direction, bytes/s.
    latency : float
        Mesh links, s.
    io_bandwidth : float
        Each controller's link to its NPU, per direction, bytes/s.
    io_latency : float, optional
        Controller links, s; default `latency`.
    io : bool
        With the 2 (cols + rows) controllers (nodes n.., clockwise from the top-left corner);
        False: the bare mesh.
    throttle : bool
        Run the controllers at `io_throttle` of `io_bandwidth`, the rate at which all of them
        fit the mesh in the worst case (the paper's baseline, Sec. 3.2.1).

    Returns
    -------
    Topology
        Named `wafer:CxR` (`,noio`, `,iothrottle`); `io_nodes`/`io_attach` the controllers and their NPUs,
        `ring_order` the mesh's Hamiltonian cycle; X-Y routing (`IORouter`).

    Examples
    --------
    >>> t = wafer_mesh(5, 4, 750e9, 1e-8)
    >>> t.n_switches, t.n_links   # 18 controllers; mesh 2 x (4 x 4 + 5 x 3), controllers 2 x 18
    (18, 98)
    """
    check_size(*wafer_size(cols, rows, io), "topology", f"wafer:{cols}x{rows}")  # before allocating
    inner = stack(("line", "line"), (cols, rows), [bandwidth] * 2, [latency] * 2, name=f"mesh:{cols}x{rows}")
    n = cols * rows
    edges = perimeter_edges(cols, rows) if io else []
    io_npu = np.array([npu for npu, _ in edges], dtype=np.int64)
    io_vertical = np.array([side in ("top", "bottom") for _, side in edges], dtype=bool)
    k = len(io_npu)
    L = inner.n_links
    ctrl = n + np.arange(k)
    io_lat = latency if io_latency is None else io_latency
    link_src = np.concatenate([inner.link_src, ctrl, io_npu])
    link_dst = np.concatenate([inner.link_dst, io_npu, ctrl])
    link_bw = np.concatenate([inner.link_bw, np.full(2 * k, float(io_bandwidth))])
    link_lat = np.concatenate([inner.link_lat, np.full(2 * k, float(io_lat))])
    link_dim = np.concatenate([inner.link_dim, np.full(2 * k, -1)])
    router = IORouter(inner, io_npu, io_vertical, L + np.arange(k), L + k + np.arange(k))
    name = f"wafer:{cols}x{rows}" + ("" if io else ",noio")
    topo = Topology(name, n, link_src, link_dst, link_bw, link_lat, router, n_switches=k, dims=(cols, rows),
                    link_dim=link_dim, io_nodes=ctrl, io_attach=io_npu, ring_order=hamiltonian_cycle(cols, rows))
    if not (throttle and k):
        return topo
    bw = link_bw.copy()
    bw[L:] *= io_throttle(topo)  # the controllers' links run at the rate the worst case fits
    return Topology(name + ",iothrottle", n, link_src, link_dst, bw, link_lat, router, n_switches=k, dims=(cols, rows),
                    link_dim=link_dim, io_nodes=ctrl, io_attach=io_npu, ring_order=hamiltonian_cycle(cols, rows))



class WaferParams(Params):
    """wafer's parameters.

    Parameters
    ----------
    cols, rows : int
        NPUs along x and y, >= 2 each.
    io_bandwidth : float or str
        Each I/O controller's link, per direction: bytes/s or with units (`128GB/s`).
    io : bool
        With the perimeter I/O controllers (`wafer:5x4,noio`: without; then neither
        `io_bandwidth` nor `throttle`, which set the controllers).
    throttle : bool
        Controllers at the rate the worst case fits (`wafer:5x4,iothrottle`; `io_throttle`).
    """

    cols: Int = Field(ge=2)
    rows: Int = Field(ge=2)
    io_bandwidth: float = 128e9
    io: Bool = True
    throttle: Bool = False

    _io_bw = field_validator("io_bandwidth", mode="before")(bandwidth_field)

    @model_validator(mode="after")
    def _consistent(self):
        if not self.io:  # no controllers: their bandwidth or throttle would be ignored
            for k in ("io_bandwidth", "throttle"):
                if k in self.model_fields_set and (k == "io_bandwidth" or self.throttle):
                    raise ConfigError(k, getattr(self, k), "sets the I/O controllers, and io is false (none); "
                                                           "accepted: io true, or leave it out")
        return self


def _parse(spec: str, shape: str, opts: list[str]) -> dict:
    f = parse_flags(opts, {"io", "noio", "iothrottle"}, spec, valued=frozenset({"io"}))
    dims = parse_shape(shape, spec)
    if len(dims) != 2 or min(dims) < 2:
        raise ConfigError("topology", spec, "accepted: wafer:COLSxROWS with both >= 2, e.g. wafer:5x4")
    if "noio" in f and ("io" in f or "iothrottle" in f):
        other = "io=" + f["io"] if "io" in f else "iothrottle"
        raise ConfigError("topology", spec, f"noio (no I/O controllers) contradicts {other} (which sets them); "
                                            "accepted: one of them")
    out = {"cols": dims[0], "rows": dims[1], "io": "noio" not in f, "throttle": "iothrottle" in f}
    if "io" in f:
        out["io_bandwidth"] = parse_bandwidth(f["io"], "topology io")
    return out


def _build(p: WaferParams, bandwidth: LinkValues, latency: LinkValues) -> Topology:
    return wafer_mesh(p.cols, p.rows, bandwidth.one(), latency.one(), io_bandwidth=p.io_bandwidth, io=p.io,
                      throttle=p.throttle)


FAMILY = TopologyFamily("wafer", "wafer:5x4[,io=128GB/s][,iothrottle]",
                        "wafer 2-D mesh, X-Y routing, an I/O controller per perimeter edge (FRED's baseline)",
                        WaferParams, _parse, _build, size=lambda p: wafer_size(p.cols, p.rows, p.io))
