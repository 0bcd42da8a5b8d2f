"""Seeded graph generators for tests and benchmarks (edge lists, NumPy or CuPy).

Each returns ``meshccl.graph.Edges(src, dst, n_vertices)`` with int64 arrays
(directed edges; the components are the weak ones).  Also reachable as
``meshccl.graph.generators``.

Every generator takes ``xp`` -- where the arrays go: None or ``'numpy'`` (the
default; NumPy arrays) or ``'cupy'`` (CuPy arrays on the current GPU); the
modules ``numpy`` and ``cupy`` themselves are accepted too, as
:mod:`meshccl.patterns` takes them.  The graph is always generated on the
host by NumPy's seeded generator and, for ``'cupy'``, copied to the device
once (one transfer per array), so a seed gives the same graph, value for
value, on both sides.  CuPy is imported only when asked for; without it
``xp='cupy'`` raises ``ImportError`` naming the argument.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np

from .graph import Edges


def _output_module(xp):
    """numpy or cupy for a generator's ``xp`` argument (a clear error otherwise)."""
    if xp is None or xp is np or (isinstance(xp, str) and xp == "numpy"):
        return np
    name = xp if isinstance(xp, str) else getattr(xp, "__name__", None)
    if name != "cupy":
        raise ValueError(f"xp must be None, 'numpy' or 'cupy' (or the module), got {xp!r}")
    try:
        import cupy
    except ImportError as exc:
        raise ImportError(f"xp='cupy' needs CuPy, which could not be imported ({exc}); "
                          "use xp='numpy' (the default) for NumPy arrays") from exc
    return cupy


def _with_xp(generate):
    """Give a NumPy generator the keyword ``xp`` (see the module docstring):
    the check of ``xp`` comes first (no work is wasted on a bad one), the
    graph is generated on the host, then moved in one transfer per array."""
    @functools.wraps(generate)
    def wrapper(*args, xp=None, **kwargs):
        mod = _output_module(xp)
        e = generate(*args, **kwargs)
        if mod is np:
            return e
        return Edges(mod.asarray(e.src), mod.asarray(e.dst), e.n_vertices)

    doc = generate.__doc__ or ""
    at = doc.find("\n    Returns\n")  # xp joins the numpydoc parameters
    if at < 0:  # (every generator has one; without it xp still gets a section)
        doc += "\n\n    Parameters\n    ----------\n"
        at = len(doc)
    wrapper.__doc__ = doc[:at] + _XP_PARAM + doc[at:]
    sig = inspect.signature(generate)
    wrapper.__signature__ = sig.replace(parameters=[*sig.parameters.values(), inspect.Parameter(
        "xp", inspect.Parameter.KEYWORD_ONLY, default=None)])
    return wrapper


_XP_PARAM = """    xp : None, 'numpy', 'cupy' or the module, optional
        Where the arrays go: NumPy (default) or CuPy on the current GPU (the
        same graph, generated on the host and copied to the GPU once; see
        the module docstring).
"""


