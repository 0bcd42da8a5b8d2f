"""Connected components of general graphs, SciPy-compatible.

:func:`connected_components` takes what
``scipy.sparse.csgraph.connected_components`` takes (SciPy sparse matrices
and arrays, dense adjacency matrices) plus CuPy sparse matrices and dense
arrays, ``(indptr, indices)`` CSR tuples and :class:`Edges` lists, and
returns SciPy's result -- weak components, or strong components of a
directed graph (a compiled depth-first search on the CPU; trimming,
forward-backward and colouring on the GPU).  NumPy / SciPy input is labelled on the CPU
(the compiled core), CuPy input on its GPU, with the result on the input's side;
PyTorch tensors, JAX arrays and NetworkX graphs are converted at the door
(:mod:`meshccl._interop`).
:func:`spanning_forest` returns the edges whose union joined two sets.
:func:`list_rank` ranks the elements of linked lists (Wylie's pointer
jumping and Reid-Miller's random splitters, on both backends).
:class:`IncrementalConnectivity` keeps the components of a graph that grows
by batches of edge inserts, and answers batches of connectivity queries
(GConn's incremental connectivity, on both backends).
Seeded graph generators are ``meshccl.graph.generators``
(:mod:`meshccl.graph_generators`, imported on first use).

The layers, one way: this module (options; graphs of other frameworks
made NumPy / CuPy / SciPy by :func:`meshccl._interop.unwrap_graph`) ->
:mod:`._input` (the graph checked) -> :mod:`._dispatch` (the backend, on
the input's device) -> ``meshccl._cpu.graph`` or ``meshccl._gpu.graph`` ->
kernels.  A call with every option at its default on a SciPy CSR, CSC or
COO, NumPy ``(indptr, indices)`` or counted :class:`Edges` skips the
layers: :func:`._dispatch.cpu_checked` hands its arrays to one compiled
call that checks them and labels (the layers run where that check fails,
for their error).  The methods are one table, :mod:`._methods`, read by every
layer.  ``docs/graph.md`` explains the methods, the GPU's rule for 'auto'
and its measurements.
"""

from __future__ import annotations

import time

import numpy as np

from .. import _interop
from . import _dispatch, _input, _methods, _scipy
from ._incremental import INCREMENTAL_METHODS, IncrementalConnectivity
from ._input import Edges
from ._list_rank import LIST_RANK_METHODS, list_rank
from ._methods import COMPRESSION, ITERATIVE, METHODS, canonical

__all__ = ["Edges", "connected_components", "spanning_forest", "release_plans", "list_rank",
           "IncrementalConnectivity", "METHODS", "COMPRESSION", "ITERATIVE", "LIST_RANK_METHODS",
           "INCREMENTAL_METHODS"]

#: the methods each backend runs (every one runs on both)
CPU_METHODS = METHODS
GPU_METHODS = METHODS


def __getattr__(name):
    """``meshccl.graph.generators``: :mod:`meshccl.graph_generators`, imported
    on first use (it imports this module for ``Edges``)."""
    if name == "generators":
        from .. import graph_generators

        return graph_generators
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _check_options(directed, connection, method, compression, max_iterations, cpu_threads,
                   symmetric=False):
    """The options checked as SciPy checks them (``connection`` in any
    case); returns (strong, method, compression) resolved, strong True
    when the call asks for strong components of a directed graph not
    promised symmetric (on a symmetric graph they are the weak ones)."""
    if not isinstance(connection, str) or connection.lower() not in ("weak", "strong"):
        raise ValueError(f"connection must be 'weak' or 'strong' (any case), got {connection!r}")
    strong = bool(directed) and connection.lower() == "strong" and not symmetric
    if strong:  # one algorithm per backend: the weak methods' options do not apply
        for name, value in (("method", method), ("compression", compression),
                            ("max_iterations", max_iterations)):
            if value != ("auto" if name == "method" else None):
                default = "'auto'" if name == "method" else "None"
                raise ValueError(
                    f"{name} applies to weak components only: connection='strong' on a "
                    f"directed graph takes {name}={default}, got {name}={value!r}")
    method = _methods.check_method(method)
    compression = _methods.check_compression(method, compression)
    if max_iterations is not None and (
            isinstance(max_iterations, (bool, np.bool_))
            or not isinstance(max_iterations, (int, np.integer)) or max_iterations < 1):
        raise ValueError(f"max_iterations must be None or an int >= 1, got {max_iterations!r}")
    if (isinstance(cpu_threads, (bool, np.bool_)) or not isinstance(cpu_threads, (int, np.integer))
            or cpu_threads < 0):
        raise ValueError(f"cpu_threads must be an int >= 0 (0: all cores), got {cpu_threads!r}")
    return strong, method, compression


