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
from numba import njit, prange

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

#: enum Compression / UnionRule of kernels/unionfind.cuh
COMPRESS_CODE = {"none": 0, "halving": 1, "splitting": 2, "full": 3, "splicing": 4}
RULES = {"unionfind": 0, "async": 0, "rem-cas": 1, "early": 2, "hooks": 3, "jtb": 4}
HB_EDGES = 2
BFS_SAMPLE_LEVELS = 512


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
def _union_rule(src, dst, P, rule, comp):
    """Unite along every edge with union rule ``rule`` and compression ``comp``."""
    n = P.shape[0]
    for v in range(n):
        P[v] = v
    for k in range(src.shape[0]):
        a, b = src[k], dst[k]
        if a == b:
            continue
        if rule == 1:  # Rem: walks step by parent value; splice / split / halve on the way
            rx, ry = a, b
            while True:
                px, py = P[rx], P[ry]
                if px == py:
                    break
                if px < py:
                    rx, ry, px, py = ry, rx, py, px
                if rx == px:
                    P[rx] = py
                    break
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
        elif rule == 2:  # early: walk up together, stop where they meet
            u, w = a, b
            while u != w:
                if u < w:
                    u, w = w, u
                if P[u] == u:
                    P[u] = w
                    break
                u = P[u]
            if comp != 0:
                _find_c(P, a, comp)
                _find_c(P, b, comp)
        elif rule == 4:  # JTB: link by random priority
            ra, rb = _find_c(P, a, comp), _find_c(P, b, comp)
            if ra != rb:
                if _jtb_before(rb, ra):
                    ra, rb = rb, ra
                P[ra] = rb
        else:  # async / hooks
            ra, rb = _find_c(P, a, comp), _find_c(P, b, comp)
            if ra < rb:
                P[rb] = ra
            elif rb < ra:
                P[ra] = rb
    if rule == 4:  # roots are random members: point everyone at the smallest
        R = np.empty(n, dtype=P.dtype)
        for v in range(n):
            R[v] = _find_c(P, v, 0)
        for v in range(n):
            if R[v] != v and v < P[R[v]]:
                P[R[v]] = v
        for v in range(n):
            if R[v] != v:
                P[v] = P[R[v]]


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


@njit(cache=True)
def _hb(indptr, indices, P, k, picks, symmetric):
    """Hook-based sampling: every vertex points at its first smaller
    neighbour (ECL-CC's start); vertices still roots unite their first k
    entries; the most frequent root L of the picks is found; the finish
    pass unites every entry of the vertices outside L."""
    n = P.shape[0]
    for v in range(n):
        P[v] = v
        for e in range(indptr[v], indptr[v + 1]):
            if indices[e] < v:
                P[v] = indices[e]
                break
    for v in range(n):
        if P[v] != v:
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
            _hb(indptr, indices, P, HB_EDGES, picks, symmetric)
        else:
            _bfs_sample(indptr, indices, P, picks, BFS_SAMPLE_LEVELS, symmetric)
    return _finish(P, label_dtype)