@_with_xp
def rmat(scale: int, edge_factor: int = 16, a=0.57, b=0.19, c=0.19, seed: int = 0) -> Edges:
    """R-MAT / Kronecker graph with Graph500 parameters.

    2**scale vertices and edge_factor * 2**scale edges; each edge is placed
    by ``scale`` recursive quadrant choices with probabilities a, b, c and
    d = 1 - a - b - c, and the vertex numbers are then shuffled.
    Vectorised over the edges, one pass per level into preallocated
    buffers (scale 21 with edge factor 48, 10**8 edges: seconds).

    Parameters
    ----------
    scale : int
        log2 of the number of vertices.
    edge_factor : int, optional
        Edges per vertex (Graph500: 16).
    a, b, c : float, optional
        Quadrant probabilities (Graph500: 0.57, 0.19, 0.19).
    seed : int, optional
        Seed of NumPy's generator.

    Returns
    -------
    Edges
        int64 ``src`` and ``dst`` (duplicates and self-loops kept).

    Examples
    --------
    >>> from meshccl.graph_generators import rmat
    >>> e = rmat(4, edge_factor=2, seed=1)
    >>> e.n_vertices, e.src.size, e.src.dtype
    (16, 32, dtype('int64'))
    """
    rng = np.random.default_rng(seed)
    m = edge_factor << scale
    acc = np.uint32 if scale <= 32 else np.uint64  # the bits of each endpoint
    src = np.zeros(m, acc)
    dst = np.zeros(m, acc)
    r = np.empty(m)
    down, right, far, bits = np.empty(m, bool), np.empty(m, bool), np.empty(m, bool), np.empty(m, acc)
    for level in range(scale):
        rng.random(out=r)
        np.greater_equal(r, a + b, out=down)        # quadrants c and d
        np.greater_equal(r, a, out=right)
        np.bitwise_xor(right, down, out=right)      # quadrant b
        np.greater_equal(r, a + b + c, out=far)     # quadrant d
        np.bitwise_or(right, far, out=right)        # quadrants b and d
        np.left_shift(down, level, out=bits, dtype=acc, casting="unsafe")
        np.bitwise_or(src, bits, out=src)
        np.left_shift(right, level, out=bits, dtype=acc, casting="unsafe")
        np.bitwise_or(dst, bits, out=dst)
    del r, down, right, far, bits
    perm = rng.permutation(1 << scale)  # hide the structure of the vertex numbering
    return Edges(perm[src], perm[dst], 1 << scale)


@_with_xp
def grid(shape, keep: float = 1.0, seed: int = 0) -> Edges:
    """A 2-D or 3-D grid graph (4 or 6 neighbours per vertex).

    Vertices are numbered in C order; each grid edge is kept with
    probability ``keep`` (below 1: a road-like graph with deleted edges).

    Parameters
    ----------
    shape : tuple of int
        The grid's extent per axis.
    keep : float, optional
        Probability of keeping each edge (default 1: all of them).
    seed : int, optional
        Seed of NumPy's generator.

    Returns
    -------
    Edges
        Axis by axis, each edge from the smaller vertex to the larger.

    Examples
    --------
    >>> from meshccl.graph_generators import grid
    >>> e = grid((2, 3))
    >>> e.src.tolist(), e.dst.tolist()
    ([0, 1, 2, 0, 1, 3, 4], [3, 4, 5, 1, 2, 4, 5])
    """
    rng = np.random.default_rng(seed)
    idx = np.arange(int(np.prod(shape))).reshape(shape)
    src, dst = [], []
    for axis in range(len(shape)):
        a = np.take(idx, range(shape[axis] - 1), axis=axis).ravel()
        b = np.take(idx, range(1, shape[axis]), axis=axis).ravel()
        sel = rng.random(a.size) < keep
        src.append(a[sel])
        dst.append(b[sel])
    return Edges(np.concatenate(src), np.concatenate(dst), idx.size)


@_with_xp
def road_grid(side: int, degree: float = 2.41, seed: int = 0) -> Edges:
    """A connected road-like graph of about ``degree`` entries per vertex.

    A side x side grid graph with most edges deleted, ``degree`` stored
    entries per vertex on average once every edge is stored both ways
    (road_usa: 57.71M / 23.95M = 2.41; a full grid has about 4).  Every
    vertex but the corner 0 keeps the edge to its left or its upper
    neighbour (one of the two at random, the only one on the border): a
    spanning tree whose paths run monotonically to the corner, so the
    graph is connected with a diameter of the order of the side, as a road
    network's; of the other grid edges each is kept with the probability
    that gives ``degree``.  Vertices are numbered row by row (the locality
    of a road network's numbering).

    Parameters
    ----------
    side : int
        The grid is side x side vertices.
    degree : float, optional
        Mean stored entries per vertex with both directions counted.
    seed : int, optional
        Seed of NumPy's generator.

    Returns
    -------
    Edges
        One way per edge (smaller vertex first); at least side**2 - 1 edges.

    Examples
    --------
    >>> from meshccl.graph import connected_components
    >>> from meshccl.graph_generators import road_grid
    >>> e = road_grid(4, seed=0)
    >>> e.n_vertices, connected_components(e)[0]
    (16, 1)
    """
    rng = np.random.default_rng(seed)
    n = side * side
    grid_edges = 2 * side * (side - 1)
    p = min(max((degree / 2 * n - (n - 1)) / max(grid_edges - (n - 1), 1), 0.0), 1.0)
    up = rng.random((side, side)) < 0.5              # each vertex's tree edge: up, else left
    up[0, :] = False
    up[:, 0] = True
    idx = np.arange(n, dtype=np.int64).reshape(side, side)
    # horizontal edge (i, j-1) - (i, j): in the tree when (i, j) chose left
    keep_h = ~up[:, 1:] | (rng.random((side, side - 1)) < p)
    # vertical edge (i-1, j) - (i, j): in the tree when (i, j) chose up
    keep_v = up[1:, :] | (rng.random((side - 1, side)) < p)
    src = np.concatenate([idx[:, :-1][keep_h], idx[:-1, :][keep_v]])
    dst = np.concatenate([idx[:, 1:][keep_h], idx[1:, :][keep_v]])
    return Edges(src, dst, n)


