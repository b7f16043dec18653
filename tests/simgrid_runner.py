#!/usr/bin/python3
"""Run a set of flows in SimGrid (pure max-min network) with given routes; print their completion times.

A standalone script for the SYSTEM Python (Debian's `python3-simgrid`, SimGrid 3.32, is built for
/usr/bin/python3 only); fabricsim is not imported here. Used by tests/test_flow_simgrid.py.

    /usr/bin/python3 tests/simgrid_runner.py IN.json OUT.json      # OUT '-' or absent: stdout

Input JSON:

    {"hosts": N,                                    # hosts 0..N-1
     "links": [{"id": i, "bw": bytes_per_s, "lat": seconds}, ...],
     "routes": {"src,dst": [link ids in order], ...},          # optional
     "flows": [{"src": s, "dst": d, "size": bytes, "start": seconds,
                "route": [link ids in order]}, ...],         # "route" optional if in "routes"
     "latency": "first" | "last" | "native",                 # optional, default "first"
     "config": ["name:value", ...]}                          # optional extra SimGrid --cfg items

Output JSON: {"finish": [s per flow, input order], "sent": [s: when SimGrid's transfer ended],
"latency": mode, "config": [the --cfg items used], "simgrid_version": "3.32.0",
"n_flows": n, "wall_s": seconds}.

Platform: one full zone; host i is "h<i>"; link i is "l<i>", SHARED (one max-min constraint of
capacity bw, shared by every flow crossing it in that direction), and each (src, dst) pair gets
exactly its route (one-way, not symmetrical). Flows between the same pair use separate mailboxes;
their routes must agree (a full zone holds one route per pair). A flow with src == dst (or an
empty route) finishes at its start. Each flow is a sender actor on src that sleeps until its
start and puts `size` bytes on its own mailbox, and a receiver actor on dst that waits in get()
from time 0, so the communication begins at the sender's put.

Network model: CM02 with bandwidth-factor 1, latency-factor 1, weight-S 0 (CM02's defaults, pinned
anyway), crosstraffic 0 (default 1: every flow would also take 5% of the reverse route) and
TCP-gamma 0 (default 4 MiB: a flow's rate would be bounded by gamma / (2 * route latency)), i.e.
bottleneck max-min sharing of link capacities, a flow's rate also bounded by its slowest link. One thing
CM02 still does that plain max-min does not: a flow's lmm "sharing penalty" is its route latency
(sum of link latencies + weight-S terms), and on a saturated link the rates are inversely
proportional to the penalties (TCP's RTT unfairness). Flows with different route latencies
therefore do NOT get equal shares when links carry their latency inside SimGrid. A flow with zero
route latency gets penalty 1, so with zero latency in SimGrid every flow has the same penalty and
sharing is pure max-min. Hence three latency modes:

- "first" (default): SimGrid links have zero latency; a flow's sender sleeps until
  start + route latency, then transmits (pure max-min). This is SimGrid's own timing composition:
  CM02 first waits the route latency (the flow is not yet in the sharing system), then the flow
  joins the max-min sharing until its last byte is through; finish = start + latency + transfer.
- "last": SimGrid links have zero latency; the sender transmits from `start` and
  finish = end of transfer + route latency. This is fabricsim's flow model's composition
  ("pipelined", chunk 0): send at the max-min rate from start, the last byte arrives a path
  latency after it left.
- "native": links carry their latency in SimGrid (CM02 exactly as it is, latency first then
  bandwidth): RTT-weighted sharing, pure max-min only when competing flows have equal route
  latencies.
"""

from __future__ import annotations

import json
import sys
import time

import simgrid as sg

BASE_CONFIG = [
    "network/model:CM02",
    "network/bandwidth-factor:1",
    "network/latency-factor:1",
    "network/weight-S:0",
    "network/crosstraffic:0",
    "network/TCP-gamma:0",  # no window bound gamma / (2 * route latency) on a flow's rate
    "surf/precision:1e-9",  # s: events closer than this are merged (pinned, not left to the default)
]
MODES = ("first", "last", "native")


