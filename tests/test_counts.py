"""``label(..., return_counts=True)``: the cells of each label, counted in the
pass that writes the labels.

Every case checks the same contract on every backend (NumPy in: the CPU;
CuPy in: the GPU, skipped without one): the labels are the ones the call
gives without counts, and ``counts`` is an int64 array of the labels'
array type, of length N + 1, equal to ``numpy.bincount(labels.ravel(),
minlength=N + 1)`` (row 0: the background cells).  The GPU tests at the
end take each kernel chain that counts (docs/architecture.md): runs2d.cu
(1-D, 2-D; with slots and without; bands), runs3d.cu (3-D, plain and
lattice forms), the general chain (n-D, lattice features, ``axes``) and
the iterative methods.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meshccl
from meshccl import measure, patterns
from meshccl.neighbourhood import half_offsets
from conftest import HAVE_GPU, examples, to_backend, to_host


def _check(a, backend, **kw):
    """Label ``a`` with counts on ``backend``, check the contract, return
    (labels, N, counts) on the host."""
    x = to_backend(a, backend)
    plain = meshccl.label(x, return_num=True, **kw)
    labels, num, counts = meshccl.label(x, return_num=True, return_counts=True, **kw)
    assert type(counts) is type(labels), (type(counts), type(labels))
    labels, counts = to_host(labels), to_host(counts)
    np.testing.assert_array_equal(labels, to_host(plain[0]))
    assert num == plain[1]
    assert counts.dtype == np.int64 and counts.shape == (num + 1,)
    want = np.bincount(labels.ravel().astype(np.int64), minlength=num + 1)
    np.testing.assert_array_equal(counts, want, err_msg=f"{a.dtype} {a.shape} {kw}")
    return labels, num, counts


# ---------------------------------------------------------------------------
# every backend
# ---------------------------------------------------------------------------

DTYPES = [np.bool_, np.uint8, np.int8, np.uint16, np.int32, np.int64, np.float32]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (257,), (37, 45), (70, 33), (7, 9, 40), (3, 4, 5, 6)])
def test_random_images(backend, dtype, shape):
    rng = np.random.default_rng(sum(shape))
    a = rng.integers(0, 2 if dtype is np.bool_ else 4, shape).astype(dtype)
    for c in range(1, len(shape) + 1):
        for bg in (None, 1):
            _check(a, backend, connectivity=c, background=bg)


def test_blobs_percolation_spiral(backend):
    cases = [patterns.blobs((130, 170), seed=1), patterns.percolation((200, 150), 0.5927, seed=2),
             patterns.spiral(97), patterns.percolation((20, 30, 40), 0.3116, seed=3),
             patterns.blobs((16, 40, 50), seed=4).astype(np.uint16), patterns.potts((90, 70), 4)]
    for a in cases:
        for c in range(1, a.ndim + 1):
            _check(a, backend, connectivity=c)


ADVERSARIAL = {
    "all-background": lambda: np.zeros((40, 70), np.uint8),
    "all-background-3d": lambda: np.zeros((5, 40, 70), np.uint16),
    "all-one-label": lambda: np.ones((66, 67), np.uint8),
    "all-one-label-3d": lambda: np.full((9, 33, 65), 7, np.int32),
    "checkerboard": lambda: (np.indices((61, 90)).sum(0) % 2).astype(np.uint8),
    "checkerboard-3d": lambda: (np.indices((9, 17, 35)).sum(0) % 2).astype(np.uint8),
    "checkerboard-values": lambda: (np.indices((40, 64)).sum(0) % 2 + 1).astype(np.int16),
    "many-labels": lambda: np.arange(64 * 50, dtype=np.int32).reshape(64, 50),
    "many-labels-3d": lambda: np.arange(6 * 20 * 33, dtype=np.uint16).reshape(6, 20, 33),
    "stripes": lambda: (np.arange(300) % 3 == 0).astype(np.uint8)[None, :].repeat(40, 0),
    "columns": lambda: (np.arange(65) % 2).astype(np.uint8)[None, :].repeat(70, 0),
    "one-cell": lambda: np.ones((1, 1), np.uint8),
    "one-foreground-cell": lambda: np.pad(np.ones((1, 1), np.uint8), ((30, 2), (40, 7))),
    "last-cell": lambda: np.pad(np.ones((1, 1), np.uint8), ((39, 0), (69, 0))),
    "row": lambda: (np.arange(5000) % 7 != 0).astype(np.uint8)[None, :],
    "column": lambda: (np.arange(3000) % 5 != 0).astype(np.uint8)[:, None],
    "1d": lambda: (np.arange(1000) // 3 % 4).astype(np.uint8),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_adversarial(backend, name):
    a = ADVERSARIAL[name]()
    for c in range(1, a.ndim + 1):
        for bg in (None, 0, 1, -1):
            _check(a, backend, connectivity=c, background=bg)


def test_counts_of_known_images(backend):
    x = np.array([[1, 1, 0, 2],
                  [0, 1, 0, 2],
                  [3, 0, 0, 2]])
    labels, counts = meshccl.label(to_backend(x, backend), connectivity=1, return_counts=True)
    np.testing.assert_array_equal(to_host(counts), [5, 3, 3, 1])
    labels, counts = meshccl.label(to_backend(np.zeros((3, 4), np.uint8), backend),
                                   return_counts=True)
    np.testing.assert_array_equal(to_host(counts), [12])
    labels, counts = meshccl.label(to_backend(np.ones((3, 4), np.uint8), backend),
                                   return_counts=True)
    np.testing.assert_array_equal(to_host(counts), [0, 12])


def test_empty_and_zero_d(backend):
    for a in (np.zeros((0, 5), np.uint8), np.zeros((3, 0, 2), np.int32), np.zeros(0)):
        labels, num, counts = meshccl.label(to_backend(a, backend), return_num=True,
                                            return_counts=True)
        assert num == 0 and to_host(counts).tolist() == [0] and to_host(counts).dtype == np.int64
        assert type(counts) is type(labels)
    for v in (0, 3):
        _check(np.array(v, np.uint8), backend)


def test_result_order(backend):
    """labels, then num, counts and info, each where asked for."""
    x = to_backend(np.array([[1, 0, 2, 2]], np.uint8), backend)
    out = meshccl.label(x, return_counts=True)
    assert len(out) == 2 and to_host(out[1]).tolist() == [1, 1, 2]
    out = meshccl.label(x, return_num=True, return_counts=True)
    assert len(out) == 3 and out[1] == 2 and to_host(out[2]).tolist() == [1, 1, 2]
    out = meshccl.label(x, return_counts=True, return_info=True)
    assert len(out) == 3 and to_host(out[1]).tolist() == [1, 1, 2] and isinstance(out[2], dict)
    out = meshccl.label(x, return_num=True, return_counts=True, return_info=True)
    assert len(out) == 4 and out[1] == 2 and isinstance(out[3], dict)
    assert to_host(out[2]).tolist() == [1, 1, 2]
    # any value with a truth value, as return_num
    out = meshccl.label(x, return_counts=1)
    assert len(out) == 2
    assert not isinstance(meshccl.label(x, return_counts=0), tuple)


def test_bad_return_counts(backend):
    class NoTruth:
        def __bool__(self):
            raise TypeError("no truth")

    with pytest.raises(ValueError, match="return_counts must be true or false"):
        meshccl.label(to_backend(np.ones((3, 3), np.uint8), backend), return_counts=NoTruth())


def test_output_dtype_and_swapped_volumes(backend):
    """The output dtype and skimage's column-order numbering of (a, b, 1)
    volumes change the labels, never the counts' contract."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, (30, 40)).astype(np.uint8)
    for dtype in (np.int16, np.uint32, np.int64):
        labels, num, counts = _check(a, backend, connectivity=1, dtype=dtype)
        assert labels.dtype == dtype
    _check(rng.integers(0, 3, (20, 30, 1)).astype(np.int32), backend, connectivity=2)


