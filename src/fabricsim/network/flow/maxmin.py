"""Max-min fair rates of classes of flows: solved from scratch, or repaired where a change reaches.

`water_fill` solves the whole problem: every link whose fair share is no larger than the shares
its classes could get anywhere else (a local bottleneck) is saturated in the same pass, so a pass
costs a few sparse reductions and the passes are few.

`FairShare` keeps the rates between the events of a flow simulation and, when some classes start,
stop or change their cap, repairs the solution instead of re-solving it. It rests on the
characterization of max-min fairness (unique): a feasible allocation is max-min fair if and only
if every class is at its cap or has a *bottleneck*, a saturated link on which no class has a
higher rate. A change can only break that on links whose load or whose classes changed, so:

1. the classes that changed and those crossing their links (or links whose capacity left by
   higher priorities changed) are re-solved by water-filling with every other class fixed;
2. every class crossing a link whose load or largest rate moved is checked against the
   characterization (and every such link for feasibility);
3. a class that fails, and the classes sharing its links, join the re-solved set; repeat.

When the check passes everywhere a change reached, the allocation is the max-min fair one
(classes elsewhere kept their rates and their bottlenecks). The checks compare with a relative
tolerance of `TOL` (1e-9), so rates agree with a full re-solve to about that; when the re-solved
set grows past a fraction of the active classes the level is solved whole instead.

Strict priorities: level 0 is filled on the full capacity, level 1 on what level 0 leaves, ...;
a change at one level makes the links whose load moved dirty for every lower level.
"""

from __future__ import annotations

import numpy as np

from ...kernels import load


