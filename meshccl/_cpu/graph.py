"""Graph connected components on the CPU: the shared union-find core
(:mod:`.unionfind`) applied to the edges of a general graph.

Every edge (v, u) is a union of v and u -- in either direction, so an
asymmetric (directed) graph gives its weakly connected components without
being symmetrised.  As in ECL-CC, a vertex first takes its smallest
neighbour as parent when that neighbour is smaller (a union without a find);
the rest are unions.  The one relabel path numbers the roots -- each
component's smallest vertex -- in increasing order, which is SciPy's
numbering once shifted to start at 0.
"""

import numpy as np
from numba import njit

from .unionfind import find, relabel, unite


@njit(cache=True)
def _union_csr(indptr, indices, P, fsrc, fdst):
    """Unite along every edge; when fsrc/fdst are arrays (not None), record
    each edge that merged two sets (a spanning forest) and return how many."""
    n = P.shape[0]
    nf = 0
    for v in range(n):
        P[v] = v
    for v in range(n):
        # ECL-CC's first smaller neighbour: v is still a root with no child
        # smaller than itself, so pointing it at a smaller vertex is a union.
        first = True
        for e in range(indptr[v], indptr[v + 1]):
            u = indices[e]
            if u == v:
                continue
            if first and u < v and P[v] == v:
                P[v] = u
                first = False
                merged = True
            else:
                merged = unite(P, v, u)
            if merged and fsrc is not None:
                fsrc[nf] = v
                fdst[nf] = u
                nf += 1
    return nf


@njit(cache=True)
def _union_edges(src, dst, P, fsrc, fdst):
    n = P.shape[0]
    nf = 0
    for v in range(n):
        P[v] = v
    for k in range(src.shape[0]):
        if src[k] != dst[k] and unite(P, src[k], dst[k]) and fsrc is not None:
            fsrc[nf] = src[k]
            fdst[nf] = dst[k]
            nf += 1
    return nf


def components_csr(indptr, indices, n, label_dtype):
    """Weak components of the CSR graph (indptr, indices) with n vertices."""
    P = np.empty(n, dtype=np.int64 if n >= 2**31 else np.int32)
    _union_csr(indptr, indices, P, None, None)
    return _finish(P, label_dtype)


def components_edges(src, dst, n, label_dtype):
    """Weak components of the edge list (src, dst) with n vertices."""
    P = np.empty(n, dtype=np.int64 if n >= 2**31 else np.int32)
    _union_edges(src, dst, P, None, None)
    return _finish(P, label_dtype)


def forest(kind, arrays, n):
    """Edges (src, dst) of a spanning forest: the edges whose union merged
    two sets, in the order they were met."""
    P = np.empty(n, dtype=np.int64 if n >= 2**31 else np.int32)
    fsrc = np.empty(max(n - 1, 0), dtype=np.int64)
    fdst = np.empty(max(n - 1, 0), dtype=np.int64)
    union = _union_edges if kind == "edges" else _union_csr
    nf = union(*arrays, P, fsrc, fdst)
    return fsrc[:nf].copy(), fdst[:nf].copy()


#: k-out sampling: edges per vertex united first, vertices sampled after
K_OUT = 2
SAMPLES = 1024


@njit(cache=True)
def _kout(indptr, indices, P, k, picks, symmetric):
    """k-out sampling and finish (Afforest / GConn), the serial twin of the
    GPU method: unite each vertex's first k entries, find the most frequent
    root L among the roots of ``picks``, then let vertices outside L unite
    their remaining entries.  A vertex in L skips its remaining entries when
    the graph is stored symmetrically; otherwise it unites only neighbours
    whose parent is not L.  Returns L."""
    n = P.shape[0]
    for v in range(n):
        P[v] = v
    for v in range(n):
        for e in range(indptr[v], min(indptr[v] + k, indptr[v + 1])):
            if indices[e] != v:
                unite(P, v, indices[e])
    for v in range(n):
        P[v] = find(P, v)
    roots = np.sort(P[picks])
    big, best, run = roots[0], 0, 0
    for i in range(roots.size):  # the longest run of equal roots; the first on a tie
        run = run + 1 if i and roots[i] == roots[i - 1] else 1
        if run > best:
            best, big = run, roots[i]
    for v in range(n):
        begin, end = indptr[v] + k, indptr[v + 1]
        if begin >= end:
            continue
        vin = P[v] == big or find(P, v) == big
        if symmetric and vin:
            continue
        for e in range(begin, end):
            u = indices[e]
            if u == v or (vin and P[u] == big):
                continue
            unite(P, v, u)
    return big


def _as_csr(kind, arrays, n):
    """CSR (indptr, indices) of any graph kind (an edge list is sorted by source)."""
    if kind != "edges":
        return arrays
    src, dst = arrays
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    return indptr, dst[np.argsort(src, kind="stable")]


