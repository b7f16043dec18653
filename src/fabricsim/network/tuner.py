"""The one place a chosen algorithm becomes a priced collective, and where `auto` decides.

`price_collective(topo, coll, choice, ...)` builds the schedule(s) a choice stands for, prepares
each on the network model and adds the NCCL protocol terms its algorithm pays (`network.nccl`):

- a plain choice (`swing`, `ring`, `direct`, any algorithm with `proto=none`): one candidate, the
  schedule on the network alone;
- an NCCL algorithm (`nccl_ring`, `nccl_tree`, `nvls`, `ring,proto=LL128`): one candidate per
  protocol, `proto=auto` meaning every protocol NCCL enables there;
- `auto` (the default everywhere): NCCL's tuner. On a GPU cluster (a topology with `node_gpus`)
  its candidates are NCCL's algorithms that the topology can run (all-reduce: ring, tree, NVLS
  where the node switches reduce, NVLS + SHARP across nodes where the fabric does too, NVLS-tree
  across nodes where the node switches reduce;
  reduce-scatter and all-gather: ring; broadcast and reduce: ring; all-to-all: direct, NCCL's
  point-to-point exchange), each in every protocol NCCL enables; NCCL never runs on the other
  families (tori, wafers, TPU-like meshes), where auto is ring (direct for all-to-all), as before.

For every size the cheapest candidate wins (ties: the first, in the order above), as NCCL's tuner
picks the lowest `latency + bytes / bandwidth` (tuning.cc `ncclTopoGetAlgoTime`). The CLI, the
training engines' pricer, traffic files and sweep points all call this, so one collective gets one
answer and one choice everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..collectives.algorithm import AlgorithmChoice
from ..collectives.api import build_schedule
from ..collectives.registry import AUTO, choose_algorithm, get_algorithm
from ..ir import Schedule
from ..errors import ConfigError, UnsupportedGroupSize
from ..topology.graph import Topology
from .flow_model import FlowCollective
from .nccl import ProtocolCost, check_proto, enabled_protocols, nccl_shape, protocol_terms

PLAIN_DEFAULTS = {"all-reduce": "ring", "reduce-scatter": "ring", "all-gather": "ring", "all-to-all": "direct",
                  "broadcast": "ring", "reduce": "ring"}
"""What `auto` runs on a topology that is not a GPU cluster (no NCCL there)."""

NCCL_CANDIDATES = {"all-reduce": ("nccl_ring", "nccl_tree", "nvls", "nvls_tree"), "reduce-scatter": ("nccl_ring",),
                   "all-gather": ("nccl_ring",), "broadcast": ("ring,proto=auto",), "reduce": ("ring,proto=auto",),
                   "all-to-all": ("direct,proto=auto",)}
"""`auto`'s candidates on a GPU cluster, in tie-breaking order."""


@dataclass(frozen=True)
class Candidate:
    """One way to run the collective: an algorithm's placed schedule in one protocol.

    Attributes
    ----------
    algorithm : str
        The algorithm's name.
    protocol : str
        LL, LL128, Simple, or "-" (no protocol costs).
    channels : int
        Channels of the schedule (rings or trees; 1 where it has none).
    schedule : Schedule
    cost : CollectiveCost
        `times(sizes)`, `phase_times(size)`.
    choice : AlgorithmChoice
        The algorithm with the typed options it was built with.
    """

    algorithm: str
    protocol: str
    channels: int
    schedule: Schedule
    cost: object
    choice: AlgorithmChoice

    @property
    def protocol_cost(self) -> ProtocolCost | None:
        """The NCCL protocol's terms on the network's cost, or None where it pays none."""
        return self.cost if isinstance(self.cost, ProtocolCost) else None

    @property
    def flow_plan(self) -> str | None:
        """The flow plan that lowered the schedule on a flow model (`network.lowering.plans`), or None
        on a model that lowers nothing to flows (the analytical ones)."""
        base = self.cost.base if isinstance(self.cost, ProtocolCost) else self.cost
        return base.plan if isinstance(base, FlowCollective) else None


