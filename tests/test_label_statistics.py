"""label(..., return_statistics=True): the table equals
meshccl.measure.statistics of the labels the call returns, on every chain
(the GPU's run chains fill it in their label pass; the other chains and the
CPU measure the labels afterwards), with the call's other results in their
places."""

import numpy as np
import pytest

import meshccl
from meshccl import measure
from conftest import HAVE_GPU, to_backend, to_host

KEYS = ("voxel_counts", "bounding_boxes", "centroids")


def same_table(got, labels, periodic=False):
    """``got`` equals statistics(labels): counts and boxes exactly, centroids
    exactly too (sums of integers, one division) but on periodic axes
    (circular means: sums of floats, added in any order on the GPU)."""
    want = measure.statistics(labels, periodic=periodic)
    assert set(got) == set(KEYS)
    for k in KEYS:
        g, w = to_host(got[k]), to_host(want[k])
        assert g.dtype == w.dtype and g.shape == w.shape, k
        if k == "centroids" and periodic is not False:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12, err_msg=k)
        else:
            np.testing.assert_array_equal(g, w, err_msg=k)


def call(image, backend, **kw):
    """labels, N, statistics of one call on ``backend``."""
    labels, n, stats = meshccl.label(to_backend(image, backend), return_num=True,
                                     return_statistics=True, **kw)
    assert type(labels) is type(stats["voxel_counts"])
    assert to_host(stats["voxel_counts"]).shape == (n + 1,)
    return labels, n, stats


def images(seed):
    rng = np.random.default_rng(seed)
    yield rng.random((37, 45)) < 0.55                        # 2-D percolation-like
    yield rng.integers(0, 4, (70, 33)).astype(np.uint8)       # several values
    yield rng.random(300) < 0.5                               # 1-D
    yield rng.integers(0, 3, (6, 7, 9)).astype(np.uint8)     # 3-D one-byte cells
    yield rng.integers(0, 3, (5, 6, 40)).astype(np.int32)    # 3-D wider cells
    yield np.ones((33, 65), bool)                             # one label, no background
    yield (np.indices((40, 40)).sum(0) % 2).astype(bool)      # one-cell labels
    yield np.zeros((9, 31), np.uint8)                         # all background
    yield rng.random((3, 4, 17, 19)) < 0.5                    # 4-D


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("connectivity", [1, None])
def test_statistics_equal_measure(backend, seed, connectivity):
    for image in images(seed):
        labels, n, stats = call(image, backend, connectivity=connectivity)
        same_table(stats, to_host(labels))


def test_statistics_with_features(backend):
    rng = np.random.default_rng(5)
    image = rng.integers(0, 3, (50, 70)).astype(np.uint8)
    mask = rng.random(image.shape) < 0.8
    for kw in (dict(mask=to_backend(mask, backend)), dict(tolerance=1, background=-1),
               dict(axes=(1, 2)), dict(dtype=np.int64), dict(background=2)):
        img = image.reshape(5, 10, 70) if "axes" in kw else image
        labels, n, stats = call(img, backend, **kw)
        same_table(stats, to_host(labels))
    # a volume with features (on the GPU: the 3-D lattice run chain)
    volume = rng.integers(0, 3, (9, 40, 70)).astype(np.uint8)
    for kw in (dict(mask=to_backend(rng.random(volume.shape) < 0.8, backend)),
               dict(tolerance=1, background=-1)):
        labels, n, stats = call(volume, backend, **kw)
        same_table(stats, to_host(labels))


def test_statistics_periodic(backend):
    rng = np.random.default_rng(6)
    image = rng.random((30, 41)) < 0.5
    labels, n, stats = call(image, backend, periodic=True)
    same_table(stats, to_host(labels), periodic=True)
    # a stack: only the labelled axes wrap
    stack = rng.random((3, 12, 10)) < 0.5
    labels, n, stats = call(stack, backend, periodic=True, axes=(1, 2))
    same_table(stats, to_host(labels), periodic=(False, True, True))


def test_statistics_order_of_results(backend):
    image = np.array([[1, 1, 0], [0, 0, 2]], np.uint8)
    out = meshccl.label(to_backend(image, backend), return_num=True, return_counts=True,
                        return_statistics=True, return_info=True)
    labels, n, counts, stats, info = out
    assert n == 2 and isinstance(info, dict)
    np.testing.assert_array_equal(to_host(counts), to_host(stats["voxel_counts"]))
    np.testing.assert_array_equal(to_host(stats["voxel_counts"]), [3, 2, 1])
    labels, stats = meshccl.label(to_backend(image, backend), return_statistics=True)
    np.testing.assert_array_equal(to_host(stats["bounding_boxes"])[2], [1, 1, 2, 2])


