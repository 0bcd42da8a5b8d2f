"""Arrays of other frameworks at the API boundary: PyTorch, JAX, DLPack.

Every entry point that takes NumPy or CuPy arrays (``meshccl.label``,
``meshccl.ndimage.label``, ``meshccl.graph.connected_components``,
``spanning_forest`` and ``list_rank``; not yet ``meshccl.measure``) also
takes PyTorch tensors, JAX arrays, and any other object that exposes
``__cuda_array_interface__`` or ``__dlpack__``.  This module is the one
place that converts them; the entry points call :func:`unwrap` on their
input first, run on the NumPy / CuPy view as for any other call, and give
the results back through the ``back`` function it returned.

The rule each way, without a copy:

* in: memory on a CUDA device becomes a CuPy array (``cupy.from_dlpack``,
  whose stream handshake orders the labelling after the producer's pending
  work; ``cupy.asarray`` for objects that only expose
  ``__cuda_array_interface__``), host memory a NumPy array
  (``Tensor.numpy()`` for PyTorch, ``numpy.from_dlpack`` otherwise).  A
  PyTorch tensor that requires grad is read through ``detach()``.
* graphs (:func:`unwrap_graph`): the arrays of an ``(indptr, indices)``
  tuple or an ``Edges`` list each as above; a PyTorch sparse COO / CSR /
  CSC tensor as the edge list or CSR arrays it stores; a NetworkX graph as
  ``networkx.to_scipy_sparse_array(G)`` (vertex k is ``list(G)[k]``).
* out: a PyTorch tensor in gives PyTorch tensors out (``torch.from_dlpack``
  of a CuPy result, ``torch.from_numpy`` of a NumPy one), a JAX array in
  gives JAX arrays out (``jax.dlpack.from_dlpack``); any other producer
  gets the CuPy or NumPy result.

NumPy and CuPy arrays, lists, scalars and everything else are left alone
(:func:`unwrap` returns None, and the caller's validation says what is
wrong with them).  Importing this module imports neither PyTorch nor JAX:
an object is recognised by its type's module, and the framework is
imported only when it already made the object.
"""

from __future__ import annotations

import numpy as np

#: DLPack device types (``__dlpack_device__()[0]``) read here: host memory
#: (NumPy's from_dlpack takes kDLCPU only) and CUDA device / managed memory
_DL_CPU, _DL_CUDA, _DL_CUDA_MANAGED = 1, 2, 13
_HOST = (_DL_CPU,)
_DEVICE = (_DL_CUDA, _DL_CUDA_MANAGED)

#: top-level modules whose objects are never converted here
_NATIVE = frozenset({"numpy", "cupy", "cupyx", "builtins", "scipy", "meshccl", "networkx"})


def _top(obj) -> str:
    return type(obj).__module__.partition(".")[0]


def is_array(obj) -> bool:
    """Whether ``obj`` is a NumPy or CuPy array (a result to give back)."""
    return isinstance(obj, np.ndarray) or _top(obj) == "cupy"


def _cupy(name, where):
    try:
        import cupy
    except ImportError as exc:
        raise RuntimeError(
            f"{name} is {where}, but CuPy is not installed; meshccl labels GPU memory with "
            "CuPy (pip install \"meshccl[cuda12]\" or \"meshccl[cuda13]\")") from exc
    return cupy


def _same(array):
    return array


def _to_torch(array):
    import torch

    if isinstance(array, np.ndarray):
        return torch.from_numpy(array)
    return torch.from_dlpack(array)


def _to_jax(array):
    import jax.dlpack

    return jax.dlpack.from_dlpack(array)


def _from_torch(t, name):
    import torch

    if not isinstance(t, torch.Tensor):
        return None
    if t.layout != torch.strided:
        raise TypeError(f"{name} must be a dense (strided) tensor, got layout {t.layout}")
    t = t.detach()
    if t.device.type == "cuda":
        return _from_dlpack(t, name), _to_torch
    if t.device.type != "cpu":
        raise TypeError(f"{name} must be a CPU or CUDA tensor, got a tensor on {t.device}")
    try:
        return t.numpy(), _to_torch
    except (TypeError, RuntimeError) as exc:
        raise TypeError(f"{name} has dtype {t.dtype}, which has no NumPy equivalent "
                        f"({exc})") from exc


def _from_jax(x, name):
    import jax

    tracer = getattr(getattr(jax, "core", None), "Tracer", None)
    if tracer is not None and isinstance(x, tracer):
        raise TypeError(f"{name} is a traced JAX value (inside jax.jit or another "
                        "transformation); meshccl labels concrete arrays only")
    if not isinstance(x, jax.Array):
        return None
    return _from_dlpack(x, name), _to_jax


