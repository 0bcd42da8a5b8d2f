"""The plain 2-D / 3-D path on the GPU: ``kernels/mesh23.cu`` (3-D, and 2-D
with explicit tiles) or ``kernels/runs2d.cu`` (2-D), then the pieces path
of ``kernels/relabel.cu``.

:func:`applies` says when it serves a call.  :func:`program` works out the
launches once per shape and dtype (launch plans keep it); :func:`steps`
binds them to one input and output, in the shape ``meshccl/_gpu/mesh.py``
uses, so the general path, the launch plans of ``plan.py`` and
``benchmarks/phases.py`` all run the same list.
"""

from __future__ import annotations

import functools

import numpy as np

from .loader import c_type, kernels

#: Tile rows, planes and warps per block, by dimension (template arguments
#: of the kernels; benchmarks/NOTES.md says how they were chosen).
TILES = {2: (16, 1, 16), 3: (8, 4, 32)}
#: Tiles per block of the tile kernel (stacked along y, their values loaded
#: before the first is labelled), by (dimension, connectivity).  H200,
#: 2026-11-23 (benchmarks/NOTES.md): 2 saves 3-10 % of the tile kernel in
#: 2-D and in 3-D at connectivity 1, and costs up to 2 % at 3-D c3.
TILES_PER_BLOCK = {(2, 1): 2, (2, 2): 2, (3, 1): 2, (3, 2): 1, (3, 3): 1}
#: Threads per block of meshccl_piece_roots / meshccl_rank_words.
PIECE_BLOCK = 1024
BLOCK = 256
#: Plain 2-D images take kernels/runs2d.cu (runs as nodes, 32 x 32 tiles a
#: warp each) unless this is False or a call names its tiles (benchmarks,
#: tests of mesh23.cu's 2-D tiles).
RUNS_2D = True
#: Warps (tiles) per block of meshccl_runs2d_tile (8: the block's words of A
#: fill a 32-byte sector per row; 2, 4 and 8 timed alike before that); the
#: border kernel's block is 4 tiles of 2 warps.
RUNS_2D_WARPS = 8
#: Tile rows per lane group of meshccl_runs2d_label, by label bytes (their
#: chains of loads overlap; benchmarks/NOTES.md says how they were chosen).
RUNS_LABEL_ROWS = {4: 1, 8: 1}
#: Cells per thread of meshccl_label_cells (MESHCCL_CELLS_PER_THREAD).
CELLS_PER_THREAD = 8
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


def border_items(d: int, c: int, ty: int, tz: int) -> int:
    """Cells per tile that meshccl_mesh23_border visits (``Border<...>::ITEMS``)."""
    extra = 1 if (d == 3 and c >= 2) else 0
    rows = 1 if d == 2 else ty + (tz - 1) * (1 + extra)
    cols = ty - 1 if d == 2 else (tz - 1) * (ty - 1 - extra)
    return rows * 32 + cols * (2 if c >= 2 else 1)


