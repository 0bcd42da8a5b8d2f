"""Connected components of general graphs, SciPy-compatible.

``connected_components`` takes what ``scipy.sparse.csgraph.connected_components``
takes (SciPy sparse matrices and arrays of any format, dense adjacency
matrices) plus CuPy sparse matrices, ``(indptr, indices)`` CSR tuples and
``Edges(src, dst, n_vertices)`` edge lists, and returns SciPy's result:
``(n_components, labels)`` with the component of the smallest vertex
numbered 0, the next new smallest vertex's component 1, and so on.

It runs on the one union-find core that also labels meshes (find with path
halving, the larger root hooked under the smaller), so each component's root
is its smallest vertex and the numbering comes out of the shared relabel.

In this release graphs are labelled by the CPU backend (numba); GPU graph
kernels (ECL-CC, GConn variants) are planned, and CuPy input is refused with
a clear error until they exist.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: 'auto' = 'unionfind' (union-find with ECL-CC's first-smaller-neighbour
#: start); the others are the papers' methods, as serial references:
#: Shiloach-Vishkin ('sv'), Hawick et al.'s edge and vertex label
#: propagation ('edge-lp', 'vertex-lp') and breadth-first search ('bfs').
METHODS = ("auto", "unionfind", "ecl", "sv", "edge-lp", "vertex-lp", "bfs")


class Edges(NamedTuple):
    """An edge list: edge k joins ``src[k]`` and ``dst[k]``.

    ``n_vertices`` defaults to ``max(src, dst) + 1`` (0 for no edges).
    """

    src: object
    dst: object
    n_vertices: int | None = None


def connected_components(csgraph, directed=True, connection="weak", return_labels=True, *,
                         method="auto"):
    """Connected components of a graph, like ``scipy.sparse.csgraph.connected_components``.

    Parameters
    ----------
    csgraph : sparse matrix / array, dense array, tuple or Edges
        The graph: a SciPy or CuPy sparse matrix or array (CSR, CSC, COO, or
        any SciPy format; every stored entry is an edge, explicit zeros
        included, as in SciPy), a dense square array (non-zero entries are
        edges), an ``(indptr, indices)`` tuple of CSR arrays, or
        ``Edges(src, dst, n_vertices)``.
    directed : bool, optional
        Whether edges have a direction.  For weak connectivity the answer is
        the same either way.
    connection : {'weak', 'strong'}, optional
        Only 'weak' is implemented; 'strong' with ``directed=True`` raises
        ``NotImplementedError``.
    return_labels : bool, optional
        Also return the labels (default True).
    method : {'auto', 'unionfind', 'ecl', 'sv', 'edge-lp', 'vertex-lp', 'bfs'}, optional
        Algorithm; 'auto' (= 'unionfind' = 'ecl') is the union-find with
        ECL-CC's first-smaller-neighbour start.  'sv' Shiloach-Vishkin
        (hooking + pointer jumping in rounds), 'edge-lp' / 'vertex-lp'
        Hawick et al.'s edge and frontier label propagation, 'bfs' a search
        per component: serial CPU references for the GPU kernels to come.
        All give the same labels.

    Returns
    -------
    n_components : int
    labels : ndarray of int32 (int64 beyond 2**31 - 1 vertices)
        Component of each vertex, numbered from 0 in order of each
        component's smallest vertex.

    Raises
    ------
    TypeError
        Unsupported input, or indices that are not integers.
    ValueError
        A non-square matrix, indptr of the wrong length, not starting at 0,
        decreasing, or not ending at len(indices), indices out of range or
        negative, an unknown connection or method.
    NotImplementedError
        ``connection='strong'`` on a directed graph; CuPy input (no GPU
        graph kernels in this release).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from meshccl.graph import connected_components, Edges
    >>> g = sp.csr_matrix(([1, 1], ([3, 1], [5, 0])), shape=(7, 7))
    >>> connected_components(g)
    (5, array([0, 0, 1, 2, 3, 2, 4], dtype=int32))
    >>> connected_components(Edges(np.array([0, 2]), np.array([1, 3]), 5))
    (3, array([0, 0, 1, 1, 2], dtype=int32))
    >>> connected_components((np.array([0, 1, 1]), np.array([1])), return_labels=False)
    1
    """
    if connection not in ("weak", "strong"):
        raise ValueError(f"connection must be 'weak' or 'strong', got {connection!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if directed and connection == "strong":
        raise NotImplementedError(
            "connection='strong' is not implemented yet; use connection='weak' "
            "(or directed=False)")
    kind, arrays, n = _as_graph(csgraph)
    label_dtype = np.int64 if n >= 2**31 else np.int32
    from ._cpu import graph as cpu

    if method in ("sv", "edge-lp", "vertex-lp", "bfs"):
        count, labels, _ = cpu.components_by(method, "edges" if kind == "edges" else "csr",
                                             arrays, n, label_dtype)
    elif kind in ("csr", "csc"):
        count, labels = cpu.components_csr(*arrays, n, label_dtype)
    else:
        count, labels = cpu.components_edges(*arrays, n, label_dtype)
    return (count, labels) if return_labels else count


def spanning_forest(csgraph):
    """A spanning forest of the graph's weak components.

    Every edge returned is an edge of the input (in its stored direction),
    taken when its union joined two different sets; the result has
    ``n_vertices - n_components`` edges, no cycle, and the same components
    as the input.  Deterministic for a given input.

    Parameters
    ----------
    csgraph : as for :func:`connected_components`

    Returns
    -------
    Edges
        ``Edges(src, dst, n_vertices)`` of the forest (int64 arrays).

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.graph import spanning_forest, Edges
    >>> f = spanning_forest(Edges(np.array([0, 1, 2, 3]), np.array([1, 2, 0, 4]), 6))
    >>> f.src.tolist(), f.dst.tolist(), f.n_vertices
    ([0, 1, 3], [1, 2, 4], 6)
    """
    kind, arrays, n = _as_graph(csgraph)
    from ._cpu import graph as cpu

    src, dst = cpu.forest(kind, arrays, n)
    if kind == "csc":  # its rows are the input's columns
        src, dst = dst, src
    return Edges(src, dst, n)


# --------------------------------------------------------------------------
# validation: every input becomes ("csr", (indptr, indices)) or
# ("edges", (src, dst)) of host integer arrays, checked

def _refuse_gpu(a):
    if type(a).__module__.startswith("cupy"):
        raise NotImplementedError(
            "GPU graph labelling is not in this release: pass a SciPy/NumPy graph "
            "(e.g. cupy_matrix.get()) to label it on the CPU")


def _int_array(a, name):
    _refuse_gpu(a)
    a = np.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {a.dtype}")
    return np.ascontiguousarray(a).astype(np.int64, copy=False)


def _check_indices(idx, n, name):
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= n:
            bad = lo if lo < 0 else hi
            pos = int(np.flatnonzero(idx == bad)[0])
            raise ValueError(f"{name} must lie in [0, {n}), got {bad} at position {pos}")


def _csr(indptr, indices, n=None):
    indptr = _int_array(indptr, "indptr")
    indices = _int_array(indices, "indices")
    if indptr.size == 0:
        raise ValueError("indptr must have n_vertices + 1 entries, got an empty array")
    if n is not None and indptr.size != n + 1:
        raise ValueError(f"indptr must have n_vertices + 1 = {n + 1} entries, got {indptr.size}")
    n = indptr.size - 1
    if indptr[0] != 0:
        raise ValueError(f"indptr must start at 0, got {int(indptr[0])}")
    steps = np.diff(indptr)
    if steps.size and steps.min() < 0:
        k = int(np.flatnonzero(steps < 0)[0])
        raise ValueError(f"indptr must not decrease, got {int(indptr[k])} then {int(indptr[k + 1])} "
                         f"at position {k}")
    if indptr[-1] != indices.size:
        raise ValueError(f"indptr must end at len(indices) = {indices.size}, got {int(indptr[-1])}")
    _check_indices(indices, n, "indices")
    return "csr", (indptr, indices), n


def _edges(src, dst, n=None):
    src = _int_array(src, "src")
    dst = _int_array(dst, "dst")
    if src.size != dst.size:
        raise ValueError(f"src and dst must have the same length, got {src.size} and {dst.size}")
    if n is None:
        n = int(max(src.max(), dst.max())) + 1 if src.size else 0
    elif not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n_vertices must be a non-negative int, got {n!r}")
    _check_indices(src, n, "src")
    _check_indices(dst, n, "dst")
    return "edges", (src, dst), int(n)


def _square(shape):
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"csgraph must be a square (N, N) matrix, got shape {tuple(shape)}")
    return int(shape[0])


def _as_graph(g):
    """(kind, arrays, n) for any accepted input; kind is "csr", "csc" (CSR
    arrays of the transpose graph) or "edges"."""
    _refuse_gpu(g)
    if isinstance(g, Edges):
        return _edges(g.src, g.dst, g.n_vertices)
    if isinstance(g, tuple):
        if len(g) != 2:
            raise TypeError("a tuple csgraph must be (indptr, indices); use Edges(src, dst) for edge lists")
        return _csr(g[0], g[1])
    fmt = getattr(g, "format", None)
    if fmt is not None and hasattr(g, "nnz"):  # SciPy sparse matrix or array
        n = _square(g.shape)
        if fmt == "csr":
            return _csr(g.indptr, g.indices, n)
        if fmt == "csc":  # the transpose graph: the same weak components, edges reversed
            return ("csc",) + _csr(g.indptr, g.indices, n)[1:]
        if fmt == "coo":
            return _edges(g.row, g.col, n)
        csr = g.tocsr()
        return _csr(csr.indptr, csr.indices, n)
    if isinstance(g, np.ndarray):
        if g.dtype.kind not in "biuf":
            raise TypeError(f"csgraph must be a numeric adjacency matrix, got dtype {g.dtype}")
        n = _square(g.shape)
        rows, cols = np.nonzero(g)
        return _edges(rows, cols, n)
    raise TypeError(
        "csgraph must be a SciPy/CuPy sparse matrix, a dense square array, an "
        f"(indptr, indices) tuple or Edges(src, dst, n_vertices); got {type(g).__name__}")
