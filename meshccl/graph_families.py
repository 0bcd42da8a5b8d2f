"""The graph families of the graph benchmark and the strong-component tests.

Each family is a function ``make(m, seed=0) -> Edges`` that builds a
directed graph of about ``m`` stored edges (NumPy arrays; the vertex count
follows from the family's shape), and :data:`FAMILIES` maps a short name to
it; :data:`TITLES` gives the name a table shows.  The families are the
shapes on which a strong-component method can fall behind a sequential
depth-first search: hubs, meshes and road-like grids (one way and both
ways), acyclic graphs, long cycles and chains whose diameter is about the
vertex count, many small components, one giant component, self-loops and
repeated edges.  The long-diameter families come numbered in order
(along the chain, the cycle, the rows of a mesh or grid), which gives a
labeller locality it does not have on real data; each also comes as
``<name>_shuffled``, the same graph with its vertex numbers permuted.
``benchmarks/graph_bench.py --families`` runs them at
benchmark sizes, ``tests/test_strong.py`` at small ones.

Examples
--------
>>> from meshccl.graph_families import FAMILIES
>>> e = FAMILIES["cycle"](1000, seed=1)
>>> e.n_vertices, e.src.size
(909, 1000)
"""

from __future__ import annotations

import numpy as np

from . import graph_generators as gen
from .graph import Edges


def _edges(src, dst, n):
    return Edges(np.asarray(src, np.int64), np.asarray(dst, np.int64), int(n))


def _shuffled(e, rng):
    """The same graph with its vertex numbers permuted."""
    order = rng.permutation(e.n_vertices)
    return _edges(order[e.src], order[e.dst], e.n_vertices)


def rmat(m, seed=0):
    """R-MAT (Graph500 a, b, c = 0.57, 0.19, 0.19), 16 edges a vertex."""
    scale = max(2, int(round(np.log2(max(m, 64) / 16))))
    return gen.rmat(scale, 16, seed=seed)


