"""The plain 2-D / 3-D path on the GPU: ``kernels/runs2d.cu`` (1-D and 2-D),
``kernels/runs3d.cu`` (3-D volumes of one-byte cells: tile, z-face and
seam kernels) or ``kernels/mesh23.cu`` (other 3-D volumes, and whatever a
caller names tiles for), then the pieces path of ``kernels/relabel.cu``.

:func:`applies` says when it serves a call.  :func:`program` works out the
launches once per shape and dtype (launch plans keep it); :func:`steps`
binds them to one input and output, in the shape ``meshccl/_gpu/mesh.py``
uses, so the general path, the launch plans of ``plan.py`` and
``benchmarks/phases.py`` all run the same list.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .launch import LABELS, VALUES, Launch, Memset
from .loader import c_type, kernels

#: Tile rows, planes and warps per block, by dimension (template arguments
#: of the kernels; benchmarks/NOTES.md says how they were chosen).
TILES = {2: (16, 1, 16), 3: (8, 4, 32)}
#: Tiles per block of the tile kernel (stacked along y, their values loaded
#: before the first is labelled), by (dimension, connectivity).  H200,
#: 2026-11-23 (benchmarks/NOTES.md): 2 saves 3-10 % of the tile kernel in
#: 2-D and in 3-D at connectivity 1, and costs up to 2 % at 3-D c3.
TILES_PER_BLOCK = {(2, 1): 2, (2, 2): 2, (3, 1): 2, (3, 2): 1, (3, 3): 1}
#: Words per block of meshccl_piece_roots (MESHCCL_PIECE_BLOCK; threads: that / PIECE_WORDS).
PIECE_BLOCK = 1024
#: Words per thread of meshccl_piece_roots and meshccl_label_pieces (1 or 2)
#: in the 2-D chain with slots, whose images have few, large pieces: with 2,
#: the 524 288 words of a 4096^2 image take one wave of threads, not two
#: (blobs 4096^2: -2.7 us).  Everywhere else 1: images with many hooked or
#: piece roots need the threads (2 cost percolation 8192^2 c1 +0.15 ms,
#: Potts 4096^2 c1 +27 us, percolation 512^3 c1 +0.17 ms; benchmarks/NOTES.md,
#: 2026-11-26).
PIECE_WORDS = 2
BLOCK = 256
#: Plain 2-D images take kernels/runs2d.cu (runs as nodes, 32 x 32 tiles a
#: warp each) unless this is False or a call names its tiles (benchmarks,
#: tests of mesh23.cu's 2-D tiles).
RUNS_2D = True
#: 3-D volumes of one-byte cells take kernels/runs3d.cu (runs as nodes,
#: bricks of 32 x 32 x RUNS_3D_PLANES[connectivity] cells a block) unless
#: this is False or a call names its tiles.
RUNS_3D = True
#: Planes per brick by connectivity (H200, 2026-11-24,
#: benchmarks/experiments/brick_planes.py): 16 halves the z faces, which
#: paid at connectivity 1 (percolation 512^3 2.24 -> 2.17 ms, Potts 256^3
#: 0.435 -> 0.403) but not at 3, where the deeper tile and the per-cell
#: border kernel lost more (percolation p = .1369 2.37 -> 2.42).
RUNS_3D_PLANES = {1: 16, 2: 8, 3: 8}
#: Warps (bricks) per block of meshccl_runs3d_zface: 1, 2, 4 and 8 timed
#: alike but on percolation 512^3 p = .3116 c3, where 1 took 0.30 ms and 4
#: 0.38 (H200, 2026-11-24, benchmarks/experiments/zface_warps.py).
RUNS_ZFACE_WARPS = 1
#: 3-D pairs that cross a tile column's x or y faces: meshccl_runs3d_seams
#: (a warp walks a seam through a brick's planes) unless this is False, then
#: mesh23.cu's border kernel (a thread per face cell; benchmarks/NOTES.md
#: compares them).
RUNS_3D_SEAMS = True
#: Tiles per block of meshccl_runs3d_seams (two warps each: x and y seam).
RUNS_SEAM_TILES = 4
#: Planes a warp of meshccl_runs3d_seams walks, by connectivity.
RUNS_SEAM_PLANES = {1: 4, 2: 4, 3: 4}
#: Warps (tiles) per block of meshccl_runs2d_tile (8: the block's words of A
#: fill a 32-byte sector per row; 2, 4 and 8 timed alike before that); the
#: border kernel's block is 8 tiles (a warp each for their top rows, one for
#: the strip's left border), or 4 tiles of 2 warps without strips.
RUNS_2D_WARPS = 8
#: The tiles of a block of meshccl_runs2d_tile share one forest; with this
#: switch on they also unite the pairs across their inner borders there (a
#: piece is then a component of the block's strip of 32 x 32 * RUNS_2D_WARPS
#: cells), and the border kernel takes only the x seams between strips.
#: Off: every tile border is the border kernel's, as before (the GPU tests
#: compare both with skimage).
RUNS_2D_STRIPS = True
#: How the run tile kernels prefetch into L2 the 32-byte sectors of P that
#: their run starts' piece roots will be stored in (runs.cuh,
#: prefetch_run_starts), by (dimension, connectivity): 0 not at all, 1 a
#: prefetch per sector that holds a run start, 2 one per row that has any
#: (its line).  H200, 2026-11-24 (experiments/prefetch_p.py,
#: prefetch_modes.py; tile kernel off -> 1 -> 2, ms): blobs 4096^2 c2 0.075
#: -> 0.068 -> 0.063, percolation 8192^2 p = .4073 c2 0.534 -> 0.533 ->
#: 0.513, Potts 4096^2 c2 0.156 -> 0.152 -> 0.148, blobs 512^3 c1 0.523 ->
#: 0.473 -> 0.471, percolation 512^3 p = .1369 c1 0.665 -> 0.543 -> 0.531;
#: 2-D c1 with 2: blobs 0.057 -> 0.053, Potts 0.119 -> 0.113.  Not at 3-D
#: c2 / c3, whose kernels spill more with it (80 bytes, not 48; blobs 512^3
#: c3 0.672 -> 0.736 with 1).  In 3-D a template argument of
#: meshccl_runs3d_tile (as a runtime one, off, it still cost the c3 kernel
#: 7 %), in 2-D a runtime one.
RUNS_PREFETCH = {(2, 1): 2, (2, 2): 2, (3, 1): 2, (3, 2): 0, (3, 3): 0}
#: Tile rows per lane group of meshccl_runs2d_label, by label bytes (their
#: chains of loads overlap; benchmarks/NOTES.md says how they were chosen).
RUNS_LABEL_ROWS = {4: 1, 8: 1}
#: Cells per lane of meshccl_runs2d_label (4: eight lanes per tile row; 8:
#: four), by label bytes.  H200, 2026-11-24 (experiments/lane_cells.py): 8
#: took 20-25 us off the 3-D label pass (blobs 512^3 0.319 -> 0.297 ms) and
#: 2 us off the 2-D 4096^2 ones, and cost 15 us on percolation 512^3 c1.
RUNS_LABEL_CELLS = {4: 8, 8: 4}
#: Cells per thread of meshccl_label_cells (MESHCCL_CELLS_PER_THREAD).
CELLS_PER_THREAD = 8
#: May the kernels right after the tile kernel (border, z-face) start while
#: it drains (programmatic dependent launch, launch.py)?  The relabel chain
#: after them always may.  H200, 2026-11-24 (experiments/pdl.py): early,
#: they made 3-D calls 1-4 % slower and percolation 8192^2 c2 1 % slower,
#: and won nothing in 2-D over the relabel chain alone (which took 1-4 %
#: off: blobs 4096^2 c2 0.1465 -> 0.1418 ms, spiral c2 0.1988 -> 0.1925).
EARLY_FACES = False
#: Binary 2-D images at connectivity 2 (one-byte cells 0 / 1, background 0):
#: each tile whose cells are all so is labelled in bands of two rows, one
#: node per run of a band's columns (runs.cuh, band_node), which halves the
#: nodes and the unions of the tile kernel.  Off: every tile by its rows.
RUNS_2D_BANDS = True
#: Slots per 32 x 32 tile for the piece roots of its run starts (plain 2-D
#: images; 0: none).  A tile with at most this many run starts writes their
#: piece roots to its slots in raster order, consecutive words, and only the
#: piece roots themselves to the labels array; the border kernel and the
#: label pass read a run start's slot (its rank in its row, after the row's
#: first slot: a 16-bit word per tile row).  Other tiles keep the piece
#: roots at their run starts in the labels array, as 3-D volumes do.  Few
#: run starts mean large pieces, whose run starts are mostly not piece
#: roots: there the slots save the labels array's sectors that the tile
#: kernel would write into and the label pass read back.  H200, 2026-11-25
#: (experiments/ab_trees.py, the kernels before and after, device time):
#: blobs 4096^2 -10 % at c1, -4 % at c2, percolation 8192^2 p = .5927 c2
#: -5 %; images of many small pieces, whose tiles take no slots, paid for
#: the code around them (Potts 4096^2 +3 / +6 %, percolation at c1 +2 %,
#: the spiral +2 %) until launch plans took the tile kernel compiled
#: without slots for them (RUNS_2D_SLOTS_SHARE).  256 slots made
#: percolation p = .4073 c1 5 % slower (its tiles then take slots, and most
#: of their run starts are piece roots).  Costs slots / 1024 index words
#: and 1/64 of a word per cell.
RUNS_2D_SLOTS = 192
#: A launch plan labels plain 2-D images with the tile kernel that has slots
#: when at least this share of the tiles fitted their run starts in their
#: slots on the call before whose count has come back (the border kernel
#: writes it to host memory; the plan does not wait for it); else with the
#: same kernel compiled without slots (a template argument), which has none
#: of their code, and the border kernel and label pass are told there are
#: none.  Both give the same labels; the first call of a plan takes the
#: slots.  By connectivity; 0: always slots, above 1: never (then the
#: tiles are not counted).  H200,
#: 2026-11-25 (experiments/slot_choice.py, device ms, slots / without):
#: Potts 4096^2 c2 0.2729 / 0.2609 (no tile fits), percolation 8192^2
#: p = .4073 c1 0.777 / 0.753 (none fits), blobs 4096^2 c1 0.1007 / 0.1112
#: (all fit), percolation p = .5927 c2 0.716 / 0.755 (all fit), the spiral
#: (49 % fit) and percolation p = .4073 c2 (13 %) alike either way.  The
#: general path (no plan) always takes the slots.
RUNS_2D_SLOTS_SHARE = {1: 0.5, 2: 0.5}
#: Prefetch the labels array's rows (RUNS_PREFETCH) in tiles with slots too,
#: where only the piece roots are stored there (measured: 2 us slower on
#: blobs 4096^2 c2, no gain elsewhere).
RUNS_2D_SLOTS_PREFETCH = False
_MAX_GRID_YZ = 65535


def _dims(shape):
    """(D, nz, ny, nx) of a squeezed shape of 1 to 3 axes."""
    if len(shape) == 3:
        return 3, shape[0], shape[1], shape[2]
    if len(shape) == 2:
        return 2, 1, shape[0], shape[1]
    return 2, 1, 1, shape[0]


def applies(shape, *, periodic=0, mask=None, bonds=None, bond_rows=None, tolerance=None,
            no_left=False, label_axes=None) -> bool:
    """True when the call is a plain labelling of 1 to 3 axes, all labelled."""
    if not 1 <= len(shape) <= 3 or periodic or mask is not None or bonds is not None:
        return False
    if tolerance is not None or no_left:
        return False
    if label_axes is not None and label_axes != (1 << len(shape)) - 1:
        return False
    d, nz, ny, nx = _dims(shape)
    ty, tz, _ = TILES[d]
    return -(-ny // ty) <= _MAX_GRID_YZ and -(-nz // tz) <= _MAX_GRID_YZ


def border_items(d: int, c: int, ty: int, tz: int, runs: bool = False) -> int:
    """Cells per tile that meshccl_mesh23_border visits (``Border<...>::ITEMS``;
    ``runs``: on runs3d.cu's bricks, whose first plane's pairs with the plane
    below are mostly the z-face kernel's)."""
    extra = 1 if (d == 3 and c >= 2) else 0
    first, p0 = (0, 0) if runs else (ty, 1)
    rows = 1 if d == 2 else first + (tz - p0) * (1 + extra)
    cols = ty - 1 if d == 2 else (tz - p0) * (ty - 1 - extra)
    return rows * 32 + cols * (2 if c >= 2 else 1)


def _runs_words(shape) -> int:
    """Words of each of the run kernels' bit arrays F and S: one per tile row
    (a row of 32 cells of one plane)."""
    _, nz, ny, nx = _dims(tuple(int(s) for s in shape))
    return -(-nx // 32) * ny * nz


def scratch(n: int, index_dtype, shape=None, value_dtype=None):
    """The pieces path's temporary arrays: the bit arrays A and H and, after
    them, the ticket counter of meshccl_piece_roots and the tally of
    :func:`program`'s ``report`` (one buffer; both start at 0 and each call
    leaves them so), the per-word prefix sums within
    blocks and the block sums (with their scan): 3n/8 bytes for int32
    labels, plus a few per 32768 cells.  With a ``shape`` (and
    ``value_dtype`` for 3-D) that the run-based kernels take also their bit
    arrays F and S (one buffer, about n/4 bytes)."""
    import cupy

    words = (n + 31) // 32
    blocks = -(-words // PIECE_BLOCK)
    bits = cupy.empty(2 * words + 2, dtype=cupy.uint32)
    bits[2 * words:] = 0  # the counter, and the 2-D tile kernel's tally of tiles with slots
    out = (bits, cupy.empty(words, dtype=index_dtype),
           cupy.empty(blocks, dtype=index_dtype), cupy.empty(blocks, dtype=index_dtype))
    if shape is not None:
        d, _, ny, nx = _dims(tuple(int(s) for s in shape))
        if d == 2 or (value_dtype is not None and np.dtype(value_dtype).itemsize == 1):
            out += (cupy.empty(2 * _runs_words(shape), dtype=cupy.uint32),)
        if d == 2 and RUNS_2D_SLOTS:  # the tiles' slots and each tile row's first slot
            ntx, nty = -(-nx // 32), -(-ny // 32)
            out += (cupy.empty(ntx * nty * RUNS_2D_SLOTS, dtype=index_dtype),
                    cupy.empty(ntx * ny, dtype=cupy.uint16))
    return out


def uses_runs(shape, value_dtype, tiles=None) -> bool:
    """True when the call takes the run-based tile kernels (runs2d.cu: any
    plain 1-D / 2-D image; runs3d.cu: 3-D volumes of one-byte cells) rather
    than mesh23.cu's cell tiles."""
    d = _dims(tuple(int(s) for s in shape))[0]
    if tiles:
        return False
    if d == 2:
        return RUNS_2D
    return RUNS_3D and np.dtype(value_dtype).itemsize == 1


def chooses_slots(shape, value_dtype) -> bool:
    """True when a call of this shape takes runs2d.cu with slots, so that
    :func:`program` can be asked for either tile kernel (``slot_tiles``)."""
    return bool(RUNS_2D_SLOTS) and _dims(tuple(int(s) for s in shape))[0] == 2 \
        and uses_runs(shape, value_dtype)


def slots_threshold(shape, connectivity) -> int:
    """The fewest tiles that must have fitted their run starts in their slots
    on a call for a launch plan's next call to take the tile kernel with
    slots (:data:`RUNS_2D_SLOTS_SHARE` of the tiles, rounded up; 2**32,
    never, where the share is above 1).  A plan's count starts at
    0xFFFFFFFF (no call has written it yet): slots, unless never."""
    d, _, ny, nx = _dims(tuple(int(s) for s in shape))
    share = RUNS_2D_SLOTS_SHARE[min(int(connectivity), d) if len(shape) > 1 else 1]
    if share > 1:
        return 1 << 32
    return math.ceil(share * (-(-nx // 32) * -(-ny // 32)))


def program(value_dtype, index_dtype, n, shape, connectivity, has_bg, bgkey, buffers=None,
            tiles=None, slot_tiles=True, report=None):
    """The launches of the plain 2-D / 3-D path for arrays of one shape and
    dtype, as ``[(name, launch), ...]`` where ``launch(values, P)`` runs one
    kernel on flat CuPy ``values`` and int32/int64 output ``P`` of ``n``
    cells; the last returns N (a 0-d CuPy array, no host synchronisation).
    Each launch is a :class:`.launch.Launch` (or a :class:`.launch.Memset`),
    which a launch plan packs for the driver once (``launch.packed()``).

    Everything but the two arrays is worked out here once: a launch plan
    (plan.py) keeps the program, so a repeated call only launches.
    ``shape``: the squeezed shape (1 to 3 axes, see :func:`applies`).
    ``buffers``: arrays from :func:`scratch` to use (else new ones).
    ``tiles``: (rows, planes, warps[, tiles per block]) instead of
    :data:`TILES` (benchmarks; tiles per block defaults to 1).
    ``slot_tiles``: plain 2-D images (:func:`chooses_slots`) take the
    kernels with slots (else every kernel of the chain in its form without
    them, as they were before slots); same labels.  ``report``: the address
    of a 32-bit word of host memory (pinned) where the border kernel writes
    how many tiles fitted their run starts in their slots (either tile
    kernel counts them), for a launch plan's choice of ``slot_tiles``
    (:func:`slots_threshold`); None: not counted.
    """
    index_dtype = np.dtype(index_dtype)
    d, nz, ny, nx = _dims(tuple(int(s) for s in shape))
    c = min(int(connectivity), d) if len(shape) > 1 else 1
    if uses_runs(shape, value_dtype, tiles):
        return _program_runs(value_dtype, index_dtype, n, shape, c, has_bg, bgkey, buffers,
                             slot_tiles, report)
    ty, tz, warps, per_block = (tuple(tiles) + (1,))[:4] if tiles else \
        TILES[d] + (TILES_PER_BLOCK[d, c],)
    t, i = c_type(value_dtype), c_type(index_dtype)
    tile, border = kernels("mesh23.cu",
                           f"meshccl_mesh23_tile<{t}, {i}, {d}, {c}, {ty}, {tz}, {warps}, {per_block}>",
                           f"meshccl_mesh23_border<{t}, {i}, {d}, {c}, {ty}, {tz}, false>")
    cells_k, = kernels("relabel.cu", f"meshccl_label_cells<{i}>")
    if buffers is None:
        buffers = scratch(n, index_dtype)
    bits, incl, block_incl = buffers[0], buffers[1], buffers[3]
    words = (n + 31) // 32
    A, H = bits[:words], bits[words:2 * words]
    I = index_dtype.type
    grid = (-(-nx // 32), -(-ny // ty), -(-nz // tz))  # of tiles (the border kernel's)
    tile_grid = (grid[0], -(-grid[1] // per_block), grid[2])
    aligned = nx % 32 == 0
    dims = (I(nz), I(ny), I(nx), np.int32(bool(has_bg)), bgkey)
    tile_tail = (A, H) + dims + (np.int32(aligned),)
    border_tail = (H, np.uintp(0)) + dims  # S: a null pointer (cells are nodes)
    border_block = (min(BLOCK, -(-border_items(d, c, ty, tz) // 32) * 32),)
    cells_grid = (-(-n // (BLOCK * CELLS_PER_THREAD)),)
    cells_tail = (I(n), A, H, incl, block_incl)
    return _cleared(bits, aligned) + [
        ("tile", Launch(tile, tile_grid, (32 * warps,), (VALUES, LABELS) + tile_tail)),
        ("border", Launch(border, grid, border_block, (VALUES, LABELS) + border_tail,
                          early=EARLY_FACES)),
    ] + _pieces_path(index_dtype, n, buffers,
                     Launch(cells_k, cells_grid, (BLOCK,), (LABELS,) + cells_tail), False)


def _cleared(bits, aligned):
    """A launch that zeroes the bit arrays A and H, where the tile kernel
    ORs its rows in (rows not 32-cell aligned); else none."""
    return [] if aligned else [("clear", Memset(bits))]


def _pieces_path(index_dtype, n, buffers, cells, runs, wpt=1):
    """The launches after the border kernel, shared by both tile kernels:
    meshccl_piece_roots (the hooked roots' walks and the roots' prefix
    sums), then ``cells`` (the launch that labels every cell) and
    meshccl_label_pieces (every piece root's label) -- in the other order
    for the run kernels (``runs``), whose label pass reads the piece roots'
    labels.  The last launch returns N.  ``wpt``: words per thread of the
    two piece kernels."""
    i = c_type(index_dtype)
    roots_k, pieces_k = kernels("relabel.cu", f"meshccl_piece_roots<{i}, {wpt}>",
                                f"meshccl_label_pieces<{i}, {wpt}>")
    bits, incl, sums, block_incl = buffers[:4]
    words = (n + 31) // 32
    A, H, counter = bits[:words], bits[words:2 * words], bits[2 * words:]
    blocks = -(-words // PIECE_BLOCK)
    I = np.dtype(index_dtype).type
    roots_args = (A, H, I(words), incl, sums, block_incl, counter)
    pieces = Launch(pieces_k, (-(-words // (BLOCK * wpt)),), (BLOCK,),
                    (LABELS, A, H, incl, block_incl, I(words)))
    last = cells if runs else pieces
    last.result = block_incl[blocks - 1]  # N, no host synchronisation
    tail = [("pieces", pieces), ("cells", cells)] if runs else \
        [("cells", cells), ("pieces", pieces)]
    return [("roots", Launch(roots_k, (blocks,), (PIECE_BLOCK // wpt,),
                             (LABELS,) + roots_args))] + tail


def _program_runs(value_dtype, index_dtype, n, shape, c, has_bg, bgkey, buffers, slot_tiles,
                  report):
    """:func:`program` through the run-based tile kernels: runs2d.cu (1-D and
    2-D) or runs3d.cu with its z-face and seam kernels (3-D; mesh23.cu's
    border kernel on its bricks instead when RUNS_3D_SEAMS is False), then
    meshccl_runs2d_label, which sees a volume as nz * ny rows."""
    index_dtype = np.dtype(index_dtype)
    d, nz, ny, nx = _dims(tuple(int(s) for s in shape))
    t, i = c_type(value_dtype), c_type(index_dtype)
    rows = RUNS_LABEL_ROWS[index_dtype.itemsize]  # tile rows per lane group of the label pass
    per_lane = RUNS_LABEL_CELLS[index_dtype.itemsize]
    slots = RUNS_2D_SLOTS if d == 2 else 0
    # every kernel of the chain with slots or every one without (3-D: none)
    sl = "true" if (slots and slot_tiles) else "false"
    label_k, = kernels("relabel.cu", f"meshccl_runs2d_label<{i}, {rows}, {per_lane}, {sl}>")
    need = -(-nx // 32) * -(-ny // 32) * slots  # (buffers made under another RUNS_2D_SLOTS)
    if (buffers is None or len(buffers) < (7 if slots else 5)
            or (slots and buffers[5].size < need)):
        buffers = scratch(n, index_dtype, shape, value_dtype)
    bits, fs = buffers[0], buffers[4]
    words = (n + 31) // 32
    A, H = bits[:words], bits[words:2 * words]
    rw = _runs_words(shape)
    F, S = fs[:rw], fs[rw:2 * rw]
    I = index_dtype.type
    ntx, nty = -(-nx // 32), -(-ny // 32)
    aligned = nx % 32 == 0
    key = (np.int32(bool(has_bg)), bgkey)
    # (the slots' arrays and their size, or null pointers and 0)
    slotted = (buffers[5], buffers[6], np.int32(slots)) if slots else \
        (np.uintp(0), np.uintp(0), np.int32(0))
    # the later kernels' view: none when the tile kernel has no slots
    read = slotted if slot_tiles else (np.uintp(0), np.uintp(0), np.int32(0))
    # the tile kernel's tally of tiles that fit their slots, and where the
    # border kernel reports it (or null pointers: not counted)
    counted = (bits[2 * words + 1:], np.uintp(report)) if (slots and report) else \
        (np.uintp(0), np.uintp(0))
    if d == 2:
        nw = RUNS_2D_WARPS
        # (one NVRTC module for both forms: a launch plan asks for both)
        names = [f"meshccl_runs2d_tile<{t}, {i}, {c}, {nw}, {f}>" for f in ("true", "false")] \
            + [f"meshccl_runs2d_border<{t}, {i}, {c}, {f}>" for f in ("true", "false")]
        found = dict(zip(names, kernels("runs2d.cu", *names)))
        tile = found[f"meshccl_runs2d_tile<{t}, {i}, {c}, {nw}, {sl}>"]
        border = found[f"meshccl_runs2d_border<{t}, {i}, {c}, {sl}>"]
        tile_args = ((-(-ntx // nw), nty), (32 * nw,), (A, H, F, S, I(ny), I(nx)) + key
                     + (np.int32(aligned), np.int32(RUNS_2D_STRIPS),
                        # (a mode: 0, 1, 2; + 8: in tiles with slots too)
                        np.int32(RUNS_PREFETCH[(2, c)] | (8 if RUNS_2D_SLOTS_PREFETCH else 0)),
                        np.int32(RUNS_2D_BANDS)) + slotted + counted[:1])
        strip = nw if RUNS_2D_STRIPS else 1
        if 8 % strip:
            raise ValueError(f"RUNS_2D_WARPS must divide 8 with strips on; got {nw}")
        tb = 8 if strip > 1 else 4  # tiles per block of the border kernel
        border_args = ((-(-ntx // tb), nty), (32 * (tb + tb // strip),),
                       (H, S, I(ny), I(nx)) + key + (np.int32(strip),) + read + counted)
        zface_args, tile_shared = None, 0
    else:
        nzb = RUNS_3D_PLANES[c]
        nwz, nst = RUNS_ZFACE_WARPS, RUNS_SEAM_TILES
        # (one NVRTC module per list of names: the three together)
        pf = int(RUNS_PREFETCH[(3, c)])
        tile, zface, seams = kernels("runs3d.cu",
                                     f"meshccl_runs3d_tile<{t}, {i}, {c}, {nzb}, {pf}>",
                                     f"meshccl_runs3d_zface<{t}, {i}, {c}, {nzb}, {nwz}>",
                                     f"meshccl_runs3d_seams<{t}, {i}, {c}, {nzb}, {nst}>")
        dims = (I(nz), I(ny), I(nx)) + key
        grid = (ntx, nty, -(-nz // nzb))
        tile_args = (grid, (32 * nzb,), (A, H, F, S) + dims + (np.int32(aligned),))
        tile_shared = nzb * (32 * 33 + 32) * 4  # the forest and run starts (runs3d.cu)
        if tile_shared > 48 * 1024 and tile.max_dynamic_shared_size_bytes < tile_shared:
            tile.max_dynamic_shared_size_bytes = tile_shared
        if RUNS_3D_SEAMS:
            border = seams
            walk = RUNS_SEAM_PLANES[c]
            border_args = ((-(-ntx // nst), nty, -(-nz // walk)), (64 * nst,),
                           (H, S) + dims + (I(walk),))
        else:
            border, = kernels("mesh23.cu",
                              f"meshccl_mesh23_border<{t}, {i}, 3, {c}, 32, {nzb}, true>")
            border_args = (grid, (min(BLOCK, -(-border_items(3, c, 32, nzb, True) // 32) * 32),),
                           (H, S) + dims)
        zface_args = ((-(-ntx // nwz), nty, grid[2] - 1), (32 * nwz,), (H,) + dims)
    label_grid = (-(-(32 // per_lane) * -(-rw // rows) // BLOCK),)  # 32 / per_lane lanes a group
    label_tail = (F, S, A, I(rw // ntx), I(nx), I(words)) + read
    faces = [("border", Launch(border, border_args[0], border_args[1],
                               (VALUES, LABELS) + border_args[2], early=EARLY_FACES))]
    if zface_args is not None and zface_args[0][2] > 0:  # a brick below another
        faces.append(("zface", Launch(zface, zface_args[0], zface_args[1],
                                      (VALUES, LABELS) + zface_args[2], early=EARLY_FACES)))
    return _cleared(bits, aligned) + [
        ("tile", Launch(tile, tile_args[0], tile_args[1], (VALUES, LABELS) + tile_args[2],
                        shared_mem=tile_shared)),
    ] + faces + _pieces_path(index_dtype, n, buffers,
                             Launch(label_k, label_grid, (BLOCK,), (LABELS,) + label_tail), True,
                             PIECE_WORDS if sl == "true" else 1)


def steps(values, P, shape, connectivity, has_bg, bgkey, buffers=None, tiles=None,
          slot_tiles=True):
    """:func:`program` bound to ``values`` and ``P``: ``[(name, launch), ...]``
    with ``launch()`` taking no arguments (the general path and
    benchmarks/phases.py time each one)."""
    prog = program(values.dtype, P.dtype, values.size, shape, connectivity, has_bg, bgkey,
                   buffers, tiles, slot_tiles)
    return [(name, functools.partial(launch, values, P)) for name, launch in prog]
