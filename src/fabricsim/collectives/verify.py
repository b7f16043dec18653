"""Execute a schedule on numpy data and check the collective's meaning exactly.

Every (node, block) holds an integer and a flag saying whether the node holds that block.
Initial holdings and the expected end state follow the collective:

| collective      | at the start                         | at the end                              |
|-----------------|--------------------------------------|-----------------------------------------|
| all-reduce      | every rank: its own value of every block | every rank: the sum over ranks, every block |
| reduce-scatter  | every rank: its own value of every block | `owner[b]`: the sum for block b         |
| all-gather      | `owner[b]`: its value of block b     | every rank: the owner's value, every block |
| all-to-all      | rank i: blocks i*p+j (its value)     | rank j: blocks i*p+j, i's value, every i |
| broadcast       | root: every block                    | every rank: root's value, every block   |
| reduce          | every rank: its own value of every block | root: the sum over ranks, every block |

Values are random integers, so sums are exact and a contribution counted twice or missed is
caught. Sending a block one does not hold, two copies into one place in one step, or a
transfer to oneself are errors. Blocks are independent of each other, so large schedules are
checked in batches of blocks (exactly), or on a random sample of blocks (`sample=`): step by step,
or with the sample's moves solved for all steps at once (`verify_sampled`: no visit of every
transfer at every repetition), whichever `sample_plan` expects to be cheaper. `default_sample` is
the default rule: every block up to 5M block moves, else a bounded sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ScheduleError  # noqa: F401  (defined there so the CLI catches it without importing numpy)
from ..ir import Schedule
from .verify_expect import OneRow, expected_values


@dataclass(frozen=True)
class VerifyReport:
    """What `verify` checked.

    Parameters
    ----------
    collective, algorithm : str
        The schedule's collective and algorithm.
    p : int
        Ranks in the group.
    steps : int
        Lock-step steps along the time line (`Schedule.n_steps`).
    transfers : int
        Transfers, repetitions included (`Schedule.n_transfers`).
    blocks_checked : int
        Blocks executed and checked (all of them unless `sample` was given).
    nblocks : int
        Blocks in the schedule.
    """

    collective: str
    algorithm: str
    p: int
    steps: int
    transfers: int
    blocks_checked: int
    nblocks: int


_CELL_BUDGET = 20_000_000  # (node, block) cells held at once

# Default rule (`default_sample`): every block up to FULL_VERIFY_LIMIT block moves (a full check,
# step by step, runs about 5M block moves a second), else a sample of MIN_SAMPLE..DEFAULT_SAMPLE
# blocks, as many as the cost model below puts within SAMPLE_SECONDS. A sample is checked by
# whichever of two exact executors the model finds cheaper: step by step (`_run_batch`: numpy calls
# per lock-step step and a visit of every stored entry at each repetition, cheap for a few wide
# steps such as Swing's) or all at once (`verify_sampled`: per (block, move) and per (block,
# repetition of a rotating step), cheap for many repeated steps such as a ring's 131,070).
FULL_VERIFY_LIMIT = 5_000_000  # block moves above which `default_sample` checks a sample
DEFAULT_SAMPLE = 256  # most blocks a default sample checks
MIN_SAMPLE = 16  # fewest blocks a default sample checks (however long the schedule)
SAMPLE_SECONDS = 1.5  # what a default sample aims at, by the cost model
# cost model, CPU seconds on the 2-core machine of benchmarks/README.md (fitted to ring, Swing, NCCL ring)
_STEP_S = 30e-6  # step by step: the numpy calls of one lock-step step
_ENTRY_S = 13e-9  # step by step: one stored entry (a run in range form) visited at one repetition
_MOVE_S = 0.5e-6  # step by step: one (sampled block, move)
_AT_ONCE_S = 0.8e-6  # all at once: one (sampled block, move) or (sampled block, rotating repetition)


def verify_work(schedule: Schedule) -> int:
    """Block moves a full `verify` executes: every block id of every transfer, at every repetition.

    A range-form step counts the blocks of its runs, not its transfers: one transfer may move
    thousands of blocks, and verify handles each one (memory and time grow with this count).

    Parameters
    ----------
    schedule : Schedule
        Any schedule.

    Returns
    -------
    int
        Sum over steps of (blocks moved in one repetition) x repeat.

    Examples
    --------
    >>> from fabricsim.topology import parse_topology
    >>> from fabricsim.collectives.api import build_schedule
    >>> verify_work(build_schedule(parse_topology("ring:8"), "all-reduce", "ring"))  # 2 x 8 blocks x 7
    112
    """
    return int(sum(st.n_moves * st.repeat for st in schedule.steps))


def _sample_costs(s: Schedule) -> tuple[float, float, float]:
    """(fixed cost of a step-by-step sample, its cost per block, all-at-once cost per block), s."""
    moves = verify_work(s) / max(1, s.nblocks)  # per block, on average
    # what step by step reads per repetition (`checked_entries`): a listed step its stored entries (a
    # run in range form is one; a repeated run is read listed), a stated one transfer by transfer
    fixed = sum(st.repeat * (_STEP_S + st.checked_entries * _ENTRY_S) for st in s.steps)
    rotating = sum(st.repeat for st in s.steps if st.repeat > 1 and st.rotates)
    return fixed, moves * _MOVE_S, (moves + rotating) * _AT_ONCE_S


def sample_plan(schedule: Schedule, sample: int | None = None) -> tuple[int, bool]:
    """How a sampled verify runs: (blocks, all at once?).

    Parameters
    ----------
    schedule : Schedule
        The schedule to verify.
    sample : int, optional
        Blocks asked for (default: as many as the cost model puts within `SAMPLE_SECONDS`, between
        `MIN_SAMPLE` and `DEFAULT_SAMPLE`); never more than every block.

    Returns
    -------
    (int, bool)
        Blocks to check, and True when `verify_sampled` (all steps at once) is the cheaper
        executor for them, False for step by step.
    """
    fixed, per_step, per_once = _sample_costs(schedule)
    if sample is None:
        fit = max((SAMPLE_SECONDS - fixed) / max(per_step, 1e-12), SAMPLE_SECONDS / max(per_once, 1e-12))
        sample = max(MIN_SAMPLE, min(DEFAULT_SAMPLE, int(fit)))
    n = int(min(schedule.nblocks, max(1, sample)))
    if any(not st.listed for st in schedule.steps):  # step by step would list a stated step
        return n, True
    return n, n * per_once < fixed + n * per_step


def sample_size(schedule: Schedule) -> int:
    """Blocks a default sampled verify checks (`sample_plan`): within about `SAMPLE_SECONDS` by the
    cost model, between `MIN_SAMPLE` and `DEFAULT_SAMPLE`, at most every block.

    Parameters
    ----------
    schedule : Schedule
        The schedule to verify.

    Returns
    -------
    int

    Examples
    --------
    >>> from fabricsim.topology import parse_topology
    >>> from fabricsim.collectives.api import build_schedule
    >>> sample_size(build_schedule(parse_topology("ring:65536"), "all-reduce", "ring"))  # 131,070 moves a block
    16
    """
    return sample_plan(schedule)[0]


def default_sample(schedule: Schedule, limit: int = FULL_VERIFY_LIMIT) -> int | None:
    """The `sample=` of a default verify: None (every block, step by step) unless `verify_work`
    exceeds `limit`, then `sample_size` blocks (a few seconds at any size the builders make).

    Parameters
    ----------
    schedule : Schedule
        The schedule to verify.
    limit : int
        Block moves up to which every block is checked.

    Returns
    -------
    int or None
        Blocks to sample, or None for a full check.
    """
    if verify_work(schedule) <= limit:
        return None
    return sample_size(schedule)


def _check_owner(s: Schedule) -> None:
    if s.owner is None:
        raise ScheduleError(f"{s.algorithm} {s.collective}: schedule has no block owners")
    if len(s.owner) != s.nblocks:
        raise ScheduleError("owner must name one rank per block")
    counts = np.bincount(s.owner, minlength=s.p)
    if len(counts) != s.p or s.owner.min() < 0 or not np.all(counts == counts[0]):
        raise ScheduleError(f"{s.algorithm} {s.collective}: ranks do not own equal shares of the buffer ({counts.tolist()[:8]}...)")


def _values(s: Schedule, blocks: np.ndarray, rng: np.random.Generator):
    if s.collective in ("all-gather", "all-to-all", "broadcast"):
        return OneRow(rng.integers(0, 2**31, size=len(blocks), dtype=np.int64))
    return rng.integers(0, 2**31, size=(s.p, len(blocks)), dtype=np.int64)


def _initial(s: Schedule, blocks: np.ndarray, rng_vals: np.ndarray):
    """valid[node, j] and val[node, j] for the checked blocks; rng_vals[rank, j] are the
    ranks' own values."""
    n, p, nb = s.n_nodes, s.p, len(blocks)
    val = np.zeros((n, nb), dtype=np.int64)
    valid = np.zeros((n, nb), dtype=bool)
    c = s.collective
    if c in ("all-reduce", "reduce-scatter", "reduce"):
        val[:p] = rng_vals
        valid[:p] = True
    elif c == "all-gather":
        own = s.owner[blocks]
        cols = np.arange(nb)
        val[own, cols] = rng_vals[own, cols]
        valid[own, cols] = True
    elif c == "all-to-all":
        origin = blocks // p
        cols = np.arange(nb)
        val[origin, cols] = rng_vals[origin, cols]
        valid[origin, cols] = True
    elif c == "broadcast":
        val[s.root] = rng_vals[s.root]
        valid[s.root] = True
    return val, valid


