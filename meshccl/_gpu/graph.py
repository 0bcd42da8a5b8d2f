"""Graph connected components on the GPU: ``_kernels/graph.cu``, then the numbering of
:mod:`.number_roots`.

Input arrives validated by :mod:`meshccl.graph._input` as CuPy integer
arrays: ``("csr" | "csc", (indptr, indices))`` or ``("edges", (src, dst))``;
the caller has made the input's device current.  The parent array has type
I (int32 below 2**31 vertices, int64 beyond), the neighbour arrays keep
their own int32 / int64 type J (others are cast), and row offsets are
widened to int64.  Nothing is copied to the host; the only synchronisation
is the caller's when it reads the component count -- except for the
iterative methods ('edge-lp', 'vertex-lp', 'bfs-cc', 'sv'), which read the
change flags of a batch of passes at once (:mod:`.passes`, shared with the
mesh methods; the pass count and the labels are exact), and BFS sampling,
which reads its frontier size after batches of levels.  :func:`check` is
the validation's device pass (one fused kernel over indptr and the index
arrays).  The methods are those of :mod:`meshccl.graph._methods`; the
tuning constants are ``meshccl._tuning``'s GRAPH_* names, read at call time.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np

from .. import _tuning
from ..graph._methods import (COMPRESS_CODE, COMPRESSION, DEFERRED_CHECK_METHODS, ITERATIVE, RULES,
                              canonical)
from .loader import c_type, kernels, settled
from .passes import until_settled
from .number_roots import NULL, relabel

BLOCK = 256
#: threads of a 'tiles' block (one tile of 2**GRAPH_TILE_SHIFT vertices each) and
#: the blocks resident per multiprocessor (4 x 32 KiB of shared memory)
TILE_BLOCK = 512
TILE_BLOCKS_PER_SM = 4
#: vertices looked up to find the most frequent root after sampling: one
#: block of MESHCCL_GRAPH_SAMPLES threads in kernels/graph.cu
SAMPLES = 1024
_SEED = 0x6D657368636C6C  # fixed: the frequent root only steers work, never the labels
#: the index types :func:`check` reads (meshccl_graph_check's instantiations)
CHECK_TYPES = frozenset(np.dtype(t) for t in (np.int32, np.int64, np.uint32, np.uint64))
#: loads each thread of meshccl_graph_check issues per array before using
#: any (the kernel's unroll)
CHECK_UNROLL = 4


@functools.lru_cache(maxsize=None)
def _sm_count(device_id: int) -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"])


@functools.lru_cache(maxsize=None)
def _dummy(device_id: int, dtype: str):
    """Two zeros standing in for a pointer a kernel does not read (or, for
    meshccl_graph_kout's ``big``, reads as "no frequent root yet")."""
    import cupy

    out = cupy.zeros(2, dtype=dtype)
    return settled(out)


def _grid(work: int, per_block: int, cap_per_sm: int) -> tuple:
    """Blocks for a grid-stride loop over ``work`` items: enough to cover it,
    at most ``cap_per_sm`` per multiprocessor, at least one."""
    import cupy

    cap = cap_per_sm * _sm_count(cupy.cuda.Device().id)
    return (max(1, min(-(-work // per_block), cap)),)


def choose_method(kind: str, n: int, m: int, symmetric: bool = False, chain=None,
                  local=None) -> str:
    """The GPU rule of ``method='auto'`` (docs/graph.md: "auto on the GPU"
    gives the measurements behind it): edge lists run 'early' when they
    store at most ``GRAPH_AUTO_CHAIN_MAX_DEGREE`` edges per vertex and
    ``chain`` -- the fraction of sampled edges (v, u) with |u - v| = 1
    (:func:`chain_probe_edges`; None: not measured) -- is at least
    ``GRAPH_AUTO_CHAIN_MIN_FRACTION``, a path numbered in order; else
    'unionfind'.  CSR/CSC input runs 'tiles' when ``local`` -- the fraction
    of sampled entries (v, u) with u in v's tile (:func:`tile_probe`; None:
    not measured) -- is at least ``GRAPH_AUTO_TILES_MIN_FRACTION``; else
    'hb' when it is promised symmetric and stores more than
    ``GRAPH_AUTO_HB_MIN_DEGREE`` (6) entries per vertex, 'kout' when it
    stores more than ``GRAPH_AUTO_KOUT_MIN_DEGREE`` (2.3); else 'ecl'
    (constants of ``meshccl._tuning``)."""
    t = _tuning
    if kind == "edges":
        path = (chain is not None and m <= t.GRAPH_AUTO_CHAIN_MAX_DEGREE * n
                and chain >= t.GRAPH_AUTO_CHAIN_MIN_FRACTION)
        return "early" if path else "unionfind"
    if local is not None and m <= t.GRAPH_AUTO_TILES_MAX_DEGREE * n \
            and local >= t.GRAPH_AUTO_TILES_MIN_FRACTION:
        return "tiles"
    if symmetric and m > t.GRAPH_AUTO_HB_MIN_DEGREE * n:
        return "hb"
    if symmetric and m > t.GRAPH_AUTO_KOUT_MIN_DEGREE * n:
        return "kout"
    return "ecl"


def tile_shift() -> int:
    """log2 of the vertices of a 'tiles' tile (``GRAPH_TILE_SHIFT``),
    checked: 5 to 13 (32 to 8192 vertices; 4 bytes each of shared memory)."""
    shift = _tuning.GRAPH_TILE_SHIFT
    if not isinstance(shift, int) or not 5 <= shift <= 13:
        raise ValueError(f"GRAPH_TILE_SHIFT must be an int in [5, 13], got {shift!r}")
    return shift


def tile_probe(indptr, indices, n: int, out=None):
    """For 'auto' on CSR input: ``(hits, samples)`` where ``hits`` is a 0-d
    CuPy int64 count (no host synchronisation) of the entries (v, u) with
    u in v's tile of 2**``GRAPH_TILE_SHIFT`` vertices among ``samples`` =
    min(m, 1024) pseudo-random stored entries; None where the rule does
    not look (a graph of one tile, whose every entry is local whatever its
    shape; more than ``GRAPH_AUTO_TILES_MAX_DEGREE`` entries per vertex; no
    entries; index arrays other than int32 / int64).  ``out``: a
    1-entry CuPy int64 array to count into (e.g. ``facts[5:]`` of
    :func:`check`, so the one transfer of the facts brings it), else a new
    one.  One launch of one block (``meshccl_graph_tile_probe``); it reads
    only in-bounds entries whatever indptr holds, so it may run before
    indptr is validated (its count is then meaningless and never used:
    validation raises)."""
    import cupy

    m = indices.size
    ok = {np.dtype(np.int32), np.dtype(np.int64)}
    shift = tile_shift()
    if not m or n <= 1 << shift or m > _tuning.GRAPH_AUTO_TILES_MAX_DEGREE * n \
            or np.dtype(indptr.dtype) not in ok or np.dtype(indices.dtype) not in ok:
        return None
    (probe,) = kernels("graph.cu", f"meshccl_graph_tile_probe<{c_type(indptr.dtype)}, "
                                   f"{c_type(indices.dtype)}>")
    hits = cupy.empty(1, dtype=cupy.int64) if out is None else out
    probe((1,), (SAMPLES,), (indptr, indices, np.int64(n), np.int64(m), np.int32(shift), hits,
                             np.uint64(_SEED)))
    return hits[0], min(m, SAMPLES)


def chain_probe_edges(src, dst, out=None):
    """For 'auto' on an edge list: ``(hits, samples)``, ``hits`` a 0-d CuPy
    int64 count (no host synchronisation) of the edges (src[e], dst[e])
    with |src - dst| = 1 among min(m, 1024) hashed edges, or None
    (no edges, or arrays not both int32 or both int64).  The caller's rule
    also needs m <= GRAPH_AUTO_CHAIN_MAX_DEGREE * n, known only after validation."""
    import cupy

    m = src.size
    if not m or np.dtype(src.dtype) != np.dtype(dst.dtype) \
            or np.dtype(src.dtype) not in {np.dtype(np.int32), np.dtype(np.int64)}:
        return None
    (probe,) = kernels("graph.cu", f"meshccl_graph_chain_probe_edges<{c_type(src.dtype)}>")
    hits = cupy.empty(1, dtype=cupy.int64) if out is None else out
    probe((1,), (SAMPLES,), (src, dst, np.int64(m), hits, np.uint64(_SEED)))
    return hits[0], min(m, SAMPLES)


def supported(*arrays) -> bool:
    """Whether :func:`check` takes arrays of these dtypes (int32, int64,
    uint32, uint64; :mod:`meshccl.graph._input` reduces the others with CuPy)."""
    return all(np.dtype(a.dtype) in CHECK_TYPES for a in arrays)


def check(indptr, a, b=None, blocks_per_sm=None, keep=None, stream=None):
    """The facts :mod:`meshccl.graph._input` validates CuPy index arrays with, in
    one pass over them (``meshccl_graph_check``, then
    ``meshccl_graph_check_done`` folds its blocks' parts): a 7-entry CuPy
    int64 array, not read here (the caller reads it with its one transfer):

    0, 1. ``indptr[0]``, ``indptr[-1]`` (0, 0 for ``indptr=None``, an edge list);
    2. -1 if ``indptr[k + 1] < indptr[k]`` somewhere, else 0;
    3, 4. the smallest and largest value of ``a`` and ``b`` (int64 max and
       min when they are empty);
    5. unset: the slot for the count of :func:`tile_probe` or
       :func:`chain_probe_edges` (``out=facts[5:]``);
    6. unset: the slot for the component count of a deferred check
       (:func:`components` with ``facts``).

    Values beyond the int64 range are clamped to its max (only ever an
    error, whose message recomputes the exact value).  ``b``: None or an
    array as long as ``a``; every dtype must be :func:`supported`.
    ``blocks_per_sm``: the scan's resident blocks per multiprocessor
    (default ``_tuning.GRAPH_CHECK_BLOCKS_PER_SM``).  ``keep``: a list that receives
    the scratch array the kernels write; ``stream``: the stream to launch
    on (default the current one; the arrays are allocated on the current
    one either way) -- both for :func:`check_aside`.
    """
    import cupy

    dev = cupy.cuda.Device().id
    ptype = np.dtype(a.dtype if indptr is None else indptr.dtype)
    none = _dummy(dev, ptype.name)  # indptr of an edge list (nptr = 0: never read)
    ptr, nptr = (none, 0) if indptr is None else (indptr, indptr.size)
    # a and b of one type go through one pass; of two types, one pass each
    passes = [(ptr, nptr, a, b)] if b is None or b.dtype == a.dtype else \
        [(ptr, nptr, a, None), (none, 0, b, None)]
    tp = c_type(ptype)
    *scans, done = kernels("graph.cu", *(f"meshccl_graph_check<{tp}, {c_type(x.dtype)}>"
                                         for _, _, x, _ in passes),
                           f"meshccl_graph_check_done<{tp}>")
    grid = _grid(max(a.size, nptr), BLOCK * CHECK_UNROLL, blocks_per_sm or _tuning.GRAPH_CHECK_BLOCKS_PER_SM)
    part = cupy.empty(3 * grid[0] * len(passes), dtype=cupy.int64)
    facts = cupy.empty(7, dtype=cupy.int64)
    if keep is not None:
        keep += [part, facts]
    with stream if stream is not None else contextlib.nullcontext():
        for k, (scan, (p, count, x, y)) in enumerate(zip(scans, passes)):
            scan(grid, (BLOCK,), (p, np.int64(count), x, NULL if y is None else y,
                                  np.int64(x.size), part[3 * grid[0] * k:]))
        done((1,), (1024,), (part, np.int32(grid[0] * len(passes)), ptr, np.int64(nptr), facts))
    return facts


def check_aside(indptr, indices):
    """:func:`check` of a CSR on a side stream, beside whatever the caller
    queues next on its own stream: ``(facts, join)``.  The check streams
    the arrays at memory bandwidth while the methods of
    :data:`DEFERRED_CHECK_METHODS` mostly wait on dependent loads, so the
    two overlap; the check takes ``_tuning.GRAPH_CHECK_ASIDE_BLOCKS_PER_SM`` blocks
    per multiprocessor and leaves the rest to the method.  ``join()`` makes
    the caller's stream wait for the check; call it (once or more) before
    anything reads ``facts`` and before the arrays may be freed, also on an
    error path.  The scratch arrays come from the caller's stream's memory
    pool and stay referenced until ``join()``, so that pool cannot hand
    them out while the side stream still writes them."""
    import cupy

    main = cupy.cuda.get_current_stream()
    side = _side_stream(cupy.cuda.Device().id)
    start = cupy.cuda.Event(disable_timing=True)
    start.record(main)
    side.wait_event(start)  # the input is ready on the caller's stream
    keep = []
    facts = check(indptr, indices, blocks_per_sm=_tuning.GRAPH_CHECK_ASIDE_BLOCKS_PER_SM, keep=keep, stream=side)
    done = cupy.cuda.Event(disable_timing=True)
    done.record(side)

    def join():
        if keep:
            main.wait_event(done)
            keep.clear()

    return facts, join


@functools.lru_cache(maxsize=None)
def _side_stream(device_id: int):
    """The stream :func:`check_aside` launches on (one per device)."""
    import cupy

    return cupy.cuda.Stream(non_blocking=True)


def clamp_indptr(indptr, m: int):
    """indptr widened to int64 and clamped to [0, m]
    (``meshccl_graph_clamp_indptr``, one launch, no host synchronisation):
    the rows the methods of :data:`DEFERRED_CHECK_METHODS` read while the
    check runs beside them.  Whatever indptr holds, every row lies inside
    ``indices[0, m)``; the caller raises afterwards if the facts say the
    input is invalid."""
    import cupy

    (kern,) = kernels("graph.cu", f"meshccl_graph_clamp_indptr<{c_type(indptr.dtype)}>")
    out = cupy.empty(indptr.size, dtype=cupy.int64)
    kern(_grid(indptr.size, BLOCK, 32), (BLOCK,), (indptr, np.int64(indptr.size), np.int64(m), out))
    return out


def _index_types(n: int, neighbours, index_dtype=None):
    """(I, J, neighbour arrays cast to J): I is the parent type, J the type of
    the neighbour arrays -- kept when they are all int32 or all int64 (and
    wide enough), otherwise int32 (below 2**31 vertices) or int64."""
    import cupy

    I = np.dtype((cupy.int32 if n < 2**31 else cupy.int64) if index_dtype is None else index_dtype)
    kinds = {np.dtype(a.dtype) for a in neighbours}
    if len(kinds) == 1 and kinds <= {np.dtype(np.int32), np.dtype(np.int64)} \
            and next(iter(kinds)).itemsize >= I.itemsize:
        J = next(iter(kinds))
    else:  # validated to lie in [0, n), so I holds every value
        J = I
    return I, J, tuple(a.astype(J, copy=False) for a in neighbours)


def _unpack(kind: str, arrays, n: int, index_dtype=None, facts=None):
    """(I, J, indptr, src, dst) of validated input: the parent type I, the
    neighbour type J, indptr widened to int64 (None for an edge list) and
    the neighbour arrays cast to J (src None for CSR, whose rows are the
    first ends).  ``facts``: the device facts of a CSR whose check the host
    has not read yet; indptr is then :func:`clamp_indptr`'s copy."""
    import cupy

    if kind == "edges":
        I, J, (src, dst) = _index_types(n, arrays, index_dtype)
        return I, J, None, src, dst
    I, J, (dst,) = _index_types(n, arrays[1:], index_dtype)
    if facts is not None:
        return I, J, clamp_indptr(arrays[0], dst.size), None, dst
    return I, J, arrays[0].astype(cupy.int64, copy=False), None, dst


def _edge_args(indptr, src, dst, dev):
    """The (indptr, src, dst) pointers of an edge-centric kernel: a dummy
    indptr for an edge list, dst standing in for the unused src of a CSR."""
    return (_dummy(dev, "int64") if indptr is None else indptr, dst if src is None else src, dst)


def to_csr(src, dst, n: int):
    """CSR arrays (indptr int64, indices of dst's type) of an edge list, on the device."""
    t = c_type(src.dtype)
    scatter, = kernels("graph.cu", f"meshccl_graph_scatter<{t}>")
    m = src.size
    return _counting_sort(src, n, dst.dtype, lambda cursor, out: scatter(
        _grid(m, BLOCK, 32), (BLOCK,), (src, dst, np.int64(m), cursor, out)))


def transpose_csr(indptr, indices, n: int):
    """CSR arrays (indptr int64, indices of the given type) of the transpose
    of a validated CSR (indptr int64), on the device, without a row array."""
    t = c_type(indices.dtype)
    scatter, = kernels("graph.cu", f"meshccl_graph_scatter_rows<{t}>")
    return _counting_sort(indices, n, indices.dtype, lambda cursor, out: scatter(
        _grid(n, BLOCK, 32), (BLOCK,), (indptr, indices, np.int64(n), cursor, out)))


def _counting_sort(keys, n: int, dtype, scatter):
    """A counting sort into n rows by ``keys`` (the row of each entry):
    the rows' offsets (int64, n + 1) from meshccl_graph_degree and a sum,
    then ``scatter(cursor, out)`` places every entry at its row's cursor
    (the rows' starts, advanced by atomics) in ``out`` (``dtype``)."""
    import cupy

    degree, = kernels("graph.cu", f"meshccl_graph_degree<{c_type(keys.dtype)}>")
    m = keys.size
    deg = cupy.zeros(n + 1, dtype=cupy.uint64)
    out = cupy.empty(m, dtype=dtype)
    if m:
        degree(_grid(m, BLOCK, 32), (BLOCK,), (keys, np.int64(m), deg))
    indptr = cupy.cumsum(deg.view(cupy.int64))
    if m:
        scatter(indptr[:-1].copy().view(cupy.uint64), out)
    return indptr, out


def graph_steps(kind: str, arrays, n: int, method: str, symmetric: bool = False,
                index_dtype=None, compression=None, max_iterations=None, facts=None):
    """The GPU method as ``[(name, launch), ...]`` that leave the parent array
    ``state["P"]`` ready for the relabel path; also returns ``state``.
    (Split into steps so benchmarks can time them.)  ``index_dtype`` forces
    the parent type (tests run the int64 kernels on small graphs with it).
    ``compression``: the union-find methods' rule (validated by
    :mod:`meshccl.graph._methods`; None: the method's default).  The iterative
    methods store their pass count in ``state["passes"]``.  ``facts``: the
    unread device facts of a deferred check (:func:`components`), only for
    CSR input and :data:`DEFERRED_CHECK_METHODS`."""
    import cupy

    if facts is not None and (kind == "edges" or method not in DEFERRED_CHECK_METHODS):
        raise ValueError(f"a deferred check needs CSR input and a method in "
                         f"{DEFERRED_CHECK_METHODS}, got {kind!r} and {method!r}")
    I, J, indptr, src, dst = _unpack(kind, arrays, n, index_dtype, facts)
    ti, tj = c_type(I), c_type(J)
    nn = I.type(n)
    m_entries = dst.size
    sym = "true" if symmetric else "false"
    dev = cupy.cuda.Device().id
    state = {}
    steps = []

    method = canonical(method)
    if method in RULES:  # 'unionfind' / 'async': the core's rule (Union-Async, halving)
        return _rule_steps(method, compression or COMPRESSION[method][0], indptr, src, dst,
                           n, I, J, sym, dev, state, steps)
    if method in ITERATIVE:
        return _iterative_steps(method, indptr, src, dst, n, I, J, symmetric, dev, state, steps,
                                max_iterations)

    # the vertex-centric methods read CSR
    if indptr is None:
        steps.append(("csr", lambda: state.update(zip(("indptr", "indices"), to_csr(src, dst, n)))))
    else:
        state["indptr"], state["indices"] = indptr, dst

    def vertex_kernels(mode: int, skip: int, big):
        thread, warp, block = kernels(
            "graph.cu", *(f"meshccl_graph_vertex_{g}<{ti}, {tj}, {mode}, {sym}>"
                          for g in ("thread", "warp", "block")))

        def run():
            P = state["P"]
            top = cupy.zeros(2, dtype=cupy.uint64)
            wl = cupy.empty(n, dtype=I)
            args = (state["indptr"], state["indices"], P, nn, np.int32(skip), big(), wl, top)
            thread(_grid(n, BLOCK, 32), (BLOCK,), args)
            warp(_grid(n, BLOCK // 32, 16), (BLOCK,), args)
            block(_grid(n, 1, 8), (BLOCK,), args)

        return run

    if method == "tiles":  # kernels/graph.cu's essay
        shift = tile_shift()
        local, cross = kernels("graph.cu", f"meshccl_graph_tile_local<{ti}, {tj}>",
                               f"meshccl_graph_tile_cross<{ti}, {tj}, {sym}>")
        tiles = -(-n >> shift)

        def tiles_local():
            state["P"] = cupy.empty(n, dtype=I)
            local(_grid(tiles, 1, TILE_BLOCKS_PER_SM), (TILE_BLOCK,),
                  (state["indptr"], state["indices"], state["P"], nn, np.int32(shift)),
                  shared_mem=4 << shift)

        steps.append(("local", tiles_local))
        steps.append(("cross", lambda: cross(_grid(n, BLOCK, 32), (BLOCK,),
                                             (state["indptr"], state["indices"], state["P"], nn,
                                              np.int32(shift)))))
        return steps, state

    if method == "ecl":
        (init,) = kernels("graph.cu", f"meshccl_graph_ecl_init<{ti}, {tj}>")

        def ecl_init():
            state["P"] = cupy.empty(n, dtype=I)
            init(_grid(n, BLOCK, 32), (BLOCK,), (state["indptr"], state["indices"], state["P"], nn))

        steps.append(("init", ecl_init))
        steps.append(("hook", vertex_kernels(0, 0, lambda: state["P"])))
        return steps, state

    # HB's hook step (kernels/graph.cu's essay): on a graph promised
    # symmetric only the local minima start as roots, and 'link' unites
    # their entries with atomicMin over a list of them; stored one way,
    # nearly every vertex starts as a root and 'link' (which never shortens
    # a path) would chain them, so GConn's CAS unions ('cas') run instead.
    # The flatten before the picks is a read-only walk after 'link', CAS
    # halving after CAS unions (k-out's or 'cas') (meshccl_graph_compress).
    hb_names = {"link": ("hb_init", "hb_link"), "cas": ("ecl_init", "hb_hook")}
    hook = "link" if symmetric else "cas"
    walk = "true" if method == "hb" and hook == "link" else "false"
    compress, sample_mode = kernels(
        "graph.cu", f"meshccl_graph_compress<{ti}, {walk}>", f"meshccl_graph_sample_mode<{ti}>")

    def frequent_root(P):
        """Flatten P, then state["big"] = (the most frequent root L of 1024
        picks, how many of them had root L)."""
        compress(_grid(n, BLOCK, 32), (BLOCK,), (P, nn))
        state["big"] = cupy.empty(2, dtype=I)
        sample_mode((1,), (SAMPLES,), (P, nn, np.int32(SAMPLES), np.uint64(_SEED), state["big"]))

    if method == "kout":
        plain, guarded = kernels("graph.cu", f"meshccl_graph_kout<{ti}, {tj}, false>",
                                 f"meshccl_graph_kout<{ti}, {tj}, true>")
        dense = m_entries > _tuning.GRAPH_KOUT_DENSE_DEGREE * n
        k_out = _tuning.GRAPH_K_OUT
        no_root = _dummy(dev, I.name)  # big = (0, 0): no vertex skips

        def sampling():
            state["P"] = P = cupy.arange(n, dtype=I)
            grid = _grid(n, BLOCK, 32)
            csr = (state["indptr"], state["indices"], P, nn)
            if dense:  # one guarded kernel for all k entries (graph.cu's essay)
                guarded(grid, (BLOCK,), csr + (np.int32(0), np.int32(k_out), no_root))
            else:      # Afforest's rounds; from round 1 on L's vertices may skip
                plain(grid, (BLOCK,), csr + (np.int32(0), np.int32(1), no_root))
                for r in range(1, k_out):
                    frequent_root(P)
                    # skipping is sound only when the other end stores the edge too
                    guarded(grid, (BLOCK,), csr + (np.int32(r), np.int32(1),
                                                   state["big"] if symmetric else no_root))
            frequent_root(P)

        steps.append(("sample", sampling))
        steps.append(("finish", vertex_kernels(1, k_out, lambda: state["big"])))
        return steps, state

    if method == "hb":
        hb_kernels = kernels("graph.cu", *(f"meshccl_graph_{name}<{ti}, {tj}>"
                                           for name in hb_names[hook]))

        def hb_sampling():
            state["P"] = P = cupy.empty(n, dtype=I)
            args = (state["indptr"], state["indices"], P)
            grid = _grid(n, BLOCK, 32)
            k = np.int32(_tuning.GRAPH_HB_EDGES)
            if hook == "link":  # kernels/graph.cu's essay on the hook steps
                init, link = hb_kernels
                roots, count = cupy.empty(n, dtype=I), cupy.zeros(1, dtype=cupy.uint64)
                init(grid, (BLOCK,), args + (nn, roots, count))
                link(grid, (BLOCK,), args + (nn, k, roots, count))
            else:
                init, cas_hook = hb_kernels
                init(grid, (BLOCK,), args + (nn,))
                cas_hook(grid, (BLOCK,), args + (nn, k))
            frequent_root(P)

        steps.append(("sample", hb_sampling))
        steps.append(("finish", vertex_kernels(1, 0, lambda: state["big"])))
        return steps, state

    if method == "bfs-sample":
        pick, seed, expand, done = kernels(
            "graph.cu", f"meshccl_graph_pick_source<{ti}>", f"meshccl_graph_bfs_seed<{ti}>",
            f"meshccl_graph_bfs_expand<{ti}, {tj}>", f"meshccl_graph_bfs_sample_done<{ti}>")

        def bfs_sampling():
            state["P"] = P = cupy.full(n, -1, dtype=I)
            source, minv = cupy.empty(1, dtype=I), cupy.empty(1, dtype=I)
            bufs = [cupy.empty(n, dtype=I), cupy.empty(n, dtype=I)]
            counts = cupy.zeros(2, dtype=cupy.uint64)
            cnt = [counts[0:1], counts[1:2]]
            pick((1,), (SAMPLES,), (state["indptr"], nn, source, np.uint64(_SEED)))
            seed((1,), (1,), (P, source, bufs[0], cnt[0], minv))
            level, batch = 0, 4
            max_levels = _tuning.GRAPH_BFS_SAMPLE_LEVELS
            while level < max_levels:
                for _ in range(min(batch, max_levels - level)):
                    a, b = level % 2, 1 - level % 2
                    expand(_grid(n, BLOCK, 4), (BLOCK,),
                           (state["indptr"], state["indices"], P, bufs[a], cnt[a], bufs[b], cnt[b],
                            source, minv))
                    cnt[a].fill(0)
                    level += 1
                if not int(counts.sum()):
                    break
                batch *= 2
            done(_grid(n, BLOCK, 32), (BLOCK,), (P, nn, minv))
            state["big"] = minv
            state["levels"] = level

        steps.append(("sample", bfs_sampling))
        steps.append(("finish", vertex_kernels(1, 0, lambda: state["big"])))
        return steps, state

    raise NotImplementedError(f"method={method!r} has no GPU kernel")


def _edge_arrays(indptr, src, dst, n, J):
    """(src, dst) of the stored edges: as given, or the rows of a CSR."""
    import cupy

    if indptr is None:
        return src, dst
    (rows,) = kernels("graph.cu", f"meshccl_graph_rows<{c_type(J)}>")
    out = cupy.empty(dst.size, dtype=J)
    if n:
        rows(_grid(n, BLOCK, 32), (BLOCK,), (indptr, np.int64(n), out))
    return out, dst


def _rule_steps(method, compression, indptr, src, dst, n, I, J, sym, dev, state, steps):
    """One thread per stored edge with a GConn union rule (unionfind.cuh)."""
    import cupy

    ti, tj = c_type(I), c_type(J)
    nn = I.type(n)
    m = dst.size
    rule, comp = RULES[method], COMPRESS_CODE[compression]
    csr = "false" if indptr is None else "true"
    (union,) = kernels("graph.cu", f"meshccl_graph_rule<{ti}, {tj}, {csr}, {sym}, {rule}, {comp}>")
    args = _edge_args(indptr, src, dst, dev)

    def init():
        state["P"] = cupy.arange(n, dtype=I)
        state["H"] = cupy.full(n, -1, dtype=I) if method == "hooks" else _dummy(dev, I.name)

    steps.append(("init", init))
    if m:
        steps.append(("union", lambda: union(_grid(m, BLOCK, 32), (BLOCK,),
                                             args + (state["P"], state["H"], nn, np.int64(m)))))
    if method == "jtb":
        roots, low, assign = kernels("graph.cu", *(f"meshccl_graph_jtb_{k}<{ti}>"
                                                   for k in ("roots", "min", "assign")))

        def smallest():
            P, R = state["P"], cupy.empty(n, dtype=I)
            for k in (roots, low, assign):
                k(_grid(n, BLOCK, 32), (BLOCK,), (P, R, nn))

        steps.append(("smallest", smallest))
    return steps, state


def _iterative_steps(method, indptr, src, dst, n, I, J, symmetric, dev, state, steps,
                     max_iterations):
    """Hawick et al.'s kernels 1-3 and Shiloach-Vishkin, iterated with
    batched flag reads (see the module docstring)."""
    import cupy

    ti, tj = c_type(I), c_type(J)
    sym = "true" if symmetric else "false"
    nn = I.type(n)
    m = dst.size

    if method in ("edge-lp", "sv"):
        def run():
            s, d = _edge_arrays(indptr, src, dst, n, J)
            P = state["P"] = cupy.arange(n, dtype=I)
            if method == "edge-lp":
                (lp,) = kernels("graph.cu", f"meshccl_graph_edge_lp<{ti}, {tj}, {sym}>")

                def one_pass(t, flag):
                    if m:
                        lp(_grid(m, BLOCK, 32), (BLOCK,), (s, d, P, np.int64(m), flag))
            else:
                hook, jump = kernels("graph.cu", f"meshccl_graph_sv_hook<{ti}, {tj}, {sym}>",
                                     f"meshccl_graph_sv_jump<{ti}>")

                def one_pass(t, flag):
                    if m:
                        hook(_grid(m, BLOCK, 32), (BLOCK,), (s, d, P, np.int64(m), flag))
                    jump(_grid(n, BLOCK, 32), (BLOCK,), (P, nn, flag))
            state["passes"] = until_settled(one_pass, method, max_iterations)

        steps.append(("iterate", run))
        return steps, state

    def run_vertex():
        # kernels 2 and 3 read both directions of every edge
        if symmetric and indptr is not None:
            ip, ind = indptr, dst
        else:
            s, d = _edge_arrays(indptr, src, dst, n, J)
            if not symmetric:
                s, d = cupy.concatenate([s, d]), cupy.concatenate([d, s])
            ip, ind = to_csr(s, d, n)
        if method == "vertex-lp":
            (lp,) = kernels("graph.cu", f"meshccl_graph_vertex_lp<{ti}, {tj}>")
            P = state["P"] = cupy.arange(n, dtype=I)
            act = [cupy.ones(n, dtype=cupy.uint8), cupy.zeros(n, dtype=cupy.uint8)]

            def one_pass(t, flag):
                lp(_grid(n, BLOCK, 32), (BLOCK,), (ip, ind, P, nn, act[t % 2], act[1 - t % 2], flag))
        else:  # bfs-cc
            expand, nxt = kernels("graph.cu", f"meshccl_graph_bfs_expand<{ti}, {tj}>",
                                  f"meshccl_graph_bfs_next<{ti}>")
            P = state["P"] = cupy.full(n, -1, dtype=I)
            bufs = [cupy.empty(n, dtype=I), cupy.empty(n, dtype=I)]
            counts = cupy.zeros(2, dtype=cupy.uint64)
            cnt = [counts[0:1], counts[1:2]]
            label, minv = cupy.zeros(1, dtype=I), cupy.zeros(1, dtype=I)
            cursor = cupy.zeros(1, dtype=cupy.int64)
            scratch = cupy.zeros(1, dtype=cupy.int32)
            nxt((1,), (BLOCK,), (P, nn, cnt[1], bufs[0], cnt[0], label, cursor, scratch))

            def one_pass(t, flag):
                a, b = t % 2, 1 - t % 2
                expand(_grid(n, BLOCK, 4), (BLOCK,),
                       (ip, ind, P, bufs[a], cnt[a], bufs[b], cnt[b], label, minv))
                nxt((1,), (BLOCK,), (P, nn, cnt[a], bufs[b], cnt[b], label, cursor, flag))
        state["passes"] = until_settled(one_pass, method, max_iterations)

    steps.append(("iterate", run_vertex))
    return steps, state


def forest(kind: str, arrays, n: int, index_dtype=None):
    """A spanning forest on the GPU: int64 CuPy arrays (src, dst) of the
    stored edges whose unite() hooked, in input order (for CSR: row and
    column of each stored entry).  Which edges of a cycle are kept depends
    on thread timing; the forest always has n - components edges."""
    import cupy

    I, J, indptr, src, dst = _unpack(kind, arrays, n, index_dtype)
    m = dst.size
    if n == 0 or m == 0:
        return cupy.empty(0, dtype=cupy.int64), cupy.empty(0, dtype=cupy.int64)
    ti, tj = c_type(I), c_type(J)
    csr = "false" if indptr is None else "true"
    (kern,) = kernels("graph.cu", f"meshccl_graph_forest<{ti}, {tj}, {csr}>")
    P = cupy.arange(n, dtype=I)
    fe = cupy.empty(n, dtype=cupy.int64)
    count = cupy.zeros(1, dtype=cupy.uint64)
    dev = cupy.cuda.Device().id
    kern(_grid(m, BLOCK, 32), (BLOCK,),
         _edge_args(indptr, src, dst, dev) + (P, I.type(n), np.int64(m), fe, count))
    fe = cupy.sort(fe[:int(count.get()[0])])
    if indptr is None:
        return src[fe].astype(cupy.int64), dst[fe].astype(cupy.int64)
    rows = cupy.searchsorted(indptr, fe, side="right") - 1
    return rows.astype(cupy.int64), dst[fe].astype(cupy.int64)


def components(kind: str, arrays, n: int, method: str = "auto", symmetric: bool = False,
               index_dtype=None, compression=None, max_iterations=None, timer=None, info=None,
               facts=None):
    """Weak components on the GPU: ``(count, labels)`` with labels numbered
    from 0 in order of each component's smallest vertex (a CuPy array of the
    parent type, int32 below 2**31 vertices) and count a 0-d CuPy array.
    ``timer``: a :class:`.timing.PhaseTimer` timing each step of the method
    (its names from :func:`graph_steps`) and of the relabel ('flatten',
    'scan', 'relabel'), or None.  ``info``: a dict to receive
    ``method_phases`` (the method's step names, in order) and ``iterations``
    (passes of an iterative method, else 1), or None.  ``facts``: the
    device facts of :func:`check` when the host has not read them (a
    deferred check: CSR input, a method of :data:`DEFERRED_CHECK_METHODS`);
    the count is then also copied into ``facts[6]``, so that the caller
    reads both with one transfer."""
    import cupy

    from .timing import run

    idx = (cupy.int32 if n < 2**31 else cupy.int64) if index_dtype is None else index_dtype
    if n == 0:
        if info is not None:
            info.update(method_phases=[], iterations=0)
        if facts is not None:
            facts[6:] = 0
        return cupy.zeros((), dtype=idx), cupy.empty(0, dtype=idx)
    if method == "auto":  # the API resolves 'auto' first; here the probe costs a read
        probe = (chain_probe_edges(arrays[0], arrays[1]) if kind == "edges"
                 else tile_probe(arrays[0], arrays[1], n))
        fraction = None if probe is None else int(probe[0]) / probe[1]
        method = (choose_method(kind, n, int(arrays[1].size), symmetric, chain=fraction)
                  if kind == "edges" else
                  choose_method(kind, n, int(arrays[1].size), symmetric, local=fraction))
    steps, state = graph_steps(kind, arrays, n, method, symmetric, index_dtype, compression,
                               max_iterations, facts)
    for name, launch in steps:
        run(timer, name, launch)
    P = state["P"]
    # 0..N-1 in order of each component's smallest vertex (SciPy's numbering);
    # with a deferred check the relabel kernel also stores N in facts[6]
    count = relabel(P, n, timer, base=-1, count_out=None if facts is None else facts[6:])
    if info is not None:
        info["method"] = canonical(method)
        info["method_phases"] = list(dict.fromkeys(name for name, _ in steps))
        info["iterations"] = int(state.get("passes", 1))
    return count, P
