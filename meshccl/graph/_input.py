"""Validation of graph input: every accepted form becomes checked index arrays.

:func:`as_graph` turns any input of :func:`meshccl.graph.connected_components`
into ``(kind, arrays, n)``: kind "csr" (``(indptr, indices)``), "csc" (the
CSR arrays of the transpose graph) or "edges" (``(src, dst)``), integer
arrays on the input's side -- NumPy (int64, for the CPU backend) or CuPy
(their own integer type).  Everything is checked, so a bad index is an
error here, never a fault in a kernel.

CuPy arrays of int32 / int64 / uint32 / uint64 are checked on the device by
one fused pass (:func:`meshccl._gpu.graph.check`) whose facts come back in
one transfer; other types by CuPy reductions.  Only the error path reads the
arrays again, for its exact message.  For a CSR going to a method of
:data:`._methods.DEFERRED_CHECK_METHODS` the check can be left to the GPU
dispatch, which runs it beside the method (see :func:`csr`'s ``defer``).

Dense adjacency matrices follow SciPy's reading of them: an entry is an edge
unless it is zero, infinite or NaN, where floating-point zero means
``numpy.isclose(a, 0)`` (|a| <= 1e-8, as ``numpy.ma.masked_values``, which
SciPy uses) and a complex entry is infinite or NaN when either part is.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _scipy


class Edges(NamedTuple):
    """An edge list: edge k joins ``src[k]`` and ``dst[k]``.

    Accepted wherever a graph is (:func:`connected_components`,
    :func:`spanning_forest`); NumPy arrays run on the CPU, CuPy arrays on
    their GPU.

    Attributes
    ----------
    src, dst : array of int
        The endpoints, of equal length, any integer dtype.
    n_vertices : int, optional
        Number of vertices; defaults to ``max(src, dst) + 1`` (0 for no
        edges).

    Examples
    --------
    >>> import numpy as np
    >>> from meshccl.graph import Edges, connected_components
    >>> connected_components(Edges(np.array([0, 2]), np.array([1, 3]), 6))
    (4, array([0, 0, 1, 1, 2, 3], dtype=int32))
    """

    src: object
    dst: object
    n_vertices: int | None = None


def is_cupy(a) -> bool:
    """Whether ``a`` is a CuPy object (by its type's module; CuPy not imported)."""
    return type(a).__module__.split(".")[0] in ("cupy", "cupyx")


def first_array(g):
    """The first array of an input before validation (None if it has none)."""
    if isinstance(g, Edges):
        return g.src
    if isinstance(g, tuple):
        return g[0] if g else None
    if getattr(g, "format", None) is not None and hasattr(g, "nnz"):  # sparse
        for name in ("indptr", "row", "data"):
            if hasattr(g, name):
                return getattr(g, name)
    return g


def _xp_of(*named):
    """numpy or cupy for the arrays ``named`` ((name, array) pairs), which
    must all live on the same side."""
    on_gpu = [is_cupy(a) for _, a in named]
    if any(on_gpu) and not all(on_gpu):
        names = " and ".join(name for name, _ in named)
        raise TypeError(f"{names} must be all NumPy or all CuPy arrays, got a mix")
    if any(on_gpu):
        import cupy

        return cupy
    return np


def _int_array(a, name, xp):
    a = xp.asarray(a)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {a.dtype}")
    return xp.ascontiguousarray(a)


def _checked(xp, *arrays, int64=True):
    """Validated arrays as the backend takes them: int64 for the CPU's compiled
    code (every value is known to fit; ``int64=False``: as they are, for a
    CPU path that takes their own integer type), as they are for the GPU."""
    if xp is np and int64:
        return tuple(a.astype(np.int64, copy=False) for a in arrays)
    return arrays


def _facts(xp, **values):
    """Python ints of 0-d reductions, with one device-to-host transfer on CuPy.
    Values beyond the int64 range are clamped (only ever used to detect an
    error, whose message recomputes the exact value)."""
    if xp is np or not values:
        return {k: int(v) for k, v in values.items()}
    big = np.iinfo(np.int64).max
    stacked = xp.stack([xp.minimum(v, xp.uint64(big)).astype(xp.int64) if v.dtype == xp.uint64
                        else v.astype(xp.int64) for v in values.values()]).get()
    return dict(zip(values, map(int, stacked)))


#: (lo, hi) of no index at all
_NO_RANGE = (np.iinfo(np.int64).max, np.iinfo(np.int64).min)
#: the slots of meshccl._gpu.graph.check's facts (the fused kernel's)
_CHECKED = ("first", "last", "dec", "lo", "hi", "probe", "count")


def _range(*arrays):
    """Reductions for _bounds: min and max of each array (none when empty)."""
    return {f"{k}{i}": getattr(a, k)() for i, a in enumerate(arrays) if a.size
            for k in ("min", "max")}


def _bounds(facts):
    """(lo, hi): the smallest and largest of _range's reductions in facts
    (:data:`_NO_RANGE` without any)."""
    lo = [v for k, v in facts.items() if k.startswith("min")]
    hi = [v for k, v in facts.items() if k.startswith("max")]
    return (min(lo), max(hi)) if lo else _NO_RANGE


def _device_facts(indptr, a, b=None, probe=None):
    """Validation facts of CuPy arrays of the types the fused kernel reads
    (meshccl._gpu.graph.check), with one transfer: a dict of
    :data:`_CHECKED`, plus the samples of 'auto''s probe (None: no probe)
    when ``probe`` is given (a CSR's :func:`~meshccl._gpu.graph.tile_probe`,
    an edge list's :func:`~meshccl._gpu.graph.chain_probe_edges`); None for
    other types."""
    from .._gpu import graph as gpu

    if not gpu.supported(*(x for x in (indptr, a, b) if x is not None)):
        return None
    facts = gpu.check(indptr, a, b)
    sampled = None
    if probe is not None:  # 'auto' on the GPU: its count rides along, in facts[5]
        sampled = (gpu.tile_probe(indptr, a, indptr.size - 1, out=facts[5:]) if indptr is not None
                   else gpu.chain_probe_edges(a, b, out=facts[5:]))
    facts = dict(zip(_CHECKED, map(int, facts.get())))
    facts["samples"] = sampled and sampled[1]
    return facts


#: The most vertices a graph may have: parents and labels are indexed by int64.
MAX_VERTICES = 2**63 - 1


def check_vertex_ids(hi, *named):
    """ValueError naming the first of ``named`` ((name, array) pairs) that
    holds a vertex number no graph can have (MAX_VERTICES or more: uint64
    ids of 2**63 and up, say); ``hi``: the largest value of them all
    (clamped to int64), so only the error path reads them again."""
    if hi < MAX_VERTICES:
        return
    for name, idx in named:
        if idx.size:
            bad = int(idx.max())  # exact, in idx's own type
            if bad >= MAX_VERTICES:
                pos = int((idx == idx.dtype.type(bad)).nonzero()[0][0])
                raise ValueError(f"{name} must hold vertex numbers below 2**63 - 1 (a graph "
                                 f"has at most 2**63 - 1 vertices), got {bad} at position {pos}")


def _check_indices(n, lo, hi, *named):
    """ValueError for the first of ``named`` ((name, array) pairs) holding a
    value outside [0, n); ``lo``, ``hi``: the smallest and largest value of
    them all (clamped to int64), so only the error path reads them again."""
    if lo >= 0 and hi < n:
        return
    for name, idx in named:
        if idx.size:
            bad = int(idx.min())  # exact, in idx's own type
            if bad >= 0:
                bad = int(idx.max())
                if bad < n:
                    continue
            pos = int((idx == idx.dtype.type(bad)).nonzero()[0][0])
            raise ValueError(f"{name} must lie in [0, {n}), got {bad} at position {pos}")


def csr(indptr, indices, n=None, probe=None, defer=None, int64=True):
    """("csr", checked arrays, n).

    ``probe``: a dict for method='auto' on the GPU, which gets ``"local"``
    (the fraction measured by :func:`meshccl._gpu.graph.tile_probe`) where
    the rule looks.  ``defer``: a dict where the check of CuPy input may be
    left to the GPU dispatch (None: check now).  When the fused kernel reads
    these dtypes the check is not launched here: ``defer`` gets "arrays"
    (indptr, indices), "read" (the device facts -> dict of Python ints, one
    transfer) and "raise" (that dict -> raises the error of invalid input).
    'auto''s probe then runs alone here (it reads in bounds whatever
    the arrays hold) and its count is read at once (8 bytes), so that the
    check can still go beside the method; on invalid input the count means
    nothing and the check raises later."""
    xp = _xp_of(("indptr", indptr), ("indices", indices))
    indptr = _int_array(indptr, "indptr", xp)
    indices = _int_array(indices, "indices", xp)
    if indptr.size == 0:
        raise ValueError("indptr must have n_vertices + 1 entries, got an empty array")
    if n is not None and indptr.size != n + 1:
        raise ValueError(f"indptr must have n_vertices + 1 = {n + 1} entries, got {indptr.size}")
    n = indptr.size - 1
    if defer is not None and xp is not np:
        from .._gpu import graph as gpu

        if gpu.supported(indptr, indices):
            if probe is not None:
                local = gpu.tile_probe(indptr, indices, n)  # None where the rule does not look
                if local is not None:
                    probe["local"] = int(local[0]) / local[1]

            def read(dev):
                return dict(zip(_CHECKED, map(int, dev.get())))

            def fail(facts):
                _csr_errors(indptr, indices, n, facts)

            defer.update(arrays=(indptr, indices), read=read)
            defer["raise"] = fail
            return "csr", _checked(xp, indptr, indices, int64=int64), n
    facts = None if xp is np else _device_facts(indptr, indices, probe=probe)
    if facts is None:  # NumPy, or CuPy types the fused kernel does not read
        local = None
        if probe is not None and xp is not np:  # 'auto' on the GPU: its count rides along
            from .._gpu.graph import tile_probe

            local = tile_probe(indptr, indices, n)
        facts = _facts(xp, first=indptr[0], last=indptr[-1], dec=(indptr[1:] < indptr[:-1]).any(),
                       **_range(indices), **({"probe": local[0]} if local is not None else {}))
        facts["lo"], facts["hi"] = _bounds(facts)
        facts["samples"] = local and local[1]
    _csr_errors(indptr, indices, n, facts)
    if facts["samples"]:
        probe["local"] = facts["probe"] / facts["samples"]
    return "csr", _checked(xp, indptr, indices, int64=int64), n


def _csr_errors(indptr, indices, n, facts):
    """The ValueError of an invalid CSR, from its validation facts (only
    the error path reads the arrays again, for the message)."""
    if facts["first"] != 0:
        raise ValueError(f"indptr must start at 0, got {int(indptr[0])}")
    if facts["dec"]:
        k = int((indptr[1:] < indptr[:-1]).nonzero()[0][0])
        raise ValueError(f"indptr must not decrease, got {int(indptr[k])} then {int(indptr[k + 1])} "
                         f"at position {k}")
    if facts["last"] != indices.size:
        raise ValueError(f"indptr must end at len(indices) = {indices.size}, got {int(indptr[-1])}")
    _check_indices(n, facts["lo"], facts["hi"], ("indices", indices))


def edges(src, dst, n=None, probe=None, int64=True):
    """("edges", checked arrays, n); ``probe`` as for :func:`csr`."""
    xp = _xp_of(("src", src), ("dst", dst))
    src = _int_array(src, "src", xp)
    dst = _int_array(dst, "dst", xp)
    if src.size != dst.size:
        raise ValueError(f"src and dst must have the same length, got {src.size} and {dst.size}")
    if n is not None and (isinstance(n, (bool, np.bool_))
                          or not isinstance(n, (int, np.integer)) or n < 0):
        raise ValueError(f"n_vertices must be a non-negative int, got {n!r}")
    facts = None if xp is np else _device_facts(None, src, dst, probe=probe)
    lo, hi = _bounds(_facts(xp, **_range(src, dst))) if facts is None else (facts["lo"], facts["hi"])
    if n is None:
        check_vertex_ids(hi, ("src", src), ("dst", dst))
        n = hi + 1 if src.size else 0
    elif n > MAX_VERTICES:
        raise ValueError(f"n_vertices must be at most 2**63 - 1, got {n!r}")
    _check_indices(n, lo, hi, ("src", src), ("dst", dst))
    if facts is not None and facts["samples"]:
        probe["chain"] = facts["probe"] / facts["samples"]
    return "edges", _checked(xp, src, dst, int64=int64), int(n)


def _square(shape):
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"csgraph must be a square (N, N) matrix, got shape {tuple(shape)}")
    return int(shape[0])


