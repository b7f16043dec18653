"""fabricsim: simulate and design the networks that train large neural networks.

The main entry points, one per layer:

    from fabricsim import parse_topology, build_schedule, verify, time_schedule
    topo = parse_topology("torus:8x8", bandwidth="400Gbps", latency="100ns")
    sched = build_schedule(topo, "all-reduce", "ring")
    verify(sched)
    time_schedule(topo, sched, [2**20]).times
"""

from .collectives.api import build_schedule
from .collectives.schedule import Schedule, Step
from .collectives.verify import ScheduleError, verify
from .errors import ConfigError
from .network.analytical import time_schedule
from .topology import Topology, parse_topology

__version__ = "0.1.0"

__all__ = ["ConfigError", "Schedule", "ScheduleError", "Step", "Topology", "build_schedule", "parse_topology",
           "time_schedule", "verify", "__version__"]
