"""Graph connected components on the CPU: the shared union-find core
(:mod:`.unionfind`) applied to the edges of a general graph.

Every edge (v, u) is a union of v and u -- in either direction, so an
asymmetric (directed) graph gives its weakly connected components without
being symmetrised.  As in ECL-CC, a vertex first takes its smallest
neighbour as parent when that neighbour is smaller (a union without a find);
the rest are unions.  The one relabel path numbers the roots -- each
component's smallest vertex -- in increasing order, which is SciPy's
numbering once shifted to start at 0.

:func:`components` runs any method of :mod:`meshccl.graph._methods` on
validated NumPy input (int64 arrays from :mod:`meshccl.graph._input`); the
other methods of the papers run serially here, as twins of the GPU kernels,
and 'unionfind' / 'ecl' also with threads (:func:`components_parallel`).
Tuning constants are ``meshccl._tuning``'s GRAPH_* names, read at call time.
"""

import contextlib

import numpy as np
from numba import njit, prange

from .. import _tuning
from ..graph._methods import COMPRESS_CODE, ITERATIVE, RULES, canonical
from .regions import numba_region
from .unionfind import find, relabel, unite
from .unionfind import unite_cas as _unite_cas


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


def components(kind, arrays, n, method, symmetric=False, compression="halving",
               max_iterations=None, cpu_threads=1):
    """Weak components of validated input with any method:
    ``(count, labels, iterations)``, labels numbered as SciPy numbers them
    (int32, int64 beyond 2**31 - 1 vertices) and iterations the passes of
    an iterative method (else 1).  ``kind``: "csr", "csc" (read as CSR: the
    transpose graph has the same weak components) or "edges";
    ``compression`` as :func:`meshccl.graph._methods.check_compression`
    resolved it; ``cpu_threads`` as :func:`meshccl.graph.connected_components`
    takes it (used by 'unionfind' with 'halving', and 'ecl')."""
    label_dtype = np.int64 if n >= 2**31 else np.int32
    method = canonical(method)
    kind = "edges" if kind == "edges" else "csr"
    if method in ITERATIVE:
        return components_by(method, kind, arrays, n, label_dtype, max_iterations)
    if method == "kout":
        count, labels = components_kout(kind, arrays, n, label_dtype, symmetric)
    elif method in ("hb", "bfs-sample"):
        count, labels = components_sampled(method, kind, arrays, n, label_dtype, symmetric)
    elif cpu_threads != 1 and (method == "ecl" or (method == "unionfind"
                                                   and compression == "halving")):
        import numba

        count, labels = components_parallel(kind, arrays, n, label_dtype,
                                            cpu_threads or numba.config.NUMBA_NUM_THREADS)
    elif method in RULES and (method != "unionfind" or compression != "halving"):
        count, labels = components_rule(method, compression, kind, arrays, n, label_dtype)
    elif kind == "csr":
        count, labels = components_csr(*arrays, n, label_dtype)
    else:
        count, labels = components_edges(*arrays, n, label_dtype)
    return count, labels, 1


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


#: vertices sampled for the most frequent root (the GPU's one block of 1024)
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
    _finish_pass(indptr, indices, P, big, k, symmetric)
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
        _kout(indptr, indices, P, _tuning.GRAPH_K_OUT, picks, symmetric)
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
def _shiloach_vishkin(src, dst, P, cap):
    """Shiloach-Vishkin (Dehne's striding formulation, run serially in
    rounds): hook every root onto a smaller root across an edge, then jump
    pointers (P[v] = P[P[v]]) until every tree is a star; repeat until no
    hook happens.  Returns the number of rounds (-1: ``cap`` rounds all
    hooked)."""
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
        if rounds == cap:
            return -1


@njit(cache=True)
def _edge_propagation(src, dst, P, cap):
    """Hawick et al.'s kernel 1: every edge lowers both ends to the smaller
    label, sweep after sweep, until nothing changes."""
    n = P.shape[0]
    for v in range(n):
        P[v] = v
    sweeps = 0
    changed = True
    while changed:
        if sweeps == cap:
            return -1
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
def _vertex_propagation(indptr, indices, P, cap):
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
        if steps == cap:
            return -1
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


