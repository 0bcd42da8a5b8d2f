"""The runsnd chain on the GPU (kernels/runsnd.cu): meshccl.ndimage.label
under every kind of structure, and meshccl.label of bool arrays of 4 and
more axes, against scipy.ndimage.label and the CPU backend.

The pair rules are checked on the CPU in tests/test_runsnd_emulated.py;
here the kernels themselves run: rows of several words and rows narrower
than one, odd lengths, axes of length 1 and 2, sparse to full densities,
repeated calls (launch plans), counts, first-cell numbering and 64-bit
labels."""

import numpy as np
import pytest
import scipy.ndimage as ndi

import meshccl
from meshccl import ndimage, neighbourhood
from conftest import HAVE_GPU

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU / CuPy")]


def _symmetric(rng, ndim, keep):
    half = rng.random(3**ndim // 2) < keep
    return np.concatenate([half, [True], half[::-1]]).reshape((3,) * ndim)


def _kinds(ndim):
    """The structures of test_runsnd_emulated._kinds, which no connectivity
    names (those take the fixed chains)."""
    from test_runsnd_emulated import _kinds as kinds

    return {k: v for k, v in kinds(ndim).items() if not k.startswith("c=")}


def _chain_of(a, s):
    from meshccl import _validate
    from meshccl._gpu import chains

    prob = _validate.prepare(a, None, None, np.int32,
                             offsets=neighbourhood.structure_offsets(s))
    return chains.select(prob).chain.name


def _check(a, s, name=""):
    import cupy

    labels, n = ndimage.label(cupy.asarray(a), cupy.asarray(s))
    want, wn = ndi.label(a, s)
    assert n == wn, name
    assert labels.dtype == want.dtype
    np.testing.assert_array_equal(labels.get(), want, err_msg=f"{name} {a.shape}")


@pytest.mark.parametrize("ndim", [2, 3, 4])
def test_every_kind_of_structure_equals_scipy(ndim):
    rng = np.random.default_rng(ndim)
    shapes = {2: [(37, 29), (200, 100), (7, 64), (5, 1)],
              3: [(9, 11, 13), (17, 19, 100), (3, 2, 64), (1, 20, 33)],
              4: [(5, 6, 4, 7), (6, 7, 5, 70), (2, 2, 2, 33), (3, 1, 4, 65)]}[ndim]
    for name, s in _kinds(ndim).items():
        for shape in shapes:
            for density in (0.05, 0.3, 0.6, 0.95, 1.0):
                _check(rng.random(shape) < density, s, name)


@pytest.mark.parametrize("ndim", [3, 4])
def test_random_structures_equal_scipy_and_take_their_chain(ndim):
    rng = np.random.default_rng(20 + ndim)
    shape = (23, 29, 97) if ndim == 3 else (7, 9, 11, 45)
    for k in range(40):
        s = _symmetric(rng, ndim, rng.choice([0.2, 0.5, 0.8]))
        a = rng.random(shape) < rng.choice([0.1, 0.3, 0.6])
        if neighbourhood.as_connectivity(neighbourhood.structure_offsets(s), ndim) is None:
            # (named ones take meshccl.label's chains; 3-D ones runs3d-structure)
            assert _chain_of(a, s) == ("runsnd" if ndim == 4 else "runs3d-structure")
        _check(a, s, f"#{k} {s.astype(int).tolist()}")


def test_structure_against_cupyx_on_a_volume():
    import cupy
    import cupyx.scipy.ndimage as cndi

    rng = np.random.default_rng(3)
    a = cupy.asarray(rng.random((64, 96, 160)) < 0.3)
    for k in range(6):
        s = cupy.asarray(_symmetric(rng, 3, 0.5))
        labels, n = ndimage.label(a, s)
        ref, rn = cndi.label(a, s)
        assert int(n) == int(rn)
        cupy.testing.assert_array_equal(labels, ref)


@pytest.mark.parametrize("connectivity", [1, 2, 3, 4])
def test_4d_bool_label_takes_runsnd_and_equals_cpu(connectivity):
    import cupy

    from meshccl import _validate
    from meshccl._gpu import chains

    rng = np.random.default_rng(connectivity)
    for shape, p in (((6, 7, 8, 40), 0.3), ((3, 5, 4, 100), 0.05), ((5, 5, 5, 5), 0.6),
                     ((2, 3, 1, 4, 33), 0.4), ((2, 2, 3, 2, 2, 70), 0.5)):
        a = rng.random(shape) < p
        c = min(connectivity, sum(1 for k in shape if k > 1))
        prob = _validate.prepare(a, None, c, None)
        assert chains.select(prob).chain.name == ("runsnd" if len(prob.shape) >= 4
                                                  else "runs3d")
        want, n = meshccl.label(a, connectivity=c, return_num=True)
        for _ in range(3):  # (a launch plan from the second call on)
            got, gn = meshccl.label(cupy.asarray(a), connectivity=c, return_num=True)
            assert gn == n
            np.testing.assert_array_equal(got.get(), want)
        got, counts = meshccl.label(cupy.asarray(a), connectivity=c, return_counts=True)
        np.testing.assert_array_equal(counts.get(), np.bincount(want.ravel()))
        first = meshccl.label(cupy.asarray(a), connectivity=c, numbering="first-cell")
        np.testing.assert_array_equal(first.get(), meshccl.label(a, connectivity=c,
                                                                 numbering="first-cell"))
        wide = meshccl.label(cupy.asarray(a), connectivity=c, dtype=np.int64)
        assert wide.dtype == np.int64
        np.testing.assert_array_equal(wide.get(), want)
        inverse = meshccl.label(cupy.asarray(a), connectivity=c, background=1)
        np.testing.assert_array_equal(inverse.get(), meshccl.label(a, connectivity=c,
                                                                   background=1))


def test_4d_full_connectivity_against_cupyx():
    import cupy
    import cupyx.scipy.ndimage as cndi

    a = cupy.random.default_rng(4).random((24, 24, 24, 24)) < 0.0257
    labels, n = meshccl.label(a, connectivity=4, return_num=True)
    ref, rn = cndi.label(a, cupy.ones((3, 3, 3, 3), bool))
    assert n == int(rn)
    cupy.testing.assert_array_equal(labels, ref)
    labels, n = ndimage.label(a, cupy.ones((3, 3, 3, 3), bool))
    assert n == int(rn)
    cupy.testing.assert_array_equal(labels, ref)


@pytest.mark.parametrize("batch,slots", [(1, 0), (8, 4), (1, 4), (8, 0)])
def test_queue_and_cover_slots(batch, slots):
    """The unions kernel with pairs queued 1 or 8 a thread and 0 or 4
    earlier pairs kept for the covers gives SciPy's labels: 4-D percolation
    near the full connectivity's threshold, 4-D random structures on dense
    volumes (words with many pairs: queues that fill, more earlier pairs
    than slots) and a full 4-D box."""
    import cupy

    from meshccl import _tuning

    rng = np.random.default_rng(batch * 10 + slots)
    full4 = np.ones((3, 3, 3, 3), bool)
    every = {d: batch for d in (1, 2, 3, 4)}, {d: slots for d in (1, 2, 3, 4)}
    with _tuning.override(RUNSND_UNITE_BATCH=every[0], RUNSND_COVER_SLOTS=every[1]):
        for shape, p in (((12, 10, 9, 70), 0.0257), ((6, 7, 5, 40), 0.3), ((3, 4, 3, 33), 1.0)):
            a = rng.random(shape) < p
            got, n = meshccl.label(cupy.asarray(a), connectivity=4, return_num=True)
            want, wn = ndi.label(a, full4)
            assert n == wn, (shape, p)
            np.testing.assert_array_equal(got.get(), want, err_msg=f"{shape} {p}")
        for k in range(6):  # (3-D structures take the runs3d-structure chain)
            s = _symmetric(rng, 4, 0.7)
            _check(rng.random((3, 4, 5, 75)) < rng.choice([0.3, 0.6]), s, f"#{k} {s.tolist()}")


@pytest.mark.parametrize("background", [None, 1])
def test_bool_bytes_other_than_one(background):
    """A bool array whose True bytes are not all 1 (a view of other data):
    every non-zero byte is True, as NumPy reads it -- on the runsnd chain,
    which reads the bytes as they are (background False) or tests each
    against 0 first (background True), and on the fixed chains; through
    launch plans and without (return_info), and ndimage.label of one-byte
    integers (viewed as bool)."""
    import cupy

    rng = np.random.default_rng(7)
    for shape in ((5, 6, 7, 40), (64, 70), (9, 20, 33)):
        raw = (rng.random(shape) < 0.5) * rng.integers(1, 256, shape)
        raw = raw.astype(np.uint8)
        a = raw.view(np.bool_)
        assert (raw > 1).any()
        want, n = meshccl.label(raw != 0, background=background, return_num=True)
        x = cupy.asarray(raw).view(cupy.bool_)
        for _ in range(3):  # (a launch plan from the second call on)
            got, gn = meshccl.label(x, background=background, return_num=True)
            assert gn == n, (shape, background)
            np.testing.assert_array_equal(got.get(), want)
        got, gn, info = meshccl.label(x, background=background, return_num=True,
                                      return_info=True)
        np.testing.assert_array_equal(got.get(), want)
        got = meshccl.label(x, background=background, device="cpu")
        np.testing.assert_array_equal(got.get(), want)
        got, counts = meshccl.label(x, background=background, return_counts=True)
        np.testing.assert_array_equal(counts.get(), np.bincount(want.ravel()))
        if background is None:
            s = np.ones((3,) * len(shape), bool)
            s.flat[0] = s.flat[-1] = False  # (no connectivity names it: the runsnd chain)
            labels, k = ndimage.label(cupy.asarray(raw), cupy.asarray(s))
            wl, wk = ndi.label(a, s)
            assert k == wk
            np.testing.assert_array_equal(labels.get(), wl)
            labels, k = ndimage.label(x, cupy.asarray(s))
            np.testing.assert_array_equal(labels.get(), wl)
