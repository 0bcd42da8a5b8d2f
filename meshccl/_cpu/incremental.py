"""Incremental connectivity on the CPU: the numba side of
:class:`meshccl.graph.IncrementalConnectivity`.

The structure is the union-find forest of the graph methods
(:func:`meshccl._cpu.graph._unite_rule`, the serial twin of
``unite_by()`` in ``kernels/unionfind.cuh``), kept between batches: ``P``
(parents, int64) and, when the spanning forest is kept, ``FS`` / ``FD``:
the edge whose union hooked root h is stored in slot h (each element is
hooked at most once), so the non-roots name the forest's edges.  A batch
runs serially in its own order: every query sees exactly the inserts
before it in the batch -- one of the orders the GPU's answers agree with
(docs/graph.md: "Incremental connectivity").

The arrays have a capacity beyond the vertex count whose slots already
hold their initial values (``P[v] = v``), so growth within it changes the
count alone; beyond it they are copied into arrays twice as large.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..graph._methods import COMPRESS_CODE, RULES
from .graph import _finish, _find_c, _jtb_smallest, _unite_rule


@njit(cache=True)
def _batch(P, n, kinds, only, src, dst, rule, comp, qcomp, FS, FD, out):
    """Run one batch in order; returns the number of inserts that joined
    two sets.  ``kinds`` (uint8, 0 insert, 1 query) or, when empty, every
    operation is of kind ``only``; ``FS`` / ``FD`` empty: no forest kept;
    ``out`` empty: no answers wanted.  Vertices outside [0, n) are skipped
    (an insert does nothing, a query answers False)."""
    joined = 0
    record = FS.shape[0] > 0
    answer = out.shape[0] > 0
    for e in range(src.shape[0]):
        kind = kinds[e] if kinds.shape[0] else only
        x, y = src[e], dst[e]
        valid = 0 <= x < n and 0 <= y < n
        if kind != 0:
            out[e] = valid and (x == y or _find_c(P, x, qcomp) == _find_c(P, y, qcomp))
            continue
        if answer:
            out[e] = False
        if not valid or x == y:
            continue
        h = _unite_rule(P, x, y, rule, comp)
        if h >= 0:
            joined += 1
            if record:
                FS[h] = x
                FD[h] = y
    return joined


class State:
    """The CPU structure: ``n`` vertices, union rule ``method`` with
    ``compression``, a spanning forest when ``forest``."""

    backend = "cpu"

    def __init__(self, n: int, method: str, compression: str, forest: bool):
        self.rule = RULES[method]
        self.comp = COMPRESS_CODE[compression]
        # queries find with the union's compression; Rem's splicing is a
        # rule of its walk, so its queries halve
        self.qcomp = 1 if compression == "splicing" else self.comp
        self.forest = forest
        self.n = 0
        self.components = 0
        self.P = np.empty(0, np.int64)
        self.FS = self.FD = np.empty(0, np.int64)
        self.grow(n)

    def grow(self, n: int):
        """Vertices n_old .. n - 1 added, each its own set."""
        if n <= self.n:
            return
        if n > self.P.size:
            cap = max(n, 2 * self.P.size)
            P = np.arange(cap, dtype=np.int64)
            P[:self.n] = self.P[:self.n]
            self.P = P
            if self.forest:
                FS, FD = np.empty(cap, np.int64), np.empty(cap, np.int64)
                FS[:self.n], FD[:self.n] = self.FS[:self.n], self.FD[:self.n]
                self.FS, self.FD = FS, FD
        self.components += n - self.n
        self.n = n

    def batch(self, kinds, src, dst, mask, answer):
        """One batch (int64 src / dst, uint8 kinds or None); the answers
        (bool, one per operation) when ``answer``, else None."""
        out = np.empty(src.size if answer else 0, dtype=bool)
        none = np.empty(0, np.int64)
        self.components -= _batch(self.P, np.int64(self.n),
                                  np.empty(0, np.uint8) if kinds is None else kinds,
                                  np.uint8(1 if mask == 2 else 0), src, dst, self.rule, self.comp,
                                  self.qcomp, self.FS if self.forest else none,
                                  self.FD if self.forest else none, out)
        return out if answer else None

    def count(self) -> int:
        return self.components

    def labels(self):
        """SciPy's numbering of the sets: (count, labels)."""
        P = self.P[:self.n].copy()
        if self.rule == 4:  # JTB: roots are random members
            _jtb_smallest(P)
        return _finish(P, np.int64 if self.n >= 2**31 else np.int32)

    def forest_edges(self):
        """(src, dst) int64 of the edges that joined two sets, by hooked vertex."""
        hooked = np.flatnonzero(self.P[:self.n] != np.arange(self.n))
        return self.FS[hooked].copy(), self.FD[hooked].copy()