def test_equals_measure_statistics(backend):
    a = patterns.percolation((150, 160), 0.5927, seed=9)
    labels, counts = meshccl.label(to_backend(a, backend), connectivity=1, return_counts=True)
    stats = measure.statistics(labels)
    np.testing.assert_array_equal(to_host(counts), to_host(stats["voxel_counts"]))


@pytest.mark.parametrize("feature", ["periodic", "mask", "bonds", "tolerance", "axes", "all"])
@pytest.mark.parametrize("shape", [(300,), (45, 70), (9, 20, 40), (4, 5, 6, 7)])
def test_lattice_features(backend, feature, shape):
    rng = np.random.default_rng(len(shape) * 10 + len(feature))
    ndim = len(shape)
    for c in range(1, ndim + 1):
        kw = dict(connectivity=c)
        if feature == "tolerance":
            a = rng.random(shape).astype(np.float32)
            kw.update(tolerance=0.2, background=-1)
        else:
            a = rng.integers(0, 3, shape).astype(np.uint8)
        if feature in ("periodic", "all"):
            kw["periodic"] = True if feature == "all" else [k % 2 == 0 for k in range(ndim)]
        if feature in ("mask", "all"):
            kw["mask"] = to_backend(rng.random(shape) < 0.8, backend)
        if feature in ("bonds", "all"):
            kw["bonds"] = to_backend(rng.random((len(half_offsets(ndim, c)),) + shape) < 0.6,
                                     backend)
        if feature == "axes":
            if ndim < 2:
                continue
            kw["axes"] = tuple(range(1, ndim))
            kw["connectivity"] = min(c, ndim - 1)
        _check(a, backend, **kw)


