"""meshccl.label against skimage.measure.label and an independent reference,
on every backend (CPU always; GPU where available)."""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from skimage.measure import label as sk_label

import meshccl
from meshccl import patterns
from meshccl.neighbourhood import half_offsets
from conftest import HAVE_GPU, examples, run_label, to_backend, to_host
from reference import reference_label, reference_lattice

DTYPES = [np.bool_, np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32,
          np.uint64, np.int64, np.float32, np.float64]


def expected(a, background=None, connectivity=None):
    """skimage where it works (any bool, other dtypes up to 3-D), else the reference."""
    if a.dtype == bool or 1 <= a.ndim <= 3:
        return sk_label(a, background=background, connectivity=connectivity)
    return reference_label(a, background, connectivity)


@st.composite
def images(draw, max_ndim=4):
    ndim = draw(st.integers(1, max_ndim))
    side = {1: 40, 2: 12, 3: 7, 4: 5}[ndim]
    shape = tuple(draw(st.lists(st.integers(1, side), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(DTYPES))
    if dtype is np.bool_:
        elements = st.booleans()
    elif np.dtype(dtype).kind == "f":
        elements = st.floats(-3.5, 3.5, allow_nan=False, width=np.dtype(dtype).itemsize * 8)
    else:
        info = np.iinfo(dtype)
        lo = max(int(info.min), -2)
        # a few levels, but sometimes the extreme values of the dtype
        elements = st.one_of(st.integers(lo, 3), st.sampled_from([int(info.min), int(info.max)]))
    return draw(hnp.arrays(dtype, shape, elements=elements))


@settings(max_examples=examples(300))
@given(a=images(), data=st.data())
def test_matches_skimage_random(backend, a, data):
    connectivity = data.draw(st.integers(1, a.ndim))
    background = data.draw(st.sampled_from([None, 0, 1, -1, 2]))
    got = run_label(a, backend, background=background, connectivity=connectivity)
    want = expected(a, background, connectivity)
    assert got.dtype == want.dtype or backend == "gpu"
    np.testing.assert_array_equal(got, want)


@settings(max_examples=examples(60))
@given(a=images(max_ndim=3), data=st.data())
def test_reference_agrees_with_skimage(a, data):
    """The reference used for >3-D is itself checked against skimage (whose
    (a, b, 1) column-order quirk the reference does not follow)."""
    assume(not (a.dtype != bool and a.ndim == 3 and a.shape[2] == 1
                and a.shape[0] > 1 and a.shape[1] > 1))
    connectivity = data.draw(st.integers(1, a.ndim))
    np.testing.assert_array_equal(reference_label(a, 0, connectivity),
                                  sk_label(a, background=0, connectivity=connectivity))


@pytest.mark.parametrize("shape", [(5, 4, 3, 6), (3, 3, 2, 3, 4), (2, 1, 3, 1, 2, 3)])
@pytest.mark.parametrize("conn", [1, 2, "full"])
def test_high_dimensional(backend, shape, conn):
    rng = np.random.default_rng(sum(shape))
    a = rng.integers(0, 3, shape).astype(np.uint8)
    c = len(shape) if conn == "full" else conn
    got = run_label(a, backend, connectivity=c)
    np.testing.assert_array_equal(got, reference_label(a, 0, c))


@pytest.mark.parametrize("n", [5, 16, 33, 100, 257])
def test_spiral_is_one_component(backend, n):
    s = patterns.spiral(n)
    for c in (1, 2):
        got, num = run_label(s, backend, connectivity=c, return_num=True)
        np.testing.assert_array_equal(got, sk_label(s, connectivity=c))
        assert num == 1
    # the corridor is the other spiral
    got, num = run_label(s, backend, background=1, connectivity=1, return_num=True)
    assert num == 1


@pytest.mark.parametrize("shape", [(7, 9), (6, 5, 4), (64, 64)])
def test_checkerboard(backend, shape):
    a = (np.indices(shape).sum(axis=0) % 2).astype(np.uint8) + 1
    for c in range(1, len(shape) + 1):
        got, num = run_label(a, backend, connectivity=c, return_num=True)
        np.testing.assert_array_equal(got, sk_label(a, connectivity=c))
        assert num == (a.size if c == 1 else 2)


def test_single_cells_and_background(backend):
    z = np.zeros((13, 17), np.uint8)
    got, num = run_label(z, backend, return_num=True)
    assert num == 0 and not got.any()
    one = z.copy()
    one[6, 9] = 4
    got, num = run_label(one, backend, return_num=True)
    assert num == 1 and got[6, 9] == 1 and got.sum() == 1
    full = np.full((9, 3, 5), 7, np.int32)
    got, num = run_label(full, backend, return_num=True)
    assert num == 1 and (got == 1).all()


@pytest.mark.parametrize("length", [1, 31, 32, 33, 255, 256, 257, 1000, 70001])
def test_long_lines(backend, length):
    """Runs that cross warp chunks and segments (256 cells) on the GPU."""
    a = np.ones(length, np.uint8)
    got, num = run_label(a, backend, return_num=True)
    assert num == 1 and (got == 1).all()
    b = np.ones((3, length), np.uint8)
    b[1] = 0
    got, num = run_label(b, backend, connectivity=1, return_num=True)
    assert num == 2
    np.testing.assert_array_equal(got, sk_label(b, connectivity=1))
    # a snake: rows joined alternately at the ends
    w = max(length // 50, 3)
    snake = np.zeros((9, w), np.uint8)
    snake[::2] = 1
    for r in range(1, 9, 2):
        snake[r, -1 if r % 4 == 1 else 0] = 1
    got, num = run_label(snake, backend, connectivity=1, return_num=True)
    assert num == 1


def test_large_random_2d_3d(backend):
    rng = np.random.default_rng(7)
    for shape, p in [((300, 517), 0.59), ((41, 67, 53), 0.31)]:
        a = (rng.random(shape) < p).astype(np.uint8)
        for c in range(1, a.ndim + 1):
            np.testing.assert_array_equal(run_label(a, backend, connectivity=c),
                                          sk_label(a, connectivity=c))
    pot = patterns.potts((200, 300), q=4)
    np.testing.assert_array_equal(run_label(pot, backend, connectivity=1),
                                  sk_label(pot, connectivity=1))


def test_skimage_axis_swap_order(backend):
    """skimage numbers a non-bool (a, b, 1) volume in column order; so do we."""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, (6, 7, 1)).astype(np.int16)
    for c in (1, 2, 3):
        np.testing.assert_array_equal(run_label(a, backend, connectivity=c),
                                      sk_label(a, connectivity=c))


def test_float_truncation_like_skimage(backend):
    a = np.array([[0.5, 1.2, 1.7], [-0.5, 2.0, -1.9]])
    for bg in (None, -1, 1.5):
        np.testing.assert_array_equal(run_label(a, backend, background=bg),
                                      sk_label(a, background=bg))
    f16 = a.astype(np.float16)
    np.testing.assert_array_equal(run_label(f16, backend), sk_label(f16))


def test_background_outside_dtype_range(backend):
    a = np.array([[1, 2], [2, 1]], np.uint8)
    for bg in (258, -254, 2.7):
        np.testing.assert_array_equal(run_label(a, backend, background=bg),
                                      sk_label(a, background=bg))
    u = np.array([[2**64 - 1, 3, 2**64 - 1]], np.uint64)
    np.testing.assert_array_equal(run_label(u, backend, background=-1), [[0, 1, 0]])


def test_bool_background_quirk(backend):
    b = np.array([[True, False], [False, True]])
    for bg in (None, 0, 1, True, False, -1, 2):
        np.testing.assert_array_equal(run_label(b, backend, background=bg),
                                      sk_label(b, background=bg))


def test_layouts(backend):
    rng = np.random.default_rng(11)
    a = rng.integers(0, 3, (23, 19, 7)).astype(np.uint8)
    views = [np.asfortranarray(a), a[::-1], a[:, ::2, ::-3], a.transpose(2, 0, 1), a[3:, 1:-2]]
    for v in views:
        np.testing.assert_array_equal(run_label(v, backend), sk_label(np.ascontiguousarray(v)))


def test_zero_d_and_empty(backend):
    assert run_label(np.array(5), backend).shape == ()
    assert int(run_label(np.array(5), backend)) == 1
    assert int(run_label(np.array(0), backend)) == 0
    got, num = run_label(np.zeros((0, 3), np.uint8), backend, return_num=True)
    assert got.shape == (0, 3) and num == 0


def test_output_dtypes():
    a = np.ones((3, 3), np.uint8)
    assert meshccl.label(a).dtype == np.int64
    assert meshccl.label(a.astype(bool)).dtype == np.int32
    assert meshccl.label(a, dtype=np.uint16).dtype == np.uint16
    assert meshccl.label(a, dtype=np.int32).dtype == np.int32
    checker = (np.indices((20, 20)).sum(0) % 2).astype(np.uint8) + 1
    with pytest.raises(ValueError, match="dtype=uint8 cannot hold 400 labels"):
        meshccl.label(checker, connectivity=1, dtype=np.uint8)
    with pytest.raises(TypeError, match="dtype must be an integer dtype"):
        meshccl.label(a, dtype=np.float32)


def test_int64_index_path(backend):
    """dtype=int64 runs the 64-bit-index kernels; labels must not change."""
    rng = np.random.default_rng(5)
    a = (rng.random((77, 301)) < 0.5).astype(np.uint8)
    got = run_label(a, backend, dtype=np.int64)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, sk_label(a))


def test_deterministic(backend):
    a = patterns.percolation((512, 512), 0.5927, seed=3)
    first = run_label(a, backend, connectivity=1)
    for _ in range(5):
        np.testing.assert_array_equal(run_label(a, backend, connectivity=1), first)


@pytest.mark.parametrize("bad, err, msg", [
    ([[1, 2]], None, None),  # lists are accepted like numpy would
    (np.array([[1 + 1j]]), TypeError, "complex"),
    (np.array([[object()]], dtype=object), TypeError, "object"),
    (np.array(["a"]), TypeError, "<U1"),
    ("text", TypeError, "label_image"),
])
def test_bad_label_image(bad, err, msg):
    if err is None:
        np.testing.assert_array_equal(meshccl.label(bad), [[1, 2]])
        return
    with pytest.raises(err, match=msg):
        meshccl.label(bad)


def test_bad_arguments(backend):
    a = to_backend(np.ones((4, 4), np.uint8), backend)
    with pytest.raises(ValueError, match=r"connectivity .* \[1, \.\.\., 2\], got 0"):
        meshccl.label(a, connectivity=0)
    with pytest.raises(ValueError, match="got 3"):
        meshccl.label(a, connectivity=3)
    with pytest.raises(TypeError, match="connectivity must be a number"):
        meshccl.label(a, connectivity="1")
    with pytest.raises(TypeError, match="background must be"):
        meshccl.label(a, background="a")
    with pytest.raises(TypeError, match="background must be"):
        meshccl.label(a, background=[1, 2])
    with pytest.raises(ValueError, match="background must be a number, got nan"):
        meshccl.label(a, background=float("nan"))
    with pytest.raises(ValueError, match="method must be one of"):
        meshccl.label(a, method="nope")
    with pytest.raises(ValueError, match="device must be"):
        meshccl.label(a, device="tpu")
    with pytest.raises(ValueError, match="return_num must be true or false"):
        meshccl.label(a, return_num=np.array([True, False]))


def _sk_label_quiet(a, **kw):
    with warnings.catch_warnings():  # (NumPy's cast in skimage warns)
        warnings.simplefilter("ignore", RuntimeWarning)
        return sk_label(a, **kw)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, 1e30, -1e30])
