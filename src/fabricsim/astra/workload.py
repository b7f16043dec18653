"""ASTRA-sim's workload layer: every NPU executes its Chakra graph on the emulated system.

Per NPU a node is issued when all its data and control dependencies have finished and its
hardware resource is free: at most one GPU compute node, one CPU compute node and one
communication node (collective or send; receives do not hold the resource) in flight. Ready
nodes are considered in ascending id. Compute nodes replay `duration_micros` (x1000 ns), or use
the roofline when it is enabled; collectives go to the system layer (`emulator`); sends and
receives are point-to-point messages. An NPU finishes when nothing is left to run; its exposed
communication is its finish time minus the time its GPU computed (ASTRA-sim's definition).

Where every NPU runs the same graph (ids may be shifted per rank, as Chakra's converter numbers
them) with no point-to-point messages or communicator groups, on a system mirror mode serves,
NPU 0 alone is emulated and stands for all (`mirror_why_not`): exact, and O(nodes) messages
where a ring over N NPUs costs O(N^2) simulated one by one (93 s at 1024 NPUs before issue 20).

What a node means on its own (node types, compute times, communicator groups, graph equality, the
per-NPU result) is in `workload_nodes`, re-exported here; this module holds the event-driven part.
"""

from __future__ import annotations

import heapq
from typing import Sequence

from ..errors import ConfigError
from ..progress import Progress
from .emulator import DepGraph, MirrorWorld, NetSpec, SysSpec, World, mirror_eligible
from .workload_nodes import (  # noqa: F401  (re-exported: the node vocabulary, importable from here as before)
    COLLECTIVE_OF,
    COMM_COLL,
    COMM_RECV,
    COMM_SEND,
    COMM_TYPE_NAMES,
    COMP,
    INVALID,
    MEM_LOAD,
    MEM_STORE,
    METADATA,
    NpuResult,
    Roofline,
    compute_time_ns,
    group_members,
    same_graph,
)


