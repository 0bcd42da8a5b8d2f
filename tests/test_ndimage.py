"""meshccl.ndimage.label against scipy.ndimage.label (CPU) and
cupyx.scipy.ndimage.label (GPU): values, dtypes, output forms and errors."""

import re

import numpy as np
import pytest
import scipy.ndimage as ndi

from meshccl import ndimage
from conftest import HAVE_GPU

SHAPES = {1: (61,), 2: (13, 11), 3: (6, 7, 5), 4: (4, 5, 3, 4)}
DTYPES = [np.bool_, np.uint8, np.int16, np.int64, np.float32, np.float64]


def _random(rng, shape, dtype, density=0.45):
    """Features of several non-zero values (SciPy joins them all)."""
    values = rng.integers(-3, 4, shape) * (rng.random(shape) < density)
    if np.dtype(dtype).kind == "u":
        values = np.abs(values)
    if np.dtype(dtype).kind == "f":
        values = values * 0.37  # fractions too: truncation must not touch them
    return values.astype(dtype)


def _same(got, want):
    (labels, n), (ref, ref_n) = got, want
    assert n == ref_n
    assert labels.dtype == ref.dtype
    np.testing.assert_array_equal(labels, ref)


def _structures(ndim):
    """Every structure meshccl takes: generate_binary_structure for c = 0..ndim
    (with and without its centre), and the same along a subset of the axes."""
    out = []
    for c in range(ndim + 1):
        s = ndi.generate_binary_structure(ndim, c)
        out.append(s)
        hollow = s.copy()
        hollow[(1,) * ndim] = False  # SciPy ignores the centre
        out.append(hollow.astype(np.uint8))
    if ndim >= 2:
        s = ndi.generate_binary_structure(ndim, ndim)
        keep = np.zeros(s.shape, bool)
        keep[(1,) * (ndim - 2) + (slice(None), slice(None))] = True  # the last two axes
        out.append(s & keep)
        line = np.zeros(s.shape, bool)
        line[(slice(None),) + (1,) * (ndim - 1)] = True  # axis 0 only
        out.append(line)
    return out


@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
def test_equals_scipy_every_structure_and_dtype(ndim):
    rng = np.random.default_rng(ndim)
    for dtype in DTYPES:
        a = _random(rng, SHAPES[ndim], dtype)
        _same(ndimage.label(a), ndi.label(a))
        for s in _structures(ndim):
            _same(ndimage.label(a, s), ndi.label(a, s))
            _same(ndimage.label(a, structure=s.tolist()), ndi.label(a, structure=s))


def test_scipy_docstring_example_and_nonzero_semantics():
    a = np.array([[0, 0, 1, 1, 0, 0],
                  [0, 0, 0, 1, 0, 0],
                  [1, 1, 0, 0, 1, 0],
                  [0, 0, 0, 1, 0, 0]])
    _same(ndimage.label(a), ndi.label(a))
    _same(ndimage.label(a, ndi.generate_binary_structure(2, 2)),
          ndi.label(a, ndi.generate_binary_structure(2, 2)))
    # different non-zero values join, NaN is non-zero, -0.0 is zero
    x = np.array([3.0, -1.0, 0.0, np.nan, 0.25, -0.0, 7.0])
    _same(ndimage.label(x), ndi.label(x))
    assert ndimage.label(x)[1] == 3


@pytest.mark.parametrize("a", [np.array(5), np.array(0.0), np.zeros((0, 3)), np.zeros((4, 0, 2)),
                               7, [[1, 0], [0, 1]], np.ones((1, 1, 5), np.int8),
                               np.arange(30).reshape(5, 6, 1) % 3],
                         ids=["0d", "0d-zero", "empty", "empty3d", "scalar", "list", "ones",
                              "ab1"])
def test_edge_inputs(a):
    _same(ndimage.label(a), ndi.label(a))