@pytest.mark.parametrize("method", ["A", "B", "C", "D", "cpu1", "cpu2"])
def test_iterative_methods(backend, method):
    rng = np.random.default_rng(3)
    cases = [(patterns.spiral(40), {}),
             (rng.integers(0, 3, (9, 11, 13)).astype(np.uint8), dict(connectivity=1)),
             (rng.integers(0, 2, (50, 40)).astype(np.uint8),
              dict(periodic=True, mask=rng.random((50, 40)) < 0.9)),
             (np.zeros((20, 20), np.uint8), {})]
    for a, kw in cases:
        if "mask" in kw:
            kw = dict(kw, mask=to_backend(kw["mask"], backend))
        _check(a, backend, method=method, **kw)


@pytest.mark.parametrize("threads", [2, 0])
def test_cpu_threads(threads):
    """The parallel CPU paths: slabs and seams (plain images), chunks of
    rows (mask, bonds, tolerance, axes); big enough to be cut."""
    rng = np.random.default_rng(8)
    plain = [patterns.percolation((400, 300), 0.5927, seed=1),
             patterns.blobs((300, 310), seed=2),
             rng.integers(0, 4, (120, 400)).astype(np.uint16),       # not binary: the general scan
             patterns.percolation((30, 40, 50), 0.3116, seed=3),
             np.ones((200, 200), np.uint8),                         # one label through every slab
             np.zeros((200, 200), np.uint8),
             (np.indices((150, 170)).sum(0) % 2).astype(np.uint8),
             np.arange(300 * 200, dtype=np.int32).reshape(300, 200)]
    for a in plain:
        for c in (1, a.ndim):
            _check(a, "cpu", connectivity=c, cpu_threads=threads)
    # chunks of rows, with components crossing every chunk border
    big = [(patterns.percolation((400, 300), 0.5927, seed=4), {}),
           (np.ones((300, 400), np.uint8), {}),
           ((np.arange(400) % 3 == 0).astype(np.uint8)[None, :].repeat(300, 0), {}),
           (patterns.blobs((40, 50, 60), seed=5), dict(connectivity=1)),
           (rng.random((300, 250)).astype(np.float32), dict(tolerance=0.3, background=-1))]
    for a, kw in big:
        for extra in (dict(mask=rng.random(a.shape) < 0.9), dict(axes=tuple(range(1, a.ndim)))):
            if "tolerance" in kw and "axes" in extra:
                continue
            _check(a, "cpu", cpu_threads=threads, **kw, **extra)
        k = len(half_offsets(a.ndim, kw.get("connectivity", a.ndim)))
        _check(a, "cpu", cpu_threads=threads, bonds=rng.random((k,) + a.shape) < 0.8, **kw)


@pytest.mark.parametrize("spread", [0, 3, 1 << 40])
def test_cpu_counter_layouts(spread):
    """Plain images on the CPU count with four counters a label up to
    _tuning.CPU_COUNTS_SPREAD_LABELS labels, one above: both layouts."""
    from meshccl import _tuning

    rng = np.random.default_rng(spread % 7)
    with _tuning.override(CPU_COUNTS_SPREAD_LABELS=spread):
        for a in (patterns.blobs((90, 110), seed=1), np.ones((33, 35), np.uint8),
                  np.zeros((10, 10), np.uint8), rng.integers(0, 2, (97, 101)).astype(np.uint8),
                  np.arange(200 * 60, dtype=np.int32).reshape(200, 60), np.arange(7)):
            for c in range(1, a.ndim + 1):
                _check(a, "cpu", connectivity=c)
                _check(a, "cpu", connectivity=c, cpu_threads=2)