def _run_batch(s: Schedule, blocks: np.ndarray, rng: np.random.Generator, memos: list) -> None:
    """Run the steps of `s` on the sorted block ids `blocks` (`memos`: one dict per step, kept across
    batches) and raise ScheduleError at the first violation, or unless the end state is the collective's."""
    col_of = np.full(s.nblocks, -1, dtype=np.int64)
    col_of[blocks] = np.arange(len(blocks))
    rng_vals = _values(s, blocks, rng)
    val, valid = _initial(s, blocks, rng_vals)
    step_index = 0
    for st, memo in zip(s.steps, memos):
        problem = st.structure_problem(s.n_nodes)
        if problem is not None:
            raise ScheduleError(f"step {step_index}: {problem}")
        for k in range(st.repeat):
            moved = st.batch_moves(k, blocks, col_of, memo)  # only the entries inside this batch of blocks
            if moved is None:
                raise ScheduleError(f"step {step_index}: block id outside 0..{s.nblocks - 1}")
            src, dst, red, col = moved
            if len(col):
                held = valid[src, col]
                if not held.all():
                    i = int(np.flatnonzero(~held)[0])
                    raise ScheduleError(
                        f"{s.algorithm} {s.collective} p={s.p}: step {step_index}: node {src[i]} "
                        f"sends block {blocks[col[i]]} to {dst[i]} before it holds it"
                    )
                data = val[src, col]
                key = dst * len(blocks) + col
                ck = key[~red]
                if len(np.unique(ck)) != len(ck):
                    raise ScheduleError(f"{s.algorithm} {s.collective} p={s.p}: step {step_index}: two copies into the same block of one node")
                rk = key[red]
                if len(ck) and len(rk) and np.intersect1d(ck, rk).size:
                    raise ScheduleError(f"{s.algorithm} {s.collective} p={s.p}: step {step_index}: copy and reduce into the same block of one node")
                # reduce: a helper node (switch) that holds nothing starts from 0; a rank must
                # hold the block it reduces into
                rd, rc = dst[red], col[red]
                empty = ~valid[rd, rc] & (rd < s.p)
                if empty.any():
                    i = int(np.flatnonzero(empty)[0])
                    raise ScheduleError(
                        f"{s.algorithm} {s.collective} p={s.p}: step {step_index}: node {src[red][i]} reduces "
                        f"block {blocks[rc[i]]} into rank {rd[i]}, which does not hold it"
                    )
                val[rd, rc] = np.where(valid[rd, rc], val[rd, rc], 0)
                np.add.at(val, (rd, rc), data[red])
                cd, cc = dst[~red], col[~red]
                val[cd, cc] = data[~red]
                valid[dst, col] = True
            step_index += 1
    holder, col, expect = expected_values(s, blocks, rng_vals)
    ok = valid[holder, col] & (val[holder, col] == expect)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        what = "does not hold" if not valid[holder[i], col[i]] else "holds a wrong value of"
        raise ScheduleError(
            f"{s.algorithm} {s.collective} p={s.p}: at the end node {holder[i]} {what} block {blocks[col[i]]} "
            f"({int((~ok).sum())} of {len(ok)} checks fail)"
        )


