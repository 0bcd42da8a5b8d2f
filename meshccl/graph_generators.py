"""Seeded graph generators for tests and benchmarks (NumPy; edge lists).

Each returns ``meshccl.graph.Edges(src, dst, n_vertices)`` with int64 arrays
(directed edges; the components are the weak ones).
"""

from __future__ import annotations

import numpy as np

from .graph import Edges


def rmat(scale: int, edge_factor: int = 16, a=0.57, b=0.19, c=0.19, seed: int = 0) -> Edges:
    """R-MAT / Kronecker graph with Graph500 parameters: 2**scale vertices,
    edge_factor * 2**scale edges, each edge placed by `scale` recursive
    quadrant choices with probabilities a, b, c, d = 1 - a - b - c."""
    rng = np.random.default_rng(seed)
    m = edge_factor << scale
    src = np.zeros(m, np.int64)
    dst = np.zeros(m, np.int64)
    for level in range(scale):
        r = rng.random(m)
        right = (r >= a) & (r < a + b) | (r >= a + b + c)   # quadrants b and d
        down = r >= a + b                                  # quadrants c and d
        src |= down.astype(np.int64) << level
        dst |= right.astype(np.int64) << level
    perm = rng.permutation(1 << scale)  # hide the structure of the vertex numbering
    return Edges(perm[src], perm[dst], 1 << scale)


def grid(shape, keep: float = 1.0, seed: int = 0) -> Edges:
    """A 2-D/3-D grid graph (4/6 neighbours); each edge kept with probability
    `keep` (keep < 1 gives a road-like graph with deleted edges)."""
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


def line(n: int) -> Edges:
    """Hawick's Line graph: a path 0 - 1 - ... - n-1 (worst case for label propagation)."""
    v = np.arange(max(n - 1, 0), dtype=np.int64)
    return Edges(v, v + 1, n)


def disjoint(k: int, size: int, seed: int = 0) -> Edges:
    """Hawick's Disjoint graphs: k separate random trees of `size` vertices,
    vertex numbers shuffled across components."""
    rng = np.random.default_rng(seed)
    n = k * size
    local = np.arange(1, size)
    parents = (rng.random((k, size - 1)) * local).astype(np.int64)  # each vertex links to an earlier one
    base = (np.arange(k) * size)[:, None]
    perm = rng.permutation(n)
    return Edges(perm[(base + local).ravel()], perm[(base + parents).ravel()], n)


def random_edges(n: int, m: int, seed: int = 0) -> Edges:
    """m uniformly random directed edges on n vertices (self-loops and
    duplicates allowed): an Erdős–Rényi-like multigraph."""
    rng = np.random.default_rng(seed)
    return Edges(rng.integers(0, n, m), rng.integers(0, n, m), n)


def barabasi_albert(n: int, m: int = 4, seed: int = 0) -> Edges:
    """Barabási–Albert preferential attachment: each new vertex links to m
    existing vertices chosen with probability proportional to degree (drawn
    from the list of edge endpoints; duplicate picks merged).  Connected."""
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


def watts_strogatz(n: int, k: int = 4, p: float = 0.1, seed: int = 0) -> Edges:
    """Watts–Strogatz small world: a ring where each vertex links to its k/2
    next neighbours, each edge's far end rewired to a random vertex with
    probability p (p = 1: random graph; p = 0: the ring)."""
    if k % 2 or not 0 < k < n:
        raise ValueError(f"watts_strogatz needs an even k with 0 < k < n, got k={k}, n={n}")
    rng = np.random.default_rng(seed)
    v = np.arange(n, dtype=np.int64)
    src = np.concatenate([v] * (k // 2))
    dst = np.concatenate([(v + j) % n for j in range(1, k // 2 + 1)])
    rewire = rng.random(src.size) < p
    dst[rewire] = rng.integers(0, n, int(rewire.sum()))
    return Edges(src, dst, n)


def random_regular(n: int, d: int = 3, seed: int = 0) -> Edges:
    """A random d-regular multigraph by the configuration model: n*d stubs
    paired at random (self-loops and parallel edges possible, as in the
    plain model; n * d must be even)."""
    if (n * d) % 2:
        raise ValueError(f"random_regular needs n * d even, got n={n}, d={d}")
    rng = np.random.default_rng(seed)
    stubs = rng.permutation(np.repeat(np.arange(n, dtype=np.int64), d))
    return Edges(stubs[0::2], stubs[1::2], n)


def delaunay(n: int, seed: int = 0) -> Edges:
    """Delaunay triangulation of n uniform random points in the unit square
    (scipy.spatial): a planar, mesh-like, connected graph."""
    from scipy.spatial import Delaunay

    rng = np.random.default_rng(seed)
    tri = Delaunay(rng.random((n, 2))).simplices.astype(np.int64)
    src = np.concatenate([tri[:, 0], tri[:, 1], tri[:, 2]])
    dst = np.concatenate([tri[:, 1], tri[:, 2], tri[:, 0]])
    return Edges(src, dst, n)
