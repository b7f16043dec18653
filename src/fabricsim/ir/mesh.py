"""A mesh step: every ordered pair of distinct nodes on each line of one grid dimension trades blocks by a rule.

On a grid of `dims` (dimension 0 fastest, p nodes), the lines of dimension k (`dim`) are the
groups of d_k nodes that differ only in coordinate k; a mesh step has every node send to the
d_k - 1 others of its line at once, each message carrying blocks named by a rule. Two cases, one
statement:

- **The full mesh** (`FullMeshStep(n, block, reduce_all, by_dst)`: dims = (n,), one line over
  every node; the direct algorithms). Transfer (i, j) moves one block: j ("dst", a direct
  reduce-scatter: block j ends at rank j), i ("src", a direct all-gather) or i*n + j ("pair", a
  direct all-to-all); `reduce_all` adds it into the destination. Order: source-major (i, then j
  ascending, j != i), or destination-major with `by_dst`. Its n(n-1) transfers (4.3 billion on
  65,536 ranks) are never held: the step holds one entry, and every reader that matters at scale
  reads the rule (`index_of`, `blocks_of`, `moves_of`).
- **A grid's lines** (`LineMeshStep(dims, k)`: 1 < d_k < p; phase k of the hierarchical
  all-to-all). The "pair" rule over the free coordinates: each message carries the p / d_k blocks
  i*p + j that sit at the sender and belong on the receiver's coordinate k (i agrees with the
  sender from coordinate k on, free below; j with the sender below k, with the receiver at k, free
  above); all copy; destination-major (destination coordinate t, then sources ascending). Its
  p (d_k - 1) transfers are held as arrays (one entry each), their blocks stated (`blocks_for`):
  listed, a 128 x 128 phase would be 267 M block entries. A grid whose dimension k is the whole
  group is the full mesh ("pair", `by_dst`): the same transfers in the same order.

Readers at scale read the rule: the analytical model (per-dimension counts,
`network.analytical.mesh_route`), the sampled verification (`moves_of`), the flow model's quotient
(`network.lowering.quotient`: the full mesh's pairs by rule, a grid's transfers and `block_runs`) and
its symmetry check (`maps_channels`, `maps_blocks`), the per-node sums. Any other reader sees the
listed form (`explicit`), built on first use within the `blocks` limit: the definition, and what
tests/test_step_forms.py compares every native reader with.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .form import StatedOnce, register_form, transfer_node_sums
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


def FullMeshStep(n: int, block: str, reduce_all: bool, by_dst: bool = False) -> "MeshStep":
    """The full mesh of nodes 0..n-1 (module doc): a `MeshStep` of dims (n,).

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

    Returns
    -------
    MeshStep
    """
    if block not in RULES:
        raise ValueError(f"FullMeshStep: block must be one of {RULES}, got {block!r}")
    if int(n) < 2:
        raise ValueError("FullMeshStep: n must be >= 2")
    return MeshStep((int(n),), 0, block, reduce_all, by_dst)


def LineMeshStep(dims, dim: int) -> "MeshStep":
    """Phase `dim` of the hierarchical all-to-all on a grid of `dims` (module doc): a `MeshStep`.

    Parameters
    ----------
    dims : tuple of int
        Grid sizes, dimension 0 fastest; their product p is the group size.
    dim : int
        The dimension whose lines trade; 1 < dims[dim] < p (a whole group is a `FullMeshStep`).

    Returns
    -------
    MeshStep
    """
    dims, dim = tuple(int(d) for d in dims), int(dim)
    if not 0 <= dim < len(dims) or min(dims) < 1:
        raise ValueError(f"LineMeshStep: dimension {dim} of {dims}")
    if not 1 < dims[dim] < math.prod(dims):
        raise ValueError("LineMeshStep: the dimension must have 2 .. p - 1 positions (a whole group is a FullMeshStep)")
    return MeshStep(dims, dim, "pair", False, by_dst=True)


@register_form
@dataclass(frozen=True, eq=False)
class MeshStep(StatedOnce):
    """Every ordered pair of distinct nodes on each line of dimension `dim` of a grid of `dims`,
    moving blocks by a rule (module doc; built by `FullMeshStep` and `LineMeshStep`).

    Parameters
    ----------
    dims : tuple of int
        Grid sizes, dimension 0 fastest; their product p is the number of nodes (0..p-1). A
        dimension `dim` of all p nodes is the full mesh, held as dims (p,).
    dim : int
        The dimension whose lines trade (>= 2 positions).
    block : {"dst", "src", "pair"}
        The rule: which blocks transfer (i, j) moves (module doc); a grid's lines take "pair".
    reduce_all : bool
        Whether every transfer adds its blocks into the destination (a grid's lines copy).
    by_dst : bool
        Destination-major order (a grid's lines are listed so); else source-major.
    """

    dims: tuple
    dim: int = 0
    block: str = "pair"
    reduce_all: bool = False
    by_dst: bool = False
    _cache: dict = field(default_factory=dict, init=False, repr=False)  # pairs and the listed Step, once built

    form: ClassVar[str] = "mesh"

    def __post_init__(self):
        dims, dim = tuple(int(d) for d in self.dims), int(self.dim)
        if not 0 <= dim < len(dims) or min(dims) < 1 or dims[dim] < 2:
            raise ValueError(f"MeshStep: dimension {dim} of {dims} (lines of 2 or more nodes)")
        if self.block not in RULES:
            raise ValueError(f"MeshStep: block must be one of {RULES}, got {self.block!r}")
        if dims[dim] == math.prod(dims):
            dims, dim = (dims[dim],), 0  # one line over every node: the full mesh
        elif (self.block, bool(self.reduce_all), bool(self.by_dst)) != ("pair", False, True):
            raise ValueError("MeshStep: a grid's lines move the pair rule's blocks, copied, destination-major "
                             "(block='pair', reduce_all=False, by_dst=True)")
        object.__setattr__(self, "dims", dims)
        object.__setattr__(self, "dim", dim)

    # ---- the grid ----------------------------------------------------------------------------

    @property
    def full(self) -> bool:
        """Whether the step is the full mesh: one line over every node (dims = (n,))."""
        return len(self.dims) == 1

    @property
    def p(self) -> int:
        """Nodes of the grid (the group size)."""
        return math.prod(self.dims)

    n = node_bound = p  # the nodes of a full mesh; one past the largest schedule node the step names

    @property
    def shown_as(self) -> str:
        """What a message calls the step: the constructor of its case (`FullMeshStep`, `LineMeshStep`)."""
        return "FullMeshStep" if self.full else "LineMeshStep"

    @property
    def _strides(self) -> tuple[int, int, int]:
        """(stride of the dimension, its size, stride of the next): sk, dk, sk * dk."""
        sk = math.prod(self.dims[: self.dim])
        dk = self.dims[self.dim]
        return sk, dk, sk * dk

    def _coord(self, x: np.ndarray) -> np.ndarray:
        sk, dk, _ = self._strides
        return (np.asarray(x, dtype=np.int64) // sk) % dk

    @property
    def id_bound(self) -> int:
        """One past the largest block id the rule moves: "pair" p*p - s_k (i = p - 1 with j = p - 1 - s_k,
        the largest j whose coordinate k differs from i's; the full mesh: (n-1)*n + n-2), else n."""
        return self.p * self.p - self._strides[0] if self.block == "pair" else self.p

    @property
    def per_transfer(self) -> int:
        """Blocks each transfer moves: p / d_k (the full mesh: 1)."""
        return self.p // self.dims[self.dim]

    # ---- counts and the transfers --------------------------------------------------------------

    @property
    def n_transfers(self) -> int:
        """Transfers in the step: p (d_k - 1) (the full mesh: n(n-1))."""
        return self.p * (self.dims[self.dim] - 1)

    @property
    def n_moves(self) -> int:
        """Block moves: p / d_k per transfer."""
        return self.n_transfers * self.per_transfer

    @property
    def stored_entries(self) -> int:
        """Entries the step holds: the full mesh none listed (1: the pattern is stated), a grid's
        lines one per transfer (their blocks are stated)."""
        return 1 if self.full else self.n_transfers

    def _pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """A grid's transfers (src, dst), in the listed order, built once (the full mesh: listed form)."""
        if self.full:
            return self.explicit().src, self.explicit().dst
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
        """Reduce flag of each transfer (`reduce_all`)."""
        return self.explicit().reduce if self.full else np.full(self.n_transfers, self.reduce_all)

    @property
    def blocks_per_transfer(self) -> np.ndarray:
        """Blocks each transfer moves (p / d_k each)."""
        if self.full:
            return self.explicit().blocks_per_transfer
        return np.full(self.n_transfers, self.per_transfer, dtype=np.int64)

    @property
    def ptr(self) -> np.ndarray:
        """CSR offsets of each transfer's entries in the listed form."""
        return self.explicit().ptr if self.full else np.arange(self.n_transfers + 1, dtype=np.int64) * self.per_transfer

    @property
    def first_block(self) -> np.ndarray:
        """The first block id of each transfer (its listed form's first entry)."""
        if self.full:
            return self.explicit().first_block
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
        if self.full:
            a, b = (dst, src) if self.by_dst else (src, dst)
            a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
            return a * (self.n - 1) + b - (b > a)
        sk, dk, sk1 = self._strides
        src = np.asarray(src, dtype=np.int64)
        t, c = self._coord(dst), self._coord(src)
        r = (src // sk1) * sk * (dk - 1) + (c - (c > t)) * sk + src % sk
        return t * (self.p - self.per_transfer) + r

    # ---- the blocks, by the rule --------------------------------------------------------------

    def blocks_of(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """The block a full mesh's transfer (src, dst) moves, for arrays of pairs (int64)."""
        if self.block == "dst":
            return np.asarray(dst, dtype=np.int64)
        if self.block == "src":
            return np.asarray(src, dtype=np.int64)
        return np.asarray(src, dtype=np.int64) * self.n + dst

    def blocks_for(self, tr: np.ndarray, first_only: bool = False) -> np.ndarray:
        """The blocks of transfers `tr` of the "pair" rule, in their listed order.

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

    def add_node_sums(self, block_frac: float, side: str, factors: tuple, out: np.ndarray,
                      reduce_only: bool = False) -> np.ndarray:
        """Per-node sums without listing the step (`Step.add_node_sums`): the full mesh's n - 1 equal
        transfers at each of nodes 0..n-1 added one by one, a grid's from its arrays
        (`form.transfer_node_sums`), so the floats equal the listed form's."""
        if not self.full:
            return transfer_node_sums(self, block_frac, side, factors, out, reduce_only)
        if self.n > 1 and (self.reduce_all or not reduce_only):
            x = 1 * block_frac  # one block per transfer
            for f in factors:
                x = x * f
            start = out[: self.n]
            for v in np.unique(start):  # few distinct running sums: one sequential sum each
                start[start == v] = np.cumsum(np.concatenate([[v], np.full(self.n - 1, x)]))[-1]
        return out

    def structure_problem(self, n_nodes: int) -> str | None:
        """A node outside 0..n_nodes-1 (`form.StepForm.structure_problem`): from `node_bound`; no
        transfer sends to itself."""
        return f"transfer names a node outside 0..{n_nodes - 1}" if self.node_bound > n_nodes else None

    def first_bad_rep(self, nblocks: int) -> int | None:
        """0 when the rule moves an id outside 0..nblocks-1 (`form.StepForm.first_bad_rep`: from `id_bound`)."""
        return 0 if self.id_bound > nblocks else None

    def sampled_moves(self, sample: np.ndarray, reps: int) -> tuple[np.ndarray, ...]:
        """The chosen blocks' moves by the rule (`moves_of`, `reduce_all`; `form.StepForm.sampled_moves`),
        never the listed form."""
        col, src, dst, pos = self.moves_of(sample)
        if reps < 1:
            col, src, dst, pos = col[:0], src[:0], dst[:0], pos[:0]
        return np.zeros(len(col), np.int64), src, dst, np.full(len(col), self.reduce_all), col, pos

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
            A full mesh's "dst" or "src" block b in 0..n-1 moves n-1 times (into b, or out of b).
            A "pair" block i*p + j moves once, when its coordinate k differs at i and j: from the
            node with j's coordinates below k and i's from k on, to the same node at j's coordinate
            k (the full mesh: from i to j). The entry position is its place in the listed form's
            `blocks`.
        """
        blocks = np.asarray(blocks, dtype=np.int64)
        p = self.p
        if self.block != "pair":
            c = np.flatnonzero((blocks >= 0) & (blocks < p))
            b, other = ordered_pairs(p, blocks[c])
            col = np.repeat(c, p - 1)
            src, dst = (other, b) if self.block == "dst" else (b, other)
            return col, src, dst, self.index_of(src, dst)
        sk, dk, sk1 = self._strides
        i, j = blocks // p, blocks % p
        ok = (blocks >= 0) & (blocks < p * p)
        ci, cj = self._coord(i), self._coord(j)
        col = np.flatnonzero(ok & (ci != cj))
        i, j, ci, cj = i[col], j[col], ci[col], cj[col]
        src = i - i % sk + j % sk
        dst = src + (cj - ci) * sk
        within = (i % sk) * (p // sk1) + j // sk1
        return col, src, dst, self.index_of(src, dst) * self.per_transfer + within

    # ---- symmetry (`form.StepForm.maps_channels`, `maps_blocks`) ------------------------------

    def is_translation(self, sig: np.ndarray) -> bool:
        """Whether the node map `sig` (schedule node -> schedule node) translates the grid: the same
        coordinate offset at every node."""
        sig = np.asarray(sig, dtype=np.int64)[: self.p]
        if len(sig) < self.p:
            return False
        m = np.arange(self.p, dtype=np.int64)
        radix = np.cumprod((1,) + self.dims[:-1])
        dims = np.asarray(self.dims, dtype=np.int64)
        off = (sig[:, None] // radix % dims - m[:, None] // radix % dims) % dims
        return bool(np.all(off == off[0]))

    def maps_channels(self, sig: np.ndarray) -> bool:
        """Whether `sig` maps every transfer onto a transfer: for the full mesh, any permutation of
        nodes 0..n-1 (pair (i, j) onto (sig i, sig j)); for a grid's lines, a translation of the grid
        (`is_translation`: each line onto a line). All transfers are equal in reduce flag and blocks."""
        if not self.full:
            return self.is_translation(sig)
        return len(sig) >= self.n and bool(np.array_equal(np.sort(sig[: self.n]), np.arange(self.n)))

    def maps_blocks(self, sig: np.ndarray, pi, nblocks: int) -> bool:
        """Whether `pi` maps the rule's blocks of (i, j) onto those of (sig i, sig j): "pair" when `pi` is
        the all-to-all's map i*p + j -> sig(i)*p + sig(j) over p*p blocks; "dst" j onto sig(j) and
        "src" i onto sig(i), pi = sig on 0..n-1."""
        if self.block == "pair":
            return getattr(pi, "kind", "") == "all-to-all" and self.p * self.p == nblocks
        return bool(np.array_equal(pi(np.arange(self.n, dtype=np.int64)), sig[: self.n]))

    def block_runs(self, sel: np.ndarray | None = None, reps=(0,)):
        """The blocks of transfers `sel` (`form.StepForm.block_runs`): a grid's by the rule
        (`blocks_for`: a run of one id per block, in listed order, without listing the step); the
        full mesh's from its listed form."""
        if self.full:
            return super().block_runs(sel, reps)
        if np.any(np.asarray(reps) != 0):
            raise ValueError("LineMeshStep.block_runs: the step does not repeat")
        tr = np.arange(self.n_transfers, dtype=np.int64) if sel is None else np.asarray(sel, dtype=np.int64)
        b = np.tile(self.blocks_for(tr).ravel(), len(reps))
        j = np.tile(np.repeat(np.arange(len(tr), dtype=np.int64), self.per_transfer), len(reps))
        return np.repeat(np.arange(len(reps), dtype=np.int64), len(b) // max(len(reps), 1)), j, b, b + 1

    # ---- the listed form: what every other reader sees ---------------------------------------

    def explicit(self) -> Step:
        """The same step with every transfer listed (a `Step`), built once, within the `blocks` limit."""
        if "listed" not in self._cache:
            from ..limits import check_limit

            if self.full:
                check_limit("blocks", self.n_transfers,
                            f"schedule entries (a full mesh of {self.n} ranks, listed transfer by transfer for a "
                            "reader that cannot take it whole: a group or network without the translations of a "
                            "torus, ring or mesh, or a full check on data)", "group size", self.n)
                a, b = ordered_pairs(self.n)
                src, dst = (b, a) if self.by_dst else (a, b)
                self._cache["listed"] = make_step(src, dst, self.blocks_of(src, dst), self.reduce_all)
            else:
                check_limit("blocks", self.n_moves,
                            f"schedule entries (phase {self.dim} of a hierarchical all-to-all on "
                            f"{'x'.join(map(str, self.dims))}, listed block by block for a reader that cannot take "
                            "its rule: a network without the translations of the grid, or a full check on data)",
                            "group size", self.p)
                self._cache["listed"] = make_step(self.src, self.dst, self.blocks_for(np.arange(self.n_transfers)),
                                                  False)
        return self._cache["listed"]
