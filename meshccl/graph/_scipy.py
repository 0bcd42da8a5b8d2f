"""What the installed SciPy does with a directed graph, where meshccl
follows it value for value.

SciPy 1.18 changed three things in ``scipy.sparse.csgraph``:

- strong components are found by a different depth-first search
  (Tarjan's, following Tarjan and Zwick's 2024 survey, scipy/scipy#24996)
  in place of Pearce's: the same components, numbered in the order the
  new search completes them, which differs from the old one's on most
  graphs with more than one component;
- ``validate_graph`` keeps the matrix's own dtype (scipy/scipy#24706);
  before, it cast every sparse matrix to float64, and that cast sorts the
  indices of each row (and sums duplicates) of a matrix that is not
  float64 already -- so up to 1.17 the numbering of strong components of
  an integer (or float32, bool...) CSR with unsorted rows is that of its
  sorted rows, and from 1.18 that of its rows as stored;
- a BSR matrix loses its explicit zeros (scipy/scipy#24706): the zeros
  inside its blocks are no edges any more.

meshccl reads the installed SciPy's version once and follows it.
"""

from __future__ import annotations

import functools
import re

import numpy as np


@functools.cache
def version() -> tuple:
    """(major, minor) of the installed SciPy."""
    import scipy

    match = re.match(r"(\d+)\.(\d+)", scipy.__version__)
    if match is None:  # (never seen: SciPy's versions are PEP 440)
        raise RuntimeError(f"cannot read SciPy's version {scipy.__version__!r}")
    return int(match.group(1)), int(match.group(2))


def strong_rows() -> str:
    """How the depth-first search whose numbering SciPy's strong components
    have reads each row (:mod:`meshccl._cpu.strong`): 'forward' from SciPy
    1.18 on, 'backward' before (SciPy's Pearce search visits a vertex's
    last unvisited successor first)."""
    return "forward" if version() >= (1, 18) else "backward"


#: the one type SciPy up to 1.17 reads a sparse matrix in without a cast
_FLOAT64 = np.dtype(np.float64)


def sorts_rows(g) -> bool:
    """Whether SciPy reads the rows of sparse matrix ``g`` sorted (up to
    1.17, for a matrix that is not float64), rather than as ``g.tocsr()``
    stores them."""
    return version() < (1, 18) and g.dtype != _FLOAT64


def drops_block_zeros() -> bool:
    """Whether SciPy drops the explicit zeros of a BSR matrix (1.18 on)."""
    return version() >= (1, 18)
