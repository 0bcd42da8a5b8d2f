"""regionprops_table's moment-based properties against skimage 0.26 (2-D,
3-D) and against skimage's n-D moment functions region by region (1-D,
4-D), on every backend (CPU always; GPU where available)."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage import measure as skm
from skimage.measure import regionprops_table as sk_table

from meshccl import _moments, _regionprops, measure
from conftest import examples, to_backend, to_host

# everything per-label that skimage computes, by ndim
MOMENT_PROPS = ("label", "area", "num_pixels", "area_bbox", "extent", "equivalent_diameter_area",
                "centroid", "centroid_local", "moments", "moments_central", "moments_normalized",
                "moments_hu", "inertia_tensor", "inertia_tensor_eigvals", "eccentricity",
                "orientation", "axis_major_length", "axis_minor_length", "intensity_mean",
                "intensity_std", "centroid_weighted", "centroid_weighted_local",
                "moments_weighted", "moments_weighted_central", "moments_weighted_normalized",
                "moments_weighted_hu", "bbox")
# what the weighted centroid divides by: ill-conditioned where it nearly cancels
WEIGHTED_CENTRED = ("centroid_weighted", "centroid_weighted_local", "moments_weighted_central",
                    "moments_weighted_normalized", "moments_weighted_hu")


def props_for(ndim, spacing):
    out = [p for p in MOMENT_PROPS if ndim == 2 or p not in _regionprops.ONLY_2D]
    if spacing is not None:
        out = [p for p in out if not p.endswith("_hu")]
    return tuple(out)


@st.composite
def label_images(draw, ndim):
    """Label images with gaps, one-cell labels and large labels."""
    side = {2: 10, 3: 6}[ndim]
    shape = tuple(draw(st.lists(st.integers(1, side), min_size=ndim, max_size=ndim)))
    values = draw(st.lists(st.integers(0, 40), min_size=1, max_size=6, unique=True))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    labels = rng.choice(values, size=shape).astype(draw(st.sampled_from(
        [np.uint8, np.int32, np.uint16, np.int64, np.uint64])))
    if draw(st.booleans()):  # a one-cell label somewhere
        labels[tuple(int(rng.integers(0, s)) for s in shape)] = 41
    return labels


def intensity_for(kind, shape, rng):
    if kind == "float":
        return rng.normal(size=shape) * 3
    if kind == "uint8":
        return rng.integers(0, 256, size=shape).astype(np.uint8)
    if kind == "int":
        return rng.integers(-50, 50, size=shape).astype(np.int32)
    if kind == "bool":
        return rng.random(size=shape) < 0.6
    return rng.random(size=shape).astype(np.float32) + 1


def base(key):
    return next(p for p in sorted(MOMENT_PROPS, key=len, reverse=True)
                if key == p or key.startswith(p + "-"))


def compare(got, want, labels, intensity):
    """Every column of ``want`` in ``got``, equal to rounding: rtol 1e-6 and an
    absolute tolerance from the property's own scale (values that are 0 in
    exact arithmetic come out as rounding noise on either side)."""
    assert list(got) == list(want)
    present = np.unique(labels[labels > 0])
    w_sum = np.array([intensity[labels == v].astype(float).sum() for v in present])
    w_abs = np.array([np.abs(intensity[labels == v].astype(float)).sum() for v in present])
    conditioned = np.abs(w_sum) > 1e-6 * w_abs
    scale = {}
    for key, w in want.items():
        finite = np.abs(w[np.isfinite(w)]) if w.dtype.kind == "f" else np.zeros(0)
        scale[base(key)] = max(scale.get(base(key), 0.0), finite.max() if finite.size else 0.0)
    for key, w in want.items():
        g = to_host(got[key])
        assert g.dtype == w.dtype, key
        assert g.shape == w.shape, key
        prop = base(key)
        rows = np.ones(len(w), bool)
        if prop in WEIGHTED_CENTRED:
            rows = conditioned
        if prop == "orientation":
            continue  # compare_orientation
        if prop in ("axis_major_length", "axis_minor_length", "eccentricity"):
            # sqrt of a difference of eigenvalues: compare the squares (an
            # isotropic label's eccentricity is sqrt of rounding noise)
            np.testing.assert_allclose(g[rows] ** 2, w[rows] ** 2, rtol=1e-6,
                                       atol=1e-9 * scale[prop] ** 2 + 1e-12, err_msg=key)
            continue
        np.testing.assert_allclose(g[rows], w[rows], rtol=1e-6, atol=1e-9 * scale[prop] + 1e-12,
                                   err_msg=key)


def compare_orientation(got, want):
    """Orientation is an axis angle: equal where the inertia tensor has a
    clear major axis; where its off-diagonal is rounding noise the angle
    is +-pi/2 by the noise's sign (equal mod pi); isotropic: undefined."""
    if "orientation" not in want:
        return
    a, b, c = (want[f"inertia_tensor-{i}-{j}"] for i, j in ((0, 0), (0, 1), (1, 1)))
    g, w = to_host(got["orientation"]), want["orientation"]
    size = np.abs(a) + np.abs(c) + 1e-300
    clear = np.abs(b) > 1e-9 * size
    np.testing.assert_allclose(g[clear], w[clear], rtol=1e-6, atol=1e-9)
    axis = ~clear & (np.abs(a - c) > 1e-9 * size)
    np.testing.assert_allclose(np.cos(2 * g[axis]), np.cos(2 * w[axis]), atol=1e-9)
    assert np.all(np.abs(g) <= np.pi / 2 + 1e-12)


