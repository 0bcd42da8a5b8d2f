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

Methods (``method=``, every one on both backends, all giving SciPy's
labels): union-find over the edges with GConn's union rules ('unionfind' =
'async', 'rem-cas', 'early', 'hooks', 'jtb', each with its valid
``compression=`` rules, see :data:`COMPRESSION`), ECL-CC ('ecl'), GConn's
samplers with a union-find finish ('kout', 'hb', 'bfs-sample'),
Shiloach-Vishkin ('sv') and Hawick et al.'s graph kernels ('edge-lp',
'vertex-lp', 'bfs-cc' = 'bfs').  The alternative union rules live next to
the core in ``kernels/unionfind.cuh`` (and ``meshccl/_cpu/graph.py``);
meshes and the default graph methods use the core's rule only.
``spanning_forest`` records the edges whose union hooked, on either backend.
Seeded graph generators (NumPy or CuPy output) are ``meshccl.graph.generators``
(the module :mod:`meshccl.graph_generators`, imported on first use).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

#: 'auto' picks per backend (see connected_components).  Union-find over
#: every stored edge: 'unionfind' (alias 'async'), and GConn's other union
#: rules 'rem-cas', 'early', 'hooks', 'jtb'; 'ecl' ECL-CC; samplers with a
#: union-find finish: 'kout' (k-out, Afforest / GConn), 'hb' (hook-based),
#: 'bfs-sample' (a breadth-first search); iterative methods: Shiloach-Vishkin
#: ('sv'), Hawick et al.'s kernels 1-3 ('edge-lp', 'vertex-lp', 'bfs-cc',
#: alias 'bfs').  Every method runs on both backends.
METHODS = ("auto", "unionfind", "async", "ecl", "kout", "hb", "bfs-sample", "rem-cas", "early",
           "hooks", "jtb", "sv", "edge-lp", "vertex-lp", "bfs-cc", "bfs")
#: the methods each backend runs
CPU_METHODS = METHODS
GPU_METHODS = METHODS
#: the compression rules each method accepts (``compression=``), its
#: default first.  The union-find rules combine as ConnectIt / GConn allow:
#: Rem's algorithm walks by parent value and never finds a root, so 'full'
#: does not apply to it, and splicing belongs to it alone; JTB's find is
#: splitting or none.  The other methods use the core's path halving only
#: ('halving' accepted) or no union-find at all (none accepted).
COMPRESSION = {
    "unionfind": ("halving", "none", "splitting", "full"),
    "async": ("halving", "none", "splitting", "full"),
    "rem-cas": ("splicing", "none", "halving", "splitting"),
    "early": ("halving", "none", "splitting", "full"),
    "hooks": ("halving", "none", "splitting", "full"),
    "jtb": ("splitting", "none"),
    "auto": ("halving",), "ecl": ("halving",), "kout": ("halving",), "hb": ("halving",),
    "bfs-sample": ("halving",),
    "sv": (), "edge-lp": (), "vertex-lp": (), "bfs-cc": (), "bfs": (),
}
#: the methods that iterate to a fixed point (``max_iterations=`` applies)
ITERATIVE = ("sv", "edge-lp", "vertex-lp", "bfs-cc", "bfs")


def __getattr__(name):
    """``meshccl.graph.generators``: :mod:`meshccl.graph_generators`, imported
    on first use (it imports this module for ``Edges``)."""
    if name == "generators":
        from . import graph_generators

        return graph_generators
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Edges(NamedTuple):
    """An edge list: edge k joins ``src[k]`` and ``dst[k]``.

    Accepted wherever a graph is (:func:`connected_components`,
    :func:`spanning_forest`); NumPy arrays run on the CPU, CuPy arrays on
    their GPU.

    Attributes
    ----------
    src, dst : array of int
        The endpoints, of equal length, any integer dtype.
    n_vertices : int, optional
        Number of vertices; defaults to ``max(src, dst) + 1`` (0 for no
        edges).

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.graph import Edges, connected_components
    >>> connected_components(Edges(np.array([0, 2]), np.array([1, 3]), 6))
    (4, array([0, 0, 1, 1, 2, 3], dtype=int32))
    """

    src: object
    dst: object
    n_vertices: int | None = None