@_with_xp
def road_directed(side: int, degree: float = 2.41, one_way: float = 0.1, seed: int = 0) -> Edges:
    """A directed road-like graph: :func:`road_grid` with two-way and one-way streets.

    Each edge of ``road_grid(side, degree, seed)`` is stored both ways,
    except a share ``one_way`` of them, stored in one direction chosen at
    random.  The strong components are then one giant component (the
    two-way streets keep most of the network mutually reachable) and many
    small ones cut off by one-way streets, with the diameter of the order
    of the side -- the long searches of a road network.

    Parameters
    ----------
    side : int
        The grid is side x side vertices.
    degree : float, optional
        Mean stored entries per vertex of the undirected :func:`road_grid`.
    one_way : float, optional
        Probability that an edge is a one-way street (0: every edge both
        ways, a symmetric graph).
    seed : int, optional
        Seed of NumPy's generator (the grid's, then the directions').

    Returns
    -------
    Edges
        The two-way edges in both directions, then the one-way edges.

    Examples
    --------
    >>> from meshccl.graph_generators import road_directed
    >>> e = road_directed(4, one_way=0.5, seed=1)
    >>> e.n_vertices, e.src.size
    (16, 26)
    """
    if not 0 <= one_way <= 1:
        raise ValueError(f"one_way must lie in [0, 1], got {one_way!r}")
    base = road_grid(side, degree, seed)
    rng = np.random.default_rng([seed, 1])
    single = rng.random(base.src.size) < one_way
    flip = single & (rng.random(base.src.size) < 0.5)
    a = np.where(flip, base.dst, base.src)
    b = np.where(flip, base.src, base.dst)
    two = ~single
    return Edges(np.concatenate([a[two], b[two], a[single]]),
                 np.concatenate([b[two], a[two], b[single]]), base.n_vertices)


@_with_xp
def line(n: int) -> Edges:
    """Hawick's Line graph: the path 0 - 1 - ... - n-1.

    The worst case for label propagation (n - 1 rounds).

    Parameters
    ----------
    n : int
        Number of vertices.

    Returns
    -------
    Edges
        Edge k joins k and k + 1.

    Examples
    --------
    >>> from meshccl.graph_generators import line
    >>> e = line(4)
    >>> e.src.tolist(), e.dst.tolist(), e.n_vertices
    ([0, 1, 2], [1, 2, 3], 4)
    """
    v = np.arange(max(n - 1, 0), dtype=np.int64)
    return Edges(v, v + 1, n)


