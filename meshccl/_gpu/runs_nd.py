"""The ``runsnd`` chain: binary arrays of any number of axes under any
centrosymmetric neighbourhood, through ``_kernels/runsnd.cu`` (rows,
unions) and the pieces numbering of ``number_pieces.cu``.

It serves what the fixed-geometry run chains cannot name at compile time:
the structures of :func:`meshccl.ndimage.label` that no connectivity names
(in 3-D those that :mod:`.runs3d_structure`'s bricks do not take: grids
too large for its launch), and bool arrays of 4 or more axes (any
connectivity).  The neighbourhood
is data: :func:`step_table` turns the half offsets into one entry per
earlier row the structure reaches (rows back, the leading axes it steps
along, which of x - 1, x, x + 1 it touches), plus whether cells join along
the last axis.  ``runsnd_pairs.cuh`` explains the pairs.
"""

from __future__ import annotations

import functools

import numpy as np

from .. import _tuning
from .image_plain import (BLOCK, _cleared, _NO_SLOTS, _pieces_path, _run_label_pass,
                          scratch as _scratch)
from .launch import LABELS, VALUES, Launch
from .loader import c_type, kernels, settled

#: One row table entry as runsnd_pairs.cuh's ``Step`` lays it out (48 bytes).
STEP = np.dtype([("back", "<i8"), ("down", "<u4"), ("up", "<u4"), ("dx", "<u4"),
                 ("pad", "<u4"), ("cover", "<u8", (3,))])
#: Entries whose pairs may cover a later entry's (``COVERING`` in runsnd_pairs.cuh).
COVERING = 21


def step_table(shape, offsets):
    """``(xjoin, table)`` for a half neighbourhood ``offsets`` (steps that
    point to earlier cells, as :func:`meshccl.neighbourhood.structure_offsets`
    gives them) on an array of ``shape`` (no axis of length 1).

    ``xjoin``: the left neighbour (0, ..., 0, -1) is among the offsets.
    ``table``: a :data:`STEP` array, an entry per earlier row (steps over
    the leading axes, lexicographically negative) with ``back`` rows
    between them, ``down`` / ``up`` bit k where the step is -1 / +1 on
    leading axis k, ``dx`` bit dx + 1 for each step dx along the last
    axis the offsets take to that row, and ``cover[dx + 1]`` bit
    3 e' + dx' + 1 where the pair of an earlier entry e' (< ``COVERING``)
    and dx' reaches a neighbour (under the offsets) of this pair's
    partner; nearest rows first.

    Examples
    --------
    >>> xj, t = step_table((4, 5), ((-1, -1), (-1, 1)))
    >>> xj, t["back"].tolist(), t["dx"].tolist()
    (False, [1], [5])
    """
    shape = tuple(int(s) for s in shape)
    lead = len(shape) - 1
    if lead > 32:
        raise ValueError(f"the runsnd chain takes at most 33 axes, got shape {shape}")
    rstride = [int(np.prod(shape[k + 1:-1], dtype=np.int64)) for k in range(lead)]
    rows, xjoin = {}, False
    for d in offsets:
        head, dx = tuple(int(a) for a in d[:-1]), int(d[-1])
        if len(d) != len(shape) or not all(a in (-1, 0, 1) for a in d):
            raise ValueError(f"offset {tuple(d)} is not a step of a {len(shape)}-D array")
        if not any(head):
            if dx != -1:
                raise ValueError(f"offsets must point to earlier cells, got {tuple(d)}")
            xjoin = True
            continue
        rows[head] = rows.get(head, 0) | (1 << (dx + 1))
    entries = []
    for head, dxm in rows.items():
        back = -sum(a * s for a, s in zip(head, rstride))
        if back <= 0:
            raise ValueError(f"offsets must point to earlier cells, got {head}")
        entries.append((back, head, dxm))
    entries.sort(key=lambda e: e[0])  # (stable: rows at one distance keep their order)
    full = {tuple(int(a) for a in d) for d in offsets} | {tuple(-int(a) for a in d)
                                                          for d in offsets}
    table = np.zeros(len(entries), dtype=STEP)
    for e, (back, head, dxm) in enumerate(entries):
        cover = [0, 0, 0]
        for k in range(3):
            for f, (_, there, fdx) in enumerate(entries[:min(e, COVERING)]):
                for j in range(3):
                    diff = tuple(a - b for a, b in zip(head, there)) + (k - j,)
                    if (dxm >> k) & 1 and (fdx >> j) & 1 and diff in full:
                        cover[k] |= 1 << (3 * f + j)
        table[e] = (back, sum(1 << j for j, a in enumerate(head) if a < 0),
                    sum(1 << j for j, a in enumerate(head) if a > 0), dxm, 0, cover)
    return xjoin, table