def components_by(method, kind, arrays, n, label_dtype, max_iterations=None):
    """Weak components with one of the papers' methods; (count, labels, steps).
    ``max_iterations`` caps the rounds / sweeps / steps of 'sv', 'edge-lp'
    and 'vertex-lp' (NotConverged beyond); the serial BFS needs no cap."""
    from ..errors import NotConverged

    P = np.empty(n, dtype=np.int64)
    src, dst, indptr, indices = _undirected(kind, arrays, n)
    cap = -1 if max_iterations is None else int(max_iterations)
    if method == "sv":
        steps = _shiloach_vishkin(src, dst, P, cap)
    elif method == "edge-lp":
        steps = _edge_propagation(src, dst, P, cap)
    elif method == "vertex-lp":
        steps = _vertex_propagation(indptr, indices, P, cap)
    else:  # "bfs-cc" / "bfs"
        steps = _bfs_components(indptr, indices, P)
    if steps < 0:
        raise NotConverged(f"method={method!r} did not converge within "
                           f"max_iterations={max_iterations} passes")
    count, labels = _finish(P, label_dtype)
    return count, labels, int(steps)


# --------------------------------------------------------------------------
# GConn's union rules and samplers, serially: the twins of the GPU methods
# 'rem-cas', 'early', 'hooks', 'jtb' (with their compression rules), 'hb'
# and 'bfs-sample'.  Serially there is no race, so 'hooks' is the plain
# union (its auxiliary array only matters between threads) and the CAS of
# Rem's algorithm is a store; the walks and compressions are the GPU's.

#: entries HB sampling's start scans for a smaller neighbour (the GPU's
#: MESHCCL_GRAPH_THREAD_MAX, kernels/graph.cu)
INIT_SCAN = 16


@njit(cache=True)
def _find_c(P, x, comp):
    """Find with compression comp (0 none, 1 halving, 2 splitting, 3 full)."""
    if comp == 1:
        return find(P, x)
    if comp == 2:
        p = P[x]
        while p != x:
            g = P[p]
            if g == p:
                return p
            P[x] = g
            x = p
            p = g
        return x
    r = x
    while P[r] != r:
        r = P[r]
    if comp == 3:
        while x != r:
            p = P[x]
            P[x] = r
            x = p
    return r


@njit(cache=True)
def _jtb_priority(x):
    x = np.uint64(x)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xff51afd7ed558ccd)
    x ^= x >> np.uint64(33)
    x *= np.uint64(0xc4ceb9fe1a85ec53)
    x ^= x >> np.uint64(33)
    return x & np.uint64(0xFFFFFFFF)


@njit(cache=True)
def _jtb_before(a, b):
    pa, pb = _jtb_priority(a), _jtb_priority(b)
    return pa < pb or (pa == pb and a < b)


@njit(cache=True)
def _unite_rule(P, a, b, rule, comp):
    """One union of a and b (a != b) with union rule ``rule`` and
    compression ``comp``, serially: the root it hooked (each element is
    hooked at most once), or -1 when a and b were in one set already."""
    if rule == 1:  # Rem: walks step by parent value; splice / split / halve on the way
        rx, ry = a, b
        while True:
            px, py = P[rx], P[ry]
            if px == py:
                return -1
            if px < py:
                rx, ry, px, py = ry, rx, py, px
            if rx == px:
                P[rx] = py
                return rx
            if comp == 4:
                P[rx] = py
                rx = px
            elif comp == 2:
                P[rx] = P[px]
                rx = px
            elif comp == 1:
                g = P[px]
                P[rx] = g
                rx = g
            else:
                rx = px
    if rule == 2:  # early: walk up together, stop where they meet
        u, w = a, b
        hooked = -1
        while u != w:
            if u < w:
                u, w = w, u
            if P[u] == u:
                P[u] = w
                hooked = u
                break
            u = P[u]
        if comp != 0:
            _find_c(P, a, comp)
            _find_c(P, b, comp)
        return hooked
    ra, rb = _find_c(P, a, comp), _find_c(P, b, comp)
    if ra == rb:
        return -1
    if rule == 4:  # JTB: link by random priority
        if _jtb_before(rb, ra):
            ra, rb = rb, ra
    elif ra < rb:  # async / hooks: the larger root under the smaller
        ra, rb = rb, ra
    P[ra] = rb
    return ra


