"""Run ASTRA-sim inputs in ASTRA-sim compatibility mode, and fabricsim's own models beside it.

`run_astra` reads the network YAML, system JSON, optional communicator groups and the Chakra
traces exactly as ASTRA-sim does and returns, per NPU, the finish time and the exposed
communication in ns. Workloads made of one collective per NPU (microbenchmarks) take the fast
path (`emulator.simulate_collective`, one NPU standing for all where the system is symmetric);
anything else runs the per-NPU workload graph (NPU 0 alone where every NPU runs the same graph on
such a system, `workload.mirror_why_not`). A run that deadlocks because halvingDoubling pairs
NPUs one-sidedly on a dimension that is not a power of two is the error ASTRA-sim's hang deserves
(`halving_doubling_stall`).

`compare_collectives` prices every distinct collective of the workload with fabricsim's own
analytical model on the same network, and flags ASTRA-sim answers that beat the physical bound
(bytes an NPU must send / its injection bandwidth).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ConfigError
from ..progress import Progress, report
from ..workload.chakra import check_peers, read_traces
from .config import (
    AstraNetwork,
    AstraSystem,
    read_comm_groups,
    read_network,
    read_remote_memory,
    read_system,
    to_topology,
)
from .emu_ring import halving_doubling_unpaired
from .emu_system import phase_plan
from .emulator import Deadlock, NetSpec, SysSpec, mirror_eligible, simulate_collective
from .workload import COLLECTIVE_OF, COMM_COLL, NpuResult, Roofline, mirror_why_not, run_workload
from .workload_nodes import check_finish, check_ticks

BACKENDS = ("congestion-unaware", "congestion-aware")


def net_spec(net: AstraNetwork) -> NetSpec:
    """The emulator's view of a network file: bandwidth in bytes per ns (ASTRA-sim's GB/s x 2^30 /
    1e9), latency in ns.

    Parameters
    ----------
    net : AstraNetwork
        The network as read.

    Returns
    -------
    NetSpec
    """
    return NetSpec(tuple(net.topology), tuple(net.npus_count), tuple(net.bandwidth_bytes_per_ns), tuple(net.latency_ns))


def _find_prefix(prefix: str, system_path: Path, npus: int) -> str:
    """ASTRA-sim resolves custom-collective prefixes against its working directory; we try that
    first, then the system file's folder and its parents (so a reference folder runs from anywhere)."""
    candidates = [Path(prefix)]
    if not Path(prefix).is_absolute():
        candidates += [d / prefix for d in [system_path.parent, *system_path.parent.parents]]
    for c in candidates:
        if Path(f"{c}.0.et").exists():
            return str(c)
    raise ConfigError(f"{system_path}: all-reduce-implementation-custom", prefix,
                      f"no file {prefix}.0.et relative to the working directory or to the system file's folders")


def sys_spec(system: AstraSystem, npus: int, injection_scale: float = 1.0) -> SysSpec:
    """The emulator's view of a system file; custom collectives' traces are read here.

    Parameters
    ----------
    system : AstraSystem
        The system as read.
    npus : int
        NPUs in the network (one custom-collective trace each).
    injection_scale : float
        Factor on `endpoint-delay` (ASTRA-sim's --injection-scale); the product is truncated to ns.

    Returns
    -------
    SysSpec
    """
    impls = {c: system.implementation(c) for c in ("all-reduce", "reduce-scatter", "all-gather", "all-to-all")}
    custom = {}
    for c in impls:
        prefix = system.custom_implementation(c)
        if prefix:
            path = _find_prefix(prefix, Path(system.path), npus)
            custom[c] = [t.nodes for t in read_traces(path, npus)]
    return SysSpec(
        splits=system.preferred_dataset_splits,
        active_chunks=system.active_chunks_per_dimension,
        endpoint_delay=int(system.endpoint_delay * injection_scale),
        local_mem_bw=float(system.local_mem_bw),
        optimization=system.collective_optimization or "baseline",
        policy=system.scheduling_policy,
        impls={c: v for c, v in impls.items() if v},
        custom=custom,
    )


