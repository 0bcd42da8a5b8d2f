"""Mesh labelling on the CPU, mirroring ``kernels/mesh.cu``.

Same neighbourhood table, same union-find core (:mod:`.unionfind`), same
joining rule and the same skipped pairs, run serially in raster order: every
foreground cell unites with its left neighbour and with the other neighbours
of the table that join it (wrapping around periodic axes), except the pairs
already implied through an equal left neighbour ("covered" offsets and equal
twin pairs, see the essay of ``kernels/mesh.cu``).  Those rules need a
transitive join and open bonds, so a tolerance or a bond array turns them
off, as on the GPU.  Labels are identical to the GPU's bit for bit.
"""

import numpy as np
from numba import njit

from .unionfind import relabel, unite


@njit(cache=True, inline="always")
def _joins(values, P, i, j, tol, mask, bonds, brow, row):
    """Cell i joins neighbour j through table row ``row``.  ``tol`` and
    ``bonds`` may be None: numba then compiles the test away."""
    if tol is not None:
        if abs(np.float64(values[i]) - np.float64(values[j])) > tol:
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
def _label(values, P, shape, table, has_bg, bgkey, tol, mask, bonds, brow, periodic):
    n = values.shape[0]
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
    # 1. every cell is its own tree; background (value or mask) is -1
    for i in range(n):
        bg = has_bg and values[i] == bgkey
        if mask is not None:
            bg = bg or mask[i] == 0
        P[i] = -1 if bg else i
    # 2. unions, row by row along the last axis.  Which table rows stay inside
    # the array (or wrap) depends on the leading axes once per row; along the
    # row only the first and last cells need a look at the last axis.
    coords = np.zeros(ndim, dtype=np.int64)  # coordinates of the row (last one unused)
    rows = np.empty(noff, dtype=np.int64)     # usable table rows for this row
    shift = np.empty(noff, dtype=np.int64)    # their wrap correction (0: no wrap)
    for row in range(n // W):
        lo = 0
        hi = 0
        for k in range(last):
            if coords[k] == 0:
                lo |= 1 << k
            if coords[k] == shape[k] - 1:
                hi |= 1 << k
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
            cnt += 1
        base = row * W
        for c in range(W):
            i = base + c
            if P[i] < 0:
                continue
            eql = False
            if c > 0:
                if _joins(values, P, i, i - 1, tol, mask, bonds, brow, noff):
                    if P[i] == i:
                        P[i] = P[i - 1]  # continue the left cell's run (an earlier cell)
                    else:
                        unite(P, i, i - 1)
                    eql = rules
            elif periodic & lastbit:
                jl = i + W - 1
                if _joins(values, P, i, jl, tol, mask, bonds, brow, noff):
                    unite(P, i, jl)
            for q in range(cnt):
                o = rows[q]
                j = i + table[o, 0] + shift[q]
                wrapped = shift[q] != 0
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
                if not _joins(values, P, i, j, tol, mask, bonds, brow, o):
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
        # next row: advance the leading coordinates
        k = last - 1
        while k >= 0:
            coords[k] += 1
            if coords[k] < shape[k]:
                break
            coords[k] = 0
            k -= 1


_NO_ROWS = np.zeros(1, dtype=np.int32)


def keys(values, bgkey, tolerance):
    """Values, background and tolerance as the CPU kernels compare them:
    the values as they are with a tolerance, else their keys (floats
    truncated to int64 like skimage -- one copy -- integers unchanged)."""
    if tolerance is not None:
        return values, np.float64(bgkey), float(tolerance)
    if values.dtype.kind == "f":
        return values.astype(np.int64), np.int64(bgkey), None
    return values, values.dtype.type(bgkey), None


def label_mesh(values, P, shape, table, has_bg, bgkey, *, periodic=0, mask=None,
               bonds=None, bond_rows=None, tolerance=None):
    """Label flat ``values`` into ``P`` (int32/int64, same length); return N."""
    values, bg, tol = keys(values, bgkey, tolerance)
    _label(values, P, np.asarray(shape, dtype=np.int64), table, bool(has_bg), bg, tol,
           mask, bonds, _NO_ROWS if bond_rows is None else bond_rows, int(periodic))
    return int(relabel(P))


def label_iterative(method, values, P, shape, table, has_bg, bgkey, *, periodic=0, mask=None,
                    bonds=None, bond_rows=None, tolerance=None, tile=256):
    """Label with one of Hawick et al.'s iterative methods (see
    :mod:`.methods`); return (N, iterations)."""
    from . import methods as M

    values, bg, tol = keys(values, bgkey, tolerance)
    shape = np.asarray(shape, dtype=np.int64)
    span = np.empty(len(shape), dtype=np.int64)
    stride = 1
    for k in range(len(shape) - 1, -1, -1):
        span[k] = stride * shape[k]
        stride = span[k]
    full = M.full_table(table, len(shape))
    brow = _NO_ROWS if bond_rows is None else bond_rows
    M._init(values, P, bool(has_bg), bg, mask)
    args = (values, P, shape, full, span, int(periodic), tol, bonds, brow)
    if method == "B":
        iterations = M.kernel_b(*args, tile)
    else:
        fn = {"A": M.kernel_a, "C": M.kernel_c, "D": M.kernel_d, "cpu1": M.cpu1,
              "cpu2": M.kernel_d}[method]
        iterations = fn(*args)
    return int(relabel(P)), int(iterations)