@_with_xp
def disjoint(k: int, size: int, seed: int = 0) -> Edges:
    """k separate random trees of ``size`` vertices: exactly k components.

    Each vertex of a tree links to a random earlier one; vertex numbers are
    shuffled across the components.  (Hawick's own Disjoint graphs, random
    edges inside random sets, are :func:`hawick_disjoint`.)

    Parameters
    ----------
    k : int
        Number of trees (components).
    size : int
        Vertices per tree.
    seed : int, optional
        Seed of NumPy's generator.

    Returns
    -------
    Edges
        k * (size - 1) edges on k * size vertices.

    Examples
    --------
    >>> from meshccl.graph import connected_components
    >>> from meshccl.graph_generators import disjoint
    >>> e = disjoint(3, 5, seed=0)
    >>> e.n_vertices, e.src.size, connected_components(e)[0]
    (15, 12, 3)
    """
    rng = np.random.default_rng(seed)
    n = k * size
    local = np.arange(1, size)
    parents = (rng.random((k, size - 1)) * local).astype(np.int64)  # each vertex links to an earlier one
    base = (np.arange(k) * size)[:, None]
    perm = rng.permutation(n)
    return Edges(perm[(base + local).ravel()], perm[(base + parents).ravel()], n)


@_with_xp
def hawick_disjoint(n: int, m: int, sets: int, seed: int = 0) -> Edges:
    """Hawick, Leist and Playne's Disjoint graphs (§6 of their paper): every
    vertex joins one of ``sets`` groups at random, and each of the ``m``
    edges joins a random vertex to a random vertex of the same group (an
    Erdős–Rényi graph per group).  So there are at least ``sets`` components
    (fewer only when a group stays empty), more when sparse groups leave
    vertices without edges (monomers).  Self-loops and duplicates may occur.
    The paper's three series are :data:`HAWICK_DISJOINT_SERIES`.

    Parameters
    ----------
    n : int
        Number of vertices.
    m : int
        Number of edges.
    sets : int
        Number of groups (at least 1).
    seed : int, optional
        Seed of NumPy's generator.

    Returns
    -------
    Edges
        ``src`` uniform over the vertices, ``dst`` uniform over its group.

    Examples
    --------
    >>> from meshccl.graph_generators import hawick_disjoint
    >>> e = hawick_disjoint(1000, 5000, 10, seed=1)
    >>> e.n_vertices, e.src.size
    (1000, 5000)
    """
    if n < 0 or m < 0 or sets < 1:
        raise ValueError(f"hawick_disjoint needs n >= 0, m >= 0 and sets >= 1, got n={n}, m={m}, "
                         f"sets={sets}")
    if n == 0 and m:
        raise ValueError(f"hawick_disjoint: m={m} edges need vertices, got n=0")
    rng = np.random.default_rng(seed)
    group = rng.integers(0, sets, n)
    members = np.argsort(group, kind="stable")           # vertices, group by group
    size = np.bincount(group, minlength=sets)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    src = rng.integers(0, n, m) if n else np.zeros(0, np.int64)
    g = group[src]
    dst = members[start[g] + (rng.random(m) * size[g]).astype(np.int64)]
    return Edges(src.astype(np.int64), dst.astype(np.int64), n)


#: The parameters (n, m, sets) of Hawick et al.'s three Disjoint series:
#: 1 varies the vertices (2-16 M) at 50 M edges and 100 sets, 2 the edges
#: (10-60 M) at 1 M vertices and 100 sets, 3 the sets (10^0 .. 10^6) at 5 M
#: vertices and 60 M edges.  ``hawick_disjoint(*p)`` for p in a series.
HAWICK_DISJOINT_SERIES = {
    1: [(v * 1_000_000, 50_000_000, 100) for v in range(2, 17, 2)],
    2: [(1_000_000, e * 1_000_000, 100) for e in range(10, 61, 10)],
    3: [(5_000_000, 60_000_000, 10 ** k) for k in range(7)],
}


@_with_xp
def random_edges(n: int, m: int, seed: int = 0) -> Edges:
    """m uniformly random directed edges on n vertices.

    Self-loops and duplicates are allowed: an Erdős–Rényi-like multigraph.

    Parameters
    ----------
    n : int
        Number of vertices.
    m : int
        Number of edges.
    seed : int, optional
        Seed of NumPy's generator.

    Returns
    -------
    Edges

    Examples
    --------
    >>> from meshccl.graph_generators import random_edges
    >>> e = random_edges(10, 20, seed=0)
    >>> e.n_vertices, e.src.size, bool(e.src.max() < 10)
    (10, 20, True)
    """
    rng = np.random.default_rng(seed)
    return Edges(rng.integers(0, n, m), rng.integers(0, n, m), n)