@settings(max_examples=examples(100), deadline=None)
@given(data=st.data())
def test_property(data):
    """Random images of any rank and dtype, random arguments: counts ==
    bincount on the CPU, serially and on threads."""
    ndim = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.lists(st.integers(1, 9 if ndim > 2 else 70), min_size=ndim,
                                     max_size=ndim)))
    levels = data.draw(st.integers(1, 4))
    seed = data.draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    a = rng.integers(0, levels, shape).astype(data.draw(st.sampled_from(DTYPES)))
    kw = dict(connectivity=data.draw(st.integers(1, ndim)),
              background=data.draw(st.sampled_from([None, 0, 1, -1])),
              cpu_threads=data.draw(st.sampled_from([1, 2])))
    if data.draw(st.booleans()):
        kw["periodic"] = True
    if data.draw(st.booleans()):
        kw["mask"] = rng.random(shape) < 0.8
    _check(a, "cpu", **kw)


# ---------------------------------------------------------------------------
# the GPU's kernel chains
# ---------------------------------------------------------------------------

def _need_gpu():
    pytest.importorskip("cupy")
    if not HAVE_GPU:
        pytest.skip("no GPU")


def _gpu_check(a, **kw):
    """_check on the GPU, also against the CPU's counts."""
    labels, num, counts = _check(a, "gpu", **kw)
    cpu_kw = {k: to_host(v) if k in ("mask", "bonds") else v for k, v in kw.items()}
    _, _, want = meshccl.label(a, return_num=True, return_counts=True, **cpu_kw)
    np.testing.assert_array_equal(counts, want)
    return labels, num, counts


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_gpu_counts_stay_on_the_device(dtype):
    _need_gpu()
    import cupy

    x = cupy.asarray(patterns.blobs((300, 400), seed=1))
    labels, num, counts = meshccl.label(x, return_num=True, return_counts=True, dtype=dtype)
    assert isinstance(labels, cupy.ndarray) and isinstance(counts, cupy.ndarray)
    assert counts.dtype == cupy.int64 and counts.shape == (num + 1,)
    assert counts.data.device_id == x.data.device_id
    # NumPy in, GPU asked for: NumPy out
    _, counts2 = meshccl.label(x.get(), device="gpu", return_counts=True, dtype=dtype)
    assert isinstance(counts2, np.ndarray)
    np.testing.assert_array_equal(counts2, counts.get())


@pytest.mark.gpu
@pytest.mark.parametrize("rows", [1, 2, 4])
def test_gpu_runs2d(rows):
    """runs2d.cu's chain with the counted meshccl_label_runs: 1-D and 2-D,
    widths that are and are not multiples of 32, one-byte and wider cells,
    bool, binary images at connectivity 2 (bands: runs with holes in a
    band's bottom row), the label pass's lane groups, with slots and
    without, int32 and int64 labels."""
    _need_gpu()
    from meshccl import _tuning

    rng = np.random.default_rng(11)
    yy, xx = np.mgrid[:97, :300]
    images = [
        patterns.percolation((512, 512), 0.5927, seed=6),
        patterns.percolation((300, 257), 0.4073, seed=7),
        patterns.spiral(160),
        rng.integers(-3, 2, (200, 96)).astype(np.int8),
        np.repeat(rng.integers(0, 3, (40, 30)), 4, axis=0).repeat(4, axis=1).astype(np.uint16),
        patterns.percolation((96, 1024), 0.5, seed=8).astype(bool),
        ((xx + yy) % 2).astype(np.uint8),                 # checkerboard: bands joined diagonally
        ((2 * xx - yy) % 7 == 0).astype(np.uint8),
        (xx % 2 + 1).astype(np.uint8),                    # 32 runs a tile row, no background
        np.ones((130, 190), np.uint8),                    # one label in every tile
        np.zeros((130, 190), np.uint8),
        patterns.potts((130, 190), 4, seed=3),
        patterns.percolation((1, 900), 0.5, seed=4),
        patterns.percolation((300, 1), 0.5, seed=5),
        (np.arange(5000) % 7 != 0).astype(np.uint8),      # 1-D
    ]
    default = _tuning.RUNS_2D_SLOTS
    with _tuning.override(RUNS_LABEL_ROWS={4: rows, 8: 1}):
        for slots, share in ((default, 0.0), (default, 2.0), (0, 0.0)):
            with _tuning.override(RUNS_2D_SLOTS=slots, RUNS_2D_SLOTS_SHARE={1: share, 2: share}):
                for a in images:
                    for c in range(1, a.ndim + 1):
                        for bg in (0, 1):
                            for dtype in (None, np.int64):
                                _gpu_check(a, connectivity=c, background=bg, dtype=dtype)