def test_non_contiguous_input_and_float16():
    rng = np.random.default_rng(7)
    a = _random(rng, (20, 30), np.int32)[::2, ::-3].T
    _same(ndimage.label(a), ndi.label(a))
    # SciPy refuses float16 (no kernel for it); meshccl labels it as float32 would be
    h = _random(rng, (9, 9), np.float16)
    _same(ndimage.label(h), ndi.label(h.astype(np.float32)))


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint32, np.int64, np.uint64,
                                   np.float32, np.float64, np.bool_, "i2", int, float])
def test_output_dtype(dtype):
    a = _random(np.random.default_rng(3), (30, 30), np.int32)
    _same(ndimage.label(a, output=dtype), ndi.label(a, output=dtype))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float64, np.int64])
def test_output_array_filled_in_place(dtype):
    a = _random(np.random.default_rng(4), (25, 20), np.uint8)
    out = np.full(a.shape, 99, dtype=dtype)
    ref = np.zeros(a.shape, dtype=dtype)
    n = ndimage.label(a, ndi.generate_binary_structure(2, 2), output=out)
    assert isinstance(n, int) and n == ndi.label(a, ndi.generate_binary_structure(2, 2), output=ref)
    np.testing.assert_array_equal(out, ref)


def test_output_array_views_and_in_place():
    a = _random(np.random.default_rng(5), (16, 18), np.int32)
    want, n = ndi.label(a)
    base = np.zeros((18, 16), np.int64)
    out = base.T  # not C-contiguous
    assert ndimage.label(a, output=out) == n
    np.testing.assert_array_equal(out, want)
    x = a.copy()
    assert ndimage.label(x, output=x) == n  # output=input, as SciPy allows
    np.testing.assert_array_equal(x, want)


def test_insufficient_bit_depth():
    a = np.zeros((40, 40), np.uint8)
    a[::2, ::2] = 1  # 400 isolated features
    for dtype in (np.int8, np.uint8, np.bool_):
        with pytest.raises(RuntimeError, match="insufficient bit-depth") as ours:
            ndimage.label(a, output=dtype)
        with pytest.raises(RuntimeError, match="insufficient bit-depth"):
            ndi.label(a, output=dtype)
        assert "400" in str(ours.value) and np.dtype(dtype).name in str(ours.value)
        out = np.full(a.shape, 5, dtype=dtype)
        before = out.copy()
        with pytest.raises(RuntimeError, match="insufficient bit-depth"):
            ndimage.label(a, output=out)
        np.testing.assert_array_equal(out, before)  # left untouched
    _same(ndimage.label(a, output=np.int16), ndi.label(a, output=np.int16))
    b = np.zeros((10, 12), bool)
    b[::2, ::2] = True  # 30 features: int8 holds them
    _same(ndimage.label(b, output=np.int8), ndi.label(b, output=np.int8))


def _both_raise(exc, pattern, *args, **kwargs):
    """meshccl raises ``exc`` matching ``pattern``, and SciPy raises ``exc`` too."""
    with pytest.raises(exc, match=pattern):
        ndimage.label(*args, **kwargs)
    with pytest.raises(exc):
        ndi.label(*args, **kwargs)


def test_errors_mirror_scipy():
    a = np.ones((4, 5))
    _both_raise(RuntimeError, "structure and input must have equal rank.*1-D structure",
                a, np.ones(3))
    _both_raise(RuntimeError, "equal rank", a, np.ones((3, 3, 3)))
    _both_raise(ValueError, r"structure dimensions must be equal to 3, got shape \(3, 4\)",
                a, np.ones((3, 4)))
    _both_raise(ValueError, r"got shape \(1, 1\)", a, np.ones((1, 1)))
    _both_raise(TypeError, "Complex type not supported", np.ones((3, 3), complex))
    _both_raise(ValueError, r"output shape not correct.*\(3, 3\)", a,
                output=np.zeros((3, 3), np.int32))
    _both_raise(TypeError, "output must be None, a dtype or an array.*3", a, output=3)
    _both_raise(TypeError, "output must have a bool, integer, float32 or float64 dtype.*, got "
                "complex64", a, output=np.complex64)
    _both_raise(TypeError, "float16", a, output=np.float16)
    _both_raise(TypeError, "input must have a bool, integer or float dtype, got <U1",
                np.array([["a", "b"]]))


