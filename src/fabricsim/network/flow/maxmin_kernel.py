"""Compiled core of `network.flow.maxmin.FairShare.update`: the repair of max-min fairness (see that
module's doc for the method and why it is exact).

One call handles every priority level for a batch of changed classes. The work per event is a
loop over a few classes and their links, where numpy's per-call overhead dominated (profiled on
the 256-rank ring + all-to-all: about 2 ms of small numpy calls per event); numba compiles it.
Sets live in preallocated buffers with epoch stamps (`ep`), so nothing is cleared per call.

*Inline*: adding an item to such a set is written out where it happens (stamp, append, count)
instead of calling a helper: numba increments and decrements the reference count of every array
passed to a compiled call with atomic instructions, and the helper's calls were most of an
update's time (a 64-GPU training run: 395 atomic pairs an update, 18 us -> 9 us per update).
"""

from __future__ import annotations

import numpy as np

from ...kernels import kernel, sibling
from .leaf import leaf

# the heap helper of the event loop's kernels, from the same build (compiled or Python) as this module
_K = sibling(__name__, "fabricsim.network.flow.kernel")
_set_key, _stable_order = _K._set_key, _K.stable_order

TOL = 1e-9  # relative tolerance of the bottleneck checks
TIE = 1e-12  # shares this close (relative) saturate together in a pass
PASSES = 4  # passes of pass-by-pass filling before the heap takes the rest
WHOLE = 0.25  # solve a level whole when the repaired set exceeds this share of its classes


@leaf
def _epoch(ep):
    ep[0] += 1
    return ep[0]


@leaf
def _resid(k, lk, load, link_cap):
    """Capacity the levels above k leave on link lk."""
    r = link_cap[lk]
    for j in range(k):
        r -= load[j, lk]
    return r


@leaf
def _refresh(lk, k, l_ptr, l_cls, l_w, lvl, mult, rate, acc, load, lmax):
    """Level k's load and largest sending rate on link lk, from the classes crossing it."""
    s = 0.0
    m = 0.0
    for e in range(l_ptr[lk], l_ptr[lk + 1]):
        c = l_cls[e]
        if lvl[c] == k:
            s += acc[c] * l_w[e]
            if mult[c] > 0 and rate[c] > m:
                m = rate[c]
    load[k, lk] = s
    lmax[k, lk] = m


@leaf
def _valid(c, k, c_ptr, c_links, link_cap, cap, rate, load, lmax):
    """Whether sending class c is at its cap or has a bottleneck: a saturated link on which no
    class of its level has a higher rate."""
    r = rate[c]
    if r >= cap[c] * (1 - TOL):
        return True
    for e in range(c_ptr[c], c_ptr[c + 1]):
        lk = c_links[e]
        if _resid(k, lk, load, link_cap) - load[k, lk] <= TOL * link_cap[lk] and r >= lmax[k, lk] * (1 - TOL):
            return True
    return False


@leaf
def _open(S, ns, k, c_ptr, c_links, c_w, link_cap, mult, rate, acc, load, before, seen, n_seen, lstamp, lbuf, room,
          nfree, nfc, free, new, el):
    """Open the fill of classes S[:ns] (`_fill`): note each class's rate before (first re-solve
    in this update), list their links once (lbuf, stamped el) with the room the other classes
    leave and the free classes' demand. Returns (links, free classes)."""
    nl = 0
    for i in range(ns):
        c = S[i]
        if before[c] != before[c]:  # NaN: first re-solve of c in this update
            before[c] = rate[c]
            seen[n_seen[0]] = c
            n_seen[0] += 1
        for e in range(c_ptr[c], c_ptr[c + 1]):
            lk = c_links[e]
            if lstamp[lk] != el:  # a new link of the set: what it has left, no free demand yet
                room[lk] = _resid(k, lk, load, link_cap) - load[k, lk]
                nfree[lk] = 0.0
                nfc[lk] = 0
                lstamp[lk] = el  # and it joins the set (lbuf, nl) once (module doc: inline)
                lbuf[nl] = lk
                nl += 1
    nf = 0
    for i in range(ns):
        c = S[i]
        free[c] = mult[c] > 0
        new[c] = 0.0
        for e in range(c_ptr[c], c_ptr[c + 1]):
            lk = c_links[e]
            room[lk] += acc[c] * c_w[e]  # the set's old use is given back
            if free[c]:
                nfree[lk] += mult[c] * c_w[e]
                nfc[lk] += 1
        if free[c]:
            nf += 1
    return nl, nf