def verify(schedule: Schedule, *, seed: int = 0, sample: int | None = None, blocks=None) -> VerifyReport:
    """Run `schedule` on random integers and raise `ScheduleError` unless it implements its
    collective exactly (module doc).

    Parameters
    ----------
    schedule : Schedule
        Placed or not; helper nodes take part as nodes that start with nothing.
    seed : int
        Seed of the random values (and of the sample).
    sample : int, optional
        Check only this many randomly chosen blocks, step by step or all steps solved at once
        (`verify_sampled`), whichever `sample_plan` finds cheaper; default: every block, step by
        step, in batches of bounded memory.
    blocks : int sequence, optional
        Check exactly these block ids (as `sample` does; e.g. the blocks a test corrupted).

    Returns
    -------
    VerifyReport
        Steps, transfers and blocks checked. A violation raises `ScheduleError` naming its step,
        node and block.

    Examples
    --------
    >>> from fabricsim.topology import parse_topology
    >>> from fabricsim.collectives.api import build_schedule
    >>> report = verify(build_schedule(parse_topology("ring:8"), "all-reduce", "ring"))
    >>> report.steps, report.blocks_checked
    (14, 8)
    """
    s = schedule
    if s.collective in ("reduce-scatter", "all-gather"):
        _check_owner(s)
    if s.collective in ("broadcast", "reduce") and (s.root is None or not 0 <= s.root < s.p):
        raise ScheduleError(f"{s.algorithm} {s.collective}: root {s.root} is not a rank")
    if s.collective == "all-to-all" and s.nblocks != s.p * s.p:
        raise ScheduleError("all-to-all schedules have p*p blocks")
    rng = np.random.default_rng(seed)
    at_once = False
    if blocks is not None or sample is not None:
        n, at_once = sample_plan(s, len(blocks) if blocks is not None else int(sample))
        if blocks is None:
            blocks = rng.choice(s.nblocks, size=n, replace=False)
        blocks = np.unique(np.asarray(blocks, dtype=np.int64))
        if len(blocks) and (blocks[0] < 0 or blocks[-1] >= s.nblocks):
            raise ValueError(f"verify: blocks must lie in 0..{s.nblocks - 1}")
    else:
        blocks = np.arange(s.nblocks)
    if at_once:
        from .verify_sampled import run_sampled

        run_sampled(s, blocks, rng)
        return VerifyReport(s.collective, s.algorithm, s.p, s.n_steps, s.n_transfers, len(blocks), s.nblocks)
    batch = max(1, _CELL_BUDGET // max(1, s.n_nodes))
    memos = [{} for _ in s.steps]  # what each step reads in every batch, built once (`StepForm.batch_moves`)
    for i in range(0, len(blocks), batch):
        _run_batch(s, blocks[i : i + batch], rng, memos)
    return VerifyReport(s.collective, s.algorithm, s.p, s.n_steps, s.n_transfers, len(blocks), s.nblocks)
