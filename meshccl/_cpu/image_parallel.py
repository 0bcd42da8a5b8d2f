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
from .image import _bits_into, _prov_into, label_plain, pack_rows, work_array
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
            # provisional labels int32 whenever they fit: _slabs is compiled
            # once for every output dtype, only the gather for each
            work = work_array(L)
            E, eo, nls, offsets, G, num = _slabs(keys, work, shape, table, bool(has_bg), bg,
                                                 cuts)
            plane = keys.shape[0] // rows
            if counts:
                per_label = _gather_slabs_counted(work, L, plane, cuts, E, eo, nls, G, offsets,
                                                  num)
                return int(num), per_label
            _gather_slabs(work, L, plane, cuts, E, eo, nls, G, offsets)
            return int(num)
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
def _gather(P, L, E, nl, G, O):
    """Final labels of a slab: provisional label l (in P) becomes
    G[O + E[l]] (in L, which may be P)."""
    for l in range(1, nl + 1):
        E[l] = G[O + E[l]]
    E[0] = 0
    for i in range(P.shape[0]):
        L[i] = E[u(P[i])]


@njit(cache=True, nogil=True)
def _gather_counted(P, L, E, nl, G, O, C):
    """:func:`_gather`, also counting the slab's cells per provisional label
    into ``C`` (nl + 1 zeros) as it writes them."""
    for l in range(1, nl + 1):
        E[l] = G[O + E[l]]
    E[0] = 0
    for i in range(P.shape[0]):
        l = u(P[i])
        L[i] = E[l]
        C[l] += 1


@njit(cache=True, nogil=True)
def _gather_of(P, L, plane, cuts, E, eo, nls, G, offsets, s):
    """:func:`_gather` for slab s."""
    lo = cuts[s] * plane
    hi = cuts[s + 1] * plane
    _gather(P[lo:hi], L[lo:hi], E[eo[s]:eo[s + 1]], nls[s], G, offsets[s])


@njit(cache=True, parallel=True)
def _gather_slabs(P, L, plane, cuts, E, eo, nls, G, offsets):
    """Each slab's final labels (:func:`_gather`), from the provisional
    labels in P (int32 whenever they fit) into L (may be P): a small
    function, compiled per output dtype."""
    for s in prange(cuts.shape[0] - 1):
        _gather_of(P, L, plane, cuts, E, eo, nls, G, offsets, np.int64(s))


@njit(cache=True, nogil=True)
def _gather_counted_of(P, L, plane, cuts, E, eo, nls, G, offsets, C, co, s):
    """:func:`_gather_counted` for slab s."""
    lo = cuts[s] * plane
    hi = cuts[s + 1] * plane
    _gather_counted(P[lo:hi], L[lo:hi], E[eo[s]:eo[s + 1]], nls[s], G, offsets[s],
                    C[co[s]:co[s + 1]])


@njit(cache=True, parallel=True)
def _gather_slabs_counted(P, L, plane, cuts, E, eo, nls, G, offsets, count):
    """:func:`_gather_slabs` that also counts each label's cells: each slab
    counts its cells per provisional label as it writes them
    (:func:`_gather_counted`), then those counts are added to their final
    labels (a pass over the tables, not the cells).  Returns the counts,
    int64 of length N + 1."""
    T = cuts.shape[0] - 1
    co = np.empty(T + 1, dtype=np.int64)  # slab s's counts: C[co[s]:co[s + 1]]
    co[0] = 0
    for s in range(T):
        co[s + 1] = co[s] + nls[s] + 1
    C = np.empty(co[T], dtype=np.int64)
    for i in range(co[T]):
        C[i] = 0
    for s in prange(T):
        _gather_counted_of(P, L, plane, cuts, E, eo, nls, G, offsets, C, co, np.int64(s))
    counts = np.empty(count + 1, dtype=np.int64)
    for i in range(count + 1):
        counts[i] = 0
    for s in range(T):
        for l in range(nls[s] + 1):
            counts[u(E[eo[s] + l])] += C[co[s] + l]
    return counts


@njit(cache=True, nogil=True)
def _slab(values, L, shape, table, has_bg, bgkey, cuts, E, eo, nls, s):
    """Step 1 of :func:`_slabs` for slab s: its provisional labels in L and
    its numbered table in E[eo[s]:eo[s + 1]] (the bit-packed scan when the
    slab is binary); returns its number of labels."""
    plane = values.shape[0] // shape[0]
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
    return number_table(Es, nl)


@njit(cache=True, nogil=True)
def _seam_of(values, L, shape, table, cuts, E, eo, offsets, G, s):
    """Step 2 of :func:`_slabs` for the seam between slabs s - 1 and s."""
    _seam(values, L, shape, table, cuts[s], E[eo[s - 1]:eo[s]], offsets[s - 1],
          E[eo[s]:eo[s + 1]], offsets[s], G)


@njit(cache=True, parallel=True)
def _slabs(values, L, shape, table, has_bg, bgkey, cuts):
    """The plain case in T = len(cuts) - 1 slabs along axis 0 (slab s: rows
    cuts[s]..cuts[s + 1] - 1), in one numba parallel region per round:

    1. each slab gets provisional labels and its numbered table from the
       serial labellers (:func:`_slab`), its table a piece of one buffer
       with room for a label per cell;
    2. the T - 1 seams unite the slabs' labels as global ids (a slab's
       offset + its label) in G, by CAS hooks (the smaller id becomes the
       root, so a component's root is its first piece in raster order);
    3. G's roots are numbered in order (skimage's numbering); the caller
       has each slab gather its final labels (:func:`_gather_slabs`).

    Returns (E, eo, nls, offsets, G, N): the slabs' tables (slab s's in
    E[eo[s]:eo[s + 1]], its provisional labels 1..nls[s], its global ids
    from offsets[s] + 1), G numbered, and the number of labels.  (numba's
    threads start each round without taking the GIL, which Python threads
    would need, one after another, to start their numba calls.)  ``L``
    holds provisional labels, int32 whenever they fit (:func:`label_slabs`).

    Each parallel loop's body is one call with an int64 index, and nothing
    here is np.zeros (numba makes that a parallel loop of its own): numba's
    parallel passes then compile this in seconds, not tens of seconds
    (docs/decisions.md: "compile time")."""
    T = cuts.shape[0] - 1
    plane = values.shape[0] // shape[0]
    eo = np.empty(T + 1, dtype=np.int64)  # slab s's table: E[eo[s]:eo[s + 1]]
    eo[0] = 0
    for s in range(T):
        eo[s + 1] = eo[s] + (cuts[s + 1] - cuts[s]) * plane + 3
    E = np.empty(eo[T], dtype=L.dtype)
    nls = np.empty(T, dtype=np.int64)
    offsets = np.empty(T + 1, dtype=np.int64)
    offsets[0] = 0
    for s in prange(T):
        offsets[s + 1] = _slab(values, L, shape, table, has_bg, bgkey, cuts, E, eo, nls,
                               np.int64(s))
    for s in range(T):
        offsets[s + 1] += offsets[s]
    N = offsets[T]
    G = np.empty(N + 1, dtype=np.int64)
    for i in range(N + 1):
        G[i] = i
    for s in prange(1, T):
        _seam_of(values, L, shape, table, cuts, E, eo, offsets, G, np.int64(s))
    count = number_table(G, N)
    return E, eo, nls, offsets, G, count
