"""Plain 2-D / 3-D images big enough to span many tiles of the GPU's fixed
geometry paths (kernels/runs2d.cu: 32 x 32 tiles; kernels/runs3d.cu: 32 x
32 x 8 bricks of one-byte cells; kernels/mesh23.cu: 32 x 16 tiles in 2-D,
32 x 8 x 4 in 3-D), against skimage.  The same cases run on every backend;
on the GPU they also check that the run kernels, mesh23.cu's cell tiles and
the general n-D kernels give the same labels.  (tests/test_runs_emulated.py
checks the run kernels' pair rules on the CPU.)"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from skimage.measure import label as sk_label

import meshccl
from meshccl import patterns
from conftest import run_label, to_backend, to_host


@st.composite
def tiled_images(draw):
    """Random images of a few levels, smoothed by nearest-neighbour upscaling
    so that components are long and cross tile borders in every direction."""
    ndim = draw(st.sampled_from([2, 3]))
    if ndim == 2:
        shape = (draw(st.integers(1, 140)), draw(st.integers(1, 140)))
    else:
        shape = (draw(st.integers(1, 20)), draw(st.integers(1, 20)), draw(st.integers(1, 70)))
    scale = draw(st.sampled_from([1, 1, 2, 3, 5]))
    levels = draw(st.sampled_from([2, 2, 3, 5]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    small = tuple(-(-s // scale) for s in shape)
    a = rng.integers(0, levels, size=small)
    for axis in range(ndim):
        a = np.repeat(a, scale, axis=axis)
    a = a[tuple(slice(0, s) for s in shape)]
    dtype = draw(st.sampled_from([np.uint8, np.int16, np.int64, np.float32, np.bool_]))
    if dtype is np.bool_:
        return a.astype(bool)
    return np.ascontiguousarray(a.astype(dtype))


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(a=tiled_images(), data=st.data())
def test_tiled_random(backend, a, data):
    connectivity = data.draw(st.integers(1, a.ndim))
    background = data.draw(st.sampled_from([None, 0, 1]))
    got = run_label(a, backend, background=background, connectivity=connectivity)
    np.testing.assert_array_equal(got, sk_label(a, background=background,
                                                connectivity=connectivity))


def diagonal_stripes(shape, period, direction):
    """Stripes one cell wide along a diagonal: only diagonal steps join them,
    so they exercise the steps that cross tile corners (dx = +1 and -1)."""
    idx = np.indices(shape)
    s = idx[-1] + direction * idx[-2]
    if len(shape) == 3:
        s = s + idx[0]
    return ((s % period) == 0).astype(np.uint8)


ADVERSARIAL = {
    "spiral-97": lambda: patterns.spiral(97),
    "spiral-130": lambda: patterns.spiral(130),
    "checker-70x100": lambda: (np.indices((70, 100)).sum(0) % 2).astype(np.uint8),
    "checker3d-17x19x67": lambda: (np.indices((17, 19, 67)).sum(0) % 2).astype(np.uint8),
    "stripes-down-64x96": lambda: diagonal_stripes((64, 96), 3, 1),
    "stripes-up-65x97": lambda: diagonal_stripes((65, 97), 4, -1),
    "stripes3d-up-18x17x70": lambda: diagonal_stripes((18, 17, 70), 3, -1),
    "stripes3d-down-16x16x64": lambda: diagonal_stripes((16, 16, 64), 5, 1),
    "comb-200x33": lambda: np.pad(np.ones((199, 1), np.uint8), ((0, 1), (0, 32)))
    + np.tile(np.array([[0], [1]], np.uint8), (100, 33)),
    "row-1x5000": lambda: (np.arange(5000) % 7 != 0).astype(np.uint8)[None, :],
    "column-3000x1": lambda: (np.arange(3000) % 5 != 0).astype(np.uint8)[:, None],
    "thin-3d-2x3x300": lambda: (np.arange(1800).reshape(2, 3, 300) % 11 != 0).astype(np.uint8),
    "full-64x64": lambda: np.ones((64, 64), np.uint8),
    "full-9x33x65": lambda: np.ones((9, 33, 65), np.uint8),
    "percolation-300x301": lambda: patterns.percolation((300, 301), 0.5927, seed=1),
    # 53 tile rows: the 2-D border kernel's scattered order (runs2d.cu,
    # scattered_row) then multiplies by 59, not 53, to stay a permutation
    "percolation-1696x70": lambda: patterns.percolation((1696, 70), 0.55, seed=4),
    "percolation3d-40x41x42": lambda: patterns.percolation((40, 41, 42), 0.3116, seed=2),
    "potts-100x128": lambda: np.random.default_rng(3).integers(0, 4, (100, 128)).astype(np.int32),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial(backend, name):
    a = ADVERSARIAL[name]()
    for c in range(1, a.ndim + 1):
        got = run_label(a, backend, connectivity=c)
        np.testing.assert_array_equal(got, sk_label(a, connectivity=c), err_msg=f"c={c}")


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_index_types(backend, dtype):
    a = patterns.percolation((130, 170), 0.5927, seed=4)
    got, n = run_label(a, backend, connectivity=2, dtype=dtype, return_num=True)
    want, m = sk_label(a, connectivity=2, return_num=True)
    np.testing.assert_array_equal(got, want)
    assert n == m


@pytest.mark.gpu
def test_gpu_general_and_fixed_paths_agree():
    """Both GPU paths (mesh23.cu and the n-D mesh.cu) give the same labels."""
    pytest.importorskip("cupy")
    from conftest import HAVE_GPU

    if not HAVE_GPU:
        pytest.skip("no GPU")
    import meshccl._gpu.mesh as gm

    for name in ("spiral-130", "percolation3d-40x41x42", "stripes-up-65x97"):
        a = ADVERSARIAL[name]()
        for c in range(1, a.ndim + 1):
            fixed = to_host(meshccl.label(to_backend(a, "gpu"), connectivity=c, return_info=True)[0])
            gm.USE_MESH23 = False
            try:
                general = to_host(meshccl.label(to_backend(a, "gpu"), connectivity=c,
                                                return_info=True)[0])
            finally:
                gm.USE_MESH23 = True
            np.testing.assert_array_equal(fixed, general)


@pytest.mark.gpu
@pytest.mark.parametrize("tiles", [(16, 1, 16, 1), (16, 1, 16, 2), (16, 1, 16, 3), (16, 1, 16, 8),
                                   (8, 4, 32, 2), (8, 4, 32, 3)])
def test_gpu_tiles_per_block(tiles):
    """The tile kernel with 1, 2, 3 or 8 tiles per block (loaded together,
    labelled one after the other; the last block's tiles may lie partly or
    wholly past the array) gives skimage's labels."""
    pytest.importorskip("cupy")
    from conftest import HAVE_GPU

    if not HAVE_GPU:
        pytest.skip("no GPU")
    import cupy

    from meshccl._gpu import mesh23

    d = 2 if tiles[1] == 1 else 3
    rng = np.random.default_rng(4)
    images = [a for a in (make() for make in ADVERSARIAL.values()) if a.ndim == d]
    images += [patterns.percolation((517, 300), 0.5927, seed=5)] if d == 2 else \
        [patterns.percolation((21, 75, 66), 0.3116, seed=5)]
    images += [rng.integers(0, 3, (130, 97)).astype(np.uint8)] if d == 2 else \
        [rng.integers(0, 3, (9, 70, 40)).astype(np.uint8)]
    for a in images:
        assert a.ndim == d
        for c in range(1, d + 1):
            v = cupy.asarray(np.ascontiguousarray(a)).reshape(-1)
            out = cupy.empty(a.size, dtype=cupy.int32)
            steps = mesh23.steps(v, out, a.shape, c, True, a.dtype.type(0), tiles=tiles)
            count = None
            for _, launch in steps:
                count = launch()
            want, n = sk_label(a, connectivity=c, return_num=True)
            np.testing.assert_array_equal(out.get().reshape(a.shape), want,
                                          err_msg=f"{a.shape} c={c} {tiles}")
            assert int(count) == n


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [1, 2, 4])
def test_gpu_runs2d_and_mesh23_agree(rows):
    """Plain 2-D images take kernels/runs2d.cu; with RUNS_2D off they take
    mesh23.cu's cell tiles.  Both give skimage's labels: rows 16-byte
    aligned (two vector loads per row) and not, one-byte cells signed and
    unsigned with a background that is not 0, wider cells, bool, tiles
    binary and not in one image; the label pass with 1, 2 or 4 tile rows
    per lane group."""
    pytest.importorskip("cupy")
    from conftest import HAVE_GPU

    if not HAVE_GPU:
        pytest.skip("no GPU")
    from meshccl._gpu import mesh23, plan

    plan._local.__dict__.pop("plans", None)  # plans keep their program
    default_rows = mesh23.RUNS_LABEL_ROWS[4]
    mesh23.RUNS_LABEL_ROWS[4] = rows
    try:
        _runs2d_against_mesh23()
    finally:
        mesh23.RUNS_LABEL_ROWS[4] = default_rows
        plan._local.__dict__.pop("plans", None)


