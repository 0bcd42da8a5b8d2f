"""Lattice features -- periodic, mask, tolerance, bonds -- on every backend,
against an explicit-graph reference (scipy.sparse.csgraph)."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import meshccl
from meshccl.neighbourhood import half_offsets
from conftest import examples, run_label, to_backend, to_host
from reference import reference_label, reference_lattice


@st.composite
def lattices(draw):
    ndim = draw(st.integers(1, 4))
    side = {1: 40, 2: 12, 3: 7, 4: 4}[ndim]
    shape = tuple(draw(st.lists(st.integers(1, side), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from([np.uint8, np.int16, np.float32, np.bool_]))
    if dtype is np.bool_:
        a = draw(hnp.arrays(dtype, shape))
    elif dtype is np.float32:
        a = draw(hnp.arrays(dtype, shape, elements=st.floats(-2, 2, width=32)))
    else:
        a = draw(hnp.arrays(dtype, shape, elements=st.integers(-1, 2) if dtype is np.int16
                            else st.integers(0, 2)))
    conn = draw(st.integers(1, ndim))
    kw = {"connectivity": conn}
    periodic = draw(st.one_of(st.booleans(), st.lists(st.booleans(), min_size=ndim, max_size=ndim)))
    kw["periodic"] = periodic if isinstance(periodic, bool) else tuple(periodic)
    if draw(st.booleans()):
        kw["mask"] = draw(hnp.arrays(np.bool_, shape))
    if draw(st.booleans()):
        kw["tolerance"] = draw(st.sampled_from([0.0, 0.5, 1.0, 1.5]))
    if draw(st.booleans()):
        kw["bonds"] = draw(hnp.arrays(np.bool_, (len(half_offsets(ndim, conn)),) + shape))
    kw["background"] = draw(st.sampled_from([None, 0, 1, -1]))
    return a, kw


@settings(max_examples=examples(300))
@given(case=lattices())
def test_lattice_matches_reference(backend, case):
    a, kw = case
    plain = not (any(np.atleast_1d(kw["periodic"])) or {"mask", "tolerance", "bonds"} & set(kw))
    # without features, skimage's (a, b, 1) column order applies (tested in test_label.py)
    assume(not (plain and a.dtype != bool and a.ndim == 3 and a.shape[2] == 1
                and a.shape[0] > 1 and a.shape[1] > 1))
    got = run_label(a, backend, **kw)
    np.testing.assert_array_equal(got, reference_lattice(a, **kw))


@pytest.mark.parametrize("shape", [(70, 90), (9, 20, 70), (300,), (5, 6, 7, 8)])
@pytest.mark.parametrize("feature", ["periodic", "mask", "tolerance", "bonds", "all"])
def test_lattice_larger_than_tiles(backend, shape, feature):
    """Sizes that span many GPU tiles, each feature alone and all together."""
    rng = np.random.default_rng(len(shape) * 10 + len(feature))
    ndim = len(shape)
    for conn in sorted({1, ndim}):
        a = (rng.random(shape) < 0.55).astype(np.uint8) + 1
        kw = {"connectivity": conn}
        if feature in ("periodic", "all"):
            kw["periodic"] = tuple(bool(b) for b in rng.integers(0, 2, ndim)) if feature == "all" else True
        if feature in ("mask", "all"):
            kw["mask"] = rng.random(shape) < 0.8
        if feature in ("tolerance", "all"):
            a = rng.random(shape).astype(np.float32) * 4
            kw["tolerance"] = 0.3
        if feature in ("bonds", "all"):
            kw["bonds"] = rng.random((len(half_offsets(ndim, conn)),) + shape) < 0.6
        np.testing.assert_array_equal(run_label(a, backend, **kw), reference_lattice(a, **kw))


def test_ring_and_torus(backend):
    ring = np.array([1, 1, 0, 2, 2, 0, 1, 1], np.uint8)
    np.testing.assert_array_equal(run_label(ring, backend, periodic=True), [1, 1, 0, 2, 2, 0, 1, 1])
    torus = np.zeros((6, 6), np.uint8)
    torus[0, :] = 1
    torus[5, :] = 1  # touches row 0 only through the wrap
    torus[:, 0] = 0
    got, num = run_label(torus, backend, connectivity=1, periodic=(True, False), return_num=True)
    assert num == 1
    got, num = run_label(torus, backend, connectivity=1, periodic=(False, True), return_num=True)
    assert num == 2
    # diagonal wrap at full connectivity: corner cells meet across both edges
    corners = np.zeros((5, 5), np.uint8)
    corners[0, 0] = corners[4, 4] = 1
    assert run_label(corners, backend, connectivity=2, periodic=True, return_num=True)[1] == 1
    assert run_label(corners, backend, connectivity=1, periodic=True, return_num=True)[1] == 2


def test_defaults_change_nothing(backend):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 3, (40, 50)).astype(np.uint8)
    base = run_label(a, backend)
    np.testing.assert_array_equal(run_label(a, backend, periodic=False, mask=np.ones(a.shape, bool)), base)
    np.testing.assert_array_equal(
        run_label(a, backend, bonds=np.ones((4,) + a.shape, bool)), base)
    np.testing.assert_array_equal(run_label(a, backend, tolerance=0), base)


def test_mask_is_background(backend):
    a = np.ones((4, 5), np.uint8)
    mask = np.ones(a.shape, bool)
    mask[:, 2] = False
    got, num = run_label(a, backend, mask=mask, connectivity=1, return_num=True)
    assert num == 2 and (got[:, 2] == 0).all()


def test_bond_percolation_all_closed_and_all_open(backend):
    a = np.ones((33, 47), np.uint8)
    closed = np.zeros((2,) + a.shape, bool)
    got, num = run_label(a, backend, connectivity=1, bonds=closed, return_num=True)
    assert num == a.size
    np.testing.assert_array_equal(got.ravel(), np.arange(1, a.size + 1))
    got, num = run_label(a, backend, connectivity=1, bonds=~closed, return_num=True)
    assert num == 1


def test_tolerance_chains_join(backend):
    ramp = np.linspace(1, 2, 11)  # neighbours 0.1 apart: one component at 0.1
    assert run_label(ramp, backend, tolerance=0.1 + 1e-9, return_num=True)[1] == 1
    assert run_label(ramp, backend, tolerance=0.05, return_num=True)[1] == 11
    signed = np.array([-3, -2, 5, 6], np.int8)  # signed values keep their sign
    np.testing.assert_array_equal(run_label(signed, backend, tolerance=1), [1, 1, 2, 2])
    flags = np.array([True, False, False, True])  # bool + tolerance keeps skimage's bool background
    np.testing.assert_array_equal(run_label(flags, backend, tolerance=0.0, background=1), [0, 1, 1, 0])
    np.testing.assert_array_equal(run_label(flags, backend, tolerance=0.0), [1, 0, 0, 2])


@pytest.mark.parametrize("kw, err, msg", [
    (dict(mask=np.ones((3, 3), bool)), ValueError, r"mask must have shape \(4, 4\)"),
    (dict(mask=np.ones((4, 4), np.uint8)), TypeError, "mask must be a bool array, got dtype uint8"),
    (dict(bonds=np.ones((2, 4, 4), bool)), ValueError, r"bonds must have shape \(4, 4, 4\)"),
    (dict(bonds=np.ones((4, 4, 4), np.float32)), TypeError, "bonds must be a bool array"),
    (dict(tolerance=-1), ValueError, "tolerance must be a finite number >= 0, got -1"),
    (dict(tolerance=float("nan")), ValueError, "tolerance must be a finite number"),
    (dict(tolerance="a"), TypeError, "tolerance must be a non-negative number"),
    (dict(periodic=(True,)), ValueError, "periodic must be a bool or a sequence of 2 bools"),
    (dict(periodic=(True, 1)), ValueError, "periodic must be"),
    (dict(periodic=3), TypeError, "periodic must be"),
])
def test_bad_lattice_arguments(backend, kw, err, msg):
    a = to_backend(np.ones((4, 4), np.uint8), backend)
    with pytest.raises(err, match=msg):
        meshccl.label(a, **kw)


def test_reference_lattice_agrees_with_plain_reference():
    rng = np.random.default_rng(2)
    for shape in [(9, 11), (4, 5, 6)]:
        a = rng.integers(0, 3, shape)
        for c in range(1, len(shape) + 1):
            np.testing.assert_array_equal(reference_lattice(a, 0, c), reference_label(a, 0, c))


@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1, 1), (3,), (2, 1, 3), (1, 5), (5, 1), (2, 1, 1, 1)])
@pytest.mark.parametrize("value", [0, 5])
def test_tiny_tiles_with_features(backend, shape, value):
    """Arrays smaller than a warp give GPU tiles of fewer than 32 cells."""
    rng = np.random.default_rng(len(shape) + value)
    a = np.full(shape, value, np.uint8)
    a.reshape(-1)[::2] = 0
    ndim = len(shape)
    for conn in range(1, ndim + 1):
        for kw in [{}, {"periodic": True},
                   {"periodic": True, "bonds": rng.random((len(half_offsets(ndim, conn)),) + shape) < 0.5},
                   {"mask": rng.random(shape) < 0.7, "tolerance": 1.0}]:
            np.testing.assert_array_equal(run_label(a, backend, connectivity=conn, **kw),
                                          reference_lattice(a, connectivity=conn, **kw))


@pytest.mark.parametrize("method", ["auto", "A", "D"])
def test_float32_subnormals_with_tolerance(backend, method):
    """Subnormal float32 values are not zero: with tolerance 0 they neither
    match a background of 0 nor join a 0 neighbour (CuPy compiles kernels
    with flush-to-zero; the kernels rebuild subnormals from their bits)."""
    tiny = np.float32(1e-45)
    a = np.array([tiny, 0, tiny, -tiny, 2 * tiny, 2 * tiny], dtype=np.float32)
    got = run_label(a, backend, tolerance=0.0, method=method)
    np.testing.assert_array_equal(got, reference_lattice(a, tolerance=0.0))
    np.testing.assert_array_equal(got, [1, 0, 2, 3, 4, 4])
    got = run_label(a, backend, tolerance=float(tiny), background=-1.0, method=method)
    np.testing.assert_array_equal(got, reference_lattice(a, tolerance=float(tiny), background=-1.0))


def test_two_wrapping_axes_of_one_span(backend):
    """A half offset that wraps -1 along one length-1 periodic axis and +1
    along another: the two wrap corrections cancel, and the CPU labeller
    once took the partner (a later cell) for an earlier one, so the
    component got the wrong number (found by hypothesis)."""
    a = np.zeros((1, 1, 2, 4), np.uint8)
    offsets = half_offsets(4, 4)
    bonds = np.zeros((len(offsets),) + a.shape, bool)
    bonds[offsets.index((-1, 1, 1, -1)), 0, 0, 0, 1] = True
    kw = dict(background=1, connectivity=4, periodic=True, bonds=bonds)
    got = run_label(a, backend, **kw)
    np.testing.assert_array_equal(got, reference_lattice(a, **kw))
    assert got.ravel().tolist() == [1, 2, 3, 4, 2, 5, 6, 7]


@pytest.mark.parametrize("shape", [(75, 600), (40, 1030), (1, 700), (700, 1), (2000,)])
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float64])
def test_lattice_2d_across_strips(backend, shape, dtype):
    """2-D lattices wider than a GPU block's strip of eight 32-column tiles,
    so that pairs cross tile borders inside a strip, strip borders and the
    periodic wrap, for each feature alone and together, at both
    connectivities; rows and columns of one cell too."""
    rng = np.random.default_rng(sum(shape) + np.dtype(dtype).itemsize)
    ndim = len(shape)
    for conn in range(1, ndim + 1):
        a = (rng.random(shape) < 0.6).astype(dtype) * rng.integers(1, 3, shape).astype(dtype)
        k = len(half_offsets(ndim, conn))
        bonds = rng.random((k,) + shape) < 0.7
        mask = rng.random(shape) < 0.85
        cases = [{"periodic": True}, {"periodic": (True,) + (False,) * (ndim - 1)},
                 {"periodic": (False,) * (ndim - 1) + (True,)}, {"mask": mask},
                 {"bonds": bonds}, {"periodic": True, "bonds": bonds},
                 {"tolerance": 1.0}, {"tolerance": 0.0, "background": None},
                 {"periodic": True, "bonds": bonds, "mask": mask, "tolerance": 1.0}]
        for kw in cases:
            kw = dict(kw, connectivity=conn)
            np.testing.assert_array_equal(run_label(a, backend, **kw),
                                          reference_lattice(a, **kw), err_msg=str(sorted(kw)))


def test_lattice_2d_exact_integer_tolerance(backend):
    """Integer tolerance on the 2-D chain compares int64 values exactly."""
    base = np.int64(2**53)
    a = np.full((40, 300), base, np.int64)
    a[::3, ::5] += 1
    a[7, :] = 0
    for tol in (0.0, 1.0):
        kw = {"tolerance": tol, "periodic": True}
        np.testing.assert_array_equal(run_label(a, backend, **kw), reference_lattice(a, **kw))


@pytest.mark.parametrize("shape", [(20, 33, 70), (9, 40, 300), (1, 50, 40), (64, 1, 100)])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_periodic_volumes(backend, shape, dtype):
    """Periodic 3-D volumes (the plain 3-D chains and their wrap kernel on
    the GPU): each axis alone, pairs of axes and all, at every
    connectivity, one-byte and wider cells."""
    rng = np.random.default_rng(sum(shape) + np.dtype(dtype).itemsize)
    a = ((rng.random(shape) < 0.45) * rng.integers(1, 3, shape)).astype(dtype)
    for conn in (1, 2, 3):
        for periodic in (True, (True, False, False), (False, True, False),
                         (False, False, True), (True, False, True)):
            kw = {"connectivity": conn, "periodic": periodic}
            np.testing.assert_array_equal(run_label(a, backend, **kw),
                                          reference_lattice(a, **kw), err_msg=str(kw))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_lattice_2d_byte_tolerance(backend, dtype):
    """One-byte cells with a tolerance (the GPU compares four cells a word):
    signed and unsigned bytes over their whole range, tolerances from 0 to
    past 255, the background matched exactly."""
    rng = np.random.default_rng(np.dtype(dtype).itemsize + (dtype is np.int8))
    info = np.iinfo(dtype)
    a = rng.integers(info.min, info.max + 1, (70, 300)).astype(dtype)
    a[rng.random(a.shape) < 0.3] = 0
    for tol in (0, 3, 60.5, 254, 300):
        for kw in ({"tolerance": tol}, {"tolerance": tol, "background": None, "connectivity": 1}):
            np.testing.assert_array_equal(run_label(a, backend, **kw), reference_lattice(a, **kw),
                                          err_msg=str(kw))


# --- 3-D volumes with a mask, bonds or a tolerance on the GPU: the lattice
# form of runs3d.cu's chain (and wrap3d.cu), against the CPU backend value
# for value, raster and first-cell numbering.

def _gpu_against_cpu(a, feature_arrays=True, **kw):
    """Label ``a`` on the GPU (features as CuPy bool arrays: the launch
    plan's path; else NumPy: the general entry's) and on the CPU, both
    numberings, and compare value for value."""
    import cupy

    gkw = dict(kw)
    if feature_arrays:
        gkw = {k: cupy.asarray(v) if k in ("mask", "bonds") else v for k, v in kw.items()}
    for numbering in ("raster", "first-cell"):
        want, n_want = meshccl.label(a, return_num=True, numbering=numbering, **kw)
        got, n_got = meshccl.label(cupy.asarray(a), return_num=True, numbering=numbering, **gkw)
        np.testing.assert_array_equal(to_host(got), want, err_msg=f"{numbering} {sorted(kw)}")
        assert n_got == n_want


def _volume(rng, shape, dtype):
    if dtype is np.bool_:
        return rng.random(shape) < 0.6
    if np.dtype(dtype).kind == "f":
        return (rng.random(shape) * 4).astype(dtype)
    a = rng.integers(0, 3, shape).astype(dtype)
    if np.dtype(dtype).kind == "i":
        a[rng.random(shape) < 0.2] = -1
    return a


@pytest.mark.parametrize("shape", [(300,), (70, 90), (45, 33), (9, 20, 70), (5, 3, 33)])
def test_bool_bytes_other_than_one(backend, shape):
    """A bool view of bytes 0, 1, 2 and 255 (every non-zero byte True, as
    NumPy and skimage read it) with each lattice feature and periodic axes
    alone, background False and True: the GPU chains read such bytes as
    they are (no 0 / 1 copy), 1-D to 3-D, rows whole and cut."""
    rng = np.random.default_rng(sum(shape) + 5)
    raw = rng.choice(np.array([0, 1, 2, 255], np.uint8), size=shape, p=[0.4, 0.2, 0.2, 0.2])
    a, clean = raw.view(np.bool_), raw != 0
    ndim = len(shape)
    for conn in sorted({1, ndim}):
        bonds = rng.random((len(half_offsets(ndim, conn)),) + shape) < 0.7
        mask = rng.random(shape) < 0.85
        for background in (None, 1):
            for kw in ({"periodic": True}, {"periodic": (False,) * (ndim - 1) + (True,)},
                       {"mask": mask}, {"bonds": bonds, "periodic": True},
                       {"tolerance": 0}, {"tolerance": 1, "mask": mask}):
                kw = dict(kw, connectivity=conn, background=background)
                want = reference_lattice(clean, **kw)
                np.testing.assert_array_equal(run_label(a, backend, **kw), want, err_msg=str(kw))


_PERIODIC_3D = [False, True, (True, False, False), (False, True, False), (False, False, True),
                (False, True, True)]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(37, 45, 70), (9, 40, 300), (8, 16, 64), (5, 9, 33),
                                   (1, 1, 77), (77, 1, 1), (2, 1, 40), (70, 3, 1), (2, 2, 3),
                                   (3, 2, 33), (18, 3, 2)])
@pytest.mark.parametrize("dtype", [np.uint8, np.bool_, np.int8, np.uint16, np.int32,
                                   np.float32, np.float64])
def test_gpu_lattice_volumes(shape, dtype):
    """Each feature alone and together, every connectivity, periodic on
    subsets of axes, across tile and brick faces (32 x 32 x 8 or 16 bricks), odd sizes,
    volumes smaller than a tile (axes of 2 and 3 cells: Dask chunks of 4-D arrays) and
    volumes that squeeze to fewer axes."""
    from conftest import HAVE_GPU
    if not HAVE_GPU:
        pytest.skip("no CUDA GPU")
    rng = np.random.default_rng(sum(shape) * 7 + np.dtype(dtype).itemsize)
    a = _volume(rng, shape, dtype)
    for conn in (1, 2, 3):
        k = len(half_offsets(3, conn))
        bonds = rng.random((k,) + shape) < 0.6
        mask = rng.random(shape) < 0.85
        tol = None if dtype is np.bool_ else (0.3 if np.dtype(dtype).kind == "f" else 1.0)
        cases = [{"mask": mask}, {"bonds": bonds}, {"mask": mask, "bonds": bonds}]
        if tol is not None:
            cases += [{"tolerance": tol}, {"tolerance": 0.0, "background": None},
                      {"tolerance": tol, "mask": mask, "bonds": bonds}]
        for j, kw in enumerate(cases):
            kw = dict(kw, connectivity=conn, periodic=_PERIODIC_3D[(j + conn) % len(_PERIODIC_3D)])
            if "background" not in kw and dtype is not np.bool_:
                kw["background"] = -1 if np.dtype(dtype).kind in "if" else 0
            _gpu_against_cpu(a, feature_arrays=(j % 2 == 0), **kw)


@pytest.mark.gpu
@pytest.mark.parametrize("conn", [1, 2, 3])
def test_gpu_lattice_volume_every_periodic_subset(conn):
    """Spins with bonds (Swendsen-Wang's call) on every subset of periodic
    axes, int32 and int64 labels."""
    from conftest import HAVE_GPU
    if not HAVE_GPU:
        pytest.skip("no CUDA GPU")
    rng = np.random.default_rng(conn)
    shape = (20, 33, 70)
    spins = np.where(rng.random(shape) < 0.5, 1, -1).astype(np.int8)
    bonds = rng.random((len(half_offsets(3, conn)),) + shape) < 0.585
    for bits in range(8):
        periodic = tuple(bool(bits >> k & 1) for k in range(3))
        for dtype in (None, np.int64):
            kw = dict(background=-1, connectivity=conn, periodic=periodic, bonds=bonds)
            if dtype is not None:
                kw["dtype"] = dtype
            _gpu_against_cpu(spins, **kw)


@pytest.mark.gpu
@pytest.mark.parametrize("planes", [8, 16])
def test_gpu_lattice_volume_brick_depths(planes):
    """runs3d.cu's lattice chain with bricks of 8 and 16 planes at every
    connectivity (z pairs inside a brick, a brick's first plane by the
    z-face kernel), volumes of several bricks along each axis, with and
    without features that cut equal pairs."""
    from conftest import HAVE_GPU
    if not HAVE_GPU:
        pytest.skip("no CUDA GPU")
    from meshccl import _tuning

    rng = np.random.default_rng(planes)
    shape = (2 * planes + 3, 70, 97)
    spins = (rng.random(shape) < 0.5).astype(np.uint8)
    field = rng.random(shape).astype(np.float32) * 4
    with _tuning.override(RUNS_3D_PLANES={1: planes, 2: planes, 3: planes}):
        for conn in (1, 2, 3):
            bonds = rng.random((len(half_offsets(3, conn)),) + shape) < 0.585
            mask = rng.random(shape) < 0.9
            _gpu_against_cpu(spins, background=-1, connectivity=conn, bonds=bonds)
            _gpu_against_cpu(spins, background=0, connectivity=conn, mask=mask,
                             periodic=(True, False, True))
            _gpu_against_cpu(field, background=None, connectivity=conn, tolerance=0.25)


@pytest.mark.gpu
def test_gpu_lattice_volume_exact_tolerance():
    """Integer tolerance on 3-D volumes compares int64 values exactly, and
    unsigned bytes over their whole range; the background matched exactly."""
    from conftest import HAVE_GPU
    if not HAVE_GPU:
        pytest.skip("no CUDA GPU")
    base = np.int64(2**53)
    a = np.full((9, 20, 70), base, np.int64)
    a[:, ::3, ::5] += 1
    a[4] = 0
    for tol in (0.0, 1.0):
        _gpu_against_cpu(a, tolerance=tol, periodic=True)
    rng = np.random.default_rng(5)
    b = rng.integers(0, 256, (9, 20, 70)).astype(np.uint8)
    b[rng.random(b.shape) < 0.3] = 0
    for tol in (0, 3, 60.5, 300):
        _gpu_against_cpu(b, tolerance=tol, connectivity=3)
        _gpu_against_cpu(b, tolerance=tol, background=None, connectivity=1, periodic=True)


@pytest.mark.gpu
def test_gpu_lattice_volume_plans_repeat():
    """A launch plan of a 3-D lattice call, called again with new bonds and
    masks, gives each call's own labels."""
    from conftest import HAVE_GPU
    if not HAVE_GPU:
        pytest.skip("no CUDA GPU")
    rng = np.random.default_rng(11)
    shape = (33, 40, 64)
    spins = (rng.random(shape) < 0.5).astype(np.uint8)
    for _ in range(3):
        bonds = rng.random((3,) + shape) < 0.585
        mask = rng.random(shape) < 0.9
        _gpu_against_cpu(spins, background=-1, connectivity=1, periodic=True, bonds=bonds,
                         mask=mask)


def test_box_planes_follow_the_bonds_layout():
    """The 3-D lattice kernels find the bond plane of step (dz, dy, dx) at
    entry (dz + 1) * 9 + (dy + 1) * 3 + (dx + 1): plane k is
    half_offsets(3, c)[k] (bond_rows of a 3-D array), or the row the
    squeezed array's bond_rows name."""
    from meshccl.neighbourhood import bond_rows
    from meshccl._gpu.image_plain import box_planes

    for c in (1, 2, 3):
        offsets = half_offsets(3, c)
        planes = box_planes(c, bond_rows((4, 5, 6), (0, 1, 2), 3, c))
        for k, (dz, dy, dx) in enumerate(offsets):
            assert planes[(dz + 1) * 9 + (dy + 1) * 3 + (dx + 1)] == k
        assert (planes >= 0).sum() == len(offsets)
        # a 4-D array with a singleton axis: the rows of the 4-D layout
        rows = bond_rows((4, 5, 6), (0, 2, 3), 4, c)
        planes = box_planes(c, rows)
        full = half_offsets(4, c)
        for (dz, dy, dx), r in zip(offsets, rows):
            assert full[planes[(dz + 1) * 9 + (dy + 1) * 3 + (dx + 1)]] == (dz, 0, dy, dx)


def test_half_offsets_are_counted_and_ranked_without_enumerating():
    """half_offsets is the lexicographically ordered half of {-1, 0, 1}**ndim
    with 1..c non-zero entries; half_offset_index ranks an offset in it
    and half_neighbourhood_size counts it, neither building 3**ndim rows."""
    import itertools

    from meshccl.neighbourhood import half_neighbourhood_size, half_offset_index

    for ndim in range(1, 7):
        for c in range(1, ndim + 1):
            want = sorted(d for d in itertools.product((-1, 0, 1), repeat=ndim)
                          if d < (0,) * ndim and 0 < sum(map(bool, d)) <= c)
            table = half_offsets(ndim, c)
            assert list(table) == want
            assert half_neighbourhood_size(ndim, c) == len(table)
            assert [half_offset_index(d, c) for d in table] == list(range(len(table)))
    big = half_offsets(40, 2)  # (3**40 / 2 candidates; 3,160 of them in the table)
    assert len(big) == half_neighbourhood_size(40, 2) == 40 + 2 * 780
    assert [half_offset_index(d, 2) for d in big[::97]] == list(range(0, len(big), 97))
    assert half_neighbourhood_size(32, 32) == (3**32 - 1) // 2
    for bad in [(0, 0), (1, -1), (-1, -1, -1)]:
        with pytest.raises(ValueError, match="not in the half neighbourhood"):
            half_offset_index(bad, 2)
