"""The general chain on the GPU: any number of dimensions and every lattice
feature (periodic axes, mask, bonds, tolerance, ``axes``), through
``_kernels/general.cu`` (tile, union) and then :mod:`.number_roots`
(flatten, scan, relabel).

:func:`meshccl._gpu.chains.select` sends here what the fixed-geometry
chains of :mod:`.image_plain` and :mod:`.runs_nd` do not take: more than 3
axes longer than 1 (values that are not bool, lattice features), ``axes``
that do not make a stack of images, and grids of tiles too large
for their launches.  :func:`grid_args` also serves Hawick et al.'s
iterative methods (:mod:`.iterative`), whose kernels read the same tile
grid.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import neighbourhood
from ..neighbourhood import tile_logs
from .launch import tolerance_arg
from .loader import c_type, kernels, settled
from .number_roots import BLOCK, NULL, grid, scan_words, scratch


@functools.lru_cache(maxsize=256)
def _device_geometry(device_id: int, shape: tuple, connectivity: int, index_dtype: str,
                     label_axes=None, offsets=None):
    """Shape, offset table and tile layout on the device, uploaded once per
    device (``offsets``: an explicit half neighbourhood, see
    :func:`meshccl.neighbourhood.offset_table`)."""
    import cupy

    table = neighbourhood.offset_table(shape, connectivity, label_axes, offsets)
    ndim = len(shape)
    tl = tile_logs(shape)
    # tile-local linear offset of each table row: sum of delta_k << shift_k
    shifts = np.concatenate([np.cumsum(tl[::-1])[::-1][1:], [0]]).astype(np.int64)
    lo = ((table[:, 1:2] >> np.arange(ndim)) & 1)
    hi = ((table[:, 2:3] >> np.arange(ndim)) & 1)
    loff = ((hi - lo) * (1 << shifts)).sum(axis=1).astype(np.int32)
    tcount = np.array([-(-s // (1 << t)) for s, t in zip(shape, tl)], dtype=np.int64)
    tstride = np.concatenate([np.cumprod(tcount[::-1])[::-1][1:], [1]])
    tiles = int(np.prod(tcount))
    if tiles >= 2**31:
        raise ValueError(f"label_image of shape {shape} needs {tiles} tiles; at most 2**31 - 1 fit one launch")
    return settled(dict(
        shape=cupy.asarray(np.asarray(shape, dtype=index_dtype)),
        table=cupy.asarray(table.reshape(-1)),
        noff=int(table.shape[0]),
        loff=cupy.asarray(loff),
        tlog=cupy.asarray(np.asarray(tl, dtype=np.int32)),
        tcount=cupy.asarray(tcount.astype(np.uint32)),
        tstride=cupy.asarray(tstride.astype(np.uint32)),
        tiles=tiles,
        tile_cells=1 << sum(tl),
    ))


@functools.lru_cache(maxsize=16)
def _dummy(device_id: int):
    """A one-byte array standing in for absent mask / bonds pointers."""
    import cupy

    out = cupy.ones(1, dtype=cupy.uint8), cupy.zeros(1, dtype=cupy.int32)
    return settled(out)


def grid_args(prob):
    """What every tile-grid kernel (general.cu, iterative.cu) takes after its
    label arrays (``MESHCCL_GRID_PARAMS`` in lattice.cuh), for ``prob`` (a
    :class:`meshccl._validate.Problem` on the current GPU).

    Returns ``(targs, geo, params)``: the template arguments, the device
    geometry (see :func:`_device_geometry`) and the argument tuple.
    """
    import cupy

    values, index_dtype, n = prob.values, prob.work_dtype, prob.size
    t, i = c_type(values.dtype), c_type(index_dtype)
    tol = prob.tolerance is not None
    mask, bonds = prob.mask, prob.bonds
    lat = tol or bool(prob.periodic) or mask is not None or bonds is not None or prob.no_left
    targs = f"{t}, {i}, {str(tol).lower()}, {str(lat).lower()}"  # the plain path: no feature code
    one, zero_i = _dummy(cupy.cuda.Device().id)
    lflags = (1 if mask is not None else 0) | (2 if bonds is not None else 0) \
        | (4 if prob.no_left else 0)
    lattice = (one if mask is None else mask,
               one if bonds is None else bonds,
               np.int64(n),
               zero_i if bonds is None else cupy.asarray(prob.bond_rows),
               np.uint32(prob.periodic),
               tolerance_arg(values.dtype, prob.tolerance),
               np.int32(lflags))
    geo = _device_geometry(cupy.cuda.Device().id, tuple(prob.shape), prob.connectivity,
                           np.dtype(index_dtype).name, prob.label_axes, prob.offsets)
    params = (np.dtype(index_dtype).type(n), geo["shape"], np.int32(len(prob.shape)),
              geo["table"], np.int32(geo["noff"]), geo["loff"], geo["tlog"], geo["tcount"],
              geo["tstride"], np.int32(bool(prob.has_bg)), prob.bgkey) + lattice
    return targs, geo, params


def general_program(prob, buffers=None):
    """The general chain for ``prob``: general.cu's tile and union kernels,
    then the roots' numbering (number_roots.cu: flatten, scan, relabel), as
    ``[(name, launch), ...]`` with ``launch(values, P, mask, bonds)`` (the
    mask and bonds are ``prob``'s, bound here); the last returns N as a 0-d
    CuPy array.  ``buffers``: :func:`.number_roots.scratch` arrays to use."""
    targs, geo, params = grid_args(prob)
    work, n = np.dtype(prob.work_dtype), prob.size
    tile, union = kernels("general.cu", f"meshccl_general_tile<{targs}>",
                          f"meshccl_general_union<{targs}>")
    t = c_type(work)
    flatten, gather = kernels("number_roots.cu", f"meshccl_flatten<{t}>",
                              f"meshccl_relabel{'_first' if prob.first else ''}<{t}>")
    cells = geo["tile_cells"]
    tiles = (geo["tiles"],)
    key_bytes = 8 if (prob.values.dtype.kind == "f" or prob.tolerance is not None) \
        else prob.values.dtype.itemsize
    smem = -(-cells * key_bytes // 8) * 8 + cells * (work.itemsize + 4)
    words = (n + 31) // 32
    bits, per_word, incl, sums = buffers if buffers is not None else scratch(n, work)
    scan = scan_words(work, words)
    nn, blocks = work.type(n), grid(n)
    tail = (work.type(0), NULL, work.type(words))

    def relabel(values, P, mask=None, bonds=None):
        gather(blocks, (BLOCK,), (P, nn, bits, incl) + tail)
        return incl[-1]

    return [
        ("tile", lambda values, P, mask=None, bonds=None:
            tile(tiles, (cells,), (values, P) + params, shared_mem=smem)),
        ("union", lambda values, P, mask=None, bonds=None:
            union(tiles, (cells,), (values, P) + params)),
        ("flatten", lambda values, P, mask=None, bonds=None:
            flatten(blocks, (BLOCK,), (P, nn, bits, per_word))),
        ("scan", lambda values, P, mask=None, bonds=None: scan(bits, per_word, incl, sums)),
        ("relabel", relabel),
    ]