@njit(cache=True)
def _jtb_smallest(P):
    """JTB's roots are random members: point every vertex at the smallest
    of its set (the form the relabel numbers)."""
    n = P.shape[0]
    R = np.empty(n, dtype=P.dtype)
    for v in range(n):
        R[v] = _find_c(P, v, 0)
    for v in range(n):
        if R[v] != v and v < P[R[v]]:
            P[R[v]] = v
    for v in range(n):
        if R[v] != v:
            P[v] = P[R[v]]


@njit(cache=True)
def _union_rule(src, dst, P, rule, comp):
    """Unite along every edge with union rule ``rule`` and compression ``comp``."""
    n = P.shape[0]
    for v in range(n):
        P[v] = v
    for k in range(src.shape[0]):
        if src[k] != dst[k]:
            _unite_rule(P, src[k], dst[k], rule, comp)
    if rule == 4:
        _jtb_smallest(P)


def components_rule(method, compression, kind, arrays, n, label_dtype):
    """Weak components with a GConn union rule over every stored edge."""
    P = np.empty(n, dtype=np.int64 if n >= 2**31 else np.int32)
    if kind == "edges":
        src, dst = arrays
    else:
        indptr, dst = arrays
        src = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    _union_rule(src, dst, P, RULES[method], COMPRESS_CODE[compression])
    return _finish(P, label_dtype)


@njit(cache=True)
def _finish_pass(indptr, indices, P, big, skip, symmetric):
    """The finish of the samplers: vertices outside big's set unite their
    entries after the first ``skip``; one in it skips them when the graph is
    symmetric, else unites only neighbours whose parent is not big."""
    n = P.shape[0]
    for v in range(n):
        begin, end = indptr[v] + skip, indptr[v + 1]
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


@njit(cache=True)
def _most_frequent_root(P, picks):
    n = P.shape[0]
    for v in range(n):
        P[v] = find(P, v)
    roots = np.sort(P[picks])
    big, best, run = roots[0], 0, 0
    for i in range(roots.size):
        run = run + 1 if i and roots[i] == roots[i - 1] else 1
        if run > best:
            best, big = run, roots[i]
    return big


@njit(cache=True, inline="always")
def _first_smaller(indptr, indices, v):
    """The first neighbour smaller than v among v's first INIT_SCAN
    entries, else v (the GPU's first_smaller, kernels/graph.cu)."""
    for e in range(indptr[v], min(indptr[v] + INIT_SCAN, indptr[v + 1])):
        if indices[e] < v:
            return indices[e]
    return v


@njit(cache=True)
def _hb(indptr, indices, P, k, picks, symmetric):
    """Hook-based sampling: every vertex points at its first smaller
    neighbour among its first INIT_SCAN entries (ECL-CC's start, capped as
    the GPU's meshccl_graph_hb_init is); the vertices that start as roots
    (those the GPU lists) unite their first k entries, even when an earlier
    union has hooked them meanwhile; the most frequent root L of the picks
    is found; the finish pass unites every entry of the vertices outside L."""
    n = P.shape[0]
    for v in range(n):
        P[v] = _first_smaller(indptr, indices, v)
    for v in range(n):
        if _first_smaller(indptr, indices, v) != v:  # did not start as a root
            continue
        for e in range(indptr[v], min(indptr[v] + k, indptr[v + 1])):
            if indices[e] != v:
                unite(P, v, indices[e])
    big = _most_frequent_root(P, picks)
    _finish_pass(indptr, indices, P, big, 0, symmetric)
    return big


