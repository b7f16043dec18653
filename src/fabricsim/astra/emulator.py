"""ASTRA-sim compatibility: an event-exact emulation of ASTRA-sim 2.x's system layer and its
two analytical network backends, so that fabricsim gives ASTRA-sim's answers (to the
nanosecond) on ASTRA-sim's inputs.

What is emulated (semantics from docs/specs/astra-sim.md and ASTRA-sim's documented
behaviour; the code is fabricsim's own):
- time in integer ticks of 1 ns; every delay is truncated to an integer as ASTRA-sim does;
- per NPU, events registered for a tick run together, in registration order, when that tick
  comes (ASTRA-sim's per-`Sys` event map);
- a collective is split into `preferred-dataset-splits` chunks ("streams"), each a list of
  per-dimension phases (baseline: one phase per dimension; localBWAware all-reduce:
  reduce-scatter up, all-reduce on the last dimension, all-gather down); each dimension has one
  queue that runs at most `active-chunks-per-dimension` streams at once, in priority order;
- the native algorithms' message state machines: ring, direct (`AllToAll`, with window),
  halvingDoubling, doubleBinaryTree;
- every message passes the NPU<->memory bus: `endpoint-delay` ticks each way, plus
  3 * floor(bytes / local-mem-bw) for messages that carry a reduction;
- sends and receives are matched by (tag, src, dst, size, sequence number);
- congestion-unaware network: delay = floor(hops * latency + bytes / bandwidth) on the first
  dimension where the addresses differ, no sharing; congestion-aware (1-D only): store-and-
  forward FIFO links, arrival after floor(latency + bytes/bw), link busy floor(bytes/bw).

This module knows nothing about files; `astra.run` feeds it parsed configurations. It keeps
mirror mode (`MirrorNetwork`: one NPU stands for all in symmetric systems; `MirrorWorld` also
runs workload graphs that every NPU runs alike, `workload.run_workload`), `World` and
`simulate_collective`, and re-exports the parts: `emu_events` (the event queue), `emu_network`
(specs, the two networks), `emu_system` (the per-NPU system layer), `emu_algorithms` (the algorithms' state
machines, in `emu_base`, `emu_ring`, `emu_tree` and `emu_custom`).
"""

from __future__ import annotations

from ..errors import ConfigError
from ..progress import Progress
from .emu_algorithms import (  # noqa: F401  (the public surface)
    Algorithm,
    BinaryTree,
    CustomAlgorithm,
    DepGraph,
    Direct,
    DoubleBinaryTree,
    HalvingDoubling,
    Ring,
    RingLine,
    make_algorithm,
)
from .emu_network import (  # noqa: F401  (the public surface)
    ALL_GATHER,
    ALL_REDUCE,
    ALL_TO_ALL,
    CUSTOM,
    REDUCE_SCATTER,
    AwareNetwork,
    Deadlock,
    EventQueue,
    NotServed,
    NetSpec,
    Network,
    SysSpec,
    Tracker,
    UnawareNetwork,
    check_engine,
    on_core,
    _Entry,
    _Link,
)
from .emu_system import DataSet, Phase, Stream, Sys  # noqa: F401  (the public surface)