def uniform(m, seed=0):
    """Both ends of every edge uniform over m / 4 vertices."""
    return gen.random_edges(max(1, m // 4), m, seed=seed)


def giant(m, seed=0):
    """16 uniform edges a vertex: one giant component (and a few singles)."""
    return gen.random_edges(max(1, m // 16), m, seed=seed)


def _power_law(m, seed):
    """m pairs (hub end, uniform end) over m / 7 vertices: the hub end drawn
    with weight (rank + 1) ** -0.8, the ranks shuffled over the vertices."""
    n = max(2, m // 7)
    rng = np.random.default_rng(seed)
    weight = (np.arange(n) + 1.0) ** -0.8
    rank = rng.choice(n, m, p=weight / weight.sum())
    return rng.permutation(n)[rank], rng.integers(0, n, m), n


def hubs_out(m, seed=0):
    """Power-law out-degrees, uniform in-degrees (hubs reaching out)."""
    return _edges(*_power_law(m, seed))


def hubs_in(m, seed=0):
    """Power-law in-degrees, uniform out-degrees (hubs reached)."""
    hub, other, n = _power_law(m, seed)
    return _edges(other, hub, n)


def _mesh(shape, both):
    v = np.arange(int(np.prod(shape))).reshape(shape)
    src, dst = [], []
    for axis in range(len(shape)):
        lo = v[tuple(slice(0, -1) if a == axis else slice(None) for a in range(len(shape)))]
        hi = v[tuple(slice(1, None) if a == axis else slice(None) for a in range(len(shape)))]
        src += [lo.ravel()] + ([hi.ravel()] if both else [])
        dst += [hi.ravel()] + ([lo.ravel()] if both else [])
    return _edges(np.concatenate(src), np.concatenate(dst), v.size)


def mesh2d_one_way(m, seed=0):
    """A 2-D mesh, every edge right or down: a DAG of single vertices."""
    return _mesh((max(2, int((m / 2) ** 0.5)),) * 2, False)


def mesh2d_both(m, seed=0):
    """A 2-D mesh, every edge both ways: one component of diameter 2 side."""
    return _mesh((max(2, int((m / 4) ** 0.5)),) * 2, True)


def mesh3d_one_way(m, seed=0):
    """A 3-D mesh, every edge along +x, +y or +z: a DAG."""
    return _mesh((max(2, int(round((m / 3) ** (1 / 3)))),) * 3, False)


def mesh3d_both(m, seed=0):
    """A 3-D mesh, every edge both ways: one component."""
    return _mesh((max(2, int(round((m / 6) ** (1 / 3)))),) * 3, True)


def road_one_way(m, seed=0):
    """A road-like grid (:func:`~meshccl.graph_generators.road_directed`),
    every street one way: many components, long searches."""
    return gen.road_directed(max(2, int((m / 1.2) ** 0.5)), one_way=1.0, seed=seed)


def road_both(m, seed=0):
    """A road-like grid with 10 % one-way streets: one giant component of
    diameter ~ the side, many small ones."""
    return gen.road_directed(max(2, int((m / 2.3) ** 0.5)), one_way=0.1, seed=seed)


def dag(m, seed=0):
    """Edges from a lower to a higher place of a random order of m / 4
    vertices: every component a single vertex."""
    n = max(2, m // 4)
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = a != b
    order = rng.permutation(n)
    return _edges(order[np.minimum(a, b)[keep]], order[np.maximum(a, b)[keep]], n)


def cycle(m, seed=0):
    """One directed cycle through all vertices plus 10 % chords forward by
    2..100: one component of diameter ~ n."""
    n = max(3, int(m / 1.1))
    rng = np.random.default_rng(seed)
    v = np.arange(n)
    start = rng.integers(0, n, m - n)
    return _edges(np.concatenate([v, start]),
                  np.concatenate([(v + 1) % n, (start + rng.integers(2, 101, m - n)) % n]), n)


def chain(m, seed=0):
    """The path 0 -> 1 -> ... -> m: m + 1 single-vertex components."""
    v = np.arange(m)
    return _edges(v, v + 1, m + 1)


def chain_of_cycles(m, seed=0):
    """2-cycles in a row, each linked to the one before it (vertex 2i + 2
    -> 2i + 1): m / 3 components along a path of diameter ~ n, numbered
    against the direction of its edges."""
    k = max(1, m // 3)
    p = np.arange(2 * k).reshape(k, 2)
    return _edges(np.concatenate([p[:, 0], p[:, 1], p[1:, 0]]),
                  np.concatenate([p[:, 1], p[:, 0], p[:-1, 1]]), 2 * k)


def small_sccs(m, seed=0):
    """Directed 10-cycles (m / 20 of them) and as many edges again from a
    vertex of one cycle to one of a later cycle; vertex numbers shuffled:
    many components of 10, a DAG between them."""
    k, size = max(2, m // 20), 10
    rng = np.random.default_rng(seed)
    v = np.arange(k * size)
    ring = v // size * size + (v % size + 1) % size
    extra = max(0, m - v.size)  # (none below 40 edges: the two cycles alone)
    a, b = rng.integers(0, k, extra), rng.integers(0, k, extra)
    keep = a != b
    lo, hi = np.minimum(a, b)[keep], np.maximum(a, b)[keep]
    e = _edges(np.concatenate([v, lo * size + rng.integers(0, size, lo.size)]),
               np.concatenate([ring, hi * size + rng.integers(0, size, hi.size)]), k * size)
    return _shuffled(e, rng)


def _shuffled_family(make):
    """``make``'s graph with its vertex numbers permuted (seeded)."""
    def shuffled(m, seed=0):
        return _shuffled(make(m, seed), np.random.default_rng([seed, 7]))

    shuffled.__name__ = make.__name__ + "_shuffled"
    shuffled.__doc__ = f":func:`{make.__name__}` with its vertex numbers permuted."
    return shuffled


mesh2d_both_shuffled = _shuffled_family(mesh2d_both)
road_both_shuffled = _shuffled_family(road_both)
cycle_shuffled = _shuffled_family(cycle)
chain_shuffled = _shuffled_family(chain)


def multi(m, seed=0):
    """:func:`uniform` at half the edges, every edge stored twice, and a
    self-loop on every third vertex."""
    e = uniform(m // 2, seed)
    loops = np.arange(0, e.n_vertices, 3)
    return _edges(np.concatenate([e.src, e.src, loops]), np.concatenate([e.dst, e.dst, loops]),
                  e.n_vertices)


#: name -> make(m, seed=0)
FAMILIES = {f.__name__: f for f in (
    rmat, uniform, giant, hubs_out, hubs_in, mesh2d_one_way, mesh2d_both, mesh3d_one_way,
    mesh3d_both, road_one_way, road_both, dag, cycle, chain, chain_of_cycles, small_sccs,
    multi, mesh2d_both_shuffled, road_both_shuffled, cycle_shuffled, chain_shuffled)}

#: name -> the title a table shows
TITLES = {
    "rmat": "R-MAT, 16 a vertex", "uniform": "uniform random, 4 a vertex",
    "giant": "uniform random, 16 a vertex (one giant)",
    "hubs_out": "power-law out-degree hubs", "hubs_in": "power-law in-degree hubs",
    "mesh2d_one_way": "2-D mesh, one way", "mesh2d_both": "2-D mesh, both ways",
    "mesh3d_one_way": "3-D mesh, one way", "mesh3d_both": "3-D mesh, both ways",
    "road_one_way": "road-like grid, all one way", "road_both": "road-like grid, 10 % one way",
    "dag": "random DAG", "cycle": "one cycle through all + chords", "chain": "one chain",
    "chain_of_cycles": "a chain of 2-cycles", "small_sccs": "many small SCCs (10-cycles)",
    "multi": "self-loops and repeated edges",
    "mesh2d_both_shuffled": "2-D mesh, both ways, shuffled",
    "road_both_shuffled": "road-like grid, 10 % one way, shuffled",
    "cycle_shuffled": "one cycle + chords, shuffled", "chain_shuffled": "one chain, shuffled"}