@njit(cache=True)
def _bfs_sample(indptr, indices, P, picks, max_levels, symmetric):
    """BFS sampling: a search (over the stored directions) from the picked
    vertex of largest degree, at most max_levels levels; the vertices it
    reached -- a connected set -- point at their smallest member L; then
    the finish pass.  Returns the levels run."""
    n = P.shape[0]
    src = picks[0]
    for i in range(picks.size):
        x = picks[i]
        dx, ds = indptr[x + 1] - indptr[x], indptr[src + 1] - indptr[src]
        if dx > ds or (dx == ds and x < src):
            src = x
    for v in range(n):
        P[v] = -1
    P[src] = src
    queue = np.empty(n, dtype=np.int64)
    queue[0] = src
    head, tail, low, levels = 0, 1, src, 0
    while head < tail and levels < max_levels:
        levels += 1
        stop = tail
        while head < stop:
            v = queue[head]
            head += 1
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                if P[u] < 0:
                    P[u] = src
                    queue[tail] = u
                    tail += 1
                    low = min(low, u)
    for v in range(n):
        P[v] = v if P[v] < 0 else low
    _finish_pass(indptr, indices, P, low, 0, symmetric)
    return levels


def components_sampled(method, kind, arrays, n, label_dtype, symmetric=False):
    """Weak components by HB ('hb') or BFS ('bfs-sample') sampling and finish."""
    P = np.empty(n, dtype=np.int64 if n >= 2**31 else np.int32)
    if n:
        indptr, indices = _as_csr(kind, arrays, n)
        picks = np.random.default_rng(0x6D657368).integers(0, n, SAMPLES)
        if method == "hb":
            _hb(indptr, indices, P, _tuning.GRAPH_HB_EDGES, picks, symmetric)
        else:
            _bfs_sample(indptr, indices, P, picks, _tuning.GRAPH_BFS_SAMPLE_LEVELS, symmetric)
    return _finish(P, label_dtype)


# --------------------------------------------------------------------------
# Parallel union-find (cpu_threads != 1: 'unionfind' / 'async', 'ecl' and
# the CPU's 'auto').
#
# numba has no compare-and-swap in its API, so ``unionfind.cas`` emits
# LLVM's cmpxchg on one array element (an intrinsic).  The hooks are then the
# serial union-find's, made atomic as in ECL-CC and GConn's Union-Async:
# find with path halving by plain stores, and a root hi is hooked under
# the smaller root lo by CAS(P[hi]: hi -> lo); if another thread hooked hi
# first the CAS fails and the unite starts over from hi's new parent.
#
# Scheme (threads > 1; one thread runs the serial union-find).  The
# vertices are cut into K contiguous ranges of about equal work (stored
# edges + vertices), K = threads * CHUNKS_PER_THREAD.
#   'local' (CSR whose stored edges mostly join two vertices of one range,
#   as on grids, paths, meshes, road networks numbered with locality):
#   1. each range, one thread each, starts P[v] = v and runs the serial
#      union-find (ECL-CC's first-smaller-neighbour start included) with
#      plain stores on its edges whose two ends lie in the range; the
#      other edges (cross edges) are written to the range's buffer.  No
#      thread reads or writes outside its range, so there is no race.  A
#      range whose buffer fills up stops at that vertex.
#   2. the cross edges, and every edge of the vertices a full buffer
#      stopped at, are united with CAS hooks by all threads (fewer than
#      SERIAL_CROSS cross edges and no full buffer: by the calling thread
#      with the serial unite, no other thread running).
#   'local' on an edge list: the same with K even chunks of edges (by
#   position) and K even vertex ranges, chunk k's edges with both ends in
#   range k united in phase 1 (a path or a list sorted by source whose
#   ends are close); a full buffer stops at that edge.
#   'cas' (CSR with little locality such as R-MAT or permuted numberings,
#   and such edge lists): P[v] = v, then every edge is united with CAS
#   hooks by all threads, in one pass.
#   Both end with the serial relabel (one pass), as the serial path does
#   (counting from 0 in that pass).
# Which one: the stored edges of SAMPLE_VERTICES random vertices (an edge
# list: SAMPLE_VERTICES random edges) estimate the share of cross edges;
# 'local' when it is at most LOCAL_CROSS.  Both read the edges once (the
# few cross edges twice), against the serial code's once.
#
# Why it is exact.  Every store writes P[x] = y with y < x and y in x's
# component: a hook joins the roots found from the two ends of an edge, a
# halving store points x at a vertex that was its grandparent.  So parents
# only decrease, there is never a cycle, and every find ends.  A stale
# halving store (P[x] = g over a newer, smaller g') moves x's subtree to g,
# which is outside that subtree (g < x) and was in x's tree, so trees never
# split.  A CAS hook succeeds only on a root (a non-root never becomes a
# root again: nothing stores P[x] = x after the start), so no hook is lost:
# when an edge's unite returns, its ends are in one tree for good.  Each
# tree's root is its smallest vertex (roots are hooked under smaller
# roots), so the relabel numbers components as the serial code does.  In
# 'local' phase 1 the trees of a range stay inside it (P[x] >= the range's
# first vertex), so the plain stores of the threads touch disjoint
# entries; phase 2 starts after every thread has finished phase 1.
# Assumed of the hardware: aligned int32 / int64 loads and stores do not
# tear (x86-64, AArch64).
#
# The constants in capitals above are meshccl._tuning's GRAPH_CPU_* names;
# the buffer of a range holds min(its stored edges, its stored edges //
# GRAPH_CPU_CROSS_BUFFER_DIV + GRAPH_CPU_CROSS_BUFFER_MIN) cross edges.


