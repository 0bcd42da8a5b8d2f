"""What a user of skimage.measure.label may pass, and gets the same answer:
byte orders, bool arrays with odd bytes, the argument types skimage takes
(and refuses), and exact integer comparison with a tolerance."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.measure import label as sk_label

import meshccl
from conftest import examples, run_label, to_host
from reference import reference_lattice

A = np.array([[1, 0, 1], [0, 1, 0], [2, 2, 0]])


# --- byte order ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", [">u2", ">u4", ">u8", ">i2", ">i4", ">i8", ">f4", ">f8",
                                   "<u2", "<i4", "<f8"])
def test_byte_order(backend, dtype):
    """Non-native byte order labels like the native array (skimage: same
    values), with and without a tolerance, serially and in parallel."""
    rng = np.random.default_rng(3)
    native = rng.integers(0, 4, (13, 17)).astype(np.dtype(dtype).newbyteorder("="))
    a = native.astype(dtype)
    assert (a == native).all()
    kw = {"device": "gpu"} if backend == "gpu" else {}
    for conn in (1, 2):
        want = sk_label(native, connectivity=conn)
        np.testing.assert_array_equal(to_host(meshccl.label(a, connectivity=conn, **kw)), want)
        got = meshccl.label(a, connectivity=conn, tolerance=1, background=-1, **kw)
        np.testing.assert_array_equal(
            to_host(got), reference_lattice(native, background=-1, connectivity=conn,
                                            tolerance=1))
    if backend == "cpu":
        from meshccl import _tuning

        with _tuning.override(CPU_SLAB_MIN_CELLS=1, CPU_CHUNK_MIN_CELLS=1):
            np.testing.assert_array_equal(meshccl.label(a, cpu_threads=2), sk_label(native))
            np.testing.assert_array_equal(
                meshccl.label(a, cpu_threads=2, tolerance=0.5),
                reference_lattice(native, tolerance=0.5))


# --- bool arrays whose bytes are not 0 / 1 ---------------------------------------

@pytest.mark.parametrize("shape", [(2, 3), (4, 16), (3, 70), (5, 4, 8)])
def test_bool_bytes_other_than_one_are_true(backend, shape):
    """A bool view of bytes such as 255 or 2: skimage (and NumPy) read every
    non-zero byte as True, so 1, 2 and 255 are one value."""
    rng = np.random.default_rng(sum(shape))
    raw = rng.choice(np.array([0, 1, 2, 255], np.uint8), size=shape)
    a = raw.view(bool)
    clean = raw != 0
    for conn in range(1, len(shape) + 1):
        for background in (None, 1):
            want = sk_label(clean, connectivity=conn, background=background)
            got = run_label(a, backend, connectivity=conn, background=background)
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(sk_label(a, connectivity=conn, background=background),
                                          want)
    got = run_label(a, backend, mask=np.ones(shape, bool), tolerance=0)
    np.testing.assert_array_equal(got, sk_label(clean))


def test_bool_bytes_are_not_copied_when_clean():
    from meshccl import _validate

    a = np.random.default_rng(1).random((6, 7)) < 0.5
    prob = _validate.prepare(a, None, None, None)
    assert np.shares_memory(prob.values, a)
    odd = a.view(np.uint8) * np.uint8(3)
    prob = _validate.prepare(odd.view(bool), None, None, None)
    assert set(np.unique(prob.values).tolist()) <= {0, 1}


# --- tolerance on integers: exact ----------------------------------------------------

BIG = 2**53


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_tolerance_integers_beyond_2_53_are_exact(backend, dtype):
    """As doubles, 2**53 and 2**53 + 1 are equal; as integers they differ by
    one, which a tolerance of 0 (or 0.9: floored) does not bridge."""
    a = np.array([BIG, BIG + 1, BIG + 3, BIG + 4, BIG + 6], dtype=dtype)
    assert run_label(a, backend, tolerance=0).tolist() == [1, 2, 3, 4, 5]
    assert run_label(a, backend, tolerance=0.9).tolist() == [1, 2, 3, 4, 5]
    assert run_label(a, backend, tolerance=1).tolist() == [1, 1, 2, 2, 3]
    assert run_label(a, backend, tolerance=1.99).tolist() == [1, 1, 2, 2, 3]
    assert run_label(a, backend, tolerance=2).tolist() == [1, 1, 1, 1, 1]
    # the background is matched exactly too
    assert run_label(a, backend, tolerance=1, background=BIG + 1).tolist() == [1, 0, 2, 2, 3]
    assert run_label(a, backend, tolerance=5, background=BIG + 0.0).tolist() == [0, 1, 1, 1, 1]


def test_tolerance_integer_extremes(backend):
    """Differences as large as the dtype's range, with no overflow."""
    top = np.iinfo(np.uint64).max
    a = np.array([top, top - 1, 0, 1, top], dtype=np.uint64)
    assert run_label(a, backend, tolerance=1, background=-1).tolist() == [1, 1, 2, 2, 3]
    assert run_label(a, backend, tolerance=2.0**64, background=-1).tolist() == [1] * 5
    b = np.array([0, 2**63, top], dtype=np.uint64)  # differences 2**63 and 2**63 - 1
    assert run_label(b, backend, tolerance=2.0**63, background=7).tolist() == [1, 1, 1]
    assert run_label(b, backend, tolerance=2.0**63 - 1024, background=7).tolist() == [1, 2, 3]
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    d = np.array([lo, hi, lo + 1, -1, 1], dtype=np.int64)
    assert run_label(d, backend, tolerance=2.0**64, background=7).tolist() == [1] * 5
    assert run_label(d, backend, tolerance=1, background=7).tolist() == [1, 2, 3, 4, 5]
    assert run_label(d, backend, tolerance=2, background=7).tolist() == [1, 2, 3, 4, 4]
    c = np.array([-128, 127, -1, 0, 126], dtype=np.int8)
    assert run_label(c, backend, tolerance=255, background=-1).tolist() == [1, 1, 0, 2, 2]
    assert run_label(c, backend, tolerance=255, background=7).tolist() == [1, 1, 1, 1, 1]
    assert run_label(c, backend, tolerance=254.9, background=5).tolist() == [1, 2, 2, 2, 2]


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, object])
def test_integer_tolerance_beyond_2_53_is_exact(backend, dtype):
    """An integer tolerance is not rounded to a double: 2**53 + 1 bridges a
    difference of 2**53 + 1, and 2**53 + 3 does not bridge 2**53 + 4 (as
    doubles both would go the other way)."""
    t = 2**53 + 1 if dtype is object else dtype(2**53 + 1)
    a = np.array([0, 2**53 + 1], dtype=np.int64 if dtype is object else dtype)
    assert run_label(a, backend, tolerance=t, background=-1).tolist() == [1, 1]
    assert run_label(a, backend, tolerance=t - 1, background=-1).tolist() == [1, 2]
    b = np.array([0, 2**53 + 4], dtype=a.dtype)
    assert run_label(b, backend, tolerance=2**53 + 3, background=-1).tolist() == [1, 2]
    assert run_label(b, backend, tolerance=np.array(2**53 + 4), background=-1).tolist() == [1, 1]


