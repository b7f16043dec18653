"""Helpers for the tests of stated steps (full mesh, line mesh, composed) and of the sampled check."""

from __future__ import annotations

from dataclasses import replace

from fabricsim.ir import ComposedStep
from fabricsim.ir import Schedule
from fabricsim.collectives.verify import ScheduleError


def listed(s: Schedule) -> Schedule:
    """The same schedule with every step in its listed form."""
    return replace(s, steps=tuple(st.explicit() for st in s.steps))


def outcome(fn) -> str:
    """"ok", or the ScheduleError's message, of calling fn()."""
    try:
        fn()
        return "ok"
    except ScheduleError as e:
        return str(e)


def with_part(s: Schedule, i: int, fix) -> Schedule:
    """The composed schedule with its i-th distinct part replaced by fix(part) in every step that runs it."""
    old = list(dict.fromkeys(q for st in s.steps for q in st.parts))[i]
    new = fix(old)
    return replace(s, steps=tuple(ComposedStep(tuple(new if q is old else q for q in st.parts), st.first, st.repeat)
                                  for st in s.steps))
