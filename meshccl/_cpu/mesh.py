"""Mesh labelling on the CPU, mirroring ``kernels/mesh.cu`` step for step.

One pass in raster order does what the two GPU kernels do: a cell whose left
neighbour is equal continues the left cell's run (it takes the left cell's
parent); a run's first cell takes its first equal earlier neighbour in table
order as parent; then the remaining equal earlier neighbours are united,
skipping the same redundant pairs as the GPU ("covered" offsets and equal
twin pairs of the left cell).  The relabel of :mod:`.unionfind` numbers the
roots.  Labels are identical to the GPU's bit for bit.
"""

import numpy as np
from numba import njit

from .unionfind import relabel, unite


@njit(cache=True)
def _union_pass(values, P, shape, table, has_bg, bgkey):
    n = values.shape[0]
    ndim = shape.shape[0]
    noff = table.shape[0]
    coords = np.zeros(ndim, dtype=np.int64)
    last = ndim - 1
    for i in range(n):
        key = np.int64(values[i])
        if has_bg and key == bgkey:
            P[i] = -1
        else:
            lo = 0
            hi = 0
            for k in range(ndim):
                c = coords[k]
                if c == 0:
                    lo |= 1 << k
                if c == shape[k] - 1:
                    hi |= 1 << k
            clast = coords[last]
            eql = clast > 0 and np.int64(values[i - 1]) == key
            P[i] = P[i - 1] if eql else i
            first = not eql
            for o in range(noff):
                if (lo & table[o, 1]) | (hi & table[o, 2]):
                    continue
                j = i + table[o, 0]
                if np.int64(values[j]) != key:
                    continue
                if first:
                    first = False
                    P[i] = j
                    continue
                if eql:
                    flags = table[o, 3]
                    if flags & 1:
                        continue
                    if not ((flags & 2) and clast == 1):
                        if np.int64(values[j - 1]) == key:
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


def label_mesh(values, P, shape, table, has_bg, bgkey):
    """Label flat ``values`` into ``P`` (int32/int64, same length); return N."""
    shape_arr = np.asarray(shape, dtype=np.int64)
    _union_pass(values, P, shape_arr, table, bool(has_bg), np.int64(np.asarray(bgkey).astype(np.int64)))
    return int(relabel(P))
