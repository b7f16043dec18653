"""A full-mesh step: every node of 0..n-1 sends one block to every other node at once.

The direct algorithms' steps have n(n-1) transfers: 4.3 billion on 65,536 ranks, which no list
holds. `FullMeshStep` states the pattern instead -- the transfers are every ordered pair (i, j),
i != j, in a fixed order, each moving one block named by a rule -- and the readers that matter at
scale read that statement directly: the analytical model (link loads of all pairs on a torus, ring
or mesh from per-dimension counts, `network.analytical`), the sampled verification (the moves of a
chosen block are a row or a column of the mesh), the flow model's quotient (every translation maps
the mesh onto itself) and the per-node byte counts. Any other reader sees the usual `Step`
attributes (`src`, `dst`, `blocks`, ...): the listed form, built on first use, within the `blocks`
limit (one line naming the limit beyond it). Both forms give the same answers: the listed form is
the definition, and the tests compare every native reader with it.

Block rules (`block`):
- "dst": transfer (i, j) moves block j (a direct reduce-scatter: block j ends at rank j);
- "src": it moves block i (a direct all-gather: rank i's block to everyone);
- "pair": it moves block i*n + j (a direct all-to-all).

Order: source-major (i, then j ascending, j != i), or destination-major with `by_dst` (j, then
i ascending): the order of `Step.src`/`dst` in the listed form, kept so that every model sees the
transfers in the order the direct builders always listed them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .form import StatedOnce, mesh_checks, mesh_moves, register_form
from .step import Step, make_step

RULES = ("dst", "src", "pair")


def ordered_pairs(n: int, firsts=None) -> tuple[np.ndarray, np.ndarray]:
    """Ordered pairs (a, b) of 0..n-1 with a != b, a-major, b ascending: n - 1 per a.

    Parameters
    ----------
    n : int
        Nodes.
    firsts : int array, optional
        The values of a, in this order (default: 0..n-1, every pair).

    Returns
    -------
    (int64 array, int64 array)
        a and b, (n - 1) x len(firsts) of each.
    """
    firsts = np.arange(n, dtype=np.int64) if firsts is None else np.asarray(firsts, dtype=np.int64)
    a = np.repeat(firsts, n - 1)
    k = np.tile(np.arange(n - 1, dtype=np.int64), len(firsts))
    return a, k + (k >= a)  # skip b == a


@register_form
@dataclass(frozen=True, eq=False)
class FullMeshStep(StatedOnce):
    """Every ordered pair of distinct nodes 0..n-1 as one transfer of one block (module doc).

    Parameters
    ----------
    n : int
        Nodes taking part (schedule nodes 0..n-1), >= 2.
    block : {"dst", "src", "pair"}
        Which block transfer (i, j) moves: j, i, or i*n + j.
    reduce_all : bool
        Whether every transfer adds its block into the destination (else copies it).
    by_dst : bool
        List the transfers destination-major instead of source-major.
    """

    n: int
    block: str
    reduce_all: bool
    by_dst: bool = False
    _listed: list = field(default_factory=list, init=False, repr=False)  # the listed Step, once built

    form: ClassVar[str] = "full-mesh"

    def __post_init__(self):
        if self.block not in RULES:
            raise ValueError(f"FullMeshStep: block must be one of {RULES}, got {self.block!r}")
        if int(self.n) < 2:
            raise ValueError("FullMeshStep: n must be >= 2")
        object.__setattr__(self, "n", int(self.n))

    # ---- what a native reader uses ----------------------------------------------------------

    @property
    def n_transfers(self) -> int:
        """Transfers in the step: n(n-1)."""
        return self.n * (self.n - 1)

    n_moves = n_transfers  # one block per transfer

    @property
    def stored_entries(self) -> int:
        """Block entries the step holds: none listed (the pattern is stated)."""
        return 1

    def blocks_of(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The block transfer (src, dst) moves, for arrays of pairs (int64)."""
        if self.block == "dst":
            return np.asarray(dst, dtype=np.int64)
        if self.block == "src":
            return np.asarray(src, dtype=np.int64)
        return np.asarray(src, dtype=np.int64) * self.n + dst

    def index_of(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Position of each transfer (src, dst), src != dst, in the listed order (int64)."""
        a, b = (dst, src) if self.by_dst else (src, dst)
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        return a * (self.n - 1) + b - (b > a)

    @property
    def node_bound(self) -> int:
        """One past the largest schedule node the step names: n."""
        return self.n

    @property
    def id_bound(self) -> int:
        """One past the largest block id the rule moves: n*n - 1 ("pair": (n-1)*n + n-2) or n."""
        return self.n * self.n - 1 if self.block == "pair" else self.n

    def add_node_sums(self, block_frac: float, side: str, factors: tuple, out: np.ndarray,
                      reduce_only: bool = False) -> np.ndarray:
        """Per-node sums without listing the mesh (`Step.add_node_sums`): n - 1 equal transfers at
        each of nodes 0..n-1, added one by one, so the floats equal the listed form's."""
        if self.n > 1 and (self.reduce_all or not reduce_only):
            x = 1 * block_frac  # one block per transfer
            for f in factors:
                x = x * f
            start = out[: self.n]
            for v in np.unique(start):  # few distinct running sums: one sequential sum each
                start[start == v] = np.cumsum(np.concatenate([[v], np.full(self.n - 1, x)]))[-1]
        return out

    def maps_channels(self, sig: np.ndarray) -> bool:
        """Whether `sig` permutes nodes 0..n-1 (`form.StepForm.maps_channels`): then every pair
        (i, j) maps onto the pair (sig i, sig j) of the mesh, equal in reduce flag and block count."""
        return len(sig) >= self.n and bool(np.array_equal(np.sort(sig[: self.n]), np.arange(self.n)))

    def maps_blocks(self, sig: np.ndarray, pi, nblocks: int) -> bool:
        """Whether `pi` maps the rule's block of (i, j) onto that of (sig i, sig j)
        (`form.StepForm.maps_blocks`): "pair" i*n + j onto sig(i)*n + sig(j), the all-to-all's map
        itself (n*n blocks); "dst" j onto sig(j) and "src" i onto sig(i), pi = sig on 0..n-1."""
        if self.block == "pair":
            return getattr(pi, "kind", "") == "all-to-all" and self.n * self.n == nblocks
        return bool(np.array_equal(pi(np.arange(self.n, dtype=np.int64)), sig[: self.n]))

    def structure_problem(self, n_nodes: int) -> str | None:
        """A node outside 0..n_nodes-1 (`form.StepForm.structure_problem`, `form.mesh_checks`)."""
        return mesh_checks(self, n_nodes, 0)[0]

    def first_bad_rep(self, nblocks: int) -> int | None:
        """0 when the rule moves an id outside 0..nblocks-1 (`form.StepForm.first_bad_rep`, `form.mesh_checks`)."""
        return mesh_checks(self, 0, nblocks)[1]

    def sampled_moves(self, sample: np.ndarray, reps: int) -> tuple[np.ndarray, ...]:
        """The chosen blocks' moves by the rule (`moves_of`; `form.StepForm.sampled_moves`, `form.mesh_moves`)."""
        return mesh_moves(self, sample, reps)

    def moves_of(self, blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every transfer that moves one of `blocks`: (index into `blocks`, src, dst, entry position),
        grouped by block.

        Parameters
        ----------
        blocks : int64 array
            Block ids (ids outside the rule's range move nowhere).

        Returns
        -------
        tuple of int64 arrays
            A "dst" or "src" block b in 0..n-1 moves n-1 times (into b, or out of b); a "pair"
            block i*n + j with i != j once. One block per transfer: the entry position is the
            transfer's (`index_of`).
        """
        blocks = np.asarray(blocks, dtype=np.int64)
        n = self.n
        if self.block == "pair":
            i, j = blocks // n, blocks % n
            ok = (blocks >= 0) & (blocks < n * n) & (i != j)
            c = np.flatnonzero(ok)
            col, src, dst = c, i[c], j[c]
        else:
            c = np.flatnonzero((blocks >= 0) & (blocks < n))
            b, other = ordered_pairs(n, blocks[c])
            col = np.repeat(c, n - 1)
            src, dst = (other, b) if self.block == "dst" else (b, other)
        return col, src, dst, self.index_of(src, dst)

    # ---- the listed form: what every other reader sees ---------------------------------------

    def explicit(self) -> Step:
        """The same step with every transfer listed (a `Step`), built once, within the `blocks` limit."""
        if not self._listed:
            from ..limits import check_limit

            check_limit("blocks", self.n_transfers,
                        f"schedule entries (a full mesh of {self.n} ranks, listed transfer by transfer for a "
                        "reader that cannot take it whole: a group or network without the translations of a "
                        "torus, ring or mesh, or a full check on data)", "group size", self.n)
            a, b = ordered_pairs(self.n)
            src, dst = (b, a) if self.by_dst else (a, b)
            self._listed.append(make_step(src, dst, self.blocks_of(src, dst), self.reduce_all))
        return self._listed[0]
