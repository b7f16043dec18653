"""Engine: discrete-event execution of a workload graph on a system and a network.

    from fabricsim.engine import CommPricer, simulate
    res = simulate(graph, system, CommPricer(topology, "congestion-aware"))
    res.iteration_time, res.mean_breakdown()
"""

from .pricing import DEFAULT_ALGORITHMS, CommPricer, normalize_algorithms
from .result import BREAKDOWN, TrainResult
from .simulator import simulate

__all__ = ["BREAKDOWN", "DEFAULT_ALGORITHMS", "CommPricer", "TrainResult", "normalize_algorithms", "simulate"]