@dataclass(frozen=True)
class AstraRun:
    """The result of running ASTRA-sim inputs in compatibility mode.

    Attributes
    ----------
    network, system : AstraNetwork, AstraSystem
        The inputs as read.
    backend : str
        "congestion-unaware" or "congestion-aware".
    workload : str
        The Chakra trace prefix.
    results : tuple of NpuResult
        Per NPU: finish, compute, exposed and busy communication time, ns.
    wall_s : float
        Wall-clock time of the emulation, s (reading the files not included).
    path : str
        How it ran: "collective (one NPU mirrored)", "collective (all NPUs)" or "workload graph".
    collectives : tuple
        The distinct (collective, size in bytes, group or None) of the workload.
    warnings : tuple of str
        Keys ASTRA-sim ignores, unknown keys.
    """

    network: AstraNetwork
    system: AstraSystem
    backend: str
    workload: str
    results: tuple[NpuResult, ...]
    wall_s: float
    path: str  # "collective (mirror)", "collective (all NPUs)" or "workload graph"
    collectives: tuple = ()  # distinct (type, size, group) of the workload
    warnings: tuple[str, ...] = field(default=())

    @property
    def finish_ns_max(self) -> int:
        """The last NPU's finish time, ns (ASTRA-sim's run time)."""
        return max(r.finish_ns for r in self.results)

    @property
    def finish_ns_min(self) -> int:
        """The first NPU's finish time, ns."""
        return min(r.finish_ns for r in self.results)


def _single_collective(traces) -> tuple[str, int, tuple | None] | None:
    """(collective, size, involved_dim) when every NPU runs the same lone collective node."""
    first = None
    for t in traces:
        real = [n for n in t.nodes if n.type not in (0, 1)]
        if len(real) != 1 or real[0].type != COMM_COLL or real[0].comm_type not in COLLECTIVE_OF:
            return None
        n = real[0]
        if n.pg_name not in (None, "", "0") or n.comm_size is None:
            return None
        key = (COLLECTIVE_OF[n.comm_type], int(n.comm_size), n.involved_dim)
        if first is None:
            first = key
        elif key != first:
            return None
    return first


def check_implementations(system: AstraSystem, net: AstraNetwork, collectives, backend: str, network_path: str) -> None:
    """Reject, naming the file and key, what ASTRA-sim would exit on for these collectives.

    Parameters
    ----------
    system : AstraSystem
        The system as read.
    net : AstraNetwork
        The network as read.
    collectives : iterable of str
        The collectives the workload runs ("all-reduce", ...).
    backend : str
        "congestion-unaware" or "congestion-aware" (which is 1-D only).
    network_path : str
        The network file, for the error message.
    """
    if backend == "congestion-aware" and net.ndims > 1:
        raise ConfigError(f"{network_path}: topology", list(net.topology),
                          "the congestion-aware backend supports 1-D networks only (ASTRA-sim: 'only support 1-dim "
                          "topology'); accepted: one dimension, or --backend congestion-unaware")
    for coll in sorted(set(collectives)):
        key = f"{system.path}: {coll}-implementation"
        if system.custom_implementation(coll):
            continue
        impls = system.implementation(coll)
        if not impls:
            raise ConfigError(key, None, "missing; the workload runs this collective, accepted: one algorithm per dimension")
        for d, impl in enumerate(impls):
            if impl.name == "halvingDoubling" and coll == "all-to-all":
                raise ConfigError(key, str(impl), "ASTRA-sim's halvingDoubling has no all-to-all (it exits); accepted: ring, direct")
            if impl.name == "doubleBinaryTree" and coll != "all-reduce":
                raise ConfigError(key, str(impl), "doubleBinaryTree serves all-reduce only")
            size = net.npus if impl.flat else net.npus_count[min(d, net.ndims - 1)]
            if impl.name == "doubleBinaryTree" and size & (size - 1):
                # its tree has 2^floor(log2 n) places: the NPUs left out dereference a null node
                raise ConfigError(key, str(impl), f"ASTRA-sim crashes on a doubleBinaryTree over {size} NPUs (its tree "
                                  f"has places for {1 << (size.bit_length() - 1)}); accepted: a power-of-two dimension")


