"""The general chain on the GPU: any number of dimensions and every lattice
feature (periodic axes, mask, bonds, tolerance, ``axes``), through
``_kernels/general.cu`` (tile, union) and then :mod:`.number_roots`.

:func:`label_mesh` is the one entry for a CuPy labelling call that is not
an iterative method: 1- to 3-axis calls, plain or with lattice features
(:func:`.image_plain.applies_lattice`), and stacks of 1-D or 2-D images
(:func:`.image_plain.stack_view`) go to :mod:`.image_plain`'s
fixed-geometry chains; more axes, other ``axes`` and grids too large for
those through the kernels here.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import neighbourhood
from ..neighbourhood import tile_logs
from . import image_plain
from .launch import tolerance_arg
from .loader import c_type, kernels
from .number_roots import relabel
from .timing import run


@functools.lru_cache(maxsize=256)
def _device_geometry(device_id: int, shape: tuple, connectivity: int, index_dtype: str,
                     label_axes=None):
    """Shape, offset table and tile layout on the device, uploaded once per device."""
    import cupy

    table = neighbourhood.offset_table(shape, connectivity, label_axes)
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
    return dict(
        shape=cupy.asarray(np.asarray(shape, dtype=index_dtype)),
        table=cupy.asarray(table.reshape(-1)),
        noff=int(table.shape[0]),
        loff=cupy.asarray(loff),
        tlog=cupy.asarray(np.asarray(tl, dtype=np.int32)),
        tcount=cupy.asarray(tcount.astype(np.uint32)),
        tstride=cupy.asarray(tstride.astype(np.uint32)),
        tiles=tiles,
        tile_cells=1 << sum(tl),
    )


@functools.lru_cache(maxsize=16)
def _dummy(device_id: int):
    """A one-byte array standing in for absent mask / bonds pointers."""
    import cupy

    return cupy.ones(1, dtype=cupy.uint8), cupy.zeros(1, dtype=cupy.int32)


def tolerance_background(value_dtype, has_bg, bgkey, exact=None):
    """``(has_bg, key)`` for the kernels when a tolerance is given: on integer
    values they compare keys in the values' own type (exactly, past 2**53),
    so the background becomes that type too -- a background no value can
    equal (a fraction, out of range) matches no cell.  ``exact``: the
    background as the caller gave it (int or float), else ``bgkey``."""
    dt = np.dtype(value_dtype)
    if dt.kind not in "iu":
        return has_bg, np.float64(bgkey)
    b = exact if exact is not None else float(bgkey)
    if isinstance(b, float):
        if not b.is_integer():
            return False, dt.type(0)
        b = int(b)
    info = np.iinfo(dt)
    if not info.min <= b <= info.max:
        return False, dt.type(0)
    return has_bg, dt.type(b)


def grid_args(values, index_dtype, shape, connectivity, has_bg, bgkey, *, periodic=0, mask=None,
              bonds=None, bond_rows=None, tolerance=None, label_axes=None, no_left=False,
              tol_background=None):
    """What every tile-grid kernel (general.cu, iterative.cu) takes after its label
    arrays (``MESHCCL_GRID_PARAMS`` in lattice.cuh).

    Returns ``(targs, geo, params)``: the template arguments after the value
    type's, the device geometry (see :func:`_device_geometry`) and the
    argument tuple.
    """
    import cupy

    n = values.size
    t, i = c_type(values.dtype), c_type(index_dtype)
    tol = tolerance is not None
    if tol:
        has_bg, bgkey = tolerance_background(values.dtype, has_bg, bgkey, tol_background)
    lat = tol or bool(periodic) or mask is not None or bonds is not None or no_left
    targs = f"{t}, {i}, {str(tol).lower()}, {str(lat).lower()}"  # the plain path: no feature code
    one, zero_i = _dummy(cupy.cuda.Device().id)
    lflags = (1 if mask is not None else 0) | (2 if bonds is not None else 0) | (4 if no_left else 0)
    lattice = (one if mask is None else mask,
               one if bonds is None else bonds,
               np.int64(n),
               zero_i if bonds is None else cupy.asarray(bond_rows),
               np.uint32(periodic),
               tolerance_arg(values.dtype, tolerance),
               np.int32(lflags))
    geo = _device_geometry(cupy.cuda.Device().id, tuple(shape), connectivity,
                           np.dtype(index_dtype).name, label_axes)
    params = (np.dtype(index_dtype).type(n), geo["shape"], np.int32(len(shape)), geo["table"],
              np.int32(geo["noff"]), geo["loff"], geo["tlog"], geo["tcount"], geo["tstride"],
              np.int32(bool(has_bg)), bgkey) + lattice
    return targs, geo, params


def mesh_steps(values, P, shape, connectivity, has_bg, bgkey, **lattice):
    """The two kernels of general.cu as ``[(name, launch), ...]``."""
    targs, geo, params = grid_args(values, P.dtype, shape, connectivity, has_bg, bgkey, **lattice)
    tile, union = kernels("general.cu", f"meshccl_general_tile<{targs}>",
                          f"meshccl_general_union<{targs}>")
    cells = geo["tile_cells"]
    key_bytes = 8 if (values.dtype.kind == "f" or lattice.get("tolerance") is not None) \
        else values.dtype.itemsize
    smem = -(-cells * key_bytes // 8) * 8 + cells * (P.dtype.itemsize + 4)
    return [
        ("tile", lambda: tile((geo["tiles"],), (cells,), (values, P) + params, shared_mem=smem)),
        ("union", lambda: union((geo["tiles"],), (cells,), (values, P) + params)),
    ]


def label_mesh(values, P, shape, connectivity, has_bg, bgkey, timer=None, first=False,
               counts=None, **lattice):
    """Label flat CuPy ``values`` into ``P`` (int32/int64). Returns N (0-d array).

    ``first``: first-cell labels (each component's first cell's flat index
    + 1) instead of 1..N.  ``counts``: a count table
    (``image_plain.count_table``) whose rows 0..N the chain fills with the
    cells of each label; only where :func:`.image_plain.applies` or
    :func:`.image_plain.applies_lattice` (:mod:`.counted` says where else).

    ``lattice``: periodic (bit mask of axes), mask, bonds + bond_rows, tolerance.
    ``timer``: a :class:`.timing.PhaseTimer` to time each kernel, or None.
    """
    fixed = _fixed_steps(values, P, shape, connectivity, has_bg, bgkey, first, counts, lattice)
    if fixed is not None:
        count = None
        for name, launch in fixed:
            count = run(timer, name, launch)
        return count
    if counts is not None:
        raise ValueError("the general chain counts through counted.label_mesh_counted")
    for name, launch in mesh_steps(values, P, shape, connectivity, has_bg, bgkey, **lattice):
        run(timer, name, launch)
    return relabel(P, values.size, timer, first=first)


def fixed_chain_view(shape, lattice):
    """How :mod:`.image_plain`'s chains see the call: ``(shape, image_rows,
    lattice)`` (a stack of images as its tall 2-D image, ``image_rows`` its
    rows per image, else None), or None where the general chain serves it."""
    image_rows = None
    stack = image_plain.stack_view(shape, lattice.get("label_axes"), lattice.get("periodic", 0))
    if stack is not None:
        shape, image_rows, periodic = stack
        lattice = dict(lattice, label_axes=None, periodic=periodic)
    if image_plain.applies(shape, **lattice) or image_plain.applies_lattice(shape, **lattice):
        return shape, image_rows, lattice
    return None


def _fixed_steps(values, P, shape, connectivity, has_bg, bgkey, first, counts, lattice):
    """The steps of :mod:`.image_plain`'s chain for the call (a stack of
    images as its tall 2-D image), or None where the general chain serves
    it."""
    view = fixed_chain_view(shape, lattice)
    if view is None:
        return None
    shape, image_rows, lattice = view
    if image_plain.applies(shape, **lattice):
        return image_plain.steps(values, P, shape, connectivity, has_bg, bgkey, first=first,
                                 counts=counts, image_rows=image_rows)
    if image_plain.applies_lattice(shape, **lattice):
        if lattice.get("tolerance") is not None:
            has_bg, bgkey = tolerance_background(values.dtype, has_bg, bgkey,
                                                 lattice.get("tol_background"))
        return image_plain.lattice_steps(
            values, P, shape, connectivity, has_bg, bgkey,
            periodic=lattice.get("periodic", 0), mask=lattice.get("mask"),
            bonds=lattice.get("bonds"), bond_rows=lattice.get("bond_rows"),
            tolerance=lattice.get("tolerance"), first=first, counts=counts,
            image_rows=image_rows)
    return None
