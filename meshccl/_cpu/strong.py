"""Strongly connected components on the CPU: the compiled core's
depth-first search (``meshccl/_cpu/core/strong.hpp``), numbered exactly as
the installed SciPy's ``scipy.sparse.csgraph.connected_components``
numbers them.

The search is iterative (an explicit stack, never recursion: no graph is
too deep), O(n + m) time with one pass over the edges, and numbers the
components in the order it completes them, starting from vertex 0
upwards.  Which successor of a vertex it explores first is what SciPy
changed in 1.18 (:mod:`meshccl.graph._scipy`): from 1.18 on the first
unvisited one in row order (rows read 'forward'); up to 1.17 SciPy's
Pearce search visits the last one first, which a search reading each row
'backward' reproduces.

The numbering also depends on the order of each row's entries.  SciPy
reads the CSR that ``csgraph.tocsr()`` gives: a CSR as stored (up to 1.17
sorted when its dtype is not float64: its cast to float64 sorts the rows);
a CSC or a COO matrix with each row's columns ascending; a dense matrix
row by row.  :func:`forward_csr` builds the same rows from meshccl's
validated input in the compiled core (an edge list's rows by a counting
sort on the source, then each row sorted where it is not already; a CSC
transposed by a counting sort; an edge list already in (source, target)
order, such as a dense matrix's, copied as it is), so the labels are
SciPy's, value for value.
"""

from __future__ import annotations

import numpy as np

from ..graph import _scipy
from .image import _core

#: how the search reads each row: SciPy 1.18 on, SciPy up to 1.17
ROWS = ("forward", "backward")


def index_dtype(n, m):
    """The integer type the search reads a graph of ``n`` vertices and ``m``
    edges in: int32 where it holds every value (the search's random reads
    then fetch half the bytes), else int64."""
    return np.dtype(np.int32 if n < 2**31 - 2 and m < 2**31 else np.int64)


def _ints(*arrays):
    """The arrays as the compiled builders read them: int32 or int64, all of
    one type (int64 where they differ or are of another integer type)."""
    types = {a.dtype for a in arrays}
    if len(types) == 1 and types <= {np.dtype(np.int32), np.dtype(np.int64)}:
        return arrays
    return tuple(np.ascontiguousarray(a, dtype=np.int64) for a in arrays)


def forward_csr(kind, arrays, n, sort_rows=False):
    """(indptr, indices) of the graph itself, each row in the order SciPy
    reads it (the module docstring), from validated input (integer arrays
    of any type), in :func:`index_dtype` (a CSR's arrays as they are where
    they are of that type already and need no sorting).  ``sort_rows``: a
    CSR's rows sorted (SciPy up to 1.17 on a matrix that is not float64);
    CSC and edge lists come sorted anyway."""
    m = int(arrays[1].size)
    dtype = index_dtype(n, m)
    if kind == "csr":
        indptr, indices = _ints(*arrays)
        if sort_rows and not _core.rows_sorted(indptr, indices):
            indices = indices.astype(dtype)  # (a copy: the caller's stays as it is)
            _core.sort_rows(indptr, indices)
        return indptr.astype(dtype, copy=False), indices.astype(dtype, copy=False)
    indptr, indices = np.empty(n + 1, dtype), np.empty(m, dtype)
    if kind == "csc":  # CSR of the transpose: its rows are our columns
        _core.transpose(*_ints(*arrays), indptr, indices)
    else:
        _core.rows_of_edges(*_ints(*arrays), indptr, indices)
    return indptr, indices


def strong_components(kind, arrays, n, sort_rows=False, rows=None):
    """``(count, labels)`` of the strongly connected components of
    validated input (``kind`` "csr", "csc" or "edges", integer arrays from
    :mod:`meshccl.graph._input`), labels int32 (int64 from 2**31
    vertices) numbered as SciPy numbers them.

    ``sort_rows``: read a CSR's rows sorted (:func:`forward_csr`);
    ``rows``: how the search reads each row, one of :data:`ROWS` (default:
    as the installed SciPy's does, :func:`meshccl.graph._scipy.strong_rows`).
    """
    rows = _scipy.strong_rows() if rows is None else rows
    if rows not in ROWS:
        raise ValueError(f"rows must be one of {ROWS}, got {rows!r}")
    indptr, indices = forward_csr(kind, arrays, n, sort_rows)
    label_dtype = np.int64 if n >= 2**31 else np.int32
    work = np.int64 if n >= 2**31 - 2 else np.int32
    labels = np.empty(n, work)
    count = int(_core.strong_components(indptr, indices, labels, rows))
    return count, labels.astype(label_dtype, copy=False)
