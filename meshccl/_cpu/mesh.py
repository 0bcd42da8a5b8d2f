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
def _joins(values, P, i, j, use_tol, tol, bonds, has_bonds, brow, row):
    if P[j] < 0:  # background (by value or by mask)
        return False
    if has_bonds and bonds[brow[row], i] == 0:
        return False
    if use_tol:
        return abs(np.float64(values[i]) - np.float64(values[j])) <= tol
    return np.int64(values[i]) == np.int64(values[j])


@njit(cache=True)
def _label(values, P, shape, table, has_bg, bgkey_i, bgkey_f, use_tol, tol,
           mask, has_mask, bonds, has_bonds, brow, periodic):
    n = values.shape[0]
    ndim = shape.shape[0]
    noff = table.shape[0]
    last = ndim - 1
    lastbit = 1 << last
    rules = not use_tol and not has_bonds
    span = np.empty(ndim, dtype=np.int64)  # size * stride of each axis
    stride = 1
    for k in range(ndim - 1, -1, -1):
        span[k] = stride * shape[k]
        stride = span[k]
    # 1. every cell is its own tree; background (value or mask) is -1
    for i in range(n):
        bg = (has_mask and mask[i] == 0) or (
            has_bg and ((np.float64(values[i]) == bgkey_f) if use_tol
                        else (np.int64(values[i]) == bgkey_i)))
        P[i] = -1 if bg else i
    # 2. unions, in raster order
    coords = np.zeros(ndim, dtype=np.int64)
    for i in range(n):
        if P[i] >= 0:
            lo = 0
            hi = 0
            for k in range(ndim):
                c = coords[k]
                if c == 0:
                    lo |= 1 << k
                if c == shape[k] - 1:
                    hi |= 1 << k
            clast = coords[last]
            eql = False
            jl = -1
            if clast > 0:
                jl = i - 1
            elif periodic & lastbit:
                jl = i + shape[last] - 1
            if jl >= 0 and _joins(values, P, i, jl, use_tol, tol, bonds, has_bonds, brow, noff):
                unite(P, i, jl)
                eql = rules and clast > 0
            for o in range(noff):
                out_lo = lo & table[o, 1]
                out_hi = hi & table[o, 2]
                j = i + table[o, 0]
                wrapped = (out_lo | out_hi) != 0
                if wrapped:
                    if (out_lo | out_hi) & ~periodic:
                        continue
                    for k in range(ndim):
                        if (out_lo >> k) & 1:
                            j += span[k]
                        if (out_hi >> k) & 1:
                            j -= span[k]
                if not _joins(values, P, i, j, use_tol, tol, bonds, has_bonds, brow, o):
                    continue
                if eql and not wrapped:
                    flags = table[o, 3]
                    if flags & 1:
                        continue
                    if not ((flags & 2) and clast == 1):
                        if _joins(values, P, i, j - 1, use_tol, tol, bonds, has_bonds, brow, o):
                            continue
                unite(P, i, j)
        # advance the raster coordinates
        k = last
        while k >= 0:
            coords[k] += 1
            if coords[k] < shape[k]:
                break
            coords[k] = 0
            k -= 1


_NO_MASK = np.ones(1, dtype=np.uint8)
_NO_BONDS = np.ones((1, 1), dtype=np.uint8)
_NO_ROWS = np.zeros(1, dtype=np.int32)


def label_mesh(values, P, shape, table, has_bg, bgkey, *, periodic=0, mask=None,
               bonds=None, bond_rows=None, tolerance=None):
    """Label flat ``values`` into ``P`` (int32/int64, same length); return N."""
    use_tol = tolerance is not None
    bg_i = np.int64(0) if use_tol else np.int64(np.asarray(bgkey).astype(np.int64))
    bg_f = np.float64(bgkey) if use_tol else np.float64(0.0)
    _label(values, P, np.asarray(shape, dtype=np.int64), table, bool(has_bg), bg_i, bg_f,
           use_tol, float(tolerance or 0.0),
           _NO_MASK if mask is None else mask, mask is not None,
           _NO_BONDS if bonds is None else bonds, bonds is not None,
           _NO_ROWS if bond_rows is None else bond_rows, int(periodic))
    return int(relabel(P))