def connected_components(csgraph, directed=True, connection="weak", return_labels=True, *,
                         method="auto", symmetric=False, compression=None, max_iterations=None,
                         cpu_threads=1, return_info=False):
    """Connected components of a graph, like ``scipy.sparse.csgraph.connected_components``.

    Parameters
    ----------
    csgraph : sparse matrix or array, dense array, tuple or Edges
        The graph: a SciPy or CuPy sparse matrix or array of any format
        (every stored entry is an edge, explicit zeros, ``inf`` and ``nan``
        included, as in SciPy -- but not, with SciPy 1.18 or later, the
        zeros inside a BSR matrix's blocks, which SciPy 1.18 drops); a
        dense square NumPy or CuPy array (an
        entry is an edge unless it is zero -- for floats |a| <= 1e-8 --,
        infinite or NaN, as in SciPy; complex accepted); an
        ``(indptr, indices)`` tuple of CSR arrays; or
        :class:`Edges`.  NumPy / SciPy input runs on the CPU, CuPy input on
        the GPU that holds it.  PyTorch tensors and JAX arrays (CPU or
        CUDA) are taken wherever NumPy or CuPy arrays are -- dense
        matrices, the arrays of a tuple or of :class:`Edges` -- and so are
        PyTorch sparse COO, CSR and CSC tensors; they are read without a
        copy and the labels come back as the same kind.  A NetworkX graph
        is read through ``networkx.to_scipy_sparse_array`` (on the CPU):
        ``labels[k]`` is the component of node ``list(G)[k]``.
    directed : bool, optional
        Whether edges have a direction.  For weak connectivity the answer
        is the same either way; with ``directed=False`` 'strong' gives the
        weak components, as in SciPy.  An undirected NetworkX graph is read
        as ``directed=False`` whatever this says (so ``connection='strong'``
        gives its components too); a ``DiGraph`` as given here.
    connection : {'weak', 'strong'}, optional
        Any case, as in SciPy.  'weak' (default): the components of the
        graph with directions ignored.  'strong': u and v share a
        component when each reaches the other along directed edges; on the
        CPU Tarjan's depth-first search (compiled), on the GPU trimming,
        forward-backward search and colouring, the rest left to the CPU's
        search where the GPU's frontier stays narrow (``docs/graph.md``:
        "Strong components").  With ``directed=True`` and ``symmetric=False`` it
        takes none of ``method``, ``compression``, ``max_iterations``
        (their defaults only) and runs on one CPU thread; with
        ``symmetric=True`` the strong components are the weak ones and
        the weak methods run.
    return_labels : bool, optional
        Also return the labels (default True).
    method : str, optional
        The algorithm (table below); all give the same labels on both
        backends.  'auto' (default): the serial union-find on the CPU; on
        the GPU a rule on the input's form, density and ``symmetric``
        (``docs/graph.md``).
    symmetric : bool, optional
        The caller promises that every stored edge (u, v) is also stored as
        (v, u).  Methods may then read each edge from one side and let the
        sampled giant component skip its edges.  A false promise gives wrong
        components.  Default False.
    compression : str, optional
        Path compression of the union-find methods: 'halving', 'none',
        'splitting', 'full' or 'splicing', as :data:`COMPRESSION` lists per
        method (its default first).  Default None: the method's default.
    max_iterations : int, optional
        Cap on the passes of the iterative methods (:data:`ITERATIVE`):
        ``NotConverged`` when that many passes all still changed labels.
        Default None: no cap.
    cpu_threads : int, optional
        Threads of the CPU backend for 'unionfind' and 'ecl' (and 'auto'):
        1 (default) serial, 0 every core this process may run on.  Same
        labels.
    return_info : bool, optional
        Also return a dict: ``method`` (what ran; 'tarjan' and
        'fwbw-colour' for strong components), ``backend`` ('cpu' or
        'gpu'), ``iterations`` (the GPU's colouring rounds for strong
        components; also ``passes``, ``path_vertices``, the vertices of
        paths contracted before the steps, ``pieces``, the vertices of the
        quotient by edges stored both ways when a long search took it, and
        ``host_vertices``, the vertices the GPU left to the CPU's search on
        a narrow frontier) and
        ``seconds``
        (per phase; on the GPU CUDA events, which makes the call wait for
        the device).

    Returns
    -------
    n_components : int
    labels : ndarray of int32 (int64 beyond 2**31 - 1 vertices)
        The component of each vertex, numbered from 0 in order of each
        component's smallest vertex (SciPy's numbering).  CuPy for CuPy
        input, a tensor for PyTorch input, a JAX array for JAX input.  Only
        with ``return_labels=True``.  Strong components on the CPU are
        numbered as the installed SciPy numbers them (the order in which
        its depth-first search completes them, which SciPy 1.18 changed:
        the same search runs here, on the rows as SciPy reads them -- as
        ``csgraph.tocsr()`` stores them, and up to SciPy 1.17 sorted for a
        matrix that is not float64); on the GPU in order of each
        component's smallest vertex -- the same partition.  SciPy's order
        is the order of a depth-first search, a sequential walk: for it on
        a CuPy graph, pass the host copy (``csgraph.get()``).
    info : dict
        Only with ``return_info=True``; last.

    Raises
    ------
    TypeError
        Unsupported input, non-integer index arrays, a mix of NumPy and
        CuPy arrays.
    ValueError
        A non-square matrix, an invalid CSR or edge list (the message names
        the array, the value and its position), or an invalid option (named
        with its value), such as a method other than 'auto' for strong
        components of a directed graph.
    meshccl.errors.NotConverged
        An iterative method used up ``max_iterations`` passes.

    Notes
    -----
    Methods (``docs/graph.md`` explains each and its measurements):

    ==================  ======================================================
    method              algorithm
    ==================  ======================================================
    'unionfind'         union-find over every stored edge (alias 'async')
    'rem-cas', 'early'  GConn's other union rules (Hong, Dhulipala and
    'hooks', 'jtb'      Shun 2020)
    'ecl'               ECL-CC (Jaiganesh and Burtscher 2018)
    'kout', 'hb'        k-out / hook-based sampling, then a finish pass
    'bfs-sample'        breadth-first-search sampling, then a finish pass
    'sv'                Shiloach-Vishkin (iterative)
    'edge-lp'           Hawick et al.'s kernel 1, edge propagation (iterative)
    'vertex-lp'         Hawick et al.'s kernel 2, vertex frontier (iterative)
    'bfs-cc'            Hawick et al.'s kernel 3, BFS (alias 'bfs'; iterative)
    ==================  ======================================================

    This function may synchronize the device (to read the count).

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
    >>> connected_components(np.array([[0, np.inf], [np.nan, 0]]))  # no edge, as in SciPy
    (2, array([0, 1], dtype=int32))
    >>> connected_components(g, method="rem-cas", compression="halving")[0]
    5
    >>> connected_components(g, connection="WEAK", cpu_threads=0)[1].tolist()
    [0, 0, 1, 2, 3, 2, 4]

    A NetworkX graph; the labels follow ``list(G)``:

    >>> import networkx as nx
    >>> G = nx.Graph([("a", "b"), ("c", "d"), ("b", "e")])
    >>> n, labels = connected_components(G)
    >>> n, dict(zip(G, labels.tolist()))
    (2, {'a': 0, 'b': 0, 'c': 1, 'd': 1, 'e': 0})

    Strong components (a cycle 0 -> 1 -> 2 -> 0 and a path 2 -> 3 -> 4),
    numbered as SciPy numbers them:

    >>> cyc = sp.csr_matrix(([1, 1, 1, 1, 1], ([0, 1, 2, 2, 3], [1, 2, 0, 3, 4])), shape=(5, 5))
    >>> connected_components(cyc, connection="strong")
    (3, array([2, 2, 2, 1, 0], dtype=int32))

    On a GPU the same calls take CuPy arrays and return CuPy labels, and
    PyTorch CUDA tensors give tensors::

        import cupyx.scipy.sparse as csp
        n, labels = connected_components(csp.csr_matrix(g))   # labels: cupy int32
        n, labels = connected_components((indptr_tensor, indices_tensor))   # torch int32
    """
    if (type(connection) is str and connection in ("weak", "strong") and type(method) is str
            and method == "auto" and symmetric is False and compression is None
            and max_iterations is None and type(cpu_threads) is int and cpu_threads == 1
            and not return_info):
        # SciPy CSR / CSC / COO or NumPy arrays with no options: one compiled call
        strong = bool(directed) and connection == "strong"
        out = _dispatch.cpu_checked(csgraph, strong)
        if out is None and strong and _input.is_cupy(_input.first_array(csgraph)):
            with _dispatch.on_device(csgraph):  # a CuPy graph the host's search takes whole
                out = _dispatch.strong_on_host(csgraph)
        if out is not None:
            return out if return_labels else out[0]
    csgraph, back, undirected = _interop.unwrap_graph(csgraph)
    if undirected:  # a NetworkX Graph: every edge stored both ways
        directed, symmetric = False, True
    strong, method, compression = _check_options(directed, connection, method, compression,
                                                 max_iterations, cpu_threads, symmetric)
    with _dispatch.on_device(csgraph):
        if strong:
            out = _strong_components(csgraph, return_info)
        else:
            out = _components(csgraph, method, symmetric, compression, max_iterations,
                              cpu_threads, return_info)
    count, labels, info = out
    result = (count, labels) if return_labels else (count,)
    if return_info:
        return _interop.rewrap(result + (info,), back)
    return _interop.rewrap(result, back) if return_labels else count