@leaf
def _fill(S, ns, k, c_ptr, c_links, c_w, l_ptr, l_cls, l_w, lvl, link_cap, cap, mult, rate, acc, load, lmax,
          before, seen, n_seen, lstamp, lbuf, room, nfree, share, nfc, hpos, heap, free, new, tstamp, tbuf, ep,
          lmin, best, sc):
    """Water-fill classes S[:ns] of level k with every other class fixed. Writes their rates,
    refreshes the links whose use moved; returns how many (listed in tbuf).

    Progressive filling with a heap of links keyed by fair share (capacity left / demand of the
    classes not yet frozen): the smallest share is the next bottleneck; its classes freeze at it
    (or earlier at their cap) and the shares of their other links move up. Each class is frozen
    once, so the cost is O(entries x log links) however many distinct rates there are (the
    pass-by-pass filling of `water_fill` took hundreds of passes on an all-to-all beside a ring).
    A few such passes run first: when the rates are few (a broadcast's star, a symmetric
    collective) they settle everything at O(entries) a pass, cheaper than the heap."""
    nl, nf = _open(S, ns, k, c_ptr, c_links, c_w, link_cap, mult, rate, acc, load, before, seen, n_seen, lstamp,
                   lbuf, room, nfree, nfc, free, new, _epoch(ep))
    n_capped = 0
    for _ in range(PASSES):
        if nf == 0:
            break
        nf -= _pass(S, ns, c_ptr, c_links, c_w, cap, mult, room, nfree, nfc, share, lmin, best, free, new, lbuf, nl,
                    link_cap, hpos, heap, sc[7], ep[2:3])
    capped = sc[5]  # the free capped classes, by cap (stable: numpy's mergesort order)
    for i in range(ns):
        c = S[i]
        if free[c] and cap[c] < np.inf:
            capped[n_capped] = c
            n_capped += 1
    _stable_order(capped, n_capped, cap, sc[6])
    if nf == 0:
        nl = 0  # nothing left to fill
    hsize = ep[1:2]  # the heap of links starts empty
    hsize[0] = 0
    for j in range(nl):
        lk = lbuf[j]
        if nfc[lk] > 0:
            _set_key(lk, _share(lk, room, nfree, link_cap), share, hpos, heap, hsize)
    ic = 0
    while True:
        lam = share[heap[0]] if hsize[0] > 0 else np.inf
        while ic < n_capped and not free[capped[ic]]:
            ic += 1
        if ic < n_capped and cap[capped[ic]] <= lam:  # a cap binds first
            c = capped[ic]
            ic += 1
            _freeze(c, cap[c], -1, c_ptr, c_links, c_w, mult, room, nfree, nfc, share, hpos, heap, hsize, link_cap,
                    free, new)
            continue
        if hsize[0] == 0:
            break
        lk = heap[0]
        _set_key(lk, np.inf, share, hpos, heap, hsize)
        for e in range(l_ptr[lk], l_ptr[lk + 1]):  # its free classes freeze at its share
            c = l_cls[e]
            if free[c]:
                _freeze(c, lam, lk, c_ptr, c_links, c_w, mult, room, nfree, nfc, share, hpos, heap, hsize, link_cap,
                        free, new)
    nt = 0
    et = _epoch(ep)
    for i in range(ns):
        c = S[i]
        r = new[c] if mult[c] > 0 else 0.0
        a = mult[c] * r
        if a != acc[c] or r != rate[c]:
            rate[c] = r
            acc[c] = a
            for e in range(c_ptr[c], c_ptr[c + 1]):
                lk = c_links[e]
                if tstamp[lk] != et:  # add lk to the set (tbuf, nt) once (module doc: inline)
                    tstamp[lk] = et
                    tbuf[nt] = lk
                    nt += 1
    for j in range(nt):
        _refresh(tbuf[j], k, l_ptr, l_cls, l_w, lvl, mult, rate, acc, load, lmax)
    return nt


