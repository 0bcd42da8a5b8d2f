"""Graph connected components on the CPU: the compiled core's union-find
and the other methods of :mod:`meshccl.graph._methods`
(``meshccl/_cpu/core/graph.hpp``, which describes each).

Every edge (v, u) is a union of v and u -- in either direction, so an
asymmetric (directed) graph gives its weakly connected components without
being symmetrised.  As in ECL-CC, a vertex first takes its smallest
neighbour as parent when that neighbour is smaller (a union without a find);
the rest are unions.  Every method leaves each vertex pointing at the
smallest vertex of its component (or at a smaller vertex of it), and one
forward pass numbers the components in increasing order of their smallest
vertex: SciPy's numbering.

:func:`components` runs any method on validated NumPy input (int64 arrays
from :mod:`meshccl.graph._input`); :func:`checked_components` is the
one-call path of the commonest inputs (checked in the compiled call,
int32 or int64 as they come, weak or strong components); the methods of the papers run serially
here, as twins of the GPU kernels, and 'unionfind' / 'ecl' also on threads
(:func:`components_parallel`).  'ecl' and 'tiles' are the core's union-find
here: serially it is what their GPU passes compute, and with threads
:func:`components_parallel` already unites each thread's range of
consecutive vertices first, as 'tiles' unites each tile.  Tuning constants are ``meshccl._tuning``'s
GRAPH_* names, read at call time.  The core releases the GIL and starts its
own threads (``std::thread``) for each call: no thread pool outlives a
call, so forked children and calls from several Python threads at once
need no care.
"""

import numpy as np

from .. import _tuning
from ..graph._methods import COMPRESS_CODE, ITERATIVE, RULES, canonical
from .image import _core, cpu_count

#: vertices sampled for the most frequent root (the GPU's one block of 1024)
SAMPLES = 1024
#: seed of the samples (the samplers' picks, the parallel scheme's estimate)
SEED = 0x6D657368
#: the parallel schemes by the core's code
SCHEMES = {1: "local", 2: "cas"}


def _forest_array(n):
    """The parent array: int32 below 2**31 vertices, else int64."""
    return np.empty(n, dtype=np.int64 if n >= 2**31 else np.int32)


def _int64(arrays):
    """The arrays as the core reads them: int64, contiguous (as validated
    input comes; a copy otherwise)."""
    return tuple(np.ascontiguousarray(a, dtype=np.int64) for a in arrays)


def _run(method, kind, arrays, n, label_dtype, **options):
    """(count, labels, passes) of the core's ``method`` (-1 passes: not converged)."""
    P = _forest_array(n)
    count, passes = _core.graph_components(method, kind != "edges", *_int64(arrays), int(n), P,
                                           **options)
    return int(count), P.astype(label_dtype, copy=False), int(passes)


def components(kind, arrays, n, method, symmetric=False, compression="halving",
               max_iterations=None, cpu_threads=1):
    """Weak components of validated input with any method:
    ``(count, labels, iterations)``, labels numbered as SciPy numbers them
    (int32, int64 beyond 2**31 - 1 vertices) and iterations the passes of
    an iterative method (else 1).  ``kind``: "csr", "csc" (read as CSR: the
    transpose graph has the same weak components) or "edges";
    ``compression`` as :func:`meshccl.graph._methods.check_compression`
    resolved it; ``cpu_threads`` as :func:`meshccl.graph.connected_components`
    takes it (used by 'unionfind' with 'halving', 'ecl' and 'tiles')."""
    label_dtype = np.int64 if n >= 2**31 else np.int32
    method = canonical(method)
    kind = "edges" if kind == "edges" else "csr"
    if method in ITERATIVE:
        return components_by(method, kind, arrays, n, label_dtype, max_iterations)
    if method in ("kout", "hb", "bfs-sample"):
        picks = np.random.default_rng(SEED).integers(0, n, SAMPLES) if n else None
        k = _tuning.GRAPH_K_OUT if method == "kout" else _tuning.GRAPH_HB_EDGES
        count, labels, _ = _run(method, kind, arrays, n, label_dtype, picks=picks, k=k,
                                levels=_tuning.GRAPH_BFS_SAMPLE_LEVELS, symmetric=bool(symmetric))
    elif cpu_threads != 1 and (method in ("ecl", "tiles") or (method == "unionfind"
                                                             and compression == "halving")):
        count, labels = components_parallel(kind, arrays, n, label_dtype,
                                            cpu_threads or cpu_count())
    elif method in RULES and (method != "unionfind" or compression != "halving"):
        count, labels, _ = _run("rule", kind, arrays, n, label_dtype, rule=RULES[method],
                                comp=COMPRESS_CODE[compression])
    else:
        count, labels, _ = _run("union", kind, arrays, n, label_dtype)
    return count, labels, 1


#: the forms checked_components takes, by its code
CHECKED_KINDS = {"csr": 0, "csc": 1, "edges": 2}


