"""Per-label tables on the GPU, for :mod:`meshccl.measure`
(``_kernels/measure.cu``; the algorithm is explained at the top of that
file).

The same raw table as ``meshccl/_cpu/measure.py``, as CuPy arrays: one
launch of ``meshccl_measure_cells`` (counts, first cells, boxes,
coordinate and circular sums), one of ``meshccl_measure_values`` with an
intensity image, and for each periodic axis a sort of its distinct
(label, coordinate) pairs and two launches of ``meshccl_measure_arcs``.
The label image stays on the device; only the largest label is read back.
"""

from __future__ import annotations

import numpy as np

from .loader import c_type, kernels

BLOCK = 256
#: blocks of the grid-stride kernels: enough to fill any current GPU
MAX_BLOCKS = 1 << 16
FIRST, BOXES, SUMS, CIRCULAR = 1, 2, 4, 8


def _grid(items: int, per_block: int) -> tuple:
    return (max(1, min(MAX_BLOCKS, -(-items // per_block))),)


def max_label(labels):
    """The largest label (0 for an empty array), and whether any is negative:
    one reduction of the unsigned view, one read."""
    if labels.size == 0:
        return 0, False
    dtype = labels.dtype
    if dtype == np.bool_:
        return int(labels.max()), False
    top = int(labels.view(np.dtype(f"u{dtype.itemsize}")).max())
    if dtype.kind == "i" and top >= 1 << (8 * dtype.itemsize - 1):
        return top, True
    return top, False


def _flat(labels):
    """Flat contiguous uint32 / uint64 labels (views where they can be)."""
    import cupy

    flat = cupy.ascontiguousarray(labels).reshape(-1)
    if flat.dtype.itemsize == 8:
        return flat.view(cupy.uint64)
    if flat.dtype.itemsize == 4:
        return flat.view(cupy.uint32)
    return flat.astype(cupy.uint32)  # bool, 1- and 2-byte labels: a widened copy


def _geometry(shape):
    """(width, shape, row strides) as the kernels take them."""
    import cupy

    ndim = len(shape)
    width = shape[-1] if ndim else 1
    rstride = [1] * max(ndim, 1)
    for d in range(ndim - 3, -1, -1):
        rstride[d] = rstride[d + 1] * shape[d + 1]
    return (width, cupy.asarray(np.array(shape or (1,), dtype=np.int64)),
            cupy.asarray(np.array(rstride, dtype=np.int64)))


def _index_type(n):
    """int32 indices while a warp's next chunk (base + the grid's cells) fits."""
    return np.int32 if n + MAX_BLOCKS * BLOCK < 2**31 else np.int64


def table(labels, shape, rows, *, first=False, boxes=False, sums=False, periodic=(),
          intensity=None):
    """The raw per-label table (the CPU twin's ``table``): ``count`` (int64),
    ``first`` (int64; n where a label has no cells), ``lo``, ``hi``
    (int64, (rows, ndim), inclusive; undefined where a label has no cells),
    ``csum`` (float64, exact integer sums), ``cos``, ``sin`` (periodic
    axes), and with ``intensity`` ``isum``, ``iabs``, ``imin``, ``imax``
    (its dtype), ``wsum``, ``wcos``, ``wsin``."""
    import cupy

    n = labels.size
    ndim = len(shape)
    nper = len(periodic)
    count = cupy.zeros(rows, dtype=cupy.uint64)
    first_t = cupy.full(rows, n, dtype=cupy.int64)
    lo = cupy.full((rows, ndim), np.uint64(2**64 - 1), dtype=cupy.uint64)
    hi = cupy.zeros((rows, ndim), dtype=cupy.uint64)
    csum = cupy.zeros((rows, ndim), dtype=cupy.uint64)
    cs = cupy.zeros((rows, nper), dtype=cupy.float64)
    sn = cupy.zeros((rows, nper), dtype=cupy.float64)
    out = {}
    flat = _flat(labels) if n else None
    index = _index_type(n)
    width, shape_d, rstride = _geometry(shape)
    axes = cupy.asarray(np.array(periodic or (0,), dtype=np.int32))
    if n:
        flags = (FIRST * first | BOXES * boxes | SUMS * sums | CIRCULAR * bool(nper))
        (cells,) = kernels("measure.cu",
                           f"meshccl_measure_cells<{c_type(flat.dtype)}, {c_type(index)}>")
        cells(_grid(n, BLOCK), (BLOCK,),
              (flat, index(n), index(width), shape_d, rstride, np.int32(ndim), axes,
               np.int32(nper), np.int32(flags), count, first_t, lo, hi, csum, cs, sn))
    out["count"] = count.view(cupy.int64)
    if first:
        out["first"] = first_t
    if boxes:
        out["lo"], out["hi"] = lo.view(cupy.int64), hi.view(cupy.int64)
    if sums:
        out["csum"] = csum.astype(cupy.float64)
    if nper:
        out["cos"], out["sin"] = cs, sn
    if intensity is not None:
        out.update(_values(flat, intensity, n, index, width, shape_d, rstride, ndim, axes, nper,
                           rows))
    return out


def _values(flat, intensity, n, index, width, shape_d, rstride, ndim, axes, nper, rows):
    import cupy

    values = cupy.ascontiguousarray(intensity).reshape(-1)
    dtype = values.dtype
    if dtype == np.bool_:
        values = values.view(cupy.uint8)
    elif dtype == np.float16:
        values = values.astype(cupy.float32)
    key = np.dtype(np.uint64 if values.dtype.itemsize == 8 else np.uint32)
    isum = cupy.zeros(rows, dtype=cupy.float64)
    iabs = cupy.zeros(rows, dtype=cupy.float64)
    kmin = cupy.full(rows, key.type(np.iinfo(key).max), dtype=key)
    kmax = cupy.zeros(rows, dtype=key)
    wsum = cupy.zeros((rows, ndim), dtype=cupy.float64)
    wcos = cupy.zeros((rows, nper), dtype=cupy.float64)
    wsin = cupy.zeros((rows, nper), dtype=cupy.float64)
    if n:
        (kernel,) = kernels("measure.cu", f"meshccl_measure_values<{c_type(flat.dtype)}, "
                                          f"{c_type(index)}, {c_type(values.dtype)}>")
        kernel(_grid(n, BLOCK), (BLOCK,),
               (flat, values, index(n), index(width), shape_d, rstride, np.int32(ndim), axes,
                np.int32(nper), isum, iabs, kmin, kmax, wsum, wcos, wsin))
    return {"isum": isum, "iabs": iabs, "imin": _unkey(kmin, values.dtype).astype(dtype),
            "imax": _unkey(kmax, values.dtype).astype(dtype), "wsum": wsum, "wcos": wcos,
            "wsin": wsin}


def _unkey(keys, dtype):
    """Values of the order-preserving keys of ``Keys<V>`` (measure.cu)."""
    import cupy

    dtype = np.dtype(dtype)
    if dtype.kind in "ub":
        return keys.astype(dtype)
    bits = 8 * keys.dtype.itemsize
    sign = keys.dtype.type(1 << (bits - 1))
    if dtype.kind == "i":
        return (keys ^ sign).view(np.dtype(f"i{keys.dtype.itemsize}")).astype(dtype)
    raw = cupy.where((keys & sign) != 0, keys ^ sign, ~keys)
    return raw.view(np.dtype(f"f{keys.dtype.itemsize}"))


def periodic_box(labels, shape, axis, lo, hi, rows):
    """``(start, extent)`` of the smallest arcs covering each label's
    coordinates on a periodic axis (the CPU twin's ``periodic_box``)."""
    import cupy

    n = shape[axis]
    start = cupy.full(rows, n, dtype=cupy.int64)
    biggest = cupy.full(rows, -1, dtype=cupy.int64)
    if labels.size:
        view = [1] * len(shape)
        view[axis] = n
        coord = cupy.arange(n, dtype=cupy.uint64).reshape(view)
        keys = cupy.unique((cupy.asarray(labels).astype(cupy.uint64) * np.uint64(n) + coord)
                           .reshape(-1))
        lo = cupy.ascontiguousarray(lo, dtype=cupy.int64)
        hi = cupy.ascontiguousarray(hi, dtype=cupy.int64)
        (arcs,) = kernels("measure.cu", "meshccl_measure_arcs<long long>")
        m = keys.size
        for step in (0, 1):
            arcs(_grid(m, BLOCK), (BLOCK,), (keys, np.int64(m), np.int64(n), lo, hi, biggest,
                                             start, np.int32(step)))
    extent = n - biggest
    empty = biggest < 0
    return cupy.where(empty, 0, start), cupy.where(empty, 0, extent)


def coords(labels, count, present):
    """Object array: for each label of ``present``, the (count, ndim) int64
    coordinates of its cells in raster order, as CuPy arrays."""
    import cupy

    n = labels.size
    flat = _flat(labels).astype(cupy.uint64)
    rows = count.shape[0]
    if n and (rows * n) < 2**64:
        # sort label-major, index-minor: raster order within each label
        order = (cupy.sort(flat * np.uint64(n) + cupy.arange(n, dtype=cupy.uint64))
                 % np.uint64(n)).astype(cupy.int64)
    else:
        order = cupy.argsort(flat, kind="stable") if n else cupy.zeros(0, cupy.int64)
    cells = cupy.stack(cupy.unravel_index(order, labels.shape), axis=1).astype(cupy.int64)
    starts = np.concatenate([[0], np.cumsum(count.get())])
    out = np.empty(int(present.size), dtype=object)
    for i, lab in enumerate(present.get().tolist()):
        out[i] = cells[starts[lab]:starts[lab + 1]]
    return out