def test_integer_tolerance_past_2_63_and_saturated(backend):
    """Tolerances whose 64 bits are a NaN or a negative zero as a double, and
    ones beyond the uint64 range, still compare exactly."""
    top = 2**64 - 1
    a = np.array([0, 2**63, top], dtype=np.uint64)  # differences 2**63 and 2**63 - 1
    for t, want in ((2**63 - 1, [1, 2, 2]), (2**63, [1, 1, 1]),
                    (0x7FF0_0000_0000_0001, [1, 2, 3]), (top, [1, 1, 1]), (2**70, [1, 1, 1]),
                    (2.0**70, [1, 1, 1])):
        assert run_label(a, backend, tolerance=t, background=7).tolist() == want, t
    c = np.array([0, 200, 45], dtype=np.uint8)
    assert run_label(c, backend, tolerance=2**64 + 155, background=7).tolist() == [1, 1, 1]
    assert run_label(c, backend, tolerance=200, background=7).tolist() == [1, 1, 1]
    assert run_label(c, backend, tolerance=199, background=7).tolist() == [1, 2, 2]
    assert run_label(c, backend, tolerance=154, background=7).tolist() == [1, 2, 3]


def test_float_input_takes_an_integer_tolerance_as_a_number(backend):
    a = np.array([0.0, 2.5, 2.0**60], dtype=np.float64)
    assert run_label(a, backend, tolerance=2**60, background=-1).tolist() == [1, 1, 1]
    assert run_label(a, backend, tolerance=3, background=-1).tolist() == [1, 1, 2]
    assert run_label(a, backend, tolerance=2, background=-1).tolist() == [1, 2, 3]


