"""What an algorithm states about its schedule, for the network models that rely on it.

A `Schedule`'s `facts` are typed and checked; its `meta` dict is for reports only. A network
model reads a fact instead of guessing it from the steps, and checks it where it is cheap to
(`network.lowering.chain` checks a stated chain against the steps before it uses it).
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral


def _count(name: str, value, allow_none: bool):
    """`value` as an int >= 1 (or None where allowed); ValueError naming `name` otherwise."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        accepted = "None or an integer >= 1" if allow_none else "an integer >= 1"
        raise ValueError(f"Facts.{name}: got {value!r}, accepted: {accepted}")
    return int(value)


@dataclass(frozen=True)
class Facts:
    """Facts an algorithm states about the schedule it builds (module doc).

    Parameters
    ----------
    chain : tuple of int, optional
        The schedule nodes a pipelined chain passes, in order (first sender to last receiver):
        stated by the ring builder for broadcast and reduce, read by `network.lowering.chain`. None:
        the schedule states no chain. Entries are schedule node ids (ints >= 0).
    channels : int
        Parallel rings or trees of an NCCL-style schedule, each on 1/channels of the buffer
        (>= 1; 1 for a schedule that is not split into channels). Read by `network.nccl` and
        `network.tuner` for the protocol terms and the reported channel count.
    nics_per_node : int, optional
        NICs (rails) per node that the schedule's inter-node traffic uses (>= 1). None: the
        schedule states none and a network model takes the topology's (`network.nccl.nccl_shape`).

    Examples
    --------
    >>> Facts(chain=(2, 3, 4, 0, 1)).chain
    (2, 3, 4, 0, 1)
    >>> Facts(channels=0)
    Traceback (most recent call last):
    ...
    ValueError: Facts.channels: got 0, accepted: an integer >= 1
    """

    chain: tuple[int, ...] | None = None
    channels: int = 1
    nics_per_node: int | None = None

    def __post_init__(self):
        if self.chain is not None:
            try:
                chain = tuple(self.chain)
            except TypeError:
                chain = (None,)
            if any(isinstance(x, bool) or not isinstance(x, Integral) or x < 0 for x in chain):
                raise ValueError(f"Facts.chain: got {self.chain!r}, accepted: schedule node ids (ints >= 0)")
            object.__setattr__(self, "chain", tuple(int(x) for x in chain))
        object.__setattr__(self, "channels", _count("channels", self.channels, False))
        object.__setattr__(self, "nics_per_node", _count("nics_per_node", self.nics_per_node, True))


__all__ = ["Facts"]
