"""The ``runs3d-structure`` chain: 3-D bool arrays under a structure of
:func:`meshccl.ndimage.label` that no connectivity names, through
``_kernels/runs3d_structure.cu`` (tile, faces) and the pieces numbering of
``number_pieces.cu``.

runs3d.cu's bricks (a warp per plane of 32 x 32 cells, one forest per brick
in shared memory) with the neighbourhood as a 13-bit mask of the
structure's half offsets (:func:`structure_bits`) and, for the pairs that
leave a brick, the row table of :mod:`.runs_nd` (:func:`.runs_nd.step_table`).
"""

from __future__ import annotations

import numpy as np

from . import image_plain, runs_nd
from .image_plain import BLOCK, _cleared, _NO_SLOTS, _pieces_path, _run_label_pass
from .launch import LABELS, VALUES, Launch
from .loader import c_type, kernels
from .. import _tuning


def structure_bits(offsets) -> int:
    """The 13-bit mask of a 3-D half neighbourhood ``offsets`` (steps to
    earlier cells, as :func:`meshccl.neighbourhood.structure_offsets` gives
    them) that runs3d_structure.cu reads: bit 3 (dy + 1) + dx + 1 for (-1,
    dy, dx), bit 10 + dx for (0, -1, dx), bit 12 for (0, 0, -1).

    Examples
    --------
    >>> structure_bits(((-1, 0, 0), (0, -1, 0), (0, 0, -1)))
    5136
    """
    bits = 0
    for d in offsets:
        dz, dy, dx = (int(a) for a in d)
        if len(d) != 3 or not all(a in (-1, 0, 1) for a in (dz, dy, dx)):
            raise ValueError(f"offset {tuple(d)} is not a step of a 3-D array")
        if dz == -1:
            bits |= 1 << (3 * (dy + 1) + dx + 1)
        elif dz == 0 and dy == -1:
            bits |= 1 << (10 + dx)
        elif (dz, dy, dx) == (0, 0, -1):
            bits |= 1 << 12
        else:
            raise ValueError(f"offsets must point to earlier cells, got {tuple(d)}")
    return bits


def serves(prob) -> bool:
    """Whether ``prob`` takes this chain: what :func:`.runs_nd.serves` takes
    with an explicit neighbourhood, on exactly 3 axes (longer than 1) whose
    grid of bricks fits a launch."""
    return (runs_nd.serves(prob) and prob.offsets is not None and len(prob.shape) == 3
            and fits(prob.shape))


def fits(shape) -> bool:
    """Whether a volume of ``shape`` (3 axes longer than 1) has a grid of
    bricks that fits a launch."""
    nz, ny, _ = (int(n) for n in shape)
    return -(-ny // 32) <= 65535 and -(-nz // _tuning.RUNS3D_STRUCTURE_PLANES) <= 65535


def scratch(n: int, index_dtype, shape):
    """The chain's temporary arrays: :func:`.image_plain.scratch`'s (the bit
    arrays, prefix sums, F and S of every tile row)."""
    return image_plain.scratch(n, index_dtype, shape, slots=False)


def program(prob, buffers=None, counts=None):
    """The launches of the chain for ``prob`` as ``[(name, launch), ...]``
    (:class:`.launch.Launch` objects; the last returns N, a 0-d CuPy array).
    ``buffers``: :func:`scratch` arrays; ``counts``: a count table for the
    counted label pass (:data:`.launch.COUNTS`, as :func:`.image_plain.program`)."""
    import cupy

    shape, n = tuple(int(s) for s in prob.shape), prob.size
    nz, ny, nx = shape
    work = np.dtype(prob.work_dtype)
    ntx, nty = -(-nx // 32), -(-ny // 32)
    rw = ntx * ny * nz
    if buffers is None or len(buffers) < 5 or buffers[4].size < 2 * rw:
        buffers = scratch(n, work, shape)
    bits, A, H, F, S = image_plain._run_arrays(buffers, n, shape)
    i, I = c_type(work), work.type
    offsets = runs_nd.offsets_of(prob)
    st = np.uint32(structure_bits(offsets))
    _, steps, nsteps, _ = runs_nd._device_table(cupy.cuda.Device().id, shape, offsets)
    nzb = _tuning.RUNS3D_STRUCTURE_PLANES
    tile, faces = kernels("runs3d_structure.cu",
                          f"meshccl_runs3d_structure_tile<{runs_nd.byte_type(prob)}, {i}, "
                          f"{nzb}>",
                          f"meshccl_runs3d_structure_faces<{i}, {nzb}, "
                          f"{'true' if _tuning.RUNS3D_STRUCTURE_FACE_COVERS else 'false'}>")
    aligned = nx % 32 == 0
    shared = nzb * (32 * 33 + 32) * 4  # the forest and run starts of each plane
    if shared > 48 * 1024 and tile.max_dynamic_shared_size_bytes < shared:
        tile.max_dynamic_shared_size_bytes = shared
    dims = (I(nz), I(ny), I(nx))
    label_pass = _run_label_pass(work, "false", rw,
                                 (F, S, A, I(nz * ny), I(nx), I(A.size)) + _NO_SLOTS,
                                 counts, prob.first, None)
    return _cleared(bits, aligned) + [
        ("tile", Launch(tile, (ntx, nty, -(-nz // nzb)), (32 * nzb,),
                        (VALUES, LABELS, A, H, F, S) + dims
                        + (np.int32(bool(prob.has_bg)), np.uint8(prob.bgkey), st,
                           np.int32(aligned)), shared_mem=shared)),
        ("faces", Launch(faces, (-(-rw // BLOCK),), (BLOCK,),
                         (LABELS, H, F, S) + dims + (st, steps, np.int32(nsteps)),
                         early=False)),
    ] + _pieces_path(work, n, buffers, label_pass, 1, prob.first, counts)
