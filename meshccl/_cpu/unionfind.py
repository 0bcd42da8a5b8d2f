"""The union-find core for the CPU paths still on numba: the twin of
``_kernels/core/unionfind.h`` (which the compiled core includes) and of
``_kernels/unionfind.cuh``.

A forest in one integer array: ``P[x]`` is x's parent, a root is its own
parent.  Parents always point to smaller indices; find() halves the path
(every node it passes is re-hung on its grandparent); unite() hooks the
larger root under the smaller, so each component's root is its smallest
index -- in raster order, its first cell.  Indices are cells (the iterative
methods) or vertices (the graphs).  find() and unite()
are inlined into their callers: the per-cell loops are a fifth faster so.

Serial code needs no compare-and-swap: the hook is a store.  Threads
sharing one forest use unite_cas(), whose hook is a compare-and-swap
(cas(): LLVM's cmpxchg, which numba's API lacks) retried from the new roots
when another thread hooked first; the halving stores of find() stay plain
(they only ever move a non-root's parent up its own path).

The numbering (relabel_into, and its twin with counts for
``label(..., return_counts=True)``, relabel_into_counted) writes every
cell's final label in one forward pass; the counted form adds each cell to
its label's count as it writes it.
"""

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@njit(cache=True, inline="always")
def find(P, x):
    p = P[x]
    while p != x:
        g = P[p]
        if g == p:
            return p
        P[x] = g
        x = g
        p = P[x]
    return x


@njit(cache=True, inline="always")
def unite(P, a, b):
    """Merge the sets of a and b; True when they were different sets."""
    a = find(P, a)
    b = find(P, b)
    if a < b:
        P[b] = a
    elif b < a:
        P[a] = b
    else:
        return False
    return True


@intrinsic
def cas(typingctx, arr, idx, old, new):
    """arr[idx] = new if arr[idx] == old, atomically; True when stored."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        a, i, o, nw = args
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, a)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [i], wraparound=False)
        res = builder.cmpxchg(ptr, o, nw, "monotonic", "monotonic")
        return builder.extract_value(res, 1)

    return types.boolean(arr, types.intp, arr.dtype, arr.dtype), codegen


@njit(cache=True, inline="always")
def unite_cas(P, a, b):
    """unite(P, a, b) with a CAS hook, retried until it holds."""
    while True:
        a = find(P, a)
        b = find(P, b)
        if a == b:
            return
        if a < b:
            a, b = b, a
        if cas(P, a, a, b):
            return


@njit(cache=True)
def relabel(P):
    """Number roots 1..N in index order, in place; background (-1) becomes 0.

    Returns N.  :func:`relabel_into` writing over ``P`` itself: every parent
    is a smaller index, already turned into its component's label when it
    is read.
    """
    return relabel_into(P, P)


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