def run_both(labels, intensity, props, spacing, backend):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # skimage's divisions by 0
        want = sk_table(labels, intensity, properties=props, spacing=spacing)
    got = measure.regionprops_table(
        to_backend(labels, backend), None if intensity is None else to_backend(intensity, backend),
        properties=props, spacing=spacing)
    for v in got.values():  # (object columns are host arrays of device arrays)
        assert isinstance(v, np.ndarray) == (backend == "cpu" or v.dtype == object)
    return got, want


@pytest.mark.parametrize("ndim", [2, 3])
@settings(max_examples=examples(120), deadline=None)
@given(data=st.data())
def test_moment_properties_match_skimage(backend, ndim, data):
    labels = data.draw(label_images(ndim))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    kind = data.draw(st.sampled_from(["float", "uint8", "int", "bool", "float32"]))
    intensity = intensity_for(kind, labels.shape, rng)
    spacing = data.draw(st.one_of(st.none(), st.just(2.5), st.tuples(
        *[st.floats(0.25, 4) for _ in range(ndim)])))
    props = props_for(ndim, spacing)
    if intensity.dtype == np.float32:  # skimage's std and mean are float32 sums
        props = tuple(p for p in props if p not in ("intensity_std", "intensity_mean"))
    got, want = run_both(labels, intensity, props, spacing, backend)
    compare(got, want, labels, intensity)
    compare_orientation(got, want)


def test_float32_intensity_std(backend):
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 4, size=(12, 9))
    intensity = (rng.random((12, 9)) * 7).astype(np.float32)
    got, want = run_both(labels, intensity, ("intensity_std", "intensity_mean"), None, backend)
    for key in want:  # skimage works in float32
        np.testing.assert_allclose(to_host(got[key]), want[key], rtol=1e-5)


def test_shapes_with_known_values(backend):
    # a 3 x 5 rectangle: centred second moments 5 * (3**2 - 1) / 12 * 3 and
    # 3 * (5**2 - 1) / 12 * 5, no cross term (-0.0 in the tensor): major axis
    # along axis 1, orientation +pi/2 as skimage's atan2(+0.0, -x)
    labels = np.zeros((6, 8), np.int32)
    labels[1:4, 2:7] = 7
    labels[5, 0] = 3  # one cell
    t = measure.regionprops_table(to_backend(labels, backend),
                                  properties=("label", "moments_central", "orientation",
                                              "eccentricity", "axis_minor_length", "extent"))
    t = {k: to_host(v) for k, v in t.items()}
    np.testing.assert_array_equal(t["label"], [3, 7])
    assert t["moments_central-2-0"][1] == 10.0 and t["moments_central-0-2"][1] == 30.0
    assert t["moments_central-1-1"][1] == 0.0
    assert t["orientation"][1] == np.pi / 2
    assert t["eccentricity"][0] == 0.0 and t["axis_minor_length"][0] == 0.0
    np.testing.assert_array_equal(t["extent"], [1.0, 1.0])
    want = sk_table(labels, properties=("label", "moments_central", "orientation",
                                        "eccentricity", "axis_minor_length", "extent"))
    for key in want:
        np.testing.assert_allclose(t[key], want[key], rtol=1e-12, atol=1e-12, err_msg=key)


def test_coords_scaled(backend):
    rng = np.random.default_rng(9)
    for shape, spacing in (((6, 7), (0.5, 3.0)), ((4, 3, 5), None), ((4, 3, 5), 2.0)):
        labels = rng.integers(0, 4, size=shape)
        got, want = run_both(labels, None, ("label", "coords_scaled", "coords"), spacing, backend)
        assert list(got) == list(want)
        for key in ("coords_scaled", "coords"):
            assert len(got[key]) == len(want[key])
            for g, w in zip(got[key], want[key]):
                g = to_host(g)
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_array_equal(g, w)