def _from_dlpack(obj, name):
    """The NumPy / CuPy view of a DLPack producer."""
    try:
        kind, device = obj.__dlpack_device__()
    except Exception as exc:
        raise TypeError(f"{name} exposes __dlpack__ but its __dlpack_device__() failed: "
                        f"{exc}") from exc
    if kind in _HOST:
        return np.from_dlpack(obj)
    if kind in _DEVICE:
        cupy = _cupy(name, f"on CUDA device {device}")
        try:
            return cupy.from_dlpack(obj)
        except (BufferError, TypeError, ValueError, RuntimeError):
            # (a dtype or stream this CuPy's DLPack import refuses: the older
            # protocol, where the producer has it, reads the same memory)
            if not hasattr(obj, "__cuda_array_interface__"):
                raise
            return cupy.asarray(obj)
    raise TypeError(f"{name} lives in memory of DLPack device type {int(kind)}; meshccl "
                    "takes host (CPU) and CUDA memory")


def unwrap(obj, name):
    """``(array, back)`` for an array of another framework, else None.

    ``array`` is a NumPy or CuPy view of ``obj``'s memory; ``back`` turns
    a NumPy or CuPy result into ``obj``'s framework (identity for producers
    other than PyTorch and JAX).  ``name`` is the argument's name, for the
    errors.
    """
    top = _top(obj)
    if top in _NATIVE:
        return None
    if top == "torch":
        return _from_torch(obj, name)
    if top in ("jax", "jaxlib"):
        return _from_jax(obj, name)
    if hasattr(obj, "__cuda_array_interface__"):
        return _cupy(name, "CUDA memory (__cuda_array_interface__)").asarray(obj), _same
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _from_dlpack(obj, name), _same
    return None


def immutable(obj) -> bool:
    """Whether ``obj`` is an array of a framework whose arrays must never be
    written (JAX), whatever its NumPy / CuPy view would allow."""
    return _top(obj) in ("jax", "jaxlib")


def as_array(obj, name):
    """``obj`` as a NumPy / CuPy array when it is another framework's array
    (a mask, bonds, an output buffer), else ``obj`` unchanged."""
    foreign = unwrap(obj, name)
    return obj if foreign is None else foreign[0]


def rewrap(result, back):
    """``result`` (an array, or a tuple of arrays and other values) with
    every NumPy / CuPy array passed through ``back``."""
    if back is _same:
        return result
    if isinstance(result, tuple):
        return tuple(back(r) if is_array(r) else r for r in result)
    return back(result) if is_array(result) else result


def _torch_sparse(t, name):
    """A PyTorch sparse matrix as the CSR tuple or Edges it stores (still
    tensors, converted by the caller)."""
    import torch

    from .graph._input import Edges

    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ValueError(f"{name} must be a square (N, N) matrix, got shape {tuple(t.shape)}")
    t = t.detach()
    if t.layout == torch.sparse_coo:
        # (the stored entries as they are: duplicates need no coalescing here)
        rows, cols = t._indices()
        return Edges(rows, cols, int(t.shape[0]))
    if t.layout == torch.sparse_csr:
        return (t.crow_indices(), t.col_indices())
    if t.layout == torch.sparse_csc:  # the transpose graph's CSR: the same weak components
        return (t.ccol_indices(), t.row_indices())
    raise TypeError(f"{name} must be a dense or a sparse COO, CSR or CSC tensor, got layout "
                    f"{t.layout}")


def _networkx(g):
    """A NetworkX graph as a SciPy CSR array, vertex k = ``list(g)[k]``."""
    if len(g) == 0:  # (to_scipy_sparse_array refuses a graph without nodes)
        import scipy.sparse

        return scipy.sparse.csr_array((0, 0), dtype=np.int8)
    import networkx

    return networkx.to_scipy_sparse_array(g, weight=None, dtype=np.int32, format="csr")


def unwrap_graph(g, name="csgraph"):
    """``(graph, back, undirected)`` for any graph input.

    ``graph`` is ``g`` with its tensors as NumPy / CuPy arrays (a NetworkX
    graph as a SciPy CSR array), ``back`` as for :func:`unwrap` (from the
    first foreign array met), ``undirected`` True for a NetworkX graph that
    is not directed (its matrix is then symmetric).
    """
    from .graph._input import Edges

    top = _top(g)
    if top == "networkx" and hasattr(g, "is_directed"):
        return _networkx(g), _same, not g.is_directed()
    if top == "torch":
        import torch

        if isinstance(g, torch.Tensor) and g.layout != torch.strided:
            g = _torch_sparse(g, name)
    if isinstance(g, Edges) or (isinstance(g, tuple) and len(g) == 2):
        edges = isinstance(g, Edges)
        names = ("src", "dst") if edges else ("indptr", "indices")
        found = [unwrap(part, part_name) for part, part_name in zip(g[:2], names)]
        if all(f is None for f in found):
            return g, _same, False
        arrays = [part if f is None else f[0] for part, f in zip(g[:2], found)]
        back = next(f[1] for f in found if f is not None)
        return (Edges(*arrays, g.n_vertices) if edges else tuple(arrays)), back, False
    foreign = unwrap(g, name)
    if foreign is None:
        return g, _same, False
    return foreign[0], foreign[1], False
