"""ASTRA-sim's workload layer, the plain part: what a Chakra node means to the emulator.

The node types and collective codes of Chakra's schema, the time of a compute node
(`compute_time_ns`, `Roofline`), the members of a collective's communicator group
(`group_members`), whether two NPUs run the same graph (`same_graph`) and one NPU's result
(`NpuResult`). Pure functions of the nodes, with no event queue: the Python emulation
(`workload`, which re-exports every name here) and the compiled core (`emu_compiled`) read
nodes alike through them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..errors import ConfigError
from .emu_spec import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, REDUCE_SCATTER

COMP, COMM_SEND, COMM_RECV, COMM_COLL, METADATA, INVALID, MEM_LOAD, MEM_STORE = 4, 5, 6, 7, 1, 0, 2, 3
COLLECTIVE_OF = {0: ALL_REDUCE, 2: ALL_GATHER, 6: ALL_TO_ALL, 7: REDUCE_SCATTER}
COMM_TYPE_NAMES = {0: "ALL_REDUCE", 1: "REDUCE", 2: "ALL_GATHER", 3: "GATHER", 4: "SCATTER", 5: "BROADCAST",
                   6: "ALL_TO_ALL", 7: "REDUCE_SCATTER", 8: "REDUCE_SCATTER_BLOCK", 9: "BARRIER"}


@dataclass(frozen=True)
class Roofline:
    """ASTRA-sim's roofline for compute nodes (with `roofline-enabled`).

    Attributes
    ----------
    peak_flops : float
        Peak compute, FLOP/s.
    mem_bw : float
        Local memory bandwidth, bytes/s.
    """

    peak_flops: float  # FLOP/s
    mem_bw: float  # bytes/s

    def time_ns(self, num_ops: int, tensor_size: int) -> int:
        """The time of one compute node on the roofline.

        Parameters
        ----------
        num_ops : int
            FLOPs of the node.
        tensor_size : int
            Bytes it moves to and from memory (> 0).

        Returns
        -------
        int
            ns: num_ops / min(mem_bw x num_ops / tensor_size, peak_flops), truncated.
        """
        intensity = num_ops / tensor_size
        perf = min(self.mem_bw * intensity, self.peak_flops)
        return int(num_ops / perf * 1e9)


@dataclass(frozen=True)
class NpuResult:
    """One NPU's times in a run, ns (ASTRA-sim's per-NPU report).

    Attributes
    ----------
    npu : int
        The NPU's rank.
    finish_ns : int
        When its last node finished, ns.
    compute_ns : int
        Sum of its GPU compute nodes' durations, ns.
    exposed_comm_ns : int
        `finish_ns` - `compute_ns` (ASTRA-sim's exposed communication), ns.
    comm_ns : int
        Time with at least one communication node in flight, ns.
    """

    npu: int
    finish_ns: int
    compute_ns: int  # GPU compute time (sum of GPU compute node durations)
    exposed_comm_ns: int  # finish - compute
    comm_ns: int  # time with at least one communication node in flight


def compute_time_ns(node, roofline: Roofline | None, replay_only: bool) -> int | None:
    """The time of a compute node, ns, as ASTRA-sim runs it: the roofline for a GPU node when it is
    enabled (and collectives are not only replayed), else `duration_micros` x 1000, truncated.

    Parameters
    ----------
    node : EtNode
        A compute node.
    roofline : Roofline or None
        The roofline, when enabled.
    replay_only : bool
        Collectives are replayed (then compute is replayed too).

    Returns
    -------
    int or None
        ns; None where the roofline needs `num_ops` and `tensor_size` and the node lacks one.
    """
    if roofline is not None and not node.is_cpu_op and not replay_only:
        if not node.num_ops or not node.tensor_size:
            return None
        return roofline.time_ns(node.num_ops, node.tensor_size)
    return int(node.duration_micros * 1000)


def group_members(node, groups: dict, npu: int, npus: int, where: str) -> tuple[int, ...] | None:
    """The members of a collective's communicator group (`pg_name`).

    Parameters
    ----------
    node : EtNode
        A collective node of NPU `npu`.
    groups : dict
        Communicator groups, id -> member ranks.
    npu : int
        The NPU issuing it.
    npus : int
        NPUs in the network.
    where : str
        The trace file, for error messages.

    Returns
    -------
    tuple of int or None
        The group's ranks, or None for all NPUs (no group, or one of every NPU in rank order); a
        ConfigError for an unknown group or one the NPU is not in.
    """
    pg = node.pg_name
    if pg in (None, "", "0"):
        return None
    try:
        gid = int(pg)
    except (TypeError, ValueError):
        gid = None
    if gid not in groups:
        raise ConfigError(f"{where}: node {node.id} pg_name", pg,
                          f"accepted: a group of --comm-group-configuration ({', '.join(map(str, groups)) or 'none given'})")
    members = tuple(groups[gid])
    if npu not in members:
        raise ConfigError(f"{where}: node {node.id} pg_name", pg, f"NPU {npu} is not in group {gid}")
    if len(members) == npus and list(members) == list(range(len(members))):
        return None
    return members


def same_graph(a: Sequence, b: Sequence) -> bool:
    """Whether two NPUs' nodes run the same way: equal but for a constant shift of every id and
    dependency (Chakra's converter numbers the nodes of rank r after those of rank r-1; a shift
    keeps the ascending-id order in which ready nodes are issued).

    Parameters
    ----------
    a, b : sequence of EtNode
        Two traces' nodes, in file order.

    Returns
    -------
    bool
        True when names, types, durations, attributes and the shifted ids and dependencies agree.
    """
    if len(a) != len(b):
        return False
    if not a:
        return True
    delta = b[0].id - a[0].id
    for x, y in zip(a, b):
        if y.id - x.id != delta or (x.name, x.type, x.duration_micros, x.attrs) != (y.name, y.type, y.duration_micros, y.attrs):
            return False
        if y.data_deps != tuple(d + delta for d in x.data_deps) or y.ctrl_deps != tuple(d + delta for d in x.ctrl_deps):
            return False
    return True


MAX_TICK = 2**63 - 1
"""The latest time an emulation reaches, ns: the compiled core's int64 counter (ASTRA-sim's own Tick
is an unsigned 64-bit count of ns, wrapping after 2^64 - 1: beyond either it answers nothing real)."""


def check_ticks(traces: Sequence, where: str) -> None:
    """None, or a ConfigError naming the trace file and node whose recorded durations cannot be
    counted in 64-bit ns: one node's `duration_micros` x 1000, or one NPU's sum of them, beyond
    `MAX_TICK` (a compute node of 2^64 - 1 us once answered 1.8e22 cycles).

    Parameters
    ----------
    traces : sequence of EtTrace
        One per NPU, rank order.
    where : str
        The trace prefix (files `<where>.<rank>.et`).
    """
    limit_us = MAX_TICK // 1000
    for tr in traces:
        total = 0
        for n in tr.nodes:
            d = n.duration_micros or 0
            total += d
            if d > limit_us or total > limit_us:
                what = f"{d} us" if d > limit_us else f"{total} us in all up to node {n.id}"
                raise ConfigError(f"{where}.{tr.rank}.et: node {n.id} duration_micros", what,
                                  f"accepted: durations that add up to at most {limit_us:,} us per NPU (2^63 - 1 ns: "
                                  "ASTRA-sim counts time in 64-bit ns)")


def check_finish(results: Sequence[NpuResult], where: str) -> None:
    """None, or a ConfigError when an NPU's finish is beyond `MAX_TICK` ns (communication of
    astronomic sizes, a roofline of astronomic FLOPs), naming the trace prefix.

    Parameters
    ----------
    results : sequence of NpuResult
        Per NPU.
    where : str
        The trace prefix.
    """
    for r in results:
        if not 0 <= r.finish_ns <= MAX_TICK:
            raise ConfigError(f"{where}.{r.npu}.et", f"finish at {r.finish_ns} ns",
                              f"accepted: traces that finish within {MAX_TICK:,} ns (2^63 - 1: ASTRA-sim counts time "
                              "in 64-bit ns)")
