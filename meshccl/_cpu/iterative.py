"""Hawick, Leist and Playne's iterative mesh labellers on the CPU (numba).

The default method (:mod:`.image`, :mod:`.lattice`) is one pass.  These are the
classic iterate-until-stable methods of Hawick et al. (2010, section 5),
kept for comparison and to reproduce the paper's experiments.  Every cell
starts with its own index as label (background: -1); a cell's label only
ever decreases to the smallest label among the cells it joins; when nothing
changes, every cell holds the smallest index of its component -- which is
the parent array the shared relabel path (:func:`.unionfind.relabel`) turns
into raster-order labels 1..N.  So every method gives exactly the labels of
the default method.

- ``cpu1``  alternating raster scans: forward, then backward, in place.
- ``A``     neighbour propagation: every cell takes the minimum of its
            neighbours' labels from the previous iteration (one cell per step).
- ``B``     local propagation: A's step, then each tile of the array (the
            GPU's thread-block boxes) iterated to a local fixed point with
            the labels of the cells around it frozen.
- ``C``     directional propagation: 2 * ndim sweeps per iteration, each
            carrying labels along one axis in one direction.
- ``D`` / ``cpu2``  label equivalence: scan (record for each label the
            smallest label next to it), analysis (follow each label's chain
            to its end), labelling (replace every label by its chain's end).

"Neighbours" are the full neighbourhood (both directions of every offset of
the one neighbourhood table), with the same joining rule, mask, bonds,
tolerance and periodic wrap as the default method (the same feature bits
``ft`` and placeholder arrays, :func:`features`).  Each function returns the
number of passes, counting the last one (which changes nothing), or -1 when
``max_it`` (> 0) passes all changed labels.  A, B and D take exactly as many
passes as their GPU versions (kernels/iterate.cu); C's GPU sweeps run lines
concurrently and may differ by a pass or two.
"""

import time

import numpy as np
from numba import njit

from .grid import NO_BONDS, NO_MASK, NO_ROWS, close, work_array
from .unionfind import relabel_into, relabel_into_counted

#: Feature bits of the iterative kernels (their ``ft`` argument).
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

#: full neighbourhood rows: [linear offset, axes moved -1, axes moved +1,
#: bond row, 1 if the bond is stored at the neighbour]
FULL_COLUMNS = 5


def full_table(table, ndim, no_left=False):
    """Both directions of every offset (the table rows, then the left one,
    unless ``no_left``: the last axis is not labelled along)."""
    last = ndim - 1
    rows = []
    half = [tuple(r) for r in table.tolist()] + ([] if no_left else [(-1, 1 << last, 0, 0)])
    for b, (lin, lo, hi, _flags) in enumerate(half):
        rows.append((lin, lo, hi, b, 0))     # towards the earlier cell: bond stored here
        rows.append((-lin, hi, lo, b, 1))    # towards the later cell: bond stored there
    return np.asarray(rows, dtype=np.int64).reshape(-1, FULL_COLUMNS)


@njit(cache=True)
def _masks(i, shape, coords):
    """Coordinates of cell i into ``coords``; return its (lo, hi) boundary masks."""
    rem = i
    lo = 0
    hi = 0
    for k in range(shape.shape[0] - 1, -1, -1):
        c = rem % shape[k]
        rem //= shape[k]
        coords[k] = c
        if c == 0:
            lo |= 1 << k
        if c == shape[k] - 1:
            hi |= 1 << k
    return lo, hi


@njit(cache=True)
def _neighbour(i, lo, hi, row, full, span, periodic):
    """Index of cell i's neighbour through full-table row ``row``, or -1."""
    out_lo = lo & full[row, 1]
    out_hi = hi & full[row, 2]
    if (out_lo | out_hi) & ~periodic:
        return -1
    j = i + full[row, 0]
    for k in range(span.shape[0]):
        if (out_lo >> k) & 1:
            j += span[k]
        if (out_hi >> k) & 1:
            j -= span[k]
    return j


@njit(cache=True)
def _joined(values, L, i, j, row, full, ft, tol, bonds, brow):
    if L[j] < 0:
        return False
    if ft & BONDS:
        at = j if full[row, 4] else i
        if bonds[brow[full[row, 3]], at] == 0:
            return False
    if ft & TOL:
        return close(values[i], values[j], tol)
    return values[i] == values[j]