def _components(csgraph, method, symmetric, compression, max_iterations, cpu_threads,
                return_info):
    """(count, labels, info): validate, resolve 'auto', run the backend."""
    on_gpu = _input.is_cupy(_input.first_array(csgraph))
    probe = {} if method == "auto" else None
    # CuPy CSR for a method that reads rows only through a checked copy of
    # indptr: checked on the device without waiting (see _input.csr)
    defer = {} if method == "auto" or method in _methods.DEFERRED_CHECK_METHODS else None
    timer = None
    t0 = time.perf_counter()
    if return_info and on_gpu:
        from .._gpu.timing import PhaseTimer

        timer = PhaseTimer()
        kind, arrays, n = timer.run("validate", lambda: _input.as_graph(csgraph, probe, defer))
    else:
        kind, arrays, n = _input.as_graph(csgraph, probe, defer)
    on_gpu = _input.is_cupy(arrays[0])
    if method == "auto":
        method = _dispatch.auto_rule(kind, n, int(arrays[1].size), on_gpu, symmetric, probe)
    info = {"method": canonical(method), "backend": "gpu" if on_gpu else "cpu", "iterations": 1,
            "seconds": {"prepare": time.perf_counter() - t0}}
    t1 = time.perf_counter()
    if on_gpu:
        if return_info and timer is None:
            from .._gpu.timing import PhaseTimer

            timer = PhaseTimer()
        count, labels = _dispatch.gpu(kind, arrays, n, method, symmetric, compression,
                                      max_iterations, timer, info if return_info else None, defer)
        if return_info:
            info["seconds"].update(timer.seconds())
    else:
        count, labels, info["iterations"] = _dispatch.cpu(kind, arrays, n, method, symmetric,
                                                          compression, max_iterations, cpu_threads)
    info["seconds"]["label"] = time.perf_counter() - t1
    return count, labels, info