def test_nan_inf_float(backend, value):
    """NaN, inf and floats beyond int64 are read as skimage's cast reads
    them on x86-64: all as the int64 minimum, one value (a warning on NumPy
    input; none on the GPU, which checks nothing on the host)."""
    a = np.array([[1.0, value, 3.0], [np.nan, -np.inf, 0.0], [2.0, 2.0, 1e300]])
    for c in (1, 2):
        for bg in (None, -1):
            if backend == "cpu":
                with pytest.warns(RuntimeWarning, match="NaN, inf or values beyond int64"):
                    got = meshccl.label(a, connectivity=c, background=bg)
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("error", RuntimeWarning)
                    got = run_label(a, backend, connectivity=c, background=bg)
            np.testing.assert_array_equal(got, _sk_label_quiet(a, connectivity=c, background=bg))


def test_float_int64_edges(backend):
    """Floats are truncated into int64 as skimage's cast does: -2**63 is in
    range, the next float below it and 2**63 are not."""
    a = np.array([[-2.0**63, 0.0, 5e18], [5e18, -2.0**63, -2.0**63]])
    for c in (1, 2):
        np.testing.assert_array_equal(run_label(a, backend, connectivity=c),
                                      sk_label(a, connectivity=c))
    for v in (2.0**63, np.nextafter(-2.0**63, -np.inf)):
        b = np.array([[1.0, v, -2.0**63], [v, np.nan, 7.0]])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            got = run_label(b, backend, connectivity=1)
        np.testing.assert_array_equal(got, _sk_label_quiet(b, connectivity=1))


