"""``label(..., numbering='first-cell')``: the partition without the numbering.

The contract, on every backend: the labels are 0 on the background and, on
each component, 1 + the flat (C-order) index of the component's first cell
-- so the partition equals the numbered one, the values are determined by
the input, and N (``return_num``) is the number of components.  The
reference is the numbered call mapped through each label's first
occurrence.  The GPU tests at the end take each chain's ``_first`` kernels
(docs/architecture.md): runs2d.cu with and without slots, runs3d.cu,
the lattice forms, the general chain, the iterative methods,
and launch plans.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meshccl
from meshccl import patterns
from meshccl.neighbourhood import half_offsets
from conftest import HAVE_GPU, examples, to_backend, to_host


def expected(numbered, num):
    """First-cell labels from raster labels 1..num (host arrays)."""
    flat = numbered.ravel().astype(np.int64)
    values, first = np.unique(flat, return_index=True)
    table = np.zeros(num + 1, dtype=np.int64)
    table[values] = first + 1
    table[0] = 0
    return table[flat].reshape(numbered.shape)


def check(a, backend, **kw):
    """Label ``a`` both ways on ``backend`` and check the contract."""
    x = to_backend(a, backend)
    numbered, num = meshccl.label(x, return_num=True, **kw)
    got, n = meshccl.label(x, return_num=True, numbering="first-cell", **kw)
    assert type(got) is type(numbered)
    assert n == num
    got = to_host(got)
    assert got.shape == a.shape
    np.testing.assert_array_equal(got, expected(to_host(numbered), num),
                                  err_msg=f"{a.dtype} {a.shape} {kw}")
    # and without return_num (another plan key on the GPU)
    np.testing.assert_array_equal(to_host(meshccl.label(x, numbering="first-cell", **kw)), got)
    return got


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int16, np.int32, np.float64])
@pytest.mark.parametrize("shape", [(1,), (257,), (37, 45), (7, 9, 40), (3, 4, 5, 6)])
def test_random_images(backend, dtype, shape):
    rng = np.random.default_rng(hash((shape, np.dtype(dtype).char)) % 2**32)
    a = rng.integers(0, 3, shape).astype(dtype)
    for c in range(1, len(shape) + 1):
        check(a, backend, connectivity=c)


def test_known_image(backend):
    x = np.array([[1, 0, 0],
                  [1, 1, 5],
                  [0, 0, 5]])
    got = check(x, backend)
    np.testing.assert_array_equal(got, [[1, 0, 0], [1, 1, 6], [0, 0, 6]])
    got = check(x, backend, background=-1)  # the zeros are a component too
    assert got[0, 1] == 2 and got[2, 0] == 7


def test_patterns(backend):
    check(patterns.spiral(96), backend)
    check(patterns.percolation((90, 70), 0.55, seed=3), backend, connectivity=1)
    check(patterns.blobs((20, 24, 28), seed=1), backend)


@pytest.mark.parametrize("feature", ["periodic", "mask", "bonds", "tolerance", "axes"])
@pytest.mark.parametrize("shape", [(300,), (45, 70), (9, 20, 40)])
def test_lattice_features(backend, feature, shape):
    rng = np.random.default_rng(len(shape) * 10 + len(feature))
    a = rng.integers(0, 2, shape).astype(np.int8)
    c = len(shape)
    kw = {"connectivity": c}
    if feature == "periodic":
        kw["periodic"] = True
    elif feature == "mask":
        kw["mask"] = rng.random(shape) < 0.8
    elif feature == "bonds":
        kw["bonds"] = rng.random((len(half_offsets(len(shape), c)),) + shape) < 0.7
        kw["periodic"] = True
    elif feature == "tolerance":
        a = rng.integers(0, 6, shape).astype(np.int8)
        kw["tolerance"] = 1
    else:
        kw["axes"] = tuple(range(1, len(shape))) if len(shape) > 1 else 0
        kw.pop("connectivity")
    check(a, backend, **kw)


@pytest.mark.parametrize("method", ["A", "B", "C", "D", "cpu1", "cpu2"])
def test_iterative_methods(backend, method):
    a = patterns.percolation((40, 50), 0.6, seed=7)
    check(a, backend, method=method, connectivity=1)


def test_swapped_volume_and_dtype(backend):
    # (a, b, 1) non-bool volumes: skimage numbers them in column order; the
    # first-cell labels stay flat indices of the array as given
    a = np.random.default_rng(5).integers(0, 3, (11, 13, 1))
    got = check(a, backend)
    got16 = to_host(meshccl.label(to_backend(a, backend), numbering="first-cell",
                                  dtype=np.int16))
    assert got16.dtype == np.int16
    np.testing.assert_array_equal(got16, got)


def test_empty_and_no_foreground(backend):
    for a in (np.zeros((0, 5), np.uint8), np.zeros((4, 6), np.uint8)):
        got, n = meshccl.label(to_backend(a, backend), return_num=True, numbering="first-cell")
        assert n == 0 and not to_host(got).any() and got.shape == a.shape
    got = meshccl.label(to_backend(np.ones((3, 4), np.uint8), backend), numbering="first-cell")
    assert (to_host(got) == 1).all()


def test_bad_numbering(backend):
    x = to_backend(np.ones((4, 4), np.uint8), backend)
    for bad in ("first", "Raster", None, 1):
        with pytest.raises(ValueError, match="numbering must be 'raster' or 'first-cell'"):
            meshccl.label(x, numbering=bad)
    with pytest.raises(ValueError, match="return_counts needs numbering='raster'"):
        meshccl.label(x, numbering="first-cell", return_counts=True)
    for kw in ({}, {"periodic": True}):  # (on the GPU: a plain plan, a lattice plan)
        with pytest.raises(ValueError, match="dtype=int8 cannot hold first-cell labels"):
            meshccl.label(to_backend(np.ones((20, 20), np.uint8), backend),
                          numbering="first-cell", dtype=np.int8, **kw)


@settings(max_examples=examples(40), deadline=None)
@given(st.data())
def test_property(data):
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 9), min_size=ndim, max_size=ndim)))
    a = np.array(data.draw(st.lists(st.integers(0, 2), min_size=int(np.prod(shape)),
                                    max_size=int(np.prod(shape))))).reshape(shape)
    c = data.draw(st.integers(1, ndim))
    periodic = data.draw(st.booleans())
    check(a, "cpu", connectivity=c, periodic=periodic)


# ------------------------------------------------------------------- GPU only



@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(2048, 2048), (300, 4000), (5000, 96), (1, 100000)])
@pytest.mark.parametrize("p", [0.3, 0.6, 0.9])
@pytest.mark.parametrize("c", [1, 2])
def test_gpu_runs2d(shape, p, c):
    """Plain 2-D images through the plan (both slot forms: the plan picks
    one per call from the last call's count, so call several times) and
    without it, against the CPU."""
    if not HAVE_GPU:
        pytest.skip("no CUDA GPU")
    import cupy

    a = patterns.percolation(shape, p, seed=int(p * 10) + c)
    want = check(a, "cpu", connectivity=c)
    x = cupy.asarray(a)
    for _ in range(3):
        np.testing.assert_array_equal(
            meshccl.label(x, connectivity=c, numbering="first-cell").get(), want)
    np.testing.assert_array_equal(
        meshccl.label(x, connectivity=c, numbering="first-cell", return_info=True)[0].get(), want)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32])
@pytest.mark.parametrize("c", [1, 2, 3])
def test_gpu_volumes(dtype, c):
    """runs3d.cu (one-byte and wider cells), periodic too."""
    if not HAVE_GPU:
        pytest.skip("no CUDA GPU")
    a = patterns.percolation((70, 90, 110), 0.3 if c == 1 else 0.15, seed=c).astype(dtype)
    check(a, "gpu", connectivity=c)
    check(a, "gpu", connectivity=c, periodic=True)


@pytest.mark.gpu
def test_gpu_lattice_plans():
    """The lattice chains and their plans, repeated calls."""
    if not HAVE_GPU:
        pytest.skip("no CUDA GPU")
    import cupy

    rng = np.random.default_rng(3)
    spins = np.where(rng.random((512, 640)) < 0.5, 1, -1).astype(np.int8)
    bonds = rng.random((2, 512, 640)) < 0.6
    kw = dict(background=-1, connectivity=1, periodic=True)
    want = check(spins, "cpu", bonds=bonds, **kw)
    x, b = cupy.asarray(spins), cupy.asarray(bonds)
    for _ in range(3):
        np.testing.assert_array_equal(
            meshccl.label(x, bonds=b, numbering="first-cell", **kw).get(), want)
    mask = rng.random((512, 640)) < 0.9
    check(spins, "gpu", mask=mask, **kw)
    check(spins, "gpu", tolerance=2, **kw)


@pytest.mark.gpu
def test_gpu_general_and_large_index():
    """n-D (the general chain) and int64 labels."""
    if not HAVE_GPU:
        pytest.skip("no CUDA GPU")
    a = patterns.percolation((12, 14, 16, 18), 0.4, seed=2)
    for c in (1, 4):
        check(a, "gpu", connectivity=c)
    check(patterns.spiral(300), "gpu", dtype=np.int64)