def checked_components(kind, a, b, n, strong=False, backward=False, sort_rows=False,
                       smallest=False, out=None):
    """``(count, labels)`` of a graph of ``n`` vertices not validated yet
    -- ``kind`` "csr" or "csc" (``a``, ``b``: indptr and indices) or
    "edges" (src and dst), int32 or int64 arrays of one type -- in one
    compiled call that checks it too (``core/checked_components.cpp``):
    weak components by the serial union-find, or (``strong``) strong ones
    by the search of :mod:`meshccl._cpu.strong` on the rows SciPy reads,
    each row read ``backward`` or forward (a CSR's rows sorted first with
    ``sort_rows``); labels int32, numbered as SciPy numbers them (with
    ``smallest``: strong components in order of each one's smallest
    vertex, as the GPU backend numbers them; ``out``: an int32 array of
    ``n`` elements to write them into).  None where the arrays are no
    valid graph of those types (the caller's general path then says what
    is wrong)."""
    if out is not None:
        labels = out
    else:
        labels = (_core.int32_array(n) if n >= _tuning.CPU_GRAPH_MAPPED_LABELS
                  else np.empty(n, np.int32))
    try:
        count = _core.checked_components(CHECKED_KINDS[kind], a, b, labels, strong, backward,
                                         sort_rows, smallest)
    except TypeError:  # arrays nanobind does not take (non-native byte order, objects)
        return None
    return None if count < 0 else (count, labels)


def components_by(method, kind, arrays, n, label_dtype, max_iterations=None):
    """Weak components with one of the papers' iterative methods;
    ``(count, labels, passes)``.  ``max_iterations`` caps the rounds /
    sweeps / steps of 'sv', 'edge-lp' and 'vertex-lp' (NotConverged
    beyond); the serial BFS needs no cap."""
    from ..errors import NotConverged

    cap = -1 if max_iterations is None else int(max_iterations)
    count, labels, passes = _run(method, kind, arrays, n, label_dtype, cap=cap)
    if passes < 0:
        raise NotConverged(f"method={method!r} did not converge within "
                           f"max_iterations={max_iterations} passes")
    return count, labels, passes


def forest(kind, arrays, n):
    """Edges (src, dst) of a spanning forest: the edges whose union merged
    two sets, in the order they were met."""
    fsrc = np.empty(max(n - 1, 0), dtype=np.int64)
    fdst = np.empty(max(n - 1, 0), dtype=np.int64)
    nf = _core.graph_forest(kind != "edges", *_int64(arrays), int(n), _forest_array(n), fsrc, fdst)
    return fsrc[:nf].copy(), fdst[:nf].copy()


def components_parallel(kind, arrays, n, label_dtype, threads, stats=None):
    """Weak components on up to ``threads`` threads (at most the cores this
    process may run on), with the serial union-find's labels: the scheme of
    ``graph.hpp`` ('local' or 'cas'), or the serial code for one thread or a
    graph of fewer than ``GRAPH_CPU_PARALLEL_MIN_WORK`` vertices + stored
    edges.  ``stats`` (a dict, optional) gets 'threads', 'scheme'
    ('serial', 'local' or 'cas'), 'cross' (edges united in phase 2 of
    'local', those of the vertices a full buffer stopped at included as
    their count of stored edges) and 'stopped' (ranges whose buffer filled
    up)."""
    threads = max(1, min(int(threads), cpu_count()))
    kind = "edges" if kind == "edges" else "csr"
    m = int(arrays[1].size)
    if threads == 1 or n < 2 or n + m < _tuning.GRAPH_CPU_PARALLEL_MIN_WORK:
        count, labels, _ = _run("union", kind, arrays, n, label_dtype)
        scheme, cross, stopped = "serial", 0, 0
    else:
        # the sample that estimates the share of cross edges: stored edges
        # of random vertices, or random edges of an edge list
        pool = m if kind == "edges" else n
        picks = np.sort(np.random.default_rng(SEED).integers(
            0, max(pool, 1), min(_tuning.GRAPH_CPU_SAMPLE_VERTICES, pool)))
        P = _forest_array(n)
        count, code, cross, stopped = _core.graph_parallel(
            kind != "edges", *_int64(arrays), int(n), P, picks, threads,
            _tuning.GRAPH_CPU_CHUNKS_PER_THREAD, float(_tuning.GRAPH_CPU_LOCAL_CROSS),
            _tuning.GRAPH_CPU_SERIAL_CROSS, _tuning.GRAPH_CPU_CROSS_BUFFER_DIV,
            _tuning.GRAPH_CPU_CROSS_BUFFER_MIN)
        scheme, labels = SCHEMES[code], P.astype(label_dtype, copy=False)
    if stats is not None:
        stats.update(threads=threads, scheme=scheme, cross=int(cross), stopped=int(stopped))
    return int(count), labels