def _strong_components(csgraph, return_info):
    """(count, labels, info) of the strong components of a directed graph."""
    timer = None
    t0 = time.perf_counter()
    if _input.is_cupy(_input.first_array(csgraph)):  # a small graph: the host's search
        out = _dispatch.strong_on_host(csgraph)
        if out is not None:
            seconds = time.perf_counter() - t0
            info = {"method": "fwbw-colour", "backend": "gpu", "iterations": 0,
                    "method_phases": ["host"], "passes": 0, "replayed_passes": 0,
                    "host_vertices": int(out[1].size), "path_vertices": 0,
                    "seconds": {"prepare": 0.0, "host": seconds, "label": seconds}}
            return out + (info,)
    if return_info and _input.is_cupy(_input.first_array(csgraph)):
        from .._gpu.timing import PhaseTimer

        timer = PhaseTimer()
        kind, arrays, n = timer.run("validate", lambda: _input.as_graph(csgraph))
    else:  # (NumPy arrays in their own integer type: the CPU search takes int32 as it is)
        kind, arrays, n = _input.as_graph(csgraph, int64=False)
    on_gpu = _input.is_cupy(arrays[0])
    # (SciPy up to 1.17 reads a sparse matrix that is not float64 with its rows sorted)
    sort_rows = (not on_gpu and getattr(csgraph, "format", None) is not None
                 and hasattr(csgraph, "nnz") and _scipy.sorts_rows(csgraph))
    info = {"method": "fwbw-colour" if on_gpu else "tarjan", "backend": "gpu" if on_gpu else "cpu",
            "iterations": 1, "seconds": {"prepare": time.perf_counter() - t0}}
    t1 = time.perf_counter()
    count, labels = _dispatch.strong(kind, arrays, n, timer, info if return_info else None,
                                     sort_rows)
    if timer is not None:
        info["seconds"].update(timer.seconds())
    info["seconds"]["label"] = time.perf_counter() - t1
    return count, labels, info


