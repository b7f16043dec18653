"""How collectives are scheduled on an NPU's communication streams.

Each NPU serves collectives on `comm_streams` streams ("one": one collective in flight per NPU,
ASTRA-sim's rule; "per-category": one stream each for MP, CP, EP, PP, DP, IO, other). A stream picks,
among ready collectives, the highest-priority category first, then the newest (LIFO) or oldest
(FIFO) by ready time, then the lowest task id. A collective is split into `chunks` chunks that run
in waves of `chunks_in_flight` (per phase: chunks in one phase share its links, so a wave costs one
collective of its size) and pipeline through the collective's dimension phases; another collective
can take the stream between waves (engine.simulator).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..vocab import CATEGORIES

POLICIES = ("LIFO", "FIFO")
STREAMS = ("one", "per-category")


@dataclass(frozen=True)
class Scheduling:
    """How an NPU's communication streams pick and split collectives (module doc).

    Parameters
    ----------
    policy : str
        LIFO or FIFO: among ready collectives of the same category, the newest or the oldest
        by ready time goes first.
    priorities : tuple of str
        Communication categories, highest priority first; categories left out follow in their
        default order (`vocab.CATEGORIES`).
    chunks : int
        Chunks a collective is split into, >= 1.
    chunks_in_flight : int
        Chunks per wave, >= 1.
    comm_streams : str
        "one" (one collective in flight per NPU) or "per-category" (one stream per category).
    """

    policy: str = "LIFO"
    priorities: tuple[str, ...] = CATEGORIES
    chunks: int = 1
    chunks_in_flight: int = 1
    comm_streams: str = "one"

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise ConfigError("scheduling.policy", self.policy, f"accepted: {', '.join(POLICIES)}")
        if self.comm_streams not in STREAMS:
            raise ConfigError("scheduling.comm_streams", self.comm_streams, f"accepted: {', '.join(STREAMS)}")
        pr = tuple(self.priorities)
        bad = [p for p in pr if p not in CATEGORIES]
        if bad or len(set(pr)) != len(pr):
            raise ConfigError("scheduling.priorities", list(pr),
                              f"accepted: distinct categories from {', '.join(CATEGORIES)}, highest first")
        object.__setattr__(self, "priorities", pr + tuple(c for c in CATEGORIES if c not in pr))
        for name in ("chunks", "chunks_in_flight"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"scheduling.{name}", v, "accepted: an integer >= 1")

    def rank(self, category: str) -> int:
        """Priority rank of a communication category: 0 = served first.

        Parameters
        ----------
        category : str
            MP, CP, EP, PP, DP, IO or other.

        Returns
        -------
        int
        """
        return self.priorities.index(category)