def test_zero_total_weight_and_one_cell_labels(backend):
    """Weighted centres of a label whose intensity sums to 0 are inf / NaN
    as skimage's; a one-cell label has zero central moments."""
    labels = np.array([[1, 1, 0, 2], [1, 1, 0, 0]], np.uint8)
    intensity = np.array([[0, 0, 0, 5], [0, 0, 0, 0]], np.float64)
    props = ("label", "centroid_weighted_local", "moments_weighted_central",
             "moments_weighted_normalized", "moments_central", "inertia_tensor_eigvals")
    got, want = run_both(labels, intensity, props, None, backend)
    for key in want:  # (the same inf and NaN places)
        np.testing.assert_allclose(to_host(got[key]), want[key], rtol=1e-12, atol=1e-15,
                                   err_msg=key)


@pytest.mark.parametrize("ndim", [1, 4])
def test_other_ndim_match_skimage_moment_functions(backend, ndim):
    """skimage's regionprops is 2-D / 3-D only; its moment functions are
    n-D: the same definitions region by region."""
    rng = np.random.default_rng(ndim)
    shape = {1: (30,), 4: (4, 3, 5, 4)}[ndim]
    for trial in range(4):
        labels = rng.integers(0, 4, size=shape)
        intensity = rng.normal(size=shape) + 3
        spacing = tuple(float(s) for s in rng.uniform(0.5, 2, ndim))
        props = ("label", "moments", "moments_central", "moments_normalized", "inertia_tensor",
                 "inertia_tensor_eigvals", "centroid_local", "moments_weighted_central",
                 "equivalent_diameter_area", "area")
        t = measure.regionprops_table(to_backend(labels, backend), to_backend(intensity, backend),
                                      properties=props, spacing=spacing)
        t = {k: to_host(v) for k, v in t.items()}
        for i, lab in enumerate(t["label"]):
            box = tuple(slice(w.min(), w.max() + 1) for w in np.nonzero(labels == lab))
            image = (labels[box] == lab).astype(np.uint8)
            m = skm.moments(image, 3, spacing=spacing)
            cen = np.array([m[tuple(np.eye(ndim, dtype=int)[d])] / m[(0,) * ndim]
                            for d in range(ndim)])
            mu = skm.moments_central(image, cen, 3, spacing=spacing)
            nu = skm.moments_normalized(mu, 3, spacing=spacing)
            tensor = skm.inertia_tensor(image, mu, spacing=spacing)
            ev = skm.inertia_tensor_eigvals(image, T=tensor)
            wimage = intensity[box] * image
            wm = skm.moments(wimage, 3, spacing=spacing)
            wcen = np.array([wm[tuple(np.eye(ndim, dtype=int)[d])] / wm[(0,) * ndim]
                             for d in range(ndim)])
            wmu = skm.moments_central(wimage, wcen, 3, spacing=spacing)
            for name, want in (("moments", m), ("moments_central", mu),
                               ("moments_normalized", nu), ("inertia_tensor", tensor),
                               ("inertia_tensor_eigvals", np.array(ev)),
                               ("centroid_local", cen), ("moments_weighted_central", wmu)):
                got = np.array([t[f"{name}-" + "-".join(map(str, ind))][i]
                                for ind in np.ndindex(want.shape)]).reshape(want.shape)
                scale = np.nanmax(np.abs(want)) if np.isfinite(want).any() else 1.0
                np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9 * scale + 1e-12,
                                           err_msg=f"{name} of label {lab}")
            area = image.sum() * np.prod(spacing)
            assert t["area"][i] == pytest.approx(area)
            assert t["equivalent_diameter_area"][i] == pytest.approx(
                (2 * ndim * area / np.pi) ** (1 / ndim))


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 2), (0, 4), (0, 2, 3)])
def test_empty_and_background_only(backend, shape):
    labels = np.zeros(shape, np.int32)
    ndim = len(shape)
    props = props_for(ndim, None)
    got = measure.regionprops_table(to_backend(labels, backend),
                                    to_backend(np.zeros(shape), backend), properties=props)
    # skimage: the same columns, empty (it cannot take a 0-size image)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = sk_table(np.zeros((2,) * ndim, np.int32), np.zeros((2,) * ndim), properties=props)
    assert list(got) == list(want)
    for key in want:
        g = to_host(got[key])
        assert g.shape == (0,) and g.dtype == want[key].dtype, key


def test_one_reduction_pass(monkeypatch):
    """Every moment, weighted moment and the std come from one call of the
    reduction, after the count / box table."""
    calls = []
    real = _moments.label_sums

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_moments, "label_sums", counted)
    labels = np.random.default_rng(0).integers(0, 5, size=(8, 8))
    measure.regionprops_table(labels, labels * 1.5, properties=props_for(2, None))
    assert len(calls) == 1
    measure.regionprops_table(labels, properties=("label", "area", "extent", "area_bbox",
                                                  "equivalent_diameter_area", "num_pixels"))
    assert len(calls) == 1  # (from the table alone)