class NpuWorkload:
    """One NPU executing its Chakra graph on the emulated system (see the module doc).

    Parameters
    ----------
    world : World
        The emulated system.
    npu : int
        The NPU's rank.
    nodes : iterable of EtNode
        Its trace's nodes.
    groups : dict
        Communicator groups, id -> member ranks.
    roofline : Roofline or None
        Time GPU compute nodes with the roofline (None: replay `duration_micros`).
    replay_only : bool
        Replay collectives' `duration_micros` instead of simulating them.
    where : str
        The trace file, for error messages.
    """

    def __init__(self, world: World, npu: int, nodes, groups: dict, roofline: Roofline | None, replay_only: bool,
                 where: str):
        self.world = world
        self.npu = npu
        self.sys = world.sys[npu]
        self.groups = groups
        self.roofline = roofline
        self.replay_only = replay_only
        self.where = where
        self.graph = DepGraph(nodes)
        self.nodes = self.graph.nodes
        # ready nodes, one min-heap of ids per resource: an event looks at each lane's head, not at
        # every waiting node (linear in nodes, not quadratic, for a wide graph)
        self.lanes: dict = {None: [], "gpu": [], "cpu": [], "comm": []}
        for nid in self.graph.free:  # ascending: each lane sorted, a valid heap
            self.lanes[self.resource(self.nodes[nid])].append(nid)
        self.graph.free = []
        self.in_flight = {"gpu": 0, "cpu": 0, "comm": 0}
        self.running = 0
        self.nodes_issued: set[int] = set()
        self.finish_ns: int | None = None
        self.compute_ns = 0
        self.comm_busy_since: int | None = None
        self.comm_open = 0
        self.comm_ns = 0

    # resources
    def resource(self, node) -> str | None:
        """The resource a node holds while it runs.

        Parameters
        ----------
        node : EtNode
            The node.

        Returns
        -------
        str or None
            "gpu" or "cpu" (compute), "comm" (collectives and sends), or None (receives, metadata).
        """
        if node.type == COMP:
            return "cpu" if node.is_cpu_op else "gpu"
        if node.type in (COMM_COLL, COMM_SEND):
            return "comm"
        return None

    def issue_free(self) -> None:
        """Issue every ready node whose resource is free, in ascending id; the rest wait: every node
        holding no resource, and the least of each idle resource's lane (at most one node holds a
        resource). (Issuing never completes a node synchronously, so the lanes are stable here.)"""
        lanes = self.lanes
        todo = sorted(lanes[None])
        lanes[None] = []
        for res in ("gpu", "cpu", "comm"):
            if lanes[res] and self.in_flight[res] == 0:
                todo.append(heapq.heappop(lanes[res]))
        for nid in sorted(todo):
            node = self.nodes[nid]
            self.issue(node, self.resource(node))

    def waiting(self) -> bool:
        """Whether a ready node waits for its resource."""
        return any(self.lanes.values())

    def issue(self, node, res) -> None:
        """Start `node` now, holding resource `res`: compute as a delay, a collective on the
        system layer, a send or receive on the network, metadata at once.

        Parameters
        ----------
        node : EtNode
            The node; remote-memory nodes are a ConfigError (not emulated).
        res : str or None
            Its resource (`resource(node)`).
        """
        self.nodes_issued.add(node.id)
        if res is not None:
            self.in_flight[res] += 1
        self.running += 1
        now = self.world.eq.now
        done = lambda: self.finished(node, res)  # noqa: E731
        t = node.type
        if t in (METADATA, INVALID):
            self.world.eq.schedule(now, done)
        elif t == COMP:
            dur = compute_time_ns(node, self.roofline, self.replay_only)
            if dur is None:
                raise ConfigError(f"{self.where}: node {node.id}", node.name,
                                  "roofline-enabled needs num_ops and tensor_size on every GPU compute node")
            if not node.is_cpu_op:
                self.compute_ns += dur
            self.sys.register_event(done, dur)
        elif t == COMM_COLL:
            self._comm_start()
            ctype = node.comm_type
            if self.replay_only or ctype == 5:  # broadcast is only replayed by ASTRA-sim
                self.sys.register_event(lambda: (self._comm_end(), done()), int(node.duration_micros * 1000))
                return
            if ctype not in COLLECTIVE_OF:
                raise ConfigError(f"{self.where}: node {node.id} comm_type", COMM_TYPE_NAMES.get(ctype, ctype),
                                  "ASTRA-sim simulates ALL_REDUCE, ALL_GATHER, ALL_TO_ALL, REDUCE_SCATTER (and replays BROADCAST)")
            if node.comm_size is None:
                raise ConfigError(f"{self.where}: node {node.id} comm_size", None, "a collective needs comm_size (bytes)")
            group = self.group_of(node)
            self.world.collective(self.npu, COLLECTIVE_OF[ctype], int(node.comm_size), node.involved_dim,
                                  lambda t_: (self._comm_end(), done()), group=group)
        elif t == COMM_SEND:
            self._comm_start()
            self.world.net.sim_send(self.npu, int(node.comm_dst), ("p2p", node.comm_tag), int(node.comm_size),
                                    lambda: (self._comm_end(), done()))
        elif t == COMM_RECV:
            self._comm_start()
            self.world.net.sim_recv(self.npu, int(node.comm_src), ("p2p", node.comm_tag), int(node.comm_size),
                                    lambda: (self._comm_end(), done()))
        else:
            raise ConfigError(f"{self.where}: node {node.id}", node.type_name,
                              "remote memory nodes need a memory model (NO_MEMORY_EXPANSION aborts in ASTRA-sim)")

    def group_of(self, node) -> tuple[int, ...] | None:
        """The members of a collective's communicator group (`pg_name`).

        Parameters
        ----------
        node : EtNode
            A collective node of this NPU.

        Returns
        -------
        tuple of int or None
            The group's ranks, or None for all NPUs; a ConfigError for an unknown group or one
            this NPU is not in.
        """
        return group_members(node, self.groups, self.npu, self.world.net_spec.npus, self.where)

    def _comm_start(self) -> None:
        if self.comm_open == 0:
            self.comm_busy_since = self.world.eq.now
        self.comm_open += 1

    def _comm_end(self) -> None:
        self.comm_open -= 1
        if self.comm_open == 0:
            self.comm_ns += self.world.eq.now - self.comm_busy_since

    def finished(self, node, res) -> None:
        """A node finished now: free its resource, issue what became ready, and note the NPU's
        finish time once nothing is left.

        Parameters
        ----------
        node : EtNode
            The node.
        res : str or None
            The resource it held (`resource(node)`).
        """
        if res is not None:
            self.in_flight[res] -= 1
        self.running -= 1
        for c in self.graph.release(node.id):
            heapq.heappush(self.lanes[self.resource(self.nodes[c])], c)
        self.issue_free()
        if not self.waiting() and self.running == 0 and self.finish_ns is None:
            self.finish_ns = self.world.eq.now

    def fire(self) -> None:
        """Start the NPU: issue the nodes that have no dependencies."""
        self.issue_free()
        if not self.waiting() and self.running == 0 and self.finish_ns is None:
            self.finish_ns = self.world.eq.now


def mirror_why_not(net: NetSpec, system: SysSpec, traces: Sequence, backend: str, replay_only: bool = False) -> str | None:
    """Whether one NPU can stand for all in a workload run (as mirror mode does for a lone
    collective): every NPU runs the same graph, with no point-to-point messages (their peers are
    not translates) and no communicator groups, and every collective it simulates is
    translation-symmetric on this network (`emulator.mirror_eligible`).

    Parameters
    ----------
    net : NetSpec
        The network.
    system : SysSpec
        The system layer's settings.
    traces : sequence of EtTrace
        One per NPU, rank order.
    backend : str
        "congestion-unaware" or "congestion-aware".
    replay_only : bool
        Collectives are replayed, not simulated.

    Returns
    -------
    str or None
        None when mirroring is exact, else why not (one line).
    """
    first = traces[0].nodes
    colls = set()
    for node in first:
        if node.type in (COMM_SEND, COMM_RECV):
            return "point-to-point messages"
        if node.type == COMM_COLL:
            if node.pg_name not in (None, "", "0"):
                return "communicator groups"
            if node.comm_type in COLLECTIVE_OF and not replay_only:
                colls.add(COLLECTIVE_OF[node.comm_type])
    for coll in sorted(colls):
        why = mirror_eligible(net, system, coll, backend)
        if why:
            return why
    if not all(same_graph(first, t.nodes) for t in traces[1:]):  # last: the costliest test
        return "NPUs run different graphs"
    return None


