"""Strongly connected components on the CPU (numba): Pearce's algorithm,
iterative, numbered exactly as ``scipy.sparse.csgraph.connected_components``
numbers them.

Pearce ("A space-efficient algorithm for finding strongly connected
components", IPL 116, 2016) refines Tarjan's depth-first search: one array
``rindex`` holds, per vertex, its visiting index while it is on the search
path and, once its component is complete, the component's number counted
down from n - 1, which is larger than every visiting index still in use.
So one comparison ``rindex[w] < low`` serves both "w is on the path" and
"w's low link", with no on-stack flag and no separate low-link array.

The search here is a loop over an explicit stack, never recursion, so no
graph is too deep for it.  The stack is a doubly linked list threaded
through two arrays (``below``, ``above``): when a vertex is visited, each of
its successors not visited yet is pushed, in row order; a successor already
waiting on the stack is unlinked from its place and pushed again, so the
next vertex visited is always the last unvisited successor of the most
recent vertex -- a true depth-first order.  A vertex at the top is visited
(its index given, its successors pushed) the first time and finished the
second time: its low link is the least ``rindex`` of its successors; if
none is lower than its own index it is the root of a component, whose other
members wait on a second stack (linked through ``waiting``) above every
vertex of older components.  Components are numbered in the order they
complete (SciPy's numbering: its Cython routine walks the graph in this same
order).  O(n + m) time, four arrays of n.

The numbering depends on the order of each row's entries.  SciPy reads the
CSR that ``csgraph.tocsr()`` gives: a CSR as stored; a CSC or a COO matrix
with each row's columns ascending; a dense matrix row by row.
:func:`forward_csr` builds the same rows from meshccl's validated input
(edge lists of every kind sorted by (source, target), the transpose of a
CSC by a counting sort), so the labels are SciPy's, value for value.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_VOID = -1
_END = -2


@njit(cache=True)
def _pearce(indptr, indices, rindex, below, above, waiting):
    """Components of the CSR graph: ``rindex`` ends holding n - 1 - label
    of every vertex; returns the number of components."""
    n = rindex.shape[0]
    for v in range(n):
        rindex[v] = _VOID
        below[v] = _VOID
        above[v] = _VOID
        waiting[v] = _VOID
    index = 0
    c = n - 1            # next component number, counted down
    wait_top = _END      # top of the stack of vertices waiting for their root
    for s in range(n):
        if rindex[s] != _VOID:
            continue
        top = s
        below[s] = _END
        above[s] = _END
        while top != _END:
            v = top
            if rindex[v] == _VOID:
                # first time at the top: visit v, push its unvisited successors
                rindex[v] = index
                index += 1
                for e in range(indptr[v], indptr[v + 1]):
                    w = indices[e]
                    if rindex[w] != _VOID or w == top:  # visited, or pushed just now
                        continue
                    if below[w] != _VOID:  # waiting on the stack: unlink it
                        b = below[w]
                        a = above[w]
                        if a != _END:
                            below[a] = b
                        if b != _END:
                            above[b] = a
                    below[w] = top
                    above[w] = _END
                    above[top] = w
                    top = w
            else:
                # second time: v is finished; pop it
                top = below[v]
                if top != _END:
                    above[top] = _END
                below[v] = _VOID
                above[v] = _VOID
                low = rindex[v]
                root = True
                for e in range(indptr[v], indptr[v + 1]):
                    r = rindex[indices[e]]
                    if r < low:
                        low = r
                        root = False
                rindex[v] = low
                if root:
                    # v's component: v and the waiting vertices of low >= v's
                    index -= 1
                    while wait_top != _END and low <= rindex[wait_top]:
                        w = wait_top
                        wait_top = waiting[w]
                        waiting[w] = _VOID
                        rindex[w] = c
                        index -= 1
                    rindex[v] = c
                    c -= 1
                else:
                    waiting[v] = wait_top
                    wait_top = v
    return n - 1 - c


@njit(cache=True)
def _counting_csr(rows, cols, n, indptr, out):
    """CSR of the entries (rows[k], cols[k]), each row's entries in the
    order of k (a stable counting sort); indptr has n + 1 entries."""
    for i in range(n + 1):
        indptr[i] = 0
    for k in range(rows.shape[0]):
        indptr[rows[k] + 1] += 1
    for i in range(n):
        indptr[i + 1] += indptr[i]
    cursor = indptr[:n].copy()
    for k in range(rows.shape[0]):
        r = rows[k]
        out[cursor[r]] = cols[k]
        cursor[r] += 1


@njit(cache=True)
def _rows_of(indptr, out):
    """The row of every stored entry of a CSR."""
    for v in range(indptr.shape[0] - 1):
        for e in range(indptr[v], indptr[v + 1]):
            out[e] = v


def _sorted_csr(src, dst, n):
    """CSR of an edge list with each row's targets ascending (two stable
    counting sorts: by target, then by source)."""
    m = src.size
    ip = np.empty(n + 1, np.int64)
    order = np.empty(m, np.int64)
    _counting_csr(dst, np.arange(m, dtype=np.int64), n, ip, order)  # edges by target
    indptr = np.empty(n + 1, np.int64)
    indices = np.empty(m, np.int64)
    _counting_csr(src[order], dst[order], n, indptr, indices)
    return indptr, indices


def forward_csr(kind, arrays, n):
    """(indptr, indices) of the graph itself, each row in the order SciPy's
    ``tocsr()`` gives it (the module docstring), from validated input."""
    if kind == "csr":
        return arrays
    if kind == "csc":  # CSR of the transpose: its rows are our columns
        tindptr, tindices = arrays
        rows = np.empty(tindices.size, np.int64)
        _rows_of(tindptr, rows)
        indptr = np.empty(n + 1, np.int64)
        indices = np.empty(tindices.size, np.int64)
        _counting_csr(tindices, rows, n, indptr, indices)  # columns ascending per row
        return indptr, indices
    return _sorted_csr(*arrays, n)


def strong_components(kind, arrays, n):
    """``(count, labels)`` of the strongly connected components of
    validated input (``kind`` "csr", "csc" or "edges", int64 arrays from
    :mod:`meshccl.graph._input`), labels int32 (int64 from 2**31
    vertices) numbered as SciPy numbers them."""
    label_dtype = np.int64 if n >= 2**31 else np.int32
    indptr, indices = forward_csr(kind, arrays, n)
    work = np.int64 if n >= 2**31 - 2 else np.int32
    rindex, below, above, waiting = (np.empty(n, work) for _ in range(4))
    count = int(_pearce(indptr, indices, rindex, below, above, waiting))
    labels = np.subtract(n - 1, rindex, dtype=label_dtype)
    return count, labels
