"""Mesh labelling on the GPU: ``kernels/mesh.cu`` then the relabel path."""

from __future__ import annotations

import functools

import numpy as np

from .. import neighbourhood
from .loader import c_type, kernels
from .relabel import BLOCK, grid, relabel

#: Cells walked by one warp of meshccl_mesh_init (MESHCCL_SEGMENT in mesh.cu).
SEGMENT = 256


@functools.lru_cache(maxsize=256)
def _device_geometry(device_id: int, shape: tuple, connectivity: int, index_dtype: str):
    """Shape and offset table on the device, uploaded once per device."""
    import cupy

    table = neighbourhood.offset_table(shape, connectivity)
    return (
        cupy.asarray(np.asarray(shape, dtype=index_dtype)),
        cupy.asarray(table.reshape(-1)),
        int(table.shape[0]),
    )


def label_mesh(values, P, shape, connectivity, has_bg, bgkey):
    """Label flat CuPy ``values`` into ``P`` (int32/int64). Returns N (0-d array)."""
    import cupy

    n = values.size
    t, i = c_type(values.dtype), c_type(P.dtype)
    init, union = kernels(
        "mesh.cu", f"meshccl_mesh_init<{t}, {i}>", f"meshccl_mesh_union<{t}, {i}>"
    )
    dshape, dtable, noff = _device_geometry(
        cupy.cuda.Device().id, tuple(shape), connectivity, P.dtype.name
    )
    nn = P.dtype.type(n)
    args = (values, P, nn, dshape, np.int32(len(shape)), dtable, np.int32(noff),
            np.int32(bool(has_bg)), bgkey)
    warps = (n + SEGMENT - 1) // SEGMENT
    init(((warps * 32 + BLOCK - 1) // BLOCK,), (BLOCK,), args)
    union(grid(n), (BLOCK,), args)
    return relabel(P, n)
