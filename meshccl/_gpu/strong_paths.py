"""Strong components: contraction of the paths of (1,1) vertices.

A vertex whose only out-neighbour (self-loops aside, repeats counted once)
is s and whose only in-neighbour is p -- a *path vertex* -- lies either on
a maximal path ``u -> a1 -> ... -> ak -> w`` of path vertices between two
other vertices u and w (possibly u == w), or on a cycle made of path
vertices alone.  Such a path is replaced by the one edge ``u -> w``: the
strong components of the other vertices do not change (a cycle through
the path passes u and w, and the edge keeps it), and afterwards

* each ai is in the component of u when u and w share one (w reaches u,
  so ``u -> ai -> w -> ... -> u`` is a cycle), else a component alone
  (ai is reached only through u and reaches only through w);
* a cycle of path vertices is one component and touches nothing else.

Chains, cycles with few chords and chains of cycles are mostly such paths:
forward-backward search and trimming would need one pass per vertex of
their length, while finding every path's ends takes ``ceil(log2 k)``
rounds of pointer jumping over the k path vertices (Wylie's doubling:
each vertex's pointer to its path's last vertex and the smallest vertex
it has passed, which on a cycle becomes the cycle's smallest vertex, the
same for all its vertices); a vertex stops jumping once its pointer is at
its path's end (:func:`jump`), so short paths cost a few rounds over a
shrinking set, not ``ceil(log2 k)`` rounds over all k vertices.

:func:`contract` and :func:`expand` are array operations that NumPy and
CuPy share and four kernels of ``strong.cu`` (``meshccl_scc_path_links``,
which :func:`links` launches; ``meshccl_scc_path_jump``, a round of
:func:`jump`; ``meshccl_scc_path_degree`` / ``_fill``, which write the
contracted rows reading only the kept vertices' rows), so the tests run
them on the host with serial emulations of the kernels.
Host synchronisations: the counts of path vertices, of kept vertices and
of the contracted rows' entries.
"""

from __future__ import annotations

import numpy as np

from .. import _tuning
from .graph import BLOCK, _grid
from .loader import c_type, kernels


def links(fptr, fidx, rptr, ridx, n, I):
    """(succ, pred), CuPy arrays of type I: each vertex's only out- and
    in-neighbour other than itself, -1 when it has none, -2 when it has
    several (``meshccl_scc_path_links``; the graph and its transpose as
    CSR on the device)."""
    import cupy

    (link,) = kernels("strong.cu", f"meshccl_scc_path_links<{c_type(I)}, {c_type(fidx.dtype)}>")
    succ, pred = cupy.empty(n, dtype=I), cupy.empty(n, dtype=I)
    link(_grid(n, BLOCK, 32), (BLOCK,), (fptr, fidx, rptr, ridx, np.dtype(I).type(n), succ, pred))
    return succ, pred


def worth_contracting(k: int, n: int) -> bool:
    """Whether k path vertices of n are enough to contract: at least one
    in ``STRONG_PATH_SHARE`` (below that the contracted graph is about the
    graph again, and rebuilding it costs a transpose's time)."""
    return k > 0 and k * _tuning.STRONG_PATH_SHARE >= n


class Contraction:
    """The graph with its paths contracted, and what :meth:`expand` needs.

    Attributes
    ----------
    kept : array of int64
        The vertices that are not path vertices, ascending: vertex i of the
        contracted graph is ``kept[i]``.
    indptr, indices : arrays
        The contracted graph as CSR over ``0 .. kept.size - 1`` (indptr
        int64, indices of the input's neighbour type): row i is row
        ``kept[i]`` of the graph with each path vertex replaced by its
        path's end w, self-loops and entries to cycles dropped.
    path_vertices : int
        The number k of path vertices contracted.
    """

    def __init__(self, xp, n, kept, indptr, indices, pv, last_u, w, on_cycle, low):
        self.xp, self.n = xp, n
        self.kept, self.indptr, self.indices = kept, indptr, indices
        self._pv, self._u, self._w, self._cycle, self._low = pv, last_u, w, on_cycle, low
        self.path_vertices = int(pv.size)

    def expand(self, kept_rep, dtype):
        """rep over all n vertices (a member of each vertex's component,
        of type ``dtype``) from ``kept_rep``, the same for the kept
        vertices (original vertex numbers)."""
        xp, pv = self.xp, self._pv
        rep = xp.empty(self.n, dtype=dtype)
        rep[self.kept] = kept_rep.astype(dtype, copy=False)
        ru, rw = rep[self._u], rep[self._w]
        own = xp.where(ru == rw, ru, pv.astype(dtype, copy=False))
        rep[pv] = xp.where(self._cycle, pv[self._low].astype(dtype, copy=False), own)
        return rep