class PricedCollective:
    """A collective priced per size as its cheapest candidate (module doc).

    Parameters
    ----------
    candidates : list of Candidate
        At least one, in tie-breaking order.
    """

    def __init__(self, candidates: Sequence[Candidate]):
        self.candidates = tuple(candidates)
        self._last: tuple | None = None  # (sizes, every candidate's times): times() then chosen() price once

    def _all(self, sizes) -> np.ndarray:
        s = np.atleast_1d(np.asarray(sizes, float))
        if self._last is not None and np.array_equal(self._last[0], s):
            return self._last[1]
        got = np.vstack([np.asarray(c.cost.times(s), float) for c in self.candidates])
        self._last = (s, got)
        return got

    def winners(self, sizes) -> np.ndarray:
        """Index of the chosen candidate for each size (the first of equal times); nothing is
        priced when there is one candidate (the flow engine asks for every task's size)."""
        if len(self.candidates) == 1:
            return np.zeros(len(np.atleast_1d(sizes)), dtype=np.int64)
        return np.argmin(self._all(sizes), axis=0)

    def times(self, sizes) -> np.ndarray:
        """Seconds for each size (bytes): the cheapest candidate's."""
        return self._all(sizes).min(axis=0)

    def chosen(self, sizes) -> list[Candidate]:
        """The candidate that runs each size."""
        return [self.candidates[i] for i in self.winners(sizes)]

    def phase_times(self, size: float) -> np.ndarray:
        """The chosen candidate's phases at this size (s)."""
        return self.chosen([size])[0].cost.phase_times(float(size))

    def schedule_at(self, size: float) -> Schedule:
        """The schedule that runs `size` bytes."""
        return self.chosen([size])[0].schedule


def _candidate_choices(topo: Topology, coll: str, choice: AlgorithmChoice, where: str) -> list[AlgorithmChoice]:
    """The algorithms a choice stands for. auto's options go to the candidates that take them for
    this collective; on a topology that is not a cluster all go to its one algorithm, which refuses
    what it lacks or what would not change this collective, as if it had been named."""
    if choice.name != AUTO:
        return [choice]
    opts = dict(choice.options)
    if int(getattr(topo, "node_gpus", 0) or 0) <= 0:
        plain = choose_algorithm(PLAIN_DEFAULTS[coll], opts, where=where)
        get_algorithm(plain.name).check_applies(coll, dict(plain.options), where=where)
        return [plain]
    out = []
    for spec in NCCL_CANDIDATES[coll]:
        alg = get_algorithm(spec.split(",")[0])
        takes = {k: v for k, v in opts.items()
                 if (o := alg.option(k)) is not None and (not o.collectives or coll in o.collectives)}
        out.append(choose_algorithm(spec, takes, where=where))
    return out


def _named(e: ConfigError, name: str) -> ConfigError:
    """`e`, or, when it names the algorithm by a helper's name (`collectives.api.reducing_switch`
    says `in_network` for nvls as well), the same refusal naming the algorithm that was asked for."""
    if type(e) is ConfigError and e.field == "algorithm" and isinstance(e.value, str) and e.value != name:
        accepted = e.accepted
        if get_algorithm(name).cluster:  # NVLink SHARP: node switches that reduce, not a plain switch
            accepted = accepted.split(" (try --topology switch")[0] + " (NVLink SHARP: try --topology dgx-h100:nodes=N)"
        return ConfigError("algorithm", name, accepted)
    return e


def check_node_shape(topo: Topology, choice: AlgorithmChoice, group: Sequence[int] | None, where: str) -> None:
    """None, or a ConfigError naming `<where> gpus_per_node` (or `nics_per_node`) when a cluster
    algorithm is told a node shape that contradicts the cluster topology's for this group
    (`collectives.api.cluster_shape`): `-o gpus_per_node=16` on `dgx-h100:nodes=2` (8 GPUs per node)
    would price a node that does not exist. On a topology without nodes the options define them.

    Parameters
    ----------
    topo : Topology
        The network (`node_gpus`, `node_nics`).
    choice : AlgorithmChoice
        One candidate, with its options.
    group : sequence of int, optional
        NPU ids (default: every NPU).
    where : str
        The option named in errors (`--option`).
    """
    opts = dict(choice.options)
    given = {k: opts[k] for k in ("gpus_per_node", "nics_per_node") if opts.get(k) is not None}
    if not given or int(getattr(topo, "node_gpus", 0) or 0) <= 0 or not get_algorithm(choice.name).cluster:
        return
    from ..collectives.api import cluster_shape

    g = np.arange(topo.n_npus, dtype=np.int64) if group is None else np.asarray(group, dtype=np.int64)
    shape = dict(zip(("gpus_per_node", "nics_per_node"), cluster_shape(topo, g)))
    if given.get("gpus_per_node", shape["gpus_per_node"]) != shape["gpus_per_node"]:
        given = {"gpus_per_node": given["gpus_per_node"]}  # the NICs of another node size are unknown
    for key, value in given.items():
        if int(value) != shape[key]:
            what = "GPUs" if key == "gpus_per_node" else "NICs"
            raise ConfigError(f"{where} {key}", value, f"on {topo.name} this group of {len(g)} NPUs has {shape[key]} "
                                                       f"{what} per node; accepted: {shape[key]}, or leave it out "
                                                       "(the topology's)")