# The per-chunk work lives in plain functions called from the prange
# loops: numba would otherwise hoist loads of P that it believes invariant
# (it does not see the CAS store).

@njit(cache=True)
def _iota(P, v0, v1):
    for v in range(v0, v1):
        P[v] = v


@njit(cache=True, parallel=True)
def _par_iota(P, chunks):
    for k in prange(chunks.shape[0] - 1):
        _iota(P, chunks[k], chunks[k + 1])


@njit(cache=True)
def _cas_csr_range(indptr, indices, P, v0, v1):
    for v in range(v0, v1):
        for e in range(indptr[v], indptr[v + 1]):
            u = indices[e]
            if u != v:
                _unite_cas(P, v, u)


@njit(cache=True, parallel=True)
def _par_cas_csr(indptr, indices, P, chunks, starts):
    """Unite every edge of the vertices [starts[k], chunks[k + 1]) of each chunk."""
    for k in prange(chunks.shape[0] - 1):
        _cas_csr_range(indptr, indices, P, starts[k], chunks[k + 1])


@njit(cache=True)
def _cas_pairs_range(src, dst, P, e0, e1):
    for e in range(e0, e1):
        if src[e] != dst[e]:
            _unite_cas(P, src[e], dst[e])


@njit(cache=True)
def _block_order(i, per, K):
    """Chunk to run as the i-th: blocks of ``per`` chunks, odd blocks reversed."""
    if per == 0:
        return i
    b = i // per
    if b % 2 == 1 and (b + 1) * per <= K:
        return b * per + (per - 1 - i % per)
    return i


@njit(cache=True, parallel=True)
def _par_cas_pairs(src, dst, P, chunks, threads):
    """Unite the pairs with CAS hooks.  Every other thread (numba hands each
    thread a contiguous block of the prange) takes its chunks last to
    first: an edge list made of sorted sweeps over the same vertices (a
    grid's columns, then its rows) would otherwise have two threads hooking
    the same vertices at the same moment, fighting over their cache lines."""
    K = chunks.shape[0] - 1
    per = K // threads
    for j in prange(K):
        k = _block_order(np.int64(j), np.int64(per), np.int64(K))
        _cas_pairs_range(src, dst, P, chunks[k], chunks[k + 1])