@settings(max_examples=examples(120))
@given(data=st.data())
def test_tolerance_integers_match_exact_reference(backend, data):
    """Random integers near a large offset (where doubles lose the last
    bits), every integer dtype, against a reference in Python integers."""
    dtype = np.dtype(data.draw(st.sampled_from(["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"])))
    info = np.iinfo(dtype)
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim)))
    base = data.draw(st.sampled_from([int(info.min), 0, int(info.max) - 8,
                                      max(int(info.min), min(int(info.max) - 8, 2**62 + 2**53))]))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = (base + rng.integers(0, 9, shape).astype(object)).astype(dtype)
    tol = data.draw(st.sampled_from([0, 0.5, 1, 1.5, 2, 3.99]))
    background = data.draw(st.sampled_from([None, base, base + 4, base + 0.5]))
    conn = data.draw(st.integers(1, ndim))
    kw = dict(tolerance=tol, connectivity=conn, background=background)
    want = reference_lattice(a, **kw)
    np.testing.assert_array_equal(run_label(a, backend, **kw), want)
    if backend == "cpu":
        for method in ("D", "cpu1"):
            np.testing.assert_array_equal(meshccl.label(a, method=method, **kw), want)


def test_tolerance_floats_unchanged(backend):
    """Floats keep comparing their values (float32 exactly as float64)."""
    for dtype in (np.float16, np.float32, np.float64):
        a = np.array([0.1, 0.3, 0.9, 1.0], dtype=dtype)
        want = reference_lattice(a, background=-1, tolerance=0.25)
        np.testing.assert_array_equal(run_label(a, backend, tolerance=0.25, background=-1), want)


# --- the arguments skimage takes, and the ones it refuses ---------------------------------

@pytest.mark.parametrize("value", [1, 2, 0, np.True_, np.False_, np.int64(1), np.array(1),
                                   1.0, None, "yes", [], [1]])
def test_return_num_is_read_for_its_truth(backend, value):
    out = run_label(A, backend, return_num=value)
    want = sk_label(A, return_num=value)
    if isinstance(want, tuple):
        np.testing.assert_array_equal(out[0], want[0])
        assert out[1] == want[1]
    else:
        np.testing.assert_array_equal(out, want)


def test_return_num_without_a_truth_value():
    with pytest.raises(ValueError, match=r"return_num must be true or false, got array"):
        meshccl.label(A, return_num=np.array([1, 0]))


@pytest.mark.parametrize("value", [1, 2, 1.0, 1.5, np.float64(2), np.float32(1), True,
                                   np.int64(1), np.uint8(2), np.array(2), np.array(1.5)])
