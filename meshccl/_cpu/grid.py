"""What every CPU mesh labeller shares: rows, boundaries and the value test.

The labellers walk a C-ordered array row by row, a row being a line of
cells along the last (contiguous) axis.  A row's place is given by the
coordinates of its leading axes, advanced like an odometer
(:func:`next_row`), and two bit masks say on which leading axes it sits at
the low or the high end (:func:`row_masks`): a neighbour offset whose
moves leave the array through such an end does not exist there (or wraps
round, on a periodic axis).  The neighbour table itself comes from
:mod:`meshccl.neighbourhood`.

Values reach the kernels as *keys* (:func:`.keys.kernel_keys`).

The iterative methods (:mod:`.iterative`, numba), slow by design, take
their optional inputs (a mask, bond flags) as a flag and placeholder arrays
(:data:`NO_MASK`, :data:`NO_BONDS`, :data:`NO_ROWS`): one compiled version
for all.
"""

import numpy as np
from numba import njit, types
from numba.extending import overload

#: Placeholders for the optional arrays of the iterative kernels (unused
#: when their flag is off).
NO_MASK = np.ones(1, dtype=np.uint8)
NO_BONDS = np.ones((1, 1), dtype=np.uint8)
NO_ROWS = np.zeros(1, dtype=np.int64)

@njit(cache=True)
def u(i):
    """An index known to be >= 0 as unsigned: numba then skips the
    negative-index wraparound in the hot loops."""
    return np.uint64(i)


@njit(cache=True)
def row_masks(coords, shape, last):
    """Boundary masks (lo, hi) of a row from the coordinates of its leading axes."""
    lo = 0
    hi = 0
    for k in range(last):
        if coords[k] == 0:
            lo |= 1 << k
        if coords[k] == shape[k] - 1:
            hi |= 1 << k
    return lo, hi


@njit(cache=True)
def next_row(coords, shape, last):
    """Advance the leading coordinates to the next row (an odometer)."""
    k = last - 1
    while k >= 0:
        coords[k] += 1
        if coords[k] < shape[k]:
            break
        coords[k] = 0
        k -= 1


def close(a, b, tol):
    """Whether keys ``a`` and ``b`` differ by at most ``tol`` (uint64 for
    integer keys, float64 for float keys)."""
    raise NotImplementedError  # compiled only, through the overload below


@overload(close)
def _close_impl(a, b, tol):
    if isinstance(a, types.Integer):
        def impl(a, b, tol):
            x = np.uint64(a)
            y = np.uint64(b)
            return (x - y if x >= y else y - x) <= tol
    else:
        def impl(a, b, tol):
            return abs(a - b) <= tol
    return impl


def work_array(P):
    """Where the scans keep their labels: int32 whenever they fit (then
    the numba kernels are compiled for one label type, whatever the
    output's), else ``P`` itself."""
    if P.dtype == np.int32 or P.shape[0] >= 2**31 - 2:
        return P
    return np.empty(P.shape[0], dtype=np.int32)