def connected_components(csgraph, directed=True, connection="weak", return_labels=True, *,
                         method="auto", symmetric=False, compression=None, max_iterations=None,
                         cpu_threads=1, return_info=False):
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
    method : str, optional
        Algorithm, one of :data:`METHODS`; all give the same labels, on
        both backends (the CPU runs serial twins of the GPU kernels).

        * 'unionfind' (alias 'async'): union-find over every stored edge
          (GConn's Union-Async: the larger root is hooked under the smaller
          by CAS; on the GPU one thread per edge, CSR rows found by binary
          search).
        * 'rem-cas', 'early', 'hooks', 'jtb': GConn's other union rules, one
          thread per edge.  'rem-cas': Rem's algorithm without locks (two
          walks step by parent value, a root is hooked by CAS).  'early':
          the two walks go up together and stop where they meet.  'hooks':
          the CAS goes to an auxiliary array, so the write to the parent
          array is uncontended.  'jtb': Jayanti-Tarjan-Boix-Adserà
          randomized linking by a hashed priority (then every vertex is
          pointed at its component's smallest vertex).
        * 'ecl': ECL-CC -- every vertex starts at its first smaller
          neighbour, then threads, warps or blocks (by degree: up to 16, up
          to 352, more) hook the rest.
        * 'kout', 'hb', 'bfs-sample': GConn's samplers, then the most
          frequent root L of 1024 sampled vertices is found and a finish
          pass unites the edges of the vertices outside L.  'kout' unites
          the first 2 edges of every vertex; 'hb' (hook-based) points every
          vertex at its first smaller neighbour, then lets the vertices
          still roots unite their first 2 edges; 'bfs-sample' runs a
          breadth-first search (at most 512 levels) from the sampled vertex
          of largest degree and takes what it reached as L's set.
        * 'sv': Shiloach-Vishkin as Dehne and Yogaratnam run it on a GPU
          (grid-stride loops; hooking of roots under smaller parents and
          pointer jumping in separate kernels, until nothing changes).
        * 'edge-lp', 'vertex-lp', 'bfs-cc' (alias 'bfs'): Hawick et al.'s
          graph kernels 1-3 -- label propagation over the edges, over the
          active vertices' adjacency lists (a frontier of vertices whose
          label dropped), and one breadth-first search per component from
          its smallest vertex.  Their pass count grows with the graph's
          diameter (and for 'bfs-cc' with the number of components); on
          the GPU the change flags of several passes are read at once.
        * 'auto': on the CPU the union-find ('unionfind', which starts
          like ECL-CC; parallel with ``cpu_threads``).  On the GPU
          (``meshccl._gpu.graph.choose_method``; :func:`_auto_method` says
          what it picks for an input):

          - edge lists (COO, ``Edges``, dense arrays) run 'unionfind'
            directly on the edges (sampling needs each vertex's edges
            together), or 'early' when they look like a path numbered in
            order (the test below; on the in-order line of 4 M edges
            'unionfind' took 86 ms on an H200: every thread hooks v + 1
            under v at once, which builds one 4 M-long chain);
          - CSR/CSC input runs 'hb' when ``symmetric=True`` and it stores
            more than 6 entries per vertex, 'kout' when it stores more than
            2.3 (``meshccl._gpu.graph.HB_MIN_DEGREE`` and
            ``KOUT_MIN_DEGREE`` give the measurements);
          - 'early' when it stores at most 2 entries per vertex and at
            least 3/4 of 1024 pseudo-random stored entries (v, u) have
            |u - v| = 1 (a path numbered in order;
            ``meshccl._gpu.graph.chain_probe``: one launch of one block
            on the unchecked arrays, its 8-byte count read before the
            choice; the check then still runs beside 'ecl');
          - otherwise 'ecl'.

          Sampling is restricted to symmetric input: the saving comes from
          skipping the vertices of the sampled giant component, whose
          edges the other ends also store; without the promise every
          remaining edge is still visited, so sampling only adds a pass
          (H200, RMAT scale 22, not symmetric: 'ecl' 3.39 ms, 'kout' 4.70).
          GConn (Hong, Dhulipala and Shun, section 4.7) samples only dense
          graphs.  meshccl's k-out also lets the giant component's
          vertices skip their second sampled edge once it is found, and
          then wins on sparse graphs that are mostly one component (H100,
          symmetric CSR, 'kout' against 'ecl': road-like 4900² grid
          subgraph with 2.41 entries per vertex 3.12 against 5.10 ms, 2-D
          grid 2048² 1.14 against 2.22) but loses on fragmented ones
          (2048² grid with 55 % of its edges, 2.2 entries per vertex: 1.58
          against 1.35; 64 disjoint trees 1.01 against 0.73; random, 2.0
          entries: 1.29 against 1.15); hence the threshold of 2.3.  On the
          in-order line of 4 M vertices 'ecl' took 41.0 ms (every vertex's
          first unions build one 4 M-long chain), 'early' 2.88 ms (H200):
          hence the path test.  On the other graphs 'early' was 0.8-1.6x
          'ecl''s time, so a false positive costs little.  The sampled
          fraction is 1 on that line, about 1/2 on the 4096² grids, 0 on
          the shuffled graphs.
    symmetric : bool, optional
        The caller promises that every stored edge (u, v) is also stored as
        (v, u), as in an undirected graph held as a symmetric matrix.  The
        GPU methods then take each edge from one side only, the samplers
        let the vertices of the giant component skip their edges, and
        'vertex-lp' / 'bfs-cc' use the input as their adjacency lists
        instead of building a symmetric copy.  A false promise gives wrong
        components.  Default False: any input, directed or not, gives its
        weak components.
    compression : {None, 'halving', 'none', 'splitting', 'full', 'splicing'}, optional
        Path compression of the union-find rules (None: the method's
        default).  Valid combinations (:data:`COMPRESSION`, default first):
        'unionfind' / 'async' / 'early' / 'hooks': 'halving', 'none',
        'splitting', 'full'; 'rem-cas': 'splicing', 'none', 'halving',
        'splitting'; 'jtb': 'splitting', 'none'; 'ecl', 'kout', 'hb',
        'bfs-sample', 'auto': 'halving' only (the core's); 'sv',
        'edge-lp', 'vertex-lp', 'bfs-cc': none (ValueError for any).
    max_iterations : int, optional
        Cap on the passes of the iterative methods ('sv', 'edge-lp',
        'vertex-lp', 'bfs-cc'; on the CPU the serial BFS is never capped):
        ``NotConverged`` when that many passes all still changed labels.
        Ignored by the other methods.  Default None: no cap.
    cpu_threads : int, optional
        Threads for the CPU backend (numba), as in :func:`meshccl.label`:
        1 (default) runs serially, 0 uses every core numba sees, more than
        numba's thread count is capped there.  Used by 'unionfind' /
        'async' (with the default 'halving' compression), 'ecl' and
        'auto'; they then share one parallel union-find
        (``meshccl._cpu.graph``, the comment before ``SERIAL_CROSS``):
        paths are halved with plain stores and roots hooked with
        compare-and-swap (an LLVM ``cmpxchg``), retried when a race moved
        the root, so no union is lost.  A sample of the edges decides the
        scheme: when at most ``LOCAL_CROSS`` (1/4) of them join two of the
        threads' vertex ranges (graphs numbered with locality: grids,
        roads, lines) each thread unites the edges inside its own range and
        buffers the others, which are united afterwards; otherwise the
        threads unite chunks of edges directly with CAS.  Small graphs run
        serially.  The labels are the serial ones.  The other methods and
        compression rules run serially whatever ``cpu_threads`` is; CuPy
        input (the GPU backend) ignores it.
    return_info : bool, optional
        Also return a dict, as :func:`meshccl.label` does: ``method`` (what
        ran; 'auto' resolved), ``backend`` ('cpu' or 'gpu'), ``iterations``
        (passes of an iterative method, else 1) and ``seconds``: wall
        seconds of ``prepare`` (validation, with its one transfer on the
        GPU) and ``label`` (the rest, waiting for the GPU); on the GPU also
        CUDA-event seconds of ``validate`` (the same validation), of each
        step of the method (the names in ``info["method_phases"]``, e.g.
        'init' and 'hook' for 'ecl', 'init' and 'union' for the union-find
        rules, 'sample' and 'finish' for the samplers, 'csr' where an edge
        list is turned into CSR, 'iterate' for the iterative methods) and
        of the relabel to SciPy's numbering ('flatten', 'scan',
        'relabel').  On the GPU this makes the call wait for the device.
        Default False.

    Returns
    -------
    n_components : int
    labels : ndarray of int32 (int64 beyond 2**31 - 1 vertices)
        Component of each vertex, numbered from 0 in order of each
        component's smallest vertex.  A CuPy array for CuPy input.
    info : dict
        Only with ``return_info=True`` (see there); last.

    Raises
    ------
    TypeError
        Unsupported input, indices that are not integers, or a mix of NumPy
        and CuPy arrays.
    ValueError
        A non-square matrix, indptr of the wrong length, not starting at 0,
        decreasing, or not ending at len(indices), indices out of range or
        negative, an unknown connection or method, a compression the
        method does not take, a bad max_iterations or cpu_threads.  CuPy
        input is checked on the device in one fused pass.  For CSR input
        to 'ecl', 'kout' and 'hb' (and 'auto' running one of them)
        the host does not wait for that check: it runs on a side stream
        beside the method, whose kernels read rows through a copy of
        indptr clamped to [0, len(indices)] and skip values outside
        [0, n) (``meshccl._gpu.graph.check_aside``, ``clamp_indptr``), and
        the check's facts come back with the count, so the error is raised
        then and no kernel ever reads out of bounds.
    NotImplementedError
        ``connection='strong'`` on a directed graph.
    meshccl.errors.NotConverged
        An iterative method used up ``max_iterations`` passes.

    Notes
    -----
    Repeated GPU calls on the same arrays are bound by the host's kernel
    launches (about twenty per call).  From the second call with the same
    CuPy CSR buffers (same device addresses, sizes and dtypes, method,
    stream and thread; 'ecl', 'kout', 'hb' and 'auto' where it runs one of
    them; without ``return_info``) the call is recorded once as a CUDA
    graph -- check, method, relabel -- and replayed: one launch and one
    copy of the labels.  The graph reads the arrays as they are when it
    runs, so values changed in place are labelled (and checked) as on a
    first call.  A plan keeps its scratch on the device (about 20 bytes
    per vertex; graphs of at most 2**23 vertices, four plans per thread);
    :func:`release_plans` frees them (``meshccl._gpu.graph_plan``).

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
    >>> connected_components(g, method="rem-cas", compression="halving")[0]
    5
    >>> connected_components(g, method="edge-lp", max_iterations=100)[0]
    5
    >>> connected_components(g, cpu_threads=0)[1].tolist()   # every core, same labels
    [0, 0, 1, 2, 3, 2, 4]

    On a GPU the same call takes CuPy arrays and returns CuPy labels::

        import cupy, cupyx.scipy.sparse as csp
        n, labels = connected_components(csp.csr_matrix(g))   # labels: cupy int32
    """
    if connection not in ("weak", "strong"):
        raise ValueError(f"connection must be 'weak' or 'strong', got {connection!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    compression = _check_compression(method, compression)
    if max_iterations is not None and (
            isinstance(max_iterations, (bool, np.bool_))
            or not isinstance(max_iterations, (int, np.integer)) or max_iterations < 1):
        raise ValueError(f"max_iterations must be None or an int >= 1, got {max_iterations!r}")
    if (isinstance(cpu_threads, (bool, np.bool_)) or not isinstance(cpu_threads, (int, np.integer))
            or cpu_threads < 0):
        raise ValueError(f"cpu_threads must be an int >= 0 (0: all cores), got {cpu_threads!r}")
    if directed and connection == "strong":
        raise NotImplementedError(
            "connection='strong' is not implemented yet; use connection='weak' "
            "(or directed=False)")
    probe = {} if method == "auto" else None
    # CuPy CSR input for a method that reads rows only through a checked
    # copy of indptr: validated on the device without waiting (see _csr)
    from ._gpu.graph import DEFERRED_CHECK_METHODS  # importable without CuPy

    defer = {} if method == "auto" or method in DEFERRED_CHECK_METHODS else None
    timer = None
    t0 = time.perf_counter()
    if return_info and _input_is_cupy(csgraph):
        from ._gpu.timing import PhaseTimer

        timer = PhaseTimer()
        kind, arrays, n = timer.run("validate", lambda: _as_graph(csgraph, probe, defer))
    else:
        kind, arrays, n = _as_graph(csgraph, probe, defer)
    if method == "auto":
        method = _auto_rule(kind, n, int(arrays[1].size), _is_cupy(arrays[0]), symmetric, probe)
    on_gpu = _is_cupy(arrays[0])
    info = {"method": "bfs-cc" if method == "bfs" else "unionfind" if method == "async" else method,
            "backend": "gpu" if on_gpu else "cpu", "iterations": 1,
            "seconds": {"prepare": time.perf_counter() - t0}}
    t1 = time.perf_counter()
    if on_gpu:
        if return_info and timer is None:  # validated arrays of a kind _input_is_cupy missed
            from ._gpu.timing import PhaseTimer

            timer = PhaseTimer()
        count, labels = _gpu_components(kind, arrays, n, method, symmetric, compression,
                                        max_iterations, timer, info if return_info else None,
                                        defer)
        if return_info:
            info["seconds"].update(timer.seconds())
    else:
        count, labels = _cpu_components(kind, arrays, n, method, symmetric, compression,
                                        max_iterations, cpu_threads, info)
    info["seconds"]["label"] = time.perf_counter() - t1
    out = (count, labels) if return_labels else (count,)
    if return_info:
        return out + (info,)
    return out if return_labels else count


def release_plans():
    """Free the launch plans of repeated GPU calls (see the Notes of
    :func:`connected_components`) recorded by this thread: their device
    memory goes back to CuPy's memory pool, and calls are counted afresh.
    Nothing to do without CuPy.

    Examples
    --------
    >>> from meshccl.graph import release_plans
    >>> release_plans()
    """
    from ._gpu import graph_plan  # imports no CuPy

    graph_plan.release()


def _cpu_components(kind, arrays, n, method, symmetric, compression, max_iterations,
                    cpu_threads, info):
    """(count, labels) on the CPU backend; ``info["iterations"]`` set for
    the iterative methods."""
    label_dtype = np.int64 if n >= 2**31 else np.int32
    from ._cpu import graph as cpu

    ckind = "edges" if kind == "edges" else "csr"
    if method in ITERATIVE:
        count, labels, info["iterations"] = cpu.components_by(method, ckind, arrays, n,
                                                              label_dtype, max_iterations)
    elif method == "kout":
        count, labels = cpu.components_kout(ckind, arrays, n, label_dtype, symmetric)
    elif method in ("hb", "bfs-sample"):
        count, labels = cpu.components_sampled(method, ckind, arrays, n, label_dtype, symmetric)
    elif cpu_threads != 1 and (method == "ecl" or (method in ("unionfind", "async")
                                                   and compression == "halving")):
        import numba

        count, labels = cpu.components_parallel(ckind, arrays, n, label_dtype,
                                                cpu_threads or numba.config.NUMBA_NUM_THREADS)
    elif method in cpu.RULES and (method not in ("unionfind", "async")
                                  or compression != "halving"):
        count, labels = cpu.components_rule(method, compression, ckind, arrays, n, label_dtype)
    elif kind in ("csr", "csc"):
        count, labels = cpu.components_csr(*arrays, n, label_dtype)
    else:
        count, labels = cpu.components_edges(*arrays, n, label_dtype)
    return count, labels


def _auto_method(csgraph, symmetric=False):
    """The method ``connected_components(csgraph, method='auto',
    symmetric=symmetric)`` runs (validating the input as it does; on CuPy
    input that is one small device-to-host transfer, which also brings the
    rule's sampled count).  For benchmarks."""
    probe = {}
    kind, arrays, n = _as_graph(csgraph, probe)
    return _auto_rule(kind, n, int(arrays[1].size), _is_cupy(arrays[0]), symmetric, probe)


def _auto_rule(kind, n, m, on_gpu, symmetric, probe=None):
    """The one rule of method='auto' (documented in connected_components):
    the CPU's serial union-find, or the GPU's choose_method (``probe``: what
    the validation of a CuPy CSR measured for it, see _csr)."""
    if not on_gpu:
        return "unionfind"
    from ._gpu.graph import choose_method

    return choose_method(kind, n, m, symmetric, (probe or {}).get("chain"))


def _check_compression(method, compression):
    """The compression rule to use (the method's default for None); a clear
    ValueError for a combination the method does not take."""
    valid = COMPRESSION[method]
    if compression is None:
        return valid[0] if valid else None
    if compression not in COMPRESSION["unionfind"] + ("splicing",):
        raise ValueError(f"compression must be None or one of 'halving', 'none', 'splitting', "
                         f"'full', 'splicing', got {compression!r}")
    if compression not in valid:
        if not valid:
            raise ValueError(f"method={method!r} uses no union-find, so it takes no "
                             f"compression (got {compression!r})")
        raise ValueError(f"method={method!r} takes compression in {valid}, got {compression!r}")
    return compression


def _gpu_components(kind, arrays, n, method, symmetric, compression=None,
                    max_iterations=None, timer=None, info=None, defer=None):
    """(count, labels) on the GPU.  ``defer``: _csr's record of a CSR not
    checked yet (empty or None: the input was checked already).  For a
    method of DEFERRED_CHECK_METHODS the check runs beside the method
    (check_aside; the kernels read rows through a clamped copy of indptr),
    or a plan recorded for these arrays replays the whole call
    (meshccl._gpu.graph_plan; not with ``timer`` or ``info``); the facts
    come back with the count in one transfer and invalid input raises
    then.  Any other method waits for the check first."""
    from ._gpu import graph as gpu

    if not defer or "arrays" not in defer:
        count, labels = gpu.components(kind, arrays, n, method, symmetric,
                                       compression=compression, max_iterations=max_iterations,
                                       timer=timer, info=info)
        return int(count), labels  # the one host synchronisation
    indptr, indices = defer["arrays"]
    if method not in gpu.DEFERRED_CHECK_METHODS:
        defer["raise"](defer["read"](gpu.check(indptr, indices)))  # checked input first
        return _gpu_components(kind, arrays, n, method, symmetric, compression, max_iterations,
                               timer, info)
    plan = None
    if timer is None and info is None:
        from ._gpu import graph_plan

        plan = graph_plan.lookup(kind, indptr, indices, n, method, symmetric, compression)
    if plan is not None:
        pending, labels = plan()
    else:
        if gpu.CHECK_ASIDE:  # on a side stream, beside the method
            pending, join = gpu.check_aside(indptr, indices)
        else:
            pending, join = gpu.check(indptr, indices), lambda: None
        try:
            _, labels = gpu.components(kind, arrays, n, method, symmetric, compression=compression,
                                       max_iterations=max_iterations, timer=timer, info=info,
                                       facts=pending)
        finally:
            join()  # the caller's stream waits for the check run aside
    facts = defer["read"](pending)  # the one host synchronisation: facts and count
    defer["raise"](facts)
    return facts["count"], labels


def spanning_forest(csgraph):
    """A spanning forest of the graph's weak components.

    Every edge returned is an edge of the input (in its stored direction),
    taken when its union joined two different sets (``unite`` reported a
    hook); the result has ``n_vertices - n_components`` edges, no cycle,
    and the same components as the input.  NumPy / SciPy input runs on the
    CPU (deterministic: the edges in the order they were met); CuPy input
    on its GPU (one thread per stored edge; which edge of a cycle is kept
    depends on thread timing; the edges come in input order), with CuPy
    arrays out.

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

    On a GPU::

        import cupy
        f = spanning_forest(Edges(cupy.asarray(src), cupy.asarray(dst), n))  # CuPy int64 arrays
    """
    kind, arrays, n = _as_graph(csgraph)
    if _is_cupy(arrays[0]):
        from ._gpu import graph as gpu

        src, dst = gpu.forest(kind, arrays, n)
    else:
        from ._cpu import graph as cpu

        src, dst = cpu.forest(kind, arrays, n)
    if kind == "csc":  # its rows are the input's columns
        src, dst = dst, src
    return Edges(src, dst, n)


# --------------------------------------------------------------------------
# validation: every input becomes ("csr" | "csc", (indptr, indices)) or
# ("edges", (src, dst)) of integer arrays, checked, on the input's device:
# NumPy (int64, for the CPU backend) or CuPy (its own integer type; checked
# on the device -- int32 / int64 / uint32 / uint64 arrays by one fused pass,
# meshccl._gpu.graph.check, other types by CuPy reductions -- with one
# transfer of the results, so a bad index is an error here, never a GPU
# fault; only the error path reads the arrays again for its exact message).

def _is_cupy(a):
    return type(a).__module__.split(".")[0] in ("cupy", "cupyx")


def _input_is_cupy(g):
    """Whether an input (before validation) holds CuPy arrays, by its first array."""
    if isinstance(g, Edges):
        return _is_cupy(g.src)
    if isinstance(g, tuple):
        return bool(g) and _is_cupy(g[0])
    return _is_cupy(g)


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


#: (lo, hi) of no index at all
_NO_RANGE = (np.iinfo(np.int64).max, np.iinfo(np.int64).min)
#: the slots of meshccl._gpu.graph.check's facts (the fused kernel's)
_CHECKED = ("first", "last", "dec", "lo", "hi", "chain", "count")


def _range(*arrays):
    """Reductions for _bounds: min and max of each array (none when empty)."""
    return {f"{k}{i}": getattr(a, k)() for i, a in enumerate(arrays) if a.size
            for k in ("min", "max")}


def _bounds(facts):
    """(lo, hi): the smallest and largest of _range's reductions in facts
    (:data:`_NO_RANGE` without any)."""
    lo = [v for k, v in facts.items() if k.startswith("min")]
    hi = [v for k, v in facts.items() if k.startswith("max")]
    return (min(lo), max(hi)) if lo else _NO_RANGE


def _device_facts(indptr, a, b=None, probe=None):
    """Validation facts of CuPy arrays of the types the fused kernel reads
    (meshccl._gpu.graph.check), with one transfer: a dict of
    :data:`_CHECKED`, plus the samples of 'auto''s chain probe (None: no
    probe) when ``probe`` is given; None for other types."""
    from ._gpu import graph as gpu

    if not gpu.supported(*(x for x in (indptr, a, b) if x is not None)):
        return None
    facts = gpu.check(indptr, a, b)
    chain = None
    if probe is not None:  # 'auto' on the GPU: its count rides along, in facts[5]
        chain = (gpu.chain_probe(indptr, a, indptr.size - 1, out=facts[5:]) if indptr is not None
                 else gpu.chain_probe_edges(a, b, out=facts[5:]))
    facts = dict(zip(_CHECKED, map(int, facts.get())))
    facts["samples"] = chain and chain[1]
    return facts


def _check_indices(n, lo, hi, *named):
    """ValueError for the first of ``named`` ((name, array) pairs) holding a
    value outside [0, n); ``lo``, ``hi``: the smallest and largest value of
    them all (clamped to int64), so only the error path reads them again."""
    if lo >= 0 and hi < n:
        return
    for name, idx in named:
        if idx.size:
            bad = int(idx.min())  # exact, in idx's own type
            if bad >= 0:
                bad = int(idx.max())
                if bad < n:
                    continue
            pos = int((idx == idx.dtype.type(bad)).nonzero()[0][0])
            raise ValueError(f"{name} must lie in [0, {n}), got {bad} at position {pos}")


def _csr(indptr, indices, n=None, probe=None, defer=None):
    """("csr", checked arrays, n).  ``defer``: a dict where the check of
    CuPy input may be left to _gpu_components (None: check now).  When the
    fused kernel reads these dtypes, the check is not launched here:
    ``defer`` gets "arrays" (indptr, indices), "read" (the device facts ->
    dict of Python ints, one transfer) and "raise" (that dict -> raises the
    error of invalid input).  _gpu_components then runs the check beside
    the method (meshccl._gpu.graph.check_aside; the method reads rows
    through a clamped copy of indptr), or replays a recorded plan of the
    whole call (meshccl._gpu.graph_plan), or, for a method that reads
    unchecked input, checks first.  'auto' needs the chain probe at most
    CHAIN_MAX_DEGREE entries per vertex: it runs alone here (it reads in
    bounds whatever the arrays hold) and its count is read at once (one
    8-byte transfer), so that the check can still go beside 'ecl'; on
    invalid input the count means nothing, and the check raises later.
    (Reading it with the check's facts made the host wait for the whole
    check before launching the method: 0.14-0.32 ms on 4 M-vertex graphs
    of 1-2 entries per vertex, H200.)"""
    xp = _xp_of(("indptr", indptr), ("indices", indices))
    indptr = _int_array(indptr, "indptr", xp)
    indices = _int_array(indices, "indices", xp)
    if indptr.size == 0:
        raise ValueError("indptr must have n_vertices + 1 entries, got an empty array")
    if n is not None and indptr.size != n + 1:
        raise ValueError(f"indptr must have n_vertices + 1 = {n + 1} entries, got {indptr.size}")
    n = indptr.size - 1
    if defer is not None and xp is not np:
        from ._gpu import graph as gpu

        if gpu.supported(indptr, indices):
            if probe is not None:
                chain = gpu.chain_probe(indptr, indices, n)  # None above CHAIN_MAX_DEGREE
                if chain is not None:
                    probe["chain"] = int(chain[0]) / chain[1]

            def read(dev):
                return dict(zip(_CHECKED, map(int, dev.get())))

            def fail(facts):
                _csr_errors(indptr, indices, n, facts)

            defer.update(arrays=(indptr, indices), read=read)
            defer["raise"] = fail
            return "csr", _checked(xp, indptr, indices), n
    facts = None if xp is np else _device_facts(indptr, indices, probe=probe)
    if facts is None:  # NumPy, or CuPy types the fused kernel does not read
        chain = None
        if probe is not None and xp is not np:  # 'auto' on the GPU: its count rides along
            from ._gpu.graph import chain_probe

            chain = chain_probe(indptr, indices, n)
        facts = _facts(xp, first=indptr[0], last=indptr[-1], dec=(indptr[1:] < indptr[:-1]).any(),
                       **_range(indices), **({"chain": chain[0]} if chain is not None else {}))
        facts["lo"], facts["hi"] = _bounds(facts)
        facts["samples"] = chain and chain[1]
    _csr_errors(indptr, indices, n, facts)
    if facts["samples"]:
        probe["chain"] = facts["chain"] / facts["samples"]
    return "csr", _checked(xp, indptr, indices), n


def _csr_errors(indptr, indices, n, facts):
    """The ValueError of an invalid CSR, from its validation facts (only
    the error path reads the arrays again, for the message)."""
    if facts["first"] != 0:
        raise ValueError(f"indptr must start at 0, got {int(indptr[0])}")
    if facts["dec"]:
        k = int((indptr[1:] < indptr[:-1]).nonzero()[0][0])
        raise ValueError(f"indptr must not decrease, got {int(indptr[k])} then {int(indptr[k + 1])} "
                         f"at position {k}")
    if facts["last"] != indices.size:
        raise ValueError(f"indptr must end at len(indices) = {indices.size}, got {int(indptr[-1])}")
    _check_indices(n, facts["lo"], facts["hi"], ("indices", indices))


def _edges(src, dst, n=None, probe=None):
    xp = _xp_of(("src", src), ("dst", dst))
    src = _int_array(src, "src", xp)
    dst = _int_array(dst, "dst", xp)
    if src.size != dst.size:
        raise ValueError(f"src and dst must have the same length, got {src.size} and {dst.size}")
    if n is not None and (not isinstance(n, (int, np.integer)) or n < 0):
        raise ValueError(f"n_vertices must be a non-negative int, got {n!r}")
    facts = None if xp is np else _device_facts(None, src, dst, probe=probe)
    lo, hi = _bounds(_facts(xp, **_range(src, dst))) if facts is None else (facts["lo"], facts["hi"])
    if n is None:
        n = hi + 1 if src.size else 0
    _check_indices(n, lo, hi, ("src", src), ("dst", dst))
    if facts is not None and facts["samples"]:
        probe["chain"] = facts["chain"] / facts["samples"]
    return "edges", _checked(xp, src, dst), int(n)


def _square(shape):
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"csgraph must be a square (N, N) matrix, got shape {tuple(shape)}")
    return int(shape[0])


