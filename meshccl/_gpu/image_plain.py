"""The fixed-geometry chains on the GPU: 1-D, 2-D and 3-D arrays.

Most calls label an ordinary image or volume.  For those the geometry is
fixed at compile time, and this module works out the launches of each
fixed-geometry chain of :data:`meshccl._gpu.chains.TABLE` (which chain
serves which call is decided there, in :func:`.chains.select`):

- plain 1-D and 2-D arrays (and stacks of them): ``runs2d.cu`` tile and
  border kernels, then the numbering of ``number_pieces.cu`` (roots,
  pieces, runs);
- plain 3-D arrays of any dtype: ``runs3d.cu`` tile, seams and z-face
  kernels, then the same numbering;
- with a mask, bonds or a tolerance, the lattice forms: ``runs2d.cu``'s
  lattice tile and border kernels (1-D, 2-D), ``runs3d.cu``'s lattice
  tile, seam and z-face kernels (3-D, any cell type).

Periodic axes add only pairs that wrap around, so they add a wrap kernel
(``runs2d.cu``'s, or ``wrap3d.cu``) before the numbering
(:func:`lattice_program`).  A stack of 1-D or 2-D images (``axes`` naming
the last one or two axes, :func:`stack_view`) is one tall 2-D image with
the image height as ``image_rows``: the 2-D kernels join no pair across an
image's top row.  Where rows are not 32-cell aligned, a memset of the bit
arrays comes first (``clear``).  :func:`program` and
:func:`lattice_program` give the launches once per shape and dtype (launch
plans keep them, :mod:`.plan`).  With a count table
(``label(..., return_counts=True)``) every chain here takes one more
kernel after the roots kernel, meshccl_clear_counts, and the ``_counted``
form of its label pass; the table is made once the roots kernel has
found N (:func:`.chains.label`), so it has N + 1 rows, not n + 1.  The tuning constants read here are in
:mod:`meshccl._tuning`.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import _tuning
from .launch import BONDS, LABELS, MASK, VALUES, Launch, Memset, tolerance_arg
from .loader import c_type, kernels, settled

#: Words per block of meshccl_piece_roots (MESHCCL_PIECE_BLOCK in numbering.cuh).
PIECE_BLOCK = 1024
#: Threads per block of the label passes (their __launch_bounds__).
BLOCK = 256
#: Blocks of meshccl_clear_counts (a grid-stride loop over rows 0..N of
#: the count table): enough to fill an H100 / H200 several times over.
CLEAR_BLOCKS = 1024
#: Warps (tiles of 32 x 32) per block of meshccl_runs2d_tile: the
#: instantiation in runs2d.cu; with strips of 8 tiles the border kernel
#: takes 8 tiles a block.  Images narrower than 8 tiles take blocks of as
#: 2 warps (:func:`runs2d_warps`).
RUNS_2D_WARPS = 8


def runs2d_warps(ntx: int) -> int:
    """Warps per block of the plain 2-D tile kernel for an image ``ntx``
    tiles wide: 8, or 2 for images of 1 to 7 tiles across -- a block of 8
    warps there holds 8 warps' shared memory for 1 to 7 live ones, and tall
    narrow images ran at a few blocks per multiprocessor (docs/decisions.md:
    "narrow images")."""
    return RUNS_2D_WARPS if ntx >= RUNS_2D_WARPS else 2
_MAX_GRID_YZ = 65535

def _dims(shape):
    """(D, nz, ny, nx) of a squeezed shape of 1 to 3 axes."""
    if len(shape) == 3:
        return 3, shape[0], shape[1], shape[2]
    if len(shape) == 2:
        return 2, 1, shape[0], shape[1]
    return 2, 1, 1, shape[0]


def stack_view(shape, label_axes, periodic=0):
    """A stack of images as the 2-D chains take it, or None.

    ``shape``: a squeezed shape; ``label_axes``: bit k, axis k is labelled
    (None: all); ``periodic``: bit k, axis k wraps.  When the labelled axes
    are the last two (a stack of 2-D images of ``ny x nx``) or the last one
    (1-D images of ``nx``) and there are others, returns ``(rows, nx)``,
    ``image_rows`` (``ny``, or 1) and the periodic bits of that 2-D shape
    (bit 0: each image's rows wrap, bit 1: its columns): the stack's cells
    in the same order, so raster order and flat indices are the stack's.
    """
    n = len(shape)
    if label_axes is None or label_axes == (1 << n) - 1 or n < 2:
        return None
    if label_axes == 3 << (n - 2):
        image_rows, wrap = int(shape[-2]), (periodic >> (n - 2)) & 3
    elif label_axes == 1 << (n - 1):
        image_rows, wrap = 1, ((periodic >> (n - 1)) & 1) << 1
    else:
        return None
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    return (rows, int(shape[-1])), image_rows, wrap


def fits(shape) -> bool:
    """True when the chains here can take an array of this squeezed shape:
    1 to 3 axes, whose grid of tiles fits a launch (at most 65535 blocks
    along y and z: 32 rows a tile, and in 3-D the fewest planes a block of
    runs3d.cu's kernels takes).  Which chain, if any, serves a call is
    decided by :func:`meshccl._gpu.chains.select`."""
    if not 1 <= len(shape) <= 3:
        return False
    d, nz, ny, nx = _dims(shape)
    if -(-ny // 32) > _MAX_GRID_YZ:
        return False
    planes = min(min(_tuning.RUNS_3D_PLANES.values()), min(_tuning.RUNS_SEAM_PLANES.values()))
    return d == 2 or -(-nz // planes) <= _MAX_GRID_YZ


def _runs_words(shape) -> int:
    """Words of each of the run kernels' bit arrays F and S: one per tile row
    (a row of 32 cells of one plane)."""
    _, nz, ny, nx = _dims(tuple(int(s) for s in shape))
    return -(-nx // 32) * ny * nz


def _run_arrays(buffers, n: int, shape):
    """The run chain's views of :func:`scratch`'s buffers: the whole bit
    buffer, A and H (a bit a cell: run starts' piece roots, hooked roots)
    and F and S (a word a tile row: foreground, run starts)."""
    bits, fs = buffers[0], buffers[4]
    words = (n + 31) // 32
    rw = _runs_words(shape)
    return bits, bits[:words], bits[words:2 * words], fs[:rw], fs[rw:2 * rw]


def scratch(n: int, index_dtype, shape=None, slots=True):
    """The chain's temporary arrays: the bit arrays A and H and, after them,
    the ticket counter of meshccl_piece_roots and the tally of
    :func:`program`'s ``report`` (one buffer; both start at 0 and each call
    leaves them so), the per-word prefix sums within blocks and the block
    sums (with their scan): 3n/8 bytes for int32 labels, plus a few per
    32768 cells.  With a ``shape``, also the run kernels' bit arrays F and S
    (one buffer, about n/4 bytes), and in 2-D with ``slots`` the tiles' slots and each tile row's
    first slot (about 0.8 bytes a cell: only a plain chain's form with slots
    reads them, :func:`program`'s ``slot_tiles``)."""
    import cupy

    words = (n + 31) // 32
    blocks = -(-words // PIECE_BLOCK)
    bits = cupy.empty(2 * words + 2, dtype=cupy.uint32)
    bits[2 * words:] = 0  # the counter, and the 2-D tile kernel's tally of tiles with slots
    out = (bits, cupy.empty(words, dtype=index_dtype),
           cupy.empty(blocks, dtype=index_dtype), cupy.empty(blocks, dtype=index_dtype))
    if shape is not None:
        d, _, ny, nx = _dims(tuple(int(s) for s in shape))
        out += (cupy.empty(2 * _runs_words(shape), dtype=cupy.uint32),)
        if d == 2 and slots and _tuning.RUNS_2D_SLOTS:  # the tiles' slots, each tile row's first
            ntx, nty = -(-nx // 32), -(-ny // 32)
            out += (cupy.empty(ntx * nty * _tuning.RUNS_2D_SLOTS, dtype=index_dtype),
                    cupy.empty(ntx * ny, dtype=cupy.uint16))
    return out


def chooses_slots(shape) -> bool:
    """True when a call of this shape takes runs2d.cu with slots, so that
    :func:`program` can be asked for either tile kernel (``slot_tiles``)."""
    return bool(_tuning.RUNS_2D_SLOTS) and _dims(tuple(int(s) for s in shape))[0] == 2


def slots_threshold(shape, connectivity) -> int:
    """The fewest tiles that must have fitted their run starts in their slots
    on a call for a launch plan's next call to take the tile kernel with
    slots (``_tuning.RUNS_2D_SLOTS_SHARE`` of the tiles, rounded up; 2**32,
    never, where the share is above 1).  A plan's count starts at
    0xFFFFFFFF (no call has written it yet): slots, unless never."""
    d, _, ny, nx = _dims(tuple(int(s) for s in shape))
    share = _tuning.RUNS_2D_SLOTS_SHARE[min(int(connectivity), d) if len(shape) > 1 else 1]
    if share > 1:
        return 1 << 32
    return math.ceil(share * (-(-nx // 32) * -(-ny // 32)))


def program(value_dtype, index_dtype, n, shape, connectivity, has_bg, bgkey, buffers=None,
            slot_tiles=True, report=None, counts=None, first=False, image_rows=None,
            stats=None):
    """The launches of the plain path for arrays of one shape and dtype, as
    ``[(name, launch), ...]`` where ``launch(values, P)`` runs one kernel on
    flat CuPy ``values`` and int32/int64 output ``P`` of ``n`` cells; the
    last returns N (a 0-d CuPy array, no host synchronisation).  Each launch
    is a :class:`.launch.Launch` (or a :class:`.launch.Memset`), which a
    launch plan packs for the driver once.

    ``shape``: the squeezed shape (1 to 3 axes, see :func:`fits`).
    ``buffers``: arrays from :func:`scratch` to use (else new ones).
    ``slot_tiles``: plain 2-D images (:func:`chooses_slots`) take the
    kernels with slots, else every kernel of the chain in its form without
    them; same labels.  ``report``: the address of a 32-bit word of pinned
    host memory where the border kernel writes how many tiles fitted their
    run starts in their slots, for a launch plan's choice of ``slot_tiles``
    (:func:`slots_threshold`); None: not counted.  ``counts``: None, or
    :data:`.launch.COUNTS`, the place of the call's table of cells per
    label (N + 1 int64 rows, made once the roots kernel has found N, and
    passed to the launches after it): meshccl_clear_counts zeroes its rows
    0..N after the roots kernel, and the label pass (meshccl_label_runs)
    takes its ``_counted`` form, which fills them.
    ``first``: first-cell labels (each component's root index + 1,
    ``label(..., numbering='first-cell')``): the ``_first`` forms of the
    piece and cell label kernels; not with ``counts``.  ``image_rows``: a
    2-D ``shape`` is a stack of images of so many rows (:func:`stack_view`),
    None: one image.  ``stats``: a :class:`.measure.LabelPassTable`: the
    run label pass takes its ``_stats`` form, which fills that table (run
    chains only; not with ``counts`` or ``first``).
    """
    index_dtype = np.dtype(index_dtype)
    d = _dims(tuple(int(s) for s in shape))[0]
    c = min(int(connectivity), d) if len(shape) > 1 else 1
    if image_rows is not None and len(shape) != 2:
        raise ValueError(f"image_rows needs a 2-D shape, got {tuple(shape)}")
    return _program_runs(value_dtype, index_dtype, n, shape, c, has_bg, bgkey, buffers,
                         slot_tiles, report, counts, first, image_rows, stats)


def _counted(counts, first=False):
    """(kernel name suffix, trailing arguments) of the label pass's form."""
    if counts is not None and first:
        raise ValueError("first-cell labels are not counted (counts need 1..N)")
    return ("_counted", (counts,)) if counts is not None else ("_first" if first else "", ())


#: The run label pass's last arguments when it reads no slotted tiles.
_NO_SLOTS = (np.uintp(0), np.uintp(0), np.int32(0))


def _run_label_pass(index_dtype, sl, rw, tail, counts, first, stats):
    """The run label pass (meshccl_label_runs and its forms) over ``rw``
    tile rows of labels of ``index_dtype`` (its rows per lane group and
    cells per lane: RUNS_LABEL_ROWS and RUNS_LABEL_CELLS of that size), its
    arguments after the labels ``tail``."""
    index_dtype = np.dtype(index_dtype)
    i = c_type(index_dtype)
    rows = _tuning.RUNS_LABEL_ROWS[index_dtype.itemsize]  # tile rows per lane group
    per_lane = _tuning.RUNS_LABEL_CELLS[index_dtype.itemsize]
    if stats is not None:
        if counts is not None or first:
            raise ValueError("the statistics label pass numbers 1..N and counts by itself")
        k, = kernels("number_pieces.cu", f"meshccl_label_runs_stats<{i}, {rows}, {per_lane}, {sl}>")
        threads = (32 // per_lane) * -(-rw // rows)
        return Launch(k, stats.grid(threads), (BLOCK,), (LABELS,) + tail + (stats.desc,),
                      shared_mem=stats.shared)
    form, count_arg = _counted(counts, first)
    form = "" if first else form  # (the run label pass copies the piece roots' labels)
    k, = kernels("number_pieces.cu", f"meshccl_label_runs{form}<{i}, {rows}, {per_lane}, {sl}>")
    grid = (-(-(32 // per_lane) * -(-rw // rows) // BLOCK),)  # 32 / per_lane lanes a group
    return Launch(k, grid, (BLOCK,), (LABELS,) + tail + count_arg)


def _cleared(bits, aligned):
    """A launch that zeroes the bit arrays A and H, where the tile kernel
    ORs its rows in (rows not 32-cell aligned); else none."""
    return [] if aligned else [("clear", Memset(bits))]


def _pieces_path(index_dtype, n, buffers, cells, wpt=1, first=False, counts=None):
    """The launches after the border kernels (number_pieces.cu):
    meshccl_piece_roots (the hooked roots' walks and the roots' prefix
    sums), then meshccl_label_pieces (every piece root's label) and
    ``cells`` (the run label pass), the last launch, which returns N.
    ``wpt``: words per thread of the two piece kernels; ``first``:
    meshccl_label_pieces_first (first-cell labels); ``counts``: the count
    table of a counted label pass, whose rows 0..N meshccl_clear_counts
    zeroes right after the roots kernel."""
    i = c_type(index_dtype)
    form = "_first" if first else ""
    roots_k, pieces_k = kernels("number_pieces.cu", f"meshccl_piece_roots<{i}, {wpt}>",
                                f"meshccl_label_pieces{form}<{i}, {wpt}>")
    bits, incl, sums, block_incl = buffers[:4]
    words = (n + 31) // 32
    A, H, counter = bits[:words], bits[words:2 * words], bits[2 * words:]
    blocks = -(-words // PIECE_BLOCK)
    I = np.dtype(index_dtype).type
    roots_args = (A, H, I(words), incl, sums, block_incl, counter)
    pieces = Launch(pieces_k, (-(-words // (BLOCK * wpt)),), (BLOCK,),
                    (LABELS, A, H, incl, block_incl, I(words)))
    cells.result = block_incl[blocks - 1]  # N, no host synchronisation
    tail = [("pieces", pieces), ("cells", cells)]
    if counts is not None:
        clear_k, = kernels("number_pieces.cu", f"meshccl_clear_counts<{i}>")
        clear_grid = (min(CLEAR_BLOCKS, -(-(n + 1) // BLOCK)),)
        tail = [("clear counts", Launch(clear_k, clear_grid, (BLOCK,),
                                        (counts, block_incl[blocks - 1:blocks])))] + tail
    return [("roots", Launch(roots_k, (blocks,), (PIECE_BLOCK // wpt,),
                             (LABELS,) + roots_args))] + tail


def cell_type(value_dtype) -> str:
    """The run kernels' template spelling of a cell type: bool input as
    ``meshccl::flag8`` (lattice.cuh), whose bytes the kernels read as
    given, every non-zero byte True (a bool array may hold bytes other
    than 0 and 1), so the chains need no 0 / 1 copy of it."""
    return "meshccl::flag8" if np.dtype(value_dtype) == np.bool_ else c_type(value_dtype)


def _program_runs(value_dtype, index_dtype, n, shape, c, has_bg, bgkey, buffers, slot_tiles,
                  report, counts=None, first=False, image_rows=None, stats=None):
    """:func:`program` through the run-based tile kernels: runs2d.cu (1-D and
    2-D, ``image_rows`` rows per image of a stack) or runs3d.cu with its
    z-face and seam kernels (3-D), then the pieces numbering with
    meshccl_label_runs, which sees a volume as nz * ny rows."""
    index_dtype = np.dtype(index_dtype)
    d, nz, ny, nx = _dims(tuple(int(s) for s in shape))
    t, i = cell_type(value_dtype), c_type(index_dtype)
    slots = _tuning.RUNS_2D_SLOTS if d == 2 else 0
    # every kernel of the chain with slots or every one without (3-D: none)
    sl = "true" if (slots and slot_tiles) else "false"
    need = -(-nx // 32) * -(-ny // 32) * slots  # (buffers made under another slot count)
    if (buffers is None or len(buffers) < (7 if sl == "true" else 5)
            or (sl == "true" and buffers[5].size < need)):
        buffers = scratch(n, index_dtype, shape, slots=sl == "true")
    bits, A, H, F, S = _run_arrays(buffers, n, shape)
    I = index_dtype.type
    ntx, nty = -(-nx // 32), -(-ny // 32)
    aligned = nx % 32 == 0
    key = (np.int32(bool(has_bg)), bgkey)
    # (the slots' arrays and their size; without slots the tile kernel only
    # counts the tiles whose run starts would fit: their size, null pointers)
    slotted = (buffers[5], buffers[6], np.int32(slots)) if sl == "true" else \
        (np.uintp(0), np.uintp(0), np.int32(slots))
    # the later kernels' view: none when the tile kernel has no slots
    read = slotted if slot_tiles else _NO_SLOTS
    # the tile kernel's tally of tiles that fit their slots, and where the
    # border kernel reports it (or null pointers: not counted)
    counted = (bits[2 * A.size + 1:], np.uintp(report)) if (slots and report) else \
        (np.uintp(0), np.uintp(0))
    if d == 2:
        nw = runs2d_warps(ntx)
        # (one NVRTC module for both forms: a launch plan asks for both)
        names = [f"meshccl_runs2d_tile<{t}, {i}, {c}, {nw}, {f}>" for f in ("true", "false")] \
            + [f"meshccl_runs2d_border<{t}, {i}, {c}, {f}>" for f in ("true", "false")]
        found = dict(zip(names, kernels("runs2d.cu", *names)))
        tile = found[f"meshccl_runs2d_tile<{t}, {i}, {c}, {nw}, {sl}>"]
        border = found[f"meshccl_runs2d_border<{t}, {i}, {c}, {sl}>"]
        img = I(ny if image_rows is None else image_rows)
        tile_args = ((-(-ntx // nw), nty), (32 * nw,), (A, H, F, S, I(ny), I(nx), img) + key
                     + (np.int32(aligned), np.int32(_tuning.RUNS_PREFETCH[(2, c)]))
                     + slotted + counted[:1])
        # the border kernel: 8 tiles a block, a warp for each one's top row
        # and one for the strip's left border
        border_args = ((-(-ntx // nw), nty), (32 * (nw + 1),),
                       (H, S, I(ny), I(nx), img) + key + (np.int32(nw),) + read + counted)
        zface_args, tile_shared = None, 0
    else:
        nzb = _tuning.RUNS_3D_PLANES[c]
        nwz, nst = _tuning.RUNS_ZFACE_WARPS, _tuning.RUNS_SEAM_TILES
        # (one NVRTC module per list of names: the three together)
        pf = int(_tuning.RUNS_PREFETCH[(3, c)])
        tile, zface, seams = kernels("runs3d.cu",
                                     f"meshccl_runs3d_tile<{t}, {i}, {c}, {nzb}, {pf}>",
                                     f"meshccl_runs3d_zface<{t}, {i}, {c}, {nzb}, {nwz}>",
                                     f"meshccl_runs3d_seams<{t}, {i}, {c}, {nzb}, {nst}>")
        dims = (I(nz), I(ny), I(nx)) + key
        grid = (ntx, nty, -(-nz // nzb))
        tile_args = (grid, (32 * nzb,), (A, H, F, S) + dims + (np.int32(aligned),))
        # the forest and run starts (runs3d.cu); wider cells also each
        # plane's F and V rows, which the warp on the plane above reads
        tile_shared = nzb * (32 * 33 + (32 if np.dtype(value_dtype).itemsize == 1 else 3 * 32)) * 4
        if tile_shared > 48 * 1024 and tile.max_dynamic_shared_size_bytes < tile_shared:
            tile.max_dynamic_shared_size_bytes = tile_shared
        border = seams
        walk = _tuning.RUNS_SEAM_PLANES[c]
        border_args = ((-(-ntx // nst), nty, -(-nz // walk)), (64 * nst,),
                       (H, S) + dims + (I(walk),))
        zface_args = ((-(-ntx // nwz), nty, grid[2] - 1), (32 * nwz,), (H,) + dims)
    label_pass = _run_label_pass(index_dtype, sl, F.size,
                                 (F, S, A, I(F.size // ntx), I(nx), I(A.size)) + read, counts, first,
                                 stats)
    faces = [("border", Launch(border, border_args[0], border_args[1],
                               (VALUES, LABELS) + border_args[2], early=False))]
    if zface_args is not None and zface_args[0][2] > 0:  # a brick below another
        faces.append(("zface", Launch(zface, zface_args[0], zface_args[1],
                                      (VALUES, LABELS) + zface_args[2], early=False)))
    return _cleared(bits, aligned) + [
        ("tile", Launch(tile, tile_args[0], tile_args[1], (VALUES, LABELS) + tile_args[2],
                        shared_mem=tile_shared)),
    ] + faces + _pieces_path(index_dtype, n, buffers, label_pass,
                             _tuning.PIECE_WORDS if sl == "true" else 1, first, counts)


def packed_program(index_dtype, n, shape, connectivity, flip, buffers=None, counts=None,
                   first=False):
    """The launches of the packed chain (``runs2d-packed``): a phase of
    packed Ising spins (:class:`meshccl._validate.PackedSpins`, their words
    as the chain's values) on its torus, as :func:`lattice_program` labels
    the phase's bool image with every axis periodic -- the plain 2-D chain
    without slots and the wrap kernel -- with runs2d.cu's packed tile,
    border and wrap kernels, which read the words (packed_spins.cuh).
    ``flip``: 0 labels the +1 spins, 1 the -1 spins; ``counts``, ``first``:
    as in :func:`program`."""
    index_dtype = np.dtype(index_dtype)
    _, _, ny, nx = _dims(tuple(int(s) for s in shape))
    c = min(int(connectivity), 2)
    i = c_type(index_dtype)
    I = index_dtype.type
    ntx, nty = -(-nx // 32), -(-ny // 32)
    nw = runs2d_warps(ntx)
    tile, border, wrap = kernels("runs2d.cu", f"meshccl_runs2d_packed_tile<{i}, {c}, {nw}>",
                                 f"meshccl_runs2d_packed_border<{i}, {c}>",
                                 f"meshccl_runs2d_packed_wrap<{i}, {c}>")
    if buffers is None:
        buffers = scratch(n, index_dtype, shape, slots=False)
    bits, A, H, F, S = _run_arrays(buffers, n, shape)
    aligned = nx % 32 == 0
    cells = (I(ny), I(nx), I(ntx), np.int32(flip))  # (ntx: the words of a colour's row)
    label_pass = _run_label_pass(index_dtype, "false", F.size,
                                 (F, S, A, I(F.size // ntx), I(nx), I(A.size)) + _NO_SLOTS,
                                 counts, first, None)
    faces = nx + 2 * ny  # the first row, the first and last columns: the wrap kernel's threads
    return _cleared(bits, aligned) + [
        ("tile", Launch(tile, (-(-ntx // nw), nty), (32 * nw,),
                        (VALUES, LABELS, A, H, F, S) + cells
                        + (np.int32(aligned), np.int32(_tuning.RUNS_PREFETCH[(2, c)])))),
        ("border", Launch(border, (-(-ntx // nw), nty), (32 * (nw + 1),),
                          (VALUES, LABELS, H, S) + cells + (np.int32(nw),), early=False)),
        ("wrap", Launch(wrap, (-(-faces // BLOCK),), (BLOCK,),
                        (VALUES, LABELS, H, S) + cells + (np.int32(1), np.int32(1)),
                        early=False)),
    ] + _pieces_path(index_dtype, n, buffers, label_pass, 1, first, counts)


#: the steps of a 3-D cell's neighbourhood in the order runs3d.cu's lattice
#: kernels and wrap3d.cu index their bond planes (lattice.cuh,
#: BoxFeatures: (dz + 1) * 9 + (dy + 1) * 3 + (dx + 1))
_BOX_STEPS = tuple((dz, dy, dx) for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1))


def box_planes(c: int, bond_rows) -> np.ndarray:
    """The bond plane of each step of a 3-D cell's neighbourhood, in
    :data:`_BOX_STEPS` order (27 int32, -1 where the step is no offset of
    the half neighbourhood); ``bond_rows`` as the validation gives them
    (:func:`meshccl.neighbourhood.bond_rows`)."""
    from ..neighbourhood import bond_planes

    return bond_planes(_BOX_STEPS, 3, c, bond_rows)


@functools.lru_cache(maxsize=64)
def _box_planes(device_id: int, c: int, bond_rows: tuple):
    """:func:`box_planes` on the device (kept per device and rows)."""
    import cupy

    out = cupy.asarray(box_planes(c, bond_rows))
    return settled(out)


def _box_features(value_dtype, n, c, mask, bonds, bond_rows, tolerance):
    """The lattice arguments of runs3d.cu's lattice kernels and wrap3d.cu
    (``MESHCCL_BOX_FEATURES``), with :data:`.launch.MASK` and
    :data:`.launch.BONDS` where the call has them (else null pointers)."""
    null = np.uintp(0)
    planes = null
    if bonds:
        import cupy

        rows = tuple(int(r) for r in np.asarray(bond_rows).reshape(-1))
        planes = _box_planes(cupy.cuda.Device().id, c, rows)
    return (MASK if mask else null, BONDS if bonds else null, np.int64(n), planes,
            tolerance_arg(value_dtype, tolerance))


#: the earlier neighbours of a 2-D cell in the order runs2d.cu's lattice
#: kernels take their bond planes: up, left, up-left, up-right
_RUNS2D_STEPS = ((-1, 0), (0, -1), (-1, -1), (-1, 1))


def _bond_planes(ndim, c, bond_rows):
    """The bond plane of each of a 2-D cell's earlier neighbours (up, left,
    up-left, up-right; -1: none); a 1-D array's one neighbour is the left
    one."""
    from ..neighbourhood import bond_planes

    if bond_rows is None:
        return (-1, -1, -1, -1)
    # (in 1-D only the left step exists; (0,), no step at all, has no plane)
    steps = _RUNS2D_STEPS if ndim == 2 else [s[1:] if s[0] == 0 else (0,) for s in _RUNS2D_STEPS]
    return tuple(int(p) for p in bond_planes(steps, ndim, c, bond_rows))


def lattice_program(value_dtype, index_dtype, n, shape, connectivity, has_bg, bgkey, *,
                    periodic=0, mask=False, bonds=False, bond_rows=None, tolerance=None,
                    buffers=None, first=False, counts=None, image_rows=None, stats=None):
    """The launches of the lattice form of the 2-D chain, as :func:`program`
    gives them, with the placeholders :data:`.launch.MASK` and
    :data:`.launch.BONDS` where the call's mask and bonds go (``mask`` /
    ``bonds``: whether the call has them; ``bond_rows`` as the general
    chain takes it).  ``has_bg`` and ``bgkey``: with a tolerance, as
    the validation gives them (``Problem.bgkey``: keys in the joining
    rule's type).  ``periodic``: bit k, axis k of ``shape`` wraps.
    ``first``: first-cell labels, ``counts``: a count table, ``stats``
    (1-D and 2-D) a statistics table, and ``image_rows`` (a stack of images, 2-D ``shape``; bit 0 of ``periodic``
    then wraps each image's rows), as in
    :func:`program`.

    Periodic axes alone change no pair inside the array: the plain chain
    (without slots, whose run starts hold their piece roots) and the wrap
    kernel.  A mask, bonds or a tolerance: the lattice tile and border
    kernels (runs2d.cu for 1-D and 2-D; for 3-D runs3d.cu's lattice tile,
    seam and z-face kernels) and the wrap kernel where axes wrap."""
    index_dtype = np.dtype(index_dtype)
    ndim = len(shape)
    if image_rows is not None and ndim != 2:
        raise ValueError(f"image_rows needs a 2-D shape, got {tuple(shape)}")
    if ndim == 3:
        return _lattice_3d(value_dtype, index_dtype, n, shape, connectivity, has_bg, bgkey,
                           periodic, mask, bonds, bond_rows, tolerance, buffers, first, counts,
                           stats)
    _, _, ny, nx = _dims(tuple(int(s) for s in shape))
    c = min(int(connectivity), 2) if ndim > 1 else 1
    t, i = cell_type(value_dtype), c_type(index_dtype)
    tol = "true" if tolerance is not None else "false"
    I = index_dtype.type
    null = np.uintp(0)
    features = (MASK if mask else null, BONDS if bonds else null, np.int64(n)) \
        + tuple(np.int32(b) for b in _bond_planes(ndim, c, bond_rows if bonds else None)) \
        + (tolerance_arg(value_dtype, tolerance),)
    key = (np.int32(bool(has_bg)), bgkey)
    wrap_y = bool(periodic & 1) if ndim == 2 else False
    wrap_x = bool(periodic >> (ndim - 1) & 1)
    plain = not (mask or bonds or tolerance is not None)
    if buffers is None:
        buffers = scratch(n, index_dtype, shape, slots=False)
    bits, A, H, F, S = _run_arrays(buffers, n, shape)
    img = I(ny if image_rows is None else image_rows)
    names = [f"meshccl_runs2d_wrap<{t}, {i}, {c}, {tol}>"]
    if not plain:
        names += [f"meshccl_runs2d_lattice_tile<{t}, {i}, {c}, {tol}>",
                  f"meshccl_runs2d_lattice_border<{t}, {i}, {c}, {tol}>"]
    found = kernels("runs2d.cu", *names)
    # (the images' first rows where rows wrap, the first and last columns
    # where columns do: the wrap kernel's threads)
    faces = (ny // int(img) * nx if wrap_y else 0) + (2 * ny if wrap_x else 0)
    wrap = [("wrap", Launch(found[0], (-(-faces // BLOCK),), (BLOCK,),
                            (VALUES, LABELS, H, S, I(ny), I(nx), img) + key
                            + (np.int32(wrap_y), np.int32(wrap_x)) + features,
                            early=False))] if (wrap_y or wrap_x) else []
    if plain:
        prog = _program_runs(value_dtype, index_dtype, n, shape, c, has_bg, bgkey, buffers,
                             False, None, counts, first, image_rows=image_rows, stats=stats)
        at = [name for name, _ in prog].index("border") + 1
        return prog[:at] + wrap + prog[at:]
    ntx, nty = -(-nx // 32), -(-ny // 32)
    aligned = nx % 32 == 0
    nw = RUNS_2D_WARPS
    prog = _cleared(bits, aligned) + [
        ("tile", Launch(found[1], (-(-ntx // nw), nty), (32 * nw,),
                        (VALUES, LABELS, A, H, F, S, I(ny), I(nx), img) + key
                        + (np.int32(aligned),) + features)),
        ("border", Launch(found[2], (-(-ntx // nw), nty), (32 * (nw + 1),),
                          (VALUES, LABELS, H, S, I(ny), I(nx), img) + key + (np.int32(nw),)
                          + features, early=False)),
    ] + wrap
    label_pass = _run_label_pass(index_dtype, "false", F.size,
                                 (F, S, A, I(F.size // ntx), I(nx), I(A.size)) + _NO_SLOTS,
                                 counts, first, stats)
    return prog + _pieces_path(index_dtype, n, buffers, label_pass, 1, first, counts)


def _lattice_3d(value_dtype, index_dtype, n, shape, connectivity, has_bg, bgkey, periodic,
                mask, bonds, bond_rows, tolerance, buffers, first=False, counts=None,
                stats=None):
    """:func:`lattice_program` for a 3-D volume.  Periodic axes alone: its
    plain chain; a mask, bonds or a tolerance: the lattice form of
    runs3d.cu's chain (any cell type, :func:`_program_runs3d_lattice`).
    Where axes wrap, ``wrap3d.cu`` goes between the border kernels and the
    numbering.  ``counts``, ``stats``: as in :func:`program`."""
    _, nz, ny, nx = _dims(tuple(int(s) for s in shape))
    c = min(int(connectivity), 3)
    plain = not (mask or bonds or tolerance is not None)
    features = _box_features(value_dtype, n, c, mask, bonds, bond_rows, tolerance)
    if buffers is None:
        buffers = scratch(n, index_dtype, shape, slots=False)
    if plain:
        prog = program(value_dtype, index_dtype, n, shape, c, has_bg, bgkey, buffers=buffers,
                       slot_tiles=False, counts=counts, first=first, stats=stats)
    else:
        prog = _program_runs3d_lattice(value_dtype, index_dtype, n, shape, c, has_bg, bgkey,
                                       buffers, features, tolerance is not None, counts, first,
                                       stats)
    if not periodic:
        return prog
    tol = "true" if tolerance is not None else "false"
    wrap, = kernels("wrap3d.cu", f"meshccl_wrap3d<{cell_type(value_dtype)}, "
                                 f"{c_type(index_dtype)}, {c}, {tol}>")
    _, _, H, _, S = _run_arrays(buffers, n, shape)
    I = np.dtype(index_dtype).type
    faces = ny * nx + 2 * nz * nx + 2 * nz * ny
    launch = Launch(wrap, (-(-faces // BLOCK),), (BLOCK,),
                    (VALUES, LABELS, H, S, I(nz), I(ny), I(nx), np.int32(bool(has_bg)), bgkey,
                     np.uint32(periodic)) + features, early=False)
    at = [name for name, _ in prog].index("roots")
    return prog[:at] + [("wrap", launch)] + prog[at:]


def _program_runs3d_lattice(value_dtype, index_dtype, n, shape, c, has_bg, bgkey, buffers,
                            features, tolerance, counts=None, first=False, stats=None):
    """The launches of runs3d.cu's lattice form: its tile kernel (bricks of
    ``_tuning.RUNS_3D_PLANES[c]`` planes), seam kernel (a thread per cell on
    the tile columns' sides, ``_tuning.RUNS_SEAM_PLANES[c]`` planes a block)
    and z-face kernel, then the numbering of the plain run chain (no
    slots).  ``features``: the kernels' lattice arguments
    (:func:`_box_features`); ``tolerance``: whether the call has one."""
    index_dtype = np.dtype(index_dtype)
    _, nz, ny, nx = _dims(tuple(int(s) for s in shape))
    t, i = cell_type(value_dtype), c_type(index_dtype)
    tol = "true" if tolerance else "false"
    nzb, walk = _tuning.RUNS_3D_PLANES[c], _tuning.RUNS_SEAM_PLANES[c]
    tile, zface, seams = kernels(
        "runs3d.cu", f"meshccl_runs3d_lattice_tile<{t}, {i}, {c}, {tol}, {nzb}>",
        f"meshccl_runs3d_lattice_zface<{t}, {i}, {c}, {tol}, {nzb}, 1>",
        f"meshccl_runs3d_lattice_seams<{t}, {i}, {c}, {tol}>")
    bits, A, H, F, S = _run_arrays(buffers, n, shape)
    I = index_dtype.type
    ntx, nty = -(-nx // 32), -(-ny // 32)
    aligned = nx % 32 == 0
    dims = (I(nz), I(ny), I(nx), np.int32(bool(has_bg)), bgkey)
    grid = (ntx, nty, -(-nz // nzb))
    # the forest and run starts of each plane, then its rows' F and E (runs3d.cu)
    shared = nzb * (32 * 33 + 3 * 32) * 4
    if shared > 48 * 1024 and tile.max_dynamic_shared_size_bytes < shared:
        tile.max_dynamic_shared_size_bytes = shared
    prog = _cleared(bits, aligned) + [
        ("tile", Launch(tile, grid, (32 * nzb,),
                        (VALUES, LABELS, A, H, F, S) + dims + (np.int32(aligned),) + features,
                        shared_mem=shared)),
        ("border", Launch(seams, (ntx, nty, -(-nz // walk)), (64 if c == 1 else 128,),
                          (VALUES, LABELS, H, S) + dims + (I(walk),) + features, early=False)),
    ]
    if grid[2] > 1:  # a brick below another
        prog.append(("zface", Launch(zface, (ntx, nty, grid[2] - 1), (32,),
                                     (VALUES, LABELS, H) + dims + features, early=False)))
    label_pass = _run_label_pass(index_dtype, "false", F.size,
                                 (F, S, A, I(F.size // ntx), I(nx), I(A.size)) + _NO_SLOTS,
                                 counts, first, stats)
    return prog + _pieces_path(index_dtype, n, buffers, label_pass, 1, first, counts)