def test_tolerance_takes_floats_beyond_int64(backend):
    """With a tolerance the values are compared as they are, not truncated:
    any finite value is fine; NaN and inf cells join no neighbour (|a - b| is
    NaN or inf), on both backends, with no check on the host."""
    from reference import reference_lattice

    a = np.array([[1e30, 1e30 + 1e15, 0.0, -1e300],
                  [3e19, 1e30 - 2e16, -1e300, -1e300 * (1 + 1e-15)]])
    for tol in (0.0, 1e16, 1e285):
        kw = dict(tolerance=tol, background=0.0, connectivity=2)
        np.testing.assert_array_equal(run_label(a, backend, **kw), reference_lattice(a, **kw))
    b = np.array([[1.0, np.nan, np.nan, 1.2], [np.inf, np.inf, -np.inf, 1.4]])
    for tol in (0.0, 0.5, 1e300):
        kw = dict(tolerance=tol, background=-5.0, connectivity=2)
        got = run_label(b, backend, **kw)
        want = np.array([[1, 2, 3, 4], [5, 6, 7, 4]]) if tol >= 0.5 else \
            np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
        np.testing.assert_array_equal(got, want)


def test_too_many_axes_or_offsets():
    a = np.zeros((2,) * 12, np.uint8)
    with pytest.raises(ValueError, match="neighbour offsets per cell"):
        meshccl.label(a)
    assert meshccl.label(a, connectivity=2).shape == a.shape