def _as_graph(g, probe=None, defer=None):
    """(kind, arrays, n) for any accepted input; kind is "csr", "csc" (CSR
    arrays of the transpose graph) or "edges"; the arrays are NumPy or CuPy
    as the input is.  ``probe``: a dict for method='auto', which gets
    ``"chain"`` (see meshccl._gpu.graph.chain_probe / chain_probe_edges) where CuPy input is
    sparse enough for the rule to look, read with the validation's one
    transfer (no extra synchronisation).  ``defer``: see _csr (CSR, CSC
    and other sparse formats converted to CSR; edge lists always wait)."""
    if isinstance(g, Edges):
        return _edges(g.src, g.dst, g.n_vertices, probe)
    if isinstance(g, tuple):
        if len(g) != 2:
            raise TypeError("a tuple csgraph must be (indptr, indices); use Edges(src, dst) for edge lists")
        return _csr(g[0], g[1], probe=probe, defer=defer)
    fmt = getattr(g, "format", None)
    if fmt is not None and hasattr(g, "nnz"):  # SciPy or CuPy sparse matrix or array
        n = _square(g.shape)
        if fmt == "csr":
            return _csr(g.indptr, g.indices, n, probe, defer)
        if fmt == "csc":  # the transpose graph: the same weak components, edges reversed
            return ("csc",) + _csr(g.indptr, g.indices, n, probe, defer)[1:]
        if fmt == "coo":
            return _edges(g.row, g.col, n, probe)
        csr = g.tocsr()
        return _csr(csr.indptr, csr.indices, n, probe, defer)
    if isinstance(g, np.ndarray) or (_is_cupy(g) and hasattr(g, "nonzero") and hasattr(g, "dtype")):
        if g.dtype.kind not in "biuf":
            raise TypeError(f"csgraph must be a numeric adjacency matrix, got dtype {g.dtype}")
        n = _square(g.shape)
        rows, cols = g.nonzero()
        return _edges(rows, cols, n, probe)
    raise TypeError(
        "csgraph must be a SciPy/CuPy sparse matrix, a dense square array, an "
        f"(indptr, indices) tuple or Edges(src, dst, n_vertices); got {type(g).__name__}")
