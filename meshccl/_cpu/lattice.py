"""Per-cell labelling of general lattices: masks, bond flags, a tolerance,
periodic axes and labelling along some axes only (``axes=``).

Every foreground cell starts as its own tree in a forest ``P`` of cell
indices (background cells hold -1; int32 whenever the indices fit); the cells are visited in raster order
and each is united (:mod:`.unionfind`) with the neighbours it joins among
those of the half-neighbourhood table (cells before it, plus the wrapped
ones of periodic axes).  Roots are the smallest index of their set, so the
forest numbered in index order (:func:`.unionfind.relabel`) gives every
component the rank of its first cell: skimage's numbering.

Whether two neighbours join: their values are equal (or within the
tolerance, :func:`.grid.close`), neither is masked out, and their bond is
open.  With equal values and no bond flags the relation is transitive, so
unions implied by the left neighbour are skipped (the "covered" offsets
and twin pairs of the table, as on the GPU); a run of cells equal to its
left neighbour extends that cell's tree by a store instead of a union.

Which table rows exist for a row of cells depends only on the row's place
along the leading axes (:func:`.grid.row_masks`), computed once a row;
along the row only its first and last cells need the last axis checked.

In parallel (:func:`label_lattice_parallel`), chunks of rows are labelled
at once, each uniting only pairs inside it (so threads never share a
tree); then the first rows of each chunk are united with the cells before
it, serially, and the roots numbered per chunk after a prefix sum of
their counts.  Periodic lattices run serially: a wrapped pair can join any
two chunks.

With counts (``label(..., return_counts=True)``) the pass that writes the
final labels also counts each label's cells (:func:`.unionfind.relabel_into_counted`
serially; in parallel each chunk adds plainly to the labels rooted in it,
and by runs, atomically, to those rooted in earlier chunks).
"""

import numpy as np
from numba import njit, prange

from .. import _tuning
from .grid import NO_BONDS, NO_MASK, NO_ROWS, close, next_row, row_masks, work_array
from .regions import numba_region
from .unionfind import atomic_add, relabel_into, relabel_into_counted, unite

#: Feature bits of the iterative kernels (their ``ft`` argument, :mod:`.iterative`).
TOL = 1       # join within a tolerance instead of on equal values
MASK = 2      # cells where the mask is 0 are background
BONDS = 4     # a neighbour pair joins only through an open bond
NO_LEFT = 8   # the last axis is not labelled along


def features(has_tol, mask, bonds, bond_rows, no_left):
    """The ``ft`` bits and the arrays of the iterative kernels (placeholders
    for the features that are off: one compiled version for them all, as
    those kernels are slow by design anyway)."""
    ft = (TOL if has_tol else 0) | (MASK if mask is not None else 0) | (
        BONDS if bonds is not None else 0) | (NO_LEFT if no_left else 0)
    return (ft, NO_MASK if mask is None else mask, NO_BONDS if bonds is None else bonds,
            NO_ROWS if bond_rows is None else np.asarray(bond_rows, dtype=np.int64))


def _rows_of(bond_rows):
    """The bond rows as the kernels take them (int64; a placeholder without bonds)."""
    return NO_ROWS if bond_rows is None else np.asarray(bond_rows, dtype=np.int64)


def label_lattice(keys, P, shape, table, has_bg, bg, tol, *, has_tol=False, periodic=0,
                  mask=None, bonds=None, bond_rows=None, no_left=False, counts=False):
    """Label flat ``keys`` (:func:`.grid.kernel_keys`) of ``shape`` into
    ``P`` (int32 or int64, same length); return the number of labels (with
    ``counts``: (N, cells per label 0..N)).

    ``periodic``: bit k set when axis k wraps around; ``mask``: flat uint8,
    0 = background; ``bonds``: (K, n) uint8, 0 = closed, row ``bond_rows[o]``
    for table row ``o`` (the last entry: the left neighbour); ``no_left``:
    the last axis is not labelled along (``table`` then holds only the
    offsets along the labelled axes).
    """
    work = work_array(P)
    _label(keys, work, np.asarray(shape, dtype=np.int64), table, bool(has_bg), bg,
           tol if has_tol else None, mask, bonds, _rows_of(bond_rows), int(periodic),
           bool(no_left))
    if counts:
        num, per_label = relabel_into_counted(work, P)
        return int(num), per_label
    return int(relabel_into(work, P))