@njit(cache=True)
def _min_label(values, L, i, shape, coords, full, span, periodic, ft, tol, bonds, brow, sel_axis, sel_sign):
    """Smallest label among cell i's joined neighbours (and its own).

    With ``sel_axis >= 0`` only neighbours moved by ``-sel_sign`` along that
    axis count (the cells "behind" i in a sweep).
    """
    lo, hi = _masks(i, shape, coords)
    best = L[i]
    for row in range(full.shape[0]):
        if sel_axis >= 0:
            want = full[row, 2] if sel_sign < 0 else full[row, 1]
            if not (want >> sel_axis) & 1:
                continue
        j = _neighbour(i, lo, hi, row, full, span, periodic)
        if j < 0 or not _joined(values, L, i, j, row, full, ft, tol, bonds, brow):
            continue
        if L[j] < best:
            best = L[j]
    return best


@njit(cache=True)
def _relax(values, L, i, shape, coords, full, span, periodic, ft, tol, bonds, brow, sel_axis, sel_sign):
    """Lower L[i] to the smallest label it joins, in place; True if it changed."""
    if L[i] < 0:
        return False
    m = _min_label(values, L, i, shape, coords, full, span, periodic, ft, tol, bonds, brow, sel_axis, sel_sign)
    if m < L[i]:
        L[i] = m
        return True
    return False


@njit(cache=True)
def _init(values, L, has_bg, bgkey, ft, mask):
    for i in range(L.shape[0]):
        bg = has_bg and values[i] == bgkey
        if ft & MASK:
            bg = bg or mask[i] == 0
        L[i] = -1 if bg else i


@njit(cache=True)
def cpu1(values, L, shape, full, span, periodic, ft, tol, bonds, brow, max_it):
    """Alternating forward / backward raster scans until stable."""
    coords = np.zeros(shape.shape[0], np.int64)
    n = L.shape[0]
    it = 0
    while True:
        it += 1
        changed = False
        for s in range(n):
            i = s if it % 2 == 1 else n - 1 - s
            if _relax(values, L, i, shape, coords, full, span, periodic, ft, tol, bonds, brow, -1, 0):
                changed = True
        if not changed:
            return it
        if max_it > 0 and it >= max_it:
            return -1


@njit(cache=True)
def kernel_a(values, L, shape, full, span, periodic, ft, tol, bonds, brow, max_it):
    """Jacobi neighbour propagation: labels move one cell per iteration."""
    coords = np.zeros(shape.shape[0], np.int64)
    new = L.copy()
    it = 0
    while True:
        it += 1
        changed = False
        for i in range(L.shape[0]):
            if L[i] < 0:
                continue
            m = _min_label(values, L, i, shape, coords, full, span, periodic, ft, tol, bonds, brow, -1, 0)
            new[i] = m
            if m < L[i]:
                changed = True
        L[:] = new
        if not changed:
            return it
        if max_it > 0 and it >= max_it:
            return -1


@njit(cache=True)
def _tile_min_label(values, L, i, shape, coords, full, span, periodic, ft, tol, bonds, brow,
                    origin, ext):
    """As :func:`_min_label` for cell i, but only over neighbours in i's tile
    (the box ``origin .. origin + ext``; never through a periodic wrap)."""
    lo, hi = _masks(i, shape, coords)
    best = L[i]
    for row in range(full.shape[0]):
        inside = True
        for k in range(shape.shape[0]):
            c = coords[k]
            if (full[row, 1] >> k) & 1:
                c -= 1
            elif (full[row, 2] >> k) & 1:
                c += 1
            if c < origin[k] or c >= origin[k] + ext[k] or c >= shape[k]:
                inside = False
                break
        if not inside:
            continue
        j = _neighbour(i, lo, hi, row, full, span, periodic)
        if j < 0 or not _joined(values, L, i, j, row, full, ft, tol, bonds, brow):
            continue
        if L[j] < best:
            best = L[j]
    return best


