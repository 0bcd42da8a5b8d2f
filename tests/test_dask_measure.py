"""meshccl.dask.statistics and regionprops_table against meshccl.measure on
the whole array (CPU chunks; skipped without Dask)."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import meshccl  # noqa: E402
import meshccl.dask as mdask  # noqa: E402
from meshccl import _tuning, measure  # noqa: E402

from conftest import HAVE_GPU, random_chunks  # noqa: E402


def _labels(rng, shape, sparse):
    """Labels with gaps, not 1..N: connected components renamed through a
    random map into a wide range; ``sparse``: most cells 0, some chunks
    with no label at all."""
    x = rng.random(shape) < (0.15 if sparse else 0.5)
    lab = meshccl.label(x, connectivity=1)
    n = int(lab.max())
    names = np.concatenate([[0], rng.choice(10 * n + 50, n, replace=False) + 1])
    return names[lab]


def _same(got, want):
    assert set(got) == set(want)
    for k in want:
        g, w = got[k], want[k]
        if isinstance(w, list):
            assert g == w, k
        elif w.dtype.kind in "iu" or k in ("centroids", "centroid-0", "centroid-1", "centroid-2"):
            assert g.dtype == w.dtype, k
            np.testing.assert_array_equal(g, w, err_msg=k)
        else:
            # Chunked sums add in another order; central moments are
            # differences of raw moments, so their rounding scales with the
            # largest value of the column, not with each entry, and with the
            # raw moments of the same order they cancel (a float64 ulp of
            # those: 1e-16 of them, a few additions deep).
            scale = _largest(w)
            raw = k.replace("_central", "")
            raw_scale = _largest(want[raw]) if raw != k and raw in want else 0.0
            np.testing.assert_allclose(
                g, w, rtol=1e-10, atol=max(1e-9 * max(1.0, scale), 1e-12 * raw_scale),
                equal_nan=True, err_msg=k)


def _largest(w):
    return float(np.nanmax(np.abs(w))) if w.size and np.isfinite(w).any() else 0.0


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_statistics_random_chunkings(ndim):
    rng = np.random.default_rng(50 + ndim)
    side = {1: 60, 2: 23, 3: 11}[ndim]
    for trial in range(3):
        shape = tuple(int(s) for s in rng.integers(side // 2, side + 1, ndim))
        lab = _labels(rng, shape, sparse=trial == 2)
        chunks = random_chunks(shape, rng)
        ints = rng.integers(-5, 9, shape)
        floats = rng.random(shape).astype(np.float32)
        for layout in ("cc3d", "skimage", "slices"):
            _same(mdask.statistics(da.from_array(lab, chunks=chunks), bbox_layout=layout),
                  measure.statistics(lab, bbox_layout=layout))
        for inten in (ints, floats):
            _same(mdask.statistics(da.from_array(lab, chunks=chunks),
                                   da.from_array(inten, chunks=random_chunks(shape, rng))),
                  measure.statistics(lab, inten))


def test_statistics_tree_empty_chunks_and_types():
    rng = np.random.default_rng(5)
    lab = np.zeros((30, 20), np.uint16)
    lab[3:5, 2:9] = 7
    lab[20:28, 15:19] = 60000
    lab[25, 1] = 7
    inten = rng.random((30, 20))
    with _tuning.override(DASK_FAN_IN=2):
        _same(mdask.statistics(da.from_array(lab, chunks=(4, 3)), inten, cpu_threads=2),
              measure.statistics(lab, inten))
    b = lab > 0
    _same(mdask.statistics(da.from_array(b, chunks=7)), measure.statistics(b))
    empty = np.zeros((0, 4), np.int64)
    _same(mdask.statistics(da.from_array(empty, chunks=2)), measure.statistics(empty))


def test_statistics_intensity_tree():
    rng = np.random.default_rng(6)
    lab = _labels(rng, (25, 31), sparse=False)
    inten = rng.normal(size=(25, 31))
    with _tuning.override(DASK_FAN_IN=2):
        _same(mdask.statistics(da.from_array(lab, chunks=(4, 5)), inten),
              measure.statistics(lab, inten))


def test_statistics_after_dask_label():
    rng = np.random.default_rng(7)
    x = rng.random((40, 36)) < 0.55
    image = da.from_array(x, chunks=(9, 10))
    for numbering in ("raster", "sequential"):
        labels = mdask.label(image, numbering=numbering)
        got = mdask.statistics(labels)
        want = measure.statistics(labels.compute())
        _same(got, want)


PROPS = ("label", "area", "num_pixels", "bbox", "area_bbox", "extent",
         "equivalent_diameter_area", "centroid", "centroid_local", "intensity_mean",
         "intensity_min", "intensity_max", "intensity_std", "centroid_weighted",
         "centroid_weighted_local", "moments", "moments_central", "moments_normalized",
         "inertia_tensor", "inertia_tensor_eigvals", "axis_major_length", "axis_minor_length",
         "moments_weighted", "moments_weighted_central", "moments_weighted_normalized")
#: 2-D only (as skimage)
PROPS_2D = ("eccentricity", "orientation", "moments_hu", "moments_weighted_hu")


@pytest.mark.parametrize("ndim", [2, 3])
def test_regionprops_table_random_chunkings(ndim):
    rng = np.random.default_rng(60 + ndim)
    side = {2: 21, 3: 10}[ndim]
    for trial in range(3):
        shape = tuple(int(s) for s in rng.integers(side // 2, side + 1, ndim))
        lab = _labels(rng, shape, sparse=trial == 1)
        inten = (rng.random(shape) * 10).astype(np.float32 if trial else np.int32)
        spacing = tuple(rng.uniform(0.5, 2, ndim)) if trial == 2 else None
        chunks = random_chunks(shape, rng)
        props = PROPS + (PROPS_2D if ndim == 2 and spacing is None else ())
        got = mdask.regionprops_table(da.from_array(lab, chunks=chunks),
                                      da.from_array(inten, chunks=chunks), props,
                                      spacing=spacing, separator="_")
        want = measure.regionprops_table(lab, inten, props, spacing=spacing, separator="_")
        _same(got, want)


def test_lazy_and_refusals():
    lab = da.from_array(np.array([[0, 2, 2], [5, 0, 2]]), chunks=1)
    lazy = mdask.regionprops_table(lab, properties=("label", "area"), compute=False)
    (got,) = dask.compute(lazy)
    np.testing.assert_array_equal(got["label"], [2, 5])
    with pytest.raises(NotImplementedError, match="coords_scaled"):
        mdask.regionprops_table(lab, properties=("label", "coords_scaled"))
    with pytest.raises(NotImplementedError, match="coords"):
        mdask.regionprops_table(lab, properties=("coords",))
    with pytest.raises(ValueError, match="perimeter"):
        mdask.regionprops_table(lab, properties=("perimeter",))
    with pytest.raises(ValueError, match="need an intensity_image"):
        mdask.regionprops_table(lab, properties=("intensity_mean",))
    with pytest.raises(NotImplementedError, match="periodic"):
        mdask.statistics(lab, periodic=True)
    with pytest.raises(ValueError, match="bbox_layout"):
        mdask.statistics(lab, bbox_layout="xy")
    with pytest.raises(TypeError, match="label_image must be an integer array, got bool"):
        mdask.regionprops_table(lab > 0)
    with pytest.raises(TypeError, match="labels must be an integer array"):
        mdask.statistics(lab.astype(float))
    with pytest.raises(ValueError, match=r"intensity must have the labels' shape"):
        mdask.statistics(lab, np.ones((3, 3)))
    with pytest.raises(ValueError, match="labels must be non-negative, found the label -3"):
        mdask.statistics(da.from_array(np.array([[1, -3]]), chunks=1))


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_cupy_chunks_statistics():
    import cupy

    rng = np.random.default_rng(8)
    lab = _labels(rng, (40, 30, 20), sparse=False)
    inten = rng.random((40, 30, 20))
    chunks = (13, 16, 7)
    labels = da.from_array(lab, chunks=chunks).map_blocks(cupy.asarray)
    values = da.from_array(inten, chunks=chunks).map_blocks(cupy.asarray)
    got = mdask.statistics(labels, values)
    assert isinstance(got["voxel_counts"], cupy.ndarray)
    _same({k: v.get() for k, v in got.items()}, measure.statistics(lab, inten))
    got = mdask.regionprops_table(labels, values, PROPS)
    _same({k: v.get() for k, v in got.items()},
          measure.regionprops_table(lab, inten, PROPS))


def test_docstring_examples():
    import doctest

    from meshccl import _dask_measure

    assert doctest.testmod(_dask_measure).failed == 0


# meshccl.dask.label(..., return_statistics=True): the statistics of the
# labels it gives, merged from per-chunk tables of the local labels through
# the numbering's tables, never from the labels themselves

def _same_statistics(got, labels):
    want = measure.statistics(labels)
    assert set(got) == set(want)
    for k in want:
        g = got[k].get() if hasattr(got[k], "get") else got[k]
        assert g.dtype == want[k].dtype and g.shape == want[k].shape, k
        np.testing.assert_array_equal(g, want[k], err_msg=k)


def _label_statistics(image, numbering="raster", low_memory=True, **opts):
    return dask.compute(*mdask.label(image, return_num=True, return_counts=True,
                                     return_statistics=True, numbering=numbering,
                                     low_memory=low_memory, **opts), scheduler="threads")


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_label_statistics_random_chunkings(ndim):
    rng = np.random.default_rng(40 + ndim)
    for trial in range(6):
        shape = tuple(int(s) for s in rng.integers(1, {1: 60, 2: 30, 3: 14}[ndim] + 1, ndim))
        x = rng.integers(0, 3, shape).astype(np.uint8)
        chunks = random_chunks(shape, rng)
        numbering = ("raster", "sequential")[trial % 2]
        opts = {"connectivity": int(rng.integers(1, ndim + 1)), "background": int(trial % 2)}
        if trial == 3:
            opts["mask"] = rng.random(shape) < 0.8
        lab, n, counts, stats = _label_statistics(da.from_array(x, chunks=chunks), numbering,
                                                  low_memory=bool(trial % 2), **opts)
        want = meshccl.label(x, **opts)
        if numbering == "raster":
            np.testing.assert_array_equal(lab, want)
        assert int(n) == int(want.max())
        _same_statistics(stats, want if numbering == "raster" else lab)
        np.testing.assert_array_equal(counts, stats["voxel_counts"])


def test_label_statistics_quirks_and_refusals():
    rng = np.random.default_rng(5)
    # skimage's column order for (a, b, 1) volumes: the statistics follow
    x = (rng.random((9, 7, 1)) < 0.5).astype(np.uint8) * 3
    lab, _, _, stats = _label_statistics(da.from_array(x, chunks=(4, 3, 1)))
    np.testing.assert_array_equal(lab, meshccl.label(x))
    _same_statistics(stats, meshccl.label(x))
    # every cell one component; every cell background
    for x in (np.ones((6, 5), np.uint8), np.zeros((6, 5), np.uint8)):
        _, _, _, stats = _label_statistics(da.from_array(x, chunks=2))
        _same_statistics(stats, meshccl.label(x))
    empty = mdask.label(da.zeros((0, 4), chunks=2), return_statistics=True)[1]
    _same_statistics(empty.compute(), np.zeros((0, 4), np.int64))
    with pytest.raises(ValueError, match="return_statistics"):
        mdask.label(da.ones(4, chunks=2), return_statistics=True, numbering="first-cell")
    with pytest.raises(NotImplementedError, match="periodic"):
        mdask.label(da.ones((4, 4), chunks=2), return_statistics=True, periodic=(False, True))


def _seeded_chunk(block_info=None):
    """A chunk from its position alone, as a store read chunk by chunk gives."""
    info = block_info[None]
    shape = tuple(hi - lo for lo, hi in info["array-location"])
    rng = np.random.default_rng([7, *info["chunk-location"]])
    return (rng.random(shape) < 0.4).astype(np.uint8)


def test_label_statistics_out_of_core_never_holds_labels():
    """Chunks generated from a seed each; with low_memory the statistics
    (and N, counts) come without any task that labels a chunk a second time
    or renumbers one: no labels are kept across the numbering."""
    from dask.callbacks import Callback

    x = da.map_blocks(_seeded_chunk, dtype=np.uint8, chunks=((9, 8, 9), (7, 10), (6, 6, 5)))
    whole = meshccl.label(x.compute(scheduler="sync"), connectivity=2)
    lab, n, counts, stats = mdask.label(x, connectivity=2, return_num=True,
                                        return_counts=True, return_statistics=True,
                                        low_memory=True)
    ran = []

    class Keys(Callback):
        def _start_state(self, dsk, state):
            pass

        def _pretask(self, key, dsk, state):
            ran.append(key[0] if isinstance(key, tuple) else key)

    with Keys():
        n, counts, stats = dask.compute(n, counts, stats, scheduler="threads")
    assert not [k for k in ran if k.startswith(("meshccl-label-", "meshccl-local-"))]
    assert sum(k.startswith("meshccl-chunk-") for k in ran) == 3 * 2 * 3
    assert int(n) == int(whole.max())
    _same_statistics(stats, whole)
    np.testing.assert_array_equal(counts, stats["voxel_counts"])


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("numbering", ["raster", "sequential"])
def test_cupy_chunks_label_statistics(numbering):
    import cupy

    rng = np.random.default_rng(11)
    x = (rng.random((50, 41, 37)) < 0.45).astype(np.uint8)
    image = da.from_array(x, chunks=(13, 16, 11)).map_blocks(cupy.asarray)
    for c in (1, 3):
        lab, n, counts, stats = _label_statistics(image, numbering, connectivity=c)
        assert isinstance(stats["voxel_counts"], cupy.ndarray)
        want = meshccl.label(x, connectivity=c)
        lab = lab.get()
        if numbering == "raster":
            np.testing.assert_array_equal(lab, want)
        assert int(n) == int(want.max())
        _same_statistics(stats, lab)