def spanning_forest(csgraph):
    """A spanning forest of the graph's weak components.

    Every edge returned is an edge of the input (in its stored direction)
    whose union joined two different sets; the result has
    ``n_vertices - n_components`` edges, no cycle, and the input's
    components.  On the CPU the edges come in the order they were met; on
    the GPU in input order, and which edge of a cycle is kept depends on
    thread timing.

    Parameters
    ----------
    csgraph : as for :func:`connected_components`

    Returns
    -------
    Edges
        ``Edges(src, dst, n_vertices)`` of the forest (int64 arrays, CuPy
        for CuPy input, tensors / JAX arrays for PyTorch / JAX input).

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.graph import spanning_forest, Edges
    >>> f = spanning_forest(Edges(np.array([0, 1, 2, 3]), np.array([1, 2, 0, 4]), 6))
    >>> f.src.tolist(), f.dst.tolist(), f.n_vertices
    ([0, 1, 3], [1, 2, 4], 6)
    """
    csgraph, back, _ = _interop.unwrap_graph(csgraph)
    with _dispatch.on_device(csgraph):
        kind, arrays, n = _input.as_graph(csgraph)
        src, dst = _dispatch.forest(kind, arrays, n)
    if kind == "csc":  # its rows are the input's columns
        src, dst = dst, src
    return Edges(*_interop.rewrap((src, dst), back), n)


def release_plans():
    """Free the launch plans of repeated GPU calls recorded by this thread.

    From the second call with the same CuPy CSR buffers, a GPU call of
    'ecl', 'kout' or 'hb' (or 'auto' running one of them) is recorded as a
    CUDA graph and replayed (``docs/graph.md``); the plans keep device
    memory until released.  Nothing to do without CuPy.

    Examples
    --------
    >>> from meshccl.graph import release_plans
    >>> release_plans()
    """
    from .._gpu import graph_plan  # imports no CuPy

    graph_plan.release()


def _auto_method(csgraph, symmetric=False):
    """The method ``connected_components(csgraph, method='auto',
    symmetric=symmetric)`` runs (validating the input as it does).  For
    benchmarks."""
    probe = {}
    with _dispatch.on_device(csgraph):
        kind, arrays, n = _input.as_graph(csgraph, probe)
    return _dispatch.auto_rule(kind, n, int(arrays[1].size), _input.is_cupy(arrays[0]),
                               symmetric, probe)