def test_structure_errors_name_structure():
    a = np.ones((4, 5))
    asym = [[0, 1, 0], [1, 1, 0], [0, 0, 0]]
    with pytest.raises(ValueError, match=re.escape(
            "structure must be centrosymmetric (equal to itself reversed along every axis), "
            "got [[0, 1, 0], [1, 1, 0], [0, 0, 0]]")):
        ndimage.label(a, asym)
    with pytest.raises(AssertionError):  # SciPy refuses it too, with an assert
        ndi.label(a, asym)
    # symmetric structures that no connectivity names: labelled as SciPy labels them
    for s in ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], [[1, 0, 1], [0, 0, 0], [1, 0, 1]],
              [[1, 1, 0], [1, 1, 1], [0, 1, 1]]):
        _same(ndimage.label(a, s), ndi.label(a, s))


def test_output_array_errors():
    a = np.ones((4, 5))
    ro = np.zeros((4, 5), np.int32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="output must be writeable"):
        ndimage.label(a, output=ro)


def test_public_module():
    import meshccl
    import meshccl.ndimage

    assert meshccl.ndimage is meshccl.ndimage
    assert meshccl.ndimage.label is ndimage.label
    import doctest
    result = doctest.testmod(meshccl.ndimage)
    assert result.attempted > 0 and result.failed == 0


def test_import_loads_no_framework():
    """``import meshccl`` (and meshccl.ndimage) imports neither PyTorch, JAX,
    NetworkX nor CuPy."""
    import subprocess
    import sys

    code = ("import sys, meshccl, meshccl.ndimage, meshccl.graph; "
            "print([m for m in ('torch', 'jax', 'networkx', 'cupy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.parametrize("ndim", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int32, np.float32])
def test_gpu_equals_cupyx(ndim, dtype):
    import cupy
    import cupyx.scipy.ndimage as cndi

    rng = np.random.default_rng(10 + ndim)
    a = cupy.asarray(_random(rng, tuple(4 * s for s in SHAPES[ndim]), dtype))
    for c in range(ndim + 1):
        s = ndi.generate_binary_structure(ndim, c)
        labels, n = ndimage.label(a, s)
        assert isinstance(labels, cupy.ndarray) and labels.dtype == np.int32
        _same((labels.get(), n), ndi.label(a.get(), s))
        if c:  # (c = 0, no neighbours: against SciPy alone)
            ref, ref_n = cndi.label(a, s)
            assert n == ref_n and ref.dtype == np.int32
            cupy.testing.assert_array_equal(labels, ref)
        s_gpu = cupy.asarray(s)  # a CuPy structure, as cupyx takes it
        assert ndimage.label(a, s_gpu)[1] == n


@pytest.mark.gpu
@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
def test_gpu_output_forms_and_errors():
    import cupy
    import cupyx.scipy.ndimage as cndi

    a = cupy.asarray(_random(np.random.default_rng(11), (64, 48), np.int16))
    want, n = cndi.label(a)
    out = cupy.zeros(a.shape, cupy.int64)
    assert ndimage.label(a, output=out) == n
    cupy.testing.assert_array_equal(out, want)
    labels, n2 = ndimage.label(a, output=cupy.uint16)
    assert labels.dtype == cupy.uint16 and n2 == n
    cupy.testing.assert_array_equal(labels, want)
    with pytest.raises(TypeError, match="output must be a GPU array like input"):
        ndimage.label(a, output=np.zeros(a.shape, np.int32))
    with pytest.raises(TypeError, match="output must be a host array like input"):
        ndimage.label(a.get(), output=out)
    with pytest.raises(RuntimeError, match="insufficient bit-depth"):
        ndimage.label(cupy.asarray(np.indices((40, 40)).sum(0) % 2), output=cupy.int8)
    with pytest.raises(ValueError, match="output shape not correct"):
        ndimage.label(a, output=cupy.zeros((3, 3), cupy.int32))
    for z in (cupy.zeros((0, 4)), cupy.asarray(3.0), cupy.asarray(0)):
        labels, n = ndimage.label(z)
        assert isinstance(labels, cupy.ndarray)
        _same((labels.get(), n), ndi.label(z.get()))