def test_label_sums_in_chunks():
    """The reduction's chunks add up to the one-chunk sums."""
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 6, size=(7, 9, 5))
    intensity = rng.normal(size=labels.shape)
    t = measure._table(measure._labels(labels), intensity, ())
    present = np.nonzero(t["count"][1:])[0] + 1
    row_of = np.full(t["count"].shape[0], -1)
    row_of[present] = np.arange(present.size)
    terms = _moments.exponents(3, 3)
    args = (np, labels, row_of, t["lo"][present], terms, terms, intensity, t["imean"][present])
    whole = _moments.label_sums(*args)
    pieces = _moments.label_sums(*args, chunk=17)
    for key in whole:
        np.testing.assert_allclose(pieces[key], whole[key], rtol=1e-12, atol=1e-9)
    # and the plain sums are the per-label sums of the local monomials
    for i, lab in enumerate(present):
        where = np.argwhere(labels == lab) - t["lo"][lab]
        for j, p in enumerate(terms):
            assert whole["plain"][i, j] == np.prod(where.astype(float) ** p, axis=1).sum()


def test_refusals(backend):
    x = to_backend(np.array([[1, 0], [2, 2]], np.int32), backend)
    w = to_backend(np.ones((2, 2)), backend)
    for prop in _regionprops.REFUSED:
        with pytest.raises(ValueError, match=rf"properties \['{prop}'\] are not computed here: "
                                             r"they need each region's own image"):
            measure.regionprops_table(x, w, properties=("area", prop))
    with pytest.raises(ValueError, match=r"properties \['bogus'\] are not computed here; choose"):
        measure.regionprops_table(x, properties=("bogus",))
    with pytest.raises(ValueError, match=r"properties \['intensity_std', 'moments_weighted'\] "
                                         r"need an intensity_image"):
        measure.regionprops_table(x, properties=("intensity_std", "moments_weighted"))
    with pytest.raises(ValueError, match=r"multi-channel intensity is not supported"):
        measure.regionprops_table(x, to_backend(np.ones((2, 2, 3)), backend),
                                  properties=("intensity_mean",))
    x3 = to_backend(np.ones((2, 2, 2), np.int32), backend)
    for prop in ("eccentricity", "orientation", "moments_hu"):
        with pytest.raises(NotImplementedError, match=rf"property {prop} is defined for 2-D"):
            measure.regionprops_table(x3, properties=(prop,))
    x4 = to_backend(np.ones((2, 2, 2, 2), np.int32), backend)
    with pytest.raises(ValueError, match=r"axis_major_length is defined for 2-D and 3-D"):
        measure.regionprops_table(x4, properties=("axis_major_length",))
    with pytest.raises(NotImplementedError, match=r"moments_hu supports spacing 1 only"):
        measure.regionprops_table(x, properties=("moments_hu",), spacing=(1, 2))
    for bad, err in (((1, 2, 3), ValueError), ((1, -1), ValueError), ((1, np.inf), ValueError),
                     (0, ValueError), (("a", 1), TypeError)):
        with pytest.raises(err, match=r"spacing"):
            measure.regionprops_table(x, properties=("area",), spacing=bad)


# names of numpy's namespace that CuPy has too, with the same meaning: the
# moment code may use these and array methods only
CUPY_NAMES = ("zeros", "full", "arange", "nonzero", "bincount", "stack", "where", "isfinite",
              "all", "sqrt", "maximum", "minimum", "arctan2", "prod", "asarray", "nan")


def strict_xp():
    """numpy under a module that has only :data:`CUPY_NAMES` (and
    ``linalg.eigvalsh``): what the GPU path may call, checked on the CPU."""
    import types

    xp = types.ModuleType("strict_xp")
    for name in CUPY_NAMES:
        setattr(xp, name, getattr(np, name))
    xp.linalg = types.SimpleNamespace(eigvalsh=np.linalg.eigvalsh)
    return xp


@pytest.mark.parametrize("ndim", [2, 3])
def test_columns_use_only_what_cupy_has(ndim):
    rng = np.random.default_rng(11)
    labels = rng.integers(0, 5, size=(7, 6, 5)[:ndim])
    intensity = rng.normal(size=labels.shape) + 2
    props = props_for(ndim, None)
    t = measure._table(measure._labels(labels), intensity, ())
    present = np.nonzero(t["count"][1:])[0] + 1
    args = (props, t, labels, intensity, present, (1.0,) * ndim, "-")
    got = _regionprops.columns(strict_xp(), *args)
    want = _regionprops.columns(np, *args)
    assert list(got) == list(want)
    for p in want:
        for key in want[p]:
            np.testing.assert_array_equal(got[p][key], want[p][key])