@njit(cache=True)
def _local_edges_range(src, dst, P, e0, e1, v0, v1, ca, cb, c0, c1):
    """Phase 1 of 'local' on an edge list: P[v] = v on [v0, v1), then the
    serial union-find on the edges of [e0, e1) with both ends in [v0, v1),
    the others written to ca/cb[c0:c1].  Returns (cross edges written, the
    edge it stopped at: e1 unless the buffer filled up)."""
    if v0 < 0 or e0 < 0 or v1 > P.shape[0] or e1 > src.shape[0]:
        for v in range(v0, v1):  # never; drops the negative-index checks below
            P[v] = v
        return 0, e0
    for v in range(v0, v1):
        P[v] = v
    c = c0
    span = np.uint64(v1 - v0)
    for e in range(e0, e1):
        a, b = src[e], dst[e]
        if np.uint64(a - v0) >= span or np.uint64(b - v0) >= span:
            if c == c1:
                return c - c0, e
            ca[c] = a
            cb[c] = b
            c += 1
        elif a != b:
            unite(P, a, b)
    return c - c0, e1


@njit(cache=True, parallel=True)
def _par_local_edges(src, dst, P, echunks, vchunks, offs, ca, cb, counts, stops):
    for k in prange(echunks.shape[0] - 1):
        counts[k], stops[k] = _local_edges_range(src, dst, P, echunks[k], echunks[k + 1],
                                                 vchunks[k], vchunks[k + 1],
                                                 ca, cb, offs[k], offs[k + 1])


@njit(cache=True)
def _cross_sample_edges(src, dst, echunks, vchunks, picks):
    """Picked edges whose ends are not both in the vertex range of their chunk."""
    cross = 0
    for i in range(picks.shape[0]):
        e = picks[i]
        k = np.searchsorted(echunks, e, side="right") - 1
        lo, hi = vchunks[k], vchunks[k + 1]
        if src[e] < lo or src[e] >= hi or dst[e] < lo or dst[e] >= hi:
            cross += 1
    return cross


@njit(cache=True)
def _local_range(indptr, indices, P, v0, v1, ca, cb, c0, c1):
    """Phase 1 of 'local' on the vertices [v0, v1): the serial union-find on
    the edges inside the range, the others written to ca/cb[c0:c1].
    Returns (cross edges written, the vertex it stopped at: v1 unless the
    buffer filled up)."""
    if v0 < 0 or v1 > P.shape[0] or v1 >= indptr.shape[0]:
        # never (the bounds are valid); it lets LLVM drop the negative-index
        # checks of P[v] and indptr[v] below.  Phase 2 would unite it all.
        for v in range(v0, v1):
            P[v] = v
        return 0, v0
    for v in range(v0, v1):
        P[v] = v
    c = c0
    span = np.uint64(v1 - v0)
    for v in range(v0, v1):
        if c + (indptr[v + 1] - indptr[v]) > c1:  # this vertex might not fit
            return c - c0, v
        first = True
        for e in range(indptr[v], indptr[v + 1]):
            u = indices[e]
            if np.uint64(u - v0) >= span:  # outside [v0, v1): one compare
                ca[c] = v
                cb[c] = u
                c += 1
            elif u != v:
                if first and u < v and P[v] == v:
                    P[v] = u
                    first = False
                else:
                    unite(P, v, u)
    return c - c0, v1


@njit(cache=True, parallel=True)
def _par_local(indptr, indices, P, chunks, offs, ca, cb, counts, stops):
    for k in prange(chunks.shape[0] - 1):
        counts[k], stops[k] = _local_range(indptr, indices, P, chunks[k], chunks[k + 1],
                                           ca, cb, offs[k], offs[k + 1])


@njit(cache=True)
def _relabel0(P):
    """relabel() counting from 0 (SciPy's numbering) in the same one pass,
    so _finish's extra pass (P -= 1) is saved.  Returns the count."""
    count = 0
    for i in range(P.shape[0]):
        p = P[i]
        if p == i:
            P[i] = count
            count += 1
        else:
            P[i] = P[p]
    return count