def chosen_protocol(choice: AlgorithmChoice) -> str:
    """What a choice asks of NCCL's protocols: `auto` for auto, else its `proto` option as given or
    its algorithm's default (`none` for an algorithm without one).

    Parameters
    ----------
    choice : AlgorithmChoice

    Returns
    -------
    str
        auto, none, LL, LL128 or Simple.
    """
    if choice.name == AUTO:
        return "auto"
    opt = get_algorithm(choice.name).option("proto")
    return choice.kwargs.get("proto", opt.default if opt is not None else "none")


def _protocols(choice: AlgorithmChoice, alg, shape, where: str) -> tuple[str, ...]:
    """The protocols a candidate runs in: its chosen protocol (`chosen_protocol`)."""
    proto = chosen_protocol(choice)
    family = alg.nccl
    if family is None or proto == "none":
        return ()
    check_proto(proto, family, choice.name, shape, where)
    return enabled_protocols(family, shape) if proto == "auto" else (proto,)


def price_collective(topo: Topology, coll: str, choice: AlgorithmChoice | str, model, *,
                     group: Sequence[int] | None = None, root: int = 0, where: str | None = None,
                     injection: Callable[[Schedule], float | None] | None = None,
                     build: Callable[[AlgorithmChoice], Schedule] | None = None) -> PricedCollective:
    """The collective priced on `model` as `choice` runs it (module doc).

    Parameters
    ----------
    topo : Topology
        The network.
    coll : str
        Canonical collective name.
    choice : AlgorithmChoice or str
        An algorithm (with options) or `auto`.
    model : NetworkModel
        A registered network model.
    group : sequence of int, optional
        NPU ids (default: every NPU).
    root : int
        Root's index in the group (broadcast, reduce).
    where : str, optional
        The field named in option errors (`--option`).
    injection : callable, optional
        schedule -> bytes/s each member's endpoint injects for it (None: no limit).
    build : callable, optional
        candidate choice -> its placed schedule (a cache's; default `build_schedule` on `group`).

    Returns
    -------
    PricedCollective
        ConfigError / UnsupportedGroupSize when no candidate can serve (the first candidate's).
    """
    choice = choose_algorithm(choice) if isinstance(choice, str) else choice
    out, first_error = [], None
    for cand in _candidate_choices(topo, coll, choice, where or "algorithm"):
        alg = get_algorithm(cand.name)
        try:  # under auto, a candidate this topology, group or protocol rules out is skipped
            sched = (build(cand) if build is not None
                     else build_schedule(topo, coll, cand, group=group, root=root, where=where))
            shape = nccl_shape(topo, sched)
            protos = _protocols(cand, alg, shape, where or "algorithm")
        except (ConfigError, UnsupportedGroupSize) as e:
            if choice.name != AUTO:
                raise _named(e, cand.name) from None
            first_error = first_error or e
            continue
        if build is None:  # a collective of its own (a training job's groups differ in shape: not here); after
            check_node_shape(topo, cand, group, where or "algorithm")  # the builder's own refusals (group size)
        rate = injection(sched) if injection is not None else None
        base = model.collective(topo, sched, rate)
        channels = sched.facts.channels
        if not protos:
            out.append(Candidate(cand.name, "-", channels, sched, base, cand))
        for proto in protos:
            terms = protocol_terms(alg.nccl, coll, proto, shape)
            out.append(Candidate(cand.name, proto, channels, sched, ProtocolCost(base, terms), cand))
    if not out:
        raise first_error
    return PricedCollective(out)


__all__ = ["AUTO", "Candidate", "check_node_shape", "chosen_protocol", "NCCL_CANDIDATES", "PLAIN_DEFAULTS", "PricedCollective", "price_collective"]