@leaf
def _pass(S, ns, c_ptr, c_links, c_w, cap, mult, room, nfree, nfc, share, lmin, best, free, new, lbuf, nl, link_cap,
          hpos, heap, fz, no_heap):
    """One pass of filling: every link that is a local bottleneck (its share no larger than what
    its free classes get anywhere else) saturates, as `flow.maxmin.water_fill` does; returns how many
    classes froze."""
    for j in range(nl):
        lk = lbuf[j]
        share[lk] = _share(lk, room, nfree, link_cap) if nfc[lk] > 0 else np.inf
        lmin[lk] = np.inf
    for i in range(ns):
        c = S[i]
        if free[c]:
            b = np.inf
            for e in range(c_ptr[c], c_ptr[c + 1]):
                b = min(b, share[c_links[e]])
            best[c] = b
            m = min(b, cap[c])
            for e in range(c_ptr[c], c_ptr[c + 1]):
                lk = c_links[e]
                if m < lmin[lk]:
                    lmin[lk] = m
    frozen = 0
    for i in range(ns):
        c = S[i]
        if not free[c]:
            continue
        m = min(best[c], cap[c])
        hit = cap[c] <= best[c] * (1 + TIE)
        if not hit:
            for e in range(c_ptr[c], c_ptr[c + 1]):
                lk = c_links[e]
                if share[lk] <= lmin[lk] * (1 + TIE) and share[lk] <= m * (1 + TIE):
                    hit = True
                    break
        if hit:
            fz[frozen] = c
            frozen += 1
    for i in range(frozen):  # they freeze together, then leave their links' free demand
        c = fz[i]
        _freeze(c, min(best[c], cap[c]), -2, c_ptr, c_links, c_w, mult, room, nfree, nfc, share, hpos, heap, no_heap,
                link_cap, free, new)
    return frozen


@leaf
def _share(lk, room, nfree, link_cap):
    """Fair share of link lk for its free classes; room within TOL of the capacity is rounding
    left by sums taken in another order, none."""
    rm = room[lk] if room[lk] > TOL * link_cap[lk] else 0.0
    return rm / nfree[lk]


@leaf
def _freeze(c, r, popped, c_ptr, c_links, c_w, mult, room, nfree, nfc, share, hpos, heap, hsize, link_cap, free, new):
    """Class c freezes at rate r: its links' room and free demand drop, their shares re-keyed in
    the heap (popped: the link just taken from it; -2: no heap, a pass of filling)."""
    free[c] = False
    new[c] = r
    for e in range(c_ptr[c], c_ptr[c + 1]):
        lk = c_links[e]
        room[lk] -= mult[c] * r * c_w[e]
        nfree[lk] -= mult[c] * c_w[e]
        nfc[lk] -= 1
        if popped != -2 and lk != popped:
            _set_key(lk, _share(lk, room, nfree, link_cap) if nfc[lk] > 0 else np.inf, share, hpos, heap, hsize)