def halving_doubling_stall(net: NetSpec, system: SysSpec, collectives, system_path: str) -> ConfigError | None:
    """Why ASTRA-sim never finishes a run, when halvingDoubling on a dimension that is not a
    power of two pairs NPUs one-sidedly (`emu_ring.halving_doubling_unpaired`): the error to raise
    when the emulation deadlocks, or None when no such dimension is used.

    Parameters
    ----------
    net : NetSpec
        The network.
    system : SysSpec
        The system layer's settings.
    collectives : iterable of str
        The collectives the workload runs.
    system_path : str
        The system file, for the message.

    Returns
    -------
    ConfigError or None
        One line naming the implementation key, the phase, the distance and the NPUs.
    """
    for coll in sorted(set(collectives)):
        impls = system.impls.get(coll) or ()
        if coll in system.custom or not impls:
            continue
        flat = impls[0].flat
        dims = (net.npus,) if flat else net.dims
        for phase, d in phase_plan(coll, [d for d, n in enumerate(dims) if n > 1], system.optimization):
            impl, n = impls[0 if flat else d], dims[d]
            hit = impl.name == "halvingDoubling" and n & (n - 1) and halving_doubling_unpaired(phase, n)
            if hit:
                o, i, j, k = hit
                return ConfigError(
                    f"{system_path}: {coll}-implementation", str(impl),
                    f"ASTRA-sim never finishes this run: its halvingDoubling {phase} on {n} NPUs (not a power of two) "
                    f"pairs line position {i} with {j} at distance {o}, but {j} exchanges with {k}, so {i} waits for a "
                    "message that is never sent and ASTRA-sim reports no time for it; accepted: a power-of-two "
                    "dimension, or ring/direct")
    return None


def run_astra(workload: str, system_path: str, network_path: str, comm_groups: str | None = None,
              backend: str = "congestion-unaware", injection_scale: float = 1.0, mode: str = "auto",
              progress: Progress | None = None, remote_memory: str | None = None) -> AstraRun:
    """Run ASTRA-sim's inputs as ASTRA-sim would, with its answers to the nanosecond.

    Parameters
    ----------
    workload : str
        Chakra trace prefix: files `<workload>.<rank>.et`, one per NPU.
    system_path : str
        The system JSON.
    network_path : str
        The analytical network YAML.
    comm_groups : str, optional
        The communicator-groups JSON (None, or ASTRA-sim's value `empty`: no groups; any other
        path must be a readable groups file).
    backend : str
        "congestion-unaware" or "congestion-aware" (1-D networks only).
    injection_scale : float
        Factor on `endpoint-delay` (ASTRA-sim's --injection-scale).
    mode : str
        "auto" (one NPU standing for all where that is exact: a lone collective per NPU, or a workload
        graph every NPU runs alike), "full" (every NPU).
    progress : callable, optional
        `progress(done, total, phase)`: reading the inputs, then simulating (`fabricsim.progress`).
    remote_memory : str, optional
        The remote-memory JSON (only NO_MEMORY_EXPANSION is emulated).

    Returns
    -------
    AstraRun
        Per-NPU times in ns, and warnings for keys ASTRA-sim ignores in the network, system and
        remote-memory files; a ConfigError naming file and key for inputs ASTRA-sim would reject,
        crash on, or that are not emulated (per-node custom collectives, the LogGP shared bus,
        remote memory).
    """
    if backend not in BACKENDS:
        raise ConfigError("backend", backend, f"accepted: {', '.join(BACKENDS)}")
    report(progress, 0, 0, "reading the configurations")
    warnings = _remote_memory_warnings(remote_memory)
    net = read_network(network_path)
    if net.unknown:
        warnings.append(f"{network_path}: unknown keys ignored: {', '.join(net.unknown)}")
    system = read_system(system_path, net)
    groups = read_comm_groups(comm_groups, net) if comm_groups is not None else {}
    report(progress, 0, net.npus, f"reading {net.npus} Chakra traces")
    traces = read_traces(workload, net.npus)
    check_peers(traces, workload)  # a send to itself would fail deep in the network model
    check_ticks(traces, workload)  # durations beyond a 64-bit count of ns
    spec_n = net_spec(net)
    spec_s = sys_spec(system, net.npus, injection_scale)
    warnings += _system_warnings(system, system_path)
    roofline = Roofline(system.peak_perf_flops, system.local_mem_bw_bytes_per_s) if system.roofline_enabled else None
    used = {COLLECTIVE_OF[n.comm_type] for t in traces for n in t.nodes
            if n.type == COMM_COLL and n.comm_type in COLLECTIVE_OF}
    check_implementations(system, net, used, backend, network_path)
    t0 = time.perf_counter()
    single = _single_collective(traces)
    try:
        if single is not None and not system.replay_only:
            results, how = _simulate_single(spec_n, spec_s, single, backend, mode, net.npus, progress)
        else:
            why = "full" if mode == "full" else mirror_why_not(spec_n, spec_s, traces, backend, system.replay_only)
            how = "mirror" if why is None else "full"
            results = tuple(run_workload(spec_n, spec_s, traces, backend, groups, roofline, system.replay_only, workload,
                                         progress, mode=how))
    except (Deadlock, ConfigError) as e:
        stall = halving_doubling_stall(spec_n, spec_s, used, system.path)
        if stall is None or not (isinstance(e, Deadlock) or getattr(e, "value", None) == "deadlock"):
            raise
        raise stall from None
    check_finish(results, workload)
    path, colls = _run_path(traces, single if not system.replay_only else None, how)
    return AstraRun(net, system, backend, workload, results, time.perf_counter() - t0, path, colls, tuple(warnings))