# --------------------------------------------------------------------------
# Parallel union-find without atomics (cpu_threads != 1: 'unionfind' /
# 'async', 'ecl' and the CPU's 'auto').
#
# numba has no compare-and-swap on the CPU, so the threads hook with plain
# stores and the losses are found and repaired afterwards.
#
# Scheme.  P is a forest with P[x] <= x (a root has P[x] == x).
#   0. start (CSR input): every vertex points at its first smaller stored
#      neighbour (ECL-CC's start; a link along an edge), else at itself;
#      edge lists start from P[x] = x.  Then the forest is flattened.
#   1. a round: S = a copy of P (the round's start forest, a star forest);
#      the threads take chunks of the round's edge set D (round 1: every
#      stored edge but the start links) and run the serial ``unite`` on
#      each -- find with path halving, then the larger root is hooked under
#      the smaller by a plain store P[hi] = lo -- marking every edge whose
#      unite stored a hook.  Two threads may hook the same root at once, so
#      a hook can be overwritten (lost), and a vertex halved past such a
#      root before the overwrite ends up in another tree than its old root:
#      the round can lose unions, never invent one.
#   2. the forest is flattened (a forward pass inside each chunk of
#      indices, then every vertex walks to its root and points at it; the
#      roots do not move in this phase, so the concurrent stores agree).
#   3. the next round's D: the marked edges whose ends have different
#      roots, and the pairs (x, S[x]) whose ends have different roots (a
#      start tree that was split).  Repeat 1-3 until D is empty.  After
#      MAX_ROUNDS rounds the pairs left in D are united serially.
#
# Why the forest stays sound.  Every store writes P[x] = y with y < x and
# y in x's component: a hook joins the roots found from the two ends of an
# edge, a halving store points x at its grandparent, the flattening at its
# root, and every link ever read is (by induction over the stores) a path
# in the graph.  So parents only decrease, there is never a cycle, every
# find ends (each step goes to a smaller index), a vertex that stops being
# a root never becomes one again (nothing stores P[x] = x after the start),
# every tree lies inside one component, and its root is its smallest vertex.
# Assumed of the hardware: aligned int32 / int64 loads and stores do not
# tear (x86-64, AArch64); the argument needs nothing about their order.
#
# Why the result is exact.  Invariant: the components are the classes of
# "same tree of P, or joined by a chain of pairs of D".  It holds before
# round 1 (D: all edges; the start links are edges).  In a round, every
# link that any thread reads was, by induction over the stores, implied by
# the start links (x, S[x]) and the edges whose unite stored a hook, so an
# edge of D whose unite found one root, or hooked, has its ends joined by
# those pairs; each of these pairs either ends in one tree after the round
# or is in the next D.  So the invariant holds after every round, and with
# D empty the trees are the components.  The serial finish on the pairs
# left is the serial union-find on a sound forest, exact as well.
#
# Why it ends.  The number of roots never grows.  A round with D non-empty
# (D's pairs all have two roots at its start, after the flattening) stores
# at least one hook: if none were stored, the star forest would not change
# (halving a star stores nothing) and the first pair of D would be hooked.
# A hook store makes a root a non-root for good, so every round removes a
# root, and there are at most n - (number of components) rounds after the
# first -- in practice lost hooks are rare and round 2 repairs them.
# MAX_ROUNDS caps the rounds anyway (the serial finish), so the time is
# bounded even if threads keep overwriting each other's hooks.

#: rounds of parallel hooking before the pairs left are united serially
MAX_ROUNDS = 8
#: chunks of work per thread (load balance on skewed degrees)
CHUNKS_PER_THREAD = 8
#: tests only: defer the hook of every edge whose position is a multiple of
#: this to the end of its chunk (0: off), which loses hooks and splits
#: trees even on one core, as threads racing would
_DEFER_HOOKS = 0


@njit(cache=True, parallel=True)
def _par_start(indptr, indices, P, chunks):
    """ECL-CC's start: P[v] = v's first smaller stored neighbour, else v."""
    for k in prange(chunks.shape[0] - 1):
        for v in range(chunks[k], chunks[k + 1]):
            p = v
            for e in range(indptr[v], indptr[v + 1]):
                if indices[e] < v:
                    p = indices[e]
                    break
            P[v] = p


@njit(cache=True, parallel=True)
def _par_flatten(P, chunks):
    """Point every vertex at its root.  First a forward pass inside each
    chunk of indices (a parent in the chunk is already done, so a vertex
    then points at a root of its chunk or into an earlier chunk), then
    every vertex walks to its root (at most one step per earlier chunk)."""
    K = chunks.shape[0] - 1
    for k in prange(K):
        lo = chunks[k]
        for v in range(lo, chunks[k + 1]):
            p = P[v]
            if p != v and p >= lo:
                P[v] = P[p]
    for k in prange(K):
        for v in range(chunks[k], chunks[k + 1]):
            p = P[v]
            r = p
            while True:
                q = P[r]
                if q == r:
                    break
                r = q
            if r != p:
                P[v] = r


