"""Dispatch of validated graphs to a backend: the CPU (compiled core) or the GPU (CuPy).

The API validates the options, then, on the input's device
(:func:`on_device`), validates the graph (:mod:`._input`), resolves
``method='auto'`` (:func:`auto_rule`) and calls :func:`cpu` or :func:`gpu`.
The backends are imported only when they run (here, and by :mod:`._input`
for the device check of CuPy input), so that ``import meshccl.graph`` needs
neither the compiled core nor CuPy.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from . import _methods, _scipy
from ._input import Edges, first_array, is_cupy


def on_device(csgraph):
    """A context in which CuPy input is handled on its own GPU (whatever
    device is current); nothing for NumPy / SciPy input."""
    a = first_array(csgraph)
    device = getattr(a, "device", None) if is_cupy(a) else None
    if device is None:  # NumPy / SciPy (or no array: validation says what is wrong)
        return contextlib.nullcontext()
    import cupy

    return cupy.cuda.Device(device.id)


def auto_rule(kind, n, m, on_gpu, symmetric, probe=None):
    """The one rule of method='auto': the CPU's union-find, or the GPU's
    :func:`meshccl._gpu.graph.choose_method` (``probe``: what the
    validation of a CuPy graph measured for it, see :func:`._input.csr`)."""
    if not on_gpu:
        return "unionfind"
    from .._gpu.graph import choose_method

    probe = probe or {}
    return choose_method(kind, n, m, symmetric, probe.get("chain"), probe.get("local"))


@functools.lru_cache(maxsize=64)
def _scipy_format(cls):
    """'csr', 'csc' or 'coo' for SciPy's sparse matrix and array classes of
    those formats (by module and name: SciPy is not imported), else None."""
    fmt, _, suffix = cls.__name__.partition("_")
    if (cls.__module__.startswith("scipy.sparse") and fmt in ("csr", "csc", "coo")
            and suffix in ("matrix", "array")):
        return fmt
    return None


@functools.cache
def _cpu_graph():
    """meshccl._cpu.graph, imported on the first call that needs it."""
    from .._cpu import graph

    return graph


def cpu_checked(csgraph, strong):
    """``(count, labels)`` of the CPU's one-call path for the commonest
    inputs, every option at its default: a SciPy CSR, CSC or COO matrix or
    array, an ``(indptr, indices)`` pair of NumPy arrays or an
    :class:`~._input.Edges` list of NumPy arrays with an int vertex count,
    index arrays int32 or int64 (:func:`meshccl._cpu.graph.checked_components`:
    checked and labelled in one compiled call).  None for any other input,
    and for an invalid one: the general path then validates it and says
    what is wrong."""
    cls = type(csgraph)
    if cls is tuple or cls is Edges:
        if cls is tuple and len(csgraph) != 2:
            return None
        a, b = csgraph[0], csgraph[1]
        if type(a) is not np.ndarray or type(b) is not np.ndarray:
            return None
        if cls is tuple:
            kind, n = "csr", a.size - 1
        else:
            kind, n = "edges", csgraph.n_vertices
            if type(n) is not int:
                return None
        sort_rows = False
    else:
        fmt = _scipy_format(cls)
        if fmt is None:
            return None
        shape = csgraph.shape
        if len(shape) != 2 or shape[0] != shape[1]:
            return None
        n = shape[0]
        if fmt == "coo":
            kind, a, b = "edges", csgraph.row, csgraph.col
        else:
            kind, a, b = fmt, csgraph.indptr, csgraph.indices
        sort_rows = strong and fmt == "csr" and _scipy.sorts_rows(csgraph)
    if not 0 <= n < 2**31 - 2:
        return None
    backward = strong and _scipy.strong_rows() == "backward"
    return _cpu_graph().checked_components(kind, a, b, n, strong, backward, sort_rows)


def host_route(n, m):
    """Whether the strong components of a CuPy graph of n vertices and m
    stored edges are found by the host's search (:func:`strong_on_host`):
    at most ``STRONG_HOST_SMALL`` vertices + edges, or at most
    ``STRONG_HOST_SPARSE`` with at most ``STRONG_HOST_SPARSE_DEGREE``
    edges a vertex (docs/graph.md: "What 'auto' does")."""
    from .. import _tuning

    size = n + m
    return 0 < size and (size <= _tuning.STRONG_HOST_SMALL or (
        size <= _tuning.STRONG_HOST_SPARSE and m <= _tuning.STRONG_HOST_SPARSE_DEGREE * n))


def host_index_pair(a, b):
    """Two host index arrays (``indptr`` and ``indices``, or the two ends of
    edges) in one type the compiled search takes: as they are when both are
    int32 or both int64, else both as int64; None when either is uint64
    (values past int64's range: the GPU path checks them and says so).

    >>> [x.dtype.name for x in host_index_pair(np.zeros(2, np.int64), np.zeros(1, np.uint16))]
    ['int64', 'int64']
    """
    if a.dtype == b.dtype and a.dtype in (np.int32, np.int64):
        return a, b
    if any(x.dtype.kind == "u" and x.dtype.itemsize == 8 for x in (a, b)):
        return None
    return a.astype(np.int64), b.astype(np.int64)


def strong_on_host(csgraph):
    """``(count, labels)`` of the strong components of a CuPy graph that
    :func:`host_route` sends to the host (a cupyx CSR, CSC or COO matrix,
    an ``(indptr, indices)`` pair or an :class:`~._input.Edges` list) by
    the host's search: the index arrays copied to the host as they are,
    checked, searched and numbered in order of each component's smallest
    vertex in one compiled call (:func:`meshccl._cpu.graph.checked_components`),
    the labels copied back (CuPy int32), both ways through one page-locked
    buffer (:func:`meshccl._gpu.staging.round_trip`) -- the GPU's own steps
    would cost tens of launches and host reads whatever the size.  None
    for any other input, a larger graph and an invalid one (the GPU path
    then validates it and says what is wrong)."""
    if isinstance(csgraph, Edges):
        kind, a, b, n = "edges", csgraph.src, csgraph.dst, csgraph.n_vertices
        if n is not None and type(n) is not int:
            return None
    elif isinstance(csgraph, tuple):
        if len(csgraph) != 2:
            return None
        kind, (a, b) = "csr", csgraph
        n = a.size - 1 if getattr(a, "ndim", 0) == 1 else -1
    else:
        kind = getattr(csgraph, "format", None)
        shape = getattr(csgraph, "shape", ())
        if kind not in ("csr", "csc", "coo") or len(shape) != 2 or shape[0] != shape[1]:
            return None
        n = shape[0]
        a, b = (csgraph.row, csgraph.col) if kind == "coo" else (csgraph.indptr, csgraph.indices)
        kind = "edges" if kind == "coo" else kind
    if not (is_cupy(a) and is_cupy(b)) or a.ndim != 1 or b.ndim != 1:
        return None
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu" or any(
            x.dtype.kind == "u" and x.dtype.itemsize == 8 for x in (a, b)):
        return None  # (uint64: host_index_pair takes none; not worth the copies)
    m = b.size
    if (n is not None and not 0 <= n < 2**31 - 2) or not host_route(n or 0, m):
        return None

    def search(views, out):
        a, b = views
        k = n
        if k is None:  # (Edges without a count: the largest vertex + 1)
            k = int(max(a.max(), b.max())) + 1 if m and a.size else 0
            if not host_route(k, m):
                return None
        a, b = host_index_pair(a, b)
        # (out: None where n was not known before the copies)
        return _cpu_graph().checked_components(kind, a, b, k, strong=True, smallest=True,
                                               out=out)

    from .._gpu import staging

    return staging.round_trip((a, b), n, search)


def cpu(kind, arrays, n, method, symmetric, compression, max_iterations, cpu_threads):
    """(count, labels, iterations) on the CPU backend."""
    from .._cpu import graph as backend

    return backend.components(kind, arrays, n, method, symmetric, compression,
                              max_iterations, cpu_threads)


def gpu(kind, arrays, n, method, symmetric, compression=None, max_iterations=None,
        timer=None, info=None, defer=None):
    """(count, labels) on the GPU, count a Python int.

    ``defer``: :func:`._input.csr`'s record of a CSR not checked yet (empty
    or None: the input was checked already).  For a method of
    :data:`._methods.DEFERRED_CHECK_METHODS` the check runs beside the
    method (:func:`meshccl._gpu.graph.check_aside`; the kernels read rows
    through a clamped copy of indptr), or a plan recorded for these arrays
    replays the whole call (:mod:`meshccl._gpu.graph_plan`; not with
    ``timer`` or ``info``); the facts come back with the count in one
    transfer and invalid input raises then.  Any other method waits for
    the check first."""
    from .._gpu import graph as backend

    if not defer or "arrays" not in defer:
        count, labels = backend.components(kind, arrays, n, method, symmetric,
                                           compression=compression, max_iterations=max_iterations,
                                           timer=timer, info=info)
        return int(count), labels  # the one host synchronisation
    indptr, indices = defer["arrays"]
    if method not in _methods.DEFERRED_CHECK_METHODS:
        defer["raise"](defer["read"](backend.check(indptr, indices)))  # checked input first
        return gpu(kind, arrays, n, method, symmetric, compression, max_iterations, timer, info)
    plan = None
    if timer is None and info is None:
        from .._gpu import graph_plan

        plan = graph_plan.lookup(kind, indptr, indices, n, method, symmetric, compression)
    if plan is not None:
        pending, labels = plan()
    else:
        pending, join = backend.check_aside(indptr, indices)
        try:
            _, labels = backend.components(kind, arrays, n, method, symmetric,
                                           compression=compression,
                                           max_iterations=max_iterations, timer=timer, info=info,
                                           facts=pending)
        finally:
            join()  # the caller's stream waits for the check run aside
    facts = defer["read"](pending)  # the one host synchronisation: facts and count
    defer["raise"](facts)
    return facts["count"], labels


def strong(kind, arrays, n, timer=None, info=None, sort_rows=False):
    """(count, labels) of the strong components on the input's backend:
    the installed SciPy's depth-first search on the CPU (its numbering;
    ``sort_rows``: a CSR's rows read sorted, as SciPy up to 1.17 reads a
    matrix that is not float64), trimming, forward-backward and colouring
    on the GPU (components in order of their smallest vertex); count a
    Python int.  ``timer`` and ``info``: the GPU's phase timer and info
    dict (None: not wanted)."""
    from .._cpu import strong as cpu_backend

    if is_cupy(arrays[0]):
        from .._gpu import strong as backend

        def host(indptr, indices, k):  # the GPU's narrow-frontier hand-over
            return cpu_backend.strong_components("csr", (indptr, indices), k)[1]

        return backend.strong_components(kind, arrays, n, timer, info, host)
    return cpu_backend.strong_components(kind, arrays, n, sort_rows)


def forest(kind, arrays, n):
    """(src, dst) of a spanning forest on the input's backend."""
    if is_cupy(arrays[0]):
        from .._gpu import graph as backend
    else:
        from .._cpu import graph as backend
    return backend.forest(kind, arrays, n)