@pytest.mark.gpu
def test_gpu_runs3d():
    """runs3d.cu's chain (3-D one-byte cells) with the counted
    meshccl_label_runs over its nz * ny rows."""
    _need_gpu()
    rng = np.random.default_rng(12)
    images = [
        patterns.percolation((24, 64, 64), 0.3116, seed=9),
        patterns.percolation((19, 45, 70), 0.25, seed=10),
        patterns.blobs((17, 70, 65), seed=2).astype(np.uint8),
        rng.integers(-2, 2, (11, 40, 33)).astype(np.int8),
        patterns.percolation((9, 33, 96), 0.5, seed=11).astype(bool),
        np.ones((20, 40, 64), np.uint8),
        np.zeros((9, 33, 33), np.uint8),
        (np.indices((9, 17, 35)).sum(0) % 2).astype(np.uint8),
    ]
    for a in images:
        for c in (1, 2, 3):
            for dtype in (None, np.int64):
                _gpu_check(a, connectivity=c, dtype=dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("feature", ["mask", "bonds", "tolerance"])
def test_gpu_runs3d_lattice(feature):
    """runs3d.cu's lattice chain with the counted label pass: volumes of
    several cell types across brick faces, a mask, bonds or a tolerance."""
    _need_gpu()
    from meshccl.neighbourhood import half_offsets

    rng = np.random.default_rng(4)
    images = [patterns.percolation((21, 75, 66), 0.3116, seed=5).astype(np.uint16),
              rng.integers(0, 3, (19, 70, 40)).astype(np.uint32),
              np.repeat(rng.integers(0, 3, (5, 9, 9)), 4, axis=0).repeat(5, 1).repeat(5, 2)
              .astype(np.float32),
              np.full((10, 40, 70), 3, np.int16),
              (rng.random((40, 33, 65)) < 0.5).astype(np.uint8),
              np.zeros((6, 17, 33), np.uint16)]
    for a in images:
        for c in (1, 2, 3):
            if feature == "mask":
                kw = dict(mask=to_backend(rng.random(a.shape) < 0.8, "gpu"))
            elif feature == "bonds":
                k = len(half_offsets(3, c))
                kw = dict(bonds=to_backend(rng.random((k,) + a.shape) < 0.6, "gpu"))
            else:
                kw = dict(tolerance=1)
            for dtype in (None, np.int64):
                _gpu_check(a, connectivity=c, dtype=dtype, **kw)


@pytest.mark.gpu
def test_gpu_general_chain():
    """The general chain (general.cu, then number_roots.cu's
    meshccl_relabel_counted): 4-D and 5-D arrays, every lattice feature,
    ``axes``, short and long scans (more words than one block scans)."""
    _need_gpu()
    rng = np.random.default_rng(13)
    a4 = rng.integers(0, 2, (6, 7, 8, 9)).astype(np.uint8)
    for c in (1, 2, 4):
        _gpu_check(a4, connectivity=c)
    _gpu_check(rng.integers(0, 3, (3, 4, 5, 6, 7)).astype(np.int16), connectivity=2)
    a = patterns.percolation((300, 280), 0.5927, seed=3)
    b = rng.integers(0, 3, (12, 30, 40)).astype(np.uint16)
    for x in (a, b):
        for c in range(1, x.ndim + 1):
            _gpu_check(x, connectivity=c, periodic=True)
            _gpu_check(x, connectivity=c, mask=to_backend(rng.random(x.shape) < 0.8, "gpu"))
            _gpu_check(x, connectivity=c, bonds=to_backend(
                rng.random((len(half_offsets(x.ndim, c)),) + x.shape) < 0.7, "gpu"))
            _gpu_check(x.astype(np.float32) + rng.random(x.shape).astype(np.float32) * 0.1,
                       connectivity=c, tolerance=0.3)
        _gpu_check(x, axes=tuple(range(1, x.ndim)))
    big = patterns.percolation((2048, 1536), 0.5927, seed=4)  # a long scan (3 launches)
    _gpu_check(big, connectivity=1, mask=to_backend(np.ones(big.shape, bool), "gpu"))
    _gpu_check(np.ones((512, 700), np.uint8), periodic=True)


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["A", "B", "C", "D"])
def test_gpu_iterative(method):
    _need_gpu()
    rng = np.random.default_rng(14)
    for a, kw in ((patterns.spiral(64), {}), (rng.integers(0, 3, (8, 20, 30)).astype(np.uint8),
                                              dict(connectivity=1)),
                  (patterns.percolation((100, 90), 0.5927, seed=1), dict(periodic=True))):
        _gpu_check(a, method=method, **kw)


