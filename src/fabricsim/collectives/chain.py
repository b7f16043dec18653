"""A pipelined chain (ring broadcast and reduce): piece c crosses hop d at lock-step step c + d.

Hop d (order[d] -> order[d+1], d = 0..n-1) carries pieces 0..P-1 at steps d .. d+P-1. Listed step by
step that is every (hop, piece): n x P entries, 268 M for a 16,384-rank ring broadcast of its default
p pieces. While the pipeline fills and drains, every step runs a different set of hops, so no
repeated `Step` holds them; `ComposedStep`s do (`compose_pipeline`), with parts that are runs of
consecutive hops running together:

- the hops are cut into blocks of g hops (g a power of two, at most P: a block of g hops all runs
  at once only for P - g + 1 steps); each block's **main** part runs all its hops at steps
  a+g-1 .. a+P-1 (hop d moves piece t - d: ids at repetition 0 of t0 - d, one more per repetition);
- what a block runs before that (its fill: hop d from step d) and after (its drain: up to step
  d+P-1) are triangles, each covered by halving: the lower half runs alone for g/2 steps before
  the block's main part (the upper half alone for g/2 steps after it), and each half's own
  triangle the same way. Every (hop, piece) is in exactly one part: about 2 n log2(g) stored
  entries, each lock-step step naming O(log g) parts per block.

The composed form lists, in each step, its hops in ascending order, as the listed form does, so
every reader sees the same transfers in the same order (tests/test_chain.py compares them). It is
used where it is smaller by far (`chain_form`); small chains stay listed.
"""

from __future__ import annotations

import numpy as np

from ..ir import compose_pipeline
from ..ir import Step, make_step


def _block_size(n: int, chunks: int) -> int:
    """The largest power of two at most min(n, chunks)."""
    return 1 << (min(n, chunks).bit_length() - 1)


def chain_parts(n: int, chunks: int) -> list[tuple[int, int, int, int]]:
    """The parts that cover every (hop, piece) of a chain once (module doc).

    Parameters
    ----------
    n : int
        Hops, >= 1.
    chunks : int
        Pieces, >= 1.

    Returns
    -------
    list of (first hop, hops, first step, steps)
        Sorted by first hop; the hops of a part run together at every step of its range.
    """
    g = _block_size(n, chunks)
    out = []

    def fill(a: int, h: int) -> None:
        while h > 1:  # the lower half alone before the block's main part; each half's own triangle
            h //= 2
            out.append((a, h, a + h - 1, h))
            fill(a + h, h)

    def drain(a: int, h: int) -> None:
        while h > 1:  # the upper half alone after the block's main part; each half's own triangle
            h //= 2
            out.append((a + h, h, a + chunks, h))
            drain(a, h)
            a += h

    for a in range(0, n, g):
        size = min(g, n - a)
        while size:  # a short last block: its binary digits, largest first
            b = 1 << (size.bit_length() - 1)
            out.append((a, b, a + b - 1, chunks - b + 1))
            fill(a, b)
            drain(a, b)
            a, size = a + b, size - b
    return sorted(out)


def chain_form(n: int, chunks: int) -> str:
    """"composed" where its steps name, in all, at most 1/20 as many parts as the listed form
    has entries, else "listed".

    Parameters
    ----------
    n, chunks : int
        Hops and pieces.

    Returns
    -------
    str
        A composed step costs Python per part it names at every step; a listed entry a few bytes.
    """
    g = _block_size(n, chunks)
    names = (n + chunks) * (-(-n // g) + 2 * (g.bit_length() - 1))  # steps x parts each names, at most
    return "composed" if 20 * names < n * chunks else "listed"


def chain_entries(n: int, chunks: int) -> int:
    """Block entries the chain's steps store (the `blocks` limit's count).

    Parameters
    ----------
    n, chunks : int
        Hops and pieces.

    Returns
    -------
    int
    """
    if chain_form(n, chunks) == "listed":
        return n * chunks
    return sum(h for _, h, _, _ in chain_parts(n, chunks))


def chain_steps(order: np.ndarray, chunks: int, reduce: bool, form: str = "auto") -> list[Step]:
    """The lock-step steps of a chain along `order`: piece c leaves position d at step c + d.

    Parameters
    ----------
    order : int array [n + 1]
        Ranks along the chain, order[0] first.
    chunks : int
        Pieces (block ids 0..chunks-1), >= 1.
    reduce : bool
        Whether each hop adds the piece into its destination (reduce) or copies it (broadcast).
    form : {"auto", "listed", "composed"}
        auto: `chain_form`'s choice.

    Returns
    -------
    list of Step
        Listed steps, or `ComposedStep`s where `chain_form` says so: the same transfers in the
        same order either way.
    """
    order = np.asarray(order, dtype=np.int64)
    n = len(order) - 1
    if form not in ("auto", "listed", "composed"):
        raise ValueError(f"chain_steps: form {form!r}; accepted: auto, listed, composed")
    if (chain_form(n, chunks) if form == "auto" else form) == "listed":
        steps = []
        d = np.arange(n)
        for t in range(chunks + n - 1):
            c = t - d
            ok = (c >= 0) & (c < chunks)
            if not ok.any():
                continue
            steps.append(make_step(order[d[ok]], order[d[ok] + 1], c[ok], reduce))
        return steps
    parts, offsets = [], []
    for a, h, t0, reps in chain_parts(n, chunks):
        d = np.arange(a, a + h)
        shift = 1 if reps > 1 else None
        parts.append(make_step(order[d], order[d + 1], t0 - d, reduce, repeat=reps, shift=shift,
                               mod=chunks if shift else None))
        offsets.append(t0)
    return compose_pipeline(parts, offsets)