def jump(xp, after, place, k):
    """(last, low) by pointer jumping over k path vertices: ``after[i]``
    the place of the path vertex after place i (-1 at a path's last
    vertex); ``last[i]`` the place of the last vertex of i's path (on a
    cycle: some vertex of the cycle), ``low[i]`` the smallest place on
    i's cycle (for vertices on a path: not used).

    Only the places whose pointer has not reached its path's end jump: a
    round reads and writes the *active* places and drops those that
    arrived, so a graph of short paths takes as many rounds as its longest
    path needs (``ceil(log2 length)``) over fewer and fewer places -- about
    2k reads and writes in all when path lengths are geometric -- where
    jumping every place ``ceil(log2 k)`` times took k each round.  Cycles
    of path vertices never arrive: their places jump until a pointer has
    passed k vertices, as before.  A round is one launch of
    ``meshccl_scc_path_jump`` (two buffers: every place reads the values
    of the round before) and one host read, the count of places that
    arrived; the places still moving are compacted once half of them have
    arrived (a long chain keeps most of its places moving for most rounds,
    short paths drop most of theirs in the first).  ``xp``: NumPy or CuPy, as for
    :func:`contract` (the kernel then emulated)."""
    T = np.dtype(place.dtype)
    (step,) = kernels("strong.cu", f"meshccl_scc_path_jump<{c_type(T)}>")
    last = xp.where(after >= 0, after, place).astype(T, copy=False)
    low = place.copy()  # the smallest place passed (pv ascending: the smallest vertex)
    other = (last.copy(), low.copy())  # (equal where a place never jumps)
    act = xp.flatnonzero(after >= 0).astype(xp.int64, copy=False)  # not arrived yet
    na = int(act.size)
    more = xp.empty(max(na, 1), dtype=xp.uint8)
    arrived = xp.zeros(1, dtype=xp.uint64)
    span = 1
    while span < k and na:  # after r rounds a pointer has passed 2**r vertices
        arrived.fill(0)
        step(_grid(na, BLOCK, 32), (BLOCK,), (act, np.int64(na), after, last, low, *other, more,
                                              arrived))
        (last, low), other = other, (last, low)
        span *= 2
        left = na - int(arrived.get()[0])  # (the host read)
        if 2 * left <= na:  # half of them arrived: drop those
            act = act[more[:na].view(np.bool_)]
            na = left
    return last, low


def path_vertices(xp, succ, pred, n):
    """The path vertices ascending (int64), from each vertex's only
    neighbours ``succ``, ``pred`` as :func:`links` gives them, or None when
    :func:`worth_contracting` says they are too few."""
    pv = xp.flatnonzero((succ >= 0) & (pred >= 0)).astype(xp.int64, copy=False)
    return pv if worth_contracting(int(pv.size), n) else None


def contract(xp, fptr, fidx, succ, pred, n, pv):
    """The :class:`Contraction` of a graph (CSR ``fptr``, ``fidx``; its
    vertices' only neighbours ``succ``, ``pred`` as :func:`links` gives
    them; ``pv`` its path vertices, :func:`path_vertices`).  ``xp``: the
    arrays' module (NumPy or CuPy)."""
    path = (succ >= 0) & (pred >= 0)
    k = int(pv.size)
    T = xp.int32 if n < 2**31 else xp.int64  # places in pv (the jumps' memory traffic)
    pos = xp.full(n, -1, dtype=T)  # a path vertex's place in pv
    place = xp.arange(k, dtype=T)
    pos[pv] = place
    s = succ[pv].astype(xp.int64)
    after = pos[s]  # the next path vertex's place, -1 at a path's last vertex
    last, low = jump(xp, after, place, k)
    on_cycle = after[last] >= 0  # a path's last vertex leads out; a cycle never ends
    w = s[last]  # the path's end (on a cycle: a cycle vertex, unused)
    # u: the first vertex of each path (its one in-neighbour is no path
    # vertex) tells the path's last vertex, from which every vertex reads it
    p = pred[pv].astype(xp.int64)
    first = xp.flatnonzero(pos[p] < 0)
    u_of_last = xp.zeros(k, dtype=xp.int64)
    u_of_last[last[first]] = p[first]
    u = u_of_last[last]
    # the contracted rows: each kept vertex's row, a path vertex replaced by
    # its path's end (meshccl_scc_path_degree, _fill)
    end = xp.arange(n, dtype=xp.int64)
    end[pv] = xp.where(on_cycle, -1, w)
    kept = xp.flatnonzero(~path).astype(xp.int64, copy=False)
    q = int(kept.size)
    at = xp.full(n, -1, dtype=xp.int64)
    at[kept] = xp.arange(q, dtype=xp.int64)
    degree, fill = kernels("strong.cu", f"meshccl_scc_path_degree<{c_type(fidx.dtype)}>",
                           f"meshccl_scc_path_fill<{c_type(fidx.dtype)}>")
    grid, qq = _grid(max(q, 1), BLOCK, 32), np.int64(q)
    indptr = xp.zeros(q + 1, dtype=xp.int64)
    degree(grid, (BLOCK,), (fptr, fidx, kept, qq, end, indptr))
    indptr = xp.cumsum(indptr)
    indices = xp.empty(int(indptr[-1]), dtype=fidx.dtype)
    fill(grid, (BLOCK,), (fptr, fidx, kept, qq, end, at, indptr, indices))
    return Contraction(xp, n, kept, indptr, indices, pv, u, w, on_cycle, low)