@leaf
def _take(cls, n, k, lvl, c_ptr, c_links, sstamp, es, S, ns, lstamp, el, lbuf, nl):
    """Add the first n classes of `cls` that are of level k to the set (S, ns) and their links to
    (lbuf, nl), each once; returns (ns, nl)."""
    for i in range(n):
        c = cls[i]
        if lvl[c] != k:
            continue
        if sstamp[c] != es:  # add c to the set (S, ns) once (module doc: inline)
            sstamp[c] = es
            S[ns] = c
            ns += 1
        for e in range(c_ptr[c], c_ptr[c + 1]):
            lk = c_links[e]
            if lstamp[lk] != el:  # add lk to the set (lbuf, nl) once (module doc: inline)
                lstamp[lk] = el
                lbuf[nl] = lk
                nl += 1
    return ns, nl


@leaf
def _add_level_classes(lk, k, l_ptr, l_cls, lvl, mult, acc, sstamp, es, S, ns):
    """Add link lk's classes of level k that send or hold capacity to the set (S, ns)."""
    for e in range(l_ptr[lk], l_ptr[lk + 1]):
        d = l_cls[e]
        if lvl[d] == k and (mult[d] > 0 or acc[d] != 0) and sstamp[d] != es:
            sstamp[d] = es
            S[ns] = d
            ns += 1
    return ns


@leaf
def _check(k, abuf, na, l_ptr, l_cls, lvl, c_ptr, c_links, link_cap, cap, mult, rate, load, lmax, bstamp, eb, bad):
    """Check every sending class of level k on the links abuf[:na] (whose use moved) against the
    characterization, and each such link for feasibility; the classes that fail go to `bad`,
    each once (stamped `eb`). Returns how many."""
    nb = 0
    for j in range(na):
        lk = abuf[j]
        feasible = load[k, lk] <= _resid(k, lk, load, link_cap) + TOL * link_cap[lk]
        for e in range(l_ptr[lk], l_ptr[lk + 1]):
            d = l_cls[e]
            if lvl[d] == k and mult[d] > 0 and bstamp[d] != eb:
                bstamp[d] = eb
                if not feasible or not _valid(d, k, c_ptr, c_links, link_cap, cap, rate, load, lmax):
                    bad[nb] = d
                    nb += 1
    return nb


@leaf
def _widen(cls, n, extra, ne, k, lvl, c_ptr, c_links, l_ptr, l_cls, mult, acc, sstamp, es, S, ns, lstamp, el, lbuf):
    """Add to the set (S, ns) the classes cls[:n] of level k and every class of level k that sends
    or holds capacity on their links or on the links extra[:ne] (each link once, stamped el);
    returns the set's new size."""
    ns, nl = _take(cls, n, k, lvl, c_ptr, c_links, sstamp, es, S, ns, lstamp, el, lbuf, 0)
    for j in range(ne):
        lk = extra[j]
        if lstamp[lk] != el:  # add lk to the set (lbuf, nl) once (module doc: inline)
            lstamp[lk] = el
            lbuf[nl] = lk
            nl += 1
    for j in range(nl):
        ns = _add_level_classes(lbuf[j], k, l_ptr, l_cls, lvl, mult, acc, sstamp, es, S, ns)
    return ns