def _remote_memory_warnings(remote_memory: str | None) -> list[str]:
    """The warnings of the remote-memory file (a ConfigError unless it is NO_MEMORY_EXPANSION)."""
    warnings = []
    if remote_memory is not None:
        mem = read_remote_memory(remote_memory)
        if mem.memory_type != "NO_MEMORY_EXPANSION":
            raise ConfigError(f"{remote_memory}: memory-type", mem.memory_type,
                              "accepted: NO_MEMORY_EXPANSION (remote memory is not emulated)")
        if mem.unknown:
            warnings.append(f"{remote_memory}: unknown keys ignored: {', '.join(mem.unknown)}")
    return warnings


def _system_warnings(system: AstraSystem, system_path: str) -> list[str]:
    """The warnings of the system file (a ConfigError for the keys whose models are not emulated)."""
    warnings = []
    if system.ignored:
        warnings.append(f"{system_path}: ASTRA-sim ignores {', '.join(system.ignored)}")
    if system.unknown:
        warnings.append(f"{system_path}: unknown keys ignored: {', '.join(system.unknown)}")
    if system.per_node_custom_implementation:
        raise ConfigError(f"{system_path}: per-node-custom-implementation", system.per_node_custom_implementation,
                          "per-node custom collectives are not emulated yet; accepted: the *-implementation-custom keys")
    if system.model_shared_bus:
        raise ConfigError(f"{system_path}: model-shared-bus", 1, "the LogGP shared-bus model is not emulated; accepted: 0")
    return warnings


def _simulate_single(spec_n: NetSpec, spec_s: SysSpec, single: tuple, backend: str, mode: str, npus: int,
                     progress: Progress | None) -> tuple[tuple[NpuResult, ...], str]:
    """The per-NPU results of a lone collective per NPU (`_single_collective`) and how it ran: mirror or full."""
    coll, size, involved = single
    how = "mirror" if (mode != "full" and mirror_eligible(spec_n, spec_s, coll, backend) is None) else "full"
    report(progress, 0, 0 if how == "mirror" else npus, "simulating")
    finish = simulate_collective(spec_n, spec_s, coll, size, backend, involved, mode=how, progress=progress)
    return tuple(NpuResult(i, f, 0, f, f) for i, f in enumerate(finish)), how


def _run_path(traces, single: tuple | None, how: str) -> tuple[str, tuple]:
    """`AstraRun.path` and `.collectives`: the lone collective simulated (`single`), else NPU 0's graph's."""
    npus = "one NPU mirrored" if how == "mirror" else "all NPUs"
    if single is not None:
        coll, size, _involved = single
        return f"collective ({npus})", ((coll, size, None),)
    path = "workload graph" + (" (one NPU mirrored)" if how == "mirror" else "")
    seen = {}
    for t in traces[:1]:
        for n in t.nodes:
            if n.type == COMM_COLL and n.comm_type in COLLECTIVE_OF and n.comm_size:
                seen[(COLLECTIVE_OF[n.comm_type], int(n.comm_size), n.pg_name or None)] = None
    return path, tuple(seen)


# ---- fabricsim's own model on the same inputs --------------------------------------------------

_ALG = {"ring": "ring", "direct": "direct", "halvingDoubling": "halving_doubling", "doubleBinaryTree": "double_binary_tree"}