def run(spec: dict) -> dict:
    t_wall = time.perf_counter()
    mode = spec.get("latency", "first")
    if mode not in MODES:
        raise SystemExit(f"simgrid_runner: latency must be one of {MODES}, not {mode!r}")
    config = BASE_CONFIG + list(spec.get("config", []))
    n_hosts = int(spec["hosts"])
    links = {int(link["id"]): (float(link["bw"]), float(link["lat"])) for link in spec["links"]}
    routes: dict[tuple[int, int], list[int]] = {}
    for key, route in spec.get("routes", {}).items():
        s, d = (int(x) for x in key.split(","))
        routes[(s, d)] = [int(x) for x in route]

    flows = spec["flows"]
    flow_route = []
    for i, f in enumerate(flows):
        s, d = int(f["src"]), int(f["dst"])
        if not (0 <= s < n_hosts and 0 <= d < n_hosts):
            raise SystemExit(f"simgrid_runner: flow {i}: host out of range")
        r = [int(x) for x in f["route"]] if "route" in f else routes.get((s, d))
        if s != d:
            if r is None:
                raise SystemExit(f"simgrid_runner: flow {i}: no route {s}->{d}")
            if routes.setdefault((s, d), r) != r:
                raise SystemExit(f"simgrid_runner: flow {i}: route {s}->{d} differs from another flow's")
            unknown = set(r) - links.keys()
            if unknown:
                raise SystemExit(f"simgrid_runner: flow {i}: unknown links {sorted(unknown)}")
        flow_route.append(r if s != d else [])

    e = sg.Engine(["simgrid_runner"] + [f"--cfg={c}" for c in config] + ["--log=root.thresh:warning"])
    zone = sg.NetZone.create_full_zone("world")
    hosts = [zone.create_host(f"h{i}", 1e9).seal() for i in range(n_hosts)]
    sg_links = {}
    for lid, (bw, lat) in links.items():
        link = zone.create_link(f"l{lid}", bw)
        link.set_latency(lat if mode == "native" else 0.0)
        link.set_sharing_policy(sg.Link.SharingPolicy.SHARED, None)
        sg_links[lid] = link.seal()
    used_pairs = {(int(f["src"]), int(f["dst"])) for f in flows if int(f["src"]) != int(f["dst"])}
    for s, d in sorted(used_pairs):
        zone.add_route(hosts[s].netpoint, hosts[d].netpoint, None, None,
                       [sg.LinkInRoute(sg_links[lid]) for lid in routes[(s, d)]], False)
    zone.seal()

    n = len(flows)
    finish = [None] * n
    sent = [None] * n

    def sender(i: int, mailbox: str, size: int, t0: float) -> None:
        if t0 > sg.Engine.clock:
            sg.this_actor.sleep_until(t0)
        sg.Mailbox.by_name(mailbox).put(i, size)

    def receiver(i: int, mailbox: str, lat: float) -> None:
        sg.Mailbox.by_name(mailbox).get()
        sent[i] = sg.Engine.clock
        finish[i] = sg.Engine.clock + (lat if mode == "last" else 0.0)

    for i, f in enumerate(flows):
        s, d, start = int(f["src"]), int(f["dst"]), float(f["start"])
        size = round(float(f["size"]))
        if s == d or not flow_route[i]:
            finish[i] = sent[i] = start
            continue
        lat = sum(links[lid][1] for lid in flow_route[i])
        t0 = start + lat if mode == "first" else start
        mb = f"flow{i}"
        sg.Actor.create(f"send{i}", hosts[s], sender, i, mb, size, t0)
        sg.Actor.create(f"recv{i}", hosts[d], receiver, i, mb, lat)

    e.run()
    missing = [i for i, t in enumerate(finish) if t is None]
    if missing:
        raise SystemExit(f"simgrid_runner: {len(missing)} flows did not complete (first: {missing[:5]})")
    return {"finish": finish, "sent": sent, "latency": mode, "config": config,
            "simgrid_version": sg.simgrid_version, "n_flows": n,
            "wall_s": time.perf_counter() - t_wall}


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        return 2
    with open(argv[1]) as fh:
        spec = json.load(fh)
    out = json.dumps(run(spec))
    if len(argv) == 3 and argv[2] != "-":
        with open(argv[2], "w") as fh:
            fh.write(out)
    else:
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
