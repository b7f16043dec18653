"""fabricsim: simulate and design the networks that train large neural networks.

The main entry points, one per layer:

    from fabricsim import parse_topology, build_schedule, verify, time_schedule
    topo = parse_topology("torus:8x8", bandwidth="400Gbps", latency="100ns")
    sched = build_schedule(topo, "all-reduce", "ring")
    verify(sched)
    time_schedule(topo, sched, [2**20]).times
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__version__ = "0.1.0"

__all__ = ["ConfigError", "Schedule", "ScheduleError", "Step", "Topology", "build_schedule", "parse_topology",
           "time_schedule", "verify", "__version__"]

# lazy (PEP 562): every `fabricsim` command imports this package, and these names pull in scipy.sparse,
# pydantic and every builder and algorithm (0.4 s); they are imported on first use instead
__getattr__, __dir__ = lazy_exports(__name__, {
    "build_schedule": ".collectives.api", "Schedule": ".ir", "Step": ".ir",
    "ScheduleError": ".errors", "verify": ".collectives.verify", "ConfigError": ".errors",
    "time_schedule": ".network.analytical", "Topology": ".topology", "parse_topology": ".topology",
})

if TYPE_CHECKING:  # what the names are, for type checkers and readers
    from .collectives.api import build_schedule
    from .ir import Schedule, Step
    from .collectives.verify import verify
    from .errors import ConfigError, ScheduleError
    from .network.analytical import time_schedule
    from .topology import Topology, parse_topology
