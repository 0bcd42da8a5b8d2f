"""The CPU path for multi-valued images (``prov_into`` of the compiled core,
``_cpu/core/image.hpp``): line windows as bit masks of up to 64 cells,
covered runs skipped, a single touched run's label taken as it is, keys
compared 16 at a time.  Against skimage (and, in 4-D, the per-cell path),
serial and in slabs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skimage.measure import label as sk_label

import meshccl
from conftest import examples
from meshccl import _tuning, patterns
from meshccl._cpu import _core
from meshccl.neighbourhood import offset_table


@pytest.fixture(autouse=True, scope="module")
def _slabs_at_any_size():
    """These images are small: let the parallel calls take slabs of any
    size (by default they would run serially)."""
    with _tuning.override(CPU_SLAB_MIN_CELLS=1):
        yield


def _runs(shape, mean_run, nvalues, seed, dtype):
    """Runs along the last axis of about ``mean_run`` cells, values 0..nvalues - 1."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    cuts = rng.random(n) < 1.0 / mean_run
    a = (np.cumsum(cuts) * 7 + rng.integers(0, nvalues, n) * cuts) % nvalues
    return a.reshape(shape).astype(dtype)


def _check(a, conn, bg, threads=(1, 2)):
    want = sk_label(a, connectivity=conn, background=bg)
    for t in threads:
        got = meshccl.label(a, connectivity=conn, background=bg, cpu_threads=t)
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


@pytest.mark.parametrize("shape", [(2, 3, 5), (3, 4, 7), (4, 3, 8), (3, 5, 15), (4, 4, 16),
                                   (3, 3, 17), (5, 6, 40), (2, 2, 300), (7, 1), (9, 10),
                                   (30, 23), (3, 100)])
@pytest.mark.parametrize("mean_run", [1, 4, 9, 20, 80])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.float64])
def test_lanes_runs(shape, mean_run, dtype):
    """Runs short (one 16-key load a window), up to 62 cells (windows of
    up to 64 cells as bit masks), longer (searched word by word), rows
    shorter than 16 (the array's last cells read one by one), 1-byte values
    (signed too) and wider ones; every connectivity, with and without a
    background."""
    a = _runs(shape, mean_run, 4, sum(shape) * 13 + mean_run, dtype)
    if dtype is np.int8:
        a = a - 2  # negative values: their bytes are compared as they are
    for conn in range(1, len(shape) + 1):
        for bg in (0, -1, -2):
            _check(a, conn, bg)


@pytest.mark.parametrize("shape", [(24, 24, 24), (17, 9, 33), (256, 256)])
@pytest.mark.parametrize("q", [2, 4, 7])
def test_lanes_potts(shape, q):
    """Potts fields (the benchmark's generator): mostly runs whose line
    below matches all of them."""
    a = patterns.potts(shape, q=q, seed=q)
    for conn in range(1, len(shape) + 1):
        _check(a, conn, 0)
        _check(a, conn, 1, threads=(1,))


@pytest.mark.parametrize("shape", [(3, 2, 4, 6), (2, 3, 5, 9)])
def test_more_lines_keep_prov_rows(shape):
    """More than four neighbour lines (4-D), against the per-cell path."""
    a = _runs(shape, 3, 3, sum(shape), np.uint8)
    for conn in range(1, 5):
        want = meshccl.label(a, connectivity=conn, background=-1, mask=np.ones(shape, bool))
        np.testing.assert_array_equal(meshccl.label(a, connectivity=conn, background=-1), want)


def test_line_cover_3d():
    """Which neighbour lines of 3-D cover which, and the order they are read
    in (the line below, then the most covering)."""
    shape = (5, 6, 7)
    for conn, want in ((3, [[-1, 1, -1, 1], [1, -1, 1, 1], [-1, 1, -1, -1], [1, 1, -1, -1]]),
                       (2, [[-1, 1, -1, 1], [1, -1, 1, 0], [-1, 1, -1, -1], [1, 0, -1, -1]]),
                       (1, [[-1, -1], [-1, -1]])):
        table = offset_table(shape, conn, None)
        loff, cover, order = _core.neighbour_lines(np.asarray(shape, dtype=np.int64), table)
        np.testing.assert_array_equal(cover, want)
        assert loff[order[0]] == -6 * 7 or conn == 1  # the line below first


@settings(max_examples=examples(150))
@given(data=st.data())
def test_lanes_hypothesis(data):
    ndim = data.draw(st.integers(2, 3))
    shape = tuple(data.draw(st.lists(st.integers(1, 19), min_size=ndim, max_size=ndim)))
    dtype = data.draw(st.sampled_from([np.uint8, np.int8, np.int32]))
    a = _runs(shape, data.draw(st.integers(1, 12)), data.draw(st.integers(2, 5)),
              data.draw(st.integers(0, 2**31)), dtype)
    conn = data.draw(st.integers(1, ndim))
    bg = data.draw(st.sampled_from([0, 1, -1]))
    _check(a, conn, bg)
