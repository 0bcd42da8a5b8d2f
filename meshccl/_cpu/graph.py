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

from .unionfind import relabel, unite


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


def _finish(P, label_dtype):
    count = int(relabel(P))  # 1..N in order of each component's smallest vertex
    P -= 1                   # SciPy counts from 0
    return count, P.astype(label_dtype, copy=False)
