"""Connected components of general graphs, SciPy-compatible.

``connected_components`` takes what ``scipy.sparse.csgraph.connected_components``
takes (SciPy sparse matrices and arrays of any format, dense adjacency
matrices) plus CuPy sparse matrices and dense arrays, ``(indptr, indices)``
CSR tuples and ``Edges(src, dst, n_vertices)`` edge lists, and returns
SciPy's result: ``(n_components, labels)`` with the component of the
smallest vertex numbered 0, the next new smallest vertex's component 1, and
so on.

It runs on the one union-find core that also labels meshes (find with path
halving, the larger root hooked under the smaller), so each component's root
is its smallest vertex and the numbering comes out of the shared relabel.
NumPy / SciPy input is labelled by the CPU backend (numba), CuPy input on
its GPU (``kernels/graph.cu``), with the result on the input's side.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: 'auto' picks per backend (see connected_components).  'unionfind' is the
#: union-find over every edge, 'ecl' ECL-CC (first-smaller-neighbour start,
#: then hooking), 'kout' k-out sampling + finish (Afforest / GConn); the
#: others are the papers' methods as serial CPU references: Shiloach-Vishkin
#: ('sv'), Hawick et al.'s edge and vertex label propagation ('edge-lp',
#: 'vertex-lp') and breadth-first search ('bfs').
METHODS = ("auto", "unionfind", "ecl", "kout", "sv", "edge-lp", "vertex-lp", "bfs")
#: the methods each backend runs
CPU_METHODS = METHODS
GPU_METHODS = ("auto", "unionfind", "ecl", "kout")


class Edges(NamedTuple):
    """An edge list: edge k joins ``src[k]`` and ``dst[k]``.

    ``n_vertices`` defaults to ``max(src, dst) + 1`` (0 for no edges).
    """

    src: object
    dst: object
    n_vertices: int | None = None


def connected_components(csgraph, directed=True, connection="weak", return_labels=True, *,
                         method="auto", symmetric=False):
    """Connected components of a graph, like ``scipy.sparse.csgraph.connected_components``.

    Parameters
    ----------
    csgraph : sparse matrix / array, dense array, tuple or Edges
        The graph: a SciPy or CuPy (``cupyx.scipy.sparse``) sparse matrix or
        array (CSR, CSC, COO, or any other format; every stored entry is an
        edge, explicit zeros included, as in SciPy), a dense square NumPy or
        CuPy array (non-zero entries are edges), an ``(indptr, indices)``
        tuple of CSR arrays, or ``Edges(src, dst, n_vertices)``.  NumPy /
        SciPy input runs on the CPU, CuPy input on its GPU.
    directed : bool, optional
        Whether edges have a direction.  For weak connectivity the answer is
        the same either way.
    connection : {'weak', 'strong'}, optional
        Only 'weak' is implemented; 'strong' with ``directed=True`` raises
        ``NotImplementedError``.
    return_labels : bool, optional
        Also return the labels (default True).
    method : {'auto', 'unionfind', 'ecl', 'kout', 'sv', 'edge-lp', 'vertex-lp', 'bfs'}, optional
        Algorithm; all give the same labels.

        * 'unionfind': union-find over every stored edge (on the GPU one
          thread per edge; on CSR input it finds its row by binary search).
        * 'ecl': ECL-CC -- every vertex starts at its first smaller
          neighbour, then threads, warps or blocks (by degree: up to 16, up
          to 352, more) hook the rest.
        * 'kout': k-out sampling (Afforest, GConn): unite the first 2 edges
          of each vertex, take the most frequent root among 1024 sampled
          vertices, and finish with the edges of the vertices outside it.
        * 'sv', 'edge-lp', 'vertex-lp', 'bfs' (CPU only):
          Shiloach-Vishkin, Hawick et al.'s edge and frontier label
          propagation, and a search per component, as serial references.
        * 'auto': on the CPU the serial union-find ('unionfind', which
          starts like ECL-CC).  On the GPU the rule of Hong, Dhulipala and
          Shun (GConn): sampling pays only when the average degree is high
          -- k-out saves at most m - k n of the m edge visits, and on
          low-degree graphs such as road networks it slows things down --
          so CSR/CSC input with more than 2k = 4 stored entries per vertex
          runs 'kout', other CSR/CSC input 'ecl', and edge lists (COO,
          ``Edges``, dense arrays) run 'unionfind' directly on the edges
          (sampling needs each vertex's edges together).
    symmetric : bool, optional
        The caller promises that every stored edge (u, v) is also stored as
        (v, u), as in an undirected graph held as a symmetric matrix.  The
        GPU methods then take each edge from one side only, and 'kout' lets
        the vertices of the sampled giant component skip their edges.  A
        false promise gives wrong components.  Default False: any input,
        directed or not, gives its weak components.

    Returns
    -------
    n_components : int
    labels : ndarray of int32 (int64 beyond 2**31 - 1 vertices)
        Component of each vertex, numbered from 0 in order of each
        component's smallest vertex.  A CuPy array for CuPy input.

    Raises
    ------
    TypeError
        Unsupported input, indices that are not integers, or a mix of NumPy
        and CuPy arrays.
    ValueError
        A non-square matrix, indptr of the wrong length, not starting at 0,
        decreasing, or not ending at len(indices), indices out of range or
        negative, an unknown connection or method.  CuPy input is checked on
        the device before any kernel runs.
    NotImplementedError
        ``connection='strong'`` on a directed graph; a CPU-only method
        ('sv', 'edge-lp', 'vertex-lp', 'bfs') on CuPy input.

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
    >>> connected_components(g, method="kout")[0]
    5

    On a GPU the same call takes CuPy arrays and returns CuPy labels::

        import cupy, cupyx.scipy.sparse as csp
        n, labels = connected_components(csp.csr_matrix(g))   # labels: cupy int32
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
    if _is_cupy(arrays[0]):
        return _gpu_components(kind, arrays, n, method, symmetric, return_labels)
    label_dtype = np.int64 if n >= 2**31 else np.int32
    from ._cpu import graph as cpu

    if method in ("sv", "edge-lp", "vertex-lp", "bfs"):
        count, labels, _ = cpu.components_by(method, "edges" if kind == "edges" else "csr",
                                             arrays, n, label_dtype)
    elif method == "kout":
        count, labels = cpu.components_kout("edges" if kind == "edges" else "csr", arrays, n,
                                            label_dtype, symmetric)
    elif kind in ("csr", "csc"):
        count, labels = cpu.components_csr(*arrays, n, label_dtype)
    else:
        count, labels = cpu.components_edges(*arrays, n, label_dtype)
    return (count, labels) if return_labels else count


def _gpu_components(kind, arrays, n, method, symmetric, return_labels):
    if method not in GPU_METHODS:
        raise NotImplementedError(
            f"method={method!r} runs on the CPU only in this release (GPU methods: "
            f"{GPU_METHODS}); pass SciPy/NumPy input (e.g. x.get()) to run it there")
    from ._gpu import graph as gpu

    count, labels = gpu.components(kind, arrays, n, method, symmetric)
    count = int(count)  # the one host synchronisation
    return (count, labels) if return_labels else count


def spanning_forest(csgraph):
    """A spanning forest of the graph's weak components.

    Every edge returned is an edge of the input (in its stored direction),
    taken when its union joined two different sets; the result has
    ``n_vertices - n_components`` edges, no cycle, and the same components
    as the input.  Deterministic for a given input.  CPU only in this
    release: CuPy input raises ``NotImplementedError``.

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
    if _is_cupy(arrays[0]):
        raise NotImplementedError(
            "spanning_forest runs on the CPU only in this release: pass SciPy/NumPy "
            "input (e.g. cupy_matrix.get())")
    from ._cpu import graph as cpu

    src, dst = cpu.forest(kind, arrays, n)
    if kind == "csc":  # its rows are the input's columns
        src, dst = dst, src
    return Edges(src, dst, n)


# --------------------------------------------------------------------------
# validation: every input becomes ("csr" | "csc", (indptr, indices)) or
# ("edges", (src, dst)) of integer arrays, checked, on the input's device:
# NumPy (int64, for the CPU backend) or CuPy (its own integer type; checked
# by reductions on the device and one transfer of their results, so a bad
# index is an error here, never a GPU fault).

def _is_cupy(a):
    return type(a).__module__.split(".")[0] in ("cupy", "cupyx")


def _xp_of(*named):
    """numpy or cupy for the arrays ``named`` ((name, array) pairs), which
    must all live on the same side."""
    on_gpu = [_is_cupy(a) for _, a in named]
    if any(on_gpu) and not all(on_gpu):
        names = " and ".join(name for name, _ in named)
        raise TypeError(f"{names} must be all NumPy or all CuPy arrays, got a mix")
    if any(on_gpu):
        import cupy

        return cupy
    return np


def _int_array(a, name, xp):
    a = xp.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {a.dtype}")
    return xp.ascontiguousarray(a)


def _checked(xp, *arrays):
    """Validated arrays as the backend takes them: int64 for the CPU's numba
    code (every value is known to fit), as they are for the GPU."""
    if xp is np:
        return tuple(a.astype(np.int64, copy=False) for a in arrays)
    return arrays


def _facts(xp, **values):
    """Python ints of 0-d reductions, with one device-to-host transfer on CuPy.
    Values beyond the int64 range are clamped (only ever used to detect an
    error, whose message recomputes the exact value)."""
    if xp is np or not values:
        return {k: int(v) for k, v in values.items()}
    big = np.iinfo(np.int64).max
    stacked = xp.stack([xp.minimum(v, xp.uint64(big)).astype(xp.int64) if v.dtype == xp.uint64
                        else v.astype(xp.int64) for v in values.values()]).get()
    return dict(zip(values, map(int, stacked)))


def _range(idx, xp, prefix):
    """Reductions for _check_indices: min and max of idx (none when empty)."""
    return {prefix + "lo": idx.min(), prefix + "hi": idx.max()} if idx.size else {}


def _check_indices(idx, n, name, facts, prefix):
    if idx.size:
        lo, hi = facts[prefix + "lo"], facts[prefix + "hi"]
        if lo < 0 or hi >= n:
            bad = int(idx.min()) if lo < 0 else int(idx.max())  # exact, in idx's own type
            pos = int((idx == idx.dtype.type(bad)).nonzero()[0][0])
            raise ValueError(f"{name} must lie in [0, {n}), got {bad} at position {pos}")


def _csr(indptr, indices, n=None):
    xp = _xp_of(("indptr", indptr), ("indices", indices))
    indptr = _int_array(indptr, "indptr", xp)
    indices = _int_array(indices, "indices", xp)
    if indptr.size == 0:
        raise ValueError("indptr must have n_vertices + 1 entries, got an empty array")
    if n is not None and indptr.size != n + 1:
        raise ValueError(f"indptr must have n_vertices + 1 = {n + 1} entries, got {indptr.size}")
    n = indptr.size - 1
    steps = xp.diff(indptr.astype(xp.int64)) if n else None
    facts = _facts(xp, first=indptr[0], last=indptr[-1], **_range(indices, xp, ""),
                   **({"step": steps.min()} if n else {}))
    if facts["first"] != 0:
        raise ValueError(f"indptr must start at 0, got {int(indptr[0])}")
    if n and facts["step"] < 0:
        k = int((steps < 0).nonzero()[0][0])
        raise ValueError(f"indptr must not decrease, got {int(indptr[k])} then {int(indptr[k + 1])} "
                         f"at position {k}")
    if facts["last"] != indices.size:
        raise ValueError(f"indptr must end at len(indices) = {indices.size}, got {int(indptr[-1])}")
    _check_indices(indices, n, "indices", facts, "")
    return "csr", _checked(xp, indptr, indices), n


def _edges(src, dst, n=None):
    xp = _xp_of(("src", src), ("dst", dst))
    src = _int_array(src, "src", xp)
    dst = _int_array(dst, "dst", xp)
    if src.size != dst.size:
        raise ValueError(f"src and dst must have the same length, got {src.size} and {dst.size}")
    if n is not None and (not isinstance(n, (int, np.integer)) or n < 0):
        raise ValueError(f"n_vertices must be a non-negative int, got {n!r}")
    facts = _facts(xp, **_range(src, xp, "s"), **_range(dst, xp, "d"))
    if n is None:
        n = max(facts["shi"], facts["dhi"]) + 1 if src.size else 0
    _check_indices(src, n, "src", facts, "s")
    _check_indices(dst, n, "dst", facts, "d")
    return "edges", _checked(xp, src, dst), int(n)


def _square(shape):
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"csgraph must be a square (N, N) matrix, got shape {tuple(shape)}")
    return int(shape[0])


def _as_graph(g):
    """(kind, arrays, n) for any accepted input; kind is "csr", "csc" (CSR
    arrays of the transpose graph) or "edges"; the arrays are NumPy or CuPy
    as the input is."""
    if isinstance(g, Edges):
        return _edges(g.src, g.dst, g.n_vertices)
    if isinstance(g, tuple):
        if len(g) != 2:
            raise TypeError("a tuple csgraph must be (indptr, indices); use Edges(src, dst) for edge lists")
        return _csr(g[0], g[1])
    fmt = getattr(g, "format", None)
    if fmt is not None and hasattr(g, "nnz"):  # SciPy or CuPy sparse matrix or array
        n = _square(g.shape)
        if fmt == "csr":
            return _csr(g.indptr, g.indices, n)
        if fmt == "csc":  # the transpose graph: the same weak components, edges reversed
            return ("csc",) + _csr(g.indptr, g.indices, n)[1:]
        if fmt == "coo":
            return _edges(g.row, g.col, n)
        csr = g.tocsr()
        return _csr(csr.indptr, csr.indices, n)
    if isinstance(g, np.ndarray) or (_is_cupy(g) and hasattr(g, "nonzero") and hasattr(g, "dtype")):
        if g.dtype.kind not in "biuf":
            raise TypeError(f"csgraph must be a numeric adjacency matrix, got dtype {g.dtype}")
        n = _square(g.shape)
        rows, cols = g.nonzero()
        return _edges(rows, cols, n)
    raise TypeError(
        "csgraph must be a SciPy/CuPy sparse matrix, a dense square array, an "
        f"(indptr, indices) tuple or Edges(src, dst, n_vertices); got {type(g).__name__}")