def serves(prob) -> bool:
    """Whether ``prob`` takes this chain: binary values (bool input), no
    lattice feature, every axis labelled, and either an explicit
    neighbourhood (``meshccl.ndimage.label``'s structures) or 4 or more
    axes longer than 1."""
    return (prob.binary and not prob.periodic and prob.mask is None and prob.bonds is None
            and prob.tolerance is None and prob.label_axes is None and not prob.swapped
            and (prob.offsets is not None or len(prob.shape) >= 4))


def offsets_of(prob):
    """The half neighbourhood ``prob`` is labelled under."""
    from .. import neighbourhood

    if prob.offsets is not None:
        return tuple(prob.offsets)
    return neighbourhood.half_offsets(len(prob.shape), prob.connectivity)


def byte_type(prob) -> str:
    """The cell type this chain's and runs3d-structure's kernels read
    ``prob``'s bool bytes as: as they are (``unsigned char``; a cell is
    foreground where its byte is not the background byte, which at
    background 0 is every non-zero byte), or, at background 1,
    ``meshccl::flag8`` (lattice.cuh): each byte tested against 0 first,
    since a bool array may hold bytes other than 0 and 1, all True."""
    return "meshccl::flag8" if prob.has_bg and int(prob.bgkey) != 0 else "unsigned char"


@functools.lru_cache(maxsize=256)
def _device_table(device_id: int, shape: tuple, offsets: tuple):
    """(xjoin, steps, number of steps, leading axes' lengths) on the
    device, made once per device, shape and neighbourhood."""
    import cupy

    xjoin, table = step_table(shape, offsets)
    steps = cupy.asarray(table.view(np.uint8) if len(table) else np.zeros(STEP.itemsize,
                                                                           np.uint8))
    lead = np.asarray(shape[:-1] or (1,), dtype=np.int64)
    out = xjoin, steps, len(table), cupy.asarray(lead)
    return settled(out)


def scratch(n: int, index_dtype, shape):
    """The chain's temporary arrays: :func:`.image_plain.scratch`'s bit
    arrays, prefix sums and block sums, then F and S (one buffer, a word of
    each per 32 cells of a row)."""
    import cupy

    nx = int(shape[-1])
    words = (n // nx) * -(-nx // 32)
    return _scratch(n, index_dtype) + (cupy.empty(2 * words, dtype=cupy.uint32),)


def program(prob, buffers=None, counts=None):
    """The launches of the chain for ``prob`` as ``[(name, launch), ...]``
    (:class:`.launch.Launch` objects; the last returns N, a 0-d CuPy array).
    ``buffers``: :func:`scratch` arrays; ``counts``: a count table for the
    counted label pass (:data:`.launch.COUNTS`, as :func:`.image_plain.program`)."""
    import cupy

    shape, n = tuple(int(s) for s in prob.shape), prob.size
    work = np.dtype(prob.work_dtype)
    nx = shape[-1]
    rows, ntx = n // nx, -(-nx // 32)
    rw = rows * ntx
    if buffers is None or len(buffers) < 5 or buffers[4].size < 2 * rw:
        buffers = scratch(n, work, shape)
    bits, fs = buffers[0], buffers[4]
    words = (n + 31) // 32
    A, H = bits[:words], bits[words:2 * words]
    F, S = fs[:rw], fs[rw:2 * rw]
    i, I = c_type(work), work.type
    xjoin, steps, nsteps, lead = _device_table(cupy.cuda.Device().id, shape, offsets_of(prob))
    axes = min(len(shape), 4)
    rows_k, unions_k = kernels("runsnd.cu", f"meshccl_runsnd_rows<{byte_type(prob)}, {i}>",
                               f"meshccl_runsnd_unions<{i}, {_tuning.RUNSND_UNITE_BATCH[axes]}, "
                               f"{_tuning.RUNSND_COVER_SLOTS[axes]}>")
    aligned = nx % 32 == 0
    grid = (-(-rw // BLOCK),)
    xj = np.int32(xjoin)
    label_pass = _run_label_pass(work, "false", rw,
                                 (F, S, A, I(rows), I(nx), I(words)) + _NO_SLOTS,
                                 counts, prob.first, None)
    return _cleared(bits, aligned) + [
        ("rows", Launch(rows_k, grid, (BLOCK,),
                        (VALUES, LABELS, A, H, F, S, I(rows), I(nx), np.int32(bool(prob.has_bg)),
                         np.uint8(prob.bgkey), xj, np.int32(aligned)))),
        ("unions", Launch(unions_k, grid, (BLOCK,),
                          (LABELS, H, F, S, I(rows), I(nx), xj, steps, np.int32(nsteps), lead,
                           np.int32(len(shape) - 1)), early=False)),
    ] + _pieces_path(work, n, buffers, label_pass, 1, prob.first, counts)