@njit(cache=True)
def _unite_pairs(src, dst, P):
    """Unite every pair, serially (no other thread running)."""
    for k in range(src.shape[0]):
        if src[k] != dst[k]:
            unite(P, src[k], dst[k])


@njit(cache=True)
def _compact_pairs(ca, cb, offs, counts):
    """Move each chunk's cross edges to the front; returns how many."""
    c = 0
    for k in range(counts.shape[0]):
        for i in range(offs[k], offs[k] + counts[k]):
            ca[c] = ca[i]
            cb[c] = cb[i]
            c += 1
    return c


@njit(cache=True, parallel=True)
def _par_cas_ranges(src, dst, P, starts, ends):
    """Unite the pairs [starts[k], ends[k]) of each k with CAS hooks."""
    for k in prange(starts.shape[0]):
        _cas_pairs_range(src, dst, P, starts[k], ends[k])


def _phase2(ca, cb, c, P, K, threads):
    """Unite the c cross edges: in parallel with CAS hooks, or (fewer than
    SERIAL_CROSS) by the calling thread."""
    if c >= _tuning.GRAPH_CPU_SERIAL_CROSS:
        _par_cas_pairs(ca, cb, P, _even_chunks(c, K), threads)
    elif c:
        _unite_pairs(ca[:c], cb[:c], P)


def _even_chunks(size, K):
    return np.unique(np.linspace(0, size, K + 1).astype(np.int64))


@njit(cache=True)
def _work_bounds(indptr, K):
    """The first vertex v with indptr[v] + v >= k * total / K, k = 0..K (a
    binary search each; indptr[v] + v increases with v)."""
    n = indptr.shape[0] - 1
    total = indptr[n] + n
    b = np.empty(K + 1, dtype=np.int64)
    for k in range(K + 1):
        goal = (total * k) // K
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) // 2
            if indptr[mid] + mid < goal:
                lo = mid + 1
            else:
                hi = mid
        b[k] = lo
    b[0], b[K] = 0, n
    return b


def _work_chunks(indptr, n, K):
    """Vertex ranges with about equal (stored edges + vertices) each."""
    return np.unique(_work_bounds(indptr, K))


@njit(cache=True)
def _cross_sample(indptr, indices, chunks, picks):
    """(cross, stored) edges of the picked vertices: those whose ends lie in
    different chunks, and all of them."""
    cross = 0
    total = 0
    for i in range(picks.shape[0]):
        v = picks[i]
        k = np.searchsorted(chunks, v, side="right")
        lo, hi = chunks[k - 1], chunks[k]
        for e in range(indptr[v], indptr[v + 1]):
            u = indices[e]
            if u < lo or u >= hi:
                cross += 1
        total += indptr[v + 1] - indptr[v]
    return cross, total


def _cross_share(indptr, indices, chunks):
    """Estimated share of stored edges whose ends lie in different chunks
    (the edges of SAMPLE_VERTICES random vertices)."""
    n = indptr.size - 1
    picks = np.sort(np.random.default_rng(0x6D657368).integers(0, n, min(_tuning.GRAPH_CPU_SAMPLE_VERTICES, n)))
    cross, total = _cross_sample(indptr, indices, chunks, picks)
    return cross / total if total else 0.0