def label_lattice_parallel(keys, L, shape, table, has_bg, bg, tol, threads, *, has_tol=False,
                           mask=None, bonds=None, bond_rows=None, no_left=False, counts=False):
    """:func:`label_lattice` (not periodic) on up to ``threads`` numba
    threads, one per ``_tuning.CPU_CHUNK_MIN_CELLS`` cells at most (serially
    below twice that, or where a numba parallel region may not run now,
    :mod:`.regions`).  Same labels (and counts)."""
    import numba

    n = keys.shape[0]
    threads = min(int(threads), numba.config.NUMBA_NUM_THREADS,
                  n // _tuning.CPU_CHUNK_MIN_CELLS)
    kw = dict(has_tol=has_tol, mask=mask, bonds=bonds, bond_rows=bond_rows, no_left=no_left,
              counts=counts)
    if threads < 2:  # (small chunks cost more than they save)
        return label_lattice(keys, L, shape, table, has_bg, bg, tol, **kw)
    shape = np.asarray(shape, dtype=np.int64)
    rows = n // int(shape[-1])
    K = max(1, min(rows, _tuning.CPU_CHUNKS_PER_THREAD * threads))
    chunks = np.linspace(0, rows, K + 1).astype(np.int64)
    back = int(-(-np.abs(table[:, 0]).max(initial=0) // int(shape[-1]))) + 1
    P = work_array(L)
    if P is L:
        P = np.empty(n, dtype=L.dtype)
    with numba_region(threads) as ok:
        if ok:
            roots = _label_parallel(keys, P, shape, table, bool(has_bg), bg,
                                    tol if has_tol else None, mask, bonds, _rows_of(bond_rows),
                                    chunks, back, bool(no_left))
            W = int(shape[-1])
            if counts:  # (the final passes are functions of their own: compiled per
                #          output dtype, not per kind of input)
                num, per_label = _labels_from_forest_counted(P, L, W, chunks, roots)
                return int(num), per_label
            _labels_from_forest(P, L, W, chunks, roots)
            return int(roots[-1])
    return label_lattice(keys, L, shape, table, has_bg, bg, tol, **kw)


@njit(cache=True, inline="always")
def _joins(values, P, i, j, tol, mask, bonds, brow, row):
    """Cell i joins neighbour j through table row ``row``.  ``tol``,
    ``mask`` and ``bonds`` may be None: numba then compiles their tests
    away (a run-time test of a flag made the per-cell loop half again as
    slow)."""
    if tol is not None:
        if not close(values[i], values[j], tol):
            return False
    elif values[i] != values[j]:
        return False  # (an equal value is foreground like cell i, unless masked)
    if bonds is not None:
        if bonds[brow[row], i] == 0:
            return False
    if mask is not None or tol is not None:
        return P[j] >= 0  # background by mask, or by value within the tolerance
    return True


@njit(cache=True)
def _init(values, P, lo, hi, has_bg, bgkey, mask):
    """Cells lo..hi-1: their own tree, or -1 for background (value or mask)."""
    for i in range(lo, hi):
        bg = has_bg and values[i] == bgkey
        if mask is not None:
            bg = bg or mask[i] == 0
        P[i] = -1 if bg else i


@njit(cache=True)
def _rows(values, P, shape, table, tol, mask, bonds, brow, periodic, row_lo, row_hi, jlo, jhi,
          no_left):
    """Unite the cells of rows row_lo..row_hi-1 (rows along the last axis)
    with the neighbours they join whose index lies in [jlo, jhi).

    Which table rows stay inside the array (or wrap) depends on the leading
    axes once per row; along the row only the first and last cells need a
    look at the last axis.  The serial labeller calls this once with the
    whole range; the parallel one once per chunk of rows (neighbours inside
    the chunk), then for the chunk borders (neighbours before the chunk).
    ``no_left``: the last axis is not labelled along (``axes=``), so cells
    never join their left / right neighbours.
    """
    ndim = shape.shape[0]
    noff = table.shape[0]
    last = ndim - 1
    lastbit = 1 << last
    W = shape[last]
    rules = tol is None and bonds is None
    span = np.empty(ndim, dtype=np.int64)  # size * stride of each axis
    stride = 1
    for k in range(ndim - 1, -1, -1):
        span[k] = stride * shape[k]
        stride = span[k]
    # step of each table row along the last axis (-1, 0, +1)
    dlast = np.empty(noff, dtype=np.int64)
    for o in range(noff):
        dlast[o] = -1 if (table[o, 1] >> last) & 1 else ((table[o, 2] >> last) & 1)
    coords = np.zeros(ndim, dtype=np.int64)  # coordinates of the row (last one unused)
    rem = row_lo
    for k in range(last - 1, -1, -1):
        coords[k] = rem % shape[k]
        rem //= shape[k]
    rows = np.empty(noff, dtype=np.int64)     # usable table rows for this row
    shift = np.empty(noff, dtype=np.int64)    # their wrap correction
    wraps = np.empty(noff, dtype=np.bool_)    # ... and whether they wrap (the corrections of
                                              # two axes of one span can cancel to 0)
    for row in range(row_lo, row_hi):
        lo, hi = row_masks(coords, shape, last)
        cnt = 0
        for o in range(noff):
            out_lo = lo & table[o, 1]
            out_hi = hi & table[o, 2]
            if (out_lo | out_hi) & ~periodic:
                continue  # off a non-periodic edge
            s_ = 0
            for k in range(last):
                if (out_lo >> k) & 1:
                    s_ += span[k]
                if (out_hi >> k) & 1:
                    s_ -= span[k]
            rows[cnt] = o
            shift[cnt] = s_
            wraps[cnt] = (out_lo | out_hi) != 0
            cnt += 1
        base = row * W
        for c in range(W):
            i = base + c
            if P[i] < 0:
                continue
            eql = False
            if no_left:
                pass
            elif c > 0 and jlo <= i - 1 < jhi:
                if _joins(values, P, i, i - 1, tol, mask, bonds, brow, noff):
                    if P[i] == i:
                        P[i] = P[i - 1]  # continue the left cell's run (an earlier cell)
                    else:
                        unite(P, i, i - 1)
                    eql = rules
            elif c == 0 and periodic & lastbit:
                jl = i + W - 1
                if jlo <= jl < jhi and _joins(values, P, i, jl, tol, mask, bonds, brow, noff):
                    unite(P, i, jl)
            for q in range(cnt):
                o = rows[q]
                j = i + table[o, 0] + shift[q]
                wrapped = wraps[q]
                d = dlast[o]
                if d == -1 and c == 0:
                    if not (periodic & lastbit):
                        continue
                    j += W
                    wrapped = True
                elif d == 1 and c == W - 1:
                    if not (periodic & lastbit):
                        continue
                    j -= W
                    wrapped = True
                if j < jlo or j >= jhi or not _joins(values, P, i, j, tol, mask, bonds, brow, o):
                    continue
                if not eql and not wrapped and P[i] == i:
                    P[i] = j  # a run's first cell: its first joining neighbour (earlier)
                    continue
                if eql and not wrapped:
                    flags = table[o, 3]
                    if flags & 1:
                        continue  # covered by the left cell
                    if not ((flags & 2) and c == 1):
                        if _joins(values, P, i, j - 1, tol, mask, bonds, brow, o):
                            continue  # twin pair
                unite(P, i, j)
        next_row(coords, shape, last)




@njit(cache=True)
def _label(values, P, shape, table, has_bg, bgkey, tol, mask, bonds, brow, periodic, no_left):
    """Every cell's tree in P (parents, roots, -1 for background)."""
    n = values.shape[0]
    zero = np.int64(0)  # (not a literal 0: _rows keeps one signature for every caller)
    _init(values, P, zero, n, has_bg, bgkey, mask)
    _rows(values, P, shape, table, tol, mask, bonds, brow, periodic, zero, n // shape[-1], zero,
          n, no_left)


@njit(cache=True)
def _chunk(values, P, shape, table, has_bg, bgkey, tol, mask, bonds, brow, chunks, no_left, k):
    """Step 1 of :func:`_label_parallel` for chunk k."""
    W = shape[-1]
    lo, hi = chunks[k] * W, chunks[k + 1] * W
    _init(values, P, lo, hi, has_bg, bgkey, mask)
    _rows(values, P, shape, table, tol, mask, bonds, brow, np.int64(0), chunks[k],
          chunks[k + 1], lo, hi, no_left)


@njit(cache=True)
def _borders(values, P, shape, table, tol, mask, bonds, brow, chunks, back, no_left):
    """Step 2 of :func:`_label_parallel`: the first ``back`` rows of each
    chunk against the cells before it."""
    W = shape[-1]
    K = chunks.shape[0] - 1
    zero = np.int64(0)
    for k in range(1, K):
        _rows(values, P, shape, table, tol, mask, bonds, brow, zero, chunks[k],
              min(chunks[k] + back, chunks[k + 1]), zero, chunks[k] * W, no_left)


@njit(cache=True)
def _count_roots(P, W, chunks, k):
    """The roots of chunk k."""
    c = 0
    for i in range(chunks[k] * W, chunks[k + 1] * W):
        if P[i] == i:
            c += 1
    return c


@njit(cache=True)
def _number_chunk(P, L, W, chunks, counts, k):
    """Chunk k's roots numbered from counts[k] + 1 on, in raster order."""
    c = counts[k]
    for i in range(chunks[k] * W, chunks[k + 1] * W):
        if P[i] == i:
            c += 1
            L[i] = c


@njit(cache=True, parallel=True)
def _label_parallel(values, P, shape, table, has_bg, bgkey, tol, mask, bonds, brow, chunks,
                    back, no_left):
    """Chunks of rows labelled at once; P holds parents.

    1. each chunk (rows chunks[k]..chunks[k+1]-1) unites only pairs inside
       it: its trees stay inside its index range, so threads never meet;
    2. serially, the first `back` rows of each chunk unite with the cells
       before the chunk (every pair is now united, or skipped because an
       implied pair was);
    3. roots are counted per chunk (a prefix sum over the chunks, returned:
       chunk k's roots get the labels counts[k] + 1 .. counts[k + 1]).
    The caller then numbers the roots and labels every cell
    (:func:`_labels_from_forest`: a small function, compiled per output
    dtype, this one is not).  Not for periodic lattices (a wrapped pair
    can join any two chunks).

    Each parallel loop's body is one call with an int64 index, and nothing
    here is np.zeros (numba makes that a parallel loop of its own): numba's
    parallel passes then compile this in seconds (docs/decisions.md:
    "compile time").
    """
    W = shape[-1]
    K = chunks.shape[0] - 1
    for k in prange(K):
        _chunk(values, P, shape, table, has_bg, bgkey, tol, mask, bonds, brow, chunks, no_left,
               np.int64(k))
    _borders(values, P, shape, table, tol, mask, bonds, brow, chunks, back, no_left)
    counts = np.empty(K + 1, dtype=np.int64)
    counts[0] = 0
    for k in prange(K):
        counts[k + 1] = _count_roots(P, W, chunks, np.int64(k))
    for k in range(K):
        counts[k + 1] += counts[k]
    return counts


@njit(cache=True)
def _cell_label(P, L, i, start):
    """Cell i's label, in a chunk whose first cell is ``start``: 0 for the
    background, its own number for a root of the chunk (numbered before),
    its parent's when that parent is in the chunk (an earlier cell, already
    labelled), else its root's (a walk into an earlier chunk; P no longer
    changes)."""
    p = P[i]
    if p < 0:
        return 0
    if p >= start:
        return L[p]  # (p == i: the root's own number)
    while P[p] != p:
        p = P[p]
    return L[p]


@njit(cache=True)
def _labels_of_chunk(P, L, W, chunks, k):
    """Every cell of chunk k takes its label (:func:`_cell_label`)."""
    start = chunks[k] * W
    for i in range(start, chunks[k + 1] * W):
        L[i] = _cell_label(P, L, i, start)


@njit(cache=True, parallel=True)
def _labels_from_forest(P, L, W, chunks, counts):
    """After :func:`_label_parallel`: the roots numbered in raster order,
    then every cell's label, chunk by chunk in parallel
    (:func:`_labels_of_chunk`)."""
    for k in prange(chunks.shape[0] - 1):
        _number_chunk(P, L, W, chunks, counts, np.int64(k))
    for k in prange(chunks.shape[0] - 1):
        _labels_of_chunk(P, L, W, chunks, np.int64(k))


@njit(cache=True)
def _count_chunk(P, L, W, chunks, counts, own, earlier, background, k):
    """:func:`_labels_of_chunk` that also counts: the labels rooted in
    chunk k (above the roots of the chunks before it) into ``own``,
    plainly; a cell whose root lies in an earlier chunk into ``earlier``,
    by runs of one label, atomically (chunks after k add there too);
    background cells into background[k]."""
    start = chunks[k] * W
    first = counts[k]  # labels above this one are rooted in this chunk
    bg = 0
    cur = 0  # the run of an earlier chunk's label being counted, and its length
    run = 0
    for i in range(start, chunks[k + 1] * W):
        lab = _cell_label(P, L, i, start)
        L[i] = lab
        if lab > first:
            own[lab] += 1
        elif lab == 0:
            bg += 1
        elif lab == cur:
            run += 1
        else:
            if run:
                atomic_add(earlier, cur, run)
            cur = lab
            run = 1
    if run:
        atomic_add(earlier, cur, run)
    background[k] = bg


@njit(cache=True, parallel=True)
def _labels_from_forest_counted(P, L, W, chunks, counts):
    """:func:`_labels_from_forest` that also counts each label's cells as it
    writes them (:func:`_count_chunk`).  Returns (N, counts), counts int64
    of length N + 1."""
    K = chunks.shape[0] - 1
    N = counts[K]
    own = np.empty(N + 1, dtype=np.int64)
    earlier = np.empty(N + 1, dtype=np.int64)
    for l in range(N + 1):
        own[l] = 0
        earlier[l] = 0
    background = np.empty(K, dtype=np.int64)
    for k in prange(K):
        _number_chunk(P, L, W, chunks, counts, np.int64(k))
    for k in prange(K):
        _count_chunk(P, L, W, chunks, counts, own, earlier, background, np.int64(k))
    for l in range(1, N + 1):
        own[l] += earlier[l]
    own[0] = background.sum()
    return N, own
