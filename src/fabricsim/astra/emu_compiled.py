"""ASTRA-sim emulation on the compiled core (`emu_kernel`): what it serves, and its inputs built
from the same objects the Python emulation reads.

It serves every NPU simulated (no mirror) where each node is compute, metadata or a collective
without a communicator group, simulated with ring or direct (oneRing, oneDirect, directN) on
either backend, or replayed; the rest (point-to-point messages, groups, halvingDoubling,
doubleBinaryTree, custom collectives, inputs the Python emulation refuses) runs in Python, which
also gives the errors. Both give the same ticks (tests/test_astra_compiled.py compares them).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import ConfigError
from .emu_network import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, REDUCE_SCATTER, Deadlock, NetSpec, NotServed, SysSpec
from .emu_system import phase_plan
from .workload import COLLECTIVE_OF, COMM_COLL, COMP, INVALID, METADATA, compute_time_ns, group_members

# the core's codes (emu_kernel reads them from here): workload node kinds (resources: 0 GPU, 1 CPU,
# 2 communication, -1 none), a phase's collective, a dimension's network
K_META, K_COMP, K_COLL, K_REPLAY = 0, 1, 2, 3
C_AR, C_RS, C_AG, C_A2A = 0, 1, 2, 3
N_RING, N_FC, N_SWITCH = 0, 1, 2
COLL_CODE = {ALL_REDUCE: C_AR, REDUCE_SCATTER: C_RS, ALL_GATHER: C_AG, ALL_TO_ALL: C_A2A}
NET_CODE = {"Ring": N_RING, "FullyConnected": N_FC, "Switch": N_SWITCH}


class _Templates:
    """The phases of each distinct (collective, size, involved dimensions), as `Sys.generate`
    builds them, flattened into the kernel's phase arrays."""

    def __init__(self, net: NetSpec, system: SysSpec):
        self.net, self.system = net, system
        self.index: dict = {}
        self.starts = [0]
        self.cols: dict[str, list[int]] = {k: [] for k in ("queue", "coll", "n", "stride", "direct", "window", "data")}

    def of(self, collective: str, size: int, involved) -> int:
        """The template id of one collective (NotServed where the core cannot run it)."""
        key = (collective, size, tuple(involved) if involved else None)
        if key not in self.index:
            self.index[key] = self._build(collective, size, involved)
        return self.index[key]

    def _build(self, collective: str, size: int, involved) -> int:
        spec, dims = self.system, self.net.dims
        if collective in spec.custom:
            raise NotServed("custom collective")
        impls = spec.impls.get(collective)
        if not impls or any(i.name not in ("ring", "direct") for i in impls):
            raise NotServed("only ring and direct are compiled")
        chunk = size // spec.splits
        if chunk <= 0 or size % spec.splits:
            raise NotServed("comm_size not a multiple of the splits")
        flat = impls[0].flat
        if flat:
            ldims, limpls, involved = (self.net.npus,), (impls[0],), (True,)
        else:
            ldims, limpls = dims, impls
            involved = tuple(involved) if involved else (True,) * len(dims)
            involved = (involved + (True,) * len(dims))[: len(dims)]
        active = [d for d in range(len(ldims)) if ldims[d] > 1 and involved[d]]
        plan = phase_plan(collective, active, spec.optimization)
        if not plan or len(limpls) < len(ldims):
            raise NotServed("a collective with no phase")
        remain = chunk
        for coll, d in plan:
            impl, n = limpls[d], ldims[d]
            c = self.cols
            c["queue"].append(0 if flat else d)
            c["coll"].append(COLL_CODE[coll])
            c["n"].append(n)
            c["stride"].append(1 if flat else math.prod(ldims[:d]))
            c["direct"].append(int(impl.name == "direct"))
            c["window"].append(-1 if impl.window is None else impl.window)
            c["data"].append(remain)
            remain = {REDUCE_SCATTER: remain // n, ALL_GATHER: remain * n}.get(coll, remain)  # Ring.final_data_size
        self.starts.append(len(self.cols["queue"]))
        return len(self.starts) - 2

    def arrays(self) -> tuple:
        """(tp_start, queue, coll, n, stride, direct, window, data) as int64 arrays."""
        return (np.array(self.starts, np.int64),) + tuple(np.array(v, np.int64) for v in self.cols.values())


def _node_entry(node, templates: _Templates, roofline, replay_only: bool, groups: dict, npu: int, npus: int,
                where: str) -> tuple:
    """(kind, resource, duration ns, template) of one Chakra node, as `NpuWorkload.issue` runs it
    (NotServed for what the core does not run, and for what the Python emulation refuses: it says so)."""
    t = node.type
    if t in (METADATA, INVALID):
        return K_META, -1, 0, -1
    if t == COMP:
        dur = compute_time_ns(node, roofline, replay_only)
        if dur is None:
            raise NotServed("roofline without num_ops")
        return K_COMP, 1 if node.is_cpu_op else 0, dur, -1
    if t != COMM_COLL:
        raise NotServed("point-to-point or memory nodes")
    try:
        group = group_members(node, groups, npu, npus, where)
    except ConfigError:  # an unknown group: the Python emulation gives the error
        raise NotServed("communicator group") from None
    if group is not None:
        raise NotServed("communicator group")
    ctype = node.comm_type
    if replay_only or ctype == 5:
        return K_REPLAY, 2, int(node.duration_micros * 1000), -1
    if ctype not in COLLECTIVE_OF or node.comm_size is None:
        raise NotServed("a collective ASTRA-sim does not simulate")
    return K_COLL, 2, 0, templates.of(COLLECTIVE_OF[ctype], int(node.comm_size), node.involved_dim)


def workload_arrays(net: NetSpec, system: SysSpec, traces: Sequence, roofline=None, replay_only: bool = False,
                    groups: dict | None = None, where: str = "workload") -> dict:
    """The kernel's inputs for one Chakra trace per NPU (NotServed where it cannot run them).

    Parameters
    ----------
    net : NetSpec
        The network.
    system : SysSpec
        The system layer's settings.
    traces : sequence of EtTrace
        One per NPU, rank order.
    roofline : Roofline, optional
        Time GPU compute nodes with the roofline.
    replay_only : bool
        Replay collectives' recorded durations.
    groups : dict, optional
        Communicator groups, id -> member ranks.
    where : str
        The trace prefix, for error messages.

    Returns
    -------
    dict
        Keyword arrays for `run_kernel`, plus "ids" (per NPU, its node ids in kernel order).
    """
    from .emu_custom import DepGraph

    templates = _Templates(net, system)
    kind, res, dur, tmpl, npu_of, starts, ch_start, ch_list, waiting, ids = [], [], [], [], [], [0], [0], [], [], []
    stream_base = [0]
    for r, trace in enumerate(traces):
        graph = DepGraph(trace.nodes)
        order = sorted(graph.nodes)
        local = {nid: starts[-1] + i for i, nid in enumerate(order)}
        streams = 0
        for nid in order:
            node = graph.nodes[nid]
            try:
                entry = _node_entry(node, templates, roofline, replay_only, groups or {}, r, net.npus,
                                    f"{where}.{r}.et")
            except (TypeError, ValueError) as e:
                raise NotServed(f"node {nid}: {e}") from None
            kind.append(entry[0])
            res.append(entry[1])
            dur.append(entry[2])
            tmpl.append(entry[3])
            streams += system.splits if entry[0] == K_COLL else 0
            npu_of.append(r)
            ch_list.extend(local[c] for c in graph.children[nid])
            ch_start.append(len(ch_list))
            waiting.append(graph.waiting[nid])
        starts.append(starts[-1] + len(order))
        stream_base.append(stream_base[-1] + streams)
        ids.append(order)
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    out = dict(nd_npu=i64(npu_of), nd_start=i64(starts), nd_kind=i64(kind), nd_res=i64(res), nd_dur=i64(dur),
               nd_tmpl=i64(tmpl), ch_start=i64(ch_start), ch_list=i64(ch_list), waiting0=i64(waiting),
               stream_base=i64(stream_base))
    out["templates"] = templates.arrays()
    out["ids"] = ids
    return out


def collective_arrays(net: NetSpec, system: SysSpec, collective: str, size: int, involved=None) -> dict:
    """The kernel's inputs for one collective issued by every NPU at time 0 (`simulate_collective`):
    one collective node per NPU, which finishes when its collective does."""
    templates = _Templates(net, system)
    t = templates.of(collective, size, involved)
    n = net.npus
    i64 = lambda v: np.array(v, np.int64)  # noqa: E731
    out = dict(nd_npu=np.arange(n, dtype=np.int64), nd_start=np.arange(n + 1, dtype=np.int64),
               nd_kind=np.full(n, K_COLL, np.int64), nd_res=np.full(n, 2, np.int64), nd_dur=np.zeros(n, np.int64),
               nd_tmpl=np.full(n, t, np.int64), ch_start=np.zeros(n + 1, np.int64), ch_list=i64([]),
               waiting0=np.zeros(n, np.int64), stream_base=np.arange(n + 1, dtype=np.int64) * system.splits)
    out["templates"] = templates.arrays()
    out["ids"] = [[0]] * n
    return out


def network_why_not(net: NetSpec, backend: str) -> str | None:
    """Why the compiled core cannot run this network and backend (None: it can)."""
    if backend not in ("congestion-unaware", "congestion-aware"):
        return "unknown backend"
    if any(k not in NET_CODE for k in net.kinds):
        return "unknown topology"
    if backend == "congestion-aware" and len(net.dims) != 1:
        return "congestion-aware is 1-D"
    if len(net.dims) > 8:
        return "more than 8 dimensions"
    return None


def run_kernel(net: NetSpec, system: SysSpec, backend: str, arrays: dict, caps: list[int] | None = None) -> tuple:
    """Run the compiled core to the end, with more room whenever a capacity runs out.

    Parameters
    ----------
    net : NetSpec
        The network (`network_why_not` None).
    system : SysSpec
        The system layer's settings.
    backend : str
        "congestion-unaware" or "congestion-aware".
    arrays : dict
        From `workload_arrays` or `collective_arrays`.
    caps : list of int, optional
        First capacities (heap events, tick-list entries, tick lists, message keys, link waiters);
        each grows 4x when it runs out. Default: from the NPU and stream counts.

    Returns
    -------
    tuple
        (finish ns, GPU compute ns, communication ns) per NPU, int64 arrays (finish -1: never
        finished), and the issued flag of every node in kernel order.
    """
    from ..kernels import compiled
    from . import emu_kernel as K  # lazy: numba loads its compiled kernels here

    # its typed containers need numba: no Python build, a notice while it compiles
    emulate = compiled("fabricsim.astra.emu_kernel_sys", ("run",), "the ASTRA-sim emulation's kernels", 20).emulate

    n, ndim = net.npus, len(net.dims)
    strides = [math.prod(net.dims[:d]) for d in range(ndim)]
    streams = int(arrays["stream_base"][-1])
    if caps is None:
        room = 4 * (n + streams)
        caps = [max(1 << 16, room), max(1 << 16, room), max(1 << 14, room), max(1 << 14, room), 1 << 12]
    caps = list(caps)
    per_dim = [x for b, lat in zip(net.bw, net.lat) for x in (float(b), float(lat))]
    floats = tuple([float(system.local_mem_bw), float(net.lat[0]), float(net.bw[0])] + per_dim
                   + [0.0] * (2 * (K.MAX_DIMS - ndim)))
    tp_start, *cols = arrays["templates"]
    rows = np.zeros((n, K.NR), np.int64)
    rows[:, K.R_FINISH] = -1
    rows[:, K.R_SBASE] = arrays["stream_base"][:-1]
    rows[:, K.R_NSTART] = arrays["nd_start"][:-1]
    rows[:, K.R_SLOTS] = -1
    sections = {
        "npu": rows, "waiting": arrays["waiting0"], "tpstart": tp_start, "chstart": arrays["ch_start"],
        "chlist": arrays["ch_list"], "streams": streams,
        "node": np.stack([arrays[k] for k in ("nd_npu", "nd_kind", "nd_res", "nd_dur", "nd_tmpl")], axis=1),
        "phase": np.stack(cols, axis=1) if cols[0].size else np.zeros((0, K.NP), np.int64),
        "net": np.array([[NET_CODE[k], d, s] for k, d, s in zip(net.kinds, net.dims, strides)], np.int64),
        "links": (n * n if net.kinds[0] == "FullyConnected" else 2 * n) if backend == "congestion-aware" else 0,
    }
    scalars = dict(npus=n, dims=ndim, splits=system.splits, active=system.active_chunks,
                   edelay=int(system.endpoint_delay), lifo=int(system.policy == "LIFO"),
                   aware=int(backend == "congestion-aware"), awn=net.dims[0], awkind=NET_CODE[net.kinds[0]])
    while True:
        sections["caps"] = np.array(caps, np.int64)
        status, _events, out, issued = emulate(sections, scalars, floats)
        if status == K.ST_OK:
            return out[:, K.R_FINISH], out[:, K.R_COMPUTE], out[:, K.R_COMM], issued
        if not 1 <= status <= len(K.CAP_NAMES):
            raise RuntimeError(f"compiled ASTRA-sim core stopped (status {status}); the Python emulation serves "
                               "this run with engine='python'")
        caps[status - 1] *= 4


def simulate_collective_compiled(net: NetSpec, system: SysSpec, collective: str, size: int, backend: str,
                                 involved=None) -> list[int]:
    """`emulator.simulate_collective` in full mode on the compiled core (NotServed where it cannot).

    Returns
    -------
    list of int
        Per NPU, the tick (ns) its collective finished; `Deadlock` if some never do.
    """
    why = network_why_not(net, backend)
    if why:
        raise NotServed(why)
    finish = run_kernel(net, system, backend, collective_arrays(net, system, collective, size, involved))[0]
    if (finish < 0).any():
        stuck = np.flatnonzero(finish < 0)[:8].tolist()
        raise Deadlock(f"ASTRA-sim emulation deadlocked: NPUs {stuck} never finished")
    return finish.tolist()


def check_finished(finish: np.ndarray, issued: np.ndarray, arrays: dict, where: str) -> None:
    """The ConfigError `run_workload` gives for the first NPU that never finished (none: nothing)."""
    stuck = np.flatnonzero(finish < 0)
    if not stuck.size:
        return
    r = int(stuck[0])
    lo, hi = int(arrays["nd_start"][r]), int(arrays["nd_start"][r + 1])
    ids = arrays["ids"][r]
    left = sorted(ids[i - lo] for i in range(lo, hi) if not issued[i])[:5]
    raise ConfigError(f"{where}.{r}.et", "deadlock", f"NPU {r} never finished; nodes never issued include {left} "
                      "(a send without its receive, or a dependency cycle)")
