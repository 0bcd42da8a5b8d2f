"""The plain case (equal values, as skimage) on several threads: slabs and
seams.

The array is cut along axis 0 into T slabs of consecutive planes (rows, in
2-D), and everything runs in numba parallel regions, one thread a slab:

1. each slab is labelled on its own by the serial labellers of
   :mod:`.image` (the bit-packed scan when the slab is binary), which leave
   provisional labels in the cells and a table numbering them 1..n_s in
   the slab's raster order;
2. the slabs' labels become global ids (the slab's offset, the sum of the
   earlier slabs' counts, plus its label), and the T - 1 seams -- each
   slab's first plane against the last plane of the slab before -- unite
   the ids of touching cells of equal value in one small union-find ``G``
   with compare-and-swap hooks (the seams run at once); the smaller id
   becomes the root, so a component's root is its first piece in raster
   order;
3. the roots of ``G`` are numbered in order (skimage's numbering) and each
   slab gathers its cells' final labels (with counts: each slab also counts
   its cells per provisional label as it writes them, and those counts are
   added up per final label through the slabs' tables).

Where a numba parallel region may not run now (:mod:`.regions`: a child
forked after the threading layer started, or another thread inside a
region) the image is labelled serially instead; the labels are the same.
"""

import numpy as np
from numba import njit, prange

from .. import _tuning
from .grid import next_row, row_masks, u
from .image import _bits_into, _prov_into, label_plain, pack_rows
from .regions import numba_region
from .unionfind import number_table, unite_cas


