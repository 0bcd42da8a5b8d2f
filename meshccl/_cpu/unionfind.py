"""The numbering of a union-find forest for the CPU paths still on numba
(the iterative mesh labellers, :mod:`.iterative`): the twin of
``number_table`` in ``_kernels/core/unionfind.h``, which the compiled core
includes.

A forest in one integer array: ``P[x]`` is x's parent, a root is its own
parent, parents always point to smaller indices, background is -1.  The
numbering (relabel_into, and its twin with counts for
``label(..., return_counts=True)``, relabel_into_counted) writes every
cell's final label in one forward pass; the counted form adds each cell to
its label's count as it writes it.
"""

import numpy as np
from numba import njit


@njit(cache=True)
def relabel_into(P, out):
    """Number the roots of the forest ``P`` 1..N in index order into ``out``
    (same length; may be ``P`` itself); background (-1) becomes 0.  Returns N.

    One forward pass: every parent is a smaller index, already turned into
    its component's label, so a non-root takes its parent's label and a root
    the next number (a running count is the serial prefix sum of the GPU
    path).
    """
    count = 0
    for i in range(P.shape[0]):
        p = P[i]
        if p < 0:
            out[i] = 0
        elif p == i:
            count += 1
            out[i] = count
        else:
            out[i] = out[p]
    return count


@njit(cache=True)
def _relabel_counted_from(P, out, start, count, counts):
    """:func:`relabel_into` from index ``start`` on (``count`` roots
    before it), adding each cell to ``counts[its label]``; stops before
    the root that would need a row ``counts`` lacks.  Returns (where it
    stopped, roots so far)."""
    cap = counts.shape[0] - 1
    for i in range(start, P.shape[0]):
        p = P[i]
        if p < 0:
            out[i] = 0
            counts[0] += 1
        elif p == i:
            if count == cap:
                return i, count
            count += 1
            out[i] = count
            counts[count] += 1
        else:
            lab = out[p]
            out[i] = lab
            counts[lab] += 1
    return P.shape[0], count


@njit(cache=True)
def relabel_into_counted(P, out):
    """:func:`relabel_into` that also counts each label's cells as it
    writes them.  Returns (N, counts): counts is int64 of length N + 1,
    counts[0] the background cells.  The table starts at n / 64 rows and
    doubles when a new root needs more (outside the pass's loop)."""
    n = P.shape[0]
    counts = np.zeros(min(n, max(1024, n >> 6)) + 1, dtype=np.int64)
    # (int64 zeros and a loop, not literal 0s and a slice assignment: numba
    # would compile _relabel_counted_from twice and its shape-error messages;
    # docs/decisions.md: "compile time")
    i, count = _relabel_counted_from(P, out, np.int64(0), np.int64(0), counts)
    while i < n:
        grown = np.zeros(2 * counts.shape[0], dtype=np.int64)
        for k in range(count + 1):
            grown[k] = counts[k]
        counts = grown
        i, count = _relabel_counted_from(P, out, i, count, counts)
    return count, counts[:count + 1].copy()
