"""meshccl.measure against skimage, scipy.ndimage, cc3d (when importable) and
direct per-label references, on every backend (CPU always; GPU where
available)."""

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import ndimage as ndi
from skimage.measure import label as sk_label
from skimage.measure import regionprops_table as sk_table

import meshccl
from meshccl import measure
from conftest import to_backend, to_host

LABEL_DTYPES = [np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
# Images to label are uint8 throughout (the labels' dtypes are what vary here).
SETTINGS = dict(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def label_images(draw, max_ndim=3, max_label=9):
    """Small label images with gaps and non-sequential labels."""
    ndim = draw(st.integers(1, max_ndim))
    side = {1: 20, 2: 9, 3: 5}[ndim]
    shape = tuple(draw(st.lists(st.integers(1, side), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(LABEL_DTYPES))
    values = draw(st.lists(st.integers(0, max_label), min_size=1, max_size=5, unique=True))
    return draw(hnp.arrays(dtype, shape, elements=st.sampled_from(values)))


def intensities(shape):
    return st.one_of(
        hnp.arrays(np.float64, shape, elements=st.floats(-4, 4, allow_nan=False)),
        hnp.arrays(np.uint8, shape), hnp.arrays(np.int32, shape, elements=st.integers(-50, 50)))


def host(d):
    return {k: (to_host(v) if not isinstance(v, list) else v) for k, v in d.items()}


def check_device(out, backend):
    """CuPy in gives CuPy out; NumPy in gives NumPy out."""
    values = out.values() if isinstance(out, dict) else [out]
    arrays = [v for v in values if not isinstance(v, list)]
    for v in arrays:
        assert isinstance(v, np.ndarray) == (backend == "cpu"), type(v)


# ---------------------------------------------------------------------------
# per-label references
# ---------------------------------------------------------------------------

def reference(labels, intensity=None):
    """Statistics label by label, from the coordinates of its cells."""
    top = int(labels.max()) if labels.size else 0
    ndim = labels.ndim
    out = {"count": [], "lo": [], "hi": [], "centroid": [], "isum": [], "imean": [],
           "imin": [], "imax": [], "wcen": []}
    for lab in range(top + 1):
        where = np.nonzero(labels == lab)
        cells = np.stack(where, axis=1).astype(np.float64) if ndim else np.zeros((0, 0))
        n = len(where[0]) if ndim else int(labels == lab)
        out["count"].append(n)
        out["lo"].append([int(w.min()) if n else 0 for w in where])
        out["hi"].append([int(w.max()) if n else -1 for w in where])
        out["centroid"].append(cells.mean(axis=0) if n else [np.nan] * ndim)
        if intensity is not None:
            v = intensity[where].astype(np.float64)
            out["isum"].append(v.sum())
            out["imean"].append(v.mean() if n else np.nan)
            out["imin"].append(v.min() if n else np.nan)
            out["imax"].append(v.max() if n else np.nan)
            s = v.sum()
            out["wcen"].append((v[:, None] * cells).sum(axis=0) / s if s != 0 else [np.nan] * ndim)
    return {k: np.array(v, dtype=np.float64).reshape(top + 1, -1) if k in ("lo", "hi", "centroid",
                                                                           "wcen") and v
            else np.array(v) for k, v in out.items()}


# ---------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------

@settings(**SETTINGS)
@given(labels=label_images(), data=st.data())
def test_statistics_match_reference(backend, labels, data):
    intensity = data.draw(st.one_of(st.none(), intensities(labels.shape)))
    got = measure.statistics(to_backend(labels, backend),
                             None if intensity is None else to_backend(intensity, backend))
    check_device(got, backend)
    got = host(got)
    want = reference(labels, intensity)
    top = int(labels.max())
    assert got["voxel_counts"].dtype == np.int64
    np.testing.assert_array_equal(got["voxel_counts"], want["count"])
    boxes = got["bounding_boxes"]
    assert boxes.shape == (top + 1, 2 * labels.ndim) and boxes.dtype == np.int64
    np.testing.assert_array_equal(boxes[:, 0::2], want["lo"])
    np.testing.assert_array_equal(boxes[:, 1::2], want["hi"])
    np.testing.assert_allclose(got["centroids"], want["centroid"], rtol=1e-12)
    if intensity is not None:
        np.testing.assert_allclose(got["intensity_sum"], want["isum"], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got["intensity_mean"], want["imean"], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(got["intensity_min"], want["imin"])
        np.testing.assert_array_equal(got["intensity_max"], want["imax"])
        # where the intensities nearly cancel, the weighted centroid depends on
        # the order of the additions: compare the well-conditioned rows
        mass = np.array([np.abs(intensity[labels == lab].astype(float)).sum()
                         for lab in range(top + 1)])
        ok = np.abs(want["isum"]) > 1e-6 * mass
        np.testing.assert_allclose(got["weighted_centroids"][ok], want["wcen"][ok], rtol=1e-9,
                                   atol=1e-9)
        assert np.isnan(got["weighted_centroids"][got["intensity_sum"] == 0]).all()


def test_statistics_layouts(backend):
    labels = np.array([[1, 1, 0, 4],
                       [0, 0, 0, 4],
                       [2, 0, 0, 4]], dtype=np.int32)
    lab = to_backend(labels, backend)
    cc = to_host(measure.statistics(lab)["bounding_boxes"])
    np.testing.assert_array_equal(cc, [[0, 2, 0, 2], [0, 0, 0, 1], [2, 2, 0, 0], [0, -1, 0, -1],
                                       [0, 2, 3, 3]])
    sk = to_host(measure.statistics(lab, bbox_layout="skimage")["bounding_boxes"])
    np.testing.assert_array_equal(sk, [[0, 0, 3, 3], [0, 0, 1, 2], [2, 0, 3, 1], [0, 0, 0, 0],
                                       [0, 3, 3, 4]])
    sl = measure.statistics(lab, bbox_layout="slices")["bounding_boxes"]
    assert sl == [(slice(0, 3), slice(0, 3)), (slice(0, 1), slice(0, 2)),
                  (slice(2, 3), slice(0, 1)), None, (slice(0, 3), slice(3, 4))]
    s = host(measure.statistics(lab))
    np.testing.assert_array_equal(s["voxel_counts"], [6, 2, 1, 0, 3])
    assert np.isnan(s["centroids"][3]).all()


@settings(**SETTINGS)
@given(labels=label_images(max_label=12), data=st.data())
def test_statistics_match_cc3d(labels, data):
    cc3d = pytest.importorskip("cc3d")
    if labels.ndim == 1:
        labels = labels[None]
    labels = labels.astype(np.uint32)
    assume(labels.max() < labels.size)  # cc3d's limit
    want = cc3d.statistics(labels)
    want_raw = cc3d.statistics(labels, no_slice_conversion=True)
    got = measure.statistics(labels)
    np.testing.assert_array_equal(got["voxel_counts"], want["voxel_counts"])
    np.testing.assert_allclose(got["centroids"], want["centroids"], rtol=1e-12)
    present = got["voxel_counts"] > 0
    np.testing.assert_array_equal(got["bounding_boxes"][present],
                                  want_raw["bounding_boxes"][present])
    assert measure.statistics(labels, bbox_layout="slices")["bounding_boxes"] == \
        want["bounding_boxes"]


def test_statistics_empty_and_background_only(backend):
    for a in (np.zeros((0, 3), np.int32), np.zeros((3, 4), np.uint8), np.zeros(5, np.int64)):
        s = host(measure.statistics(to_backend(a, backend), to_backend(a.astype(float), backend)))
        np.testing.assert_array_equal(s["voxel_counts"], [a.size])
        if a.size == 0:
            assert np.isnan(s["centroids"]).all() and np.isnan(s["intensity_mean"]).all()
            np.testing.assert_array_equal(s["bounding_boxes"], [[0, -1] * a.ndim])
            assert s["intensity_sum"][0] == 0
        else:
            np.testing.assert_array_equal(s["bounding_boxes"][0, 1::2], np.array(a.shape) - 1)
            np.testing.assert_allclose(s["centroids"][0], (np.array(a.shape) - 1) / 2)
            assert np.isnan(s["weighted_centroids"]).all()  # intensity sums to 0
    assert measure.find_objects(to_backend(np.zeros((0, 3), np.int32), backend)) == []
    assert measure.find_objects(to_backend(np.zeros((2, 3), np.int32), backend)) == []
    # with max_label, one entry per label whether or not the array has cells (SciPy's)
    for a in (np.zeros((0, 3), np.int32), np.zeros((2, 3), np.int32), np.zeros(0, np.uint8),
              np.array(0), np.array(2)):
        for m in (0, 1, 3):
            got = measure.find_objects(to_backend(a, backend), max_label=m)
            if a.size == 0 and m == 0:  # (SciPy takes the max of no values and fails)
                assert got == []
            else:
                assert got == ndi.find_objects(a, max_label=m), (a, m)


def test_statistics_of_meshccl_labels(backend):
    """What users do: label, then measure, on the same device."""
    rng = np.random.default_rng(5)
    img = (rng.random((40, 50)) < 0.55).astype(np.uint8)
    labels = meshccl.label(to_backend(img, backend), connectivity=1)
    s = host(measure.statistics(labels))
    want = reference(to_host(labels))
    np.testing.assert_array_equal(s["voxel_counts"], want["count"])
    np.testing.assert_allclose(s["centroids"], want["centroid"], rtol=1e-12)


def test_bool_and_zero_dimensional_labels(backend):
    s = host(measure.statistics(to_backend(np.array([True, False, True]), backend)))
    np.testing.assert_array_equal(s["voxel_counts"], [1, 2])
    np.testing.assert_array_equal(s["centroids"], [[1.0], [1.0]])
    s = host(measure.statistics(to_backend(np.array(3, dtype=np.int32), backend)))
    np.testing.assert_array_equal(s["voxel_counts"], [0, 0, 0, 1])
    assert s["centroids"].shape == (4, 0) and s["bounding_boxes"].shape == (4, 0)


# ---------------------------------------------------------------------------
# periodic lattices
# ---------------------------------------------------------------------------

def smallest_arc(coords, n):
    """(start, extent): the smallest arc covering ``coords`` on a ring of n,
    of equal ones the smallest start, by trying them all."""
    occupied = set(int(c) for c in coords)
    for extent in range(1, n + 1):
        for start in range(n):
            if occupied <= {(start + i) % n for i in range(extent)}:
                return start, extent
    raise AssertionError


def circular_mean(coords, n, weights=None):
    a = 2 * np.pi * np.asarray(coords, dtype=np.float64) / n
    w = np.ones_like(a) if weights is None else weights
    c, s = (w * np.cos(a)).sum(), (w * np.sin(a)).sum()
    if np.hypot(c, s) <= 1e-9 * np.abs(w).sum():
        return np.nan
    return (np.arctan2(s, c) * n / (2 * np.pi)) % n


@settings(**SETTINGS)
@given(labels=label_images(max_ndim=2, max_label=5), data=st.data())
def test_periodic_boxes_and_centroids(backend, labels, data):
    per = tuple(data.draw(st.lists(st.booleans(), min_size=labels.ndim, max_size=labels.ndim)))
    intensity = data.draw(hnp.arrays(np.float64, labels.shape, elements=st.floats(0.5, 2)))
    got = host(measure.statistics(to_backend(labels, backend), to_backend(intensity, backend),
                                  periodic=per))
    boxes = got["bounding_boxes"]
    for lab in range(int(labels.max()) + 1):
        where = np.nonzero(labels == lab)
        for d, n in enumerate(labels.shape):
            if not len(where[0]):
                assert (boxes[lab, 2 * d], boxes[lab, 2 * d + 1]) == (0, -1)
                continue
            if per[d]:
                start, extent = smallest_arc(where[d], n)
                assert (boxes[lab, 2 * d], boxes[lab, 2 * d + 1]) == (start, start + extent - 1)
                want = circular_mean(where[d], n)
                wwant = circular_mean(where[d], n, intensity[where])
            else:
                assert (boxes[lab, 2 * d], boxes[lab, 2 * d + 1]) == (where[d].min(),
                                                                      where[d].max())
                want = where[d].mean()
                wwant = (intensity[where] * where[d]).sum() / intensity[where].sum()
            for value, expect in ((got["centroids"][lab, d], want),
                                  (got["weighted_centroids"][lab, d], wwant)):
                assert np.isnan(value) == np.isnan(expect)
                if per[d] and not np.isnan(value):
                    assert 0 <= value < n
                    # equal on the ring (0 and n are one point)
                    value = expect + ((value - expect + n / 2) % n - n / 2)
                np.testing.assert_allclose(value, expect, rtol=1e-9, atol=1e-9)


def test_periodic_component_that_wraps(backend):
    """A blob across the corner of a torus: its box starts near the end of
    each axis and runs past it; its centroid sits on the seam."""
    img = np.zeros((6, 8), dtype=np.uint8)
    img[[0, 0, 5, 5], [0, 7, 0, 7]] = 1
    labels = meshccl.label(to_backend(img, backend), connectivity=1, periodic=True)
    assert int(to_host(labels).max()) == 1
    s = host(measure.statistics(labels, periodic=True))
    np.testing.assert_array_equal(s["bounding_boxes"][1], [5, 6, 7, 8])
    np.testing.assert_allclose(s["centroids"][1], [5.5, 7.5])
    # without the wrap the same cells span the whole lattice
    s = host(measure.statistics(labels, periodic=(False, True)))
    np.testing.assert_array_equal(s["bounding_boxes"][1], [0, 5, 7, 8])
    np.testing.assert_allclose(s["centroids"][1], [2.5, 7.5])
    # a full ring: box [0, n), circular mean undefined
    ring = np.ones((1, 8), np.int32)
    s = host(measure.statistics(to_backend(ring, backend), periodic=True))
    np.testing.assert_array_equal(s["bounding_boxes"][1], [0, 0, 0, 7])
    assert s["centroids"][1, 0] == 0 and np.isnan(s["centroids"][1, 1])


# ---------------------------------------------------------------------------
# regionprops_table and find_objects
# ---------------------------------------------------------------------------

ALL_PROPS = ("label", "area", "bbox", "centroid", "intensity_mean", "intensity_min",
             "intensity_max", "coords")


@settings(**SETTINGS)
@given(labels=label_images(max_label=12), data=st.data())
def test_regionprops_table_matches_skimage(backend, labels, data):
    if labels.ndim == 1:
        labels = labels[None]
    intensity = data.draw(intensities(labels.shape))
    want = sk_table(labels, intensity, properties=ALL_PROPS)
    got = measure.regionprops_table(to_backend(labels, backend), to_backend(intensity, backend),
                                    properties=ALL_PROPS)
    assert list(got) == list(want)
    for key in want:
        if key == "coords":
            assert len(got[key]) == len(want[key])
            for g, w in zip(got[key], want[key]):
                np.testing.assert_array_equal(to_host(g), w)
            continue
        g = to_host(got[key])
        assert g.dtype == want[key].dtype, key
        np.testing.assert_allclose(g, want[key], rtol=1e-12, err_msg=key)


def test_regionprops_table_float32_and_empty(backend):
    labels = np.array([[0, 2, 2], [5, 0, 2]], np.uint16)
    inten = np.array([[1, 2, 3], [4, 5, 6]], np.float32) / 3
    props = ("intensity_mean", "intensity_min", "intensity_max")
    want = sk_table(labels, inten, properties=props)
    got = measure.regionprops_table(to_backend(labels, backend), to_backend(inten, backend),
                                    properties=props)
    for key in props:
        np.testing.assert_allclose(to_host(got[key]), want[key], rtol=1e-6)
    empty = measure.regionprops_table(to_backend(np.zeros((2, 2), int), backend),
                                      properties=("label", "area", "bbox", "centroid"))
    want = sk_table(np.zeros((2, 2), int), properties=("label", "area", "bbox", "centroid"))
    assert list(empty) == list(want)
    for key in want:
        assert to_host(empty[key]).shape == (0,) and to_host(empty[key]).dtype == want[key].dtype


@settings(**SETTINGS)
@given(labels=label_images(), data=st.data())
def test_find_objects_matches_scipy(backend, labels, data):
    max_label = data.draw(st.integers(0, 12))
    got = measure.find_objects(to_backend(labels, backend), max_label=max_label)
    assert got == ndi.find_objects(labels, max_label=max_label)


# ---------------------------------------------------------------------------
# operations on components
# ---------------------------------------------------------------------------

@st.composite
def images(draw, max_ndim=3):
    ndim = draw(st.integers(1, max_ndim))
    side = {1: 30, 2: 10, 3: 6}[ndim]
    shape = tuple(draw(st.lists(st.integers(1, side), min_size=ndim, max_size=ndim)))
    return draw(hnp.arrays(np.uint8, shape, elements=st.integers(0, 2)))


def components(img, connectivity):
    """skimage's labels and each component's size (index = label)."""
    labels = sk_label(img, connectivity=connectivity)
    return labels, np.bincount(labels.ravel())


@settings(**SETTINGS)
@given(img=images(), data=st.data())
def test_relabel_by_size_and_largest_k(backend, img, data):
    connectivity = data.draw(st.integers(1, img.ndim))
    k = data.draw(st.integers(0, 6))
    labels, sizes = components(img, connectivity)
    # ranks by (size descending, first cell in raster order): skimage's own
    # numbering is not in raster order for (a, b, 1) volumes
    first = {}
    for i, lab in enumerate(labels.ravel().tolist()):
        first.setdefault(lab, i)
    order = sorted(range(1, len(sizes)), key=lambda lab: (-sizes[lab], first[lab]))
    lut = np.zeros(len(sizes), np.int64)
    lut[order] = np.arange(1, len(order) + 1)
    got = measure.relabel_by_size(to_backend(labels, backend))
    check_device(got, backend)
    assert got.dtype == labels.dtype
    np.testing.assert_array_equal(to_host(got), lut[labels])
    got = measure.largest_k(to_backend(img, backend), k, connectivity=connectivity)
    want = np.where(lut[labels] > k, 0, lut[labels])
    np.testing.assert_array_equal(to_host(got), want)


def test_relabel_by_size_ties_follow_first_cell(backend):
    """Ties go to the label whose first cell comes first in raster order,
    whatever its value; gaps close."""
    labels = np.array([[9, 0, 2],
                       [9, 0, 2],
                       [0, 5, 5]], np.int32)
    got = to_host(measure.relabel_by_size(to_backend(labels, backend)))
    np.testing.assert_array_equal(got, [[1, 0, 2], [1, 0, 2], [0, 3, 3]])


@settings(**SETTINGS)
@given(img=images(), data=st.data())
def test_dust_matches_skimage_and_cc3d(backend, img, data):
    connectivity = data.draw(st.integers(1, img.ndim))
    threshold = data.draw(st.integers(0, 8))
    labels, sizes = components(img, connectivity)
    want = np.where(sizes[labels] < threshold, 0, img)
    got = measure.dust(to_backend(img, backend), threshold, connectivity=connectivity)
    check_device(got, backend)
    assert got.dtype == img.dtype
    np.testing.assert_array_equal(to_host(got), want)
    lower, upper = sorted(data.draw(st.lists(st.integers(0, 8), min_size=2, max_size=2)))
    invert = data.draw(st.booleans())
    kept = (sizes[labels] >= lower) & (sizes[labels] < upper)
    want = np.where(kept != invert, img, 0)
    got = measure.dust(to_backend(img, backend), (lower, upper), connectivity, invert=invert)
    np.testing.assert_array_equal(to_host(got), want)
    binary = (img > 0).astype(np.uint8)  # (uint8: labelled as bool is, one compile less)
    if threshold >= 1:
        from skimage.morphology import remove_small_objects
        sk = remove_small_objects(binary > 0, max_size=threshold - 1, connectivity=connectivity)
        got = measure.dust(to_backend(binary, backend), threshold, connectivity)
        np.testing.assert_array_equal(to_host(got), sk)
    try:
        import cc3d
    except ImportError:
        return
    if img.ndim >= 2 and backend == "cpu":
        cc = {(2, 1): 4, (2, 2): 8, (3, 1): 6, (3, 2): 18, (3, 3): 26}[(img.ndim, connectivity)]
        np.testing.assert_array_equal(measure.dust(img, threshold, connectivity),
                                      cc3d.dust(img, threshold, connectivity=cc))


def test_dust_in_place(backend):
    img = to_backend(np.array([1, 0, 1, 1, 0, 2], np.uint8), backend)
    out = measure.dust(img, 2, in_place=True)
    assert out is img
    np.testing.assert_array_equal(to_host(img), [0, 0, 1, 1, 0, 0])
    img2 = to_backend(np.array([1, 0, 1, 1], np.uint8), backend)
    measure.dust(img2, 2)
    np.testing.assert_array_equal(to_host(img2), [1, 0, 1, 1])


def test_largest_k_matches_cc3d_cells():
    """cc3d keeps the same cells when no tie straddles the k-th place."""
    cc3d = pytest.importorskip("cc3d")
    rng = np.random.default_rng(3)
    for trial in range(10):
        img = (rng.random((20, 24)) < 0.5).astype(np.uint8)
        labels, sizes = components(img, 2)
        k = int(rng.integers(1, 6))
        s = np.sort(sizes[1:])[::-1]
        if len(s) > k and s[k - 1] == s[k]:
            continue
        got = measure.largest_k(img, k, connectivity=2)
        assert ((got > 0) == (cc3d.largest_k(img, k, connectivity=8) > 0)).all()


@settings(**SETTINGS)
@given(img=images())
def test_size_histogram(backend, img):
    labels, sizes = components(img, None)
    sizes = sizes[1:]
    hist, edges = measure.size_histogram(to_backend(labels, backend))
    hist, edges = to_host(hist), to_host(edges)
    if len(sizes) == 0:
        assert hist.shape == (0,) and edges.tolist() == [1]
    else:
        want, want_edges = np.histogram(sizes, bins=np.arange(1, sizes.max() + 2))
        np.testing.assert_array_equal(hist, want)
        np.testing.assert_array_equal(edges, want_edges)
    hist, edges = measure.size_histogram(to_backend(labels, backend), log_bins=True)
    hist, edges = to_host(hist), to_host(edges)
    assert edges[0] == 1 and (edges[1:] == 2 * edges[:-1]).all()
    want, _ = np.histogram(sizes, bins=edges)
    np.testing.assert_array_equal(hist, want)
    assert len(sizes) == 0 or edges[-2] <= sizes.max() < edges[-1]


def test_size_histogram_skips_gaps(backend):
    hist, edges = measure.size_histogram(to_backend(np.array([0, 7, 7, 3, 0]), backend))
    np.testing.assert_array_equal(to_host(hist), [1, 1])
    np.testing.assert_array_equal(to_host(edges), [1, 2, 3])


@settings(**SETTINGS)
@given(img=images(), data=st.data())
def test_largest_fraction(backend, img, data):
    connectivity = data.draw(st.integers(1, img.ndim))
    labels, sizes = components(img, connectivity)
    want = sizes[1:].max() / sizes[1:].sum() if len(sizes) > 1 else 0.0
    got = measure.largest_fraction(to_backend(img, backend), connectivity)
    assert isinstance(got, float) and got == pytest.approx(want, rel=1e-15)
    assert measure.largest_fraction(to_backend(labels, backend), labelled=True) == got
    phase_labels, phase_sizes = components(img == 2, connectivity)
    want = phase_sizes[1:].max() / phase_sizes[1:].sum() if len(phase_sizes) > 1 else 0.0
    assert measure.largest_fraction(to_backend(img, backend), connectivity, phase=2) == \
        pytest.approx(want, rel=1e-15)


def test_operations_on_empty_and_background(backend):
    for a in (np.zeros((0, 4), np.uint8), np.zeros((3, 3), np.uint8)):
        x = to_backend(a, backend)
        np.testing.assert_array_equal(to_host(measure.largest_k(x, 2)), np.zeros(a.shape))
        np.testing.assert_array_equal(to_host(measure.dust(x, 3)), a)
        np.testing.assert_array_equal(to_host(measure.relabel_by_size(x)), a)
        assert measure.largest_fraction(x) == 0.0
        hist, edges = measure.size_histogram(x)
        assert to_host(hist).shape == (0,) and to_host(edges).tolist() == [1]
    ring = to_backend(np.array([1, 1, 0, 0, 1, 0, 1], np.uint8), backend)
    np.testing.assert_array_equal(to_host(measure.largest_k(ring, 1, periodic=True)),
                                  [1, 1, 0, 0, 0, 0, 1])


# ---------------------------------------------------------------------------
# CPU threads
# ---------------------------------------------------------------------------

EXACT = ("count", "first", "box", "lo", "hi", "centroid", "imin", "imax")


def thread_cases():
    """(labels, intensity) of 1 to 4 axes with odd sides and every label
    size, empty and background-only arrays, one-cell labels and uint64
    labels with large values."""
    rng = np.random.default_rng(11)
    dtypes = [np.uint16, np.int64, np.uint8, np.uint64, np.int32, np.int8, np.uint32]
    for k, shape in enumerate([(37,), (13, 7), (5, 9, 11), (3, 5, 7, 9), (61, 3), (0, 5),
                               (4, 0, 3)]):
        labels = rng.integers(0, 7, size=shape).astype(dtypes[k])
        yield labels, rng.normal(size=shape)
        yield np.sort(labels.reshape(-1)).reshape(shape), rng.integers(-9, 9, size=shape)
    yield np.zeros((9, 31), np.uint8), np.ones((9, 31), np.float32)
    yield np.arange(7 * 11, dtype=np.int32).reshape(7, 11), rng.normal(size=(7, 11))
    big = np.array([0, 3, 2**20 + 1, 2**20 - 7, 2**19], dtype=np.uint64)
    yield big[rng.integers(0, 5, size=(23, 17))], rng.integers(0, 2**62, size=(23, 17),
                                                                dtype=np.uint64)
    yield np.ones((6, 5), bool), np.array([np.nan, 1.0] * 15).reshape(6, 5)
    # labels in raster order (slabs own the labels that start in them; a
    # spanning cluster and labels across every seam), with gaps, one-cell
    # labels, and the same labels shuffled (no slab owns much)
    perc = meshccl.label(rng.random((41, 23)) < 0.6, connectivity=1)
    yield perc, rng.integers(0, 50, size=perc.shape)
    yield np.where(perc > 0, perc * 3 + 5, 0).astype(np.uint32), rng.normal(size=perc.shape)
    yield np.arange(1, 29 * 31 + 1, dtype=np.uint32).reshape(29, 31), rng.normal(size=(29, 31))
    shuffle = np.concatenate([[0], rng.permutation(int(perc.max())) + 1])
    yield shuffle[perc], rng.integers(-5, 5, size=perc.shape)
    # every label present, most of one cell: a checkerboard's (label 0 the
    # other half), and a few of two or three cells among one-cell labels
    board = meshccl.label(np.indices((24, 19)).sum(0) % 2 == 0, connectivity=1)
    yield board, rng.normal(size=board.shape)
    sizes = np.where(rng.random(600) < 0.01, 3, 1)
    sizes[rng.integers(0, 600, size=4)] = 2
    few = np.repeat(np.arange(600), sizes)[:25 * 24].reshape(25, 24)
    yield few.astype(np.uint16), rng.integers(0, 9, size=few.shape)


def _threads_used(labels, threads, cells_per_entry=16):
    """The threads the core scans ``labels`` on (counts only, no minimum
    of cells a thread)."""
    from meshccl._cpu import measure as cpu

    rows = int(labels.max()) + 1
    used, _ = cpu._core.measure_table(
        cpu._unsigned(labels), np.array(labels.shape, dtype=np.int64), rows,
        np.zeros(0, dtype=np.int64), None, threads, 1, cells_per_entry,
        np.zeros(rows, dtype=np.int64), *([None] * 12))
    return used


def test_cpu_threads_own_labels_in_raster_order():
    """Labels numbered in raster order run on every thread however many
    they are (each slab owns the labels that start in it); the same labels
    shuffled run on one (private tables as large as the output), and a few
    labels that span every slab on all."""
    rng = np.random.default_rng(5)
    cells = np.arange(64 * 48, dtype=np.uint32).reshape(64, 48)
    assert _threads_used(cells, 4) == 4
    assert _threads_used(rng.permutation(cells.reshape(-1)).reshape(cells.shape), 4) == 1
    perc = meshccl.label(rng.random((96, 64)) < 0.6, connectivity=1)
    assert _threads_used(perc, 3) == 3
    stripes = np.broadcast_to(np.arange(8, dtype=np.uint8).repeat(8), (96, 64)).copy()
    assert _threads_used(stripes, 3) == 3


def test_cpu_table_same_for_any_thread_count():
    """Integer columns are the same for any thread count, bit for bit, and
    so are sums of integer intensities; float sums to rounding.  Slabs of
    one row each at least (no minimum size), so seams between rows are
    tried."""
    from meshccl import _tuning
    from meshccl._cpu import measure as cpu

    for labels, intensity in thread_cases():
        shape = labels.shape
        ndim = labels.ndim
        rows = int(labels.max()) + 1 if labels.size else 1
        per = tuple(range(0, ndim, 2))
        got = {}
        for threads in (1, 2, 3):
            with _tuning.override(CPU_MEASURE_MIN_CELLS=1, CPU_MEASURE_CELLS_PER_ENTRY=1):
                got[threads] = cpu.table(labels, shape, rows, first=True, boxes=True, sums=True,
                                         periodic=per, intensity=intensity, threads=threads)
        for threads in (2, 3):
            for key, want in got[1].items():
                have = got[threads][key]
                assert have.dtype == want.dtype and have.shape == want.shape, key
                exact = key in EXACT or (key in ("isum", "iabs", "imean", "wcentroid")
                                         and intensity.dtype.kind in "iu"
                                         and np.abs(intensity).max(initial=0) < 2**40)
                if exact:
                    np.testing.assert_array_equal(have, want, err_msg=f"{key}, {threads}")
                else:
                    np.testing.assert_allclose(have, want, rtol=1e-12, atol=1e-9,
                                               err_msg=f"{key}, {threads}")
        # and the values are right
        want = reference(labels, intensity)
        np.testing.assert_array_equal(got[3]["count"], want["count"])
        present = got[3]["count"] > 0
        if ndim and present.any():
            np.testing.assert_array_equal(got[3]["lo"][present], want["lo"][present])
            np.testing.assert_array_equal(got[3]["hi"][present], want["hi"][present])
            np.testing.assert_array_equal(got[3]["centroid"][present], want["centroid"][present])
            np.testing.assert_array_equal(got[3]["imin"][present], want["imin"][present])
            np.testing.assert_array_equal(got[3]["imax"][present], want["imax"][present])


def wide_cases():
    """(labels, intensity, periodic) with rows of 32 cells and more, where
    the GPU's warps gather label 0 and a hot label in registers: blobs,
    one label, stripes whose hot label changes, short runs, labels that do
    not repeat, narrow and odd widths, 1 to 4 axes, 32- and 64-bit labels."""
    rng = np.random.default_rng(23)
    from scipy.ndimage import gaussian_filter

    def blobs(shape, level=0.3):
        field = gaussian_filter(rng.normal(size=shape), 3)
        return sk_label(field > level * field.std()).astype(np.int32)

    values = [lambda s: rng.normal(size=s).astype(np.float32), lambda s: rng.normal(size=s),
              lambda s: rng.integers(-99, 99, size=s).astype(np.int16),
              lambda s: rng.integers(0, 255, size=s).astype(np.uint8)]
    shapes2 = [(70, 1000), (33, 257), (5, 4096), (300, 333)]
    for k, shape in enumerate(shapes2):
        yield blobs(shape), values[k % 4](shape), ()
    x = np.arange(1000)
    yield np.broadcast_to((x // 40) % 7, (40, 1000)).astype(np.uint32), values[0]((40, 1000)), ()
    yield np.broadcast_to((x // 3) % 5, (20, 1000)).astype(np.int64), values[1]((20, 1000)), ()
    yield np.full((64, 512), 5, np.int32), values[2]((64, 512)), ()
    yield np.zeros((64, 512), np.uint16), values[3]((64, 512)), ()
    perc = sk_label(rng.random((200, 257)) < 0.59, connectivity=1).astype(np.uint64)
    yield perc, values[1](perc.shape), ()
    yield perc, None, (1,)
    many = rng.permutation(200 * 256).reshape(200, 256).astype(np.int64)
    yield many, values[0](many.shape), ()
    yield blobs((5000,), 0.1), values[1]((5000,)), ()
    yield blobs((20, 30, 100)), values[0]((20, 30, 100)), ()
    yield blobs((9, 17, 33)).astype(np.int64), values[2]((9, 17, 33)), ()
    yield blobs((6, 7, 8, 40)), values[1]((6, 7, 8, 40)), ()
    yield blobs((20, 30, 100)), values[1]((20, 30, 100)), (0, 2)
    # long stretches per warp (a GPU's warps each take thousands of cells)
    yield blobs((1024, 8192)), None, ()
    yield blobs((128, 256, 256)), values[0]((128, 256, 256)), ()


@pytest.mark.skipif(not meshccl.gpu_available(), reason="no CUDA GPU / CuPy")
def test_gpu_table_equals_cpu_on_wide_rows():
    """The GPU table equals the CPU's on images whose rows fill whole warps:
    integer columns exactly, float sums to rounding."""
    import cupy

    from meshccl._cpu import measure as cpu
    from meshccl._gpu import measure as gpu

    for labels, intensity, per in wide_cases():
        labels = np.ascontiguousarray(labels)
        rows = int(labels.max()) + 1
        args = dict(first=True, boxes=True, sums=True, periodic=per)
        want = cpu.table(labels, labels.shape, rows, intensity=intensity, **args)
        got = gpu.table(cupy.asarray(labels), labels.shape, rows,
                        intensity=None if intensity is None else cupy.asarray(intensity), **args)
        for key, w in want.items():
            have = cupy.asnumpy(got[key])
            if key in EXACT:
                np.testing.assert_array_equal(have, w, err_msg=f"{key} {labels.shape}")
            else:
                np.testing.assert_allclose(have, w, rtol=1e-9, atol=1e-9,
                                           err_msg=f"{key} {labels.shape}")


def test_statistics_cpu_threads():
    """statistics and regionprops_table on 1, 2, 3 and every core agree
    (integer intensities: every column bit for bit)."""
    from meshccl import _tuning

    rng = np.random.default_rng(12)
    labels = meshccl.label((rng.random((301, 257)) < 0.6).astype(np.uint8), connectivity=1)
    intensity = rng.integers(0, 100, size=labels.shape).astype(np.int16)
    want = measure.statistics(labels, intensity)
    with _tuning.override(CPU_MEASURE_MIN_CELLS=1000, CPU_MEASURE_CELLS_PER_ENTRY=1):
        for threads in (2, 3, 0):
            got = measure.statistics(labels, intensity, cpu_threads=threads)
            for key in want:
                np.testing.assert_array_equal(got[key], want[key], err_msg=key)
            t = measure.regionprops_table(labels, intensity, properties=ALL_PROPS[:-1],
                                          cpu_threads=threads)
            w = sk_table(labels, intensity, properties=ALL_PROPS[:-1])
            for key in w:
                np.testing.assert_allclose(t[key], w[key], rtol=1e-12, err_msg=key)


def test_cpu_threads_cut_where_labels_are_many():
    """Where slabs do not own their labels, private tables would outgrow
    the image: the threads are cut to CPU_MEASURE_CELLS_PER_ENTRY *
    threads * rows <= cells (table_threads; one for one-cell labels)."""
    from meshccl import _tuning
    from meshccl._cpu import measure as cpu

    labels = np.arange(64 * 64, dtype=np.int32).reshape(64, 64)
    with _tuning.override(CPU_MEASURE_MIN_CELLS=1, CPU_MEASURE_CELLS_PER_ENTRY=4):
        assert cpu.table_threads((64, 64), 64 * 64 + 1, 4) == 1
        assert cpu.table_threads((64, 64), 1024, 8) == 1  # 4 cells a label
        assert cpu.table_threads((64, 64), 256, 8) == 4
        assert cpu.table_threads((64, 64), 2, 8) == 8
        assert cpu.table_threads((3, 64), 2, 8) == 3  # a row a thread at least
        assert cpu.table_threads((4096,), 2, 8) == 1  # (1-D: one row)
    assert cpu.table_threads((64, 64), 2, 8) == 1  # CPU_MEASURE_MIN_CELLS a thread
    with _tuning.override(CPU_MEASURE_MIN_CELLS=1000):
        assert cpu.table_threads((64, 64), 2, 8) == 4
        assert cpu.table_threads((64, 64), 64, 8) == 4
        assert cpu.table_threads((64, 64), 128, 8) == 2  # 16 cells an entry
    s = measure.statistics(labels, cpu_threads=4)
    np.testing.assert_array_equal(s["voxel_counts"], np.ones(64 * 64))
    np.testing.assert_array_equal(s["centroids"],
                                  np.stack(np.unravel_index(np.arange(64 * 64), (64, 64)), 1))


def test_cpu_threads_bad_values(backend):
    x = to_backend(np.array([[1, 0], [2, 2]], np.int32), backend)
    for bad in (-1, 1.5, True, "2", None):
        with pytest.raises(ValueError, match=r"cpu_threads must be an int >= 0 \(0: all "
                                             r"cores\), got " + re.escape(repr(bad))):
            measure.statistics(x, cpu_threads=bad)
        with pytest.raises(ValueError, match=r"cpu_threads must be an int >= 0"):
            measure.regionprops_table(x, cpu_threads=bad)
    # CuPy input ignores a valid value
    np.testing.assert_array_equal(to_host(measure.statistics(x, cpu_threads=5)["voxel_counts"]),
                                  [1, 1, 2])


def test_cpu_other_byte_order():
    labels = np.array([[1, 0, 2], [2, 2, 0]])
    intensity = np.arange(6.0).reshape(2, 3)
    want = measure.statistics(labels, intensity)
    got = measure.statistics(labels.astype(">i4"), intensity.astype(">f8"))
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)
    assert got["intensity_min"].dtype == np.float64


def test_cpu_table_rejects_labels_beyond_rows():
    from meshccl._cpu import measure as cpu

    with pytest.raises(ValueError, match=r"a label is not below rows"):
        cpu.table(np.array([[0, 5]], np.uint8), (1, 2), 3)


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------

def test_bad_input(backend):
    x = to_backend(np.array([[1, 0], [2, 2]], np.int32), backend)
    with pytest.raises(ValueError, match=r"labels must be non-negative, found the label -3"):
        measure.statistics(to_backend(np.array([1, -3, 2]), backend))
    with pytest.raises(ValueError, match=r"label_image must be non-negative"):
        measure.regionprops_table(to_backend(np.array([[1, -1]]), backend))
    with pytest.raises(TypeError, match=r"labels must be an integer array .* float64"):
        measure.statistics(to_backend(np.array([1.0, 2.0]), backend))
    with pytest.raises(TypeError, match=r"labels must be an integer array .* float32"):
        measure.relabel_by_size(to_backend(np.array([1.0], np.float32), backend))
    with pytest.raises(TypeError, match=r"label_image must be an integer array, got bool"):
        measure.regionprops_table(to_backend(np.array([[True]]), backend))
    for props in (("label", "bbox"), ("coords",), ("area", "centroid")):
        # (skimage: "TypeError: Only 2-D and 3-D images supported.")
        with pytest.raises(TypeError, match=r"label_image must have at least one axis, got a 0-d "
                                            r"array \(1\)"):
            measure.regionprops_table(to_backend(np.array(1), backend), properties=props)
    with pytest.raises(ValueError, match=r"intensity must have the labels' shape \(2, 2\), got "
                                         r"shape \(2, 3\)"):
        measure.statistics(x, to_backend(np.zeros((2, 3)), backend))
    with pytest.raises(ValueError, match=r"intensity_image must have the labels' shape"):
        measure.regionprops_table(x, to_backend(np.zeros(4), backend), properties=("area",))
    with pytest.raises(TypeError, match=r"intensity must be a bool, integer or float .* complex"):
        measure.statistics(x, to_backend(np.zeros((2, 2), complex), backend))
    with pytest.raises(ValueError, match=r"need an intensity_image"):
        measure.regionprops_table(x, properties=("intensity_mean",))
    with pytest.raises(ValueError, match=r"properties \['perimeter'\] are not computed here"):
        measure.regionprops_table(x, properties=("area", "perimeter"))
    with pytest.raises(ValueError, match=r"bbox_layout must be one of .* got 'xy'"):
        measure.statistics(x, bbox_layout="xy")
    with pytest.raises(ValueError, match=r"periodic must be"):
        measure.statistics(x, periodic=(True,))
    with pytest.raises(ValueError, match=r"k must be an int >= 0, got -1"):
        measure.largest_k(x, -1)
    for bad in (1.5, True, None):
        with pytest.raises(TypeError, match=r"k must be an int >= 0, got " + repr(bad)):
            measure.largest_k(x, bad)
    with pytest.raises(ValueError, match=r"threshold must be finite and >= 0, got -2"):
        measure.dust(x, -2)
    with pytest.raises(ValueError, match=r"threshold must be finite and >= 0, got nan"):
        measure.dust(x, float("nan"))
    with pytest.raises(TypeError, match=r"threshold must be a number >= 0 or a pair"):
        measure.dust(x, "3")
    with pytest.raises(ValueError, match=r"threshold's lower bound must not exceed its upper "
                                         r"one, got \(5, 2\)"):
        measure.dust(x, (5, 2))
    with pytest.raises(ValueError, match=r"threshold must be a number or a pair"):
        measure.dust(x, (1, 2, 3))
    with pytest.raises(ValueError, match=r"max_label must be an int >= 0, got -1"):
        measure.find_objects(x, max_label=-1)
    with pytest.raises(ValueError, match=r"connectivity for a 2-D label_image must be in"):
        measure.dust(x, 2, connectivity=3)
    with pytest.raises(ValueError, match=r"labelled=True takes labels as they are"):
        measure.largest_fraction(x, 1, labelled=True)
    with pytest.raises(TypeError, match=r"labels must be a NumPy or CuPy array"):
        measure.statistics(object())


def test_docstring_examples():
    import doctest

    result = doctest.testmod(measure)
    assert result.attempted > 10 and result.failed == 0


# ---------------------------------------------------------------------------
# the GPU kernels' run logic (measure.cu), emulated on the CPU
# ---------------------------------------------------------------------------

def emulate_cells(labels, intensity, periodic):
    """meshccl_measure_runs's run logic, step by step for each chunk of 32
    cells: rows, head flags, the ballot, each tail's run, and the run's
    contributions as the kernel computes them (its warp tables only regroup
    the same additions)."""
    shape = labels.shape
    flat, vals = labels.reshape(-1), intensity.reshape(-1)
    n, ndim = flat.size, len(shape)
    width = shape[-1] if ndim else 1
    rstride = [1] * max(ndim, 1)
    for d in range(ndim - 3, -1, -1):
        rstride[d] = rstride[d + 1] * shape[d + 1]
    rows = int(flat.max()) + 1
    t = {"count": np.zeros(rows, np.int64), "first": np.full(rows, n, np.int64),
         "lo": np.full((rows, ndim), n, np.int64), "hi": np.full((rows, ndim), -1, np.int64),
         "csum": np.zeros((rows, ndim)), "cos": np.zeros((rows, len(periodic))),
         "sin": np.zeros((rows, len(periodic))), "isum": np.zeros(rows),
         "imin": np.full(rows, np.inf), "imax": np.full(rows, -np.inf),
         "wsum": np.zeros((rows, ndim))}
    for base in range(0, n, 32):
        row0 = base // width
        cells = []
        for lane in range(32):
            x, r = base - row0 * width + lane, row0
            if x >= width:
                r, x = r + x // width, x % width
            cells.append((base + lane < n, int(flat[base + lane]) if base + lane < n else 0, r, x))
        heads = 0
        for lane, (inside, lab, r, x) in enumerate(cells):
            if not inside or lane == 0 or x == 0 or cells[lane - 1][1] != lab:
                heads |= 1 << lane
        for lane, (inside, lab, r, x) in enumerate(cells):
            if not inside or not (lane == 31 or (heads >> (lane + 1)) & 1):
                continue
            head = (heads & ((2 << lane) - 1)).bit_length() - 1
            length, x_head = lane - head + 1, x - (lane - head)
            seg = vals[base + head:base + lane + 1].astype(np.float64)
            t["count"][lab] += length
            t["first"][lab] = min(t["first"][lab], base + head)
            t["isum"][lab] += seg.sum()
            t["imin"][lab] = min(t["imin"][lab], seg.min())
            t["imax"][lab] = max(t["imax"][lab], seg.max())
            coord = [(r // rstride[d]) % shape[d] for d in range(ndim - 1)]
            for d in range(ndim):
                a, b = (x_head, x) if d == ndim - 1 else (coord[d], coord[d])
                t["lo"][lab, d] = min(t["lo"][lab, d], a)
                t["hi"][lab, d] = max(t["hi"][lab, d], b)
                t["csum"][lab, d] += (a + b) * length // 2 if d == ndim - 1 else a * length
                t["wsum"][lab, d] += ((seg * np.arange(x_head, x + 1)).sum() if d == ndim - 1
                                      else a * seg.sum())
            for j, d in enumerate(periodic):
                c = np.arange(x_head, x + 1) if d == ndim - 1 else np.full(length, coord[d])
                t["cos"][lab, j] += np.cos(2 * np.pi * c / shape[d]).sum()
                t["sin"][lab, j] += np.sin(2 * np.pi * c / shape[d]).sum()
    return t


def test_kernel_runs_emulated():
    from meshccl._cpu import measure as cpu

    rng = np.random.default_rng(1)
    for trial in range(60):
        ndim = int(rng.integers(0, 5))
        shape = tuple(int(s) for s in rng.integers(1, [70, 9, 6, 5][:ndim], size=ndim))
        labels = rng.integers(0, 6, size=shape)
        if rng.random() < 0.5:  # long runs, across rows
            labels = np.sort(labels.reshape(-1)).reshape(shape)
        intensity = rng.normal(size=shape)
        per = tuple(d for d in range(ndim) if rng.random() < 0.5)
        rows = int(labels.max()) + 1
        want = cpu.table(labels, shape, rows, first=True, boxes=True, sums=True,
                         periodic=per, intensity=intensity)
        raw = emulate_cells(labels, intensity, per)
        # (as the core finishes them: (0, -1) and NaN means without cells)
        present = raw["count"][:, None] > 0
        raw["box"] = np.stack([np.where(present, raw.pop("lo"), 0),
                               np.where(present, raw.pop("hi"), -1)], axis=2)
        with np.errstate(invalid="ignore"):
            raw["csum"] = raw["csum"] / raw["count"][:, None]
        got = cpu._finish(raw, rows, ndim, len(per), int(np.sum(raw["count"] == 0)))
        for key in ("count", "first", "box", "centroid", "imin", "imax"):
            np.testing.assert_array_equal(got[key], want[key], err_msg=key)
        for key in ("isum", "imean", "wcentroid") + (("cos", "sin") if per else ()):
            np.testing.assert_allclose(got[key], want[key], atol=1e-9, err_msg=key)


# ---------------------------------------------------------------------------
# the GPU driver (_gpu/measure.py) on NumPy, its kernels emulated cell by cell
# ---------------------------------------------------------------------------

def _key(v, low):
    """Keys<V> of measure.cu: order-preserving unsigned keys of a value."""
    v = np.asarray(v)
    bits = 64 if v.dtype.itemsize == 8 else 32
    if v.dtype.kind in "ub":
        return int(v)
    if v.dtype.kind == "i":
        return (int(v) + (1 << (bits - 1))) % (1 << bits)
    if np.isnan(v):
        return 0 if low else (1 << bits) - 1
    b = int(v.view(np.dtype(f"u{v.dtype.itemsize}")))
    return ((1 << bits) - 1 - b) if b >> (bits - 1) else b | (1 << (bits - 1))


def _cells_emulated(labels, shape, rstride, ndim, width, n):
    """(label, coordinates) of each cell as the kernels find them."""
    for i in range(n):
        r, x = divmod(i, width)
        c = [(r // int(rstride[d])) % int(shape[d]) for d in range(ndim - 1)]
        yield i, int(labels[i]), c + [x]


def _kernel_init(grid, block, args, **kw):
    rows, ndim, flags, n, count, first, box, csum, isum, iabs, kmin, kmax, wsum = args
    count[:] = 0
    if flags & 1:
        first[:] = n
    if flags & 2:
        box[:, 0::2], box[:, 1::2] = np.iinfo(np.uint64).max, 0
    if flags & 4:
        csum[:] = 0
    if flags & 16:
        isum[:], iabs[:], kmin[:], kmax[:], wsum[:] = 0, 0, np.iinfo(kmin.dtype).max, 0, 0


def _kernel_runs(grid, block, args, **kw):
    """meshccl_measure_runs cell by cell (the warp tables only regroup the
    same additions)."""
    (lab, vals, n, width, per_warp, shape, rstride, ndim, axes, nper, flags, slots, words, count,
     first, box, csum, cs, sn, isum, iabs, kmin, kmax, wsum, wcos, wsin) = args
    ndim, nper, flags = int(ndim), int(nper), int(flags)
    box, csum, cs, sn, wsum, wcos, wsin = (a.reshape(-1) for a in (box, csum, cs, sn, wsum, wcos,
                                                                    wsin))
    for i, lab_, c in _cells_emulated(lab, shape, rstride, ndim, int(width), int(n)):
        count[lab_] += 1
        if flags & 1:
            first[lab_] = min(int(first[lab_]), i)
        for d in range(ndim):
            j = lab_ * ndim + d
            if flags & 2:
                box[2 * j] = min(int(box[2 * j]), c[d])
                box[2 * j + 1] = max(int(box[2 * j + 1]), c[d])
            if flags & 4:
                csum[j] += c[d]
        for j in range(nper if flags & 8 else 0):
            d = int(axes[j])
            cs[lab_ * nper + j] += np.cos(2 * np.pi * c[d] / int(shape[d]))
            sn[lab_ * nper + j] += np.sin(2 * np.pi * c[d] / int(shape[d]))
        if not flags & 16:
            continue
        w = float(vals[i])
        isum[lab_] += w
        iabs[lab_] += abs(w)
        kmin[lab_] = min(int(kmin[lab_]), _key(vals[i], True))
        kmax[lab_] = max(int(kmax[lab_]), _key(vals[i], False))
        for d in range(ndim):
            wsum[lab_ * ndim + d] += w * c[d]
        for j in range(nper):
            d = int(axes[j])
            wcos[lab_ * nper + j] += w * np.cos(2 * np.pi * c[d] / int(shape[d]))
            wsin[lab_ * nper + j] += w * np.sin(2 * np.pi * c[d] / int(shape[d]))


def _unkey(k, dtype):
    """The value of a key of ``_key`` (Keys<V>::value of measure.cu)."""
    bits = 64 if dtype.itemsize == 8 else 32
    if dtype.kind in "ub":
        return float(k)
    if dtype.kind == "i":
        return float(k - (1 << (bits - 1)))
    b = k ^ (1 << (bits - 1)) if k >> (bits - 1) else (1 << bits) - 1 - k
    return float(np.array(b, dtype=f"u{bits // 8}").view(f"f{bits // 8}"))


def _kernel_finish(dtype):
    def finish(grid, block, args, **kw):
        rows, ndim, flags, count, box, csum, isum, imean, kmin, kmax, imin, imax, wsum = args
        flags = int(flags)
        for r in range(int(rows)):
            c = int(count[r])
            if flags & 2 and c == 0:
                box[r, 0::2], box[r, 1::2] = 0, np.iinfo(np.uint64).max
            if flags & 4:
                csum.view(np.float64)[r] = csum[r] / c if c else np.nan
            if flags & 16:
                imean[r] = isum[r] / c if c else np.nan
                imin[r] = _unkey(int(kmin[r]), dtype) if c else np.nan
                imax[r] = _unkey(int(kmax[r]), dtype) if c else np.nan
                wsum[r] = wsum[r] / isum[r] if isum[r] != 0 else np.nan
    return finish


_C_DTYPES = {"unsigned char": np.uint8, "signed char": np.int8, "unsigned short": np.uint16,
             "short": np.int16, "unsigned": np.uint32, "int": np.int32,
             "unsigned long long": np.uint64, "long long": np.int64, "float": np.float32,
             "double": np.float64, "meshccl_measure::None": np.uint8}


def _emulated_kernel(name):
    kernel, _, arg = name.partition("<")
    kernel = kernel.rsplit("_", 1)[1]
    if kernel == "finish":
        return _kernel_finish(np.dtype(_C_DTYPES[arg.rstrip(">")]))
    return {"init": _kernel_init, "runs": _kernel_runs, "arcs": _kernel_arcs}[kernel]


def _kernel_arcs(grid, block, args):
    keys, m, size, lo, hi, biggest, start, step = args
    n = int(size)
    for j in range(int(m)):
        lab, c = divmod(int(keys[j]), n)
        if j > 0 and int(keys[j - 1]) // n == lab:
            gap = c - int(keys[j - 1]) % n - 1
        else:
            gap = int(lo[lab]) + n - int(hi[lab]) - 1
        if int(step) == 0:
            biggest[lab] = max(int(biggest[lab]), gap)
        elif gap == biggest[lab]:
            start[lab] = min(int(start[lab]), c)


@pytest.fixture
def numpy_as_cupy(monkeypatch):
    """A module named cupy whose arrays are NumPy arrays with .get(), and
    measure.cu's kernels emulated: runs the GPU driver where there is no GPU
    (what CuPy itself adds -- its kernels, its reductions -- is not tested)."""
    import types

    from meshccl._gpu import measure as gpu

    class ndarray(np.ndarray):
        def get(self):
            return np.asarray(self).copy()
    ndarray.__module__ = "cupy"

    def wrap(fn):
        def call(*args, **kwargs):
            kwargs.pop("kind", None)
            out = fn(*[np.asarray(a) if isinstance(a, ndarray) else a for a in args], **kwargs)
            if isinstance(out, tuple):
                return tuple(o.view(ndarray) if isinstance(o, np.ndarray) else o for o in out)
            return out.view(ndarray) if isinstance(out, np.ndarray) else out
        return call

    fake = types.ModuleType("cupy")
    fake.ndarray = ndarray
    for name in ("zeros", "full", "ascontiguousarray", "asarray", "unique", "arange", "where",
                 "sort", "argsort", "stack", "unravel_index", "lexsort", "bincount", "frexp",
                 "hypot", "arctan2", "concatenate", "nonzero", "ones", "empty"):
        setattr(fake, name, wrap(getattr(np, name)))
    for name in ("uint8", "uint32", "uint64", "int32", "int64", "float32", "float64", "float16",
                 "nan"):
        setattr(fake, name, getattr(np, name))
    monkeypatch.setitem(__import__("sys").modules, "cupy", fake)
    array_module = measure._validate.array_module
    monkeypatch.setattr(measure._validate, "array_module",
                        lambda a: (fake, a) if isinstance(a, ndarray) else array_module(a))
    monkeypatch.setattr(measure, "_backend", lambda xp: gpu if xp is fake else
                        __import__("meshccl._cpu.measure", fromlist=["table"]))
    monkeypatch.setattr(gpu, "kernels",
                        lambda source, *names: tuple(_emulated_kernel(n) for n in names))
    device = types.SimpleNamespace(id=0, attributes={"MultiProcessorCount": 2})
    stream = types.SimpleNamespace(synchronize=lambda: None, is_capturing=lambda: False)
    fake.cuda = types.SimpleNamespace(Device=lambda *args: device,
                                      get_current_stream=lambda: stream)
    caches = (gpu._geometry, gpu._axes, gpu._multiprocessors)
    for cache in caches:  # (device arrays kept per device: none of the real ones here)
        cache.cache_clear()
    yield lambda a: np.asarray(a).view(ndarray)
    for cache in caches:
        cache.cache_clear()


def test_gpu_driver_emulated(numpy_as_cupy):
    rng = np.random.default_rng(2)
    props = ("label", "area", "bbox", "centroid", "intensity_mean", "intensity_min",
             "intensity_max", "coords")
    for trial in range(40):
        ndim = int(rng.integers(0, 4))
        shape = tuple(int(s) for s in rng.integers(1, [9, 6, 5][:ndim], size=ndim))
        labels = rng.integers(0, 6, size=shape).astype(
            rng.choice([np.uint8, np.int16, np.int32, np.int64, np.uint64]))
        intensity = (rng.normal(size=shape) * 5).astype(
            rng.choice([np.float64, np.float32, np.int8, np.uint16, np.int64, np.bool_]))
        per = tuple(bool(rng.random() < 0.5) for _ in range(ndim))
        layout = str(rng.choice(measure.BBOX_LAYOUTS))
        want = measure.statistics(labels, intensity, periodic=per, bbox_layout=layout)
        got = measure.statistics(numpy_as_cupy(labels), numpy_as_cupy(intensity), periodic=per,
                                 bbox_layout=layout)
        for key in want:
            if isinstance(want[key], list):
                assert got[key] == want[key]
                continue
            assert hasattr(got[key], "get") and got[key].dtype == want[key].dtype, key
            np.testing.assert_allclose(got[key].get(), want[key], rtol=1e-9, atol=1e-9,
                                       err_msg=key)
        if ndim:
            l2, i2 = labels.reshape((1,) * (ndim == 1) + shape), intensity.reshape(
                (1,) * (ndim == 1) + shape)
            want = measure.regionprops_table(l2, i2, properties=props)
            got = measure.regionprops_table(numpy_as_cupy(l2), numpy_as_cupy(i2), properties=props)
            for key in want:
                for g, w in (zip(got[key], want[key]) if key == "coords" else
                             [(got[key], want[key])]):
                    assert g.get().dtype == w.dtype
                    np.testing.assert_allclose(g.get(), w, rtol=1e-9, err_msg=key)
        assert measure.find_objects(numpy_as_cupy(labels), 3) == measure.find_objects(labels, 3)
        np.testing.assert_array_equal(measure.relabel_by_size(numpy_as_cupy(labels)).get(),
                                      measure.relabel_by_size(labels))
        for log_bins in (False, True):
            for g, w in zip(measure.size_histogram(numpy_as_cupy(labels), log_bins),
                            measure.size_histogram(labels, log_bins)):
                np.testing.assert_array_equal(g.get(), w)
        assert measure.largest_fraction(numpy_as_cupy(labels), labelled=True) == \
            measure.largest_fraction(labels, labelled=True)
