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
validated input (edge lists sorted by (source, target), a CSC transposed,
both by counting sorts in the compiled core), so the labels are SciPy's,
value for value.
"""

from __future__ import annotations

import numpy as np

from ..graph import _scipy
from .image import _core

#: how the search reads each row: SciPy 1.18 on, SciPy up to 1.17
ROWS = ("forward", "backward")


def forward_csr(kind, arrays, n, sort_rows=False):
    """(indptr, indices) of the graph itself, each row in the order SciPy
    reads it (the module docstring), from validated input (integer arrays
    of any type; built ones are int64).  ``sort_rows``: a CSR's rows sorted
    (SciPy up to 1.17 on a matrix that is not float64); CSC and edge lists
    come sorted anyway."""
    wide = [np.ascontiguousarray(a, dtype=np.int64) for a in arrays] if kind != "csr" \
        or sort_rows else arrays
    if kind == "csr":
        return arrays[0], _core.sorted_rows(*wide) if sort_rows else arrays[1]
    if kind == "csc":  # CSR of the transpose: its rows are our columns
        return _core.transpose(*wide)
    return _core.rows_ascending(*wide, int(n))


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
    # int32 where it holds the values: the search's random reads fetch half the bytes
    narrow = np.int32 if n < 2**31 - 2 and indices.size < 2**31 else np.int64
    indptr = np.ascontiguousarray(indptr, dtype=narrow)
    indices = np.ascontiguousarray(indices, dtype=narrow)
    label_dtype = np.int64 if n >= 2**31 else np.int32
    work = np.int64 if n >= 2**31 - 2 else np.int32
    labels = np.empty(n, work)
    count = int(_core.strong_components(indptr, indices, labels, rows))
    return count, labels.astype(label_dtype, copy=False)