@_with_xp
def barabasi_albert(n: int, m: int = 4, seed: int = 0) -> Edges:
    """Barabási–Albert preferential attachment (serial, duplicates merged).

    Starting from a star on m + 1 vertices, each new vertex links to m
    existing vertices chosen with probability proportional to their degree
    (drawn from the list of edge endpoints; duplicate picks merged, so a
    vertex may get fewer than m edges).  Connected.

    Parameters
    ----------
    n : int
        Number of vertices (more than m).
    m : int, optional
        Edges per new vertex (at least 1).
    seed : int, optional
        Seed of NumPy's generator.

    Returns
    -------
    Edges
        From each new vertex to its targets.

    Examples
    --------
    >>> from meshccl.graph import connected_components
    >>> from meshccl.graph_generators import barabasi_albert
    >>> e = barabasi_albert(100, 3, seed=0)
    >>> e.n_vertices, connected_components(e)[0]
    (100, 1)
    """
    if n < m + 1 or m < 1:
        raise ValueError(f"barabasi_albert needs n > m >= 1, got n={n}, m={m}")
    rng = np.random.default_rng(seed)
    ends = np.empty(2 * m * n, np.int64)  # every edge's two endpoints: degree-weighted picks
    ends[: 2 * m] = np.concatenate([np.arange(1, m + 1), np.zeros(m, np.int64)])
    count = 2 * m
    s_list, d_list = [np.arange(1, m + 1)], [np.zeros(m, np.int64)]  # a star to start
    for v in range(m + 1, n):
        targets = np.unique(ends[rng.integers(0, count, m)])
        s_list.append(np.full(targets.size, v))
        d_list.append(targets)
        k = targets.size
        ends[count:count + k] = v
        ends[count + k:count + 2 * k] = targets
        count += 2 * k
    return Edges(np.concatenate(s_list).astype(np.int64), np.concatenate(d_list).astype(np.int64), n)