@njit(cache=True, inline="always")
def _hook_once(P, a, b, e, defer, dh, dl, nd):
    """unite(P, a, b) with a plain-store hook; the hook of a deferred edge
    is queued in dh/dl instead.  Returns (hooked, nd)."""
    ra = find(P, a)
    rb = find(P, b)
    if ra == rb:
        return False, nd
    hi, lo = (ra, rb) if ra > rb else (rb, ra)
    if defer and e % defer == 0:
        dh[nd] = hi
        dl[nd] = lo
        return True, nd + 1
    P[hi] = lo
    return True, nd


@njit(cache=True, parallel=True)
def _par_hook_csr(indptr, indices, P, chunks, mark, defer):
    """Round 1 on CSR: unite along every stored edge except each vertex's
    start link; mark[e] = 1 where the unite stored a hook."""
    for k in prange(chunks.shape[0] - 1):
        v0, v1 = chunks[k], chunks[k + 1]
        cap = (indptr[v1] - indptr[v0]) // defer + 1 if defer else 0
        dh = np.empty(cap, dtype=np.int64)
        dl = np.empty(cap, dtype=np.int64)
        nd = 0
        for v in range(v0, v1):
            first = True
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                mark[e] = 0
                if u == v:
                    continue
                if first and u < v:  # the start link: P[v] was u
                    first = False
                    continue
                hooked, nd = _hook_once(P, v, u, e, defer, dh, dl, nd)
                if hooked:
                    mark[e] = 1
        for i in range(nd):
            P[dh[i]] = dl[i]


@njit(cache=True, parallel=True)
def _par_hook_pairs(src, dst, P, chunks, mark, defer):
    """A round on the pairs (src[e], dst[e]) (an edge list, or D)."""
    for k in prange(chunks.shape[0] - 1):
        e0, e1 = chunks[k], chunks[k + 1]
        cap = (e1 - e0) // defer + 1 if defer else 0
        dh = np.empty(cap, dtype=np.int64)
        dl = np.empty(cap, dtype=np.int64)
        nd = 0
        for e in range(e0, e1):
            a, b = src[e], dst[e]
            mark[e] = 0
            if a == b:
                continue
            hooked, nd = _hook_once(P, a, b, e, defer, dh, dl, nd)
            if hooked:
                mark[e] = 1
        for i in range(nd):
            P[dh[i]] = dl[i]


@njit(cache=True, parallel=True)
def _par_left_csr(indptr, indices, P, chunks, mark, counts, offs, out_a, out_b, fill):
    """Marked CSR edges whose ends have different roots (P flat): counted
    per chunk into counts[k + 1], or (fill) written from offs[k]."""
    for k in prange(chunks.shape[0] - 1):
        if fill and offs[k] == offs[k + 1]:
            continue
        c = offs[k] if fill else 0
        for v in range(chunks[k], chunks[k + 1]):
            pv = P[v]
            for e in range(indptr[v], indptr[v + 1]):
                if mark[e] and P[indices[e]] != pv:
                    if fill:
                        out_a[c] = v
                        out_b[c] = indices[e]
                    c += 1
        if not fill:
            counts[k + 1] = c


@njit(cache=True, parallel=True)
def _par_left_pairs(src, dst, P, chunks, mark, counts, offs, out_a, out_b, fill):
    """Marked pairs whose ends have different roots (as _par_left_csr)."""
    for k in prange(chunks.shape[0] - 1):
        if fill and offs[k] == offs[k + 1]:
            continue
        c = offs[k] if fill else 0
        for e in range(chunks[k], chunks[k + 1]):
            if mark[e] and P[src[e]] != P[dst[e]]:
                if fill:
                    out_a[c] = src[e]
                    out_b[c] = dst[e]
                c += 1
        if not fill:
            counts[k + 1] = c


@njit(cache=True, parallel=True)
def _par_split(P, S, chunks, counts, offs, out_a, out_b, fill):
    """Vertices x no longer in the tree of their start root S[x] (P flat):
    the pairs (x, S[x]), counted or written as in _par_left_csr."""
    for k in prange(chunks.shape[0] - 1):
        if fill and offs[k] == offs[k + 1]:
            continue
        c = offs[k] if fill else 0
        for x in range(chunks[k], chunks[k + 1]):
            if P[x] != P[S[x]]:
                if fill:
                    out_a[c] = x
                    out_b[c] = S[x]
                c += 1
        if not fill:
            counts[k + 1] = c