def dense_edges(a):
    """(rows, cols, n) of the edges of a dense (n, n) adjacency matrix, read
    as SciPy reads it (the module docstring): NumPy or CuPy as ``a`` is."""
    xp = _xp_of(("csgraph", a))
    if xp is np:
        # a masked entry is no edge; np.matrix and other subclasses as plain arrays
        a = np.ma.filled(a, 0) if isinstance(a, np.ma.MaskedArray) else np.asarray(a)
    kind = a.dtype.kind
    if kind not in "biufc":
        raise TypeError(f"csgraph must be a numeric adjacency matrix, got dtype {a.dtype}")
    n = _square(a.shape)
    if kind == "f":
        # not numpy.isclose(a, 0), i.e. |a| > 1e-8, compared in a's own type:
        # no value of a narrower type lies between its rounding of 1e-8 and 1e-8
        edge = (xp.abs(a) > a.dtype.type(1e-8)) & xp.isfinite(a)
    elif kind == "c":
        edge = (a != 0) & xp.isfinite(a)
    else:
        edge = a
    rows, cols = edge.nonzero()
    return rows, cols, n


def as_graph(g, probe=None, defer=None, int64=True):
    """(kind, arrays, n) for any accepted input; kind is "csr", "csc" (CSR
    arrays of the transpose graph) or "edges"; the arrays are NumPy or CuPy
    as the input is.  ``probe`` and ``defer``: see :func:`csr` (CSR, CSC
    and other sparse formats converted to CSR may defer their check; edge
    lists never do).  ``int64=False``: NumPy arrays keep their integer type
    (not widened to int64)."""
    if isinstance(g, Edges):
        return edges(g.src, g.dst, g.n_vertices, probe, int64)
    if isinstance(g, tuple):
        if len(g) != 2:
            raise TypeError("a tuple csgraph must be (indptr, indices); use Edges(src, dst) "
                            f"for edge lists (got a tuple of {len(g)})")
        return csr(g[0], g[1], probe=probe, defer=defer, int64=int64)
    fmt = getattr(g, "format", None)
    if fmt is not None and hasattr(g, "nnz"):  # SciPy or CuPy sparse: every stored entry is an edge
        n = _square(g.shape)
        if fmt == "csr":
            return csr(g.indptr, g.indices, n, probe, defer, int64)
        if fmt == "csc":  # the transpose graph: the same weak components, edges reversed
            return ("csc",) + csr(g.indptr, g.indices, n, probe, defer, int64)[1:]
        if fmt == "coo":
            return edges(g.row, g.col, n, probe, int64)
        m = g.tocsr()
        if fmt == "bsr" and _scipy.drops_block_zeros():
            m.eliminate_zeros()  # (a BSR's tocsr is a new matrix: the caller's is untouched)
        return csr(m.indptr, m.indices, n, probe, defer, int64)
    if isinstance(g, np.ndarray) or (is_cupy(g) and hasattr(g, "nonzero") and hasattr(g, "dtype")):
        rows, cols, n = dense_edges(g)
        return edges(rows, cols, n, probe, int64)
    raise TypeError(
        "csgraph must be a SciPy/CuPy sparse matrix, a dense square array, an "
        f"(indptr, indices) tuple or Edges(src, dst, n_vertices); got {type(g).__name__}")
