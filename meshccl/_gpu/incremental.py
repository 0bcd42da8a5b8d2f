"""Incremental connectivity on the GPU: the CuPy side of
:class:`meshccl.graph.IncrementalConnectivity` (``_kernels/incremental.cu``).

The structure lives on one device between batches: ``P`` (parents, type I:
int32 below 2**31 vertices, int64 beyond), ``H`` (Union-Hooks' claims, for
that rule only) and, when the spanning forest is kept, ``FS`` / ``FD``
(the edge whose union hooked root h, in slot h).  A batch is one launch of
``meshccl_incr_batch`` (Rem's rule: two, inserts then queries); nothing is
read back.  :meth:`State.labels` numbers a copy of the forest with the
graph path's numbering (:func:`.number_roots.relabel`; JTB's forest first
pointed at each set's smallest vertex by graph.cu's ``jtb`` kernels), so
the forest itself is never flattened or changed by a read.

The arrays have a capacity beyond the vertex count whose slots already
hold their initial values (``P[v] = v``, ``H[v] = -1``), so growth within
it changes the count alone; beyond it they are copied into arrays twice as
large (and widened to int64 past 2**31 - 1 vertices).  The caller makes
the structure's device current.
"""

from __future__ import annotations

import numpy as np

from .. import _tuning
from ..graph._methods import COMPRESS_CODE, RULES
from .graph import _dummy, _grid
from .loader import c_type, kernels
from .number_roots import NULL, relabel

BLOCK = 256


class State:
    """The GPU structure: ``n`` vertices, union rule ``method`` with
    ``compression``, a spanning forest when ``forest``."""

    backend = "gpu"

    def __init__(self, n: int, method: str, compression: str, forest: bool, index_dtype=None):
        import cupy

        self.device = cupy.cuda.Device().id
        # index_dtype: the parent type from the start (tests run the int64
        # kernels on small graphs with it); None: int32 below 2**31 vertices
        self.index_dtype = None if index_dtype is None else np.dtype(index_dtype)
        self.method = method
        self.rule = RULES[method]
        self.comp = COMPRESS_CODE[compression]
        self.forest = forest
        self.n = 0
        self.I = self._index_type(0)
        self.P = cupy.empty(0, dtype=self.I)
        self.H = self.FS = self.FD = None
        self.grow(n)

    def _index_type(self, n: int):
        if self.index_dtype is not None and n < 2**31:
            return self.index_dtype
        return np.dtype(np.int32 if n < 2**31 else np.int64)

    def grow(self, n: int):
        """Vertices n_old .. n - 1 added, each its own set."""
        import cupy

        if n <= self.n:
            return
        I = self._index_type(n)
        if n > self.P.size or I != self.I:
            cap = max(n, 2 * self.P.size)
            if I == np.int32 and cap >= 2**31:
                cap = 2**31 - 1  # the last int32 capacity; beyond, int64 arrays
            old = self.n
            P = cupy.arange(cap, dtype=I)
            P[:old] = self.P[:old]
            self.P = P
            if self.rule == RULES["hooks"]:
                H = cupy.full(cap, -1, dtype=I)
                if old:
                    H[:old] = self.H[:old]
                self.H = H
            if self.forest:
                FS, FD = cupy.empty(cap, dtype=I), cupy.empty(cap, dtype=I)
                if old:
                    FS[:old], FD[:old] = self.FS[:old], self.FD[:old]
                self.FS, self.FD = FS, FD
            self.I = I
        self.n = n

    def index_types(self, *arrays):
        """``arrays`` (validated CuPy integer arrays) as the kernel reads
        them: int32 or int64 kept when wide enough for I, else cast to I."""
        kinds = {np.dtype(a.dtype) for a in arrays}
        J = next(iter(kinds)) if len(kinds) == 1 else None
        if J not in (np.dtype(np.int32), np.dtype(np.int64)) or J.itemsize < self.I.itemsize:
            J = self.I
        return tuple(a.astype(J, copy=False) for a in arrays)

    def batch(self, kinds, src, dst, mask, answer):
        """One batch: ``kinds`` a uint8 CuPy array (0 insert, 1 query) or
        None (every operation of the kind ``mask`` names: 1 inserts, 2
        queries, 3 both), ``src`` / ``dst`` CuPy integer arrays of one
        length.  Returns the answers (bool, one per operation) when
        ``answer``, else None.  No host synchronisation."""
        import cupy

        m = src.size
        out = cupy.empty(m, dtype=cupy.bool_) if answer else None
        if m == 0:
            return out
        src, dst = self.index_types(src, dst)
        ti, tj = c_type(self.I), c_type(src.dtype)
        (kern,) = kernels("incremental.cu",
                          f"meshccl_incr_batch<{ti}, {tj}, {self.rule}, {self.comp}>")
        dummy = _dummy(self.device, self.I.name)
        tail = (self.P, dummy if self.H is None else self.H, self.I.type(self.n),
                NULL if self.FS is None else self.FS, NULL if self.FD is None else self.FD,
                NULL if out is None else out)
        grid = _grid(m, BLOCK, _tuning.GRAPH_INCR_BLOCKS_PER_SM)
        k = NULL if kinds is None else kinds
        # Rem's rule splices subtrees before its union completes: its queries
        # run after its inserts (incremental.cu's essay)
        passes = (1, 2) if mask == 3 and self.rule == RULES["rem-cas"] else (mask,)
        for mk in passes:
            kern(grid, (BLOCK,), (k, src, dst, np.int64(m), np.int32(mk)) + tail)
        return out

    def count(self) -> int:
        """The number of sets (one reduction and one read)."""
        import cupy

        n = self.n
        return int(cupy.count_nonzero(self.P[:n] == cupy.arange(n, dtype=self.I)))

    def labels(self):
        """SciPy's numbering of the sets: (count, labels), labels a CuPy
        array of type I (the forest itself is left as it is)."""
        import cupy

        n = self.n
        P = self.P[:n].copy()
        if n == 0:
            return 0, P
        if self.rule == RULES["jtb"]:  # roots are random members: smallest first
            ti = c_type(self.I)
            roots, low, assign = kernels("graph.cu", *(f"meshccl_graph_jtb_{k}<{ti}>"
                                                       for k in ("roots", "min", "assign")))
            R = cupy.empty(n, dtype=self.I)
            for k in (roots, low, assign):
                k(_grid(n, BLOCK, 32), (BLOCK,), (P, R, self.I.type(n)))
        count = relabel(P, n, base=-1)
        return int(count), P

    def forest_edges(self):
        """(src, dst) int64 CuPy arrays of the edges that joined two sets,
        by hooked vertex."""
        import cupy

        n = self.n
        if n == 0:  # (no arrays yet)
            return cupy.empty(0, dtype=cupy.int64), cupy.empty(0, dtype=cupy.int64)
        hooked = cupy.flatnonzero(self.P[:n] != cupy.arange(n, dtype=self.I))
        return self.FS[hooked].astype(cupy.int64), self.FD[hooked].astype(cupy.int64)