@njit(cache=True)
def _unite_pairs(src, dst, P):
    """The serial finish: unite every pair."""
    for k in range(src.shape[0]):
        if src[k] != dst[k]:
            unite(P, src[k], dst[k])


def _collect(kernel, args, K):
    """Run a _par_left_* / _par_split kernel: count, prefix sum, fill."""
    counts = np.zeros(K + 1, dtype=np.int64)
    none = np.empty(0, dtype=np.int64)
    kernel(*args, counts, counts, none, none, False)
    np.cumsum(counts, out=counts)
    total = int(counts[-1])
    a = np.empty(total, dtype=np.int64)
    b = np.empty(total, dtype=np.int64)
    if total:
        kernel(*args, counts, counts, a, b, True)
    return a, b


def _even_chunks(size, K):
    return np.unique(np.linspace(0, size, K + 1).astype(np.int64))


def _work_chunks(indptr, n, K):
    """Vertex ranges with about equal (stored edges + vertices) each."""
    work = indptr + np.arange(n + 1, dtype=np.int64)
    b = np.searchsorted(work, np.linspace(0, int(work[-1]), K + 1))
    b[0], b[-1] = 0, n
    return np.unique(b.astype(np.int64))


def components_parallel(kind, arrays, n, label_dtype, threads, stats=None):
    """Weak components with ``threads`` numba threads (the scheme above);
    the labels are the serial union-find's.  ``stats`` (a dict, optional)
    gets 'rounds' (parallel rounds run), 'serial_finish' (pairs left to
    the serial finish, 0 if none), 'threads', and per round 'lost' (hooking
    pairs left in two trees) and 'split' (vertices split from their start
    root)."""
    import numba

    threads = max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS))
    P = np.empty(n, dtype=np.int64 if n >= 2**31 else np.int32)
    rounds, left, lost, split = 0, 0, [], []
    if n:
        defer = int(_DEFER_HOOKS)
        K = threads * CHUNKS_PER_THREAD
        vchunks = _even_chunks(n, K)
        old = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            if kind == "edges":
                src, dst = arrays
                P[:] = np.arange(n, dtype=P.dtype)
                S = P.copy()
                mark = np.empty(src.size, dtype=np.uint8)
                echunks = _even_chunks(src.size, K)
                _par_hook_pairs(src, dst, P, echunks, mark, defer)
                _par_flatten(P, vchunks)
                a, b = _collect(_par_left_pairs, (src, dst, P, echunks, mark), echunks.size - 1)
            else:
                indptr, indices = arrays
                wchunks = _work_chunks(indptr, n, K)
                _par_start(indptr, indices, P, wchunks)
                _par_flatten(P, vchunks)
                S = P.copy()
                mark = np.empty(indices.size, dtype=np.uint8)
                _par_hook_csr(indptr, indices, P, wchunks, mark, defer)
                _par_flatten(P, vchunks)
                a, b = _collect(_par_left_csr, (indptr, indices, P, wchunks, mark),
                                wchunks.size - 1)
            del mark
            rounds = 1
            while True:
                sa, sb = _collect(_par_split, (P, S, vchunks), vchunks.size - 1)
                lost.append(int(a.size))
                split.append(int(sa.size))
                if sa.size:
                    a, b = np.concatenate([a, sa]), np.concatenate([b, sb])
                if not a.size:
                    break
                if rounds == MAX_ROUNDS:
                    left = int(a.size)
                    _unite_pairs(a, b, P)
                    break
                S[:] = P
                mark = np.empty(a.size, dtype=np.uint8)
                echunks = _even_chunks(a.size, K)
                _par_hook_pairs(a, b, P, echunks, mark, defer)
                _par_flatten(P, vchunks)
                a, b = _collect(_par_left_pairs, (a, b, P, echunks, mark), echunks.size - 1)
                rounds += 1
        finally:
            numba.set_num_threads(old)
    if stats is not None:
        stats.update(rounds=rounds, serial_finish=left, threads=threads, lost=lost, split=split)
    return _finish(P, label_dtype)