def water_fill(link_cap: np.ndarray, cls_ptr: np.ndarray, cls_links: np.ndarray, mult: np.ndarray,
               cap: np.ndarray, prio: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
    """Max-min fair rate of every class of flows, by strict priority.

    Parameters
    ----------
    link_cap : float array [links]
        Capacity of each link, bytes/s.
    cls_ptr, cls_links : int arrays
        CSR: `cls_links[cls_ptr[c]:cls_ptr[c+1]]` are the links of class c (each at least one).
    mult : float array [classes]
        Flows in each class; they all get the class's rate.
    cap : float array [classes]
        Rate cap per flow of each class, bytes/s (inf: none).
    prio : int array [classes]
        Strict priority class (0 first, on the full capacity; then 1 on what is left; ...).
    weight : float array, optional
        Per `cls_links` entry: link capacity one byte/s of the class uses (default 1).

    Returns
    -------
    float array [classes]
        Rate of each flow of each class, bytes/s.

    Examples
    --------
    Two classes share link 0; the second also crosses link 1 of half the capacity:

    >>> import numpy as np
    >>> water_fill(np.array([10.0, 2.0]), np.array([0, 1, 3]), np.array([0, 0, 1]),
    ...            np.ones(2), np.full(2, np.inf), np.zeros(2, int)).tolist()
    [8.0, 2.0]
    """
    n_c = len(mult)
    rate = np.zeros(n_c)
    if n_c == 0:
        return rate
    counts = np.diff(cls_ptr)
    ent_cls = np.repeat(np.arange(n_c), counts)
    ent_w = np.ones(len(cls_links)) if weight is None else weight
    used = np.zeros(len(link_cap))
    levels = prio[:1] if np.all(prio == prio[0]) else np.unique(prio)
    for level in levels:
        free = prio == level
        rem = link_cap - used
        while free.any():
            e_on = free[ent_cls]
            n_l = np.bincount(cls_links[e_on], weights=(mult[ent_cls] * ent_w)[e_on], minlength=len(link_cap))
            with np.errstate(divide="ignore", invalid="ignore"):
                share = np.where(n_l > 0, np.maximum(rem, 0.0) / n_l, np.inf)
            best = np.minimum.reduceat(share[cls_links], cls_ptr[:-1])  # best link share of each class
            m = np.minimum(best, cap)
            m_e = np.where(e_on, m[ent_cls], np.inf)
            link_min = np.full(len(link_cap), np.inf)
            np.minimum.at(link_min, cls_links, m_e)
            tol = 1e-12
            bottleneck = (n_l > 0) & (share <= link_min * (1 + tol))
            hit = np.zeros(n_c, dtype=bool)
            hit[ent_cls[bottleneck[cls_links] & (share[cls_links] <= m[ent_cls] * (1 + tol))]] = True
            freeze = free & (hit | (cap <= best * (1 + tol)))
            if not freeze.any():  # numerical safety: freeze the global minimum
                freeze = free & (m <= m[free].min() * (1 + 1e-9))
            rate[freeze] = m[freeze]
            e_new = freeze[ent_cls]
            rem = rem - np.bincount(cls_links[e_new], weights=((mult * rate)[ent_cls] * ent_w)[e_new],
                                    minlength=len(link_cap))
            free &= ~freeze
        used = link_cap - np.maximum(rem, 0.0)
    return rate


def _gather(ptr: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Entry positions of CSR rows `items` (concatenated)."""
    a, c = ptr[items], ptr[items + 1] - ptr[items]
    tot = int(c.sum())
    return np.repeat(a - (np.cumsum(c) - c), c) + np.arange(tot)


class FairShare:
    """Max-min fair rates of classes of flows kept across events (module doc).

    Parameters
    ----------
    link_cap : float array [links]
        Capacity of each link, bytes/s.
    c_ptr, c_links : int arrays
        CSR: the links of each class (each at least one).
    c_weight : float array or None
        Per `c_links` entry: link capacity one byte/s of the class uses (None: 1).
    c_prio : int array [classes]
        Strict priority of each class.
    c_cap : float array [classes]
        Rate cap per flow, bytes/s (inf: none); `cap` may be changed between updates.
    incremental : bool
        Repair the solution where a change reaches (False: re-solve every changed priority level
        whole, the reference).
    work : float, optional
        The simulation's size in work units (`fabricsim.kernels.load`), which picks the compiled
        or the Python build of the update on a cold cache; default: classes squared (an event
        re-shares about every class).

    Attributes
    ----------
    mult : float array [classes]
        Flows of each class sending now (the caller sets it before `update`).
    rate : float array [classes]
        Rate of each flow of each class, bytes/s.
    cap : float array [classes]
        Rate cap per flow (the caller may change it before `update`).
    """

    def __init__(self, link_cap, c_ptr, c_links, c_weight, c_prio, c_cap, incremental: bool = True,
                 work: float | None = None):
        n_c, n_l = len(c_prio), len(link_cap)
        self.link_cap = np.ascontiguousarray(link_cap, dtype=float)
        self.c_ptr = np.ascontiguousarray(c_ptr, dtype=np.int64)
        self.c_links = np.ascontiguousarray(c_links, dtype=np.int64)
        self.c_w = np.ones(len(c_links)) if c_weight is None else np.ascontiguousarray(c_weight, dtype=float)
        ent_cls = np.repeat(np.arange(n_c, dtype=np.int64), np.diff(self.c_ptr))
        order = np.argsort(self.c_links, kind="stable")
        self.l_ptr = np.concatenate([[0], np.cumsum(np.bincount(self.c_links, minlength=n_l))]).astype(np.int64)
        self.l_cls, self.l_w = ent_cls[order], self.c_w[order]
        levels = np.unique(c_prio) if n_c else np.zeros(1, np.int64)
        self.lvl = np.searchsorted(levels, c_prio).astype(np.int64)
        self.level_size = np.bincount(self.lvl, minlength=len(levels)).astype(np.int64)
        self.cap = np.array(c_cap, dtype=float)
        self.mult = np.zeros(n_c)
        self.rate = np.zeros(n_c)
        self.acc = np.zeros(n_c)  # mult x rate as accounted in `load`
        self.load = np.zeros((len(levels), n_l))  # bytes/s used per level
        self.lmax = np.zeros((len(levels), n_l))  # largest rate of a sending class per level
        self.before = np.full(n_c, np.nan)
        self.incremental = incremental
        # scratch of the compiled update (sets as buffers with epoch stamps)
        self._sc = np.zeros((9, n_c), np.int64)  # S, seen, sstamp, bstamp, bad, capped, sort, frozen, moved
        self._sl = np.zeros((11, n_l), np.int64)
        self._sl[9] = -1  # positions in the fill's heap of links: none
        self._fc = np.zeros((3, n_c))  # best, new, old
        self._fl = np.zeros((4, n_l))
        self._bc = np.zeros(n_c, bool)
        self._ep = np.zeros(4, np.int64)  # epoch, heap size, unused heap size, classes seen
        if work is None:
            work = float(n_c) * max(n_c, 1)
        # numba's compiled update, or its Python build for a small run on a cold cache (`fabricsim.kernels`)
        kernel = load("fabricsim.network.flow.maxmin_kernel", ("update",), work, "the flow model's kernels")
        self._update = kernel.update

    def link_load(self) -> np.ndarray:
        """Bytes/s each link carries now (all levels)."""
        return self.load.sum(axis=0)

    def update(self, changed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Re-establish max-min fairness after `changed` classes changed multiplicity or cap.

        Parameters
        ----------
        changed : int array
            Classes whose `mult` or `cap` was changed since the last update (unique).

        Returns
        -------
        (int array, float array)
            The classes whose rate changed, and their rates before (the caller re-times their flows).
        """
        nm = self._update(np.ascontiguousarray(changed, dtype=np.int64), len(self.level_size), self.incremental,
                          self.level_size, self.c_ptr, self.c_links, self.c_w, self.l_ptr, self.l_cls, self.l_w,
                          self.lvl, self.link_cap, self.cap, self.mult, self.rate, self.acc, self.load, self.lmax,
                          self.before, self._sc, self._sl, self._fc, self._fl, self._bc, self._ep)
        return self._sc[8, :nm].copy(), self._fc[2, :nm].copy()