def run_workload(net: NetSpec, system: SysSpec, traces: Sequence, backend: str = "congestion-unaware",
                 groups: dict | None = None, roofline: Roofline | None = None, replay_only: bool = False,
                 where: str = "workload", progress: Progress | None = None, mode: str = "full",
                 engine: str = "auto") -> list[NpuResult]:
    """Run one Chakra trace per NPU (`traces[r].nodes`) to completion; per-NPU results.

    Parameters
    ----------
    net : NetSpec
        The network.
    system : SysSpec
        The system layer's settings.
    traces : sequence of EtTrace
        One per NPU, rank order.
    backend : str
        "congestion-unaware" or "congestion-aware".
    groups : dict, optional
        Communicator groups, id -> member ranks.
    roofline : Roofline, optional
        Time GPU compute nodes with the roofline.
    replay_only : bool
        Replay collectives' recorded durations.
    where : str
        The trace prefix, for error messages.
    progress : callable, optional
        `progress(nodes issued, nodes in all traces, "simulating")` now and then (`fabricsim.progress`).
    mode : str
        "full" simulates every NPU; "mirror" NPU 0 alone, standing for all (only where
        `mirror_why_not` is None: the caller checks; exact there, O(nodes) instead of O(NPUs^2)
        messages for a ring).
    engine : str
        Full mode only: "auto" runs the compiled core (`emu_compiled`) where it serves and the
        Python emulation elsewhere; "python" always the Python emulation (the reference);
        "compiled" the core or a ConfigError saying why it cannot. Both give the same ticks.

    Returns
    -------
    list of NpuResult
        Per NPU, rank order; a ConfigError naming the NPU if one never finishes (deadlock).
    """
    if len(traces) != net.npus:
        raise ConfigError("workload", f"{len(traces)} traces", f"accepted: one per NPU ({net.npus})")
    from .emu_network import check_engine, on_core

    check_engine(engine)
    mirror = mode == "mirror"
    if not mirror:
        out = on_core(engine, lambda: _run_compiled(net, system, traces, backend, groups, roofline, replay_only, where))
        if out is not None:
            if progress is not None:
                total = sum(len(t.nodes) for t in traces)
                progress(total, total, "simulating")
            return out
    world = MirrorWorld(net, system, backend) if mirror else World(net, system, backend)
    npus = [NpuWorkload(world, r, t.nodes, groups or {}, roofline, replay_only, f"{where}.{r}.et")
            for r, t in enumerate(traces[:1] if mirror else traces)]
    for w in npus:
        w.fire()
    if progress is None:
        world.eq.run()
    else:
        total = sum(len(w.nodes) for w in npus)

        def tick() -> None:
            progress(sum(len(w.nodes_issued) for w in npus), total, "simulating")

        world.eq.run(tick)
        tick()
    out = []
    for w in npus:
        if w.finish_ns is None:
            left = sorted(set(w.nodes) - w.nodes_issued)[:5]
            raise ConfigError(f"{w.where}", "deadlock", f"NPU {w.npu} never finished; nodes never issued include {left} "
                              "(a send without its receive, or a dependency cycle)")
        out.append(NpuResult(w.npu, w.finish_ns, w.compute_ns, w.finish_ns - w.compute_ns, w.comm_ns))
    if mirror:  # NPU 0 stands for every NPU
        r = out[0]
        out = [NpuResult(i, r.finish_ns, r.compute_ns, r.exposed_comm_ns, r.comm_ns) for i in range(net.npus)]
    return out


def _run_compiled(net: NetSpec, system: SysSpec, traces: Sequence, backend: str, groups: dict | None,
                  roofline: Roofline | None, replay_only: bool, where: str) -> list[NpuResult]:
    """`run_workload` in full mode on the compiled core (`emu_compiled.NotServed` where it does not
    serve the input)."""
    from .emu_compiled import NotServed, check_finished, network_why_not, run_kernel, workload_arrays

    why = network_why_not(net, backend)
    if why:
        raise NotServed(why)
    arrays = workload_arrays(net, system, traces, roofline, replay_only, groups, where)
    finish, compute, comm, issued = run_kernel(net, system, backend, arrays)
    check_finished(finish, issued, arrays, where)
    return [NpuResult(r, int(f), int(c), int(f - c), int(m)) for r, (f, c, m) in enumerate(zip(finish, compute, comm))]
