"""Collective schedules: algorithms as pure functions, the Schedule IR, and verify."""

from .api import build_schedule, normalize_collective
from ..ir import Facts
from .registry import ALGORITHMS, Algorithm, get_algorithm, register
from ..ir import Schedule, Step, make_step
from ..vocab import COLLECTIVES
from .verify import ScheduleError, VerifyReport, verify

__all__ = ["ALGORITHMS", "COLLECTIVES", "Algorithm", "Facts", "Schedule", "ScheduleError", "Step", "VerifyReport",
           "build_schedule", "get_algorithm", "make_step", "normalize_collective", "register", "verify"]
