"""ASTRA-sim emulation, part 3a: what every collective algorithm's state machine shares: the
`Algorithm` base (one phase of one stream on one NPU: send, receive, leave the phase) and
`RingLine`, the NPUs of one dimension line in ring order."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .emu_system import Stream


class Algorithm:
    """One phase of one stream on one NPU: a message state machine driven by `run(event)`.

    Subclasses implement `run(event)` for the events "init" (the stream entered this phase's
    queue and may start), "general" (a packet bundle crossed the memory bus) and "recv" (a
    message arrived), and set `final_data_size` (bytes the stream holds after the phase, the
    next phase's input). `stream` is attached by the system layer when the phase starts.
    """

    stream: Stream
    final_data_size: int

    def send(self, dst: int, size: int) -> None:
        """Send `size` bytes from this NPU to NPU `dst`, tagged with the stream id.

        Parameters
        ----------
        dst : int
            Destination NPU.
        size : int
            Message size, bytes.
        """
        s = self.stream
        s.net.sim_send(s.npu, dst, s.id, size, None)

    def recv(self, src: int, size: int) -> None:
        """Post a receive of `size` bytes from NPU `src`; the stream hears "recv" when it arrives.

        Parameters
        ----------
        src : int
            Source NPU.
        size : int
            Message size, bytes.
        """
        s = self.stream
        s.net.sim_recv(s.npu, src, s.id, size, s.received)

    def exit(self) -> None:
        """Leave this phase: the system layer moves the stream to its next phase (or ends it)."""
        self.stream.sys.proceed(self.stream)


class RingLine:
    """The NPUs of one dimension line around `npu`, in ring order (or an explicit member list,
    for communicator groups and flat rings).

    Parameters
    ----------
    npu : int
        The NPU whose line this is.
    size : int
        NPUs on the line.
    stride : int
        Rank distance between neighbours on the line (the product of the lower dimensions).
    members : tuple of int, optional
        The line's NPUs in ring order, instead of `stride` (communicator groups, flat rings).
    """

    def __init__(self, npu: int, size: int, stride: int, members: tuple[int, ...] | None = None):
        self.size = size
        self.members = members
        if members is not None:
            self.pos = {m: i for i, m in enumerate(members)}
            self.index = self.pos[npu]
            return
        self.stride = stride
        self.index = (npu // stride) % size
        self.base = npu - self.index * stride

    def at(self, index: int) -> int:
        """The NPU at a position of the line.

        Parameters
        ----------
        index : int
            Position on the line, taken modulo the line's size.

        Returns
        -------
        int
            The NPU's rank.
        """
        if self.members is not None:
            return self.members[index % self.size]
        return self.base + (index % self.size) * self.stride

    def next(self, npu: int, clockwise: bool = True) -> int:
        """The neighbour of an NPU on the line.

        Parameters
        ----------
        npu : int
            An NPU of the line.
        clockwise : bool
            The next one in ring order (True) or the previous one (False).

        Returns
        -------
        int
            The neighbour's rank.
        """
        i = self.pos[npu] if self.members is not None else (npu - self.base) // self.stride
        return self.at(i + (1 if clockwise else -1))