@pytest.mark.gpu
def test_gpu_large_and_hot():
    """Images of many blocks of the pieces path, where one label takes
    atomics from every warp (one component everywhere), none does (all
    background), or millions of labels do."""
    _need_gpu()
    rng = np.random.default_rng(15)
    images = [(np.ones((2048, 2048), np.uint8), 2), (np.zeros((1024, 3000), np.uint8), 1),
              (patterns.spiral(1500), 1), (rng.random((1500, 1700)) < 0.5927, 1),
              (np.ones((64, 256, 256), np.uint8), 1), (np.ones((64, 128, 256), np.uint16), 3),
              (rng.random((96, 128, 160)) < 0.3116, 1),
              (rng.integers(0, 2**31, (1000, 1500)).astype(np.int32), 1)]
    for a, c in images:
        _gpu_check(a, connectivity=c)
        _gpu_check(a, connectivity=c, dtype=np.int64)


@pytest.mark.gpu
def test_gpu_plan_calls_unchanged():
    """Calls without counts keep their launch plans; calls with counts
    between them take the counted chain and give the same labels."""
    _need_gpu()
    import cupy

    for a in (patterns.blobs((700, 900), seed=3), patterns.percolation((100, 200), 0.5, seed=4),
              patterns.blobs((40, 60, 80), seed=5)):
        x = cupy.asarray(a)
        want = meshccl.label(x, connectivity=1).get()
        for _ in range(3):
            labels, counts = meshccl.label(x, connectivity=1, return_counts=True)
            np.testing.assert_array_equal(labels.get(), want)
            np.testing.assert_array_equal(counts.get(), np.bincount(want.ravel()))
            np.testing.assert_array_equal(meshccl.label(x, connectivity=1).get(), want)
        info = meshccl.label(x, connectivity=1, return_counts=True, return_info=True)[-1]
        assert "relabel" in info["seconds"] or "cells" in info["seconds"]


def _plans_counting():
    """This thread's launch plans that count (meshccl/_gpu/plan.py)."""
    from meshccl._gpu import plan

    return [p for p in getattr(plan._local, "plans", {}).values() if p.counted]


def _host_counts(a, **kw):
    """The CPU's labels of ``a`` and numpy.bincount of them."""
    kw = {k: to_host(v) if k in ("mask", "bonds") else v for k, v in kw.items()}
    labels = meshccl.label(a, **kw)
    return labels, np.bincount(labels.ravel().astype(np.int64))


