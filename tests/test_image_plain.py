"""Plain 2-D / 3-D images big enough to span many tiles of the GPU's plain
chains (runs2d.cu: 32 x 32 tiles; runs3d.cu: 32 x 32 x 8 or 16 bricks of
cells of any type), against
skimage.  The same cases run on every backend; on the GPU they also check
that the plain chains and the general chain (general.cu, which an all-True
mask selects) give the same labels, under the tuning settings the chains
can take (meshccl._tuning.override).  (tests/test_runs_emulated.py checks
the run kernels' pair rules on the CPU.)"""

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


def _general(a, backend="gpu", **kw):
    """Labels from the general chain: an all-True mask changes no label but
    takes the call off the plain chains."""
    return to_host(meshccl.label(to_backend(a, backend), mask=to_backend(np.ones(a.shape, bool),
                                                                          backend), **kw))


def _need_gpu():
    pytest.importorskip("cupy")
    from conftest import HAVE_GPU

    if not HAVE_GPU:
        pytest.skip("no GPU")


@pytest.mark.gpu
def test_gpu_general_and_plain_chains_agree():
    """The plain chains and the n-D general chain give the same labels."""
    _need_gpu()
    for name in ("spiral-130", "percolation3d-40x41x42", "stripes-up-65x97"):
        a = ADVERSARIAL[name]()
        for c in range(1, a.ndim + 1):
            plain = to_host(meshccl.label(to_backend(a, "gpu"), connectivity=c, return_info=True)[0])
            np.testing.assert_array_equal(plain, _general(a, connectivity=c))


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [1, 2, 4])
def test_gpu_runs2d_against_general(rows):
    """Plain 2-D images take runs2d.cu; the general chain must agree, and
    both must equal skimage: rows 16-byte aligned (two vector loads per row)
    and not, one-byte cells signed and unsigned with a background that is
    not 0, wider cells, bool, tiles binary and not in one image, strips of 8
    tiles (images a few strips wide, diagonal-only contacts across tile
    borders); the label pass with 1, 2 or 4 tile rows per lane group."""
    _need_gpu()
    from meshccl import _tuning

    rng = np.random.default_rng(11)
    yy, xx = np.mgrid[:70, :700]
    y2, x2 = np.mgrid[:130, :270]
    images = [
        patterns.percolation((512, 512), 0.5927, seed=6),        # aligned rows
        patterns.percolation((300, 257), 0.5927, seed=7),        # odd width
        patterns.spiral(160),
        rng.integers(-3, 2, (200, 96)).astype(np.int8),         # signed bytes
        np.repeat(rng.integers(0, 3, (40, 30)), 4, axis=0).repeat(4, axis=1).astype(np.uint16),
        patterns.percolation((96, 1024), 0.5, seed=8).astype(bool),
        _part_binary((256, 320), rng),
        patterns.spiral(600),
        ((xx + yy) % 2).astype(np.uint8),                         # a checkerboard
        ((xx // 3 + yy) % 4 == 0).astype(np.uint8),               # diagonal stripes
        rng.integers(0, 3, (64, 300)).astype(np.uint32),
        ((x2 // 2 - y2) % 5 == 0).astype(np.uint8),               # stripes the other way
        rng.integers(0, 4, (200, 200)).astype(np.uint8),          # Potts-like
        patterns.percolation((257, 333), 0.4073, seed=9),         # c2's threshold
        patterns.percolation((3000, 32), 0.5927, seed=10),        # one tile across
        patterns.percolation((1500, 20), 0.5927, seed=12),        # one part tile across
        rng.integers(0, 3, (2000, 64)).astype(np.uint8),          # two tiles across
        patterns.percolation((900, 230), 0.5927, seed=13),        # seven tiles across
    ]
    with _tuning.override(RUNS_LABEL_ROWS={4: rows, 8: 1}):
        _plain_against_general(images)


@pytest.mark.gpu
def test_gpu_runs2d_bands():
    """Binary 2-D images at connectivity 2 are labelled in bands of two rows
    (runs.cuh, band_node), tile by tile where the tile's cells are all
    0 / 1 with background 0.  Against skimage and the general chain: odd heights (a last band of one row), one row, one
    column, widths that are not multiples of 32, a checkerboard (each band
    one run, joined only diagonally), one-cell-wide lines in every
    direction, lines along band borders, bool, tiles banded and not in one
    image, and random images at the thresholds."""
    _need_gpu()
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
    _plain_against_general(images)


@pytest.mark.gpu
def test_gpu_runs2d_slots():
    """Plain 2-D images keep the piece roots of a tile's run starts in the
    tile's slots (_tuning.RUNS_2D_SLOTS) where they fit, else at the run
    starts in the labels array.  With slots and without, against skimage:
    tiles of both kinds in one image (random bytes beside blobs), tiles of
    exactly as many run starts as the default slots (2 runs in every row:
    64) and more (3 a row: 96), as 192 slots (6 a row) and more (7 a row),
    of 512 (16 a row) and of 1024 (no two cells alike
    along a row), widths that are not multiples of 32, one row, one column,
    int64 labels, and 512 slots (every binary tile fits); and the kernels
    compiled without slots, which a launch plan takes where few tiles fit
    (_tuning.RUNS_2D_SLOTS_SHARE above 1: every call)."""
    _need_gpu()
    from meshccl import _tuning

    rng = np.random.default_rng(31)
    mixed = patterns.blobs((160, 200), seed=2).astype(np.uint8)
    mixed[:, :96] = rng.integers(0, 256, (160, 96))
    yy, xx = np.mgrid[:96, :131]
    images = [
        mixed,
        (xx % 16 == 0).astype(np.uint8),                # tile 0: 2 runs a row, 64 run starts
        (xx % 11 == 0).astype(np.uint8),                # tile 0: 3 runs a row, 96
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
    default = _tuning.RUNS_2D_SLOTS
    for a in images:
        for c in (1, 2):
            for bg in (0, 1):
                want = sk_label(a, connectivity=c, background=bg)
                for slots, always in ((default, 0.0), (default, 2.0), (192, 0.0), (512, 0.0),
                                      (0, 0.0)):
                    with _tuning.override(RUNS_2D_SLOTS=slots,
                                          RUNS_2D_SLOTS_SHARE={1: always, 2: always}):
                        msg = f"{a.dtype} {a.shape} c={c} bg={bg} slots={slots} share={always}"
                        got = meshccl.label(to_backend(a, "gpu"), connectivity=c, background=bg)
                        np.testing.assert_array_equal(to_host(got), want, err_msg=msg)
                        got = meshccl.label(to_backend(a, "gpu"), connectivity=c, background=bg,
                                            dtype=np.int64, return_info=True)[0]
                        np.testing.assert_array_equal(to_host(got), want, err_msg=msg + " int64")


@pytest.mark.gpu
def test_gpu_every_cell_written_on_dirty_memory():
    """Labels come in memory from CuPy's pool, which is not cleared: every
    cell, background included, must be written by the kernels.  Each call
    here gets the block of an array just filled with -7 (asserted: the same
    address) and must still label as skimage does.  The images are larger
    than _tuning.PLAN_GRAPH_CELLS, so that the kernels write straight into that
    block (smaller ones go through a plan's own buffers): 2-D widths that
    are and are not multiples of 8 and of 32, a 3-D volume, int32 and int64
    labels, both forms of the 2-D tile kernel (slots and none), a plan's
    later calls (the result of each call stays alive until the next, so the
    labels alternate between two blocks: packed launches, then the CUDA
    graph recorded at each pair of addresses, then one replayed) and the
    general path (return_info)."""
    cupy = pytest.importorskip("cupy")
    _need_gpu()
    from meshccl import _tuning

    images = [patterns.blobs((1024, 1024), seed=3), patterns.blobs((730, 731), seed=4),
              patterns.percolation((555, 1003), 0.3, seed=5), patterns.spiral(1024),
              np.zeros((600, 900), np.uint8), patterns.blobs((90, 100, 70), seed=6)]
    assert all(a.size > _tuning.PLAN_GRAPH_CELLS for a in images)
    for always in (0.0, 2.0):
        with _tuning.override(RUNS_2D_SLOTS_SHARE={1: always, 2: always}):
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


def _part_binary(shape, rng):
    """0/1 percolation with 3s sprinkled over one region: the tiles there
    take the byte-wise compares, the others the binary shortcut
    (runs.cuh, binary_row), and components cross between them."""
    a = patterns.percolation(shape, 0.55 if len(shape) == 2 else 0.3116, seed=12)
    region = tuple(slice(s // 4, s) for s in shape[:-1]) + (slice(shape[-1] // 2, shape[-1]),)
    sub = a[region]
    sub[rng.random(sub.shape) < 0.05] = 3
    return a


def _plain_against_general(images):
    """Each image at every connectivity and three backgrounds: the plain
    chain through a launch plan and directly, and the general chain, all
    equal to skimage."""
    for a in images:
        for c in range(1, a.ndim + 1):
            for bg in (0, -1, 1):
                want = sk_label(a, connectivity=c, background=bg)
                msg = f"{a.dtype} {a.shape} c={c} bg={bg}"
                # a launch plan (repeated calls), then the direct path
                plain = to_host(meshccl.label(to_backend(a, "gpu"), connectivity=c, background=bg))
                np.testing.assert_array_equal(plain, want, err_msg=msg)
                plain = to_host(meshccl.label(to_backend(a, "gpu"), connectivity=c, background=bg,
                                              return_info=True)[0])
                np.testing.assert_array_equal(plain, want, err_msg=msg)
                np.testing.assert_array_equal(_general(a, connectivity=c, background=bg), want,
                                              err_msg=msg + " (general)")


@pytest.mark.gpu
def test_gpu_runs3d_against_general():
    """3-D volumes of one-byte cells take runs3d.cu (bricks of 32 x 32 x 8,
    16 at connectivity 1; z pairs inside a brick in shared memory, a brick's
    first plane against the one below by the z-face kernel, the pairs across
    tiles' x and y faces by the seam kernel).  They
    and the general chain give skimage's labels at connectivity 1, 2 and 3: rows aligned and
    not, plane counts and heights that are not multiples of the brick, a
    signed byte volume, bool, diagonal stripes (pairs across brick edges and
    corners) and a wider dtype (row masks from ballots)."""
    _need_gpu()
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
    _plain_against_general(images)


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