def _runs_words(shape) -> int:
    """Words of each of runs2d.cu's bit arrays F and S: one per tile row."""
    _, _, ny, nx = _dims(tuple(int(s) for s in shape))
    return -(-nx // 32) * ny


def scratch(n: int, index_dtype, shape=None):
    """The pieces path's temporary arrays: the bit arrays A and H (one
    buffer), the per-word prefix sums and the block sums (with their scan):
    3n/8 bytes for int32 labels, plus a few per 32768 cells.  With a 2-D
    ``shape`` (runs2d.cu) also the bit arrays F and S (one buffer, about
    n/4 bytes)."""
    import cupy

    words = (n + 31) // 32
    blocks = -(-words // PIECE_BLOCK)
    out = (cupy.empty(2 * words, dtype=cupy.uint32), cupy.empty(words, dtype=index_dtype),
           cupy.empty(blocks, dtype=index_dtype), cupy.empty(blocks, dtype=index_dtype))
    if shape is not None and _dims(tuple(int(s) for s in shape))[0] == 2:
        out += (cupy.empty(2 * _runs_words(shape), dtype=cupy.uint32),)
    return out


def program(value_dtype, index_dtype, n, shape, connectivity, has_bg, bgkey, buffers=None,
            tiles=None):
    """The launches of the plain 2-D / 3-D path for arrays of one shape and
    dtype, as ``[(name, launch), ...]`` where ``launch(values, P)`` runs one
    kernel on flat CuPy ``values`` and int32/int64 output ``P`` of ``n``
    cells; the last returns N (a 0-d CuPy array, no host synchronisation).

    Everything but the two arrays is worked out here once: a launch plan
    (plan.py) keeps the program, so a repeated call only launches.
    ``shape``: the squeezed shape (1 to 3 axes, see :func:`applies`).
    ``buffers``: arrays from :func:`scratch` to use (else new ones).
    ``tiles``: (rows, planes, warps[, tiles per block]) instead of
    :data:`TILES` (benchmarks; tiles per block defaults to 1).
    """
    import cupy

    index_dtype = np.dtype(index_dtype)
    d, nz, ny, nx = _dims(tuple(int(s) for s in shape))
    c = min(int(connectivity), d) if len(shape) > 1 else 1
    if d == 2 and RUNS_2D and not tiles:
        return _program_runs2d(value_dtype, index_dtype, n, shape, c, has_bg, bgkey, buffers)
    ty, tz, warps, per_block = (tuple(tiles) + (1,))[:4] if tiles else \
        TILES[d] + (TILES_PER_BLOCK[d, c],)
    t, i = c_type(value_dtype), c_type(index_dtype)
    tile, border = kernels("mesh23.cu",
                           f"meshccl_mesh23_tile<{t}, {i}, {d}, {c}, {ty}, {tz}, {warps}, {per_block}>",
                           f"meshccl_mesh23_border<{t}, {i}, {d}, {c}, {ty}, {tz}>")
    roots_k, words_k, scan_k, cells_k, pieces_k = kernels(
        "relabel.cu", f"meshccl_piece_roots<{i}>", f"meshccl_rank_words<{i}>",
        f"meshccl_scan_block<{i}>", f"meshccl_label_cells<{i}>", f"meshccl_label_pieces<{i}>")
    bits, incl, sums, sums_incl = (buffers if buffers is not None else scratch(n, index_dtype))[:4]
    words = (n + 31) // 32
    A, H = bits[:words], bits[words:]
    blocks = -(-words // PIECE_BLOCK)
    I = index_dtype.type
    grid = (-(-nx // 32), -(-ny // ty), -(-nz // tz))  # of tiles (the border kernel's)
    tile_grid = (grid[0], -(-grid[1] // per_block), grid[2])
    aligned = nx % 32 == 0
    dims = (I(nz), I(ny), I(nx), np.int32(bool(has_bg)), bgkey)
    tile_tail = (A, H) + dims + (np.int32(aligned),)
    border_tail = (H,) + dims
    border_block = (min(BLOCK, -(-border_items(d, c, ty, tz) // 32) * 32),)
    roots_args = (A, H, I(words), sums)
    scan_args = (sums, sums_incl, I(blocks))
    ranks_args = (H, sums_incl, I(words), incl)
    cells_grid = (-(-n // (BLOCK * CELLS_PER_THREAD)),)
    cells_tail = (I(n), A, H, incl)
    pieces_grid = (-(-words // BLOCK),)
    pieces_tail = (A, H, incl, I(words), np.int32(0))
    count = incl[-1]

    def clear(values, P):
        cupy.cuda.runtime.memsetAsync(bits.data.ptr, 0, bits.nbytes,
                                      cupy.cuda.get_current_stream().ptr)

    def last(values, P):
        pieces_k(pieces_grid, (BLOCK,), (P,) + pieces_tail)
        return count

    out = [] if aligned else [("clear", clear)]
    return out + [
        ("tile", lambda values, P: tile(tile_grid, (32 * warps,), (values, P) + tile_tail)),
        ("border", lambda values, P: border(grid, border_block, (values, P) + border_tail)),
        ("roots", lambda values, P: roots_k((blocks,), (PIECE_BLOCK,), (P,) + roots_args)),
        ("scan", lambda values, P: scan_k((1,), (1024,), scan_args)),
        ("ranks", lambda values, P: words_k((blocks,), (PIECE_BLOCK,), ranks_args)),
        ("cells", lambda values, P: cells_k(cells_grid, (BLOCK,), (P,) + cells_tail)),
        ("pieces", last),
    ]


def _program_runs2d(value_dtype, index_dtype, n, shape, c, has_bg, bgkey, buffers):
    """:func:`program` for a 2-D image through kernels/runs2d.cu."""
    import cupy

    index_dtype = np.dtype(index_dtype)
    _, _, ny, nx = _dims(tuple(int(s) for s in shape))
    t, i = c_type(value_dtype), c_type(index_dtype)
    nw = RUNS_2D_WARPS
    rows = RUNS_LABEL_ROWS[index_dtype.itemsize]
    tile, border = kernels("runs2d.cu", f"meshccl_runs2d_tile<{t}, {i}, {c}, {nw}>",
                           f"meshccl_runs2d_border<{t}, {i}, {c}>")
    roots_k, words_k, scan_k, label_k, pieces_k = kernels(
        "relabel.cu", f"meshccl_piece_roots<{i}>", f"meshccl_rank_words<{i}>",
        f"meshccl_scan_block<{i}>", f"meshccl_runs2d_label<{i}, {rows}>",
        f"meshccl_label_pieces<{i}>")
    if buffers is None or len(buffers) < 5:
        buffers = scratch(n, index_dtype, shape)
    bits, incl, sums, sums_incl, fs = buffers
    words = (n + 31) // 32
    A, H = bits[:words], bits[words:]
    rw = _runs_words(shape)
    F, S = fs[:rw], fs[rw:2 * rw]
    blocks = -(-words // PIECE_BLOCK)
    I = index_dtype.type
    ntx, nty = -(-nx // 32), -(-ny // 32)
    aligned = nx % 32 == 0
    key = (np.int32(bool(has_bg)), bgkey)
    tile_tail = (A, H, F, S, I(ny), I(nx)) + key + (np.int32(aligned),)
    border_tail = (H, S, I(ny), I(nx)) + key
    roots_args = (A, H, I(words), sums)
    scan_args = (sums, sums_incl, I(blocks))
    ranks_args = (H, sums_incl, I(words), incl)
    label_tail = (F, S, A, H, incl, I(ny), I(nx), I(words))
    pieces_grid = (-(-words // BLOCK),)
    pieces_tail = (A, H, incl, I(words), np.int32(1))  # the hooked piece roots only
    count = incl[-1]

    def clear(values, P):
        cupy.cuda.runtime.memsetAsync(bits.data.ptr, 0, bits.nbytes,
                                      cupy.cuda.get_current_stream().ptr)

    def last(values, P):
        pieces_k(pieces_grid, (BLOCK,), (P,) + pieces_tail)
        return count

    out = [] if aligned else [("clear", clear)]
    return out + [
        ("tile", lambda values, P: tile((-(-ntx // nw), nty), (32 * nw,), (values, P) + tile_tail)),
        ("border", lambda values, P: border((-(-ntx // 4), nty), (256,),
                                            (values, P) + border_tail)),
        ("roots", lambda values, P: roots_k((blocks,), (PIECE_BLOCK,), (P,) + roots_args)),
        ("scan", lambda values, P: scan_k((1,), (1024,), scan_args)),
        ("ranks", lambda values, P: words_k((blocks,), (PIECE_BLOCK,), ranks_args)),
        ("cells", lambda values, P: label_k((-(-8 * -(-rw // rows) // BLOCK),), (BLOCK,),
                                            (P,) + label_tail)),
        ("pieces", last),
    ]


def steps(values, P, shape, connectivity, has_bg, bgkey, buffers=None, tiles=None):
    """:func:`program` bound to ``values`` and ``P``: ``[(name, launch), ...]``
    with ``launch()`` taking no arguments (the general path and
    benchmarks/phases.py time each one)."""
    prog = program(values.dtype, P.dtype, values.size, shape, connectivity, has_bg, bgkey,
                   buffers, tiles)
    return [(name, functools.partial(launch, values, P)) for name, launch in prog]
