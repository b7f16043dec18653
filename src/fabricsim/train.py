"""`fabricsim train CONFIG.yaml`: one config names the network, the system, the workload and
the strategy; this module builds what it names (topology, system, pricer, workload graph, memory
per stage) and runs it (`run_train`).

The config's schema and its validation are `fabricsim.train_config` (the YAML format is in its
module doc); `TrainConfig`, its sections and `load_train_config` are importable from here as
before. An error found while the topology or the workload graph is built names the file and the
field as a validation error does (`t.yaml: network.latency: ...`), and the tasks of the graph
(estimated before it is built) are bounded by `fabricsim.limits`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .config import errors_in
from .engine.pricing import CommPricer
from .engine.result import TrainResult
from .engine.simulator import simulate
from .errors import ConfigError
from .limits import check_limit
from .progress import Progress, report
from .sections import (  # the machine's sections, importable from here as before
    EndpointSection,
    NetworkSection,
    NpuSection,
    SchedulingSection,
    SystemSection,
    parse_endpoint,
)
from .system.model import System
from .topology.graph import Topology
from .train_config import WORKLOAD_FIELDS  # noqa: F401  # re-exported, as the schema's names below
from .train_config import (  # re-exported: the config's schema, importable from here as before
    OutputSection,
    ParallelismSection,
    ShapeSection,
    TrainConfig,
    WorkloadSection,
    load_train_config,
)
from .workload.graph import WorkloadGraph


def system_of(cfg: TrainConfig) -> System:
    """The config's system (NPU, endpoint policy, scheduling).

    Parameters
    ----------
    cfg : TrainConfig
        A validated config.

    Returns
    -------
    System
    """
    return cfg.system.build()


def topology_of(cfg: TrainConfig) -> Topology:
    """The config's topology.

    Parameters
    ----------
    cfg : TrainConfig
        A validated config.

    Returns
    -------
    Topology
        ConfigError naming the config file and `network.<field>` for what the topology refuses.
    """
    with errors_in(cfg.source, "network"):
        topo = cfg.network.build_topology()
    for where, w in cfg.workloads():  # I/O needs controllers: say so at the topology, before building anything
        par = w.parallelism
        io = [k for k, on in (("input_loading", w.input_loading),
                              ("parallelism.weight_streaming", par is not None and par.weight_streaming)) if on]
        if io and len(topo.io_nodes) == 0:
            raise ConfigError(f"{cfg.source}: network.topology" if cfg.source else "network.topology", topo.name,
                              f"has no I/O controllers, which {where}.{io[0]} needs; accepted: a topology with I/O "
                              "controllers (wafer:5x4, fred:5x4,...: io= and ios= options), or no I/O in the workload")
    return topo


def pricer_of(cfg: TrainConfig, topo: Topology) -> CommPricer:
    """What prices communication for this config: its network model and algorithms on `topo`.

    The engine adds the system's endpoint (`CommPricer.for_system`).

    Parameters
    ----------
    cfg : TrainConfig
        A validated config.
    topo : Topology
        The config's topology (`topology_of`).

    Returns
    -------
    CommPricer
    """
    return CommPricer(topo, cfg.network.model, cfg.network.algorithms)


def system_pricer(cfg: TrainConfig, topo: Topology, system: System) -> CommPricer:
    """`pricer_of` with the system's endpoint (`CommPricer.for_system`), as every run prices its
    communication; an algorithm the network refuses is one error naming `network.algorithms`.

    Parameters
    ----------
    cfg : TrainConfig
        A validated config.
    topo : Topology
        The config's topology (`topology_of`).
    system : System
        The config's system (`system_of`).

    Returns
    -------
    CommPricer
    """
    with errors_in(cfg.source, "network.algorithms"):
        return pricer_of(cfg, topo).for_system(system.endpoint, system.npu)


def _resolve(cfg: TrainConfig, p: str) -> str:
    q = Path(p)
    return str(q if q.is_absolute() else Path(cfg.base_dir) / q)


def strategy_of(cfg: TrainConfig):
    """The config's `workload.parallelism.Strategy` (zoo models and transformers by shape).

    Parameters
    ----------
    cfg : TrainConfig
        A validated config with `workload.model`.

    Returns
    -------
    Strategy
    """
    return cfg.workload.strategy(cfg.source)  # one place builds a strategy from a config: WorkloadSection


def graph_of(cfg: TrainConfig, n_npus: int, fold: bool = False) -> WorkloadGraph:
    """The config's workload graph: a zoo model under its strategy, a text workload, or Chakra traces.

    Parameters
    ----------
    cfg : TrainConfig
        A validated config.
    n_npus : int
        NPUs of the network.
    fold : bool
        A model's graph folded to one NPU per stage (`engine.fold`; the caller checks the network).

    Returns
    -------
    WorkloadGraph
        Compute in FLOPs and bytes (zoo) or fixed durations in s (text, Chakra), communication
        in bytes. A transformer's `meta` has `global_batch` (sequences) and `seq` (tokens per
        sequence): `TrainResult.tokens_per_iteration` is their product.
    """
    _single(cfg)
    w, where = cfg.workload, cfg.source
    with errors_in(where, "workload"):  # iterations may come from --iterations or Python, past the validator
        check_limit("iterations", w.iterations, "iterations", "iterations", w.iterations)
    if w.model is not None:
        from .workload.estimate import training_tasks
        from .workload.parallelism import build_training

        st = strategy_of(cfg)
        with errors_in(where, "workload"):
            model = w.build_model()
            if st.npus == n_npus:  # otherwise build_training says why
                check_limit("tasks", training_tasks(model, st, fold), "tasks", "workload",
                            f"{model.name} {st.name}, {w.iterations} iteration(s)")
            g = build_training(model, st, n_npus, fold=fold)
        if model.seq is None or not model.blocks():  # tokens are counted for transformers only
            return g
        return replace(g, meta={**g.meta, "global_batch": st.batch, "seq": model.seq})
    if w.astra_text is not None:
        from .workload.astra_text import read_astra_text
        from .workload.estimate import text_tasks
        from .workload.legacy import text_to_graph

        text = read_astra_text(_resolve(cfg, w.astra_text))  # its errors name the text file
        with errors_in(where, "workload"):
            check_limit("tasks", text_tasks(len(text.layers), n_npus, w.iterations), "compute tasks", "workload",
                        f"{w.astra_text} on {n_npus} NPUs, {w.iterations} iteration(s)")
            return text_to_graph(text, n_npus, w.iterations, w.mp)
    from .workload.chakra import read_traces
    from .workload.chakra_graph import traces_to_graph

    groups = None
    if w.comm_groups is not None:
        from .astra.config import read_comm_groups

        groups = {str(k): v for k, v in read_comm_groups(_resolve(cfg, w.comm_groups), n_npus).items()}
    traces = read_traces(_resolve(cfg, w.chakra), n_npus)
    with errors_in(where, "workload"):
        check_limit("tasks", sum(len(t.nodes) for t in traces) * w.iterations, "trace nodes (all ranks and iterations)",
                    "workload", f"{w.chakra}, {w.iterations} iteration(s)")
    return traces_to_graph(traces, w.iterations, groups)


def memory_of(cfg: TrainConfig, system: System):
    """Peak memory per pipeline stage of a transformer config (`workload.memory`), checked against
    the NPU's memory as `system.npu.memory_check` says.

    Parameters
    ----------
    cfg : TrainConfig
        A validated config.
    system : System
        Its system (the NPU's `memory_capacity`).

    Returns
    -------
    (tuple of StageMemory, list of str) or (None, [])
        Per stage (bytes) and the warnings; None for models without transformer blocks by shape
        and other workloads. ConfigError naming `system.npu.memory` when a stage does not fit
        and the check is `error`, with the single changes of `workload.parallelism` that would fit
        and their peaks (`workload.memory.fitting_changes`).
    """
    w = cfg.workload
    if w.model is None:
        return None, []
    model = w.build_model()
    from .workload.memory import blocks_per_stage, check_memory, memory_arguments, stage_memory

    st = strategy_of(cfg)
    with errors_in(cfg.source, "workload"):
        def blocks_for(pp: int, strict: bool = False):  # blocks per stage as the graph splits them; False: none
            try:
                return blocks_per_stage(model, pp, st.stage_split) or False
            except ConfigError:
                if strict:
                    raise
                return False

        # the strategy as memory-model arguments (one place: `workload.memory.memory_arguments`, which
        # `fabricsim.plan` shares); None where Korthikanti's forms do not apply
        shape = memory_arguments(model, st)
        if shape is None:
            return None, []
        stages = stage_memory(**shape)
    cap = system.npu.memory_capacity
    if cap == float("inf"):
        return stages, []

    def accepts(fields: dict) -> bool:  # the strategy with these changes passes its own checks
        try:
            replace(st, **fields)
        except ConfigError:
            return False
        return True

    with errors_in(cfg.source, "system.npu"):
        # a refusal names the changes that fit: only those a config can make (ZeRO 1, 2 and 3 of `parallelism.zero`)
        warnings = check_memory(stages, cap, cfg.system.npu.memory_check, field="memory", strategy=shape,
                                zero_stages=(1, 2, 3), blocks_for=blocks_for, accepts=accepts)
    return stages, warnings


@dataclass(frozen=True, eq=False)
class TrainRun:
    """What `run_train` returns.

    Parameters
    ----------
    config : TrainConfig
        The config that ran.
    topology : Topology
        Its network.
    result : TrainResult
        Task times and the breakdown (s).
    pricer : CommPricer
        What priced its communication, with the system's endpoint policy (`engine.usage`).
    memory : tuple of StageMemory, optional
        Peak memory per pipeline stage (`workload.memory`), for transformers by shape.
    notes : tuple of str
        What the run says besides its figures: memory warnings, whether it was folded.
    """

    config: TrainConfig
    topology: Topology
    result: TrainResult
    pricer: CommPricer
    memory: tuple | None = None
    notes: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        """The config's name, or the model and strategy names."""
        g = self.result.graph
        return self.config.name or f"{g.meta.get('model', 'workload')} {g.meta.get('strategy', '')}".strip()


def run_train(cfg: TrainConfig, progress: Progress | None = None) -> TrainRun:
    """Build the config's topology, workload graph, system and pricer, and simulate.

    Parameters
    ----------
    cfg : TrainConfig
        A validated config (`load_train_config`, or `TrainConfig.model_validate(mapping)`).
    progress : callable, optional
        `progress(done, total, phase)` (`fabricsim.progress`): building the topology, the workload
        graph, then tasks done of all tasks while simulating.

    Returns
    -------
    TrainRun
        The config, the topology and the `TrainResult` (times in s).

    Examples
    --------
    >>> from fabricsim.units import format_time
    >>> cfg = TrainConfig.model_validate({
    ...     "network": {"topology": "ring:4", "bandwidth": "100GB/s", "latency": "1us"},
    ...     "system": {"npu": {"peak": "100TFLOP/s", "memory_bandwidth": "2TB/s"}},
    ...     "workload": {"model": "resnet50", "batch": 128, "parallelism": {"dp": 4}}})
    >>> run = run_train(cfg)
    >>> run.title, format_time(run.result.iteration_time)
    ('resnet50 MP(1)-DP(4)-PP(1)', '10.16 ms')
    >>> sorted(k for k, v in run.result.mean_breakdown().items() if v > 0)   # s per NPU
    ['DP', 'compute']
    """
    _single(cfg)
    report(progress, 0, 0, "building the topology")
    topo = topology_of(cfg)
    system = system_of(cfg)
    memory, notes = memory_of(cfg, system)
    notes = [*notes, *_layout_note(cfg)]
    pricer = system_pricer(cfg, topo, system)
    fold = _fold_wanted(cfg, pricer, topo.n_npus)
    report(progress, 0, 0, f"building the workload graph ({topo.n_npus} NPUs{', folded' if fold else ''})")
    graph = graph_of(cfg, topo.n_npus, fold=fold)
    if fold:
        from .engine.fold import check_fold

        sc = system.scheduling
        with errors_in(cfg.source, "network.algorithms"):
            check = check_fold(graph, pricer, sc.chunks, sc.chunks_in_flight)
        if check.why:
            notes = [*notes, f"not folded: {check.why}"]
            graph = graph_of(cfg, topo.n_npus)
        else:
            exact = "sampled" if check.unchecked else "exact"
            notes = [*notes, f"folded: {graph.copies} NPUs per stage simulated as one ({exact}, engine.fold: "
                             f"{check.summary()})"]
    report(progress, 0, len(graph), "simulating")
    tasks = None if progress is None else (lambda done, total: progress(done, total, "simulating"))
    with errors_in(cfg.source, "network.algorithms"):  # an algorithm that cannot serve a group of the workload
        result = simulate(graph, system, pricer, progress=tasks)
    _check_plausible(cfg, result)
    return TrainRun(cfg, topo, result, pricer, memory, tuple(notes))


def _check_plausible(cfg: TrainConfig, result) -> None:
    """None, or a ConfigError when the iteration takes over a year (`engine.plausible`), naming the
    inputs its larger part (compute or exposed communication) comes from."""
    from .engine.plausible import check_iteration

    w, npu, net = cfg.workload, cfg.system.npu, cfg.network
    if w.model is not None:
        what = f"gpu: {npu.gpu}" if npu.gpu else f"peak: {npu.peak:g} FLOP/s, efficiency: {npu.efficiency:g}"
        model = w.model if isinstance(w.model, str) else w.model.model_name()
        compute = f"system.npu ({what}) with workload.model {model}"
    else:
        compute = (f"workload.astra_text {w.astra_text} (its compute times)" if w.astra_text is not None
                   else f"workload.chakra {w.chakra} (its compute node durations)")
    ep = cfg.system.endpoint.model_dump()
    endpoint = ep.pop("policy") + "".join(f",{k}={v}" for k, v in ep.items())
    comm = f"network.bandwidth {net.bandwidth}, network.latency {net.latency}, system.endpoint {endpoint}"
    check_iteration(result.iteration_time, result.mean_breakdown(), {"compute": compute, "communication": comm},
                    cfg.source or "")


def _layout_note(cfg: TrainConfig) -> list[str]:
    """A note when a zoo transformer runs under a tensor-parallel degree that does not divide its
    heads or ffn: it then leaves Megatron-LM's layout (`workload.plan.by_shape`: FLOPs on the
    roofline, no kernels, no memory model), said rather than silent. (A transformer by shape is
    refused at load instead: `workload_config.check_tensor_split`; FRED's Transformer-17B strategies
    MP(20), MP(10), MP(5) run so.)"""
    w = cfg.workload
    if not isinstance(w.model, str) or w.parallelism.mp == 1:
        return []
    from .workload.plan import by_shape

    model = w.build_model()
    if model.heads is None or model.ffn is None or not model.blocks() or by_shape(model, w.parallelism.mp):
        return []
    return [f"not Megatron-LM's layout: mp = {w.parallelism.mp} does not divide heads = {model.heads} or "
            f"ffn = {model.ffn} of {model.name}; its blocks are priced by FLOPs on the roofline, without kernels "
            "or a memory check"]


def _single(cfg: TrainConfig) -> None:
    """None for a config with `workload:`; a ConfigError for one with `jobs:`, which runs through
    `fabricsim train` (`multi_job.run_jobs`), not as one workload."""
    if cfg.workload is None:
        raise ConfigError(f"{cfg.source}: jobs" if cfg.source else "jobs", f"<{len(cfg.jobs or ())} jobs>",
                          "accepted here: a config with workload:; several jobs run with fabricsim train "
                          "(fabricsim.multi_job.run_jobs)")


def _fold_wanted(cfg: TrainConfig, pricer: CommPricer, n_npus: int) -> bool:
    """Whether to try a folded graph: a model under `fold: auto`, an analytical network model and
    a strategy symmetric over its MP ranks and DP replicas (`parallelism.foldable`)."""
    w = cfg.workload
    if w.model is None or w.fold != "auto" or pricer.model.shares_links:
        return False
    from .workload.parallelism import foldable

    st = strategy_of(cfg)
    return st.npus == n_npus and not foldable(w.build_model(), st)


__all__ = ["EndpointSection", "NetworkSection", "NpuSection", "OutputSection", "ParallelismSection", "SchedulingSection",
           "SystemSection", "ShapeSection", "TrainConfig", "TrainRun", "WorkloadSection", "graph_of",
           "load_train_config", "memory_of", "parse_endpoint", "pricer_of", "run_train", "strategy_of", "system_of", "system_pricer",
           "topology_of"]