@njit(cache=True)
def kernel_b(values, L, shape, full, span, periodic, ft, tol, bonds, brow, max_it, tlog):
    """Kernel A's step, then propagation inside each tile until the tile is
    stable, with the cells outside it as the step left them (one GPU thread
    block per tile).  Tiles are the power-of-two boxes of the GPU mesh
    kernels (``tlog``: log2 of their extent per axis), so both backends take
    the same number of passes."""
    ndim = shape.shape[0]
    coords = np.zeros(ndim, np.int64)
    ext = np.empty(ndim, np.int64)
    tcount = np.empty(ndim, np.int64)
    stride = np.empty(ndim, np.int64)
    origin = np.zeros(ndim, np.int64)
    ntiles = 1
    cells = 1
    st = 1
    for k in range(ndim - 1, -1, -1):
        ext[k] = 1 << tlog[k]
        tcount[k] = (shape[k] + ext[k] - 1) // ext[k]
        ntiles *= tcount[k]
        cells *= ext[k]
        stride[k] = st
        st *= shape[k]
    idx = np.empty(cells, np.int64)
    n = L.shape[0]
    new = L.copy()
    it = 0
    while True:
        it += 1
        for t in range(ntiles):
            rem = t
            for k in range(ndim - 1, -1, -1):
                origin[k] = (rem % tcount[k]) * ext[k]
                rem //= tcount[k]
            m = 0
            for local in range(cells):  # the tile's cells, in raster order
                r = local
                i = 0
                ok = True
                for k in range(ndim - 1, -1, -1):
                    x = origin[k] + (r & (ext[k] - 1))
                    r >>= tlog[k]
                    if x >= shape[k]:
                        ok = False
                    i += x * stride[k]
                if ok:
                    idx[m] = i
                    m += 1
            for q in range(m):  # Kernel A's step from the previous pass
                i = idx[q]
                new[i] = L[i]
                if L[i] >= 0:
                    new[i] = _min_label(values, L, i, shape, coords, full, span, periodic,
                                        ft, tol, bonds, brow, -1, 0)
            local_change = True
            while local_change:  # then inside the tile until stable
                local_change = False
                for q in range(m):
                    i = idx[q]
                    if new[i] < 0:
                        continue
                    b = _tile_min_label(values, new, i, shape, coords, full, span, periodic,
                                        ft, tol, bonds, brow, origin, ext)
                    if b < new[i]:
                        new[i] = b
                        local_change = True
        changed = False
        for i in range(n):
            if new[i] != L[i]:
                changed = True
            L[i] = new[i]
        if not changed:
            return it
        if max_it > 0 and it >= max_it:
            return -1


