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