def label_slabs(keys, L, shape, table, has_bg, bg, threads, counts=False):
    """Label the plain case in up to ``threads`` slabs along axis 0 (at
    least ``_tuning.CPU_SLAB_MIN_CELLS`` cells a slab); return the number of
    labels (with ``counts``: (N, cells per label 0..N)).  Serially
    (:func:`.image.label_plain`) when fewer than two slabs fit, the array
    is 1-D, or no parallel region may run now."""
    shape = np.asarray(shape, dtype=np.int64)
    rows = int(shape[0])
    T = min(int(threads), keys.shape[0] // _tuning.CPU_SLAB_MIN_CELLS, rows)
    if shape.shape[0] < 2 or T < 2:
        return label_plain(keys, L, shape, table, has_bg, bg, counts)
    cuts = np.array([rows * s // T for s in range(T + 1)], dtype=np.int64)
    with numba_region(T) as ok:
        if ok:
            if counts:
                num, per_label = _slabs_counted(keys, L, shape, table, bool(has_bg), bg, cuts)
                return int(num), per_label
            return int(_slabs(keys, L, shape, table, bool(has_bg), bg, cuts))
    return label_plain(keys, L, shape, table, has_bg, bg, counts)


@njit(cache=True, nogil=True)
def _seam(values, P, shape, table, start, Ea, Oa, Eb, Ob, G):
    """Unite (in G, over global ids: a slab's offset + its label) the cells
    of the plane ``start`` along axis 0 (the first of slab b) with their
    neighbours in the plane before it (the last of slab a): the table's rows
    that step back along axis 0, equal values only, background never.  The
    seams run at once on the slabs' threads, so the hooks are CAS."""
    ndim = shape.shape[0]
    last = ndim - 1
    lastbit = 1 << last
    W = shape[last]
    plane = 1
    for k in range(1, ndim):
        plane *= shape[k]
    coords = np.zeros(ndim, dtype=np.int64)
    coords[0] = start
    prev_a = -1
    prev_b = -1
    for r in range(plane // W):
        lo, hi = row_masks(coords, shape, last)
        base = start * plane + r * W
        for o in range(table.shape[0]):
            if not table[o, 1] & 1:
                continue
            if (lo & table[o, 1] & ~lastbit) | (hi & table[o, 2] & ~lastbit):
                continue
            d = -1 if (table[o, 1] >> last) & 1 else ((table[o, 2] >> last) & 1)
            off = table[o, 0]
            for c in range(max(0, -d), min(W, W - d)):
                i = base + c
                p = P[i]
                if p == 0:
                    continue
                j = i + off
                if values[i] != values[j]:
                    continue
                gb = Ob + Eb[p]
                ga = Oa + Ea[P[j]]
                if ga == prev_a and gb == prev_b:
                    continue
                prev_a = ga
                prev_b = gb
                unite_cas(G, ga, gb)
        next_row(coords, shape, last)


@njit(cache=True, nogil=True)
def _gather(P, E, nl, G, O):
    """Final labels of a slab: provisional label l becomes G[O + E[l]]."""
    for l in range(1, nl + 1):
        E[l] = G[O + E[l]]
    E[0] = 0
    for i in range(P.shape[0]):
        P[i] = E[u(P[i])]


@njit(cache=True, nogil=True)
def _gather_counted(P, E, nl, G, O, C):
    """:func:`_gather`, also counting the slab's cells per provisional label
    into ``C`` (nl + 1 zeros) as it writes them."""
    for l in range(1, nl + 1):
        E[l] = G[O + E[l]]
    E[0] = 0
    for i in range(P.shape[0]):
        l = u(P[i])
        P[i] = E[l]
        C[l] += 1


@njit(cache=True, parallel=True)
def _slabs(values, L, shape, table, has_bg, bgkey, cuts):
    """The plain case in T = len(cuts) - 1 slabs (:func:`_slab_tables`),
    then each slab's final labels (:func:`_gather`).  Returns the number of
    labels."""
    T = cuts.shape[0] - 1
    plane = values.shape[0] // shape[0]
    E, eo, nls, offsets, G, count = _slab_tables(values, L, shape, table, has_bg, bgkey, cuts)
    for s in prange(T):
        lo = cuts[s] * plane
        hi = cuts[s + 1] * plane
        _gather(L[lo:hi], E[eo[s]:eo[s + 1]], nls[s], G, offsets[s])
    return count


@njit(cache=True, parallel=True)
def _slabs_counted(values, L, shape, table, has_bg, bgkey, cuts):
    """:func:`_slabs` that also counts each label's cells: each slab counts
    its cells per provisional label as it writes them
    (:func:`_gather_counted`), then those counts are added to their final
    labels (a pass over the tables, not the cells).  Returns (N, counts),
    counts int64 of length N + 1."""
    T = cuts.shape[0] - 1
    plane = values.shape[0] // shape[0]
    E, eo, nls, offsets, G, count = _slab_tables(values, L, shape, table, has_bg, bgkey, cuts)
    co = np.zeros(T + 1, dtype=np.int64)  # slab s's counts: C[co[s]:co[s + 1]]
    for s in range(T):
        co[s + 1] = co[s] + nls[s] + 1
    C = np.zeros(co[T], dtype=np.int64)
    for s in prange(T):
        lo = cuts[s] * plane
        hi = cuts[s + 1] * plane
        _gather_counted(L[lo:hi], E[eo[s]:eo[s + 1]], nls[s], G, offsets[s], C[co[s]:co[s + 1]])
    counts = np.zeros(count + 1, dtype=np.int64)
    for s in range(T):
        for l in range(nls[s] + 1):
            counts[u(E[eo[s] + l])] += C[co[s] + l]
    return count, counts


@njit(cache=True, parallel=True)
def _slab_tables(values, L, shape, table, has_bg, bgkey, cuts):
    """The plain case in T = len(cuts) - 1 slabs along axis 0 (slab s: rows
    cuts[s]..cuts[s + 1] - 1), in one numba parallel region per round:

    1. each slab gets provisional labels and its numbered table from the
       serial labellers (the bit-packed one when the slab is binary), its
       table a piece of one buffer with room for a label per cell;
    2. the T - 1 seams unite the slabs' labels as global ids (a slab's
       offset + its label) in G, by CAS hooks (the smaller id becomes the
       root, so a component's root is its first piece in raster order);
    3. G's roots are numbered in order (skimage's numbering); the caller
       has each slab gather its final labels.

    Returns (E, eo, nls, offsets, G, N): the slabs' tables (slab s's in
    E[eo[s]:eo[s + 1]], its provisional labels 1..nls[s], its global ids
    from offsets[s] + 1), G numbered, and the number of labels.  (numba's
    threads start each round without taking the GIL, which Python threads
    would need, one after another, to start their numba calls.)"""
    T = cuts.shape[0] - 1
    plane = values.shape[0] // shape[0]
    eo = np.zeros(T + 1, dtype=np.int64)  # slab s's table: E[eo[s]:eo[s + 1]]
    for s in range(T):
        eo[s + 1] = eo[s] + (cuts[s + 1] - cuts[s]) * plane + 3
    E = np.empty(eo[T], dtype=L.dtype)
    nls = np.zeros(T, dtype=np.int64)
    offsets = np.zeros(T + 1, dtype=np.int64)
    for s in prange(T):
        lo = cuts[s] * plane
        hi = cuts[s + 1] * plane
        sh = shape.copy()
        sh[0] = cuts[s + 1] - cuts[s]
        Es = E[eo[s]:eo[s + 1]]
        nl = -1
        if has_bg:
            W = shape[shape.shape[0] - 1]
            M = np.empty(((hi - lo) // W) * ((W + 63) >> 6), dtype=np.uint64)
            if not pack_rows(values[lo:hi], M, W, bgkey):
                nl = _bits_into(M, L[lo:hi], sh, table, Es)
        if nl < 0:  # (a table with a label per cell never fills: Es is kept)
            _, nl = _prov_into(values[lo:hi], L[lo:hi], sh, table, has_bg, bgkey, Es)
        nls[s] = nl
        offsets[s + 1] = number_table(Es, nl)
    for s in range(T):
        offsets[s + 1] += offsets[s]
    N = offsets[T]
    G = np.arange(N + 1, dtype=np.int64)
    for s in prange(1, T):
        _seam(values, L, shape, table, cuts[s], E[eo[s - 1]:eo[s]], offsets[s - 1],
              E[eo[s]:eo[s + 1]], offsets[s], G)
    count = number_table(G, N)
    return E, eo, nls, offsets, G, count