def test_statistics_empty_and_bad_arguments():
    labels, stats = meshccl.label(np.zeros((0, 4), np.uint8), return_statistics=True)
    np.testing.assert_array_equal(stats["voxel_counts"], [0])
    with pytest.raises(ValueError, match="return_statistics needs numbering='raster'"):
        meshccl.label(np.ones(3), return_statistics=True, numbering="first-cell")


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_label_pass_fills_the_table():
    """The run chains' label pass: against statistics() of the same labels on
    images whose tile rows fill whole warps, with many labels (the blocks'
    tables overflow into the global table) and few (one label per block
    gathered over many rows), int32 and int64 labels, NumPy input on the
    GPU."""
    import cupy

    from meshccl._gpu import chains
    from meshccl import _validate

    rng = np.random.default_rng(11)
    cases = [
        rng.random((1024, 1536)) < 0.59,                              # many labels
        np.ones((512, 4096), np.uint8),                               # one label
        (np.indices((512, 1000)).sum(0) % 2).astype(np.uint8),        # one-cell labels
        rng.integers(0, 2, (2048, 700)).astype(np.int16),             # noise, wide cells
        rng.random((64, 96, 160)) < 0.3,                              # 3-D one-byte cells
        rng.random(1 << 20) < 0.5,                                    # 1-D
        rng.random((20, 64, 100)) < 0.5,                              # a stack (axes=(1, 2))
    ]
    for image in cases:
        kw = dict(axes=(1, 2)) if image.shape == (20, 64, 100) else {}
        prob = _validate.prepare(cupy.asarray(image), None, None, None, axes=kw.get("axes"),
                                 return_statistics=True)
        assert chains.fused_statistics(chains.select(prob), prob), image.shape
        for dtype in (None, np.int64):
            labels, n, stats = call(image, "gpu", dtype=dtype, **kw)
            same_table(stats, labels)
    # NumPy input through the GPU: host arrays back
    image = rng.random((300, 300)) < 0.5
    labels, stats = meshccl.label(image, device="gpu", return_statistics=True)
    assert isinstance(stats["centroids"], np.ndarray)
    same_table(stats, labels)
    # a mask and a tolerance take the lattice run chain
    labels, stats = meshccl.label(cupy.asarray(rng.integers(0, 9, (700, 900))), tolerance=2,
                                  background=-1, mask=cupy.asarray(rng.random((700, 900)) < .9),
                                  return_statistics=True)
    same_table(stats, labels)


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_label_pass_fills_the_table_of_lattice_volumes():
    """runs3d.cu's lattice chain takes the statistics label pass: volumes
    across bricks with a mask, bonds or a tolerance, every connectivity,
    int32 and int64 labels."""
    import cupy

    from meshccl import _validate
    from meshccl._gpu import chains
    from meshccl.neighbourhood import half_offsets

    rng = np.random.default_rng(12)
    shape = (40, 70, 100)
    spins = (rng.random(shape) < 0.5).astype(np.uint8)
    field = rng.integers(0, 7, shape).astype(np.int16)
    for c in (1, 2, 3):
        bonds = cupy.asarray(rng.random((len(half_offsets(3, c)),) + shape) < 0.585)
        for image, kw in ((spins, dict(mask=cupy.asarray(rng.random(shape) < 0.9))),
                          (spins, dict(bonds=bonds, background=-1)),
                          (field, dict(tolerance=1, background=-1))):
            prob = _validate.prepare(cupy.asarray(image), kw.get("background"), c, None,
                                     mask=kw.get("mask"), bonds=kw.get("bonds"),
                                     tolerance=kw.get("tolerance"), return_statistics=True)
            case = chains.select(prob)
            assert case.chain.name == "runs3d-lattice" and chains.fused_statistics(case, prob)
            for dtype in (None, np.int64):
                labels, n, stats = call(image, "gpu", connectivity=c, dtype=dtype, **kw)
                same_table(stats, labels)
                np.testing.assert_array_equal(
                    to_host(labels), meshccl.label(image, connectivity=c, **{
                        k: to_host(v) for k, v in kw.items()}))