class MirrorNetwork(Network):
    """Only NPU 0 is simulated. The system is symmetric under translations of the NPU
    coordinates, so the k-th message NPU 0 receives from `src` (tag, size) is the translate of
    the k-th message NPU 0 itself sends to `-src`: both leave at the same tick and take the
    same time. Each send of NPU 0 therefore also injects its mirrored incoming message.

    Congestion-aware links are modelled where the symmetry covers them: NPU 0's own outgoing
    links (single-hop routes: FullyConnected, ring neighbours), and on a Switch the up link plus
    the shared down link into NPU 0, which carries the mirrored messages of all senders.

    Parameters
    ----------
    eq : EventQueue
        The event queue.
    spec : NetSpec
        The network (1-D for congestion-aware).
    backend : str
        "congestion-unaware" or "congestion-aware".
    """

    def __init__(self, eq: EventQueue, spec: NetSpec, backend: str):
        super().__init__(eq, spec)
        self.aware = backend == "congestion-aware"
        if self.aware:
            self.links: dict = {}
            self.bw, self.lat = spec.bw[0], spec.lat[0]

    def mirror(self, npu: int) -> int:
        """The mirror image of an NPU through NPU 0.

        Parameters
        ----------
        npu : int
            An NPU's rank.

        Returns
        -------
        int
            The NPU at its negated coordinates (modulo each dimension).
        """
        return sum(((-c) % n) * st for c, n, st in zip(self.coords(npu), self.spec.dims, self.strides))

    def _link(self, key) -> _Link:
        link = self.links.get(key)
        if link is None:
            link = self.links[key] = _Link(self.eq, self.bw, self.lat, self._hop)
        return link

    def sim_send(self, src: int, dst: int, tag, size: int, on_sent) -> None:
        """A send of NPU 0 (the only one simulated): deliver its mirror image, the message NPU
        `mirror(dst)` sends to NPU 0, in the same time.

        Parameters
        ----------
        src : int
            Must be 0.
        dst : int
            Destination NPU.
        tag : hashable
            Matching tag (a stream id).
        size : int
            Bytes.
        on_sent : None
            Must be None (native algorithms do not wait for their sends).
        """
        if src != 0 or on_sent is not None:
            raise RuntimeError("mirror mode simulates native collectives of NPU 0 only")
        m = self.mirror(dst)
        cid = self.tracker.next_send((tag, m, 0, size))
        e = self.tracker.entries.get(cid)
        if e is None:
            e = self.tracker.entries[cid] = _Entry()
        e.has_send = True
        if not self.aware:
            self.eq.schedule(self.eq.now + UnawareNetwork.delay(self, m, 0, size), self.arrived, cid)
        elif self.spec.kinds[0] == "Switch":
            self._link(("up",)).send(size, (size, cid, "up"))
        else:  # one hop: NPU 0's link to dst mirrors src's link to NPU 0
            self._link(("out", dst)).send(size, (size, cid, "last"))

    delay = UnawareNetwork.delay
    _hop_lat_bw = UnawareNetwork._hop_lat_bw

    def _hop(self, size: int, cid, where: str) -> None:
        if where == "up":  # at the switch: the mirrored message takes the down link into NPU 0
            self._link(("down",)).send(size, (size, cid, "last"))
        else:
            self.arrived(cid)


def mirror_eligible(net: NetSpec, system: SysSpec, collective: str, backend: str) -> str | None:
    """Whether mirror mode gives exactly the full emulation's answer for this collective.

    Parameters
    ----------
    net : NetSpec
        The network.
    system : SysSpec
        The system layer's settings.
    collective : str
        "all-reduce", "reduce-scatter", "all-gather" or "all-to-all".
    backend : str
        "congestion-unaware" or "congestion-aware".

    Returns
    -------
    str or None
        None when it does, else why not (one line).
    """
    impls = system.impls.get(collective) or ()
    if collective in system.custom:
        return "custom collective"
    if any(i.name not in ("ring", "direct") for i in impls):
        return "only ring and direct are translation-symmetric"
    if any(i.flat for i in impls) and len(net.dims) > 1:
        return "a flat ring over several dimensions is not symmetric"
    if backend == "congestion-aware":
        if len(net.dims) != 1:
            return "congestion-aware is 1-D"
        if net.kinds[0] == "Ring" and any(i.name == "direct" for i in impls) and net.dims[0] > 3:
            return "direct on a ring shares multi-hop links"
    return None


class MirrorWorld:
    """NPU 0 alone on a MirrorNetwork (see MirrorNetwork), standing for every NPU.

    Parameters
    ----------
    net_spec : NetSpec
        The network.
    sys_spec : SysSpec
        The system layer's settings.
    backend : str
        "congestion-unaware" or "congestion-aware".
    """

    def __init__(self, net_spec: NetSpec, sys_spec: SysSpec, backend: str):
        if backend == "congestion-aware":
            AwareNetwork(EventQueue(), net_spec)  # same validation as the full model
        self.net_spec = net_spec
        self.sys_spec = sys_spec
        self.eq = EventQueue()
        self.net = MirrorNetwork(self.eq, net_spec, backend)
        self.trees: dict = {}
        self.sys = [Sys(self, 0)]

    def collective(self, npu: int, collective: str, size: int, involved=None, on_done=None,
                   group: tuple[int, ...] | None = None) -> DataSet:
        """Issue a collective on NPU 0 now, as `World.collective` (groups are not symmetric: None only)."""
        return World.collective(self, npu, collective, size, involved, on_done, group)


# ---- the world: all NPUs on one network --------------------------------------------------------


