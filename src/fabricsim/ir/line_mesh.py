"""A line-mesh step: one phase of the hierarchical all-to-all, every line of one dimension a full mesh.

On a grid of `dims` (dimension 0 fastest, p nodes), phase k of the hierarchical all-to-all has
every node trade with the d_k - 1 others of its line along dimension k, each message carrying the
p / d_k blocks i*p + j that sit at the sender and belong on the receiver's coordinate k: i agrees
with the sender from coordinate k on (free below), j with the sender below k, with the receiver at
k (free above). Listed, a 128 x 128 phase is 2.1 M transfers of 128 ids each: 267 M block entries,
beyond what any list should hold. `LineMeshStep` keeps the transfers (source, destination: one
entry per transfer) and states their blocks by that rule; the readers that need blocks at scale
read the rule directly: the sampled verification (where a chosen block moves: `moves_of`), the flow
model's quotient (the blocks of the few transfers at its fundamental domain: `blocks_for`) and its
symmetry check (a translation of the grid maps the rule onto itself: `is_translation`). The
analytical model and per-node sums only read sources, destinations and block counts, which the
step has as arrays. Any other reader sees the listed form (`explicit`), built on first use within
the `blocks` limit: the definition, and what the tests compare every native reader with.

Order: destination coordinate t = 0..d_k - 1, then sources ascending (the builder's order before
this class: the flow model sees the same transfers in the same order). A dimension that is the
whole group is a full mesh (`full_mesh.FullMeshStep`, "pair" rule, destination-major), not this.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .form import StatedOnce, mesh_checks, mesh_moves, register_form
from .step import Step, make_step


@register_form
@dataclass(frozen=True, eq=False)
class LineMeshStep(StatedOnce):
    """Phase `dim` of the hierarchical all-to-all on a grid of `dims` (module doc).

    Parameters
    ----------
    dims : tuple of int
        Grid sizes, dimension 0 fastest; their product p is the group size.
    dim : int
        The dimension whose lines trade; 1 < dims[dim] < p.
    """

    dims: tuple
    dim: int
    _cache: dict = field(default_factory=dict, init=False, repr=False)  # pairs and the listed Step, once built

    form: ClassVar[str] = "line-mesh"

    def __post_init__(self):
        dims = tuple(int(d) for d in self.dims)
        object.__setattr__(self, "dims", dims)
        object.__setattr__(self, "dim", int(self.dim))
        if not 0 <= self.dim < len(dims) or min(dims) < 1:
            raise ValueError(f"LineMeshStep: dimension {self.dim} of {dims}")
        if not 1 < dims[self.dim] < math.prod(dims):
            raise ValueError("LineMeshStep: the dimension must have 2 .. p - 1 positions (a whole group is a FullMeshStep)")

    # ---- the grid ----------------------------------------------------------------------------

    @property
    def p(self) -> int:
        """Nodes of the grid (the group size)."""
        return math.prod(self.dims)

    @property
    def _strides(self) -> tuple[int, int, int]:
        """(stride of the dimension, its size, stride of the next): sk, dk, sk * dk."""
        sk = math.prod(self.dims[: self.dim])
        dk = self.dims[self.dim]
        return sk, dk, sk * dk

    node_bound = p  # one past the largest schedule node it names
    reduce_all: ClassVar[bool] = False  # every transfer copies

    @property
    def id_bound(self) -> int:
        """One past the largest block id the rule moves: p*p - s_k (i = p - 1 with j = p - 1 - s_k, the
        largest j whose coordinate k differs from i's)."""
        return self.p * self.p - self._strides[0]

    @property
    def per_transfer(self) -> int:
        """Blocks each transfer moves: p / d_k."""
        return self.p // self.dims[self.dim]

    def _coord(self, x: np.ndarray) -> np.ndarray:
        sk, dk, _ = self._strides
        return (np.asarray(x, dtype=np.int64) // sk) % dk

    # ---- what every reader uses: the transfers as arrays -------------------------------------

    @property
    def n_transfers(self) -> int:
        """Transfers in the step: p (d_k - 1)."""
        return self.p * (self.dims[self.dim] - 1)

    @property
    def n_moves(self) -> int:
        """Block moves: p / d_k per transfer."""
        return self.n_transfers * self.per_transfer

    @property
    def stored_entries(self) -> int:
        """Entries the step holds: one per transfer (its blocks are stated)."""
        return self.n_transfers

    def _pairs(self) -> tuple[np.ndarray, np.ndarray]:
        if "pairs" not in self._cache:
            sk, dk, sk1 = self._strides
            per_t = self.p - self.per_transfer  # sources whose coordinate is not t
            q = np.arange(self.n_transfers, dtype=np.int64)
            t, r = q // per_t, q % per_t
            a, rem = r // (sk * (dk - 1)), r % (sk * (dk - 1))
            c = rem // sk
            c = c + (c >= t)  # skip the coordinate t itself
            src = a * sk1 + c * sk + rem % sk
            dst = src + (t - c) * sk
            src.setflags(write=False)
            dst.setflags(write=False)
            self._cache["pairs"] = (src, dst)
        return self._cache["pairs"]

    src = property(lambda self: self._pairs()[0], doc="Source node of each transfer.")
    dst = property(lambda self: self._pairs()[1], doc="Destination node of each transfer.")

    @property
    def reduce(self) -> np.ndarray:
        """Reduce flag of each transfer: all copies."""
        return np.full(self.n_transfers, self.reduce_all)

    @property
    def blocks_per_transfer(self) -> np.ndarray:
        """Blocks each transfer moves (p / d_k each)."""
        return np.full(self.n_transfers, self.per_transfer, dtype=np.int64)

    @property
    def ptr(self) -> np.ndarray:
        """CSR offsets of each transfer's entries in the listed form."""
        return np.arange(self.n_transfers + 1, dtype=np.int64) * self.per_transfer

    @property
    def first_block(self) -> np.ndarray:
        """The first block id of each transfer (its listed form's first entry)."""
        return self.blocks_for(np.arange(self.n_transfers), first_only=True)[:, 0]

    def index_of(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Position of each transfer (src, dst) in the listed order (the two on one line, src != dst).

        Parameters
        ----------
        src, dst : int arrays
            Schedule nodes.

        Returns
        -------
        int64 array
        """
        sk, dk, sk1 = self._strides
        src = np.asarray(src, dtype=np.int64)
        t, c = self._coord(dst), self._coord(src)
        r = (src // sk1) * sk * (dk - 1) + (c - (c > t)) * sk + src % sk
        return t * (self.p - self.per_transfer) + r

    # ---- the blocks, by the rule --------------------------------------------------------------

    def blocks_for(self, tr: np.ndarray, first_only: bool = False) -> np.ndarray:
        """The blocks of transfers `tr`, in their listed order.

        Parameters
        ----------
        tr : int array
            Transfer indices.
        first_only : bool
            Only each transfer's first block.

        Returns
        -------
        int64 array [len(tr), p / d_k] (or [len(tr), 1])
            i*p + j for i over the sender's class below k (slow), j over the free coordinates above k.
        """
        sk, dk, sk1 = self._strides
        p = self.p
        src, dst = self.src[tr], self.dst[tr]
        t = self._coord(dst)
        i_low = np.arange(1 if first_only else sk, dtype=np.int64)
        j_high = np.arange(1 if first_only else p // sk1, dtype=np.int64) * sk1
        i = (src - src % sk)[:, None] + i_low[None, :]
        j = (src % sk + t * sk)[:, None] + j_high[None, :]
        return (i[:, :, None] * p + j[:, None, :]).reshape(len(src), -1)

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
        """Every transfer that moves one of `blocks`: (index into `blocks`, src, dst, entry position).

        Parameters
        ----------
        blocks : int64 array
            Block ids (ids outside 0..p*p-1 move nowhere).

        Returns
        -------
        tuple of int64 arrays
            Block i*p + j moves once, when its coordinate k differs at i and j: from the node with
            j's coordinates below k and i's from k on, to the same node at j's coordinate k. The
            entry position is its place in the listed form's `blocks`.
        """
        sk, dk, sk1 = self._strides
        p = self.p
        blocks = np.asarray(blocks, dtype=np.int64)
        i, j = blocks // p, blocks % p
        ok = (blocks >= 0) & (blocks < p * p)
        ci, cj = self._coord(i), self._coord(j)
        col = np.flatnonzero(ok & (ci != cj))
        i, j, ci, cj = i[col], j[col], ci[col], cj[col]
        src = i - i % sk + j % sk
        dst = src + (cj - ci) * sk
        within = (i % sk) * (p // sk1) + j // sk1
        return col, src, dst, self.index_of(src, dst) * self.per_transfer + within

    def is_translation(self, sig: np.ndarray) -> bool:
        """Whether the node map `sig` (schedule node -> schedule node) translates the grid: the same
        coordinate offset at every node. Such a map, with the all-to-all's block map (i*p + j to
        sig(i)*p + sig(j)), maps this step onto itself."""
        sig = np.asarray(sig, dtype=np.int64)[: self.p]
        if len(sig) < self.p:
            return False
        m = np.arange(self.p, dtype=np.int64)
        radix = np.cumprod((1,) + self.dims[:-1])
        dims = np.asarray(self.dims, dtype=np.int64)
        off = (sig[:, None] // radix % dims - m[:, None] // radix % dims) % dims
        return bool(np.all(off == off[0]))

    def maps_channels(self, sig: np.ndarray) -> bool:
        """Whether `sig` translates the grid (`is_translation`; `form.StepForm.maps_channels`): it
        then maps every line of the dimension onto a line, each transfer onto a transfer (all copy
        p / d_k blocks)."""
        return self.is_translation(sig)

    def maps_blocks(self, sig: np.ndarray, pi, nblocks: int) -> bool:
        """Given a translation `sig`, whether `pi` is the all-to-all's map i*p + j -> sig(i)*p + sig(j)
        over p*p blocks, which maps the rule onto itself (`form.StepForm.maps_blocks`)."""
        return getattr(pi, "kind", "") == "all-to-all" and self.p * self.p == nblocks

    def block_runs(self, sel: np.ndarray | None = None, reps=(0,)):
        """The blocks of transfers `sel` by the rule (`blocks_for`; `form.StepForm.block_runs`): a
        run of one id per block, in listed order, without listing the step (it does not repeat)."""
        if np.any(np.asarray(reps) != 0):
            raise ValueError("LineMeshStep.block_runs: the step does not repeat")
        tr = np.arange(self.n_transfers, dtype=np.int64) if sel is None else np.asarray(sel, dtype=np.int64)
        b = np.tile(self.blocks_for(tr).ravel(), len(reps))
        j = np.tile(np.repeat(np.arange(len(tr), dtype=np.int64), self.per_transfer), len(reps))
        return np.repeat(np.arange(len(reps), dtype=np.int64), len(b) // max(len(reps), 1)), j, b, b + 1

    # ---- the listed form: what every other reader sees ---------------------------------------

    def explicit(self) -> Step:
        """The same step with every block listed (a `Step`), built once, within the `blocks` limit."""
        if "listed" not in self._cache:
            from ..limits import check_limit

            check_limit("blocks", self.n_moves,
                        f"schedule entries (phase {self.dim} of a hierarchical all-to-all on {'x'.join(map(str, self.dims))}, "
                        "listed block by block for a reader that cannot take its rule: a network without the "
                        "translations of the grid, or a full check on data)", "group size", self.p)
            self._cache["listed"] = make_step(self.src, self.dst, self.blocks_for(np.arange(self.n_transfers)), False)
        return self._cache["listed"]
