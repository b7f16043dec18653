"""An endpoint injection limit as flows: a private link per NPU that the NPU's outgoing traffic
crosses (`with_injection`, `limit_injection`), appended to the topology (`endpoint_topology`). The
flow model's plans (`network.lowering.plans`), its pricing of a collective alone and the flow engine
charge injection through these.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...topology.graph import Topology
from ..flow import Flows


def endpoint_topology(topo: Topology, extra_links: int, capacity) -> Topology:
    """`topo` with private links appended: resources that only some flows use (compute, endpoints).

    Parameters
    ----------
    topo : Topology
        The network.
    extra_links : int
        Links to append; link `n_links + i` goes from node i mod n_npus to itself, no latency.
    capacity : float or float array
        Capacity of each new link (bytes/s, or any unit the flows' weights are in).

    Returns
    -------
    Topology
        A copy with the extra links (dimension -1, no link class).
    """
    k = int(extra_links)
    own = np.arange(k) % max(topo.n_npus, 1)
    return replace(topo, link_src=np.concatenate([topo.link_src, own]),
                   link_dst=np.concatenate([topo.link_dst, own]),
                   link_bw=np.concatenate([topo.link_bw, np.broadcast_to(np.asarray(capacity, float), (k,))]),
                   link_lat=np.concatenate([topo.link_lat, np.zeros(k)]),
                   link_dim=np.concatenate([topo.link_dim, np.full(k, -1)]),
                   link_class=None if topo.link_class is None else np.concatenate([topo.link_class, np.full(k, -1)]))


def with_injection(topo: Topology, flows: Flows, rate: np.ndarray, link_base: int | None = None, *,
                   stream=False) -> Flows:
    """`flows` charged to an endpoint link per NPU, so each NPU's outgoing traffic is rate-limited.

    Every flow with a finite `rate[flow]` also crosses the endpoint link (`link_base + npu`,
    capacity 1) of the NPU it leaves, at weight 1/rate: an NPU's outgoing traffic of a collective
    together moves at most `rate` bytes/s. A transfer is charged at its source only (NPUs it
    crosses on a direct network forward it in their routers, not through their endpoints), also
    when it carries an explicit route (through a reduction unit, `Topology.route_reducing`); a
    stream through switches (`lowering.dataflow.runs_as_streams`) at every NPU whose links it leaves (every
    member feeds it).

    Parameters
    ----------
    topo : Topology
        The network the flows run on (without the endpoint links).
    flows : Flows
        The flows (routed by `topo` unless they carry explicit link sets).
    rate : float array
        Injection limit of each flow's NPUs, bytes/s (inf: none).
    link_base : int, optional
        Id of NPU 0's endpoint link (default `topo.n_links`; see `endpoint_topology`).
    stream : bool or bool array
        Whether the flows (or each flow) are streams fed by every member; a stream needs an
        explicit link set.

    Returns
    -------
    Flows
        The same flows with explicit routes and weights (kept where given).
    """
    base = topo.n_links if link_base is None else int(link_base)
    n = len(flows)
    stream = np.broadcast_to(np.asarray(stream, dtype=bool), (n,))
    if flows.route_ptr is not None:
        ptr, links = np.asarray(flows.route_ptr, np.int64), np.asarray(flows.route_links, np.int64)
        w = np.ones(len(links)) if flows.route_weight is None else np.asarray(flows.route_weight, float)
    else:
        if stream.any():
            raise ValueError("with_injection: streams need explicit link sets")
        ptr, links = topo.route(flows.src, flows.dst)
        w = np.ones(len(links))
    tid = np.repeat(np.arange(n), np.diff(ptr))
    src = topo.link_src[links]
    hit = (src < topo.n_npus) & np.isfinite(rate[tid])
    hit &= stream[tid] | (src == flows.src[tid])  # a transfer: its source's endpoint only
    # one endpoint entry per (flow, NPU it leaves)
    pairs = np.unique(np.stack([tid[hit], src[hit]], axis=1), axis=0) if hit.any() else np.zeros((0, 2), np.int64)
    all_t = np.concatenate([tid, pairs[:, 0]])
    all_l = np.concatenate([links, base + pairs[:, 1]])
    all_w = np.concatenate([w, 1.0 / rate[pairs[:, 0]]])
    injected_first = np.concatenate([np.ones(len(tid), dtype=np.int8), np.zeros(len(pairs), dtype=np.int8)])
    order = np.lexsort((injected_first, all_t))  # per flow: its endpoint link, then its path
    new_ptr = np.concatenate([[0], np.cumsum(np.bincount(all_t, minlength=n))]).astype(np.int64)
    return replace(flows, route_ptr=new_ptr, route_links=all_l[order], route_weight=all_w[order])


def limit_injection(topo: Topology, flows: Flows, injection: float | None,
                    stream=False) -> tuple[Topology, Flows]:
    """Flows with every NPU's endpoint limited to one rate: `with_injection` and the endpoint links
    it uses (`endpoint_topology`, one per NPU, capacity 1).

    Parameters
    ----------
    topo : Topology
        The network the flows run on.
    flows : Flows
        The flows.
    injection : float, optional
        Bytes/s each NPU can inject (None or inf: no limit, and nothing changes).
    stream : bool or bool array
        As `with_injection`: whether the flows are streams fed by every member.

    Returns
    -------
    (Topology, Flows)
        The topology with the endpoint links and the charged flows, or both as given.
    """
    if injection is None or not np.isfinite(injection):
        return topo, flows
    charged = with_injection(topo, flows, np.full(len(flows), float(injection)), stream=stream)
    return endpoint_topology(topo, topo.n_npus, 1.0), charged