@njit(cache=True)
def kernel_c(values, L, shape, full, span, periodic, ft, tol, bonds, brow, max_it):
    """Directional sweeps: for each axis and direction, carry labels along
    every line of cells in that direction; repeat until stable."""
    ndim = shape.shape[0]
    coords = np.zeros(ndim, np.int64)
    n = L.shape[0]
    it = 0
    while True:
        it += 1
        changed = False
        for axis in range(ndim):
            stride = 1
            for k in range(axis + 1, ndim):
                stride *= shape[k]
            size = shape[axis]
            for sign in (1, -1):
                # every line along `axis`: cells base + t * stride
                for base in range(n):
                    if (base // stride) % size != 0:
                        continue
                    for t in range(size):
                        step = t if sign > 0 else size - 1 - t
                        i = base + step * stride
                        if _relax(values, L, i, shape, coords, full, span, periodic, ft, tol,
                                  bonds, brow, axis, sign):
                            changed = True
        if not changed:
            return it
        if max_it > 0 and it >= max_it:
            return -1


@njit(cache=True)
def d_scanning(values, L, R, shape, full, span, periodic, ft, tol, bonds, brow):
    """Kernel D's scanning phase: lower R[label] to the smallest label next to
    any cell holding it; True if any cell saw a smaller label."""
    coords = np.zeros(shape.shape[0], np.int64)
    changed = False
    for i in range(L.shape[0]):
        if L[i] < 0:
            continue
        l1 = L[i]
        l2 = _min_label(values, L, i, shape, coords, full, span, periodic, ft, tol, bonds, brow, -1, 0)
        if l2 < l1:
            if l2 < R[l1]:
                R[l1] = l2
            changed = True
    return changed


@njit(cache=True)
def d_analysis(L, R):
    """Kernel D's analysis phase: each label's owner follows its chain to the end."""
    for i in range(L.shape[0]):
        if L[i] == i:
            ref = R[i]
            while R[ref] != ref:
                ref = R[ref]
            R[i] = ref


@njit(cache=True)
def d_labelling(L, R):
    """Kernel D's labelling phase: every cell takes the end of its label's chain."""
    for i in range(L.shape[0]):
        if L[i] >= 0:
            L[i] = R[L[i]]


def kernel_d(values, L, shape, full, span, periodic, ft, tol, bonds, brow, max_it, seconds=None):
    """Label equivalence: scanning, analysis and labelling phases per pass
    (Hawick et al.'s Kernel D; serially this is CPU II).  The phases are
    separate compiled functions so ``seconds`` (a dict) can collect the time
    of each, as the GPU version reports it."""
    R = np.arange(L.shape[0], dtype=L.dtype)
    it = 0
    while True:
        it += 1
        t0 = time.perf_counter()
        changed = d_scanning(values, L, R, shape, full, span, periodic, ft, tol, bonds, brow)
        t1 = time.perf_counter()
        d_analysis(L, R)
        t2 = time.perf_counter()
        d_labelling(L, R)
        t3 = time.perf_counter()
        if seconds is not None:
            for name, t in (("scanning", t1 - t0), ("analysis", t2 - t1), ("labelling", t3 - t2)):
                seconds[name] = seconds.get(name, 0.0) + t
        if not changed:
            return it
        if max_it > 0 and it >= max_it:
            return -1


def label_iterative(method, keys, P, shape, table, has_bg, bg, tol, *, has_tol=False,
                    periodic=0, mask=None, bonds=None, bond_rows=None, no_left=False,
                    max_iterations=None, counts=False):
    """Label flat ``keys`` (:func:`.keys.kernel_keys`) with one of Hawick et
    al.'s iterative methods; return (N, passes, seconds per phase), N being
    (N, cells per label 0..N) with ``counts`` (counted by the relabel).

    Phases: init, pass (A, B, C, cpu1) or scanning / analysis / labelling
    (D, cpu2), and relabel.  Raises :class:`meshccl.errors.NotConverged`
    after ``max_iterations`` passes that all changed labels.
    """
    from ..neighbourhood import tile_logs

    shape = np.asarray(shape, dtype=np.int64)
    ndim = shape.shape[0]
    span = np.empty(ndim, dtype=np.int64)
    stride = 1
    for k in range(ndim - 1, -1, -1):
        span[k] = stride * shape[k]
        stride = span[k]
    full = full_table(table, ndim, no_left)
    ft, mask, bonds, brow = features(has_tol, mask, bonds, bond_rows, no_left)
    if keys.dtype.kind == "u" and keys.dtype != np.uint64:
        # one key type for integers (these kernels are slow by design; a
        # version per key width cost more to compile than the copy costs)
        keys, bg = keys.astype(np.uint64), np.uint64(bg)
    out, P = P, work_array(P)  # (int32 whenever it fits: one version of each kernel)
    seconds = {}
    t0 = time.perf_counter()
    _init(keys, P, bool(has_bg), bg, ft, mask)
    seconds["init"] = time.perf_counter() - t0
    args = (keys, P, shape, full, span, int(periodic), ft, tol, bonds, brow,
            int(max_iterations or 0))
    t0 = time.perf_counter()
    if method in ("D", "cpu2"):
        passes = kernel_d(*args, seconds=seconds)
    elif method == "B":
        passes = kernel_b(*args, np.asarray(tile_logs(tuple(int(s) for s in shape)),
                                            dtype=np.int64))
    else:
        passes = {"A": kernel_a, "C": kernel_c, "cpu1": cpu1}[method](*args)
    if method not in ("D", "cpu2"):
        seconds["pass"] = time.perf_counter() - t0
    if passes < 0:
        from ..errors import NotConverged

        raise NotConverged(
            f"method={method!r} did not converge within max_iterations={max_iterations} passes")
    t0 = time.perf_counter()
    if counts:
        num, per_label = relabel_into_counted(P, out)
        num = (int(num), per_label)
    else:
        num = int(relabel_into(P, out))
    seconds["relabel"] = time.perf_counter() - t0
    return num, int(passes), seconds