@leaf
def update(changed, n_levels, incremental, level_size, c_ptr, c_links, c_w, l_ptr, l_cls, l_w, lvl, link_cap,
           cap, mult, rate, acc, load, lmax, before, scratch_c, scratch_l, fscratch_c, fscratch_l, bscratch_c, ep):
    """Re-establish max-min fairness after `changed` classes changed multiplicity or cap.

    Returns how many classes' rates changed: those classes in scratch_c[8], their rates before in
    fscratch_c[2] (no array is allocated: numba then counts no references, `network.flow.leaf`).
    Scratch: scratch_c rows S, seen, sstamp, bstamp, bad, capped, sort buffer, frozen, moved;
    fscratch_c rows best, new, old; ep: [epoch, heap size, unused heap size, classes seen]."""
    S, seen, sstamp, bstamp = scratch_c[0], scratch_c[1], scratch_c[2], scratch_c[3]
    bad = scratch_c[4]
    lstamp, lbuf, tstamp, tbuf, dstamp, dbuf, astamp, abuf = (scratch_l[0], scratch_l[1], scratch_l[2], scratch_l[3],
                                                              scratch_l[4], scratch_l[5], scratch_l[6], scratch_l[7])
    nfc, hpos, heap = scratch_l[8], scratch_l[9], scratch_l[10]
    new = fscratch_c[1]
    room, nfree, share = fscratch_l[0], fscratch_l[1], fscratch_l[2]
    free = bscratch_c
    n_seen = ep[3:4]
    n_seen[0] = 0
    nd = 0  # dirty links: their capacity left for lower levels moved
    for k in range(n_levels):
        has = nd > 0
        for c in changed:
            if lvl[c] == k:
                has = True
                break
        if not has:
            continue
        es = _epoch(ep)
        ns = 0
        whole = not incremental
        nk = 0
        for c in changed:
            if lvl[c] == k:
                nk += 1
        if nk > WHOLE * level_size[k]:  # a change this wide: solve the level whole
            whole = True
        if not whole:  # the changed classes, and every class on their links or on dirty links
            ns = _widen(changed, len(changed), dbuf, nd, k, lvl, c_ptr, c_links, l_ptr, l_cls, mult, acc, sstamp, es, S,
                        ns, lstamp, _epoch(ep), lbuf)
        ea = _epoch(ep)  # links whose use moved at this level (checked; dirty for the next)
        na = 0
        for j in range(nd):
            lk = dbuf[j]
            astamp[lk] = ea
            abuf[na] = lk
            na += 1
        while True:
            if whole or ns > WHOLE * level_size[k] + 64:  # every class of the level that sends or holds capacity
                ns = 0
                for c in range(len(lvl)):
                    if lvl[c] == k and (mult[c] > 0 or acc[c] != 0):
                        S[ns] = c
                        ns += 1
                whole = True
            nt = _fill(S, ns, k, c_ptr, c_links, c_w, l_ptr, l_cls, l_w, lvl, link_cap, cap, mult, rate, acc, load,
                       lmax, before, seen, n_seen, lstamp, lbuf, room, nfree, share, nfc, hpos, heap, free, new,
                       tstamp, tbuf, ep, fscratch_l[3], fscratch_c[0], scratch_c)
            for j in range(nt):
                lk = tbuf[j]
                if astamp[lk] != ea:  # add lk to the set (abuf, na) once (module doc: inline)
                    astamp[lk] = ea
                    abuf[na] = lk
                    na += 1
            if whole:
                break
            nb = _check(k, abuf, na, l_ptr, l_cls, lvl, c_ptr, c_links, link_cap, cap, mult, rate, load, lmax,
                        bstamp, _epoch(ep), bad)
            if nb == 0:
                break
            before_ns = ns
            ns = _widen(bad, nb, dbuf, 0, k, lvl, c_ptr, c_links, l_ptr, l_cls, mult, acc, sstamp, es, S, ns, lstamp,
                        _epoch(ep), lbuf)
            if ns == before_ns:
                whole = True
        ed = _epoch(ep)
        nd = 0
        for j in range(na):
            lk = abuf[j]
            if dstamp[lk] != ed:  # add lk to the set (dbuf, nd) once (module doc: inline)
                dstamp[lk] = ed
                dbuf[nd] = lk
                nd += 1
    return _moved(seen, n_seen[0], rate, before, scratch_c[8], fscratch_c[2])


@leaf
def _moved(seen, n_seen, rate, before, moved, old):
    """The classes re-solved whose rate changed (into `moved`, in order) and their rates before
    (`old`); returns how many. Forgets every re-solved class's rate before (NaN) for the next
    update."""
    j = 0
    for i in range(n_seen):
        c = seen[i]
        if rate[c] != before[c]:
            moved[j] = c
            old[j] = before[c]
            j += 1
        before[c] = np.nan
    return j
