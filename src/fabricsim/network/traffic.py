"""Traffic files: point-to-point flows and collectives with start times, run together on a
network model, by default the flow-level model (`fabricsim traffic FILE`).

```yaml
topology: torus:8x8          # as on the command line
bandwidth: 400Gbps           # per link (one value or one per dimension)
latency: 100ns
model: flow                  # any network model (`fabricsim models`); default flow
mode: pipelined              # (flow model) or store-and-forward: the same as model: flow-store-and-forward
chunk: 0B                    # (flow models) pipeline fill per extra hop (packet size)
flows:                       # point-to-point
  - {name: io, src: 0, dst: 63, size: 1GiB, start: 0us, priority: 1, cap: 100Gbps, count: 4}
collectives:
  - {name: dp, collective: all-reduce, algorithm: ring, size: 256MiB, group: 0-63, start: 10us, priority: 2}
  - {name: mp, collective: all-reduce, algorithm: direct, size: 16MiB, group: "0-7", priority: 0,
     options: {}}         # algorithm options (see `fabricsim algorithms`), or algorithm: ring,bidirectional=true;
                          # no algorithm: auto, as `fabricsim collective` (NCCL's choice on a GPU cluster)
```
Every field is validated when the file is read; errors name the file, the field with its list
item (`t.yaml: collectives[2].group`), the value and what is accepted, in one line. Numbers are not
coerced (`src: '3'`, `group: [1.5]` are refused), bandwidths and times need their units, a flow
goes between two different nodes, and the flows of all `count`s together are bounded by the
`flows` limit (`fabricsim.limits`). A collective becomes flows as everywhere else
(`lowering.dataflow.schedule_flows`: dataflow, or streams for in-network algorithms).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import (BaseModel, ConfigDict, Field, PrivateAttr, StrictInt, ValidationInfo, field_validator,
                      model_validator)

from ..config import check_link_values, check_topology_value, errors_in
from ..errors import ConfigError
from ..limits import check_limit
from ..progress import Progress, report
from ..topology.spec import DEFAULT_BANDWIDTH, DEFAULT_LATENCY
from ..units import parse_bandwidth, parse_size, parse_time
from ..vocab import normalize_collective
from .lowering.dataflow import merge_flows, schedule_flows
from .flow import MODES, Flows
from .model import canonical_model_name, get_network_model


def _group(value, field: str = "group") -> list[int] | None:
    """The ranks of a `group:` (a group string or a list of integers), checked; None for none."""
    if value is None:
        return None
    if isinstance(value, list):
        if not value or any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in value):
            raise ConfigError(field, value, "accepted: a non-empty list of ranks (integers >= 0) or a group string "
                                            "such as 0-7")
        check_limit("ranks", len(value), "ranks", field, f"a list of {len(value):,} ranks")
        return list(value)
    if not isinstance(value, str):
        raise ConfigError(field, value, "accepted: ranks such as 0-7 or 0,2,4, or a list of them")
    from ..collectives.api import parse_group

    return parse_group(value, field)


class FlowItem(BaseModel):
    """One entry of `flows:`: `count` identical point-to-point flows.

    Parameters
    ----------
    name : str, optional
        Label in the results (default `flow<i>`).
    src, dst : int
        Topology node ids (NPUs first, then switches and I/O controllers).
    size : float
        Bytes per flow (units accepted: `1GiB`).
    start : float
        Start time, s (units accepted: `10us`).
    priority : int
        Strict priority class, 0 = highest.
    cap : float, optional
        Rate cap per flow, bytes/s (units accepted: `100Gbps`); None = no cap.
    count : int
        Number of such flows.
    """

    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    src: StrictInt = Field(ge=0)
    dst: StrictInt = Field(ge=0)
    size: float
    start: float = 0.0
    priority: StrictInt = Field(default=0, ge=0)
    cap: float | None = None
    count: StrictInt = Field(default=1, ge=1)

    _size = field_validator("size", mode="before")(lambda v: parse_size(v, "size"))
    _start = field_validator("start", mode="before")(lambda v: parse_time(v, "start"))
    _cap = field_validator("cap", mode="before")(lambda v: None if v is None else parse_bandwidth(v, "cap"))

    @field_validator("count")
    @classmethod
    def _count(cls, v):
        check_limit("flows", v, "flows", "count", v)  # before np.full makes them
        return v

    @model_validator(mode="after")
    def _two_nodes(self):
        if self.src == self.dst:
            raise ConfigError("dst", self.dst, f"the flow goes from node {self.src} to itself; accepted: a node other "
                                               "than src")
        return self


class CollectiveItem(BaseModel):
    """One entry of `collectives:`: a collective run as flows (`lowering.dataflow.schedule_flows`).

    Parameters
    ----------
    name : str, optional
        Label in the results (default `collective<i>`).
    collective : str
        all-reduce, reduce-scatter, all-gather, all-to-all, broadcast or reduce (aliases accepted).
    algorithm : str
        `NAME[,KEY=VALUE...]` (see `fabricsim algorithms`); stored in canonical form with
        `options` folded in.
    size : float
        Collective size, bytes (nccl-tests' convention; units accepted).
    group : str or list of int, optional
        Ranks (`0-7`, `0,2,4`, or a list); default every NPU.
    root : int
        Root's index in the group, for broadcast and reduce.
    start : float
        Start time, s (units accepted).
    priority : int
        Strict priority class of all its flows, 0 = highest.
    options : dict
        Algorithm options (merged into `algorithm` when validated).
    """

    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    collective: str
    algorithm: str = "auto"
    size: float
    group: Any = None
    root: StrictInt = Field(default=0, ge=0)
    start: float = 0.0
    priority: StrictInt = Field(default=0, ge=0)
    options: dict = Field(default_factory=dict)

    _size = field_validator("size", mode="before")(lambda v: parse_size(v, "size"))
    _start = field_validator("start", mode="before")(lambda v: parse_time(v, "start"))
    _coll = field_validator("collective")(lambda v: normalize_collective(v))

    @field_validator("group")
    @classmethod
    def _ranks(cls, v):
        _group(v)  # syntax, types and the ranks limit now; the topology's size when it is built
        return v

    @model_validator(mode="after")
    def _choice(self):
        from ..collectives.registry import choose_algorithm

        self.algorithm = str(choose_algorithm(self.algorithm, self.options, where="algorithm"))
        self.options = {}
        return self


class TrafficFile(BaseModel):
    """A traffic file (module doc): a network, a network model, and flows and collectives.

    Parameters
    ----------
    topology : str
        A topology spec as on the command line (`torus:8x8`).
    bandwidth : str, float or list
        Link bandwidth, bytes/s (units accepted), one value or one per dimension.
    latency : str, float or list
        Link latency, s (units accepted), one value or one per dimension.
    model : str
        A network model name or alias (`fabricsim models`), stored canonical; default flow.
    mode : str, optional
        Older spelling of the flow model's variant: pipelined or store-and-forward.
    chunk : float
        Pipeline fill per extra hop for the flow models, bytes (units accepted).
    flows : list of FlowItem
    collectives : list of CollectiveItem
    """

    model_config = ConfigDict(extra="forbid")
    topology: str | dict[str, Any]  # a spec string, or {family: torus, dims: [8, 8], ...}
    bandwidth: Any = DEFAULT_BANDWIDTH
    latency: Any = DEFAULT_LATENCY
    model: str = "flow"
    mode: str | None = None
    chunk: float = 0.0
    flows: list[FlowItem] = Field(default_factory=list)
    collectives: list[CollectiveItem] = Field(default_factory=list)
    _source: str | None = PrivateAttr(None)  # the file, named first in errors found when it runs

    _chunk = field_validator("chunk", mode="before")(lambda v: parse_size(v, "chunk"))
    _topology = field_validator("topology", mode="before")(check_topology_value)
    _bandwidth = field_validator("bandwidth")(lambda v: check_link_values(v, parse_bandwidth, "bandwidth"))
    _latency = field_validator("latency")(lambda v: check_link_values(v, parse_time, "latency"))

    @field_validator("flows")
    @classmethod
    def _all_flows(cls, v):
        check_limit("flows", sum(f.count for f in v), "flows (all counts together)", "flows", f"{len(v)} entries")
        return v

    @model_validator(mode="after")
    def _from_context(self, info: ValidationInfo):
        self._source = (info.context or {}).get("source")
        return self

    _model = field_validator("model")(lambda v: canonical_model_name(v))

    @field_validator("mode")
    @classmethod
    def _mode(cls, v):
        if v is not None and v not in MODES:
            raise ValueError(f"accepted: {', '.join(MODES)}")
        return v

    @model_validator(mode="after")
    def _mode_is_a_model(self):
        if self.mode is not None:  # the older spelling of the flow model's variant
            if self.model not in ("flow", "flow-store-and-forward"):
                raise ConfigError("mode", self.mode, "applies to the flow models; accepted: model: flow or "
                                                     "flow-store-and-forward without mode")
            self.model = "flow" if self.mode == "pipelined" else "flow-store-and-forward"
        return self

    def network_model(self):
        """The file's network model (with its pipeline `chunk` for the flow models).

        Returns
        -------
        NetworkModel
        """
        return get_network_model(self.model, **({"chunk": self.chunk} if self.model.startswith("flow") else {}))


@dataclass(frozen=True)
class ItemResult:
    """Timing of one entry of a traffic file (all its flows together).

    Parameters
    ----------
    name : str
        The entry's label.
    kind : str
        "flow" or the collective's name.
    start_s : float
        Earliest start of its flows, s.
    finish_s : float
        Latest arrival of its flows, s.
    bytes : float
        Bytes of all its flows.
    """

    name: str
    kind: str  # "flow" or the collective
    start_s: float
    finish_s: float
    bytes: float

    @property
    def duration_s(self) -> float:
        """Finish minus start, s."""
        return self.finish_s - self.start_s


@dataclass(frozen=True)
class TrafficResult:
    """What `run_traffic` reports.

    Parameters
    ----------
    items : tuple of ItemResult
        One per flow entry, then one per collective entry, in file order.
    makespan_s : float
        When the last flow arrived, s.
    link_utilization : float array
        Mean utilization of each link over the makespan (0..1).
    link_busy_s : float array
        Seconds each link carried traffic.
    events : int
        Events of the simulation.
    timeline : tuple
        Per-interval link rates (bytes/s), when recorded.
    topology : str
        The topology's name.
    link_src, link_dst : int arrays
        The node each link leaves and enters (topology node ids, as in `flows:`).
    """

    items: tuple[ItemResult, ...]
    makespan_s: float
    link_utilization: np.ndarray  # mean over the makespan
    link_busy_s: np.ndarray
    events: int
    timeline: tuple
    topology: str
    link_src: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    link_dst: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def link_names(self) -> list[str]:
        """A name per link, its ends as node ids.

        Returns
        -------
        list of str
            `src->dst`, in link order.
        """
        return [f"{a}->{b}" for a, b in zip(self.link_src.tolist(), self.link_dst.tolist())]


def load_traffic(path: str) -> TrafficFile:
    """Read and validate a traffic file (module doc).

    Parameters
    ----------
    path : str or Path
        The YAML file.

    Returns
    -------
    TrafficFile
        Sizes in bytes, times in s, rates in bytes/s; a one-line ConfigError on any bad field.
    """
    from ..config import read_yaml_mapping, validate

    return validate(TrafficFile, read_yaml_mapping(path, "topology, flows, collectives"), str(path), brackets=True,
                    from_file=True, context={"source": str(path)})


def _then_wait(topo, fl: Flows, node: int, wait: float, start: float, priority: int) -> Flows:
    """`fl` and one more flow that moves nothing, waits for all of them and then `wait` seconds
    (an item's finish is its last flow's)."""
    k = len(fl)
    done = Flows(np.array([node]), np.array([node]), np.zeros(1), np.array([float(start)]), None,
                 np.array([int(priority)]), np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64),
                 np.zeros(2, dtype=np.int64), np.zeros(0, dtype=np.int64), np.array([float(wait)]))
    both = merge_flows(fl, done, topo=topo)
    dep_ptr = np.concatenate([both.dep_ptr[:-1], [both.dep_ptr[-1] + k]]).astype(np.int64)
    return dataclasses.replace(both, dep_ptr=dep_ptr,
                               dep_idx=np.concatenate([both.dep_idx, np.arange(k)]).astype(np.int64))


def run_traffic(spec: TrafficFile, *, record_timeline: bool = False, progress: Progress | None = None) -> TrafficResult:
    """Run every flow and collective of `spec` together on its network model.

    Parameters
    ----------
    spec : TrafficFile
        A validated traffic file (`load_traffic`).
    record_timeline : bool
        Keep per-interval link rates (flow models).

    progress : callable, optional
        `progress(done, total, phase)` (`fabricsim.progress`): each collective as it becomes flows,
        then the simulation.

    Returns
    -------
    TrafficResult
        Start and finish of every item (s), makespan (s), link utilization; ConfigError for a
        node outside the topology or a file with no flows and no collectives.
    """
    from ..collectives.api import build_schedule
    from ..collectives.registry import choose_algorithm
    from ..topology.spec import topology_from_config
    from .tuner import chosen_protocol, price_collective

    where = spec._source
    with errors_in(where, ""):
        topo = topology_from_config(spec.topology, spec.bandwidth, spec.latency)
    net = spec.network_model()
    parts, labels = [], []
    for i, f in enumerate(spec.flows):
        for field, v in (("src", f.src), ("dst", f.dst)):
            if v >= topo.n_nodes:
                raise ConfigError(f"{where}: flows[{i}].{field}" if where else f"flows[{i}].{field}", v,
                                  f"accepted: a node 0..{topo.n_nodes - 1} of {topo.name}")
        k = f.count
        parts.append(Flows(np.full(k, f.src), np.full(k, f.dst), np.full(k, f.size), np.full(k, f.start),
                           np.full(k, np.inf if f.cap is None else f.cap), np.full(k, f.priority)))
        labels.append((f.name or f"flow{i}", "flow", k, f.size * k))
    for i, c in enumerate(spec.collectives):
        report(progress, i, len(spec.collectives), f"scheduling {c.name or f'collective{i}'}")
        with errors_in(where, f"collectives[{i}]"):
            choice = choose_algorithm(c.algorithm)
            cost = None
            if chosen_protocol(choice) != "none":  # NCCL's choice and protocol at this size (network.tuner)
                cand = price_collective(topo, c.collective, choice, net, group=_group(c.group),
                                        root=c.root).chosen([c.size])[0]
                sched, cost = cand.schedule, cand.protocol_cost
            else:
                sched = build_schedule(topo, c.collective, c.algorithm, group=_group(c.group), root=c.root)
        size = np.array([float(c.size)])
        scale = 1.0 if cost is None else float(cost.terms.data_scale(size)[0])
        fl = schedule_flows(topo, sched, c.size * scale, start=c.start, priority=c.priority, stream=net.streams)
        if cost is not None:  # the protocol's latency, NVLS's fill and its ceiling's wait, after the last byte
            fl = _then_wait(topo, fl, int(sched.topology_nodes()[0]), float(cost.tail(size)[0]), c.start, c.priority)
        parts.append(fl)
        labels.append((c.name or f"collective{i}", sched.collective, len(fl), float(fl.size.sum())))
    if not parts:
        raise ConfigError("traffic", "empty", "accepted: at least one flow or collective")
    flows = merge_flows(*parts, topo=topo)
    report(progress, 0, 0, f"simulating {len(flows)} flows ({net.name})")
    res = net.flows(topo, flows, record_timeline=record_timeline)
    items, off = [], 0
    for (name, kind, k, nbytes), part in zip(labels, parts):
        sl = slice(off, off + k)
        start = float(np.min(part.start)) if k else 0.0
        items.append(ItemResult(name, kind, start, float(res.finish[sl].max()) if k else start, nbytes))
        off += k
    return TrafficResult(tuple(items), res.makespan, res.utilization(topo), res.link_busy, res.events, res.timeline, topo.name,
                         topo.link_src, topo.link_dst)