def components_kout(kind, arrays, n, label_dtype, symmetric=False):
    """Weak components by k-out sampling (method 'kout')."""
    P = np.empty(n, dtype=np.int64 if n >= 2**31 else np.int32)
    if n:
        indptr, indices = _as_csr(kind, arrays, n)
        picks = np.random.default_rng(0x6D657368).integers(0, n, SAMPLES)
        _kout(indptr, indices, P, K_OUT, picks, symmetric)
    return _finish(P, label_dtype)


def _finish(P, label_dtype):
    count = int(relabel(P))  # 1..N in order of each component's smallest vertex
    P -= 1                   # SciPy counts from 0
    return count, P.astype(label_dtype, copy=False)


# --------------------------------------------------------------------------
# The other methods of the papers, serial, as references for their GPU
# kernels.  Each leaves every vertex pointing at the smallest vertex of its
# component (or at a smaller vertex of it), so the shared relabel numbers
# them exactly as the union-find does.

@njit(cache=True)
def _shiloach_vishkin(src, dst, P):
    """Shiloach-Vishkin (Dehne's striding formulation, run serially in
    rounds): hook every root onto a smaller root across an edge, then jump
    pointers (P[v] = P[P[v]]) until every tree is a star; repeat until no
    hook happens.  Returns the number of rounds."""
    n = P.shape[0]
    for v in range(n):
        P[v] = v
    rounds = 0
    while True:
        rounds += 1
        hooked = False
        for k in range(src.shape[0]):
            a, b = P[src[k]], P[dst[k]]
            if a == b:
                continue
            hi, lo = (a, b) if a > b else (b, a)
            if P[hi] == hi and lo < P[hi]:  # hi is a root: hook it under the smaller one
                P[hi] = lo
                hooked = True
        jumping = True
        while jumping:  # pointer jumping until every tree is a star
            jumping = False
            for v in range(n):
                g = P[P[v]]
                if g != P[v]:
                    P[v] = g
                    jumping = True
        if not hooked:
            return rounds


@njit(cache=True)
def _edge_propagation(src, dst, P):
    """Hawick et al.'s kernel 1: every edge lowers both ends to the smaller
    label, sweep after sweep, until nothing changes."""
    n = P.shape[0]
    for v in range(n):
        P[v] = v
    sweeps = 0
    changed = True
    while changed:
        sweeps += 1
        changed = False
        for k in range(src.shape[0]):
            a, b = src[k], dst[k]
            m = min(P[a], P[b])
            if P[a] != m:
                P[a] = m
                changed = True
            if P[b] != m:
                P[b] = m
                changed = True
    return sweeps


@njit(cache=True)
def _vertex_propagation(indptr, indices, P):
    """Hawick et al.'s kernel 2: vertices on the frontier push their label to
    neighbours with a larger one; those form the next frontier."""
    n = P.shape[0]
    frontier = np.arange(n)
    on_next = np.zeros(n, dtype=np.bool_)
    for v in range(n):
        P[v] = v
    steps = 0
    size = n
    while size:
        steps += 1
        nxt = np.empty(n, dtype=np.int64)
        m = 0
        for f in range(size):
            v = frontier[f]
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                if P[v] < P[u]:
                    P[u] = P[v]
                    if not on_next[u]:
                        on_next[u] = True
                        nxt[m] = u
                        m += 1
        for f in range(m):
            on_next[nxt[f]] = False
        frontier = nxt
        size = m
    return steps


@njit(cache=True)
def _bfs_components(indptr, indices, P):
    """Hawick et al.'s kernel 3 (breadth-first search), serially: a BFS from
    each unlabelled vertex in increasing order labels its component with
    that vertex, the component's smallest.  Returns the number of searches."""
    n = P.shape[0]
    for v in range(n):
        P[v] = -1
    queue = np.empty(n, dtype=np.int64)
    searches = 0
    for s in range(n):
        if P[s] >= 0:
            continue
        searches += 1
        P[s] = s
        head, tail = 0, 1
        queue[0] = s
        while head < tail:
            v = queue[head]
            head += 1
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                if P[u] < 0:
                    P[u] = s
                    queue[tail] = u
                    tail += 1
    return searches


def _undirected(kind, arrays, n):
    """Both directions of every edge: (src, dst) and a CSR (indptr, indices)."""
    if kind == "edges":
        src, dst = arrays
    else:
        indptr, indices = arrays
        src = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        dst = indices
    both_src = np.concatenate([src, dst])
    both_dst = np.concatenate([dst, src])
    order = np.argsort(both_src, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(both_src, minlength=n), out=indptr[1:])
    return src, dst, indptr, both_dst[order]


def components_by(method, kind, arrays, n, label_dtype):
    """Weak components with one of the papers' methods; (count, labels, steps)."""
    P = np.empty(n, dtype=np.int64)
    src, dst, indptr, indices = _undirected(kind, arrays, n)
    if method == "sv":
        steps = _shiloach_vishkin(src, dst, P)
    elif method == "edge-lp":
        steps = _edge_propagation(src, dst, P)
    elif method == "vertex-lp":
        steps = _vertex_propagation(indptr, indices, P)
    else:  # "bfs"
        steps = _bfs_components(indptr, indices, P)
    count, labels = _finish(P, label_dtype)
    return count, labels, int(steps)