def test_connectivity_numbers_skimage_takes(backend, value):
    for a in (A, A > 0):
        np.testing.assert_array_equal(run_label(a, backend, connectivity=value),
                                      sk_label(a, connectivity=value))
    b = np.zeros((3, 3, 3), np.uint8)
    b[0, 0, 0] = b[1, 1, 1] = b[1, 1, 2] = 1
    for c in (2.5, np.float32(3.0)):
        np.testing.assert_array_equal(run_label(b, backend, connectivity=c),
                                      sk_label(b, connectivity=c))


@pytest.mark.parametrize("value, err, msg", [
    (0, ValueError, r"connectivity for a 2-D label_image must be in \[1, ..., 2\], got 0"),
    (3, ValueError, r"must be in \[1, ..., 2\], got 3"),
    (False, ValueError, r"must be in \[1, ..., 2\], got False"),
    (2.5, ValueError, r"must be in \[1, ..., 2\], got 2.5"),
    (0.5, ValueError, r"got 0.5"),
    (-1, ValueError, r"got -1"),
    ("2", TypeError, r"connectivity must be a number in \[1, ..., 2\], got '2'"),
    (np.array([2]), TypeError, r"connectivity must be a number .* got array\(\[2\]\)"),
    (2 + 0j, TypeError, r"connectivity must be a number")])
def test_connectivity_refused_as_skimage_refuses(value, err, msg):
    with pytest.raises(err, match=msg):
        meshccl.label(A, connectivity=value)
    with pytest.raises((ValueError, TypeError)):
        sk_label(A, connectivity=value)


@pytest.mark.parametrize("value", [np.array(2), np.array(2.0), 2.5, -1.5, np.float64(2.0),
                                   True, np.int8(2), np.uint64(2), 2**62])
def test_background_values_skimage_takes(backend, value):
    for a in (A, A.astype(np.float32), A.astype(np.uint64), A > 0):
        np.testing.assert_array_equal(run_label(a, backend, background=value),
                                      sk_label(a, background=value))


@pytest.mark.parametrize("value", [np.nan, "1", 2**70, None, np.array(1)])
def test_background_of_bool_input_is_compared_with_one(backend, value):
    """For bool input skimage only asks ``background == 1``."""
    a = A > 0
    np.testing.assert_array_equal(run_label(a, backend, background=value),
                                  sk_label(a, background=value))


@pytest.mark.parametrize("value, err, msg", [
    (np.nan, ValueError, r"background must be a number, got nan"),
    (np.inf, OverflowError, r"background must fit in int64, got inf"),
    (2**70, OverflowError, r"background must fit in int64, got 1180591620717411303424"),
    (-2**64, OverflowError, r"background must fit in int64"),
    ("2", TypeError, r"background must be an int, float or bool scalar, got '2'"),
    (2 + 0j, TypeError, r"background must be an int, float or bool scalar"),
    (np.array([2]), TypeError, r"got array\(\[2\]\)")])
def test_background_refused_as_skimage_refuses(value, err, msg):
    with pytest.raises(err, match=msg):
        meshccl.label(A, background=value)
    with pytest.raises((ValueError, TypeError, OverflowError)):
        sk_label(A, background=value)


def test_zero_dim_tolerance_and_background_with_tolerance(backend):
    a = np.array([0.1, 0.3, 0.9])
    got = run_label(a, backend, tolerance=np.array(0.25), background=np.array(-1))
    assert got.tolist() == [1, 1, 2]


def test_gpu_backend_is_given_native_values():
    """The validation the GPU shares hands it native byte order and 0 / 1
    bools (what the kernels read)."""
    from meshccl import _validate

    prob = _validate.prepare(np.arange(6, dtype=">i4").reshape(2, 3), None, None, None)
    assert prob.values.dtype.isnative and prob.values.tolist() == list(range(6))
    prob = _validate.prepare(np.arange(6, dtype=">f8"), None, None, None, tolerance=1)
    assert prob.values.dtype.isnative and prob.values.tolist() == list(range(6))

