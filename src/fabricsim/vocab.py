"""The project's vocabulary, in one place: collectives, task kinds, communication categories and
I/O directions.

Every layer names these the same way. Configs validate against the Literals (pydantic), the
numpy task arrays store the IntEnum values, and one-line errors list the accepted names.

    >>> from fabricsim.vocab import normalize_collective, TaskKind
    >>> normalize_collective("allreduce")
    'all-reduce'
    >>> int(TaskKind.P2P)
    2
"""

from __future__ import annotations

from enum import IntEnum
from typing import Literal, get_args

from .errors import ConfigError

Collective = Literal["all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast", "reduce"]
COLLECTIVES: tuple[str, ...] = get_args(Collective)

# communication categories, in the default priority order (index 0 = served first): tensor (MP),
# context (CP: K/V exchanges) and expert (EP: token all-to-alls) parallel, pipeline, data parallel
Category = Literal["MP", "CP", "EP", "PP", "DP", "IO", "other"]
CATEGORIES: tuple[str, ...] = get_args(Category)

# what a compute task belongs to (reports)
Phase = Literal["fwd", "bwd", "bwd_ig", "bwd_wg", "update", "comm", "recompute"]
PHASES: tuple[str, ...] = get_args(Phase)


class TaskKind(IntEnum):
    """Kinds of workload-graph tasks (stored as int8 in `WorkloadGraph.kind`)."""

    COMPUTE = 0
    COLLECTIVE = 1
    P2P = 2
    IO = 3


class IODirection(IntEnum):
    """Direction of an io task (stored in `WorkloadGraph.peer`): a load multicasts from the I/O
    controllers to NPUs, a store reduces from NPUs to them."""

    LOAD = 0
    STORE = 1


_COLLECTIVE_ALIASES = {"allreduce": "all-reduce", "allgather": "all-gather", "reducescatter": "reduce-scatter",
                       "alltoall": "all-to-all", "bcast": "broadcast"}


def normalize_collective(name: str) -> str:
    """The canonical name of a collective (`allreduce`, `all_reduce`, `All-Reduce` -> `all-reduce`).

    Parameters
    ----------
    name : str
        A collective's name as a user wrote it.

    Returns
    -------
    str
        One of `COLLECTIVES`; a ConfigError naming the accepted ones otherwise.
    """
    key = str(name).strip().lower().replace("_", "-")
    key = _COLLECTIVE_ALIASES.get(key.replace("-", ""), key)
    if key not in COLLECTIVES:
        raise ConfigError("collective", name, f"accepted: {', '.join(COLLECTIVES)}")
    return key