@_with_xp
def barabasi_albert_bb(n: int, m: int = 9, seed: int = 0) -> Edges:
    """Barabási–Albert preferential attachment, vectorised (Batagelj–Brandes).

    Batagelj and Brandes's copy model (Phys. Rev. E 71, 036113, 2005,
    algorithm "BA"): n * m edges, edge e = v * m + i (i < m) joins vertex v
    to the endpoint M[r] of a uniformly random earlier slot r in [0, 2e] of
    the endpoint list M (M[2e] = v, M[2e + 1] = the picked target), so
    targets are drawn with probability proportional to degree.  The copies
    are resolved by following r to an even slot (a few passes over a
    halving set).  The plain model: self-loops (the first vertex's edges, a
    pick of r = 2e) and parallel edges are kept (a CSR build merges them).
    Connected.  :func:`barabasi_albert` is the serial variant that merges
    duplicate picks.

    Parameters
    ----------
    n : int
        Number of vertices (at least 1).
    m : int, optional
        Edges per vertex (at least 1).
    seed : int, optional
        Seed of NumPy's generator.

    Returns
    -------
    Edges
        Exactly n * m edges, edge e from vertex e // m.

    Examples
    --------
    >>> from meshccl.graph_generators import barabasi_albert_bb
    >>> e = barabasi_albert_bb(100, 9, seed=0)
    >>> e.n_vertices, e.src.size
    (100, 900)
    """
    if n < 1 or m < 1:
        raise ValueError(f"barabasi_albert_bb needs n >= 1 and m >= 1, got n={n}, m={m}")
    rng = np.random.default_rng(seed)
    e = n * m
    r = (rng.random(e) * (2 * np.arange(e, dtype=np.int64) + 1).astype(np.float64)).astype(np.int64)
    np.minimum(r, 2 * np.arange(e, dtype=np.int64), out=r)  # r <= 2e despite rounding
    slot = r.copy()
    odd = np.flatnonzero(slot & 1)
    while odd.size:                       # M[2k + 1] = M[r[k]]: step back to r[k]
        slot[odd] = r[slot[odd] >> 1]
        odd = odd[(slot[odd] & 1).astype(bool)]
    src = np.arange(e, dtype=np.int64) // m
    return Edges(src, (slot >> 1) // m, n)  # M[2k] is edge k's source, vertex k // m


@_with_xp
def watts_strogatz(n: int, k: int = 4, p: float = 0.1, seed: int = 0) -> Edges:
    """Watts–Strogatz small world.

    A ring where each vertex links to its k/2 next neighbours, each edge's
    far end rewired to a random vertex with probability p (p = 1: a random
    graph; p = 0: the ring).

    Parameters
    ----------
    n : int
        Number of vertices.
    k : int, optional
        Even number of ring neighbours per vertex, 0 < k < n.
    p : float, optional
        Rewiring probability.
    seed : int, optional
        Seed of NumPy's generator.

    Returns
    -------
    Edges
        n * k / 2 edges.

    Examples
    --------
    >>> from meshccl.graph_generators import watts_strogatz
    >>> e = watts_strogatz(10, 4, p=0.0)
    >>> e.src.size, e.src[:3].tolist(), e.dst[:3].tolist()
    (20, [0, 1, 2], [1, 2, 3])
    """
    if k % 2 or not 0 < k < n:
        raise ValueError(f"watts_strogatz needs an even k with 0 < k < n, got k={k}, n={n}")
    rng = np.random.default_rng(seed)
    v = np.arange(n, dtype=np.int64)
    src = np.concatenate([v] * (k // 2))
    dst = np.concatenate([(v + j) % n for j in range(1, k // 2 + 1)])
    rewire = rng.random(src.size) < p
    dst[rewire] = rng.integers(0, n, int(rewire.sum()))
    return Edges(src, dst, n)


@_with_xp
def random_regular(n: int, d: int = 3, seed: int = 0) -> Edges:
    """A random d-regular multigraph by the configuration model.

    n * d stubs paired at random: self-loops and parallel edges are
    possible, as in the plain model.

    Parameters
    ----------
    n : int
        Number of vertices.
    d : int, optional
        Degree of every vertex (n * d must be even).
    seed : int, optional
        Seed of NumPy's generator.

    Returns
    -------
    Edges
        n * d / 2 edges; every vertex is an endpoint d times.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.graph_generators import random_regular
    >>> e = random_regular(10, 3, seed=0)
    >>> e.src.size, np.bincount(np.concatenate([e.src, e.dst])).tolist()
    (15, [3, 3, 3, 3, 3, 3, 3, 3, 3, 3])
    """
    if (n * d) % 2:
        raise ValueError(f"random_regular needs n * d even, got n={n}, d={d}")
    rng = np.random.default_rng(seed)
    stubs = rng.permutation(np.repeat(np.arange(n, dtype=np.int64), d))
    return Edges(stubs[0::2], stubs[1::2], n)


@_with_xp
def delaunay(n: int, seed: int = 0) -> Edges:
    """Delaunay triangulation of n uniform random points in the unit square.

    Computed by ``scipy.spatial.Delaunay``: a planar, mesh-like, connected
    graph.

    Parameters
    ----------
    n : int
        Number of points (vertices), at least 3.
    seed : int, optional
        Seed of NumPy's generator.

    Returns
    -------
    Edges
        The three sides of every triangle (inner sides twice, once each
        way).

    Examples
    --------
    >>> from meshccl.graph import connected_components
    >>> from meshccl.graph_generators import delaunay
    >>> e = delaunay(100, seed=0)
    >>> e.n_vertices, connected_components(e)[0]
    (100, 1)
    """
    from scipy.spatial import Delaunay

    rng = np.random.default_rng(seed)
    tri = Delaunay(rng.random((n, 2))).simplices.astype(np.int64)
    src = np.concatenate([tri[:, 0], tri[:, 1], tri[:, 2]])
    dst = np.concatenate([tri[:, 1], tri[:, 2], tri[:, 0]])
    return Edges(src, dst, n)
