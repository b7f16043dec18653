"""Composing step lists: phases in sequence, lists side by side, lanes, renamed nodes.

Every function keeps the steps' compression (repetitions, range form) where it can.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from .step import Step


def lane_total(steps: Sequence[Step], cost: np.ndarray, floor: dict | None = None) -> np.ndarray:
    """Sum of per-step costs along the time line: a block of lanes costs its slowest lane.

    Parameters
    ----------
    steps : sequence of Step
        The steps, in order (their `lane` tags group them).
    cost : array
        Cost of each step on the first axis (any unit, e.g. seconds; further axes, e.g. sizes,
        are kept).
    floor : dict, optional
        Block id -> the least a block costs (same trailing shape as `cost`): what its lanes
        share (an NPU's injection limit across its concurrent lanes).

    Returns
    -------
    array
        `cost` summed over its first axis, lanes of a block counted by their maximum.
    """
    cost = np.asarray(cost, dtype=float)
    total = np.zeros(cost.shape[1:])
    block = None
    lanes: dict = {}

    def close(key):
        worst = np.max(np.stack(list(lanes.values())), axis=0)
        return np.maximum(worst, floor[key]) if floor and key in floor else worst

    for st, c in zip(steps, cost):
        key = st.lane[0] if st.lane is not None else None
        if key != block and lanes:
            total = total + close(block)
            lanes = {}
        block = key
        if key is None:
            total = total + c
        else:
            lanes[st.lane[1]] = lanes.get(st.lane[1], 0.0) + c
    if lanes:
        total = total + close(block)
    return total


def in_lanes(block: int, lanes: Sequence[Sequence[Step]]) -> tuple[Step, ...]:
    """Independent step lists that synchronise only at the end (one block of lanes).

    Parameters
    ----------
    block : int
        Tag of the block (distinct from neighbouring blocks; e.g. the index of its first step).
    lanes : sequence of step lists
        One list per lane.

    Returns
    -------
    tuple of Step
        The steps of every lane, in lane order, tagged `lane=(block, k)`.
    """
    return tuple(replace(st, lane=(block, k)) for k, lane in enumerate(lanes) for st in lane)


def sequence(*parts: Sequence[Step]) -> tuple[Step, ...]:
    """Steps of several phases, one phase after another.

    Parameters
    ----------
    *parts : sequences of Step
        The phases, in time order.

    Returns
    -------
    tuple of Step
    """
    return tuple(s for part in parts for s in part)


def align(a: Sequence[Step], b: Sequence[Step]) -> tuple[list[Step], list[Step]]:
    """Split repeated steps so that both lists have the same repetition structure.

    Parameters
    ----------
    a, b : sequence of Step
        Two step lists.

    Returns
    -------
    (list of Step, list of Step)
        The same steps, split with `Step.window` so that the i-th steps of both lists have the
        same `repeat` (over their common length; the longer list's tail is kept).
    """
    a, b = list(a), list(b)
    out_a: list[Step] = []
    out_b: list[Step] = []
    i = j = 0
    ka = kb = 0  # repetitions already consumed of a[i], b[j]
    while i < len(a) and j < len(b):
        ra, rb = a[i].repeat - ka, b[j].repeat - kb
        n = min(ra, rb)
        out_a.append(a[i].window(ka, ka + n) if (ka, n) != (0, a[i].repeat) else a[i])
        out_b.append(b[j].window(kb, kb + n) if (kb, n) != (0, b[j].repeat) else b[j])
        ka += n
        kb += n
        if ka == a[i].repeat:
            i, ka = i + 1, 0
        if kb == b[j].repeat:
            j, kb = j + 1, 0
    out_a.extend(a[i:] if ka == 0 else [a[i].window(ka, a[i].repeat)] + a[i + 1 :])
    out_b.extend(b[j:] if kb == 0 else [b[j].window(kb, b[j].repeat)] + b[j + 1 :])
    return out_a, out_b


def merge_steps(x: Step, y: Step) -> Step:
    """Two steps with the same repeat, run concurrently as one.

    Parameters
    ----------
    x, y : Step
        Steps with equal `repeat`.

    Returns
    -------
    Step
        The transfers of `x` then those of `y` (range form when both are in range form).
    """
    assert x.repeat == y.repeat
    rotating = x.shift is not None or y.shift is not None

    def rot(s: Step):
        if s.shift is not None:
            return s.shift, s.mod
        z = np.zeros(len(s.blocks), dtype=np.int64)
        return z, np.full(len(s.blocks), np.iinfo(np.int64).max // 4, dtype=np.int64)

    if x.ranges and y.ranges:
        shift = mod = None
        if rotating and x.repeat > 1:
            (sx, mx), (sy, my) = rot(x), rot(y)
            shift, mod = np.concatenate([sx, sy]), np.concatenate([mx, my])
        return Step(np.concatenate([x.src, y.src]), np.concatenate([x.dst, y.dst]),
                    np.concatenate([x.reduce, y.reduce]), np.concatenate([x.ptr, y.ptr[1:] + x.ptr[-1]]),
                    np.concatenate([x.blocks, y.blocks]), repeat=x.repeat, shift=shift, mod=mod, ranges=True)
    x, y = x.explicit(), y.explicit()

    ptr = np.concatenate([x.ptr, y.ptr[1:] + x.ptr[-1]])
    shift = mod = None
    if rotating and x.repeat > 1:
        (sx, mx), (sy, my) = rot(x), rot(y)
        shift, mod = np.concatenate([sx, sy]), np.concatenate([mx, my])
    return Step(
        np.concatenate([x.src, y.src]),
        np.concatenate([x.dst, y.dst]),
        np.concatenate([x.reduce, y.reduce]),
        ptr,
        np.concatenate([x.blocks, y.blocks]),
        repeat=x.repeat,
        shift=shift,
        mod=mod,
    )


def parallel(*step_lists: Sequence[Step]) -> tuple[Step, ...]:
    """Several step lists run side by side: step i of each runs in lock-step step i.

    Lists may differ in length; the shorter ones simply finish earlier.

    Parameters
    ----------
    *step_lists : sequences of Step
        The lists (e.g. the two directions of a bidirectional ring).

    Returns
    -------
    tuple of Step
        Merged steps, compression kept (`align`, `merge_steps`).
    """
    out: list[Step] = list(step_lists[0])
    for other in step_lists[1:]:
        a, b = align(out, other)
        n = min(len(a), len(b))
        out = [merge_steps(a[i], b[i]) for i in range(n)] + a[n:] + b[n:]
    return tuple(out)


def offset_nodes(steps: Sequence[Step], node_map: np.ndarray) -> tuple[Step, ...]:
    """Rename schedule nodes through `node_map`.

    Parameters
    ----------
    steps : sequence of Step
        Steps on local node ids.
    node_map : int array
        New id of each local id (`node_map[i]`).

    Returns
    -------
    tuple of Step
        The same steps with `src` and `dst` renamed.
    """
    node_map = np.asarray(node_map, dtype=np.int64)
    return tuple(replace(s, src=node_map[s.src], dst=node_map[s.dst]) for s in steps)