@pytest.mark.gpu
def test_gpu_plans_count():
    """Repeated calls with counts take a launch plan that counts (graphs
    at addresses from the third call on, the small arrays' own graph, both
    forms of the 2-D tile kernel) and give numpy.bincount of the CPU's
    labels on every call: images of one shape with more and then fewer
    labels on one plan (the table is reused), results kept across calls
    (never a view of the table), return_num on and off, int64 labels,
    bool input."""
    _need_gpu()
    import cupy

    from meshccl._gpu import plan

    rng = np.random.default_rng(21)
    cases = [
        [patterns.percolation((512, 512), 0.5927, seed=1), np.ones((512, 512), np.uint8),
         patterns.blobs((512, 512), seed=2)],                               # small: one graph
        [patterns.percolation((1500, 2100), 0.5927, seed=3),
         np.zeros((1500, 2100), np.uint8), patterns.blobs((1500, 2100), seed=4)],
        [patterns.percolation((40, 96, 100), 0.3116, seed=5),
         patterns.blobs((40, 96, 100), seed=6).astype(np.uint8)],         # runs3d
        [rng.integers(0, 3, (30, 70, 90)).astype(np.uint16),
         np.full((30, 70, 90), 2, np.uint16)],                              # runs3d, wider
        [(np.arange(100000) % 5 != 0).astype(np.uint8), np.ones(100000, np.uint8)],  # 1-D
        [patterns.percolation((300, 700), 0.5, seed=7).astype(bool),
         np.zeros((300, 700), bool)],
        [rng.integers(-2, 3, (640, 480)).astype(np.int16)],
    ]
    plan._local.plans = None
    for images in cases:
        for dtype in (None, np.int64):
            for c in range(1, images[0].ndim + 1):
                kept = []
                for rep in range(4):
                    for a in images:
                        x = cupy.asarray(a)
                        want, want_counts = _host_counts(a, connectivity=c)
                        if rep % 2:
                            labels, counts = meshccl.label(x, connectivity=c, dtype=dtype,
                                                           return_counts=True)
                        else:
                            labels, num, counts = meshccl.label(
                                x, connectivity=c, dtype=dtype, return_num=True,
                                return_counts=True)
                            assert num == want.max(initial=0)
                        np.testing.assert_array_equal(labels.get(), want)
                        assert counts.dtype == cupy.int64
                        np.testing.assert_array_equal(counts.get(), want_counts,
                                                      err_msg=f"{a.shape} {a.dtype} c={c}")
                        kept.append((counts, want_counts))
                        # the call without counts on its own plan, unchanged
                        np.testing.assert_array_equal(
                            meshccl.label(x, connectivity=c, dtype=dtype).get(), want)
                for counts, want_counts in kept:  # (none was overwritten by a later call)
                    np.testing.assert_array_equal(counts.get(), want_counts)
        assert _plans_counting(), "the calls with counts took a plan"


@pytest.mark.gpu
def test_gpu_lattice_plans_count():
    """Lattice features with counts stay on the lattice chains
    (image_plain.lattice_program) and their plans: periodic 1-D, 2-D and
    3-D arrays, a mask, bonds, a tolerance, repeated calls, against
    numpy.bincount of the CPU's labels."""
    _need_gpu()
    import cupy

    from meshccl._gpu import plan

    rng = np.random.default_rng(22)
    a2 = patterns.percolation((300, 410), 0.5927, seed=8)
    a3 = patterns.percolation((20, 50, 70), 0.3116, seed=9)
    w3 = rng.integers(0, 3, (12, 40, 50)).astype(np.uint16)
    calls = [(a2, dict(periodic=True)), (a2, dict(periodic=(True, False))),
             (a2, dict(periodic=(False, True), connectivity=2)),
             ((np.arange(3000) % 9 != 4).astype(np.uint8), dict(periodic=True)),
             (a3, dict(periodic=True, connectivity=1)), (a3, dict(periodic=True)),
             (w3, dict(periodic=(True, False, True), connectivity=2)),
             (a2, dict(mask=cupy.asarray(rng.random(a2.shape) < 0.8))),
             (a2, dict(mask=cupy.asarray(rng.random(a2.shape) < 0.8), periodic=True,
                       connectivity=1)),
             (patterns.potts((200, 300), 3, seed=10).astype(np.int32),
              dict(tolerance=1, connectivity=1)),
             (np.ones((5000,), np.uint8), dict(mask=cupy.asarray(rng.random(5000) < 0.6)))]
    for c in (1, 2):
        calls.append((a2, dict(connectivity=c, bonds=cupy.asarray(
            rng.random((len(half_offsets(2, c)),) + a2.shape) < 0.6))))
    for a, kw in calls:
        plan._local.plans = None
        want, want_counts = _host_counts(a, **kw)
        x = cupy.asarray(a)
        for _ in range(3):
            labels, num, counts = meshccl.label(x, return_num=True, return_counts=True, **kw)
            np.testing.assert_array_equal(labels.get(), want)
            assert num == want.max(initial=0)
            np.testing.assert_array_equal(counts.get(), want_counts, err_msg=f"{a.shape} {kw}")
        assert _plans_counting(), f"{a.shape} {kw}: no counting plan"
        # the same chain without a plan (return_info takes none)
        labels, _, counts, info = meshccl.label(x, return_num=True, return_counts=True,
                                                return_info=True, **kw)
        assert "clear counts" in info["seconds"], info["seconds"]
        np.testing.assert_array_equal(labels.get(), want)
        np.testing.assert_array_equal(counts.get(), want_counts)
    with pytest.raises(ValueError, match="raster"):
        meshccl.label(cupy.asarray(a2), numbering="first-cell", return_counts=True)
