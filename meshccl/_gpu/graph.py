"""Graph connected components on the GPU: ``kernels/graph.cu`` then the relabel path.

Input arrives validated from :mod:`meshccl.graph` as CuPy integer arrays:
``("csr" | "csc", (indptr, indices))`` or ``("edges", (src, dst))``.  The
parent array has type I (int32 below 2**31 vertices, int64 beyond), the
neighbour arrays keep their own int32 / int64 type J (others are cast), and
row offsets are widened to int64.  Nothing is copied to the host; the only
synchronisation is the caller's when it asks for the component count.
"""

from __future__ import annotations

import functools

import numpy as np

from .loader import c_type, kernels
from .relabel import relabel

BLOCK = 256
#: edges per vertex united by k-out sampling (GConn / Afforest found 2 best)
K_OUT = 2
#: vertices looked up to find the most frequent root after sampling
SAMPLES = 1024
#: 'auto' samples when a CSR graph stores more than this many entries per
#: vertex (k-out saves at most m - k*n edge visits; see connected_components)
KOUT_MIN_DEGREE = 2 * K_OUT
#: the methods with a GPU kernel
GPU_METHODS = ("unionfind", "ecl", "kout")
_SEED = 0x6D657368636C6C  # fixed: the frequent root only steers work, never the labels


@functools.lru_cache(maxsize=None)
def _sm_count(device_id: int) -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"])


@functools.lru_cache(maxsize=None)
def _dummy(device_id: int, dtype: str):
    """A one-element array standing in for a pointer a kernel does not read."""
    import cupy

    return cupy.zeros(1, dtype=dtype)


def _grid(work: int, per_block: int, cap_per_sm: int) -> tuple:
    """Blocks for a grid-stride loop over ``work`` items: enough to cover it,
    at most ``cap_per_sm`` per multiprocessor, at least one."""
    import cupy

    cap = cap_per_sm * _sm_count(cupy.cuda.Device().id)
    return (max(1, min(-(-work // per_block), cap)),)


def choose_method(kind: str, n: int, m: int) -> str:
    """The rule of ``method='auto'`` (see :func:`meshccl.graph.connected_components`)."""
    if kind == "edges":
        return "unionfind"
    return "kout" if m > KOUT_MIN_DEGREE * n else "ecl"


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


def to_csr(src, dst, n: int):
    """CSR arrays (indptr int64, indices of dst's type) of an edge list, on the device."""
    import cupy

    t = c_type(src.dtype)
    degree, scatter = kernels("graph.cu", f"meshccl_graph_degree<{t}>", f"meshccl_graph_scatter<{t}>")
    m = src.size
    deg = cupy.zeros(n + 1, dtype=cupy.uint64)
    indices = cupy.empty(m, dtype=dst.dtype)
    if m:
        degree(_grid(m, BLOCK, 32), (BLOCK,), (src, np.int64(m), deg))
    indptr = cupy.cumsum(deg.view(cupy.int64))
    if m:
        cursor = indptr[:-1].copy().view(cupy.uint64)
        scatter(_grid(m, BLOCK, 32), (BLOCK,), (src, dst, np.int64(m), cursor, indices))
    return indptr, indices


def graph_steps(kind: str, arrays, n: int, method: str, symmetric: bool = False,
                index_dtype=None):
    """The GPU method as ``[(name, launch), ...]`` that leave the parent array
    ``state["P"]`` ready for the relabel path; also returns ``state``.
    (Split into steps so benchmarks can time them.)  ``index_dtype`` forces
    the parent type (tests run the int64 kernels on small graphs with it)."""
    import cupy

    if kind == "edges":
        I, J, (src, dst) = _index_types(n, arrays, index_dtype)
        indptr = None
    else:
        I, J, (dst,) = _index_types(n, arrays[1:], index_dtype)
        indptr, src = arrays[0].astype(cupy.int64, copy=False), None
    ti, tj = c_type(I), c_type(J)
    nn = I.type(n)
    m = dst.size
    sym = "true" if symmetric else "false"
    dev = cupy.cuda.Device().id
    state = {}
    steps = []

    if method == "unionfind":
        csr = "false" if indptr is None else "true"
        (union,) = kernels("graph.cu", f"meshccl_graph_edges<{ti}, {tj}, {csr}, {sym}>")
        args = (_dummy(dev, "int64") if indptr is None else indptr,
                dst if src is None else src, dst)

        def init():
            state["P"] = cupy.arange(n, dtype=I)

        steps.append(("init", init))
        if m:
            steps.append(("union", lambda: union(_grid(m, BLOCK, 32), (BLOCK,),
                                                args + (state["P"], nn, np.int64(m)))))
        return steps, state

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

    if method == "ecl":
        (init,) = kernels("graph.cu", f"meshccl_graph_ecl_init<{ti}, {tj}>")

        def ecl_init():
            state["P"] = cupy.empty(n, dtype=I)
            init(_grid(n, BLOCK, 32), (BLOCK,), (state["indptr"], state["indices"], state["P"], nn))

        steps.append(("init", ecl_init))
        steps.append(("hook", vertex_kernels(0, 0, lambda: state["P"])))
        return steps, state

    if method == "kout":
        kout, compress, sample, mode = kernels(
            "graph.cu", f"meshccl_graph_kout<{ti}, {tj}>", f"meshccl_graph_compress<{ti}>",
            f"meshccl_graph_sample<{ti}>", f"meshccl_graph_mode<{ti}>")

        def sampling():
            state["P"] = P = cupy.arange(n, dtype=I)
            kout(_grid(n, BLOCK, 32), (BLOCK,), (state["indptr"], state["indices"], P, nn,
                                                 np.int32(K_OUT)))
            compress(_grid(n, BLOCK, 32), (BLOCK,), (P, nn))
            picks = cupy.empty(SAMPLES, dtype=I)
            sample((SAMPLES // BLOCK,), (BLOCK,), (P, nn, picks, np.int32(SAMPLES), np.uint64(_SEED)))
            state["big"] = cupy.empty(1, dtype=I)
            mode((1,), (SAMPLES,), (picks, np.int32(SAMPLES), state["big"]))

        steps.append(("sample", sampling))
        steps.append(("finish", vertex_kernels(1, K_OUT, lambda: state["big"])))
        return steps, state

    raise NotImplementedError(f"method={method!r} has no GPU kernel")


def components(kind: str, arrays, n: int, method: str = "auto", symmetric: bool = False,
               index_dtype=None):
    """Weak components on the GPU: ``(count, labels)`` with labels numbered
    from 0 in order of each component's smallest vertex (a CuPy array of the
    parent type, int32 below 2**31 vertices) and count a 0-d CuPy array."""
    import cupy

    idx = (cupy.int32 if n < 2**31 else cupy.int64) if index_dtype is None else index_dtype
    if n == 0:
        return cupy.zeros((), dtype=idx), cupy.empty(0, dtype=idx)
    if method == "auto":
        method = choose_method(kind, n, int(arrays[1].size))
    steps, state = graph_steps(kind, arrays, n, method, symmetric, index_dtype)
    for _, launch in steps:
        launch()
    P = state["P"]
    count = relabel(P, n)  # 1..N in order of each component's smallest vertex
    P -= 1                 # SciPy counts from 0
    return count, P