@dataclass(frozen=True)
class CollectiveComparison:
    """One distinct collective of a run, ASTRA-sim compatibility mode beside a fabricsim model.

    Attributes
    ----------
    collective : str
        "all-reduce", "reduce-scatter", "all-gather" or "all-to-all".
    size : int
        ASTRA-sim's comm_size, bytes.
    astra_ns : int
        ASTRA-sim's answer (the last NPU's finish), ns.
    fabricsim_ns : float
        fabricsim's network model on the same network, ns.
    bound_ns : float
        Physical lower bound: bytes each NPU must send / its injection bandwidth, ns.
    fabricsim_algorithm : str
        The fabricsim algorithm used (the one the system file names, where fabricsim has it).
    impossible : bool
        ASTRA-sim's answer beats the bound.
    """

    collective: str
    size: int
    astra_ns: int
    fabricsim_ns: float
    bound_ns: float  # physical lower bound: bytes each NPU must send / its injection bandwidth
    fabricsim_algorithm: str
    impossible: bool  # ASTRA-sim's answer beats the bound


def bytes_each_npu_sends(collective: str, size: float, n: int) -> float:
    """The least each NPU must inject (ASTRA-sim sizes: AR/RS/A2A per-NPU buffer, AG per-NPU
    contribution).

    Parameters
    ----------
    collective : str
        "all-reduce", "reduce-scatter", "all-gather" or "all-to-all".
    size : float
        ASTRA-sim's comm_size, bytes.
    n : int
        NPUs in the collective.

    Returns
    -------
    float
        Bytes.
    """
    if collective == "all-reduce":
        return 2 * (n - 1) / n * size
    if collective == "all-gather":
        return (n - 1) * size
    return (n - 1) / n * size


def compare_collectives(run: AstraRun, model: str = "analytical",
                        progress: Progress | None = None) -> list[CollectiveComparison]:
    """Each distinct collective alone: ASTRA-sim compatibility time vs fabricsim's network model
    (any registered one, `network.model.get_network_model`), with the algorithm ASTRA-sim's
    system file names.

    Parameters
    ----------
    run : AstraRun
        A run of `run_astra` (its network, system, backend and distinct collectives).
    model : str
        A registered network model name or alias.
    progress : callable, optional
        `progress(done, total, collective)` per distinct collective (`fabricsim.progress`).

    Returns
    -------
    list of CollectiveComparison
        One per distinct all-NPU collective (sub-group collectives are left out).
    """
    import numpy as np  # lazy: numpy costs 0.1 s at start-up and only this comparison needs it

    from ..collectives.api import build_schedule
    from ..network.model import get_network_model

    net = get_network_model(model)

    topo = to_topology(run.network)
    spec_n, spec_s = net_spec(run.network), sys_spec(run.system, run.network.npus)
    inj = np.bincount(topo.link_src, weights=topo.link_bw, minlength=topo.n_nodes)[: topo.n_npus].min()
    out = []
    for k, (coll, size, group) in enumerate(run.collectives):
        if group is not None:
            continue  # sub-group collectives: compared in the training engine, not here
        report(progress, k, len(run.collectives), f"{model}: {coll} of {size} B")
        impls = run.system.implementation(coll)
        astra = max(simulate_collective(spec_n, spec_s, coll, size, run.backend))
        n = run.network.npus
        ours_size = size * n if coll == "all-gather" else size  # fabricsim sizes follow nccl-tests
        if run.system.custom_implementation(coll) or not impls:
            alg, opts = "ring", {}
        elif len(run.network.npus_count) > 1 and not impls[0].flat and coll != "all-to-all":
            inner = tuple(_ALG.get(i.name, "ring") if i.name != "doubleBinaryTree" else "ring" for i in impls)
            alg = "hierarchical"
            opts = {"inner": inner, "order": "baseline" if run.system.collective_optimization == "baseline" else "rs-ag"}
        else:
            alg, opts = _ALG.get(impls[0].name, "ring"), {}
            if coll == "all-to-all" and alg != "direct":
                alg = "direct"
        try:
            sched = build_schedule(topo, coll, alg, **opts)
        except ConfigError:
            sched = build_schedule(topo, coll, "ring")
            alg = "ring"
        ours = float(net.collective(topo, sched).times([ours_size])[0]) * 1e9
        bound = bytes_each_npu_sends(coll, size, n) / inj * 1e9
        out.append(CollectiveComparison(coll, size, int(astra), ours, float(bound), alg, bool(astra < bound * (1 - 1e-9))))
    return out