@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.gpu
def test_gpu_cupy_in_cupy_out_and_cpu_equal():
    import cupy
    rng = np.random.default_rng(9)
    a = rng.integers(0, 4, (257, 129)).astype(np.uint16)
    g = meshccl.label(cupy.asarray(a), connectivity=1)
    assert isinstance(g, cupy.ndarray) and g.dtype == np.int32
    c = meshccl.label(a, connectivity=1)
    np.testing.assert_array_equal(g.get(), c)
    # NumPy in, computed on the GPU on request, NumPy out
    h = meshccl.label(a, connectivity=1, device="gpu")
    assert isinstance(h, np.ndarray)
    np.testing.assert_array_equal(h, c)
    # CuPy in, computed on the CPU on request, CuPy out
    d = meshccl.label(cupy.asarray(a), connectivity=1, device="cpu")
    assert isinstance(d, cupy.ndarray)
    np.testing.assert_array_equal(d.get(), c)


@pytest.mark.skipif(HAVE_GPU, reason="only meaningful without a GPU")
def test_device_gpu_without_gpu_is_clear():
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        meshccl.label(np.ones(3, np.uint8), device="gpu")


def test_import_does_not_compile_or_touch_gpu():
    import subprocess
    import sys
    code = ("import sys, meshccl; "
            "assert 'cupy' not in sys.modules, 'cupy imported at import time'; "
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "ok" in out.stdout


@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.gpu
def test_gpu_out_of_memory_is_clear():
    import cupy
    huge = cupy.broadcast_to(cupy.ones(1, cupy.uint8), (2**20, 2**20))  # 2**40 cells, no memory
    with pytest.raises(MemoryError, match=r"not enough GPU memory .* shape \(1048576, 1048576\)"):
        meshccl.label(huge)
    cupy.get_default_memory_pool().free_all_blocks()


@pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")
@pytest.mark.gpu
def test_gpu_out_of_memory_on_the_plan_path_is_clear(monkeypatch):
    """A C-contiguous CuPy image takes a launch plan (plan.py) before any
    other check: its out-of-memory error must read the same."""
    import cupy
    x = cupy.ones((64, 48), dtype=cupy.uint8)
    meshccl.label(x)  # the plan exists; the next call only allocates its labels

    def no_memory(*args, **kwargs):
        raise cupy.cuda.memory.OutOfMemoryError(1 << 40, 1 << 30)

    monkeypatch.setattr(cupy, "empty", no_memory)
    monkeypatch.setattr(cupy.cuda, "alloc", no_memory)  # the plan's labels come from here
    with pytest.raises(MemoryError, match=r"not enough GPU memory .* shape \(64, 48\)"):
        meshccl.label(x)


def test_docstring_examples():
    """The examples in the public docstrings run and print what they say."""
    import doctest

    import meshccl.errors
    import meshccl.graph
    import meshccl.graph_generators
    import meshccl.labelling
    import meshccl.neighbourhood
    import meshccl.patterns
    for module in (meshccl.labelling, meshccl.neighbourhood, meshccl.graph, meshccl.errors,
                   meshccl.graph_generators, meshccl.patterns):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_length_one_axes_cost_nothing(backend):
    """Axes of length 1 carry no neighbours: 30 of them in front of a 2-D
    image neither build 3**32 offsets nor change the labels (skimage's on
    the 2-D image; its bool path takes any ndim)."""
    import time

    rng = np.random.default_rng(30)
    img = rng.integers(0, 3, (5, 7)).astype(np.uint8)
    a = img.reshape((1,) * 30 + img.shape)
    t0 = time.perf_counter()
    for c in (1, 2, None):
        got = run_label(a, backend, connectivity=c)
        assert got.shape == a.shape
        np.testing.assert_array_equal(got.reshape(img.shape), sk_label(img, connectivity=c))
    assert time.perf_counter() - t0 < 30  # (3**32 offsets would take hours and terabytes)
    b = img.reshape((1,) * 9 + img.shape) == 1
    for c in (1, 2, 11):
        np.testing.assert_array_equal(run_label(b, backend, connectivity=c),
                                      sk_label(b, connectivity=c))


def test_length_one_axes_with_bonds_and_periodic(backend):
    """The bonds of a 32-D array at connectivity 1 are 32 planes, one per
    axis; those of the two real axes decide.  A periodic axis of length 1
    with bonds keeps its diagonal bonds (they wrap onto real neighbours)."""
    rng = np.random.default_rng(31)
    img = rng.integers(0, 2, (4, 6)).astype(np.uint8)
    a = img.reshape((1,) * 30 + img.shape)
    bonds = rng.random((32,) + a.shape) < 0.6
    got = run_label(a, backend, connectivity=1, bonds=bonds, background=-1)
    want = reference_lattice(img, connectivity=1, background=-1,
                             bonds=bonds[30:].reshape((2,) + img.shape))
    np.testing.assert_array_equal(got.reshape(img.shape), want)
    small = img.reshape((1,) * 4 + img.shape)
    per = (True, False, True, False, False, True)
    k = len(half_offsets(6, 2))
    bonds = rng.random((k,) + small.shape) < 0.5
    got = run_label(small, backend, connectivity=2, periodic=per, bonds=bonds)
    np.testing.assert_array_equal(got, reference_lattice(small, connectivity=2, periodic=per,
                                                         bonds=bonds))
