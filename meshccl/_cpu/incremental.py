"""Incremental connectivity on the CPU: the compiled core's side of
:class:`meshccl.graph.IncrementalConnectivity`.

The structure is the union-find forest of the graph methods (GConn's union
rules, ``unite_rule`` in ``meshccl/_cpu/core/graph.hpp``, the serial twin of
``unite_by()`` in ``kernels/unionfind.cuh``), kept between batches: ``P``
(parents, int64) and, when the spanning forest is kept, ``FS`` / ``FD``:
the edge whose union hooked root h is stored in slot h (each element is
hooked at most once), so the non-roots name the forest's edges.  A batch
runs serially in its own order (``batch`` in graph.hpp): every query sees
exactly the inserts before it in the batch -- one of the orders the GPU's
answers agree with (docs/graph.md: "Incremental connectivity").

The arrays have a capacity beyond the vertex count whose slots already
hold their initial values (``P[v] = v``), so growth within it changes the
count alone; beyond it they are copied into arrays twice as large.
"""

from __future__ import annotations

import numpy as np

from ..graph._methods import COMPRESS_CODE, RULES
from .image import _core


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
        out = np.empty(src.size, dtype=bool) if answer else None
        forest = self.forest
        self.components -= _core.incremental_batch(
            self.P, self.n, kinds, 1 if mask == 2 else 0, src, dst, self.rule, self.comp,
            self.qcomp, self.FS if forest else None, self.FD if forest else None, out)
        return out

    def count(self) -> int:
        return self.components

    def labels(self):
        """SciPy's numbering of the sets: (count, labels)."""
        P = self.P[:self.n].copy()
        count = _core.number_forest(P, self.rule == 4)  # (JTB's roots are random members)
        return int(count), P.astype(np.int64 if self.n >= 2**31 else np.int32, copy=False)

    def forest_edges(self):
        """(src, dst) int64 of the edges that joined two sets, by hooked vertex."""
        hooked = np.flatnonzero(self.P[:self.n] != np.arange(self.n))
        return self.FS[hooked].copy(), self.FD[hooked].copy()
