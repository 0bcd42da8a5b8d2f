"""The device work of :mod:`meshccl.dask` on a CuPy chunk
(``_kernels/chunks.cu``): the ids of its local labels, its layers, the
pairs of a slab across a face, and its renumbering.

One module of small kernels, compiled once per width of the values (every
label type in the same compilation), so that a first Dask computation
compiles this file once beside what ``meshccl.label`` compiles, and no
CuPy elementwise, reduction or indexing kernel.  Copies between arrays are
device memcpys; the only waits are the copies to the host that the caller
asks for.  Every launch is on the current stream."""

from __future__ import annotations

import functools

import numpy as np

from .loader import kernels

BLOCK = 256
#: the words a value is copied as, by its width in bytes
_WORDS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
#: a null pointer argument (an 8-byte scalar passed by value)
NULL = np.uint64(0)


@functools.lru_cache(maxsize=None)
def _kernels(device_id: int, itemsize: int) -> dict:
    """The kernels for values ``itemsize`` bytes wide, every label type, as
    {(name, label C type): kernel}: one compilation per width."""
    v = _WORDS[itemsize]
    keys, names = [], []
    for t in ("int", "long long"):
        for name, expr in (("first", f"meshccl_chunk_first<{t}>"),
                           ("layer", f"meshccl_chunk_layer<{v}, {t}>"),
                           ("rep", f"meshccl_slab_rep<{t}>"),
                           ("pairs", f"meshccl_slab_pairs<{t}>"),
                           ("renumber", f"meshccl_chunk_renumber<{t}>")):
            keys.append((name, t))
            names.append(expr)
    return dict(zip(keys, kernels("chunks.cu", *names)))


def _kernel(name: str, labels, itemsize: int):
    """The kernel ``name`` for the label array ``labels`` (int32 or int64)."""
    import cupy

    t = "int" if labels.dtype == np.int32 else "long long"
    return _kernels(cupy.cuda.Device().id, itemsize)[(name, t)]


def _c_order(labels):
    """``labels`` in C order (``meshccl.label``'s labels already are; the
    kernels index them by their flat C-order position)."""
    if labels.flags.c_contiguous:
        return labels
    import cupy

    return cupy.ascontiguousarray(labels)


def _grid(n: int) -> tuple:
    return (max(1, min((n + BLOCK - 1) // BLOCK, 1 << 16)),)


def first_ids(labels, n: int, start, shape, itemsize: int):
    """The global flat index of the first cell of each local label 1..n of
    ``labels`` (C-contiguous, int32 or int64; the chunk at ``start`` in an
    array of ``shape``): an int64 CuPy array of n entries."""
    import cupy

    labels = _c_order(labels)
    ids = cupy.empty(n, dtype=np.uint64)
    if n == 0:
        return ids.view(np.int64)
    ids.data.memset_async(0xFF, ids.nbytes)
    strides = np.cumprod((1,) + tuple(shape[:0:-1]))[::-1]
    geo = cupy.asarray(np.concatenate([labels.shape, start, strides]).astype(np.int64))
    k = _kernel("first", labels, itemsize)
    k(_grid(labels.size), (BLOCK,), (labels, np.int64(labels.size), np.int32(labels.ndim),
                                     geo, ids))
    return ids.view(np.int64)


def layers(values, labels, mask, ids):
    """The chunk's first and last layer along every axis, as
    ``meshccl.dask``'s step 2 hands them on: per axis ``((values, ids,
    mask), (values, ids, mask))``, each new and C-contiguous with that axis
    first (shape (1, the other axes in order)); ``mask`` None without one."""
    import cupy

    labels = _c_order(labels)
    ndim = values.ndim
    size = values.itemsize
    raw = values.view(np.dtype(f"u{size}"))
    mstrides = mask.strides if mask is not None else (0,) * ndim
    geo = cupy.asarray(np.array(list(values.shape) + [s // size for s in values.strides]
                                + list(mstrides), np.int64))
    k = _kernel("layer", labels, size)
    out = []
    for axis in range(ndim):
        shape = (1,) + values.shape[:axis] + values.shape[axis + 1:]
        m = int(np.prod(shape))
        faces = []
        for at in (0, values.shape[axis] - 1):
            v = cupy.empty(shape, dtype=raw.dtype)
            i = cupy.empty(shape, dtype=np.int64)
            msk = None if mask is None else cupy.empty(shape, dtype=mask.dtype)
            k(_grid(m), (BLOCK,), (raw, NULL if mask is None else mask, labels, ids,
                                   np.int32(ndim), geo, np.int32(axis), np.int64(at),
                                   np.int64(m), v, i, NULL if msk is None else msk))
            faces.append((v.view(values.dtype), i, msk))
        out.append(tuple(faces))
    return out


def stack(first, second):
    """``concatenate([first, second])`` of two C-contiguous arrays of one
    dtype, by two device copies."""
    import cupy

    out = cupy.empty((first.shape[0] + second.shape[0],) + first.shape[1:], dtype=first.dtype)
    stream = cupy.cuda.get_current_stream()
    out.data.copy_from_device_async(first.data, first.nbytes, stream)
    (out.data + first.nbytes).copy_from_device_async(second.data, second.nbytes, stream)
    return out


class Pairs:
    """The pairs of ids of a chunk's slabs, gathered on the device and copied
    to the host once: :meth:`add` each slab (its labels and ids), then
    :meth:`host`."""

    def __init__(self, cells: int, itemsize: int):
        import cupy

        self.out = cupy.empty(2 * max(cells, 1), dtype=np.int64)
        self.count = cupy.zeros(1, dtype=np.uint64)
        self.itemsize = itemsize

    def add(self, s, ids):
        """The pairs of one slab: ``s`` its labels (C-contiguous), ``ids`` the
        id of each cell (-1 on the background), both flat."""
        import cupy

        rep = cupy.empty(s.size + 1, dtype=np.int64)
        n = np.int64(s.size)
        _kernel("rep", s, self.itemsize)(_grid(s.size), (BLOCK,), (s, ids, n, rep))
        _kernel("pairs", s, self.itemsize)(_grid(s.size), (BLOCK,),
                                           (s, ids, n, rep, self.out, self.count))

    def host(self):
        """(a, b): the pairs on the host, int64 (repeats possible)."""
        k = int(self.count.get()[0])
        pairs = self.out[:2 * k].get().reshape(k, 2)
        return pairs[:, 0].copy(), pairs[:, 1].copy()


def renumber(labels, table, itemsize: int):
    """``table[labels]`` (``table`` a host int64 array), int64 on the
    device; ``itemsize`` the width of the chunk's values (the module the
    chunk's other kernels came from)."""
    import cupy

    t = cupy.asarray(table)
    out = cupy.empty(labels.shape, dtype=np.int64)
    _kernel("renumber", labels, itemsize)(_grid(labels.size), (BLOCK,),
                                          (_c_order(labels), np.int64(labels.size), t, out))
    return out