def components_parallel(kind, arrays, n, label_dtype, threads, stats=None):
    """Weak components with ``threads`` numba threads (the scheme above);
    the labels are the serial union-find's.  ``stats`` (a dict, optional)
    gets 'threads', 'scheme' ('serial', 'local' or 'cas'), 'cross' (edges
    united in phase 2 of 'local', those of the vertices a full buffer
    stopped at included as their count of stored edges) and 'stopped'
    (chunks whose buffer filled up)."""
    import numba

    threads = max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS))
    scheme, cross, stopped = "serial", 0, 0
    region = contextlib.nullcontext(False)
    if not (threads == 1 or n < 2 or n + int(arrays[1].size) < _tuning.GRAPH_CPU_PARALLEL_MIN_WORK):
        region = numba_region(threads)  # (no in a forked child or beside another region)
    with region as parallel:
        if not parallel:
            count, labels = (components_edges if kind == "edges" else components_csr)(
                *arrays, n, label_dtype)
        else:
            P = np.empty(n, dtype=np.int64 if n >= 2**31 else np.int32)
            K = threads * _tuning.GRAPH_CPU_CHUNKS_PER_THREAD
            local_cross = _tuning.GRAPH_CPU_LOCAL_CROSS
            div, lo = _tuning.GRAPH_CPU_CROSS_BUFFER_DIV, _tuning.GRAPH_CPU_CROSS_BUFFER_MIN
            if kind == "edges":
                src, dst = arrays
                m = int(src.size)
                echunks = np.linspace(0, m, K + 1).astype(np.int64)
                vchunks = np.linspace(0, n, K + 1).astype(np.int64)
                share = 1.0
                if m:
                    picks = np.sort(np.random.default_rng(0x6D657368).integers(
                        0, m, min(_tuning.GRAPH_CPU_SAMPLE_VERTICES, m)))
                    share = _cross_sample_edges(src, dst, echunks, vchunks, picks) / picks.size
                scheme = "local" if share <= local_cross else "cas"
                if scheme == "cas":
                    _par_iota(P, vchunks)
                    _par_cas_pairs(src, dst, P, echunks, threads)
                else:
                    sizes = np.diff(echunks)
                    offs = np.zeros(K + 1, dtype=np.int64)
                    np.cumsum(np.minimum(sizes, sizes // div + lo),
                              out=offs[1:])
                    ca = np.empty(int(offs[-1]), dtype=P.dtype)
                    cb = np.empty(int(offs[-1]), dtype=P.dtype)
                    counts = np.zeros(K, dtype=np.int64)
                    stops = np.zeros(K, dtype=np.int64)
                    _par_local_edges(src, dst, P, echunks, vchunks, offs, ca, cb, counts, stops)
                    c = _compact_pairs(ca, cb, offs, counts)
                    late = stops < echunks[1:]
                    stopped = int(late.sum())
                    cross = c + int((echunks[1:] - stops).sum())
                    _phase2(ca, cb, c, P, K, threads)
                    if stopped:
                        _par_cas_ranges(src, dst, P, stops, echunks[1:])
            else:
                indptr, indices = arrays
                chunks = _work_chunks(indptr, n, K)
                share = _cross_share(indptr, indices, chunks)
                scheme = "local" if share <= local_cross else "cas"
                if scheme == "cas":
                    _par_iota(P, chunks)
                    _par_cas_csr(indptr, indices, P, chunks, chunks[:-1])
                else:
                    sizes = np.diff(indptr[chunks]).astype(np.int64)
                    offs = np.zeros(chunks.size, dtype=np.int64)
                    np.cumsum(np.minimum(sizes, sizes // div + lo), out=offs[1:])
                    ca = np.empty(int(offs[-1]), dtype=P.dtype)
                    cb = np.empty(int(offs[-1]), dtype=P.dtype)
                    counts = np.zeros(chunks.size - 1, dtype=np.int64)
                    stops = np.zeros(chunks.size - 1, dtype=np.int64)
                    _par_local(indptr, indices, P, chunks, offs, ca, cb, counts, stops)
                    c = _compact_pairs(ca, cb, offs, counts)
                    late = stops < chunks[1:]
                    stopped = int(late.sum())
                    cross = c + int((indptr[chunks[1:]] - indptr[stops]).sum())
                    _phase2(ca, cb, c, P, K, threads)
                    if stopped:
                        _par_cas_csr(indptr, indices, P, chunks, stops)
            count = int(_relabel0(P))
            labels = P.astype(label_dtype, copy=False)
    if stats is not None:
        stats.update(threads=threads, scheme=scheme, cross=cross, stopped=stopped)
    return count, labels