def _runs2d_against_mesh23():
    rng = np.random.default_rng(11)
    images = [
        patterns.percolation((512, 512), 0.5927, seed=6),        # aligned rows
        patterns.percolation((300, 257), 0.5927, seed=7),        # odd width
        patterns.spiral(160),
        rng.integers(-3, 2, (200, 96)).astype(np.int8),         # signed bytes
        np.repeat(rng.integers(0, 3, (40, 30)), 4, axis=0).repeat(4, axis=1).astype(np.uint16),
        patterns.percolation((96, 1024), 0.5, seed=8).astype(bool),
        _part_binary((256, 320), rng),
    ]
    _runs_against_cells(images, "RUNS_2D")
    # the tiles of a block uniting across their inner borders (strips of 8
    # tiles), and with RUNS_2D_STRIPS off the border kernel taking them all:
    # images a few strips wide, diagonal-only contacts across tile borders,
    # wider cells (their edge keys come from lanes 0, 30 and 31)
    yy, xx = np.mgrid[:70, :700]
    y2, x2 = np.mgrid[:130, :270]
    images += [
        patterns.spiral(600),
        ((xx + yy) % 2).astype(np.uint8),                         # a checkerboard
        ((xx // 3 + yy) % 4 == 0).astype(np.uint8),               # diagonal stripes
        rng.integers(0, 3, (64, 300)).astype(np.uint32),
        ((x2 // 2 - y2) % 5 == 0).astype(np.uint8),               # stripes the other way
        rng.integers(0, 4, (200, 200)).astype(np.uint8),          # Potts-like
        patterns.percolation((257, 333), 0.4073, seed=9),         # c2's threshold
    ]
    _runs_against_cells(images, "RUNS_2D_STRIPS")


@pytest.mark.gpu
def test_gpu_runs2d_bands():
    """Binary 2-D images at connectivity 2 are labelled in bands of two rows
    (runs.cuh, band_node; mesh23.RUNS_2D_BANDS), tile by tile where the
    tile's cells are all 0 / 1 with background 0.  With bands and without,
    against skimage: odd heights (a last band of one row), one row, one
    column, widths that are not multiples of 32, a checkerboard (each band
    one run, joined only diagonally), one-cell-wide lines in every
    direction, lines along band borders, bool, tiles banded and not in one
    image, and random images at the thresholds."""
    pytest.importorskip("cupy")
    from conftest import HAVE_GPU

    if not HAVE_GPU:
        pytest.skip("no GPU")
    from meshccl._gpu import plan

    rng = np.random.default_rng(21)
    yy, xx = np.mgrid[:97, :300]
    lines = np.zeros((130, 270), np.uint8)
    lines[::7, :] = 1           # horizontal lines, some on band borders
    lines[:, 5::11] = 1         # vertical lines one cell wide
    lines[40:90, 200:202] = 0
    images = [
        ((xx + yy) % 2).astype(np.uint8),                        # checkerboard, odd height
        ((xx + 2 * yy) % 5 == 0).astype(np.uint8),               # steep diagonal lines
        ((2 * xx - yy) % 7 == 0).astype(np.uint8),               # flat diagonal lines, other way
        lines,
        patterns.spiral(333),
        patterns.percolation((1, 700), 0.5, seed=3),             # one row
        patterns.percolation((333, 1), 0.5, seed=4),             # one column
        patterns.percolation((65, 95), 0.4073, seed=5),
        patterns.percolation((512, 512), 0.4073, seed=6).astype(bool),
        patterns.percolation((257, 333), 0.6, seed=7),
        (rng.random((200, 170)) < 0.2).astype(np.uint8),          # sparse: lone cells
        _part_binary((256, 320), rng),                            # banded and not
        np.repeat(rng.integers(0, 2, (33, 40)), 3, axis=0).repeat(5, axis=1).astype(np.uint8),
    ]
    plan._local.__dict__.pop("plans", None)  # plans keep their program
    try:
        _runs_against_cells(images, "RUNS_2D_BANDS")
    finally:
        plan._local.__dict__.pop("plans", None)


@pytest.mark.gpu
def test_gpu_runs2d_slots():
    """Plain 2-D images keep the piece roots of a tile's run starts in the
    tile's slots (mesh23.RUNS_2D_SLOTS) where they fit, else at the run
    starts in the labels array.  With slots and without, against skimage:
    tiles of both kinds in one image (random bytes beside blobs), tiles of
    exactly as many run starts as slots (6 runs in every row: 192) and one
    row's more (7 a row), of 512 (16 a row) and of 1024 (no two cells alike
    along a row), widths that are not multiples of 32, one row, one column,
    int64 labels, and 512 slots (every binary tile fits); and the kernels
    compiled without slots, which a launch plan takes where few tiles fit
    (mesh23.RUNS_2D_SLOTS_SHARE above 1: every call)."""
    pytest.importorskip("cupy")
    from conftest import HAVE_GPU

    if not HAVE_GPU:
        pytest.skip("no GPU")
    from meshccl._gpu import mesh23, plan

    rng = np.random.default_rng(31)
    mixed = patterns.blobs((160, 200), seed=2).astype(np.uint8)
    mixed[:, :96] = rng.integers(0, 256, (160, 96))
    yy, xx = np.mgrid[:96, :131]
    images = [
        mixed,
        (xx % 6 == 0).astype(np.uint8),                 # tile 0: 6 runs a row, 192 run starts
        (xx % 5 == 0).astype(np.uint8),                 # tile 0: 7 runs a row, 224
        (xx % 2).astype(np.uint8),                      # 16 runs a row: 512 run starts a tile
        (xx % 2 + 1).astype(np.uint8),                  # 32 a row, no background: 1024
        ((xx + yy) % 3).astype(np.uint8),
        patterns.potts((130, 190), 4, seed=3),
        patterns.percolation((1, 900), 0.5, seed=4),
        patterns.percolation((300, 1), 0.5, seed=5),
        patterns.percolation((257, 333), 0.4073, seed=6),
    ]
    default, share = mesh23.RUNS_2D_SLOTS, mesh23.RUNS_2D_SLOTS_SHARE
    try:
        for a in images:
            for c in (1, 2):
                for bg in (0, 1):
                    want = sk_label(a, connectivity=c, background=bg)
                    for slots, always in ((default, 0.0), (default, 2.0), (512, 0.0), (0, 0.0)):
                        mesh23.RUNS_2D_SLOTS = slots
                        mesh23.RUNS_2D_SLOTS_SHARE = {1: always, 2: always}
                        plan._local.__dict__.pop("plans", None)  # plans keep their program
                        msg = f"{a.dtype} {a.shape} c={c} bg={bg} slots={slots} share={always}"
                        got = meshccl.label(to_backend(a, "gpu"), connectivity=c, background=bg)
                        np.testing.assert_array_equal(to_host(got), want, err_msg=msg)
                        got = meshccl.label(to_backend(a, "gpu"), connectivity=c, background=bg,
                                            dtype=np.int64, return_info=True)[0]
                        np.testing.assert_array_equal(to_host(got), want, err_msg=msg + " int64")
    finally:
        mesh23.RUNS_2D_SLOTS, mesh23.RUNS_2D_SLOTS_SHARE = default, share
        plan._local.__dict__.pop("plans", None)


@pytest.mark.gpu
def test_gpu_every_cell_written_on_dirty_memory():
    """Labels come in memory from CuPy's pool, which is not cleared: every
    cell, background included, must be written by the kernels.  Each call
    here gets the block of an array just filled with -7 (asserted: the same
    address) and must still label as skimage does.  The images are larger
    than plan.GRAPH_CELLS, so that the kernels write straight into that
    block (smaller ones go through a plan's own buffers): 2-D widths that
    are and are not multiples of 8 and of 32, a 3-D volume, int32 and int64
    labels, both forms of the 2-D tile kernel (slots and none), a plan's
    later calls (the result of each call stays alive until the next, so the
    labels alternate between two blocks: packed launches, then the CUDA
    graph recorded at each pair of addresses, then one replayed) and the
    general path (return_info)."""
    cupy = pytest.importorskip("cupy")
    from conftest import HAVE_GPU

    if not HAVE_GPU:
        pytest.skip("no GPU")
    from meshccl._gpu import mesh23, plan

    images = [patterns.blobs((1024, 1024), seed=3), patterns.blobs((730, 731), seed=4),
              patterns.percolation((555, 1003), 0.3, seed=5), patterns.spiral(1024),
              np.zeros((600, 900), np.uint8), patterns.blobs((90, 100, 70), seed=6)]
    assert all(a.size > plan.GRAPH_CELLS for a in images)
    share = mesh23.RUNS_2D_SLOTS_SHARE
    try:
        for always in (0.0, 2.0):
            mesh23.RUNS_2D_SLOTS_SHARE = {1: always, 2: always}
            plan._local.__dict__.pop("plans", None)
            for a in images:
                x = to_backend(a, "gpu")
                for c in range(1, a.ndim + 1):
                    want = sk_label(a, connectivity=c)
                    for dtype in (np.int32, np.int64):
                        meshccl.label(x, connectivity=c, dtype=dtype)  # the plan and its buffers
                        for call in range(6):
                            junk = cupy.full(a.shape, -7, dtype=dtype)
                            ptr = junk.data.ptr
                            del junk
                            general = call == 5
                            got = meshccl.label(x, connectivity=c, dtype=dtype,
                                                return_info=general)
                            got = got[0] if general else got
                            msg = f"{a.shape} c={c} {np.dtype(dtype)} call {call} share={always}"
                            if not general:  # (the general path allocates scratch first)
                                assert got.data.ptr == ptr, msg + ": not the dirty block"
                            np.testing.assert_array_equal(to_host(got), want, err_msg=msg)
    finally:
        mesh23.RUNS_2D_SLOTS_SHARE = share
        plan._local.__dict__.pop("plans", None)


def _part_binary(shape, rng):
    """0/1 percolation with 3s sprinkled over one region: the tiles there
    take the byte-wise compares, the others the binary shortcut
    (runs.cuh, binary_row), and components cross between them."""
    a = patterns.percolation(shape, 0.55 if len(shape) == 2 else 0.3116, seed=12)
    region = tuple(slice(s // 4, s) for s in shape[:-1]) + (slice(shape[-1] // 2, shape[-1]),)
    sub = a[region]
    sub[rng.random(sub.shape) < 0.05] = 3
    return a


def _runs_against_cells(images, flag):
    """Each image at every connectivity and three backgrounds: the default
    path (the run kernels), through a launch plan and directly, and with
    mesh23's ``flag`` off (its cell tiles), all equal to skimage."""
    from meshccl._gpu import mesh23

    for a in images:
        for c in range(1, a.ndim + 1):
            for bg in (0, -1, 1):
                want = sk_label(a, connectivity=c, background=bg)
                msg = f"{a.dtype} {a.shape} c={c} bg={bg}"
                # a launch plan (repeated calls), then the direct path
                runs = to_host(meshccl.label(to_backend(a, "gpu"), connectivity=c, background=bg))
                np.testing.assert_array_equal(runs, want, err_msg=msg)
                runs = to_host(meshccl.label(to_backend(a, "gpu"), connectivity=c, background=bg,
                                             return_info=True)[0])
                np.testing.assert_array_equal(runs, want, err_msg=msg)
                setattr(mesh23, flag, False)  # (return_info: no launch plan, which keeps its program)
                try:
                    cells = to_host(meshccl.label(to_backend(a, "gpu"), connectivity=c,
                                                  background=bg, return_info=True)[0])
                finally:
                    setattr(mesh23, flag, True)
                np.testing.assert_array_equal(cells, want, err_msg=msg + " (mesh23)")


@pytest.mark.gpu
def test_gpu_runs3d_and_mesh23_agree():
    """3-D volumes of one-byte cells take kernels/runs3d.cu (bricks of 32 x
    32 x 8, 16 at connectivity 1; z pairs inside a brick in shared memory, a
    brick's first plane against the one below by the z-face kernel, the
    pairs across tiles' x and y faces by the seam kernel, or with
    RUNS_3D_SEAMS off by mesh23.cu's border kernel on run starts); with
    RUNS_3D off, mesh23.cu's cell tiles.
    Both give skimage's labels at connectivity 1, 2 and 3: rows aligned and
    not, plane counts and heights that are not multiples of the brick, a
    signed byte volume, bool, diagonal stripes (pairs across brick edges and
    corners) and a wider dtype (which stays on the cell tiles)."""
    pytest.importorskip("cupy")
    from conftest import HAVE_GPU

    if not HAVE_GPU:
        pytest.skip("no GPU")
    from meshccl._gpu import plan

    rng = np.random.default_rng(12)
    blobs = np.repeat(rng.integers(0, 2, (5, 12, 12)), 4, axis=0).repeat(6, 1).repeat(6, 2)
    images = [
        patterns.percolation((24, 64, 64), 0.3116, seed=9),      # aligned rows, 3 bricks deep
        patterns.percolation((40, 36, 50), 0.3116, seed=13),     # 3 bricks of 16 deep
        _part_binary((24, 64, 96), rng),                          # binary and not, by warp
        patterns.percolation((19, 45, 70), 0.25, seed=10),       # odd sizes everywhere
        blobs.astype(np.uint8)[:17, :70, :65],                     # long components
        rng.integers(-2, 2, (11, 40, 33)).astype(np.int8),        # signed bytes
        patterns.percolation((9, 33, 96), 0.5, seed=11).astype(bool),
        diagonal_stripes((20, 40, 64), 3, 1),
        diagonal_stripes((17, 37, 41), 4, -1),
        np.repeat(rng.integers(0, 3, (6, 10, 10)), 3, axis=0).repeat(4, 1).repeat(4, 2)
        .astype(np.uint16),
        patterns.percolation((18, 66, 97), 0.1369, seed=14),     # sparse: diagonal pairs on seams
        patterns.percolation((9, 33, 33), 0.3116, seed=15),      # one-cell tiles past the seams
    ]
    plan._local.__dict__.pop("plans", None)  # plans keep their program
    try:
        _runs_against_cells(images, "RUNS_3D")
        # the pairs across tile columns' x / y faces: meshccl_runs3d_seams, and
        # with RUNS_3D_SEAMS off mesh23.cu's border kernel on the run bricks
        _runs_against_cells(images[:4] + images[-2:], "RUNS_3D_SEAMS")
    finally:
        plan._local.__dict__.pop("plans", None)


@pytest.mark.gpu
def test_gpu_pieces_path_on_many_blocks_and_repeated_plans():
    """The pieces path (meshccl_piece_roots' walks and root counts over
    blocks of 32768 cells, then the piece roots' labels) against skimage on
    images of many such blocks: chains of hooked roots across many tile rows
    (the spiral), one giant component, dust, 3-D bricks, int64 labels; then
    one launch plan called again and again with different images of its
    shape, results dropped (graphs replayed at the same addresses) or kept
    (new addresses)."""
    pytest.importorskip("cupy")
    from conftest import HAVE_GPU

    if not HAVE_GPU:
        pytest.skip("no GPU")
    import cupy

    rng = np.random.default_rng(7)
    images = [
        (patterns.spiral(600), 1),
        (patterns.spiral(600), 2),
        (rng.random((700, 900)) < 0.5927, 1),
        (rng.random((700, 900)) < 0.4073, 2),
        (np.ones((640, 640), np.uint8), 2),
        (rng.integers(0, 4, (300, 1100)).astype(np.uint8), 1),
        (patterns.blobs((96, 128, 160)), 3),
        (rng.random((64, 96, 130)) < 0.3116, 1),
    ]
    for a, c in images:
        want = sk_label(a, connectivity=c)
        x = cupy.asarray(a)
        for dtype in (None, np.int64):
            got, n = meshccl.label(x, connectivity=c, return_num=True, dtype=dtype)
            assert np.array_equal(got.get(), want), (a.shape, c, dtype)
            assert n == want.max()
    shape = (512, 768)
    kept = []
    for k in range(24):
        a = rng.random(shape) < (0.4073 if k % 2 else 0.6)
        want = sk_label(a, connectivity=2)
        x = cupy.asarray(a)
        for _ in range(3):  # the second and third calls replay the graph at (x, labels)
            got = meshccl.label(x, connectivity=2)
            assert np.array_equal(got.get(), want), k
            if k % 3 == 2:
                kept.append(got)