class World:
    """All NPUs of a system on one network backend, sharing one event queue.

    Parameters
    ----------
    net_spec : NetSpec
        The network.
    sys_spec : SysSpec
        The system layer's settings.
    backend : str
        "congestion-unaware" or "congestion-aware" (ConfigError otherwise).
    """

    def __init__(self, net_spec: NetSpec, sys_spec: SysSpec, backend: str):
        self.net_spec = net_spec
        self.sys_spec = sys_spec
        self.eq = EventQueue()
        if backend == "congestion-unaware":
            self.net: Network = UnawareNetwork(self.eq, net_spec)
        elif backend == "congestion-aware":
            self.net = AwareNetwork(self.eq, net_spec)
        else:
            raise ConfigError("backend", backend, "accepted: congestion-unaware, congestion-aware")
        self.trees: dict = {}
        self.sys = [Sys(self, i) for i in range(net_spec.npus)]

    def collective(self, npu: int, collective: str, size: int, involved=None, on_done=None,
                   group: tuple[int, ...] | None = None) -> DataSet:
        """Issue a collective on one NPU now; `on_done(tick)` when all its chunks finish there.

        Parameters
        ----------
        npu : int
            The NPU issuing it.
        collective : str
            "all-reduce", "reduce-scatter", "all-gather" or "all-to-all".
        size : int
            ASTRA-sim's comm_size, bytes.
        involved : tuple of bool, optional
            Per dimension, whether the collective spans it (None: all).
        on_done : callable, optional
            Called with the tick (ns) its last chunk finishes on this NPU.
        group : tuple of int, optional
            Communicator group members (None: all NPUs).

        Returns
        -------
        DataSet
            The collective's chunks on this NPU.
        """
        ds = DataSet(self.sys_spec.splits, on_done or (lambda t: None))
        self.sys[npu].generate(collective, size, involved, ds, group)
        return ds


def simulate_collective(net_spec: NetSpec, sys_spec: SysSpec, collective: str, size: int,
                        backend: str = "congestion-unaware", involved=None, mode: str = "auto",
                        progress: Progress | None = None, engine: str = "auto") -> list[int]:
    """Finish tick (ns) of every NPU for one collective issued on all NPUs at time 0.

    Parameters
    ----------
    net_spec : NetSpec
        The network.
    sys_spec : SysSpec
        The system layer's settings.
    collective : str
        "all-reduce", "reduce-scatter", "all-gather" or "all-to-all".
    size : int
        ASTRA-sim's comm_size, bytes (a multiple of `sys_spec.splits`).
    backend : str
        "congestion-unaware" or "congestion-aware".
    involved : tuple of bool, optional
        Per dimension, whether the collective spans it (None: all).
    mode : str
        "full" simulates every NPU; "mirror" one NPU standing for all (symmetric systems only,
        ConfigError elsewhere); "auto" picks mirror where it is exact.
    progress : callable, optional
        `progress(NPUs finished, NPUs, "simulating")` now and then in full mode (`fabricsim.progress`).
    engine : str
        Full mode: "auto" (the compiled core, `emu_compiled`, where it serves; else Python),
        "python" (the reference) or "compiled" (ConfigError where it does not serve).

    Returns
    -------
    list of int
        Per NPU, the tick (ns) its collective finished. `Deadlock` (a RuntimeError) if the emulation deadlocks.
    """
    if mode not in ("auto", "full", "mirror"):
        raise ConfigError("mode", mode, "accepted: auto, full, mirror")
    if backend not in ("congestion-unaware", "congestion-aware"):
        raise ConfigError("backend", backend, "accepted: congestion-unaware, congestion-aware")
    check_engine(engine)
    why = mirror_eligible(net_spec, sys_spec, collective, backend)
    if mode == "mirror" and why:
        raise ConfigError("mode", "mirror", f"not exact here ({why}); use full")
    if mode == "mirror" or (mode == "auto" and why is None):
        mw = MirrorWorld(net_spec, sys_spec, backend)
        out: list = []
        ds = DataSet(sys_spec.splits, out.append)
        mw.sys[0].generate(collective, size, involved, ds)
        mw.eq.run()
        if not out:
            raise Deadlock("ASTRA-sim emulation (mirror mode) deadlocked")
        return [out[0]] * net_spec.npus
    def compiled() -> list[int]:
        from .emu_compiled import simulate_collective_compiled  # lazy: numpy, numba

        return simulate_collective_compiled(net_spec, sys_spec, collective, size, backend, involved)

    out = on_core(engine, compiled)
    if out is not None:
        if progress is not None:
            progress(net_spec.npus, net_spec.npus, "simulating")
        return out
    world = World(net_spec, sys_spec, backend)
    finish = [None] * net_spec.npus

    def done(i):
        def f(t):
            finish[i] = t
        return f

    for i in range(net_spec.npus):
        world.collective(i, collective, size, involved, done(i))

    def tick() -> None:
        progress(sum(f is not None for f in finish), len(finish), "simulating")

    world.eq.run(None if progress is None else tick)
    if any(f is None for f in finish):
        stuck = [i for i, f in enumerate(finish) if f is None][:8]
        raise Deadlock(f"ASTRA-sim emulation deadlocked: NPUs {stuck} never finished")
    return finish
