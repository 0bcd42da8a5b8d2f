"""Incremental connectivity: :class:`IncrementalConnectivity` (the API, its
checks and messages).

Batches of edge inserts and connectivity queries on a union-find forest
kept between batches (Hong, Dhulipala and Shun, GConn, section 3.6).  The
backends are :mod:`meshccl._cpu.incremental` (the compiled core, serial) and
:mod:`meshccl._gpu.incremental` (CuPy, ``_kernels/incremental.cu``); both
run the union rules of :mod:`._methods` through the one union-find of each
side.  ``docs/graph.md`` ("Incremental connectivity") explains the
semantics of mixed batches, the guarantees and the cost of each call.
"""

from __future__ import annotations

import numpy as np

from . import _dispatch, _input, _methods
from ._input import Edges, is_cupy

#: the ``method=`` values :class:`IncrementalConnectivity` takes: the
#: union-find rules, which need no edge but the one at hand
INCREMENTAL_METHODS = tuple(_methods.RULES)
_DEVICES = (None, "cpu", "gpu")


def _count(value, name):
    """``value`` as a non-negative Python int, else a ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return int(value)


def _first_bad(a, name, n, grow):
    """The ValueError for the first value of ``a`` outside the vertex range
    (only on the error path: reads ``a`` again)."""
    lo = int(a.min()) if a.size else 0
    bad = lo if lo < 0 else int(a.max())
    pos = int((a == a.dtype.type(bad)).nonzero()[0][0])
    if grow:
        return ValueError(f"{name} must hold vertex numbers >= 0, got {bad} at position {pos}")
    return ValueError(f"{name} must lie in [0, n_vertices) = [0, {n}), got {bad} at position {pos} "
                      "(the structure was made with grow=False; add_vertices() adds vertices)")


class IncrementalConnectivity:
    """Connected components of a graph that grows by batches of edges.

    A union-find forest kept between batches, on the CPU (compiled) or on a
    GPU (CuPy).  :meth:`insert` adds a batch of edges, :meth:`connected`
    answers a batch of queries, :meth:`process` runs a mixed batch;
    :meth:`labels` and :attr:`n_components` give the components as
    :func:`connected_components` would for every edge inserted so far, and
    :meth:`forest_edges` the spanning forest kept as the edges arrived.
    Earlier batches are never read again: the forest holds all they said
    (GConn, Hong, Dhulipala and Shun 2020, section 3.6).

    Parameters
    ----------
    n_vertices : int
        Vertices at the start, 0 .. n_vertices - 1, each its own component.
    method : str, optional
        The union rule: 'unionfind' (default; alias 'async': GConn's
        Union-Async, hook the larger root under the smaller by CAS),
        'rem-cas', 'early', 'hooks' or 'jtb' -- the union-find methods of
        :func:`connected_components` (:data:`INCREMENTAL_METHODS`).  The
        others need the whole graph at once (sampling, ECL-CC's first
        neighbours, iterations to a fixed point) and are refused.  All give
        the same components.
    compression : str, optional
        The method's path compression, as :data:`COMPRESSION` lists it (its
        default first); default None: the method's default.
    device : {None, 'cpu', 'gpu'}, optional
        Where the structure lives.  None (default): where the first input
        is -- the graph of :meth:`from_graph` or the first batch (NumPy:
        the CPU, CuPy: that array's GPU); a read before any input commits
        to the CPU.  'gpu': the current CuPy device.  Inputs from the other
        side are copied over; results are always on the structure's side.
    grow : bool, optional
        True (default): a batch naming a vertex >= n_vertices first adds
        vertices up to it, each its own component.  False: such a vertex
        is an error (:meth:`add_vertices` still adds vertices).
    forest : bool, optional
        Keep the spanning forest: two more arrays of n_vertices entries.
        Default (None): kept for every rule but Rem's with splicing
        (``method='rem-cas'``, ``compression='splicing'``, its default),
        whose splices move subtrees between sets before their union
        completes, so that on the GPU its hooks do not name a spanning
        forest (``forest=True`` with it is a ``ValueError``; take
        ``compression='splitting'`` or ``'halving'`` for a forest).

    Attributes
    ----------
    INSERT, QUERY : int
        The operation codes of :meth:`process` (0 and 1).

    Notes
    -----
    Semantics of a batch.  :meth:`insert` and :meth:`connected` are
    deterministic: a query batch answers for every edge inserted before the
    call.  In a mixed batch (:meth:`process`) the answers agree with *one*
    order of the batch's operations, all earlier batches applied first
    (GConn's guarantee for root-based unions): a query answers True if its
    ends were connected before the batch, False if they are apart after it,
    and in between as that order says.  The CPU runs the batch in its own
    order (each query sees exactly the inserts before it); the GPU runs the
    operations at once (``'rem-cas'``: its inserts, then its queries), so
    its order depends on thread timing.  For answers that see every insert
    of the batch on both backends, call :meth:`insert` then
    :meth:`connected`.

    Labels and component counts are the same on both backends and for
    every method; the forests are spanning forests of the same components,
    but which edge of a cycle is kept depends on the order of the unions
    (on the GPU, on thread timing), so the edge sets may differ.

    On the GPU a call with ``check=True`` (the default) waits for the
    device once, to read the range of the batch's vertices; with
    ``check=False`` nothing waits (:meth:`insert` and :meth:`process` are
    one kernel launch).  :attr:`n_components`, :meth:`labels` and
    :meth:`forest_edges` read from the device.

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.graph import IncrementalConnectivity
    >>> cc = IncrementalConnectivity(6)
    >>> cc.insert(np.array([0, 3]), np.array([1, 4]))
    >>> cc.connected(np.array([0, 0]), np.array([1, 3]))
    array([ True, False])
    >>> cc.insert(np.array([1]), np.array([3]))
    >>> cc.n_components, cc.labels()
    (3, array([0, 0, 1, 0, 0, 2], dtype=int32))
    >>> f = cc.forest_edges()
    >>> sorted(zip(f.src.tolist(), f.dst.tolist()))
    [(0, 1), (1, 3), (3, 4)]

    A mixed batch, vertices added on the way (operations: kind, src, dst):

    >>> Q, I = cc.QUERY, cc.INSERT
    >>> cc.process((np.array([Q, I, Q]), np.array([5, 5, 7]), np.array([0, 2, 7])))
    array([False, False,  True])
    >>> cc.n_vertices, cc.n_components
    (8, 4)

    On a GPU the same calls take CuPy arrays and answer with CuPy arrays::

        cc = IncrementalConnectivity(10**8, device="gpu")
        cc.insert(cupy_src, cupy_dst)            # one launch, one 56-byte read
        cc.insert(cupy_src, cupy_dst, check=False)  # one launch, no wait
    """

    INSERT = 0
    QUERY = 1

    def __init__(self, n_vertices, *, method="unionfind", compression=None, device=None,
                 grow=True, forest=None):
        n = _count(n_vertices, "n_vertices")
        if n > _input.MAX_VERTICES:
            raise ValueError(f"n_vertices must be at most 2**63 - 1, got {n_vertices!r}")
        if not isinstance(method, str) or method not in _methods.RULES:
            raise ValueError(f"method must be one of {INCREMENTAL_METHODS} (the union-find "
                             f"methods; the others need the whole graph at once), got {method!r}")
        self._method = _methods.canonical(method)
        self._compression = _methods.check_compression(method, compression)
        if device not in _DEVICES:
            raise ValueError(f"device must be None, 'cpu' or 'gpu', got {device!r}")
        spliced = self._method == "rem-cas" and self._compression == "splicing"
        if forest is None:
            forest = not spliced
        for name, flag in (("grow", grow), ("forest", forest)):
            if not isinstance(flag, (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, got {flag!r}")
        if forest and spliced:
            raise ValueError(
                "forest=True cannot be kept with method='rem-cas', compression='splicing': "
                "Rem's splices move subtrees between sets before their union completes, so "
                "its hooks do not name a spanning forest; take compression='splitting' or "
                "'halving', or forest=False")
        self._grow, self._forest = bool(grow), bool(forest)
        self._n0 = n
        self._state = None
        if device is not None:
            self._commit(device, None)

    # ------------------------------------------------------------ set-up

    @classmethod
    def from_graph(cls, csgraph, *, method="unionfind", compression=None, device=None, grow=True,
                   forest=None):
        """A structure holding the edges of a graph, as one batch of inserts.

        Parameters
        ----------
        csgraph : any input of :func:`connected_components`
            SciPy or CuPy sparse matrices, dense adjacency matrices,
            ``(indptr, indices)`` CSR tuples, :class:`Edges`; every stored
            entry (v, u) is inserted as the edge (v, u).
        method, compression, device, grow, forest
            As for the constructor; ``device=None`` follows the graph.

        Returns
        -------
        IncrementalConnectivity

        Examples
        --------
        >>> import numpy as np, scipy.sparse as sp
        >>> from meshccl.graph import IncrementalConnectivity
        >>> g = sp.csr_matrix(([1, 1], ([0, 2], [1, 3])), shape=(5, 5))
        >>> cc = IncrementalConnectivity.from_graph(g)
        >>> cc.n_components, cc.labels().tolist()
        (3, [0, 0, 1, 1, 2])
        """
        with _dispatch.on_device(csgraph):
            kind, arrays, n = _input.as_graph(csgraph)
            if kind == "edges":
                src, dst = arrays
            else:
                indptr, dst = arrays
                xp = _input._xp_of(("indptr", indptr))
                m = dst.size
                src = xp.searchsorted(indptr[1:], xp.arange(m, dtype=indptr.dtype), side="right")
                if kind == "csc":  # the stored entry (row dst, column src): as the input stores it
                    src, dst = dst, src
            obj = cls(n, method=method, compression=compression, device=device, grow=grow,
                      forest=forest)
            obj._commit_for(src)
            obj._run(None, src, dst, 1, False, check=False)
        return obj

    def _commit(self, device, array):
        """Create the backend: on the CPU, or on a GPU (``array``'s, else the current one)."""
        if device == "cpu":
            from .._cpu.incremental import State
            self._state = State(self._n0, self._method, self._compression, self._forest)
            return
        import cupy

        dev = array.device.id if array is not None and is_cupy(array) else cupy.cuda.Device().id
        with cupy.cuda.Device(dev):
            from .._gpu.incremental import State
            self._state = State(self._n0, self._method, self._compression, self._forest)

    def _commit_for(self, array):
        if self._state is None:
            self._commit("gpu" if is_cupy(array) else "cpu", array)

    def _backend(self):
        """The state, committed to the CPU if nothing decided yet."""
        if self._state is None:
            self._commit("cpu", None)
        return self._state

    def _on(self):
        """A context on the structure's device (nothing on the CPU)."""
        import contextlib

        if self._backend().backend == "cpu":
            return contextlib.nullcontext()
        import cupy

        return cupy.cuda.Device(self._state.device)

    @property
    def device(self):
        """'cpu' or 'gpu' (None while no input has decided)."""
        return None if self._state is None else self._state.backend

    @property
    def method(self) -> str:
        """The union rule (its canonical name: 'async' reads 'unionfind')."""
        return self._method

    @property
    def compression(self) -> str:
        """The union rule's path compression."""
        return self._compression

    @property
    def keeps_forest(self) -> bool:
        """Whether :meth:`forest_edges` is kept (see ``forest``)."""
        return self._forest

    @property
    def n_vertices(self) -> int:
        """Vertices, 0 .. n_vertices - 1."""
        return self._n0 if self._state is None else self._state.n

    @property
    def n_components(self) -> int:
        """Components of the graph of every edge inserted so far (on the
        GPU: one reduction and one read)."""
        with self._on():
            return self._state.count()

    def add_vertices(self, k) -> int:
        """Add ``k`` vertices, each its own component.

        Parameters
        ----------
        k : int
            How many (>= 0).

        Returns
        -------
        int
            The number of the first new vertex (the old ``n_vertices``).

        Examples
        --------
        >>> from meshccl.graph import IncrementalConnectivity
        >>> cc = IncrementalConnectivity(3)
        >>> cc.add_vertices(2), cc.n_vertices, cc.n_components
        (3, 5, 5)
        """
        k = _count(k, "k")
        first = self.n_vertices
        if first + k > _input.MAX_VERTICES:
            raise ValueError(f"k must keep n_vertices at most 2**63 - 1, got {k} with "
                             f"{first} vertices already")
        if self._state is None:
            self._n0 += k
        else:
            with self._on():
                self._state.grow(first + k)
        return first

    # ------------------------------------------------------------ batches

    def insert(self, src, dst, *, check=True):
        """Insert the edges (src[k], dst[k]).

        Parameters
        ----------
        src, dst : 1-D arrays of int, NumPy or CuPy
            The endpoints, of equal length, any integer dtype.  An edge is
            undirected (its direction is kept only in :meth:`forest_edges`).
        check : bool, optional
            True (default): validate the vertices (and grow the structure
            to a vertex >= n_vertices when ``grow`` is on); on the GPU one
            wait for the device.  False: the caller promises every vertex
            lies in [0, n_vertices); no wait, no growth; an edge with a
            vertex outside is skipped (never read or written out of
            bounds) and not reported.

        Raises
        ------
        TypeError
            Non-integer arrays, or a mix of NumPy and CuPy.
        ValueError
            Arrays not 1-D or of different lengths; a negative vertex (or,
            with ``grow=False``, one >= n_vertices), named with its value
            and position.

        Examples
        --------
        >>> import numpy as np
        >>> from meshccl.graph import IncrementalConnectivity
        >>> cc = IncrementalConnectivity(4)
        >>> cc.insert(np.array([0, 2]), np.array([1, 5]))   # grows to 6 vertices
        >>> cc.n_vertices, cc.labels().tolist()
        (6, [0, 0, 1, 2, 3, 1])
        """
        self._run(None, *self._pair(src, dst, "src", "dst"), 1, False, check)

    def connected(self, u, v, *, check=True):
        """Whether u[k] and v[k] are in one component, for every k.

        Answers for every edge inserted before the call (a vertex is
        connected to itself).

        Parameters
        ----------
        u, v : 1-D arrays of int, NumPy or CuPy
            The pairs asked about, of equal length, any integer dtype.
        check : bool, optional
            As for :meth:`insert` (queries follow its ``grow`` rule too: a
            new vertex is connected only to itself).

        Returns
        -------
        ndarray of bool
            On the structure's side (CuPy on the GPU, without a wait when
            ``check=False``).

        Raises
        ------
        TypeError, ValueError
            As for :meth:`insert`, naming ``u`` or ``v``.

        Examples
        --------
        >>> import numpy as np
        >>> from meshccl.graph import IncrementalConnectivity
        >>> cc = IncrementalConnectivity(4)
        >>> cc.insert(np.array([0]), np.array([2]))
        >>> cc.connected(np.array([2, 1, 3]), np.array([0, 2, 3]))
        array([ True, False,  True])
        """
        return self._run(None, *self._pair(u, v, "u", "v"), 2, True, check)

    def process(self, ops, *, check=True):
        """Run a mixed batch of inserts and queries.

        Parameters
        ----------
        ops : (kinds, src, dst)
            Three 1-D arrays of one length (or a (3, m) array): ``kinds[k]``
            is :attr:`INSERT` (0, or False) or :attr:`QUERY` (1, or True),
            bool or integer; ``src[k]``, ``dst[k]`` the edge or the query's
            two vertices.
        check : bool, optional
            As for :meth:`insert`; also checks that the kinds are 0 or 1.

        Returns
        -------
        ndarray of bool
            One entry per operation: a query's answer; False for an insert.
            The answers agree with one order of the batch's operations
            (class Notes): on the CPU the batch's own order, on the GPU an
            order set by thread timing.

        Raises
        ------
        TypeError, ValueError
            As for :meth:`insert`; ``ops`` not three arrays; kinds other
            than 0 and 1 (named with value and position).

        Examples
        --------
        >>> import numpy as np
        >>> from meshccl.graph import IncrementalConnectivity
        >>> cc = IncrementalConnectivity(3)
        >>> kinds = np.array([1, 0, 1])          # query, insert, query
        >>> cc.process((kinds, np.array([0, 0, 0]), np.array([1, 1, 1])))
        array([False, False,  True])
        """
        try:
            parts = len(ops)
        except TypeError:
            parts = None
        if parts != 3:
            shape = getattr(ops, "shape", None)
            got = type(ops).__name__ if shape is None else f"shape {tuple(shape)}"
            if shape is not None and len(shape) == 2 and shape[1] == 3:
                got += " (an (m, 3) array: pass ops.T)"
            raise ValueError("ops must be (kinds, src, dst): three 1-D arrays or a (3, m) array, "
                             f"got {got}")
        kinds, src, dst = ops[0], ops[1], ops[2]
        src, dst = self._pair(src, dst, "src", "dst")
        xp = _input._xp_of(("kinds", kinds), ("src", src))
        kinds = xp.ascontiguousarray(xp.asarray(kinds))  # (a row of ops.T is strided)
        if kinds.ndim != 1:
            raise ValueError(f"kinds must be 1-D, got shape {kinds.shape}")
        if kinds.dtype.kind not in "biu":
            raise TypeError("kinds must hold bool or integers (0 insert, 1 query), "
                            f"got dtype {kinds.dtype}")
        if kinds.size != src.size:
            raise ValueError(f"kinds, src and dst must have the same length, got {kinds.size}, "
                             f"{src.size} and {dst.size}")
        return self._run(kinds, src, dst, 3, True, check)

    # ------------------------------------------------------------ reads

    def labels(self):
        """The component of every vertex, SciPy's numbering.

        Returns
        -------
        ndarray of int32 (int64 beyond 2**31 - 1 vertices)
            0 .. n_components - 1 in order of each component's smallest
            vertex, as :func:`connected_components` numbers the graph of
            every edge inserted so far; on the structure's side.  The
            structure is not changed.

        Examples
        --------
        >>> import numpy as np
        >>> from meshccl.graph import IncrementalConnectivity
        >>> cc = IncrementalConnectivity(4, method="jtb")
        >>> cc.insert(np.array([3]), np.array([1]))
        >>> cc.labels()
        array([0, 1, 2, 1], dtype=int32)
        """
        with self._on():
            return self._state.labels()[1]

    def forest_edges(self):
        """A spanning forest of the graph of every edge inserted so far.

        The edges whose insert joined two components, as inserted (src,
        dst), ordered by the vertex each one hooked: ``n_vertices -
        n_components`` edges, no cycle, the graph's components.  Which edge
        of a cycle is kept depends on the order of the unions (on the GPU,
        on thread timing).

        Returns
        -------
        Edges
            int64 arrays on the structure's side, ``n_vertices``.

        Raises
        ------
        ValueError
            The structure was made with ``forest=False``.

        Examples
        --------
        >>> import numpy as np
        >>> from meshccl.graph import IncrementalConnectivity
        >>> cc = IncrementalConnectivity(4)
        >>> cc.insert(np.array([0, 1, 2]), np.array([1, 2, 0]))
        >>> f = cc.forest_edges()
        >>> f.src.tolist(), f.dst.tolist(), f.n_vertices
        ([0, 1], [1, 2], 4)
        """
        if not self._forest:
            raise ValueError("this structure keeps no spanning forest (made with forest=False)")
        with self._on():
            src, dst = self._state.forest_edges()
        return Edges(src, dst, self.n_vertices)

    def __repr__(self):
        return (f"IncrementalConnectivity(n_vertices={self.n_vertices}, method={self._method!r}, "
                f"compression={self._compression!r}, device={self.device!r})")

    # ------------------------------------------------------------ internals

    @staticmethod
    def _pair(a, b, na, nb):
        """Two endpoint arrays checked for form (1-D, integer, one side,
        one length), without reading their values."""
        xp = _input._xp_of((na, a), (nb, b))
        a = _input._int_array(a, na, xp)
        b = _input._int_array(b, nb, xp)
        if a.size != b.size:
            raise ValueError(f"{na} and {nb} must have the same length, got {a.size} and {b.size}")
        return a, b

    def _to_side(self, *arrays):
        """``arrays`` moved to the structure's side (a copy where they are
        on the other side); CuPy arrays must be on the structure's GPU."""
        state = self._state
        if state.backend == "cpu":
            return tuple(a.get() if is_cupy(a) else a for a in arrays)
        import cupy

        out = []
        for a in arrays:
            if is_cupy(a) and a.device.id != state.device:
                raise ValueError(f"the structure lives on GPU {state.device}, got an array on "
                                 f"GPU {a.device.id}")
            out.append(cupy.asarray(a))
        return tuple(out)

    def _run(self, kinds, src, dst, mask, answer, check):
        """Validate (``check``), grow, then run the batch on the backend."""
        if not isinstance(check, (bool, np.bool_)):
            raise ValueError(f"check must be True or False, got {check!r}")
        self._commit_for(src)
        with self._on():
            arrays = self._to_side(*((src, dst) if kinds is None else (kinds, src, dst)))
            if kinds is not None:
                kinds, src, dst = arrays
            else:
                src, dst = arrays
            names = ("src", "dst") if mask != 2 else ("u", "v")
            if check:
                self._validate(kinds, src, dst, names)
            if kinds is not None:
                kinds = kinds.view(np.uint8) if kinds.dtype == bool else kinds.astype(np.uint8)
            state = self._state
            if state.backend == "cpu":
                src = src.astype(np.int64, copy=False)
                dst = dst.astype(np.int64, copy=False)
            return state.batch(kinds, src, dst, mask, answer)

    def _validate(self, kinds, src, dst, names):
        """Range checks with one read of the device; growth."""
        state = self._state
        n = state.n
        if src.size == 0:
            return
        if state.backend == "gpu":
            import cupy

            from .._gpu import graph as gpu

            s, d = (x if gpu.supported(x) else x.astype(cupy.int64) for x in (src, dst))
            facts = gpu.check(None, s, d)
            if kinds is not None and kinds.dtype != bool and kinds.size:
                facts = cupy.concatenate([facts, cupy.stack([kinds.min(), kinds.max()])
                                          .astype(cupy.int64)])
            facts = [int(x) for x in facts.get()]
            lo, hi = facts[3], facts[4]
            klo, khi = (facts[7], facts[8]) if len(facts) > 7 else (0, 1)
        else:
            lo = min(int(src.min()), int(dst.min())) if src.size else 0
            hi = max(int(src.max()), int(dst.max())) if src.size else -1
            klo, khi = ((int(kinds.min()), int(kinds.max())) if kinds is not None
                        and kinds.dtype != bool and kinds.size else (0, 1))
        if klo < 0 or khi > 1:  # (values beyond int64 were clamped: read the exact one)
            pos = int(((kinds != 0) & (kinds != 1)).nonzero()[0][0])
            raise ValueError(f"kinds must be 0 (insert) or 1 (query), got {int(kinds[pos])} "
                             f"at position {pos}")
        if src.size and (lo < 0 or (hi >= n and not self._grow)):
            for name, a in zip(names, (src, dst)):
                if a.size and (int(a.min()) < 0 or (int(a.max()) >= n and not self._grow)):
                    raise _first_bad(a, name, n, self._grow)
        if src.size and hi >= n:
            _input.check_vertex_ids(hi, *zip(names, (src, dst)))
            state.grow(hi + 1)
